/* The `video` decoder and video generation: clip index arithmetic (stride,
 * edges, short videos with pad/loop/skip), seek accuracy (clips decoded at
 * random positions deliver exactly the frames asked for, read back from the
 * frame numbers generated videos carry in their pixels, for GOP 1, 12 and
 * 48, with every way of seeking, reusing, discarding and threading), and
 * broken files (truncated, zero-length, wrong extension, audio-only,
 * corrupt packets), each a PB_ERR_DATA naming the file and FFmpeg's reason,
 * counted under on_error: skip and stopping the run under fail. Test data
 * is tiny (64x48) and made in a temporary folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "decoders/decoder.h"
#include "decoders/video_clip.h"
#include "decoders/video_visit.h"
#include "pipelines/generate.h"
#include "tests/testutil.h"

#define W 64
#define H 48
#define FRAMES 120

static char workdir[] = "/tmp/pbench-video-XXXXXX";
static const char *binary;

/* ---- helpers ------------------------------------------------------------ */

static void gen_spec(struct pb_generate_spec *g, int64_t count, int64_t frames, int64_t gop)
{
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_opt_set_defaults(pb_generate_opts, g, msg, sizeof(msg)), PB_OK);
    g->kind = PB_GENERATE_VIDEO;
    g->count = count;
    g->frames = frames;
    g->gop = gop;
    g->fps = 25;
    snprintf(g->size, sizeof(g->size), "%dx%d", W, H);
}

/* Generates count videos into workdir/name (once). */
static void make_videos(const char *name, int64_t count, int64_t frames, int64_t gop, const char *codec)
{
    char dir[512], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/%s", workdir, name);
    struct stat sb;
    if (stat(dir, &sb) == 0)
        return;
    struct pb_generate_spec g;
    gen_spec(&g, count, frames, gop);
    if (codec)
        pb_strlcpy(g.codec, codec, sizeof(g.codec));
    int rc = pb_dataset_generate(&g, dir, msg, sizeof(msg));
    if (rc != PB_OK)
        fprintf(stderr, "generate: %s\n", msg);
    assert_int_equal(rc, PB_OK);
}

struct dec {
    const struct pb_decoder_ops *ops;
    void *opts;
    void *state;
    struct pb_stage_plan out;
};

/* Makes a video decoder from "key=value key=value" options. */
static void dec_open(struct dec *d, const char *options)
{
    char msg[PB_MSG_MAX];
    d->ops = pb_decoder_find("video");
    assert_non_null(d->ops);
    assert_null(d->ops->unavailable_reason);
    d->opts = calloc(1, d->ops->opts_size);
    assert_int_equal(pb_opt_set_defaults(d->ops->opts, d->opts, msg, sizeof(msg)), PB_OK);
    char buf[512];
    pb_strlcpy(buf, options, sizeof(buf));
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        assert_non_null(eq);
        *eq = 0;
        const struct pb_opt *o = pb_opt_find(d->ops->opts, tok);
        assert_non_null(o);
        int rc = pb_opt_parse(o, eq + 1, d->opts, tok, msg, sizeof(msg));
        if (rc != PB_OK)
            fprintf(stderr, "%s\n", msg);
        assert_int_equal(rc, PB_OK);
    }
    struct pb_stage_plan in = {.shape = {.dtype = PB_DTYPE_BYTES}, .max_bytes = 1, .worker = 0};
    d->out = in;
    assert_int_equal(d->ops->init(&d->state, d->opts, &in, &d->out, msg, sizeof(msg)), PB_OK);
}

static void dec_close(struct dec *d)
{
    d->ops->cleanup(d->state);
    free(d->opts);
}

static uint8_t out_buf[FRAMES * W * H * 3];
static char msg_buf[PB_MSG_MAX];

static int dec_run(struct dec *d, const char *path, uint64_t seed, struct pb_sample *s)
{
    memset(s, 0, sizeof(*s));
    s->path = path;
    s->seed = seed;
    s->out = out_buf;
    s->out_capacity = sizeof(out_buf);
    s->msg = msg_buf;
    s->msglen = sizeof(msg_buf);
    msg_buf[0] = 0;
    return d->ops->decode(d->state, s);
}

/* ---- clip arithmetic ------------------------------------------------------ */

