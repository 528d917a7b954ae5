/* Tests for bench/result/result.c, bench/report/report.c and bench/sys/machine.c: the point
 * summary, the JSON round trip of every field, atomic writes, reader
 * messages, the renderings and the machine probe. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/report/format.h"
#include "bench/report/report.h"
#include "bench/result/result.h"
#include "bench/sys/machine.h"
#include "kernels/gpu_rt.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------- helpers */

struct rng {
    uint64_t state;
};

static uint64_t rng_next(struct rng *r)
{
    r->state += 1;
    return pb_mix64(r->state);
}

static double rng_unit(struct rng *r)
{
    return (double)(rng_next(r) >> 11) / 9007199254740992.0;
}

/* Log-uniform nanoseconds between 1 and 2^34 (~17 s). */
static uint64_t rng_ns(struct rng *r)
{
    return (uint64_t)exp2(rng_unit(r) * 34.0);
}

static void assert_close(double a, double b)
{
    if (isnan(a) && isnan(b))
        return;
    double scale = fmax(fabs(a), fabs(b));
    if (fabs(a - b) > 1e-9 * scale) {
        fail_msg("%.17g != %.17g", a, b);
    }
}

static void fill_stage(struct rng *r, struct pb_stage_result *stage, const char *name)
{
    snprintf(stage->name, sizeof(stage->name), "%s", name);
    pb_hist_init(&stage->hist);
    size_t values = 1 + rng_next(r) % 500;
    for (size_t i = 0; i < values; i++)
        pb_hist_add(&stage->hist, rng_ns(r));
    stage->cpu_ns = rng_next(r) % 1000000000000ull;
    stage->share_pct = 100 * rng_unit(r);
}

static void fill_repeat(struct rng *r, struct pb_repeat_result *rep)
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
static void make_result(struct pb_result *result, uint64_t seed)
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
static void assert_line_equal(const char (*a)[256], const char (*b)[256])
{
    assert_string_equal(*a, *b);
}

static void assert_stage_equal(const struct pb_stage_result *a, const struct pb_stage_result *b)
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

static void assert_repeat_equal(const struct pb_repeat_result *a, const struct pb_repeat_result *b)
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

static void assert_point_equal(const struct pb_point_result *a, const struct pb_point_result *b)
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

