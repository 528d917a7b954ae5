/* The JSON form of a result, both directions, and its file. The format is
 * documented field by field in docs/results.md. The flat numeric fields of
 * a repeat, a point, the machine and the device figures are listed once,
 * in field tables that drive both the writer and the reader. */
#include "bench/result/result.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/base/fileio.h"
#include "bench/base/jsonfield.h"
#include "bench/base/pb.h"
#include "bench/result/figures.h"
#include "bench/result/memgrowth.h"

/* ------------------------------------------------------------ field tables */

#define R(member, kind) PB_FIELD(struct pb_repeat_result, #member, member, kind)
/* A repeat always measured for some time, so its rates are numbers. */
#define RATE(member) PB_FIELD_CHECKED(struct pb_repeat_result, #member, member, PB_FIELD_DOUBLE, \
                                      PB_FIELD_NONNEG | PB_FIELD_FINITE)
#define SHARE(member) PB_FIELD_CHECKED(struct pb_repeat_result, #member, member, PB_FIELD_DOUBLE, \
                                       PB_FIELD_NONNEG)
static const struct pb_field repeat_fields[] = {
    RATE(wall_s),                      R(start_unix_s, PB_FIELD_DOUBLE),
    R(samples, PB_FIELD_U64),
    R(batches, PB_FIELD_U64),          R(bytes_read, PB_FIELD_U64),
    R(errors, PB_FIELD_U64),           RATE(samples_per_s),
    RATE(batches_per_s),               RATE(mb_per_s),
    SHARE(stall_pct),                  SHARE(accel_util_pct),
    SHARE(cpu_util_pct),               SHARE(worker_cpu_pct),
    SHARE(loop_step_pct),              SHARE(loop_stages_pct),
    SHARE(loop_other_pct),             SHARE(other_cpu_pct),
    SHARE(steal_pct),                  SHARE(first_batch_s),
    R(window_noise, PB_FIELD_DOUBLE),  R(hit_time_cap, PB_FIELD_BOOL),
    R(noisy, PB_FIELD_BOOL),           R(interrupted, PB_FIELD_BOOL),
    R(rss_peak_bytes, PB_FIELD_U64),   R(page_cache_resident_pct, PB_FIELD_DOUBLE),
    R(page_cache_files_checked, PB_FIELD_U64), SHARE(ref_cpu_ns),
    SHARE(ref_mem_gb_s),               SHARE(throttled_pct),
    PB_FIELD_END,
};
#undef RATE
#undef SHARE
#undef R

#define P(key, member, kind) PB_FIELD(struct pb_point_result, key, member, kind)
static const struct pb_field point_assembly_fields[] = {
    P("p50_ns", assembly_p50_ns, PB_FIELD_U64),
    P("p99_ns", assembly_p99_ns, PB_FIELD_U64),
    PB_FIELD_END,
};
static const struct pb_field point_wait_fields[] = {
    P("p50_ns", wait_p50_ns, PB_FIELD_U64),
    P("p99_ns", wait_p99_ns, PB_FIELD_U64),
    PB_FIELD_END,
};
static const struct pb_field point_memory_fields[] = {
    P("rss_peak_bytes", rss_peak_bytes, PB_FIELD_U64),
    P("pinned_bytes", pinned_bytes, PB_FIELD_U64),
    P("batch_pool_bytes", batch_pool_bytes, PB_FIELD_U64),
    P("batch_bytes", batch_bytes, PB_FIELD_U64),
    PB_FIELD_END,
};
/* A point's figures are medians and shares of its repeats'. */
#define PN(key, member)                                                                          \
    PB_FIELD_CHECKED(struct pb_point_result, key, member, PB_FIELD_DOUBLE, PB_FIELD_NONNEG)
static const struct pb_field point_fields[] = {
    PN("samples_per_s", samples_per_s),
    PN("samples_per_s_noise_pct", samples_per_s_noise_pct),
    PN("batches_per_s", batches_per_s),
    PN("mb_per_s", mb_per_s),
    PN("stall_pct", stall_pct),
    PN("accel_util_pct", accel_util_pct),
    PN("cpu_util_pct", cpu_util_pct),
    PN("worker_cpu_pct", worker_cpu_pct),
    PN("queue_depth_mean", queue_depth_mean),
    PN("loop_step_pct", loop_step_pct),
    PN("loop_stages_pct", loop_stages_pct),
    PN("loop_other_pct", loop_other_pct),
    PN("other_cpu_pct", other_cpu_pct),
    PN("steal_pct", steal_pct),
    PN("first_batch_s", first_batch_s),
    PB_FIELD_GROUP("batch_assembly", point_assembly_fields),
    PB_FIELD_GROUP("consumer_wait", point_wait_fields),
    PB_FIELD_GROUP("memory", point_memory_fields),
    P("samples", samples, PB_FIELD_U64),
    PB_FIELD_END,
};
#undef PN
#undef P

#define M(key, member, kind) PB_FIELD(struct pb_machine, key, member, kind)
static const struct pb_field machine_fields[] = {
    M("hostname", hostname, PB_FIELD_TEXT),
    M("cpu_model", cpu_model, PB_FIELD_TEXT),
    M("packages", packages, PB_FIELD_INT),
    M("cores", cores, PB_FIELD_INT),
    M("pus", pus, PB_FIELD_INT),
    M("numa_nodes", numa_nodes, PB_FIELD_INT),
    M("l3_bytes", l3_bytes, PB_FIELD_U64),
    M("memory_bytes", memory_bytes, PB_FIELD_U64),
    M("os", os, PB_FIELD_TEXT),
    M("kernel", kernel, PB_FIELD_TEXT),
    M("arch", arch, PB_FIELD_TEXT),
    M("compiler", compiler, PB_FIELD_TEXT),
    M("build_type", build_type, PB_FIELD_TEXT),
    M("sanitize", sanitize, PB_FIELD_TEXT),
    PB_FIELD_END,
};
/* The machine's "gpu" object, written after its "libraries". */
static const struct pb_field machine_gpu_fields[] = {
    M("count", gpu_count, PB_FIELD_INT),
    M("name", gpu_name, PB_FIELD_TEXT),
    M("status", gpu_status, PB_FIELD_TEXT),
    M("cuda_runtime_version", cuda_runtime_version, PB_FIELD_INT),
    M("cuda_driver_version", cuda_driver_version, PB_FIELD_INT),
    PB_FIELD_END,
};
#undef M

