/* Multi-rank runs: `mpirun -n N pbench run CONFIG` (or srun) measures one
 * point on N processes at once and rank 0 writes ONE result.
 *
 * The contract, in the order a session meets it:
 * - pb_mpi_start joins the job when a launcher started the process
 *   (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK in the environment) and
 *   does nothing otherwise: a plain run never calls MPI_Init and behaves
 *   as a single process always did (rank 0 of 1, every call here a no-op);
 * - each rank reads shard rank/N of the dataset (pb_mpi_apply_shard);
 *   rank 0 generates missing data while the others wait, then the first
 *   rank of each node that still sees none (pb_mpi_generates);
 * - every repeat starts with a barrier (pb_mpi_repeat_begin) and ends
 *   together: rank 0's stopping rule decides and a helper thread per rank
 *   broadcasts the decision, which the runner reads through
 *   struct pb_run_group (bench/run/runner.h) with one atomic load per batch;
 * - pb_mpi_repeat_end gathers every rank's repeat onto rank 0, which
 *   turns its own repeat into the aggregate (samples/s summed, stall the
 *   mean, stage histograms merged by addition) and agrees with all ranks
 *   on whether to go on (an interrupt on any rank stops every rank);
 * - pb_mpi_point_ranks adds the per-rank list and the multi-rank summary
 *   to a point on rank 0 after pb_point_summarize;
 * - an error on any rank ends the job (pb_mpi_abort), the message naming
 *   the rank and the host.
 *
 * Without MPI at build time (PB_HAVE_MPI=0) the same calls exist and do
 * nothing; docs/multinode.md is the user's guide. */
#ifndef PB_MPI_H
#define PB_MPI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/result/result.h"
#include "bench/run/runner.h"
#include "pipelines/dataset.h"

struct pb_mpi_info {
    bool active;    /* launched by mpirun/srun and MPI_Init done   */
    int rank, size; /* 0 and 1 when not active                     */
    int local_rank; /* among the ranks on this node                */
    int local_size;
    char host[64];
};

/* Joins the MPI job when a launcher started this process; a no-op (PB_OK)
 * otherwise or without MPI at build time. PB_ERR with msg when MPI_Init
 * fails. Call once, before anything else of this module. */
int pb_mpi_start(char *msg, size_t msglen);

/* Leaves the job (MPI_Finalize) when pb_mpi_start joined it. */
void pb_mpi_finish(void);

/* This process's place in the job (rank 0 of 1 when not active). */
const struct pb_mpi_info *pb_mpi(void);

/* Whether this process writes the result and prints: rank 0. */
bool pb_mpi_is_root(void);

/* Missing data is generated in steps, each ending on a barrier: 1 for a
 * single process; 2 under mpirun, where rank 0 generates in step 0 and the
 * first rank of every other node in step 1 if that node still sees no data
 * (a node-local path; the data is seeded, so every node's copy is the
 * same). Whether this process generates in step. */
int pb_mpi_generation_steps(void);
bool pb_mpi_generates(int step);

/* Waits for every rank, sleeping while it waits (a blocking MPI barrier
 * spins a core, which the ranks on the node need). No-op when not active. */
void pb_mpi_barrier(void);

/* Prints "pbench: rank R on HOST: MSG; stopping all N ranks" on stderr
 * and ends the job with exit_code. Returns (doing nothing) when not
 * active or the job has one rank. */
void pb_mpi_abort(int exit_code, const char *msg);

/* Sets the dataset's shard to rank/size under a job of two or more ranks;
 * PB_ERR_CONFIG, naming config_path, when the config sets dataset.shard
 * itself (the launcher decides the shards). PB_OK and no change otherwise. */
int pb_mpi_apply_shard(struct pb_dataset_spec *ds, const char *config_path, char *msg,
                       size_t msglen);

/* One repeat measured by every rank together. */
struct pb_mpi_repeat {
    struct pb_run_group group; /* handed to the runner in pb_run_hooks */
    bool thread_live;
    pthread_t thread;    /* the stop broadcaster                 */
    int reason;          /* what the broadcaster sends/receives  */
    uint64_t barrier_ns; /* the start barrier's wait             */
};

/* Barrier, then the stop broadcaster: fills r; *group is what the runner
 * gets in pb_run_hooks.group (NULL when not active). */
void pb_mpi_repeat_begin(struct pb_mpi_repeat *r, struct pb_run_group **group);

/* Ends the repeat of point number point_index whose runner code is rc
 * (msg its sentence); point counts the repeats (the runner kept one when
 * its count grew past kept_before). Ends the job when rc is an error on
 * this rank (pb_mpi_abort with msg). Returns whether every rank goes on:
 * false when a rank was interrupted, true otherwise (and always when not
 * active). */
bool pb_mpi_repeat_end(struct pb_mpi_repeat *r, long point_index, int rc, const char *msg,
                       struct pb_point_result *point, size_t kept_before);

/* Rank 0, after pb_point_summarize: point->ranks (one entry per rank) and
 * point->multi_rank (the aggregate's spread); each rank's samples_per_s is
 * its share of the point's, so the ranks add up to it. No-op when not
 * active or not rank 0. */
void pb_mpi_point_ranks(long point_index, struct pb_point_result *point);

/* Frees what the module kept for pb_mpi_point_ranks. */
void pb_mpi_release(void);

#endif
