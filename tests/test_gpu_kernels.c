/* Tests of kernels/gpu.cu against the CPU kernels of kernels/image.c,
 * applied sample by sample and frame by frame, on seeded random batches of
 * odd sizes whose samples lie further apart than their size.
 *
 * Every comparison is bit-exact (memcmp), resampling included: the GPU
 * reads the CPU's coefficient tables and repeats its float operations in
 * its order without fused multiply-adds. Output buffers start filled with a
 * sentinel byte, on the host and on the device alike, and are compared
 * whole, so a byte written between samples fails the test too.
 *
 * Skips (ctest's code 77, with the reason) in a build without CUDA or on a
 * machine without a CUDA device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/image.h"

#if PB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/gpu.h"

/* Under AddressSanitizer, the CUDA driver's address-space reservation
 * collides with ASan's protected shadow gap (every cudaMalloc fails), and
 * the driver keeps allocations LeakSanitizer reports at exit. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "protect_shadow_gap=0";
}

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libcuda\n";
}
#endif

#define SENTINEL 0xa5

static cudaStream_t stream;
static struct pb_normalize_lut lut;
static struct pb_normalize_lut *lut_dev;

#define CUDA_OK(call) check_cuda((int)(call), #call, __LINE__)

static void check_cuda(int err, const char *what, int line)
{
    if (err != 0)
        fail_msg("line %d: %s: %s", line, what, cudaGetErrorString((cudaError_t)err));
}

static uint8_t *random_bytes(size_t bytes, uint64_t seed)
{
    uint8_t *p = malloc(bytes ? bytes : 1);
    assert_non_null(p);
    for (size_t i = 0; i < bytes; i++)
        p[i] = (uint8_t)(pb_mix64(seed + i) >> 56);
    return p;
}

static uint8_t *sentinel_bytes(size_t bytes)
{
    uint8_t *p = malloc(bytes ? bytes : 1);
    assert_non_null(p);
    memset(p, SENTINEL, bytes);
    return p;
}

static void *device_copy(const void *host, size_t bytes)
{
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, bytes ? bytes : 1));
    if (bytes)
        CUDA_OK(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice));
    return p;
}

static void *device_sentinel(size_t bytes)
{
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, bytes ? bytes : 1));
    CUDA_OK(cudaMemset(p, SENTINEL, bytes ? bytes : 1));
    return p;
}

/* Waits for the kernel, fetches the device batch and compares it byte for
 * byte with the CPU's, naming the first difference. */
static void expect_batch(const void *dev, const uint8_t *want, size_t bytes, size_t stride,
                         const char *what)
{
    CUDA_OK(cudaStreamSynchronize(stream));
    uint8_t *got = malloc(bytes ? bytes : 1);
    assert_non_null(got);
    CUDA_OK(cudaMemcpy(got, dev, bytes, cudaMemcpyDeviceToHost));
    if (memcmp(got, want, bytes) != 0) {
        size_t i = 0;
        while (got[i] == want[i])
            i++;
        int sample = (int)(i / stride);
        size_t offset = i % stride;
        int g = got[i], w = want[i];
        free(got);
        fail_msg("%s: sample %d byte %zu: got 0x%02x, want 0x%02x", what, sample, offset, g, w);
    }
    free(got);
}

struct size2 {
    int h, w;
};

static const struct size2 sizes[] = {{1, 1}, {3, 7}, {17, 33}, {224, 224}};
static const int frame_counts[] = {1, 3};
static const int sample_counts[] = {1, 5};

static int setup(void **state)
{
    (void)state;
    static const double mean[PB_NORMALIZE_MAX_CHANNELS] = {0.485, 0.456, 0.406, 0.5};
    static const double std[PB_NORMALIZE_MAX_CHANNELS] = {0.229, 0.224, 0.225, 0.25};
    pb_normalize_lut_init(&lut, PB_NORMALIZE_MAX_CHANNELS, mean, std, 255.0);
    if (cudaStreamCreate(&stream) != cudaSuccess)
        return -1;
    if (cudaMalloc((void **)&lut_dev, sizeof(lut)) != cudaSuccess)
        return -1;
    if (cudaMemcpy(lut_dev, &lut, sizeof(lut), cudaMemcpyHostToDevice) != cudaSuccess)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cudaFree(lut_dev);
    cudaStreamDestroy(stream);
    return 0;
}

/* ---- normalize ------------------------------------------------------- */

static const char *const dtype_names[] = {"bytes", "u8", "f16", "f32"};
static const char *const layout_names[] = {"THWC", "TCHW", "CTHW"};

