/* The `video` decoder: one clip of a video file per sample, through
 * libavformat/libavcodec, converted (and optionally resized, in the same
 * pass) to RGB uint8 THWC by libswscale.
 *
 * A sample is one clip: every time the sampler visits a file, the decoder
 * delivers clip_frames frames of it, frame_stride apart. Where the clip
 * starts follows `sampling` (see pb_video_clip_indices): random starts come
 * from the sample's seed; uniform picks one of clips_per_video evenly
 * spread starts from the seed; sequential continues: when a worker gets the
 * same file again, it takes the next of clips_per_video back-to-back clips
 * (and goes on decoding where it stopped, without seeking), otherwise clip
 * 0. So a dataset holding one long file, sampled sequentially, is decoded
 * straight through, which is how the sequential decode benchmark runs.
 *
 * Frames are numbered on the grid of the stream's average frame rate:
 * frame i is the frame on screen at start_time + i / avg_fps. For a
 * constant frame rate that is exactly the i-th frame; for a variable one
 * it is what a player would show. The frame count is the container's, or
 * duration x rate. Rotation metadata (display matrix) is applied by default
 * (90/180/270 degrees; `rotation: ignore` reports it only).
 *
 * seek: keyframe seeks to the keyframe before the clip and decodes forward
 * to the exact frame (re-seeking earlier if the demuxer lands after it);
 * seek: none decodes from the start. With reopen: reuse the worker keeps
 * the last file's demuxer and decoder open for the next clip of that file.
 * discard: nonref asks libavcodec to skip non-reference frames whose
 * packets carry no frame of the clip. clips_per_visit: K takes K clips of
 * each visit, decoded in one pass (decode_visit, decoders/video_visit.h).
 * Bounded everywhere: a clip reads at most frame_count * 2 + 256 packets,
 * and a stream ending early is an error, so a broken file can never loop. */
#include "decoders/video_clip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>

#include "bench/base/pb.h"
#include "decoders/decoder.h"
#include "decoders/video_av.h"
#include "decoders/video_visit.h"

enum { SEEK_KEYFRAME = 0, SEEK_NONE };
enum { THREAD_FRAME = 0, THREAD_SLICE };
enum { REOPEN_REUSE = 0, REOPEN_PER_CLIP };
enum { DISCARD_NONE = 0, DISCARD_NONREF };
enum { ROTATION_APPLY = 0, ROTATION_IGNORE };
enum { CORRUPT_ERROR = 0, CORRUPT_CONCEAL };

enum { SUB_OPEN, SUB_SEEK, SUB_DEMUX, SUB_DECODE, SUB_CONVERT };
enum { CNT_DECODED, CNT_DELIVERED, CNT_SEEKS, CNT_OPENS, CNT_HW_FRAMES };

#define MAX_CLIP_FRAMES 4096
#define MAX_SEEK_RETRIES 5
#define MAX_CONSECUTIVE_ERRORS 32

struct video_opts {
    int64_t clip_frames;
    int64_t frame_stride;
    int64_t clips_per_video;
    int sampling;
    int seek;
    int64_t threads;
    int thread_type;
    int short_video;
    int reopen;
    int discard;
    struct pb_int_list size;
    int64_t shorter_side;
    int rotation;
    int corrupt_frames;
    int64_t clips_per_visit;
    int hwaccel;
};

static const char *const sampling_names[] = {"random", "uniform", "sequential", NULL};
static const char *const seek_names[] = {"keyframe", "none", NULL};
static const char *const thread_type_names[] = {"frame", "slice", NULL};
static const char *const short_names[] = {"pad", "loop", "skip", NULL};
static const char *const reopen_names[] = {"reuse", "per_clip", NULL};
static const char *const discard_names[] = {"none", "nonref", NULL};
static const char *const rotation_names[] = {"apply", "ignore", NULL};
static const char *const corrupt_names[] = {"error", "conceal", NULL};
static const char *const hwaccel_names[] = {"none", "cuda", "auto", NULL};

