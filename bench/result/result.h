/* The result of a run as plain data, its summary over repeats and its JSON
 * form (bench/result/result.c: warnings, summary, lifecycle; bench/result/result_json.c:
 * JSON both ways and the file).
 *
 * Measurement fills these structs; sinks render them (bench/report/report.h). A
 * result file holds enough raw data (per-repeat and per-batch samples,
 * histogram bins, machine, resolved config, versions) that every table can
 * be recomputed later from the file alone. The file
 * format is documented in docs/results.md. */
#ifndef PB_RESULT_H
#define PB_RESULT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "bench/base/hist.h"
#include "bench/result/slowest.h"
#include "bench/sys/machine.h"

#define PB_SCHEMA_VERSION 1
#define PB_MAX_WARNINGS 32
#define PB_MAX_ERROR_FILES 64

#define PB_STAGE_COUNTERS 8
#define PB_PERF_COUNTERS 5      /* counted by bench/run/perfcount.h */

/* Interference that makes a point's figures lower than the machine alone:
 * other processes' share of the machine's CPU, steal, and the share of its
 * time a CPU quota throttled the run. One rule (pb_machine_disturbed) for
 * compare, history, the calibration and the suggestions. */
#define PB_BUSY_MACHINE_PCT 10.0
#define PB_STEAL_PCT 5.0
#define PB_THROTTLED_PCT 1.0
/* The machine itself changed when its own reference workload moved this
 * much: compare between two sides (its interval excluding 0 too) and
 * history between the runs before a step and from it. 5%, the default
 * threshold of a change: a machine that moved less cannot explain a change
 * that counts. */
#define PB_MACHINE_CHANGE_PCT 5.0

/* Whether figures measured with these medians of interference (other
 * processes' CPU %, steal %, CPU-quota throttled %) were disturbed. */
bool pb_machine_disturbed(double other_cpu_pct, double steal_pct, double throttled_pct);

/* Per stage, merged over workers (and over repeats in the point summary).
 * A decoder's sub-stages ("decode.seek") are rows of their own with parent
 * set; their time is part of the parent's, so share_pct of a sub-stage is
 * of the same total as the top-level stages and they are left out of it. */
struct pb_stage_result {
    char name[64];
    char parent[64];            /* "" for a pipeline stage                */
    /* A device row (to_device, GPU stages, step): hist is CUDA event time
     * per batch, share_pct is of the summed device rows, cpu_ns is 0. */
    bool gpu;
    uint64_t cpu_ns;            /* thread CPU time spent in the stage     */
    double share_pct;           /* of the summed wall time of all stages  */
    struct pb_hist hist;        /* wall time per sample, ns               */
    int counter_count;          /* e.g. frames_decoded, frames_delivered  */
    char counter_names[PB_STAGE_COUNTERS][32];
    uint64_t counters[PB_STAGE_COUNTERS];
    /* profile.level comprehensive: perf_event counters over the stage's
     * samples; bit i of perf_mask: pb_perf_names[i] was counted. */
    unsigned perf_mask;
    uint64_t perf[PB_PERF_COUNTERS];
    /* The slowest samples (wall time in the stage), slowest first, with
     * their dataset index and file (bench/result/slowest.h). */
    int slowest_count;
    uint64_t slowest_ns[PB_SLOWEST_SAMPLES], slowest_sample[PB_SLOWEST_SAMPLES];
    char slowest_files[PB_SLOWEST_SAMPLES][1024]; /* whole: a 255-byte file name in its folders */
};

/* Per batch, as the consumer saw it. */
struct pb_batch_record {
    uint64_t assembly_ns;       /* worker: first sample start to ready    */
    uint64_t wait_ns;           /* consumer: blocked waiting for it       */
    uint64_t step_ns;           /* consumer: simulated step + its stages  */
    uint32_t queue_depth;       /* ready batches in the queue at dequeue  */
    uint32_t samples;
};

