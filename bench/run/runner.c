/* The runner (bench/run/runner.h): pbench's own engine as the ops of the one
 * measurement loop (bench/run/repeat.c): a round's start and end (the
 * workers, the queue, the device loop, the sampler), the wait for a batch,
 * the loop's step on it, the watchdog and joining the workers. */
#include "bench/run/runner.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/run/chain.h"
#include "bench/run/gpu_acc.h"
#include "bench/run/gpuloop.h"
#include "bench/run/queue.h"
#include "bench/run/runlimits.h"
#include "bench/run/stagestats.h"
#include "bench/run/storage_run.h"
#include "bench/run/sysmon.h"
#include "kernels/gpu_rt.h"

#include "bench/run/runner_setup.h"

/* CPU time of every loader thread (the consumer's own when it loads), read
 * from the consumer so the window is exactly the measured part. */
static uint64_t loader_cpu_ns(const struct run *run)
{
    if (run->workers == 0)
        return pb_thread_cpu_ns();
    uint64_t total = 0;
    for (int i = 0; i < run->started_workers; i++) {
        clockid_t cid;
        struct timespec ts;
        uint64_t ended = atomic_load(&run->worker[i].exit_cpu_ns);
        if (ended)
            total += ended; /* the thread may be gone: its last reading */
        else if (pthread_getcpuclockid(run->worker[i].thread, &cid) == 0 &&
                 clock_gettime(cid, &ts) == 0)
            total += (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        else
            total += atomic_load(&run->worker[i].exit_cpu_ns);
    }
    return total;
}

/* ---- one round -------------------------------------------------------- */

/* The sampler's hook: the bytes of pbench's own buffers that grow with
 * the batches of a repeat, the trace's records and the batch records.
 * Other buffers of pbench's are either fixed at set-up (histograms, the
 * slowest samples, perf counters, the sampler's own series) or grow only
 * on a data error. */
static uint64_t own_bytes(void *user)
{
    const struct run *run = user;
    uint64_t bytes = run->trace ? pb_trace_bytes(run->trace) : 0;
    if (run->recording)
        bytes += __atomic_load_n(&run->recording->batch_count, __ATOMIC_RELAXED) *
                 sizeof(struct pb_batch_record);
    return bytes;
}

static uint64_t sleep_ns(uint64_t ns)
{
    uint64_t start_ns = pb_now_ns();
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
    return pb_now_ns() - start_ns;
}

/* One batch through the device: copy, GPU stages, step. */
static int gpu_batch(struct run *run, struct pb_slot *slot, bool measuring, uint64_t step_ns,
                     uint64_t *blocked_ns, uint64_t *copy_wait_ns, uint64_t *step_wall_ns,
                     char *msg, size_t msglen)
{
    int rc = pb_gpu_loop_copy(run->gpu, &slot->batch, measuring, blocked_ns, msg, msglen);
    for (int k = 0; k < run->gpu_stages.count && rc == PB_OK; k++) {
        rc = pb_gpu_loop_stage_begin(run->gpu, k);
        if (rc == PB_OK)
            rc = run->gpu_stages.stages[k].ops->process_batch(run->gpu_stages.stages[k].state,
                                                              &slot->batch, msg, msglen);
        if (rc == PB_OK)
            rc = pb_gpu_loop_stage_end(run->gpu, k);
    }
    uint64_t t_step = pb_now_ns();
    if (rc == PB_OK)
        rc = pb_gpu_loop_step(run->gpu, step_ns, copy_wait_ns, msg, msglen);
    *step_wall_ns = pb_now_ns() - t_step;
    return rc;
}

/* Starts a repeat: a fresh iterator over the data with its own shuffle,
 * empty measurements, the queue, the device loop, the system sampler and
 * the worker threads. */
static int start_repeat(struct run *run, int repeat, bool stage_timing, char *msg, size_t msglen)
{
    const struct pb_spec *spec = run->spec;
    struct pb_dataset_spec ds_spec = spec->dataset;
    ds_spec.seed = (int64_t)(pb_mix64((uint64_t)spec->dataset.seed + (uint64_t)repeat) >> 2);
    int rc = pb_sampler_init_visits(&run->sampler, run->ds->count, run->clips_per_file, &ds_spec,
                                    spec->loader.batch_size, spec->loader.drop_last, msg, msglen);
    if (rc != PB_OK)
        return rc;
    if (run->ds->offsets) /* tar shards: each worker streams its run of them */
        pb_sampler_stream(&run->sampler, run->ds, (uint64_t)(run->workers > 0 ? run->workers : 1),
                          (uint64_t)spec->dataset.shuffle_buffer, spec->loader.drop_last,
                          spec->dataset.epochs);
    run->repeat = repeat;
    run->stage_timing = stage_timing;
    run->loop_trace = stage_timing ? run->loop_trace_buffer : NULL;
    run->perf_on = stage_timing && spec->profile.level == PB_PROFILE_COMPREHENSIVE;
    run->first_error[0] = '\0';
    run->first_measured_seq = (uint64_t)spec->run.warmup_batches;
    atomic_store(&run->stop_workers, false);
    for (int i = 0; i < nworkers(run); i++) {
        struct worker *w = &run->worker[i];
        pb_stage_stats_reset(w->stats);
        w->trace = stage_timing ? w->trace_buffer : NULL;
        w->cpu_started = false;
        w->cpu_start_ns = w->cpu_end_ns = 0;
        atomic_store(&w->exit_cpu_ns, 0);
        atomic_store(&w->busy_stage, -1);
        atomic_store(&w->stage_calls, 0);
        atomic_store(&w->stuck, false);
        w->watched_calls = w->watched_since_ns = 0;
    }
    run->next_seq = 0;
    run->mhz_start = pb_cpu_mhz_now();

    if (run->workers > 0) {
        rc = pb_queue_init(&run->queue, run->workers, run->prefetch_factor, run->slots);
        if (rc != PB_OK)
            return rc;
        run->queue_live = true;
    }
    if (run->gpu) {
        pb_gpu_acc_reset(&run->gpu_acc);
        rc = pb_gpu_loop_begin(run->gpu, msg, msglen);
        if (rc != PB_OK) {
            if (run->queue_live) {
                pb_queue_destroy(&run->queue);
                run->queue_live = false;
            }
            return rc;
        }
    }
    pb_sysmon_start(&run->sysmon);
    if (run->workers == 0 && run->perf_on) /* the loop builds the batches itself */
        run->worker[0].stats->perf_mask = pb_perf_open(&run->worker[0].perf, NULL, 0);
    for (int i = 0; i < run->workers; i++) {
        if (pthread_create(&run->worker[i].thread, NULL, pb_runner_worker_main, &run->worker[i]) != 0) {
            pb_runner_fail(run, PB_ERR, "cannot start loader worker threads");
            break;
        }
        run->started_workers = i + 1;
    }
    return PB_OK;
}

/* The next batch: from the queue, or built here when the consumer loads.
 * NULL at the end of the data, on a failure or an interrupt. */
static struct pb_slot *next_batch(struct run *run, uint64_t seq, uint32_t *depth)
{
    if (run->workers > 0)
        return pb_queue_pop(&run->queue, run->spec->loader.in_order, seq, depth);
    struct pb_slot *slot = &run->slots[0];
    return pb_runner_build_batch(&run->worker[0], seq, slot) == PB_BATCH_BUILT ? slot : NULL;
}

/* ---- the watchdog (the system sampler's thread) ------------------------- */

/* Whether the measured part has run past run.max_time_s at now_ns; only a
 * run that decides for itself (no group, or its decider) has a cap. */
static bool past_time_cap(struct run *run, uint64_t now_ns)
{
    const struct pb_run_group *g = run->hooks ? run->hooks->group : NULL;
    uint64_t start = atomic_load_explicit(&run->sysmon.live_start_ns, memory_order_relaxed);
    return (!g || g->decides) && start && now_ns > start &&
           (double)(now_ns - start) >= run->spec->run.max_time_s * 1e9;
}

/* Cold: loader worker w has been in stage `stage` for stuck_ns: the run
 * fails with the stage and the sample named, and the loop is woken. */
static void stage_stuck(struct run *run, struct worker *w, int stage, uint64_t stuck_ns)
{
    char text[PB_MSG_MAX];
    uint64_t index = atomic_load_explicit(&w->busy_sample, memory_order_relaxed);
    const struct pb_dataset *ds = run->ds;
    const char *path = index < ds->count ? ds->paths[index] : "(sample)";
    const char *member = index < ds->count && ds->members ? ds->members[index] : NULL;
    const struct pb_run_spec *limits = &run->spec->run;
    snprintf(text, sizeof(text),
             "stage '%s' has not returned after %.1f s on %s%s%s (loader worker %d; "
             "run.stage_timeout_s is %g s%s): the repeat is cut short and marked interrupted, "
             "and pbench ends without waiting for the stage",
             w->chain.stages[stage].ops->name, (double)stuck_ns / 1e9, path, member ? ":" : "",
             member ? member : "", w->index, pb_stage_timeout_s(limits),
             limits->stage_timeout_s > 0 ? "" : ", run.max_time_s + 10 s");
    atomic_store(&w->stuck, true);
    pb_runner_fail(run, PB_ERR_STALLED, text);
}

/* Every loader worker inside a stage whose count of stage calls has not
 * moved for run.stage_timeout_s is stuck. (With loader.workers: 0 the
 * stages run in the loop's own thread, which nothing can wake.) */
static void watch_stages(struct run *run, uint64_t now_ns)
{
    uint64_t limit_ns = (uint64_t)(pb_stage_timeout_s(&run->spec->run) * 1e9);
    for (int i = 0; i < run->workers; i++) {
        struct worker *w = &run->worker[i];
        uint64_t calls = atomic_load_explicit(&w->stage_calls, memory_order_relaxed);
        int stage = atomic_load_explicit(&w->busy_stage, memory_order_relaxed);
        if (stage < 0 || calls != w->watched_calls || !w->watched_since_ns) {
            w->watched_calls = calls;
            w->watched_since_ns = now_ns;
        } else if (now_ns - w->watched_since_ns >= limit_ns && !atomic_load(&w->stuck)) {
            stage_stuck(run, w, stage, now_ns - w->watched_since_ns);
        }
    }
}

/* The watchdog, called by the system sampler every period (user is the
 * run): wakes the loop on a stop or past the time cap, and fails the run
 * on a stage stuck past run.stage_timeout_s. */
static void watch(void *user, uint64_t now_ns)
{
    struct run *run = user;
    watch_stages(run, now_ns);
    /* A stop, or the time cap passed: the loop may be waiting for a batch
     * that is slow to come; it returns now. */
    if (((run->user_stop && *run->user_stop) || past_time_cap(run, now_ns)) && run->queue_live)
        pb_queue_close(&run->queue);
}

/* The training loop's part of a batch: consumer-side stages, then the
 * device (where the step is a busy kernel and the loop goes on as soon as
 * the batch's copy is done) or a sleep of the step time. Returns the wall
 * time the loop spent in the step. */
static uint64_t train_on_batch(struct run *run, struct pb_slot *slot, bool measuring,
                               uint64_t step_ns)
{
    uint64_t step_wall_ns = 0;
    for (int k = 0; k < run->consumer.count && run->fatal_rc == PB_OK; k++) {
        char stage_msg[PB_MSG_MAX];
        uint64_t t0 = run->loop_trace ? pb_now_ns() : 0;
        int src = run->consumer.stages[k].ops->process_batch(
            run->consumer.stages[k].state, &slot->batch, stage_msg, sizeof(stage_msg));
        if (run->loop_trace)
            pb_trace_record(run->loop_trace, run->loop_trace_names[k], PB_TRACE_SPAN,
                            slot->batch.seq, t0, pb_now_ns(), 0);
        if (src != PB_OK)
            pb_runner_fail(run, src, stage_msg);
    }
    if (run->gpu && run->fatal_rc == PB_OK) {
        char gpu_msg[PB_MSG_MAX];
        uint64_t blocked = 0, copy_wait = 0;
        int grc = gpu_batch(run, slot, measuring, step_ns, &blocked, &copy_wait, &step_wall_ns,
                            gpu_msg, sizeof(gpu_msg));
        if (grc != PB_OK)
            pb_runner_fail(run, grc, gpu_msg);
        if (measuring) {
            run->gpu_acc.fig.host_blocked_ns += blocked;
            run->gpu_acc.fig.copy_wait_ns += copy_wait;
        }
    } else if (step_ns) {
        step_wall_ns = sleep_ns(step_ns);
    }
    if (run->loop_trace && step_wall_ns) {
        uint64_t t1 = pb_now_ns();
        pb_trace_record(run->loop_trace, PB_TRACE_STEP, PB_TRACE_SPAN, slot->batch.seq,
                        t1 - step_wall_ns, t1, 0);
    }
    return step_wall_ns;
}

/* How long, after a stop, a loader thread may take to finish the stage
 * call it is in before it is left running: a stop ends the run in about
 * this time whatever a stage does. */
#define STOP_GRACE_NS 1500000000ull

/* Cold: a stop came while loader worker w was in stage `stage` and the
 * call has not returned within STOP_GRACE_NS: the thread is left running,
 * the run abandoned, and the stage and its sample named. */
static void abandon_on_stop(struct run *run, struct worker *w, int stage)
{
    uint64_t index = atomic_load_explicit(&w->busy_sample, memory_order_relaxed);
    const struct pb_dataset *ds = run->ds;
    const char *path = index < ds->count ? ds->paths[index] : "(sample)";
    const char *member = index < ds->count && ds->members ? ds->members[index] : NULL;
    pb_point_warn(run->point,
                  "stopped while stage '%s' had not returned on %s%s%s (loader worker %d); "
                  "pbench ended without waiting for it",
                  w->chain.stages[stage].ops->name, path, member ? ":" : "",
                  member ? member : "", w->index);
    atomic_store(&w->stuck, true);
    run->abandoned = true;
}

/* The stage call a loader thread was seen in during the join, and since
 * when: a thread that goes on to other calls is finishing its batch. */
struct call_seen {
    uint64_t calls, since_ns;
};

/* The stage worker w has been in, in one and the same call, for
 * STOP_GRACE_NS (seen: what the join saw of it before); -1 if none. */
static int in_one_call(const struct worker *w, struct call_seen *seen, uint64_t now_ns)
{
    uint64_t calls = atomic_load_explicit(&w->stage_calls, memory_order_relaxed);
    if (calls != seen->calls) {
        seen->calls = calls;
        seen->since_ns = now_ns;
    }
    int stage = atomic_load_explicit(&w->busy_stage, memory_order_relaxed);
    return stage >= 0 && now_ns - seen->since_ns >= STOP_GRACE_NS ? stage : -1;
}

/* Joins the loader threads, finishing the batches in hand, while the
 * watchdog still runs: a thread it finds stuck in a stage, a thread in one
 * stage call for STOP_GRACE_NS of the join after a stop, or every thread
 * still running after a stop with PB_RUN_STOP_NOW, is left running and the
 * run abandoned. Every thread's grace counts from the join's start. */
static void join_workers(struct run *run)
{
    uint64_t start_ns = pb_now_ns();
    struct call_seen *seen = calloc((size_t)run->started_workers + 1, sizeof(*seen));
    for (int i = 0; i < run->started_workers && seen; i++) /* every thread, at the start */
        seen[i] = (struct call_seen){atomic_load(&run->worker[i].stage_calls), start_ns};
    for (int i = 0; i < run->started_workers; i++) {
        struct worker *w = &run->worker[i];
        struct call_seen alone = {atomic_load(&w->stage_calls), pb_now_ns()};
        struct call_seen *look = seen ? &seen[i] : &alone; /* out of memory: from now */
        for (;;) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 50000000;
            if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
            }
            if (pthread_timedjoin_np(w->thread, NULL, &until) == 0)
                break;
            int stop = run->user_stop ? *run->user_stop : 0;
            if (atomic_load(&w->stuck) || (stop & PB_RUN_STOP_NOW)) {
                run->abandoned = true;
                break;
            }
            int stage = stop ? in_one_call(w, look, pb_now_ns()) : -1;
            if (stage >= 0) {
                abandon_on_stop(run, w, stage);
                break;
            }
        }
    }
    free(seen);
    run->started_workers = 0;
}

