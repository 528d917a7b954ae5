/* Tests of decoders/jpeg_window.c, the fused decode and crop, through the
 * stages as the pipeline runs them: the `jpeg` decoder told the window of
 * the crop stage after it (pipelines/stage.h), then that stage, against the
 * same decoder with fused_crop: false (whole image, then the crop).
 *
 * Measured (generated scenes at quality 90): 4:4:4 and grayscale files
 * decode to exactly the same window and crop output; 4:2:0 ones differ in
 * 0.031 % of the window's values (max 28), 4:2:2 in 0.061 % (max 62), only
 * where libjpeg's smooth chroma upsampling meets the edge of the decoded
 * columns (jpeg_crop_scanline starts them at an iMCU boundary, where the
 * upsampler repeats the edge chroma instead of reading its neighbour).
 * Asserted: at most MAX_EDGE_DIFF, in under EDGE_FRACTION of the values.
 * The random window is the unfused one: same draws from the same seed.
 * With PB_TEST_JPEG_DIR set to a folder of real JPEGs (e.g. /tmp/photos),
 * test_fused_on_folder prints the same figures for them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "bench/base/pb.h"
#include "decoders/decoder.h"
#include "decoders/image.h"
#include "decoders/jpeg_window.h"
#include "kernels/scene.h"
#include "pipelines/stage.h"
#include "tests/testimage.h"

#define MAX_EDGE_DIFF 96
#define EDGE_FRACTION 0.005
#define CAPACITY ((size_t)16 << 20)

struct jpeg {
    unsigned char *data;
    unsigned long len;
    int width, height;
};

static struct jpeg encode(int width, int height, int channels, int subsamp, bool progressive,
                          uint64_t seed)
{
    uint8_t *pixels = malloc((size_t)width * (size_t)height * (size_t)channels);
    assert_non_null(pixels);
    pb_scene_render(pixels, height, width, channels, seed, 0.0);
    tjhandle tj = tjInitCompress();
    struct jpeg j = {NULL, 0, width, height};
    int flags = progressive ? TJFLAG_PROGRESSIVE : 0;
    if (tjCompress2(tj, pixels, width, 0, height, channels == 1 ? TJPF_GRAY : TJPF_RGB, &j.data,
                    &j.len, channels == 1 ? TJSAMP_GRAY : subsamp, 90, flags) != 0)
        fail_msg("tjCompress2: %s", tjGetErrorStr2(tj));
    tjDestroy(tj);
    free(pixels);
    return j;
}

/* A stage or decoder's options at their defaults, then "name=value"s. */
static void *options(const struct pb_opt *table, size_t size, const char *const *set)
{
    char msg[PB_MSG_MAX];
    void *o = calloc(1, size);
    assert_non_null(o);
    assert_int_equal(pb_opt_set_defaults(table, o, msg, sizeof(msg)), PB_OK);
    for (int i = 0; set && set[i]; i++) {
        char name[64];
        const char *eq = strchr(set[i], '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - set[i]), set[i]);
        const struct pb_opt *opt = pb_opt_find(table, name);
        assert_non_null(opt);
        if (pb_opt_parse(opt, eq + 1, o, name, msg, sizeof(msg)) != PB_OK)
            fail_msg("%s", msg);
    }
    return o;
}

/* A decoder followed by a crop stage, as pb_chain_init_loader sets them up. */
struct pair {
    const struct pb_decoder_ops *decoder;
    const struct pb_stage_ops *crop;
    void *decoder_opts, *crop_opts, *decoder_state, *crop_state;
    uint8_t *decoded, *out;
    char msg[PB_MSG_MAX];
};

static void pair_init(struct pair *p, const char *crop, const char *const *crop_set, bool fused,
                      const char *scale)
{
    memset(p, 0, sizeof(*p));
    p->decoder = pb_decoder_find("jpeg");
    p->crop = pb_stage_find(crop);
    assert_non_null(p->crop);
    char fused_opt[32], scale_opt[32];
    snprintf(fused_opt, sizeof(fused_opt), "fused_crop=%s", fused ? "true" : "false");
    snprintf(scale_opt, sizeof(scale_opt), "scale=%s", scale);
    const char *const decoder_set[] = {fused_opt, scale_opt, NULL};
    p->decoder_opts = options(p->decoder->opts, p->decoder->opts_size, decoder_set);
    p->crop_opts = options(p->crop->opts, p->crop->opts_size, crop_set);
    struct pb_stage_plan in = {
        .max_bytes = 1 << 20, .window = p->crop->window, .window_opts = p->crop_opts};
    p->crop->min_input(p->crop_opts, &in.want_height, &in.want_width);
    struct pb_stage_plan out = in;
    assert_int_equal(
        p->decoder->init(&p->decoder_state, p->decoder_opts, &in, &out, p->msg, sizeof(p->msg)),
        PB_OK);
    struct pb_stage_plan crop_out = out;
    assert_int_equal(p->crop->init(&p->crop_state, p->crop_opts, &out, &crop_out, NULL, NULL,
                                   p->msg, sizeof(p->msg)),
                     PB_OK);
    p->decoded = malloc(CAPACITY);
    p->out = malloc(CAPACITY);
    assert_non_null(p->decoded);
    assert_non_null(p->out);
}

static void pair_free(struct pair *p)
{
    p->decoder->cleanup(p->decoder_state);
    p->crop->cleanup(p->crop_state);
    free(p->decoder_opts);
    free(p->crop_opts);
    free(p->decoded);
    free(p->out);
}

/* Decodes and crops one sample; returns the decoded sample (window set or
 * not) and leaves the crop's output in p->out (*out_bytes long). */
static struct pb_sample pair_run(struct pair *p, const struct jpeg *j, uint64_t seed,
                                 size_t *out_bytes)
{
    struct pb_sample s = {.path = "t.jpg",
                          .seed = seed,
                          .in = j->data,
                          .in_bytes = j->len,
                          .out = p->decoded,
                          .out_capacity = CAPACITY,
                          .msg = p->msg,
                          .msglen = sizeof(p->msg)};
    int rc = p->decoder->decode(p->decoder_state, &s);
    if (rc != PB_OK)
        fail_msg("decode: %d %s", rc, p->msg);
    struct pb_sample c = s;
    c.in = s.out;
    c.in_bytes = s.out_bytes;
    c.in_shape = s.out_shape;
    c.out = p->out;
    c.out_capacity = CAPACITY;
    rc = p->crop->process(p->crop_state, &c);
    if (rc != PB_OK)
        fail_msg("%s: %d %s", p->crop->name, rc, p->msg);
    assert_false(c.window_set); /* the crop stage consumed it */
    *out_bytes = c.out_bytes;
    return s;
}

struct diff {
    int max;
    size_t differing, values;
    double sum; /* of absolute differences */
};

static void add_diff(struct diff *d, const uint8_t *a, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int v = abs((int)a[i] - (int)b[i]);
        d->max = v > d->max ? v : d->max;
        d->differing += v != 0;
        d->sum += v;
    }
    d->values += n;
}

