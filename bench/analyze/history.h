/* Nightly history: each run's summary in an SQLite database, keyed by
 * machine, config and git revision, and step-change detection over it
 * (after asv: a shift of the median beyond the threshold that persists for
 * at least PB_STEP_MIN_RUNS runs). */
#ifndef PB_HISTORY_H
#define PB_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bench/analyze/steps.h"
#include "bench/result/metrics.h"
#include "bench/result/result.h"

/* Where history add and show, and compare's run-to-run noise, look for
 * the database unless told (--db). */
#define PB_HISTORY_DB "results/history.db"
/* history show --metric cpu_ns_per_sample.STAGE: a pipeline stage's CPU
 * time per sample, kept per run as compare gives it a row. */
#define PB_STAGE_CPU_PREFIX "cpu_ns_per_sample."
/* The runs of a series history show reads: the newest, when it has more. */
#define PB_HISTORY_MAX_RUNS 4096

/* Adds every point of result to the database at db_path, a file name or a
 * SQLite "file:" URI (created when missing). revision may be NULL. A point
 * already there under the same revision (the same result added again) is
 * not added twice. Returns PB_OK, or PB_ERR with SQLite's message and the
 * database. */
int pb_history_add(const char *db_path, const struct pb_result *result, const char *revision,
                   const char *source, char *msg, size_t msglen);

/* One run of a series as history show reads it. */
struct pb_history_run {
    char created[32];           /* when it was measured (result.created)  */
    char revision[48];          /* "" when none was recorded             */
    double value;               /* the metric; NaN when the row lacks it */
    double noise_pct;           /* the run's samples/s noise (CV, %); NaN unknown */
    double machine;             /* the machine's reference (machine_ref_ns); NaN unknown */
    /* Other processes' CPU (% of the machine) and steal over the run's
     * repeats (medians), and the share of its time a CPU quota throttled
     * it; NaN for rows added before they were kept. */
    double other_cpu, steal, throttled;
    /* Its stages' CPU time per sample as JSON, {"decode": ns, ...}; NULL
     * for rows added before they were kept; owned. */
    char *stages;
};

/* A stage's CPU time per sample across a change of a series (its step,
 * or its suspect newest run): the medians of the runs before and from it
 * (a stage a run lacks counts 0 there), and its share of the change of
 * the stages' sum. */
struct pb_history_stage_change {
    char stage[64];
    double before_ns, after_ns;
    bool absent_before, absent_after; /* no run before (from) it had it */
    size_t first_run;                 /* absent before: the first run with it */
    double share_pct;
};
#define PB_HISTORY_EXPLAINED 6
#define PB_HISTORY_BREAKS 6

/* A series: what was measured (a config fingerprint, machine included) at
 * one point, its runs in time order, and its step change. */
struct pb_history_series {
    char config[256], machine[256];
    char point[256];            /* the point's axes as JSON ("{}" for none) */
    char fingerprint[32];       /* "" for rows added before fingerprints   */
    char id[256];               /* the series key (internal)               */
    char *measured;             /* the newest run's measured settings as JSON
                                   (what the fingerprint hashes); NULL for
                                   rows added before they were kept; owned */
    long long total;            /* runs the series has in the database     */
    size_t run_count;           /* runs read: the newest PB_HISTORY_MAX_RUNS */
    struct pb_history_run *runs; /* oldest first, owned                    */
    long step;                  /* pb_history_step's index, -1 for none    */
    double step_pct;            /* the median's shift at the step          */
    bool step_worse;            /* the step makes the metric worse         */
    /* The machine's reference across the step: the median's shift from
     * the runs before to the runs from it (%, NaN unknown), and whether it
     * slowed by PB_MACHINE_CHANGE_PCT or more: a slower runner, whose
     * step is not counted as a regression of the code. */
    double machine_shift_pct;
    bool machine_step;
    /* A wall-clock metric's step (bench/result/metrics.h) where other
     * processes took PB_BUSY_MACHINE_PCT of the machine (or steal, or a CPU
     * quota throttled the runs) before or from it: the medians of the runs
     * before and from the step (NaN unknown), and whether that withholds
     * the step, which then counts as neither regression nor improvement. */
    double other_before, other_after;
    bool disturbed;
    char engine[16];            /* the engine that measured it (its row's
                                   name); "" unknown (older rows)          */
    /* The newest run against the runs before it (from the step, when there
     * is one; bench/analyze/steps.h): suspect when it is worse and outside
     * the series' run-to-run noise by more than the threshold, unless other
     * processes took the machine during it (a wall-clock metric). One night
     * is not a step; two in a row make one. */
    struct pb_suspect newest;
    bool suspect;
    /* The first run with a value (a stage's metric: the runs before it did
     * not run the stage); 0 when the first run has one. */
    size_t first_with_value;
    /* The stages that explain the suspect newest run, else the step,
     * largest change first (those moving the stages' sum by a fifth of
     * the threshold or more), and the run the change starts at. */
    int explained_count;
    struct pb_history_stage_change explained[PB_HISTORY_EXPLAINED];
    size_t explained_from;
    /* A break in the series: the same config name, machine and point was
     * measured differently before this series (another fingerprint, every
     * run of it older than this one's first), with what changed, as
     * compare words it (bench/analyze/config_diff.h); break_count 0 when
     * none, break_more the changes past PB_HISTORY_BREAKS. */
    char break_from[32];        /* the earlier series' fingerprint         */
    char break_revision[48];    /* its newest run's revision               */
    int break_count, break_more;
    char breaks[PB_HISTORY_BREAKS][200];
};

