/* history show's renderings (bench/report/history_report.c): the series a
 * real database holds, with a step in one of them, as HTML (one chart per
 * series, the step marked with its size and revision, nothing fetched), CSV
 * and JSON, through the format table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/analyze/history.h"
#include "bench/base/pb.h"
#include "bench/report/format.h"
#include "bench/report/history_report.h"

#define NIGHTS 8

static char dir[] = "/tmp/pbench-history-report-XXXXXX";
static char db[256];

/* Eight nights of a two-point sweep: point workers=1 drops 30% from the
 * sixth night (revision r5) on, workers=2 stays flat. */
static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(db, sizeof(db), "%s/h.db", dir);
    for (int night = 0; night < NIGHTS; night++) {
        struct pb_result r;
        memset(&r, 0, sizeof(r));
        snprintf(r.name, sizeof(r.name), "ci");
        snprintf(r.created, sizeof(r.created), "2026-11-%02dT03:00:00Z", night + 1);
        snprintf(r.machine.cpu_model, sizeof(r.machine.cpu_model), "Test CPU");
        r.config = json_pack("{s{s i}}", "loader", "batch_size", 32);
        struct pb_point_result p[2];
        memset(p, 0, sizeof(p));
        for (int i = 0; i < 2; i++) {
            p[i].repeat_count = 3;
            p[i].axes = json_pack("{s i}", "loader.workers", i + 1);
            p[i].samples_per_s_noise_pct = 2;
            p[i].samples_per_s = i == 0 && night >= 5 ? 700 + night : 1000 + (night % 3) * 5;
        }
        r.points = p;
        r.point_count = 2;
        char rev[16], msg[PB_MSG_MAX];
        snprintf(rev, sizeof(rev), "r%d", night);
        int rc = pb_history_add(db, &r, rev, "test", msg, sizeof(msg));
        json_decref(p[0].axes);
        json_decref(p[1].axes);
        json_decref(r.config);
        if (rc != PB_OK)
            return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* history rendered in format, as text the caller frees. */
static char *render(const struct pb_history *h, enum pb_format format)
{
    char *text = NULL, msg[PB_MSG_MAX];
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    assert_int_equal(pb_history_report(out, NULL, h, (int)format, msg, sizeof(msg)), PB_OK);
    fclose(out);
    return text;
}

static size_t count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void load(struct pb_history *h)
{
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_history_load(db, NULL, "samples_per_s", 5, h, msg, sizeof(msg)), PB_OK);
}

/* The series as plain data: two series of 8 runs, the step in workers=1 at
 * r5 and a regression, the measured settings kept. */
static void test_load(void **state)
{
    (void)state;
    struct pb_history h;
    load(&h);
    assert_int_equal(h.series_count, 2);
    assert_int_equal(h.regressions, 1);
    assert_int_equal(h.improvements, 0);
    const struct pb_history_series *a = &h.series[0], *b = &h.series[1];
    assert_string_equal(a->point, "{\"loader.workers\":1}");
    assert_int_equal(a->run_count, NIGHTS);
    assert_int_equal(a->step, 5);
    assert_true(a->step_worse);
    assert_true(fabs(a->step_pct - 100 * (706.0 / 1005 - 1)) < 1e-9); /* medians */
    assert_string_equal(a->runs[5].revision, "r5");
    assert_true(fabs(a->runs[0].noise_pct - 2) < 1e-9);
    assert_non_null(a->measured);
    assert_non_null(strstr(a->measured, "\"batch_size\":32"));
    assert_int_equal(b->step, -1);
    assert_int_equal(strlen(a->fingerprint), 16);
    pb_history_free(&h);
}

/* The dashboard: one chart per series, the step marked with its size and
 * the revision it starts at, the noise as a band, and nothing a browser
 * would fetch (no http:// or https:// src or href, no script). */
