/* One result rendered in every format (table, markdown, CSV, TSV, JSON,
 * HTML, Prometheus), compared, analyzed and kept in history (its CSV,
 * TSV, JSON and Prometheus forms): a figure with one name is the same
 * number in all of them, and that number is the known answer. The result
 * is made by hand so that its right answers are known: three stages
 * (read, decode, collate) whose thread CPU time per sample is 2 and 10 µs,
 * and collate's per-batch cost spread over its 8 samples 1, 1.5 and 2.5 µs
 * in the three repeats (a point's figure is the repeats' median, 1.5 µs;
 * their pooled rows would read 1.67 µs, the CSV's old figure against
 * compare's), 72 samples through the pipeline (64 delivered, a batch still
 * in flight), and a process CPU that says something else (the loop's own
 * time), so a format that divides by the wrong count, reads the wrong CPU
 * or aggregates the repeats otherwise shows. Stall has two figures, each
 * with its known answer: the point's total wait over total wall, and the
 * repeats' median beside it (compare's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/analyze/analysis.h"
#include "bench/analyze/compare.h"
#include "bench/analyze/history.h"
#include "bench/analyze/verdict.h"
#include "bench/base/pb.h"
#include "bench/report/compare_text.h"
#include "bench/report/format.h"
#include "bench/report/history_report.h"
#include "bench/report/live.h"
#include "bench/report/report_csv.h"
#include "bench/result/metrics.h"
#include "tests/testutil.h"

#define STAGES 3
#define REPEATS 3
#define BATCH 8
#define DELIVERED 64 /* per repeat: 8 batches */
#define IN_FLIGHT 8  /* a batch built when measuring stopped */

static const char *const stage_names[STAGES] = {"read", "decode", "collate"};
/* Thread CPU per item each stage handled: a sample, or for collate a batch,
 * whose cost differs between the repeats. */
static const uint64_t stage_cpu_per_item_ns[STAGES] = {2000, 10000, 0};
static const uint64_t collate_per_batch_ns[REPEATS] = {8000, 12000, 20000};
/* The right answers: per sample through the pipeline, collate spread, each
 * the median of the repeats' (collate 1, 1.5, 2.5 µs: pooled 1.67 µs). */
static const double stage_cpu_per_sample_ns[STAGES] = {2000, 10000, 1500};
static const double repeat_collate_ns[REPEATS] = {1000, 1500, 2500};
static const double cpu_per_sample_ns = 13500; /* of 13, 13.5 and 14.5 µs */
/* The repeats' walls are 0.5, 0.6 and 0.7 s: samples/s is the median of
 * 128, 106.7 and 91.4; stall (20, 30, 40 %), accelerator utilization (70,
 * 60, 50 %) and worker CPU (60, 61, 62 %) are totals over the repeats,
 * each repeat's share weighted by its wall. */
#define SAMPLES_PER_S (DELIVERED / 0.6)
#define STALL_TOTAL_PCT (56.0 / 1.8)
#define STALL_MEDIAN_PCT 30.0
#define ACCEL_PCT (106.0 / 1.8)
#define WORKER_CPU_PCT (110.0 / 1.8)

static void fill_repeat(struct pb_repeat_result *rep, size_t k)
{
    uint64_t through = DELIVERED + IN_FLIGHT;
    rep->wall_s = 0.5 + 0.1 * (double)k;
    rep->samples = DELIVERED;
    rep->batches = DELIVERED / BATCH;
    rep->samples_per_s = (double)DELIVERED / rep->wall_s;
    rep->batches_per_s = rep->samples_per_s / BATCH;
    rep->stall_pct = 20 + 10 * (double)k;
    rep->accel_util_pct = 70 - 10 * (double)k;
    rep->cpu_util_pct = 150; /* the whole process: more than its stages */
    rep->worker_cpu_pct = 60 + (double)k;
    rep->rss_peak_bytes = (100ull + k) << 20;
    rep->batch_count = rep->batches;
    rep->batch_records = calloc(rep->batch_count, sizeof(*rep->batch_records));
    assert_non_null(rep->batch_records);
    for (size_t b = 0; b < rep->batch_count; b++)
        rep->batch_records[b] = (struct pb_batch_record){.assembly_ns = 100000 + 1000 * b,
                                                         .wait_ns = 5000 * b,
                                                         .step_ns = 5000000,
                                                         .queue_depth = 1,
                                                         .samples = BATCH};
    rep->stage_count = STAGES;
    rep->stages = calloc(STAGES, sizeof(*rep->stages));
    assert_non_null(rep->stages);
    for (size_t s = 0; s < STAGES; s++) {
        struct pb_stage_result *st = &rep->stages[s];
        bool collate = strcmp(stage_names[s], "collate") == 0;
        uint64_t items = collate ? through / BATCH : through;
        uint64_t per_item = collate ? collate_per_batch_ns[k] : stage_cpu_per_item_ns[s];
        snprintf(st->name, sizeof(st->name), "%s", stage_names[s]);
        pb_hist_init(&st->hist);
        for (uint64_t i = 0; i < items; i++)
            pb_hist_add(&st->hist, per_item + 500);
        st->cpu_ns = items * per_item;
        st->share_pct = 100.0 / STAGES;
    }
}

