/* An engine that is another process, as the ops of the one measurement
 * loop (bench/run/engine.h): the engine streams its batches; the loop
 * (bench/run/repeat.c) applies pbench's warm-up, stopping rule and totals
 * to them as to its own threads' batches; here are the frames, the
 * engine's processes' CPU and memory, and the watch over a stop, the time
 * cap and an engine gone silent. */
#include "bench/run/engine.h"
#include "bench/run/engine_columns.h"
#include "bench/run/engine_names.h"
#include "bench/run/engine_proc.h"

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
#include "bench/run/storage_run.h"
#include "bench/run/sysmon.h"
#include "bench/run/trace.h"

#define FRAME_JSON 1
#define FRAME_BATCH 2
#define SAMPLE_PERIOD_NS 250000000ull /* memory and CPU of the engine: 4 Hz */
/* How long after a stop the engine may take to end its repeat before it
 * is taken as stuck and killed: a stop ends a run in about this time. */
#define PB_ENGINE_STOP_GRACE_NS 1500000000ull

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
static void sample_processes(struct pb_engine_run *er, const struct pb_part *c, uint64_t now)
{
    struct engine_round *r = &er->round;
    if (now - r->last_sample_ns < SAMPLE_PERIOD_NS)
        return;
    uint64_t pss = pb_proc_pss_bytes(pb_engine_proc_pid(er->proc));
    if (er->main_pid > 0)
        pss += pb_proc_pss_bytes(er->main_pid);
    for (int i = 0; i < er->pid_count; i++)
        pss += pb_proc_pss_bytes(er->pids[i].pid);
    uint64_t cpu = all_cpu_ns(er);
    if (pss > r->pss_peak)
        r->pss_peak = pss;
    /* The series covers the measured part only, as pbench's own sampler's
     * last wall_s seconds do (bench/result/memgrowth.h reads it so): the
     * engine's start and its workers' shutdown after a stop are not part
     * of it. The peak counts the whole repeat. */
    if (!c->measuring || r->stop_sent) {
        r->last_sample_ns = now;
        r->last_sample_cpu = cpu;
        return;
    }
    if (r->rss_count == r->rss_cap) {
        size_t cap = r->rss_cap ? 2 * r->rss_cap : 256;
        struct pb_rss_sample *grown = realloc(r->rss, cap * sizeof(*grown));
        if (grown) {
            r->rss = grown;
            r->rss_cap = cap;
        }
    }
    if (r->rss_count < r->rss_cap)
        r->rss[r->rss_count++] = (struct pb_rss_sample){
            .t_s = (double)(now - r->repeat_start_ns) / 1e9,
            .rss_bytes = pss,
            .own_bytes = 0, /* pbench's trace is not in the engine's processes */
            .cpu_pct = cpu > r->last_sample_cpu
                           ? 100.0 * (double)(cpu - r->last_sample_cpu) /
                                 (double)(now - r->last_sample_ns)
                           : 0,
        };
    r->last_sample_ns = now;
    r->last_sample_cpu = cpu;
    if (er->hooks && er->hooks->tick && now > c->t_start) {
        pb_stall_window_update(&r->stall_window, c->t_start, now, c->samples, c->wait_total,
                               PB_STALL_WINDOW_NS);
        er->hooks->tick(er->hooks->user, (double)c->samples / ((double)(now - c->t_start) / 1e9),
                        r->stall_window.stall_pct);
    }
}

/* ---- one round ------------------------------------------------------ */

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

/* A batch frame: its header checked and read into d. */
static int on_batch(struct pb_engine_run *er, struct pb_delivery *d, const uint8_t *data,
                    uint32_t len, char *msg, size_t msglen)
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
    er->round.header = h;
    er->round.records = data + sizeof h;
    er->round.records_len = len - sizeof h;
    *d = (struct pb_delivery){
        .seq = h.seq,
        .t_wait = h.t_wait_ns,
        .t_taken = h.t_taken_ns,
        .t_done = h.t_done_ns,
        .assembly_ns = h.t_ready_ns > h.t_first_ns ? h.t_ready_ns - h.t_first_ns : 0,
        .step_ns = h.step_ns,
        .step_wall_ns = h.step_ns,
        .bytes = h.bytes,
        .samples = h.samples,
        .errors = h.errors,
        /* A job's batches come at its step's pace: cheap to read at each. */
        .cpu_now = er->row->job_sizes,
    };
    if (h.seq == 0 && er->workers_start_ns && h.t_taken_ns > er->workers_start_ns)
        d->first_batch_ns = h.t_taken_ns - er->workers_start_ns;
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
static int on_json(struct pb_engine_run *er, const struct pb_part *c, const uint8_t *data,
                   uint32_t len, char *msg, size_t msglen)
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
        er->round.end_reason =
            reason && !strcmp(reason, "data_end") ? PB_STOP_DATA_END : PB_STOP_FAILED;
        er->round.ended = true;
    }
    json_decref(j);
    return rc;
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

