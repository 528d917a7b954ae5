/* Video dataset generation: spec->count MP4 files of spec->frames frames at
 * spec->fps, encoded with libavcodec (libx264 for h264 when present, else
 * FFmpeg's native mpeg4), with a fixed keyframe interval of spec->gop
 * frames and B-frames on, so tests and benchmarks have real bitstreams.
 *
 * Content: pb_scene_render at t = frame / fps (moving, textured), with the
 * frame number written into the pixels as 16 black/white blocks in the top
 * left corner (see pb_video_frame_number in decoders/video_clip.h), large enough
 * to survive compression. Frames larger than 640x360 are rendered at a
 * fraction of their size, scaled up and given full-resolution luma noise, so tests can check that a decoder delivers the
 * frame it was asked for. Files pb_generate_is_corrupt picks are written
 * whole, then truncated to 60% of their size. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "bench/base/pb.h"
#include "decoders/video_clip.h"
#include "kernels/scene.h"
#include "pipelines/generate.h"

/* The encoder for a codec name: well-known external encoders first (they
 * are what people ship), then FFmpeg's own by name or codec id. */
static const AVCodec *find_encoder(const char *name)
{
    static const struct {
        const char *codec, *encoder;
    } preferred[] = {
        {"h264", "libx264"}, {"hevc", "libx265"}, {"h265", "libx265"},
        {"vp9", "libvpx-vp9"}, {"vp8", "libvpx"}, {"av1", "libsvtav1"},
        {"av1", "libaom-av1"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(preferred); i++)
        if (strcmp(name, preferred[i].codec) == 0) {
            const AVCodec *c = avcodec_find_encoder_by_name(preferred[i].encoder);
            if (c)
                return c;
        }
    const AVCodec *c = avcodec_find_encoder_by_name(name);
    if (c)
        return c;
    const AVCodecDescriptor *d = avcodec_descriptor_get_by_name(name);
    return d ? avcodec_find_encoder(d->id) : NULL;
}

static enum AVPixelFormat pick_pix_fmt(const AVCodec *codec)
{
    if (!codec->pix_fmts)
        return AV_PIX_FMT_YUV420P;
    for (const enum AVPixelFormat *p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; p++)
        if (*p == AV_PIX_FMT_YUV420P || *p == AV_PIX_FMT_YUVJ420P)
            return *p;
    return codec->pix_fmts[0];
}

/* Writes the frame number into a planar YUV frame: 16 bits, most
 * significant first, as two rows of eight square blocks (black or white,
 * no colour) of pb_video_stamp_block_px, in the top left corner. */
static void stamp_frame_number(AVFrame *frame, int64_t number)
{
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(frame->format);
    bool full_range = frame->format == AV_PIX_FMT_YUVJ420P || frame->format == AV_PIX_FMT_YUVJ422P ||
                      frame->format == AV_PIX_FMT_YUVJ444P;
    int block = pb_video_stamp_block_px(frame->width, frame->height);
    for (int bit = 0; bit < 16; bit++) {
        bool white = (number >> (15 - bit)) & 1;
        int x0 = (bit % 8) * block, y0 = (bit / 8) * block;
        for (int plane = 0; plane < 3 && frame->data[plane]; plane++) {
            int sx = plane ? desc->log2_chroma_w : 0, sy = plane ? desc->log2_chroma_h : 0;
            int value = plane ? 128 : white ? (full_range ? 255 : 235) : (full_range ? 0 : 16);
            int xa = x0 >> sx, xb = (x0 + block) >> sx, ya = y0 >> sy, yb = (y0 + block) >> sy;
            for (int y = ya; y < yb && y < AV_CEIL_RSHIFT(frame->height, sy); y++) {
                int xe = xb < AV_CEIL_RSHIFT(frame->width, sx) ? xb : AV_CEIL_RSHIFT(frame->width, sx);
                if (xe > xa)
                    memset(frame->data[plane] + (size_t)y * (size_t)frame->linesize[plane] + xa,
                           value, (size_t)(xe - xa));
            }
        }
    }
}

/* Sensor-like noise (-2..+1) on the luma plane: the fine detail that makes
 * encoders and decoders work as on camera footage, at full resolution
 * even when the scene was rendered smaller. */
static void add_luma_noise(AVFrame *frame, uint64_t seed)
{
    uint64_t x = pb_mix64(seed);
    for (int y = 0; y < frame->height; y++) {
        uint8_t *row = frame->data[0] + (size_t)y * (size_t)frame->linesize[0];
        for (int i = 0; i < frame->width; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            int v = row[i] + (int)((x >> 62) & 3) - 2;
            row[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
}

/* One video being written: the output file, the encoder, the frame it
 * encodes and the conversion from the rendered RGB scene to it. */
struct encoder {
    const char *path;
    const AVCodec *codec;
    AVFormatContext *fmt;
    AVCodecContext *enc;
    AVStream *stream;
    AVPacket *pkt;
    AVFrame *frame;
    struct SwsContext *sws;
    AVRational fps;
    /* The scene is rendered render_w x render_h, shrink times smaller
     * than the video (1: at its size), and scaled up by sws. */
    int shrink, render_w, render_h;
};

/* The message of a failed libav call (ret < 0), or of a failed allocation
 * (ret >= 0), while writing e's file. Returns PB_ERR. */
static int encode_failure(const struct encoder *e, int ret, char *msg, size_t msglen)
{
    char why[128] = "out of memory";
    if (ret < 0)
        av_strerror(ret, why, sizeof(why));
    snprintf(msg, msglen, "cannot encode '%s' with %s: %s", e->path, e->codec->name, why);
    return PB_ERR;
}

static int write_packets(struct encoder *e, const AVFrame *frame, char *msg, size_t msglen)
{
    int ret = avcodec_send_frame(e->enc, frame);
    while (ret >= 0) {
        ret = avcodec_receive_packet(e->enc, e->pkt);
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF)
            return PB_OK;
        if (ret < 0)
            break;
        av_packet_rescale_ts(e->pkt, e->enc->time_base, e->stream->time_base);
        e->pkt->stream_index = e->stream->index;
        ret = av_interleaved_write_frame(e->fmt, e->pkt);
    }
    char why[128];
    av_strerror(ret, why, sizeof(why));
    snprintf(msg, msglen, "cannot encode '%s': %s", e->path, why);
    return PB_ERR;
}

/* Scenes are rendered at no more than this many pixels and scaled up in
 * the colour conversion: pb_scene_render costs ~40 ms per 720p frame,
 * which would make first-use generation of a 720p set take minutes. */
#define RENDER_MAX_PIXELS (640 * 360)

/* The size the scene of a width x height video is rendered at: the video's
 * size divided by the smallest whole factor that brings it within
 * RENDER_MAX_PIXELS, even, as 4:2:0 wants. */
static void render_size(struct encoder *e, int width, int height)
{
    e->shrink = 1;
    while ((int64_t)(width / e->shrink) * (height / e->shrink) > RENDER_MAX_PIXELS)
        e->shrink++;
    e->render_w = (width / e->shrink) & ~1;
    e->render_h = (height / e->shrink) & ~1;
    if (e->render_w < 2 || e->render_h < 2) {
        e->render_w = width;
        e->render_h = height;
    }
}

/* The encoder spec->codec names (h264 when empty; FFmpeg's native mpeg4
 * for h264 without libx264), or NULL when this FFmpeg has none. */
static const AVCodec *spec_encoder(const struct pb_generate_spec *spec)
{
    const AVCodec *codec = find_encoder(spec->codec[0] ? spec->codec : "h264");
    if (!codec && strcmp(spec->codec, "h264") == 0)
        codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4); /* no libx264: native mpeg4 */
    return codec;
}

/* The encoder's settings for a width x height video at spec's frame rate
 * and keyframe interval, with B-frames (none for MJPEG). */
static void configure(struct encoder *e, const struct pb_generate_spec *spec, int width,
                      int height)
{
    AVCodecContext *enc = e->enc;
    e->fps = av_d2q(spec->fps, 100000);
    enc->width = width;
    enc->height = height;
    enc->pix_fmt = pick_pix_fmt(e->codec);
    enc->time_base = av_inv_q(e->fps);
    enc->framerate = e->fps;
    enc->gop_size = (int)spec->gop;
    enc->keyint_min = (int)spec->gop;
    enc->max_b_frames = e->codec->id == AV_CODEC_ID_MJPEG ? 0 : 2;
    enc->thread_count = 0; /* generation is not measured: use every core */
    if (e->codec->id == AV_CODEC_ID_MPEG4 || e->codec->id == AV_CODEC_ID_MJPEG) {
        enc->bit_rate = (int64_t)width * height * 3; /* ~ 3 bits per pixel per second */
        enc->qmax = 12;
    }
    if (strcmp(e->codec->name, "libx264") == 0) {
        av_opt_set(enc->priv_data, "preset", "veryfast", 0);
        /* A fixed GOP: no scene-cut keyframes, closed GOPs. */
        av_opt_set(enc->priv_data, "x264-params", "scenecut=0:open-gop=0", 0);
    }
    if (e->fmt->oformat->flags & AVFMT_GLOBALHEADER)
        enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
}

/* Makes e's MP4 muxer, encoder, stream, frame and colour conversion for a
 * width x height video. PB_OK, or PB_ERR with msg. */
static int open_encoder(struct encoder *e, const struct pb_generate_spec *spec, int width,
                        int height, char *msg, size_t msglen)
{
    int ret = avformat_alloc_output_context2(&e->fmt, NULL, "mp4", e->path);
    if (ret < 0 || !e->fmt)
        return encode_failure(e, ret, msg, msglen);
    e->enc = avcodec_alloc_context3(e->codec);
    e->pkt = av_packet_alloc();
    e->frame = av_frame_alloc();
    e->stream = avformat_new_stream(e->fmt, NULL);
    if (!e->enc || !e->pkt || !e->frame || !e->stream)
        return encode_failure(e, 0, msg, msglen);
    configure(e, spec, width, height);
    ret = avcodec_open2(e->enc, e->codec, NULL);
    if (ret >= 0)
        ret = avcodec_parameters_from_context(e->stream->codecpar, e->enc);
    if (ret < 0)
        return encode_failure(e, ret, msg, msglen);
    e->stream->time_base = e->enc->time_base;
    e->stream->avg_frame_rate = e->fps;
    e->frame->format = e->enc->pix_fmt;
    e->frame->width = width;
    e->frame->height = height;
    ret = av_frame_get_buffer(e->frame, 0);
    if (ret < 0)
        return encode_failure(e, ret, msg, msglen);
    e->sws = sws_getContext(e->render_w, e->render_h, AV_PIX_FMT_RGB24, width, height,
                            e->enc->pix_fmt, SWS_BICUBIC, NULL, NULL, NULL);
    if (!e->sws)
        return encode_failure(e, 0, msg, msglen);
    ret = avio_open(&e->fmt->pb, e->path, AVIO_FLAG_WRITE);
    if (ret >= 0)
        ret = avformat_write_header(e->fmt, NULL);
    return ret < 0 ? encode_failure(e, ret, msg, msglen) : PB_OK;
}

/* Renders, stamps and encodes spec->frames frames of the scene of seed
 * (rgb: room for one rendered frame), then flushes the encoder and writes
 * the file's trailer. PB_OK, or PB_ERR with msg. */
static int encode_frames(struct encoder *e, const struct pb_generate_spec *spec, uint64_t seed,
                         uint8_t *rgb, char *msg, size_t msglen)
{
    AVFrame *frame = e->frame;
    for (int64_t i = 0; i < spec->frames; i++) {
        pb_scene_render(rgb, e->render_h, e->render_w, 3, seed, (double)i / spec->fps);
        int ret = av_frame_make_writable(frame);
        if (ret < 0)
            return encode_failure(e, ret, msg, msglen);
        const uint8_t *src[1] = {rgb};
        int src_stride[1] = {e->render_w * 3};
        sws_scale(e->sws, src, src_stride, 0, e->render_h, frame->data, frame->linesize);
        if (e->shrink > 1)
            add_luma_noise(frame, seed ^ (uint64_t)i);
        stamp_frame_number(frame, i);
        frame->pts = i;
        frame->pict_type = AV_PICTURE_TYPE_NONE;
        if (write_packets(e, frame, msg, msglen) != PB_OK)
            return PB_ERR;
    }
    if (write_packets(e, NULL, msg, msglen) != PB_OK)
        return PB_ERR;
    int ret = av_write_trailer(e->fmt);
    return ret < 0 ? encode_failure(e, ret, msg, msglen) : PB_OK;
}

/* Frees what open_encoder made and closes the file. */
static void close_encoder(struct encoder *e)
{
    sws_freeContext(e->sws);
    av_frame_free(&e->frame);
    av_packet_free(&e->pkt);
    avcodec_free_context(&e->enc);
    if (e->fmt) {
        if (e->fmt->pb)
            avio_closep(&e->fmt->pb);
        avformat_free_context(e->fmt);
    }
}

/* Writes one width x height video of spec to path, its scene drawn from
 * seed (rgb: room for one rendered frame). PB_OK, PB_ERR_CONFIG when
 * there is no encoder for spec->codec, or PB_ERR, each with msg. */
static int encode_one(const struct pb_generate_spec *spec, const char *path, int width,
                      int height, uint64_t seed, uint8_t *rgb, char *msg, size_t msglen)
{
    struct encoder e = {.path = path, .codec = spec_encoder(spec)};
    if (!e.codec) {
        snprintf(msg, msglen, "dataset.generate.codec '%s': no encoder for it in this FFmpeg",
                 spec->codec);
        return PB_ERR_CONFIG;
    }
    render_size(&e, width, height);
    int rc = open_encoder(&e, spec, width, height, msg, msglen);
    if (rc == PB_OK)
        rc = encode_frames(&e, spec, seed, rgb, msg, msglen);
    close_encoder(&e);
    return rc;
}

int pb_generate_video(const struct pb_generate_spec *spec, const char *dir,
                      volatile sig_atomic_t *stop, char *msg, size_t msglen)
{
    int min_w, min_h, max_w, max_h;
    int rc = pb_parse_size_range(spec->size, &min_w, &min_h, &max_w, &max_h, msg, msglen);
    if (rc != PB_OK)
        return rc;
    size_t rgb_bytes = (size_t)(max_w + 1) * (size_t)(max_h + 1) * 3;
    uint8_t *rgb = malloc(rgb_bytes);
    if (!rgb) {
        snprintf(msg, msglen, "out of memory generating %dx%d videos", max_w, max_h);
        return PB_ERR_NOMEM;
    }
    av_log_set_level(AV_LOG_ERROR);
    for (int64_t i = 0; i < spec->count && rc == PB_OK; i++) {
        if (pb_generate_stopped(stop)) {
            rc = PB_ERR_INTERRUPTED;
            break;
        }
        /* Sizes spread evenly over the range; even, as 4:2:0 wants. */
        double f = spec->count > 1 ? (double)i / (double)(spec->count - 1) : 0;
        int w = (min_w + (int)((max_w - min_w) * f + 0.5)) & ~1;
        int h = (min_h + (int)((max_h - min_h) * f + 0.5)) & ~1;
        if (w < 2 || h < 2) {
            snprintf(msg, msglen, "dataset.generate.size '%s': videos must be at least 2x2",
                     spec->size);
            rc = PB_ERR_CONFIG;
            break;
        }
        char path[PB_PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/video_%07lld.mp4", dir, (long long)i);
        uint64_t seed = pb_mix64((uint64_t)spec->seed * 0x100000001b3ull + (uint64_t)i);
        rc = encode_one(spec, path, w, h, seed, rgb, msg, msglen);
        if (rc == PB_OK && pb_generate_is_corrupt(spec, i)) {
            FILE *f = fopen(path, "rb");
            long size = -1;
            if (f && fseek(f, 0, SEEK_END) == 0)
                size = ftell(f);
            if (f)
                fclose(f);
            if (size < 0 || truncate(path, size * 6 / 10) != 0) {
                snprintf(msg, msglen, "cannot truncate '%s': %s", path, strerror(errno));
                rc = PB_ERR;
            }
        }
    }
    free(rgb);
    return rc;
}
