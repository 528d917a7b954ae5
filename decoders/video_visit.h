/* One decode for many clips: with `clips_per_visit: K`, every visit of a
 * video file gives K clips, each its own sample (the sampler puts a
 * visit's K samples one after the other: pb_sampler_init_visits). The
 * first sample of a visit plans all K clips, orders them by position in
 * the file, merges those that overlap into stretches, and decoders/video.c
 * decodes each stretch once, in file order, into a per-worker buffer of K
 * clips; that sample and the visit's next ones are copied out of it. So
 * overlapping clips share their decoded frames, and clips in one GOP share
 * the decode from its keyframe (torchcodec's and decord's batch sampling).
 *
 * The planning is pure (no FFmpeg), so tests compare it with single-clip
 * decodes of the same positions. */
#ifndef PB_DECODERS_VIDEO_VISIT_H
#define PB_DECODERS_VIDEO_VISIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decoders/sample.h"

/* One wanted frame of a decode: its number and the clip frame slot it
 * goes to (clip k's frame j is slot k x clip_frames + j). */
struct pb_video_target {
    int64_t frame;
    int32_t slot;
};

/* Sorts targets by frame, then slot (insertion: they come mostly sorted). */
void pb_video_sort_targets(struct pb_video_target *t, int n);

/* The largest clips_per_visit. */
#define PB_VIDEO_MAX_CLIPS_PER_VISIT 64

struct pb_video_visit {
    int clips;              /* K                                          */
    int64_t clip_frames;
    /* The visit held: valid once all its clips are decoded. */
    bool valid;
    char path[4096];
    uint64_t seed;
    int out_h, out_w;
    size_t clip_bytes;      /* one clip, RGB                              */
    uint8_t *frames;        /* K clips back to back, grown once per size  */
    size_t capacity;
    int64_t *indices;       /* K x clip_frames frame numbers              */
    int order[PB_VIDEO_MAX_CLIPS_PER_VISIT];          /* clips by start    */
    int stretch_first[PB_VIDEO_MAX_CLIPS_PER_VISIT + 1];
    int stretch_count;
};

/* Frame numbers of the K clips of one visit into indices (clip k's at
 * k x clip_frames): random, K starts drawn from seed (one per clip);
 * uniform, K starts spread evenly. Shorter videos as short_video says
 * (see pb_video_clip_indices). PB_OK or PB_ERR_DATA (short_video: skip). */
int pb_video_visit_plan(int64_t frame_count, int64_t clip_frames, int64_t frame_stride,
                        int sampling, int short_video, uint64_t seed, int clips,
                        int64_t *indices);

/* Orders the clips by their first frame (order[]) and groups them into
 * stretches: a clip joins the stretch before it when it starts at most
 * one frame after that stretch's last frame, so no frame is decoded twice.
 * Stretch s holds order[stretch_first[s] .. stretch_first[s + 1]).
 * Returns the number of stretches. */
int pb_video_visit_stretches(const int64_t *indices, int clips, int64_t clip_frames, int *order,
                             int *stretch_first);

/* Per-worker state for visits of clips clips of clip_frames frames, or
 * NULL when out of memory. Release with pb_video_visit_free (NULL is
 * fine). */
struct pb_video_visit *pb_video_visit_new(int clips, int64_t clip_frames);
void pb_video_visit_free(struct pb_video_visit *v);

/* Whether v holds the decoded visit sample s belongs to (same file and
 * visit seed). */
bool pb_video_visit_holds(const struct pb_video_visit *v, const struct pb_sample *s);

/* Starts decoding s's visit: plans its clips and stretches and makes room
 * for K clips of out_h x out_w RGB (grown only for a larger size).
 * PB_OK, PB_ERR_DATA with the sentence in s->msg, or PB_ERR_NOMEM. */
int pb_video_visit_begin(struct pb_video_visit *v, const struct pb_sample *s,
                         int64_t frame_count, int64_t frame_stride, int sampling,
                         int short_video, int out_h, int out_w);

/* The targets of stretch number stretch, unsorted, into t (room for
 * K x clip_frames); returns how many. */
int pb_video_visit_targets(const struct pb_video_visit *v, int stretch,
                           struct pb_video_target *t);

/* Ends the decode begun by pb_video_visit_begin: ok says every clip is
 * in the buffer. */
void pb_video_visit_end(struct pb_video_visit *v, bool ok);

/* Copies clip s->clip of the held visit into s->out and sets its size and
 * shape (THWC RGB). PB_OK, or PB_ERR_NOSPACE with out_bytes set. */
int pb_video_visit_deliver(const struct pb_video_visit *v, struct pb_sample *s);

#endif