static void check_normalize(int h, int w, int frames, int n, int cin, int cout, enum pb_dtype dtype,
                            enum pb_layout layout)
{
    size_t element = dtype == PB_DTYPE_F32 ? 4 : dtype == PB_DTYPE_F16 ? 2 : 1;
    size_t pixels = (size_t)frames * (size_t)h * (size_t)w;
    size_t src_stride = pixels * (size_t)cin + 13; /* odd: samples start anywhere */
    size_t dst_stride = pixels * (size_t)cout * element + 64;
    size_t src_bytes = (size_t)n * src_stride, dst_bytes = (size_t)n * dst_stride;
    uint8_t *src = random_bytes(src_bytes, (uint64_t)(h * 1000 + w * 10 + cin));
    uint8_t *want = sentinel_bytes(dst_bytes);
    for (int i = 0; i < n; i++)
        pb_normalize_u8(src + (size_t)i * src_stride, frames, h, w, cin, cout, &lut, dtype, layout,
                        want + (size_t)i * dst_stride);

    uint8_t *src_dev = device_copy(src, src_bytes);
    uint8_t *dst_dev = device_sentinel(dst_bytes);
    CUDA_OK(pb_gpu_normalize_u8(src_dev, src_stride, dst_dev, dst_stride, n, frames, h, w, cin,
                                cout, lut_dev, dtype, layout, stream));
    char what[128];
    snprintf(what, sizeof(what), "normalize %dx%d t%d n%d c%d->%d %s %s", h, w, frames, n, cin,
             cout, dtype_names[dtype], layout_names[layout]);
    expect_batch(dst_dev, want, dst_bytes, dst_stride, what);
    CUDA_OK(cudaFree(src_dev));
    CUDA_OK(cudaFree(dst_dev));
    free(src);
    free(want);
}

static void test_normalize(void **state)
{
    (void)state;
    /* Gray, color, gray repeated into 3 and into 4 channels, 4 channels. */
    static const int channels[][2] = {{1, 1}, {3, 3}, {1, 3}, {1, 4}, {4, 4}};
    static const enum pb_dtype dtypes[] = {PB_DTYPE_F32, PB_DTYPE_F16, PB_DTYPE_U8};
    static const enum pb_layout layouts[] = {PB_LAYOUT_THWC, PB_LAYOUT_TCHW, PB_LAYOUT_CTHW};
    for (size_t s = 0; s < PB_ARRAY_LEN(sizes); s++)
        for (size_t f = 0; f < PB_ARRAY_LEN(frame_counts); f++)
            for (size_t k = 0; k < PB_ARRAY_LEN(sample_counts); k++)
                for (size_t c = 0; c < PB_ARRAY_LEN(channels); c++)
                    for (size_t d = 0; d < PB_ARRAY_LEN(dtypes); d++)
                        for (size_t l = 0; l < PB_ARRAY_LEN(layouts); l++)
                            check_normalize(sizes[s].h, sizes[s].w, frame_counts[f],
                                            sample_counts[k], channels[c][0], channels[c][1],
                                            dtypes[d], layouts[l]);
}

/* ---- flip ------------------------------------------------------------ */

static void check_flip(int h, int w, int channels, int frames, int n, int pattern)
{
    size_t frame_bytes = (size_t)h * (size_t)w * (size_t)channels;
    size_t sample_bytes = (size_t)frames * frame_bytes;
    size_t src_stride = sample_bytes + 13, dst_stride = sample_bytes + 9;
    size_t src_bytes = (size_t)n * src_stride, dst_bytes = (size_t)n * dst_stride;
    uint8_t *src = random_bytes(src_bytes, (uint64_t)(h * 77 + w * 3 + channels));
    uint8_t *want = sentinel_bytes(dst_bytes);
    uint8_t flags[8];
    assert_true(n <= (int)sizeof(flags));
    for (int i = 0; i < n; i++) {
        /* pattern 0: 1 0 1 1 0 ...; pattern 1 the opposite. Any non-zero
         * byte means mirror. */
        int mirror = (i % 3 != 1) != (pattern == 1);
        flags[i] = mirror ? (uint8_t)(1 + 50 * i) : 0;
        for (int t = 0; t < frames; t++) {
            const uint8_t *s = src + (size_t)i * src_stride + (size_t)t * frame_bytes;
            uint8_t *d = want + (size_t)i * dst_stride + (size_t)t * frame_bytes;
            if (mirror)
                pb_flip_h_u8(s, h, w, channels, d);
            else
                memcpy(d, s, frame_bytes);
        }
    }

    uint8_t *src_dev = device_copy(src, src_bytes);
    uint8_t *dst_dev = device_sentinel(dst_bytes);
    uint8_t *flags_dev = device_copy(flags, (size_t)n);
    CUDA_OK(pb_gpu_flip_h_u8(src_dev, src_stride, dst_dev, dst_stride, n, frames, h, w, channels,
                             flags_dev, stream));
    char what[128];
    snprintf(what, sizeof(what), "flip %dx%d c%d t%d n%d pattern %d", h, w, channels, frames, n,
             pattern);
    expect_batch(dst_dev, want, dst_bytes, dst_stride, what);
    CUDA_OK(cudaFree(src_dev));
    CUDA_OK(cudaFree(dst_dev));
    CUDA_OK(cudaFree(flags_dev));
    free(src);
    free(want);
}

