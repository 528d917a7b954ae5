/* Host-to-device copy bandwidth, pinned and pageable, as CUDA's
 * bandwidthTest measures it. */
#include "bench/sys/h2d_bandwidth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/gpu_rt.h"

#if PB_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#if PB_HAVE_CUDA

static int cuda_failed(cudaError_t err, const char *what, char *msg, size_t msglen)
{
    if (err == cudaSuccess)
        return 0;
    snprintf(msg, msglen, "%s: %s", what, cudaGetErrorString(err));
    return 1;
}

/* One warm-up copy, then `iterations` copies between two events. */
static int time_copies(void *device_buffer, const void *host_buffer, size_t bytes, int iterations,
                       cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, double *gb_s,
                       char *msg, size_t msglen)
{
    if (cuda_failed(
            cudaMemcpyAsync(device_buffer, host_buffer, bytes, cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync", msg, msglen) ||
        cuda_failed(cudaStreamSynchronize(stream), "cudaStreamSynchronize", msg, msglen) ||
        cuda_failed(cudaEventRecord(start, stream), "cudaEventRecord", msg, msglen))
        return PB_ERR;
    for (int i = 0; i < iterations; i++)
        if (cuda_failed(
                cudaMemcpyAsync(device_buffer, host_buffer, bytes, cudaMemcpyHostToDevice, stream),
                "cudaMemcpyAsync", msg, msglen))
            return PB_ERR;
    float ms = 0;
    if (cuda_failed(cudaEventRecord(stop, stream), "cudaEventRecord", msg, msglen) ||
        cuda_failed(cudaEventSynchronize(stop), "cudaEventSynchronize", msg, msglen) ||
        cuda_failed(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime", msg, msglen))
        return PB_ERR;
    if (!(ms > 0)) {
        snprintf(msg, msglen, "the CUDA event timer read %g ms for %d copies", (double)ms,
                 iterations);
        return PB_ERR;
    }
    *gb_s = (double)bytes * iterations / ((double)ms / 1e3) / 1e9;
    return PB_OK;
}

#endif

int pb_gpu_h2d_bandwidth(size_t bytes, int iterations, struct pb_h2d_bandwidth *out, char *msg,
                         size_t msglen)
{
    memset(out, 0, sizeof(*out));
    out->bytes = bytes;
    if (!pb_gpu_available(msg, msglen))
        return PB_ERR;
#if !PB_HAVE_CUDA
    (void)iterations;
    return PB_ERR; /* not reached: without CUDA there is no device */
#else
    if (bytes == 0 || iterations <= 0) {
        snprintf(msg, msglen, "bandwidth needs a positive size and iteration count (got %zu, %d)",
                 bytes, iterations);
        return PB_ERR;
    }
    /* On the calling thread's current device (0 unless it chose another). */
    void *device_buffer = NULL, *pinned = NULL, *pageable = NULL;
    cudaStream_t stream = NULL;
    cudaEvent_t start = NULL, stop = NULL;
    int rc = PB_ERR;
    if (cuda_failed(cudaMalloc(&device_buffer, bytes), "cudaMalloc", msg, msglen) ||
        cuda_failed(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault), "cudaHostAlloc", msg,
                    msglen))
        goto done;
    pageable = malloc(bytes);
    if (!pageable) {
        snprintf(msg, msglen, "cannot allocate %zu bytes of pageable memory", bytes);
        goto done;
    }
    /* Touched, so that page faults are not part of the copies. */
    memset(pageable, 0x5a, bytes);
    memset(pinned, 0x5a, bytes);
    if (cuda_failed(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags", msg, msglen) ||
        cuda_failed(cudaEventCreate(&start), "cudaEventCreate", msg, msglen) ||
        cuda_failed(cudaEventCreate(&stop), "cudaEventCreate", msg, msglen))
        goto done;
    if (time_copies(device_buffer, pinned, bytes, iterations, stream, start, stop,
                    &out->pinned_gb_s, msg, msglen) ||
        time_copies(device_buffer, pageable, bytes, iterations, stream, start, stop,
                    &out->pageable_gb_s, msg, msglen))
        goto done;
    rc = PB_OK;
done:
    if (stream)
        cudaStreamSynchronize(stream); /* no copy may still read a buffer */
    if (stop)
        cudaEventDestroy(stop);
    if (start)
        cudaEventDestroy(start);
    if (stream)
        cudaStreamDestroy(stream);
    if (pinned)
        cudaFreeHost(pinned);
    if (device_buffer)
        cudaFree(device_buffer);
    free(pageable);
    return rc;
#endif
}
