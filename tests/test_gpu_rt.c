/* kernels/gpu_rt: without a device every query says why and every
 * allocation is NULL; with one, device memory is counted (the peak) and
 * pinned memory is usable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/gpu_rt.h"

static void test_without_device(void **state)
{
    (void)state;
    char why[PB_MSG_MAX] = "";
    if (pb_gpu_available(why, sizeof(why)))
        skip();
    if (strncmp(why, "no CUDA device: ", 16) != 0 && strcmp(why, "built without CUDA") != 0)
        fail_msg("unexpected reason: %s", why);
    char again[PB_MSG_MAX] = "";
    assert_int_equal(pb_gpu_device_count(again, sizeof(again)), 0);
    assert_string_equal(again, why);
    assert_int_equal(pb_gpu_device_count(NULL, 0), 0); /* why may be NULL */
    assert_null(pb_gpu_alloc(4096));
    assert_null(pb_pinned_alloc(4096));
    assert_null(pb_gpu_host_alloc(0));
    pb_gpu_free(NULL, 4096);
    pb_pinned_free(NULL);
    pb_gpu_host_free(NULL);
    assert_int_equal(pb_gpu_alloc_peak(), 0);
    assert_int_equal(pb_gpu_mem_used(), 0);
}

static void test_check_messages(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX] = "untouched";
    assert_int_equal(pb_gpu_check(0, "resize", msg, sizeof(msg)), PB_OK);
    assert_string_equal(msg, "untouched");
    assert_int_equal(pb_gpu_check(2, "resize", msg, sizeof(msg)), PB_ERR);
    assert_true(strncmp(msg, "resize", 6) == 0);
}

static void test_on_device(void **state)
{
    (void)state;
    char why[PB_MSG_MAX];
    if (!pb_gpu_available(why, sizeof(why)))
        skip();
    assert_true(pb_gpu_device_count(why, sizeof(why)) >= 1);
    uint64_t peak_before = pb_gpu_alloc_peak();
    size_t bytes = (size_t)64 << 20;
    void *a = pb_gpu_alloc(bytes), *b = pb_gpu_alloc(bytes);
    assert_non_null(a);
    assert_non_null(b);
    assert_true(pb_gpu_alloc_peak() >= peak_before + 2 * bytes);
    assert_true(pb_gpu_mem_used() >= 2 * bytes);
    uint8_t *host = pb_gpu_host_alloc(4096);
    assert_non_null(host);
    memset(host, 7, 4096);
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_gpu_upload_sync(a, host, 4096, msg, sizeof(msg)), PB_OK);
    pb_gpu_host_free(host);
    pb_gpu_free(a, bytes);
    pb_gpu_free(b, bytes);
    /* The peak stays where it was after freeing. */
    assert_true(pb_gpu_alloc_peak() >= peak_before + 2 * bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_without_device),
        cmocka_unit_test(test_check_messages),
        cmocka_unit_test(test_on_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
