/* The conclusions pbench draws about a wrapped training job (docs/wrap.md),
 * on hand-made results whose right answers are known: a sweep ranked by
 * what the job gains (its samples/s), not by its step's share of the loop,
 * and withheld where other processes disturbed it; the capacity line that
 * counts the job's main process's own CPU; --ideal's comparison without
 * the loader rows an ideal run cannot have, and its headline marked when
 * a side was disturbed; a compare of two wrapped results that lists a
 * change of the job's command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/analyze/compare.h"
#include "bench/analyze/verdict.h"
#include "bench/report/compare_text.h"
#include "bench/report/report.h"
#include "bench/report/report_wrap.h"
#include "bench/report/warnings.h"
#include "tests/testutil.h"

/* One point of a wrapped job: its workers, samples/s (batch 8 unless
 * given), its step's share of the loop, what other processes took, and
 * its loading's CPU per sample and its processes' CPU (100 = a core). */
struct job_point {
    int workers;
    double samples_per_s, step_pct, other_pct;
    double loading_ms, cpu_util_pct;
    int batch;
};

#define WALL_S 10.0
#define REPEATS 2

static void fill_repeat(struct pb_repeat_result *rep, const struct job_point *row)
{
    int batch = row->batch ? row->batch : 8;
    rep->wall_s = WALL_S;
    rep->samples_per_s = row->samples_per_s;
    rep->batches_per_s = row->samples_per_s / batch;
    rep->samples = (uint64_t)(row->samples_per_s * WALL_S);
    rep->batches = rep->samples / (uint64_t)batch;
    rep->loop_step_pct = rep->accel_util_pct = row->step_pct;
    rep->stall_pct = 95 - row->step_pct;
    rep->loop_other_pct = 5;
    rep->other_cpu_pct = row->other_pct;
    rep->cpu_util_pct = row->cpu_util_pct;
    rep->stages = calloc(1, sizeof(*rep->stages));
    rep->stage_count = 1;
    snprintf(rep->stages[0].name, sizeof(rep->stages[0].name), "getitem");
    rep->stages[0].hist.count = rep->samples;
    rep->stages[0].cpu_ns = (uint64_t)(row->loading_ms * 1e6 * (double)rep->samples);
}

/* A wrapped job's result, one point a row (axis loader.workers when
 * there are two or more), on a machine of pus hardware threads. */
static void make(struct pb_result *r, const struct job_point *rows, size_t n, int pus)
{
    memset(r, 0, sizeof(*r));
    r->machine.pus = r->machine.cores = pus;
    r->config = json_pack("{s {s s} s {s s s s}}", "loader", "engine", "wrap", "wrap", "command",
                          "python3 train.py", "set", n > 1 ? "workers" : "");
    r->points = calloc(n, sizeof(*r->points));
    r->point_count = n;
    for (size_t i = 0; i < n; i++) {
        struct pb_point_result *p = &r->points[i];
        p->axes = n > 1 ? json_pack("{s i}", "loader.workers", rows[i].workers) : json_object();
        p->repeats = calloc(REPEATS, sizeof(*p->repeats));
        p->repeat_count = REPEATS;
        for (int k = 0; k < REPEATS; k++)
            fill_repeat(&p->repeats[k], &rows[i]);
        const struct pb_repeat_result *rep = &p->repeats[0];
        p->samples_per_s = rep->samples_per_s;
        p->samples_per_s_noise_pct = 1;
        p->batches_per_s = rep->batches_per_s;
        p->stall_pct = rep->stall_pct;
        p->accel_util_pct = p->loop_step_pct = rep->loop_step_pct;
        p->cpu_util_pct = rep->cpu_util_pct;
        p->other_cpu_pct = rep->other_cpu_pct;
        p->rss_peak_bytes = 200ull << 20;
        p->stages = calloc(1, sizeof(*p->stages));
        p->stage_count = 1;
        p->stages[0] = rep->stages[0];
        p->stages[0].hist.count *= REPEATS;
        p->stages[0].cpu_ns *= REPEATS;
    }
}