/* Ends a repeat: batches still on the device are harvested (the measured
 * ones among them count in the device figures), the workers and the
 * sampler are stopped, and a change of CPU clock is noted. */
static void stop_repeat(struct run *run)
{
    if (run->gpu) {
        char gpu_msg[PB_MSG_MAX];
        int grc = pb_gpu_loop_drain(run->gpu, gpu_msg, sizeof(gpu_msg));
        if (grc != PB_OK)
            pb_runner_fail(run, grc, gpu_msg);
    }
    atomic_store(&run->stop_workers, true);
    if (run->workers > 0)
        pb_queue_close(&run->queue);
    join_workers(run);
    if (run->workers == 0)
        pb_perf_close(&run->worker[0].perf);
    pb_sysmon_stop(&run->sysmon);
    if (run->workers > 0 && !run->abandoned) {
        pb_queue_destroy(&run->queue);
        run->queue_live = false;
    }
    double mhz_end = pb_cpu_mhz_now();
    if (run->mhz_start > 0 && mhz_end > 0 && fabs(mhz_end - run->mhz_start) > 0.1 * run->mhz_start)
        pb_point_warn(run->point,
                      "the CPU clock changed during a repeat (%.0f to %.0f MHz): power management "
                      "or throttling shifts the numbers",
                      run->mhz_start, mhz_end);
}