#define G(member, kind) PB_FIELD(struct pb_gpu_figures, #member, member, kind)
static const struct pb_field gpu_figures_fields[] = {
    G(batches, PB_FIELD_U64),
    G(copy_bytes, PB_FIELD_U64),
    G(copy_ns, PB_FIELD_DOUBLE),
    G(stage_ns, PB_FIELD_DOUBLE),
    G(step_ns, PB_FIELD_DOUBLE),
    G(overlap_ns, PB_FIELD_DOUBLE),
    G(copy_gb_per_s, PB_FIELD_DOUBLE),
    G(overlap_pct, PB_FIELD_DOUBLE),
    G(busy_pct, PB_FIELD_DOUBLE),
    G(wall_s, PB_FIELD_DOUBLE),
    G(host_blocked_ns, PB_FIELD_U64),
    G(copy_wait_ns, PB_FIELD_U64),
    G(sm_mhz, PB_FIELD_UINT),
    G(slowed, PB_FIELD_BOOL),
    PB_FIELD_END,
};
#undef G

/* Read leniently (a value of another type reads as zero), as before. */
#define D(member, kind) PB_FIELD(struct pb_gpu_device, #member, member, kind)
static const struct pb_field gpu_device_fields[] = {
    D(alloc_peak_bytes, PB_FIELD_U64), D(used_before_bytes, PB_FIELD_U64),
    D(used_after_bytes, PB_FIELD_U64), D(sm_mhz_start, PB_FIELD_UINT),
    D(sm_mhz_end, PB_FIELD_UINT),      D(sm_mhz_max, PB_FIELD_UINT),
    D(throttle, PB_FIELD_TEXT),        PB_FIELD_END,
};
#undef D

/* Read leniently too. */
#define C(key, member, kind) PB_FIELD(struct pb_calibration, key, member, kind)
static const struct pb_field calibration_fields[] = {
    C("single_core_samples_per_s", single_core_samples_per_s, PB_FIELD_DOUBLE),
    C("other_cpu_pct", other_cpu_pct, PB_FIELD_DOUBLE),
    C("steal_pct", steal_pct, PB_FIELD_DOUBLE),
    C("busy", busy, PB_FIELD_BOOL),
    C("memcpy_gb_per_s", memcpy_gb_per_s, PB_FIELD_DOUBLE),
    C("cores", cores, PB_FIELD_INT),
    C("decode_ns_per_frame", decode_ns_per_frame, PB_FIELD_DOUBLE),
    C("h2d_bytes", h2d_bytes, PB_FIELD_U64),
    C("h2d_pinned_gb_per_s", h2d_pinned_gb_s, PB_FIELD_DOUBLE),
    C("h2d_pageable_gb_per_s", h2d_pageable_gb_s, PB_FIELD_DOUBLE),
    C("h2d_large_bytes", h2d_large_bytes, PB_FIELD_U64),
    C("h2d_large_pinned_gb_per_s", h2d_large_pinned_gb_s, PB_FIELD_DOUBLE),
    C("h2d_large_pageable_gb_per_s", h2d_large_pageable_gb_s, PB_FIELD_DOUBLE),
    C("storage_cold_mb_per_s", storage_cold_mb_per_s, PB_FIELD_DOUBLE),
    C("remote_one_mb_per_s", remote_one_mb_per_s, PB_FIELD_DOUBLE),
    C("remote_one_objects_per_s", remote_one_objects_per_s, PB_FIELD_DOUBLE),
    C("remote_many_mb_per_s", remote_many_mb_per_s, PB_FIELD_DOUBLE),
    C("remote_many_objects_per_s", remote_many_objects_per_s, PB_FIELD_DOUBLE),
    C("remote_streams", remote_streams, PB_FIELD_INT),
    PB_FIELD_END,
};
#undef C

/* The result's "dataset", read leniently too. */
#define DI(member, kind) PB_FIELD(struct pb_dataset_info, #member, member, kind)
static const struct pb_field dataset_info_fields[] = {
    DI(format, PB_FIELD_TEXT),     DI(path, PB_FIELD_TEXT),        DI(cache, PB_FIELD_TEXT),
    DI(filesystem, PB_FIELD_TEXT), DI(samples, PB_FIELD_U64),      DI(bytes, PB_FIELD_U64),
    DI(files, PB_FIELD_U64),       DI(shards, PB_FIELD_U64),       DI(bad_samples, PB_FIELD_U64),
    DI(cache_note, PB_FIELD_TEXT), DI(cold_read_mb_per_s, PB_FIELD_DOUBLE),
    DI(source_width, PB_FIELD_U64), DI(source_height, PB_FIELD_U64),
    DI(endpoint, PB_FIELD_TEXT),   DI(credentials, PB_FIELD_TEXT), DI(list_requests, PB_FIELD_U64),
    DI(list_s, PB_FIELD_DOUBLE),   DI(requests_in_flight, PB_FIELD_U64), PB_FIELD_END,
};
#undef DI

