/* Per-stage measurements of the loader threads (bench/run/stagestats.h), merged into the
 * stage rows of a repeat result. */
#include "bench/run/stagestats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"

static int count_names(const char *const *names, int max)
{
    int n = 0;
    while (names && n < max && names[n])
        n++;
    return n;
}

int pb_stage_stats_add(struct pb_stage_stats *st, const char *name,
                       const char *const *substages, const char *const *counters)
{
    if (st->stage_count >= PB_MAX_STAGES)
        return PB_ERR_CONFIG;
    int k = st->stage_count;
    st->names[k] = name;
    st->substage_names[k] = substages;
    st->counter_names[k] = counters;
    st->substage_count[k] = count_names(substages, PB_MAX_SUBSTAGES);
    st->counter_count[k] = count_names(counters, PB_MAX_COUNTERS);
    st->hist[k] = calloc(1, sizeof(struct pb_hist));
    if (!st->hist[k])
        return PB_ERR_NOMEM;
    if (st->substage_count[k]) {
        st->substage_hist[k] = calloc((size_t)st->substage_count[k], sizeof(struct pb_hist));
        if (!st->substage_hist[k]) {
            free(st->hist[k]);
            st->hist[k] = NULL;
            return PB_ERR_NOMEM;
        }
    }
    st->stage_count++;
    pb_hist_init(st->hist[k]);
    for (int i = 0; i < st->substage_count[k]; i++)
        pb_hist_init(&st->substage_hist[k][i]);
    return PB_OK;
}

void pb_stage_stats_reset(struct pb_stage_stats *st)
{
    for (int k = 0; k < st->stage_count; k++) {
        pb_hist_init(st->hist[k]);
        st->cpu_ns[k] = 0;
        for (int i = 0; i < st->substage_count[k]; i++)
            pb_hist_init(&st->substage_hist[k][i]);
        memset(st->counters[k], 0, sizeof(st->counters[k]));
    }
    pb_hist_init(&st->collate_hist);
    st->collate_cpu_ns = 0;
    st->perf_mask = 0;
    memset(st->perf, 0, sizeof(st->perf));
    memset(st->slowest, 0, sizeof(st->slowest));
}

void pb_stage_stats_free(struct pb_stage_stats *st)
{
    for (int k = 0; k < st->stage_count; k++) {
        free(st->hist[k]);
        free(st->substage_hist[k]);
        st->hist[k] = st->substage_hist[k] = NULL;
    }
    st->stage_count = 0;
}

int pb_stage_rows_merge(const struct pb_stage_stats *stats, int threads,
                        struct pb_repeat_result *rep)
{
    const struct pb_stage_stats *w0 = &stats[0];
    size_t rows = 1; /* collate */
    for (int k = 0; k < w0->stage_count; k++)
        rows += 1 + (size_t)w0->substage_count[k];
    rep->stages = calloc(rows, sizeof(*rep->stages));
    if (!rep->stages)
        return PB_ERR_NOMEM;
    size_t row = 0;
    uint64_t total_ns = 0;
    for (int k = 0; k < w0->stage_count; k++) {
        struct pb_stage_result *sr = &rep->stages[row++];
        const char *name = w0->names[k];
        snprintf(sr->name, sizeof(sr->name), "%s", name);
        pb_hist_init(&sr->hist);
        for (int i = 0; i < threads; i++) {
            pb_hist_merge(&sr->hist, stats[i].hist[k]);
            sr->cpu_ns += stats[i].cpu_ns[k];
            for (int c = 0; c < w0->counter_count[k]; c++)
                sr->counters[c] += stats[i].counters[k][c];
            sr->perf_mask |= stats[i].perf_mask;
            for (int c = 0; c < PB_PERF_COUNTERS; c++)
                sr->perf[c] += stats[i].perf[k][c];
        }
        sr->counter_count =
            w0->counter_count[k] < PB_STAGE_COUNTERS ? w0->counter_count[k] : PB_STAGE_COUNTERS;
        for (int c = 0; c < sr->counter_count; c++)
            pb_strlcpy(sr->counter_names[c], w0->counter_names[k][c],
                       sizeof(sr->counter_names[c]));
        total_ns += sr->hist.sum_ns;
        for (int j = 0; j < w0->substage_count[k]; j++) {
            struct pb_stage_result *sub = &rep->stages[row++];
            snprintf(sub->name, sizeof(sub->name), "%.30s.%.30s", name,
                     w0->substage_names[k][j]);
            snprintf(sub->parent, sizeof(sub->parent), "%s", name);
            pb_hist_init(&sub->hist);
            for (int i = 0; i < threads; i++)
                pb_hist_merge(&sub->hist, &stats[i].substage_hist[k][j]);
        }
    }
    struct pb_stage_result *collate = &rep->stages[row++];
    snprintf(collate->name, sizeof(collate->name), "collate");
    pb_hist_init(&collate->hist);
    for (int i = 0; i < threads; i++) {
        pb_hist_merge(&collate->hist, &stats[i].collate_hist);
        collate->cpu_ns += stats[i].collate_cpu_ns;
    }
    total_ns += collate->hist.sum_ns;
    rep->stage_count = row;
    for (size_t k = 0; k < row; k++)
        rep->stages[k].share_pct =
            total_ns ? 100.0 * (double)rep->stages[k].hist.sum_ns / (double)total_ns : 0;
    return PB_OK;
}

void pb_stage_rows_slowest(const struct pb_stage_stats *stats, int threads,
                           struct pb_repeat_result *rep, char *const *paths, uint64_t path_count)
{
    /* The rows are in pb_stage_rows_merge's order: stage k's row, then its
     * sub-stages. */
    size_t row = 0;
    for (int k = 0; k < stats[0].stage_count && row < rep->stage_count; k++) {
        for (int i = 0; i < threads; i++)
            pb_slowest_merge_thread(&rep->stages[row], &stats[i].slowest[k], paths, path_count);
        row += 1 + (size_t)stats[0].substage_count[k];
    }
}
