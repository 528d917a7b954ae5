/* The `image` decoder: PNG, WebP and BMP through libavcodec's image
 * decoders, from the bytes the `read` stage loaded.
 *
 * One codec context per format and worker, opened at init, single-threaded
 * (the workers are the parallelism). Per sample: one packet in, one frame
 * out, then the frame's pixels are written to RGB, BGR or gray uint8 HWC by
 * a plain loop for the formats these decoders produce (alpha is dropped, as
 * PIL's convert("RGB") does); rarer formats (16-bit, YUV) go through
 * libswscale. The image size is read from the header before decoding, so
 * max_pixels stops a decompression bomb before libavcodec allocates it. */
#include "decoders/image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "bench/base/pb.h"

static const char *const output_names[] = {"rgb", "bgr", "gray", NULL};

#define OPT(f) offsetof(struct pb_image_opts, f)
static const struct pb_opt image_opts[] = {
    {.name = "output", .type = PB_OPT_ENUM, .offset = OPT(output), .def = "rgb",
     .allowed = output_names,
     .help = "Pixel format written: rgb or bgr (3 channels, gray expanded, alpha dropped) or "
             "gray."},
    {.name = "max_pixels", .type = PB_OPT_INT, .offset = OPT(max_pixels), .min = 1, .max = 1e12,
     .def = "89478485",
     .help = "Largest image accepted, width x height (PIL's limit by default); larger ones are "
             "bad samples, so a decompression bomb cannot exhaust memory."},
    {.name = "plan_width", .type = PB_OPT_INT, .offset = OPT(plan_width), .min = 1, .max = 65535,
     .def = "640",
     .help = "Width of the decoded image the pipeline's buffers start out sized for; larger "
             "images grow them once, except when decode ends the pipeline (a fixed batch slot)."},
    {.name = "plan_height", .type = PB_OPT_INT, .offset = OPT(plan_height), .min = 1, .max = 65535,
     .def = "480",
     .help = "Height of the decoded image the pipeline's buffers start out sized for."},
    {0},
};

enum { FORMAT_PNG, FORMAT_WEBP, FORMAT_BMP, FORMATS };
static const enum AVCodecID codec_ids[FORMATS] = {AV_CODEC_ID_PNG, AV_CODEC_ID_WEBP,
                                                  AV_CODEC_ID_BMP};
static const char *const format_names[FORMATS] = {"PNG", "WebP", "BMP"};

struct image_state {
    struct pb_image_opts o;
    AVCodecContext *ctx[FORMATS];
    /* The context must be opened anew before its next file: after a failed
     * one, and after every PNG (libavcodec 5's PNG decoder carries rows of
     * the last image into the next: a second PNG decodes wrong). */
    bool stale[FORMATS];
    AVPacket *packet;
    AVFrame *frame;
    struct SwsContext *sws;  /* only for formats without a loop below   */
    uint8_t *padded;         /* the input plus libavcodec's zero padding */
    size_t padded_capacity;
};

static void image_cleanup(void *state)
{
    struct image_state *st = state;
    if (!st)
        return;
    for (int i = 0; i < FORMATS; i++)
        avcodec_free_context(&st->ctx[i]);
    av_packet_free(&st->packet);
    av_frame_free(&st->frame);
    sws_freeContext(st->sws);
    av_free(st->padded);
    free(st);
}

/* Opens (or, after a failure, opens anew) the decoder of format i: a fresh
 * context, since a failed header can leave libavcodec's (PNG's) state
 * behind for the next file. Returns PB_OK or an error with msg. */
static int open_format(struct image_state *st, int i, char *msg, size_t msglen)
{
    avcodec_free_context(&st->ctx[i]);
    st->stale[i] = false;
    const AVCodec *codec = avcodec_find_decoder(codec_ids[i]);
    if (!codec) {
        snprintf(msg, msglen, "image: this libavcodec has no %s decoder", format_names[i]);
        return PB_ERR_UNAVAILABLE;
    }
    st->ctx[i] = avcodec_alloc_context3(codec);
    if (!st->ctx[i])
        return PB_ERR_NOMEM;
    st->ctx[i]->thread_count = 1;
    st->ctx[i]->max_pixels = st->o.max_pixels;
    /* Corrupt files are counted and reported by pbench, with the file
     * name; keep libavcodec's own lines about them off the terminal. */
    st->ctx[i]->log_level_offset = AV_LOG_DEBUG - AV_LOG_ERROR;
    int rc = avcodec_open2(st->ctx[i], codec, NULL);
    if (rc < 0) {
        snprintf(msg, msglen, "image: cannot open the %s decoder: %s", format_names[i],
                 av_err2str(rc));
        return PB_ERR;
    }
    return PB_OK;
}

