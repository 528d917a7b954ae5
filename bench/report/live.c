/* The live server's renderings (bench/report/live.h): the result so far as
 * Prometheus or OpenMetrics text, and the running repeat as JSON. The page
 * itself is bench/report/live_page.c. */
#include "bench/report/live.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench/base/jsonfield.h"
#include "bench/base/pb.h"
#include "bench/report/report.h"
#include "bench/result/figures.h"
#include "bench/result/metrics.h"

/* A point's or a history series' labels as name, value pairs,
 * NULL-terminated: up to five, with room for two more (stage, rank, le;
 * revision and created) and the NULL. */
struct labels {
    const char *pairs[2 * 7 + 2];
    char number[24], extra[24];
};

/* What one rendering of the metrics reads and where it writes. */
struct metrics_out {
    FILE *out;
    bool openmetrics;
    const struct pb_result *r;
    const struct pb_live *live;
    const char *config;
};

bool pb_live_wants_openmetrics(const char *accept)
{
    return accept && strstr(accept, "application/openmetrics-text") != NULL;
}

/* The length of the UTF-8 sequence text starts with, 0 when it is not
 * one (a stray byte, an overlong or cut-short sequence). */
static size_t utf8_length(const unsigned char *text)
{
    size_t n = text[0] < 0x80 ? 1 : (text[0] & 0xe0) == 0xc0 ? 2 : (text[0] & 0xf0) == 0xe0 ? 3
                                 : (text[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 2 && text[0] < 0xc2)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((text[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* A label value as the exposition formats escape it (backslash, quote,
 * newline); a byte that is not UTF-8 becomes U+FFFD, so the text stays
 * valid whatever a config's name holds. */
static void put_escaped(FILE *out, const char *text)
{
    const unsigned char *c = (const unsigned char *)text;
    while (*c) {
        size_t n = utf8_length(c);
        if (*c == '\\' || *c == '"')
            fputc('\\', out), fputc(*c, out);
        else if (*c == '\n')
            fputs("\\n", out);
        else if (n == 0)
            fputs("\xef\xbf\xbd", out);
        else
            fwrite(c, 1, n, out);
        c += n ? n : 1;
    }
}

/* One sample line: name{k="v",...} value. */
static void put_sample(FILE *out, const char *name, const char *const *pairs, const char *value)
{
    fputs(name, out);
    for (size_t i = 0; pairs && pairs[i]; i += 2) {
        fprintf(out, "%s%s=\"", i ? "," : "{", pairs[i]);
        put_escaped(out, pairs[i + 1]);
        fputc('"', out);
    }
    if (pairs && pairs[0])
        fputc('}', out);
    fprintf(out, " %s\n", value);
}

static void put_number(FILE *out, const char *name, const char *const *pairs, double value)
{
    char text[40];
    snprintf(text, sizeof(text), "%.10g", value);
    put_sample(out, name, pairs, text);
}

/* A family's HELP and TYPE lines. A counter's family is named without
 * _total in OpenMetrics and with it in Prometheus's text; an info family
 * is OpenMetrics's info type, a gauge named _info in Prometheus's text. */
static void put_family(const struct metrics_out *m, const char *name, const char *type,
                       const char *help)
{
    const char *suffix = "";
    if (!m->openmetrics && strcmp(type, "counter") == 0)
        suffix = "_total";
    if (!m->openmetrics && strcmp(type, "info") == 0) {
        suffix = "_info";
        type = "gauge";
    }
    fprintf(m->out, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, suffix, help, name, suffix, type);
}

/* The engine a point ran on: its engine's name, "pbench" for pbench's own. */
static const char *point_engine(const struct pb_point_result *p)
{
    const char *name = json_string_value(json_object_get(p->engine, "name"));
    return name && name[0] ? name : "pbench";
}

/* Labels config, point (1-based) and engine of point i. */
static void point_labels(const struct metrics_out *m, size_t i, struct labels *l)
{
    memset(l, 0, sizeof(*l));
    snprintf(l->number, sizeof(l->number), "%zu", i + 1);
    const char *pairs[] = {"config", m->config, "point", l->number,
                           "engine", point_engine(&m->r->points[i])};
    memcpy(l->pairs, pairs, sizeof(pairs));
}

/* Appends one more label to a point's. */
static void add_label(struct labels *l, const char *name, const char *value)
{
    size_t n = 0;
    while (l->pairs[n])
        n += 2;
    l->pairs[n] = name;
    l->pairs[n + 1] = value;
    l->pairs[n + 2] = NULL;
}

/* Whether point i has figures to show: a finished repeat. */
static bool point_measured(const struct metrics_out *m, size_t i)
{
    return m->r && pb_point_finished_repeats(&m->r->points[i]) > 0;
}

/* A rate per point (samples/s, or stall as a ratio with scale 0.01), and
 * the same figure per rank where the point ran on several. */
static void put_point_rates(const struct metrics_out *m, const char *name, const char *key,
                            double scale)
{
    for (size_t i = 0; m->r && i < m->r->point_count; i++) {
        if (!point_measured(m, i))
            continue;
        const struct pb_point_result *p = &m->r->points[i];
        struct labels l;
        point_labels(m, i, &l);
        double value = strcmp(key, "samples_per_s") == 0 ? p->samples_per_s : p->stall_pct;
        if (isfinite(value))
            put_number(m->out, name, l.pairs, value * scale);
        size_t k;
        json_t *rank;
        json_array_foreach (p->ranks, k, rank) {
            json_t *number = json_object_get(rank, "rank"), *v = json_object_get(rank, key);
            if (!json_is_integer(number) || !json_is_number(v))
                continue;
            struct labels rl;
            point_labels(m, i, &rl);
            snprintf(rl.extra, sizeof(rl.extra), "%" JSON_INTEGER_FORMAT,
                     json_integer_value(number));
            add_label(&rl, "rank", rl.extra);
            put_number(m->out, name, rl.pairs, json_number_value(v) * scale);
        }
    }
}

/* The loader workers' CPU time over all of point i's repeats, seconds:
 * each repeat's worker CPU share of its workers (at least one: the loop
 * loads without workers) over its wall time. */
static double worker_cpu_s(const struct pb_result *r, size_t i)
{
    const struct pb_point_result *p = &r->points[i];
    int64_t workers = pb_point_setting_int(r, i, "loader.workers", 0);
    double seconds = 0;
    for (size_t k = 0; k < p->repeat_count; k++) {
        const struct pb_repeat_result *rep = &p->repeats[k];
        if (isfinite(rep->worker_cpu_pct) && isfinite(rep->wall_s))
            seconds += rep->worker_cpu_pct / 100 * (double)(workers > 0 ? workers : 1) *
                       rep->wall_s;
    }
    return seconds;
}

/* The counters and the machine's reference, per point. */
static void put_point_totals(const struct metrics_out *m)
{
    struct labels l;
    put_family(m, "pbench_worker_cpu_seconds", "counter",
               "CPU time of the loader workers over the point's repeats so far.");
    for (size_t i = 0; m->r && i < m->r->point_count; i++)
        if (m->r->points[i].repeat_count) {
            point_labels(m, i, &l);
            put_number(m->out, "pbench_worker_cpu_seconds_total", l.pairs, worker_cpu_s(m->r, i));
        }
    put_family(m, "pbench_errors", "counter",
               "Samples that failed (corrupt or unreadable) over the point's repeats so far.");
    for (size_t i = 0; m->r && i < m->r->point_count; i++) {
        const struct pb_point_result *p = &m->r->points[i];
        uint64_t errors = 0;
        for (size_t k = 0; k < p->repeat_count; k++)
            errors += p->repeats[k].errors;
        if (!p->repeat_count)
            continue;
        char text[32];
        snprintf(text, sizeof(text), "%" PRIu64, errors > p->errors ? errors : p->errors);
        point_labels(m, i, &l);
        put_sample(m->out, "pbench_errors_total", l.pairs, text);
    }
    put_family(m, "pbench_machine_reference_seconds", "gauge",
               "The machine's own reference workload around the point's repeats, median "
               "(lower: a faster machine).");
    const struct pb_metric *machine = pb_metric_machine();
    for (size_t i = 0; machine && m->r && i < m->r->point_count; i++) {
        double ns = machine->of_point(&m->r->points[i]);
        if (!isfinite(ns))
            continue;
        point_labels(m, i, &l);
        put_number(m->out, "pbench_machine_reference_seconds", l.pairs, ns / 1e9);
    }
}

/* Each point's CPU time per sample, the pipeline's and each CPU stage's
 * (bench/result/figures.h, the figure every sink shows), in seconds:
 * the families history's metrics give the newest run's under. */
static void put_point_cpu(const struct metrics_out *m)
{
    put_family(m, "pbench_cpu_seconds_per_sample", "gauge",
               "The pipeline's CPU time per sample of the point: the median of its repeats.");
    for (size_t i = 0; m->r && i < m->r->point_count; i++) {
        double ns = pb_point_cpu_ns_per_sample(&m->r->points[i]);
        if (!point_measured(m, i) || !isfinite(ns))
            continue;
        struct labels l;
        point_labels(m, i, &l);
        put_number(m->out, "pbench_cpu_seconds_per_sample", l.pairs, ns / 1e9);
    }
    put_family(m, "pbench_stage_cpu_seconds_per_sample", "gauge",
               "A pipeline stage's CPU time per sample of the point: the median of its repeats.");
    for (size_t i = 0; m->r && i < m->r->point_count; i++) {
        const struct pb_point_result *p = &m->r->points[i];
        for (size_t s = 0; point_measured(m, i) && s < p->stage_count; s++) {
            double ns = pb_point_stage_cpu_ns_per_sample(p, &p->stages[s]);
            if (!pb_stage_is_cpu(&p->stages[s]) || !isfinite(ns))
                continue;
            struct labels l;
            point_labels(m, i, &l);
            add_label(&l, "stage", p->stages[s].name);
            put_number(m->out, "pbench_stage_cpu_seconds_per_sample", l.pairs, ns / 1e9);
        }
    }
}

/* Each point's axes, as an info metric. */
static void put_point_info(const struct metrics_out *m)
{
    put_family(m, "pbench_point", "info", "A point of the run and the settings it sweeps.");
    for (size_t i = 0; m->r && i < m->r->point_count; i++) {
        char axes[1024];
        pb_report_axes(axes, sizeof(axes), m->r->points[i].axes, ", ");
        struct labels l;
        point_labels(m, i, &l);
        add_label(&l, "axes", axes);
        put_sample(m->out, "pbench_point_info", l.pairs, "1");
    }
}

/* The finite le bounds of every stage histogram: 100 ns to 100 s in steps
 * of 1, 2.5 and 5, each moved up to the upper edge of the pb_hist bucket
 * that holds it, so the counts at or below it are exact. */
static const double bounds_ns[] = {
    1e2, 2.5e2, 5e2, 1e3, 2.5e3, 5e3, 1e4, 2.5e4, 5e4, 1e5, 2.5e5, 5e5, 1e6, 2.5e6,
    5e6, 1e7, 2.5e7, 5e7, 1e8, 2.5e8, 5e8, 1e9, 2.5e9, 5e9, 1e10, 2.5e10, 5e10, 1e11,
};

/* One stage's histogram: cumulative counts at each bound, then +Inf (the
 * count), _sum and _count. l holds the stage's labels; le is added here. */
static void put_stage_histogram(const struct metrics_out *m, struct labels *l,
                                const struct pb_hist *h)
{
    size_t le = 0;
    while (l->pairs[le])
        le += 2;
    l->pairs[le] = "le";
    l->pairs[le + 2] = NULL;
    uint64_t cumulative = 0;
    size_t next_bin = 0;
    char edge[40], text[32];
    for (size_t b = 0; b < PB_ARRAY_LEN(bounds_ns); b++) {
        size_t bucket = pb_hist_bucket((uint64_t)bounds_ns[b]);
        uint64_t lo, hi;
        pb_hist_bucket_range(bucket, &lo, &hi);
        for (; next_bin <= bucket; next_bin++)
            cumulative += h->bins[next_bin];
        snprintf(edge, sizeof(edge), "%.12g", (double)hi / 1e9);
        snprintf(text, sizeof(text), "%" PRIu64, cumulative < h->count ? cumulative : h->count);
        l->pairs[le + 1] = edge;
        put_sample(m->out, "pbench_stage_latency_seconds_bucket", l->pairs, text);
    }
    snprintf(text, sizeof(text), "%" PRIu64, h->count);
    l->pairs[le + 1] = "+Inf";
    put_sample(m->out, "pbench_stage_latency_seconds_bucket", l->pairs, text);
    l->pairs[le] = NULL;
    put_number(m->out, "pbench_stage_latency_seconds_sum", l->pairs, (double)h->sum_ns / 1e9);
    put_sample(m->out, "pbench_stage_latency_seconds_count", l->pairs, text);
}

static void put_stage_latency(const struct metrics_out *m)
{
    put_family(m, "pbench_stage_latency_seconds", "histogram",
               "Wall time per sample in each stage (a device row: per batch), over the "
               "point's finished repeats.");
    for (size_t i = 0; m->r && i < m->r->point_count; i++) {
        if (!point_measured(m, i))
            continue;
        const struct pb_point_result *p = &m->r->points[i];
        for (size_t s = 0; s < p->stage_count; s++) {
            struct labels l;
            point_labels(m, i, &l);
            add_label(&l, "stage", p->stages[s].name);
            put_stage_histogram(m, &l, &p->stages[s].hist);
        }
    }
}

/* The running repeat: its rates, where the session is, and its state. */
static void put_live(const struct metrics_out *m)
{
    const struct pb_live *live = m->live;
    char number[24];
    snprintf(number, sizeof(number), "%d", live ? live->point : 0);
    const char *engine = live && live->engine[0] ? live->engine : "pbench";
    const char *running[] = {"config", m->config, "point", number, "engine", engine, NULL};
    const char *config_only[] = {"config", m->config, NULL};
    bool measuring = live && live->point > 0 && strcmp(live->state, "measuring") == 0;
    put_family(m, "pbench_live_samples_per_second", "gauge",
               "Samples per second of the running repeat so far (from its start).");
    if (measuring && isfinite(live->samples_per_s))
        put_number(m->out, "pbench_live_samples_per_second", running, live->samples_per_s);
    put_family(m, "pbench_live_stall_ratio", "gauge",
               "Share of the running repeat's last window (about 1 s) the training loop waited "
               "for data (0 to 1).");
    if (measuring && isfinite(live->stall_pct))
        put_number(m->out, "pbench_live_stall_ratio", running, live->stall_pct / 100);
    static const struct {
        const char *name, *help;
        size_t offset;
    } counters[] = {
        {"pbench_live_point", "The point being measured, 1-based (0 before any).",
         offsetof(struct pb_live, point)},
        {"pbench_live_points", "The points of the run.", offsetof(struct pb_live, points)},
        {"pbench_live_repeat", "The repeat being measured, 1-based (0 before any).",
         offsetof(struct pb_live, repeat)},
        {"pbench_live_repeats", "The repeats of the running point, as planned.",
         offsetof(struct pb_live, repeats)},
    };
    for (size_t c = 0; c < PB_ARRAY_LEN(counters); c++) {
        put_family(m, counters[c].name, "gauge", counters[c].help);
        if (live)
            put_number(m->out, counters[c].name, config_only,
                       *(const int *)((const char *)live + counters[c].offset));
    }
    put_family(m, "pbench_live_eta_seconds", "gauge", "Seconds until the run ends, estimated.");
    if (live && live->eta_s >= 0 && isfinite(live->eta_s))
        put_number(m->out, "pbench_live_eta_seconds", config_only, live->eta_s);
    put_family(m, "pbench_live_elapsed_seconds", "gauge", "Seconds since the session started.");
    if (live && isfinite(live->t_s))
        put_number(m->out, "pbench_live_elapsed_seconds", config_only, live->t_s);
    static const char *const states[] = {"starting", "measuring", "done", "interrupted"};
    put_family(m, "pbench_live_state", "gauge", "1 for the state the run is in, 0 for the others.");
    for (size_t s = 0; live && s < PB_ARRAY_LEN(states); s++) {
        const char *pairs[] = {"config", m->config, "state", states[s], NULL};
        put_sample(m->out, "pbench_live_state", pairs,
                   strcmp(live->state, states[s]) == 0 ? "1" : "0");
    }
}

char *pb_live_metrics(const struct pb_result *r, const struct pb_live *live, bool openmetrics,
                      size_t *len)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out)
        return NULL;
    struct metrics_out m = {.out = out, .openmetrics = openmetrics, .r = r, .live = live,
                            .config = r && r->name[0] ? r->name : live ? live->config : ""};
    put_family(&m, "pbench_samples_per_second", "gauge",
               "Samples per second of the point: the median of its finished repeats.");
    put_point_rates(&m, "pbench_samples_per_second", "samples_per_s", 1);
    put_family(&m, "pbench_stall_ratio", "gauge",
               "Share of the point's time the training loop waited for data (0 to 1).");
    put_point_rates(&m, "pbench_stall_ratio", "stall_pct", 0.01);
    put_point_cpu(&m);
    put_point_totals(&m);
    put_point_info(&m);
    put_stage_latency(&m);
    put_live(&m);
    if (openmetrics)
        fputs("# EOF\n", out);
    bool failed = ferror(out) != 0;
    if (fclose(out) != 0 || failed) {
        free(text);
        return NULL;
    }
    if (len)
        *len = size;
    return text;
}

/* An array of n numbers, null where not finite; NULL without memory. */
static json_t *number_array(const double *values, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, pb_json_number(values[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

/* An array of n integers; NULL without memory. */
static json_t *integer_array(const int *values, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, json_integer(values[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

char *pb_live_json(const struct pb_live *live, const struct pb_live_series *kept, size_t *len)
{
    static const struct pb_live_series none;
    const struct pb_live_series *k = kept ? kept : &none;
    json_t *series = json_pack("{s o s o s o s o s o}", "t", number_array(k->t_s, k->n),
                               "samples_per_s", number_array(k->samples_per_s, k->n),
                               "stall_pct", number_array(k->stall_pct, k->n), "point",
                               integer_array(k->point, k->n), "repeat",
                               integer_array(k->repeat, k->n));
    json_t *root = json_pack(
        "{s o* s o* s o* s i s i s i s i s o* s o s o s o s o s o}", "config",
        pb_json_text(live->config), "engine", pb_json_text(live->engine[0] ? live->engine : "pbench"),
        "state", pb_json_text(live->state), "point", live->point, "points", live->points,
        "repeat", live->repeat, "repeats", live->repeats, "label", pb_json_text(live->label),
        "eta_s", live->eta_s >= 0 ? pb_json_number(live->eta_s) : json_null(), "samples_per_s",
        pb_json_number(live->samples_per_s), "stall_pct", pb_json_number(live->stall_pct), "t_s",
        pb_json_number(live->t_s), "series", series ? series : json_null());
    if (!root || !series) {
        json_decref(root);
        return NULL;
    }
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (text && len)
        *len = strlen(text);
    return text;
}

/* ---- a result file and a history, as metrics ------------------------- */

void pb_live_report(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis)
{
    (void)analysis; /* the figures are the result's; the verdict is no metric */
    size_t len = 0;
    char *text = pb_live_metrics(result, NULL, false, &len);
    if (text)
        fwrite(text, 1, len, out);
    free(text);
}

/* How a metric history keeps (bench/result/metrics.h) is named for
 * Prometheus: its family, in base units (scale turns the kept value into
 * them), and its help. A stage's CPU per sample (cpu_ns_per_sample.STAGE)
 * is pbench_stage_cpu_seconds_per_sample with a stage label. */
static const struct {
    const char *metric, *family, *help;
    double scale;
} history_families[] = {
    {"samples_per_s", "pbench_samples_per_second", "Samples per second of the newest run.", 1},
    {"stall_pct", "pbench_stall_ratio",
     "Share of the newest run's time the training loop waited for data (0 to 1).", 0.01},
    {"accel_util_pct", "pbench_accelerator_utilization_ratio",
     "The simulated step's share of the newest run's time (0 to 1).", 0.01},
    {"cpu_ns_per_sample", "pbench_cpu_seconds_per_sample",
     "The pipeline's CPU time per sample in the newest run.", 1e-9},
    {"assembly_p99_ns", "pbench_batch_assembly_p99_seconds",
     "The 99th percentile of a worker's time to build a batch in the newest run.", 1e-9},
    {"rss_peak_bytes", "pbench_rss_peak_bytes", "The newest run's peak resident memory.", 1},
    {"machine_ref_ns", "pbench_machine_reference_seconds",
     "The machine's own reference workload in the newest run (lower: a faster machine).", 1e-9},
};

/* A series' labels: config, machine, point (its axes, "" for none), engine
 * and fingerprint (what tells apart two series of one config measured
 * differently); point_text holds the axes as text. */
static void series_labels(const struct pb_history_series *s, char *point_text, size_t size,
                          struct labels *l)
{
    memset(l, 0, sizeof(*l));
    point_text[0] = '\0';
    json_t *axes = json_loads(s->point, 0, NULL);
    if (json_is_object(axes))
        pb_report_axes(point_text, size, axes, ", ");
    json_decref(axes);
    const char *pairs[] = {"config", s->config, "machine", s->machine, "point", point_text,
                           "engine", s->engine[0] ? s->engine : "pbench",
                           "fingerprint", s->fingerprint};
    memcpy(l->pairs, pairs, sizeof(pairs));
}

/* The newest run's value of each series of h, as the family that names h's metric. */
static void put_history_values(const struct metrics_out *m, const struct pb_history *h)
{
    const char *family = NULL, *help = NULL, *stage = NULL;
    double scale = 1;
    size_t prefix = strlen(PB_STAGE_CPU_PREFIX);
    for (size_t f = 0; f < PB_ARRAY_LEN(history_families); f++)
        if (strcmp(h->metric, history_families[f].metric) == 0) {
            family = history_families[f].family;
            help = history_families[f].help;
            scale = history_families[f].scale;
        }
    if (!family && strncmp(h->metric, PB_STAGE_CPU_PREFIX, prefix) == 0) {
        family = "pbench_stage_cpu_seconds_per_sample";
        help = "A pipeline stage's CPU time per sample in the newest run.";
        stage = h->metric + prefix;
        scale = 1e-9;
    }
    if (!family)
        return;
    put_family(m, family, "gauge", help);
    for (size_t i = 0; i < h->series_count; i++) {
        const struct pb_history_series *s = &h->series[i];
        if (!s->run_count || !isfinite(s->runs[s->run_count - 1].value))
            continue;
        char point[1024];
        struct labels l;
        series_labels(s, point, sizeof point, &l);
        if (stage)
            add_label(&l, "stage", stage);
        put_number(m->out, family, l.pairs, s->runs[s->run_count - 1].value * scale);
    }
}

/* Each series' runs, its newest run's revision and time, and whether that
 * run is suspect or the series has a step that counts as a regression (of
 * the first history's metric). */
static void put_history_series(const struct metrics_out *m, const struct pb_history *h)
{
    struct labels l;
    char point[1024];
    put_family(m, "pbench_history_runs", "gauge", "The runs a series has in the history.");
    for (size_t i = 0; i < h->series_count; i++) {
        series_labels(&h->series[i], point, sizeof point, &l);
        put_number(m->out, "pbench_history_runs", l.pairs, (double)h->series[i].total);
    }
    put_family(m, "pbench_history_newest_run", "info",
               "A series' newest run: its revision and when it was measured.");
    for (size_t i = 0; i < h->series_count; i++) {
        const struct pb_history_series *s = &h->series[i];
        if (!s->run_count)
            continue;
        series_labels(s, point, sizeof point, &l);
        add_label(&l, "revision", s->runs[s->run_count - 1].revision);
        add_label(&l, "created", s->runs[s->run_count - 1].created);
        put_sample(m->out, "pbench_history_newest_run_info", l.pairs, "1");
    }
    put_family(m, "pbench_history_regression", "gauge",
               "1 where the series has a step that makes the metric worse (pbench history "
               "show exits 3), else 0.");
    for (size_t i = 0; i < h->series_count; i++) {
        series_labels(&h->series[i], point, sizeof point, &l);
        add_label(&l, "metric", h->metric);
        put_sample(m->out, "pbench_history_regression", l.pairs,
                   pb_history_step_counts(&h->series[i]) ? "1" : "0");
    }
    put_family(m, "pbench_history_suspect", "gauge",
               "1 where the series' newest run is suspect (pbench history show exits 5), else 0.");
    for (size_t i = 0; i < h->series_count; i++) {
        series_labels(&h->series[i], point, sizeof point, &l);
        add_label(&l, "metric", h->metric);
        put_sample(m->out, "pbench_history_suspect", l.pairs, h->series[i].suspect ? "1" : "0");
    }
}

int pb_live_history_metrics(FILE *out, const struct pb_history *const *histories, size_t count,
                            bool openmetrics)
{
    struct metrics_out m = {.out = out, .openmetrics = openmetrics};
    if (count > 0)
        put_history_series(&m, histories[0]);
    for (size_t k = 0; k < count; k++)
        put_history_values(&m, histories[k]);
    if (openmetrics)
        fputs("# EOF\n", out);
    return ferror(out) ? PB_ERR : PB_OK;
}

void pb_live_history(FILE *out, const struct pb_history *history)
{
    pb_live_history_metrics(out, &history, 1, false);
}
