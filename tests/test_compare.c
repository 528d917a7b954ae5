/* The comparison's statistics against known values and plain reference
 * implementations, its false-alarm rate and power on synthetic repeats of
 * known distributions, and the compatibility checks. */
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
#include <unistd.h>

#include "bench/analyze/compare.h"
#include "bench/analyze/history.h"
#include "bench/base/pb.h"
#include "bench/base/stats.h"
#include "bench/report/format.h"
#include "bench/report/report.h"
#include "tests/testutil.h"

/* The normal quantiles behind "detectable": two-sided 5%, 80% power. */
#define Z_TEST_ALPHA 1.959964
#define Z_TEST_POWER 0.841621

static uint64_t rng = 99;
static double normal(double mean, double sd)
{
    rng = pb_mix64(rng);
    double u1 = ((double)(rng >> 11) + 1) / 9007199254740993.0;
    rng = pb_mix64(rng);
    double u2 = (double)(rng >> 11) / 9007199254740992.0;
    return mean + sd * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* Reference: the two-sided exact p-value by enumerating every split of the
 * pooled sample into groups of n and m (fine for n + m <= 12). */
static double brute_force_p(const double *x, size_t n, const double *y, size_t m)
{
    double all[16];
    memcpy(all, x, n * sizeof(double));
    memcpy(all + n, y, m * sizeof(double));
    size_t total = n + m;
    double u_obs = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < m; j++)
            u_obs += x[i] > y[j] ? 1 : x[i] == y[j] ? 0.5 : 0;
    double nm = (double)n * (double)m;
    double extreme = fabs(u_obs - nm / 2);
    long hits = 0, splits = 0;
    for (unsigned mask = 0; mask < (1u << total); mask++) {
        if ((size_t)__builtin_popcount(mask) != n)
            continue;
        double u = 0;
        for (size_t i = 0; i < total; i++)
            if (mask & (1u << i))
                for (size_t j = 0; j < total; j++)
                    if (!(mask & (1u << j)))
                        u += all[i] > all[j] ? 1 : all[i] == all[j] ? 0.5 : 0;
        splits++;
        if (fabs(u - nm / 2) >= extreme - 1e-9)
            hits++;
    }
    return (double)hits / (double)splits;
}

static void test_mann_whitney_known_values(void **state)
{
    (void)state;
    const double x[] = {1, 2, 3, 4, 5}, y[] = {6, 7, 8, 9, 10};
    double u;
    /* Complete separation of 5 and 5: p = 2 / C(10, 5) = 0.0079365. */
    assert_true(fabs(pb_mann_whitney(x, 5, y, 5, &u) - 2.0 / 252.0) < 1e-9);
    assert_true(u == 0);
    assert_true(fabs(pb_mann_whitney(y, 5, x, 5, &u) - 2.0 / 252.0) < 1e-9);
    assert_true(u == 25);
    /* Identical groups: nothing to see. */
    assert_true(pb_mann_whitney(x, 5, x, 5, NULL) > 0.99);
    /* 3 vs 4 with U = 2: P(U <= 2) = (1 + 1 + 2) / C(7, 3) = 4/35, so the
     * two-sided p is 8/35 = 0.2286. */
    const double a[] = {1.1, 2.2, 3.3}, b[] = {2.0, 4.4, 5.5, 6.6};
    assert_true(fabs(pb_mann_whitney(a, 3, b, 4, &u) - 8.0 / 35.0) < 1e-9);
    assert_true(u == 2);
}

static void test_mann_whitney_against_enumeration(void **state)
{
    (void)state;
    for (int trial = 0; trial < 40; trial++) {
        size_t n = 2 + (size_t)(trial % 5), m = 2 + (size_t)((trial / 5) % 5);
        double x[8], y[8];
        for (size_t i = 0; i < n; i++)
            x[i] = normal(0, 1);
        for (size_t j = 0; j < m; j++)
            y[j] = normal(trial % 3 ? 0.8 : 0, 1);
        double p = pb_mann_whitney(x, n, y, m, NULL), ref = brute_force_p(x, n, y, m);
        if (fabs(p - ref) > 1e-9)
            fail_msg("n=%zu m=%zu: p %.6f, enumeration %.6f", n, m, p, ref);
    }
}

static void test_mann_whitney_normal_approximation(void **state)
{
    (void)state;
    /* With ties the normal approximation is used; it must agree with the
     * enumeration to within 0.03 on moderate samples. */
    const double x[] = {1, 2, 2, 3, 4, 5}, y[] = {2, 3, 5, 6, 6, 7};
    double p = pb_mann_whitney(x, 6, y, 6, NULL);
    double ref = brute_force_p(x, 6, y, 6);
    assert_true(fabs(p - ref) < 0.03);
}

static void test_bootstrap_coverage(void **state)
{
    (void)state;
    /* Two normal samples of 8 whose medians' true ratio is 1.1: the 95%
     * percentile-bootstrap interval must cover it in at least 85% of 300
     * trials (the percentile bootstrap undercovers a little at n = 8). */
    int covered = 0, trials = 300;
    for (int t = 0; t < trials; t++) {
        double x[8], y[8];
        for (int i = 0; i < 8; i++) {
            x[i] = normal(100, 4);
            y[i] = normal(110, 4.4);
        }
        double lo, hi;
        pb_bootstrap_ratio_ci(x, 8, y, 8, 2000, 0.95, (uint64_t)t + 1, &lo, &hi);
        assert_true(lo <= hi);
        covered += lo <= 1.1 && 1.1 <= hi;
    }
    double coverage = (double)covered / trials;
    print_message("bootstrap coverage of a 95%% interval at n = 8: %.1f%%\n", 100 * coverage);
    assert_true(coverage >= 0.85);
}

