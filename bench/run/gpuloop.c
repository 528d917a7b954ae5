/* The training loop's device side (bench/run/gpuloop.h): each batch's host-to-device
 * copy, its GPU stages and the simulated step, bracketed by CUDA events. */
#include "bench/run/gpuloop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/gpu_rt.h"

#if PB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/gpu.h"

/* Events of one device buffer's batch. */
struct flight {
    cudaEvent_t copy0, copy1, step0, step1;
    cudaEvent_t stage0[PB_GPU_MAX_STAGES], stage1[PB_GPU_MAX_STAGES];
    uint8_t *dev;
    bool pending; /* enqueued, not harvested */
    struct pb_gpu_batch_times times;
};

struct pb_gpu_loop {
    struct pb_gpu_loop_config cfg;
    cudaStream_t copy, compute;
    cudaEvent_t base;
    struct flight *flight;
    int current;      /* flight of the batch being enqueued */
    uint64_t batches; /* since begin */
    int sm_count;
};

static int cuda_fail(cudaError_t err, const char *what, char *msg, size_t msglen)
{
    snprintf(msg, msglen, "%s: %s", what, cudaGetErrorString(err));
    return err == cudaErrorMemoryAllocation ? PB_ERR_NOMEM : PB_ERR;
}

int pb_gpu_loop_open(struct pb_gpu_loop **out, const struct pb_gpu_loop_config *cfg, char *msg,
                     size_t msglen)
{
    *out = NULL;
    char why[PB_MSG_MAX];
    if (!pb_gpu_available(why, sizeof why)) {
        snprintf(msg, msglen, "%s", why);
        return PB_ERR_UNAVAILABLE;
    }
    if (cfg->inflight < 1 || cfg->stage_count > PB_GPU_MAX_STAGES) {
        snprintf(msg, msglen, "at most %d GPU stages and device_prefetch >= 1",
                 PB_GPU_MAX_STAGES);
        return PB_ERR_CONFIG;
    }
    struct pb_gpu_loop *l = calloc(1, sizeof(*l));
    if (!l)
        return PB_ERR_NOMEM;
    l->cfg = *cfg;
    *out = l;
    cudaError_t err = cudaSetDevice(0);
    if (err != cudaSuccess)
        return cuda_fail(err, "cudaSetDevice", msg, msglen);
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    l->sm_count = sms > 0 ? sms : 1;
    if ((err = cudaStreamCreateWithFlags(&l->compute, cudaStreamNonBlocking)) != cudaSuccess)
        return cuda_fail(err, "creating the compute stream", msg, msglen);
    if (cfg->copy_on_compute) {
        l->copy = l->compute;
    } else if ((err = cudaStreamCreateWithFlags(&l->copy, cudaStreamNonBlocking)) !=
               cudaSuccess) {
        return cuda_fail(err, "creating the copy stream", msg, msglen);
    }
    /* Blocking-sync events: the host sleeps rather than spins while it
     * waits, so the training loop's CPU time is not inflated by waiting. */
    const unsigned ev_flags = cudaEventBlockingSync;
    if ((err = cudaEventCreateWithFlags(&l->base, ev_flags)) != cudaSuccess)
        return cuda_fail(err, "creating CUDA events", msg, msglen);
    l->flight = calloc((size_t)cfg->inflight, sizeof(*l->flight));
    if (!l->flight)
        return PB_ERR_NOMEM;
    for (int d = 0; d < cfg->inflight; d++) {
        struct flight *f = &l->flight[d];
        cudaEvent_t *evs[] = {&f->copy0, &f->copy1, &f->step0, &f->step1};
        for (size_t i = 0; i < PB_ARRAY_LEN(evs); i++)
            if ((err = cudaEventCreateWithFlags(evs[i], ev_flags)) != cudaSuccess)
                return cuda_fail(err, "creating CUDA events", msg, msglen);
        for (int k = 0; k < cfg->stage_count; k++) {
            if ((err = cudaEventCreateWithFlags(&f->stage0[k], ev_flags)) != cudaSuccess ||
                (err = cudaEventCreateWithFlags(&f->stage1[k], ev_flags)) != cudaSuccess)
                return cuda_fail(err, "creating CUDA events", msg, msglen);
        }
        f->dev = pb_gpu_alloc(cfg->max_batch_bytes);
        if (!f->dev) {
            snprintf(msg, msglen,
                     "cannot allocate %d device batch buffers of %zu bytes "
                     "(loader.device_prefetch x batch): %s",
                     cfg->inflight, cfg->max_batch_bytes, cudaGetErrorString(cudaGetLastError()));
            return PB_ERR_NOMEM;
        }
    }
    return PB_OK;
}