static void test_clip_indices(void **state)
{
    (void)state;
    int64_t idx[16];
    /* Stride: 4 frames, 3 apart; every start within [0, N - span]. */
    bool saw_first = false, saw_last = false;
    for (uint64_t seed = 0; seed < 2000; seed++) {
        assert_int_equal(pb_video_clip_indices(20, 4, 3, 1, PB_VIDEO_RANDOM, PB_VIDEO_PAD, seed, 0, idx),
                         PB_OK);
        assert_true(idx[0] >= 0 && idx[0] <= 20 - 10);
        for (int j = 1; j < 4; j++)
            assert_int_equal(idx[j], idx[0] + 3 * j);
        saw_first |= idx[0] == 0;
        saw_last |= idx[3] == 19;
    }
    assert_true(saw_first && saw_last); /* both edges are reachable */
    /* A clip exactly as long as the video: one place only. */
    assert_int_equal(pb_video_clip_indices(10, 4, 3, 1, PB_VIDEO_RANDOM, PB_VIDEO_SKIP, 77, 0, idx), PB_OK);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[3], 9);
    /* Same seed, same clip. */
    int64_t again[16];
    pb_video_clip_indices(1000, 16, 2, 1, PB_VIDEO_RANDOM, PB_VIDEO_PAD, 42, 0, idx);
    pb_video_clip_indices(1000, 16, 2, 1, PB_VIDEO_RANDOM, PB_VIDEO_PAD, 42, 0, again);
    assert_memory_equal(idx, again, 16 * sizeof(int64_t));

    /* Uniform: 3 clips of span 7 over 100 frames start at 0, 46, 93. */
    const int64_t starts[3] = {0, 46, 93};
    for (int k = 0; k < 3; k++) {
        pb_video_clip_indices(100, 4, 2, 3, PB_VIDEO_UNIFORM, PB_VIDEO_PAD, 0, k, idx);
        assert_int_equal(idx[0], starts[k]);
        assert_int_equal(idx[3], starts[k] + 6);
    }
    pb_video_clip_indices(100, 4, 2, 1, PB_VIDEO_UNIFORM, PB_VIDEO_PAD, 0, 0, idx);
    assert_int_equal(idx[0], 46); /* one clip: the middle */

    /* Sequential: back to back on the stride grid, wrapping round. */
    for (int k = 0; k < 5; k++) {
        pb_video_clip_indices(50, 4, 2, 100, PB_VIDEO_SEQUENTIAL, PB_VIDEO_PAD, 0, k, idx);
        /* span 7: starts 0, 8, ..., 40 fit (6 positions) */
        assert_int_equal(idx[0], (k % 6) * 8);
        assert_int_equal(idx[1], (k % 6) * 8 + 2);
    }
    pb_video_clip_indices(50, 4, 2, 100, PB_VIDEO_SEQUENTIAL, PB_VIDEO_PAD, 0, 6, idx);
    assert_int_equal(idx[0], 0);

    /* Short video (5 frames, clip of 6 at stride 2 spans 11). */
    const int64_t pad[6] = {0, 2, 4, 4, 4, 4}, loop[6] = {0, 2, 4, 1, 3, 0};
    assert_int_equal(pb_video_clip_indices(5, 6, 2, 1, PB_VIDEO_RANDOM, PB_VIDEO_PAD, 9, 0, idx), PB_OK);
    assert_memory_equal(idx, pad, sizeof(pad));
    assert_int_equal(pb_video_clip_indices(5, 6, 2, 1, PB_VIDEO_RANDOM, PB_VIDEO_LOOP, 9, 0, idx), PB_OK);
    assert_memory_equal(idx, loop, sizeof(loop));
    assert_int_equal(pb_video_clip_indices(5, 6, 2, 1, PB_VIDEO_RANDOM, PB_VIDEO_SKIP, 9, 0, idx),
                     PB_ERR_DATA);
    /* Pad with a stride that misses the last frame: repeat the last on the grid. */
    const int64_t pad3[4] = {0, 3, 3, 3};
    pb_video_clip_indices(5, 4, 3, 1, PB_VIDEO_RANDOM, PB_VIDEO_PAD, 0, 0, idx);
    assert_memory_equal(idx, pad3, sizeof(pad3));
    assert_int_equal(pb_video_clip_indices(0, 4, 1, 1, PB_VIDEO_RANDOM, PB_VIDEO_PAD, 0, 0, idx),
                     PB_ERR_DATA);
}

/* ---- seek accuracy ------------------------------------------------------ */

/* Decodes clips with options and checks every delivered frame is the one
 * pb_video_clip_indices asked for. */
