/* The `normalize` stage: (x / pixel_scale - mean) / std per channel, from
 * uint8 pixels to float32, float16 or uint8, in the layout the model wants.
 *
 * mean and std are torchvision's 0..1-scale values (ToTensor then
 * Normalize): with the default pixel_scale of 255 a uint8 pixel x becomes
 * (x / 255 - mean) / std. For mean and std in pixel units (e.g. 123.675),
 * set pixel_scale: 1. Each value is computed in double and rounded once
 * (float16: IEEE half, round to nearest even) into a 256-entry table per
 * channel built at init, so the per-sample work is a lookup.
 *
 * dtype uint8 keeps the pixel values (mean and std are then left to the
 * GPU) and only changes the layout. Channels: one mean/std value applies
 * to every channel; N values need N channels, except that a 1-channel
 * (gray) image is repeated into the N channels, as converting it to RGB
 * would, so a batch keeps one shape. */
#include "bench/base/pb.h"
#include "kernels/image.h"
#include "pipelines/gpu_stage.h"
#include "pipelines/pixel_stage.h"
#include "pipelines/stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[] = {"float32", "float16", "uint8", NULL};
static const enum pb_dtype dtype_values[] = {PB_DTYPE_F32, PB_DTYPE_F16, PB_DTYPE_U8};
static const char *const layout_names[] = {"hwc", "chw", "thwc", "tchw", "cthw", NULL};
static const enum pb_layout layout_values[] = {PB_LAYOUT_THWC, PB_LAYOUT_TCHW, PB_LAYOUT_THWC,
                                               PB_LAYOUT_TCHW, PB_LAYOUT_CTHW};

struct normalize_opts {
    struct pb_double_list mean, std;
    double pixel_scale;
    int dtype;  /* index into dtype_names  */
    int layout; /* index into layout_names */
    int device; /* enum pb_device */
};

static const struct pb_opt normalize_opts[] = {
    {.name = "mean", .type = PB_OPT_DOUBLE_LIST, .offset = offsetof(struct normalize_opts, mean),
     .min = -1e6, .max = 1e6, .def = "[0.485, 0.456, 0.406]",
     .help = "Per-channel mean, in units of x / pixel_scale (torchvision's 0..1 values)."},
    {.name = "std", .type = PB_OPT_DOUBLE_LIST, .offset = offsetof(struct normalize_opts, std),
     .min = 1e-9, .max = 1e6, .def = "[0.229, 0.224, 0.225]",
     .help = "Per-channel standard deviation, in the same units as mean."},
    {.name = "pixel_scale", .type = PB_OPT_DOUBLE,
     .offset = offsetof(struct normalize_opts, pixel_scale), .min = 1e-9, .max = 1e9,
     .def = "255",
     .help = "Pixels are divided by this before mean and std apply: 255 for 0..1-scale mean "
             "and std, 1 for values in pixel units."},
    {.name = "dtype", .type = PB_OPT_ENUM, .offset = offsetof(struct normalize_opts, dtype),
     .def = "float32", .allowed = dtype_names,
     .help = "Output type: float32, float16 (IEEE half) or uint8 (pixels unchanged, layout "
             "only)."},
    {.name = "layout", .type = PB_OPT_ENUM, .offset = offsetof(struct normalize_opts, layout),
     .def = "chw", .allowed = layout_names,
     .help = "Output layout: hwc or chw per image (and per frame of a clip: thwc, tchw), or "
             "cthw for clips channel-first."},
    {.name = "device", .type = PB_OPT_ENUM, .offset = offsetof(struct normalize_opts, device),
     .def = "cpu", .allowed = pb_device_names, .help = PB_DEVICE_HELP},
    {0},
};

struct normalize_state {
    int channels; /* values given for mean/std after broadcasting: 1 or N */
    enum pb_dtype dtype;
    enum pb_layout layout;
    struct pb_normalize_lut lut;
};

/* The rules between mean and std: one value each or one per channel, for
 * at most PB_NORMALIZE_MAX_CHANNELS channels. */
