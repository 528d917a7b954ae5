/* One definition per figure (bench/result/figures.h) on hand-made stage
 * rows: CPU per sample over the samples through the pipeline (collate's
 * batches spread), sub-stages and device rows aside, the process's CPU
 * when there are no stage CPU times, CPU shares that add up, and the
 * repeats' stall beside the point's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/result/figures.h"

static void row(struct pb_stage_result *st, const char *name, uint64_t count, uint64_t cpu_ns)
{
    memset(st, 0, sizeof(*st));
    snprintf(st->name, sizeof(st->name), "%s", name);
    pb_hist_init(&st->hist);
    for (uint64_t i = 0; i < count; i++)
        pb_hist_add(&st->hist, 1000);
    st->cpu_ns = cpu_ns;
}

static void test_cpu_per_sample_spreads_collate(void **state)
{
    (void)state;
    struct pb_stage_result st[5];
    row(&st[0], "decode", 40, 40 * 5000);    /* 40 samples through, 5 µs each  */
    row(&st[1], "decode.seek", 40, 40 * 100); /* part of decode's time          */
    snprintf(st[1].parent, sizeof(st[1].parent), "decode");
    row(&st[2], "collate", 5, 5 * 8000);     /* 5 batches of 8: 1 µs a sample  */
    row(&st[3], "to_device", 5, 0);
    st[3].gpu = true;
    row(&st[4], "flip", 40, 40 * 250);
    assert_int_equal(pb_stages_samples(st, 5), 40);
    assert_true(fabs(pb_stage_cpu_ns_per_sample(st, 5, &st[0]) - 5000) < 1e-9);
    assert_true(fabs(pb_stage_cpu_ns_per_sample(st, 5, &st[2]) - 1000) < 1e-9);
    assert_true(fabs(pb_stage_cpu_ns_per_sample(st, 5, &st[1]) - 100) < 1e-9);
    assert_true(isnan(pb_stage_cpu_ns_per_sample(st, 5, &st[3])));
    assert_true(isnan(pb_stage_cpu_ns_per_sample(st, 5, NULL)));
    /* The pipeline's figure is its stages' sum, the sub-stage inside decode. */
    assert_true(fabs(pb_stages_cpu_ns_per_sample(st, 5) - 6250) < 1e-9);
    double shares = 0;
    for (size_t s = 0; s < 5; s++)
        if (pb_stage_is_cpu(&st[s]))
            shares += pb_stage_cpu_share_pct(st, 5, &st[s]);
    assert_true(fabs(shares - 100) < 1e-9);
    assert_true(fabs(pb_stage_cpu_share_pct(st, 5, &st[0]) - 80) < 1e-9);
    assert_true(isnan(pb_stage_cpu_share_pct(st, 5, &st[1])));
}

/* Without stage CPU times a point and a repeat read the process's CPU
 * over the samples delivered; with neither, NAN. */
static void test_cpu_per_sample_falls_back_to_the_process(void **state)
{
    (void)state;
    struct pb_stage_result st[1];
    row(&st[0], "decode", 40, 0);
    struct pb_point_result p = {.stages = st, .stage_count = 1, .samples_per_s = 500,
                                .cpu_util_pct = 150};
    assert_true(fabs(pb_point_cpu_ns_per_sample(&p) - 3e6) < 1e-6);
    struct pb_repeat_result r = {.samples_per_s = 1000, .cpu_util_pct = 100};
    assert_true(fabs(pb_repeat_cpu_ns_per_sample(&r) - 1e6) < 1e-6);
    r.cpu_util_pct = 0;
    assert_true(isnan(pb_repeat_cpu_ns_per_sample(&r)));
    assert_true(isnan(pb_stage_cpu_share_pct(st, 1, &st[0])));
    st[0].cpu_ns = 40 * 2000;
    assert_true(fabs(pb_point_cpu_ns_per_sample(&p) - 2000) < 1e-9);
}

/* The point's stall is a ratio of sums; the repeats' median and range
 * are there to show beside it, from the finished repeats only. */
static void test_stall_of_the_repeats(void **state)
{
    (void)state;
    struct pb_repeat_result reps[4] = {{.stall_pct = 40}, {.stall_pct = 20}, {.stall_pct = 30},
                                       {.stall_pct = 90, .interrupted = true}};
    struct pb_point_result p = {.repeats = reps, .repeat_count = 4};
    double median, lo, hi;
    assert_true(pb_point_stall_repeats(&p, &median, &lo, &hi));
    assert_true(median == 30 && lo == 20 && hi == 40);
    p.repeat_count = 1;
    assert_false(pb_point_stall_repeats(&p, &median, &lo, &hi));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_per_sample_spreads_collate),
        cmocka_unit_test(test_cpu_per_sample_falls_back_to_the_process),
        cmocka_unit_test(test_stall_of_the_repeats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
