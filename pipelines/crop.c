/* The crop stages, torchvision's semantics:
 *
 *   center_crop          the centre size window (CenterCrop)
 *   random_crop          a uniformly placed size window (RandomCrop)
 *   random_resized_crop  a random area and aspect ratio, resampled to size
 *                        (RandomResizedCrop); crop and resize are fused, so
 *                        only the crop window is read and resampled
 *
 * A crop larger than its input is padded with zeros, centred (torchvision
 * pads CenterCrop so; RandomCrop would need pad_if_needed). Every frame of
 * a clip gets the same window, drawn from the sample's seed. Channels pass
 * through unchanged (any count, 1 and 3 included). */
#include "bench/base/pb.h"
#include "kernels/image.h"
#include "pipelines/gpu_stage.h"
#include "pipelines/pixel_stage.h"
#include "pipelines/stage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define SALT_RANDOM_CROP 0x72616e645f63726full         /* "rand_cro" */
#define SALT_RANDOM_RESIZED_CROP 0x7272635f63726f70ull /* "rrc_crop" */

static const char *const interp_names[] = {"bilinear", "area", "nearest", NULL};

struct crop_opts {
    struct pb_int_list size;
    /* random_resized_crop only */
    struct pb_double_list scale;
    struct pb_double_list ratio;
    int interpolation;
    int device; /* enum pb_device; center_crop and random_crop */
};

#define SIZE_OPT                                                                                \
    {.name = "size", .type = PB_OPT_INT_LIST, .offset = offsetof(struct crop_opts, size),       \
     .min = 1, .max = 16384, .def = "[224]",                                                    \
     .help = "Output size: N for a square or [height, width], pixels."}

static const struct pb_opt crop_opts[] = {
    SIZE_OPT,
    {.name = "device", .type = PB_OPT_ENUM, .offset = offsetof(struct crop_opts, device),
     .def = "cpu", .allowed = pb_device_names, .help = PB_DEVICE_HELP},
    {0},
};

static const struct pb_opt rrc_opts[] = {
    SIZE_OPT,
    {.name = "scale", .type = PB_OPT_DOUBLE_LIST, .offset = offsetof(struct crop_opts, scale),
     .min = 0, .max = 1, .def = "[0.08, 1.0]",
     .help = "Range [lo, hi] of the crop's area as a fraction of the image's."},
    {.name = "ratio", .type = PB_OPT_DOUBLE_LIST, .offset = offsetof(struct crop_opts, ratio),
     .min = 0.001, .max = 1000, .def = "[0.75, 1.3333333333333333]",
     .help = "Range [lo, hi] of the crop's aspect ratio (width / height), drawn log-uniform."},
    {.name = "interpolation", .type = PB_OPT_ENUM,
     .offset = offsetof(struct crop_opts, interpolation), .def = "bilinear",
     .allowed = interp_names,
     .help = "bilinear (2x2 taps), area (box filter: antialiased downscaling) or nearest."},
    {0},
};

enum crop_kind { CENTER, RANDOM, RANDOM_RESIZED };

struct crop_state {
    enum crop_kind kind;
    const char *name;
    struct crop_opts o;
    int32_t height, width; /* output */
    struct pb_resampler resampler;
};

static void crop_size(const struct crop_opts *o, int32_t *height, int32_t *width)
{
    *height = (int32_t)o->size.v[0];
    *width = (int32_t)(o->size.count > 1 ? o->size.v[1] : o->size.v[0]);
}

