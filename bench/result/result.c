/* Result structs: warnings, the per-point summary over repeats and their
 * release. The JSON form is in bench/result/result_json.c. */
#include "bench/result/result.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/engine_row.h"
#include "bench/base/jsonfield.h"
#include "bench/base/pb.h"
#include "bench/base/stats.h"

/* ---------------------------------------------------------------- warnings */

static void add_warning(char (*list)[256], int *count, const char *fmt, va_list ap)
{
    char text[256];
    vsnprintf(text, sizeof(text), fmt, ap);
    for (int i = 0; i < *count; i++)
        if (strcmp(list[i], text) == 0)
            return;
    if (*count >= PB_MAX_WARNINGS)
        return;
    memcpy(list[*count], text, sizeof(text));
    (*count)++;
}

void pb_point_warn(struct pb_point_result *point, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_warning(point->warnings, &point->warning_count, fmt, ap);
    va_end(ap);
}

void pb_result_warn(struct pb_result *result, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_warning(result->warnings, &result->warning_count, fmt, ap);
    va_end(ap);
}

/* --------------------------------------------------------------- summary */

/* The values of one double field of the repeats, read at its offset, in a
 * new array (NULL when out of memory). */
static double *repeat_values(const struct pb_repeat_result *repeats, size_t n, size_t offset)
{
    double *values = malloc(n * sizeof(*values));
    for (size_t i = 0; values && i < n; i++)
        values[i] = *(const double *)((const char *)&repeats[i] + offset);
    return values;
}

/* Median of one double field over the repeats; 0 when out of memory. */
static double median_of(const struct pb_repeat_result *repeats, size_t n, size_t offset)
{
    double *values = repeat_values(repeats, n, offset);
    double median = values ? pb_median(values, n) : 0;
    free(values);
    return median;
}

/* Mean of a percentage weighted by each repeat's wall time, which equals
 * sum(numerator) / sum(wall) of the underlying ratio. Plain mean when no
 * repeat has a wall time. */
static double wall_weighted(const struct pb_repeat_result *repeats, size_t n, size_t offset)
{
    double weighted = 0, plain = 0, wall_s = 0;
    for (size_t i = 0; i < n; i++) {
        double v = *(const double *)((const char *)&repeats[i] + offset);
        weighted += v * repeats[i].wall_s;
        plain += v;
        wall_s += repeats[i].wall_s;
    }
    return wall_s > 0 ? weighted / wall_s : plain / (double)n;
}

static void summarize_batches(struct pb_point_result *point, size_t n)
{
    size_t total = 0;
    for (size_t r = 0; r < n; r++)
        total += point->repeats[r].batch_count;
    point->assembly_p50_ns = point->assembly_p99_ns = 0;
    point->wait_p50_ns = point->wait_p99_ns = 0;
    point->queue_depth_mean = 0;
    if (total == 0)
        return;
    double depth_sum = 0;
    for (size_t r = 0; r < n; r++)
        for (size_t b = 0; b < point->repeats[r].batch_count; b++)
            depth_sum += point->repeats[r].batch_records[b].queue_depth;
    point->queue_depth_mean = depth_sum / (double)total;
    uint64_t *assembly_ns = malloc(total * sizeof(*assembly_ns));
    uint64_t *wait_ns = malloc(total * sizeof(*wait_ns));
    if (assembly_ns && wait_ns) {
        size_t k = 0;
        for (size_t r = 0; r < n; r++) {
            const struct pb_repeat_result *rep = &point->repeats[r];
            for (size_t b = 0; b < rep->batch_count; b++, k++) {
                assembly_ns[k] = rep->batch_records[b].assembly_ns;
                wait_ns[k] = rep->batch_records[b].wait_ns;
            }
        }
        pb_sort_u64(assembly_ns, total);
        pb_sort_u64(wait_ns, total);
        point->assembly_p50_ns = pb_quantile_sorted_u64(assembly_ns, total, 0.50);
        point->assembly_p99_ns = pb_quantile_sorted_u64(assembly_ns, total, 0.99);
        point->wait_p50_ns = pb_quantile_sorted_u64(wait_ns, total, 0.50);
        point->wait_p99_ns = pb_quantile_sorted_u64(wait_ns, total, 0.99);
    }
    free(assembly_ns);
    free(wait_ns);
}

/* Merges the repeats' stages by name, in order of first appearance, and
 * recomputes each stage's share of the summed stage wall time. */