/* Whether s's step counts as a regression: worse, and neither a slower
 * machine nor other processes moved it. */
static inline bool pb_history_step_counts(const struct pb_history_series *s)
{
    return s->step >= 0 && s->step_worse && !s->machine_step && !s->disturbed;
}

/* What history show reads: every series of one metric. */
struct pb_history {
    char metric[64], unit[16];
    bool higher_is_better;
    bool absolute;              /* steps in percentage points (stall)      */
    bool wall_clock;            /* other processes move it (metrics.h)     */
    double threshold_pct;
    size_t series_count;
    struct pb_history_series *series; /* owned                             */
    int regressions, improvements;    /* steps that make the metric worse, better */
    int disturbed;                    /* steps withheld: other processes moved them */
    int suspects;                     /* series whose newest run is suspect  */
};

/* Reads the series of metric from the database at db_path (optionally
 * only config_name's) into h, each with its step change beyond
 * threshold_pct and whether its newest run is suspect, as pb_history_show
 * describes. PB_OK; PB_ERR_CONFIG for a metric history does not keep, or
 * a stage (cpu_ns_per_sample.STAGE) no run read has, with the names known;
 * PB_ERR for a missing, unreadable or empty history, with the message. On
 * success the caller frees h with
 * pb_history_free. */
int pb_history_load(const char *db_path, const char *config_name, const char *metric,
                    double threshold_pct, struct pb_history *h, char *msg, size_t msglen);
void pb_history_free(struct pb_history *h);

/* The median of series s's values before run i, the runs without one
 * left out (run 0's own value for i = 0; NaN when no run before has
 * one): what a run is compared with. */
double pb_history_median_before(const struct pb_history_series *s, size_t i);

/* The run-to-run spread of result's point i in the history at db_path: for
 * each metric of the table (bench/result/metrics.h) that history keeps, the
 * standard deviation of one run's value, robustly from the differences of
 * consecutive runs (median |difference| / 0.954, which is the SD for normal
 * noise and ignores a rare step), in % of the series' median (pp for an
 * absolute metric), over the newest PB_SPREAD_RUNS runs of the series with
 * the same fingerprint and point; NaN where the series has fewer than
 * PB_SPREAD_MIN_RUNS. *runs gets the series' runs read (0: no history, or
 * no database at db_path, which is no error). */
#define PB_SPREAD_RUNS 30
int pb_history_run_spread(const char *db_path, const struct pb_result *result, size_t point,
                          double spread[PB_METRIC_COUNT], int *runs);

/* The revision a run is filed under when none is given: $GITHUB_SHA, else
 * `git rev-parse --short HEAD` in the current folder, else "". */
void pb_history_revision(char *buf, size_t buflen);

/* `pbench history add`: reads the result file at path and adds it (as
 * pb_history_add) under revision, or pb_history_revision()'s when NULL. A
 * result whose figures are partial (the run interrupted, a point failed, a
 * repeat cut short, a point without a complete repeat) is refused with the
 * reason unless force. On success writes "added N point(s) of NAME (CREATED, revision REV) to DB"
 * into summary, or "NAME (CREATED, revision REV) is already in the history
 * DB; nothing added". Returns PB_OK or PB_ERR with msg. */
int pb_history_add_file(const char *db_path, const char *path, const char *revision, bool force,
                        char *summary, size_t summarylen, char *msg, size_t msglen);

/* Writes the names of the metrics history keeps (a column each, those of
 * bench/result/metrics.h with a point value), joined by sep, into buf. */
void pb_history_metric_names(char *buf, size_t buflen, const char *sep);

#endif