static const struct pb_field overhead_fields[] = {
    PB_FIELD(struct pb_result, "measured", overhead_measured, PB_FIELD_BOOL),
    PB_FIELD(struct pb_result, "pct", overhead_pct, PB_FIELD_DOUBLE),
    PB_FIELD(struct pb_result, "noise_pct", overhead_noise_pct, PB_FIELD_DOUBLE),
    PB_FIELD_END,
};

/* ------------------------------------------------------------ JSON write */

static json_t *hist_to_json(const struct pb_hist *h)
{
    json_t *obj = json_object();
    json_t *bins = json_array();
    json_object_set_new(obj, "count", pb_json_u64(h->count));
    json_object_set_new(obj, "min_ns", pb_json_u64(h->count ? h->min_ns : 0));
    json_object_set_new(obj, "max_ns", pb_json_u64(h->max_ns));
    json_object_set_new(obj, "mean_ns", pb_json_number(h->mean_ns));
    json_object_set_new(obj, "stddev_ns", pb_json_number(pb_hist_stddev(h)));
    json_object_set_new(obj, "sum_ns", pb_json_u64(h->sum_ns));
    for (size_t i = 0; i < PB_HIST_BUCKETS; i++) {
        if (!h->bins[i])
            continue;
        uint64_t lo, hi;
        pb_hist_bucket_range(i, &lo, &hi);
        json_array_append_new(
            bins, json_pack("[o o o]", pb_json_u64(lo), pb_json_u64(hi), pb_json_u64(h->bins[i])));
    }
    json_object_set_new(obj, "bins", bins);
    return obj;
}

/* A stage row's counters as {"page_faults": n, ...} (those in its mask),
 * or NULL when it has none; and back. */
static json_t *perf_to_json(const struct pb_stage_result *stage)
{
    if (!stage->perf_mask)
        return NULL;
    json_t *obj = json_object();
    for (int c = 0; c < PB_PERF_COUNTERS; c++)
        if (stage->perf_mask & (1u << c))
            json_object_set_new(obj, pb_perf_names[c], json_integer((json_int_t)stage->perf[c]));
    return obj;
}

static void perf_from_json(const json_t *obj, struct pb_stage_result *stage)
{
    for (int c = 0; c < PB_PERF_COUNTERS && json_is_object(obj); c++) {
        const json_t *v = json_object_get(obj, pb_perf_names[c]);
        if (json_is_integer(v) && json_integer_value(v) >= 0) {
            stage->perf_mask |= 1u << c;
            stage->perf[c] = (uint64_t)json_integer_value(v);
        }
    }
}

/* The stage rows of a repeat, or of point (its merged rows, whose CPU per
 * sample is the point's: pb_point_stage_cpu_ns_per_sample) where not NULL. */
static json_t *stages_to_json(const struct pb_stage_result *stages, size_t count,
                              const struct pb_point_result *point)
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
                json_object_set_new(counters, s->counter_names[c], pb_json_u64(s->counters[c]));
            json_object_set_new(obj, "counters", counters);
        }
        json_t *perf = perf_to_json(s);
        if (perf)
            json_object_set_new(obj, "perf", perf);
        json_t *slowest = pb_slowest_to_json(s);
        if (slowest)
            json_object_set_new(obj, "slowest", slowest);
        /* Derived from the histogram, for readers that do not recompute. */
        json_object_set_new(obj, "count", pb_json_u64(s->hist.count));
        json_object_set_new(obj, "mean_ns", pb_json_number(s->hist.mean_ns));
        json_object_set_new(obj, "p50_ns", pb_json_u64(pb_hist_quantile(&s->hist, 0.50)));
        json_object_set_new(obj, "p90_ns", pb_json_u64(pb_hist_quantile(&s->hist, 0.90)));
        json_object_set_new(obj, "p99_ns", pb_json_u64(pb_hist_quantile(&s->hist, 0.99)));
        json_object_set_new(obj, "max_ns", pb_json_u64(s->hist.max_ns));
        json_object_set_new(obj, "cpu_ns", pb_json_u64(s->cpu_ns));
        json_object_set_new(obj, "share_pct", pb_json_number(s->share_pct));
        double cpu = point ? pb_point_stage_cpu_ns_per_sample(point, s)
                           : pb_stage_cpu_ns_per_sample(stages, count, s);
        if (pb_stage_is_cpu(s) || s->parent[0])
            json_object_set_new(obj, "cpu_ns_per_sample", pb_json_number(cpu));
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

static json_t *repeat_to_json(const struct pb_repeat_result *r)
{
    json_t *obj = pb_fields_to_json(r, repeat_fields);
    /* Derived (bench/result/figures.h), for readers that do not recompute. */
    json_object_set_new(obj, "cpu_ns_per_sample", pb_json_number(pb_repeat_cpu_ns_per_sample(r)));

    json_t *assembly = json_array(), *wait = json_array(), *step = json_array();
    json_t *depth = json_array(), *samples = json_array();
    for (size_t i = 0; i < r->batch_count; i++) {
        const struct pb_batch_record *b = &r->batch_records[i];
        json_array_append_new(assembly, pb_json_u64(b->assembly_ns));
        json_array_append_new(wait, pb_json_u64(b->wait_ns));
        json_array_append_new(step, pb_json_u64(b->step_ns));
        json_array_append_new(depth, pb_json_u64(b->queue_depth));
        json_array_append_new(samples, pb_json_u64(b->samples));
    }
    json_object_set_new(obj, "batch_records",
                        json_pack("{s o s o s o s o s o}", "assembly_ns", assembly, "wait_ns", wait,
                                  "step_ns", step, "queue_depth", depth, "samples", samples));

    json_t *t = json_array(), *rss = json_array(), *own = json_array(), *cpu = json_array();
    for (size_t i = 0; i < r->rss_count; i++) {
        json_array_append_new(t, pb_json_number(r->rss[i].t_s));
        json_array_append_new(rss, pb_json_u64(r->rss[i].rss_bytes));
        json_array_append_new(own, pb_json_u64(r->rss[i].own_bytes));
        json_array_append_new(cpu, pb_json_number(r->rss[i].cpu_pct));
    }
    json_object_set_new(obj, "rss",
                        json_pack("{s o s o s o s o}", "t_s", t, "rss_bytes", rss, "own_bytes", own,
                                  "cpu_pct", cpu));
    json_object_set_new(obj, "stages", stages_to_json(r->stages, r->stage_count, NULL));
    if (r->gpu.used)
        json_object_set_new(obj, "gpu", pb_fields_to_json(&r->gpu, gpu_figures_fields));
    return obj;
}

