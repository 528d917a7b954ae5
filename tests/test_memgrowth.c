/* The memory-growth check (bench/result/memgrowth.h): the slope fit against a
 * plain reference on random lines, per-repeat intercepts (a step between
 * repeats is not growth), the warning on synthetic RSS samples, and end to
 * end the null decoder's leak_bytes. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/result/memgrowth.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-memgrowth-XXXXXX";

static double uniform(uint64_t *rng)
{
    return (double)(pb_test_rnd(rng) >> 11) / 9007199254740992.0;
}

/* Plain one-group least squares, the textbook formula. */
static double reference_slope(const double *x, const double *y, size_t n)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
    }
    return ((double)n * sxy - sx * sy) / ((double)n * sxx - sx * sx);
}

static void test_fit_matches_reference(void **state)
{
    (void)state;
    uint64_t rng = 42;
    int covered = 0;
    for (int trial = 0; trial < 200; trial++) {
        size_t n = 10 + pb_test_rnd(&rng) % 200;
        double true_slope = (uniform(&rng) - 0.5) * 20, noise = uniform(&rng) * 3;
        double x[210], y[210];
        int group[210] = {0};
        for (size_t i = 0; i < n; i++) {
            x[i] = (double)i * 0.05;
            /* Sum of uniforms: about normal, sd = noise. */
            double e = (uniform(&rng) + uniform(&rng) + uniform(&rng) - 1.5) * 2 * noise;
            y[i] = 100 + true_slope * x[i] + e;
        }
        double slope, half;
        assert_int_equal(pb_slope_fit(x, y, group, n, &slope, &half), PB_OK);
        assert_true(fabs(slope - reference_slope(x, y, n)) < 1e-9 * (1 + fabs(slope)));
        assert_true(half >= 0);
        covered += fabs(slope - true_slope) <= half;
    }
    /* A 95% interval holds the true slope about 190 times in 200. */
    assert_true(covered >= 175);

    /* Too few points, or x constant: no fit. */
    double x[3] = {1, 1, 1}, y[3] = {1, 2, 3};
    int g[3] = {0, 0, 0};
    double slope, half;
    assert_int_not_equal(pb_slope_fit(x, y, g, 3, &slope, &half), PB_OK);
    double x5[5] = {1, 1, 1, 1, 1}, y5[5] = {1, 2, 3, 4, 5};
    int g5[5] = {0};
    assert_int_not_equal(pb_slope_fit(x5, y5, g5, 5, &slope, &half), PB_OK);
}

static void test_steps_between_groups_are_not_growth(void **state)
{
    (void)state;
    /* Three repeats, flat inside, each 50 MiB above the last. */
    double x[60], y[60];
    int group[60];
    for (int i = 0; i < 60; i++) {
        group[i] = i / 20;
        x[i] = (double)i * 0.1; /* batches go on across repeats */
        y[i] = 100 + 50 * group[i] + ((i * 7) % 3) * 0.01;
    }
    double slope, half;
    assert_int_equal(pb_slope_fit(x, y, group, 60, &slope, &half), PB_OK);
    assert_true(fabs(slope) < 0.05);
    /* One group over the same data would see growth. */
    int one[60] = {0};
    double pooled;
    assert_int_equal(pb_slope_fit(x, y, one, 60, &pooled, &half), PB_OK);
    assert_true(pooled > 10);
}

/* A point of repeats whose RSS grows by mib_per_kbatch of the pipeline's
 * and own_per_kbatch of pbench's own buffers (recorded in own_bytes), at
 * 100 batches/s, sampled at 20 Hz for 2 s, each repeat starting 30 MiB
 * higher. */
