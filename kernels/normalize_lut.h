/* normalize's per-channel tables: what the scalar loops
 * (kernels/image.c), the vector path (kernels/normalize_simd.c) and the
 * GPU kernels read, built once per stage instance before the per-sample
 * path. */
#ifndef PB_KERNELS_NORMALIZE_LUT_H
#define PB_KERNELS_NORMALIZE_LUT_H

#include <stdbool.h>
#include <stdint.h>

#define PB_NORMALIZE_MAX_CHANNELS 4

/* Per output channel, the normalized value of each of the 256 inputs,
 * (x / pixel_scale - mean) / std: as float32, x * scale + bias with scale
 * and bias that value's two float coefficients and one rounding (fmaf),
 * which the vector path computes exactly so (within 5e-7 of the exact
 * value for the usual means and stds); as IEEE float16, computed in
 * double and rounded once (to nearest even). */
struct pb_normalize_lut {
    int channels;
    float scale[PB_NORMALIZE_MAX_CHANNELS], bias[PB_NORMALIZE_MAX_CHANNELS];
    float f32[PB_NORMALIZE_MAX_CHANNELS][256];
    uint16_t f16[PB_NORMALIZE_MAX_CHANNELS][256];
    /* Set by the caller after init to keep to the plain C loops (tests,
     * before/after timings): the same output bit for bit. */
    bool portable;
};

/* Fills lut for channels output channels (1..PB_NORMALIZE_MAX_CHANNELS)
 * from each channel's mean and std, for pixels divided by pixel_scale
 * first (255 for torchvision's ToTensor). Allocates nothing. */
void pb_normalize_lut_init(struct pb_normalize_lut *lut, int channels, const double *mean,
                           const double *std, double pixel_scale);

/* IEEE 754 binary16 bits of v, rounded to nearest even; overflow gives
 * infinity, NaN a quiet NaN. Bit-exact for every double. */
uint16_t pb_f16_from_double(double v);

#endif
