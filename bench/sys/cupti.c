/* A CUPTI activity trace of kernels, copies and memsets. CUPTI is opened
 * with dlopen on first use; the trace's aggregation and its Chrome trace
 * writer are plain C over an array of records, built with or without
 * CUDA. */
#include "bench/sys/cupti.h"

#include "bench/base/fileio.h"
#include "bench/base/jsonfield.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"

#if PB_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* CUPTI needs its own headers (part of the toolkit, but packaged apart on
 * some distributions); without them the trace answers "not available". */
#if PB_HAVE_CUDA && defined(__has_include)
#if __has_include(<cupti_activity.h>)
#include <cupti_activity.h>
#define PB_HAVE_CUPTI_HEADERS 1
#endif
#endif
#ifndef PB_HAVE_CUPTI_HEADERS
#define PB_HAVE_CUPTI_HEADERS 0
#endif

/* ---- activity trace: records --------------------------------------- */

/* At most this many records are kept (about 290 MB); later ones are
 * counted as dropped. The array starts small and doubles up to the cap. */
#define RECORD_CAP ((size_t)1 << 21)
#define RECORD_INITIAL ((size_t)1 << 16)

struct pb_cupti_trace {
    struct pb_cupti_record *records;
    size_t count, capacity;
    uint64_t dropped;
    bool recording; /* started and not yet stopped */
    /* CLOCK_MONOTONIC (pb_now_ns) minus CUPTI's clock, read at the start
     * when libcupti has cuptiGetTimestamp; 0 and clock_known false else. */
    int64_t host_offset_ns;
    bool clock_known;
};

static struct pb_cupti_trace *trace_new(size_t capacity)
{
    struct pb_cupti_trace *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->records = malloc((capacity ? capacity : 1) * sizeof(*t->records));
    if (!t->records) {
        free(t);
        return NULL;
    }
    t->capacity = capacity;
    return t;
}

struct pb_cupti_trace *pb_cupti_trace_from_records(const struct pb_cupti_record *records, size_t n)
{
    struct pb_cupti_trace *t = trace_new(n);
    if (!t)
        return NULL;
    if (n)
        memcpy(t->records, records, n * sizeof(*records));
    t->count = n;
    return t;
}

size_t pb_cupti_records(const struct pb_cupti_trace *trace, const struct pb_cupti_record **records)
{
    *records = trace->records;
    return trace->count;
}

uint64_t pb_cupti_dropped(const struct pb_cupti_trace *trace)
{
    return trace->dropped;
}

static uint64_t duration_ns(const struct pb_cupti_record *r)
{
    return r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
}

/* CUPTI reports 0 for both timestamps when it could not time a record. */
static bool has_time(const struct pb_cupti_record *r)
{
    return r->start_ns != 0 || r->end_ns != 0;
}

/* The earliest start of the timed records; false when there are none. */
static bool first_start(const struct pb_cupti_trace *t, uint64_t *start_ns)
{
    bool found = false;
    for (size_t i = 0; i < t->count; i++) {
        const struct pb_cupti_record *r = &t->records[i];
        if (has_time(r) && (!found || r->start_ns < *start_ns)) {
            *start_ns = r->start_ns;
            found = true;
        }
    }
    return found;
}

/* ---- activity trace: summary ----------------------------------------- */

