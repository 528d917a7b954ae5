/* A run's conclusion (bench/analyze/verdict.h): the verdict line, the capacity line and
 * the try lines every sink prints last. */
#include "bench/analyze/verdict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/analyze/straggler.h"
#include "bench/analyze/suggest.h"
#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/base/stats.h"
#include "bench/result/figures.h"

/* A wrapped job whose ranks' loaders hold it back: the point's figures are
 * rank 0's, so the verdict says first what the ranks say
 * (bench/analyze/straggler.h). */
static void straggler_verdict(const struct pb_point_result *p, struct pb_analysis *an)
{
    struct pb_straggler s;
    pb_point_straggler(p, &s);
    char point[sizeof an->verdict];
    pb_strlcpy(point, an->verdict, sizeof point);
    int n = 0; /* cut short at the buffer's end, still a line */
    if (s.kind == PB_STRAGGLER_ONE)
        n = snprintf(an->verdict, sizeof an->verdict,
                     "input-bound through one rank: %s is the straggler (its loop waits %.0f%%, "
                     "the others' %.0f%% at most%s); the point's figures, rank 0's: %s",
                     s.name, s.stall_pct, s.others_stall_pct,
                     s.others_wait ? ", and they wait for it in their step" : "", point);
    else if (s.kind == PB_STRAGGLER_EVERYWHERE)
        n = snprintf(an->verdict, sizeof an->verdict,
                     "input-bound on every rank: the ranks' loops wait on their loaders (%.0f%% "
                     "at most) and no one rank holds the others back; the point's figures, rank "
                     "0's: %s",
                     s.stall_pct, point);
    if (n < 0)
        an->verdict[0] = '\0';
}

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
    if (pb_point_wrapped(result, i))
        straggler_verdict(p, an);
}

/* A wrapped job's main process runs its step on the same machine: its own
 * CPU a batch (its processes' CPU less the loading the stage rows
 * measured; pbench's relay is in it, a small share), the median over the
 * finished repeats into *per_batch_ns. false where the repeats carry no
 * stage CPU times to tell the two apart. */
static bool main_cpu_per_batch(const struct pb_point_result *p, double *per_batch_ns)
{
    double v[64];
    size_t n = 0, repeats = p->repeats ? pb_point_finished_repeats(p) : 0;
    for (size_t r = 0; r < repeats && n < 64; r++) {
        const struct pb_repeat_result *rep = &p->repeats[r];
        double loading_ns = pb_stages_cpu_ns_per_sample(rep->stages, rep->stage_count);
        if (isnan(loading_ns) || rep->batches == 0 || !(rep->wall_s > 0))
            continue;
        double cores = rep->cpu_util_pct / 100.0 - loading_ns * rep->samples_per_s / 1e9;
        v[n++] = fmax(cores, 0) * rep->wall_s * 1e9 / (double)rep->batches;
    }
    if (n == 0)
        return false;
    *per_batch_ns = pb_median(v, n);
    return true;
}

/* The capacity line's end: enough, or short, of the hardware threads
 * left once the job's main process has its own (main_cores). */
static void capacity_verdict(char *buf, size_t size, double cores, double hi, int pus,
                             double main_cores)
{
    double left = pus - main_cores;
    if (hi <= left)
        snprintf(buf, size, "enough, with %.1f to spare", left - cores);
    else if (cores <= left)
        snprintf(buf, size, "enough at the median, short at the slowest repeat");
    else
        snprintf(buf, size, "not enough: short by %.1f", cores - left);
}

/* The question users ask first: how many cores feeding this step takes,
 * from the CPU time per sample the run measured (the stages' thread CPU,
 * which other processes on the machine barely move), with its range over
 * the repeats; from the calibration only where the run has no CPU times.
 * A wrapped job's main process takes its share of the machine first. */
static void capacity_line(const struct pb_result *result, size_t i, struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    double step = pb_analysis_step_ms(result, i);
    double batch = (double)pb_point_batch_size(result, i);
    const struct pb_calibration *cal = &result->calibration;
    if (step <= 0 || batch <= 0)
        return;
    double need = batch * 1000.0 / step, cores, lo, hi, main_ns = 0;
    char from[200], job[200] = "";
    struct pb_cores fed;
    if (pb_point_cores_needed(p, need, &fed)) {
        char cpu[32];
        cores = fed.cores;
        lo = fed.lo;
        hi = fed.hi;
        pb_fmt_duration(cpu, sizeof cpu, fed.cpu_ns);
        snprintf(from, sizeof from, "at %s of CPU per sample (median of the repeats)", cpu);
    } else if (cal->measured && cal->single_core_samples_per_s > 0) {
        cores = lo = hi = need / cal->single_core_samples_per_s;
        snprintf(from, sizeof from, "at %.4g samples/s per core (calibrated on one core%s)",
                 cal->single_core_samples_per_s, cal->busy ? ", beside other processes" : "");
    } else {
        return;
    }
    double main_cores = 0;
    if (pb_point_wrapped(result, i) && main_cpu_per_batch(p, &main_ns)) {
        char cpu[32];
        pb_fmt_duration(cpu, sizeof cpu, main_ns);
        main_cores = main_ns / (step * 1e6);
        snprintf(job, sizeof job,
                 ", and the job's main process %.1f of its own (%s of CPU a step, measured)",
                 main_cores, cpu);
    }
    int pus = result->machine.pus > 0 ? result->machine.pus : 1;
    char range[64] = "";
    if (hi > lo)
        snprintf(range, sizeof range, " (%.1f to %.1f over the repeats)", lo, hi);
    char verdict[120];
    capacity_verdict(verdict, sizeof verdict, cores, hi, pus, main_cores);
    int n = snprintf(an->capacity, sizeof an->capacity,
                     "a %.4g ms step at batch %.0f needs %.4g samples/s; %s, that takes %.1f "
                     "cores of loading%s%s; this machine has %d hardware threads: %s",
                     step, batch, need, from, cores, range, job, pus, verdict);
    if (n < 0)
        an->capacity[0] = '\0'; /* cut short at the buffer's end otherwise, still a line */
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
