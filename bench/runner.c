#include "bench/runner.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/gpuloop.h"
#include "bench/nvml.h"
#include "bench/pb.h"
#include "bench/queue.h"
#include "kernels/gpu_rt.h"

#define SAMPLER_PERIOD_NS 50000000ull /* RSS/CPU sampling: 20 Hz */
#define MAX_RSS_SAMPLES 8192
#define BATCH_ALIGN 64

struct stage_inst {
    const struct pb_stage_ops *ops;
    void *state;
    int spec_index;
};

struct run;

/* The device side of a repeat, filled by the GPU loop's harvest callback
 * (consumer thread) for the measured batches. */
struct gpu_acc {
    struct pb_hist copy_hist, step_hist, stage_hist[PB_GPU_MAX_STAGES];
    struct pb_gpu_figures fig;
    double *copy_iv, *compute_iv; /* begin, end pairs, device timeline */
    size_t iv_count, iv_cap;
    bool oom;
};

struct worker {
    struct run *run;
    int index;           /* -1: the consumer loading in its own thread */
    pthread_t thread;
    struct stage_inst stages[PB_MAX_STAGES];
    int stage_count;
    uint8_t *scratch[2];
    size_t scratch_capacity[2];
    struct pb_hist *hist;              /* one per worker stage */
    uint64_t stage_cpu_ns[PB_MAX_STAGES];
    /* Decoder sub-stages and counters, per stage (see decoders/decoder.h). */
    const struct pb_decoder_ops *decoder[PB_MAX_STAGES];
    int substage_count[PB_MAX_STAGES];
    struct pb_hist *substage_hist[PB_MAX_STAGES]; /* substage_count each */
    int counter_count[PB_MAX_STAGES];
    uint64_t counters[PB_MAX_STAGES][PB_MAX_COUNTERS];
    /* Per batch: assembly time outside the stages (sampler, slot handling;
     * samples are written into the batch in place, so "collate" is what is
     * left of a DataLoader's collate). */
    struct pb_hist collate_hist;
    uint64_t collate_cpu_ns;
    uint64_t cpu_start_ns, cpu_end_ns; /* thread CPU over measured batches */
    _Atomic uint64_t exit_cpu_ns;      /* thread CPU when the worker ended  */
    bool cpu_started;
    uint64_t *indices, *seeds;
    char msg[PB_MSG_MAX];
};

struct run {
    const struct pb_spec *spec;
    const struct pb_dataset *ds;
    struct pb_sampler sampler;         /* per repeat: seeded by repeat      */
    int workers;                       /* threads; 0 loads in the consumer  */
    int prefetch_factor;
    struct worker *worker;             /* max(workers, 1) entries           */
    int worker_stage_count;
    int worker_stage_spec[PB_MAX_STAGES];
    struct stage_inst consumer_stages[PB_MAX_STAGES];
    int consumer_stage_count;
    /* The device side (a to_device stage): the loop, its GPU stages (the
     * consumer stages after to_device) and what a repeat measured. */
    struct pb_gpu_loop *gpu;
    struct stage_inst gpu_stages[PB_GPU_MAX_STAGES];
    int gpu_stage_count;
    struct gpu_acc gpu_acc;
    size_t scratch_bytes, slot_bytes;
    struct pb_shape sample_shape;
    struct pb_slot *slots;
    int slot_count;
    bool pinned;
    uint64_t pool_bytes;
    struct pb_queue queue;
    bool queue_live;
    int started_workers;               /* threads running in this repeat    */

    bool stage_timing;
    uint64_t first_measured_seq;
    atomic_bool stop_workers;

    pthread_mutex_t error_lock;        /* rare path: data errors, failure   */
    int fatal_rc;
    char fatal_msg[PB_MSG_MAX];
    struct pb_point_result *point;     /* error_files go here               */

    /* System sampler thread. */
    pthread_t sampler_thread;
    atomic_bool sampler_stop;
    volatile sig_atomic_t *user_stop;
    const struct pb_run_hooks *hooks;
    /* Published by the consumer for the progress tick (relaxed atomics,
     * one store per batch). */
    _Atomic uint64_t live_samples;
    _Atomic uint64_t live_start_ns; /* 0 until the measured part starts */
    uint64_t repeat_start_ns;
    struct pb_rss_sample *rss;
    size_t rss_count;
    uint64_t rss_peak_bytes;
};

/* ---- helpers ----------------------------------------------------------- */

static uint64_t rss_bytes_now(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    unsigned long long size = 0, resident = 0;
    int n = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    if (n != 2)
        return 0;
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t process_cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

static uint64_t mem_available_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kib = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
            break;
    fclose(f);
    return (uint64_t)kib * 1024;
}

/* Mean of the "cpu MHz" lines of /proc/cpuinfo; 0 when unknown. */
static double cpu_mhz_now(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    char line[256];
    double sum = 0, mhz;
    int n = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "cpu MHz : %lf", &mhz) == 1) {
            sum += mhz;
            n++;
        }
    fclose(f);
    return n ? sum / n : 0;
}

static void record_data_error(struct run *run, const char *what)
{
    pthread_mutex_lock(&run->error_lock);
    struct pb_point_result *p = run->point;
    if (p->error_file_count < PB_MAX_ERROR_FILES)
        pb_strlcpy(p->error_files[p->error_file_count++], what, sizeof(p->error_files[0]));
    pthread_mutex_unlock(&run->error_lock);
}

static void fail_run(struct run *run, int rc, const char *what)
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

enum { BATCH_BUILT = 0, BATCH_END = 1 };

static size_t round_up(size_t bytes)
{
    return (bytes + BATCH_ALIGN - 1) / BATCH_ALIGN * BATCH_ALIGN;
}

static int grow_scratch(struct worker *w, int which, size_t bytes)
{
    size_t capacity = round_up(bytes + bytes / 4); /* headroom for the next one */
    void *p = aligned_alloc(BATCH_ALIGN, capacity);
    if (!p)
        return PB_ERR_NOMEM;
    free(w->scratch[which]);
    w->scratch[which] = p;
    w->scratch_capacity[which] = capacity;
    return PB_OK;
}

/* Builds batch seq into slot, sample by sample, writing the last stage's
 * output straight into the sample's place in the batch. No allocation, no
 * lock and no formatting unless a sample fails. */
