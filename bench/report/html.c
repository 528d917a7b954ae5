/* The HTML report: the page around the charts of bench/report/svg.c. Every
 * figure comes from the result structs or the analysis; the terminal
 * report itself (bench/report/report.c) is embedded at the end, so nothing it
 * says is lost. */
#include "bench/report/html.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/result/figures.h"
#include "bench/report/compare_text.h"
#include "bench/report/report.h"
#include "bench/report/svg.h"

#define LABEL_MAX 256
#define TIMELINE_WINDOWS 40
#define TIMELINE_MIN_BATCHES 4  /* a window averages at least this many batches */
#define DETAIL_POINTS_MAX 4   /* sweeps up to this size show every point's CDFs */

static const char *const page_css =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1360px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;"
    "border-bottom:1px solid #ccc;padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}"
    ".meta{color:#555;font-size:13px;line-height:1.5}"
    ".verdict{background:#f4f7fb;border-left:5px solid #0072B2;padding:10px 14px;margin:12px 0;"
    "font-size:14px;line-height:1.5}.verdict b{color:#0072B2}"
    "table{border-collapse:collapse;font-size:13px;margin:6px 0}"
    "th,td{border:1px solid #ddd;padding:4px 8px;text-align:right}"
    "th{background:#f2f2f2}td{white-space:nowrap}td.l,th.l{text-align:left;white-space:normal}tr.rec td{background:#fff4d6;font-weight:bold}"
    ".warn{color:#8a4b00;font-size:13px}.charts{display:flex;flex-wrap:wrap;gap:12px}"
    ".charts svg{border:1px solid #e0e0e0}pre{font-size:12px;background:#fafafa;padding:10px;"
    "overflow-x:auto}.improved{color:#009E73;font-weight:bold}.regressed{color:#D55E00;"
    "font-weight:bold}.ambiguous{color:#B07800;font-weight:bold}.disturbed{color:#777;"
    "font-weight:bold}.note{font-size:12px;color:#555}"
    ".series{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}"
    ".side{max-width:520px;font-size:13px}.side pre{white-space:pre-wrap;word-break:break-all;"
    "max-height:320px;overflow-y:auto;margin:4px 0}";

void pb_html_page_open(FILE *out, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", out);
    pb_svg_escape(out, title);
    fprintf(out, "</title>\n<style>%s</style></head><body>\n", page_css);
}

/* <TAG>text</TAG>, escaped. */
static void element(FILE *out, const char *tag, const char *text)
{
    fprintf(out, "<%s>", tag);
    pb_svg_escape(out, text);
    fprintf(out, "</%s>\n", tag);
}

