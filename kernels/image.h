/* CPU image kernels: resampling (bilinear, area, nearest) with fused crop,
 * crop, horizontal flip, color jitter and normalize, on uint8 images with
 * interleaved channels (HWC). A clip of T frames (THWC) is T images back to
 * back: the stages call a kernel once per frame with the same parameters.
 *
 * Plain C that gcc vectorizes at -O3 (kernels/ is built -O3), and for
 * bilinear resampling and 3-channel float32 normalize AVX2 and AVX-512
 * loops chosen at run time by the CPU (kernels/resample_x86.c,
 * kernels/normalize_simd.c: the same output bit for bit). Coefficient
 * tables live in caller-owned structs set up before the per-sample path;
 * nothing here allocates per call except pb_resampler_prepare when an input
 * is larger than any before (a rare, amortized growth). */
#ifndef PB_KERNELS_IMAGE_H
#define PB_KERNELS_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/base/pb.h"
#include "kernels/normalize_lut.h"
#include "kernels/tensor.h"

/* ---- seeded randomness for per-sample transform parameters ---------- */

/* splitmix64 stream: the same seed gives the same sequence everywhere. */
struct pb_rng {
    uint64_t state;
};

/* A stream for one stage of one sample: salt separates stages so a flip
 * decision does not repeat a crop's draw. */
static inline struct pb_rng pb_rng_for(uint64_t sample_seed, uint64_t salt)
{
    struct pb_rng r = {pb_mix64(sample_seed ^ pb_mix64(salt))};
    return r;
}

static inline uint64_t pb_rng_next(struct pb_rng *r)
{
    uint64_t v = pb_mix64(r->state);
    r->state += 0x9e3779b97f4a7c15ull;
    return v;
}

