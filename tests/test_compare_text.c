/* Tests for bench/report/compare_text.c: a small constructed comparison
 * (one point, five repeats a side, samples/s 20% lower in the new run)
 * rendered as the terminal table (its columns in order, a row per metric,
 * the counts and the REGRESSED line), Markdown (the same rows as a GitHub
 * table) and JSON (the counts, figures and verdicts); names printed
 * without control characters; the sentence saying why verdicts were
 * withheld. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/analyze/compare.h"
#include "bench/base/pb.h"
#include "bench/report/compare_text.h"
#include "bench/result/result.h"
#include "tests/testutil.h"

#define REPEATS 5

/* A result of one point whose repeats have the given samples/s and the
 * same stall and memory. */
static void make_side(struct pb_result *r, const double *samples_per_s)
{
    memset(r, 0, sizeof(*r));
    r->schema_version = PB_SCHEMA_VERSION;
    snprintf(r->name, sizeof(r->name), "ci");
    snprintf(r->machine.cpu_model, sizeof(r->machine.cpu_model), "Test CPU");
    r->machine.cores = r->machine.pus = 2;
    r->config = json_pack("{s s s {s s} s [{s {}} {s {s s}}] s {s i} s {s i}}", "name", "ci",
                          "dataset", "path", "data/ci", "pipeline", "read", "decode", "decoder",
                          "null", "loader", "workers", 1, "run", "repeats", REPEATS);
    assert_non_null(r->config);
    r->point_count = 1;
    r->points = calloc(1, sizeof(*r->points));
    assert_non_null(r->points);
    r->points[0].axes = json_object();
    r->points[0].repeat_count = REPEATS;
    r->points[0].repeats = calloc(REPEATS, sizeof(struct pb_repeat_result));
    assert_non_null(r->points[0].repeats);
    for (size_t i = 0; i < REPEATS; i++) {
        struct pb_repeat_result *rep = &r->points[0].repeats[i];
        rep->wall_s = 2;
        rep->samples_per_s = samples_per_s[i];
        rep->stall_pct = 10;
        rep->rss_peak_bytes = 100u << 20;
    }
    pb_point_summarize(&r->points[0]);
}

typedef void (*renderer_fn)(FILE *, const struct pb_comparison *, const char *, const char *);

/* Renders cmp with one of the three renderers, the sides named base_name
 * and next_name; the caller frees the text. */
static __attribute__((noinline)) char *render_named(renderer_fn renderer,
                                                    const struct pb_comparison *cmp,
                                                    const char *base_name, const char *next_name)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    renderer(out, cmp, base_name, next_name);
    fclose(out);
    return text;
}

/* render_named with the sides named base.json and new.json. */
static char *render(renderer_fn renderer, const struct pb_comparison *cmp)
{
    return render_named(renderer, cmp, "base.json", "new.json");
}

struct fixture {
    struct pb_result base, next;
    struct pb_comparison cmp;
};

static int setup(void **state)
{
    static const double base[REPEATS] = {1000, 1002, 998, 1001, 999};
    static const double next[REPEATS] = {800, 802, 798, 801, 799};
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    make_side(&f->base, base);
    make_side(&f->next, next);
    if (pb_compare(&f->base, &f->next, 5, &f->cmp) != PB_OK)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    pb_comparison_free(&f->cmp);
    pb_result_free(&f->base);
    pb_result_free(&f->next);
    free(f);
    return 0;
}

/* The line of text in text that starts with prefix, as a new string. */
static char *line_starting(const char *text, const char *prefix)
{
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += line != NULL)
        if (strncmp(line, prefix, strlen(prefix)) == 0)
            return strndup(line, strcspn(line, "\n"));
    fail_msg("no line starts with '%s' in:\n%s", prefix, text);
    return NULL;
}

/* Splits a line into its words (runs of non-spaces); returns the count. */
static size_t words(char *line, char **out, size_t max)
{
    size_t n = 0;
    for (char *w = strtok(line, " "); w && n < max; w = strtok(NULL, " "))
        out[n++] = w;
    return n;
}

/* The table: the two sides' names, the threshold, a header of columns in
 * order, a row per metric with base, new, change, interval, p, what the
 * data could detect and the verdict; then the counts and one line per
 * regression saying how the exit code follows. */
