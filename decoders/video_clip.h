/* The `video` decoder's pure parts (decoders/video_clip.c), shared with
 * its visits (decoders/video_visit.c), the generator and tests: which
 * frames a clip takes, and the frame number stamp generated videos carry
 * in their pixels. The decoder itself is decoders/video.c. */
#ifndef PB_DECODERS_VIDEO_CLIP_H
#define PB_DECODERS_VIDEO_CLIP_H

#include <stdint.h>

enum pb_video_sampling { PB_VIDEO_RANDOM = 0, PB_VIDEO_UNIFORM, PB_VIDEO_SEQUENTIAL };
enum pb_video_short { PB_VIDEO_PAD = 0, PB_VIDEO_LOOP, PB_VIDEO_SKIP };

/* Fills indices[0..clip_frames) with the frame numbers of one clip of a
 * video of frame_count frames: clip_frames frames, frame_stride apart, so
 * a clip spans span = (clip_frames - 1) * frame_stride + 1 frames.
 *
 * Where the clip starts, for a video at least span frames long:
 *   random:     uniform over [0, frame_count - span], drawn from seed;
 *   uniform:    clip number `clip` of clips_per_video starts spread evenly
 *               over [0, frame_count - span] (one clip: the middle);
 *   sequential: clip number `clip` of back-to-back clips from frame 0,
 *               start = clip * clip_frames * frame_stride (so the stride
 *               grid runs on across clips), wrapping round at the end.
 * A shorter video starts at 0 and, past its end, short_video says:
 *   pad:  repeat the clip's last frame in the video; loop: frame numbers
 *   wrap round (i mod frame_count); skip: no clip (PB_ERR_DATA).
 * Returns PB_OK, or PB_ERR_DATA for skip or an empty video. */
int pb_video_clip_indices(int64_t frame_count, int64_t clip_frames, int64_t frame_stride,
                          int64_t clips_per_video, int sampling, int short_video, uint64_t seed,
                          int64_t clip, int64_t *indices);

/* Side of the square blocks of the frame-number stamp for a frame size. */
int pb_video_stamp_block_px(int width, int height);

/* Reads the 16-bit frame number generated videos carry in their top left
 * corner back from an RGB24 frame of the size they were generated at. */
int64_t pb_video_frame_number(const uint8_t *rgb, int width, int height);

/* Rotates src (h x w RGB) clockwise by deg (90, 180 or 270) into dst,
 * which holds as many bytes. */
void pb_video_rotate_rgb(const uint8_t *src, int h, int w, int deg, uint8_t *dst);

#endif
