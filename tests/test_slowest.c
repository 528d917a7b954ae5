/* The slowest samples per stage (bench/result/slowest.h): a thread's five against
 * a plain sort of random times, the merge of threads and repeats (a sample
 * once, at its slowest), and the JSON round trip. */
#include <stdlib.h>
#include <string.h>

#include "bench/result/result.h"
#include "bench/result/slowest.h"
#include "tests/testutil.h"

static int by_ns_desc(const void *a, const void *b)
{
    uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
    return (x < y) - (x > y);
}

static void test_thread_keeps_five_slowest(void **state)
{
    (void)state;
    uint64_t rng = 7;
    for (int trial = 0; trial < 100; trial++) {
        struct pb_slowest s;
        memset(&s, 0, sizeof(s));
        size_t n = 1 + pb_test_rnd(&rng) % 300;
        uint64_t (*pairs)[2] = calloc(n, sizeof(*pairs));
        for (size_t i = 0; i < n; i++) {
            pairs[i][0] = 1 + pb_test_rnd(&rng) % 1000000; /* ns */
            pairs[i][1] = i;                               /* sample */
            pb_slowest_add(&s, pairs[i][1], pairs[i][0]);
        }
        qsort(pairs, n, sizeof(*pairs), by_ns_desc);
        for (size_t k = 0; k < PB_SLOWEST_SAMPLES; k++)
            assert_int_equal(s.ns[k], k < n ? pairs[k][0] : 0);
        free(pairs);
    }
}

/* A sample seen again (the same big file, every epoch) keeps one place at
 * its slowest time, so the five places name five samples: against a
 * reference that keeps each sample's maximum and takes the five largest. */
static void test_thread_lists_a_sample_once(void **state)
{
    (void)state;
    uint64_t rng = 11;
    for (int trial = 0; trial < 200; trial++) {
        struct pb_slowest s;
        memset(&s, 0, sizeof(s));
        enum { FILES = 12 };
        uint64_t best[FILES] = {0};
        size_t n = 1 + pb_test_rnd(&rng) % 200;
        for (size_t i = 0; i < n; i++) {
            uint64_t sample = pb_test_rnd(&rng) % FILES;
            uint64_t ns = 1 + pb_test_rnd(&rng) % 1000;
            if (sample == 3)
                ns += 5000; /* one file always slowest */
            pb_slowest_add(&s, sample, ns);
            if (ns > best[sample])
                best[sample] = ns;
        }
        uint64_t sorted[FILES];
        memcpy(sorted, best, sizeof(sorted));
        for (int a = 0; a < FILES; a++)
            for (int b = a + 1; b < FILES; b++)
                if (sorted[b] > sorted[a]) {
                    uint64_t t = sorted[a];
                    sorted[a] = sorted[b];
                    sorted[b] = t;
                }
        for (int k = 0; k < PB_SLOWEST_SAMPLES; k++) {
            assert_int_equal(s.ns[k], sorted[k]);
            if (s.ns[k]) {
                assert_int_equal(best[s.sample[k]], s.ns[k]);
                for (int j = 0; j < k; j++)
                    assert_true(s.sample[j] != s.sample[k]);
            }
        }
    }
}

static void test_merge_lists_a_sample_once(void **state)
{
    (void)state;
    char *paths[] = {"a.jpg", "b.jpg", "c.jpg", "d.jpg", "e.jpg", "f.jpg", "g.jpg"};
    struct pb_slowest t1, t2;
    memset(&t1, 0, sizeof(t1));
    memset(&t2, 0, sizeof(t2));
    for (uint64_t i = 0; i < 7; i++)
        pb_slowest_add(&t1, i, 100 + i);     /* 6,5,4,3,2 kept */
    pb_slowest_add(&t2, 0, 1000);            /* a.jpg: the slowest of all */
    pb_slowest_add(&t2, 6, 50);              /* g.jpg again, faster: not listed twice */
    struct pb_stage_result row;
    memset(&row, 0, sizeof(row));
    pb_slowest_merge_thread(&row, &t1, paths, 7);
    pb_slowest_merge_thread(&row, &t2, paths, 7);
    assert_int_equal(row.slowest_count, 5);
    assert_string_equal(row.slowest_files[0], "a.jpg");
    assert_int_equal(row.slowest_ns[0], 1000);
    assert_string_equal(row.slowest_files[1], "g.jpg");
    assert_int_equal(row.slowest_ns[1], 106);
    assert_string_equal(row.slowest_files[4], "d.jpg");

    /* Another repeat: g.jpg slower there replaces its entry. */
    struct pb_stage_result other;
    memset(&other, 0, sizeof(other));
    struct pb_slowest t3;
    memset(&t3, 0, sizeof(t3));
    pb_slowest_add(&t3, 6, 500);
    pb_slowest_merge_thread(&other, &t3, paths, 7);
    pb_slowest_merge_row(&row, &other);
    assert_int_equal(row.slowest_count, 5);
    assert_int_equal(row.slowest_ns[1], 500);
    int g = 0;
    for (int k = 0; k < row.slowest_count; k++)
        g += strcmp(row.slowest_files[k], "g.jpg") == 0;
    assert_int_equal(g, 1);

    json_t *j = pb_slowest_to_json(&row);
    struct pb_stage_result back;
    memset(&back, 0, sizeof(back));
    pb_slowest_from_json(j, &back);
    json_decref(j);
    assert_int_equal(back.slowest_count, 5);
    for (int k = 0; k < 5; k++) {
        assert_int_equal(back.slowest_ns[k], row.slowest_ns[k]);
        assert_string_equal(back.slowest_files[k], row.slowest_files[k]);
    }
    /* No paths (generated data): indexes only. */
    struct pb_stage_result bare;
    memset(&bare, 0, sizeof(bare));
    pb_slowest_merge_thread(&bare, &t1, NULL, 0);
    assert_int_equal(bare.slowest_count, 5);
    assert_string_equal(bare.slowest_files[0], "");
    assert_int_equal(bare.slowest_sample[0], 6);
}

