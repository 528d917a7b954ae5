/* What the still-image decoders share: `jpeg` (libjpeg-turbo,
 * decoders/jpeg.c), `image` (PNG, WebP and BMP through libavcodec,
 * decoders/image_av.c) and `auto` (either one, chosen by the file's magic
 * bytes, decoders/auto.c). They take one options struct, so `auto` hands
 * its options to both; each decoder's table lists the fields it honours.
 * The helpers declared here are decoders/image.c. */
#ifndef PB_DECODERS_IMAGE_H
#define PB_DECODERS_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decoders/decoder.h"

enum pb_image_output { PB_IMAGE_RGB = 0, PB_IMAGE_BGR, PB_IMAGE_GRAY };
/* PB_SCALE_WINDOW: full size, except that a window decoded for the crop
 * stage after decode (fused_crop) is DCT-reduced while it stays at least
 * twice that stage's output. */
enum pb_image_scale {
    PB_SCALE_1 = 0,
    PB_SCALE_1_2,
    PB_SCALE_1_4,
    PB_SCALE_1_8,
    PB_SCALE_AUTO,
    PB_SCALE_WINDOW
};
enum pb_image_cmyk { PB_CMYK_CONVERT = 0, PB_CMYK_REJECT };
enum pb_image_dct { PB_DCT_ACCURATE = 0, PB_DCT_FAST };

struct pb_image_opts {
    int output;            /* enum pb_image_output                        */
    int scale;             /* enum pb_image_scale (JPEG only)             */
    int cmyk;              /* enum pb_image_cmyk (JPEG only)              */
    bool exif_orientation; /* JPEG only                                   */
    bool strict;           /* JPEG: libjpeg-turbo warnings are errors     */
    int dct;               /* enum pb_image_dct (JPEG only)               */
    bool fast_upsample;    /* JPEG only                                   */
    int64_t max_pixels;    /* width x height of the encoded image, at most */
    int64_t plan_width;    /* decoded size the buffers start out sized for */
    int64_t plan_height;
    bool fused_crop;       /* JPEG: decode only the next crop's window     */
};

/* The jpeg decoder's option table (every field of struct pb_image_opts)
 * and counters ("scaled", "progressive", "grayscale", "cmyk"), which
 * `auto` takes as its own. */
extern const struct pb_opt pb_jpeg_opts[];
extern const char *const pb_jpeg_counters[];

/* A JPEG's width and height from its frame header (SOF), read from the
 * first len bytes of the file; false when they do not hold one. */
bool pb_jpeg_dimensions(const uint8_t *data, size_t len, int *width, int *height);

/* The decoders' output_channels: 1 for output: gray, else 3. */
int pb_image_output_channels(const void *opts);

/* The output a still-image decoder plans for before it has seen an image:
 * plan_height x plan_width pixels with the channels o->output asks for. */
static inline void pb_image_plan_output(const struct pb_image_opts *o, struct pb_stage_plan *out)
{
    int channels = pb_image_output_channels(o);
    out->shape = (struct pb_shape){.dtype = PB_DTYPE_U8,
                                   .frames = 1,
                                   .height = (int32_t)o->plan_height,
                                   .width = (int32_t)o->plan_width,
                                   .channels = channels,
                                   .layout = PB_LAYOUT_THWC};
    out->max_bytes = pb_shape_bytes(&out->shape);
}

/* The kind of image bytes start with, from their magic numbers. */
enum pb_image_kind {
    PB_IMAGE_UNKNOWN = 0,
    PB_IMAGE_JPEG,
    PB_IMAGE_PNG,
    PB_IMAGE_WEBP,
    PB_IMAGE_BMP,
};
enum pb_image_kind pb_image_sniff(const uint8_t *bytes, size_t len);

/* The name a sample's messages give: its path, or "(sample)" when it has
 * none. The string is the sample's own, or a constant. */
const char *pb_image_sample_name(const struct pb_sample *s);

extern const struct pb_decoder_ops pb_decoder_jpeg;
extern const struct pb_decoder_ops pb_decoder_image;
extern const struct pb_decoder_ops pb_decoder_auto;

#endif