/* Process-wide samples taken every sampler period during a repeat. */
struct pb_rss_sample {
    double t_s;
    uint64_t rss_bytes;
    /* Of rss_bytes, pbench's own buffers that grow during a repeat (the
     * trace's records, the batch records): left out of memory growth. */
    uint64_t own_bytes;
    double cpu_pct;             /* process CPU over the period, 100 = 1 core */
};

/* The device side of a repeat (or of a point: sums over its repeats), from
 * CUDA events on the measured batches. used is false without to_device. */
struct pb_gpu_figures {
    bool used;
    uint64_t batches, copy_bytes;
    double copy_ns, stage_ns, step_ns;  /* event time, summed over batches */
    double overlap_ns;          /* copy time during which compute ran     */
    double copy_gb_per_s;       /* copy_bytes / copy_ns                   */
    double overlap_pct;         /* overlap_ns / copy_ns                   */
    double busy_pct;            /* (stage + step time) / wall             */
    double wall_s;
    uint64_t host_blocked_ns;   /* loop waited for a free device buffer   */
    uint64_t copy_wait_ns;      /* loop waited for copies to finish       */
    /* NVML at the repeat's end: the SM clock (0 unknown) and whether the
     * driver was slowing the GPU down (thermal, power or hardware
     * slowdown; see bench/sys/nvml.c), which disturbs a comparison as a
     * CPU quota does. A point holds its slowest repeat's clock, and
     * slowed if any repeat was. */
    unsigned sm_mhz;
    bool slowed;
};

/* The device a point ran on, as seen around its measurement. */
struct pb_gpu_device {
    uint64_t alloc_peak_bytes;  /* pbench's own device allocations, peak  */
    uint64_t used_before_bytes, used_after_bytes; /* cudaMemGetInfo total - free */
    unsigned sm_mhz_start, sm_mhz_end, sm_mhz_max; /* NVML; 0 unknown     */
    char throttle[128];         /* NVML slowdown reasons at the end, or "" */
};

struct pb_repeat_result {
    double wall_s;              /* measured part only                     */
    /* When the measured part began, seconds since the Unix epoch (0 not
     * known): lines the repeat and its batch records up with other time
     * series (a Prometheus scrape, a job's log). */
    double start_unix_s;
    uint64_t samples, batches, bytes_read, errors;
    double samples_per_s, batches_per_s, mb_per_s;
    double stall_pct;           /* consumer wait / wall                   */
    double accel_util_pct;      /* step time / wall, when step_ms is set  */
    double cpu_util_pct;        /* process CPU / wall, 100 = one core     */
    double worker_cpu_pct;      /* worker thread CPU / (workers * wall)   */
    double window_noise;        /* relative noise of windowed throughput  */
    /* The loop's wall time besides the wait (stall_pct): the step as the
     * loop spent it (the sleep, or the host's part of a device step),
     * consumer-side stages (to_device, GPU stages), and the rest
     * (bookkeeping, returning buffers, scheduling delays); the four add up
     * to 100. */
    double loop_step_pct, loop_stages_pct, loop_other_pct;
    /* Other processes' CPU time over the measured part, % of the machine
     * (100 = every CPU busy), from /proc/stat less this process; and steal. */
    double other_cpu_pct, steal_pct;
    /* From the workers' start to the first batch the loop received (what
     * an epoch start costs without persistent workers). */
    double first_batch_s;
    bool hit_time_cap, noisy, interrupted;
    /* The dataset's bytes in the page cache at the repeat's start (after
     * dataset.cache: cold evicted them), measured with mincore over
     * page_cache_files_checked of its files (0: not measured). */
    double page_cache_resident_pct;
    uint64_t page_cache_files_checked;
    uint64_t rss_peak_bytes;
    /* The machine's own speed around the repeat (bench/sys/refspeed.h):
     * the reference workload's time (ns, before the repeat), memory
     * bandwidth (GB/s), and the share of the repeat's time the process's
     * cgroup was throttled by a CPU quota; 0 where not measured. */
    double ref_cpu_ns, ref_mem_gb_s, throttled_pct;
    size_t batch_count;
    struct pb_batch_record *batch_records; /* owned                       */
    size_t rss_count;
    struct pb_rss_sample *rss;             /* owned                       */
    size_t stage_count;
    struct pb_stage_result *stages;        /* owned                       */
    struct pb_gpu_figures gpu;
};