/* A row's name and the field of struct video_opts it fills, which share the name. */
#define OPT(f) .name = #f, .offset = offsetof(struct video_opts, f)
static const struct pb_opt video_opts[] = {
    {OPT(clip_frames), .type = PB_OPT_INT, .min = 1, .max = MAX_CLIP_FRAMES, .def = "16",
     .help = "Frames in a clip; a sample is one clip."},
    {OPT(frame_stride), .type = PB_OPT_INT, .min = 1, .max = 1000, .def = "1",
     .help = "Distance between a clip's frames, in frames."},
    {OPT(clips_per_video), .type = PB_OPT_INT, .min = 1, .max = 1000000, .def = "1",
     .help = "Clip positions per video: uniform spreads this many starts evenly and the sample's "
             "seed picks one; sequential takes them back to back, the next one each time a "
             "worker gets the same file again; random ignores it (any start)."},
    {OPT(sampling), .type = PB_OPT_ENUM, .def = "random", .allowed = sampling_names,
     .help = "Where clips start: random (seeded per sample), uniform or sequential."},
    {OPT(seek), .type = PB_OPT_ENUM, .def = "keyframe", .allowed = seek_names,
     .help = "keyframe: seek to the keyframe before the clip, decode forward to the exact frame; "
             "none: decode from the start of the file."},
    {OPT(threads), .type = PB_OPT_INT, .max = 64, .def = "1",
     .help = "Decoder threads per worker; 0 lets FFmpeg choose (all cores)."},
    {OPT(thread_type), .type = PB_OPT_ENUM, .def = "frame", .allowed = thread_type_names,
     .help = "How decoder threads split the work: frame (several frames at once) or slice."},
    {OPT(short_video), .type = PB_OPT_ENUM, .def = "pad", .allowed = short_names,
     .help = "A video shorter than a clip: pad (repeat its last frame), loop (wrap round) or "
             "skip (a data error, so run.on_error applies)."},
    {OPT(reopen), .type = PB_OPT_ENUM, .def = "reuse", .allowed = reopen_names,
     .help = "reuse: keep the last file's demuxer and decoder open for the next clip of the same "
             "file; per_clip: open and close the file for every clip."},
    {OPT(discard), .type = PB_OPT_ENUM, .def = "none", .allowed = discard_names,
     .help = "nonref: skip decoding non-reference frames that are not delivered (before the clip "
             "and between strided frames); none: decode every frame."},
    {OPT(size), .type = PB_OPT_INT_LIST, .min = 1, .max = 16384, .def = "[]",
     .help = "Output size as [height, width] (or N, square), fused into colour conversion; [] "
             "keeps the video's. Give this or shorter_side."},
    {OPT(shorter_side), .type = PB_OPT_INT, .max = 16384, .def = "0",
     .help = "Resize so the shorter side has this many pixels, keeping the aspect ratio, fused "
             "into colour conversion; 0: off."},
    {OPT(rotation), .type = PB_OPT_ENUM, .def = "apply", .allowed = rotation_names,
     .help = "Rotation metadata (display matrix): apply it to the frames, or ignore it."},
    {OPT(corrupt_frames), .type = PB_OPT_ENUM, .def = "error", .allowed = corrupt_names,
     .help = "A bitstream error inside a frame: error (the sample is a data error) or conceal "
             "(keep the decoder's best guess, as players do)."},
    {OPT(clips_per_visit), .type = PB_OPT_INT, .min = 1, .max = PB_VIDEO_MAX_CLIPS_PER_VISIT,
     .def = "1",
     .help = "Clips each visit of a video gives, each its own sample (an epoch holds videos x "
             "this many), planned in file order and decoded in one pass (random or uniform "
             "sampling); a batch_size that is a multiple of it keeps a visit in one worker's "
             "batch."},
    {OPT(hwaccel), .type = PB_OPT_ENUM, .def = "none", .allowed = hwaccel_names,
     .help = "cuda: decode on the GPU's video engine (NVDEC, through FFmpeg's CUDA hwaccel; the "
             "NVIDIA driver provides libnvcuvid), each frame copied back for conversion; an "
             "error where no CUDA device or NVDEC answers. auto: NVDEC where it answers, else "
             "the CPU. none: the CPU. Counter hw_frames: frames NVDEC decoded."},
    {0},
};

static const char *const video_substages[] = {"open", "seek", "demux", "decode", "convert", NULL};
static const char *const video_counters[] = {"frames_decoded", "frames_delivered", "seeks",
                                             "opens", "hw_frames", NULL};

struct video_state {
    struct video_opts o;
    /* The open file (reopen: reuse keeps it between samples). */
    AVFormatContext *fmt;
    AVCodecContext *dec;
    int stream;
    char path[PB_PATH_MAX];
    int64_t frame_count;
    AVRational time_base, fps;
    int64_t start_pts;
    bool vfr;
    int rotation_deg;            /* 0, 90, 180, 270, clockwise          */
    int src_width, src_height;   /* coded, before rotation              */
    int64_t decoded_frame;       /* last frame number received, or -1   */
    int64_t last_keyframe;       /* last keyframe received, or -1       */
    int64_t keyframe_interval;   /* frames between the last two, or 0   */
    bool at_eof;                 /* the decoder was drained             */
    int64_t sequential_clip;     /* sequential: the last clip delivered */
    int64_t avio_bytes;          /* bytes read so far from this file    */
    /* Per worker, made at init or grown at open, never per sample. */
    AVPacket *pkt;
    AVFrame *frame, *held;       /* held: the last frame before a target */
    int64_t held_frame;
    struct SwsContext *sws;
    int64_t *indices;
    struct pb_video_target *targets;
    uint8_t *rotate_buf;
    size_t rotate_capacity;
    struct pb_video_visit *visit; /* clips_per_visit > 1 */
    /* hwaccel: the worker's CUDA device for NVDEC (NULL: the CPU), and the
     * frame a device frame is copied back into for conversion. */
    AVBufferRef *hw_device;
    AVFrame *hw_download;
};

/* "PATH: what: FFmpeg's reason (its last log line)". Returns PB_ERR_DATA. */
static int data_error(struct pb_sample *s, const char *what, int averr)
{
    char why[128] = "";
    if (averr < 0)
        av_strerror(averr, why, sizeof(why));
    const char *last_log = pb_video_av_last_log();
    const char *sep1 = why[0] ? ": " : "", *sep2 = last_log[0] ? " (" : "";
    snprintf(s->msg, s->msglen, "%s: %s%s%s%s%s%s", s->path ? s->path : "(no file)", what, sep1,
             why, sep2, last_log, last_log[0] ? ")" : "");
    pb_video_av_clear_log();
    return PB_ERR_DATA;
}

/* ---- opening ------------------------------------------------------------ */

static void close_file(struct video_state *st)
{
    avcodec_free_context(&st->dec);
    avformat_close_input(&st->fmt);
    st->path[0] = 0;
    st->decoded_frame = -1;
    st->at_eof = false;
    av_frame_unref(st->held);
    st->held_frame = -1;
}

static int64_t rescale_frame_to_pts(const struct video_state *st, int64_t frame)
{
    return st->start_pts + av_rescale_q(frame, av_inv_q(st->fps), st->time_base);
}

static int64_t pts_to_frame(const struct video_state *st, int64_t pts)
{
    /* Nearest frame on the average-rate grid. */
    AVRational frame_tb = av_inv_q(st->fps);
    return av_rescale_q_rnd(pts - st->start_pts, st->time_base, frame_tb,
                            AV_ROUND_NEAR_INF | AV_ROUND_PASS_MINMAX);
}

/* Whether the container's header already says everything needed (MP4 and
 * MOV: size, rate and frame count from the sample tables), so probing by
 * decoding frames (avformat_find_stream_info, several ms at 720p) can be
 * left out of every open. */
