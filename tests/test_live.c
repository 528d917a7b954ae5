/* What the live server shows (bench/report/live.c): the metrics of the
 * synthetic result (names, labels, escaping, histograms against their
 * pb_hist, promtool's check where it is installed), /live.json, and the
 * live page's promise to fetch nothing from elsewhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/report/live.h"
#include "tests/result_fixture.h"
#include "tests/testutil.h"

static char tmpdir[] = "/tmp/pbench-test-live-XXXXXX";

/* The config's name as a label value must read back as written. */
#define CONFIG_NAME "image \"basic\"\nx\\y"
#define CONFIG_LABEL "config=\"image \\\"basic\\\"\\nx\\\\y\""

static const struct pb_live live_measuring = {
    .config = CONFIG_NAME, .engine = "pbench", .state = "measuring", .point = 2, .points = 2,
    .repeat = 3, .repeats = 5, .label = "loader.workers=4", .eta_s = 42.5,
    .samples_per_s = 1234.5, .stall_pct = 12.5, .t_s = 99.25,
};

/* The fixture result with the parts the metrics read that it leaves out:
 * a config name that needs escaping, the machine's reference per repeat,
 * a point on another engine and with ranks. */
static void make_live_result(struct pb_result *r)
{
    make_result(r, 7);
    snprintf(r->name, sizeof(r->name), "%s", CONFIG_NAME);
    for (size_t i = 0; i < r->point_count; i++)
        for (size_t k = 0; k < r->points[i].repeat_count; k++)
            r->points[i].repeats[k].ref_cpu_ns = 2e6 * (double)(k + 1);
    struct pb_point_result *p = &r->points[1];
    p->engine = json_pack("{s s}", "name", "torch");
    p->ranks = json_pack("[{s i s f s f} {s i s f s f}]", "rank", 0, "samples_per_s", 600.0,
                         "stall_pct", 10.0, "rank", 1, "samples_per_s", 400.0, "stall_pct", 30.0);
    assert_non_null(p->engine);
    assert_non_null(p->ranks);
}

