/* The runner: one point (one set of loader settings) measured as the
 * design card's measurement rules say.
 *
 * Workers (threads) build whole batches, PyTorch style: batch k is built by
 * worker k % workers, sample by sample (read -> decode -> stages) straight
 * into its slot of a pooled, 64-byte aligned (or pinned) batch buffer. The
 * consumer thread is the training loop: it waits for the next batch (the
 * stall), runs consumer-side stages, simulates a step of run.step_ms and
 * returns the buffer. Each repeat is a separate round: warm-up batches,
 * then a measured part that ends on the stopping rule.
 *
 * The runner's parts: the stage instances per thread (bench/run/chain.h), the
 * batch pool and ready queue (bench/run/queue.h), per-thread stage measurements
 * merged into stage rows (bench/run/stagestats.h), the stopping rule
 * (bench/run/stoprule.h), the system sampler (bench/run/sysmon.h) and the device
 * side's accounting (bench/run/gpu_acc.h). runner.c holds the round's
 * steps as the engine's ops (waiting for a batch, the loop's step on it,
 * the watchdog, joining the workers); worker.c the hot path (build_batch)
 * and the worker threads; runner_setup.c the set-up. The loop over the
 * ops, the measured part and its totals are bench/run/repeat.c's. */
#ifndef PB_RUNNER_H
#define PB_RUNNER_H

#include "bench/run/engine_ops.h"

/* The ops of pbench's own engine (bench/run/engine_ops.h): its row is
 * pb_engine_pbench_row; the one loop (bench/run/repeat.h) drives them. */
extern const struct pb_engine_ops pb_runner_ops;

#endif
