/* pbench compare's statistics (bench/analyze/compare.h): points matched by their axes, per
 * metric the change, its bootstrap interval, the p-value and the verdict, then interference. */
#include "bench/analyze/compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/analyze/config_diff.h"
#include "bench/analyze/history.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/base/stats.h"
#include "bench/result/figures.h"
#include "bench/result/metrics.h"

/* ---- compatibility ------------------------------------------------------- */

/* Adds a difference; past the last slot, drops it. */
#define ADD_DIFFERENCE(c, ...) PB_LINES_ADD((c)->differences, &(c)->difference_count, __VA_ARGS__)

/* Where a difference goes: a setting change, or (not setting) a
 * difference that makes the results incompatible. */
struct difference_sink {
    struct pb_comparison *c;
    bool setting;
};

/* A difference the comparison lists (pb_config_diff's callback). */
static void note_difference(void *user, const char *text)
{
    struct difference_sink *sink = user;
    struct pb_comparison *c = sink->c;
    if (sink->setting) {
        PB_LINES_ADD(c->setting_changes, &c->setting_change_count, "%s", text);
        c->loader_changed |= strncmp(text, "loader.", 7) == 0;
        return;
    }
    ADD_DIFFERENCE(c, "config %s", text);
    c->incompatible = true;
}

/* Lists where a and b differ under path: into the differences (the
 * results are incompatible) or, for settings, into the setting changes. */
static void diff_json(struct pb_comparison *c, const char *path, const json_t *a, const json_t *b,
                      bool setting)
{
    struct difference_sink sink = {c, setting};
    pb_config_diff(path, a, b, note_difference, &sink);
}

static void check_compatible(struct pb_comparison *c, const struct pb_result *a,
                             const struct pb_result *b, bool configs_may_differ)
{
    const struct pb_machine *x = &a->machine, *y = &b->machine;
    if (strcmp(x->cpu_model, y->cpu_model) != 0)
        ADD_DIFFERENCE(c, "machine CPU model: %s -> %s", x->cpu_model, y->cpu_model);
    if (x->cores != y->cores || x->pus != y->pus)
        ADD_DIFFERENCE(c, "machine cores/PUs: %d/%d -> %d/%d", x->cores, x->pus, y->cores, y->pus);
    if (strcmp(x->gpu_name, y->gpu_name) != 0)
        ADD_DIFFERENCE(c, "GPU: '%s' -> '%s'", x->gpu_name, y->gpu_name);
    /* By name, each name's first entry on either side (a hand-edited file
     * may list a name twice). */
    for (int i = 0; i < x->library_count; i++) {
        int first = 0;
        while (strcmp(x->libraries[first][0], x->libraries[i][0]) != 0)
            first++;
        int j = 0;
        while (j < y->library_count && strcmp(x->libraries[i][0], y->libraries[j][0]) != 0)
            j++;
        if (first == i && j < y->library_count &&
            strcmp(x->libraries[i][1], y->libraries[j][1]) != 0)
            ADD_DIFFERENCE(c, "library %s: %s -> %s", x->libraries[i][0], x->libraries[i][1],
                           y->libraries[j][1]);
    }
    c->incompatible = c->difference_count > 0;
    /* The measured work: name, dataset and pipeline must match; the loader
     * settings may differ (a change of them is what is being compared);
     * the run section only says how long and how often to measure. */
    static const char *const sections[] = {"name", "dataset", "pipeline", "loader"};
    if (configs_may_differ) {
        /* Two configs measured together: every section but the name is
         * listed where it differs, as the change under test. */
        const char *key;
        json_t *v;
        json_object_foreach(a->config, key, v)
            if (strcmp(key, "name") != 0)
                diff_json(c, key, v, json_object_get(b->config, key), true);
        json_object_foreach(b->config, key, v)
            if (strcmp(key, "name") != 0 && !json_object_get(a->config, key))
                diff_json(c, key, NULL, v, true);
        return;
    }
    for (size_t s = 0; s < PB_ARRAY_LEN(sections); s++)
        diff_json(c, sections[s], a->config ? json_object_get(a->config, sections[s]) : NULL,
                  b->config ? json_object_get(b->config, sections[s]) : NULL,
                  strcmp(sections[s], "loader") == 0);
    /* A wrapped job's command, the DataLoader measured and --ideal: what the
     * job ran, listed as a change of settings is. */
    static const char *const job[] = {"wrap.command", "wrap.loader", "wrap.ideal"};
    for (size_t k = 0; k < PB_ARRAY_LEN(job); k++)
        diff_json(c, job[k], pb_result_config_value(a, job[k]), pb_result_config_value(b, job[k]),
                  true);
}

/* ---- metrics ------------------------------------------------------------- */

/* A point's values of one metric, one per repeat that ran to its end. */
static size_t metric_values(const struct pb_point_result *p, const struct pb_metric *metric,
                            double *out)
{
    size_t n = 0;
    for (size_t r = 0; r < p->repeat_count; r++) {
        if (p->repeats[r].interrupted)
            continue; /* a cut-short repeat is not a replicate */
        double v = metric->of_repeat(&p->repeats[r]);
        if (!isnan(v))
            out[n++] = v;
    }
    return n;
}

double pb_compare_min_p(size_t n, size_t m)
{
    if (n == 0 || m == 0)
        return NAN;
    double *v = malloc((n + m) * sizeof(double));
    if (!v)
        return NAN;
    for (size_t i = 0; i < n + m; i++)
        v[i] = (double)i;
    double p = pb_mann_whitney(v, n, v + n, m, NULL);
    free(v);
    return p;
}

/* z-quantiles of the two-sided 5% test and of 80% power, and the
 * Mann-Whitney test's asymptotic relative efficiency against the t-test on
 * normal data (3/pi): it needs about 1/0.955 times the repeats. */
#define Z_ALPHA 1.959964
#define Z_POWER 0.841621
#define MW_EFFICIENCY (3 / M_PI)