static void check_clips(const char *path, const char *options, int clips, int64_t frame_count,
                        uint64_t *decoded, uint64_t *delivered)
{
    struct dec d;
    dec_open(&d, options);
    const int64_t clip_frames = d.out.shape.frames;
    const char *at = strstr(options, "frame_stride=");
    const int64_t stride = at ? atoll(at + strlen("frame_stride=")) : 1;
    int64_t want[FRAMES];
    *decoded = *delivered = 0;
    for (int c = 0; c < clips; c++) {
        struct pb_sample s;
        uint64_t seed = pb_mix64((uint64_t)c + 1000);
        int rc = dec_run(&d, path, seed, &s);
        if (rc != PB_OK)
            fprintf(stderr, "%s [%s]: %s\n", path, options, msg_buf);
        assert_int_equal(rc, PB_OK);
        assert_int_equal(s.out_shape.frames, clip_frames);
        assert_int_equal(s.out_shape.height, H);
        assert_int_equal(s.out_shape.width, W);
        assert_int_equal(s.out_bytes, (size_t)clip_frames * W * H * 3);
        pb_video_clip_indices(frame_count, clip_frames, stride, 1, PB_VIDEO_RANDOM, PB_VIDEO_PAD,
                              seed, 0, want);
        for (int64_t j = 0; j < clip_frames; j++) {
            int64_t got = pb_video_frame_number(out_buf + (size_t)j * W * H * 3, W, H);
            if (got != want[j])
                fprintf(stderr, "%s [%s] clip %d frame %lld: got %lld, want %lld\n", path, options,
                        c, (long long)j, (long long)got, (long long)want[j]);
            assert_int_equal(got, want[j]);
        }
        *decoded += s.counters[0];
        *delivered += s.counters[1];
        assert_int_equal(s.counters[1], (uint64_t)clip_frames);
    }
    dec_close(&d);
}

static void test_seek_accuracy(void **state)
{
    (void)state;
    const int64_t gops[] = {1, 12, 48};
    const char *const variants[] = {
        "clip_frames=8 frame_stride=3",
        "clip_frames=8 frame_stride=3 reopen=per_clip",
        "clip_frames=8 frame_stride=3 discard=nonref",
        "clip_frames=8 frame_stride=2 threads=2 thread_type=frame",
        "clip_frames=8 frame_stride=2 threads=2 thread_type=slice discard=nonref",
        "clip_frames=5 frame_stride=1 seek=none",
    };
    for (size_t g = 0; g < PB_ARRAY_LEN(gops); g++) {
        char name[32], path[512];
        snprintf(name, sizeof(name), "gop%lld", (long long)gops[g]);
        make_videos(name, 1, FRAMES, gops[g], NULL);
        snprintf(path, sizeof(path), "%s/%s/video_0000000.mp4", workdir, name);
        uint64_t keyframe_decoded = 0, plain_decoded = 0, nonref_decoded = 0;
        for (size_t v = 0; v < PB_ARRAY_LEN(variants); v++) {
            uint64_t decoded, delivered;
            check_clips(path, variants[v], 12, FRAMES, &decoded, &delivered);
            assert_true(decoded >= delivered || strstr(variants[v], "nonref"));
            if (v == 0)
                plain_decoded = decoded;
            if (v == 2)
                nonref_decoded = decoded;
            if (v == 1)
                keyframe_decoded = decoded;
            fprintf(stderr, "gop %lld [%s]: decoded %llu delivered %llu\n", (long long)gops[g],
                    variants[v], (unsigned long long)decoded, (unsigned long long)delivered);
        }
        /* Skipping non-reference frames decodes fewer (B-frames are on),
         * except with GOP 1 where every frame is a keyframe. */
        if (gops[g] > 1)
            assert_true(nonref_decoded < plain_decoded);
        /* With every frame a keyframe, a seek lands at most a few frames
         * before the clip: what is decoded is the clip's span (22 frames
         * at stride 3) and little more. */
        if (gops[g] == 1)
            assert_true(keyframe_decoded <= 12 * (22 + 3));
    }
}

/* Decodes the short video at path with options and checks the frame
 * numbers of its six-frame clip against want. */
static void expect_short_clip(const char *path, const char *options, const int64_t want[6])
{
    struct dec d;
    struct pb_sample s;
    dec_open(&d, options);
    assert_int_equal(dec_run(&d, path, 1, &s), PB_OK);
    for (int j = 0; j < 6; j++)
        assert_int_equal(pb_video_frame_number(out_buf + (size_t)j * W * H * 3, W, H), want[j]);
    dec_close(&d);
}

