/* What a result means (bench/analyze/analysis.h): per point the input-bound verdict and
 * the dominant stage, the workers series and its knee, and the recommended point with its rule. */
#include "bench/analyze/analysis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/analyze/engines.h"
#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/result/figures.h"

/* ---- settings of a point ------------------------------------------------ */

const struct pb_opt pb_analysis_opts[] = {
    {.name = "input_bound_high_pct", .type = PB_OPT_DOUBLE,
     .offset = offsetof(struct pb_analysis_spec, input_bound_high_pct), .max = 100, .def = "20",
     .help = "Stall share (% of the training loop's time waiting for a batch) from which a point "
             "is highly input-bound (TensorFlow's input-pipeline analyzer: 20)."},
    {.name = "input_bound_moderate_pct", .type = PB_OPT_DOUBLE,
     .offset = offsetof(struct pb_analysis_spec, input_bound_moderate_pct), .max = 100, .def = "5",
     .help = "Stall share from which a point is moderately input-bound (TensorFlow: 5)."},
    {.name = "tie_pct", .type = PB_OPT_DOUBLE, .offset = offsetof(struct pb_analysis_spec, tie_pct),
     .max = 100, .def = "3",
     .help = "Points within this % of the best throughput (or its noise, if larger) count as "
             "equally fast; the recommendation takes the cheapest of them."},
    {.name = "accel_util_target_pct", .type = PB_OPT_DOUBLE,
     .offset = offsetof(struct pb_analysis_spec, accel_util_target_pct), .max = 100, .def = "90",
     .help = "With run.step_ms, the accelerator utilization a recommended point keeps (MLPerf "
             "Storage: 90)."},
    {.name = "knee_doubling_gain", .type = PB_OPT_DOUBLE,
     .offset = offsetof(struct pb_analysis_spec, knee_doubling_gain), .min = 1, .max = 2,
     .def = "1.5",
     .help = "Throughput gain a doubling of workers should give (1.5 = +50%); the knee is the "
             "first worker count after which it does not."},
    {.name = "memory_growth_mib", .type = PB_OPT_DOUBLE,
     .offset = offsetof(struct pb_analysis_spec, memory_growth_mib), .max = 1e9, .def = "1",
     .help = "Warn when memory (RSS) grows by at least this many MiB per 1000 batches over the "
             "measured part, and the growth is significant (its 95% interval excludes 0)."},
    {0},
};

/* The thresholds the result's config sets, defaults for the rest. */
static void read_thresholds(const struct pb_result *result, struct pb_analysis_spec *t)
{
    char msg[PB_MSG_MAX];
    pb_opt_set_defaults(pb_analysis_opts, t, msg, sizeof(msg));
    const json_t *section = result->config ? json_object_get(result->config, "analysis") : NULL;
    if (json_is_object(section) &&
        pb_opt_from_json(pb_analysis_opts, t, section, "analysis", msg, sizeof(msg)) != PB_OK)
        pb_opt_set_defaults(pb_analysis_opts, t, msg, sizeof(msg)); /* a bad file: defaults */
}


double pb_analysis_step_ms(const struct pb_result *result, size_t point)
{
    return pb_point_step_ms(result, point);
}

bool pb_point_noise_known(const struct pb_result *result, size_t point, int *windows)
{
    const struct pb_point_result *p = &result->points[point];
    *windows = 0;
    if (p->repeat_count == 0)
        return false;
    if (pb_point_finished_repeats(p) >= 2)
        return true;
    /* One repeat: its windowed noise, which the stopping rule leaves at 0
     * when fewer than 2 windows closed. Windows close at batch boundaries,
     * at least run.window_s long and 2 batches each; their count here is
     * an estimate from the repeat's length. */
    const struct pb_repeat_result *rep = &p->repeats[0];
    double window_s = pb_point_setting_double(result, point, "run.window_s", 0.25);
    double count = window_s > 0 ? floor(rep->wall_s / window_s) : 0;
    if (rep->batches > 0 && (double)(rep->batches / 2) < count)
        count = (double)(rep->batches / 2);
    *windows = (int)count;
    return rep->window_noise > 0;
}

/* ---- decode ceiling ------------------------------------------------------ */

const struct pb_stage_result *pb_analysis_find_stage(const struct pb_point_result *p,
                                                     const char *name)
{
    for (size_t i = 0; i < p->stage_count; i++)
        if (!p->stages[i].gpu && strcmp(p->stages[i].name, name) == 0)
            return &p->stages[i];
    return NULL;
}

