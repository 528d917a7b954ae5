/* Tests for bench/result/result.c: warnings (deduplicated, capped) and a
 * point's summary over its repeats (medians, wall-weighted shares,
 * quantiles of the batch records, stages merged by name, the warnings the
 * summary adds). The JSON form is tests/test_result_json.c. */
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
#include "bench/result/result.h"
#include "tests/testutil.h"
#include "tests/result_fixture.h"

static void test_warnings_dedupe_and_cap(void **state)
{
    (void)state;
    struct pb_point_result point = {0};
    pb_point_warn(&point, "noisy %d", 1);
    pb_point_warn(&point, "noisy %d", 1);
    assert_int_equal(point.warning_count, 1);
    assert_string_equal(point.warnings[0], "noisy 1");
    for (int i = 0; i < 2 * PB_MAX_WARNINGS; i++)
        pb_point_warn(&point, "warning %d", i);
    assert_int_equal(point.warning_count, PB_MAX_WARNINGS);

    struct pb_result result = {0};
    pb_result_warn(&result, "cache %s", "warm");
    pb_result_warn(&result, "cache %s", "warm");
    pb_result_warn(&result, "cache %s", "cold");
    assert_int_equal(result.warning_count, 2);
    assert_string_equal(result.warnings[1], "cache cold");
}

static void add_stage_values(struct pb_repeat_result *rep, const char *name, uint64_t cpu_ns,
                             const uint64_t *values, size_t n)
{
    struct pb_stage_result *st = &rep->stages[rep->stage_count++];
    snprintf(st->name, sizeof(st->name), "%s", name);
    st->cpu_ns = cpu_ns;
    pb_hist_init(&st->hist);
    for (size_t i = 0; i < n; i++)
        pb_hist_add(&st->hist, values[i]);
}