static void test_sequential_and_mpeg4(void **state)
{
    (void)state;
    make_videos("mpeg4", 1, 60, 12, "mpeg4");
    char path[512];
    snprintf(path, sizeof(path), "%s/mpeg4/video_0000000.mp4", workdir);
    uint64_t decoded, delivered;
    check_clips(path, "clip_frames=6 frame_stride=2", 8, 60, &decoded, &delivered);

    /* Sequential, one file: straight through, no seek after the first clip,
     * every decoded frame delivered. */
    snprintf(path, sizeof(path), "%s/gop12/video_0000000.mp4", workdir);
    make_videos("gop12", 1, FRAMES, 12, NULL);
    struct dec d;
    dec_open(&d, "clip_frames=10 sampling=sequential clips_per_video=12 seek=none");
    uint64_t dec_total = 0, del_total = 0, seeks = 0, opens = 0;
    for (int c = 0; c < 12; c++) {
        struct pb_sample s;
        assert_int_equal(dec_run(&d, path, (uint64_t)c, &s), PB_OK);
        for (int j = 0; j < 10; j++)
            assert_int_equal(pb_video_frame_number(out_buf + (size_t)j * W * H * 3, W, H), c * 10 + j);
        dec_total += s.counters[0];
        del_total += s.counters[1];
        seeks += s.counters[2];
        opens += s.counters[3];
        for (int i = 0; i < 5; i++)
            assert_true(s.substage_ns[i] < 60ull * 1000000000ull);
    }
    assert_int_equal(del_total, FRAMES);
    assert_true(dec_total <= FRAMES);
    assert_int_equal(seeks, 0);
    assert_int_equal(opens, 1);
    dec_close(&d);

    /* Fused resize: shorter side 24 of 64x48 is 32x24; too small a buffer
     * asks for more. */
    dec_open(&d, "clip_frames=4 shorter_side=24");
    struct pb_sample s;
    assert_int_equal(dec_run(&d, path, 5, &s), PB_OK);
    assert_int_equal(s.out_shape.height, 24);
    assert_int_equal(s.out_shape.width, 32);
    memset(&s, 0, sizeof(s));
    s.path = path;
    s.out = out_buf;
    s.out_capacity = 100;
    s.msg = msg_buf;
    s.msglen = sizeof(msg_buf);
    assert_int_equal(d.ops->decode(d.state, &s), PB_ERR_NOSPACE);
    assert_int_equal(s.out_bytes, 4 * 24 * 32 * 3);
    dec_close(&d);

    /* Short videos: pad repeats the last frame, skip is a data error. */
    make_videos("short", 1, 5, 12, NULL);
    snprintf(path, sizeof(path), "%s/short/video_0000000.mp4", workdir);
    expect_short_clip(path, "clip_frames=6 frame_stride=2 short_video=pad",
                      (const int64_t[6]){0, 2, 4, 4, 4, 4});
    expect_short_clip(path, "clip_frames=6 frame_stride=2 short_video=loop",
                      (const int64_t[6]){0, 2, 4, 1, 3, 0});
    dec_open(&d, "clip_frames=6 frame_stride=2 short_video=skip");
    assert_int_equal(dec_run(&d, path, 1, &s), PB_ERR_DATA);
    assert_non_null(strstr(msg_buf, path));
    assert_non_null(strstr(msg_buf, "shorter than a clip"));
    dec_close(&d);
}

/* ---- broken files --------------------------------------------------------- */

/* Writes a short audio-only MP4 (FFmpeg's native AAC encoder). */
static void write_audio_only(const char *path)
{
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_AAC);
    assert_non_null(codec);
    AVFormatContext *fmt = NULL;
    assert_true(avformat_alloc_output_context2(&fmt, NULL, "mp4", path) >= 0);
    AVCodecContext *enc = avcodec_alloc_context3(codec);
    enc->sample_fmt = AV_SAMPLE_FMT_FLTP;
    enc->sample_rate = 8000;
    av_channel_layout_default(&enc->ch_layout, 1);
    enc->bit_rate = 32000;
    enc->time_base = (AVRational){1, 8000};
    if (fmt->oformat->flags & AVFMT_GLOBALHEADER)
        enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    assert_true(avcodec_open2(enc, codec, NULL) >= 0);
    AVStream *st = avformat_new_stream(fmt, NULL);
    avcodec_parameters_from_context(st->codecpar, enc);
    st->time_base = enc->time_base;
    assert_true(avio_open(&fmt->pb, path, AVIO_FLAG_WRITE) >= 0);
    assert_true(avformat_write_header(fmt, NULL) >= 0);
    AVFrame *frame = av_frame_alloc();
    frame->nb_samples = enc->frame_size;
    frame->format = enc->sample_fmt;
    av_channel_layout_copy(&frame->ch_layout, &enc->ch_layout);
    assert_true(av_frame_get_buffer(frame, 0) >= 0);
    AVPacket *pkt = av_packet_alloc();
    for (int i = 0; i <= 10; i++) {
        AVFrame *f = NULL;
        if (i < 10) {
            av_frame_make_writable(frame);
            float *x = (float *)frame->data[0];
            for (int k = 0; k < frame->nb_samples; k++)
                x[k] = (float)((k * 37 % 100) - 50) / 200.0f;
            frame->pts = (int64_t)i * frame->nb_samples;
            f = frame;
        }
        avcodec_send_frame(enc, f);
        while (avcodec_receive_packet(enc, pkt) == 0) {
            av_packet_rescale_ts(pkt, enc->time_base, st->time_base);
            pkt->stream_index = 0;
            av_interleaved_write_frame(fmt, pkt);
        }
    }
    av_write_trailer(fmt);
    avio_closep(&fmt->pb);
    avformat_free_context(fmt);
    av_packet_free(&pkt);
    av_frame_free(&frame);
    avcodec_free_context(&enc);
}

