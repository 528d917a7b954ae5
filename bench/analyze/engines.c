/* Two engines side by side (bench/analyze/engines.h). */
#include "bench/analyze/engines.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/base/engine_row.h"
#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/result/figures.h"

const char *pb_point_engine(const struct pb_result *result, size_t i)
{
    const char *e = json_string_value(pb_point_setting(result, i, "loader.engine"));
    return e ? e : pb_engine_pbench_row.name; /* loader.engine's default */
}

/* Whether points a and b differ in loader.engine and in no other axis. */
static bool engine_pair(const struct pb_result *r, size_t a, size_t b)
{
    const struct pb_point_result *pa = &r->points[a], *pb = &r->points[b];
    if (pa->repeat_count == 0 || pb->repeat_count == 0 || pa->error[0] || pb->error[0])
        return false;
    if (strcmp(pb_point_engine(r, a), pb_point_engine(r, b)) == 0)
        return false;
    const char *key;
    json_t *value;
    json_object_foreach(pa->axes, key, value) {
        if (strcmp(key, "loader.engine") != 0 && !json_equal(value, json_object_get(pb->axes, key)))
            return false;
    }
    return json_object_size(pa->axes) == json_object_size(pb->axes);
}

static const struct pb_stage_result *row(const struct pb_point_result *p, const char *name)
{
    for (size_t k = 0; k < p->stage_count; k++)
        if (!p->stages[k].parent[0] && strcmp(p->stages[k].name, name) == 0)
            return &p->stages[k];
    return NULL;
}

/* "decode 1.49 ms against 855 µs (1.7x), ..." over the stages both ran, in
 * CPU per sample (bench/result/figures.h: collate's per batch spread over
 * its samples),
 * kept in pipeline order (slowest ratio first would reorder the pipeline). */
static size_t stage_ratios(const struct pb_point_result *x, const struct pb_point_result *y,
                           char *out, size_t outlen)
{
    size_t used = 0;
    for (size_t k = 0; k < x->stage_count && used < outlen; k++) {
        const struct pb_stage_result *sx = &x->stages[k];
        const struct pb_stage_result *sy = sx->parent[0] ? NULL : row(y, sx->name);
        double cx = sy ? pb_point_stage_cpu_ns_per_sample(x, sx) : NAN;
        double cy = sy ? pb_point_stage_cpu_ns_per_sample(y, sy) : NAN;
        if (!(cx > 0) || !(cy > 0))
            continue;
        char a[32], b[32];
        pb_fmt_duration(a, sizeof a, cx);
        pb_fmt_duration(b, sizeof b, cy);
        used += (size_t)snprintf(out + used, outlen - used, "%s%s %s against %s (%.1fx)",
                                 used ? ", " : "", sx->name, a, b, cx / cy);
    }
    return used;
}

/* Samples per second of CPU: one core's worth over the point's CPU per
 * sample (bench/result/figures.h: its stages' thread CPU, the figure the
 * capacity line reads, not the whole process's); 0 where not known. */
static double per_core(const struct pb_point_result *p)
{
    double ns = pb_point_cpu_ns_per_sample(p);
    return ns > 0 ? 1e9 / ns : 0;
}

/* What feeding the step takes: the rate batch / step and the cores each
 * engine needs for it (pb_point_cores_needed, as the capacity line). */
static void feeding(const struct pb_result *r, size_t x, size_t y, char *out, size_t outlen)
{
    const struct pb_point_result *px = &r->points[x], *py = &r->points[y];
    double step_ms = pb_point_step_ms(r, x);
    double batch = (double)pb_point_batch_size(r, x);
    double rx = per_core(px), ry = per_core(py);
    if (rx <= 0 || ry <= 0) {
        out[0] = '\0';
        return;
    }
    struct pb_cores cx, cy;
    double need = step_ms > 0 ? batch * 1000.0 / step_ms : 0;
    if (!pb_point_cores_needed(px, need, &cx) ||
        !pb_point_cores_needed(py, need, &cy)) {
        snprintf(out, outlen,
                 "; per core of CPU the %s engine delivers %.0f samples/s and %s's %.0f (set "
                 "run.step_ms to your step to see how many cores each needs to keep it fed)",
                 pb_point_engine(r, x), rx, pb_point_engine(r, y), ry);
        return;
    }
    snprintf(out, outlen,
             "; a %.4g ms step at batch %.0f needs %.0f samples/s: at its %.0f samples/s per core "
             "the %s engine needs about %.1f cores, %s's at %.0f about %.1f (this machine has %d "
             "hardware threads)",
             step_ms, batch, need, rx, pb_point_engine(r, x), cx.cores, pb_point_engine(r, y), ry,
             cy.cores, r->machine.pus);
}

bool pb_engine_comparison(const struct pb_result *result, char *out, size_t outlen)
{
    if (outlen)
        out[0] = '\0';
    for (size_t i = 0; i < result->point_count; i++) {
        if (strcmp(pb_point_engine(result, i), "pbench") == 0)
            continue;
        for (size_t j = 0; j < result->point_count; j++) {
            if (strcmp(pb_point_engine(result, j), "pbench") != 0 || !engine_pair(result, i, j))
                continue;
            const struct pb_point_result *x = &result->points[i], *y = &result->points[j];
            char ratios[600], feed[400];
            if (stage_ratios(x, y, ratios, sizeof ratios) == 0)
                snprintf(ratios, sizeof ratios, "no stage timing on both (run.stage_timing)");
            feeding(result, i, j, feed, sizeof feed);
            double speed = y->samples_per_s > 0 ? x->samples_per_s / y->samples_per_s : 0;
            snprintf(out, outlen,
                     "the %s engine delivers %.1f samples/s, pbench's %.1f (%.2fx); CPU per "
                     "sample, %s against pbench: %s%s",
                     pb_point_engine(result, i), x->samples_per_s, y->samples_per_s, speed,
                     pb_point_engine(result, i), ratios, feed);
            return true;
        }
    }
    return false;
}
