/* The bilinear (2-tap) hot loops of kernels/resample.c written for x86
 * vector units (AVX2, AVX-512), chosen at run time by the CPU. Private to
 * kernels/resample.c. They compute exactly what the portable loops
 * compute, bit for bit (tests/test_resample.c), only in 16-bit lanes:
 *
 * The vertical pass keeps its row values (0..255 << PB_RESAMPLE_ROW_BITS,
 * at most 32640) as int16. With 2 taps of Q22 coefficients c and 2^22 - c
 * it takes the smaller one, k <= 2^21, with the tap it weighs as the
 * other, and writes (k * (other - base) + 2^14) >> 15 plus base << 7,
 * which is the portable (ca * a + cb * b + 2^14) >> 15 exactly; k * d is
 * one vpmaddwd of (d << 7, d) by (k >> 7, k & 127).
 *
 * The horizontal pass forms c0 * a + c1 * b (c0 + c1 = 2^16) as a 32-bit
 * lane holding the words (a, b), plus vpmaddwd of it by (c0 - 1, -c0): both
 * fit int16 when c0 <= 2^15; otherwise the lane holds (b, a) and the
 * coefficients are (c1 - 1, -c1). Adding 2^22 and shifting by 23 gives the
 * portable ((b << 16) + c0 * (a - b) + 2^22) >> 23.
 *
 * On other CPUs and architectures pb_resample_x86_avx2() says false and
 * the portable loops run. bench/peers/resample_rate.c times each set. */
#ifndef PB_KERNELS_RESAMPLE_X86_H
#define PB_KERNELS_RESAMPLE_X86_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether this CPU runs the AVX2 loops (false off x86). Cheap: a load. */
bool pb_resample_x86_avx2(void);

/* The AVX2 horizontal pass makes 8 output pixels at a time; its table holds
 * PB_RESAMPLE_GROUP_INTS int32 per group of 8 (the last group padded). */
#define PB_RESAMPLE_GROUP_PIXELS 8
#define PB_RESAMPLE_GROUP_INTS 72

/* int32 the group table of out_w output pixels takes. */
size_t pb_resample_group_ints(int out_w);

/* Fills the group table of the horizontal pass for channels (3 or 4):
 * each output pixel x's first source value in the row, start_x[x] *
 * channels, and its 16-bit first coefficient c0[x] (0..2^16). */
void pb_resample_group_table(const int32_t *start_x, const int32_t *c0, int out_w, int channels,
                             int32_t *table);

/* The vertical pass of one output row, 1 or 2 taps of Q22 coefficients
 * (summing to 2^22): n row values as int16 from the rows of src, stride
 * bytes apart. */
void pb_resample_vertical16_avx2(const uint8_t *src, size_t stride, const int32_t *coef, int taps,
                                 size_t n, int16_t *row);

/* Defined values the horizontal passes may read after a row's end. */
#define PB_RESAMPLE_ROW16_SLACK 64

/* The 2-tap horizontal pass of one row, 3 or 4 channels, from the group
 * table: writes exactly out_w * channels bytes. row has
 * PB_RESAMPLE_ROW16_SLACK defined values after its end. */
void pb_resample_horizontal16_avx2(const int16_t *row, const int32_t *table, int channels,
                                   int out_w, uint8_t *out);

/* With AVX-512 (BW, VL), the horizontal pass works on chunks of 16 output
 * values: it loads the 64 row values from the chunk's first source value
 * and one vpermt2w makes all 16 (a, b) lanes at once, any channel count;
 * where every chunk of the row spans at most 32 values (downscaling by
 * less than about 1.5 for 3 channels), one load and the cheaper vpermw. A
 * chunk's table is PB_RESAMPLE_CHUNK_INTS int32: that first value, then
 * (at 16) the 32 word indices, then (at 32) the 16 coefficient pairs. */
#define PB_RESAMPLE_CHUNK_VALUES 16
#define PB_RESAMPLE_CHUNK_INTS 48
#define PB_RESAMPLE_CHUNK_SPAN 64
#define PB_RESAMPLE_CHUNK_SPAN_NARROW 32

/* Whether this CPU runs the AVX-512 loop (false off x86). */
bool pb_resample_x86_avx512(void);

/* int32 the chunk table of out_w output pixels of channels takes. */
size_t pb_resample_chunk_ints(int out_w, int channels);

/* Fills the chunk table of n output values from each one's first tap in
 * the row (the second is channels further) and 16-bit first coefficient
 * (pb_resampler's elem_start and elem_coef0). Returns the most row values
 * a chunk's taps span, or 0 when some span more than
 * PB_RESAMPLE_CHUNK_SPAN (downscaling by more than about 3.5 for 3
 * channels): the table is then unusable. */
int pb_resample_chunk_table(const int32_t *first_tap, const int32_t *c0, size_t n, int channels,
                            int32_t *table);

/* pb_resample_vertical16_avx2 with AVX-512, 32 values at a time. */
void pb_resample_vertical16_avx512(const uint8_t *src, size_t stride, const int32_t *coef, int taps,
                                   size_t n, int16_t *row);

/* The 2-tap horizontal pass of one row of n output values from the chunk
 * table (exactly n bytes); narrow: every chunk spans at most
 * PB_RESAMPLE_CHUNK_SPAN_NARROW values. row has PB_RESAMPLE_ROW16_SLACK
 * values of slack after its end. */
void pb_resample_horizontal16_avx512(const int16_t *row, const int32_t *table, size_t n,
                                     bool narrow, uint8_t *out);

#endif
