/* history show as CSV, TSV, JSON and HTML (see history_report.h). */
#include "bench/report/history_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/report/html.h"
#include "bench/report/report_csv.h"
#include "bench/report/svg.h"

/* A number cell, empty when not finite, and its separator. */
static void cell_number(FILE *out, char sep, double v, bool last)
{
    if (isfinite(v))
        fprintf(out, "%.10g", v);
    fputc(last ? '\n' : sep, out);
}

static void delimited(FILE *out, char sep, const struct pb_history *h)
{
    static const char *const columns[] = {
        "config",    "machine", "fingerprint", "point", "series",        "run",
        "created",   "revision", "metric",     "value", "noise_pct",     "median_before",
        "vs_median_pct", "step", "step_pct",   "regression", "other_cpu_pct"};
    for (size_t c = 0; c < PB_ARRAY_LEN(columns); c++)
        fprintf(out, "%s%c", columns[c], c + 1 < PB_ARRAY_LEN(columns) ? sep : '\n');
    for (size_t i = 0; i < h->series_count; i++) {
        const struct pb_history_series *s = &h->series[i];
        for (size_t r = 0; r < s->run_count; r++) {
            const struct pb_history_run *run = &s->runs[r];
            bool step = s->step >= 0 && (size_t)s->step == r;
            double before = pb_history_median_before(s, r);
            pb_csv_text(out, sep, s->config, false);
            pb_csv_text(out, sep, s->machine, false);
            pb_csv_text(out, sep, s->fingerprint, false);
            pb_csv_text(out, sep, s->point, false);
            fprintf(out, "%zu%c%zu%c", i, sep, r, sep);
            pb_csv_text(out, sep, run->created, false);
            pb_csv_text(out, sep, run->revision, false);
            pb_csv_text(out, sep, h->metric, false);
            cell_number(out, sep, run->value, false);
            cell_number(out, sep, run->noise_pct, false);
            cell_number(out, sep, before, false);
            cell_number(out, sep, before != 0 ? 100 * (run->value / before - 1) : NAN, false);
            fprintf(out, "%d%c", step ? 1 : 0, sep);
            cell_number(out, sep, step ? s->step_pct : NAN, false);
            fprintf(out, "%d%c", step && pb_history_step_counts(s) ? 1 : 0, sep);
            cell_number(out, sep, run->other_cpu, true);
        }
    }
}

void pb_history_csv(FILE *out, const struct pb_history *h)
{
    delimited(out, ',', h);
}

void pb_history_tsv(FILE *out, const struct pb_history *h)
{
    delimited(out, '\t', h);
}

/* ---- JSON ------------------------------------------------------------------ */

