/* CPU image kernels (kernels/image.h): resampling with fused crop, crop, flip, color
 * jitter and normalize on HWC uint8 images. */
#include "kernels/image.h"
#include "kernels/normalize_simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Clamps written as x86's minss/maxss read (a < b ? a : b), so gcc emits
 * those instead of branches, which random pixels mispredict. */
static inline float min_f(float a, float b)
{
    return a < b ? a : b;
}

static inline float max_f(float a, float b)
{
    return a > b ? a : b;
}

/* dst[i] = src[i] rounded to nearest and clamped to 0..255. */
static void round_row(const float *restrict src, size_t n, uint8_t *restrict dst)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint8_t)(int32_t)min_f(max_f(src[i] + 0.5f, 0.0f), 255.0f);
}

/* ---- crop, flip, color ---------------------------------------------- */

void pb_crop_u8(const uint8_t *src, int src_h, int src_w, int channels, int top, int left,
                uint8_t *dst, int out_h, int out_w)
{
    size_t pixel = (size_t)channels;
    size_t out_row = (size_t)out_w * pixel;
    /* Columns [x0, x1) of the window lie inside the image. */
    int x0 = left < 0 ? -left : 0;
    int x1 = src_w - left < out_w ? src_w - left : out_w;
    if (x1 < x0)
        x1 = x0;
    for (int y = 0; y < out_h; y++) {
        uint8_t *d = dst + (size_t)y * out_row;
        int sy = top + y;
        if (sy < 0 || sy >= src_h || x1 == x0) {
            memset(d, 0, out_row);
            continue;
        }
        memset(d, 0, (size_t)x0 * pixel);
        memcpy(d + (size_t)x0 * pixel,
               src + ((size_t)sy * (size_t)src_w + (size_t)(left + x0)) * pixel,
               (size_t)(x1 - x0) * pixel);
        memset(d + (size_t)x1 * pixel, 0, (size_t)(out_w - x1) * pixel);
    }
}

void pb_flip_h_u8(const uint8_t *src, int h, int w, int channels, uint8_t *dst)
{
    size_t row = (size_t)w * (size_t)channels;
    for (int y = 0; y < h; y++) {
        const uint8_t *restrict s = src + (size_t)y * row;
        uint8_t *restrict d = dst + (size_t)y * row;
        if (channels == 1) {
            for (int x = 0; x < w; x++)
                d[w - 1 - x] = s[x];
        } else if (channels == 3) {
            for (int x = 0; x < w; x++) {
                d[3 * (w - 1 - x) + 0] = s[3 * x + 0];
                d[3 * (w - 1 - x) + 1] = s[3 * x + 1];
                d[3 * (w - 1 - x) + 2] = s[3 * x + 2];
            }
        } else {
            for (int x = 0; x < w; x++)
                memcpy(d + (size_t)(w - 1 - x) * (size_t)channels, s + (size_t)x * (size_t)channels,
                       (size_t)channels);
        }
    }
}

#define GRAY_R 0.299f
#define GRAY_G 0.587f
#define GRAY_B 0.114f
#define JITTER_CHUNK 512 /* pixels per chunk: float scratch on the stack, sums */

static inline float clamp255(float v)
{
    return min_f(max_f(v, 0.0f), 255.0f);
}

/* min(v, 255); not fminf, which gcc calls out of line without
 * -ffast-math (NaN rules). */
static inline float min255(float v)
{
    return min_f(v, 255.0f);
}

/* Brightness then contrast on n interleaved values, every channel alike:
 * a flat loop that vectorizes (the clamps become minps/maxps). Kept out of
 * line: inlined with contrast 1 (the mean pass), gcc folds the clamps into
 * branches and the loop no longer vectorizes. */
__attribute__((noinline)) static void brightness_contrast(const uint8_t *restrict src, size_t n, float b, float c,
                                float mean_part, float *restrict out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = clamp255(c * min255((float)src[i] * b) + mean_part);
}

