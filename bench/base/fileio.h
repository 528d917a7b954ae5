/* Writing files so that readers never see half of one: results, traces and
 * anything else pbench leaves behind. */
#ifndef PB_FILEIO_H
#define PB_FILEIO_H

#include <stdbool.h>
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

/* Checks, before a run, that a file can be written at path so that a
 * result is not lost after it: the file it names (pb_output_target) has a
 * folder that exists, takes a new file (a temporary file is made there and
 * removed) and has free space. Creates no folder. PB_OK; PB_ERR_CONFIG
 * with the sentence in msg ("PATH: the folder /x/y does not exist; create
 * it, pbench makes no folder for -o"), or pb_output_target's code and
 * sentence. */
int pb_output_check(const char *path, char *msg, size_t msglen);

/* Whether a and b name the same file: by device and inode when both exist,
 * else by their resolved paths (links followed, "." and ".." removed from
 * the part that exists). */
bool pb_same_file(const char *a, const char *b);

/* pb_output_check, and then that path names none of the count files in
 * inputs (NULL entries skipped) by pb_same_file: PB_ERR_CONFIG with "PATH
 * is the input INPUT; give another file" in msg for one that does. */
int pb_output_check_inputs(const char *path, const char *const *inputs, int count, char *msg,
                           size_t msglen);

/* Claims a new file for writing: stem followed by ext ("results/NAME-DATE"
 * and ".json"), or when that exists stem-2 then stem-3 and so on, created
 * empty with O_EXCL so that two processes never claim one name. The folder
 * must exist. Writes the claimed name into path. PB_OK; PB_ERR with msg
 * naming the folder and why when no file can be made. The caller writes
 * the file (pb_write_atomic replaces the empty claim) or gives it back
 * with pb_release_claim. */
int pb_claim_new_file(const char *stem, const char *ext, char *path, size_t pathlen, char *msg,
                      size_t msglen);

/* Removes a file pb_claim_new_file made when it is still empty: nothing
 * was written into it. */
void pb_release_claim(const char *path);

#endif
