/* The stage interface: a pipeline is an ordered list of stages, each a
 * table of function pointers plus a name (in the spirit of fio's
 * struct ioengine_ops). Worker-side stages process one sample at a time;
 * consumer-side stages process a whole batch in the training loop.
 *
 * One instance (init ... cleanup) exists per worker, so process() takes no
 * locks. process() must not allocate: buffers come from the pipeline. */
#ifndef PB_STAGE_H
#define PB_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/base/opt.h"
#include "decoders/sample.h"
#include "kernels/tensor.h"

struct pb_decoder_ops;

struct CUstream_st;

/* A batch as the consumer sees it. */
struct pb_batch {
    uint64_t seq;          /* position in the run's batch sequence      */
    uint8_t *data;         /* samples back to back, slot_bytes apart    */
    size_t slot_bytes;
    uint32_t samples;      /* samples delivered (errors skipped)        */
    struct pb_shape shape; /* per-sample shape (the plan's maximum)     */
    bool pinned;
    bool ragged;           /* some sample's shape differs from shape    */
    uint64_t *seeds;       /* per delivered sample, for GPU stages'
                              random draws (the CPU stages' draws)      */
    /* On the device, after to_device: the batch as the next GPU stage
     * reads it. A GPU stage writes its own device buffer and points these
     * at it. inflight is which of the device_prefetch buffers the batch
     * occupies: per-batch staging a stage keeps (crop windows, flip
     * flags) is indexed by it, so batches in flight do not share it. */
    uint8_t *dev_data;
    size_t dev_slot_bytes;
    struct pb_shape dev_shape;
    struct CUstream_st *stream; /* compute stream, in order after the copy */
    int inflight;
};

enum pb_stage_flags {
    PB_STAGE_WORKER = 1u << 0,   /* runs per sample in a worker          */
    PB_STAGE_CONSUMER = 1u << 1, /* runs per batch in the training loop  */
    PB_STAGE_DECODER = 1u << 2,  /* dispatches to a decoder (options too) */
    PB_STAGE_IO = 1u << 3,       /* reads files (reports bytes_read)     */
    PB_STAGE_TO_DEVICE = 1u << 4,/* the host-to-device copy (the runner's) */
    PB_STAGE_GPU = 1u << 5,      /* runs on the device, after to_device   */
    /* process() mirrors its input left to right itself, in the same pass,
     * when the sample's flip_pending is set (and clears it): a flip right
     * before it, as the last worker stage, leaves the mirroring to it. */
    PB_STAGE_MIRRORS = 1u << 6,
};

/* The `device` option of stages that have a GPU version. */
enum pb_device { PB_DEVICE_CPU = 0, PB_DEVICE_GPU = 1 };
extern const char *const pb_device_names[];
#define PB_DEVICE_HELP                                                                   \
    "Where the stage runs: cpu (per sample in the loader workers) or gpu (per batch in the " \
    "training loop, on the device after to_device)."

/* In the ops tables of a stage with a `device` option, its CPU and GPU
 * versions alike: the option table, the struct it fills (opts_type) and
 * where the `device` int sits in that struct. */
#define PB_DEVICE_OPTS(opt_table, opts_type)                                                       \
    .opts = (opt_table), .opts_size = sizeof(opts_type), .has_device = true,                       \
    .device_offset = offsetof(opts_type, device)

/* The unavailable_reason of a stage's GPU version in a build without CUDA. */
#define PB_NO_CUDA_REASON                                                                          \
    "pbench was built without CUDA (no CUDA toolkit was found at build time, or it was "           \
    "turned off with -DPBENCH_CUDA=OFF)"

/* In a GPU version's ops table: its callbacks in a build with CUDA, else
 * the reason it is unavailable (the callbacks are then not compiled). */
#if PB_HAVE_CUDA
#define PB_GPU_CALLBACKS(init_fn, batch_fn, cleanup_fn)                                            \
    .init = (init_fn), .process_batch = (batch_fn), .cleanup = (cleanup_fn)
#else
#define PB_GPU_CALLBACKS(init_fn, batch_fn, cleanup_fn) .unavailable_reason = PB_NO_CUDA_REASON
#endif