static int build_batch(struct worker *w, uint64_t seq, struct pb_slot *slot)
{
    struct run *run = w->run;
    uint64_t start_ns = pb_now_ns();
    uint32_t n;
    if (!pb_sampler_batch(&run->sampler, seq, w->indices, w->seeds, &n))
        return BATCH_END;
    bool measured = seq >= run->first_measured_seq;
    bool timing = measured && run->stage_timing;
    if (measured && !w->cpu_started) {
        w->cpu_start_ns = pb_thread_cpu_ns();
        w->cpu_started = true;
    }
    uint64_t batch_cpu_start = timing ? pb_thread_cpu_ns() : 0;
    uint64_t stage_wall_ns = 0, stage_cpu_ns = 0;
    const struct pb_dataset *ds = run->ds;
    uint32_t delivered = 0, errors = 0;
    uint64_t bytes_read = 0;
    bool ragged = false;
    const struct pb_shape *planned = &run->sample_shape;
    int last = w->stage_count - 1;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t index = w->indices[j];
        struct pb_sample s = {
            .index = index,
            .path = ds->paths[index],
            .file_bytes = ds->sizes[index],
            .seed = w->seeds[j],
            .in_shape = {.dtype = PB_DTYPE_BYTES},
            .msg = w->msg,
            .msglen = sizeof(w->msg),
        };
        int rc = PB_OK;
        /* With timing on, one clock reading closes a stage and opens the
         * next, so a sample costs stages + 1 readings of each clock. */
        uint64_t t_prev = 0, c_prev = 0;
        if (timing) {
            t_prev = pb_now_ns();
            c_prev = pb_thread_cpu_ns();
        }
        for (int k = 0; k <= last; k++) {
            if (k == last) {
                s.out = slot->batch.data + (size_t)delivered * run->slot_bytes;
                s.out_capacity = run->slot_bytes;
            } else {
                s.out = w->scratch[k & 1];
                s.out_capacity = w->scratch_capacity[k & 1];
            }
            s.out_bytes = 0;
            rc = w->stages[k].ops->process(w->stages[k].state, &s);
            if (rc == PB_ERR_NOSPACE && k != last && s.out_bytes > s.out_capacity) {
                /* A larger image than any before: grow once, then go on
                 * without allocating until an even larger one comes. */
                if (grow_scratch(w, k & 1, s.out_bytes) == PB_OK) {
                    s.out = w->scratch[k & 1];
                    s.out_capacity = w->scratch_capacity[k & 1];
                    s.out_bytes = 0;
                    memset(s.substage_ns, 0, sizeof(s.substage_ns));
                    memset(s.counters, 0, sizeof(s.counters));
                    rc = w->stages[k].ops->process(w->stages[k].state, &s);
                }
            }
            if (rc == PB_ERR_NOSPACE) {
                snprintf(w->msg, sizeof(w->msg),
                         "%s: stage '%s' output of %zu bytes does not fit the batch slot of %zu "
                         "bytes; end the pipeline with a stage of fixed size (resize, crop)",
                         s.path ? s.path : "(sample)", w->stages[k].ops->name, s.out_bytes,
                         s.out_capacity);
                rc = PB_ERR_DATA;
            }
            if (timing) {
                uint64_t t = pb_now_ns(), c = pb_thread_cpu_ns();
                pb_hist_add(&w->hist[k], t - t_prev);
                w->stage_cpu_ns[k] += c - c_prev;
                stage_wall_ns += t - t_prev;
                stage_cpu_ns += c - c_prev;
                t_prev = t;
                c_prev = c;
                for (int i = 0; i < w->substage_count[k]; i++)
                    pb_hist_add(&w->substage_hist[k][i], s.substage_ns[i]);
            }
            if (w->counter_count[k] && measured) {
                for (int i = 0; i < w->counter_count[k]; i++)
                    w->counters[k][i] += s.counters[i];
            }
            if (w->substage_count[k] | w->counter_count[k]) {
                memset(s.substage_ns, 0, sizeof(s.substage_ns));
                memset(s.counters, 0, sizeof(s.counters));
            }
            if (rc != PB_OK)
                break;
            s.in = s.out;
            s.in_bytes = s.out_bytes;
            s.in_shape = s.out_shape;
        }
        bytes_read += s.bytes_read;
        if (rc == PB_ERR_DATA && run->spec->run.on_error == PB_ON_ERROR_SKIP) {
            errors++;
            record_data_error(run, w->msg);
            continue;
        }
        if (rc != PB_OK) {
            fail_run(run, rc, w->msg);
            return rc;
        }
        ragged |= s.in_shape.height != planned->height || s.in_shape.width != planned->width ||
                  s.in_shape.channels != planned->channels ||
                  (s.in_shape.frames > 0 ? s.in_shape.frames : 1) !=
                      (planned->frames > 0 ? planned->frames : 1);
        slot->batch.seeds[delivered] = w->seeds[j];
        delivered++;
    }
    slot->batch.seq = seq;
    slot->batch.samples = delivered;
    slot->batch.shape = run->sample_shape;
    slot->batch.ragged = ragged;
    slot->errors = errors;
    slot->bytes_read = bytes_read;
    slot->assembly_ns = pb_now_ns() - start_ns;
    if (measured)
        w->cpu_end_ns = pb_thread_cpu_ns();
    if (timing) {
        pb_hist_add(&w->collate_hist,
                    slot->assembly_ns > stage_wall_ns ? slot->assembly_ns - stage_wall_ns : 0);
        uint64_t batch_cpu = w->cpu_end_ns - batch_cpu_start;
        w->collate_cpu_ns += batch_cpu > stage_cpu_ns ? batch_cpu - stage_cpu_ns : 0;
    }
    return BATCH_BUILT;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct run *run = w->run;
    for (uint64_t seq = (uint64_t)w->index; !atomic_load(&run->stop_workers);
         seq += (uint64_t)run->workers) {
        struct pb_slot *slot = pb_queue_acquire(&run->queue, w->index);
        if (!slot)
            break;
        int rc = build_batch(w, seq, slot);
        if (rc != BATCH_BUILT) {
            pb_queue_release(&run->queue, slot);
            break;
        }
        pb_queue_push(&run->queue, slot);
    }
    atomic_store(&w->exit_cpu_ns, pb_thread_cpu_ns());
    pb_queue_worker_done(&run->queue, w->index);
    return NULL;
}

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

/* ---- system sampler ---------------------------------------------------- */