static void assert_result_equal(const struct pb_result *a, const struct pb_result *b)
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
static __attribute__((noinline)) char *render(const struct pb_result *result,
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

static size_t count_lines(const char *text)
{
    size_t lines = 0;
    for (; *text; text++)
        lines += *text == '\n';
    return lines;
}

/* ----------------------------------------------------------------- tests */

static void test_warnings_dedupe_and_cap(void **state)
{
    (void)state;
    struct pb_point_result point = {0};
    pb_point_warn(&point, "noisy %d", 1);
    pb_point_warn(&point, "noisy %d", 1);
    assert_int_equal(point.warning_count, 1);
    assert_string_equal(point.warnings[0], "noisy 1");
    for (int i = 0; i < 2 * PB_MAX_WARNINGS; i++)
        pb_point_warn(&point, "warning %d", i);
    assert_int_equal(point.warning_count, PB_MAX_WARNINGS);

    struct pb_result result = {0};
    pb_result_warn(&result, "cache %s", "warm");
    pb_result_warn(&result, "cache %s", "warm");
    pb_result_warn(&result, "cache %s", "cold");
    assert_int_equal(result.warning_count, 2);
    assert_string_equal(result.warnings[1], "cache cold");
}

static void add_stage_values(struct pb_repeat_result *rep, const char *name, uint64_t cpu_ns,
                             const uint64_t *values, size_t n)
{
    struct pb_stage_result *st = &rep->stages[rep->stage_count++];
    snprintf(st->name, sizeof(st->name), "%s", name);
    st->cpu_ns = cpu_ns;
    pb_hist_init(&st->hist);
    for (size_t i = 0; i < n; i++)
        pb_hist_add(&st->hist, values[i]);
}

static void test_summarize_fixed_inputs(void **state)
{
    (void)state;
    struct pb_repeat_result reps[3] = {0};
    const double samples_per_s[3] = {100, 120, 110};
    const double batches_per_s[3] = {3, 1, 2};
    const double mb_per_s[3] = {5, 7, 6};
    const double wall_s[3] = {1, 2, 1};
    const double stall_pct[3] = {10, 20, 40};
    const double accel_pct[3] = {90, 80, 60};
    const double cpu_pct[3] = {100, 200, 300};
    const double worker_pct[3] = {50, 50, 90};
    const uint64_t rss_peak[3] = {100, 300, 200};
    /* 100 batch records over the repeats (40, 30, 30): assembly 1..100 and
     * wait 2..200 in a shuffled order, so p50/p99 are 50/99 and 100/198. */
    const size_t batch_counts[3] = {40, 30, 30};
    uint64_t k = 0;
    for (int i = 0; i < 3; i++) {
        reps[i].samples_per_s = samples_per_s[i];
        reps[i].batches_per_s = batches_per_s[i];
        reps[i].mb_per_s = mb_per_s[i];
        reps[i].wall_s = wall_s[i];
        reps[i].stall_pct = stall_pct[i];
        reps[i].accel_util_pct = accel_pct[i];
        reps[i].cpu_util_pct = cpu_pct[i];
        reps[i].worker_cpu_pct = worker_pct[i];
        reps[i].rss_peak_bytes = rss_peak[i];
        reps[i].samples = 1000 * (uint64_t)(i + 1);
        reps[i].errors = (uint64_t)i;
        reps[i].window_noise = 0.5;
        reps[i].batch_count = batch_counts[i];
        reps[i].batch_records = calloc(batch_counts[i], sizeof(struct pb_batch_record));
        assert_non_null(reps[i].batch_records);
        for (size_t b = 0; b < batch_counts[i]; b++, k++) {
            uint64_t v = (k * 37) % 100 + 1; /* a permutation of 1..100 */
            reps[i].batch_records[b].assembly_ns = v;
            reps[i].batch_records[b].wait_ns = 2 * v;
        }
        reps[i].stages = calloc(2, sizeof(struct pb_stage_result));
        assert_non_null(reps[i].stages);
    }
    reps[1].hit_time_cap = true;
    const uint64_t read_values[] = {100, 300};
    const uint64_t decode_values[] = {1000};
    const uint64_t augment_values[] = {500, 500, 600};
    add_stage_values(&reps[0], "read", 10, read_values, 2);
    add_stage_values(&reps[0], "decode", 20, decode_values, 1);
    add_stage_values(&reps[1], "decode", 30, decode_values, 1);
    add_stage_values(&reps[1], "read", 40, read_values, 2);
    add_stage_values(&reps[2], "read", 50, read_values, 2);
    add_stage_values(&reps[2], "augment", 60, augment_values, 3);

    struct pb_point_result point = {0};
    point.repeats = reps;
    point.repeat_count = 3;
    pb_point_summarize(&point);

    assert_close(point.samples_per_s, 110);
    /* mean 110, sample stddev sqrt((100 + 100 + 0) / 2) = 10. */
    assert_close(point.samples_per_s_noise_pct, 100.0 * 10 / 110);
    assert_close(point.batches_per_s, 2);
    assert_close(point.mb_per_s, 6);
    assert_close(point.stall_pct, (10 * 1 + 20 * 2 + 40 * 1) / 4.0);
    assert_close(point.accel_util_pct, (90 * 1 + 80 * 2 + 60 * 1) / 4.0);
    assert_close(point.cpu_util_pct, (100 * 1 + 200 * 2 + 300 * 1) / 4.0);
    assert_close(point.worker_cpu_pct, (50 * 1 + 50 * 2 + 90 * 1) / 4.0);
    assert_int_equal(point.assembly_p50_ns, 50);
    assert_int_equal(point.assembly_p99_ns, 99);
    assert_int_equal(point.wait_p50_ns, 100);
    assert_int_equal(point.wait_p99_ns, 198);
    assert_int_equal(point.rss_peak_bytes, 300);
    assert_int_equal(point.samples, 6000);
    assert_int_equal(point.errors, 3);

    /* Stages merged by name in order of first appearance. */
    assert_int_equal(point.stage_count, 3);
    assert_string_equal(point.stages[0].name, "read");
    assert_string_equal(point.stages[1].name, "decode");
    assert_string_equal(point.stages[2].name, "augment");
    assert_int_equal(point.stages[0].hist.count, 6);
    assert_int_equal(point.stages[0].hist.sum_ns, 1200);
    assert_int_equal(point.stages[0].cpu_ns, 100);
    assert_int_equal(point.stages[1].hist.count, 2);
    assert_int_equal(point.stages[1].cpu_ns, 50);
    assert_int_equal(point.stages[2].hist.sum_ns, 1600);
    double total_ns = 1200 + 2000 + 1600;
    assert_close(point.stages[0].share_pct, 100 * 1200 / total_ns);
    assert_close(point.stages[1].share_pct, 100 * 2000 / total_ns);
    assert_close(point.stages[2].share_pct, 100 * 1600 / total_ns);

    assert_int_equal(point.warning_count, 1);
    assert_string_equal(point.warnings[0],
                        "1 of 3 repeats hit run.max_time_s before the noise target was met");

    /* Summarizing again replaces the summary; the warning stays once and
     * warnings added by others are kept. */
    pb_point_warn(&point, "CPU frequency changed during the run");
    pb_point_summarize(&point);
    assert_int_equal(point.stage_count, 3);
    assert_int_equal(point.warning_count, 2);
    assert_string_equal(point.warnings[0], "CPU frequency changed during the run");

    /* Two repeats: the median is the mean of the middle pair. */
    point.repeat_count = 2;
    pb_point_summarize(&point);
    assert_close(point.samples_per_s, 110);
    assert_close(point.batches_per_s, 2);

    /* One repeat: noise is that repeat's windowed-throughput noise. */
    point.repeat_count = 1;
    reps[0].noisy = true;
    pb_point_summarize(&point);
    assert_close(point.samples_per_s, 100);
    assert_close(point.samples_per_s_noise_pct, 50);
    assert_close(point.stall_pct, 10);
    assert_int_equal(point.stage_count, 2);
    assert_int_equal(point.warning_count, 2);
    assert_string_equal(point.warnings[0], "CPU frequency changed during the run");
    assert_string_equal(point.warnings[1], "1 of 1 repeats were noisy: windowed throughput "
                                           "varied by up to 50.0%, above run.target_noise");

    for (int i = 0; i < 3; i++) {
        free(reps[i].batch_records);
        free(reps[i].stages);
    }
    free(point.stages);
}

/* Interference: medians over the repeats; a warning with the figure when
 * others took 10% of the machine or more, or steal 5%, replaced (not
 * stacked) when summarized again, none on a quiet machine. The loop's
 * shares are wall-weighted. */
static void test_summarize_interference(void **state)
{
    (void)state;
    struct pb_repeat_result reps[3] = {0};
    const double other_pct[3] = {48, 2, 50};
    for (int i = 0; i < 3; i++) {
        reps[i].wall_s = i + 1;
        reps[i].samples_per_s = 100;
        reps[i].other_cpu_pct = other_pct[i];
        reps[i].first_batch_s = 0.1 * (i + 1);
        reps[i].stall_pct = 10 * (i + 1);
        pb_repeat_loop_shares(&reps[i], (uint64_t)(0.5e9 * (i + 1)), 0);
    }
    assert_close(reps[0].loop_step_pct, 50);
    assert_close(reps[0].loop_other_pct, 40);
    reps[2].stall_pct = 60;
    pb_repeat_loop_shares(&reps[2], (uint64_t)1.5e9, (uint64_t)0.3e9);
    assert_close(reps[2].loop_stages_pct, 10);
    assert_close(reps[2].loop_other_pct, 0); /* 60 + 50 + 10: the rest clamps at 0 */
    struct pb_point_result point = {0};
    point.repeats = reps;
    point.repeat_count = 3;
    pb_point_summarize(&point);
    assert_close(point.other_cpu_pct, 48);
    assert_close(point.first_batch_s, 0.2);
    assert_close(point.loop_step_pct, 50);
    assert_close(point.stall_pct + point.loop_step_pct + point.loop_stages_pct +
                     point.loop_other_pct,
                 (100.0 * 1 + 100 * 2 + 120 * 3) / 6);
    assert_int_equal(point.warning_count, 1);
    assert_string_equal(point.warnings[0],
                        "other processes used 48% of the machine's CPU while this point was "
                        "measured (steal 0%): the figures are lower than this machine can do "
                        "alone; rerun on a quiet machine");
    pb_point_summarize(&point);
    assert_int_equal(point.warning_count, 1);
    /* Steal alone warns too. */
    for (int i = 0; i < 3; i++) {
        reps[i].other_cpu_pct = 1;
        reps[i].steal_pct = 6;
    }
    pb_point_summarize(&point);
    assert_int_equal(point.warning_count, 1);
    assert_non_null(strstr(point.warnings[0], "used 1% of the machine's CPU while this point was "
                                              "measured (steal 6%)"));
    reps[0].steal_pct = reps[1].steal_pct = 0;
    pb_point_summarize(&point);
    assert_int_equal(point.warning_count, 0);
    free(point.stages);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        struct pb_result result, back;
        char msg[PB_MSG_MAX] = "";
        make_result(&result, seed);

        json_t *root = pb_result_to_json(&result);
        assert_non_null(root);
        char *text = json_dumps(root, JSON_INDENT(2));
        assert_non_null(text);
        json_decref(root);
        json_error_t error;
        json_t *loaded = json_loads(text, 0, &error);
        assert_non_null(loaded);
        free(text);

        int rc = pb_result_from_json(loaded, &back, msg, sizeof(msg));
        if (rc != PB_OK)
            fail_msg("from_json: %s", msg);
        json_decref(loaded);
        assert_result_equal(&result, &back);
        assert_true(back.points[0].repeats[0].rss[0].own_bytes > 0);

        /* Derived stage fields are written for readers that don't recompute. */
        json_t *again = pb_result_to_json(&back);
        json_t *stage = json_array_get(
            json_object_get(json_array_get(json_object_get(again, "points"), 0), "stages"), 0);
        assert_int_equal(json_integer_value(json_object_get(stage, "count")),
                         result.points[0].stages[0].hist.count);
        assert_int_equal(json_integer_value(json_object_get(stage, "p99_ns")),
                         pb_hist_quantile(&result.points[0].stages[0].hist, 0.99));
        json_t *bins = json_object_get(json_object_get(stage, "histogram"), "bins");
        assert_true(json_array_size(bins) > 0);
        assert_int_equal(json_array_size(json_array_get(bins, 0)), 3);
        json_decref(again);

        /* A result from a pbench before own_bytes: its samples read as
         * none of pbench's own. */
        root = pb_result_to_json(&result);
        json_t *rss = json_object_get(
            json_array_get(json_object_get(json_array_get(json_object_get(root, "points"), 0),
                                           "repeats"),
                           0),
            "rss");
        assert_int_equal(json_object_del(rss, "own_bytes"), 0);
        struct pb_result old;
        assert_int_equal(pb_result_from_json(root, &old, msg, sizeof(msg)), PB_OK);
        json_decref(root);
        assert_int_equal(old.points[0].repeats[0].rss_count, result.points[0].repeats[0].rss_count);
        for (size_t i = 0; i < old.points[0].repeats[0].rss_count; i++) {
            assert_int_equal(old.points[0].repeats[0].rss[i].own_bytes, 0);
            assert_int_equal(old.points[0].repeats[0].rss[i].rss_bytes,
                             result.points[0].repeats[0].rss[i].rss_bytes);
        }
        pb_result_free(&old);

        pb_result_free(&result);
        pb_result_free(&back);
    }
    /* free is safe on a zeroed (and an already freed) struct. */
    struct pb_result empty = {0};
    pb_result_free(&empty);
    pb_result_free(&empty);
}

