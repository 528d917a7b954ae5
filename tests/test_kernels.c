/* Tests of kernels/image.c against plain double-precision reference
 * implementations written here, on seeded random images of odd sizes.
 *
 * Tolerances: bilinear and area within 1 LSB of the reference (the kernel
 * works in fixed point, the reference in double; a value near .5 may round
 * the other way); nearest, crop and flip exact; color jitter within 1 LSB;
 * normalize float32 within 1e-6 relative (absolute below 1), float16
 * bit-exact against the compiler's double -> _Float16 conversion, uint8
 * exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/image.h"

static uint64_t rng_state;

static uint8_t *random_image(size_t bytes, uint64_t seed)
{
    uint8_t *p = malloc(bytes ? bytes : 1);
    assert_non_null(p);
    rng_state = seed;
    for (size_t i = 0; i < bytes; i++)
        p[i] = (uint8_t)(pb_mix64(rng_state++) >> 56);
    return p;
}

struct size2 {
    int h, w;
};

/* Input and output sizes: odd, tiny, extreme aspect, up and down. */
static const struct {
    struct size2 in, out;
} resize_cases[] = {
    {{1, 1}, {1, 1}},    {{1, 1}, {3, 7}},   {{3, 7}, {1, 1}},    {{3, 7}, {17, 33}},
    {{17, 33}, {3, 7}},  {{17, 33}, {8, 16}}, {{4097, 3}, {5, 2}}, {{4097, 3}, {4097, 3}},
    {{5, 2}, {4097, 3}}, {{33, 17}, {17, 33}}, {{64, 48}, {24, 20}}, {{7, 9}, {7, 9}},
};

/* ---- references ------------------------------------------------------ */

static double px(const uint8_t *img, int w, int c, int channels, int y, int x)
{
    return img[((size_t)y * (size_t)w + (size_t)x) * (size_t)channels + (size_t)c];
}

