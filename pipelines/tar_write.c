/* WebDataset tar shards, written: the shard writer behind
 * dataset.generate.shards and `pbench gen --shards` (declared in
 * pipelines/generate.h). It packs a generated folder's loose files into
 * shards; reading them is pipelines/dataset_tar.c. */
#include "pipelines/generate.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "pipelines/dataset.h"

/* Writes the files paths[0..count) into the tar at path (written to
 * path.tmp, then renamed), each a member named by its base name. */
static int write_shard(const char *path, char *const *paths, size_t count, char *msg, size_t msglen)
{
    char tmp[PB_PATH_MAX + 8];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    struct archive *a = archive_write_new();
    if (!a)
        return PB_ERR_NOMEM;
    int rc = PB_OK;
    archive_write_set_format_ustar(a);
    if (archive_write_open_filename(a, tmp) != ARCHIVE_OK) {
        snprintf(msg, msglen, "cannot write '%s': %s", tmp, archive_error_string(a));
        archive_write_free(a);
        return PB_ERR;
    }
    struct archive_entry *e = archive_entry_new();
    char buf[65536];
    for (size_t i = 0; i < count && rc == PB_OK; i++) {
        int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
        off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
        if (size < 0 || lseek(fd, 0, SEEK_SET) != 0) {
            snprintf(msg, msglen, "cannot read '%s': %s", paths[i], strerror(errno));
            rc = PB_ERR;
            break;
        }
        const char *base = strrchr(paths[i], '/');
        archive_entry_clear(e);
        archive_entry_set_pathname(e, base ? base + 1 : paths[i]);
        archive_entry_set_size(e, size);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        if (archive_write_header(a, e) != ARCHIVE_OK)
            rc = PB_ERR;
        ssize_t n;
        while (rc == PB_OK && (n = read(fd, buf, sizeof(buf))) > 0)
            if (archive_write_data(a, buf, (size_t)n) != n)
                rc = PB_ERR;
        close(fd);
        if (rc != PB_OK)
            snprintf(msg, msglen, "cannot write '%s': %s", tmp, archive_error_string(a));
    }
    archive_entry_free(e);
    if (archive_write_close(a) != ARCHIVE_OK && rc == PB_OK) {
        snprintf(msg, msglen, "cannot write '%s': %s", tmp, archive_error_string(a));
        rc = PB_ERR;
    }
    archive_write_free(a);
    if (rc == PB_OK && rename(tmp, path) != 0) {
        snprintf(msg, msglen, "cannot rename '%s': %s", tmp, strerror(errno));
        rc = PB_ERR;
    }
    if (rc != PB_OK)
        unlink(tmp);
    return rc;
}

int pb_dataset_pack_shards(const char *dir, int64_t shards, char *msg, size_t msglen)
{
    struct pb_dataset_spec spec = {.shard = {0, 1}};
    pb_strlcpy(spec.path, dir, sizeof(spec.path));
    struct pb_dataset files;
    int rc = pb_dataset_open(&spec, &files, msg, msglen);
    if (rc != PB_OK)
        return rc;
    uint64_t n = files.count, count = (uint64_t)shards < n ? (uint64_t)shards : n;
    for (uint64_t k = 0; k < count && rc == PB_OK; k++) {
        uint64_t lo = n * k / count, hi = n * (k + 1) / count;
        char path[PB_PATH_MAX];
        snprintf(path, sizeof(path), "%s/shard-%06llu.tar", dir, (unsigned long long)k);
        rc = write_shard(path, files.paths + lo, (size_t)(hi - lo), msg, msglen);
    }
    for (uint64_t i = 0; i < n && rc == PB_OK; i++)
        unlink(files.paths[i]);
    pb_dataset_free(&files);
    return rc;
}
