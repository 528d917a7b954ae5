/* Writing files so that readers never see half of one: results, traces and
 * anything else pbench leaves behind. */
#ifndef PB_FILEIO_H
#define PB_FILEIO_H

#include <stddef.h>
#include <stdio.h>

/* Creates the folders above path (mkdir -p of its folder); PB_OK, or PB_ERR
 * with msg naming the folder that could not be made. */
int pb_make_parent_dirs(const char *path, char *msg, size_t msglen);

/* Writes a file whose folder exists atomically: fill writes the contents
 * (returns 0, or -1 with errno set) into a temporary file beside path,
 * which is fsynced and renamed over path, and the folder is fsynced. PB_OK;
 * on failure PB_ERR, path is untouched, the temporary file is removed and
 * msg says why. */
int pb_write_atomic(const char *path, int (*fill)(FILE *f, void *user), void *user, char *msg,
                    size_t msglen);

#endif
