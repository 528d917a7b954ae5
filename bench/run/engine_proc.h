/* The process of an engine that is another process (engine_proc.c):
 * finding and starting it, the frames on its record pipe, the commands on
 * its stdin, the tail of its stderr, parking it between points, and what
 * /proc says of it and its workers (CPU time, PSS). */
#ifndef PB_ENGINE_PROC_H
#define PB_ENGINE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bench/config/config.h"
#include "bench/base/engine_row.h"
#include "bench/result/result.h"

struct pb_engine_proc;

/* The folder the engines live in: $PBENCH_ENGINES, else pbench's share
 * folder's engines/ (installed, or the source tree's; bench/sys/paths.h). */
const char *pb_engine_dir(char *buf, size_t buflen);

/* The folder of spec's config file ("." for none): what the engine
 * resolves loader.python_path and your modules' relative paths against. */
const char *pb_engine_config_dir(const struct pb_spec *spec, char *buf, size_t buflen);

/* Starts row's engine for spec (its interpreter and arguments: `python3 -m
 * pbench_torch`) with its pipes. PB_OK, or PB_ERR_CONFIG with msg when the
 * interpreter cannot be run. */
int pb_engine_proc_start(const struct pb_engine_row *row, const struct pb_spec *spec,
                         struct pb_engine_proc **out, char *msg, size_t msglen);

/* The command line p runs with python as its interpreter, for messages
 * ("/usr/bin/python3 -m pbench_torch"), into buf, which it returns. */
const char *pb_engine_proc_command(const struct pb_engine_proc *p, const char *python, char *buf,
                                   size_t buflen);

/* Sends one command line (a JSON object, without its newline). */
int pb_engine_proc_send(struct pb_engine_proc *p, json_t *command);

/* Names travel as bytes (docs/engines.md): key holds the name as text
 * (pb_json_text) and, when it is not UTF-8, key + "_bytes" its exact bytes
 * (pb_json_bytes). put sets both into obj (PB_OK, or PB_ERR_NOMEM); name
 * reads them back into buf and returns buf, or NULL when obj has no key. */
int pb_engine_put_name(json_t *obj, const char *key, const char *name);
const char *pb_engine_name(const json_t *obj, const char *key, char *buf, size_t buflen);

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

/* How the engine's process ended, once its record pipe has: "exited with
 * status 7", "was killed by signal 11 (SIGSEGV)" (waits up to 2 s for it
 * to be reaped). Into buf, which it returns. */
const char *pb_engine_proc_ending(struct pb_engine_proc *p, char *buf, size_t buflen);

/* "FILE:LINE:COLUMN: " where spec's config set option (the engine's dotted
 * key: "pipeline[2].interpolation", "loader.python"); "FILE: " when the
 * file did not set it (a -s override, a default). */
void pb_engine_option_place(const struct pb_spec *spec, const char *option, char *out,
                            size_t outlen);

/* Keeps an engine's whole traceback (a fatal's `traceback`) in the point's
 * engine object, made {"name": row's} where the engine sent no ready.
 * PB_OK or PB_ERR_NOMEM. */
int pb_engine_keep_traceback(struct pb_point_result *point, const struct pb_engine_row *row,
                             const char *traceback);

/* The last `lines` lines of traceback (its end's newlines, and a last line
 * that is message, left out), into buf, which it returns. */
const char *pb_engine_traceback_tail(const char *traceback, const char *message, int lines,
                                     char *buf, size_t buflen);

/* Ends it: close (polite: up to 2 s), then SIGTERM to its group, then SIGKILL
 * after 0.5 s; reaps. */
void pb_engine_proc_end(struct pb_engine_proc *p, bool polite);

/* Keeps p's process for the next point of the same engine, interpreter and
 * PYTHONPATH (pb_engine_proc_start takes it back, so a sweep pays for
 * starting Python and importing torch once): tells it to `release` what it
 * holds (its DataLoader's workers) and ends the one parked before. */
void pb_engine_proc_park(struct pb_engine_proc *p);

/* Ends the parked engine, if any (the session's end). */
void pb_engine_proc_release(void);

/* /proc readings of a process: CPU time (utime + stime) in ns, and its
 * proportional set size in bytes (smaps_rollup); 0 when it is gone. */
uint64_t pb_proc_cpu_ns(int pid);
uint64_t pb_proc_pss_bytes(int pid);

#endif