static void make_point_own(struct pb_point_result *p, struct pb_repeat_result *reps,
                           struct pb_rss_sample *samples, double mib_per_kbatch,
                           double own_per_kbatch)
{
    memset(p, 0, sizeof(*p));
    p->repeats = reps;
    p->repeat_count = 3;
    for (int r = 0; r < 3; r++) {
        struct pb_repeat_result *rep = &reps[r];
        memset(rep, 0, sizeof(*rep));
        rep->wall_s = 1.5; /* the first 0.5 s is warm-up */
        rep->batches_per_s = 100;
        rep->rss = samples + r * 40;
        rep->rss_count = 40;
        for (int i = 0; i < 40; i++) {
            double t = 0.05 * (i + 1);
            double batches = t > 0.5 ? (t - 0.5) * 100 : 0;
            rep->rss[i].t_s = t;
            double own_mib = 5 + own_per_kbatch * batches / 1000;
            rep->rss[i].own_bytes = (uint64_t)(own_mib * 1048576.0);
            rep->rss[i].rss_bytes =
                (uint64_t)((200 + 30 * r + own_mib + mib_per_kbatch * batches / 1000 +
                            (i % 2) * 0.001) *
                           1048576.0);
        }
    }
}

static void make_point(struct pb_point_result *p, struct pb_repeat_result *reps,
                       struct pb_rss_sample *samples, double mib_per_kbatch)
{
    make_point_own(p, reps, samples, mib_per_kbatch, 0);
}

static void test_warning_on_synthetic_samples(void **state)
{
    (void)state;
    struct pb_point_result p;
    struct pb_repeat_result reps[3];
    struct pb_rss_sample samples[120];
    make_point(&p, reps, samples, 640); /* 64 MiB over a repeat's 100 batches */
    pb_memory_growth_check(&p, 1.0);
    assert_true(p.memory_growth.known);
    assert_true(p.memory_growth.significant);
    assert_true(fabs(p.memory_growth.mib_per_1000_batches - 640) < 1);
    assert_int_equal(p.memory_growth.repeats, 3);
    assert_int_equal(p.warning_count, 1);
    assert_non_null(strstr(p.warnings[0], "memory grows 640"));
    assert_non_null(strstr(p.warnings[0], "per 1000 batches"));

    /* Round trip through JSON. */
    json_t *j = pb_memory_growth_to_json(&p.memory_growth);
    struct pb_memory_growth back;
    pb_memory_growth_from_json(j, &back);
    json_decref(j);
    assert_true(back.known && back.significant);
    assert_true(fabs(back.mib_per_1000_batches - p.memory_growth.mib_per_1000_batches) < 1e-9);

    /* Significant, but 6.4 MiB over a repeat of 100 batches: settling as
     * much as a leak; measured, not warned about. */
    make_point(&p, reps, samples, 64);
    pb_memory_growth_check(&p, 1.0);
    assert_true(p.memory_growth.significant);
    assert_int_equal(p.warning_count, 0);

    /* Growth under the threshold: measured, not warned about. */
    make_point(&p, reps, samples, 0.5);
    pb_memory_growth_check(&p, 1.0);
    assert_true(p.memory_growth.known);
    assert_int_equal(p.warning_count, 0);

    /* Flat, with the steps between repeats: nothing. */
    make_point(&p, reps, samples, 0);
    pb_memory_growth_check(&p, 1.0);
    assert_true(p.memory_growth.known);
    assert_false(p.memory_growth.mib_per_1000_batches > 0.01);
    assert_int_equal(p.warning_count, 0);
}

/* pbench's own trace buffers grow with the batches; they are not the
 * pipeline's leak. */
