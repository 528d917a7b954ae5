/* Separable resampling in fixed point (bilinear, area) and nearest, with
 * the crop fused: the kernel reads only the window it is given.
 *
 * Weights are computed in double as before and rounded once per table to
 * integers (PB_RESAMPLE_COEF_BITS fraction bits) that sum to exactly one.
 * Per output row, the vertical pass forms in_w * channels sums of uint8
 * times coefficient in int32 (at most 255 << 22) and keeps
 * PB_RESAMPLE_ROW_BITS fraction bits; the horizontal pass sums row values
 * times coefficients (int64 in general, int32 with 16-bit coefficients in
 * the 2-tap bilinear case) and rounds once to uint8. Coefficients are never
 * negative and sum to one, so no value leaves 0..255 and nothing clamps.
 * The error against exact arithmetic is below 0.01 LSB for a few taps and
 * below 0.1 for hundreds, so every output is within 1 LSB of a double
 * precision reference (equal except where that one sits near .5).
 *
 * On x86 the 2-tap (bilinear) path runs AVX-512 or AVX2 loops
 * (kernels/resample_x86.c) on an int16 row instead: the same integers
 * rearranged so that 16-bit multiply-adds give them exactly, so the output
 * is the portable loops' bit for bit (tests/test_resample.c). */
#include "kernels/image.h"
#include "kernels/resample_x86.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROW_SHIFT (PB_RESAMPLE_COEF_BITS - PB_RESAMPLE_ROW_BITS)
#define OUT_SHIFT (PB_RESAMPLE_COEF_BITS + PB_RESAMPLE_ROW_BITS)
#define OUT2_SHIFT (PB_RESAMPLE_COEF2_BITS + PB_RESAMPLE_ROW_BITS)

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
    void *q = realloc(*p, (need ? need : 1) * size);
    if (!q)
        return PB_ERR_NOMEM;
    *p = q;
    *cap = need;
    return PB_OK;
}

/* Grows several int32 arrays that share one capacity. */
static int reserve_shared(int32_t **arrays[], int count, size_t *cap, size_t need)
{
    for (int i = 0; i < count; i++) {
        size_t c = *cap;
        if (reserve((void **)arrays[i], &c, need, sizeof(int32_t)) != PB_OK)
            return PB_ERR_NOMEM;
    }
    if (need > *cap)
        *cap = need;
    return PB_OK;
}

static int reserve_tables(struct pb_resampler *r, int in_h, int in_w, int out_h, int out_w,
                          int channels)
{
    size_t need_x = (size_t)out_w * (size_t)taps_for(r->interp, in_w, out_w);
    size_t need_y = (size_t)out_h * (size_t)taps_for(r->interp, in_h, out_h);
    size_t need_elem = (size_t)out_w * (size_t)channels;
    int32_t **x[] = {&r->start_x, &r->coef_x}, **y[] = {&r->start_y, &r->coef_y};
    int32_t **elem[] = {&r->elem_start, &r->elem_coef0, &r->elem_coef1};
    if (reserve_shared(x, 2, &r->cap_x, need_x) != PB_OK ||
        reserve_shared(y, 2, &r->cap_y, need_y) != PB_OK ||
        reserve_shared(elem, 3, &r->cap_elem, need_elem) != PB_OK ||
        reserve((void **)&r->groups, &r->cap_groups, pb_resample_group_ints(out_w),
                sizeof(int32_t)) != PB_OK ||
        reserve((void **)&r->chunks, &r->cap_chunks, pb_resample_chunk_ints(out_w, channels),
                sizeof(int32_t)) != PB_OK ||
        reserve((void **)&r->row16, &r->cap_row16,
                2 * ((size_t)in_w * (size_t)channels + PB_RESAMPLE_ROW16_SLACK),
                sizeof(int16_t)) != PB_OK)
        return PB_ERR_NOMEM;
    /* A vector of slack: horizontal_pass2 loads 4 values from a pixel's 3. */
    return reserve((void **)&r->row, &r->cap_row, (size_t)in_w * (size_t)channels + 4,
                   sizeof(int32_t));
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
    free(r->coef_x);
    free(r->coef_y);
    free(r->elem_start);
    free(r->elem_coef0);
    free(r->elem_coef1);
    free(r->groups);
    free(r->chunks);
    free(r->row16);
    free(r->row);
    memset(r, 0, sizeof(*r));
}