/* File names are bytes: a name that is not UTF-8 is still listed, each
 * stray byte read as the Latin-1 character of its value, and UTF-8 stays
 * as it is (pb_json_text, which the error list uses too). */
static void test_file_names_that_are_not_utf8(void **state)
{
    (void)state;
    char *paths[] = {"caf\xc3\xa9.jpg", "bad\xff\xc3.jpg", "\xed\xa0\x80.jpg"};
    struct pb_slowest t;
    memset(&t, 0, sizeof(t));
    for (uint64_t i = 0; i < 3; i++)
        pb_slowest_add(&t, i, 100 * (3 - i)); /* listed in path order */
    struct pb_stage_result row;
    memset(&row, 0, sizeof(row));
    pb_slowest_merge_thread(&row, &t, paths, 3);
    json_t *j = pb_slowest_to_json(&row);
    assert_int_equal(json_array_size(j), 3);
    const char *want[] = {"caf\xc3\xa9.jpg", "bad\xc3\xbf\xc3\x83.jpg",
                          "\xc3\xad\xc2\xa0\xc2\x80.jpg"}; /* a surrogate is not UTF-8 */
    for (size_t k = 0; k < 3; k++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(j, k), "file")),
                            want[k]);
    char *text = json_dumps(j, 0);
    assert_non_null(text); /* jansson writes it: valid UTF-8 throughout */
    json_error_t error;
    json_t *back = json_loads(text, 0, &error);
    assert_non_null(back);
    /* Read back, each name is the file's own bytes again (file_bytes),
     * not its Latin-1 reading. */
    struct pb_stage_result again;
    memset(&again, 0, sizeof(again));
    pb_slowest_from_json(back, &again);
    assert_int_equal(again.slowest_count, 3);
    for (int k = 0; k < 3; k++)
        assert_string_equal(again.slowest_files[k], paths[k]);
    assert_null(json_object_get(json_array_get(back, 0), "file_bytes")); /* UTF-8: not needed */
    json_decref(back);
    free(text);
    json_decref(j);
}

/* A file name of 244 characters in a folder, and one of the same length
 * that is not UTF-8, come back whole: the file's own name, and its bytes. */
static void test_long_file_names_kept_whole(void **state)
{
    (void)state;
    char plain[300] = "data/deep/folder/", odd[300] = "data/deep/folder/";
    size_t at = strlen(plain);
    memset(plain + at, 'a', 244);
    memset(odd + at, 'b', 244);
    odd[at + 10] = '\xff';
    plain[at + 244] = odd[at + 244] = '\0';
    char *paths[] = {plain, odd};
    struct pb_slowest t;
    memset(&t, 0, sizeof(t));
    pb_slowest_add(&t, 0, 200);
    pb_slowest_add(&t, 1, 100);
    struct pb_stage_result row;
    memset(&row, 0, sizeof(row));
    pb_slowest_merge_thread(&row, &t, paths, 2);
    json_t *j = pb_slowest_to_json(&row);
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "file")), plain);
    assert_non_null(json_object_get(json_array_get(j, 1), "file_bytes"));
    struct pb_stage_result again;
    memset(&again, 0, sizeof(again));
    pb_slowest_from_json(j, &again);
    assert_string_equal(again.slowest_files[0], plain);
    assert_string_equal(again.slowest_files[1], odd);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_keeps_five_slowest),
        cmocka_unit_test(test_thread_lists_a_sample_once),
        cmocka_unit_test(test_merge_lists_a_sample_once),
        cmocka_unit_test(test_file_names_that_are_not_utf8),
        cmocka_unit_test(test_long_file_names_kept_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
