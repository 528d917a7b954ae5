/* Tests for bench/report/report.c: the result as a terminal table,
 * Markdown and JSON (with the CSV where a test checks a figure in every
 * format): what each shows, names printed without control characters or
 * HTML, repeats cut short, noise that cannot be judged, the overhead, the
 * step-time cap, the verdict last and the device side. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/report/format.h"
#include "bench/report/report.h"
#include "bench/result/result.h"
#include "tests/result_fixture.h"
#include "tests/testutil.h"

static void test_report_formats(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 11);

    char *table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(
        table, (const char *const[]){
                   /* the last of the 3 repeats is marked interrupted: cut short */
                   "image-basic", "samples/s", "(median of 2 complete repeats; 1 cut short",
                   "Test CPU @ 3.0GHz",
                   "workers=4", "pin_memory=true", "sweep: 2 points, fastest first",
                   "recommendation", "accelerator" /* run.step_ms > 0 */, "decode", "normalize",
                   "cpu/sample", "wall%", "data/a.jpg: corrupt JPEG data",
                   /* the points' warnings of one cause, once */
                   "warning: custom warning 0", "alike at 1 more, with their figures",
                   "warning: dataset (512 MiB) fits in the page cache",
                   "interrupted: partial results", "instrumentation overhead: 1.2 %", NULL});
    free(table);

    char *markdown = render(&result, PB_FORMAT_MARKDOWN);
    pb_test_assert_contains(
        markdown,
        (const char *const[]){"# pbench: image-basic", "## Sweep: 2 points",
                              "## Recommended point: loader.workers=",
                              "| stage | count | mean | p50 | p90 | p95 | p99 | max | cpu | cpu/sample | wall% |",
                              "| samples/s |", "| resize |", "- warning: custom warning 0", NULL});
    free(markdown);

    char *csv = render(&result, PB_FORMAT_CSV);
    size_t rows = 1;
    for (size_t i = 0; i < result.point_count; i++)
        rows += result.points[i].stage_count;
    assert_int_equal(count_lines(csv), rows);
    const char *head = "run,created,point,loader.workers,pipeline.resize.size,axes,samples_per_s,";
    assert_memory_equal(csv, head, strlen(head));
    /* The axes value holds a comma, so the field is quoted. */
    assert_non_null(strstr(csv, "\nimage-basic,2025-01-02T03:04:05Z,0,2,\"224,224\","
                                "\"loader.workers=2;pipeline.resize.size=224,224\","));
    assert_non_null(strstr(csv, ",read,"));
    free(csv);

    char *json_text = render(&result, PB_FORMAT_JSON);
    json_error_t error;
    json_t *root = json_loads(json_text, 0, &error);
    assert_non_null(root);
    struct pb_result back;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_OK);
    assert_result_equal(&result, &back);
    pb_result_free(&back);
    json_decref(root);
    free(json_text);

    /* Without run.step_ms there is no accelerator line; one point, no
     * comparison table. */
    json_object_del(result.config, "run");
    result.point_count = 1;
    table = render(&result, PB_FORMAT_TABLE);
    assert_null(strstr(table, "accelerator"));
    assert_null(strstr(table, "comparison"));
    free(table);
    result.point_count = 2;
    pb_result_free(&result);
}

/* Names from the result (its name, machine, stages, axes, error files,
 * warnings) are printed without control characters in the table, markdown
 * and CSV: an escape or a newline shows as \xNN. JSON keeps them exact. */
static void test_report_names_without_control_characters(void **state)
{
    (void)state;
    static const char hostile[] = "\x1b[31mred\nline";
    static const char shown[] = "\\x1b[31mred\\x0aline";
    struct pb_result result;
    make_result(&result, 11);
    snprintf(result.name, sizeof(result.name), "%s", hostile);
    snprintf(result.machine.hostname, sizeof(result.machine.hostname), "%s", hostile);
    struct pb_point_result *p = &result.points[0];
    snprintf(p->stages[0].name, sizeof(p->stages[0].name), "%s", hostile);
    snprintf(p->error_files[0], sizeof(p->error_files[0]), "%s", hostile);
    p->error_file_count = p->error_file_count ? p->error_file_count : 1;
    snprintf(p->warnings[0], sizeof(p->warnings[0]), "%s", hostile);
    p->warning_count = p->warning_count ? p->warning_count : 1;
    snprintf(result.warnings[0], sizeof(result.warnings[0]), "%s", hostile);
    result.warning_count = result.warning_count ? result.warning_count : 1;
    for (size_t i = 0; i < result.point_count; i++)
        json_object_set_new(result.points[i].axes, "\x1b[2Jaxis", json_string(hostile));
    for (int f = PB_FORMAT_TABLE; f <= PB_FORMAT_CSV; f++) {
        char *text = render(&result, (enum pb_format)f);
        if (f == PB_FORMAT_JSON) {
            json_t *root = json_loads(text, 0, NULL);
            assert_non_null(root);
            assert_string_equal(json_string_value(json_object_get(root, "name")), hostile);
            json_decref(root);
        } else {
            if (strchr(text, '\x1b'))
                fail_msg("format %d prints an escape:\n%s", f, text);
            assert_null(strstr(text, "red\nline"));
            assert_non_null(strstr(text, shown));
        }
        free(text);
    }
    pb_result_free(&result);
}

