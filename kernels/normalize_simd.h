/* normalize's vector path (kernels/normalize_simd.c), used by
 * pb_normalize_u8 and pb_normalize_mirrored_u8 for their common case. */
#ifndef PB_KERNELS_NORMALIZE_SIMD_H
#define PB_KERNELS_NORMALIZE_SIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/normalize_lut.h"

/* One frame of 3-channel uint8 pixels, height x width, to float32 from
 * lut's scale and bias (the same values as lut->f32, bit for bit), rows
 * mirrored or not: planar into d0, d1, d2, or interleaved into d0 when d1
 * is NULL. Returns false, having written nothing, where the CPU or the
 * build has no vector path; the caller then uses the scalar one. */
bool pb_normalize_rgb_f32_simd(const uint8_t *s, size_t height, size_t width,
                               const struct pb_normalize_lut *lut, bool mirrored, float *d0,
                               float *d1, float *d2);

#endif
