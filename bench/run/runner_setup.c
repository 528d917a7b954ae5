/* Set-up and tear-down of a runner point (bench/run/runner_setup.h): threads, the batch
 * pool, the stage chains and the buffers that grow. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/run/runner_setup.h"
#include "kernels/gpu_rt.h"

int pb_runner_grow_scratch(struct worker *w, int which, size_t bytes)
{
    size_t capacity = pb_batch_align(bytes + bytes / 4); /* headroom for the next one */
    void *p = aligned_alloc(PB_BATCH_ALIGN, capacity);
    if (!p)
        return PB_ERR_NOMEM;
    free(w->scratch[which]);
    w->scratch[which] = p;
    w->scratch_capacity[which] = capacity;
    return PB_OK;
}

/* ---- set-up and tear-down ---------------------------------------------- */

static void free_worker(struct worker *w)
{
    pb_chain_cleanup(&w->chain);
    free(w->scratch[0]);
    free(w->scratch[1]);
    free(w->indices);
    free(w->seeds);
    free(w->visit_seeds);
    free(w->clips);
    free(w->batch_paths);
}

void pb_runner_free(struct run *run)
{
    if (run->worker) {
        for (int i = 0; i < nworkers(run); i++)
            free_worker(&run->worker[i]);
        free(run->worker);
    }
    if (run->stats) {
        for (int i = 0; i < nworkers(run); i++)
            pb_stage_stats_free(&run->stats[i]);
        free(run->stats);
    }
    pb_chain_cleanup(&run->consumer);
    pb_chain_cleanup(&run->gpu_stages);
    pb_gpu_loop_close(run->gpu);
    run->gpu = NULL;
    pb_gpu_acc_free(&run->gpu_acc);
    pb_slots_free(run->slots, run->slot_count);
    pb_sysmon_free(&run->sysmon);
    pb_affinity_close(run->affinity);
    run->affinity = NULL;
    pthread_mutex_destroy(&run->error_lock);
}

/* The device side, opened at the to_device stage: the GPU loop, whose
 * per-batch timings go to the run's accumulator. */
static int open_device(void *user, const struct pb_stage_spec *ss, char *msg, size_t msglen)
{
    struct run *run = user;
    const struct pb_spec *spec = run->spec;
    int gpu_stages = 0;
    for (int j = (int)(ss - spec->stages) + 1; j < spec->stage_count; j++)
        gpu_stages += (spec->stages[j].ops->flags & PB_STAGE_GPU) != 0;
    struct pb_gpu_loop_config cfg = {
        .inflight = (int)spec->loader.device_prefetch,
        .max_batch_bytes = run->point->batch_bytes,
        .copy_on_compute = pb_to_device_on_compute(ss->opts),
        .stage_count = gpu_stages,
        .harvest = pb_gpu_acc_harvest,
        .user = &run->gpu_acc,
    };
    return pb_gpu_loop_open(&run->gpu, &cfg, msg, msglen);
}

/* Consumer-side stages take the batch as the workers left it. A to_device
 * stage opens the GPU loop; the stages after it run on the device. */
static int setup_consumer(struct run *run, const struct pb_spec *spec, char *msg, size_t msglen)
{
    struct pb_stage_plan in = {.shape = run->sizes.sample_shape,
                               .max_bytes = run->sizes.slot_bytes,
                               .worker = -1,
                               .inflight = (int)spec->loader.device_prefetch,
                               .max_samples = (int)spec->loader.batch_size};
    int rc = pb_chain_init_consumer(&run->consumer, &run->gpu_stages, PB_GPU_MAX_STAGES, spec, &in,
                                    open_device, run, msg, msglen);
    run->gpu_acc.stage_count = run->gpu_stages.count;
    for (int k = 0; k < run->gpu_stages.count; k++)
        run->gpu_acc.stage_names[k] = run->gpu_stages.stages[k].ops->name;
    return rc;
}