static void make_result(struct pb_result *r)
{
    memset(r, 0, sizeof(*r));
    r->schema_version = 1;
    snprintf(r->name, sizeof(r->name), "agree");
    snprintf(r->created, sizeof(r->created), "2026-01-02T03:04:05Z");
    r->machine.pus = 8;
    r->machine.cores = 8;
    r->config = json_pack("{s s s {s i s i s i} s {s f s i}}", "name", "agree", "loader", "workers",
                          2, "batch_size", BATCH, "prefetch_factor", 2, "run", "step_ms", 5.0,
                          "repeats", REPEATS);
    r->point_count = 1;
    r->points = calloc(1, sizeof(*r->points));
    assert_non_null(r->points);
    struct pb_point_result *p = &r->points[0];
    p->axes = json_object();
    p->repeat_count = REPEATS;
    p->repeats = calloc(REPEATS, sizeof(*p->repeats));
    assert_non_null(p->repeats);
    for (size_t k = 0; k < REPEATS; k++)
        fill_repeat(&p->repeats[k], k);
    pb_point_summarize(p);
}

/* Not inlined: GCC would see the stream's pointer to text as dangling. */
static __attribute__((noinline)) char *render(const struct pb_result *r, enum pb_format format)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    pb_report(out, r, format);
    fclose(out);
    return text;
}

/* ------------------------------------------------------------ reading */

/* A number with an optional duration unit ("12.3 µs", "1.20 ms") as ns
 * when as_ns, else the number; NAN when cell holds none. */
static double number_in(const char *cell, bool as_ns)
{
    while (*cell == ' ' || *cell == '\t' || *cell == '|')
        cell++;
    char *end;
    double v = strtod(cell, &end);
    if (end == cell)
        return NAN;
    if (!as_ns)
        return v;
    while (*end == ' ')
        end++;
    if (strncmp(end, "µs", strlen("µs")) == 0)
        return v * 1e3;
    if (strncmp(end, "ms", 2) == 0)
        return v * 1e6;
    if (strncmp(end, "ns", 2) == 0)
        return v;
    if (*end == 's')
        return v * 1e9;
    return NAN;
}

/* Cuts line (copied into cells) into cells: by sep, or where sep is 0 by
 * runs of two spaces or more (an aligned text table); returns the count. */
static size_t split(char *line, char sep, char **cells, size_t max)
{
    size_t n = 0;
    char *at = line;
    while (*at && n < max) {
        while (sep == 0 && *at == ' ')
            at++;
        if (sep == '|' && n == 0 && *at == '|')
            at++;
        char *end = at;
        if (sep)
            end = strchr(at, sep) ? strchr(at, sep) : at + strlen(at);
        else
            while (*end && !(end[0] == ' ' && end[1] == ' '))
                end++;
        bool last = *end == '\0';
        *end = '\0';
        char *trim = end;
        while (trim > at && trim[-1] == ' ')
            *--trim = '\0';
        while (*at == ' ')
            at++;
        if (*at || sep)
            cells[n++] = at;
        if (last)
            break;
        at = end + 1;
    }
    if (sep == '|' && n > 0 && cells[n - 1][0] == '\0')
        n--;
    return n;
}

