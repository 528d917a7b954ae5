/* An engine that is another process (loader.engine: torch): pbench starts
 * it for a point, speaks the protocol of docs/engines.md with it over
 * pipes, and fills the same struct pb_point_result that its own runner
 * fills, so the stopping rule, statistics, sinks, compare and history
 * need no change.
 *
 * engine_proc.c is the process: finding and starting it, the frames on
 * its record pipe, the commands on its stdin, the tail of its stderr, and
 * what /proc says of it and its workers (CPU time, PSS). engine.c is the
 * measurement: one repeat's batches through the stopping rule into the
 * repeat's totals, batch records and stage rows. */
#ifndef PB_ENGINE_H
#define PB_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/config/config.h"
#include "bench/result/result.h"
#include "pipelines/dataset.h"

struct pb_run_hooks; /* bench/run/runner.h */
struct pb_engine_run;

/* Starts the engine for spec's point and waits for its `ready`. Returns
 * PB_OK, PB_ERR_CONFIG (the engine refused the config, or its interpreter
 * lacks a package: msg says which, at the config's line where the engine
 * named the option), or PB_ERR with msg and the engine's last words. */
int pb_engine_open(const struct pb_spec *spec, const struct pb_dataset *ds,
                   const struct pb_run_hooks *hooks, struct pb_point_result *point,
                   struct pb_engine_run **out, char *msg, size_t msglen);

/* One repeat, appended to point->repeats as pb_point_repeat does (with
 * measure_overhead, also the paired repeat without stage timing). */
int pb_engine_repeat(struct pb_engine_run *er, int repeat, bool measure_overhead,
                     double *overhead_pct, char *msg, size_t msglen);

/* Ends the engine (close, then SIGTERM and SIGKILL if it lingers). */
void pb_engine_close(struct pb_engine_run *er);

/* ---- the process (engine_proc.c) ------------------------------------ */

#define PB_ENGINE_PROTOCOL 1
#define PB_ENGINE_MAX_COLUMNS 32
#define PB_ENGINE_MAX_COUNTERS 8
#define PB_ENGINE_MAX_WORKERS 256

struct pb_engine_proc;

/* The folder the engines live in: $PBENCH_ENGINES, else pbench's share
 * folder's engines/ (installed, or the source tree's; bench/sys/paths.h). */
const char *pb_engine_dir(char *buf, size_t buflen);

/* The folder of spec's config file ("." for none): what the engine
 * resolves loader.python_path and your modules' relative paths against. */
const char *pb_engine_config_dir(const struct pb_spec *spec, char *buf, size_t buflen);

/* Starts `python -m pbench_torch` for spec with its pipes. PB_OK, or
 * PB_ERR_CONFIG with msg when the interpreter cannot be run. */
int pb_engine_proc_start(const struct pb_spec *spec, struct pb_engine_proc **out, char *msg,
                         size_t msglen);

/* Sends one command line (a JSON object, without its newline). */
int pb_engine_proc_send(struct pb_engine_proc *p, json_t *command);

#define PB_ENGINE_NO_FRAME 1 /* pb_engine_proc_frame: none came in time */

/* The next frame within timeout_ms (-1: wait): PB_OK with *type (1 JSON,
 * 2 batch), *data and *len valid until the next call; PB_ENGINE_NO_FRAME when
 * none came; PB_ERR with msg when the engine ended or broke the
 * protocol (its stderr's last lines in msg). */
int pb_engine_proc_frame(struct pb_engine_proc *p, int timeout_ms, uint32_t *type,
                         const uint8_t **data, uint32_t *len, char *msg, size_t msglen);

/* The engine's process id, and the last lines it wrote to stderr. */
int pb_engine_proc_pid(const struct pb_engine_proc *p);
const char *pb_engine_proc_stderr(struct pb_engine_proc *p);

/* Ends it: close (polite: up to 2 s), then SIGTERM to its group, then SIGKILL
 * after 0.5 s; reaps. */
void pb_engine_proc_end(struct pb_engine_proc *p, bool polite);

/* /proc readings of a process: CPU time (utime + stime) in ns, and its
 * proportional set size in bytes (smaps_rollup); 0 when it is gone. */
uint64_t pb_proc_cpu_ns(int pid);
uint64_t pb_proc_pss_bytes(int pid);

#endif