/* The terminal table of r into *text (the caller frees it). */
static void table_of(char **text, const struct pb_result *r, const struct pb_analysis *an)
{
    size_t size = 0;
    FILE *out = open_memstream(text, &size);
    pb_report_table(out, r, an);
    fclose(out);
}

/* Beside the workers the job's own CPU step slows down: its share of the
 * loop rises (1 worker: 70%) while the job gets slower (44.8 against 95.9
 * samples/s with 2). The sweep recommends what the job gains. */
static void test_a_sweep_ranks_by_what_the_job_gains(void **state)
{
    (void)state;
    const struct job_point rows[] = {{1, 44.8, 70, 2, 3, 120, 0},
                                     {2, 95.9, 45, 2, 3, 150, 0},
                                     {3, 92.0, 40, 2, 3, 160, 0}};
    struct pb_result r;
    struct pb_analysis an;
    make(&r, rows, 3, 2);
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_int_equal(an.recommended, 1);
    assert_string_equal(an.withheld, "");
    pb_test_assert_contains(an.rule, (const char *const[]){"what it gains", "samples/s", NULL});
    pb_test_assert_contains(an.reason,
                            (const char *const[]){"loader.workers=2 gives 95.9 samples/s (11.99 "
                                                  "steps/s)",
                                                  NULL});
    char *text = NULL;
    table_of(&text, &r, &an);
    pb_test_assert_contains(text, (const char *const[]){"(* = recommended)",
                                                        "recommended point: loader.workers=2",
                                                        NULL});
    assert_null(strstr(text, "capped")); /* no repeat stopped noisy at a cap: no legend of it */
    free(text);
    r.points[2].repeats[0].noisy = true;
    table_of(&text, &r, &an);
    assert_non_null(strstr(text, "capped = a repeat reached run.max_time_s"));
    free(text);
    json_t *j = pb_analysis_to_json(&an);
    assert_int_equal(json_integer_value(json_object_get(j, "recommended")), 1);
    assert_null(json_object_get(j, "withheld"));
    json_decref(j);
    pb_analysis_free(&an);
    pb_result_free(&r);
}

/* Other processes at 35% of the CPU during one point: the recommendation
 * is withheld as compare would withhold a verdict, saying why; no point
 * is marked in the table, the JSON or the CSV. */
static void test_a_disturbed_sweep_withholds_its_recommendation(void **state)
{
    (void)state;
    const struct job_point rows[] = {{1, 44.8, 70, 35, 3, 120, 0},
                                     {2, 95.9, 45, 4, 3, 150, 0}};
    struct pb_result r;
    struct pb_analysis an;
    make(&r, rows, 2, 2);
    assert_int_equal(pb_analyze(&r, &an), 0);
    pb_test_assert_contains(an.withheld,
                            (const char *const[]){"disturbed", "35% at loader.workers=1",
                                                  "from 10%", "loader.workers=2 (95.9 samples/s)",
                                                  "quiet machine", NULL});
    assert_null(strstr(an.withheld, "at loader.workers=2,"));
    assert_int_equal(pb_analysis_marked(&an), -1);
    char *text = NULL;
    table_of(&text, &r, &an);
    pb_test_assert_contains(text, (const char *const[]){"recommendation withheld: below",
                                                        "withheld, disturbed",
                                                        "the rule's point (withheld)", NULL});
    assert_null(strstr(text, "recommended point:"));
    free(text);
    json_t *j = pb_analysis_to_json(&an);
    assert_true(json_is_null(json_object_get(j, "recommended")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "withheld"), "point")),
                     1);
    json_decref(j);
    pb_analysis_free(&an);
    pb_result_free(&r);
}

/* Whether a suggestion of an says text. */
static bool suggests(const struct pb_analysis *an, const char *text)
{
    for (int k = 0; k < an->suggestion_count; k++)
        if (strstr(an->suggestions[k], text))
            return true;
    return false;
}

