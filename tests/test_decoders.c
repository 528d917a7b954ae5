/* Every decoder after a bad sample (issue 16): one worker's decoder state
 * decodes a corrupt sample, then a valid one, which must come out exactly
 * as a fresh decoder makes it. The corrupt kinds: a frame header that
 * claims 0x0 pixels, a header cut at 20 bytes, random bytes after the
 * magic number, and sizes so large that the output size overflows (a data
 * error, never a request to grow a buffer to an absurd size). For `jpeg`
 * and `auto` (JPEG, BMP, PNG through `image`), `image`, `video` (a file
 * cut short, random bytes, a corrupt sample index) and `null`
 * (fail_every). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <libavcodec/avcodec.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "decoders/decoder.h"
#include "pipelines/generate.h"
#include "tests/testimage.h"
#include "tests/testutil.h"

#define OUT_CAPACITY (16u << 20)

static char workdir[] = "/tmp/pbench-decoders-XXXXXX";

struct dec {
    const struct pb_decoder_ops *ops;
    void *opts;
    void *state;
};

/* A decoder with its default options and then "key=value" ones (NULL
 * terminated, or NULL). */
static void dec_open(struct dec *d, const char *name, const char *const *options)
{
    char msg[PB_MSG_MAX];
    d->ops = pb_decoder_find(name);
    assert_non_null(d->ops);
    d->opts = calloc(1, d->ops->opts_size);
    assert_int_equal(pb_opt_set_defaults(d->ops->opts, d->opts, msg, sizeof(msg)), PB_OK);
    for (int i = 0; options && options[i]; i++) {
        char key[64];
        const char *eq = strchr(options[i], '=');
        snprintf(key, sizeof(key), "%.*s", (int)(eq - options[i]), options[i]);
        const struct pb_opt *o = pb_opt_find(d->ops->opts, key);
        assert_non_null(o);
        assert_int_equal(pb_opt_parse(o, eq + 1, d->opts, key, msg, sizeof(msg)), PB_OK);
    }
    struct pb_stage_plan in = {.shape = {.dtype = PB_DTYPE_BYTES}, .max_bytes = 1 << 20};
    struct pb_stage_plan out = in;
    if (d->ops->init(&d->state, d->opts, &in, &out, msg, sizeof(msg)) != PB_OK)
        fail_msg("%s: %s", name, msg);
}

static void dec_close(struct dec *d)
{
    d->ops->cleanup(d->state);
    free(d->opts);
}

struct decoded {
    int rc;
    size_t bytes;
    struct pb_shape shape;
    char msg[PB_MSG_MAX];
};

/* Decodes one sample (bytes in, or the file at path for decoders that
 * open it) into out. */
static struct decoded dec_run(struct dec *d, const char *path, uint64_t index,
                              const struct bytes *in, uint8_t *out)
{
    struct decoded r = {0};
    struct pb_sample s = {.index = index,
                          .path = path,
                          .seed = 11,
                          .in = in ? in->data : NULL,
                          .in_bytes = in ? in->len : 0,
                          .out = out,
                          .out_capacity = OUT_CAPACITY,
                          .msg = r.msg,
                          .msglen = sizeof(r.msg)};
    r.rc = d->ops->decode(d->state, &s);
    r.bytes = s.out_bytes;
    r.shape = s.out_shape;
    return r;
}

/* The sequence under test: good, then each bad sample followed by good
 * again; every bad one is a data error with the sample named, and every
 * good one decodes to what the first did. */
static void check_bad_then_good(const char *name, const char *const *options, const char *good_path,
                                const struct bytes *good, const char *const *bad_paths,
                                const struct bytes *bad, size_t bad_count)
{
    uint8_t *reference = malloc(OUT_CAPACITY), *out = malloc(OUT_CAPACITY);
    struct dec d;
    dec_open(&d, name, options);
    struct decoded first = dec_run(&d, good_path, 0, good, reference);
    if (first.rc != PB_OK)
        fail_msg("%s: the good sample fails: %s", name, first.msg);
    for (size_t i = 0; i < bad_count; i++) {
        const char *path = bad_paths ? bad_paths[i] : "bad.img";
        struct decoded b = dec_run(&d, path, 1, bad ? &bad[i] : NULL, out);
        if (b.rc != PB_ERR_DATA || !strstr(b.msg, path))
            fail_msg("%s: bad sample %zu (%s): rc %d, %s", name, i, path, b.rc, b.msg);
        struct decoded again = dec_run(&d, good_path, 2, good, out);
        if (again.rc != PB_OK)
            fail_msg("%s: the good sample after bad sample %zu (%s) fails: %s", name, i, path,
                     again.msg);
        assert_int_equal(again.bytes, first.bytes);
        assert_memory_equal(&again.shape, &first.shape, sizeof(first.shape));
        if (memcmp(out, reference, first.bytes) != 0)
            fail_msg("%s: the good sample after bad sample %zu (%s) decodes differently "
                     "(%02x %02x %02x / %02x %02x %02x, %zu bytes)",
                     name, i, path, out[0], out[1], out[2], reference[0], reference[1],
                     reference[2], first.bytes);
    }
    dec_close(&d);
    free(reference);
    free(out);
}

