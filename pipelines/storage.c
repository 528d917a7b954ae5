/* Storage, measured (pipelines/storage.h): page-cache residency by mincore, the
 * dataset.cache modes, and the eviction that makes cold read storage every epoch. */
#include "pipelines/storage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bench/base/pb.h"

const char *const pb_cache_mode_names[] = {"warm", "cold", "direct", NULL};

/* mincore's vector covers this much of a file at a time (64 MiB: a 16 KiB
 * vector with 4 KiB pages), so a large shard needs no large vector. */
#define WINDOW_BYTES ((uint64_t)64 << 20)

/* Resident bytes of the open file fd of size bytes; -1 when it cannot be
 * mapped. */
static int64_t resident_bytes(int fd, uint64_t size, unsigned char *vec, uint64_t page)
{
    uint64_t resident = 0;
    for (uint64_t at = 0; at < size; at += WINDOW_BYTES) {
        uint64_t len = size - at < WINDOW_BYTES ? size - at : WINDOW_BYTES;
        void *map = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, fd, (off_t)at);
        if (map == MAP_FAILED)
            return -1;
        int rc = mincore(map, (size_t)len, vec);
        uint64_t pages = (len + page - 1) / page;
        if (rc == 0) {
            for (uint64_t p = 0; p < pages; p++) {
                if (vec[p] & 1) {
                    uint64_t end = (p + 1) * page < len ? (p + 1) * page : len;
                    resident += end - p * page;
                }
            }
        }
        munmap(map, (size_t)len);
        if (rc != 0)
            return -1;
    }
    return (int64_t)resident;
}

int pb_residency_measure(const struct pb_dataset *ds, struct pb_residency *out)
{
    memset(out, 0, sizeof(*out));
    char *const *paths;
    const uint64_t *sizes;
    size_t files = pb_dataset_storage_files(ds, &paths, &sizes);
    out->files_total = files;
    if (files == 0)
        return PB_ERR;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    unsigned char *vec = malloc((size_t)(WINDOW_BYTES / page + 1));
    if (!vec)
        return PB_ERR_NOMEM;
    size_t stride = files > PB_RESIDENCY_MAX_FILES
                        ? (files + PB_RESIDENCY_MAX_FILES - 1) / PB_RESIDENCY_MAX_FILES
                        : 1;
    for (size_t i = 0; i < files; i += stride) {
        if (sizes[i] == 0)
            continue;
        /* O_NONBLOCK: a file swapped for a FIFO after indexing must not
         * block the loop's thread here (it has no watchdog). */
        int fd = open(paths[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        int64_t resident = fd >= 0 ? resident_bytes(fd, sizes[i], vec, page) : -1;
        if (fd >= 0)
            close(fd);
        if (resident < 0) {
            out->files_failed++;
            continue;
        }
        out->files_checked++;
        out->bytes_checked += sizes[i];
        out->bytes_resident += (uint64_t)resident;
    }
    free(vec);
    if (out->files_checked == 0)
        return PB_ERR;
    out->resident_pct =
        out->bytes_checked ? 100.0 * (double)out->bytes_resident / (double)out->bytes_checked : 0;
    return PB_OK;
}

void pb_storage_evict_range(int fd, uint64_t offset, uint64_t bytes)
{
    /* Advice only: a failure leaves pages cached, which the residency
     * measurement then shows. */
    (void)posix_fadvise(fd, (off_t)offset, (off_t)bytes, POSIX_FADV_DONTNEED);
}

uint64_t pb_storage_evict(const struct pb_dataset *ds)
{
    char *const *paths;
    const uint64_t *sizes;
    size_t files = pb_dataset_storage_files(ds, &paths, &sizes);
    uint64_t failed = 0;
    for (size_t i = 0; i < files; i++) {
        int fd = open(paths[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) {
            failed++;
            continue;
        }
        /* Written pages must reach storage before they can be dropped. */
        (void)fdatasync(fd);
        pb_storage_evict_range(fd, 0, 0);
        close(fd);
    }
    return failed;
}

void pb_storage_fs_name(const struct pb_dataset *ds, char *buf, size_t buflen)
{
    if (ds->remote) {
        snprintf(buf, buflen, "%s", ds->paths && ds->count && strncmp(ds->paths[0], "s3://", 5) == 0
                                        ? "s3" : "http");
        return;
    }
    static const struct {
        long magic;
        const char *name;
    } known[] = {
        {0xEF53, "ext4"},     {0x01021994, "tmpfs"}, {0x794c7630, "overlay"},
        {0x58465342, "xfs"},  {0x9123683E, "btrfs"}, {0x6969, "nfs"},
        {0x65735546, "fuse"}, {0x858458f6, "ramfs"}, {0x2FC12FC1, "zfs"},
        {0x01021997, "9p"},   {0xFF534D42, "cifs"},  {0x73717368, "squashfs"},
        {0xF2F52010, "f2fs"}, {0x5346414F, "afs"},   {0x62656572, "sysfs"},
    };
    char *const *paths;
    const uint64_t *sizes;
    struct statfs st;
    if (pb_dataset_storage_files(ds, &paths, &sizes) == 0 || statfs(paths[0], &st) != 0) {
        snprintf(buf, buflen, "unknown");
        return;
    }
    for (size_t i = 0; i < PB_ARRAY_LEN(known); i++) {
        if ((long)st.f_type == known[i].magic) {
            snprintf(buf, buflen, "%s", known[i].name);
            return;
        }
    }
    snprintf(buf, buflen, "fs 0x%lx", (unsigned long)st.f_type);
}

void pb_storage_before_repeat(const struct pb_dataset *ds, int cache_mode, struct pb_residency *out)
{
    if (ds->remote) { /* object storage: no page cache of ours to measure */
        memset(out, 0, sizeof(*out));
        return;
    }
    if (cache_mode != PB_CACHE_WARM)
        pb_storage_evict(ds);
    if (pb_residency_measure(ds, out) != PB_OK)
        out->files_checked = 0;
}
