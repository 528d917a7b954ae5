/* AVX2 and AVX-512 loops of kernels/resample.c (kernels/resample_x86.h),
 * compiled for those instruction sets function by function (target
 * attributes), so the rest of pbench keeps the baseline x86-64 instruction
 * set and runs on any x86-64 CPU. The group and chunk tables are plain C,
 * built the same everywhere. */
#include "kernels/resample_x86.h"

#include <stdint.h>
#include <string.h>

#include "kernels/image.h"

/* A group's table: the 8 pixels' first source values (in row values), then
 * for each of its 4 vectors of two pixels, 8 lanes of coefficient pairs
 * and 32 bytes of shuffle control (16 per pixel). Vector k holds pixels
 * group_pixel[k][0] and [k][1], in this order so that packing the four
 * results puts the 8 pixels in order. */
#define TABLE_STARTS 0
#define TABLE_COEFS 8
#define TABLE_SHUFFLES 40
static const int group_pixel[4][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};

size_t pb_resample_group_ints(int out_w)
{
    size_t groups = ((size_t)out_w + PB_RESAMPLE_GROUP_PIXELS - 1) / PB_RESAMPLE_GROUP_PIXELS;
    return groups * PB_RESAMPLE_GROUP_INTS;
}

/* The 32-bit coefficient pair of an output value whose first tap weighs
 * c0 (0..2^16): (c0 - 1, -c0) for the lane (a, b), or (c1 - 1, -c1) for
 * the lane (b, a) when c0 is over one half (*swap). */
static int32_t coef_pair(int32_t c0, bool *swap)
{
    *swap = c0 > (1 << (PB_RESAMPLE_COEF2_BITS - 1));
    int32_t c = *swap ? (1 << PB_RESAMPLE_COEF2_BITS) - c0 : c0;
    return (int32_t)((uint32_t)(uint16_t)(int16_t)(c - 1) | (uint32_t)(uint16_t)(int16_t)-c << 16);
}

/* One pixel's 4 lanes: the coefficient pairs and the shuffle that builds
 * each lane from the 8 row values at the pixel's start (the first tap's
 * channels, then the second's). */
static void pixel_lanes(int32_t c0, int channels, int32_t coef[4], uint8_t shuffle[16])
{
    bool swap;
    int32_t pair = coef_pair(c0, &swap);
    for (int lane = 0; lane < 4; lane++) {
        int low = swap ? channels + lane : lane, high = swap ? lane : channels + lane;
        bool used = lane < channels;
        coef[lane] = used ? pair : 0;
        uint8_t bytes[4] = {(uint8_t)(2 * low), (uint8_t)(2 * low + 1), (uint8_t)(2 * high),
                            (uint8_t)(2 * high + 1)};
        for (int b = 0; b < 4; b++)
            shuffle[4 * lane + b] = used ? bytes[b] : 0x80; /* 0x80: a zero byte */
    }
}

void pb_resample_group_table(const int32_t *start_x, const int32_t *c0, int out_w, int channels,
                             int32_t *table)
{
    size_t groups = pb_resample_group_ints(out_w) / PB_RESAMPLE_GROUP_INTS;
    for (size_t g = 0; g < groups; g++) {
        int32_t *t = table + g * PB_RESAMPLE_GROUP_INTS;
        for (int k = 0; k < 4; k++) {
            for (int h = 0; h < 2; h++) {
                int j = group_pixel[k][h];
                size_t x = g * PB_RESAMPLE_GROUP_PIXELS + (size_t)j;
                if (x >= (size_t)out_w) /* the last group's padding repeats its last pixel */
                    x = (size_t)out_w - 1;
                t[TABLE_STARTS + j] = start_x[x] * channels;
                uint8_t shuffle[16];
                pixel_lanes(c0[x * (size_t)channels], channels, t + TABLE_COEFS + 8 * k + 4 * h,
                            shuffle);
                memcpy(t + TABLE_SHUFFLES + 8 * k + 4 * h, shuffle, sizeof(shuffle));
            }
        }
    }
}

size_t pb_resample_chunk_ints(int out_w, int channels)
{
    size_t n = (size_t)out_w * (size_t)channels;
    return (n + PB_RESAMPLE_CHUNK_VALUES - 1) / PB_RESAMPLE_CHUNK_VALUES * PB_RESAMPLE_CHUNK_INTS;
}

