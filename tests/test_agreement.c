/* One result rendered in every format (table, markdown, CSV, TSV, JSON,
 * HTML): a figure with one name is the same number in all of them. The
 * result is made by hand so that its right answers are known: three
 * stages (read, decode, collate) whose thread CPU time per sample is 2, 10
 * and 1 µs once collate's per-batch cost is spread over its 8 samples, 72
 * samples through the pipeline (64 delivered, a batch still in flight),
 * and a process CPU that says something else (the loop's own time), so a
 * format that divides by the wrong count or reads the wrong CPU shows. */
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
#include "bench/base/pb.h"
#include "bench/report/compare_text.h"
#include "bench/report/format.h"
#include "bench/result/metrics.h"
#include "tests/testutil.h"

#define STAGES 3
#define REPEATS 3
#define BATCH 8
#define DELIVERED 64 /* per repeat: 8 batches */
#define IN_FLIGHT 8  /* a batch built when measuring stopped */

static const char *const stage_names[STAGES] = {"read", "decode", "collate"};
/* Thread CPU per item each stage handled: a sample, or for collate a batch. */
static const uint64_t stage_cpu_per_item_ns[STAGES] = {2000, 10000, 8000};
/* The right answers: per sample through the pipeline, collate spread. */
static const double stage_cpu_per_sample_ns[STAGES] = {2000, 10000, 1000};
static const double cpu_per_sample_ns = 13000;

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
        uint64_t items = strcmp(stage_names[s], "collate") == 0 ? through / BATCH : through;
        snprintf(st->name, sizeof(st->name), "%s", stage_names[s]);
        pb_hist_init(&st->hist);
        for (uint64_t i = 0; i < items; i++)
            pb_hist_add(&st->hist, stage_cpu_per_item_ns[s] + 500);
        st->cpu_ns = items * stage_cpu_per_item_ns[s];
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
        fprintf(stderr, "  %-34s %-9s not shown (the figure is %.6g)\n", figure, format, value);
    else
        fprintf(stderr, "  %-34s %-9s shows %.6g, the figure is %.6g\n", figure, format, shown,
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
    }
}

/* A point figure with a CSV column, a JSON key, a table row and an HTML
 * column; the table's first number is it. */
struct point_figure {
    const char *name, *key, *table_row, *html_column;
    double tolerance;
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
        {"samples/s", "samples_per_s", "samples/s", "samples/s", 0.05},
        {"stall %", "stall_pct", "stall", "stall %", 0.05},
        {"accelerator utilization %", "accel_util_pct", "accelerator", "accel. util. %", 0.05},
        {"worker CPU %", "worker_cpu_pct", "worker CPU", "worker CPU %", 0.5},
    };
    json_t *p = json_array_get(json_object_get(json, "points"), 0);
    for (size_t f = 0; f < sizeof figures / sizeof figures[0]; f++) {
        const struct point_figure *fg = &figures[f];
        double v = json_number_value(json_object_get(p, fg->key));
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
}

/* Compare's figures (medians over the repeats, which agree here) are the
 * same numbers: the pipeline's and each stage's CPU per sample. */
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
        for (size_t s = 0; s < STAGES; s++) {
            char name[96];
            snprintf(name, sizeof name, "cpu_ns_per_sample.%s", stage_names[s]);
            if (strcmp(mc->name, name) == 0 && ++found)
                check(ag, name, "compare", mc->base, stage_cpu_per_sample_ns[s], 1e-6);
        }
    }
    assert_int_equal(found, 1 + STAGES);
    pb_comparison_free(&cmp);
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
    assert_true(fabs(cpu->of_point(&r.points[0]) - cpu_per_sample_ns) < 1e-6);
    char *texts[PB_FORMAT_COUNT];
    for (int f = 0; f < PB_FORMAT_COUNT; f++)
        texts[f] = render(&r, (enum pb_format)f);
    json_error_t err;
    json_t *json = json_loads(texts[PB_FORMAT_JSON], 0, &err);
    assert_non_null(json);
    struct agreement ag = {0};
    check_cpu_per_sample(&ag, texts, json);
    check_point_figures(&ag, texts, json, pb_point_wrapped(&r, 0));
    check_compare(&ag, &r);
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
