/* The JSON form of a result, both directions, and its file. The format is
 * documented field by field in docs/results.md. The flat numeric fields of
 * a repeat, a point, the machine and the device figures are listed once,
 * in field tables that drive both the writer and the reader. */
#include "bench/result.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bench/fileio.h"
#include "bench/pb.h"

#define PATH_TEXT_MAX 256 /* key paths in reader messages */

/* ------------------------------------------------------------ JSON write */

/* Integers are written as JSON integers (int64); the few values that can
 * exceed it (an open-ended bucket edge) are clamped. */
static json_t *json_u64(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* Non-finite doubles have no JSON form; they are written as null. */
static json_t *json_number(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *hist_to_json(const struct pb_hist *h)
{
    json_t *obj = json_object();
    json_t *bins = json_array();
    json_object_set_new(obj, "count", json_u64(h->count));
    json_object_set_new(obj, "min_ns", json_u64(h->count ? h->min_ns : 0));
    json_object_set_new(obj, "max_ns", json_u64(h->max_ns));
    json_object_set_new(obj, "mean_ns", json_number(h->mean_ns));
    json_object_set_new(obj, "stddev_ns", json_number(pb_hist_stddev(h)));
    json_object_set_new(obj, "sum_ns", json_u64(h->sum_ns));
    for (size_t i = 0; i < PB_HIST_BUCKETS; i++) {
        if (!h->bins[i])
            continue;
        uint64_t lo, hi;
        pb_hist_bucket_range(i, &lo, &hi);
        json_array_append_new(bins, json_pack("[o o o]", json_u64(lo), json_u64(hi),
                                              json_u64(h->bins[i])));
    }
    json_object_set_new(obj, "bins", bins);
    return obj;
}

static json_t *stages_to_json(const struct pb_stage_result *stages, size_t count)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < count; i++) {
        const struct pb_stage_result *s = &stages[i];
        json_t *obj = json_object();
        json_object_set_new(obj, "name", json_string(s->name));
        if (s->parent[0])
            json_object_set_new(obj, "parent", json_string(s->parent));
        if (s->gpu)
            json_object_set_new(obj, "device", json_string("gpu"));
        if (s->counter_count > 0) {
            json_t *counters = json_object();
            for (int c = 0; c < s->counter_count && c < PB_STAGE_COUNTERS; c++)
                json_object_set_new(counters, s->counter_names[c], json_u64(s->counters[c]));
            json_object_set_new(obj, "counters", counters);
        }
        /* Derived from the histogram, for readers that do not recompute. */
        json_object_set_new(obj, "count", json_u64(s->hist.count));
        json_object_set_new(obj, "mean_ns", json_number(s->hist.mean_ns));
        json_object_set_new(obj, "p50_ns", json_u64(pb_hist_quantile(&s->hist, 0.50)));
        json_object_set_new(obj, "p90_ns", json_u64(pb_hist_quantile(&s->hist, 0.90)));
        json_object_set_new(obj, "p99_ns", json_u64(pb_hist_quantile(&s->hist, 0.99)));
        json_object_set_new(obj, "max_ns", json_u64(s->hist.max_ns));
        json_object_set_new(obj, "cpu_ns", json_u64(s->cpu_ns));
        json_object_set_new(obj, "share_pct", json_number(s->share_pct));
        json_object_set_new(obj, "histogram", hist_to_json(&s->hist));
        json_array_append_new(arr, obj);
    }
    return arr;
}

static json_t *warnings_to_json(const char (*warnings)[256], int count)
{
    json_t *arr = json_array();
    for (int i = 0; i < count; i++)
        json_array_append_new(arr, json_string(warnings[i]));
    return arr;
}

/* The GPU figures' fields, for writing and reading alike. */
static const struct {
    const char *name;
    size_t offset;
    bool u64;
} gpu_fields[] = {
#define GPU_F(f, u) {#f, offsetof(struct pb_gpu_figures, f), u}
    GPU_F(batches, true),         GPU_F(copy_bytes, true),      GPU_F(copy_ns, false),
    GPU_F(stage_ns, false),       GPU_F(step_ns, false),        GPU_F(overlap_ns, false),
    GPU_F(copy_gb_per_s, false),  GPU_F(overlap_pct, false),    GPU_F(busy_pct, false),
    GPU_F(wall_s, false),         GPU_F(host_blocked_ns, true), GPU_F(copy_wait_ns, true),
#undef GPU_F
};

static json_t *gpu_figures_to_json(const struct pb_gpu_figures *g)
{
    json_t *obj = json_object();
    for (size_t i = 0; i < PB_ARRAY_LEN(gpu_fields); i++) {
        const char *at = (const char *)g + gpu_fields[i].offset;
        json_object_set_new(obj, gpu_fields[i].name,
                            gpu_fields[i].u64 ? json_u64(*(const uint64_t *)at)
                                              : json_number(*(const double *)at));
    }
    return obj;
}

static json_t *gpu_device_to_json(const struct pb_gpu_device *d)
{
    return json_pack("{s o s o s o s i s i s i s s}", "alloc_peak_bytes",
                     json_u64(d->alloc_peak_bytes), "used_before_bytes",
                     json_u64(d->used_before_bytes), "used_after_bytes",
                     json_u64(d->used_after_bytes), "sm_mhz_start", (int)d->sm_mhz_start,
                     "sm_mhz_end", (int)d->sm_mhz_end, "sm_mhz_max", (int)d->sm_mhz_max,
                     "throttle", d->throttle);
}