static void test_table(void **state)
{
    struct fixture *f = *state;
    char *text = render(pb_comparison_table, &f->cmp);
    pb_test_assert_contains(text, (const char *const[]){
                                      "base base.json -> new new.json\n",
                                      "and at least 5.0%\n",
                                      "\n1 regressed, 0 improved, 0 ambiguous\n",
                                      "\nREGRESSED: samples_per_s -20.0% (95% CI [-20.3, -19.7]%) "
                                      "at (single point); --fail-on-regression exits 3\n",
                                      NULL});
    char *header = line_starting(text, "point ");
    char *cells[16];
    static const char *const columns[] = {"point", "metric", "base", "new", "change", "95%",
                                          "CI", "p", "detectable", "verdict"};
    assert_int_equal(words(header, cells, 16), PB_ARRAY_LEN(columns));
    for (size_t i = 0; i < PB_ARRAY_LEN(columns); i++)
        assert_string_equal(cells[i], columns[i]);
    free(header);

    char *row = line_starting(text, "(single point) ");
    static const char *const samples[] = {"(single", "point)", "samples_per_s", "1000.0", "800.0",
                                          "-20.0%", "[-20.3,", "-19.7]%", "0.008", "±0.3%",
                                          "REGRESSED"};
    assert_int_equal(words(row, cells, 16), PB_ARRAY_LEN(samples));
    for (size_t i = 0; i < PB_ARRAY_LEN(samples); i++)
        assert_string_equal(cells[i], samples[i]);
    free(row);
    /* A percentage's change is in points, and an unchanged metric is same;
     * one with too few repeats says so and is not measured. */
    row = line_starting(text, "                             stall_pct ");
    static const char *const stall[] = {"stall_pct", "10.0%", "10.0%", "+0.0pp", "[+0.0,",
                                        "+0.0]pp", "1.000", "±0.0pp", "same"};
    assert_int_equal(words(row, cells, 16), PB_ARRAY_LEN(stall));
    for (size_t i = 0; i < PB_ARRAY_LEN(stall); i++)
        assert_string_equal(cells[i], stall[i]);
    free(row);
    row = line_starting(text, "                             accel_util_pct ");
    pb_test_assert_contains(row, (const char *const[]){"(too few repeats)", "never  not measured",
                                                       NULL});
    free(row);
    /* A row for each metric the comparison holds. */
    for (int m = 0; m < f->cmp.points[0].metric_count; m++) {
        char needle[sizeof(f->cmp.points[0].metrics[m].name) + 2];
        snprintf(needle, sizeof(needle), " %s ", f->cmp.points[0].metrics[m].name);
        assert_non_null(strstr(text, needle));
    }
    free(text);
}

/* Markdown: the same figures as a GitHub table, the verdict in bold. */
static void test_markdown(void **state)
{
    struct fixture *f = *state;
    char *text = render(pb_comparison_markdown, &f->cmp);
    pb_test_assert_contains(
        text,
        (const char *const[]){
            "## pbench compare\n",
            "base `base.json` → new `new.json`; a change counts when",
            "\n| point | metric | base | new | change | 95% CI | p | verdict | detectable |\n"
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n",
            "\n| (single point) | samples_per_s | 1000.0 | 800.0 | -20.0% | [-20.3, -19.7]% | 0.008 "
            "| **regressed** | ±0.3% |\n",
            "\n|  | stall_pct | 10.0% | 10.0% | +0.0pp | [+0.0, +0.0]pp | 1.000 | same | ±0.0pp |\n",
            "\n|  | rss_peak_bytes | 100.0 MiB | 100.0 MiB | +0.0% |",
            "\n**1 regressed, 0 improved, 0 ambiguous**\n",
            "\n**REGRESSED**: samples_per_s -20.0% (95% CI [-20.3, -19.7]%) at (single point)",
            NULL});
    free(text);
}

/* JSON: the counts, and per point and metric the figures as numbers and
 * the verdict by name. */
static void test_json(void **state)
{
    struct fixture *f = *state;
    char *text = render(pb_comparison_json, &f->cmp);
    json_error_t error;
    json_t *root = json_loads(text, 0, &error);
    if (!root)
        fail_msg("not JSON (%s at %d:%d):\n%s", error.text, error.line, error.column, text);
    assert_int_equal(json_integer_value(json_object_get(root, "regressions")), 1);
    assert_int_equal(json_integer_value(json_object_get(root, "improvements")), 0);
    assert_int_equal(json_integer_value(json_object_get(root, "ambiguous")), 0);
    assert_true(json_is_false(json_object_get(root, "incompatible")));
    assert_true(json_real_value(json_object_get(root, "threshold_pct")) == 5.0);
    json_t *points = json_object_get(root, "points");
    assert_int_equal(json_array_size(points), 1);
    json_t *point = json_array_get(points, 0);
    assert_string_equal(json_string_value(json_object_get(point, "point")), "(single point)");
    json_t *metrics = json_object_get(point, "metrics");
    assert_int_equal(json_array_size(metrics), (size_t)f->cmp.points[0].metric_count);
    json_t *sps = json_array_get(metrics, 0);
    assert_string_equal(json_string_value(json_object_get(sps, "metric")), "samples_per_s");
    assert_string_equal(json_string_value(json_object_get(sps, "verdict")), "regressed");
    assert_true(json_number_value(json_object_get(sps, "base")) == 1000.0);
    assert_true(json_number_value(json_object_get(sps, "new")) == 800.0);
    assert_true(fabs(json_number_value(json_object_get(sps, "change_pct")) + 20) < 1e-9);
    json_t *ci = json_object_get(sps, "ci95");
    assert_int_equal(json_array_size(ci), 2);
    assert_true(json_number_value(json_array_get(ci, 0)) <
                json_number_value(json_array_get(ci, 1)));
    json_t *repeats = json_object_get(sps, "repeats");
    assert_int_equal(json_integer_value(json_array_get(repeats, 0)), REPEATS);
    assert_int_equal(json_integer_value(json_array_get(repeats, 1)), REPEATS);
    json_t *stall = json_array_get(metrics, 1);
    assert_string_equal(json_string_value(json_object_get(stall, "metric")), "stall_pct");
    assert_string_equal(json_string_value(json_object_get(stall, "verdict")), "same");
    json_decref(root);
    free(text);
}

