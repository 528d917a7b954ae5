/* The `decode` stage: dispatches each sample to the decoder the config
 * names (`decoder: null`, and the real decoders as they land). */
#include "bench/base/pb.h"
#include "decoders/decoder.h"
#include "pipelines/stage.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "pipelines/storage.h"

struct decode_state {
    const struct pb_decoder_ops *decoder;
    void *decoder_state;
    /* A decoder that opens its files itself (video) under dataset.cache:
     * cold or direct: the file is evicted after it was decoded. */
    bool evict_after;
};

static int decode_init(void **state, const void *opts, const struct pb_stage_plan *in,
                       struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                       const void *decoder_opts, char *msg, size_t msglen)
{
    (void)opts;
    if (!decoder) {
        snprintf(msg, msglen, "decode: no decoder chosen");
        return PB_ERR_CONFIG;
    }
    if (decoder->unavailable_reason) {
        snprintf(msg, msglen, "decoder '%s' is not available in this build: %s", decoder->name,
                 decoder->unavailable_reason);
        return PB_ERR_UNAVAILABLE;
    }
    struct decode_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->decoder = decoder;
    st->evict_after = (decoder->flags & PB_DECODER_OPENS_FILE) && in->cache != PB_CACHE_WARM;
    int rc = decoder->init(&st->decoder_state, decoder_opts, in, out, msg, msglen);
    if (rc != PB_OK) {
        free(st);
        return rc;
    }
    *state = st;
    return PB_OK;
}

static int decode_process(void *state, struct pb_sample *s)
{
    struct decode_state *st = state;
    int rc = st->decoder->decode(st->decoder_state, s);
    if (st->evict_after && s->path) {
        int fd = open(s->path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            pb_storage_evict_range(fd, 0, 0);
            close(fd);
        }
    }
    return rc;
}

static void decode_cleanup(void *state)
{
    struct decode_state *st = state;
    if (!st)
        return;
    st->decoder->cleanup(st->decoder_state);
    free(st);
}

const struct pb_stage_ops pb_stage_decode = {
    .name = "decode",
    .summary = "Decode each sample's bytes into pixels with the chosen decoder.",
    .flags = PB_STAGE_WORKER | PB_STAGE_DECODER,
    .opts = NULL,
    .opts_size = 0,
    .init = decode_init,
    .process = decode_process,
    .cleanup = decode_cleanup,
};