bool pb_analysis_counter(const struct pb_stage_result *s, const char *name, double *value)
{
    for (int c = 0; c < s->counter_count; c++)
        if (strcmp(s->counter_names[c], name) == 0) {
            *value = (double)s->counters[c];
            return true;
        }
    return false;
}

uint64_t pb_analysis_count(const struct pb_stage_result *s, const char *name)
{
    for (int c = 0; s && c < s->counter_count; c++)
        if (strcmp(s->counter_names[c], name) == 0)
            return s->counters[c];
    return 0;
}

bool pb_decode_figures(const struct pb_point_result *p, double *amplification,
                       double *ns_per_decoded_frame, double *frames_per_sample)
{
    for (size_t i = 0; i < p->stage_count; i++) {
        const struct pb_stage_result *s = &p->stages[i];
        double decoded, delivered;
        if (s->parent[0] || !pb_analysis_counter(s, "frames_decoded", &decoded) ||
            !pb_analysis_counter(s, "frames_delivered", &delivered) || delivered <= 0 || decoded <= 0)
            continue;
        char name[160];
        snprintf(name, sizeof(name), "%s.demux", s->name);
        const struct pb_stage_result *demux = pb_analysis_find_stage(p, name);
        snprintf(name, sizeof(name), "%s.decode", s->name);
        const struct pb_stage_result *decode = pb_analysis_find_stage(p, name);
        if (!decode)
            return false;
        double ns = (double)decode->hist.sum_ns + (demux ? (double)demux->hist.sum_ns : 0);
        *amplification = decoded / delivered;
        *ns_per_decoded_frame = ns / decoded;
        /* Counters cover every sample the decoder delivered (its row's
         * count), not only those the training loop consumed. */
        *frames_per_sample = s->hist.count ? delivered / (double)s->hist.count : 0;
        return *ns_per_decoded_frame > 0;
    }
    return false;
}

/* ---- per point ---------------------------------------------------------- */

/* The input-bound class by the loop's stall share, and the sentence that
 * says so. */
static void classify_input_bound(const struct pb_point_result *p, const struct pb_analysis_spec *t,
                                 struct pb_point_analysis *a)
{
    if (p->stall_pct >= t->input_bound_high_pct) {
        a->input_bound = PB_INPUT_BOUND_HIGH;
        snprintf(a->verdict, sizeof(a->verdict),
                 "highly input-bound: the loop waits %.1f%% of its time (>= %.0f%%)", p->stall_pct,
                 t->input_bound_high_pct);
    } else if (p->stall_pct >= t->input_bound_moderate_pct) {
        a->input_bound = PB_INPUT_BOUND_MODERATE;
        snprintf(a->verdict, sizeof(a->verdict),
                 "moderately input-bound: the loop waits %.1f%% of its time (>= %.0f%%)",
                 p->stall_pct, t->input_bound_moderate_pct);
    } else {
        a->input_bound = PB_INPUT_BOUND_NO;
        snprintf(a->verdict, sizeof(a->verdict),
                 "not input-bound: the loop waits %.1f%% of its time (< %.0f%%)", p->stall_pct,
                 t->input_bound_moderate_pct);
    }
}

/* The dominant stage by its share of the workers' CPU time: wall time
 * inflates under contention (a stage waiting for a core looks slow).
 * Without CPU times (an older result), by wall share. */
static void find_top_stage(const struct pb_point_result *p, struct pb_point_analysis *a)
{
    a->top_share_of_cpu = false;
    for (size_t s = 0; s < p->stage_count && !a->top_share_of_cpu; s++)
        a->top_share_of_cpu =
            !isnan(pb_stage_cpu_share_pct(p->stages, p->stage_count, &p->stages[s]));
    for (size_t s = 0; s < p->stage_count; s++) {
        if (!pb_stage_is_cpu(&p->stages[s]))
            continue;
        double share = a->top_share_of_cpu
                           ? pb_stage_cpu_share_pct(p->stages, p->stage_count, &p->stages[s])
                           : p->stages[s].share_pct;
        if (a->top_stage < 0 || share > a->top_share_pct) {
            a->top_stage = (int)s;
            a->top_share_pct = share;
        }
    }
}

/* The bottleneck sentence: the dominant stage, then whether the machine,
 * or only the workers, are CPU-bound, and whether workers share threads. */
