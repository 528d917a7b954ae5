#include "bench/result/slowest.h"

#include <stdio.h>
#include <string.h>

#include "bench/base/jsonfield.h"
#include "bench/base/pb.h"

/* Removes entry k of row's list. */
static void row_remove(struct pb_stage_result *row, int k)
{
    for (; k + 1 < row->slowest_count; k++) {
        row->slowest_ns[k] = row->slowest_ns[k + 1];
        row->slowest_sample[k] = row->slowest_sample[k + 1];
        memcpy(row->slowest_files[k], row->slowest_files[k + 1], sizeof(row->slowest_files[k]));
    }
    row->slowest_count--;
}

/* Inserts one sample into row's list, slowest first, when it is among the
 * five slowest; a sample (another repeat's, another epoch's) is listed
 * once, with its slowest time. */
static void row_add(struct pb_stage_result *row, uint64_t ns, uint64_t sample, const char *file)
{
    for (int k = 0; k < row->slowest_count; k++) {
        if (row->slowest_sample[k] != sample)
            continue;
        if (ns <= row->slowest_ns[k])
            return;
        row_remove(row, k);
        break;
    }
    int n = row->slowest_count, i = n < PB_SLOWEST_SAMPLES ? n : PB_SLOWEST_SAMPLES - 1;
    if (n == PB_SLOWEST_SAMPLES && ns <= row->slowest_ns[i])
        return;
    for (; i > 0 && row->slowest_ns[i - 1] < ns; i--) {
        row->slowest_ns[i] = row->slowest_ns[i - 1];
        row->slowest_sample[i] = row->slowest_sample[i - 1];
        memcpy(row->slowest_files[i], row->slowest_files[i - 1], sizeof(row->slowest_files[i]));
    }
    row->slowest_ns[i] = ns;
    row->slowest_sample[i] = sample;
    pb_strlcpy(row->slowest_files[i], file ? file : "", sizeof(row->slowest_files[i]));
    if (n < PB_SLOWEST_SAMPLES)
        row->slowest_count = n + 1;
}

void pb_slowest_merge_thread(struct pb_stage_result *row, const struct pb_slowest *s,
                             char *const *paths, uint64_t path_count)
{
    for (int k = 0; k < PB_SLOWEST_SAMPLES && s->ns[k]; k++)
        row_add(row, s->ns[k], s->sample[k],
                paths && s->sample[k] < path_count ? paths[s->sample[k]] : NULL);
}

void pb_slowest_merge_row(struct pb_stage_result *row, const struct pb_stage_result *other)
{
    for (int k = 0; k < other->slowest_count && k < PB_SLOWEST_SAMPLES; k++)
        row_add(row, other->slowest_ns[k], other->slowest_sample[k], other->slowest_files[k]);
}

json_t *pb_slowest_to_json(const struct pb_stage_result *row)
{
    if (row->slowest_count <= 0)
        return NULL;
    json_t *arr = json_array();
    for (int k = 0; k < row->slowest_count && k < PB_SLOWEST_SAMPLES; k++) {
        json_t *o = json_pack("{s I s I}", "ns", (json_int_t)row->slowest_ns[k], "sample",
                              (json_int_t)row->slowest_sample[k]);
        json_t *file = pb_json_text(row->slowest_files[k]);
        if (file && row->slowest_files[k][0])
            json_object_set_new(o, "file", file);
        else
            json_decref(file);
        json_array_append_new(arr, o);
    }
    return arr;
}

void pb_slowest_from_json(const json_t *arr, struct pb_stage_result *row)
{
    row->slowest_count = 0;
    size_t i;
    const json_t *o;
    if (!json_is_array(arr))
        return;
    json_array_foreach ((json_t *)arr, i, o) {
        const json_t *ns = json_object_get(o, "ns"), *sample = json_object_get(o, "sample");
        if (!json_is_integer(ns) || !json_is_integer(sample) || json_integer_value(ns) <= 0 ||
            json_integer_value(sample) < 0)
            continue;
        const json_t *file = json_object_get(o, "file");
        row_add(row, (uint64_t)json_integer_value(ns), (uint64_t)json_integer_value(sample),
                json_is_string(file) ? json_string_value(file) : NULL);
    }
}