/* The batch pool and every worker's two scratch buffers (as grow_scratch
 * sizes them), from the plan, before any of it is allocated. */
static int check_memory(const struct run *run, const struct pb_spec *spec, char *msg, size_t msglen)
{
    size_t scratch = run->sizes.scratch_bytes;
    char largest[PB_PATH_MAX + 256];
    pb_dataset_largest_name(run->ds, largest, sizeof(largest));
    struct pb_pool_plan plan = {
        .largest_file = largest[0] ? largest : NULL,
        .largest_bytes = run->ds->max_bytes,
        .others_mean_bytes = run->ds->count > 1 ? (run->ds->total_bytes - run->ds->max_bytes) /
                                                      (run->ds->count - 1)
                                                : run->ds->max_bytes,
        .workers = run->workers,
        .prefetch_factor = run->prefetch_factor,
        .batch_size = spec->loader.batch_size,
        .slot_bytes = run->sizes.slot_bytes,
        .scratch_bytes = scratch ? pb_batch_align(scratch + scratch / 4) : 0,
        .scratch_buffers = scratch ? 2 * nworkers(run) : 0,
    };
    uint64_t available = pb_mem_available_bytes();
    int rc = pb_pool_check(&plan, &spec->run, available, msg, msglen);
    double need = pb_pool_bytes(&plan);
    if (rc == PB_OK && available && need > 0.5 * (double)available) {
        char need_s[32], available_s[32];
        pb_format_bytes(need, need_s, sizeof(need_s));
        pb_format_bytes((double)available, available_s, sizeof(available_s));
        pb_point_warn(run->point,
                      "the batch pool takes %s, more than half of the %s available: the page "
                      "cache and other processes are squeezed",
                      need_s, available_s);
    }
    return rc;
}

/* The loader threads: each with its own instances of the worker-side
 * stages, stage measurements, sampler buffers and scratch buffers. */
static int setup_loaders(struct run *run, const struct pb_spec *spec, char *msg, size_t msglen)
{
    int rc = pb_chain_split(spec, run->worker_stage_spec, &run->worker_stage_count, msg, msglen);
    if (rc != PB_OK)
        return rc;
    run->worker = calloc((size_t)nworkers(run), sizeof(*run->worker));
    run->stats = calloc((size_t)nworkers(run), sizeof(*run->stats));
    if (!run->worker || !run->stats)
        return PB_ERR_NOMEM;
    size_t batch = (size_t)spec->loader.batch_size;
    for (int i = 0; i < nworkers(run); i++) {
        struct worker *w = &run->worker[i];
        w->run = run;
        w->index = run->workers > 0 ? i : -1;
        w->stats = &run->stats[i];
        rc = pb_chain_init_loader(&w->chain, spec, run->worker_stage_spec, run->worker_stage_count,
                                  run->ds->max_bytes, w->index, w->stats, &run->sizes, msg, msglen);
        if (rc == PB_OK && i == 0) /* the plan is known: nothing big is allocated yet */
            rc = check_memory(run, spec, msg, msglen);
        if (rc != PB_OK)
            return rc;
        w->indices = calloc(batch, sizeof(*w->indices));
        w->seeds = calloc(batch, sizeof(*w->seeds));
        w->visit_seeds = calloc(batch, sizeof(*w->visit_seeds));
        w->clips = calloc(batch, sizeof(*w->clips));
        w->batch_paths = calloc(batch, sizeof(*w->batch_paths));
        int grown = PB_OK;
        if (run->sizes.scratch_bytes) {
            grown |= pb_runner_grow_scratch(w, 0, run->sizes.scratch_bytes);
            grown |= pb_runner_grow_scratch(w, 1, run->sizes.scratch_bytes);
        }
        if (!w->indices || !w->seeds || !w->visit_seeds || !w->clips || !w->batch_paths ||
            grown != PB_OK) {
            snprintf(msg, msglen, "out of memory setting up worker %d", i);
            return PB_ERR_NOMEM;
        }
    }
    return PB_OK;
}

