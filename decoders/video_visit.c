/* One decode for many clips (decoders/video_visit.h): the visit's plan,
 * its stretches and the clip buffer. The decoding itself is
 * decoders/video.c's. */
#include "decoders/video_visit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "decoders/video_clip.h"

void pb_video_sort_targets(struct pb_video_target *t, int n)
{
    for (int i = 1; i < n; i++) {
        struct pb_video_target x = t[i];
        int j = i - 1;
        while (j >= 0 && (t[j].frame > x.frame || (t[j].frame == x.frame && t[j].slot > x.slot))) {
            t[j + 1] = t[j];
            j--;
        }
        t[j + 1] = x;
    }
}

int pb_video_visit_plan(int64_t frame_count, int64_t clip_frames, int64_t frame_stride,
                        int sampling, int short_video, uint64_t seed, int clips,
                        int64_t *indices)
{
    for (int k = 0; k < clips; k++) {
        int64_t *clip = indices + (size_t)k * (size_t)clip_frames;
        int rc = sampling == PB_VIDEO_UNIFORM
                     ? pb_video_clip_indices(frame_count, clip_frames, frame_stride, clips,
                                             sampling, short_video, seed, k, clip)
                     : pb_video_clip_indices(frame_count, clip_frames, frame_stride, 1,
                                             PB_VIDEO_RANDOM, short_video,
                                             pb_mix64(seed + (uint64_t)k), 0, clip);
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

/* The first and last frame clip k takes (loop and pad make them other
 * than its first and last index). */
static void clip_range(const int64_t *indices, int64_t clip_frames, int k, int64_t *lo,
                       int64_t *hi)
{
    const int64_t *clip = indices + (size_t)k * (size_t)clip_frames;
    *lo = *hi = clip[0];
    for (int64_t j = 1; j < clip_frames; j++) {
        *lo = clip[j] < *lo ? clip[j] : *lo;
        *hi = clip[j] > *hi ? clip[j] : *hi;
    }
}

int pb_video_visit_stretches(const int64_t *indices, int clips, int64_t clip_frames, int *order,
                             int *stretch_first)
{
    int64_t lo[PB_VIDEO_MAX_CLIPS_PER_VISIT], hi[PB_VIDEO_MAX_CLIPS_PER_VISIT];
    for (int k = 0; k < clips; k++) {
        clip_range(indices, clip_frames, k, &lo[k], &hi[k]);
        int i = k; /* insertion by first frame, ties by clip number */
        while (i > 0 && lo[order[i - 1]] > lo[k]) {
            order[i] = order[i - 1];
            i--;
        }
        order[i] = k;
    }
    int count = 0;
    int64_t end = 0;
    for (int i = 0; i < clips; i++) {
        int k = order[i];
        if (i == 0 || lo[k] > end + 1) {
            stretch_first[count++] = i;
            end = hi[k];
        } else if (hi[k] > end) {
            end = hi[k];
        }
    }
    stretch_first[count] = clips;
    return count;
}

struct pb_video_visit *pb_video_visit_new(int clips, int64_t clip_frames)
{
    struct pb_video_visit *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->clips = clips;
    v->clip_frames = clip_frames;
    v->indices = calloc((size_t)clips * (size_t)clip_frames, sizeof(*v->indices));
    if (!v->indices) {
        free(v);
        return NULL;
    }
    return v;
}

void pb_video_visit_free(struct pb_video_visit *v)
{
    if (!v)
        return;
    free(v->indices);
    free(v->frames);
    free(v);
}

bool pb_video_visit_holds(const struct pb_video_visit *v, const struct pb_sample *s)
{
    uint64_t seed = s->clips ? s->visit_seed : s->seed;
    return v->valid && s->path && v->seed == seed && strcmp(v->path, s->path) == 0;
}

int pb_video_visit_begin(struct pb_video_visit *v, const struct pb_sample *s,
                         int64_t frame_count, int64_t frame_stride, int sampling,
                         int short_video, int out_h, int out_w)
{
    v->valid = false;
    v->seed = s->clips ? s->visit_seed : s->seed;
    pb_strlcpy(v->path, s->path, sizeof(v->path));
    int rc = pb_video_visit_plan(frame_count, v->clip_frames, frame_stride, sampling, short_video,
                                 v->seed, v->clips, v->indices);
    if (rc != PB_OK) {
        snprintf(s->msg, s->msglen,
                 "%s: video of %lld frames is shorter than a clip of %lld frames at stride %lld "
                 "(short_video: skip)",
                 s->path, (long long)frame_count, (long long)v->clip_frames,
                 (long long)frame_stride);
        return rc;
    }
    v->stretch_count =
        pb_video_visit_stretches(v->indices, v->clips, v->clip_frames, v->order, v->stretch_first);
    v->out_h = out_h;
    v->out_w = out_w;
    v->clip_bytes = (size_t)out_h * (size_t)out_w * 3 * (size_t)v->clip_frames;
    size_t need = v->clip_bytes * (size_t)v->clips;
    if (need > v->capacity) { /* once per larger video, not per sample */
        free(v->frames);
        v->frames = malloc(need);
        v->capacity = v->frames ? need : 0;
        if (!v->frames)
            return PB_ERR_NOMEM;
    }
    return PB_OK;
}

int pb_video_visit_targets(const struct pb_video_visit *v, int stretch,
                           struct pb_video_target *t)
{
    int n = 0;
    for (int i = v->stretch_first[stretch]; i < v->stretch_first[stretch + 1]; i++) {
        int k = v->order[i];
        for (int64_t j = 0; j < v->clip_frames; j++, n++)
            t[n] = (struct pb_video_target){
                .frame = v->indices[(size_t)k * (size_t)v->clip_frames + (size_t)j],
                .slot = (int32_t)(k * v->clip_frames + j)};
    }
    return n;
}

void pb_video_visit_end(struct pb_video_visit *v, bool ok)
{
    v->valid = ok;
}

int pb_video_visit_deliver(const struct pb_video_visit *v, struct pb_sample *s)
{
    int k = (int)(s->clip % (uint32_t)v->clips);
    if (v->clip_bytes > s->out_capacity) {
        s->out_bytes = v->clip_bytes;
        snprintf(s->msg, s->msglen, "%s: a clip of %lld frames of %dx%d needs %zu bytes, have %zu",
                 s->path, (long long)v->clip_frames, v->out_w, v->out_h, v->clip_bytes,
                 s->out_capacity);
        return PB_ERR_NOSPACE;
    }
    memcpy(s->out, v->frames + (size_t)k * v->clip_bytes, v->clip_bytes);
    s->out_bytes = v->clip_bytes;
    s->out_shape = (struct pb_shape){.dtype = PB_DTYPE_U8, .frames = (int32_t)v->clip_frames,
                                     .height = v->out_h, .width = v->out_w, .channels = 3,
                                     .layout = PB_LAYOUT_THWC};
    return PB_OK;
}
