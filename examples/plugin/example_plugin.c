/* An example pbench plugin: a worker stage, `example_gain`, that scales
 * the brightness of uint8 pixels (out = clamp(in * gain + bias)), with a
 * per-pixel cost you can see in its stage row. It is the whole of a
 * plugin: an option table, init/process/cleanup, and PB_PLUGIN_DEFINE.
 *
 * Built by CMake as build/plugins/libpbench_example_plugin.so (a MODULE
 * library, not part of pbench itself); configs/plugin.yaml runs it, and
 * docs/plugins.md walks through it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipelines/plugin.h"

struct gain_opts {
    double gain;
    int64_t bias;
};

static const struct pb_opt gain_opts_table[] = {
    {.name = "gain", .type = PB_OPT_DOUBLE, .offset = offsetof(struct gain_opts, gain), .max = 16,
     .def = "1.25", .help = "Factor each pixel value is multiplied by."},
    {.name = "bias", .type = PB_OPT_INT, .offset = offsetof(struct gain_opts, bias), .min = -255,
     .max = 255, .def = "0", .help = "Added after the gain; results are clamped to 0..255."},
    {0},
};

/* Per worker: the options as a lookup table, so process is one load per
 * byte. Nothing is allocated after init. */
struct gain_state {
    uint8_t lut[256];
};

static int gain_init(void **state, const void *opts, const struct pb_stage_plan *in,
                     struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                     const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    (void)msg;
    (void)msglen;
    const struct gain_opts *o = opts;
    struct gain_state *st = malloc(sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    for (int v = 0; v < 256; v++) {
        double x = v * o->gain + (double)o->bias;
        st->lut[v] = (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x + 0.5);
    }
    *out = *in; /* same shape and size out as in */
    *state = st;
    return PB_OK;
}

static int gain_process(void *state, struct pb_sample *s)
{
    const struct gain_state *st = state;
    if (s->in_shape.dtype != PB_DTYPE_U8) {
        snprintf(s->msg, s->msglen, "%s: example_gain takes uint8 pixels (put it after decode)",
                 s->path ? s->path : "(sample)");
        return PB_ERR_DATA;
    }
    if (s->in_bytes > s->out_capacity) {
        s->out_bytes = s->in_bytes; /* the pipeline grows the buffer and calls again */
        return PB_ERR_NOSPACE;
    }
    for (size_t i = 0; i < s->in_bytes; i++)
        s->out[i] = st->lut[s->in[i]];
    s->out_bytes = s->in_bytes;
    s->out_shape = s->in_shape;
    return PB_OK;
}

static void gain_cleanup(void *state)
{
    free(state);
}

static const struct pb_stage_ops example_gain = {
    .name = "example_gain",
    .summary = "Example plugin: scales uint8 pixel values (out = in * gain + bias, clamped).",
    .flags = PB_STAGE_WORKER,
    .opts = gain_opts_table,
    .opts_size = sizeof(struct gain_opts),
    .init = gain_init,
    .process = gain_process,
    .cleanup = gain_cleanup,
};

PB_PLUGIN_DEFINE(example_gain);