static void test_flip(void **state)
{
    (void)state;
    static const int channel_counts[] = {1, 3, 4};
    for (size_t s = 0; s < PB_ARRAY_LEN(sizes); s++)
        for (size_t c = 0; c < PB_ARRAY_LEN(channel_counts); c++)
            for (size_t f = 0; f < PB_ARRAY_LEN(frame_counts); f++)
                for (size_t k = 0; k < PB_ARRAY_LEN(sample_counts); k++)
                    for (int pattern = 0; pattern < 2; pattern++)
                        check_flip(sizes[s].h, sizes[s].w, channel_counts[c], frame_counts[f],
                                   sample_counts[k], pattern);
}

/* ---- crop ------------------------------------------------------------ */

#define CROP_BOXES 6

/* Windows inside, partly outside on each side, and wholly outside. */
static void crop_boxes(int h, int w, int out_h, int out_w, int32_t boxes[CROP_BOXES][2])
{
    const int32_t all[CROP_BOXES][2] = {
        {0, 0},      {-1, -2},        {h - 1, w - 1}, {h / 3 - out_h / 2, w / 4 - out_w / 2},
        {-out_h, w}, {h + 5, -w - 5},
    };
    memcpy(boxes, all, sizeof(all));
}

static void check_crop(int h, int w, int out_h, int out_w, int channels, int frames, int n,
                       int variant)
{
    size_t src_frame = (size_t)h * (size_t)w * (size_t)channels;
    size_t dst_frame = (size_t)out_h * (size_t)out_w * (size_t)channels;
    size_t src_stride = (size_t)frames * src_frame + 13;
    size_t dst_stride = (size_t)frames * dst_frame + 9;
    size_t src_bytes = (size_t)n * src_stride, dst_bytes = (size_t)n * dst_stride;
    uint8_t *src = random_bytes(src_bytes, (uint64_t)(h * 31 + w * 5 + channels));
    uint8_t *want = sentinel_bytes(dst_bytes);
    int32_t boxes[CROP_BOXES][2], box[2 * 8];
    assert_true(n <= 8);
    crop_boxes(h, w, out_h, out_w, boxes);
    for (int i = 0; i < n; i++) {
        box[2 * i] = boxes[(i + variant) % CROP_BOXES][0];
        box[2 * i + 1] = boxes[(i + variant) % CROP_BOXES][1];
        for (int t = 0; t < frames; t++)
            pb_crop_u8(src + (size_t)i * src_stride + (size_t)t * src_frame, h, w, channels,
                       box[2 * i], box[2 * i + 1],
                       want + (size_t)i * dst_stride + (size_t)t * dst_frame, out_h, out_w);
    }

    uint8_t *src_dev = device_copy(src, src_bytes);
    uint8_t *dst_dev = device_sentinel(dst_bytes);
    int32_t *box_dev = device_copy(box, (size_t)n * 2 * sizeof(int32_t));
    CUDA_OK(pb_gpu_crop_u8(src_dev, src_stride, n, frames, h, w, channels, box_dev, dst_dev,
                           dst_stride, out_h, out_w, stream));
    char what[128];
    snprintf(what, sizeof(what), "crop %dx%d -> %dx%d c%d t%d n%d variant %d", h, w, out_h, out_w,
             channels, frames, n, variant);
    expect_batch(dst_dev, want, dst_bytes, dst_stride, what);
    CUDA_OK(cudaFree(src_dev));
    CUDA_OK(cudaFree(dst_dev));
    CUDA_OK(cudaFree(box_dev));
    free(src);
    free(want);
}

