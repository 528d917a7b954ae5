/* A point measured on another process's loader (bench/run/engine.h): the
 * engine streams its batches; pbench applies its own warm-up, stopping
 * rule, interference and memory readings, and builds the repeat exactly as
 * runner.c does for its own threads. */
#include "bench/run/engine.h"
#include "bench/run/engine_columns.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/hist.h"
#include "bench/base/pb.h"
#include "bench/result/slowest.h"
#include "bench/run/runlimits.h"
#include "bench/run/hooks.h"
#include "bench/run/stoprule.h"
#include "bench/run/storage_run.h"
#include "bench/run/sysmon.h"
#include "bench/run/trace.h"

#define FRAME_JSON 1
#define FRAME_BATCH 2
#define SAMPLE_PERIOD_NS 250000000ull /* memory and CPU of the engine: 4 Hz */
/* How long after a stop the engine may take to end its repeat before it
 * is taken as stuck and killed: a stop ends a run in about this time. */
#define PB_ENGINE_STOP_GRACE_NS 1500000000ull

/* What one repeat's measured part has summed so far. */
struct part {
    bool measuring, stop_sent, ended, interrupted;
    uint64_t t_start, t_end, last_done;
    uint64_t stop_seen_ns; /* when the loop saw the user's stop; 0: none */
    uint64_t samples, batches, bytes, errors, wait_total, step_total, first_batch_ns;
    uint64_t loader_cpu_start, all_cpu_start, loader_cpu_end, all_cpu_end;
    uint64_t cpu_read_start, cpu_read_end; /* when those were read: their window */
    bool cpu_at_batch; /* the end readings were taken at the last batch (a wrapped job) */
    struct pb_machine_cpu machine_start;
    size_t records_cap;
    uint64_t *ready_ns, *taken_ns; /* per measured batch, for queue depth */
    /* Memory and CPU of the engine's processes, sampled at 4 Hz. */
    uint64_t repeat_start_ns, last_sample_ns, last_sample_cpu, last_tick_ns, last_frame_ns;
    size_t rss_count, rss_cap;
    struct pb_rss_sample *rss;
    uint64_t pss_peak;
    /* The tick's stall: the engine's batches carry their wait, counted
     * into wait_total on this thread, which also ticks. */
    struct pb_stall_window stall_window;
};


/* ---- the engine's processes: CPU and memory ------------------------- */

/* The worker processes' CPU time: re-read each one still alive (a worker
 * that exited keeps its last reading, at most a sampling period old). */
static uint64_t workers_cpu_ns(struct pb_engine_run *er)
{
    uint64_t sum = 0;
    for (int i = 0; i < er->pid_count; i++) {
        uint64_t now = pb_proc_cpu_ns(er->pids[i].pid);
        if (now > er->pids[i].last)
            er->pids[i].last = now;
        sum += er->pids[i].last - er->pids[i].start;
    }
    return sum;
}

/* From now on, worker CPU counts from the workers' present readings (a
 * worker that starts later counts from 0). */
static void workers_cpu_zero(struct pb_engine_run *er)
{
    workers_cpu_ns(er);
    for (int i = 0; i < er->pid_count; i++)
        er->pids[i].start = er->pids[i].last;
}

/* The loader's CPU: the worker processes, or the engine's main process
 * when it loads itself (0 workers). */
/* The CPU time of the job's process that runs the loop: its last reading
 * kept, so that a process that has exited still counts what it used. */
static uint64_t loop_cpu_ns(struct pb_engine_run *er)
{
    if (er->main_pid <= 0)
        return 0;
    uint64_t now = pb_proc_cpu_ns(er->main_pid);
    if (now > er->main_cpu_last)
        er->main_cpu_last = now;
    return er->main_cpu_last;
}

static uint64_t loader_cpu_ns(struct pb_engine_run *er)
{
    return er->pid_count  ? workers_cpu_ns(er)
           : er->main_pid ? loop_cpu_ns(er)
                          : pb_proc_cpu_ns(pb_engine_proc_pid(er->proc));
}

/* The engine's processes: its own, its workers and (a wrapped job) the
 * job's process that runs the loop. */
static uint64_t all_cpu_ns(struct pb_engine_run *er)
{
    return workers_cpu_ns(er) + pb_proc_cpu_ns(pb_engine_proc_pid(er->proc)) + loop_cpu_ns(er);
}

/* A `workers` frame: the repeat's worker processes (a new epoch without
 * persistent workers brings new ones, added to the set). */
static void add_workers(struct pb_engine_run *er, const json_t *pids)
{
    for (size_t i = 0; i < json_array_size(pids); i++) {
        int pid = (int)json_integer_value(json_array_get(pids, i));
        bool known = false;
        for (int k = 0; k < er->pid_count && !known; k++)
            known = er->pids[k].pid == pid;
        if (!known && pid > 0 && er->pid_count < PB_ENGINE_MAX_WORKERS)
            er->pids[er->pid_count++] = (struct engine_pid){.pid = pid};
    }
    er->live_workers = 0;
    for (size_t i = 0; i < json_array_size(pids) && i < PB_ENGINE_MAX_WORKERS; i++)
        er->live_pids[er->live_workers++] = (int)json_integer_value(json_array_get(pids, i));
}