static json_t *repeat_to_json(const struct pb_repeat_result *r)
{
    json_t *obj = json_object();
    json_object_set_new(obj, "wall_s", json_number(r->wall_s));
    json_object_set_new(obj, "samples", json_u64(r->samples));
    json_object_set_new(obj, "batches", json_u64(r->batches));
    json_object_set_new(obj, "bytes_read", json_u64(r->bytes_read));
    json_object_set_new(obj, "errors", json_u64(r->errors));
    json_object_set_new(obj, "samples_per_s", json_number(r->samples_per_s));
    json_object_set_new(obj, "batches_per_s", json_number(r->batches_per_s));
    json_object_set_new(obj, "mb_per_s", json_number(r->mb_per_s));
    json_object_set_new(obj, "stall_pct", json_number(r->stall_pct));
    json_object_set_new(obj, "accel_util_pct", json_number(r->accel_util_pct));
    json_object_set_new(obj, "cpu_util_pct", json_number(r->cpu_util_pct));
    json_object_set_new(obj, "worker_cpu_pct", json_number(r->worker_cpu_pct));
    json_object_set_new(obj, "window_noise", json_number(r->window_noise));
    json_object_set_new(obj, "hit_time_cap", json_boolean(r->hit_time_cap));
    json_object_set_new(obj, "noisy", json_boolean(r->noisy));
    json_object_set_new(obj, "interrupted", json_boolean(r->interrupted));
    json_object_set_new(obj, "rss_peak_bytes", json_u64(r->rss_peak_bytes));

    json_t *assembly = json_array(), *wait = json_array(), *step = json_array();
    json_t *depth = json_array(), *samples = json_array();
    for (size_t i = 0; i < r->batch_count; i++) {
        const struct pb_batch_record *b = &r->batch_records[i];
        json_array_append_new(assembly, json_u64(b->assembly_ns));
        json_array_append_new(wait, json_u64(b->wait_ns));
        json_array_append_new(step, json_u64(b->step_ns));
        json_array_append_new(depth, json_u64(b->queue_depth));
        json_array_append_new(samples, json_u64(b->samples));
    }
    json_object_set_new(obj, "batch_records",
                        json_pack("{s o s o s o s o s o}", "assembly_ns", assembly, "wait_ns", wait,
                                  "step_ns", step, "queue_depth", depth, "samples", samples));

    json_t *t = json_array(), *rss = json_array(), *cpu = json_array();
    for (size_t i = 0; i < r->rss_count; i++) {
        json_array_append_new(t, json_number(r->rss[i].t_s));
        json_array_append_new(rss, json_u64(r->rss[i].rss_bytes));
        json_array_append_new(cpu, json_number(r->rss[i].cpu_pct));
    }
    json_object_set_new(obj, "rss",
                        json_pack("{s o s o s o}", "t_s", t, "rss_bytes", rss, "cpu_pct", cpu));
    json_object_set_new(obj, "stages", stages_to_json(r->stages, r->stage_count));
    if (r->gpu.used)
        json_object_set_new(obj, "gpu", gpu_figures_to_json(&r->gpu));
    return obj;
}

static json_t *point_to_json(const struct pb_point_result *p)
{
    json_t *obj = json_object();
    json_object_set_new(obj, "axes", p->axes ? json_deep_copy(p->axes) : json_object());
    json_object_set_new(obj, "samples_per_s", json_number(p->samples_per_s));
    json_object_set_new(obj, "samples_per_s_noise_pct", json_number(p->samples_per_s_noise_pct));
    json_object_set_new(obj, "batches_per_s", json_number(p->batches_per_s));
    json_object_set_new(obj, "mb_per_s", json_number(p->mb_per_s));
    json_object_set_new(obj, "stall_pct", json_number(p->stall_pct));
    json_object_set_new(obj, "accel_util_pct", json_number(p->accel_util_pct));
    json_object_set_new(obj, "cpu_util_pct", json_number(p->cpu_util_pct));
    json_object_set_new(obj, "worker_cpu_pct", json_number(p->worker_cpu_pct));
    json_object_set_new(obj, "queue_depth_mean", json_number(p->queue_depth_mean));
    json_object_set_new(obj, "batch_assembly",
                        json_pack("{s o s o}", "p50_ns", json_u64(p->assembly_p50_ns), "p99_ns",
                                  json_u64(p->assembly_p99_ns)));
    json_object_set_new(obj, "consumer_wait",
                        json_pack("{s o s o}", "p50_ns", json_u64(p->wait_p50_ns), "p99_ns",
                                  json_u64(p->wait_p99_ns)));
    json_object_set_new(obj, "memory",
                        json_pack("{s o s o s o s o}", "rss_peak_bytes",
                                  json_u64(p->rss_peak_bytes), "pinned_bytes",
                                  json_u64(p->pinned_bytes), "batch_pool_bytes",
                                  json_u64(p->batch_pool_bytes), "batch_bytes",
                                  json_u64(p->batch_bytes)));
    json_object_set_new(obj, "samples", json_u64(p->samples));
    json_t *files = json_array();
    for (int i = 0; i < p->error_file_count && i < PB_MAX_ERROR_FILES; i++)
        json_array_append_new(files, json_string(p->error_files[i]));
    json_object_set_new(obj, "errors",
                        json_pack("{s o s o}", "count", json_u64(p->errors), "files", files));
    json_object_set_new(obj, "stages", stages_to_json(p->stages, p->stage_count));
    json_t *repeats = json_array();
    for (size_t i = 0; i < p->repeat_count; i++)
        json_array_append_new(repeats, repeat_to_json(&p->repeats[i]));
    json_object_set_new(obj, "repeats", repeats);
    json_object_set_new(obj, "warnings", warnings_to_json(p->warnings, p->warning_count));
    if (p->error[0])
        json_object_set_new(obj, "error", json_string(p->error));
    if (p->gpu.used) {
        json_object_set_new(obj, "gpu", gpu_figures_to_json(&p->gpu));
        json_object_set_new(obj, "gpu_device", gpu_device_to_json(&p->gpu_device));
    }
    return obj;
}

