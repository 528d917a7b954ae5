/* The ranks of a multi-rank run measure each repeat together
 * (`mpirun -n N pbench run CONFIG`; the job itself is bench/sys/mpi.h).
 *
 * The contract, in the order a session meets it:
 * - each rank reads shard rank/N of the dataset (pb_ranks_apply_shard);
 * - every repeat starts with a barrier (pb_ranks_repeat_begin) and ends
 *   together: rank 0's stopping rule decides and a helper thread per rank
 *   broadcasts the decision, which the runner reads through
 *   struct pb_run_group (bench/run/hooks.h) with one atomic load per batch;
 * - pb_ranks_repeat_end gathers every rank's repeat onto rank 0, which
 *   turns its own repeat into the aggregate (samples/s summed, stall and
 *   page cache residency the mean, stage histograms merged by addition),
 *   adds the warnings other ranks gave as "rank R on HOST: ..." and agrees
 *   with all ranks on whether to go on (an interrupt on any rank stops
 *   every rank);
 * - pb_ranks_point adds the per-rank list and the multi-rank summary to a
 *   point on rank 0 after pb_point_summarize;
 * - an error on any rank ends the job (pb_mpi_abort), the message naming
 *   the rank and the host; pb_ranks_release frees what rank 0 kept.
 *
 * Without MPI at build time every call is a no-op. */
#ifndef PB_RANKS_H
#define PB_RANKS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/result/result.h"
#include "bench/run/hooks.h"
#include "pipelines/dataset.h"

/* Sets the dataset's shard to rank/size under a job of two or more ranks;
 * PB_ERR_CONFIG, naming config_path, when the config sets dataset.shard
 * itself (the launcher decides the shards). PB_OK and no change otherwise. */
int pb_ranks_apply_shard(struct pb_dataset_spec *ds, const char *config_path, char *msg,
                         size_t msglen);

/* Every rank must measure the same thing: the caller passes a fingerprint
 * of what this rank will measure (every point's resolved config, less
 * the shard each rank reads). Under a job of two or more ranks, gathers
 * them all; PB_ERR_CONFIG on every rank when one differs from rank 0's,
 * with msg naming the rank, its host and both fingerprints (each rank must
 * run the same config, -s and -a). PB_OK otherwise, and always alone. */
int pb_ranks_agree(uint64_t fingerprint, const char *config_path, char *msg, size_t msglen);

/* One repeat measured by every rank together. */
struct pb_ranks_repeat {
    struct pb_run_group group; /* handed to the runner in pb_run_hooks */
    bool thread_live;
    pthread_t thread;    /* the stop broadcaster                 */
    int reason;          /* what the broadcaster sends/receives  */
    uint64_t barrier_ns; /* the start barrier's wait             */
};

/* Barrier, then the stop broadcaster: fills r; *group is what the runner
 * gets in pb_run_hooks.group (NULL when not active). */
void pb_ranks_repeat_begin(struct pb_ranks_repeat *r, struct pb_run_group **group);

/* Ends the repeat of point number point_index whose runner code is rc
 * (msg its sentence); point counts the repeats (the runner kept one when
 * its count grew past kept_before). Ends the job when rc is an error on
 * this rank (pb_mpi_abort with msg). Returns whether every rank goes on:
 * false when a rank was interrupted, true otherwise (and always when not
 * active). */
bool pb_ranks_repeat_end(struct pb_ranks_repeat *r, long point_index, int rc, const char *msg,
                         struct pb_point_result *point, size_t kept_before);

/* Rank 0, after pb_point_summarize: point->ranks (one entry per rank) and
 * point->multi_rank (the aggregate's spread); each rank's samples_per_s is
 * its share of the point's, so the ranks add up to it. No-op when not
 * active or not rank 0. */
void pb_ranks_point(long point_index, struct pb_point_result *point);

/* Frees what the module kept for pb_ranks_point. */
void pb_ranks_release(void);

#endif