int pb_compare_min_repeats(void)
{
    int n = 2;
    while (n < PB_COMPARE_MAX_REPEATS && !(pb_compare_min_p((size_t)n, (size_t)n) < PB_COMPARE_ALPHA))
        n++;
    return n;
}

/* Pooled standard deviation of one repeat over both samples, in the
 * metric's change unit (% of base, or pp); NAN below 2 values a side. */
static double pooled_noise(const struct pb_metric_cmp *m, const double *x, size_t n,
                           const double *y, size_t k)
{
    if (n < 2 || k < 2)
        return NAN;
    double sx = pb_stddev(x, n), sy = pb_stddev(y, k);
    double sd = sqrt(((double)(n - 1) * sx * sx + (double)(k - 1) * sy * sy) / (double)(n + k - 2));
    if (m->absolute)
        return sd;
    return m->base != 0 ? 100 * sd / fabs(m->base) : NAN;
}

/* Fills min_p, noise and detectable: the change that n vs k repeats with
 * this noise detect 80% of the time at alpha (normal approximation, scaled
 * by the Mann-Whitney efficiency); never when min_p cannot reach alpha. */
static void what_can_be_detected(struct pb_metric_cmp *m, const double *x, size_t n,
                                 const double *y, size_t k)
{
    m->min_p = pb_compare_min_p(n, k);
    m->noise = pooled_noise(m, x, n, y, k);
    if (!(m->min_p < PB_COMPARE_ALPHA))
        m->detectable = INFINITY;
    else if (isnan(m->noise))
        m->detectable = NAN;
    else
        m->detectable = (Z_ALPHA + Z_POWER) * m->noise *
                        sqrt((1.0 / (double)n + 1.0 / (double)k) / MW_EFFICIENCY);
}

/* For an ambiguous metric: the repeats per side that would decide it. A
 * change beyond the threshold needs the power to show it is real; one
 * inside needs an interval narrow enough to fit within the threshold, so
 * the distance that matters is the gap to the threshold. */
static int repeats_to_decide(const struct pb_metric_cmp *m, double better, double threshold_pct)
{
    int least = pb_compare_min_repeats();
    if (isnan(m->noise) || isnan(better))
        return least;
    double gap = fabs(better) >= threshold_pct ? fabs(better) : threshold_pct - fabs(better);
    double z = Z_ALPHA + Z_POWER;
    double need = gap > 0 ? ceil(2 * z * z * m->noise * m->noise / (MW_EFFICIENCY * gap * gap))
                          : INFINITY;
    int measured = m->base_n > m->next_n ? m->base_n : m->next_n;
    if (need <= measured && m->min_p < PB_COMPARE_ALPHA)
        need = 2.0 * measured; /* enough on paper, yet undecided: the noise was unlucky */
    if (need < least)
        need = least;
    return need > PB_COMPARE_MAX_REPEATS ? -1 : (int)need;
}

/* The verdict from the change, its interval and p: improved or regressed
 * when significant and past the threshold, same when the interval lies
 * within it, else ambiguous, with the repeats that would decide it. */
static void decide(struct pb_metric_cmp *m, double threshold_pct)
{
    /* "Better" is positive from here on. */
    double sign = m->higher_is_better ? 1 : -1;
    double better = sign * m->change_pct;
    double ci_lo = fmin(sign * m->ci_low_pct, sign * m->ci_high_pct);
    double ci_hi = fmax(sign * m->ci_low_pct, sign * m->ci_high_pct);
    bool significant = m->p_value < PB_COMPARE_ALPHA && (ci_lo > 0 || ci_hi < 0);
    if (significant && better >= threshold_pct)
        m->verdict = PB_VERDICT_IMPROVED;
    else if (significant && better <= -threshold_pct)
        m->verdict = PB_VERDICT_REGRESSED;
    else if (ci_lo > -threshold_pct && ci_hi < threshold_pct)
        m->verdict = PB_VERDICT_SAME;       /* any change is smaller than matters */
    else if (significant)
        m->verdict = PB_VERDICT_SAME;       /* real, but under the threshold */
    else
        m->verdict = PB_VERDICT_AMBIGUOUS;  /* could be a change that matters */
    m->repeats_to_decide = 0;
    if (m->verdict != PB_VERDICT_AMBIGUOUS)
        return;
    /* Run-to-run noise that alone hides the threshold: no number of
     * repeats within the two runs decides it. */
    bool runs_hide_it = !isnan(m->run_noise) &&
                        (Z_ALPHA + Z_POWER) * M_SQRT2 * m->run_noise >= threshold_pct;
    m->repeats_to_decide = runs_hide_it ? -1 : repeats_to_decide(m, better, threshold_pct);
}

/* Widens m's interval to the run-to-run spread run_noise (% or pp) where
 * that is the larger noise: each side's median is one run's, so the change
 * carries sqrt(2) run_noise whatever the repeats. The spread is estimated
 * from runs - 1 differences, so the interval takes Student's t with
 * runs - 2 degrees of freedom (2.09 from 21 runs, 3.18 from 5) rather than
 * the normal 1.96. */
static void widen_by_run_noise(struct pb_metric_cmp *m, double run_noise, int runs)
{
    m->run_noise = run_noise;
    m->run_noise_runs = runs;
    if (isnan(run_noise) || isnan(m->ci_low_pct) || runs < 3)
        return;
    double half = pb_t_quantile(Z_ALPHA, runs - 2) * M_SQRT2 * run_noise;
    m->ci_low_pct = fmin(m->ci_low_pct, m->change_pct - half);
    if (!m->absolute && m->ci_low_pct < -100)
        m->ci_low_pct = -100; /* a rate or a time falls at most to 0 */
    m->ci_high_pct = fmax(m->ci_high_pct, m->change_pct + half);
    double detectable = (Z_ALPHA + Z_POWER) * M_SQRT2 * run_noise;
    if (!(m->detectable >= detectable))
        m->detectable = isinf(m->detectable) ? m->detectable : detectable;
}