static void describe_bottleneck(const struct pb_point_result *p, int pus,
                                struct pb_point_analysis *a)
{
    size_t used = 0;
    char *b = a->bottleneck;
    size_t n = sizeof(a->bottleneck);
    if (a->top_stage >= 0)
        used += (size_t)snprintf(b + used, n - used, "%s takes %.0f%% of worker %s; ",
                                 p->stages[a->top_stage].name, a->top_share_pct,
                                 a->top_share_of_cpu ? "CPU time" : "time");
    if (used < n && a->saturated)
        used += (size_t)snprintf(b + used, n - used,
                                 "the machine is CPU-bound: the process keeps all %d hardware "
                                 "threads busy (%.0f%% CPU)",
                                 pus, p->cpu_util_pct);
    else if (used < n)
        used += (size_t)snprintf(b + used, n - used,
                                 a->cpu_bound ? "workers are CPU-bound (on CPU %.0f%% of the time)"
                                              : "workers wait (on CPU only %.0f%% of the time, "
                                                "with cores to spare)",
                                 p->worker_cpu_pct);
    if (a->oversubscribed && used < n)
        snprintf(b + used, n - used, "; %lld workers share %d hardware threads",
                 (long long)a->workers, pus);
}

/* The decode ceiling of a video point: the frames per second its workers
 * could deliver at the measured (or calibrated) decode rate, and the share
 * of it delivered. */
static void decode_ceiling(const struct pb_result *result, const struct pb_point_result *p,
                           struct pb_point_analysis *a)
{
    double amp, ns_frame, frames_per_sample;
    if (!pb_decode_figures(p, &amp, &ns_frame, &frames_per_sample))
        return;
    const struct pb_calibration *c = &result->calibration;
    if (c->measured && c->decode_ns_per_frame > 0) {
        ns_frame = c->decode_ns_per_frame;
        a->decode_rate_calibrated = true;
    }
    double workers = (double)(a->workers > 0 ? a->workers : 1);
    a->amplification = amp;
    a->decoded_fps_per_worker = 1e9 / ns_frame;
    a->ceiling_frames_per_s = workers * a->decoded_fps_per_worker / amp;
    a->delivered_frames_per_s = p->samples_per_s * frames_per_sample;
    a->ceiling_pct = 100 * a->delivered_frames_per_s / a->ceiling_frames_per_s;
}

/* Throughput against the calibrated single core times the cores the
 * workers can use; left at -1 without a calibration. */
static void core_efficiency(const struct pb_result *result, const struct pb_point_result *p,
                            struct pb_point_analysis *a)
{
    const struct pb_calibration *cal = &result->calibration;
    if (!cal->measured || cal->single_core_samples_per_s <= 0)
        return;
    double cores = (double)(a->workers > 0 ? a->workers : 1);
    if (cal->cores > 0 && cores > cal->cores)
        cores = cal->cores;
    a->efficiency_pct = 100.0 * p->samples_per_s / (cal->single_core_samples_per_s * cores);
    /* Over 100% is no figure: the calibration itself was held back (a
     * busy machine, a cold cache); the table says so instead. */
    a->calibration_suspect = a->efficiency_pct > 100.0 || cal->busy;
}

static void analyze_point(const struct pb_result *result, size_t i,
                          const struct pb_analysis_spec *t, struct pb_point_analysis *a)
{
    const struct pb_point_result *p = &result->points[i];
    memset(a, 0, sizeof(*a));
    a->top_stage = -1;
    a->efficiency_pct = -1;
    a->workers = pb_point_setting_int(result, i, "loader.workers", 0);
    a->batch_size = pb_point_batch_size(result, i);
    a->prefetch_factor = pb_point_setting_int(result, i, "loader.prefetch_factor", 0);
    a->memory_bytes = p->rss_peak_bytes + p->pinned_bytes;
    a->usable = p->repeat_count > 0 && !p->error[0] && p->samples_per_s > 0;
    if (!a->usable) {
        snprintf(a->verdict, sizeof(a->verdict), "%s", p->error[0] ? "failed" : "not measured");
        snprintf(a->bottleneck, sizeof(a->bottleneck), "%s", p->error[0] ? p->error : "");
        return;
    }
    classify_input_bound(p, t, a);
    find_top_stage(p, a);
    double step = pb_analysis_step_ms(result, i);
    if (step > 0 && a->batch_size > 0) {
        a->step_cap_samples_per_s = (double)a->batch_size * 1000.0 / step;
        a->at_step_cap = p->accel_util_pct >= t->accel_util_target_pct;
    }
    int pus = result->machine.pus > 0 ? result->machine.pus : 1;
    /* Workers off CPU are waiting either for I/O and each other, or, when
     * the process already fills every hardware thread, for a core. */
    a->saturated = p->cpu_util_pct >= 0.9 * 100.0 * pus;
    a->cpu_bound = p->worker_cpu_pct >= PB_CPU_BOUND_PCT || a->saturated;
    a->oversubscribed = a->workers > pus;
    describe_bottleneck(p, pus, a);
    decode_ceiling(result, p, a);
    core_efficiency(result, p, a);
}