static bool header_is_enough(const AVFormatContext *fmt)
{
    if (!strstr(fmt->iformat->name, "mp4"))
        return false;
    int video = 0;
    for (unsigned i = 0; i < fmt->nb_streams; i++) {
        const AVStream *vs = fmt->streams[i];
        if (vs->codecpar->codec_type != AVMEDIA_TYPE_VIDEO)
            continue;
        if (vs->codecpar->width <= 0 || vs->codecpar->height <= 0 || vs->nb_frames <= 0 ||
            vs->avg_frame_rate.num <= 0 || vs->avg_frame_rate.den <= 0)
            return false;
        video++;
    }
    return video > 0;
}

static int open_file(struct video_state *st, struct pb_sample *s)
{
    const struct video_opts *o = &st->o;
    pb_video_av_clear_log();
    int ret = avformat_open_input(&st->fmt, s->path, NULL, NULL);
    if (ret < 0)
        return data_error(s, "cannot open", ret);
    if (!header_is_enough(st->fmt)) {
        ret = avformat_find_stream_info(st->fmt, NULL);
        if (ret < 0)
            return data_error(s, "cannot read stream information", ret);
    }
    const AVCodec *codec = NULL;
    ret = av_find_best_stream(st->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (ret == AVERROR_STREAM_NOT_FOUND)
        return data_error(s, "no video stream", ret);
    if (ret == AVERROR_DECODER_NOT_FOUND)
        return data_error(s, "no decoder for its video codec in this FFmpeg", ret);
    if (ret < 0)
        return data_error(s, "cannot pick a video stream", ret);
    st->stream = ret;
    AVStream *vs = st->fmt->streams[st->stream];
    for (unsigned i = 0; i < st->fmt->nb_streams; i++)
        if ((int)i != st->stream)
            st->fmt->streams[i]->discard = AVDISCARD_ALL; /* demux our stream only */

    st->dec = avcodec_alloc_context3(codec);
    if (!st->dec)
        return data_error(s, "out of memory for a decoder", AVERROR(ENOMEM));
    ret = avcodec_parameters_to_context(st->dec, vs->codecpar);
    if (ret < 0)
        return data_error(s, "bad codec parameters", ret);
    st->dec->thread_count = (int)o->threads;
    st->dec->thread_type = o->thread_type == THREAD_SLICE ? FF_THREAD_SLICE : FF_THREAD_FRAME;
    ret = pb_video_hw_attach(st->dec, st->hw_device);
    if (ret < 0)
        return data_error(s, "cannot use NVDEC", ret);
    st->dec->pkt_timebase = vs->time_base;
    if (o->corrupt_frames == CORRUPT_ERROR)
        st->dec->err_recognition |= AV_EF_EXPLODE;
    ret = avcodec_open2(st->dec, codec, NULL);
    if (ret < 0)
        return data_error(s, "cannot open the decoder", ret);
    if (vs->codecpar->width <= 0 || vs->codecpar->height <= 0)
        return data_error(s, "the video stream has no frame size", AVERROR_INVALIDDATA);

    st->time_base = vs->time_base;
    st->fps = vs->avg_frame_rate.num > 0 && vs->avg_frame_rate.den > 0 ? vs->avg_frame_rate
                                                                       : vs->r_frame_rate;
    if (st->fps.num <= 0 || st->fps.den <= 0)
        return data_error(s, "the video stream has no frame rate", AVERROR_INVALIDDATA);
    st->vfr = av_cmp_q(vs->r_frame_rate, vs->avg_frame_rate) != 0;
    st->start_pts = vs->start_time != AV_NOPTS_VALUE ? vs->start_time : 0;
    int64_t count = vs->nb_frames;
    if (count <= 0 || st->vfr) {
        int64_t duration = vs->duration;
        if (duration != AV_NOPTS_VALUE && duration > 0)
            count = av_rescale_q(duration, st->time_base, av_inv_q(st->fps));
        else if (st->fmt->duration > 0)
            count = av_rescale_q(st->fmt->duration, AV_TIME_BASE_Q, av_inv_q(st->fps));
    }
    if (count <= 0)
        return data_error(s, "the video has no frames (unknown length)", AVERROR_INVALIDDATA);
    st->frame_count = count;
    st->src_width = vs->codecpar->width;
    st->src_height = vs->codecpar->height;
    st->rotation_deg = 0;
    const uint8_t *matrix = av_stream_get_side_data(vs, AV_PKT_DATA_DISPLAYMATRIX, NULL);
    if (matrix) {
        /* Clockwise degrees; a degenerate matrix (NaN, infinite) means no
         * rotation rather than an undefined cast. */
        double deg = -av_display_rotation_get((const int32_t *)matrix);
        if (isfinite(deg)) {
            int r = (int)(fmod(deg < 0 ? deg - 45 : deg + 45, 360.0) / 90) * 90;
            st->rotation_deg = ((r % 360) + 360) % 360;
        }
    }
    pb_strlcpy(st->path, s->path, sizeof(st->path));
    st->decoded_frame = -1;
    st->last_keyframe = -1;
    st->keyframe_interval = 0;
    st->at_eof = false;
    st->sequential_clip = -1;
    st->avio_bytes = 0;
    av_frame_unref(st->held);
    st->held_frame = -1;
    return PB_OK;
}

/* ---- output ------------------------------------------------------------- */

/* The output size for the current file: options first, else the video's,
 * with rotation applied. */
static void output_size(const struct video_state *st, int *height, int *width)
{
    const struct video_opts *o = &st->o;
    bool sideways = o->rotation == ROTATION_APPLY && (st->rotation_deg % 180) != 0;
    int h = sideways ? st->src_width : st->src_height;
    int w = sideways ? st->src_height : st->src_width;
    if (o->size.count > 0) {
        *height = (int)o->size.v[0];
        *width = (int)o->size.v[o->size.count > 1 ? 1 : 0];
    } else if (o->shorter_side > 0) {
        if (h <= w) {
            *height = (int)o->shorter_side;
            *width = (int)(((int64_t)w * o->shorter_side + h / 2) / h);
        } else {
            *width = (int)o->shorter_side;
            *height = (int)(((int64_t)h * o->shorter_side + w / 2) / w);
        }
    } else {
        *height = h;
        *width = w;
    }
    if (*height < 1)
        *height = 1;
    if (*width < 1)
        *width = 1;
}

/* Converts frame to RGB at out_h x out_w into dst. */
static int convert_frame(struct video_state *st, const AVFrame *frame, int out_h, int out_w,
                         uint8_t *dst, struct pb_sample *s)
{
    int averr = 0;
    frame = pb_video_hw_download(frame, st->hw_download, &averr);
    if (!frame)
        return data_error(s, "cannot copy an NVDEC frame back from the GPU", averr);
    bool rotate = st->o.rotation == ROTATION_APPLY && st->rotation_deg != 0;
    bool sideways = rotate && st->rotation_deg % 180 != 0;
    int conv_h = sideways ? out_w : out_h, conv_w = sideways ? out_h : out_w;
    bool scaled = conv_h != frame->height || conv_w != frame->width;
    st->sws = sws_getCachedContext(st->sws, frame->width, frame->height, frame->format, conv_w,
                                   conv_h, AV_PIX_FMT_RGB24, scaled ? SWS_BILINEAR : SWS_POINT,
                                   NULL, NULL, NULL);
    if (!st->sws)
        return data_error(s, "cannot convert its pixel format to RGB", AVERROR(EINVAL));
    uint8_t *target = rotate ? st->rotate_buf : dst;
    uint8_t *planes[4] = {target, NULL, NULL, NULL};
    int strides[4] = {conv_w * 3, 0, 0, 0};
    sws_scale(st->sws, (const uint8_t *const *)frame->data, frame->linesize, 0, frame->height,
              planes, strides);
    if (rotate)
        pb_video_rotate_rgb(st->rotate_buf, conv_h, conv_w, st->rotation_deg, dst);
    return PB_OK;
}

/* ---- decoding a clip ---------------------------------------------------- */

/* A failed seek says what is wrong with the file, not FFmpeg's errno: a
 * demuxer that finds no position in its index returns -1, which reads as
 * "Operation not permitted". Returns PB_ERR_DATA. */
static int seek_error(const struct video_state *st, struct pb_sample *s, int64_t frame, int averr)
{
    char why[128] = "";
    if (averr == AVERROR(EPERM))
        snprintf(why, sizeof(why), "no position for it in the file's index");
    else
        av_strerror(averr, why, sizeof(why));
    snprintf(s->msg, s->msglen,
             "%s: corrupt or truncated video data: cannot seek to frame %lld of %lld (FFmpeg: "
             "%s%s%s)",
             s->path ? s->path : "(no file)", (long long)frame, (long long)st->frame_count, why,
             pb_video_av_last_log()[0] ? "; " : "", pb_video_av_last_log());
    pb_video_av_clear_log();
    return PB_ERR_DATA;
}

static int seek_to(struct video_state *st, int64_t frame, struct pb_sample *s)
{
    int64_t ts = frame <= 0 ? st->start_pts : rescale_frame_to_pts(st, frame);
    int ret = av_seek_frame(st->fmt, st->stream, ts, AVSEEK_FLAG_BACKWARD);
    if (ret < 0 && frame <= 0)
        ret = av_seek_frame(st->fmt, st->stream, 0, AVSEEK_FLAG_BYTE | AVSEEK_FLAG_BACKWARD);
    if (ret < 0)
        return seek_error(st, s, frame, ret);
    avcodec_flush_buffers(st->dec);
    st->decoded_frame = -1;
    st->last_keyframe = -1;
    st->at_eof = false;
    av_frame_unref(st->held);
    st->held_frame = -1;
    s->counters[CNT_SEEKS]++;
    return PB_OK;
}

/* Whether packet pts carries a frame of the clip (for discard: nonref). */
static bool packet_wanted(const struct video_state *st, const struct pb_video_target *t, int n,
                          int next, int64_t pts)
{
    if (pts == AV_NOPTS_VALUE)
        return true;
    int64_t f = pts_to_frame(st, pts);
    for (int i = next; i < n; i++) {
        if (t[i].frame == f || (st->vfr && t[i].frame == f + 1))
            return true;
        if (t[i].frame > f + 1)
            break;
    }
    return false;
}

/* One clip's decoding, kept on video_decode's stack: what its steps share.
 * Nothing here is allocated. */
struct clip {
    bool reusing;           /* the worker had this file open already     */
    int64_t bytes_before;   /* the file's bytes read before this clip    */
    int n;                  /* frames in the clip                        */
    int out_h, out_w;       /* output frame size                         */
    size_t frame_bytes;     /* one output frame, RGB                     */
    int next;               /* index into targets of the next to deliver */
    int64_t seek_frame;     /* where the last seek aimed                 */
    int retries;            /* seeks further back, after landing past it */
    int64_t packets;        /* packets read for this clip                */
    int64_t max_packets;    /* the bound on them: no endless loop        */
    int consecutive_errors; /* decoding errors in a row                  */
    bool draining;          /* the demuxer reached the end of the file   */
    bool fresh;             /* no frame decoded since the open or seek   */
    uint64_t t;             /* when the current timing lap began         */
    uint64_t demux_ns;      /* sub-stage times of this clip              */
    uint64_t decode_ns;
    uint64_t convert_ns;
};

/* Adds the time since the lap began to *ns and begins the next lap. */
static void lap(struct clip *c, uint64_t *ns)
{
    uint64_t now = pb_now_ns();
    *ns += now - c->t;
    c->t = now;
}

/* Whether a decoding error ends the clip: always with corrupt_frames:
 * error, else after MAX_CONSECUTIVE_ERRORS in a row. */
static bool error_ends_clip(const struct video_opts *o, struct clip *c)
{
    return o->corrupt_frames == CORRUPT_ERROR || ++c->consecutive_errors > MAX_CONSECUTIVE_ERRORS;
}

/* Opens and probes the sample's file unless the worker has it open
 * (reopen: reuse); adds the time to the open sub-stage. On failure the
 * file is closed. */
static int open_clip_file(struct video_state *st, struct pb_sample *s, struct clip *c)
{
    uint64_t t0 = pb_now_ns();
    if (!s->path) {
        snprintf(s->msg, s->msglen, "video: sample %llu has no file", (unsigned long long)s->index);
        return PB_ERR;
    }
    c->reusing = st->fmt && strcmp(st->path, s->path) == 0;
    if (!c->reusing) {
        close_file(st);
        int rc = open_file(st, s);
        s->counters[CNT_OPENS]++;
        if (rc != PB_OK) {
            close_file(st);
            s->substage_ns[SUB_OPEN] += pb_now_ns() - t0;
            return rc;
        }
    }
    c->bytes_before = c->reusing && st->fmt->pb ? st->fmt->pb->bytes_read : 0;
    c->t = pb_now_ns();
    s->substage_ns[SUB_OPEN] += c->t - t0;
    return PB_OK;
}

/* Grows the buffer frames are converted into before rotation to
 * frame_bytes: once per larger video, not per sample. */
static int grow_rotate_buffer(struct video_state *st, size_t frame_bytes)
{
    if (st->o.rotation != ROTATION_APPLY || st->rotation_deg == 0 ||
        frame_bytes <= st->rotate_capacity)
        return PB_OK;
    free(st->rotate_buf);
    st->rotate_buf = malloc(frame_bytes);
    st->rotate_capacity = st->rotate_buf ? frame_bytes : 0;
    return st->rotate_buf ? PB_OK : PB_ERR_NOMEM;
}

/* Plans the clip: which frames (st->targets, sorted by frame) go to which
 * slot, and the output size. PB_ERR_DATA for a video shorter than a clip
 * with short_video: skip, PB_ERR_NOSPACE (out_bytes set) when the output
 * does not fit. */
static int plan_clip(struct video_state *st, struct pb_sample *s, struct clip *c)
{
    const struct video_opts *o = &st->o;
    c->n = (int)o->clip_frames;
    int64_t clip = 0;
    if (o->sampling == PB_VIDEO_UNIFORM)
        clip = (int64_t)(pb_mix64(s->seed ^ 0x756e69666f726dull) % (uint64_t)o->clips_per_video);
    else if (o->sampling == PB_VIDEO_SEQUENTIAL)
        clip = c->reusing ? (st->sequential_clip + 1) % o->clips_per_video : 0;
    int rc = pb_video_clip_indices(st->frame_count, o->clip_frames, o->frame_stride,
                                   o->clips_per_video, o->sampling, o->short_video, s->seed, clip,
                                   st->indices);
    if (rc != PB_OK) {
        snprintf(s->msg, s->msglen,
                 "%s: video of %lld frames is shorter than a clip of %lld frames at stride %lld "
                 "(short_video: skip)",
                 s->path, (long long)st->frame_count, (long long)o->clip_frames,
                 (long long)o->frame_stride);
        return PB_ERR_DATA;
    }
    output_size(st, &c->out_h, &c->out_w);
    c->frame_bytes = (size_t)c->out_h * (size_t)c->out_w * 3;
    if (pb_decoded_size_check(s, (double)c->frame_bytes * c->n, c->out_w, c->out_h) != PB_OK)
        return PB_ERR_DATA;
    if (c->frame_bytes * (size_t)c->n > s->out_capacity) {
        s->out_bytes = c->frame_bytes * (size_t)c->n;
        snprintf(s->msg, s->msglen, "%s: a clip of %d frames of %dx%d needs %zu bytes, have %zu",
                 s->path, c->n, c->out_w, c->out_h, s->out_bytes, s->out_capacity);
        return PB_ERR_NOSPACE;
    }
    rc = grow_rotate_buffer(st, c->frame_bytes);
    if (rc != PB_OK)
        return rc;
    st->sequential_clip = clip;
    for (int j = 0; j < c->n; j++)
        st->targets[j] = (struct pb_video_target){st->indices[j], j};
    pb_video_sort_targets(st->targets, c->n);
    return PB_OK;
}

/* Positions the decoder before the clip's first frame: goes on from where
 * the last clip stopped when that beats seeking, else seeks (seek:
 * keyframe) or rewinds (seek: none). Adds the time since the open to the
 * seek sub-stage. */
static int position_decoder(struct video_state *st, struct pb_sample *s, struct clip *c)
{
    const struct video_opts *o = &st->o;
    int64_t first = st->targets[0].frame;
    int64_t span = (o->clip_frames - 1) * o->frame_stride + 1;
    /* Going on from where the last clip stopped beats seeking when no
     * keyframe lies between here and the clip (the seek would land behind
     * us); when the GOP is not known yet, when the gap is within a span. */
    bool continue_pays = st->last_keyframe >= 0 && st->keyframe_interval > 0
                             ? first < st->last_keyframe + st->keyframe_interval
                             : first - st->decoded_frame <= span + 1;
    /* The file's index knows: a seek would land at or before where we are
     * (its times are decode times, at most a few frames early: going on
     * costs no more than those). */
    const AVIndexEntry *key = avformat_index_get_entry_from_timestamp(
        st->fmt->streams[st->stream], rescale_frame_to_pts(st, first), AVSEEK_FLAG_BACKWARD);
    if (key && key->timestamp != AV_NOPTS_VALUE && st->decoded_frame >= 0 &&
        pts_to_frame(st, key->timestamp) <= st->decoded_frame)
        continue_pays = true;
    bool can_continue = c->reusing && !st->at_eof && st->decoded_frame < first &&
                        (o->seek == SEEK_NONE || continue_pays);
    c->retries = 0;
    c->seek_frame = first;
    if (!can_continue && (c->reusing || o->seek == SEEK_KEYFRAME)) {
        if (o->seek == SEEK_NONE)
            c->seek_frame = 0;
        int rc = seek_to(st, c->seek_frame, s);
        if (rc != PB_OK)
            return rc;
    }
    lap(c, &s->substage_ns[SUB_SEEK]);
    return PB_OK;
}

/* The demuxer landed after the clip's start: seeks further back (to the
 * start of the file on the last try). */
static int seek_earlier(struct video_state *st, struct pb_sample *s, struct clip *c)
{
    c->retries++;
    c->seek_frame =
        c->retries == MAX_SEEK_RETRIES ? 0 : c->seek_frame - ((int64_t)2 << (2 * (c->retries - 1)));
    if (c->seek_frame < 0)
        c->seek_frame = 0;
    av_frame_unref(st->frame);
    int rc = seek_to(st, c->seek_frame, s);
    c->draining = false;
    lap(c, &s->substage_ns[SUB_SEEK]);
    return rc;
}

/* Converts src into the next target's slot and copies it to the targets
 * after it that want the same frame. */
static int deliver(struct video_state *st, struct pb_sample *s, struct clip *c, const AVFrame *src)
{
    const struct pb_video_target *t = st->targets;
    int64_t want = t[c->next].frame;
    uint8_t *first = s->out + (size_t)t[c->next].slot * c->frame_bytes;
    int rc = convert_frame(st, src, c->out_h, c->out_w, first, s);
    if (rc != PB_OK)
        return rc;
    s->counters[CNT_DELIVERED]++;
    for (c->next++; c->next < c->n && t[c->next].frame == want; c->next++) {
        memcpy(s->out + (size_t)t[c->next].slot * c->frame_bytes, first, c->frame_bytes);
        s->counters[CNT_DELIVERED]++;
    }
    return PB_OK;
}

/* Delivers the targets up to decoded frame f: those before it take the
 * frame on screen then (the held one), those at f take st->frame. */
static int deliver_through(struct video_state *st, struct pb_sample *s, struct clip *c, int64_t f)
{
    const struct pb_video_target *t = st->targets;
    while (c->next < c->n && t[c->next].frame < f) {
        if (st->held_frame < 0 && t[c->next].frame < f - 1) {
            char what[160];
            snprintf(what, sizeof(what),
                     "cannot decode frame %lld: the first frame decoded is %lld",
                     (long long)t[c->next].frame, (long long)f);
            return data_error(s, what, 0);
        }
        int rc = deliver(st, s, c, st->held_frame >= 0 ? st->held : st->frame);
        if (rc != PB_OK)
            return rc;
    }
    if (c->next < c->n && t[c->next].frame == f)
        return deliver(st, s, c, st->frame);
    return PB_OK;
}

/* Takes the frame the decoder returned in st->frame: numbers it, tracks
 * keyframes, seeks back if it lies past the clip's start, delivers the
 * targets it settles and keeps it as the held frame. */
static int take_frame(struct video_state *st, struct pb_sample *s, struct clip *c)
{
    const struct video_opts *o = &st->o;
    c->consecutive_errors = 0;
    s->counters[CNT_DECODED]++;
    s->counters[CNT_HW_FRAMES] += pb_video_hw_frame(st->frame);
    int64_t pts = st->frame->best_effort_timestamp;
    int64_t f = pts == AV_NOPTS_VALUE ? st->decoded_frame + 1 : pts_to_frame(st, pts);
    st->decoded_frame = f;
    if (st->frame->key_frame) {
        if (st->last_keyframe >= 0 && f > st->last_keyframe)
            st->keyframe_interval = f - st->last_keyframe;
        st->last_keyframe = f;
    }
    if (c->fresh && f > st->targets[c->next].frame && st->held_frame < 0 &&
        o->seek == SEEK_KEYFRAME && c->retries < MAX_SEEK_RETRIES)
        return seek_earlier(st, s, c);
    c->fresh = false;
    int rc = deliver_through(st, s, c, f);
    /* Keep this frame: a later target may fall before the next. */
    av_frame_unref(st->held);
    av_frame_move_ref(st->held, st->frame);
    st->held_frame = f;
    lap(c, &c->convert_ns);
    return rc;
}

/* Reads the next packet of the video stream and sends it to the decoder
 * (at the end of the file, the drain signal). PB_ERR_DATA when the packet
 * limit is reached, reading fails, or a corrupt packet ends the clip. */
static int feed_packet(struct video_state *st, struct pb_sample *s, struct clip *c)
{
    const struct video_opts *o = &st->o;
    if (++c->packets > c->max_packets)
        return data_error(s, "no progress decoding (packet limit reached)", AVERROR_INVALIDDATA);
    int ret = av_read_frame(st->fmt, st->pkt);
    lap(c, &c->demux_ns);
    if (ret == AVERROR_EOF) {
        c->draining = true;
        ret = avcodec_send_packet(st->dec, NULL);
    } else if (ret < 0) {
        return data_error(s, "cannot read a packet", ret);
    } else {
        if (st->pkt->stream_index != st->stream) {
            av_packet_unref(st->pkt);
            return PB_OK;
        }
        if (o->discard == DISCARD_NONREF)
            st->dec->skip_frame = packet_wanted(st, st->targets, c->n, c->next, st->pkt->pts)
                                      ? AVDISCARD_DEFAULT
                                      : AVDISCARD_NONREF;
        ret = avcodec_send_packet(st->dec, st->pkt);
        av_packet_unref(st->pkt);
    }
    lap(c, &c->decode_ns);
    if (ret < 0 && ret != AVERROR(EAGAIN) && ret != AVERROR_EOF && error_ends_clip(o, c))
        return data_error(s, "corrupt video packet", ret);
    return PB_OK;
}

/* Demuxes and decodes forward, delivering each target as it comes, until
 * the clip is complete, the stream ends (st->at_eof) or an error. */
static int decode_clip(struct video_state *st, struct pb_sample *s, struct clip *c)
{
    const struct video_opts *o = &st->o;
    c->next = 0;
    c->max_packets = st->frame_count * 2 + 256;
    c->packets = 0;
    c->consecutive_errors = 0;
    c->draining = st->at_eof;
    c->fresh = st->decoded_frame < 0; /* right after open or seek */
    int rc = PB_OK;
    while (c->next < c->n && rc == PB_OK) {
        /* Receive whatever the decoder has ready. */
        int ret = avcodec_receive_frame(st->dec, st->frame);
        lap(c, &c->decode_ns);
        if (ret == 0) {
            rc = take_frame(st, s, c);
        } else if (ret == AVERROR_EOF) {
            st->at_eof = true;
            break;
        } else if (ret != AVERROR(EAGAIN)) {
            if (error_ends_clip(o, c))
                rc = data_error(s, "corrupt video frame", ret);
        } else if (c->draining) {
            st->at_eof = true;
            break;
        } else {
            rc = feed_packet(st, s, c); /* the decoder wants input */
        }
    }
    return rc;
}

/* The stream ended before the clip did. Within one frame of the
 * container's count that is rounding (variable rate): the last frame fills
 * the rest. Further is a truncated or mislabelled file: PB_ERR_DATA. */
static int deliver_past_end(struct video_state *st, struct pb_sample *s, struct clip *c)
{
    const struct pb_video_target *t = st->targets;
    if (st->held_frame < 0 || t[c->next].frame > st->held_frame + 1) {
        char what[192];
        snprintf(what, sizeof(what),
                 "the stream ends at frame %lld, the clip needs frame %lld (%lld frames "
                 "expected)",
                 (long long)st->held_frame, (long long)t[c->next].frame,
                 (long long)st->frame_count);
        return data_error(s, what, 0);
    }
    for (; c->next < c->n; c->next++) {
        if (convert_frame(st, st->held, c->out_h, c->out_w,
                          s->out + (size_t)t[c->next].slot * c->frame_bytes, s) != PB_OK)
            return PB_ERR_DATA;
        s->counters[CNT_DELIVERED]++;
    }
    return PB_OK;
}

/* Ends the clip with rc: adds its sub-stage times and bytes read to the
 * sample, closes the file after an error or with reopen: per_clip, and on
 * success sets the output's size and shape. Returns rc. */
static int finish_clip(struct video_state *st, struct pb_sample *s, const struct clip *c, int rc)
{
    const struct video_opts *o = &st->o;
    if (o->discard == DISCARD_NONREF && st->dec)
        st->dec->skip_frame = AVDISCARD_DEFAULT;
    s->substage_ns[SUB_DEMUX] += c->demux_ns;
    s->substage_ns[SUB_DECODE] += c->decode_ns;
    s->substage_ns[SUB_CONVERT] += c->convert_ns;
    if (st->fmt && st->fmt->pb)
        s->bytes_read += (uint64_t)(st->fmt->pb->bytes_read - c->bytes_before);
    if (rc != PB_OK || o->reopen == REOPEN_PER_CLIP)
        close_file(st);
    if (rc != PB_OK)
        return rc;
    s->out_bytes = c->frame_bytes * (size_t)c->n;
    s->out_shape = (struct pb_shape){.dtype = PB_DTYPE_U8, .frames = c->n, .height = c->out_h,
                                     .width = c->out_w, .channels = 3, .layout = PB_LAYOUT_THWC};
    return PB_OK;
}

/* clips_per_visit > 1: a sample of a visit already decoded is copied out
 * of the visit's buffer; otherwise the visit's stretches are decoded into
 * it, each positioned and decoded as one clip of many targets (see
 * decoders/video_visit.h), on a copy of the sample that writes there. */
static int decode_visit(struct video_state *st, struct pb_sample *s)
{
    struct pb_video_visit *v = st->visit;
    if (pb_video_visit_holds(v, s))
        return pb_video_visit_deliver(v, s);
    struct clip c = {0};
    struct pb_sample vs = *s;
    int rc = open_clip_file(st, &vs, &c);
    if (rc == PB_OK) {
        output_size(st, &c.out_h, &c.out_w);
        c.frame_bytes = (size_t)c.out_h * (size_t)c.out_w * 3;
        size_t frames = (size_t)v->clips * (size_t)st->o.clip_frames;
        rc = pb_decoded_size_check(&vs, (double)c.frame_bytes * (double)frames, c.out_w, c.out_h);
    }
    if (rc == PB_OK)
        rc = pb_video_visit_begin(v, &vs, st->frame_count, st->o.frame_stride, st->o.sampling,
                                  st->o.short_video, c.out_h, c.out_w);
    if (rc == PB_OK)
        rc = grow_rotate_buffer(st, c.frame_bytes);
    vs.out = v->frames;
    for (int k = 0; rc == PB_OK && k < v->stretch_count; k++) {
        c.n = pb_video_visit_targets(v, k, st->targets);
        pb_video_sort_targets(st->targets, c.n);
        rc = position_decoder(st, &vs, &c);
        if (rc == PB_OK)
            rc = decode_clip(st, &vs, &c);
        if (rc == PB_OK && c.next < c.n)
            rc = deliver_past_end(st, &vs, &c);
        c.reusing = true; /* the next stretch may go on from here */
    }
    c.n = (int)st->o.clip_frames;
    rc = finish_clip(st, &vs, &c, rc);
    memcpy(s->substage_ns, vs.substage_ns, sizeof(s->substage_ns));
    memcpy(s->counters, vs.counters, sizeof(s->counters));
    s->bytes_read = vs.bytes_read;
    pb_video_visit_end(v, rc == PB_OK);
    return rc == PB_OK ? pb_video_visit_deliver(v, s) : rc;
}

/* One clip of the sample's file into sample->out: open, plan, position,
 * decode, finish. A clip that cannot be planned or positioned leaves the
 * file open for the next one; a failure to open or decode closes it. */
static int video_decode(void *state, struct pb_sample *s)
{
    struct video_state *st = state;
    if (st->visit)
        return decode_visit(st, s);
    struct clip c = {0};
    int rc = open_clip_file(st, s, &c);
    if (rc == PB_OK)
        rc = plan_clip(st, s, &c);
    if (rc == PB_OK)
        rc = position_decoder(st, s, &c);
    if (rc != PB_OK)
        return rc;
    rc = decode_clip(st, s, &c);
    if (rc == PB_OK && c.next < c.n)
        rc = deliver_past_end(st, s, &c);
    return finish_clip(st, s, &c, rc);
}

/* ---- init / cleanup ----------------------------------------------------- */

static void video_cleanup(void *state)
{
    struct video_state *st = state;
    if (!st)
        return;
    close_file(st);
    av_packet_free(&st->pkt);
    av_frame_free(&st->frame);
    av_frame_free(&st->held);
    sws_freeContext(st->sws);
    free(st->indices);
    free(st->targets);
    free(st->rotate_buf);
    pb_video_visit_free(st->visit);
    av_frame_free(&st->hw_download);
    av_buffer_unref(&st->hw_device);
    free(st);
}

/* The rules of size and shorter_side: one of them, size of one or two
 * values. */
static int video_validate(const void *opts, char *msg, size_t msglen)
{
    const struct video_opts *o = opts;
    if (o->size.count > 2) {
        snprintf(msg, msglen,
                 "pipeline.decode.size takes N (a square) or [height, width], got %d values",
                 o->size.count);
        return PB_ERR_CONFIG;
    }
    if (o->size.count > 0 && o->shorter_side > 0) {
        snprintf(msg, msglen,
                 "pipeline.decode (decoder: video) takes size or shorter_side, not both");
        return PB_ERR_CONFIG;
    }
    if (o->clips_per_visit > 1 && o->sampling == PB_VIDEO_SEQUENTIAL) {
        snprintf(msg, msglen, "pipeline.decode.clips_per_visit takes sampling: random or uniform "
                              "(sequential already goes on clip after clip)");
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

static int video_init(void **state, const void *opts, const struct pb_stage_plan *in,
                      struct pb_stage_plan *out, char *msg, size_t msglen)
{
    (void)in;
    const struct video_opts *o = opts;
    int rc = video_validate(o, msg, msglen);
    if (rc != PB_OK)
        return rc;
    pb_video_av_install_log();
    struct video_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->o = *o;
    st->decoded_frame = -1;
    st->held_frame = -1;
    st->pkt = av_packet_alloc();
    st->frame = av_frame_alloc();
    st->held = av_frame_alloc();
    st->hw_download = av_frame_alloc();
    st->indices = calloc((size_t)o->clip_frames, sizeof(*st->indices));
    st->targets = calloc((size_t)(o->clip_frames * o->clips_per_visit), sizeof(*st->targets));
    if (o->clips_per_visit > 1)
        st->visit = pb_video_visit_new((int)o->clips_per_visit, o->clip_frames);
    if (!st->pkt || !st->frame || !st->held || !st->hw_download || !st->indices ||
        !st->targets || (o->clips_per_visit > 1 && !st->visit)) {
        video_cleanup(st);
        return PB_ERR_NOMEM;
    }
    rc = pb_video_hw_open(o->hwaccel, &st->hw_device, msg, msglen);
    if (rc != PB_OK) {
        video_cleanup(st);
        return rc;
    }
    /* The largest clip: exact with size; otherwise a guess
     * (landscape 16:9, or 720p at native size) that the pipeline grows
     * from when a larger video comes (PB_ERR_NOSPACE). */
    int32_t h = 720, w = 1280;
    if (o->size.count > 0) {
        h = (int32_t)o->size.v[0];
        w = (int32_t)o->size.v[o->size.count > 1 ? 1 : 0];
    } else if (o->shorter_side > 0) {
        h = (int32_t)o->shorter_side;
        w = (int32_t)((o->shorter_side * 16 + 8) / 9);
    }
    out->shape = (struct pb_shape){.dtype = PB_DTYPE_U8, .frames = (int32_t)o->clip_frames,
                                   .height = h, .width = w, .channels = 3,
                                   .layout = PB_LAYOUT_THWC};
    out->max_bytes = pb_shape_bytes(&out->shape);
    *state = st;
    return PB_OK;
}

/* The sampler's samples per visit of a file. */
static int64_t video_samples_per_visit(const void *opts)
{
    return ((const struct video_opts *)opts)->clips_per_visit;
}

/* Clips are RGB whatever the file holds. */
static int video_output_channels(const void *opts)
{
    (void)opts;
    return 3;
}

const struct pb_decoder_ops pb_decoder_video = {
    .name = "video",
    .summary = "Clips of video files through FFmpeg (libavformat/libavcodec), RGB THWC; opens "
               "the file itself (no read stage).",
    .flags = PB_DECODER_OPENS_FILE,
    .substages = video_substages,
    .counters = video_counters,
    .opts = video_opts,
    .opts_size = sizeof(struct video_opts),
    .validate = video_validate,
    .output_channels = video_output_channels,
    .samples_per_visit = video_samples_per_visit,
    .init = video_init,
    .decode = video_decode,
    .cleanup = video_cleanup,
};
