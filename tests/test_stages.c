/* Tests of the preprocessing stages (pipelines/resize.c, crop.c, flip.c,
 * color_jitter.c, normalize.c) through their ops tables, as the runner
 * drives them: option checks and their messages, exact output plans,
 * min_input, the PB_ERR_NOSPACE contract, seeded randomness, and clips of
 * T frames that must all get the same parameters. The pixel arithmetic
 * itself is tested against references in test_kernels.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/image.h"
#include "pipelines/stage.h"

struct stage {
    const struct pb_stage_ops *ops;
    void *opts;
    void *state;
    struct pb_stage_plan out;
    char msg[PB_MSG_MAX];
};

/* The stage's options: defaults, then "key=value" settings. */
static void *make_opts(const struct pb_stage_ops *ops, const char *const *settings)
{
    char msg[PB_MSG_MAX] = "";
    void *opts = calloc(1, ops->opts_size);
    assert_non_null(opts);
    assert_int_equal(pb_opt_set_defaults(ops->opts, opts, msg, sizeof msg), PB_OK);
    for (int i = 0; settings && settings[i]; i++) {
        char key[64];
        const char *eq = strchr(settings[i], '=');
        assert_non_null(eq);
        snprintf(key, sizeof key, "%.*s", (int)(eq - settings[i]), settings[i]);
        const struct pb_opt *opt = pb_opt_find(ops->opts, key);
        assert_non_null(opt);
        if (pb_opt_parse(opt, eq + 1, opts, key, msg, sizeof msg) != PB_OK)
            fail_msg("%s: %s", settings[i], msg);
    }
    return opts;
}

static struct pb_stage_plan pixels_plan(int frames, int height, int width, int channels)
{
    struct pb_stage_plan plan = {
        .shape = {.dtype = PB_DTYPE_U8, .frames = frames, .height = height, .width = width,
                  .channels = channels, .layout = PB_LAYOUT_THWC},
        .worker = 0,
    };
    plan.max_bytes = pb_shape_bytes(&plan.shape);
    return plan;
}

/* Inits stage `name` with settings for input plan; returns its rc. */
static int open_stage(struct stage *st, const char *name, const char *const *settings,
                      struct pb_stage_plan plan)
{
    memset(st, 0, sizeof(*st));
    st->ops = pb_stage_find(name);
    assert_non_null(st->ops);
    st->opts = make_opts(st->ops, settings);
    st->out = plan;
    return st->ops->init(&st->state, st->opts, &plan, &st->out, NULL, NULL, st->msg,
                         sizeof st->msg);
}

static void close_stage(struct stage *st)
{
    if (st->state)
        st->ops->cleanup(st->state);
    free(st->opts);
    st->state = st->opts = NULL;
}

/* Expects init to fail with exactly `want`. */
static void init_fails(const char *name, const char *const *settings, const char *want)
{
    struct stage st;
    assert_int_equal(open_stage(&st, name, settings, pixels_plan(1, 375, 500, 3)),
                     PB_ERR_CONFIG);
    assert_string_equal(st.msg, want);
    close_stage(&st);
}

static char sample_msg[PB_MSG_MAX];

/* Runs one sample through a stage into out[capacity]. */
static int process(struct stage *st, const uint8_t *in, struct pb_shape shape, uint64_t seed,
                   uint8_t *out, size_t capacity, struct pb_sample *s)
{
    memset(s, 0, sizeof(*s));
    s->seed = seed;
    s->in = in;
    s->in_bytes = pb_shape_bytes(&shape);
    s->in_shape = shape;
    s->out = out;
    s->out_capacity = capacity;
    s->msg = sample_msg;
    s->msglen = sizeof sample_msg;
    return st->ops->process(st->state, s);
}

static struct pb_shape pixels(int frames, int height, int width, int channels)
{
    return (struct pb_shape){.dtype = PB_DTYPE_U8, .frames = frames, .height = height,
                             .width = width, .channels = channels, .layout = PB_LAYOUT_THWC};
}

static uint8_t *random_bytes(size_t n, uint64_t seed, int max_value)
{
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(pb_mix64(seed + i) % (uint64_t)(max_value + 1));
    return p;
}

/* ---- registry, plans, min_input ---------------------------------------- */

