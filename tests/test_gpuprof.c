/* GPU observation: the trace summary and the Chrome trace writer against
 * plain reference sums on given and random records (no CUPTI needed), the
 * "not available" answers on a machine without a device, and, where a
 * device exists, clocks, a CUPTI trace of real copies and host-to-device
 * bandwidth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/base/pb.h"
#include "bench/sys/cupti.h"
#include "bench/sys/h2d_bandwidth.h"
#include "bench/sys/nvml.h"
#include "tests/testutil.h"

#if PB_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static char workdir[] = "/tmp/pbench-gpuprof-XXXXXX";

static bool have_device(void)
{
#if PB_HAVE_CUDA
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
    return false;
#endif
}

static struct pb_cupti_record record(enum pb_cupti_kind kind, const char *name, uint64_t start_ns,
                                     uint64_t duration_ns, uint64_t bytes, bool pinned,
                                     uint32_t stream)
{
    struct pb_cupti_record r;
    memset(&r, 0, sizeof(r));
    r.kind = kind;
    pb_strlcpy(r.name, name, sizeof(r.name));
    r.start_ns = start_ns;
    r.end_ns = start_ns + duration_ns;
    r.bytes = bytes;
    r.pinned = pinned;
    r.stream = stream;
    return r;
}

static uint64_t get_u64(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        fail_msg("%s is not an integer", key);
    return (uint64_t)json_integer_value(v);
}

static double get_real(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_number(v))
        fail_msg("%s is not a number", key);
    return json_number_value(v);
}

static const char *get_string(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    if (!s)
        fail_msg("%s is not a string", key);
    return s;
}

/* ---- summary ---------------------------------------------------------- */

