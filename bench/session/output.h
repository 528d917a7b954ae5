/* Where a session's files go (bench/session/output.c): the result file
 * (-o, or results/NAME-YYYYmmdd-HHMMSS.json, claimed so that a session
 * started in the same second takes another name) and --trace's file,
 * decided and checked before any data is made. */
#ifndef PB_SESSION_OUTPUT_H
#define PB_SESSION_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/session/hooks.h"

/* Decides the result's path into path (for config name `name` when opts
 * give no -o) and checks it and --trace's: a path that cannot be written
 * (a missing or read-only folder, a full disk, a directory, a device),
 * that names one of the session's inputs (the configs, the baseline), or
 * a trace file that is the result file, is refused with the sentence in
 * msg (PB_ERR_CONFIG, or pb_output_check's code). *claimed is set when
 * the default file was made (empty), for the caller to remove if the
 * session writes nothing. Ranks other than 0 claim nothing. */
int pb_session_decide_output(const struct pb_session_opts *opts, const char *name, char *path,
                             size_t pathlen, bool *claimed, char *msg, size_t msglen);

#endif