/* errors.files_bytes: beside each error file whose name is not UTF-8, the
 * entry's exact bytes (pb_json_bytes; null for the others), or NULL when
 * every name is UTF-8. */
static json_t *files_bytes(const struct pb_point_result *p)
{
    json_t *arr = NULL;
    for (int i = 0; i < p->error_file_count && i < PB_MAX_ERROR_FILES; i++) {
        json_t *bytes = pb_json_bytes(p->error_files[i]);
        if (!bytes && !arr)
            continue;
        if (!arr) {
            arr = json_array();
            for (int k = 0; k < i; k++)
                json_array_append_new(arr, json_null());
        }
        json_array_append_new(arr, bytes ? bytes : json_null());
    }
    return arr;
}

static json_t *point_to_json(const struct pb_point_result *p)
{
    json_t *obj = json_object();
    json_object_set_new(obj, "axes", p->axes ? json_deep_copy(p->axes) : json_object());
    pb_fields_put(obj, p, point_fields);
    json_t *files = json_array();
    for (int i = 0; i < p->error_file_count && i < PB_MAX_ERROR_FILES; i++)
        json_array_append_new(files, pb_json_text(p->error_files[i]));
    json_t *errors = json_pack("{s o s o}", "count", pb_json_u64(p->errors), "files", files);
    json_t *exact = files_bytes(p); /* names not in UTF-8, as their bytes */
    if (exact)
        json_object_set_new(errors, "files_bytes", exact);
    if (p->error_files_unlisted)
        json_object_set_new(errors, "unlisted", pb_json_u64(p->error_files_unlisted));
    json_object_set_new(obj, "errors", errors);
    /* Derived (bench/result/figures.h), for readers that do not recompute. */
    json_object_set_new(obj, "cpu_ns_per_sample", pb_json_number(pb_point_cpu_ns_per_sample(p)));
    json_object_set_new(obj, "stages", stages_to_json(p->stages, p->stage_count, p));
    json_t *repeats = json_array();
    for (size_t i = 0; i < p->repeat_count; i++)
        json_array_append_new(repeats, repeat_to_json(&p->repeats[i]));
    json_object_set_new(obj, "repeats", repeats);
    json_object_set_new(obj, "warnings", warnings_to_json(p->warnings, p->warning_count));
    if (p->error[0])
        json_object_set_new(obj, "error", json_string(p->error));
    if (p->ranks)
        json_object_set_new(obj, "ranks", json_deep_copy(p->ranks));
    if (p->multi_rank)
        json_object_set_new(obj, "multi_rank", json_deep_copy(p->multi_rank));
    if (p->affinity)
        json_object_set_new(obj, "affinity", json_deep_copy(p->affinity));
    if (p->engine)
        json_object_set_new(obj, "engine", json_deep_copy(p->engine));
    json_t *growth = pb_memory_growth_to_json(&p->memory_growth);
    if (growth)
        json_object_set_new(obj, "memory_growth", growth);
    if (p->gpu.used) {
        json_object_set_new(obj, "gpu", pb_fields_to_json(&p->gpu, gpu_figures_fields));
        json_object_set_new(obj, "gpu_device",
                            pb_fields_to_json(&p->gpu_device, gpu_device_fields));
    }
    return obj;
}

static json_t *machine_to_json(const struct pb_machine *m)
{
    json_t *obj = pb_fields_to_json(m, machine_fields);
    json_t *libs = json_array();
    for (int i = 0; i < m->library_count && i < (int)PB_ARRAY_LEN(m->libraries); i++)
        json_array_append_new(libs, json_pack("{s s s s}", "name", m->libraries[i][0], "version",
                                              m->libraries[i][1]));
    json_object_set_new(obj, "libraries", libs);
    json_object_set_new(obj, "gpu", pb_fields_to_json(m, machine_gpu_fields));
    return obj;
}

/* The result's engine: the config's loader.engine with that engine's
 * versions (pbench's own version, or what the engine reported in its
 * first point). Derived when written, never read back. */