/* A result of one point whose repeats have the given samples/s. */
static void make_result(struct pb_result *r, const double *sps, size_t n, const char *cpu,
                        double cost_us)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->machine.cpu_model, sizeof(r->machine.cpu_model), "%s", cpu);
    r->machine.cores = r->machine.pus = 2;
    r->config = json_pack("{s s s {s s} s [{s {}} {s {s s s f}}] s {s i} s {s i}}", "name", "ci",
                          "dataset", "path", "data/ci", "pipeline", "read", "decode", "decoder",
                          "null", "cost_us", cost_us, "loader", "workers", 1, "run", "repeats",
                          (int)n);
    r->points = calloc(1, sizeof(*r->points));
    r->point_count = 1;
    r->points[0].axes = json_object();
    r->points[0].repeats = calloc(n, sizeof(struct pb_repeat_result));
    r->points[0].repeat_count = n;
    for (size_t i = 0; i < n; i++) {
        r->points[0].repeats[i].samples_per_s = sps[i];
        r->points[0].repeats[i].stall_pct = 10;
        r->points[0].repeats[i].rss_peak_bytes = 100u << 20;
    }
}

/* The samples/s comparison of n against n repeats drawn with the given
 * means and relative noise. */
static struct pb_metric_cmp samples_cmp(size_t n, double base_mean, double next_mean, double noise,
                                        double threshold_pct)
{
    double a[64], b[64];
    for (size_t i = 0; i < n; i++) {
        a[i] = normal(base_mean, base_mean * noise);
        b[i] = normal(next_mean, next_mean * noise);
    }
    struct pb_result x, y;
    make_result(&x, a, n, "cpu", 300);
    make_result(&y, b, n, "cpu", 300);
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&x, &y, threshold_pct, &cmp), PB_OK);
    assert_false(cmp.incompatible);
    assert_int_equal(cmp.point_count, 1);
    struct pb_metric_cmp m = cmp.points[0].metrics[0];
    assert_string_equal(cmp.points[0].metrics[0].name, "samples_per_s");
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
    return m;
}

static enum pb_verdict verdict_of(double base_mean, double next_mean, double noise, double thr)
{
    return samples_cmp(8, base_mean, next_mean, noise, thr).verdict;
}

static void test_false_alarms_and_power(void **state)
{
    (void)state;
    /* 8 repeats, 2% noise per repeat, threshold 5%. */
    int trials = 200, alarms = 0, detected_slow = 0, detected_fast = 0, tiny_regressed = 0;
    int aa_same = 0;
    for (int t = 0; t < trials; t++) {
        enum pb_verdict v = verdict_of(1000, 1000, 0.02, 5);
        alarms += v == PB_VERDICT_REGRESSED || v == PB_VERDICT_IMPROVED;
        aa_same += v == PB_VERDICT_SAME;
        detected_slow += verdict_of(1000, 900, 0.02, 5) == PB_VERDICT_REGRESSED;
        detected_fast += verdict_of(1000, 1100, 0.02, 5) == PB_VERDICT_IMPROVED;
        tiny_regressed += verdict_of(1000, 990, 0.02, 5) == PB_VERDICT_REGRESSED;
    }
    print_message("A/A: %d%% same, %d%% false alarms; 10%% slower detected %d%%; 10%% faster "
                  "detected %d%%; 1%% slower called regressed %d%%\n",
                  100 * aa_same / trials, 100 * alarms / trials, 100 * detected_slow / trials,
                  100 * detected_fast / trials, 100 * tiny_regressed / trials);
    assert_true(alarms <= trials * 5 / 100);
    assert_true(aa_same >= trials * 90 / 100);
    assert_true(detected_slow >= trials * 95 / 100);
    assert_true(detected_fast >= trials * 95 / 100);
    assert_int_equal(tiny_regressed, 0);
}

