/* The straggler of a wrapped job's ranks (bench/analyze/straggler.h,
 * docs/wrap.md "Ranks"), on hand-made results whose right answers are
 * known: two ranks, one whose loader is slow (a long stall) beside one
 * that waits for it in its step (a long step), named with its cause in
 * the table, the verdict and the try lines, none of which tells every
 * rank to add workers; and ranks whose slowest changes from window to
 * window, where the loader is too slow on every rank. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/analyze/straggler.h"
#include "bench/analyze/verdict.h"
#include "bench/report/report.h"
#include "tests/testutil.h"

#define WALL_S 10.0
#define REPEATS 2

/* A rank's row as the relay writes it: samples/s, stall, step a batch,
 * what its loader could deliver, its getitem's wall and CPU per sample,
 * the windows it was the slowest in (of 10). */
struct rank_fig {
    int rank;
    double rate, stall, step_ms, loader_rate, getitem_wall_ms, getitem_cpu_ms;
    int slowest_windows;
    const char *host;
};

static json_t *rank_row(const struct rank_fig *f)
{
    json_t *stages = json_pack(
        "[{s s s f s f} {s s s f s f}]", "name", "getitem", "cpu_ns_per_sample",
        f->getitem_cpu_ms * 1e6, "wall_ns_per_sample", f->getitem_wall_ms * 1e6, "name",
        "RandomResizedCrop", "cpu_ns_per_sample", 1e6, "wall_ns_per_sample", 1.1e6);
    json_t *row = json_pack("{s i s i s i s s s i s f s f s f s f s i s s s o s f s i s i}",
                            "rank", f->rank, "world", 2, "pid", 100 + f->rank, "site",
                            "train.py:40", "batches", 100, "samples_per_s", f->rate, "stall_pct",
                            f->stall, "step_ms", f->step_ms, "loader_samples_per_s",
                            f->loader_rate, "workers_seen", 2, "top_stage", "getitem", "stages",
                            stages, "cpu_ns_per_sample", (f->getitem_cpu_ms + 1) * 1e6,
                            "windows", 10, "slowest_windows", f->slowest_windows);
    if (f->host)
        json_object_set_new(row, "host", json_string(f->host));
    return row;
}

/* A wrapped job's one point, rank 0's figures (its stall, its workers on
 * CPU), 2 workers on a machine of 8 hardware threads, and its ranks'
 * rows (none where ranks is NULL). */
static void make(struct pb_result *r, double stall, const struct rank_fig *ranks, size_t n)
{
    memset(r, 0, sizeof(*r));
    r->machine.pus = r->machine.cores = 8;
    r->config = json_pack("{s {s s s i} s {s s}}", "loader", "engine", "wrap", "workers", 2,
                          "wrap", "command", "python3 train.py");
    r->points = calloc(1, sizeof(*r->points));
    r->point_count = 1;
    struct pb_point_result *p = &r->points[0];
    p->axes = json_object();
    p->repeats = calloc(REPEATS, sizeof(*p->repeats));
    p->repeat_count = REPEATS;
    for (int k = 0; k < REPEATS; k++) {
        struct pb_repeat_result *rep = &p->repeats[k];
        rep->wall_s = WALL_S;
        rep->samples_per_s = 38;
        rep->batches_per_s = 38.0 / 8;
        rep->samples = 380;
        rep->batches = 47;
        rep->stall_pct = stall;
        rep->loop_step_pct = rep->accel_util_pct = 95 - stall;
        rep->cpu_util_pct = 250;
        rep->worker_cpu_pct = 95;
    }
    p->samples_per_s = 38;
    p->samples_per_s_noise_pct = 1;
    p->batches_per_s = 38.0 / 8;
    p->stall_pct = stall;
    p->accel_util_pct = p->loop_step_pct = 95 - stall;
    p->cpu_util_pct = 250;
    p->worker_cpu_pct = 95;
    p->rss_peak_bytes = 200ull << 20;
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(rows, rank_row(&ranks[i]));
    p->engine = json_pack("{s s s [{s s s s s o}]}", "name", "wrap", "jobs", "command",
                          "python3 train.py", "ended", "the job exited by itself", "rank_rows",
                          rows);
}

