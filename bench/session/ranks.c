/* The ranks of a multi-rank run measure each repeat together (see
 * ranks.h): rank 0's stopping rule stops every rank, rank 0 gathers every
 * rank's repeat and keeps the per-rank figures for the point. */
#include "bench/session/ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/result/metrics.h"
#include "bench/sys/mpi.h"

int pb_ranks_apply_shard(struct pb_dataset_spec *ds, const char *config_path, char *msg,
                       size_t msglen)
{
    if (!pb_mpi()->active || pb_mpi()->size < 2)
        return PB_OK;
    if (ds->shard.count != 1 || ds->shard.rank != 0) {
        snprintf(msg, msglen,
                 "%s: dataset.shard is %lld/%lld, but under mpirun each rank takes shard "
                 "rank/ranks by itself: leave dataset.shard out of the config",
                 config_path, (long long)ds->shard.rank, (long long)ds->shard.count);
        return PB_ERR_CONFIG;
    }
    ds->shard.rank = pb_mpi()->rank;
    ds->shard.count = pb_mpi()->size;
    return PB_OK;
}

#if PB_HAVE_MPI

#include <mpi.h>

/* What rank 0 sends back when a rank differs: which one, from where. */
struct disagreement {
    int32_t rank; /* -1: all agree */
    uint64_t theirs;
    char host[64];
};

