/* The `flip` stage: mirrors an image, or every frame of a clip alike, left
 * to right with probability p, decided from the sample's seed (torchvision
 * RandomHorizontalFlip). Output has the input's shape; an input larger than
 * planned gets PB_ERR_NOSPACE with the size it needs. */
#include "bench/pb.h"
#include "kernels/image.h"
#include "pipelines/stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SALT_FLIP 0x666c69705f686f72ull /* "flip_hor" */

struct flip_opts {
    double p;
};

static const struct pb_opt flip_opts[] = {
    {.name = "p", .type = PB_OPT_DOUBLE, .offset = offsetof(struct flip_opts, p), .min = 0,
     .max = 1, .def = "0.5",
     .help = "Probability that a sample (all frames of a clip alike) is mirrored left to right."},
    {0},
};

struct flip_state {
    double p;
};

static int flip_init(void **state, const void *opts, const struct pb_stage_plan *in,
                     struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                     const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    if (in->shape.dtype != PB_DTYPE_U8 || in->shape.layout != PB_LAYOUT_THWC) {
        snprintf(msg, msglen,
                 "stage 'flip' needs decoded uint8 pixels; place it after decode and before "
                 "normalize");
        return PB_ERR_CONFIG;
    }
    struct flip_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->p = ((const struct flip_opts *)opts)->p;
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
    if (in->dtype != PB_DTYPE_U8 || in->layout != PB_LAYOUT_THWC) {
        snprintf(s->msg, s->msglen, "flip: input is %s, not uint8 pixels",
                 pb_dtype_name(in->dtype));
        return PB_ERR;
    }
    size_t bytes = pb_shape_bytes(in);
    if (bytes > s->in_bytes) {
        snprintf(s->msg, s->msglen, "flip: input of %zu bytes is smaller than its shape says (%zu)",
                 s->in_bytes, bytes);
        return PB_ERR;
    }
    if (bytes > s->out_capacity) {
        s->out_bytes = bytes;
        return PB_ERR_NOSPACE;
    }
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

static void flip_cleanup(void *state)
{
    free(state);
}

const struct pb_stage_ops pb_stage_flip = {
    .name = "flip",
    .summary = "Mirror images or clips left to right with probability p.",
    .flags = PB_STAGE_WORKER,
    .opts = flip_opts,
    .opts_size = sizeof(struct flip_opts),
    .init = flip_init,
    .process = flip_process,
    .cleanup = flip_cleanup,
};