static json_t *machine_to_json(const struct pb_machine *m)
{
    json_t *obj = json_object();
    json_object_set_new(obj, "hostname", json_string(m->hostname));
    json_object_set_new(obj, "cpu_model", json_string(m->cpu_model));
    json_object_set_new(obj, "packages", json_integer(m->packages));
    json_object_set_new(obj, "cores", json_integer(m->cores));
    json_object_set_new(obj, "pus", json_integer(m->pus));
    json_object_set_new(obj, "numa_nodes", json_integer(m->numa_nodes));
    json_object_set_new(obj, "l3_bytes", json_u64(m->l3_bytes));
    json_object_set_new(obj, "memory_bytes", json_u64(m->memory_bytes));
    json_object_set_new(obj, "os", json_string(m->os));
    json_object_set_new(obj, "kernel", json_string(m->kernel));
    json_object_set_new(obj, "arch", json_string(m->arch));
    json_object_set_new(obj, "compiler", json_string(m->compiler));
    json_object_set_new(obj, "build_type", json_string(m->build_type));
    json_object_set_new(obj, "sanitize", json_string(m->sanitize));
    json_t *libs = json_array();
    for (int i = 0; i < m->library_count && i < (int)PB_ARRAY_LEN(m->libraries); i++)
        json_array_append_new(libs, json_pack("{s s s s}", "name", m->libraries[i][0], "version",
                                              m->libraries[i][1]));
    json_object_set_new(obj, "libraries", libs);
    json_object_set_new(obj, "gpu",
                        json_pack("{s i s s s s s i s i}", "count", m->gpu_count, "name",
                                  m->gpu_name, "status", m->gpu_status, "cuda_runtime_version",
                                  m->cuda_runtime_version, "cuda_driver_version",
                                  m->cuda_driver_version));
    return obj;
}

json_t *pb_result_to_json(const struct pb_result *result)
{
    json_t *root = json_object();
    if (!root)
        return NULL;
    json_object_set_new(root, "schema_version", json_integer(result->schema_version));
    json_object_set_new(root, "pbench_version", json_string(result->pbench_version));
    json_object_set_new(root, "created", json_string(result->created));
    json_object_set_new(root, "name", json_string(result->name));
    json_object_set_new(root, "machine", machine_to_json(&result->machine));
    json_object_set_new(root, "config", result->config ? json_deep_copy(result->config)
                                                       : json_null());
    json_object_set_new(root, "interrupted", json_boolean(result->interrupted));
    json_object_set_new(root, "overhead",
                        json_pack("{s b s o s o}", "measured", result->overhead_measured, "pct",
                                  json_number(result->overhead_pct), "noise_pct",
                                  json_number(result->overhead_noise_pct)));
    const struct pb_calibration *cal = &result->calibration;
    if (cal->measured)
        json_object_set_new(root, "calibration",
                            json_pack("{s o s o s i s o s o s o s o}", "single_core_samples_per_s",
                                      json_number(cal->single_core_samples_per_s),
                                      "memcpy_gb_per_s", json_number(cal->memcpy_gb_per_s),
                                      "cores", cal->cores, "decode_ns_per_frame",
                                      json_number(cal->decode_ns_per_frame), "h2d_bytes",
                                      json_u64(cal->h2d_bytes), "h2d_pinned_gb_per_s",
                                      json_number(cal->h2d_pinned_gb_s),
                                      "h2d_pageable_gb_per_s",
                                      json_number(cal->h2d_pageable_gb_s)));
    if (result->gpu_skipped[0])
        json_object_set_new(root, "gpu_skipped", json_string(result->gpu_skipped));
    if (result->gpu_profile)
        json_object_set_new(root, "gpu_profile", json_deep_copy(result->gpu_profile));
    if (result->gpu_trace_path[0])
        json_object_set_new(root, "gpu_trace", json_string(result->gpu_trace_path));
    json_t *points = json_array();
    for (size_t i = 0; i < result->point_count; i++)
        json_array_append_new(points, point_to_json(&result->points[i]));
    json_object_set_new(root, "points", points);
    if (result->analysis)
        json_object_set_new(root, "analysis", json_deep_copy(result->analysis));
    json_object_set_new(root, "warnings",
                        warnings_to_json(result->warnings, result->warning_count));
    return root;
}

/* ------------------------------------------------------------- JSON read */

/* The reader treats a missing key as zero or empty (so files stay readable
 * when keys are added within a schema version) and a key of the wrong type
 * as an error naming its path, e.g. "points[0].repeats[1].wall_s". */
struct reader {
    char *msg;
    size_t msglen;
};

