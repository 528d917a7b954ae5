/* What the stages on decoded pixels share (resize, the crops, flip,
 * color_jitter, normalize): the check at init that the plan gives them
 * uint8 pixels, and the same check on each sample they are given. */
#ifndef PB_PIXEL_STAGE_H
#define PB_PIXEL_STAGE_H

#include <stdio.h>

#include "bench/base/pb.h"
#include "pipelines/stage.h"

/* Whether a shape is decoded pixels: uint8, frames x height x width x
 * channels. */
static inline bool pb_shape_is_pixels(const struct pb_shape *shape)
{
    return shape->dtype == PB_DTYPE_U8 && shape->layout == PB_LAYOUT_THWC;
}

/* At init: PB_OK when the stage's planned input is decoded pixels, else
 * PB_ERR_CONFIG with a message that says where the stage belongs (place,
 * e.g. "after decode"). */
static inline int pb_pixel_plan_check(const struct pb_stage_plan *in, const char *stage,
                                      const char *place, char *msg, size_t msglen)
{
    if (pb_shape_is_pixels(&in->shape))
        return PB_OK;
    snprintf(msg, msglen, "stage '%s' needs decoded uint8 pixels; place it %s", stage, place);
    return PB_ERR_CONFIG;
}

/* Per sample: PB_OK when its input is decoded pixels, else PB_ERR with the
 * sample's message set. */
static inline int pb_pixel_sample_check(struct pb_sample *s, const char *stage)
{
    if (pb_shape_is_pixels(&s->in_shape))
        return PB_OK;
    snprintf(s->msg, s->msglen, "%s: input is %s, not uint8 pixels", stage,
             pb_dtype_name(s->in_shape.dtype));
    return PB_ERR;
}

/* Per sample, for stages whose output has the input's shape: the check
 * above, then that the input holds the bytes its shape says (PB_ERR) and
 * that they fit the output (PB_ERR_NOSPACE with out_bytes set). Sets
 * *bytes to that size. */
static inline int pb_pixel_same_size_check(struct pb_sample *s, const char *stage, size_t *bytes)
{
    int rc = pb_pixel_sample_check(s, stage);
    if (rc != PB_OK)
        return rc;
    *bytes = pb_shape_bytes(&s->in_shape);
    if (*bytes > s->in_bytes) {
        snprintf(s->msg, s->msglen, "%s: input of %zu bytes is smaller than its shape says (%zu)",
                 stage, s->in_bytes, *bytes);
        return PB_ERR;
    }
    if (*bytes > s->out_capacity) {
        s->out_bytes = *bytes;
        return PB_ERR_NOSPACE;
    }
    return PB_OK;
}

#endif
