/* The device runtime: whether a CUDA device is there (and why not), page-
 * locked host memory, and the device memory pbench allocates, tracked so
 * that a result can report its peak. The loader's batch buffers, the
 * training loop (bench/run/gpuloop.h) and the GPU stages all allocate here;
 * it sits with the kernels, below both pipelines/ and bench/, so that
 * stages need nothing from the harness.
 *
 * Built with or without CUDA: without it every query answers "built
 * without CUDA" and every allocation returns NULL. */
#ifndef PB_KERNELS_GPU_RT_H
#define PB_KERNELS_GPU_RT_H

#include <stddef.h>
#include <stdint.h>

struct CUstream_st; /* cudaStream_t is struct CUstream_st * */

/* The number of CUDA devices, or 0 with the reason in why ("built without
 * CUDA", "no CUDA device: TEXT"); why may be NULL. */
int pb_gpu_device_count(char *why, size_t n);

/* 1 when a CUDA device is usable; otherwise 0 with the reason in why, as
 * pb_gpu_device_count words it. */
int pb_gpu_available(char *why, size_t n);

/* Page-locked host memory from cudaHostAlloc, or NULL when there is no
 * CUDA or the call fails. Release it with pb_pinned_free (NULL is
 * ignored). */
void *pb_pinned_alloc(size_t bytes);
void pb_pinned_free(void *p);

/* cudaMalloc that counts bytes (and the peak) of pbench's own device
 * allocations; NULL on failure (or without CUDA). Free with pb_gpu_free,
 * passing the same size. */
void *pb_gpu_alloc(size_t bytes);
void pb_gpu_free(void *p, size_t bytes);
/* The most device memory pbench held at once through pb_gpu_alloc. */
uint64_t pb_gpu_alloc_peak(void);
/* Device memory in use on device 0 by every process (total - free), or 0. */
uint64_t pb_gpu_mem_used(void);

/* Pinned staging for GPU stages' per-batch parameters (pb_pinned_alloc of
 * at least one byte). */
void *pb_gpu_host_alloc(size_t bytes);
void pb_gpu_host_free(void *p);

/* Asynchronous host-to-device copy of small per-batch parameters on
 * stream (from pb_gpu_host_alloc memory). Returns PB_OK, or PB_ERR (or
 * PB_ERR_UNAVAILABLE without CUDA) with msg. */
int pb_gpu_upload(void *dst, const void *src, size_t bytes, struct CUstream_st *stream, char *msg,
                  size_t msglen);
/* Synchronous copy to the device (stage init: tables, lookup values). */
int pb_gpu_upload_sync(void *dst, const void *src, size_t bytes, char *msg, size_t msglen);

/* Turns a CUDA call's cudaError_t into PB_OK, or PB_ERR with "WHAT on GPU:
 * TEXT" in msg. */
int pb_gpu_check(int err, const char *what, char *msg, size_t msglen);

#endif
