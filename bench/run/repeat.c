/* The repeat (bench/run/repeat.h): the one measurement loop over an
 * engine's ops, from a point's open to its repeats' totals. */
#include "bench/run/repeat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/run/engine.h"
#include "bench/run/engine_ops.h"
#include "bench/run/runlimits.h"
#include "bench/run/runner.h"
#include "bench/run/storage_run.h"

struct pb_point_run {
    const struct pb_engine_row *row;
    const struct pb_engine_ops *ops;
    void *self;
    const struct pb_spec *spec;
    const struct pb_dataset *ds;
    const struct pb_run_hooks *hooks;
    struct pb_point_result *point;
    struct pb_stoprule rule;
};

/* ---- the measured part -------------------------------------------------- */

/* The CPU clocks' span is taken around their readings (before the start's,
 * after the end's), so a reading delayed by the scheduler never makes the
 * span shorter than the CPU it holds. */
static void read_cpu_start(struct pb_point_run *pr, struct pb_part *c)
{
    c->cpu_read_start = pb_now_ns();
    pr->ops->cpu(pr->self, &c->loader_cpu_start, &c->all_cpu_start);
    pb_machine_cpu_now(&c->machine_start);
}

static void read_cpu_end(struct pb_point_run *pr, struct pb_part *c)
{
    pr->ops->cpu(pr->self, &c->loader_cpu_end, &c->all_cpu_end);
    c->cpu_read_end = pb_now_ns();
}

/* The measured part starts with the wait for its first batch, at t. */
static void start_measuring(struct pb_point_run *pr, struct pb_part *c, uint64_t t)
{
    c->measuring = true;
    c->t_start = c->t_end = t;
    if (pr->ops->measuring)
        pr->ops->measuring(pr->self, t);
    read_cpu_start(pr, c);
    pb_stoprule_start(&pr->rule, t);
}

static int push_record(struct pb_repeat_result *rep, struct pb_part *c,
                       const struct pb_batch_record *rec)
{
    if (rep->batch_count == c->records_cap) {
        size_t cap = c->records_cap ? 2 * c->records_cap : 4096;
        struct pb_batch_record *grown = realloc(rep->batch_records, cap * sizeof(*grown));
        if (!grown)
            return PB_ERR_NOMEM;
        rep->batch_records = grown;
        c->records_cap = cap;
    }
    rep->batch_records[rep->batch_count] = *rec;
    /* Relaxed: pbench's sampler reads the count (its own bytes). */
    __atomic_store_n(&rep->batch_count, rep->batch_count + 1, __ATOMIC_RELAXED);
    return PB_OK;
}

/* A measured batch into the repeat's records and the part's totals. */
static int record(struct pb_point_run *pr, struct pb_part *c, struct pb_repeat_result *rep,
                  const struct pb_delivery *d)
{
    struct pb_batch_record rec = {
        .assembly_ns = d->assembly_ns,
        .wait_ns = d->t_taken - d->t_wait,
        .step_ns = d->t_done - d->t_taken,
        .queue_depth = d->depth,
        .samples = d->samples,
    };
    if (push_record(rep, c, &rec) != PB_OK)
        return PB_ERR_NOMEM;
    c->samples += d->samples;
    c->batches++;
    c->bytes += d->bytes;
    c->errors += d->errors;
    c->wait_total += d->t_taken - d->t_wait;
    c->step_total += d->step_ns;
    c->step_wall_total += d->step_wall_ns;
    c->stages_total += d->stages_ns;
    c->t_end = d->t_done;
    if (d->cpu_now) {
        read_cpu_end(pr, c);
        c->cpu_at_batch = true;
    }
    return PB_OK;
}

/* Ends the measured part for reason: its CPU clocks are read now (what the
 * engine does after it is not measured; a job's are as of its last batch
 * when it ended by itself), the interference over it, the group told. */
