/* A pipeline's stages instantiated for one thread of the runner.
 *
 * A spec's stages run in three places: the loader workers (read, decode,
 * CPU stages: per sample, into a batch slot), the consumer (consumer-side
 * stages on the whole batch) and the device (the stages after to_device).
 * pb_chain_split checks the order and picks the worker-side stages;
 * pb_chain_init_loader instantiates them for one loader thread, planning
 * each stage's output shape and largest size from the stage before it, so
 * the runner sizes batch slots and scratch buffers once. */
#ifndef PB_CHAIN_H
#define PB_CHAIN_H

#include <stddef.h>

#include "bench/config/config.h"
#include "bench/run/stagestats.h"
#include "pipelines/stage.h"

struct pb_stage_inst {
    const struct pb_stage_ops *ops;
    void *state;    /* from ops->init, released by ops->cleanup */
    int spec_index; /* its place in spec->stages */
};

struct pb_chain {
    struct pb_stage_inst stages[PB_MAX_STAGES];
    int count;
};

/* What a loader chain needs and gives: the largest intermediate output
 * (scratch), the largest final output (a batch slot) and its shape. */
struct pb_chain_sizes {
    size_t scratch_bytes;
    size_t slot_bytes;
    struct pb_shape sample_shape;
};

/* Writes the indexes of spec's worker-side stages into worker_spec (in
 * order, *worker_count of them). Returns PB_OK; PB_ERR_UNAVAILABLE for a
 * stage this build lacks; PB_ERR_CONFIG when a worker-side stage follows a
 * consumer-side one or there is none; msg says which. */
int pb_chain_split(const struct pb_spec *spec, int worker_spec[PB_MAX_STAGES], int *worker_count,
                   char *msg, size_t msglen);

/* Instantiates the worker-side stages for loader thread worker (-1: the
 * consumer loading itself) on input files of up to max_input_bytes, and
 * adds each to stats. chain must be empty; on failure it holds the stages
 * made so far (release with pb_chain_cleanup). Returns PB_OK or the failing
 * stage's error with msg. */
int pb_chain_init_loader(struct pb_chain *chain, const struct pb_spec *spec, const int *worker_spec,
                         int worker_count, uint64_t max_input_bytes, int worker,
                         struct pb_stage_stats *stats, struct pb_chain_sizes *sizes, char *msg,
                         size_t msglen);

/* Opens the device side when the consumer chain reaches a to_device stage
 * ss; returns PB_OK or an error with msg. */
typedef int (*pb_chain_device_fn)(void *user, const struct pb_stage_spec *ss, char *msg,
                                  size_t msglen);

/* Instantiates spec's consumer-side stages in order, each on batches as
 * the one before leaves them (the first as plan describes the loaders'
 * batches): CPU stages into cpu, the stages after to_device into gpu (at
 * most gpu_max, else PB_ERR_CONFIG), calling to_device(user, ...) at the
 * to_device stage. A stage whose init fails is kept in its chain, so
 * pb_chain_cleanup sees it. Returns PB_OK or the first error with msg. */
int pb_chain_init_consumer(struct pb_chain *cpu, struct pb_chain *gpu, int gpu_max,
                           const struct pb_spec *spec, const struct pb_stage_plan *plan,
                           pb_chain_device_fn to_device, void *user, char *msg, size_t msglen);

/* Cleans up every stage instance and empties the chain. */
void pb_chain_cleanup(struct pb_chain *chain);

#endif
