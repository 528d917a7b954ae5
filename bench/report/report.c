/* Renderings of a result: terminal table, GitHub markdown and JSON (CSV
 * and TSV: report_csv.c).
 *
 * The table and markdown forms share one shape: the report is built as a
 * sequence of small tables (struct pb_table), and each table is rendered
 * either as aligned text or as a GitHub table. Nothing here measures. */
#include "bench/report/report.h"
#include "bench/report/report_gpu.h"
#include "bench/report/report_wrap.h"
#include "bench/report/warnings.h"
#include "bench/report/report_ranks.h"
#include "bench/report/report_storage.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/base/table.h"
#include "bench/result/figures.h"

#define CELL_MAX PB_TABLE_CELL_MAX
#define REPORT_ERROR_FILES 8 /* the terminal lists these; the result keeps 64 */
/* A line of names as shown: printable, then Markdown-escaped. */
#define SHOWN_SIZE PB_MARKDOWN_SIZE(PB_PRINTABLE_SIZE(CELL_MAX + 300))

/* ------------------------------------------------------------ formatting */

/* Decimals that show a noise figure as measured: a loop paced by its step
 * can vary by 0.04%, which one decimal would print as a flat "0.0%". */
static int noise_digits(double pct)
{
    return pct >= 0.1 || pct <= 0 ? 1 : pct >= 0.01 ? 2 : 3;
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}


void pb_report_axes(char *buf, size_t size, const json_t *axes, const char *sep)
{
    const char *key;
    const json_t *value;
    size_t used = 0;
    char joined[CELL_MAX];
    buf[0] = joined[0] = '\0';
    if (!json_is_object(axes))
        return;
    json_object_foreach ((json_t *)axes, key, value) {
        char text[256];
        pb_fmt_json_value(text, sizeof(text), value);
        int n = snprintf(joined + used, sizeof(joined) - used, "%s%s=%s", used ? sep : "", key,
                         text);
        if (n < 0 || (size_t)n >= sizeof(joined) - used)
            break;
        used += (size_t)n;
    }
    pb_printable(buf, size, joined);
}

/* The simulated training step of point i, in ms; 0 without one. */
static double step_ms(const struct pb_result *result, size_t point)
{
    return pb_point_step_ms(result, point);
}

/* Adds a latency row's cells after its name: the count, then the given
 * formatted times. */
static void add_count_and_cells(struct pb_table *t, uint64_t count, const char *const cells[],
                                size_t cell_count)
{
    pb_table_add(t, "%llu", (unsigned long long)count);
    for (size_t c = 0; c < cell_count; c++)
        pb_table_add(t, "%s", cells[c]);
}

/* ------------------------------------------------------- report sections */

struct sink {
    FILE *out;
    bool markdown;
    const struct pb_analysis *analysis; /* of the result rendered; may be NULL */
};

/* raw (up to CELL_MAX + 300 bytes) made printable and, in Markdown, with
 * &, < and > as entities: names from a config or result show as written,
 * never as HTML. Writes into buf and returns it. */
static const char *shown(const struct sink *s, char *buf, size_t size, const char *raw)
{
    char printable[PB_PRINTABLE_SIZE(CELL_MAX + 300)];
    pb_printable(printable, sizeof(printable), raw);
    if (s->markdown)
        return pb_markdown_text(buf, size, printable, false);
    pb_strlcpy(buf, printable, size);
    return buf;
}

static void emit_table(const struct sink *s, const struct pb_table *t)
{
    if (s->markdown)
        pb_table_print_markdown(s->out, t);
    else
        pb_table_print_text(s->out, t, "  ");
}

/* "BULLET LABEL TEXT", text without control characters; NULL: "- "/"  ". */
static void emit_item(const struct sink *s, const char *bullet, const char *label,
                      const char *text)
{
    char line[SHOWN_SIZE];
    fprintf(s->out, "%s%s%s\n", bullet ? bullet : s->markdown ? "- " : "  ", label,
            shown(s, line, sizeof(line), text));
}

static void emit_warning(const struct sink *s, const char *text)
{
    emit_item(s, NULL, "warning: ", text);
}

/* The engines other than pbench's that ran points, with their versions
 * ("engine: torch · Python 3.11.2 · torch 1.13.0 · ..."). */
static void emit_engine(const struct sink *s, const struct pb_result *result, const char *line_end)
{
    char text[800], raw[900], line[1800];
    if (!pb_result_engines_text(result, text, sizeof text))
        return;
    snprintf(raw, sizeof raw, "engine: %s", text);
    fprintf(s->out, "%s%s", line_end, shown(s, line, sizeof line, raw));
}

static void emit_header(const struct sink *s, const struct pb_result *result)
{
    const struct pb_machine *m = &result->machine;
    char gpu[200], raw[600], line[SHOWN_SIZE];
    if (m->gpu_count > 0)
        snprintf(gpu, sizeof(gpu), "%d × %s", m->gpu_count, m->gpu_name);
    else
        snprintf(gpu, sizeof(gpu), "none (%s)", m->gpu_status[0] ? m->gpu_status : "unknown");
    const char *name = result->name[0] ? result->name : "(unnamed)";
    const char *line_end = s->markdown ? "  \n" : "\n"; /* markdown hard break */
    snprintf(raw, sizeof(raw), s->markdown ? "# pbench: %s" : "%s ·", name);
    fprintf(s->out, s->markdown ? "%s\n\npbench" : "%s pbench",
            shown(s, line, sizeof(line), raw));
    snprintf(raw, sizeof(raw), " %s · %s · %d cores / %d PUs",
             result->pbench_version[0] ? result->pbench_version : "?",
             m->cpu_model[0] ? m->cpu_model : "unknown CPU", m->cores, m->pus);
    fprintf(s->out, "%s%s", shown(s, line, sizeof(line), raw), line_end);
    snprintf(raw, sizeof(raw), "created %s on %s · %s · GPU: %s",
             result->created[0] ? result->created : "?", m->hostname[0] ? m->hostname : "?",
             m->os[0] ? m->os : "unknown OS", gpu);
    fprintf(s->out, "%s%s", shown(s, line, sizeof(line), raw), line_end);

    static const char *const loader_keys[] = {"workers", "batch_size", "prefetch_factor",
                                              "pin_memory"};
    if (pb_report_wrap_loader(s->out, result)) { /* the job's own DataLoader */
        emit_engine(s, result, line_end);
        fputs(s->markdown ? "\n\n" : "\n", s->out);
        return;
    }
    fputs("loader:", s->out);
    for (size_t i = 0; i < PB_ARRAY_LEN(loader_keys); i++) {
        char path[64], value[64];
        snprintf(path, sizeof(path), "loader.%s", loader_keys[i]);
        pb_fmt_json_value(value, sizeof(value), pb_result_config_value(result, path));
        fprintf(s->out, "%s%s=%s", i ? "  " : " ", loader_keys[i], value);
    }
    emit_engine(s, result, line_end);
    fputs(s->markdown ? "\n\n" : "\n", s->out);
}

