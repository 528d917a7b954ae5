/* The `resize` stage: an image or every frame of a clip to an exact
 * [height, width], or so that its shorter side has a given length
 * (torchvision's Resize(N)), with bilinear, area or nearest sampling.
 * Channels pass through unchanged (any count, 1 and 3 included). */
#include "bench/base/pb.h"
#include "kernels/image.h"
#include "pipelines/gpu_stage.h"
#include "pipelines/pixel_stage.h"
#include "pipelines/stage.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const interp_names[] = {"bilinear", "area", "nearest", NULL};

struct resize_opts {
    struct pb_int_list size;
    int64_t shorter_side;
    int interpolation; /* enum pb_interp */
    int device;        /* enum pb_device */
};

static const struct pb_opt resize_opts[] = {
    {.name = "size", .type = PB_OPT_INT_LIST, .offset = offsetof(struct resize_opts, size),
     .min = 1, .max = 16384, .def = "[]",
     .help = "Output size as [height, width], pixels; give this or shorter_side."},
    {.name = "shorter_side", .type = PB_OPT_INT,
     .offset = offsetof(struct resize_opts, shorter_side), .min = 0, .max = 16384, .def = "0",
     .help = "Scale so the shorter side has this many pixels, keeping the aspect ratio "
             "(torchvision Resize(N)); 0 uses size instead."},
    {.name = "interpolation", .type = PB_OPT_ENUM,
     .offset = offsetof(struct resize_opts, interpolation), .def = "bilinear",
     .allowed = interp_names,
     .help = "bilinear (2x2 taps), area (box filter: antialiased downscaling) or nearest."},
    {.name = "device", .type = PB_OPT_ENUM, .offset = offsetof(struct resize_opts, device),
     .def = "cpu", .allowed = pb_device_names, .help = PB_DEVICE_HELP},
    {0},
};

struct resize_state {
    struct resize_opts o;
    struct pb_resampler resampler;
};

/* The output size for an in_h x in_w input. */
static void output_size(const struct resize_opts *o, int32_t in_h, int32_t in_w, int32_t *out_h,
                        int32_t *out_w)
{
    if (o->shorter_side <= 0) {
        *out_h = (int32_t)o->size.v[0];
        *out_w = (int32_t)o->size.v[1];
        return;
    }
    /* torchvision: the long side is int(N * long / short), truncated. */
    int64_t n = o->shorter_side;
    if (in_w <= in_h) {
        *out_w = (int32_t)n;
        *out_h = (int32_t)(n * in_h / (in_w > 0 ? in_w : 1));
    } else {
        *out_h = (int32_t)n;
        *out_w = (int32_t)(n * in_w / (in_h > 0 ? in_h : 1));
    }
    if (*out_h < 1)
        *out_h = 1;
    if (*out_w < 1)
        *out_w = 1;
}

