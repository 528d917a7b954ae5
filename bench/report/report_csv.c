/* CSV and TSV renderings of a result (see report_csv.h). */
#include "bench/report/report_csv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/base/table.h"
#include "bench/result/figures.h"
#include "bench/report/report.h"

#define CELL_MAX PB_TABLE_CELL_MAX
#define NAMES_MAX 64 /* axis and stage columns a table holds at most */

/* A delimited table. CSV follows RFC 4180: a field with a comma, quote or
 * line break is quoted, and its quotes are doubled. With a tab for
 * separator nothing is quoted: a field is printable (a tab or line break in
 * a name reads \x09, \x0a), so a tab always ends a cell, as spreadsheets
 * and `cut -f` expect. */
struct delimited {
    FILE *out;
    char sep;
    /* The sweep axes, each a column, in the order the points first name
     * them; and (per repeat) the CPU stages. */
    size_t axis_count, stage_count;
    const char *axes[NAMES_MAX];
    const char *stages[NAMES_MAX];
};

static void cell_text(const struct delimited *d, const char *raw, bool last)
{
    pb_csv_text(d->out, d->sep, raw, last);
}

void pb_csv_text(FILE *out, char sep, const char *raw, bool last)
{
    const struct delimited *d = &(struct delimited){.out = out, .sep = sep};
    char guarded[PB_PRINTABLE_SIZE(CELL_MAX) + 1] = "'";
    pb_printable(guarded + 1, sizeof(guarded) - 1, raw); /* no control characters */
    /* A text cell a spreadsheet would run as a formula (=, +, - or @ first:
     * a stage named =HYPERLINK(...)) gets a leading ', as OWASP advises.
     * Numbers are cell_double's and cell_u64's, never guarded. */
    const char *text = guarded[1] && strchr("=+-@", guarded[1]) ? guarded : guarded + 1;
    if (d->sep != '\t' && strpbrk(text, ",\"\r\n")) {
        fputc('"', d->out);
        for (const char *p = text; *p; p++) {
            if (*p == '"')
                fputc('"', d->out);
            fputc(*p, d->out);
        }
        fputc('"', d->out);
    } else {
        fputs(text, d->out);
    }
    fputc(last ? '\n' : d->sep, d->out);
}

static void cell_double(const struct delimited *d, double v)
{
    if (isfinite(v))
        fprintf(d->out, "%.10g", v);
    fputc(d->sep, d->out);
}

static void cell_u64(const struct delimited *d, uint64_t v)
{
    fprintf(d->out, "%llu%c", (unsigned long long)v, d->sep);
}

/* ns as µs; NaN stays NaN (an empty cell). */
static double us(double ns)
{
    return ns / 1000;
}

/* Adds name to names (count of max) unless it is there. */
static void add_name(const char **names, size_t *count, const char *name)
{
    for (size_t i = 0; i < *count; i++)
        if (strcmp(names[i], name) == 0)
            return;
    if (*count < NAMES_MAX)
        names[(*count)++] = name;
}

/* The axis columns: every key of every point's axes, first seen first. */
static void collect_axes(struct delimited *d, const struct pb_result *result)
{
    for (size_t i = 0; i < result->point_count; i++) {
        const char *key;
        const json_t *value;
        if (json_is_object(result->points[i].axes))
            json_object_foreach (result->points[i].axes, key, value)
                add_name(d->axes, &d->axis_count, key);
    }
}

/* The stage columns of --rows repeats: every CPU stage of every repeat. */
static void collect_stages(struct delimited *d, const struct pb_result *result)
{
    for (size_t i = 0; i < result->point_count; i++)
        for (size_t r = 0; r < result->points[i].repeat_count; r++) {
            const struct pb_repeat_result *rep = &result->points[i].repeats[r];
            for (size_t s = 0; s < rep->stage_count; s++)
                if (!rep->stages[s].gpu)
                    add_name(d->stages, &d->stage_count, rep->stages[s].name);
        }
}

/* An axis value as its cell: numbers as numbers (never guarded), text
 * guarded and quoted, a list or mapping as compact JSON; empty when the
 * point lacks the axis. */
static void cell_axis(const struct delimited *d, const json_t *value)
{
    if (json_is_integer(value)) {
        fprintf(d->out, "%lld%c", (long long)json_integer_value(value), d->sep);
    } else if (json_is_real(value)) {
        cell_double(d, json_real_value(value));
    } else if (json_is_boolean(value)) {
        fprintf(d->out, "%s%c", json_is_true(value) ? "true" : "false", d->sep);
    } else if (json_is_string(value)) {
        cell_text(d, json_string_value(value), false);
    } else if (value && !json_is_null(value)) {
        char *text = json_dumps(value, JSON_COMPACT);
        cell_text(d, text ? text : "", false);
        free(text);
    } else {
        fputc(d->sep, d->out);
    }
}

/* The header's leading cells: run, created, point (and repeat), the axes,
 * then "axes". */