static void test_registered(void **state)
{
    (void)state;
    static const char *const names[] = {"resize", "center_crop", "random_crop",
                                        "random_resized_crop", "flip", "color_jitter",
                                        "normalize"};
    for (size_t i = 0; i < PB_ARRAY_LEN(names); i++) {
        const struct pb_stage_ops *ops = pb_stage_find(names[i]);
        assert_non_null(ops);
        assert_true(ops->flags & PB_STAGE_WORKER);
        assert_null(ops->unavailable_reason);
        for (const struct pb_opt *o = ops->opts; o->name; o++)
            assert_non_null(o->help);
    }
}

static void test_min_input(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *setting;
        int32_t h, w;
    } cases[] = {
        {"resize", "shorter_side=256", 256, 256},  {"resize", "size=[200,300]", 200, 300},
        {"center_crop", NULL, 224, 224},           {"center_crop", "size=[100,50]", 100, 50},
        {"random_crop", "size=32", 32, 32},        {"random_resized_crop", NULL, 224, 224},
        {"random_resized_crop", "size=[128,160]", 128, 160},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        const struct pb_stage_ops *ops = pb_stage_find(cases[i].name);
        const char *settings[] = {cases[i].setting, NULL};
        void *opts = make_opts(ops, settings);
        int32_t h = 0, w = 0;
        assert_non_null(ops->min_input);
        ops->min_input(opts, &h, &w);
        assert_int_equal(h, cases[i].h);
        assert_int_equal(w, cases[i].w);
        free(opts);
    }
    assert_null(pb_stage_find("flip")->min_input);
    assert_null(pb_stage_find("normalize")->min_input);
}

/* Fixed-size stages declare their exact output, frames and channels kept. */
static void test_exact_plans(void **state)
{
    (void)state;
    struct stage st;
    assert_int_equal(open_stage(&st, "random_resized_crop", NULL, pixels_plan(16, 375, 500, 3)),
                     PB_OK);
    assert_int_equal(st.out.shape.frames, 16);
    assert_int_equal(st.out.shape.height, 224);
    assert_int_equal(st.out.shape.width, 224);
    assert_int_equal(st.out.max_bytes, 16 * 224 * 224 * 3);
    close_stage(&st);

    const char *crop[] = {"size=[100,60]", NULL};
    assert_int_equal(open_stage(&st, "center_crop", crop, pixels_plan(1, 375, 500, 1)), PB_OK);
    assert_int_equal(st.out.max_bytes, 100 * 60);
    close_stage(&st);

    const char *resize[] = {"size=[256,128]", NULL};
    assert_int_equal(open_stage(&st, "resize", resize, pixels_plan(1, 375, 500, 3)), PB_OK);
    assert_int_equal(st.out.max_bytes, 256 * 128 * 3);
    close_stage(&st);

    assert_int_equal(open_stage(&st, "normalize", NULL, pixels_plan(1, 224, 224, 3)), PB_OK);
    assert_int_equal(st.out.shape.dtype, PB_DTYPE_F32);
    assert_int_equal(st.out.shape.layout, PB_LAYOUT_TCHW);
    assert_int_equal(st.out.max_bytes, 224 * 224 * 3 * 4);
    close_stage(&st);

    const char *half[] = {"dtype=float16", "layout=cthw", NULL};
    assert_int_equal(open_stage(&st, "normalize", half, pixels_plan(8, 112, 112, 1)), PB_OK);
    assert_int_equal(st.out.shape.dtype, PB_DTYPE_F16);
    assert_int_equal(st.out.shape.layout, PB_LAYOUT_CTHW);
    assert_int_equal(st.out.shape.channels, 3); /* gray is repeated into 3 */
    assert_int_equal(st.out.max_bytes, 8 * 112 * 112 * 3 * 2);
    close_stage(&st);
}