static void cell(FILE *out, bool left, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cell(FILE *out, bool left, const char *fmt, ...)
{
    char text[LABEL_MAX * 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    fputs(left ? "<td class=\"l\">" : "<td>", out);
    pb_svg_escape(out, text);
    fputs("</td>", out);
}

/* A point's axes as "workers=2 batch_size=32" (last path component),
 * leaving out the axis named skip (may be NULL); "run" without axes. */
static void point_label(char *buf, size_t size, const json_t *axes, const char *skip)
{
    const char *key;
    const json_t *value;
    size_t used = 0;
    buf[0] = '\0';
    if (json_is_object(axes)) {
        json_object_foreach ((json_t *)axes, key, value) {
            if (skip && strcmp(key, skip) == 0)
                continue;
            const char *dot = strrchr(key, '.');
            char text[64];
            pb_fmt_json_value(text, sizeof(text), value);
            int n = snprintf(buf + used, size - used, "%s%s=%s", used ? " " : "",
                             dot ? dot + 1 : key, text);
            if (n < 0 || (size_t)n >= size - used)
                break;
            used += (size_t)n;
        }
    }
    if (!buf[0])
        snprintf(buf, size, "%s", skip ? "all points" : "run");
}

static bool point_usable(const struct pb_analysis *an, size_t i)
{
    return !an || (i < an->point_count && an->points[i].usable);
}

/* ------------------------------------------------------------- summary */

static void header(FILE *out, const struct pb_result *r)
{
    const struct pb_machine *m = &r->machine;
    char line[1024];
    snprintf(line, sizeof(line), "pbench: %s", r->name[0] ? r->name : "(unnamed)");
    element(out, "h1", line);
    fputs("<div class=\"meta\">", out);
    snprintf(line, sizeof(line),
             "pbench %s · created %s on %s · %s · %d cores / %d PUs · %s · GPU: %s",
             r->pbench_version, r->created, m->hostname, m->cpu_model[0] ? m->cpu_model : "?",
             m->cores, m->pus, m->os, m->gpu_count > 0 ? m->gpu_name : "none");
    pb_svg_escape(out, line);
    char engine[800];
    if (pb_result_engines_text(r, engine, sizeof engine)) {
        fputs("<br>engine: ", out);
        pb_svg_escape(out, engine);
    }
    const json_t *job = pb_result_config_value(r, "wrap.command");
    if (r->point_count && pb_point_wrapped(r, 0) && json_is_string(job)) {
        fputs("<br>job: ", out); /* pbench wrap: the training job measured */
        pb_svg_escape(out, json_string_value(job));
    } else if (r->config_path[0]) {
        fputs("<br>config: ", out);
        pb_svg_escape(out, r->config_path);
    }
    if (r->trace_path[0]) {
        fputs("<br>CPU trace: ", out);
        pb_svg_escape(out, r->trace_path);
        fputs(" (open it in ui.perfetto.dev or chrome://tracing)", out);
    }
    fputs("</div>\n", out);
}

static void verdict_box(FILE *out, const struct pb_result *r, const struct pb_analysis *an)
{
    fputs("<div class=\"verdict\">", out);
    if (!an) {
        fputs("No analysis: the result could not be analyzed.</div>\n", out);
        return;
    }
    fputs("<b>verdict</b> ", out);
    pb_svg_escape(out, an->verdict[0] ? an->verdict : "none (no usable point)");
    if (r->point_count > 1 && an->recommended >= 0) {
        char label[LABEL_MAX];
        point_label(label, sizeof(label), r->points[an->recommended].axes, NULL);
        fputs(an->withheld[0] ? "<br><b>recommendation withheld</b> (" : "<br><b>recommended</b> ",
              out);
        pb_svg_escape(out, label);
        fputs(an->withheld[0] ? " by the rule) — " : " — ", out);
        pb_svg_escape(out, an->withheld[0] ? an->withheld : an->reason);
        fputs("<br><span class=\"note\">rule: ", out);
        pb_svg_escape(out, an->rule);
        fputs("</span>", out);
    }
    if (an->scaling[0]) {
        fputs("<br><b>scaling</b> ", out);
        pb_svg_escape(out, an->scaling);
    }
    if (an->capacity[0]) {
        fputs("<br><b>capacity</b> ", out);
        pb_svg_escape(out, an->capacity);
    }
    if (an->engines[0]) {
        fputs("<br><b>engines</b> ", out);
        pb_svg_escape(out, an->engines);
    }
    for (int i = 0; i < an->suggestion_count; i++) {
        fputs("<br><b>try</b> ", out);
        pb_svg_escape(out, an->suggestions[i]);
    }
    fputs("</div>\n", out);
}

static void points_table(FILE *out, const struct pb_result *r, const struct pb_analysis *an)
{
    static const char *const bound[] = {"no", "moderate", "high"};
    fputs("<table><tr><th class=\"l\">point</th><th>samples/s</th><th>noise ±%</th>"
          "<th>stall %</th><th>accel. util. %</th><th>worker CPU %</th><th>CPU per sample</th>"
          "<th>wait p99</th>"
          "<th>batch assembly p50</th><th>peak RSS MiB</th><th>RSS growth MiB / 1000 batches</th>"
          "<th>errors</th>"
          "<th class=\"l\">input-bound</th><th class=\"l\">bottleneck</th></tr>\n",
          out);
    for (size_t i = 0; i < r->point_count; i++) {
        const struct pb_point_result *p = &r->points[i];
        bool rec = pb_analysis_marked(an) == (int)i && r->point_count > 1;
        char label[LABEL_MAX], a[32], b[32];
        point_label(label, sizeof(label), p->axes, NULL);
        fputs(rec ? "<tr class=\"rec\">" : "<tr>", out);
        cell(out, true, "%s%s", label, rec ? " (recommended)" : "");
        if (p->error[0]) {
            fputs("<td colspan=\"13\" class=\"l\">failed: ", out);
            pb_svg_escape(out, p->error);
            fputs("</td></tr>\n", out);
            continue;
        }
        int windows;
        cell(out, false, "%.1f", p->samples_per_s);
        if (pb_point_noise_known(r, i, &windows))
            cell(out, false, "%.1f", p->samples_per_s_noise_pct);
        else
            cell(out, false, "unknown");
        cell(out, false, "%.1f", p->stall_pct);
        cell(out, false, "%.1f", p->accel_util_pct);
        cell(out, false, "%.0f", p->worker_cpu_pct);
        pb_fmt_duration(a, sizeof(a), pb_point_cpu_ns_per_sample(p));
        cell(out, false, "%s", a);
        pb_fmt_duration(a, sizeof(a), (double)p->wait_p99_ns);
        pb_fmt_duration(b, sizeof(b), (double)p->assembly_p50_ns);
        cell(out, false, "%s", a);
        cell(out, false, "%s", b);
        cell(out, false, "%.1f", (double)p->rss_peak_bytes / 1048576.0);
        /* A slope over repeats too short to judge is no figure: projected
         * to 1000 batches, a few MiB of settling reads as a leak. */
        if (p->memory_growth.known && !p->memory_growth.judged)
            cell(out, false, "- (repeats too short to judge)");
        else if (p->memory_growth.known)
            cell(out, false, "%.2f%s", p->memory_growth.mib_per_1000_batches,
                 p->memory_growth.significant ? "" : " (noise)");
        else
            cell(out, false, "-");
        cell(out, false, "%llu", (unsigned long long)p->errors);
        const struct pb_point_analysis *pa =
            an && i < an->point_count && an->points[i].usable ? &an->points[i] : NULL;
        cell(out, true, "%s", pa ? bound[pa->input_bound] : "-");
        cell(out, true, "%s", pa ? pa->bottleneck : "-");
        fputs("</tr>\n", out);
    }
    fputs("</table>\n<p class=\"note\">samples/s is the median of the repeats; stall, "
          "accelerator utilization and worker CPU are totals over the repeats (total wait, step "
          "or CPU time over total wall time), so that the loop's wait, step, stages and other "
          "add up to 100%; CPU per sample is the stages' thread CPU over the samples that went "
          "through them, the median of the repeats.</p>\n",
          out);
}

static void warnings(FILE *out, const struct pb_result *r)
{
    bool any = false;
    for (size_t i = 0; i <= r->point_count; i++) {
        int count = i < r->point_count ? r->points[i].warning_count : r->warning_count;
        for (int w = 0; w < count; w++) {
            const char *text = i < r->point_count ? r->points[i].warnings[w] : r->warnings[w];
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++)
                for (int v = 0; v < r->points[j].warning_count && !seen; v++)
                    seen = strcmp(r->points[j].warnings[v], text) == 0;
            if (seen)
                continue;
            if (!any)
                fputs("<h2>Warnings</h2>\n<ul class=\"warn\">\n", out);
            any = true;
            element(out, "li", text);
        }
    }
    if (r->overhead_measured) {
        char text[200];
        snprintf(text, sizeof(text), "instrumentation overhead: %.1f %% of throughput (± %.1f %%)",
                 r->overhead_pct, r->overhead_noise_pct);
        if (!any)
            fputs("<ul class=\"warn\">\n", out);
        any = true;
        element(out, "li", text);
    }
    if (any)
        fputs("</ul>\n", out);
}

/* ---------------------------------------------------------- sweep charts */

struct line_set {
    size_t count;
    struct pb_svg_series *series;
    char (*labels)[LABEL_MAX];
    double *x, *y, *err;        /* count x point_count each               */
    int *index;                 /* which point each value is              */
};

static void line_set_free(struct line_set *s)
{
    free(s->series);
    free(s->labels);
    free(s->x);
    free(s->y);
    free(s->err);
    free(s->index);
}

/* Distinct values of axis over the points, in first-seen order, numbers
 * sorted ascending; returns the count (at most max). */
static size_t axis_values(const struct pb_result *r, const char *axis, const json_t **values,
                          size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < r->point_count; i++) {
        const json_t *v = json_object_get(r->points[i].axes, axis);
        bool seen = !v;
        for (size_t k = 0; k < n && !seen; k++)
            seen = json_equal((json_t *)values[k], (json_t *)v);
        if (!seen && n < max)
            values[n++] = v;
    }
    for (size_t a = 1; a < n; a++) /* insertion sort of numbers */
        for (size_t b = a; b > 0 && json_is_number(values[b]) && json_is_number(values[b - 1]) &&
                           json_number_value(values[b]) < json_number_value(values[b - 1]);
             b--) {
            const json_t *t = values[b];
            values[b] = values[b - 1];
            values[b - 1] = t;
        }
    return n;
}