/* Compares the repeats' values x (base, n) and y (new, k) of metric m,
 * whose name and kind are set: medians, the change with its bootstrap
 * interval (widened to run_noise, NAN: none) and Mann-Whitney p, and the
 * verdict. */
static void compare_values(struct pb_metric_cmp *m, const double *x, size_t n, const double *y,
                           size_t k, double threshold_pct, uint64_t seed, double run_noise,
                           int runs)
{
    m->run_noise = NAN;
    m->base_n = (int)n;
    m->next_n = (int)k;
    m->base = pb_median(x, n);
    m->next = pb_median(y, k);
    m->verdict = PB_VERDICT_AMBIGUOUS;
    m->p_value = NAN;
    m->ci_low_pct = m->ci_high_pct = NAN;
    what_can_be_detected(m, x, n, y, k);
    if (n < 2 || k < 2 || isnan(m->base) || isnan(m->next) || (!m->absolute && m->base == 0)) {
        m->repeats_to_decide = repeats_to_decide(m, NAN, threshold_pct);
        return; /* not enough data to tell */
    }
    double lo, hi;
    if (m->absolute) {
        m->change_pct = m->next - m->base;
        pb_bootstrap_diff_ci(x, n, y, k, PB_BOOTSTRAP_RESAMPLES, 0.95, seed, &lo, &hi);
        m->ci_low_pct = lo;
        m->ci_high_pct = hi;
    } else {
        m->change_pct = 100 * (m->next / m->base - 1);
        pb_bootstrap_ratio_ci(x, n, y, k, PB_BOOTSTRAP_RESAMPLES, 0.95, seed, &lo, &hi);
        m->ci_low_pct = 100 * (lo - 1);
        m->ci_high_pct = 100 * (hi - 1);
    }
    m->p_value = pb_mann_whitney(y, k, x, n, NULL);
    widen_by_run_noise(m, run_noise, runs);
    decide(m, threshold_pct);
}

/* Compares row metric of the table between points a and b. */
static void compare_metric(int metric, const struct pb_point_result *a,
                           const struct pb_point_result *b, double threshold_pct, uint64_t seed,
                           double run_noise, int runs, struct pb_metric_cmp *m)
{
    memset(m, 0, sizeof(*m));
    const struct pb_metric *row = &pb_metrics[metric];
    pb_strlcpy(m->name, row->name, sizeof(m->name));
    m->row = row;
    m->unit = row->unit;
    m->higher_is_better = row->higher_is_better;
    m->absolute = row->absolute;
    m->machine = row->machine;
    double *x = calloc(a->repeat_count + 1, sizeof(double));
    double *y = calloc(b->repeat_count + 1, sizeof(double));
    size_t n = x ? metric_values(a, row, x) : 0, k = y ? metric_values(b, row, y) : 0;
    compare_values(m, x, n, y, k, threshold_pct, seed, run_noise, runs);
    free(x);
    free(y);
}

/* A point's CPU time per sample in stage, one per complete repeat that
 * ran it on the CPU: the values whose median is the point's figure in
 * every sink (bench/result/figures.h), so compare's side is that figure. */
static size_t stage_values(const struct pb_point_result *p, const char *stage, double *out)
{
    return pb_point_cpu_values(p, stage, out);
}

/* Whether st is a pipeline stage run on the CPU: not a sub-stage, not a
 * device row, with CPU time. */
static bool cpu_stage(const struct pb_stage_result *st)
{
    return !st->gpu && !st->parent[0] && st->cpu_ns > 0;
}

/* Whether point p's summary has the CPU stage name. */
static bool point_has_stage(const struct pb_point_result *p, const char *name)
{
    for (size_t s = 0; p->stages && s < p->stage_count; s++)
        if (cpu_stage(&p->stages[s]) && strcmp(p->stages[s].name, name) == 0)
            return true;
    return false;
}

/* The repeats of p that ran to their end. */
static int complete_repeats(const struct pb_point_result *p)
{
    int n = 0;
    for (size_t r = 0; r < p->repeat_count; r++)
        n += !p->repeats[r].interrupted;
    return n;
}

/* A stage one side alone ran: its CPU per sample against nothing on the
 * other side (values, n of them: the new side's when added). Counts when
 * it moves the pipeline's CPU per sample (base total, ns) as a stage's
 * change must (compare_stages). */
static void stage_one_side(struct pb_metric_cmp *m, bool added, const double *values, size_t n,
                           int other_n, double threshold_pct, double total)
{
    double v = pb_median(values, n);
    m->added = added;
    m->removed = !added;
    m->base = added ? 0 : v;
    m->next = added ? v : 0;
    m->base_n = added ? other_n : (int)n;
    m->next_n = added ? (int)n : other_n;
    m->change_pct = m->ci_low_pct = m->ci_high_pct = m->p_value = NAN;
    m->noise = m->detectable = m->run_noise = NAN;
    m->min_p = pb_compare_min_p((size_t)m->base_n, (size_t)m->next_n);
    bool matters = !(total > 0) || v >= threshold_pct / 5 / 100 * total;
    m->verdict = !matters ? PB_VERDICT_SAME : added ? PB_VERDICT_REGRESSED : PB_VERDICT_IMPROVED;
}

/* One stage's row at the end of pc: both sides' repeats compared, or the
 * stage added or removed. x and y are scratch of each side's repeats. */