/* ---- the corrupt inputs -------------------------------------------------- */

static uint8_t *pixels(int width, int height)
{
    uint8_t *p = malloc((size_t)width * (size_t)height * 3);
    for (size_t i = 0; i < (size_t)width * (size_t)height * 3; i++)
        p[i] = (uint8_t)(i * 7 + i / 97);
    return p;
}

static struct bytes encode_jpeg(int width, int height)
{
    uint8_t *rgb = pixels(width, height);
    tjhandle tj = tjInitCompress();
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    assert_int_equal(
        tjCompress2(tj, rgb, width, 0, height, TJPF_RGB, &jpeg, &size, TJSAMP_420, 90, 0), 0);
    tjDestroy(tj);
    struct bytes b = {malloc(size), size};
    memcpy(b.data, jpeg, size);
    tjFree(jpeg);
    free(rgb);
    return b;
}

static struct bytes copy_of(const struct bytes *b, size_t len)
{
    struct bytes c = {malloc(len ? len : 1), len};
    memcpy(c.data, b->data, len < b->len ? len : b->len);
    return c;
}

/* keep bytes of magic, then random bytes up to len. */
static struct bytes random_after(const struct bytes *b, size_t keep, size_t len, uint64_t seed)
{
    struct bytes c = copy_of(b, len);
    for (size_t i = keep; i < len; i++)
        c.data[i] = (uint8_t)(pb_mix64(seed + i) >> 32);
    return c;
}

/* The JPEG with its frame header's height and width set. */
static struct bytes jpeg_claiming(const struct bytes *b, unsigned height, unsigned width)
{
    struct bytes c = copy_of(b, b->len);
    for (size_t i = 2; i + 9 < c.len; i++)
        if (c.data[i] == 0xFF && c.data[i + 1] == 0xC0) {
            c.data[i + 5] = (uint8_t)(height >> 8), c.data[i + 6] = (uint8_t)height;
            c.data[i + 7] = (uint8_t)(width >> 8), c.data[i + 8] = (uint8_t)width;
            return c;
        }
    fail_msg("no SOF0 marker");
    return c;
}

enum { JPEG_BAD = 4 };