/* The lines of metric against axis: one per combination of the other axes. */
static int sweep_lines(const struct pb_result *r, const struct pb_analysis *an, const char *axis,
                       const json_t *const *values, size_t value_count, bool utilization,
                       struct line_set *s)
{
    size_t n = r->point_count;
    memset(s, 0, sizeof(*s));
    s->series = calloc(n, sizeof(*s->series));
    s->labels = calloc(n, sizeof(*s->labels));
    s->x = calloc(n * n, sizeof(double));
    s->y = calloc(n * n, sizeof(double));
    s->err = calloc(n * n, sizeof(double));
    s->index = calloc(n * n, sizeof(int));
    if (!s->series || !s->labels || !s->x || !s->y || !s->err || !s->index)
        return PB_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct pb_point_result *p = &r->points[i];
        if (!point_usable(an, i) || p->error[0])
            continue;
        char label[LABEL_MAX];
        point_label(label, sizeof(label), p->axes, axis);
        size_t g = 0;
        while (g < s->count && strcmp(s->labels[g], label) != 0)
            g++;
        if (g == s->count)
            snprintf(s->labels[s->count++], LABEL_MAX, "%s", label);
        const json_t *v = json_object_get(p->axes, axis);
        size_t pos = 0;
        while (pos < value_count && !json_equal((json_t *)values[pos], (json_t *)v))
            pos++;
        struct pb_svg_series *se = &s->series[g];
        size_t k = se->count++, base = g * n;
        /* Insert keeping x ascending. */
        while (k > 0 && s->x[base + k - 1] > (double)pos) {
            s->x[base + k] = s->x[base + k - 1];
            s->y[base + k] = s->y[base + k - 1];
            s->err[base + k] = s->err[base + k - 1];
            s->index[base + k] = s->index[base + k - 1];
            k--;
        }
        int windows;
        s->x[base + k] = (double)pos;
        s->y[base + k] = utilization ? p->accel_util_pct : p->samples_per_s;
        s->err[base + k] = !utilization && pb_point_noise_known(r, i, &windows)
                               ? p->samples_per_s * p->samples_per_s_noise_pct / 100
                               : 0;
        s->index[base + k] = (int)i;
    }
    for (size_t g = 0; g < s->count; g++) {
        struct pb_svg_series *se = &s->series[g];
        se->label = s->labels[g];
        se->x = s->x + g * n;
        se->y = s->y + g * n;
        se->y_err = s->err + g * n;
        se->dots = true;
        se->marked = -1;
        se->mark_label = "recommended";
        for (size_t k = 0; k < se->count; k++)
            if (an && s->index[g * n + k] == pb_analysis_marked(an))
                se->marked = (int)k;
    }
    return PB_OK;
}

