/* The still-image decoders (decoders/jpeg.c: `jpeg` and `auto`;
 * decoders/image_av.c: `image`) and JPEG dataset generation
 * (pipelines/generate_jpeg.c).
 *
 * Decodes are compared bit for bit with libjpeg-turbo's own tjDecompress2
 * on generated baseline, progressive and grayscale files and on 4:4:4,
 * 4:2:2, 4:4:0 and 4:2:0 images made here; scaling factors and the `auto`
 * choice; EXIF orientation on tiny JPEGs with an APP1 segment built here,
 * against a plain reference transform; CMYK converted and rejected; PNG,
 * BMP (and WebP where libavcodec can encode it) against their source
 * pixels. End to end, a folder of broken files (corrupt, truncated, empty,
 * CMYK, huge, a decompression bomb, text) plus a PNG and a BMP runs through
 * `pbench run` under on_error skip (every bad file counted) and fail
 * (exit 1, the file named); configs/image.yaml runs on tiny generated data
 * with every stage reported, and its `scale: auto` takes the crop's size
 * from random_resized_crop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <libavcodec/avcodec.h>
#include <libavutil/opt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "decoders/image.h"
#include "kernels/scene.h"
#include "pipelines/generate.h"
#include "tests/testimage.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-jpeg-XXXXXX";

/* ---- helpers ----------------------------------------------------------- */

/* Encodes width x height pixels (TJPF_RGB, TJPF_GRAY or TJPF_CMYK). */
static struct bytes encode_jpeg(const uint8_t *pixels, int width, int height, int format,
                                int subsamp, int quality, int flags)
{
    tjhandle tj = tjInitCompress();
    assert_non_null(tj);
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    if (tjCompress2(tj, pixels, width, 0, height, format, &jpeg, &size, subsamp, quality,
                    flags) != 0)
        fail_msg("tjCompress2: %s", tjGetErrorStr2(tj));
    tjDestroy(tj);
    struct bytes b = {malloc(size), size};
    memcpy(b.data, jpeg, size);
    tjFree(jpeg);
    return b;
}

static uint8_t *scene(int width, int height, int channels, uint64_t seed)
{
    uint8_t *p = malloc((size_t)width * (size_t)height * (size_t)channels);
    pb_scene_render(p, height, width, channels, seed, 0.0);
    return p;
}

/* libjpeg-turbo's own decode: the reference. Returns a malloc'd image of
 * the size tjDecompress2 picks for scaled width x height. */
static uint8_t *reference_decode(const struct bytes *jpeg, int width, int height, int format)
{
    tjhandle tj = tjInitDecompress();
    uint8_t *out = malloc((size_t)width * (size_t)height * (size_t)tjPixelSize[format]);
    if (tjDecompress2(tj, jpeg->data, jpeg->len, out, width, 0, height, format, 0) != 0)
        fail_msg("tjDecompress2: %s", tjGetErrorStr2(tj));
    tjDestroy(tj);
    return out;
}

struct decoded {
    int rc;
    struct pb_shape shape;
    uint8_t *pixels; /* malloc'd, capacity bytes */
    size_t bytes;
    uint64_t counters[PB_MAX_COUNTERS];
    char msg[PB_MSG_MAX];
};

/* Decodes with the named decoder, options as "name=value" strings (NULL
 * terminated), the plan's want size and an output capacity. */