static int fail(struct reader *rd, const char *path, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct reader *rd, const char *path, const char *key, const char *fmt, ...)
{
    if (rd->msg && rd->msglen) {
        char what[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        snprintf(rd->msg, rd->msglen, "%s%s%s: %s", path, *path && *key ? "." : "", key, what);
    }
    return PB_ERR;
}

/* Key paths longer than PATH_TEXT_MAX are cut; they only feed messages. */
static const char *child_path(char *buf, const char *path, const char *key)
{
    if (snprintf(buf, PATH_TEXT_MAX, "%s%s%s", path, *path ? "." : "", key) >= PATH_TEXT_MAX)
        buf[PATH_TEXT_MAX - 1] = '\0';
    return buf;
}

static const char *index_path(char *buf, const char *path, const char *key, size_t index)
{
    if (snprintf(buf, PATH_TEXT_MAX, "%s%s%s[%zu]", path, *path ? "." : "", key, index) >=
        PATH_TEXT_MAX)
        buf[PATH_TEXT_MAX - 1] = '\0';
    return buf;
}

static int get_u64_value(struct reader *rd, const json_t *v, const char *path, const char *key,
                         uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return fail(rd, path, key, "expected a non-negative integer");
    *out = (uint64_t)json_integer_value(v);
    return PB_OK;
}

static int get_u64(struct reader *rd, const json_t *obj, const char *path, const char *key,
                   uint64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    return v ? get_u64_value(rd, v, path, key, out) : PB_OK;
}

static int get_int(struct reader *rd, const json_t *obj, const char *path, const char *key,
                   int *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return PB_OK;
    if (!json_is_integer(v))
        return fail(rd, path, key, "expected an integer");
    json_int_t i = json_integer_value(v);
    if (i < INT_MIN || i > INT_MAX)
        return fail(rd, path, key, "%lld is out of range", (long long)i);
    *out = (int)i;
    return PB_OK;
}

static int get_double_value(struct reader *rd, const json_t *v, const char *path,
                            const char *key, double *out)
{
    if (json_is_null(v)) { /* how non-finite values are written */
        *out = NAN;
        return PB_OK;
    }
    if (!json_is_number(v))
        return fail(rd, path, key, "expected a number");
    *out = json_number_value(v);
    return PB_OK;
}

static int get_double(struct reader *rd, const json_t *obj, const char *path, const char *key,
                      double *out)
{
    const json_t *v = json_object_get(obj, key);
    return v ? get_double_value(rd, v, path, key, out) : PB_OK;
}

static int get_bool(struct reader *rd, const json_t *obj, const char *path, const char *key,
                    bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return PB_OK;
    if (!json_is_boolean(v))
        return fail(rd, path, key, "expected true or false");
    *out = json_is_true(v);
    return PB_OK;
}

static int get_string(struct reader *rd, const json_t *obj, const char *path, const char *key,
                      char *out, size_t size)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return PB_OK;
    if (!json_is_string(v))
        return fail(rd, path, key, "expected a string");
    snprintf(out, size, "%s", json_string_value(v));
    return PB_OK;
}

/* Optional object/array members: *out is NULL when the key is missing. */
static int get_object(struct reader *rd, const json_t *obj, const char *path, const char *key,
                      const json_t **out)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (v && !json_is_object(v))
        return fail(rd, path, key, "expected an object");
    *out = v;
    return PB_OK;
}

static int get_array(struct reader *rd, const json_t *obj, const char *path, const char *key,
                     const json_t **out)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (v && !json_is_array(v))
        return fail(rd, path, key, "expected an array");
    *out = v;
    return PB_OK;
}

static int get_warnings(struct reader *rd, const json_t *obj, const char *path,
                        char (*list)[256], int *count)
{
    const json_t *arr;
    char at[PATH_TEXT_MAX];
    if (get_array(rd, obj, path, "warnings", &arr))
        return PB_ERR;
    *count = 0;
    for (size_t i = 0; arr && i < json_array_size(arr) && *count < PB_MAX_WARNINGS; i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_string(v))
            return fail(rd, index_path(at, path, "warnings", i), "", "expected a string");
        snprintf(list[*count], 256, "%s", json_string_value(v));
        (*count)++;
    }
    return PB_OK;
}

static int read_hist(struct reader *rd, const json_t *obj, const char *path, struct pb_hist *h)
{
    char at[PATH_TEXT_MAX];
    double stddev_ns = 0;
    const json_t *bins;
    pb_hist_init(h);
    if (get_u64(rd, obj, path, "count", &h->count) ||
        get_u64(rd, obj, path, "min_ns", &h->min_ns) ||
        get_u64(rd, obj, path, "max_ns", &h->max_ns) ||
        get_double(rd, obj, path, "mean_ns", &h->mean_ns) ||
        get_double(rd, obj, path, "stddev_ns", &stddev_ns) ||
        get_u64(rd, obj, path, "sum_ns", &h->sum_ns) || get_array(rd, obj, path, "bins", &bins))
        return PB_ERR;
    if (h->count == 0) {
        h->min_ns = UINT64_MAX;
        h->mean_ns = 0;
    }
    /* Welford's m2 from the sample standard deviation. */
    h->m2 = h->count > 1 && isfinite(stddev_ns) ? stddev_ns * stddev_ns * (double)(h->count - 1)
                                                : 0;
    uint64_t binned = 0;
    for (size_t i = 0; bins && i < json_array_size(bins); i++) {
        const json_t *bin = json_array_get(bins, i);
        uint64_t lo = 0, count = 0;
        index_path(at, path, "bins", i);
        if (!json_is_array(bin) || json_array_size(bin) != 3)
            return fail(rd, at, "", "expected [bucket_lo_ns, bucket_hi_ns, count]");
        if (get_u64_value(rd, json_array_get(bin, 0), at, "", &lo) ||
            get_u64_value(rd, json_array_get(bin, 2), at, "", &count))
            return PB_ERR;
        size_t bucket = pb_hist_bucket(lo);
        uint64_t bucket_lo, bucket_hi;
        pb_hist_bucket_range(bucket, &bucket_lo, &bucket_hi);
        if (bucket_lo != lo)
            return fail(rd, at, "", "%llu is not the low edge of a histogram bucket",
                        (unsigned long long)lo);
        h->bins[bucket] += count;
        binned += count;
    }
    if (binned != h->count)
        return fail(rd, path, "bins", "bin counts add up to %llu but count is %llu",
                    (unsigned long long)binned, (unsigned long long)h->count);
    return PB_OK;
}