static int normalize_validate(const void *opts, char *msg, size_t msglen)
{
    const struct normalize_opts *o = opts;
    int n_mean = o->mean.count, n_std = o->std.count;
    if (n_mean < 1 || n_std < 1 || (n_mean > 1 && n_std > 1 && n_mean != n_std)) {
        snprintf(msg, msglen,
                 "pipeline.normalize: mean and std need one value each, or one per channel "
                 "(got %d and %d)",
                 n_mean, n_std);
        return PB_ERR_CONFIG;
    }
    int n = n_mean > n_std ? n_mean : n_std;
    if (n > PB_NORMALIZE_MAX_CHANNELS) {
        snprintf(msg, msglen, "pipeline.normalize: at most %d channels, got %d values",
                 PB_NORMALIZE_MAX_CHANNELS, n);
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

/* N mean/std values need N channels, or 1 (a gray image is repeated into
 * the N); one value fits any. */
static int normalize_validate_channels(const void *opts, int channels, char *msg, size_t msglen)
{
    const struct normalize_opts *o = opts;
    int n = o->mean.count > o->std.count ? o->mean.count : o->std.count;
    if (n <= 1 || channels == n || channels == 1)
        return PB_OK;
    snprintf(msg, msglen,
             "pipeline.normalize has %d mean/std values but the decoder writes %d channels; give "
             "%d values (one per channel) or one for all",
             n, channels, channels);
    return PB_ERR_CONFIG;
}

static int normalize_init(void **state, const void *opts, const struct pb_stage_plan *in,
                          struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                          const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    const struct normalize_opts *o = opts;
    int rc = normalize_validate(o, msg, msglen);
    if (rc != PB_OK)
        return rc;
    int n_mean = o->mean.count, n_std = o->std.count;
    int n = n_mean > n_std ? n_mean : n_std;
    rc = pb_pixel_plan_check(in, "normalize", "after decode", msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct normalize_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->channels = n;
    st->dtype = dtype_values[o->dtype];
    st->layout = layout_values[o->layout];
    double mean[PB_NORMALIZE_MAX_CHANNELS], std[PB_NORMALIZE_MAX_CHANNELS];
    for (int c = 0; c < PB_NORMALIZE_MAX_CHANNELS; c++) {
        mean[c] = o->mean.v[n_mean > 1 && c < n_mean ? c : 0];
        std[c] = o->std.v[n_std > 1 && c < n_std ? c : 0];
    }
    pb_normalize_lut_init(&st->lut, PB_NORMALIZE_MAX_CHANNELS, mean, std, o->pixel_scale);

    *out = *in;
    out->shape.dtype = st->dtype;
    out->shape.layout = st->layout;
    out->shape.frames = in->shape.frames > 0 ? in->shape.frames : 1;
    if (n > 1 || out->shape.channels < 1)
        out->shape.channels = n > 1 ? n : 3;
    out->max_bytes = pb_shape_bytes(&out->shape);
    *state = st;
    return PB_OK;
}

static int normalize_process(void *state, struct pb_sample *s)
{
    const struct normalize_state *st = state;
    const struct pb_shape *in = &s->in_shape;
    int rc = pb_pixel_sample_check(s, "normalize");
    if (rc != PB_OK)
        return rc;
    int out_channels = st->channels > 1 ? st->channels : in->channels;
    if (in->channels < 1 || in->channels > PB_NORMALIZE_MAX_CHANNELS ||
        (in->channels != out_channels && in->channels != 1)) {
        snprintf(s->msg, s->msglen, "%s: normalize has %d mean/std values but the image has %d "
                 "channels", s->path ? s->path : "(sample)", st->channels, in->channels);
        return PB_ERR_DATA;
    }
    struct pb_shape shape = *in;
    shape.frames = in->frames > 0 ? in->frames : 1;
    shape.dtype = st->dtype;
    shape.layout = st->layout;
    shape.channels = out_channels;
    size_t bytes = pb_shape_bytes(&shape);
    if (bytes > s->out_capacity) {
        s->out_bytes = bytes;
        return PB_ERR_NOSPACE;
    }
    /* A flip right before may have left its mirroring to this pass. */
    if (s->flip_pending)
        pb_normalize_mirrored_u8(s->in, shape.frames, in->height, in->width, in->channels,
                                 out_channels, &st->lut, st->dtype, st->layout, s->out);
    else
        pb_normalize_u8(s->in, shape.frames, in->height, in->width, in->channels, out_channels,
                        &st->lut, st->dtype, st->layout, s->out);
    s->flip_pending = false;
    s->out_bytes = bytes;
    s->out_shape = shape;
    return PB_OK;
}

/* ---- device: gpu ------------------------------------------------------ */

#if PB_HAVE_CUDA

/* The same table on the device: the GPU output is bit-exact with the CPU's. */
struct normalize_gpu_state {
    struct normalize_state cpu;
    struct pb_normalize_lut *lut_dev;
    struct pb_gpu_out out;
};

static void normalize_gpu_cleanup(void *state)
{
    struct normalize_gpu_state *g = state;
    if (!g)
        return;
    pb_gpu_free(g->lut_dev, sizeof(*g->lut_dev));
    pb_gpu_out_free(&g->out);
    free(g);
}

static int normalize_gpu_init(void **state, const void *opts, const struct pb_stage_plan *in,
                              struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                              const void *decoder_opts, char *msg, size_t msglen)
{
    void *cpu = NULL;
    int rc = normalize_init(&cpu, opts, in, out, decoder, decoder_opts, msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct normalize_gpu_state *g = calloc(1, sizeof(*g));
    if (!g) {
        free(cpu);
        return PB_ERR_NOMEM;
    }
    g->cpu = *(struct normalize_state *)cpu;
    free(cpu);
    *state = g;
    g->lut_dev = pb_gpu_alloc(sizeof(*g->lut_dev));
    if (!g->lut_dev) {
        snprintf(msg, msglen, "normalize (device: gpu): cannot allocate its table on the GPU");
        return PB_ERR_NOMEM;
    }
    rc = pb_gpu_upload_sync(g->lut_dev, &g->cpu.lut, sizeof(g->cpu.lut), msg, msglen);
    if (rc == PB_OK)
        rc = pb_gpu_out_init(&g->out, out, "normalize", msg, msglen);
    return rc;
}

static int normalize_gpu_batch(void *state, struct pb_batch *b, char *msg, size_t msglen)
{
    struct normalize_gpu_state *g = state;
    int rc = pb_gpu_batch_check(b, "normalize", msg, msglen);
    if (rc != PB_OK)
        return rc;
    const struct pb_shape *in = &b->dev_shape;
    int out_channels = g->cpu.channels > 1 ? g->cpu.channels : in->channels;
    if (in->channels != out_channels && in->channels != 1) {
        snprintf(msg, msglen, "normalize (device: gpu): %d mean/std values but %d channels",
                 g->cpu.channels, in->channels);
        return PB_ERR;
    }
    struct pb_shape shape = *in;
    shape.frames = in->frames > 0 ? in->frames : 1;
    shape.dtype = g->cpu.dtype;
    shape.layout = g->cpu.layout;
    shape.channels = out_channels;
    size_t sample_bytes = pb_shape_bytes(&shape);
    if ((size_t)b->samples * sample_bytes > g->out.bytes) {
        snprintf(msg, msglen, "normalize (device: gpu): batch larger than planned");
        return PB_ERR;
    }
    rc = pb_gpu_check(pb_gpu_normalize_u8(b->dev_data, b->dev_slot_bytes, g->out.dev,
                                          sample_bytes, (int)b->samples, shape.frames,
                                          in->height, in->width, in->channels, out_channels,
                                          g->lut_dev, g->cpu.dtype, g->cpu.layout, b->stream),
                      "normalize", msg, msglen);
    pb_gpu_out_publish(&g->out, b, sample_bytes, shape);
    return rc;
}

#endif /* PB_HAVE_CUDA */

PB_GPU_STAGE(normalize_gpu, "normalize", normalize_opts, struct normalize_opts, normalize_validate,
             normalize_gpu_init, normalize_gpu_batch, normalize_gpu_cleanup);

const struct pb_stage_ops pb_stage_normalize = {
    .name = "normalize",
    .summary = "Per-channel (x/255 - mean) / std to float32, float16 or uint8, HWC/CHW/CTHW.",
    .flags = PB_STAGE_WORKER | PB_STAGE_MIRRORS,
    PB_DEVICE_OPTS(normalize_opts, struct normalize_opts),
    .gpu = &normalize_gpu,
    .validate = normalize_validate,
    .validate_channels = normalize_validate_channels,
    .init = normalize_init,
    .process = normalize_process,
    .cleanup = free,
};
