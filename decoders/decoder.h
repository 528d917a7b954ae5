/* The decoder interface, behind the `decode` stage. One file per decoder;
 * a decoder whose library is missing at build time still has an entry with
 * unavailable_reason set, so `pbench list` can say why. */
#ifndef PB_DECODER_H
#define PB_DECODER_H

#include <stdio.h>

#include "bench/base/opt.h"
#include "bench/base/pb.h"
#include "decoders/sample.h"

enum pb_decoder_flags {
    /* The decoder opens the sample's file itself (sample->path), e.g. to
     * seek in a video, instead of decoding bytes a `read` stage loaded. */
    PB_DECODER_OPENS_FILE = 1u << 0,
};

struct pb_decoder_ops {
    const char *name;
    const char *summary;
    unsigned flags;             /* enum pb_decoder_flags                    */
    /* Names of the decoder's sub-stages (e.g. "open", "seek", "decode",
     * "convert"), NULL-terminated, or NULL. The decoder adds the time it
     * spends in sub-stage i to sample->substage_ns[i]; pbench reports each
     * as its own row, "decode.open" etc. At most PB_MAX_SUBSTAGES. */
    const char *const *substages;
    /* Names of per-sample counters (e.g. "frames_decoded",
     * "frames_delivered"), NULL-terminated, or NULL; the decoder adds to
     * sample->counters[i]. pbench sums them per stage. At most
     * PB_MAX_COUNTERS. */
    const char *const *counters;
    const struct pb_opt *opts;
    size_t opts_size;
    const char *unavailable_reason;

    /* Optional: the rules between the decoder's options, as the stages'
     * validate (pipelines/stage.h): PB_OK, or PB_ERR_CONFIG with the
     * sentence in msg. pb_config_validate calls it before any data is made. */
    int (*validate)(const void *opts, char *msg, size_t msglen);
    /* Optional: the channels of every decoded sample, from the options
     * alone (output: gray gives 1), or 0 when the files decide. The stages
     * after decode check it with their validate_channels. */
    int (*output_channels)(const void *opts);
    /* Optional: how many samples each visit of a file gives, from the
     * options (the video decoder's clips_per_visit); NULL or 1: one. The
     * sampler then puts that many samples of a file one after the other,
     * so an epoch holds files x that many samples, and tells the decoder
     * which of them each is (sample->clip, ->clips, ->visit_seed). */
    int64_t (*samples_per_visit)(const void *opts);

    /* Per-worker state; out receives the largest decoded shape and bytes
     * (in->max_bytes is the largest encoded input). */
    int (*init)(void **state, const void *opts, const struct pb_stage_plan *in,
                struct pb_stage_plan *out, char *msg, size_t msglen);
    /* Decodes sample->in into sample->out (capacity from init's plan).
     * PB_ERR_DATA for a corrupt or unsupported input, with a message. */
    int (*decode)(void *state, struct pb_sample *sample);
    void (*cleanup)(void *state);
};

/* Whether a decoded sample of bytes (width x height pixels, each frame) may
 * be made: PB_OK, or PB_ERR_DATA with the sentence in s->msg when it is over
 * PB_SAMPLE_MAX_BYTES, which only a corrupt header or a decompression bomb
 * asks for. Decoders call it before asking for a larger buffer
 * (PB_ERR_NOSPACE); bytes is a double so that no product overflows. */
static inline int pb_decoded_size_check(struct pb_sample *s, double bytes, long long width,
                                        long long height)
{
    if (bytes <= (double)PB_SAMPLE_MAX_BYTES)
        return PB_OK;
    snprintf(s->msg, s->msglen,
             "%s: a %lldx%lld image would take %.0f bytes decoded, more than the %zu bytes a "
             "sample may take: its header is corrupt or it is far too large",
             s->path ? s->path : "(sample)", width, height, bytes, (size_t)PB_SAMPLE_MAX_BYTES);
    return PB_ERR_DATA;
}

const struct pb_decoder_ops *pb_decoder_find(const char *name);
const struct pb_decoder_ops *const *pb_decoder_all(size_t *count);

#endif