/* How long after a stop the engine may take to end its repeat: a wrapped
 * job is given wrap.grace_s between its SIGINT and SIGTERM, 3 s each to
 * SIGTERM and SIGKILL, and its joined nodes as long again (the relay,
 * engines/torch/pbench_wrap/join.py), so that what it measured comes back. */
static uint64_t stop_grace_ns(const struct pb_engine_run *er)
{
    if (!er->spec->has_wrap)
        return PB_ENGINE_STOP_GRACE_NS;
    return PB_ENGINE_STOP_GRACE_NS + (uint64_t)((2 * er->spec->wrap.grace_s + 16) * 1e9);
}

/* Between frames: a stop from the user, the time cap while the loop
 * waits, an engine silent past run.stage_timeout_s. PB_OK to go on;
 * PB_NEXT_END with *why while the part runs (a stop, the time cap end
 * it). A stop ends the part at once; an engine that has not ended its
 * repeat PB_ENGINE_STOP_GRACE_NS later is stuck in a stage, and is ended. */
static int watch(struct pb_engine_run *er, const struct pb_part *c, uint64_t now,
                 enum pb_stop_reason *why, char *msg, size_t msglen)
{
    struct engine_round *r = &er->round;
    volatile sig_atomic_t *stop = er->hooks ? er->hooks->stop : NULL;
    if (stop && ((*stop & PB_RUN_STOP_NOW) ||
                 (r->stop_seen_ns && now - r->stop_seen_ns > stop_grace_ns(er)))) {
        if (!(*stop & PB_RUN_STOP_NOW))
            pb_point_warn(er->point,
                          "stopped while %s's loop was stuck: it had not ended its repeat %.1f s "
                          "after the stop, so its processes were killed. %s",
                          er->row->title, (double)stop_grace_ns(er) / 1e9, where_stuck(er));
        er->failed = true; /* killed, not closed */
        return PB_ERR_INTERRUPTED;
    }
    double silent_s = (double)(now - r->last_frame_ns) / 1e9;
    double limit_s = pb_stage_timeout_s(&er->spec->run);
    if (silent_s > limit_s) {
        snprintf(msg, msglen,
                 "%s sent nothing for %.0f s (run.stage_timeout_s is %g s%s): a stage, or the "
                 "DataLoader, is stuck. %s",
                 er->row->title, silent_s, limit_s,
                 er->spec->run.stage_timeout_s > 0 ? "" : ", run.max_time_s + 10 s",
                 where_stuck(er));
        er->failed = true;
        return PB_ERR_STALLED;
    }
    if (stop && *stop && !r->stop_seen_ns) {
        r->stop_seen_ns = now;
        if (!r->stop_sent) {
            *why = PB_STOP_INTERRUPTED;
            return PB_NEXT_END;
        }
    }
    if (c->measuring && !r->stop_sent &&
        (double)(now - c->t_start) / 1e9 > er->spec->run.max_time_s) {
        *why = PB_STOP_TIME_CAP;
        return PB_NEXT_END;
    }
    return PB_OK;
}

#define GOT_BATCH 2 /* read_frame: a batch frame, into d */

/* One frame within 50 ms, read: GOT_BATCH with d (a batch frame), PB_OK
 * (none, or another frame), or an error. */
static int read_frame(struct pb_engine_run *er, const struct pb_part *c, struct pb_delivery *d,
                      char *msg, size_t msglen)
{
    uint32_t type = 0, len = 0;
    const uint8_t *data = NULL;
    int rc = pb_engine_proc_frame(er->proc, 50, &type, &data, &len, msg, msglen);
    uint64_t now = pb_now_ns();
    if (rc == PB_OK) {
        er->round.last_frame_ns = now;
        rc = type == FRAME_BATCH ? on_batch(er, d, data, len, msg, msglen)
                                 : on_json(er, c, data, len, msg, msglen);
        if (rc == PB_OK && type == FRAME_BATCH)
            rc = GOT_BATCH;
    } else if (rc == PB_ENGINE_NO_FRAME) {
        rc = PB_OK;
    } else {
        er->failed = true;
    }
    if (rc < 0 && rc != PB_ERR_CONFIG && rc != PB_ERR_DATA)
        er->failed = true; /* the engine is not to be trusted with another repeat */
    sample_processes(er, c, now);
    return rc;
}