static void test_empty_result_round_trip(void **state)
{
    (void)state;
    struct pb_result result = {0}, back;
    char msg[PB_MSG_MAX];
    result.schema_version = PB_SCHEMA_VERSION;
    result.point_count = 1;
    result.points = calloc(1, sizeof(*result.points));
    assert_non_null(result.points);
    result.points[0].stage_count = 1;
    result.points[0].stages = calloc(1, sizeof(struct pb_stage_result));
    assert_non_null(result.points[0].stages);
    snprintf(result.points[0].stages[0].name, 64, "idle");
    pb_hist_init(&result.points[0].stages[0].hist);
    json_t *root = pb_result_to_json(&result);
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_OK);
    json_decref(root);
    assert_null(back.config);
    assert_int_equal(back.points[0].stages[0].hist.count, 0);
    assert_int_equal(back.points[0].stages[0].hist.min_ns, UINT64_MAX);
    assert_int_equal(back.points[0].repeat_count, 0);
    pb_result_free(&result);
    pb_result_free(&back);
}

static char *make_temp_dir(void)
{
    char *dir = strdup("/tmp/pbench-test-result-XXXXXX");
    assert_non_null(dir);
    assert_int_equal(pb_test_tmpdir_make(dir), 0);
    return dir;
}

static size_t count_entries(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

static char *slurp(const char *path)
{
    return pb_test_read_file(path, NULL, true);
}

static void test_write_and_read(void **state)
{
    (void)state;
    char *dir = make_temp_dir();
    char folder[512], path[PB_PATH_MAX], msg[PB_MSG_MAX] = "";
    snprintf(folder, sizeof(folder), "%s/results/nightly", dir);
    snprintf(path, sizeof(path), "%s/run.json", folder);

    struct pb_result result, back;
    make_result(&result, 42);
    /* The folder does not exist yet: write creates it. */
    int rc = pb_result_write(&result, path, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("write: %s", msg);
    assert_int_equal(count_entries(folder), 1);
    rc = pb_result_read(path, &back, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("read: %s", msg);
    assert_result_equal(&result, &back);
    pb_result_free(&back);

    /* An existing, longer file is replaced whole, and no temp file stays. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 200000; i++)
        fputs("garbage ", f);
    fclose(f);
    pb_result_free(&result);
    make_result(&result, 43);
    assert_int_equal(pb_result_write(&result, path, msg, sizeof(msg)), PB_OK);
    assert_int_equal(count_entries(folder), 1);
    char *text = slurp(path);
    assert_null(strstr(text, "garbage"));
    json_t *root = pb_result_to_json(&result);
    char *expected = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(root);
    assert_non_null(expected);
    assert_int_equal(strlen(text), strlen(expected) + 1); /* plus a final newline */
    assert_memory_equal(text, expected, strlen(expected));
    free(text);
    free(expected);
    assert_int_equal(pb_result_read(path, &back, msg, sizeof(msg)), PB_OK);
    assert_result_equal(&result, &back);
    pb_result_free(&back);

    /* A write that cannot rename (the target is a folder) leaves nothing. */
    char blocked[PB_PATH_MAX];
    snprintf(blocked, sizeof(blocked), "%s/blocked.json", folder);
    assert_int_equal(mkdir(blocked, 0777), 0);
    assert_int_equal(pb_result_write(&result, blocked, msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, blocked));
    assert_int_equal(count_entries(folder), 2); /* run.json and the folder */

    /* Parse errors name the file, line and column. */
    snprintf(path, sizeof(path), "%s/broken.json", folder);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\n  \"schema_version\": 1,\n  \"name\": oops\n}\n", f);
    fclose(f);
    assert_int_equal(pb_result_read(path, &back, msg, sizeof(msg)), PB_ERR);
    char prefix[PB_PATH_MAX + 16];
    snprintf(prefix, sizeof(prefix), "%s:3:", path);
    assert_memory_equal(msg, prefix, strlen(prefix));

    pb_result_free(&result);
    pb_test_tmpdir_remove(dir);
    free(dir);
}

static void test_reader_messages(void **state)
{
    (void)state;
    struct pb_result result, back;
    char msg[PB_MSG_MAX];
    make_result(&result, 7);
    json_t *root = pb_result_to_json(&result);

    json_object_set_new(root, "schema_version", json_integer(PB_SCHEMA_VERSION + 1));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "schema_version: 2 is newer than this pbench reads (1); "
                             "use a newer pbench to read it");
    assert_int_equal(back.point_count, 0);
    assert_null(back.points);
    json_object_set_new(root, "schema_version", json_integer(PB_SCHEMA_VERSION));

    json_t *repeat = json_array_get(
        json_object_get(json_array_get(json_object_get(root, "points"), 0), "repeats"), 1);
    json_object_set_new(repeat, "wall_s", json_string("fast"));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "points[0].repeats[1].wall_s: expected a number");
    json_object_set_new(repeat, "wall_s", json_real(1.5));

    json_t *wait = json_object_get(json_object_get(repeat, "batch_records"), "wait_ns");
    json_array_set_new(wait, 2, json_integer(-5));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg,
                        "points[0].repeats[1].batch_records.wait_ns[2]: expected a non-negative "
                        "integer");
    json_array_remove(wait, 2);
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, "points[0].repeats[1].batch_records.wait_ns: has "));
    json_array_insert_new(wait, 2, json_integer(5));

    json_t *bins = json_object_get(
        json_object_get(json_array_get(json_object_get(repeat, "stages"), 0), "histogram"),
        "bins");
    json_t *bin = json_array_get(bins, 0);
    json_t *lo = json_deep_copy(json_array_get(bin, 0));
    json_array_set_new(bin, 0, json_integer(1000001)); /* inside a bucket, not its edge */
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "points[0].repeats[1].stages[0].histogram.bins[0]: 1000001 is not "
                             "the low edge of a histogram bucket");
    json_array_set_new(bin, 0, lo);

    json_object_set_new(root, "interrupted", json_integer(1));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "interrupted: expected true or false");
    json_object_set_new(root, "interrupted", json_true());

    json_object_set_new(json_object_get(root, "machine"), "cores", json_string("many"));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "machine.cores: expected an integer");
    json_object_set_new(json_object_get(root, "machine"), "cores", json_integer(8));

    /* Restored, the document reads again. */
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_OK);
    pb_result_free(&back);

    json_t *not_result = json_pack("{s s}", "hello", "world");
    assert_int_equal(pb_result_from_json(not_result, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "schema_version: missing; this is not a pbench result file");
    json_decref(not_result);

    json_decref(root);
    pb_result_free(&result);
}