static const char *short_axis(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

static int by_throughput_desc(const void *a, const void *b, void *ctx);

struct order_ctx {
    const struct pb_result *result;
    const struct pb_analysis *analysis;
};

static const struct order_ctx *sort_ctx; /* qsort has no user pointer in C11 */

static int order_cmp(const void *a, const void *b)
{
    return by_throughput_desc(a, b, (void *)sort_ctx);
}

static int by_throughput_desc(const void *a, const void *b, void *ctx)
{
    const struct order_ctx *c = ctx;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    bool ui = c->analysis->points[i].usable, uj = c->analysis->points[j].usable;
    if (ui != uj)
        return ui ? -1 : 1;
    double x = c->result->points[i].samples_per_s, y = c->result->points[j].samples_per_s;
    if (x != y)
        return x > y ? -1 : 1;
    return i < j ? -1 : (i > j);
}

/* The sweep table's columns: the swept axes, then the figures, less those
 * the result has nothing for (accel without a step time, copy and overlap
 * without a GPU, eff without a calibration). */
static const char *const sweep_figures[] = {
    "samples/s", "noise",   "asm p50",   "asm p99", "stall",
    "accel",     "copy GB/s", "overlap", "wkr CPU", "RSS MiB",
    "pinned",    "top stage", "eff",     "input-bound"};
enum { FIG_ACCEL = 5, FIG_COPY = 6, FIG_OVERLAP = 7, FIG_EFF = 12 };

struct sweep_columns {
    const char *axis_keys[16];
    size_t axis_count;
    bool show[PB_ARRAY_LEN(sweep_figures)];
    size_t count; /* the marker column, the axes and the figures shown */
    bool step, gpu, calibrated, capped; /* capped: a repeat stopped noisy at its cap */
};

static void sweep_columns(const struct pb_result *result, struct sweep_columns *c)
{
    memset(c, 0, sizeof(*c));
    const json_t *first_axes = result->points[0].axes;
    const char *key;
    json_t *value;
    if (first_axes)
        json_object_foreach((json_t *)first_axes, key, value)
        {
            if (c->axis_count < 16)
                c->axis_keys[c->axis_count++] = key;
        }
    for (size_t i = 0; i < result->point_count; i++) {
        c->step = c->step || step_ms(result, i) > 0;
        c->gpu = c->gpu || result->points[i].gpu.used;
        for (size_t r = 0; r < result->points[i].repeat_count; r++)
            c->capped = c->capped || result->points[i].repeats[r].noisy;
    }
    c->calibrated = result->calibration.measured;
    c->count = 1 + c->axis_count;
    for (size_t f = 0; f < PB_ARRAY_LEN(sweep_figures); f++) {
        c->show[f] = !(f == FIG_ACCEL && !c->step) &&
                     !((f == FIG_COPY || f == FIG_OVERLAP) && !c->gpu) &&
                     !(f == FIG_EFF && !c->calibrated);
        c->count += c->show[f];
    }
}

/* The table with its header row: numbers right-aligned, the last two
 * columns (top stage or eff, input-bound) text unless eff is a number. */
static void sweep_table_init(struct pb_table *t, const struct sweep_columns *c)
{
    unsigned right = 0;
    for (size_t col = 1; col < c->count; col++)
        right |= 1u << col;
    right &= ~(1u << (c->count - 1)); /* input-bound: text */
    right &= ~(1u << (c->count - 2)); /* top stage or eff */
    if (c->calibrated)
        right |= 1u << (c->count - 2);
    pb_table_init(t, c->count, right, false);
    pb_table_add(t, " ");
    for (size_t a = 0; a < c->axis_count; a++)
        pb_table_add(t, "%s", short_axis(c->axis_keys[a]));
    for (size_t f = 0; f < PB_ARRAY_LEN(sweep_figures); f++)
        if (c->show[f])
            pb_table_add(t, "%s", sweep_figures[f]);
}

/* The figures of a point that measured. */
static void sweep_figures_row(struct pb_table *t, const struct pb_result *result, size_t i,
                              const struct pb_point_analysis *a, const struct sweep_columns *c)
{
    const struct pb_point_result *p = &result->points[i];
    char p50[32], p99[32];
    pb_fmt_duration(p50, sizeof(p50), (double)p->assembly_p50_ns);
    pb_fmt_duration(p99, sizeof(p99), (double)p->assembly_p99_ns);
    int capped = 0;
    for (size_t q = 0; q < p->repeat_count; q++)
        capped += p->repeats[q].noisy;
    int windows;
    pb_table_add(t, "%.1f", p->samples_per_s);
    if (pb_point_noise_known(result, i, &windows))
        pb_table_add(t, "±%.*f%%%s", noise_digits(p->samples_per_s_noise_pct),
                     p->samples_per_s_noise_pct, capped ? " capped" : "");
    else
        pb_table_add(t, "noise unknown (%d window%s)%s", windows, windows == 1 ? "" : "s",
                     capped ? " capped" : "");
    pb_table_add(t, "%s", p50);
    pb_table_add(t, "%s", p99);
    pb_table_add(t, "%.1f%%", p->stall_pct);
    if (c->show[FIG_ACCEL])
        pb_table_add(t, "%.1f%%", p->accel_util_pct);
    if (c->show[FIG_COPY]) {
        pb_table_add(t, p->gpu.used ? "%.2f" : "-", p->gpu.copy_gb_per_s);
        pb_table_add(t, p->gpu.used ? "%.0f%%" : "-", p->gpu.overlap_pct);
    }
    pb_table_add(t, "%.0f%%", p->worker_cpu_pct);
    pb_table_add(t, "%.0f", mib(p->rss_peak_bytes));
    pb_table_add(t, "%.0f", mib(p->pinned_bytes));
    if (a->top_stage >= 0)
        pb_table_add(t, "%s %.0f%%%s", p->stages[a->top_stage].name, a->top_share_pct,
                     a->top_share_of_cpu ? "" : " wall");
    else
        pb_table_add(t, "-");
    if (c->show[FIG_EFF] && a->at_step_cap)
        pb_table_add(t, "at the step-time cap (%.0f samples/s max)", a->step_cap_samples_per_s);
    else if (c->show[FIG_EFF] && a->efficiency_pct > 100.0)
        pb_table_add(t, "cal?"); /* over the calibrated limit: the calibration is the problem */
    else if (c->show[FIG_EFF])
        pb_table_add(t, "%.0f%%%s", a->efficiency_pct, a->calibration_suspect ? "?" : "");
    static const char *const bound[] = {"no", "moderate", "HIGH"};
    pb_table_add(t, "%s", bound[a->input_bound]);
}

/* One point's row: the recommended mark, its axes, then its figures (or
 * FAILED / not run). */
static void sweep_row(struct pb_table *t, const struct pb_result *result,
                      const struct pb_analysis *an, size_t i, const struct sweep_columns *c)
{
    const struct pb_point_result *p = &result->points[i];
    pb_table_add(t, "%s", (int)i == pb_analysis_marked(an) ? "*" : "");
    for (size_t x = 0; x < c->axis_count; x++) {
        char text[64];
        pb_fmt_json_value(text, sizeof(text),
                          p->axes ? json_object_get(p->axes, c->axis_keys[x]) : NULL);
        pb_table_add(t, "%s", text);
    }
    if (an->points[i].usable) {
        sweep_figures_row(t, result, i, &an->points[i], c);
        return;
    }
    for (size_t f = 0; f < PB_ARRAY_LEN(sweep_figures); f++)
        if (c->show[f])
            pb_table_add(t, "%s",
                         f == PB_ARRAY_LEN(sweep_figures) - 1 ? (p->error[0] ? "FAILED" : "not run")
                                                              : "-");
}

/* The eff column's caveat: a point over the calibrated limit reads "cal?"
 * (the calibration was held back, not the loader over 100%), and a
 * calibration measured on a busy machine marks every eff with "?". */
static const char *calibration_note(const struct pb_result *result, const struct pb_analysis *an,
                                    char *buf, size_t size)
{
    const struct pb_calibration *cal = &result->calibration;
    bool over = false;
    for (size_t i = 0; i < an->point_count; i++)
        over |= an->points[i].efficiency_pct > 100.0;
    buf[0] = '\0';
    if (cal->busy)
        snprintf(buf, size,
                 "; ? = calibrated beside other processes (%.0f%% of the machine's CPU, steal "
                 "%.0f%%), so the limit is low%s; run pbench calibrate on a quiet machine",
                 cal->other_cpu_pct, cal->steal_pct, over ? " and cal? = above it" : "");
    else if (over)
        snprintf(buf, size,
                 "; cal? = above the calibrated limit, which no loader reaches: the calibration "
                 "ran slower than this point (a cold cache, a clock that rose later); run "
                 "pbench calibrate again");
    return buf;
}

/* What the sweep table's columns mean, under it. */
static void sweep_legend(const struct sink *s, const struct pb_result *result,
                         const struct pb_analysis *an, const struct sweep_columns *c)
{
    const char *bullet = s->markdown ? "- " : "  ";
    fprintf(s->out, "%s%snoise = spread of the repeats (coefficient of variation)%s\n",
            s->markdown ? "\n" : "", bullet,
            c->capped ? "; capped = a repeat reached run.max_time_s with its windowed throughput "
                        "still noisier than run.target_noise"
                      : "");
    fprintf(s->out, "%sasm = batch assembly time in a worker; stall = share of the training "
                    "loop's time spent waiting for a batch (total wait / total wall of the "
                    "repeats, where samples/s is their median); input-bound: stall >= %.0f%% HIGH, "
                    ">= %.0f%% moderate (TensorFlow's input-pipeline thresholds); top stage = "
                    "largest share of the workers' stage CPU time (\"wall\": of their wall "
                    "time, where the result has no CPU times)\n",
            bullet, an->thresholds.input_bound_high_pct, an->thresholds.input_bound_moderate_pct);
    char note[400];
    if (c->calibrated)
        fprintf(s->out,
                "%seff = samples/s against the calibrated limit: %.1f samples/s on one core x "
                "min(workers, %d cores); memcpy %.1f GB/s%s\n",
                bullet, result->calibration.single_core_samples_per_s, result->calibration.cores,
                result->calibration.memcpy_gb_per_s,
                calibration_note(result, an, note, sizeof note));
    char engines[800];
    if (pb_result_engines_text(result, engines, sizeof engines)) {
        const char *base = json_string_value(pb_result_config_value(result, "loader.engine"));
        fprintf(s->out,
                "%son another engine (%.200s): RSS MiB is the PSS of the engine's process and "
                "its worker processes together (shared pages counted once), wkr CPU is per "
                "worker process%s%s%s\n",
                bullet, engines, c->calibrated ? ", and eff is against the calibration made on "
                                                 "the base config's engine ("
                                               : "",
                c->calibrated ? (base ? base : "pbench") : "", c->calibrated ? ")" : "");
    }
    if (c->gpu)
        fprintf(s->out,
                "%saccel = GPU time in the step kernel / wall time; copy GB/s = bytes / CUDA-event "
                "copy time; overlap = share of copy time during which the GPU computed\n",
                bullet);
    if (c->gpu && result->calibration.h2d_bytes)
        fprintf(s->out, "%shost-to-device peak for one %.1f MiB batch: pinned %.1f GB/s, pageable "
                        "%.1f GB/s (calibrated)\n",
                bullet, (double)result->calibration.h2d_bytes / 1048576.0,
                result->calibration.h2d_pinned_gb_s, result->calibration.h2d_pageable_gb_s);
}

/* One row per point, fastest first; the recommended row is marked. */
static void emit_comparison(const struct sink *s, const struct pb_result *result,
                            const struct pb_analysis *an)
{
    struct sweep_columns columns;
    sweep_columns(result, &columns);
    struct pb_table t;
    sweep_table_init(&t, &columns);
    size_t *order = calloc(result->point_count, sizeof(size_t));
    for (size_t i = 0; order && i < result->point_count; i++)
        order[i] = i;
    struct order_ctx ctx = {result, an};
    sort_ctx = &ctx;
    if (order)
        qsort(order, result->point_count, sizeof(size_t), order_cmp);
    for (size_t r = 0; order && r < result->point_count; r++)
        sweep_row(&t, result, an, order[r], &columns);
    free(order);
    if (s->markdown)
        fprintf(s->out, "## Sweep: %zu points\n\n", result->point_count);
    else
        fprintf(s->out, "\nsweep: %zu points, fastest first (%s)\n", result->point_count,
                an->withheld[0] ? "recommendation withheld: below" : "* = recommended");
    emit_table(s, &t);
    pb_table_free(&t);
    sweep_legend(s, result, an, &columns);
}

/* The recommendation, the rule beside it, scaling and suggestions. */
static void emit_analysis(const struct sink *s, const struct pb_analysis *an)
{
    const char *bullet = s->markdown ? "- " : "  ";
    fputs(s->markdown ? "\n## Recommendation\n\n" : "\nrecommendation\n", s->out);
    if (an->recommended < 0) {
        emit_item(s, bullet, "none: ", an->rule);
        return;
    }
    emit_item(s, bullet, an->withheld[0] ? "withheld, " : "",
              an->withheld[0] ? an->withheld : an->reason);
    emit_item(s, bullet, "rule: ", an->rule);
    if (an->scaling[0])
        emit_item(s, bullet, "scaling: ", an->scaling);
    const struct pb_point_analysis *a = &an->points[an->recommended];
    emit_item(s, bullet, "bottleneck: ", a->bottleneck);
}

/* The last block of every run: the verdict line, then the suggestions,
 * each with the command that tests it. */
static void emit_verdict(const struct sink *s, const struct pb_analysis *an)
{
    fputs("\n", s->out);
    if (!an || an->recommended < 0) {
        emit_item(s, "", "verdict: ",
                  an ? "no point was measured successfully: nothing to judge"
                     : "not analyzed");
        return;
    }
    emit_item(s, "", "verdict: ", an->verdict);
    if (an->capacity[0])
        emit_item(s, s->markdown ? "" : "  ", "capacity: ", an->capacity);
    if (an->engines[0])
        emit_item(s, s->markdown ? "" : "  ", "engines: ", an->engines);
    if (s->markdown && an->suggestion_count)
        fputc('\n', s->out);
    for (int i = 0; i < an->suggestion_count; i++)
        emit_item(s, NULL, "try: ", an->suggestions[i]);
}

/* samples/s with its noise, how long each repeat measured, batches/s and
 * MB/s. */
static void summary_throughput(struct pb_table *t, const struct pb_result *result,
                               const struct pb_point_result *p, size_t index)
{
    /* A repeat cut short by a signal is kept in the file but left out of
     * the point's summary. */
    size_t complete = pb_point_finished_repeats(p);
    /* Why it was cut: the point's error (a stuck stage, the engine's death), or a stop. */
    const char *why = p->error[0] ? " by a failure" : result->interrupted ? " by a stop" : "";
    int windows;
    bool noise_known = pb_point_noise_known(result, index, &windows);
    pb_table_add(t, "samples/s");
    if (!noise_known && p->repeat_count > 0)
        pb_table_add(t, "%.1f, noise unknown (%d window%s)  (1 repeat: noise unknown; raise "
                         "run.repeats, or run.min_time_s for more windows)%s%s%s",
                     p->samples_per_s, windows, windows == 1 ? "" : "s",
                     complete < p->repeat_count ? "; 1 repeat cut short" : "",
                     complete < p->repeat_count ? why : "",
                     complete < p->repeat_count ? ", left out" : "");
    else if (complete < p->repeat_count)
        pb_table_add(t,
                     "%.1f ± %.*f%%  (median of %zu complete repeat%s; %zu cut short%s, left "
                     "out)",
                     p->samples_per_s, noise_digits(p->samples_per_s_noise_pct),
                     p->samples_per_s_noise_pct, complete, complete == 1 ? "" : "s",
                     p->repeat_count - complete, why);
    else if (p->repeat_count >= 2)
        pb_table_add(t, "%.1f ± %.*f%%  (median of %zu repeats)", p->samples_per_s,
                     noise_digits(p->samples_per_s_noise_pct), p->samples_per_s_noise_pct,
                     p->repeat_count);
    else if (p->repeat_count == 1)
        pb_table_add(t, "%.1f ± %.*f%%  (1 repeat; ± is windowed noise)", p->samples_per_s,
                     noise_digits(p->samples_per_s_noise_pct), p->samples_per_s_noise_pct);
    else
        pb_table_add(t, "%.1f  (no repeats)", p->samples_per_s);
    pb_table_add(t, "measured");
    {
        char line[CELL_MAX];
        size_t used = 0;
        int capped = 0, noisy = 0;
        for (size_t r = 0; r < p->repeat_count && used < sizeof(line); r++) {
            used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%.2f s%s", r ? ", " : "",
                                     p->repeats[r].wall_s,
                                     r >= complete ? " (cut short)" : "");
            capped += p->repeats[r].hit_time_cap;
            noisy += p->repeats[r].noisy;
        }
        if (used < sizeof(line)) {
            if (noisy)
                snprintf(line + used, sizeof(line) - used,
                         "; %d of %zu repeats stopped at run.max_time_s above run.target_noise",
                         noisy, p->repeat_count);
            else if (capped)
                snprintf(line + used, sizeof(line) - used, "; %d of %zu repeats hit run.max_time_s",
                         capped, p->repeat_count);
        }
        pb_table_add(t, "%s", line);
    }
    pb_table_add(t, "batches/s");
    pb_table_add(t, "%.2f", p->batches_per_s);
    const char *own = json_string_value(pb_point_setting(result, index, "dataset.python"));
    if (pb_point_wrapped(result, index))
        return; /* the job reads its files itself: no figure to show */
    pb_table_add(t, "MB/s read");
    if (own && own[0] && p->mb_per_s == 0) /* not zero: not measured */
        pb_table_add(t, "unknown (your Dataset reads its files itself)");
    else
        pb_table_add(t, "%.1f", p->mb_per_s);
}