static json_t *json_u64(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* Kernels by name, then by duration, so that a name's records form one
 * run already in order for the median. */
static int cmp_kernel(const void *a, const void *b)
{
    const struct pb_cupti_record *x = *(const struct pb_cupti_record *const *)a;
    const struct pb_cupti_record *y = *(const struct pb_cupti_record *const *)b;
    int by_name = strcmp(x->name, y->name);
    uint64_t dx = duration_ns(x), dy = duration_ns(y);
    return by_name ? by_name : (dx > dy) - (dx < dy);
}

/* Copies by name, then pageable before pinned. */
static int cmp_copy(const void *a, const void *b)
{
    const struct pb_cupti_record *x = *(const struct pb_cupti_record *const *)a;
    const struct pb_cupti_record *y = *(const struct pb_cupti_record *const *)b;
    int by_name = strcmp(x->name, y->name);
    return by_name ? by_name : (int)x->pinned - (int)y->pinned;
}

struct group {
    const char *name;
    bool pinned;
    uint64_t count, bytes, total_ns, p50_ns, max_ns;
};

/* Most time first; equal times by name, so the order is reproducible. */
static int cmp_group(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns < y->total_ns ? 1 : -1;
    int by_name = strcmp(x->name, y->name);
    if (by_name)
        return by_name;
    return (int)x->pinned - (int)y->pinned;
}

/* Groups the sorted run list into groups[]; same name (and, for copies,
 * same pinned flag) is one group. Returns the number of groups. */
static size_t make_groups(const struct pb_cupti_record **sorted, size_t n, bool by_pinned,
                          struct group *groups)
{
    size_t count = 0;
    for (size_t i = 0; i < n;) {
        size_t end = i + 1;
        while (end < n && strcmp(sorted[end]->name, sorted[i]->name) == 0 &&
               (!by_pinned || sorted[end]->pinned == sorted[i]->pinned))
            end++;
        struct group *g = &groups[count++];
        memset(g, 0, sizeof(*g));
        g->name = sorted[i]->name;
        g->pinned = sorted[i]->pinned;
        g->count = end - i;
        for (size_t k = i; k < end; k++) {
            uint64_t d = duration_ns(sorted[k]);
            g->total_ns += d;
            g->bytes += sorted[k]->bytes;
            if (d > g->max_ns)
                g->max_ns = d;
        }
        /* Nearest rank: the ceil(n/2)-th duration (kernel runs are sorted
         * by duration within a name). */
        g->p50_ns = duration_ns(sorted[i + (g->count + 1) / 2 - 1]);
        i = end;
    }
    qsort(groups, count, sizeof(*groups), cmp_group);
    return count;
}

json_t *pb_cupti_summary_json(const struct pb_cupti_trace *trace)
{
    size_t n = trace->count;
    const struct pb_cupti_record **kernels = malloc((n ? n : 1) * sizeof(*kernels));
    const struct pb_cupti_record **copies = malloc((n ? n : 1) * sizeof(*copies));
    struct group *groups = malloc((n ? n : 1) * sizeof(*groups));
    json_t *root = json_object(), *kernel_list = json_array(), *copy_list = json_array();
    if (!kernels || !copies || !groups || !root || !kernel_list || !copy_list) {
        free(kernels);
        free(copies);
        free(groups);
        json_decref(root);
        json_decref(kernel_list);
        json_decref(copy_list);
        return NULL;
    }
    size_t kernel_count = 0, copy_count = 0;
    for (size_t i = 0; i < n; i++) {
        const struct pb_cupti_record *r = &trace->records[i];
        if (r->kind == PB_CUPTI_KERNEL)
            kernels[kernel_count++] = r;
        else
            copies[copy_count++] = r; /* memsets are listed with the copies */
    }

    qsort(kernels, kernel_count, sizeof(*kernels), cmp_kernel);
    size_t group_count = make_groups(kernels, kernel_count, false, groups);
    for (size_t i = 0; i < group_count; i++) {
        const struct group *g = &groups[i];
        json_array_append_new(kernel_list,
                              json_pack("{s:s, s:o, s:o, s:f, s:o, s:o}", "name", g->name, "count",
                                        json_u64(g->count), "total_ns", json_u64(g->total_ns),
                                        "mean_ns", (double)g->total_ns / (double)g->count, "p50_ns",
                                        json_u64(g->p50_ns), "max_ns", json_u64(g->max_ns)));
    }

    qsort(copies, copy_count, sizeof(*copies), cmp_copy);
    group_count = make_groups(copies, copy_count, true, groups);
    for (size_t i = 0; i < group_count; i++) {
        const struct group *g = &groups[i];
        /* Bytes per nanosecond is GB/s with 1 GB = 1e9 bytes. */
        double gb_per_s = g->total_ns ? (double)g->bytes / (double)g->total_ns : 0.0;
        json_array_append_new(copy_list,
                              json_pack("{s:s, s:b, s:o, s:o, s:o, s:f}", "kind", g->name, "pinned",
                                        g->pinned, "count", json_u64(g->count), "bytes",
                                        json_u64(g->bytes), "total_ns", json_u64(g->total_ns),
                                        "gb_per_s", gb_per_s));
    }

    uint64_t span_start = 0, span_end = 0;
    if (first_start(trace, &span_start)) {
        span_end = span_start;
        for (size_t i = 0; i < n; i++) {
            const struct pb_cupti_record *r = &trace->records[i];
            uint64_t end = r->end_ns > r->start_ns ? r->end_ns : r->start_ns;
            if (has_time(r) && end > span_end)
                span_end = end;
        }
    }
    json_object_set_new(root, "kernels", kernel_list);
    json_object_set_new(root, "copies", copy_list);
    json_object_set_new(root, "span_ns", json_u64(span_end - span_start));
    json_object_set_new(root, "dropped", json_u64(trace->dropped));
    free(kernels);
    free(copies);
    free(groups);
    return root;
}

/* ---- activity trace: Chrome trace-event file ------------------------- */

static const char *const category_names[] = {"kernel", "memcpy", "memset"};

/* One event as compact JSON; jansson escapes the name (pb_json_text: one
 * that is not UTF-8 has its stray bytes read as Latin-1). */
static int write_event(FILE *f, const struct pb_cupti_record *r, uint64_t origin_ns, bool first)
{
    json_t *name = pb_json_text(r->name);
    unsigned kind = (unsigned)r->kind;
    json_t *args = r->kind == PB_CUPTI_KERNEL ? json_object()
                   : r->kind == PB_CUPTI_MEMCPY
                       ? json_pack("{s:o, s:b}", "bytes", json_u64(r->bytes), "pinned", r->pinned)
                       : json_pack("{s:o}", "bytes", json_u64(r->bytes));
    json_t *event =
        json_pack("{s:o, s:s, s:s, s:f, s:f, s:i, s:o, s:o}", "name", name, "cat",
                  kind < PB_ARRAY_LEN(category_names) ? category_names[kind] : "other", "ph", "X",
                  "ts", (double)(r->start_ns - origin_ns) / 1e3, "dur",
                  (double)duration_ns(r) / 1e3, "pid", 0, "tid", json_u64(r->stream), "args", args);
    if (!event)
        return -1;
    int rc = 0;
    if (!first && fputc(',', f) == EOF)
        rc = -1;
    if (rc == 0 && json_dumpf(event, f, JSON_COMPACT | JSON_REAL_PRECISION(15)) != 0)
        rc = -1;
    json_decref(event);
    return rc;
}

int pb_cupti_trace_events(FILE *f, uint64_t origin_ns, void *user)
{
    const struct pb_cupti_trace *trace = user;
    uint64_t origin = origin_ns - (uint64_t)trace->host_offset_ns;
    if (!trace->clock_known) /* no common clock: the first record at 0 */
        first_start(trace, &origin);
    if (fprintf(f, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
                   "\"args\":{\"name\":\"GPU (CUPTI)%s\"}}",
                trace->clock_known ? "" : ", not on the CPU clock") < 0)
        return -1;
    for (size_t i = 0; i < trace->count; i++)
        if (has_time(&trace->records[i]) && write_event(f, &trace->records[i], origin, false) != 0)
            return -1;
    return 0;
}

/* Times are microseconds from the earliest record; records CUPTI could
 * not time have no place on the timeline and are left out. */
static int fill_chrome_trace(FILE *f, void *user)
{
    const struct pb_cupti_trace *trace = user;
    uint64_t origin_ns = 0;
    first_start(trace, &origin_ns);
    int rc = fputs("{\"traceEvents\":[", f) == EOF ? -1 : 0;
    bool first = true;
    for (size_t i = 0; rc == 0 && i < trace->count; i++) {
        const struct pb_cupti_record *r = &trace->records[i];
        if (!has_time(r))
            continue;
        rc = write_event(f, r, origin_ns, first);
        first = false;
    }
    if (rc == 0 && fputs("],\"displayTimeUnit\":\"ms\"}\n", f) == EOF)
        rc = -1;
    return rc;
}

int pb_cupti_write_chrome_trace(const struct pb_cupti_trace *trace, const char *path, char *msg,
                                size_t msglen)
{
    return pb_write_atomic(path, fill_chrome_trace, (void *)trace, msg, msglen);
}

/* ---- activity trace: recording (CUPTI) ------------------------------- */

/* ---- kernel names --------------------------------------------------------- */

/* libstdc++'s demangler, looked up once (libstdc++ is on every machine
 * with the CUDA toolkit; CUPTI itself loads it); NULL where it is absent. */
typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);
static demangle_fn demangler;
static pthread_once_t demangler_once = PTHREAD_ONCE_INIT;