static void compare_stage(struct pb_point_cmp *pc, const char *name,
                          const struct pb_point_result *a, const struct pb_point_result *b,
                          double threshold_pct, uint64_t seed, double total, double *x, double *y)
{
    size_t n = stage_values(a, name, x), k = stage_values(b, name, y);
    if (n == 0 && k == 0)
        return;
    struct pb_metric_cmp *m = &pc->metrics[pc->metric_count++];
    memset(m, 0, sizeof(*m));
    snprintf(m->name, sizeof(m->name), PB_STAGE_CPU_PREFIX "%s", name);
    pb_strlcpy(m->stage, name, sizeof(m->stage));
    m->unit = "ns";
    int other_n = n == 0 ? complete_repeats(a) : k == 0 ? complete_repeats(b) : 1;
    if (other_n == 0) { /* the other side measured nothing: not measured */
        m->base = n ? pb_median(x, n) : NAN;
        m->next = k ? pb_median(y, k) : NAN;
        m->base_n = (int)n;
        m->next_n = (int)k;
        m->change_pct = m->ci_low_pct = m->ci_high_pct = m->p_value = NAN;
        m->noise = m->detectable = m->run_noise = m->min_p = NAN;
        m->verdict = PB_VERDICT_AMBIGUOUS;
        return;
    }
    if (n == 0 || k == 0) {
        stage_one_side(m, n == 0, n == 0 ? y : x, n == 0 ? k : n, other_n, threshold_pct,
                       total);
        return;
    }
    compare_values(m, x, n, y, k, threshold_pct, seed, NAN, 0);
    bool changed = m->verdict == PB_VERDICT_REGRESSED || m->verdict == PB_VERDICT_IMPROVED;
    if (changed && total > 0 && fabs(m->next - m->base) < threshold_pct / 5 / 100 * total)
        m->verdict = PB_VERDICT_SAME;
}

/* The stages' rows of a point: CPU time per sample of each pipeline stage
 * (not its sub-stages, not device rows) either side ran, the base's in
 * its order then those the new side added, after the table's rows, up to
 * PB_COMPARE_STAGES. A stage's change counts when it matters to the
 * pipeline: it moves the pipeline's CPU per sample (total, ns) by a fifth
 * of the threshold or more (1% at 5%); a flip going from 0.7 to 0.9 us
 * beside busy loops is real and of no consequence. */
static void compare_stages(struct pb_point_cmp *pc, const struct pb_point_result *a,
                           const struct pb_point_result *b, double threshold_pct, uint64_t seed,
                           double total)
{
    double *x = calloc(a->repeat_count + 1, sizeof(double));
    double *y = calloc(b->repeat_count + 1, sizeof(double));
    for (int side = 0; x && y && side < 2; side++) {
        const struct pb_point_result *p = side ? b : a;
        for (size_t s = 0; p->stages && s < p->stage_count; s++) {
            const struct pb_stage_result *st = &p->stages[s];
            if (!cpu_stage(st) || (side && point_has_stage(a, st->name)) ||
                pc->metric_count >= PB_COMPARE_METRICS)
                continue;
            compare_stage(pc, st->name, a, b, threshold_pct, seed + s + 977 * (uint64_t)side,
                          total, x, y);
        }
    }
    free(x);
    free(y);
}

/* Each stage row's share of its side's pipeline CPU per sample, and the
 * stages that explain the pipeline's change (struct pb_cpu_explanation):
 * those that moved with it by a fifth of the threshold of the base's
 * pipeline or more, the largest share first. */
static void explain_cpu_change(struct pb_point_cmp *pc, double threshold_pct)
{
    const struct pb_metric_cmp *cpu =
        &pc->metrics[pb_metric_find("cpu_ns_per_sample") - pb_metrics];
    struct pb_cpu_explanation *e = &pc->explained;
    e->change_ns = pb_metric_cmp_measured(cpu) ? cpu->next - cpu->base : NAN;
    e->change_pct = cpu->base > 0 ? 100 * (cpu->next / cpu->base - 1) : NAN;
    e->count = 0;
    for (int m = PB_METRIC_COUNT; m < pc->metric_count; m++) {
        struct pb_metric_cmp *mc = &pc->metrics[m];
        double side = mc->removed ? cpu->base : cpu->next;
        mc->share_pct = side > 0 ? 100 * (mc->removed ? mc->base : mc->next) / side : NAN;
        double moved = mc->next - mc->base;
        if (isnan(e->change_ns) || e->change_ns == 0 || moved * e->change_ns <= 0 ||
            fabs(moved) < threshold_pct / 5 / 100 * cpu->base || e->count >= PB_COMPARE_STAGES)
            continue;
        int at = e->count++;
        while (at > 0 && fabs(pc->metrics[e->metric[at - 1]].next -
                              pc->metrics[e->metric[at - 1]].base) < fabs(moved)) {
            e->metric[at] = e->metric[at - 1];
            at--;
        }
        e->metric[at] = m;
    }
    for (int i = 0; i < e->count; i++) {
        const struct pb_metric_cmp *mc = &pc->metrics[e->metric[i]];
        e->share_pct[i] = 100 * (mc->next - mc->base) / e->change_ns;
    }
}

/* Adds the CPU stages of p to names, each once. */
static void collect_stage_names(struct pb_stage_names *names, const struct pb_point_result *p)
{
    for (size_t s = 0; p->stages && s < p->stage_count; s++) {
        if (!cpu_stage(&p->stages[s]))
            continue;
        int k = 0;
        while (k < names->count && strcmp(names->names[k], p->stages[s].name) != 0)
            k++;
        if (k == names->count && k < PB_COMPARE_STAGE_NAMES)
            pb_strlcpy(names->names[names->count++], p->stages[s].name, sizeof(names->names[0]));
    }
}

static void axes_label(const json_t *axes, char *buf, size_t n)
{
    buf[0] = 0;
    if (!axes || json_object_size(axes) == 0) {
        snprintf(buf, n, "(single point)");
        return;
    }
    size_t used = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)axes, key, v)
    {
        char value[64];
        pb_json_short_text(v, value, sizeof(value));
        if (used < n)
            used += (size_t)snprintf(buf + used, n - used, "%s%s=%s", used ? ", " : "", key, value);
    }
}

static bool axes_equal(const json_t *a, const json_t *b)
{
    bool empty_a = !a || json_object_size(a) == 0, empty_b = !b || json_object_size(b) == 0;
    if (empty_a || empty_b)
        return empty_a && empty_b;
    return json_equal((json_t *)a, (json_t *)b);
}

