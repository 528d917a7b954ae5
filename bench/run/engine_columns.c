/* The engine's timed columns (bench/run/engine_columns.h): its stages, or a
 * wrapped job's transforms, read from `ready` (or `stages`), filled from
 * each measured batch's sample records, drawn on the CPU trace, and handed
 * over as the repeat's stage rows; and a wrapped job's account of its run. */
#include "bench/run/engine_columns.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/jsonfield.h"
#include "bench/base/pb.h"
#include "bench/result/figures.h"
#include "bench/run/hooks.h"

void pb_engine_reset_columns(struct pb_engine_run *er)
{
    for (int k = 0; k < er->column_count; k++) {
        struct pb_engine_column *col = &er->columns[k];
        pb_hist_init(&col->hist);
        col->cpu_ns = 0;
        memset(&col->slowest, 0, sizeof col->slowest);
        memset(col->counters, 0, sizeof col->counters);
    }
}

/* The engine's `ready`: its columns and counters, in frame order. */
int pb_engine_read_ready(struct pb_engine_run *er, const json_t *ready, char *msg, size_t msglen)
{
    const json_t *stages = json_object_get(ready, "stages");
    const json_t *counters = json_object_get(ready, "counters");
    size_t n = json_array_size(stages);
    if (n == 0 || n > PB_ENGINE_MAX_COLUMNS ||
        json_array_size(counters) > PB_ENGINE_MAX_COUNTERS) {
        snprintf(msg, msglen,
                 "the engine's ready names %zu stages and %zu counters (1 to %d and at most %d)",
                 n, json_array_size(counters), PB_ENGINE_MAX_COLUMNS, PB_ENGINE_MAX_COUNTERS);
        return PB_ERR;
    }
    er->column_count = (int)n;
    for (size_t k = 0; k < n; k++) {
        const json_t *s = json_array_get(stages, k);
        const char *name = json_string_value(json_object_get(s, "name"));
        const char *parent = json_string_value(json_object_get(s, "parent"));
        snprintf(er->columns[k].name, sizeof er->columns[k].name, "%s", name ? name : "?");
        snprintf(er->columns[k].parent, sizeof er->columns[k].parent, "%s",
                 parent ? parent : "");
        if (er->trace)
            er->columns[k].trace_name = pb_trace_name(er->trace, er->columns[k].name);
    }
    er->counter_count = (int)json_array_size(counters);
    for (int c = 0; c < er->counter_count; c++) {
        const json_t *e = json_array_get(counters, (size_t)c);
        const char *stage = json_string_value(json_object_get(e, "stage"));
        const char *name = json_string_value(json_object_get(e, "name"));
        er->counter_column[c] = -1;
        for (int k = 0; k < er->column_count && stage; k++)
            if (strcmp(er->columns[k].name, stage) == 0)
                er->counter_column[c] = k;
        struct pb_engine_column *col =
            er->counter_column[c] >= 0 ? &er->columns[er->counter_column[c]] : NULL;
        if (!col || col->counter_count >= PB_STAGE_COUNTERS) {
            er->counter_column[c] = -1;
            continue;
        }
        er->counter_slot[c] = col->counter_count;
        snprintf(col->counter_names[col->counter_count++], 32, "%s", name ? name : "?");
    }
    pb_engine_reset_columns(er);
    return PB_OK;
}

/* The batch on the CPU trace: the loop's wait and step on track 0, and on
 * the track of the worker that built it, its span and a span per sample per
 * column (the engine's clock is pbench's). A worker's track is made the
 * first time it builds a measured batch. */
void pb_engine_trace_batch(struct pb_engine_run *er, const struct pb_batch_header *h,
                        const uint8_t *data, size_t len)
{
    struct pb_trace_thread *loop = pb_trace_thread(er->trace, 0);
    if (loop) {
        pb_trace_record(loop, PB_TRACE_WAIT, PB_TRACE_SPAN, h->seq, h->t_wait_ns, h->t_taken_ns, 0);
        pb_trace_record(loop, PB_TRACE_STEP, PB_TRACE_SPAN, h->seq, h->t_taken_ns, h->t_done_ns, 0);
    }
    struct pb_trace_thread *w =
        h->worker >= 0 && h->worker < PB_ENGINE_MAX_WORKERS
            ? pb_trace_thread(er->trace, 1 + (size_t)h->worker)
            : loop;
    if (!w)
        return;
    if (h->t_ready_ns > h->t_first_ns)
        pb_trace_record(w, PB_TRACE_BATCH, PB_TRACE_SPAN, h->seq, h->t_first_ns, h->t_ready_ns, 0);
    uint32_t S = h->columns, C = h->counters;
    if (S != (uint32_t)er->column_count || C != (uint32_t)er->counter_count)
        return;
    size_t record = 8 * (1 + 3 * (size_t)S + C);
    for (uint32_t r = 0; r < h->records && (size_t)(r + 1) * record <= len; r++) {
        uint64_t v[1 + 3 * PB_ENGINE_MAX_COLUMNS + PB_ENGINE_MAX_COUNTERS];
        memcpy(v, data + (size_t)r * record, record);
        for (uint32_t k = 0; k < S; k++)
            if (v[2 + 3 * k] > v[1 + 3 * k])
                pb_trace_record(w, er->columns[k].trace_name, PB_TRACE_SPAN, v[0],
                                v[1 + 3 * k], v[2 + 3 * k], 0);
    }
}

