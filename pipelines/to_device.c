/* The `to_device` stage: the host-to-device copy of each batch, in the
 * training loop. The copy itself is the runner's (bench/run/gpuloop.c: a copy
 * stream, loader.device_prefetch device buffers, CUDA events); this entry
 * gives the stage its place in the pipeline, its options and its row in
 * the tables. Stages after it with device: gpu run on the copied batch. */
#include "bench/base/pb.h"
#include "pipelines/stage.h"

#include <stddef.h>
#include <stdlib.h>

static const char *const stream_names[] = {"copy", "compute", NULL};

struct to_device_opts {
    int stream; /* 0: a copy stream of its own, 1: the compute stream */
};

static const struct pb_opt to_device_opts[] = {
    {.name = "stream", .type = PB_OPT_ENUM, .offset = offsetof(struct to_device_opts, stream),
     .def = "copy", .allowed = stream_names,
     .help = "copy: copies run on a stream of their own and overlap the previous step "
             "(loader.device_prefetch >= 2); compute: copies queue behind the step on the "
             "compute stream, as a plain tensor.to(device) does."},
    {0},
};

static int to_device_init(void **state, const void *opts, const struct pb_stage_plan *in,
                          struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                          const void *decoder_opts, char *msg, size_t msglen)
{
    (void)opts, (void)decoder, (void)decoder_opts, (void)msg, (void)msglen;
    *out = *in;
    *state = NULL;
    return PB_OK;
}

static int to_device_batch(void *state, struct pb_batch *batch, char *msg, size_t msglen)
{
    (void)state, (void)batch, (void)msg, (void)msglen;
    return PB_OK; /* the runner copies; see bench/run/gpuloop.c */
}

bool pb_to_device_on_compute(const void *opts)
{
    return ((const struct to_device_opts *)opts)->stream == 1;
}

const struct pb_stage_ops pb_stage_to_device = {
    .name = "to_device",
    .summary = "Copy each batch to the GPU (cudaMemcpyAsync), timed with CUDA events.",
    .flags = PB_STAGE_CONSUMER | PB_STAGE_TO_DEVICE,
    .opts = to_device_opts,
    .opts_size = sizeof(struct to_device_opts),
    .init = to_device_init,
    .process_batch = to_device_batch,
};