/* Other processes' CPU and steal over a point's repeats: median, range. */
static void side_interference(const struct pb_point_result *p, double *median, double *lo,
                              double *hi, double *steal)
{
    double other[PB_COMPARE_MAX_REPEATS], st[PB_COMPARE_MAX_REPEATS];
    size_t n = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t r = 0; r < p->repeat_count && n < PB_COMPARE_MAX_REPEATS; r++, n++) {
        other[n] = p->repeats[r].other_cpu_pct;
        st[n] = p->repeats[r].steal_pct;
        *lo = fmin(*lo, other[n]);
        *hi = fmax(*hi, other[n]);
    }
    *median = n ? pb_median(other, n) : 0;
    *steal = n ? pb_median(st, n) : 0;
    if (!n)
        *lo = *hi = 0;
}

/* The repeats of p whose GPU NVML found slowed down at their end. */
static int gpu_slowed_repeats(const struct pb_point_result *p)
{
    int n = 0;
    for (size_t r = 0; r < p->repeat_count; r++)
        n += p->repeats[r].gpu.used && p->repeats[r].gpu.slowed;
    return n;
}


/* Whether the machine changed under the code between the sides: its
 * reference workload's comparison (the machine_ref_ns row), and a CPU
 * quota throttling either side. */
static void machine_change(struct pb_point_cmp *pc, const struct pb_point_result *a,
                           const struct pb_point_result *b)
{
    struct pb_interference *in = &pc->interference;
    in->machine_change_pct = NAN;
    for (int m = 0; m < pc->metric_count; m++) {
        const struct pb_metric_cmp *mc = &pc->metrics[m];
        if (!mc->row || !mc->row->machine || isnan(mc->ci_low_pct))
            continue;
        in->machine_change_pct = mc->change_pct;
        in->machine_changed = fabs(mc->change_pct) >= PB_MACHINE_CHANGE_PCT &&
                              (mc->ci_low_pct > 0 || mc->ci_high_pct < 0);
    }
    in->base_throttled = pb_point_median_throttled(a);
    in->next_throttled = pb_point_median_throttled(b);
    in->throttled = in->base_throttled >= PB_THROTTLED_PCT || in->next_throttled >= PB_THROTTLED_PCT;
    in->base_gpu_slowed = gpu_slowed_repeats(a);
    in->next_gpu_slowed = gpu_slowed_repeats(b);
    in->base_repeats = (int)a->repeat_count;
    in->next_repeats = (int)b->repeat_count;
    in->gpu_slowed = (in->base_gpu_slowed > 0 && 2 * in->base_gpu_slowed >= in->base_repeats) ||
                     (in->next_gpu_slowed > 0 && 2 * in->next_gpu_slowed >= in->next_repeats);
}

/* A point whose sides other processes disturbed: its wall-clock verdicts
 * are withheld (the change and interval stay), and counted apart. */
static void apply_interference(struct pb_point_cmp *pc,
                               const struct pb_point_result *a, const struct pb_point_result *b)
{
    struct pb_interference *in = &pc->interference;
    side_interference(a, &in->base_other, &in->base_other_lo, &in->base_other_hi, &in->base_steal);
    side_interference(b, &in->next_other, &in->next_other_lo, &in->next_other_hi, &in->next_steal);
    in->disturbed = pb_machine_disturbed(in->base_other, in->base_steal, 0) ||
                    pb_machine_disturbed(in->next_other, in->next_steal, 0);
    machine_change(pc, a, b);
    in->disturbed |= in->machine_changed || in->throttled || in->gpu_slowed;
    if (!in->disturbed)
        return;
    for (int m = 0; m < pc->metric_count; m++) {
        struct pb_metric_cmp *mc = &pc->metrics[m];
        /* CPU time per sample, the pipeline's or a stage's: a slower core
         * raises it too. */
        bool cpu_time = !mc->row || strcmp(mc->row->name, "cpu_ns_per_sample") == 0;
        bool wall_clock = mc->row && mc->row->wall_clock;
        /* An undecided verdict is withheld too: the table, the count and
         * the text all call it disturbed. */
        if (!(wall_clock || (cpu_time && in->machine_changed)) || !pb_metric_cmp_measured(mc))
            continue;
        mc->verdict = PB_VERDICT_DISTURBED;
        mc->repeats_to_decide = 0;
    }
}

/* The comparison's counts from its verdicts (after interference). */
static void count_verdicts(struct pb_comparison *out)
{
    out->regressions = out->improvements = out->ambiguous = out->setting_costs = 0;
    out->gated_regressions = out->disturbed = out->gated_withheld = 0;
    for (size_t i = 0; i < out->point_count; i++)
        for (int m = 0; m < out->points[i].metric_count; m++) {
            struct pb_metric_cmp *mc = &out->points[i].metrics[m];
            if (!pb_metric_cmp_measured(mc) || mc->machine)
                continue;
            /* A stage's row undecided is no call for more repeats. */
            bool untold = mc->stage[0] && !mc->gated && mc->verdict == PB_VERDICT_AMBIGUOUS;
            switch (mc->cost_of_setting || untold ? PB_VERDICT_SAME : mc->verdict) {
            case PB_VERDICT_REGRESSED: out->regressions++; break;
            case PB_VERDICT_IMPROVED: out->improvements++; break;
            case PB_VERDICT_AMBIGUOUS: out->ambiguous++; break;
            case PB_VERDICT_DISTURBED: out->disturbed++; break;
            default: break;
            }
            out->setting_costs += mc->cost_of_setting;
            out->gated_regressions +=
                mc->gated && !mc->cost_of_setting && mc->verdict == PB_VERDICT_REGRESSED;
            out->gated_withheld += mc->gated && mc->verdict == PB_VERDICT_DISTURBED;
        }
}

/* An --ideal comparison: the new side handed the job batches it kept
 * (wrap.ideal), so it ran no loader. Its stage rows and loader figures
 * (CPU per sample, batch assembly) compare nothing and are left out:
 * shown as not measured, no verdict. */
