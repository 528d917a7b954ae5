/* Printable text: control characters become \xNN escapes, everything else
 * (UTF-8 included) is kept, and a short buffer cuts between escapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "bench/base/printable.h"

static void test_escapes_control_characters(void **state)
{
    (void)state;
    char buf[PB_PRINTABLE_SIZE(64)];
    assert_string_equal(pb_printable(buf, sizeof(buf), "\x1b[31mred\nline"),
                        "\\x1b[31mred\\x0aline");
    assert_string_equal(pb_printable(buf, sizeof(buf), "tab\there\r\x7f"),
                        "tab\\x09here\\x0d\\x7f");
    /* U+009B (CSI as one character) goes; µ and · stay. */
    assert_string_equal(pb_printable(buf, sizeof(buf),
                                     "a\xc2\x9b"
                                     "b µs · c"),
                        "a\\xc2\\x9bb µs · c");
    assert_string_equal(pb_printable(buf, sizeof(buf), "plain/path-1.json"), "plain/path-1.json");
    assert_string_equal(pb_printable(buf, sizeof(buf), ""), "");
}

static void test_cuts_between_escapes(void **state)
{
    (void)state;
    char buf[8];
    assert_string_equal(pb_printable(buf, sizeof(buf), "ab\ncd"), "ab\\x0ac"); /* 7 bytes */
    assert_string_equal(pb_printable(buf, 6, "ab\ncd"), "ab");                 /* no half escape */
    assert_string_equal(pb_printable(buf, 1, "abc"), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes_control_characters),
        cmocka_unit_test(test_cuts_between_escapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