/* CPU per sample (bench/result/figures.h), the median of the repeats', and
 * what it is the CPU of. */
static void summary_cpu_per_sample(struct pb_table *t, const struct pb_point_result *p)
{
    char cpu[32];
    double stages = pb_stages_cpu_ns_per_sample(p->stages, p->stage_count);
    pb_fmt_duration(cpu, sizeof(cpu), pb_point_cpu_ns_per_sample(p));
    pb_table_add(t, "CPU per sample");
    if (!isnan(stages))
        pb_table_add(t, "%s  (the stages' thread CPU over the samples through them, the "
                        "median of the repeats)",
                     cpu);
    else
        pb_table_add(t, "%s  (the process's CPU over the samples delivered: no stage CPU times)",
                     cpu);
}

/* The training loop: stall, queue depth, the accelerator, the GPU, worker
 * CPU, where the loop's time went, the first batch, other processes. */
static void summary_loop(struct pb_table *t, const struct pb_result *result,
                         const struct pb_point_result *p, size_t index)
{
    char a[32], b[32];
    pb_fmt_duration(a, sizeof(a), (double)p->wait_p50_ns);
    pb_fmt_duration(b, sizeof(b), (double)p->wait_p99_ns);
    pb_table_add(t, "stall");
    char repeats[160] = "";
    double median, lo, hi;
    if (pb_point_stall_repeats(p, &median, &lo, &hi))
        snprintf(repeats, sizeof(repeats),
                 "total wait / total wall of the repeats; per repeat median %.1f %%, %.1f-%.1f "
                 "%%; ",
                 median, lo, hi);
    if (step_ms(result, index) > 0)
        pb_table_add(t, "%.1f %%  (%sconsumer wait per batch p50 %s, p99 %s)", p->stall_pct,
                     repeats, a, b);
    else
        pb_table_add(t,
                     "%.1f %%  (%srun.step_ms is 0: the loop only waits, so samples/s is the "
                     "loader's ceiling; wait per batch p50 %s, p99 %s)",
                     p->stall_pct, repeats, a, b);
    {
        int64_t workers = pb_point_setting_int(result, index, "loader.workers", 0);
        int64_t prefetch = pb_point_setting_int(result, index, "loader.prefetch_factor", 0);
        long long ahead = (long long)(workers * prefetch);
        pb_table_add(t, "queue depth");
        if (ahead > 0)
            pb_table_add(t, "%.2f of %lld batches ready at dequeue, mean", p->queue_depth_mean,
                         ahead);
        else
            pb_table_add(t, "none: loader.workers is 0, batches load in the training loop");
    }
    double step = step_ms(result, index);
    if (step > 0 && pb_point_wrapped(result, index)) {
        pb_fmt_duration(a, sizeof(a), step * 1e6);
        pb_table_add(t, "step");
        pb_table_add(t, "%s per batch, the job's own, measured (%.1f %% of its time)", a,
                     p->loop_step_pct);
    } else if (step > 0) {
        pb_fmt_duration(a, sizeof(a), step * 1e6);
        pb_table_add(t, "accelerator");
        pb_table_add(t, "%.1f %% utilized  (step %s)", p->accel_util_pct, a);
    }
    if (p->gpu.used)
        pb_report_gpu_summary(t, result, p);
    pb_table_add(t, "worker CPU");
    pb_table_add(t, "%.1f %%  (process %.0f %%, 100 %% = one core)", p->worker_cpu_pct,
                 p->cpu_util_pct);
    summary_cpu_per_sample(t, p);
    if (p->first_batch_s > 0) { /* 0 in results from before these figures */
        char stages[32] = ""; /* a wrapped job's loop has no stages of pbench's */
        if (!pb_point_wrapped(result, index) || p->loop_stages_pct > 0)
            snprintf(stages, sizeof stages, ", stages %.1f%%", p->loop_stages_pct);
        pb_table_add(t, "loop time");
        pb_table_add(t, "wait %.1f%%, step %.1f%%%s, other %.1f%%", p->stall_pct, p->loop_step_pct,
                     stages, p->loop_other_pct);
        pb_fmt_duration(a, sizeof(a), p->first_batch_s * 1e9);
        pb_table_add(t, "first batch");
        pb_table_add(t, "%s after the workers start, median over repeats (paid at every epoch "
                         "start without persistent workers)", a);
        pb_table_add(t, "other processes");
        pb_table_add(t, "%.0f %% of the machine's CPU, steal %.0f %%  (median over repeats)",
                     p->other_cpu_pct, p->steal_pct);
    }
}

