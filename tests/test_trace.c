/* The CPU trace (bench/run/trace.h): records kept up to the cap and counted
 * past it, valid JSON for any file name, and end to end, the trace of
 * configs/image.yaml names every pipeline stage and the loop's wait, with
 * a span per stage for every sample a worker built in the measured part. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/run/trace.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-trace-XXXXXX";
static const char *source_dir;

static json_t *load(const char *name)
{
    return pb_test_load_json(workdir, name);
}

static void test_cap_and_file_names(void **state)
{
    (void)state;
    char *paths[] = {"plain.jpg", "quote\"back\\slash\n\x01.jpg", "caf\xc3\xa9-\xff.jpg"};
    struct pb_dataset ds = {.count = 3, .paths = paths};
    struct pb_trace *t = pb_trace_new(&ds, 4);
    assert_non_null(t);
    uint16_t decode = pb_trace_name(t, "decode");
    assert_int_equal(pb_trace_name(t, "decode"), decode);
    assert_int_equal(decode, PB_TRACE_FIXED_NAMES);
    struct pb_trace_thread *loop = pb_trace_thread(t, 0), *w0 = pb_trace_thread(t, 1);
    assert_non_null(loop);
    assert_non_null(w0);
    for (uint64_t i = 0; i < 6; i++) /* 4 kept, 2 dropped */
        pb_trace_record(w0, decode, PB_TRACE_SPAN, i % 3, 1000 + i * 100, 1050 + i * 100, 0);
    pb_trace_record(loop, PB_TRACE_WAIT, PB_TRACE_SPAN, 0, 900, 1400, 2);
    pb_trace_record(loop, PB_TRACE_QUEUE, PB_TRACE_COUNTER, 0, 1400, 1400, 2);
    uint64_t kept, dropped;
    pb_trace_counts(t, &kept, &dropped);
    assert_int_equal(kept, 6);
    assert_int_equal(dropped, 2);
    char path[600], msg[256];
    snprintf(path, sizeof(path), "%s/unit.trace.json", workdir);
    assert_int_equal(pb_trace_write(t, path, NULL, msg, sizeof(msg)), PB_OK);
    pb_trace_free(t);

    json_t *root = load("unit.trace.json");
    json_t *events = json_object_get(root, "traceEvents");
    assert_true(json_is_array(events));
    size_t i, spans = 0, notes = 0, counters = 0;
    json_t *e;
    bool quoted = false, utf8 = false;
    json_array_foreach (events, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *file = json_string_value(json_object_get(json_object_get(e, "args"), "file"));
        if (strcmp(ph, "X") == 0 && strcmp(name, "decode") == 0)
            spans++;
        if (strcmp(ph, "C") == 0)
            counters++;
        if (strstr(name, "trace buffer full"))
            notes++;
        if (file && strcmp(file, "quote\"back\\slash\n\x01.jpg") == 0)
            quoted = true;
        /* UTF-8 reads as itself; a stray byte (0xff) as the character it
         * stands for in Latin-1, U+00FF. */
        if (file && strcmp(file, "caf\xc3\xa9-\xc3\xbf.jpg") == 0)
            utf8 = true;
        /* Time 0 is the first record (the wait at 900 ns). */
        if (strcmp(ph, "X") == 0 && strcmp(name, "wait") == 0)
            assert_true(json_real_value(json_object_get(e, "ts")) == 0.0);
    }
    assert_int_equal(spans, 4);
    assert_int_equal(counters, 1);
    assert_int_equal(notes, 1);
    assert_true(quoted);
    assert_true(utf8);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "otherData"),
                                                        "dropped")),
                     2);
    json_decref(root);
}