static void test_option_errors(void **state)
{
    (void)state;
    init_fails("resize", NULL, "pipeline.resize needs size: [height, width] or shorter_side: N");
    const char *both[] = {"size=[1,2]", "shorter_side=3", NULL};
    init_fails("resize", both,
               "pipeline.resize takes size or shorter_side, not both (size: [height, width] for "
               "an exact size, shorter_side: N to keep the aspect ratio)");
    const char *one[] = {"size=256", NULL};
    init_fails("resize", one,
               "pipeline.resize.size takes [height, width]; for torchvision's Resize(256), which "
               "sizes the shorter side, write shorter_side: 256");
    const char *three[] = {"size=[1,2,3]", NULL};
    init_fails("resize", three, "pipeline.resize.size takes [height, width], got 3 values");
    const char *empty[] = {"size=[]", NULL};
    init_fails("center_crop", empty,
               "pipeline.center_crop.size takes N (a square) or [height, width], got 0 values");
    const char *scale[] = {"scale=0.5", NULL};
    init_fails("random_resized_crop", scale,
               "pipeline.random_resized_crop.scale takes [lo, hi], got 1 values");
    const char *ratio[] = {"ratio=[2, 1]", NULL};
    init_fails("random_resized_crop", ratio,
               "pipeline.random_resized_crop.ratio must be [lo, hi] with lo <= hi, got [2, 1]");
    const char *contrast[] = {"contrast=[2,1]", NULL};
    init_fails("color_jitter", contrast,
               "pipeline.color_jitter.contrast takes J (a factor in [1 - J, 1 + J]) or [lo, hi] "
               "with lo <= hi");
    const char *stats[] = {"mean=[0.5,0.5,0.5]", "std=[0.5,0.5]", NULL};
    init_fails("normalize", stats,
               "pipeline.normalize: mean and std need one value each, or one per channel (got 3 "
               "and 2)");

    /* Before decode there are no pixels. */
    struct stage st;
    struct pb_stage_plan bytes = {.shape = {.dtype = PB_DTYPE_BYTES, .frames = 1, .height = 1,
                                            .width = 100, .channels = 1},
                                  .max_bytes = 100};
    assert_int_equal(open_stage(&st, "flip", NULL, bytes), PB_ERR_CONFIG);
    assert_string_equal(st.msg, "stage 'flip' needs decoded uint8 pixels; place it after decode "
                                "and before normalize");
    close_stage(&st);
}

/* ---- resize ------------------------------------------------------------ */

static void test_resize(void **state)
{
    (void)state;
    struct stage st;
    const char *settings[] = {"shorter_side=256", "interpolation=area", NULL};
    assert_int_equal(open_stage(&st, "resize", settings, pixels_plan(1, 375, 500, 3)), PB_OK);
    assert_int_equal(st.out.shape.height, 256);
    assert_int_equal(st.out.shape.width, 341); /* int(256 * 500 / 375) */
    size_t cap = st.out.max_bytes;
    uint8_t *out = malloc(cap), *want = malloc(cap);
    uint8_t *img = random_bytes(375 * 500 * 3, 1, 255);
    assert_non_null(out);
    assert_non_null(want);
    struct pb_sample s;
    assert_int_equal(process(&st, img, pixels(1, 375, 500, 3), 1, out, cap, &s), PB_OK);
    assert_int_equal(s.out_bytes, 256 * 341 * 3);
    assert_int_equal(s.out_shape.height, 256);
    assert_int_equal(s.out_shape.width, 341);
    struct pb_resampler r;
    assert_int_equal(pb_resampler_init(&r, PB_INTERP_AREA, 375, 500, 256, 341, 3), PB_OK);
    assert_int_equal(pb_resampler_prepare(&r, 375, 500, 256, 341, 3), PB_OK);
    pb_resample_u8(&r, img, 500 * 3, want);
    pb_resampler_free(&r);
    assert_memory_equal(out, want, s.out_bytes);

    /* Portrait: the width is the shorter side. */
    assert_int_equal(process(&st, img, pixels(1, 500, 375, 3), 1, out, cap, &s), PB_OK);
    assert_int_equal(s.out_shape.height, 341);
    assert_int_equal(s.out_shape.width, 256);
    /* A panorama needs more than planned: PB_ERR_NOSPACE says how much. */
    assert_int_equal(process(&st, img, pixels(1, 100, 1000, 3), 1, out, cap, &s),
                     PB_ERR_NOSPACE);
    assert_int_equal(s.out_bytes, 256 * 2560 * 3);
    uint8_t *big = malloc(s.out_bytes);
    assert_non_null(big);
    assert_int_equal(process(&st, img, pixels(1, 100, 1000, 3), 1, big, 256 * 2560 * 3, &s),
                     PB_OK);
    free(big);
    close_stage(&st);
    free(img);
    free(out);
    free(want);
}

/* ---- crops ------------------------------------------------------------- */

/* A 3-channel clip whose pixel (t, y, x) is (y, x, t): a crop's output
 * tells where every pixel came from. */