/* Peak RSS and pinned memory. */
static void summary_memory(struct pb_table *t, const struct pb_point_result *p)
{
    if (p->engine) { /* another process's loader: its memory as it was sampled */
        pb_table_add(t, "peak PSS");
        pb_table_add(t, "%.1f MiB  (the engine and its worker processes together, shared "
                        "copy-on-write pages counted once)",
                     mib(p->rss_peak_bytes));
        return;
    }
    pb_table_add(t, "peak RSS");
    pb_table_add(t, "%.1f MiB", mib(p->rss_peak_bytes));
    pb_table_add(t, "pinned");
    pb_table_add(t, "%.1f MiB  (batch pool %.1f MiB)", mib(p->pinned_bytes),
                 mib(p->batch_pool_bytes));
}

/* Batch assembly and, for video, decode amplification and its ceiling. */
static void summary_assembly(struct pb_table *t, const struct sink *s,
                             const struct pb_point_result *p, size_t index)
{
    char a[32], b[32];
    pb_fmt_duration(a, sizeof(a), (double)p->assembly_p50_ns);
    pb_fmt_duration(b, sizeof(b), (double)p->assembly_p99_ns);
    pb_table_add(t, "batch assembly");
    pb_table_add(t, "p50 %s, p99 %s", a, b);
    double amp, ns_frame, frames_per_sample;
    if (pb_decode_figures(p, &amp, &ns_frame, &frames_per_sample)) {
        /* The decode ceiling, as the analysis computed it. */
        const struct pb_analysis *an = s->analysis;
        if (an && index < an->point_count) {
            const struct pb_point_analysis *a = &an->points[index];
            pb_table_add(t, "decode");
            pb_table_add(t, "amplification %.2f (frames decoded / delivered)", a->amplification);
            pb_table_add(t, "ceiling");
            char per[80];
            if (a->workers > 0)
                snprintf(per, sizeof(per), "per worker (%s) x %lld",
                         a->decode_rate_calibrated ? "calibrated, one core"
                                                   : "measured in this run",
                         (long long)a->workers);
            else
                snprintf(per, sizeof(per), "in the training loop's thread (%s)",
                         a->decode_rate_calibrated ? "calibrated, one core"
                                                   : "measured in this run");
            pb_table_add(t,
                         "%.0f frames/s = %.0f decoded frames/s %s / %.2f; this run delivers "
                         "%.0f = %.0f%% of it",
                         a->ceiling_frames_per_s, a->decoded_fps_per_worker, per,
                         a->amplification, a->delivered_frames_per_s, a->ceiling_pct);
        }
    }
}

