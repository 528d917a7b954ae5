/* Per-stage measurements of the loader threads, and their merge into the
 * stage rows of a repeat result.
 *
 * Each loader thread (worker, or the consumer when it loads) owns one
 * pb_stage_stats for its stage chain and writes it without locks or
 * atomics: per stage a wall-time histogram, thread CPU time, the decoder's
 * sub-stage histograms and counters, and per batch the assembly time left
 * outside the stages ("collate"). After a repeat the threads' stats are
 * merged by addition into rows: each pipeline stage, then its decoder's
 * sub-stages as rows of their own, then collate. */
#ifndef PB_STAGESTATS_H
#define PB_STAGESTATS_H

#include <stdint.h>

#include "bench/base/hist.h"
#include "bench/config/config.h"
#include "bench/result/result.h"
#include "bench/result/slowest.h"
#include "decoders/decoder.h"

struct pb_stage_stats {
    int stage_count;
    const char *names[PB_MAX_STAGES];
    /* The stage's (or its decoder's) sub-stage and counter names,
     * NULL-terminated, or NULL. */
    const char *const *substage_names[PB_MAX_STAGES];
    const char *const *counter_names[PB_MAX_STAGES];
    int substage_count[PB_MAX_STAGES];
    int counter_count[PB_MAX_STAGES];
    struct pb_hist *hist[PB_MAX_STAGES];          /* one each, owned */
    uint64_t cpu_ns[PB_MAX_STAGES];               /* thread CPU in the stage */
    struct pb_hist *substage_hist[PB_MAX_STAGES]; /* substage_count each, owned */
    uint64_t counters[PB_MAX_STAGES][PB_MAX_COUNTERS];
    /* Per batch: assembly time outside the stages (sampler, slot handling;
     * samples are written into the batch in place, so "collate" is what is
     * left of a DataLoader's collate). */
    struct pb_hist collate_hist;
    uint64_t collate_cpu_ns;
    /* profile.level comprehensive: perf counters per stage (bench/run/perfcount.h);
     * perf_mask: which ones this thread counted. */
    unsigned perf_mask;
    uint64_t perf[PB_MAX_STAGES][PB_PERF_COUNTERS];
    struct pb_slowest slowest[PB_MAX_STAGES]; /* per stage, this thread's */
};

/* Appends a stage named name with its sub-stages and counters (its
 * decoder's, or the ones the stage declared at init; NULL-terminated
 * names, or NULL). The strings must outlive stats. Returns PB_OK,
 * PB_ERR_NOMEM, or PB_ERR_CONFIG past PB_MAX_STAGES stages. */
int pb_stage_stats_add(struct pb_stage_stats *stats, const char *name,
                       const char *const *substages, const char *const *counters);

/* Empties every histogram and counter, for a new repeat. */
void pb_stage_stats_reset(struct pb_stage_stats *stats);

/* Releases the histograms and forgets the stages. */
void pb_stage_stats_free(struct pb_stage_stats *stats);

/* Merges threads' stats (the same stage chain each) into rep->stages
 * (allocated here, owned by rep), with each row's share of the summed
 * wall time of the top-level rows. Returns PB_OK or PB_ERR_NOMEM (rep
 * then has no rows). */
int pb_stage_rows_merge(const struct pb_stage_stats *stats, int threads,
                        struct pb_repeat_result *rep);

/* Adds the threads' slowest samples into rep's rows (after
 * pb_stage_rows_merge), their files named from paths[0..path_count). */
void pb_stage_rows_slowest(const struct pb_stage_stats *stats, int threads,
                           struct pb_repeat_result *rep, char *const *paths, uint64_t path_count);

#endif