/* Coefficients of one output pixel as its weights come (non-negative,
 * summing to about 1): each rounded to PB_RESAMPLE_COEF_BITS fraction bits,
 * then finish() gives what rounding left over to the largest, so they sum
 * to exactly one. */
struct quantizer {
    int64_t sum;
    int largest;
    double largest_weight;
};

/* nearbyint(v) in the default rounding mode (to nearest, ties to even;
 * pbench never changes it) without the library call, which costs more
 * than the rest of a coefficient: for 0 <= v < 2^52, v + 2^52 has no
 * fraction bits left, so the addition rounds v and the subtraction is
 * exact. Only where doubles are evaluated as doubles (not x87). */
static double round_to_nearest(double v)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    if (v >= 0 && v < 0x1p52)
        return (v + 0x1p52) - 0x1p52;
#endif
    return nearbyint(v);
}

static void put(struct quantizer *q, int32_t *coef, int k, double weight)
{
    coef[k] = (int32_t)round_to_nearest(weight * (double)(1 << PB_RESAMPLE_COEF_BITS));
    q->sum += coef[k];
    if (weight > q->largest_weight) {
        q->largest_weight = weight;
        q->largest = k;
    }
}

static void finish(const struct quantizer *q, int32_t *coef)
{
    coef[q->largest] += (int32_t)(((int64_t)1 << PB_RESAMPLE_COEF_BITS) - q->sum);
}

/* build_axis for bilinear, unrolled: the same tables (its weights, put()
 * and finish() written out for two taps) in a fraction of the time, which
 * counts when every sample has its own crop window. */
static void build_bilinear_axis(int in, int out, int taps, int32_t *start, int32_t *coef)
{
    const double scale = (double)in / (double)out, one = (double)(1 << PB_RESAMPLE_COEF_BITS);
    for (int o = 0; o < out; o++) {
        double s = ((double)o + 0.5) * scale - 0.5;
        if (s < 0)
            s = 0;
        int j = (int)s;
        double f = s - j;
        int32_t *co = coef + (size_t)o * (size_t)taps;
        if (j >= in - 1) { /* the last pixel alone, weight one, in the last tap */
            start[o] = in - taps;
            co[0] = 0;
            co[taps - 1] = (int32_t)1 << PB_RESAMPLE_COEF_BITS;
            continue;
        }
        double w0 = 1.0 - f, w1 = f; /* taps is 2 here */
        start[o] = j;
        co[0] = (int32_t)round_to_nearest(w0 * one);
        co[1] = (int32_t)round_to_nearest(w1 * one);
        co[w1 > w0 ? 1 : 0] += (int32_t)((1 << PB_RESAMPLE_COEF_BITS) - (co[0] + co[1]));
    }
}

/* One axis: for each output o, taps coefficients from source pixel
 * start[o]. Weights are computed in double, then quantized. */
static void build_axis(enum pb_interp interp, int in, int out, int taps, int32_t *start,
                       int32_t *coef)
{
    if (interp == PB_INTERP_BILINEAR) {
        build_bilinear_axis(in, out, taps, start, coef);
        return;
    }
    double scale = (double)in / (double)out;
    for (int o = 0; o < out; o++) {
        double w[2] = {0, 0};
        int first = 0, count = 0;
        int32_t *co = coef + (size_t)o * (size_t)taps;
        if (interp == PB_INTERP_NEAREST) {
            int64_t j = ((2 * (int64_t)o + 1) * in) / (2 * (int64_t)out);
            start[o] = (int32_t)(j < in - 1 ? j : in - 1);
            co[0] = (int32_t)1 << PB_RESAMPLE_COEF_BITS;
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
        struct quantizer q = {0, 0, -1.0};
        for (int k = 0; k < taps; k++)
            co[k] = 0;
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
                put(&q, co, j - s0, v);
        }
        finish(&q, co);
    }
}

