/* Tests for bench/result/result_json.c: the result file both ways. Every
 * field survives the round trip, files are written atomically, readers
 * name the key, file, line and column of what they refuse, impossible
 * values are refused, names keep their bytes, and non-finite numbers are
 * written as null and read back as NaN (docs/results.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/result/result.h"
#include "tests/result_fixture.h"
#include "tests/testutil.h"

static void test_json_round_trip(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        struct pb_result result, back;
        char msg[PB_MSG_MAX] = "";
        make_result(&result, seed);

        json_t *root = pb_result_to_json(&result);
        assert_non_null(root);
        char *text = json_dumps(root, JSON_INDENT(2));
        assert_non_null(text);
        json_decref(root);
        json_error_t error;
        json_t *loaded = json_loads(text, 0, &error);
        assert_non_null(loaded);
        free(text);

        int rc = pb_result_from_json(loaded, &back, msg, sizeof(msg));
        if (rc != PB_OK)
            fail_msg("from_json: %s", msg);
        json_decref(loaded);
        assert_result_equal(&result, &back);
        assert_true(back.points[0].repeats[0].rss[0].own_bytes > 0);

        /* Derived stage fields are written for readers that don't recompute. */
        json_t *again = pb_result_to_json(&back);
        json_t *stage = json_array_get(
            json_object_get(json_array_get(json_object_get(again, "points"), 0), "stages"), 0);
        assert_int_equal(json_integer_value(json_object_get(stage, "count")),
                         result.points[0].stages[0].hist.count);
        assert_int_equal(json_integer_value(json_object_get(stage, "p99_ns")),
                         pb_hist_quantile(&result.points[0].stages[0].hist, 0.99));
        json_t *bins = json_object_get(json_object_get(stage, "histogram"), "bins");
        assert_true(json_array_size(bins) > 0);
        assert_int_equal(json_array_size(json_array_get(bins, 0)), 3);
        json_decref(again);

        /* A result from a pbench before own_bytes: its samples read as
         * none of pbench's own. */
        root = pb_result_to_json(&result);
        json_t *rss = json_object_get(
            json_array_get(json_object_get(json_array_get(json_object_get(root, "points"), 0),
                                           "repeats"),
                           0),
            "rss");
        assert_int_equal(json_object_del(rss, "own_bytes"), 0);
        struct pb_result old;
        assert_int_equal(pb_result_from_json(root, &old, msg, sizeof(msg)), PB_OK);
        json_decref(root);
        assert_int_equal(old.points[0].repeats[0].rss_count, result.points[0].repeats[0].rss_count);
        for (size_t i = 0; i < old.points[0].repeats[0].rss_count; i++) {
            assert_int_equal(old.points[0].repeats[0].rss[i].own_bytes, 0);
            assert_int_equal(old.points[0].repeats[0].rss[i].rss_bytes,
                             result.points[0].repeats[0].rss[i].rss_bytes);
        }
        pb_result_free(&old);

        pb_result_free(&result);
        pb_result_free(&back);
    }
    /* free is safe on a zeroed (and an already freed) struct. */
    struct pb_result empty = {0};
    pb_result_free(&empty);
    pb_result_free(&empty);
}

static void test_empty_result_round_trip(void **state)
{
    (void)state;
    struct pb_result result = {0}, back;
    char msg[PB_MSG_MAX];
    result.schema_version = PB_SCHEMA_VERSION;
    result.point_count = 1;
    result.points = calloc(1, sizeof(*result.points));
    assert_non_null(result.points);
    result.points[0].stage_count = 1;
    result.points[0].stages = calloc(1, sizeof(struct pb_stage_result));
    assert_non_null(result.points[0].stages);
    snprintf(result.points[0].stages[0].name, 64, "idle");
    pb_hist_init(&result.points[0].stages[0].hist);
    json_t *root = pb_result_to_json(&result);
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_OK);
    json_decref(root);
    assert_null(back.config);
    assert_int_equal(back.points[0].stages[0].hist.count, 0);
    assert_int_equal(back.points[0].stages[0].hist.min_ns, UINT64_MAX);
    assert_int_equal(back.points[0].repeat_count, 0);
    pb_result_free(&result);
    pb_result_free(&back);
}

static char *make_temp_dir(void)
{
    char *dir = strdup("/tmp/pbench-test-result-XXXXXX");
    assert_non_null(dir);
    assert_int_equal(pb_test_tmpdir_make(dir), 0);
    return dir;
}