int pb_resample_chunk_table(const int32_t *first_tap, const int32_t *c0, size_t n, int channels,
                            int32_t *table)
{
    int widest = 0;
    for (size_t at = 0; at < n; at += PB_RESAMPLE_CHUNK_VALUES, table += PB_RESAMPLE_CHUNK_INTS) {
        const int32_t *tap = first_tap + at;
        size_t count = n - at < PB_RESAMPLE_CHUNK_VALUES ? n - at : PB_RESAMPLE_CHUNK_VALUES;
        int32_t first = tap[0], last = tap[0];
        for (size_t lane = 1; lane < count; lane++) {
            first = tap[lane] < first ? tap[lane] : first;
            last = tap[lane] > last ? tap[lane] : last;
        }
        int span = last + channels - first + 1; /* row values from first to the last b */
        if (span > PB_RESAMPLE_CHUNK_SPAN)
            return 0;
        widest = span > widest ? span : widest;
        memset(table, 0, PB_RESAMPLE_CHUNK_INTS * sizeof(int32_t));
        table[0] = first;
        uint16_t index[2 * PB_RESAMPLE_CHUNK_VALUES] = {0};
        for (size_t lane = 0; lane < count; lane++) {
            bool swap;
            table[32 + lane] = coef_pair(c0[at + lane], &swap);
            int32_t a = tap[lane] - first;
            index[2 * lane] = (uint16_t)(a + (swap ? channels : 0));
            index[2 * lane + 1] = (uint16_t)(a + (swap ? 0 : channels));
        }
        memcpy(table + 16, index, sizeof(index));
    }
    return widest;
}

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))
#define ROW_SHIFT (PB_RESAMPLE_COEF_BITS - PB_RESAMPLE_ROW_BITS)
#define OUT2_SHIFT (PB_RESAMPLE_COEF2_BITS + PB_RESAMPLE_ROW_BITS)

bool pb_resample_x86_avx2(void)
{
    return __builtin_cpu_supports("avx2");
}

/* The rows of a 2-tap vertical pass: the one with the larger weight is
 * the base, the other's weight k is at most one half. Returns the word pair
 * (k >> 7, k & 127) that multiplies (d << 7, d) into k * d
 * (kernels/resample_x86.h). */
static int32_t two_taps(const uint8_t *src, size_t stride, const int32_t *coef,
                        const uint8_t **base, const uint8_t **other)
{
    bool top_base = coef[1] <= 1 << (PB_RESAMPLE_COEF_BITS - 1);
    *base = top_base ? src : src + stride;
    *other = top_base ? src + stride : src;
    int32_t k = top_base ? coef[1] : coef[0];
    return (k >> 7) | (k & 127) << 16;
}

AVX2 void pb_resample_vertical16_avx2(const uint8_t *src, size_t stride, const int32_t *coef,
                                      int taps, size_t n, int16_t *row)
{
    size_t i = 0;
    if (taps == 1) {
        for (; i + 16 <= n; i += 16) {
            __m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(src + i)));
            _mm256_storeu_si256((__m256i *)(row + i), _mm256_slli_epi16(v, PB_RESAMPLE_ROW_BITS));
        }
        for (; i < n; i++)
            row[i] = (int16_t)(src[i] << PB_RESAMPLE_ROW_BITS);
        return;
    }
    const uint8_t *base, *other;
    const __m256i k_pair = _mm256_set1_epi32(two_taps(src, stride, coef, &base, &other));
    const __m256i half = _mm256_set1_epi32(1 << (ROW_SHIFT - 1));
    for (; i + 16 <= n; i += 16) {
        __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(base + i)));
        __m256i o = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(other + i)));
        __m256i d = _mm256_sub_epi16(o, b), d7 = _mm256_slli_epi16(d, 7);
        __m256i lo = _mm256_madd_epi16(_mm256_unpacklo_epi16(d7, d), k_pair);
        __m256i hi = _mm256_madd_epi16(_mm256_unpackhi_epi16(d7, d), k_pair);
        lo = _mm256_srai_epi32(_mm256_add_epi32(lo, half), ROW_SHIFT);
        hi = _mm256_srai_epi32(_mm256_add_epi32(hi, half), ROW_SHIFT);
        __m256i v = _mm256_add_epi16(_mm256_packs_epi32(lo, hi),
                                     _mm256_slli_epi16(b, PB_RESAMPLE_ROW_BITS));
        _mm256_storeu_si256((__m256i *)(row + i), v);
    }
    for (; i < n; i++) /* the portable formula, the same value */
        row[i] = (int16_t)((coef[0] * (int32_t)src[i] + coef[1] * (int32_t)src[stride + i] +
                            (1 << (ROW_SHIFT - 1))) >>
                           ROW_SHIFT);
}