static uint8_t round_ref(double v)
{
    v = floor(v + 0.5);
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Half-pixel bilinear, edges repeated. */
static void ref_bilinear_axis(int o, int in, int out, int *i0, int *i1, double *f)
{
    double s = ((double)o + 0.5) * in / out - 0.5;
    if (s < 0)
        s = 0;
    *i0 = (int)floor(s);
    *f = s - *i0;
    if (*i0 >= in - 1) {
        *i0 = in - 1;
        *f = 0;
    }
    *i1 = *i0 + 1 < in ? *i0 + 1 : in - 1;
}

static double ref_bilinear(const uint8_t *img, int h, int w, int channels, int oh, int ow, int y,
                           int x, int c)
{
    int y0, y1, x0, x1;
    double fy, fx;
    ref_bilinear_axis(y, h, oh, &y0, &y1, &fy);
    ref_bilinear_axis(x, w, ow, &x0, &x1, &fx);
    double top = (1 - fx) * px(img, w, c, channels, y0, x0) + fx * px(img, w, c, channels, y0, x1);
    double bot = (1 - fx) * px(img, w, c, channels, y1, x0) + fx * px(img, w, c, channels, y1, x1);
    return (1 - fy) * top + fy * bot;
}

/* Overlap of source cell [j, j + 1) with the output cell o, over its width. */
static double ref_coverage(int j, int o, int in, int out)
{
    double lo = (double)o * in / out, hi = (double)(o + 1) * in / out;
    double a = fmax(lo, j), b = fmin(hi, j + 1);
    return b > a ? (b - a) / ((double)in / out) : 0;
}

/* The mean of the source over the output pixel's footprint. */
static double ref_area(const uint8_t *img, int h, int w, int channels, int oh, int ow, int y,
                       int x, int c)
{
    double sum = 0;
    int ylo = (int)floor((double)y * h / oh), yhi = (int)ceil((double)(y + 1) * h / oh);
    int xlo = (int)floor((double)x * w / ow), xhi = (int)ceil((double)(x + 1) * w / ow);
    for (int i = ylo; i < yhi && i < h; i++)
        for (int j = xlo; j < xhi && j < w; j++)
            sum += ref_coverage(i, y, h, oh) * ref_coverage(j, x, w, ow) *
                   px(img, w, c, channels, i, j);
    return sum;
}

static int ref_nearest_index(int o, int in, int out)
{
    int i = (int)floor(((double)o + 0.5) * in / out);
    return i < in - 1 ? i : in - 1;
}

/* ---- resampling -------------------------------------------------------- */

/* Resamples the (top, left, rh, rw) window of a random h x w image and
 * compares every value with the reference on the window alone. */
static void check_resample(enum pb_interp interp, int h, int w, int top, int left, int rh,
                           int rw, int oh, int ow, int channels)
{
    size_t bytes = (size_t)h * (size_t)w * (size_t)channels;
    uint8_t *img = random_image(bytes, (uint64_t)(h * 131 + w * 7 + channels));
    uint8_t *window = malloc((size_t)rh * (size_t)rw * (size_t)channels);
    uint8_t *out = malloc((size_t)oh * (size_t)ow * (size_t)channels);
    assert_non_null(window);
    assert_non_null(out);
    pb_crop_u8(img, h, w, channels, top, left, window, rh, rw);

    struct pb_resampler r;
    /* Sized smaller than needed on purpose: prepare must grow it. */
    assert_int_equal(pb_resampler_init(&r, interp, 1, 1, 1, 1, 1), PB_OK);
    assert_int_equal(pb_resampler_prepare(&r, rh, rw, oh, ow, channels), PB_OK);
    size_t row = (size_t)w * (size_t)channels;
    pb_resample_u8(&r, img + (size_t)top * row + (size_t)left * (size_t)channels, row, out);

    int tolerance = interp == PB_INTERP_NEAREST ? 0 : 1;
    for (int y = 0; y < oh; y++) {
        for (int x = 0; x < ow; x++) {
            for (int c = 0; c < channels; c++) {
                double want;
                if (interp == PB_INTERP_BILINEAR)
                    want = ref_bilinear(window, rh, rw, channels, oh, ow, y, x, c);
                else if (interp == PB_INTERP_AREA)
                    want = ref_area(window, rh, rw, channels, oh, ow, y, x, c);
                else
                    want = px(window, rw, c, channels, ref_nearest_index(y, rh, oh),
                              ref_nearest_index(x, rw, ow));
                int got = out[((size_t)y * (size_t)ow + (size_t)x) * (size_t)channels +
                              (size_t)c];
                int diff = abs(got - (int)round_ref(want));
                if (diff > tolerance)
                    fail_msg("interp %d %dx%d -> %dx%d c%d: (%d,%d,%d) got %d want %.4f",
                             (int)interp, rh, rw, oh, ow, channels, y, x, c, got, want);
            }
        }
    }
    pb_resampler_free(&r);
    free(img);
    free(window);
    free(out);
}

static void check_interp(enum pb_interp interp)
{
    static const int channel_counts[] = {1, 3};
    for (size_t i = 0; i < PB_ARRAY_LEN(resize_cases); i++) {
        for (size_t k = 0; k < PB_ARRAY_LEN(channel_counts); k++) {
            struct size2 in = resize_cases[i].in, out = resize_cases[i].out;
            check_resample(interp, in.h, in.w, 0, 0, in.h, in.w, out.h, out.w,
                           channel_counts[k]);
        }
    }
}

static void test_bilinear(void **state)
{
    (void)state;
    check_interp(PB_INTERP_BILINEAR);
}

static void test_area(void **state)
{
    (void)state;
    check_interp(PB_INTERP_AREA);
}

static void test_nearest(void **state)
{
    (void)state;
    check_interp(PB_INTERP_NEAREST);
}

/* Fused crop + resize reads only the window, with the full image's stride. */
static void test_resample_window(void **state)
{
    (void)state;
    for (int interp = 0; interp < 3; interp++) {
        check_resample((enum pb_interp)interp, 40, 50, 3, 7, 21, 33, 16, 16, 3);
        check_resample((enum pb_interp)interp, 40, 50, 39, 49, 1, 1, 2, 3, 1);
        check_resample((enum pb_interp)interp, 40, 50, 0, 0, 40, 50, 7, 5, 3);
    }
}

/* The fixed-point kernel against the double-precision reference on random
 * sizes and windows, up- and down-scaling on each axis independently, 1, 3
 * and 4 channels: every value within 1 LSB. */
static void test_resample_random_sizes(void **state)
{
    (void)state;
    static const int channel_counts[] = {1, 3, 4};
    uint64_t r = 0x5eed;
    for (int i = 0; i < 120; i++) {
        int h = 1 + (int)(pb_mix64(r++) % 300), w = 1 + (int)(pb_mix64(r++) % 300);
        int rh = 1 + (int)(pb_mix64(r++) % (uint64_t)h), rw = 1 + (int)(pb_mix64(r++) % (uint64_t)w);
        int top = (int)(pb_mix64(r++) % (uint64_t)(h - rh + 1));
        int left = (int)(pb_mix64(r++) % (uint64_t)(w - rw + 1));
        int oh = 1 + (int)(pb_mix64(r++) % 260), ow = 1 + (int)(pb_mix64(r++) % 260);
        int channels = channel_counts[i % 3];
        enum pb_interp interp = i % 4 == 3 ? PB_INTERP_AREA : PB_INTERP_BILINEAR;
        check_resample(interp, h, w, top, left, rh, rw, oh, ow, channels);
    }
    /* The benchmark's shape: random_resized_crop windows of a 500x375
     * photo to 224x224, bilinear, RGB. */
    for (int i = 0; i < 8; i++) {
        int rh = 60 + 40 * i, rw = 375 - 30 * i;
        check_resample(PB_INTERP_BILINEAR, 375, 500, 375 - rh, 500 - rw, rh, rw, 224, 224, 3);
    }
}

/* Preparing the same sizes again keeps the tables; new sizes replace them. */
static void test_resampler_reuse(void **state)
{
    (void)state;
    struct pb_resampler r;
    assert_int_equal(pb_resampler_init(&r, PB_INTERP_AREA, 64, 64, 8, 8, 3), PB_OK);
    assert_int_equal(pb_resampler_prepare(&r, 64, 64, 8, 8, 3), PB_OK);
    assert_int_equal(r.taps_x, 9);
    int32_t *tables = r.start_x;
    assert_int_equal(pb_resampler_prepare(&r, 64, 64, 8, 8, 3), PB_OK);
    assert_ptr_equal(r.start_x, tables);
    assert_int_equal(pb_resampler_prepare(&r, 16, 32, 8, 8, 3), PB_OK);
    assert_int_equal(r.taps_x, 5);
    assert_int_equal(r.taps_y, 3);
    pb_resampler_free(&r);
}

/* ---- crop and flip ----------------------------------------------------- */

static void test_crop(void **state)
{
    (void)state;
    static const struct {
        int h, w, top, left, oh, ow;
    } cases[] = {
        {3, 7, 0, 0, 3, 7}, {3, 7, 1, 2, 2, 3},   {1, 1, 0, 0, 1, 1},    {17, 33, -2, -3, 21, 40},
        {3, 7, 2, 5, 4, 4}, {3, 7, -5, -9, 2, 2}, {4097, 3, 100, 1, 9, 2}, {5, 5, 5, 5, 2, 2},
    };
    for (int channels = 1; channels <= 3; channels += 2) {
        for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
            int h = cases[i].h, w = cases[i].w, oh = cases[i].oh, ow = cases[i].ow;
            uint8_t *img = random_image((size_t)h * (size_t)w * (size_t)channels, i);
            uint8_t *out = malloc((size_t)oh * (size_t)ow * (size_t)channels);
            assert_non_null(out);
            memset(out, 0xab, (size_t)oh * (size_t)ow * (size_t)channels);
            pb_crop_u8(img, h, w, channels, cases[i].top, cases[i].left, out, oh, ow);
            for (int y = 0; y < oh; y++)
                for (int x = 0; x < ow; x++)
                    for (int c = 0; c < channels; c++) {
                        int sy = cases[i].top + y, sx = cases[i].left + x;
                        int want = sy >= 0 && sy < h && sx >= 0 && sx < w
                                       ? (int)px(img, w, c, channels, sy, sx)
                                       : 0;
                        assert_int_equal(out[((size_t)y * (size_t)ow + (size_t)x) *
                                                 (size_t)channels + (size_t)c],
                                         want);
                    }
            free(img);
            free(out);
        }
    }
}

