/* The device runtime (kernels/gpu_rt.h): whether a CUDA device is there and why not,
 * page-locked host memory, and device memory tracked for its peak. */
#include "kernels/gpu_rt.h"

#include <stdatomic.h>
#include <stdio.h>

#include "bench/base/pb.h"

#if PB_HAVE_CUDA
#include <cuda_runtime_api.h>

int pb_gpu_device_count(char *why, size_t n)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaSuccess && count > 0)
        return count;
    if (why && n)
        snprintf(why, n, "no CUDA device: %s",
                 err != cudaSuccess ? cudaGetErrorString(err) : "no devices found");
    return 0;
}

void *pb_pinned_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess)
        return NULL;
    return p;
}

void pb_pinned_free(void *p)
{
    if (p)
        cudaFreeHost(p);
}

static _Atomic uint64_t alloc_now, alloc_peak;

void *pb_gpu_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess)
        return NULL;
    uint64_t now = atomic_fetch_add(&alloc_now, bytes) + bytes;
    uint64_t peak = atomic_load(&alloc_peak);
    while (now > peak && !atomic_compare_exchange_weak(&alloc_peak, &peak, now)) {
    }
    return p;
}

void pb_gpu_free(void *p, size_t bytes)
{
    if (!p)
        return;
    cudaFree(p);
    atomic_fetch_sub(&alloc_now, bytes);
}

uint64_t pb_gpu_alloc_peak(void)
{
    return atomic_load(&alloc_peak);
}

uint64_t pb_gpu_mem_used(void)
{
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess)
        return 0;
    return (uint64_t)(total - free_bytes);
}

int pb_gpu_check(int err, const char *what, char *msg, size_t msglen)
{
    if (err == 0)
        return PB_OK;
    snprintf(msg, msglen, "%s on GPU: %s", what, cudaGetErrorString((cudaError_t)err));
    return PB_ERR;
}

int pb_gpu_upload(void *dst, const void *src, size_t bytes, struct CUstream_st *stream, char *msg,
                  size_t msglen)
{
    return pb_gpu_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream),
                        "copying stage parameters", msg, msglen);
}

int pb_gpu_upload_sync(void *dst, const void *src, size_t bytes, char *msg, size_t msglen)
{
    return pb_gpu_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice),
                        "copying stage tables", msg, msglen);
}

#else /* !PB_HAVE_CUDA */

int pb_gpu_device_count(char *why, size_t n)
{
    if (why && n)
        snprintf(why, n, "built without CUDA");
    return 0;
}

void *pb_pinned_alloc(size_t bytes)
{
    (void)bytes;
    return NULL;
}

void pb_pinned_free(void *p)
{
    (void)p;
}

void *pb_gpu_alloc(size_t bytes)
{
    (void)bytes;
    return NULL;
}

void pb_gpu_free(void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
}

uint64_t pb_gpu_alloc_peak(void)
{
    return 0;
}

uint64_t pb_gpu_mem_used(void)
{
    return 0;
}

int pb_gpu_check(int err, const char *what, char *msg, size_t msglen)
{
    if (err == 0)
        return PB_OK;
    snprintf(msg, msglen, "%s: built without CUDA", what);
    return PB_ERR;
}

int pb_gpu_upload(void *dst, const void *src, size_t bytes, struct CUstream_st *stream, char *msg,
                  size_t msglen)
{
    (void)dst, (void)src, (void)bytes, (void)stream;
    snprintf(msg, msglen, "built without CUDA");
    return PB_ERR_UNAVAILABLE;
}

int pb_gpu_upload_sync(void *dst, const void *src, size_t bytes, char *msg, size_t msglen)
{
    (void)dst, (void)src, (void)bytes;
    snprintf(msg, msglen, "built without CUDA");
    return PB_ERR_UNAVAILABLE;
}

#endif /* PB_HAVE_CUDA */

int pb_gpu_available(char *why, size_t n)
{
    return pb_gpu_device_count(why, n) > 0;
}

void *pb_gpu_host_alloc(size_t bytes)
{
    return pb_pinned_alloc(bytes ? bytes : 1);
}

void pb_gpu_host_free(void *p)
{
    pb_pinned_free(p);
}
