/* normalize's tables (kernels/normalize_lut.h). */
#include "kernels/normalize_lut.h"

#include <math.h>
#include <string.h>

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
        lut->scale[c] = (float)(1.0 / (pixel_scale * std[c]));
        lut->bias[c] = (float)(-mean[c] / std[c]);
        for (int x = 0; x < 256; x++) {
            double v = ((double)x / pixel_scale - mean[c]) / std[c];
            lut->f32[c][x] = fmaf((float)x, lut->scale[c], lut->bias[c]);
            lut->f16[c][x] = pb_f16_from_double(v);
        }
    }
}