static void test_too_few_repeats_is_ambiguous(void **state)
{
    (void)state;
    const double a[] = {1000}, b[] = {500};
    struct pb_result x, y;
    make_result(&x, a, 1, "cpu", 300);
    make_result(&y, b, 1, "cpu", 300);
    struct pb_comparison cmp;
    pb_compare(&x, &y, 5, &cmp);
    assert_int_equal(cmp.points[0].metrics[0].verdict, PB_VERDICT_AMBIGUOUS);
    assert_int_equal(cmp.regressions, 0);
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

static void test_differences_are_listed(void **state)
{
    (void)state;
    const double a[] = {1, 2, 3};
    struct pb_result x, y;
    make_result(&x, a, 3, "AMD EPYC", 300);
    make_result(&y, a, 3, "Intel Xeon", 340);
    json_object_set_new(json_object_get(y.config, "run"), "repeats", json_integer(9));
    struct pb_comparison cmp;
    pb_compare(&x, &y, 5, &cmp);
    assert_true(cmp.incompatible);
    assert_int_equal(cmp.difference_count, 2); /* run.repeats does not count */
    assert_string_equal(cmp.differences[0], "machine CPU model: AMD EPYC -> Intel Xeon");
    assert_string_equal(cmp.differences[1], "config pipeline[1].decode.cost_us: 300.0 -> 340.0");
    json_t *j = pb_comparison_to_json(&cmp);
    assert_true(json_is_true(json_object_get(j, "incompatible")));
    json_decref(j);
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

/* Libraries are matched by name: a file that lists a name twice compared
 * with itself shows no difference, and a changed version shows one. */
static void test_libraries_matched_by_name(void **state)
{
    (void)state;
    const double a[] = {1, 2, 3};
    struct pb_result x, y;
    make_result(&x, a, 3, "cpu", 300);
    make_result(&y, a, 3, "cpu", 300);
    static const char *const libs[][2] = {
        {"libswscale", "6.7.100"}, {"libyaml", "0.2.5"}, {"libswscale", "59.37.100"}};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            snprintf(x.machine.libraries[i][k], sizeof(x.machine.libraries[i][k]), "%s",
                     libs[i][k]);
            snprintf(y.machine.libraries[i][k], sizeof(y.machine.libraries[i][k]), "%s",
                     libs[i][k]);
        }
    x.machine.library_count = y.machine.library_count = 3;
    struct pb_comparison cmp;
    pb_compare(&x, &y, 5, &cmp);
    assert_false(cmp.incompatible);
    assert_int_equal(cmp.difference_count, 0);
    pb_comparison_free(&cmp);
    snprintf(y.machine.libraries[1][1], sizeof(y.machine.libraries[1][1]), "0.2.6");
    pb_compare(&x, &y, 5, &cmp);
    assert_int_equal(cmp.difference_count, 1);
    assert_string_equal(cmp.differences[0], "library libyaml: 0.2.5 -> 0.2.6");
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

/* A change of loader settings is what a before/after of settings
 * compares: listed, not refused; the memory it costs is reported but not
 * counted as a regression. The same memory growth with the same settings
 * is a regression. */
static void test_loader_change_is_compared(void **state)
{
    (void)state;
    const double slow[] = {1000, 1010, 990, 1005, 995}, fast[] = {2000, 2010, 1990, 2005, 1995};
    struct pb_result x, y;
    make_result(&x, slow, 5, "cpu", 300);
    make_result(&y, fast, 5, "cpu", 300);
    for (int i = 0; i < 5; i++)
        y.points[0].repeats[i].rss_peak_bytes = 200u << 20; /* twice the memory */
    struct pb_comparison cmp;
    pb_compare(&x, &y, 5, &cmp);
    assert_int_equal(cmp.regressions, 1); /* same settings: more memory regressed */
    assert_int_equal(cmp.setting_costs, 0);
    pb_comparison_free(&cmp);

    json_object_set_new(json_object_get(y.config, "loader"), "workers", json_integer(2));
    pb_compare(&x, &y, 5, &cmp);
    assert_false(cmp.incompatible);
    assert_int_equal(cmp.setting_change_count, 1);
    assert_string_equal(cmp.setting_changes[0], "loader.workers: 1 -> 2");
    assert_int_equal(cmp.regressions, 0);
    assert_int_equal(cmp.improvements, 1);
    assert_int_equal(cmp.setting_costs, 1);
    char *out = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&out, &size);
    pb_comparison_report(f, &cmp, "a.json", "b.json", 0);
    fclose(f);
    pb_test_assert_contains(out, (const char *const[]){"setting changed: loader.workers: 1 -> 2",
                                                       "the cost of the setting change: "
                                                       "rss_peak_bytes",
                                                       NULL});
    free(out);
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

/* Runs pb_comparison_print into strings: out gets the report, err the
 * notes; returns its code. The caller frees both. */
static int print_to_strings(const struct pb_comparison *cmp, const char *base_name,
                            const char *next_name, bool force, char **out, char **err)
{
    size_t out_size = 0, err_size = 0;
    FILE *o = open_memstream(out, &out_size), *e = open_memstream(err, &err_size);
    assert_non_null(o);
    assert_non_null(e);
    int rc = pb_comparison_print(o, e, cmp, base_name, next_name, 0, force);
    fclose(o);
    fclose(e);
    return rc;
}

/* Two results none of whose points match: nothing was compared, which is
 * an error (pbench compare exits 2), not an empty report. */
static void test_no_matching_point_is_an_error(void **state)
{
    (void)state;
    const double a[] = {1000, 1010, 990};
    struct pb_result x, y;
    make_result(&x, a, 3, "cpu", 300);
    make_result(&y, a, 3, "cpu", 300);
    json_object_set_new(y.points[0].axes, "loader.workers", json_integer(4));
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&x, &y, 5, &cmp), PB_OK);
    assert_int_equal(cmp.point_count, 0);
    char *out, *err;
    assert_int_equal(print_to_strings(&cmp, "a.json", "b.json", false, &out, &err),
                     PB_ERR_CONFIG);
    assert_non_null(strstr(err, "no point of a.json matches one of b.json"));
    assert_null(strstr(out, "samples_per_s"));
    free(out);
    free(err);
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

/* Names from the files (CPU models, axes, file names) are printed without
 * control characters: an escape or a newline shows as \xNN. */
static void test_names_printed_without_control_characters(void **state)
{
    (void)state;
    const double a[] = {1000, 1010, 990};
    struct pb_result x, y;
    make_result(&x, a, 3, "\x1b[31mred\nline", 300);
    make_result(&y, a, 3, "cpu", 300);
    json_object_set_new(x.points[0].axes, "\x1b[2Jkey", json_integer(1));
    json_object_set_new(y.points[0].axes, "\x1b[2Jkey", json_integer(1));
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&x, &y, 5, &cmp), PB_OK);
    char *out, *err;
    assert_int_equal(print_to_strings(&cmp, "a\x1b[31m.json", "b.json", false, &out, &err),
                     PB_ERR_CONFIG);
    assert_null(strchr(err, '\x1b'));
    assert_non_null(strstr(err, "machine CPU model: \\x1b[31mred\\x0aline -> cpu"));
    assert_non_null(strstr(err, "a\\x1b[31m.json"));
    free(out);
    free(err);
    assert_int_equal(print_to_strings(&cmp, "a\x1b[31m.json", "b.json", true, &out, &err), PB_OK);
    assert_null(strchr(out, '\x1b'));
    assert_non_null(strstr(out, "\\x1b[2Jkey=1"));
    free(out);
    free(err);
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

