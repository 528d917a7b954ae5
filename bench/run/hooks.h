/* What the caller of a point's measurement hands it and hears from it:
 * progress, the stop flag, the multi-rank group, the trace. Read by the
 * measurement loop (bench/run/repeat.h) and every engine's ops; header
 * only. */
#ifndef PB_HOOKS_H
#define PB_HOOKS_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "bench/result/result.h"
#include "bench/run/stoprule.h"

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
     * repeat is measured, with its throughput so far and the stall of its
     * last window of about a second (0 to 100, NaN before the first window
     * closes; bench/run/sysmon.h); may be NULL. */
    void (*tick)(void *user, double samples_per_s, double stall_pct);
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

#endif