static void sweep_charts(FILE *out, const struct pb_result *r, const struct pb_analysis *an)
{
    if (r->point_count < 2 || !json_is_object(r->points[0].axes) ||
        json_object_size(r->points[0].axes) == 0)
        return;
    bool stepped = false;
    for (size_t i = 0; i < r->point_count; i++)
        stepped = stepped || pb_point_step_ms(r, i) > 0;
    fputs("<h2>Sweep</h2>\n<p class=\"note\">Median samples/s over repeats; bars: ± the "
          "repeats' noise (coefficient of variation). One line per combination of the other "
          "axes; the ring marks the recommended point.</p>\n<div class=\"charts\">\n",
          out);
    const char *axis;
    const json_t *unused;
    json_object_foreach ((json_t *)r->points[0].axes, axis, unused) {
        const json_t *values[64];
        const char *names[64];
        char texts[64][48];
        size_t count = axis_values(r, axis, values, PB_ARRAY_LEN(values));
        for (size_t k = 0; k < count; k++) {
            pb_fmt_json_value(texts[k], sizeof(texts[k]), values[k]);
            names[k] = texts[k];
        }
        for (int util = 0; util <= (stepped ? 1 : 0); util++) {
            struct line_set s;
            if (sweep_lines(r, an, axis, values, count, util, &s) == PB_OK) {
                char title[200];
                snprintf(title, sizeof(title), "%s vs %s",
                         util ? "accelerator utilization" : "throughput", axis);
                struct pb_svg_rule target = {
                    an ? an->thresholds.accel_util_target_pct : 90, "utilization target", false};
                char y_label[80];
                pb_fmt_axis_label(y_label, sizeof(y_label),
                                  util ? "accelerator utilization" : "samples/s",
                                  util ? "%" : NULL);
                struct pb_svg_chart c = {
                    .title = title, .x_label = axis,
                    .y_label = y_label,
                    .y_from_zero = true, .x_names = names, .x_name_count = count,
                    .series_count = s.count, .series = s.series,
                    .hrule_count = util ? 1 : 0, .hrules = &target, .width = 660};
                pb_svg_line_chart(out, &c);
            }
            line_set_free(&s);
        }
    }
    fputs("</div>\n", out);
}

/* ------------------------------------------------------ stage breakdown */

static bool cpu_stage(const struct pb_stage_result *st)
{
    return !st->gpu && !st->parent[0];
}

static void stage_breakdown(FILE *out, const struct pb_result *r, const struct pb_analysis *an)
{
    size_t n = r->point_count, layers = 0;
    const char **layer_names = calloc(64, sizeof(char *));
    const char **bar_names = calloc(n ? n : 1, sizeof(char *));
    char (*labels)[LABEL_MAX] = calloc(n ? n : 1, sizeof(*labels));
    double *values = calloc((n ? n : 1) * 64, sizeof(double));
    bool any_cpu = false;
    for (size_t i = 0; i < n && layer_names; i++)
        for (size_t s = 0; s < r->points[i].stage_count; s++) {
            const struct pb_stage_result *st = &r->points[i].stages[s];
            if (!cpu_stage(st))
                continue;
            any_cpu = any_cpu || st->cpu_ns > 0;
            size_t l = 0;
            while (l < layers && strcmp(layer_names[l], st->name) != 0)
                l++;
            if (l == layers && layers < 64)
                layer_names[layers++] = st->name;
        }
    if (!layer_names || !bar_names || !labels || !values || layers == 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        const struct pb_point_result *p = &r->points[i];
        point_label(labels[i], LABEL_MAX, p->axes, NULL);
        bar_names[i] = labels[i];
        for (size_t s = 0; s < p->stage_count && p->samples; s++) {
            const struct pb_stage_result *st = &p->stages[s];
            double cpu = pb_point_stage_cpu_ns_per_sample(p, st);
            for (size_t l = 0; l < layers && cpu_stage(st); l++)
                if (strcmp(layer_names[l], st->name) == 0)
                    values[i * layers + l] =
                        any_cpu ? (isnan(cpu) ? 0 : cpu / 1000)
                                : st->hist.mean_ns * (double)st->hist.count /
                                      (double)p->samples / 1000;
        }
    }
    fputs("<h2>Where the workers' time goes</h2>\n<p class=\"note\">", out);
    fputs(any_cpu ? "Thread CPU time per sample, by pipeline stage: each stage's CPU time over "
                    "the samples that went through the pipeline (batches still in flight when "
                    "measuring stopped included; per-batch stages such as collate are spread "
                    "over the batch's samples), the figure the tables, compare and history show."
                  : "Wall time per delivered sample, by pipeline stage (the result carries no "
                    "CPU times).",
          out);
    if (n > 1 && pb_analysis_marked(an) >= 0)
        fputs(" The recommended point's name is in red.", out);
    fputs("</p>\n", out);
    char x_label[80];
    pb_fmt_axis_label(x_label, sizeof(x_label),
                      any_cpu ? "CPU time per sample" : "wall time per sample", "µs");
    struct pb_svg_bars b = {
        .title = "stage breakdown per point",
        .x_label = x_label,
        .width = 1000, .bar_count = n, .layer_count = layers, .bar_names = bar_names,
        .layer_names = layer_names, .values = values,
        .highlighted = n > 1 ? pb_analysis_marked(an) : -1};
    pb_svg_stacked_bars(out, &b);
done:
    free(layer_names);
    free(bar_names);
    free(labels);
    free(values);
}

