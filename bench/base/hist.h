/* Log-linear latency histograms (after fio's stat.c).
 *
 * Values are nanoseconds. Values below 64 have a bucket each; above that,
 * every power of two is split into 64 equal sub-buckets, so a percentile
 * read from the bins is within 1/64 (1.6%) of the true value and, using the
 * bucket midpoint, within 0.8%. One histogram per worker per stage, written
 * by one thread only (no atomics); histograms merge by addition. Mean and
 * variance are tracked exactly alongside (Welford). */
#ifndef PB_HIST_H
#define PB_HIST_H

#include <stddef.h>
#include <stdint.h>

#define PB_HIST_SUB_BITS 6
#define PB_HIST_SUB (1u << PB_HIST_SUB_BITS) /* 64 sub-buckets       */
#define PB_HIST_MAX_BITS 42                  /* up to ~73 minutes     */
#define PB_HIST_BUCKETS ((PB_HIST_MAX_BITS - PB_HIST_SUB_BITS + 1) * PB_HIST_SUB)

struct pb_hist {
    uint64_t count;
    uint64_t min_ns;
    uint64_t max_ns;
    double mean_ns;   /* Welford running mean                     */
    double m2;        /* Welford sum of squared deviations        */
    uint64_t sum_ns;
    uint64_t bins[PB_HIST_BUCKETS];
};

void pb_hist_init(struct pb_hist *h);

/* Records one value. Constant time, no allocation, not thread safe. */
void pb_hist_add(struct pb_hist *h, uint64_t value_ns);

/* Adds src into dst (counts, extremes, and the Welford moments). */
void pb_hist_merge(struct pb_hist *dst, const struct pb_hist *src);

/* The q-th quantile (0 <= q <= 1) from the bins, reported as the midpoint
 * of the bucket holding it, clamped to [min, max]. 0 for an empty one. */
uint64_t pb_hist_quantile(const struct pb_hist *h, double q);

double pb_hist_stddev(const struct pb_hist *h);

/* Bucket index for a value, and the [lo, hi] range a bucket covers. */
size_t pb_hist_bucket(uint64_t value_ns);
void pb_hist_bucket_range(size_t bucket, uint64_t *lo_ns, uint64_t *hi_ns);

#endif
