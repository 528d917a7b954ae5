/* GPU accounting without a GPU: per-batch device timings as the GPU loop
 * would harvest them, turned into the repeat's device rows and figures;
 * and the copy/compute overlap against a plain reference on random
 * timelines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/run/gpu_acc.h"

static uint64_t rng = 12345;
static double uniform(double lo, double hi)
{
    rng = pb_mix64(rng);
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* Reference: every copy against every compute interval. */
static double brute_overlap(const double *copy, const double *compute, size_t n)
{
    double total = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double lo = fmax(copy[2 * i], compute[2 * j]);
            double hi = fmin(copy[2 * i + 1], compute[2 * j + 1]);
            if (hi > lo)
                total += hi - lo;
        }
    return total;
}

static void test_overlap_against_reference(void **state)
{
    (void)state;
    for (int trial = 0; trial < 200; trial++) {
        size_t n = 1 + (size_t)uniform(0, 40);
        double *copy = calloc(2 * n, sizeof(double)), *compute = calloc(2 * n, sizeof(double));
        /* Each stream runs its intervals one after another, with gaps. */
        double tc = uniform(0, 50), tk = uniform(0, 50);
        for (size_t i = 0; i < n; i++) {
            copy[2 * i] = tc += uniform(0, 20);
            copy[2 * i + 1] = tc += uniform(1, 30);
            compute[2 * i] = tk += uniform(0, 20);
            compute[2 * i + 1] = tk += uniform(1, 30);
        }
        /* Harvest order is not timeline order. */
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = (size_t)uniform(0, (double)i + 1);
            double c0 = copy[2 * i], c1 = copy[2 * i + 1];
            copy[2 * i] = copy[2 * j], copy[2 * i + 1] = copy[2 * j + 1];
            copy[2 * j] = c0, copy[2 * j + 1] = c1;
        }
        double ref = brute_overlap(copy, compute, n);
        double got = pb_gpu_overlap_ns(copy, compute, n);
        assert_true(fabs(got - ref) <= 1e-9 * (1 + ref));
        free(copy);
        free(compute);
    }
}

static void harvest(struct pb_gpu_acc *acc, bool measured, double begin_ns)
{
    struct pb_gpu_batch_times t = {
        .samples = 8,
        .copy_bytes = 1000,
        .copy_ns = 100,
        .stage_ns = {20, 30},
        .step_ns = 50,
        .copy_begin_ns = begin_ns,
        .copy_end_ns = begin_ns + 100,
        .compute_begin_ns = begin_ns + 60, /* the last 40 ns of the copy overlap */
        .compute_end_ns = begin_ns + 160,
        .measured = measured,
    };
    pb_gpu_acc_harvest(acc, &t);
}

static void test_rows_and_figures(void **state)
{
    (void)state;
    struct pb_gpu_acc acc = {.stage_count = 2, .stage_names = {"normalize", "flip"}};
    pb_gpu_acc_reset(&acc);
    harvest(&acc, false, 0); /* warm-up: not counted */
    for (int i = 0; i < 4; i++)
        harvest(&acc, true, 1000.0 * (i + 1));
    struct pb_repeat_result rep = {0};
    pb_gpu_acc_result(&acc, &rep, 2.0);

    assert_true(rep.gpu.used);
    assert_int_equal(rep.gpu.batches, 4);
    assert_int_equal(rep.gpu.copy_bytes, 4000);
    assert_true(fabs(rep.gpu.copy_ns - 400) < 1e-9);
    assert_true(fabs(rep.gpu.stage_ns - 200) < 1e-9);
    assert_true(fabs(rep.gpu.overlap_ns - 160) < 1e-9);
    assert_true(fabs(rep.gpu.overlap_pct - 40) < 1e-9);
    assert_true(rep.gpu.wall_s == 2.0);

    static const char *const names[] = {"to_device", "normalize", "flip", "step"};
    assert_int_equal(rep.stage_count, 4);
    double share = 0;
    for (size_t k = 0; k < rep.stage_count; k++) {
        assert_string_equal(rep.stages[k].name, names[k]);
        assert_true(rep.stages[k].gpu);
        assert_int_equal(rep.stages[k].hist.count, 4);
        share += rep.stages[k].share_pct;
    }
    assert_true(fabs(share - 100) < 1e-9);
    assert_string_equal(rep.stages[0].counter_names[0], "bytes");
    assert_int_equal(rep.stages[0].counters[0], 4000);
    assert_true(fabs(rep.stages[0].share_pct - 100.0 * 400 / 800) < 1e-9);

    /* A new repeat starts empty. */
    pb_gpu_acc_reset(&acc);
    assert_int_equal(acc.fig.batches, 0);
    assert_int_equal(acc.iv_count, 0);
    free(rep.stages);
    pb_gpu_acc_free(&acc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlap_against_reference),
        cmocka_unit_test(test_rows_and_figures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
