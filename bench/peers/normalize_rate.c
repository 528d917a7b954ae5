/* The cost of normalize alone: pb_normalize_u8 (or, mirrored, the flip
 * fused into it) of a 224x224 RGB image to float32 CHW, ImageNet's mean and
 * std, written into the slots of a batch of 32 in turn as the pipeline
 * writes them (64-byte aligned, 19 MiB: larger than the caches), on one
 * thread.
 *
 *   cmake --build build --target normalize_rate
 *   ./build/normalize_rate [SECONDS] [fastest|portable] [plain|mirrored] [chw|hwc]
 *
 * fastest (default) is the vector path where the CPU has AVX2 and FMA
 * (kernels/normalize_simd.c), portable the plain C loops; both give the
 * same output. Runs for SECONDS (default 3) after one warm-up pass over
 * the batch. Prints one JSON line: microseconds of the thread's CPU time
 * per image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/image.h"

#define SIZE 224
#define CHANNELS 3
#define BATCH 32

static double cpu_seconds(void) /* the thread's CPU time */
{
    return (double)pb_thread_cpu_ns() * 1e-9;
}

int main(int argc, char **argv)
{
    double limit_s = argc > 1 ? atof(argv[1]) : 3.0;
    const char *loops = argc > 2 ? argv[2] : "fastest";
    const char *flip = argc > 3 ? argv[3] : "plain";
    const char *layout_name = argc > 4 ? argv[4] : "chw";
    bool portable = strcmp(loops, "portable") == 0, mirrored = strcmp(flip, "mirrored") == 0;
    bool hwc = strcmp(layout_name, "hwc") == 0;
    if (limit_s <= 0 || (!portable && strcmp(loops, "fastest") != 0) ||
        (!mirrored && strcmp(flip, "plain") != 0) || (!hwc && strcmp(layout_name, "chw") != 0)) {
        fprintf(stderr, "usage: %s [SECONDS] [fastest|portable] [plain|mirrored] [chw|hwc]\n",
                argv[0]);
        return 2;
    }
    size_t values = (size_t)SIZE * SIZE * CHANNELS;
    uint8_t *image = malloc(values);
    float *batch = aligned_alloc(64, BATCH * values * sizeof(float));
    struct pb_normalize_lut *lut = malloc(sizeof(*lut));
    if (!image || !batch || !lut) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    const double mean[] = {0.485, 0.456, 0.406}, std[] = {0.229, 0.224, 0.225};
    pb_normalize_lut_init(lut, CHANNELS, mean, std, 255.0);
    lut->portable = portable;
    struct pb_rng pixels = pb_rng_for(1, 2);
    for (size_t i = 0; i < values; i++)
        image[i] = (uint8_t)pb_rng_next(&pixels);
    enum pb_layout layout = hwc ? PB_LAYOUT_THWC : PB_LAYOUT_TCHW;
    long calls = 0;
    double spent = 0, start = cpu_seconds();
    for (int pass = 0; cpu_seconds() - start < limit_s || pass < 2; pass++) {
        double t0 = cpu_seconds();
        for (int slot = 0; slot < BATCH; slot++) {
            float *dst = batch + (size_t)slot * values;
            if (mirrored)
                pb_normalize_mirrored_u8(image, 1, SIZE, SIZE, CHANNELS, CHANNELS, lut,
                                         PB_DTYPE_F32, layout, dst);
            else
                pb_normalize_u8(image, 1, SIZE, SIZE, CHANNELS, CHANNELS, lut, PB_DTYPE_F32, layout,
                                dst);
        }
        if (pass > 0) { /* the first pass faults the batch's pages in */
            spent += cpu_seconds() - t0;
            calls += BATCH;
        }
    }
    double sum = 0;
    for (size_t i = 0; i < values; i += 97)
        sum += batch[i];
    printf("{\"loops\": \"%s\", \"flip\": \"%s\", \"layout\": \"%s\", \"us_per_image\": %.2f, "
           "\"images\": %ld, \"checksum\": %.6f}\n",
           loops, flip, layout_name, spent * 1e6 / (double)calls, calls, sum);
    free(lut);
    free(batch);
    free(image);
    return 0;
}
