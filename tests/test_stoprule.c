/* Tests for bench/run/stoprule.c: the stopping rule on its own, driven
 * with synthetic timings (it reads no clock): it waits for run.min_time_s
 * and run.min_samples, stops once the windowed throughput is steady, stops
 * at run.max_time_s flagged noisy when it never is, decides on three
 * windows when batches are slow, and keeps the first reason it is given.
 * No test asserts a wall-clock time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdbool.h>

#include "bench/base/pb.h"
#include "bench/run/stoprule.h"

#define MS 1000000ull

static struct pb_run_spec rule_spec(double min_time_s, double max_time_s, double window_s)
{
    return (struct pb_run_spec){.min_time_s = min_time_s,
                                .max_time_s = max_time_s,
                                .window_s = window_s,
                                .target_noise = 0.05,
                                .min_samples = 0};
}

static uint64_t steady(uint64_t i)
{
    (void)i;
    return 10;
}

/* Throughput that swings by 2x from one 100 ms window to the next. */
static uint64_t swinging(uint64_t i)
{
    return ((i - 1) / 10) % 2 ? 30 : 10;
}

/* Sets up rule for rs, starts it at t0 and feeds it batches of samples(i)
 * every period_ns until it stops; checks that it stopped after batches,
 * for reason, noisy or not. The caller frees rule. */
static void expect_stop(struct pb_stoprule *rule, const struct pb_run_spec *rs, uint64_t t0,
                        uint64_t period_ns, uint64_t (*samples)(uint64_t i), uint64_t batches,
                        enum pb_stop_reason reason, bool noisy)
{
    assert_int_equal(pb_stoprule_init(rule, rs), PB_OK);
    pb_stoprule_start(rule, t0);
    uint64_t i = 1;
    while (!pb_stoprule_batch(rule, t0 + i * period_ns, samples(i)) && i < 100000)
        i++;
    assert_int_equal(i, batches);
    assert_int_equal(rule->batches, batches);
    assert_int_equal(rule->reason, reason);
    assert_int_equal(pb_stoprule_noisy(rule), noisy);
}

/* expect_stop, not noisy, on rs with min_samples set, fed steady batches
 * every 10 ms from time 0; frees its rule. */
static void expect_held_by_min_samples(struct pb_run_spec rs, int64_t min_samples,
                                       uint64_t batches, enum pb_stop_reason reason)
{
    struct pb_stoprule rule;
    rs.min_samples = min_samples;
    expect_stop(&rule, &rs, 0, 10 * MS, steady, batches, reason, false);
    pb_stoprule_free(&rule);
}

static void test_rule_stops_after_min_time_when_steady(void **state)
{
    (void)state;
    struct pb_run_spec rs = rule_spec(1.0, 10.0, 0.1);
    struct pb_stoprule rule;
    /* A batch of 10 every 10 ms: noise 0 from the second window on, but
     * the rule waits for min_time_s (1 s: 100 batches). */
    expect_stop(&rule, &rs, 5000 * MS, 10 * MS, steady, 100, PB_STOP_STABLE, false);
    assert_true(rule.count >= PB_STOPRULE_MIN_WINDOWS);
    assert_true(pb_stoprule_noise(&rule) < 1e-9);
    assert_int_equal(rule.samples, 1000);
    pb_stoprule_free(&rule);

    /* min_samples holds it longer. */
    expect_held_by_min_samples(rs, 1500, 150, PB_STOP_STABLE);
}

static void test_rule_hits_cap_when_noisy(void **state)
{
    (void)state;
    struct pb_run_spec rs = rule_spec(0.5, 2.0, 0.1);
    struct pb_stoprule rule;
    expect_stop(&rule, &rs, 0, 10 * MS, swinging, 200, PB_STOP_TIME_CAP, true);
    assert_true(pb_stoprule_noise(&rule) > rs.target_noise);
    assert_string_equal(pb_stop_reason_name(rule.reason), "time_cap");
    pb_stoprule_free(&rule);

    /* Steady but held by min_samples: the cap, not noisy. */
    expect_held_by_min_samples(rs, 1000000, 200, PB_STOP_TIME_CAP);
}

static void test_rule_three_windows_suffice_for_slow_batches(void **state)
{
    (void)state;
    /* min_time_s / window_s = 10 windows of noise, but batches of 500 ms:
     * a window closes only every 2 batches (1 s). The rule decides on 3
     * windows: after 6 batches, not at min_time_s with 1 window. */
    struct pb_run_spec rs = rule_spec(1.0, 60.0, 0.1);
    struct pb_stoprule rule;
    expect_stop(&rule, &rs, 0, 500 * MS, steady, 6, PB_STOP_STABLE, false);
    assert_int_equal(rule.noise_windows, 10);
    assert_int_equal(rule.count, 3);
    pb_stoprule_free(&rule);
}

static void test_rule_other_reasons(void **state)
{
    (void)state;
    struct pb_run_spec rs = rule_spec(1.0, 2.0, 0.1);
    struct pb_stoprule rule;
    assert_int_equal(pb_stoprule_init(&rule, &rs), PB_OK);
    pb_stoprule_start(&rule, 0);
    assert_false(pb_stoprule_batch(&rule, 10 * MS, 10));
    assert_int_equal(rule.reason, PB_STOP_NONE);
    assert_true(pb_stoprule_noise(&rule) == 0); /* too few windows: reported as 0 */
    pb_stoprule_end(&rule, PB_STOP_DATA_END);
    pb_stoprule_end(&rule, PB_STOP_INTERRUPTED); /* the first reason is kept */
    assert_int_equal(rule.reason, PB_STOP_DATA_END);
    assert_false(pb_stoprule_noisy(&rule));
    assert_string_equal(pb_stop_reason_name(PB_STOP_DATA_END), "data_end");
    /* A new start forgets the last repeat. */
    pb_stoprule_start(&rule, 0);
    assert_int_equal(rule.reason, PB_STOP_NONE);
    assert_int_equal(rule.samples, 0);
    pb_stoprule_free(&rule);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_stops_after_min_time_when_steady),
        cmocka_unit_test(test_rule_hits_cap_when_noisy),
        cmocka_unit_test(test_rule_three_windows_suffice_for_slow_batches),
        cmocka_unit_test(test_rule_other_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