static void end_part(struct pb_point_run *pr, struct pb_part *c, enum pb_stop_reason reason,
                     struct pb_repeat_result *rep)
{
    if (c->ended)
        return;
    c->ended = true;
    pb_stoprule_end(&pr->rule, reason);
    if (c->measuring) {
        if (reason != PB_STOP_DATA_END || !c->cpu_at_batch)
            read_cpu_end(pr, c);
        struct pb_machine_cpu now;
        pb_machine_cpu_now(&now);
        pb_interference(&c->machine_start, &now,
                        c->all_cpu_end > c->all_cpu_start ? c->all_cpu_end - c->all_cpu_start : 0,
                        sysconf(_SC_CLK_TCK), &rep->other_cpu_pct, &rep->steal_pct);
    }
    struct pb_run_group *g = pr->hooks ? pr->hooks->group : NULL;
    if (g) {
        atomic_store(&g->local_reason, (int)pr->rule.reason);
        atomic_store(&g->local_done, true);
    }
    if (pr->ops->part_ended)
        pr->ops->part_ended(pr->self, pr->rule.reason);
}

/* No batch came, for why, seen at now: anything but the end of the data
 * (the time cap, a stop, a stuck stage, a failure) ends the part at now
 * with the wait counted as stall, so a repeat cut while it waited covers
 * its whole time, not the span up to its last batch. */
static void end_waiting(struct pb_point_run *pr, struct pb_part *c, enum pb_stop_reason why,
                        uint64_t now, struct pb_repeat_result *rep)
{
    if (why != PB_STOP_DATA_END && c->measuring && !c->ended && now > c->t_end) {
        c->wait_total += now - c->t_end;
        c->t_end = now;
    }
    end_part(pr, c, why, rep);
}

/* Whether the measured part ends after this batch: on the stopping rule
 * (rule_done), or in a multi-rank run on the decider's word (which can
 * come while this rank is still in its warm-up: c->group_stopped). */
static bool part_ends(struct pb_point_run *pr, struct pb_part *c, bool rule_done)
{
    struct pb_run_group *g = pr->hooks ? pr->hooks->group : NULL;
    if (!g || g->decides)
        return rule_done;
    if (!atomic_load_explicit(&g->group_done, memory_order_acquire))
        return false;
    int reason = atomic_load_explicit(&g->group_reason, memory_order_relaxed);
    if (reason == PB_STOP_DATA_END)
        return rule_done; /* this rank reads its shard to its own end */
    pr->rule.reason = (enum pb_stop_reason)reason; /* the decider's, not this rank's */
    c->group_stopped = true;
    return true;
}

/* The loop: warm-up batches, then measured ones until the stopping rule,
 * the end of the data, a failure or a stop. Returns the loop's code. */
static int loop(struct pb_point_run *pr, struct pb_part *c, struct pb_repeat_result *rep,
                char *msg, size_t msglen)
{
    const struct pb_engine_ops *ops = pr->ops;
    uint64_t first_measured = (uint64_t)pr->spec->run.warmup_batches;
    for (;;) {
        struct pb_delivery d = {0};
        enum pb_stop_reason why = PB_STOP_DATA_END;
        if (ops->waits_here && !c->measuring && c->delivered >= first_measured)
            start_measuring(pr, c, pb_now_ns());
        int n = ops->next(pr->self, c, &d, &why, msg, msglen);
        if (n != PB_NEXT_BATCH) {
            if (n < 0) /* the engine failed inside the round: cut short */
                why = n == PB_ERR_STALLED ? PB_STOP_STUCK
                      : n == PB_ERR_INTERRUPTED ? PB_STOP_INTERRUPTED
                                                : PB_STOP_FAILED;
            end_waiting(pr, c, why, pb_now_ns(), rep);
            return n < 0 ? n : PB_OK;
        }
        c->delivered++;
        if (!c->measuring && d.seq >= first_measured)
            start_measuring(pr, c, d.t_wait);
        if (d.seq == 0 && d.first_batch_ns)
            c->first_batch_ns = d.first_batch_ns;
        if (ops->step)
            ops->step(pr->self, c, &d);
        int rc = c->measuring ? record(pr, c, rep, &d) : PB_OK;
        if (rc != PB_OK)
            snprintf(msg, msglen, "out of memory recording batch timings");
        int released = ops->release(pr->self, c, &d, c->measuring && rc == PB_OK, msg, msglen);
        rc = rc != PB_OK ? rc : released;
        if (rc != PB_OK) {
            end_part(pr, c, PB_STOP_FAILED, rep);
            return rc;
        }
        if (part_ends(pr, c, c->measuring && pb_stoprule_batch(&pr->rule, d.t_done, d.samples))) {
            end_part(pr, c, pr->rule.reason ? pr->rule.reason : PB_STOP_STABLE, rep);
            return PB_OK;
        }
    }
}

