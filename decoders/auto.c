/* The `auto` decoder: chooses by the file's magic bytes (pb_image_sniff),
 * sending JPEGs to `jpeg` (decoders/jpeg.c) and PNG, WebP and BMP files to
 * `image` (decoders/image_av.c), each with auto's options. Its options are
 * the jpeg decoder's table (pb_jpeg_opts: every field of struct
 * pb_image_opts, of which `image` honours a part) and it reports jpeg's
 * counters. A file neither takes, or a PNG, WebP or BMP file in a build
 * without `image`, is a bad sample whose message says why. */
#include "decoders/image.h"

#include <stdio.h>
#include <stdlib.h>

#include "bench/base/pb.h"

struct auto_state {
    void *jpeg;
    void *image;
};

static void auto_cleanup(void *state)
{
    struct auto_state *st = state;
    if (!st)
        return;
    if (st->jpeg)
        pb_decoder_jpeg.cleanup(st->jpeg);
    if (st->image)
        pb_decoder_image.cleanup(st->image);
    free(st);
}

static int auto_init(void **state, const void *opts, const struct pb_stage_plan *in,
                     struct pb_stage_plan *out, char *msg, size_t msglen)
{
    struct auto_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    int rc = pb_decoder_jpeg.init(&st->jpeg, opts, in, out, msg, msglen);
    if (rc == PB_OK && !pb_decoder_image.unavailable_reason) {
        struct pb_stage_plan image_out = *out;
        rc = pb_decoder_image.init(&st->image, opts, in, &image_out, msg, msglen);
    }
    if (rc != PB_OK) {
        auto_cleanup(st);
        return rc;
    }
    *state = st;
    return PB_OK;
}

/* Formats up to the first four bytes as hex, e.g. "74 65 78 74". */
static void first_bytes(char *buf, size_t buflen, const uint8_t *b, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && i < 4 && used + 4 < buflen; i++)
        used += (size_t)snprintf(buf + used, buflen - used, "%s%02x", i ? " " : "", b[i]);
}

static int auto_decode(void *state, struct pb_sample *s)
{
    struct auto_state *st = state;
    switch (pb_image_sniff(s->in, s->in_bytes)) {
    case PB_IMAGE_JPEG: return pb_decoder_jpeg.decode(st->jpeg, s);
    case PB_IMAGE_PNG:
    case PB_IMAGE_WEBP:
    case PB_IMAGE_BMP:
        if (st->image)
            return pb_decoder_image.decode(st->image, s);
        snprintf(s->msg, s->msglen, "%s: decoder 'image' is not available in this build: %s",
                 pb_image_sample_name(s), pb_decoder_image.unavailable_reason);
        return PB_ERR_DATA;
    default: break;
    }
    if (s->in_bytes == 0) {
        snprintf(s->msg, s->msglen, "%s: empty file", pb_image_sample_name(s));
    } else {
        char hex[16];
        first_bytes(hex, sizeof(hex), s->in, s->in_bytes);
        snprintf(s->msg, s->msglen, "%s: not an image (starts with %s)", pb_image_sample_name(s), hex);
    }
    return PB_ERR_DATA;
}

const struct pb_decoder_ops pb_decoder_auto = {
    .name = "auto",
    .summary = "Chooses by magic bytes: JPEG through libjpeg-turbo, PNG/WebP/BMP through "
               "libavcodec.",
    .counters = pb_jpeg_counters,
    .opts = pb_jpeg_opts,
    .opts_size = sizeof(struct pb_image_opts),
    .output_channels = pb_image_output_channels,
    .init = auto_init,
    .decode = auto_decode,
    .cleanup = auto_cleanup,
};
