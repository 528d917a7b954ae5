/* One definition per figure (bench/result/figures.h) on hand-made stage
 * rows: CPU per sample over the samples through the pipeline (collate's
 * batches spread), sub-stages and device rows aside, the process's CPU
 * when there are no stage CPU times, CPU shares that add up, a point's
 * figure as the median of its repeats' and the cores it takes, a wrapped
 * job's worker rows, and the repeats' stall beside the point's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A point's CPU per sample is the median of its repeats' (collate's
 * included), not their pooled rows', and the cores feeding a step take
 * are that figure times the rate, with the repeats' range: three repeats
 * whose collate costs 1, 2 and 4 µs a sample (pooled over 40, 40 and 120
 * samples: 3 µs) read 2 µs, decode at 5 µs each, so the pipeline's
 * median is 7 µs and 1000 samples/s take 7 ms of CPU a second: 0.007
 * cores, 0.006 to 0.009 over the repeats. An interrupted repeat counts
 * for neither. */
static void test_point_figure_is_the_repeats_median(void **state)
{
    (void)state;
    static const uint64_t samples[4] = {40, 40, 120, 8};
    static const uint64_t collate_ns[4] = {1000, 2000, 4000, 1000000};
    struct pb_stage_result st[4][2];
    struct pb_repeat_result reps[4];
    memset(reps, 0, sizeof reps);
    for (size_t r = 0; r < 4; r++) {
        row(&st[r][0], "decode", samples[r], samples[r] * 5000);
        row(&st[r][1], "collate", samples[r] / 8, samples[r] * collate_ns[r]);
        reps[r] = (struct pb_repeat_result){.stages = st[r], .stage_count = 2,
                                            .interrupted = r == 3};
    }
    struct pb_point_result p = {.repeats = reps, .repeat_count = 4};
    pb_point_summarize(&p);
    const struct pb_stage_result *collate = &p.stages[1];
    assert_string_equal(collate->name, "collate");
    assert_true(fabs(pb_stage_cpu_ns_per_sample(p.stages, p.stage_count, collate) - 3000) < 1e-9);
    assert_true(fabs(pb_point_stage_cpu_ns_per_sample(&p, collate) - 2000) < 1e-9);
    assert_true(fabs(pb_point_stage_cpu_ns_per_sample(&p, &p.stages[0]) - 5000) < 1e-9);
    assert_true(fabs(pb_point_cpu_ns_per_sample(&p) - 7000) < 1e-9);
    double v[4];
    assert_int_equal(pb_point_cpu_values(&p, "collate", v), 3);
    struct pb_cores c;
    assert_true(pb_point_cores_needed(&p, 1000, &c));
    assert_true(fabs(c.cores - 0.007) < 1e-12 && fabs(c.cpu_ns - 7000) < 1e-9);
    assert_true(fabs(c.lo - 0.006) < 1e-12 && fabs(c.hi - 0.009) < 1e-12);
    assert_false(pb_point_cores_needed(&p, 0, &c));
    free(p.stages);
    /* Without repeats, the rows it has (pooled); the process's CPU without stage times. */
    struct pb_point_result bare = {.samples_per_s = 500, .cpu_util_pct = 150};
    assert_true(pb_point_cores_needed(&bare, 1000, &c));
    assert_true(fabs(c.cores - 3) < 1e-9 && c.lo == c.cores && c.hi == c.cores);
    assert_true(isnan(pb_cpu_ns_per_sample(0, 10)) && isnan(pb_cpu_ns_per_sample(10, 0)));
    assert_true(pb_cpu_ns_per_sample(3000, 4) == 750);
}

/* A wrapped job's worker row: the relay sends the thread CPU of the
 * samples it built and their count, pbench divides (3 ms over 40 samples:
 * 75 µs); untimed samples (cpu_ns null) have none; a result from before
 * keeps the figure it holds. */
static void test_worker_cpu_per_sample(void **state)
{
    (void)state;
    json_t *w = json_pack("{s i s i s i}", "worker", 0, "samples", 40, "cpu_ns", 3000000);
    assert_true(pb_worker_cpu_ns_per_sample(w) == 75000);
    json_object_set_new(w, "cpu_ns", json_null());
    assert_true(isnan(pb_worker_cpu_ns_per_sample(w)));
    json_object_set_new(w, "cpu_ns", json_integer(0));
    assert_true(isnan(pb_worker_cpu_ns_per_sample(w)));
    json_decref(w);
    w = json_pack("{s i s f}", "samples", 40, "cpu_ns_per_sample", 1234.0);
    assert_true(pb_worker_cpu_ns_per_sample(w) == 1234);
    json_decref(w);
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
        cmocka_unit_test(test_point_figure_is_the_repeats_median),
        cmocka_unit_test(test_worker_cpu_per_sample),
        cmocka_unit_test(test_stall_of_the_repeats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