static void test_flip(void **state)
{
    (void)state;
    static const struct size2 sizes[] = {{1, 1}, {3, 7}, {4097, 3}, {17, 33}, {2, 64}};
    for (int channels = 1; channels <= 4; channels++) {
        for (size_t i = 0; i < PB_ARRAY_LEN(sizes); i++) {
            int h = sizes[i].h, w = sizes[i].w;
            size_t bytes = (size_t)h * (size_t)w * (size_t)channels;
            uint8_t *img = random_image(bytes, i + 99);
            uint8_t *out = malloc(bytes);
            uint8_t *back = malloc(bytes);
            assert_non_null(out);
            assert_non_null(back);
            pb_flip_h_u8(img, h, w, channels, out);
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    for (int c = 0; c < channels; c++)
                        assert_int_equal(out[((size_t)y * (size_t)w + (size_t)x) *
                                                 (size_t)channels + (size_t)c],
                                         px(img, w, c, channels, y, w - 1 - x));
            pb_flip_h_u8(out, h, w, channels, back);
            assert_memory_equal(back, img, bytes);
            free(img);
            free(out);
            free(back);
        }
    }
}

/* ---- color jitter ------------------------------------------------------ */

static double clamp_ref(double v)
{
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

static void ref_jitter(const uint8_t *src, size_t pixels, int channels, double b, double c,
                       double s, uint8_t *dst)
{
    double mean = 0;
    for (size_t p = 0; p < pixels; p++) {
        if (channels == 1) {
            mean += clamp_ref(src[p] * b);
        } else {
            mean += 0.299 * clamp_ref(src[3 * p] * b) + 0.587 * clamp_ref(src[3 * p + 1] * b) +
                    0.114 * clamp_ref(src[3 * p + 2] * b);
        }
    }
    mean /= (double)pixels;
    for (size_t p = 0; p < pixels; p++) {
        double v[3];
        for (int k = 0; k < channels; k++) {
            v[k] = clamp_ref(src[p * (size_t)channels + (size_t)k] * b);
            v[k] = clamp_ref(c * v[k] + (1 - c) * mean);
        }
        if (channels == 3) {
            double gray = 0.299 * v[0] + 0.587 * v[1] + 0.114 * v[2];
            for (int k = 0; k < 3; k++)
                v[k] = clamp_ref(s * v[k] + (1 - s) * gray);
        }
        for (int k = 0; k < channels; k++)
            dst[p * (size_t)channels + (size_t)k] = round_ref(v[k]);
    }
}

static void test_color_jitter(void **state)
{
    (void)state;
    static const struct size2 sizes[] = {{1, 1}, {3, 7}, {4097, 3}, {17, 33}};
    static const double factors[][3] = {
        {1, 1, 1}, {0.6, 1.4, 0.6}, {1.4, 0.6, 1.4}, {0, 1, 1}, {2, 0, 2}, {1.2, 1.8, 0},
    };
    for (int channels = 1; channels <= 3; channels += 2) {
        for (size_t i = 0; i < PB_ARRAY_LEN(sizes); i++) {
            size_t pixels = (size_t)sizes[i].h * (size_t)sizes[i].w;
            size_t bytes = pixels * (size_t)channels;
            uint8_t *img = random_image(bytes, i + 7);
            uint8_t *out = malloc(bytes), *want = malloc(bytes);
            assert_non_null(out);
            assert_non_null(want);
            for (size_t f = 0; f < PB_ARRAY_LEN(factors); f++) {
                struct pb_jitter j = {(float)factors[f][0], (float)factors[f][1],
                                      (float)factors[f][2]};
                pb_color_jitter_u8(img, pixels, channels, &j, out);
                ref_jitter(img, pixels, channels, j.brightness, j.contrast, j.saturation, want);
                for (size_t k = 0; k < bytes; k++)
                    if (abs((int)out[k] - (int)want[k]) > 1)
                        fail_msg("jitter %zu on %dx%dx%d: byte %zu got %d want %d", f,
                                 sizes[i].h, sizes[i].w, channels, k, out[k], want[k]);
                if (f == 0)
                    assert_memory_equal(out, img, bytes); /* factors 1: unchanged */
            }
            /* In place gives the same bytes. */
            struct pb_jitter j = {1.3f, 0.7f, 1.5f};
            pb_color_jitter_u8(img, pixels, channels, &j, out);
            pb_color_jitter_u8(img, pixels, channels, &j, img);
            assert_memory_equal(out, img, bytes);
            free(img);
            free(out);
            free(want);
        }
    }
}

/* ---- float16 and normalize --------------------------------------------- */

#ifdef __FLT16_MANT_DIG__
/* The compiler's own conversion (gcc on x86-64, most ARM compilers). */
static uint16_t ref_f16(double v)
{
    _Float16 h = (_Float16)v;
    uint16_t bits;
    memcpy(&bits, &h, sizeof bits);
    return bits;
}

static double f16_value(uint16_t bits)
{
    _Float16 h;
    memcpy(&h, &bits, sizeof h);
    return (double)h;
}
#else
/* Compilers without _Float16 on this target (clang 14 on x86-64): a half
 * decoded from its fields, and the nearest half found by searching the
 * ordered finite halves (ties to the even one, 65520 and up to infinity),
 * which shares nothing with pb_f16_from_double's arithmetic. */
static double f16_value(uint16_t bits)
{
    int exponent = (bits >> 10) & 31, mantissa = bits & 1023;
    double sign = (bits & 0x8000) ? -1.0 : 1.0;
    if (exponent == 31)
        return mantissa ? NAN : sign * INFINITY;
    if (exponent == 0)
        return sign * ldexp(mantissa, -24);
    return sign * ldexp(1024 + mantissa, exponent - 25);
}

static uint16_t ref_f16(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isnan(v))
        return (uint16_t)(sign | 0x7e00);
    if (a >= 65520.0)
        return (uint16_t)(sign | 0x7c00);
    uint32_t lo = 0, hi = 0x7bff; /* the largest finite half <= a */
    while (lo < hi) {
        uint32_t mid = (lo + hi + 1) / 2;
        if (f16_value((uint16_t)mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo == 0x7bff)
        return (uint16_t)(sign | lo);
    double below = a - f16_value((uint16_t)lo), above = f16_value((uint16_t)(lo + 1)) - a;
    uint32_t bits = below < above ? lo : above < below ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
    return (uint16_t)(sign | bits);
}
#endif

static void test_f16_conversion(void **state)
{
    (void)state;
    static const double specials[] = {
        0.0, -0.0, 1.0, -1.0, 65504.0, 65519.99, 65520.0, -65520.0, 1e6, -1e300, 0x1p-24,
        0x1p-25, 0x1.0000000000001p-25, 0x1p-14, 0x1.ffcp-15, 3.0 * 0x1p-26, 1.0 / 3, 0.1,
        INFINITY, -INFINITY,
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(specials); i++)
        if (pb_f16_from_double(specials[i]) != ref_f16(specials[i]))
            fail_msg("%a: got %04x want %04x", specials[i], pb_f16_from_double(specials[i]),
                     ref_f16(specials[i]));
    assert_int_equal(pb_f16_from_double(NAN) & 0x7e00, 0x7e00);
    /* Every finite half, and the midpoints between neighbours (ties to
     * even) with the doubles just either side of them. */
    for (uint32_t bits = 0; bits < 0x7c00; bits++) {
        double v = f16_value((uint16_t)bits);
        double next = f16_value((uint16_t)(bits + 1));
        double mid = bits + 1 < 0x7c00 ? (v + next) / 2 : 65520.0;
        const double probes[] = {v, -v, mid, -mid, nextafter(mid, 0), nextafter(mid, INFINITY)};
        for (size_t k = 0; k < PB_ARRAY_LEN(probes); k++)
            if (pb_f16_from_double(probes[k]) != ref_f16(probes[k]))
                fail_msg("%a: got %04x want %04x", probes[k], pb_f16_from_double(probes[k]),
                         ref_f16(probes[k]));
    }
    rng_state = 5;
    for (int i = 0; i < 100000; i++) {
        uint64_t r = pb_mix64(rng_state++);
        double v = ldexp((double)(r >> 11) / 9007199254740992.0, (int)(r % 64) - 40);
        if (r & 1)
            v = -v;
        assert_int_equal(pb_f16_from_double(v), ref_f16(v));
    }
}

static double ref_normalize(int x, double mean, double std)
{
    return ((double)x / 255.0 - mean) / std;
}

/* Where element (t, y, x, c) of a T x H x W x C tensor goes in a layout. */
static size_t layout_index(enum pb_layout layout, int T, int H, int W, int C, int t, int y, int x,
                           int c)
{
    size_t hw = (size_t)H * (size_t)W, p = (size_t)y * (size_t)W + (size_t)x;
    switch (layout) {
    case PB_LAYOUT_THWC: return ((size_t)t * hw + p) * (size_t)C + (size_t)c;
    case PB_LAYOUT_TCHW: return ((size_t)t * (size_t)C + (size_t)c) * hw + p;
    case PB_LAYOUT_CTHW: return ((size_t)c * (size_t)T + (size_t)t) * hw + p;
    }
    return 0;
}

static void test_normalize(void **state)
{
    (void)state;
    static const double mean[] = {0.485, 0.456, 0.406}, std[] = {0.229, 0.224, 0.225};
    static const struct {
        int T, H, W, cin, cout;
    } cases[] = {
        {1, 1, 1, 3, 3},  {1, 3, 7, 3, 3}, {1, 4097, 3, 3, 3}, {1, 17, 33, 1, 1},
        {1, 17, 33, 1, 3}, {3, 3, 7, 3, 3}, {3, 5, 4, 1, 3},    {2, 3, 3, 1, 1},
    };
    struct pb_normalize_lut *lut = malloc(sizeof(*lut));
    assert_non_null(lut);
    double mean4[4] = {mean[0], mean[1], mean[2], 0.5}, std4[4] = {std[0], std[1], std[2], 0.5};
    pb_normalize_lut_init(lut, 4, mean4, std4, 255.0);
    const enum pb_layout layouts[] = {PB_LAYOUT_THWC, PB_LAYOUT_TCHW, PB_LAYOUT_CTHW};
    const enum pb_dtype dtypes[] = {PB_DTYPE_F32, PB_DTYPE_F16, PB_DTYPE_U8};
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        int T = cases[i].T, H = cases[i].H, W = cases[i].W, cin = cases[i].cin,
            cout = cases[i].cout;
        size_t in_bytes = (size_t)T * (size_t)H * (size_t)W * (size_t)cin;
        size_t n_out = (size_t)T * (size_t)H * (size_t)W * (size_t)cout;
        uint8_t *img = random_image(in_bytes, i + 1000);
        /* 64-byte aligned as pbench's batches are (the vector path streams
         * aligned planes); test_normalize_mirrored's buffers are not. */
        void *out = aligned_alloc(64, (n_out * 4 + 63) / 64 * 64);
        assert_non_null(out);
        for (size_t l = 0; l < PB_ARRAY_LEN(layouts); l++) {
            for (size_t d = 0; d < PB_ARRAY_LEN(dtypes); d++) {
                pb_normalize_u8(img, T, H, W, cin, cout, lut, dtypes[d], layouts[l], out);
                for (int t = 0; t < T; t++)
                    for (int y = 0; y < H; y++)
                        for (int x = 0; x < W; x++)
                            for (int c = 0; c < cout; c++) {
                                int v = img[(((size_t)t * (size_t)H + (size_t)y) * (size_t)W +
                                             (size_t)x) * (size_t)cin +
                                            (size_t)(cin == 1 ? 0 : c)];
                                double want = ref_normalize(v, mean4[c], std4[c]);
                                size_t k = layout_index(layouts[l], T, H, W, cout, t, y, x, c);
                                if (dtypes[d] == PB_DTYPE_F32) {
                                    double got = ((const float *)out)[k];
                                    if (fabs(got - want) > 1e-6 * fmax(1.0, fabs(want)))
                                        fail_msg("f32 case %zu: got %.9g want %.9g", i, got,
                                                 want);
                                    /* vector and scalar paths: the table's value exactly */
                                    if (got != (double)lut->f32[c][v])
                                        fail_msg("f32 case %zu: got %.9g, table %.9g", i, got,
                                                 (double)lut->f32[c][v]);
                                } else if (dtypes[d] == PB_DTYPE_F16) {
                                    assert_int_equal(((const uint16_t *)out)[k], ref_f16(want));
                                } else {
                                    assert_int_equal(((const uint8_t *)out)[k], v);
                                }
                            }
            }
        }
        free(img);
        free(out);
    }
    /* pixel_scale 1 takes mean and std in pixel units. */
    const double m1[4] = {123.675, 116.28, 103.53, 0}, s1[4] = {58.395, 57.12, 57.375, 1};
    pb_normalize_lut_init(lut, 4, m1, s1, 1.0);
    assert_true(fabs(lut->f32[0][200] - (200 - 123.675) / 58.395) < 1e-6);
    free(lut);
}

/* Flip fused into normalize: the same values, bit for bit, as mirroring
 * first and normalizing after, in every layout, dtype and channel case. */
static void test_normalize_mirrored(void **state)
{
    (void)state;
    static const struct {
        int T, H, W, cin, cout;
    } cases[] = {
        {1, 1, 1, 3, 3}, {1, 3, 7, 3, 3}, {1, 224, 224, 3, 3}, {1, 17, 33, 1, 1},
        {1, 17, 33, 1, 3}, {3, 3, 7, 3, 3}, {3, 5, 4, 1, 3}, {2, 9, 5, 4, 4},
    };
    struct pb_normalize_lut *lut = malloc(sizeof(*lut));
    assert_non_null(lut);
    const double mean[4] = {0.485, 0.456, 0.406, 0.5}, std[4] = {0.229, 0.224, 0.225, 0.5};
    pb_normalize_lut_init(lut, 4, mean, std, 255.0);
    const enum pb_layout layouts[] = {PB_LAYOUT_THWC, PB_LAYOUT_TCHW, PB_LAYOUT_CTHW};
    const enum pb_dtype dtypes[] = {PB_DTYPE_F32, PB_DTYPE_F16, PB_DTYPE_U8};
    const size_t sizes[] = {4, 2, 1};
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        int T = cases[i].T, H = cases[i].H, W = cases[i].W, cin = cases[i].cin,
            cout = cases[i].cout;
        size_t frame = (size_t)H * (size_t)W * (size_t)cin, in_bytes = (size_t)T * frame;
        size_t n_out = (size_t)T * (size_t)H * (size_t)W * (size_t)cout;
        uint8_t *img = random_image(in_bytes, i + 2000);
        uint8_t *flipped = malloc(in_bytes);
        void *want = malloc(n_out * 4), *got = malloc(n_out * 4);
        assert_non_null(flipped);
        assert_non_null(want);
        assert_non_null(got);
        for (int t = 0; t < T; t++)
            pb_flip_h_u8(img + (size_t)t * frame, H, W, cin, flipped + (size_t)t * frame);
        for (size_t l = 0; l < PB_ARRAY_LEN(layouts); l++) {
            for (size_t d = 0; d < PB_ARRAY_LEN(dtypes); d++) {
                pb_normalize_u8(flipped, T, H, W, cin, cout, lut, dtypes[d], layouts[l], want);
                memset(got, 0xA5, n_out * 4);
                pb_normalize_mirrored_u8(img, T, H, W, cin, cout, lut, dtypes[d], layouts[l],
                                         got);
                if (memcmp(got, want, n_out * sizes[d]) != 0)
                    fail_msg("case %zu layout %d dtype %d: mirrored differs", i, (int)layouts[l],
                             (int)dtypes[d]);
            }
        }
        free(img);
        free(flipped);
        free(want);
        free(got);
    }
    free(lut);
}

