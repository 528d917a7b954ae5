/* The GPU lines of a point's summary (see report_gpu.h). */
#include "bench/report/report_gpu.h"

#include <jansson.h>

#include "bench/base/fmt.h"
#include "bench/result/result.h"

void pb_report_gpu_summary(struct pb_table *t, const struct pb_result *result,
                           const struct pb_point_result *p)
{
    const struct pb_gpu_figures *g = &p->gpu;
    const struct pb_calibration *cal = &result->calibration;
    size_t index = (size_t)(p - result->points);
    bool is_pinned = p->pinned_bytes > 0;
    long long prefetch =
        json_integer_value(pb_point_setting(result, index, "loader.device_prefetch"));
    char a[32], b[32];
    double batch_mib = g->batches ? (double)g->copy_bytes / (double)g->batches / 1048576.0 : 0;
    pb_table_add(t, "to_device");
    double peak = is_pinned ? cal->h2d_pinned_gb_s : cal->h2d_pageable_gb_s;
    if (peak > 0)
        pb_table_add(t,
                     "%.2f GB/s %s, %.1f MiB a batch = %.0f%% of this machine's %s peak "
                     "(%.1f GB/s, calibrate --gpu)",
                     g->copy_gb_per_s, is_pinned ? "pinned" : "pageable", batch_mib,
                     100 * g->copy_gb_per_s / peak, is_pinned ? "pinned" : "pageable", peak);
    else
        pb_table_add(t, "%.2f GB/s %s, %.1f MiB a batch (pbench calibrate --gpu gives the peak)",
                     g->copy_gb_per_s, is_pinned ? "pinned" : "pageable", batch_mib);
    pb_table_add(t, "overlap");
    if (prefetch > 0)
        pb_table_add(t, "%.0f %% of copy time ran while the GPU computed (device_prefetch %lld)",
                     g->overlap_pct, prefetch);
    else
        pb_table_add(t, "%.0f %% of copy time ran while the GPU computed", g->overlap_pct);
    pb_fmt_duration(a, sizeof(a), g->batches ? g->stage_ns / (double)g->batches : 0);
    pb_fmt_duration(b, sizeof(b), g->batches ? g->step_ns / (double)g->batches : 0);
    pb_table_add(t, "GPU busy");
    pb_table_add(t, "%.1f %%  (GPU stages %s + step %s per batch)", g->busy_pct, a, b);
    double wall_ns = g->wall_s * 1e9;
    pb_table_add(t, "loop blocked");
    pb_table_add(t, "%.1f %% on a free device buffer, %.1f %% on copies finishing",
                 wall_ns > 0 ? 100 * (double)g->host_blocked_ns / wall_ns : 0,
                 wall_ns > 0 ? 100 * (double)g->copy_wait_ns / wall_ns : 0);
    const struct pb_gpu_device *d = &p->gpu_device;
    pb_table_add(t, "GPU memory");
    pb_table_add(t, "pbench %.1f MiB peak; device in use %.0f MiB before, %.0f MiB during",
                 d->alloc_peak_bytes / 1048576.0, d->used_before_bytes / 1048576.0,
                 d->used_after_bytes / 1048576.0);
    if (d->sm_mhz_start || d->sm_mhz_end) {
        pb_table_add(t, "SM clock");
        pb_table_add(t, "%u MHz at start, %u MHz at end (max %u)%s%s", d->sm_mhz_start,
                     d->sm_mhz_end, d->sm_mhz_max, d->throttle[0] ? "; slowed: " : "", d->throttle);
    }
    size_t slowed = 0;
    for (size_t r = 0; r < p->repeat_count; r++)
        slowed += p->repeats[r].gpu.slowed;
    if (slowed) {
        pb_table_add(t, "GPU slowed");
        pb_table_add(t, "at the end of %zu of %zu repeats (NVML: power cap, thermal or hardware "
                     "slowdown): compare withholds wall-clock verdicts where half a side's "
                     "repeats were", slowed, p->repeat_count);
    }
}