static void leave_out_loader(struct pb_point_cmp *pc)
{
    static const char *const loader_rows[] = {"cpu_ns_per_sample", "assembly_p50_ns",
                                              "assembly_p99_ns"};
    pc->metric_count = PB_METRIC_COUNT;
    pc->interference.no_loader = true;
    memset(&pc->explained, 0, sizeof(pc->explained));
    for (size_t k = 0; k < PB_ARRAY_LEN(loader_rows); k++) {
        struct pb_metric_cmp *mc = &pc->metrics[pb_metric_find(loader_rows[k]) - pb_metrics];
        mc->base_n = mc->next_n = 0;
        mc->base = mc->next = mc->change_pct = mc->ci_low_pct = mc->ci_high_pct = NAN;
        mc->p_value = mc->detectable = NAN;
        mc->verdict = PB_VERDICT_SAME;
    }
}

/* Both pb_compare and pb_compare_configs: the configs' differences are
 * incompatibilities, or (configs_may_differ) the change being compared. */
static int compare_results(const struct pb_result *base, const struct pb_result *next,
                           double threshold_pct, bool configs_may_differ, const char *history_db,
                           struct pb_comparison *out)
{
    memset(out, 0, sizeof(*out));
    out->threshold_pct = threshold_pct;
    out->interleaved = configs_may_differ;
    if (history_db)
        pb_strlcpy(out->history_db, history_db, sizeof(out->history_db));
    check_compatible(out, base, next, configs_may_differ);
    const json_t *ideal = pb_result_config_value(next, "wrap.ideal");
    bool no_loader = json_is_integer(ideal) && json_integer_value(ideal) > 0;
    out->points = calloc(base->point_count + 1, sizeof(*out->points));
    if (!out->points)
        return PB_ERR_NOMEM;
    for (size_t i = 0; i < base->point_count; i++)
        collect_stage_names(&out->base_stages, &base->points[i]);
    for (size_t i = 0; i < next->point_count; i++)
        collect_stage_names(&out->next_stages, &next->points[i]);
    for (size_t i = 0; i < base->point_count; i++) {
        const struct pb_point_result *a = &base->points[i];
        size_t j = 0;
        while (j < next->point_count && !axes_equal(a->axes, next->points[j].axes))
            j++;
        if (j == next->point_count) {
            out->unmatched++;
            continue;
        }
        struct pb_point_cmp *pc = &out->points[out->point_count++];
        pc->base_index = i;
        pc->next_index = j;
        axes_label(a->axes, pc->label, sizeof(pc->label));
        pc->metric_count = PB_METRIC_COUNT;
        double spread[PB_METRIC_COUNT];
        int runs = 0;
        pb_history_run_spread(history_db, base, i, spread, &runs);
        out->history_runs = runs > out->history_runs ? runs : out->history_runs;
        for (int m = 0; m < PB_METRIC_COUNT; m++)
            compare_metric(m, a, &next->points[j], threshold_pct,
                           0x5eed + (uint64_t)i * 131 + (uint64_t)m, spread[m], runs,
                           &pc->metrics[m]);
        const struct pb_metric *cpu = pb_metric_find("cpu_ns_per_sample");
        compare_stages(pc, a, &next->points[j], threshold_pct, 0x57a9e + (uint64_t)i * 131,
                       pc->metrics[cpu - pb_metrics].base);
        explain_cpu_change(pc, threshold_pct);
        if (no_loader)
            leave_out_loader(pc);
        for (int m = 0; m < pc->metric_count; m++) {
            /* A stage's CPU time is the process's, as cpu_ns_per_sample. */
            struct pb_metric_cmp *mc = &pc->metrics[m];
            const struct pb_metric *row = mc->row ? mc->row : pb_metric_find("cpu_ns_per_sample");
            mc->cost_of_setting = mc->verdict == PB_VERDICT_REGRESSED && row->setting_cost &&
                                  out->setting_change_count > 0 &&
                                  (!row->loader_cost || out->loader_changed);
            mc->gated = mc->row && mc->row->gates;
        }
        apply_interference(pc, a, &next->points[j]);
    }
    count_verdicts(out);
    out->unmatched += (int)(next->point_count > out->point_count ? next->point_count - out->point_count : 0);
    return PB_OK;
}

int pb_compare(const struct pb_result *base, const struct pb_result *next, double threshold_pct,
               struct pb_comparison *out)
{
    return compare_results(base, next, threshold_pct, false, NULL, out);
}

int pb_compare_runs(const struct pb_result *base, const struct pb_result *next,
                    double threshold_pct, const char *history_db, struct pb_comparison *out)
{
    return compare_results(base, next, threshold_pct, false, history_db, out);
}

int pb_compare_configs(const struct pb_result *base, const struct pb_result *next,
                       double threshold_pct, struct pb_comparison *out)
{
    return compare_results(base, next, threshold_pct, true, NULL, out);
}

void pb_comparison_free(struct pb_comparison *cmp)
{
    free(cmp->points);
    memset(cmp, 0, sizeof(*cmp));
}

/* Whether the comma-separated list names holds name exactly. */
static bool names_hold(const char *names, const char *name)
{
    size_t want = strlen(name);
    for (const char *at = names; at && *at;) {
        size_t len = strcspn(at, ",");
        if (len == want && strncmp(at, name, len) == 0)
            return true;
        at += len + (at[len] == ',');
    }
    return false;
}

/* Whether names holds name. */
static bool stage_named(const struct pb_stage_names *names, const char *name, size_t len)
{
    for (int k = 0; k < names->count; k++)
        if (strlen(names->names[k]) == len && strncmp(names->names[k], name, len) == 0)
            return true;
    return false;
}