static struct decoded decode_opts(const char *decoder, const char *const *opts,
                                  const struct bytes *in, int32_t want_h, int32_t want_w,
                                  size_t capacity)
{
    const struct pb_decoder_ops *ops = pb_decoder_find(decoder);
    assert_non_null(ops);
    char msg[PB_MSG_MAX];
    struct pb_image_opts o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(pb_opt_set_defaults(ops->opts, &o, msg, sizeof(msg)), PB_OK);
    for (int i = 0; opts && opts[i]; i++) {
        char name[64];
        const char *eq = strchr(opts[i], '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - opts[i]), opts[i]);
        const struct pb_opt *opt = pb_opt_find(ops->opts, name);
        if (!opt)
            fail_msg("decoder %s has no option %s", decoder, name);
        if (pb_opt_parse(opt, eq + 1, &o, name, msg, sizeof(msg)) != PB_OK)
            fail_msg("%s", msg);
    }
    struct pb_stage_plan plan = {.max_bytes = in->len, .want_height = want_h, .want_width = want_w};
    struct pb_stage_plan out = plan;
    void *state = NULL;
    if (ops->init(&state, &o, &plan, &out, msg, sizeof(msg)) != PB_OK)
        fail_msg("init: %s", msg);
    struct decoded d = {0};
    d.pixels = malloc(capacity ? capacity : 1);
    struct pb_sample s = {.path = "test.img", .in = in->data, .in_bytes = in->len,
                          .out = d.pixels, .out_capacity = capacity, .msg = d.msg,
                          .msglen = sizeof(d.msg)};
    d.rc = ops->decode(state, &s);
    d.shape = s.out_shape;
    d.bytes = s.out_bytes;
    memcpy(d.counters, s.counters, sizeof(d.counters));
    ops->cleanup(state);
    return d;
}

static struct decoded decode(const char *decoder, const char *const *opts, const struct bytes *in)
{
    return decode_opts(decoder, opts, in, 0, 0, 64u << 20);
}

/* Decodes in with decoder and at most one option (opt, or NULL for none)
 * and checks for a data error whose message is want, or contains want
 * when exact is false. */
static void expect_data_error(const char *decoder, const char *opt, const struct bytes *in,
                              const char *want, bool exact)
{
    const char *const opts[] = {opt, NULL};
    struct decoded d = decode(decoder, opt ? opts : NULL, in);
    assert_int_equal(d.rc, PB_ERR_DATA);
    if (exact)
        assert_string_equal(d.msg, want);
    else
        assert_non_null(strstr(d.msg, want));
    free(d.pixels);
}

static struct bytes read_file(const char *path)
{
    struct bytes b = {0};
    b.data = (uint8_t *)pb_test_read_file(path, &b.len, true);
    return b;
}

/* ---- generation -------------------------------------------------------- */

static bool is_progressive(const struct bytes *b)
{
    for (size_t i = 2; i + 4 <= b->len;) {
        if (b->data[i] != 0xFF)
            return false;
        uint8_t m = b->data[i + 1];
        if (m == 0xC0 || m == 0xC1)
            return false;
        if (m == 0xC2)
            return true;
        i += 2 + (size_t)(b->data[i + 2] << 8 | b->data[i + 3]);
    }
    return false;
}

/* The header probe the dataset info uses: a baseline and a progressive
 * file's size, and what is not a JPEG or is cut before its frame header. */
static void test_dimensions_from_header(void **state)
{
    (void)state;
    uint8_t *pixels = scene(123, 77, 3, 5);
    struct bytes base = encode_jpeg(pixels, 123, 77, TJPF_RGB, TJSAMP_420, 90, 0);
    struct bytes prog = encode_jpeg(pixels, 123, 77, TJPF_RGB, TJSAMP_444, 90, TJFLAG_PROGRESSIVE);
    int w = 0, h = 0;
    assert_true(pb_jpeg_dimensions(base.data, base.len, &w, &h));
    assert_int_equal(w, 123);
    assert_int_equal(h, 77);
    assert_true(pb_jpeg_dimensions(prog.data, prog.len, &w, &h));
    assert_int_equal(w, 123);
    assert_false(pb_jpeg_dimensions(base.data, 3, &w, &h));
    static const uint8_t png[] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
    assert_false(pb_jpeg_dimensions(png, sizeof png, &w, &h));
    free(base.data);
    free(prog.data);
    free(pixels);
}

static void test_generated_files_match_reference(void **state)
{
    (void)state;
    struct pb_generate_spec spec = {.kind = PB_GENERATE_JPEG, .count = 24, .seed = 7,
                                    .quality = 90, .progressive_fraction = 0.4,
                                    .grayscale_fraction = 0.3, .corrupt_fraction = 0.1};
    snprintf(spec.size, sizeof(spec.size), "60x40-140x100");
    char dir[512], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/gen", workdir);
    if (pb_dataset_generate(&spec, dir, msg, sizeof(msg)) != PB_OK)
        fail_msg("%s", msg);

    int progressive = 0, gray = 0, corrupt = 0;
    double width_sum = 0;
    for (int64_t i = 0; i < spec.count; i++) {
        char path[600];
        snprintf(path, sizeof(path), "%s/img_%07lld.jpg", dir, (long long)i);
        struct bytes b = read_file(path);
        struct decoded d = decode("jpeg", NULL, &b);
        if (pb_generate_is_corrupt(&spec, i)) {
            /* Cut off at half its length: a data error naming the file. */
            corrupt++;
            assert_int_equal(d.rc, PB_ERR_DATA);
            assert_non_null(strstr(d.msg, "test.img: "));
            free(d.pixels);
            free(b.data);
            continue;
        }
        if (d.rc != PB_OK)
            fail_msg("%s: %s", path, d.msg);
        int w, h, subsamp, cs;
        tjhandle tj = tjInitDecompress();
        assert_int_equal(tjDecompressHeader3(tj, b.data, b.len, &w, &h, &subsamp, &cs), 0);
        tjDestroy(tj);
        assert_true(w >= 60 && w <= 140 && h >= 40 && h <= 100);
        width_sum += w;
        assert_int_equal(d.shape.width, w);
        assert_int_equal(d.shape.height, h);
        assert_int_equal(d.shape.channels, 3);
        assert_int_equal(d.bytes, (size_t)w * (size_t)h * 3);
        uint8_t *ref = reference_decode(&b, w, h, TJPF_RGB);
        assert_memory_equal(d.pixels, ref, d.bytes);
        assert_int_equal(subsamp, cs == TJCS_GRAY ? TJSAMP_GRAY : TJSAMP_420);
        gray += cs == TJCS_GRAY;
        progressive += is_progressive(&b);
        assert_int_equal(d.counters[1], is_progressive(&b));
        assert_int_equal(d.counters[2], cs == TJCS_GRAY);
        free(ref);
        free(d.pixels);

        /* BGR and gray outputs agree with libjpeg-turbo too. */
        static const char *const bgr[] = {"output=bgr", NULL};
        static const char *const g1[] = {"output=gray", NULL};
        d = decode("jpeg", bgr, &b);
        ref = reference_decode(&b, w, h, TJPF_BGR);
        assert_memory_equal(d.pixels, ref, d.bytes);
        free(ref);
        free(d.pixels);
        d = decode("jpeg", g1, &b);
        assert_int_equal(d.shape.channels, 1);
        ref = reference_decode(&b, w, h, TJPF_GRAY);
        assert_memory_equal(d.pixels, ref, d.bytes);
        free(ref);
        free(d.pixels);
        free(b.data);
    }
    /* The fractions are honoured (seeded: these counts are fixed). */
    assert_true(progressive > 0 && progressive < spec.count);
    assert_true(gray > 0 && gray < spec.count);
    assert_true(corrupt > 0 && corrupt < spec.count / 2);
    double width_mean = width_sum / (double)(spec.count - corrupt);
    assert_true(width_mean > 80 && width_mean < 120);

    /* The same spec makes the same bytes. */
    char again[512];
    snprintf(again, sizeof(again), "%s/gen2", workdir);
    assert_int_equal(pb_dataset_generate(&spec, again, msg, sizeof(msg)), PB_OK);
    for (int64_t i = 0; i < spec.count; i += 5) {
        char p1[600], p2[600];
        snprintf(p1, sizeof(p1), "%s/img_%07lld.jpg", dir, (long long)i);
        snprintf(p2, sizeof(p2), "%s/img_%07lld.jpg", again, (long long)i);
        struct bytes a = read_file(p1), b = read_file(p2);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.data, b.data, a.len);
        free(a.data);
        free(b.data);
    }
}

