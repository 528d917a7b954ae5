/* A synthetic result for the tests of the result and its renderings
 * (test_result.c, test_result_json.c, test_report.c, test_report_csv.c):
 * make_result fills every field with seeded random values, and
 * assert_result_equal compares two results field by field. Header only:
 * every function is static inline, so a test uses what it needs. */
#ifndef PB_TESTS_RESULT_FIXTURE_H
#define PB_TESTS_RESULT_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/report/format.h"
#include "bench/result/result.h"

struct rng {
    uint64_t state;
};

static inline uint64_t rng_next(struct rng *r)
{
    r->state += 1;
    return pb_mix64(r->state);
}

static inline double rng_unit(struct rng *r)
{
    return (double)(rng_next(r) >> 11) / 9007199254740992.0;
}

/* Log-uniform nanoseconds between 1 and 2^34 (~17 s). */
static inline uint64_t rng_ns(struct rng *r)
{
    return (uint64_t)exp2(rng_unit(r) * 34.0);
}

static inline void assert_close(double a, double b)
{
    if (isnan(a) && isnan(b))
        return;
    double scale = fmax(fabs(a), fabs(b));
    if (fabs(a - b) > 1e-9 * scale) {
        fail_msg("%.17g != %.17g", a, b);
    }
}

static inline void fill_stage(struct rng *r, struct pb_stage_result *stage, const char *name)
{
    snprintf(stage->name, sizeof(stage->name), "%s", name);
    pb_hist_init(&stage->hist);
    size_t values = 1 + rng_next(r) % 500;
    for (size_t i = 0; i < values; i++)
        pb_hist_add(&stage->hist, rng_ns(r));
    stage->cpu_ns = rng_next(r) % 1000000000000ull;
    stage->share_pct = 100 * rng_unit(r);
}

static inline void fill_repeat(struct rng *r, struct pb_repeat_result *rep)
{
    static const char *const stage_names[] = {"read", "decode", "resize", "normalize"};
    rep->wall_s = 1 + 10 * rng_unit(r);
    rep->samples = rng_next(r) % 100000;
    rep->batches = rng_next(r) % 3000;
    rep->bytes_read = rng_next(r) % (1ull << 40);
    rep->errors = rng_next(r) % 5;
    rep->samples_per_s = 1000 * rng_unit(r) + 500;
    rep->batches_per_s = 30 * rng_unit(r);
    rep->mb_per_s = 400 * rng_unit(r);
    rep->stall_pct = 100 * rng_unit(r);
    rep->accel_util_pct = 100 * rng_unit(r);
    rep->cpu_util_pct = 800 * rng_unit(r);
    rep->worker_cpu_pct = 100 * rng_unit(r);
    rep->window_noise = 0.1 * rng_unit(r);
    rep->loop_step_pct = 30 * rng_unit(r);
    rep->loop_stages_pct = 10 * rng_unit(r);
    rep->loop_other_pct = 10 * rng_unit(r);
    rep->other_cpu_pct = 5 * rng_unit(r); /* under the warning's threshold */
    rep->steal_pct = 2 * rng_unit(r);
    rep->first_batch_s = rng_unit(r);
    rep->hit_time_cap = rng_next(r) % 2;
    rep->noisy = rng_next(r) % 2;
    rep->interrupted = rng_next(r) % 2;
    rep->rss_peak_bytes = rng_next(r) % (1ull << 36);
    rep->batch_count = 1 + rng_next(r) % 200;
    rep->batch_records = calloc(rep->batch_count, sizeof(*rep->batch_records));
    assert_non_null(rep->batch_records);
    for (size_t i = 0; i < rep->batch_count; i++) {
        struct pb_batch_record *b = &rep->batch_records[i];
        b->assembly_ns = rng_ns(r);
        b->wait_ns = rng_ns(r);
        b->step_ns = rng_ns(r);
        b->queue_depth = (uint32_t)(rng_next(r) % 17);
        b->samples = (uint32_t)(rng_next(r) % 257);
    }
    rep->rss_count = 1 + rng_next(r) % 50;
    rep->rss = calloc(rep->rss_count, sizeof(*rep->rss));
    assert_non_null(rep->rss);
    for (size_t i = 0; i < rep->rss_count; i++) {
        rep->rss[i].t_s = 0.1 * (double)i + rng_unit(r) * 1e-3;
        rep->rss[i].rss_bytes = rng_next(r) % (1ull << 36);
        rep->rss[i].own_bytes = rep->rss[i].rss_bytes / (1 + i % 8);
        rep->rss[i].cpu_pct = 800 * rng_unit(r);
    }
    rep->stage_count = PB_ARRAY_LEN(stage_names);
    rep->stages = calloc(rep->stage_count, sizeof(*rep->stages));
    assert_non_null(rep->stages);
    for (size_t i = 0; i < rep->stage_count; i++)
        fill_stage(r, &rep->stages[i], stage_names[i]);
}