static void *sampler_main(void *arg)
{
    struct run *run = arg;
    uint64_t last_ns = pb_now_ns(), last_cpu = process_cpu_ns();
    unsigned ticks = 0;
    while (!atomic_load(&run->sampler_stop)) {
        struct timespec period = {0, (long)SAMPLER_PERIOD_NS};
        nanosleep(&period, NULL);
        if (run->user_stop && *run->user_stop && run->queue_live)
            pb_queue_close(&run->queue); /* wake a consumer blocked on a slow batch */
        uint64_t now = pb_now_ns(), cpu = process_cpu_ns();
        uint64_t rss = rss_bytes_now();
        if (run->hooks && run->hooks->tick && (++ticks % 5) == 0) {
            uint64_t start = atomic_load_explicit(&run->live_start_ns, memory_order_relaxed);
            uint64_t samples = atomic_load_explicit(&run->live_samples, memory_order_relaxed);
            if (start && now > start)
                run->hooks->tick(run->hooks->user, (double)samples * 1e9 / (double)(now - start));
        }
        if (rss > run->rss_peak_bytes)
            run->rss_peak_bytes = rss;
        if (run->rss_count < MAX_RSS_SAMPLES) {
            struct pb_rss_sample *r = &run->rss[run->rss_count++];
            r->t_s = (double)(now - run->repeat_start_ns) / 1e9;
            r->rss_bytes = rss;
            r->cpu_pct = now > last_ns ? 100.0 * (double)(cpu - last_cpu) / (double)(now - last_ns) : 0;
        }
        last_ns = now;
        last_cpu = cpu;
    }
    return NULL;
}

/* ---- set-up and tear-down ---------------------------------------------- */

static void *alloc_batch_buffer(size_t bytes, bool pinned)
{
    if (pinned)
        return pb_pinned_alloc(bytes);
    size_t rounded = (bytes + BATCH_ALIGN - 1) / BATCH_ALIGN * BATCH_ALIGN;
    void *p = aligned_alloc(BATCH_ALIGN, rounded ? rounded : BATCH_ALIGN);
    if (p)
        memset(p, 0, rounded); /* fault the pages in now, not in the measured part */
    return p;
}

static int init_stage_chain(struct run *run, struct worker *w, int worker_index, char *msg,
                            size_t msglen)
{
    const struct pb_spec *spec = run->spec;
    struct pb_stage_plan plan = {
        .shape = {.dtype = PB_DTYPE_BYTES, .frames = 1, .height = 1, .width = 0, .channels = 1},
        .max_bytes = run->ds->max_bytes,
        .worker = worker_index,
    };
    size_t scratch = 0;
    w->stage_count = 0;
    for (int k = 0; k < run->worker_stage_count; k++) {
        const struct pb_stage_spec *ss = &spec->stages[run->worker_stage_spec[k]];
        /* What the nearest sizing stage downstream wants as input. */
        plan.want_height = plan.want_width = 0;
        for (int j = run->worker_stage_spec[k] + 1; j < spec->stage_count; j++) {
            const struct pb_stage_spec *next = &spec->stages[j];
            if (next->ops->min_input) {
                next->ops->min_input(next->opts, &plan.want_height, &plan.want_width);
                break;
            }
        }
        struct pb_stage_plan out = plan;
        out.want_height = out.want_width = 0;
        void *state = NULL;
        int rc = ss->ops->init(&state, ss->opts, &plan, &out, ss->decoder, ss->decoder_opts, msg,
                               msglen);
        if (rc != PB_OK)
            return rc;
        int idx = w->stage_count++;
        w->stages[idx] = (struct stage_inst){ss->ops, state, run->worker_stage_spec[k]};
        w->decoder[idx] = ss->decoder;
        w->substage_count[idx] = 0;
        w->counter_count[idx] = 0;
        if (ss->decoder && ss->decoder->substages)
            while (w->substage_count[idx] < PB_MAX_SUBSTAGES &&
                   ss->decoder->substages[w->substage_count[idx]])
                w->substage_count[idx]++;
        if (ss->decoder && ss->decoder->counters)
            while (w->counter_count[idx] < PB_MAX_COUNTERS &&
                   ss->decoder->counters[w->counter_count[idx]])
                w->counter_count[idx]++;
        if (w->substage_count[idx]) {
            w->substage_hist[idx] = calloc((size_t)w->substage_count[idx], sizeof(struct pb_hist));
            if (!w->substage_hist[idx])
                return PB_ERR_NOMEM;
        }
        if (k < run->worker_stage_count - 1 && out.max_bytes > scratch)
            scratch = out.max_bytes;
        plan = out;
    }
    run->scratch_bytes = scratch;
    run->slot_bytes = plan.max_bytes;
    run->sample_shape = plan.shape;
    return PB_OK;
}

static void free_worker(struct worker *w)
{
    for (int k = 0; k < w->stage_count; k++)
        if (w->stages[k].ops->cleanup)
            w->stages[k].ops->cleanup(w->stages[k].state);
    for (int k = 0; k < PB_MAX_STAGES; k++)
        free(w->substage_hist[k]);
    w->stage_count = 0;
    free(w->scratch[0]);
    free(w->scratch[1]);
    free(w->hist);
    free(w->indices);
    free(w->seeds);
}

static void free_run(struct run *run)
{
    if (run->worker) {
        for (int i = 0; i < (run->workers > 0 ? run->workers : 1); i++)
            free_worker(&run->worker[i]);
        free(run->worker);
    }
    for (int k = 0; k < run->consumer_stage_count; k++)
        if (run->consumer_stages[k].ops->cleanup)
            run->consumer_stages[k].ops->cleanup(run->consumer_stages[k].state);
    for (int k = 0; k < run->gpu_stage_count; k++)
        if (run->gpu_stages[k].ops->cleanup)
            run->gpu_stages[k].ops->cleanup(run->gpu_stages[k].state);
    pb_gpu_loop_close(run->gpu);
    run->gpu = NULL;
    free(run->gpu_acc.copy_iv);
    free(run->gpu_acc.compute_iv);
    if (run->slots) {
        for (int i = 0; i < run->slot_count; i++) {
            free(run->slots[i].batch.seeds);
            if (run->pinned)
                pb_pinned_free(run->slots[i].batch.data);
            else
                free(run->slots[i].batch.data);
        }
        free(run->slots);
    }
    free(run->rss);
    pthread_mutex_destroy(&run->error_lock);
}

static void gpu_harvest(void *user, const struct pb_gpu_batch_times *t);

/* Consumer-side stages take the batch as the workers left it. A to_device
 * stage opens the GPU loop; the stages after it run on the device. */
