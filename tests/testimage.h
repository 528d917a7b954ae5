/* Image helpers the decoder tests share: a byte buffer and an image
 * encoded with libavcodec (PNG, BMP, WebP), to decode back. Header only. */
#ifndef PB_TESTS_TESTIMAGE_H
#define PB_TESTS_TESTIMAGE_H

#include <setjmp.h>
#include <stdarg.h>
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
