/* A comparison of two results (bench/analyze/compare.h) in words: the
 * terminal table, GitHub markdown for a pull request comment, and JSON.
 * The statistics are compare.c's; this file only renders them. */
#include "bench/report/compare_text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/analyze/history.h"
#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/base/table.h"

static void format_value(const struct pb_metric_cmp *m, double v, char *buf, size_t n)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else if (strcmp(m->unit, "ns") == 0)
        pb_fmt_duration(buf, n, v);
    else if (strcmp(m->unit, "bytes") == 0)
        snprintf(buf, n, "%.1f MiB", v / 1048576.0);
    else if (strcmp(m->unit, "%") == 0)
        snprintf(buf, n, "%.1f%%", v);
    else
        snprintf(buf, n, "%.1f", v);
}

/* What the notes under the table carry from one metric to the next. */
struct notes {
    FILE *out;
    bool md;
    double threshold_pct;
    enum pb_verdict verdict; /* list_metric: the verdict listed */
    const char *separator;   /* list_metric: before the next entry */
    bool said_never;         /* decide_metric: the floor was stated */
    int most, decidable;     /* decide_metric: repeats asked, metrics */
};

/* A point's label as shown: printable, and in Markdown (md) with &, <
 * and > as entities (in_cell: '|' escaped too), never HTML. */
#define LABEL_SIZE PB_MARKDOWN_SIZE(PB_PRINTABLE_SIZE(sizeof(((struct pb_point_cmp *)0)->label)))
static const char *shown_label(char *buf, size_t size, const char *label, bool md, bool in_cell)
{
    char printable[PB_PRINTABLE_SIZE(sizeof(((struct pb_point_cmp *)0)->label))];
    pb_printable(printable, sizeof(printable), label);
    if (md)
        return pb_markdown_text(buf, size, printable, in_cell);
    pb_strlcpy(buf, printable, size);
    return buf;
}

/* Calls note for every compared metric with its point's label as shown. */
static void each_metric(const struct pb_comparison *cmp, struct notes *notes,
                        void (*note)(struct notes *, const char *, const struct pb_metric_cmp *))
{
    for (size_t i = 0; i < cmp->point_count; i++) {
        const struct pb_point_cmp *pc = &cmp->points[i];
        char label[LABEL_SIZE];
        shown_label(label, sizeof(label), pc->label, notes->md, false);
        for (int m = 0; m < pc->metric_count; m++)
            note(notes, label, &pc->metrics[m]);
    }
}

/* What the settings' costs listed are, in words, from the metrics that
 * are such a cost: "more memory comes", "more CPU per sample comes",
 * "more memory and CPU per sample come"; said of the figures listed beside
 * it, never of one that was not. */
static const char *cost_words(const struct pb_comparison *cmp)
{
    bool memory = false, cpu = false, other = false;
    for (size_t i = 0; i < cmp->point_count; i++)
        for (int m = 0; m < cmp->points[i].metric_count; m++) {
            const struct pb_metric_cmp *mc = &cmp->points[i].metrics[m];
            if (!mc->cost_of_setting)
                continue;
            bool is_memory = strcmp(mc->name, "rss_peak_bytes") == 0;
            bool is_cpu = strncmp(mc->name, "cpu_ns_per_sample", 17) == 0;
            memory |= is_memory;
            cpu |= is_cpu;
            other |= !is_memory && !is_cpu;
        }
    return other              ? "these costs come"
           : memory && cpu    ? "more memory and CPU per sample come"
           : memory           ? "more memory comes"
           : cpu              ? "more CPU per sample comes"
                              : "these costs come";
}

/* text (printable) as a Markdown code span: fenced by one backtick more
 * than its longest run of them, and padded when the fence is longer than
 * one, so a file name with backticks stays one span. */