static char *metrics(const struct pb_result *r, const struct pb_live *live, bool openmetrics)
{
    size_t len = 0;
    char *text = pb_live_metrics(r, live, openmetrics, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

/* The value of the sample whose line starts with prefix (name and
 * labels up to the value); fails when there is none. */
static double sample_value(const char *text, const char *prefix)
{
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line) {
        size_t n = strlen(prefix);
        if (strncmp(line, prefix, n) == 0 && line[n] == ' ')
            return strtod(line + n + 1, NULL);
    }
    fail_msg("no sample %s in:\n%s", prefix, text);
    return NAN;
}

static void test_metric_names_and_labels(void **state)
{
    (void)state;
    struct pb_result r;
    make_live_result(&r);
    char *text = metrics(&r, &live_measuring, false);
    const char *const needles[] = {
        "# HELP pbench_samples_per_second ",
        "# TYPE pbench_samples_per_second gauge\n",
        "# TYPE pbench_stall_ratio gauge\n",
        "# TYPE pbench_worker_cpu_seconds_total counter\n",
        "# TYPE pbench_errors_total counter\n",
        "# TYPE pbench_machine_reference_seconds gauge\n",
        "# TYPE pbench_stage_latency_seconds histogram\n",
        "# TYPE pbench_cpu_seconds_per_sample gauge\n",
        "# TYPE pbench_stage_cpu_seconds_per_sample gauge\n",
        "# TYPE pbench_live_samples_per_second gauge\n",
        "# TYPE pbench_live_stall_ratio gauge\n",
        "pbench_samples_per_second{" CONFIG_LABEL ",point=\"1\",engine=\"pbench\"} ",
        "pbench_samples_per_second{" CONFIG_LABEL ",point=\"2\",engine=\"torch\",rank=\"1\"} 400\n",
        "pbench_stall_ratio{" CONFIG_LABEL ",point=\"2\",engine=\"torch\",rank=\"0\"} 0.1\n",
        "pbench_stage_latency_seconds_bucket{" CONFIG_LABEL
        ",point=\"1\",engine=\"pbench\",stage=\"decode\",le=\"+Inf\"} ",
        "pbench_live_samples_per_second{" CONFIG_LABEL ",point=\"2\",engine=\"pbench\"} 1234.5\n",
        "pbench_live_stall_ratio{" CONFIG_LABEL ",point=\"2\",engine=\"pbench\"} 0.125\n",
        "pbench_live_eta_seconds{" CONFIG_LABEL "} 42.5\n",
        "pbench_live_state{" CONFIG_LABEL ",state=\"measuring\"} 1\n",
        "pbench_live_state{" CONFIG_LABEL ",state=\"done\"} 0\n",
        "pbench_point_info{" CONFIG_LABEL ",point=\"1\",engine=\"pbench\",axes=\"",
        NULL,
    };
    pb_test_assert_contains(text, needles);
    assert_null(strstr(text, "# EOF"));
    assert_null(strstr(text, "NaN"));

    /* The figures are the result's, in base units. */
    for (size_t i = 0; i < r.point_count; i++) {
        const struct pb_point_result *p = &r.points[i];
        char prefix[512];
        const char *engine = i ? "torch" : "pbench";
        snprintf(prefix, sizeof(prefix),
                 "pbench_samples_per_second{" CONFIG_LABEL ",point=\"%zu\",engine=\"%s\"}", i + 1,
                 engine);
        assert_true(fabs(sample_value(text, prefix) - p->samples_per_s) <=
                    1e-9 * p->samples_per_s);
        snprintf(prefix, sizeof(prefix),
                 "pbench_stall_ratio{" CONFIG_LABEL ",point=\"%zu\",engine=\"%s\"}", i + 1, engine);
        assert_true(fabs(sample_value(text, prefix) - p->stall_pct / 100) < 1e-9);
        uint64_t errors = 0;
        for (size_t k = 0; k < p->repeat_count; k++)
            errors += p->repeats[k].errors;
        snprintf(prefix, sizeof(prefix),
                 "pbench_errors_total{" CONFIG_LABEL ",point=\"%zu\",engine=\"%s\"}", i + 1, engine);
        assert_true(sample_value(text, prefix) == (double)errors);
        snprintf(prefix, sizeof(prefix),
                 "pbench_machine_reference_seconds{" CONFIG_LABEL ",point=\"%zu\",engine=\"%s\"}",
                 i + 1, engine);
        assert_true(fabs(sample_value(text, prefix) - 0.004) < 1e-12); /* median of 2, 4, 6 ms */
        snprintf(prefix, sizeof(prefix),
                 "pbench_worker_cpu_seconds_total{" CONFIG_LABEL ",point=\"%zu\",engine=\"%s\"}",
                 i + 1, engine);
        double cpu_s = 0, workers = 2 + 2 * (double)i; /* the fixture's loader.workers axis */
        for (size_t k = 0; k < p->repeat_count; k++)
            cpu_s += p->repeats[k].worker_cpu_pct / 100 * workers * p->repeats[k].wall_s;
        assert_true(fabs(sample_value(text, prefix) - cpu_s) < 1e-6 * cpu_s);
    }
    free(text);
    pb_result_free(&r);
}

/* Checks one stage's histogram lines against its pb_hist: le bounds
 * rising and ending in +Inf, counts cumulative and exact (the values at or
 * below each bound), _count the +Inf bucket's, _sum the sum. */
static void check_histogram(const char *text, const char *labels, const struct pb_hist *h)
{
    char prefix[1024];
    snprintf(prefix, sizeof(prefix), "pbench_stage_latency_seconds_bucket%s,le=\"", labels);
    double last_le = -1;
    uint64_t last_count = 0;
    int buckets = 0;
    bool inf = false;
    for (const char *line = strstr(text, prefix); line; line = strstr(line + 1, prefix)) {
        assert_false(inf); /* nothing after +Inf */
        const char *le = line + strlen(prefix);
        const char *end = strstr(le, "\"} ");
        assert_non_null(end);
        uint64_t count = strtoull(end + 3, NULL, 10);
        assert_true(count >= last_count);
        last_count = count;
        buckets++;
        if (strncmp(le, "+Inf\"", 5) == 0) {
            inf = true;
            assert_int_equal(count, h->count);
            continue;
        }
        double bound = strtod(le, NULL);
        assert_true(bound > last_le);
        last_le = bound;
        /* The reference: every bucket whose values are all at or below the bound. */
        uint64_t bound_ns = (uint64_t)llround(bound * 1e9), at_or_below = 0;
        for (size_t b = 0; b < PB_HIST_BUCKETS; b++) {
            uint64_t lo, hi;
            pb_hist_bucket_range(b, &lo, &hi);
            if (hi <= bound_ns)
                at_or_below += h->bins[b];
            else
                assert_true(lo > bound_ns); /* a bound never splits a bucket */
        }
        assert_int_equal(count, at_or_below);
    }
    assert_true(inf);
    assert_true(buckets > 2);
    snprintf(prefix, sizeof(prefix), "pbench_stage_latency_seconds_count%s}", labels);
    assert_true(sample_value(text, prefix) == (double)h->count);
    snprintf(prefix, sizeof(prefix), "pbench_stage_latency_seconds_sum%s}", labels);
    double sum_s = (double)h->sum_ns / 1e9;
    assert_true(fabs(sample_value(text, prefix) - sum_s) <= 1e-9 * sum_s);
}

static void test_stage_histograms(void **state)
{
    (void)state;
    struct pb_result r;
    make_live_result(&r);
    char *text = metrics(&r, NULL, false);
    for (size_t i = 0; i < r.point_count; i++) {
        const struct pb_point_result *p = &r.points[i];
        assert_true(p->stage_count > 0);
        for (size_t s = 0; s < p->stage_count; s++) {
            char labels[512];
            snprintf(labels, sizeof(labels),
                     "{" CONFIG_LABEL ",point=\"%zu\",engine=\"%s\",stage=\"%s\"", i + 1,
                     i ? "torch" : "pbench", p->stages[s].name);
            check_histogram(text, labels, &p->stages[s].hist);
        }
    }
    /* Without live figures, none of the live series. */
    assert_null(strstr(text, "pbench_live_samples_per_second{"));
    free(text);
    pb_result_free(&r);
}

static void test_openmetrics(void **state)
{
    (void)state;
    struct pb_result r;
    make_live_result(&r);
    char *text = metrics(&r, &live_measuring, true);
    const char *const needles[] = {
        "# TYPE pbench_errors counter\n",
        "# TYPE pbench_worker_cpu_seconds counter\n",
        "pbench_errors_total{",
        "pbench_worker_cpu_seconds_total{",
        "# TYPE pbench_point info\n",
        "pbench_point_info{",
        "# TYPE pbench_stage_latency_seconds histogram\n",
        NULL,
    };
    pb_test_assert_contains(text, needles);
    size_t len = strlen(text);
    assert_true(len > 6 && strcmp(text + len - 6, "# EOF\n") == 0);
    assert_null(strstr(text, "# TYPE pbench_errors_total"));
    free(text);
    pb_result_free(&r);
    assert_true(pb_live_wants_openmetrics("application/openmetrics-text; version=1.0.0"));
    assert_true(pb_live_wants_openmetrics("text/plain;q=0.5,application/openmetrics-text;q=1"));
    assert_false(pb_live_wants_openmetrics("text/plain"));
    assert_false(pb_live_wants_openmetrics(""));
    assert_false(pb_live_wants_openmetrics(NULL));
}

/* Bytes that are not UTF-8 become U+FFFD; nothing needs the result. */
static void test_escaping_and_nothing_yet(void **state)
{
    (void)state;
    struct pb_live live = live_measuring;
    snprintf(live.config, sizeof(live.config), "bad\xff\xfe name");
    snprintf(live.state, sizeof(live.state), "starting");
    live.point = live.repeat = 0;
    char *text = metrics(NULL, &live, false);
    assert_non_null(strstr(text, "config=\"bad\xef\xbf\xbd\xef\xbf\xbd name\""));
    assert_non_null(strstr(text, "state=\"starting\"} 1\n"));
    assert_null(strstr(text, "pbench_live_samples_per_second{")); /* not measuring yet */
    free(text);
    text = metrics(NULL, NULL, true);
    assert_non_null(strstr(text, "# TYPE pbench_samples_per_second gauge\n"));
    free(text);
}

/* promtool, where it is installed, finds nothing wrong with the text. */
static void test_promtool(void **state)
{
    (void)state;
    if (system("command -v promtool >/dev/null 2>&1") != 0) {
        printf("# promtool is not on PATH (Debian: apt-get install prometheus): not checked\n");
        skip();
    }
    struct pb_result r;
    make_live_result(&r);
    const struct pb_live *lives[] = {&live_measuring, NULL};
    for (size_t i = 0; i < PB_ARRAY_LEN(lives); i++) {
        char *text = metrics(&r, lives[i], false);
        char path[PB_PATH_MAX], out[PB_PATH_MAX], cmd[3 * PB_PATH_MAX];
        snprintf(path, sizeof(path), "%s/metrics-%zu.txt", tmpdir, i);
        snprintf(out, sizeof(out), "%s/promtool-%zu.txt", tmpdir, i);
        pb_test_write_file(path, text, strlen(text));
        snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' > '%s' 2>&1", path, out);
        int rc = system(cmd);
        char *said = pb_test_read_file(out, NULL, false);
        if (rc != 0)
            fail_msg("promtool check metrics failed (%d):\n%s", rc, said);
        free(said);
        free(text);
    }
    pb_result_free(&r);
}

static void test_live_json(void **state)
{
    (void)state;
    const double t[] = {1, 2, 3}, rate[] = {100, NAN, 300}, stall[] = {NAN, 6, 7};
    const int point[] = {2, 2, 2}, repeat[] = {1, 1, 2};
    const struct pb_live_series kept = {.t_s = t, .samples_per_s = rate, .stall_pct = stall,
                                        .point = point, .repeat = repeat, .n = 3};
    struct pb_live live = live_measuring;
    live.eta_s = -1;
    size_t len = 0;
    char *text = pb_live_json(&live, &kept, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    if (!doc)
        fail_msg("%s: %s", text, err.text);
    assert_string_equal(json_string_value(json_object_get(doc, "config")), CONFIG_NAME);
    assert_string_equal(json_string_value(json_object_get(doc, "state")), "measuring");
    assert_string_equal(json_string_value(json_object_get(doc, "label")), "loader.workers=4");
    assert_int_equal(json_integer_value(json_object_get(doc, "point")), 2);
    assert_int_equal(json_integer_value(json_object_get(doc, "repeats")), 5);
    assert_true(json_is_null(json_object_get(doc, "eta_s")));
    assert_true(json_real_value(json_object_get(doc, "samples_per_s")) == 1234.5);
    json_t *series = json_object_get(doc, "series");
    assert_int_equal(json_array_size(json_object_get(series, "t")), 3);
    json_t *stalls = json_object_get(series, "stall_pct");
    assert_int_equal(json_array_size(stalls), 3);
    /* The first window had not closed: no stall yet. */
    assert_true(json_is_null(json_array_get(stalls, 0)));
    assert_true(json_real_value(json_array_get(stalls, 2)) == 7);
    json_t *repeats = json_object_get(series, "repeat");
    assert_int_equal(json_array_size(repeats), 3);
    assert_int_equal(json_integer_value(json_array_get(repeats, 2)), 2);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(series, "point"), 0)), 2);
    json_t *rates = json_object_get(series, "samples_per_s");
    assert_int_equal(json_array_size(rates), 3);
    assert_true(json_is_null(json_array_get(rates, 1)));
    json_decref(doc);
    free(text);
    text = pb_live_json(&live, NULL, NULL);
    assert_non_null(strstr(text, "\"series\":{\"t\":[]"));
    free(text);
}

/* The page works offline: nothing from another address, no script or
 * style file, and data only ever set as text. */
static void test_page_is_self_contained(void **state)
{
    (void)state;
    const char *page = pb_live_page();
    assert_non_null(page);
    static const char *const refused[] = {"http://", "https://", "<script src", "<link",
                                          "@import", "url(", "innerHTML", "outerHTML",
                                          "document.write", "//cdn", "src=\""};
    for (size_t i = 0; i < PB_ARRAY_LEN(refused); i++)
        if (strstr(page, refused[i]))
            fail_msg("the live page holds \"%s\"", refused[i]);
    const char *const needles[] = {"<!DOCTYPE html>", "/live.json", "/result.json",
                                   "/report.html", "textContent", "<svg", "verdict", "</html>",
                                   NULL};
    pb_test_assert_contains(page, needles);
}

int main(void)
{
    pb_test_tmpdir_use(tmpdir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metric_names_and_labels),
        cmocka_unit_test(test_stage_histograms),
        cmocka_unit_test(test_openmetrics),
        cmocka_unit_test(test_escaping_and_nothing_yet),
        cmocka_unit_test(test_promtool),
        cmocka_unit_test(test_live_json),
        cmocka_unit_test(test_page_is_self_contained),
    };
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
