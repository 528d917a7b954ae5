/* Fuzz target: the still-image decode path. The input is an image file's
 * bytes; the `decode` stage decodes it with the `jpeg` decoder and with
 * `auto` (JPEG, PNG, WebP and BMP by their magic bytes), each set up as a
 * worker sets it up, growing its output once on PB_ERR_NOSPACE.
 *
 * Beyond crashes and sanitizer reports it checks two contracts: a decoder
 * never asks for more output than its max_pixels allows, and a valid image
 * decoded after the input still decodes (a failed input must not leave the
 * decoder's state broken). Seeds: `pbench gen --kind jpeg` (scripts/fuzz.sh). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

#include "kernels/scene.h"
#include "tests/fuzz/fuzzutil.h"

#define MAX_PIXELS 4000000
#define GOOD_SIDE 16

/* A valid baseline JPEG and a valid 24-bit BMP, made once. */
static uint8_t *good_jpeg;
static size_t good_jpeg_bytes;
static uint8_t good_bmp[54 + GOOD_SIDE * GOOD_SIDE * 3];

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void make_good_images(void)
{
    uint8_t pixels[GOOD_SIDE * GOOD_SIDE * 3];
    pb_scene_render(pixels, GOOD_SIDE, GOOD_SIDE, 3, 7, 0.0);
    tjhandle tj = tjInitCompress();
    FUZZ_CHECK(tj != NULL, "tjInitCompress");
    unsigned char *jpeg = NULL;
    unsigned long size = 0;
    int rc =
        tjCompress2(tj, pixels, GOOD_SIDE, 0, GOOD_SIDE, TJPF_RGB, &jpeg, &size, TJSAMP_420, 90, 0);
    FUZZ_CHECK(rc == 0, "tjCompress2: %s", tjGetErrorStr2(tj));
    good_jpeg = malloc(size);
    FUZZ_CHECK(good_jpeg != NULL, "out of memory");
    memcpy(good_jpeg, jpeg, size);
    good_jpeg_bytes = size;
    tjFree(jpeg);
    tjDestroy(tj);

    /* BITMAPFILEHEADER + BITMAPINFOHEADER, bottom-up BGR rows (no padding
     * at this width). */
    uint8_t *b = good_bmp;
    b[0] = 'B';
    b[1] = 'M';
    put32(b + 2, sizeof(good_bmp));
    put32(b + 10, 54);
    put32(b + 14, 40);
    put32(b + 18, GOOD_SIDE);
    put32(b + 22, GOOD_SIDE);
    b[26] = 1;  /* planes */
    b[28] = 24; /* bits per pixel */
    put32(b + 34, GOOD_SIDE * GOOD_SIDE * 3);
    for (int i = 0; i < GOOD_SIDE * GOOD_SIDE; i++) {
        b[54 + 3 * i] = pixels[3 * i + 2];
        b[54 + 3 * i + 1] = pixels[3 * i + 1];
        b[54 + 3 * i + 2] = pixels[3 * i];
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    make_good_images();
    return 0;
}

/* Decodes the input, then each valid image, with one decoder instance. */
static void decode_then_good(const char *decoder, const char *const *options, const uint8_t *data,
                             size_t size, bool bmp_too)
{
    struct fuzz_decode d;
    fuzz_decode_open(&d, decoder, options, size);
    struct pb_sample s;
    int rc = fuzz_decode_run(&d, "fuzz.img", data, size, 1, &s);
    if (rc == PB_ERR_NOSPACE)
        FUZZ_CHECK(s.out_bytes <= (size_t)MAX_PIXELS * 3,
                   "%s asks for %zu bytes of output, more than max_pixels %d allows", decoder,
                   s.out_bytes, MAX_PIXELS);
    rc = fuzz_decode_run(&d, "good.jpg", good_jpeg, good_jpeg_bytes, 2, &s);
    FUZZ_CHECK(rc == PB_OK, "%s: a valid JPEG after the input fails: %s", decoder, d.msg);
    if (bmp_too) {
        rc = fuzz_decode_run(&d, "good.bmp", good_bmp, sizeof(good_bmp), 3, &s);
        FUZZ_CHECK(rc == PB_OK, "%s: a valid BMP after the input fails: %s", decoder, d.msg);
    }
    fuzz_decode_close(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Small planned buffers, so larger images take the grow-once path. */
    static const char *const jpeg_options[] = {"max_pixels=4000000", "plan_width=64",
                                               "plan_height=48", "strict=false", NULL};
    static const char *const auto_options[] = {
        "max_pixels=4000000", "plan_width=64", "plan_height=48", "output=gray", "scale=1/2", NULL};
    decode_then_good("jpeg", jpeg_options, data, size, false);
    decode_then_good("auto", auto_options, data, size, true);
    return 0;
}
