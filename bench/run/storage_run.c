/* The storage side of a run (bench/run/storage_run.h): dataset.cache at each repeat's
 * start, the dataset's description in the result, and the storage ceiling calibrate measures. */
#include "bench/run/storage_run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/base/stats.h"
#include "bench/run/sysmon.h"
#include "decoders/image.h"
#include "pipelines/remote.h"
#include "pipelines/storage.h"

/* Residency left after an eviction above this share means the file system
 * keeps the pages whatever pbench asks (tmpfs, ramfs, some overlays). */
#define EVICTION_FAILED_PCT 50.0

/* Whether the file system under the dataset takes O_DIRECT opens. */
static bool direct_works(const struct pb_dataset *ds)
{
    char *const *paths;
    const uint64_t *sizes;
    if (pb_dataset_storage_files(ds, &paths, &sizes) == 0)
        return false;
    int fd = open(paths[0], O_RDONLY | O_CLOEXEC | O_DIRECT | O_NONBLOCK);
    if (fd < 0)
        return errno != EINVAL;
    close(fd);
    return true;
}

/* Reads every storage file once, start to end, so their pages are in the
 * page cache; returns the bytes read. */
static uint64_t read_through(const struct pb_dataset *ds)
{
    char *const *paths;
    const uint64_t *sizes;
    size_t n = pb_dataset_storage_files(ds, &paths, &sizes);
    char *buf = malloc(1 << 20);
    uint64_t total = 0;
    for (size_t i = 0; buf && i < n; i++) {
        int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t got;
        while ((got = read(fd, buf, 1 << 20)) > 0)
            total += (uint64_t)got;
        close(fd);
    }
    free(buf);
    return total;
}

/* dataset.cache: warm means warm: a dataset not all in the page cache (a
 * cold run before, another job's reads) is read once before the repeat
 * when it fits in half the available memory, so the repeat reads from
 * memory as a training job's later epochs do; said in the point. */
static void make_warm(const struct pb_dataset *ds, struct pb_point_result *point,
                      struct pb_residency *r)
{
    uint64_t available = pb_mem_available_bytes();
    if (!r->files_checked || r->resident_pct >= 99.0 || ds->total_bytes == 0 ||
        (available && ds->total_bytes > available / 2))
        return;
    double before = r->resident_pct;
    uint64_t bytes = read_through(ds);
    if (pb_residency_measure(ds, r) != PB_OK)
        return;
    pb_point_warn(point,
                  "dataset.cache: warm: %.0f%% of the dataset was in the page cache at a "
                  "repeat's start, so pbench read it once (%.1f MiB) before measuring, as warm "
                  "means: %.0f%% in memory after",
                  before, (double)bytes / 1048576.0, r->resident_pct);
}

void pb_storage_repeat_start(const struct pb_spec *spec, const struct pb_dataset *ds,
                             struct pb_point_result *point, struct pb_repeat_result *rep)
{
    struct pb_residency r;
    pb_storage_before_repeat(ds, spec->dataset.cache, &r);
    if (ds->remote)
        return;
    if (spec->dataset.cache == PB_CACHE_WARM)
        make_warm(ds, point, &r);
    rep->page_cache_files_checked = r.files_checked;
    rep->page_cache_resident_pct = r.resident_pct;
    if (spec->dataset.cache != PB_CACHE_WARM && r.files_checked &&
        r.resident_pct > EVICTION_FAILED_PCT) {
        char fs[32];
        pb_storage_fs_name(ds, fs, sizeof(fs));
        pb_point_warn(point,
                      "dataset.cache: %s could not evict the dataset: %.0f%% stayed in the page "
                      "cache after posix_fadvise(DONTNEED) on this file system (%s), so reads "
                      "come from memory, not storage",
                      pb_cache_mode_names[spec->dataset.cache], r.resident_pct, fs);
    }
    if (spec->dataset.cache == PB_CACHE_DIRECT && !direct_works(ds)) {
        char fs[32];
        pb_storage_fs_name(ds, fs, sizeof(fs));
        pb_point_warn(point,
                      "dataset.cache: direct: this file system (%s) refuses O_DIRECT; files are "
                      "read through the page cache and evicted after each read, as cold does",
                      fs);
    }
}

