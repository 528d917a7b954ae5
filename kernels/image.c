#include "kernels/image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- resampling ------------------------------------------------------ */

/* Source pixels one output pixel reads along an axis of in pixels. */
static int taps_for(enum pb_interp interp, int in, int out)
{
    int taps = 1;
    if (interp == PB_INTERP_BILINEAR)
        taps = 2;
    else if (interp == PB_INTERP_AREA)
        taps = (int)ceil((double)in / (double)out) + 1;
    return taps < in ? taps : in;
}

/* Grows *p to hold need elements of size bytes; keeps the contents. */
static int reserve(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return PB_OK;
    void *q = realloc(*p, need * size);
    if (!q)
        return PB_ERR_NOMEM;
    *p = q;
    *cap = need;
    return PB_OK;
}

/* One axis's tables: start and weight share a capacity (cap), each grown
 * to need entries of its own type. */
static int reserve_axis(int32_t **start, float **weight, size_t *cap, size_t need)
{
    size_t start_cap = *cap, weight_cap = *cap;
    if (reserve((void **)start, &start_cap, need, sizeof(int32_t)) != PB_OK)
        return PB_ERR_NOMEM;
    if (reserve((void **)weight, &weight_cap, need, sizeof(float)) != PB_OK)
        return PB_ERR_NOMEM;
    *cap = weight_cap;
    return PB_OK;
}

static int reserve_tables(struct pb_resampler *r, int in_h, int in_w, int out_h, int out_w,
                          int channels)
{
    size_t need_x = (size_t)out_w * (size_t)taps_for(r->interp, in_w, out_w);
    size_t need_y = (size_t)out_h * (size_t)taps_for(r->interp, in_h, out_h);
    if (reserve_axis(&r->start_x, &r->weight_x, &r->cap_x, need_x) != PB_OK ||
        reserve_axis(&r->start_y, &r->weight_y, &r->cap_y, need_y) != PB_OK)
        return PB_ERR_NOMEM;
    if (reserve((void **)&r->out_row, &r->cap_out_row, (size_t)out_w * (size_t)channels,
                sizeof(float)) != PB_OK)
        return PB_ERR_NOMEM;
    return reserve((void **)&r->row, &r->cap_row, (size_t)in_w * (size_t)channels, sizeof(float));
}

int pb_resampler_init(struct pb_resampler *r, enum pb_interp interp, int max_in_h, int max_in_w,
                      int out_h, int out_w, int channels)
{
    memset(r, 0, sizeof(*r));
    r->interp = interp;
    return reserve_tables(r, max_in_h, max_in_w, out_h, out_w, channels);
}

void pb_resampler_free(struct pb_resampler *r)
{
    free(r->start_x);
    free(r->start_y);
    free(r->weight_x);
    free(r->weight_y);
    free(r->row);
    free(r->out_row);
    memset(r, 0, sizeof(*r));
}

/* One axis: for each output o, taps weights from source pixel start[o].
 * Weights are computed in double, rounded once to float. */
static void build_axis(enum pb_interp interp, int in, int out, int taps, int32_t *start,
                       float *weight)
{
    double scale = (double)in / (double)out;
    for (int o = 0; o < out; o++) {
        double w[2] = {0, 0};
        int first = 0, count = 0;
        float *wo = weight + (size_t)o * (size_t)taps;
        if (interp == PB_INTERP_NEAREST) {
            int64_t j = ((2 * (int64_t)o + 1) * in) / (2 * (int64_t)out);
            start[o] = (int32_t)(j < in - 1 ? j : in - 1);
            wo[0] = 1.0f;
            continue;
        }
        if (interp == PB_INTERP_BILINEAR) {
            double s = ((double)o + 0.5) * scale - 0.5;
            if (s < 0)
                s = 0;
            int j = (int)s;
            double f = s - j;
            if (j >= in - 1) {
                j = in - 1;
                f = 0;
            }
            first = j;
            w[0] = 1.0 - f;
            w[1] = f;
            count = j + 1 < in ? 2 : 1;
        }
        int lo_pixel = first;
        if (interp == PB_INTERP_AREA) {
            double lo = (double)o * scale, hi = (double)(o + 1) * scale;
            lo_pixel = (int)floor(lo);
            int hi_pixel = (int)ceil(hi);
            if (hi_pixel > in)
                hi_pixel = in;
            first = lo_pixel;
            count = hi_pixel - lo_pixel;
        }
        int s0 = first < in - taps ? first : in - taps;
        start[o] = s0;
        for (int k = 0; k < taps; k++)
            wo[k] = 0.0f;
        for (int k = 0; k < count; k++) {
            int j = lo_pixel + k;
            double v;
            if (interp == PB_INTERP_AREA) {
                double lo = (double)o * scale, hi = (double)(o + 1) * scale;
                double a = j > lo ? j : lo, b = j + 1 < hi ? j + 1 : hi;
                v = b > a ? (b - a) / scale : 0;
            } else {
                v = w[k];
            }
            if (j - s0 < taps) /* only floating-point noise could say otherwise */
                wo[j - s0] = (float)v;
        }
    }
}