static int setup_consumer(struct run *run, const struct pb_spec *spec, size_t buffer_bytes,
                          char *msg, size_t msglen)
{
    struct pb_stage_plan in = {.shape = run->sample_shape, .max_bytes = run->slot_bytes,
                               .worker = -1, .inflight = (int)spec->loader.device_prefetch,
                               .max_samples = (int)spec->loader.batch_size};
    for (int i = 0; i < spec->stage_count; i++) {
        const struct pb_stage_spec *ss = &spec->stages[i];
        if (!(ss->ops->flags & PB_STAGE_CONSUMER))
            continue;
        if (ss->ops->flags & PB_STAGE_TO_DEVICE) {
            int gpu_stages = 0;
            for (int j = i + 1; j < spec->stage_count; j++)
                gpu_stages += (spec->stages[j].ops->flags & PB_STAGE_GPU) != 0;
            struct pb_gpu_loop_config cfg = {
                .inflight = (int)spec->loader.device_prefetch,
                .max_batch_bytes = buffer_bytes,
                .copy_on_compute = pb_to_device_on_compute(ss->opts),
                .stage_count = gpu_stages,
                .harvest = gpu_harvest,
                .user = run,
            };
            int rc = pb_gpu_loop_open(&run->gpu, &cfg, msg, msglen);
            if (rc != PB_OK)
                return rc;
            continue;
        }
        if ((ss->ops->flags & PB_STAGE_GPU) && run->gpu_stage_count >= PB_GPU_MAX_STAGES) {
            snprintf(msg, msglen, "at most %d stages may run on the GPU", PB_GPU_MAX_STAGES);
            return PB_ERR_CONFIG;
        }
        struct pb_stage_plan out = in;
        void *state = NULL;
        int rc = ss->ops->init(&state, ss->opts, &in, &out, ss->decoder, ss->decoder_opts, msg,
                               msglen);
        struct stage_inst inst = {ss->ops, state, i};
        if (ss->ops->flags & PB_STAGE_GPU)
            run->gpu_stages[run->gpu_stage_count++] = inst;
        else
            run->consumer_stages[run->consumer_stage_count++] = inst;
        if (rc != PB_OK)
            return rc;
        in = out;
    }
    return PB_OK;
}

static int setup_run(struct run *run, const struct pb_spec *spec, const struct pb_dataset *ds,
                     struct pb_point_result *point, char *msg, size_t msglen)
{
    memset(run, 0, sizeof(*run));
    pthread_mutex_init(&run->error_lock, NULL);
    run->spec = spec;
    run->ds = ds;
    run->point = point;
    run->workers = (int)spec->loader.workers;
    run->prefetch_factor = (int)spec->loader.prefetch_factor;

    /* Worker-side stages first, then consumer-side ones. */
    bool seen_consumer = false;
    for (int i = 0; i < spec->stage_count; i++) {
        const struct pb_stage_ops *ops = spec->stages[i].ops;
        if (ops->unavailable_reason) {
            snprintf(msg, msglen, "stage '%s' is not available in this build: %s", ops->name,
                     ops->unavailable_reason);
            return PB_ERR_UNAVAILABLE;
        }
        if (ops->flags & PB_STAGE_TO_DEVICE) {
            continue; /* the boundary: CPU stages after it run before the copy */
        } else if (ops->flags & PB_STAGE_CONSUMER) {
            seen_consumer = true;
        } else {
            if (seen_consumer) {
                snprintf(msg, msglen,
                         "stage '%s' runs in the loader workers and cannot follow a "
                         "consumer-side stage",
                         ops->name);
                return PB_ERR_CONFIG;
            }
            run->worker_stage_spec[run->worker_stage_count++] = i;
        }
    }
    if (run->worker_stage_count == 0) {
        snprintf(msg, msglen, "the pipeline has no stage that runs in the loader workers");
        return PB_ERR_CONFIG;
    }

    int nworkers = run->workers > 0 ? run->workers : 1;
    run->worker = calloc((size_t)nworkers, sizeof(*run->worker));
    if (!run->worker)
        return PB_ERR_NOMEM;
    size_t batch = (size_t)spec->loader.batch_size;
    for (int i = 0; i < nworkers; i++) {
        struct worker *w = &run->worker[i];
        w->run = run;
        w->index = run->workers > 0 ? i : -1;
        int rc = init_stage_chain(run, w, w->index, msg, msglen);
        if (rc != PB_OK)
            return rc;
        w->hist = calloc((size_t)w->stage_count, sizeof(*w->hist));
        w->indices = calloc(batch, sizeof(*w->indices));
        w->seeds = calloc(batch, sizeof(*w->seeds));
        int grown = PB_OK;
        if (run->scratch_bytes) {
            grown |= grow_scratch(w, 0, run->scratch_bytes);
            grown |= grow_scratch(w, 1, run->scratch_bytes);
        }
        if (!w->hist || !w->indices || !w->seeds || grown != PB_OK) {
            snprintf(msg, msglen, "out of memory setting up worker %d", i);
            return PB_ERR_NOMEM;
        }
    }

    /* The batch pool: workers * prefetch_factor slots (one when loading in
     * the consumer), each batch_size samples of slot_bytes. */
    run->slot_count = run->workers > 0 ? run->workers * run->prefetch_factor : 1;
    if (run->slot_bytes == 0)
        run->slot_bytes = 1;
    char why[PB_MSG_MAX];
    if (spec->loader.pin_memory) {
        if (pb_gpu_available(why, sizeof(why)))
            run->pinned = true;
        else
            pb_point_warn(point, "loader.pin_memory is true but ignored: %s; batch buffers are "
                                 "pageable host memory",
                          why);
    }
    run->slots = calloc((size_t)run->slot_count, sizeof(*run->slots));
    if (!run->slots)
        return PB_ERR_NOMEM;
    size_t buffer_bytes = batch * run->slot_bytes;
    for (int i = 0; i < run->slot_count; i++) {
        run->slots[i].batch.data = alloc_batch_buffer(buffer_bytes, run->pinned);
        run->slots[i].batch.slot_bytes = run->slot_bytes;
        run->slots[i].batch.pinned = run->pinned;
        if (!run->slots[i].batch.data) {
            snprintf(msg, msglen, "cannot allocate %d batch buffers of %zu bytes%s", run->slot_count,
                     buffer_bytes, run->pinned ? " (pinned)" : "");
            return PB_ERR_NOMEM;
        }
    }
    run->pool_bytes = (uint64_t)run->slot_count * buffer_bytes;
    point->batch_pool_bytes = run->pool_bytes;
    point->pinned_bytes = run->pinned ? run->pool_bytes : 0;
    point->batch_bytes = buffer_bytes;
    for (int i = 0; i < run->slot_count; i++) {
        run->slots[i].batch.seeds = calloc(batch, sizeof(uint64_t));
        if (!run->slots[i].batch.seeds)
            return PB_ERR_NOMEM;
    }

    int rc = setup_consumer(run, spec, buffer_bytes, msg, msglen);
    if (rc != PB_OK)
        return rc;

    run->rss = calloc(MAX_RSS_SAMPLES, sizeof(*run->rss));
    if (!run->rss)
        return PB_ERR_NOMEM;
    return PB_OK;
}

/* ---- one repeat -------------------------------------------------------- */