/* The vector path against the plain C loops, bit for bit: 3 channels to
 * float32, every layout, mirrored or not, aligned and unaligned outputs,
 * sizes with and without a tail of fewer than 8 pixels. */
static void test_normalize_vector_path(void **state)
{
    (void)state;
    static const struct {
        int T, H, W;
    } cases[] = {{1, 224, 224}, {1, 7, 9}, {2, 13, 17}, {3, 8, 8}, {1, 1, 23}};
    struct pb_normalize_lut *lut = malloc(sizeof(*lut));
    assert_non_null(lut);
    const double mean[4] = {0.485, 0.456, 0.406, 0}, std[4] = {0.229, 0.224, 0.225, 1};
    pb_normalize_lut_init(lut, 4, mean, std, 255.0);
    const enum pb_layout layouts[] = {PB_LAYOUT_THWC, PB_LAYOUT_TCHW, PB_LAYOUT_CTHW};
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        size_t n = (size_t)cases[i].T * (size_t)cases[i].H * (size_t)cases[i].W * 3;
        uint8_t *img = random_image(n, i + 3000);
        float *want = aligned_alloc(64, (n * 4 + 127) / 64 * 64);
        float *got = aligned_alloc(64, (n * 4 + 127) / 64 * 64);
        assert_non_null(want);
        assert_non_null(got);
        for (size_t l = 0; l < PB_ARRAY_LEN(layouts); l++)
            for (int mirrored = 0; mirrored < 2; mirrored++)
                for (int offset = 0; offset < 2; offset++) { /* 64-byte aligned, then not */
                    void (*fn)(const uint8_t *, int, int, int, int, int,
                               const struct pb_normalize_lut *, enum pb_dtype, enum pb_layout,
                               void *) = mirrored ? pb_normalize_mirrored_u8 : pb_normalize_u8;
                    lut->portable = true;
                    fn(img, cases[i].T, cases[i].H, cases[i].W, 3, 3, lut, PB_DTYPE_F32, layouts[l],
                       want + offset);
                    lut->portable = false;
                    memset(got, 0xA5, n * 4 + 4);
                    fn(img, cases[i].T, cases[i].H, cases[i].W, 3, 3, lut, PB_DTYPE_F32, layouts[l],
                       got + offset);
                    if (memcmp(got + offset, want + offset, n * 4) != 0)
                        fail_msg("case %zu layout %d mirrored %d offset %d: vector path differs", i,
                                 (int)layouts[l], mirrored, offset);
                }
        free(img);
        free(want);
        free(got);
    }
    free(lut);
}