/* Two output pixels, one per 128-bit half: each half loads the 8 row
 * values at its pixel's start, the shuffle makes (a, b) or (b, a) word
 * pairs and the lane plus the multiply-add is c0 * a + c1 * b. */
static inline AVX2 __m256i pixel_pair(const int16_t *row, int32_t lo, int32_t hi,
                                      const int32_t *coef, const int32_t *shuffle)
{
    const __m256i half = _mm256_set1_epi32(1 << (OUT2_SHIFT - 1));
    __m256i v = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(row + lo)));
    v = _mm256_inserti128_si256(v, _mm_loadu_si128((const __m128i *)(row + hi)), 1);
    __m256i lane = _mm256_shuffle_epi8(v, _mm256_loadu_si256((const __m256i *)shuffle));
    __m256i sum =
        _mm256_add_epi32(lane, _mm256_madd_epi16(lane, _mm256_loadu_si256((const __m256i *)coef)));
    /* c0 * a + c1 * b + half < 2^31: never negative. */
    return _mm256_srli_epi32(_mm256_add_epi32(sum, half), OUT2_SHIFT);
}

AVX2 void pb_resample_horizontal16_avx2(const int16_t *row, const int32_t *table, int channels,
                                        int out_w, uint8_t *out)
{
    /* The 3 bytes of each pixel's 4, at the start of each 128-bit half,
     * then the two halves' 12 bytes joined. */
    const __m256i squeeze =
        _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0, 1, 2, 4, 5, 6,
                         8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    const __m256i join = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
    size_t row_bytes = (size_t)out_w * (size_t)channels;
    size_t group_bytes = (size_t)PB_RESAMPLE_GROUP_PIXELS * (size_t)channels;
    for (size_t at = 0; at < row_bytes; at += group_bytes, table += PB_RESAMPLE_GROUP_INTS) {
        const int32_t *s = table + TABLE_STARTS, *coef = table + TABLE_COEFS;
        const int32_t *shuffle = table + TABLE_SHUFFLES;
        __m256i v[4];
        for (int k = 0; k < 4; k++)
            v[k] = pixel_pair(row, s[group_pixel[k][0]], s[group_pixel[k][1]], coef + 8 * k,
                              shuffle + 8 * k);
        /* Words (0 1 | 2 3) and (4 5 | 6 7), bytes (0 1 4 5 | 2 3 6 7),
         * then 64-bit lanes in order: pixels 0..7, 4 bytes each. */
        __m256i bytes =
            _mm256_packus_epi16(_mm256_packus_epi32(v[0], v[1]), _mm256_packus_epi32(v[2], v[3]));
        bytes = _mm256_permute4x64_epi64(bytes, 0xd8);
        if (channels == 3)
            bytes = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(bytes, squeeze), join);
        uint8_t *d = out + at;
        if (at + 32 <= row_bytes) { /* bytes past the group's are written by the next */
            _mm256_storeu_si256((__m256i *)d, bytes);
        } else {
            uint8_t last[32];
            _mm256_storeu_si256((__m256i *)last, bytes);
            memcpy(d, last, row_bytes - at < group_bytes ? row_bytes - at : group_bytes);
        }
    }
}

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

bool pb_resample_x86_avx512(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

/* pb_resample_vertical16_avx2's arithmetic on 32 values; mask: which of
 * them to read and write. */
static inline AVX512 void taps2_avx512(const uint8_t *base, const uint8_t *other, __m512i k_pair,
                                       __mmask32 mask, int16_t *row)
{
    const __m512i half = _mm512_set1_epi32(1 << (ROW_SHIFT - 1));
    __m512i b = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, base));
    __m512i o = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, other));
    __m512i d = _mm512_sub_epi16(o, b), d7 = _mm512_slli_epi16(d, 7);
    __m512i lo = _mm512_madd_epi16(_mm512_unpacklo_epi16(d7, d), k_pair);
    __m512i hi = _mm512_madd_epi16(_mm512_unpackhi_epi16(d7, d), k_pair);
    lo = _mm512_srai_epi32(_mm512_add_epi32(lo, half), ROW_SHIFT);
    hi = _mm512_srai_epi32(_mm512_add_epi32(hi, half), ROW_SHIFT);
    __m512i v =
        _mm512_add_epi16(_mm512_packs_epi32(lo, hi), _mm512_slli_epi16(b, PB_RESAMPLE_ROW_BITS));
    _mm512_mask_storeu_epi16(row, mask, v);
}

