/* JPEG dataset generation: spec->count images of synthetic scenes
 * (kernels/scene.h: gradients, shapes, texture, noise), so encoders and
 * decoders work as hard as on photos.
 *
 * Sizes are spread uniformly over the spec->size range, width and height
 * independently (400x300-600x450 averages 500x375, with both landscape and
 * near-square shapes). Colour files are 4:2:0, as cameras and ImageNet
 * write them; a seeded share is progressive, another grayscale; the files
 * pb_generate_is_corrupt picks are written cut off at half their length.
 * Every choice derives from (seed, index), so the same spec makes the same
 * files on every machine whatever the thread count. Files are written by
 * one thread per core, names img_0000123.jpg. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <turbojpeg.h>

#include "bench/base/pb.h"
#include "kernels/scene.h"
#include "pipelines/generate.h"

#define MAX_THREADS 16

struct gen_job {
    const struct pb_generate_spec *spec;
    volatile sig_atomic_t *stop;
    const char *dir;
    int min_w, min_h, max_w, max_h;
    int thread, threads;
    int rc;
    char msg[PB_MSG_MAX];
};

/* A uniform double in [0, 1) from (seed, index, salt). */
static double unit(const struct pb_generate_spec *spec, int64_t index, uint64_t salt)
{
    uint64_t h = pb_mix64(pb_mix64((uint64_t)spec->seed ^ salt) + (uint64_t)index);
    return (double)(h >> 11) / 9007199254740992.0;
}

static int spread(int lo, int hi, double u)
{
    int v = lo + (int)(u * (double)(hi - lo + 1));
    return v > hi ? hi : v;
}

static int write_file(const char *path, const uint8_t *data, size_t bytes, char *msg,
                      size_t msglen)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, bytes, f) != bytes) {
        snprintf(msg, msglen, "cannot write '%.400s': %s", path, strerror(errno));
        if (f)
            fclose(f);
        return PB_ERR;
    }
    if (fclose(f) != 0) {
        snprintf(msg, msglen, "cannot write '%.400s': %s", path, strerror(errno));
        return PB_ERR;
    }
    return PB_OK;
}

static void *gen_thread(void *arg)
{
    struct gen_job *job = arg;
    const struct pb_generate_spec *spec = job->spec;
    size_t pixels = (size_t)job->max_w * (size_t)job->max_h;
    unsigned long jpeg_capacity = tjBufSize(job->max_w, job->max_h, TJSAMP_444);
    uint8_t *image = malloc(pixels * 3);
    uint8_t *jpeg = tjAlloc((int)jpeg_capacity);
    /* One encoder for baseline files and one for progressive: libjpeg-turbo
     * 2.1 writes broken baseline files from a handle that last wrote a
     * progressive one. */
    tjhandle tjs[2] = {tjInitCompress(), tjInitCompress()};
    job->rc = PB_OK;
    if (!image || !jpeg || !tjs[0] || !tjs[1]) {
        snprintf(job->msg, sizeof(job->msg), "cannot set up the JPEG encoder: %s",
                 tjs[0] && tjs[1] ? "out of memory" : tjGetErrorStr2(NULL));
        job->rc = PB_ERR_NOMEM;
    }
    for (int64_t i = job->thread; job->rc == PB_OK && i < spec->count; i += job->threads) {
        if (pb_generate_stopped(job->stop)) {
            job->rc = PB_ERR_INTERRUPTED;
            break;
        }
        int width = spread(job->min_w, job->max_w, unit(spec, i, 0x5157));
        int height = spread(job->min_h, job->max_h, unit(spec, i, 0x4e16));
        bool progressive = unit(spec, i, 0x9a0c) < spec->progressive_fraction;
        bool gray = unit(spec, i, 0x67a1) < spec->grayscale_fraction;
        int channels = gray ? 1 : 3;
        pb_scene_render(image, height, width, channels,
                        pb_mix64((uint64_t)spec->seed * 0x100000001b3ull + (uint64_t)i), 0.0);
        unsigned long size = jpeg_capacity;
        unsigned char *out = jpeg;
        int flags = TJFLAG_NOREALLOC | (progressive ? TJFLAG_PROGRESSIVE : 0);
        tjhandle tj = tjs[progressive];
        if (tjCompress2(tj, image, width, 0, height, gray ? TJPF_GRAY : TJPF_RGB, &out, &size,
                        gray ? TJSAMP_GRAY : TJSAMP_420, (int)spec->quality, flags) != 0) {
            snprintf(job->msg, sizeof(job->msg), "JPEG encoder: %s", tjGetErrorStr2(tj));
            job->rc = PB_ERR;
            break;
        }
        if (pb_generate_is_corrupt(spec, i))
            size /= 2;
        char path[PB_PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/img_%07lld.jpg", job->dir, (long long)i);
        job->rc = write_file(path, jpeg, size, job->msg, sizeof(job->msg));
    }
    for (int k = 0; k < 2; k++)
        if (tjs[k])
            tjDestroy(tjs[k]);
    tjFree(jpeg);
    free(image);
    return NULL;
}

int pb_generate_jpeg(const struct pb_generate_spec *spec, const char *dir,
                     volatile sig_atomic_t *stop, char *msg, size_t msglen)
{
    struct gen_job jobs[MAX_THREADS];
    int min_w, min_h, max_w, max_h;
    int rc = pb_parse_size_range(spec->size, &min_w, &min_h, &max_w, &max_h, msg, msglen);
    if (rc != PB_OK)
        return rc;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cores < 1 ? 1 : cores > MAX_THREADS ? MAX_THREADS : (int)cores;
    if (threads > spec->count)
        threads = (int)spec->count;
    pthread_t tid[MAX_THREADS];
    for (int t = 0; t < threads; t++)
        jobs[t] = (struct gen_job){.spec = spec, .stop = stop, .dir = dir, .min_w = min_w,
                                   .min_h = min_h, .max_w = max_w, .max_h = max_h, .thread = t,
                                   .threads = threads};
    int started = 1;
    while (started < threads &&
           pthread_create(&tid[started], NULL, gen_thread, &jobs[started]) == 0)
        started++;
    /* Shares of threads the system refused run here, after our own. */
    for (int t = 0; t < threads; t++)
        if (t == 0 || t >= started)
            gen_thread(&jobs[t]);
    for (int t = 1; t < started; t++)
        pthread_join(tid[t], NULL);
    for (int t = 0; t < threads; t++) {
        if (jobs[t].rc != PB_OK) {
            snprintf(msg, msglen, "%s", jobs[t].msg);
            return jobs[t].rc;
        }
    }
    return PB_OK;
}