static void test_summary_of_given_records(void **state)
{
    (void)state;
    const struct pb_cupti_record records[] = {
        record(PB_CUPTI_KERNEL, "resize", 1000, 30, 0, false, 7),
        record(PB_CUPTI_MEMCPY, "HtoD", 1100, 100, 1000, true, 7),
        record(PB_CUPTI_KERNEL, "normalize", 1200, 100, 0, false, 7),
        record(PB_CUPTI_KERNEL, "resize", 1300, 10, 0, false, 8),
        record(PB_CUPTI_MEMCPY, "HtoD", 1400, 300, 3000, true, 8),
        record(PB_CUPTI_MEMCPY, "HtoD", 1800, 500, 1000, false, 7),
        record(PB_CUPTI_KERNEL, "crop", 2400, 5, 0, false, 7),
        record(PB_CUPTI_KERNEL, "resize", 2500, 20, 0, false, 7),
        record(PB_CUPTI_MEMCPY, "DtoH", 2600, 50, 200, true, 7),
        record(PB_CUPTI_MEMSET, "Memset", 2700, 40, 4000, false, 7),
        record(PB_CUPTI_KERNEL, "crop", 2800, 5, 0, false, 7),
        record(PB_CUPTI_KERNEL, "late", 900, 3000, 0, false, 9), /* first start, last end */
    };
    struct pb_cupti_trace *trace = pb_cupti_trace_from_records(records, PB_ARRAY_LEN(records));
    assert_non_null(trace);
    const struct pb_cupti_record *back;
    assert_int_equal(pb_cupti_records(trace, &back), PB_ARRAY_LEN(records));
    for (size_t i = 0; i < PB_ARRAY_LEN(records); i++) {
        assert_string_equal(back[i].name, records[i].name);
        assert_int_equal(back[i].start_ns, records[i].start_ns);
        assert_int_equal(back[i].end_ns, records[i].end_ns);
        assert_int_equal(back[i].bytes, records[i].bytes);
    }
    assert_int_equal(pb_cupti_dropped(trace), 0);

    json_t *summary = pb_cupti_summary_json(trace);
    assert_non_null(summary);
    assert_int_equal(get_u64(summary, "span_ns"), 3900 - 900);
    assert_int_equal(get_u64(summary, "dropped"), 0);

    /* Kernels by total time: late 3000, normalize 100, resize 60, crop 10. */
    json_t *kernels = json_object_get(summary, "kernels");
    assert_int_equal(json_array_size(kernels), 4);
    static const struct {
        const char *name;
        uint64_t count, total_ns, p50_ns, max_ns;
    } want[] = {
        {"late", 1, 3000, 3000, 3000},
        {"normalize", 1, 100, 100, 100},
        {"resize", 3, 60, 20, 30},
        {"crop", 2, 10, 5, 5},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(want); i++) {
        json_t *k = json_array_get(kernels, i);
        assert_string_equal(get_string(k, "name"), want[i].name);
        assert_int_equal(get_u64(k, "count"), want[i].count);
        assert_int_equal(get_u64(k, "total_ns"), want[i].total_ns);
        assert_int_equal(get_u64(k, "p50_ns"), want[i].p50_ns);
        assert_int_equal(get_u64(k, "max_ns"), want[i].max_ns);
        assert_true(
            fabs(get_real(k, "mean_ns") - (double)want[i].total_ns / (double)want[i].count) < 1e-9);
    }

    /* Copies by (kind, pinned), most time first. */
    json_t *copies = json_object_get(summary, "copies");
    assert_int_equal(json_array_size(copies), 4);
    static const struct {
        const char *kind;
        bool pinned;
        uint64_t count, bytes, total_ns;
    } want_copies[] = {
        {"HtoD", false, 1, 1000, 500},
        {"HtoD", true, 2, 4000, 400},
        {"DtoH", true, 1, 200, 50},
        {"Memset", false, 1, 4000, 40},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(want_copies); i++) {
        json_t *c = json_array_get(copies, i);
        assert_string_equal(get_string(c, "kind"), want_copies[i].kind);
        assert_int_equal(json_is_true(json_object_get(c, "pinned")), want_copies[i].pinned);
        assert_int_equal(get_u64(c, "count"), want_copies[i].count);
        assert_int_equal(get_u64(c, "bytes"), want_copies[i].bytes);
        assert_int_equal(get_u64(c, "total_ns"), want_copies[i].total_ns);
        double gb_per_s = (double)want_copies[i].bytes / (double)want_copies[i].total_ns;
        assert_true(fabs(get_real(c, "gb_per_s") - gb_per_s) < 1e-12);
    }
    /* 4000 bytes in 400 ns is 10 GB/s. */
    assert_true(fabs(get_real(json_array_get(copies, 1), "gb_per_s") - 10.0) < 1e-12);

    json_decref(summary);
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_cupti_stop(trace, msg, sizeof(msg)), 0); /* not recording: no-op */
    pb_cupti_free(trace);
}

static void test_summary_of_empty_trace(void **state)
{
    (void)state;
    struct pb_cupti_trace *trace = pb_cupti_trace_from_records(NULL, 0);
    assert_non_null(trace);
    json_t *summary = pb_cupti_summary_json(trace);
    assert_non_null(summary);
    assert_int_equal(json_array_size(json_object_get(summary, "kernels")), 0);
    assert_int_equal(json_array_size(json_object_get(summary, "copies")), 0);
    assert_int_equal(get_u64(summary, "span_ns"), 0);
    json_decref(summary);
    pb_cupti_free(trace);
    pb_cupti_free(NULL);
}

static uint64_t rng_state = 4242;
static uint64_t rnd(void)
{
    return pb_test_rnd(&rng_state);
}

/* Random records against sums, medians and maxima computed name by name
 * with plain loops. */