static size_t count_entries(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

static char *slurp(const char *path)
{
    return pb_test_read_file(path, NULL, true);
}

static void test_write_and_read(void **state)
{
    (void)state;
    char *dir = make_temp_dir();
    char folder[512], path[PB_PATH_MAX], msg[PB_MSG_MAX] = "";
    snprintf(folder, sizeof(folder), "%s/results/nightly", dir);
    snprintf(path, sizeof(path), "%s/run.json", folder);

    struct pb_result result, back;
    make_result(&result, 42);
    /* The folder does not exist yet: write creates it. */
    int rc = pb_result_write(&result, path, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("write: %s", msg);
    assert_int_equal(count_entries(folder), 1);
    rc = pb_result_read(path, &back, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("read: %s", msg);
    assert_result_equal(&result, &back);
    pb_result_free(&back);

    /* An existing, longer file is replaced whole, and no temp file stays. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 200000; i++)
        fputs("garbage ", f);
    fclose(f);
    pb_result_free(&result);
    make_result(&result, 43);
    assert_int_equal(pb_result_write(&result, path, msg, sizeof(msg)), PB_OK);
    assert_int_equal(count_entries(folder), 1);
    char *text = slurp(path);
    assert_null(strstr(text, "garbage"));
    json_t *root = pb_result_to_json(&result);
    char *expected = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(root);
    assert_non_null(expected);
    assert_int_equal(strlen(text), strlen(expected) + 1); /* plus a final newline */
    assert_memory_equal(text, expected, strlen(expected));
    free(text);
    free(expected);
    assert_int_equal(pb_result_read(path, &back, msg, sizeof(msg)), PB_OK);
    assert_result_equal(&result, &back);
    pb_result_free(&back);

    /* A write that cannot rename (the target is a folder) leaves nothing. */
    char blocked[PB_PATH_MAX];
    snprintf(blocked, sizeof(blocked), "%s/blocked.json", folder);
    assert_int_equal(mkdir(blocked, 0777), 0);
    assert_int_equal(pb_result_write(&result, blocked, msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, blocked));
    assert_int_equal(count_entries(folder), 2); /* run.json and the folder */

    /* Parse errors name the file, line and column. */
    snprintf(path, sizeof(path), "%s/broken.json", folder);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\n  \"schema_version\": 1,\n  \"name\": oops\n}\n", f);
    fclose(f);
    assert_int_equal(pb_result_read(path, &back, msg, sizeof(msg)), PB_ERR);
    char prefix[PB_PATH_MAX + 16];
    snprintf(prefix, sizeof(prefix), "%s:3:", path);
    assert_memory_equal(msg, prefix, strlen(prefix));

    pb_result_free(&result);
    pb_test_tmpdir_remove(dir);
    free(dir);
}

static void test_reader_messages(void **state)
{
    (void)state;
    struct pb_result result, back;
    char msg[PB_MSG_MAX];
    make_result(&result, 7);
    json_t *root = pb_result_to_json(&result);

    json_object_set_new(root, "schema_version", json_integer(PB_SCHEMA_VERSION + 1));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "schema_version: 2 is newer than this pbench reads (1); "
                             "use a newer pbench to read it");
    assert_int_equal(back.point_count, 0);
    assert_null(back.points);
    json_object_set_new(root, "schema_version", json_integer(PB_SCHEMA_VERSION));

    json_t *repeat = json_array_get(
        json_object_get(json_array_get(json_object_get(root, "points"), 0), "repeats"), 1);
    json_object_set_new(repeat, "wall_s", json_string("fast"));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "points[0].repeats[1].wall_s: expected a number");
    json_object_set_new(repeat, "wall_s", json_real(1.5));

    json_t *wait = json_object_get(json_object_get(repeat, "batch_records"), "wait_ns");
    json_array_set_new(wait, 2, json_integer(-5));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg,
                        "points[0].repeats[1].batch_records.wait_ns[2]: expected a non-negative "
                        "integer");
    json_array_remove(wait, 2);
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, "points[0].repeats[1].batch_records.wait_ns: has "));
    json_array_insert_new(wait, 2, json_integer(5));

    json_t *bins = json_object_get(
        json_object_get(json_array_get(json_object_get(repeat, "stages"), 0), "histogram"),
        "bins");
    json_t *bin = json_array_get(bins, 0);
    json_t *lo = json_deep_copy(json_array_get(bin, 0));
    json_array_set_new(bin, 0, json_integer(1000001)); /* inside a bucket, not its edge */
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "points[0].repeats[1].stages[0].histogram.bins[0]: 1000001 is not "
                             "the low edge of a histogram bucket");
    json_array_set_new(bin, 0, lo);

    json_object_set_new(root, "interrupted", json_integer(1));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "interrupted: expected true or false");
    json_object_set_new(root, "interrupted", json_true());

    json_object_set_new(json_object_get(root, "machine"), "cores", json_string("many"));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "machine.cores: expected an integer");
    json_object_set_new(json_object_get(root, "machine"), "cores", json_integer(8));

    /* Restored, the document reads again. */
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_OK);
    pb_result_free(&back);

    json_t *not_result = json_pack("{s s}", "hello", "world");
    assert_int_equal(pb_result_from_json(not_result, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "schema_version: missing; this is not a pbench result file");
    json_decref(not_result);

    json_decref(root);
    pb_result_free(&result);
}