static int read_stages(struct reader *rd, const json_t *obj, const char *path,
                       struct pb_stage_result **out, size_t *out_count)
{
    const json_t *arr;
    char at[PATH_TEXT_MAX], hist_at[PATH_TEXT_MAX];
    if (get_array(rd, obj, path, "stages", &arr))
        return PB_ERR;
    size_t count = arr ? json_array_size(arr) : 0;
    if (count == 0)
        return PB_OK;
    struct pb_stage_result *stages = calloc(count, sizeof(*stages));
    if (!stages)
        return fail(rd, path, "stages", "out of memory");
    *out = stages; /* owned by the result from here, freed with it */
    *out_count = count;
    for (size_t i = 0; i < count; i++) {
        const json_t *s = json_array_get(arr, i), *hist;
        index_path(at, path, "stages", i);
        pb_hist_init(&stages[i].hist);
        if (!json_is_object(s))
            return fail(rd, at, "", "expected an object");
        if (get_string(rd, s, at, "name", stages[i].name, sizeof(stages[i].name)) ||
            get_u64(rd, s, at, "cpu_ns", &stages[i].cpu_ns) ||
            get_double(rd, s, at, "share_pct", &stages[i].share_pct) ||
            get_object(rd, s, at, "histogram", &hist))
            return PB_ERR;
        if (hist && read_hist(rd, hist, child_path(hist_at, at, "histogram"), &stages[i].hist))
            return PB_ERR;
        const json_t *parent = json_object_get(s, "parent");
        if (parent && json_is_string(parent))
            snprintf(stages[i].parent, sizeof(stages[i].parent), "%s", json_string_value(parent));
        const json_t *device = json_object_get(s, "device");
        stages[i].gpu = json_is_string(device) && strcmp(json_string_value(device), "gpu") == 0;
        const json_t *counters = json_object_get(s, "counters");
        if (counters && json_is_object(counters)) {
            const char *key;
            const json_t *value;
            json_object_foreach((json_t *)counters, key, value)
            {
                if (stages[i].counter_count >= PB_STAGE_COUNTERS || !json_is_integer(value))
                    continue;
                int c = stages[i].counter_count++;
                snprintf(stages[i].counter_names[c], sizeof(stages[i].counter_names[c]), "%s", key);
                stages[i].counters[c] = (uint64_t)json_integer_value(value);
            }
        }
    }
    return PB_OK;
}

/* A group of parallel arrays: all present arrays must have the same
 * length, which is returned in *count. */
static int parallel_arrays(struct reader *rd, const json_t *obj, const char *path,
                           const char *const *keys, const json_t **arrays, size_t n,
                           size_t *count)
{
    *count = 0;
    bool first = true;
    for (size_t k = 0; k < n; k++) {
        if (get_array(rd, obj, path, keys[k], &arrays[k]))
            return PB_ERR;
        if (!arrays[k])
            continue;
        size_t len = json_array_size(arrays[k]);
        if (first)
            *count = len;
        else if (len != *count)
            return fail(rd, path, keys[k], "has %zu entries, %s has %zu", len, keys[0], *count);
        first = false;
    }
    return PB_OK;
}

static int elem_u64(struct reader *rd, const json_t *arr, const char *path, const char *key,
                    size_t i, uint64_t *out)
{
    char at[PATH_TEXT_MAX];
    const json_t *v = arr ? json_array_get(arr, i) : NULL;
    return v ? get_u64_value(rd, v, index_path(at, path, key, i), "", out) : PB_OK;
}

static int elem_double(struct reader *rd, const json_t *arr, const char *path, const char *key,
                       size_t i, double *out)
{
    char at[PATH_TEXT_MAX];
    const json_t *v = arr ? json_array_get(arr, i) : NULL;
    return v ? get_double_value(rd, v, index_path(at, path, key, i), "", out) : PB_OK;
}

static int read_batch_records(struct reader *rd, const json_t *obj, const char *path,
                              struct pb_repeat_result *r)
{
    static const char *const keys[] = {"assembly_ns", "wait_ns", "step_ns", "queue_depth",
                                       "samples"};
    const json_t *arrays[5];
    size_t count;
    if (parallel_arrays(rd, obj, path, keys, arrays, 5, &count))
        return PB_ERR;
    if (count == 0)
        return PB_OK;
    r->batch_records = calloc(count, sizeof(*r->batch_records));
    if (!r->batch_records)
        return fail(rd, path, "", "out of memory");
    r->batch_count = count;
    for (size_t i = 0; i < count; i++) {
        struct pb_batch_record *b = &r->batch_records[i];
        uint64_t depth = 0, samples = 0;
        if (elem_u64(rd, arrays[0], path, keys[0], i, &b->assembly_ns) ||
            elem_u64(rd, arrays[1], path, keys[1], i, &b->wait_ns) ||
            elem_u64(rd, arrays[2], path, keys[2], i, &b->step_ns) ||
            elem_u64(rd, arrays[3], path, keys[3], i, &depth) ||
            elem_u64(rd, arrays[4], path, keys[4], i, &samples))
            return PB_ERR;
        if (depth > UINT32_MAX || samples > UINT32_MAX) {
            char at[PATH_TEXT_MAX];
            return fail(rd, index_path(at, path, depth > UINT32_MAX ? keys[3] : keys[4], i), "",
                        "out of range");
        }
        b->queue_depth = (uint32_t)depth;
        b->samples = (uint32_t)samples;
    }
    return PB_OK;
}

static int read_rss(struct reader *rd, const json_t *obj, const char *path,
                    struct pb_repeat_result *r)
{
    static const char *const keys[] = {"t_s", "rss_bytes", "cpu_pct"};
    const json_t *arrays[3];
    size_t count;
    if (parallel_arrays(rd, obj, path, keys, arrays, 3, &count))
        return PB_ERR;
    if (count == 0)
        return PB_OK;
    r->rss = calloc(count, sizeof(*r->rss));
    if (!r->rss)
        return fail(rd, path, "", "out of memory");
    r->rss_count = count;
    for (size_t i = 0; i < count; i++)
        if (elem_double(rd, arrays[0], path, keys[0], i, &r->rss[i].t_s) ||
            elem_u64(rd, arrays[1], path, keys[1], i, &r->rss[i].rss_bytes) ||
            elem_double(rd, arrays[2], path, keys[2], i, &r->rss[i].cpu_pct))
            return PB_ERR;
    return PB_OK;
}