static void test_report_formats(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 11);

    char *table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(
        table, (const char *const[]){
                   /* the last of the 3 repeats is marked interrupted: cut short */
                   "image-basic", "samples/s", "(median of 2 complete repeats; 1 cut short",
                   "Test CPU @ 3.0GHz",
                   "workers=4", "pin_memory=true", "sweep: 2 points, fastest first",
                   "recommendation", "accelerator" /* run.step_ms > 0 */, "decode", "normalize",
                   "share%", "data/a.jpg: corrupt JPEG data", "warning: custom warning 1",
                   "warning: dataset (512 MiB) fits in the page cache",
                   "interrupted: partial results", "instrumentation overhead: 1.2 %", NULL});
    free(table);

    char *markdown = render(&result, PB_FORMAT_MARKDOWN);
    pb_test_assert_contains(
        markdown,
        (const char *const[]){"# pbench: image-basic", "## Sweep: 2 points",
                              "## Recommended point: loader.workers=",
                              "| stage | count | mean | p50 | p90 | p95 | p99 | max | cpu | share% |",
                              "| samples/s |", "| resize |", "- warning: custom warning 0", NULL});
    free(markdown);

    char *csv = render(&result, PB_FORMAT_CSV);
    size_t rows = 1;
    for (size_t i = 0; i < result.point_count; i++)
        rows += result.points[i].stage_count;
    assert_int_equal(count_lines(csv), rows);
    const char *head = "run,created,point,loader.workers,pipeline.resize.size,axes,samples_per_s,";
    assert_memory_equal(csv, head, strlen(head));
    /* The axes value holds a comma, so the field is quoted. */
    assert_non_null(strstr(csv, "\nimage-basic,2025-01-02T03:04:05Z,0,2,\"224,224\","
                                "\"loader.workers=2;pipeline.resize.size=224,224\","));
    assert_non_null(strstr(csv, ",read,"));
    free(csv);

    char *json_text = render(&result, PB_FORMAT_JSON);
    json_error_t error;
    json_t *root = json_loads(json_text, 0, &error);
    assert_non_null(root);
    struct pb_result back;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_OK);
    assert_result_equal(&result, &back);
    pb_result_free(&back);
    json_decref(root);
    free(json_text);

    /* Without run.step_ms there is no accelerator line; one point, no
     * comparison table. */
    json_object_del(result.config, "run");
    result.point_count = 1;
    table = render(&result, PB_FORMAT_TABLE);
    assert_null(strstr(table, "accelerator"));
    assert_null(strstr(table, "comparison"));
    free(table);
    result.point_count = 2;
    pb_result_free(&result);
}

/* The device side of a result: figures, device rows, device info, the
 * calibrated peak and a skip survive the JSON round trip, and the table
 * shows them (the GPU run itself needs a device; this is its rendering). */
static void test_gpu_result(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 5);
    result.calibration.measured = true;
    result.calibration.h2d_bytes = 38535168;
    result.calibration.h2d_pinned_gb_s = 24.5;
    result.calibration.h2d_pageable_gb_s = 9.5;
    snprintf(result.gpu_skipped, sizeof(result.gpu_skipped), "nothing skipped (test)");
    for (size_t i = 0; i < result.point_count; i++) {
        struct pb_point_result *p = &result.points[i];
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
    const struct pb_point_result *p = &result.points[0];
    assert_true(p->gpu.copy_gb_per_s > 19.26 && p->gpu.copy_gb_per_s < 19.27);
    assert_true(p->gpu.overlap_pct > 74.99 && p->gpu.overlap_pct < 75.01);

    json_t *root = pb_result_to_json(&result);
    struct pb_result back;
    char msg[PB_MSG_MAX] = "";
    if (pb_result_from_json(root, &back, msg, sizeof(msg)) != PB_OK)
        fail_msg("from_json: %s", msg);
    json_decref(root);
    const struct pb_point_result *q = &back.points[0];
    assert_true(q->gpu.used);
    assert_int_equal(q->gpu.copy_bytes, p->gpu.copy_bytes);
    assert_int_equal(q->gpu.copy_wait_ns, p->gpu.copy_wait_ns);
    assert_true(q->gpu.overlap_pct == p->gpu.overlap_pct);
    assert_int_equal(q->gpu_device.alloc_peak_bytes, 3ull << 30);
    assert_int_equal(q->gpu_device.sm_mhz_end, 1755);
    assert_string_equal(q->gpu_device.throttle, "power cap");
    assert_true(q->stages[q->stage_count - 1].gpu);
    assert_false(q->stages[0].gpu);
    assert_int_equal(back.calibration.h2d_bytes, 38535168);
    assert_true(back.calibration.h2d_pinned_gb_s == 24.5);
    assert_string_equal(back.gpu_skipped, "nothing skipped (test)");

    char *table = render(&back, PB_FORMAT_TABLE);
    pb_test_assert_contains(
        table,
        (const char *const[]){
            "19.27 GB/s pinned, 36.8 MiB a batch = 79% of this machine's "
            "pinned peak (24.5 GB/s, calibrate --gpu)",
            "75 % of copy time ran while the GPU computed", "GPU busy", "2.0 % on copies finishing",
            "1980 MHz at start, 1755 MHz at end (max 1980); slowed: power cap", "on the GPU",
            "copy GB/s", "pinned 24.5 GB/s, pageable 9.5 GB/s (calibrated)", NULL});
    free(table);
    char *csv = render(&back, PB_FORMAT_CSV);
    assert_non_null(strstr(csv, "gpu:to_device"));
    free(csv);
    pb_result_free(&back);
    pb_result_free(&result);
}

static void test_format_parse(void **state)
{
    (void)state;
    enum pb_format format = PB_FORMAT_TABLE;
    assert_int_equal(pb_format_parse("json", &format), PB_OK);
    assert_int_equal(format, PB_FORMAT_JSON);
    assert_int_equal(pb_format_parse("markdown", &format), PB_OK);
    assert_int_equal(format, PB_FORMAT_MARKDOWN);
    assert_int_equal(pb_format_parse("csv", &format), PB_OK);
    assert_int_equal(format, PB_FORMAT_CSV);
    assert_int_equal(pb_format_parse("table", &format), PB_OK);
    assert_int_equal(format, PB_FORMAT_TABLE);
    assert_int_equal(pb_format_parse("yaml", &format), PB_ERR_CONFIG);
    assert_int_equal(pb_format_parse(NULL, &format), PB_ERR_CONFIG);
}

static void test_machine_probe(void **state)
{
    (void)state;
    struct pb_machine m;
    pb_machine_probe(&m);
    assert_true(m.cores >= 1);
    assert_true(m.pus >= m.cores);
    assert_true(m.packages >= 1);
    assert_true(m.cpu_model[0] != '\0');
    assert_true(m.hostname[0] != '\0');
    assert_true(m.memory_bytes > 0);
    assert_true(m.kernel[0] != '\0');
    assert_true(m.library_count >= 8);
    assert_string_equal(m.libraries[0][0], "libyaml");
    assert_true(m.libraries[1][1][0] >= '1' && m.libraries[1][1][0] <= '9');
    assert_true(m.gpu_status[0] != '\0');

    char why[256] = "";
    int available = pb_gpu_available(why, sizeof(why));
    if (available) {
        assert_true(m.gpu_count >= 1);
        assert_string_equal(m.gpu_status, "ok");
        void *pinned = pb_pinned_alloc(1 << 20);
        assert_non_null(pinned);
        memset(pinned, 0xab, 1 << 20);
        pb_pinned_free(pinned);
    } else {
        assert_int_equal(m.gpu_count, 0);
        assert_true(why[0] != '\0');
        assert_string_equal(m.gpu_status, why);
        assert_null(pb_pinned_alloc(4096));
        pb_pinned_free(NULL);
    }
}

