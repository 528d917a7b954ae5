/* The comparable metrics table (bench/result/metrics.h): every row is
 * complete, names are unique and found, and a value written back into a
 * repeat (how ranks combine) reads back the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/result/metrics.h"

static void test_every_row_is_complete(void **state)
{
    (void)state;
    for (int m = 0; m < PB_METRIC_COUNT; m++) {
        const struct pb_metric *row = &pb_metrics[m];
        assert_non_null(row->name);
        assert_non_null(row->unit);
        assert_non_null(row->of_repeat);
        /* A value that can be written back is combined over ranks; one
         * computed from the batches is rank 0's. */
        assert_true((row->to_repeat != NULL) == (row->ranks != PB_RANKS_ROOT));
        for (int k = 0; k < m; k++)
            assert_string_not_equal(pb_metrics[k].name, row->name);
        assert_ptr_equal(pb_metric_find(row->name), row);
    }
    assert_null(pb_metric_find("bogus"));
    assert_null(pb_metric_find(NULL));
    /* The headline comes first: compare's table and the tests read it there. */
    assert_string_equal(pb_metrics[0].name, "samples_per_s");
}

static void test_values_round_trip_through_a_repeat(void **state)
{
    (void)state;
    struct pb_repeat_result rep;
    memset(&rep, 0, sizeof(rep));
    for (int m = 0; m < PB_METRIC_COUNT; m++) {
        const struct pb_metric *row = &pb_metrics[m];
        if (!row->to_repeat) {
            assert_true(isnan(row->of_repeat(&rep))); /* no batches, no quantile */
            continue;
        }
        row->to_repeat(&rep, 1234.0 + m);
        assert_true(row->of_repeat(&rep) == 1234.0 + m);
    }
}

/* The assembly quantiles are nearest-rank over the repeat's batches. */
static void test_assembly_quantiles(void **state)
{
    (void)state;
    struct pb_batch_record records[100];
    memset(records, 0, sizeof(records));
    for (int i = 0; i < 100; i++)
        records[i].assembly_ns = (uint64_t)(100 - i) * 1000; /* 100000 .. 1000 */
    struct pb_repeat_result rep;
    memset(&rep, 0, sizeof(rep));
    rep.batch_records = records;
    rep.batch_count = 100;
    const struct pb_metric *p50 = pb_metric_find("assembly_p50_ns");
    const struct pb_metric *p99 = pb_metric_find("assembly_p99_ns");
    assert_non_null(p50);
    assert_non_null(p99);
    assert_true(p50->of_repeat(&rep) == 50000.0);
    assert_true(p99->of_repeat(&rep) == 99000.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_is_complete),
        cmocka_unit_test(test_values_round_trip_through_a_repeat),
        cmocka_unit_test(test_assembly_quantiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
