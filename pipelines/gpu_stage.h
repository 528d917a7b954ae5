/* What the GPU versions of stages (device: gpu) share: checking the batch
 * they are given and owning one device output buffer. A GPU stage runs in
 * the training loop on the batch to_device copied, in order on the compute
 * stream, so one output buffer serves every batch in flight: the next
 * batch's kernel runs only after this batch's step has read it. Per-batch
 * parameters (crop windows, flip flags) are staged per in-flight batch. */
#ifndef PB_GPU_STAGE_H
#define PB_GPU_STAGE_H

#include <stdio.h>

#include "bench/base/pb.h"
#include "kernels/gpu_rt.h"
#include "pipelines/stage.h"

#if PB_HAVE_CUDA
#include "kernels/gpu.h"
#endif

/* Defines var, the GPU version of a stage with a `device` option: the CPU
 * version's name, options and validate (NULL for none), run per batch after
 * to_device with the given callbacks (see PB_GPU_CALLBACKS for a build
 * without CUDA). The CPU version's table points at it with .gpu = &var. */
#define PB_GPU_STAGE(var, stage_name, opt_table, opts_type, validate_fn, init_fn, batch_fn,        \
                     cleanup_fn)                                                                   \
    static const struct pb_stage_ops var = {                                                       \
        .name = stage_name,                                                                        \
        .summary = stage_name " on the GPU, per batch after to_device.",                           \
        .flags = PB_STAGE_CONSUMER | PB_STAGE_GPU,                                                 \
        PB_DEVICE_OPTS(opt_table, opts_type),                                                      \
        .validate = (validate_fn),                                                                 \
        PB_GPU_CALLBACKS(init_fn, batch_fn, cleanup_fn),                                           \
    }

/* A GPU stage's device output: batch samples of sample_bytes each. */
struct pb_gpu_out {
    uint8_t *dev;
    size_t bytes;
};

static inline int pb_gpu_out_init(struct pb_gpu_out *o, const struct pb_stage_plan *out,
                                  const char *stage, char *msg, size_t msglen)
{
    int n = out->max_samples > 0 ? out->max_samples : 1;
    o->bytes = (size_t)n * out->max_bytes;
    o->dev = pb_gpu_alloc(o->bytes);
    if (!o->dev) {
        snprintf(msg, msglen, "%s (device: gpu): cannot allocate %zu bytes on the GPU", stage,
                 o->bytes);
        return PB_ERR_NOMEM;
    }
    return PB_OK;
}

static inline void pb_gpu_out_free(struct pb_gpu_out *o)
{
    pb_gpu_free(o->dev, o->bytes);
    o->dev = NULL;
}

/* Hands the batch on as o holds it: samples of sample_bytes each, of shape. */
static inline void pb_gpu_out_publish(const struct pb_gpu_out *o, struct pb_batch *b,
                                      size_t sample_bytes, struct pb_shape shape)
{
    b->dev_data = o->dev;
    b->dev_slot_bytes = sample_bytes;
    b->dev_shape = shape;
}

/* The checks every GPU stage makes on its input batch. */
static inline int pb_gpu_batch_check(const struct pb_batch *b, const char *stage, char *msg,
                                     size_t msglen)
{
    if (!b->dev_data) {
        snprintf(msg, msglen, "%s (device: gpu): the batch is not on the device", stage);
        return PB_ERR;
    }
    if (b->ragged) {
        snprintf(msg, msglen,
                 "%s (device: gpu): a batch holds samples of different sizes; end the CPU part "
                 "of the pipeline with a resize or crop to a fixed size",
                 stage);
        return PB_ERR;
    }
    if (b->dev_shape.dtype != PB_DTYPE_U8 || b->dev_shape.layout != PB_LAYOUT_THWC) {
        snprintf(msg, msglen, "%s (device: gpu): input is %s, not uint8 pixels", stage,
                 pb_dtype_name(b->dev_shape.dtype));
        return PB_ERR;
    }
    return PB_OK;
}

#endif