/* The Mann-Whitney floor: fully separated samples give 2 / C(n + m, n). */
static void test_min_p_by_repeats(void **state)
{
    (void)state;
    assert_float_equal(pb_compare_min_p(3, 3), 2.0 / 20, 1e-9);
    assert_float_equal(pb_compare_min_p(3, 4), 2.0 / 35, 1e-9);
    assert_float_equal(pb_compare_min_p(4, 4), 2.0 / 70, 1e-9);
    assert_float_equal(pb_compare_min_p(5, 5), 2.0 / 252, 1e-9);
    assert_true(isnan(pb_compare_min_p(0, 3)));
}

/* 3 against 3 repeats can detect nothing, and the report says so; the
 * stated "detectable" change at 8 against 8 is found about 80% of the
 * time; the repeats suggested for an ambiguous metric do decide it. */
static void test_what_the_data_can_detect(void **state)
{
    (void)state;
    struct pb_metric_cmp m = samples_cmp(3, 1000, 900, 0.02, 5);
    assert_int_equal(m.verdict, PB_VERDICT_AMBIGUOUS);
    assert_true(isinf(m.detectable));
    assert_float_equal(m.min_p, 0.1, 1e-9);
    assert_int_equal(m.repeats_to_decide, 4); /* the fewest that can reach p < 0.05 */

    /* 8 vs 8 at 2% noise: the stated detectable change, applied, is found
     * (p < 0.05) in about 80% of trials. */
    m = samples_cmp(8, 1000, 1000, 0.02, 5);
    assert_true(m.detectable > 1.5 && m.detectable < 5);
    double shift_pct = (Z_TEST_ALPHA + Z_TEST_POWER) * 2 * sqrt(0.25 / (3 / M_PI));
    int found = 0, trials = 400;
    for (int t = 0; t < trials; t++) {
        double a[8], b[8];
        for (int i = 0; i < 8; i++) {
            a[i] = normal(1000, 20);
            b[i] = normal(1000 * (1 + shift_pct / 100), 20);
        }
        found += pb_mann_whitney(b, 8, a, 8, NULL) < PB_COMPARE_ALPHA;
    }
    print_message("a %.2f%% change at 8 vs 8 repeats, 2%% noise: found %d%% of the time\n",
                  shift_pct, 100 * found / trials);
    assert_true(found >= trials * 70 / 100 && found <= trials * 92 / 100);

    /* A 6% change under 5% noise at 3 vs 3 is ambiguous; the suggested
     * repeats decide it (regressed, or real but under the threshold) most
     * of the time. */
    const double base[] = {1000, 1050, 950}, next[] = {940, 990, 890};
    struct pb_result x, y;
    make_result(&x, base, 3, "cpu", 300);
    make_result(&y, next, 3, "cpu", 300);
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&x, &y, 5, &cmp), PB_OK);
    m = cmp.points[0].metrics[0];
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
    assert_int_equal(m.verdict, PB_VERDICT_AMBIGUOUS);
    assert_float_equal(m.noise, 5, 1e-9);
    int n = m.repeats_to_decide;
    print_message("6%% change, 5%% noise: %d repeats a side suggested\n", n);
    assert_int_equal(n, 12); /* 2 (1.96 + 0.84)^2 5^2 / (0.955 * 6^2), rounded up */
    int decided = 0;
    for (int t = 0; t < 100; t++)
        decided += samples_cmp((size_t)n, 1000, 940, 0.05, 5).verdict != PB_VERDICT_AMBIGUOUS;
    print_message("decided at %d repeats a side: %d%%\n", n, decided);
    assert_true(decided >= 60);
}

/* The Markdown comparison shows names as written: a point's label is
 * escaped as HTML and as a table cell, a file name stays in a code span
 * even when it holds backticks. */
static void test_markdown_names_not_html(void **state)
{
    (void)state;
    const double a[] = {1000, 1010, 990}, b[] = {1000, 1005, 995};
    struct pb_result x, y;
    make_result(&x, a, 3, "cpu", 300);
    make_result(&y, b, 3, "cpu", 300);
    json_object_set_new(x.points[0].axes, "loader.workers", json_string("<img src=x>|a&b"));
    json_object_set_new(y.points[0].axes, "loader.workers", json_string("<img src=x>|a&b"));
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&x, &y, 5, &cmp), PB_OK);
    assert_int_equal(cmp.point_count, 1);
    char *out = NULL;
    size_t size = 0;
    FILE *o = open_memstream(&out, &size);
    pb_comparison_report(o, &cmp, "a`<b>`.json", "new.json", PB_FORMAT_MARKDOWN);
    fclose(o);
    static const char *const wants[] = {
        "base `` a`<b>`.json `` → new `new.json`",
        "| loader.workers=\"&lt;img src=x&gt;\\|a&amp;b\" | samples_per_s |", NULL};
    pb_test_assert_contains(out, wants);
    if (strstr(out, "<img"))
        fail_msg("markdown holds raw HTML from a label:\n%s", out);
    free(out);
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

/* The report states the floor and the command that would decide. */
static void test_report_says_what_would_decide(void **state)
{
    (void)state;
    const double a[] = {1000, 1010, 990}, b[] = {900, 905, 899};
    struct pb_result x, y;
    make_result(&x, a, 3, "cpu", 300);
    make_result(&y, b, 3, "cpu", 300);
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&x, &y, 5, &cmp), PB_OK);
    for (int format = 0; format < 3; format++) {
        char *out = NULL;
        size_t size = 0;
        FILE *o = open_memstream(&out, &size);
        pb_comparison_report(o, &cmp, "a.json", "b.json",
                             format == 0 ? PB_FORMAT_TABLE
                                         : format == 1 ? PB_FORMAT_MARKDOWN : PB_FORMAT_JSON);
        fclose(o);
        if (format < 2) {
            assert_non_null(strstr(out, "3 vs 3 repeats can never reach p < 0.05 with Mann-Whitney"));
            assert_non_null(strstr(out, "measure again with -s run.repeats=4"));
            assert_non_null(strstr(out, "never"));
        } else {
            assert_non_null(strstr(out, "\"can_reach_alpha\": false"));
            assert_non_null(strstr(out, "\"repeats_to_decide\": 4"));
            assert_non_null(strstr(out, "\"detectable_change_pct\""));
        }
        free(out);
    }
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