/* In a text or Markdown table (sep '|'), the cell of the row whose first
 * cell is row, in the column headed column (NULL: the second), from the
 * first table whose header has that column; NAN when there is none. */
static double table_cell(const char *text, char sep, const char *column, const char *row,
                         bool as_ns)
{
    char *copy = strdup(text), *save = NULL, *cells[32];
    int col = column ? -1 : 1;
    double v = NAN;
    for (char *line = strtok_r(copy, "\n", &save); line && isnan(v);
         line = strtok_r(NULL, "\n", &save)) {
        char *held = strdup(line);
        size_t n = split(held, sep, cells, 32);
        for (size_t c = 0; col < 0 && c < n; c++)
            if (strcmp(cells[c], column) == 0)
                col = (int)c;
        if (col >= 0 && n > (size_t)col && strcmp(cells[0], row) == 0)
            v = number_in(cells[col], as_ns);
        free(held);
    }
    free(copy);
    return v;
}

/* In a CSV or TSV text, the column's value on the row whose stage column
 * is stage (NULL: the first row); NAN when missing or empty. */
static double csv_cell(const char *text, char sep, const char *column, const char *stage)
{
    char *copy = strdup(text), *save = NULL, *cells[96], *header[96];
    char *line = strtok_r(copy, "\n", &save);
    size_t n = split(line, sep, header, 96);
    int col = -1, stage_col = -1;
    for (size_t c = 0; c < n; c++) {
        col = strcmp(header[c], column) == 0 ? (int)c : col;
        stage_col = strcmp(header[c], "stage") == 0 ? (int)c : stage_col;
    }
    double v = NAN;
    while (col >= 0 && (line = strtok_r(NULL, "\n", &save)) != NULL && isnan(v)) {
        size_t k = split(line, sep, cells, 96);
        if (k > (size_t)col && (!stage || (stage_col >= 0 && strcmp(cells[stage_col], stage) == 0)))
            v = number_in(cells[col], false);
        if (!stage)
            break;
    }
    free(copy);
    return v;
}

/* In one HTML table (head: its <th>column</th>), the cell under it on the
 * row whose first cell is row; NAN when the table has no such row. */
static double html_table_cell(const char *html, const char *head, const char *row, bool as_ns)
{
    char td[128];
    snprintf(td, sizeof td, "<tr><td class=\"l\">%s</td>", row);
    const char *table = head;
    while (table > html && strncmp(table, "<table>", 7) != 0)
        table--;
    int col = 0;
    for (const char *at = strstr(table, "<th"); at && at < head; at = strstr(at + 3, "<th"))
        col++;
    const char *end = strstr(head, "</table>"), *tr = strstr(head, td);
    if (!tr || (end && tr > end))
        return NAN;
    const char *cell = tr + 4;
    for (int c = 0; c < col && cell; c++)
        cell = strstr(cell + 3, "<td");
    cell = cell ? strchr(cell, '>') : NULL;
    return cell ? number_in(cell + 1, as_ns) : NAN;
}

/* In an HTML page, the cell under <th>column</th> on the row whose first
 * cell is row, in the first table that has both; NAN when none has. */
static double html_cell(const char *html, const char *column, const char *row, bool as_ns)
{
    char th[128];
    snprintf(th, sizeof th, "<th>%s</th>", column);
    double v = NAN;
    for (const char *head = strstr(html, th); head && isnan(v); head = strstr(head + 1, th))
        v = html_table_cell(html, head, row, as_ns);
    return v;
}

/* Hides sep inside a CSV line's quoted cells (history's machine names
 * one with commas), so that split cuts at the cells' own. */
static void hide_quoted(char *line, char sep)
{
    bool quoted = false;
    for (; *line; line++) {
        quoted = *line == '"' ? !quoted : quoted;
        if (quoted && *line == sep)
            *line = '\x1f';
    }
}

/* In a CSV or TSV text, the column's value on data row row (0: the
 * first after the header); NAN when missing or empty. */
