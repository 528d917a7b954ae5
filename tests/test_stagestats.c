/* Stage measurements of several loader threads merged into stage rows:
 * row order (stage, its decoder's sub-stages, ..., collate), counts, CPU
 * time and counters summed over threads, shares of the top-level rows,
 * and a reset that empties everything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "bench/base/pb.h"
#include "bench/run/stagestats.h"

static const char *const substages[] = {"open", "frames", NULL};
static const char *const counters[] = {"frames_decoded", NULL};
static const struct pb_decoder_ops fake_decoder = {
    .name = "fake", .substages = substages, .counters = counters};

static void add_thread(struct pb_stage_stats *st)
{
    assert_int_equal(pb_stage_stats_add(st, "read", NULL, NULL), PB_OK);
    assert_int_equal(pb_stage_stats_add(st, "decode", fake_decoder.substages, fake_decoder.counters), PB_OK);
    assert_int_equal(st->substage_count[1], 2);
    assert_int_equal(st->counter_count[1], 1);
    pb_stage_stats_reset(st);
}

/* Thread t measured samples of read 100 ns and decode 300 ns (of which
 * open 100, frames 200), 2 frames each, and one batch of collate 50 ns. */
static void measure(struct pb_stage_stats *st, int samples)
{
    for (int i = 0; i < samples; i++) {
        pb_hist_add(st->hist[0], 100);
        pb_hist_add(st->hist[1], 300);
        pb_hist_add(&st->substage_hist[1][0], 100);
        pb_hist_add(&st->substage_hist[1][1], 200);
        st->cpu_ns[0] += 90;
        st->cpu_ns[1] += 290;
        st->counters[1][0] += 2;
    }
    pb_hist_add(&st->collate_hist, 50);
    st->collate_cpu_ns += 40;
}

static void test_merge(void **state)
{
    (void)state;
    struct pb_stage_stats st[2] = {0};
    add_thread(&st[0]);
    add_thread(&st[1]);
    measure(&st[0], 3);
    measure(&st[1], 5);
    struct pb_repeat_result rep = {0};
    assert_int_equal(pb_stage_rows_merge(st, 2, &rep), PB_OK);
    static const char *const names[] = {"read", "decode", "decode.open", "decode.frames",
                                        "collate"};
    assert_int_equal(rep.stage_count, 5);
    for (size_t k = 0; k < rep.stage_count; k++)
        assert_string_equal(rep.stages[k].name, names[k]);
    assert_string_equal(rep.stages[2].parent, "decode");
    assert_string_equal(rep.stages[1].parent, "");
    assert_int_equal(rep.stages[0].hist.count, 8);
    assert_int_equal(rep.stages[1].hist.sum_ns, 8 * 300);
    assert_int_equal(rep.stages[3].hist.sum_ns, 8 * 200);
    assert_int_equal(rep.stages[4].hist.count, 2);
    assert_int_equal(rep.stages[0].cpu_ns, 8 * 90);
    assert_int_equal(rep.stages[4].cpu_ns, 80);
    assert_int_equal(rep.stages[1].counter_count, 1);
    assert_string_equal(rep.stages[1].counter_names[0], "frames_decoded");
    assert_int_equal(rep.stages[1].counters[0], 16);
    /* Shares are of read + decode + collate: 800 + 2400 + 100 ns. */
    assert_true(fabs(rep.stages[0].share_pct - 100.0 * 800 / 3300) < 1e-9);
    assert_true(fabs(rep.stages[1].share_pct - 100.0 * 2400 / 3300) < 1e-9);
    assert_true(fabs(rep.stages[4].share_pct - 100.0 * 100 / 3300) < 1e-9);
    free(rep.stages);

    pb_stage_stats_reset(&st[0]);
    assert_int_equal(st[0].hist[1]->count, 0);
    assert_int_equal(st[0].substage_hist[1][1].count, 0);
    assert_int_equal(st[0].cpu_ns[1], 0);
    assert_int_equal(st[0].counters[1][0], 0);
    assert_int_equal(st[0].collate_hist.count, 0);
    pb_stage_stats_free(&st[0]);
    pb_stage_stats_free(&st[1]);
    assert_int_equal(st[0].stage_count, 0);
}

static void test_stage_limit(void **state)
{
    (void)state;
    struct pb_stage_stats st = {0};
    for (int k = 0; k < PB_MAX_STAGES; k++)
        assert_int_equal(pb_stage_stats_add(&st, "s", NULL, NULL), PB_OK);
    assert_int_equal(pb_stage_stats_add(&st, "one too many", NULL, NULL), PB_ERR_CONFIG);
    pb_stage_stats_free(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_stage_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