static int read_gpu_figures(struct reader *rd, const json_t *obj, const char *path,
                            struct pb_gpu_figures *g)
{
    const json_t *gpu = json_object_get(obj, "gpu");
    if (!gpu || json_is_null(gpu))
        return PB_OK;
    char at[PATH_TEXT_MAX];
    child_path(at, path, "gpu");
    if (!json_is_object(gpu))
        return fail(rd, at, "", "expected an object");
    g->used = true;
    for (size_t i = 0; i < PB_ARRAY_LEN(gpu_fields); i++) {
        char *field = (char *)g + gpu_fields[i].offset;
        int bad = gpu_fields[i].u64 ? get_u64(rd, gpu, at, gpu_fields[i].name, (uint64_t *)field)
                                    : get_double(rd, gpu, at, gpu_fields[i].name, (double *)field);
        if (bad)
            return PB_ERR;
    }
    return PB_OK;
}

static void read_gpu_device(const json_t *obj, struct pb_gpu_device *d)
{
    const json_t *dev = json_object_get(obj, "gpu_device");
    if (!json_is_object(dev))
        return;
    d->alloc_peak_bytes = (uint64_t)json_integer_value(json_object_get(dev, "alloc_peak_bytes"));
    d->used_before_bytes = (uint64_t)json_integer_value(json_object_get(dev, "used_before_bytes"));
    d->used_after_bytes = (uint64_t)json_integer_value(json_object_get(dev, "used_after_bytes"));
    d->sm_mhz_start = (unsigned)json_integer_value(json_object_get(dev, "sm_mhz_start"));
    d->sm_mhz_end = (unsigned)json_integer_value(json_object_get(dev, "sm_mhz_end"));
    d->sm_mhz_max = (unsigned)json_integer_value(json_object_get(dev, "sm_mhz_max"));
    const json_t *t = json_object_get(dev, "throttle");
    if (json_is_string(t))
        snprintf(d->throttle, sizeof(d->throttle), "%s", json_string_value(t));
}

static int read_repeat(struct reader *rd, const json_t *obj, const char *path,
                       struct pb_repeat_result *r)
{
    const json_t *batches, *rss;
    char at[PATH_TEXT_MAX];
    if (get_double(rd, obj, path, "wall_s", &r->wall_s) ||
        get_u64(rd, obj, path, "samples", &r->samples) ||
        get_u64(rd, obj, path, "batches", &r->batches) ||
        get_u64(rd, obj, path, "bytes_read", &r->bytes_read) ||
        get_u64(rd, obj, path, "errors", &r->errors) ||
        get_double(rd, obj, path, "samples_per_s", &r->samples_per_s) ||
        get_double(rd, obj, path, "batches_per_s", &r->batches_per_s) ||
        get_double(rd, obj, path, "mb_per_s", &r->mb_per_s) ||
        get_double(rd, obj, path, "stall_pct", &r->stall_pct) ||
        get_double(rd, obj, path, "accel_util_pct", &r->accel_util_pct) ||
        get_double(rd, obj, path, "cpu_util_pct", &r->cpu_util_pct) ||
        get_double(rd, obj, path, "worker_cpu_pct", &r->worker_cpu_pct) ||
        get_double(rd, obj, path, "window_noise", &r->window_noise) ||
        get_bool(rd, obj, path, "hit_time_cap", &r->hit_time_cap) ||
        get_bool(rd, obj, path, "noisy", &r->noisy) ||
        get_bool(rd, obj, path, "interrupted", &r->interrupted) ||
        get_u64(rd, obj, path, "rss_peak_bytes", &r->rss_peak_bytes) ||
        get_object(rd, obj, path, "batch_records", &batches) ||
        get_object(rd, obj, path, "rss", &rss))
        return PB_ERR;
    if (batches && read_batch_records(rd, batches, child_path(at, path, "batch_records"), r))
        return PB_ERR;
    if (rss && read_rss(rd, rss, child_path(at, path, "rss"), r))
        return PB_ERR;
    if (read_gpu_figures(rd, obj, path, &r->gpu))
        return PB_ERR;
    return read_stages(rd, obj, path, &r->stages, &r->stage_count);
}

