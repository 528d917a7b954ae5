/* The `color_jitter` stage: random brightness, contrast and saturation, as
 * torchvision's ColorJitter (no hue). Factors are drawn from the sample's
 * seed, once per sample, so every frame of a clip gets the same ones; the
 * contrast's mean gray is each frame's own (as torchvision on a TCHW
 * tensor). The three are applied in this fixed order (torchvision shuffles
 * the order per call), in float, rounding once. A 1-channel image gets
 * brightness and contrast; saturation leaves gray unchanged. Images with
 * other channel counts pass through unchanged. */
#include "bench/base/pb.h"
#include "kernels/image.h"
#include "pipelines/pixel_stage.h"
#include "pipelines/stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SALT_JITTER 0x6a69747465725f63ull /* "jitter_c" */

struct jitter_opts {
    struct pb_double_list brightness, contrast, saturation;
};

#define FACTOR_OPT(key, what)                                                                   \
    {.name = #key, .type = PB_OPT_DOUBLE_LIST, .offset = offsetof(struct jitter_opts, key),     \
     .min = 0, .max = 1000, .def = "[0.4]",                                                     \
     .help = "How much to jitter " what ": J draws the factor from [max(0, 1 - J), 1 + J], "     \
             "[lo, hi] from that range; 0 leaves it alone."}

static const struct pb_opt jitter_opts[] = {
    FACTOR_OPT(brightness, "brightness"),
    FACTOR_OPT(contrast, "contrast"),
    FACTOR_OPT(saturation, "saturation"),
    {0},
};

struct jitter_state {
    double lo[3], hi[3]; /* factor ranges: brightness, contrast, saturation */
};

static int factor_range(const char *key, const struct pb_double_list *l, double *lo, double *hi,
                        char *msg, size_t msglen)
{
    if (l->count == 1) {
        *lo = l->v[0] < 1 ? 1 - l->v[0] : 0;
        *hi = 1 + l->v[0];
        return PB_OK;
    }
    if (l->count == 2 && l->v[0] <= l->v[1]) {
        *lo = l->v[0];
        *hi = l->v[1];
        return PB_OK;
    }
    snprintf(msg, msglen,
             "pipeline.color_jitter.%s takes J (a factor in [1 - J, 1 + J]) or [lo, hi] with "
             "lo <= hi",
             key);
    return PB_ERR_CONFIG;
}

/* The three factor ranges of the options, or PB_ERR_CONFIG for one that is
 * neither J nor [lo, hi] with lo <= hi. */
static int factor_ranges(const struct jitter_opts *o, struct jitter_state *ranges, char *msg,
                         size_t msglen)
{
    const struct pb_double_list *lists[3] = {&o->brightness, &o->contrast, &o->saturation};
    static const char *const keys[3] = {"brightness", "contrast", "saturation"};
    for (int i = 0; i < 3; i++) {
        int rc = factor_range(keys[i], lists[i], &ranges->lo[i], &ranges->hi[i], msg, msglen);
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

static int jitter_validate(const void *opts, char *msg, size_t msglen)
{
    struct jitter_state ranges;
    return factor_ranges(opts, &ranges, msg, msglen);
}

static int jitter_init(void **state, const void *opts, const struct pb_stage_plan *in,
                       struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                       const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    struct jitter_state tmp;
    int rc = factor_ranges(opts, &tmp, msg, msglen);
    if (rc != PB_OK)
        return rc;
    rc = pb_pixel_plan_check(in, "color_jitter", "after decode and before normalize", msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct jitter_state *st = malloc(sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    *st = tmp;
    *out = *in;
    *state = st;
    return PB_OK;
}

static int jitter_process(void *state, struct pb_sample *s)
{
    size_t bytes;
    int rc = pb_pixel_same_size_check(s, "color_jitter", &bytes);
    if (rc != PB_OK)
        return rc;
    const struct jitter_state *st = state;
    const struct pb_shape *in = &s->in_shape;
    struct pb_rng rng = pb_rng_for(s->seed, SALT_JITTER);
    struct pb_jitter j = {
        .brightness = (float)pb_rng_uniform(&rng, st->lo[0], st->hi[0]),
        .contrast = (float)pb_rng_uniform(&rng, st->lo[1], st->hi[1]),
        .saturation = (float)pb_rng_uniform(&rng, st->lo[2], st->hi[2]),
    };
    int frames = in->frames > 0 ? in->frames : 1;
    size_t pixels = (size_t)in->height * (size_t)in->width;
    size_t frame = pixels * (size_t)in->channels;
    for (int t = 0; t < frames; t++)
        pb_color_jitter_u8(s->in + (size_t)t * frame, pixels, in->channels, &j,
                           s->out + (size_t)t * frame);
    s->out_bytes = bytes;
    s->out_shape = *in;
    return PB_OK;
}

const struct pb_stage_ops pb_stage_color_jitter = {
    .name = "color_jitter",
    .summary = "Random brightness, contrast and saturation (torchvision ColorJitter, no hue).",
    .flags = PB_STAGE_WORKER,
    .opts = jitter_opts,
    .opts_size = sizeof(struct jitter_opts),
    .validate = jitter_validate,
    .init = jitter_init,
    .process = jitter_process,
    .cleanup = free,
};