/* Fused against unfused on seeds samples of j: the decoded window against
 * the same window cut from the whole image (window) and the crop stage's
 * outputs (out). Checks the fused decode drew the unfused window. */
static void compare(const struct jpeg *j, const char *crop, const char *const *crop_set,
                    const char *scale, int seeds, struct diff *window, struct diff *out)
{
    struct pair fused, whole;
    pair_init(&fused, crop, crop_set, true, scale);
    pair_init(&whole, crop, crop_set, false, scale);
    for (int k = 0; k < seeds; k++) {
        uint64_t seed = pb_mix64((uint64_t)k + 1);
        size_t fused_bytes, whole_bytes;
        struct pb_sample f = pair_run(&fused, j, seed, &fused_bytes);
        struct pb_sample w = pair_run(&whole, j, seed, &whole_bytes);
        assert_false(w.window_set);
        assert_int_equal(fused_bytes, whole_bytes);
        add_diff(out, fused.out, whole.out, whole_bytes);
        if (!f.window_set)
            continue; /* a crop larger than the image: decoded whole */
        /* Where the unfused crop stage reads: its own draw on the whole image. */
        struct pb_window drawn;
        assert_true(whole.crop->window(whole.crop_opts, seed, w.out_shape.height, w.out_shape.width,
                                       &drawn));
        if (strcmp(scale, "1") != 0)
            continue; /* maybe DCT-reduced further: compared on the outputs only */
        int ch = w.out_shape.channels;
        assert_int_equal(f.window.height, drawn.height);
        assert_int_equal(f.window.width, drawn.width);
        for (int y = 0; y < drawn.height; y++)
            add_diff(
                window,
                f.out + ((size_t)(f.window.top + y) * (size_t)f.out_shape.width +
                         (size_t)f.window.left) *
                            (size_t)ch,
                w.out + ((size_t)(drawn.top + y) * (size_t)w.out_shape.width + (size_t)drawn.left) *
                            (size_t)ch,
                (size_t)drawn.width * (size_t)ch);
    }
    pair_free(&fused);
    pair_free(&whole);
}