/* ---- subsampling, scaling --------------------------------------------- */

static void test_subsampling_matches_reference(void **state)
{
    (void)state;
    static const int subsamps[] = {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440};
    uint8_t *rgb = scene(77, 53, 3, 11);
    uint8_t *luma = scene(77, 53, 1, 12);
    for (size_t k = 0; k <= PB_ARRAY_LEN(subsamps); k++) {
        for (int progressive = 0; progressive < 2; progressive++) {
            bool gray = k == PB_ARRAY_LEN(subsamps);
            struct bytes b = encode_jpeg(gray ? luma : rgb, 77, 53, gray ? TJPF_GRAY : TJPF_RGB,
                                         gray ? TJSAMP_GRAY : subsamps[k], 85,
                                         progressive ? TJFLAG_PROGRESSIVE : 0);
            struct decoded d = decode("jpeg", NULL, &b);
            assert_int_equal(d.rc, PB_OK);
            assert_int_equal(d.shape.width, 77);
            assert_int_equal(d.shape.height, 53);
            assert_int_equal(d.shape.channels, 3); /* gray input, rgb output */
            uint8_t *ref = reference_decode(&b, 77, 53, TJPF_RGB);
            assert_memory_equal(d.pixels, ref, d.bytes);
            assert_int_equal(d.counters[1], progressive);
            free(ref);
            free(d.pixels);
            free(b.data);
        }
    }
    free(rgb);
    free(luma);
}

static void test_scale_factors_and_auto(void **state)
{
    (void)state;
    uint8_t *rgb = scene(203, 151, 3, 5);
    struct bytes b = encode_jpeg(rgb, 203, 151, TJPF_RGB, TJSAMP_420, 90, 0);
    static const char *const names[] = {"scale=1", "scale=1/2", "scale=1/4", "scale=1/8"};
    for (int i = 0; i < 4; i++) {
        const char *opts[] = {names[i], NULL};
        struct decoded d = decode("jpeg", opts, &b);
        assert_int_equal(d.rc, PB_OK);
        int denom = 1 << i;
        int w = (203 + denom - 1) / denom, h = (151 + denom - 1) / denom;
        assert_int_equal(d.shape.width, w);
        assert_int_equal(d.shape.height, h);
        assert_int_equal(d.counters[0], i > 0);
        uint8_t *ref = reference_decode(&b, w, h, TJPF_RGB);
        assert_memory_equal(d.pixels, ref, d.bytes);
        free(ref);
        free(d.pixels);
    }
    free(b.data);
    free(rgb);

    /* auto: the smallest factor that keeps at least the wanted size. */
    rgb = scene(1000, 800, 3, 6);
    b = encode_jpeg(rgb, 1000, 800, TJPF_RGB, TJSAMP_420, 75, 0);
    static const char *const automatic[] = {"scale=auto", NULL};
    static const struct {
        int32_t want_h, want_w;
        int width, height;
    } cases[] = {
        {224, 224, 500, 400}, /* 1/4 would be 250x200: too short        */
        {100, 100, 125, 100}, /* 1/8 is exactly tall enough              */
        {200, 120, 250, 200}, /* 1/4                                     */
        {801, 10, 1000, 800}, /* larger than the image: full size        */
        {0, 0, 1000, 800},    /* nothing downstream says: full size      */
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        struct decoded d = decode_opts("jpeg", automatic, &b, cases[i].want_h, cases[i].want_w,
                                       64u << 20);
        assert_int_equal(d.rc, PB_OK);
        assert_int_equal(d.shape.width, cases[i].width);
        assert_int_equal(d.shape.height, cases[i].height);
        uint8_t *ref = reference_decode(&b, cases[i].width, cases[i].height, TJPF_RGB);
        assert_memory_equal(d.pixels, ref, d.bytes);
        free(ref);
        free(d.pixels);
    }
    /* scale: 1 ignores what downstream wants. */
    struct decoded d = decode_opts("jpeg", NULL, &b, 100, 100, 64u << 20);
    assert_int_equal(d.shape.width, 1000);
    free(d.pixels);
    free(b.data);
    free(rgb);
}

/* ---- EXIF orientation -------------------------------------------------- */

/* The reference: the displayed pixel (x, y) of an image stored w x h. */
static void stored_position(int orientation, int w, int h, int x, int y, int *sx, int *sy)
{
    switch (orientation) {
    case 2: *sx = w - 1 - x, *sy = y; break;
    case 3: *sx = w - 1 - x, *sy = h - 1 - y; break;
    case 4: *sx = x, *sy = h - 1 - y; break;
    case 5: *sx = y, *sy = x; break;
    case 6: *sx = y, *sy = h - 1 - x; break;
    case 7: *sx = w - 1 - y, *sy = h - 1 - x; break;
    case 8: *sx = w - 1 - y, *sy = x; break;
    default: *sx = x, *sy = y; break;
    }
}