static void head_cells(const struct delimited *d, bool repeats)
{
    fprintf(d->out, "run%ccreated%cpoint%c", d->sep, d->sep, d->sep);
    if (repeats)
        fprintf(d->out, "repeat%c", d->sep);
    for (size_t a = 0; a < d->axis_count; a++)
        cell_text(d, d->axes[a], false);
    fprintf(d->out, "axes%c", d->sep);
}

/* A row's leading cells, as head_cells names them; repeat < 0 for none. */
static void lead_cells(const struct delimited *d, const struct pb_result *result, size_t i,
                       long repeat)
{
    const struct pb_point_result *p = &result->points[i];
    cell_text(d, result->name, false);
    cell_text(d, result->created, false);
    fprintf(d->out, "%zu%c", i, d->sep);
    if (repeat >= 0)
        fprintf(d->out, "%ld%c", repeat, d->sep);
    for (size_t a = 0; a < d->axis_count; a++)
        cell_axis(d, json_is_object(p->axes) ? json_object_get(p->axes, d->axes[a]) : NULL);
    char axes[CELL_MAX];
    pb_report_axes(axes, sizeof(axes), p->axes, ";");
    cell_text(d, axes, false);
}

/* Writes the names joined by the separator, ending the header line. */
static void head_names(const struct delimited *d, const char *const *names, size_t count)
{
    for (size_t c = 0; c < count; c++)
        fprintf(d->out, "%s%c", names[c], c + 1 < count ? d->sep : '\n');
}

/* ---- one row per point and stage ------------------------------------------ */

static const char *const point_columns[] = {
    "samples_per_s", "samples_per_s_noise_pct", "batches_per_s", "mb_per_s", "stall_pct",
    "accel_util_pct", "cpu_util_pct", "worker_cpu_pct", "other_cpu_pct", "first_batch_s",
    "cpu_us_per_sample", "wait_p50_ns", "wait_p99_ns", "assembly_p50_ns", "assembly_p99_ns",
    "rss_peak_bytes", "pinned_bytes", "samples", "errors", "input_bound", "recommended", "stage",
    "count", "mean_ns", "p50_ns", "p90_ns", "p95_ns", "p99_ns", "max_ns", "cpu_ns", "share_pct",
    "stage_cpu_us_per_sample"};
enum { STAGE_COLUMNS = 11 }; /* from "stage" on */

/* The point's summary cells of a row, up to the stage's. */
static void point_cells(const struct delimited *d, const struct pb_result *result, size_t i,
                        const char *input_bound, bool recommended)
{
    const struct pb_point_result *p = &result->points[i];
    cell_double(d, p->samples_per_s);
    int windows;
    cell_double(d, pb_point_noise_known(result, i, &windows) ? p->samples_per_s_noise_pct : NAN);
    cell_double(d, p->batches_per_s);
    cell_double(d, p->mb_per_s);
    cell_double(d, p->stall_pct);
    cell_double(d, p->accel_util_pct);
    cell_double(d, p->cpu_util_pct);
    cell_double(d, p->worker_cpu_pct);
    cell_double(d, p->other_cpu_pct);
    cell_double(d, p->first_batch_s);
    cell_double(d, us(pb_point_cpu_ns_per_sample(p)));
    cell_u64(d, p->wait_p50_ns);
    cell_u64(d, p->wait_p99_ns);
    cell_u64(d, p->assembly_p50_ns);
    cell_u64(d, p->assembly_p99_ns);
    cell_u64(d, p->rss_peak_bytes);
    cell_u64(d, p->pinned_bytes);
    cell_u64(d, p->samples);
    cell_u64(d, p->errors);
    fprintf(d->out, "%s%c%d%c", input_bound, d->sep, recommended ? 1 : 0, d->sep);
}

/* A stage's cells, ending the row. */
static void stage_cells(const struct delimited *d, const struct pb_point_result *p,
                        const struct pb_stage_result *st)
{
    const struct pb_hist *h = &st->hist;
    char row_name[80];
    snprintf(row_name, sizeof(row_name), "%s%s", st->gpu ? "gpu:" : "", st->name);
    cell_text(d, row_name, false);
    cell_u64(d, h->count);
    cell_double(d, h->count ? h->mean_ns : 0);
    cell_u64(d, pb_hist_quantile(h, 0.50));
    cell_u64(d, pb_hist_quantile(h, 0.90));
    cell_u64(d, pb_hist_quantile(h, 0.95));
    cell_u64(d, pb_hist_quantile(h, 0.99));
    cell_u64(d, h->count ? h->max_ns : 0);
    cell_u64(d, st->cpu_ns);
    cell_double(d, st->share_pct);
    double cpu_us = us(pb_point_stage_cpu_ns_per_sample(p, st));
    if (isfinite(cpu_us))
        fprintf(d->out, "%.10g", cpu_us);
    fputc('\n', d->out);
}

