/* The analysis on hand-made results whose right answers are known: the
 * input-bound verdict thresholds, the recommendation rule (ties within the
 * noise, the memory and batch tie-breaks, a failed point, the accelerator
 * utilization rule and its fallback) and the knee of the workers series. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/analyze/analysis.h"
#include "bench/analyze/verdict.h"
#include "bench/config/config.h"
#include "bench/report/report.h"
#include "tests/testutil.h"

struct spec_point {
    int workers, batch;
    double sps, noise, stall, accel, cpu;
    uint64_t rss_mib;
    const char *error;
};

/* A result with one point per row, axes loader.workers and loader.batch_size. */
static void make(struct pb_result *r, const struct spec_point *rows, size_t n, double step_ms)
{
    memset(r, 0, sizeof(*r));
    r->machine.pus = 8;
    r->machine.cores = 8;
    r->machine.memory_bytes = 64ull << 30;
    r->config = json_pack("{s {s i s i s i} s {s f}}", "loader", "workers", 2, "batch_size", 32,
                          "prefetch_factor", 2, "run", "step_ms", step_ms);
    r->points = calloc(n, sizeof(*r->points));
    r->point_count = n;
    for (size_t i = 0; i < n; i++) {
        struct pb_point_result *p = &r->points[i];
        p->axes = json_pack("{s i s i}", "loader.workers", rows[i].workers, "loader.batch_size",
                            rows[i].batch);
        p->repeat_count = 3; /* the analysis reads summaries only */
        p->samples_per_s = rows[i].sps;
        p->samples_per_s_noise_pct = rows[i].noise;
        p->stall_pct = rows[i].stall;
        p->accel_util_pct = rows[i].accel;
        p->worker_cpu_pct = rows[i].cpu;
        p->rss_peak_bytes = rows[i].rss_mib << 20;
        if (rows[i].error)
            snprintf(p->error, sizeof(p->error), "%s", rows[i].error);
        p->stages = calloc(2, sizeof(*p->stages));
        p->stage_count = 2;
        snprintf(p->stages[0].name, sizeof(p->stages[0].name), "read");
        p->stages[0].share_pct = 10;
        snprintf(p->stages[1].name, sizeof(p->stages[1].name), "decode");
        p->stages[1].share_pct = 90;
    }
}

static void release(struct pb_result *r)
{
    for (size_t i = 0; i < r->point_count; i++) {
        json_decref(r->points[i].axes);
        free(r->points[i].stages);
    }
    free(r->points);
    json_decref(r->config);
}

static int recommend(const struct spec_point *rows, size_t n, double step_ms, struct pb_analysis *an,
                     struct pb_result *r)
{
    make(r, rows, n, step_ms);
    assert_int_equal(pb_analyze(r, an), 0);
    return an->recommended;
}

static void test_ties_within_three_percent_prefer_fewer_workers(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {1, 32, 1000, 1, 30, 0, 95, 100, NULL},
        {2, 32, 1960, 1, 10, 0, 95, 120, NULL}, /* 2% under the best: a tie */
        {4, 32, 2000, 1, 5, 0, 60, 160, NULL},
    };
    struct pb_result r;
    struct pb_analysis an;
    assert_int_equal(recommend(rows, 3, 0, &an, &r), 1);
    assert_non_null(strstr(an.rule, "within 3.0% of the best"));
    assert_non_null(strstr(an.reason, "98.0% of the best"));
    pb_analysis_free(&an);
    release(&r);
}

static void test_noise_widens_the_tie(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {1, 32, 1820, 1, 30, 0, 95, 100, NULL},  /* 9% under: a tie at 10% noise */
        {2, 32, 1700, 1, 10, 0, 95, 120, NULL},  /* 15% under: not a tie */
        {4, 32, 2000, 10, 5, 0, 60, 160, NULL},
    };
    struct pb_result r;
    struct pb_analysis an;
    assert_int_equal(recommend(rows, 3, 0, &an, &r), 0);
    assert_non_null(strstr(an.rule, "within 10.0% of the best"));
    pb_analysis_free(&an);
    release(&r);
}

static void test_memory_then_batch_break_ties(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {2, 64, 2000, 1, 5, 0, 90, 400, NULL},
        {2, 32, 1990, 1, 5, 0, 90, 200, NULL}, /* same workers, half the memory */
        {2, 16, 1985, 1, 5, 0, 90, 205, NULL}, /* memory within 5%: smaller batch wins */
    };
    struct pb_result r;
    struct pb_analysis an;
    assert_int_equal(recommend(rows, 3, 0, &an, &r), 2);
    pb_analysis_free(&an);
    release(&r);
}

static void test_failed_point_is_never_recommended(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {1, 32, 9000, 1, 0, 0, 95, 100, "decode: out of memory"},
        {2, 32, 1000, 1, 10, 0, 95, 100, NULL},
        {4, 32, 800, 1, 10, 0, 95, 100, NULL},
    };
    struct pb_result r;
    struct pb_analysis an;
    assert_int_equal(recommend(rows, 3, 0, &an, &r), 1);
    assert_false(an.points[0].usable);
    assert_string_equal(an.points[0].verdict, "failed");
    pb_analysis_free(&an);
    release(&r);

    const struct spec_point all_failed[] = {{1, 32, 0, 0, 0, 0, 0, 0, "broken"}};
    assert_int_equal(recommend(all_failed, 1, 0, &an, &r), -1);
    assert_string_equal(an.rule, "no point was measured successfully");
    pb_analysis_free(&an);
    release(&r);
}

