/* The HTML report: the SVG helper's axes, escaping and missing values, and
 * the page pbench report --format html writes for a 2x2 sweep (charts,
 * verdict, no script, written atomically), and compare's page. Rendering
 * in a browser is tests/test_html_render.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/report/svg.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-html-XXXXXX";
static const char *source_dir;

/* The SVG text of one chart. */
static char *render_chart(const struct pb_svg_chart *c)
{
    char *text = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&text, &size);
    assert_non_null(mem);
    pb_svg_line_chart(mem, c);
    fclose(mem);
    return text;
}

__attribute__((noinline)) static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0, at = 0;
    const char *hit;
    while ((hit = strstr(text + at, needle)) != NULL) {
        n++;
        at = (size_t)(hit - text) + 1;
    }
    return n;
}

static void test_log_axis_of_durations(void **state)
{
    (void)state;
    double x[] = {900, 12e3, 4.5e6, NAN, -1}, y[] = {0.1, 0.5, 1, 0.7, 0.9};
    struct pb_svg_series s = {.label = "decode <p50> & more", .count = 5, .x = x, .y = y,
                              .marked = -1};
    struct pb_svg_rule q = {0.99, "p99", false};
    struct pb_svg_chart c = {.title = "CDF", .x_label = "time", .y_label = "fraction",
                             .x_log = true, .x_ns = true, .series_count = 1, .series = &s,
                             .hrule_count = 1, .hrules = &q};
    char *svg = render_chart(&c);
    /* Decades from 100 ns to 10 ms, labelled in their units. */
    pb_test_assert_contains(svg, (const char *const[]){"<svg", "100 ns", "1 µs", "10 µs",
                                                        "1 ms", "10 ms", "p99",
                                                        "decode &lt;p50&gt; &amp; more", NULL});
    /* Values a log axis cannot show are left out, never written as nan. */
    assert_null(strstr(svg, "nan"));
    assert_null(strstr(svg, "inf"));
    assert_int_equal(count_of(svg, "<svg"), 1);
    assert_int_equal(count_of(svg, "</svg>"), 1);
    free(svg);
}

static void test_linear_axis_and_marks(void **state)
{
    (void)state;
    double x[] = {0, 1, 2}, y[] = {1200, 2500, 2400}, err[] = {50, 60, 0};
    struct pb_svg_series s = {.label = "batch_size=16", .count = 3, .x = x, .y = y, .y_err = err,
                              .marked = 1, .mark_label = "recommended", .dots = true};
    const char *names[] = {"1", "2", "4"};
    struct pb_svg_chart c = {.title = "throughput", .x_label = "loader.workers",
                             .y_label = "samples/s", .y_from_zero = true, .x_names = names,
                             .x_name_count = 3, .series_count = 1, .series = &s};
    char *svg = render_chart(&c);
    pb_test_assert_contains(svg, (const char *const[]){">0<", ">1000<", ">2000<", ">4<",
                                                        "recommended", "samples/s", NULL});
    assert_int_equal(count_of(svg, "<circle"), 3 + 1); /* dots and the ring */
    assert_int_equal(count_of(svg, "<path"), 2);      /* two noise bars */
    free(svg);

    /* No data at all: a chart that says so. */
    struct pb_svg_chart empty = {.title = "nothing", .x_label = "x"};
    svg = render_chart(&empty);
    pb_test_assert_contains(svg, (const char *const[]){"no data to plot", "</svg>", NULL});
    free(svg);
}

static void test_stacked_bars_and_forest(void **state)
{
    (void)state;
    const char *bars[] = {"workers=1", "workers=2"}, *layers[] = {"read", "decode"};
    double values[] = {10, 300, 12, NAN};
    struct pb_svg_bars b = {.title = "stages", .x_label = "µs", .bar_count = 2, .layer_count = 2,
                            .bar_names = bars, .layer_names = layers, .values = values,
                            .highlighted = 0};
    char *text = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&text, &size);
    pb_svg_stacked_bars(mem, &b);
    struct pb_svg_interval rows[] = {{"samples_per_s", 8, 3, 12, 1, NULL},
                                     {"stall_pct", -1, -4, 2, 0, "disturbed"}};
    struct pb_svg_forest f = {.title = "change", .x_label = "%", .band = 5, .row_count = 2,
                              .rows = rows};
    pb_svg_forest_chart(mem, &f);
    fclose(mem);
    /* Three drawn layers (the missing one is left out) plus the legend's. */
    assert_int_equal(count_of(text, "<rect x=") - count_of(text, "fill=\"none\""), 3 + 2 + 1);
    pb_test_assert_contains(text, (const char *const[]){"read: 10", "decode: 300", "improved",
                                                         "disturbed", "samples_per_s", NULL});
    assert_null(strstr(text, "nan"));
    free(text);
}

/* Runs pbench; fails the test with its stderr unless it exits 0. */
static void pbench_ok(const char *args)
{
    char *err;
    int rc = pb_test_run_pbench(workdir, args, &err);
    if (rc != 0)
        fail_msg("pbench %s: exit %d: %s", args, rc, err);
    free(err);
}