static void point_rows(struct delimited *d, const struct pb_result *result,
                       const struct pb_analysis *an)
{
    collect_axes(d, result);
    head_cells(d, false);
    head_names(d, point_columns, PB_ARRAY_LEN(point_columns));
    static const char *const bound[] = {"no", "moderate", "high"};
    for (size_t i = 0; i < result->point_count; i++) {
        const struct pb_point_result *p = &result->points[i];
        bool analyzed = an && i < an->point_count;
        const char *input_bound =
            analyzed && an->points[i].usable ? bound[an->points[i].input_bound] : "";
        bool recommended = analyzed && pb_analysis_marked(an) == (int)i;
        /* A point without stages still gets one row, with empty stage cells. */
        size_t rows = p->stage_count ? p->stage_count : 1;
        for (size_t r = 0; r < rows; r++) {
            lead_cells(d, result, i, -1);
            point_cells(d, result, i, input_bound, recommended);
            if (p->stage_count) {
                stage_cells(d, p, &p->stages[r]);
                continue;
            }
            for (int c = 1; c < STAGE_COLUMNS; c++)
                fputc(d->sep, d->out);
            fputc('\n', d->out);
        }
    }
}

/* ---- one row per repeat ------------------------------------------------- */

static const char *const repeat_columns[] = {
    "wall_s", "samples_per_s", "batches_per_s", "mb_per_s", "stall_pct", "accel_util_pct",
    "cpu_util_pct", "worker_cpu_pct", "other_cpu_pct", "steal_pct", "first_batch_s",
    "cpu_us_per_sample", "rss_peak_bytes", "samples", "errors", "interrupted"};

/* The repeat's CPU per sample in stage name, NaN when it lacks it. */
static double repeat_stage_us(const struct pb_repeat_result *rep, const char *name)
{
    for (size_t s = 0; s < rep->stage_count; s++)
        if (!rep->stages[s].gpu && strcmp(rep->stages[s].name, name) == 0)
            return us(pb_stage_cpu_ns_per_sample(rep->stages, rep->stage_count, &rep->stages[s]));
    return NAN;
}

static void repeat_row(const struct delimited *d, const struct pb_repeat_result *rep)
{
    cell_double(d, rep->wall_s);
    cell_double(d, rep->samples_per_s);
    cell_double(d, rep->batches_per_s);
    cell_double(d, rep->mb_per_s);
    cell_double(d, rep->stall_pct);
    cell_double(d, rep->accel_util_pct);
    cell_double(d, rep->cpu_util_pct);
    cell_double(d, rep->worker_cpu_pct);
    cell_double(d, rep->other_cpu_pct);
    cell_double(d, rep->steal_pct);
    cell_double(d, rep->first_batch_s);
    cell_double(d, us(pb_repeat_cpu_ns_per_sample(rep)));
    cell_u64(d, rep->rss_peak_bytes);
    cell_u64(d, rep->samples);
    cell_u64(d, rep->errors);
    fprintf(d->out, "%d", rep->interrupted ? 1 : 0);
    for (size_t s = 0; s < d->stage_count; s++) {
        fputc(d->sep, d->out);
        double cpu_us = repeat_stage_us(rep, d->stages[s]);
        if (isfinite(cpu_us))
            fprintf(d->out, "%.10g", cpu_us);
    }
    fputc('\n', d->out);
}

static void repeat_rows(struct delimited *d, const struct pb_result *result)
{
    collect_axes(d, result);
    collect_stages(d, result);
    head_cells(d, true);
    size_t columns = PB_ARRAY_LEN(repeat_columns);
    for (size_t c = 0; c < columns; c++)
        fprintf(d->out, "%s%c", repeat_columns[c],
                c + 1 < columns || d->stage_count ? d->sep : '\n');
    for (size_t s = 0; s < d->stage_count; s++) {
        char name[96];
        snprintf(name, sizeof(name), "%s.cpu_us_per_sample", d->stages[s]);
        cell_text(d, name, s + 1 == d->stage_count);
    }
    for (size_t i = 0; i < result->point_count; i++)
        for (size_t r = 0; r < result->points[i].repeat_count; r++) {
            lead_cells(d, result, i, (long)r);
            repeat_row(d, &result->points[i].repeats[r]);
        }
}

void pb_report_csv(FILE *out, const struct pb_result *result, const struct pb_analysis *an)
{
    point_rows(&(struct delimited){.out = out, .sep = ','}, result, an);
}

void pb_report_tsv(FILE *out, const struct pb_result *result, const struct pb_analysis *an)
{
    point_rows(&(struct delimited){.out = out, .sep = '\t'}, result, an);
}

void pb_report_csv_repeats(FILE *out, const struct pb_result *result,
                           const struct pb_analysis *an)
{
    (void)an; /* a repeat is not ranked */
    repeat_rows(&(struct delimited){.out = out, .sep = ','}, result);
}

void pb_report_tsv_repeats(FILE *out, const struct pb_result *result,
                           const struct pb_analysis *an)
{
    (void)an;
    repeat_rows(&(struct delimited){.out = out, .sep = '\t'}, result);
}