static double csv_row_cell(const char *text, char sep, const char *column, size_t row)
{
    char *copy = strdup(text), *save = NULL, *cells[96], *header[96];
    hide_quoted(copy, sep);
    char *line = strtok_r(copy, "\n", &save);
    size_t n = split(line, sep, header, 96);
    int col = -1;
    for (size_t c = 0; c < n; c++)
        col = strcmp(header[c], column) == 0 ? (int)c : col;
    double v = NAN;
    for (size_t r = 0; col >= 0 && (line = strtok_r(NULL, "\n", &save)) != NULL; r++) {
        size_t k = split(line, sep, cells, 96);
        if (r == row) {
            v = k > (size_t)col ? number_in(cells[col], false) : NAN;
            break;
        }
    }
    free(copy);
    return v;
}

/* In Prometheus text, the value of family's sample (its own, not a
 * rank's), with stage="stage" among its labels where stage is not NULL;
 * NAN when there is none. */
static double prom_value(const char *text, const char *family, const char *stage)
{
    char want[96];
    snprintf(want, sizeof want, "stage=\"%s\"", stage ? stage : "");
    size_t len = strlen(family);
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line) {
        const char *end = strchr(line, '\n') ? strchr(line, '\n') : line + strlen(line);
        const char *close = strstr(line, "} ");
        if (strncmp(line, family, len) != 0 || line[len] != '{' || !close || close > end)
            continue;
        char labels[1024];
        snprintf(labels, sizeof labels, "%.*s", (int)(close - line), line);
        if (strstr(labels, "rank=\"") || (stage && !strstr(labels, want)))
            continue;
        return strtod(close + 2, NULL);
    }
    return NAN;
}

/* In pbench compare's table, the base side of metric's row: the cell
 * after the one that names it; NAN when no row does. */
static double compare_cell(const char *text, const char *metric, bool as_ns)
{
    char *copy = strdup(text), *save = NULL, *cells[32];
    double v = NAN;
    for (char *line = strtok_r(copy, "\n", &save); line && isnan(v);
         line = strtok_r(NULL, "\n", &save)) {
        size_t n = split(line, 0, cells, 32);
        for (size_t c = 0; c + 1 < n && isnan(v); c++)
            if (strcmp(cells[c], metric) == 0)
                v = number_in(cells[c + 1], as_ns);
    }
    free(copy);
    return v;
}

/* The number after the first lead in text; NAN when there is none. */
static double number_after(const char *text, const char *lead)
{
    const char *at = text ? strstr(text, lead) : NULL;
    return at ? number_in(at + strlen(lead), false) : NAN;
}

/* ------------------------------------------------------------ checking */

struct agreement {
    int failures;
};

/* A figure read from one format against its one value: within what the
 * format's rounding allows (relative for durations and rates). */
static void check(struct agreement *ag, const char *figure, const char *format, double shown,
                  double value, double tolerance)
{
    if (!isnan(shown) && fabs(shown - value) <= tolerance)
        return;
    if (isnan(shown))
        fprintf(stderr, "  %-34s %-12s not shown (the figure is %.6g)\n", figure, format, value);
    else
        fprintf(stderr, "  %-34s %-12s shows %.6g, the figure is %.6g\n", figure, format, shown,
                value);
    ag->failures++;
}

