/* The training loop's device side: the host-to-device copy of each batch
 * (the to_device stage), the GPU stages after it and the simulated step,
 * each bracketed by CUDA events.
 *
 * Streams: copies go on a copy stream, stages and the step on a compute
 * stream that waits for its batch's copy (an event), so the copy of batch
 * k+1 runs while batch k is computed. Device buffers: device_prefetch
 * ("inflight") input buffers; batch k uses buffer k % inflight and its copy
 * starts only once the batch that used that buffer before is done, so
 * inflight = 1 serializes copy and compute and 2 or more lets them overlap.
 * The host gives a batch's host buffer back to the loader once its copy is
 * done (pinned copies are asynchronous, so it waits on the copy's event;
 * pageable ones return when the driver has staged the data).
 *
 * Event timings are read when a device buffer is reclaimed (its batch is
 * complete) and handed to the caller's harvest callback: per batch copy,
 * per-stage and step kernel times, and their positions on a common clock
 * so copy/compute overlap can be computed exactly. Nothing here allocates
 * per batch. Device memory and the device check are kernels/gpu_rt.h's. */
#ifndef PB_GPULOOP_H
#define PB_GPULOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipelines/stage.h"

#define PB_GPU_MAX_STAGES 8

/* One batch's device timeline, ns. Positions are from the repeat's start
 * event; durations are event pairs. */
struct pb_gpu_batch_times {
    uint64_t seq;
    uint32_t samples;
    uint64_t copy_bytes;
    double copy_ns;
    double stage_ns[PB_GPU_MAX_STAGES];
    double step_ns;
    double copy_begin_ns, copy_end_ns;       /* on the copy stream       */
    double compute_begin_ns, compute_end_ns; /* stages + step, compute   */
    bool measured;
};

typedef void (*pb_gpu_harvest_fn)(void *user, const struct pb_gpu_batch_times *times);

struct pb_gpu_loop_config {
    int inflight;           /* loader.device_prefetch, >= 1              */
    size_t max_batch_bytes; /* largest host batch to copy                */
    bool copy_on_compute;   /* to_device.stream: compute (no copy stream) */
    int stage_count;        /* GPU stages bracketed per batch            */
    pb_gpu_harvest_fn harvest;
    void *user;
};

struct pb_gpu_loop;

/* Creates streams, events and device buffers on device 0. Returns PB_OK,
 * PB_ERR_UNAVAILABLE ("no CUDA device: ..." / "built without CUDA") or
 * PB_ERR_NOMEM ("cannot allocate ... on the GPU: ...") with msg. */
int pb_gpu_loop_open(struct pb_gpu_loop **loop, const struct pb_gpu_loop_config *config,
                     char *msg, size_t msglen);
void pb_gpu_loop_close(struct pb_gpu_loop *loop);

/* Starts a repeat: the timeline's zero, counters reset. */
int pb_gpu_loop_begin(struct pb_gpu_loop *loop, char *msg, size_t msglen);

/* Copies batch to the device: waits (host) until its device buffer is
 * free, harvesting the batch that held it, then enqueues the copy and
 * points batch->dev_* at the device copy. *blocked_ns receives the host
 * time spent waiting for the buffer (the device was behind). */
int pb_gpu_loop_copy(struct pb_gpu_loop *loop, struct pb_batch *batch, bool measured,
                     uint64_t *blocked_ns, char *msg, size_t msglen);

/* Bracket GPU stage k of the current batch (events on the compute stream). */
int pb_gpu_loop_stage_begin(struct pb_gpu_loop *loop, int k);
int pb_gpu_loop_stage_end(struct pb_gpu_loop *loop, int k);

/* Enqueues the step (a busy kernel of step_ns; none when 0) and closes the
 * batch, then waits until its copy is done so the host buffer can go back
 * to the loader. *copy_wait_ns receives that wait. */
int pb_gpu_loop_step(struct pb_gpu_loop *loop, uint64_t step_ns, uint64_t *copy_wait_ns,
                     char *msg, size_t msglen);

/* Waits for every batch in flight and harvests them. */
int pb_gpu_loop_drain(struct pb_gpu_loop *loop, char *msg, size_t msglen);

#endif