static uint8_t *position_clip(int frames, int height, int width)
{
    uint8_t *p = malloc((size_t)frames * (size_t)height * (size_t)width * 3);
    assert_non_null(p);
    for (int t = 0; t < frames; t++)
        for (int y = 0; y < height; y++)
            for (int x = 0; x < width; x++) {
                uint8_t *q = p + (((size_t)t * (size_t)height + (size_t)y) * (size_t)width +
                                  (size_t)x) * 3;
                q[0] = (uint8_t)y;
                q[1] = (uint8_t)x;
                q[2] = (uint8_t)t;
            }
    return p;
}

/* Checks out is the window at (top, left) of a position clip, frame by
 * frame (zero outside the image); returns nothing, fails on mismatch. */
static void check_window(const uint8_t *out, int frames, int oh, int ow, int height, int width,
                         int top, int left)
{
    for (int t = 0; t < frames; t++)
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                const uint8_t *q = out + (((size_t)t * (size_t)oh + (size_t)y) * (size_t)ow +
                                          (size_t)x) * 3;
                int sy = top + y, sx = left + x;
                bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
                assert_int_equal(q[0], inside ? sy : 0);
                assert_int_equal(q[1], inside ? sx : 0);
                assert_int_equal(q[2], inside ? t : 0);
            }
}

static void test_center_crop(void **state)
{
    (void)state;
    uint8_t *clip = position_clip(3, 9, 10);
    uint8_t out[3 * 12 * 12 * 3];
    struct pb_sample s;
    struct stage st;
    /* 9 - 4 = 5 rows to spare: round(2.5) = 2 (halves to even, as Python);
     * 10 - 3 = 7 columns: round(3.5) = 4. */
    const char *odd[] = {"size=[4,3]", NULL};
    assert_int_equal(open_stage(&st, "center_crop", odd, pixels_plan(3, 9, 10, 3)), PB_OK);
    assert_int_equal(process(&st, clip, pixels(3, 9, 10, 3), 7, out, st.out.max_bytes, &s),
                     PB_OK);
    assert_int_equal(s.out_bytes, 3 * 4 * 3 * 3);
    assert_int_equal(s.out_shape.frames, 3);
    check_window(out, 3, 4, 3, 9, 10, 2, 4);
    close_stage(&st);
    /* Larger than the image: zero padding, centred. */
    const char *pad[] = {"size=12", NULL};
    assert_int_equal(open_stage(&st, "center_crop", pad, pixels_plan(3, 9, 10, 3)), PB_OK);
    assert_int_equal(process(&st, clip, pixels(3, 9, 10, 3), 7, out, sizeof out, &s), PB_OK);
    check_window(out, 3, 12, 12, 9, 10, -1, -1);
    /* Too small a buffer: the size needed, nothing written past it. */
    assert_int_equal(process(&st, clip, pixels(3, 9, 10, 3), 7, out, 100, &s), PB_ERR_NOSPACE);
    assert_int_equal(s.out_bytes, 3 * 12 * 12 * 3);
    close_stage(&st);
    free(clip);
}

/* Finds the window a crop took from a position clip's first pixel. */
static void window_of(const uint8_t *out, int *top, int *left)
{
    *top = out[0];
    *left = out[1];
}

static void test_random_crop(void **state)
{
    (void)state;
    enum { T = 3, H = 20, W = 30, OH = 8, OW = 11 };
    uint8_t *clip = position_clip(T, H, W);
    uint8_t out[T * OH * OW * 3], again[T * OH * OW * 3];
    struct pb_sample s;
    struct stage st;
    const char *settings[] = {"size=[8,11]", NULL};
    assert_int_equal(open_stage(&st, "random_crop", settings, pixels_plan(T, H, W, 3)), PB_OK);
    assert_int_equal(st.out.max_bytes, sizeof out);
    int distinct = 0, last_top = -1, last_left = -1;
    for (uint64_t seed = 0; seed < 64; seed++) {
        assert_int_equal(process(&st, clip, pixels(T, H, W, 3), seed, out, sizeof out, &s),
                         PB_OK);
        int top, left;
        window_of(out, &top, &left);
        assert_true(top >= 0 && top <= H - OH && left >= 0 && left <= W - OW);
        check_window(out, T, OH, OW, H, W, top, left); /* every frame, same window */
        assert_int_equal(process(&st, clip, pixels(T, H, W, 3), seed, again, sizeof again, &s),
                         PB_OK);
        assert_memory_equal(out, again, sizeof out); /* same seed, same crop */
        distinct += top != last_top || left != last_left;
        last_top = top;
        last_left = left;
    }
    assert_true(distinct > 32);
    close_stage(&st);
    free(clip);
}

