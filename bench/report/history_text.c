/* history show as text (see history_text.h). */
#include "bench/report/history_text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/result/metrics.h"

/* The change of v against ref in the metric's unit: % or pp. */
static double change_of(const struct pb_history *h, double v, double ref)
{
    return h->absolute ? v - ref : ref != 0 ? 100 * (v / ref - 1) : 0;
}

/* A CPU time per sample for a sentence: "340.0 us" or "3.30 ms". */
static const char *ns_text(char *buf, size_t size, double ns)
{
    if (ns >= 1e6)
        snprintf(buf, size, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, size, "%.1f µs", ns / 1e3);
    return buf;
}

/* The stages that explain a series' change (struct pb_history_series),
 * after "  ": "the stages that explain it ...: GaussianBlur new (absent
 * before run 4) +340.0 us a sample (97%); ...". */
static void print_explained(FILE *out, const struct pb_history_series *s)
{
    if (s->explained_count == 0)
        return;
    fprintf(out, "  the stages that explain it (CPU per sample, run %zu against the runs before; "
                 "largest share first):",
            s->explained_from + 1);
    for (int k = 0; k < s->explained_count; k++) {
        const struct pb_history_stage_change *c = &s->explained[k];
        char name[PB_PRINTABLE_SIZE(64)], by[32], absent[64] = "";
        double before = isnan(c->before_ns) ? 0 : c->before_ns;
        double after = isnan(c->after_ns) ? 0 : c->after_ns;
        if (c->absent_before)
            snprintf(absent, sizeof(absent), " new (absent before run %zu)", c->first_run + 1);
        else if (c->absent_after)
            snprintf(absent, sizeof(absent), " removed");
        fprintf(out, "%s %s%s %s%s a sample", k ? ";" : "",
                pb_printable(name, sizeof(name), c->stage), absent, after >= before ? "+" : "-", ns_text(by, sizeof(by), fabs(after - before)));
        if (!isnan(c->share_pct))
            fprintf(out, " (%.0f%% of the change)", c->share_pct);
    }
    fputc('\n', out);
}

/* A break in the series: the config measured differently from this
 * series' first run on, and what changed. */
static void print_break(FILE *out, const struct pb_history_series *s)
{
    if (s->break_count == 0)
        return;
    char when[PB_PRINTABLE_SIZE(32)], rev[PB_PRINTABLE_SIZE(48)], text[PB_PRINTABLE_SIZE(200)];
    fprintf(out,
            "  BREAK in the series: from %s on this config is measured differently than in "
            "its series [fingerprint %.8s] (newest run: revision %s), so its runs start a new "
            "series here, not a step; what changed:",
            pb_printable(when, sizeof(when), s->runs[0].created), s->break_from,
            s->break_revision[0] ? pb_printable(rev, sizeof(rev), s->break_revision) : "?");
    for (int k = 0; k < s->break_count; k++)
        fprintf(out, "%s %s", k ? ";" : "", pb_printable(text, sizeof(text), s->breaks[k]));
    if (s->break_more)
        fprintf(out, "; and %d more", s->break_more);
    fputc('\n', out);
}

/* The line of a suspect newest run: what it moved, against what noise,
 * and the exit code. */
