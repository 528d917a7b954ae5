/* The runner: one point (one set of loader settings) measured as the
 * design card's measurement rules say.
 *
 * Workers (threads) build whole batches, PyTorch style: batch k is built by
 * worker k % workers, sample by sample (read -> decode -> stages) straight
 * into its slot of a pooled, 64-byte aligned (or pinned) batch buffer. The
 * consumer thread is the training loop: it waits for the next batch (the
 * stall), runs consumer-side stages, simulates a step of run.step_ms and
 * returns the buffer. Each repeat is a separate round: warm-up batches,
 * then a measured part that ends on the stopping rule.
 *
 * The runner's parts: the stage instances per thread (bench/run/chain.h), the
 * batch pool and ready queue (bench/run/queue.h), per-thread stage measurements
 * merged into stage rows (bench/run/stagestats.h), the stopping rule
 * (bench/run/stoprule.h), the system sampler (bench/run/sysmon.h) and the device
 * side's accounting (bench/run/gpu_acc.h). runner.c holds the hot path
 * (build_batch), the worker threads, set-up and the repeat's steps. */
#ifndef PB_RUNNER_H
#define PB_RUNNER_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "bench/config/config.h"
#include "bench/result/result.h"
#include "bench/run/stoprule.h"
#include "pipelines/dataset.h"

/* A stage did not return within run.stage_timeout_s: the run ended without
 * waiting for its thread, which is left running with the run's state (so
 * the process should write what it has and exit). */
#define PB_ERR_STALLED (-100)

/* Or'ed into *pb_run_hooks.stop: stop now, without waiting for the loader
 * threads to finish the batches in hand (a second Ctrl-C). */
#define PB_RUN_STOP_NOW 0x100

/* Progress of a run, for the terminal. Called by the consumer thread
 * between repeats (never inside the measured part). */
typedef void (*pb_progress_fn)(void *user, int repeat, int repeats,
                               const struct pb_repeat_result *done);

/* A repeat measured by several processes at once (multi-rank runs,
 * bench/sys/mpi.h). The process that decides (rank 0) ends its measured part on
 * its own stopping rule; the others end theirs when group_done is raised,
 * read once per batch, unless the decider stopped at the end of its data
 * (each rank then reads its own shard to its end). Every process raises
 * local_done when its measured part has ended, after setting local_reason
 * (enum pb_stop_reason) to why. */
struct pb_run_group {
    bool decides;
    atomic_int local_reason;
    atomic_bool local_done;
    atomic_bool group_done;
    atomic_int group_reason; /* enum pb_stop_reason of the decider */
};
struct pb_trace;

struct pb_run_hooks {
    pb_progress_fn progress;
    void *user;
    /* Called about four times a second from a sampler thread while a
     * repeat is measured, with its running throughput; may be NULL. */
    void (*tick)(void *user, double samples_per_s);
    /* Set asynchronously (SIGINT, SIGTERM, SIGHUP): the run stops at once
     * (the loop is woken while it waits for a batch) and keeps what it
     * measured, the repeat cut short marked interrupted; with
     * PB_RUN_STOP_NOW, it does not wait for the loader threads either. */
    volatile sig_atomic_t *stop;
    /* Called by the consumer thread when a repeat's measured part has
     * ended and the repeat is kept, with why it ended (before progress);
     * may be NULL. */
    void (*stopped)(void *user, int repeat, enum pb_stop_reason reason);
    /* Multi-rank runs: the group this repeat is measured with; NULL alone. */
    struct pb_run_group *group;
    /* The CPU trace the point records into when its spec asks for one
     * (bench/run/trace.h); NULL: none. */
    struct pb_trace *trace;
    /* Which point of the run this is (0-based), for the trace's marker
     * where each repeat's measured part starts. */
    int point;
};

/* Runs spec over ds for run.repeats rounds and fills point (repeats and
 * summary; point->axes is left to the caller).
 * Returns PB_OK, PB_ERR_INTERRUPTED (partial results kept in point), or an
 * error with msg (PB_ERR_DATA under on_error: fail, naming the file;
 * PB_ERR_STALLED naming the stuck stage and its sample; the repeats
 * measured before it are kept in point, the one cut short marked
 * interrupted). The measured part never outlasts run.max_time_s by more
 * than the sampler's period, however long the loop waits for a batch. */
int pb_run_point(const struct pb_spec *spec, const struct pb_dataset *ds,
                 const struct pb_run_hooks *hooks, struct pb_point_result *point, char *msg,
                 size_t msglen);

/* The same in steps, so a sweep can interleave rounds across points: open
 * sets up workers' stages and the batch pool for spec (allocating
 * point->repeats for run.repeats the first time), each pb_point_repeat runs
 * one round and appends it to point->repeats (with measure_overhead, also
 * a paired round with stage timing flipped, writing the throughput lost to
 * timing in % into *overhead_pct), close frees it all. The caller calls
 * pb_point_summarize when the point's rounds are done. */
struct pb_point_run;
int pb_point_open(const struct pb_spec *spec, const struct pb_dataset *ds,
                  const struct pb_run_hooks *hooks, struct pb_point_result *point,
                  struct pb_point_run **run, char *msg, size_t msglen);
int pb_point_repeat(struct pb_point_run *run, int repeat, bool measure_overhead,
                    double *overhead_pct, char *msg, size_t msglen);
void pb_point_close(struct pb_point_run *run);

#endif