static void find_demangler(void)
{
    void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    void *fn = lib ? dlsym(lib, "__cxa_demangle") : NULL;
    memcpy(&demangler, &fn, sizeof(fn)); /* object to function pointer, as POSIX allows */
}

/* Copies src[0..n) into dst as printable ASCII, dropping every
 * "(anonymous namespace)::". */
static void copy_printable(char *dst, size_t size, const char *src, size_t n)
{
    static const char anon[] = "(anonymous namespace)::";
    size_t o = 0;
    for (size_t i = 0; i < n && src[i] && o + 1 < size;) {
        if (strncmp(src + i, anon, sizeof(anon) - 1) == 0) {
            i += sizeof(anon) - 1;
            continue;
        }
        unsigned char ch = (unsigned char)src[i++];
        dst[o++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    dst[o] = '\0';
}

/* The function's name in a demangled signature ("void ns::f<int>(args)"):
 * from after the return type (the last space at template depth 0 before
 * the name) to the '(' of its parameter list at depth 0 (a '(' inside
 * <...> is a cast such as "(kind)0"). Sets *start; returns the end. */
static size_t function_name(const char *demangled, size_t *start)
{
    int depth = 0;
    size_t i = 0;
    *start = 0;
    for (; demangled[i]; i++) {
        if (demangled[i] == '<')
            depth++;
        else if (demangled[i] == '>' && depth > 0)
            depth--;
        else if (demangled[i] == ' ' && depth == 0)
            *start = i + 1;
        else if (demangled[i] == '(' && depth == 0 && i > *start)
            break;
    }
    return i;
}

/* Without a demangler: the last component of an Itanium nested name
 * (_ZN <len><id>... E) or plain name (_Z <len><id>), "<...>" after it
 * when template arguments follow. false when src is not of that shape. */
static bool simple_label(const char *src, char *dst, size_t size)
{
    if (strncmp(src, "_Z", 2) != 0)
        return false;
    const char *p = src + 2 + (src[2] == 'N');
    const char *last = NULL;
    size_t last_len = 0;
    while (*p >= '1' && *p <= '9') {
        char *end;
        unsigned long len = strtoul(p, &end, 10);
        if (strnlen(end, len) < len)
            return false;
        last = end;
        last_len = len;
        p = end + len;
        if (src[2] != 'N')
            break;
    }
    if (!last)
        return false;
    copy_printable(dst, size, last, last_len);
    if (*p == 'I' && strlen(dst) + 6 < size)
        strcat(dst, "<...>");
    return true;
}

void pb_cupti_kernel_label(const char *mangled, char *dst, size_t size)
{
    if (!mangled) {
        copy_printable(dst, size, "(unnamed kernel)", SIZE_MAX);
        return;
    }
    pthread_once(&demangler_once, find_demangler);
    int status = -1;
    char *demangled = demangler ? demangler(mangled, NULL, NULL, &status) : NULL;
    if (demangled && status == 0) {
        char plain[512];
        size_t start;
        copy_printable(plain, sizeof(plain), demangled, SIZE_MAX);
        size_t end = function_name(plain, &start);
        copy_printable(dst, size, plain + start, end - start);
    } else if (!simple_label(mangled, dst, size))
        copy_printable(dst, size, mangled, SIZE_MAX);
    free(demangled);
}

#if PB_HAVE_CUPTI_HEADERS

#define CUPTI_BUFFER_BYTES ((size_t)8 << 20)
#define CUPTI_POOL_MAX 4
#define CUPTI_POOL_START 2

static const CUpti_ActivityKind traced_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};

static struct {
    bool ready;
    bool callbacks_registered;
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc requested,
                                      CUpti_BuffersCallbackCompleteFunc completed);
    CUptiResult (*enable)(CUpti_ActivityKind kind);
    CUptiResult (*disable)(CUpti_ActivityKind kind);
    CUptiResult (*flush_all)(uint32_t flag);
    CUptiResult (*next_record)(uint8_t *buffer, size_t valid_bytes, CUpti_Activity **record);
    CUptiResult (*result_string)(CUptiResult result, const char **text);
    CUptiResult (*dropped_records)(CUcontext context, uint32_t stream, size_t *dropped); /* opt */
    CUptiResult (*get_timestamp)(uint64_t *timestamp);                                   /* opt */
    char why[PB_MSG_MAX];
} cupti;
static pthread_once_t cupti_once = PTHREAD_ONCE_INIT;

