/* The names the engine and pbench exchange (bench/run/engine.h): the
 * sample index pbench writes for the engine at a point's start, and the
 * files of your own Dataset's slowest samples, which pbench's index does
 * not list, so the engine names them between repeats from the Dataset
 * itself (the `names` command of docs/engines.md). */
#include "bench/run/engine_names.h"
#include "bench/run/engine_proc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "bench/base/pb.h"

#define FRAME_JSON 1

/* Puts each row's slowest samples' indices, once each, into indices
 * (of at most max); returns how many. */
static size_t slowest_indices(const struct pb_repeat_result *rep, json_t *indices, size_t max)
{
    size_t count = 0;
    for (size_t k = 0; k < rep->stage_count; k++) {
        const struct pb_stage_result *row = &rep->stages[k];
        for (int i = 0; i < row->slowest_count && count < max; i++) {
            bool seen = false;
            for (size_t j = 0; j < json_array_size(indices) && !seen; j++)
                seen = (uint64_t)json_integer_value(json_array_get(indices, j)) ==
                       row->slowest_sample[i];
            if (!seen && json_array_append_new(indices,
                                               json_integer((json_int_t)row->slowest_sample[i])) == 0)
                count++;
        }
    }
    return count;
}

/* The engine's `names` answer, waited for up to timeout_s; NULL when none
 * came (an engine that does not know the command, or one that failed). */
static json_t *await_names(struct pb_engine_proc *p, double timeout_s)
{
    uint64_t deadline = pb_now_ns() + (uint64_t)(timeout_s * 1e9);
    char msg[PB_MSG_MAX];
    while (pb_now_ns() < deadline) {
        uint32_t type = 0, len = 0;
        const uint8_t *data = NULL;
        int rc = pb_engine_proc_frame(p, 100, &type, &data, &len, msg, sizeof msg);
        if (rc == PB_ENGINE_NO_FRAME)
            continue;
        if (rc != PB_OK)
            return NULL;
        json_t *j = type == FRAME_JSON ? json_loadb((const char *)data, len, 0, NULL) : NULL;
        const char *t = json_string_value(json_object_get(j, "type"));
        if (t && strcmp(t, "names") == 0)
            return j;
        json_decref(j);
        if (t && strcmp(t, "fatal") == 0)
            return NULL;
    }
    return NULL;
}

/* The file the answer names for sample index, into buf; false where the
 * Dataset names none. */
static bool named_file(const json_t *answer, uint64_t index, char *buf, size_t buflen)
{
    const json_t *names = json_object_get(answer, "names");
    for (size_t i = 0; i < json_array_size(names); i++) {
        const json_t *n = json_array_get(names, i);
        if ((uint64_t)json_integer_value(json_object_get(n, "index")) != index)
            continue;
        return pb_engine_name(n, "file", buf, buflen) && buf[0];
    }
    return false;
}

void pb_engine_name_slowest(struct pb_engine_proc *p, struct pb_repeat_result *rep,
                            double timeout_s)
{
    json_t *indices = json_array();
    json_t *command = json_pack("{s:s,s:o}", "type", "names", "indices", indices);
    json_t *answer = NULL;
    if (command && slowest_indices(rep, indices, 256) > 0 &&
        pb_engine_proc_send(p, command) == PB_OK)
        answer = await_names(p, timeout_s);
    json_decref(command);
    for (size_t k = 0; k < rep->stage_count; k++) {
        struct pb_stage_result *row = &rep->stages[k];
        for (int i = 0; i < row->slowest_count; i++) {
            char file[PB_PATH_MAX];
            uint64_t index = row->slowest_sample[i];
            if (named_file(answer, index, file, sizeof file))
                pb_strlcpy(row->slowest_files[i], file, sizeof row->slowest_files[i]);
            else
                snprintf(row->slowest_files[i], sizeof row->slowest_files[i],
                         "sample %" PRIu64 " (your Dataset names no file for it)", index);
        }
    }
    json_decref(answer);
}

/* ---- the sample index ---------------------------------------------------- */

int pb_engine_write_index(const struct pb_dataset *ds, char *path, size_t pathlen, char *msg,
                          size_t msglen)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, pathlen, "%s/pbench-index-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(msg, msglen, "cannot write the engine's sample index %s: %s", path,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        path[0] = '\0';
        return PB_ERR;
    }
    for (size_t i = 0; i < ds->count; i++) {
        long long offset = !ds->offsets                     ? -1
                           : ds->offsets[i] == PB_MEMBER_BAD ? -2
                                                             : (long long)ds->offsets[i];
        uint64_t size = ds->offsets && ds->offsets[i] == PB_MEMBER_BAD ? 0 : ds->sizes[i];
        fprintf(f, "%lld%c%" PRIu64 "%c%s%c%s%c", offset, 0, size, 0,
                ds->members ? ds->members[i] : "", 0, ds->paths[i], 0);
    }
    if (fclose(f) != 0) {
        snprintf(msg, msglen, "cannot write the engine's sample index %s: %s", path,
                 strerror(errno));
        return PB_ERR;
    }
    return PB_OK;
}