/* Text cells of CSV and TSV that a spreadsheet would run as a formula (=,
 * +, -, @ first) get a leading ' (OWASP); numbers are written as they are.
 * Markdown shows names from the result as written, never as HTML. */
static void test_report_names_not_formulas_or_html(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 13);
    struct pb_point_result *p = &result.points[0];
    assert_true(p->stage_count >= 2);
    snprintf(p->stages[0].name, sizeof(p->stages[0].name), "=HYPERLINK(\"http://x\",\"y\")");
    snprintf(p->stages[1].name, sizeof(p->stages[1].name), "@SUM(A1)");
    snprintf(result.name, sizeof(result.name), "<img src=x onerror=alert(1)> & co");
    snprintf(result.machine.hostname, sizeof(result.machine.hostname), "<b>host</b>");
    snprintf(p->warnings[0], sizeof(p->warnings[0]), "<script>warn</script>");
    p->warning_count = p->warning_count ? p->warning_count : 1;
    p->samples_per_s = -5; /* a number, not a formula */
    char *csv = render(&result, PB_FORMAT_CSV);
    pb_test_assert_contains(csv, (const char *const[]){
                                     ",\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",",
                                     ",'@SUM(A1),", ",-5,", NULL});
    assert_null(strstr(csv, ",=HYPERLINK"));
    assert_null(strstr(csv, ",@SUM"));
    free(csv);
    char *tsv = render(&result, PB_FORMAT_TSV);
    pb_test_assert_contains(tsv, (const char *const[]){"\t'=HYPERLINK(\"http://x\",\"y\")\t",
                                                       "\t'@SUM(A1)\t", "\t-5\t", NULL});
    free(tsv);
    char *md = render(&result, PB_FORMAT_MARKDOWN);
    pb_test_assert_contains(md, (const char *const[]){
                                    "# pbench: &lt;img src=x onerror=alert(1)&gt; &amp; co",
                                    "&lt;b&gt;host&lt;/b&gt;",
                                    "&lt;script&gt;warn&lt;/script&gt;", NULL});
    if (strstr(md, "<img") || strstr(md, "<b>") || strstr(md, "<script"))
        fail_msg("markdown holds raw HTML from names:\n%s", md);
    free(md);
    /* The terminal table shows the names as they are. */
    char *table = render(&result, PB_FORMAT_TABLE);
    assert_non_null(strstr(table, "<img src=x onerror=alert(1)> & co"));
    free(table);
    pb_result_free(&result);
}

/* A repeat cut short by a signal stays in the result, marked, but the
 * table says the point's figures leave it out. */
static void test_report_repeat_cut_short(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 12);
    struct pb_point_result *p = &result.points[0];
    assert_true(p->repeat_count >= 2);
    p->repeats[p->repeat_count - 1].interrupted = true;
    char *text = render(&result, PB_FORMAT_TABLE);
    char expected[64];
    snprintf(expected, sizeof(expected), "median of %zu complete repeat", p->repeat_count - 1);
    /* And why: a stop (make_result's run was interrupted); test_stop.c
     * has one cut by the engine's failure. */
    pb_test_assert_contains(text, (const char *const[]){expected,
                                                        "1 cut short by a stop, left out",
                                                        "s (cut short)", NULL});
    free(text);
    result.interrupted = false;
    text = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(text, (const char *const[]){"1 cut short, left out", NULL});
    free(text);
    pb_result_free(&result);
}

/* Keeps a point's first repeat only, with the windowed noise the stopping
 * rule leaves when too few windows closed (0), and summarizes it again. */
static void keep_one_repeat(struct pb_point_result *p)
{
    for (size_t r = 1; r < p->repeat_count; r++) {
        free(p->repeats[r].batch_records);
        free(p->repeats[r].rss);
        free(p->repeats[r].stages);
    }
    p->repeat_count = 1;
    p->repeats[0].interrupted = false;
    p->repeats[0].window_noise = 0;
    pb_point_summarize(p);
}

/* Noise that cannot be judged is said to be unknown, never ± 0.0%. */
static void test_report_noise_unknown(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 13);
    for (size_t i = 0; i < result.point_count; i++)
        keep_one_repeat(&result.points[i]);
    char *table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){"noise unknown (", " windows)",
                                                         "(1 repeat: noise unknown", NULL});
    assert_null(strstr(table, "±0.0%"));
    assert_null(strstr(table, "± 0.0%"));
    free(table);
    char *csv = render(&result, PB_FORMAT_CSV);
    char row[64];
    snprintf(row, sizeof(row), ",%.10g,,", result.points[0].samples_per_s); /* empty noise */
    assert_non_null(strstr(csv, row));
    free(csv);
    pb_result_free(&result);
}

/* An overhead whose interval holds figures timing cannot cause (a faster
 * run with timing on) is below the noise, with the noise quoted. */
