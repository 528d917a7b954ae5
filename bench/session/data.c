/* The dataset a session measures (see data.h). */
#include "bench/session/data.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/sys/mpi.h"
#include "bench/sys/paths.h"
#include "pipelines/generate.h"
#include "pipelines/remote.h"

/* Whether dataset.path is a folder still to be made: missing or empty,
 * and not a glob (a glob names files, never a folder to fill). */
static bool needs_generating(const char *path)
{
    if (strpbrk(path, "*?[") || pb_remote_is_url(path))
        return false;
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT;
    bool empty = true;
    for (struct dirent *e; empty && (e = readdir(d));)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

/* ---- a listing shared by the ranks (dataset.list: once) ---------------- */

/* What rank 0 sends: the outcome, the listing's figures, then count sizes
 * and count NUL-ended URLs. */
struct listing_head {
    int32_t rc;
    char msg[PB_MSG_MAX * 2];
    uint64_t count, list_requests, list_ns, names_bytes;
    char credentials[192], endpoint[512], skipped[PB_MSG_MAX];
};

static void *listing_pack(int rc, const char *msg, const struct pb_dataset *ds, size_t *len)
{
    struct listing_head h = {.rc = rc};
    pb_strlcpy(h.msg, msg, sizeof(h.msg));
    if (rc == PB_OK) {
        h.count = ds->count;
        h.list_requests = ds->list_requests;
        h.list_ns = ds->list_ns;
        pb_strlcpy(h.credentials, ds->credentials, sizeof(h.credentials));
        pb_strlcpy(h.endpoint, ds->endpoint, sizeof(h.endpoint));
        pb_strlcpy(h.skipped, ds->skipped, sizeof(h.skipped));
        for (size_t i = 0; i < ds->count; i++)
            h.names_bytes += strlen(ds->paths[i]) + 1;
    }
    *len = sizeof(h) + h.count * sizeof(uint64_t) + h.names_bytes;
    uint8_t *blob = malloc(*len);
    if (!blob)
        return NULL;
    memcpy(blob, &h, sizeof(h));
    uint8_t *at = blob + sizeof(h);
    if (h.count)
        memcpy(at, ds->sizes, h.count * sizeof(uint64_t));
    at += h.count * sizeof(uint64_t);
    for (size_t i = 0; i < h.count; i++) {
        size_t n = strlen(ds->paths[i]) + 1;
        memcpy(at, ds->paths[i], n);
        at += n;
    }
    return blob;
}

/* The dataset rank 0 listed, from its blob (which ds's arena takes over). */
static int listing_unpack(uint8_t *blob, struct pb_dataset *ds, char *msg, size_t msglen)
{
    struct listing_head h;
    memcpy(&h, blob, sizeof(h));
    memset(ds, 0, sizeof(*ds));
    if (h.rc != PB_OK) {
        snprintf(msg, msglen, "%s", h.msg);
        free(blob);
        return h.rc;
    }
    ds->remote = true;
    ds->list_requests = h.list_requests;
    ds->list_ns = h.list_ns;
    pb_strlcpy(ds->credentials, h.credentials, sizeof(ds->credentials));
    pb_strlcpy(ds->endpoint, h.endpoint, sizeof(ds->endpoint));
    pb_strlcpy(ds->skipped, h.skipped, sizeof(ds->skipped));
    ds->paths = malloc((h.count ? h.count : 1) * sizeof(*ds->paths));
    ds->sizes = malloc((h.count ? h.count : 1) * sizeof(*ds->sizes));
    if (!ds->paths || !ds->sizes) {
        free(blob);
        pb_dataset_free(ds);
        snprintf(msg, msglen, "out of memory for the %llu objects rank 0 listed",
                 (unsigned long long)h.count);
        return PB_ERR_NOMEM;
    }
    memcpy(ds->sizes, blob + sizeof(h), h.count * sizeof(uint64_t));
    ds->arena = (char *)blob; /* the names stay where they arrived */
    char *name = ds->arena + sizeof(h) + h.count * sizeof(uint64_t);
    for (size_t i = 0; i < h.count; i++) {
        ds->paths[i] = name;
        name += strlen(name) + 1;
        ds->total_bytes += ds->sizes[i];
        if (ds->sizes[i] > ds->max_bytes) {
            ds->max_bytes = ds->sizes[i];
            ds->max_index = i;
        }
    }
    ds->count = h.count;
    return PB_OK;
}

/* Opens the dataset; one in object storage under mpirun with
 * dataset.list: once is listed by rank 0 alone and sent to the others,
 * so N ranks do not make N listings (LIST storms). */
static int open_listed(const struct pb_dataset_spec *d, volatile sig_atomic_t *stop,
                       struct pb_dataset *ds, char *msg, size_t msglen)
{
    if (!pb_remote_is_url(d->path))
        return pb_dataset_open(d, ds, msg, msglen);
    if (d->list != PB_LIST_ONCE || pb_mpi()->size < 2)
        return pb_remote_dataset_open(d, stop, ds, msg, msglen);
    int rc = PB_OK;
    void *blob = NULL;
    size_t len = 0;
    if (pb_mpi_is_root()) {
        msg[0] = '\0';
        rc = pb_remote_dataset_open(d, stop, ds, msg, msglen);
        blob = listing_pack(rc, msg, ds, &len);
        if (!blob)
            pb_mpi_abort(1, "out of memory packing the listing for the other ranks");
    }
    pb_mpi_share(&blob, &len);
    if (pb_mpi_is_root()) {
        free(blob);
        return rc;
    }
    return listing_unpack(blob, ds, msg, msglen);
}

/* Opens the dataset the spec names, generating it first when it is
 * missing, saying so; the stop flag stops the generation. */
int pb_session_open_dataset(const struct pb_session_opts *opts, const struct pb_session_hooks *hooks,
                        const struct pb_spec *spec, struct pb_dataset *ds, char *msg,
                        size_t msglen)
{
    const struct pb_dataset_spec *d = &spec->dataset;
    char inner[PB_MSG_MAX * 2];
    int rc = PB_OK;
    memset(ds, 0, sizeof(*ds));
    /* Under mpirun, rank 0 makes the data first, then the first rank of a
     * node that still sees no data (a node-local path), each step ending on
     * a barrier; a single process has one step and no barrier. */
    if (pb_path_in_data_cache(d->path))
        pb_session_say(hooks, PB_SESSION_INFO,
                       "data: %s (%s; the cache folder: $PBENCH_DATA, else "
                       "$XDG_CACHE_HOME/pbench, else ~/.cache/pbench)",
                       d->path,
                       !needs_generating(d->path) ? "cached"
                       : d->has_generate          ? "generated on first use"
                                                  : "missing: the config generates nothing");
    for (int step = 0; rc == PB_OK && step < pb_mpi_generation_steps(); step++) {
        if (!d->has_generate || !pb_mpi_generates(step) || !needs_generating(d->path)) {
            pb_mpi_barrier();
            continue;
        }
        pb_session_say(hooks, PB_SESSION_INFO, "generating %lld %s files into %s (first use)",
            (long long)d->generate.count,
            d->generate.kind == PB_GENERATE_JPEG    ? "JPEG"
            : d->generate.kind == PB_GENERATE_VIDEO ? "video"
                                                    : "random-byte",
            d->path);
        rc = pb_dataset_generate_stoppable(&d->generate, d->path, hooks->stop, inner,
                                           sizeof(inner));
        if (rc == PB_OK)
            pb_mpi_barrier();
    }
    /* Data generated from another spec is not what the config describes. */
    if (rc == PB_OK && d->has_generate && !strpbrk(d->path, "*?[") && !pb_remote_is_url(d->path))
        rc = pb_generate_stamp_check(&d->generate, d->path, inner, sizeof(inner));
    /* Your own Dataset (dataset.python) makes its samples; dataset.path is
     * then only the data it may be handed, and may be left out. */
    if (rc == PB_OK && (d->path[0] || !pb_spec_own_samples(spec)))
        rc = open_listed(d, hooks->stop, ds, inner, sizeof(inner));
    /* A cache folder that cannot be written is the machine's, not the
     * config's: named as such. */
    if (rc != PB_OK && pb_path_in_data_cache(d->path))
        snprintf(msg, msglen, "the data cache folder ($PBENCH_DATA, else $XDG_CACHE_HOME/pbench, "
                 "else ~/.cache/pbench) for %s: %s", opts->config_path, inner);
    else if (rc != PB_OK)
        snprintf(msg, msglen, "%s: %s", opts->config_path, inner);
    return rc;
}

