/* CUDA kernels on batches in device memory (kernels/gpu.h).
 *
 * Every kernel takes a 3D grid: x runs over the elements (or pixels) of one
 * frame, y over the frames of a sample, z over the samples of the batch;
 * y and z loop when a batch has more frames or samples than a grid
 * dimension holds. One thread writes one output element (normalize: one
 * pixel's out_channels elements), so every output is written exactly once.
 *
 * Bit-exactness with kernels/image.c: float products and sums go through
 * __fmul_rn and __fadd_rn, which nvcc never fuses into a multiply-add, in
 * the order the CPU loops use. The CPU side does not fuse either: gcc in
 * ISO C11 mode compiles with -ffp-contract=off, and x86-64 without -march
 * has no FMA instruction. */
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <cuda_runtime.h>

extern "C" {
#include "kernels/gpu.h"
}

namespace
{

const int block_threads = 256;
const unsigned max_grid_yz = 65535;

/* Grid for per-frame work of frame_items items: x covers one frame, y the
 * frames, z the samples. False when a frame has more items than an int
 * index holds. */
bool frame_grid(size_t frame_items, int frames, int n, dim3 *grid)
{
    if (frame_items > (size_t)INT_MAX)
        return false;
    size_t blocks = (frame_items + block_threads - 1) / block_threads;
    grid->x = (unsigned)blocks;
    grid->y = (unsigned)frames < max_grid_yz ? (unsigned)frames : max_grid_yz;
    grid->z = (unsigned)n < max_grid_yz ? (unsigned)n : max_grid_yz;
    return true;
}

int launch_result()
{
    return (int)cudaGetLastError();
}

/* ---- normalize ------------------------------------------------------- */

enum normalize_kind { NORMALIZE_F32, NORMALIZE_F16, NORMALIZE_U8 };

struct normalize_args {
    const uint8_t *src;
    size_t src_stride;
    char *dst;
    size_t dst_stride;
    int n, frames, pixels, in_channels, out_channels;
    enum pb_layout layout;
    const struct pb_normalize_lut *lut;
};

/* One thread per pixel: reads its in_channels bytes (consecutive threads,
 * consecutive pixels) and writes out_channels elements. The block first
 * copies the rows of the table it needs into shared memory. */
template <typename T, normalize_kind kind> __global__ void normalize_kernel(normalize_args a)
{
    __shared__ T table[kind == NORMALIZE_U8 ? 1 : PB_NORMALIZE_MAX_CHANNELS][256];
    const int cin = a.in_channels, cout = a.out_channels;
    if constexpr (kind != NORMALIZE_U8) {
        for (int i = (int)threadIdx.x; i < cout * 256; i += (int)blockDim.x) {
            const int c = i / 256, v = i % 256;
            if constexpr (kind == NORMALIZE_F32)
                table[c][v] = a.lut->f32[c][v];
            else
                table[c][v] = a.lut->f16[c][v];
        }
        __syncthreads();
    }
    const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
    if (thread >= (unsigned)a.pixels)
        return;
    const int p = (int)thread;
    const size_t hw = (size_t)a.pixels;
    for (int i = (int)blockIdx.z; i < a.n; i += (int)gridDim.z) {
        const uint8_t *sample = a.src + (size_t)i * a.src_stride;
        T *out = (T *)(a.dst + (size_t)i * a.dst_stride);
        for (int t = (int)blockIdx.y; t < a.frames; t += (int)gridDim.y) {
            const uint8_t *s = sample + ((size_t)t * hw + (size_t)p) * (size_t)cin;
            for (int c = 0; c < cout; c++) {
                const uint8_t v = s[cin == 1 ? 0 : c];
                size_t at;
                if (a.layout == PB_LAYOUT_THWC)
                    at = ((size_t)t * hw + (size_t)p) * (size_t)cout + (size_t)c;
                else if (a.layout == PB_LAYOUT_TCHW)
                    at = ((size_t)t * (size_t)cout + (size_t)c) * hw + (size_t)p;
                else
                    at = ((size_t)c * (size_t)a.frames + (size_t)t) * hw + (size_t)p;
                if constexpr (kind == NORMALIZE_U8)
                    out[at] = v;
                else
                    out[at] = table[c][v];
            }
        }
    }
}

/* ---- flip, crop ------------------------------------------------------ */

struct flip_args {
    const uint8_t *src;
    size_t src_stride;
    uint8_t *dst;
    size_t dst_stride;
    int n, frames, height, width, channels;
    const uint8_t *flip;
};

/* One thread per output byte of a frame; a mirrored sample reads its row
 * backwards, pixel by pixel. */
__global__ void flip_kernel(flip_args a)
{
    const int row_bytes = a.width * a.channels;
    const int frame_bytes = a.height * row_bytes;
    const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
    if (thread >= (unsigned)frame_bytes)
        return;
    const int e = (int)thread;
    const int y = e / row_bytes, in_row = e - y * row_bytes;
    const int x = in_row / a.channels, c = in_row - x * a.channels;
    const int mirrored = (y * a.width + (a.width - 1 - x)) * a.channels + c;
    for (int i = (int)blockIdx.z; i < a.n; i += (int)gridDim.z) {
        const int from = a.flip[i] ? mirrored : e;
        const uint8_t *s = a.src + (size_t)i * a.src_stride;
        uint8_t *d = a.dst + (size_t)i * a.dst_stride;
        for (int t = (int)blockIdx.y; t < a.frames; t += (int)gridDim.y) {
            const size_t frame = (size_t)t * (size_t)frame_bytes;
            d[frame + (size_t)e] = s[frame + (size_t)from];
        }
    }
}

struct crop_args {
    const uint8_t *src;
    size_t src_stride;
    uint8_t *dst;
    size_t dst_stride;
    int n, frames, src_h, src_w, channels, out_h, out_w;
    const int32_t *box;
};

/* One thread per output byte; zero where the window leaves the image. */
__global__ void crop_kernel(crop_args a)
{
    const int out_row = a.out_w * a.channels;
    const int out_frame = a.out_h * out_row;
    const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
    if (thread >= (unsigned)out_frame)
        return;
    const int e = (int)thread;
    const int y = e / out_row, in_row = e - y * out_row;
    const int x = in_row / a.channels, c = in_row - x * a.channels;
    const size_t src_frame = (size_t)a.src_h * (size_t)a.src_w * (size_t)a.channels;
    for (int i = (int)blockIdx.z; i < a.n; i += (int)gridDim.z) {
        const int64_t sy = (int64_t)a.box[2 * i] + y, sx = (int64_t)a.box[2 * i + 1] + x;
        const bool inside = sy >= 0 && sy < a.src_h && sx >= 0 && sx < a.src_w;
        const size_t from =
            inside ? ((size_t)sy * (size_t)a.src_w + (size_t)sx) * (size_t)a.channels + (size_t)c
                   : 0;
        const uint8_t *s = a.src + (size_t)i * a.src_stride;
        uint8_t *d = a.dst + (size_t)i * a.dst_stride;
        for (int t = (int)blockIdx.y; t < a.frames; t += (int)gridDim.y)
            d[(size_t)t * (size_t)out_frame + (size_t)e] =
                inside ? s[(size_t)t * src_frame + from] : (uint8_t)0;
    }
}

/* ---- resample -------------------------------------------------------- */

struct resample_args {
    const uint8_t *src;
    size_t src_stride;
    uint8_t *dst;
    size_t dst_stride;
    int n, frames;
    enum pb_interp interp;
    int channels, in_h, in_w, out_h, out_w, taps_x, taps_y;
    const int32_t *start_x, *start_y;
    const int32_t *coef_x, *coef_y;
};

/* The CPU's vertical_pass (kernels/resample.c) for one source column: p
 * is the byte at the first tap row, row_bytes apart; the fixed-point sum
 * with PB_RESAMPLE_ROW_BITS fraction bits kept. Integer, so bit-exact. */
__device__ inline int32_t vertical_sum(const uint8_t *p, size_t row_bytes, const int32_t *c,
                                       int taps)
{
    int32_t sum = 1 << (PB_RESAMPLE_COEF_BITS - PB_RESAMPLE_ROW_BITS - 1);
    for (int k = 0; k < taps; k++)
        sum += c[k] * (int32_t)p[(size_t)k * row_bytes];
    return sum >> (PB_RESAMPLE_COEF_BITS - PB_RESAMPLE_ROW_BITS);
}

/* One thread per output byte. Bilinear and area recompute the CPU's two
 * passes for this element: for each horizontal tap, the vertical sum of
 * that source column, then the horizontal sum as horizontal_pass2 (two
 * taps: 16-bit coefficients rounded from coef_x) or horizontal_pass (int64
 * sum of the Q22 coefficients) forms it. */
__global__ void resample_kernel(resample_args a)
{
    const int channels = a.channels;
    const int out_row = a.out_w * channels;
    const int out_frame = a.out_h * out_row;
    const unsigned thread = blockIdx.x * blockDim.x + threadIdx.x;
    if (thread >= (unsigned)out_frame)
        return;
    const int e = (int)thread;
    const int y = e / out_row, in_row = e - y * out_row;
    const int x = in_row / channels, c = in_row - x * channels;
    const size_t row_bytes = (size_t)a.in_w * (size_t)channels;
    const size_t in_frame = (size_t)a.in_h * row_bytes;
    /* Offset of the first tap (row start_y, column start_x, channel c). */
    const size_t first =
        (size_t)a.start_y[y] * row_bytes + (size_t)a.start_x[x] * (size_t)channels + (size_t)c;
    const int32_t *cy = a.coef_y + (size_t)y * (size_t)a.taps_y;
    const int32_t *cx = a.coef_x + (size_t)x * (size_t)a.taps_x;
    const int taps_x = a.taps_x, taps_y = a.taps_y;
    const int shift2 = PB_RESAMPLE_COEF_BITS - PB_RESAMPLE_COEF2_BITS;
    for (int i = (int)blockIdx.z; i < a.n; i += (int)gridDim.z) {
        const uint8_t *sample = a.src + (size_t)i * a.src_stride;
        uint8_t *out = a.dst + (size_t)i * a.dst_stride;
        for (int t = (int)blockIdx.y; t < a.frames; t += (int)gridDim.y) {
            const uint8_t *p = sample + (size_t)t * in_frame + first;
            uint8_t value;
            if (a.interp == PB_INTERP_NEAREST) {
                value = *p;
            } else if (taps_x == 2) {
                const int32_t v0 = vertical_sum(p, row_bytes, cy, taps_y);
                const int32_t v1 = vertical_sum(p + channels, row_bytes, cy, taps_y);
                const int32_t c0 = (cx[0] + (1 << (shift2 - 1))) >> shift2;
                const int32_t c1 = (1 << PB_RESAMPLE_COEF2_BITS) - c0;
                const int out_shift = PB_RESAMPLE_COEF2_BITS + PB_RESAMPLE_ROW_BITS;
                value = (uint8_t)((c0 * v0 + c1 * v1 + (1 << (out_shift - 1))) >> out_shift);
            } else {
                const int out_shift = PB_RESAMPLE_COEF_BITS + PB_RESAMPLE_ROW_BITS;
                int64_t sum = (int64_t)1 << (out_shift - 1);
                for (int k = 0; k < taps_x; k++)
                    sum += (int64_t)cx[k] * vertical_sum(p + (size_t)k * (size_t)channels,
                                                         row_bytes, cy, taps_y);
                value = (uint8_t)(sum >> out_shift);
            }
            out[(size_t)t * (size_t)out_frame + (size_t)e] = value;
        }
    }
}

/* ---- busy ------------------------------------------------------------ */

__device__ inline uint64_t global_timer_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Thread 0 of each block spins on the global timer; the block stays
 * resident on its SM until ns have passed since it started. */
__global__ void busy_kernel(uint64_t ns)
{
    if (threadIdx.x != 0)
        return;
    const uint64_t start = global_timer_ns();
    while (global_timer_ns() - start < ns) {
    }
}

/* Replaces *p by a device array of bytes bytes (the contents are not
 * kept: an upload rewrites them). *p is NULL when that fails. */
cudaError_t realloc_device(void **p, size_t bytes)
{
    cudaFree(*p);
    *p = NULL;
    return cudaMalloc(p, bytes);
}

/* Makes *start and *weight hold need elements each (at least one, so the
 * arrays exist), sharing *cap as the CPU's tables do. */
cudaError_t reserve_tables(int32_t **start, int32_t **weight, size_t *cap, size_t need)
{
    if (need == 0)
        need = 1;
    if (need <= *cap && *start && *weight)
        return cudaSuccess;
    *cap = 0;
    cudaError_t err = realloc_device((void **)start, need * sizeof(int32_t));
    if (err == cudaSuccess)
        err = realloc_device((void **)weight, need * sizeof(int32_t));
    if (err == cudaSuccess)
        *cap = need;
    return err;
}

/* Copies one axis: out starts, out * taps weights. */
cudaError_t copy_axis(int32_t *start_dev, int32_t *weight_dev, const int32_t *start,
                      const int32_t *weight, int out, int taps)
{
    if (out == 0)
        return cudaSuccess;
    cudaError_t err =
        cudaMemcpy(start_dev, start, (size_t)out * sizeof(int32_t), cudaMemcpyHostToDevice);
    if (err != cudaSuccess)
        return err;
    return cudaMemcpy(weight_dev, weight, (size_t)out * (size_t)taps * sizeof(int32_t),
                      cudaMemcpyHostToDevice);
}

} // namespace

