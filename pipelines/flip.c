/* The `flip` stage: mirrors an image, or every frame of a clip alike, left
 * to right with probability p, decided from the sample's seed (torchvision
 * RandomHorizontalFlip). Output has the input's shape; an input larger than
 * planned gets PB_ERR_NOSPACE with the size it needs. */
#include "bench/base/pb.h"
#include "kernels/image.h"
#include "pipelines/gpu_stage.h"
#include "pipelines/pixel_stage.h"
#include "pipelines/stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SALT_FLIP 0x666c69705f686f72ull /* "flip_hor" */

struct flip_opts {
    double p;
    int device; /* enum pb_device */
};

static const struct pb_opt flip_opts[] = {
    {.name = "p", .type = PB_OPT_DOUBLE, .offset = offsetof(struct flip_opts, p), .min = 0,
     .max = 1, .def = "0.5",
     .help = "Probability that a sample (all frames of a clip alike) is mirrored left to right."},
    {.name = "device", .type = PB_OPT_ENUM, .offset = offsetof(struct flip_opts, device),
     .def = "cpu", .allowed = pb_device_names, .help = PB_DEVICE_HELP},
    {0},
};

struct flip_state {
    double p;
    bool next_mirrors; /* the next (last) stage mirrors: pass the input on */
};

static int flip_init(void **state, const void *opts, const struct pb_stage_plan *in,
                     struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                     const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    int rc = pb_pixel_plan_check(in, "flip", "after decode and before normalize", msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct flip_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->p = ((const struct flip_opts *)opts)->p;
    st->next_mirrors = in->next_mirrors;
    *out = *in;
    *state = st;
    return PB_OK;
}

/* Whether this sample is flipped: the same answer for the same seed. */
static bool flip_drawn(double p, uint64_t seed)
{
    struct pb_rng rng = pb_rng_for(seed, SALT_FLIP);
    return pb_rng_uniform(&rng, 0, 1) < p;
}

static int flip_process(void *state, struct pb_sample *s)
{
    const struct flip_state *st = state;
    const struct pb_shape *in = &s->in_shape;
    size_t bytes;
    if (st->next_mirrors) {
        /* One pass for the output: the next stage mirrors as it writes the
         * batch slot; the input goes on unchanged, not copied. */
        int rc = pb_pixel_sample_check(s, "flip");
        if (rc != PB_OK)
            return rc;
        bytes = pb_shape_bytes(in);
        if (bytes > s->in_bytes) {
            snprintf(s->msg, s->msglen, "flip: input of %zu bytes is smaller than its shape "
                     "says (%zu)", s->in_bytes, bytes);
            return PB_ERR;
        }
        s->flip_pending = flip_drawn(st->p, s->seed);
        s->out = (uint8_t *)s->in;
        s->out_bytes = bytes;
        s->out_shape = *in;
        return PB_OK;
    }
    int rc = pb_pixel_same_size_check(s, "flip", &bytes);
    if (rc != PB_OK)
        return rc;
    int frames = in->frames > 0 ? in->frames : 1;
    if (flip_drawn(st->p, s->seed)) {
        size_t frame = (size_t)in->height * (size_t)in->width * (size_t)in->channels;
        for (int t = 0; t < frames; t++)
            pb_flip_h_u8(s->in + (size_t)t * frame, in->height, in->width, in->channels,
                         s->out + (size_t)t * frame);
    } else {
        memcpy(s->out, s->in, bytes);
    }
    s->out_bytes = bytes;
    s->out_shape = *in;
    return PB_OK;
}

/* ---- device: gpu ------------------------------------------------------ */

#if PB_HAVE_CUDA

/* The decisions are the CPU stage's (flip_drawn on each sample's seed),
 * made on the host per batch and staged per batch in flight. */
struct flip_gpu_state {
    double p;
    int max_samples, inflight;
    uint8_t *flags_host; /* pinned, inflight x max_samples */
    uint8_t *flags_dev;
    struct pb_gpu_out out;
};

static void flip_gpu_cleanup(void *state)
{
    struct flip_gpu_state *g = state;
    if (!g)
        return;
    pb_gpu_host_free(g->flags_host);
    pb_gpu_free(g->flags_dev, (size_t)g->inflight * (size_t)g->max_samples);
    pb_gpu_out_free(&g->out);
    free(g);
}

static int flip_gpu_init(void **state, const void *opts, const struct pb_stage_plan *in,
                         struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                         const void *decoder_opts, char *msg, size_t msglen)
{
    void *cpu = NULL;
    int rc = flip_init(&cpu, opts, in, out, decoder, decoder_opts, msg, msglen);
    if (rc != PB_OK)
        return rc;
    free(cpu);
    struct flip_gpu_state *g = calloc(1, sizeof(*g));
    if (!g)
        return PB_ERR_NOMEM;
    *state = g;
    g->p = ((const struct flip_opts *)opts)->p;
    g->max_samples = in->max_samples > 0 ? in->max_samples : 1;
    g->inflight = in->inflight > 0 ? in->inflight : 1;
    size_t n = (size_t)g->inflight * (size_t)g->max_samples;
    g->flags_host = pb_gpu_host_alloc(n);
    g->flags_dev = pb_gpu_alloc(n);
    if (!g->flags_host || !g->flags_dev) {
        snprintf(msg, msglen, "flip (device: gpu): cannot allocate its flags");
        return PB_ERR_NOMEM;
    }
    return pb_gpu_out_init(&g->out, out, "flip", msg, msglen);
}

static int flip_gpu_batch(void *state, struct pb_batch *b, char *msg, size_t msglen)
{
    struct flip_gpu_state *g = state;
    int rc = pb_gpu_batch_check(b, "flip", msg, msglen);
    if (rc != PB_OK)
        return rc;
    const struct pb_shape *in = &b->dev_shape;
    size_t sample_bytes = pb_shape_bytes(in);
    if ((int)b->samples > g->max_samples || (size_t)b->samples * sample_bytes > g->out.bytes) {
        snprintf(msg, msglen, "flip (device: gpu): batch larger than planned");
        return PB_ERR;
    }
    size_t base = (size_t)b->inflight * (size_t)g->max_samples;
    for (uint32_t i = 0; i < b->samples; i++)
        g->flags_host[base + i] = flip_drawn(g->p, b->seeds[i]);
    rc = pb_gpu_upload(g->flags_dev + base, g->flags_host + base, b->samples, b->stream, msg,
                       msglen);
    if (rc != PB_OK)
        return rc;
    rc = pb_gpu_check(pb_gpu_flip_h_u8(b->dev_data, b->dev_slot_bytes, g->out.dev, sample_bytes,
                                       (int)b->samples, in->frames > 0 ? in->frames : 1,
                                       in->height, in->width, in->channels, g->flags_dev + base,
                                       b->stream),
                      "flip", msg, msglen);
    pb_gpu_out_publish(&g->out, b, sample_bytes, b->dev_shape);
    return rc;
}

#endif /* PB_HAVE_CUDA */

PB_GPU_STAGE(flip_gpu, "flip", flip_opts, struct flip_opts, NULL, flip_gpu_init, flip_gpu_batch,
             flip_gpu_cleanup);

const struct pb_stage_ops pb_stage_flip = {
    .name = "flip",
    .summary = "Mirror images or clips left to right with probability p.",
    .flags = PB_STAGE_WORKER,
    PB_DEVICE_OPTS(flip_opts, struct flip_opts),
    .gpu = &flip_gpu,
    .init = flip_init,
    .process = flip_process,
    .cleanup = free,
};