static void test_random_resized_crop(void **state)
{
    (void)state;
    enum { T = 3, H = 60, W = 80, O = 24 };
    /* Frame t is frame 0 plus 10 t: resampling the same window of each
     * gives frame 0's output plus 10 t (to rounding). */
    size_t frame = (size_t)H * W * 3;
    uint8_t *clip = random_bytes(T * frame, 3, 200);
    for (int t = 1; t < T; t++)
        for (size_t i = 0; i < frame; i++)
            clip[t * frame + i] = (uint8_t)(clip[i] + 10 * t);
    uint8_t out[T * O * O * 3], again[T * O * O * 3], other[T * O * O * 3];
    struct pb_sample s;
    struct stage st;
    const char *settings[] = {"size=24", NULL};
    assert_int_equal(open_stage(&st, "random_resized_crop", settings, pixels_plan(T, H, W, 3)),
                     PB_OK);
    int differs = 0;
    for (uint64_t seed = 0; seed < 20; seed++) {
        assert_int_equal(process(&st, clip, pixels(T, H, W, 3), seed, out, sizeof out, &s),
                         PB_OK);
        assert_int_equal(s.out_bytes, sizeof out);
        for (int t = 1; t < T; t++)
            for (size_t i = 0; i < (size_t)O * O * 3; i++) {
                int d = (int)out[t * O * O * 3 + i] - (int)out[i] - 10 * t;
                if (abs(d) > 1)
                    fail_msg("seed %llu frame %d byte %zu: off by %d",
                             (unsigned long long)seed, t, i, d);
            }
        assert_int_equal(process(&st, clip, pixels(T, H, W, 3), seed, again, sizeof again, &s),
                         PB_OK);
        assert_memory_equal(out, again, sizeof out);
        assert_int_equal(process(&st, clip, pixels(T, H, W, 3), seed + 1000, other,
                                 sizeof other, &s),
                         PB_OK);
        differs += memcmp(out, other, sizeof out) != 0;
    }
    assert_true(differs >= 18);
    close_stage(&st);

    /* scale [1, 1] and the image's own ratio: the crop is the whole image,
     * so the output is a plain resize of it. */
    const char *whole[] = {"size=[30,40]", "scale=[1,1]", "ratio=[1.3333333333333333, "
                           "1.3333333333333333]", "interpolation=area", NULL};
    assert_int_equal(open_stage(&st, "random_resized_crop", whole, pixels_plan(1, H, W, 3)),
                     PB_OK);
    uint8_t resized[30 * 40 * 3], want[30 * 40 * 3];
    assert_int_equal(process(&st, clip, pixels(1, H, W, 3), 5, resized, sizeof resized, &s),
                     PB_OK);
    struct pb_resampler r;
    assert_int_equal(pb_resampler_init(&r, PB_INTERP_AREA, H, W, 30, 40, 3), PB_OK);
    assert_int_equal(pb_resampler_prepare(&r, H, W, 30, 40, 3), PB_OK);
    pb_resample_u8(&r, clip, (size_t)W * 3, want);
    pb_resampler_free(&r);
    assert_memory_equal(resized, want, sizeof want);
    close_stage(&st);
    free(clip);
}

/* ---- flip and color_jitter --------------------------------------------- */