/* Values no run can produce are refused on read with their key path: a
 * negative time or rate, a rate that is not a number. */
static void test_impossible_values_rejected(void **state)
{
    (void)state;
    struct pb_result result, back;
    char msg[PB_MSG_MAX];
    make_result(&result, 7);
    json_t *root = pb_result_to_json(&result);
    json_t *point = json_array_get(json_object_get(root, "points"), 0);
    json_t *repeat = json_array_get(json_object_get(point, "repeats"), 1);
    static const struct {
        const char *key;
        double value; /* NAN: null */
        const char *want;
    } cases[] = {
        {"wall_s", -3, "points[0].repeats[1].wall_s must be >= 0, got -3"},
        {"samples_per_s", NAN,
         "points[0].repeats[1].samples_per_s must be a number >= 0, got null"},
        {"samples_per_s", -0.5, "points[0].repeats[1].samples_per_s must be >= 0, got -0.5"},
        {"stall_pct", -1, "points[0].repeats[1].stall_pct must be >= 0, got -1"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        json_t *saved = json_deep_copy(json_object_get(repeat, cases[i].key));
        json_object_set_new(repeat, cases[i].key,
                            isnan(cases[i].value) ? json_null() : json_real(cases[i].value));
        assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
        assert_string_equal(msg, cases[i].want);
        json_object_set_new(repeat, cases[i].key, saved);
    }
    json_object_set_new(point, "samples_per_s", json_real(-2));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "points[0].samples_per_s must be >= 0, got -2");
    json_object_set_new(point, "samples_per_s", json_real(10));
    json_object_set_new(repeat, "samples", json_integer(-3));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "points[0].repeats[1].samples: expected a non-negative integer");
    json_object_set_new(repeat, "samples", json_integer(3));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_OK);
    pb_result_free(&back);
    json_decref(root);
    pb_result_free(&result);
}

/* A folder, a YAML config or an empty file given as a result says what it
 * is, not what the JSON parser expected. */
static void test_read_what_is_not_a_result(void **state)
{
    (void)state;
    char *dir = make_temp_dir();
    char path[PB_PATH_MAX], want[PB_PATH_MAX + 128], msg[PB_MSG_MAX * 2];
    struct pb_result back;
    assert_int_equal(pb_result_read(dir, &back, msg, sizeof(msg)), PB_ERR);
    snprintf(want, sizeof(want), "%s is a directory, not a result file", dir);
    assert_string_equal(msg, want);

    snprintf(path, sizeof(path), "%s/image.yaml", dir);
    static const char yaml[] = "# a config\nname: x\npipeline:\n  - read:\n";
    pb_test_write_file(path, yaml, strlen(yaml));
    assert_int_equal(pb_result_read(path, &back, msg, sizeof(msg)), PB_ERR);
    snprintf(want, sizeof(want),
             "%s is not a pbench result (JSON expected; for a config use pbench run)", path);
    assert_string_equal(msg, want);

    snprintf(path, sizeof(path), "%s/empty.json", dir);
    pb_test_write_file(path, "\n", 1);
    assert_int_equal(pb_result_read(path, &back, msg, sizeof(msg)), PB_ERR);
    snprintf(want, sizeof(want), "%s is empty, not a pbench result (JSON expected)", path);
    assert_string_equal(msg, want);
    pb_test_tmpdir_remove(dir);
    free(dir);
}

/* Names from the result (its name, machine, stages, axes, error files,
 * warnings) are printed without control characters in the table, markdown
 * and CSV: an escape or a newline shows as \xNN. JSON keeps them exact. */
static void test_report_names_without_control_characters(void **state)
{
    (void)state;
    static const char hostile[] = "\x1b[31mred\nline";
    static const char shown[] = "\\x1b[31mred\\x0aline";
    struct pb_result result;
    make_result(&result, 11);
    snprintf(result.name, sizeof(result.name), "%s", hostile);
    snprintf(result.machine.hostname, sizeof(result.machine.hostname), "%s", hostile);
    struct pb_point_result *p = &result.points[0];
    snprintf(p->stages[0].name, sizeof(p->stages[0].name), "%s", hostile);
    snprintf(p->error_files[0], sizeof(p->error_files[0]), "%s", hostile);
    p->error_file_count = p->error_file_count ? p->error_file_count : 1;
    snprintf(p->warnings[0], sizeof(p->warnings[0]), "%s", hostile);
    p->warning_count = p->warning_count ? p->warning_count : 1;
    snprintf(result.warnings[0], sizeof(result.warnings[0]), "%s", hostile);
    result.warning_count = result.warning_count ? result.warning_count : 1;
    for (size_t i = 0; i < result.point_count; i++)
        json_object_set_new(result.points[i].axes, "\x1b[2Jaxis", json_string(hostile));
    for (int f = PB_FORMAT_TABLE; f <= PB_FORMAT_CSV; f++) {
        char *text = render(&result, (enum pb_format)f);
        if (f == PB_FORMAT_JSON) {
            json_t *root = json_loads(text, 0, NULL);
            assert_non_null(root);
            assert_string_equal(json_string_value(json_object_get(root, "name")), hostile);
            json_decref(root);
        } else {
            if (strchr(text, '\x1b'))
                fail_msg("format %d prints an escape:\n%s", f, text);
            assert_null(strstr(text, "red\nline"));
            assert_non_null(strstr(text, shown));
        }
        free(text);
    }
    pb_result_free(&result);
}

/* Text cells of CSV and TSV that a spreadsheet would run as a formula (=,
 * +, -, @ first) get a leading ' (OWASP); numbers are written as they are.
 * Markdown shows names from the result as written, never as HTML. */
static void test_report_names_not_formulas_or_html(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 13);
    struct pb_point_result *p = &result.points[0];
    assert_true(p->stage_count >= 2);
    snprintf(p->stages[0].name, sizeof(p->stages[0].name), "=HYPERLINK(\"http://x\",\"y\")");
    snprintf(p->stages[1].name, sizeof(p->stages[1].name), "@SUM(A1)");
    snprintf(result.name, sizeof(result.name), "<img src=x onerror=alert(1)> & co");
    snprintf(result.machine.hostname, sizeof(result.machine.hostname), "<b>host</b>");
    snprintf(p->warnings[0], sizeof(p->warnings[0]), "<script>warn</script>");
    p->warning_count = p->warning_count ? p->warning_count : 1;
    p->samples_per_s = -5; /* a number, not a formula */
    char *csv = render(&result, PB_FORMAT_CSV);
    pb_test_assert_contains(csv, (const char *const[]){
                                     ",\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",",
                                     ",'@SUM(A1),", ",-5,", NULL});
    assert_null(strstr(csv, ",=HYPERLINK"));
    assert_null(strstr(csv, ",@SUM"));
    free(csv);
    char *tsv = render(&result, PB_FORMAT_TSV);
    pb_test_assert_contains(tsv, (const char *const[]){"\t'=HYPERLINK(\"http://x\",\"y\")\t",
                                                       "\t'@SUM(A1)\t", "\t-5\t", NULL});
    free(tsv);
    char *md = render(&result, PB_FORMAT_MARKDOWN);
    pb_test_assert_contains(md, (const char *const[]){
                                    "# pbench: &lt;img src=x onerror=alert(1)&gt; &amp; co",
                                    "&lt;b&gt;host&lt;/b&gt;",
                                    "&lt;script&gt;warn&lt;/script&gt;", NULL});
    if (strstr(md, "<img") || strstr(md, "<b>") || strstr(md, "<script"))
        fail_msg("markdown holds raw HTML from names:\n%s", md);
    free(md);
    /* The terminal table shows the names as they are. */
    char *table = render(&result, PB_FORMAT_TABLE);
    assert_non_null(strstr(table, "<img src=x onerror=alert(1)> & co"));
    free(table);
    pb_result_free(&result);
}

