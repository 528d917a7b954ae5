/* An activity trace of the kernels, copies and memsets the process runs
 * on the GPU, recorded through CUPTI, aggregated per kernel name and copy
 * kind, and written as a Chrome trace (pbench's profile.gpu: cupti).
 *
 * CUPTI (libcupti.so, part of the toolkit) is opened with dlopen when
 * first needed, so it is not a link dependency: pbench starts on machines
 * without it and says why there is no trace. The summary and the trace
 * writer work on records from anywhere, so they are tested without CUPTI. */
#ifndef PB_CUPTI_H
#define PB_CUPTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

enum pb_cupti_kind { PB_CUPTI_KERNEL = 0, PB_CUPTI_MEMCPY, PB_CUPTI_MEMSET };

struct pb_cupti_record {
    enum pb_cupti_kind kind;
    char name[96];        /* kernel name as pb_cupti_kernel_label makes it
                           * ("normalize_kernel<float, ...>"), or "HtoD",
                           * "DtoH", "DtoD" ...                           */
    uint64_t start_ns, end_ns; /* CUPTI timestamps (ns)                 */
    uint64_t bytes;       /* copies and memsets                           */
    bool pinned;          /* copies: host side page-locked                */
    uint32_t stream;      /* CUDA stream id                               */
};

struct pb_cupti_trace;

/* Starts recording kernel, memcpy and memset activity for the process.
 * Returns 0, or -1 with msg saying why (built without CUDA, libcupti not
 * found, CUPTI error text). One trace at a time. */
int pb_cupti_start(struct pb_cupti_trace **trace, char *msg, size_t msglen);

/* Flushes and stops recording; records stay readable until freed.
 * Returns 0 or -1 with msg. Records beyond the cap (a few million) are
 * counted as dropped, never grown into on CUPTI's buffer callback path
 * beyond that cap. */
int pb_cupti_stop(struct pb_cupti_trace *trace, char *msg, size_t msglen);

/* A kernel's name as a reader knows it, from the mangled name CUPTI
 * gives: demangled (through libstdc++'s __cxa_demangle where the process
 * has it), without "(anonymous namespace)::" and the parameter list, so
 * "_ZN..._GLOBAL__N_...16normalize_kernelIfLNS_14normalize_kindE0EEEv..."
 * reads "normalize_kernel<float, (normalize_kind)0>". Without the
 * demangler, template arguments read "<...>". A name that is not
 * mangled is kept; characters outside printable ASCII become '?'. Always
 * terminates dst (size > 0). */
void pb_cupti_kernel_label(const char *mangled, char *dst, size_t size);

size_t pb_cupti_records(const struct pb_cupti_trace *trace, const struct pb_cupti_record **records);
uint64_t pb_cupti_dropped(const struct pb_cupti_trace *trace);

/* Aggregates the trace: {"kernels": [{"name", "count", "total_ns",
 * "mean_ns", "p50_ns", "max_ns"}...] sorted by total time, "copies":
 * [{"kind", "pinned", "count", "bytes", "total_ns", "gb_per_s"}...],
 * "span_ns", "dropped"}. New reference. */
json_t *pb_cupti_summary_json(const struct pb_cupti_trace *trace);

/* Writes the records as a Chrome trace-event JSON file (open it in
 * Perfetto or chrome://tracing), atomically (temporary file + rename).
 * Returns 0 or -1 with msg. */
int pb_cupti_write_chrome_trace(const struct pb_cupti_trace *trace, const char *path, char *msg,
                                size_t msglen);

/* Writes the records as trace events into a Chrome trace another writer
 * opened (bench/run/trace.h's extra events): the GPU as process 0, each stream
 * a track, on CLOCK_MONOTONIC with origin_ns as time 0 (the offset to
 * CUPTI's clock is read when the trace starts; where libcupti cannot tell
 * it, the first record is put at 0 and the process name says so). Each
 * event is preceded by a comma. user is the pb_cupti_trace. 0 or -1. */
int pb_cupti_trace_events(FILE *f, uint64_t origin_ns, void *user);

void pb_cupti_free(struct pb_cupti_trace *trace);

/* A stopped trace holding a copy of records[0..n) and no dropped count,
 * for tests of the summary and the trace writer without CUPTI. Free with
 * pb_cupti_free. Returns NULL when out of memory. */
struct pb_cupti_trace *pb_cupti_trace_from_records(const struct pb_cupti_record *records, size_t n);

#endif