/* Warnings about the machine that hold for the whole point. */
static void warn_point_setup(const struct pb_spec *spec, const struct pb_dataset *ds,
                             struct pb_point_result *point)
{
    if (ds->skipped[0])
        pb_point_warn(point, "dataset.path '%s': %s", spec->dataset.path, ds->skipped);
    /* How much of the dataset is cached is measured at each repeat's
     * start (pb_storage_repeat_start), not guessed from its size. */
}


/* ---- the ops (bench/run/repeat.h) --------------------------------------- */

static int runner_open_round(void *self, int repeat, bool stage_timing,
                             struct pb_repeat_result *rep, char *msg, size_t msglen)
{
    struct run *run = self;
    run->recording = rep;
    int rc = start_repeat(run, repeat, stage_timing, msg, msglen);
    if (rc != PB_OK)
        run->recording = NULL;
    return rc;
}

/* The next batch, or why none came: the end of the data, or a stop, the
 * time cap, a stuck stage or a failure that woke the wait. */
static int runner_next(void *self, const struct pb_part *part, struct pb_delivery *d,
                       enum pb_stop_reason *why, char *msg, size_t msglen)
{
    (void)msg, (void)msglen;
    struct run *run = self;
    if (run->user_stop && *run->user_stop) {
        *why = PB_STOP_INTERRUPTED;
        return PB_NEXT_END;
    }
    uint64_t seq = run->next_seq;
    d->t_wait = pb_now_ns();
    struct pb_slot *slot = next_batch(run, seq, &d->depth);
    d->t_taken = pb_now_ns();
    if (!slot) {
        *why = run->fatal_rc == PB_ERR_STALLED         ? PB_STOP_STUCK
               : run->fatal_rc != PB_OK                ? PB_STOP_FAILED
               : run->user_stop && *run->user_stop     ? PB_STOP_INTERRUPTED
               : part->measuring && past_time_cap(run, d->t_taken) ? PB_STOP_TIME_CAP
                                                       : PB_STOP_DATA_END;
        return PB_NEXT_END;
    }
    if (run->loop_trace) {
        pb_trace_record(run->loop_trace, PB_TRACE_WAIT, PB_TRACE_SPAN, seq, d->t_wait, d->t_taken,
                        d->depth);
        pb_trace_record(run->loop_trace, PB_TRACE_QUEUE, PB_TRACE_COUNTER, seq, d->t_taken,
                        d->t_taken, d->depth);
    }
    run->next_seq++;
    d->seq = seq;
    d->handle = slot;
    d->assembly_ns = slot->assembly_ns;
    d->samples = slot->batch.samples;
    d->errors = (uint32_t)slot->errors;
    d->bytes = slot->bytes_read;
    if (seq == 0)
        d->first_batch_ns = d->t_taken - run->sysmon.start_ns; /* just before the workers */
    return PB_NEXT_BATCH;
}