/* A batch from worker `worker` (its index in the last `workers` frame):
 * its CPU is read now, so a worker that exits at an epoch's end (without
 * persistent workers) has its time counted up to its last batch. */
static void worker_built(struct pb_engine_run *er, int32_t worker)
{
    if (worker < 0 || worker >= er->live_workers)
        return;
    int pid = er->live_pids[worker];
    for (int k = 0; k < er->pid_count; k++)
        if (er->pids[k].pid == pid) {
            uint64_t now = pb_proc_cpu_ns(pid);
            if (now > er->pids[k].last)
                er->pids[k].last = now;
            return;
        }
}

/* A memory and CPU sample of the engine and its workers, every 250 ms,
 * and the progress tick with the running throughput and the stall of the
 * last window of about a second. */
static void sample_processes(struct pb_engine_run *er, struct part *c, uint64_t now)
{
    if (now - c->last_sample_ns < SAMPLE_PERIOD_NS)
        return;
    uint64_t pss = pb_proc_pss_bytes(pb_engine_proc_pid(er->proc));
    if (er->main_pid > 0)
        pss += pb_proc_pss_bytes(er->main_pid);
    for (int i = 0; i < er->pid_count; i++)
        pss += pb_proc_pss_bytes(er->pids[i].pid);
    uint64_t cpu = all_cpu_ns(er);
    if (pss > c->pss_peak)
        c->pss_peak = pss;
    /* The series covers the measured part only, as pbench's own sampler's
     * last wall_s seconds do (bench/result/memgrowth.h reads it so): the
     * engine's start and its workers' shutdown after a stop are not part
     * of it. The peak counts the whole repeat. */
    if (!c->measuring || c->stop_sent) {
        c->last_sample_ns = now;
        c->last_sample_cpu = cpu;
        return;
    }
    if (c->rss_count == c->rss_cap) {
        size_t cap = c->rss_cap ? 2 * c->rss_cap : 256;
        struct pb_rss_sample *grown = realloc(c->rss, cap * sizeof(*grown));
        if (grown) {
            c->rss = grown;
            c->rss_cap = cap;
        }
    }
    if (c->rss_count < c->rss_cap)
        c->rss[c->rss_count++] = (struct pb_rss_sample){
            .t_s = (double)(now - c->repeat_start_ns) / 1e9,
            .rss_bytes = pss,
            .own_bytes = 0, /* pbench's trace is not in the engine's processes */
            .cpu_pct = cpu > c->last_sample_cpu
                           ? 100.0 * (double)(cpu - c->last_sample_cpu) /
                                 (double)(now - c->last_sample_ns)
                           : 0,
        };
    c->last_sample_ns = now;
    c->last_sample_cpu = cpu;
    if (er->hooks && er->hooks->tick && c->measuring && now > c->t_start) {
        pb_stall_window_update(&c->stall_window, c->t_start, now, c->samples, c->wait_total,
                               PB_STALL_WINDOW_NS);
        er->hooks->tick(er->hooks->user, (double)c->samples / ((double)(now - c->t_start) / 1e9),
                        c->stall_window.stall_pct);
    }
}

/* ---- one repeat ----------------------------------------------------- */

static int parse_header(const uint8_t *data, size_t len, struct pb_batch_header *h)
{
    if (len < sizeof *h)
        return PB_ERR;
    memcpy(h, data, sizeof *h); /* little-endian on every machine pbench runs on */
    if (h->columns > PB_ENGINE_MAX_COLUMNS || h->counters > PB_ENGINE_MAX_COUNTERS)
        return PB_ERR;
    return PB_OK;
}

static void send_command(struct pb_engine_run *er, const char *cmd)
{
    json_t *j = json_pack("{s:s}", "type", cmd);
    if (j && pb_engine_proc_send(er->proc, j) != PB_OK)
        er->failed = true;
    json_decref(j);
}

static void start_measuring(struct pb_engine_run *er, struct part *c, uint64_t t_start)
{
    c->measuring = true;
    c->t_start = t_start;
    workers_cpu_zero(er);
    c->loader_cpu_start = loader_cpu_ns(er);
    c->all_cpu_start = all_cpu_ns(er) + pb_process_cpu_ns();
    c->cpu_read_start = pb_now_ns();
    struct pb_trace_thread *loop = er->trace ? pb_trace_thread(er->trace, 0) : NULL;
    if (loop) /* the marker: which point and repeat follow */
        pb_trace_record(loop, PB_TRACE_MEASURING, PB_TRACE_INSTANT,
                        (uint64_t)(er->hooks ? er->hooks->point : 0), t_start, t_start, 0);
    pb_machine_cpu_now(&c->machine_start);
    pb_stoprule_start(&er->rule, t_start);
}

static void read_cpu_end(struct pb_engine_run *er, struct part *c)
{
    c->loader_cpu_end = loader_cpu_ns(er);
    c->all_cpu_end = all_cpu_ns(er) + pb_process_cpu_ns();
    c->cpu_read_end = pb_now_ns();
}

/* Ends the measured part at t_end for reason: the CPU clocks are read now
 * (what the engine does after it is not measured) and the engine told. */