/* Values no run can produce are refused on read with their key path: a
 * negative time or rate, a rate that is not a number. */
static void test_impossible_values_rejected(void **state)
{
    (void)state;
    struct pb_result result, back;
    char msg[PB_MSG_MAX];
    make_result(&result, 7);
    json_t *root = pb_result_to_json(&result);
    json_t *point = json_array_get(json_object_get(root, "points"), 0);
    json_t *repeat = json_array_get(json_object_get(point, "repeats"), 1);
    static const struct {
        const char *key;
        double value; /* NAN: null */
        const char *want;
    } cases[] = {
        {"wall_s", -3, "points[0].repeats[1].wall_s must be >= 0, got -3"},
        {"samples_per_s", NAN,
         "points[0].repeats[1].samples_per_s must be a number >= 0, got null"},
        {"samples_per_s", -0.5, "points[0].repeats[1].samples_per_s must be >= 0, got -0.5"},
        {"stall_pct", -1, "points[0].repeats[1].stall_pct must be >= 0, got -1"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        json_t *saved = json_deep_copy(json_object_get(repeat, cases[i].key));
        json_object_set_new(repeat, cases[i].key,
                            isnan(cases[i].value) ? json_null() : json_real(cases[i].value));
        assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
        assert_string_equal(msg, cases[i].want);
        json_object_set_new(repeat, cases[i].key, saved);
    }
    json_object_set_new(point, "samples_per_s", json_real(-2));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "points[0].samples_per_s must be >= 0, got -2");
    json_object_set_new(point, "samples_per_s", json_real(10));
    json_object_set_new(repeat, "samples", json_integer(-3));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "points[0].repeats[1].samples: expected a non-negative integer");
    json_object_set_new(repeat, "samples", json_integer(3));
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_OK);
    pb_result_free(&back);
    json_decref(root);
    pb_result_free(&result);
}

/* A folder, a YAML config or an empty file given as a result says what it
 * is, not what the JSON parser expected. */
static void test_read_what_is_not_a_result(void **state)
{
    (void)state;
    char *dir = make_temp_dir();
    char path[PB_PATH_MAX], want[PB_PATH_MAX + 128], msg[PB_MSG_MAX * 2];
    struct pb_result back;
    assert_int_equal(pb_result_read(dir, &back, msg, sizeof(msg)), PB_ERR);
    snprintf(want, sizeof(want), "%s is a directory, not a result file", dir);
    assert_string_equal(msg, want);

    snprintf(path, sizeof(path), "%s/image.yaml", dir);
    static const char yaml[] = "# a config\nname: x\npipeline:\n  - read:\n";
    pb_test_write_file(path, yaml, strlen(yaml));
    assert_int_equal(pb_result_read(path, &back, msg, sizeof(msg)), PB_ERR);
    snprintf(want, sizeof(want),
             "%s is not a pbench result (JSON expected; for a config use pbench run)", path);
    assert_string_equal(msg, want);

    snprintf(path, sizeof(path), "%s/empty.json", dir);
    pb_test_write_file(path, "\n", 1);
    assert_int_equal(pb_result_read(path, &back, msg, sizeof(msg)), PB_ERR);
    snprintf(want, sizeof(want), "%s is empty, not a pbench result (JSON expected)", path);
    assert_string_equal(msg, want);
    pb_test_tmpdir_remove(dir);
    free(dir);
}