static void test_summarize_fixed_inputs(void **state)
{
    (void)state;
    struct pb_repeat_result reps[3] = {0};
    const double samples_per_s[3] = {100, 120, 110};
    const double batches_per_s[3] = {3, 1, 2};
    const double mb_per_s[3] = {5, 7, 6};
    const double wall_s[3] = {1, 2, 1};
    const double stall_pct[3] = {10, 20, 40};
    const double accel_pct[3] = {90, 80, 60};
    const double cpu_pct[3] = {100, 200, 300};
    const double worker_pct[3] = {50, 50, 90};
    const uint64_t rss_peak[3] = {100, 300, 200};
    /* 100 batch records over the repeats (40, 30, 30): assembly 1..100 and
     * wait 2..200 in a shuffled order, so p50/p99 are 50/99 and 100/198. */
    const size_t batch_counts[3] = {40, 30, 30};
    uint64_t k = 0;
    for (int i = 0; i < 3; i++) {
        reps[i].samples_per_s = samples_per_s[i];
        reps[i].batches_per_s = batches_per_s[i];
        reps[i].mb_per_s = mb_per_s[i];
        reps[i].wall_s = wall_s[i];
        reps[i].stall_pct = stall_pct[i];
        reps[i].accel_util_pct = accel_pct[i];
        reps[i].cpu_util_pct = cpu_pct[i];
        reps[i].worker_cpu_pct = worker_pct[i];
        reps[i].rss_peak_bytes = rss_peak[i];
        reps[i].samples = 1000 * (uint64_t)(i + 1);
        reps[i].errors = (uint64_t)i;
        reps[i].window_noise = 0.5;
        reps[i].batch_count = batch_counts[i];
        reps[i].batch_records = calloc(batch_counts[i], sizeof(struct pb_batch_record));
        assert_non_null(reps[i].batch_records);
        for (size_t b = 0; b < batch_counts[i]; b++, k++) {
            uint64_t v = (k * 37) % 100 + 1; /* a permutation of 1..100 */
            reps[i].batch_records[b].assembly_ns = v;
            reps[i].batch_records[b].wait_ns = 2 * v;
        }
        reps[i].stages = calloc(2, sizeof(struct pb_stage_result));
        assert_non_null(reps[i].stages);
    }
    reps[1].hit_time_cap = true;
    const uint64_t read_values[] = {100, 300};
    const uint64_t decode_values[] = {1000};
    const uint64_t augment_values[] = {500, 500, 600};
    add_stage_values(&reps[0], "read", 10, read_values, 2);
    add_stage_values(&reps[0], "decode", 20, decode_values, 1);
    add_stage_values(&reps[1], "decode", 30, decode_values, 1);
    add_stage_values(&reps[1], "read", 40, read_values, 2);
    add_stage_values(&reps[2], "read", 50, read_values, 2);
    add_stage_values(&reps[2], "augment", 60, augment_values, 3);

    struct pb_point_result point = {0};
    point.repeats = reps;
    point.repeat_count = 3;
    pb_point_summarize(&point);

    assert_close(point.samples_per_s, 110);
    /* mean 110, sample stddev sqrt((100 + 100 + 0) / 2) = 10. */
    assert_close(point.samples_per_s_noise_pct, 100.0 * 10 / 110);
    assert_close(point.batches_per_s, 2);
    assert_close(point.mb_per_s, 6);
    assert_close(point.stall_pct, (10 * 1 + 20 * 2 + 40 * 1) / 4.0);
    assert_close(point.accel_util_pct, (90 * 1 + 80 * 2 + 60 * 1) / 4.0);
    assert_close(point.cpu_util_pct, (100 * 1 + 200 * 2 + 300 * 1) / 4.0);
    assert_close(point.worker_cpu_pct, (50 * 1 + 50 * 2 + 90 * 1) / 4.0);
    assert_int_equal(point.assembly_p50_ns, 50);
    assert_int_equal(point.assembly_p99_ns, 99);
    assert_int_equal(point.wait_p50_ns, 100);
    assert_int_equal(point.wait_p99_ns, 198);
    assert_int_equal(point.rss_peak_bytes, 300);
    assert_int_equal(point.samples, 6000);
    assert_int_equal(point.errors, 3);

    /* Stages merged by name in order of first appearance. */
    assert_int_equal(point.stage_count, 3);
    assert_string_equal(point.stages[0].name, "read");
    assert_string_equal(point.stages[1].name, "decode");
    assert_string_equal(point.stages[2].name, "augment");
    assert_int_equal(point.stages[0].hist.count, 6);
    assert_int_equal(point.stages[0].hist.sum_ns, 1200);
    assert_int_equal(point.stages[0].cpu_ns, 100);
    assert_int_equal(point.stages[1].hist.count, 2);
    assert_int_equal(point.stages[1].cpu_ns, 50);
    assert_int_equal(point.stages[2].hist.sum_ns, 1600);
    double total_ns = 1200 + 2000 + 1600;
    assert_close(point.stages[0].share_pct, 100 * 1200 / total_ns);
    assert_close(point.stages[1].share_pct, 100 * 2000 / total_ns);
    assert_close(point.stages[2].share_pct, 100 * 1600 / total_ns);

    assert_int_equal(point.warning_count, 1);
    assert_string_equal(point.warnings[0],
                        "1 of 3 repeats hit run.max_time_s before the noise target was met");

    /* Summarizing again replaces the summary; the warning stays once and
     * warnings added by others are kept. */
    pb_point_warn(&point, "CPU frequency changed during the run");
    pb_point_summarize(&point);
    assert_int_equal(point.stage_count, 3);
    assert_int_equal(point.warning_count, 2);
    assert_string_equal(point.warnings[0], "CPU frequency changed during the run");

    /* Two repeats: the median is the mean of the middle pair. */
    point.repeat_count = 2;
    pb_point_summarize(&point);
    assert_close(point.samples_per_s, 110);
    assert_close(point.batches_per_s, 2);

    /* One repeat: noise is that repeat's windowed-throughput noise. */
    point.repeat_count = 1;
    reps[0].noisy = true;
    pb_point_summarize(&point);
    assert_close(point.samples_per_s, 100);
    assert_close(point.samples_per_s_noise_pct, 50);
    assert_close(point.stall_pct, 10);
    assert_int_equal(point.stage_count, 2);
    assert_int_equal(point.warning_count, 2);
    assert_string_equal(point.warnings[0], "CPU frequency changed during the run");
    assert_string_equal(point.warnings[1], "1 of 1 repeats were noisy: windowed throughput "
                                           "varied by up to 50.0%, above run.target_noise");

    for (int i = 0; i < 3; i++) {
        free(reps[i].batch_records);
        free(reps[i].stages);
    }
    free(point.stages);
}