extern "C" int pb_gpu_normalize_u8(const uint8_t *src, size_t src_stride, void *dst,
                                   size_t dst_stride, int n, int frames, int height, int width,
                                   int in_channels, int out_channels,
                                   const struct pb_normalize_lut *lut_dev, enum pb_dtype dtype,
                                   enum pb_layout layout, struct CUstream_st *stream)
{
    if (n < 0 || frames < 0 || height < 0 || width < 0)
        return (int)cudaErrorInvalidValue;
    if (n == 0 || frames == 0 || height == 0 || width == 0)
        return 0;
    /* As on the CPU, output channel c reads input channel c, or 0 from a
     * gray input. */
    if (out_channels < 1 || out_channels > PB_NORMALIZE_MAX_CHANNELS || in_channels < 1 ||
        (in_channels != 1 && in_channels < out_channels))
        return (int)cudaErrorInvalidValue;
    if (layout != PB_LAYOUT_THWC && layout != PB_LAYOUT_TCHW && layout != PB_LAYOUT_CTHW)
        return (int)cudaErrorInvalidValue;
    size_t element = dtype == PB_DTYPE_F32 ? 4 : dtype == PB_DTYPE_F16 ? 2 : 1;
    if (dtype != PB_DTYPE_U8 && dtype != PB_DTYPE_BYTES && !lut_dev)
        return (int)cudaErrorInvalidValue;
    if ((uintptr_t)dst % element || dst_stride % element)
        return (int)cudaErrorMisalignedAddress;
    size_t pixels = (size_t)height * (size_t)width;
    dim3 grid;
    if (!frame_grid(pixels, frames, n, &grid))
        return (int)cudaErrorInvalidValue;
    normalize_args a = {src,         src_stride,  (char *)dst,  dst_stride, n,      frames,
                        (int)pixels, in_channels, out_channels, layout,     lut_dev};
    switch (dtype) {
    case PB_DTYPE_F32:
        normalize_kernel<float, NORMALIZE_F32><<<grid, block_threads, 0, stream>>>(a);
        break;
    case PB_DTYPE_F16:
        normalize_kernel<uint16_t, NORMALIZE_F16><<<grid, block_threads, 0, stream>>>(a);
        break;
    case PB_DTYPE_U8:
    case PB_DTYPE_BYTES:
        normalize_kernel<uint8_t, NORMALIZE_U8><<<grid, block_threads, 0, stream>>>(a);
        break;
    default: return (int)cudaErrorInvalidValue;
    }
    return launch_result();
}