/* The rules between size and shorter_side. */
static int resize_validate(const void *opts, char *msg, size_t msglen)
{
    const struct resize_opts *o = opts;
    bool sized = o->size.count > 0, shorter = o->shorter_side > 0;
    if (sized && shorter) {
        snprintf(msg, msglen,
                 "pipeline.resize takes size or shorter_side, not both (size: [height, width] "
                 "for an exact size, shorter_side: N to keep the aspect ratio)");
        return PB_ERR_CONFIG;
    }
    if (!sized && !shorter) {
        snprintf(msg, msglen, "pipeline.resize needs size: [height, width] or shorter_side: N");
        return PB_ERR_CONFIG;
    }
    if (sized && o->size.count == 1) {
        snprintf(msg, msglen,
                 "pipeline.resize.size takes [height, width]; for torchvision's Resize(%lld), "
                 "which sizes the shorter side, write shorter_side: %lld",
                 (long long)o->size.v[0], (long long)o->size.v[0]);
        return PB_ERR_CONFIG;
    }
    if (sized && o->size.count != 2) {
        snprintf(msg, msglen, "pipeline.resize.size takes [height, width], got %d values",
                 o->size.count);
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

static int resize_init(void **state, const void *opts, const struct pb_stage_plan *in,
                       struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                       const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    const struct resize_opts *o = opts;
    int rc = resize_validate(o, msg, msglen);
    if (rc != PB_OK)
        return rc;
    rc = pb_pixel_plan_check(in, "resize", "after decode and before normalize", msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct resize_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->o = *o;
    int32_t max_h = in->shape.height > 0 ? in->shape.height : 1;
    int32_t max_w = in->shape.width > 0 ? in->shape.width : 1;
    int32_t channels = in->shape.channels > 0 ? in->shape.channels : 3;
    int32_t out_h, out_w;
    output_size(o, max_h, max_w, &out_h, &out_w);
    if (pb_resampler_init(&st->resampler, (enum pb_interp)o->interpolation, max_h, max_w, out_h,
                          out_w, channels) != PB_OK) {
        free(st);
        return PB_ERR_NOMEM;
    }
    /* Exact for size; for shorter_side, the size of the planned input
     * (another aspect ratio may need more: PB_ERR_NOSPACE says so). */
    *out = *in;
    out->shape.height = out_h;
    out->shape.width = out_w;
    out->shape.channels = channels;
    out->shape.frames = in->shape.frames > 0 ? in->shape.frames : 1;
    out->max_bytes = pb_shape_bytes(&out->shape);
    *state = st;
    return PB_OK;
}

static void resize_min_input(const void *opts, int32_t *height, int32_t *width)
{
    const struct resize_opts *o = opts;
    if (o->shorter_side > 0) {
        *height = *width = (int32_t)o->shorter_side;
    } else if (o->size.count == 2) {
        *height = (int32_t)o->size.v[0];
        *width = (int32_t)o->size.v[1];
    }
}

static int resize_process(void *state, struct pb_sample *s)
{
    struct resize_state *st = state;
    const struct pb_shape *in = &s->in_shape;
    int rc = pb_pixel_sample_check(s, "resize");
    if (rc != PB_OK)
        return rc;
    if (in->height < 1 || in->width < 1 || in->channels < 1) {
        snprintf(s->msg, s->msglen, "%s: resize: empty image (%dx%dx%d)",
                 s->path ? s->path : "(sample)", in->width, in->height, in->channels);
        return PB_ERR_DATA;
    }
    int32_t out_h, out_w;
    output_size(&st->o, in->height, in->width, &out_h, &out_w);
    struct pb_shape shape = *in;
    shape.frames = in->frames > 0 ? in->frames : 1;
    shape.height = out_h;
    shape.width = out_w;
    size_t bytes = pb_shape_bytes(&shape);
    if (bytes > s->out_capacity) {
        s->out_bytes = bytes;
        return PB_ERR_NOSPACE;
    }
    if (pb_resampler_prepare(&st->resampler, in->height, in->width, out_h, out_w,
                             in->channels) != PB_OK) {
        snprintf(s->msg, s->msglen, "resize: out of memory for a %dx%d input", in->width,
                 in->height);
        return PB_ERR;
    }
    size_t in_frame = (size_t)in->height * (size_t)in->width * (size_t)in->channels;
    size_t out_frame = (size_t)out_h * (size_t)out_w * (size_t)in->channels;
    size_t row_bytes = (size_t)in->width * (size_t)in->channels;
    for (int t = 0; t < shape.frames; t++)
        pb_resample_u8(&st->resampler, s->in + (size_t)t * in_frame, row_bytes,
                       s->out + (size_t)t * out_frame);
    s->out_bytes = bytes;
    s->out_shape = shape;
    return PB_OK;
}

static void resize_cleanup(void *state)
{
    struct resize_state *st = state;
    if (!st)
        return;
    pb_resampler_free(&st->resampler);
    free(st);
}

/* ---- device: gpu ------------------------------------------------------ */

#if PB_HAVE_CUDA

/* The CPU resampler's tables, prepared for the batch's size on the host and
 * uploaded when that size changes, so the GPU computes the CPU's result. */
struct resize_gpu_state {
    struct resize_state *cpu;
    struct {
        int in_h, in_w, channels;
    } held;
    struct pb_gpu_resampler dev;
    struct pb_gpu_out out;
};

static void resize_gpu_cleanup(void *state)
{
    struct resize_gpu_state *g = state;
    if (!g)
        return;
    resize_cleanup(g->cpu);
    pb_gpu_resampler_free(&g->dev);
    pb_gpu_out_free(&g->out);
    free(g);
}

static int resize_gpu_init(void **state, const void *opts, const struct pb_stage_plan *in,
                           struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                           const void *decoder_opts, char *msg, size_t msglen)
{
    struct resize_gpu_state *g = calloc(1, sizeof(*g));
    if (!g)
        return PB_ERR_NOMEM;
    *state = g;
    void *cpu = NULL;
    int rc = resize_init(&cpu, opts, in, out, decoder, decoder_opts, msg, msglen);
    if (rc != PB_OK)
        return rc;
    g->cpu = cpu;
    return pb_gpu_out_init(&g->out, out, "resize", msg, msglen);
}

static int resize_gpu_batch(void *state, struct pb_batch *b, char *msg, size_t msglen)
{
    struct resize_gpu_state *g = state;
    int rc = pb_gpu_batch_check(b, "resize", msg, msglen);
    if (rc != PB_OK)
        return rc;
    const struct pb_shape *in = &b->dev_shape;
    int32_t out_h, out_w;
    output_size(&g->cpu->o, in->height, in->width, &out_h, &out_w);
    struct pb_shape shape = *in;
    shape.frames = in->frames > 0 ? in->frames : 1;
    shape.height = out_h;
    shape.width = out_w;
    size_t sample_bytes = pb_shape_bytes(&shape);
    if ((size_t)b->samples * sample_bytes > g->out.bytes) {
        snprintf(msg, msglen, "resize (device: gpu): batch larger than planned");
        return PB_ERR;
    }
    if (g->held.in_h != in->height || g->held.in_w != in->width ||
        g->held.channels != in->channels) {
        struct pb_resampler *r = &g->cpu->resampler;
        if (pb_resampler_prepare(r, in->height, in->width, out_h, out_w, in->channels) != PB_OK) {
            snprintf(msg, msglen, "resize (device: gpu): out of memory for its tables");
            return PB_ERR_NOMEM;
        }
        rc = pb_gpu_check(pb_gpu_resampler_upload(&g->dev, r), "resize tables", msg, msglen);
        if (rc != PB_OK)
            return rc;
        g->held.in_h = in->height;
        g->held.in_w = in->width;
        g->held.channels = in->channels;
    }
    rc = pb_gpu_check(pb_gpu_resample_u8(&g->dev, b->dev_data, b->dev_slot_bytes,
                                         (int)b->samples, shape.frames, g->out.dev, sample_bytes,
                                         b->stream),
                      "resize", msg, msglen);
    pb_gpu_out_publish(&g->out, b, sample_bytes, shape);
    return rc;
}

#endif /* PB_HAVE_CUDA */

PB_GPU_STAGE(resize_gpu, "resize", resize_opts, struct resize_opts, resize_validate,
             resize_gpu_init, resize_gpu_batch, resize_gpu_cleanup);

const struct pb_stage_ops pb_stage_resize = {
    .name = "resize",
    .summary = "Resize images or clip frames to [height, width] or a shorter side.",
    .flags = PB_STAGE_WORKER,
    PB_DEVICE_OPTS(resize_opts, struct resize_opts),
    .gpu = &resize_gpu,
    .validate = resize_validate,
    .init = resize_init,
    .min_input = resize_min_input,
    .process = resize_process,
    .cleanup = resize_cleanup,
};
