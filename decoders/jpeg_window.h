/* Decoding only the window a crop stage will read (fused decode and crop,
 * as DALI's decoder-crop does), through libjpeg-turbo's libjpeg API:
 * jpeg_crop_scanline narrows every row to the window's columns (rounded out
 * to iMCU boundaries), jpeg_skip_scanlines passes over the rows above it
 * without the inverse DCT, colour conversion and upsampling, and decoding
 * stops after its last row. When the stage resamples the window and the
 * window is at least twice its output on both axes, the window is decoded
 * reduced by DCT scaling (1/2, 1/4, 1/8), never below the output size.
 *
 * The decoded rows are the window widened to iMCU columns; the sample's
 * window (pipelines/stage.h) says where the requested one lies in them. */
#ifndef PB_DECODERS_JPEG_WINDOW_H
#define PB_DECODERS_JPEG_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decoders/image.h"
#include "decoders/sample.h"

struct pb_jpeg_window;

/* A per-worker windowed decoder for decoders with options o (output, dct,
 * fast_upsample, strict are honoured). NULL when out of memory. */
struct pb_jpeg_window *pb_jpeg_window_new(const struct pb_image_opts *o);
void pb_jpeg_window_free(struct pb_jpeg_window *w);

/* The further DCT scaling denominator (1, 2, 4 or 8) for a window: the
 * largest that leaves it at least as large as the stage's output, when the
 * stage resamples; 1 otherwise. */
int pb_jpeg_window_scale(const struct pb_window *window);

/* Decodes window of the JPEG in s->in into s->out and sets s->out_shape,
 * s->out_bytes, s->window and s->window_set. On entry *denom is the DCT
 * scaling denominator (1, 2, 4, 8) of the image the window was drawn on,
 * in whose pixels the window is; on return, the one used (larger when the
 * window allows, see pb_jpeg_window_scale). channels is the output's
 * channel count (1 or 3). Returns PB_OK, PB_ERR_NOSPACE with s->out_bytes
 * set when the output does not fit, or PB_ERR_DATA with s->msg for a
 * corrupt file. */
int pb_jpeg_window_decode(struct pb_jpeg_window *w, struct pb_sample *s,
                          const struct pb_window *window, int channels, int *denom);

#endif
