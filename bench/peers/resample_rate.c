/* The cost of random_resized_crop's resampling alone: pb_resampler_prepare
 * and pb_resample_u8 (bilinear, no antialias) on windows of a 500x375 RGB
 * image drawn as torchvision's RandomResizedCrop draws them (area 0.08..1,
 * aspect ratio 3/4..4/3), resampled to 224x224, on one thread.
 *
 *   cmake --build build --target resample_rate
 *   ./build/resample_rate [SECONDS] [INTERP] [LOOPS]
 *
 * INTERP is bilinear (default), area or nearest. LOOPS is fastest
 * (default: what the CPU has), avx2 (no AVX-512) or portable (plain C, the
 * loops of every CPU), all giving the same output. The image is fixed
 * pseudo-random pixels (the integer kernels cost the same whatever the
 * pixels). 512 windows are drawn once with a fixed seed, so two builds time
 * the same work; they are resampled in turn for SECONDS (default 3) after
 * one warm-up pass. Prints one JSON line: microseconds of the thread's CPU
 * time per call, for prepare + resample and for the resample alone (the
 * same windows timed again with prepare out of the timed part). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/image.h"

#define IMAGE_H 375
#define IMAGE_W 500
#define CHANNELS 3
#define OUT_SIZE 224
#define WINDOWS 512

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One window: prepare and resample, or resample alone when the tables are
 * already the window's (timed_prepare false: prepared outside the clock). */
static double run(struct pb_resampler *r, const uint8_t *image, const struct pb_crop_box *boxes,
                  uint8_t *out, double limit_s, bool timed_prepare, long *calls)
{
    size_t row_bytes = (size_t)IMAGE_W * CHANNELS;
    double spent = 0, start = cpu_seconds();
    *calls = 0;
    for (int pass = 0; cpu_seconds() - start < limit_s || pass < 2; pass++) {
        for (int i = 0; i < WINDOWS; i++) {
            const struct pb_crop_box *b = &boxes[i];
            const uint8_t *corner = image + (size_t)b->top * row_bytes + (size_t)b->left * CHANNELS;
            double t0 = cpu_seconds();
            if (!timed_prepare) {
                pb_resampler_prepare(r, b->height, b->width, OUT_SIZE, OUT_SIZE, CHANNELS);
                t0 = cpu_seconds();
            }
            pb_resampler_prepare(r, b->height, b->width, OUT_SIZE, OUT_SIZE, CHANNELS);
            pb_resample_u8(r, corner, row_bytes, out);
            if (pass > 0) { /* the first pass warms caches */
                spent += cpu_seconds() - t0;
                (*calls)++;
            }
        }
    }
    return spent;
}

int main(int argc, char **argv)
{
    double limit_s = argc > 1 ? atof(argv[1]) : 3.0;
    const char *name = argc > 2 ? argv[2] : "bilinear";
    const char *loops_name = argc > 3 ? argv[3] : "fastest";
    enum pb_resample_loops loops = PB_RESAMPLE_FASTEST;
    if (strcmp(loops_name, "avx2") == 0)
        loops = PB_RESAMPLE_NO_AVX512;
    else if (strcmp(loops_name, "portable") == 0)
        loops = PB_RESAMPLE_PORTABLE;
    else if (strcmp(loops_name, "fastest") != 0)
        name = ""; /* the usage line below */
    enum pb_interp interp;
    if (strcmp(name, "bilinear") == 0)
        interp = PB_INTERP_BILINEAR;
    else if (strcmp(name, "area") == 0)
        interp = PB_INTERP_AREA;
    else if (strcmp(name, "nearest") == 0)
        interp = PB_INTERP_NEAREST;
    else {
        fprintf(stderr, "usage: %s [SECONDS] [bilinear|area|nearest] [fastest|avx2|portable]\n",
                argv[0]);
        return 2;
    }
    size_t image_bytes = (size_t)IMAGE_H * IMAGE_W * CHANNELS;
    uint8_t *image = malloc(image_bytes), *out = malloc((size_t)OUT_SIZE * OUT_SIZE * CHANNELS);
    struct pb_crop_box *boxes = malloc(WINDOWS * sizeof(*boxes));
    struct pb_resampler r;
    if (!image || !out || !boxes ||
        pb_resampler_init(&r, interp, IMAGE_H, IMAGE_W, OUT_SIZE, OUT_SIZE, CHANNELS) != PB_OK) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    r.loops = loops;
    struct pb_rng pixels = pb_rng_for(1, 2);
    for (size_t i = 0; i < image_bytes; i++)
        image[i] = (uint8_t)pb_rng_next(&pixels);
    struct pb_rng draws = pb_rng_for(7, 11);
    double area = 0;
    for (int i = 0; i < WINDOWS; i++) {
        pb_random_resized_crop_box(&draws, IMAGE_H, IMAGE_W, 0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0,
                                   &boxes[i]);
        area += (double)boxes[i].height * boxes[i].width / WINDOWS;
    }
    long calls = 0, resample_calls = 0;
    double with_prepare_s = run(&r, image, boxes, out, limit_s / 2, true, &calls);
    double resample_s = run(&r, image, boxes, out, limit_s / 2, false, &resample_calls);
    unsigned checksum = 0;
    for (size_t i = 0; i < (size_t)OUT_SIZE * OUT_SIZE * CHANNELS; i++)
        checksum = checksum * 31u + out[i];
    printf(
        "{\"interp\": \"%s\", \"loops\": \"%s\", \"us_per_call\": %.2f, \"us_per_resample\": %.2f, "
        "\"calls\": %ld, \"mean_window_pixels\": %.0f, \"checksum\": %u}\n",
        name, loops_name, with_prepare_s * 1e6 / (double)calls,
        resample_s * 1e6 / (double)resample_calls, calls, area, checksum);
    pb_resampler_free(&r);
    free(boxes);
    free(out);
    free(image);
    return 0;
}
