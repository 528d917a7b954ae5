/* GPU observation that is not a kernel: SM clocks through NVML, an activity
 * trace of kernels and copies through CUPTI, and host-to-device bandwidth
 * as CUDA's bandwidthTest measures it (pbench calibrate --gpu).
 *
 * NVML (libnvidia-ml.so.1, part of the driver) and CUPTI (libcupti.so,
 * part of the toolkit) are opened with dlopen when first needed, so
 * neither is a link dependency: pbench starts on machines without them and
 * says why a figure is missing. Everything here answers "not available"
 * (with the reason) in a build without CUDA or on a machine without a
 * device. */
#ifndef PB_GPUPROF_H
#define PB_GPUPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* ---- clocks (NVML) --------------------------------------------------- */

struct pb_gpu_clocks {
    bool available;               /* false: why says why                 */
    unsigned sm_mhz, mem_mhz;     /* current clocks                       */
    unsigned max_sm_mhz;          /* the SM clock's maximum               */
    unsigned long long throttle;  /* nvmlClocksThrottleReasons bit mask   */
    char throttle_text[128];      /* "power cap, thermal" or ""          */
    char why[160];
};

/* Reads the clocks of CUDA device `device` (matched to NVML by PCI bus
 * id). Returns 0 with c filled, or -1 with c->why set. */
int pb_gpu_clocks_read(int device, struct pb_gpu_clocks *c);

/* ---- activity trace (CUPTI) ------------------------------------------ */

enum pb_cupti_kind { PB_CUPTI_KERNEL = 0, PB_CUPTI_MEMCPY, PB_CUPTI_MEMSET };

struct pb_cupti_record {
    enum pb_cupti_kind kind;
    char name[96];        /* kernel name (demangled when CUPTI gives one),
                           * or "HtoD", "DtoH", "DtoD" ...                */
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

void pb_cupti_free(struct pb_cupti_trace *trace);

/* A stopped trace holding a copy of records[0..n) and no dropped count,
 * for tests of the summary and the trace writer without CUPTI. Free with
 * pb_cupti_free. Returns NULL when out of memory. */
struct pb_cupti_trace *pb_cupti_trace_from_records(const struct pb_cupti_record *records, size_t n);

/* ---- host-to-device bandwidth ---------------------------------------- */

struct pb_h2d_bandwidth {
    size_t bytes;           /* transfer size measured                     */
    double pinned_gb_s;     /* cudaHostAlloc source, cudaMemcpyAsync       */
    double pageable_gb_s;   /* malloc source, cudaMemcpyAsync              */
};

/* Measures host-to-device copies of `bytes` as bandwidthTest does: a
 * warm-up copy, then `iterations` back-to-back async copies timed with
 * CUDA events on one stream, GB/s = bytes * iterations / time (1 GB =
 * 1e9 bytes). Returns 0, or -1 with msg ("no CUDA device: ..."). */
int pb_gpu_h2d_bandwidth(size_t bytes, int iterations, struct pb_h2d_bandwidth *out, char *msg,
                         size_t msglen);

#endif