static void test_flip(void **state)
{
    (void)state;
    enum { T = 3, H = 5, W = 7, C = 3 };
    size_t bytes = (size_t)T * H * W * C, frame = (size_t)H * W * C;
    uint8_t *clip = random_bytes(bytes, 11, 255);
    uint8_t out[T * H * W * C], flipped[T * H * W * C];
    for (int t = 0; t < T; t++)
        pb_flip_h_u8(clip + t * frame, H, W, C, flipped + t * frame);
    struct pb_sample s;
    struct stage st;
    const char *half[] = {"p=0.5", NULL};
    assert_int_equal(open_stage(&st, "flip", half, pixels_plan(T, H, W, C)), PB_OK);
    int count = 0;
    for (uint64_t seed = 0; seed < 400; seed++) {
        assert_int_equal(process(&st, clip, pixels(T, H, W, C), seed, out, sizeof out, &s),
                         PB_OK);
        assert_int_equal(s.out_bytes, bytes);
        bool is_flipped = memcmp(out, flipped, bytes) == 0; /* all frames alike */
        assert_true(is_flipped || memcmp(out, clip, bytes) == 0);
        count += is_flipped;
    }
    assert_in_range(count, 150, 250);
    /* Larger than the buffer: PB_ERR_NOSPACE with the size needed. */
    assert_int_equal(process(&st, clip, pixels(T, H, W, C), 0, out, bytes - 1, &s),
                     PB_ERR_NOSPACE);
    assert_int_equal(s.out_bytes, bytes);
    close_stage(&st);

    const char *always[] = {"p=1", NULL};
    assert_int_equal(open_stage(&st, "flip", always, pixels_plan(T, H, W, C)), PB_OK);
    assert_int_equal(process(&st, clip, pixels(T, H, W, C), 3, out, sizeof out, &s), PB_OK);
    assert_memory_equal(out, flipped, bytes);
    close_stage(&st);
    free(clip);
}

/* One pass for the output: a flip told that the next (last) stage mirrors
 * passes its input on uncopied with the draw in flip_pending, and
 * normalize then writes exactly what flip followed by normalize writes. */
static void test_flip_fused_into_normalize(void **state)
{
    (void)state;
    enum { T = 2, H = 9, W = 11, C = 3 };
    size_t bytes = (size_t)T * H * W * C, out_bytes = bytes * sizeof(float);
    uint8_t *clip = random_bytes(bytes, 21, 255);
    uint8_t *flipped = malloc(bytes), *want = malloc(out_bytes), *got = malloc(out_bytes);
    assert_non_null(flipped);
    assert_non_null(want);
    assert_non_null(got);
    const char *half[] = {"p=0.5", NULL};
    struct stage flip, fused_flip, norm;
    struct pb_stage_plan plan = pixels_plan(T, H, W, C);
    assert_int_equal(open_stage(&flip, "flip", half, plan), PB_OK);
    plan.next_mirrors = true;
    assert_int_equal(open_stage(&fused_flip, "flip", half, plan), PB_OK);
    assert_int_equal(open_stage(&norm, "normalize", NULL, pixels_plan(T, H, W, C)), PB_OK);
    assert_true(norm.ops->flags & PB_STAGE_MIRRORS);
    int mirrored = 0;
    for (uint64_t seed = 0; seed < 64; seed++) {
        struct pb_sample s, n;
        assert_int_equal(process(&flip, clip, pixels(T, H, W, C), seed, flipped, bytes, &s),
                         PB_OK);
        assert_int_equal(process(&norm, flipped, s.out_shape, seed, want, out_bytes, &n), PB_OK);
        assert_int_equal(process(&fused_flip, clip, pixels(T, H, W, C), seed, NULL, 0, &s),
                         PB_OK);
        assert_ptr_equal(s.out, clip); /* passed on, not copied */
        assert_int_equal(s.out_bytes, bytes);
        mirrored += s.flip_pending;
        n = s;
        n.in = s.out;
        n.in_bytes = s.out_bytes;
        n.in_shape = s.out_shape;
        n.out = got;
        n.out_capacity = out_bytes;
        assert_int_equal(norm.ops->process(norm.state, &n), PB_OK);
        assert_false(n.flip_pending);
        assert_memory_equal(got, want, out_bytes);
    }
    assert_in_range(mirrored, 16, 48);
    close_stage(&flip);
    close_stage(&fused_flip);
    close_stage(&norm);
    free(clip);
    free(flipped);
    free(want);
    free(got);
}

