/* The `video` decoder's pure parts (decoders/video_clip.h): which frames a clip
 * takes, and the frame number stamp generated videos carry. No FFmpeg. */
#include "decoders/video_clip.h"

#include <string.h>

#include "bench/base/pb.h"

int pb_video_clip_indices(int64_t frame_count, int64_t clip_frames, int64_t frame_stride,
                          int64_t clips_per_video, int sampling, int short_video, uint64_t seed,
                          int64_t clip, int64_t *indices)
{
    if (frame_count < 1 || clip_frames < 1 || frame_stride < 1)
        return PB_ERR_DATA;
    int64_t span = (clip_frames - 1) * frame_stride + 1;
    if (span > frame_count) {
        if (short_video == PB_VIDEO_SKIP)
            return PB_ERR_DATA;
        int64_t last = (frame_count - 1) / frame_stride * frame_stride;
        for (int64_t j = 0; j < clip_frames; j++) {
            int64_t i = j * frame_stride;
            indices[j] = i < frame_count ? i : short_video == PB_VIDEO_LOOP ? i % frame_count : last;
        }
        return PB_OK;
    }
    int64_t max_start = frame_count - span, start = 0;
    int64_t clips = clips_per_video > 0 ? clips_per_video : 1;
    switch (sampling) {
    case PB_VIDEO_RANDOM: start = (int64_t)(pb_mix64(seed) % (uint64_t)(max_start + 1)); break;
    case PB_VIDEO_UNIFORM: {
        int64_t k = ((clip % clips) + clips) % clips;
        start = clips == 1 ? max_start / 2 : k * max_start / (clips - 1);
        break;
    }
    default: {
        int64_t step = clip_frames * frame_stride;
        int64_t positions = max_start / step + 1;
        int64_t k = ((clip % clips) + clips) % clips;
        start = (k % positions) * step;
        break;
    }
    }
    for (int64_t j = 0; j < clip_frames; j++)
        indices[j] = start + j * frame_stride;
    return PB_OK;
}

int pb_video_stamp_block_px(int width, int height)
{
    int block = width / 8 < height / 4 ? width / 8 : height / 4;
    if (block > 16)
        block = 16;
    if (block < 2)
        block = 2;
    return block & ~1;
}

int64_t pb_video_frame_number(const uint8_t *rgb, int width, int height)
{
    int block = pb_video_stamp_block_px(width, height);
    int64_t number = 0;
    for (int bit = 0; bit < 16; bit++) {
        int cx = (bit % 8) * block + block / 2, cy = (bit / 8) * block + block / 2;
        unsigned sum = 0;
        for (int dy = -1; dy <= 0; dy++)
            for (int dx = -1; dx <= 0; dx++) {
                const uint8_t *p = rgb + ((size_t)(cy + dy) * (size_t)width + (size_t)(cx + dx)) * 3;
                sum += p[0] + p[1] + p[2];
            }
        number = (number << 1) | (sum > 4u * 3u * 128u);
    }
    return number;
}

void pb_video_rotate_rgb(const uint8_t *src, int h, int w, int deg, uint8_t *dst)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = src + ((size_t)y * (size_t)w + (size_t)x) * 3;
            size_t at;
            if (deg == 90)
                at = (size_t)x * (size_t)h + (size_t)(h - 1 - y);
            else if (deg == 180)
                at = (size_t)(h - 1 - y) * (size_t)w + (size_t)(w - 1 - x);
            else
                at = (size_t)(w - 1 - x) * (size_t)h + (size_t)y;
            memcpy(dst + at * 3, p, 3);
        }
}