/* ---- recommendation ----------------------------------------------------- */

/* "1 worker", "4 workers", or what 0 workers means. */
static const char *workers_phrase(char *buf, size_t size, int64_t workers)
{
    if (workers == 0)
        snprintf(buf, size, "0 workers (batches load in the training loop's thread)");
    else
        snprintf(buf, size, "%lld worker%s", (long long)workers, workers == 1 ? "" : "s");
    return buf;
}

/* Cheaper first: fewer workers, then less memory, then a smaller batch. */
static int cheaper(const struct pb_point_analysis *x, const struct pb_point_analysis *y)
{
    if (x->workers != y->workers)
        return x->workers < y->workers ? -1 : 1;
    if (x->memory_bytes != y->memory_bytes) {
        /* Memory differences under 5% are noise in RSS, not a preference. */
        double ratio = (double)x->memory_bytes / (double)(y->memory_bytes ? y->memory_bytes : 1);
        if (ratio < 0.95 || ratio > 1.05)
            return x->memory_bytes < y->memory_bytes ? -1 : 1;
    }
    if (x->batch_size != y->batch_size)
        return x->batch_size < y->batch_size ? -1 : 1;
    return 0;
}

static void describe_point(const struct pb_result *result, size_t i, char *buf, size_t buflen)
{
    const json_t *axes = result->points[i].axes;
    size_t used = 0;
    buf[0] = 0;
    const char *key;
    const json_t *v;
    if (axes && json_object_size(axes) > 0) {
        json_object_foreach((json_t *)axes, key, v)
        {
            char value[64];
            pb_fmt_json_value(value, sizeof(value), v);
            if (used < buflen)
                used += (size_t)snprintf(buf + used, buflen - used, "%s%s=%s", used ? " " : "",
                                         key, value);
        }
    } else {
        snprintf(buf, buflen, "point %zu", i);
    }
}

/* A pick with more workers than hardware threads gives way to the best
 * point within them when the two are apart by less than the tie or either
 * one's noise: no point is recommended that the suggestions would then
 * advise against. */
static int within_threads(const struct pb_result *result, const struct pb_analysis *an, int pick,
                          double tie_pct)
{
    if (pick < 0 || !an->points[pick].oversubscribed)
        return pick;
    int alt = -1;
    for (size_t i = 0; i < result->point_count; i++)
        if (an->points[i].usable && !an->points[i].oversubscribed &&
            (alt < 0 || result->points[i].samples_per_s > result->points[alt].samples_per_s))
            alt = (int)i;
    if (alt < 0)
        return pick;
    double tie = fmax(tie_pct, fmax(result->points[pick].samples_per_s_noise_pct,
                                    result->points[alt].samples_per_s_noise_pct));
    return result->points[alt].samples_per_s >=
                   result->points[pick].samples_per_s * (1 - tie / 100)
               ? alt
               : pick;
}

/* With a training step: the cheapest point that keeps the accelerator at
 * its target utilization, or the cheapest within the tie of the best. */