/* The gate fails on what a training job feels (samples/s, stall) by
 * default; batch assembly and RSS regress in the table without failing it
 * unless named with --gate; an unknown name lists the allowed ones. */
static void test_gate_on_what_users_gate_on(void **state)
{
    (void)state;
    struct pb_comparison cmp;
    memset(&cmp, 0, sizeof(cmp));
    cmp.point_count = 1;
    cmp.points = calloc(1, sizeof(*cmp.points));
    assert_non_null(cmp.points);
    struct pb_point_cmp *pc = &cmp.points[0];
    pc->metric_count = PB_METRIC_COUNT;
    for (int m = 0; m < PB_METRIC_COUNT; m++) {
        snprintf(pc->metrics[m].name, sizeof(pc->metrics[m].name), "%s", pb_metrics[m].name);
        pc->metrics[m].row = &pb_metrics[m];
        pc->metrics[m].verdict = PB_VERDICT_SAME;
        pc->metrics[m].base_n = pc->metrics[m].next_n = 5; /* measured on both sides */
    }
    const struct pb_metric *p99 = pb_metric_find("assembly_p99_ns");
    pc->metrics[p99 - pb_metrics].verdict = PB_VERDICT_REGRESSED; /* more workers: slower batches */
    pc->metrics[0].verdict = PB_VERDICT_IMPROVED;                 /* but more samples/s */
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_comparison_gate(&cmp, NULL, msg, sizeof(msg)), PB_OK);
    assert_int_equal(cmp.gated_regressions, 0);
    assert_false(pc->metrics[p99 - pb_metrics].gated);
    assert_true(pc->metrics[0].gated);
    assert_int_equal(pb_comparison_gate(&cmp, "rss_peak_bytes,assembly_p99_ns", msg, sizeof(msg)),
                     PB_OK);
    assert_int_equal(cmp.gated_regressions, 1);
    assert_int_equal(pb_comparison_gate(&cmp, "bogus", msg, sizeof(msg)), PB_ERR_CONFIG);
    pb_test_assert_contains(msg, (const char *const[]){"unknown metric 'bogus'",
                                                       "samples_per_s", "rss_peak_bytes", NULL});
    pb_comparison_free(&cmp);
}

/* Two pipelines of another length are told apart stage by stage: a stage
 * added or removed is named with its place, and the stages both have are
 * compared by their options, not as two lists of JSON cut short. */
static void test_pipeline_changes_by_stage(void **state)
{
    (void)state;
    struct pb_result a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.config = json_pack("{s [{s {}} {s {s s}} {s {s i}} {s {}}]}", "pipeline", "read", "decode",
                         "decoder", "jpeg", "resize", "size", 224, "flip");
    b.config = json_pack("{s [{s {}} {s {s s}} {s {}} {s {s i}}]}", "pipeline", "read", "decode",
                         "decoder", "jpeg", "color_jitter", "resize", "size", 256);
    struct pb_comparison cmp;
    assert_int_equal(pb_compare_configs(&a, &b, 5, &cmp), PB_OK);
    char all[2048] = "";
    for (int k = 0; k < cmp.setting_change_count; k++) {
        strcat(all, cmp.setting_changes[k]);
        strcat(all, "\n");
    }
    pb_test_assert_contains(all, (const char *const[]){"pipeline[2] added: color_jitter\n",
                                                       "pipeline[3].resize.size: 224 -> 256\n",
                                                       "pipeline[3] removed: flip\n", NULL});
    assert_int_equal(cmp.setting_change_count, 3);
    pb_comparison_free(&cmp);
    /* Two result files: the same change makes them incompatible, said so. */
    assert_int_equal(pb_compare(&a, &b, 5, &cmp), PB_OK);
    assert_true(cmp.incompatible);
    pb_comparison_free(&cmp);
    json_decref(a.config);
    json_decref(b.config);
}

/* One run of a machine whose level moves run to run (a sd of run_sd,
 * relative) while its repeats within a run agree to 0.5%: its 8 repeats'
 * samples/s, and the point's median as history keeps it. */
static void run_on_moving_machine(struct pb_result *r, double mean, double run_sd,
                                  const char *created)
{
    double level = normal(mean, mean * run_sd), v[8];
    for (size_t i = 0; i < 8; i++)
        v[i] = normal(level, level * 0.005);
    make_result(r, v, 8, "cpu", 300);
    r->points[0].samples_per_s = pb_median(v, 8);
    snprintf(r->created, sizeof(r->created), "%s", created);
}

/* Two result files of one config compare two runs: their repeats miss the
 * machine's run-to-run movement, so on a machine that moves 4% from run to
 * run an A/A pair reads as a 5% change often. With the series' history,
 * the interval takes the run-to-run spread: the false alarms go, the
 * undecidable ones say why, and a real 30% slowdown is still caught. */
