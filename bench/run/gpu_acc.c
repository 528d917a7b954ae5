/* GPU accounting for the runner (bench/run/gpu_acc.h): what the device did in a repeat,
 * from the GPU loop's event timings, and how it looked around the point. */
#include "bench/run/gpu_acc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/sys/nvml.h"
#include "kernels/gpu_rt.h"

void pb_gpu_acc_reset(struct pb_gpu_acc *a)
{
    pb_hist_init(&a->copy_hist);
    pb_hist_init(&a->step_hist);
    for (int k = 0; k < PB_GPU_MAX_STAGES; k++)
        pb_hist_init(&a->stage_hist[k]);
    memset(&a->fig, 0, sizeof(a->fig));
    a->fig.used = true;
    a->iv_count = 0;
    a->oom = false;
}

void pb_gpu_acc_free(struct pb_gpu_acc *a)
{
    free(a->copy_iv);
    free(a->compute_iv);
    a->copy_iv = a->compute_iv = NULL;
    a->iv_count = a->iv_cap = 0;
}

void pb_gpu_acc_harvest(void *user, const struct pb_gpu_batch_times *t)
{
    struct pb_gpu_acc *a = user;
    if (!t->measured)
        return;
    pb_hist_add(&a->copy_hist, (uint64_t)t->copy_ns);
    pb_hist_add(&a->step_hist, (uint64_t)t->step_ns);
    a->fig.batches++;
    a->fig.copy_bytes += t->copy_bytes;
    a->fig.copy_ns += t->copy_ns;
    a->fig.step_ns += t->step_ns;
    for (int k = 0; k < a->stage_count; k++) {
        pb_hist_add(&a->stage_hist[k], (uint64_t)t->stage_ns[k]);
        a->fig.stage_ns += t->stage_ns[k];
    }
    /* Intervals for the overlap: grown by doubling, like batch records. */
    if (a->iv_count == a->iv_cap) {
        size_t next = a->iv_cap ? a->iv_cap * 2 : 4096;
        double *c = realloc(a->copy_iv, next * 2 * sizeof(double));
        if (c)
            a->copy_iv = c;
        double *k = c ? realloc(a->compute_iv, next * 2 * sizeof(double)) : NULL;
        if (k)
            a->compute_iv = k;
        if (!c || !k) {
            a->oom = true;
            return;
        }
        a->iv_cap = next;
    }
    a->copy_iv[2 * a->iv_count] = t->copy_begin_ns;
    a->copy_iv[2 * a->iv_count + 1] = t->copy_end_ns;
    a->compute_iv[2 * a->iv_count] = t->compute_begin_ns;
    a->compute_iv[2 * a->iv_count + 1] = t->compute_end_ns;
    a->iv_count++;
}

static int cmp_interval(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pb_gpu_overlap_ns(double *copy, double *compute, size_t n)
{
    qsort(copy, n, 2 * sizeof(double), cmp_interval);
    qsort(compute, n, 2 * sizeof(double), cmp_interval);
    double total = 0;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        double b = copy[2 * i], e = copy[2 * i + 1];
        while (j < n && compute[2 * j + 1] <= b)
            j++;
        for (size_t k = j; k < n && compute[2 * k] < e; k++) {
            double lo = b > compute[2 * k] ? b : compute[2 * k];
            double hi = e < compute[2 * k + 1] ? e : compute[2 * k + 1];
            if (hi > lo)
                total += hi - lo;
        }
    }
    return total;
}

void pb_gpu_acc_result(struct pb_gpu_acc *a, struct pb_repeat_result *rep, double wall_s)
{
    rep->gpu = a->fig;
    rep->gpu.wall_s = wall_s;
    if (!a->oom)
        rep->gpu.overlap_ns = pb_gpu_overlap_ns(a->copy_iv, a->compute_iv, a->iv_count);
    pb_gpu_figures_ratios(&rep->gpu);
    struct pb_gpu_clocks clocks; /* outside the measured part: NVML is slow */
    if (pb_gpu_clocks_read(0, &clocks) == 0) {
        rep->gpu.sm_mhz = clocks.sm_mhz;
        rep->gpu.slowed = clocks.throttle_text[0] != '\0';
    }
    size_t rows = (size_t)a->stage_count + 2;
    struct pb_stage_result *grown =
        realloc(rep->stages, (rep->stage_count + rows) * sizeof(*rep->stages));
    if (!grown)
        return;
    rep->stages = grown;
    struct pb_stage_result *r = rep->stages + rep->stage_count;
    memset(r, 0, rows * sizeof(*r));
    snprintf(r[0].name, sizeof(r[0].name), "to_device");
    r[0].hist = a->copy_hist;
    r[0].counter_count = 1;
    snprintf(r[0].counter_names[0], sizeof(r[0].counter_names[0]), "bytes");
    r[0].counters[0] = a->fig.copy_bytes;
    for (int k = 0; k < a->stage_count; k++) {
        snprintf(r[1 + k].name, sizeof(r[1 + k].name), "%s", a->stage_names[k]);
        r[1 + k].hist = a->stage_hist[k];
    }
    snprintf(r[rows - 1].name, sizeof(r[rows - 1].name), "step");
    r[rows - 1].hist = a->step_hist;
    double total = 0;
    for (size_t i = 0; i < rows; i++) {
        r[i].gpu = true;
        total += (double)r[i].hist.sum_ns;
    }
    for (size_t i = 0; i < rows; i++)
        r[i].share_pct = total > 0 ? 100.0 * (double)r[i].hist.sum_ns / total : 0;
    rep->stage_count += rows;
}

void pb_gpu_note_start(struct pb_point_result *point)
{
    if (point->gpu_device.sm_mhz_start != 0)
        return;
    struct pb_gpu_clocks clocks;
    point->gpu_device.used_before_bytes = pb_gpu_mem_used();
    if (pb_gpu_clocks_read(0, &clocks) == 0) {
        point->gpu_device.sm_mhz_start = clocks.sm_mhz;
        point->gpu_device.sm_mhz_max = clocks.max_sm_mhz;
    }
}

void pb_gpu_note_end(struct pb_point_result *point)
{
    struct pb_gpu_device *d = &point->gpu_device;
    uint64_t used = pb_gpu_mem_used();
    if (used > d->used_after_bytes)
        d->used_after_bytes = used;
    d->alloc_peak_bytes = pb_gpu_alloc_peak();
    struct pb_gpu_clocks clocks;
    if (pb_gpu_clocks_read(0, &clocks) != 0)
        return;
    d->sm_mhz_end = clocks.sm_mhz;
    snprintf(d->throttle, sizeof(d->throttle), "%s", clocks.throttle_text);
    if (clocks.throttle_text[0])
        pb_point_warn(point,
                      "the GPU was slowed down during the run (%s): its figures are "
                      "lower than the card can give",
                      clocks.throttle_text);
    else if (d->sm_mhz_start && clocks.sm_mhz < 0.9 * d->sm_mhz_start)
        pb_point_warn(point, "the GPU's SM clock fell from %u to %u MHz during the run",
                      d->sm_mhz_start, clocks.sm_mhz);
}
