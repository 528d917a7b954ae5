/* Inside bench/run/engine.c and engine_columns.c: what a point on an engine
 * holds while it runs, and the engine's timed columns (its stages, a wrapped
 * job's transforms) as they fill from its batch frames. Not for other
 * modules: bench/run/engine.h is the engine's interface. */
#ifndef PB_ENGINE_COLUMNS_H
#define PB_ENGINE_COLUMNS_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/base/hist.h"
#include "bench/config/config.h"
#include "bench/base/engine_row.h"
#include "bench/result/result.h"
#include "bench/result/slowest.h"
#include "bench/run/batch_frame.h"
#include "bench/run/stoprule.h"
#include "bench/run/sysmon.h"
#include "bench/run/trace.h"

struct pb_run_hooks;
struct pb_engine_proc;

/* One timed column of the engine (a stage, a sub-stage or collate), with
 * what the measured batches put in it. */
struct pb_engine_column {
    char name[64], parent[64];
    struct pb_hist hist;
    uint64_t cpu_ns;
    struct pb_slowest slowest;
    uint64_t counters[PB_STAGE_COUNTERS];
    int counter_count;
    char counter_names[PB_STAGE_COUNTERS][32];
    uint16_t trace_name; /* its name in the CPU trace */
};

struct pb_engine_run {
    const struct pb_engine_row *row; /* which engine: its names in messages */
    const struct pb_spec *spec;
    const struct pb_dataset *ds;
    const struct pb_run_hooks *hooks;
    struct pb_point_result *point;
    struct pb_engine_proc *proc;
    char index_path[PB_PATH_MAX];
    int column_count, counter_count;
    struct pb_engine_column columns[PB_ENGINE_MAX_COLUMNS];
    int counter_column[PB_ENGINE_MAX_COUNTERS]; /* which column each counter adds to */
    int counter_slot[PB_ENGINE_MAX_COUNTERS];   /* and where in its counters[] */
    struct engine_pid {
        int pid;
        uint64_t start, last; /* CPU ns: at the measured part's start, last read */
    } pids[PB_ENGINE_MAX_WORKERS];
    int pid_count;    /* every worker seen in this repeat */
    int main_pid;     /* the loop's process when not the engine's own (a wrapped job's) */
    uint64_t main_cpu_last; /* its CPU time at its last reading */
    int live_workers; /* in the last `workers` frame: loader.workers as run */
    int live_pids[PB_ENGINE_MAX_WORKERS]; /* that frame's pids, by worker index */
    uint64_t workers_start_ns;
    /* The round in progress (engine.c): what the engine's frames say of
     * it beyond the batches the loop counts (bench/run/repeat.c). */
    struct engine_round {
        bool stop_sent; /* the part has ended: the engine's batches no longer count */
        bool ended;     /* its repeat_end came, for end_reason */
        enum pb_stop_reason end_reason;
        uint64_t stop_seen_ns; /* when the loop saw the user's stop; 0: none */
        uint64_t repeat_start_ns, last_frame_ns, last_sample_ns, last_sample_cpu;
        struct pb_batch_header header; /* the last batch frame's, and its records */
        const uint8_t *records;
        size_t records_len;
        uint64_t *ready_ns, *taken_ns; /* per measured batch, for queue depth */
        size_t times_cap;
        /* Memory and CPU of the engine's processes, sampled at 4 Hz. */
        size_t rss_count, rss_cap;
        struct pb_rss_sample *rss;
        uint64_t pss_peak;
        /* The tick's stall: the engine's batches carry their wait. */
        struct pb_stall_window stall_window;
    } round;
    struct pb_trace *trace; /* run.trace: the engine's timeline goes here; NULL: none */
    char first_error[PB_MSG_MAX];
    bool failed; /* the engine is gone or broke the protocol */
};

/* Empties the columns for a repeat. */
void pb_engine_reset_columns(struct pb_engine_run *er);

/* The engine's `ready` (or a wrapped job's `stages`): its columns and
 * counters, in frame order. PB_OK, or PB_ERR with msg. */
int pb_engine_read_ready(struct pb_engine_run *er, const json_t *ready, char *msg, size_t msglen);

/* A measured batch's sample records into the columns. */
void pb_engine_add_records(struct pb_engine_run *er, const struct pb_batch_header *h,
                           const uint8_t *data, size_t len);

/* The batch on the CPU trace (er->trace). */
void pb_engine_trace_batch(struct pb_engine_run *er, const struct pb_batch_header *h,
                           const uint8_t *data, size_t len);

/* The columns as the repeat's stage rows. PB_OK or PB_ERR_NOMEM. */
int pb_engine_fill_rows(const struct pb_engine_run *er, struct pb_repeat_result *rep);

/* A wrapped job's account of a repeat, kept in the point's engine object. */
void pb_engine_keep_job(struct pb_engine_run *er, const json_t *j);

#endif