/* The 2-tap horizontal pass's per-value tables: the first tap's offset in
 * the row and 16-bit coefficients, the first one rounded from coef_x's
 * (so the GPU, which holds coef_x, derives the same) and the second its
 * complement to one. */
static void build_elements(struct pb_resampler *r)
{
    const int shift = PB_RESAMPLE_COEF_BITS - PB_RESAMPLE_COEF2_BITS;
    for (int x = 0; x < r->out_w; x++) {
        int32_t c0 = (r->coef_x[2 * x] + (1 << (shift - 1))) >> shift;
        for (int c = 0; c < r->channels; c++) {
            size_t i = (size_t)x * (size_t)r->channels + (size_t)c;
            r->elem_start[i] = r->start_x[x] * r->channels + c;
            r->elem_coef0[i] = c0;
            r->elem_coef1[i] = (1 << PB_RESAMPLE_COEF2_BITS) - c0;
        }
    }
}

/* Chooses the x86 loops of the 2-tap path and fills their table: AVX-512
 * where allowed and every chunk's taps are near enough (3: near enough for
 * one load), else AVX2 for 3 and 4 channels, else none (the portable
 * loops). */
static int choose_x86_loops(struct pb_resampler *r)
{
    if (r->taps_x != 2 || r->loops == PB_RESAMPLE_PORTABLE || !pb_resample_x86_avx2())
        return 0;
    if (r->loops == PB_RESAMPLE_FASTEST && pb_resample_x86_avx512()) {
        size_t n = (size_t)r->out_w * (size_t)r->channels;
        int span = pb_resample_chunk_table(r->elem_start, r->elem_coef0, n, r->channels, r->chunks);
        if (span > 0)
            return span <= PB_RESAMPLE_CHUNK_SPAN_NARROW ? 3 : 2;
    }
    if (r->channels != 3 && r->channels != 4)
        return 0;
    pb_resample_group_table(r->start_x, r->elem_coef0, r->out_w, r->channels, r->groups);
    return 1;
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
    r->channels = channels;
    r->out_w = out_w;
    build_axis(r->interp, in_w, out_w, r->taps_x, r->start_x, r->coef_x);
    build_axis(r->interp, in_h, out_h, r->taps_y, r->start_y, r->coef_y);
    if (r->taps_x == 2)
        build_elements(r);
    r->x86_loops = choose_x86_loops(r);
    /* The slack horizontal_pass2 reads past the last pixel (into a lane it
     * drops): defined values, never written by the vertical pass. */
    memset(r->row + (size_t)in_w * (size_t)channels, 0, 4 * sizeof(int32_t));
    size_t row16 = (size_t)in_w * (size_t)channels + PB_RESAMPLE_ROW16_SLACK;
    for (int k = 1; k <= 2; k++)
        memset(r->row16 + k * row16 - PB_RESAMPLE_ROW16_SLACK, 0,
               PB_RESAMPLE_ROW16_SLACK * sizeof(int16_t));
    r->in_h = in_h;
    r->in_w = in_w;
    r->out_h = out_h;
    return PB_OK;
}

/* gcc's function multi-versioning: an AVX2 build of a hot loop next to
 * the baseline one, chosen at load time by the CPU (32-bit multiplies
 * 8 at a time instead of SSE2's emulation). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define MULTI_VERSIONED __attribute__((target_clones("avx2", "default")))
#else
#define MULTI_VERSIONED
#endif

/* row[i] = (sum_k c[k] * src_row_k[i]) in PB_RESAMPLE_ROW_BITS fixed
 * point, over n values. Vectorizes (widening multiply-adds). */