/* A measured batch's sample records into the columns. */
void pb_engine_add_records(struct pb_engine_run *er, const struct pb_batch_header *h,
                        const uint8_t *data, size_t len)
{
    uint32_t S = h->columns, C = h->counters;
    if (S != (uint32_t)er->column_count || C != (uint32_t)er->counter_count)
        return; /* no timing in this batch (stage_timing off) */
    size_t record = 8 * (1 + 3 * (size_t)S + C);
    for (uint32_t r = 0; r < h->records && (size_t)(r + 1) * record <= len; r++) {
        const uint8_t *p = data + (size_t)r * record;
        uint64_t v[1 + 3 * PB_ENGINE_MAX_COLUMNS + PB_ENGINE_MAX_COUNTERS];
        memcpy(v, p, record);
        for (uint32_t k = 0; k < S; k++) {
            uint64_t start = v[1 + 3 * k], end = v[2 + 3 * k], cpu = v[3 + 3 * k];
            if (start == 0 && end == 0)
                continue;
            struct pb_engine_column *col = &er->columns[k];
            uint64_t ns = end > start ? end - start : 0;
            pb_hist_add(&col->hist, ns);
            col->cpu_ns += cpu;
            pb_slowest_add(&col->slowest, v[0], ns);
        }
        for (uint32_t c = 0; c < C; c++)
            if (er->counter_column[c] >= 0)
                er->columns[er->counter_column[c]].counters[er->counter_slot[c]] +=
                    v[1 + 3 * S + c];
    }
}

/* The columns as the repeat's stage rows (shares of the top-level rows'
 * summed wall time, as pbench's own rows). */
int pb_engine_fill_rows(const struct pb_engine_run *er, struct pb_repeat_result *rep)
{
    rep->stages = calloc((size_t)er->column_count, sizeof(*rep->stages));
    if (!rep->stages)
        return PB_ERR_NOMEM;
    uint64_t total = 0;
    for (int k = 0; k < er->column_count; k++)
        if (!er->columns[k].parent[0])
            total += er->columns[k].hist.sum_ns;
    for (int k = 0; k < er->column_count; k++) {
        const struct pb_engine_column *col = &er->columns[k];
        struct pb_stage_result *row = &rep->stages[k];
        pb_strlcpy(row->name, col->name, sizeof row->name);
        pb_strlcpy(row->parent, col->parent, sizeof row->parent);
        row->hist = col->hist;
        row->cpu_ns = col->cpu_ns;
        row->share_pct = total && !col->parent[0] ? 100.0 * (double)col->hist.sum_ns / (double)total
                                                  : 0;
        row->counter_count = col->counter_count;
        memcpy(row->counter_names, col->counter_names, sizeof row->counter_names);
        memcpy(row->counters, col->counters, sizeof row->counters);
        for (int i = 0; i < PB_SLOWEST_SAMPLES && col->slowest.ns[i]; i++) {
            uint64_t index = col->slowest.sample[i];
            row->slowest_ns[i] = col->slowest.ns[i];
            row->slowest_sample[i] = index;
            if (er->spec->dataset.python[0]) /* not pbench's index: the engine names it */
                snprintf(row->slowest_files[i], sizeof row->slowest_files[i],
                         "sample %" PRIu64, index);
            else if (index < er->ds->count && er->ds->members)
                snprintf(row->slowest_files[i], sizeof row->slowest_files[i], "%.120s:%.70s",
                         er->ds->paths[index], er->ds->members[index]);
            else if (index < er->ds->count)
                pb_strlcpy(row->slowest_files[i], er->ds->paths[index],
                           sizeof row->slowest_files[i]);
            else
                snprintf(row->slowest_files[i], sizeof row->slowest_files[i],
                         "sample %" PRIu64, index);
            row->slowest_count = i + 1;
        }
    }
    rep->stage_count = (size_t)er->column_count;
    return PB_OK;
}

/* Each worker row's CPU per sample, divided here from the raw figures the
 * relay sends (cpu_ns and samples: bench/result/figures.h), kept beside
 * them for readers of the result; null where its samples were not timed. */
static void keep_workers_cpu(json_t *workers)
{
    size_t i;
    json_t *w;
    json_array_foreach(workers, i, w)
    {
        if (json_is_object(w) && json_object_get(w, "cpu_ns"))
            json_object_set_new(w, "cpu_ns_per_sample",
                                pb_json_number(pb_worker_cpu_ns_per_sample(w)));
    }
}

/* A wrapped job's account of a repeat (how it ended, its exit status, the
 * last lines of its stderr, its DataLoaders): kept in the point's engine
 * object, one per repeat under "jobs", its versions as the engine's. */
void pb_engine_keep_job(struct pb_engine_run *er, const json_t *j)
{
    json_t *engine = er->point->engine;
    if (!engine)
        return;
    json_t *jobs = json_object_get(engine, "jobs");
    if (!json_is_array(jobs)) {
        jobs = json_array();
        json_object_set_new(engine, "jobs", jobs);
    }
    json_t *copy = json_deep_copy(j);
    if (copy) {
        json_object_del(copy, "type");
        keep_workers_cpu(json_object_get(copy, "workers"));
        json_array_append_new(jobs, copy);
    }
    const json_t *versions = json_object_get(j, "versions");
    if (json_is_object(versions) && json_object_size(versions) > 0)
        json_object_set(engine, "versions", (json_t *)versions);
}