int pb_ranks_agree(uint64_t fingerprint, const char *config_path, char *msg, size_t msglen)
{
    const struct pb_mpi_info *job = pb_mpi();
    if (!job->active || job->size < 2)
        return PB_OK;
    struct {
        uint64_t fingerprint;
        char host[64];
    } mine = {.fingerprint = fingerprint}, *all = NULL;
    pb_strlcpy(mine.host, job->host, sizeof(mine.host));
    if (job->rank == 0 && !(all = calloc((size_t)job->size, sizeof(*all))))
        pb_mpi_abort(PB_EXIT_ERROR, "out of memory checking the ranks' configs");
    MPI_Request req;
    MPI_Igather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE, 0,
                MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
    struct disagreement d = {.rank = -1, .theirs = fingerprint};
    for (int k = 1; all && k < job->size && d.rank < 0; k++)
        if (all[k].fingerprint != all[0].fingerprint) {
            d.rank = k;
            d.theirs = all[k].fingerprint;
            pb_strlcpy(d.host, all[k].host, sizeof(d.host));
        }
    free(all);
    uint64_t first = fingerprint;
    MPI_Ibcast(&first, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
    MPI_Ibcast(&d, (int)sizeof(d), MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
    if (d.rank < 0)
        return PB_OK;
    snprintf(msg, msglen,
             "%s: rank %d (on %s) would measure another config than rank 0: fingerprint %016llx "
             "against rank 0's %016llx; every rank must run the same config with the same -s "
             "and -a",
             config_path, (int)d.rank, d.host, (unsigned long long)d.theirs,
             (unsigned long long)first);
    return PB_ERR_CONFIG;
}

/* One rank's repeat as rank 0 gathers it: plain bytes, the same layout on
 * every rank of a job (one pbench binary). */
struct rank_repeat {
    int32_t kept, interrupted, stage_count, shard_rank, shard_count, online_cpus;
    uint64_t samples, batches, bytes_read, errors, rss_peak_bytes;
    double wall_s, samples_per_s, batches_per_s, mb_per_s, stall_pct, accel_util_pct;
    double cpu_util_pct, worker_cpu_pct, barrier_ms, other_cpu_pct, steal_pct;
    /* The dataset in this rank's node's page cache at the repeat's start
     * (each node has its own), over files_checked files (0: not measured). */
    double page_cache_resident_pct;
    uint64_t page_cache_files_checked;
    char host[64];
    char cpusets[160]; /* loader.affinity: "loop 0; worker 0 1; ...", or "" */
    double metric[PB_METRIC_COUNT]; /* the comparable metrics, by table row */
};

/* What rank 0 keeps of every rank's repeats, for the point's rank list. */
struct logged {
    long point;
    size_t repeat; /* index into the point's repeats */
    int rank;
    struct rank_repeat rec;
};

static struct {
    struct logged *entries;
    size_t count, cap;
    /* Rank 0's start barrier, wait for the last rank to stop, and gather
     * per logged repeat, by point. */
    double (*sync_ms)[3];
    long *sync_point;
    size_t sync_count, sync_cap;
} kept_log;

/* ---- one repeat ---------------------------------------------------------- */

/* The stop broadcaster: rank 0 waits for its measured part to end and
 * sends why; every other rank receives it and raises group_done. */
static void *broadcast_stop(void *arg)
{
    struct pb_ranks_repeat *r = arg;
    const struct timespec nap = {0, 500000};
    if (r->group.decides) {
        while (!atomic_load(&r->group.local_done))
            nanosleep(&nap, NULL);
        r->reason = atomic_load(&r->group.local_reason);
    }
    MPI_Request req;
    MPI_Ibcast(&r->reason, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
    atomic_store(&r->group.group_reason, r->reason);
    atomic_store(&r->group.group_done, true);
    return NULL;
}

void pb_ranks_repeat_begin(struct pb_ranks_repeat *r, struct pb_run_group **group)
{
    memset(r, 0, sizeof(*r));
    *group = NULL;
    if (!pb_mpi()->active)
        return;
    uint64_t t0 = pb_now_ns();
    pb_mpi_barrier();
    r->barrier_ns = pb_now_ns() - t0;
    r->group.decides = pb_mpi()->rank == 0;
    atomic_init(&r->group.local_done, false);
    atomic_init(&r->group.group_done, false);
    atomic_init(&r->group.group_reason, PB_STOP_NONE);
    atomic_init(&r->group.local_reason, PB_STOP_FAILED); /* a repeat that never measured */
    if (pthread_create(&r->thread, NULL, broadcast_stop, r) != 0)
        pb_mpi_abort(PB_EXIT_ERROR, "cannot start the thread that stops repeats together");
    r->thread_live = true;
    *group = &r->group;
}

/* "loop 0; worker 0 1; worker 1 0-3": the CPU sets of the point's
 * placement (point->affinity), cut at the buffer's end with "...". */
static void placement_text(const json_t *affinity, char *buf, size_t buflen)
{
    size_t used = 0, i;
    const json_t *t;
    buf[0] = '\0';
    json_array_foreach(json_object_get(affinity, "threads"), i, t)
    {
        const char *name = json_string_value(json_object_get(t, "thread"));
        const char *set = json_string_value(json_object_get(t, "cpuset"));
        int n = snprintf(buf + used, buflen - used, "%s%s %s", i ? "; " : "", name ? name : "?",
                         set ? set : "?");
        if (n < 0 || (size_t)n >= buflen - used) {
            if (buflen > 4)
                memcpy(buf + buflen - 4, "...", 4);
            return;
        }
        used += (size_t)n;
    }
}

/* This rank's repeat as a record (the kept one, or an empty one). */
static void describe(const struct pb_point_result *point, size_t kept_before, bool interrupted,
                     const struct pb_ranks_repeat *r, struct rank_repeat *rec)
{
    memset(rec, 0, sizeof(*rec));
    rec->interrupted = interrupted;
    rec->barrier_ms = (double)r->barrier_ns / 1e6;
    pb_strlcpy(rec->host, pb_mpi()->host, sizeof(rec->host));
    placement_text(point->affinity, rec->cpusets, sizeof(rec->cpusets));
    rec->shard_rank = pb_mpi()->rank;
    rec->shard_count = pb_mpi()->size;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    rec->online_cpus = cpus > 0 ? (int32_t)cpus : 1;
    if (point->repeat_count <= kept_before)
        return;
    const struct pb_repeat_result *rep = &point->repeats[point->repeat_count - 1];
    rec->kept = 1;
    rec->stage_count = (int32_t)rep->stage_count;
    rec->samples = rep->samples;
    rec->batches = rep->batches;
    rec->bytes_read = rep->bytes_read;
    rec->errors = rep->errors;
    rec->rss_peak_bytes = rep->rss_peak_bytes;
    rec->wall_s = rep->wall_s;
    rec->samples_per_s = rep->samples_per_s;
    rec->batches_per_s = rep->batches_per_s;
    rec->mb_per_s = rep->mb_per_s;
    rec->stall_pct = rep->stall_pct;
    rec->accel_util_pct = rep->accel_util_pct;
    rec->cpu_util_pct = rep->cpu_util_pct;
    rec->worker_cpu_pct = rep->worker_cpu_pct;
    rec->other_cpu_pct = rep->other_cpu_pct;
    rec->steal_pct = rep->steal_pct;
    rec->page_cache_resident_pct = rep->page_cache_resident_pct;
    rec->page_cache_files_checked = rep->page_cache_files_checked;
    for (int m = 0; m < PB_METRIC_COUNT; m++)
        rec->metric[m] = pb_metrics[m].of_repeat(rep);
}

/* Rank k's other_cpu_pct less the ranks of this job on its host: to each
 * rank the others are "other processes", but not to the job. */
static double other_than_job(const struct rank_repeat *recs, int k)
{
    double job = 0;
    for (int j = 0; j < pb_mpi()->size; j++)
        if (j != k && recs[j].kept && strcmp(recs[j].host, recs[k].host) == 0)
            job += recs[j].cpu_util_pct / recs[k].online_cpus;
    double other = recs[k].other_cpu_pct - job;
    return other > 0 ? other : 0;
}

/* Every other rank's stage rows merged into rank 0's, by stage name. */
static void merge_stage_rows(struct pb_repeat_result *sum, const struct pb_stage_result *rows,
                             const int *row_counts)
{
    size_t at = (size_t)row_counts[0];
    for (int k = 1; k < pb_mpi()->size; k++) {
        for (int i = 0; i < row_counts[k]; i++, at++) {
            for (size_t j = 0; j < sum->stage_count; j++) {
                struct pb_stage_result *mine = &sum->stages[j];
                if (strcmp(mine->name, rows[at].name) != 0)
                    continue;
                pb_hist_merge(&mine->hist, &rows[at].hist);
                mine->cpu_ns += rows[at].cpu_ns;
                for (int c = 0; c < mine->counter_count && c < PB_STAGE_COUNTERS; c++)
                    mine->counters[c] += rows[at].counters[c];
            }
        }
    }
}

/* The page cache residency of the job: the mean over the ranks that
 * measured it, each on its own node's page cache (rank 0's alone would
 * call a job "read from memory" whose other nodes read from storage); the
 * files checked, the most any rank checked. */
static void aggregate_residency(struct pb_repeat_result *sum, const struct rank_repeat *recs)
{
    double resident = 0;
    uint64_t checked = 0;
    int measured = 0;
    for (int k = 0; k < pb_mpi()->size; k++) {
        if (!recs[k].kept || !recs[k].page_cache_files_checked)
            continue;
        resident += recs[k].page_cache_resident_pct;
        if (recs[k].page_cache_files_checked > checked)
            checked = recs[k].page_cache_files_checked;
        measured++;
    }
    sum->page_cache_resident_pct = measured ? resident / measured : 0;
    sum->page_cache_files_checked = checked;
}

/* Rank 0's repeat becomes the aggregate of every rank's kept one: counts
 * and rates summed (the ranks measured the same span, started by a
 * barrier and stopped by one decision), utilizations and worker CPU the
 * mean over ranks, process CPU summed (the job's), other processes' CPU
 * the mean over ranks of what is not this job's, page cache residency the
 * mean over the ranks' nodes, the comparable metrics as their table row
 * says (bench/result/metrics.h), stage histograms merged by addition. */
static void aggregate(struct pb_repeat_result *rep, const struct rank_repeat *recs,
                      const struct pb_stage_result *rows, const int *row_counts)
{
    struct pb_repeat_result sum = *rep;
    int kept = 0;
    double metric[PB_METRIC_COUNT] = {0};
    sum.samples = sum.batches = sum.bytes_read = sum.errors = 0;
    sum.batches_per_s = sum.mb_per_s = 0;
    sum.accel_util_pct = sum.cpu_util_pct = sum.worker_cpu_pct = 0;
    sum.other_cpu_pct = sum.steal_pct = 0;
    for (int k = 0; k < pb_mpi()->size; k++) {
        const struct rank_repeat *x = &recs[k];
        if (!x->kept)
            continue;
        kept++;
        sum.samples += x->samples;
        sum.batches += x->batches;
        sum.bytes_read += x->bytes_read;
        sum.errors += x->errors;
        sum.batches_per_s += x->batches_per_s;
        sum.mb_per_s += x->mb_per_s;
        sum.cpu_util_pct += x->cpu_util_pct;
        sum.accel_util_pct += x->accel_util_pct;
        sum.worker_cpu_pct += x->worker_cpu_pct;
        sum.other_cpu_pct += other_than_job(recs, k);
        sum.steal_pct += x->steal_pct;
        for (int m = 0; m < PB_METRIC_COUNT; m++)
            metric[m] += x->metric[m];
    }
    if (kept > 0) {
        sum.other_cpu_pct /= kept;
        sum.steal_pct /= kept;
        sum.accel_util_pct /= kept;
        sum.worker_cpu_pct /= kept;
    }
    for (int m = 0; m < PB_METRIC_COUNT && kept > 0; m++) {
        const struct pb_metric *row = &pb_metrics[m];
        if (row->to_repeat && row->ranks != PB_RANKS_ROOT)
            row->to_repeat(&sum, row->ranks == PB_RANKS_MEAN ? metric[m] / kept : metric[m]);
    }
    aggregate_residency(&sum, recs);
    merge_stage_rows(&sum, rows, row_counts);
    *rep = sum;
}

static bool log_append(long point_index, size_t repeat, int rank, const struct rank_repeat *rec)
{
    if (kept_log.count == kept_log.cap) {
        size_t cap = kept_log.cap ? 2 * kept_log.cap : 64;
        struct logged *grown = realloc(kept_log.entries, cap * sizeof(*grown));
        if (!grown)
            return false;
        kept_log.entries = grown;
        kept_log.cap = cap;
    }
    kept_log.entries[kept_log.count++] =
        (struct logged){.point = point_index, .repeat = repeat, .rank = rank, .rec = *rec};
    return true;
}

static void log_sync(long point_index, double barrier_ms, double stop_wait_ms, double gather_ms)
{
    if (kept_log.sync_count == kept_log.sync_cap) {
        size_t cap = kept_log.sync_cap ? 2 * kept_log.sync_cap : 64;
        double(*ms_grown)[3] = realloc(kept_log.sync_ms, cap * sizeof(*ms_grown));
        if (ms_grown)
            kept_log.sync_ms = ms_grown;
        long *points_grown = realloc(kept_log.sync_point, cap * sizeof(long));
        if (points_grown)
            kept_log.sync_point = points_grown;
        if (!ms_grown || !points_grown)
            return;
        kept_log.sync_cap = cap;
    }
    kept_log.sync_ms[kept_log.sync_count][0] = barrier_ms;
    kept_log.sync_ms[kept_log.sync_count][1] = stop_wait_ms;
    kept_log.sync_ms[kept_log.sync_count][2] = gather_ms;
    kept_log.sync_point[kept_log.sync_count++] = point_index;
}

/* Every rank's record and stage rows onto rank 0 (recs and rows are
 * allocated there, NULL elsewhere). */
static void gather(const struct rank_repeat *mine, const struct pb_repeat_result *rep,
                   struct rank_repeat **recs, struct pb_stage_result **rows, int **row_counts)
{
    bool root = pb_mpi()->rank == 0;
    *recs = NULL;
    *rows = NULL;
    *row_counts = NULL;
    if (root) {
        *recs = calloc((size_t)pb_mpi()->size, sizeof(**recs));
        *row_counts = calloc((size_t)pb_mpi()->size, sizeof(int));
        if (!*recs || !*row_counts)
            pb_mpi_abort(PB_EXIT_ERROR, "out of memory gathering the ranks' repeats");
    }
    MPI_Request req;
    MPI_Igather(mine, (int)sizeof(*mine), MPI_BYTE, *recs, (int)sizeof(*mine), MPI_BYTE, 0,
                MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
    int row_bytes = (int)sizeof(struct pb_stage_result);
    int *displs = NULL, *byte_counts = NULL;
    size_t total = 0;
    if (root) {
        displs = calloc((size_t)pb_mpi()->size, sizeof(int));
        byte_counts = calloc((size_t)pb_mpi()->size, sizeof(int));
        for (int k = 0; k < pb_mpi()->size; k++) {
            (*row_counts)[k] = (*recs)[k].stage_count;
            total += (size_t)(*recs)[k].stage_count;
        }
        *rows = calloc(total ? total : 1, sizeof(**rows));
        if (!displs || !byte_counts || !*rows)
            pb_mpi_abort(PB_EXIT_ERROR, "out of memory gathering the ranks' stage rows");
        for (int k = 0, at = 0; k < pb_mpi()->size; k++) {
            byte_counts[k] = (*row_counts)[k] * row_bytes;
            displs[k] = at;
            at += byte_counts[k];
        }
    }
    MPI_Igatherv(mine->stage_count ? rep->stages : NULL, mine->stage_count * row_bytes, MPI_BYTE,
                 *rows, byte_counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
    free(displs);
    free(byte_counts);
}

/* How many of each point's warnings this rank has sent rank 0 already. */
static struct {
    int *count; /* by point index */
    size_t cap;
} sent_warnings;

static int *sent_warning_count(long point_index)
{
    size_t need = (size_t)point_index + 1;
    if (need > sent_warnings.cap) {
        int *grown = realloc(sent_warnings.count, need * sizeof(int));
        if (!grown)
            return NULL;
        memset(grown + sent_warnings.cap, 0, (need - sent_warnings.cap) * sizeof(int));
        sent_warnings.count = grown;
        sent_warnings.cap = need;
    }
    return &sent_warnings.count[point_index];
}

/* Whether a warning of the point already says text (rank 0's own, or one
 * another rank sent first). */
static bool already_said(const struct pb_point_result *point, const char *text)
{
    for (int i = 0; i < point->warning_count; i++)
        if (strstr(point->warnings[i], text))
            return true;
    return false;
}

/* The point's warnings that the other ranks gave since they last sent
 * them, onto rank 0's point as "rank R on HOST: ...": what a node sees of
 * its own (its page cache that would not empty, its file system refusing
 * O_DIRECT) is in the one result, once, by the first rank that said it. */
static void gather_warnings(long point_index, struct pb_point_result *point,
                            const struct rank_repeat *recs)
{
    enum { TEXT = sizeof(point->warnings[0]) };
    bool root = pb_mpi()->rank == 0;
    int *sent = sent_warning_count(point_index);
    int from = sent && *sent < point->warning_count ? *sent : point->warning_count;
    int bytes = root ? 0 : (point->warning_count - from) * (int)TEXT;
    int *counts = NULL, *displs = NULL, total = 0;
    char *texts = NULL;
    if (root && (!(counts = calloc((size_t)pb_mpi()->size, sizeof(int))) ||
                 !(displs = calloc((size_t)pb_mpi()->size, sizeof(int)))))
        pb_mpi_abort(PB_EXIT_ERROR, "out of memory gathering the ranks' warnings");
    MPI_Request req;
    MPI_Igather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
    for (int k = 0; root && k < pb_mpi()->size; k++) {
        displs[k] = total;
        total += counts[k];
    }
    if (root && !(texts = malloc(total ? (size_t)total : 1)))
        pb_mpi_abort(PB_EXIT_ERROR, "out of memory gathering the ranks' warnings");
    MPI_Igatherv(bytes ? point->warnings[from] : NULL, bytes, MPI_BYTE, texts, counts, displs,
                 MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
    if (sent)
        *sent = point->warning_count;
    for (int k = 1; root && k < pb_mpi()->size; k++)
        for (int at = displs[k]; at < displs[k] + counts[k]; at += (int)TEXT) {
            char *text = texts + at;
            text[TEXT - 1] = '\0';
            if (!already_said(point, text))
                pb_point_warn(point, "rank %d on %s: %s", k, recs[k].host, text);
        }
    free(counts);
    free(displs);
    free(texts);
}

bool pb_ranks_repeat_end(struct pb_ranks_repeat *r, long point_index, int rc, const char *msg,
                       struct pb_point_result *point, size_t kept_before)
{
    if (!pb_mpi()->active)
        return true;
    if (rc != PB_OK && rc != PB_ERR_INTERRUPTED)
        pb_mpi_abort(rc == PB_ERR_CONFIG ? PB_EXIT_USAGE : PB_EXIT_ERROR, msg);
    atomic_store(&r->group.local_done, true); /* a repeat that never measured */
    if (r->thread_live)
        pthread_join(r->thread, NULL);
    r->thread_live = false;

    /* The last rank to stop finishes the batch in hand first: waited for
     * here, so that the gather below times the communication alone. */
    uint64_t t0 = pb_now_ns();
    pb_mpi_barrier();
    uint64_t t1 = pb_now_ns();
    struct rank_repeat mine, *recs;
    struct pb_stage_result *rows;
    int *row_counts;
    describe(point, kept_before, rc == PB_ERR_INTERRUPTED, r, &mine);
    const struct pb_repeat_result *rep =
        mine.kept ? &point->repeats[point->repeat_count - 1] : NULL;
    gather(&mine, rep, &recs, &rows, &row_counts);
    int go_on = 1;
    if (pb_mpi()->rank == 0) {
        for (int k = 0; k < pb_mpi()->size; k++) {
            go_on &= !recs[k].interrupted;
            if (recs[k].kept && mine.kept &&
                !log_append(point_index, point->repeat_count - 1, k, &recs[k]))
                pb_mpi_abort(PB_EXIT_ERROR, "out of memory keeping the ranks' repeats");
        }
        if (mine.kept)
            aggregate(&point->repeats[point->repeat_count - 1], recs, rows, row_counts);
    }
    gather_warnings(point_index, point, recs);
    free(recs);
    free(rows);
    free(row_counts);
    MPI_Request req;
    MPI_Ibcast(&go_on, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    pb_mpi_wait(&req);
    if (pb_mpi()->rank == 0 && mine.kept)
        log_sync(point_index, (double)r->barrier_ns / 1e6, (double)(t1 - t0) / 1e6,
                 (double)(pb_now_ns() - t1) / 1e6);
    return go_on != 0;
}

/* ---- the point's rank list --------------------------------------------- */

/* One rank's figures over the point's finished repeats. */
struct rank_figures {
    bool seen;
    char host[64];
    char cpusets[160];
    int shard_rank, shard_count;
    int repeats;
    uint64_t samples, rss_peak_bytes;
    double rate_sum, stall_sum, worker_cpu_sum, cpu_sum, barrier_ms_sum;
    double resident_sum; /* over the resident_repeats that measured it */
    int resident_repeats;
};

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median and max over the point's repeats of rank 0's start barrier, wait
 * for the last rank to stop, gather (with the go-on broadcast) and their
 * sum, as "<what>_ms_median" and "<what>_ms_max" in obj. */
static void sync_figures(long point_index, json_t *obj)
{
    static const char *const names[] = {"barrier", "stop_wait", "gather", "sync"};
    size_t n = 0, stride = kept_log.sync_count + 1;
    double *values = calloc(4 * stride, sizeof(double));
    if (!values)
        return;
    for (size_t i = 0; i < kept_log.sync_count; i++) {
        if (kept_log.sync_point[i] != point_index)
            continue;
        const double *ms = kept_log.sync_ms[i];
        for (int k = 0; k < 3; k++)
            values[(size_t)k * stride + n] = ms[k];
        values[3 * stride + n] = ms[0] + ms[1] + ms[2];
        n++;
    }
    for (int k = 0; k < 4; k++) {
        double *v = values + (size_t)k * stride;
        char key[32];
        if (n > 0)
            qsort(v, n, sizeof(double), compare_doubles);
        snprintf(key, sizeof(key), "%s_ms_median", names[k]);
        json_object_set_new(obj, key, json_real(n ? v[n / 2] : 0));
        snprintf(key, sizeof(key), "%s_ms_max", names[k]);
        json_object_set_new(obj, key, json_real(n ? v[n - 1] : 0));
    }
    free(values);
}

/* Every rank's figures over the point's finished repeats into fig (one per
 * rank); returns the ranks' samples/s summed over them. */
static double collect_figures(long point_index, size_t finished, struct rank_figures *fig)
{
    double all_samples = 0;
    for (size_t i = 0; i < kept_log.count; i++) {
        const struct logged *e = &kept_log.entries[i];
        if (e->point != point_index || e->repeat >= finished || e->rank >= pb_mpi()->size)
            continue;
        struct rank_figures *f = &fig[e->rank];
        f->seen = true;
        pb_strlcpy(f->host, e->rec.host, sizeof(f->host));
        pb_strlcpy(f->cpusets, e->rec.cpusets, sizeof(f->cpusets));
        f->shard_rank = e->rec.shard_rank;
        f->shard_count = e->rec.shard_count;
        f->repeats++;
        f->samples += e->rec.samples;
        f->rss_peak_bytes =
            e->rec.rss_peak_bytes > f->rss_peak_bytes ? e->rec.rss_peak_bytes : f->rss_peak_bytes;
        f->rate_sum += e->rec.samples_per_s;
        f->stall_sum += e->rec.stall_pct;
        f->worker_cpu_sum += e->rec.worker_cpu_pct;
        f->cpu_sum += e->rec.cpu_util_pct;
        f->barrier_ms_sum += e->rec.barrier_ms;
        if (e->rec.page_cache_files_checked) {
            f->resident_sum += e->rec.page_cache_resident_pct;
            f->resident_repeats++;
        }
        all_samples += e->rec.samples_per_s;
    }
    return all_samples;
}

/* The hosts among the ranks that have figures: the job's nodes. */
static int count_nodes(const struct rank_figures *fig)
{
    int nodes = 0;
    for (int k = 0; k < pb_mpi()->size; k++) {
        bool first = fig[k].seen;
        for (int j = 0; first && j < k; j++)
            first = !(fig[j].seen && strcmp(fig[j].host, fig[k].host) == 0);
        nodes += first;
    }
    return nodes;
}

void pb_ranks_point(long point_index, struct pb_point_result *point)
{
    if (!pb_mpi()->active || pb_mpi()->rank != 0 || point->repeat_count == 0)
        return;
    struct rank_figures *fig = calloc((size_t)pb_mpi()->size, sizeof(*fig));
    if (!fig)
        return;
    double all_samples = collect_figures(point_index, pb_point_finished_repeats(point), fig);
    json_t *ranks = json_array();
    int slowest = -1, fastest = -1, worst_stall = -1;
    double stall_mean = 0;
    int seen = 0;
    for (int k = 0; k < pb_mpi()->size; k++) {
        struct rank_figures *f = &fig[k];
        if (!f->seen)
            continue;
        double n = (double)f->repeats;
        double own = f->rate_sum / n;
        /* The rank's share of the point's figure, so that the ranks add up. */
        double share = all_samples > 0 ? point->samples_per_s * f->rate_sum / all_samples : 0;
        json_t *obj = json_object();
        json_object_set_new(obj, "rank", json_integer(k));
        json_object_set_new(obj, "host", json_string(f->host));
        json_object_set_new(obj, "shard", json_sprintf("%d/%d", f->shard_rank, f->shard_count));
        json_object_set_new(obj, "samples_per_s", json_real(share));
        json_object_set_new(obj, "mean_samples_per_s", json_real(own));
        json_object_set_new(obj, "stall_pct", json_real(f->stall_sum / n));
        json_object_set_new(obj, "worker_cpu_pct", json_real(f->worker_cpu_sum / n));
        json_object_set_new(obj, "cpu_util_pct", json_real(f->cpu_sum / n));
        json_object_set_new(obj, "rss_peak_bytes", json_integer((json_int_t)f->rss_peak_bytes));
        json_object_set_new(obj, "samples", json_integer((json_int_t)f->samples));
        json_object_set_new(obj, "repeats", json_integer(f->repeats));
        json_object_set_new(obj, "barrier_ms_mean", json_real(f->barrier_ms_sum / n));
        if (f->resident_repeats)
            json_object_set_new(obj, "page_cache_resident_pct",
                                json_real(f->resident_sum / f->resident_repeats));
        if (f->cpusets[0])
            json_object_set_new(obj, "cpusets", json_string(f->cpusets));
        json_array_append_new(ranks, obj);
        if (slowest < 0 || f->rate_sum / n < fig[slowest].rate_sum / fig[slowest].repeats)
            slowest = k;
        if (fastest < 0 || f->rate_sum / n > fig[fastest].rate_sum / fig[fastest].repeats)
            fastest = k;
        if (worst_stall < 0 ||
            f->stall_sum / n > fig[worst_stall].stall_sum / fig[worst_stall].repeats)
            worst_stall = k;
        stall_mean += f->stall_sum / n;
        seen++;
    }
    json_t *summary = json_object();
    json_object_set_new(summary, "ranks", json_integer(pb_mpi()->size));
    json_object_set_new(summary, "nodes", json_integer(count_nodes(fig)));
    json_object_set_new(summary, "decided_by", json_string("rank 0's stopping rule, broadcast"));
    if (seen > 0) {
        double slow = fig[slowest].rate_sum / fig[slowest].repeats;
        double fast = fig[fastest].rate_sum / fig[fastest].repeats;
        json_object_set_new(summary, "slowest_rank", json_integer(slowest));
        json_object_set_new(summary, "slowest_host", json_string(fig[slowest].host));
        json_object_set_new(summary, "imbalance", json_real(slow > 0 ? fast / slow : 0));
        json_object_set_new(summary, "stall_mean_pct", json_real(stall_mean / seen));
        json_object_set_new(summary, "stall_worst_pct",
                            json_real(fig[worst_stall].stall_sum / fig[worst_stall].repeats));
        json_object_set_new(summary, "stall_worst_rank", json_integer(worst_stall));
    }
    sync_figures(point_index, summary);
    json_decref(point->ranks);
    json_decref(point->multi_rank);
    point->ranks = ranks;
    point->multi_rank = summary;
    free(fig);
}

void pb_ranks_release(void)
{
    free(kept_log.entries);
    free(kept_log.sync_ms);
    free(kept_log.sync_point);
    memset(&kept_log, 0, sizeof(kept_log));
    free(sent_warnings.count);
    memset(&sent_warnings, 0, sizeof(sent_warnings));
}

#else /* !PB_HAVE_MPI: a single process, every call a no-op */

int pb_ranks_agree(uint64_t fingerprint, const char *config_path, char *msg, size_t msglen)
{
    (void)fingerprint;
    (void)config_path;
    (void)msg;
    (void)msglen;
    return PB_OK;
}

void pb_ranks_repeat_begin(struct pb_ranks_repeat *r, struct pb_run_group **group)
{
    memset(r, 0, sizeof(*r));
    *group = NULL;
}

bool pb_ranks_repeat_end(struct pb_ranks_repeat *r, long point_index, int rc, const char *msg,
                       struct pb_point_result *point, size_t kept_before)
{
    (void)r;
    (void)point_index;
    (void)rc;
    (void)msg;
    (void)point;
    (void)kept_before;
    return true;
}

void pb_ranks_point(long point_index, struct pb_point_result *point)
{
    (void)point_index;
    (void)point;
}

void pb_ranks_release(void)
{
}

#endif