/* More workers measured no faster is a conclusion of the sweep: on a
 * quiet machine it is said, on a disturbed one (the recommendation
 * withheld) it is not. */
static void test_a_disturbed_sweep_draws_no_worker_conclusion(void **state)
{
    (void)state;
    struct job_point rows[] = {{1, 44.8, 40, 2, 3, 120, 0},
                               {2, 95.9, 45, 2, 3, 150, 0},
                               {3, 80.0, 45, 2, 3, 150, 0}};
    struct pb_result r;
    struct pb_analysis an;
    make(&r, rows, 3, 4);
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_false(an.withheld[0]);
    assert_true(suggests(&an, "more workers do not help here"));
    pb_analysis_free(&an);
    pb_result_free(&r);
    rows[2].other_pct = 40;
    make(&r, rows, 3, 4);
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_true(an.withheld[0]);
    assert_false(suggests(&an, "more workers do not help here"));
    pb_analysis_free(&an);
    pb_result_free(&r);
}

/* A CPU training job on 2 hardware threads: a 100 ms step at batch 32
 * needs 320 samples/s, 1.28 cores of loading at 4 ms a sample; its main
 * process takes 100 ms of CPU a step (114% of a core over the window less
 * the 64% its loading took), a whole core at that pace. One core is left
 * for 1.28 of loading: not enough. */
static void test_capacity_counts_the_jobs_own_cpu(void **state)
{
    (void)state;
    const struct job_point rows[] = {{2, 160, 50, 2, 4, 114, 32}};
    struct pb_result r;
    struct pb_analysis an;
    make(&r, rows, 1, 2);
    assert_int_equal(pb_analyze(&r, &an), 0);
    pb_test_assert_contains(
        an.capacity, (const char *const[]){"a 100 ms step at batch 32 needs 320 samples/s",
                                           "1.3 cores of loading",
                                           "the job's main process 1.0 of its own (100 ms of CPU "
                                           "a step, measured)",
                                           "2 hardware threads: not enough: short by 0.3", NULL});
    pb_analysis_free(&an);
    pb_result_free(&r);
    /* A job whose step barely uses the CPU (a GPU's): room to spare. */
    const struct job_point light[] = {{2, 160, 50, 2, 4, 69, 32}};
    make(&r, light, 1, 2);
    assert_int_equal(pb_analyze(&r, &an), 0);
    pb_test_assert_contains(an.capacity,
                            (const char *const[]){"main process 0.1 of its own",
                                                  "enough, with 0.6 to spare", NULL});
    pb_analysis_free(&an);
    pb_result_free(&r);
}

/* --ideal: the new side (wrap.ideal) ran no loader, so the comparison
 * holds no stage rows and leaves the loader's figures unmeasured; the job's
 * speed is compared. */
static void test_ideal_compares_no_loader(void **state)
{
    (void)state;
    const struct job_point job[] = {{2, 100, 60, 2, 3, 150, 0}};
    const struct job_point ideal[] = {{2, 166, 95, 2, 0.5, 120, 0}};
    struct pb_result a, b;
    make(&a, job, 1, 2);
    make(&b, ideal, 1, 2);
    json_object_set_new(json_object_get(b.config, "wrap"), "ideal", json_integer(8));
    b.points[0].repeats[1].samples_per_s = 170; /* two values a side */
    a.points[0].repeats[1].samples_per_s = 98;
    struct pb_comparison cmp;
    assert_int_equal(pb_compare_configs(&a, &b, 5, &cmp), 0);
    const struct pb_point_cmp *pc = &cmp.points[0];
    assert_int_equal(pc->metric_count, PB_METRIC_COUNT);
    assert_int_equal(pc->explained.count, 0);
    const struct pb_metric_cmp *cpu = &pc->metrics[pb_metric_find("cpu_ns_per_sample") - pb_metrics];
    assert_false(pb_metric_cmp_measured(cpu));
    const struct pb_metric_cmp *sps = &pc->metrics[pb_metric_find("samples_per_s") - pb_metrics];
    assert_true(pb_metric_cmp_measured(sps));
    assert_true(sps->change_pct > 60);
    pb_comparison_free(&cmp);
    /* The job against itself without --ideal keeps its stage rows. */
    json_object_del(json_object_get(b.config, "wrap"), "ideal");
    assert_int_equal(pb_compare_configs(&a, &b, 5, &cmp), 0);
    assert_true(cmp.points[0].metric_count > PB_METRIC_COUNT);
    pb_comparison_free(&cmp);
    pb_result_free(&a);
    pb_result_free(&b);
}

