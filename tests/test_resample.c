/* pb_resample_u8 against a plain scalar reference of its own integer
 * arithmetic (kernels/resample.c's header comment), bit for bit: the
 * vectorized loops (AVX-512 and AVX2 where the CPU has them,
 * kernels/resample_x86.c) and the portable ones must all give exactly the
 * values the formulas define,
 * for every window size, up- and downscaling, 1, 3 and 4 channels.
 * tests/test_kernels.c checks the formulas themselves against double
 * precision (within 1 LSB).
 *
 * The reference reads the resampler's coefficient tables (start_x, coef_x,
 * start_y, coef_y: what the GPU kernels read too) and nothing else. Source
 * images and outputs are allocated to their exact size, windows often touch
 * the image's far corner, so a read or write past either shows under ASan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/image.h"
#include "kernels/resample_x86.h"

#define ROW_SHIFT (PB_RESAMPLE_COEF_BITS - PB_RESAMPLE_ROW_BITS)
#define OUT_SHIFT (PB_RESAMPLE_COEF_BITS + PB_RESAMPLE_ROW_BITS)
#define OUT2_SHIFT (PB_RESAMPLE_COEF2_BITS + PB_RESAMPLE_ROW_BITS)

/* One output row: the vertical sum of each window value in
 * PB_RESAMPLE_ROW_BITS fixed point, then the horizontal one rounded to
 * uint8 (16-bit coefficients when there are 2 taps, Q22 in int64 else). */
static void reference_row(const struct pb_resampler *r, const uint8_t *src, size_t stride, int y,
                          int32_t *row, uint8_t *out)
{
    int ch = r->channels;
    size_t n = (size_t)r->in_w * (size_t)ch;
    const int32_t *cy = r->coef_y + (size_t)y * (size_t)r->taps_y;
    const uint8_t *top = src + (size_t)r->start_y[y] * stride;
    for (size_t i = 0; i < n; i++) {
        if (r->taps_y == 1) {
            row[i] = (int32_t)top[i] << PB_RESAMPLE_ROW_BITS;
            continue;
        }
        int64_t sum = (int64_t)1 << (ROW_SHIFT - 1);
        for (int k = 0; k < r->taps_y; k++)
            sum += (int64_t)cy[k] * top[(size_t)k * stride + i];
        row[i] = (int32_t)(sum >> ROW_SHIFT);
    }
    for (int x = 0; x < r->out_w; x++) {
        const int32_t *cx = r->coef_x + (size_t)x * (size_t)r->taps_x;
        for (int c = 0; c < ch; c++) {
            const int32_t *p = row + (size_t)r->start_x[x] * (size_t)ch + (size_t)c;
            int64_t v;
            if (r->taps_x == 2) {
                const int shift = PB_RESAMPLE_COEF_BITS - PB_RESAMPLE_COEF2_BITS;
                int64_t c0 = (cx[0] + (1 << (shift - 1))) >> shift;
                int64_t c1 = ((int64_t)1 << PB_RESAMPLE_COEF2_BITS) - c0;
                v = (c0 * p[0] + c1 * p[ch] + ((int64_t)1 << (OUT2_SHIFT - 1))) >> OUT2_SHIFT;
            } else {
                int64_t sum = (int64_t)1 << (OUT_SHIFT - 1);
                for (int k = 0; k < r->taps_x; k++)
                    sum += (int64_t)cx[k] * p[(size_t)k * (size_t)ch];
                v = sum >> OUT_SHIFT;
            }
            assert_true(v >= 0 && v <= 255);
            out[(size_t)x * (size_t)ch + (size_t)c] = (uint8_t)v;
        }
    }
}

static void reference(const struct pb_resampler *r, const uint8_t *src, size_t stride, uint8_t *dst)
{
    int ch = r->channels;
    size_t out_row = (size_t)r->out_w * (size_t)ch;
    if (r->interp == PB_INTERP_NEAREST) {
        for (int y = 0; y < r->out_h; y++)
            for (int x = 0; x < r->out_w; x++)
                memcpy(dst + (size_t)y * out_row + (size_t)x * (size_t)ch,
                       src + (size_t)r->start_y[y] * stride + (size_t)r->start_x[x] * (size_t)ch,
                       (size_t)ch);
        return;
    }
    int32_t *row = malloc((size_t)r->in_w * (size_t)ch * sizeof(int32_t));
    assert_non_null(row);
    for (int y = 0; y < r->out_h; y++)
        reference_row(r, src, stride, y, row, dst + (size_t)y * out_row);
    free(row);
}

/* How many resamplings ran each set of loops prepare can choose
 * (pb_resampler.x86_loops: portable, AVX2, AVX-512, AVX-512 narrow). */
static int loops_used[4];

static uint64_t draw(uint64_t *state, uint64_t below)
{
    return pb_mix64((*state)++) % below;
}

/* Resamples the (top, left) rh x rw window of an h x w image with the
 * fastest loops, with AVX2 at most and with the portable ones: each must
 * equal the reference.
 * One seed in five draws black and white runs instead of noise: the
 * extremes of every sum. */
