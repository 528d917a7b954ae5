/* Figures as text (bench/base/fmt.h): the one duration formatter and its
 * tick form, a change's unit, a setting's value and an axis label. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "bench/base/fmt.h"

static const char *duration(double ns)
{
    static char buf[32];
    pb_fmt_duration(buf, sizeof buf, ns);
    return buf;
}

static void test_durations_have_three_significant_digits(void **state)
{
    (void)state;
    assert_string_equal(duration(850), "850 ns");
    assert_string_equal(duration(999.4), "999 ns");
    assert_string_equal(duration(999.6), "1.00 µs");
    assert_string_equal(duration(12345), "12.3 µs");
    assert_string_equal(duration(855000), "855 µs");
    assert_string_equal(duration(1.2e6), "1.20 ms");
    assert_string_equal(duration(3.456e9), "3.46 s");
    assert_string_equal(duration(7200e9), "7200 s");
    assert_string_equal(duration(NAN), "-");
    char tick[32];
    pb_fmt_duration_tick(tick, sizeof tick, 1e4);
    assert_string_equal(tick, "10 µs");
    pb_fmt_duration_tick(tick, sizeof tick, 2.5e6);
    assert_string_equal(tick, "2.5 ms");
    pb_fmt_duration_tick(tick, sizeof tick, 100);
    assert_string_equal(tick, "100 ns");
}

static void test_units_values_and_labels(void **state)
{
    (void)state;
    assert_string_equal(pb_fmt_change_unit(true), "pp");
    assert_string_equal(pb_fmt_change_unit(false), "%");
    char buf[64];
    json_t *v = json_pack("[i f b s n]", 4, 0.5, 1, "fast");
    const char *want[] = {"4", "0.5", "true", "fast", "null"};
    for (size_t i = 0; i < 5; i++) {
        pb_fmt_json_value(buf, sizeof buf, json_array_get(v, i));
        assert_string_equal(buf, want[i]);
    }
    pb_fmt_json_value(buf, sizeof buf, v);
    assert_string_equal(buf, "[4,0.5,true,\"fast\",null]");
    pb_fmt_json_value(buf, sizeof buf, NULL);
    assert_string_equal(buf, "?");
    json_decref(v);
    pb_fmt_axis_label(buf, sizeof buf, "CPU time per sample", "µs");
    assert_string_equal(buf, "CPU time per sample (µs)");
    pb_fmt_axis_label(buf, sizeof buf, "samples/s", NULL);
    assert_string_equal(buf, "samples/s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations_have_three_significant_digits),
        cmocka_unit_test(test_units_values_and_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