static void print_suspect(FILE *out, const struct pb_history *h, const struct pb_history_series *s)
{
    if (!s->suspect)
        return;
    const char *unit = pb_fmt_change_unit(h->absolute);
    const struct pb_history_run *last = &s->runs[s->run_count - 1];
    char when[PB_PRINTABLE_SIZE(32)], rev[PB_PRINTABLE_SIZE(48)], noise[160];
    if (isnan(s->newest.noise))
        snprintf(noise, sizeof(noise), "past the %.1f%s threshold (the series' run-to-run noise "
                                       "is not known under %d runs)",
                 h->threshold_pct, unit, PB_SPREAD_MIN_RUNS);
    else
        snprintf(noise, sizeof(noise), "past the %.1f%s threshold by more than %.0f times the "
                                       "series' run-to-run noise of ±%.1f%s",
                 h->threshold_pct, unit, PB_SUSPECT_SIGMAS, s->newest.noise, unit);
    fprintf(out,
            "  SUSPECT: the newest run (%s, revision %s) moved %+.1f%s against the median of the "
            "%zu runs before it, %s: one night, not yet a step (%d in a row make one); history "
            "show exits 5\n",
            pb_printable(when, sizeof(when), last->created),
            last->revision[0] ? pb_printable(rev, sizeof(rev), last->revision) : "?",
            s->newest.change, unit, s->newest.before, noise,
            PB_STEP_MIN_RUNS);
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
    const char *unit = pb_fmt_change_unit(h->absolute);
    if (s->step < 0) {
        fprintf(out, "  no step change beyond %.1f%s (needs %d runs in a row)\n", h->threshold_pct,
                unit, PB_STEP_MIN_RUNS);
        print_suspect(out, h, s);
        print_explained(out, s);
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
    print_suspect(out, h, s);
    print_explained(out, s);
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
    char engine[PB_PRINTABLE_SIZE(16)];
    fprintf(out, "%s [%s] · engine %s · %s · point %s · %s\n", shown[0], shown[3],
            s->engine[0] ? pb_printable(engine, sizeof(engine), s->engine) : "unknown", shown[1],
            shown[2], metric);
    print_break(out, s);
    if (s->total > (long long)n)
        fprintf(out,
                "  the newest %zu of its %lld runs (show reads at most %d a series; the step is "
                "looked for among these)\n",
                n, s->total, PB_HISTORY_MAX_RUNS);
    fprintf(out, "  %-22s %-14s %17s %10s %10s\n", "measured", "revision", metric, "vs median",
            "other CPU");
    for (size_t i = 0; i < n; i++) {
        const struct pb_history_run *run = &s->runs[i];
        char other[16] = "-", value[32] = "absent", versus[32] = "-";
        if (!isnan(run->other_cpu))
            snprintf(other, sizeof(other), "%.0f%%", run->other_cpu);
        double before = pb_history_median_before(s, i);
        if (!isnan(run->value))
            snprintf(value, sizeof(value), "%.1f", run->value);
        if (!isnan(run->value) && !isnan(before))
            snprintf(versus, sizeof(versus), "%+.1f%s", change_of(h, run->value, before),
                     h->absolute ? "pp" : "% ");
        else if (!isnan(run->value) && i > 0)
            snprintf(versus, sizeof(versus), "new");
        fprintf(out, "  %-22s %-14.14s %17s %10s %10s%s\n",
                pb_printable(when, sizeof(when), run->created),
                pb_printable(rev, sizeof(rev), run->revision), value, versus, other,
                s->step >= 0 && (size_t)s->step == i ? "  <- step change"
                : s->suspect && i + 1 == n          ? "  <- suspect"
                                                    : "");
    }
    if (s->first_with_value > 0 && s->first_with_value < n)
        fprintf(out, "  absent before run %zu (%s): the runs before it did not run it\n",
                s->first_with_value + 1,
                pb_printable(when, sizeof(when), s->runs[s->first_with_value].created));
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
    fprintf(out, "%zu series of %s: %d regression step(s), %d improvement step(s)%s, %d suspect "
                 "newest run(s)\n",
            h->series_count, h->metric, h->regressions, h->improvements, withheld, h->suspects);
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

/* The gate's line for series s of metric's history h with a step: the
 * step, its revision and what it means. */
static void gate_step_line(FILE *out, const struct pb_history *h,
                           const struct pb_history_series *s)
{
    char point[PB_PRINTABLE_SIZE(256)], rev[PB_PRINTABLE_SIZE(48)], why[200];
    if (s->disturbed)
        snprintf(why, sizeof(why),
                 "not counted: other processes took %.0f%% of the machine's CPU before it and "
                 "%.0f%% from it",
                 s->other_before, s->other_after);
    else if (s->machine_step)
        snprintf(why, sizeof(why), "not counted: the machine's reference slowed %+.1f%% with it",
                 s->machine_shift_pct);
    else
        pb_strlcpy(why, step_meaning(s), sizeof(why));
    fprintf(out, "  %-18s %s point %s: %+.1f%s from revision %s: %s\n", h->metric,
            s->fingerprint[0] ? s->fingerprint : s->config,
            pb_printable(point, sizeof(point), s->point), s->step_pct, pb_fmt_change_unit(h->absolute),
            s->runs[s->step].revision[0]
                ? pb_printable(rev, sizeof(rev), s->runs[s->step].revision)
                : "?",
            why);
}

/* The gate's line for series s whose newest run is suspect. */
static void gate_suspect_line(FILE *out, const struct pb_history *h,
                              const struct pb_history_series *s)
{
    char point[PB_PRINTABLE_SIZE(256)], rev[PB_PRINTABLE_SIZE(48)];
    const struct pb_history_run *last = &s->runs[s->run_count - 1];
    fprintf(out, "  %-18s %s point %s: SUSPECT newest run (revision %s) %+.1f%s against the "
                 "runs before it, outside the series' noise; one night, not yet a step\n",
            h->metric, s->fingerprint[0] ? s->fingerprint : s->config,
            pb_printable(point, sizeof(point), s->point),
            last->revision[0] ? pb_printable(rev, sizeof(rev), last->revision) : "?",
            s->newest.change, pb_fmt_change_unit(h->absolute));
    fputs("  ", out);
    print_explained(out, s);
}

int pb_history_gate(FILE *out, const char *db_path, const char *config_name, double threshold_pct,
                    int *suspects, char *msg, size_t msglen)
{
    int regressions = 0;
    *suspects = 0;
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
        int told = 0;
        for (size_t i = 0; out && i < h.series_count; i++) {
            const struct pb_history_series *s = &h.series[i];
            if (s->step >= 0)
                gate_step_line(out, &h, s);
            if (s->suspect)
                gate_suspect_line(out, &h, s);
            told += s->step >= 0 || s->suspect;
        }
        if (out && told == 0)
            fprintf(out, "  %-18s no step and no suspect run in %zu series\n", metric->name,
                    h.series_count);
        regressions += h.regressions;
        *suspects += h.suspects;
        pb_history_free(&h);
    }
    if (out)
        fprintf(out, "%s\n", regressions  ? "a regression step: history show exits 3"
                             : *suspects ? "a suspect newest run, no regression step: history "
                                           "show exits 5"
                                         : "no regression step, no suspect run: history show "
                                           "exits 0");
    return regressions;
}