static void test_run_noise_from_history(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-compare-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[300], msg[PB_MSG_MAX];
    snprintf(db, sizeof(db), "%s/history.db", dir);
    enum { RUNS = 21 };
    struct pb_result runs[RUNS];
    for (int i = 0; i < RUNS; i++) {
        char created[32];
        snprintf(created, sizeof(created), "2026-11-%02dT03:00:00Z", i + 1);
        run_on_moving_machine(&runs[i], 1000, 0.04, created);
        assert_int_equal(pb_history_add(db, &runs[i], "r", "test", msg, sizeof(msg)), PB_OK);
    }
    int alarms_within = 0, alarms_history = 0, undecidable = 0;
    for (int i = 0; i + 1 < RUNS; i++) {
        struct pb_comparison within, history;
        assert_int_equal(pb_compare_runs(&runs[i], &runs[i + 1], 5, NULL, &within), PB_OK);
        assert_int_equal(pb_compare_runs(&runs[i], &runs[i + 1], 5, db, &history), PB_OK);
        const struct pb_metric_cmp *w = &within.points[0].metrics[0], *h = &history.points[0].metrics[0];
        alarms_within += w->verdict == PB_VERDICT_REGRESSED || w->verdict == PB_VERDICT_IMPROVED;
        alarms_history += h->verdict == PB_VERDICT_REGRESSED || h->verdict == PB_VERDICT_IMPROVED;
        undecidable += h->verdict == PB_VERDICT_AMBIGUOUS && h->repeats_to_decide == -1;
        assert_true(isnan(w->run_noise));
        assert_int_equal(h->run_noise_runs, RUNS);
        assert_true(h->run_noise > 2 && h->run_noise < 7);
        assert_int_equal(history.history_runs, RUNS);
        pb_comparison_free(&within);
        pb_comparison_free(&history);
    }
    print_message("A/A pairs of %d: %d alarms from within-run noise, %d with history, %d not "
                  "decidable from two runs\n", RUNS - 1, alarms_within, alarms_history, undecidable);
    assert_true(alarms_within >= 5);
    assert_true(alarms_history <= 1);
    assert_true(undecidable >= 10);
    /* A real slowdown of 30% is past the run-to-run noise. */
    struct pb_result slow;
    run_on_moving_machine(&slow, 700, 0.0, "2026-12-01T03:00:00Z");
    struct pb_comparison cmp;
    assert_int_equal(pb_compare_runs(&runs[RUNS - 1], &slow, 5, db, &cmp), PB_OK);
    assert_int_equal(cmp.points[0].metrics[0].verdict, PB_VERDICT_REGRESSED);
    pb_comparison_free(&cmp);
    pb_result_free(&slow);
    for (int i = 0; i < RUNS; i++)
        pb_result_free(&runs[i]);
    unlink(db);
    char wal[320];
    snprintf(wal, sizeof(wal), "%s-wal", db);
    unlink(wal);
    snprintf(wal, sizeof(wal), "%s-shm", db);
    unlink(wal);
    rmdir(dir);
}

/* Gives every repeat of r's point stages decode, resize and flip, costing
 * decode_us, 40 us and flip_us of CPU a sample (+-1% from repeat to
 * repeat), and the point the same stages. */
static void add_stages(struct pb_result *r, double decode_us, double flip_us)
{
    struct pb_point_result *p = &r->points[0];
    const double cost[3] = {decode_us, 40, flip_us};
    for (size_t i = 0; i <= p->repeat_count; i++) {
        struct pb_stage_result *st = calloc(3, sizeof(*st));
        assert_non_null(st);
        snprintf(st[0].name, sizeof(st[0].name), "decode");
        snprintf(st[1].name, sizeof(st[1].name), "resize");
        snprintf(st[2].name, sizeof(st[2].name), "flip");
        double jitter = 1 + 0.01 * (double)((int)(i % 3) - 1);
        for (int s = 0; s < 3; s++) {
            st[s].hist.count = 1000;
            st[s].cpu_ns = (uint64_t)(1000 * 1e3 * cost[s] * jitter);
        }
        if (i < p->repeat_count) {
            p->repeats[i].stages = st;
            p->repeats[i].stage_count = 3;
        } else {
            p->stages = st;
            p->stage_count = 3;
        }
    }
}

/* Each stage's CPU time per sample is compared as cpu_ns_per_sample is:
 * a costlier decode is named as such, reported, and gates when named. */
static void test_stage_cpu_rows(void **state)
{
    (void)state;
    double a[6] = {1000, 1010, 990, 1005, 995, 1000};
    struct pb_result x, y;
    make_result(&x, a, 6, "cpu", 300);
    make_result(&y, a, 6, "cpu", 300);
    add_stages(&x, 300, 0.7);
    add_stages(&y, 390, 0.9); /* flip +29%, a twentieth of 1% of the sample */
    struct pb_comparison cmp;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_compare(&x, &y, 5, &cmp), PB_OK);
    const struct pb_point_cmp *pc = &cmp.points[0];
    assert_int_equal(pc->metric_count, PB_METRIC_COUNT + 3);
    const struct pb_metric_cmp *decode = &pc->metrics[PB_METRIC_COUNT];
    const struct pb_metric_cmp *resize = &pc->metrics[PB_METRIC_COUNT + 1];
    assert_string_equal(decode->name, "cpu_ns_per_sample.decode");
    assert_string_equal(decode->stage, "decode");
    assert_null(decode->row);
    assert_int_equal(decode->verdict, PB_VERDICT_REGRESSED);
    assert_true(decode->change_pct > 29 && decode->change_pct < 31);
    assert_int_equal(resize->verdict, PB_VERDICT_SAME);
    const struct pb_metric_cmp *flip = &pc->metrics[PB_METRIC_COUNT + 2];
    assert_true(flip->change_pct > 28);
    assert_true(flip->p_value < PB_COMPARE_ALPHA);
    assert_int_equal(flip->verdict, PB_VERDICT_SAME); /* real, and of no consequence */
    assert_false(decode->gated);
    /* The pipeline's CPU per sample is the stages' sum: 340 -> 430 us. */
    const struct pb_metric_cmp *total = &pc->metrics[pb_metric_find("cpu_ns_per_sample") - pb_metrics];
    assert_int_equal(total->verdict, PB_VERDICT_REGRESSED);
    assert_true(total->change_pct > 26 && total->change_pct < 27);
    assert_int_equal(cmp.regressions, 2);
    assert_int_equal(cmp.gated_regressions, 1);
    assert_int_equal(pb_comparison_gate(&cmp, "cpu_ns_per_sample.decode", msg, sizeof(msg)), PB_OK);
    assert_int_equal(cmp.gated_regressions, 2);
    assert_int_equal(pb_comparison_gate(&cmp, "decode", msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "cpu_ns_per_sample.STAGE"));
    json_t *j = pb_comparison_to_json(&cmp);
    json_t *row = json_array_get(
        json_object_get(json_array_get(json_object_get(j, "points"), 0), "metrics"), PB_METRIC_COUNT);
    assert_string_equal(json_string_value(json_object_get(row, "stage")), "decode");
    assert_string_equal(json_string_value(json_object_get(row, "verdict")), "regressed");
    json_decref(j);
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

