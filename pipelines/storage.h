/* Storage, measured: how much of a dataset sits in the page cache (mincore
 * over mmap'ed files), the dataset.cache modes (warm, cold, direct) and the
 * eviction that makes `cold` read storage every epoch.
 *
 * The files storage is about are the dataset's files: its loose files, or
 * its tar shards (pb_dataset_storage_files). Nothing here runs on the hot
 * path except pb_storage_evict_range, one posix_fadvise call. */
#ifndef PB_STORAGE_H
#define PB_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipelines/dataset.h"

/* dataset.cache: warm reads through the page cache as a loader does;
 * cold evicts the dataset's files before each repeat and each file (or
 * tar member) after it is read; direct reads with O_DIRECT. */
enum pb_cache_mode { PB_CACHE_WARM = 0, PB_CACHE_COLD = 1, PB_CACHE_DIRECT = 2 };
extern const char *const pb_cache_mode_names[];

/* Files checked at most by one residency measurement; a larger dataset is
 * sampled (every k-th file), and says so. */
#define PB_RESIDENCY_MAX_FILES 4096

struct pb_residency {
    double resident_pct;    /* of the checked files' bytes               */
    uint64_t files_checked; /* < files_total: a sample                    */
    uint64_t files_total;
    uint64_t bytes_checked, bytes_resident;
    uint64_t files_failed; /* could not be opened or mapped              */
};

/* Measures the share of the dataset's bytes in the page cache: each file
 * (or every k-th when there are more than PB_RESIDENCY_MAX_FILES) is
 * mmap'ed and mincore'd, in windows, so no file is read. Returns PB_OK, or
 * PB_ERR when no file could be checked. */
int pb_residency_measure(const struct pb_dataset *ds, struct pb_residency *out);

/* Asks the kernel to drop the dataset's files from the page cache
 * (posix_fadvise DONTNEED; clean pages go without root). Returns how many
 * files could not be opened. */
uint64_t pb_storage_evict(const struct pb_dataset *ds);

/* Drops [offset, offset + bytes) of an open file from the page cache;
 * bytes 0: to the end. */
void pb_storage_evict_range(int fd, uint64_t offset, uint64_t bytes);

/* The file system the dataset's first file is on ("ext4", "tmpfs",
 * "overlay", "xfs", ... or "fs 0x..."), for the note that says why a
 * mode had no effect. */
void pb_storage_fs_name(const struct pb_dataset *ds, char *buf, size_t buflen);

/* What a repeat's start does for the cache mode: with cold (and direct,
 * whose reads should not find pages a warm run left) the files are evicted
 * first; then the residency is measured into out. */
void pb_storage_before_repeat(const struct pb_dataset *ds, int cache_mode,
                              struct pb_residency *out);

#endif
