/* Tests for bench/base/table.c: aligned text (UTF-8 measured in code points,
 * right-aligned columns, the header underlined or left out), Markdown
 * escaping, and cells made printable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench/base/table.h"

static char *render_text(const struct pb_table *t, bool markdown)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    if (markdown)
        pb_table_print_markdown(out, t);
    else
        pb_table_print_text(out, t, "  ");
    fclose(out);
    return text;
}

static void fill(struct pb_table *t, unsigned right_mask, bool plain_header)
{
    pb_table_init(t, 2, right_mask, plain_header);
    pb_table_add(t, "stage");
    pb_table_add(t, "p50");
    pb_table_add(t, "decode");
    pb_table_add(t, "%.1f µs", 12.3);
    pb_table_add(t, "a|b");
    pb_table_add(t, "%d ms", 7);
}

static void test_text_alignment(void **state)
{
    (void)state;
    struct pb_table t;
    fill(&t, 1u << 1, false);
    char *text = render_text(&t, false);
    /* Column 1 is right-aligned to "12.3 µs", 7 code points (8 bytes). */
    assert_string_equal(text, "  stage       p50\n"
                              "  ---------------\n"
                              "  decode  12.3 µs\n"
                              "  a|b        7 ms\n");
    free(text);
    pb_table_free(&t);

    fill(&t, 0, true);
    text = render_text(&t, false);
    assert_string_equal(text, "  decode  12.3 µs\n"
                              "  a|b     7 ms\n");
    free(text);
    pb_table_free(&t);
}

static void test_markdown(void **state)
{
    (void)state;
    struct pb_table t;
    fill(&t, 1u << 1, false);
    char *text = render_text(&t, true);
    assert_string_equal(text, "| stage | p50 |\n"
                              "| --- | ---: |\n"
                              "| decode | 12.3 µs |\n"
                              "| a\\|b | 7 ms |\n\n");
    free(text);
    pb_table_free(&t);
}

static void test_markdown_escapes_html(void **state)
{
    (void)state;
    struct pb_table t;
    pb_table_init(&t, 1, 0, false);
    pb_table_add(&t, "name");
    pb_table_add(&t, "%s", "<img src=x onerror=alert(1)>|a&b");
    char *text = render_text(&t, true);
    assert_string_equal(text, "| name |\n"
                              "| --- |\n"
                              "| &lt;img src=x onerror=alert(1)&gt;\\|a&amp;b |\n\n");
    free(text);
    pb_table_free(&t);
    char buf[PB_MARKDOWN_SIZE(16)];
    assert_string_equal(pb_markdown_text(buf, sizeof(buf), "a<b>&|c", false), "a&lt;b&gt;&amp;|c");
    assert_string_equal(pb_markdown_text(buf, sizeof(buf), "a|b\nc", true), "a\\|b c");
    /* Cut where the buffer ends, never inside an entity. */
    assert_string_equal(pb_markdown_text(buf, 9, "ab&cd", false), "ab&amp;c");
    assert_string_equal(pb_markdown_text(buf, 7, "ab&cd", false), "ab");
}

static void test_cells_are_printable(void **state)
{
    (void)state;
    struct pb_table t;
    pb_table_init(&t, 1, 0, false);
    pb_table_add(&t, "name");
    pb_table_add(&t, "%s", "\x1b[31mred\nline");
    char *text = render_text(&t, false);
    assert_null(strchr(text, '\x1b'));
    assert_non_null(strstr(text, "\\x1b[31mred\\x0aline"));
    free(text);
    pb_table_free(&t);
    assert_int_equal(t.cell_count, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_alignment),
        cmocka_unit_test(test_markdown),
        cmocka_unit_test(test_markdown_escapes_html),
        cmocka_unit_test(test_cells_are_printable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
