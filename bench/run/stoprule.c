/* The stopping rule of a repeat's measured part (bench/run/stoprule.h): plain data in
 * and out, no clock read and no lock taken. */
#include "bench/run/stoprule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/base/stats.h"

int pb_stoprule_init(struct pb_stoprule *rule, const struct pb_run_spec *run)
{
    memset(rule, 0, sizeof(*rule));
    rule->min_time_s = run->min_time_s;
    rule->max_time_s = run->max_time_s;
    rule->target_noise = run->target_noise;
    rule->window_ns = (uint64_t)(run->window_s * 1e9);
    rule->min_samples = (uint64_t)run->min_samples;
    rule->noise_windows = (uint64_t)(run->min_time_s / run->window_s);
    if (rule->noise_windows < PB_STOPRULE_MIN_WINDOWS)
        rule->noise_windows = PB_STOPRULE_MIN_WINDOWS;
    rule->cap = (size_t)(run->max_time_s / run->window_s) + 16;
    rule->throughput = calloc(rule->cap, sizeof(double));
    rule->noise = INFINITY;
    return rule->throughput ? PB_OK : PB_ERR_NOMEM;
}

void pb_stoprule_free(struct pb_stoprule *rule)
{
    free(rule->throughput);
    rule->throughput = NULL;
    rule->cap = rule->count = 0;
}

void pb_stoprule_start(struct pb_stoprule *rule, uint64_t start_ns)
{
    rule->count = 0;
    rule->start_ns = rule->window_start_ns = start_ns;
    rule->window_start_samples = rule->window_start_batches = 0;
    rule->samples = rule->batches = 0;
    rule->noise = INFINITY;
    rule->reason = PB_STOP_NONE;
}

bool pb_stoprule_batch(struct pb_stoprule *rule, uint64_t done_ns, uint64_t samples)
{
    rule->samples += samples;
    rule->batches++;
    if (done_ns - rule->window_start_ns >= rule->window_ns &&
        rule->batches - rule->window_start_batches >= 2) {
        if (rule->count < rule->cap)
            rule->throughput[rule->count++] = (double)(rule->samples - rule->window_start_samples) *
                                              1e9 / (double)(done_ns - rule->window_start_ns);
        rule->window_start_ns = done_ns;
        rule->window_start_samples = rule->samples;
        rule->window_start_batches = rule->batches;
    }
    double elapsed_s = (double)(done_ns - rule->start_ns) / 1e9;
    size_t last = rule->count < rule->noise_windows ? rule->count : (size_t)rule->noise_windows;
    rule->noise = pb_cv(rule->throughput + (rule->count - last), last);
    if (elapsed_s >= rule->min_time_s && rule->samples >= rule->min_samples &&
        rule->count >= PB_STOPRULE_MIN_WINDOWS && rule->noise <= rule->target_noise) {
        rule->reason = PB_STOP_STABLE;
        return true;
    }
    if (elapsed_s >= rule->max_time_s) {
        rule->reason = PB_STOP_TIME_CAP;
        return true;
    }
    return false;
}

void pb_stoprule_end(struct pb_stoprule *rule, enum pb_stop_reason reason)
{
    if (rule->reason == PB_STOP_NONE)
        rule->reason = reason;
}

bool pb_stoprule_noisy(const struct pb_stoprule *rule)
{
    return rule->reason == PB_STOP_TIME_CAP && !(rule->noise <= rule->target_noise);
}

double pb_stoprule_noise(const struct pb_stoprule *rule)
{
    return isfinite(rule->noise) ? rule->noise : 0;
}

const char *pb_stop_reason_name(enum pb_stop_reason reason)
{
    switch (reason) {
    case PB_STOP_NONE: return "none";
    case PB_STOP_STABLE: return "stable";
    case PB_STOP_TIME_CAP: return "time_cap";
    case PB_STOP_DATA_END: return "data_end";
    case PB_STOP_INTERRUPTED: return "interrupted";
    case PB_STOP_FAILED: return "failed";
    case PB_STOP_STUCK: return "stuck";
    }
    return "unknown";
}
