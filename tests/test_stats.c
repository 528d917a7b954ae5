/* bench/base/stats.c against plain reference implementations on random inputs:
 * an insertion-sort median, a counting nearest-rank quantile, long-double
 * two-pass moments, a brute-force U statistic and an enumeration of every
 * split for exact Mann-Whitney p-values, and p-values of the normal
 * approximation worked out by hand (erfc of the tie-corrected z). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/base/stats.h"

static uint64_t rng_state = 2024;
static uint64_t rnd(void)
{
    rng_state = pb_mix64(rng_state);
    return rng_state;
}

/* Uniform in [0, 1). */
static double uniform(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

/* Random values, some repeated so ties occur: every fourth input is drawn
 * from a small set of integers. */
static void random_values(double *values, size_t n, double scale)
{
    for (size_t i = 0; i < n; i++)
        values[i] = i % 4 == 3 ? (double)(rnd() % 5) : scale * (uniform() - 0.3);
}

static void assert_close(double got, double want, double rel)
{
    double tol = rel * fmax(1.0, fabs(want));
    if (!(fabs(got - want) <= tol))
        fail_msg("got %.17g, want %.17g (tolerance %.3g)", got, want, tol);
}

/* ---- references ---------------------------------------------------------- */

static void insertion_sort(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        double x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static double reference_median(const double *values, size_t n)
{
    double *v = malloc(n * sizeof(*v));
    memcpy(v, values, n * sizeof(*v));
    insertion_sort(v, n);
    double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    free(v);
    return median;
}

/* The nearest-rank quantile by counting: the smallest value that at least
 * q * n values are at or below (the minimum for q <= 0). */
static uint64_t reference_quantile(const uint64_t *values, size_t n, double q)
{
    uint64_t best = UINT64_MAX;
    q = fmin(q, 1.0);
    for (size_t i = 0; i < n; i++) {
        size_t at_or_below = 0;
        for (size_t j = 0; j < n; j++)
            at_or_below += values[j] <= values[i];
        if ((double)at_or_below >= q * (double)n && values[i] < best)
            best = values[i];
    }
    return best;
}

static void reference_moments(const double *v, size_t n, double *mean, double *stddev)
{
    long double sum = 0, m2 = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    long double mu = sum / (long double)n;
    for (size_t i = 0; i < n; i++)
        m2 += (v[i] - mu) * (v[i] - mu);
    *mean = (double)mu;
    *stddev = n > 1 ? (double)sqrtl(m2 / (long double)(n - 1)) : 0;
}

static double reference_u(const double *x, size_t n, const double *y, size_t m)
{
    double u = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < m; j++)
            u += x[i] > y[j] ? 1 : x[i] == y[j] ? 0.5 : 0;
    return u;
}

/* The two-sided exact p-value: the share of all splits of the pooled
 * values into groups of n and m whose U is at least as far from n*m/2. */
static void enumerate_splits(const double *all, size_t total, size_t n, size_t next, unsigned mask,
                             double extreme, long *hits, long *splits)
{
    if ((size_t)__builtin_popcount(mask) == n) {
        double u = 0, nm = (double)n * (double)(total - n);
        for (size_t i = 0; i < total; i++)
            for (size_t j = 0; j < total; j++)
                if ((mask >> i & 1) && !(mask >> j & 1))
                    u += all[i] > all[j] ? 1 : all[i] == all[j] ? 0.5 : 0;
        (*splits)++;
        *hits += fabs(u - nm / 2) >= extreme - 1e-9;
        return;
    }
    for (size_t i = next; i < total; i++)
        enumerate_splits(all, total, n, i + 1, mask | 1u << i, extreme, hits, splits);
}

static double reference_exact_p(const double *x, size_t n, const double *y, size_t m)
{
    double all[16];
    memcpy(all, x, n * sizeof(double));
    memcpy(all + n, y, m * sizeof(double));
    double extreme = fabs(reference_u(x, n, y, m) - (double)n * (double)m / 2);
    long hits = 0, splits = 0;
    enumerate_splits(all, n + m, n, 0, 0, extreme, &hits, &splits);
    return (double)hits / (double)splits;
}

/* ---- tests --------------------------------------------------------------- */

static void test_sort(void **state)
{
    (void)state;
    double d[257];
    uint64_t u[257];
    for (size_t n = 0; n <= 257; n += 16) {
        double sum = 0, sorted_sum = 0;
        random_values(d, n, 1e6);
        for (size_t i = 0; i < n; i++) {
            u[i] = rnd() % 1000;
            sum += d[i];
        }
        pb_sort_double(d, n);
        pb_sort_u64(u, n);
        for (size_t i = 0; i < n; i++)
            sorted_sum += d[i];
        for (size_t i = 1; i < n; i++) {
            assert_true(d[i - 1] <= d[i]);
            assert_true(u[i - 1] <= u[i]);
        }
        assert_close(sorted_sum, sum, 1e-9);
    }
}

/* Student's t quantiles against the tables' values (0.975 and 0.95). */
static void test_t_quantile(void **state)
{
    (void)state;
    static const struct {
        double dof, t975, t95;
    } table[] = {{3, 3.182, 2.353}, {4, 2.776, 2.132}, {10, 2.228, 1.812},
                 {19, 2.093, 1.729}, {60, 2.000, 1.671}};
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        assert_true(fabs(pb_t_quantile(1.959964, table[i].dof) - table[i].t975) < 0.03);
        assert_true(fabs(pb_t_quantile(1.644854, table[i].dof) - table[i].t95) < 0.03);
        if (table[i].dof >= 10)
            assert_true(fabs(pb_t_quantile(1.959964, table[i].dof) - table[i].t975) < 0.002);
    }
}