static int check_range(const char *stage, const char *key, const struct pb_double_list *l,
                       char *msg, size_t msglen)
{
    if (l->count != 2) {
        snprintf(msg, msglen, "pipeline.%s.%s takes [lo, hi], got %d values", stage, key,
                 l->count);
        return PB_ERR_CONFIG;
    }
    if (l->v[0] > l->v[1]) {
        snprintf(msg, msglen, "pipeline.%s.%s must be [lo, hi] with lo <= hi, got [%g, %g]",
                 stage, key, l->v[0], l->v[1]);
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

/* The rules of a crop's options: size is N or [height, width], and for
 * random_resized_crop, scale and ratio are [lo, hi] ranges. */
static int check_opts(enum crop_kind kind, const char *name, const struct crop_opts *o, char *msg,
                      size_t msglen)
{
    if (o->size.count != 1 && o->size.count != 2) {
        snprintf(msg, msglen,
                 "pipeline.%s.size takes N (a square) or [height, width], got %d values", name,
                 o->size.count);
        return PB_ERR_CONFIG;
    }
    if (kind != RANDOM_RESIZED)
        return PB_OK;
    int rc = check_range(name, "scale", &o->scale, msg, msglen);
    if (rc == PB_OK)
        rc = check_range(name, "ratio", &o->ratio, msg, msglen);
    return rc;
}

static int crop_init(enum crop_kind kind, const char *name, void **state, const void *opts,
                     const struct pb_stage_plan *in, struct pb_stage_plan *out, char *msg,
                     size_t msglen)
{
    const struct crop_opts *o = opts;
    int rc = check_opts(kind, name, o, msg, msglen);
    if (rc != PB_OK)
        return rc;
    rc = pb_pixel_plan_check(in, name, "after decode and before normalize", msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct crop_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->kind = kind;
    st->name = name;
    st->o = *o;
    crop_size(o, &st->height, &st->width);
    int32_t channels = in->shape.channels > 0 ? in->shape.channels : 3;
    if (kind == RANDOM_RESIZED) {
        int32_t max_h = in->shape.height > 0 ? in->shape.height : st->height;
        int32_t max_w = in->shape.width > 0 ? in->shape.width : st->width;
        if (pb_resampler_init(&st->resampler, (enum pb_interp)o->interpolation, max_h, max_w,
                              st->height, st->width, channels) != PB_OK) {
            free(st);
            return PB_ERR_NOMEM;
        }
    }
    *out = *in;
    out->shape.height = st->height;
    out->shape.width = st->width;
    out->shape.channels = channels;
    out->shape.frames = in->shape.frames > 0 ? in->shape.frames : 1;
    out->max_bytes = pb_shape_bytes(&out->shape);
    *state = st;
    return PB_OK;
}

static void crop_min_input(const void *opts, int32_t *height, int32_t *width)
{
    const struct crop_opts *o = opts;
    if (o->size.count >= 1)
        crop_size(o, height, width);
}

/* The window's top-left corner along one axis of in pixels, for a crop of
 * out pixels; negative when the crop is larger (zero padding, centred). */
static int center_offset(int in, int out)
{
    if (in < out)
        return -((out - in) / 2);
    return (int)nearbyint((in - out) / 2.0); /* Python round(): halves to even */
}

/* The window of a center or random crop of an in_h x in_w image. */
static void crop_corner(const struct crop_state *st, int in_h, int in_w, uint64_t seed, int *top,
                        int *left)
{
    *top = center_offset(in_h, st->height);
    *left = center_offset(in_w, st->width);
    if (st->kind == RANDOM) {
        struct pb_rng rng = pb_rng_for(seed, SALT_RANDOM_CROP);
        if (in_h >= st->height)
            *top = (int)pb_rng_below(&rng, in_h - st->height + 1);
        if (in_w >= st->width)
            *left = (int)pb_rng_below(&rng, in_w - st->width + 1);
    }
}

/* The random_resized_crop window of a height x width image for a seed. */
static void rrc_box(const struct crop_opts *o, uint64_t seed, int height, int width,
                    struct pb_crop_box *box)
{
    struct pb_rng rng = pb_rng_for(seed, SALT_RANDOM_RESIZED_CROP);
    pb_random_resized_crop_box(&rng, height, width, o->scale.v[0], o->scale.v[1], o->ratio.v[0],
                               o->ratio.v[1], box);
}

/* The stages' window callbacks (pipelines/stage.h): the window process()
 * will read, drawn from the same seed with the same draws. */
static bool rrc_window(const void *opts, uint64_t seed, int height, int width,
                       struct pb_window *w)
{
    const struct crop_opts *o = opts;
    struct pb_crop_box box;
    rrc_box(o, seed, height, width, &box);
    *w = (struct pb_window){.top = box.top, .left = box.left, .height = box.height,
                            .width = box.width, .resamples = true};
    crop_size(o, &w->out_height, &w->out_width);
    return true;
}

static bool crop_window(enum crop_kind kind, const void *opts, uint64_t seed, int height,
                        int width, struct pb_window *w)
{
    struct crop_state st = {.kind = kind};
    crop_size(opts, &st.height, &st.width);
    if (height < st.height || width < st.width)
        return false; /* padded with zeros: the whole image is read */
    int top, left;
    crop_corner(&st, height, width, seed, &top, &left);
    *w = (struct pb_window){.top = top, .left = left, .height = st.height, .width = st.width,
                            .out_height = st.height, .out_width = st.width};
    return true;
}

static bool center_crop_window(const void *opts, uint64_t seed, int height, int width,
                               struct pb_window *w)
{
    return crop_window(CENTER, opts, seed, height, width, w);
}

static bool random_crop_window(const void *opts, uint64_t seed, int height, int width,
                               struct pb_window *w)
{
    return crop_window(RANDOM, opts, seed, height, width, w);
}

static int crop_process(void *state, struct pb_sample *s)
{
    struct crop_state *st = state;
    const struct pb_shape *in = &s->in_shape;
    int rc = pb_pixel_sample_check(s, st->name);
    if (rc != PB_OK)
        return rc;
    if (in->height < 1 || in->width < 1 || in->channels < 1) {
        snprintf(s->msg, s->msglen, "%s: %s: empty image (%dx%dx%d)",
                 s->path ? s->path : "(sample)", st->name, in->width, in->height, in->channels);
        return PB_ERR_DATA;
    }
    struct pb_shape shape = *in;
    shape.frames = in->frames > 0 ? in->frames : 1;
    shape.height = st->height;
    shape.width = st->width;
    size_t bytes = pb_shape_bytes(&shape);
    if (bytes > s->out_capacity) {
        s->out_bytes = bytes;
        return PB_ERR_NOSPACE;
    }
    size_t channels = (size_t)in->channels;
    size_t in_frame = (size_t)in->height * (size_t)in->width * channels;
    size_t out_frame = (size_t)st->height * (size_t)st->width * channels;

    /* A window the decoder already cut (fused decode and crop), else our own. */
    bool windowed = s->window_set && s->window.top >= 0 && s->window.left >= 0 &&
                    s->window.height >= 1 && s->window.width >= 1 &&
                    s->window.top + s->window.height <= in->height &&
                    s->window.left + s->window.width <= in->width;
    s->window_set = false;
    if (st->kind == RANDOM_RESIZED) {
        struct pb_crop_box box;
        if (windowed)
            box = (struct pb_crop_box){s->window.top, s->window.left, s->window.height,
                                       s->window.width};
        else
            rrc_box(&st->o, s->seed, in->height, in->width, &box);
        if (pb_resampler_prepare(&st->resampler, box.height, box.width, st->height, st->width,
                                 in->channels) != PB_OK) {
            snprintf(s->msg, s->msglen, "%s: out of memory for a %dx%d crop", st->name,
                     box.width, box.height);
            return PB_ERR;
        }
        size_t corner = ((size_t)box.top * (size_t)in->width + (size_t)box.left) * channels;
        for (int t = 0; t < shape.frames; t++)
            pb_resample_u8(&st->resampler, s->in + (size_t)t * in_frame + corner,
                           (size_t)in->width * channels, s->out + (size_t)t * out_frame);
    } else {
        int top = s->window.top, left = s->window.left;
        if (!windowed || s->window.height != st->height || s->window.width != st->width)
            crop_corner(st, in->height, in->width, s->seed, &top, &left);
        for (int t = 0; t < shape.frames; t++)
            pb_crop_u8(s->in + (size_t)t * in_frame, in->height, in->width, in->channels, top,
                       left, s->out + (size_t)t * out_frame, st->height, st->width);
    }
    s->out_bytes = bytes;
    s->out_shape = shape;
    return PB_OK;
}

static void crop_cleanup(void *state)
{
    struct crop_state *st = state;
    if (!st)
        return;
    pb_resampler_free(&st->resampler);
    free(st);
}

static int center_crop_validate(const void *opts, char *msg, size_t msglen)
{
    return check_opts(CENTER, "center_crop", opts, msg, msglen);
}

static int random_crop_validate(const void *opts, char *msg, size_t msglen)
{
    return check_opts(RANDOM, "random_crop", opts, msg, msglen);
}

static int rrc_validate(const void *opts, char *msg, size_t msglen)
{
    return check_opts(RANDOM_RESIZED, "random_resized_crop", opts, msg, msglen);
}

static int center_crop_init(void **state, const void *opts, const struct pb_stage_plan *in,
                            struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                            const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    return crop_init(CENTER, "center_crop", state, opts, in, out, msg, msglen);
}

static int random_crop_init(void **state, const void *opts, const struct pb_stage_plan *in,
                            struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                            const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    return crop_init(RANDOM, "random_crop", state, opts, in, out, msg, msglen);
}

static int rrc_init(void **state, const void *opts, const struct pb_stage_plan *in,
                    struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                    const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    return crop_init(RANDOM_RESIZED, "random_resized_crop", state, opts, in, out, msg, msglen);
}

/* ---- device: gpu ------------------------------------------------------ */

#if PB_HAVE_CUDA

/* Windows are the CPU stage's (crop_corner on each sample's seed), chosen
 * on the host per batch and staged per batch in flight. */
struct crop_gpu_state {
    struct crop_state *cpu;
    int max_samples, inflight;
    int32_t *box_host; /* pinned, inflight x max_samples x {top, left} */
    int32_t *box_dev;
    struct pb_gpu_out out;
};

static size_t crop_gpu_box_bytes(const struct crop_gpu_state *g)
{
    return (size_t)g->inflight * (size_t)g->max_samples * 2 * sizeof(int32_t);
}

static void crop_gpu_cleanup(void *state)
{
    struct crop_gpu_state *g = state;
    if (!g)
        return;
    crop_cleanup(g->cpu);
    pb_gpu_host_free(g->box_host);
    pb_gpu_free(g->box_dev, crop_gpu_box_bytes(g));
    pb_gpu_out_free(&g->out);
    free(g);
}

static int crop_gpu_init(enum crop_kind kind, const char *name, void **state, const void *opts,
                         const struct pb_stage_plan *in, struct pb_stage_plan *out, char *msg,
                         size_t msglen)
{
    struct crop_gpu_state *g = calloc(1, sizeof(*g));
    if (!g)
        return PB_ERR_NOMEM;
    *state = g;
    void *cpu = NULL;
    int rc = crop_init(kind, name, &cpu, opts, in, out, msg, msglen);
    if (rc != PB_OK)
        return rc;
    g->cpu = cpu;
    g->max_samples = in->max_samples > 0 ? in->max_samples : 1;
    g->inflight = in->inflight > 0 ? in->inflight : 1;
    g->box_host = pb_gpu_host_alloc(crop_gpu_box_bytes(g));
    g->box_dev = pb_gpu_alloc(crop_gpu_box_bytes(g));
    if (!g->box_host || !g->box_dev) {
        snprintf(msg, msglen, "%s (device: gpu): cannot allocate its windows", name);
        return PB_ERR_NOMEM;
    }
    return pb_gpu_out_init(&g->out, out, name, msg, msglen);
}

static int crop_gpu_batch(void *state, struct pb_batch *b, char *msg, size_t msglen)
{
    struct crop_gpu_state *g = state;
    const struct crop_state *st = g->cpu;
    int rc = pb_gpu_batch_check(b, st->name, msg, msglen);
    if (rc != PB_OK)
        return rc;
    const struct pb_shape *in = &b->dev_shape;
    struct pb_shape shape = *in;
    shape.frames = in->frames > 0 ? in->frames : 1;
    shape.height = st->height;
    shape.width = st->width;
    size_t sample_bytes = pb_shape_bytes(&shape);
    if ((int)b->samples > g->max_samples || (size_t)b->samples * sample_bytes > g->out.bytes) {
        snprintf(msg, msglen, "%s (device: gpu): batch larger than planned", st->name);
        return PB_ERR;
    }
    size_t base = (size_t)b->inflight * (size_t)g->max_samples * 2;
    for (uint32_t i = 0; i < b->samples; i++) {
        int top, left;
        crop_corner(st, in->height, in->width, b->seeds[i], &top, &left);
        g->box_host[base + 2 * i] = top;
        g->box_host[base + 2 * i + 1] = left;
    }
    rc = pb_gpu_upload(g->box_dev + base, g->box_host + base,
                       (size_t)b->samples * 2 * sizeof(int32_t), b->stream, msg, msglen);
    if (rc != PB_OK)
        return rc;
    rc = pb_gpu_check(pb_gpu_crop_u8(b->dev_data, b->dev_slot_bytes, (int)b->samples,
                                     shape.frames, in->height, in->width, in->channels,
                                     g->box_dev + base, g->out.dev, sample_bytes, st->height,
                                     st->width, b->stream),
                      st->name, msg, msglen);
    pb_gpu_out_publish(&g->out, b, sample_bytes, shape);
    return rc;
}

static int center_crop_gpu_init(void **state, const void *opts, const struct pb_stage_plan *in,
                                struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                                const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    return crop_gpu_init(CENTER, "center_crop", state, opts, in, out, msg, msglen);
}

static int random_crop_gpu_init(void **state, const void *opts, const struct pb_stage_plan *in,
                                struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                                const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    return crop_gpu_init(RANDOM, "random_crop", state, opts, in, out, msg, msglen);
}

#endif /* PB_HAVE_CUDA */

PB_GPU_STAGE(center_crop_gpu, "center_crop", crop_opts, struct crop_opts, center_crop_validate,
             center_crop_gpu_init, crop_gpu_batch, crop_gpu_cleanup);

PB_GPU_STAGE(random_crop_gpu, "random_crop", crop_opts, struct crop_opts, random_crop_validate,
             random_crop_gpu_init, crop_gpu_batch, crop_gpu_cleanup);

const struct pb_stage_ops pb_stage_center_crop = {
    .name = "center_crop",
    .summary = "Crop the centre window of each image or clip (zero-padded when larger).",
    .flags = PB_STAGE_WORKER,
    PB_DEVICE_OPTS(crop_opts, struct crop_opts),
    .gpu = &center_crop_gpu,
    .validate = center_crop_validate,
    .init = center_crop_init,
    .min_input = crop_min_input,
    .window = center_crop_window,
    .process = crop_process,
    .cleanup = crop_cleanup,
};

const struct pb_stage_ops pb_stage_random_crop = {
    .name = "random_crop",
    .summary = "Crop a uniformly placed window, the same for every frame of a clip.",
    .flags = PB_STAGE_WORKER,
    PB_DEVICE_OPTS(crop_opts, struct crop_opts),
    .gpu = &random_crop_gpu,
    .validate = random_crop_validate,
    .init = random_crop_init,
    .min_input = crop_min_input,
    .window = random_crop_window,
    .process = crop_process,
    .cleanup = crop_cleanup,
};

const struct pb_stage_ops pb_stage_random_resized_crop = {
    .name = "random_resized_crop",
    .summary = "Crop a random area and aspect ratio and resize it (fused), as torchvision.",
    .flags = PB_STAGE_WORKER,
    .opts = rrc_opts,
    .opts_size = sizeof(struct crop_opts),
    .validate = rrc_validate,
    .init = rrc_init,
    .min_input = crop_min_input,
    .window = rrc_window,
    .process = crop_process,
    .cleanup = crop_cleanup,
};
