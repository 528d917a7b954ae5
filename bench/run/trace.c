/* Chrome trace-event JSON from the raw records of bench/run/trace.h. The
 * format: {"traceEvents": [...]} with "X" (complete) spans, "C" counters,
 * "i" instants and "M" metadata naming the process and each thread; times
 * in microseconds from the first record. */
#include "bench/run/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/fileio.h"
#include "bench/base/jsonfield.h"
#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "bench/result/result.h"

static const char *const fixed_names[PB_TRACE_FIXED_NAMES] = {
    "wait", "step", "batch", "queue depth", "measuring starts"};

struct pb_trace *pb_trace_new(const struct pb_dataset *ds, size_t capacity)
{
    struct pb_trace *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->ds = ds;
    t->capacity = capacity ? capacity : PB_TRACE_EVENTS_PER_THREAD;
    for (int i = 0; i < PB_TRACE_FIXED_NAMES; i++)
        pb_trace_name(t, fixed_names[i]);
    return t;
}

void pb_trace_free(struct pb_trace *trace)
{
    if (!trace)
        return;
    for (size_t i = 0; i < trace->thread_count; i++)
        free(trace->threads[i].events);
    free(trace);
}

uint16_t pb_trace_name(struct pb_trace *trace, const char *name)
{
    for (int i = 0; i < trace->name_count; i++)
        if (strcmp(trace->names[i], name) == 0)
            return (uint16_t)i;
    if (trace->name_count >= PB_TRACE_MAX_NAMES)
        return PB_TRACE_WAIT;
    pb_strlcpy(trace->names[trace->name_count], name, sizeof(trace->names[0]));
    return (uint16_t)trace->name_count++;
}

struct pb_trace_thread *pb_trace_thread(struct pb_trace *trace, size_t thread)
{
    if (thread >= PB_TRACE_MAX_THREADS)
        return NULL;
    struct pb_trace_thread *t = &trace->threads[thread];
    if (!t->events) {
        /* calloc: pages are touched only as records arrive. */
        t->events = calloc(trace->capacity, sizeof(*t->events));
        if (!t->events)
            return NULL;
        t->capacity = trace->capacity;
    }
    if (thread >= trace->thread_count)
        trace->thread_count = thread + 1;
    return t;
}

size_t pb_trace_bytes(const struct pb_trace *trace)
{
    size_t bytes = 0;
    for (size_t i = 0; i < trace->thread_count; i++)
        bytes += __atomic_load_n(&trace->threads[i].count, __ATOMIC_RELAXED) *
                 sizeof(struct pb_trace_event);
    return bytes;
}

void pb_trace_counts(const struct pb_trace *trace, uint64_t *kept, uint64_t *dropped)
{
    *kept = *dropped = 0;
    for (size_t i = 0; i < trace->thread_count; i++) {
        *kept += trace->threads[i].count;
        *dropped += trace->threads[i].dropped;
    }
}

/* ------------------------------------------------------------- writing */

/* text as the inside of a JSON string: quotes, backslashes and control
 * characters escaped; UTF-8 as it is, so names read as they are in
 * Perfetto; any other byte past ASCII written as \u00XX, so a file name
 * that is not UTF-8 still gives valid JSON. */
static void json_chars(FILE *f, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        int n = *p >= 0x80 ? pb_utf8_length(p) : 0;
        if (n > 0) {
            fwrite(p, 1, (size_t)n, f);
            p += n - 1;
        } else if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
        } else if (*p < 0x20 || *p >= 0x7f) {
            fprintf(f, "\\u%04x", *p);
        } else {
            fputc(*p, f);
        }
    }
}

static void metadata(FILE *f, const char *what, int pid, size_t tid, const char *name)
{
    fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%zu,\"args\":{\"name\":\"", what,
            pid, tid);
    json_chars(f, name);
    fputs("\"}}", f);
}

static double us(uint64_t t_ns, uint64_t origin_ns)
{
    return t_ns >= origin_ns ? (double)(t_ns - origin_ns) / 1e3
                             : -(double)(origin_ns - t_ns) / 1e3;
}

static void write_event(FILE *f, const struct pb_trace *trace, size_t tid,
                        const struct pb_trace_event *e, uint64_t origin_ns)
{
    const char *name = e->name < trace->name_count ? trace->names[e->name] : "?";
    if (e->kind == PB_TRACE_COUNTER) {
        fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"C\",\"pid\":1,\"tid\":%zu,\"ts\":%.3f,"
                   "\"args\":{\"ready batches\":%" PRIu32 "}}",
                name, tid, us(e->t0_ns, origin_ns), e->value);
        return;
    }
    if (e->kind == PB_TRACE_INSTANT) { /* sample: the point, value: the repeat (0-based) */
        fprintf(f,
                ",\n{\"name\":\"%s: point %" PRIu64 ", repeat %" PRIu32 "\",\"ph\":\"i\","
                "\"s\":\"p\",\"pid\":1,\"tid\":%zu,\"ts\":%.3f,\"args\":{\"point\":%" PRIu64
                ",\"repeat\":%" PRIu32 "}}",
                name, e->sample + 1, e->value + 1, tid, us(e->t0_ns, origin_ns), e->sample + 1,
                e->value + 1);
        return;
    }
    bool per_batch = e->name == PB_TRACE_BATCH || e->name == PB_TRACE_WAIT ||
                     e->name == PB_TRACE_STEP || tid == 0;
    fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%zu,"
               "\"ts\":%.3f,\"dur\":%.3f,\"args\":{",
            name, per_batch ? "batch" : "stage", tid, us(e->t0_ns, origin_ns),
            (double)(e->t1_ns - e->t0_ns) / 1e3);
    if (per_batch) {
        fprintf(f, "\"batch\":%" PRIu64, e->sample);
        if (e->name == PB_TRACE_WAIT)
            fprintf(f, ",\"ready batches\":%" PRIu32, e->value);
    } else {
        fprintf(f, "\"sample\":%" PRIu64, e->sample);
        const struct pb_dataset *ds = trace->ds;
        if (ds && ds->paths && e->sample < ds->count && ds->paths[e->sample]) {
            fputs(",\"file\":\"", f);
            json_chars(f, ds->paths[e->sample]);
            fputc('"', f);
        }
    }
    fputs("}}", f);
}