static void jpeg_bad_set(const struct bytes *good, struct bytes bad[JPEG_BAD])
{
    bad[0] = jpeg_claiming(good, 0, 0);
    bad[1] = copy_of(good, 20);
    bad[2] = random_after(good, 3, 300, 1);
    bad[3] = random_after(good, 0, 300, 2);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A 24-bit BMP of width x height, bottom-up rows padded to 4 bytes. */
static struct bytes make_bmp(int width, int height)
{
    size_t row = ((size_t)width * 3 + 3) & ~(size_t)3, len = 54 + row * (size_t)height;
    struct bytes b = {calloc(1, len), len};
    uint8_t *p = b.data;
    p[0] = 'B', p[1] = 'M';
    put_le32(p + 2, (uint32_t)len);
    put_le32(p + 10, 54);
    put_le32(p + 14, 40);
    put_le32(p + 18, (uint32_t)width);
    put_le32(p + 22, (uint32_t)height);
    p[26] = 1, p[28] = 24;
    put_le32(p + 34, (uint32_t)(row * (size_t)height));
    uint8_t *rgb = pixels(width, height);
    memcpy(p + 54, rgb,
           row * (size_t)height < (size_t)width * (size_t)height * 3
               ? row * (size_t)height
               : (size_t)width * (size_t)height * 3);
    free(rgb);
    return b;
}

enum { BMP_BAD = 4 };

static void bmp_bad_set(const struct bytes *good, struct bytes bad[BMP_BAD])
{
    bad[0] = copy_of(good, good->len);
    put_le32(bad[0].data + 18, 0);
    put_le32(bad[0].data + 22, 0);
    bad[1] = copy_of(good, 20);
    bad[2] = random_after(good, 2, 300, 3);
    bad[3] = copy_of(good, good->len); /* 2^31 - 1 squared: past int64 in pixels x 3 */
    put_le32(bad[3].data + 18, 0x7fffffff);
    put_le32(bad[3].data + 22, 0x7fffffff);
}

/* A PNG through libavcodec's encoder; .data NULL when it has none. */
static struct bytes make_png(int width, int height)
{
    uint8_t *rgb = pixels(width, height);
    struct bytes b = encode_av(AV_CODEC_ID_PNG, NULL, AV_PIX_FMT_RGB24, rgb, width, height, 3);
    free(rgb);
    return b;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

enum { PNG_BAD = 4 };

static void png_bad_set(const struct bytes *good, struct bytes bad[PNG_BAD])
{
    bad[0] = copy_of(good, good->len); /* IHDR width and height */
    put_be32(bad[0].data + 16, 0);
    put_be32(bad[0].data + 20, 0);
    bad[1] = copy_of(good, 20);
    bad[2] = random_after(good, 8, 300, 4);
    bad[3] = copy_of(good, good->len); /* 2^32 - 1 squared overflows int64 */
    put_be32(bad[3].data + 16, 0xffffffffu);
    put_be32(bad[3].data + 20, 0xffffffffu);
}

static void free_all(struct bytes *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(b[i].data);
}

/* ---- the decoders ---------------------------------------------------------- */

static void test_jpeg_and_auto_after_bad_jpeg(void **state)
{
    (void)state;
    struct bytes good = encode_jpeg(64, 48), bad[JPEG_BAD];
    jpeg_bad_set(&good, bad);
    static const char *const gray[] = {"output=gray", NULL};
    static const char *const lenient[] = {"strict=false", NULL};
    check_bad_then_good("jpeg", NULL, "good.jpg", &good, NULL, bad, JPEG_BAD);
    check_bad_then_good("jpeg", gray, "good.jpg", &good, NULL, bad, JPEG_BAD);
    check_bad_then_good("jpeg", lenient, "good.jpg", &good, NULL, bad, JPEG_BAD);
    check_bad_then_good("auto", NULL, "good.jpg", &good, NULL, bad, JPEG_BAD);
    /* The 0x0 header twice in a row, then good: as the unshuffled folder. */
    struct bytes twice[2] = {bad[0], bad[0]};
    check_bad_then_good("jpeg", NULL, "good.jpg", &good, NULL, twice, 2);
    free_all(bad, JPEG_BAD);
    free(good.data);
}

static void test_image_and_auto_after_bad_bmp_png(void **state)
{
    (void)state;
    if (pb_decoder_find("image")->unavailable_reason)
        skip();
    struct bytes bmp = make_bmp(20, 10), bad[BMP_BAD];
    bmp_bad_set(&bmp, bad);
    check_bad_then_good("image", NULL, "good.bmp", &bmp, NULL, bad, BMP_BAD);
    check_bad_then_good("auto", NULL, "good.bmp", &bmp, NULL, bad, BMP_BAD);
    free_all(bad, BMP_BAD);
    struct bytes png = make_png(20, 10);
    if (png.data) {
        png_bad_set(&png, bad);
        check_bad_then_good("image", NULL, "good.png", &png, NULL, bad, PNG_BAD);
        check_bad_then_good("auto", NULL, "good.png", &png, NULL, bad, PNG_BAD);
        free_all(bad, PNG_BAD);
    }
    /* auto: a bad JPEG before a good BMP, and a bad BMP before a good JPEG. */
    struct bytes jpeg = encode_jpeg(32, 16), bad_jpeg[JPEG_BAD];
    jpeg_bad_set(&jpeg, bad_jpeg);
    check_bad_then_good("auto", NULL, "good.bmp", &bmp, NULL, bad_jpeg, JPEG_BAD);
    bmp_bad_set(&bmp, bad);
    check_bad_then_good("auto", NULL, "good.jpg", &jpeg, NULL, bad, BMP_BAD);
    free_all(bad, BMP_BAD);
    free_all(bad_jpeg, JPEG_BAD);
    free(jpeg.data);
    free(png.data);
    free(bmp.data);
}

/* Decodes in (as file path) with a fresh decoder and options; it must be a
 * data error whose message contains want. */
static void expect_data_error(const char *name, const char *const *options, const char *path,
                              const struct bytes *in, const char *want)
{
    uint8_t *out = malloc(OUT_CAPACITY);
    struct dec d;
    dec_open(&d, name, options);
    struct decoded r = dec_run(&d, path, 0, in, out);
    if (r.rc != PB_ERR_DATA || !strstr(r.msg, want))
        fail_msg("%s: rc %d, %s\nwant: %s", path, r.rc, r.msg, want);
    dec_close(&d);
    free(out);
}

/* Sizes from a corrupt header are data errors, not huge buffer requests. */
static void test_overflowing_sizes_are_data_errors(void **state)
{
    (void)state;
    /* A JPEG claiming 65535x65535 with max_pixels raised: 12.9 GB decoded. */
    static const char *const no_pixel_limit[] = {"max_pixels=1000000000000", NULL};
    struct bytes jpeg = encode_jpeg(32, 16);
    struct bytes huge = jpeg_claiming(&jpeg, 65535, 65535);
    expect_data_error("jpeg", no_pixel_limit, "huge.jpg", &huge,
                      "huge.jpg: a 65535x65535 image would take 12884508675 bytes decoded, more "
                      "than the 4294967296 bytes a sample may take");
    free(huge.data);
    free(jpeg.data);
    struct bytes bmp = make_bmp(20, 10), bad[BMP_BAD];
    bmp_bad_set(&bmp, bad);
    expect_data_error("image", NULL, "huge.bmp", &bad[3],
                      "huge.bmp: 2147483647x2147483647 BMP is larger than max_pixels");
    free_all(bad, BMP_BAD);
    free(bmp.data);
    struct bytes png = make_png(20, 10);
    if (png.data) {
        png_bad_set(&png, bad);
        expect_data_error("image", NULL, "huge.png", &bad[3],
                          "huge.png: 4294967295x4294967295 PNG is larger than max_pixels");
        free_all(bad, PNG_BAD);
        free(png.data);
    }
}

static void test_video_after_bad_files(void **state)
{
    (void)state;
    char dir[600], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/videos", workdir);
    struct pb_generate_spec g;
    assert_int_equal(pb_opt_set_defaults(pb_generate_opts, &g, msg, sizeof(msg)), PB_OK);
    g.kind = PB_GENERATE_VIDEO;
    g.count = 1;
    g.frames = 30;
    g.gop = 6;
    snprintf(g.size, sizeof(g.size), "64x48");
    if (pb_dataset_generate(&g, dir, msg, sizeof(msg)) != PB_OK)
        fail_msg("%s", msg);
    char good_path[700];
    snprintf(good_path, sizeof(good_path), "%s/video_0000000.mp4", dir);
    size_t len;
    struct bytes good;
    good.data = (uint8_t *)pb_test_read_file(good_path, &len, true);
    good.len = len;
    struct bytes bad[3];
    bad[0] = copy_of(&good, 20);
    bad[1] = random_after(&good, 8, good.len, 5);
    bad[2] = copy_of(&good, good.len); /* the sample-to-chunk table */
    uint8_t *stsc = memmem(bad[2].data, bad[2].len, "stsc", 4);
    assert_non_null(stsc);
    for (int i = -4; i < 12; i++)
        stsc[i] ^= 0x5a;
    char bad_paths[3][700];
    const char *paths[3];
    for (int i = 0; i < 3; i++) {
        snprintf(bad_paths[i], sizeof(bad_paths[i]), "%s/bad-%d.mp4", workdir, i);
        pb_test_write_file(bad_paths[i], bad[i].data, bad[i].len);
        paths[i] = bad_paths[i];
    }
    static const char *const clip[] = {"clip_frames=4", NULL};
    static const char *const per_clip[] = {"clip_frames=4", "reopen=per_clip", NULL};
    check_bad_then_good("video", clip, good_path, NULL, paths, NULL, 3);
    check_bad_then_good("video", per_clip, good_path, NULL, paths, NULL, 3);
    free_all(bad, 3);
    free(good.data);
}

static void test_null_after_bad_sample(void **state)
{
    (void)state;
    static const char *const every_other[] = {"fail_every=2", NULL};
    struct bytes in = {(uint8_t *)"bytes", 5};
    uint8_t *out = malloc(OUT_CAPACITY), *fresh = malloc(OUT_CAPACITY);
    struct dec d, f;
    dec_open(&d, "null", every_other);
    dec_open(&f, "null", every_other);
    struct decoded bad = dec_run(&d, "s1.bin", 1, &in, out);
    assert_int_equal(bad.rc, PB_ERR_DATA);
    assert_non_null(strstr(bad.msg, "s1.bin: null decoder: sample 1 marked corrupt"));
    struct decoded good = dec_run(&d, "s2.bin", 2, &in, out);
    struct decoded ref = dec_run(&f, "s2.bin", 2, &in, fresh);
    assert_int_equal(good.rc, PB_OK);
    assert_int_equal(good.bytes, ref.bytes);
    assert_memory_equal(out, fresh, ref.bytes);
    dec_close(&d);
    dec_close(&f);
    free(out);
    free(fresh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jpeg_and_auto_after_bad_jpeg),
        cmocka_unit_test(test_image_and_auto_after_bad_bmp_png),
        cmocka_unit_test(test_overflowing_sizes_are_data_errors),
        cmocka_unit_test(test_video_after_bad_files),
        cmocka_unit_test(test_null_after_bad_sample),
    };
    pb_test_tmpdir_use(workdir);
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