/* Samples, errors and the files that failed. */
static void summary_counts(struct pb_table *t, const struct pb_point_result *p)
{
    pb_table_add(t, "samples");
    pb_table_add(t, "%llu", (unsigned long long)p->samples);
    pb_table_add(t, "errors");
    pb_table_add(t, "%llu", (unsigned long long)p->errors);
    int shown = p->error_file_count < REPORT_ERROR_FILES ? p->error_file_count : REPORT_ERROR_FILES;
    for (int i = 0; i < shown; i++) {
        char file[PB_PRINTABLE_SIZE(sizeof(p->error_files[i]))];
        pb_table_add(t, "%s", i == 0 ? "error files" : "");
        pb_table_add(t, "%s", pb_printable(file, sizeof(file), p->error_files[i]));
    }
    if (p->error_file_count > shown || p->error_files_unlisted) {
        char more[200] = "";
        size_t used = 0;
        if (p->error_file_count > shown)
            used = (size_t)snprintf(more, sizeof(more), "%d more in the result file (errors.files)",
                                    p->error_file_count - shown);
        if (p->error_files_unlisted && used < sizeof(more))
            snprintf(more + used, sizeof(more) - used, "%s%llu failures of other files after the "
                     "first %d, counted only",
                     used ? "; " : "", (unsigned long long)p->error_files_unlisted,
                     PB_MAX_ERROR_FILES);
        pb_table_add(t, "%s", "");
        pb_table_add(t, "%s", more);
    }
}