static void test_summary_matches_reference_on_random_records(void **state)
{
    (void)state;
    static const char *const kernel_names[] = {"k0", "k1", "k2", "k3", "k4"};
    static const char *const copy_names[] = {"HtoD", "DtoH", "DtoD"};
    const size_t n = 5000;
    struct pb_cupti_record *records = malloc(n * sizeof(*records));
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t start = 1000000 + rnd() % 1000000, duration = rnd() % 100000;
        enum pb_cupti_kind kind = (enum pb_cupti_kind)(rnd() % 3);
        const char *name = kind == PB_CUPTI_KERNEL   ? kernel_names[rnd() % 5]
                           : kind == PB_CUPTI_MEMCPY ? copy_names[rnd() % 3]
                                                     : "Memset";
        records[i] =
            record(kind, name, start, duration, kind == PB_CUPTI_KERNEL ? 0 : rnd() % 1000000,
                   kind == PB_CUPTI_MEMCPY && rnd() % 2, (uint32_t)(rnd() % 4));
        first = start < first ? start : first;
        last = start + duration > last ? start + duration : last;
    }
    struct pb_cupti_trace *trace = pb_cupti_trace_from_records(records, n);
    json_t *summary = pb_cupti_summary_json(trace);
    assert_int_equal(get_u64(summary, "span_ns"), last - first);

    json_t *kernels = json_object_get(summary, "kernels");
    uint64_t previous_total = UINT64_MAX;
    uint64_t *durations = malloc(n * sizeof(*durations));
    size_t index;
    json_t *k;
    json_array_foreach(kernels, index, k)
    {
        const char *name = get_string(k, "name");
        size_t count = 0;
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++)
            if (records[i].kind == PB_CUPTI_KERNEL && strcmp(records[i].name, name) == 0) {
                durations[count++] = records[i].end_ns - records[i].start_ns;
                total += records[i].end_ns - records[i].start_ns;
            }
        assert_true(count > 0);
        qsort(durations, count, sizeof(*durations), pb_test_cmp_u64);
        assert_int_equal(get_u64(k, "count"), count);
        assert_int_equal(get_u64(k, "total_ns"), total);
        assert_int_equal(get_u64(k, "p50_ns"), durations[(count + 1) / 2 - 1]);
        assert_int_equal(get_u64(k, "max_ns"), durations[count - 1]);
        assert_true(total <= previous_total);
        previous_total = total;
    }
    assert_int_equal(json_array_size(kernels), 5);

    json_t *copies = json_object_get(summary, "copies");
    size_t copy_records = 0;
    json_t *c;
    json_array_foreach(copies, index, c)
    {
        const char *kind = get_string(c, "kind");
        bool pinned = json_is_true(json_object_get(c, "pinned"));
        uint64_t count = 0, bytes = 0, total = 0;
        for (size_t i = 0; i < n; i++)
            if (records[i].kind != PB_CUPTI_KERNEL && strcmp(records[i].name, kind) == 0 &&
                records[i].pinned == pinned) {
                count++;
                bytes += records[i].bytes;
                total += records[i].end_ns - records[i].start_ns;
            }
        assert_int_equal(get_u64(c, "count"), count);
        assert_int_equal(get_u64(c, "bytes"), bytes);
        assert_int_equal(get_u64(c, "total_ns"), total);
        assert_true(fabs(get_real(c, "gb_per_s") - (double)bytes / (double)total) <
                    1e-9 * (double)bytes / (double)total);
        copy_records += count;
    }
    assert_int_equal(json_array_size(copies), 7); /* 3 kinds x pinned or not, memset */
    size_t expected_copy_records = 0;
    for (size_t i = 0; i < n; i++)
        expected_copy_records += records[i].kind != PB_CUPTI_KERNEL;
    assert_int_equal(copy_records, expected_copy_records);

    free(durations);
    json_decref(summary);
    pb_cupti_free(trace);
    free(records);
}

/* ---- Chrome trace ----------------------------------------------------- */

static size_t count_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            count++;
    closedir(d);
    return count;
}

