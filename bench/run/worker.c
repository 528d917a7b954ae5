/* A loader worker: builds batches sample by sample through the stage
 * chain into pooled slots (the hot path: no allocation, lock or
 * formatting unless a sample fails), publishes which stage and sample it
 * is in for the watchdog, and names that stage if the process crashes in
 * it. The consumer side is runner.c's, the repeat and the point
 * bench/run/repeat.c's; the shared state is runner_setup.h. */
#include "bench/run/runner_setup.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/run/queue.h"
#include "bench/run/runlimits.h"
#include "bench/run/stagestats.h"

/* A bad sample under on_error: skip, into the point's list of files. */
static void record_data_error(struct run *run, const char *path, const char *what)
{
    pthread_mutex_lock(&run->error_lock);
    if (!run->first_error[0])
        pb_strlcpy(run->first_error, what, sizeof(run->first_error));
    pb_error_files_add(run->point, path, what);
    pthread_mutex_unlock(&run->error_lock);
}

void pb_runner_fail(struct run *run, int rc, const char *what)
{
    pthread_mutex_lock(&run->error_lock);
    if (run->fatal_rc == PB_OK) {
        run->fatal_rc = rc;
        pb_strlcpy(run->fatal_msg, what, sizeof(run->fatal_msg));
    }
    pthread_mutex_unlock(&run->error_lock);
    atomic_store(&run->stop_workers, true);
    if (run->queue_live)
        pb_queue_close(&run->queue);
}

/* ---- building a batch (the hot path) ------------------------------------ */

/* ---- naming the stage a crash happened in ---------------------------- */

/* The worker this thread is (NULL outside the loaders), for the crash
 * handler: set once per batch. */
static _Thread_local struct worker *this_worker;

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
static struct sigaction crash_previous[PB_ARRAY_LEN(crash_signals)];

/* Appends text to buf (of size n, used so far *at) from a signal handler:
 * no library call. */
static void append(char *buf, size_t n, size_t *at, const char *text)
{
    for (; *text && *at + 1 < n; text++)
        buf[(*at)++] = *text;
    buf[*at] = '\0';
}

/* Writes the sentence "pbench: BEFORE 'STAGE' MIDDLE SAMPLE AFTER" for the
 * stage this thread's worker is in, in one write() so that two threads do
 * not mix their lines; nothing when the thread is in no stage. */
static void say_stage(const char *before, const char *middle, const char *after)
{
    struct worker *w = this_worker;
    int k = w ? atomic_load_explicit(&w->busy_stage, memory_order_relaxed) : -1;
    if (!w || k < 0 || k >= w->chain.count)
        return;
    uint64_t index = atomic_load_explicit(&w->busy_sample, memory_order_relaxed);
    const struct pb_dataset *ds = w->run->ds;
    char line[PB_PATH_MAX + 512];
    size_t at = 0;
    append(line, sizeof(line), &at, "\npbench: ");
    append(line, sizeof(line), &at, before);
    append(line, sizeof(line), &at, " '");
    append(line, sizeof(line), &at, w->chain.stages[k].ops->name);
    append(line, sizeof(line), &at, middle);
    append(line, sizeof(line), &at,
           ds && index < ds->count && ds->paths[index] ? ds->paths[index] : "(unknown)");
    append(line, sizeof(line), &at, after);
    ssize_t ignored = write(STDERR_FILENO, line, at);
    (void)ignored;
}

/* A crash inside a stage (a plugin's, most often) names the stage and the
 * sample on stderr, then lets the signal do what it did before (the
 * default: the process dies by it, with a core where enabled; a
 * sanitizer's report under one). */
static void on_crash(int sig, siginfo_t *info, void *context)
{
    (void)context;
    static const char *const names[] = {"crashed (SIGSEGV) in stage", "crashed (SIGBUS) in stage",
                                        "crashed (SIGILL) in stage", "crashed (SIGFPE) in stage"};
    static atomic_flag said = ATOMIC_FLAG_INIT;
    size_t i = 0;
    while (i + 1 < PB_ARRAY_LEN(crash_signals) && crash_signals[i] != sig)
        i++;
    if (atomic_flag_test_and_set(&said)) {
        for (;;)
            pause(); /* another thread crashed first and is ending the process */
    }
    say_stage(names[i], "' on sample ", "; nothing was written\n");
    sigaction(sig, &crash_previous[i], NULL);
    if (info->si_code <= 0)
        raise(sig); /* sent, not a fault: a fault recurs on return */
}