MULTI_VERSIONED static void vertical_pass(const uint8_t *src, size_t stride, const int32_t *c,
                                          int taps, size_t n, int32_t *restrict row)
{
    const int32_t half = 1 << (ROW_SHIFT - 1);
    if (taps == 2) {
        const uint8_t *restrict a = src, *restrict b = src + stride;
        int32_t ca = c[0], cb = c[1];
        for (size_t i = 0; i < n; i++)
            row[i] = (ca * (int32_t)a[i] + cb * (int32_t)b[i] + half) >> ROW_SHIFT;
        return;
    }
    if (taps == 1) {
        const uint8_t *restrict a = src;
        for (size_t i = 0; i < n; i++)
            row[i] = (int32_t)a[i] << PB_RESAMPLE_ROW_BITS;
        return;
    }
    const uint8_t *restrict a = src;
    int32_t ca = c[0];
    for (size_t i = 0; i < n; i++)
        row[i] = ca * (int32_t)a[i] + half;
    for (int k = 1; k < taps; k++) {
        const uint8_t *restrict b = src + (size_t)k * stride;
        int32_t cb = c[k];
        if (cb == 0)
            continue;
        for (size_t i = 0; i < n; i++)
            row[i] += cb * (int32_t)b[i];
    }
    for (size_t i = 0; i < n; i++)
        row[i] >>= ROW_SHIFT;
}

/* A pixel's 3 channels and one more value, in the lanes of one vector
 * (gcc's and clang's vector extensions: SSE on x86, NEON on ARM). */
typedef int32_t v4si __attribute__((vector_size(16)));
typedef uint8_t v16qu __attribute__((vector_size(16)));

/* The low byte of each 32-bit lane, gathered into the first 4 bytes (one
 * pshufb where SSSE3 is there). */
static inline v16qu low_bytes(v16qu v)
{
#if defined(__clang__)
    return __builtin_shufflevector(v, v, 0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12);
#else
    return __builtin_shuffle(v, (v16qu){0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12});
#endif
}