static void test_accelerator_rule_and_fallback(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {1, 32, 900, 1, 30, 70, 95, 100, NULL},
        {2, 32, 1500, 1, 8, 91, 95, 150, NULL},  /* cheapest point >= 90% */
        {4, 32, 1600, 1, 2, 97, 60, 200, NULL},  /* faster, but more workers */
    };
    struct pb_result r;
    struct pb_analysis an;
    assert_int_equal(recommend(rows, 3, 20, &an, &r), 1);
    assert_non_null(strstr(an.rule, "accelerator utilization >= 90%"));
    pb_analysis_free(&an);
    release(&r);

    const struct spec_point slow[] = {
        {1, 32, 900, 1, 30, 50, 95, 100, NULL},
        {2, 32, 1500, 1, 20, 80, 95, 150, NULL},
    };
    assert_int_equal(recommend(slow, 2, 20, &an, &r), 1);
    assert_non_null(strstr(an.reason, "no point keeps the accelerator >= 90% busy; the closest: "
                                      "loader.workers=2 loader.batch_size=32 at 80.0%"));
    pb_analysis_free(&an);
    release(&r);

    /* Within 3% of the best utilization, the cheaper point wins. */
    const struct spec_point close[] = {
        {1, 32, 900, 1, 30, 78, 95, 100, NULL},
        {2, 32, 1500, 1, 20, 80, 95, 150, NULL},
    };
    assert_int_equal(recommend(close, 2, 20, &an, &r), 0);
    pb_analysis_free(&an);
    release(&r);

    /* The tie is relative: at single-digit utilization 9.1% is 37% under
     * 14.4%, not a tie (3 points absolute would have called it one). */
    const struct spec_point video[] = {
        {2, 8, 9.1, 1, 90, 9.1, 95, 100, NULL},
        {2, 8, 14.4, 1, 85, 14.4, 95, 100, NULL},
    };
    assert_int_equal(recommend(video, 2, 5, &an, &r), 1);
    assert_non_null(strstr(an.rule, "within 3% (or the best point's noise)"));
    pb_analysis_free(&an);
    release(&r);
}

/* More workers than hardware threads: within the noise of the best point
 * within them, the point within them is recommended (the suggestions would
 * advise against the other); clearly faster, it stays, and is not then
 * advised against. */
static void test_oversubscribed_ties_give_way(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {2, 32, 1000, 4, 30, 0, 95, 100, NULL},
        {3, 32, 1040, 4, 25, 0, 95, 100, NULL}, /* 4% faster, noise 4%: a tie */
    };
    struct pb_result r;
    struct pb_analysis an;
    make(&r, rows, 2, 0);
    r.machine.pus = 2;
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_int_equal(an.recommended, 0);
    pb_analysis_free(&an);
    release(&r);

    const struct spec_point clear[] = {
        {2, 32, 1000, 1, 30, 0, 95, 100, NULL},
        {3, 32, 1300, 1, 25, 0, 95, 100, NULL}, /* 30% faster */
    };
    make(&r, clear, 2, 0);
    r.machine.pus = 2;
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_int_equal(an.recommended, 1);
    for (int i = 0; i < an.suggestion_count; i++)
        assert_null(strstr(an.suggestions[i], "use at most"));
    pb_analysis_free(&an);
    release(&r);
}

static void test_verdict_thresholds(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {1, 32, 1000, 1, 20.0, 0, 95, 100, NULL},
        {2, 32, 1000, 1, 5.0, 0, 95, 100, NULL},
        {4, 32, 1000, 1, 4.9, 0, 95, 100, NULL},
    };
    struct pb_result r;
    struct pb_analysis an;
    recommend(rows, 3, 0, &an, &r);
    assert_int_equal(an.points[0].input_bound, PB_INPUT_BOUND_HIGH);
    assert_int_equal(an.points[1].input_bound, PB_INPUT_BOUND_MODERATE);
    assert_int_equal(an.points[2].input_bound, PB_INPUT_BOUND_NO);
    assert_string_equal(an.points[0].verdict,
                        "highly input-bound: the loop waits 20.0% of its time (>= 20%)");
    assert_int_equal(an.points[0].top_stage, 1);
    assert_true(an.points[0].cpu_bound);
    assert_non_null(strstr(an.points[0].bottleneck, "decode takes 90% of worker time"));
    pb_analysis_free(&an);
    release(&r);
}

/* The config's analysis: section moves the bands (and the tie); a result
 * without one is analyzed with the defaults. */