static int engine_next(void *self, const struct pb_part *c, struct pb_delivery *d,
                       enum pb_stop_reason *why, char *msg, size_t msglen)
{
    struct pb_engine_run *er = self;
    for (;;) {
        int rc = watch(er, c, pb_now_ns(), why, msg, msglen);
        if (rc != PB_OK)
            return rc;
        rc = read_frame(er, c, d, msg, msglen);
        if (rc == GOT_BATCH)
            return PB_NEXT_BATCH;
        if (rc != PB_OK)
            return rc;
        if (er->round.ended) {
            *why = er->round.end_reason;
            return PB_NEXT_END;
        }
    }
}

/* A batch is done with: a measured one's sample records go into the
 * columns and the trace, its times into the queue depths, and its
 * worker's CPU is read now (a worker that exits at an epoch's end, without
 * persistent workers, has its time counted up to its last batch). */
static int engine_release(void *self, const struct pb_part *c, struct pb_delivery *d,
                          bool recorded, char *msg, size_t msglen)
{
    struct pb_engine_run *er = self;
    struct engine_round *r = &er->round;
    if (!recorded)
        return PB_OK;
    const struct pb_batch_header *h = &r->header;
    worker_built(er, h->worker);
    size_t k = c->batches - 1;
    if (k >= r->times_cap) {
        size_t cap = r->times_cap ? 2 * r->times_cap : 1024;
        uint64_t *a = realloc(r->ready_ns, cap * sizeof(*a));
        if (a)
            r->ready_ns = a;
        uint64_t *b = realloc(r->taken_ns, cap * sizeof(*b));
        if (b)
            r->taken_ns = b;
        if (!a || !b) {
            snprintf(msg, msglen, "out of memory recording batch timings");
            return PB_ERR_NOMEM;
        }
        r->times_cap = cap;
    }
    r->ready_ns[k] = h->t_ready_ns;
    r->taken_ns[k] = h->t_taken_ns;
    pb_engine_add_records(er, h, r->records, r->records_len);
    if (er->trace)
        pb_engine_trace_batch(er, h, r->records, r->records_len);
    (void)d;
    return PB_OK;
}

static void engine_measuring(void *self, uint64_t t)
{
    struct pb_engine_run *er = self;
    workers_cpu_zero(er);
    struct pb_trace_thread *loop = er->trace ? pb_trace_thread(er->trace, 0) : NULL;
    if (loop) /* the marker: which point and repeat follow */
        pb_trace_record(loop, PB_TRACE_MEASURING, PB_TRACE_INSTANT,
                        (uint64_t)(er->hooks ? er->hooks->point : 0), t, t, 0);
}

static void engine_cpu(void *self, uint64_t *loader_ns, uint64_t *all_ns)
{
    struct pb_engine_run *er = self;
    *loader_ns = loader_cpu_ns(er);
    *all_ns = all_cpu_ns(er) + pb_process_cpu_ns();
}

/* The part has ended: what the engine sends from now on does not count;
 * unless its data ended, it is told to stop. */
static void engine_part_ended(void *self, enum pb_stop_reason reason)
{
    struct pb_engine_run *er = self;
    if (reason != PB_STOP_DATA_END && !er->round.ended)
        send_command(er, "stop");
    er->round.stop_sent = true;
}

static void round_free(struct engine_round *r)
{
    free(r->rss);
    free(r->ready_ns);
    free(r->taken_ns);
    *r = (struct engine_round){0};
}

/* A round starts: the columns and the processes seen emptied, and the
 * engine's `repeat` sent. */
static int engine_open_round(void *self, int repeat, bool stage_timing,
                             struct pb_repeat_result *rep, char *msg, size_t msglen)
{
    (void)rep;
    struct pb_engine_run *er = self;
    pb_engine_reset_columns(er);
    er->pid_count = 0;
    er->live_workers = 0;
    er->main_pid = 0;
    er->main_cpu_last = 0;
    er->workers_start_ns = 0;
    round_free(&er->round);
    uint64_t now = pb_now_ns();
    er->round.repeat_start_ns = er->round.last_frame_ns = now;
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
    return PB_OK;
}

/* The round ends: after the part, the engine's frames are read to its
 * repeat_end (its batches no longer count), while a stop's grace and its
 * silence are watched. An engine that failed is not read further. */