static json_t *engine_to_json(const struct pb_result *result)
{
    const json_t *loader = result->config ? json_object_get(result->config, "loader") : NULL;
    const char *name = json_string_value(json_object_get(loader, "engine"));
    name = name ? name : "pbench";
    for (size_t i = 0; i < result->point_count; i++) {
        const json_t *e = result->points[i].engine;
        const char *ran = json_string_value(json_object_get(e, "name"));
        if (ran && strcmp(ran, name) == 0)
            return json_deep_copy(e);
    }
    if (strcmp(name, "pbench") != 0) /* no point ran on it: no versions known */
        return json_pack("{s:s}", "name", name);
    return json_pack("{s:s,s:{s:s}}", "name", name, "versions", "pbench",
                     result->pbench_version);
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
    if (result->config_path[0])
        json_object_set_new(root, "config_path", json_string(result->config_path));
    json_object_set_new(root, "machine", machine_to_json(&result->machine));
    json_object_set_new(root, "engine", engine_to_json(result));
    json_object_set_new(root, "config",
                        result->config ? json_deep_copy(result->config) : json_null());
    if (result->dataset.format[0])
        json_object_set_new(root, "dataset",
                            pb_fields_to_json(&result->dataset, dataset_info_fields));
    json_object_set_new(root, "interrupted", json_boolean(result->interrupted));
    json_object_set_new(root, "overhead", pb_fields_to_json(result, overhead_fields));
    if (result->calibration.measured)
        json_object_set_new(root, "calibration",
                            pb_fields_to_json(&result->calibration, calibration_fields));
    if (result->gpu_skipped[0])
        json_object_set_new(root, "gpu_skipped", json_string(result->gpu_skipped));
    if (result->gpu_profile)
        json_object_set_new(root, "gpu_profile", json_deep_copy(result->gpu_profile));
    if (result->gpu_trace_path[0])
        json_object_set_new(root, "gpu_trace", json_string(result->gpu_trace_path));
    if (result->trace_path[0])
        json_object_set_new(root, "trace", json_string(result->trace_path));
    json_t *points = json_array();
    for (size_t i = 0; i < result->point_count; i++)
        json_array_append_new(points, point_to_json(&result->points[i]));
    json_object_set_new(root, "points", points);
    if (result->analysis)
        json_object_set_new(root, "analysis", json_deep_copy(result->analysis));
    if (result->interleaved)
        json_object_set_new(root, "interleaved", json_deep_copy(result->interleaved));
    json_object_set_new(root, "warnings",
                        warnings_to_json(result->warnings, result->warning_count));
    return root;
}

/* ------------------------------------------------------------- JSON read */

static int get_warnings(struct pb_json_reader *rd, const json_t *obj, const char *path,
                        char (*list)[256], int *count)
{
    const json_t *arr;
    char at[PB_JSON_PATH_MAX];
    if (pb_json_get_array(rd, obj, path, "warnings", &arr))
        return PB_ERR;
    *count = 0;
    for (size_t i = 0; arr && i < json_array_size(arr) && *count < PB_MAX_WARNINGS; i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_string(v))
            return pb_json_fail(rd, pb_json_index_path(at, path, "warnings", i), "",
                                "expected a string");
        snprintf(list[*count], 256, "%s", json_string_value(v));
        (*count)++;
    }
    return PB_OK;
}

static int read_hist(struct pb_json_reader *rd, const json_t *obj, const char *path,
                     struct pb_hist *h)
{
    char at[PB_JSON_PATH_MAX];
    double stddev_ns = 0;
    const json_t *bins;
    pb_hist_init(h);
    if (pb_json_get_u64(rd, obj, path, "count", &h->count) ||
        pb_json_get_u64(rd, obj, path, "min_ns", &h->min_ns) ||
        pb_json_get_u64(rd, obj, path, "max_ns", &h->max_ns) ||
        pb_json_get_double(rd, obj, path, "mean_ns", &h->mean_ns) ||
        pb_json_get_double(rd, obj, path, "stddev_ns", &stddev_ns) ||
        pb_json_get_u64(rd, obj, path, "sum_ns", &h->sum_ns) ||
        pb_json_get_array(rd, obj, path, "bins", &bins))
        return PB_ERR;
    if (h->count == 0) {
        h->min_ns = UINT64_MAX;
        h->mean_ns = 0;
    }
    /* Welford's m2 from the sample standard deviation. */
    h->m2 =
        h->count > 1 && isfinite(stddev_ns) ? stddev_ns * stddev_ns * (double)(h->count - 1) : 0;
    uint64_t binned = 0;
    for (size_t i = 0; bins && i < json_array_size(bins); i++) {
        const json_t *bin = json_array_get(bins, i);
        uint64_t lo = 0, count = 0;
        pb_json_index_path(at, path, "bins", i);
        if (!json_is_array(bin) || json_array_size(bin) != 3)
            return pb_json_fail(rd, at, "", "expected [bucket_lo_ns, bucket_hi_ns, count]");
        if (pb_json_get_u64_value(rd, json_array_get(bin, 0), at, "", &lo) ||
            pb_json_get_u64_value(rd, json_array_get(bin, 2), at, "", &count))
            return PB_ERR;
        size_t bucket = pb_hist_bucket(lo);
        uint64_t bucket_lo, bucket_hi;
        pb_hist_bucket_range(bucket, &bucket_lo, &bucket_hi);
        if (bucket_lo != lo)
            return pb_json_fail(rd, at, "", "%llu is not the low edge of a histogram bucket",
                                (unsigned long long)lo);
        h->bins[bucket] += count;
        binned += count;
    }
    if (binned != h->count)
        return pb_json_fail(rd, path, "bins", "bin counts add up to %llu but count is %llu",
                            (unsigned long long)binned, (unsigned long long)h->count);
    return PB_OK;
}