/* RSS growth over a point's measured part (bench/result/memgrowth.h). */
struct pb_memory_growth {
    bool known;                 /* enough samples to fit                   */
    double mib_per_1000_batches, ci_low, ci_high; /* slope and 95% interval */
    size_t samples;
    int repeats;
    bool significant;           /* the interval excludes 0                 */
    bool judged;                /* the repeats were long enough to warn
                                 * (PB_MEMGROWTH_MIN_BATCHES)               */
};

struct pb_point_result {
    json_t *axes;               /* {"loader.workers": 4, ...}; owned, may be empty */
    size_t repeat_count;
    struct pb_repeat_result *repeats;      /* owned                       */

    /* Summary over repeats. */
    double samples_per_s;       /* median of repeats                      */
    /* Noise: coefficient of variation of the repeats' samples/s, in %;
     * with a single repeat, that repeat's windowed-throughput noise. */
    double samples_per_s_noise_pct;
    double batches_per_s, mb_per_s;
    double stall_pct, accel_util_pct, cpu_util_pct, worker_cpu_pct;
    double loop_step_pct, loop_stages_pct, loop_other_pct; /* wall-weighted */
    double other_cpu_pct, steal_pct, first_batch_s;        /* medians       */
    uint64_t assembly_p50_ns, assembly_p99_ns; /* worker time to build a batch */
    uint64_t wait_p50_ns, wait_p99_ns;     /* consumer wait per batch       */
    double queue_depth_mean;    /* ready batches at dequeue, mean over batches */
    uint64_t rss_peak_bytes, pinned_bytes, batch_pool_bytes;
    uint64_t batch_bytes;       /* one batch buffer: batch_size x slot     */
    uint64_t samples, errors;
    char error_files[PB_MAX_ERROR_FILES][256]; /* first failing files with why */
    int error_file_count;
    uint64_t error_files_unlisted; /* failures of files after the list filled up */
    size_t stage_count;
    struct pb_stage_result *stages;        /* owned, merged over repeats  */
    int warning_count;
    char warnings[PB_MAX_WARNINGS][256];
    char error[256];            /* why the point failed; "" when it ran   */
    struct pb_gpu_figures gpu;  /* summed over repeats, ratios recomputed */
    struct pb_gpu_device gpu_device;
    /* Multi-rank runs (bench/sys/mpi.h), kept as JSON and passed through: one
     * entry per rank, and the aggregate's spread (slowest rank, imbalance,
     * worst stall, barrier and gather time); NULL for a single process. */
    json_t *ranks;
    json_t *multi_rank;
    /* loader.affinity other than none: the policy, topology and each
     * worker's CPU set (bench/sys/affinity.h); NULL otherwise. */
    json_t *affinity;
    /* loader.engine other than pbench: the engine and its versions
     * ({"name": NAME, "versions": {KEY: VERSION, ...}}, the keys its row
     * names, docs/engines.md); NULL for pbench's own. */
    json_t *engine;
    struct pb_memory_growth memory_growth;
};

/* What this machine does at best for the config's data (pbench calibrate):
 * the pipeline on one core with no training step, and memory bandwidth. */