static void test_exif_orientation(void **state)
{
    (void)state;
    /* 16x8: left half red, right half blue, a green pixel block top left. */
    int w = 16, h = 8;
    uint8_t rgb[16 * 8 * 3];
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = rgb + (y * w + x) * 3;
            p[0] = x < 8 ? 220 : 20;
            p[1] = 20;
            p[2] = x < 8 ? 20 : 220;
        }
    struct bytes plain = encode_jpeg(rgb, w, h, TJPF_RGB, TJSAMP_444, 100, 0);
    uint8_t *stored = reference_decode(&plain, w, h, TJPF_RGB);
    for (int orientation = 1; orientation <= 8; orientation++) {
        for (int big = 0; big < 2; big++) {
            struct bytes b = with_exif(&plain, orientation, big);
            struct decoded d = decode("jpeg", NULL, &b);
            assert_int_equal(d.rc, PB_OK);
            int ow = orientation >= 5 ? h : w, oh = orientation >= 5 ? w : h;
            assert_int_equal(d.shape.width, ow);
            assert_int_equal(d.shape.height, oh);
            for (int y = 0; y < oh; y++)
                for (int x = 0; x < ow; x++) {
                    int sx, sy;
                    stored_position(orientation, w, h, x, y, &sx, &sy);
                    assert_memory_equal(d.pixels + (y * ow + x) * 3, stored + (sy * w + sx) * 3, 3);
                }
            if (orientation == 6) {
                /* Rotated 90 degrees clockwise: the red left half is on top. */
                assert_true(d.pixels[(2 * ow + 4) * 3] > 150);
                assert_true(d.pixels[(13 * ow + 4) * 3 + 2] > 150);
            }
            free(d.pixels);
            /* exif_orientation: false keeps the stored order. */
            static const char *const off[] = {"exif_orientation=false", NULL};
            d = decode("jpeg", off, &b);
            assert_int_equal(d.shape.width, w);
            assert_memory_equal(d.pixels, stored, (size_t)w * (size_t)h * 3);
            free(d.pixels);
            free(b.data);
        }
    }
    /* A malformed Exif segment (IFD offset past its end) is ignored. */
    struct bytes b = with_exif(&plain, 6, true);
    b.data[2 + 10 + 7] = 0xF0;
    struct decoded d = decode("jpeg", NULL, &b);
    assert_int_equal(d.rc, PB_OK);
    assert_int_equal(d.shape.width, w);
    free(d.pixels);
    free(b.data);

    /* Orientation and scaling together: the want applies after rotation. */
    uint8_t *big_scene = scene(640, 320, 3, 9);
    struct bytes big = encode_jpeg(big_scene, 640, 320, TJPF_RGB, TJSAMP_420, 80, 0);
    struct bytes rotated = with_exif(&big, 8, false);
    static const char *const automatic[] = {"scale=auto", NULL};
    d = decode_opts("jpeg", automatic, &rotated, 150, 70, 64u << 20);
    assert_int_equal(d.rc, PB_OK);
    assert_int_equal(d.shape.width, 80); /* 1/4: 160x80 stored, 80x160 shown */
    assert_int_equal(d.shape.height, 160);
    free(d.pixels);
    free(rotated.data);
    free(big.data);
    free(big_scene);
    free(stored);
    free(plain.data);
}

/* ---- CMYK -------------------------------------------------------------- */

static void test_cmyk_convert_and_reject(void **state)
{
    (void)state;
    int w = 40, h = 24;
    uint8_t cmyk[40 * 24 * 4];
    uint8_t *rgb = scene(w, h, 3, 21);
    for (int i = 0; i < w * h; i++) {
        for (int c = 0; c < 3; c++)
            cmyk[i * 4 + c] = rgb[i * 3 + c]; /* inverted ink, as Adobe writes it */
        cmyk[i * 4 + 3] = (uint8_t)(200 + (i % 56));
    }
    struct bytes b = encode_jpeg(cmyk, w, h, TJPF_CMYK, TJSAMP_444, 95, 0);
    uint8_t *ink = reference_decode(&b, w, h, TJPF_CMYK);
    struct decoded d = decode("jpeg", NULL, &b);
    assert_int_equal(d.rc, PB_OK);
    assert_int_equal(d.shape.channels, 3);
    assert_int_equal(d.counters[3], 1);
    for (int i = 0; i < w * h; i++) {
        unsigned k = ink[i * 4 + 3];
        for (int c = 0; c < 3; c++)
            assert_int_equal(d.pixels[i * 3 + c], (ink[i * 4 + c] * k + 127) / 255);
    }
    free(d.pixels);
    expect_data_error("jpeg", "cmyk=reject", &b,
                      "test.img: CMYK JPEG not supported (decoder option cmyk: reject)", true);
    free(ink);
    free(rgb);
    free(b.data);
}

/* ---- bad input, buffers ------------------------------------------------ */