static void summarize_stages(struct pb_point_result *point, size_t n)
{
    free(point->stages);
    point->stages = NULL;
    point->stage_count = 0;
    size_t capacity = 0;
    for (size_t r = 0; r < n; r++)
        capacity += point->repeats[r].stage_count;
    if (capacity == 0)
        return;
    struct pb_stage_result *merged = calloc(capacity, sizeof(*merged));
    if (!merged)
        return;
    size_t count = 0;
    for (size_t r = 0; r < n; r++) {
        const struct pb_repeat_result *rep = &point->repeats[r];
        for (size_t s = 0; s < rep->stage_count; s++) {
            const struct pb_stage_result *src = &rep->stages[s];
            size_t i = 0;
            while (i < count && (strcmp(merged[i].name, src->name) != 0 || merged[i].gpu != src->gpu))
                i++;
            if (i == count) {
                snprintf(merged[i].name, sizeof(merged[i].name), "%s", src->name);
                merged[i].gpu = src->gpu;
                snprintf(merged[i].parent, sizeof(merged[i].parent), "%s", src->parent);
                pb_hist_init(&merged[i].hist);
                merged[i].counter_count = src->counter_count;
                memcpy(merged[i].counter_names, src->counter_names, sizeof(src->counter_names));
                count++;
            }
            merged[i].cpu_ns += src->cpu_ns;
            pb_hist_merge(&merged[i].hist, &src->hist);
            for (int c = 0; c < src->counter_count && c < PB_STAGE_COUNTERS; c++)
                merged[i].counters[c] += src->counters[c];
            pb_slowest_merge_row(&merged[i], src);
            merged[i].perf_mask |= src->perf_mask;
            for (int c = 0; c < PB_PERF_COUNTERS; c++)
                merged[i].perf[c] += src->perf[c];
        }
    }
    /* Shares are of the host rows' total, or of the device rows' total. */
    double total_ns[2] = {0, 0};
    for (size_t i = 0; i < count; i++)
        if (!merged[i].parent[0])
            total_ns[merged[i].gpu] += (double)merged[i].hist.sum_ns;
    for (size_t i = 0; i < count; i++) {
        double total = total_ns[merged[i].gpu];
        merged[i].share_pct = total > 0 ? (double)merged[i].hist.sum_ns / total * 100 : 0;
    }
    point->stages = merged;
    point->stage_count = count;
}

/* The warnings pb_point_summarize adds, recognized so that summarizing
 * again replaces them rather than stacking stale counts. */
static const char *const summary_warning_marks[] = {
    " repeats hit run.max_time_s before the noise target was met",
    " repeats were noisy: ",
    " of the machine's CPU while this point was measured",
};

static void drop_summary_warnings(struct pb_point_result *point)
{
    int kept = 0;
    for (int i = 0; i < point->warning_count; i++) {
        bool ours = false;
        for (size_t m = 0; m < PB_ARRAY_LEN(summary_warning_marks); m++)
            ours = ours || strstr(point->warnings[i], summary_warning_marks[m]) != NULL;
        if (!ours && kept != i)
            memcpy(point->warnings[kept], point->warnings[i], sizeof(point->warnings[i]));
        kept += !ours;
    }
    point->warning_count = kept;
}

void pb_repeat_loop_shares(struct pb_repeat_result *rep, uint64_t step_ns, uint64_t stages_ns)
{
    double wall_ns = rep->wall_s * 1e9;
    rep->loop_step_pct = wall_ns > 0 ? 100.0 * (double)step_ns / wall_ns : 0;
    rep->loop_stages_pct = wall_ns > 0 ? 100.0 * (double)stages_ns / wall_ns : 0;
    double rest = 100.0 - rep->stall_pct - rep->loop_step_pct - rep->loop_stages_pct;
    rep->loop_other_pct = rest > 0 ? rest : 0;
}

bool pb_repeat_cpu_impossible(const struct pb_repeat_result *rep, long cores,
                              double resolution_ns, char *msg, size_t msglen)
{
    if (cores <= 0 || !(rep->wall_s > 0))
        return false;
    double limit_pct = 100.0 * (double)cores * 1.01 + 100.0 * resolution_ns / (rep->wall_s * 1e9);
    if (!(rep->cpu_util_pct > limit_pct))
        return false;
    snprintf(msg, msglen,
             "internal error in pbench: a repeat measured %.0f%% process CPU over %.3f s on %ld "
             "core%s (at most %.0f%%), which is impossible; the repeat is not kept. Please "
             "report it with the config",
             rep->cpu_util_pct, rep->wall_s, cores, cores == 1 ? "" : "s", 100.0 * (double)cores);
    return true;
}