/* A number, or null when not finite (JSON has no NaN). */
static json_t *json_number(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* text parsed as JSON, or as a string when it is not JSON; null for NULL. */
static json_t *json_parsed(const char *text)
{
    if (!text)
        return json_null();
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    return v ? v : json_string(text);
}

static json_t *series_json(const struct pb_history_series *s)
{
    json_t *runs = json_array();
    for (size_t r = 0; r < s->run_count; r++)
        json_array_append_new(runs, json_pack("{s s s s s o s o s o}", "created",
                                              s->runs[r].created, "revision", s->runs[r].revision,
                                              "value", json_number(s->runs[r].value), "noise_pct",
                                              json_number(s->runs[r].noise_pct), "other_cpu_pct",
                                              json_number(s->runs[r].other_cpu)));
    json_t *step = json_null();
    if (s->step >= 0)
        step = json_pack("{s I s s s s s o s b s b}", "run", (json_int_t)s->step, "created",
                         s->runs[s->step].created, "revision", s->runs[s->step].revision,
                         "change_pct", json_number(s->step_pct), "regression",
                         pb_history_step_counts(s), "withheld_other_processes", s->disturbed);
    json_t *o = json_pack("{s s s s s o s o s o s I s o s o}", "config", s->config, "machine",
                          s->machine, "point", json_parsed(s->point), "fingerprint",
                          s->fingerprint[0] ? json_string(s->fingerprint) : json_null(),
                          "measured", json_parsed(s->measured), "runs_in_database",
                          (json_int_t)s->total, "step", step, "runs", runs);
    json_object_set_new(o, "engine", s->engine[0] ? json_string(s->engine) : json_null());
    json_object_set_new(o, "newest_run_suspect", json_boolean(s->suspect));
    json_object_set_new(o, "newest_run_change", json_number(s->newest.change));
    json_object_set_new(o, "first_run_with_value", json_integer((json_int_t)s->first_with_value));
    json_t *stages = json_array();
    for (int k = 0; k < s->explained_count; k++) {
        const struct pb_history_stage_change *c = &s->explained[k];
        json_array_append_new(stages, json_pack("{s s s o s o s b s b s o}", "stage", c->stage,
                                                "before_ns", json_number(c->before_ns),
                                                "after_ns", json_number(c->after_ns),
                                                "absent_before", c->absent_before,
                                                "absent_after", c->absent_after, "share_pct",
                                                json_number(c->share_pct)));
    }
    json_object_set_new(o, "explained_by", stages);
    json_t *changes = json_array();
    for (int k = 0; k < s->break_count; k++)
        json_array_append_new(changes, json_string(s->breaks[k]));
    json_object_set_new(o, "break",
                        s->break_count ? json_pack("{s s s s s o}", "from_fingerprint",
                                                   s->break_from, "from_revision",
                                                   s->break_revision, "changes", changes)
                                       : (json_decref(changes), json_null()));
    json_object_set_new(o, "explained_from_run", json_integer((json_int_t)s->explained_from));
    return o;
}

void pb_history_json(FILE *out, const struct pb_history *h)
{
    json_t *series = json_array();
    for (size_t i = 0; i < h->series_count; i++)
        json_array_append_new(series, series_json(&h->series[i]));
    json_t *root = json_pack("{s s s s s b s f s i s i s o}", "metric", h->metric, "unit", h->unit,
                             "higher_is_better", h->higher_is_better, "threshold_pct",
                             h->threshold_pct, "regressions", h->regressions, "improvements",
                             h->improvements, "series", series);
    if (root) {
        json_dumpf(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
        fputc('\n', out);
        json_decref(root);
    }
}

/* ---- HTML ------------------------------------------------------------------ */

/* The name of run r on the chart's x axis: its revision (7 characters),
 * else the day and time it was measured. */
static void run_name(char *buf, size_t size, const struct pb_history_run *run)
{
    if (run->revision[0])
        snprintf(buf, size, "%.7s", run->revision);
    else if (strlen(run->created) >= 16)
        snprintf(buf, size, "%.5s %.5s", run->created + 5, run->created + 11);
    else
        snprintf(buf, size, "%s", run->created);
}

/* A point's axes as "workers=2 batch_size=32" from their JSON; "run"
 * without axes. */
static void point_name(char *buf, size_t size, const char *point)
{
    json_t *axes = json_loads(point, 0, NULL);
    const char *key;
    json_t *value;
    size_t used = 0;
    buf[0] = '\0';
    if (json_is_object(axes))
        json_object_foreach (axes, key, value) {
            char *text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
            const char *v = json_is_string(value) ? json_string_value(value) : text;
            int n = snprintf(buf + used, size - used, "%s%s=%s", used ? " " : "", key,
                             v ? v : "?");
            free(text);
            if (n < 0 || (size_t)n >= size - used)
                break;
            used += (size_t)n;
        }
    json_decref(axes);
    if (!buf[0])
        snprintf(buf, size, "the run (no sweep axes)");
}

/* The series' trend chart. */
static void series_chart(FILE *out, const struct pb_history *h, const struct pb_history_series *s,
                         const char *title)
{
    size_t n = s->run_count;
    double *x = calloc(n ? n : 1, sizeof(double)), *y = calloc(n ? n : 1, sizeof(double));
    double *err = calloc(n ? n : 1, sizeof(double));
    char(*names)[24] = calloc(n ? n : 1, sizeof(*names));
    const char **name_ptrs = calloc(n ? n : 1, sizeof(char *));
    if (!x || !y || !err || !names || !name_ptrs)
        goto done;
    /* The run's noise is its samples/s CV: a band for that metric only. */
    bool band = strcmp(h->metric, "samples_per_s") == 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = (double)i;
        y[i] = s->runs[i].value;
        err[i] = band && isfinite(s->runs[i].noise_pct) ? y[i] * s->runs[i].noise_pct / 100 : NAN;
        run_name(names[i], sizeof(names[i]), &s->runs[i]);
        name_ptrs[i] = names[i];
    }
    char step_label[160], before_label[96], after_label[96];
    struct pb_svg_rule vrule = {0}, hrules[2] = {{0}};
    size_t hrule_count = 0;
    if (s->step >= 0) {
        const struct pb_history_run *at = &s->runs[s->step];
        snprintf(step_label, sizeof(step_label), "step %+.1f%s from %s%s", s->step_pct,
                 pb_fmt_change_unit(h->absolute), at->revision[0] ? at->revision : at->created,
                 s->disturbed      ? " (withheld: other processes)"
                 : s->machine_step ? " (the machine's)"
                 : s->step_worse ? " (regression)"
                                 : " (improvement)");
        vrule = (struct pb_svg_rule){(double)s->step - 0.5, step_label, false};
        double before = pb_history_median_before(s, (size_t)s->step);
        snprintf(before_label, sizeof(before_label), "median before: %.4g", before);
        snprintf(after_label, sizeof(after_label), "median from the step: %.4g",
                 h->absolute ? before + s->step_pct : before * (1 + s->step_pct / 100));
        /* Each label over the part of its line the other level's runs
         * leave clear: before's at the right, after's at the left. */
        hrules[0] = (struct pb_svg_rule){before, before_label, false};
        hrules[1] = (struct pb_svg_rule){before * (1 + s->step_pct / 100), after_label, true};
        hrule_count = 2;
    }
    char y_label[96];
    pb_fmt_axis_label(y_label, sizeof(y_label), h->metric, h->unit[0] ? h->unit : "value");
    /* No legend: the plot keeps the width; the caption says what the band
     * is. The step's first run is ringed; its size is on the step's rule. */
    struct pb_svg_series line = {.count = n, .x = x, .y = y, .y_err = err,
                                 .marked = (int)s->step, .dots = true, .band = band};
    struct pb_svg_chart chart = {.title = title, .x_label = "revision (runs in time order)",
                                 .y_label = y_label, .width = 760, .height = 360,
                                 .y_from_zero = false, .x_names = name_ptrs,
                                 .x_name_count = n, .series_count = 1, .series = &line,
                                 .hrule_count = hrule_count, .hrules = hrules,
                                 .vrule_count = s->step >= 0, .vrules = &vrule};
    pb_svg_line_chart(out, &chart);
    fprintf(out, "<p class=\"note\" style=\"max-width:760px\">%s</p>\n",
            band ? "Each dot is a run's median over its repeats; the band around the line is "
                   "± the run's noise (the repeats' coefficient of variation)."
                 : "Each dot is a run's value (the noise kept is of samples/s, so no band).");
done:
    free(x);
    free(y);
    free(err);
    free(names);
    free(name_ptrs);
}

/* <tr><th>name</th><td>text</td></tr>, escaped. */
static void side_row(FILE *out, const char *name, const char *text)
{
    fputs("<tr><th class=\"l\">", out);
    pb_svg_escape(out, name);
    fputs("</th><td class=\"l\">", out);
    pb_svg_escape(out, text);
    fputs("</td></tr>\n", out);
}

/* What the series is, beside its chart. */
static void series_side(FILE *out, const struct pb_history *h, const struct pb_history_series *s,
                        const char *point)
{
    char text[512];
    fputs("<div class=\"side\"><table>\n", out);
    side_row(out, "config", s->config);
    side_row(out, "machine", s->machine);
    side_row(out, "point", point);
    side_row(out, "fingerprint",
             s->fingerprint[0] ? s->fingerprint : "none (added before fingerprints were kept)");
    if (s->total > (long long)s->run_count)
        snprintf(text, sizeof(text), "the newest %zu of %lld", s->run_count, s->total);
    else
        snprintf(text, sizeof(text), "%zu, from %s to %s", s->run_count,
                 s->run_count ? s->runs[0].created : "-",
                 s->run_count ? s->runs[s->run_count - 1].created : "-");
    side_row(out, "runs", text);
    if (s->step >= 0)
        snprintf(text, sizeof(text), "%+.1f%s from %s (revision %s), held for %zu runs: %s",
                 s->step_pct, pb_fmt_change_unit(h->absolute), s->runs[s->step].created,
                 s->runs[s->step].revision[0] ? s->runs[s->step].revision : "?",
                 s->run_count - (size_t)s->step,
                 s->disturbed ? "withheld: other processes shared the machine"
                 : s->machine_step ? "worse, with the machine's own speed"
                 : s->step_worse   ? "a regression"
                                 : "an improvement");
    else
        snprintf(text, sizeof(text), "none beyond %.1f%%", h->threshold_pct);
    side_row(out, "step change", text);
    fputs("</table>\n", out);
    if (s->measured) {
        json_t *measured = json_loads(s->measured, 0, NULL);
        char *pretty = measured ? json_dumps(measured, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
        fputs("<details><summary>measured settings (what the fingerprint covers)</summary><pre>",
              out);
        pb_svg_escape(out, pretty ? pretty : s->measured);
        fputs("</pre></details>\n", out);
        free(pretty);
        json_decref(measured);
    }
    fputs("</div>\n", out);
}

/* The table of every series at the top: its newest value and its step. */
static void overview(FILE *out, const struct pb_history *h)
{
    fputs("<table><tr><th class=\"l\">config</th><th class=\"l\">point</th><th>runs</th>"
          "<th>newest</th><th class=\"l\">step change</th></tr>\n",
          out);
    for (size_t i = 0; i < h->series_count; i++) {
        const struct pb_history_series *s = &h->series[i];
        char point[256], text[256];
        point_name(point, sizeof(point), s->point);
        fputs("<tr><td class=\"l\">", out);
        fprintf(out, "<a href=\"#series-%zu\">", i);
        pb_svg_escape(out, s->config);
        fputs("</a></td><td class=\"l\">", out);
        pb_svg_escape(out, point);
        double newest = s->run_count ? s->runs[s->run_count - 1].value : NAN;
        fprintf(out, "</td><td>%zu</td>", s->run_count);
        if (isfinite(newest))
            fprintf(out, "<td>%.4g%s</td>", newest, s->suspect ? " (suspect)" : "");
        else
            fputs("<td>absent</td>", out);
        if (s->step >= 0)
            snprintf(text, sizeof(text), "%+.1f%s from %s%s", s->step_pct,
                     pb_fmt_change_unit(h->absolute),
                     s->runs[s->step].revision[0] ? s->runs[s->step].revision : "?",
                     s->disturbed      ? " (withheld: other processes)"
                     : s->machine_step ? " (the machine's)"
                                       : "");
        /* Coloured as a regression only when it counts as one. */
        fprintf(out, "<td class=\"l%s\">", s->step < 0               ? ""
                                           : pb_history_step_counts(s) ? " regressed"
                                           : s->step_worse             ? ""
                                                                       : " improved");
        pb_svg_escape(out, s->step >= 0 ? text : "none");
        fputs("</td></tr>\n", out);
    }
    fputs("</table>\n", out);
}

void pb_history_html(FILE *out, const struct pb_history *h)
{
    char title[160];
    snprintf(title, sizeof(title), "pbench history: %s", h->metric);
    pb_html_page_open(out, title);
    fputs("<h1>", out);
    pb_svg_escape(out, title);
    fputs("</h1>\n<div class=\"meta\">", out);
    fprintf(out,
            "%zu series · a step change is a shift of the median beyond %.1f%% held for at "
            "least %d runs · %d regression step(s), %d improvement step(s)",
            h->series_count, h->threshold_pct, PB_STEP_MIN_RUNS, h->regressions,
            h->improvements);
    if (h->disturbed)
        fprintf(out, " · %d step(s) withheld: other processes shared the machine",
                h->disturbed);
    fputs("</div>\n", out);
    overview(out, h);
    for (size_t i = 0; i < h->series_count; i++) {
        const struct pb_history_series *s = &h->series[i];
        char point[256], heading[600];
        point_name(point, sizeof(point), s->point);
        snprintf(heading, sizeof(heading), "%s · %s", s->config, point);
        fprintf(out, "<h2 id=\"series-%zu\">", i);
        pb_svg_escape(out, heading);
        fputs("</h2>\n<div class=\"series\">\n", out);
        char chart_title[400];
        snprintf(chart_title, sizeof(chart_title), "%s over %zu runs", h->metric, s->run_count);
        fputs("<div>\n", out);
        series_chart(out, h, s, chart_title);
        fputs("</div>\n", out);
        series_side(out, h, s, point);
        fputs("</div>\n", out);
    }
    fputs("<p class=\"note\">Written by pbench history show; a self-contained page (no scripts, "
          "nothing fetched).</p>\n</body></html>\n",
          out);
}