/* The repeat's totals and rates over the measured part. */
static void fill_totals(struct pb_point_run *pr, const struct pb_part *c,
                        struct pb_repeat_result *rep)
{
    double span_ns = (double)(c->t_end - c->t_start);
    rep->wall_s = span_ns / 1e9;
    rep->start_unix_s = pb_unix_time_of(c->t_start);
    rep->samples = c->samples;
    rep->batches = c->batches;
    rep->bytes_read = c->bytes;
    rep->errors = c->errors;
    rep->samples_per_s = (double)c->samples / rep->wall_s;
    rep->batches_per_s = (double)c->batches / rep->wall_s;
    rep->mb_per_s = (double)c->bytes / 1e6 / rep->wall_s;
    rep->stall_pct = 100.0 * (double)c->wait_total / span_ns;
    /* The share of the loop's time in its step: the simulated one, or a
     * wrapped job's own (its model's work, on whatever device). */
    rep->accel_util_pct = pr->spec->run.step_ms > 0 || pr->row->job_sizes
                              ? 100.0 * (double)c->step_total / span_ns
                              : 0;
    /* The CPU clocks are read when the loop sees a batch or its end, which
     * can be later than the batches' own times (a stage that failed was
     * waited for; a wrapped job's batch is sent when the next one is asked
     * for): their shares are of the time they were read over. */
    double cpu_span_ns = c->cpu_read_end > c->cpu_read_start
                             ? (double)(c->cpu_read_end - c->cpu_read_start)
                             : span_ns;
    uint64_t all_cpu = c->all_cpu_end > c->all_cpu_start ? c->all_cpu_end - c->all_cpu_start : 0;
    rep->cpu_util_pct = 100.0 * (double)all_cpu / cpu_span_ns;
    uint64_t loader_cpu =
        c->loader_cpu_end > c->loader_cpu_start ? c->loader_cpu_end - c->loader_cpu_start : 0;
    int workers = pr->ops->workers(pr->self);
    rep->worker_cpu_pct = 100.0 * (double)loader_cpu / ((double)(workers > 0 ? workers : 1) *
                                                         cpu_span_ns);
    rep->window_noise = pb_stoprule_noise(&pr->rule);
    rep->hit_time_cap = pr->rule.reason == PB_STOP_TIME_CAP;
    rep->noisy = pb_stoprule_noisy(&pr->rule);
    rep->interrupted = c->interrupted;
    pb_repeat_loop_shares(rep, c->step_wall_total, c->stages_total);
    rep->first_batch_s = (double)c->first_batch_ns / 1e9;
}

/* Whether the repeat's CPU is more than the machine has. CPU read from
 * /proc comes in whole clock ticks, at both ends of the span it is shared
 * over: each process's figure may be two ticks off over that span, so a
 * window of a few ticks can read above the cores without a fault. */
static bool cpu_impossible(struct pb_point_run *pr, const struct pb_part *c,
                           const struct pb_repeat_result *rep, char *msg, size_t msglen)
{
    int processes = pr->ops->tick_processes(pr->self);
    double resolution_ns = 0;
    if (processes > 0) {
        long tck = sysconf(_SC_CLK_TCK);
        double tick_ns = 1e9 / (double)(tck > 0 ? tck : 100);
        double cpu_span_ns = c->cpu_read_end > c->cpu_read_start
                                 ? (double)(c->cpu_read_end - c->cpu_read_start)
                                 : rep->wall_s * 1e9;
        resolution_ns = 2.0 * processes * tick_ns *
                        (cpu_span_ns > 0 ? rep->wall_s * 1e9 / cpu_span_ns : 1.0);
    }
    return pb_repeat_cpu_impossible(rep, sysconf(_SC_NPROCESSORS_ONLN), resolution_ns, msg, msglen);
}

