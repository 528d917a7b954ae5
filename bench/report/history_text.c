/* history show as text (see history_text.h). */
#include "bench/report/history_text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/result/metrics.h"

/* The change of v against ref in the metric's unit: % or pp. */
static double change_of(const struct pb_history *h, double v, double ref)
{
    return h->absolute ? v - ref : ref != 0 ? 100 * (v / ref - 1) : 0;
}

/* What a step of series s means, after "STEP CHANGE: ...: ". */
static const char *step_meaning(const struct pb_history_series *s)
{
    return s->disturbed      ? "not counted: other processes shared the machine (below)"
           : s->machine_step ? "worse, but the machine moved with it (below): not counted as a "
                               "regression"
           : s->step_worse   ? "a REGRESSION (exit 3); bisect between this revision and the one "
                               "before"
                             : "an IMPROVEMENT (not a failure); the series' new level is from "
                               "here on";
}

/* The lines under a series' table: its step change, or that it has none,
 * and what the machine did across it. */
static void print_step(FILE *out, const struct pb_history *h, const struct pb_history_series *s)
{
    const char *unit = h->absolute ? "pp" : "%";
    if (s->step < 0) {
        fprintf(out, "  no step change beyond %.1f%s (needs %d runs in a row)\n", h->threshold_pct,
                unit, PB_STEP_MIN_RUNS);
        return;
    }
    char when[PB_PRINTABLE_SIZE(32)], rev[PB_PRINTABLE_SIZE(48)];
    const struct pb_history_run *at = &s->runs[s->step];
    fprintf(out,
            "  STEP CHANGE: from %s (revision %s) the median moved %+.1f%s (threshold %.1f%s, "
            "held for %zu runs): %s\n",
            pb_printable(when, sizeof(when), at->created),
            at->revision[0] ? pb_printable(rev, sizeof(rev), at->revision) : "?", s->step_pct,
            unit, h->threshold_pct, unit, s->run_count - (size_t)s->step, step_meaning(s));
    if (s->disturbed)
        fprintf(out,
                "  other processes took %.0f%% of the machine's CPU over the runs before it and "
                "%.0f%% from it (medians; %.0f%% disturbs a wall-clock figure): %s moves with "
                "them; CPU time per sample (history show --metric cpu_ns_per_sample) says "
                "whether the code changed\n",
                s->other_before, s->other_after, PB_BUSY_MACHINE_PCT, h->metric);
    if (!isnan(s->machine_shift_pct))
        fprintf(out,
                "  the machine's own reference workload (machine_ref_ns) moved %+.1f%% at the same "
                "run%s\n",
                s->machine_shift_pct,
                s->machine_step ? ": a slower runner, not the code; rerun on the old runner, or "
                                  "refresh the baseline for this one"
                                : ": the runner did not slow down");
}

/* Prints one series: its runs, each against the median before it and
 * with what other processes took of the machine, and its step change. */
static void print_series(FILE *out, const struct pb_history *h, const struct pb_history_series *s)
{
    size_t n = s->run_count;
    char shown[4][PB_PRINTABLE_SIZE(256)], when[PB_PRINTABLE_SIZE(32)];
    char rev[PB_PRINTABLE_SIZE(48)], key[256];
    pb_printable(shown[0], sizeof(shown[0]), s->config);
    pb_printable(shown[1], sizeof(shown[1]), s->machine);
    pb_printable(shown[2], sizeof(shown[2]), s->point);
    if (s->fingerprint[0])
        snprintf(key, sizeof(key), "fingerprint %.8s", s->fingerprint);
    else
        snprintf(key, sizeof(key), "no fingerprint: added before they were kept");
    pb_printable(shown[3], sizeof(shown[3]), key);
    const char *metric = h->metric;
    fprintf(out, "%s [%s] · %s · point %s · %s\n", shown[0], shown[3], shown[1], shown[2], metric);
    if (s->total > (long long)n)
        fprintf(out,
                "  the newest %zu of its %lld runs (show reads at most %d a series; the step is "
                "looked for among these)\n",
                n, s->total, PB_HISTORY_MAX_RUNS);
    fprintf(out, "  %-22s %-14s %17s %10s %10s\n", "measured", "revision", metric, "vs median",
            "other CPU");
    for (size_t i = 0; i < n; i++) {
        const struct pb_history_run *run = &s->runs[i];
        char other[16] = "-";
        if (!isnan(run->other_cpu))
            snprintf(other, sizeof(other), "%.0f%%", run->other_cpu);
        fprintf(out, "  %-22s %-14.14s %17.1f %+8.1f%s %10s%s\n",
                pb_printable(when, sizeof(when), run->created),
                pb_printable(rev, sizeof(rev), run->revision), run->value,
                change_of(h, run->value, pb_history_median_before(s, i)),
                h->absolute ? "pp" : "% ", other,
                s->step >= 0 && (size_t)s->step == i ? "  <- step change" : "");
    }
    print_step(out, h, s);
}