static int read_stages(struct pb_json_reader *rd, const json_t *obj, const char *path,
                       struct pb_stage_result **out, size_t *out_count)
{
    const json_t *arr;
    char at[PB_JSON_PATH_MAX], hist_at[PB_JSON_PATH_MAX];
    if (pb_json_get_array(rd, obj, path, "stages", &arr))
        return PB_ERR;
    size_t count = arr ? json_array_size(arr) : 0;
    if (count == 0)
        return PB_OK;
    struct pb_stage_result *stages = calloc(count, sizeof(*stages));
    if (!stages)
        return pb_json_fail(rd, path, "stages", "out of memory");
    *out = stages; /* owned by the result from here, freed with it */
    *out_count = count;
    for (size_t i = 0; i < count; i++) {
        const json_t *s = json_array_get(arr, i), *hist;
        pb_json_index_path(at, path, "stages", i);
        pb_hist_init(&stages[i].hist);
        if (!json_is_object(s))
            return pb_json_fail(rd, at, "", "expected an object");
        if (pb_json_get_string(rd, s, at, "name", stages[i].name, sizeof(stages[i].name)) ||
            pb_json_get_u64(rd, s, at, "cpu_ns", &stages[i].cpu_ns) ||
            pb_json_get_double(rd, s, at, "share_pct", &stages[i].share_pct) ||
            pb_json_get_object(rd, s, at, "histogram", &hist))
            return PB_ERR;
        if (hist &&
            read_hist(rd, hist, pb_json_child_path(hist_at, at, "histogram"), &stages[i].hist))
            return PB_ERR;
        const json_t *parent = json_object_get(s, "parent");
        if (parent && json_is_string(parent))
            snprintf(stages[i].parent, sizeof(stages[i].parent), "%s", json_string_value(parent));
        const json_t *device = json_object_get(s, "device");
        stages[i].gpu = json_is_string(device) && strcmp(json_string_value(device), "gpu") == 0;
        perf_from_json(json_object_get(s, "perf"), &stages[i]);
        pb_slowest_from_json(json_object_get(s, "slowest"), &stages[i]);
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

static int read_batch_records(struct pb_json_reader *rd, const json_t *obj, const char *path,
                              struct pb_repeat_result *r)
{
    static const char *const keys[] = {"assembly_ns", "wait_ns", "step_ns", "queue_depth",
                                       "samples"};
    const json_t *arrays[5];
    size_t count;
    if (pb_json_parallel_arrays(rd, obj, path, keys, arrays, 5, &count))
        return PB_ERR;
    if (count == 0)
        return PB_OK;
    r->batch_records = calloc(count, sizeof(*r->batch_records));
    if (!r->batch_records)
        return pb_json_fail(rd, path, "", "out of memory");
    r->batch_count = count;
    for (size_t i = 0; i < count; i++) {
        struct pb_batch_record *b = &r->batch_records[i];
        uint64_t depth = 0, samples = 0;
        if (pb_json_elem_u64(rd, arrays[0], path, keys[0], i, &b->assembly_ns) ||
            pb_json_elem_u64(rd, arrays[1], path, keys[1], i, &b->wait_ns) ||
            pb_json_elem_u64(rd, arrays[2], path, keys[2], i, &b->step_ns) ||
            pb_json_elem_u64(rd, arrays[3], path, keys[3], i, &depth) ||
            pb_json_elem_u64(rd, arrays[4], path, keys[4], i, &samples))
            return PB_ERR;
        if (depth > UINT32_MAX || samples > UINT32_MAX) {
            char at[PB_JSON_PATH_MAX];
            return pb_json_fail(
                rd, pb_json_index_path(at, path, depth > UINT32_MAX ? keys[3] : keys[4], i), "",
                "out of range");
        }
        b->queue_depth = (uint32_t)depth;
        b->samples = (uint32_t)samples;
    }
    return PB_OK;
}

static int read_rss(struct pb_json_reader *rd, const json_t *obj, const char *path,
                    struct pb_repeat_result *r)
{
    /* own_bytes is missing from an older pbench's results: 0. */
    static const char *const keys[] = {"t_s", "rss_bytes", "cpu_pct", "own_bytes"};
    const json_t *arrays[4];
    size_t count;
    if (pb_json_parallel_arrays(rd, obj, path, keys, arrays, 4, &count))
        return PB_ERR;
    if (count == 0)
        return PB_OK;
    r->rss = calloc(count, sizeof(*r->rss));
    if (!r->rss)
        return pb_json_fail(rd, path, "", "out of memory");
    r->rss_count = count;
    for (size_t i = 0; i < count; i++)
        if (pb_json_elem_double(rd, arrays[0], path, keys[0], i, &r->rss[i].t_s) ||
            pb_json_elem_u64(rd, arrays[1], path, keys[1], i, &r->rss[i].rss_bytes) ||
            pb_json_elem_double(rd, arrays[2], path, keys[2], i, &r->rss[i].cpu_pct) ||
            pb_json_elem_u64(rd, arrays[3], path, keys[3], i, &r->rss[i].own_bytes))
            return PB_ERR;
    return PB_OK;
}

static int read_gpu_figures(struct pb_json_reader *rd, const json_t *obj, const char *path,
                            struct pb_gpu_figures *g)
{
    const json_t *gpu = json_object_get(obj, "gpu");
    if (!gpu || json_is_null(gpu))
        return PB_OK;
    char at[PB_JSON_PATH_MAX];
    pb_json_child_path(at, path, "gpu");
    if (!json_is_object(gpu))
        return pb_json_fail(rd, at, "", "expected an object");
    g->used = true;
    return pb_fields_read(rd, gpu, at, g, gpu_figures_fields);
}

static void read_gpu_device(const json_t *obj, struct pb_gpu_device *d)
{
    const json_t *dev = json_object_get(obj, "gpu_device");
    if (!json_is_object(dev))
        return;
    pb_fields_read_leniently(dev, d, gpu_device_fields);
}

static int read_repeat(struct pb_json_reader *rd, const json_t *obj, const char *path,
                       struct pb_repeat_result *r)
{
    const json_t *batches, *rss;
    char at[PB_JSON_PATH_MAX];
    if (pb_fields_read(rd, obj, path, r, repeat_fields) ||
        pb_json_get_object(rd, obj, path, "batch_records", &batches) ||
        pb_json_get_object(rd, obj, path, "rss", &rss))
        return PB_ERR;
    if (batches &&
        read_batch_records(rd, batches, pb_json_child_path(at, path, "batch_records"), r))
        return PB_ERR;
    if (rss && read_rss(rd, rss, pb_json_child_path(at, path, "rss"), r))
        return PB_ERR;
    if (read_gpu_figures(rd, obj, path, &r->gpu))
        return PB_ERR;
    return read_stages(rd, obj, path, &r->stages, &r->stage_count);
}

static int read_point(struct pb_json_reader *rd, const json_t *obj, const char *path,
                      struct pb_point_result *p)
{
    const json_t *axes, *errors, *repeats;
    char at[PB_JSON_PATH_MAX], sub[PB_JSON_PATH_MAX];
    if (pb_json_get_object(rd, obj, path, "axes", &axes) ||
        pb_fields_read(rd, obj, path, p, point_fields) ||
        pb_json_get_object(rd, obj, path, "errors", &errors) ||
        pb_json_get_array(rd, obj, path, "repeats", &repeats) ||
        get_warnings(rd, obj, path, p->warnings, &p->warning_count))
        return PB_ERR;
    const json_t *error = json_object_get(obj, "error");
    if (error && json_is_string(error))
        snprintf(p->error, sizeof(p->error), "%s", json_string_value(error));
    p->axes = axes ? json_deep_copy(axes) : json_object();
    const json_t *ranks = json_object_get(obj, "ranks");
    const json_t *multi_rank = json_object_get(obj, "multi_rank");
    const json_t *affinity = json_object_get(obj, "affinity");
    p->ranks = json_is_array(ranks) ? json_deep_copy(ranks) : NULL;
    p->multi_rank = json_is_object(multi_rank) ? json_deep_copy(multi_rank) : NULL;
    p->affinity = json_is_object(affinity) ? json_deep_copy(affinity) : NULL;
    const json_t *engine = json_object_get(obj, "engine");
    p->engine = json_is_object(engine) ? json_deep_copy(engine) : NULL;
    if (errors) {
        const json_t *files;
        pb_json_child_path(at, path, "errors");
        if (pb_json_get_u64(rd, errors, at, "count", &p->errors) ||
            pb_json_get_array(rd, errors, at, "files", &files))
            return PB_ERR;
        if (json_object_get(errors, "unlisted") &&
            pb_json_get_u64(rd, errors, at, "unlisted", &p->error_files_unlisted))
            return PB_ERR;
        for (size_t i = 0; files && i < json_array_size(files) && i < PB_MAX_ERROR_FILES; i++) {
            const json_t *v = json_array_get(files, i);
            if (!json_is_string(v))
                return pb_json_fail(rd, pb_json_index_path(sub, at, "files", i), "",
                                    "expected a string");
            const json_t *exact = json_array_get(json_object_get(errors, "files_bytes"), i);
            if (!pb_json_bytes_read(exact, p->error_files[i], sizeof(p->error_files[i])))
                snprintf(p->error_files[i], sizeof(p->error_files[i]), "%s",
                         json_string_value(v));
            p->error_file_count = (int)i + 1;
        }
    }
    if (read_stages(rd, obj, path, &p->stages, &p->stage_count))
        return PB_ERR;
    if (read_gpu_figures(rd, obj, path, &p->gpu))
        return PB_ERR;
    read_gpu_device(obj, &p->gpu_device);
    pb_memory_growth_from_json(json_object_get(obj, "memory_growth"), &p->memory_growth);
    size_t count = repeats ? json_array_size(repeats) : 0;
    if (count == 0)
        return PB_OK;
    p->repeats = calloc(count, sizeof(*p->repeats));
    if (!p->repeats)
        return pb_json_fail(rd, path, "repeats", "out of memory");
    p->repeat_count = count;
    for (size_t i = 0; i < count; i++) {
        const json_t *r = json_array_get(repeats, i);
        pb_json_index_path(at, path, "repeats", i);
        if (!json_is_object(r))
            return pb_json_fail(rd, at, "", "expected an object");
        if (read_repeat(rd, r, at, &p->repeats[i]))
            return PB_ERR;
    }
    return PB_OK;
}

static int read_machine(struct pb_json_reader *rd, const json_t *obj, const char *path,
                        struct pb_machine *m)
{
    const json_t *libs, *gpu;
    char at[PB_JSON_PATH_MAX];
    if (pb_fields_read(rd, obj, path, m, machine_fields) ||
        pb_json_get_array(rd, obj, path, "libraries", &libs) ||
        pb_json_get_object(rd, obj, path, "gpu", &gpu))
        return PB_ERR;
    m->library_count = 0;
    for (size_t i = 0; libs && i < json_array_size(libs) && i < PB_ARRAY_LEN(m->libraries); i++) {
        const json_t *lib = json_array_get(libs, i);
        pb_json_index_path(at, path, "libraries", i);
        if (!json_is_object(lib))
            return pb_json_fail(rd, at, "", "expected an object");
        if (pb_json_get_string(rd, lib, at, "name", m->libraries[i][0],
                               sizeof(m->libraries[i][0])) ||
            pb_json_get_string(rd, lib, at, "version", m->libraries[i][1],
                               sizeof(m->libraries[i][1])))
            return PB_ERR;
        m->library_count = (int)i + 1;
    }
    if (gpu) {
        pb_json_child_path(at, path, "gpu");
        if (pb_fields_read(rd, gpu, at, m, machine_gpu_fields))
            return PB_ERR;
    }
    return PB_OK;
}

static int read_result(struct pb_json_reader *rd, const json_t *root, struct pb_result *result)
{
    const json_t *machine, *overhead, *points, *version;
    if (!json_is_object(root))
        return pb_json_fail(rd, "", "", "a result file must hold a JSON object");
    version = json_object_get(root, "schema_version");
    if (!version)
        return pb_json_fail(rd, "schema_version", "", "missing; this is not a pbench result file");
    if (!json_is_integer(version))
        return pb_json_fail(rd, "schema_version", "", "expected an integer");
    json_int_t schema = json_integer_value(version);
    if (schema > PB_SCHEMA_VERSION)
        return pb_json_fail(
            rd, "schema_version", "",
            "%lld is newer than this pbench reads (%d); use a newer pbench to read it",
            (long long)schema, PB_SCHEMA_VERSION);
    if (schema < 1)
        return pb_json_fail(rd, "schema_version", "", "%lld is not a valid schema version",
                            (long long)schema);
    result->schema_version = (int)schema;
    if (pb_json_get_string(rd, root, "", "pbench_version", result->pbench_version,
                           sizeof(result->pbench_version)) ||
        pb_json_get_string(rd, root, "", "created", result->created, sizeof(result->created)) ||
        pb_json_get_string(rd, root, "", "name", result->name, sizeof(result->name)) ||
        pb_json_get_object(rd, root, "", "machine", &machine) ||
        pb_json_get_bool(rd, root, "", "interrupted", &result->interrupted) ||
        pb_json_get_object(rd, root, "", "overhead", &overhead) ||
        pb_json_get_array(rd, root, "", "points", &points) ||
        get_warnings(rd, root, "", result->warnings, &result->warning_count))
        return PB_ERR;
    const json_t *config = json_object_get(root, "config");
    if (config && !json_is_null(config)) {
        if (!json_is_object(config))
            return pb_json_fail(rd, "", "config", "expected an object");
        result->config = json_deep_copy(config);
    }
    if (machine && read_machine(rd, machine, "machine", &result->machine))
        return PB_ERR;
    const json_t *dataset = json_object_get(root, "dataset");
    if (json_is_object(dataset))
        pb_fields_read_leniently(dataset, &result->dataset, dataset_info_fields);
    const json_t *cal = json_object_get(root, "calibration");
    if (cal && json_is_object(cal)) {
        result->calibration.measured = true;
        pb_fields_read_leniently(cal, &result->calibration, calibration_fields);
    }
    const json_t *config_path = json_object_get(root, "config_path");
    if (json_is_string(config_path))
        snprintf(result->config_path, sizeof(result->config_path), "%s",
                 json_string_value(config_path));
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
    const json_t *cpu_trace = json_object_get(root, "trace");
    if (json_is_string(cpu_trace))
        snprintf(result->trace_path, sizeof(result->trace_path), "%s",
                 json_string_value(cpu_trace));
    const json_t *analysis = json_object_get(root, "analysis");
    if (analysis && json_is_object(analysis))
        result->analysis = json_deep_copy(analysis);
    const json_t *interleaved = json_object_get(root, "interleaved");
    if (interleaved && json_is_object(interleaved))
        result->interleaved = json_deep_copy(interleaved);
    if (overhead && pb_fields_read(rd, overhead, "overhead", result, overhead_fields))
        return PB_ERR;
    size_t count = points ? json_array_size(points) : 0;
    if (count == 0)
        return PB_OK;
    result->points = calloc(count, sizeof(*result->points));
    if (!result->points)
        return pb_json_fail(rd, "", "points", "out of memory");
    result->point_count = count;
    for (size_t i = 0; i < count; i++) {
        char at[PB_JSON_PATH_MAX];
        const json_t *p = json_array_get(points, i);
        pb_json_index_path(at, "", "points", i);
        if (!json_is_object(p))
            return pb_json_fail(rd, at, "", "expected an object");
        if (read_point(rd, p, at, &result->points[i]))
            return PB_ERR;
    }
    return PB_OK;
}

int pb_result_from_json(const json_t *root, struct pb_result *result, char *msg, size_t msglen)
{
    struct pb_json_reader rd = {msg, msglen};
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

/* Why the file at path gave no JSON: a folder, an empty file, a file that
 * is not JSON at all (a YAML config), or the parser's message at its line
 * and column. */
static void unreadable(const char *path, const json_error_t *error, char *msg, size_t msglen)
{
    struct stat st;
    FILE *f = NULL;
    int first = EOF;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(msg, msglen, "%s is a directory, not a result file", path);
        return;
    }
    if ((f = fopen(path, "rb"))) {
        while ((first = getc(f)) == ' ' || first == '\t' || first == '\n' || first == '\r')
            ;
        bool failed = ferror(f);
        fclose(f);
        if (first == EOF && !failed) {
            snprintf(msg, msglen, "%s is empty, not a pbench result (JSON expected)", path);
            return;
        }
        if (first != EOF && first != '{' && first != '[') {
            snprintf(msg, msglen,
                     "%s is not a pbench result (JSON expected; for a config use pbench run)",
                     path);
            return;
        }
    }
    if (error->line > 0)
        snprintf(msg, msglen, "%s:%d:%d: %s", path, error->line, error->column, error->text);
    else
        snprintf(msg, msglen, "%s: %s", path, error->text);
}

int pb_result_read(const char *path, struct pb_result *result, char *msg, size_t msglen)
{
    json_error_t error;
    memset(result, 0, sizeof(*result));
    json_t *root = json_load_file(path, 0, &error);
    if (!root) {
        unreadable(path, &error, msg, msglen);
        return PB_ERR;
    }
    char why[PB_MSG_MAX];
    int rc = pb_result_from_json(root, result, why, sizeof(why));
    json_decref(root);
    if (rc != PB_OK)
        snprintf(msg, msglen, "%s: %s", path, why);
    return rc;
}