/* Uniform double in [lo, hi). */
static inline double pb_rng_uniform(struct pb_rng *r, double lo, double hi)
{
    double u = (double)(pb_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

/* Uniform integer in [0, n), n >= 1. */
static inline int64_t pb_rng_below(struct pb_rng *r, int64_t n)
{
    return (int64_t)(pb_rng_next(r) % (uint64_t)n);
}

/* ---- resampling ------------------------------------------------------ */

enum pb_interp {
    /* Half-pixel centres, two taps per axis, edge pixels repeated (OpenCV
     * INTER_LINEAR, torch interpolate align_corners=False, antialias=False). */
    PB_INTERP_BILINEAR = 0,
    /* Box filter: each output pixel is the mean of the source area it
     * covers, fractional edge pixels weighted by coverage (OpenCV
     * INTER_AREA when downscaling; the antialiased choice). */
    PB_INTERP_AREA,
    /* Source pixel floor((x + 0.5) * in / out) (PIL NEAREST, torch
     * "nearest-exact"). */
    PB_INTERP_NEAREST,
};

/* Which loops pb_resample_u8 may run; all give the same output. */
enum pb_resample_loops {
    PB_RESAMPLE_FASTEST = 0, /* the fastest this CPU has (AVX-512, AVX2)   */
    PB_RESAMPLE_NO_AVX512,   /* AVX2 at most                               */
    PB_RESAMPLE_PORTABLE,    /* plain C                                    */
};

/* Coefficient tables and scratch to resample an in_h x in_w region to
 * out_h x out_w. Prepared once per input size; reused while it repeats.
 *
 * Fixed point (kernels/resample.c), as Pillow-SIMD: each axis's weights
 * are computed in double and rounded to integers of PB_RESAMPLE_COEF_BITS
 * fraction bits whose sum is exactly one, so a pass never leaves 0..255.
 * The vertical pass keeps PB_RESAMPLE_ROW_BITS fraction bits for the
 * horizontal one, which rounds once to uint8. Every output is within 1 LSB
 * of the same resampling in double precision (tests/test_kernels.c). */
#define PB_RESAMPLE_COEF_BITS 22
#define PB_RESAMPLE_ROW_BITS 7
/* The horizontal coefficients of the 2-tap, 32-bit path (bilinear): 16
 * bits, so a row value (15 bits) times a coefficient fits int32. */
#define PB_RESAMPLE_COEF2_BITS 16

struct pb_resampler {
    enum pb_interp interp;
    int channels;
    int in_h, in_w, out_h, out_w; /* what the tables hold; 0 before use  */
    int taps_x, taps_y;           /* source pixels per output pixel       */
    int32_t *start_x, *start_y;   /* first source pixel, per output pixel */
    int32_t *coef_x, *coef_y;     /* taps coefficients per output pixel   */
    /* The 2-tap horizontal pass, per output value (out_w * channels):
     * offset of the first tap in the row and both coefficients, so its
     * loop is one gather per tap that vectorizes (AVX2). */
    int32_t *elem_start, *elem_coef0, *elem_coef1;
    /* The 2-tap passes on x86 (kernels/resample_x86.h), derived from the
     * tables above: AVX2's per group of 8 pixels (3 and 4 channels),
     * AVX-512's per chunk of 16 values (any channel count), and their
     * int16 rows (two: the horizontal pass runs a row behind). */
    int32_t *groups, *chunks;
    /* The loops prepare chose: 0 portable, 1 AVX2 (groups), 2 AVX-512
     * (chunks), 3 AVX-512 with narrow chunks; only the chosen one's table
     * is filled. */
    int x86_loops;
    int16_t *row16;
    int32_t *row;                 /* vertical pass: in_w * channels       */
    /* Set by the caller after init, before prepare, to keep to slower
     * loops than the CPU has (tests, before/after timings): the same
     * output bit for bit. */
    enum pb_resample_loops loops;
    size_t cap_x, cap_y, cap_row, cap_elem; /* capacities, elements       */
    size_t cap_groups, cap_chunks, cap_row16;
};

/* Sets up a resampler and sizes its tables for inputs up to max_in_h x
 * max_in_w and outputs up to out_h x out_w with channels channels. The
 * caller owns r and pairs this with pb_resampler_free. Returns PB_OK or
 * PB_ERR_NOMEM. */
int pb_resampler_init(struct pb_resampler *r, enum pb_interp interp, int max_in_h, int max_in_w,
                      int out_h, int out_w, int channels);

/* Computes the tables for this input and output size unless they are the
 * ones held. Grows the tables when the input is larger than any before
 * (the only allocation; PB_ERR_NOMEM if it fails). */
int pb_resampler_prepare(struct pb_resampler *r, int in_h, int in_w, int out_h, int out_w,
                         int channels);

/* Resamples one prepared image: src is the top-left pixel of the in_h x
 * in_w region (a crop window inside a larger image, rows src_row_bytes
 * apart), dst receives out_h x out_w x channels, rows packed. */
void pb_resample_u8(struct pb_resampler *r, const uint8_t *src, size_t src_row_bytes,
                    uint8_t *dst);

void pb_resampler_free(struct pb_resampler *r);

/* ---- crop, flip, color ---------------------------------------------- */

/* Copies the out_h x out_w window whose top-left corner is (top, left) of a
 * src_h x src_w x channels image to dst (packed). The window may reach
 * outside the image (negative top/left, or past the far edge): those
 * pixels are zero, as torchvision pads a crop larger than the image. */
void pb_crop_u8(const uint8_t *src, int src_h, int src_w, int channels, int top, int left,
                uint8_t *dst, int out_h, int out_w);

/* Mirrors an h x w x channels image left to right into dst (not in place). */
void pb_flip_h_u8(const uint8_t *src, int h, int w, int channels, uint8_t *dst);

/* Color jitter factors, torchvision's: 1 leaves the image unchanged. */
struct pb_jitter {
    float brightness; /* x * b                                             */
    float contrast;   /* c * x + (1 - c) * mean gray of the image           */
    float saturation; /* s * x + (1 - s) * gray of the pixel (3 channels)   */
};

/* Applies brightness, then contrast, then saturation to one image of
 * pixels pixels (1 or 3 channels; other counts are copied unchanged), in
 * float with a clamp to 0..255 after each step, rounding once at the end.
 * Gray is 0.299 R + 0.587 G + 0.114 B; a 1-channel image is its own gray,
 * so saturation leaves it unchanged. src and dst may be the same. */
void pb_color_jitter_u8(const uint8_t *src, size_t pixels, int channels,
                        const struct pb_jitter *jitter, uint8_t *dst);

/* ---- normalize ------------------------------------------------------ */

/* The tables (struct pb_normalize_lut, pb_normalize_lut_init) are in
 * kernels/normalize_lut.h. */

/* Normalizes a THWC uint8 clip (frames = 1 for an image) of in_channels
 * into dst as dtype (F32, F16 from the table, or U8: the pixels unchanged)
 * in layout (THWC, TCHW or CTHW) with out_channels channels (at most the
 * table's). A 1-channel input with more output channels repeats its gray
 * value into each (as converting gray to RGB does); otherwise in_channels
 * must equal out_channels. */
void pb_normalize_u8(const uint8_t *src, int frames, int height, int width, int in_channels,
                     int out_channels, const struct pb_normalize_lut *lut, enum pb_dtype dtype,
                     enum pb_layout layout, void *dst);

/* pb_normalize_u8 with every row of every frame mirrored left to right
 * (pb_flip_h_u8 then pb_normalize_u8, in one pass): the values are the
 * same, bit for bit. */
void pb_normalize_mirrored_u8(const uint8_t *src, int frames, int height, int width,
                              int in_channels, int out_channels,
                              const struct pb_normalize_lut *lut, enum pb_dtype dtype,
                              enum pb_layout layout, void *dst);

/* ---- random_resized_crop parameters --------------------------------- */

/* A crop window: top-left corner and size, in source pixels. */
struct pb_crop_box {
    int top, left, height, width;
};

/* torchvision's RandomResizedCrop.get_params: up to ten draws of an area
 * fraction in [scale_lo, scale_hi] and a log-uniform aspect ratio (width /
 * height) in [ratio_lo, ratio_hi]; the first window that fits gets a
 * uniform position. Otherwise the centre crop with the ratio clamped into
 * the range. Returns true when a draw fitted, false for the fallback. */
bool pb_random_resized_crop_box(struct pb_rng *rng, int height, int width, double scale_lo,
                                double scale_hi, double ratio_lo, double ratio_hi,
                                struct pb_crop_box *box);

#endif