static void test_thresholds_from_config(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {1, 32, 1000, 1, 30.0, 0, 95, 100, NULL},
        {2, 32, 1000, 1, 8.0, 0, 95, 100, NULL},
    };
    struct pb_result r;
    struct pb_analysis an;
    make(&r, rows, 2, 0);
    json_object_set_new(r.config, "analysis",
                        json_pack("{s f s f}", "input_bound_high_pct", 50.0,
                                  "input_bound_moderate_pct", 10.0));
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_true(an.thresholds.input_bound_high_pct == 50.0);
    assert_true(an.thresholds.tie_pct == 3.0); /* not set: the default */
    assert_int_equal(an.points[0].input_bound, PB_INPUT_BOUND_MODERATE);
    assert_int_equal(an.points[1].input_bound, PB_INPUT_BOUND_NO);
    assert_string_equal(an.points[0].verdict,
                        "moderately input-bound: the loop waits 30.0% of its time (>= 10%)");
    json_t *j = pb_analysis_to_json(&an);
    assert_true(json_real_value(json_object_get(json_object_get(j, "thresholds"),
                                                "input_bound_high_pct")) == 50.0);
    json_decref(j);
    pb_analysis_free(&an);
    release(&r);

    make(&r, rows, 2, 0);
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_true(an.thresholds.input_bound_high_pct == 20.0);
    assert_int_equal(an.points[0].input_bound, PB_INPUT_BOUND_HIGH);
    pb_analysis_free(&an);
    release(&r);
}

static void test_knee(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {1, 32, 100, 1, 50, 0, 95, 100, NULL},
        {2, 32, 190, 1, 40, 0, 95, 100, NULL}, /* 1.9x per doubling: fine */
        {4, 32, 250, 1, 30, 0, 95, 100, NULL}, /* 1.32x: the knee is at 2 */
        {8, 32, 260, 1, 30, 0, 95, 100, NULL},
    };
    struct pb_result r;
    struct pb_analysis an;
    recommend(rows, 4, 0, &an, &r);
    assert_non_null(strstr(an.scaling, "Knee at 2 workers: going to 4 gives 1.32x"));
    assert_non_null(strstr(an.scaling, "1: 100 2: 95 4: 62 8: 32"));
    pb_analysis_free(&an);
    release(&r);

    const struct spec_point linear[] = {
        {1, 32, 100, 1, 50, 0, 95, 100, NULL},
        {2, 32, 190, 1, 40, 0, 95, 100, NULL},
        {4, 32, 360, 1, 30, 0, 95, 100, NULL},
    };
    recommend(linear, 3, 0, &an, &r);
    assert_non_null(strstr(an.scaling, "No knee up to 4 workers"));
    pb_analysis_free(&an);
    release(&r);
}

/* A GPU point: the device figures drive their own suggestions, and device
 * rows (share of GPU time) never pass for the top worker stage. */
static void test_gpu_suggestions(void **state)
{
    (void)state;
    const struct spec_point rows[] = {{2, 32, 1000, 1, 30, 50, 95, 100, NULL}};
    struct pb_result r;
    make(&r, rows, 1, 20);
    struct pb_point_result *p = &r.points[0];
    p->stages = realloc(p->stages, 3 * sizeof(*p->stages));
    memset(&p->stages[2], 0, sizeof(p->stages[2]));
    snprintf(p->stages[2].name, sizeof(p->stages[2].name), "step");
    p->stages[2].gpu = true;
    p->stages[2].share_pct = 95;
    p->stage_count = 3;
    p->gpu = (struct pb_gpu_figures){.used = true, .batches = 100, .copy_bytes = 2000000000,
                                     .copy_ns = 0.2e9, .step_ns = 0.5e9, .overlap_ns = 0.02e9,
                                     .wall_s = 1, .copy_wait_ns = 100000000};
    pb_gpu_figures_ratios(&p->gpu);
    struct pb_analysis an;
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_int_equal(an.points[0].top_stage, 1); /* decode, not the GPU step */
    bool pin = false, overlap = false, uint8 = false;
    for (int i = 0; i < an.suggestion_count; i++) {
        pin = pin || strstr(an.suggestions[i], "waits 10.0% of its time on pageable copies "
                                               "(10.00 GB/s)") != NULL;
        overlap = overlap || strstr(an.suggestions[i], "copies take 20.0% of wall time and only "
                                                       "10% of it overlaps the step") != NULL;
        uint8 = uint8 || strstr(an.suggestions[i], "normalize on the GPU") != NULL;
    }
    assert_true(pin);
    assert_true(overlap);
    assert_true(uint8);
    pb_analysis_free(&an);
    release(&r);
}

static void test_suggestions_quote_their_figures(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {2, 32, 1000, 1, 30, 0, 95, 100, NULL},
        {1, 32, 500, 1, 60, 0, 95, 100, NULL},
    };
    struct pb_result r;
    struct pb_analysis an;
    assert_int_equal(recommend(rows, 2, 0, &an, &r), 0);
    bool decode = false, workers = false;
    for (int i = 0; i < an.suggestion_count; i++) {
        decode = decode || strstr(an.suggestions[i], "decode takes 90% of worker time") != NULL;
        workers = workers || strstr(an.suggestions[i], "add workers, up to the 8 hardware "
                                                       "threads (now 2)") != NULL;
    }
    assert_true(decode);
    assert_true(workers);
    json_t *j = pb_analysis_to_json(&an);
    assert_int_equal(json_integer_value(json_object_get(j, "recommended")), 0);
    json_decref(j);
    pb_analysis_free(&an);
    release(&r);
}