/* An error file whose name is not UTF-8 reads back as the file's own
 * bytes (errors.files_bytes), while errors.files stays readable; names in
 * UTF-8 need nothing beside them. */
static void test_error_file_names_keep_their_bytes(void **state)
{
    (void)state;
    struct pb_result result, back;
    char msg[PB_MSG_MAX] = "";
    make_result(&result, 5);
    struct pb_point_result *p = &result.points[0];
    p->error_file_count = 3;
    snprintf(p->error_files[0], 256, "data/ok.jpg: corrupt");
    snprintf(p->error_files[1], 256, "data/bad\xff\xfe.jpg: truncated");
    snprintf(p->error_files[2], 256, "data/caf\xc3\xa9.jpg: corrupt");
    json_t *root = pb_result_to_json(&result);
    char *text = json_dumps(root, 0);
    assert_non_null(text); /* valid JSON: the stray bytes are not written raw */
    json_decref(root);
    json_error_t error;
    json_t *loaded = json_loads(text, 0, &error);
    assert_non_null(loaded);
    free(text);
    json_t *errors = json_object_get(json_array_get(json_object_get(loaded, "points"), 0),
                                     "errors");
    json_t *exact = json_object_get(errors, "files_bytes");
    assert_int_equal(json_array_size(exact), 3); /* beside errors.files, entry by entry */
    assert_true(json_is_null(json_array_get(exact, 0)));
    assert_true(json_is_string(json_array_get(exact, 1)));
    assert_true(json_is_null(json_array_get(exact, 2)));
    assert_int_equal(pb_result_from_json(loaded, &back, msg, sizeof(msg)), PB_OK);
    json_decref(loaded);
    for (int k = 0; k < 3; k++)
        assert_string_equal(back.points[0].error_files[k], p->error_files[k]);
    pb_result_free(&back);
    pb_result_free(&result);
}

/* The device side of a result: figures, device rows, device info, the
 * calibrated peak and a skip survive the JSON round trip (the GPU run
 * itself needs a device; tests/test_report.c renders it). */
static void test_gpu_result(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 5);
    add_gpu_side(&result);
    const struct pb_point_result *p = &result.points[0];
    assert_true(p->gpu.copy_gb_per_s > 19.26 && p->gpu.copy_gb_per_s < 19.27);
    assert_true(p->gpu.overlap_pct > 74.99 && p->gpu.overlap_pct < 75.01);

    json_t *root = pb_result_to_json(&result);
    struct pb_result back;
    char msg[PB_MSG_MAX] = "";
    if (pb_result_from_json(root, &back, msg, sizeof(msg)) != PB_OK)
        fail_msg("from_json: %s", msg);
    json_decref(root);
    const struct pb_point_result *q = &back.points[0];
    assert_true(q->gpu.used);
    assert_int_equal(q->gpu.copy_bytes, p->gpu.copy_bytes);
    assert_int_equal(q->gpu.copy_wait_ns, p->gpu.copy_wait_ns);
    assert_true(q->gpu.overlap_pct == p->gpu.overlap_pct);
    assert_int_equal(q->gpu_device.alloc_peak_bytes, 3ull << 30);
    assert_int_equal(q->gpu_device.sm_mhz_end, 1755);
    assert_string_equal(q->gpu_device.throttle, "power cap");
    assert_true(q->stages[q->stage_count - 1].gpu);
    assert_false(q->stages[0].gpu);
    assert_int_equal(back.calibration.h2d_bytes, 38535168);
    assert_true(back.calibration.h2d_pinned_gb_s == 24.5);
    assert_string_equal(back.gpu_skipped, "nothing skipped (test)");

    pb_result_free(&back);
    pb_result_free(&result);
}

/* A result through text and back, as a file holds it; fails the test with
 * the reader's message when it refuses. */
static void round_trip(const struct pb_result *result, struct pb_result *back)
{
    char msg[PB_MSG_MAX] = "";
    json_t *root = pb_result_to_json(result);
    assert_non_null(root);
    char *text = json_dumps(root, JSON_INDENT(2));
    assert_non_null(text);
    json_decref(root);
    json_t *loaded = json_loads(text, 0, NULL);
    assert_non_null(loaded);
    free(text);
    if (pb_result_from_json(loaded, back, msg, sizeof(msg)) != PB_OK)
        fail_msg("from_json: %s", msg);
    json_decref(loaded);
}