static void recommend_for_step(const struct pb_result *result, struct pb_analysis *an,
                               double step_ms)
{
    char name[256], workers[64];
    int pick = -1;
    double best_util = -1;
    int best_util_point = -1;
    for (size_t i = 0; i < result->point_count; i++) {
        if (!an->points[i].usable)
            continue;
        double util = result->points[i].accel_util_pct;
        if (util > best_util) {
            best_util = util;
            best_util_point = (int)i;
        }
        if (util >= an->thresholds.accel_util_target_pct &&
            (pick < 0 || cheaper(&an->points[i], &an->points[pick]) < 0))
            pick = (int)i;
    }
    snprintf(an->rule, sizeof(an->rule),
             "with a %.3g ms step: the cheapest point (fewest workers, then least memory, "
             "then smallest batch) that keeps accelerator utilization >= %.0f%%; if none "
             "does, the cheapest within %.0f%% (or the best point's noise) of the best "
             "utilization",
             step_ms, an->thresholds.accel_util_target_pct, an->thresholds.tie_pct);
    if (pick >= 0) {
        an->recommended = pick;
        describe_point(result, (size_t)pick, name, sizeof(name));
        snprintf(an->reason, sizeof(an->reason),
                 "%s keeps the accelerator %.1f%% busy at %.1f samples/s with %s and %.0f MiB",
                 name, result->points[pick].accel_util_pct, result->points[pick].samples_per_s,
                 workers_phrase(workers, sizeof(workers), an->points[pick].workers),
                 (double)an->points[pick].memory_bytes / 1048576.0);
        return;
    }
    /* None meets the target: the closest, i.e. the cheapest point
     * within the tie (relative: the larger of tie_pct and the best
     * point's noise) of the best utilization. */
    double util_tie = fmax(an->thresholds.tie_pct,
                           result->points[best_util_point].samples_per_s_noise_pct);
    pick = -1;
    for (size_t i = 0; i < result->point_count; i++)
        if (an->points[i].usable &&
            result->points[i].accel_util_pct >= best_util * (1 - util_tie / 100) &&
            (pick < 0 || cheaper(&an->points[i], &an->points[pick]) < 0))
            pick = (int)i;
    an->recommended = pick;
    describe_point(result, (size_t)pick, name, sizeof(name));
    snprintf(an->reason, sizeof(an->reason),
             "no point keeps the accelerator >= %.0f%% busy; the closest: %s at %.1f%% "
             "(the best is %.1f%%; within %.1f%% of it the cheapest wins), %.1f samples/s "
             "with %s and %.0f MiB",
             an->thresholds.accel_util_target_pct, name, result->points[pick].accel_util_pct, best_util,
             util_tie, result->points[pick].samples_per_s,
             workers_phrase(workers, sizeof(workers), an->points[pick].workers),
             (double)an->points[pick].memory_bytes / 1048576.0);
    return;
}

/* A wrapped job's sweep beside other processes: each point's speed is
 * the machine's as much as its settings', so the recommendation is
 * withheld (disturbed) where compare would withhold a wall-clock verdict
 * (pb_machine_disturbed), naming each disturbed point with what the
 * others took. */
static void withhold_if_disturbed(const struct pb_result *result, struct pb_analysis *an)
{
    char points[400] = "", name[256];
    size_t used = 0;
    int usable = 0, disturbed = 0;
    for (size_t i = 0; i < result->point_count; i++) {
        const struct pb_point_result *p = &result->points[i];
        if (!an->points[i].usable)
            continue;
        usable++;
        double throttled = pb_point_median_throttled(p);
        if (!pb_machine_disturbed(p->other_cpu_pct, p->steal_pct, throttled))
            continue;
        describe_point(result, i, name, sizeof(name));
        char steal[48] = "";
        if (p->steal_pct >= PB_STEAL_PCT || throttled >= PB_THROTTLED_PCT)
            snprintf(steal, sizeof(steal), ", steal %.0f%%, throttled %.0f%%", p->steal_pct,
                     throttled);
        if (used < sizeof(points))
            used += (size_t)snprintf(points + used, sizeof(points) - used, "%s%.0f%% at %s%s",
                                     used ? ", " : "", p->other_cpu_pct, name, steal);
        disturbed++;
    }
    if (usable < 2 || disturbed == 0)
        return;
    describe_point(result, (size_t)an->recommended, name, sizeof(name));
    int n = snprintf(an->withheld, sizeof(an->withheld),
                     "disturbed: other processes took the machine's CPU, %s (compare withholds a "
                     "wall-clock verdict from %.0f%%), so each point's speed is the machine's as "
                     "much as its settings'; the rule would pick %s (%.1f samples/s): sweep again "
                     "on a quiet machine",
                     points, PB_BUSY_MACHINE_PCT, name,
                     result->points[an->recommended].samples_per_s);
    if (n < 0) /* cut at the buffer's end otherwise, still withheld */
        snprintf(an->withheld, sizeof(an->withheld), "disturbed: other processes took the CPU");
}