static void test_median(void **state)
{
    (void)state;
    assert_true(isnan(pb_median(NULL, 0)));
    /* Both sides of the small-buffer size and odd and even counts. */
    static const size_t sizes[] = {1, 2, 3, 4, 7, 10, 63, 64, 65, 100, 501};
    double values[501], copy[501];
    for (size_t s = 0; s < PB_ARRAY_LEN(sizes); s++) {
        for (int trial = 0; trial < 20; trial++) {
            size_t n = sizes[s];
            random_values(values, n, 1000);
            memcpy(copy, values, n * sizeof(double));
            assert_true(pb_median(values, n) == reference_median(values, n));
            assert_memory_equal(values, copy, n * sizeof(double)); /* input untouched */
        }
    }
}

static void test_quantiles(void **state)
{
    (void)state;
    static const double qs[] = {-0.5, 0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0, 2.0};
    assert_int_equal(pb_quantile_u64(NULL, 0, 0.5), 0);
    assert_int_equal(pb_quantile_sorted_u64(NULL, 0, 0.5), 0);
    uint64_t values[300], sorted[300];
    for (int trial = 0; trial < 60; trial++) {
        size_t n = 1 + (size_t)(rnd() % 300);
        uint64_t range = trial % 2 ? 10 : 1000000; /* many ties, or few */
        for (size_t i = 0; i < n; i++)
            values[i] = rnd() % range;
        memcpy(sorted, values, n * sizeof(uint64_t));
        pb_sort_u64(sorted, n);
        for (size_t k = 0; k < PB_ARRAY_LEN(qs); k++) {
            uint64_t want = reference_quantile(values, n, qs[k]);
            assert_int_equal(pb_quantile_u64(values, n, qs[k]), want);
            assert_int_equal(pb_quantile_sorted_u64(sorted, n, qs[k]), want);
        }
    }
    /* Nearest rank by hand: of 1..10, p50 is the 5th value, p99 the 10th. */
    const uint64_t ten[] = {7, 1, 3, 9, 5, 2, 8, 4, 10, 6};
    assert_int_equal(pb_quantile_u64(ten, 10, 0.50), 5);
    assert_int_equal(pb_quantile_u64(ten, 10, 0.51), 6);
    assert_int_equal(pb_quantile_u64(ten, 10, 0.99), 10);
}

static void test_mean_and_stddev(void **state)
{
    (void)state;
    assert_true(isnan(pb_mean(NULL, 0)));
    const double one = 42;
    assert_true(pb_mean(&one, 1) == 42);
    assert_true(pb_stddev(&one, 1) == 0);
    /* 100, 120, 110: mean 110, sample stddev sqrt((100 + 100 + 0) / 2). */
    const double three[] = {100, 120, 110};
    assert_close(pb_mean(three, 3), 110, 1e-15);
    assert_close(pb_stddev(three, 3), 10, 1e-15);
    double values[400];
    for (int trial = 0; trial < 50; trial++) {
        size_t n = 2 + (size_t)(rnd() % 399);
        /* A large offset makes a one-pass sum of squares lose digits. */
        double offset = trial % 2 ? 1e9 : 0;
        random_values(values, n, 100);
        for (size_t i = 0; i < n; i++)
            values[i] += offset;
        double mean, stddev;
        reference_moments(values, n, &mean, &stddev);
        assert_close(pb_mean(values, n), mean, 1e-12);
        assert_close(pb_stddev(values, n), stddev, 1e-6);
    }
}