static void test_chrome_trace(void **state)
{
    (void)state;
    const struct pb_cupti_record records[] = {
        record(PB_CUPTI_MEMCPY, "HtoD", 5000, 2500, 1 << 20, true, 13),
        record(PB_CUPTI_KERNEL, "void resize<\"q\\x\">(int)", 4000, 1500, 0, false, 14),
        record(PB_CUPTI_MEMSET, "Memset", 9000, 1000, 4096, false, 13),
        record(PB_CUPTI_KERNEL, "untimed", 0, 0, 0, false, 14), /* CUPTI could not time it */
    };
    struct pb_cupti_trace *trace = pb_cupti_trace_from_records(records, PB_ARRAY_LEN(records));
    char dir[600], path[700], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/trace", workdir);
    snprintf(path, sizeof(path), "%s/gpu.json", dir);
    assert_int_equal(pb_cupti_write_chrome_trace(trace, path, msg, sizeof(msg)), -1);
    assert_non_null(strstr(msg, path)); /* no such folder: says which file */
    assert_int_equal(mkdir(dir, 0755), 0);
    msg[0] = '\0';
    if (pb_cupti_write_chrome_trace(trace, path, msg, sizeof(msg)) != 0)
        fail_msg("%s", msg);
    assert_int_equal(count_files(dir), 1); /* the temporary file is gone */

    json_error_t error;
    json_t *root = json_load_file(path, 0, &error);
    if (!root)
        fail_msg("%s:%d: %s", path, error.line, error.text);
    assert_string_equal(get_string(root, "displayTimeUnit"), "ms");
    json_t *events = json_object_get(root, "traceEvents");
    assert_int_equal(json_array_size(events), 3);

    json_t *copy = json_array_get(events, 0);
    assert_string_equal(get_string(copy, "name"), "HtoD");
    assert_string_equal(get_string(copy, "cat"), "memcpy");
    assert_string_equal(get_string(copy, "ph"), "X");
    assert_true(fabs(get_real(copy, "ts") - 1.0) < 1e-9); /* 1000 ns after the kernel */
    assert_true(fabs(get_real(copy, "dur") - 2.5) < 1e-9);
    assert_int_equal(get_u64(copy, "pid"), 0);
    assert_int_equal(get_u64(copy, "tid"), 13);
    json_t *args = json_object_get(copy, "args");
    assert_int_equal(get_u64(args, "bytes"), 1 << 20);
    assert_true(json_is_true(json_object_get(args, "pinned")));

    json_t *kernel = json_array_get(events, 1);
    assert_string_equal(get_string(kernel, "name"), "void resize<\"q\\x\">(int)");
    assert_string_equal(get_string(kernel, "cat"), "kernel");
    assert_true(fabs(get_real(kernel, "ts")) < 1e-12); /* the first record */
    assert_true(fabs(get_real(kernel, "dur") - 1.5) < 1e-9);
    assert_int_equal(get_u64(kernel, "tid"), 14);

    json_t *memset_event = json_array_get(events, 2);
    assert_string_equal(get_string(memset_event, "cat"), "memset");
    assert_true(fabs(get_real(memset_event, "ts") - 5.0) < 1e-9);
    assert_int_equal(get_u64(json_object_get(memset_event, "args"), "bytes"), 4096);
    json_decref(root);

    /* An empty trace is a valid file with no events. */
    struct pb_cupti_trace *empty = pb_cupti_trace_from_records(NULL, 0);
    assert_int_equal(pb_cupti_write_chrome_trace(empty, path, msg, sizeof(msg)), 0);
    root = json_load_file(path, 0, &error);
    assert_non_null(root);
    assert_int_equal(json_array_size(json_object_get(root, "traceEvents")), 0);
    json_decref(root);
    pb_cupti_free(empty);
    pb_cupti_free(trace);
}

/* ---- without a device ------------------------------------------------- */

static void test_bandwidth_without_device(void **state)
{
    (void)state;
    if (have_device())
        skip();
    struct pb_h2d_bandwidth bw;
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_gpu_h2d_bandwidth(8 << 20, 10, &bw, msg, sizeof(msg)), -1);
    if (strncmp(msg, "no CUDA device", 14) != 0 && strcmp(msg, "built without CUDA") != 0)
        fail_msg("unexpected message: %s", msg);
    assert_int_equal(bw.bytes, 8 << 20);
    assert_true(bw.pinned_gb_s == 0 && bw.pageable_gb_s == 0);
}

static void test_clocks_without_device(void **state)
{
    (void)state;
    if (have_device())
        skip();
    struct pb_gpu_clocks c;
    memset(&c, 0xff, sizeof(c));
    assert_int_equal(pb_gpu_clocks_read(0, &c), -1);
    assert_false(c.available);
    assert_true(c.why[0] != '\0');
    assert_int_equal(c.sm_mhz, 0);
}

/* Without a device CUPTI may refuse to start, or start and record
 * nothing; either way nothing crashes, a refusal says why, and a started
 * trace stops and frees. */