/* Names with quotes, backslashes, control characters, non-ASCII UTF-8 and
 * dots come back byte for byte: the run's, the machine's, a stage's, an
 * axis's key and value, a warning. A count past 2^53 keeps every digit. */
static void test_odd_names_round_trip(void **state)
{
    (void)state;
    static const char odd[] = "say \"hi\" \\ \t\n caf\xc3\xa9 \xe2\x9c\x93 a.b=c";
    struct pb_result result, back;
    make_result(&result, 31);
    snprintf(result.name, sizeof(result.name), "%s", odd);
    snprintf(result.machine.hostname, sizeof(result.machine.hostname), "%s", odd);
    struct pb_point_result *p = &result.points[1];
    snprintf(p->stages[2].name, sizeof(p->stages[2].name), "%s", odd);
    snprintf(p->repeats[0].stages[2].name, sizeof(p->repeats[0].stages[2].name), "%s", odd);
    json_object_set_new(p->axes, odd, json_string(odd));
    pb_result_warn(&result, "%s", odd);
    p->repeats[1].bytes_read = (1ull << 62) + 1;
    round_trip(&result, &back);
    assert_result_equal(&result, &back);
    assert_string_equal(back.name, odd);
    assert_string_equal(back.points[1].stages[2].name, odd);
    assert_string_equal(json_string_value(json_object_get(back.points[1].axes, odd)), odd);
    assert_string_equal(back.warnings[back.warning_count - 1], odd);
    assert_int_equal(back.points[1].repeats[1].bytes_read, (1ull << 62) + 1);
    pb_result_free(&back);
    pb_result_free(&result);
}

/* Non-finite numbers have no JSON form: they are written as null and read
 * back as NaN where a figure may be missing (a repeat's windowed noise, a
 * point's noise, the overhead), while a rate a repeat must have is refused
 * with its path (docs/results.md). */
static void test_non_finite_numbers(void **state)
{
    (void)state;
    struct pb_result result, back;
    make_result(&result, 32);
    result.points[0].repeats[1].window_noise = NAN;
    result.points[0].samples_per_s_noise_pct = NAN;
    result.overhead_pct = INFINITY;
    result.overhead_noise_pct = -INFINITY;
    json_t *root = pb_result_to_json(&result);
    json_t *point = json_array_get(json_object_get(root, "points"), 0);
    json_t *repeat = json_array_get(json_object_get(point, "repeats"), 1);
    assert_true(json_is_null(json_object_get(repeat, "window_noise")));
    assert_true(json_is_null(json_object_get(point, "samples_per_s_noise_pct")));
    assert_true(json_is_null(json_object_get(json_object_get(root, "overhead"), "pct")));
    assert_true(json_is_null(json_object_get(json_object_get(root, "overhead"), "noise_pct")));
    json_decref(root);
    round_trip(&result, &back);
    assert_true(isnan(back.points[0].repeats[1].window_noise));
    assert_true(isnan(back.points[0].samples_per_s_noise_pct));
    assert_true(isnan(back.overhead_pct));
    assert_true(isnan(back.overhead_noise_pct));
    assert_close(back.points[0].samples_per_s, result.points[0].samples_per_s);
    pb_result_free(&back);

    result.points[0].repeats[1].samples_per_s = NAN;
    root = pb_result_to_json(&result);
    assert_true(json_is_null(json_object_get(
        json_array_get(json_object_get(json_array_get(json_object_get(root, "points"), 0),
                                       "repeats"),
                       1),
        "samples_per_s")));
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_result_from_json(root, &back, msg, sizeof(msg)), PB_ERR);
    assert_string_equal(msg, "points[0].repeats[1].samples_per_s must be a number >= 0, got null");
    json_decref(root);
    pb_result_free(&result);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_empty_result_round_trip),
        cmocka_unit_test(test_odd_names_round_trip),
        cmocka_unit_test(test_non_finite_numbers),
        cmocka_unit_test(test_write_and_read),
        cmocka_unit_test(test_reader_messages),
        cmocka_unit_test(test_impossible_values_rejected),
        cmocka_unit_test(test_read_what_is_not_a_result),
        cmocka_unit_test(test_error_file_names_keep_their_bytes),
        cmocka_unit_test(test_gpu_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