/* Appends "; the base ran: a, b" for one side's stages to msg at *used. */
static void list_stages(char *msg, size_t msglen, size_t *used, const char *side,
                        const struct pb_stage_names *names)
{
    if (*used < msglen)
        *used += (size_t)snprintf(msg + *used, msglen - *used, "; %s ran:", side);
    for (int k = 0; k < names->count && *used < msglen; k++)
        *used += (size_t)snprintf(msg + *used, msglen - *used, "%s %s", k ? "," : "",
                                  names->names[k]);
    if (names->count == 0 && *used < msglen)
        *used += (size_t)snprintf(msg + *used, msglen - *used, " no timed stage");
}

/* Checks one name of --gate (len bytes at name): a row of the metric
 * table, or cpu_ns_per_sample.STAGE of a stage either side ran (any stage
 * before points are compared). PB_OK, or PB_ERR_CONFIG with msg listing
 * the names known. */
static int gate_name_check(const struct pb_comparison *cmp, const char *name, size_t len,
                           char *msg, size_t msglen)
{
    size_t prefix = strlen(PB_STAGE_CPU_PREFIX), used = 0;
    bool stage = len > prefix && strncmp(name, PB_STAGE_CPU_PREFIX, prefix) == 0;
    for (int m = 0; m < PB_METRIC_COUNT; m++)
        if (strlen(pb_metrics[m].name) == len && strncmp(pb_metrics[m].name, name, len) == 0)
            return PB_OK;
    if (stage && (cmp->point_count == 0 ||
                  stage_named(&cmp->base_stages, name + prefix, len - prefix) ||
                  stage_named(&cmp->next_stages, name + prefix, len - prefix)))
        return PB_OK;
    char names[512];
    pb_metric_names(names, sizeof(names), ", ", PB_METRICS_GATEABLE);
    if (stage) {
        used = (size_t)snprintf(msg, msglen,
                                "--gate: no stage '%.*s' on either side, so the gate would "
                                "gate nothing",
                                (int)(len - prefix), name + prefix);
        list_stages(msg, msglen, &used, "the base", &cmp->base_stages);
        list_stages(msg, msglen, &used, "the new", &cmp->next_stages);
        if (used < msglen)
            snprintf(msg + used, msglen - used, " (name one as " PB_STAGE_CPU_PREFIX
                                                "STAGE); the metrics: %s", names);
        return PB_ERR_CONFIG;
    }
    snprintf(msg, msglen, "--gate: unknown metric '%.*s'; allowed: %s, or " PB_STAGE_CPU_PREFIX
                          "STAGE for a stage's",
             (int)len, name, names);
    return PB_ERR_CONFIG;
}

int pb_comparison_gate(struct pb_comparison *cmp, const char *names, char *msg, size_t msglen)
{
    for (const char *at = names; at && *at;) {
        size_t len = strcspn(at, ",");
        if (gate_name_check(cmp, at, len, msg, msglen) != PB_OK)
            return PB_ERR_CONFIG;
        at += len + (at[len] == ',');
    }
    for (size_t i = 0; i < cmp->point_count; i++)
        for (int m = 0; m < cmp->points[i].metric_count; m++) {
            struct pb_metric_cmp *mc = &cmp->points[i].metrics[m];
            mc->gated = (mc->row && mc->row->gates) || names_hold(names, mc->name);
        }
    count_verdicts(cmp);
    return PB_OK;
}

const char *pb_metric_cmp_verdict(const struct pb_metric_cmp *mc)
{
    return pb_metric_cmp_measured(mc) ? pb_verdict_name(mc->verdict) : "not measured";
}

const char *pb_verdict_name(enum pb_verdict verdict)
{
    static const char *const names[] = {"same", "improved", "regressed", "ambiguous", "disturbed"};
    return names[verdict];
}

/* A point's change of CPU per sample and the stages that explain it,
 * largest share first. */
static json_t *explanation_json(const struct pb_point_cmp *pc)
{
    const struct pb_cpu_explanation *e = &pc->explained;
    json_t *stages = json_array();
    for (int k = 0; k < e->count; k++) {
        const struct pb_metric_cmp *mc = &pc->metrics[e->metric[k]];
        json_array_append_new(stages, json_pack("{s:s,s:f,s:f,s:b,s:b}", "stage", mc->stage,
                                                "change_ns", mc->next - mc->base,
                                                "share_of_change_pct", e->share_pct[k], "added",
                                                mc->added, "removed", mc->removed));
    }
    return json_pack("{s:o,s:o,s:o}", "change_ns",
                     isnan(e->change_ns) ? json_null() : json_real(e->change_ns), "change_pct",
                     isnan(e->change_pct) ? json_null() : json_real(e->change_pct),
                     "explained_by", stages);
}