/* Per worker track, the samples each stage has a span for. */
static void test_image_pipeline_trace(void **state)
{
    (void)state;
    char args[2048], *err;
    snprintf(args, sizeof(args),
             "run '%s/configs/image.yaml' -s dataset.path=data -s dataset.generate.count=48 "
             "-s run.warmup_batches=1 -s run.min_time_s=0.2 -s run.max_time_s=0.5 "
             "-s run.repeats=1 -s loader.batch_size=8 -s run.step_ms=1 -s run.trace=true -q "
             "-o img.json",
             source_dir);
    int rc = pb_test_run_pbench(workdir, args, &err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    free(err);
    json_t *result = load("img.json");
    const char *trace_file = json_string_value(json_object_get(result, "trace"));
    assert_non_null(trace_file);
    assert_non_null(strstr(trace_file, "img.trace.json"));
    json_t *point = json_array_get(json_object_get(result, "points"), 0);
    json_int_t measured = json_integer_value(json_object_get(point, "samples"));
    assert_true(measured > 0);
    /* The slowest samples of each stage, with their files. */
    json_t *stage_rows = json_object_get(point, "stages"), *row;
    size_t r;
    int with_slowest = 0;
    json_array_foreach (stage_rows, r, row) {
        json_t *slowest = json_object_get(row, "slowest");
        if (!slowest)
            continue;
        with_slowest++;
        assert_int_equal(json_array_size(slowest), 5);
        json_int_t prev = INT64_MAX;
        for (size_t k = 0; k < 5; k++) {
            json_t *one = json_array_get(slowest, k);
            json_int_t ns = json_integer_value(json_object_get(one, "ns"));
            assert_true(ns > 0 && ns <= prev);
            prev = ns;
            assert_non_null(strstr(json_string_value(json_object_get(one, "file")), ".jpg"));
        }
    }
    assert_int_equal(with_slowest, 5); /* every pipeline stage; collate has no samples */
    /* The terminal report names the dominant stage's slowest files. */
    rc = pb_test_run_pbench(workdir, "report img.json", &err);
    if (rc != 0)
        fail_msg("report: exit %d: %s", rc, err);
    free(err);
    char out_path[600];
    snprintf(out_path, sizeof(out_path), "%s/out.txt", workdir);
    char *report = pb_test_read_file(out_path, NULL, false);
    const char *line = strstr(report, "samples by wall time (p50 ");
    assert_non_null(line);
    assert_non_null(strstr(line, ".jpg "));
    free(report);

    static const char *const stages[] = {"read", "decode", "random_resized_crop", "flip",
                                         "normalize"};
    enum { STAGES = 5, TRACKS = 8, SAMPLES = 48 };
    /* spans[track][stage][sample] */
    static int spans[TRACKS][STAGES][SAMPLES];
    memset(spans, 0, sizeof(spans));
    size_t per_stage[STAGES] = {0}, waits = 0, steps = 0, counters = 0, batches = 0;
    json_t *root = load("img.trace.json");
    json_t *events = json_object_get(root, "traceEvents"), *e;
    size_t i;
    json_array_foreach (events, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        json_int_t tid = json_integer_value(json_object_get(e, "tid"));
        json_t *args_obj = json_object_get(e, "args");
        if (strcmp(ph, "C") == 0 && strcmp(name, "queue depth") == 0)
            counters++;
        if (strcmp(ph, "X") != 0)
            continue;
        assert_true(json_real_value(json_object_get(e, "dur")) >= 0);
        waits += strcmp(name, "wait") == 0 && tid == 0;
        steps += strcmp(name, "step") == 0 && tid == 0;
        batches += strcmp(name, "batch") == 0 && tid > 0;
        for (int k = 0; k < STAGES; k++) {
            if (strcmp(name, stages[k]) != 0)
                continue;
            json_int_t sample = json_integer_value(json_object_get(args_obj, "sample"));
            const char *file = json_string_value(json_object_get(args_obj, "file"));
            assert_non_null(file);
            assert_non_null(strstr(file, ".jpg"));
            assert_true(tid >= 1 && tid < TRACKS);
            assert_true(sample >= 0 && sample < SAMPLES);
            spans[tid][k][sample]++;
            per_stage[k]++;
        }
    }
    /* Every stage of every sample a worker built: where one stage has a
     * span for a sample on a track, all have. */
    for (int tid = 1; tid < TRACKS; tid++)
        for (int s = 0; s < SAMPLES; s++)
            for (int k = 1; k < STAGES; k++)
                assert_int_equal(spans[tid][k][s], spans[tid][0][s]);
    for (int k = 0; k < STAGES; k++)
        assert_true(per_stage[k] >= (size_t)measured); /* workers build ahead */
    assert_true(waits > 0);
    assert_true(steps > 0);
    assert_true(counters == waits);
    assert_true(batches * 8 >= (size_t)measured);
    json_decref(root);
    json_decref(result);

    /* --trace FILE names the file (its folder exists: pbench makes none
     * for it); a sweep's points and repeats are told apart by the marker
     * where each measured part starts. */
    char sub[600];
    snprintf(sub, sizeof(sub), "%s/sub", workdir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(args, sizeof(args),
             "run '%s/configs/null.yaml' -s dataset.path=nd -s dataset.generate.count=32 "
             "-s run.min_time_s=0.1 -s run.max_time_s=0.3 -s run.repeats=2 "
             "-a loader.workers=1,2 -q --trace sub/t.json -o n.json",
             source_dir);
    rc = pb_test_run_pbench(workdir, args, &err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    free(err);
    root = load("sub/t.json");
    assert_true(json_array_size(json_object_get(root, "traceEvents")) > 10);
    bool marked[2][2] = {{false}};
    int markers = 0;
    json_array_foreach(json_object_get(root, "traceEvents"), i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (strcmp(json_string_value(json_object_get(e, "ph")), "i") != 0 ||
            strncmp(name, "measuring starts: ", 18) != 0)
            continue;
        json_int_t p = json_integer_value(json_object_get(json_object_get(e, "args"), "point"));
        json_int_t r = json_integer_value(json_object_get(json_object_get(e, "args"), "repeat"));
        char want[64];
        snprintf(want, sizeof(want), "measuring starts: point %d, repeat %d", (int)p, (int)r);
        assert_string_equal(name, want);
        assert_true(p >= 1 && p <= 2 && r >= 1 && r <= 2);
        marked[p - 1][r - 1] = true;
        markers++;
    }
    assert_int_equal(markers, 4);
    assert_true(marked[0][0] && marked[0][1] && marked[1][0] && marked[1][1]);
    json_decref(root);
}

int main(void)
{
    source_dir = getenv("PBENCH_SOURCE_DIR");
    if (!source_dir || !getenv("PBENCH_BINARY")) {
        fprintf(stderr, "PBENCH_BINARY and PBENCH_SOURCE_DIR must be set (ctest sets them)\n");
        return 1;
    }
    pb_test_tmpdir_use(workdir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_and_file_names),
        cmocka_unit_test(test_image_pipeline_trace),
    };
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