static void test_own_buffers_are_not_growth(void **state)
{
    (void)state;
    struct pb_point_result p;
    struct pb_repeat_result reps[3];
    struct pb_rss_sample samples[120];
    /* RSS rises 64 MiB over a repeat, all of it pbench's own: no warning. */
    make_point_own(&p, reps, samples, 0, 640);
    pb_memory_growth_check(&p, 1.0);
    assert_true(p.memory_growth.known);
    assert_true(fabs(p.memory_growth.mib_per_1000_batches) < 0.01);
    assert_false(p.memory_growth.significant && p.memory_growth.mib_per_1000_batches > 0);
    assert_int_equal(p.warning_count, 0);

    /* The same rise without own_bytes recorded (a result from an older
     * pbench, or a leak): a warning. */
    for (int i = 0; i < 120; i++)
        samples[i].own_bytes = 0;
    pb_memory_growth_check(&p, 1.0);
    assert_true(fabs(p.memory_growth.mib_per_1000_batches - 640) < 1);
    assert_int_equal(p.warning_count, 1);
    assert_non_null(strstr(p.warnings[0], "memory grows 640"));

    /* A leak beside pbench's own growth is still found, at its own rate. */
    make_point_own(&p, reps, samples, 320, 640);
    pb_memory_growth_check(&p, 1.0);
    assert_true(fabs(p.memory_growth.mib_per_1000_batches - 320) < 1);
    assert_int_equal(p.warning_count, 1);
    assert_non_null(strstr(p.warnings[0], "memory grows 320"));
}

/* RSS of repeat r at t seconds (the measured part from 0.5 s), in MiB. */
typedef double (*rss_shape)(int r, int i, double t);

/* A point of 3 repeats of `seconds` measured at batches_per_s, sampled
 * at 20 Hz from 0.05 s, RSS given by shape. samples holds 3 x count. */
static void make_shaped_point(struct pb_point_result *p, struct pb_repeat_result *reps,
                              struct pb_rss_sample *samples, int count, double seconds,
                              double batches_per_s, rss_shape shape)
{
    memset(p, 0, sizeof(*p));
    p->repeats = reps;
    p->repeat_count = 3;
    for (int r = 0; r < 3; r++) {
        struct pb_repeat_result *rep = &reps[r];
        memset(rep, 0, sizeof(*rep));
        rep->wall_s = seconds;
        rep->batches_per_s = batches_per_s;
        rep->rss = samples + r * count;
        rep->rss_count = (size_t)count;
        for (int i = 0; i < count; i++) {
            double t = 0.05 * (i + 1);
            rep->rss[i].t_s = t;
            rep->rss[i].rss_bytes = (uint64_t)(shape(r, i, t) * 1048576.0);
        }
    }
}

/* Workers touching their pages once: 300 MiB more, most of it in the
 * first second, then flat. */
static double settling(int r, int i, double t)
{
    (void)i;
    return 200 + 10 * r + 300 * (1 - exp(-3 * t));
}

/* A Dataset allocating and freeing 1 GB per sample: every other sample
 * catches the allocation. */
static double sawtooth(int r, int i, double t)
{
    (void)t;
    return 300 + 5 * r + ((i * 7 + r) % 3 == 0 ? 1000 : 0);
}

/* A leak of 640 MiB per 1000 batches at 10 batches/s. */
static double slow_leak(int r, int i, double t)
{
    (void)i;
    return 200 + 30 * r + 640 * (t > 0.5 ? (t - 0.5) * 10 : 0) / 1000;
}

/* What is not growth: memory that settles early in a repeat, memory
 * allocated and freed per sample, and a leak over repeats too short to
 * judge (under PB_MEMGROWTH_MIN_BATCHES) - none warns; the short one says
 * it was not judged. */
