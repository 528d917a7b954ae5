/* The `null` decoder: a test double with a known, configurable cost.
 *
 * It ignores the encoded bytes beyond touching them, spends cost_us of
 * this thread's CPU time (not wall time, so oversubscribed workers slow
 * down as real decoders do), and writes a synthetic image of the configured
 * size. fail_every makes every Nth sample a corrupt one, to exercise the
 * run's on_error policy; leak_bytes keeps that much memory per sample
 * until the decoder is cleaned up, to exercise the memory-growth check
 * (it stays reachable, so leak checkers stay quiet). It lets the harness be tested and calibrated
 * without any real codec. */
#include "bench/base/pb.h"
#include "decoders/decoder.h"
#include "kernels/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct null_opts {
    int64_t width;
    int64_t height;
    int64_t channels;
    double cost_us;
    double cost_jitter;
    int64_t fail_every;
    int64_t leak_bytes;
};

static const struct pb_opt null_opts[] = {
    {.name = "width", .type = PB_OPT_INT, .offset = offsetof(struct null_opts, width), .min = 1,
     .max = 16384, .def = "224", .help = "Width of the synthetic image, pixels."},
    {.name = "height", .type = PB_OPT_INT, .offset = offsetof(struct null_opts, height), .min = 1,
     .max = 16384, .def = "224", .help = "Height of the synthetic image, pixels."},
    {.name = "channels", .type = PB_OPT_INT, .offset = offsetof(struct null_opts, channels),
     .min = 1, .max = 4, .def = "3", .help = "Channels of the synthetic image (uint8 each)."},
    {.name = "cost_us", .type = PB_OPT_DOUBLE, .offset = offsetof(struct null_opts, cost_us),
     .min = 0, .max = 10e6, .def = "0",
     .help = "CPU time spent per sample, microseconds of this thread's CPU time."},
    {.name = "cost_jitter", .type = PB_OPT_DOUBLE,
     .offset = offsetof(struct null_opts, cost_jitter), .min = 0, .max = 1, .def = "0",
     .help = "Spread of the cost: each sample costs cost_us * (1 +/- cost_jitter), uniform."},
    {.name = "fail_every", .type = PB_OPT_INT, .offset = offsetof(struct null_opts, fail_every),
     .min = 0, .max = 1000000000, .def = "0",
     .help = "Report every Nth sample (by dataset index) as corrupt; 0 never."},
    {.name = "leak_bytes", .type = PB_OPT_INT, .offset = offsetof(struct null_opts, leak_bytes),
     .min = 0, .max = 1 << 30, .def = "0",
     .help = "Memory kept per sample and never reused until the point ends, bytes (written, so "
             "it counts in RSS): a leak on purpose, to test pbench's memory-growth warning."},
    {0},
};

struct null_state {
    struct null_opts o;
    void *leaked; /* leak_bytes blocks, each starting with the previous one's address */
};

static int null_init(void **state, const void *opts, const struct pb_stage_plan *in,
                     struct pb_stage_plan *out, char *msg, size_t msglen)
{
    (void)in;
    (void)msg;
    (void)msglen;
    struct null_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->o = *(const struct null_opts *)opts;
    out->shape = (struct pb_shape){.dtype = PB_DTYPE_U8, .frames = 1,
                                   .height = (int32_t)st->o.height, .width = (int32_t)st->o.width,
                                   .channels = (int32_t)st->o.channels};
    out->max_bytes = pb_shape_bytes(&out->shape);
    *state = st;
    return PB_OK;
}

static int null_decode(void *state, struct pb_sample *s)
{
    const struct null_state *st = state;
    const struct null_opts *o = &st->o;
    if (o->fail_every > 0 && (s->index + 1) % (uint64_t)o->fail_every == 0) {
        snprintf(s->msg, s->msglen, "%s: null decoder: sample %llu marked corrupt (fail_every %lld)",
                 s->path ? s->path : "(generated)", (unsigned long long)s->index,
                 (long long)o->fail_every);
        return PB_ERR_DATA;
    }
    /* Touch the encoded bytes as a decoder would read them. */
    uint64_t digest = pb_checksum(s->in, s->in_bytes);

    double cost_ns = o->cost_us * 1000.0;
    if (o->cost_jitter > 0) {
        double u = (double)(pb_mix64(s->seed) >> 11) / 9007199254740992.0; /* [0,1) */
        cost_ns *= 1.0 + o->cost_jitter * (2.0 * u - 1.0);
    }
    if (cost_ns > 0)
        pb_spin_cpu_ns((uint64_t)cost_ns);
    if (o->leak_bytes > 0) { /* a test double's leak: allocation on purpose */
        size_t bytes = (size_t)o->leak_bytes + sizeof(void *);
        void **block = malloc(bytes);
        if (block) {
            memset(block, 0x5a, bytes);
            *block = ((struct null_state *)state)->leaked;
            ((struct null_state *)state)->leaked = block;
        }
    }

    struct pb_shape shape = {.dtype = PB_DTYPE_U8, .frames = 1, .height = (int32_t)o->height,
                             .width = (int32_t)o->width, .channels = (int32_t)o->channels};
    size_t bytes = pb_shape_bytes(&shape);
    if (bytes > s->out_capacity) {
        snprintf(s->msg, s->msglen, "null decoder: output of %zu bytes exceeds buffer of %zu", bytes,
                 s->out_capacity);
        return PB_ERR;
    }
    pb_fill_pattern(s->out, shape.height, shape.width, shape.channels, s->seed ^ digest);
    s->out_bytes = bytes;
    s->out_shape = shape;
    return PB_OK;
}

static void null_cleanup(void *state)
{
    struct null_state *st = state;
    while (st && st->leaked) {
        void **block = st->leaked;
        st->leaked = *block;
        free(block);
    }
    free(st);
}

static int null_output_channels(const void *opts)
{
    return (int)((const struct null_opts *)opts)->channels;
}

const struct pb_decoder_ops pb_decoder_null = {
    .name = "null",
    .summary = "Synthetic image of a set size and CPU cost; tests and calibrates the harness.",
    .opts = null_opts,
    .opts_size = sizeof(struct null_opts),
    .output_channels = null_output_channels,
    .init = null_init,
    .decode = null_decode,
    .cleanup = null_cleanup,
};