/* Why a repeat that measured nothing gave no figure (rc: the round's). */
static int nothing_measured(struct pb_point_run *pr, const struct pb_part *c, int rc, char *msg,
                            size_t msglen)
{
    if (rc != PB_OK)
        return rc;
    if (c->interrupted)
        return PB_ERR_INTERRUPTED;
    if (c->group_stopped)
        return PB_OK; /* the decider stopped before this rank measured: not kept */
    const struct pb_run_spec *run = &pr->spec->run;
    if (c->measuring && c->errors == 0 && pr->rule.reason == PB_STOP_TIME_CAP) {
        /* The cap came before a batch did: slower than one batch in
         * run.max_time_s, a rate this repeat cannot give. It is left out
         * and said; the point goes on with its other repeats. */
        pb_point_warn(pr->point,
                      "a repeat delivered no batch within run.max_time_s (%g s) and is left out: "
                      "the loader is slower than one batch in that time; raise run.max_time_s",
                      run->max_time_s);
        return PB_OK;
    }
    if (c->errors == 0 && pr->row->job_sizes) {
        snprintf(msg, msglen,
                 "%s ended during warm-up (%lld batches): lower run.warmup_batches (pbench wrap "
                 "--warmup-batches), or let the job run longer",
                 pr->row->title, (long long)run->warmup_batches);
        return PB_ERR;
    }
    if (c->errors == 0) {
        snprintf(msg, msglen,
                 "the data ran out during warm-up (%lld batches): lower run.warmup_batches or "
                 "raise dataset.epochs",
                 (long long)run->warmup_batches);
        return PB_ERR_CONFIG;
    }
    return pb_error_share_check(run, 0, c->errors, pr->ops->first_error(pr->self), msg, msglen);
}

/* One round, with or without stage timing, into rep: kept (rep->wall_s >
 * 0) when it measured something. */
