/* An engine that is another process (a row with in_process false:
 * loader.engine torch, a wrapped job; bench/base/engine_row.h says how it
 * starts and how it is named): engine.c is its ops for the one measurement
 * loop (bench/run/repeat.h). pbench starts it for a point, speaks the
 * protocol of docs/engines.md with it over pipes, and turns its frames into
 * the loop's batches, so the stopping rule, statistics, sinks, compare and
 * history need no change. The process itself (finding and starting it, its
 * frames, its stderr, /proc's readings) is bench/run/engine_proc.h; the
 * names of your Dataset's samples and the sample index it reads,
 * bench/run/engine_names.h; its timed columns, bench/run/engine_columns.h. */
#ifndef PB_ENGINE_H
#define PB_ENGINE_H

#include "bench/run/engine_ops.h"

#define PB_ENGINE_PROTOCOL 1

/* The least an engine's start-up (import torch, make the Dataset) is waited
 * for where run.stage_timeout_s is left to its default. */
#define PB_ENGINE_STARTUP_MIN_S 60.0


/* The ops of an engine that is another process. */
extern const struct pb_engine_ops pb_process_ops;

#endif