static bool any_suggestion(const struct pb_analysis *an, const char *needle);

/* A workers sweep that measured 3 and 4 workers slower than 2: no line
 * advises more workers, whether the workers were busy or waiting, and the
 * line that replaces it quotes the sweep's figures. Without the slower
 * points the same 2-worker point is told to add workers. */
static void test_no_advice_against_the_sweep(void **state)
{
    (void)state;
    for (int busy = 0; busy <= 1; busy++) {
        double cpu = busy ? 95 : 40;
        const struct spec_point rows[] = {
            {2, 32, 1000, 1, 40, 0, cpu, 100, NULL},
            {3, 32, 900, 1, 45, 0, cpu, 110, NULL},
            {4, 32, 850, 1, 48, 0, cpu, 120, NULL},
        };
        struct pb_result r;
        struct pb_analysis an;
        assert_int_equal(recommend(rows, 3, 10, &an, &r), 0);
        for (int k = 0; k < an.suggestion_count; k++) {
            assert_null(strstr(an.suggestions[k], "add workers"));
            assert_null(strstr(an.suggestions[k], "more workers or a larger prefetch_factor"));
        }
        assert_true(any_suggestion(&an, "this sweep measured more workers no faster (4 workers: "
                                        "850 samples/s against 1000 with 2)"));
        pb_analysis_free(&an);
        release(&r);

        assert_int_equal(recommend(rows, 1, 10, &an, &r), 0); /* the 2-worker point alone */
        assert_true(any_suggestion(&an, busy ? "add workers" : "more workers or a larger"));
        pb_analysis_free(&an);
        release(&r);
    }
}

/* A calibration the run beats is no figure: eff over 100% reads "cal?"
 * with the reason, and a calibration made beside other processes marks
 * every eff and says how busy the machine was. Cores needed come from the
 * CPU per sample the repeats measured, with their range. */
static void test_calibration_and_capacity(void **state)
{
    (void)state;
    const struct spec_point rows[] = {{2, 32, 1000, 1, 40, 60, 95, 100, NULL},
                                      {1, 32, 150, 1, 80, 9, 95, 100, NULL}};
    for (int busy = 0; busy <= 1; busy++) {
        struct pb_result r;
        struct pb_analysis an;
        make(&r, rows, 2, 10);
        r.calibration = (struct pb_calibration){.measured = true, .single_core_samples_per_s = 200,
                                                .cores = 8, .memcpy_gb_per_s = 5,
                                                .other_cpu_pct = busy ? 55 : 1, .busy = busy};
        struct pb_repeat_result reps[3] = {0};
        double util[3] = {150, 160, 140}; /* 1.5, 1.6 and 1.4 ms of CPU per sample */
        for (int k = 0; k < 3; k++) {
            reps[k].samples_per_s = 1000;
            reps[k].cpu_util_pct = util[k];
            reps[k].wall_s = 2;
        }
        r.points[0].repeats = r.points[1].repeats = reps; /* the table reads both */
        assert_int_equal(pb_analyze(&r, &an), 0);
        assert_int_equal(an.recommended, 0);
        assert_true(an.points[0].efficiency_pct > 100);
        assert_true(an.points[0].calibration_suspect);
        /* 32 a batch every 10 ms: 3200 samples/s x 1.5 ms = 4.8 cores. */
        pb_test_assert_contains(an.capacity, (const char *const[]){
            "needs 3200 samples/s", "1.50 ms of CPU per sample", "4.8 cores of loading",
            "(4.5 to 5.1 over the repeats)", "8 hardware threads: enough", NULL});
        char *text = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&text, &size);
        pb_report_table(out, &r, &an);
        fclose(out);
        assert_non_null(strstr(text, "cal?"));
        assert_null(strstr(text, "250%"));
        assert_non_null(strstr(text, busy ? "75%?" : "75%")); /* 150 against 1 x 200 */
        assert_non_null(strstr(text, busy ? "calibrated beside other processes (55%"
                                          : "cal? = above the calibrated limit"));
        free(text);
        r.points[0].repeats = r.points[1].repeats = NULL;
        pb_analysis_free(&an);
        release(&r);
    }
}

static bool any_suggestion(const struct pb_analysis *an, const char *needle)
{
    for (int i = 0; i < an->suggestion_count; i++)
        if (strstr(an->suggestions[i], needle))
            return true;
    return false;
}

/* A single run is analyzed as a sweep of one point: it gets a verdict in
 * TensorFlow's bands, or with no step the loader's ceiling, and
 * suggestions that carry the command testing them. */