static void check_exact(enum pb_interp interp, int h, int w, int top, int left, int rh, int rw,
                        int oh, int ow, int channels, uint64_t seed)
{
    size_t stride = (size_t)w * (size_t)channels, bytes = (size_t)h * stride;
    size_t out_bytes = (size_t)oh * (size_t)ow * (size_t)channels;
    uint8_t *img = malloc(bytes), *want = malloc(out_bytes), *got = malloc(out_bytes);
    assert_non_null(img);
    assert_non_null(want);
    assert_non_null(got);
    for (size_t i = 0; i < bytes; i++) /* noise, with flat runs and extremes */
        img[i] =
            seed % 5 == 0 ? (uint8_t)(i / 97 % 2 ? 255 : 0) : (uint8_t)(pb_mix64(seed + i) >> 56);
    const uint8_t *corner = img + (size_t)top * stride + (size_t)left * (size_t)channels;
    static const char *const names[] = {"fastest", "AVX2 at most", "portable"};
    for (int loops = PB_RESAMPLE_FASTEST; loops <= PB_RESAMPLE_PORTABLE; loops++) {
        struct pb_resampler r;
        /* Small on purpose: prepare grows every table. */
        assert_int_equal(pb_resampler_init(&r, interp, 1, 1, 1, 1, 1), PB_OK);
        r.loops = (enum pb_resample_loops)loops;
        assert_int_equal(pb_resampler_prepare(&r, rh, rw, oh, ow, channels), PB_OK);
        if (loops == PB_RESAMPLE_FASTEST)
            reference(&r, corner, stride, want);
        assert_true(r.x86_loops >= 0 && r.x86_loops < 4);
        loops_used[r.x86_loops]++;
        memset(got, 0xa5, out_bytes);
        pb_resample_u8(&r, corner, stride, got);
        for (size_t i = 0; i < out_bytes; i++)
            if (got[i] != want[i])
                fail_msg("%s interp %d: %dx%d window at (%d,%d) of %dx%d -> %dx%d, %d channels: "
                         "value %zu (row %zu) is %d, the integer formula gives %d",
                         names[loops], (int)interp, rh, rw, top, left, h, w, oh, ow, channels, i,
                         i / ((size_t)ow * (size_t)channels), got[i], want[i]);
        pb_resampler_free(&r);
    }
    free(img);
    free(want);
    free(got);
}

/* Random images and windows, widths 1..600, any output size up to 300 on
 * each axis (up- and downscaling independently), all three interpolations
 * and 1, 3 and 4 channels. */
static void test_resample_exact_random(void **state)
{
    (void)state;
    static const int channel_counts[] = {1, 3, 4};
    uint64_t s = 0x7e57;
    for (int i = 0; i < 600; i++) {
        int w = 1 + (int)draw(&s, 600), h = 1 + (int)draw(&s, 200);
        int rw = 1 + (int)draw(&s, (uint64_t)w), rh = 1 + (int)draw(&s, (uint64_t)h);
        /* Every third window in the image's bottom-right corner. */
        int left = i % 3 == 0 ? w - rw : (int)draw(&s, (uint64_t)(w - rw + 1));
        int top = i % 3 == 0 ? h - rh : (int)draw(&s, (uint64_t)(h - rh + 1));
        int ow = 1 + (int)draw(&s, 300), oh = 1 + (int)draw(&s, 60);
        enum pb_interp interp = i % 8 == 6   ? PB_INTERP_AREA
                                : i % 8 == 7 ? PB_INTERP_NEAREST
                                             : PB_INTERP_BILINEAR;
        check_exact(interp, h, w, top, left, rh, rw, oh, ow, channel_counts[i % 3], s);
    }
}

/* random_resized_crop's shape: torchvision windows of a 500x375 RGB photo
 * to 224x224, and the edge cases of the 2-tap pass: exact 2x (both
 * coefficients one half), same size (coefficients one and zero), two
 * pixels wide, outputs of fewer than, exactly and just more than one
 * group of 8 pixels. */
static void test_resample_exact_crops(void **state)
{
    (void)state;
    struct pb_rng rng = pb_rng_for(3, 5);
    for (int i = 0; i < 40; i++) {
        struct pb_crop_box b;
        pb_random_resized_crop_box(&rng, 375, 500, 0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0, &b);
        check_exact(PB_INTERP_BILINEAR, 375, 500, b.top, b.left, b.height, b.width, 224, 224, 3,
                    (uint64_t)i);
    }
    static const int channel_counts[] = {1, 3, 4};
    static const int widths[][2] = {{448, 224}, {224, 224}, {2, 7},   {2, 2},   {9, 8},
                                    {600, 9},   {5, 16},    {17, 17}, {600, 1}, {1, 600}};
    for (size_t k = 0; k < PB_ARRAY_LEN(channel_counts); k++)
        for (size_t i = 0; i < PB_ARRAY_LEN(widths); i++)
            check_exact(PB_INTERP_BILINEAR, 20, widths[i][0], 0, 0, 20, widths[i][0], 10,
                        widths[i][1], channel_counts[k], i);
}

/* The tests above ran every set of loops this CPU has, so none passed
 * by never running. */
static void test_resample_loops_covered(void **state)
{
    (void)state;
    printf("resamplings by loops: portable %d, AVX2 %d, AVX-512 %d, AVX-512 narrow %d\n",
           loops_used[0], loops_used[1], loops_used[2], loops_used[3]);
    assert_true(loops_used[0] > 0);
    if (pb_resample_x86_avx2())
        assert_true(loops_used[1] > 0);
    if (pb_resample_x86_avx2() && pb_resample_x86_avx512())
        assert_true(loops_used[2] > 0 && loops_used[3] > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resample_exact_random),
        cmocka_unit_test(test_resample_exact_crops),
        cmocka_unit_test(test_resample_loops_covered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