/* Mean gray of the image after brightness b. */
static double mean_gray(const uint8_t *src, size_t pixels, int channels, float b)
{
    float t[JITTER_CHUNK * 3];
    double total = 0;
    for (size_t p0 = 0; p0 < pixels; p0 += JITTER_CHUNK) {
        size_t n = pixels - p0 < JITTER_CHUNK ? pixels - p0 : JITTER_CHUNK;
        brightness_contrast(src + p0 * (size_t)channels, n * (size_t)channels, b, 1.0f, 0.0f, t);
        float sum = 0;
        if (channels == 3) {
            for (size_t p = 0; p < n; p++)
                sum += GRAY_R * t[3 * p] + GRAY_G * t[3 * p + 1] + GRAY_B * t[3 * p + 2];
        } else {
            for (size_t p = 0; p < n; p++)
                sum += t[p];
        }
        total += sum;
    }
    return pixels ? total / (double)pixels : 0;
}

void pb_color_jitter_u8(const uint8_t *src, size_t pixels, int channels,
                        const struct pb_jitter *jitter, uint8_t *dst)
{
    if (channels != 1 && channels != 3) {
        if (dst != src)
            memmove(dst, src, pixels * (size_t)channels);
        return;
    }
    const float b = jitter->brightness, c = jitter->contrast, s = jitter->saturation;
    const float mean_part =
        c == 1.0f ? 0.0f : (1.0f - c) * (float)mean_gray(src, pixels, channels, b);
    const float s_rest = 1.0f - s;
    float t[JITTER_CHUNK * 3];
    /* Chunks keep the float values in L1; src may be dst, each chunk is
     * read before it is written. */
    for (size_t p0 = 0; p0 < pixels; p0 += JITTER_CHUNK) {
        size_t n = pixels - p0 < JITTER_CHUNK ? pixels - p0 : JITTER_CHUNK;
        size_t values = n * (size_t)channels, first = p0 * (size_t)channels;
        brightness_contrast(src + first, values, b, c, mean_part, t);
        if (channels == 3) {
            for (size_t p = 0; p < n; p++) {
                float gray = s_rest * (GRAY_R * t[3 * p] + GRAY_G * t[3 * p + 1] +
                                       GRAY_B * t[3 * p + 2]);
                t[3 * p] = s * t[3 * p] + gray;
                t[3 * p + 1] = s * t[3 * p + 1] + gray;
                t[3 * p + 2] = s * t[3 * p + 2] + gray;
            }
        }
        round_row(t, values, dst + first);
    }
}

/* ---- normalize ------------------------------------------------------ */

/* One frame, for element type T and per-channel table TABLE (an expression
 * of c and the input byte v). */
