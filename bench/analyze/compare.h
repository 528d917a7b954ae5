/* Before/after comparison of two results with statistics a reviewer can
 * trust (docs/statistics.md says why these).
 *
 * Points are matched by their axes. For each matched point and metric the
 * replicates are the repeats (never the batches, which are correlated):
 * the change is the ratio of the medians, its 95% confidence interval comes
 * from a bootstrap over the repeats, and significance from a two-sided
 * Mann-Whitney U test (exact for small samples). A change counts only when
 * it is significant AND at least the practical threshold. */
#ifndef PB_COMPARE_H
#define PB_COMPARE_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "bench/result/metrics.h"
#include "bench/result/result.h"

/* DISTURBED: a wall-clock metric's verdict withheld because other
 * processes took a material share of the machine on a side (see struct
 * pb_interference); its change and interval are still given. */
enum pb_verdict { PB_VERDICT_SAME = 0, PB_VERDICT_IMPROVED, PB_VERDICT_REGRESSED,
                  PB_VERDICT_AMBIGUOUS, PB_VERDICT_DISTURBED };

/* What other processes took of the machine on each side of a point's
 * comparison, over its repeats (median, and the range), and whether that
 * disturbs the wall-clock verdicts: a side at PB_BUSY_MACHINE_PCT or more
 * of the machine's CPU (or PB_STEAL_PCT of steal). CPU time per sample and
 * memory are compared either way. */
struct pb_interference {
    double base_other, base_other_lo, base_other_hi, base_steal;
    double next_other, next_other_lo, next_other_hi, next_steal;
    /* The machine itself: the reference workload's change from base to new
     * (%, NAN unknown), the share of time each side's cgroup was throttled
     * by a CPU quota, and whether either changed the machine under the
     * code: a reference change past PB_MACHINE_CHANGE_PCT (its interval
     * excluding 0) withholds CPU per sample too; a quota, the wall clock. */
    double machine_change_pct, base_throttled, next_throttled;
    bool machine_changed, throttled;
    /* The GPU: repeats NVML found slowed down (power cap, thermal,
     * hardware slowdown) on each side; half or more of a side's repeats
     * slowed withholds the wall-clock verdicts, as a CPU quota does. */
    int base_gpu_slowed, next_gpu_slowed, base_repeats, next_repeats;
    bool gpu_slowed;
    bool disturbed;
    /* An --ideal comparison: its new side ran no loader, so no CPU per
     * sample is compared either; what the text says is still compared. */
    bool no_loader;
};

#define PB_COMPARE_ALPHA 0.05
/* Every row of bench/result/metrics.h, then CPU time per sample of up to
 * PB_COMPARE_STAGES pipeline stages either side ran ("cpu_ns_per_sample.
 * decode"): where the work per sample changed, by stage. A stage one side
 * alone ran is a row of its own, added or removed. */
#define PB_COMPARE_STAGES 16
#define PB_COMPARE_METRICS (PB_METRIC_COUNT + PB_COMPARE_STAGES)
#define PB_BOOTSTRAP_RESAMPLES 4000
#define PB_COMPARE_POWER 0.80      /* the detection rate "detectable" means */
#define PB_COMPARE_MAX_REPEATS 1000 /* run.repeats' upper bound              */