/* A disturbed --ideal comparison withholds the wall-clock verdicts and
 * says what it still compares: memory, not CPU per sample, which its new
 * side (no loader) never measured. */
static void test_a_disturbed_ideal_says_what_it_still_compares(void **state)
{
    (void)state;
    const struct job_point job[] = {{2, 100, 60, 40, 3, 150, 0}};
    const struct job_point ideal[] = {{2, 166, 95, 40, 0.5, 120, 0}};
    struct pb_result a, b;
    make(&a, job, 1, 2);
    make(&b, ideal, 1, 2);
    json_object_set_new(json_object_get(b.config, "wrap"), "ideal", json_integer(8));
    struct pb_comparison cmp;
    assert_int_equal(pb_compare_configs(&a, &b, 5, &cmp), 0);
    assert_true(cmp.points[0].interference.disturbed);
    char text[1024];
    pb_interference_text(&cmp.points[0], text, sizeof text);
    assert_non_null(strstr(text, "; memory is still compared"));
    assert_null(strstr(text, "CPU time per sample and memory are still compared"));
    pb_comparison_free(&cmp);
    pb_result_free(&a);
    pb_result_free(&b);
}

static char *ideal_headline(bool disturbed)
{
    struct pb_result r;
    memset(&r, 0, sizeof r);
    /* As a result's config holds them: the engine, whose row names the
     * section wrap.ideal is in. */
    r.interleaved = json_pack("{s {s {s {s i} s {s s}}}}", "new", "config", "wrap", "ideal", 8,
                              "loader", "engine", "wrap");
    struct pb_comparison cmp;
    memset(&cmp, 0, sizeof cmp);
    struct pb_point_cmp pc;
    memset(&pc, 0, sizeof pc);
    snprintf(pc.label, sizeof pc.label, "(single point)");
    pc.metric_count = 1;
    snprintf(pc.metrics[0].name, sizeof pc.metrics[0].name, "samples_per_s");
    pc.metrics[0].base = 40;
    pc.metrics[0].next = 66.4;
    pc.metrics[0].ci_low_pct = 50;
    pc.metrics[0].ci_high_pct = 80;
    pc.interference.disturbed = disturbed;
    pc.interference.base_other = 53;
    pc.interference.next_other = 48;
    cmp.points = &pc;
    cmp.point_count = 1;
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    pb_report_wrap_ideal(out, &r, &cmp);
    fclose(out);
    json_decref(r.interleaved);
    return text;
}

/* The ideal headline from a disturbed side says so, with what the other
 * processes took; from a quiet one it does not. */
static void test_a_disturbed_ideal_headline_says_so(void **state)
{
    (void)state;
    char *text = ideal_headline(true);
    pb_test_assert_contains(text, (const char *const[]){"ideal loader (disturbed):", "+66%",
                                                        "Disturbed: other processes took 53%",
                                                        "48% beside the ideal loader", NULL});
    free(text);
    text = ideal_headline(false);
    pb_test_assert_contains(text, (const char *const[]){"ideal loader: a loader", "+66%", NULL});
    assert_null(strstr(text, "isturbed"));
    free(text);
}

/* Two results of one job under two commands: compare lists the command's
 * change as it lists a setting's, from the word where they differ. */