static int run_round(struct pb_point_run *pr, int repeat, bool stage_timing,
                     struct pb_repeat_result *rep, char *msg, size_t msglen)
{
    memset(rep, 0, sizeof(*rep));
    if (pr->ds->count)
        pb_storage_repeat_start(pr->spec, pr->ds, pr->point, rep);
    struct pb_speed_mark speed;
    pb_machine_speed_before(rep, &speed);
    pb_stoprule_start(&pr->rule, pb_now_ns()); /* no reason yet; restarted when measuring */
    int rc = pr->ops->open_round(pr->self, repeat, stage_timing, rep, msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct pb_part c = {0};
    rc = loop(pr, &c, rep, msg, msglen);
    rc = pr->ops->close_round(pr->self, &c, rc, msg, msglen);
    enum pb_stop_reason why = pr->rule.reason;
    /* A repeat is complete only when its stopping rule (or the end of its
     * data) ended it: a stop, a stuck stage or a failure cuts it short. */
    if (why == PB_STOP_INTERRUPTED || why == PB_STOP_STUCK || rc == PB_ERR_STALLED ||
        (why == PB_STOP_FAILED && rc != PB_OK))
        c.interrupted = true;
    bool measured = c.measuring && c.t_end > c.t_start && c.samples > 0;
    if (!measured) {
        pb_repeat_result_free(rep);
        return nothing_measured(pr, &c, rc, msg, msglen);
    }
    pb_machine_speed_after(rep, &speed);
    fill_totals(pr, &c, rep);
    if (rc == PB_OK && cpu_impossible(pr, &c, rep, msg, msglen)) {
        pb_repeat_result_free(rep); /* not a figure: not kept */
        return PB_ERR;
    }
    pr->ops->finish(pr->self, &c, rep, stage_timing, rc);
    if (rc != PB_OK)
        return rc;
    if (c.interrupted)
        return PB_ERR_INTERRUPTED;
    return pb_error_share_check(&pr->spec->run, c.samples, c.errors,
                                pr->ops->first_error(pr->self), msg, msglen);
}

/* ---- a point ------------------------------------------------------------ */

int pb_point_open_row(const struct pb_engine_row *row, const struct pb_spec *spec,
                      const struct pb_dataset *ds, const struct pb_run_hooks *hooks,
                      struct pb_point_result *point, struct pb_point_run **out, char *msg,
                      size_t msglen)
{
    *out = NULL;
    if (!point->repeats) {
        point->repeats = calloc((size_t)spec->run.repeats, sizeof(*point->repeats));
        if (!point->repeats)
            return PB_ERR_NOMEM;
    }
    struct pb_point_run *pr = calloc(1, sizeof(*pr));
    if (!pr)
        return PB_ERR_NOMEM;
    *pr = (struct pb_point_run){
        .row = row,
        .ops = row->in_process ? &pb_runner_ops : &pb_process_ops,
        .spec = spec,
        .ds = ds,
        .hooks = hooks,
        .point = point,
    };
    int rc = pb_stoprule_init(&pr->rule, &spec->run);
    if (rc == PB_OK)
        rc = pr->ops->open(row, spec, ds, hooks, point, &pr->self, msg, msglen);
    if (rc != PB_OK) {
        pb_stoprule_free(&pr->rule);
        free(pr);
        return rc;
    }
    long pus = sysconf(_SC_NPROCESSORS_ONLN);
    if (spec->loader.workers > pus && pus > 0)
        pb_point_warn(point,
                      "loader.workers (%lld) exceeds the %ld hardware threads: workers share cores",
                      (long long)spec->loader.workers, pus);
    *out = pr;
    return PB_OK;
}

int pb_point_open(const struct pb_spec *spec, const struct pb_dataset *ds,
                  const struct pb_run_hooks *hooks, struct pb_point_result *point,
                  struct pb_point_run **out, char *msg, size_t msglen)
{
    const struct pb_engine_row *row = pb_engine_row(spec->loader.engine);
    if (!row) {
        *out = NULL;
        snprintf(msg, msglen, "loader.engine %lld has no row in the engine table",
                 (long long)spec->loader.engine);
        return PB_ERR;
    }
    return pb_point_open_row(row, spec, ds, hooks, point, out, msg, msglen);
}

int pb_point_repeat(struct pb_point_run *pr, int repeat, bool measure_overhead,
                    double *overhead_pct, char *msg, size_t msglen)
{
    struct pb_point_result *point = pr->point;
    int repeats = (int)pr->spec->run.repeats;
    if (pr->ops->usable && pr->ops->usable(pr->self, msg, msglen) != PB_OK)
        return PB_ERR;
    if (point->repeat_count >= (size_t)repeats) {
        snprintf(msg, msglen, "point already has its %d repeats", repeats);
        return PB_ERR;
    }
    bool timed = pb_spec_stage_timing(pr->spec);
    struct pb_repeat_result *rep = &point->repeats[point->repeat_count];
    int rc = run_round(pr, repeat, timed, rep, msg, msglen);
    if (rep->wall_s > 0) {
        point->repeat_count++;
        if (pr->hooks && pr->hooks->stopped)
            pr->hooks->stopped(pr->hooks->user, repeat, pr->rule.reason);
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
    rc = run_round(pr, repeat, !timed, &other, msg, msglen);
    if (rc == PB_OK && other.samples_per_s > 0 && overhead_pct) {
        double with = timed ? rep->samples_per_s : other.samples_per_s;
        double without = timed ? other.samples_per_s : rep->samples_per_s;
        *overhead_pct = 100.0 * (without - with) / without;
    }
    pb_repeat_result_free(&other);
    return rc;
}

void pb_point_close(struct pb_point_run *pr)
{
    if (!pr)
        return;
    pr->ops->close(pr->self);
    pb_stoprule_free(&pr->rule);
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