/* exit() called from inside a stage (a plugin that "handles" an error by
 * exiting) would end pbench with that status and no result: the atexit
 * handler runs in the thread that called exit(), so it can tell, name the
 * stage and sample, and end with exit code 1 instead. */
static void on_exit_in_stage(void)
{
    struct worker *w = this_worker;
    if (!w || atomic_load_explicit(&w->busy_stage, memory_order_relaxed) < 0)
        return;
    say_stage("stage", "' called exit(), on sample ",
              ": a stage must return an error code instead; nothing was written\n");
    _exit(PB_EXIT_ERROR);
}

/* Installs the crash handler and the exit check once per process. */
static void name_crashes(void)
{
    static atomic_bool installed;
    if (atomic_load_explicit(&installed, memory_order_relaxed) ||
        atomic_exchange(&installed, true))
        return;
    atexit(on_exit_in_stage);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < PB_ARRAY_LEN(crash_signals); i++)
        sigaction(crash_signals[i], &sa, &crash_previous[i]);
}

/* The clocks of one batch: whether it is measured and stage-timed, when
 * it started, and the time its samples spent inside stages (the rest of
 * its assembly is collation). */
struct batch_clock {
    bool measured, timing, perf;
    uint64_t start_ns, cpu_start_ns;
    uint64_t stage_wall_ns, stage_cpu_ns;
};

/* The clocks of one sample with timing on: one reading closes a stage and
 * opens the next, so a sample costs stages + 1 readings of each clock. */
struct sample_clock {
    uint64_t wall_ns, cpu_ns;
    uint64_t perf[PB_PERF_COUNTERS];
};

/* Sample j of the batch as the stages see it, before the first stage. */
static inline void sample_init(struct worker *w, uint32_t j, struct pb_sample *s)
{
    const struct run *run = w->run;
    const struct pb_dataset *ds = run->ds;
    uint64_t index = w->indices[j];
    *s = (struct pb_sample){
        .index = index,
        .path = ds->paths[index],
        .file_bytes = ds->sizes[index],
        .file_offset = ds->offsets ? ds->offsets[index] : 0,
        .member = ds->members ? ds->members[index] : NULL,
        .seed = w->seeds[j],
        .visit_seed = w->visit_seeds[j],
        .clip = w->clips[j],
        .clips = (uint32_t)run->clips_per_file,
        .in_shape = {.dtype = PB_DTYPE_BYTES},
        .msg = w->msg,
        .msglen = sizeof(w->msg),
    };
}

/* Cold: the sentence for a stage whose output does not fit. A size above
 * PB_SAMPLE_MAX_BYTES was read from a corrupt header and is never
 * allocated; a last stage of variable size cannot fill a fixed slot. */
static int stage_too_large(struct worker *w, int k, const struct pb_sample *s, bool corrupt)
{
    const char *path = s->path ? s->path : "(sample)";
    const char *stage = w->chain.stages[k].ops->name;
    if (corrupt)
        snprintf(w->msg, sizeof(w->msg),
                 "%s: stage '%s' asks for %zu bytes for one sample, more than the %zu "
                 "bytes pbench accepts: the file's size fields are corrupt or it is far "
                 "too large",
                 path, stage, s->out_bytes, (size_t)PB_SAMPLE_MAX_BYTES);
    else
        snprintf(w->msg, sizeof(w->msg),
                 "%s: stage '%s' output of %zu bytes does not fit the batch slot of %zu "
                 "bytes; end the pipeline with a stage of fixed size (resize, crop)",
                 path, stage, s->out_bytes, s->out_capacity);
    return PB_ERR_DATA;
}

/* Whether rc is one of the codes a stage may return on failure. */
static inline bool known_failure(int rc)
{
    return rc <= PB_ERR && rc >= PB_ERR_NOSPACE;
}

/* Cold: a stage failed without a sentence, or with a code that is not
 * pbench's (a plugin's own number): the run stops naming the stage, the
 * code and the sample rather than printing an empty "pbench: ". */
