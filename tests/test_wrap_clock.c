/* pbench wrap's figures against the job's own clock (docs/wrap.md, "What
 * the figures mean"), on a training job that is not pbench's example
 * (tests/wrap_jobs/epochs.py): several epochs of 2 fork workers started
 * again each epoch, the job's own perf_counter around every next(). The
 * window is no longer than the job's own span and loses at most its last
 * batch; the stall agrees with the job's within 2 points and the step is
 * no longer than the job's, also when the job leaves each epoch without
 * StopIteration and works for a while after its loop. Under --ideal, no
 * worker works in the measured part, as in the job on batches made once
 * in memory. Skipped, saying why, where Debian's python3-torch is
 * missing. No test asserts a wall-clock time: each bound is one clock
 * against the other, with slack for a busy machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

static const char *source_dir;
static char workdir[] = "/tmp/pbench-wrapclock-XXXXXX";
static bool have_torch;

static int setup(void **state)
{
    pb_test_tmpdir_use(workdir);
    source_dir = getenv("PBENCH_SOURCE_DIR");
    if (!getenv("PBENCH_BINARY") || !source_dir) {
        fprintf(stderr, "PBENCH_BINARY and PBENCH_SOURCE_DIR must be set (ctest sets them)\n");
        return -1;
    }
    have_torch = pb_test_have_torch();
    return pb_test_tmpdir_setup(state);
}

/* What the job's own clock saw: the JSON after "hand timing: " in its
 * output (pbench's stderr). The caller owns the reference. */
static json_t *hand_timing(const char *err)
{
    const char *line = strstr(err, "hand timing: ");
    if (!line)
        fail_msg("the job printed no hand timing; pbench's stderr:\n%s", err);
    json_error_t why;
    json_t *hand = json_loadb(line + 13, strcspn(line + 13, "\n"), 0, &why);
    if (!hand)
        fail_msg("the job's hand timing is not JSON: %s", why.text);
    return hand;
}

static double number(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v))
        fail_msg("no number %s", key);
    return json_number_value(v);
}

/* The sum of one array of the repeat's batch records, in seconds. */
static double records_s(const json_t *rep, const char *key)
{
    const json_t *values = json_object_get(json_object_get(rep, "batch_records"), key);
    double sum = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(values, i, v) sum += json_number_value(v);
    return sum / 1e9;
}

/* Runs wrap on the job with its extra options, and holds pbench's window,
 * stall and step to the job's own. counted: the job leaves each epoch
 * without StopIteration, so its last batch (whose step's end pbench does
 * not see) is left out. */
static void check_against_the_job(const char *options, bool counted)
{
    char args[2048];
    snprintf(args, sizeof args,
             "wrap --until-exit --warmup-batches 5 -q -o clock.json -- /usr/bin/python3 "
             "%s/tests/wrap_jobs/epochs.py --epochs 5 --batches 12 --batch-size 4 --item-ms 4 "
             "--step-ms 40 --workers 2 --warmup 5 %s",
             source_dir, options);
    char *err = NULL;
    int rc = pb_test_run_pbench(workdir, args, &err);
    if (rc != 0)
        fail_msg("pbench %s: exit %d: %s", args, rc, err);
    json_t *hand = hand_timing(err);
    free(err);
    json_t *r = pb_test_load_json(workdir, "clock.json");
    const json_t *p = json_array_get(json_object_get(r, "points"), 0);
    const json_t *rep = json_array_get(json_object_get(p, "repeats"), 0);
    double span_s = number(hand, "span_s"), last_s = number(hand, "last_s");
    double wall_s = number(rep, "wall_s");
    printf("wrap %s: window %.3f s (job %.3f s, its last batch %.3f s), stall %.2f%% (job "
           "%.2f%%), step %.3f s (job %.3f s)\n",
           options, wall_s, span_s, last_s, number(rep, "stall_pct"), number(hand, "stall_pct"),
           records_s(rep, "step_ns"), number(hand, "step_s"));
    assert_int_equal(json_integer_value(json_object_get(rep, "batches")),
                     (json_int_t)number(hand, "batches") - (counted ? 1 : 0));
    /* pbench's clock reads inside the job's: its window is within the
     * job's span, short of it by no more than the last batch (and the
     * job's start of that window, on a machine that preempts it). */
    assert_true(wall_s <= span_s + 0.002);
    assert_true(wall_s >= (span_s - last_s) * 0.95 - 0.002);
    assert_true(fabs(number(rep, "stall_pct") - number(hand, "stall_pct")) <= 2.0);
    /* The job's work after its loop, its shutdown and the epochs' ends
     * are in no batch's step. */
    assert_true(records_s(rep, "step_ns") <= number(hand, "step_s") + 0.02 * span_s);
    json_decref(r);
    json_decref(hand);
}

static void test_epochs_ended_by_stopiteration(void **state)
{
    (void)state;
    if (!have_torch) {
        fprintf(stderr, "skipped: torch is not installed: apt-get install python3-torch "
                        "(scripts/setup.sh does)\n");
        skip();
    }
    check_against_the_job("", false);
}

static void test_epochs_left_and_work_after_the_loop(void **state)
{
    (void)state;
    if (!have_torch) {
        fprintf(stderr, "skipped: torch is not installed: apt-get install python3-torch "
                        "(scripts/setup.sh does)\n");
        skip();
    }
    check_against_the_job("--counted --tail-s 0.5", true);
}

/* --ideal on the same job, leaving each short epoch after len(loader)
 * batches: once its batches are kept, no worker process works beside the
 * job's step (the DataLoader's are stopped, and no epoch starts new ones),
 * as in the job trained on batches made once in memory. */
static void test_ideal_loads_nothing_in_its_window(void **state)
{
    (void)state;
    if (!have_torch) {
        fprintf(stderr, "skipped: torch is not installed: apt-get install python3-torch "
                        "(scripts/setup.sh does)\n");
        skip();
    }
    char args[2048];
    snprintf(args, sizeof args,
             "wrap -s wrap.ideal=4 --warmup-batches 2 --batches 30 -q -o ideal.json -- "
             "/usr/bin/python3 %s/tests/wrap_jobs/epochs.py --epochs 1000 --batches 6 "
             "--batch-size 4 --item-ms 6 --step-ms 20 --workers 2 --counted",
             source_dir);
    char *err = NULL;
    int rc = pb_test_run_pbench(workdir, args, &err);
    if (rc != 0)
        fail_msg("pbench %s: exit %d: %s", args, rc, err);
    free(err);
    json_t *r = pb_test_load_json(workdir, "ideal.json");
    const json_t *p = json_array_get(json_object_get(r, "points"), 0);
    const json_t *rep = json_array_get(json_object_get(p, "repeats"), 0);
    assert_int_equal(json_integer_value(json_object_get(rep, "batches")), 30);
    printf("ideal: worker CPU %.2f%% in the window\n", number(rep, "worker_cpu_pct"));
    assert_true(number(rep, "worker_cpu_pct") < 1.0);
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epochs_ended_by_stopiteration),
        cmocka_unit_test(test_epochs_left_and_work_after_the_loop),
        cmocka_unit_test(test_ideal_loads_nothing_in_its_window),
    };
    return cmocka_run_group_tests(tests, setup, pb_test_tmpdir_teardown);
}