extern "C" int pb_gpu_flip_h_u8(const uint8_t *src, size_t src_stride, uint8_t *dst,
                                size_t dst_stride, int n, int frames, int height, int width,
                                int channels, const uint8_t *flip_dev, struct CUstream_st *stream)
{
    if (n < 0 || frames < 0 || height < 0 || width < 0 || channels < 0)
        return (int)cudaErrorInvalidValue;
    if (n == 0 || frames == 0 || height == 0 || width == 0 || channels == 0)
        return 0;
    dim3 grid;
    if (!frame_grid((size_t)height * (size_t)width * (size_t)channels, frames, n, &grid))
        return (int)cudaErrorInvalidValue;
    flip_args a = {src, src_stride, dst, dst_stride, n, frames, height, width, channels, flip_dev};
    flip_kernel<<<grid, block_threads, 0, stream>>>(a);
    return launch_result();
}

extern "C" int pb_gpu_crop_u8(const uint8_t *src, size_t src_stride, int n, int frames, int src_h,
                              int src_w, int channels, const int32_t *box_dev, uint8_t *dst,
                              size_t dst_stride, int out_h, int out_w, struct CUstream_st *stream)
{
    if (n < 0 || frames < 0 || src_h < 0 || src_w < 0 || channels < 0 || out_h < 0 || out_w < 0)
        return (int)cudaErrorInvalidValue;
    if (n == 0 || frames == 0 || channels == 0 || out_h == 0 || out_w == 0)
        return 0;
    dim3 grid;
    if (!frame_grid((size_t)out_h * (size_t)out_w * (size_t)channels, frames, n, &grid))
        return (int)cudaErrorInvalidValue;
    crop_args a = {src,   src_stride, dst,      dst_stride, n,     frames,
                   src_h, src_w,      channels, out_h,      out_w, box_dev};
    crop_kernel<<<grid, block_threads, 0, stream>>>(a);
    return launch_result();
}

