/* What the fuzz targets share: a `decode` stage instance driven as the
 * runner drives it (bench/run/runner.c: init with a plan, process one sample,
 * grow the output buffer once on PB_ERR_NOSPACE), and a check that stops
 * the fuzzer with a message when a contract is broken. Header-only, like
 * tests/testutil.h, since each target is one executable. */
#ifndef PB_FUZZUTIL_H
#define PB_FUZZUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/opt.h"
#include "bench/base/pb.h"
#include "decoders/decoder.h"
#include "pipelines/stage.h"

/* The largest output a fuzz target lets a decoder grow to: the runner has
 * no such bound, but an input that asks for more is not worth the time. */
#define FUZZ_MAX_OUT_BYTES ((size_t)64 << 20)

/* Stops the fuzzer (abort: libFuzzer keeps the input as a crash) with the
 * broken contract when cond is false. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz: check failed: %s: ", #cond);                                    \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Fills the stack below the caller with words drawn from seed, so a
 * decoder that reads a local it never set (e.g. a size a library call left
 * untouched) reads garbage that the input decides: the fuzzer can steer it
 * and the crash reproduces from the one input. */
static inline __attribute__((noinline)) void fuzz_poison_stack(uint64_t seed)
{
    volatile uint32_t area[8192];
    uint64_t x = seed | 1;
    for (size_t i = 0; i < PB_ARRAY_LEN(area); i++) {
        x ^= x << 13; /* xorshift64 */
        x ^= x >> 7;
        x ^= x << 17;
        area[i] = (uint32_t)x;
    }
}

static inline uint64_t fuzz_hash(const uint8_t *data, size_t size, uint64_t seed)
{
    uint64_t h = 1469598103934665603ull ^ seed; /* FNV-1a */
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    return h;
}

/* One `decode` stage with its decoder, as one worker holds it. */
struct fuzz_decode {
    const struct pb_stage_ops *stage;
    const struct pb_decoder_ops *decoder;
    void *decoder_opts;
    void *state;
    uint8_t *out;
    size_t out_capacity;
    char msg[PB_MSG_MAX];
};

/* Sets up the decode stage with the named decoder and its options,
 * "name=value" strings ending with NULL, for inputs of at most
 * max_input_bytes. Options and names are the target's own, so a failure
 * here is a broken target: it aborts. */
static inline void fuzz_decode_open(struct fuzz_decode *d, const char *decoder,
                                    const char *const *options, size_t max_input_bytes)
{
    memset(d, 0, sizeof(*d));
    d->stage = pb_stage_find("decode");
    d->decoder = pb_decoder_find(decoder);
    FUZZ_CHECK(d->stage && d->decoder && !d->decoder->unavailable_reason, "decoder %s", decoder);
    d->decoder_opts = calloc(1, d->decoder->opts_size ? d->decoder->opts_size : 1);
    FUZZ_CHECK(d->decoder_opts != NULL, "out of memory");
    int rc = pb_opt_set_defaults(d->decoder->opts, d->decoder_opts, d->msg, sizeof(d->msg));
    FUZZ_CHECK(rc == PB_OK, "%s", d->msg);
    for (int i = 0; options && options[i]; i++) {
        char name[PB_NAME_MAX];
        const char *eq = strchr(options[i], '=');
        FUZZ_CHECK(eq != NULL, "option %s", options[i]);
        snprintf(name, sizeof(name), "%.*s", (int)(eq - options[i]), options[i]);
        const struct pb_opt *opt = pb_opt_find(d->decoder->opts, name);
        FUZZ_CHECK(opt != NULL, "decoder %s has no option %s", decoder, name);
        rc = pb_opt_parse(opt, eq + 1, d->decoder_opts, name, d->msg, sizeof(d->msg));
        FUZZ_CHECK(rc == PB_OK, "%s", d->msg);
    }
    /* The plan a read stage hands on: bytes, at most max_input_bytes. */
    struct pb_stage_plan in = {
        .shape = {.dtype = PB_DTYPE_BYTES, .frames = 1, .height = 1, .width = 0, .channels = 1},
        .max_bytes = max_input_bytes,
        .worker = 0,
    };
    struct pb_stage_plan out = in;
    rc = d->stage->init(&d->state, NULL, &in, &out, d->decoder, d->decoder_opts, d->msg,
                        sizeof(d->msg));
    FUZZ_CHECK(rc == PB_OK, "init: %s", d->msg);
    /* The runner sizes the last stage's slot from the plan. */
    d->out_capacity = out.max_bytes < FUZZ_MAX_OUT_BYTES ? out.max_bytes : FUZZ_MAX_OUT_BYTES;
    d->out = malloc(d->out_capacity ? d->out_capacity : 1);
    FUZZ_CHECK(d->out != NULL, "out of memory for %zu bytes", d->out_capacity);
}

/* Decodes one sample (in/in_bytes, or the file at path for a decoder that
 * opens files itself) and returns the stage's code. On PB_ERR_NOSPACE the
 * output grows once to the size asked for, as the runner's scratch does,
 * up to FUZZ_MAX_OUT_BYTES (beyond it the NOSPACE is returned). The
 * decoded sample's out_bytes and shape are checked against the buffer. */
static inline int fuzz_decode_run(struct fuzz_decode *d, const char *path, const uint8_t *in,
                                  size_t in_bytes, uint64_t seed, struct pb_sample *s)
{
    for (int attempt = 0;; attempt++) {
        memset(s, 0, sizeof(*s));
        s->path = path;
        s->file_bytes = in_bytes;
        s->seed = seed;
        s->in = in;
        s->in_bytes = in_bytes;
        s->in_shape = (struct pb_shape){.dtype = PB_DTYPE_BYTES};
        s->out = d->out;
        s->out_capacity = d->out_capacity;
        s->msg = d->msg;
        s->msglen = sizeof(d->msg);
        d->msg[0] = 0;
        fuzz_poison_stack(fuzz_hash(in, in_bytes, seed));
        int rc = d->stage->process(d->state, s);
        if (rc == PB_OK) {
            FUZZ_CHECK(s->out_bytes <= d->out_capacity, "out_bytes %zu, capacity %zu", s->out_bytes,
                       d->out_capacity);
            FUZZ_CHECK(pb_shape_bytes(&s->out_shape) == s->out_bytes,
                       "shape of %zu bytes, out_bytes %zu", pb_shape_bytes(&s->out_shape),
                       s->out_bytes);
        }
        if (rc == PB_ERR_DATA)
            FUZZ_CHECK(d->msg[0] != 0, "a data error without a message");
        if (rc != PB_ERR_NOSPACE || attempt > 0 || s->out_bytes > FUZZ_MAX_OUT_BYTES)
            return rc;
        FUZZ_CHECK(s->out_bytes > d->out_capacity, "NOSPACE asking for %zu bytes of %zu",
                   s->out_bytes, d->out_capacity);
        uint8_t *grown = malloc(s->out_bytes);
        FUZZ_CHECK(grown != NULL, "out of memory for %zu bytes", s->out_bytes);
        free(d->out);
        d->out = grown;
        d->out_capacity = s->out_bytes;
    }
}

static inline void fuzz_decode_close(struct fuzz_decode *d)
{
    if (d->state)
        d->stage->cleanup(d->state);
    free(d->decoder_opts);
    free(d->out);
    memset(d, 0, sizeof(*d));
}

#endif
