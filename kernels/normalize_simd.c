/* normalize's common case with x86 vector instructions: 3-channel uint8 in,
 * float32 out, planar (CHW) or interleaved (HWC), rows mirrored or not.
 *
 * Eight pixels (24 bytes) at a time: two byte shuffles per channel pull
 * its eight values out of the interleaved pixels (in reversed order when
 * mirrored), they widen to float and one fused multiply-add per channel
 * gives x * scale + bias, the very value the table holds (the table is
 * built with fmaf from the same two floats), so this path and the scalar
 * one agree bit for bit. Planar output is written with streaming stores
 * where it is aligned: a batch of float images is far larger than the
 * caches and is read next by the copy to the device, not by this core,
 * so writing around the cache saves reading every line before writing it.
 *
 * Built only for x86-64 with gcc or clang; chosen at run time when the CPU
 * has AVX2 and FMA. */
#include "kernels/normalize_simd.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define TARGET __attribute__((target("avx2,fma")))

/* The two shuffle masks that gather output byte k (k < 16) from source
 * byte from[k] of the 24 loaded: bytes 0..15 in one register, 16..23 in
 * the low half of another. A mask byte with its top bit set gives 0. */
struct gather {
    __m128i lo, hi;
};

static struct gather gather_of(const int from[16])
{
    uint8_t lo[16], hi[16];
    for (int k = 0; k < 16; k++) {
        lo[k] = from[k] >= 0 && from[k] < 16 ? (uint8_t)from[k] : 0x80;
        hi[k] = from[k] >= 16 ? (uint8_t)(from[k] - 16) : 0x80;
    }
    struct gather g;
    memcpy(&g.lo, lo, 16);
    memcpy(&g.hi, hi, 16);
    return g;
}

TARGET static inline __m128i pick(__m128i a, __m128i b, struct gather g)
{
    return _mm_or_si128(_mm_shuffle_epi8(a, g.lo), _mm_shuffle_epi8(b, g.hi));
}

TARGET static inline __m256 widen(__m128i bytes)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
}

TARGET static inline void put(float *d, __m256 v, bool stream)
{
    if (stream)
        _mm256_stream_ps(d, v);
    else
        _mm256_storeu_ps(d, v);
}

/* One run of n pixels (a row when mirrored, else the whole frame): planar
 * into d0, d1, d2. */
TARGET static void planar_run(const uint8_t *s, size_t n, const struct pb_normalize_lut *lut,
                              bool mirrored, float *d0, float *d1, float *d2)
{
    int from[3][16];
    for (int c = 0; c < 3; c++)
        for (int j = 0; j < 16; j++)
            from[c][j] = j < 8 ? 3 * (mirrored ? 7 - j : j) + c : -1;
    const struct gather g0 = gather_of(from[0]), g1 = gather_of(from[1]),
                        g2 = gather_of(from[2]);
    const __m256 a0 = _mm256_set1_ps(lut->scale[0]), b0 = _mm256_set1_ps(lut->bias[0]);
    const __m256 a1 = _mm256_set1_ps(lut->scale[1]), b1 = _mm256_set1_ps(lut->bias[1]);
    const __m256 a2 = _mm256_set1_ps(lut->scale[2]), b2 = _mm256_set1_ps(lut->bias[2]);
    /* Streaming stores need 32-byte aligned destinations; the three planes
     * of a batch slot are (pbench's batches are 64-byte aligned) whenever
     * a plane is a multiple of 8 floats. */
    const bool stream = (((uintptr_t)d0 | (uintptr_t)d1 | (uintptr_t)d2) & 31) == 0;
    size_t x = 0;
    for (; x + 8 <= n; x += 8) {
        const uint8_t *p = s + 3 * (mirrored ? n - 8 - x : x);
        __m128i lo = _mm_loadu_si128((const __m128i *)p);
        __m128i hi = _mm_loadl_epi64((const __m128i *)(p + 16));
        put(d0 + x, _mm256_fmadd_ps(widen(pick(lo, hi, g0)), a0, b0), stream);
        put(d1 + x, _mm256_fmadd_ps(widen(pick(lo, hi, g1)), a1, b1), stream);
        put(d2 + x, _mm256_fmadd_ps(widen(pick(lo, hi, g2)), a2, b2), stream);
    }
    for (; x < n; x++) {
        const uint8_t *q = s + 3 * (mirrored ? n - 1 - x : x);
        d0[x] = lut->f32[0][q[0]];
        d1[x] = lut->f32[1][q[1]];
        d2[x] = lut->f32[2][q[2]];
    }
}

