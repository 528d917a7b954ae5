/* Image helpers the decoder tests share: a byte buffer, a JPEG given an
 * EXIF orientation, and an image encoded with libavcodec (PNG, BMP, WebP),
 * to decode back. Header only. */
#ifndef PB_TESTS_TESTIMAGE_H
#define PB_TESTS_TESTIMAGE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <libavcodec/avcodec.h>
#include <libavutil/opt.h>
#include <stdlib.h>
#include <string.h>

/* Bytes owned by the test (free data). */
struct bytes {
    uint8_t *data;
    size_t len;
};

/* Inserts an APP1 Exif segment with the orientation tag after SOI. */
static inline struct bytes with_exif(const struct bytes *jpeg, int orientation, bool big_endian)
{
    uint8_t app1[36] = {0xFF, 0xE1, 0, 34, 'E', 'x', 'i', 'f', 0, 0};
    uint8_t *t = app1 + 10;
    if (big_endian) {
        memcpy(t, "MM\0\x2a\0\0\0\x08", 8);
        memcpy(t + 8, "\0\x01" "\x01\x12" "\0\x03" "\0\0\0\x01", 10);
        t[18] = 0;
        t[19] = (uint8_t)orientation;
    } else {
        memcpy(t, "II\x2a\0\x08\0\0\0", 8);
        memcpy(t + 8, "\x01\0" "\x12\x01" "\x03\0" "\x01\0\0\0", 10);
        t[18] = (uint8_t)orientation;
        t[19] = 0;
    }
    /* t[20..25]: rest of the value field and the next-IFD offset, zero. */
    struct bytes b = {malloc(jpeg->len + sizeof(app1)), jpeg->len + sizeof(app1)};
    memcpy(b.data, jpeg->data, 2);
    memcpy(b.data + 2, app1, sizeof(app1));
    memcpy(b.data + 2 + sizeof(app1), jpeg->data + 2, jpeg->len - 2);
    return b;
}

/* Encodes one frame with a libavcodec image encoder; .data NULL when this
 * libavcodec has no such encoder. */
static inline struct bytes encode_av(enum AVCodecID id, const char *encoder_name,
                                     enum AVPixelFormat fmt, const uint8_t *pixels, int width,
                                     int height, int bytes_per_pixel)
{
    struct bytes b = {0};
    const AVCodec *codec =
        encoder_name ? avcodec_find_encoder_by_name(encoder_name) : avcodec_find_encoder(id);
    if (!codec)
        return b;
    AVCodecContext *ctx = avcodec_alloc_context3(codec);
    ctx->width = width;
    ctx->height = height;
    ctx->pix_fmt = fmt;
    ctx->time_base = (AVRational){1, 25};
    if (encoder_name)
        av_opt_set_int(ctx->priv_data, "lossless", 1, 0);
    if (avcodec_open2(ctx, codec, NULL) < 0) {
        avcodec_free_context(&ctx);
        return b;
    }
    AVFrame *frame = av_frame_alloc();
    frame->width = width;
    frame->height = height;
    frame->format = fmt;
    assert_true(av_frame_get_buffer(frame, 0) >= 0);
    for (int y = 0; y < height; y++)
        memcpy(frame->data[0] + (ptrdiff_t)y * frame->linesize[0],
               pixels + (size_t)y * (size_t)width * (size_t)bytes_per_pixel,
               (size_t)width * (size_t)bytes_per_pixel);
    AVPacket *pkt = av_packet_alloc();
    assert_true(avcodec_send_frame(ctx, frame) >= 0);
    avcodec_send_frame(ctx, NULL);
    if (avcodec_receive_packet(ctx, pkt) >= 0) {
        b.data = malloc((size_t)pkt->size);
        b.len = (size_t)pkt->size;
        memcpy(b.data, pkt->data, b.len);
    }
    av_packet_free(&pkt);
    av_frame_free(&frame);
    avcodec_free_context(&ctx);
    return b;
}

#endif
