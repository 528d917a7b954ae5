/* Statistics on plain arrays (bench/base/stats.h): medians, quantiles, moments, and the
 * Mann-Whitney and bootstrap tests pbench compare relies on. */
#include "bench/base/stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"

/* ---- order statistics ---------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void pb_sort_double(double *values, size_t n)
{
    if (n > 1)
        qsort(values, n, sizeof(*values), cmp_double);
}

void pb_sort_u64(uint64_t *values, size_t n)
{
    if (n > 1)
        qsort(values, n, sizeof(*values), cmp_u64);
}

double pb_t_quantile(double z, double dof)
{
    double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2;
    return z + (z3 + z) / (4 * dof) + (5 * z5 + 16 * z3 + 3 * z) / (96 * dof * dof) +
           (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * dof * dof * dof);
}

double pb_median(const double *values, size_t n)
{
    if (n == 0)
        return NAN;
    double small[64], *v = n <= PB_ARRAY_LEN(small) ? small : malloc(n * sizeof(*v));
    if (!v)
        return NAN;
    memcpy(v, values, n * sizeof(*v));
    pb_sort_double(v, n);
    double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    if (v != small)
        free(v);
    return median;
}

uint64_t pb_quantile_sorted_u64(const uint64_t *sorted, size_t n, double q)
{
    if (n == 0)
        return 0;
    double rank = ceil(q * (double)n); /* 1-based */
    if (!(rank > 1))
        return sorted[0];
    if (rank >= (double)n)
        return sorted[n - 1];
    return sorted[(size_t)rank - 1];
}

uint64_t pb_quantile_u64(const uint64_t *values, size_t n, double q)
{
    if (n == 0)
        return 0;
    uint64_t *v = malloc(n * sizeof(*v));
    if (!v)
        return 0;
    memcpy(v, values, n * sizeof(*v));
    pb_sort_u64(v, n);
    uint64_t out = pb_quantile_sorted_u64(v, n, q);
    free(v);
    return out;
}

/* ---- moments ------------------------------------------------------------- */

double pb_mean(const double *values, size_t n)
{
    if (n == 0)
        return NAN;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += values[i];
    return sum / (double)n;
}

double pb_stddev(const double *values, size_t n)
{
    if (n < 2)
        return 0;
    double mean = pb_mean(values, n), m2 = 0;
    for (size_t i = 0; i < n; i++)
        m2 += (values[i] - mean) * (values[i] - mean);
    return sqrt(m2 / (double)(n - 1));
}

void pb_welford_add(struct pb_welford *w, double value)
{
    w->count++;
    double delta = value - w->mean;
    w->mean += delta / (double)w->count;
    w->m2 += delta * (value - w->mean);
}

void pb_welford_merge(struct pb_welford *dst, const struct pb_welford *src)
{
    if (src->count == 0)
        return;
    if (dst->count == 0) {
        *dst = *src;
        return;
    }
    double n_a = (double)dst->count, n_b = (double)src->count, n = n_a + n_b;
    double delta = src->mean - dst->mean;
    dst->mean += delta * n_b / n;
    dst->m2 += src->m2 + delta * delta * n_a * n_b / n;
    dst->count += src->count;
}

double pb_welford_variance(const struct pb_welford *w)
{
    return w->count < 2 ? 0 : w->m2 / (double)(w->count - 1);
}

double pb_welford_stddev(const struct pb_welford *w)
{
    return sqrt(pb_welford_variance(w));
}

double pb_cv(const double *values, size_t n)
{
    if (n < 2)
        return INFINITY;
    struct pb_welford w = PB_WELFORD_INIT;
    for (size_t i = 0; i < n; i++)
        pb_welford_add(&w, values[i]);
    if (w.mean <= 0)
        return INFINITY;
    return pb_welford_stddev(&w) / w.mean;
}

/* ---- Mann-Whitney U ------------------------------------------------------ */

/* P(U <= u_obs) under the null for samples of n and m without ties: the
 * number of arrangements with each U by the recurrence
 * f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u), over the total. */