/* A synthetic result: 2 points x 3 repeats, random histograms and batch
 * records, every field set to something other than zero. */
static inline void make_result(struct pb_result *result, uint64_t seed)
{
    struct rng r = {seed};
    memset(result, 0, sizeof(*result));
    result->schema_version = PB_SCHEMA_VERSION;
    snprintf(result->pbench_version, sizeof(result->pbench_version), "%s", PB_VERSION);
    snprintf(result->created, sizeof(result->created), "2025-01-02T03:04:05Z");
    snprintf(result->name, sizeof(result->name), "image-basic");
    snprintf(result->config_path, sizeof(result->config_path), "configs/image.yaml");

    struct pb_machine *m = &result->machine;
    snprintf(m->hostname, sizeof(m->hostname), "node-7");
    snprintf(m->cpu_model, sizeof(m->cpu_model), "Test CPU @ 3.0GHz");
    m->packages = 2;
    m->cores = 32;
    m->pus = 64;
    m->numa_nodes = 2;
    m->l3_bytes = 64ull << 20;
    m->memory_bytes = 256ull << 30;
    snprintf(m->os, sizeof(m->os), "Debian GNU/Linux 12 (bookworm)");
    snprintf(m->kernel, sizeof(m->kernel), "Linux 6.1.0");
    snprintf(m->arch, sizeof(m->arch), "x86_64");
    snprintf(m->compiler, sizeof(m->compiler), "GNU 12.2.0");
    snprintf(m->build_type, sizeof(m->build_type), "Release");
    snprintf(m->sanitize, sizeof(m->sanitize), "OFF");
    m->library_count = 3;
    snprintf(m->libraries[0][0], 48, "libyaml");
    snprintf(m->libraries[0][1], 48, "0.2.5");
    snprintf(m->libraries[1][0], 48, "hwloc");
    snprintf(m->libraries[1][1], 48, "2.9.0");
    snprintf(m->libraries[2][0], 48, "jansson");
    snprintf(m->libraries[2][1], 48, "2.14");
    m->gpu_count = 1;
    snprintf(m->gpu_name, sizeof(m->gpu_name), "NVIDIA H100");
    snprintf(m->gpu_status, sizeof(m->gpu_status), "ok");
    m->cuda_runtime_version = 13000;
    m->cuda_driver_version = 13010;

    result->config = json_pack("{s s s {s i s i s i s b} s {s f s i}}", "name", "image-basic",
                               "loader", "workers", 4, "batch_size", 32, "prefetch_factor", 2,
                               "pin_memory", 1, "run", "step_ms", 12.5, "repeats", 3);
    assert_non_null(result->config);
    result->interrupted = true;
    result->overhead_measured = true;
    result->overhead_pct = 1.25;
    result->overhead_noise_pct = 0.375;
    pb_result_warn(result, "dataset (%d MiB) fits in the page cache", 512);

    result->point_count = 2;
    result->points = calloc(result->point_count, sizeof(*result->points));
    assert_non_null(result->points);
    for (size_t i = 0; i < result->point_count; i++) {
        struct pb_point_result *p = &result->points[i];
        p->axes = json_pack("{s i s s}", "loader.workers", (int)(2 + 2 * i),
                            "pipeline.resize.size", "224,224");
        p->repeat_count = 3;
        p->repeats = calloc(p->repeat_count, sizeof(*p->repeats));
        assert_non_null(p->repeats);
        for (size_t k = 0; k < p->repeat_count; k++)
            fill_repeat(&r, &p->repeats[k]);
        pb_point_summarize(p);
        p->pinned_bytes = 64ull << 20;
        p->batch_pool_bytes = 96ull << 20;
        p->error_file_count = 2;
        snprintf(p->error_files[0], 256, "data/a.jpg: corrupt JPEG data");
        snprintf(p->error_files[1], 256, "data/b, \"quoted\".jpg: truncated");
        pb_point_warn(p, "custom warning %zu", i);
    }
}