static void end_part(struct pb_engine_run *er, struct part *c, uint64_t t_end,
                     enum pb_stop_reason reason, struct pb_repeat_result *rep)
{
    if (c->stop_sent)
        return;
    pb_stoprule_end(&er->rule, reason);
    if (c->measuring) {
        c->t_end = t_end;
        /* A job that ended by itself: its CPU as of its last batch, not of
         * its exit, which came later. */
        if (reason != PB_STOP_DATA_END || !c->cpu_at_batch)
            read_cpu_end(er, c);
        struct pb_machine_cpu now;
        pb_machine_cpu_now(&now);
        pb_interference(&c->machine_start, &now,
                        c->all_cpu_end > c->all_cpu_start ? c->all_cpu_end - c->all_cpu_start : 0,
                        sysconf(_SC_CLK_TCK), &rep->other_cpu_pct, &rep->steal_pct);
    }
    struct pb_run_group *g = er->hooks ? er->hooks->group : NULL;
    if (g) {
        atomic_store(&g->local_reason, (int)reason);
        atomic_store(&g->local_done, true);
    }
    if (reason != PB_STOP_DATA_END)
        send_command(er, "stop");
    c->stop_sent = true;
}

/* Whether the part ends after this batch: the stopping rule, or in a
 * multi-rank run the decider's word (as runner.c's part_ends). */
static bool part_ends(struct pb_engine_run *er, bool rule_done)
{
    struct pb_run_group *g = er->hooks ? er->hooks->group : NULL;
    if (!g || g->decides)
        return rule_done;
    if (!atomic_load_explicit(&g->group_done, memory_order_acquire))
        return false;
    int reason = atomic_load_explicit(&g->group_reason, memory_order_relaxed);
    if (reason == PB_STOP_DATA_END)
        return rule_done;
    er->rule.reason = (enum pb_stop_reason)reason;
    return true;
}

static int push_record(struct pb_repeat_result *rep, struct part *c,
                       const struct pb_batch_record *rec, uint64_t ready, uint64_t taken)
{
    if (rep->batch_count == c->records_cap) {
        size_t cap = c->records_cap ? 2 * c->records_cap : 1024;
        struct pb_batch_record *r = realloc(rep->batch_records, cap * sizeof(*r));
        uint64_t *a = realloc(c->ready_ns, cap * sizeof(*a));
        if (a)
            c->ready_ns = a;
        uint64_t *b = realloc(c->taken_ns, cap * sizeof(*b));
        if (b)
            c->taken_ns = b;
        if (!r || !a || !b) {
            if (r)
                rep->batch_records = r;
            return PB_ERR_NOMEM;
        }
        rep->batch_records = r;
        c->records_cap = cap;
    }
    c->ready_ns[rep->batch_count] = ready;
    c->taken_ns[rep->batch_count] = taken;
    rep->batch_records[rep->batch_count++] = *rec;
    return PB_OK;
}

static int on_batch(struct pb_engine_run *er, struct part *c, struct pb_repeat_result *rep,
                    const uint8_t *data, uint32_t len, char *msg, size_t msglen)
{
    struct pb_batch_header h;
    if (parse_header(data, len, &h) != PB_OK) {
        snprintf(msg, msglen, "%s sent a malformed batch frame (%u bytes)", er->row->title, len);
        return PB_ERR;
    }
    /* A wrapped job's batches are the size its own DataLoader makes them. */
    uint64_t batch_size = er->row->job_sizes ? UINT32_MAX : (uint64_t)er->spec->loader.batch_size;
    if ((h.records && h.records != h.samples) || (uint64_t)h.samples + h.errors > batch_size) {
        snprintf(msg, msglen,
                 "%s's batch %" PRIu64 " says it holds %u samples and %u bad ones, but it "
                 "carries %u sample records and loader.batch_size is %" PRIu64
                 ": a count pbench cannot trust",
                 er->row->title, h.seq, h.samples, h.errors, h.records, batch_size);
        return PB_ERR;
    }
    if (h.seq == 0 && er->workers_start_ns && h.t_taken_ns > er->workers_start_ns)
        c->first_batch_ns = h.t_taken_ns - er->workers_start_ns;
    if (c->stop_sent)
        return PB_OK; /* built before the stop reached the engine: not counted */
    if (c->measuring)
        worker_built(er, h.worker);
    if (!c->measuring && h.seq >= (uint64_t)er->spec->run.warmup_batches)
        start_measuring(er, c, h.t_wait_ns);
    c->last_done = h.t_done_ns;
    if (!c->measuring)
        return PB_OK;
    struct pb_batch_record rec = {
        .assembly_ns = h.t_ready_ns > h.t_first_ns ? h.t_ready_ns - h.t_first_ns : 0,
        .wait_ns = h.t_taken_ns - h.t_wait_ns,
        .step_ns = h.t_done_ns - h.t_taken_ns,
        .samples = h.samples,
    };
    if (push_record(rep, c, &rec, h.t_ready_ns, h.t_taken_ns) != PB_OK) {
        snprintf(msg, msglen, "out of memory recording batch timings");
        return PB_ERR_NOMEM;
    }
    c->samples += h.samples;
    c->batches++;
    c->bytes += h.bytes;
    c->errors += h.errors;
    c->wait_total += h.t_taken_ns - h.t_wait_ns;
    c->step_total += h.step_ns;
    c->t_end = h.t_done_ns;
    pb_engine_add_records(er, &h, data + sizeof h, len - sizeof h);
    if (er->trace)
        pb_engine_trace_batch(er, &h, data + sizeof h, len - sizeof h);
    if (er->row->job_sizes) { /* a job's batches come at its step's pace: cheap to read */
        read_cpu_end(er, c);
        c->cpu_at_batch = true;
    }
    if (part_ends(er, pb_stoprule_batch(&er->rule, h.t_done_ns, h.samples)))
        end_part(er, c, h.t_done_ns, er->rule.reason ? er->rule.reason : PB_STOP_STABLE, rep);
    return PB_OK;
}