/* A repeat cut short by a signal stays in the result, marked, but the
 * table says the point's figures leave it out. */
static void test_report_repeat_cut_short(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 12);
    struct pb_point_result *p = &result.points[0];
    assert_true(p->repeat_count >= 2);
    p->repeats[p->repeat_count - 1].interrupted = true;
    char *text = render(&result, PB_FORMAT_TABLE);
    char expected[64];
    snprintf(expected, sizeof(expected), "median of %zu complete repeat", p->repeat_count - 1);
    /* And why: a stop (make_result's run was interrupted); test_stop.c
     * has one cut by the engine's failure. */
    pb_test_assert_contains(text, (const char *const[]){expected,
                                                        "1 cut short by a stop, left out",
                                                        "s (cut short)", NULL});
    free(text);
    result.interrupted = false;
    text = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(text, (const char *const[]){"1 cut short, left out", NULL});
    free(text);
    pb_result_free(&result);
}

/* A process CPU share above 100% per core is pbench's error, not a
 * figure (issue 38: "process 840 %" on 2 cores over a span cut short);
 * within what the clocks' resolution explains, it is a figure. */
static void test_impossible_cpu_share(void **state)
{
    (void)state;
    struct pb_repeat_result rep = {.wall_s = 0.05, .cpu_util_pct = 840};
    char msg[PB_MSG_MAX] = "";
    assert_true(pb_repeat_cpu_impossible(&rep, 2, 0, msg, sizeof msg));
    pb_test_assert_contains(msg, (const char *const[]){"internal error in pbench", "840%",
                                                       "2 cores", NULL});
    rep.cpu_util_pct = 199;
    assert_false(pb_repeat_cpu_impossible(&rep, 2, 0, msg, sizeof msg));
    /* Three processes read from /proc in 10 ms ticks over 0.05 s: up to
     * 60 points more are the clock's, not an error. */
    rep.cpu_util_pct = 250;
    assert_false(pb_repeat_cpu_impossible(&rep, 2, 3 * 1e7, msg, sizeof msg));
    assert_true(pb_repeat_cpu_impossible(&rep, 2, 0, msg, sizeof msg));
    rep.wall_s = 0; /* nothing measured: nothing to check */
    assert_false(pb_repeat_cpu_impossible(&rep, 2, 0, msg, sizeof msg));
}

/* Keeps a point's first repeat only, with the windowed noise the stopping
 * rule leaves when too few windows closed (0), and summarizes it again. */
static void keep_one_repeat(struct pb_point_result *p)
{
    for (size_t r = 1; r < p->repeat_count; r++) {
        free(p->repeats[r].batch_records);
        free(p->repeats[r].rss);
        free(p->repeats[r].stages);
    }
    p->repeat_count = 1;
    p->repeats[0].interrupted = false;
    p->repeats[0].window_noise = 0;
    pb_point_summarize(p);
}

/* Noise that cannot be judged is said to be unknown, never ± 0.0%. */
static void test_report_noise_unknown(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 13);
    for (size_t i = 0; i < result.point_count; i++)
        keep_one_repeat(&result.points[i]);
    char *table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){"noise unknown (", " windows)",
                                                         "(1 repeat: noise unknown", NULL});
    assert_null(strstr(table, "±0.0%"));
    assert_null(strstr(table, "± 0.0%"));
    free(table);
    char *csv = render(&result, PB_FORMAT_CSV);
    char row[64];
    snprintf(row, sizeof(row), ",%.10g,,", result.points[0].samples_per_s); /* empty noise */
    assert_non_null(strstr(csv, row));
    free(csv);
    pb_result_free(&result);
}

/* An overhead whose interval holds figures timing cannot cause (a faster
 * run with timing on) is below the noise, with the noise quoted. */
static void test_report_overhead_below_noise(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 14);
    result.overhead_pct = -21.0;
    result.overhead_noise_pct = 8.7;
    char *table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){
                                       "instrumentation overhead: below the noise (± 8.7 %", NULL});
    assert_null(strstr(table, "-21.0 % of throughput"));
    free(table);
    result.overhead_pct = 3.0;
    result.overhead_noise_pct = 4.0; /* 3 ± 4 reaches below 0 */
    table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){"below the noise (± 4.0 %", NULL});
    free(table);
    pb_result_free(&result);
}

/* Points at the step-time cap (batch 32 / 12.5 ms = 2560 samples/s) show
 * it in place of a low efficiency, and in the scaling line. */
static void test_report_step_time_cap(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 15);
    result.calibration.measured = true;
    result.calibration.single_core_samples_per_s = 5000;
    result.calibration.cores = 32;
    for (size_t i = 0; i < result.point_count; i++)
        result.points[i].accel_util_pct = 95;
    char *table = render(&result, PB_FORMAT_TABLE);
    pb_test_assert_contains(table, (const char *const[]){
                                       "at the step-time cap (2560 samples/s max)",
                                       "the loop is at the step-time cap (2560 samples/s max",
                                       NULL});
    assert_null(strstr(table, "Knee at"));
    free(table);
    pb_result_free(&result);
}

/* Asserts that text has one verdict line and after it only suggestions
 * (each line starting with try_prefix) and the capacity and engines lines
 * that belong to the verdict. */
static void __attribute__((noinline)) assert_verdict_last(const char *text, const char *try_prefix)
{
    const char *verdict = strstr(text, "\nverdict: ");
    assert_non_null(verdict);
    assert_null(strstr(verdict + 1, "\nverdict: "));
    for (const char *line = strchr(verdict + 1, '\n'); line && line[1];
         line = strchr(line + 1, '\n'))
        assert_true(strncmp(line + 1, try_prefix, strlen(try_prefix)) == 0 || line[1] == '\n' ||
                    strstr(line + 1, "capacity: ") == line + 1 + strspn(line + 1, " ") ||
                    strstr(line + 1, "engines: ") == line + 1 + strspn(line + 1, " "));
}

/* The last block of the table and of Markdown is the verdict line and its
 * suggestions. */
static void test_report_ends_with_verdict(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 16);
    char *text = render(&result, PB_FORMAT_TABLE);
    assert_verdict_last(text, "  try: ");
    free(text);
    text = render(&result, PB_FORMAT_MARKDOWN);
    assert_verdict_last(text, "- try: ");
    free(text);
    pb_result_free(&result);
}

/* Stage tables carry p95 beside p50, p90 and p99, from the merged
 * histograms. */
static void test_report_p95_column(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 17);
    char *csv = render(&result, PB_FORMAT_CSV);
    const struct pb_hist *h = &result.points[0].stages[0].hist;
    char cells[128];
    snprintf(cells, sizeof(cells), ",%llu,%llu,%llu,", (unsigned long long)pb_hist_quantile(h, 0.90),
             (unsigned long long)pb_hist_quantile(h, 0.95),
             (unsigned long long)pb_hist_quantile(h, 0.99));
    pb_test_assert_contains(csv, (const char *const[]){"p50_ns,p90_ns,p95_ns,p99_ns,", cells, NULL});
    free(csv);
    char *markdown = render(&result, PB_FORMAT_MARKDOWN);
    pb_test_assert_contains(markdown, (const char *const[]){"| p90 | p95 | p99 |", NULL});
    free(markdown);
    pb_result_free(&result);
}