struct window_state {
    double *throughput; /* samples/s per window */
    size_t count, cap;
    uint64_t start_ns, start_samples, start_batches;
};

static double relative_noise(const double *x, size_t n)
{
    if (n < 2)
        return INFINITY;
    double mean = 0, m2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = x[i] - mean;
        mean += d / (double)(i + 1);
        m2 += d * (x[i] - mean);
    }
    if (mean <= 0)
        return INFINITY;
    return sqrt(m2 / (double)(n - 1)) / mean;
}

static void reset_worker_stats(struct run *run)
{
    int nworkers = run->workers > 0 ? run->workers : 1;
    for (int i = 0; i < nworkers; i++) {
        struct worker *w = &run->worker[i];
        for (int k = 0; k < w->stage_count; k++) {
            pb_hist_init(&w->hist[k]);
            w->stage_cpu_ns[k] = 0;
            for (int i = 0; i < w->substage_count[k]; i++)
                pb_hist_init(&w->substage_hist[k][i]);
            memset(w->counters[k], 0, sizeof(w->counters[k]));
        }
        w->cpu_started = false;
        w->cpu_start_ns = w->cpu_end_ns = 0;
        pb_hist_init(&w->collate_hist);
        w->collate_cpu_ns = 0;
        atomic_store(&w->exit_cpu_ns, 0);
    }
}

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
    rep->batch_records[rep->batch_count++] = *rec;
    return PB_OK;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

/* ---- the device side --------------------------------------------------- */

static void gpu_acc_reset(struct gpu_acc *a)
{
    pb_hist_init(&a->copy_hist);
    pb_hist_init(&a->step_hist);
    for (int k = 0; k < PB_GPU_MAX_STAGES; k++)
        pb_hist_init(&a->stage_hist[k]);
    memset(&a->fig, 0, sizeof(a->fig));
    a->fig.used = true;
    a->iv_count = 0;
    a->oom = false;
}

static void gpu_harvest(void *user, const struct pb_gpu_batch_times *t)
{
    struct run *run = user;
    struct gpu_acc *a = &run->gpu_acc;
    if (!t->measured)
        return;
    pb_hist_add(&a->copy_hist, (uint64_t)t->copy_ns);
    pb_hist_add(&a->step_hist, (uint64_t)t->step_ns);
    a->fig.batches++;
    a->fig.copy_bytes += t->copy_bytes;
    a->fig.copy_ns += t->copy_ns;
    a->fig.step_ns += t->step_ns;
    for (int k = 0; k < run->gpu_stage_count; k++) {
        pb_hist_add(&a->stage_hist[k], (uint64_t)t->stage_ns[k]);
        a->fig.stage_ns += t->stage_ns[k];
    }
    /* Intervals for the overlap: grown by doubling, like batch records. */
    if (a->iv_count == a->iv_cap) {
        size_t next = a->iv_cap ? a->iv_cap * 2 : 4096;
        double *c = realloc(a->copy_iv, next * 2 * sizeof(double));
        if (c)
            a->copy_iv = c;
        double *k = c ? realloc(a->compute_iv, next * 2 * sizeof(double)) : NULL;
        if (k)
            a->compute_iv = k;
        if (!c || !k) {
            a->oom = true;
            return;
        }
        a->iv_cap = next;
    }
    a->copy_iv[2 * a->iv_count] = t->copy_begin_ns;
    a->copy_iv[2 * a->iv_count + 1] = t->copy_end_ns;
    a->compute_iv[2 * a->iv_count] = t->compute_begin_ns;
    a->compute_iv[2 * a->iv_count + 1] = t->compute_end_ns;
    a->iv_count++;
}

static int cmp_interval(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Copy time during which the compute stream was busy: copies against the
 * union of compute intervals (disjoint on one stream; sorted to be sure). */
static double gpu_overlap_ns(double *copy, double *compute, size_t n)
{
    qsort(copy, n, 2 * sizeof(double), cmp_interval);
    qsort(compute, n, 2 * sizeof(double), cmp_interval);
    double total = 0;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        double b = copy[2 * i], e = copy[2 * i + 1];
        while (j < n && compute[2 * j + 1] <= b)
            j++;
        for (size_t k = j; k < n && compute[2 * k] < e; k++) {
            double lo = b > compute[2 * k] ? b : compute[2 * k];
            double hi = e < compute[2 * k + 1] ? e : compute[2 * k + 1];
            if (hi > lo)
                total += hi - lo;
        }
    }
    return total;
}

/* One batch through the device: copy, GPU stages, step. */
static int gpu_batch(struct run *run, struct pb_slot *slot, bool measuring, uint64_t step_ns,
                     uint64_t *blocked_ns, uint64_t *copy_wait_ns, char *msg, size_t msglen)
{
    int rc = pb_gpu_loop_copy(run->gpu, &slot->batch, measuring, blocked_ns, msg, msglen);
    for (int k = 0; k < run->gpu_stage_count && rc == PB_OK; k++) {
        rc = pb_gpu_loop_stage_begin(run->gpu, k);
        if (rc == PB_OK)
            rc = run->gpu_stages[k].ops->process_batch(run->gpu_stages[k].state, &slot->batch,
                                                        msg, msglen);
        if (rc == PB_OK)
            rc = pb_gpu_loop_stage_end(run->gpu, k);
    }
    if (rc == PB_OK)
        rc = pb_gpu_loop_step(run->gpu, step_ns, copy_wait_ns, msg, msglen);
    return rc;
}

/* The repeat's device rows (to_device, GPU stages, step) and figures. */
static void gpu_repeat_result(struct run *run, struct pb_repeat_result *rep, double wall_s)
{
    struct gpu_acc *a = &run->gpu_acc;
    rep->gpu = a->fig;
    rep->gpu.wall_s = wall_s;
    if (!a->oom)
        rep->gpu.overlap_ns = gpu_overlap_ns(a->copy_iv, a->compute_iv, a->iv_count);
    pb_gpu_figures_ratios(&rep->gpu);
    size_t rows = (size_t)run->gpu_stage_count + 2;
    struct pb_stage_result *grown =
        realloc(rep->stages, (rep->stage_count + rows) * sizeof(*rep->stages));
    if (!grown)
        return;
    rep->stages = grown;
    struct pb_stage_result *r = rep->stages + rep->stage_count;
    memset(r, 0, rows * sizeof(*r));
    snprintf(r[0].name, sizeof(r[0].name), "to_device");
    r[0].hist = a->copy_hist;
    r[0].counter_count = 1;
    snprintf(r[0].counter_names[0], sizeof(r[0].counter_names[0]), "bytes");
    r[0].counters[0] = a->fig.copy_bytes;
    for (int k = 0; k < run->gpu_stage_count; k++) {
        snprintf(r[1 + k].name, sizeof(r[1 + k].name), "%s", run->gpu_stages[k].ops->name);
        r[1 + k].hist = a->stage_hist[k];
    }
    snprintf(r[rows - 1].name, sizeof(r[rows - 1].name), "step");
    r[rows - 1].hist = a->step_hist;
    double total = 0;
    for (size_t i = 0; i < rows; i++) {
        r[i].gpu = true;
        total += (double)r[i].hist.sum_ns;
    }
    for (size_t i = 0; i < rows; i++)
        r[i].share_pct = total > 0 ? 100.0 * (double)r[i].hist.sum_ns / total : 0;
    rep->stage_count += rows;
}

