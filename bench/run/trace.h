/* The CPU-side timeline of a run (run.trace: true, --trace FILE, or
 * profile.level: comprehensive): a Chrome trace-event JSON file that opens
 * in Perfetto and chrome://tracing, one track per loader worker with a
 * span per sample per stage (the sample's file as an argument) inside a
 * span per batch, the training loop's track with its wait, consumer-side
 * stages and step, and the ready-queue depth as a counter.
 *
 * Recording is split from writing, as everywhere in pbench: each thread
 * owns one pb_trace_thread, a buffer preallocated at set-up, and appends
 * raw records (what, which sample, start, end) without locks, allocation
 * or formatting. When a thread's buffer is full, later records are
 * counted, not kept, and the file says so. Everything is formatted once,
 * when the file is written. */
#ifndef PB_TRACE_H
#define PB_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pipelines/dataset.h"

#define PB_TRACE_EVENTS_PER_THREAD ((size_t)1 << 18) /* 8 MiB a thread at most */
#define PB_TRACE_MAX_THREADS 1025                    /* the consumer + 1024 workers */
#define PB_TRACE_MAX_NAMES 128

/* Names every trace has, in this order (pb_trace_name gives the rest). */
enum pb_trace_fixed_name {
    PB_TRACE_WAIT = 0,   /* the loop waits for the next batch           */
    PB_TRACE_STEP,       /* the simulated training step                 */
    PB_TRACE_BATCH,      /* a worker builds one batch                   */
    PB_TRACE_QUEUE,      /* counter: ready batches at dequeue           */
    PB_TRACE_MEASURING,  /* instant: the measured part of a repeat starts */
    PB_TRACE_FIXED_NAMES
};

enum pb_trace_kind { PB_TRACE_SPAN = 0, PB_TRACE_COUNTER, PB_TRACE_INSTANT };

/* One raw record: 32 bytes. sample is the dataset index of a sample span
 * (UINT64_MAX for none), or the batch sequence number of a batch, wait or
 * step span; value is the counter's value. */
struct pb_trace_event {
    uint64_t t0_ns, t1_ns;      /* CLOCK_MONOTONIC (pb_now_ns)              */
    uint64_t sample;
    uint16_t name;
    uint16_t kind;
    uint32_t value;
};

struct pb_trace_thread {
    struct pb_trace_event *events; /* capacity entries, allocated at set-up */
    size_t count, capacity;         /* count: stored by its thread, relaxed */
    uint64_t dropped;               /* records past the capacity          */
};

struct pb_trace {
    const struct pb_dataset *ds;    /* sample files, read when writing    */
    size_t thread_count;            /* thread 0 is the training loop      */
    struct pb_trace_thread threads[PB_TRACE_MAX_THREADS];
    int name_count;
    char names[PB_TRACE_MAX_NAMES][64];
    size_t capacity;                /* events per thread                  */
};

/* A new trace of files in ds (which must outlive it), capacity records per
 * thread (0: PB_TRACE_EVENTS_PER_THREAD). NULL when out of memory. */
struct pb_trace *pb_trace_new(const struct pb_dataset *ds, size_t capacity);
void pb_trace_free(struct pb_trace *trace);

/* The id of name, added when new; set-up time only. PB_TRACE_WAIT when the
 * table is full. */
uint16_t pb_trace_name(struct pb_trace *trace, const char *name);

/* The buffer of thread (0: the training loop, 1 + i: worker i), allocated
 * here the first time; set-up time only. NULL when out of memory or past
 * PB_TRACE_MAX_THREADS. */
struct pb_trace_thread *pb_trace_thread(struct pb_trace *trace, size_t thread);

/* Records one event: the hot path's only trace call. */
static inline void pb_trace_record(struct pb_trace_thread *t, uint16_t name, uint16_t kind,
                                   uint64_t sample, uint64_t t0_ns, uint64_t t1_ns, uint32_t value)
{
    size_t n = t->count;
    if (n < t->capacity) {
        struct pb_trace_event *e = &t->events[n];
        e->t0_ns = t0_ns;
        e->t1_ns = t1_ns;
        e->sample = sample;
        e->name = name;
        e->kind = kind;
        e->value = value;
        /* Relaxed: the system sampler reads the count (pb_trace_bytes); a
         * plain store on x86, no fence. */
        __atomic_store_n(&t->count, n + 1, __ATOMIC_RELAXED);
    } else {
        t->dropped++;
    }
}

/* The bytes of records kept so far over all threads: what the trace has
 * made resident (its buffers are calloc'd, so a page counts once a record
 * is written to it). Safe from another thread while the workers record
 * (a relaxed load of each count); the threads' buffers must be set up. */
size_t pb_trace_bytes(const struct pb_trace *trace);

/* Records kept and dropped over all threads. */
void pb_trace_counts(const struct pb_trace *trace, uint64_t *kept, uint64_t *dropped);

/* Extra events from elsewhere written into the same file on the same
 * clock: fill writes its events (each preceded by a comma) for origin_ns,
 * the trace's time 0. bench/sys/cupti.c's device tracks come this way. */
struct pb_trace_extra {
    int (*fill)(FILE *f, uint64_t origin_ns, void *user);
    void *user;
};

/* Writes the trace as Chrome trace-event JSON to path atomically; extra
 * may be NULL. PB_OK, or PB_ERR with msg. */
int pb_trace_write(const struct pb_trace *trace, const char *path,
                   const struct pb_trace_extra *extra, char *msg, size_t msglen);

/* For a session: a new trace when any of the count specs asks for one
 * (pb_spec_traced), else NULL. */
struct pb_spec;
struct pb_result;
struct pb_trace *pb_trace_for_specs(const struct pb_spec *specs, size_t count,
                                    const struct pb_dataset *ds);

/* Writes trace to path, or when path is NULL beside the result
 * (NAME.json -> NAME.trace.json), and notes the file in result->trace_path;
 * a failure, and a trace that reached its cap, become warnings in result. */
/* Where a trace goes by default: beside the result, NAME.json ->
 * NAME.trace.json (the CPU trace and the CUPTI one alike). */
void pb_trace_default_path(const char *result_path, char *buf, size_t buflen);
void pb_trace_write_beside(const struct pb_trace *trace, const char *path, const char *result_path,
                           const struct pb_trace_extra *extra, struct pb_result *result);

#endif