/* CPU per sample of the pipeline and of each stage, in every format. */
static void check_cpu_per_sample(struct agreement *ag, char *const texts[PB_FORMAT_COUNT],
                                 json_t *json)
{
    const char *fig = "CPU per sample";
    double v = cpu_per_sample_ns, rel = v * 0.006;
    check(ag, fig, "table", table_cell(texts[PB_FORMAT_TABLE], 0, NULL, fig, true), v, rel);
    check(ag, fig, "markdown",
          table_cell(texts[PB_FORMAT_MARKDOWN], '|', NULL, fig, true), v, rel);
    check(ag, fig, "csv", 1e3 * csv_cell(texts[PB_FORMAT_CSV], ',', "cpu_us_per_sample", NULL), v,
          rel);
    check(ag, fig, "tsv", 1e3 * csv_cell(texts[PB_FORMAT_TSV], '\t', "cpu_us_per_sample", NULL), v,
          rel);
    json_t *p = json_array_get(json_object_get(json, "points"), 0);
    json_t *jv = json_object_get(p, "cpu_ns_per_sample");
    check(ag, fig, "json", json_is_number(jv) ? json_number_value(jv) : NAN, v, rel);
    check(ag, fig, "html", html_cell(texts[PB_FORMAT_HTML], fig, "run", true), v, rel);
    check(ag, fig, "prometheus",
          1e9 * prom_value(texts[PB_FORMAT_PROMETHEUS], "pbench_cpu_seconds_per_sample", NULL), v,
          rel);
    for (size_t s = 0; s < STAGES; s++) {
        char name[80];
        const char *st = stage_names[s];
        snprintf(name, sizeof name, "CPU per sample, %s", st);
        v = stage_cpu_per_sample_ns[s];
        rel = v * 0.006;
        check(ag, name, "table", table_cell(texts[PB_FORMAT_TABLE], 0, "cpu/sample", st, true), v,
              rel);
        check(ag, name, "markdown",
              table_cell(texts[PB_FORMAT_MARKDOWN], '|', "cpu/sample", st, true), v, rel);
        check(ag, name, "csv",
              1e3 * csv_cell(texts[PB_FORMAT_CSV], ',', "stage_cpu_us_per_sample", st), v, rel);
        check(ag, name, "tsv",
              1e3 * csv_cell(texts[PB_FORMAT_TSV], '\t', "stage_cpu_us_per_sample", st), v, rel);
        json_t *row = json_array_get(json_object_get(p, "stages"), s);
        jv = json_object_get(row, "cpu_ns_per_sample");
        check(ag, name, "json", json_is_number(jv) ? json_number_value(jv) : NAN, v, rel);
        check(ag, name, "html", html_cell(texts[PB_FORMAT_HTML], fig, st, true), v, rel);
        check(ag, name, "prometheus",
              1e9 * prom_value(texts[PB_FORMAT_PROMETHEUS], "pbench_stage_cpu_seconds_per_sample",
                               st),
              v, rel);
    }
}

/* The repeats' own rows (--rows repeats): each repeat's collate, 1, 1.5
 * and 2.5 µs a sample, the values the point's figure is the median of. */
static void check_repeat_rows(struct agreement *ag, const struct pb_result *r)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    pb_report_csv_repeats(out, r, NULL);
    fclose(out);
    for (size_t k = 0; k < REPEATS; k++) {
        char name[64];
        snprintf(name, sizeof name, "collate of repeat %zu", k);
        check(ag, name, "csv rows",
              1e3 * csv_row_cell(text, ',', "collate.cpu_us_per_sample", k), repeat_collate_ns[k],
              1e-6);
    }
    free(text);
}

/* A point figure with a CSV column, a JSON key, a table row and an HTML
 * column; the table's first number is it. */
struct point_figure {
    const char *name, *key, *table_row, *html_column;
    double known, tolerance;
};

/* A wrapped job's step share, where its table shows accelerator
 * utilization's figure: "step 5.00 ms per batch, the job's own, measured
 * (58.9 % of its time)". */
static double step_share(const char *text)
{
    static const char lead[] = "the job's own, measured (";
    const char *at = strstr(text, lead);
    return at ? strtod(at + strlen(lead), NULL) : NAN;
}