static void test_color_jitter(void **state)
{
    (void)state;
    enum { T = 3, H = 6, W = 9 };
    size_t frame = (size_t)H * W * 3;
    uint8_t *clip = random_bytes(T * frame, 21, 255);
    memcpy(clip + frame, clip, frame); /* frames 0 and 1 alike */
    uint8_t out[T * H * W * 3], again[T * H * W * 3];
    struct pb_sample s;
    struct stage st;
    assert_int_equal(open_stage(&st, "color_jitter", NULL, pixels_plan(T, H, W, 3)), PB_OK);
    assert_int_equal(process(&st, clip, pixels(T, H, W, 3), 9, out, sizeof out, &s), PB_OK);
    assert_memory_equal(out, out + frame, frame); /* same factors for every frame */
    assert_memory_not_equal(out, clip, frame);
    assert_int_equal(process(&st, clip, pixels(T, H, W, 3), 9, again, sizeof again, &s), PB_OK);
    assert_memory_equal(out, again, sizeof out);
    /* Gray images take brightness and contrast. */
    assert_int_equal(process(&st, clip, pixels(1, H, W, 1), 9, out, sizeof out, &s), PB_OK);
    assert_int_equal(s.out_bytes, (size_t)H * W);
    close_stage(&st);

    const char *none[] = {"brightness=0", "contrast=0", "saturation=[1,1]", NULL};
    assert_int_equal(open_stage(&st, "color_jitter", none, pixels_plan(T, H, W, 3)), PB_OK);
    assert_int_equal(process(&st, clip, pixels(T, H, W, 3), 9, out, sizeof out, &s), PB_OK);
    assert_memory_equal(out, clip, sizeof out);
    close_stage(&st);
    free(clip);
}

/* ---- normalize --------------------------------------------------------- */

static void test_normalize(void **state)
{
    (void)state;
    enum { H = 4, W = 5 };
    uint8_t *img = random_bytes(H * W * 3, 31, 255);
    float out[H * W * 3];
    struct pb_sample s;
    struct stage st;
    assert_int_equal(open_stage(&st, "normalize", NULL, pixels_plan(1, H, W, 3)), PB_OK);
    assert_int_equal(process(&st, img, pixels(1, H, W, 3), 0, (uint8_t *)out, sizeof out, &s),
                     PB_OK);
    assert_int_equal(s.out_shape.dtype, PB_DTYPE_F32);
    assert_int_equal(s.out_shape.layout, PB_LAYOUT_TCHW);
    static const double mean[] = {0.485, 0.456, 0.406}, std[] = {0.229, 0.224, 0.225};
    for (int c = 0; c < 3; c++)
        for (int p = 0; p < H * W; p++) {
            double want = (img[p * 3 + c] / 255.0 - mean[c]) / std[c];
            assert_true(fabs(out[c * H * W + p] - want) <= 1e-6 * fmax(1, fabs(want)));
        }
    /* A gray image is repeated into the three channels. */
    assert_int_equal(process(&st, img, pixels(1, H, W, 1), 0, (uint8_t *)out, sizeof out, &s),
                     PB_OK);
    assert_int_equal(s.out_shape.channels, 3);
    for (int c = 0; c < 3; c++)
        for (int p = 0; p < H * W; p++) {
            double want = (img[p] / 255.0 - mean[c]) / std[c];
            assert_true(fabs(out[c * H * W + p] - want) <= 1e-6 * fmax(1, fabs(want)));
        }
    /* Four channels do not match three means: a bad sample, said so. */
    assert_int_equal(process(&st, img, pixels(1, 1, 5, 4), 0, (uint8_t *)out, sizeof out, &s),
                     PB_ERR_DATA);
    assert_string_equal(sample_msg,
                        "(sample): normalize has 3 mean/std values but the image has 4 channels");
    close_stage(&st);

    /* Pixel units, one value for every channel, uint8 out: layout only. */
    const char *raw[] = {"mean=127.5", "std=[127.5]", "pixel_scale=1", "dtype=uint8",
                         "layout=hwc", NULL};
    assert_int_equal(open_stage(&st, "normalize", raw, pixels_plan(1, H, W, 3)), PB_OK);
    assert_int_equal(st.out.max_bytes, H * W * 3);
    uint8_t bytes[H * W * 3];
    assert_int_equal(process(&st, img, pixels(1, H, W, 3), 0, bytes, sizeof bytes, &s), PB_OK);
    assert_memory_equal(bytes, img, sizeof bytes);
    close_stage(&st);
    free(img);
}

/* ---- validate callbacks and GPU versions -------------------------------- */

/* validate holds a stage's option rules and needs no plan: the same
 * sentence init gives, with the option values alone. */