/* ---------------------------------------------------------- latency CDF */

/* The CDF of h as (bucket top, fraction at or below) for non-empty
 * buckets, into x and y (PB_HIST_BUCKETS each); returns the count. */
static size_t hist_cdf(const struct pb_hist *h, double *x, double *y)
{
    size_t n = 0;
    uint64_t seen = 0;
    for (size_t b = 0; b < PB_HIST_BUCKETS && h->count; b++) {
        if (!h->bins[b])
            continue;
        uint64_t lo, hi;
        pb_hist_bucket_range(b, &lo, &hi);
        seen += h->bins[b];
        x[n] = (double)(hi > h->max_ns ? h->max_ns : hi);
        if (x[n] <= 0)
            x[n] = 1;
        y[n++] = (double)seen / (double)h->count;
    }
    return n;
}

static void latency_cdf(FILE *out, const struct pb_result *r, size_t point)
{
    const struct pb_point_result *p = &r->points[point];
    size_t rows = p->stage_count + 1;
    struct pb_svg_series *series = calloc(rows, sizeof(*series));
    char (*labels)[LABEL_MAX] = calloc(rows, sizeof(*labels));
    double *xs = calloc(rows * PB_HIST_BUCKETS, sizeof(double));
    double *ys = calloc(rows * PB_HIST_BUCKETS, sizeof(double));
    struct pb_hist *wait = malloc(sizeof(*wait));
    size_t count = 0;
    if (!series || !labels || !xs || !ys || !wait)
        goto done;
    pb_hist_init(wait);
    for (size_t k = 0; k < pb_point_finished_repeats(p); k++)
        for (size_t b = 0; b < p->repeats[k].batch_count; b++)
            pb_hist_add(wait, p->repeats[k].batch_records[b].wait_ns);
    for (size_t s = 0; s <= p->stage_count; s++) {
        const struct pb_hist *h = s < p->stage_count ? &p->stages[s].hist : wait;
        const char *name = s < p->stage_count ? p->stages[s].name : "wait (consumer, per batch)";
        if (!h->count)
            continue;
        char p50[32], p99[32];
        pb_fmt_duration(p50, sizeof(p50), (double)pb_hist_quantile(h, 0.5));
        pb_fmt_duration(p99, sizeof(p99), (double)pb_hist_quantile(h, 0.99));
        snprintf(labels[count], LABEL_MAX, "%s%s: p50 %s, p99 %s",
                 s < p->stage_count && p->stages[s].gpu ? "gpu:" : "", name, p50, p99);
        struct pb_svg_series *se = &series[count];
        se->label = labels[count];
        se->x = xs + count * PB_HIST_BUCKETS;
        se->y = ys + count * PB_HIST_BUCKETS;
        se->count = hist_cdf(h, xs + count * PB_HIST_BUCKETS, ys + count * PB_HIST_BUCKETS);
        se->marked = -1;
        count++;
    }
    char title[LABEL_MAX + 64], label[LABEL_MAX];
    point_label(label, sizeof(label), p->axes, NULL);
    snprintf(title, sizeof(title), "latency CDF per stage: %s", label);
    struct pb_svg_rule quantiles[] = {{0.5, "p50", false}, {0.99, "p99", false}};
    struct pb_svg_chart c = {.title = title, .x_label = "time per sample (per batch for collate "
                                                        "and the wait), log scale",
                             .y_label = "fraction at or below", .x_log = true, .x_ns = true,
                             .y_from_zero = true, .series_count = count, .series = series,
                             .hrule_count = 2, .hrules = quantiles, .width = 1000, .y_max = 1,
                             .height = 380};
    pb_svg_line_chart(out, &c);
done:
    free(series);
    free(labels);
    free(xs);
    free(ys);
    free(wait);
}

/* -------------------------------------------------------------- timeline */

enum { TL_THROUGHPUT, TL_QUEUE, TL_RSS, TL_CPU, TL_CHARTS };