static void test_crop(void **state)
{
    (void)state;
    static const int channel_counts[] = {1, 3};
    for (size_t s = 0; s < PB_ARRAY_LEN(sizes); s++) {
        int h = sizes[s].h, w = sizes[s].w;
        /* Smaller than, about half of, and larger than the image. */
        const struct size2 outs[] = {{1, 1}, {h / 2 + 1, w / 2 + 1}, {h + 2, w + 3}};
        for (size_t o = 0; o < PB_ARRAY_LEN(outs); o++)
            for (size_t c = 0; c < PB_ARRAY_LEN(channel_counts); c++)
                for (size_t f = 0; f < PB_ARRAY_LEN(frame_counts); f++)
                    for (size_t k = 0; k < PB_ARRAY_LEN(sample_counts); k++)
                        for (int variant = 0; variant < CROP_BOXES; variant++)
                            check_crop(h, w, outs[o].h, outs[o].w, channel_counts[c],
                                       frame_counts[f], sample_counts[k], variant);
    }
}

/* ---- resample -------------------------------------------------------- */

/* Up, down, both at once, extreme ratios, and the identity. */
static const struct {
    struct size2 in, out;
} resize_cases[] = {
    {{1, 1}, {3, 7}},         {{3, 7}, {1, 1}},       {{3, 7}, {17, 33}},      {{17, 33}, {3, 7}},
    {{17, 33}, {8, 16}},      {{17, 33}, {224, 224}}, {{224, 224}, {97, 131}}, {{224, 224}, {7, 5}},
    {{224, 224}, {224, 224}}, {{33, 17}, {17, 33}},   {{5, 2}, {41, 3}},
};

static const char *const interp_names[] = {"bilinear", "area", "nearest"};

/* g is shared by all cases, so uploads both grow and reuse its arrays. */
static void check_resample(struct pb_gpu_resampler *g, enum pb_interp interp, struct size2 in,
                           struct size2 out, int channels, int frames, int n)
{
    struct pb_resampler r;
    assert_int_equal(pb_resampler_init(&r, interp, 1, 1, 1, 1, 1), PB_OK);
    assert_int_equal(pb_resampler_prepare(&r, in.h, in.w, out.h, out.w, channels), PB_OK);
    CUDA_OK(pb_gpu_resampler_upload(g, &r));

    size_t in_frame = (size_t)in.h * (size_t)in.w * (size_t)channels;
    size_t out_frame = (size_t)out.h * (size_t)out.w * (size_t)channels;
    size_t src_stride = (size_t)frames * in_frame + 13;
    size_t dst_stride = (size_t)frames * out_frame + 9;
    size_t src_bytes = (size_t)n * src_stride, dst_bytes = (size_t)n * dst_stride;
    uint8_t *src = random_bytes(src_bytes, (uint64_t)(in.h * 1009 + in.w * 17 + channels));
    uint8_t *want = sentinel_bytes(dst_bytes);
    for (int i = 0; i < n; i++)
        for (int t = 0; t < frames; t++)
            pb_resample_u8(&r, src + (size_t)i * src_stride + (size_t)t * in_frame,
                           (size_t)in.w * (size_t)channels,
                           want + (size_t)i * dst_stride + (size_t)t * out_frame);

    uint8_t *src_dev = device_copy(src, src_bytes);
    uint8_t *dst_dev = device_sentinel(dst_bytes);
    CUDA_OK(pb_gpu_resample_u8(g, src_dev, src_stride, n, frames, dst_dev, dst_stride, stream));
    char what[128];
    snprintf(what, sizeof(what), "resample %s %dx%d -> %dx%d c%d t%d n%d", interp_names[interp],
             in.h, in.w, out.h, out.w, channels, frames, n);
    expect_batch(dst_dev, want, dst_bytes, dst_stride, what);
    CUDA_OK(cudaFree(src_dev));
    CUDA_OK(cudaFree(dst_dev));
    pb_resampler_free(&r);
    free(src);
    free(want);
}

static void test_resample(void **state)
{
    (void)state;
    static const enum pb_interp interps[] = {PB_INTERP_BILINEAR, PB_INTERP_AREA, PB_INTERP_NEAREST};
    static const int channel_counts[] = {1, 3, 4};
    struct pb_gpu_resampler g;
    memset(&g, 0, sizeof(g));
    for (size_t m = 0; m < PB_ARRAY_LEN(interps); m++)
        for (size_t i = 0; i < PB_ARRAY_LEN(resize_cases); i++)
            for (size_t c = 0; c < PB_ARRAY_LEN(channel_counts); c++)
                for (size_t f = 0; f < PB_ARRAY_LEN(frame_counts); f++)
                    for (size_t k = 0; k < PB_ARRAY_LEN(sample_counts); k++)
                        check_resample(&g, interps[m], resize_cases[i].in, resize_cases[i].out,
                                       channel_counts[c], frame_counts[f], sample_counts[k]);
    pb_gpu_resampler_free(&g);
    assert_null(g.start_x);
    assert_int_equal(g.cap_x, 0);
}