extern "C" int pb_gpu_resampler_upload(struct pb_gpu_resampler *g, const struct pb_resampler *r)
{
    if (r->in_h <= 0 || r->in_w <= 0 || r->out_h < 0 || r->out_w < 0 || r->taps_x < 1 ||
        r->taps_y < 1 || r->channels < 1)
        return (int)cudaErrorInvalidValue;
    g->in_h = 0; /* invalid until the tables are complete */
    /* Kernels of earlier batches may still read the tables, on streams
     * (non-blocking ones) the copies below would not wait for. */
    if (g->start_x || g->start_y) {
        cudaError_t err = cudaDeviceSynchronize();
        if (err != cudaSuccess)
            return (int)err;
    }
    cudaError_t err =
        reserve_tables(&g->start_x, &g->coef_x, &g->cap_x, (size_t)r->out_w * (size_t)r->taps_x);
    if (err == cudaSuccess)
        err = reserve_tables(&g->start_y, &g->coef_y, &g->cap_y,
                             (size_t)r->out_h * (size_t)r->taps_y);
    if (err == cudaSuccess)
        err = copy_axis(g->start_x, g->coef_x, r->start_x, r->coef_x, r->out_w, r->taps_x);
    if (err == cudaSuccess)
        err = copy_axis(g->start_y, g->coef_y, r->start_y, r->coef_y, r->out_h, r->taps_y);
    /* cudaMemcpy from pageable memory may return before the data reach the
     * device; wait, so a kernel on any stream sees the new tables. */
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(0);
    if (err != cudaSuccess)
        return (int)err;
    g->interp = r->interp;
    g->channels = r->channels;
    g->in_w = r->in_w;
    g->out_h = r->out_h;
    g->out_w = r->out_w;
    g->taps_x = r->taps_x;
    g->taps_y = r->taps_y;
    g->in_h = r->in_h;
    return 0;
}