/* Fills the four series of one repeat into x/y (cap values each). */
static void repeat_timeline(const struct pb_repeat_result *rep, double *const x[TL_CHARTS],
                            double *const y[TL_CHARTS], size_t count[TL_CHARTS], size_t cap)
{
    size_t per = rep->batch_count / TIMELINE_WINDOWS + 1;
    if (per < TIMELINE_MIN_BATCHES)
        per = TIMELINE_MIN_BATCHES;
    double t_ns = 0, win_ns = 0, depth = 0;
    uint64_t samples = 0;
    size_t in_window = 0;
    for (size_t b = 0; b < rep->batch_count; b++) {
        const struct pb_batch_record *br = &rep->batch_records[b];
        double dt = (double)(br->wait_ns + br->step_ns);
        t_ns += dt;
        win_ns += dt;
        samples += br->samples;
        depth += br->queue_depth;
        if (++in_window < per && b + 1 < rep->batch_count)
            continue;
        size_t k = count[TL_THROUGHPUT];
        if (k < cap && win_ns > 0) {
            x[TL_THROUGHPUT][k] = x[TL_QUEUE][k] = t_ns / 1e9;
            y[TL_THROUGHPUT][k] = (double)samples / (win_ns / 1e9);
            y[TL_QUEUE][k] = depth / (double)in_window;
            count[TL_THROUGHPUT] = count[TL_QUEUE] = k + 1;
        }
        win_ns = depth = 0;
        samples = 0;
        in_window = 0;
    }
    size_t stride = rep->rss_count / cap + 1;
    for (size_t i = 0; i < rep->rss_count; i += stride) {
        size_t k = count[TL_RSS];
        x[TL_RSS][k] = x[TL_CPU][k] = rep->rss[i].t_s;
        y[TL_RSS][k] = (double)rep->rss[i].rss_bytes / 1048576.0;
        y[TL_CPU][k] = rep->rss[i].cpu_pct;
        count[TL_RSS] = count[TL_CPU] = k + 1;
    }
}

static void timelines(FILE *out, const struct pb_result *r, size_t point)
{
    static const char *const titles[TL_CHARTS] = {"throughput", "queue depth at dequeue",
                                                  "resident memory (RSS)", "process CPU"};
    static const char *const y_labels[TL_CHARTS] = {"samples/s (window mean)", "ready batches",
                                                    "RSS (MiB)", "CPU (%, 100 = one core)"};
    static const char *const x_labels[TL_CHARTS] = {
        "training-loop time in the measured part (s)", "training-loop time in the measured part (s)",
        "time since the repeat started (s)", "time since the repeat started (s)"};
    const struct pb_point_result *p = &r->points[point];
    size_t reps = p->repeat_count, cap = TIMELINE_WINDOWS + 400;
    if (!reps)
        return;
    struct pb_svg_series *series = calloc(TL_CHARTS * reps, sizeof(*series));
    double *data = calloc(TL_CHARTS * reps * cap * 2, sizeof(double));
    char (*labels)[48] = calloc(reps, sizeof(*labels));
    if (!series || !data || !labels)
        goto done;
    for (size_t k = 0; k < reps; k++) {
        double *x[TL_CHARTS], *y[TL_CHARTS];
        size_t count[TL_CHARTS] = {0};
        for (int c = 0; c < TL_CHARTS; c++) {
            x[c] = data + ((size_t)c * reps + k) * cap * 2;
            y[c] = x[c] + cap;
        }
        repeat_timeline(&p->repeats[k], x, y, count, cap);
        snprintf(labels[k], sizeof(labels[k]), "repeat %zu%s", k + 1,
                 p->repeats[k].interrupted ? " (cut short)" : "");
        for (int c = 0; c < TL_CHARTS; c++)
            series[(size_t)c * reps + k] = (struct pb_svg_series){
                .label = labels[k], .count = count[c], .x = x[c], .y = y[c], .marked = -1};
    }
    fputs("<div class=\"charts\">\n", out);
    for (int c = 0; c < TL_CHARTS; c++) {
        struct pb_svg_chart chart = {.title = titles[c], .x_label = x_labels[c],
                                     .y_label = y_labels[c], .y_from_zero = true,
                                     .series_count = reps, .series = series + (size_t)c * reps,
                                     .width = 660, .height = 300};
        pb_svg_line_chart(out, &chart);
    }
    fputs("</div>\n", out);
done:
    free(series);
    free(data);
    free(labels);
}

/* ------------------------------------------------------------------ page */

/* The point whose details are shown first: the recommended one, else 0. */
static size_t main_point(const struct pb_analysis *an)
{
    return an && an->recommended >= 0 ? (size_t)an->recommended : 0;
}

/* The stage rows of a point as numbers: latency, CPU and, at
 * profile.level comprehensive, the perf counters per sample. */
