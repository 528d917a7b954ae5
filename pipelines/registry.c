/* The compile-time lists of stages and decoders. A new stage or decoder is
 * one file plus one line here; entries whose dependencies are missing stay
 * listed with their unavailable_reason. */
#include "decoders/decoder.h"
#include "pipelines/stage.h"

#include <string.h>

#define PB_STAGES(X)       \
    X(read)                \
    X(decode)              \
    X(resize)              \
    X(center_crop)         \
    X(random_crop)         \
    X(random_resized_crop) \
    X(flip)                \
    X(color_jitter)        \
    X(normalize)           \
    X(python)              \
    X(to_device)

#define PB_DECODERS(X) \
    X(null)            \
    X(jpeg)            \
    X(image)           \
    X(auto)            \
    X(video)

#define DECLARE_STAGE(n) extern const struct pb_stage_ops pb_stage_##n;
#define LIST_STAGE(n) &pb_stage_##n,
#define DECLARE_DECODER(n) extern const struct pb_decoder_ops pb_decoder_##n;
#define LIST_DECODER(n) &pb_decoder_##n,

PB_STAGES(DECLARE_STAGE)
PB_DECODERS(DECLARE_DECODER)

static const struct pb_stage_ops *const stages[] = {PB_STAGES(LIST_STAGE)};
static const struct pb_decoder_ops *const decoders[] = {PB_DECODERS(LIST_DECODER)};

const struct pb_stage_ops *pb_stage_find(const char *name)
{
    for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++)
        if (strcmp(stages[i]->name, name) == 0)
            return stages[i];
    return NULL;
}

const char *const pb_device_names[] = {"cpu", "gpu", NULL};

const struct pb_stage_ops *pb_stage_for_device(const struct pb_stage_ops *ops, const void *opts)
{
    if (!ops || !ops->has_device || !opts)
        return ops;
    int device = *(const int *)((const char *)opts + ops->device_offset);
    if (device == PB_DEVICE_GPU && ops->gpu)
        return ops->gpu;
    if (device == PB_DEVICE_CPU)
        return pb_stage_find(ops->name);
    return ops;
}

const struct pb_stage_ops *const *pb_stage_all(size_t *count)
{
    *count = sizeof(stages) / sizeof(stages[0]);
    return stages;
}

const struct pb_decoder_ops *pb_decoder_find(const char *name)
{
    for (size_t i = 0; i < sizeof(decoders) / sizeof(decoders[0]); i++)
        if (strcmp(decoders[i]->name, name) == 0)
            return decoders[i];
    return NULL;
}

const struct pb_decoder_ops *const *pb_decoder_all(size_t *count)
{
    *count = sizeof(decoders) / sizeof(decoders[0]);
    return decoders;
}
