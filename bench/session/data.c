/* The dataset a session measures (see data.h). */
#include "bench/session/data.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
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
        rc = pb_dataset_open(d, ds, inner, sizeof(inner));
    /* A cache folder that cannot be written is the machine's, not the
     * config's: named as such. */
    if (rc != PB_OK && pb_path_in_data_cache(d->path))
        snprintf(msg, msglen, "the data cache folder ($PBENCH_DATA, else $XDG_CACHE_HOME/pbench, "
                 "else ~/.cache/pbench) for %s: %s", opts->config_path, inner);
    else if (rc != PB_OK)
        snprintf(msg, msglen, "%s: %s", opts->config_path, inner);
    return rc;
}