/* The batch pool: workers * prefetch_factor slots (one when loading in the
 * consumer), each batch_size samples of slot_bytes, pinned when asked and
 * a device is there. */
static int setup_pool(struct run *run, const struct pb_spec *spec, char *msg, size_t msglen)
{
    struct pb_point_result *point = run->point;
    size_t batch = (size_t)spec->loader.batch_size;
    run->slot_count = run->workers > 0 ? run->workers * run->prefetch_factor : 1;
    if (run->sizes.slot_bytes == 0)
        run->sizes.slot_bytes = 1;
    char why[PB_MSG_MAX];
    if (spec->loader.pin_memory) {
        if (pb_gpu_available(why, sizeof(why)))
            run->pinned = true;
        else
            pb_point_warn(point,
                          "loader.pin_memory is true but ignored: %s; batch buffers are "
                          "pageable host memory",
                          why);
    }
    run->slots =
        pb_slots_alloc(run->slot_count, batch, run->sizes.slot_bytes, run->pinned, msg, msglen);
    if (!run->slots)
        return PB_ERR_NOMEM;
    point->batch_bytes = batch * run->sizes.slot_bytes;
    run->pool_bytes = (uint64_t)run->slot_count * point->batch_bytes;
    point->batch_pool_bytes = run->pool_bytes;
    point->pinned_bytes = run->pinned ? run->pool_bytes : 0;
    return PB_OK;
}

int pb_runner_setup(struct run *run, const struct pb_spec *spec, const struct pb_dataset *ds,
                    struct pb_point_result *point, char *msg, size_t msglen)
{
    memset(run, 0, sizeof(*run));
    pthread_mutex_init(&run->error_lock, NULL);
    run->spec = spec;
    run->ds = ds;
    run->point = point;
    run->workers = (int)spec->loader.workers;
    run->prefetch_factor = (int)spec->loader.prefetch_factor;
    run->clips_per_file = 1; /* a decoder may make several samples of one visit */
    for (int i = 0; i < spec->stage_count; i++) {
        const struct pb_stage_spec *st = &spec->stages[i];
        if (st->decoder && st->decoder->samples_per_visit)
            run->clips_per_file = (uint64_t)st->decoder->samples_per_visit(st->decoder_opts);
    }
    int rc = setup_loaders(run, spec, msg, msglen);
    if (rc == PB_OK)
        rc = setup_pool(run, spec, msg, msglen);
    if (rc == PB_OK)
        rc = setup_consumer(run, spec, msg, msglen);
    if (rc == PB_OK)
        rc = pb_affinity_open(&run->affinity, spec->loader.affinity, run->workers, msg, msglen);
    if (rc != PB_OK)
        return rc;
    if (pb_sysmon_init(&run->sysmon) != PB_OK)
        return PB_ERR_NOMEM;
    return PB_OK;
}

int pb_runner_trace_setup(struct run *run, struct pb_trace *trace)
{
    if (!trace || !pb_spec_traced(run->spec))
        return PB_OK;
    run->loop_trace_buffer = pb_trace_thread(trace, 0);
    if (!run->loop_trace_buffer)
        return PB_ERR_NOMEM;
    for (int k = 0; k < run->consumer.count; k++)
        run->loop_trace_names[k] = pb_trace_name(trace, run->consumer.stages[k].ops->name);
    for (int i = 0; i < nworkers(run); i++) {
        struct worker *w = &run->worker[i];
        /* Without workers the loop builds the batches on its own track. */
        w->trace_buffer =
            run->workers > 0 ? pb_trace_thread(trace, (size_t)i + 1) : run->loop_trace_buffer;
        if (!w->trace_buffer)
            return PB_ERR_NOMEM;
        for (int k = 0; k < w->chain.count; k++)
            w->trace_names[k] = pb_trace_name(trace, w->chain.stages[k].ops->name);
    }
    run->trace = trace;
    return PB_OK;
}