static void copy_file(const char *from, const char *to, long truncate_at, long flip_from, long flip_len)
{
    size_t n;
    uint8_t *buf = (uint8_t *)pb_test_read_file(from, &n, true);
    if (truncate_at >= 0 && (size_t)truncate_at < n)
        n = (size_t)truncate_at;
    for (long i = flip_from; i >= 0 && i < flip_from + flip_len && (size_t)i < n; i++)
        buf[i] ^= 0x5a;
    pb_test_write_file(to, buf, n);
    free(buf);
}

static long file_size(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return (long)sb.st_size;
}

struct broken {
    const char *file;
    const char *reason; /* part of the message FFmpeg's reason gives */
};

static const struct broken broken_files[] = {
    {"truncated.mp4", "moov atom not found"},
    {"empty.mp4", "Invalid data found"},
    {"text.mp4", "Invalid data found"},
    {"audio.mp4", "no video stream"},
    {"corrupt.mp4", "corrupt video"},
};

/* Makes workdir/broken/NAME/ holding two good videos and one broken one. */
static void make_broken_sets(void)
{
    make_videos("good", 2, 30, 6, NULL);
    char good[512];
    snprintf(good, sizeof(good), "%s/good/video_0000000.mp4", workdir);
    long size = file_size(good);
    for (size_t i = 0; i < PB_ARRAY_LEN(broken_files); i++) {
        char dir[512], path[600], cmd[1400];
        snprintf(dir, sizeof(dir), "%s/broken-%zu", workdir, i);
        snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s'/good/*.mp4 '%s'/", dir, workdir, dir);
        assert_int_equal(system(cmd), 0);
        snprintf(path, sizeof(path), "%s/%s", dir, broken_files[i].file);
        switch (i) {
        case 0: copy_file(good, path, size * 6 / 10, -1, 0); break;
        case 1: copy_file(good, path, 0, -1, 0); break;
        case 2: {
            FILE *f = fopen(path, "w");
            fputs("this is not a video, whatever its name says\n", f);
            fclose(f);
            break;
        }
        case 3: write_audio_only(path); break;
        default: copy_file(good, path, -1, size / 2, 256); break;
        }
    }
}

static void test_broken_files_decoder(void **state)
{
    (void)state;
    make_broken_sets();
    for (size_t i = 0; i < PB_ARRAY_LEN(broken_files); i++) {
        char path[600];
        snprintf(path, sizeof(path), "%s/broken-%zu/%s", workdir, i, broken_files[i].file);
        /* The whole video in one clip, so every packet is decoded. */
        for (int reopen = 0; reopen < 2; reopen++) {
            struct dec d;
            dec_open(&d, reopen ? "clip_frames=30 seek=none reopen=per_clip"
                                : "clip_frames=30 seek=none");
            struct pb_sample s;
            int rc = dec_run(&d, path, 3, &s);
            if (rc != PB_ERR_DATA || !strstr(msg_buf, broken_files[i].reason))
                fprintf(stderr, "%s: rc %d: %s\n", broken_files[i].file, rc, msg_buf);
            assert_int_equal(rc, PB_ERR_DATA);
            assert_non_null(strstr(msg_buf, path));
            assert_non_null(strstr(msg_buf, broken_files[i].reason));
            /* The decoder goes on with a good file after a broken one. */
            char good[512];
            snprintf(good, sizeof(good), "%s/good/video_0000001.mp4", workdir);
            assert_int_equal(dec_run(&d, good, 3, &s), PB_OK);
            dec_close(&d);
        }
    }
}

static int pbench_run(const char *config, const char *extra, char **err)
{
    char args[4096];
    snprintf(args, sizeof(args), "run '%s' -q %s", config, extra);
    return pb_test_run_pbench(workdir, args, err);
}

static void test_broken_files_policies(void **state)
{
    (void)state;
    if (!binary) {
        skip();
        return;
    }
    make_broken_sets();
    for (size_t i = 0; i < PB_ARRAY_LEN(broken_files); i++) {
        char config[600], dir[512];
        snprintf(dir, sizeof(dir), "%s/broken-%zu", workdir, i);
        snprintf(config, sizeof(config), "%s/broken-%zu.yaml", workdir, i);
        FILE *f = fopen(config, "w");
        assert_non_null(f);
        fprintf(f,
                "name: broken\n"
                "dataset: {path: '%s', shuffle: false}\n"
                "pipeline:\n"
                "  - decode: {decoder: video, clip_frames: 30, seek: none}\n"
                "loader: {workers: 1, batch_size: 3, prefetch_factor: 1}\n"
                "run: {warmup_batches: 0, min_time_s: 0, max_time_s: 0.3, repeats: 1, "
                "step_ms: 0, min_samples: 1}\n",
                dir);
        fclose(f);
        char *err;
        char extra[700];
        snprintf(extra, sizeof(extra), "-o '%s/skip-%zu.json'", workdir, i);
        int rc = pbench_run(config, extra, &err);
        if (rc != 0)
            fprintf(stderr, "skip run of %s: exit %d: %s\n", broken_files[i].file, rc, err);
        assert_int_equal(rc, 0);
        free(err);
        char result[600];
        snprintf(result, sizeof(result), "%s/skip-%zu.json", workdir, i);
        json_error_t jerr;
        json_t *r = json_load_file(result, 0, &jerr);
        assert_non_null(r);
        json_t *p = json_array_get(json_object_get(r, "points"), 0);
        json_t *errors = json_object_get(p, "errors");
        assert_true(json_number_value(json_object_get(errors, "count")) >= 1);
        const char *first = json_string_value(json_array_get(json_object_get(errors, "files"), 0));
        assert_non_null(first);
        assert_non_null(strstr(first, broken_files[i].file));
        assert_non_null(strstr(first, broken_files[i].reason));
        json_decref(r);

        snprintf(extra, sizeof(extra), "-s run.on_error=fail -o '%s/fail-%zu.json'", workdir, i);
        rc = pbench_run(config, extra, &err);
        assert_int_equal(rc, 1);
        assert_non_null(strstr(err, broken_files[i].file));
        assert_non_null(strstr(err, broken_files[i].reason));
        free(err);
    }
}

