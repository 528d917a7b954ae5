/* The runner (bench/run/runner.h): one point of pbench's own engine measured, its
 * repeats, the consumer loop, the watchdog and the totals. */
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
#include "bench/run/engine.h"
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

/* ---- one repeat -------------------------------------------------------- */

static int push_batch_record(struct pb_repeat_result *rep, size_t *cap,
                             const struct pb_batch_record *rec)
{
    if (rep->batch_count == *cap) {
        size_t next = *cap ? *cap * 2 : 4096;
        struct pb_batch_record *grown = realloc(rep->batch_records, next * sizeof(*grown));
        if (!grown)
            return PB_ERR_NOMEM;
        rep->batch_records = grown;
        *cap = next;
    }
    rep->batch_records[rep->batch_count] = *rec;
    /* Relaxed: the sampler reads the count (own_bytes below). */
    __atomic_store_n(&rep->batch_count, rep->batch_count + 1, __ATOMIC_RELAXED);
    return PB_OK;
}

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
    pb_stoprule_start(&run->rule, pb_now_ns()); /* no reason yet; restarted when measuring */
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

static void start_measuring(struct run *run, struct consumed *c)
{
    c->measuring = true;
    c->t_start = pb_now_ns();
    pb_sysmon_measuring(&run->sysmon, c->t_start);
    c->loader_cpu_start = loader_cpu_ns(run);
    c->cpu_start = pb_process_cpu_ns();
    pb_stoprule_start(&run->rule, c->t_start);
    if (run->loop_trace) /* the marker: which point and repeat follow */
        pb_trace_record(run->loop_trace, PB_TRACE_MEASURING, PB_TRACE_INSTANT,
                        (uint64_t)(run->hooks ? run->hooks->point : 0), c->t_start, c->t_start,
                        (uint32_t)run->repeat);
}

/* Adds a measured batch to the repeat's records and totals. */
static void record_batch(struct run *run, struct consumed *c, struct pb_repeat_result *rep,
                         const struct pb_slot *slot, uint64_t wait_ns, uint64_t train_ns,
                         uint64_t step_wall_ns, uint64_t t_done, uint32_t depth)
{
    struct pb_batch_record rec = {
        .assembly_ns = slot->assembly_ns,
        .wait_ns = wait_ns,
        .step_ns = train_ns,
        .queue_depth = depth,
        .samples = slot->batch.samples,
    };
    if (push_batch_record(rep, &c->records_cap, &rec) != PB_OK)
        pb_runner_fail(run, PB_ERR_NOMEM, "out of memory recording batch timings");
    c->samples += slot->batch.samples;
    c->wait_total += wait_ns;
    pb_sysmon_publish(&run->sysmon, c->samples, c->wait_total);
    c->batches++;
    c->bytes_read += slot->bytes_read;
    c->errors += slot->errors;
    c->step_total += c->step_ns;
    c->step_wall_total += step_wall_ns;
    c->stages_total += train_ns - step_wall_ns;
    c->t_end = t_done;
}

/* Whether the measured part ends after this batch: on the stopping rule
 * (rule_done), or in a multi-rank run on the decider's word (which can
 * come while this rank is still in its warm-up: c->group_stopped). */
static bool part_ends(struct run *run, struct consumed *c, bool rule_done)
{
    struct pb_run_group *g = run->hooks ? run->hooks->group : NULL;
    if (!g || g->decides)
        return rule_done;
    if (!atomic_load_explicit(&g->group_done, memory_order_acquire))
        return false;
    int reason = atomic_load_explicit(&g->group_reason, memory_order_relaxed);
    if (reason == PB_STOP_DATA_END)
        return rule_done; /* this rank reads its shard to its own end */
    run->rule.reason = (enum pb_stop_reason)reason; /* the decider's, not this rank's */
    c->group_stopped = true;
    return true;
}

/* The loop waited for a batch that did not come (t_wait0 to t_wait1): why
 * the measured part ends. Anything but the end of the data (the time cap, a
 * stop, a stuck stage, a failure) ends it at t_wait1 with the wait counted
 * as stall: a repeat cut while it waited covers its whole time, not the
 * span up to its last batch. */