AVX512 void pb_resample_vertical16_avx512(const uint8_t *src, size_t stride, const int32_t *coef,
                                          int taps, size_t n, int16_t *row)
{
    if (taps != 2) {
        pb_resample_vertical16_avx2(src, stride, coef, taps, n, row);
        return;
    }
    const uint8_t *base, *other;
    const __m512i k_pair = _mm512_set1_epi32(two_taps(src, stride, coef, &base, &other));
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        taps2_avx512(base + i, other + i, k_pair, ~(__mmask32)0, row + i);
    if (i < n) /* the last values, masked: nothing read or written past n */
        taps2_avx512(base + i, other + i, k_pair, (__mmask32)((1ull << (n - i)) - 1), row + i);
}

/* The 16 output values of one chunk, 0..255 in 32-bit lanes; narrow: its
 * taps are all in the first 32 row values from its start. */
static inline AVX512 __m512i chunk(const int16_t *row, const int32_t *table, bool narrow)
{
    const __m512i half = _mm512_set1_epi32(1 << (OUT2_SHIFT - 1));
    const int16_t *window = row + table[0];
    __m512i index = _mm512_loadu_si512(table + 16), lane;
    if (narrow)
        lane = _mm512_permutexvar_epi16(index, _mm512_loadu_si512(window));
    else
        lane = _mm512_permutex2var_epi16(_mm512_loadu_si512(window), index,
                                         _mm512_loadu_si512(window + 32));
    __m512i sum = _mm512_add_epi32(lane, _mm512_madd_epi16(lane, _mm512_loadu_si512(table + 32)));
    return _mm512_srli_epi32(_mm512_add_epi32(sum, half), OUT2_SHIFT);
}

/* One row; inlined twice, narrow a constant in each. */
static inline AVX512 void horizontal16_avx512(const int16_t *row, const int32_t *table, size_t n,
                                              bool narrow, uint8_t *out)
{
    /* Four chunks packed to bytes hold, in each 128-bit lane, 4 values of
     * each chunk: this puts each chunk's 16 together, in order. */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const size_t step = PB_RESAMPLE_CHUNK_INTS;
    size_t at = 0;
    for (; at + 4 * PB_RESAMPLE_CHUNK_VALUES <= n; at += 4 * PB_RESAMPLE_CHUNK_VALUES) {
        __m512i v0 = chunk(row, table, narrow), v1 = chunk(row, table + step, narrow);
        __m512i v2 = chunk(row, table + 2 * step, narrow);
        __m512i v3 = chunk(row, table + 3 * step, narrow);
        table += 4 * step;
        __m512i bytes =
            _mm512_packus_epi16(_mm512_packus_epi32(v0, v1), _mm512_packus_epi32(v2, v3));
        _mm512_storeu_si512(out + at, _mm512_permutexvar_epi32(order, bytes));
    }
    for (; at < n; at += PB_RESAMPLE_CHUNK_VALUES, table += step) {
        __m128i bytes = _mm512_cvtepi32_epi8(chunk(row, table, narrow));
        if (at + PB_RESAMPLE_CHUNK_VALUES <= n)
            _mm_storeu_si128((__m128i *)(out + at), bytes);
        else
            _mm_mask_storeu_epi8(out + at, (__mmask16)((1u << (n - at)) - 1), bytes);
    }
}

AVX512 void pb_resample_horizontal16_avx512(const int16_t *row, const int32_t *table, size_t n,
                                            bool narrow, uint8_t *out)
{
    if (narrow)
        horizontal16_avx512(row, table, n, true, out);
    else
        horizontal16_avx512(row, table, n, false, out);
}

#else

bool pb_resample_x86_avx2(void)
{
    return false;
}

bool pb_resample_x86_avx512(void)
{
    return false;
}

void pb_resample_horizontal16_avx512(const int16_t *row, const int32_t *table, size_t n,
                                     bool narrow, uint8_t *out)
{
    (void)row, (void)table, (void)n, (void)narrow, (void)out;
}

void pb_resample_vertical16_avx512(const uint8_t *src, size_t stride, const int32_t *coef, int taps,
                                   size_t n, int16_t *row)
{
    (void)src, (void)stride, (void)coef, (void)taps, (void)n, (void)row;
}

/* Never called: pb_resample_x86_avx2() is false here. */
void pb_resample_vertical16_avx2(const uint8_t *src, size_t stride, const int32_t *coef, int taps,
                                 size_t n, int16_t *row)
{
    (void)src, (void)stride, (void)coef, (void)taps, (void)n, (void)row;
}

void pb_resample_horizontal16_avx2(const int16_t *row, const int32_t *table, int channels,
                                   int out_w, uint8_t *out)
{
    (void)row, (void)table, (void)channels, (void)out_w, (void)out;
}

#endif
