/* The decoder interface, behind the `decode` stage. One file per decoder;
 * a decoder whose library is missing at build time still has an entry with
 * unavailable_reason set, so `pbench list` can say why. */
#ifndef PB_DECODER_H
#define PB_DECODER_H

#include "pipelines/stage.h"

struct pb_decoder_ops {
    const char *name;
    const char *summary;
    const struct pb_opt *opts;
    size_t opts_size;
    const char *unavailable_reason;

    /* Per-worker state; out receives the largest decoded shape and bytes
     * (in->max_bytes is the largest encoded input). */
    int (*init)(void **state, const void *opts, const struct pb_stage_plan *in,
                struct pb_stage_plan *out, char *msg, size_t msglen);
    /* Decodes sample->in into sample->out (capacity from init's plan).
     * PB_ERR_DATA for a corrupt or unsupported input, with a message. */
    int (*decode)(void *state, struct pb_sample *sample);
    void (*cleanup)(void *state);
};

const struct pb_decoder_ops *pb_decoder_find(const char *name);
const struct pb_decoder_ops *const *pb_decoder_all(size_t *count);

#endif