/* A point's figures, one row each, as a two-column table. */
static void emit_point_summary(const struct sink *s, const struct pb_result *result,
                               const struct pb_point_result *p)
{
    struct pb_table t;
    size_t index = (size_t)(p - result->points);
    pb_table_init(&t, 2, 0, true);
    pb_table_add(&t, "metric");
    pb_table_add(&t, "value");
    pb_report_wrap_summary(&t, p);
    summary_throughput(&t, result, p, index);
    summary_loop(&t, result, p, index);
    summary_memory(&t, p);
    summary_assembly(&t, s, p, index);
    summary_counts(&t, p);
    emit_table(s, &t);
    pb_table_free(&t);
}

static void emit_stages(const struct sink *s, const struct pb_point_result *p)
{
    if (p->stage_count == 0)
        return;
    struct pb_table t;
    pb_table_init(&t, 11, 0x7feu, false); /* all but the name right-aligned */
    static const char *const header[] = {"stage", "count", "mean", "p50",        "p90",  "p95",
                                         "p99",   "max",   "cpu",  "cpu/sample", "wall%"};
    for (size_t c = 0; c < PB_ARRAY_LEN(header); c++)
        pb_table_add(&t, "%s", header[c]);
    for (size_t i = 0; i < p->stage_count; i++) {
        const struct pb_stage_result *st = &p->stages[i];
        const struct pb_hist *h = &st->hist;
        if (st->gpu || (h->count == 0 && st->cpu_ns == 0)) /* a row of nothing (worker_start */
            continue; /* under persistent workers: no worker started in the window) */
        char mean[32], p50[32], p90[32], p95[32], p99[32], max[32], cpu[32], per[32];
        pb_fmt_duration(mean, sizeof(mean), h->count ? h->mean_ns : 0);
        pb_fmt_duration(p50, sizeof(p50), (double)pb_hist_quantile(h, 0.50));
        pb_fmt_duration(p90, sizeof(p90), (double)pb_hist_quantile(h, 0.90));
        pb_fmt_duration(p95, sizeof(p95), (double)pb_hist_quantile(h, 0.95));
        pb_fmt_duration(p99, sizeof(p99), (double)pb_hist_quantile(h, 0.99));
        pb_fmt_duration(max, sizeof(max), (double)(h->count ? h->max_ns : 0));
        if (st->parent[0]) {
            snprintf(cpu, sizeof(cpu), "-"); /* counted in the parent's */
            snprintf(per, sizeof(per), "-");
        } else {
            pb_fmt_duration(cpu, sizeof(cpu), (double)st->cpu_ns);
            pb_fmt_duration(per, sizeof(per),
                            pb_point_stage_cpu_ns_per_sample(p, st));
        }
        if (st->parent[0])
            pb_table_add(&t, "  %s", st->name + strlen(st->parent)); /* "  .seek" under decode */
        else
            pb_table_add(&t, "%s", st->name);
        const char *const cells[] = {mean, p50, p90, p95, p99, max, cpu, per};
        add_count_and_cells(&t, h->count, cells, PB_ARRAY_LEN(cells));
        pb_table_add(&t, "%.1f", st->share_pct);
    }
    if (!s->markdown)
        fputc('\n', s->out);
    emit_table(s, &t);
    pb_table_free(&t);
    fprintf(s->out,
            "%scpu/sample = the stage's thread CPU over the samples through the pipeline (collate's "
            "per batch spread over its samples), the median of the repeats: in each repeat they add "
            "up to its CPU per sample; wall%% = its share of the stages' wall time\n",
            s->markdown ? "\n" : "  ");
    if (p->stages[0].hist.count > p->samples + p->errors)
        fprintf(s->out,
                "%sstage counts (%llu) exceed the samples the loop took (%llu): they include the "
                "batches workers had built ahead when measuring stopped\n",
                s->markdown ? "\n" : "  ", (unsigned long long)p->stages[0].hist.count,
                (unsigned long long)(p->samples + p->errors));
    for (size_t i = 0; i < p->stage_count; i++) {
        const struct pb_stage_result *st = &p->stages[i];
        if (st->counter_count == 0 || st->gpu)
            continue;
        char name[PB_MARKDOWN_SIZE(PB_PRINTABLE_SIZE(sizeof(st->name)))];
        fprintf(s->out, s->markdown ? "\n%s counters:" : "  %s counters:",
                shown(s, name, sizeof(name), st->name));
        for (int c = 0; c < st->counter_count; c++)
            fprintf(s->out, "%s %s %llu", c ? "," : "",
                    pb_printable(name, sizeof(name), st->counter_names[c]),
                    (unsigned long long)st->counters[c]);
        fputc('\n', s->out);
    }
    /* The files behind the dominant stage's tail, against its median. */
    const struct pb_stage_result *top = NULL;
    for (size_t i = 0; i < p->stage_count; i++) {
        const struct pb_stage_result *st = &p->stages[i];
        if (!st->gpu && !st->parent[0] && st->slowest_count > 0 && st->slowest_files[0][0] &&
            (!top || st->cpu_ns > top->cpu_ns))
            top = st;
    }
    if (!top)
        return;
    char name[PB_MARKDOWN_SIZE(PB_PRINTABLE_SIZE(sizeof(top->name)))], took[32];
    pb_fmt_duration(took, sizeof(took), (double)pb_hist_quantile(&top->hist, 0.50));
    fprintf(s->out, "%sslowest %s samples by wall time (p50 %s):", s->markdown ? "\n" : "  ",
            shown(s, name, sizeof(name), top->name), took);
    for (int k = 0; k < top->slowest_count && k < 3 && top->slowest_files[k][0]; k++) {
        char file[PB_MARKDOWN_SIZE(PB_PRINTABLE_SIZE(sizeof(top->slowest_files[k])))];
        pb_fmt_duration(took, sizeof(took), (double)top->slowest_ns[k]);
        fprintf(s->out, "%s %s %s", k ? "," : "",
                shown(s, file, sizeof(file), top->slowest_files[k]), took);
    }
    fputc('\n', s->out);
}