/* The rule beside the recommendation. A wrapped job is ranked by what it
 * gains, its own samples/s, not by its step's share of the loop, which
 * rises when its step slows beside more workers while the job gets slower. */
static void rule_text(struct pb_analysis *an, bool wrapped, double tie_pct)
{
    if (wrapped)
        snprintf(an->rule, sizeof(an->rule),
                 "a wrapped job by what it gains, its own samples/s (its steps/s times its "
                 "batch): among points within %.1f%% of the best (the larger of %.0f%% and the "
                 "best point's noise), the fewest workers, then the least memory, then the "
                 "smallest batch",
                 tie_pct, an->thresholds.tie_pct);
    else
        snprintf(an->rule, sizeof(an->rule),
                 "among points within %.1f%% of the best throughput (the larger of %.0f%% and the "
                 "best point's noise), the fewest workers, then the least memory, then the "
                 "smallest batch",
                 tie_pct, an->thresholds.tie_pct);
}

static void recommend(const struct pb_result *result, struct pb_analysis *an)
{
    an->recommended = -1;
    int best = -1;
    for (size_t i = 0; i < result->point_count; i++)
        if (an->points[i].usable &&
            (best < 0 || result->points[i].samples_per_s > result->points[best].samples_per_s))
            best = (int)i;
    if (best < 0) {
        snprintf(an->rule, sizeof(an->rule), "no point was measured successfully");
        return;
    }
    double step_ms = pb_point_step_ms(result, (size_t)best);
    bool wrapped = pb_point_wrapped(result, (size_t)best);
    double best_sps = result->points[best].samples_per_s;
    double tie_pct = result->points[best].samples_per_s_noise_pct;
    if (tie_pct < an->thresholds.tie_pct)
        tie_pct = an->thresholds.tie_pct;
    char name[256], workers[64], steps[48] = "";

    if (step_ms > 0 && !wrapped) {
        recommend_for_step(result, an, step_ms);
        return;
    }

    int pick = -1;
    for (size_t i = 0; i < result->point_count; i++) {
        if (!an->points[i].usable)
            continue;
        if (result->points[i].samples_per_s < best_sps * (1 - tie_pct / 100))
            continue;
        if (pick < 0 || cheaper(&an->points[i], &an->points[pick]) < 0)
            pick = (int)i;
    }
    pick = within_threads(result, an, pick, tie_pct);
    an->recommended = pick;
    rule_text(an, wrapped, tie_pct);
    describe_point(result, (size_t)pick, name, sizeof(name));
    if (wrapped && result->points[pick].batches_per_s > 0)
        snprintf(steps, sizeof(steps), " (%.2f steps/s)", result->points[pick].batches_per_s);
    snprintf(an->reason, sizeof(an->reason),
             "%s gives %.1f samples/s%s, %.1f%% of the best (%.1f) with %s and %.0f MiB", name,
             result->points[pick].samples_per_s, steps,
             100.0 * result->points[pick].samples_per_s / best_sps, best_sps,
             workers_phrase(workers, sizeof(workers), an->points[pick].workers),
             (double)an->points[pick].memory_bytes / 1048576.0);
    if (wrapped)
        withhold_if_disturbed(result, an);
}

/* ---- scaling ------------------------------------------------------------ */

int pb_analysis_worker_series(const struct pb_result *result, const struct pb_analysis *an, size_t base,
                         int *series, int max)
{
    json_t *axes = result->points[base].axes;
    int count = 0;
    if (!axes)
        return 0;
    for (size_t j = 0; j < result->point_count && count < max; j++) {
        if (!an->points[j].usable)
            continue;
        bool same = true;
        const char *key;
        const json_t *v;
        json_object_foreach(axes, key, v)
        {
            if (strcmp(key, "loader.workers") == 0)
                continue;
            if (!json_equal((json_t *)v, json_object_get(result->points[j].axes, key)))
                same = false;
        }
        if (same)
            series[count++] = (int)j;
    }
    /* Insertion sort: a series is tiny. */
    for (int a = 1; a < count; a++)
        for (int b = a; b > 0 && an->points[series[b]].workers < an->points[series[b - 1]].workers;
             b--) {
            int t = series[b];
            series[b] = series[b - 1];
            series[b - 1] = t;
        }
    return count;
}

/* The scaling line's opening: what the series holds fixed (" at
 * batch_size=32, prefetch_factor=2"), then samples/s per worker at each
 * worker count. Returns the length written, as snprintf counts it. */
