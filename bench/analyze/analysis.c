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
    {"input_bound_high_pct", PB_OPT_DOUBLE, offsetof(struct pb_analysis_spec, input_bound_high_pct),
     0, 100, "20", NULL,
     "Stall share (% of the training loop's time waiting for a batch) from which a point is "
     "highly input-bound (TensorFlow's input-pipeline analyzer: 20)."},
    {"input_bound_moderate_pct", PB_OPT_DOUBLE,
     offsetof(struct pb_analysis_spec, input_bound_moderate_pct), 0, 100, "5", NULL,
     "Stall share from which a point is moderately input-bound (TensorFlow: 5)."},
    {"tie_pct", PB_OPT_DOUBLE, offsetof(struct pb_analysis_spec, tie_pct), 0, 100, "3", NULL,
     "Points within this % of the best throughput (or its noise, if larger) count as equally "
     "fast; the recommendation takes the cheapest of them."},
    {"accel_util_target_pct", PB_OPT_DOUBLE,
     offsetof(struct pb_analysis_spec, accel_util_target_pct), 0, 100, "90", NULL,
     "With run.step_ms, the accelerator utilization a recommended point keeps (MLPerf "
     "Storage: 90)."},
    {"knee_doubling_gain", PB_OPT_DOUBLE, offsetof(struct pb_analysis_spec, knee_doubling_gain),
     1, 2, "1.5", NULL,
     "Throughput gain a doubling of workers should give (1.5 = +50%); the knee is the first "
     "worker count after which it does not."},
    {"memory_growth_mib", PB_OPT_DOUBLE, offsetof(struct pb_analysis_spec, memory_growth_mib), 0,
     1e9, "1", NULL,
     "Warn when memory (RSS) grows by at least this many MiB per 1000 batches over the "
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


static double step_ms_of(const struct pb_result *result, size_t point)
{
    return pb_point_setting_double(result, point, "run.step_ms", 0);
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

static const struct pb_stage_result *find_stage(const struct pb_point_result *p, const char *name)
{
    for (size_t i = 0; i < p->stage_count; i++)
        if (!p->stages[i].gpu && strcmp(p->stages[i].name, name) == 0)
            return &p->stages[i];
    return NULL;
}

static bool counter(const struct pb_stage_result *s, const char *name, double *value)
{
    for (int c = 0; c < s->counter_count; c++)
        if (strcmp(s->counter_names[c], name) == 0) {
            *value = (double)s->counters[c];
            return true;
        }
    return false;
}

bool pb_decode_figures(const struct pb_point_result *p, double *amplification,
                       double *ns_per_decoded_frame, double *frames_per_sample)
{
    for (size_t i = 0; i < p->stage_count; i++) {
        const struct pb_stage_result *s = &p->stages[i];
        double decoded, delivered;
        if (s->parent[0] || !counter(s, "frames_decoded", &decoded) ||
            !counter(s, "frames_delivered", &delivered) || delivered <= 0 || decoded <= 0)
            continue;
        char name[160];
        snprintf(name, sizeof(name), "%s.demux", s->name);
        const struct pb_stage_result *demux = find_stage(p, name);
        snprintf(name, sizeof(name), "%s.decode", s->name);
        const struct pb_stage_result *decode = find_stage(p, name);
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
}

static void analyze_point(const struct pb_result *result, size_t i,
                          const struct pb_analysis_spec *t, struct pb_point_analysis *a)
{
    const struct pb_point_result *p = &result->points[i];
    memset(a, 0, sizeof(*a));
    a->top_stage = -1;
    a->efficiency_pct = -1;
    a->workers = pb_point_setting_int(result, i, "loader.workers", 0);
    a->batch_size = pb_point_setting_int(result, i, "loader.batch_size", 0);
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
    double step = step_ms_of(result, i);
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
    double step_ms = pb_point_setting_double(result, (size_t)best, "run.step_ms", 0);
    double best_sps = result->points[best].samples_per_s;
    double tie_pct = result->points[best].samples_per_s_noise_pct;
    if (tie_pct < an->thresholds.tie_pct)
        tie_pct = an->thresholds.tie_pct;
    char name[256], workers[64];

    if (step_ms > 0) {
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
    size_t used = strlen(an->reason);
    if (step_ms <= 0)
        snprintf(an->rule, sizeof(an->rule),
                 "among points within %.1f%% of the best throughput (the larger of %.0f%% and the "
                 "best point's noise), the fewest workers, then the least memory, then the "
                 "smallest batch",
                 tie_pct, an->thresholds.tie_pct);
    describe_point(result, (size_t)pick, name, sizeof(name));
    if (used < sizeof(an->reason))
        snprintf(an->reason + used, sizeof(an->reason) - used,
                 "%s gives %.1f samples/s, %.1f%% of the best (%.1f) with %s and %.0f MiB",
                 name, result->points[pick].samples_per_s,
                 100.0 * result->points[pick].samples_per_s / best_sps, best_sps,
                 workers_phrase(workers, sizeof(workers), an->points[pick].workers),
                 (double)an->points[pick].memory_bytes / 1048576.0);
}

/* ---- scaling ------------------------------------------------------------ */

/* The usable points whose axes match base's in all but loader.workers (at
 * most max of them), in order of workers; returns their count. */
static int worker_series(const struct pb_result *result, const struct pb_analysis *an, size_t base,
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
        int count = worker_series(result, an, base, series, (int)PB_ARRAY_LEN(series));
        if (count < 2 || an->points[series[0]].workers == an->points[series[count - 1]].workers)
            continue;
        size_t used = per_worker_rates(result, an, base, series, count);
        append_knee(result, an, series, count, used);
        return;
    }
}

/* ---- suggestions -------------------------------------------------------- */

/* Adds a suggestion; past the last slot, drops it. */
#define SUGGEST(an, ...) PB_LINES_ADD((an)->suggestions, &(an)->suggestion_count, __VA_ARGS__)

/* The decoder the base config's decode stage uses, or "". */
static const char *decoder_name(const struct pb_result *result)
{
    const json_t *pipeline = result->config ? json_object_get(result->config, "pipeline") : NULL;
    for (size_t i = 0; i < json_array_size(pipeline); i++) {
        const json_t *decode = json_object_get(json_array_get(pipeline, i), "decode");
        const json_t *name = decode ? json_object_get(decode, "decoder") : NULL;
        if (json_is_string(name))
            return json_string_value(name);
    }
    return "";
}

static bool name_is(const char *name, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(name, *names) == 0)
            return true;
    return false;
}

/* A config path longer than this is not quoted in a suggestion's
 * commands: NAME.yaml stands for it, so that no command is cut short (a
 * compare names the config twice, and a suggestion may hold three
 * commands). */
#define CONFIG_QUOTED_MAX 120
#define CONFIG_SIZE (CONFIG_QUOTED_MAX + 8)
/* Room for "pbench run CONFIG -s loader.engine=NAME". */
#define RUN_SIZE (CONFIG_SIZE + 80)
/* Room for any test command: a sweep appended to a run, or a compare, its
 * config twice, the engine, the setting now and the one to test. */
#define COMMAND_SIZE 512

/* text as one word of a shell command into buf: as it is when it holds
 * only letters, digits and ./_+=,-, else in single quotes. False (buf "")
 * when it holds a single quote or would not fit. */
static bool shell_word(const char *text, char *buf, size_t size)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789./_+=,-";
    bool quote = text[strspn(text, plain)] != '\0';
    int n = snprintf(buf, size, quote ? "'%s'" : "%s", text);
    if (strchr(text, '\'') || n < 0 || (size_t)n >= size) {
        buf[0] = '\0';
        return false;
    }
    return true;
}

/* The config a suggestion's commands name, as typed in a shell: the file
 * the result was made from, or NAME.yaml standing for it (a result from
 * an older pbench, a path over CONFIG_QUOTED_MAX or with a quote). */
static void command_config(const struct pb_result *result, char *buf, size_t size)
{
    if (strlen(result->config_path) > CONFIG_QUOTED_MAX || !result->config_path[0] ||
        !shell_word(result->config_path, buf, size))
        snprintf(buf, size, "%.100s.yaml", result->name[0] ? result->name : "CONFIG");
}

/* " -s loader.engine=NAME" for point i on an engine other than pbench's,
 * which the file may not name; "" for pbench's, and for i past the points
 * (a command that sweeps the engine). Returns buf. */
#define ANY_ENGINE ((size_t)-1)
static const char *engine_option(const struct pb_result *result, size_t i, char *buf,
                                 size_t size)
{
    const char *engine = i < result->point_count ? pb_point_engine(result, i) : "pbench";
    if (strcmp(engine, "pbench") != 0)
        snprintf(buf, size, " -s loader.engine=%.40s", engine);
    else if (size > 0)
        buf[0] = '\0';
    return buf;
}

/* The command that measures point i's config again, for a suggestion to
 * append its sweep to (-a key=v1,v2): "pbench run CONFIG", with the
 * point's engine. */
static void run_command(const struct pb_result *result, size_t i, char *buf, size_t size)
{
    char config[CONFIG_SIZE], engine[64];
    command_config(result, config, sizeof config);
    snprintf(buf, size, "pbench run %s%s", config, engine_option(result, i, engine, sizeof engine));
}

/* A setting's value as typed after '=': numbers, booleans and strings. */
static void value_text(const json_t *v, char *buf, size_t size)
{
    if (json_is_string(v))
        snprintf(buf, size, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
    else if (json_is_number(v))
        snprintf(buf, size, "%g", json_number_value(v));
    else
        snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
}

static const json_t *decode_option(const struct pb_result *result, size_t i, const char *opt);

/* Setting key (a dotted path) at point i as it ran: its axis, else the
 * config's value (a decode option: the decode stage's); NULL when the
 * result does not hold it. */
static const json_t *setting_now(const struct pb_result *result, size_t i, const char *key)
{
    static const char decode[] = "pipeline.decode.";
    if (strncmp(key, decode, strlen(decode)) == 0)
        return decode_option(result, i, key + strlen(decode));
    return pb_point_setting(result, i, key);
}

/* The command that tests one setting ("key.path=value") against point i
 * as it ran: the config compared with itself in interleaved rounds, the
 * setting on the new side alone, on both the point's engine and the
 * setting's value now, which the run may have set with -s ("pbench compare
 * C.yaml C.yaml -s pipeline.decode.scale=1 --set-new
 * pipeline.decode.scale=auto"): a verdict with its confidence interval
 * (for a config with a sweep: section, at each of its points). A setting
 * the result swept is compared by sweeping it ("pbench run C.yaml -a
 * key.path=NOW,value"), since a sweep would override --set-new. Fits whole
 * in COMMAND_SIZE. */
static void compare_command(const struct pb_result *result, size_t i, const char *setting,
                            char *buf, size_t size)
{
    char config[CONFIG_SIZE], engine[64], key[96], now[100] = "", pin[120] = "", word[112];
    command_config(result, config, sizeof config);
    engine_option(result, i, engine, sizeof engine);
    size_t keylen = strcspn(setting, "=");
    snprintf(key, sizeof key, "%.*s", (int)keylen, setting);
    const json_t *swept = i < result->point_count ? json_object_get(result->points[i].axes, key)
                                                  : NULL;
    const json_t *current = setting_now(result, i, key);
    if (current) {
        value_text(current, now, sizeof now);
        char assignment[200];
        snprintf(assignment, sizeof assignment, "%s=%s", key, now);
        if (shell_word(assignment, word, sizeof word))
            snprintf(pin, sizeof pin, " -s %s", word);
    }
    if (swept)
        snprintf(buf, size, "pbench run %s%s -a %s=%s,%s", config, engine, key, now,
                 setting[keylen] ? setting + keylen + 1 : "");
    else
        snprintf(buf, size, "pbench compare %s %s%s%s --set-new %s", config, config, engine, pin,
                 setting);
}

/* Worker counts to sweep from now: doubling up to the hardware threads,
 * "1,2,4" from 0 workers; at least two values. */
static void worker_counts(int64_t now, int pus, char *buf, size_t size)
{
    int64_t w = now > 0 ? now : 1;
    size_t used = 0;
    buf[0] = 0;
    for (int k = 0; k < 4 && used < size; k++, w *= 2) {
        if (k >= 2 && w > pus)
            break;
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", k ? "," : "", (long long)w);
    }
}

/* Option opt of point i's decode stage as it ran: the point's axis, else
 * the config's decode stage; NULL when neither has it. */
static const json_t *decode_option(const struct pb_result *result, size_t i, const char *opt)
{
    char key[96];
    snprintf(key, sizeof(key), "pipeline.decode.%s", opt);
    if (i < result->point_count && json_object_get(result->points[i].axes, key))
        return json_object_get(result->points[i].axes, key);
    const json_t *stage;
    size_t k;
    json_array_foreach(pb_result_config_value(result, "pipeline"), k, stage) {
        const json_t *decode = json_object_get(stage, "decode");
        if (decode)
            return json_object_get(decode, opt);
    }
    return NULL;
}

/* The video decoder's clips_per_visit at point i: the point's axis, else
 * the config's decode stage, else 1. */
static int64_t clips_per_visit(const struct pb_result *result, size_t i)
{
    const json_t *v = decode_option(result, i, "clips_per_visit");
    return json_is_number(v) ? (int64_t)json_number_value(v) : 1;
}

/* The crop stage point i's JPEG decode is fused with (decoders/jpeg.c:
 * fused_crop, a crop stage next, scale 1, auto or window; the decode then
 * reads only the crop's window), or NULL. */
static const json_t *jpeg_fused_crop(const struct pb_result *result, size_t i)
{
    static const char *const crops[] = {"random_resized_crop", "random_crop", "center_crop",
                                        NULL};
    const json_t *pipeline = pb_result_config_value(result, "pipeline"), *stage, *crop = NULL;
    size_t k;
    bool after_decode = false;
    json_array_foreach(pipeline, k, stage) {
        void *only = json_object_size(stage) == 1 ? json_object_iter((json_t *)stage) : NULL;
        const char *name = only ? json_object_iter_key(only) : "";
        if (after_decode) {
            crop = name_is(name, crops) ? json_object_iter_value(only) : NULL;
            break;
        }
        after_decode = strcmp(name, "decode") == 0;
    }
    const json_t *fused = decode_option(result, i, "fused_crop");
    const char *scale = json_string_value(decode_option(result, i, "scale"));
    bool fusable = json_is_true(fused) && scale &&
                   (!strcmp(scale, "1") || !strcmp(scale, "auto") || !strcmp(scale, "window"));
    return fusable ? crop : NULL;
}

/* The JPEG decode suggestion. Fused with a crop, the decode already reads
 * only the window, so what is left is libjpeg's entropy decoding of the
 * rows down to the window's bottom; scale: window (DCT scaling of windows
 * at least twice the output) is the one setting that cuts more, and only
 * on sources larger than twice the output. */
static void jpeg_decode_suggestion(const struct pb_result *result, size_t i, double share,
                                   const char *of, struct pb_analysis *an)
{
    const struct pb_stage_result *decode = find_stage(&result->points[i], "decode");
    const json_t *crop = jpeg_fused_crop(result, i);
    double scaled = 0, progressive = 0, count = decode ? (double)decode->hist.count : 0;
    char test[COMMAND_SIZE];
    if (!crop || count <= 0) {
        compare_command(result, i, "pipeline.decode.scale=auto", test, sizeof test);
        SUGGEST(an,
                "decode takes %.0f%% of %s: decode at reduced size (JPEG DCT scaling; "
                "test: %s), store a smaller source resolution, or decode on the GPU",
                share, of, test);
    } else {
        counter(decode, "scaled", &scaled);
        const json_t *size = json_object_get(crop, "size");
        int64_t h = json_integer_value(json_is_array(size) ? json_array_get(size, 0) : size);
        int64_t w = json_is_array(size) ? json_integer_value(json_array_get(size, 1)) : h;
        const char *scale = json_string_value(decode_option(result, i, "scale"));
        char window[COMMAND_SIZE + 160] = "";
        /* DCT scaling helps only windows at least twice the output: said
         * where the sources (their median, from the dataset's headers) are
         * large enough, or their size is unknown. */
        uint64_t sw = result->dataset.source_width, sh = result->dataset.source_height;
        bool small = sw > 0 && sh > 0 && (sw < 2 * (uint64_t)w || sh < 2 * (uint64_t)h);
        compare_command(result, i, "pipeline.decode.scale=window", test, sizeof test);
        if (scale && strcmp(scale, "window") != 0 && h > 0 && w > 0 && !small)
            snprintf(window, sizeof(window),
                     "DCT scaling of the windows at least twice the output, for sources larger "
                     "than %lldx%lld (test: %s); ",
                     (long long)(2 * w), (long long)(2 * h), test);
        else if (small)
            snprintf(window, sizeof(window),
                     "not DCT scaling: these sources (median %llux%llu) are under twice the "
                     "%lldx%lld output, where it cannot reduce the window; ",
                     (unsigned long long)sw, (unsigned long long)sh, (long long)w, (long long)h);
        SUGGEST(an,
                "decode takes %.0f%% of %s although it decodes only the crop's window (fused "
                "with the crop; %.0f of %.0f samples DCT-reduced): the rest is libjpeg's entropy "
                "decoding of the rows down to the window's bottom. What cuts it: %ssmaller or "
                "lower-quality source files; or a GPU decoder",
                share, of, scaled, count, window);
    }
    /* Progressive files are entropy-decoded whole, window or not. Measured:
     * scripts/real-photos.sh's 400 photographs rewritten progressive with
     * `jpegtran -progressive` decode in 1455 us against 400 us as baseline
     * (configs/image.yaml, batch 32: 1304 against 4060 samples/s). */
    compare_command(result, i, "dataset.path=COPY", test, sizeof test);
    if (decode && count > 0 && counter(decode, "progressive", &progressive) &&
        progressive >= 0.05 * count)
        SUGGEST(an,
                "%.0f%% of the JPEGs decoded (%.0f of %.0f) are progressive, which libjpeg "
                "entropy-decodes whole, in several passes, before its first row: rewrite them "
                "as baseline, losslessly, with libjpeg-turbo's jpegtran (jpegtran -copy all "
                "-outfile OUT.jpg IN.jpg for each file) and measure the copy (test: %s)",
                100 * progressive / count, progressive, count, test);
}

/* A dominant decode on the torch engine: PIL decodes whole images (no
 * window decode), so what it can do is draft mode (DCT scaling), lighter
 * sources, or pbench's engine, which decodes only the crop's window. */
static void torch_decode_suggestion(const struct pb_result *result, size_t i, double share,
                                    const char *of, struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    const struct pb_stage_result *decode = find_stage(p, "decode");
    double per_sample = pb_stage_cpu_ns_per_sample(p->stages, p->stage_count, decode) / 1e3;
    per_sample = isnan(per_sample) ? 0 : per_sample;
    const char *scale = json_string_value(decode_option(result, i, "scale"));
    char base[RUN_SIZE], test[COMMAND_SIZE];
    run_command(result, ANY_ENGINE, base, sizeof base);
    compare_command(result, i, "pipeline.decode.scale=auto", test, sizeof test);
    char draft[COMMAND_SIZE + 120] = "";
    if (scale && strcmp(scale, "auto") != 0)
        snprintf(draft, sizeof draft,
                 "let PIL decode at 1/2, 1/4 or 1/8 where the crop allows (Image.draft; test: "
                 "%s); ",
                 test);
    SUGGEST(an,
            "decode takes %.0f%% of %s on the torch engine (%.0f µs of CPU a sample; PIL "
            "decodes the whole image before the crop): %ssmaller or baseline source files; or "
            "pbench's engine, which decodes only the crop's window (test: %s -a "
            "loader.engine=pbench,torch)",
            share, of, per_sample, draft, base);
}

/* The suggestion for a dominant decode stage, by the decoder the config
 * uses: video, null (whose cost the config sets), else JPEG. */
static void decode_suggestion(const struct pb_result *result, size_t i, const char *of,
                              const char *run, struct pb_analysis *an)
{
    const struct pb_point_analysis *a = &an->points[i];
    const char *decoder = decoder_name(result);
    char base[RUN_SIZE], test[COMMAND_SIZE], visit[COMMAND_SIZE + 80] = "";
    run_command(result, ANY_ENGINE, base, sizeof base);
    compare_command(result, i, "pipeline.decode.clips_per_visit=4", test, sizeof test);
    if (clips_per_visit(result, i) <= 1)
        snprintf(visit, sizeof visit,
                 "take several clips per video visit, decoded in one pass (test: %s), ", test);
    compare_command(result, i, "pipeline.decode.discard=nonref", test, sizeof test);
    if (strcmp(decoder, "video") == 0 && strcmp(pb_point_engine(result, i), "pbench") != 0)
        SUGGEST(an, /* PyAV: no discard, one clip per __getitem__ */
                "decode takes %.0f%% of %s and decodes %.2fx the frames it delivers (PyAV "
                "decodes every frame from the keyframe before the clip): trade workers for "
                "decoder threads (test: %s -a pipeline.decode.threads=1,2,4), encode the "
                "sources with a shorter GOP, or measure pbench's engine, which can skip the "
                "non-reference frames and take several clips per visit (test: %s -a "
                "loader.engine=pbench,torch)",
                a->top_share_pct, of, a->amplification, run, base);
    else if (strcmp(decoder, "video") == 0)
        SUGGEST(an,
                "decode takes %.0f%% of %s and decodes %.2fx the frames it delivers: "
                "skip the non-reference frames nobody receives (test: %s), %strade workers "
                "for decoder threads (test: %s -a pipeline.decode.threads=1,2,4), encode the "
                "sources with a shorter GOP, or decode on the GPU",
                a->top_share_pct, of, a->amplification, test, visit, run);
    else if (strcmp(decoder, "null") == 0)
        SUGGEST(an,
                "decode takes %.0f%% of %s: the null decoder's cost_us sets it; a "
                "real decoder's share is the figure to watch",
                a->top_share_pct, of);
    else if (strcmp(pb_point_engine(result, i), "pbench") != 0)
        torch_decode_suggestion(result, i, a->top_share_pct, of, an);
    else
        jpeg_decode_suggestion(result, i, a->top_share_pct, of, an);
}

/* The device side: what the copy to the GPU costs the loop and the GPU. */
static void copy_suggestions(const struct pb_result *result, const struct pb_point_result *p,
                             struct pb_analysis *an)
{
    const struct pb_gpu_figures *g = &p->gpu;
    double wall_ns = g->wall_s * 1e9;
    double copy_wait_pct = wall_ns > 0 ? 100 * (double)g->copy_wait_ns / wall_ns : 0;
    double copy_pct = wall_ns > 0 ? 100 * g->copy_ns / wall_ns : 0;
    double peak = result->calibration.h2d_pinned_gb_s;
    if (p->pinned_bytes == 0 && copy_wait_pct >= 5)
        SUGGEST(an,
                "the loop waits %.1f%% of its time on pageable copies (%.2f GB/s): pin the "
                "batch buffers (loader.pin_memory: true) so copies are asynchronous DMA",
                copy_wait_pct, g->copy_gb_per_s);
    if (copy_pct >= 5 && g->overlap_pct < 50 && g->step_ns > 0)
        SUGGEST(an,
                "copies take %.1f%% of wall time and only %.0f%% of it overlaps the step: "
                "loader.device_prefetch >= 2 with to_device.stream: copy runs the next copy "
                "during the step",
                copy_pct, g->overlap_pct);
    if (copy_pct >= 10)
        SUGGEST(an,
                "copies take %.1f%% of wall time: copy uint8 and normalize on the GPU "
                "(pipeline.normalize.device: gpu) to move 4x fewer bytes than float32",
                copy_pct);
    if (p->pinned_bytes > 0 && peak > 0 && g->copy_gb_per_s < 0.5 * peak)
        SUGGEST(an,
                "pinned copies reach %.2f GB/s, %.0f%% of this machine's calibrated %.1f GB/s: "
                "other traffic shares the link, or the GPU is not on the CPU's nearest PCIe "
                "root (check nvidia-smi topo -m)",
                g->copy_gb_per_s, 100 * g->copy_gb_per_s / peak, peak);
}

static double epoch_restart_pct(const struct pb_result *result, size_t i, double *epoch_s);

/* The test of more workers than now, counts being worker_counts': a
 * sweep of them, or where they are the count now and twice it, a compare
 * of the two. */
static void more_workers_command(const struct pb_result *result, size_t i, const char *run,
                                 int64_t now, const char *counts, char *buf, size_t size)
{
    char pair[64], setting[64];
    snprintf(pair, sizeof pair, "%lld,%lld", (long long)now, (long long)(2 * now));
    snprintf(setting, sizeof setting, "loader.workers=%lld", (long long)(2 * now));
    if (now > 0 && strcmp(counts, pair) == 0)
        compare_command(result, i, setting, buf, size);
    else
        snprintf(buf, size, "%s -a loader.workers=%s", run, counts);
}

/* Workers beyond the hardware threads, cores not saturated: back to as
 * many workers as threads, tested against the count now. */
static void fewer_workers_suggestion(const struct pb_result *result, size_t i, int pus,
                                     struct pb_analysis *an)
{
    char setting[64], test[COMMAND_SIZE];
    snprintf(setting, sizeof setting, "loader.workers=%d", pus);
    compare_command(result, i, setting, test, sizeof test);
    SUGGEST(an, "%lld workers share %d hardware threads: use at most %d (test: %s)",
            (long long)an->points[i].workers, pus, pus, test);
}

/* What more workers can do for a waiting loop, by whether the cores are
 * saturated and the workers on CPU; and what workers beyond the hardware
 * threads cost. */
static void worker_suggestions(const struct pb_result *result, size_t i, const char *run,
                               struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    const struct pb_point_analysis *a = &an->points[i];
    int pus = result->machine.pus > 0 ? result->machine.pus : 1;
    bool waits = a->input_bound != PB_INPUT_BOUND_NO;
    char workers[64];
    worker_counts(a->workers, pus, workers, sizeof(workers));
    if (waits && a->saturated)
        SUGGEST(an,
                "all %d hardware threads are busy (%.0f%% CPU) and the loop still waits %.1f%%: "
                "more workers cannot help; cut the work per sample (the largest stage first) or "
                "add cores",
                pus, p->cpu_util_pct, p->stall_pct);
    if (waits && a->cpu_bound && !a->saturated && a->workers < pus) {
        char test[COMMAND_SIZE];
        more_workers_command(result, i, run, a->workers, workers, test, sizeof test);
        SUGGEST(an,
                "workers are busy (%.0f%% on CPU) and the loop still waits %.1f%%: add workers, "
                "up to the %d hardware threads (now %lld); test: %s",
                p->worker_cpu_pct, p->stall_pct, pus, (long long)a->workers, test);
    }
    double epoch_s;
    bool restarts = epoch_restart_pct(result, i, &epoch_s) >= 3; /* said on its own */
    /* Workers off CPU while other processes hold the machine were starved
     * of it: neither more workers nor prefetch is the cure. */
    bool starved = p->other_cpu_pct >= PB_BUSY_MACHINE_PCT || p->steal_pct >= PB_STEAL_PCT;
    if (waits && !a->cpu_bound && !a->saturated && a->workers > 0 && starved)
        SUGGEST(an,
                "workers are on CPU only %.0f%% of the time while the loop waits %.1f%%, and "
                "other processes took %.0f%% of the machine's CPU (steal %.0f%%) while this ran: "
                "the workers were starved of CPU by them, which more workers or prefetch would "
                "not cure; measure on a quiet machine (or compare CPU per sample, which they "
                "barely move)",
                p->worker_cpu_pct, p->stall_pct, p->other_cpu_pct, p->steal_pct);
    if (waits && !a->cpu_bound && !a->saturated && a->workers > 0 && !restarts && !starved)
        SUGGEST(an,
                "workers are on CPU only %.0f%% of the time while the loop waits %.1f%%: they "
                "wait on I/O or each other; more workers or a larger prefetch_factor can hide it "
                "(test: %s -a loader.workers=%s -a loader.prefetch_factor=2,4)",
                p->worker_cpu_pct, p->stall_pct, run, workers);
    if (a->oversubscribed && a->saturated)
        SUGGEST(an,
                "%lld workers share %d hardware threads: with the cores saturated, a worker beyond "
                "%d adds only queueing (more batches in flight), not compute; compare the %d-worker "
                "rows before buying it with memory",
                (long long)a->workers, pus, pus, pus);
    else if (a->oversubscribed && (int)i == an->recommended && result->point_count > 1)
        SUGGEST(an,
                "%lld workers share %d hardware threads and still measured faster than every "
                "point within them by more than the noise: the extra workers overlap their "
                "waits (reads, page faults) with the others' work; recheck on the training "
                "machine, whose cores may differ",
                (long long)a->workers, pus);
    else if (a->oversubscribed)
        fewer_workers_suggestion(result, i, pus, an);
}

/* A loader holding over a quarter of the machine's memory. */
static void memory_suggestion(const struct pb_result *result, size_t i, const char *run,
                              struct pb_analysis *an)
{
    const struct pb_point_analysis *a = &an->points[i];
    uint64_t machine_bytes = result->machine.memory_bytes;
    if (machine_bytes > 0 && a->memory_bytes > machine_bytes / 4)
        SUGGEST(an,
                "the loader holds %.0f MiB (%.0f%% of the machine's memory): lower "
                "loader.prefetch_factor (now %lld; test: %s -a loader.prefetch_factor=1,2) or the "
                "batch size",
                (double)a->memory_bytes / 1048576.0,
                100.0 * (double)a->memory_bytes / (double)machine_bytes,
                (long long)a->prefetch_factor, run);
}

/* A DataLoader without persistent workers starts its worker processes at
 * every epoch: with a short epoch that start-up is a share of the time
 * the workers do not load (measured: first batch after the start). The
 * share in %, with the epoch's length; 0 where it does not apply. */
static double epoch_restart_pct(const struct pb_result *result, size_t i, double *epoch_s)
{
    const struct pb_point_result *p = &result->points[i];
    *epoch_s = 0;
    if (strcmp(pb_point_engine(result, i), "torch") != 0 || p->samples_per_s <= 0 ||
        p->first_batch_s <= 0 || result->dataset.samples == 0 ||
        pb_point_setting_int(result, i, "loader.workers", 0) == 0 ||
        json_is_true(pb_point_setting(result, i, "loader.persistent_workers")))
        return 0;
    *epoch_s = (double)result->dataset.samples / p->samples_per_s;
    return 100.0 * p->first_batch_s / (*epoch_s + p->first_batch_s);
}

static void epoch_restart_suggestion(const struct pb_result *result, size_t i,
                                     struct pb_analysis *an)
{
    double epoch_s, share = epoch_restart_pct(result, i, &epoch_s);
    char test[COMMAND_SIZE];
    compare_command(result, i, "loader.persistent_workers=true", test, sizeof test);
    if (share >= 3)
        SUGGEST(an,
                "the DataLoader starts its worker processes at every epoch (%.0f ms to the "
                "first batch, against an epoch of %.1f s: about %.0f%% of the time without "
                "batches): keep them with loader.persistent_workers: true (test: %s)",
                1e3 * result->points[i].first_batch_s, epoch_s, share, test);
}

/* The suggestions for point i (the recommended one, or a single run's
 * only point), each quoting its figures and, where one exists, ending with
 * the command that tests it. */
static void suggestions(const struct pb_result *result, size_t i, struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    const struct pb_point_analysis *a = &an->points[i];
    const char *top = a->top_stage >= 0 ? p->stages[a->top_stage].name : "";
    static const char *const decode_names[] = {"decode", NULL};
    static const char *const sizing_names[] = {"resize", "center_crop", "random_crop",
                                               "random_resized_crop", NULL};

    const char *of = a->top_share_of_cpu ? "worker CPU time" : "worker time";
    char run[RUN_SIZE];
    run_command(result, i, run, sizeof(run));

    if (a->input_bound == PB_INPUT_BOUND_NO)
        SUGGEST(an,
                "the loader keeps up: the loop waits %.1f%% of its time (< %.0f%%); a faster "
                "loader would not speed up training at this step time",
                p->stall_pct, an->thresholds.input_bound_moderate_pct);
    if (a->top_stage >= 0 && a->top_share_pct >= 40 && name_is(top, decode_names))
        decode_suggestion(result, i, of, run, an);
    if (a->top_stage >= 0 && a->top_share_pct >= 30 && name_is(top, sizing_names))
        SUGGEST(an,
                "%s takes %.0f%% of %s: crop before resizing (random_resized_crop "
                "resamples only the crop), or use interpolation: bilinear instead of area",
                top, a->top_share_pct, of);
    if (p->gpu.used)
        copy_suggestions(result, p, an);
    worker_suggestions(result, i, run, an);
    epoch_restart_suggestion(result, i, an);
    memory_suggestion(result, i, run, an);
}

/* The closing line of every run: the input-bound class of point i (or,
 * without a training step, that the run measured the loader's ceiling),
 * then its dominant stage by CPU share. */
static void verdict_line(const struct pb_result *result, size_t i, struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    const struct pb_point_analysis *a = &an->points[i];
    size_t used;
    if (step_ms_of(result, i) <= 0)
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
    double step = step_ms_of(result, i);
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
    if (out->recommended >= 0) {
        suggestions(result, (size_t)out->recommended, out);
        verdict_line(result, (size_t)out->recommended, out);
        capacity_line(result, (size_t)out->recommended, out);
    }
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
    json_object_set_new(root, "recommended",
                        an->recommended >= 0 ? json_integer(an->recommended) : json_null());
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