static void runner_step(void *self, const struct pb_part *part, struct pb_delivery *d)
{
    struct run *run = self;
    d->step_ns = (uint64_t)(run->spec->run.step_ms * 1e6);
    d->step_wall_ns = train_on_batch(run, d->handle, part->measuring, d->step_ns);
    d->t_done = pb_now_ns();
    d->stages_ns = d->t_done - d->t_taken - d->step_wall_ns;
}

static int runner_release(void *self, const struct pb_part *part, struct pb_delivery *d,
                          bool recorded, char *msg, size_t msglen)
{
    struct run *run = self;
    if (recorded)
        pb_sysmon_publish(&run->sysmon, part->samples, part->wait_total);
    if (run->workers > 0)
        pb_queue_release(&run->queue, d->handle);
    if (run->fatal_rc == PB_OK)
        return PB_OK;
    snprintf(msg, msglen, "%s", run->fatal_msg);
    return run->fatal_rc;
}

static void runner_measuring(void *self, uint64_t t)
{
    struct run *run = self;
    pb_sysmon_measuring(&run->sysmon, t);
    if (run->loop_trace) /* the marker: which point and repeat follow */
        pb_trace_record(run->loop_trace, PB_TRACE_MEASURING, PB_TRACE_INSTANT,
                        (uint64_t)(run->hooks ? run->hooks->point : 0), t, t,
                        (uint32_t)run->repeat);
}