/* cupti_lock guards active_trace and its records. The callbacks run on
 * CUPTI's thread or, during cuptiActivityFlushAll, on the caller's: never
 * hold it across a CUPTI call. The buffer pool has a lock of its own, so
 * that a launch asking for a buffer never waits while records are parsed. */
static pthread_mutex_t cupti_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pb_cupti_trace *active_trace;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *buffer_pool[CUPTI_POOL_MAX];
static size_t buffer_pool_count;

static void cupti_load(void)
{
    static const char *const candidates[] = {
        "libcupti.so.13",
        "libcupti.so",
        "/usr/local/cuda/lib/libcupti.so",
        "/usr/local/cuda/lib64/libcupti.so",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
    };
    char last_error[400] = "";
    void *lib = NULL;
    const char *chosen = getenv("PBENCH_CUPTI_LIB");
    if (chosen && *chosen) {
        lib = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            snprintf(last_error, sizeof(last_error), "%s", dlerror());
    }
    for (size_t i = 0; !lib && i < PB_ARRAY_LEN(candidates); i++) {
        lib = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib && !last_error[0]) /* the first failure says the most */
            snprintf(last_error, sizeof(last_error), "%s", dlerror());
    }
    if (!lib) {
        snprintf(cupti.why, sizeof(cupti.why),
                 "libcupti not found (set PBENCH_CUPTI_LIB to its path): %s", last_error);
        return;
    }
    static const char *const required[] = {
        "cuptiActivityRegisterCallbacks", "cuptiActivityEnable",        "cuptiActivityDisable",
        "cuptiActivityFlushAll",          "cuptiActivityGetNextRecord", "cuptiGetResultString",
    };
    void *symbols[PB_ARRAY_LEN(required)];
    for (size_t i = 0; i < PB_ARRAY_LEN(required); i++) {
        symbols[i] = dlsym(lib, required[i]);
        if (!symbols[i]) {
            snprintf(cupti.why, sizeof(cupti.why), "libcupti lacks %s", required[i]);
            dlclose(lib);
            return;
        }
    }
    cupti.register_callbacks = (CUptiResult(*)(CUpti_BuffersCallbackRequestFunc,
                                               CUpti_BuffersCallbackCompleteFunc))symbols[0];
    cupti.enable = (CUptiResult(*)(CUpti_ActivityKind))symbols[1];
    cupti.disable = (CUptiResult(*)(CUpti_ActivityKind))symbols[2];
    cupti.flush_all = (CUptiResult(*)(uint32_t))symbols[3];
    cupti.next_record = (CUptiResult(*)(uint8_t *, size_t, CUpti_Activity **))symbols[4];
    cupti.result_string = (CUptiResult(*)(CUptiResult, const char **))symbols[5];
    cupti.dropped_records = (CUptiResult(*)(CUcontext, uint32_t, size_t *))dlsym(
        lib, "cuptiActivityGetNumDroppedRecords");
    cupti.get_timestamp = (CUptiResult(*)(uint64_t *))dlsym(lib, "cuptiGetTimestamp");
    cupti.ready = true; /* the library stays loaded for the process */
}