static size_t per_worker_rates(const struct pb_result *result, struct pb_analysis *an, size_t base,
                               const int *series, int count)
{
    char *out = an->scaling;
    size_t size = sizeof(an->scaling);
    char others[256] = "";
    size_t o = 0;
    const char *key;
    const json_t *v;
    json_object_foreach(result->points[base].axes, key, v)
    {
        if (strcmp(key, "loader.workers") == 0 || o >= sizeof(others))
            continue;
        char *text = json_dumps(v, JSON_ENCODE_ANY);
        o += (size_t)snprintf(others + o, sizeof(others) - o, "%s%s=%s", o ? ", " : " at ",
                              strrchr(key, '.') ? strrchr(key, '.') + 1 : key, text ? text : "?");
        free(text);
    }
    size_t used = (size_t)snprintf(out, size, "samples/s per worker%s:", others);
    for (int k = 0; k < count && used < size; k++) {
        const struct pb_point_result *p = &result->points[series[k]];
        int64_t w = an->points[series[k]].workers;
        if (w > 0)
            used += (size_t)snprintf(out + used, size - used, " %lld: %.0f", (long long)w,
                                     p->samples_per_s / (double)w);
        else /* not a worker's figure: the loop loads its own batches */
            used += (size_t)snprintf(out + used, size - used,
                                     " 0 (in the training loop's thread): %.0f", p->samples_per_s);
    }
    return used;
}

/* Ends the scaling line, from used on, with where more workers stop
 * paying: the step-time cap, the knee (the first step gaining less than
 * analysis.knee_doubling_gain per doubling), or that neither came. */
static void append_knee(const struct pb_result *result, struct pb_analysis *an, const int *series,
                        int count, size_t used)
{
    char *out = an->scaling;
    size_t size = sizeof(an->scaling);
    for (int k = 0; k + 1 < count; k++) {
        int64_t w1 = an->points[series[k]].workers, w2 = an->points[series[k + 1]].workers;
        /* At the step-time cap more workers cannot add throughput: a
         * flat curve there is the step's limit, not the loader's knee. */
        const struct pb_point_analysis *capped =
            an->points[series[k]].at_step_cap       ? &an->points[series[k]]
            : an->points[series[k + 1]].at_step_cap ? &an->points[series[k + 1]]
                                                    : NULL;
        if (capped) {
            char workers[64];
            if (used < size)
                snprintf(out + used, size - used,
                         ". From %s the loop is at the step-time cap (%.0f samples/s max, "
                         "accelerator %.1f%% busy): more workers cannot raise throughput",
                         workers_phrase(workers, sizeof(workers), capped->workers),
                         capped->step_cap_samples_per_s,
                         result->points[capped - an->points].accel_util_pct);
            return;
        }
        if (w1 <= 0 || w2 <= w1)
            continue;
        double gain =
            result->points[series[k + 1]].samples_per_s / result->points[series[k]].samples_per_s;
        /* Scale the doubling's gain to the step actually taken (log-linear). */
        double expected = pow(an->thresholds.knee_doubling_gain, log2((double)w2 / (double)w1));
        if (gain < expected) {
            if (used < size)
                snprintf(out + used, size - used,
                         ". Knee at %lld worker%s: going to %lld gives %.2fx, less than the "
                         "%.2fx a doubling-gain of %.1fx implies",
                         (long long)w1, w1 == 1 ? "" : "s", (long long)w2, gain, expected,
                         an->thresholds.knee_doubling_gain);
            return;
        }
    }
    if (used < size)
        snprintf(out + used, size - used,
                 ". No knee up to %lld workers: each step gained at least %.1fx per doubling",
                 (long long)an->points[series[count - 1]].workers,
                 an->thresholds.knee_doubling_gain);
}

/* Points that differ only in loader.workers form a series; the series of
 * the recommended point is analyzed (else the first with two or more
 * worker counts). */
static void scaling(const struct pb_result *result, struct pb_analysis *an)
{
    size_t n = result->point_count;
    size_t first = an->recommended >= 0 ? (size_t)an->recommended : 0;
    for (size_t k = 0; k < n; k++) {
        size_t base = (first + k) % n;
        if (!an->points[base].usable)
            continue;
        int series[64];
        int count = pb_analysis_worker_series(result, an, base, series, (int)PB_ARRAY_LEN(series));
        if (count < 2 || an->points[series[0]].workers == an->points[series[count - 1]].workers)
            continue;
        size_t used = per_worker_rates(result, an, base, series, count);
        append_knee(result, an, series, count, used);
        return;
    }
}