static int run_repeat(struct run *run, int repeat, bool stage_timing, struct pb_repeat_result *rep,
                      bool *interrupted, char *msg, size_t msglen)
{
    const struct pb_spec *spec = run->spec;
    const struct pb_run_spec *rs = &spec->run;
    memset(rep, 0, sizeof(*rep));
    *interrupted = false;

    /* Each repeat is a fresh iterator over the data with its own shuffle. */
    struct pb_dataset_spec ds_spec = spec->dataset;
    ds_spec.seed = (int64_t)(pb_mix64((uint64_t)spec->dataset.seed + (uint64_t)repeat) >> 2);
    int rc = pb_sampler_init(&run->sampler, run->ds->count, &ds_spec, spec->loader.batch_size,
                             spec->loader.drop_last, msg, msglen);
    if (rc != PB_OK)
        return rc;
    run->stage_timing = stage_timing;
    run->first_measured_seq = (uint64_t)rs->warmup_batches;
    atomic_store(&run->stop_workers, false);
    reset_worker_stats(run);

    double mhz_start = cpu_mhz_now();
    run->rss_count = 0;
    run->rss_peak_bytes = 0;
    atomic_store(&run->live_start_ns, 0);
    atomic_store(&run->live_samples, 0);
    run->repeat_start_ns = pb_now_ns();
    atomic_store(&run->sampler_stop, false);

    if (run->workers > 0) {
        rc = pb_queue_init(&run->queue, run->workers, run->prefetch_factor, run->slots);
        if (rc != PB_OK)
            return rc;
        run->queue_live = true;
    }
    if (run->gpu) {
        gpu_acc_reset(&run->gpu_acc);
        rc = pb_gpu_loop_begin(run->gpu, msg, msglen);
        if (rc != PB_OK) {
            if (run->queue_live) {
                pb_queue_destroy(&run->queue);
                run->queue_live = false;
            }
            return rc;
        }
    }
    pthread_create(&run->sampler_thread, NULL, sampler_main, run);
    int started = 0;
    for (int i = 0; i < run->workers; i++) {
        if (pthread_create(&run->worker[i].thread, NULL, worker_main, &run->worker[i]) != 0) {
            fail_run(run, PB_ERR, "cannot start loader worker threads");
            break;
        }
        started++;
        run->started_workers = started;
    }

    size_t windows_cap = (size_t)(rs->max_time_s / rs->window_s) + 16;
    struct window_state win = {.throughput = calloc(windows_cap, sizeof(double)),
                               .cap = windows_cap};
    size_t records_cap = 0;
    uint64_t step_ns = (uint64_t)(rs->step_ms * 1e6);
    uint64_t t_start = 0, t_end = 0, cpu_start = 0, cpu_end = 0;
    uint64_t loader_cpu_start = 0, loader_cpu_end = 0;
    uint64_t samples = 0, batches = 0, bytes_read = 0, errors = 0;
    uint64_t wait_total = 0, step_total = 0;
    /* The noise rule looks at the windows of the last min_time_s (at least
     * 3); it needs 3 windows in all, however slow the batches (a window
     * closes only after 2 batches, so with slow batches windows are longer
     * than window_s and fewer fit in min_time_s). */
    uint64_t noise_windows = (uint64_t)(rs->min_time_s / rs->window_s);
    if (noise_windows < 3)
        noise_windows = 3;
    const uint64_t min_windows = 3;
    bool measuring = false;
    double noise = INFINITY;

    for (uint64_t seq = 0;; seq++) {
        if (run->user_stop && *run->user_stop) {
            *interrupted = true;
            break;
        }
        if (!measuring && seq >= run->first_measured_seq) {
            measuring = true;
            t_start = pb_now_ns();
            atomic_store_explicit(&run->live_samples, 0, memory_order_relaxed);
            atomic_store_explicit(&run->live_start_ns, t_start, memory_order_relaxed);
            loader_cpu_start = loader_cpu_ns(run);
            cpu_start = process_cpu_ns();
            win.start_ns = t_start;
        }
        uint64_t t_wait0 = pb_now_ns();
        struct pb_slot *slot;
        uint32_t depth = 0;
        if (run->workers > 0) {
            slot = pb_queue_pop(&run->queue, spec->loader.in_order, seq, &depth);
        } else {
            slot = &run->slots[0];
            if (build_batch(&run->worker[0], seq, slot) != BATCH_BUILT)
                slot = NULL;
        }
        uint64_t t_wait1 = pb_now_ns();
        if (!slot)
            break; /* end of data, a failure, or an interrupt */

        for (int k = 0; k < run->consumer_stage_count && run->fatal_rc == PB_OK; k++) {
            char stage_msg[PB_MSG_MAX];
            int src = run->consumer_stages[k].ops->process_batch(run->consumer_stages[k].state,
                                                                 &slot->batch, stage_msg,
                                                                 sizeof(stage_msg));
            if (src != PB_OK)
                fail_run(run, src, stage_msg);
        }
        if (run->gpu && run->fatal_rc == PB_OK) {
            /* The step is a busy kernel on the device; the loop goes on
             * as soon as the batch's copy is done. */
            char gpu_msg[PB_MSG_MAX];
            uint64_t blocked = 0, copy_wait = 0;
            int grc = gpu_batch(run, slot, measuring, step_ns, &blocked, &copy_wait, gpu_msg,
                                sizeof(gpu_msg));
            if (grc != PB_OK)
                fail_run(run, grc, gpu_msg);
            if (measuring) {
                run->gpu_acc.fig.host_blocked_ns += blocked;
                run->gpu_acc.fig.copy_wait_ns += copy_wait;
            }
        } else if (step_ns) {
            sleep_ns(step_ns);
        }
        uint64_t t_done = pb_now_ns();

        if (measuring) {
            struct pb_batch_record rec = {
                .assembly_ns = slot->assembly_ns,
                .wait_ns = t_wait1 - t_wait0,
                .step_ns = t_done - t_wait1,
                .queue_depth = depth,
                .samples = slot->batch.samples,
            };
            if (push_batch_record(rep, &records_cap, &rec) != PB_OK)
                fail_run(run, PB_ERR_NOMEM, "out of memory recording batch timings");
            samples += slot->batch.samples;
            atomic_store_explicit(&run->live_samples, samples, memory_order_relaxed);
            batches++;
            bytes_read += slot->bytes_read;
            errors += slot->errors;
            wait_total += rec.wait_ns;
            step_total += step_ns;
            t_end = t_done;
        }
        if (run->workers > 0)
            pb_queue_release(&run->queue, slot);
        if (run->fatal_rc != PB_OK)
            break;
        if (!measuring)
            continue;

        /* Stopping rule: windowed throughput, closed at batch boundaries. */
        if (t_done - win.start_ns >= (uint64_t)(rs->window_s * 1e9) && batches - win.start_batches >= 2) {
            if (win.count < win.cap)
                win.throughput[win.count++] = (double)(samples - win.start_samples) * 1e9 /
                                              (double)(t_done - win.start_ns);
            win.start_ns = t_done;
            win.start_samples = samples;
            win.start_batches = batches;
        }
        double elapsed_s = (double)(t_done - t_start) / 1e9;
        size_t last = win.count < noise_windows ? win.count : (size_t)noise_windows;
        noise = relative_noise(win.throughput + (win.count - last), last);
        if (elapsed_s >= rs->min_time_s && samples >= (uint64_t)rs->min_samples &&
            win.count >= min_windows && noise <= rs->target_noise)
            break;
        if (elapsed_s >= rs->max_time_s) {
            rep->hit_time_cap = true;
            rep->noisy = !(noise <= rs->target_noise);
            break;
        }
    }

    /* CPU clocks are read before the workers are stopped: finishing the
     * batches they are building is not part of the measured part. */
    if (measuring) {
        loader_cpu_end = loader_cpu_ns(run);
        cpu_end = process_cpu_ns();
    }

    /* Batches still on the device are harvested (the measured ones among
     * them count in the device figures). */
    if (run->gpu) {
        char gpu_msg[PB_MSG_MAX];
        int grc = pb_gpu_loop_drain(run->gpu, gpu_msg, sizeof(gpu_msg));
        if (grc != PB_OK)
            fail_run(run, grc, gpu_msg);
    }

    /* Tear down: stop workers, collect their measurements. */
    atomic_store(&run->stop_workers, true);
    if (run->workers > 0)
        pb_queue_close(&run->queue);
    for (int i = 0; i < started; i++)
        pthread_join(run->worker[i].thread, NULL);
    run->started_workers = 0;
    atomic_store(&run->sampler_stop, true);
    pthread_join(run->sampler_thread, NULL);
    if (run->workers > 0) {
        pb_queue_destroy(&run->queue);
        run->queue_live = false;
    }
    double mhz_end = cpu_mhz_now();
    if (mhz_start > 0 && mhz_end > 0 && fabs(mhz_end - mhz_start) > 0.1 * mhz_start)
        pb_point_warn(run->point,
                      "the CPU clock changed during a repeat (%.0f to %.0f MHz): power management "
                      "or throttling shifts the numbers",
                      mhz_start, mhz_end);

    if (!measuring || t_end <= t_start) {
        free(win.throughput);
        if (run->fatal_rc != PB_OK) {
            snprintf(msg, msglen, "%s", run->fatal_msg);
            return run->fatal_rc;
        }
        if (*interrupted)
            return PB_ERR_INTERRUPTED;
        snprintf(msg, msglen,
                 "the data ran out during warm-up (%llu batches): lower run.warmup_batches or "
                 "raise dataset.epochs",
                 (unsigned long long)rs->warmup_batches);
        return PB_ERR_CONFIG;
    }

    double wall_s = (double)(t_end - t_start) / 1e9;
    rep->wall_s = wall_s;
    rep->samples = samples;
    rep->batches = batches;
    rep->bytes_read = bytes_read;
    rep->errors = errors;
    rep->samples_per_s = (double)samples / wall_s;
    rep->batches_per_s = (double)batches / wall_s;
    rep->mb_per_s = (double)bytes_read / 1e6 / wall_s;
    rep->stall_pct = 100.0 * (double)wait_total / (double)(t_end - t_start);
    rep->accel_util_pct = step_ns ? 100.0 * (double)step_total / (double)(t_end - t_start) : 0;

    rep->cpu_util_pct = 100.0 * (double)(cpu_end - cpu_start) / (double)(t_end - t_start);
    rep->window_noise = isfinite(noise) ? noise : 0;
    rep->interrupted = *interrupted;
    if (!rep->hit_time_cap && !*interrupted && win.count < min_windows)
        rep->noisy = false; /* data ran out before the noise rule could apply */

    int nworkers = run->workers > 0 ? run->workers : 1;
    uint64_t worker_cpu = loader_cpu_end > loader_cpu_start ? loader_cpu_end - loader_cpu_start : 0;
    rep->worker_cpu_pct = 100.0 * (double)worker_cpu / ((double)nworkers * (double)(t_end - t_start));

    rep->rss_peak_bytes = run->rss_peak_bytes;
    rep->rss = malloc((run->rss_count ? run->rss_count : 1) * sizeof(*rep->rss));
    if (rep->rss) {
        memcpy(rep->rss, run->rss, run->rss_count * sizeof(*rep->rss));
        rep->rss_count = run->rss_count;
    }

    /* Stage measurements, merged over workers: each pipeline stage, then
     * its decoder's sub-stages as rows of their own. */
    if (stage_timing) {
        const struct worker *w0 = &run->worker[0];
        size_t rows = 1; /* collate */
        for (int k = 0; k < w0->stage_count; k++)
            rows += 1 + (size_t)w0->substage_count[k];
        rep->stages = calloc(rows, sizeof(*rep->stages));
        if (rep->stages) {
            size_t row = 0;
            uint64_t total_ns = 0;
            for (int k = 0; k < w0->stage_count; k++) {
                struct pb_stage_result *sr = &rep->stages[row++];
                const char *name = w0->stages[k].ops->name;
                snprintf(sr->name, sizeof(sr->name), "%s", name);
                pb_hist_init(&sr->hist);
                for (int i = 0; i < nworkers; i++) {
                    pb_hist_merge(&sr->hist, &run->worker[i].hist[k]);
                    sr->cpu_ns += run->worker[i].stage_cpu_ns[k];
                    for (int c = 0; c < w0->counter_count[k]; c++)
                        sr->counters[c] += run->worker[i].counters[k][c];
                }
                sr->counter_count = w0->counter_count[k] < PB_STAGE_COUNTERS
                                        ? w0->counter_count[k]
                                        : PB_STAGE_COUNTERS;
                for (int c = 0; c < sr->counter_count; c++)
                    pb_strlcpy(sr->counter_names[c], w0->decoder[k]->counters[c],
                               sizeof(sr->counter_names[c]));
                total_ns += sr->hist.sum_ns;
                for (int j = 0; j < w0->substage_count[k]; j++) {
                    struct pb_stage_result *sub = &rep->stages[row++];
                    snprintf(sub->name, sizeof(sub->name), "%.30s.%.30s", name,
                             w0->decoder[k]->substages[j]);
                    snprintf(sub->parent, sizeof(sub->parent), "%s", name);
                    pb_hist_init(&sub->hist);
                    for (int i = 0; i < nworkers; i++)
                        pb_hist_merge(&sub->hist, &run->worker[i].substage_hist[k][j]);
                }
            }
            struct pb_stage_result *collate = &rep->stages[row++];
            snprintf(collate->name, sizeof(collate->name), "collate");
            pb_hist_init(&collate->hist);
            for (int i = 0; i < nworkers; i++) {
                pb_hist_merge(&collate->hist, &run->worker[i].collate_hist);
                collate->cpu_ns += run->worker[i].collate_cpu_ns;
            }
            total_ns += collate->hist.sum_ns;
            rep->stage_count = row;
            for (size_t k = 0; k < row; k++)
                rep->stages[k].share_pct =
                    total_ns ? 100.0 * (double)rep->stages[k].hist.sum_ns / (double)total_ns : 0;
        }
    }
    if (run->gpu) {
        gpu_repeat_result(run, rep, wall_s);
        /* The step ran on the device: its utilization is kernel time. */
        rep->accel_util_pct = step_ns ? 100.0 * rep->gpu.step_ns / (wall_s * 1e9) : 0;
    }
    free(win.throughput);

    if (run->fatal_rc != PB_OK) {
        snprintf(msg, msglen, "%s", run->fatal_msg);
        return run->fatal_rc;
    }
    return *interrupted ? PB_ERR_INTERRUPTED : PB_OK;
}