static void runner_cpu(void *self, uint64_t *loader_ns, uint64_t *all_ns)
{
    struct run *run = self;
    *loader_ns = loader_cpu_ns(run);
    *all_ns = pb_process_cpu_ns();
}

/* The workers and the sampler stopped; a stage found stuck, even while
 * the threads were joined after the stopping rule ended the part, cuts
 * the repeat short. */
static int runner_close_round(void *self, struct pb_part *part, int rc, char *msg, size_t msglen)
{
    struct run *run = self;
    stop_repeat(run);
    run->recording = NULL; /* the sampler has stopped */
    if (run->gpu)
        pb_gpu_note_end(run->point);
    if (run->fatal_rc == PB_ERR_STALLED)
        part->interrupted = true;
    if (rc == PB_OK && run->fatal_rc != PB_OK) {
        snprintf(msg, msglen, "%s", run->fatal_msg);
        rc = run->fatal_rc;
    }
    return rc;
}

static void runner_finish(void *self, struct pb_part *part, struct pb_repeat_result *rep,
                          bool stage_timing, int rc)
{
    (void)rc;
    struct run *run = self;
    rep->rss_peak_bytes = run->sysmon.rss_peak_bytes;
    pb_sysmon_copy(&run->sysmon, &rep->rss, &rep->rss_count);
    if (stage_timing && pb_stage_rows_merge(run->stats, nworkers(run), rep) == PB_OK)
        pb_stage_rows_slowest(run->stats, nworkers(run), rep, run->ds->paths, run->ds->count);
    if (run->gpu) {
        pb_gpu_acc_result(&run->gpu_acc, rep, rep->wall_s);
        /* The step ran on the device: its utilization is kernel time. */
        rep->accel_util_pct = run->spec->run.step_ms > 0
                                  ? 100.0 * rep->gpu.step_ns / (rep->wall_s * 1e9)
                                  : 0;
    }
    (void)part;
}