static int stage_failed_unsaid(struct worker *w, int k, const struct pb_sample *s, int rc)
{
    const char *path = s->path ? s->path : "(sample)";
    const char *stage = w->chain.stages[k].ops->name;
    if (!known_failure(rc))
        snprintf(w->msg, sizeof(w->msg),
                 "%s: stage '%s' returned %d, which is not a pbench return code (PB_OK, or a "
                 "negative PB_ERR_* of bench/base/pb.h): a bug in the stage",
                 path, stage, rc);
    else
        snprintf(w->msg, sizeof(w->msg), "%s: stage '%s' failed (code %d) without saying why",
                 path, stage, rc);
    return known_failure(rc) ? rc : PB_ERR;
}

/* Cold: a stage returned PB_OK with more output than the buffer it was
 * given holds: it wrote past its end (or says it did). The stage is named
 * here, not the next one that would read the garbage. */
static int stage_overran(struct worker *w, int k, const struct pb_sample *s)
{
    snprintf(w->msg, sizeof(w->msg),
             "%s: stage '%s' returned %zu bytes of output into a buffer of %zu: it wrote past "
             "the end of its output (a bug in the stage; it must return PB_ERR_NOSPACE with the "
             "size it needs)",
             s->path ? s->path : "(sample)", w->chain.stages[k].ops->name, s->out_bytes,
             s->out_capacity);
    return PB_ERR;
}

/* Runs stage k on s into out (the sample's place in the batch for the last
 * stage, a scratch buffer before it). A larger image than any before grows
 * the scratch buffer once, then the stage runs again; nothing else
 * allocates. */
static inline int run_stage(struct worker *w, int k, bool last, struct pb_sample *s, uint8_t *out)
{
    const struct pb_stage_inst *stage = &w->chain.stages[k];
    uint8_t *given = last ? out : w->scratch[k & 1];
    s->out = given;
    s->out_capacity = last ? w->run->sizes.slot_bytes : w->scratch_capacity[k & 1];
    s->out_bytes = 0;
    w->msg[0] = '\0';
    int rc = stage->ops->process(stage->state, s);
    if (rc == PB_OK)
        return s->out == given && s->out_bytes > s->out_capacity ? stage_overran(w, k, s) : PB_OK;
    if (rc != PB_ERR_NOSPACE)
        return known_failure(rc) && w->msg[0] ? rc : stage_failed_unsaid(w, k, s, rc);
    if (s->out_bytes > PB_SAMPLE_MAX_BYTES)
        return stage_too_large(w, k, s, true);
    if (!last && s->out_bytes > s->out_capacity &&
        pb_runner_grow_scratch(w, k & 1, s->out_bytes) == PB_OK) {
        s->out = given = w->scratch[k & 1];
        s->out_capacity = w->scratch_capacity[k & 1];
        s->out_bytes = 0;
        memset(s->substage_ns, 0, sizeof(s->substage_ns));
        memset(s->counters, 0, sizeof(s->counters));
        rc = stage->ops->process(stage->state, s);
    }
    return rc == PB_ERR_NOSPACE ? stage_too_large(w, k, s, false) : rc;
}

/* With timing on, stage k of s has just ended: its wall and CPU time into
 * the stage's histogram, slowest list and trace, its perf counters and
 * substage times; the sample clock moves on to the next stage. */
static inline void stage_timed(struct worker *w, int k, const struct pb_sample *s,
                               struct sample_clock *sc, struct batch_clock *bc)
{
    struct pb_stage_stats *st = w->stats;
    uint64_t t = pb_now_ns(), c = pb_thread_cpu_ns();
    if (w->trace)
        pb_trace_record(w->trace, w->trace_names[k], PB_TRACE_SPAN, s->index, sc->wall_ns, t, 0);
    pb_hist_add(st->hist[k], t - sc->wall_ns);
    pb_slowest_add(&st->slowest[k], s->index, t - sc->wall_ns);
    st->cpu_ns[k] += c - sc->cpu_ns;
    if (bc->perf) {
        uint64_t now[PB_PERF_COUNTERS] = {0};
        pb_perf_read(&w->perf, now);
        for (int i = 0; i < PB_PERF_COUNTERS; i++) {
            st->perf[k][i] += now[i] - sc->perf[i];
            sc->perf[i] = now[i];
        }
    }
    bc->stage_wall_ns += t - sc->wall_ns;
    bc->stage_cpu_ns += c - sc->cpu_ns;
    sc->wall_ns = t;
    sc->cpu_ns = c;
    for (int i = 0; i < st->substage_count[k]; i++)
        if (s->substage_ns[i] != PB_SUBSTAGE_NONE)
            pb_hist_add(&st->substage_hist[k][i], s->substage_ns[i]);
}