void pb_gpu_figures_ratios(struct pb_gpu_figures *g)
{
    g->copy_gb_per_s = g->copy_ns > 0 ? (double)g->copy_bytes / g->copy_ns : 0;
    g->overlap_pct = g->copy_ns > 0 ? 100 * g->overlap_ns / g->copy_ns : 0;
    g->busy_pct = g->wall_s > 0 ? 100 * (g->stage_ns + g->step_ns) / (g->wall_s * 1e9) : 0;
}

void pb_point_summarize(struct pb_point_result *point)
{
    size_t n = pb_point_finished_repeats(point);
    const struct pb_repeat_result *reps = point->repeats;
    point->samples_per_s = point->samples_per_s_noise_pct = 0;
    point->batches_per_s = point->mb_per_s = 0;
    point->stall_pct = point->accel_util_pct = point->cpu_util_pct = point->worker_cpu_pct = 0;
    point->loop_step_pct = point->loop_stages_pct = point->loop_other_pct = 0;
    point->other_cpu_pct = point->steal_pct = point->first_batch_s = 0;
    point->rss_peak_bytes = point->samples = point->errors = 0;
    drop_summary_warnings(point);
    summarize_batches(point, n);
    summarize_stages(point, n);
    if (n == 0)
        return;

#define MEDIAN(field) median_of(reps, n, offsetof(struct pb_repeat_result, field))
    point->samples_per_s = MEDIAN(samples_per_s);
    point->batches_per_s = MEDIAN(batches_per_s);
    point->mb_per_s = MEDIAN(mb_per_s);
    if (n >= 2) {
        double *rates = repeat_values(reps, n, offsetof(struct pb_repeat_result, samples_per_s));
        double mean = rates ? pb_mean(rates, n) : 0, stddev = rates ? pb_stddev(rates, n) : 0;
        point->samples_per_s_noise_pct = mean > 0 ? 100 * stddev / mean : 0;
        free(rates);
    } else {
        point->samples_per_s_noise_pct = 100 * reps[0].window_noise;
    }
#define WALL_WEIGHTED(field) wall_weighted(reps, n, offsetof(struct pb_repeat_result, field))
    point->stall_pct = WALL_WEIGHTED(stall_pct);
    point->accel_util_pct = WALL_WEIGHTED(accel_util_pct);
    point->cpu_util_pct = WALL_WEIGHTED(cpu_util_pct);
    point->worker_cpu_pct = WALL_WEIGHTED(worker_cpu_pct);
    point->loop_step_pct = WALL_WEIGHTED(loop_step_pct);
    point->loop_stages_pct = WALL_WEIGHTED(loop_stages_pct);
    point->loop_other_pct = WALL_WEIGHTED(loop_other_pct);
#undef WALL_WEIGHTED
    point->other_cpu_pct = MEDIAN(other_cpu_pct);
    point->steal_pct = MEDIAN(steal_pct);
    point->first_batch_s = MEDIAN(first_batch_s);
#undef MEDIAN
    if (pb_machine_disturbed(point->other_cpu_pct, point->steal_pct, 0))
        pb_point_warn(point,
                      "other processes used %.0f%% of the machine's CPU while this point was "
                      "measured (steal %.0f%%): the figures are lower than this machine can do "
                      "alone; rerun on a quiet machine",
                      point->other_cpu_pct, point->steal_pct);

    memset(&point->gpu, 0, sizeof(point->gpu));
    for (size_t i = 0; i < n; i++) {
        const struct pb_gpu_figures *g = &reps[i].gpu;
        if (!g->used)
            continue;
        point->gpu.used = true;
        point->gpu.batches += g->batches;
        point->gpu.copy_bytes += g->copy_bytes;
        point->gpu.copy_ns += g->copy_ns;
        point->gpu.stage_ns += g->stage_ns;
        point->gpu.step_ns += g->step_ns;
        point->gpu.overlap_ns += g->overlap_ns;
        point->gpu.wall_s += g->wall_s;
        point->gpu.host_blocked_ns += g->host_blocked_ns;
        point->gpu.copy_wait_ns += g->copy_wait_ns;
        /* The point's clock is its slowest repeat's; slowed if any was. */
        if (g->sm_mhz && (!point->gpu.sm_mhz || g->sm_mhz < point->gpu.sm_mhz))
            point->gpu.sm_mhz = g->sm_mhz;
        point->gpu.slowed |= g->slowed;
    }
    pb_gpu_figures_ratios(&point->gpu);

    size_t capped = 0, noisy = 0;
    double worst_noise = 0;
    for (size_t i = 0; i < n; i++) {
        if (reps[i].rss_peak_bytes > point->rss_peak_bytes)
            point->rss_peak_bytes = reps[i].rss_peak_bytes;
        point->samples += reps[i].samples;
        point->errors += reps[i].errors;
        capped += reps[i].hit_time_cap;
        if (reps[i].noisy) {
            noisy++;
            if (reps[i].window_noise > worst_noise)
                worst_noise = reps[i].window_noise;
        }
    }
    if (capped)
        pb_point_warn(point,
                      "%zu of %zu repeats hit run.max_time_s before the noise target was met",
                      capped, n);
    if (noisy && worst_noise > 0)
        pb_point_warn(point,
                      "%zu of %zu repeats were noisy: windowed throughput varied by up to %.1f%%, "
                      "above run.target_noise",
                      noisy, n, 100 * worst_noise);
    else if (noisy)
        pb_point_warn(point,
                      "%zu of %zu repeats were noisy: too few throughput windows to judge the "
                      "noise; raise run.max_time_s or lower run.window_s",
                      noisy, n);
}

