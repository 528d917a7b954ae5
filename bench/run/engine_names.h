/* Sample names and the sample index of an engine that is another process
 * (engine_names.c): the files of your own Dataset's slowest samples, asked
 * of the engine, and the index of pbench's dataset the engine reads. */
#ifndef PB_ENGINE_NAMES_H
#define PB_ENGINE_NAMES_H

#include <stddef.h>

#include "bench/result/result.h"
#include "pipelines/dataset.h"

struct pb_engine_proc; /* bench/run/engine_proc.h */

/* Your own Dataset's samples (dataset.python) are not in pbench's index:
 * asks the engine, between repeats, for the files of rep's slowest
 * samples (the `names` command) and writes them into the rows' slowest
 * files; a sample the Dataset names no file for says so. Waits up to
 * timeout_s for the answer (engine_names.c). */
void pb_engine_name_slowest(struct pb_engine_proc *p, struct pb_repeat_result *rep,
                            double timeout_s);

/* Writes the sample index the engine reads (docs/engines.md) into a new
 * temporary file, its name into path: per sample its offset (-1 a loose
 * file, -2 a tar member pbench found unreadable), size, member and path,
 * each ended by a NUL. PB_OK, or PB_ERR with msg (path "" when none was
 * made). */
int pb_engine_write_index(const struct pb_dataset *ds, char *path, size_t pathlen, char *msg,
                          size_t msglen);

#endif
