/* The video decoder's FFmpeg services (decoders/video_av.h): FFmpeg's last error line per
 * thread, and NVDEC through FFmpeg's CUDA hwaccel. */
#include "decoders/video_av.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>

#include "bench/base/pb.h"

/* ---- FFmpeg messages ---------------------------------------------------- */

/* Formatted only when FFmpeg reports an error. */
static _Thread_local char last_log[160];

static void log_callback(void *avcl, int level, const char *fmt, va_list args)
{
    (void)avcl;
    if (level > AV_LOG_ERROR)
        return;
    char line[sizeof(last_log)];
    vsnprintf(line, sizeof(line), fmt, args);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = 0;
    if (n)
        memcpy(last_log, line, n + 1);
}

void pb_video_av_install_log(void)
{
    static atomic_flag done = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&done))
        av_log_set_callback(log_callback);
}

const char *pb_video_av_last_log(void)
{
    return last_log;
}

void pb_video_av_clear_log(void)
{
    last_log[0] = 0;
}

/* ---- NVDEC -------------------------------------------------------------- */

/* The decoder's pixel format: CUDA frames where the codec offers them
 * (NVDEC takes this stream), else FFmpeg's first software choice (the CPU
 * decodes; the hw_frames counter stays behind frames_decoded and says so). */
static enum AVPixelFormat cuda_format(AVCodecContext *dec, const enum AVPixelFormat *offered)
{
    (void)dec;
    for (const enum AVPixelFormat *f = offered; *f != AV_PIX_FMT_NONE; f++)
        if (*f == AV_PIX_FMT_CUDA)
            return *f;
    for (const enum AVPixelFormat *f = offered; *f != AV_PIX_FMT_NONE; f++) {
        const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(*f);
        if (d && !(d->flags & AV_PIX_FMT_FLAG_HWACCEL))
            return *f;
    }
    return AV_PIX_FMT_NONE;
}

int pb_video_hw_open(int mode, AVBufferRef **device, char *msg, size_t msglen)
{
    *device = NULL;
    if (mode == PB_VIDEO_HW_NONE)
        return PB_OK;
    last_log[0] = 0;
    int ret = av_hwdevice_ctx_create(device, AV_HWDEVICE_TYPE_CUDA, NULL, NULL, 0);
    if (ret >= 0 || mode == PB_VIDEO_HW_AUTO)
        return PB_OK;
    char why[128];
    av_strerror(ret, why, sizeof(why));
    snprintf(msg, msglen,
             "pipeline.decode.hwaccel: cuda: no CUDA device for NVDEC (FFmpeg: %s%s%s); use "
             "hwaccel: auto to decode on the CPU where there is none, or none",
             why, last_log[0] ? "; " : "", last_log);
    return PB_ERR_CONFIG; /* this config cannot run here: exit 2, as gpu: required does */
}

int pb_video_hw_attach(AVCodecContext *dec, AVBufferRef *device)
{
    if (!device)
        return 0;
    dec->hw_device_ctx = av_buffer_ref(device);
    if (!dec->hw_device_ctx)
        return AVERROR(ENOMEM);
    dec->get_format = cuda_format;
    dec->thread_count = 1;     /* NVDEC decodes; threads would only copy */
    dec->extra_hw_frames = 4;  /* the frame the decoder holds between targets */
    return 0;
}

bool pb_video_hw_frame(const AVFrame *frame)
{
    return frame->format == AV_PIX_FMT_CUDA;
}

const AVFrame *pb_video_hw_download(const AVFrame *frame, AVFrame *download, int *averr)
{
    if (!pb_video_hw_frame(frame))
        return frame;
    av_frame_unref(download);
    *averr = av_hwframe_transfer_data(download, frame, 0);
    return *averr < 0 ? NULL : download;
}