/* The engine's fatal: a config it cannot run (exit 2, at the option's
 * line), an interpreter without its packages (exit 2), a bad sample under
 * on_error: fail, or anything else, with its message. */
static int on_fatal(struct pb_engine_run *er, const json_t *j, char *msg, size_t msglen)
{
    const char *kind = json_string_value(json_object_get(j, "kind"));
    const char *text = json_string_value(json_object_get(j, "message"));
    const char *option = json_string_value(json_object_get(j, "option"));
    er->failed = true;
    kind = kind ? kind : "engine";
    text = text ? text : "(no message)";
    if (strcmp(kind, "config") == 0) {
        char place[PB_PATH_MAX + 32];
        pb_engine_option_place(er->spec, option, place, sizeof place);
        snprintf(msg, msglen, "%sloader.engine %s: %s", place, er->row->name, text);
        return PB_ERR_CONFIG;
    }
    if (strcmp(kind, "environment") == 0) {
        snprintf(msg, msglen, "loader.engine %s: %s", er->row->name, text);
        return PB_ERR_CONFIG;
    }
    /* The whole traceback stays in the point's engine object; the message
     * shows its last lines. */
    const char *trace = json_string_value(json_object_get(j, "traceback"));
    char last[PB_MSG_MAX / 2] = "";
    if (trace && pb_engine_keep_traceback(er->point, er->row, trace) == PB_OK)
        pb_engine_traceback_tail(trace, text, 3, last, sizeof last);
    snprintf(msg, msglen, "%s failed: %s%s%s", er->row->title, text, last[0] ? "\n" : "", last);
    return strcmp(kind, "data") == 0 ? PB_ERR_DATA : PB_ERR;
}