/* ------------------------------------------------------------ lifecycle */

void pb_result_free(struct pb_result *result)
{
    for (size_t i = 0; i < result->point_count && result->points; i++) {
        struct pb_point_result *p = &result->points[i];
        json_decref(p->axes);
        json_decref(p->ranks);
        json_decref(p->multi_rank);
        json_decref(p->affinity);
        json_decref(p->engine);
        for (size_t r = 0; r < p->repeat_count && p->repeats; r++)
            pb_repeat_result_free(&p->repeats[r]);
        free(p->repeats);
        free(p->stages);
    }
    free(result->points);
    json_decref(result->config);
    json_decref(result->analysis);
    json_decref(result->interleaved);
    json_decref(result->gpu_profile);
    memset(result, 0, sizeof(*result));
}

size_t pb_point_finished_repeats(const struct pb_point_result *point)
{
    size_t count = point->repeat_count;
    return count > 1 && point->repeats[count - 1].interrupted ? count - 1 : count;
}

const char *const pb_perf_names[PB_PERF_COUNTERS] = {"page_faults", "context_switches", "cycles",
                                                     "instructions", "cache_misses"};

/* ---- the slowest samples of a stage row ---------------------------------- */

/* Removes entry k of row's list. */
static void row_remove(struct pb_stage_result *row, int k)
{
    for (; k + 1 < row->slowest_count; k++) {
        row->slowest_ns[k] = row->slowest_ns[k + 1];
        row->slowest_sample[k] = row->slowest_sample[k + 1];
        memcpy(row->slowest_files[k], row->slowest_files[k + 1], sizeof(row->slowest_files[k]));
    }
    row->slowest_count--;
}

/* Inserts one sample into row's list, slowest first, when it is among the
 * five slowest; a sample (another repeat's, another epoch's) is listed
 * once, with its slowest time. */
static void row_add(struct pb_stage_result *row, uint64_t ns, uint64_t sample, const char *file)
{
    for (int k = 0; k < row->slowest_count; k++) {
        if (row->slowest_sample[k] != sample)
            continue;
        if (ns <= row->slowest_ns[k])
            return;
        row_remove(row, k);
        break;
    }
    int n = row->slowest_count, i = n < PB_SLOWEST_SAMPLES ? n : PB_SLOWEST_SAMPLES - 1;
    if (n == PB_SLOWEST_SAMPLES && ns <= row->slowest_ns[i])
        return;
    for (; i > 0 && row->slowest_ns[i - 1] < ns; i--) {
        row->slowest_ns[i] = row->slowest_ns[i - 1];
        row->slowest_sample[i] = row->slowest_sample[i - 1];
        memcpy(row->slowest_files[i], row->slowest_files[i - 1], sizeof(row->slowest_files[i]));
    }
    row->slowest_ns[i] = ns;
    row->slowest_sample[i] = sample;
    pb_strlcpy(row->slowest_files[i], file ? file : "", sizeof(row->slowest_files[i]));
    if (n < PB_SLOWEST_SAMPLES)
        row->slowest_count = n + 1;
}