/* TSV is the CSV table with tabs: the same header and rows, 38 cells
 * each, nothing quoted (the axes keep their comma); a tab inside a name
 * is printed as \x09, so it never splits a cell. */
static void test_report_tsv(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 17);
    char *csv = render(&result, PB_FORMAT_CSV);
    char *tsv = render(&result, PB_FORMAT_TSV);
    size_t csv_lines = 0, tsv_lines = 0;
    for (const char *p = csv; *p; p++)
        csv_lines += *p == '\n';
    int tabs = 0;
    for (const char *p = tsv; *p; p++) {
        if (*p == '\t')
            tabs++;
        if (*p == '\n') {
            assert_int_equal(tabs, 37);
            tabs = 0;
            tsv_lines++;
        }
    }
    assert_int_equal(tsv_lines, csv_lines);
    assert_true(tsv_lines > 1);
    size_t header = strcspn(csv, "\n");
    for (size_t i = 0; i < header; i++)
        if (csv[i] == ',')
            csv[i] = '\t';
    assert_memory_equal(tsv, csv, header + 1);
    assert_null(strchr(tsv, '"'));
    pb_test_assert_contains(tsv, (const char *const[]){
                                     "\t0\t2\t224,224\tloader.workers=2;pipeline.resize.size=224,224\t", NULL});
    free(csv);
    free(tsv);
    snprintf(result.points[0].stages[0].name, sizeof(result.points[0].stages[0].name), "a\tb");
    tsv = render(&result, PB_FORMAT_TSV);
    pb_test_assert_contains(tsv, (const char *const[]){"\ta\\x09b\t", NULL});
    free(tsv);
    pb_result_free(&result);
}

/* Splits one CSV line (RFC 4180 quoting, no line breaks inside a field)
 * into cells, each allocated; returns the count. */
static size_t csv_cells(const char *line, char **cells, size_t max)
{
    size_t n = 0;
    const char *p = line;
    while (n < max) {
        char *cell = malloc(strlen(line) + 1);
        assert_non_null(cell);
        size_t used = 0;
        if (*p == '"') {
            for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
                if (*p == '"')
                    p++;
                cell[used++] = *p;
            }
            p += *p == '"';
        } else {
            while (*p && *p != ',' && *p != '\n')
                cell[used++] = *p++;
        }
        cell[used] = '\0';
        cells[n++] = cell;
        if (*p != ',')
            break;
        p++;
    }
    return n;
}

static void cells_free(char **cells, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(cells[i]);
}

/* The index of name among the header's cells; fails the test when absent. */
static size_t column_of(char **header, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(header[i], name) == 0)
            return i;
    fail_msg("no column %s", name);
    return 0;
}

/* The CSV renders result in rows (the analysis left out). */
static __attribute__((noinline)) char *render_rows(const struct pb_result *result, enum pb_format format,
                         enum pb_report_rows rows)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    pb_report_rows(out, result, NULL, format, rows);
    fclose(out);
    return text;
}

/* Data out for people's own tools: each CSV row names the run, its created
 * time and point, a column per sweep axis holds the point's value (numbers
 * as numbers, never formula-guarded; text guarded), and the point's other
 * CPU, time to the first batch and CPU per delivered sample sit beside the
 * stage's CPU per sample it processed. */
static void test_report_csv_columns(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 18);
    /* An axis only the second point has, with text a spreadsheet would run. */
    json_object_set_new(result.points[1].axes, "dataset.tag", json_string("=cmd"));
    json_object_set_new(result.points[1].axes, "loader.workers", json_integer(-3));
    char *csv = render(&result, PB_FORMAT_CSV);
    char *header[64], *cells[64];
    size_t columns = csv_cells(csv, header, 64);
    assert_int_equal(columns, 3 + 3 + 1 + 32);
    size_t workers = column_of(header, columns, "loader.workers");
    size_t tag = column_of(header, columns, "dataset.tag");
    size_t cpu_us = column_of(header, columns, "cpu_us_per_sample");
    size_t other = column_of(header, columns, "other_cpu_pct");
    size_t first = column_of(header, columns, "first_batch_s");
    size_t stage = column_of(header, columns, "stage");
    size_t stage_us = column_of(header, columns, "stage_cpu_us_per_sample");
    assert_int_equal(column_of(header, columns, "run"), 0);
    assert_int_equal(column_of(header, columns, "created"), 1);
    assert_int_equal(column_of(header, columns, "point"), 2);
    size_t rows = 0;
    for (const char *line = strchr(csv, '\n') + 1; *line; line = strchr(line, '\n') + 1, rows++) {
        size_t n = csv_cells(line, cells, 64);
        assert_int_equal(n, columns);
        assert_string_equal(cells[0], "image-basic");
        assert_string_equal(cells[1], "2025-01-02T03:04:05Z");
        size_t i = (size_t)atoi(cells[2]);
        const struct pb_point_result *p = &result.points[i];
        assert_string_equal(cells[workers], i == 0 ? "2" : "-3"); /* a number: no ' */
        assert_string_equal(cells[tag], i == 0 ? "" : "'=cmd");
        assert_true(fabs(strtod(cells[other], NULL) - p->other_cpu_pct) < 1e-6);
        assert_true(fabs(strtod(cells[first], NULL) - p->first_batch_s) < 1e-6);
        double want = p->cpu_util_pct / 100 / p->samples_per_s * 1e6;
        assert_true(fabs(strtod(cells[cpu_us], NULL) / want - 1) < 1e-8);
        const struct pb_stage_result *st = NULL;
        for (size_t k = 0; k < p->stage_count; k++)
            if (strcmp(p->stages[k].name, cells[stage]) == 0)
                st = &p->stages[k];
        assert_non_null(st);
        want = (double)st->cpu_ns / (double)st->hist.count / 1000;
        assert_true(fabs(strtod(cells[stage_us], NULL) / want - 1) < 1e-8);
        cells_free(cells, n);
    }
    assert_int_equal(rows, result.points[0].stage_count + result.points[1].stage_count);
    cells_free(header, columns);
    free(csv);
    pb_result_free(&result);
}

/* --rows repeats: one row per repeat of each point, numbered, with the
 * axes as columns, the repeat's own figures and a column of CPU per sample
 * for each stage; TSV has the same cells. The formats without the form
 * have no repeats renderer. */