int pb_analysis_points(const struct pb_result *result, struct pb_analysis *out)
{
    memset(out, 0, sizeof(*out));
    out->recommended = -1;
    read_thresholds(result, &out->thresholds);
    if (result->point_count == 0)
        return PB_OK;
    out->points = calloc(result->point_count, sizeof(*out->points));
    if (!out->points)
        return PB_ERR_NOMEM;
    out->point_count = result->point_count;
    for (size_t i = 0; i < result->point_count; i++)
        analyze_point(result, i, &out->thresholds, &out->points[i]);
    recommend(result, out);
    scaling(result, out);
    pb_engine_comparison(result, out->engines, sizeof out->engines);
    return PB_OK;
}

void pb_analysis_free(struct pb_analysis *analysis)
{
    free(analysis->points);
    memset(analysis, 0, sizeof(*analysis));
}

json_t *pb_analysis_to_json(const struct pb_analysis *an)
{
    json_t *root = json_object();
    json_t *points = json_array();
    for (size_t i = 0; i < an->point_count; i++) {
        const struct pb_point_analysis *a = &an->points[i];
        json_t *obj = json_object();
        json_object_set_new(obj, "usable", json_boolean(a->usable));
        static const char *const bound[] = {"no", "moderate", "high"};
        json_object_set_new(obj, "input_bound", json_string(bound[a->input_bound]));
        json_object_set_new(obj, "verdict", json_string(a->verdict));
        json_object_set_new(obj, "bottleneck", json_string(a->bottleneck));
        json_object_set_new(obj, "cpu_bound", json_boolean(a->cpu_bound));
        json_object_set_new(obj, "saturated", json_boolean(a->saturated));
        json_object_set_new(obj, "oversubscribed", json_boolean(a->oversubscribed));
        if (a->efficiency_pct >= 0)
            json_object_set_new(obj, "efficiency_pct", json_real(a->efficiency_pct));
        if (a->calibration_suspect)
            json_object_set_new(obj, "calibration_suspect", json_true());
        if (a->amplification > 0)
            json_object_set_new(
                obj, "decode",
                json_pack("{s f s f s b s f s f s f}", "amplification", a->amplification,
                          "decoded_fps_per_worker", a->decoded_fps_per_worker,
                          "rate_from_calibration", a->decode_rate_calibrated,
                          "ceiling_frames_per_s", a->ceiling_frames_per_s,
                          "delivered_frames_per_s", a->delivered_frames_per_s, "ceiling_pct",
                          a->ceiling_pct));
        json_array_append_new(points, obj);
    }
    json_object_set_new(root, "points", points);
    json_object_set_new(root, "recommended", an->recommended >= 0 && !an->withheld[0]
                                                 ? json_integer(an->recommended)
                                                 : json_null());
    if (an->withheld[0]) /* the point the rule would pick, and why it is not recommended */
        json_object_set_new(root, "withheld",
                            json_pack("{s i s s}", "point", an->recommended, "why", an->withheld));
    json_object_set_new(root, "rule", json_string(an->rule));
    json_object_set_new(root, "reason", json_string(an->reason));
    json_object_set_new(root, "scaling", json_string(an->scaling));
    json_object_set_new(root, "engines", json_string(an->engines));
    json_object_set_new(root, "capacity", json_string(an->capacity));
    json_object_set_new(root, "verdict", json_string(an->verdict));
    json_t *s = json_array();
    for (int i = 0; i < an->suggestion_count; i++)
        json_array_append_new(s, json_string(an->suggestions[i]));
    json_object_set_new(root, "suggestions", s);
    json_object_set_new(root, "thresholds",
                        json_pack("{s f s f s f s f s f s f}", "input_bound_high_pct",
                                  an->thresholds.input_bound_high_pct, "input_bound_moderate_pct",
                                  an->thresholds.input_bound_moderate_pct, "tie_pct", an->thresholds.tie_pct,
                                  "accel_util_target_pct", an->thresholds.accel_util_target_pct,
                                  "knee_doubling_gain", an->thresholds.knee_doubling_gain,
                                  "memory_growth_mib", an->thresholds.memory_growth_mib));
    return root;
}