/* Asserts that a->count equals b->count and that check passes on each pair
 * of a->items[i] and b->items[i], given by address. */
#define ASSERT_EACH_EQUAL(check, count, items)                                                     \
    do {                                                                                           \
        assert_int_equal(a->count, b->count);                                                      \
        for (size_t i_ = 0; i_ < (size_t)a->count; i_++)                                           \
            check(&a->items[i_], &b->items[i_]);                                                   \
    } while (0)

/* Compares the rates that a repeat and a point both carry. */
#define ASSERT_RATES_EQUAL()                                                                       \
    do {                                                                                           \
        assert_close(a->samples_per_s, b->samples_per_s);                                          \
        assert_close(a->batches_per_s, b->batches_per_s);                                          \
        assert_close(a->mb_per_s, b->mb_per_s);                                                    \
        assert_close(a->stall_pct, b->stall_pct);                                                  \
        assert_close(a->accel_util_pct, b->accel_util_pct);                                        \
        assert_close(a->cpu_util_pct, b->cpu_util_pct);                                            \
        assert_close(a->worker_cpu_pct, b->worker_cpu_pct);                                        \
        assert_close(a->loop_step_pct, b->loop_step_pct);                                          \
        assert_close(a->loop_stages_pct, b->loop_stages_pct);                                      \
        assert_close(a->loop_other_pct, b->loop_other_pct);                                        \
        assert_close(a->other_cpu_pct, b->other_cpu_pct);                                          \
        assert_close(a->steal_pct, b->steal_pct);                                                  \
        assert_close(a->first_batch_s, b->first_batch_s);                                          \
    } while (0)

/* One line of a warning or error-file list. */
static inline void assert_line_equal(const char (*a)[256], const char (*b)[256])
{
    assert_string_equal(*a, *b);
}

static inline void assert_stage_equal(const struct pb_stage_result *a, const struct pb_stage_result *b)
{
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->cpu_ns, b->cpu_ns);
    assert_close(a->share_pct, b->share_pct);
    assert_int_equal(a->hist.count, b->hist.count);
    assert_int_equal(a->hist.min_ns, b->hist.min_ns);
    assert_int_equal(a->hist.max_ns, b->hist.max_ns);
    assert_int_equal(a->hist.sum_ns, b->hist.sum_ns);
    assert_close(a->hist.mean_ns, b->hist.mean_ns);
    assert_close(a->hist.m2, b->hist.m2);
    assert_memory_equal(a->hist.bins, b->hist.bins, sizeof(a->hist.bins));
}