static void test_report_csv_repeats(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 19);
    char *csv = render_rows(&result, PB_FORMAT_CSV, PB_ROWS_REPEATS);
    char *header[64], *cells[64];
    size_t columns = csv_cells(csv, header, 64);
    /* run, created, point, repeat, 2 axes, axes, 16 figures, 4 stages */
    assert_int_equal(columns, 4 + 2 + 1 + 16 + 4);
    assert_string_equal(header[3], "repeat");
    size_t workers = column_of(header, columns, "loader.workers");
    size_t sps = column_of(header, columns, "samples_per_s");
    size_t cpu_us = column_of(header, columns, "cpu_us_per_sample");
    size_t decode_us = column_of(header, columns, "decode.cpu_us_per_sample");
    size_t interrupted = column_of(header, columns, "interrupted");
    size_t rows = 0;
    for (const char *line = strchr(csv, '\n') + 1; *line; line = strchr(line, '\n') + 1, rows++) {
        size_t n = csv_cells(line, cells, 64);
        assert_int_equal(n, columns);
        size_t i = (size_t)atoi(cells[2]), r = (size_t)atoi(cells[3]);
        assert_true(i < result.point_count && r < result.points[i].repeat_count);
        assert_int_equal(rows, i * result.points[0].repeat_count + r);
        const struct pb_repeat_result *rep = &result.points[i].repeats[r];
        assert_int_equal(atoi(cells[workers]), 2 + 2 * (int)i);
        assert_true(fabs(strtod(cells[sps], NULL) / rep->samples_per_s - 1) < 1e-8);
        double want = rep->cpu_util_pct / 100 / rep->samples_per_s * 1e6;
        assert_true(fabs(strtod(cells[cpu_us], NULL) / want - 1) < 1e-8);
        const struct pb_stage_result *decode = &rep->stages[1];
        assert_string_equal(decode->name, "decode");
        want = (double)decode->cpu_ns / (double)decode->hist.count / 1000;
        assert_true(fabs(strtod(cells[decode_us], NULL) / want - 1) < 1e-8);
        assert_int_equal(atoi(cells[interrupted]), rep->interrupted ? 1 : 0);
        cells_free(cells, n);
    }
    assert_int_equal(rows, result.points[0].repeat_count + result.points[1].repeat_count);
    cells_free(header, columns);
    char *tsv = render_rows(&result, PB_FORMAT_TSV, PB_ROWS_REPEATS);
    size_t tabs = 0, lines = 0;
    for (const char *p = tsv; *p; p++) {
        tabs += *p == '\t';
        lines += *p == '\n';
    }
    assert_int_equal(lines, rows + 1);
    assert_int_equal(tabs, lines * (columns - 1));
    free(tsv);
    free(csv);
    /* A format without a repeats form renders its usual page. */
    assert_null(pb_formats[PB_FORMAT_TABLE].repeats);
    assert_null(pb_formats[PB_FORMAT_HTML].repeats);
    enum pb_report_rows rows_parsed;
    assert_int_equal(pb_report_rows_parse("repeats", &rows_parsed), PB_OK);
    assert_int_equal(rows_parsed, PB_ROWS_REPEATS);
    assert_int_equal(pb_report_rows_parse("points", &rows_parsed), PB_OK);
    assert_int_equal(rows_parsed, PB_ROWS_POINTS);
    assert_int_equal(pb_report_rows_parse("repeat", &rows_parsed), PB_ERR_CONFIG);
    pb_result_free(&result);
}

/* Every format in enum pb_format has its row: a name --format takes back,
 * a result renderer; the names in help and messages come from the rows. */
static void test_format_table_complete(void **state)
{
    (void)state;
    for (int f = 0; f < PB_FORMAT_COUNT; f++) {
        assert_non_null(pb_formats[f].name);
        assert_non_null(pb_formats[f].result);
        enum pb_format back = PB_FORMAT_COUNT;
        assert_int_equal(pb_format_parse(pb_formats[f].name, &back), PB_OK);
        assert_int_equal(back, f);
    }
    char names[256];
    pb_format_names(names, sizeof(names), "|", false);
    assert_string_equal(names, "table|json|markdown|csv|html|tsv");
    pb_format_names(names, sizeof(names), ", ", true);
    assert_string_equal(names, "table, json, markdown, html");
}

/* A report that cannot be written says why with the write's own reason
 * (a full disk reads "No space left on device", here a file size limit
 * "File too large"), not a generic "Input/output error"; no file is left. */
static void test_report_write_error_names_the_cause(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof(path), "%s/r.json", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead */
        struct rlimit small = {512, 512};
        setrlimit(RLIMIT_FSIZE, &small);
        struct pb_result result;
        make_result(&result, 17);
        char msg[PB_MSG_MAX];
        int rc = pb_report_write(path, &result, NULL, PB_FORMAT_JSON, PB_ROWS_POINTS, msg, sizeof(msg));
        pb_result_free(&result);
        _exit(rc == PB_ERR && strstr(msg, strerror(EFBIG)) && access(path, F_OK) != 0 ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(pb_test_tmpdir_remove(dir), 0);
}

/* An error file whose name is not UTF-8 reads back as the file's own
 * bytes (errors.files_bytes), while errors.files stays readable; names in
 * UTF-8 need nothing beside them. */
static void test_error_file_names_keep_their_bytes(void **state)
{
    (void)state;
    struct pb_result result, back;
    char msg[PB_MSG_MAX] = "";
    make_result(&result, 5);
    struct pb_point_result *p = &result.points[0];
    p->error_file_count = 3;
    snprintf(p->error_files[0], 256, "data/ok.jpg: corrupt");
    snprintf(p->error_files[1], 256, "data/bad\xff\xfe.jpg: truncated");
    snprintf(p->error_files[2], 256, "data/caf\xc3\xa9.jpg: corrupt");
    json_t *root = pb_result_to_json(&result);
    char *text = json_dumps(root, 0);
    assert_non_null(text); /* valid JSON: the stray bytes are not written raw */
    json_decref(root);
    json_error_t error;
    json_t *loaded = json_loads(text, 0, &error);
    assert_non_null(loaded);
    free(text);
    json_t *errors = json_object_get(json_array_get(json_object_get(loaded, "points"), 0),
                                     "errors");
    json_t *exact = json_object_get(errors, "files_bytes");
    assert_int_equal(json_array_size(exact), 3); /* beside errors.files, entry by entry */
    assert_true(json_is_null(json_array_get(exact, 0)));
    assert_true(json_is_string(json_array_get(exact, 1)));
    assert_true(json_is_null(json_array_get(exact, 2)));
    assert_int_equal(pb_result_from_json(loaded, &back, msg, sizeof(msg)), PB_OK);
    json_decref(loaded);
    for (int k = 0; k < 3; k++)
        assert_string_equal(back.points[0].error_files[k], p->error_files[k]);
    pb_result_free(&back);
    pb_result_free(&result);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warnings_dedupe_and_cap),
        cmocka_unit_test(test_summarize_fixed_inputs),
        cmocka_unit_test(test_summarize_interference),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_empty_result_round_trip),
        cmocka_unit_test(test_write_and_read),
        cmocka_unit_test(test_reader_messages),
        cmocka_unit_test(test_report_formats),
        cmocka_unit_test(test_gpu_result),
        cmocka_unit_test(test_format_parse),
        cmocka_unit_test(test_machine_probe),
        cmocka_unit_test(test_impossible_values_rejected),
        cmocka_unit_test(test_read_what_is_not_a_result),
        cmocka_unit_test(test_report_names_without_control_characters),
        cmocka_unit_test(test_report_names_not_formulas_or_html),
        cmocka_unit_test(test_report_repeat_cut_short),
        cmocka_unit_test(test_impossible_cpu_share),
        cmocka_unit_test(test_report_noise_unknown),
        cmocka_unit_test(test_report_overhead_below_noise),
        cmocka_unit_test(test_report_step_time_cap),
        cmocka_unit_test(test_report_ends_with_verdict),
        cmocka_unit_test(test_report_p95_column),
        cmocka_unit_test(test_report_tsv),
        cmocka_unit_test(test_report_csv_columns),
        cmocka_unit_test(test_report_csv_repeats),
        cmocka_unit_test(test_format_table_complete),
        cmocka_unit_test(test_report_write_error_names_the_cause),
        cmocka_unit_test(test_error_file_names_keep_their_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