static int read_point(struct reader *rd, const json_t *obj, const char *path,
                      struct pb_point_result *p)
{
    const json_t *axes, *assembly, *wait, *memory, *errors, *repeats;
    char at[PATH_TEXT_MAX], sub[PATH_TEXT_MAX];
    if (get_object(rd, obj, path, "axes", &axes) ||
        get_double(rd, obj, path, "samples_per_s", &p->samples_per_s) ||
        get_double(rd, obj, path, "samples_per_s_noise_pct", &p->samples_per_s_noise_pct) ||
        get_double(rd, obj, path, "batches_per_s", &p->batches_per_s) ||
        get_double(rd, obj, path, "mb_per_s", &p->mb_per_s) ||
        get_double(rd, obj, path, "stall_pct", &p->stall_pct) ||
        get_double(rd, obj, path, "accel_util_pct", &p->accel_util_pct) ||
        get_double(rd, obj, path, "cpu_util_pct", &p->cpu_util_pct) ||
        get_double(rd, obj, path, "worker_cpu_pct", &p->worker_cpu_pct) ||
        get_double(rd, obj, path, "queue_depth_mean", &p->queue_depth_mean) ||
        get_object(rd, obj, path, "batch_assembly", &assembly) ||
        get_object(rd, obj, path, "consumer_wait", &wait) ||
        get_object(rd, obj, path, "memory", &memory) ||
        get_u64(rd, obj, path, "samples", &p->samples) ||
        get_object(rd, obj, path, "errors", &errors) ||
        get_array(rd, obj, path, "repeats", &repeats) ||
        get_warnings(rd, obj, path, p->warnings, &p->warning_count))
        return PB_ERR;
    const json_t *error = json_object_get(obj, "error");
    if (error && json_is_string(error))
        snprintf(p->error, sizeof(p->error), "%s", json_string_value(error));
    p->axes = axes ? json_deep_copy(axes) : json_object();
    if (assembly) {
        child_path(at, path, "batch_assembly");
        if (get_u64(rd, assembly, at, "p50_ns", &p->assembly_p50_ns) ||
            get_u64(rd, assembly, at, "p99_ns", &p->assembly_p99_ns))
            return PB_ERR;
    }
    if (wait) {
        child_path(at, path, "consumer_wait");
        if (get_u64(rd, wait, at, "p50_ns", &p->wait_p50_ns) ||
            get_u64(rd, wait, at, "p99_ns", &p->wait_p99_ns))
            return PB_ERR;
    }
    if (memory) {
        child_path(at, path, "memory");
        if (get_u64(rd, memory, at, "rss_peak_bytes", &p->rss_peak_bytes) ||
            get_u64(rd, memory, at, "pinned_bytes", &p->pinned_bytes) ||
            get_u64(rd, memory, at, "batch_pool_bytes", &p->batch_pool_bytes) ||
            get_u64(rd, memory, at, "batch_bytes", &p->batch_bytes))
            return PB_ERR;
    }
    if (errors) {
        const json_t *files;
        child_path(at, path, "errors");
        if (get_u64(rd, errors, at, "count", &p->errors) ||
            get_array(rd, errors, at, "files", &files))
            return PB_ERR;
        for (size_t i = 0; files && i < json_array_size(files) && i < PB_MAX_ERROR_FILES; i++) {
            const json_t *v = json_array_get(files, i);
            if (!json_is_string(v))
                return fail(rd, index_path(sub, at, "files", i), "", "expected a string");
            snprintf(p->error_files[i], sizeof(p->error_files[i]), "%s", json_string_value(v));
            p->error_file_count = (int)i + 1;
        }
    }
    if (read_stages(rd, obj, path, &p->stages, &p->stage_count))
        return PB_ERR;
    if (read_gpu_figures(rd, obj, path, &p->gpu))
        return PB_ERR;
    read_gpu_device(obj, &p->gpu_device);
    size_t count = repeats ? json_array_size(repeats) : 0;
    if (count == 0)
        return PB_OK;
    p->repeats = calloc(count, sizeof(*p->repeats));
    if (!p->repeats)
        return fail(rd, path, "repeats", "out of memory");
    p->repeat_count = count;
    for (size_t i = 0; i < count; i++) {
        const json_t *r = json_array_get(repeats, i);
        index_path(at, path, "repeats", i);
        if (!json_is_object(r))
            return fail(rd, at, "", "expected an object");
        if (read_repeat(rd, r, at, &p->repeats[i]))
            return PB_ERR;
    }
    return PB_OK;
}

static int read_machine(struct reader *rd, const json_t *obj, const char *path,
                        struct pb_machine *m)
{
    const json_t *libs, *gpu;
    char at[PATH_TEXT_MAX];
    if (get_string(rd, obj, path, "hostname", m->hostname, sizeof(m->hostname)) ||
        get_string(rd, obj, path, "cpu_model", m->cpu_model, sizeof(m->cpu_model)) ||
        get_int(rd, obj, path, "packages", &m->packages) ||
        get_int(rd, obj, path, "cores", &m->cores) || get_int(rd, obj, path, "pus", &m->pus) ||
        get_int(rd, obj, path, "numa_nodes", &m->numa_nodes) ||
        get_u64(rd, obj, path, "l3_bytes", &m->l3_bytes) ||
        get_u64(rd, obj, path, "memory_bytes", &m->memory_bytes) ||
        get_string(rd, obj, path, "os", m->os, sizeof(m->os)) ||
        get_string(rd, obj, path, "kernel", m->kernel, sizeof(m->kernel)) ||
        get_string(rd, obj, path, "arch", m->arch, sizeof(m->arch)) ||
        get_string(rd, obj, path, "compiler", m->compiler, sizeof(m->compiler)) ||
        get_string(rd, obj, path, "build_type", m->build_type, sizeof(m->build_type)) ||
        get_string(rd, obj, path, "sanitize", m->sanitize, sizeof(m->sanitize)) ||
        get_array(rd, obj, path, "libraries", &libs) || get_object(rd, obj, path, "gpu", &gpu))
        return PB_ERR;
    m->library_count = 0;
    for (size_t i = 0; libs && i < json_array_size(libs) && i < PB_ARRAY_LEN(m->libraries); i++) {
        const json_t *lib = json_array_get(libs, i);
        index_path(at, path, "libraries", i);
        if (!json_is_object(lib))
            return fail(rd, at, "", "expected an object");
        if (get_string(rd, lib, at, "name", m->libraries[i][0], sizeof(m->libraries[i][0])) ||
            get_string(rd, lib, at, "version", m->libraries[i][1], sizeof(m->libraries[i][1])))
            return PB_ERR;
        m->library_count = (int)i + 1;
    }
    if (gpu) {
        child_path(at, path, "gpu");
        if (get_int(rd, gpu, at, "count", &m->gpu_count) ||
            get_string(rd, gpu, at, "name", m->gpu_name, sizeof(m->gpu_name)) ||
            get_string(rd, gpu, at, "status", m->gpu_status, sizeof(m->gpu_status)) ||
            get_int(rd, gpu, at, "cuda_runtime_version", &m->cuda_runtime_version) ||
            get_int(rd, gpu, at, "cuda_driver_version", &m->cuda_driver_version))
            return PB_ERR;
    }
    return PB_OK;
}

