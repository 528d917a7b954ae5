/* Multi-rank runs on MPI (see mpi.h): the job's
 * identity, its barrier and its abort. Every collective here is
 * non-blocking and waited on with short sleeps: a blocking MPI call spins
 * a core, and the ranks of a node need their cores for the loaders. */
#include "bench/sys/mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/base/pb.h"

static struct pb_mpi_info info = {.rank = 0, .size = 1, .local_rank = 0, .local_size = 1};

const struct pb_mpi_info *pb_mpi(void)
{
    return &info;
}

bool pb_mpi_is_root(void)
{
    return info.rank == 0;
}

int pb_mpi_generation_steps(void)
{
    return info.active ? 2 : 1;
}

bool pb_mpi_generates(int step)
{
    if (step == 0)
        return info.rank == 0;
    return info.rank != 0 && info.local_rank == 0;
}

#if PB_HAVE_MPI

#include <mpi.h>

/* Whether a launcher (Open MPI's mpirun, a PMI or PMIx one such as srun)
 * started this process. */
static bool launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int pb_mpi_start(char *msg, size_t msglen)
{
    if (info.active || !launched())
        return PB_OK;
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        snprintf(msg, msglen, "MPI_Init failed: cannot join the job mpirun started");
        return PB_ERR;
    }
    info.active = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &info.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &info.size);
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, info.rank, MPI_INFO_NULL,
                            &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &info.local_rank);
        MPI_Comm_size(node, &info.local_size);
        MPI_Comm_free(&node);
    }
    if (gethostname(info.host, sizeof(info.host)) != 0)
        snprintf(info.host, sizeof(info.host), "unknown");
    info.host[sizeof(info.host) - 1] = '\0';
    if (provided < MPI_THREAD_SERIALIZED && info.rank == 0)
        fprintf(stderr,
                "pbench: warning: the MPI library gives thread level %d, below "
                "MPI_THREAD_SERIALIZED; repeats may not stop together\n",
                provided);
    return PB_OK;
}

void pb_mpi_finish(void)
{
    if (info.active)
        MPI_Finalize();
    info.active = false;
}

void pb_mpi_wait(MPI_Request *req)
{
    const struct timespec nap = {0, 500000};
    for (int done = 0;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        nanosleep(&nap, NULL);
    }
}

void pb_mpi_barrier(void)
{
    if (!info.active)
        return;
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
}

int pb_mpi_share(void **data, size_t *len)
{
    if (!info.active || info.size < 2)
        return PB_OK;
    uint64_t n = info.rank == 0 ? (uint64_t)*len : 0;
    MPI_Request req;
    MPI_Ibcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
    if (info.rank != 0) {
        *data = malloc(n ? (size_t)n : 1);
        *len = (size_t)n;
        if (!*data)
            pb_mpi_abort(1, "out of memory for the listing rank 0 sent");
    }
    /* In pieces MPI's int count can hold. */
    for (uint64_t at = 0; at < n;) {
        int piece = n - at > (1u << 30) ? 1 << 30 : (int)(n - at);
        MPI_Ibcast((char *)*data + at, piece, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
        pb_mpi_wait(&req);
        at += (uint64_t)piece;
    }
    return PB_OK;
}

void pb_mpi_abort(int exit_code, const char *msg)
{
    if (!info.active || info.size < 2)
        return;
    fprintf(stderr, "pbench: rank %d on %s: %s; stopping all %d ranks\n", info.rank, info.host,
            msg && msg[0] ? msg : "failed", info.size);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_code ? exit_code : 1);
}

#else /* !PB_HAVE_MPI: a single process, every call a no-op */

int pb_mpi_start(char *msg, size_t msglen)
{
    (void)msg;
    (void)msglen;
    return PB_OK;
}

void pb_mpi_finish(void)
{
}

void pb_mpi_barrier(void)
{
}

int pb_mpi_share(void **data, size_t *len)
{
    (void)data;
    (void)len;
    return PB_OK;
}

void pb_mpi_abort(int exit_code, const char *msg)
{
    (void)exit_code;
    (void)msg;
}

#endif