void pb_history_print(FILE *out, const struct pb_history *h)
{
    for (size_t i = 0; i < h->series_count; i++)
        print_series(out, h, &h->series[i]);
    char withheld[96] = "";
    if (h->disturbed)
        snprintf(withheld, sizeof(withheld), ", %d step(s) withheld (other processes)",
                 h->disturbed);
    fprintf(out, "%zu series of %s: %d regression step(s), %d improvement step(s)%s\n",
            h->series_count, h->metric, h->regressions, h->improvements, withheld);
}

int pb_history_show(const char *db_path, const char *config_name, const char *metric,
                    double threshold_pct, char *msg, size_t msglen)
{
    struct pb_history h;
    int rc = pb_history_load(db_path, config_name, metric, threshold_pct, &h, msg, msglen);
    if (rc != PB_OK)
        return rc;
    pb_history_print(stdout, &h);
    int regressions = h.regressions;
    pb_history_free(&h);
    return regressions;
}

int pb_history_gate(FILE *out, const char *db_path, const char *config_name, double threshold_pct,
                    char *msg, size_t msglen)
{
    int regressions = 0;
    if (out)
        fprintf(out, "the gate (what --fail-on-regression gates on, steps beyond %.1f%%; "
                     "percentage points for shares of time):\n",
                threshold_pct);
    for (int m = 0; m < PB_METRIC_COUNT; m++) {
        const struct pb_metric *metric = &pb_metrics[m];
        if (!metric->gates || !metric->of_point)
            continue;
        struct pb_history h;
        int rc = pb_history_load(db_path, config_name, metric->name, threshold_pct, &h, msg,
                                 msglen);
        if (rc != PB_OK)
            return rc;
        int steps = 0;
        for (size_t i = 0; i < h.series_count; i++) {
            const struct pb_history_series *s = &h.series[i];
            if (s->step < 0)
                continue;
            steps++;
            char point[PB_PRINTABLE_SIZE(256)], rev[PB_PRINTABLE_SIZE(48)];
            char why[200];
            if (s->disturbed)
                snprintf(why, sizeof(why),
                         "not counted: other processes took %.0f%% of the machine's CPU before "
                         "it and %.0f%% from it",
                         s->other_before, s->other_after);
            else if (s->machine_step)
                snprintf(why, sizeof(why),
                         "not counted: the machine's reference slowed %+.1f%% with it",
                         s->machine_shift_pct);
            else
                pb_strlcpy(why, step_meaning(s), sizeof(why));
            if (out)
                fprintf(out, "  %-18s %s point %s: %+.1f%s from revision %s: %s\n", metric->name,
                        s->fingerprint[0] ? s->fingerprint : s->config,
                        pb_printable(point, sizeof(point), s->point), s->step_pct,
                        h.absolute ? "pp" : "%",
                        s->runs[s->step].revision[0]
                            ? pb_printable(rev, sizeof(rev), s->runs[s->step].revision)
                            : "?",
                        why);
        }
        if (out && steps == 0)
            fprintf(out, "  %-18s no step in %zu series\n", metric->name, h.series_count);
        regressions += h.regressions;
        pb_history_free(&h);
    }
    if (out)
        fprintf(out, "%s\n", regressions ? "a regression step: history show exits 3"
                                          : "no regression step: history show exits 0");
    return regressions;
}

