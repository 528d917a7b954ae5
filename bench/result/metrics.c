/* The comparable metrics (see metrics.h): one row each, with the
 * functions that read them from a repeat and a point. */
#include "bench/result/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/base/stats.h"

static double samples_of_repeat(const struct pb_repeat_result *r)
{
    return r->samples_per_s;
}

static void samples_to_repeat(struct pb_repeat_result *r, double v)
{
    r->samples_per_s = v;
}

static double samples_of_point(const struct pb_point_result *p)
{
    return p->samples_per_s;
}

/* A repeat's nearest-rank quantile of batch assembly time; NAN without
 * batches. */
static double assembly_quantile(const struct pb_repeat_result *r, double q)
{
    if (r->batch_count == 0)
        return NAN;
    uint64_t *v = malloc(r->batch_count * sizeof(uint64_t));
    if (!v)
        return NAN;
    for (size_t i = 0; i < r->batch_count; i++)
        v[i] = r->batch_records[i].assembly_ns;
    pb_sort_u64(v, r->batch_count);
    double out = (double)pb_quantile_sorted_u64(v, r->batch_count, q);
    free(v);
    return out;
}

static double assembly_p50_of_repeat(const struct pb_repeat_result *r)
{
    return assembly_quantile(r, 0.50);
}

static double assembly_p99_of_repeat(const struct pb_repeat_result *r)
{
    return assembly_quantile(r, 0.99);
}

static double assembly_p99_of_point(const struct pb_point_result *p)
{
    return (double)p->assembly_p99_ns;
}

static double stall_of_repeat(const struct pb_repeat_result *r)
{
    return r->stall_pct;
}

static void stall_to_repeat(struct pb_repeat_result *r, double v)
{
    r->stall_pct = v;
}

static double stall_of_point(const struct pb_point_result *p)
{
    return p->stall_pct;
}

static double rss_of_repeat(const struct pb_repeat_result *r)
{
    return (double)r->rss_peak_bytes;
}

static void rss_to_repeat(struct pb_repeat_result *r, double v)
{
    r->rss_peak_bytes = (uint64_t)v;
}

static double rss_of_point(const struct pb_point_result *p)
{
    return (double)p->rss_peak_bytes;
}

/* The loop's time in the simulated step (run.step_ms); NAN without one. */
static double accel_of_repeat(const struct pb_repeat_result *r)
{
    return r->accel_util_pct > 0 ? r->accel_util_pct : NAN;
}

static void accel_to_repeat(struct pb_repeat_result *r, double v)
{
    r->accel_util_pct = v;
}

static double accel_of_point(const struct pb_point_result *p)
{
    return p->accel_util_pct > 0 ? p->accel_util_pct : NAN;
}

/* The pipeline's CPU time per sample, ns (bench/result/figures.h: the
 * stages' thread CPU over the samples through them, else the process's).
 * It is the work per sample, which other processes barely move: on a
 * 2-core machine beside one or two busy loops it held within 1% over five
 * unchanged runs, where the whole process's CPU over wall time moved 20%
 * (waits and bookkeeping are scheduled differently). */
static double cpu_per_sample_of_repeat(const struct pb_repeat_result *r)
{
    return pb_repeat_cpu_ns_per_sample(r);
}

static double cpu_per_sample_of_point(const struct pb_point_result *p)
{
    return pb_point_cpu_ns_per_sample(p);
}

/* The machine's reference workload before the repeat (ns; lower: a faster
 * machine); NAN where it was not measured. */
static double ref_of_repeat(const struct pb_repeat_result *r)
{
    return r->ref_cpu_ns > 0 ? r->ref_cpu_ns : NAN;
}

static void ref_to_repeat(struct pb_repeat_result *r, double v)
{
    r->ref_cpu_ns = v;
}

