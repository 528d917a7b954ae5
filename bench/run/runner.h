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
 * side's accounting (bench/run/gpu_acc.h). runner.c holds the hot path
 * (build_batch), the worker threads, set-up and the repeat's steps. */
#ifndef PB_RUNNER_H
#define PB_RUNNER_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "bench/config/config.h"
#include "bench/result/result.h"
#include "bench/run/hooks.h"
#include "bench/run/stoprule.h"
#include "pipelines/dataset.h"

/* Runs spec over ds for run.repeats rounds and fills point (repeats and
 * summary; point->axes is left to the caller).
 * Returns PB_OK, PB_ERR_INTERRUPTED (partial results kept in point), or an
 * error with msg (PB_ERR_DATA under on_error: fail, naming the file;
 * PB_ERR_STALLED naming the stuck stage and its sample; the repeats
 * measured before it are kept in point, the one cut short marked
 * interrupted). The measured part never outlasts run.max_time_s by more
 * than the sampler's period, however long the loop waits for a batch. */
int pb_run_point(const struct pb_spec *spec, const struct pb_dataset *ds,
                 const struct pb_run_hooks *hooks, struct pb_point_result *point, char *msg,
                 size_t msglen);

/* The same in steps, so a sweep can interleave rounds across points: open
 * sets up workers' stages and the batch pool for spec (allocating
 * point->repeats for run.repeats the first time), each pb_point_repeat runs
 * one round and appends it to point->repeats (with measure_overhead, also
 * a paired round with stage timing flipped, writing the throughput lost to
 * timing in % into *overhead_pct), close frees it all. The caller calls
 * pb_point_summarize when the point's rounds are done. */
struct pb_point_run;
int pb_point_open(const struct pb_spec *spec, const struct pb_dataset *ds,
                  const struct pb_run_hooks *hooks, struct pb_point_result *point,
                  struct pb_point_run **run, char *msg, size_t msglen);
int pb_point_repeat(struct pb_point_run *run, int repeat, bool measure_overhead,
                    double *overhead_pct, char *msg, size_t msglen);
void pb_point_close(struct pb_point_run *run);

#endif