void pb_gpu_loop_close(struct pb_gpu_loop *l)
{
    if (!l)
        return;
    if (l->compute)
        cudaStreamSynchronize(l->compute);
    if (l->copy && l->copy != l->compute)
        cudaStreamSynchronize(l->copy);
    if (l->flight) {
        for (int d = 0; d < l->cfg.inflight; d++) {
            struct flight *f = &l->flight[d];
            cudaEvent_t evs[] = {f->copy0, f->copy1, f->step0, f->step1};
            for (size_t i = 0; i < PB_ARRAY_LEN(evs); i++)
                if (evs[i])
                    cudaEventDestroy(evs[i]);
            for (int k = 0; k < l->cfg.stage_count; k++) {
                if (f->stage0[k])
                    cudaEventDestroy(f->stage0[k]);
                if (f->stage1[k])
                    cudaEventDestroy(f->stage1[k]);
            }
            pb_gpu_free(f->dev, l->cfg.max_batch_bytes);
        }
        free(l->flight);
    }
    if (l->base)
        cudaEventDestroy(l->base);
    if (l->copy && l->copy != l->compute)
        cudaStreamDestroy(l->copy);
    if (l->compute)
        cudaStreamDestroy(l->compute);
    free(l);
}

static double since_base(const struct pb_gpu_loop *l, cudaEvent_t ev)
{
    float ms = 0;
    if (cudaEventElapsedTime(&ms, l->base, ev) != cudaSuccess)
        return 0;
    return (double)ms * 1e6;
}

static double between(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess)
        return 0;
    return ms > 0 ? (double)ms * 1e6 : 0;
}

/* Reads a finished batch's events and hands them over. */
static int harvest(struct pb_gpu_loop *l, struct flight *f, char *msg, size_t msglen)
{
    if (!f->pending)
        return PB_OK;
    cudaError_t err = cudaEventSynchronize(f->step1);
    if (err != cudaSuccess)
        return cuda_fail(err, "waiting for a batch on the GPU", msg, msglen);
    f->pending = false;
    struct pb_gpu_batch_times *t = &f->times;
    t->copy_ns = between(f->copy0, f->copy1);
    for (int k = 0; k < l->cfg.stage_count; k++)
        t->stage_ns[k] = between(f->stage0[k], f->stage1[k]);
    t->step_ns = between(f->step0, f->step1);
    t->copy_begin_ns = since_base(l, f->copy0);
    t->copy_end_ns = since_base(l, f->copy1);
    t->compute_begin_ns = since_base(l, l->cfg.stage_count ? f->stage0[0] : f->step0);
    t->compute_end_ns = since_base(l, f->step1);
    if (l->cfg.harvest)
        l->cfg.harvest(l->cfg.user, t);
    return PB_OK;
}

int pb_gpu_loop_begin(struct pb_gpu_loop *l, char *msg, size_t msglen)
{
    int rc = pb_gpu_loop_drain(l, msg, msglen);
    if (rc != PB_OK)
        return rc;
    /* The base event goes on both streams' timeline: record it on the
     * compute stream once everything before is done. */
    cudaError_t err = cudaEventRecord(l->base, l->compute);
    if (err == cudaSuccess)
        err = cudaEventSynchronize(l->base);
    if (err != cudaSuccess)
        return cuda_fail(err, "starting the GPU timeline", msg, msglen);
    l->batches = 0;
    return PB_OK;
}

int pb_gpu_loop_copy(struct pb_gpu_loop *l, struct pb_batch *batch, bool measured,
                     uint64_t *blocked_ns, char *msg, size_t msglen)
{
    int d = (int)(l->batches % (uint64_t)l->cfg.inflight);
    struct flight *f = &l->flight[d];
    uint64_t t0 = pb_now_ns();
    int rc = harvest(l, f, msg, msglen);
    *blocked_ns = pb_now_ns() - t0;
    if (rc != PB_OK)
        return rc;
    size_t bytes = (size_t)batch->samples * batch->slot_bytes;
    if (bytes > l->cfg.max_batch_bytes) {
        snprintf(msg, msglen, "to_device: batch of %zu bytes exceeds the device buffer (%zu)",
                 bytes, l->cfg.max_batch_bytes);
        return PB_ERR;
    }
    cudaError_t err = cudaEventRecord(f->copy0, l->copy);
    if (err == cudaSuccess && bytes)
        err = cudaMemcpyAsync(f->dev, batch->data, bytes, cudaMemcpyHostToDevice, l->copy);
    if (err == cudaSuccess)
        err = cudaEventRecord(f->copy1, l->copy);
    if (err == cudaSuccess && l->copy != l->compute)
        err = cudaStreamWaitEvent(l->compute, f->copy1, 0);
    if (err != cudaSuccess)
        return cuda_fail(err, "to_device: cudaMemcpyAsync", msg, msglen);
    memset(&f->times, 0, sizeof(f->times));
    f->times.seq = batch->seq;
    f->times.samples = batch->samples;
    f->times.copy_bytes = bytes;
    f->times.measured = measured;
    l->current = d;
    batch->dev_data = f->dev;
    batch->dev_slot_bytes = batch->slot_bytes;
    batch->dev_shape = batch->shape;
    batch->stream = l->compute;
    batch->inflight = d;
    return PB_OK;
}