static int setup(void **state)
{
    binary = getenv("PBENCH_BINARY");
    return pb_test_tmpdir_setup(state);
}

/* The decoder's option rules, from the options alone (pb_config_validate
 * runs them before any data is made); init keeps refusing them too. */
static void test_validate_rules(void **state)
{
    (void)state;
    static const struct {
        const char *size, *shorter_side, *want;
    } cases[] = {
        {"[64, 48]", "0", NULL},
        {"[]", "32", NULL},
        {"64", "0", NULL},
        {"[64, 48]", "32",
         "pipeline.decode (decoder: video) takes size or shorter_side, not both"},
        {"[1, 2, 3]", "0",
         "pipeline.decode.size takes N (a square) or [height, width], got 3 values"},
    };
    const struct pb_decoder_ops *ops = pb_decoder_find("video");
    assert_non_null(ops);
    assert_non_null(ops->validate);
    char msg[PB_MSG_MAX];
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        void *opts = calloc(1, ops->opts_size);
        assert_non_null(opts);
        assert_int_equal(pb_opt_set_defaults(ops->opts, opts, msg, sizeof(msg)), PB_OK);
        assert_int_equal(pb_opt_parse(pb_opt_find(ops->opts, "size"), cases[i].size, opts,
                                      "size", msg, sizeof(msg)),
                         PB_OK);
        assert_int_equal(pb_opt_parse(pb_opt_find(ops->opts, "shorter_side"),
                                      cases[i].shorter_side, opts, "shorter_side", msg,
                                      sizeof(msg)),
                         PB_OK);
        msg[0] = 0;
        int rc = ops->validate(opts, msg, sizeof(msg));
        if (!cases[i].want) {
            assert_int_equal(rc, PB_OK);
        } else {
            assert_int_equal(rc, PB_ERR_CONFIG);
            assert_string_equal(msg, cases[i].want);
            struct pb_stage_plan in = {.shape = {.dtype = PB_DTYPE_BYTES}, .max_bytes = 1};
            struct pb_stage_plan out = in;
            void *dec = NULL;
            assert_int_equal(ops->init(&dec, opts, &in, &out, msg, sizeof(msg)), PB_ERR_CONFIG);
            assert_string_equal(msg, cases[i].want);
            assert_null(dec);
        }
        free(opts);
    }
}

/* ---- issue 16: a corrupt index says what is wrong ----------------------- */

/* A file whose sample-to-chunk table is garbage cannot be seeked in: the
 * message says the data is corrupt and which frame, not FFmpeg's errno
 * ("Operation not permitted"). */
static void test_corrupt_index_says_what_is_wrong(void **state)
{
    (void)state;
    make_videos("good", 2, 30, 6, NULL);
    char good[512], bad[512];
    snprintf(good, sizeof(good), "%s/good/video_0000000.mp4", workdir);
    snprintf(bad, sizeof(bad), "%s/bad-index.mp4", workdir);
    size_t n;
    uint8_t *buf = (uint8_t *)pb_test_read_file(good, &n, true);
    uint8_t *stsc = memmem(buf, n, "stsc", 4);
    assert_non_null(stsc);
    for (int i = -4; i < 12; i++)
        stsc[i] ^= 0x5a;
    pb_test_write_file(bad, buf, n);
    free(buf);
    struct dec d;
    dec_open(&d, "clip_frames=4");
    int seek_errors = 0;
    for (uint64_t seed = 0; seed < 8; seed++) {
        struct pb_sample s;
        int rc = dec_run(&d, bad, seed, &s);
        assert_true(rc == PB_OK || rc == PB_ERR_DATA);
        assert_null(strstr(msg_buf, "Operation not permitted"));
        if (strstr(msg_buf, "corrupt or truncated video data: cannot seek to frame ")) {
            assert_non_null(strstr(msg_buf, bad));
            assert_non_null(strstr(msg_buf, "(FFmpeg: "));
            seek_errors++;
        }
    }
    assert_true(seek_errors > 0);
    dec_close(&d);
}