static const char *code_span(char *buf, size_t size, const char *text)
{
    size_t run = 0, longest = 0;
    for (const char *c = text; *c; c++) {
        run = *c == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    char fence[8] = "";
    size_t fence_len = longest + 1 < sizeof(fence) ? longest + 1 : sizeof(fence) - 1;
    memset(fence, '`', fence_len);
    const char *pad = fence_len > 1 ? " " : "";
    snprintf(buf, size, "%s%s%s%s%s", fence, pad, text, pad, fence);
    return buf;
}

/* More repeats than this a side is not a measurement plan, it is noise. */
#define PB_SENSIBLE_REPEATS 50

/* A note on what the data could detect: that the repeats can never reach
 * significance (once), and for an ambiguous metric the repeats per side
 * that would decide it, as a command option. */
static void decide_metric(struct notes *n, const char *label, const struct pb_metric_cmp *mc)
{
    const char *bullet = n->md ? "- " : "";
    if (!pb_metric_cmp_measured(mc) || mc->machine)
        return;
    if (isinf(mc->detectable) && !n->said_never) {
        fprintf(n->out,
                "\n%s%d vs %d repeats can never reach p < %.2f with Mann-Whitney (the smallest p "
                "it can give is %.3f), so no change can be called improved or regressed from "
                "these results; %d repeats a side can\n",
                bullet, mc->base_n, mc->next_n, PB_COMPARE_ALPHA, mc->min_p,
                pb_compare_min_repeats());
        n->said_never = true;
    }
    /* A stage's row is the diagnosis, not the verdict: only its changes
     * are told, unless the gate names it. */
    if (mc->verdict != PB_VERDICT_AMBIGUOUS || (mc->stage[0] && !mc->gated))
        return;
    const char *unit = pb_fmt_change_unit(mc->absolute);
    char seen[96];
    if (!isnan(mc->noise) && !isnan(mc->change_pct))
        snprintf(seen, sizeof(seen), " (change %+.1f%s, noise ±%.1f%s per repeat)", mc->change_pct,
                 unit, mc->noise, unit);
    else
        snprintf(seen, sizeof(seen), " (noise unknown: %d and %d repeats)", mc->base_n,
                 mc->next_n);
    /* Run-to-run noise no repeats within the two runs lower. */
    if (mc->repeats_to_decide < 0 && !isnan(mc->run_noise)) {
        fprintf(n->out,
                "%sambiguous %s at %s%s: not decidable from two runs here: from run to run this "
                "series moves ±%.1f%s (%d runs in the history), which hides a %.1f%s change; "
                "measure both in one interleaved session (pbench compare BASE.yaml NEW.yaml), "
                "or gate on a threshold of %.0f%s\n",
                bullet, mc->name, label, seen, mc->run_noise, unit, mc->run_noise_runs,
                n->threshold_pct, unit, ceil(mc->detectable), unit);
        return;
    }
    /* Past a sensible number of repeats, or noisier per repeat than the
     * threshold itself, a metric is not decidable here: said so, rather
     * than asking for hundreds of repeats. */
    bool sensible = mc->repeats_to_decide > 0 && mc->repeats_to_decide <= PB_SENSIBLE_REPEATS &&
                    !(mc->noise > n->threshold_pct);
    if (sensible)
        fprintf(n->out,
                "%sambiguous %s at %s%s: about %d repeats a side would decide it; measure again "
                "with -s run.repeats=%d\n",
                bullet, mc->name, label, seen, mc->repeats_to_decide, mc->repeats_to_decide);
    else
        fprintf(n->out,
                "%sambiguous %s at %s%s: not decidable here (%s the %.1f%s threshold); "
                "lengthen each repeat (-s run.min_time_s) or measure on a quieter machine to "
                "lower its noise\n",
                bullet, mc->name, label, seen,
                mc->noise > n->threshold_pct ? "its noise per repeat is above"
                                             : "more than 50 repeats a side to decide at",
                n->threshold_pct, unit);
    n->decidable += sensible;
    if (sensible && mc->repeats_to_decide > n->most)
        n->most = mc->repeats_to_decide;
}

/* An entry of the line listing every metric with the verdict asked for:
 * its change and interval. */
static void list_metric(struct notes *n, const char *label, const struct pb_metric_cmp *mc)
{
    bool cost = n->verdict == PB_VERDICT_SAME; /* listing the settings' costs */
    if (cost ? !mc->cost_of_setting : mc->verdict != n->verdict || mc->cost_of_setting)
        return;
    const char *unit = pb_fmt_change_unit(mc->absolute);
    if (mc->added || mc->removed) {
        char cost[32], share[48] = "";
        format_value(mc, mc->added ? mc->next : mc->base, cost, sizeof(cost));
        if (!isnan(mc->share_pct))
            snprintf(share, sizeof(share), ", %.0f%% of the %s pipeline", mc->share_pct,
                     mc->added ? "new" : "base");
        fprintf(n->out, "%s%s %s: %s a sample%s, at %s%s", n->separator, mc->name,
                mc->added ? "new" : "removed", cost, share, label,
                n->verdict == PB_VERDICT_REGRESSED && !mc->gated ? " (not gated)" : "");
    } else {
        fprintf(n->out, "%s%s %+.1f%s (95%% CI [%+.1f, %+.1f]%s) at %s%s", n->separator, mc->name,
                mc->change_pct, unit, mc->ci_low_pct, mc->ci_high_pct, unit, label,
                n->verdict == PB_VERDICT_REGRESSED && !mc->gated ? " (not gated)" : "");
    }
    n->separator = "; ";
}

/* each_metric in the order a verdict names them: the table's rows, then
 * the stages that explain the change of CPU per sample (largest share
 * first), then the other stages. */
static void each_metric_explained(const struct pb_comparison *cmp, struct notes *notes,
                                  void (*note)(struct notes *, const char *,
                                               const struct pb_metric_cmp *))
{
    for (size_t i = 0; i < cmp->point_count; i++) {
        const struct pb_point_cmp *pc = &cmp->points[i];
        const struct pb_cpu_explanation *e = &pc->explained;
        char label[LABEL_SIZE];
        shown_label(label, sizeof(label), pc->label, notes->md, false);
        bool told[PB_COMPARE_METRICS] = {false};
        for (int m = 0; m < pc->metric_count && m < PB_METRIC_COUNT; m++)
            note(notes, label, &pc->metrics[m]);
        for (int k = 0; k < e->count; k++) {
            told[e->metric[k]] = true;
            note(notes, label, &pc->metrics[e->metric[k]]);
        }
        for (int m = PB_METRIC_COUNT; m < pc->metric_count; m++)
            if (!told[m])
                note(notes, label, &pc->metrics[m]);
    }
}

/* Where the pipeline's CPU per sample went, per point whose stages
 * explain its change: each stage with its change and share of it, the
 * largest first, added and removed stages included. */
static void print_explanations(FILE *out, const struct pb_comparison *cmp, bool md)
{
    for (size_t i = 0; i < cmp->point_count; i++) {
        const struct pb_point_cmp *pc = &cmp->points[i];
        const struct pb_cpu_explanation *e = &pc->explained;
        if (e->count == 0)
            continue;
        const struct pb_metric_cmp *cpu =
        &pc->metrics[pb_metric_find("cpu_ns_per_sample") - pb_metrics];
        char label[LABEL_SIZE], moved[32];
        shown_label(label, sizeof(label), pc->label, md, false);
        format_value(cpu, fabs(e->change_ns), moved, sizeof(moved));
        fprintf(out, "%sCPU per sample %s by %s (%+.1f%%) at %s; the stages that explain it, "
                     "largest share first:",
                md ? "- " : "", e->change_ns > 0 ? "rose" : "fell", moved, e->change_pct, label);
        for (int k = 0; k < e->count; k++) {
            const struct pb_metric_cmp *mc = &pc->metrics[e->metric[k]];
            char by[32];
            format_value(mc, fabs(mc->next - mc->base), by, sizeof(by));
            fprintf(out, "%s %s%s %s%s a sample (%.0f%% of the change)", k ? ";" : "", mc->stage,
                    mc->added ? " (new)" : mc->removed ? " (removed)" : "",
                    mc->next > mc->base ? "+" : "-", by, e->share_pct[k]);
        }
        fputc('\n', out);
    }
}

/* The stages one side alone ran, each on its own line: "new: GaussianBlur
 * 3.30 ms a sample of CPU, 54% of the new pipeline". */
static void print_added_stages(FILE *out, const struct pb_comparison *cmp, bool md)
{
    for (size_t i = 0; i < cmp->point_count; i++) {
        const struct pb_point_cmp *pc = &cmp->points[i];
        char label[LABEL_SIZE];
        shown_label(label, sizeof(label), pc->label, md, false);
        for (int m = PB_METRIC_COUNT; m < pc->metric_count; m++) {
            const struct pb_metric_cmp *mc = &pc->metrics[m];
            if (!mc->added && !mc->removed)
                continue;
            char cost[32], share[48] = "";
            format_value(mc, mc->added ? mc->next : mc->base, cost, sizeof(cost));
            if (!isnan(mc->share_pct))
                snprintf(share, sizeof(share), ", %.0f%% of the %s pipeline",
                         mc->share_pct, mc->added ? "new" : "base");
            fprintf(out, "%s%s: %s %s a sample of CPU%s%s%s\n", md ? "- " : "",
                    mc->added ? "new" : "removed", mc->stage, cost, share,
                    cmp->point_count > 1 ? ", at " : "", cmp->point_count > 1 ? label : "");
        }
    }
}

/* The notes under the table: what would decide, then the regressions and
 * the improvements, each on one line with what it means for the gate. */
static void print_notes(FILE *out, const struct pb_comparison *cmp, bool md)
{
    struct notes n = {.out = out, .md = md, .threshold_pct = cmp->threshold_pct};
    each_metric(cmp, &n, decide_metric);
    if (n.decidable > 1)
        fprintf(out, "%sto decide the %d of these that more repeats can: measure again with -s "
                     "run.repeats=%d\n",
                md ? "- " : "", n.decidable, n.most);
    for (int k = 0; k < 2; k++) {
        n.verdict = k == 0 ? PB_VERDICT_REGRESSED : PB_VERDICT_IMPROVED;
        if ((k == 0 ? cmp->regressions : cmp->improvements) == 0)
            continue;
        fprintf(out, md ? "\n**%s**:" : "%s:", k == 0 ? "REGRESSED" : "IMPROVED");
        n.separator = " ";
        each_metric_explained(cmp, &n, list_metric);
        /* With a gated verdict withheld the gate neither passes nor fails
         * on these: it is inconclusive (said with the interference). */
        bool withheld = cmp->gated_withheld > 0;
        fprintf(out, "; %s\n",
                k == 0 && cmp->gated_regressions ? "--fail-on-regression exits 3"
                : k == 0 && withheld ? "none of them is gated, so they do not fail the gate "
                                       "(add one with --gate NAME)"
                : k == 0 ? "none of them is gated, so --fail-on-regression passes (the gate "
                           "fails on samples/s, stall, accelerator utilization and CPU per "
                           "sample; add one with --gate NAME)"
                : cmp->gated_regressions ? "an improvement never fails the gate"
                : withheld               ? "an improvement never fails the gate"
                                         : "the gate passes (exit 0)");
    }
    print_explanations(out, cmp, md);
    if (cmp->setting_costs > 0) {
        n.verdict = PB_VERDICT_SAME;
        n.separator = " ";
        fprintf(out,
                md ? "\n**the cost of the setting change**:" : "the cost of the setting change:");
        each_metric(cmp, &n, list_metric);
        fprintf(out, "; %s with the settings changed above, so --fail-on-regression does not "
                     "count %s\n",
                cost_words(cmp), cmp->setting_costs > 1 ? "them" : "it");
    }
}

void pb_interference_text(const struct pb_point_cmp *pc, char *buf, size_t buflen)
{
    const struct pb_interference *in = &pc->interference;
    size_t used = 0;
    if (buflen)
        buf[0] = '\0';
    if (!in->disturbed || buflen == 0)
        return;
    if (pb_machine_disturbed(in->base_other, in->base_steal, 0) ||
        pb_machine_disturbed(in->next_other, in->next_steal, 0))
        used += (size_t)snprintf(
            buf + used, buflen - used,
            "other processes took %.0f%% of the machine's CPU on the base side (%.0f-%.0f%% "
            "over its repeats, steal %.0f%%) and %.0f%% on the new (%.0f-%.0f%%, steal %.0f%%)",
            in->base_other, in->base_other_lo, in->base_other_hi, in->base_steal, in->next_other,
            in->next_other_lo, in->next_other_hi, in->next_steal);
    if (in->machine_changed && used < buflen)
        used += (size_t)snprintf(buf + used, buflen - used,
                                 "%sthe machine's own reference workload took %+.1f%% on the new "
                                 "side (a %s core: its clock, or what shares it)",
                                 used ? "; " : "", in->machine_change_pct,
                                 in->machine_change_pct > 0 ? "slower" : "faster");
    if (in->throttled && used < buflen)
        used += (size_t)snprintf(buf + used, buflen - used,
                                 "%sthe process's cgroup was held back by its CPU quota "
                                 "(throttled %.0f%% of the machine's CPU time on the base side, "
                                 "%.0f%% on the new)",
                                 used ? "; " : "", in->base_throttled, in->next_throttled);
    if (in->gpu_slowed && used < buflen)
        used += (size_t)snprintf(buf + used, buflen - used,
                                 "%sthe GPU's driver was slowing it down (power cap, thermal or "
                                 "hardware slowdown, NVML) at the end of %d of %d repeats on the "
                                 "base side and %d of %d on the new",
                                 used ? "; " : "", in->base_gpu_slowed, in->base_repeats,
                                 in->next_gpu_slowed, in->next_repeats);
    if (used < buflen)
        snprintf(buf + used, buflen - used,
                 ": the wall-clock verdicts%s are withheld (disturbed), as the change is the "
                 "machine's as much as the code's%s",
                 in->machine_changed ? " and CPU time per sample" : "",
                 in->machine_changed || in->no_loader
                     ? "; memory is still compared"
                     : "; CPU time per sample and memory are still compared");
}

/* Each point whose verdicts were withheld, with why, and what that means
 * for the gate. */
static void print_interference(FILE *out, const struct pb_comparison *cmp, bool md)
{
    for (size_t i = 0; i < cmp->point_count; i++) {
        const struct pb_point_cmp *pc = &cmp->points[i];
        char text[1200];
        pb_interference_text(pc, text, sizeof text);
        if (!text[0])
            continue;
        char label[LABEL_SIZE];
        shown_label(label, sizeof(label), pc->label, md, false);
        fprintf(out, "%sinterference at %s: %s%s\n", md ? "- " : "", label, text,
                cmp->gated_withheld && !cmp->gated_regressions
                    ? "; --fail-on-regression exits 4 (inconclusive): rerun both on a quiet "
                      "machine"
                    : "");
    }
}

void pb_comparison_json(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                        const char *next_name)
{
    (void)base_name;
    (void)next_name;
    json_t *j = pb_comparison_to_json(cmp);
    json_dumpf(j, out, JSON_INDENT(2));
    fputc('\n', out);
    json_decref(j);
}

/* What the numbers stand on: how the two were measured, what differs
 * between them and which settings changed. */
static void print_context(FILE *out, const struct pb_comparison *cmp, bool md)
{
    char text[PB_PRINTABLE_SIZE(sizeof(cmp->differences[0]))];
    char shown[PB_MARKDOWN_SIZE(sizeof(text))];
    if (cmp->interleaved)
        fprintf(out, md ? "- measured together: rounds interleaved A B B A ..., so a drift of "
                          "the machine hits both alike\n"
                        : "measured together: rounds interleaved A B B A ..., so a drift of the "
                          "machine hits both alike\n");
    else if (cmp->history_runs >= PB_SPREAD_MIN_RUNS)
        fprintf(out, "%snoise: each side's repeats, within one run, and this series' run-to-run "
                     "spread from its %d newest runs in %s, which repeats within one run miss; "
                     "where it is the larger, the interval is widened to it\n",
                md ? "- " : "", cmp->history_runs, cmp->history_db);
    else {
        char hint[400] = "";
        if (cmp->history_db[0])
            snprintf(hint, sizeof(hint),
                     "; with %d runs of this series in %s (pbench history add RESULT.json) its "
                     "run-to-run spread would count too",
                     PB_SPREAD_MIN_RUNS, cmp->history_db);
        fprintf(out, "%snoise: each side's is the spread of its own repeats, within one run that "
                     "shared the machine's state; from run to run the machine moves more "
                     "(machine_ref_ns below is its own speed)%s\n",
                md ? "- " : "", hint);
    }
    fprintf(out, "%sbase and new: each side's median over its repeats (a run's own table "
                 "pools stall: the repeats' total wait over their total wall)\n",
            md ? "- " : "");
    for (int i = 0; i < cmp->difference_count; i++) {
        pb_printable(text, sizeof(text), cmp->differences[i]);
        fprintf(out, md ? "- differs: %s\n" : "differs: %s\n",
                md ? pb_markdown_text(shown, sizeof(shown), text, false) : text);
    }
    for (int i = 0; i < cmp->setting_change_count; i++) {
        pb_printable(text, sizeof(text), cmp->setting_changes[i]);
        fprintf(out, md ? "- setting changed: %s\n" : "setting changed: %s\n",
                md ? pb_markdown_text(shown, sizeof(shown), text, false) : text);
    }
}

/* The comparison as a terminal table (md false) or GitHub markdown. */
static void comparison_text(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                            const char *next_name, bool md)
{
    char base[PB_PRINTABLE_SIZE(256)], next[PB_PRINTABLE_SIZE(256)];
    char span[2][sizeof(base) + 20];
    pb_printable(base, sizeof(base), base_name);
    pb_printable(next, sizeof(next), next_name);
    if (md)
        fprintf(out, "## pbench compare\n\nbase %s → new %s; a change counts when it is "
                     "significant (Mann-Whitney p < %.2f, 95%% bootstrap CI excluding 0) and at "
                     "least %.1f%%\n\n",
                code_span(span[0], sizeof(span[0]), base),
                code_span(span[1], sizeof(span[1]), next), PB_COMPARE_ALPHA, cmp->threshold_pct);
    else
        fprintf(out, "base %s -> new %s\na change counts when it is significant (Mann-Whitney p < "
                     "%.2f, 95%% bootstrap CI excluding 0) and at least %.1f%%\n",
                base, next, PB_COMPARE_ALPHA, cmp->threshold_pct);
    print_context(out, cmp, md);
    if (md)
        fputs("\n| point | metric | base | new | change | 95% CI | p | verdict | detectable |\n"
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n",
              out);
    int width = 16; /* the metric column: its longest name (a stage's row) */
    for (size_t i = 0; i < cmp->point_count; i++)
        for (int m = 0; m < cmp->points[i].metric_count; m++)
            if ((int)strlen(cmp->points[i].metrics[m].name) > width)
                width = (int)strlen(cmp->points[i].metrics[m].name);
    if (!md)
        fprintf(out, "\n%-28s %-*s %12s %12s %9s %19s %7s %10s  %s\n", "point", width, "metric",
                "base", "new", "change", "95% CI", "p", "detectable", "verdict");
    for (size_t i = 0; i < cmp->point_count; i++) {
        const struct pb_point_cmp *pc = &cmp->points[i];
        char label[LABEL_SIZE];
        shown_label(label, sizeof(label), pc->label, md, true);
        for (int m = 0; m < pc->metric_count; m++) {
            const struct pb_metric_cmp *mc = &pc->metrics[m];
            char a[32], b[32], change[32], ci[48], p[16];
            format_value(mc, mc->base, a, sizeof(a));
            format_value(mc, mc->next, b, sizeof(b));
            if (mc->added || mc->removed)
                snprintf(mc->added ? a : b, sizeof(a), "absent");
            const char *unit = pb_fmt_change_unit(mc->absolute);
            if (mc->added || mc->removed) {
                snprintf(change, sizeof(change), "%s", mc->added ? "new" : "removed");
                if (isnan(mc->share_pct))
                    snprintf(ci, sizeof(ci), "-");
                else
                    snprintf(ci, sizeof(ci), "%.0f%% of %s", mc->share_pct,
                             mc->added ? "new" : "base");
            } else if (isnan(mc->ci_low_pct)) {
                snprintf(change, sizeof(change), "-");
                snprintf(ci, sizeof(ci), "(too few repeats)");
            } else {
                snprintf(change, sizeof(change), "%+.1f%s", mc->change_pct, unit);
                snprintf(ci, sizeof(ci), "[%+.1f, %+.1f]%s", mc->ci_low_pct, mc->ci_high_pct, unit);
            }
            if (isnan(mc->p_value))
                snprintf(p, sizeof(p), "-");
            else
                snprintf(p, sizeof(p), "%.3f", mc->p_value);
            const char *verdict = pb_metric_cmp_verdict(mc);
            char detectable[32];
            if (isinf(mc->detectable))
                snprintf(detectable, sizeof(detectable), "never");
            else if (isnan(mc->detectable))
                snprintf(detectable, sizeof(detectable), "-");
            else
                snprintf(detectable, sizeof(detectable), "±%.1f%s", mc->detectable, unit);
            const char *bold =
                mc->verdict == PB_VERDICT_REGRESSED || mc->verdict == PB_VERDICT_IMPROVED ? "**"
                                                                                          : "";
            if (md)
                fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s%s%s | %s |\n", m ? "" : label,
                        mc->name, a, b, change, ci, p, bold, verdict, bold, detectable);
            else
                fprintf(out, "%-28.28s %-*s %12s %12s %9s %19s %7s %*s  %s\n", m ? "" : label,
                        width, mc->name, a, b, change, ci, p,
                        /* "±" is two bytes and one column wide */
                        strncmp(detectable, "±", 2) == 0 ? 11 : 10, detectable,
                        mc->verdict == PB_VERDICT_REGRESSED  ? "REGRESSED"
                        : mc->verdict == PB_VERDICT_IMPROVED ? "IMPROVED"
                                                             : verdict);
        }
    }
    char disturbed[48] = "";
    if (cmp->disturbed)
        snprintf(disturbed, sizeof disturbed, ", %d disturbed", cmp->disturbed);
    fprintf(out, md ? "\n**%d regressed, %d improved, %d ambiguous%s**%s\n"
                    : "\n%d regressed, %d improved, %d ambiguous%s%s\n",
            cmp->regressions, cmp->improvements, cmp->ambiguous, disturbed,
            cmp->unmatched ? "; some points exist in only one result and were not compared" : "");
    print_interference(out, cmp, md);
    print_added_stages(out, cmp, md);
    print_notes(out, cmp, md);
}

void pb_comparison_table(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                         const char *next_name)
{
    comparison_text(out, cmp, base_name, next_name, false);
}

void pb_comparison_markdown(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                            const char *next_name)
{
    comparison_text(out, cmp, base_name, next_name, true);
}
