/* GPU accounting for the runner: what the device did in a repeat, from the
 * GPU loop's per-batch event timings (bench/run/gpuloop.h), and how the device
 * looked around a point's measurement.
 *
 * An accumulator is filled by the loop's harvest callback on the consumer
 * thread (measured batches only), then turned into the repeat's device
 * rows (to_device, one per GPU stage, step) and figures, with the time the
 * copies overlapped compute. Intervals grow by doubling; nothing else
 * allocates per batch. */
#ifndef PB_GPU_ACC_H
#define PB_GPU_ACC_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/base/hist.h"
#include "bench/result/result.h"
#include "bench/run/gpuloop.h"

struct pb_gpu_acc {
    int stage_count; /* GPU stages, set by the caller */
    const char *stage_names[PB_GPU_MAX_STAGES];
    struct pb_hist copy_hist, step_hist, stage_hist[PB_GPU_MAX_STAGES];
    struct pb_gpu_figures fig;
    double *copy_iv, *compute_iv; /* begin, end pairs, device timeline */
    size_t iv_count, iv_cap;
    bool oom;
};

/* Clears the accumulator for a repeat (keeps the stages and the interval
 * storage). */
void pb_gpu_acc_reset(struct pb_gpu_acc *acc);

/* Releases the interval storage. */
void pb_gpu_acc_free(struct pb_gpu_acc *acc);

/* The GPU loop's harvest callback (user: the accumulator): adds a measured
 * batch's times; unmeasured ones are ignored. Out of memory for intervals
 * sets acc->oom (the overlap is then left 0). */
void pb_gpu_acc_harvest(void *acc, const struct pb_gpu_batch_times *times);

/* Copy time during which the compute stream was busy: the copy intervals
 * against the union of the compute intervals (n begin, end pairs each;
 * both arrays are sorted in place). */
double pb_gpu_overlap_ns(double *copy, double *compute, size_t n);

/* Fills rep->gpu from the accumulator (wall_s the measured part) and
 * appends the device rows to rep->stages. The rows are left out when out
 * of memory. */
void pb_gpu_acc_result(struct pb_gpu_acc *acc, struct pb_repeat_result *rep, double wall_s);

/* Point-level device notes: pb_gpu_note_start reads the SM clock and the
 * memory in use before the point's first repeat (once); pb_gpu_note_end,
 * after each repeat, the memory peak and clocks, warning in point when the
 * GPU was slowed down (NVML reasons, or an SM clock 10% below the start). */
void pb_gpu_note_start(struct pb_point_result *point);
void pb_gpu_note_end(struct pb_point_result *point);

#endif