static bool suggests(const struct pb_analysis *an, const char *text)
{
    for (int k = 0; k < an->suggestion_count; k++)
        if (strstr(an->suggestions[k], text))
            return true;
    return false;
}

static char *table_of(const struct pb_result *r, const struct pb_analysis *an)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    pb_report_table(out, r, an);
    fclose(out);
    return text;
}

/* Rank 1 on node2 waits 45% on a loader that delivers 38 samples/s, its
 * getitem 2.4x rank 0's wall time at the same CPU; rank 0 waits 3% and
 * its step (42 ms) is 2.1x rank 1's (20 ms): it waits for rank 1 in its
 * all-reduce. Rank 1 is the slowest in 9 windows of 10. */
static void test_the_slow_rank_is_named_with_its_cause(void **state)
{
    (void)state;
    const struct rank_fig ranks[] = {{0, 38, 3, 42, 61, 4, 2, 1, "node1"},
                                     {1, 38, 45, 20, 38, 9.6, 2.2, 9, "node2"}};
    struct pb_result r;
    struct pb_analysis an;
    make(&r, 3, ranks, 2);
    struct pb_straggler s;
    pb_point_straggler(&r.points[0], &s);
    assert_int_equal(s.kind, PB_STRAGGLER_ONE);
    assert_int_equal(s.rank, 1);
    assert_true(s.others_wait);
    pb_test_assert_contains(
        s.sentence,
        (const char *const[]){"rank 1 on node2 is the straggler: its loader delivers 38 "
                              "samples/s against 61 on the other ranks",
                              "the other ranks wait for it in their step (rank 0 on node1's "
                              "step 2.1x rank 1 on node2's): the job runs at the slowest "
                              "rank's pace",
                              "rank 1 on node2's getitem takes 2.4x rank 0's time per sample "
                              "for the same transforms (its CPU 1.1x: the rest is waiting",
                              "the slowest rank in 9 of 10 windows: a problem of this rank or "
                              "its node",
                              NULL});
    assert_int_equal(pb_analyze(&r, &an), 0);
    pb_test_assert_contains(an.verdict,
                            (const char *const[]){"input-bound through one rank: rank 1 on "
                                                  "node2 is the straggler",
                                                  "they wait for it in their step",
                                                  "rank 0's: not input-bound", NULL});
    assert_true(suggests(&an, "the job runs at rank 1 on node2's pace"));
    assert_false(suggests(&an, "add workers"));
    assert_false(suggests(&an, "the loader keeps up"));
    char *text = table_of(&r, &an);
    pb_test_assert_contains(text, (const char *const[]){"straggler", "rank 1 on node2 is the "
                                                                     "straggler",
                                                        "step 42.0 ms a batch",
                                                        "top stage getitem", NULL});
    free(text);
    pb_analysis_free(&an);
    pb_result_free(&r);
}

/* Rank 0, the point's own, is the slow one: its busy workers and its
 * stall would have it add workers, and do without rank rows; with them
 * the try line points at rank 0, not at every rank's workers. */
static void test_no_more_workers_on_every_rank(void **state)
{
    (void)state;
    const struct rank_fig ranks[] = {{0, 38, 45, 20, 38, 4, 2, 10, NULL},
                                     {1, 38, 4, 42, 61, 4, 2, 0, NULL}};
    struct pb_result r;
    struct pb_analysis an;
    make(&r, 45, ranks, 0);
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_true(suggests(&an, "add workers"));
    pb_analysis_free(&an);
    pb_result_free(&r);
    make(&r, 45, ranks, 2);
    assert_int_equal(pb_analyze(&r, &an), 0);
    assert_false(suggests(&an, "add workers"));
    assert_true(suggests(&an, "more workers on every rank would not help"));
    assert_true(suggests(&an, "the job runs at rank 0's pace"));
    pb_test_assert_contains(an.verdict,
                            (const char *const[]){"rank 0 is the straggler", NULL});
    struct pb_straggler s;
    pb_point_straggler(&r.points[0], &s);
    /* the same getitem time: short of workers or CPU, not of storage */
    pb_test_assert_contains(s.sentence,
                            (const char *const[]){"(rank 1's step 2.1x rank 0's)",
                                                  "the same work per sample", NULL});
    pb_analysis_free(&an);
    pb_result_free(&r);
}