static void check_subsampling(int subsamp, int channels, bool progressive, bool exact)
{
    struct jpeg j = encode(333, 251, channels, subsamp, progressive, (uint64_t)subsamp + 7);
    static const char *const rrc_set[] = {"size=[64, 48]", NULL};
    static const char *const crop_set[] = {"size=[40, 72]", NULL};
    struct diff window = {0}, out = {0};
    compare(&j, "random_resized_crop", rrc_set, "1", 60, &window, &out);
    compare(&j, "random_crop", crop_set, "1", 30, &window, &out);
    compare(&j, "center_crop", crop_set, "1", 1, &window, &out);
    print_message("subsampling %d, %d channel(s)%s: window max %d, %.3f%% differ; crop output "
                  "max %d, %.3f%% differ\n",
                  subsamp, channels, progressive ? ", progressive" : "", window.max,
                  100.0 * (double)window.differing / (double)window.values, out.max,
                  100.0 * (double)out.differing / (double)out.values);
    assert_true(window.values > 0);
    if (exact) {
        assert_int_equal(window.max, 0);
        assert_int_equal(out.max, 0);
    } else {
        assert_true(window.max <= MAX_EDGE_DIFF);
        assert_true((double)window.differing <= EDGE_FRACTION * (double)window.values);
        assert_true(out.max <= MAX_EDGE_DIFF);
    }
    tjFree(j.data);
}

static void test_fused_matches_decode_then_crop(void **state)
{
    (void)state;
    check_subsampling(TJSAMP_444, 3, false, true);
    check_subsampling(TJSAMP_GRAY, 1, false, true);
    check_subsampling(TJSAMP_420, 3, false, false);
    check_subsampling(TJSAMP_422, 3, false, false);
    check_subsampling(TJSAMP_420, 3, true, false);
}

/* j with an EXIF orientation tag: its size as displayed; free data. */
static struct jpeg with_orientation(const struct jpeg *j, int orientation, bool big_endian)
{
    const struct bytes plain = {j->data, j->len};
    struct bytes b = with_exif(&plain, orientation, big_endian);
    bool swap = orientation >= 5;
    return (struct jpeg){b.data, b.len, swap ? j->height : j->width, swap ? j->width : j->height};
}

/* EXIF-rotated and mirrored files are fused too: the window is drawn on
 * the image as displayed, and the stored pixels it shows are decoded and
 * oriented. 4:4:4 gives the unfused output exactly, 4:2:0 within the edge
 * bounds above (its upsampling edges are the stored window's). */