static void stage_table(FILE *out, const struct pb_point_result *p)
{
    unsigned perf_mask = 0;
    for (size_t s = 0; s < p->stage_count; s++)
        perf_mask |= p->stages[s].perf_mask;
    if (!p->stage_count)
        return;
    fputs("<table><tr><th class=\"l\">stage</th><th>count</th><th>mean</th><th>p50</th>"
          "<th>p99</th><th>max</th><th>CPU per sample</th><th>wall time %</th>",
          out);
    for (int c = 0; c < PB_PERF_COUNTERS; c++)
        if (perf_mask & (1u << c))
            fprintf(out, "<th>%s per sample</th>", pb_perf_names[c]);
    fputs("</tr>\n", out);
    for (size_t s = 0; s < p->stage_count; s++) {
        const struct pb_stage_result *st = &p->stages[s];
        const struct pb_hist *h = &st->hist;
        char a[32], b[32], c[32], d[32], e[32];
        pb_fmt_duration(a, sizeof(a), h->count ? h->mean_ns : 0);
        pb_fmt_duration(b, sizeof(b), (double)pb_hist_quantile(h, 0.5));
        pb_fmt_duration(c, sizeof(c), (double)pb_hist_quantile(h, 0.99));
        pb_fmt_duration(d, sizeof(d), (double)(h->count ? h->max_ns : 0));
        pb_fmt_duration(e, sizeof(e), pb_point_stage_cpu_ns_per_sample(p, st));
        fputs("<tr>", out);
        cell(out, true, "%s%s", st->gpu ? "gpu:" : "", st->name);
        cell(out, false, "%llu", (unsigned long long)h->count);
        cell(out, false, "%s", a);
        cell(out, false, "%s", b);
        cell(out, false, "%s", c);
        cell(out, false, "%s", d);
        cell(out, false, "%s", st->gpu ? "-" : e);
        cell(out, false, "%.1f", st->share_pct);
        for (int k = 0; k < PB_PERF_COUNTERS; k++)
            if (perf_mask & (1u << k)) {
                if (st->perf_mask & (1u << k) && h->count)
                    cell(out, false, "%.3g", (double)st->perf[k] / (double)h->count);
                else
                    cell(out, false, "-");
            }
        fputs("</tr>\n", out);
    }
    fputs("</table>\n<ul class=\"note\">", out);
    for (size_t s = 0; s < p->stage_count; s++) {
        const struct pb_stage_result *st = &p->stages[s];
        if (st->slowest_count <= 0)
            continue;
        fputs("<li>slowest in ", out);
        pb_svg_escape(out, st->name);
        fputs(":", out);
        for (int k = 0; k < st->slowest_count; k++) {
            char t[32];
            pb_fmt_duration(t, sizeof(t), (double)st->slowest_ns[k]);
            fprintf(out, "%s ", k ? "," : "");
            pb_svg_escape(out, st->slowest_files[k][0] ? st->slowest_files[k] : "sample");
            if (!st->slowest_files[k][0])
                fprintf(out, " %llu", (unsigned long long)st->slowest_sample[k]);
            fprintf(out, " (%s)", t);
        }
        fputs("</li>\n", out);
    }
    fputs("</ul>\n", out);
}

static void point_details(FILE *out, const struct pb_result *r, size_t i, bool open)
{
    char label[LABEL_MAX];
    point_label(label, sizeof(label), r->points[i].axes, NULL);
    fputs(open ? "<details open><summary>" : "<details><summary>", out);
    pb_svg_escape(out, label);
    fputs("</summary>\n", out);
    stage_table(out, &r->points[i]);
    latency_cdf(out, r, i);
    timelines(out, r, i);
    fputs("</details>\n", out);
}

static void terminal_report(FILE *out, const struct pb_result *r, const struct pb_analysis *an)
{
    char *text = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&text, &size);
    if (!mem)
        return;
    pb_report_table(mem, r, an);
    fclose(mem);
    fputs("<h2>Terminal report</h2>\n<details><summary>the same result as pbench report prints "
          "it</summary>\n<pre>",
          out);
    pb_svg_escape(out, text);
    fputs("</pre></details>\n", out);
    free(text);
}

void pb_html_report(FILE *out, const struct pb_result *r, const struct pb_analysis *an)
{
    char title[200];
    snprintf(title, sizeof(title), "pbench: %s", r->name[0] ? r->name : "(unnamed)");
    pb_html_page_open(out, title);
    header(out, r);
    verdict_box(out, r, an);
    fputs("<h2>Points</h2>\n", out);
    points_table(out, r, an);
    warnings(out, r);
    sweep_charts(out, r, an);
    stage_breakdown(out, r, an);
    if (r->point_count > 0) {
        size_t first = main_point(an);
        fputs("<h2>Latency and timelines</h2>\n<p class=\"note\">Per-stage latency from the "
              "merged histograms (dashed lines: p50 and p99); per repeat, throughput and queue "
              "depth over the measured batches and the 20 Hz RSS and CPU samples.</p>\n",
              out);
        point_details(out, r, first, true);
        for (size_t i = 0; i < r->point_count; i++)
            if (i != first && r->point_count <= DETAIL_POINTS_MAX * 8)
                point_details(out, r, i, r->point_count <= DETAIL_POINTS_MAX);
    }
    terminal_report(out, r, an);
    fputs("<p class=\"note\">Written by pbench; a self-contained page (no scripts, nothing "
          "fetched).</p>\n</body></html>\n",
          out);
}

/* ------------------------------------------------------------- compare */

static void metric_value(char *buf, size_t size, double v, const char *unit)
{
    if (strcmp(unit, "ns") == 0)
        pb_fmt_duration(buf, size, v);
    else if (strcmp(unit, "bytes") == 0)
        snprintf(buf, size, "%.1f MiB", v / 1048576.0);
    else
        snprintf(buf, size, "%.4g %s", v, unit);
}