void pb_slowest_merge_thread(struct pb_stage_result *row, const struct pb_slowest *s,
                             char *const *paths, uint64_t path_count)
{
    for (int k = 0; k < PB_SLOWEST_SAMPLES && s->ns[k]; k++)
        row_add(row, s->ns[k], s->sample[k],
                paths && s->sample[k] < path_count ? paths[s->sample[k]] : NULL);
}

void pb_slowest_merge_row(struct pb_stage_result *row, const struct pb_stage_result *other)
{
    for (int k = 0; k < other->slowest_count && k < PB_SLOWEST_SAMPLES; k++)
        row_add(row, other->slowest_ns[k], other->slowest_sample[k], other->slowest_files[k]);
}

json_t *pb_slowest_to_json(const struct pb_stage_result *row)
{
    if (row->slowest_count <= 0)
        return NULL;
    json_t *arr = json_array();
    for (int k = 0; k < row->slowest_count && k < PB_SLOWEST_SAMPLES; k++) {
        json_t *o = json_pack("{s I s I}", "ns", (json_int_t)row->slowest_ns[k], "sample",
                              (json_int_t)row->slowest_sample[k]);
        json_t *file = pb_json_text(row->slowest_files[k]);
        if (file && row->slowest_files[k][0])
            json_object_set_new(o, "file", file);
        else
            json_decref(file);
        json_t *bytes = pb_json_bytes(row->slowest_files[k]); /* a name not in UTF-8 */
        if (bytes)
            json_object_set_new(o, "file_bytes", bytes);
        json_array_append_new(arr, o);
    }
    return arr;
}

void pb_slowest_from_json(const json_t *arr, struct pb_stage_result *row)
{
    row->slowest_count = 0;
    size_t i;
    const json_t *o;
    if (!json_is_array(arr))
        return;
    json_array_foreach ((json_t *)arr, i, o) {
        const json_t *ns = json_object_get(o, "ns"), *sample = json_object_get(o, "sample");
        if (!json_is_integer(ns) || !json_is_integer(sample) || json_integer_value(ns) <= 0 ||
            json_integer_value(sample) < 0)
            continue;
        const json_t *file = json_object_get(o, "file");
        char exact[sizeof(row->slowest_files[0])];
        bool raw = pb_json_bytes_read(json_object_get(o, "file_bytes"), exact, sizeof(exact));
        row_add(row, (uint64_t)json_integer_value(ns), (uint64_t)json_integer_value(sample),
                raw                     ? exact
                : json_is_string(file) ? json_string_value(file)
                                        : NULL);
    }
}

bool pb_point_engine_text(const struct pb_point_result *point, char *buf, size_t buflen)
{
    const char *name = json_string_value(json_object_get(point->engine, "name"));
    if (buflen)
        buf[0] = '\0';
    if (!name || buflen == 0)
        return false;
    size_t used = (size_t)snprintf(buf, buflen, "%s", name);
    const struct pb_engine_row *row = pb_engine_row_named(name);
    const json_t *versions = json_object_get(point->engine, "versions");
    for (size_t k = 0; row && k < PB_ARRAY_LEN(row->versions) && row->versions[k][0] &&
                       used < buflen;
         k++) {
        const char *v = json_string_value(json_object_get(versions, row->versions[k][0]));
        if (v)
            used += (size_t)snprintf(buf + used, buflen - used, " · %s %s", row->versions[k][1],
                                     v);
    }
    return true;
}

/* ---- a point's settings ---------------------------------------------- */

static const json_t *config_path(const json_t *config, const char *path)
{
    char key[128];
    const json_t *node = config;
    const char *at = path;
    while (node && *at) {
        const char *dot = strchr(at, '.');
        size_t n = dot ? (size_t)(dot - at) : strlen(at);
        if (n >= sizeof(key))
            return NULL;
        memcpy(key, at, n);
        key[n] = 0;
        node = json_is_object(node) ? json_object_get(node, key) : NULL;
        at = dot ? dot + 1 : at + n;
    }
    return node;
}

const json_t *pb_result_config_value(const struct pb_result *result, const char *path)
{
    return result->config ? config_path(result->config, path) : NULL;
}

const json_t *pb_point_setting(const struct pb_result *result, size_t point, const char *path)
{
    if (point < result->point_count && result->points[point].axes) {
        const json_t *v = json_object_get(result->points[point].axes, path);
        if (v)
            return v;
    }
    return pb_result_config_value(result, path);
}