static void test_fused_exif_orientation(void **state)
{
    (void)state;
    static const char *const rrc_set[] = {"size=[64, 48]", NULL};
    static const char *const crop_set[] = {"size=[40, 72]", NULL};
    const int subsamps[] = {TJSAMP_444, TJSAMP_420};
    for (size_t k = 0; k < PB_ARRAY_LEN(subsamps); k++) {
        struct jpeg j = encode(333, 251, 3, subsamps[k], false, 40 + k);
        for (int orientation = 2; orientation <= 8; orientation++) {
            struct jpeg rotated = with_orientation(&j, orientation, orientation % 2 == 0);
            struct diff window = {0}, out = {0};
            compare(&rotated, "random_resized_crop", rrc_set, "1", 30, &window, &out);
            compare(&rotated, "random_crop", crop_set, "1", 10, &window, &out);
            assert_true(window.values > 0); /* the fused path ran */
            if (subsamps[k] == TJSAMP_444) {
                if (window.max != 0 || out.max != 0)
                    fail_msg("orientation %d: window max %d, output max %d", orientation,
                             window.max, out.max);
            } else {
                assert_true(window.max <= MAX_EDGE_DIFF);
                assert_true((double)window.differing <= EDGE_FRACTION * (double)window.values);
                assert_true(out.max <= MAX_EDGE_DIFF);
            }
            free(rotated.data);
        }
        tjFree(j.data);
    }
}

/* scale: window on a large image: the windows are scale 1's (same draws
 * on the full size), and those at least twice the output are decoded at
 * 1/2, 1/4 or 1/8. Against decoding the whole image at full size, the
 * output moves by the DCT-domain reduction (a box-like filter) and by
 * rounding the window outwards to whole reduced pixels (up to 8 full-size
 * pixels at 1/8): measured mean absolute difference 2.25 of 255 here (max
 * 142 at sharp edges), bounded by MAX_SCALED_MEAN. */
#define MAX_SCALED_MEAN 3.0
static void test_fused_dct_scaling(void **state)
{
    (void)state;
    struct jpeg j = encode(1600, 1200, 3, TJSAMP_420, false, 99);
    static const char *const rrc_set[] = {"size=224", NULL};
    struct pair fused;
    pair_init(&fused, "random_resized_crop", rrc_set, true, "window");
    int reduced = 0;
    for (int k = 0; k < 40; k++) {
        size_t bytes;
        struct pb_sample s = pair_run(&fused, &j, pb_mix64((uint64_t)k + 100), &bytes);
        assert_true(s.window_set);
        /* Never reduced below the output. */
        assert_true(s.window.height >= 224 || s.out_shape.height == s.window.height);
        reduced += s.counters[0] > 0; /* "scaled": below full size */
        assert_int_equal(bytes, (size_t)224 * 224 * 3);
    }
    assert_true(reduced > 0 && reduced < 40);
    print_message("scale window, 1600x1200: %d of 40 windows reduced\n", reduced);
    pair_free(&fused);
    /* The same file as stored, then rotated by EXIF (shown 1200x1600): the
     * windows' reduction is judged on the stored axes. */
    struct jpeg rotated = with_orientation(&j, 6, true);
    const struct jpeg *files[] = {&j, &rotated};
    for (size_t f = 0; f < PB_ARRAY_LEN(files); f++) {
        struct diff window = {0}, out = {0};
        compare(files[f], "random_resized_crop", rrc_set, "window", 40, &window, &out);
        double mean = out.sum / (double)out.values;
        print_message("scale window, 1600x1200%s: crop output mean |diff| %.2f, max %d\n",
                      f ? " rotated by EXIF" : "", mean, out.max);
        assert_true(out.values > 0);
        assert_true(mean <= MAX_SCALED_MEAN);
    }
    free(rotated.data);
    tjFree(j.data);
}

/* A corrupt or truncated file through the fused path is a data error with
 * libjpeg's reason; the decoder goes on with the next file. Too small an
 * output asks for the size it needs. */
