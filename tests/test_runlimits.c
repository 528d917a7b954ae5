/* bench/run/runlimits.c: the batch pool's memory estimate against what is
 * available or allowed (with 64-bit overflow in the product), the share of
 * bad samples a repeat may have, and the list of failing files, each file
 * once with a count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/run/runlimits.h"

static void test_format_bytes(void **state)
{
    (void)state;
    char buf[32];
    pb_format_bytes(512, buf, sizeof(buf));
    assert_string_equal(buf, "512 bytes");
    pb_format_bytes(24.6 * 1024, buf, sizeof(buf));
    assert_string_equal(buf, "24.6 KiB");
    pb_format_bytes(25.8 * 1024 * 1024 * 1024, buf, sizeof(buf));
    assert_string_equal(buf, "25.8 GiB");
}

static void test_pool_check(void **state)
{
    (void)state;
    struct pb_run_spec run = {.max_memory_mib = 0};
    char msg[PB_MSG_MAX];
    /* 1024 x 1024 x 24.6 KiB batches (8 samples of 3150 bytes). */
    struct pb_pool_plan plan = {
        .workers = 1024, .prefetch_factor = 1024, .batch_size = 8, .slot_bytes = 3150};
    uint64_t gib = 1ull << 30;
    assert_true(pb_pool_bytes(&plan) == 1024.0 * 1024 * 8 * 3150);
    assert_int_equal(pb_pool_check(&plan, &run, 21 * gib, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_string_equal(msg, "the batch pool needs 24.6 GiB (1024 workers x 1024 prefetch x "
                             "24.6 KiB) but 21.0 GiB is available; lower "
                             "loader.prefetch_factor, loader.workers or loader.batch_size, or "
                             "the pipeline's output size");
    assert_int_equal(pb_pool_check(&plan, &run, 30 * gib, msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_pool_check(&plan, &run, 0, msg, sizeof(msg)), PB_OK); /* unknown */
    /* run.max_memory_mib below what is available decides. */
    run.max_memory_mib = 1024;
    assert_int_equal(pb_pool_check(&plan, &run, 30 * gib, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "but 1.0 GiB is allowed by run.max_memory_mib"));
    /* A product past 64 bits is still refused, not wrapped round. */
    run.max_memory_mib = 0;
    struct pb_pool_plan huge = {.workers = 1024,
                                .prefetch_factor = 1024,
                                .batch_size = 65536,
                                .slot_bytes = (size_t)1 << 32,
                                .scratch_bytes = 4096,
                                .scratch_buffers = 2048};
    assert_true(pb_pool_bytes(&huge) > 1e20);
    assert_int_equal(pb_pool_check(&huge, &run, 30 * gib, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, ", plus 2048 scratch buffers of 4.0 KiB) but"));
    /* Loading in the consumer: one batch. */
    /* Buffers as big as the largest file: that file is named, with its
     * size and the limit. */
    struct pb_pool_plan big = {.workers = 4, .prefetch_factor = 2, .batch_size = 8,
                               .slot_bytes = 4096, .scratch_bytes = (size_t)6 << 30,
                               .scratch_buffers = 8, .largest_file = "data/huge.jpg",
                               .largest_bytes = (uint64_t)5 << 30, .others_mean_bytes = 200000};
    assert_int_equal(pb_pool_check(&big, &run, 21 * gib, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "largest file, data/huge.jpg, is 5.0 GiB"));
    assert_non_null(strstr(msg, "21.0 GiB is available"));
    assert_null(strstr(msg, "prefetch"));
    /* Every file that big: the loader's settings, as before. */
    big.others_mean_bytes = big.largest_bytes;
    assert_int_equal(pb_pool_check(&big, &run, 21 * gib, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "lower loader.prefetch_factor"));
    struct pb_pool_plan one = {.workers = 0, .batch_size = 4, .slot_bytes = 1 << 20};
    assert_int_equal(pb_pool_check(&one, &run, 1 << 20, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "(one batch of 4.0 MiB)"));
}

static void test_error_share(void **state)
{
    (void)state;
    struct pb_run_spec run = {.max_error_pct = 30};
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_error_share_check(&run, 0, 110380, "a.jpg: bad", msg, sizeof(msg)),
                     PB_ERR_DATA);
    assert_string_equal(msg, "every one of the 110380 samples failed: first error a.jpg: bad");
    assert_int_equal(pb_error_share_check(&run, 58, 42, "a.jpg: bad", msg, sizeof(msg)),
                     PB_ERR_DATA);
    assert_string_equal(msg, "42% of samples failed (42 of 100), above run.max_error_pct 30: "
                             "first error a.jpg: bad");
    assert_int_equal(pb_error_share_check(&run, 70, 30, "a.jpg: bad", msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_error_share_check(&run, 100, 0, "", msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_error_share_check(&run, 0, 0, "", msg, sizeof(msg)), PB_ERR_DATA);
    run.max_error_pct = 100; /* the share never fails; nothing delivered still does */
    assert_int_equal(pb_error_share_check(&run, 1, 999, "x", msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_error_share_check(&run, 0, 999, "x", msg, sizeof(msg)), PB_ERR_DATA);
}

static void test_error_files_once_with_count(void **state)
{
    (void)state;
    static struct pb_point_result p;
    memset(&p, 0, sizeof(p));
    for (int epoch = 0; epoch < 3; epoch++) {
        pb_error_files_add(&p, "data/a.jpg", "data/a.jpg: Premature end of JPEG file");
        pb_error_files_add(&p, "data/a.jpg.bak", "data/a.jpg.bak: not an image");
    }
    pb_error_files_add(&p, "data/b.jpg", "data/b.jpg: Bogus marker length");
    pb_error_files_add(&p, NULL, "sample 3 marked corrupt");
    pb_error_files_add(&p, NULL, "sample 3 marked corrupt");
    assert_int_equal(p.error_file_count, 4);
    assert_string_equal(p.error_files[0],
                        "data/a.jpg: Premature end of JPEG file (failed 3 times)");
    assert_string_equal(p.error_files[1], "data/a.jpg.bak: not an image (failed 3 times)");
    assert_string_equal(p.error_files[2], "data/b.jpg: Bogus marker length");
    assert_string_equal(p.error_files[3], "sample 3 marked corrupt (failed 2 times)");
    /* A reason that fills the entry keeps its count at the end. */
    char path[300], what[600];
    memset(path, 'x', 200);
    path[200] = '\0';
    snprintf(what, sizeof(what), "%s: a reason too long for the entry %0100d", path, 0);
    for (int i = 0; i < 12; i++)
        pb_error_files_add(&p, path, what);
    assert_int_equal(p.error_file_count, 5);
    size_t len = strlen(p.error_files[4]);
    assert_int_equal(len, sizeof(p.error_files[4]) - 1);
    assert_string_equal(p.error_files[4] + len - 18, " (failed 12 times)");
    /* A full list keeps counting the files it holds. */
    for (int i = 0; i < PB_MAX_ERROR_FILES + 12; i++) {
        char other[32];
        snprintf(other, sizeof(other), "c%d.jpg: bad", i);
        pb_error_files_add(&p, NULL, other);
    }
    assert_int_equal(p.error_file_count, PB_MAX_ERROR_FILES);
    pb_error_files_add(&p, "data/b.jpg", "data/b.jpg: Bogus marker length");
    assert_string_equal(p.error_files[2], "data/b.jpg: Bogus marker length (failed 2 times)");
}

/* The list keeps the first 64 failing files; failures of files after
 * those are counted, and the result file carries the count. */
static void test_error_files_beyond_the_list_are_counted(void **state)
{
    (void)state;
    static struct pb_point_result p;
    memset(&p, 0, sizeof(p));
    for (int i = 0; i < PB_MAX_ERROR_FILES + 6; i++) {
        char path[64], what[128];
        snprintf(path, sizeof(path), "data/%03d.jpg", i);
        snprintf(what, sizeof(what), "%s: corrupt", path);
        pb_error_files_add(&p, path, what);
    }
    pb_error_files_add(&p, "data/000.jpg", "data/000.jpg: corrupt"); /* listed: its count */
    assert_int_equal(p.error_file_count, PB_MAX_ERROR_FILES);
    assert_int_equal(PB_MAX_ERROR_FILES, 64);
    assert_int_equal(p.error_files_unlisted, 6);
    assert_string_equal(p.error_files[0], "data/000.jpg: corrupt (failed 2 times)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_bytes),
        cmocka_unit_test(test_pool_check),
        cmocka_unit_test(test_error_share),
        cmocka_unit_test(test_error_files_once_with_count),
        cmocka_unit_test(test_error_files_beyond_the_list_are_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