/* The same, interleaved into d (3 floats a pixel). */
TARGET static void interleaved_run(const uint8_t *s, size_t n, const struct pb_normalize_lut *lut,
                                   bool mirrored, float *d)
{
    /* Output bytes 0..15 and 16..23 of eight pixels, each from its source
     * byte (pixel reversed when mirrored, channels kept in order). */
    int from_a[16], from_b[16];
    for (int k = 0; k < 24; k++) {
        int pixel = k / 3, c = k % 3;
        int src = 3 * (mirrored ? 7 - pixel : pixel) + c;
        if (k < 16)
            from_a[k] = src;
        else
            from_b[k - 16] = src;
    }
    for (int k = 8; k < 16; k++)
        from_b[k] = -1;
    const struct gather ga = gather_of(from_a), gb = gather_of(from_b);
    /* Float k of the 24 is channel k % 3. */
    float scale[24], bias[24];
    for (int k = 0; k < 24; k++) {
        scale[k] = lut->scale[k % 3];
        bias[k] = lut->bias[k % 3];
    }
    __m256 a[3], b[3];
    for (int i = 0; i < 3; i++) {
        a[i] = _mm256_loadu_ps(scale + 8 * i);
        b[i] = _mm256_loadu_ps(bias + 8 * i);
    }
    size_t x = 0;
    for (; x + 8 <= n; x += 8) {
        const uint8_t *p = s + 3 * (mirrored ? n - 8 - x : x);
        __m128i lo = _mm_loadu_si128((const __m128i *)p);
        __m128i hi = _mm_loadl_epi64((const __m128i *)(p + 16));
        __m128i first = pick(lo, hi, ga), last = pick(lo, hi, gb);
        float *o = d + 3 * x;
        _mm256_storeu_ps(o, _mm256_fmadd_ps(widen(first), a[0], b[0]));
        _mm256_storeu_ps(o + 8, _mm256_fmadd_ps(widen(_mm_srli_si128(first, 8)), a[1], b[1]));
        _mm256_storeu_ps(o + 16, _mm256_fmadd_ps(widen(last), a[2], b[2]));
    }
    for (; x < n; x++) {
        const uint8_t *q = s + 3 * (mirrored ? n - 1 - x : x);
        for (int c = 0; c < 3; c++)
            d[3 * x + (size_t)c] = lut->f32[c][q[c]];
    }
}

bool pb_normalize_rgb_f32_simd(const uint8_t *s, size_t height, size_t width,
                               const struct pb_normalize_lut *lut, bool mirrored, float *d0,
                               float *d1, float *d2)
{
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return false;
    size_t hw = height * width;
    if (!mirrored) { /* the frame is one run */
        if (d1)
            planar_run(s, hw, lut, false, d0, d1, d2);
        else
            interleaved_run(s, hw, lut, false, d0);
    } else {
        for (size_t y = 0; y < height; y++) {
            const uint8_t *r = s + 3 * y * width;
            if (d1)
                planar_run(r, width, lut, true, d0 + y * width, d1 + y * width, d2 + y * width);
            else
                interleaved_run(r, width, lut, true, d0 + 3 * y * width);
        }
    }
    if (d1)
        _mm_sfence(); /* streamed stores are ordered before the batch is handed on */
    return true;
}

#else

bool pb_normalize_rgb_f32_simd(const uint8_t *s, size_t height, size_t width,
                               const struct pb_normalize_lut *lut, bool mirrored, float *d0,
                               float *d1, float *d2)
{
    (void)s, (void)height, (void)width, (void)lut, (void)mirrored, (void)d0, (void)d1, (void)d2;
    return false;
}

#endif