static inline void assert_repeat_equal(const struct pb_repeat_result *a, const struct pb_repeat_result *b)
{
    assert_close(a->wall_s, b->wall_s);
    assert_int_equal(a->samples, b->samples);
    assert_int_equal(a->batches, b->batches);
    assert_int_equal(a->bytes_read, b->bytes_read);
    assert_int_equal(a->errors, b->errors);
    ASSERT_RATES_EQUAL();
    assert_close(a->window_noise, b->window_noise);
    assert_int_equal(a->hit_time_cap, b->hit_time_cap);
    assert_int_equal(a->noisy, b->noisy);
    assert_int_equal(a->interrupted, b->interrupted);
    assert_int_equal(a->rss_peak_bytes, b->rss_peak_bytes);
    assert_int_equal(a->batch_count, b->batch_count);
    for (size_t i = 0; i < a->batch_count; i++) {
        assert_int_equal(a->batch_records[i].assembly_ns, b->batch_records[i].assembly_ns);
        assert_int_equal(a->batch_records[i].wait_ns, b->batch_records[i].wait_ns);
        assert_int_equal(a->batch_records[i].step_ns, b->batch_records[i].step_ns);
        assert_int_equal(a->batch_records[i].queue_depth, b->batch_records[i].queue_depth);
        assert_int_equal(a->batch_records[i].samples, b->batch_records[i].samples);
    }
    assert_int_equal(a->rss_count, b->rss_count);
    for (size_t i = 0; i < a->rss_count; i++) {
        assert_close(a->rss[i].t_s, b->rss[i].t_s);
        assert_int_equal(a->rss[i].rss_bytes, b->rss[i].rss_bytes);
        assert_int_equal(a->rss[i].own_bytes, b->rss[i].own_bytes);
        assert_close(a->rss[i].cpu_pct, b->rss[i].cpu_pct);
    }
    ASSERT_EACH_EQUAL(assert_stage_equal, stage_count, stages);
}

static inline void assert_point_equal(const struct pb_point_result *a, const struct pb_point_result *b)
{
    assert_true(json_equal(a->axes, b->axes));
    ASSERT_RATES_EQUAL();
    assert_close(a->samples_per_s_noise_pct, b->samples_per_s_noise_pct);
    assert_int_equal(a->assembly_p50_ns, b->assembly_p50_ns);
    assert_int_equal(a->assembly_p99_ns, b->assembly_p99_ns);
    assert_int_equal(a->wait_p50_ns, b->wait_p50_ns);
    assert_int_equal(a->wait_p99_ns, b->wait_p99_ns);
    assert_int_equal(a->rss_peak_bytes, b->rss_peak_bytes);
    assert_int_equal(a->pinned_bytes, b->pinned_bytes);
    assert_int_equal(a->batch_pool_bytes, b->batch_pool_bytes);
    assert_int_equal(a->samples, b->samples);
    assert_int_equal(a->errors, b->errors);
    ASSERT_EACH_EQUAL(assert_line_equal, error_file_count, error_files);
    ASSERT_EACH_EQUAL(assert_stage_equal, stage_count, stages);
    ASSERT_EACH_EQUAL(assert_line_equal, warning_count, warnings);
    ASSERT_EACH_EQUAL(assert_repeat_equal, repeat_count, repeats);
}

static inline void assert_result_equal(const struct pb_result *a, const struct pb_result *b)
{
    assert_int_equal(a->schema_version, b->schema_version);
    assert_string_equal(a->pbench_version, b->pbench_version);
    assert_string_equal(a->created, b->created);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->config_path, b->config_path);
    const struct pb_machine *ma = &a->machine, *mb = &b->machine;
    assert_string_equal(ma->hostname, mb->hostname);
    assert_string_equal(ma->cpu_model, mb->cpu_model);
    assert_int_equal(ma->packages, mb->packages);
    assert_int_equal(ma->cores, mb->cores);
    assert_int_equal(ma->pus, mb->pus);
    assert_int_equal(ma->numa_nodes, mb->numa_nodes);
    assert_int_equal(ma->l3_bytes, mb->l3_bytes);
    assert_int_equal(ma->memory_bytes, mb->memory_bytes);
    assert_string_equal(ma->os, mb->os);
    assert_string_equal(ma->kernel, mb->kernel);
    assert_string_equal(ma->arch, mb->arch);
    assert_string_equal(ma->compiler, mb->compiler);
    assert_string_equal(ma->build_type, mb->build_type);
    assert_string_equal(ma->sanitize, mb->sanitize);
    assert_int_equal(ma->library_count, mb->library_count);
    for (int i = 0; i < ma->library_count; i++) {
        assert_string_equal(ma->libraries[i][0], mb->libraries[i][0]);
        assert_string_equal(ma->libraries[i][1], mb->libraries[i][1]);
    }
    assert_int_equal(ma->gpu_count, mb->gpu_count);
    assert_string_equal(ma->gpu_name, mb->gpu_name);
    assert_string_equal(ma->gpu_status, mb->gpu_status);
    assert_int_equal(ma->cuda_runtime_version, mb->cuda_runtime_version);
    assert_int_equal(ma->cuda_driver_version, mb->cuda_driver_version);
    assert_true(json_equal(a->config, b->config));
    assert_int_equal(a->interrupted, b->interrupted);
    assert_int_equal(a->overhead_measured, b->overhead_measured);
    assert_close(a->overhead_pct, b->overhead_pct);
    assert_close(a->overhead_noise_pct, b->overhead_noise_pct);
    ASSERT_EACH_EQUAL(assert_line_equal, warning_count, warnings);
    ASSERT_EACH_EQUAL(assert_point_equal, point_count, points);
}