/* A GPU the driver slowed down (power cap, thermal) on half or more of a
 * side's repeats moves its wall clock as a CPU quota does: the wall-clock
 * verdicts are withheld as disturbed, with the repeats counted; one slowed
 * repeat of six is not enough. */
static void test_gpu_slowed_is_disturbed(void **state)
{
    (void)state;
    double a[6] = {1000, 1010, 990, 1005, 995, 1000};
    double b[6] = {800, 808, 792, 804, 796, 800};
    for (int slowed = 0; slowed <= 4; slowed += 1) {
        struct pb_result x, y;
        make_result(&x, a, 6, "cpu", 300);
        make_result(&y, b, 6, "cpu", 300);
        for (size_t r = 0; r < 6; r++) {
            x.points[0].repeats[r].gpu.used = y.points[0].repeats[r].gpu.used = true;
            y.points[0].repeats[r].gpu.slowed = (int)r < slowed;
        }
        struct pb_comparison cmp;
        assert_int_equal(pb_compare(&x, &y, 5, &cmp), PB_OK);
        const struct pb_point_cmp *pc = &cmp.points[0];
        bool withheld = slowed >= 3;
        assert_int_equal(pc->interference.gpu_slowed, withheld);
        assert_int_equal(pc->interference.next_gpu_slowed, slowed);
        assert_int_equal(pc->metrics[0].verdict,
                         withheld ? PB_VERDICT_DISTURBED : PB_VERDICT_REGRESSED);
        if (withheld) {
            char *out, *err;
            print_to_strings(&cmp, "a.json", "b.json", false, &out, &err);
            size_t both_len = strlen(out) + strlen(err) + 1;
            char *both = malloc(both_len);
            snprintf(both, both_len, "%s%s", out, err);
            pb_test_assert_contains(both, (const char *const[]){
                "the GPU's driver was slowing it down", "of 6 repeats", NULL});
            free(both);
            free(out);
            free(err);
        }
        pb_comparison_free(&cmp);
        pb_result_free(&x);
        pb_result_free(&y);
    }
}

/* Appends a stage named name of cost_us a sample to every repeat and the
 * point of r (after add_stages). */
static void append_stage(struct pb_result *r, const char *name, double cost_us)
{
    struct pb_point_result *p = &r->points[0];
    for (size_t i = 0; i <= p->repeat_count; i++) {
        struct pb_stage_result **st = i < p->repeat_count ? &p->repeats[i].stages : &p->stages;
        size_t *count = i < p->repeat_count ? &p->repeats[i].stage_count : &p->stage_count;
        struct pb_stage_result *grown = realloc(*st, (*count + 1) * sizeof(**st));
        assert_non_null(grown);
        *st = grown;
        struct pb_stage_result *added = &grown[(*count)++];
        memset(added, 0, sizeof(*added));
        snprintf(added->name, sizeof(added->name), "%s", name);
        double jitter = 1 + 0.01 * (double)((int)(i % 3) - 1);
        added->hist.count = 1000;
        added->cpu_ns = (uint64_t)(1000 * 1e3 * cost_us * jitter);
    }
}

/* What compare rendered of cmp in format, as a string to free. */
static char *rendered(const struct pb_comparison *cmp, enum pb_format format)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    pb_comparison_report(out, cmp, "base.json", "new.json", (int)format);
    fclose(out);
    return text;
}

/* A stage the new side added, which doubles the CPU per sample, is a row
 * of its own with its cost and share, and the verdict names it first; a
 * gate on a stage neither side ran is refused with the stages listed. */