static const char *cupti_error(CUptiResult result)
{
    const char *text = NULL;
    if (cupti.result_string(result, &text) != CUPTI_SUCCESS || !text)
        return "unknown CUPTI error";
    return text;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    uint8_t *b = NULL;
    pthread_mutex_lock(&pool_lock);
    if (buffer_pool_count)
        b = buffer_pool[--buffer_pool_count];
    pthread_mutex_unlock(&pool_lock);
    if (!b)
        b = aligned_alloc(64, CUPTI_BUFFER_BYTES);
    *buffer = b; /* NULL: CUPTI drops the records and counts them */
    *size = b ? CUPTI_BUFFER_BYTES : 0;
    *max_records = 0; /* as many as fit */
}

static const char *memcpy_name(uint8_t copy_kind)
{
    switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "Memcpy";
    }
}

/* Whether the host side of a copy is page-locked. */
static bool memcpy_pinned(const CUpti_ActivityMemcpy6 *m)
{
    bool src = m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    bool dst = m->dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    switch (m->copyKind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return src;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return dst;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return src || dst;
    default: return false;
    }
}

/* Kernel names are copied as CUPTI gives them (mangled C++ names are
 * ASCII); any byte outside printable ASCII becomes '?'. */
/* Fills r from a CUPTI record; false for kinds not traced. The record
 * structs are the ones of the CUPTI 13 headers; their leading fields,
 * which are all that is read, are unchanged across CUPTI versions. */