static int read_result(struct reader *rd, const json_t *root, struct pb_result *result)
{
    const json_t *machine, *overhead, *points, *version;
    if (!json_is_object(root))
        return fail(rd, "", "", "a result file must hold a JSON object");
    version = json_object_get(root, "schema_version");
    if (!version)
        return fail(rd, "schema_version", "", "missing; this is not a pbench result file");
    if (!json_is_integer(version))
        return fail(rd, "schema_version", "", "expected an integer");
    json_int_t schema = json_integer_value(version);
    if (schema > PB_SCHEMA_VERSION)
        return fail(rd, "schema_version", "",
                    "%lld is newer than this pbench reads (%d); use a newer pbench to read it",
                    (long long)schema, PB_SCHEMA_VERSION);
    if (schema < 1)
        return fail(rd, "schema_version", "", "%lld is not a valid schema version",
                    (long long)schema);
    result->schema_version = (int)schema;
    if (get_string(rd, root, "", "pbench_version", result->pbench_version,
                   sizeof(result->pbench_version)) ||
        get_string(rd, root, "", "created", result->created, sizeof(result->created)) ||
        get_string(rd, root, "", "name", result->name, sizeof(result->name)) ||
        get_object(rd, root, "", "machine", &machine) ||
        get_bool(rd, root, "", "interrupted", &result->interrupted) ||
        get_object(rd, root, "", "overhead", &overhead) ||
        get_array(rd, root, "", "points", &points) ||
        get_warnings(rd, root, "", result->warnings, &result->warning_count))
        return PB_ERR;
    const json_t *config = json_object_get(root, "config");
    if (config && !json_is_null(config)) {
        if (!json_is_object(config))
            return fail(rd, "", "config", "expected an object");
        result->config = json_deep_copy(config);
    }
    if (machine && read_machine(rd, machine, "machine", &result->machine))
        return PB_ERR;
    const json_t *cal = json_object_get(root, "calibration");
    if (cal && json_is_object(cal)) {
        result->calibration.measured = true;
        result->calibration.single_core_samples_per_s =
            json_number_value(json_object_get(cal, "single_core_samples_per_s"));
        result->calibration.memcpy_gb_per_s =
            json_number_value(json_object_get(cal, "memcpy_gb_per_s"));
        result->calibration.cores = (int)json_integer_value(json_object_get(cal, "cores"));
        result->calibration.decode_ns_per_frame =
            json_number_value(json_object_get(cal, "decode_ns_per_frame"));
        const json_t *h2d = json_object_get(cal, "h2d_bytes");
        result->calibration.h2d_bytes = json_is_integer(h2d) ? (uint64_t)json_integer_value(h2d) : 0;
        result->calibration.h2d_pinned_gb_s =
            json_number_value(json_object_get(cal, "h2d_pinned_gb_per_s"));
        result->calibration.h2d_pageable_gb_s =
            json_number_value(json_object_get(cal, "h2d_pageable_gb_per_s"));
    }
    const json_t *skipped = json_object_get(root, "gpu_skipped");
    if (json_is_string(skipped))
        snprintf(result->gpu_skipped, sizeof(result->gpu_skipped), "%s",
                 json_string_value(skipped));
    const json_t *profile = json_object_get(root, "gpu_profile");
    if (json_is_object(profile))
        result->gpu_profile = json_deep_copy(profile);
    const json_t *trace = json_object_get(root, "gpu_trace");
    if (json_is_string(trace))
        snprintf(result->gpu_trace_path, sizeof(result->gpu_trace_path), "%s",
                 json_string_value(trace));
    const json_t *analysis = json_object_get(root, "analysis");
    if (analysis && json_is_object(analysis))
        result->analysis = json_deep_copy(analysis);
    if (overhead && (get_bool(rd, overhead, "overhead", "measured", &result->overhead_measured) ||
                     get_double(rd, overhead, "overhead", "pct", &result->overhead_pct) ||
                     get_double(rd, overhead, "overhead", "noise_pct",
                                &result->overhead_noise_pct)))
        return PB_ERR;
    size_t count = points ? json_array_size(points) : 0;
    if (count == 0)
        return PB_OK;
    result->points = calloc(count, sizeof(*result->points));
    if (!result->points)
        return fail(rd, "", "points", "out of memory");
    result->point_count = count;
    for (size_t i = 0; i < count; i++) {
        char at[PATH_TEXT_MAX];
        const json_t *p = json_array_get(points, i);
        index_path(at, "", "points", i);
        if (!json_is_object(p))
            return fail(rd, at, "", "expected an object");
        if (read_point(rd, p, at, &result->points[i]))
            return PB_ERR;
    }
    return PB_OK;
}

int pb_result_from_json(const json_t *root, struct pb_result *result, char *msg, size_t msglen)
{
    struct reader rd = {msg, msglen};
    memset(result, 0, sizeof(*result));
    if (read_result(&rd, root, result) != PB_OK) {
        pb_result_free(result);
        return PB_ERR;
    }
    return PB_OK;
}

/* ----------------------------------------------------------------- files */

static int fill_json(FILE *f, void *root)
{
    int rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    if (rc == 0 && fputc('\n', f) == EOF)
        rc = -1;
    return rc;
}

int pb_result_write(const struct pb_result *result, const char *path, char *msg, size_t msglen)
{
    if (pb_make_parent_dirs(path, msg, msglen))
        return PB_ERR;
    json_t *root = pb_result_to_json(result);
    if (!root) {
        snprintf(msg, msglen, "cannot write %s: out of memory", path);
        return PB_ERR_NOMEM;
    }
    int rc = pb_write_atomic(path, fill_json, root, msg, msglen);
    json_decref(root);
    return rc;
}

int pb_result_read(const char *path, struct pb_result *result, char *msg, size_t msglen)
{
    json_error_t error;
    memset(result, 0, sizeof(*result));
    json_t *root = json_load_file(path, 0, &error);
    if (!root) {
        if (error.line > 0)
            snprintf(msg, msglen, "%s:%d:%d: %s", path, error.line, error.column, error.text);
        else
            snprintf(msg, msglen, "%s: %s", path, error.text);
        return PB_ERR;
    }
    char why[PB_MSG_MAX];
    int rc = pb_result_from_json(root, result, why, sizeof(why));
    json_decref(root);
    if (rc != PB_OK)
        snprintf(msg, msglen, "%s: %s", path, why);
    return rc;
}