/* A JSON frame during a repeat. Returns PB_OK, or the fatal's code. */
static int on_json(struct pb_engine_run *er, struct part *c, struct pb_repeat_result *rep,
                   const uint8_t *data, uint32_t len, char *msg, size_t msglen)
{
    json_t *j = json_loadb((const char *)data, len, 0, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    int rc = PB_OK;
    if (!type) {
        snprintf(msg, msglen, "%s sent a malformed JSON frame", er->row->title);
        rc = PB_ERR;
    } else if (strcmp(type, "fatal") == 0) {
        rc = on_fatal(er, j, msg, msglen);
    } else if (strcmp(type, "stages") == 0) {
        /* A wrapped job's columns, known once its Dataset is seen: taken
         * before the measured part, never inside it. */
        if (!c->measuring)
            rc = pb_engine_read_ready(er, j, msg, msglen);
    } else if (strcmp(type, "job") == 0) {
        pb_engine_keep_job(er, j);
    } else if (strcmp(type, "workers") == 0) {
        json_int_t main_pid = json_integer_value(json_object_get(j, "main_pid"));
        if (main_pid > 0 && main_pid != er->main_pid && !c->measuring) {
            er->main_pid = (int)main_pid; /* set before the measured part, kept through it */
            er->main_cpu_last = 0;
        }
        add_workers(er, json_object_get(j, "pids"));
        if (!er->workers_start_ns) /* the repeat's first: its time to first batch */
            er->workers_start_ns =
                (uint64_t)json_integer_value(json_object_get(j, "t_start_ns"));
    } else if (strcmp(type, "error") == 0) {
        char name[PB_PATH_MAX];
        const char *file = pb_engine_name(j, "file", name, sizeof name);
        const char *why = json_string_value(json_object_get(j, "message"));
        char what[PB_MSG_MAX]; /* "PATH: why", as pbench's own workers list them */
        snprintf(what, sizeof what, "%.250s: %.250s", file ? file : "?",
                 why ? why : "unreadable");
        pb_error_files_add(er->point, file, what);
        if (!er->first_error[0])
            pb_strlcpy(er->first_error, what, sizeof er->first_error);
    } else if (strcmp(type, "warning") == 0) {
        const char *why = json_string_value(json_object_get(j, "message"));
        pb_point_warn(er->point, "%s engine: %s", er->row->name, why ? why : "?");
    } else if (strcmp(type, "repeat_end") == 0) {
        const char *reason = json_string_value(json_object_get(j, "reason"));
        if (!c->stop_sent)
            end_part(er, c, c->last_done,
                     reason && !strcmp(reason, "data_end") ? PB_STOP_DATA_END : PB_STOP_FAILED,
                     rep);
        c->ended = true;
    }
    json_decref(j);
    return rc;
}

/* Ends the measured part at now, while the loop waits for a batch that did
 * not come (the time cap, a stop, the engine's failure): the wait counts,
 * so the repeat covers its whole time, not the span up to its last batch. */
static void end_waiting(struct pb_engine_run *er, struct part *c, uint64_t now,
                        enum pb_stop_reason reason, struct pb_repeat_result *rep)
{
    if (c->stop_sent)
        return;
    if (c->measuring && now > c->last_done)
        c->wait_total += now - c->last_done;
    end_part(er, c, now, reason, rep);
}

/* Where the engine is stuck: its processes loading a sample say which one
 * and where in the code on SIGUSR1 (the row's stuck_tag, then "process"), on stderr;
 * their lines, or else the engine's last words. */
static const char *where_stuck(struct pb_engine_run *er)
{
    if (er->row->stuck_tag) { /* an engine without one may die of SIGUSR1 */
        kill(-pb_engine_proc_pid(er->proc), SIGUSR1);
        usleep(200000);
    }
    const char *said = pb_engine_proc_stderr(er->proc);
    char tag[64];
    snprintf(tag, sizeof tag, "%sprocess ", er->row->stuck_tag ? er->row->stuck_tag : "");
    const char *line = er->row->stuck_tag ? strstr(said, tag) : NULL;
    static char where[PB_MSG_MAX]; /* cold, and read at once */
    if (!line) {
        snprintf(where, sizeof where, "Its last words: %s", said);
        return where;
    }
    size_t used = 0;
    for (; line && used < sizeof where; line = strstr(line, tag)) {
        line += strlen(er->row->stuck_tag);
        size_t len = strcspn(line, "\n");
        used += (size_t)snprintf(where + used, sizeof where - used, "%s%.*s", used ? "; " : "",
                                 (int)len, line);
    }
    return where;
}

/* Between frames: a stop from the user, the time cap while the loop
 * waits, an engine silent past run.stage_timeout_s. PB_OK to go on. A
 * stop ends the repeat at once; an engine that has not ended it
 * PB_ENGINE_STOP_GRACE_NS later is stuck in a stage, and is ended. */
static int watch(struct pb_engine_run *er, struct part *c, struct pb_repeat_result *rep,
                 uint64_t now, char *msg, size_t msglen)
{
    volatile sig_atomic_t *stop = er->hooks ? er->hooks->stop : NULL;
    if (stop && *stop && !c->stop_seen_ns) {
        c->stop_seen_ns = now;
        if (!c->stop_sent)
            c->interrupted = true;
        end_waiting(er, c, now, PB_STOP_INTERRUPTED, rep);
    }
    if (stop && ((*stop & PB_RUN_STOP_NOW) ||
                 (c->stop_seen_ns && now - c->stop_seen_ns > PB_ENGINE_STOP_GRACE_NS))) {
        if (!(*stop & PB_RUN_STOP_NOW))
            pb_point_warn(er->point,
                          "stopped while %s's loop was stuck: it had not ended its repeat %.1f s "
                          "after the stop, so its processes were killed. %s",
                          er->row->title, (double)PB_ENGINE_STOP_GRACE_NS / 1e9, where_stuck(er));
        er->failed = true; /* killed, not closed */
        return PB_ERR_INTERRUPTED;
    }
    if (c->measuring && !c->stop_sent &&
        (double)(now - c->t_start) / 1e9 > er->spec->run.max_time_s)
        end_waiting(er, c, now, PB_STOP_TIME_CAP, rep);
    double silent_s = (double)(now - c->last_frame_ns) / 1e9;
    double limit_s = pb_stage_timeout_s(&er->spec->run);
    if (silent_s > limit_s) {
        c->interrupted = true;
        snprintf(msg, msglen,
                 "%s sent nothing for %.0f s (run.stage_timeout_s is %g s%s): a stage, or the "
                 "DataLoader, is stuck. %s",
                 er->row->title, silent_s, limit_s,
                 er->spec->run.stage_timeout_s > 0 ? "" : ", run.max_time_s + 10 s",
                 where_stuck(er));
        return PB_ERR_STALLED;
    }
    return PB_OK;
}

/* Reads the repeat's frames to its repeat_end. */
static int read_repeat(struct pb_engine_run *er, struct part *c, struct pb_repeat_result *rep,
                       char *msg, size_t msglen)
{
    while (!c->ended) {
        uint32_t type = 0, len = 0;
        const uint8_t *data = NULL;
        int rc = pb_engine_proc_frame(er->proc, 50, &type, &data, &len, msg, msglen);
        uint64_t now = pb_now_ns();
        if (rc == PB_OK) {
            c->last_frame_ns = now;
            rc = type == FRAME_BATCH ? on_batch(er, c, rep, data, len, msg, msglen)
                                     : on_json(er, c, rep, data, len, msg, msglen);
        } else if (rc == PB_ENGINE_NO_FRAME) {
            rc = PB_OK;
        } else {
            er->failed = true;
        }
        if (rc == PB_OK)
            rc = watch(er, c, rep, now, msg, msglen);
        if (rc != PB_OK) {
            if (rc != PB_ERR_CONFIG && rc != PB_ERR_DATA)
                er->failed = true; /* the engine is not to be trusted with another repeat */
            if (!c->stop_sent) { /* the engine failed inside the measured part: cut short */
                c->interrupted = true;
                end_waiting(er, c, now, PB_STOP_FAILED, rep);
            }
            return rc;
        }
        sample_processes(er, c, now);
    }
    return PB_OK;
}

/* Batches ready (collated) but not yet taken when each measured batch was
 * taken, itself included: the engine's queue depth at dequeue. */
static void queue_depths(const struct part *c, struct pb_repeat_result *rep)
{
    for (size_t k = 0; k < rep->batch_count; k++) {
        uint32_t depth = 0;
        for (size_t j = k; j < rep->batch_count && j < k + 1024; j++)
            if (c->ready_ns[j] <= c->taken_ns[k])
                depth++;
        rep->batch_records[k].queue_depth = depth;
    }
}

static void fill_totals(struct pb_engine_run *er, struct part *c, struct pb_repeat_result *rep)
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
    rep->accel_util_pct = er->spec->run.step_ms > 0 || er->row->job_sizes
                              ? 100.0 * (double)c->step_total / span_ns
                              : 0;
    uint64_t all_cpu = c->all_cpu_end > c->all_cpu_start ? c->all_cpu_end - c->all_cpu_start : 0;
    /* The CPU clocks are read as frames arrive, which can be later than the
     * batches' own times (a wrapped job's batch is sent when the next one
     * is asked for; its end, when the job has exited): their shares are of
     * the time they were read over. */
    double cpu_span_ns = c->cpu_read_end > c->cpu_read_start
                             ? (double)(c->cpu_read_end - c->cpu_read_start)
                             : span_ns;
    rep->cpu_util_pct = 100.0 * (double)all_cpu / cpu_span_ns;
    int workers = er->live_workers > 0 ? er->live_workers : 1;
    uint64_t loader_cpu =
        c->loader_cpu_end > c->loader_cpu_start ? c->loader_cpu_end - c->loader_cpu_start : 0;
    rep->worker_cpu_pct = 100.0 * (double)loader_cpu / ((double)workers * cpu_span_ns);
    rep->window_noise = pb_stoprule_noise(&er->rule);
    rep->hit_time_cap = er->rule.reason == PB_STOP_TIME_CAP;
    rep->noisy = pb_stoprule_noisy(&er->rule);
    rep->interrupted = c->interrupted;
    rep->rss_peak_bytes = c->pss_peak;
    rep->rss = c->rss;
    rep->rss_count = c->rss_count;
    c->rss = NULL;
    pb_repeat_loop_shares(rep, c->step_total, 0);
    rep->first_batch_s = (double)c->first_batch_ns / 1e9;
    queue_depths(c, rep);
}