static void test_settling_sawtooth_and_short_runs_are_not_growth(void **state)
{
    (void)state;
    struct pb_point_result p;
    struct pb_repeat_result reps[3];
    static struct pb_rss_sample samples[3 * 90];

    make_shaped_point(&p, reps, samples, 90, 4.0, 12, settling); /* a 4 s repeat, 48 batches */
    pb_memory_growth_check(&p, 1.0);
    assert_true(p.memory_growth.known);
    assert_int_equal(p.warning_count, 0);
    make_shaped_point(&p, reps, samples, 90, 4.0, 100, settling); /* 400 batches: judged */
    pb_memory_growth_check(&p, 1.0);
    assert_true(p.memory_growth.judged);
    assert_int_equal(p.warning_count, 0);

    make_shaped_point(&p, reps, samples, 90, 4.0, 100, sawtooth);
    pb_memory_growth_check(&p, 1.0);
    assert_true(p.memory_growth.known);
    print_message("sawtooth: %.1f MiB per 1000 batches\n", p.memory_growth.mib_per_1000_batches);
    assert_true(fabs(p.memory_growth.mib_per_1000_batches) < 50); /* not 976976 */
    assert_int_equal(p.warning_count, 0);

    make_shaped_point(&p, reps, samples, 40, 1.5, 10, slow_leak); /* 15 batches a repeat */
    pb_memory_growth_check(&p, 1.0);
    assert_true(p.memory_growth.known);
    assert_false(p.memory_growth.judged);
    assert_int_equal(p.warning_count, 0);
}

static void test_null_decoder_leak_end_to_end(void **state)
{
    (void)state;
    const char *src = getenv("PBENCH_SOURCE_DIR");
    if (!src || !getenv("PBENCH_BINARY"))
        fail_msg("PBENCH_BINARY and PBENCH_SOURCE_DIR must be set (ctest sets them)");
    static const char *const common =
        "-s dataset.path=data -s dataset.generate.count=64 -s dataset.generate.size_bytes=4096 "
        /* Repeats of 1.5 s or more: growth is judged over 50 batches a
         * repeat (PB_MEMGROWTH_MIN_BATCHES), and under ASan a batch of this
         * pipeline takes over 20 ms. */
        "-s run.warmup_batches=2 -s run.min_time_s=1.5 -s run.max_time_s=2 -s run.repeats=2 "
        "-s pipeline.decode.cost_us=100 -s run.step_ms=0 -q "
        /* Under AddressSanitizer the allocator's quarantine grows RSS by a
         * few MiB per 1000 batches by itself; the leak is 2 GiB. */
        "-s analysis.memory_growth_mib=50";
    char args[2048], path[600], *err;
    snprintf(args, sizeof(args), "run '%s/configs/null.yaml' %s "
             "-s pipeline.decode.leak_bytes=65536 -o leak.json", src, common);
    assert_int_equal(pb_test_run_pbench(workdir, args, &err), 0);
    free(err);
    snprintf(path, sizeof(path), "%s/out.txt", workdir);
    char *out = pb_test_read_file(path, NULL, true);
    bool warned = strstr(out, "memory grows") != NULL;
    if (!warned)
        fprintf(stderr, "no memory growth warning in:\n%s\n", out);
    free(out);
    assert_true(warned);
    json_t *r = pb_test_load_json(workdir, "leak.json");
    json_t *g = json_object_get(json_array_get(json_object_get(r, "points"), 0), "memory_growth");
    assert_true(json_is_true(json_object_get(g, "significant")));
    /* 32 samples a batch x 64 KiB: about 2 GiB per 1000 batches. */
    double slope = json_number_value(json_object_get(g, "mib_per_1000_batches"));
    assert_true(slope > 1000 && slope < 4000);
    json_decref(r);

    snprintf(args, sizeof(args), "run '%s/configs/null.yaml' %s -o plain.json", src, common);
    assert_int_equal(pb_test_run_pbench(workdir, args, &err), 0);
    free(err);
    out = pb_test_read_file(path, NULL, true);
    warned = strstr(out, "memory grows") != NULL;
    free(out);
    assert_false(warned);
}

int main(void)
{
    pb_test_tmpdir_use(workdir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_matches_reference),
        cmocka_unit_test(test_steps_between_groups_are_not_growth),
        cmocka_unit_test(test_warning_on_synthetic_samples),
        cmocka_unit_test(test_own_buffers_are_not_growth),
        cmocka_unit_test(test_settling_sawtooth_and_short_runs_are_not_growth),
        cmocka_unit_test(test_null_decoder_leak_end_to_end),
    };
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