static int image_init(void **state, const void *opts, const struct pb_stage_plan *in,
                      struct pb_stage_plan *out, char *msg, size_t msglen)
{
    (void)in;
    struct image_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->o = *(const struct pb_image_opts *)opts;
    for (int i = 0; i < FORMATS; i++) {
        int rc = open_format(st, i, msg, msglen);
        if (rc != PB_OK) {
            image_cleanup(st);
            return rc;
        }
    }
    st->packet = av_packet_alloc();
    st->frame = av_frame_alloc();
    if (!st->packet || !st->frame) {
        image_cleanup(st);
        return PB_ERR_NOMEM;
    }
    pb_image_plan_output(&st->o, out);
    *state = st;
    return PB_OK;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The image size from the file's header, or false when it cannot be read
 * cheaply (libavcodec then decides). */
static bool probe_size(int format, const uint8_t *b, size_t n, int64_t *width, int64_t *height)
{
    switch (format) {
    case FORMAT_PNG:
        if (n < 24 || memcmp(b + 12, "IHDR", 4) != 0)
            return false;
        *width = (int64_t)b[16] << 24 | b[17] << 16 | b[18] << 8 | b[19];
        *height = (int64_t)b[20] << 24 | b[21] << 16 | b[22] << 8 | b[23];
        return true;
    case FORMAT_BMP:
        if (n < 26)
            return false;
        if (le32(b + 14) == 12) { /* BITMAPCOREHEADER: 16-bit sizes */
            *width = b[18] | b[19] << 8;
            *height = b[20] | b[21] << 8;
        } else {
            *width = (int32_t)le32(b + 18);
            *height = (int32_t)le32(b + 22);
        }
        if (*width < 0)
            *width = -*width;
        if (*height < 0)
            *height = -*height;
        return true;
    case FORMAT_WEBP:
        if (n >= 30 && memcmp(b + 12, "VP8X", 4) == 0) {
            *width = 1 + (b[24] | b[25] << 8 | b[26] << 16);
            *height = 1 + (b[27] | b[28] << 8 | b[29] << 16);
            return true;
        }
        if (n >= 25 && memcmp(b + 12, "VP8L", 4) == 0) {
            uint32_t bits = le32(b + 21);
            *width = 1 + (bits & 0x3fff);
            *height = 1 + ((bits >> 14) & 0x3fff);
            return true;
        }
        if (n >= 30 && memcmp(b + 12, "VP8 ", 4) == 0) {
            *width = (b[26] | b[27] << 8) & 0x3fff;
            *height = (b[28] | b[29] << 8) & 0x3fff;
            return true;
        }
        return false;
    default: return false;
    }
}

/* Byte offsets of R, G, B in a packed pixel and its size; false for the
 * formats that take another path. */
static bool packed_layout(enum AVPixelFormat f, int *r, int *g, int *b, int *bytes)
{
    switch (f) {
    case AV_PIX_FMT_RGB24: *r = 0, *g = 1, *b = 2, *bytes = 3; return true;
    case AV_PIX_FMT_BGR24: *r = 2, *g = 1, *b = 0, *bytes = 3; return true;
    case AV_PIX_FMT_RGBA:
    case AV_PIX_FMT_RGB0: *r = 0, *g = 1, *b = 2, *bytes = 4; return true;
    case AV_PIX_FMT_BGRA:
    case AV_PIX_FMT_BGR0: *r = 2, *g = 1, *b = 0, *bytes = 4; return true;
    case AV_PIX_FMT_ARGB:
    case AV_PIX_FMT_0RGB: *r = 1, *g = 2, *b = 3, *bytes = 4; return true;
    case AV_PIX_FMT_ABGR:
    case AV_PIX_FMT_0BGR: *r = 3, *g = 2, *b = 1, *bytes = 4; return true;
    case AV_PIX_FMT_GRAY8: *r = 0, *g = 0, *b = 0, *bytes = 1; return true;
    case AV_PIX_FMT_YA8: *r = 0, *g = 0, *b = 0, *bytes = 2; return true;
    default: return false;
    }
}

static inline void put_pixel(uint8_t *d, unsigned r, unsigned g, unsigned b, int output)
{
    if (output == PB_IMAGE_GRAY) {
        d[0] = (uint8_t)((77 * r + 150 * g + 29 * b + 128) >> 8);
    } else if (output == PB_IMAGE_BGR) {
        d[0] = (uint8_t)b, d[1] = (uint8_t)g, d[2] = (uint8_t)r;
    } else {
        d[0] = (uint8_t)r, d[1] = (uint8_t)g, d[2] = (uint8_t)b;
    }
}

/* Writes the frame into dst (width x height x channels). Returns PB_OK or
 * PB_ERR_DATA with a message for a format it cannot convert. */
static int convert(struct image_state *st, const AVFrame *f, uint8_t *dst, struct pb_sample *s)
{
    int output = st->o.output, ch = output == PB_IMAGE_GRAY ? 1 : 3;
    int w = f->width, h = f->height, r, g, b, bytes;
    enum AVPixelFormat fmt = (enum AVPixelFormat)f->format;
    if (packed_layout(fmt, &r, &g, &b, &bytes)) {
        for (int y = 0; y < h; y++) {
            const uint8_t *src = f->data[0] + (ptrdiff_t)y * f->linesize[0];
            uint8_t *d = dst + (size_t)y * (size_t)w * (size_t)ch;
            if (bytes == 3 && r == 0 && output == PB_IMAGE_RGB) {
                memcpy(d, src, (size_t)w * 3);
                continue;
            }
            if (bytes <= 2 && output == PB_IMAGE_GRAY) {
                for (int x = 0; x < w; x++)
                    d[x] = src[x * bytes];
                continue;
            }
            for (int x = 0; x < w; x++, src += bytes, d += ch)
                put_pixel(d, src[r], src[g], src[b], output);
        }
        return PB_OK;
    }
    if (fmt == AV_PIX_FMT_PAL8) {
        const uint32_t *palette = (const uint32_t *)f->data[1]; /* 0xAARRGGBB */
        for (int y = 0; y < h; y++) {
            const uint8_t *src = f->data[0] + (ptrdiff_t)y * f->linesize[0];
            uint8_t *d = dst + (size_t)y * (size_t)w * (size_t)ch;
            for (int x = 0; x < w; x++, d += ch) {
                uint32_t p = palette[src[x]];
                put_pixel(d, (p >> 16) & 0xff, (p >> 8) & 0xff, p & 0xff, output);
            }
        }
        return PB_OK;
    }
    enum AVPixelFormat want = output == PB_IMAGE_GRAY  ? AV_PIX_FMT_GRAY8
                              : output == PB_IMAGE_BGR ? AV_PIX_FMT_BGR24
                                                       : AV_PIX_FMT_RGB24;
    st->sws = sws_getCachedContext(st->sws, w, h, fmt, w, h, want, SWS_BILINEAR, NULL, NULL, NULL);
    if (!st->sws) {
        const char *name = av_get_pix_fmt_name(fmt);
        snprintf(s->msg, s->msglen, "%s: cannot convert pixel format %s",
                 s->path ? s->path : "(sample)", name ? name : "?");
        return PB_ERR_DATA;
    }
    uint8_t *planes[4] = {dst, NULL, NULL, NULL};
    int strides[4] = {w * ch, 0, 0, 0};
    sws_scale(st->sws, (const uint8_t *const *)f->data, f->linesize, 0, h, planes, strides);
    return PB_OK;
}

static int image_decode(void *state, struct pb_sample *s)
{
    struct image_state *st = state;
    const char *name = s->path ? s->path : "(sample)";
    int format;
    switch (pb_image_sniff(s->in, s->in_bytes)) {
    case PB_IMAGE_PNG: format = FORMAT_PNG; break;
    case PB_IMAGE_WEBP: format = FORMAT_WEBP; break;
    case PB_IMAGE_BMP: format = FORMAT_BMP; break;
    default:
        if (s->in_bytes == 0)
            snprintf(s->msg, s->msglen, "%s: empty file", name);
        else
            snprintf(s->msg, s->msglen, "%s: not a PNG, WebP or BMP image", name);
        return PB_ERR_DATA;
    }
    int ch = st->o.output == PB_IMAGE_GRAY ? 1 : 3;
    int64_t width = 0, height = 0;
    if (probe_size(format, s->in, s->in_bytes, &width, &height)) {
        /* In double: 32-bit sizes from a corrupt header overflow int64. */
        if ((double)width * (double)height > (double)st->o.max_pixels) {
            snprintf(s->msg, s->msglen, "%s: %lldx%lld %s is larger than max_pixels (%lld pixels)",
                     name, (long long)width, (long long)height, format_names[format],
                     (long long)st->o.max_pixels);
            return PB_ERR_DATA;
        }
        if (pb_decoded_size_check(s, (double)width * (double)height * ch, width, height) != PB_OK)
            return PB_ERR_DATA;
        if ((size_t)(width * height) * (size_t)ch > s->out_capacity) {
            s->out_bytes = (size_t)(width * height) * (size_t)ch;
            return PB_ERR_NOSPACE;
        }
    }
    /* libavcodec may read a little past the end of a packet. */
    size_t padded = s->in_bytes + AV_INPUT_BUFFER_PADDING_SIZE;
    if (padded > st->padded_capacity) {
        av_free(st->padded);
        st->padded_capacity = padded + padded / 4;
        st->padded = av_malloc(st->padded_capacity);
        if (!st->padded) {
            st->padded_capacity = 0;
            snprintf(s->msg, s->msglen, "%s: out of memory for %zu bytes", name, s->in_bytes);
            return PB_ERR_NOMEM;
        }
    }
    memcpy(st->padded, s->in, s->in_bytes);
    memset(st->padded + s->in_bytes, 0, AV_INPUT_BUFFER_PADDING_SIZE);

    if (st->stale[format]) {
        char why[PB_MSG_MAX];
        if (open_format(st, format, why, sizeof(why)) != PB_OK) {
            snprintf(s->msg, s->msglen, "%s (before %s)", why, name);
            return PB_ERR;
        }
    }
    AVCodecContext *ctx = st->ctx[format];
    st->stale[format] = format == FORMAT_PNG;
    st->packet->data = st->padded;
    st->packet->size = (int)s->in_bytes;
    int rc = avcodec_send_packet(ctx, st->packet);
    if (rc >= 0) {
        rc = avcodec_receive_frame(ctx, st->frame);
        if (rc == AVERROR(EAGAIN)) { /* a decoder that holds frames back */
            avcodec_send_packet(ctx, NULL);
            rc = avcodec_receive_frame(ctx, st->frame);
            avcodec_flush_buffers(ctx);
        }
    }
    st->packet->data = NULL;
    st->packet->size = 0;
    if (rc < 0) {
        snprintf(s->msg, s->msglen, "%s: libavcodec %s decoder: %s", name, format_names[format],
                 av_err2str(rc));
        st->stale[format] = true;
        return PB_ERR_DATA;
    }
    AVFrame *f = st->frame;
    size_t need = (size_t)f->width * (size_t)f->height * (size_t)ch;
    if (pb_decoded_size_check(s, (double)need, f->width, f->height) != PB_OK) {
        av_frame_unref(f);
        return PB_ERR_DATA;
    }
    if (need > s->out_capacity) {
        av_frame_unref(f);
        s->out_bytes = need;
        return PB_ERR_NOSPACE;
    }
    rc = convert(st, f, s->out, s);
    if (rc == PB_OK) {
        s->out_bytes = need;
        s->out_shape = (struct pb_shape){.dtype = PB_DTYPE_U8, .frames = 1, .height = f->height,
                                         .width = f->width, .channels = ch,
                                         .layout = PB_LAYOUT_THWC};
    }
    av_frame_unref(f);
    return rc;
}

const struct pb_decoder_ops pb_decoder_image = {
    .name = "image",
    .summary = "PNG, WebP and BMP through libavcodec's image decoders; RGB, BGR or gray.",
    .opts = image_opts,
    .opts_size = sizeof(struct pb_image_opts),
    .output_channels = pb_image_output_channels,
    .init = image_init,
    .decode = image_decode,
    .cleanup = image_cleanup,
};