static void test_added_stage_named(void **state)
{
    (void)state;
    double a[6] = {1000, 1010, 990, 1005, 995, 1000}, b[6] = {520, 515, 510, 505, 525, 500};
    struct pb_result x, y;
    make_result(&x, a, 6, "cpu", 300);
    make_result(&y, b, 6, "cpu", 300);
    add_stages(&x, 300, 0.7);
    add_stages(&y, 310, 0.7);
    append_stage(&y, "GaussianBlur", 340); /* 340.7 -> 690.7 us a sample */
    struct pb_comparison cmp;
    assert_int_equal(pb_compare_configs(&x, &y, 5, &cmp), PB_OK);
    const struct pb_point_cmp *pc = &cmp.points[0];
    assert_int_equal(pc->metric_count, PB_METRIC_COUNT + 4);
    const struct pb_metric_cmp *blur = &pc->metrics[PB_METRIC_COUNT + 3];
    assert_string_equal(blur->name, "cpu_ns_per_sample.GaussianBlur");
    assert_true(blur->added);
    assert_int_equal(blur->verdict, PB_VERDICT_REGRESSED);
    assert_true(blur->share_pct > 48 && blur->share_pct < 50);
    assert_true(pb_metric_cmp_measured(blur));
    assert_true(pc->explained.count >= 1);
    assert_int_equal(pc->explained.metric[0], PB_METRIC_COUNT + 3);
    assert_true(pc->explained.share_pct[0] > 95);
    char msg[PB_MSG_MAX * 4];
    assert_int_equal(pb_comparison_gate(&cmp, "cpu_ns_per_sample.typo", msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    pb_test_assert_contains(msg, (const char *const[]){"no stage 'typo'", "the base ran: decode",
                                                       "GaussianBlur", "samples_per_s", NULL});
    assert_int_equal(pb_comparison_gate(&cmp, "cpu_ns_per_sample.GaussianBlur", msg, sizeof(msg)),
                     PB_OK);
    assert_true(pc->metrics[PB_METRIC_COUNT + 3].gated);
    char *table = rendered(&cmp, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){"new: GaussianBlur 340 µs a sample of "
                                                         "CPU, 49% of the new pipeline",
                                                         "the stages that explain it, largest "
                                                         "share first: GaussianBlur (new)",
                                                         NULL});
    assert_null(strstr(table, "nan"));
    /* The verdict names GaussianBlur before decode. */
    const char *verdict = strstr(table, "REGRESSED:");
    assert_non_null(verdict);
    const char *blur_at = strstr(verdict, "GaussianBlur"), *decode_at = strstr(verdict, ".decode");
    assert_non_null(blur_at);
    assert_true(!decode_at || blur_at < decode_at);
    free(table);
    char *md = rendered(&cmp, PB_FORMAT_MARKDOWN);
    pb_test_assert_contains(md, (const char *const[]){"- new: GaussianBlur", "GaussianBlur (new)",
                                                      NULL});
    assert_null(strstr(md, "nan"));
    free(md);
    char *json = rendered(&cmp, PB_FORMAT_JSON);
    pb_test_assert_contains(json, (const char *const[]){"\"explained_by\"", "\"added\": true",
                                                        NULL});
    free(json);
    pb_comparison_free(&cmp);
    /* Removed: the other way round. */
    assert_int_equal(pb_compare_configs(&y, &x, 5, &cmp), PB_OK);
    blur = &cmp.points[0].metrics[PB_METRIC_COUNT + 3];
    assert_true(blur->removed);
    assert_int_equal(blur->verdict, PB_VERDICT_IMPROVED);
    table = rendered(&cmp, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){"removed: GaussianBlur", NULL});
    free(table);
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

/* Under interference a wall-clock verdict is withheld whatever it would
 * have been, ambiguous included: the table, the count and the text agree
 * on "disturbed"; a metric neither side measured stays "not measured". */
static void test_disturbed_told_alike(void **state)
{
    (void)state;
    double a[3] = {1000, 1100, 900}, b[3] = {1000, 950, 1080};
    struct pb_result x, y;
    make_result(&x, a, 3, "cpu", 300);
    make_result(&y, b, 3, "cpu", 300);
    for (int i = 0; i < 3; i++)
        x.points[0].repeats[i].other_cpu_pct = 55; /* another job on the base side */
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&x, &y, 5, &cmp), PB_OK);
    const struct pb_metric_cmp *samples = &cmp.points[0].metrics[0];
    assert_true(cmp.points[0].interference.disturbed);
    assert_int_equal(samples->verdict, PB_VERDICT_DISTURBED);
    assert_int_equal(cmp.ambiguous, 0);
    assert_true(cmp.disturbed >= 2); /* samples/s and stall */
    char *table = rendered(&cmp, PB_FORMAT_TABLE);
    char count[64];
    snprintf(count, sizeof(count), "0 ambiguous, %d disturbed", cmp.disturbed);
    pb_test_assert_contains(table, (const char *const[]){"withheld (disturbed)", count, NULL});
    const char *row = strstr(table, "samples_per_s");
    assert_non_null(row);
    const char *end = strchr(row, '\n');
    assert_non_null(strstr(row, "disturbed"));
    assert_true(strstr(row, "disturbed") < end);
    const char *accel = strstr(table, "accel_util_pct");
    assert_true(strstr(accel, "not measured") < strchr(accel, '\n'));
    free(table);
    pb_comparison_free(&cmp);
    pb_result_free(&x);
    pb_result_free(&y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mann_whitney_known_values),
        cmocka_unit_test(test_mann_whitney_against_enumeration),
        cmocka_unit_test(test_mann_whitney_normal_approximation),
        cmocka_unit_test(test_bootstrap_coverage),
        cmocka_unit_test(test_false_alarms_and_power),
        cmocka_unit_test(test_too_few_repeats_is_ambiguous),
        cmocka_unit_test(test_differences_are_listed),
        cmocka_unit_test(test_libraries_matched_by_name),
        cmocka_unit_test(test_loader_change_is_compared),
        cmocka_unit_test(test_no_matching_point_is_an_error),
        cmocka_unit_test(test_names_printed_without_control_characters),
        cmocka_unit_test(test_min_p_by_repeats),
        cmocka_unit_test(test_what_the_data_can_detect),
        cmocka_unit_test(test_report_says_what_would_decide),
        cmocka_unit_test(test_markdown_names_not_html),
        cmocka_unit_test(test_gate_on_what_users_gate_on),
        cmocka_unit_test(test_pipeline_changes_by_stage),
        cmocka_unit_test(test_run_noise_from_history),
        cmocka_unit_test(test_stage_cpu_rows),
        cmocka_unit_test(test_gpu_slowed_is_disturbed),
        cmocka_unit_test(test_added_stage_named),
        cmocka_unit_test(test_disturbed_told_alike),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