static void test_cupti_without_device(void **state)
{
    (void)state;
    if (have_device())
        skip();
    struct pb_cupti_trace *trace = (struct pb_cupti_trace *)&trace;
    char msg[PB_MSG_MAX] = "";
    int rc = pb_cupti_start(&trace, msg, sizeof(msg));
    if (rc != 0) {
        assert_int_equal(rc, -1);
        assert_null(trace);
        assert_true(msg[0] != '\0');
        print_message("pb_cupti_start: %s\n", msg);
        return;
    }
    assert_non_null(trace);
    msg[0] = '\0';
    rc = pb_cupti_stop(trace, msg, sizeof(msg));
    assert_true(rc == 0 || msg[0] != '\0');
    const struct pb_cupti_record *records;
    assert_int_equal(pb_cupti_records(trace, &records), 0);
    pb_cupti_free(trace);
}

/* ---- with a device ---------------------------------------------------- */

static void test_clocks_on_device(void **state)
{
    (void)state;
    if (!have_device())
        skip();
    struct pb_gpu_clocks c;
    if (pb_gpu_clocks_read(0, &c) != 0)
        fail_msg("pb_gpu_clocks_read: %s", c.why);
    assert_true(c.available);
    assert_true(c.sm_mhz > 0 && c.mem_mhz > 0 && c.max_sm_mhz > 0);
    print_message("SM %u MHz of %u, memory %u MHz, throttle 0x%llx '%s'\n", c.sm_mhz, c.max_sm_mhz,
                  c.mem_mhz, c.throttle, c.throttle_text);
    assert_int_equal(pb_gpu_clocks_read(1 << 20, &c), -1); /* no such device */
    assert_true(c.why[0] != '\0');
}

static void test_bandwidth_on_device(void **state)
{
    (void)state;
    if (!have_device())
        skip();
    struct pb_h2d_bandwidth bw;
    char msg[PB_MSG_MAX];
    if (pb_gpu_h2d_bandwidth(8 << 20, 20, &bw, msg, sizeof(msg)) != 0)
        fail_msg("pb_gpu_h2d_bandwidth: %s", msg);
    print_message("8 MiB host to device: pinned %.2f GB/s, pageable %.2f GB/s\n", bw.pinned_gb_s,
                  bw.pageable_gb_s);
    assert_int_equal(bw.bytes, 8 << 20);
    assert_true(bw.pinned_gb_s > 0);
    assert_true(bw.pageable_gb_s > 0);
    assert_int_equal(pb_gpu_h2d_bandwidth(0, 20, &bw, msg, sizeof(msg)), -1);
}

#if PB_HAVE_CUDA
/* A trace of copies and a memset made here: the host-to-device copies are
 * found with their size, pinned flag and stream. */