json_t *pb_comparison_to_json(const struct pb_comparison *cmp)
{
    json_t *root = json_object();
    json_object_set_new(root, "threshold_pct", json_real(cmp->threshold_pct));
    json_object_set_new(root, "alpha", json_real(PB_COMPARE_ALPHA));
    json_object_set_new(root, "power", json_real(PB_COMPARE_POWER));
    json_object_set_new(root, "incompatible", json_boolean(cmp->incompatible));
    json_object_set_new(root, "interleaved", json_boolean(cmp->interleaved));
    json_object_set_new(root, "values", json_string("median over each side's repeats"));
    json_t *diffs = json_array();
    for (int i = 0; i < cmp->difference_count; i++)
        json_array_append_new(diffs, json_string(cmp->differences[i]));
    json_object_set_new(root, "differences", diffs);
    json_t *changes = json_array();
    for (int i = 0; i < cmp->setting_change_count; i++)
        json_array_append_new(changes, json_string(cmp->setting_changes[i]));
    json_object_set_new(root, "setting_changes", changes);
    json_object_set_new(root, "regressions", json_integer(cmp->regressions));
    json_object_set_new(root, "gated_regressions", json_integer(cmp->gated_regressions));
    json_object_set_new(root, "improvements", json_integer(cmp->improvements));
    json_object_set_new(root, "ambiguous", json_integer(cmp->ambiguous));
    json_object_set_new(root, "disturbed", json_integer(cmp->disturbed));
    json_object_set_new(root, "gated_withheld", json_integer(cmp->gated_withheld));
    json_object_set_new(root, "unmatched_points", json_integer(cmp->unmatched));
    json_object_set_new(root, "history",
                        cmp->history_db[0] ? json_pack("{s:s,s:i}", "db", cmp->history_db,
                                                       "runs", cmp->history_runs)
                                           : json_null());
    json_t *points = json_array();
    for (size_t i = 0; i < cmp->point_count; i++) {
        const struct pb_point_cmp *pc = &cmp->points[i];
        json_t *p = json_object();
        json_object_set_new(p, "point", json_string(pc->label));
        const struct pb_interference *in = &pc->interference;
        json_object_set_new(
            p, "interference",
            json_pack("{s:{s:f,s:[f,f],s:f},s:{s:f,s:[f,f],s:f},s:b}", "base", "other_cpu_pct",
                      in->base_other, "other_cpu_range", in->base_other_lo, in->base_other_hi,
                      "steal_pct", in->base_steal, "new", "other_cpu_pct", in->next_other,
                      "other_cpu_range", in->next_other_lo, in->next_other_hi, "steal_pct",
                      in->next_steal, "disturbed", in->disturbed));
        json_t *inj = json_object_get(p, "interference");
        json_object_set_new(inj, "machine",
                            json_pack("{s:o,s:f,s:f,s:b,s:b}", "reference_change_pct",
                                      isnan(in->machine_change_pct)
                                          ? json_null()
                                          : json_real(in->machine_change_pct),
                                      "base_throttled_pct", in->base_throttled,
                                      "new_throttled_pct", in->next_throttled, "changed",
                                      in->machine_changed, "throttled", in->throttled));
        json_object_set_new(inj, "gpu_slowed_repeats",
                            json_pack("{s:i, s:i, s:b}", "base", in->base_gpu_slowed, "new",
                                      in->next_gpu_slowed, "disturbed", in->gpu_slowed));
        json_t *metrics = json_array();
        for (int m = 0; m < pc->metric_count; m++) {
            const struct pb_metric_cmp *mc = &pc->metrics[m];
            json_t *o = json_object();
            json_object_set_new(o, "metric", json_string(mc->name));
            if (mc->stage[0]) {
                json_object_set_new(o, "stage", json_string(mc->stage));
                json_object_set_new(o, "added", json_boolean(mc->added));
                json_object_set_new(o, "removed", json_boolean(mc->removed));
                json_object_set_new(o, "share_of_pipeline_pct",
                                    isnan(mc->share_pct) ? json_null() : json_real(mc->share_pct));
            }
            json_object_set_new(o, "base", json_real(mc->base));
            json_object_set_new(o, "new", json_real(mc->next));
            json_object_set_new(o, mc->absolute ? "change_pp" : "change_pct",
                                isnan(mc->change_pct) ? json_null() : json_real(mc->change_pct));
            json_object_set_new(o, "ci95", isnan(mc->ci_low_pct)
                                               ? json_null()
                                               : json_pack("[f f]", mc->ci_low_pct, mc->ci_high_pct));
            json_object_set_new(o, "p_value", isnan(mc->p_value) ? json_null() : json_real(mc->p_value));
            json_object_set_new(o, "repeats", json_pack("[i i]", mc->base_n, mc->next_n));
            json_object_set_new(o, "verdict", json_string(pb_metric_cmp_verdict(mc)));
            json_object_set_new(o, "gated", json_boolean(mc->gated));
            if (mc->cost_of_setting)
                json_object_set_new(o, "cost_of_setting", json_true());
            json_object_set_new(o, "min_p", isnan(mc->min_p) ? json_null() : json_real(mc->min_p));
            json_object_set_new(o, "can_reach_alpha", json_boolean(mc->min_p < PB_COMPARE_ALPHA));
            json_object_set_new(o, mc->absolute ? "noise_pp" : "noise_pct",
                                isnan(mc->noise) ? json_null() : json_real(mc->noise));
            json_object_set_new(o, mc->absolute ? "detectable_change_pp" : "detectable_change_pct",
                                isfinite(mc->detectable) ? json_real(mc->detectable) : json_null());
            json_object_set_new(o, mc->absolute ? "run_noise_pp" : "run_noise_pct",
                                isnan(mc->run_noise) ? json_null() : json_real(mc->run_noise));
            json_object_set_new(o, "run_noise_runs", json_integer(mc->run_noise_runs));
            json_object_set_new(o, "repeats_to_decide",
                                mc->repeats_to_decide > 0 ? json_integer(mc->repeats_to_decide)
                                                          : json_null());
            json_array_append_new(metrics, o);
        }
        json_object_set_new(p, "metrics", metrics);
        json_object_set_new(p, "cpu_per_sample_change", explanation_json(pc));
        json_array_append_new(points, p);
    }
    json_object_set_new(root, "points", points);
    return root;
}

int pb_threshold_parse(const char *text, double *threshold_pct)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || (*end && strcmp(end, "%") != 0) || !(v >= 0 && v < 1000))
        return PB_ERR_CONFIG;
    *threshold_pct = v;
    return PB_OK;
}

int pb_compare_files(const char *base_path, const char *next_path, double threshold_pct,
                     const char *history_db, struct pb_comparison *out, char *msg,
                     size_t msglen)
{
    struct pb_result base, next;
    memset(&next, 0, sizeof(next));
    int rc = pb_result_read(base_path, &base, msg, msglen);
    if (rc == PB_OK)
        rc = pb_result_read(next_path, &next, msg, msglen);
    if (rc == PB_OK && pb_compare_runs(&base, &next, threshold_pct, history_db, out) != PB_OK) {
        snprintf(msg, msglen, "out of memory");
        rc = PB_ERR_NOMEM;
    }
    pb_result_free(&base);
    pb_result_free(&next);
    return rc == PB_OK ? PB_OK : rc == PB_ERR_NOMEM ? rc : PB_ERR;
}