static void test_validate(void **state)
{
    (void)state;
    static const struct {
        const char *stage;
        const char *settings[3];
        const char *want;
    } cases[] = {
        {"resize", {"size=[64, 48]"}, NULL},
        {"resize", {"shorter_side=64"}, NULL},
        {"resize", {"size=[64, 48]", "shorter_side=64"},
         "pipeline.resize takes size or shorter_side, not both (size: [height, width] for an "
         "exact size, shorter_side: N to keep the aspect ratio)"},
        {"center_crop", {"size=[]"},
         "pipeline.center_crop.size takes N (a square) or [height, width], got 0 values"},
        {"random_crop", {"size=[1, 2, 3]"},
         "pipeline.random_crop.size takes N (a square) or [height, width], got 3 values"},
        {"random_resized_crop", {NULL}, NULL},
        {"random_resized_crop", {"scale=[0.9, 0.1]"},
         "pipeline.random_resized_crop.scale must be [lo, hi] with lo <= hi, got [0.9, 0.1]"},
        {"random_resized_crop", {"ratio=[1, 2, 3]"},
         "pipeline.random_resized_crop.ratio takes [lo, hi], got 3 values"},
        {"color_jitter", {"brightness=[0.5, 0.25]"},
         "pipeline.color_jitter.brightness takes J (a factor in [1 - J, 1 + J]) or [lo, hi] "
         "with lo <= hi"},
        {"color_jitter", {"brightness=0.5", "contrast=[0.5, 1.5]"}, NULL},
        {"normalize", {"mean=[0.5]", "std=[0.5, 0.5, 0.5]"}, NULL},
        {"normalize", {"mean=[0, 0, 0, 0, 0]", "std=1"},
         "pipeline.normalize: at most 4 channels, got 5 values"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        const struct pb_stage_ops *ops = pb_stage_find(cases[i].stage);
        assert_non_null(ops);
        assert_non_null(ops->validate);
        void *opts = make_opts(ops, cases[i].settings);
        char msg[PB_MSG_MAX] = "";
        int rc = ops->validate(opts, msg, sizeof msg);
        if (cases[i].want) {
            assert_int_equal(rc, PB_ERR_CONFIG);
            assert_string_equal(msg, cases[i].want);
            init_fails(cases[i].stage, cases[i].settings, cases[i].want);
        } else if (rc != PB_OK) {
            fail_msg("case %zu (%s): %s", i, cases[i].stage, msg);
        }
        free(opts);
    }
}

/* Stages with device: gpu have a GPU version in every build: with the
 * same name, options and rules, and, built without CUDA, the reason it is
 * unavailable instead of callbacks. */
static void test_gpu_versions(void **state)
{
    (void)state;
    static const char *const names[] = {"resize", "center_crop", "random_crop", "flip",
                                        "normalize"};
    for (size_t i = 0; i < PB_ARRAY_LEN(names); i++) {
        const struct pb_stage_ops *cpu = pb_stage_find(names[i]);
        assert_non_null(cpu);
        assert_true(cpu->has_device);
        const struct pb_stage_ops *gpu = cpu->gpu;
        assert_non_null(gpu);
        assert_string_equal(gpu->name, cpu->name);
        assert_true(gpu->flags & PB_STAGE_GPU);
        assert_ptr_equal(gpu->opts, cpu->opts);
        assert_ptr_equal(gpu->validate, cpu->validate);
        void *opts = make_opts(cpu, (const char *const[]){"device=gpu", NULL});
        assert_ptr_equal(pb_stage_for_device(cpu, opts), gpu);
        free(opts);
#if PB_HAVE_CUDA
        assert_null(gpu->unavailable_reason);
        assert_non_null(gpu->init);
        assert_non_null(gpu->process_batch);
        assert_non_null(gpu->cleanup);
#else
        assert_non_null(gpu->unavailable_reason);
        assert_non_null(strstr(gpu->unavailable_reason, "built without CUDA"));
        assert_null(gpu->init);
        assert_null(gpu->process_batch);
#endif
    }
    assert_null(pb_stage_find("random_resized_crop")->gpu);
    assert_null(pb_stage_find("color_jitter")->gpu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registered),
        cmocka_unit_test(test_min_input),
        cmocka_unit_test(test_exact_plans),
        cmocka_unit_test(test_option_errors),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_center_crop),
        cmocka_unit_test(test_random_crop),
        cmocka_unit_test(test_random_resized_crop),
        cmocka_unit_test(test_flip),
        cmocka_unit_test(test_flip_fused_into_normalize),
        cmocka_unit_test(test_color_jitter),
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_gpu_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