static double exact_mw_cdf(size_t n, size_t m, double u_obs)
{
    size_t max_u = n * m;
    double **layer = calloc((n + 1) * (m + 1), sizeof(double *));
    if (!layer)
        return NAN;
    for (size_t i = 0; i <= n; i++)
        for (size_t j = 0; j <= m; j++) {
            double *f = calloc(max_u + 1, sizeof(double));
            layer[i * (m + 1) + j] = f;
            if (!f)
                continue;
            if (i == 0 || j == 0) {
                f[0] = 1;
                continue;
            }
            const double *a = layer[(i - 1) * (m + 1) + j], *b = layer[i * (m + 1) + j - 1];
            for (size_t u = 0; u <= i * j; u++)
                f[u] = (u >= j ? a[u - j] : 0) + b[u];
        }
    const double *f = layer[n * (m + 1) + m];
    double total = 0, below = 0;
    for (size_t u = 0; u <= max_u; u++) {
        total += f ? f[u] : 0;
        if ((double)u <= u_obs + 1e-9)
            below += f ? f[u] : 0;
    }
    for (size_t k = 0; k < (n + 1) * (m + 1); k++)
        free(layer[k]);
    free(layer);
    return total > 0 ? below / total : NAN;
}

double pb_mann_whitney(const double *x, size_t n, const double *y, size_t m, double *u_out)
{
    if (n == 0 || m == 0) {
        if (u_out)
            *u_out = NAN;
        return NAN;
    }
    double u = 0;
    bool ties = false;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < m; j++) {
            if (x[i] > y[j])
                u += 1;
            else if (x[i] == y[j]) {
                u += 0.5;
                ties = true;
            }
        }
    if (u_out)
        *u_out = u;
    double nm = (double)n * (double)m;
    double u_small = u < nm - u ? u : nm - u;
    if (!ties && n + m <= 30) {
        double p = 2 * exact_mw_cdf(n, m, u_small);
        return p > 1 ? 1 : p;
    }
    /* Normal approximation with tie correction. */
    size_t total = n + m;
    double *all = malloc(total * sizeof(double));
    if (!all)
        return NAN;
    memcpy(all, x, n * sizeof(double));
    memcpy(all + n, y, m * sizeof(double));
    pb_sort_double(all, total);
    double tie_term = 0;
    for (size_t i = 0; i < total;) {
        size_t j = i;
        while (j < total && all[j] == all[i])
            j++;
        double t = (double)(j - i);
        tie_term += t * t * t - t;
        i = j;
    }
    free(all);
    double N = (double)total;
    double sigma = sqrt(nm / 12.0 * ((N + 1) - tie_term / (N * (N - 1))));
    if (sigma <= 0)
        return 1;
    double z = (fabs(u - nm / 2) - 0.5) / sigma;
    if (z < 0)
        z = 0;
    return erfc(z / sqrt(2.0));
}

/* ---- bootstrap ----------------------------------------------------------- */

static double uniform(uint64_t *state)
{
    *state = pb_mix64(*state);
    return (double)(*state >> 11) / 9007199254740992.0;
}

static void bootstrap(const double *x, size_t n, const double *y, size_t m, int resamples,
                      double confidence, uint64_t seed, bool ratio, double *low, double *high)
{
    double *stats = malloc((size_t)resamples * sizeof(double));
    double *bx = malloc(n * sizeof(double)), *by = malloc(m * sizeof(double));
    if (!stats || !bx || !by) {
        *low = *high = NAN;
        free(stats);
        free(bx);
        free(by);
        return;
    }
    uint64_t state = seed ? seed : 1;
    int kept = 0;
    for (int r = 0; r < resamples; r++) {
        for (size_t i = 0; i < n; i++)
            bx[i] = x[(size_t)(uniform(&state) * (double)n) % n];
        for (size_t j = 0; j < m; j++)
            by[j] = y[(size_t)(uniform(&state) * (double)m) % m];
        double mx = pb_median(bx, n), my = pb_median(by, m);
        if (ratio) {
            if (mx != 0)
                stats[kept++] = my / mx;
        } else {
            stats[kept++] = my - mx;
        }
    }
    if (kept == 0) {
        *low = *high = NAN;
    } else {
        /* The percentile interval: the order statistics at the tails,
         * rounded outwards. */
        pb_sort_double(stats, (size_t)kept);
        double tail = (1 - confidence) / 2;
        size_t lo = (size_t)floor(tail * (kept - 1)), hi = (size_t)ceil((1 - tail) * (kept - 1));
        *low = stats[lo];
        *high = stats[hi];
    }
    free(stats);
    free(bx);
    free(by);
}

void pb_bootstrap_ratio_ci(const double *x, size_t n, const double *y, size_t m, int resamples,
                           double confidence, uint64_t seed, double *low, double *high)
{
    bootstrap(x, n, y, m, resamples, confidence, seed, true, low, high);
}

void pb_bootstrap_diff_ci(const double *x, size_t n, const double *y, size_t m, int resamples,
                          double confidence, uint64_t seed, double *low, double *high)
{
    bootstrap(x, n, y, m, resamples, confidence, seed, false, low, high);
}