static void test_compare_lists_a_command_change(void **state)
{
    (void)state;
    const struct job_point job[] = {{2, 100, 60, 2, 3, 150, 0}};
    struct pb_result a, b;
    make(&a, job, 1, 2);
    make(&b, job, 1, 2);
    static const char base[] = "/usr/bin/python3 /home/someone/projects/vision/train.py --data "
                               "/home/someone/data/imagenet-subset --epochs 90 --lr 0.1";
    char next[400];
    snprintf(next, sizeof next, "%s --fast-augment", base);
    json_object_set_new(json_object_get(a.config, "wrap"), "command", json_string(base));
    json_object_set_new(json_object_get(b.config, "wrap"), "command", json_string(next));
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&a, &b, 5, &cmp), 0);
    assert_false(cmp.incompatible);
    assert_int_equal(cmp.setting_change_count, 1);
    pb_test_assert_contains(cmp.setting_changes[0],
                            (const char *const[]){"wrap.command: \"...--lr 0.1\" -> \"...--lr 0.1 "
                                                  "--fast-augment\"",
                                                  NULL});
    /* Which figure the comparison shows is named: the median of the
     * repeats, where a run's table pools stall. */
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    pb_comparison_table(out, &cmp, "a.json", "b.json");
    fclose(out);
    pb_test_assert_contains(text, (const char *const[]){"setting changed: wrap.command",
                                                        "each side's median over its repeats",
                                                        "pools stall", NULL});
    free(text);
    json_t *j = pb_comparison_to_json(&cmp);
    assert_string_equal(json_string_value(json_object_get(j, "values")),
                        "median over each side's repeats");
    json_decref(j);
    pb_comparison_free(&cmp);
    pb_result_free(&a);
    pb_result_free(&b);
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle))
        n++;
    return n;
}

/* A sweep's points that warn of one cause with their own figures give one
 * warning line, saying how many more points share it. */
static void test_warnings_once_per_cause(void **state)
{
    (void)state;
    assert_true(pb_warning_same_cause("other processes used 96% (steal 0%)",
                                      "other processes used 4.5% (steal 12%)"));
    assert_false(pb_warning_same_cause("other processes used 96%", "other processes took 96%"));
    assert_false(pb_warning_same_cause("3 of 4 repeats", "3 of 4 repeats were noisy"));
    const struct job_point rows[] = {{1, 44.8, 70, 35, 3, 120, 0},
                                     {2, 95.9, 45, 40, 3, 150, 0},
                                     {3, 92.0, 40, 52, 3, 160, 0}};
    struct pb_result r;
    struct pb_analysis an;
    make(&r, rows, 3, 2);
    for (size_t i = 0; i < 3; i++)
        pb_point_warn(&r.points[i], "other processes used %.0f%% of the machine's CPU",
                      rows[i].other_pct);
    pb_point_warn(&r.points[2], "a cause of its own");
    assert_int_equal(pb_analyze(&r, &an), 0);
    char *text = NULL;
    table_of(&text, &r, &an);
    assert_int_equal(count_of(text, "warning: other processes used"), 1);
    pb_test_assert_contains(text, (const char *const[]){
        "used 35% of the machine's CPU (first at loader.workers=1; alike at 2 more, with their "
        "figures)",
        "warning: a cause of its own (first at loader.workers=3)", NULL});
    free(text);
    pb_analysis_free(&an);
    pb_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_sweep_ranks_by_what_the_job_gains),
        cmocka_unit_test(test_a_disturbed_sweep_withholds_its_recommendation),
        cmocka_unit_test(test_capacity_counts_the_jobs_own_cpu),
        cmocka_unit_test(test_a_disturbed_sweep_draws_no_worker_conclusion),
        cmocka_unit_test(test_ideal_compares_no_loader),
        cmocka_unit_test(test_a_disturbed_ideal_says_what_it_still_compares),
        cmocka_unit_test(test_a_disturbed_ideal_headline_says_so),
        cmocka_unit_test(test_compare_lists_a_command_change),
        cmocka_unit_test(test_warnings_once_per_cause),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
