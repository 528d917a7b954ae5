/* Writing files so that readers never see half of one: results, traces and
 * anything else pbench leaves behind. */
#ifndef PB_FILEIO_H
#define PB_FILEIO_H

#include <stddef.h>
#include <stdio.h>

/* Creates the folders above path (mkdir -p of its folder); PB_OK, or PB_ERR
 * with msg naming the folder that could not be made. */
int pb_make_parent_dirs(const char *path, char *msg, size_t msglen);

/* The file that writing path replaces or creates: path itself, or the
 * file a symbolic link (or a chain of them) names, so that the link stays
 * a link. Writes that name into target. PB_OK when it is a regular file or
 * does not exist yet; PB_ERR_CONFIG, with "PATH: is a character device,
 * not a file; give a file path" in msg, for a directory, a device, a FIFO,
 * a socket, a path ending in '/' or a loop of links; PB_ERR when the path
 * cannot be looked up. Nothing is created. */
int pb_output_target(const char *path, char *target, size_t targetlen, char *msg, size_t msglen);

/* Writes a file whose folder exists atomically: fill writes the contents
 * (returns 0, or -1 with errno set) into a temporary file beside the file
 * path names (pb_output_target: a link's target), which is fsynced and
 * renamed over that file, and the folder is fsynced. Never replaces
 * something that is not a regular file. PB_OK; on failure PB_ERR, path
 * is untouched, the temporary file is removed and msg says why (for a
 * path pb_output_target refuses, its sentence). */
int pb_write_atomic(const char *path, int (*fill)(FILE *f, void *user), void *user, char *msg,
                    size_t msglen);

#endif