static void test_welford(void **state)
{
    (void)state;
    struct pb_welford empty = PB_WELFORD_INIT;
    assert_true(pb_welford_variance(&empty) == 0);
    double values[500];
    for (int trial = 0; trial < 40; trial++) {
        size_t n = 1 + (size_t)(rnd() % 500), split = (size_t)(rnd() % (n + 1));
        random_values(values, n, 1e4);
        struct pb_welford all = PB_WELFORD_INIT, a = PB_WELFORD_INIT, b = PB_WELFORD_INIT;
        for (size_t i = 0; i < n; i++) {
            pb_welford_add(&all, values[i]);
            pb_welford_add(i < split ? &a : &b, values[i]);
        }
        double mean, stddev;
        reference_moments(values, n, &mean, &stddev);
        assert_int_equal(all.count, n);
        assert_close(all.mean, mean, 1e-9);
        assert_close(pb_welford_stddev(&all), stddev, 1e-9);
        assert_close(pb_welford_variance(&all), stddev * stddev, 1e-9);
        /* Merging the two halves equals adding everything to one. */
        pb_welford_merge(&a, &b);
        assert_int_equal(a.count, n);
        assert_close(a.mean, all.mean, 1e-9);
        assert_close(pb_welford_variance(&a), pb_welford_variance(&all), 1e-9);
    }
}

static void test_coefficient_of_variation(void **state)
{
    (void)state;
    const double one = 5, flat[] = {3, 3, 3}, negative[] = {-1, -2, -3};
    assert_true(isinf(pb_cv(NULL, 0)));
    assert_true(isinf(pb_cv(&one, 1)));
    assert_true(pb_cv(flat, 3) == 0);
    assert_true(isinf(pb_cv(negative, 3))); /* no positive mean: never "quiet" */
    double values[200];
    for (int trial = 0; trial < 40; trial++) {
        size_t n = 2 + (size_t)(rnd() % 199);
        for (size_t i = 0; i < n; i++)
            values[i] = 1000 + 100 * uniform();
        double mean, stddev;
        reference_moments(values, n, &mean, &stddev);
        assert_close(pb_cv(values, n), stddev / mean, 1e-9);
    }
}

static void test_mann_whitney_u_statistic(void **state)
{
    (void)state;
    double x[40] = {0}, y[40] = {0}, u_x, u_y;
    assert_true(isnan(pb_mann_whitney(x, 0, y, 3, &u_x)));
    assert_true(isnan(u_x));
    for (int trial = 0; trial < 50; trial++) {
        size_t n = 1 + (size_t)(rnd() % 40), m = 1 + (size_t)(rnd() % 40);
        random_values(x, n, 5);
        random_values(y, m, 5);
        double p = pb_mann_whitney(x, n, y, m, &u_x);
        double q = pb_mann_whitney(y, m, x, n, &u_y);
        assert_true(u_x == reference_u(x, n, y, m));
        assert_true(u_x + u_y == (double)n * (double)m);
        assert_true(p >= 0 && p <= 1);
        assert_close(p, q, 1e-12); /* two-sided: symmetric in the groups */
    }
}

static void test_mann_whitney_exact_against_enumeration(void **state)
{
    (void)state;
    double x[8], y[8];
    for (int trial = 0; trial < 60; trial++) {
        size_t n = 1 + (size_t)(rnd() % 6), m = 1 + (size_t)(rnd() % 6);
        double shift = trial % 3 ? 0.5 : 0;
        for (size_t i = 0; i < n; i++)
            x[i] = uniform(); /* continuous: no ties, so the exact test runs */
        for (size_t j = 0; j < m; j++)
            y[j] = uniform() + shift;
        double p = pb_mann_whitney(x, n, y, m, NULL);
        double want = fmin(1, reference_exact_p(x, n, y, m));
        if (fabs(p - want) > 1e-9)
            fail_msg("n=%zu m=%zu: p %.9f, enumeration %.9f", n, m, p, want);
    }
    /* Complete separation of 5 and 5: p = 2 / C(10, 5). */
    const double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};
    assert_close(pb_mann_whitney(a, 5, b, 5, NULL), 2.0 / 252.0, 1e-12);
}