struct pb_metric_cmp {
    char name[96];             /* "samples_per_s", ..., "cpu_ns_per_sample.decode" */
    /* Its row of the metric table; NULL for a stage's CPU time per sample
     * (stage names the stage), which is compared as cpu_ns_per_sample is
     * and gates only when named (--gate cpu_ns_per_sample.decode). */
    const struct pb_metric *row;
    char stage[64];
    const char *unit;
    bool higher_is_better;
    bool absolute;             /* change in percentage points (stall)      */
    double base, next;         /* medians over repeats                     */
    double change_pct;         /* (next/base - 1) * 100, or next - base     */
    double ci_low_pct, ci_high_pct;
    double p_value;
    int base_n, next_n;
    enum pb_verdict verdict;
    /* A memory regression that comes with a change of loader settings (more
     * workers or prefetch hold more batches): reported as the setting's
     * cost, not counted in regressions. */
    bool cost_of_setting;
    /* The machine's figure (bench/result/metrics.h): shown, not counted. */
    bool machine;
    /* Whether --fail-on-regression fails on this metric (its table row's
     * default, or named with --gate: pb_comparison_gate). */
    bool gated;
    /* What the data could detect (docs/statistics.md, "What a comparison
     * can detect"). */
    double min_p;              /* smallest p Mann-Whitney can give at n vs m */
    double noise;              /* pooled SD of one repeat, % of the base
                                  median (pp for stall); NAN below 2 a side */
    double detectable;         /* smallest change found 80% of the time, in
                                  % (pp); INFINITY when min_p >= alpha; NAN
                                  when the noise is unknown                  */
    int repeats_to_decide;     /* ambiguous only: repeats per side that would
                                  decide it; -1 more than
                                  PB_COMPARE_MAX_REPEATS (or run to run
                                  noise no repeats lower); 0 when not
                                  ambiguous                                  */
    /* Two runs compared from their files: the series' run-to-run spread
     * from history (SD of one run's value, % or pp; NAN where history has
     * none), from run_noise_runs runs. Repeats within one run share the
     * machine's state and miss it, so where it is the larger noise the
     * interval is widened to it: change +- z sqrt(2) run_noise. */
    double run_noise;
    int run_noise_runs;
    /* A stage's row where one side alone ran the stage: added (the new
     * side's only: base 0) or removed (the base's only: new 0). Its change
     * has no ratio (change_pct NAN); its verdict is regressed (added) or
     * improved (removed) when it moves the pipeline's CPU per sample as a
     * stage's change must to count, else same. */
    bool added, removed;
    /* A stage's row: its share of its side's pipeline CPU per sample (%,
     * the new side's, or the base's for a removed stage); NAN unknown. */
    double share_pct;
};

/* The stages that explain a change of the pipeline's CPU per sample, in
 * order of their share of it: the stage rows that moved with it (added
 * stages included) by a fifth of the threshold of the base's pipeline or
 * more. */
struct pb_cpu_explanation {
    double change_ns;          /* the pipeline's: new - base median, NAN unknown */
    double change_pct;
    int count;
    int metric[PB_COMPARE_STAGES]; /* index into the point's metrics        */
    double share_pct[PB_COMPARE_STAGES]; /* of change_ns                    */
};

struct pb_point_cmp {
    char label[256];           /* the axes, "k=v, ..." or "(single point)" */
    size_t base_index, next_index;
    int metric_count;
    struct pb_metric_cmp metrics[PB_COMPARE_METRICS];
    struct pb_interference interference;
    struct pb_cpu_explanation explained;
};

/* The pipeline stages a side ran (on the CPU, sub-stages aside), over all
 * its points: what --gate cpu_ns_per_sample.STAGE may name. */
#define PB_COMPARE_STAGE_NAMES 64
struct pb_stage_names {
    int count;
    char names[PB_COMPARE_STAGE_NAMES][64];
};

struct pb_comparison {
    double threshold_pct;
    size_t point_count;
    struct pb_point_cmp *points;
    int unmatched;             /* points in one result but not the other   */
    int difference_count;      /* what differs between the two runs        */
    char differences[24][300];
    bool incompatible;         /* machine or config differs (needs --force) */
    int setting_costs;         /* memory regressions a setting change explains */
    /* Loader settings that differ (workers, batch size, prefetch, ...): the
     * same work loaded another way, which is what a before/after of loader
     * settings compares; listed, not refused. */
    int setting_change_count;
    char setting_changes[12][300];
    bool loader_changed;       /* one of them is a loader.* setting          */
    int regressions, improvements, ambiguous;
    int gated_regressions;     /* the regressions --fail-on-regression fails on */
    int disturbed;             /* wall-clock verdicts withheld (interference) */
    int gated_withheld;        /* of them, gated ones: the gate is inconclusive */
    bool interleaved;          /* two configs measured in interleaved rounds */
    /* The history database looked in for the run-to-run spread ("": none
     * was given), and the most runs a point's series had there. */
    char history_db[256];
    int history_runs;
    struct pb_stage_names base_stages, next_stages;
};