/* Both ranks wait on their loaders, the slowest moving from one to the
 * other (6 windows and 4): no one rank holds the job back, the loader is
 * too slow everywhere, and what workers need is said as for one process. */
static void test_a_slowest_rank_that_changes(void **state)
{
    (void)state;
    const struct rank_fig ranks[] = {{0, 40, 30, 20, 40, 4, 2, 4, NULL},
                                     {1, 40, 35, 19, 39, 4, 2, 6, NULL}};
    struct pb_result r;
    struct pb_analysis an;
    make(&r, 30, ranks, 2);
    struct pb_straggler s;
    pb_point_straggler(&r.points[0], &s);
    assert_int_equal(s.kind, PB_STRAGGLER_EVERYWHERE);
    pb_test_assert_contains(s.sentence,
                            (const char *const[]){"no one rank holds the job back",
                                                  "the slowest rank changes from window to "
                                                  "window (rank 1 in 6 of 10 windows, rank 0 "
                                                  "in 4)",
                                                  "too slow on every rank", NULL});
    assert_null(strstr(s.sentence, "is the straggler"));
    assert_int_equal(pb_analyze(&r, &an), 0);
    pb_test_assert_contains(an.verdict, (const char *const[]){"input-bound on every rank", NULL});
    assert_false(suggests(&an, "the job runs at"));
    assert_true(suggests(&an, "add workers"));
    char *text = table_of(&r, &an);
    pb_test_assert_contains(text, (const char *const[]){"no one rank holds the job back", NULL});
    free(text);
    pb_analysis_free(&an);
    pb_result_free(&r);
}

/* Two ranks whose loaders deliver alike (40 samples/s) split their wait
 * by who reaches the all-reduce first, rank 1 waiting 40% and rank 0 10%
 * (and longer in its step), rank 1 always the one: no straggler, the
 * loader is too slow on both. */
static void test_a_stall_split_by_phase_is_no_straggler(void **state)
{
    (void)state;
    const struct rank_fig ranks[] = {{0, 40, 10, 30, 40, 4, 2, 0, NULL},
                                     {1, 40, 40, 12, 41, 4, 2, 10, NULL}};
    struct pb_result r;
    make(&r, 10, ranks, 2);
    struct pb_straggler s;
    pb_point_straggler(&r.points[0], &s);
    assert_int_equal(s.kind, PB_STRAGGLER_EVERYWHERE);
    assert_null(strstr(s.sentence, "is the straggler"));
    pb_result_free(&r);
}

/* Ranks that keep up, and a single rank: no straggler line. */
static void test_no_straggler_where_no_rank_waits(void **state)
{
    (void)state;
    const struct rank_fig ranks[] = {{0, 60, 2, 20, 90, 4, 2, 5, NULL},
                                     {1, 60, 3, 20, 88, 4, 2, 5, NULL}};
    struct pb_result r;
    make(&r, 2, ranks, 2);
    struct pb_straggler s;
    pb_point_straggler(&r.points[0], &s);
    assert_int_equal(s.kind, PB_STRAGGLER_NONE);
    pb_result_free(&r);
    make(&r, 45, ranks, 1);
    pb_point_straggler(&r.points[0], &s);
    assert_int_equal(s.kind, PB_STRAGGLER_NONE);
    pb_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_slow_rank_is_named_with_its_cause),
        cmocka_unit_test(test_no_more_workers_on_every_rank),
        cmocka_unit_test(test_a_slowest_rank_that_changes),
        cmocka_unit_test(test_a_stall_split_by_phase_is_no_straggler),
        cmocka_unit_test(test_no_straggler_where_no_rank_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