static void end_without_batch(struct run *run, struct consumed *c, uint64_t t_wait0,
                              uint64_t t_wait1)
{
    enum pb_stop_reason reason = PB_STOP_DATA_END;
    if (run->fatal_rc == PB_ERR_STALLED)
        reason = PB_STOP_STUCK;
    else if (run->fatal_rc != PB_OK)
        reason = PB_STOP_FAILED;
    else if (run->user_stop && *run->user_stop)
        reason = PB_STOP_INTERRUPTED;
    else if (c->measuring && past_time_cap(run, t_wait1))
        reason = PB_STOP_TIME_CAP;
    if (reason != PB_STOP_DATA_END && c->measuring) {
        c->wait_total += t_wait1 - t_wait0;
        c->t_end = t_wait1;
    }
    pb_stoprule_end(&run->rule, reason);
}

/* The consumer loop: warm-up batches, then measured ones until the
 * stopping rule, the end of the data, a failure or an interrupt. The CPU
 * clocks are read before the workers are stopped: finishing the batches
 * they are building is not part of the measured part. */
static void consume(struct run *run, struct consumed *c, struct pb_repeat_result *rep)
{
    for (uint64_t seq = 0;; seq++) {
        if (run->user_stop && *run->user_stop) {
            c->interrupted = true;
            pb_stoprule_end(&run->rule, PB_STOP_INTERRUPTED);
            break;
        }
        if (!c->measuring && seq >= run->first_measured_seq)
            start_measuring(run, c);
        uint64_t t_wait0 = pb_now_ns();
        uint32_t depth = 0;
        struct pb_slot *slot = next_batch(run, seq, &depth);
        uint64_t t_wait1 = pb_now_ns();
        if (run->loop_trace && slot) {
            pb_trace_record(run->loop_trace, PB_TRACE_WAIT, PB_TRACE_SPAN, seq, t_wait0, t_wait1,
                            depth);
            pb_trace_record(run->loop_trace, PB_TRACE_QUEUE, PB_TRACE_COUNTER, seq, t_wait1,
                            t_wait1, depth);
        }
        if (!slot) {
            end_without_batch(run, c, t_wait0, t_wait1);
            break;
        }
        if (seq == 0)
            c->first_batch_ns = t_wait1 - run->sysmon.start_ns; /* just before the workers */
        uint64_t step_wall_ns = train_on_batch(run, slot, c->measuring, c->step_ns);
        uint64_t t_done = pb_now_ns();
        uint32_t samples = slot->batch.samples;
        if (c->measuring)
            record_batch(run, c, rep, slot, t_wait1 - t_wait0, t_done - t_wait1, step_wall_ns,
                         t_done, depth);
        if (run->workers > 0)
            pb_queue_release(&run->queue, slot);
        if (run->fatal_rc != PB_OK) {
            pb_stoprule_end(&run->rule, PB_STOP_FAILED);
            break;
        }
        if (part_ends(run, c, c->measuring && pb_stoprule_batch(&run->rule, t_done, samples)))
            break;
    }
    /* A repeat is complete only when its stopping rule (or the end of its
     * data) ended it: a stop that woke the loop while it waited for a batch,
     * or the decider's stop, leaves it cut short. */
    if (run->rule.reason == PB_STOP_INTERRUPTED || run->rule.reason == PB_STOP_STUCK ||
        run->rule.reason == PB_STOP_FAILED)
        c->interrupted = true;
    if (run->hooks && run->hooks->group) {
        atomic_store(&run->hooks->group->local_reason, (int)run->rule.reason);
        atomic_store(&run->hooks->group->local_done, true);
    }
    if (c->measuring) {
        c->loader_cpu_end = loader_cpu_ns(run);
        c->cpu_end = pb_process_cpu_ns();
        c->t_cpu_end = pb_now_ns();
        pb_sysmon_interference(&run->sysmon, c->cpu_end - c->cpu_start, &rep->other_cpu_pct,
                               &rep->steal_pct);
    }
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

/* Why a repeat that measured nothing failed. */
static int nothing_measured(const struct run *run, bool interrupted, char *msg, size_t msglen)
{
    if (run->fatal_rc != PB_OK) {
        snprintf(msg, msglen, "%s", run->fatal_msg);
        return run->fatal_rc;
    }
    if (interrupted)
        return PB_ERR_INTERRUPTED;
    snprintf(msg, msglen,
             "the data ran out during warm-up (%llu batches): lower run.warmup_batches or "
             "raise dataset.epochs",
             (unsigned long long)run->spec->run.warmup_batches);
    return PB_ERR_CONFIG;
}

/* The repeat's totals and rates over the measured part. */
static void fill_totals(struct run *run, const struct consumed *c, struct pb_repeat_result *rep)
{
    double span_ns = (double)(c->t_end - c->t_start);
    double wall_s = span_ns / 1e9;
    rep->wall_s = wall_s;
    rep->start_unix_s = pb_unix_time_of(c->t_start);
    rep->samples = c->samples;
    rep->batches = c->batches;
    rep->bytes_read = c->bytes_read;
    rep->errors = c->errors;
    rep->samples_per_s = (double)c->samples / wall_s;
    rep->batches_per_s = (double)c->batches / wall_s;
    rep->mb_per_s = (double)c->bytes_read / 1e6 / wall_s;
    rep->stall_pct = 100.0 * (double)c->wait_total / span_ns;
    rep->accel_util_pct = c->step_ns ? 100.0 * (double)c->step_total / span_ns : 0;
    /* The CPU clocks were read when the loop ended, which can be later than
     * the last batch (a stage that failed was waited for): their share is of
     * the time they were read over, never of the shorter measured span. */
    double cpu_span_ns = c->t_cpu_end > c->t_start ? (double)(c->t_cpu_end - c->t_start) : span_ns;
    rep->cpu_util_pct = 100.0 * (double)(c->cpu_end - c->cpu_start) / cpu_span_ns;
    rep->window_noise = pb_stoprule_noise(&run->rule);
    rep->hit_time_cap = run->rule.reason == PB_STOP_TIME_CAP;
    rep->noisy = pb_stoprule_noisy(&run->rule);
    rep->interrupted = c->interrupted;
    uint64_t worker_cpu =
        c->loader_cpu_end > c->loader_cpu_start ? c->loader_cpu_end - c->loader_cpu_start : 0;
    rep->worker_cpu_pct = 100.0 * (double)worker_cpu / ((double)nworkers(run) * cpu_span_ns);
    rep->rss_peak_bytes = run->sysmon.rss_peak_bytes;
    pb_sysmon_copy(&run->sysmon, &rep->rss, &rep->rss_count);
    pb_repeat_loop_shares(rep, c->step_wall_total, c->stages_total);
    rep->first_batch_s = (double)c->first_batch_ns / 1e9;
}

static int run_repeat(struct run *run, int repeat, bool stage_timing, struct pb_repeat_result *rep,
                      bool *interrupted, char *msg, size_t msglen)
{
    memset(rep, 0, sizeof(*rep));
    *interrupted = false;
    pb_storage_repeat_start(run->spec, run->ds, run->point, rep);
    struct pb_speed_mark speed;
    pb_machine_speed_before(rep, &speed);
    run->recording = rep;
    int rc = start_repeat(run, repeat, stage_timing, msg, msglen);
    if (rc != PB_OK) {
        run->recording = NULL;
        return rc;
    }
    struct consumed c = {.step_ns = (uint64_t)(run->spec->run.step_ms * 1e6)};
    consume(run, &c, rep);
    stop_repeat(run);
    run->recording = NULL; /* the sampler has stopped */
    pb_machine_speed_after(rep, &speed);
    /* A stage found stuck, even while the threads were joined after the
     * stopping rule ended the part, cuts the repeat short. */
    if (run->fatal_rc == PB_ERR_STALLED)
        c.interrupted = true;
    *interrupted = c.interrupted;
    if (c.group_stopped && !c.interrupted && run->fatal_rc == PB_OK &&
        (!c.measuring || c.t_end <= c.t_start))
        return PB_OK; /* the decider stopped before this rank measured: not kept */
    if (!c.measuring || c.t_end <= c.t_start)
        return nothing_measured(run, c.interrupted, msg, msglen);
    if (c.samples == 0 && run->fatal_rc == PB_OK && !c.interrupted && c.errors == 0 &&
        run->rule.reason == PB_STOP_TIME_CAP) {
        /* The cap came before a batch did: slower than one batch in
         * run.max_time_s, a rate this repeat cannot give. It is left out
         * and said; the point goes on with its other repeats. */
        pb_point_warn(run->point,
                      "a repeat delivered no batch within run.max_time_s (%g s) and is left out: "
                      "the loader is slower than one batch in that time; raise run.max_time_s",
                      run->spec->run.max_time_s);
        return PB_OK;
    }
    if (c.samples == 0) /* not kept: a rate of no samples is no figure */
        return run->fatal_rc != PB_OK || c.interrupted
                   ? nothing_measured(run, c.interrupted, msg, msglen)
                   : pb_error_share_check(&run->spec->run, 0, c.errors, run->first_error, msg,
                                          msglen);

    fill_totals(run, &c, rep);
    if (run->fatal_rc == PB_OK &&
        pb_repeat_cpu_impossible(rep, sysconf(_SC_NPROCESSORS_ONLN), 0, msg, msglen)) {
        pb_repeat_result_free(rep); /* not a figure: not kept */
        return PB_ERR;
    }
    if (stage_timing && pb_stage_rows_merge(run->stats, nworkers(run), rep) == PB_OK)
        pb_stage_rows_slowest(run->stats, nworkers(run), rep, run->ds->paths, run->ds->count);
    if (run->gpu) {
        pb_gpu_acc_result(&run->gpu_acc, rep, rep->wall_s);
        /* The step ran on the device: its utilization is kernel time. */
        rep->accel_util_pct = c.step_ns ? 100.0 * rep->gpu.step_ns / (rep->wall_s * 1e9) : 0;
    }
    if (run->fatal_rc != PB_OK) {
        snprintf(msg, msglen, "%s", run->fatal_msg);
        return run->fatal_rc;
    }
    if (c.interrupted)
        return PB_ERR_INTERRUPTED;
    return pb_error_share_check(&run->spec->run, c.samples, c.errors, run->first_error, msg,
                                msglen);
}

/* ---- a point ------------------------------------------------------------ */

struct pb_point_run {
    struct run run;
    const struct pb_run_hooks *hooks;
    /* loader.engine other than pbench: the engine process measures the
     * point (bench/run/engine.h) and run is unused. */
    struct pb_engine_run *engine;
};

/* Warnings about the machine that hold for the whole point. */
static void warn_point_setup(const struct pb_spec *spec, const struct pb_dataset *ds,
                             struct pb_point_result *point)
{
    long pus = sysconf(_SC_NPROCESSORS_ONLN);
    if (spec->loader.workers > pus && pus > 0)
        pb_point_warn(point,
                      "loader.workers (%lld) exceeds the %ld hardware threads: workers share cores",
                      (long long)spec->loader.workers, pus);
    if (ds->skipped[0])
        pb_point_warn(point, "dataset.path '%s': %s", spec->dataset.path, ds->skipped);
    /* How much of the dataset is cached is measured at each repeat's
     * start (pb_storage_repeat_start), not guessed from its size. */
}

int pb_point_open(const struct pb_spec *spec, const struct pb_dataset *ds,
                  const struct pb_run_hooks *hooks, struct pb_point_result *point,
                  struct pb_point_run **out, char *msg, size_t msglen)
{
    *out = NULL;
    int repeats = (int)spec->run.repeats;
    if (!point->repeats) {
        point->repeats = calloc((size_t)repeats, sizeof(*point->repeats));
        if (!point->repeats)
            return PB_ERR_NOMEM;
    }
    struct pb_point_run *pr = calloc(1, sizeof(*pr));
    if (!pr)
        return PB_ERR_NOMEM;
    if (spec->loader.engine != PB_ENGINE_PBENCH) {
        int rc = pb_engine_open(spec, ds, hooks, point, &pr->engine, msg, msglen);
        if (rc != PB_OK)
            free(pr);
        else
            *out = pr;
        return rc;
    }
    if (pb_spec_uses_gpu(spec))
        pb_gpu_note_start(point);
    int rc = pb_runner_setup(&pr->run, spec, ds, point, msg, msglen);
    if (rc != PB_OK) {
        pb_runner_free(&pr->run);
        free(pr);
        return rc;
    }
    pr->hooks = hooks;
    pr->run.hooks = hooks;
    pr->run.user_stop = hooks ? hooks->stop : NULL;
    pr->run.sysmon.tick = hooks ? hooks->tick : NULL;
    pr->run.sysmon.watch = watch;
    pr->run.sysmon.watch_user = &pr->run;
    pr->run.sysmon.tick_user = hooks ? hooks->user : NULL;
    pr->run.sysmon.own_bytes = own_bytes;
    pr->run.sysmon.own_user = &pr->run;

    if (pb_runner_trace_setup(&pr->run, hooks ? hooks->trace : NULL) != PB_OK)
        pb_point_warn(point, "run.trace: out of memory for the trace buffers; no trace");
    warn_point_setup(spec, ds, point);
    pb_affinity_bind(pr->run.affinity, 0); /* the training loop: this thread */
    if (spec->profile.level == PB_PROFILE_COMPREHENSIVE)
        pb_perf_note(point);
    *out = pr;
    return PB_OK;
}

int pb_point_repeat(struct pb_point_run *pr, int repeat, bool measure_overhead,
                    double *overhead_pct, char *msg, size_t msglen)
{
    if (pr->engine)
        return pb_engine_repeat(pr->engine, repeat, measure_overhead, overhead_pct, msg, msglen);
    struct run *run = &pr->run;
    const struct pb_spec *spec = run->spec;
    struct pb_point_result *point = run->point;
    int repeats = (int)spec->run.repeats;
    if (point->repeat_count >= (size_t)repeats) {
        snprintf(msg, msglen, "point already has its %d repeats", repeats);
        return PB_ERR;
    }
    bool interrupted = false;
    struct pb_repeat_result *rep = &point->repeats[point->repeat_count];
    int rc = run_repeat(run, repeat, pb_spec_stage_timing(spec), rep, &interrupted, msg, msglen);
    if (run->gpu)
        pb_gpu_note_end(point);
    if (rep->wall_s > 0) {
        point->repeat_count++;
        if (pr->hooks && pr->hooks->stopped)
            pr->hooks->stopped(pr->hooks->user, repeat, run->rule.reason);
        if (pr->hooks && pr->hooks->progress)
            pr->hooks->progress(pr->hooks->user, repeat, repeats, rep);
    } else {
        pb_repeat_result_free(rep);
    }
    if (rc != PB_OK || !measure_overhead)
        return rc;
    /* The same round with stage timing flipped, right after, so drift in
     * machine speed hits both alike. */
    struct pb_repeat_result other;
    bool timed_first = pb_spec_stage_timing(spec);
    rc = run_repeat(run, repeat, !timed_first, &other, &interrupted, msg, msglen);
    if (rc == PB_OK && other.samples_per_s > 0 && overhead_pct) {
        double timed = timed_first ? rep->samples_per_s : other.samples_per_s;
        double untimed = timed_first ? other.samples_per_s : rep->samples_per_s;
        *overhead_pct = 100.0 * (untimed - timed) / untimed;
    }
    pb_repeat_result_free(&other);
    return rc;
}

/* A run whose loader thread was left stuck in a stage: kept, never freed,
 * since the thread may still use it until the process ends. */
static struct pb_point_run *abandoned_run;

void pb_point_close(struct pb_point_run *pr)
{
    if (!pr)
        return;
    if (pr->engine) {
        pb_engine_close(pr->engine);
        free(pr);
        return;
    }
    if (pr->run.abandoned) {
        abandoned_run = pr;
        return;
    }
    if (pr->run.affinity) {
        pb_affinity_thread_end(pr->run.affinity, 0);
        json_decref(pr->run.point->affinity);
        pr->run.point->affinity = pb_affinity_to_json(pr->run.affinity);
    }
    pb_runner_free(&pr->run);
    free(pr);
}

int pb_run_point(const struct pb_spec *spec, const struct pb_dataset *ds,
                 const struct pb_run_hooks *hooks, struct pb_point_result *point, char *msg,
                 size_t msglen)
{
    struct pb_point_run *pr;
    int rc = pb_point_open(spec, ds, hooks, point, &pr, msg, msglen);
    if (rc != PB_OK)
        return rc;
    for (int r = 0; r < (int)spec->run.repeats && rc == PB_OK; r++)
        rc = pb_point_repeat(pr, r, false, NULL, msg, msglen);
    if (point->repeat_count > 0)
        pb_point_summarize(point);
    pb_point_close(pr);
    return rc;
}
