/* The job a multi-rank run belongs to: `mpirun -n N pbench run CONFIG`
 * (or srun) measures one point on N processes at once and rank 0 writes
 * ONE result.
 *
 * This module is the job's identity alone: pb_mpi_start joins the job when
 * a launcher started the process (OMPI_COMM_WORLD_SIZE, PMI_SIZE or
 * PMIX_RANK in the environment) and does nothing otherwise, so a plain run
 * never calls MPI_Init and behaves as a single process always did (rank 0
 * of 1, every call here a no-op); then the rank, the node-local rank, who
 * generates missing data, a barrier and an abort that names the rank and
 * host. Measuring repeats together and gathering them onto rank 0 is the
 * session's (bench/session/ranks.h).
 *
 * Without MPI at build time (PB_HAVE_MPI=0) the same calls exist and do
 * nothing; docs/multinode.md is the user's guide. */
#ifndef PB_MPI_H
#define PB_MPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


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

/* Rank 0's *data (*len bytes) to every rank: the others get a copy in a
 * new malloc'ed *data (free it). A no-op when not active. PB_OK. */
int pb_mpi_share(void **data, size_t *len);
/* Prints "pbench: rank R on HOST: MSG; stopping all N ranks" on stderr
 * and ends the job with exit_code. Returns (doing nothing) when not
 * active or the job has one rank. */
void pb_mpi_abort(int exit_code, const char *msg);

#if PB_HAVE_MPI
#include <mpi.h>
/* Waits for a non-blocking request, napping between tests: a blocking MPI
 * call spins a core that the loaders need. */
void pb_mpi_wait(MPI_Request *req);
#endif

#endif
