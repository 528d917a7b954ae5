/* The hot loops of kernels/resample.c written for x86 vector units (AVX2),
 * chosen at run time by the CPU. Private to kernels/resample.c: each one
 * computes exactly what the portable loop it replaces computes, bit for bit
 * (tests/test_resample.c), only faster. On other CPUs and architectures
 * pb_resample_x86_avx2() says false and the portable loops run. */
#ifndef PB_KERNELS_RESAMPLE_X86_H
#define PB_KERNELS_RESAMPLE_X86_H

#include <stdbool.h>
#include <stdint.h>

/* Whether this CPU runs the AVX2 loops (false off x86). Cheap: a load. */
bool pb_resample_x86_avx2(void);

/* Output pixels a group of the horizontal pass makes at once; lane_coef
 * holds PB_RESAMPLE_GROUP_LANES coefficients per group. */
#define PB_RESAMPLE_GROUP_PIXELS 8
#define PB_RESAMPLE_GROUP_LANES 32

/* Where pixel j of a group (0..7) sits among the group's lanes: vector
 * j_vector[j] (of four, eight 32-bit lanes each), half j_half[j] (four
 * lanes), so that packing the four vectors puts the pixels in order. */
extern const uint8_t pb_resample_group_vector[PB_RESAMPLE_GROUP_PIXELS];
extern const uint8_t pb_resample_group_half[PB_RESAMPLE_GROUP_PIXELS];

/* The 2-tap horizontal pass (bilinear) of one row for 3 or 4 channels:
 * out[x * channels + c] = ((b << 16) + c0 * (a - b) + half) >> 23 with
 * a = row[start_x[x] * channels + c], b = the value channels further, c0
 * the pixel's 16-bit coefficient: lane_coef (per group of 8 pixels, the
 * coefficient repeated in its 4 lanes) for whole groups, elem_coef0 (per
 * output value) for the last out_w % 8 pixels. row has 4 values of slack
 * after its end. Writes exactly out_w * channels bytes. */
void pb_resample_h2_avx2(const int32_t *row, const int32_t *start_x, const int32_t *lane_coef,
                         const int32_t *elem_coef0, int channels, int out_w, uint8_t *out);

#endif