/* The device rows: CUDA event time per batch of the copy, each GPU stage
 * and the step, and the copy's bandwidth. */
static void emit_gpu_stages(const struct sink *s, const struct pb_point_result *p)
{
    if (!p->gpu.used)
        return;
    struct pb_table t;
    pb_table_init(&t, 8, 0xfeu, false);
    static const char *const header[] = {"on the GPU", "batches", "mean", "p50",
                                         "p99",        "max",     "GB/s", "share%"};
    for (size_t c = 0; c < PB_ARRAY_LEN(header); c++)
        pb_table_add(&t, "%s", header[c]);
    for (size_t i = 0; i < p->stage_count; i++) {
        const struct pb_stage_result *st = &p->stages[i];
        if (!st->gpu)
            continue;
        const struct pb_hist *h = &st->hist;
        char mean[32], p50[32], p99[32], max[32];
        pb_fmt_duration(mean, sizeof(mean), h->count ? h->mean_ns : 0);
        pb_fmt_duration(p50, sizeof(p50), (double)pb_hist_quantile(h, 0.50));
        pb_fmt_duration(p99, sizeof(p99), (double)pb_hist_quantile(h, 0.99));
        pb_fmt_duration(max, sizeof(max), (double)(h->count ? h->max_ns : 0));
        pb_table_add(&t, "%s", st->name);
        const char *const cells[] = {mean, p50, p99, max};
        add_count_and_cells(&t, h->count, cells, PB_ARRAY_LEN(cells));
        if (st->counter_count > 0 && h->sum_ns > 0)
            pb_table_add(&t, "%.2f", (double)st->counters[0] / (double)h->sum_ns);
        else
            pb_table_add(&t, "-");
        pb_table_add(&t, "%.1f", st->share_pct);
    }
    if (!s->markdown)
        fputc('\n', s->out);
    emit_table(s, &t);
    pb_table_free(&t);
    fprintf(s->out, "%stimes are CUDA events around each copy, stage and step on the device; "
                    "share%% is of the device time\n",
            s->markdown ? "\n" : "  ");
}

