/* AVX2 loops of kernels/resample.c (kernels/resample_x86.h), compiled for
 * AVX2 function by function (target attributes), so the rest of pbench
 * keeps the baseline x86-64 instruction set and runs on any x86-64 CPU. */
#include "kernels/resample_x86.h"

#include <string.h>

#include "kernels/image.h"

const uint8_t pb_resample_group_vector[PB_RESAMPLE_GROUP_PIXELS] = {0, 1, 0, 1, 2, 3, 2, 3};
const uint8_t pb_resample_group_half[PB_RESAMPLE_GROUP_PIXELS] = {0, 0, 1, 1, 0, 0, 1, 1};

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))
#define OUT2_SHIFT (PB_RESAMPLE_COEF2_BITS + PB_RESAMPLE_ROW_BITS)

bool pb_resample_x86_avx2(void)
{
    return __builtin_cpu_supports("avx2");
}

/* The formula of horizontal_pass2 (kernels/resample.c) on 32-bit lanes. */
static inline AVX2 __m256i taps2(__m256i a, __m256i b, __m256i c0)
{
    const __m256i half = _mm256_set1_epi32(1 << (OUT2_SHIFT - 1));
    __m256i v = _mm256_add_epi32(_mm256_slli_epi32(b, PB_RESAMPLE_COEF2_BITS),
                                 _mm256_mullo_epi32(c0, _mm256_sub_epi32(a, b)));
    /* At most 255.5 << 23 before the shift: never negative. */
    return _mm256_srli_epi32(_mm256_add_epi32(v, half), OUT2_SHIFT);
}

static inline AVX2 __m256i load_2x4(const int32_t *lo, const int32_t *hi)
{
    __m256i v = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo));
    return _mm256_inserti128_si256(v, _mm_loadu_si128((const __m128i *)hi), 1);
}

/* Two output pixels (the 4 values from each pixel's first source value, 3
 * or 4 of them used) in the halves of a vector. */
static inline AVX2 __m256i pixel_pair(const int32_t *row, int32_t lo, int32_t hi, int channels,
                                      const int32_t *coef)
{
    __m256i a = load_2x4(row + lo, row + hi);
    __m256i b = load_2x4(row + lo + channels, row + hi + channels);
    return taps2(a, b, _mm256_loadu_si256((const __m256i *)coef));
}

/* One pixel at the end of a row, 4 lanes. */
static inline AVX2 __m128i last_pixel(const int32_t *p, int channels, int32_t coef)
{
    const __m128i half = _mm_set1_epi32(1 << (OUT2_SHIFT - 1));
    __m128i a = _mm_loadu_si128((const __m128i *)p);
    __m128i b = _mm_loadu_si128((const __m128i *)(p + channels));
    __m128i v = _mm_add_epi32(_mm_slli_epi32(b, PB_RESAMPLE_COEF2_BITS),
                              _mm_mullo_epi32(_mm_set1_epi32(coef), _mm_sub_epi32(a, b)));
    v = _mm_srli_epi32(_mm_add_epi32(v, half), OUT2_SHIFT);
    v = _mm_packus_epi32(v, v);
    return _mm_packus_epi16(v, v);
}

AVX2 void pb_resample_h2_avx2(const int32_t *row, const int32_t *start_x, const int32_t *lane_coef,
                              const int32_t *elem_coef0, int channels, int out_w, uint8_t *out)
{
    /* The 4 bytes of each 32-bit lane's pixel, 3 of them for 3 channels,
     * packed at the start of each 128-bit half. */
    const __m256i squeeze = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,
                                             0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1,
                                             -1);
    const __m256i join = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
    size_t row_bytes = (size_t)out_w * (size_t)channels;
    int x = 0;
    for (; x + PB_RESAMPLE_GROUP_PIXELS <= out_w; x += PB_RESAMPLE_GROUP_PIXELS) {
        int32_t s[PB_RESAMPLE_GROUP_PIXELS];
        for (int j = 0; j < PB_RESAMPLE_GROUP_PIXELS; j++)
            s[j] = start_x[x + j] * channels;
        const int32_t *coef = lane_coef + (size_t)x / PB_RESAMPLE_GROUP_PIXELS *
                                              PB_RESAMPLE_GROUP_LANES;
        /* Pixels (0, 2), (1, 3), (4, 6), (5, 7): pb_resample_group_*. */
        __m256i v0 = pixel_pair(row, s[0], s[2], channels, coef);
        __m256i v1 = pixel_pair(row, s[1], s[3], channels, coef + 8);
        __m256i v2 = pixel_pair(row, s[4], s[6], channels, coef + 16);
        __m256i v3 = pixel_pair(row, s[5], s[7], channels, coef + 24);
        /* Words (0 1 | 2 3) and (4 5 | 6 7), bytes (0 1 4 5 | 2 3 6 7),
         * then 64-bit lanes in order: pixels 0..7, 4 bytes each. */
        __m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(v0, v1),
                                            _mm256_packus_epi32(v2, v3));
        bytes = _mm256_permute4x64_epi64(bytes, 0xd8);
        uint8_t *d = out + (size_t)x * (size_t)channels;
        if (channels == 4) {
            _mm256_storeu_si256((__m256i *)d, bytes);
            continue;
        }
        bytes = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(bytes, squeeze), join);
        if ((size_t)(d - out) + 32 <= row_bytes) { /* the 8 bytes past are written later */
            _mm256_storeu_si256((__m256i *)d, bytes);
        } else {
            _mm_storeu_si128((__m128i *)d, _mm256_castsi256_si128(bytes));
            _mm_storel_epi64((__m128i *)(d + 16), _mm256_extracti128_si256(bytes, 1));
        }
    }
    for (; x < out_w; x++) {
        size_t i = (size_t)x * (size_t)channels;
        int32_t pixel = _mm_cvtsi128_si32(
            last_pixel(row + (size_t)start_x[x] * (size_t)channels, channels, elem_coef0[i]));
        memcpy(out + i, &pixel, (size_t)channels);
    }
}

#else

bool pb_resample_x86_avx2(void)
{
    return false;
}

void pb_resample_h2_avx2(const int32_t *row, const int32_t *start_x, const int32_t *lane_coef,
                         const int32_t *elem_coef0, int channels, int out_w, uint8_t *out)
{
    /* Never called: pb_resample_x86_avx2() is false here. */
    (void)row, (void)start_x, (void)lane_coef, (void)elem_coef0, (void)channels, (void)out_w,
        (void)out;
}

#endif