/* ---- random_resized_crop parameters ------------------------------------ */

static void test_random_resized_crop_box(void **state)
{
    (void)state;
    static const struct size2 images[] = {{375, 500}, {500, 375}, {224, 224}, {1080, 1920}};
    const double slo = 0.08, shi = 1.0, rlo = 0.75, rhi = 4.0 / 3.0;
    int fitted = 0, total = 0;
    for (size_t i = 0; i < PB_ARRAY_LEN(images); i++) {
        int H = images[i].h, W = images[i].w;
        for (uint64_t seed = 0; seed < 2000; seed++) {
            struct pb_rng rng = pb_rng_for(seed, 1), again = pb_rng_for(seed, 1);
            struct pb_crop_box b, b2;
            bool drawn = pb_random_resized_crop_box(&rng, H, W, slo, shi, rlo, rhi, &b);
            pb_random_resized_crop_box(&again, H, W, slo, shi, rlo, rhi, &b2);
            assert_memory_equal(&b, &b2, sizeof b); /* same seed, same crop */
            assert_true(b.top >= 0 && b.left >= 0 && b.height >= 1 && b.width >= 1);
            assert_true(b.top + b.height <= H && b.left + b.width <= W);
            total++;
            if (!drawn)
                continue;
            fitted++;
            /* w and h are rounded from exact values: allow for that. */
            double e = 0.5 / fmin(b.width, b.height);
            double area = (double)b.width * b.height / ((double)H * W);
            double aspect = (double)b.width / b.height;
            assert_true(area >= slo * (1 - e) * (1 - e) && area <= shi * (1 + e) * (1 + e));
            assert_true(aspect >= rlo * (1 - e) / (1 + e) && aspect <= rhi * (1 + e) / (1 - e));
        }
    }
    assert_true(fitted > total * 9 / 10);

    /* Fallbacks: nothing fits in a 10-pixel-high strip at 90% of its area,
     * so the centre crop clamps the ratio to the range. */
    struct pb_rng rng = pb_rng_for(42, 1);
    struct pb_crop_box b;
    assert_false(pb_random_resized_crop_box(&rng, 10, 1000, 0.9, 1.0, rlo, rhi, &b));
    assert_int_equal(b.height, 10);
    assert_int_equal(b.width, 13); /* round(10 * 4/3) */
    assert_int_equal(b.top, 0);
    assert_int_equal(b.left, (1000 - 13) / 2);
    assert_false(pb_random_resized_crop_box(&rng, 1000, 10, 0.9, 1.0, rlo, rhi, &b));
    assert_int_equal(b.width, 10);
    assert_int_equal(b.height, 13); /* round(10 / 0.75) */
    assert_int_equal(b.top, (1000 - 13) / 2);
    assert_int_equal(b.left, 0);
    /* A ratio range holding the image's own ratio falls back to the whole
     * image: the full area fits a square only at a ratio very near 1. */
    int whole = 0;
    for (uint64_t seed = 0; seed < 200 && !whole; seed++) {
        struct pb_rng r = pb_rng_for(seed, 2);
        if (!pb_random_resized_crop_box(&r, 100, 100, 1.0, 1.0, 0.5, 2.0, &b)) {
            assert_int_equal(b.height, 100);
            assert_int_equal(b.width, 100);
            assert_int_equal(b.top, 0);
            assert_int_equal(b.left, 0);
            whole = 1;
        }
    }
    assert_true(whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bilinear),
        cmocka_unit_test(test_area),
        cmocka_unit_test(test_nearest),
        cmocka_unit_test(test_resample_window),
        cmocka_unit_test(test_resampler_reuse),
        cmocka_unit_test(test_resample_random_sizes),
        cmocka_unit_test(test_normalize_mirrored),
        cmocka_unit_test(test_normalize_vector_path),
        cmocka_unit_test(test_crop),
        cmocka_unit_test(test_flip),
        cmocka_unit_test(test_color_jitter),
        cmocka_unit_test(test_f16_conversion),
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_random_resized_crop_box),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