static int runner_workers(void *self)
{
    return nworkers(self);
}

static int runner_tick_processes(void *self)
{
    (void)self;
    return 0; /* thread and process clocks: exact */
}

static const char *runner_first_error(void *self)
{
    const struct run *run = self;
    return run->first_error;
}

static int runner_open(const struct pb_engine_row *row, const struct pb_spec *spec,
                       const struct pb_dataset *ds, const struct pb_run_hooks *hooks,
                       struct pb_point_result *point, void **self, char *msg, size_t msglen)
{
    (void)row;
    *self = NULL;
    if (pb_spec_uses_gpu(spec))
        pb_gpu_note_start(point);
    struct run *run = calloc(1, sizeof(*run));
    if (!run)
        return PB_ERR_NOMEM;
    int rc = pb_runner_setup(run, spec, ds, point, msg, msglen);
    if (rc != PB_OK) {
        pb_runner_free(run);
        free(run);
        return rc;
    }
    run->hooks = hooks;
    run->user_stop = hooks ? hooks->stop : NULL;
    run->sysmon.tick = hooks ? hooks->tick : NULL;
    run->sysmon.watch = watch;
    run->sysmon.watch_user = run;
    run->sysmon.tick_user = hooks ? hooks->user : NULL;
    run->sysmon.own_bytes = own_bytes;
    run->sysmon.own_user = run;
    if (pb_runner_trace_setup(run, hooks ? hooks->trace : NULL) != PB_OK)
        pb_point_warn(point, "run.trace: out of memory for the trace buffers; no trace");
    warn_point_setup(spec, ds, point);
    pb_affinity_bind(run->affinity, 0); /* the training loop: this thread */
    if (spec->profile.level == PB_PROFILE_COMPREHENSIVE)
        pb_perf_note(point);
    *self = run;
    return PB_OK;
}

/* A run whose loader thread was left stuck in a stage: kept, never freed,
 * since the thread may still use it until the process ends. */
static struct run *abandoned_run;

static void runner_close(void *self)
{
    struct run *run = self;
    if (!run)
        return;
    if (run->abandoned) {
        abandoned_run = run;
        return;
    }
    if (run->affinity) {
        pb_affinity_thread_end(run->affinity, 0);
        json_decref(run->point->affinity);
        run->point->affinity = pb_affinity_to_json(run->affinity);
    }
    pb_runner_free(run);
    free(run);
}

const struct pb_engine_ops pb_runner_ops = {
    .waits_here = true,
    .open = runner_open,
    .open_round = runner_open_round,
    .next = runner_next,
    .step = runner_step,
    .release = runner_release,
    .measuring = runner_measuring,
    .cpu = runner_cpu,
    .close_round = runner_close_round,
    .finish = runner_finish,
    .workers = runner_workers,
    .tick_processes = runner_tick_processes,
    .first_error = runner_first_error,
    .close = runner_close,
};