static void test_bad_input_and_buffers(void **state)
{
    (void)state;
    struct bytes empty = {(uint8_t *)"", 0};
    struct decoded d;
    expect_data_error("jpeg", NULL, &empty, "test.img: empty file", true);

    struct bytes text = {(uint8_t *)"hello, world\n", 13};
    expect_data_error("jpeg", NULL, &text, "test.img: Not a JPEG file", false);
    expect_data_error("auto", NULL, &text, "test.img: not an image (starts with 68 65 6c 6c)",
                      true);

    uint8_t *rgb = scene(120, 90, 3, 2);
    struct bytes b = encode_jpeg(rgb, 120, 90, TJPF_RGB, TJSAMP_420, 90, 0);
    /* Truncated: an error under strict, a grey-filled image without. */
    struct bytes cut = {b.data, b.len * 2 / 3};
    expect_data_error("jpeg", NULL, &cut, "test.img: ", false);
    static const char *const lenient[] = {"strict=false", NULL};
    d = decode("jpeg", lenient, &cut);
    assert_int_equal(d.rc, PB_OK);
    assert_int_equal(d.shape.width, 120);
    free(d.pixels);
    /* Only the header: no usable data at all. */
    struct bytes header_only = {b.data, 40};
    d = decode("jpeg", NULL, &header_only);
    assert_int_equal(d.rc, PB_ERR_DATA);
    free(d.pixels);

    /* max_pixels, and a bomb: a header that claims 30000x30000. */
    expect_data_error("jpeg", "max_pixels=10000", &b,
                      "test.img: 120x90 JPEG is larger than max_pixels (10000 pixels)", true);
    struct bytes bomb = {malloc(b.len), b.len};
    memcpy(bomb.data, b.data, b.len);
    for (size_t i = 2; i + 9 < bomb.len; i++)
        if (bomb.data[i] == 0xFF && bomb.data[i + 1] == 0xC0) {
            bomb.data[i + 5] = 30000 >> 8, bomb.data[i + 6] = 30000 & 0xff;
            bomb.data[i + 7] = 30000 >> 8, bomb.data[i + 8] = 30000 & 0xff;
            break;
        }
    expect_data_error("jpeg", NULL, &bomb, "30000x30000 JPEG is larger than max_pixels", false);
    free(bomb.data);

    /* Too small a buffer: PB_ERR_NOSPACE with the size needed. */
    d = decode_opts("jpeg", NULL, &b, 0, 0, 1000);
    assert_int_equal(d.rc, PB_ERR_NOSPACE);
    assert_int_equal(d.bytes, 120 * 90 * 3);
    free(d.pixels);
    d = decode_opts("jpeg", NULL, &b, 0, 0, 120 * 90 * 3);
    assert_int_equal(d.rc, PB_OK);
    free(d.pixels);

    /* Random byte flips never crash; each gives PB_OK or PB_ERR_DATA. */
    uint64_t x = 1;
    for (int trial = 0; trial < 200; trial++) {
        struct bytes f = {malloc(b.len), b.len};
        memcpy(f.data, b.data, b.len);
        for (int k = 0; k < 4; k++) {
            x = pb_mix64(x);
            f.data[x % f.len] = (uint8_t)(x >> 40);
        }
        d = decode("auto", NULL, &f);
        assert_true(d.rc == PB_OK || d.rc == PB_ERR_DATA);
        free(d.pixels);
        free(f.data);
    }
    free(b.data);
    free(rgb);
}

/* ---- PNG, BMP, WebP through `image` and `auto` ------------------------- */

static void check_av_image(const struct bytes *file, const uint8_t *rgb, int w, int h)
{
    static const char *const decoders[] = {"image", "auto"};
    for (int i = 0; i < 2; i++) {
        struct decoded d = decode(decoders[i], NULL, file);
        if (d.rc != PB_OK)
            fail_msg("%s: %s", decoders[i], d.msg);
        assert_int_equal(d.shape.width, w);
        assert_int_equal(d.shape.height, h);
        assert_int_equal(d.shape.channels, 3);
        assert_memory_equal(d.pixels, rgb, (size_t)w * (size_t)h * 3);
        free(d.pixels);
    }
    /* BGR and gray from the same file. */
    static const char *const bgr[] = {"output=bgr", NULL};
    struct decoded d = decode("image", bgr, file);
    for (int p = 0; p < w * h; p++) {
        assert_int_equal(d.pixels[p * 3], rgb[p * 3 + 2]);
        assert_int_equal(d.pixels[p * 3 + 2], rgb[p * 3]);
    }
    free(d.pixels);
    static const char *const gray[] = {"output=gray", NULL};
    d = decode("image", gray, file);
    assert_int_equal(d.shape.channels, 1);
    for (int p = 0; p < w * h; p++) {
        unsigned r = rgb[p * 3], g = rgb[p * 3 + 1], b = rgb[p * 3 + 2];
        assert_int_equal(d.pixels[p], (77 * r + 150 * g + 29 * b + 128) >> 8);
    }
    free(d.pixels);
}