static void emit_point(const struct sink *s, const struct pb_result *result,
                       const struct pb_point_result *p)
{
    emit_point_summary(s, result, p);
    pb_report_storage(s->out, s->markdown, result, p);
    emit_stages(s, p);
    emit_gpu_stages(s, p);
    pb_report_ranks(s->out, s->markdown, p);
    if (p->warning_count && !s->markdown)
        fputc('\n', s->out);
    for (int w = 0; w < p->warning_count; w++)
        emit_warning(s, p->warnings[w]);
    if (p->warning_count && s->markdown)
        fputc('\n', s->out);
}

/* The instrumentation overhead: throughput lost to stage timing, between
 * 0 and 100 %. A figure whose interval reaches outside that range, or
 * whose size is under its noise, is noise and is said to be. */
static void emit_overhead(const struct sink *s, const struct pb_result *result)
{
    double pct = result->overhead_pct, noise = result->overhead_noise_pct;
    const char *bullet = s->markdown ? "- " : "";
    if (pct - noise < 0 || pct + noise > 100)
        fprintf(s->out,
                "%sinstrumentation overhead: below the noise (± %.1f %%; measured %.1f %%, "
                "an interval that holds figures timing cannot cause)\n",
                bullet, noise, pct);
    else
        fprintf(s->out, "%sinstrumentation overhead: %.1f %% of throughput (± %.1f %%)\n",
                bullet, pct, noise);
}

static void report_human(FILE *out, const struct pb_result *result,
                         const struct pb_analysis *an, bool markdown)
{
    struct sink s = {out, markdown, an};
    emit_header(&s, result);
    if (result->point_count > 1 && an) {
        emit_comparison(&s, result, an);
        emit_analysis(&s, an);
        if (an->recommended >= 0) {
            const struct pb_point_result *p = &result->points[an->recommended];
            char axes[CELL_MAX], md[PB_MARKDOWN_SIZE(CELL_MAX)];
            pb_report_axes(axes, sizeof(axes), p->axes, ", ");
            bool held = an->withheld[0];
            if (markdown)
                fprintf(out, "\n## %s: %s\n\n", held ? "Withheld point" : "Recommended point",
                        pb_markdown_text(md, sizeof(md), axes, false));
            else
                fprintf(out, "\n%s: %s\n", held ? "the rule's point (withheld)" : "recommended point",
                        axes);
            emit_point_summary(&s, result, p);
            pb_report_storage(s.out, s.markdown, result, p);
            emit_stages(&s, p);
            emit_gpu_stages(&s, p);
        }
        /* Warnings once per cause, however many points share it. */
        bool any = false;
        for (size_t i = 0; i < result->point_count; i++) {
            const struct pb_point_result *p = &result->points[i];
            for (int w = 0; w < p->warning_count; w++) {
                size_t alike = 0;
                if (pb_warning_seen(result, i, w, &alike))
                    continue;
                if (!any)
                    fputc('\n', out);
                any = true;
                char axes[CELL_MAX], text[CELL_MAX + 360], more[64] = "";
                pb_report_axes(axes, sizeof(axes), p->axes, ", ");
                if (alike)
                    snprintf(more, sizeof more, "; alike at %zu more, with their figures", alike);
                snprintf(text, sizeof(text), "%s (first at %s%s)", p->warnings[w], axes, more);
                emit_warning(&s, text);
            }
            if (p->error[0]) {
                char axes[CELL_MAX], text[CELL_MAX + 300];
                pb_report_axes(axes, sizeof(axes), p->axes, ", ");
                snprintf(text, sizeof(text), "point %s failed: %s", axes, p->error);
                emit_warning(&s, text);
            }
        }
    } else {
        for (size_t i = 0; i < result->point_count; i++) {
            const struct pb_point_result *p = &result->points[i];
            char axes[CELL_MAX], md[PB_MARKDOWN_SIZE(CELL_MAX)];
            pb_report_axes(axes, sizeof(axes), p->axes, ", ");
            if (!axes[0])
                fputs(markdown ? "## Results\n\n" : "\n", out);
            else if (markdown)
                fprintf(out, "## Point %zu: %s\n\n", i,
                        pb_markdown_text(md, sizeof(md), axes, false));
            else
                fprintf(out, "\npoint %zu: %s\n", i, axes);
            emit_point(&s, result, p);
        }
    }
    if (result->warning_count || result->interrupted || result->overhead_measured)
        fputs(markdown ? "\n## Notes\n\n" : "\n", out);
    for (int w = 0; w < result->warning_count; w++)
        emit_item(&s, markdown ? "- " : "", "warning: ", result->warnings[w]);
    if (result->interrupted)
        fprintf(out, "%sinterrupted: partial results\n", markdown ? "- " : "");
    if (result->overhead_measured)
        emit_overhead(&s, result);
    emit_verdict(&s, an);
}

void pb_report_table(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis)
{
    report_human(out, result, analysis, false);
}

void pb_report_markdown(FILE *out, const struct pb_result *result,
                        const struct pb_analysis *analysis)
{
    report_human(out, result, analysis, true);
}

void pb_report_json(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis)
{
    (void)analysis; /* the result as it is: the analysis can be made from it */
    json_t *root = pb_result_to_json(result);
    if (root) {
        json_dumpf(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        fputc('\n', out);
        json_decref(root);
    }
}