static void test_fused_errors_and_space(void **state)
{
    (void)state;
    struct jpeg j = encode(200, 150, 3, TJSAMP_420, false, 5);
    static const char *const rrc_set[] = {"size=32", NULL};
    struct pair p;
    pair_init(&p, "random_resized_crop", rrc_set, true, "1");
    struct pb_sample s = {.path = "cut.jpg",
                          .seed = 1,
                          .in = j.data,
                          .in_bytes = j.len / 3,
                          .out = p.decoded,
                          .out_capacity = CAPACITY,
                          .msg = p.msg,
                          .msglen = sizeof(p.msg)};
    assert_int_equal(p.decoder->decode(p.decoder_state, &s), PB_ERR_DATA);
    assert_non_null(strstr(p.msg, "cut.jpg: "));
    unsigned char *bad = malloc(j.len);
    memcpy(bad, j.data, j.len);
    for (unsigned long k = 0; k + 1 < j.len; k++)
        if (bad[k] == 0xFF && bad[k + 1] == 0xC4) {
            memset(bad + k + 5, 0xEE, 40); /* Huffman tables overwritten */
            break;
        }
    s = (struct pb_sample){.path = "bad.jpg",
                           .seed = 1,
                           .in = bad,
                           .in_bytes = j.len,
                           .out = p.decoded,
                           .out_capacity = CAPACITY,
                           .msg = p.msg,
                           .msglen = sizeof(p.msg)};
    assert_int_equal(p.decoder->decode(p.decoder_state, &s), PB_ERR_DATA);
    assert_non_null(strstr(p.msg, "bad.jpg: "));
    s = (struct pb_sample){.path = "t.jpg",
                           .seed = 1,
                           .in = j.data,
                           .in_bytes = j.len,
                           .out = p.decoded,
                           .out_capacity = 16,
                           .msg = p.msg,
                           .msglen = sizeof(p.msg)};
    assert_int_equal(p.decoder->decode(p.decoder_state, &s), PB_ERR_NOSPACE);
    assert_true(s.out_bytes > 16);
    size_t need = s.out_bytes;
    s.out_capacity = need;
    assert_int_equal(p.decoder->decode(p.decoder_state, &s), PB_OK);
    assert_int_equal(s.out_bytes, need);
    assert_true(s.window_set);
    pair_free(&p);
    free(bad);
    tjFree(j.data);
}

/* The same comparison on a folder of real photographs, when given. */
static void test_fused_on_folder(void **state)
{
    (void)state;
    const char *dir = getenv("PB_TEST_JPEG_DIR");
    if (!dir)
        skip();
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    struct diff window = {0}, out = {0};
    int files = 0;
    static const char *const rrc_set[] = {"size=224", NULL};
    while ((e = readdir(d)) && files < 100) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        struct jpeg j = {NULL, (unsigned long)ftell(f), 0, 0};
        fseek(f, 0, SEEK_SET);
        j.data = malloc(j.len);
        assert_int_equal(fread(j.data, 1, j.len, f), j.len);
        fclose(f);
        compare(&j, "random_resized_crop", rrc_set, "1", 4, &window, &out);
        free(j.data);
        files++;
    }
    closedir(d);
    print_message("%d files of %s: window max %d, %.4f%% differ; crop output max %d, %.4f%% "
                  "differ, mean |diff| %.5f\n",
                  files, dir, window.max, 100.0 * (double)window.differing / (double)window.values,
                  out.max, 100.0 * (double)out.differing / (double)out.values,
                  out.sum / (double)out.values);
    assert_true(files > 0);
    assert_true((double)window.differing <= EDGE_FRACTION * (double)window.values);
}

static void test_window_scale(void **state)
{
    (void)state;
    struct pb_window w = {
        .height = 500, .width = 460, .out_height = 224, .out_width = 224, .resamples = true};
    assert_int_equal(pb_jpeg_window_scale(&w), 2);
    w.width = 447;
    assert_int_equal(pb_jpeg_window_scale(&w), 1);
    w = (struct pb_window){
        .height = 4000, .width = 3000, .out_height = 224, .out_width = 224, .resamples = true};
    assert_int_equal(pb_jpeg_window_scale(&w), 8);
    w.resamples = false;
    assert_int_equal(pb_jpeg_window_scale(&w), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_matches_decode_then_crop),
        cmocka_unit_test(test_fused_exif_orientation),
        cmocka_unit_test(test_fused_dct_scaling),
        cmocka_unit_test(test_fused_errors_and_space),
        cmocka_unit_test(test_window_scale),
        cmocka_unit_test(test_fused_on_folder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