static void test_mann_whitney_normal_approximation(void **state)
{
    (void)state;
    /* p = erfc(z / sqrt(2)), z = (|U - nm/2| - 0.5) / sigma and
     * sigma^2 = nm/12 ((N + 1) - sum(t^3 - t) / (N (N - 1))), worked out
     * with Python's math.erfc. */
    double x[20], y[20], u;
    for (int i = 0; i < 20; i++) {
        x[i] = 2 * i;     /* n + m = 40 > 30: no exact test */
        y[i] = 2 * i + 1; /* U of x = C(20, 2) = 190 */
    }
    assert_close(pb_mann_whitney(x, 20, y, 20, &u), 0.79719741926917476, 1e-12);
    assert_true(u == 190);
    const double tx[] = {1, 1, 2, 2, 3, 3, 4, 5, 5, 6}, ty[] = {3, 4, 4, 5, 6, 6, 7, 7, 8, 9, 9};
    assert_close(pb_mann_whitney(tx, 10, ty, 11, &u), 0.0051142862794333445, 1e-12);
    assert_true(u == 15);
    double ox[16], oy[16];
    for (int i = 0; i < 16; i++) {
        ox[i] = i + 1;
        oy[i] = i + 9; /* 8 tied values */
    }
    assert_close(pb_mann_whitney(ox, 16, oy, 16, &u), 0.00031585934542714412, 1e-12);
    assert_true(u == 32);
}

static void test_bootstrap(void **state)
{
    (void)state;
    double x[12], y[12], lo, hi, lo2, hi2;
    /* Constant groups: every resample gives the same statistic. */
    for (int i = 0; i < 12; i++) {
        x[i] = 50;
        y[i] = 60;
    }
    pb_bootstrap_ratio_ci(x, 12, y, 12, 500, 0.95, 7, &lo, &hi);
    assert_true(lo == 1.2 && hi == 1.2);
    pb_bootstrap_diff_ci(x, 12, y, 12, 500, 0.95, 7, &lo, &hi);
    assert_true(lo == 10 && hi == 10);
    /* A zero median in x has no ratio. */
    for (int i = 0; i < 12; i++)
        x[i] = 0;
    pb_bootstrap_ratio_ci(x, 12, y, 12, 500, 0.95, 7, &lo, &hi);
    assert_true(isnan(lo) && isnan(hi));
    for (int trial = 0; trial < 20; trial++) {
        size_t n = 3 + (size_t)(rnd() % 10), m = 3 + (size_t)(rnd() % 10);
        for (size_t i = 0; i < n; i++)
            x[i] = 100 + 10 * uniform();
        for (size_t j = 0; j < m; j++)
            y[j] = 120 + 10 * uniform();
        uint64_t seed = rnd();
        pb_bootstrap_ratio_ci(x, n, y, m, 1000, 0.95, seed, &lo, &hi);
        pb_bootstrap_ratio_ci(x, n, y, m, 1000, 0.95, seed, &lo2, &hi2);
        assert_true(lo == lo2 && hi == hi2); /* seeded: the same interval */
        /* The interval lies within the ratios resampling can produce and
         * holds the plug-in estimate. */
        double estimate = reference_median(y, m) / reference_median(x, n);
        assert_true(lo <= estimate && estimate <= hi);
        assert_true(lo >= 120.0 / 110 && hi <= 130.0 / 100);
        pb_bootstrap_diff_ci(x, n, y, m, 1000, 0.95, seed, &lo, &hi);
        estimate = reference_median(y, m) - reference_median(x, n);
        assert_true(lo <= estimate && estimate <= hi);
        assert_true(lo >= 10 && hi <= 30);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_t_quantile),
        cmocka_unit_test(test_quantiles),
        cmocka_unit_test(test_mean_and_stddev),
        cmocka_unit_test(test_welford),
        cmocka_unit_test(test_coefficient_of_variation),
        cmocka_unit_test(test_mann_whitney_u_statistic),
        cmocka_unit_test(test_mann_whitney_exact_against_enumeration),
        cmocka_unit_test(test_mann_whitney_normal_approximation),
        cmocka_unit_test(test_bootstrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
