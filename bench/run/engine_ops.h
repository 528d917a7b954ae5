/* The ops of an engine (fio's struct ioengine_ops): what the one
 * measurement loop (bench/run/repeat.c) asks of whatever delivers a point's
 * batches, and what it hands back. pbench's own threads implement them
 * (bench/run/runner.h) and so does an engine that is another process
 * (bench/run/engine.h); an engine's row (bench/base/engine_row.h) says
 * which set it runs on. Header only. */
#ifndef PB_ENGINE_OPS_H
#define PB_ENGINE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/config/config.h"
#include "bench/base/engine_row.h"
#include "bench/result/result.h"
#include "bench/run/hooks.h"
#include "bench/run/stoprule.h"
#include "bench/run/sysmon.h"
#include "pipelines/dataset.h"

/* A batch as the training loop saw it, filled by the engine's next and
 * step. Times are CLOCK_MONOTONIC ns (pb_now_ns). */
struct pb_delivery {
    uint64_t seq;          /* the batch's place in the round, from 0 */
    uint64_t t_wait;       /* the loop began to wait for it */
    uint64_t t_taken;      /* it came */
    uint64_t t_done;       /* the loop's step on it ended */
    uint64_t assembly_ns;  /* first sample started to batch ready */
    uint64_t step_ns;      /* the accelerator's step: run.step_ms, or a job's own */
    uint64_t step_wall_ns; /* the loop's wall time in that step */
    uint64_t stages_ns;    /* the loop's consumer-side stages */
    uint64_t first_batch_ns; /* batch 0: workers' start to its arrival; 0 unknown */
    uint64_t bytes;
    uint32_t samples, errors, depth; /* depth: batches ready when it was taken */
    bool cpu_now; /* read the CPU clocks at this batch (a job's, whose exit comes later) */
    void *handle; /* the engine's own: its slot */
};

/* What one repeat's measured part has summed so far. */
struct pb_part {
    bool measuring, ended, interrupted;
    bool group_stopped;  /* the decider of a multi-rank run ended it */
    bool cpu_at_batch;   /* the end readings were taken at the last batch */
    uint64_t delivered; /* batches the round has delivered, warm-up included */
    uint64_t t_start, t_end;
    uint64_t cpu_read_start, cpu_read_end; /* when the CPU clocks were read */
    uint64_t loader_cpu_start, loader_cpu_end, all_cpu_start, all_cpu_end;
    uint64_t samples, batches, bytes, errors, wait_total;
    uint64_t step_total, step_wall_total, stages_total, first_batch_ns;
    struct pb_machine_cpu machine_start;
    size_t records_cap;
};

/* The ops of an engine: self is what its open made. Return codes are
 * PB_OK or an error with msg, unless said otherwise. */
enum { PB_NEXT_BATCH = 0, PB_NEXT_END = 1 };

struct pb_engine_ops {
    /* The loop waits for batches in pbench's own thread: the measured part
     * starts before the wait for its first batch (so the time cap counts
     * from there). Otherwise it starts at that batch's own t_wait. */
    bool waits_here;
    int (*open)(const struct pb_engine_row *row, const struct pb_spec *spec,
                const struct pb_dataset *ds, const struct pb_run_hooks *hooks,
                struct pb_point_result *point, void **self, char *msg, size_t msglen);
    /* May the point go on (an engine that failed earlier may not)? */
    int (*usable)(void *self, char *msg, size_t msglen);
    /* A round starts: a fresh pass over the data, its workers. */
    int (*open_round)(void *self, int repeat, bool stage_timing, struct pb_repeat_result *rep,
                      char *msg, size_t msglen);
    /* The next batch into d (PB_NEXT_BATCH), or PB_NEXT_END with *why
     * (none came: the end of the data, a stop, the time cap), or an error:
     * the round is cut short. */
    int (*next)(void *self, const struct pb_part *part, struct pb_delivery *d,
                enum pb_stop_reason *why, char *msg, size_t msglen);
    /* The loop's step on d (NULL: the engine's batches carry it). */
    void (*step)(void *self, const struct pb_part *part, struct pb_delivery *d);
    /* d is done with (recorded: it counted in the part); PB_OK, or the
     * round's failure. */
    int (*release)(void *self, const struct pb_part *part, struct pb_delivery *d, bool recorded,
                   char *msg, size_t msglen);
    /* The measured part starts at t, before its CPU clocks are read. */
    void (*measuring)(void *self, uint64_t t);
    /* The CPU clocks: the loader's (its workers, or the loop when it
     * loads), and all of the engine's processes with pbench's own. */
    void (*cpu)(void *self, uint64_t *loader_ns, uint64_t *all_ns);
    /* The part ended for reason (the engine is told to stop). */
    void (*part_ended)(void *self, enum pb_stop_reason reason);
    /* The round ends: workers stopped, the engine's frames read to their
     * end; rc is the loop's so far. Returns the round's code. */
    int (*close_round)(void *self, struct pb_part *part, int rc, char *msg, size_t msglen);
    /* A kept repeat's figures the engine holds: stage rows, memory series,
     * queue depths, device figures; rc is the round's code. */
    void (*finish)(void *self, struct pb_part *part, struct pb_repeat_result *rep,
                   bool stage_timing, int rc);
    /* The loader's workers (for worker_cpu_pct), and how many processes'
     * CPU is read from /proc's clock ticks (0: exact thread clocks). */
    int (*workers)(void *self);
    int (*tick_processes)(void *self);
    /* The round's first bad sample ("PATH: why"), for on_error's message. */
    const char *(*first_error)(void *self);
    void (*close)(void *self);
};

#endif