static bool convert_record(const CUpti_Activity *a, struct pb_cupti_record *r)
{
    memset(r, 0, sizeof(*r));
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
        r->kind = PB_CUPTI_KERNEL;
        pb_cupti_kernel_label(k->name, r->name, sizeof(r->name));
        r->start_ns = k->start;
        r->end_ns = k->end;
        r->stream = k->streamId;
        return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)a;
        r->kind = PB_CUPTI_MEMCPY;
        pb_strlcpy(r->name, memcpy_name(m->copyKind), sizeof(r->name));
        r->start_ns = m->start;
        r->end_ns = m->end;
        r->bytes = m->bytes;
        r->pinned = memcpy_pinned(m);
        r->stream = m->streamId;
        return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)a;
        r->kind = PB_CUPTI_MEMSET;
        pb_strlcpy(r->name, "Memset", sizeof(r->name));
        r->start_ns = m->start;
        r->end_ns = m->end;
        r->bytes = m->bytes;
        r->stream = m->streamId;
        return true;
    }
    default: return false;
    }
}

/* Appends under cupti_lock; grows the array up to RECORD_CAP. */
static void append_record(struct pb_cupti_trace *t, const struct pb_cupti_record *r)
{
    if (t->count == t->capacity) {
        size_t grown = t->capacity * 2 < RECORD_CAP ? t->capacity * 2 : RECORD_CAP;
        struct pb_cupti_record *bigger =
            grown > t->capacity ? realloc(t->records, grown * sizeof(*bigger)) : NULL;
        if (!bigger) {
            t->dropped++;
            return;
        }
        t->records = bigger;
        t->capacity = grown;
    }
    t->records[t->count++] = *r;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid_bytes)
{
    (void)size;
    size_t cupti_dropped = 0;
    if (cupti.dropped_records &&
        cupti.dropped_records(context, stream, &cupti_dropped) != CUPTI_SUCCESS)
        cupti_dropped = 0;

    pthread_mutex_lock(&cupti_lock);
    struct pb_cupti_trace *t = active_trace;
    if (t && buffer) {
        CUpti_Activity *a = NULL;
        struct pb_cupti_record r;
        /* Stops at the end of the valid bytes (MAX_LIMIT_REACHED) or at an
         * incomplete record (INVALID_KIND), as CUPTI documents. */
        while (cupti.next_record(buffer, valid_bytes, &a) == CUPTI_SUCCESS)
            if (convert_record(a, &r))
                append_record(t, &r);
    }
    if (t)
        t->dropped += cupti_dropped;
    pthread_mutex_unlock(&cupti_lock);

    /* Reused while a trace records; freed otherwise. */
    bool keep = false;
    if (t && buffer) {
        pthread_mutex_lock(&pool_lock);
        keep = buffer_pool_count < CUPTI_POOL_MAX;
        if (keep)
            buffer_pool[buffer_pool_count++] = buffer;
        pthread_mutex_unlock(&pool_lock);
    }
    if (!keep)
        free(buffer);
}

static void fill_pool(size_t count)
{
    pthread_mutex_lock(&pool_lock);
    while (buffer_pool_count < count) {
        uint8_t *b = aligned_alloc(64, CUPTI_BUFFER_BYTES);
        if (!b)
            break;
        buffer_pool[buffer_pool_count++] = b;
    }
    pthread_mutex_unlock(&pool_lock);
}

static void drain_pool(void)
{
    pthread_mutex_lock(&pool_lock);
    while (buffer_pool_count)
        free(buffer_pool[--buffer_pool_count]);
    pthread_mutex_unlock(&pool_lock);
}

