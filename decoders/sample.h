/* What a worker-side step and the step after it share: one sample on its
 * way through a worker's pipeline (struct pb_sample), the plan each is
 * given at init (struct pb_stage_plan) and the window a crop stage will
 * read (struct pb_window). Decoders and stages both use these; the stage
 * interface (pipelines/stage.h) and the decoder interface
 * (decoders/decoder.h) build on them, so a decoder needs nothing of
 * pipelines/. */
#ifndef PB_DECODERS_SAMPLE_H
#define PB_DECODERS_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/tensor.h"

struct pb_dataset_spec;

#define PB_MAX_SUBSTAGES 6
/* A sub-stage time that did not happen for this sample (a connection
 * reused, so no connect): left out of the sub-stage's row, which then
 * counts only the samples it happened for. */
#define PB_SUBSTAGE_NONE UINT64_MAX
#define PB_MAX_COUNTERS 8

/* The most bytes one sample may take at any stage (4 GiB): a stage asking
 * for more (PB_ERR_NOSPACE with out_bytes above it) has read a corrupt
 * size, and the sample is a data error, not an allocation. */
#define PB_SAMPLE_MAX_BYTES ((size_t)1 << 32)

/* A window of an image, in its pixels: where a crop stage will read, drawn
 * before the image is decoded (fused decode and crop). */
struct pb_window {
    int32_t top, left, height, width;
    /* What the stage makes of the window: out_height x out_width pixels,
     * resampled when resamples is set, so a decoder may decode the window
     * reduced (JPEG DCT scaling) while it stays at least that large. */
    int32_t out_height, out_width;
    bool resamples;
};

/* One sample on its way through a worker's pipeline. The pipeline owns all
 * buffers: a stage reads in/in_bytes and writes at most out_capacity bytes
 * to out, then sets out_bytes and out_shape. */
struct pb_sample {
    uint64_t index;        /* index in the dataset                      */
    const char *path;      /* file the sample comes from, or NULL       */
    uint64_t file_bytes;   /* size of that file from the dataset index  */
    uint64_t seed;         /* per-sample seed: reproducible randomness  */
    /* A tar member (dataset.format: tar): its data starts at file_offset
     * in path and is file_bytes long; member is its key (NULL for a loose
     * file, read whole). file_offset PB_MEMBER_BAD: a bad member. */
    uint64_t file_offset;
    const char *member;
    /* A decoder that makes several samples of one visit of a file
     * (pb_decoder_ops.samples_per_visit): the visit's seed, the same for
     * all its samples, which one this is (0-based) and how many there are.
     * clips 0: the caller knows no visits (one sample, seed is the visit's). */
    uint64_t visit_seed;
    uint32_t clip, clips;

    const uint8_t *in;
    size_t in_bytes;
    struct pb_shape in_shape;

    uint8_t *out;
    size_t out_capacity;
    size_t out_bytes;
    struct pb_shape out_shape;

    uint64_t bytes_read;   /* I/O done by this stage, for MB/s          */
    /* Filled by decoders that declare sub-stages and counters (see
     * decoders/decoder.h); zeroed by the pipeline before each sample. */
    uint64_t substage_ns[PB_MAX_SUBSTAGES];
    uint64_t counters[PB_MAX_COUNTERS];
    char *msg;             /* on PB_ERR_DATA: why, e.g. libjpeg's text  */
    size_t msglen;
    /* Set by a decoder that decoded only the window the next stage asked
     * for (pb_stage_ops.window): that window of in, in in's pixels (after
     * any DCT scaling). The stage reads it instead of drawing its own and
     * clears the flag. */
    bool window_set;
    struct pb_window window;
    /* Set by a flip that left the mirroring to the next stage
     * (PB_STAGE_MIRRORS); that stage mirrors and clears it. */
    bool flip_pending;
};

/* What a stage is told at init and what it answers: the maximum input it
 * can receive and the maximum output it will produce. */
struct pb_stage_plan {
    struct pb_shape shape; /* max shape (dtype BYTES: height*width unused) */
    size_t max_bytes;      /* upper bound on bytes per sample            */
    int worker;            /* worker index, -1 for the consumer          */
    /* Input only: the smallest image the next sizing stage (resize, crop)
     * needs, from its min_input; 0 when nothing downstream says. A JPEG
     * decoder's `scale: auto` decodes no smaller than this. */
    int32_t want_height, want_width;
    /* Input only: the next stage's window callback and options, when the
     * stage right after this one has one (NULL otherwise). A decoder calls
     * it per sample once it knows the image's size, and may decode only
     * that window (then it sets the sample's window_set). */
    bool (*window)(const void *opts, uint64_t seed, int height, int width,
                   struct pb_window *window);
    const void *window_opts;
    /* Input only: the stage right after this one is the last worker stage
     * (it writes the batch slot) and has PB_STAGE_MIRRORS. A flip then
     * passes its input on as it is (out = in, no copy) with the sample's
     * flip_pending set when drawn. */
    bool next_mirrors;
    /* GPU stages: how many batches can be in flight on the device at once
     * (loader.device_prefetch), and a batch size bound for staging. */
    int inflight;
    int max_samples;
    int cache;             /* dataset.cache (enum pb_cache_mode)        */
    /* Input only: the dataset section (object storage: where the objects
     * are and how to ask for them). */
    const struct pb_dataset_spec *dataset;
    /* Output only: the sub-stages and counters the stage reports for this
     * run (NULL-terminated names, or NULL), as decoders declare theirs:
     * the read stage's request timings on a dataset in object storage. */
    const char *const *substages;
    const char *const *counters;
};

#endif
