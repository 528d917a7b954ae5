#include "bench/analyze/verdict.h"

#include <stdio.h>
#include <string.h>

#include "bench/analyze/suggest.h"
#include "bench/base/pb.h"

/* The closing line of every run: the input-bound class of point i (or,
 * without a training step, that the run measured the loader's ceiling),
 * then its dominant stage by CPU share. */
static void verdict_line(const struct pb_result *result, size_t i, struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    const struct pb_point_analysis *a = &an->points[i];
    size_t used;
    if (pb_analysis_step_ms(result, i) <= 0)
        used = (size_t)snprintf(an->verdict, sizeof(an->verdict),
                                "the run measures the loader's ceiling, %.1f samples/s: with "
                                "run.step_ms 0 the loop takes no step, so it is input-bound by "
                                "design (set run.step_ms to your model's step time to see "
                                "whether it would wait)",
                                p->samples_per_s);
    else
        used = (size_t)snprintf(an->verdict, sizeof(an->verdict), "%s", a->verdict);
    if (used < sizeof(an->verdict) && a->top_stage >= 0)
        snprintf(an->verdict + used, sizeof(an->verdict) - used, "; dominant stage: %s, %.0f%% of %s",
                 p->stages[a->top_stage].name, a->top_share_pct,
                 a->top_share_of_cpu ? "the workers' stage CPU time" : "the stages' wall time");
}

/* The question users ask first: how many cores feeding this step takes. */
static void capacity_line(const struct pb_result *result, size_t i, struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    double step = pb_analysis_step_ms(result, i);
    double batch = (double)pb_point_setting_int(result, i, "loader.batch_size", 0);
    const struct pb_calibration *cal = &result->calibration;
    double cores_used = p->cpu_util_pct / 100.0;
    if (step <= 0 || batch <= 0 || (!cal->measured && (cores_used <= 0 || p->samples_per_s <= 0)))
        return;
    double need = batch * 1000.0 / step;
    double per_core = cal->measured && cal->single_core_samples_per_s > 0
                          ? cal->single_core_samples_per_s
                          : p->samples_per_s / cores_used;
    char from[160];
    if (cal->measured && cal->single_core_samples_per_s > 0)
        snprintf(from, sizeof from, "calibrated on one uncontended core");
    else
        snprintf(from, sizeof from, "this run: %.4g samples/s on %.1f cores of CPU",
                 p->samples_per_s, cores_used);
    double cores = need / per_core;
    int pus = result->machine.pus > 0 ? result->machine.pus : 1;
    char verdict[120];
    if (cores <= pus)
        snprintf(verdict, sizeof verdict, "enough, with %.1f to spare", pus - cores);
    else
        snprintf(verdict, sizeof verdict, "short by %.1f", cores - pus);
    snprintf(an->capacity, sizeof an->capacity,
             "a %.4g ms step at batch %.0f needs %.4g samples/s; at %.4g samples/s per core (%s), "
             "that takes about %.1f cores of loading; this machine has %d hardware threads: %s",
             step, batch, need, per_core, from, cores, pus, verdict);
}

int pb_analyze(const struct pb_result *result, struct pb_analysis *out)
{
    int rc = pb_analysis_points(result, out);
    if (rc != PB_OK || out->recommended < 0)
        return rc;
    pb_suggest(result, (size_t)out->recommended, out);
    verdict_line(result, (size_t)out->recommended, out);
    capacity_line(result, (size_t)out->recommended, out);
    return PB_OK;
}