void pb_html_comparison(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                        const char *next_name)
{
    pb_html_page_open(out, "pbench compare");
    element(out, "h1", "pbench compare");
    char line[1200];
    snprintf(line, sizeof(line),
             "base %s → new %s. A change counts when it is significant (Mann-Whitney p < %.2f, "
             "95%% bootstrap interval excluding 0) and at least %.1f%% (the shaded band).",
             base_name, next_name, PB_COMPARE_ALPHA, cmp->threshold_pct);
    fputs("<div class=\"meta\">", out);
    pb_svg_escape(out, line);
    fputs("</div>\n<div class=\"verdict\">", out);
    snprintf(line, sizeof(line),
             "%d regression%s, %d improvement%s, %d ambiguous, %d disturbed over %zu point%s",
             cmp->regressions, cmp->regressions == 1 ? "" : "s", cmp->improvements,
             cmp->improvements == 1 ? "" : "s", cmp->ambiguous, cmp->disturbed, cmp->point_count,
             cmp->point_count == 1 ? "" : "s");
    pb_svg_escape(out, line);
    fputs("</div>\n<ul class=\"warn\">\n", out);
    for (int i = 0; i < cmp->difference_count; i++)
        element(out, "li", cmp->differences[i]);
    for (int i = 0; i < cmp->setting_change_count; i++)
        element(out, "li", cmp->setting_changes[i]);
    for (size_t i = 0; i < cmp->point_count; i++) {
        char why[1000], item[1400];
        pb_interference_text(&cmp->points[i], why, sizeof why);
        if (!why[0])
            continue;
        snprintf(item, sizeof(item), "interference at %.256s: %s", cmp->points[i].label, why);
        element(out, "li", item);
    }
    fputs("</ul>\n", out);
    for (size_t i = 0; i < cmp->point_count; i++) {
        const struct pb_point_cmp *pc = &cmp->points[i];
        element(out, "h2", pc->label);
        fputs("<table><tr><th class=\"l\">metric</th><th>base</th><th>new</th><th>change</th>"
              "<th>95% interval</th><th>p</th><th>repeats</th><th class=\"l\">verdict</th></tr>\n",
              out);
        struct pb_svg_interval rows[PB_COMPARE_METRICS];
        for (int m = 0; m < pc->metric_count; m++) {
            const struct pb_metric_cmp *mc = &pc->metrics[m];
            const char *unit = pb_fmt_change_unit(mc->absolute);
            char a[48], b[48];
            metric_value(a, sizeof(a), mc->base, mc->unit);
            metric_value(b, sizeof(b), mc->next, mc->unit);
            bool measured = pb_metric_cmp_measured(mc), interval = !isnan(mc->ci_low_pct);
            fputs("<tr>", out);
            cell(out, true, "%s", mc->name);
            cell(out, false, "%s", measured ? a : "-");
            cell(out, false, "%s", measured ? b : "-");
            if (interval) {
                cell(out, false, "%+.1f %s", mc->change_pct, unit);
                cell(out, false, "[%+.1f, %+.1f] %s", mc->ci_low_pct, mc->ci_high_pct, unit);
                cell(out, false, "%.3g", mc->p_value);
            } else {
                cell(out, false, "-");
                cell(out, false, "%s", mc->added     ? "new stage"
                                       : mc->removed ? "removed stage"
                                                     : "(too few repeats)");
                cell(out, false, "-");
            }
            cell(out, false, "%d vs %d", mc->base_n, mc->next_n);
            fprintf(out, "<td class=\"l %s\">%s%s</td></tr>\n", pb_verdict_name(mc->verdict),
                    pb_metric_cmp_verdict(mc),
                    mc->cost_of_setting ? " (cost of the setting change)" : "");
            /* Better is to the right on every row: lower-is-better metrics
             * are drawn with their sign flipped. */
            double sign = mc->higher_is_better ? 1 : -1;
            rows[m] = (struct pb_svg_interval){
                .name = mc->name, .value = interval ? sign * mc->change_pct : NAN,
                .low = sign > 0 ? mc->ci_low_pct : -mc->ci_high_pct,
                .high = sign > 0 ? mc->ci_high_pct : -mc->ci_low_pct,
                .label = pb_metric_cmp_verdict(mc),
                .verdict = mc->verdict == PB_VERDICT_IMPROVED    ? 1
                           : mc->verdict == PB_VERDICT_REGRESSED ? 2
                           : mc->verdict == PB_VERDICT_AMBIGUOUS ||
                                   mc->verdict == PB_VERDICT_DISTURBED
                               ? 3
                               : 0};
        }
        fputs("</table>\n", out);
        char title[LABEL_MAX + 32];
        snprintf(title, sizeof(title), "change with 95%% interval: %s", pc->label);
        struct pb_svg_forest f = {.title = title,
                                  .x_label = "change (% of base; pp for stall), better → right",
                                  .band = cmp->threshold_pct, .row_count = (size_t)pc->metric_count,
                                  .rows = rows};
        pb_svg_forest_chart(out, &f);
    }
    fputs("</body></html>\n", out);
}
