/* Memory growth over the measured part of a point: a straight line fitted
 * to the process's RSS samples (20 Hz) against batches, per 1000 batches,
 * with a 95% confidence interval. Each repeat is its own group (its own
 * intercept, one common slope), so memory that a new repeat takes once
 * (thread arenas, the allocator's caches) is not read as growth; what
 * grows with every batch, a leak or a cache without a bound, is. Each
 * sample counts its RSS less own_bytes, pbench's own buffers that fill as
 * the repeat goes (the trace's records, the batch records). The fit
 * reads the floor RSS comes back to (PB_MEMGROWTH_WINDOW), not every
 * sample. A point warns "memory grows N MiB per 1000 batches" when the
 * repeats measured PB_MEMGROWTH_MIN_BATCHES batches or more, the interval
 * excludes 0, the slope is at least the analysis section's
 * memory_growth_mib, the growth is material (PB_MEMGROWTH_MIN_MIB) and as
 * fast in each repeat's second half (settling flattens; a leak does not). */
#ifndef PB_MEMGROWTH_H
#define PB_MEMGROWTH_H

#include <stddef.h>

#include <jansson.h>

#include "bench/result/result.h"

/* A warning also needs the growth to be material: at least this many MiB
 * over a repeat's measured batches, or repeats of at least this many
 * batches and seconds (where the slope is the steady state's, not the
 * allocator settling). */
#define PB_MEMGROWTH_MIN_MIB 16.0
/* Nor is growth judged over repeats of fewer measured batches than this,
 * on average (too short to tell settling from growth). */
#define PB_MEMGROWTH_MIN_BATCHES 50.0
/* The fit reads the floor of RSS: the lowest sample of each run of this
 * many (20 Hz: 0.2 s), so allocating and freeing per sample is no growth. */
#define PB_MEMGROWTH_WINDOW 4
#define PB_MEMGROWTH_LONG_BATCHES 5000.0
#define PB_MEMGROWTH_LONG_S 30.0

/* Least-squares slope of y on x with a separate intercept per group (group
 * ids 0, 1, ...; within-group centering): *slope, and *ci_half the half
 * width of its 95% interval (Student t on n - groups - 1 degrees of
 * freedom). Returns PB_OK, or PB_ERR when there are too few points or x
 * does not vary within any group. */
int pb_slope_fit(const double *x, const double *y, const int *group, size_t n, double *slope,
                 double *ci_half);

/* Fits point's growth from its finished repeats' RSS samples into
 * point->memory_growth (known false when too few samples), and warns in
 * point when significant and at least threshold_mib per 1000 batches. */
void pb_memory_growth_check(struct pb_point_result *point, double threshold_mib);

/* {"mib_per_1000_batches", "ci95_low", "ci95_high", "samples", "repeats",
 * "significant"}, or NULL when not known; and back. */
json_t *pb_memory_growth_to_json(const struct pb_memory_growth *g);
void pb_memory_growth_from_json(const json_t *obj, struct pb_memory_growth *g);

#endif