/* ---- one decode for many clips (clips_per_visit) --------------------------- */

/* Stretches: overlapping or adjacent clips share one, others get their own,
 * in file order whatever the clips' order. */
static void test_visit_stretches(void **state)
{
    (void)state;
    /* 4 clips of 3 frames: [50 51 52], [0 1 2], [2 3 4], [90 91 92]. */
    const int64_t indices[12] = {50, 51, 52, 0, 1, 2, 2, 3, 4, 90, 91, 92};
    int order[4], first[5];
    assert_int_equal(pb_video_visit_stretches(indices, 4, 3, order, first), 3);
    const int want_order[4] = {1, 2, 0, 3}, want_first[4] = {0, 2, 3, 4};
    assert_memory_equal(order, want_order, sizeof order);
    assert_memory_equal(first, want_first, sizeof want_first);
    /* A clip starting right after the last frame joins (nothing between). */
    const int64_t touching[6] = {10, 11, 12, 13, 14, 15};
    assert_int_equal(pb_video_visit_stretches(touching, 2, 3, order, first), 1);
}

/* Decodes the K clips of one visit with clips_per_visit, in the order
 * given, into clips[k]; returns the frames decoded. */
static uint64_t decode_visit(const char *path, const char *options, uint64_t visit_seed, int k_count,
                             const int *order, uint8_t *clips, size_t clip_bytes)
{
    struct dec d;
    dec_open(&d, options);
    uint64_t decoded = 0;
    for (int i = 0; i < k_count; i++) {
        struct pb_sample s;
        memset(&s, 0, sizeof(s));
        s.path = path;
        s.seed = pb_mix64(visit_seed ^ (uint64_t)i); /* a sample's own, unused by decode */
        s.visit_seed = visit_seed;
        s.clip = (uint32_t)order[i];
        s.clips = (uint32_t)k_count;
        s.out = out_buf;
        s.out_capacity = sizeof(out_buf);
        s.msg = msg_buf;
        s.msglen = sizeof(msg_buf);
        int rc = d.ops->decode(d.state, &s);
        if (rc != PB_OK)
            fprintf(stderr, "%s [%s]: %s\n", path, options, msg_buf);
        assert_int_equal(rc, PB_OK);
        assert_int_equal(s.out_bytes, clip_bytes);
        assert_int_equal(s.out_shape.frames, (int32_t)(clip_bytes / ((size_t)W * H * 3)));
        memcpy(clips + (size_t)order[i] * clip_bytes, out_buf, clip_bytes);
        /* The first sample of the visit decodes all of it: the others
         * are copies, with nothing decoded and nothing delivered twice. */
        if (i > 0)
            assert_int_equal(s.counters[0], 0);
        decoded += s.counters[0];
    }
    dec_close(&d);
    return decoded;
}

/* clips_per_visit: every clip of a visit holds the frames its position
 * says, pixel for pixel what a single-clip decode of that position gives,
 * for random and uniform sampling, GOP 12 and 48, and a visit decodes
 * fewer frames than its clips decoded one by one. */