int pb_gpu_loop_stage_begin(struct pb_gpu_loop *l, int k)
{
    return cudaEventRecord(l->flight[l->current].stage0[k], l->compute) == cudaSuccess ? PB_OK
                                                                                     : PB_ERR;
}

int pb_gpu_loop_stage_end(struct pb_gpu_loop *l, int k)
{
    return cudaEventRecord(l->flight[l->current].stage1[k], l->compute) == cudaSuccess ? PB_OK
                                                                                     : PB_ERR;
}

int pb_gpu_loop_step(struct pb_gpu_loop *l, uint64_t step_ns, uint64_t *copy_wait_ns, char *msg,
                     size_t msglen)
{
    struct flight *f = &l->flight[l->current];
    cudaError_t err = cudaEventRecord(f->step0, l->compute);
    if (err == cudaSuccess && step_ns)
        err = (cudaError_t)pb_gpu_busy(step_ns, l->sm_count, l->compute);
    if (err == cudaSuccess)
        err = cudaEventRecord(f->step1, l->compute);
    if (err != cudaSuccess)
        return cuda_fail(err, "the training step on GPU", msg, msglen);
    f->pending = true;
    l->batches++;
    uint64_t t0 = pb_now_ns();
    err = cudaEventSynchronize(f->copy1);
    *copy_wait_ns = pb_now_ns() - t0;
    if (err != cudaSuccess)
        return cuda_fail(err, "to_device: waiting for the copy", msg, msglen);
    return PB_OK;
}

int pb_gpu_loop_drain(struct pb_gpu_loop *l, char *msg, size_t msglen)
{
    /* Oldest first, so the harvest sees batches in order. */
    for (int i = 0; i < l->cfg.inflight; i++) {
        int d = (int)((l->batches + (uint64_t)i) % (uint64_t)l->cfg.inflight);
        int rc = harvest(l, &l->flight[d], msg, msglen);
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

#else /* !PB_HAVE_CUDA */

int pb_gpu_loop_open(struct pb_gpu_loop **loop, const struct pb_gpu_loop_config *config,
                     char *msg, size_t msglen)
{
    (void)config;
    *loop = NULL;
    snprintf(msg, msglen, "built without CUDA");
    return PB_ERR_UNAVAILABLE;
}
void pb_gpu_loop_close(struct pb_gpu_loop *loop)
{
    (void)loop;
}
int pb_gpu_loop_begin(struct pb_gpu_loop *loop, char *msg, size_t msglen)
{
    (void)loop;
    snprintf(msg, msglen, "built without CUDA");
    return PB_ERR_UNAVAILABLE;
}
int pb_gpu_loop_copy(struct pb_gpu_loop *loop, struct pb_batch *batch, bool measured,
                     uint64_t *blocked_ns, char *msg, size_t msglen)
{
    (void)loop, (void)batch, (void)measured;
    *blocked_ns = 0;
    snprintf(msg, msglen, "built without CUDA");
    return PB_ERR_UNAVAILABLE;
}
int pb_gpu_loop_stage_begin(struct pb_gpu_loop *loop, int k)
{
    (void)loop, (void)k;
    return PB_ERR_UNAVAILABLE;
}
int pb_gpu_loop_stage_end(struct pb_gpu_loop *loop, int k)
{
    (void)loop, (void)k;
    return PB_ERR_UNAVAILABLE;
}
int pb_gpu_loop_step(struct pb_gpu_loop *loop, uint64_t step_ns, uint64_t *copy_wait_ns,
                     char *msg, size_t msglen)
{
    (void)loop, (void)step_ns;
    *copy_wait_ns = 0;
    snprintf(msg, msglen, "built without CUDA");
    return PB_ERR_UNAVAILABLE;
}
int pb_gpu_loop_drain(struct pb_gpu_loop *loop, char *msg, size_t msglen)
{
    (void)loop, (void)msg, (void)msglen;
    return PB_OK;
}

#endif