static void test_single_point_verdict(void **state)
{
    (void)state;
    static const struct {
        double stall, step_ms;
        const char *verdict;
    } cases[] = {
        {4.9, 10, "not input-bound: the loop waits 4.9% of its time (< 5%)"},
        {5.0, 10, "moderately input-bound: the loop waits 5.0% of its time (>= 5%)"},
        {19.9, 10, "moderately input-bound: the loop waits 19.9% of its time (>= 5%)"},
        {20.0, 10, "highly input-bound: the loop waits 20.0% of its time (>= 20%)"},
        {99.0, 0, "the run measures the loader's ceiling, 1000.0 samples/s"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct spec_point row = {2, 32, 1000, 1, cases[c].stall, 50, 95, 100, NULL};
        struct pb_result r;
        struct pb_analysis an;
        assert_int_equal(recommend(&row, 1, cases[c].step_ms, &an, &r), 0);
        assert_true(strncmp(an.verdict, cases[c].verdict, strlen(cases[c].verdict)) == 0);
        assert_non_null(strstr(an.verdict, "; dominant stage: decode, 90% of the stages' wall time"));
        if (cases[c].stall >= 5) /* busy workers, 8 threads: add workers, and how to test it */
            assert_true(any_suggestion(&an, "test: pbench run CONFIG.yaml -a loader.workers=2,4,8"));
        json_t *j = pb_analysis_to_json(&an);
        assert_string_equal(json_string_value(json_object_get(j, "verdict")), an.verdict);
        json_decref(j);
        pb_analysis_free(&an);
        release(&r);
    }
}

/* The dominant stage is the one with the largest share of the workers'
 * CPU time, not of wall time, which waiting for a core inflates. */
static void test_dominant_stage_by_cpu_share(void **state)
{
    (void)state;
    const struct spec_point row = {2, 32, 1000, 1, 30, 50, 95, 100, NULL};
    struct pb_result r;
    make(&r, &row, 1, 10);
    snprintf(r.name, sizeof(r.name), "video-basic");
    json_decref(r.config);
    r.config = json_pack("{s {s i s i s i} s {s f} s [{s {s s}}]}", "loader", "workers", 2,
                         "batch_size", 32, "prefetch_factor", 2, "run", "step_ms", 10.0,
                         "pipeline", "decode", "decoder", "video");
    struct pb_point_result *p = &r.points[0];
    p->stages[0].share_pct = 70; /* read: most of the wall time, little CPU */
    p->stages[0].cpu_ns = 10000000;
    p->stages[1].share_pct = 30;
    p->stages[1].cpu_ns = 90000000;
    struct pb_analysis an;
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_int_equal(an.points[0].top_stage, 1);
    assert_true(an.points[0].top_share_of_cpu);
    assert_true(an.points[0].top_share_pct > 89.9 && an.points[0].top_share_pct < 90.1);
    assert_non_null(strstr(an.verdict, "dominant stage: decode, 90% of the workers' stage CPU time"));
    assert_true(any_suggestion(&an, "decode takes 90% of worker CPU time"));
    assert_true(any_suggestion(&an, "(test: pbench compare video-basic.yaml video-basic.yaml "
                                    "--set-new pipeline.decode.discard=nonref), "));
    assert_true(any_suggestion(&an, "(test: pbench compare video-basic.yaml video-basic.yaml "
                                    "--set-new pipeline.decode.clips_per_visit=4), "));
    assert_true(any_suggestion(&an, "-a pipeline.decode.threads=1,2,4"));
    /* the longest suggestion is whole, not cut at its buffer's end */
    assert_true(any_suggestion(&an, "encode the sources with a shorter GOP, or decode on the GPU"));
    pb_analysis_free(&an);
    release(&r);
}

/* A JPEG decode fused with the crop after it already reads only the
 * window: the suggestion says so, with the samples DCT scaling reduced,
 * and offers scale: window (never scale: auto, which does not reduce the
 * window); without a crop next it suggests DCT scaling as before. */
static void test_jpeg_decode_suggestion(void **state)
{
    (void)state;
    static const struct {
        const char *next, *scale;
        bool fused;
        const char *want, *absent;
        uint64_t source_w, source_h; /* the dataset's median JPEG; 0 unknown */
    } cases[] = {
        {"random_resized_crop", "1", true,
         "decode takes 90% of worker CPU time although it decodes only the crop's window "
         "(fused with the crop; 7 of 1000 samples DCT-reduced)",
         "scale=auto", 0, 0},
        {"random_resized_crop", "1", true,
         "for sources larger than 448x320 (test: pbench compare image.yaml image.yaml -s "
         "pipeline.decode.scale=1 --set-new pipeline.decode.scale=window); smaller or "
         "lower-quality source files; or a GPU "
         "decoder",
         NULL, 0, 0},
        {"random_resized_crop", "window", true, "What cuts it: smaller or lower-quality",
         "scale=window", 0, 0},
        {"random_resized_crop", "1", false, "test: pbench compare image.yaml image.yaml -s "
                                            "pipeline.decode.scale=1 --set-new "
                                            "pipeline.decode.scale=auto)",
         "fused with the crop", 0, 0},
        {"resize", "1", true, "pipeline.decode.scale=auto", "fused with the crop", 0, 0},
        /* Sources known: 400x300 are under twice 224x160 wide, so no window
         * scaling; 1000x800 are over, so it is suggested. */
        {"random_resized_crop", "1", true,
         "not DCT scaling: these sources (median 400x300) are under twice the 224x160 output",
         "scale=window", 400, 300},
        {"random_resized_crop", "1", true, "--set-new pipeline.decode.scale=window",
         "not DCT scaling",
         1000, 800},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct spec_point row = {2, 32, 1000, 1, 30, 50, 95, 100, NULL};
        struct pb_result r;
        make(&r, &row, 1, 10);
        snprintf(r.name, sizeof(r.name), "image");
        json_decref(r.config);
        r.config = json_pack("{s {s i s i s i} s {s f} s [{s {}}, {s {s s s s s b}}, {s {s [i i]}}]}",
                             "loader", "workers", 2, "batch_size", 32, "prefetch_factor", 2,
                             "run", "step_ms", 10.0, "pipeline", "read", "decode", "decoder",
                             "jpeg", "scale", cases[c].scale, "fused_crop", cases[c].fused,
                             cases[c].next, "size", 160, 224);
        r.dataset.source_width = cases[c].source_w;
        r.dataset.source_height = cases[c].source_h;
        struct pb_stage_result *decode = &r.points[0].stages[1];
        decode->cpu_ns = 90000000;
        r.points[0].stages[0].cpu_ns = 10000000;
        decode->hist.count = 1000;
        decode->counter_count = 1;
        snprintf(decode->counter_names[0], sizeof(decode->counter_names[0]), "scaled");
        decode->counters[0] = 7;
        /* Progressive files: 30% of them gets its own suggestion, 4% does not. */
        decode->counter_count = 2;
        snprintf(decode->counter_names[1], sizeof(decode->counter_names[1]), "progressive");
        decode->counters[1] = c == 0 ? 300 : 40;
        struct pb_analysis an;
        assert_int_equal(pb_analyze(&r, &an), 0);
        if (!any_suggestion(&an, cases[c].want))
            fail_msg("case %zu: no suggestion has \"%s\"", c, cases[c].want);
        if (cases[c].absent && any_suggestion(&an, cases[c].absent))
            fail_msg("case %zu: a suggestion has \"%s\"", c, cases[c].absent);
        bool progressive = any_suggestion(&an, "30% of the JPEGs decoded (300 of 1000) are "
                                               "progressive");
        assert_true(progressive == (c == 0));
        if (c == 0)
            assert_true(any_suggestion(&an, "jpegtran -copy all -outfile OUT.jpg IN.jpg for each "
                                            "file) and measure the copy (test: pbench compare "
                                            "image.yaml image.yaml --set-new dataset.path=COPY)"));
        assert_false(any_suggestion(&an, "are progressive") && c != 0);
        pb_analysis_free(&an);
        release(&r);
    }
}

/* The command of the suggestion holding needle, from needle to the ")"
 * that closes it, into buf. */
static void suggestion_command(const struct pb_analysis *an, const char *needle, char *buf,
                               size_t size)
{
    for (int i = 0; i < an->suggestion_count; i++) {
        const char *at = strstr(an->suggestions[i], needle);
        if (at) {
            snprintf(buf, size, "%.*s", (int)strcspn(at, ")"), at);
            return;
        }
    }
    fail_msg("no suggestion has \"%s\"", needle);
}

/* A one-point result of configs/image.yaml as it ran (axes {}), its JPEG
 * decode 90% of the workers' CPU with no crop after it, on engine. */
static void make_image_run(struct pb_result *r, const char *config_path, const char *engine)
{
    const struct spec_point row = {2, 32, 1000, 1, 30, 50, 95, 100, NULL};
    make(r, &row, 1, 10);
    snprintf(r->name, sizeof(r->name), "image");
    snprintf(r->config_path, sizeof(r->config_path), "%s", config_path);
    json_decref(r->config);
    r->config = json_pack("{s {s i s i s i s s} s {s f} s [{s {}}, {s {s s s s}}]}", "loader",
                          "workers", 2, "batch_size", 32, "prefetch_factor", 2, "engine", engine,
                          "run", "step_ms", 10.0, "pipeline", "read", "decode", "decoder",
                          "jpeg", "scale", "1");
    json_object_clear(r->points[0].axes);
    r->points[0].stages[0].cpu_ns = 10000000;
    r->points[0].stages[1].cpu_ns = 90000000;
}

/* A suggestion's test of one setting is a compare of the config with
 * itself, the setting on the new side: "pbench compare C C [-s
 * loader.engine=E] -s KEY=NOW --set-new KEY=VALUE", whose config is the
 * result's and whose settings that config takes; a torch point's engine
 * and the setting as the point ran go on both sides. */
static void test_suggestion_compare_command_well_formed(void **state)
{
    (void)state;
    const char *source = getenv("PBENCH_SOURCE_DIR");
    assert_non_null(source);
    char config[PB_PATH_MAX], msg[PB_MSG_MAX * 2];
    snprintf(config, sizeof(config), "%s/configs/image.yaml", source);
    static const struct {
        const char *engine, *needle;
        int words;
    } cases[] = {
        {"pbench", "pbench compare", 8},
        {"torch", "pbench compare", 10}, /* PIL's draft mode: scale=auto, on torch */
    };
    for (size_t c = 0; c < PB_ARRAY_LEN(cases); c++) {
        struct pb_result r;
        make_image_run(&r, config, cases[c].engine);
        struct pb_analysis an;
        assert_int_equal(pb_analyze(&r, &an), 0);
        char command[1024], *word[12] = {NULL};
        suggestion_command(&an, cases[c].needle, command, sizeof(command));
        int n = 0;
        for (char *w = strtok(command, " "); w && n < 12; w = strtok(NULL, " "))
            word[n++] = w;
        assert_int_equal(n, cases[c].words);
        assert_string_equal(word[0], "pbench");
        assert_string_equal(word[1], "compare");
        assert_string_equal(word[2], config);
        assert_string_equal(word[3], config);
        assert_string_equal(word[n - 2], "--set-new");
        assert_string_equal(word[n - 1], "pipeline.decode.scale=auto");
        if (n == 10) {
            assert_string_equal(word[4], "-s");
            assert_string_equal(word[5], "loader.engine=torch");
        }
        assert_string_equal(word[n - 4], "-s");
        assert_string_equal(word[n - 3], "pipeline.decode.scale=1");
        struct pb_spec spec;
        if (pb_config_load(word[2], &spec, msg, sizeof(msg)) != PB_OK)
            fail_msg("%s", msg);
        for (int w = 4; w + 1 < n; w += 2)
            if (pb_config_override(&spec, word[w + 1], msg, sizeof(msg)) != PB_OK)
                fail_msg("%s: %s", word[w], msg);
        pb_spec_free(&spec);
        pb_analysis_free(&an);
        release(&r);
    }
}

/* Workers beyond the hardware threads: as many as threads, compared with
 * the count now (given on both sides, as a run may have set it with -s); where the result swept the workers, swept instead (the
 * sweep would override --set-new). Twice the workers, compared with the
 * count now. A torch point that restarts its workers every epoch:
 * persistent workers, compared on the torch engine. */
static void test_one_setting_suggestions_compare(void **state)
{
    (void)state;
    const struct spec_point row = {16, 32, 1000, 1, 30, 50, 95, 100, NULL};
    struct pb_result r;
    struct pb_analysis an;
    make(&r, &row, 1, 10);
    json_object_clear(r.points[0].axes); /* a single run of a config with 16 workers */
    json_object_set_new(json_object_get(r.config, "loader"), "workers", json_integer(16));
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_true(any_suggestion(&an, "16 workers share 8 hardware threads: use at most 8 (test: "
                                    "pbench compare CONFIG.yaml CONFIG.yaml -s "
                                    "loader.workers=16 --set-new loader.workers=8)"));
    pb_analysis_free(&an);
    release(&r);

    make(&r, &row, 1, 10);
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_true(any_suggestion(&an, "use at most 8 (test: pbench run CONFIG.yaml -a "
                                    "loader.workers=16,8)"));
    pb_analysis_free(&an);
    release(&r);

    /* Busy workers, 2 of 4 threads: the sweep from now is 2,4, which is
     * one change, compared. */
    const struct spec_point busy = {2, 32, 1000, 1, 30, 50, 95, 100, NULL};
    make(&r, &busy, 1, 10);
    r.machine.pus = 4;
    json_object_clear(r.points[0].axes);
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_true(any_suggestion(&an, "add workers, up to the 4 hardware threads (now 2); test: "
                                    "pbench compare CONFIG.yaml CONFIG.yaml -s "
                                    "loader.workers=2 --set-new loader.workers=4"));
    pb_analysis_free(&an);
    release(&r);

    make_image_run(&r, "configs/image.yaml", "torch");
    json_object_set_new(json_object_get(r.config, "loader"), "persistent_workers", json_false());
    r.points[0].first_batch_s = 0.5;
    r.dataset.samples = 1000; /* an epoch of 1 s at 1000 samples/s */
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_true(any_suggestion(&an, "keep them with loader.persistent_workers: true (test: "
                                    "pbench compare configs/image.yaml configs/image.yaml -s "
                                    "loader.engine=torch -s loader.persistent_workers=false "
                                    "--set-new loader.persistent_workers=true)"));
    pb_analysis_free(&an);
    release(&r);
}

/* The longest suggestion (a video decode: three commands, two of them
 * compares naming the config twice and the setting now) stays whole with
 * a config path of 120 characters; a longer path is not quoted, NAME.yaml
 * stands for it, and one with a space is quoted for the shell. */
static void test_long_config_path_keeps_commands_whole(void **state)
{
    (void)state;
    static const struct {
        size_t length;
        bool space;
        const char *shown;
    } cases[] = {{120, false, NULL}, {121, false, "video-basic.yaml"}, {40, true, NULL}};
    for (size_t c = 0; c < PB_ARRAY_LEN(cases); c++) {
        const struct spec_point row = {2, 32, 1000, 1, 30, 50, 95, 100, NULL};
        struct pb_result r;
        make(&r, &row, 1, 10);
        snprintf(r.name, sizeof(r.name), "video-basic");
        char path[200];
        memset(path, 'd', sizeof(path));
        path[0] = '/';
        if (cases[c].space)
            path[5] = ' ';
        snprintf(path + cases[c].length - strlen("/video-basic.yaml"), 32, "/video-basic.yaml");
        assert_int_equal(strlen(path), cases[c].length);
        snprintf(r.config_path, sizeof(r.config_path), "%s", path);
        json_decref(r.config);
        r.config = json_pack("{s {s i s i s i} s {s f} s [{s {s s s s s i}}]}", "loader",
                             "workers", 2, "batch_size", 32, "prefetch_factor", 2, "run",
                             "step_ms", 10.0, "pipeline", "decode", "decoder", "video", "discard",
                             "none", "clips_per_visit", 1);
        r.points[0].stages[0].cpu_ns = 10000000;
        r.points[0].stages[1].cpu_ns = 90000000;
        struct pb_analysis an;
        assert_int_equal(pb_analyze(&r, &an), 0);
        char shown[130], want[2048];
        snprintf(shown, sizeof(shown), cases[c].space ? "'%s'" : "%s",
                 cases[c].shown ? cases[c].shown : path);
        snprintf(want, sizeof(want), "(test: pbench compare %s %s -s pipeline.decode.discard=none "
                 "--set-new pipeline.decode.discard=nonref), take several clips per video visit, "
                 "decoded in one pass (test: pbench compare %s %s -s "
                 "pipeline.decode.clips_per_visit=1 --set-new pipeline.decode.clips_per_visit=4), "
                 "trade workers for decoder threads (test: "
                 "pbench run %s -a pipeline.decode.threads=1,2,4), encode the sources with a "
                 "shorter GOP, or decode on the GPU",
                 shown, shown, shown, shown, shown);
        if (!any_suggestion(&an, want))
            fail_msg("case %zu: no suggestion has \"%s\"", c, want);
        pb_analysis_free(&an);
        release(&r);
    }
}

/* With a step, the loop cannot pass batch_size / step_ms samples/s: a flat
 * curve at that cap is not a knee. */
static void test_step_time_cap(void **state)
{
    (void)state;
    /* batch 8, step 2 ms: at most 4000 samples/s. */
    const struct spec_point rows[] = {
        {1, 8, 2500, 1, 30, 62, 95, 100, NULL},
        {2, 8, 3740, 1, 2, 93.6, 60, 110, NULL},
        {4, 8, 3760, 1, 1, 94, 30, 120, NULL},
    };
    struct pb_result r;
    struct pb_analysis an;
    assert_int_equal(recommend(rows, 3, 2, &an, &r), 1);
    assert_false(an.points[0].at_step_cap);
    assert_true(an.points[1].at_step_cap);
    assert_true(an.points[1].step_cap_samples_per_s > 3999 &&
                an.points[1].step_cap_samples_per_s < 4001);
    assert_non_null(strstr(an.scaling, "From 2 workers the loop is at the step-time cap "
                                       "(4000 samples/s max, accelerator 93.6% busy)"));
    assert_null(strstr(an.scaling, "Knee"));
    pb_analysis_free(&an);
    release(&r);
}

/* 0 workers load in the loop's thread: no per-worker figure; 1 worker is
 * singular. */
static void test_zero_and_one_worker(void **state)
{
    (void)state;
    const struct spec_point rows[] = {
        {0, 32, 500, 1, 60, 0, 95, 100, NULL},
        {1, 32, 1000, 1, 30, 0, 95, 100, NULL},
    };
    struct pb_result r;
    struct pb_analysis an;
    assert_int_equal(recommend(rows, 2, 0, &an, &r), 1);
    assert_non_null(strstr(an.scaling, " 0 (in the training loop's thread): 500 1: 1000"));
    assert_non_null(strstr(an.reason, "with 1 worker and"));
    assert_null(strstr(an.reason, "1 workers"));
    pb_analysis_free(&an);
    release(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_within_three_percent_prefer_fewer_workers),
        cmocka_unit_test(test_noise_widens_the_tie),
        cmocka_unit_test(test_memory_then_batch_break_ties),
        cmocka_unit_test(test_failed_point_is_never_recommended),
        cmocka_unit_test(test_accelerator_rule_and_fallback),
        cmocka_unit_test(test_oversubscribed_ties_give_way),
        cmocka_unit_test(test_verdict_thresholds),
        cmocka_unit_test(test_thresholds_from_config),
        cmocka_unit_test(test_knee),
        cmocka_unit_test(test_suggestions_quote_their_figures),
        cmocka_unit_test(test_gpu_suggestions),
        cmocka_unit_test(test_single_point_verdict),
        cmocka_unit_test(test_dominant_stage_by_cpu_share),
        cmocka_unit_test(test_jpeg_decode_suggestion),
        cmocka_unit_test(test_suggestion_compare_command_well_formed),
        cmocka_unit_test(test_one_setting_suggestions_compare),
        cmocka_unit_test(test_long_config_path_keeps_commands_whole),
        cmocka_unit_test(test_step_time_cap),
        cmocka_unit_test(test_zero_and_one_worker),
        cmocka_unit_test(test_no_advice_against_the_sweep),
        cmocka_unit_test(test_calibration_and_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