static inline v4si load_v4si(const int32_t *p)
{
    v4si v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* Two taps per output value, c0 * v0 + (1 - c0) * v1 written as
 * (v1 << 16) + c0 * (v0 - v1): one multiply per value. The taps are a
 * gather (each output pixel reads its own pair of source pixels), so
 * three channels go one pixel per vector: both source pixels are loaded
 * whole (the fourth lane is the next pixel's, unused) and the pixel is
 * written as 4 bytes, the fourth overwritten by the next pixel (the last
 * one is written as 3). The row has a vector of slack after its end. */
MULTI_VERSIONED static void horizontal_pass2(const int32_t *restrict row,
                                             const int32_t *restrict start,
                                             const int32_t *restrict c0, int channels, size_t n,
                                             uint8_t *restrict out)
{
    const int32_t half = 1 << (OUT2_SHIFT - 1);
    if (channels == 3 && n >= 3) {
        for (size_t i = 0; i < n; i += 3) {
            const int32_t *p = row + start[i];
            v4si a = load_v4si(p), b = load_v4si(p + 3);
            v4si v = ((b << PB_RESAMPLE_COEF2_BITS) + c0[i] * (a - b) + half) >> OUT2_SHIFT;
            v16qu bytes = low_bytes((v16qu)v); /* each lane is 0..255 */
            if (i + 3 < n) {
                int32_t pixel = ((v4si)bytes)[0]; /* in a register, not via the stack */
                memcpy(out + i, &pixel, 4);
            } else {
                out[i] = bytes[0];
                out[i + 1] = bytes[1];
                out[i + 2] = bytes[2];
            }
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const int32_t *p = row + start[i];
        out[i] = (uint8_t)(((p[channels] << PB_RESAMPLE_COEF2_BITS) + c0[i] * (p[0] - p[channels]) +
                            half) >>
                           OUT2_SHIFT);
    }
}

/* Row values as int16 (they are at most 255 << PB_RESAMPLE_ROW_BITS). */
static void narrow(const int32_t *restrict row, size_t n, int16_t *restrict row16)
{
    for (size_t i = 0; i < n; i++)
        row16[i] = (int16_t)row[i];
}

/* Any number of taps: int64 sums of Q22 coefficients times row values. */
static void horizontal_pass(const int32_t *restrict row, const int32_t *start, const int32_t *coef,
                            int taps, int out_w, int channels, uint8_t *restrict out)
{
    const int64_t half = (int64_t)1 << (OUT_SHIFT - 1);
    for (int x = 0; x < out_w; x++) {
        const int32_t *c = coef + (size_t)x * (size_t)taps;
        for (int ch = 0; ch < channels; ch++) {
            const int32_t *p = row + (size_t)start[x] * (size_t)channels + ch;
            int64_t a = half;
            for (int k = 0; k < taps; k++)
                a += (int64_t)c[k] * p[(size_t)k * (size_t)channels];
            out[(size_t)x * (size_t)channels + (size_t)ch] = (uint8_t)(a >> OUT_SHIFT);
        }
    }
}

static void resample_nearest(const struct pb_resampler *r, const uint8_t *src, size_t src_row_bytes,
                             uint8_t *restrict dst)
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

/* The vertical pass of output row y into the int16 row buffer y % 2. */
static const int16_t *vertical16(struct pb_resampler *r, const uint8_t *src, size_t src_row_bytes,
                                 int y, bool avx512)
{
    size_t row_elems = (size_t)r->in_w * (size_t)r->channels;
    int16_t *row16 = r->row16 + (size_t)(y % 2) * (row_elems + PB_RESAMPLE_ROW16_SLACK);
    const int32_t *cy = r->coef_y + (size_t)y * (size_t)r->taps_y;
    const uint8_t *s = src + (size_t)r->start_y[y] * src_row_bytes;
    if (r->taps_y <= 2 && avx512) {
        pb_resample_vertical16_avx512(s, src_row_bytes, cy, r->taps_y, row_elems, row16);
    } else if (r->taps_y <= 2) {
        pb_resample_vertical16_avx2(s, src_row_bytes, cy, r->taps_y, row_elems, row16);
    } else { /* area downscaling down, upscaling across */
        vertical_pass(s, src_row_bytes, cy, r->taps_y, row_elems, r->row);
        narrow(r->row, row_elems, row16);
    }
    return row16;
}

/* The x86 loops, one row ahead: the horizontal pass reads a row the
 * vertical pass wrote a whole row earlier, whose stores have left the
 * store buffer (its unaligned loads would wait on them). */
static void resample_x86(struct pb_resampler *r, const uint8_t *src, size_t src_row_bytes,
                         bool avx512, uint8_t *dst)
{
    size_t out_row_bytes = (size_t)r->out_w * (size_t)r->channels;
    const int16_t *row = vertical16(r, src, src_row_bytes, 0, avx512);
    for (int y = 0; y < r->out_h; y++) {
        const int16_t *next =
            y + 1 < r->out_h ? vertical16(r, src, src_row_bytes, y + 1, avx512) : NULL;
        uint8_t *d = dst + (size_t)y * out_row_bytes;
        if (avx512)
            pb_resample_horizontal16_avx512(row, r->chunks, out_row_bytes, r->x86_loops == 3, d);
        else
            pb_resample_horizontal16_avx2(row, r->groups, r->channels, r->out_w, d);
        row = next;
    }
}

void pb_resample_u8(struct pb_resampler *r, const uint8_t *src, size_t src_row_bytes, uint8_t *dst)
{
    if (r->interp == PB_INTERP_NEAREST) {
        resample_nearest(r, src, src_row_bytes, dst);
        return;
    }
    size_t row_elems = (size_t)r->in_w * (size_t)r->channels;
    size_t out_row_bytes = (size_t)r->out_w * (size_t)r->channels;
    if (r->x86_loops) {
        resample_x86(r, src, src_row_bytes, r->x86_loops >= 2, dst);
        return;
    }
    for (int y = 0; y < r->out_h; y++) {
        const int32_t *cy = r->coef_y + (size_t)y * (size_t)r->taps_y;
        const uint8_t *s = src + (size_t)r->start_y[y] * src_row_bytes;
        uint8_t *d = dst + (size_t)y * out_row_bytes;
        vertical_pass(s, src_row_bytes, cy, r->taps_y, row_elems, r->row);
        if (r->taps_x == 2)
            horizontal_pass2(r->row, r->elem_start, r->elem_coef0, r->channels, out_row_bytes, d);
        else
            horizontal_pass(r->row, r->start_x, r->coef_x, r->taps_x, r->out_w, r->channels, d);
    }
}
