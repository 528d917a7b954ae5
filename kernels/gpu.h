/* CUDA kernels on batches in device memory, callable from C (kernels/gpu.cu,
 * built when the CUDA toolkit is found: PB_HAVE_CUDA).
 *
 * A batch is n samples back to back, `stride` bytes apart; a sample is a
 * clip of `frames` frames (1 for an image), each frame height x width x
 * channels uint8 packed rows (THWC), as the CPU stages produce. Every
 * kernel launches asynchronously on `stream` (a cudaStream_t) and returns
 * the launch's cudaError_t as an int: 0 on success.
 *
 * The uint8 kernels are bit-exact with their CPU counterparts in
 * kernels/image.h: the same coefficient tables, the same float operations
 * in the same order (no fused multiply-add). normalize reads the CPU's
 * lookup table, so float32 and float16 outputs are bit-exact too. */
#ifndef PB_KERNELS_GPU_H
#define PB_KERNELS_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/image.h"
#include "kernels/tensor.h"

struct CUstream_st; /* cudaStream_t is struct CUstream_st * */

/* Normalizes each sample as pb_normalize_u8 does: lut_dev is a device copy
 * of a struct pb_normalize_lut; dtype F32, F16 or U8; layout THWC, TCHW or
 * CTHW; in_channels 1 with more out_channels repeats the gray value. */
int pb_gpu_normalize_u8(const uint8_t *src, size_t src_stride, void *dst, size_t dst_stride, int n,
                        int frames, int height, int width, int in_channels, int out_channels,
                        const struct pb_normalize_lut *lut_dev, enum pb_dtype dtype,
                        enum pb_layout layout, struct CUstream_st *stream);

/* Sample i (every frame) is mirrored left to right when flip_dev[i] is
 * non-zero and copied otherwise (pb_flip_h_u8). src and dst differ. */
int pb_gpu_flip_h_u8(const uint8_t *src, size_t src_stride, uint8_t *dst, size_t dst_stride, int n,
                     int frames, int height, int width, int channels, const uint8_t *flip_dev,
                     struct CUstream_st *stream);

/* Crops out_h x out_w windows: sample i's window has its top-left corner at
 * (box_dev[2i], box_dev[2i+1]) of its src_h x src_w frames; pixels outside
 * the image are zero (pb_crop_u8). */
int pb_gpu_crop_u8(const uint8_t *src, size_t src_stride, int n, int frames, int src_h, int src_w,
                   int channels, const int32_t *box_dev, uint8_t *dst, size_t dst_stride,
                   int out_h, int out_w, struct CUstream_st *stream);

/* A resampler's tables in device memory, uploaded from a CPU resampler
 * prepared for the batch's sizes (pb_resampler_prepare), so the GPU uses
 * the very coefficients the CPU does. */
struct pb_gpu_resampler {
    enum pb_interp interp;
    int channels, in_h, in_w, out_h, out_w, taps_x, taps_y;
    int32_t *start_x, *start_y; /* device */
    int32_t *coef_x, *coef_y;   /* device */
    size_t cap_x, cap_y;        /* capacities, elements */
};

/* Copies r's tables to the device (synchronously; at init or when the
 * input size changes), growing g's device arrays when needed. g starts
 * zeroed. Returns 0 or a cudaError_t. */
int pb_gpu_resampler_upload(struct pb_gpu_resampler *g, const struct pb_resampler *r);
void pb_gpu_resampler_free(struct pb_gpu_resampler *g);

/* Resamples every frame of every sample (in_h x in_w packed frames) to
 * out_h x out_w, bit-exact with pb_resample_u8 on the same tables. */
int pb_gpu_resample_u8(const struct pb_gpu_resampler *g, const uint8_t *src, size_t src_stride,
                       int n, int frames, uint8_t *dst, size_t dst_stride,
                       struct CUstream_st *stream);

/* The simulated training step: keeps `blocks` blocks busy (one per SM
 * makes the GPU look fully used) until ns nanoseconds of the device's
 * global timer have passed since the kernel started. */
int pb_gpu_busy(uint64_t ns, int blocks, struct CUstream_st *stream);

#endif