static void check_point_figures(struct agreement *ag, char *const texts[PB_FORMAT_COUNT],
                                json_t *json, bool wrapped)
{
    static const struct point_figure figures[] = {
        {"samples/s", "samples_per_s", "samples/s", "samples/s", SAMPLES_PER_S, 0.05},
        {"stall %", "stall_pct", "stall", "stall %", STALL_TOTAL_PCT, 0.05},
        {"accelerator utilization %", "accel_util_pct", "accelerator", "accel. util. %",
         ACCEL_PCT, 0.05},
        {"worker CPU %", "worker_cpu_pct", "worker CPU", "worker CPU %", WORKER_CPU_PCT, 0.5},
    };
    json_t *p = json_array_get(json_object_get(json, "points"), 0);
    for (size_t f = 0; f < sizeof figures / sizeof figures[0]; f++) {
        const struct point_figure *fg = &figures[f];
        double v = fg->known;
        const json_t *jv = json_object_get(p, fg->key);
        check(ag, fg->name, "json", json_is_number(jv) ? json_number_value(jv) : NAN, v, 1e-6);
        bool step = wrapped && strcmp(fg->key, "accel_util_pct") == 0;
        check(ag, fg->name, "table",
              step ? step_share(texts[PB_FORMAT_TABLE])
                   : table_cell(texts[PB_FORMAT_TABLE], 0, NULL, fg->table_row, false),
              v, fg->tolerance);
        check(ag, fg->name, "markdown",
              step ? step_share(texts[PB_FORMAT_MARKDOWN])
                   : table_cell(texts[PB_FORMAT_MARKDOWN], '|', NULL, fg->table_row, false),
              v, fg->tolerance);
        check(ag, fg->name, "csv", csv_cell(texts[PB_FORMAT_CSV], ',', fg->key, NULL), v, 1e-6);
        check(ag, fg->name, "tsv", csv_cell(texts[PB_FORMAT_TSV], '\t', fg->key, NULL), v, 1e-6);
        check(ag, fg->name, "html", html_cell(texts[PB_FORMAT_HTML], fg->html_column, "run", false),
              v, fg->tolerance);
    }
    const char *prom = texts[PB_FORMAT_PROMETHEUS];
    check(ag, "samples/s", "prometheus", prom_value(prom, "pbench_samples_per_second", NULL),
          SAMPLES_PER_S, 1e-6);
    check(ag, "stall %", "prometheus", 100 * prom_value(prom, "pbench_stall_ratio", NULL),
          STALL_TOTAL_PCT, 1e-6);
    /* The repeats' median stall, beside the total in the tables. */
    static const char lead[] = "per repeat median ";
    check(ag, "stall %, the repeats' median", "table", number_after(texts[PB_FORMAT_TABLE], lead),
          STALL_MEDIAN_PCT, 0.05);
    check(ag, "stall %, the repeats' median", "markdown",
          number_after(texts[PB_FORMAT_MARKDOWN], lead), STALL_MEDIAN_PCT, 0.05);
}

/* Compare's figures (each side's median over its repeats) are the same
 * numbers: the pipeline's and each stage's CPU per sample, collate's
 * included, and samples/s; its stall is the repeats' median, the figure
 * the tables show beside the total. */
static void check_compare(struct agreement *ag, const struct pb_result *r)
{
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(r, r, 5, &cmp), PB_OK);
    assert_int_equal(cmp.point_count, 1);
    int found = 0;
    for (int m = 0; m < cmp.points[0].metric_count; m++) {
        const struct pb_metric_cmp *mc = &cmp.points[0].metrics[m];
        if (strcmp(mc->name, "cpu_ns_per_sample") == 0 && ++found)
            check(ag, "CPU per sample", "compare", mc->base, cpu_per_sample_ns, 1e-6);
        if (strcmp(mc->name, "samples_per_s") == 0 && ++found)
            check(ag, "samples/s", "compare", mc->base, SAMPLES_PER_S, 1e-6);
        if (strcmp(mc->name, "stall_pct") == 0 && ++found)
            check(ag, "stall %, the repeats' median", "compare", mc->base, STALL_MEDIAN_PCT, 1e-6);
        for (size_t s = 0; s < STAGES; s++) {
            char name[96];
            snprintf(name, sizeof name, "cpu_ns_per_sample.%s", stage_names[s]);
            if (strcmp(mc->name, name) == 0 && ++found)
                check(ag, name, "compare", mc->base, stage_cpu_per_sample_ns[s], 1e-6);
        }
    }
    assert_int_equal(found, 3 + STAGES);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    pb_comparison_table(out, &cmp, "a.json", "b.json");
    fclose(out);
    check(ag, "CPU per sample", "compare text", compare_cell(text, "cpu_ns_per_sample", true),
          cpu_per_sample_ns, cpu_per_sample_ns * 0.006);
    check(ag, "samples/s", "compare text", compare_cell(text, "samples_per_s", false),
          SAMPLES_PER_S, 0.05);
    check(ag, "stall %, the repeats' median", "compare text",
          compare_cell(text, "stall_pct", false), STALL_MEDIAN_PCT, 0.05);
    for (size_t s = 0; s < STAGES; s++) {
        char name[96];
        snprintf(name, sizeof name, "cpu_ns_per_sample.%s", stage_names[s]);
        check(ag, name, "compare text", compare_cell(text, name, true), stage_cpu_per_sample_ns[s],
              stage_cpu_per_sample_ns[s] * 0.006);
    }
    free(text);
    pb_comparison_free(&cmp);
}