static void test_cupti_trace_on_device(void **state)
{
    (void)state;
    if (!have_device())
        skip();
    struct pb_cupti_trace *trace;
    char msg[PB_MSG_MAX];
    if (pb_cupti_start(&trace, msg, sizeof(msg)) != 0)
        fail_msg("pb_cupti_start: %s", msg);
    struct pb_cupti_trace *second;
    assert_int_equal(pb_cupti_start(&second, msg, sizeof(msg)), -1); /* one at a time */
    assert_null(second);

    const size_t bytes = 1 << 20;
    void *device_buffer = NULL, *pinned = NULL;
    assert_int_equal(cudaMalloc(&device_buffer, bytes), cudaSuccess);
    assert_int_equal(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault), cudaSuccess);
    memset(pinned, 1, bytes);
    for (int i = 0; i < 3; i++)
        assert_int_equal(cudaMemcpy(device_buffer, pinned, bytes, cudaMemcpyHostToDevice),
                         cudaSuccess);
    assert_int_equal(cudaMemset(device_buffer, 0, bytes), cudaSuccess);
    assert_int_equal(cudaMemcpy(pinned, device_buffer, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    if (pb_cupti_stop(trace, msg, sizeof(msg)) != 0)
        fail_msg("pb_cupti_stop: %s", msg);

    const struct pb_cupti_record *records;
    size_t n = pb_cupti_records(trace, &records);
    /* Only this test's copies are counted (they are the 1 MiB ones): the
     * runtime may make small copies of its own. */
    size_t h2d = 0, d2h = 0, memsets = 0;
    for (size_t i = 0; i < n; i++) {
        const struct pb_cupti_record *r = &records[i];
        if (r->bytes != bytes)
            continue;
        if (r->kind == PB_CUPTI_MEMCPY && strcmp(r->name, "HtoD") == 0) {
            assert_true(r->pinned);
            assert_true(r->end_ns > r->start_ns);
            h2d++;
        }
        d2h += r->kind == PB_CUPTI_MEMCPY && strcmp(r->name, "DtoH") == 0;
        memsets += r->kind == PB_CUPTI_MEMSET;
    }
    assert_int_equal(h2d, 3);
    assert_int_equal(d2h, 1);
    assert_int_equal(memsets, 1);
    json_t *summary = pb_cupti_summary_json(trace);
    assert_true(get_u64(summary, "span_ns") > 0);
    json_decref(summary);

    /* Stopped: later work is not recorded, and a new trace can start. */
    assert_int_equal(cudaMemcpy(device_buffer, pinned, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(pb_cupti_records(trace, &records), n);
    pb_cupti_free(trace);
    if (pb_cupti_start(&trace, msg, sizeof(msg)) != 0)
        fail_msg("pb_cupti_start again: %s", msg);
    assert_int_equal(pb_cupti_stop(trace, msg, sizeof(msg)), 0);
    pb_cupti_free(trace);

    cudaFreeHost(pinned);
    cudaFree(device_buffer);
}
#else
static void test_cupti_trace_on_device(void **state)
{
    (void)state;
    skip();
}
#endif

/* Kernel names as CUPTI gives them (mangled, the anonymous namespace of
 * kernels/gpu.cu) read as the kernel's name with its template arguments. */
static void test_kernel_labels(void **state)
{
    (void)state;
    char label[96];
    pb_cupti_kernel_label("_ZN38_GLOBAL__N__21283914_6_gpu_cu_cedd018316normalize_kernelIfLNS_"
                          "14normalize_kindE0EEEvNS_14normalize_argsE",
                          label, sizeof(label));
    print_message("label: %s\n", label);
    assert_true(strncmp(label, "normalize_kernel<", 17) == 0);
    assert_int_equal(label[strlen(label) - 1], '>'); /* no parameter list after it */
    pb_cupti_kernel_label("_ZN38_GLOBAL__N__21283914_6_gpu_cu_cedd018311busy_kernelEm", label,
                          sizeof(label));
    assert_string_equal(label, "busy_kernel");
    pb_cupti_kernel_label("_Z6squarePfi", label, sizeof(label));
    assert_string_equal(label, "square");
    pb_cupti_kernel_label("my_c_kernel", label, sizeof(label)); /* extern "C": as it is */
    assert_string_equal(label, "my_c_kernel");
    pb_cupti_kernel_label("_ZN3", label, sizeof(label)); /* cut short: kept, never overrun */
    assert_string_equal(label, "_ZN3");
    pb_cupti_kernel_label(NULL, label, sizeof(label));
    assert_string_equal(label, "(unnamed kernel)");
    char tiny[8];
    pb_cupti_kernel_label("_Z6squarePfi", tiny, sizeof(tiny));
    assert_string_equal(tiny, "square");
    pb_cupti_kernel_label("a_rather_long_kernel_name", tiny, sizeof(tiny));
    assert_string_equal(tiny, "a_rathe");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary_of_given_records),
        cmocka_unit_test(test_summary_of_empty_trace),
        cmocka_unit_test(test_summary_matches_reference_on_random_records),
        cmocka_unit_test(test_chrome_trace),
        cmocka_unit_test(test_kernel_labels),
        cmocka_unit_test(test_bandwidth_without_device),
        cmocka_unit_test(test_clocks_without_device),
        cmocka_unit_test(test_cupti_without_device),
        cmocka_unit_test(test_clocks_on_device),
        cmocka_unit_test(test_bandwidth_on_device),
        cmocka_unit_test(test_cupti_trace_on_device),
    };
    pb_test_tmpdir_use(workdir);
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
