/* The repeat (bench/run/repeat.c): one point measured, whatever engine
 * delivers its batches. Every engine is a row of the engine table
 * (bench/base/engine_row.h) and a set of ops (struct pb_engine_ops, in
 * the spirit of fio's ioengine_ops): open a point, open a round, deliver a
 * batch, the loop's step on it, release it, close the round, close the
 * point. The loop over those ops is written once, here: the warm-up, the
 * start of the measured part and its CPU clocks, the stopping rule, the
 * decider's word in a multi-rank run, the part's end (its wait, its CPU,
 * the machine's interference), the totals, the rules that keep or drop a
 * repeat cut short, and the paired repeat of --overhead.
 *
 * Two sets of ops exist: pbench's own threads (bench/run/runner.c,
 * pb_runner_ops) and an engine that is another process speaking the
 * protocol of docs/engines.md (bench/run/engine.c, pb_process_ops; the
 * torch engine and a wrapped job). A row says which by in_process. */
#ifndef PB_REPEAT_H
#define PB_REPEAT_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/config/config.h"
#include "bench/base/engine_row.h"
#include "bench/result/result.h"
#include "bench/run/hooks.h"
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
 * starts loader.engine's engine for spec (allocating point->repeats for
 * run.repeats the first time), each pb_point_repeat runs one round and
 * appends it to point->repeats (with measure_overhead, also a paired round
 * with stage timing flipped, writing the throughput lost to timing in %
 * into *overhead_pct), close ends it. The caller calls pb_point_summarize
 * when the point's rounds are done. */
struct pb_point_run;
int pb_point_open(const struct pb_spec *spec, const struct pb_dataset *ds,
                  const struct pb_run_hooks *hooks, struct pb_point_result *point,
                  struct pb_point_run **run, char *msg, size_t msglen);
/* pb_point_open for row's engine rather than loader.engine's (a test runs
 * an engine of its own this way). */
int pb_point_open_row(const struct pb_engine_row *row, const struct pb_spec *spec,
                      const struct pb_dataset *ds, const struct pb_run_hooks *hooks,
                      struct pb_point_result *point, struct pb_point_run **run, char *msg,
                      size_t msglen);
int pb_point_repeat(struct pb_point_run *run, int repeat, bool measure_overhead,
                    double *overhead_pct, char *msg, size_t msglen);
void pb_point_close(struct pb_point_run *run);

#endif
