/* Tests of the table's storage lines (bench/report/report_storage.c): the words
 * follow the measured residency, a sampled measurement says so, a cache
 * mode that did not work says why, and the read rate is set against the
 * storage ceiling only where reads went to storage. */
#include "tests/testutil.h"

#include "bench/report/report_storage.h"

/* The lines for a point whose repeats measured pcts[0..count), as text. */
static char *render_as(const struct pb_result *result, const double *pcts, size_t count,
                       uint64_t checked, double mb_per_s, bool markdown)
{
    struct pb_repeat_result repeats[4] = {0};
    struct pb_point_result point = {
        .repeat_count = count, .repeats = repeats, .mb_per_s = mb_per_s};
    for (size_t i = 0; i < count; i++) {
        repeats[i].page_cache_resident_pct = pcts[i];
        repeats[i].page_cache_files_checked = checked;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    pb_report_storage(out, markdown, result, &point);
    fclose(out);
    return text;
}

static char *render(const struct pb_result *result, const double *pcts, size_t count,
                    uint64_t checked, double mb_per_s)
{
    return render_as(result, pcts, count, checked, mb_per_s, false);
}

static void test_memory_and_storage(void **state)
{
    (void)state;
    struct pb_result result = {
        .dataset = {.format = "files", .cache = "warm", .filesystem = "ext4", .files = 400}};
    char *text = render(&result, (double[]){97.2, 97.4}, 2, 400, 50);
    pb_test_assert_contains(text, (const char *const[]){"read from memory: 97% of the dataset",
                                                        "each repeat", "dataset.cache: warm",
                                                        "all 400 files checked", NULL});
    assert_null(strstr(text, "MB/s")); /* from memory: no storage rate */
    free(text);

    snprintf(result.dataset.cache, sizeof(result.dataset.cache), "cold");
    result.dataset.cold_read_mb_per_s = 200;
    text = render(&result, (double[]){0.5, 3.0}, 2, 400, 50);
    pb_test_assert_contains(text, (const char *const[]){"read from storage: 0-3% of the dataset",
                                                        "read 50.0 MB/s: 25% of this storage's",
                                                        "200.0 MB/s", NULL});
    free(text);

    text = render(&result, (double[]){40}, 1, 400, 50);
    pb_test_assert_contains(
        text, (const char *const[]){"read partly from memory: 40%", "the repeat", NULL});
    free(text);
}

static void test_sampled_and_notes(void **state)
{
    (void)state;
    struct pb_result result = {.dataset = {.format = "tar",
                                           .cache = "cold",
                                           .filesystem = "tmpfs",
                                           .files = 9000,
                                           .shards = 9000,
                                           .bad_samples = 3}};
    snprintf(result.dataset.cache_note, sizeof(result.dataset.cache_note),
             "eviction has no effect on this file system");
    char *text = render(&result, (double[]){100}, 1, 4096, 0);
    pb_test_assert_contains(
        text, (const char *const[]){"a sample of 4096 of its 9000 shards checked",
                                    "dataset.cache: cold did not work as asked on tmpfs: "
                                    "eviction has no effect",
                                    "3 bad samples", NULL});
    free(text);

    /* No repeat measured (an older result): no line at all. */
    text = render(&result, (double[]){0}, 1, 0, 0);
    assert_string_equal(text, "");
    free(text);
}

/* In Markdown, a name from the machine (a file system's) shows as
 * written, never as HTML (issue 28, item 13). */
static void test_markdown_names_not_html(void **state)
{
    (void)state;
    struct pb_result result = {.dataset = {.format = "files",
                                           .cache = "warm",
                                           .filesystem = "<img src=x>",
                                           .files = 4}};
    char *text = render_as(&result, (double[]){97.2}, 1, 4, 50, true);
    pb_test_assert_contains(text, (const char *const[]){"on &lt;img src=x&gt;", NULL});
    assert_null(strstr(text, "<img"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_and_storage),
        cmocka_unit_test(test_sampled_and_notes),
        cmocka_unit_test(test_markdown_names_not_html),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