/* One repeat, with or without stage timing, into rep. */
static int run_repeat(struct pb_engine_run *er, int repeat, bool stage_timing,
                      struct pb_repeat_result *rep, char *msg, size_t msglen)
{
    memset(rep, 0, sizeof(*rep));
    if (er->ds->count)
        pb_storage_repeat_start(er->spec, er->ds, er->point, rep);
    struct pb_speed_mark speed;
    pb_machine_speed_before(rep, &speed);
    pb_engine_reset_columns(er);
    er->pid_count = 0;
    er->live_workers = 0;
    er->main_pid = 0;
    er->main_cpu_last = 0;
    er->workers_start_ns = 0;
    er->rule.reason = PB_STOP_NONE;
    uint64_t now = pb_now_ns();
    struct part c = {.repeat_start_ns = now, .last_frame_ns = now, .last_sample_ns = 0};
    json_t *cmd = json_pack("{s:s,s:i,s:b}", "type", "repeat", "repeat", repeat, "stage_timing",
                            stage_timing);
    int rc = cmd ? pb_engine_proc_send(er->proc, cmd) : PB_ERR_NOMEM;
    json_decref(cmd);
    if (rc != PB_OK) {
        snprintf(msg, msglen, "%s is gone; its last words: %s", er->row->title,
                 pb_engine_proc_stderr(er->proc));
        er->failed = true;
        return PB_ERR;
    }
    rc = read_repeat(er, &c, rep, msg, msglen);
    bool measured = c.measuring && c.t_end > c.t_start && c.samples > 0;
    if (measured) {
        pb_machine_speed_after(rep, &speed);
        fill_totals(er, &c, rep);
        if (stage_timing && pb_engine_fill_rows(er, rep) != PB_OK)
            pb_point_warn(er->point, "out of memory for the stage rows");
        else if (stage_timing && er->spec->dataset.python[0] && rc == PB_OK && c.ended)
            pb_engine_name_slowest(er->proc, rep, pb_stage_timeout_s(&er->spec->run));
        /* The engine's processes' CPU comes from /proc in whole clock
         * ticks, read at both ends of the span it is shared over: each
         * process's figure may be two ticks off, over that span (shorter
         * than the repeat's wall where the frames came late), so a window
         * of a few ticks can read far above the cores without a fault. */
        long tck = sysconf(_SC_CLK_TCK);
        double tick_ns = 1e9 / (double)(tck > 0 ? tck : 100);
        double cpu_span_ns = c.cpu_read_end > c.cpu_read_start
                                 ? (double)(c.cpu_read_end - c.cpu_read_start)
                                 : rep->wall_s * 1e9;
        double resolution_ns = 2.0 * (double)(er->pid_count + 1) * tick_ns *
                               (cpu_span_ns > 0 ? rep->wall_s * 1e9 / cpu_span_ns : 1.0);
        if (pb_repeat_cpu_impossible(rep, sysconf(_SC_NPROCESSORS_ONLN), resolution_ns, msg,
                                     msglen)) {
            measured = false;
            rc = PB_ERR;
        }
    }
    if (!measured)
        pb_repeat_result_free(rep);
    free(c.rss);
    free(c.ready_ns);
    free(c.taken_ns);
    if (rc != PB_OK)
        return rc;
    if (c.interrupted)
        return PB_ERR_INTERRUPTED;
    if (!measured && c.errors == 0 && er->row->job_sizes) {
        snprintf(msg, msglen,
                 "%s ended during warm-up (%lld batches): lower run.warmup_batches (pbench wrap "
                 "--warmup-batches), or let the job run longer",
                 er->row->title, (long long)er->spec->run.warmup_batches);
        return PB_ERR;
    }
    if (!measured && c.errors == 0) {
        snprintf(msg, msglen,
                 "the data ran out during warm-up (%lld batches): lower run.warmup_batches or "
                 "raise dataset.epochs",
                 (long long)er->spec->run.warmup_batches);
        return PB_ERR_CONFIG;
    }
    return pb_error_share_check(&er->spec->run, c.samples, c.errors, er->first_error, msg,
                                msglen);
}

