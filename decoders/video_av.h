/* The `video` decoder's FFmpeg services (decoders/video_av.c): FFmpeg's
 * last error line on each thread, and NVDEC through
 * FFmpeg's CUDA hwaccel, for pipeline.decode.hwaccel: cuda | auto. One
 * device reference per worker, opened at the decoder's init; frames are
 * decoded on the GPU's video engine and copied back for the CPU's colour
 * conversion (they do not stay on the device). The NVIDIA driver provides
 * libnvcuvid at run time; nothing here links against CUDA. */
#ifndef PB_DECODERS_VIDEO_AV_H
#define PB_DECODERS_VIDEO_AV_H

#include <stdbool.h>
#include <stddef.h>

#include <libavcodec/avcodec.h>

enum pb_video_hwaccel { PB_VIDEO_HW_NONE = 0, PB_VIDEO_HW_CUDA, PB_VIDEO_HW_AUTO };

/* Sends FFmpeg's error lines to a per-thread buffer (once per process). */
void pb_video_av_install_log(void);

/* This thread's last FFmpeg error line ("moov atom not found"), the
 * detail av_strerror lacks; "" when none since the last clear. */
const char *pb_video_av_last_log(void);
void pb_video_av_clear_log(void);

/* Opens the worker's CUDA device for mode (NULL in *device for none).
 * cuda without a device: PB_ERR_CONFIG (the config cannot run here) with the reason (FFmpeg's
 * error and its log line) in msg; auto without one: PB_OK with *device
 * NULL, so the CPU decodes. */
int pb_video_hw_open(int mode, AVBufferRef **device, char *msg, size_t msglen);

/* Before avcodec_open2: dec decodes on device (NVDEC) where the codec
 * offers CUDA frames, else on the CPU. Returns 0 or an AVERROR. */
int pb_video_hw_attach(AVCodecContext *dec, AVBufferRef *device);

/* frame itself for a CPU frame; for a CUDA frame, the copy of it made in
 * download (reused per worker). NULL with *averr set when the copy fails. */
const AVFrame *pb_video_hw_download(const AVFrame *frame, AVFrame *download, int *averr);

/* Whether frame lives on the GPU (NVDEC decoded it). */
bool pb_video_hw_frame(const AVFrame *frame);

#endif