extern "C" void pb_gpu_resampler_free(struct pb_gpu_resampler *g)
{
    cudaFree(g->start_x);
    cudaFree(g->start_y);
    cudaFree(g->coef_x);
    cudaFree(g->coef_y);
    memset(g, 0, sizeof(*g));
}

extern "C" int pb_gpu_resample_u8(const struct pb_gpu_resampler *g, const uint8_t *src,
                                  size_t src_stride, int n, int frames, uint8_t *dst,
                                  size_t dst_stride, struct CUstream_st *stream)
{
    if (n < 0 || frames < 0)
        return (int)cudaErrorInvalidValue;
    if (n == 0 || frames == 0)
        return 0;
    /* in_h is 0 until an upload completes. */
    if (g->in_h <= 0 || g->in_w <= 0 || g->channels < 1 || g->out_h < 0 || g->out_w < 0 ||
        !g->start_x || !g->start_y || !g->coef_x || !g->coef_y)
        return (int)cudaErrorInvalidValue;
    if (g->out_h == 0 || g->out_w == 0)
        return 0;
    dim3 grid;
    if (!frame_grid((size_t)g->out_h * (size_t)g->out_w * (size_t)g->channels, frames, n, &grid))
        return (int)cudaErrorInvalidValue;
    resample_args a = {src,       src_stride,  dst,        dst_stride, n,           frames,
                       g->interp, g->channels, g->in_h,    g->in_w,    g->out_h,    g->out_w,
                       g->taps_x, g->taps_y,   g->start_x, g->start_y, g->coef_x, g->coef_y};
    resample_kernel<<<grid, block_threads, 0, stream>>>(a);
    return launch_result();
}

extern "C" int pb_gpu_busy(uint64_t ns, int blocks, struct CUstream_st *stream)
{
    if (ns == 0)
        return 0;
    const int grid = blocks > 0 ? blocks : 1;
    busy_kernel<<<grid, 32, 0, stream>>>(ns);
    return launch_result();
}