int64_t pb_point_setting_int(const struct pb_result *result, size_t point, const char *path,
                             int64_t def)
{
    const json_t *v = pb_point_setting(result, point, path);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (int64_t)json_real_value(v);
    if (json_is_boolean(v))
        return json_is_true(v);
    return def;
}

double pb_point_setting_double(const struct pb_result *result, size_t point, const char *path,
                               double def)
{
    const json_t *v = pb_point_setting(result, point, path);
    return json_is_number(v) ? json_number_value(v) : def;
}

const struct pb_engine_row *pb_point_engine_row(const struct pb_result *result, size_t point)
{
    const char *name = json_string_value(pb_point_setting(result, point, "loader.engine"));
    return name ? pb_engine_row_named(name) : &pb_engine_pbench_row; /* the default */
}

bool pb_point_wrapped(const struct pb_result *result, size_t point)
{
    const struct pb_engine_row *row = pb_point_engine_row(result, point);
    return row && row->job_sizes;
}

double pb_point_step_ms(const struct pb_result *result, size_t point)
{
    double simulated = pb_point_setting_double(result, point, "run.step_ms", 0);
    if (simulated > 0 || point >= result->point_count || !pb_point_wrapped(result, point))
        return simulated;
    const struct pb_point_result *p = &result->points[point];
    double v[64];
    size_t n = 0, repeats = p->repeats ? pb_point_finished_repeats(p) : 0;
    for (size_t r = 0; r < repeats && n < 64; r++) {
        const struct pb_repeat_result *rep = &p->repeats[r];
        if (rep->batches > 0 && rep->wall_s > 0)
            v[n++] = rep->loop_step_pct / 100.0 * rep->wall_s * 1e3 / (double)rep->batches;
    }
    return n ? pb_median(v, n) : 0;
}

int64_t pb_point_batch_size(const struct pb_result *result, size_t point)
{
    int64_t set = pb_point_setting_int(result, point, "loader.batch_size", 0);
    if (point >= result->point_count || !pb_point_wrapped(result, point))
        return set;
    const json_t *set_keys = pb_result_config_value(result, "wrap.set");
    if (json_is_string(set_keys) && strstr(json_string_value(set_keys), "batch_size"))
        return set;
    const struct pb_point_result *p = &result->points[point];
    return p->batches_per_s > 0 ? (int64_t)(p->samples_per_s / p->batches_per_s + 0.5) : 0;
}

uint64_t pb_stages_samples(const struct pb_stage_result *stages, size_t count)
{
    uint64_t most = 0;
    for (size_t s = 0; stages && s < count; s++)
        if (!stages[s].gpu && !stages[s].parent[0] && stages[s].cpu_ns > 0 &&
            stages[s].hist.count > most)
            most = stages[s].hist.count;
    return most;
}

void pb_repeat_result_free(struct pb_repeat_result *rep)
{
    free(rep->batch_records);
    free(rep->rss);
    free(rep->stages);
    memset(rep, 0, sizeof(*rep));
}

bool pb_result_engines_text(const struct pb_result *result, char *buf, size_t buflen)
{
    size_t used = 0;
    if (buflen)
        buf[0] = '\0';
    for (size_t i = 0; i < result->point_count && used < buflen; i++) {
        const char *name = json_string_value(json_object_get(result->points[i].engine, "name"));
        bool seen = false;
        for (size_t k = 0; name && k < i && !seen; k++)
            seen = json_equal(json_object_get(result->points[k].engine, "name"),
                              json_object_get(result->points[i].engine, "name"));
        char text[400];
        if (!name || seen || !pb_point_engine_text(&result->points[i], text, sizeof text))
            continue;
        used += (size_t)snprintf(buf + used, buflen - used, "%s%s", used ? "; " : "", text);
    }
    return used > 0;
}

bool pb_machine_disturbed(double other_cpu_pct, double steal_pct, double throttled_pct)
{
    return other_cpu_pct >= PB_BUSY_MACHINE_PCT || steal_pct >= PB_STEAL_PCT ||
           throttled_pct >= PB_THROTTLED_PCT;
}

double pb_point_median_throttled(const struct pb_point_result *p)
{
    double *v = malloc((p->repeat_count + 1) * sizeof(double));
    if (!v)
        return NAN;
    size_t n = 0;
    for (size_t r = 0; p->repeats && r < p->repeat_count; r++)
        v[n++] = p->repeats[r].throttled_pct;
    double median = n ? pb_median(v, n) : 0;
    free(v);
    return median;
}