/* The capacity line turns the same CPU per sample into cores: a 5 ms step
 * at batch 8 needs 1600 samples/s, at 13.5 µs a sample. */
static void check_capacity(struct agreement *ag, const struct pb_result *r)
{
    struct pb_analysis an;
    assert_int_equal(pb_analyze(r, &an), PB_OK);
    check(ag, "CPU per sample", "capacity", 1e3 * number_after(an.capacity, "samples/s; at "),
          cpu_per_sample_ns, cpu_per_sample_ns * 0.006);
    check(ag, "samples/s needed", "capacity", number_after(an.capacity, "needs "), 1600, 1e-6);
    pb_analysis_free(&an);
}

/* A history form of h (pb_history_csv, _tsv, _json, pb_live_history) as
 * a new string. Not inlined, as render. */
static __attribute__((noinline)) char *history_text(const struct pb_history *h,
                                                    void (*form)(FILE *,
                                                                 const struct pb_history *))
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    form(out, h);
    fclose(out);
    return text;
}

/* One metric history keeps, read back from the database at db: its run's
 * value, and the same in history's CSV, TSV, JSON and Prometheus forms
 * (family in base units: scale turns it into the metric's). */
static void check_history_metric(struct agreement *ag, const char *db, const char *metric,
                                 const char *family, const char *stage, double scale, double v,
                                 double tolerance)
{
    struct pb_history h;
    char msg[PB_MSG_MAX];
    if (pb_history_load(db, "agree", metric, 5, &h, msg, sizeof msg) != PB_OK)
        fail_msg("history of %s: %s", metric, msg);
    assert_int_equal(h.series_count, 1);
    const struct pb_history_series *s = &h.series[0];
    check(ag, metric, "history", s->run_count ? s->runs[s->run_count - 1].value : NAN, v,
          tolerance);
    char *csv = history_text(&h, pb_history_csv), *tsv = history_text(&h, pb_history_tsv);
    check(ag, metric, "hist. csv", csv_row_cell(csv, ',', "value", 0), v, tolerance);
    check(ag, metric, "hist. tsv", csv_row_cell(tsv, '\t', "value", 0), v, tolerance);
    char *text = history_text(&h, pb_history_json);
    json_t *json = json_loads(text, 0, NULL);
    json_t *run = json_array_get(
        json_object_get(json_array_get(json_object_get(json, "series"), 0), "runs"), 0);
    json_t *jv = json_object_get(run, "value");
    check(ag, metric, "hist. json", json_is_number(jv) ? json_number_value(jv) : NAN, v,
          tolerance);
    char *prom = history_text(&h, pb_live_history);
    check(ag, metric, "hist. prom", prom_value(prom, family, stage) / scale, v, tolerance);
    json_decref(json);
    free(text);
    free(prom);
    free(csv);
    free(tsv);
    pb_history_free(&h);
}

/* history add keeps the figures every format shows: samples/s, the
 * stall's total, and the pipeline's and each stage's CPU per sample. */
static void check_history(struct agreement *ag, const struct pb_result *r)
{
    char dir[] = "/tmp/pbench-agree-XXXXXX", db[64], msg[PB_MSG_MAX];
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/h.db", dir);
    assert_int_equal(pb_history_add(db, r, "r1", "agree", msg, sizeof msg), PB_OK);
    check_history_metric(ag, db, "samples_per_s", "pbench_samples_per_second", NULL, 1,
                         SAMPLES_PER_S, 1e-6);
    check_history_metric(ag, db, "stall_pct", "pbench_stall_ratio", NULL, 0.01, STALL_TOTAL_PCT,
                         1e-6);
    check_history_metric(ag, db, "cpu_ns_per_sample", "pbench_cpu_seconds_per_sample", NULL, 1e-9,
                         cpu_per_sample_ns, 1e-3);
    for (size_t s = 0; s < STAGES; s++) {
        char metric[96];
        snprintf(metric, sizeof metric, PB_STAGE_CPU_PREFIX "%s", stage_names[s]);
        check_history_metric(ag, db, metric, "pbench_stage_cpu_seconds_per_sample",
                             stage_names[s], 1e-9, stage_cpu_per_sample_ns[s], 1e-3);
    }
    pb_test_tmpdir_remove(dir);
}