static void test_png_bmp_webp(void **state)
{
    (void)state;
    int w = 37, h = 23;
    uint8_t *rgb = scene(w, h, 3, 31);
    uint8_t *bgr = malloc((size_t)w * h * 3), *rgba = malloc((size_t)w * h * 4);
    for (int p = 0; p < w * h; p++) {
        bgr[p * 3] = rgb[p * 3 + 2], bgr[p * 3 + 1] = rgb[p * 3 + 1], bgr[p * 3 + 2] = rgb[p * 3];
        memcpy(rgba + p * 4, rgb + p * 3, 3);
        rgba[p * 4 + 3] = (uint8_t)p;
    }
    struct bytes png = encode_av(AV_CODEC_ID_PNG, NULL, AV_PIX_FMT_RGB24, rgb, w, h, 3);
    assert_non_null(png.data);
    check_av_image(&png, rgb, w, h);
    struct bytes png_alpha = encode_av(AV_CODEC_ID_PNG, NULL, AV_PIX_FMT_RGBA, rgba, w, h, 4);
    check_av_image(&png_alpha, rgb, w, h);
    struct bytes bmp = encode_av(AV_CODEC_ID_BMP, NULL, AV_PIX_FMT_BGR24, bgr, w, h, 3);
    assert_non_null(bmp.data);
    check_av_image(&bmp, rgb, w, h);
    /* Lossless WebP where this libavcodec has libwebp; opaque, since WebP
     * need not keep the colour of transparent pixels. */
    uint8_t *bgra = malloc((size_t)w * h * 4);
    for (int p = 0; p < w * h; p++) {
        memcpy(bgra + p * 4, bgr + p * 3, 3);
        bgra[p * 4 + 3] = 255;
    }
    struct bytes webp = encode_av(AV_CODEC_ID_WEBP, "libwebp", AV_PIX_FMT_BGRA, bgra, w, h, 4);
    if (webp.data)
        check_av_image(&webp, rgb, w, h);
    else
        fprintf(stderr, "test_png_bmp_webp: no libwebp encoder here, WebP not checked\n");
    free(bgra);
    /* Grayscale and 16-bit PNGs (the second through libswscale). */
    uint8_t *luma = scene(w, h, 1, 32);
    uint8_t *gray_rgb = malloc((size_t)w * h * 3);
    for (int p = 0; p < w * h; p++)
        memset(gray_rgb + p * 3, luma[p], 3);
    struct bytes png_gray = encode_av(AV_CODEC_ID_PNG, NULL, AV_PIX_FMT_GRAY8, luma, w, h, 1);
    struct decoded d = decode("image", NULL, &png_gray);
    assert_int_equal(d.rc, PB_OK);
    assert_memory_equal(d.pixels, gray_rgb, (size_t)w * h * 3);
    free(d.pixels);
    uint8_t *rgb48 = malloc((size_t)w * h * 6);
    for (int k = 0; k < w * h * 3; k++) {
        rgb48[k * 2] = rgb[k]; /* big endian: the high byte first */
        rgb48[k * 2 + 1] = (uint8_t)(k * 37);
    }
    struct bytes png48 = encode_av(AV_CODEC_ID_PNG, NULL, AV_PIX_FMT_RGB48BE, rgb48, w, h, 6);
    d = decode("image", NULL, &png48);
    assert_int_equal(d.rc, PB_OK);
    for (int k = 0; k < w * h * 3; k++)
        assert_true(abs((int)d.pixels[k] - (int)rgb[k]) <= 1);
    free(d.pixels);
    free(png48.data);
    free(rgb48);
    free(png_gray.data);
    free(gray_rgb);
    free(luma);

    /* An 8-bit palette BMP, written here: 4x3, rows bottom-up, padded. */
    uint8_t bmp8[14 + 40 + 256 * 4 + 3 * 4] = {'B', 'M'};
    uint32_t size = sizeof(bmp8), offset = 14 + 40 + 256 * 4;
    memcpy(bmp8 + 2, &size, 4);
    memcpy(bmp8 + 10, &offset, 4);
    uint8_t *info = bmp8 + 14;
    info[0] = 40;
    info[4] = 4, info[8] = 3, info[12] = 1, info[14] = 8; /* 4x3, 1 plane, 8 bits */
    for (int k = 0; k < 256; k++) { /* palette entries: B, G, R, 0 */
        bmp8[offset - 1024 + k * 4] = (uint8_t)(255 - k);
        bmp8[offset - 1024 + k * 4 + 1] = (uint8_t)(k / 2);
        bmp8[offset - 1024 + k * 4 + 2] = (uint8_t)k;
    }
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++)
            bmp8[offset + (2 - y) * 4 + x] = (uint8_t)(y * 50 + x * 10); /* top row last */
    struct bytes pal = {bmp8, sizeof(bmp8)};
    d = decode("auto", NULL, &pal);
    if (d.rc != PB_OK)
        fail_msg("%s", d.msg);
    assert_int_equal(d.shape.width, 4);
    assert_int_equal(d.shape.height, 3);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++) {
            int k = y * 50 + x * 10;
            const uint8_t *px = d.pixels + (y * 4 + x) * 3;
            assert_int_equal(px[0], k);
            assert_int_equal(px[1], k / 2);
            assert_int_equal(px[2], 255 - k);
        }
    free(d.pixels);

    /* A PNG that claims to be huge is stopped before it is decoded. */
    struct bytes bomb = {malloc(png.len), png.len};
    memcpy(bomb.data, png.data, png.len);
    bomb.data[16] = 0, bomb.data[17] = 1, bomb.data[18] = 0, bomb.data[19] = 0; /* 65536 wide */
    bomb.data[20] = 0, bomb.data[21] = 1, bomb.data[22] = 0, bomb.data[23] = 0;
    expect_data_error("auto", NULL, &bomb,
                      "test.img: 65536x65536 PNG is larger than max_pixels (89478485 pixels)",
                      true);
    /* A truncated PNG is a data error, then the next good one decodes. */
    struct bytes cut = {png.data, png.len / 2};
    expect_data_error("image", NULL, &cut, "test.img: libavcodec PNG decoder: ", false);
    /* Random byte flips in a PNG and a BMP never crash. */
    uint64_t x = 5;
    const struct bytes *sources[] = {&png, &bmp};
    for (int trial = 0; trial < 100; trial++) {
        const struct bytes *src = sources[trial & 1];
        struct bytes f = {malloc(src->len), src->len};
        memcpy(f.data, src->data, src->len);
        for (int k = 0; k < 3; k++) {
            x = pb_mix64(x);
            f.data[8 + x % (f.len - 8)] = (uint8_t)(x >> 40); /* keep the magic */
        }
        d = decode("auto", NULL, &f);
        assert_true(d.rc == PB_OK || d.rc == PB_ERR_DATA || d.rc == PB_ERR_NOSPACE);
        free(d.pixels);
        free(f.data);
    }
    /* Too small a buffer: PB_ERR_NOSPACE with the size needed. */
    d = decode_opts("image", NULL, &png, 0, 0, 100);
    assert_int_equal(d.rc, PB_ERR_NOSPACE);
    assert_int_equal(d.bytes, (size_t)w * h * 3);
    free(d.pixels);

    free(bomb.data);
    free(webp.data);
    free(bmp.data);
    free(png_alpha.data);
    free(png.data);
    free(rgba);
    free(bgr);
    free(rgb);
}