#define NORMALIZE_FRAME(T, TABLE)                                                               \
    do {                                                                                        \
        T *out = dst;                                                                           \
        if (layout == PB_LAYOUT_THWC) {                                                         \
            T *restrict d = out + (size_t)t * hw * (size_t)cout;                                \
            if (cin == 3 && cout == 3) {                                                        \
                for (size_t p = 0; p < hw; p++) {                                               \
                    d[3 * p] = TABLE(0, s[3 * p]);                                              \
                    d[3 * p + 1] = TABLE(1, s[3 * p + 1]);                                      \
                    d[3 * p + 2] = TABLE(2, s[3 * p + 2]);                                      \
                }                                                                               \
            } else {                                                                            \
                for (size_t p = 0; p < hw; p++)                                                 \
                    for (int c = 0; c < cout; c++)                                              \
                        d[p * (size_t)cout + (size_t)c] =                                       \
                            TABLE(c, s[p * (size_t)cin + (size_t)(cin == 1 ? 0 : c)]);          \
            }                                                                                   \
        } else {                                                                                \
            T *plane[PB_NORMALIZE_MAX_CHANNELS];                                                \
            for (int c = 0; c < cout; c++)                                                      \
                plane[c] = out + (layout == PB_LAYOUT_TCHW                                      \
                                      ? ((size_t)t * (size_t)cout + (size_t)c) * hw             \
                                      : ((size_t)c * (size_t)frames + (size_t)t) * hw);         \
            if (cin == 3 && cout == 3) {                                                        \
                T *restrict d0 = plane[0], *restrict d1 = plane[1], *restrict d2 = plane[2];    \
                for (size_t p = 0; p < hw; p++) {                                               \
                    d0[p] = TABLE(0, s[3 * p]);                                                 \
                    d1[p] = TABLE(1, s[3 * p + 1]);                                             \
                    d2[p] = TABLE(2, s[3 * p + 2]);                                             \
                }                                                                               \
            } else {                                                                            \
                for (int c = 0; c < cout; c++) {                                                \
                    T *restrict d = plane[c];                                                   \
                    int from = cin == 1 ? 0 : c;                                                \
                    for (size_t p = 0; p < hw; p++)                                             \
                        d[p] = TABLE(c, s[p * (size_t)cin + (size_t)from]);                     \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    } while (0)

/* The same with each row mirrored left to right (output pixel x of a row
 * is input pixel width - 1 - x): a flip fused into the write. */
#define NORMALIZE_FRAME_MIRRORED(T, TABLE)                                                      \
    do {                                                                                        \
        T *out = dst;                                                                           \
        const size_t w = (size_t)width;                                                         \
        for (size_t y = 0; y < (size_t)height; y++) {                                           \
            const uint8_t *restrict r = s + y * w * (size_t)cin;                                \
            if (layout == PB_LAYOUT_THWC) {                                                     \
                T *restrict d = out + ((size_t)t * hw + y * w) * (size_t)cout;                  \
                if (cin == 3 && cout == 3) {                                                    \
                    for (size_t x = 0; x < w; x++) {                                            \
                        const uint8_t *q = r + 3 * (w - 1 - x);                                 \
                        d[3 * x] = TABLE(0, q[0]);                                              \
                        d[3 * x + 1] = TABLE(1, q[1]);                                          \
                        d[3 * x + 2] = TABLE(2, q[2]);                                          \
                    }                                                                           \
                } else {                                                                        \
                    for (size_t x = 0; x < w; x++)                                              \
                        for (int c = 0; c < cout; c++)                                          \
                            d[x * (size_t)cout + (size_t)c] = TABLE(                            \
                                c, r[(w - 1 - x) * (size_t)cin + (size_t)(cin == 1 ? 0 : c)]);  \
                }                                                                               \
                continue;                                                                       \
            }                                                                                   \
            T *plane[PB_NORMALIZE_MAX_CHANNELS];                                                \
            for (int c = 0; c < cout; c++)                                                      \
                plane[c] = out + y * w +                                                        \
                           (layout == PB_LAYOUT_TCHW                                            \
                                ? ((size_t)t * (size_t)cout + (size_t)c) * hw                   \
                                : ((size_t)c * (size_t)frames + (size_t)t) * hw);               \
            if (cin == 3 && cout == 3) {                                                        \
                T *restrict d0 = plane[0], *restrict d1 = plane[1], *restrict d2 = plane[2];    \
                for (size_t x = 0; x < w; x++) {                                                \
                    const uint8_t *q = r + 3 * (w - 1 - x);                                     \
                    d0[x] = TABLE(0, q[0]);                                                     \
                    d1[x] = TABLE(1, q[1]);                                                     \
                    d2[x] = TABLE(2, q[2]);                                                     \
                }                                                                               \
                continue;                                                                       \
            }                                                                                   \
            for (int c = 0; c < cout; c++) {                                                    \
                T *restrict d = out + y * w +                                                   \
                                (layout == PB_LAYOUT_TCHW                                       \
                                     ? ((size_t)t * (size_t)cout + (size_t)c) * hw              \
                                     : ((size_t)c * (size_t)frames + (size_t)t) * hw);          \
                const uint8_t *restrict q = r + (cin == 1 ? 0 : c) + (w - 1) * (size_t)cin;    \
                for (size_t x = 0; x < w; x++)                                                  \
                    d[x] = TABLE(c, q[-(ptrdiff_t)(x * (size_t)cin)]);                          \
            }                                                                                   \
        }                                                                                       \
    } while (0)

#define TABLE_F32(c, v) lut->f32[c][v]
#define TABLE_F16(c, v) lut->f16[c][v]
#define TABLE_U8(c, v) (v)

/* Both public entry points: each frame as its dtype asks, rows mirrored
 * or not. */
static void normalize(const uint8_t *src, int frames, int height, int width, int in_channels,
                      int out_channels, const struct pb_normalize_lut *lut, enum pb_dtype dtype,
                      enum pb_layout layout, void *dst, bool mirrored)
{
    const size_t hw = (size_t)height * (size_t)width;
    const int cin = in_channels, cout = out_channels;
    for (int t = 0; t < frames; t++) {
        const uint8_t *restrict s = src + (size_t)t * hw * (size_t)cin;
        if (dtype == PB_DTYPE_F32 && cin == 3 && cout == 3 && !lut->portable) {
            float *out = dst, *d0 = out + (size_t)t * hw * 3, *d1 = NULL, *d2 = NULL;
            if (layout != PB_LAYOUT_THWC) {
                d0 = out + (layout == PB_LAYOUT_TCHW ? (size_t)t * 3 * hw : (size_t)t * hw);
                size_t plane = layout == PB_LAYOUT_TCHW ? hw : (size_t)frames * hw;
                d1 = d0 + plane;
                d2 = d1 + plane;
            }
            if (pb_normalize_rgb_f32_simd(s, (size_t)height, (size_t)width, lut, mirrored, d0,
                                          d1, d2))
                continue;
        }
        switch (dtype) {
        case PB_DTYPE_F32:
            if (mirrored)
                NORMALIZE_FRAME_MIRRORED(float, TABLE_F32);
            else
                NORMALIZE_FRAME(float, TABLE_F32);
            break;
        case PB_DTYPE_F16:
            if (mirrored)
                NORMALIZE_FRAME_MIRRORED(uint16_t, TABLE_F16);
            else
                NORMALIZE_FRAME(uint16_t, TABLE_F16);
            break;
        case PB_DTYPE_U8:
        case PB_DTYPE_BYTES:
            if (mirrored)
                NORMALIZE_FRAME_MIRRORED(uint8_t, TABLE_U8);
            else
                NORMALIZE_FRAME(uint8_t, TABLE_U8);
            break;
        }
    }
}

void pb_normalize_u8(const uint8_t *src, int frames, int height, int width, int in_channels,
                     int out_channels, const struct pb_normalize_lut *lut, enum pb_dtype dtype,
                     enum pb_layout layout, void *dst)
{
    normalize(src, frames, height, width, in_channels, out_channels, lut, dtype, layout, dst,
              false);
}

void pb_normalize_mirrored_u8(const uint8_t *src, int frames, int height, int width,
                              int in_channels, int out_channels,
                              const struct pb_normalize_lut *lut, enum pb_dtype dtype,
                              enum pb_layout layout, void *dst)
{
    normalize(src, frames, height, width, in_channels, out_channels, lut, dtype, layout, dst,
              true);
}

/* ---- random_resized_crop parameters --------------------------------- */

bool pb_random_resized_crop_box(struct pb_rng *rng, int height, int width, double scale_lo,
                                double scale_hi, double ratio_lo, double ratio_hi,
                                struct pb_crop_box *box)
{
    double area = (double)height * (double)width;
    double log_lo = log(ratio_lo), log_hi = log(ratio_hi);
    for (int attempt = 0; attempt < 10; attempt++) {
        double target = area * pb_rng_uniform(rng, scale_lo, scale_hi);
        double aspect = exp(pb_rng_uniform(rng, log_lo, log_hi));
        /* Python's round(): halves to even, as nearbyint by default. */
        double w = nearbyint(sqrt(target * aspect));
        double h = nearbyint(sqrt(target / aspect));
        if (w > 0 && w <= width && h > 0 && h <= height) {
            box->height = (int)h;
            box->width = (int)w;
            box->top = (int)pb_rng_below(rng, height - box->height + 1);
            box->left = (int)pb_rng_below(rng, width - box->width + 1);
            return true;
        }
    }
    double in_ratio = (double)width / (double)height;
    int w = width, h = height;
    if (in_ratio < ratio_lo)
        h = (int)nearbyint((double)w / ratio_lo);
    else if (in_ratio > ratio_hi)
        w = (int)nearbyint((double)h * ratio_hi);
    box->height = h < 1 ? 1 : h > height ? height : h;
    box->width = w < 1 ? 1 : w > width ? width : w;
    box->top = (height - box->height) / 2;
    box->left = (width - box->width) / 2;
    return false;
}