static int engine_close_round(void *self, struct pb_part *c, int rc, char *msg, size_t msglen)
{
    struct pb_engine_run *er = self;
    while (rc == PB_OK && !er->failed && !er->round.ended) {
        enum pb_stop_reason why;
        struct pb_delivery d;
        rc = watch(er, c, pb_now_ns(), &why, msg, msglen);
        if (rc == PB_OK || rc == PB_NEXT_END)
            rc = read_frame(er, c, &d, msg, msglen);
        if (rc == GOT_BATCH)
            rc = PB_OK; /* built before the stop reached the engine: not counted */
    }
    return rc;
}

/* Batches ready (collated) but not yet taken when each measured batch was
 * taken, itself included: the engine's queue depth at dequeue. */
static void queue_depths(const struct engine_round *r, struct pb_repeat_result *rep)
{
    for (size_t k = 0; k < rep->batch_count; k++) {
        uint32_t depth = 0;
        for (size_t j = k; j < rep->batch_count && j < k + 1024; j++)
            if (r->ready_ns[j] <= r->taken_ns[k])
                depth++;
        rep->batch_records[k].queue_depth = depth;
    }
}

static void engine_finish(void *self, struct pb_part *c, struct pb_repeat_result *rep,
                          bool stage_timing, int rc)
{
    (void)c;
    struct pb_engine_run *er = self;
    struct engine_round *r = &er->round;
    rep->rss_peak_bytes = r->pss_peak;
    rep->rss = r->rss;
    rep->rss_count = r->rss_count;
    r->rss = NULL;
    r->rss_count = r->rss_cap = 0;
    if (rep->batch_count <= r->times_cap)
        queue_depths(r, rep);
    if (stage_timing && pb_engine_fill_rows(er, rep) != PB_OK)
        pb_point_warn(er->point, "out of memory for the stage rows");
    else if (stage_timing && er->spec->dataset.python[0] && rc == PB_OK && r->ended)
        pb_engine_name_slowest(er->proc, rep, pb_stage_timeout_s(&er->spec->run));
}

static int engine_workers(void *self)
{
    const struct pb_engine_run *er = self;
    return er->live_workers > 0 ? er->live_workers : 1;
}

static int engine_tick_processes(void *self)
{
    const struct pb_engine_run *er = self;
    return er->pid_count + 1; /* its workers and the engine's own (or the job's loop) */
}

static const char *engine_first_error(void *self)
{
    const struct pb_engine_run *er = self;
    return er->first_error;
}

static int engine_usable(void *self, char *msg, size_t msglen)
{
    const struct pb_engine_run *er = self;
    if (!er->failed)
        return PB_OK;
    snprintf(msg, msglen, "%s failed earlier in this point", er->row->title);
    return PB_ERR;
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

/* Ends the engine (close, then SIGTERM and SIGKILL if it lingers): one
 * that failed is killed, one that did not is parked for the next point. */
static void engine_close(void *self)
{
    struct pb_engine_run *er = self;
    if (!er)
        return;
    if (er->failed) /* killed: not to be trusted with another point */
        pb_engine_proc_end(er->proc, false);
    else
        pb_engine_proc_park(er->proc);
    if (er->index_path[0])
        unlink(er->index_path);
    round_free(&er->round);
    free(er);
}

static int engine_open(const struct pb_engine_row *row, const struct pb_spec *spec,
                       const struct pb_dataset *ds, const struct pb_run_hooks *hooks,
                       struct pb_point_result *point, void **self, char *msg, size_t msglen)
{
    (void)point->repeats;
    *self = NULL;
    struct pb_engine_run *er = calloc(1, sizeof(*er));
    if (!er)
        return PB_ERR_NOMEM;
    er->row = row;
    er->spec = spec;
    er->ds = ds;
    er->hooks = hooks;
    er->point = point;
    er->trace = hooks && pb_spec_traced(spec) ? hooks->trace : NULL;
    int rc = PB_OK;
    if (!pb_spec_own_samples(spec))
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
        engine_close(er);
        return rc;
    }
    *self = er;
    return PB_OK;
}

const struct pb_engine_ops pb_process_ops = {
    .waits_here = false,
    .open = engine_open,
    .usable = engine_usable,
    .open_round = engine_open_round,
    .next = engine_next,
    .release = engine_release,
    .measuring = engine_measuring,
    .cpu = engine_cpu,
    .part_ended = engine_part_ended,
    .close_round = engine_close_round,
    .finish = engine_finish,
    .workers = engine_workers,
    .tick_processes = engine_tick_processes,
    .first_error = engine_first_error,
    .close = engine_close,
};
