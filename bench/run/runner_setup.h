/* The runner's private state, shared by runner.c (a round's ops: the
 * wait for a batch, the loop's step, the watchdog), worker.c (the loader threads' hot
 * path) and runner_setup.c (set-up and tear-down of a point, the buffers
 * that grow). Nothing else includes this, and it does not include
 * runner.h: runner.c sits on top of it. */
#ifndef PB_RUNNER_SETUP_H
#define PB_RUNNER_SETUP_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "bench/result/result.h"
#include "bench/run/chain.h"
#include "bench/run/gpu_acc.h"
#include "bench/run/gpuloop.h"
#include "bench/run/perfcount.h"
#include "bench/run/queue.h"
#include "bench/run/runlimits.h"
#include "bench/run/stagestats.h"
#include "bench/run/stoprule.h"
#include "bench/run/sysmon.h"
#include "bench/run/trace.h"
#include "bench/sys/affinity.h"
#include "pipelines/dataset.h"

struct run;
struct pb_run_hooks; /* bench/run/hooks.h */

struct worker {
    struct run *run;
    int index; /* -1: the consumer loading in its own thread */
    pthread_t thread;
    struct pb_chain chain; /* worker-side stages */
    uint8_t *scratch[2];
    size_t scratch_capacity[2];
    struct pb_stage_stats *stats;      /* the run's, for this thread */
    uint64_t cpu_start_ns, cpu_end_ns; /* thread CPU over measured batches */
    _Atomic uint64_t exit_cpu_ns;      /* thread CPU when the worker ended */
    bool cpu_started;
    uint64_t *indices, *seeds;
    uint64_t *visit_seeds; /* per sample: its file visit's seed and      */
    uint32_t *clips;       /* which of the visit's samples it is        */
    const char **batch_paths; /* the batch's files, for a batch_start    */
    char msg[PB_MSG_MAX];
    /* The CPU trace (bench/run/trace.h): this thread's buffer, and the one
     * recorded into in this repeat (NULL when not tracing: the hot path's
     * one branch). trace_names: the trace's id of each stage's name. */
    struct pb_trace_thread *trace_buffer, *trace;
    uint16_t trace_names[PB_MAX_STAGES];
    struct pb_perf_thread perf; /* profile.level comprehensive; mask 0: off */
    /* What the watchdog reads (relaxed stores, one per stage call): the
     * stage this thread is in (-1: none), on which sample (its dataset
     * index), and how many stage calls it has begun; then the watchdog's
     * own record of when it last saw that count move, and whether it found
     * the thread stuck. */
    atomic_int busy_stage;
    _Atomic uint64_t busy_sample;
    _Atomic uint64_t stage_calls;
    uint64_t watched_calls, watched_since_ns;
    atomic_bool stuck;
};

struct run {
    const struct pb_spec *spec;
    const struct pb_dataset *ds;
    struct pb_sampler sampler; /* per repeat: seeded by repeat */
    uint64_t clips_per_file;   /* samples per file visit (the decoder's) */
    int workers;               /* threads; 0 loads in the consumer */
    int prefetch_factor;
    struct worker *worker;        /* max(workers, 1) entries */
    struct pb_stage_stats *stats; /* one per worker entry */
    int worker_stage_count;
    int worker_stage_spec[PB_MAX_STAGES];
    struct pb_chain consumer; /* consumer-side CPU stages */
    /* The device side (a to_device stage): the loop, its GPU stages (the
     * consumer stages after to_device) and what a repeat measured. */
    struct pb_gpu_loop *gpu;
    struct pb_chain gpu_stages;
    struct pb_gpu_acc gpu_acc;
    struct pb_chain_sizes sizes;
    struct pb_slot *slots;
    int slot_count;
    bool pinned;
    uint64_t pool_bytes;
    struct pb_queue queue;
    bool queue_live;
    int started_workers; /* threads running in this repeat */

    bool stage_timing;
    uint64_t first_measured_seq;
    atomic_bool stop_workers;

    pthread_mutex_t error_lock; /* rare path: data errors, failure */
    int fatal_rc;
    char fatal_msg[PB_MSG_MAX];
    char first_error[PB_MSG_MAX];  /* the repeat's first bad sample, why */
    struct pb_point_result *point; /* error_files go here */

    volatile sig_atomic_t *user_stop;
    const struct pb_run_hooks *hooks;
    int repeat; /* the repeat being run (0-based) */
    struct pb_sysmon sysmon;
    uint64_t next_seq; /* the batch the loop waits for next */
    double mhz_start;             /* CPU clock when the repeat began */
    struct pb_affinity *affinity; /* loader.affinity's plan; NULL for none */
    /* The training loop's trace buffer, as the workers' above, and the
     * trace they all record into (NULL: not traced). */
    struct pb_trace_thread *loop_trace_buffer, *loop_trace;
    const struct pb_trace *trace;
    /* The repeat whose batch records the consumer is filling, while the
     * sampler runs: what it counts of pbench's own memory. */
    const struct pb_repeat_result *recording;
    bool perf_on; /* this repeat counts perf events per stage */
    uint16_t loop_trace_names[PB_MAX_STAGES];
    /* A worker stuck in a stage was left running: the run's state is not
     * freed (the thread may still touch it) and the process is to end. */
    bool abandoned;
};

/* Gives the run's threads their buffers in trace (hooks' trace, when the
 * spec asks for one); PB_OK, or PB_ERR_NOMEM. */
int pb_runner_trace_setup(struct run *run, struct pb_trace *trace);

static inline int nworkers(const struct run *run)
{
    return run->workers > 0 ? run->workers : 1;
}

/* Grows worker w's scratch buffer `which` to hold bytes (with headroom). */
int pb_runner_grow_scratch(struct worker *w, int which, size_t bytes);
/* Sets up everything a point's repeats share: loaders, pool, consumer. */
int pb_runner_setup(struct run *run, const struct pb_spec *spec, const struct pb_dataset *ds,
                    struct pb_point_result *point, char *msg, size_t msglen);
void pb_runner_free(struct run *run);

/* ---- the loader workers (worker.c) ---------------------------------- */

enum { PB_BATCH_BUILT = 0, PB_BATCH_END = 1 };

/* Builds batch seq into slot (PB_BATCH_BUILT), or says the data ran out
 * (PB_BATCH_END); a negative code when the run failed (pb_runner_fail has
 * recorded why). The loop calls it itself when loader.workers is 0. */
int pb_runner_build_batch(struct worker *w, uint64_t seq, struct pb_slot *slot);

/* A loader worker thread's body (pthread_create's start routine). */
void *pb_runner_worker_main(void *arg);

/* Ends the run with rc and what (the first failure wins): the workers stop
 * and the loop wakes. */
void pb_runner_fail(struct run *run, int rc, const char *what);

#endif
