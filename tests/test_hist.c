/* Histogram percentiles against a sorted-array reference on random data.
 * Error bound: a quantile read from the bins is the midpoint of a bucket
 * 1/64 of a power of two wide, so it is within 1/128 (0.79%) of the exact
 * order statistic, plus one nanosecond of rounding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/hist.h"
#include "bench/base/pb.h"
#include "tests/testutil.h"

static uint64_t rng_state = 12345;
static uint64_t rnd(void)
{
    return pb_test_rnd(&rng_state);
}

/* The nearest-rank quantile of a sorted array, as pb_hist_quantile defines it. */
static uint64_t reference_quantile(const uint64_t *sorted, size_t n, double q)
{
    if (q <= 0)
        return sorted[0];
    if (q >= 1)
        return sorted[n - 1];
    size_t rank = (size_t)ceil(q * (double)n);
    if (rank < 1)
        rank = 1;
    return sorted[rank - 1];
}

static void check_distribution(uint64_t (*draw)(void), size_t n)
{
    struct pb_hist *h = malloc(sizeof(*h));
    uint64_t *values = malloc(n * sizeof(*values));
    pb_hist_init(h);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        values[i] = draw();
        sum += (double)values[i];
        pb_hist_add(h, values[i]);
    }
    qsort(values, n, sizeof(*values), pb_test_cmp_u64);
    static const double qs[] = {0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0};
    for (size_t i = 0; i < PB_ARRAY_LEN(qs); i++) {
        uint64_t exact = reference_quantile(values, n, qs[i]);
        uint64_t got = pb_hist_quantile(h, qs[i]);
        double bound = (double)exact / 128.0 + 1.0;
        if (fabs((double)got - (double)exact) > bound)
            fail_msg("q=%.3f: histogram %llu, exact %llu, bound %.1f", qs[i],
                     (unsigned long long)got, (unsigned long long)exact, bound);
    }
    assert_int_equal(h->count, n);
    assert_int_equal(h->min_ns, values[0]);
    assert_int_equal(h->max_ns, values[n - 1]);
    double mean = sum / (double)n;
    assert_true(fabs(h->mean_ns - mean) <= 1e-6 * mean + 1e-9);
    double m2 = 0;
    for (size_t i = 0; i < n; i++)
        m2 += ((double)values[i] - mean) * ((double)values[i] - mean);
    double sd = n > 1 ? sqrt(m2 / (double)(n - 1)) : 0;
    assert_true(fabs(pb_hist_stddev(h) - sd) <= 1e-6 * sd + 1e-6);
    free(values);
    free(h);
}

static uint64_t draw_uniform_small(void) { return rnd() % 200; }
static uint64_t draw_uniform_wide(void) { return rnd() % 50000000; }
static uint64_t draw_lognormal(void)
{
    /* Box-Muller normal, exponentiated: a latency-like long tail. */
    double u1 = ((double)(rnd() >> 11) + 1) / 9007199254740993.0;
    double u2 = (double)(rnd() >> 11) / 9007199254740992.0;
    double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
    return (uint64_t)exp(13.0 + 1.2 * z); /* median ~0.44 ms */
}

static void test_quantiles_uniform_small(void **state)
{
    (void)state;
    check_distribution(draw_uniform_small, 10000);
}

static void test_quantiles_uniform_wide(void **state)
{
    (void)state;
    check_distribution(draw_uniform_wide, 100000);
}

static void test_quantiles_lognormal(void **state)
{
    (void)state;
    for (int round = 0; round < 5; round++)
        check_distribution(draw_lognormal, 1000 + (size_t)round * 20011);
}

static void test_buckets_cover_every_value(void **state)
{
    (void)state;
    /* Every value lands in a bucket whose range holds it, and bucket
     * indices never decrease as values grow. */
    size_t prev = 0;
    for (uint64_t v = 0; v < 200000; v += 1 + v / 97) {
        size_t b = pb_hist_bucket(v);
        uint64_t lo, hi;
        pb_hist_bucket_range(b, &lo, &hi);
        assert_true(lo <= v && v <= hi);
        assert_true(b >= prev);
        prev = b;
    }
    for (int bit = 6; bit < 64; bit++) {
        uint64_t v = (1ull << bit) + (rnd() & ((1ull << bit) - 1));
        size_t b = pb_hist_bucket(v);
        assert_true(b < PB_HIST_BUCKETS);
        uint64_t lo, hi;
        pb_hist_bucket_range(b, &lo, &hi);
        assert_true(lo <= v && v <= hi);
        if (bit < PB_HIST_MAX_BITS) /* bucket width is at most 1/64 of its start */
            assert_true(hi - lo + 1 <= lo / 64 + 1);
    }
}

static void test_merge_equals_single(void **state)
{
    (void)state;
    struct pb_hist *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *all = malloc(sizeof(*all));
    pb_hist_init(a);
    pb_hist_init(b);
    pb_hist_init(all);
    for (int i = 0; i < 5000; i++) {
        uint64_t v = draw_lognormal();
        pb_hist_add(i % 3 ? a : b, v);
        pb_hist_add(all, v);
    }
    pb_hist_merge(a, b);
    assert_memory_equal(a->bins, all->bins, sizeof(a->bins));
    assert_int_equal(a->count, all->count);
    assert_int_equal(a->sum_ns, all->sum_ns);
    assert_int_equal(a->min_ns, all->min_ns);
    assert_int_equal(a->max_ns, all->max_ns);
    assert_true(fabs(a->mean_ns - all->mean_ns) < 1e-6 * all->mean_ns);
    assert_true(fabs(pb_hist_stddev(a) - pb_hist_stddev(all)) < 1e-6 * pb_hist_stddev(all));
    /* Merging into an empty histogram copies. */
    struct pb_hist *empty = malloc(sizeof(*empty));
    pb_hist_init(empty);
    pb_hist_merge(empty, all);
    assert_int_equal(pb_hist_quantile(empty, 0.5), pb_hist_quantile(all, 0.5));
    free(a);
    free(b);
    free(all);
    free(empty);
}

static void test_empty_and_single(void **state)
{
    (void)state;
    struct pb_hist *h = malloc(sizeof(*h));
    pb_hist_init(h);
    assert_int_equal(pb_hist_quantile(h, 0.5), 0);
    assert_true(pb_hist_stddev(h) == 0);
    pb_hist_add(h, 123456789);
    assert_int_equal(pb_hist_quantile(h, 0.5), 123456789); /* clamped to min/max */
    assert_int_equal(pb_hist_quantile(h, 0.99), 123456789);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantiles_uniform_small),
        cmocka_unit_test(test_quantiles_uniform_wide),
        cmocka_unit_test(test_quantiles_lognormal),
        cmocka_unit_test(test_buckets_cover_every_value),
        cmocka_unit_test(test_merge_equals_single),
        cmocka_unit_test(test_empty_and_single),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