int pb_resampler_prepare(struct pb_resampler *r, int in_h, int in_w, int out_h, int out_w,
                         int channels)
{
    if (r->in_h == in_h && r->in_w == in_w && r->out_h == out_h && r->out_w == out_w &&
        r->channels == channels)
        return PB_OK;
    r->in_h = 0; /* invalid until the tables are complete */
    if (reserve_tables(r, in_h, in_w, out_h, out_w, channels) != PB_OK)
        return PB_ERR_NOMEM;
    r->taps_x = taps_for(r->interp, in_w, out_w);
    r->taps_y = taps_for(r->interp, in_h, out_h);
    build_axis(r->interp, in_w, out_w, r->taps_x, r->start_x, r->weight_x);
    build_axis(r->interp, in_h, out_h, r->taps_y, r->start_y, r->weight_y);
    r->in_h = in_h;
    r->in_w = in_w;
    r->out_h = out_h;
    r->out_w = out_w;
    r->channels = channels;
    return PB_OK;
}

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

/* row[i] = sum_k w[k] * src_row_k[i], over n elements. */
static void vertical_pass(const uint8_t *src, size_t stride, const float *w, int taps,
                          size_t n, float *restrict row)
{
    if (taps == 2) {
        const uint8_t *restrict a = src, *restrict b = src + stride;
        float wa = w[0], wb = w[1];
        for (size_t i = 0; i < n; i++)
            row[i] = wa * (float)a[i] + wb * (float)b[i];
        return;
    }
    const uint8_t *restrict a = src;
    float wa = w[0];
    for (size_t i = 0; i < n; i++)
        row[i] = wa * (float)a[i];
    for (int k = 1; k < taps; k++) {
        const uint8_t *restrict b = src + (size_t)k * stride;
        float wb = w[k];
        if (wb == 0.0f)
            continue;
        for (size_t i = 0; i < n; i++)
            row[i] += wb * (float)b[i];
    }
}

/* out[x, c] = sum_k wx[x, k] * row[start[x] + k, c]: a gather, so scalar;
 * rounding to uint8 is left to round_row, which vectorizes. */
static void horizontal_pass(const float *restrict row, const int32_t *start, const float *weight,
                            int taps, int out_w, int channels, float *restrict out)
{
    if (channels == 3 && taps == 2) {
        for (int x = 0; x < out_w; x++) {
            const float *p = row + (size_t)start[x] * 3;
            float w0 = weight[2 * x], w1 = weight[2 * x + 1];
            out[3 * x + 0] = w0 * p[0] + w1 * p[3];
            out[3 * x + 1] = w0 * p[1] + w1 * p[4];
            out[3 * x + 2] = w0 * p[2] + w1 * p[5];
        }
        return;
    }
    if (channels == 3) {
        for (int x = 0; x < out_w; x++) {
            const float *p = row + (size_t)start[x] * 3;
            const float *w = weight + (size_t)x * (size_t)taps;
            float a = 0, b = 0, c = 0;
            for (int k = 0; k < taps; k++) {
                a += w[k] * p[3 * k];
                b += w[k] * p[3 * k + 1];
                c += w[k] * p[3 * k + 2];
            }
            out[3 * x + 0] = a;
            out[3 * x + 1] = b;
            out[3 * x + 2] = c;
        }
        return;
    }
    for (int x = 0; x < out_w; x++) {
        const float *w = weight + (size_t)x * (size_t)taps;
        for (int c = 0; c < channels; c++) {
            const float *p = row + (size_t)start[x] * (size_t)channels + c;
            float a = 0;
            for (int k = 0; k < taps; k++)
                a += w[k] * p[(size_t)k * (size_t)channels];
            out[(size_t)x * (size_t)channels + (size_t)c] = a;
        }
    }
}

/* dst[i] = src[i] rounded to nearest and clamped to 0..255. */
static void round_row(const float *restrict src, size_t n, uint8_t *restrict dst)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint8_t)(int32_t)min_f(max_f(src[i] + 0.5f, 0.0f), 255.0f);
}