static void test_multi_clip_matches_single(void **state)
{
    (void)state;
    enum { K = 4, CLIP = 8, STRIDE = 2 };
    const size_t clip_bytes = (size_t)CLIP * W * H * 3;
    static uint8_t multi[K * CLIP * W * H * 3];
    const int64_t gops[] = {12, 48};
    const char *const sampling[] = {"random", "uniform"};
    const int order[K] = {2, 0, 3, 1}; /* any order: the visit is decoded once */
    for (size_t g = 0; g < PB_ARRAY_LEN(gops); g++) {
        char name[32], path[512], options[160];
        snprintf(name, sizeof(name), "visit%lld", (long long)gops[g]);
        make_videos(name, 1, FRAMES, gops[g], NULL);
        snprintf(path, sizeof(path), "%s/%s/video_0000000.mp4", workdir, name);
        for (size_t m = 0; m < PB_ARRAY_LEN(sampling); m++) {
            for (uint64_t visit = 1; visit <= 3; visit++) {
                uint64_t seed = pb_mix64(visit * 7919 + g);
                snprintf(options, sizeof(options),
                         "clip_frames=%d frame_stride=%d sampling=%s clips_per_visit=%d", CLIP,
                         STRIDE, sampling[m], K);
                uint64_t visit_decoded = decode_visit(path, options, seed, K, order, multi,
                                                      clip_bytes);
                int64_t want[K * CLIP];
                assert_int_equal(pb_video_visit_plan(FRAMES, CLIP, STRIDE, (int)m, PB_VIDEO_PAD,
                                                     seed, K, want),
                                 PB_OK);
                uint64_t single_decoded = 0;
                for (int k = 0; k < K; k++) {
                    /* The same position as one clip: random draws it from
                     * its seed as the visit does for clip k; uniform is
                     * clip k of K positions. */
                    struct dec d;
                    snprintf(options, sizeof(options),
                             "clip_frames=%d frame_stride=%d sampling=%s clips_per_video=%d",
                             CLIP, STRIDE, sampling[m], K);
                    dec_open(&d, options);
                    struct pb_sample s;
                    uint64_t single_seed = m == 0 ? pb_mix64(seed + (uint64_t)k) : 0;
                    if (m == 1) { /* uniform picks clip mix(seed ^ salt) % K: find a seed for k */
                        for (uint64_t t = 0;; t++)
                            if (pb_mix64(t ^ 0x756e69666f726dull) % K == (uint64_t)k) {
                                single_seed = t;
                                break;
                            }
                    }
                    assert_int_equal(dec_run(&d, path, single_seed, &s), PB_OK);
                    single_decoded += s.counters[0];
                    for (int j = 0; j < CLIP; j++) {
                        const uint8_t *frame = multi + (size_t)k * clip_bytes + (size_t)j * W * H * 3;
                        assert_int_equal(pb_video_frame_number(frame, W, H), want[k * CLIP + j]);
                    }
                    assert_memory_equal(multi + (size_t)k * clip_bytes, out_buf, clip_bytes);
                    dec_close(&d);
                }
                fprintf(stderr, "gop %lld %s visit %llu: decoded %llu for %d clips, one by one %llu\n",
                        (long long)gops[g], sampling[m], (unsigned long long)visit,
                        (unsigned long long)visit_decoded, K, (unsigned long long)single_decoded);
                assert_true(visit_decoded <= single_decoded);
            }
        }
    }
}

/* A whole run with clips_per_visit: one epoch of 3 videos at 2 clips a
 * visit is exactly 6 samples, every frame delivered counted once, and each
 * video opened once (its second clip comes from the visit's decode). */
static void test_visits_count_exactly_in_a_run(void **state)
{
    (void)state;
    if (!binary) {
        skip();
        return;
    }
    make_videos("visits-run", 3, FRAMES, 12, NULL);
    char config[600], result[600], extra[700];
    snprintf(config, sizeof(config), "%s/visits.yaml", workdir);
    snprintf(result, sizeof(result), "%s/visits.json", workdir);
    FILE *f = fopen(config, "w");
    assert_non_null(f);
    fprintf(f,
            "name: visits\n"
            "dataset: {path: '%s/visits-run', shuffle: true, epochs: 1}\n"
            "pipeline:\n"
            "  - decode: {decoder: video, clip_frames: 8, frame_stride: 2, clips_per_visit: 2}\n"
            "loader: {workers: 1, batch_size: 2, prefetch_factor: 1}\n"
            "run: {warmup_batches: 0, min_time_s: 0, max_time_s: 30, repeats: 1, step_ms: 0}\n",
            workdir);
    fclose(f);
    char *err;
    snprintf(extra, sizeof(extra), "-o '%s'", result);
    int rc = pbench_run(config, extra, &err);
    if (rc != 0)
        fprintf(stderr, "visits run: exit %d: %s\n", rc, err);
    assert_int_equal(rc, 0);
    free(err);
    json_error_t jerr;
    json_t *r = json_load_file(result, 0, &jerr);
    assert_non_null(r);
    json_t *p = json_array_get(json_object_get(r, "points"), 0);
    assert_int_equal(json_integer_value(json_object_get(p, "samples")), 6);
    json_t *stage = NULL, *st;
    size_t i;
    json_array_foreach(json_object_get(p, "stages"), i, st)
        if (strcmp(json_string_value(json_object_get(st, "name")), "decode") == 0)
            stage = st;
    assert_non_null(stage);
    json_t *counters = json_object_get(stage, "counters");
    assert_int_equal(json_integer_value(json_object_get(counters, "frames_delivered")), 6 * 8);
    assert_int_equal(json_integer_value(json_object_get(counters, "opens")), 3);
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clip_indices),
        cmocka_unit_test(test_seek_accuracy),
        cmocka_unit_test(test_sequential_and_mpeg4),
        cmocka_unit_test(test_broken_files_decoder),
        cmocka_unit_test(test_broken_files_policies),
        cmocka_unit_test(test_validate_rules),
        cmocka_unit_test(test_corrupt_index_says_what_is_wrong),
        cmocka_unit_test(test_visit_stretches),
        cmocka_unit_test(test_multi_clip_matches_single),
        cmocka_unit_test(test_visits_count_exactly_in_a_run),
    };
    pb_test_tmpdir_use(workdir);
    return cmocka_run_group_tests(tests, setup, pb_test_tmpdir_teardown);
}
