/* The host-to-device copy bandwidth of this machine, pinned and pageable
 * (pbench calibrate --gpu): the peak a run's to_device copies are judged
 * against. Answers "not available" (with the reason) in a build without
 * CUDA or on a machine without a device. */
#ifndef PB_H2D_BANDWIDTH_H
#define PB_H2D_BANDWIDTH_H

#include <stddef.h>

struct pb_h2d_bandwidth {
    size_t bytes;           /* transfer size measured                     */
    double pinned_gb_s;     /* cudaHostAlloc source, cudaMemcpyAsync       */
    double pageable_gb_s;   /* malloc source, cudaMemcpyAsync              */
};

/* Measures host-to-device copies of `bytes` as bandwidthTest does: a
 * warm-up copy, then `iterations` back-to-back async copies timed with
 * CUDA events on one stream, GB/s = bytes * iterations / time (1 GB =
 * 1e9 bytes). Returns 0, or -1 with msg ("no CUDA device: ..."). */
int pb_gpu_h2d_bandwidth(size_t bytes, int iterations, struct pb_h2d_bandwidth *out, char *msg,
                         size_t msglen);

#endif