/* ---- a point -------------------------------------------------------- */

/* Sends `open` and waits for `ready` (importing the engine's packages takes
 * seconds; on a busy machine, tens of them). */
static int handshake(struct pb_engine_run *er, char *msg, size_t msglen)
{
    const struct pb_spec *spec = er->spec;
    char dir[PB_PATH_MAX];
    pb_engine_config_dir(spec, dir, sizeof dir);
    json_t *open_cmd = json_pack("{s:s,s:i,s:o,s:b}", "type", "open", "protocol",
                                 PB_ENGINE_PROTOCOL, "config", pb_spec_to_json(spec),
                                 "stage_timing", pb_spec_stage_timing(spec));
    int rc = open_cmd && pb_engine_put_name(open_cmd, "index", er->index_path) == PB_OK &&
                     pb_engine_put_name(open_cmd, "config_dir", dir) == PB_OK &&
                     pb_engine_put_name(open_cmd, "dataset_path", spec->dataset.path) == PB_OK
                 ? pb_engine_proc_send(er->proc, open_cmd)
                 : PB_ERR_NOMEM;
    if (rc == PB_ERR_NOMEM)
        snprintf(msg, msglen, "out of memory for %s's open command", er->row->title);
    else
        rc = PB_OK; /* an engine gone before it read open: its ending is read below */
    json_decref(open_cmd);
    /* Starting the engine and making the Dataset are a stage like any other:
     * run.stage_timeout_s bounds the wait for ready. Where it is left to
     * its default (run.max_time_s + 10 s), the wait is at least
     * PB_ENGINE_STARTUP_MIN_S: importing its packages alone takes seconds, tens of
     * them on a busy machine. */
    double timeout_s = pb_stage_timeout_s(&spec->run);
    if (spec->run.stage_timeout_s <= 0 && timeout_s < PB_ENGINE_STARTUP_MIN_S)
        timeout_s = PB_ENGINE_STARTUP_MIN_S;
    uint64_t deadline = pb_now_ns() + (uint64_t)(timeout_s * 1e9);
    while (rc == PB_OK) {
        uint32_t type, len;
        const uint8_t *data;
        rc = pb_engine_proc_frame(er->proc, 1000, &type, &data, &len, msg, msglen);
        if (rc == PB_ENGINE_NO_FRAME) {
            rc = pb_now_ns() < deadline ? PB_OK : PB_ERR;
            if (rc != PB_OK)
                snprintf(msg, msglen,
                         "%s did not answer open within run.stage_timeout_s (%g s), at least 60 s "
                         "where it is left to its default: %s, is stuck (raise run.stage_timeout_s if "
                         "it is only slow); its last words: %s",
                         er->row->title, timeout_s, er->row->starting, pb_engine_proc_stderr(er->proc));
            if (er->hooks && er->hooks->stop && *er->hooks->stop) {
                er->failed = true; /* still starting: killed, not closed */
                return PB_ERR_INTERRUPTED;
            }
            continue;
        }
        if (rc != PB_OK)
            break;
        json_t *j = type == FRAME_JSON ? json_loadb((const char *)data, len, 0, NULL) : NULL;
        const char *t = json_string_value(json_object_get(j, "type"));
        if (t && strcmp(t, "ready") == 0) {
            json_int_t protocol = json_integer_value(json_object_get(j, "protocol"));
            if (protocol != PB_ENGINE_PROTOCOL) {
                snprintf(msg, msglen, "%s speaks protocol %lld, pbench %d", er->row->title,
                         (long long)protocol, PB_ENGINE_PROTOCOL);
                rc = PB_ERR;
            } else if ((rc = pb_engine_read_ready(er, j, msg, msglen)) == PB_OK) {
                json_decref(er->point->engine);
                er->point->engine = json_pack("{s:s,s:O?}", "name", er->row->name, "versions",
                                              json_object_get(j, "versions"));
            }
            json_decref(j);
            return rc;
        }
        if (t && strcmp(t, "fatal") == 0)
            rc = on_fatal(er, j, msg, msglen);
        else if (t && strcmp(t, "warning") == 0)
            pb_point_warn(er->point, "%s engine: %s", er->row->name,
                          json_string_value(json_object_get(j, "message")));
        json_decref(j);
    }
    return rc;
}