/* Renders into a string with open_memstream; the caller frees it. */
/* Not inlined: GCC would see the stream's pointer to text as dangling. */
static __attribute__((noinline, unused)) char *render(const struct pb_result *result,
                                              enum pb_format format)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    pb_report(out, result, format);
    fclose(out);
    return text;
}

static inline size_t count_lines(const char *text)
{
    size_t lines = 0;
    for (; *text; text++)
        lines += *text == '\n';
    return lines;
}

/* Gives result the device side of a GPU run: the calibrated copy peak, a
 * skip, each point's device figures and device info, and to_device and
 * step rows on the GPU. */
static inline void add_gpu_side(struct pb_result *result)
{
    result->calibration.measured = true;
    result->calibration.h2d_bytes = 38535168;
    result->calibration.h2d_pinned_gb_s = 24.5;
    result->calibration.h2d_pageable_gb_s = 9.5;
    snprintf(result->gpu_skipped, sizeof(result->gpu_skipped), "nothing skipped (test)");
    for (size_t i = 0; i < result->point_count; i++) {
        struct pb_point_result *p = &result->points[i];
        p->pinned_bytes = 1 << 20;
        p->gpu = (struct pb_gpu_figures){.used = true, .batches = 50,
                                         .copy_bytes = 50ull * 38535168, .copy_ns = 50 * 2e6,
                                         .stage_ns = 50 * 1e5, .step_ns = 50 * 2e7,
                                         .overlap_ns = 50 * 1.5e6, .wall_s = 1.1,
                                         .host_blocked_ns = 11000000, .copy_wait_ns = 22000000};
        pb_gpu_figures_ratios(&p->gpu);
        p->gpu_device = (struct pb_gpu_device){.alloc_peak_bytes = 3ull << 30,
                                               .used_before_bytes = 1ull << 29,
                                               .used_after_bytes = 4ull << 30,
                                               .sm_mhz_start = 1980, .sm_mhz_end = 1755,
                                               .sm_mhz_max = 1980};
        snprintf(p->gpu_device.throttle, sizeof(p->gpu_device.throttle), "power cap");
        p->stages = realloc(p->stages, (p->stage_count + 2) * sizeof(*p->stages));
        assert_non_null(p->stages);
        memset(&p->stages[p->stage_count], 0, 2 * sizeof(*p->stages));
        struct pb_stage_result *copy = &p->stages[p->stage_count], *step = copy + 1;
        snprintf(copy->name, sizeof(copy->name), "to_device");
        snprintf(step->name, sizeof(step->name), "step");
        pb_hist_init(&copy->hist);
        pb_hist_init(&step->hist);
        for (int b = 0; b < 50; b++) {
            pb_hist_add(&copy->hist, 2000000);
            pb_hist_add(&step->hist, 20000000);
        }
        copy->gpu = step->gpu = true;
        copy->counter_count = 1;
        snprintf(copy->counter_names[0], sizeof(copy->counter_names[0]), "bytes");
        copy->counters[0] = p->gpu.copy_bytes;
        p->stage_count += 2;
    }
}

#endif