struct pb_calibration {
    bool measured;
    /* What else ran while the one-core pipeline was measured: other
     * processes' share of the machine's CPU and steal (%), as a repeat
     * records them. busy: over the thresholds compare uses
     * (PB_BUSY_MACHINE_PCT, PB_STEAL_PCT), so the one-core figure is a
     * floor, not the machine's. */
    double other_cpu_pct, steal_pct;
    bool busy;
    double single_core_samples_per_s;
    double memcpy_gb_per_s;
    int cores;
    /* Video: demux + decode time per decoded frame on one uncontended core
     * (0 when the pipeline has no video decoder). */
    double decode_ns_per_frame;
    /* pbench calibrate --gpu: host-to-device copy of one batch as
     * bandwidthTest measures it; 0 when not measured. */
    uint64_t h2d_bytes;
    double h2d_pinned_gb_s, h2d_pageable_gb_s;
    /* The same for one large copy (PB_CALIBRATE_H2D_LARGE_BYTES, 256 MiB):
     * the link's peak, against which a batch's copy is read. */
    uint64_t h2d_large_bytes;
    double h2d_large_pinned_gb_s, h2d_large_pageable_gb_s;
    /* The storage ceiling: the dataset's files (tar: shards) read cold
     * (evicted first), sequentially, in MB/s; 0 when not measured. */
    double storage_cold_mb_per_s;
    /* Object storage: the dataset's objects read in order with one
     * request at a time and with remote_streams in flight (MB/s and
     * objects/s); 0 when not measured. */
    double remote_one_mb_per_s, remote_one_objects_per_s;
    double remote_many_mb_per_s, remote_many_objects_per_s;
    int remote_streams;
};

/* What the dataset is (the result's "dataset"): its format, where it is,
 * its samples per epoch (this rank's, before max_samples), its bytes and
 * files (tar: shards), the cache mode asked for and what it did. */
struct pb_dataset_info {
    char format[16];            /* files, tar; "" when not recorded       */
    char path[512];
    char cache[16];             /* warm, cold, direct                     */
    char filesystem[32];        /* ext4, tmpfs, overlay, ...              */
    uint64_t samples, bytes, files, shards, bad_samples;
    /* The cache mode did not do what it says (eviction had no effect, or
     * O_DIRECT was refused): why, in a sentence; "" when it worked. */
    char cache_note[256];
    /* cold and direct: the storage's cold sequential read measured before
     * the run (up to 256 MiB of the files, 1 MiB reads), MB/s; 0 when not. */
    double cold_read_mb_per_s;
    /* JPEG sources: the median width and height of up to 32 of them read
     * from their headers (0: not JPEG, or not measured), so a suggestion
     * that depends on the source size knows it. */
    uint64_t source_width, source_height;
    /* Object storage (filesystem "s3" or "http"): where requests went,
     * where the credentials came from (never a secret), what listing
     * cost and the requests each worker kept in flight. */
    char endpoint[256];
    char credentials[192];
    uint64_t list_requests;
    double list_s;
    uint64_t requests_in_flight;
};

struct pb_result {
    int schema_version;
    char pbench_version[32];
    char created[40];           /* ISO 8601 UTC                           */
    char name[128];             /* the config's name                      */
    char config_path[512];      /* the config file run, as given; may be "" */
    struct pb_machine machine;
    json_t *config;             /* resolved config; owned                 */
    struct pb_dataset_info dataset;
    bool interrupted;
    /* Instrumentation overhead, when measured (pbench run --overhead). */
    bool overhead_measured;
    double overhead_pct;        /* throughput lost to stage timing        */
    double overhead_noise_pct;
    struct pb_calibration calibration;
    json_t *analysis;           /* written by the run for readers; owned, may be NULL */
    /* pbench compare BASE.yaml NEW.yaml: both configs measured in one
     * session, their points tagged by the axis "compare" ("base", "new");
     * {order, base: {config_path, config}, new: {...}, comparison}. Owned,
     * NULL for an ordinary run (bench/session/interleave.h). */
    json_t *interleaved;
    /* gpu: optional on a machine without a device: the stages skipped and
     * why ("" when nothing was skipped). */
    char gpu_skipped[256];
    /* profile.gpu: cupti: the trace's summary (owned, may be NULL) and the
     * Chrome trace file written beside the result. */
    json_t *gpu_profile;
    char gpu_trace_path[512];
    char trace_path[512];       /* run.trace: the CPU timeline's file, or "" */
    size_t point_count;
    struct pb_point_result *points; /* owned */
    int warning_count;
    char warnings[PB_MAX_WARNINGS][256];
};