/* ---- end to end: a folder of broken files ------------------------------ */

static int run_pbench(const char *args, char **err)
{
    return pb_test_run_pbench(workdir, args, err);
}

static void test_broken_folder_end_to_end(void **state)
{
    (void)state;
    if (!getenv("PBENCH_BINARY"))
        skip();
    char dir[600], path[700];
    snprintf(dir, sizeof(dir), "%s/broken", workdir);
    assert_int_equal(mkdir(dir, 0755), 0);
    uint8_t *rgb = scene(96, 64, 3, 41);
    for (int i = 0; i < 4; i++) { /* good files */
        struct bytes b = encode_jpeg(rgb, 96, 64, TJPF_RGB, TJSAMP_420, 80 + i, 0);
        snprintf(path, sizeof(path), "%s/good_%d.jpg", dir, i);
        pb_test_write_file(path, b.data, b.len);
        if (i == 0) {
            struct bytes cut = {b.data, b.len / 2};
            snprintf(path, sizeof(path), "%s/truncated.jpg", dir);
            pb_test_write_file(path, cut.data, cut.len);
            /* Corrupt: the Huffman tables overwritten. */
            for (size_t k = 0; k + 1 < b.len; k++)
                if (b.data[k] == 0xFF && b.data[k + 1] == 0xC4) {
                    memset(b.data + k + 5, 0xEE, 40);
                    break;
                }
            snprintf(path, sizeof(path), "%s/corrupt.jpg", dir);
            pb_test_write_file(path, b.data, b.len);
        }
        if (i == 1) {
            /* Huge: the frame header says 8000x6000 (over max_pixels below);
             * and a bomb of 30000x30000 (over the default). */
            for (size_t k = 2; k + 9 < b.len; k++)
                if (b.data[k] == 0xFF && b.data[k + 1] == 0xC0) {
                    b.data[k + 5] = 6000 >> 8, b.data[k + 6] = 6000 & 0xff;
                    b.data[k + 7] = 8000 >> 8, b.data[k + 8] = 8000 & 0xff;
                    snprintf(path, sizeof(path), "%s/huge.jpg", dir);
                    pb_test_write_file(path, b.data, b.len);
                    b.data[k + 5] = 30000 >> 8, b.data[k + 6] = 30000 & 0xff;
                    b.data[k + 7] = 30000 >> 8, b.data[k + 8] = 30000 & 0xff;
                    snprintf(path, sizeof(path), "%s/bomb.jpg", dir);
                    pb_test_write_file(path, b.data, b.len);
                    break;
                }
        }
        free(b.data);
    }
    uint8_t cmyk[32 * 16 * 4];
    for (size_t k = 0; k < sizeof(cmyk); k++)
        cmyk[k] = (uint8_t)(k * 7);
    struct bytes c = encode_jpeg(cmyk, 32, 16, TJPF_CMYK, TJSAMP_444, 90, 0);
    snprintf(path, sizeof(path), "%s/cmyk.jpg", dir);
    pb_test_write_file(path, c.data, c.len);
    free(c.data);
    snprintf(path, sizeof(path), "%s/empty.jpg", dir);
    pb_test_write_file(path, "", 0);
    snprintf(path, sizeof(path), "%s/notes.txt", dir);
    pb_test_write_file(path, "not an image\n", 13);
    uint8_t *bgr = scene(50, 30, 3, 42);
    struct bytes png = encode_av(AV_CODEC_ID_PNG, NULL, AV_PIX_FMT_RGB24, bgr, 50, 30, 3);
    struct bytes bmp = encode_av(AV_CODEC_ID_BMP, NULL, AV_PIX_FMT_BGR24, bgr, 50, 30, 3);
    snprintf(path, sizeof(path), "%s/picture.png", dir);
    pb_test_write_file(path, png.data, png.len);
    snprintf(path, sizeof(path), "%s/picture.bmp", dir);
    pb_test_write_file(path, bmp.data, bmp.len);
    free(png.data);
    free(bmp.data);
    free(bgr);
    free(rgb);

    char config[700];
    snprintf(config, sizeof(config), "%s/broken.yaml", workdir);
    FILE *f = fopen(config, "w");
    assert_non_null(f);
    fprintf(f, "name: broken\n"
               "dataset: {path: broken, shuffle: false, epochs: 1}\n"
               "pipeline:\n"
               "  - read:\n"
               "  - decode: {decoder: auto, cmyk: reject, max_pixels: 40000000,\n"
               "             plan_width: 96, plan_height: 64}\n"
               "loader: {workers: 2, batch_size: 2, prefetch_factor: 2}\n"
               "run: {warmup_batches: 0, min_time_s: 0, max_time_s: 30, repeats: 1,\n"
               "      step_ms: 0, on_error: skip, max_error_pct: 100}\n");
    fclose(f);

    char *err = NULL;
    int rc = run_pbench("run broken.yaml -o skip.json -q", &err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    free(err);
    snprintf(path, sizeof(path), "%s/skip.json", workdir);
    json_error_t jerr;
    json_t *r = json_load_file(path, 0, &jerr);
    assert_non_null(r);
    json_t *p = json_array_get(json_object_get(r, "points"), 0);
    json_t *errors = json_object_get(p, "errors");
    /* Bad: corrupt, truncated, huge, bomb, cmyk, empty, notes.txt.
     * Good: four JPEGs, the PNG and the BMP. */
    assert_int_equal(json_integer_value(json_object_get(errors, "count")), 7);
    assert_int_equal(json_number_value(json_object_get(p, "samples")), 6);
    json_t *files = json_object_get(errors, "files");
    assert_true(json_array_size(files) >= 1);
    char all[8192] = "";
    for (size_t i = 0; i < json_array_size(files); i++) {
        strncat(all, json_string_value(json_array_get(files, i)), sizeof(all) - strlen(all) - 2);
        strcat(all, "\n");
    }
    assert_non_null(strstr(all, "broken/"));
    json_decref(r);

    /* Under fail: exit 1, and the message names the file and the reason. */
    rc = run_pbench("run broken.yaml -s run.on_error=fail -o fail.json -q", &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "broken/"));
    assert_true(strstr(err, ".jpg: ") || strstr(err, ".txt: "));
    free(err);
    /* The same with only the CMYK file failing. */
    rc = run_pbench("run broken.yaml -s run.on_error=fail -s 'dataset.path=broken/cmyk*' "
                    "-o fail2.json -q",
                    &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "broken/cmyk.jpg: CMYK JPEG not supported"));
    free(err);
}