/* Names with an escape and a line break (the sides' file names, a point's
 * axis value): table and markdown print no control character, the file
 * names with \xNN; JSON holds valid text for the point. */
static void test_names_without_control_characters(void **state)
{
    (void)state;
    static const char hostile[] = "\x1b[31mred\nline";
    static const char shown[] = "\\x1b[31mred\\x0aline";
    static const double same[REPEATS] = {1000, 1002, 998, 1001, 999};
    struct pb_result base, next;
    make_side(&base, same);
    make_side(&next, same);
    json_object_set_new(base.points[0].axes, "dataset.tag", json_string(hostile));
    json_object_set_new(next.points[0].axes, "dataset.tag", json_string(hostile));
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&base, &next, 5, &cmp), PB_OK);
    assert_int_equal(cmp.regressions, 0);
    char *table = render_named(pb_comparison_table, &cmp, hostile, hostile);
    char *markdown = render_named(pb_comparison_markdown, &cmp, hostile, hostile);
    const char *const texts[] = {table, markdown};
    for (size_t i = 0; i < PB_ARRAY_LEN(texts); i++) {
        if (strchr(texts[i], '\x1b'))
            fail_msg("prints an escape:\n%s", texts[i]);
        assert_null(strstr(texts[i], "red\nline"));
        if (!strstr(texts[i], shown))
            fail_msg("no %s in:\n%s", shown, texts[i]);
        assert_non_null(strstr(texts[i], "dataset.tag="));
    }
    pb_test_assert_contains(table, (const char *const[]){"\n0 regressed, 0 improved", NULL});
    free(table);
    free(markdown);
    char *text = render_named(pb_comparison_json, &cmp, hostile, hostile);
    json_t *root = json_loads(text, 0, NULL);
    assert_non_null(root);
    const char *point = json_string_value(
        json_object_get(json_array_get(json_object_get(root, "points"), 0), "point"));
    assert_non_null(point);
    assert_non_null(strstr(point, "dataset.tag="));
    json_decref(root);
    free(text);
    pb_comparison_free(&cmp);
    pb_result_free(&base);
    pb_result_free(&next);
}

/* Nothing withheld: no sentence. Other processes on one side: a sentence
 * with the figure. */
static void test_interference_text(void **state)
{
    struct fixture *f = *state;
    char text[512] = "x";
    pb_interference_text(&f->cmp.points[0], text, sizeof(text));
    assert_string_equal(text, "");

    static const double base_sps[REPEATS] = {1000, 1002, 998, 1001, 999};
    struct pb_result base, next;
    make_side(&base, base_sps);
    make_side(&next, base_sps);
    for (size_t i = 0; i < REPEATS; i++)
        next.points[0].repeats[i].other_cpu_pct = 60;
    pb_point_summarize(&next.points[0]);
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&base, &next, 5, &cmp), PB_OK);
    pb_interference_text(&cmp.points[0], text, sizeof(text));
    pb_test_assert_contains(text, (const char *const[]){
                                      "other processes took 0% of the machine's CPU on the base "
                                      "side", "and 60% on the new", "withheld (disturbed)", NULL});
    pb_comparison_free(&cmp);
    pb_result_free(&base);
    pb_result_free(&next);
}

/* The cost of a setting change is said of the figures listed beside it:
 * CPU per sample that rose with the settings is not "more memory". */
static void test_setting_cost_named_by_its_metric(void **state)
{
    struct fixture *f = *state;
    struct pb_point_cmp *pc = &f->cmp.points[0];
    for (int m = 0; m < pc->metric_count; m++) {
        struct pb_metric_cmp *mc = &pc->metrics[m];
        mc->cost_of_setting = strcmp(mc->name, "cpu_ns_per_sample") == 0;
        if (mc->cost_of_setting)
            mc->verdict = PB_VERDICT_REGRESSED;
    }
    f->cmp.setting_costs = 1;
    char *text = render(pb_comparison_table, &f->cmp);
    pb_test_assert_contains(text, (const char *const[]){
        "the cost of the setting change: cpu_ns_per_sample",
        "more CPU per sample comes with the settings changed above", NULL});
    assert_null(strstr(text, "more memory"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_markdown),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_names_without_control_characters),
        cmocka_unit_test(test_interference_text),
        cmocka_unit_test_setup_teardown(test_setting_cost_named_by_its_metric, setup, teardown),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