/* ---- a point ------------------------------------------------------------ */


struct pb_point_run {
    struct run run;
    const struct pb_run_hooks *hooks;
};

/* Device memory and clocks after a repeat; warns when the SM clock fell or
 * NVML reports a slowdown (power cap, thermal), as results shift then. */
static void note_gpu_device(struct pb_point_result *point)
{
    struct pb_gpu_device *d = &point->gpu_device;
    uint64_t used = pb_gpu_mem_used();
    if (used > d->used_after_bytes)
        d->used_after_bytes = used;
    d->alloc_peak_bytes = pb_gpu_alloc_peak();
    struct pb_gpu_clocks clocks;
    if (pb_gpu_clocks_read(0, &clocks) != 0)
        return;
    d->sm_mhz_end = clocks.sm_mhz;
    snprintf(d->throttle, sizeof(d->throttle), "%s", clocks.throttle_text);
    if (clocks.throttle_text[0])
        pb_point_warn(point, "the GPU was slowed down during the run (%s): its figures are "
                             "lower than the card can give",
                      clocks.throttle_text);
    else if (d->sm_mhz_start && clocks.sm_mhz < 0.9 * d->sm_mhz_start)
        pb_point_warn(point, "the GPU's SM clock fell from %u to %u MHz during the run",
                      d->sm_mhz_start, clocks.sm_mhz);
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
    if (pb_spec_uses_gpu(spec) && point->gpu_device.sm_mhz_start == 0) {
        struct pb_gpu_clocks clocks;
        point->gpu_device.used_before_bytes = pb_gpu_mem_used();
        if (pb_gpu_clocks_read(0, &clocks) == 0) {
            point->gpu_device.sm_mhz_start = clocks.sm_mhz;
            point->gpu_device.sm_mhz_max = clocks.max_sm_mhz;
        }
    }
    int rc = setup_run(&pr->run, spec, ds, point, msg, msglen);
    if (rc != PB_OK) {
        free_run(&pr->run);
        free(pr);
        return rc;
    }
    pr->hooks = hooks;
    pr->run.hooks = hooks;
    pr->run.user_stop = hooks ? hooks->stop : NULL;

    long pus = sysconf(_SC_NPROCESSORS_ONLN);
    if (spec->loader.workers > pus && pus > 0)
        pb_point_warn(point,
                      "loader.workers (%lld) exceeds the %ld hardware threads: workers share cores",
                      (long long)spec->loader.workers, pus);
    uint64_t available = mem_available_bytes();
    if (available && ds->total_bytes < available)
        pb_point_warn(point,
                      "the dataset (%.1f MiB) fits in the page cache: after the first read, files "
                      "come from memory, not storage",
                      (double)ds->total_bytes / 1048576.0);
    point->batch_pool_bytes = pr->run.pool_bytes;
    point->pinned_bytes = pr->run.pinned ? pr->run.pool_bytes : 0;
    *out = pr;
    return PB_OK;
}

