/* kernels/tensor: a shape's byte count against a plain reference on random
 * shapes, and the dtype names results use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/tensor.h"

/* The reference: the product of the dimensions, frames < 1 counting as
 * one, times the element size. */
static size_t reference_bytes(const struct pb_shape *s)
{
    static const size_t element_bytes[] = {1, 1, 2, 4};
    size_t n = element_bytes[s->dtype];
    n *= (size_t)(s->frames < 1 ? 1 : s->frames);
    n *= (size_t)s->height;
    n *= (size_t)s->width;
    n *= (size_t)s->channels;
    return n;
}

static void test_shape_bytes_matches_reference(void **state)
{
    (void)state;
    uint64_t x = 12345;
    for (int i = 0; i < 10000; i++) {
        /* One draw per statement: an initializer list's order is unspecified. */
        uint64_t r[6];
        for (int k = 0; k < 6; k++)
            r[k] = x = pb_mix64(x);
        struct pb_shape s = {
            .dtype = (enum pb_dtype)(r[0] % 4),
            .frames = (int32_t)(r[1] % 18) - 1, /* -1 and 0 too */
            .height = (int32_t)(r[2] % 2000),
            .width = (int32_t)(r[3] % 2000),
            .channels = (int32_t)(r[4] % 5),
            .layout = (enum pb_layout)(r[5] % 3),
        };
        assert_int_equal(pb_shape_bytes(&s), reference_bytes(&s));
    }
    struct pb_shape image = {PB_DTYPE_F32, 1, 224, 224, 3, PB_LAYOUT_TCHW};
    assert_int_equal(pb_shape_bytes(&image), 224 * 224 * 3 * 4);
}

static void test_dtype_names(void **state)
{
    (void)state;
    assert_string_equal(pb_dtype_name(PB_DTYPE_BYTES), "bytes");
    assert_string_equal(pb_dtype_name(PB_DTYPE_U8), "uint8");
    assert_string_equal(pb_dtype_name(PB_DTYPE_F16), "float16");
    assert_string_equal(pb_dtype_name(PB_DTYPE_F32), "float32");
    assert_string_equal(pb_dtype_name((enum pb_dtype)42), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_bytes_matches_reference),
        cmocka_unit_test(test_dtype_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
