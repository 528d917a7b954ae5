/* One definition per figure (see figures.h). */
#include "bench/result/figures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

double pb_cpu_ns_per_sample(uint64_t cpu_ns, uint64_t samples)
{
    return cpu_ns > 0 && samples > 0 ? (double)cpu_ns / (double)samples : NAN;
}

double pb_worker_cpu_ns_per_sample(const json_t *worker)
{
    const json_t *cpu = json_object_get(worker, "cpu_ns");
    const json_t *samples = json_object_get(worker, "samples");
    if (!cpu) { /* a result from before pbench divided it */
        const json_t *old = json_object_get(worker, "cpu_ns_per_sample");
        return json_is_number(old) ? json_number_value(old) : NAN;
    }
    if (!json_is_integer(cpu) || !json_is_integer(samples) || json_integer_value(cpu) < 0 ||
        json_integer_value(samples) < 0)
        return NAN;
    return pb_cpu_ns_per_sample((uint64_t)json_integer_value(cpu),
                                (uint64_t)json_integer_value(samples));
}

double pb_stage_cpu_ns_per_sample(const struct pb_stage_result *stages, size_t count,
                                  const struct pb_stage_result *stage)
{
    if (!stage || stage->gpu)
        return NAN;
    return pb_cpu_ns_per_sample(stage->cpu_ns, pb_stages_samples(stages, count));
}

double pb_stages_cpu_ns_per_sample(const struct pb_stage_result *stages, size_t count)
{
    return pb_cpu_ns_per_sample(stages_cpu_ns(stages, count), pb_stages_samples(stages, count));
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

double pb_repeat_cpu_ns_per_sample(const struct pb_repeat_result *repeat)
{
    return cpu_per_sample(repeat->stages, repeat->stage_count, repeat->samples_per_s,
                          repeat->cpu_util_pct);
}

/* A repeat's CPU stage row (or sub-stage) named name, or NULL. */
static const struct pb_stage_result *repeat_row(const struct pb_repeat_result *repeat,
                                                const char *name)
{
    for (size_t s = 0; repeat->stages && s < repeat->stage_count; s++)
        if (!repeat->stages[s].gpu && strcmp(repeat->stages[s].name, name) == 0)
            return &repeat->stages[s];
    return NULL;
}

double pb_repeat_stage_cpu_ns_per_sample(const struct pb_repeat_result *repeat, const char *name)
{
    return pb_stage_cpu_ns_per_sample(repeat->stages, repeat->stage_count,
                                      repeat_row(repeat, name));
}

size_t pb_point_cpu_values(const struct pb_point_result *point, const char *name, double *out)
{
    size_t n = 0, repeats = point->repeats ? pb_point_finished_repeats(point) : 0;
    for (size_t r = 0; r < repeats; r++) {
        const struct pb_repeat_result *rep = &point->repeats[r];
        double v = name ? pb_repeat_stage_cpu_ns_per_sample(rep, name)
                        : pb_repeat_cpu_ns_per_sample(rep);
        if (!rep->interrupted && isfinite(v) && v > 0)
            out[n++] = v;
    }
    return n;
}

/* The median of point's values (pb_point_cpu_values) of name, and their
 * range into *lo, *hi (either may be NULL); NAN where none has it. */
static double median_of_repeats(const struct pb_point_result *point, const char *name,
                                double *lo, double *hi)
{
    double *v = point->repeat_count ? malloc(point->repeat_count * sizeof(double)) : NULL;
    size_t n = v ? pb_point_cpu_values(point, name, v) : 0;
    double median = n ? pb_median(v, n) : NAN, low = median, high = median;
    for (size_t k = 0; k < n; k++) {
        low = fmin(low, v[k]);
        high = fmax(high, v[k]);
    }
    free(v);
    if (lo)
        *lo = low;
    if (hi)
        *hi = high;
    return median;
}

double pb_point_cpu_ns_per_sample(const struct pb_point_result *point)
{
    double v = median_of_repeats(point, NULL, NULL, NULL);
    return !isnan(v) ? v
                     : cpu_per_sample(point->stages, point->stage_count, point->samples_per_s,
                                      point->cpu_util_pct);
}

double pb_point_stage_cpu_ns_per_sample(const struct pb_point_result *point,
                                        const struct pb_stage_result *stage)
{
    if (!stage || stage->gpu)
        return NAN;
    double v = median_of_repeats(point, stage->name, NULL, NULL);
    return !isnan(v) ? v : pb_stage_cpu_ns_per_sample(point->stages, point->stage_count, stage);
}

bool pb_point_cores_needed(const struct pb_point_result *point, double need,
                           struct pb_cores *out)
{
    double lo, hi, cpu = median_of_repeats(point, NULL, &lo, &hi);
    if (isnan(cpu))
        cpu = lo = hi = pb_point_cpu_ns_per_sample(point);
    if (!(cpu > 0) || !(need > 0))
        return false;
    *out = (struct pb_cores){.cores = need * cpu / 1e9, .lo = need * lo / 1e9,
                             .hi = need * hi / 1e9, .cpu_ns = cpu};
    return true;
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