int pb_cupti_start(struct pb_cupti_trace **trace, char *msg, size_t msglen)
{
    *trace = NULL;
    pthread_once(&cupti_once, cupti_load);
    if (!cupti.ready) {
        snprintf(msg, msglen, "%s", cupti.why);
        return PB_ERR;
    }
    struct pb_cupti_trace *t = trace_new(RECORD_INITIAL);
    if (!t) {
        snprintf(msg, msglen, "cannot start a CUPTI trace: out of memory");
        return PB_ERR;
    }
    pthread_mutex_lock(&cupti_lock);
    bool busy = active_trace != NULL;
    if (!busy) {
        active_trace = t;
        t->recording = true;
    }
    pthread_mutex_unlock(&cupti_lock);
    if (busy) {
        snprintf(msg, msglen, "a CUPTI trace is already recording (one at a time)");
        pb_cupti_free(t);
        return PB_ERR;
    }
    /* A couple of buffers ready, so that the first launches do not wait
     * on malloc for them. */
    fill_pool(CUPTI_POOL_START);

    CUptiResult rc = CUPTI_SUCCESS;
    const char *failed = NULL;
    size_t enabled = 0;
    if (!cupti.callbacks_registered) { /* serialized: only one start gets here */
        rc = cupti.register_callbacks(buffer_requested, buffer_completed);
        if (rc == CUPTI_SUCCESS)
            cupti.callbacks_registered = true;
        else
            failed = "cuptiActivityRegisterCallbacks";
    }
    for (; !failed && enabled < PB_ARRAY_LEN(traced_kinds); enabled++) {
        rc = cupti.enable(traced_kinds[enabled]);
        if (rc != CUPTI_SUCCESS)
            failed = "cuptiActivityEnable";
    }
    if (failed) {
        /* CUPTI's own text is often CUPTI_ERROR_UNKNOWN: say so when the
         * reason is that there is no device. */
        int count = 0;
        cudaError_t err = cudaGetDeviceCount(&count);
        snprintf(msg, msglen, "cannot start a CUPTI trace: %s: %s%s%s%s", failed, cupti_error(rc),
                 err != cudaSuccess ? " (no CUDA device: " : "",
                 err != cudaSuccess ? cudaGetErrorString(err) : "", err != cudaSuccess ? ")" : "");
        while (enabled > 0)
            cupti.disable(traced_kinds[--enabled]);
        pthread_mutex_lock(&cupti_lock);
        active_trace = NULL;
        pthread_mutex_unlock(&cupti_lock);
        drain_pool();
        t->recording = false;
        pb_cupti_free(t);
        return PB_ERR;
    }
    uint64_t device_ns = 0, before = pb_now_ns();
    if (cupti.get_timestamp && cupti.get_timestamp(&device_ns) == CUPTI_SUCCESS) {
        uint64_t host_ns = before + (pb_now_ns() - before) / 2;
        t->host_offset_ns = (int64_t)(host_ns - device_ns);
        t->clock_known = true;
    }
    *trace = t;
    return PB_OK;
}

/* Kernels and copies still running are not waited for: synchronize the
 * device before stopping to have them all. */
int pb_cupti_stop(struct pb_cupti_trace *trace, char *msg, size_t msglen)
{
    if (!trace->recording)
        return PB_OK;
    CUptiResult rc = CUPTI_SUCCESS;
    const char *failed = NULL;
    for (size_t i = 0; i < PB_ARRAY_LEN(traced_kinds); i++) {
        CUptiResult r = cupti.disable(traced_kinds[i]);
        if (r != CUPTI_SUCCESS && !failed) {
            rc = r;
            failed = "cuptiActivityDisable";
        }
    }
    /* Delivers every buffer, through buffer_completed, before returning. */
    CUptiResult flushed = cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (flushed != CUPTI_SUCCESS && !failed) {
        rc = flushed;
        failed = "cuptiActivityFlushAll";
    }
    pthread_mutex_lock(&cupti_lock);
    if (active_trace == trace)
        active_trace = NULL;
    pthread_mutex_unlock(&cupti_lock);
    drain_pool();
    trace->recording = false;
    if (failed) {
        snprintf(msg, msglen, "stopping the CUPTI trace: %s: %s", failed, cupti_error(rc));
        return PB_ERR;
    }
    return PB_OK;
}

#else /* !PB_HAVE_CUPTI_HEADERS */

int pb_cupti_start(struct pb_cupti_trace **trace, char *msg, size_t msglen)
{
    *trace = NULL;
    snprintf(msg, msglen, PB_HAVE_CUDA ? "built without the CUPTI headers" : "built without CUDA");
    return PB_ERR;
}

int pb_cupti_stop(struct pb_cupti_trace *trace, char *msg, size_t msglen)
{
    (void)trace; /* only traces built from records exist here */
    (void)msg;
    (void)msglen;
    return PB_OK;
}

#endif /* PB_HAVE_CUPTI_HEADERS */

void pb_cupti_free(struct pb_cupti_trace *trace)
{
    if (!trace)
        return;
    if (trace->recording) {
        char ignored[PB_MSG_MAX];
        pb_cupti_stop(trace, ignored, sizeof(ignored));
    }
    free(trace->records);
    free(trace);
}