#define SWEEP                                                                                   \
    "-s dataset.path=data -s dataset.generate.count=64 -s dataset.generate.size_bytes=4096 "   \
    "-s run.warmup_batches=2 -s run.min_time_s=0.2 -s run.max_time_s=0.5 "                    \
    "-s run.window_s=0.05 -s pipeline.decode.cost_us=100 -s pipeline.decode.width=32 "        \
    "-s pipeline.decode.height=32 -s run.step_ms=1 -s run.repeats=2 --no-calibrate -q "      \
    "-a loader.workers=1,2 -a loader.batch_size=4,8 "

static void test_report_page_of_a_sweep(void **state)
{
    (void)state;
    char args[2048], path[600];
    snprintf(args, sizeof(args), "run '%s/configs/null.yaml' " SWEEP "-o sweep.json",
             source_dir);
    pbench_ok(args);
    pbench_ok("report sweep.json --format html -o r.html");
    snprintf(path, sizeof(path), "%s/r.html", workdir);
    char *page = pb_test_read_file(path, NULL, true);
    /* Sweep (throughput and utilization against both axes), stage
     * breakdown, the CDF and four timelines of each point. */
    assert_true(count_of(page, "<svg") >= 4 + 1 + 4 * 5);
    assert_int_equal(count_of(page, "<svg"), count_of(page, "</svg>"));
    pb_test_assert_contains(
        page, (const char *const[]){"<!DOCTYPE html>", "verdict", "recommended",
                                    "throughput vs loader.workers",
                                    "accelerator utilization vs loader.batch_size",
                                    "stage breakdown per point", "latency CDF per stage",
                                    "resident memory (RSS)", "queue depth", "decode: p50",
                                    "workers=2 batch_size=8", "</html>", NULL});
    /* Self-contained: nothing to run, nothing fetched. */
    assert_null(strstr(page, "<script"));
    assert_null(strstr(page, "http://") && !strstr(page, "http://www.w3.org/2000/svg")
                    ? "http://"
                    : NULL);
    assert_null(strstr(page, "https://"));
    /* No figure rendered as nan or inf ("dominant" is a word, not a figure). */
    static const char *const not_numbers[] = {">nan", " nan", "\"nan", "-nan", ",nan", ">inf",
                                              " inf ", "\"inf"};
    for (size_t i = 0; i < sizeof(not_numbers) / sizeof(not_numbers[0]); i++)
        if (strstr(page, not_numbers[i]))
            fail_msg("the page has '%s'", not_numbers[i]);
    free(page);

    /* A growth over repeats too short to judge is shown as that, not as
     * its slope projected to 1000 batches (which reads as a leak). */
    snprintf(path, sizeof(path), "%s/sweep.json", workdir);
    json_t *r = json_load_file(path, 0, NULL);
    assert_non_null(r);
    json_t *growth = json_pack("{s f s f s f s i s i s b s b}", "mib_per_1000_batches", 520.59,
                               "ci95_low", 400.0, "ci95_high", 640.0, "samples", 40, "repeats",
                               2, "significant", 1, "judged", 0);
    json_object_set_new(json_array_get(json_object_get(r, "points"), 0), "memory_growth", growth);
    assert_int_equal(json_dump_file(r, path, 0), 0);
    json_decref(r);
    pbench_ok("report sweep.json --format html -o short.html");
    snprintf(path, sizeof(path), "%s/short.html", workdir);
    page = pb_test_read_file(path, NULL, true);
    assert_non_null(strstr(page, "repeats too short to judge"));
    assert_null(strstr(page, "520.59"));
    free(page);

    /* The same page on stdout without -o, and -o into a missing folder fails. */
    pbench_ok("report sweep.json --format html");
    snprintf(path, sizeof(path), "%s/out.txt", workdir);
    char *printed = pb_test_read_file(path, NULL, true);
    assert_true(count_of(printed, "<svg") >= 4);
    free(printed);
    char *err;
    assert_int_equal(pb_test_run_pbench(workdir, "report sweep.json -f html -o no/such/r.html", &err),
                     1);
    free(err);
}

static void test_compare_page(void **state)
{
    (void)state;
    char args[2048], path[600];
    snprintf(args, sizeof(args),
             "run '%s/configs/null.yaml' " SWEEP "-s pipeline.decode.cost_us=200 -o slower.json",
             source_dir);
    pbench_ok(args);
    char *err;
    /* The decoder's cost differs, so the results need --force. */
    int rc = pb_test_run_pbench(workdir,
                                "compare sweep.json slower.json --force --format html -o c.html",
                                &err);
    assert_true(rc == 0 || rc == 3);
    free(err);
    snprintf(path, sizeof(path), "%s/c.html", workdir);
    char *page = pb_test_read_file(path, NULL, true);
    assert_int_equal(count_of(page, "<svg"), 4); /* one interval chart per point */
    pb_test_assert_contains(page, (const char *const[]){"pbench compare", "samples_per_s",
                                                         "95% interval", "workers=2", NULL});
    free(page);
}

int main(void)
{
    source_dir = getenv("PBENCH_SOURCE_DIR");
    if (!source_dir || !getenv("PBENCH_BINARY")) {
        fprintf(stderr, "PBENCH_BINARY and PBENCH_SOURCE_DIR must be set (ctest sets them)\n");
        return 1;
    }
    pb_test_tmpdir_use(workdir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_axis_of_durations),
        cmocka_unit_test(test_linear_axis_and_marks),
        cmocka_unit_test(test_stacked_bars_and_forest),
        cmocka_unit_test(test_report_page_of_a_sweep),
        cmocka_unit_test(test_compare_page),
    };
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