int pb_point_repeat(struct pb_point_run *pr, int repeat, bool measure_overhead,
                    double *overhead_pct, char *msg, size_t msglen)
{
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
    int rc = run_repeat(run, repeat, spec->run.stage_timing, rep, &interrupted, msg, msglen);
    if (run->gpu)
        note_gpu_device(point);
    if (rep->wall_s > 0) {
        point->repeat_count++;
        if (pr->hooks && pr->hooks->progress)
            pr->hooks->progress(pr->hooks->user, repeat, repeats, rep);
    } else {
        free(rep->batch_records);
        free(rep->rss);
        free(rep->stages);
        memset(rep, 0, sizeof(*rep));
    }
    if (rc != PB_OK || !measure_overhead)
        return rc;
    /* The same round with stage timing flipped, right after, so drift in
     * machine speed hits both alike. */
    struct pb_repeat_result other;
    rc = run_repeat(run, repeat, !spec->run.stage_timing, &other, &interrupted, msg, msglen);
    if (rc == PB_OK && other.samples_per_s > 0 && overhead_pct) {
        double timed = spec->run.stage_timing ? rep->samples_per_s : other.samples_per_s;
        double untimed = spec->run.stage_timing ? other.samples_per_s : rep->samples_per_s;
        *overhead_pct = 100.0 * (untimed - timed) / untimed;
    }
    free(other.batch_records);
    free(other.rss);
    free(other.stages);
    return rc;
}

void pb_point_close(struct pb_point_run *pr)
{
    if (!pr)
        return;
    free_run(&pr->run);
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