/* Interference: medians over the repeats; a warning with the figure when
 * others took 10% of the machine or more, or steal 5%, replaced (not
 * stacked) when summarized again, none on a quiet machine. The loop's
 * shares are wall-weighted. */
static void test_summarize_interference(void **state)
{
    (void)state;
    struct pb_repeat_result reps[3] = {0};
    const double other_pct[3] = {48, 2, 50};
    for (int i = 0; i < 3; i++) {
        reps[i].wall_s = i + 1;
        reps[i].samples_per_s = 100;
        reps[i].other_cpu_pct = other_pct[i];
        reps[i].first_batch_s = 0.1 * (i + 1);
        reps[i].stall_pct = 10 * (i + 1);
        pb_repeat_loop_shares(&reps[i], (uint64_t)(0.5e9 * (i + 1)), 0);
    }
    assert_close(reps[0].loop_step_pct, 50);
    assert_close(reps[0].loop_other_pct, 40);
    reps[2].stall_pct = 60;
    pb_repeat_loop_shares(&reps[2], (uint64_t)1.5e9, (uint64_t)0.3e9);
    assert_close(reps[2].loop_stages_pct, 10);
    assert_close(reps[2].loop_other_pct, 0); /* 60 + 50 + 10: the rest clamps at 0 */
    struct pb_point_result point = {0};
    point.repeats = reps;
    point.repeat_count = 3;
    pb_point_summarize(&point);
    assert_close(point.other_cpu_pct, 48);
    assert_close(point.first_batch_s, 0.2);
    assert_close(point.loop_step_pct, 50);
    assert_close(point.stall_pct + point.loop_step_pct + point.loop_stages_pct +
                     point.loop_other_pct,
                 (100.0 * 1 + 100 * 2 + 120 * 3) / 6);
    assert_int_equal(point.warning_count, 1);
    assert_string_equal(point.warnings[0],
                        "other processes used 48% of the machine's CPU while this point was "
                        "measured (steal 0%): the figures are lower than this machine can do "
                        "alone; rerun on a quiet machine");
    pb_point_summarize(&point);
    assert_int_equal(point.warning_count, 1);
    /* Steal alone warns too. */
    for (int i = 0; i < 3; i++) {
        reps[i].other_cpu_pct = 1;
        reps[i].steal_pct = 6;
    }
    pb_point_summarize(&point);
    assert_int_equal(point.warning_count, 1);
    assert_non_null(strstr(point.warnings[0], "used 1% of the machine's CPU while this point was "
                                              "measured (steal 6%)"));
    reps[0].steal_pct = reps[1].steal_pct = 0;
    pb_point_summarize(&point);
    assert_int_equal(point.warning_count, 0);
    free(point.stages);
}

/* A process CPU share above 100% per core is pbench's error, not a
 * figure ("process 840 %" on 2 cores over a span cut short); within what
 * the clocks' resolution explains, it is a figure. */
static void test_impossible_cpu_share(void **state)
{
    (void)state;
    struct pb_repeat_result rep = {.wall_s = 0.05, .cpu_util_pct = 840};
    char msg[PB_MSG_MAX] = "";
    assert_true(pb_repeat_cpu_impossible(&rep, 2, 0, msg, sizeof msg));
    pb_test_assert_contains(msg, (const char *const[]){"internal error in pbench", "840%",
                                                       "2 cores", NULL});
    rep.cpu_util_pct = 199;
    assert_false(pb_repeat_cpu_impossible(&rep, 2, 0, msg, sizeof msg));
    /* Three processes read from /proc in 10 ms ticks over 0.05 s: up to
     * 60 points more are the clock's, not an error. */
    rep.cpu_util_pct = 250;
    assert_false(pb_repeat_cpu_impossible(&rep, 2, 3 * 1e7, msg, sizeof msg));
    assert_true(pb_repeat_cpu_impossible(&rep, 2, 0, msg, sizeof msg));
    rep.wall_s = 0; /* nothing measured: nothing to check */
    assert_false(pb_repeat_cpu_impossible(&rep, 2, 0, msg, sizeof msg));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warnings_dedupe_and_cap),
        cmocka_unit_test(test_summarize_fixed_inputs),
        cmocka_unit_test(test_summarize_interference),
        cmocka_unit_test(test_impossible_cpu_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