/* ---- busy, empty batches --------------------------------------------- */

/* The spin lasts at least the time asked and not wildly longer (a check
 * of the spin, not of performance). */
static void test_busy(void **state)
{
    (void)state;
    int device = 0, sms = 0;
    CUDA_OK(cudaGetDevice(&device));
    CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    /* Warm-up: the first launch may load the module. blocks 0 means 1. */
    CUDA_OK(pb_gpu_busy(1000, 0, stream));
    CUDA_OK(cudaStreamSynchronize(stream));

    cudaEvent_t start, stop;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&stop));
    CUDA_OK(cudaEventRecord(start, stream));
    CUDA_OK(pb_gpu_busy(5000000, sms, stream));
    CUDA_OK(cudaEventRecord(stop, stream));
    CUDA_OK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_OK(cudaEventDestroy(start));
    CUDA_OK(cudaEventDestroy(stop));
    if (!(ms >= 5.0f && ms < 50.0f))
        fail_msg("busy 5 ms on %d blocks took %.3f ms", sms, (double)ms);
}

/* Nothing to do is success without a launch, whatever the pointers. */
static void test_empty(void **state)
{
    (void)state;
    struct pb_gpu_resampler g;
    memset(&g, 0, sizeof(g));
    assert_int_equal(pb_gpu_normalize_u8(NULL, 0, NULL, 0, 0, 1, 4, 4, 3, 3, NULL, PB_DTYPE_F32,
                                         PB_LAYOUT_THWC, stream),
                     0);
    assert_int_equal(pb_gpu_normalize_u8(NULL, 0, NULL, 0, 2, 1, 0, 4, 3, 3, NULL, PB_DTYPE_F32,
                                         PB_LAYOUT_THWC, stream),
                     0);
    assert_int_equal(pb_gpu_flip_h_u8(NULL, 0, NULL, 0, 0, 1, 4, 4, 3, NULL, stream), 0);
    assert_int_equal(pb_gpu_crop_u8(NULL, 0, 3, 1, 4, 4, 3, NULL, NULL, 0, 0, 4, stream), 0);
    assert_int_equal(pb_gpu_resample_u8(&g, NULL, 0, 0, 1, NULL, 0, stream), 0);
    assert_int_equal(pb_gpu_busy(0, 4, stream), 0);
    CUDA_OK(cudaStreamSynchronize(stream));
}

/* Arguments no kernel can run with are refused before any launch. */
static void test_bad_arguments(void **state)
{
    (void)state;
    struct pb_gpu_resampler g;
    memset(&g, 0, sizeof(g));
    uint8_t *buffer = NULL;
    CUDA_OK(cudaMalloc((void **)&buffer, 64));
    /* A resampler never uploaded. */
    assert_int_not_equal(pb_gpu_resample_u8(&g, buffer, 16, 1, 1, buffer, 16, stream), 0);
    /* More channels than the table holds; 2 channels cannot fill 3. */
    assert_int_not_equal(pb_gpu_normalize_u8(buffer, 16, buffer, 16, 1, 1, 2, 2, 1, 5, lut_dev,
                                             PB_DTYPE_F32, PB_LAYOUT_THWC, stream),
                         0);
    assert_int_not_equal(pb_gpu_normalize_u8(buffer, 16, buffer, 16, 1, 1, 2, 2, 2, 3, lut_dev,
                                             PB_DTYPE_F32, PB_LAYOUT_THWC, stream),
                         0);
    /* float32 samples must start 4-byte aligned. */
    assert_int_not_equal(pb_gpu_normalize_u8(buffer, 16, buffer, 18, 2, 1, 1, 1, 1, 1, lut_dev,
                                             PB_DTYPE_F32, PB_LAYOUT_THWC, stream),
                         0);
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaFree(buffer));
}

#endif /* PB_HAVE_CUDA */

int main(void)
{
#if !PB_HAVE_CUDA
    printf("SKIP: built without CUDA\n");
    return PB_EXIT_SKIP;
#else
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        printf("SKIP: no CUDA device: %s\n",
               err != cudaSuccess ? cudaGetErrorString(err) : "the driver found none");
        return PB_EXIT_SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize),     cmocka_unit_test(test_flip),
        cmocka_unit_test(test_crop),          cmocka_unit_test(test_resample),
        cmocka_unit_test(test_busy),          cmocka_unit_test(test_empty),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
#endif
}
