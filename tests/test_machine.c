/* Tests for bench/sys/machine.c: the machine probe finds cores, memory,
 * the kernel, the libraries' versions and the GPU's status (or why there
 * is none). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/sys/machine.h"
#include "kernels/gpu_rt.h"

static void test_machine_probe(void **state)
{
    (void)state;
    struct pb_machine m;
    pb_machine_probe(&m);
    assert_true(m.cores >= 1);
    assert_true(m.pus >= m.cores);
    assert_true(m.packages >= 1);
    assert_true(m.cpu_model[0] != '\0');
    assert_true(m.hostname[0] != '\0');
    assert_true(m.memory_bytes > 0);
    assert_true(m.kernel[0] != '\0');
    assert_true(m.library_count >= 8);
    assert_string_equal(m.libraries[0][0], "libyaml");
    assert_true(m.libraries[1][1][0] >= '1' && m.libraries[1][1][0] <= '9');
    assert_true(m.gpu_status[0] != '\0');

    char why[256] = "";
    int available = pb_gpu_available(why, sizeof(why));
    if (available) {
        assert_true(m.gpu_count >= 1);
        assert_string_equal(m.gpu_status, "ok");
        void *pinned = pb_pinned_alloc(1 << 20);
        assert_non_null(pinned);
        memset(pinned, 0xab, 1 << 20);
        pb_pinned_free(pinned);
    } else {
        assert_int_equal(m.gpu_count, 0);
        assert_true(why[0] != '\0');
        assert_string_equal(m.gpu_status, why);
        assert_null(pb_pinned_alloc(4096));
        pb_pinned_free(NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_machine_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