/* Adds a warning unless the list is full; duplicates are kept once. */
void pb_point_warn(struct pb_point_result *point, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pb_result_warn(struct pb_result *result, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A setting of point i as it ran, by dotted path ("loader.workers"): its
 * axis value if swept, else the base config's value; NULL when neither has
 * it. This is the one way to read a point's settings back from a result. */
const json_t *pb_point_setting(const struct pb_result *result, size_t point, const char *path);

/* The same as a number: integers, reals and booleans convert; def when
 * there is no such setting or it is not a number. */
int64_t pb_point_setting_int(const struct pb_result *result, size_t point, const char *path,
                             int64_t def);
double pb_point_setting_double(const struct pb_result *result, size_t point, const char *path,
                               double def);

/* The row of the engine point ran on (its loader.engine setting; pbench's
 * own where the result has none); NULL for a name no row has. */
struct pb_engine_row; /* bench/base/engine_row.h */
const struct pb_engine_row *pb_point_engine_row(const struct pb_result *result, size_t point);

/* Whether point ran a wrapped training job (an engine whose row takes the
 * batches' sizes from the job: loader.engine: wrap). */
bool pb_point_wrapped(const struct pb_result *result, size_t point);

/* The training step of point i, in ms: run.step_ms where it simulates one;
 * a wrapped job's own step as measured (the median over its repeats of the
 * loop's time between batches); 0 without a step. Every figure that reads
 * "the step" reads it here. */
double pb_point_step_ms(const struct pb_result *result, size_t point);

/* The batch size point i ran with: loader.batch_size, or a wrapped job's
 * own (its samples over its batches) where pbench did not set it. */
int64_t pb_point_batch_size(const struct pb_result *result, size_t point);

/* The base config's value at a dotted path, whatever the points swept;
 * NULL when absent. */
const json_t *pb_result_config_value(const struct pb_result *result, const char *path);

/* "torch · Python 3.11.2 · torch 1.13.0 · torchvision 0.14.1 · Pillow 9.4.0
 * · PyAV 10.0.0": the engine a point ran on with the versions its row
 * names; false (buf "") for pbench's own. */
bool pb_point_engine_text(const struct pb_point_result *point, char *buf, size_t buflen);

/* The engines other than pbench's that ran the result's points, each once
 * with its versions, "; "-separated; false (buf "") when none did. */
bool pb_result_engines_text(const struct pb_result *result, char *buf, size_t buflen);

/* The samples that went through a pipeline: the most any CPU stage of its
 * rows handled (the first stage sees each; collate counts batches), which
 * includes the samples of batches still in flight when the measured part
 * ended. A stage's CPU time per sample is its cpu_ns over this; 0 without
 * a CPU stage. Sub-stages and device rows aside. */
uint64_t pb_stages_samples(const struct pb_stage_result *stages, size_t count);

/* Releases what a repeat owns (batch records, RSS series, stage rows) and
 * zeroes it. */
void pb_repeat_result_free(struct pb_repeat_result *rep);

/* Fills the point's summary fields from its repeats (medians, noise,
 * wall-weighted percentages, exact batch percentiles, stages merged by
 * name) and warns about repeats that hit the time cap or were noisy, and
 * when other processes took PB_BUSY_MACHINE_PCT of the machine or more
 * (or steal PB_STEAL_PCT), medians over the repeats.
 * Summarizing again recomputes everything and replaces those warnings.
 * The summary stands on pb_point_finished_repeats: a last repeat a stop
 * cut short stays in the point but is left out. */
void pb_point_summarize(struct pb_point_result *point);

/* The median over the point's repeats of the share of time a CPU quota
 * throttled them, %; 0 without repeats. */
double pb_point_median_throttled(const struct pb_point_result *point);

/* The repeats a point's summary stands on: all of them, less the last when
 * a stop cut it short (it stays in the result, marked interrupted) and an
 * earlier repeat finished. */
size_t pb_point_finished_repeats(const struct pb_point_result *point);

/* Fills a repeat's loop_step_pct, loop_stages_pct and loop_other_pct from
 * the loop's time in the step and in consumer-side stages over the measured
 * part; wall_s and stall_pct must be set. The rest is clamped at 0. */
void pb_repeat_loop_shares(struct pb_repeat_result *rep, uint64_t step_ns, uint64_t stages_ns);

/* Whether the repeat's process CPU share (cpu_util_pct) is impossible: above
 * 100% for each of cores, beyond what the clocks' resolution explains
 * (resolution_ns: how far the CPU time read may be off, e.g. a clock tick
 * per process read from /proc; 0 for exact clocks). Such a share is
 * pbench's own error (a span cut short, a clock misread), never a figure:
 * msg then says so, with the share, the cores and the span. */
bool pb_repeat_cpu_impossible(const struct pb_repeat_result *rep, long cores,
                              double resolution_ns, char *msg, size_t msglen);

/* Recomputes copy_gb_per_s, overlap_pct and busy_pct from the sums. */
void pb_gpu_figures_ratios(struct pb_gpu_figures *g);

/* JSON form. to_json returns a new reference; from_json fills result
 * (release with pb_result_free) and returns PB_OK or PB_ERR with a message. */
json_t *pb_result_to_json(const struct pb_result *result);
int pb_result_from_json(const json_t *root, struct pb_result *result, char *msg, size_t msglen);

/* Writes the JSON to path atomically: a temporary file in the same folder,
 * fsync, then rename. Creates the folder if needed. */
int pb_result_write(const struct pb_result *result, const char *path, char *msg, size_t msglen);

/* Reads a result file written by pb_result_write (or an older pbench of
 * the same schema version); release with pb_result_free. PB_OK, or PB_ERR
 * with a message naming the file and the offending key or JSON position. */
int pb_result_read(const char *path, struct pb_result *result, char *msg, size_t msglen);

void pb_result_free(struct pb_result *result);

/* ---- a stage row's per-stage counters (bench/run/perfcount.h counts) -- */

enum pb_perf_counter {
    PB_PERF_PAGE_FAULTS = 0,
    PB_PERF_CONTEXT_SWITCHES,
    PB_PERF_CYCLES,
    PB_PERF_INSTRUCTIONS,
    PB_PERF_CACHE_MISSES,
};

/* "page_faults", "context_switches", "cycles", "instructions", "cache_misses". */
extern const char *const pb_perf_names[PB_PERF_COUNTERS];

/* ---- a stage row's slowest samples (bench/result/slowest.h keeps them) - */

/* Adds a thread's five into a stage row (whose files are named from
 * paths, indexed by sample; paths may be NULL). A row lists a sample once,
 * with the slowest time it took. */
void pb_slowest_merge_thread(struct pb_stage_result *row, const struct pb_slowest *s,
                             char *const *paths, uint64_t path_count);

/* Adds another row's slowest samples (another repeat's) into row. */
void pb_slowest_merge_row(struct pb_stage_result *row, const struct pb_stage_result *other);

/* [{"ns", "sample", "file"}...] slowest first, or NULL when none; and back. */
json_t *pb_slowest_to_json(const struct pb_stage_result *row);
void pb_slowest_from_json(const json_t *arr, struct pb_stage_result *row);

#endif