/* Every format of r agrees with the known answers, and with compare. */
static void agree(struct pb_result *r);

static void test_every_format_shows_the_same_figures(void **state)
{
    (void)state;
    struct pb_result r;
    make_result(&r);
    agree(&r);
    pb_result_free(&r);
}

/* A wrapped job's result (loader.engine: wrap, the job's own step): the
 * same figures in every format, its stall named as the repeats' total in
 * the table, and compare naming its own aggregation (each side's median),
 * so the two stall figures a user sees are never taken for one. */
static void test_a_wrapped_result_agrees(void **state)
{
    (void)state;
    struct pb_result r;
    make_result(&r);
    json_object_set_new(json_object_get(r.config, "loader"), "engine", json_string("wrap"));
    json_object_set_new(r.config, "wrap",
                        json_pack("{s s}", "command", "/usr/bin/python3 train.py"));
    r.points[0].engine = json_pack("{s s}", "name", "wrap");
    /* The job's step is its whole time between batches: its share of the
     * loop is the figure accelerator utilization holds, as wrap fills both. */
    for (size_t k = 0; k < REPEATS; k++)
        r.points[0].repeats[k].loop_step_pct = r.points[0].repeats[k].accel_util_pct;
    pb_point_summarize(&r.points[0]);
    agree(&r);
    char *table = render(&r, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){"total wait / total wall of the repeats",
                                                         "per repeat median 30.0 %", NULL});
    free(table);
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&r, &r, 5.0, &cmp), PB_OK);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    pb_comparison_table(out, &cmp, "a.json", "b.json");
    fclose(out);
    assert_non_null(strstr(text, "each side's median over its repeats"));
    free(text);
    pb_comparison_free(&cmp);
    pb_result_free(&r);
}

static void agree(struct pb_result *r_in)
{
    struct pb_result r = *r_in; /* a shallow copy: r_in keeps what it owns */
    /* The figure compare and history read is the one every format shows. */
    const struct pb_metric *cpu = pb_metric_find("cpu_ns_per_sample");
    assert_non_null(cpu);
    struct agreement ag = {0};
    check(&ag, "CPU per sample", "metrics", cpu->of_point(&r.points[0]), cpu_per_sample_ns, 1e-6);
    char *texts[PB_FORMAT_COUNT];
    for (int f = 0; f < PB_FORMAT_COUNT; f++)
        texts[f] = render(&r, (enum pb_format)f);
    json_error_t err;
    json_t *json = json_loads(texts[PB_FORMAT_JSON], 0, &err);
    assert_non_null(json);
    check_cpu_per_sample(&ag, texts, json);
    check_point_figures(&ag, texts, json, pb_point_wrapped(&r, 0));
    check_compare(&ag, &r);
    check_repeat_rows(&ag, &r);
    check_capacity(&ag, &r);
    check_history(&ag, &r);
    if (ag.failures)
        fail_msg("%d figures differ between formats (listed above)", ag.failures);
    json_decref(json);
    for (int f = 0; f < PB_FORMAT_COUNT; f++)
        free(texts[f]);
}

/* Each figure says how it aggregates where it is shown: the stall as the
 * repeats' total with their median beside it, the stage table's wall and
 * CPU columns by name. */
static void test_aggregations_are_named(void **state)
{
    (void)state;
    struct pb_result r;
    make_result(&r);
    char *table = render(&r, PB_FORMAT_TABLE), *html = render(&r, PB_FORMAT_HTML);
    pb_test_assert_contains(table, (const char *const[]){"(median of 3 repeats)",
                                                         "total wait / total wall of the repeats",
                                                         "per repeat median 30.0 %, 20.0-40.0 %",
                                                         "cpu/sample", "wall%", NULL});
    pb_test_assert_contains(html, (const char *const[]){"samples/s is the median of the repeats",
                                                        "stall, accelerator utilization and worker "
                                                        "CPU are totals over the repeats",
                                                        "<th>wall time %</th>", NULL});
    free(table);
    free(html);
    pb_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_format_shows_the_same_figures),
        cmocka_unit_test(test_aggregations_are_named),
        cmocka_unit_test(test_a_wrapped_result_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