static void test_report_overhead_below_noise(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 14);
    result.overhead_pct = -21.0;
    result.overhead_noise_pct = 8.7;
    char *table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){
                                       "instrumentation overhead: below the noise (± 8.7 %", NULL});
    assert_null(strstr(table, "-21.0 % of throughput"));
    free(table);
    result.overhead_pct = 3.0;
    result.overhead_noise_pct = 4.0; /* 3 ± 4 reaches below 0 */
    table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){"below the noise (± 4.0 %", NULL});
    free(table);
    pb_result_free(&result);
}

/* Points at the step-time cap (batch 32 / 12.5 ms = 2560 samples/s) show
 * it in place of a low efficiency, and in the scaling line. */
static void test_report_step_time_cap(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 15);
    result.calibration.measured = true;
    result.calibration.single_core_samples_per_s = 5000;
    result.calibration.cores = 32;
    for (size_t i = 0; i < result.point_count; i++)
        result.points[i].accel_util_pct = 95;
    char *table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){
                                       "at the step-time cap (2560 samples/s max)",
                                       "the loop is at the step-time cap (2560 samples/s max",
                                       NULL});
    assert_null(strstr(table, "Knee at"));
    free(table);
    pb_result_free(&result);
}

/* Asserts that text has one verdict line and after it only suggestions
 * (each line starting with try_prefix) and the capacity and engines lines
 * that belong to the verdict. */
static void __attribute__((noinline)) assert_verdict_last(const char *text, const char *try_prefix)
{
    const char *verdict = strstr(text, "\nverdict: ");
    assert_non_null(verdict);
    assert_null(strstr(verdict + 1, "\nverdict: "));
    for (const char *line = strchr(verdict + 1, '\n'); line && line[1];
         line = strchr(line + 1, '\n'))
        assert_true(strncmp(line + 1, try_prefix, strlen(try_prefix)) == 0 || line[1] == '\n' ||
                    strstr(line + 1, "capacity: ") == line + 1 + strspn(line + 1, " ") ||
                    strstr(line + 1, "engines: ") == line + 1 + strspn(line + 1, " "));
}

/* The last block of the table and of Markdown is the verdict line and its
 * suggestions. */
static void test_report_ends_with_verdict(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 16);
    char *text = render(&result, PB_FORMAT_TABLE);
    assert_verdict_last(text, "  try: ");
    free(text);
    text = render(&result, PB_FORMAT_MARKDOWN);
    assert_verdict_last(text, "- try: ");
    free(text);
    pb_result_free(&result);
}

/* Stage tables carry p95 beside p50, p90 and p99, from the merged
 * histograms. */
static void test_report_p95_column(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 17);
    char *csv = render(&result, PB_FORMAT_CSV);
    const struct pb_hist *h = &result.points[0].stages[0].hist;
    char cells[128];
    snprintf(cells, sizeof(cells), ",%llu,%llu,%llu,", (unsigned long long)pb_hist_quantile(h, 0.90),
             (unsigned long long)pb_hist_quantile(h, 0.95),
             (unsigned long long)pb_hist_quantile(h, 0.99));
    pb_test_assert_contains(csv, (const char *const[]){"p50_ns,p90_ns,p95_ns,p99_ns,", cells, NULL});
    free(csv);
    char *markdown = render(&result, PB_FORMAT_MARKDOWN);
    pb_test_assert_contains(markdown, (const char *const[]){"| p90 | p95 | p99 |", NULL});
    free(markdown);
    pb_result_free(&result);
}

/* The device side of a result in the table and the CSV: copy rate
 * against the calibrated peak, overlap, clocks, device rows (the GPU run
 * itself needs a device; this is its rendering). */
static void test_gpu_result_rendered(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 5);
    add_gpu_side(&result);
    char *table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(
        table,
        (const char *const[]){
            "19.27 GB/s pinned, 36.8 MiB a batch = 79% of this machine's "
            "pinned peak (24.5 GB/s, calibrate --gpu)",
            "75 % of copy time ran while the GPU computed", "GPU busy", "2.0 % on copies finishing",
            "1980 MHz at start, 1755 MHz at end (max 1980); slowed: power cap", "on the GPU",
            "copy GB/s", "pinned 24.5 GB/s, pageable 9.5 GB/s (calibrated)", NULL});
    free(table);
    char *csv = render(&result, PB_FORMAT_CSV);
    assert_non_null(strstr(csv, "gpu:to_device"));
    free(csv);
    pb_result_free(&result);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_formats),
        cmocka_unit_test(test_report_names_without_control_characters),
        cmocka_unit_test(test_report_names_not_formulas_or_html),
        cmocka_unit_test(test_report_repeat_cut_short),
        cmocka_unit_test(test_report_noise_unknown),
        cmocka_unit_test(test_report_overhead_below_noise),
        cmocka_unit_test(test_report_step_time_cap),
        cmocka_unit_test(test_report_ends_with_verdict),
        cmocka_unit_test(test_report_p95_column),
        cmocka_unit_test(test_gpu_result_rendered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
