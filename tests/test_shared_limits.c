/* What C and Python both apply (engines/shared.json): pbench's compiled
 * constants are the description's values, and a description changed on
 * one side only, in a scratch copy, is caught, naming the value. The
 * Python side reads the same file (engines/torch/tests/test_shared.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/run/batch_frame.h"
#include "pipelines/remote.h"
#include "pipelines/remote_curl.h"

/* A value of the description at a dotted path ("retry_backoff.cap_ms"). */
static double described(const json_t *doc, const char *path)
{
    char key[128];
    snprintf(key, sizeof key, "%s", path);
    const json_t *at = doc;
    for (char *save = NULL, *part = strtok_r(key, ".", &save); part && at;
         part = strtok_r(NULL, ".", &save))
        at = json_object_get(at, part);
    return json_is_number(at) ? json_number_value(at) : NAN;
}

/* Compares the constants pbench was built with to the description at
 * path; the number of values that differ, each named in report. */
static int differences(const char *path, char *report, size_t size)
{
    json_t *doc = json_load_file(path, 0, NULL);
    if (!doc) {
        snprintf(report, size, "%s: not readable JSON", path);
        return -1;
    }
    static const struct {
        const char *path;
        double built;
    } values[] = {
        {"engine_max_columns", PB_ENGINE_MAX_COLUMNS},
        {"engine_max_counters", PB_ENGINE_MAX_COUNTERS},
        {"frame_max_bytes", PB_ENGINE_FRAME_MAX_BYTES},
        {"requests_in_flight.min", PB_REMOTE_REQUESTS_IN_FLIGHT_MIN},
        {"requests_in_flight.max", PB_REMOTE_REQUESTS_IN_FLIGHT_MAX},
        {"retry_backoff.first_ms", PB_REMOTE_BACKOFF_FIRST_MS},
        {"retry_backoff.cap_ms", PB_REMOTE_BACKOFF_CAP_MS},
        {"retry_backoff.jitter_low", PB_REMOTE_BACKOFF_JITTER_LOW_PCT / 100.0},
        {"retry_backoff.jitter_high", PB_REMOTE_BACKOFF_JITTER_HIGH_PCT / 100.0},
    };
    int n = 0;
    size_t used = 0;
    report[0] = '\0';
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        double want = described(doc, values[i].path);
        if (!(fabs(want - values[i].built) < 1e-9)) {
            n++;
            if (used < size)
                used += (size_t)snprintf(report + used, size - used, "%s: %g described, %g built; ",
                                         values[i].path, want, values[i].built);
        }
    }
    json_decref(doc);
    return n;
}

static char description[4096];

static void test_built_as_described(void **state)
{
    (void)state;
    char report[1024];
    int n = differences(description, report, sizeof report);
    if (n != 0)
        fail_msg("engines/shared.json and pbench's constants differ: %s", report);
}

/* The backoff pbench applies is the description's: first_ms for the
 * first retry, doubling, never above cap_ms, within the jitter. */
static void test_backoff_follows_the_description(void **state)
{
    (void)state;
    for (int attempt = 1; attempt <= 12; attempt++)
        for (uint64_t seed = 0; seed < 50; seed++) {
            double base_ms = PB_REMOTE_BACKOFF_FIRST_MS * pow(2, attempt - 1);
            if (base_ms > PB_REMOTE_BACKOFF_CAP_MS)
                base_ms = PB_REMOTE_BACKOFF_CAP_MS;
            double ms = (double)pb_remote_backoff_ns(attempt, seed) / 1e6;
            assert_true(ms >= base_ms * PB_REMOTE_BACKOFF_JITTER_LOW_PCT / 100.0 - 1e-6);
            assert_true(ms <= base_ms * PB_REMOTE_BACKOFF_JITTER_HIGH_PCT / 100.0 + 1e-6);
        }
}

/* A limit changed on one side only (the description, in a scratch copy,
 * as someone who edits the Python side's source would) fails, naming it. */
static void test_one_sided_change_caught(void **state)
{
    (void)state;
    json_t *doc = json_load_file(description, 0, NULL);
    assert_non_null(doc);
    json_object_set_new(json_object_get(doc, "requests_in_flight"), "max", json_integer(128));
    json_object_set_new(json_object_get(doc, "retry_backoff"), "jitter_high", json_real(1.5));
    char scratch[] = "/tmp/pbench-shared-XXXXXX";
    int fd = mkstemp(scratch);
    assert_true(fd >= 0);
    assert_int_equal(json_dumpfd(doc, fd, 0), 0);
    json_decref(doc);
    char report[1024];
    int n = differences(scratch, report, sizeof report);
    unlink(scratch);
    assert_int_equal(n, 2);
    assert_non_null(strstr(report, "requests_in_flight.max: 128 described, 256 built"));
    assert_non_null(strstr(report, "retry_backoff.jitter_high: 1.5 described, 1 built"));
}

int main(void)
{
    const char *src = getenv("PBENCH_SOURCE_DIR");
    snprintf(description, sizeof description, "%s/engines/shared.json", src ? src : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_built_as_described),
        cmocka_unit_test(test_backoff_follows_the_description),
        cmocka_unit_test(test_one_sided_change_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