int pb_engine_open(const struct pb_spec *spec, const struct pb_dataset *ds,
                   const struct pb_run_hooks *hooks, struct pb_point_result *point,
                   struct pb_engine_run **out, char *msg, size_t msglen)
{
    const struct pb_engine_row *row = pb_engine_row(spec->loader.engine);
    if (!row) {
        *out = NULL;
        snprintf(msg, msglen, "loader.engine %s runs in pbench's process, not as an engine",
                 pb_engine_names[spec->loader.engine]);
        return PB_ERR;
    }
    return pb_engine_open_row(row, spec, ds, hooks, point, out, msg, msglen);
}

int pb_engine_open_row(const struct pb_engine_row *row, const struct pb_spec *spec,
                       const struct pb_dataset *ds, const struct pb_run_hooks *hooks,
                       struct pb_point_result *point, struct pb_engine_run **out, char *msg,
                       size_t msglen)
{
    *out = NULL;
    if (!point->repeats) {
        point->repeats = calloc((size_t)spec->run.repeats, sizeof(*point->repeats));
        if (!point->repeats)
            return PB_ERR_NOMEM;
    }
    struct pb_engine_run *er = calloc(1, sizeof(*er));
    if (!er)
        return PB_ERR_NOMEM;
    er->row = row;
    er->spec = spec;
    er->ds = ds;
    er->hooks = hooks;
    er->point = point;
    er->trace = hooks && pb_spec_traced(spec) ? hooks->trace : NULL;
    int rc = pb_stoprule_init(&er->rule, &spec->run);
    if (rc == PB_OK && !pb_spec_own_samples(spec))
        rc = pb_engine_write_index(ds, er->index_path, sizeof er->index_path, msg, msglen);
    if (rc == PB_OK)
        rc = pb_engine_proc_start(row, spec, &er->proc, msg, msglen);
    if (rc == PB_OK)
        rc = handshake(er, msg, msglen);
    if (er->index_path[0]) { /* read by the engine before its ready */
        unlink(er->index_path);
        er->index_path[0] = '\0';
    }
    if (rc != PB_OK) {
        pb_engine_close(er);
        return rc;
    }
    long pus = sysconf(_SC_NPROCESSORS_ONLN);
    if (spec->loader.workers > pus && pus > 0)
        pb_point_warn(point,
                      "loader.workers (%lld) exceeds the %ld hardware threads: worker processes "
                      "share cores",
                      (long long)spec->loader.workers, pus);
    *out = er;
    return PB_OK;
}

int pb_engine_repeat(struct pb_engine_run *er, int repeat, bool measure_overhead,
                     double *overhead_pct, char *msg, size_t msglen)
{
    struct pb_point_result *point = er->point;
    int repeats = (int)er->spec->run.repeats;
    if (er->failed) {
        snprintf(msg, msglen, "%s failed earlier in this point", er->row->title);
        return PB_ERR;
    }
    if (point->repeat_count >= (size_t)repeats) {
        snprintf(msg, msglen, "point already has its %d repeats", repeats);
        return PB_ERR;
    }
    bool timed = pb_spec_stage_timing(er->spec);
    struct pb_repeat_result *rep = &point->repeats[point->repeat_count];
    int rc = run_repeat(er, repeat, timed, rep, msg, msglen);
    if (rep->wall_s > 0) {
        point->repeat_count++;
        if (er->hooks && er->hooks->stopped)
            er->hooks->stopped(er->hooks->user, repeat, er->rule.reason);
        if (er->hooks && er->hooks->progress)
            er->hooks->progress(er->hooks->user, repeat, repeats, rep);
    }
    if (rc != PB_OK || !measure_overhead)
        return rc;
    /* The same round with stage timing flipped, right after. */
    struct pb_repeat_result other;
    rc = run_repeat(er, repeat, !timed, &other, msg, msglen);
    if (rc == PB_OK && other.samples_per_s > 0 && overhead_pct) {
        double with = timed ? rep->samples_per_s : other.samples_per_s;
        double without = timed ? other.samples_per_s : rep->samples_per_s;
        *overhead_pct = 100.0 * (without - with) / without;
    }
    pb_repeat_result_free(&other);
    return rc;
}

void pb_engine_close(struct pb_engine_run *er)
{
    if (!er)
        return;
    if (er->failed) /* killed: not to be trusted with another point */
        pb_engine_proc_end(er->proc, false);
    else
        pb_engine_proc_park(er->proc);
    if (er->index_path[0])
        unlink(er->index_path);
    pb_stoprule_free(&er->rule);
    free(er);
}
