/* One definition per figure (see figures.h). */
#include "bench/result/figures.h"

#include <math.h>
#include <stdlib.h>

#include "bench/base/stats.h"

bool pb_stage_is_cpu(const struct pb_stage_result *stage)
{
    return !stage->gpu && !stage->parent[0];
}

/* The CPU stages' summed thread CPU time, ns. */
static uint64_t stages_cpu_ns(const struct pb_stage_result *stages, size_t count)
{
    uint64_t cpu = 0;
    for (size_t s = 0; stages && s < count; s++)
        if (pb_stage_is_cpu(&stages[s]))
            cpu += stages[s].cpu_ns;
    return cpu;
}

double pb_stage_cpu_ns_per_sample(const struct pb_stage_result *stages, size_t count,
                                  const struct pb_stage_result *stage)
{
    uint64_t samples = pb_stages_samples(stages, count);
    if (!stage || stage->gpu || stage->cpu_ns == 0 || samples == 0)
        return NAN;
    return (double)stage->cpu_ns / (double)samples;
}

double pb_stages_cpu_ns_per_sample(const struct pb_stage_result *stages, size_t count)
{
    uint64_t cpu = stages_cpu_ns(stages, count), samples = pb_stages_samples(stages, count);
    return cpu > 0 && samples > 0 ? (double)cpu / (double)samples : NAN;
}

/* The stages' figure, else the process's CPU over the delivered samples. */
static double cpu_per_sample(const struct pb_stage_result *stages, size_t count,
                             double samples_per_s, double cpu_util_pct)
{
    double v = pb_stages_cpu_ns_per_sample(stages, count);
    if (!isnan(v))
        return v;
    return samples_per_s > 0 && cpu_util_pct > 0 ? cpu_util_pct / 100.0 / samples_per_s * 1e9
                                                 : NAN;
}

double pb_point_cpu_ns_per_sample(const struct pb_point_result *point)
{
    return cpu_per_sample(point->stages, point->stage_count, point->samples_per_s,
                          point->cpu_util_pct);
}

double pb_repeat_cpu_ns_per_sample(const struct pb_repeat_result *repeat)
{
    return cpu_per_sample(repeat->stages, repeat->stage_count, repeat->samples_per_s,
                          repeat->cpu_util_pct);
}

double pb_stage_cpu_share_pct(const struct pb_stage_result *stages, size_t count,
                              const struct pb_stage_result *stage)
{
    uint64_t cpu = stages_cpu_ns(stages, count);
    if (!stage || !pb_stage_is_cpu(stage) || cpu == 0)
        return NAN;
    return 100.0 * (double)stage->cpu_ns / (double)cpu;
}

bool pb_point_stall_repeats(const struct pb_point_result *point, double *median, double *lo,
                            double *hi)
{
    size_t n = pb_point_finished_repeats(point);
    double *v = n >= 2 ? malloc(n * sizeof(double)) : NULL;
    if (!v)
        return false;
    *lo = *hi = point->repeats[0].stall_pct;
    for (size_t r = 0; r < n; r++) {
        v[r] = point->repeats[r].stall_pct;
        *lo = fmin(*lo, v[r]);
        *hi = fmax(*hi, v[r]);
    }
    *median = pb_median(v, n);
    free(v);
    return true;
}