/* Runs every stage on s, the last one writing into out; times each when
 * the batch is timed and counts what stages count when it is measured.
 * Returns the first stage's error, or PB_OK. */
static inline int process_sample(struct worker *w, struct pb_sample *s, uint8_t *out,
                                 struct batch_clock *bc)
{
    struct pb_stage_stats *st = w->stats;
    int last = w->chain.count - 1, rc = PB_OK;
    struct sample_clock sc = {0};
    if (bc->timing) {
        sc.wall_ns = pb_now_ns();
        sc.cpu_ns = pb_thread_cpu_ns();
        if (bc->perf)
            pb_perf_read(&w->perf, sc.perf);
    }
    atomic_store_explicit(&w->busy_sample, s->index, memory_order_relaxed);
    for (int k = 0; k <= last; k++) {
        atomic_store_explicit(&w->busy_stage, k, memory_order_relaxed);
        atomic_store_explicit(&w->stage_calls,
                              atomic_load_explicit(&w->stage_calls, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        rc = run_stage(w, k, k == last, s, out);
        if (bc->timing)
            stage_timed(w, k, s, &sc, bc);
        if (st->counter_count[k] && bc->measured) {
            for (int i = 0; i < st->counter_count[k]; i++)
                st->counters[k][i] += s->counters[i];
        }
        if (st->substage_count[k] | st->counter_count[k]) {
            memset(s->substage_ns, 0, sizeof(s->substage_ns));
            memset(s->counters, 0, sizeof(s->counters));
        }
        if (rc != PB_OK)
            break;
        s->in = s->out;
        s->in_bytes = s->out_bytes;
        s->in_shape = s->out_shape;
    }
    atomic_store_explicit(&w->busy_stage, -1, memory_order_relaxed);
    return rc;
}

/* Whether a sample came out in another shape than the batch planned. */
static inline bool ragged_sample(const struct pb_shape *got, const struct pb_shape *planned)
{
    return got->height != planned->height || got->width != planned->width ||
           got->channels != planned->channels ||
           (got->frames > 0 ? got->frames : 1) != (planned->frames > 0 ? planned->frames : 1);
}

/* The batch's clocks when it starts: measured once the warm-up is over,
 * stage-timed when the spec asks for it. */
static inline void batch_clock_start(struct worker *w, uint64_t seq, uint64_t start_ns,
                                     struct batch_clock *bc)
{
    const struct run *run = w->run;
    bc->start_ns = start_ns;
    bc->measured = seq >= run->first_measured_seq;
    bc->timing = bc->measured && run->stage_timing;
    if (bc->measured && !w->cpu_started) {
        w->cpu_start_ns = pb_thread_cpu_ns();
        w->cpu_started = true;
    }
    bc->cpu_start_ns = bc->timing ? pb_thread_cpu_ns() : 0;
    bc->perf = bc->timing && w->perf.mask;
    bc->stage_wall_ns = bc->stage_cpu_ns = 0;
}

/* The batch is built: its assembly time, the worker's CPU clock, and with
 * timing on the collation share (assembly less the stages) and its span in
 * the trace. */
static inline void batch_clock_end(struct worker *w, uint64_t seq, struct pb_slot *slot,
                                   const struct batch_clock *bc)
{
    struct pb_stage_stats *st = w->stats;
    slot->assembly_ns = pb_now_ns() - bc->start_ns;
    if (bc->measured)
        w->cpu_end_ns = pb_thread_cpu_ns();
    if (!bc->timing)
        return;
    pb_hist_add(&st->collate_hist,
                slot->assembly_ns > bc->stage_wall_ns ? slot->assembly_ns - bc->stage_wall_ns : 0);
    uint64_t batch_cpu = w->cpu_end_ns - bc->cpu_start_ns;
    st->collate_cpu_ns += batch_cpu > bc->stage_cpu_ns ? batch_cpu - bc->stage_cpu_ns : 0;
    if (w->trace)
        pb_trace_record(w->trace, PB_TRACE_BATCH, PB_TRACE_SPAN, seq, bc->start_ns,
                        bc->start_ns + slot->assembly_ns, 0);
}

/* Builds batch seq into slot, sample by sample, writing the last stage's
 * output straight into the sample's place in the batch. A sample that
 * fails on bad data is counted and skipped under run.on_error: skip; any
 * other failure ends the run. No allocation, no lock and no formatting
 * unless a sample fails. */
static int build_batch(struct worker *w, uint64_t seq, struct pb_slot *slot)
{
    struct run *run = w->run;
    uint64_t start_ns = pb_now_ns();
    uint32_t n;
    if (!pb_sampler_batch_visits(&run->sampler, seq, w->indices, w->seeds, w->visit_seeds,
                                 w->clips, &n))
        return PB_BATCH_END;
    struct batch_clock bc;
    batch_clock_start(w, seq, start_ns, &bc);
    const struct pb_stage_inst *first = &w->chain.stages[0];
    if (first->ops->batch_start) {
        for (uint32_t j = 0; j < n; j++)
            w->batch_paths[j] = run->ds->paths[w->indices[j]];
        first->ops->batch_start(first->state, (const char *const *)w->batch_paths, n);
    }
    uint32_t delivered = 0, errors = 0;
    uint64_t bytes_read = 0;
    bool ragged = false;
    for (uint32_t j = 0; j < n; j++) {
        struct pb_sample s;
        sample_init(w, j, &s);
        int rc = process_sample(w, &s, slot->batch.data + (size_t)delivered * run->sizes.slot_bytes,
                                &bc);
        bytes_read += s.bytes_read;
        if (rc == PB_ERR_DATA && run->spec->run.on_error == PB_ON_ERROR_SKIP) {
            errors++;
            record_data_error(run, s.path, w->msg);
            continue;
        }
        if (rc != PB_OK) {
            pb_runner_fail(run, rc, w->msg);
            return rc;
        }
        ragged |= ragged_sample(&s.in_shape, &run->sizes.sample_shape);
        slot->batch.seeds[delivered++] = w->seeds[j];
    }
    slot->batch.seq = seq;
    slot->batch.samples = delivered;
    slot->batch.shape = run->sizes.sample_shape;
    slot->batch.ragged = ragged;
    slot->errors = errors;
    slot->bytes_read = bytes_read;
    batch_clock_end(w, seq, slot, &bc);
    return PB_BATCH_BUILT;
}

int pb_runner_build_batch(struct worker *w, uint64_t seq, struct pb_slot *slot)
{
    name_crashes();
    this_worker = w; /* only while the batch is built: the run is freed later */
    int rc = build_batch(w, seq, slot);
    this_worker = NULL;
    return rc;
}

void *pb_runner_worker_main(void *arg)
{
    struct worker *w = arg;
    struct run *run = w->run;
    pb_affinity_bind(run->affinity, w->index + 1); /* once, before the first batch */
    if (run->perf_on)
        w->stats->perf_mask = pb_perf_open(&w->perf, NULL, 0);
    for (uint64_t seq = (uint64_t)w->index; !atomic_load(&run->stop_workers);
         seq += (uint64_t)run->workers) {
        struct pb_slot *slot = pb_queue_acquire(&run->queue, w->index);
        if (!slot)
            break;
        int rc = pb_runner_build_batch(w, seq, slot);
        if (rc != PB_BATCH_BUILT) {
            pb_queue_release(&run->queue, slot);
            break;
        }
        pb_queue_push(&run->queue, slot);
    }
    atomic_store(&w->exit_cpu_ns, pb_thread_cpu_ns());
    pb_affinity_thread_end(run->affinity, w->index + 1);
    pb_perf_close(&w->perf);
    pb_queue_worker_done(&run->queue, w->index);
    return NULL;
}