static double ref_of_point(const struct pb_point_result *p)
{
    double v[64];
    size_t n = 0;
    for (size_t r = 0; p->repeats && r < p->repeat_count && n < 64; r++)
        if (p->repeats[r].ref_cpu_ns > 0)
            v[n++] = p->repeats[r].ref_cpu_ns;
    return n ? pb_median(v, n) : NAN;
}

const struct pb_metric pb_metrics[] = {
    {.name = "samples_per_s", .unit = "samples/s", .higher_is_better = true, .gates = true,
     .of_repeat = samples_of_repeat, .to_repeat = samples_to_repeat, .ranks = PB_RANKS_SUM,
     .of_point = samples_of_point, .wall_clock = true},
    {.name = "stall_pct", .unit = "%", .absolute = true, .gates = true,
     .of_repeat = stall_of_repeat, .to_repeat = stall_to_repeat, .ranks = PB_RANKS_MEAN,
     .of_point = stall_of_point, .wall_clock = true},
    {.name = "accel_util_pct", .unit = "%", .higher_is_better = true, .absolute = true,
     .gates = true, .of_repeat = accel_of_repeat, .to_repeat = accel_to_repeat,
     .ranks = PB_RANKS_MEAN, .of_point = accel_of_point, .wall_clock = true},
    /* More workers on shared cores cost CPU per sample (cache, memory
     * bandwidth): the cost of that setting, not a regression of the code. */
    {.name = "cpu_ns_per_sample", .unit = "ns", .setting_cost = true, .gates = true,
     .of_repeat = cpu_per_sample_of_repeat, .ranks = PB_RANKS_ROOT,
     .of_point = cpu_per_sample_of_point, .loader_cost = true},
    {.name = "assembly_p50_ns", .unit = "ns", .of_repeat = assembly_p50_of_repeat,
     .ranks = PB_RANKS_ROOT, .wall_clock = true},
    {.name = "assembly_p99_ns", .unit = "ns", .of_repeat = assembly_p99_of_repeat,
     .ranks = PB_RANKS_ROOT, .of_point = assembly_p99_of_point, .wall_clock = true},
    {.name = "rss_peak_bytes", .unit = "bytes", .setting_cost = true, .of_repeat = rss_of_repeat,
     .to_repeat = rss_to_repeat, .ranks = PB_RANKS_SUM, .of_point = rss_of_point},
    /* Not the code's: the machine's speed, shown beside the verdicts and
     * kept as a series, never gated (compare and history find it by its
     * machine flag). */
    {.name = "machine_ref_ns", .unit = "ns", .of_repeat = ref_of_repeat,
     .to_repeat = ref_to_repeat, .ranks = PB_RANKS_MEAN, .of_point = ref_of_point,
     .machine = true},
};
_Static_assert(sizeof(pb_metrics) / sizeof(pb_metrics[0]) == PB_METRIC_COUNT,
               "PB_METRIC_COUNT counts the rows of pb_metrics[]");

const struct pb_metric *pb_metric_machine(void)
{
    for (size_t i = 0; i < PB_METRIC_COUNT; i++)
        if (pb_metrics[i].machine)
            return &pb_metrics[i];
    return NULL;
}

const struct pb_metric *pb_metric_find(const char *name)
{
    for (size_t i = 0; name && i < PB_METRIC_COUNT; i++)
        if (strcmp(pb_metrics[i].name, name) == 0)
            return &pb_metrics[i];
    return NULL;
}

void pb_metric_names(char *buf, size_t buflen, const char *sep, enum pb_metric_filter filter)
{
    size_t used = 0;
    if (buflen)
        buf[0] = '\0';
    for (int m = 0; m < PB_METRIC_COUNT && used < buflen; m++) {
        const struct pb_metric *row = &pb_metrics[m];
        if ((filter == PB_METRICS_KEPT && !row->of_point) ||
            (filter == PB_METRICS_GATED && !row->gates) ||
            (filter == PB_METRICS_GATEABLE && row->machine))
            continue;
        int n = snprintf(buf + used, buflen - used, "%s%s", used ? sep : "", pb_metrics[m].name);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}