/* ---- end to end: configs/image.yaml on tiny data ------------------------ */

static json_t *load_json(const char *name)
{
    return pb_test_load_json(workdir, name);
}

static const json_t *stage_named(const json_t *point, const char *name)
{
    const json_t *stages = json_object_get(point, "stages");
    for (size_t i = 0; i < json_array_size(stages); i++) {
        const json_t *stage = json_array_get(stages, i);
        if (strcmp(json_string_value(json_object_get(stage, "name")), name) == 0)
            return stage;
    }
    fail_msg("no stage %s in the result", name);
    return NULL;
}

#define IMAGE_FAST                                                                            \
    "-s run.warmup_batches=1 -s run.min_time_s=0.1 -s run.max_time_s=0.4 -s run.repeats=1 "  \
    "-s run.window_s=0.05 -s loader.batch_size=4 -q "

static void test_image_config_end_to_end(void **state)
{
    (void)state;
    const char *source = getenv("PBENCH_SOURCE_DIR");
    if (!getenv("PBENCH_BINARY") || !source)
        skip();
    char args[2048], *err = NULL;
    /* The shipped config, on 24 small generated images: every stage shows. */
    snprintf(args, sizeof(args),
             "run '%s/configs/image.yaml' -s dataset.path=small -s dataset.generate.count=24 "
             "-s dataset.generate.size=120x90-160x120 " IMAGE_FAST "-o image.json",
             source);
    int rc = run_pbench(args, &err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    free(err);
    json_t *r = load_json("image.json");
    json_t *p = json_array_get(json_object_get(r, "points"), 0);
    static const char *const stages[] = {"read", "decode", "random_resized_crop", "flip",
                                         "normalize"};
    for (size_t i = 0; i < PB_ARRAY_LEN(stages); i++)
        assert_true(json_integer_value(json_object_get(stage_named(p, stages[i]), "count")) > 0);
    const json_t *counters = json_object_get(stage_named(p, "decode"), "counters");
    assert_int_equal(json_integer_value(json_object_get(counters, "scaled")), 0);
    assert_true(json_integer_value(json_object_get(counters, "progressive")) > 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "errors"), "count")), 0);
    json_decref(r);

    /* scale: auto on 900x700 images: the crop wants 224x224, so every
     * image decodes at 1/2 (450x350), told by random_resized_crop. */
    snprintf(args, sizeof(args),
             "run '%s/configs/image.yaml' -s dataset.path=large -s dataset.generate.count=6 "
             "-s dataset.generate.size=900x700 -s pipeline.decode.scale=auto " IMAGE_FAST
             "-o auto.json",
             source);
    rc = run_pbench(args, &err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    free(err);
    r = load_json("auto.json");
    p = json_array_get(json_object_get(r, "points"), 0);
    const json_t *decode = stage_named(p, "decode");
    counters = json_object_get(decode, "counters");
    assert_true(json_integer_value(json_object_get(counters, "scaled")) > 0);
    assert_int_equal(json_integer_value(json_object_get(counters, "scaled")),
                     json_integer_value(json_object_get(decode, "count")));
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generated_files_match_reference),
        cmocka_unit_test(test_subsampling_matches_reference),
        cmocka_unit_test(test_scale_factors_and_auto),
        cmocka_unit_test(test_exif_orientation),
        cmocka_unit_test(test_cmyk_convert_and_reject),
        cmocka_unit_test(test_bad_input_and_buffers),
        cmocka_unit_test(test_dimensions_from_header),
        cmocka_unit_test(test_png_bmp_webp),
        cmocka_unit_test(test_broken_folder_end_to_end),
        cmocka_unit_test(test_image_config_end_to_end),
    };
    pb_test_tmpdir_use(workdir);
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