struct write_job {
    const struct pb_trace *trace;
    const struct pb_trace_extra *extra;
};

static int fill_trace(FILE *f, void *user)
{
    const struct write_job *job = user;
    const struct pb_trace *trace = job->trace;
    uint64_t origin_ns = UINT64_MAX, kept, dropped;
    for (size_t i = 0; i < trace->thread_count; i++)
        for (size_t k = 0; k < trace->threads[i].count; k++)
            if (trace->threads[i].events[k].t0_ns < origin_ns)
                origin_ns = trace->threads[i].events[k].t0_ns;
    if (origin_ns == UINT64_MAX)
        origin_ns = 0;
    pb_trace_counts(trace, &kept, &dropped);
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"pbench\":\"CPU timeline\","
               "\"events\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"cap_per_thread\":%zu},\n"
               "\"traceEvents\":[\n",
            kept, dropped, trace->capacity);
    fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
          "\"args\":{\"name\":\"pbench loader (CPU)\"}}",
          f);
    for (size_t i = 0; i < trace->thread_count; i++) {
        char name[64];
        if (i == 0)
            snprintf(name, sizeof(name), "training loop");
        else
            snprintf(name, sizeof(name), "worker %zu", i - 1);
        metadata(f, "thread_name", 1, i, name);
        fprintf(f, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%zu,"
                   "\"args\":{\"sort_index\":%zu}}",
                i, i);
    }
    for (size_t i = 0; i < trace->thread_count; i++) {
        const struct pb_trace_thread *t = &trace->threads[i];
        for (size_t k = 0; k < t->count; k++)
            write_event(f, trace, i, &t->events[k], origin_ns);
        if (t->dropped) {
            /* The cap was reached: say so where it happened. */
            uint64_t at = t->count ? t->events[t->count - 1].t1_ns : origin_ns;
            fprintf(f, ",\n{\"name\":\"trace buffer full: %" PRIu64 " later events of this "
                       "thread dropped (cap %zu)\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,"
                       "\"tid\":%zu,\"ts\":%.3f}",
                    t->dropped, t->capacity, i, us(at, origin_ns));
        }
    }
    if (job->extra && job->extra->fill && job->extra->fill(f, origin_ns, job->extra->user) != 0)
        return -1;
    fputs("\n]}\n", f);
    if (ferror(f)) {
        if (errno == 0) /* the failed write's own errno (ENOSPC) is the reason */
            errno = EIO;
        return -1;
    }
    return 0;
}

int pb_trace_write(const struct pb_trace *trace, const char *path,
                   const struct pb_trace_extra *extra, char *msg, size_t msglen)
{
    struct write_job job = {trace, extra};
    return pb_write_atomic(path, fill_trace, &job, msg, msglen);
}

/* ------------------------------------------------------------ a session */

struct pb_trace *pb_trace_for_specs(const struct pb_spec *specs, size_t count,
                                    const struct pb_dataset *ds)
{
    for (size_t i = 0; i < count; i++)
        if (pb_spec_traced(&specs[i]))
            return pb_trace_new(ds, 0);
    return NULL;
}

void pb_trace_default_path(const char *result_path, char *buf, size_t buflen)
{
    size_t len = strlen(result_path);
    size_t stem = len > 5 && strcmp(result_path + len - 5, ".json") == 0 ? len - 5 : len;
    snprintf(buf, buflen, "%.*s.trace.json", (int)stem, result_path);
}

void pb_trace_write_beside(const struct pb_trace *trace, const char *path, const char *result_path,
                           const struct pb_trace_extra *extra, struct pb_result *result)
{
    char file[sizeof(result->trace_path)], msg[PB_MSG_MAX];
    if (path) {
        pb_strlcpy(file, path, sizeof(file));
    } else {
        pb_trace_default_path(result_path, file, sizeof(file));
    }
    if (pb_make_parent_dirs(file, msg, sizeof(msg)) != PB_OK ||
        pb_trace_write(trace, file, extra, msg, sizeof(msg)) != PB_OK) {
        pb_result_warn(result, "run.trace: no trace written: %s", msg);
        return;
    }
    pb_strlcpy(result->trace_path, file, sizeof(result->trace_path));
    uint64_t kept, dropped;
    pb_trace_counts(trace, &kept, &dropped);
    if (dropped)
        pb_result_warn(result,
                       "run.trace: a thread's trace buffer filled up (%zu events each): %llu "
                       "later events were dropped; the trace says where",
                       trace->capacity, (unsigned long long)dropped);
}