static void resample_nearest(const struct pb_resampler *r, const uint8_t *src,
                             size_t src_row_bytes, uint8_t *restrict dst)
{
    int channels = r->channels;
    for (int y = 0; y < r->out_h; y++) {
        const uint8_t *restrict s = src + (size_t)r->start_y[y] * src_row_bytes;
        uint8_t *restrict d = dst + (size_t)y * (size_t)r->out_w * (size_t)channels;
        if (channels == 3) {
            for (int x = 0; x < r->out_w; x++) {
                const uint8_t *p = s + (size_t)r->start_x[x] * 3;
                d[3 * x] = p[0];
                d[3 * x + 1] = p[1];
                d[3 * x + 2] = p[2];
            }
        } else {
            for (int x = 0; x < r->out_w; x++)
                for (int c = 0; c < channels; c++)
                    d[(size_t)x * (size_t)channels + (size_t)c] =
                        s[(size_t)r->start_x[x] * (size_t)channels + (size_t)c];
        }
    }
}

void pb_resample_u8(struct pb_resampler *r, const uint8_t *src, size_t src_row_bytes,
                    uint8_t *dst)
{
    if (r->interp == PB_INTERP_NEAREST) {
        resample_nearest(r, src, src_row_bytes, dst);
        return;
    }
    size_t row_elems = (size_t)r->in_w * (size_t)r->channels;
    size_t out_row_bytes = (size_t)r->out_w * (size_t)r->channels;
    for (int y = 0; y < r->out_h; y++) {
        const float *wy = r->weight_y + (size_t)y * (size_t)r->taps_y;
        vertical_pass(src + (size_t)r->start_y[y] * src_row_bytes, src_row_bytes, wy, r->taps_y,
                      row_elems, r->row);
        horizontal_pass(r->row, r->start_x, r->weight_x, r->taps_x, r->out_w, r->channels,
                        r->out_row);
        round_row(r->out_row, out_row_bytes, dst + (size_t)y * out_row_bytes);
    }
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

uint16_t pb_f16_from_double(double v)
{
    uint16_t sign = signbit(v) ? 0x8000u : 0;
    double a = fabs(v);
    if (isnan(v))
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 65520.0) /* halfway between 65504 and 2^16 rounds to even: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x1p-14) {
        /* Subnormal: a count of 2^-24 units; 1024 units is the smallest
         * normal, whose bits follow on naturally. */
        double units = nearbyint(a * 0x1p24);
        return (uint16_t)(sign | (uint16_t)units);
    }
    int e;
    double m = frexp(a, &e);            /* a = m * 2^e, m in [0.5, 1) */
    double q = nearbyint(ldexp(m, 11)); /* 1024..2048: 1.mantissa in 2^-10 units */
    if (q == 2048.0) {
        q = 1024.0;
        e++;
    }
    int exponent = e - 1 + 15;
    if (exponent >= 31)
        return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | (uint16_t)(exponent << 10) | (uint16_t)((int)q - 1024));
}

void pb_normalize_lut_init(struct pb_normalize_lut *lut, int channels, const double *mean,
                           const double *std, double pixel_scale)
{
    memset(lut, 0, sizeof(*lut));
    lut->channels = channels;
    for (int c = 0; c < channels && c < PB_NORMALIZE_MAX_CHANNELS; c++) {
        for (int x = 0; x < 256; x++) {
            double v = ((double)x / pixel_scale - mean[c]) / std[c];
            lut->f32[c][x] = (float)v;
            lut->f16[c][x] = pb_f16_from_double(v);
        }
    }
}

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

#define TABLE_F32(c, v) lut->f32[c][v]
#define TABLE_F16(c, v) lut->f16[c][v]
#define TABLE_U8(c, v) (v)

void pb_normalize_u8(const uint8_t *src, int frames, int height, int width, int in_channels,
                     int out_channels, const struct pb_normalize_lut *lut, enum pb_dtype dtype,
                     enum pb_layout layout, void *dst)
{
    const size_t hw = (size_t)height * (size_t)width;
    const int cin = in_channels, cout = out_channels;
    for (int t = 0; t < frames; t++) {
        const uint8_t *restrict s = src + (size_t)t * hw * (size_t)cin;
        switch (dtype) {
        case PB_DTYPE_F32: NORMALIZE_FRAME(float, TABLE_F32); break;
        case PB_DTYPE_F16: NORMALIZE_FRAME(uint16_t, TABLE_F16); break;
        case PB_DTYPE_U8:
        case PB_DTYPE_BYTES: NORMALIZE_FRAME(uint8_t, TABLE_U8); break;
        }
    }
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
