/* Log-linear latency histograms (bench/base/hist.h): recording, merging by addition and
 * percentiles within 0.8%. */
#include "bench/base/hist.h"

#include <math.h>
#include <string.h>

void pb_hist_init(struct pb_hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min_ns = UINT64_MAX;
}

size_t pb_hist_bucket(uint64_t v)
{
    if (v < PB_HIST_SUB)
        return (size_t)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v); /* >= SUB_BITS */
    if (msb >= PB_HIST_MAX_BITS)
        return PB_HIST_BUCKETS - 1;
    unsigned shift = msb - PB_HIST_SUB_BITS;
    size_t group = (size_t)shift + 1;
    size_t sub = (size_t)((v >> shift) & (PB_HIST_SUB - 1));
    return group * PB_HIST_SUB + sub;
}

void pb_hist_bucket_range(size_t bucket, uint64_t *lo, uint64_t *hi)
{
    if (bucket < PB_HIST_SUB) {
        *lo = *hi = bucket;
        return;
    }
    size_t group = bucket / PB_HIST_SUB;
    uint64_t sub = bucket % PB_HIST_SUB;
    unsigned shift = (unsigned)group - 1;
    uint64_t base = (uint64_t)(PB_HIST_SUB + sub) << shift;
    *lo = base;
    *hi = base + (1ull << shift) - 1;
    if (bucket == PB_HIST_BUCKETS - 1)
        *hi = UINT64_MAX;
}

void pb_hist_add(struct pb_hist *h, uint64_t v)
{
    h->bins[pb_hist_bucket(v)]++;
    h->count++;
    h->sum_ns += v;
    if (v < h->min_ns)
        h->min_ns = v;
    if (v > h->max_ns)
        h->max_ns = v;
    double delta = (double)v - h->mean_ns;
    h->mean_ns += delta / (double)h->count;
    h->m2 += delta * ((double)v - h->mean_ns);
}

void pb_hist_merge(struct pb_hist *dst, const struct pb_hist *src)
{
    if (src->count == 0)
        return;
    if (dst->count == 0) {
        memcpy(dst, src, sizeof(*dst));
        return;
    }
    for (size_t i = 0; i < PB_HIST_BUCKETS; i++)
        dst->bins[i] += src->bins[i];
    /* Chan et al.'s parallel combination of Welford moments. */
    double n_a = (double)dst->count, n_b = (double)src->count, n = n_a + n_b;
    double delta = src->mean_ns - dst->mean_ns;
    dst->mean_ns += delta * n_b / n;
    dst->m2 += src->m2 + delta * delta * n_a * n_b / n;
    dst->count += src->count;
    dst->sum_ns += src->sum_ns;
    if (src->min_ns < dst->min_ns)
        dst->min_ns = src->min_ns;
    if (src->max_ns > dst->max_ns)
        dst->max_ns = src->max_ns;
}

uint64_t pb_hist_quantile(const struct pb_hist *h, double q)
{
    if (h->count == 0)
        return 0;
    if (q <= 0)
        return h->min_ns;
    if (q >= 1)
        return h->max_ns;
    /* The rank of the quantile, 1-based, as the "nearest rank" method. */
    uint64_t rank = (uint64_t)ceil(q * (double)h->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < PB_HIST_BUCKETS; i++) {
        seen += h->bins[i];
        if (seen >= rank) {
            uint64_t lo, hi;
            pb_hist_bucket_range(i, &lo, &hi);
            uint64_t mid = lo + (hi - lo) / 2;
            if (mid < h->min_ns)
                mid = h->min_ns;
            if (mid > h->max_ns)
                mid = h->max_ns;
            return mid;
        }
    }
    return h->max_ns;
}

double pb_hist_stddev(const struct pb_hist *h)
{
    if (h->count < 2)
        return 0;
    return sqrt(h->m2 / (double)(h->count - 1));
}