static void test_html(void **state)
{
    (void)state;
    struct pb_history h;
    load(&h);
    char *html = render(&h, PB_FORMAT_HTML);
    assert_int_equal(count(html, "<svg "), h.series_count);
    assert_int_equal(count(html, "<svg "), 2);
    char step[96];
    snprintf(step, sizeof(step), "step %+.1f%% from r5 (regression)", h.series[0].step_pct);
    assert_int_equal(count(html, step), 1);
    snprintf(step, sizeof(step), "%+.1f%% from r5", h.series[0].step_pct); /* the overview */
    assert_int_equal(count(html, step), 2);
    assert_non_null(strstr(html, "fill-opacity=\"0.18\"")); /* the noise band */
    assert_non_null(strstr(html, "median before: 1005"));
    assert_non_null(strstr(html, "none beyond 5.0%")); /* the flat series */
    assert_non_null(strstr(html, h.series[0].fingerprint));
    assert_non_null(strstr(html, "&quot;batch_size&quot;: 32"));
    static const char *const external[] = {"src=\"http", "href=\"http", "src='http",
                                           "href='http", "url(http", "@import", "<script",
                                           "<link", "<img"};
    for (size_t i = 0; i < PB_ARRAY_LEN(external); i++)
        assert_null(strstr(html, external[i]));
    assert_non_null(strstr(html, "</body></html>"));
    free(html);
    pb_history_free(&h);
}

/* CSV: a header and one row per run, the step flagged on its run only. */
static void test_csv_and_json(void **state)
{
    (void)state;
    struct pb_history h;
    load(&h);
    char *csv = render(&h, PB_FORMAT_CSV);
    assert_int_equal(count(csv, "\n"), 1 + 2 * NIGHTS);
    const char *head = "config,machine,fingerprint,point,series,run,created,revision,metric,"
                       "value,noise_pct,median_before,vs_median_pct,step,step_pct,regression,"
                       "other_cpu_pct\n";
    assert_memory_equal(csv, head, strlen(head));
    /* The point's JSON is quoted, its quotes doubled. */
    assert_int_equal(count(csv, ",\"{\"\"loader.workers\"\":1}\",0,"), NIGHTS);
    char row[200];
    snprintf(row, sizeof(row), ",0,5,2026-11-06T03:00:00Z,r5,samples_per_s,705,2,1005,");
    assert_non_null(strstr(csv, row));
    snprintf(row, sizeof(row), ",1,%.10g,1,0\n", h.series[0].step_pct);
    assert_int_equal(count(csv, row), 1);
    assert_int_equal(count(csv, ",1,0\n"), 1); /* one regression flag, other CPU 0% */
    free(csv);

    char *text = render(&h, PB_FORMAT_JSON);
    json_error_t error;
    json_t *root = json_loads(text, 0, &error);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "metric")), "samples_per_s");
    assert_int_equal(json_integer_value(json_object_get(root, "regressions")), 1);
    json_t *series = json_object_get(root, "series");
    assert_int_equal(json_array_size(series), 2);
    json_t *first = json_array_get(series, 0);
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(first, "point"), "loader.workers")),
                     1);
    json_t *step = json_object_get(first, "step");
    assert_int_equal(json_integer_value(json_object_get(step, "run")), 5);
    assert_string_equal(json_string_value(json_object_get(step, "revision")), "r5");
    assert_true(json_is_true(json_object_get(step, "regression")));
    assert_int_equal(json_array_size(json_object_get(first, "runs")), NIGHTS);
    assert_true(json_is_null(json_object_get(json_array_get(series, 1), "step")));
    json_decref(root);
    free(text);
    /* Markdown has no history form; table is the text show prints. */
    assert_null(pb_formats[PB_FORMAT_MARKDOWN].history);
    text = render(&h, PB_FORMAT_TABLE);
    assert_non_null(strstr(text, "STEP CHANGE: from 2026-11-06T03:00:00Z (revision r5)"));
    free(text);
    pb_history_free(&h);
}

/* A run without the metric (a stage before it existed, a row from before a
 * column was kept) never prints nan, in any format. */
static void test_absent_value_never_nan(void **state)
{
    (void)state;
    struct pb_history h;
    load(&h);
    h.series[0].runs[0].value = NAN;
    h.series[0].runs[NIGHTS - 1].value = NAN;
    static const enum pb_format formats[] = {PB_FORMAT_TABLE, PB_FORMAT_CSV, PB_FORMAT_JSON,
                                             PB_FORMAT_HTML};
    for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++) {
        char *text = render(&h, formats[f]);
        if (count(text, "nan") || count(text, "NaN"))
            fail_msg("format %d prints nan:\n%s", (int)formats[f], text);
        free(text);
    }
    pb_history_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_html),
        cmocka_unit_test(test_absent_value_never_nan),
        cmocka_unit_test(test_csv_and_json),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
