/* Analysis of a result: per point, how input-bound the training loop is
 * and where the loader's time goes; across points, how throughput scales
 * with workers; and which point to use, with the rule that chose it and
 * suggestions tied to the measured bottleneck. Everything here is computed
 * from a struct pb_result alone, so `pbench report` on a saved file gives
 * the same analysis as the run that wrote it. */
#ifndef PB_ANALYSIS_H
#define PB_ANALYSIS_H

#include <stdbool.h>

#include <jansson.h>

#include "bench/base/opt.h"
#include "bench/result/result.h"

/* The verdict's thresholds: a config's `analysis:` section, with these
 * defaults (pb_analysis_opts, so `pbench list analysis` shows them).
 * input_bound_*: the share of the training loop's time spent waiting for
 * input, as TensorFlow's input-pipeline analyzer states it. tie_pct:
 * points within this much of the best throughput (or within the best
 * point's noise, if larger) count as equally fast. accel_util_target_pct:
 * with a simulated step, the accelerator utilization to keep (MLPerf
 * Storage's rule). knee_doubling_gain: doubling workers should give at
 * least this much more throughput (1.5 = +50%); the knee is the first
 * worker count after which it does not. */
struct pb_analysis_spec {
    double input_bound_high_pct;     /* 20 */
    double input_bound_moderate_pct; /* 5  */
    double tie_pct;                  /* 3  */
    double accel_util_target_pct;    /* 90 */
    double knee_doubling_gain;       /* 1.5 */
    double memory_growth_mib;        /* 1: RSS growth per 1000 batches to warn about */
};
extern const struct pb_opt pb_analysis_opts[];

#define PB_CPU_BOUND_PCT 80.0

enum pb_input_bound { PB_INPUT_BOUND_NO = 0, PB_INPUT_BOUND_MODERATE, PB_INPUT_BOUND_HIGH };

struct pb_point_analysis {
    bool usable;              /* has measured repeats and did not fail     */
    int input_bound;          /* enum pb_input_bound                       */
    char verdict[200];
    int top_stage;            /* index in point->stages, -1 when none      */
    double top_share_pct;     /* of the workers' stage CPU time (else wall) */
    bool top_share_of_cpu;    /* false: the stages carry no CPU times      */
    /* With a simulated step the loop cannot pass batch_size / step_ms
     * samples/s; at_step_cap: utilization reached its target. */
    double step_cap_samples_per_s; /* 0 without a step                     */
    bool at_step_cap;
    bool cpu_bound;           /* workers on CPU most of the wall time      */
    bool saturated;           /* the process keeps every hardware thread busy */
    bool oversubscribed;      /* more workers than hardware threads        */
    char bottleneck[320];
    int64_t workers, batch_size, prefetch_factor;
    uint64_t memory_bytes;    /* peak RSS + pinned                         */
    double efficiency_pct;    /* vs calibrated single-core rate x workers; <0 unknown */
    bool calibration_suspect; /* over 100%, or calibrated on a busy machine */
    /* Video: decode amplification (frames decoded / delivered) and the
     * decode ceiling: the delivered frames/s that decoding alone would
     * allow, = workers x decoded frames/s of one worker / amplification.
     * The per-frame decode time (demux + decode) comes from the
     * calibration when there is one (uncontended), else from this run.
     * Zero when the pipeline reports no such counters. */
    double amplification;
    double decoded_fps_per_worker;
    bool decode_rate_calibrated;
    double ceiling_frames_per_s, delivered_frames_per_s, ceiling_pct;
};

/* Point p's CPU stage (not a GPU row) of that name, or NULL. */
const struct pb_stage_result *pb_analysis_find_stage(const struct pb_point_result *p,
                                                     const char *name);

/* Stage s's counter of that name into *value; false when it has none. */
bool pb_analysis_counter(const struct pb_stage_result *s, const char *name, double *value);

/* Stage s's counter of that name; 0 when s is NULL or has none. */
uint64_t pb_analysis_count(const struct pb_stage_result *s, const char *name);

/* Decode amplification and per-frame decode time of a point's stages:
 * returns false when the stages carry no frames_decoded/frames_delivered
 * counters or demux/decode sub-stages. */
bool pb_decode_figures(const struct pb_point_result *p, double *amplification,
                       double *ns_per_decoded_frame, double *frames_per_sample);

struct pb_analysis {
    size_t point_count;
    struct pb_point_analysis *points;
    int recommended;          /* point index, -1 when none is usable       */
    char rule[400];           /* the rule, printed beside the choice       */
    char reason[700];         /* why this point, with its figures          */
    /* Non-empty: the recommendation is withheld, and why (a wrapped job's
     * sweep disturbed by other processes). recommended is then the point
     * the rule would pick, whose figures the verdict still describes; the
     * sinks mark no point recommended. */
    char withheld[800];
    char scaling[600];        /* knee and efficiency per worker, or ""     */
    /* Two engines side by side (a sweep over loader.engine): where the
     * other loses, stage by stage, and what each needs to keep the step
     * fed (bench/analyze/engines.h); "" otherwise. */
    char engines[1100];
    /* With a training step: the samples/s the step needs, the per-core
     * rate (calibrated, else this run's), the cores that implies against
     * the machine's; "" without a step. */
    char capacity[500];
    /* The run's verdict, of the recommended point (a single run's only
     * point): input-bound class and dominant stage; "" when none. */
    char verdict[600];
    int suggestion_count;
    /* Each quotes its figures and ends with the commands that test it: a
     * video decode's holds three, two of them compares naming the config
     * twice (paths up to 120 characters are quoted whole), about 1150
     * characters at most. */
    char suggestions[8][1280];
    /* The thresholds it was made with: the result's config's analysis
     * section, defaults for what it does not say (older results). */
    struct pb_analysis_spec thresholds;
};

/* The figures of every point of result into out (release with
 * pb_analysis_free): each point's class and top stage, the recommended
 * point, scaling and the engines line; no suggestions or verdict (those
 * are pb_analyze's, bench/analyze/verdict.h). A point whose repeats failed
 * or that has none is not usable and never recommended. */
int pb_analysis_points(const struct pb_result *result, struct pb_analysis *out);

/* The usable points whose axes match base's in all but loader.workers (at
 * most max of them, into series), in order of workers; returns their count. */
int pb_analysis_worker_series(const struct pb_result *result, const struct pb_analysis *an,
                              size_t base, int *series, int max);

/* The point the sinks mark recommended: an->recommended, or -1 where the
 * recommendation is withheld (an->withheld) or there is none. */
static inline int pb_analysis_marked(const struct pb_analysis *an)
{
    return an && !an->withheld[0] ? an->recommended : -1;
}

/* Point `point`'s run.step_ms (0: no simulated step). */
double pb_analysis_step_ms(const struct pb_result *result, size_t point);
void pb_analysis_free(struct pb_analysis *analysis);
json_t *pb_analysis_to_json(const struct pb_analysis *analysis);

/* Whether point's samples/s noise can be judged: from the spread of two or
 * more complete repeats, or with one repeat from its throughput windows
 * (the stopping rule computed their noise: 2 windows or more). windows
 * receives the single repeat's estimated window count (0 with two or
 * more repeats). */
bool pb_point_noise_known(const struct pb_result *result, size_t point, int *windows);

/* A point's settings (pb_point_setting and the like) are read with
 * bench/result/result.h's functions. */

#endif