/* The median size of up to 32 of the dataset's samples that are JPEGs,
 * from their headers (loose files and tar members alike). */
static void source_size(const struct pb_dataset *ds, struct pb_dataset_info *info)
{
    enum { PROBES = 32, HEAD = 256 * 1024 };
    uint64_t w[PROBES], h[PROBES];
    size_t n = 0;
    uint8_t *buf = malloc(HEAD);
    for (size_t k = 0; buf && k < PROBES && k < ds->count; k++) {
        size_t i = ds->count <= PROBES ? k : k * (ds->count / PROBES);
        uint64_t offset = ds->offsets ? ds->offsets[i] : 0;
        if (offset == PB_MEMBER_BAD)
            continue;
        int fd = open(ds->paths[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            continue;
        size_t want = ds->sizes[i] < HEAD ? (size_t)ds->sizes[i] : HEAD;
        ssize_t got = pread(fd, buf, want, (off_t)offset);
        close(fd);
        int width, height;
        if (got > 0 && pb_jpeg_dimensions(buf, (size_t)got, &width, &height)) {
            w[n] = (uint64_t)width;
            h[n++] = (uint64_t)height;
        }
    }
    free(buf);
    if (n == 0)
        return;
    pb_sort_u64(w, n);
    pb_sort_u64(h, n);
    info->source_width = w[n / 2];
    info->source_height = h[n / 2];
}

void pb_storage_dataset_info(const struct pb_spec *spec, const struct pb_dataset *ds,
                             struct pb_dataset_info *info)
{
    memset(info, 0, sizeof(*info));
    const struct pb_dataset_spec *d = &spec->dataset;
    pb_strlcpy(info->format, pb_dataset_format_names[d->format], sizeof(info->format));
    pb_strlcpy(info->path, d->path, sizeof(info->path));
    pb_strlcpy(info->cache, pb_cache_mode_names[d->cache], sizeof(info->cache));
    pb_storage_fs_name(ds, info->filesystem, sizeof(info->filesystem));
    char *const *paths;
    const uint64_t *sizes;
    info->files = pb_dataset_storage_files(ds, &paths, &sizes);
    info->shards = ds->shard_count;
    info->bytes = ds->total_bytes;
    info->bad_samples = ds->bad_samples;
    if (ds->remote) {
        pb_strlcpy(info->endpoint, ds->endpoint, sizeof(info->endpoint));
        pb_strlcpy(info->credentials, ds->credentials, sizeof(info->credentials));
        info->list_requests = ds->list_requests;
        info->list_s = (double)ds->list_ns / 1e9;
        info->requests_in_flight = (uint64_t)d->requests_in_flight;
    } else {
        source_size(ds, info);
    }
    /* This rank's samples per epoch (shard RANK/COUNT), as its sampler
     * splits them. */
    uint64_t count = d->shard.count > 0 ? (uint64_t)d->shard.count : 1;
    uint64_t rank = (uint64_t)d->shard.rank;
    info->samples = ds->offsets ? ds->count * (rank + 1) / count - ds->count * rank / count
                                : (ds->count > rank ? (ds->count - rank + count - 1) / count : 0);
    if (d->cache == PB_CACHE_WARM)
        return;
    char why[PB_MSG_MAX];
    info->cold_read_mb_per_s = pb_storage_cold_read_mb_per_s(
        ds, (size_t)1 << 20, PB_STORAGE_PROBE_BYTES, why, sizeof(why));
    /* Whether the mode can do here what it says, checked once up front
     * (every repeat's start checks the eviction again). */
    struct pb_residency r;
    pb_storage_before_repeat(ds, d->cache, &r);
    bool kept = r.files_checked && r.resident_pct > EVICTION_FAILED_PCT;
    bool refused = d->cache == PB_CACHE_DIRECT && !direct_works(ds);
    const char *opener = NULL; /* a decoder that reads its files through FFmpeg */
    for (int i = 0; i < spec->stage_count && d->cache == PB_CACHE_DIRECT; i++)
        if (spec->stages[i].decoder && (spec->stages[i].decoder->flags & PB_DECODER_OPENS_FILE))
            opener = spec->stages[i].decoder->name;
    size_t used = 0;
    if (kept)
        used += (size_t)snprintf(info->cache_note, sizeof(info->cache_note),
                                 "eviction has no effect on this file system: the dataset stays "
                                 "in the page cache, so reads come from memory");
    if (refused && used < sizeof(info->cache_note))
        used += (size_t)snprintf(info->cache_note + used, sizeof(info->cache_note) - used,
                                 "%sO_DIRECT is refused: files are read through the page cache "
                                 "and evicted after each read",
                                 used ? "; " : "");
    if (opener && !refused && used < sizeof(info->cache_note))
        snprintf(info->cache_note + used, sizeof(info->cache_note) - used,
                 "%sdecoder '%s' reads its files itself, through the page cache (not O_DIRECT), "
                 "and each is evicted after it is decoded",
                 used ? "; " : "", opener);
}

double pb_storage_cold_read_mb_per_s(const struct pb_dataset *ds, size_t block_bytes,
                                     uint64_t max_bytes, char *msg, size_t msglen)
{
    char *const *paths;
    const uint64_t *sizes;
    size_t files = pb_dataset_storage_files(ds, &paths, &sizes);
    char *buf = malloc(block_bytes);
    if (!buf || files == 0) {
        free(buf);
        snprintf(msg, msglen, "no dataset files to read");
        return 0;
    }
    pb_storage_evict(ds);
    uint64_t bytes = 0, start = pb_now_ns();
    for (size_t i = 0; i < files && (!max_bytes || bytes < max_bytes); i++) {
        int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            snprintf(msg, msglen, "%s: %s", paths[i], strerror(errno));
            free(buf);
            return 0;
        }
        ssize_t n;
        while ((n = read(fd, buf, block_bytes)) > 0)
            bytes += (uint64_t)n;
        close(fd); /* the pages stay cached, as a warm run expects them */
    }
    uint64_t ns = pb_now_ns() - start;
    free(buf);
    return ns ? (double)bytes / 1e6 / ((double)ns / 1e9) : 0;
}

double pb_storage_remote_mb_per_s(const struct pb_dataset_spec *d, const struct pb_dataset *ds,
                                  int in_flight, uint64_t max_bytes, double *objects_per_s,
                                  char *msg, size_t msglen)
{
    *objects_per_s = 0;
    struct pb_remote *r = NULL;
    struct pb_fetcher *f = NULL;
    uint8_t *buf = malloc(ds->max_bytes + 1);
    int rc = buf ? pb_remote_new(d, &r, msg, msglen) : PB_ERR_NOMEM;
    if (rc == PB_OK)
        rc = pb_fetcher_new(r, in_flight, ds->max_bytes + 1, &f, msg, msglen);
    size_t n = 0;
    uint64_t planned = 0;
    while (n < ds->count && n < UINT32_MAX && (n == 0 || planned < max_bytes))
        planned += ds->sizes[n++];
    uint64_t bytes = 0, start = pb_now_ns();
    if (rc == PB_OK)
        pb_fetcher_plan(f, (const char *const *)ds->paths, (uint32_t)n);
    for (size_t i = 0; rc == PB_OK && i < n; i++) {
        size_t got = 0;
        struct pb_fetch_cost cost;
        int one = pb_fetcher_get(f, ds->paths[i], buf, ds->max_bytes + 1, &got, &cost, msg, msglen);
        if (one == PB_ERR)
            rc = one;
        bytes += one == PB_OK ? got : 0;
    }
    double s = (double)(pb_now_ns() - start) / 1e9;
    pb_fetcher_free(f);
    pb_remote_free(r);
    free(buf);
    if (rc != PB_OK || s <= 0)
        return 0;
    *objects_per_s = (double)n / s;
    return (double)bytes / 1e6 / s;
}
