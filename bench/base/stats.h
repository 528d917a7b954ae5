/* Statistics on plain arrays of numbers: the summaries a point reports
 * (median, nearest-rank quantiles, mean, sample standard deviation,
 * coefficient of variation, Welford running moments) and the two-sample
 * tests `pbench compare` trusts (Mann-Whitney U, bootstrap confidence
 * intervals; docs/statistics.md says why these). Every function here is
 * pure: inputs are never modified, and anything allocated is freed before
 * returning. tests/test_stats.c checks each one against a plain reference
 * on random inputs. */
#ifndef PB_STATS_H
#define PB_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Sorts values ascending in place. */
void pb_sort_double(double *values, size_t n);
void pb_sort_u64(uint64_t *values, size_t n);

/* Student's t quantile at probability p (0.5 < p < 1) with dof degrees of
 * freedom (>= 1), from the normal quantile z by the Cornish-Fisher
 * expansion: within 0.03 of the exact value at 3 degrees of freedom and
 * 0.001 from 10 (t(0.975, 19) = 2.093). z is the normal quantile at p. */
double pb_t_quantile(double z, double dof);

/* The median of n values (the mean of the two middle ones when n is even),
 * from a sorted copy. NAN when n is 0 or the copy cannot be allocated. */
double pb_median(const double *values, size_t n);

/* The nearest-rank q-quantile of an ascending array: the value at rank
 * ceil(q * n), clamped to 1..n (the rank rule of pb_hist_quantile), so
 * q <= 0 gives the minimum and q >= 1 the maximum. 0 when n is 0. */
uint64_t pb_quantile_sorted_u64(const uint64_t *sorted, size_t n, double q);

/* The same for unsorted values, from a sorted copy; 0 when n is 0 or the
 * copy cannot be allocated. */
uint64_t pb_quantile_u64(const uint64_t *values, size_t n, double q);

/* The arithmetic mean (summed in order, then divided); NAN when n is 0. */
double pb_mean(const double *values, size_t n);

/* The sample standard deviation (n - 1 in the denominator), two-pass: the
 * mean first, then the squared deviations from it. 0 when n < 2. */
double pb_stddev(const double *values, size_t n);

/* Welford's running mean and variance, one value at a time, mergeable
 * (Chan et al.) so per-thread accumulators can be combined. Start from
 * PB_WELFORD_INIT or a zeroed struct. */
struct pb_welford {
    uint64_t count;
    double mean;
    double m2;                 /* sum of squared deviations from the mean */
};
#define PB_WELFORD_INIT {0, 0, 0}

void pb_welford_add(struct pb_welford *w, double value);
/* Adds src's values into dst, as if each had been added to dst. */
void pb_welford_merge(struct pb_welford *dst, const struct pb_welford *src);
/* The sample variance and standard deviation; 0 when count < 2. */
double pb_welford_variance(const struct pb_welford *w);
double pb_welford_stddev(const struct pb_welford *w);

/* Coefficient of variation: sample standard deviation / mean, from one
 * Welford pass (the relative noise the stopping rule checks). INFINITY
 * when n < 2 or the mean is not positive, so "too little to tell" never
 * passes a noise target. */
double pb_cv(const double *values, size_t n);

/* Two-sided Mann-Whitney U p-value for x against y: exact by the counting
 * recurrence when there are no ties and n + m <= 30, else the normal
 * approximation with tie and continuity correction. *u (may be NULL) gets
 * U of x: the pairs where x beats y, ties counting a half. NAN when either
 * sample is empty. */
double pb_mann_whitney(const double *x, size_t n, const double *y, size_t m, double *u);

/* Percentile bootstrap confidence interval (confidence in (0, 1), e.g.
 * 0.95) of median(y) / median(x) (ratio) or median(y) - median(x) (diff):
 * resamples rounds, each group resampled with replacement from a
 * splitmix64 stream seeded with seed (0 counts as 1), so the interval is
 * the same for the same inputs. The ratio skips rounds with median(x) of
 * 0. *low and *high get NAN when no round counts or memory runs out. */
void pb_bootstrap_ratio_ci(const double *x, size_t n, const double *y, size_t m, int resamples,
                           double confidence, uint64_t seed, double *low, double *high);
void pb_bootstrap_diff_ci(const double *x, size_t n, const double *y, size_t m, int resamples,
                          double confidence, uint64_t seed, double *low, double *high);

#endif