struct pb_stage_ops {
    const char *name;
    const char *summary;         /* one line for `pbench list`           */
    unsigned flags;
    const struct pb_opt *opts;   /* option table, may be NULL            */
    size_t opts_size;            /* size of the struct opts describe     */
    /* NULL when available in this build, else why not (e.g. "built
     * without CUDA"). The entry is listed either way. */
    const char *unavailable_reason;
    /* Stages with a `device` option: where its int sits in the options,
     * and the GPU version (same name and options, PB_STAGE_GPU). */
    bool has_device;
    size_t device_offset;
    const struct pb_stage_ops *gpu;

    /* Optional: the rules between the stage's options (e.g. resize takes
     * size or shorter_side, not both), checked from the options alone, so
     * pb_config_validate rejects a bad config at its line and column before
     * any data is made. Writes the sentence to msg (e.g. "pipeline.resize
     * takes size or shorter_side, not both") and returns PB_ERR_CONFIG, or
     * returns PB_OK. init calls it too and keeps only the checks that need
     * the plan (the input's shape). */
    int (*validate)(const void *opts, char *msg, size_t msglen);
    /* Optional: whether the stage takes images of `channels` channels, as
     * the decoder before it declares them from its options alone (e.g.
     * normalize's count of mean and std values). PB_OK, or PB_ERR_CONFIG
     * with the sentence in msg; pb_config_validate reports it at the
     * stage's line and column. Set on the CPU version (the registry's). */
    int (*validate_channels)(const void *opts, int channels, char *msg, size_t msglen);

    /* Creates per-worker state from the resolved options. in describes the
     * largest input; the stage fills out with its largest output.
     * decoder/decoder_opts are set for PB_STAGE_DECODER stages. */
    int (*init)(void **state, const void *opts, const struct pb_stage_plan *in,
                struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                const void *decoder_opts, char *msg, size_t msglen);
    /* Optional: the smallest input (height, width) this stage wants given
     * its options, e.g. a crop to 224 wants at least 224x224. Lets a
     * decoder before it choose a reduced decode size. */
    void (*min_input)(const void *opts, int32_t *height, int32_t *width);
    /* Optional: the window of a height x width input this stage will read
     * for the sample of this seed, drawn exactly as process() draws it (the
     * same random draws), so the decoder before it can decode only that
     * window. Returns false when it reads the whole input or more (a crop
     * padded with zeros). */
    bool (*window)(const void *opts, uint64_t seed, int height, int width,
                   struct pb_window *window);
    /* Worker side: one sample. Returns PB_OK, PB_ERR_DATA for a bad sample
     * (the run's on_error policy applies) or PB_ERR for a failure. When
     * the output does not fit in out_capacity, a stage may instead set
     * out_bytes to the size it needs and return PB_ERR_NOSPACE: between
     * stages, the pipeline grows its buffer once and calls again (so
     * variable-sized images need no per-sample allocation after warm-up). */
    int (*process)(void *state, struct pb_sample *sample);
    /* Optional, first worker stage only: the samples of the batch the
     * worker starts, in the order process() will see them (paths[j] is
     * sample j's file or object), so a reader may ask for the next ones
     * ahead (object storage's requests in flight). The array stays valid
     * until the batch is built. */
    void (*batch_start)(void *state, const char *const *paths, uint32_t count);
    /* Consumer side: one batch. */
    int (*process_batch)(void *state, struct pb_batch *batch, char *msg, size_t msglen);
    void (*cleanup)(void *state);
};

/* The registry: every stage pbench knows, available or not. */
const struct pb_stage_ops *pb_stage_find(const char *name);
/* The version of ops that its options' `device` selects (ops itself for
 * stages without one). */
const struct pb_stage_ops *pb_stage_for_device(const struct pb_stage_ops *ops, const void *opts);
/* to_device's `stream: compute` (copies on the compute stream). */
bool pb_to_device_on_compute(const void *opts);
const struct pb_stage_ops *const *pb_stage_all(size_t *count);

#endif