/* Compares next against base. Returns PB_OK; fills out (release with
 * pb_comparison_free). out->incompatible says whether the machine or the
 * measured config differ, with each difference listed. */
int pb_compare(const struct pb_result *base, const struct pb_result *next, double threshold_pct,
               struct pb_comparison *out);
/* pb_compare for two configs measured in one interleaved session
 * (pbench compare BASE.yaml NEW.yaml): every config difference is the
 * change under test, listed as a setting change, never refused. */
int pb_compare_configs(const struct pb_result *base, const struct pb_result *next,
                       double threshold_pct, struct pb_comparison *out);
/* pb_compare for two separate runs (two result files, or a run against
 * its --baseline): where the history database at history_db (NULL: none)
 * holds the base's series (its fingerprint and point), each metric's
 * run-to-run spread widens its interval when it is larger than the
 * repeats' own (struct pb_metric_cmp, run_noise). */
int pb_compare_runs(const struct pb_result *base, const struct pb_result *next,
                    double threshold_pct, const char *history_db, struct pb_comparison *out);
void pb_comparison_free(struct pb_comparison *cmp);

/* Adds the metrics named in names (comma separated, as --gate takes them:
 * a row of the metric table, or cpu_ns_per_sample.STAGE) to those the gate
 * fails on, and counts cmp->gated_regressions again. PB_OK, or
 * PB_ERR_CONFIG with msg naming an unknown metric and the allowed ones, or
 * (where cmp compared points) a stage neither side ran and the stages
 * each side ran: a gate that names nothing must not pass in silence.
 * names may be NULL (the table's defaults only). */
int pb_comparison_gate(struct pb_comparison *cmp, const char *names, char *msg, size_t msglen);

const char *pb_verdict_name(enum pb_verdict verdict);

/* A metric neither side measured (accelerator utilization without a step,
 * the machine's reference in results from before it): shown as "not
 * measured", left out of the counts and the notes. */
static inline bool pb_metric_cmp_measured(const struct pb_metric_cmp *mc)
{
    return mc->base_n > 0 && mc->next_n > 0;
}
/* Its verdict's name, "not measured" for such a metric. */
const char *pb_metric_cmp_verdict(const struct pb_metric_cmp *mc);
json_t *pb_comparison_to_json(const struct pb_comparison *cmp);
/* The smallest two-sided p-value the Mann-Whitney test can give for n
 * against m repeats (the two samples fully apart, no ties). 3 against 3
 * gives 0.1, so no change can be significant at alpha 0.05. NAN when n or
 * m is 0. */
double pb_compare_min_p(size_t n, size_t m);

/* The fewest repeats per side with which Mann-Whitney can reach p < alpha
 * at all (4: 2/70 = 0.029). */
int pb_compare_min_repeats(void);

/* Parses a practical threshold, "5%" or "5", into percent (0 <= t < 1000).
 * Returns PB_OK or PB_ERR_CONFIG. */
int pb_threshold_parse(const char *text, double *threshold_pct);

/* Reads the result files at base_path and next_path and compares them into
 * out (as pb_compare_runs, with history_db; release with
 * pb_comparison_free). Returns PB_OK, or PB_ERR with msg
 * naming the unreadable file, or PB_ERR_NOMEM ("out of memory"). */
int pb_compare_files(const char *base_path, const char *next_path, double threshold_pct,
                     const char *history_db, struct pb_comparison *out, char *msg,
                     size_t msglen);

#endif
