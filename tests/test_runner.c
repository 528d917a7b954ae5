/* The runner in-process, with the null decoder (a known CPU cost per
 * sample) on a few dozen generated files: sample and batch counts agree
 * (drop_last on and off), every stage's histogram counts the samples
 * processed, stage times are sane against the null decoder's cost and the
 * time the call took, each point has run.repeats repeats and the reason
 * each repeat stopped is reported. The stopping rule on its own is
 * tested in tests/test_stoprule.c. No test asserts a wall-clock time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "bench/run/repeat.h"
#include "bench/run/stoprule.h"
#include "pipelines/dataset.h"
#include "tests/testutil.h"

#define COST_US 200
#define FILES 50
#define BATCH 8
#define REPEATS 3

static char workdir[] = "/tmp/pbench-runner-XXXXXX";

/* A tiny null pipeline over FILES generated files; loader, run and ds are
 * YAML for the keys of those sections a test sets. */
static void load_spec(struct pb_spec *spec, const char *loader, const char *run, const char *ds)
{
    char yaml[2048], msg[PB_MSG_MAX];
    snprintf(yaml, sizeof(yaml),
             "name: runner-test\n"
             "dataset:\n"
             "  path: %s/data\n"
             "  generate: {kind: files, count: %d, size_bytes: 2048, seed: 3}\n"
             "  %s\n"
             "pipeline:\n"
             "  - read:\n"
             "  - decode: {decoder: null, width: 16, height: 16, channels: 3, cost_us: %d}\n"
             "loader: {batch_size: %d, %s}\n"
             "run: {repeats: %d, step_ms: 0, window_s: 0.01, %s}\n",
             workdir, FILES, ds, COST_US, BATCH, loader, REPEATS, run);
    int rc = pb_config_load_string(yaml, "runner-test.yaml", spec, msg, sizeof(msg));
    if (rc == PB_OK)
        rc = pb_config_validate(spec, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("%s", msg);
}

struct stops {
    int count;
    enum pb_stop_reason reason[REPEATS];
    int progress;
};

static void on_stopped(void *user, int repeat, enum pb_stop_reason reason)
{
    struct stops *s = user;
    assert_int_equal(repeat, s->count);
    s->reason[s->count++] = reason;
}

static void on_progress(void *user, int repeat, int repeats, const struct pb_repeat_result *done)
{
    struct stops *s = user;
    (void)done;
    assert_int_equal(repeats, REPEATS);
    assert_int_equal(repeat, s->progress);
    s->progress++;
}

/* Opens spec's dataset into ds, generating it first on first use (the
 * folder still missing), as the session does: pb_dataset_open only reads. */
static int open_dataset(const struct pb_spec *spec, struct pb_dataset *ds, char *msg,
                        size_t msglen)
{
    const struct pb_dataset_spec *d = &spec->dataset;
    if (d->has_generate && access(d->path, F_OK) != 0) {
        int rc = pb_dataset_generate(&d->generate, d->path, msg, msglen);
        if (rc != PB_OK)
            return rc;
    }
    return pb_dataset_open(d, ds, msg, msglen);
}

/* Runs spec as the one point of result (release with pb_result_free) and
 * checks what holds for any repeat. Returns the point. */
static struct pb_point_result *run_point(const struct pb_spec *spec, struct pb_result *result,
                                         struct stops *stops)
{
    struct pb_dataset ds;
    char msg[PB_MSG_MAX];
    memset(result, 0, sizeof(*result));
    result->points = calloc(1, sizeof(*result->points));
    assert_non_null(result->points);
    result->point_count = 1;
    struct pb_point_result *point = result->points;
    memset(stops, 0, sizeof(*stops));
    if (open_dataset(spec, &ds, msg, sizeof(msg)) != PB_OK)
        fail_msg("%s", msg);
    assert_int_equal(ds.count, FILES);
    struct pb_run_hooks hooks = {.progress = on_progress, .stopped = on_stopped, .user = stops};
    uint64_t t0 = pb_now_ns();
    double unix_before = pb_unix_time_of(t0);
    int rc = pb_run_point(spec, &ds, &hooks, point, msg, sizeof(msg));
    uint64_t elapsed_ns = pb_now_ns() - t0;
    double unix_after = pb_unix_time_of(pb_now_ns());
    if (rc != PB_OK)
        fail_msg("pb_run_point: %s", msg);
    pb_dataset_free(&ds);

    assert_int_equal(point->repeat_count, (size_t)spec->run.repeats);
    assert_int_equal(stops->count, REPEATS);
    assert_int_equal(stops->progress, REPEATS);
    int workers = spec->loader.workers > 0 ? (int)spec->loader.workers : 1;
    for (size_t r = 0; r < point->repeat_count; r++) {
        const struct pb_repeat_result *rep = &point->repeats[r];
        assert_int_equal(rep->batch_count, rep->batches);
        uint64_t samples = 0;
        for (size_t b = 0; b < rep->batch_count; b++) {
            assert_true(rep->batch_records[b].samples <= BATCH);
            samples += rep->batch_records[b].samples;
        }
        assert_int_equal(samples, rep->samples);
        assert_int_equal(rep->errors, 0);
        assert_true(rep->wall_s > 0 && rep->wall_s * 1e9 <= (double)elapsed_ns);
        /* On the wall clock, each measured part lies within the run, after
         * the one before it (5 ms of slack: NTP may slew the wall clock by
         * up to 0.5 ms a second while the test runs). */
        assert_true(rep->start_unix_s >= unix_before - 5e-3);
        assert_true(rep->start_unix_s + rep->wall_s <= unix_after + 5e-3);
        if (r > 0)
            assert_true(rep->start_unix_s >= point->repeats[r - 1].start_unix_s +
                                                  point->repeats[r - 1].wall_s - 5e-3);
        assert_true(fabs(rep->samples_per_s * rep->wall_s - (double)rep->samples) <
                    1e-6 * rep->samples + 1e-9);

        /* Rows: read, decode, collate; shares of the top-level rows add up. */
        assert_int_equal(rep->stage_count, 3);
        assert_string_equal(rep->stages[0].name, "read");
        assert_string_equal(rep->stages[1].name, "decode");
        assert_string_equal(rep->stages[2].name, "collate");
        double share = 0, stage_ns = 0;
        for (size_t k = 0; k < rep->stage_count; k++) {
            share += rep->stages[k].share_pct;
            stage_ns += (double)rep->stages[k].hist.sum_ns;
        }
        assert_true(fabs(share - 100) < 1e-6);
        /* Every stage's time lies inside the call, on each loader thread. */
        assert_true(stage_ns <= (double)workers * (double)elapsed_ns);
        /* The null decoder spins cost_us of thread CPU per sample, so its
         * wall time and CPU time per sample are at least that. */
        const struct pb_stage_result *decode = &rep->stages[1];
        assert_true(decode->hist.mean_ns >= COST_US * 1000 * 0.9);
        assert_true((double)decode->cpu_ns >= COST_US * 1000 * 0.9 * (double)decode->hist.count);
        assert_true((double)decode->hist.sum_ns >=
                    COST_US * 1000 * 0.9 * (double)decode->hist.count);
    }
    return point;
}

/* One epoch of FILES samples, one warm-up batch: the data runs out before
 * the stopping rule can end the measured part, so the counts are exact. */
static void check_one_epoch(const char *loader, bool drop_last)
{
    struct pb_spec spec;
    char ldr[256];
    snprintf(ldr, sizeof(ldr), "%s, drop_last: %s", loader, drop_last ? "true" : "false");
    load_spec(&spec, ldr, "warmup_batches: 1, min_time_s: 30, max_time_s: 60", "epochs: 1");
    struct pb_result result;
    struct stops stops;
    const struct pb_point_result *point = run_point(&spec, &result, &stops);
    /* 50 files in batches of 8: 6 full batches and one of 2. */
    uint64_t batches = drop_last ? FILES / BATCH - 1 : FILES / BATCH;
    uint64_t samples = drop_last ? batches * BATCH : (batches - 1) * BATCH + FILES % BATCH;
    for (size_t r = 0; r < point->repeat_count; r++) {
        const struct pb_repeat_result *rep = &point->repeats[r];
        assert_int_equal(stops.reason[r], PB_STOP_DATA_END);
        assert_false(rep->hit_time_cap);
        assert_false(rep->noisy);
        assert_false(rep->interrupted);
        assert_int_equal(rep->batches, batches);
        assert_int_equal(rep->samples, samples);
        for (size_t b = 0; b + 1 < rep->batch_count; b++)
            assert_int_equal(rep->batch_records[b].samples, BATCH);
        /* Nothing is built past the end of the data: every stage saw
         * exactly the measured samples, collate every measured batch. */
        assert_int_equal(rep->stages[0].hist.count, samples);
        assert_int_equal(rep->stages[1].hist.count, samples);
        assert_int_equal(rep->stages[2].hist.count, batches);
    }
    assert_int_equal(point->samples, samples * REPEATS);
    pb_result_free(&result);
    pb_spec_free(&spec);
}

static void test_counts_with_workers(void **state)
{
    (void)state;
    check_one_epoch("workers: 2, prefetch_factor: 2, in_order: true", true);
    check_one_epoch("workers: 3, prefetch_factor: 1, in_order: true", false);
}

static void test_counts_in_the_consumer(void **state)
{
    (void)state;
    check_one_epoch("workers: 0", false);
    check_one_epoch("workers: 0", true);
}

/* Unbounded epochs and a min_samples the run cannot reach: every repeat
 * ends on the time cap and says so. Workers build ahead of the consumer,
 * so the stages may have seen more samples than were measured. */
static void test_time_cap_is_recorded(void **state)
{
    (void)state;
    struct pb_spec spec;
    load_spec(&spec, "workers: 2, prefetch_factor: 2, in_order: true, drop_last: false",
              "warmup_batches: 2, min_time_s: 0.02, max_time_s: 0.1, min_samples: 1000000000",
              "epochs: 0");
    struct pb_result result;
    struct stops stops;
    const struct pb_point_result *point = run_point(&spec, &result, &stops);
    for (size_t r = 0; r < point->repeat_count; r++) {
        const struct pb_repeat_result *rep = &point->repeats[r];
        assert_int_equal(stops.reason[r], PB_STOP_TIME_CAP);
        assert_true(rep->hit_time_cap);
        assert_true(rep->wall_s >= 0.1);
        assert_true(rep->batches > 0);
        /* Epochs wrap: of every 7 batches, 6 are full and one has 2. */
        uint64_t short_batches = rep->batches / (FILES / BATCH + 1) + 1;
        assert_true(rep->samples <= rep->batches * BATCH);
        assert_true(rep->samples + short_batches * (BATCH - FILES % BATCH) >= rep->batches * BATCH);
        assert_true(rep->stages[0].hist.count >= rep->samples);
        assert_true(rep->stages[1].hist.count >= rep->samples);
    }
    pb_result_free(&result);
    pb_spec_free(&spec);
}

/* ---- bad samples, huge samples and the memory check (issue 16) ------- */

/* Runs spec (with the -s style overrides, NULL-terminated) as one point;
 * returns the runner's code, msg its sentence. */
static int run_hooked(struct pb_spec *spec, const char *const *overrides,
                      const struct pb_run_hooks *hooks, struct pb_result *result, char *msg,
                      size_t msglen)
{
    for (int i = 0; overrides && overrides[i]; i++)
        if (pb_config_override(spec, overrides[i], msg, msglen) != PB_OK)
            fail_msg("%s", msg);
    if (pb_config_validate(spec, msg, msglen) != PB_OK)
        fail_msg("%s", msg);
    memset(result, 0, sizeof(*result));
    result->points = calloc(1, sizeof(*result->points));
    result->point_count = 1;
    struct pb_dataset ds;
    if (open_dataset(spec, &ds, msg, msglen) != PB_OK)
        fail_msg("%s", msg);
    msg[0] = '\0';
    int rc = pb_run_point(spec, &ds, hooks, result->points, msg, msglen);
    pb_dataset_free(&ds);
    return rc;
}

static int run_overridden(struct pb_spec *spec, const char *const *overrides,
                          struct pb_result *result, char *msg, size_t msglen)
{
    return run_hooked(spec, overrides, NULL, result, msg, msglen);
}

/* Every sample bad: the repeat fails and is not kept (so no rate of it is
 * shown), and the message says why with the first bad file. */
static void test_no_sample_delivered_fails(void **state)
{
    (void)state;
    struct pb_spec spec;
    struct pb_result result;
    char msg[PB_MSG_MAX];
    load_spec(&spec, "workers: 2", "min_time_s: 0.05, max_time_s: 0.3, warmup_batches: 1", "");
    static const char *const all_bad[] = {"pipeline.decode.fail_every=1", NULL};
    assert_int_equal(run_overridden(&spec, all_bad, &result, msg, sizeof(msg)), PB_ERR_DATA);
    assert_non_null(strstr(msg, "every one of the "));
    assert_non_null(strstr(msg, " samples failed: first error "));
    assert_non_null(strstr(msg, "null decoder: sample"));
    assert_int_equal(result.points[0].repeat_count, 0);
    pb_result_free(&result);
    pb_spec_free(&spec);
}

/* A loader slower than one batch in run.max_time_s: the cap comes before
 * a batch does. Such a repeat is left out with a warning that says so, and
 * the point's run goes on (no error ends it); it is not a rate of 0. */
static void test_no_batch_before_the_cap_is_left_out(void **state)
{
    (void)state;
    struct pb_spec spec;
    struct pb_result result;
    char msg[PB_MSG_MAX];
    load_spec(&spec, "workers: 1", "min_time_s: 0.05, max_time_s: 0.1, warmup_batches: 0", "");
    static const char *const slow[] = {"pipeline.decode.cost_us=100000", NULL}; /* 0.8 s a batch */
    assert_int_equal(run_overridden(&spec, slow, &result, msg, sizeof(msg)), PB_OK);
    const struct pb_point_result *p = &result.points[0];
    assert_int_equal(p->repeat_count, 0);
    assert_true(p->warning_count >= 1);
    assert_non_null(strstr(p->warnings[0], "delivered no batch within run.max_time_s (0.1 s)"));
    pb_result_free(&result);
    pb_spec_free(&spec);
}

/* Half the samples bad: above run.max_error_pct 30 the repeat fails (and
 * is kept, with its figures); a quarter bad passes the default of 50. Each
 * failing file is listed once, with how often it failed. */
static void test_error_share_and_error_files(void **state)
{
    (void)state;
    struct pb_spec spec;
    struct pb_result result;
    char msg[PB_MSG_MAX];
    load_spec(&spec, "workers: 2", "min_time_s: 0.05, max_time_s: 0.3, warmup_batches: 0", "");
    static const char *const half_bad[] = {"pipeline.decode.fail_every=2", "run.max_error_pct=30",
                                           NULL};
    assert_int_equal(run_overridden(&spec, half_bad, &result, msg, sizeof(msg)), PB_ERR_DATA);
    assert_non_null(strstr(msg, "% of samples failed ("));
    assert_non_null(strstr(msg, "above run.max_error_pct 30: first error "));
    assert_int_equal(result.points[0].repeat_count, 1);
    pb_result_free(&result);
    pb_spec_free(&spec);

    load_spec(&spec, "workers: 2", "min_time_s: 0.05, max_time_s: 0.3, warmup_batches: 0",
              "epochs: 3");
    static const char *const quarter_bad[] = {"pipeline.decode.fail_every=4", NULL};
    assert_int_equal(run_overridden(&spec, quarter_bad, &result, msg, sizeof(msg)), PB_OK);
    const struct pb_point_result *p = &result.points[0];
    assert_int_equal(p->error_file_count, FILES / 4); /* every failing file, each once */
    assert_int_equal(p->error_files_unlisted, 0);
    for (int i = 0; i < p->error_file_count; i++) {
        const char *path_end = strchr(p->error_files[i], ':');
        assert_non_null(path_end);
        for (int j = 0; j < i; j++)
            assert_false(strncmp(p->error_files[i], p->error_files[j],
                                 (size_t)(path_end - p->error_files[i]) + 1) == 0);
        assert_non_null(strstr(p->error_files[i], " times)"));
    }
    pb_result_free(&result);
    pb_spec_free(&spec);
}

/* A stage that asks for 1 TiB of output, as a corrupt header makes a
 * decoder do: the sample is a data error and nothing is allocated. */
static int huge_init(void **state, const void *opts, const struct pb_stage_plan *in,
                     struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                     const void *decoder_opts, char *msg, size_t msglen)
{
    (void)opts, (void)decoder, (void)decoder_opts, (void)msg, (void)msglen;
    *out = *in;
    *state = NULL;
    return PB_OK;
}

static int huge_process(void *state, struct pb_sample *s)
{
    (void)state;
    s->out_bytes = (size_t)1 << 40;
    return PB_ERR_NOSPACE;
}

static const struct pb_stage_ops huge_stage = {
    .name = "huge", .flags = PB_STAGE_WORKER, .init = huge_init, .process = huge_process};

static void test_sample_over_the_bound_is_a_data_error(void **state)
{
    (void)state;
    struct pb_spec spec;
    struct pb_result result;
    char msg[PB_MSG_MAX];
    /* Between read and decode (a scratch buffer), then last (a batch slot). */
    for (int last = 0; last < 2; last++) {
        load_spec(&spec, "workers: 1", "min_time_s: 0.05, max_time_s: 0.3, warmup_batches: 0", "");
        assert_int_equal(pb_spec_add_stage(&spec, &huge_stage, NULL, msg, sizeof(msg)), PB_OK);
        if (!last) {
            struct pb_stage_spec decode = spec.stages[1];
            spec.stages[1] = spec.stages[2];
            spec.stages[2] = decode;
        }
        assert_int_equal(run_overridden(&spec, NULL, &result, msg, sizeof(msg)), PB_ERR_DATA);
        assert_non_null(strstr(msg, "every one of the "));
        assert_non_null(strstr(msg, "stage 'huge' asks for 1099511627776 bytes for one sample, "
                                    "more than the 4294967296 bytes pbench accepts"));
        pb_result_free(&result);
        pb_spec_free(&spec);
    }
}

/* A pool far beyond any machine's memory is refused with its figures
 * before anything is allocated (allocating first would fail differently
 * or exhaust memory); run.max_memory_mib refuses a small one. */
static void test_pool_over_memory_is_refused_first(void **state)
{
    (void)state;
    struct pb_spec spec;
    struct pb_result result;
    char msg[PB_MSG_MAX];
    load_spec(&spec, "workers: 1024, prefetch_factor: 1024", "warmup_batches: 0", "");
    static const char *const big[] = {"pipeline.decode.width=16384", "pipeline.decode.height=16384",
                                      "pipeline.decode.channels=4", NULL};
    assert_int_equal(run_overridden(&spec, big, &result, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "the batch pool needs 8.0 PiB (1024 workers x 1024 prefetch x "
                                "8.0 GiB"));
    assert_non_null(strstr(msg, "is available; lower loader.prefetch_factor"));
    assert_int_equal(result.points[0].batch_pool_bytes, 0);
    pb_result_free(&result);
    pb_spec_free(&spec);

    load_spec(&spec, "workers: 2", "warmup_batches: 0", "");
    static const char *const limited[] = {"run.max_memory_mib=1", "loader.batch_size=4096", NULL};
    assert_int_equal(run_overridden(&spec, limited, &result, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "the batch pool needs 12.0 MiB (2 workers x 2 prefetch x "
                                "3.0 MiB, plus 4 scratch buffers of 2.5 KiB) but 1.0 MiB is "
                                "allowed by run.max_memory_mib"));
    pb_result_free(&result);
    pb_spec_free(&spec);
}

/* The loop's time accounted to 100%: wait, step, consumer stages and the
 * rest; the first batch came after the repeat started and within the call;
 * the interference figures are shares of the machine. */
static void test_loop_time_and_first_batch(void **state)
{
    (void)state;
    struct pb_spec spec;
    load_spec(&spec, "workers: 2, prefetch_factor: 2", "warmup_batches: 1", "epochs: 1");
    spec.run.step_ms = 1;
    struct pb_result result;
    struct stops stops;
    uint64_t t0 = pb_now_ns();
    const struct pb_point_result *point = run_point(&spec, &result, &stops);
    double elapsed_s = (double)(pb_now_ns() - t0) / 1e9;
    for (size_t r = 0; r < point->repeat_count; r++) {
        const struct pb_repeat_result *rep = &point->repeats[r];
        double sum =
            rep->stall_pct + rep->loop_step_pct + rep->loop_stages_pct + rep->loop_other_pct;
        assert_true(fabs(sum - 100) < 0.01);
        assert_true(rep->loop_step_pct > 0 && rep->loop_stages_pct >= 0 &&
                    rep->loop_other_pct >= 0);
        assert_true(rep->first_batch_s > 0 && rep->first_batch_s < elapsed_s);
        assert_true(rep->other_cpu_pct >= 0 && rep->other_cpu_pct <= 100);
        assert_true(rep->steal_pct >= 0 && rep->steal_pct <= 100);
    }
    double sum =
        point->stall_pct + point->loop_step_pct + point->loop_stages_pct + point->loop_other_pct;
    assert_true(fabs(sum - 100) < 0.01);
    assert_true(point->first_batch_s > 0 && point->first_batch_s < elapsed_s);
    pb_result_free(&result);
    pb_spec_free(&spec);
}

/* ---- stops that come while the loop waits (issue 28) ------------------- */

/* Slow batches (0.8 s each: 8 samples of 100 ms on one worker), so a stop
 * finds the loop waiting for one. */
static const char *const slow_batches[] = {
    "pipeline.decode.cost_us=100000", "run.min_time_s=3", "run.max_time_s=4",
    "run.warmup_batches=1", NULL};

/* Raises the stop flag once a measured batch has been counted. */
static void stop_after_a_batch(void *user, double samples_per_s, double stall_pct)
{
    (void)stall_pct;
    if (samples_per_s > 0)
        *(volatile sig_atomic_t *)user = SIGTERM;
}

/* A stop while the loop waits for a batch cuts the repeat short: it is
 * kept marked interrupted, and the point says interrupted. */
static void test_stop_while_waiting_marks_the_repeat(void **state)
{
    (void)state;
    struct pb_spec spec;
    struct pb_result result;
    char msg[PB_MSG_MAX];
    volatile sig_atomic_t stop = 0;
    load_spec(&spec, "workers: 1", "warmup_batches: 1", "");
    struct pb_run_hooks hooks = {.stop = &stop, .tick = stop_after_a_batch, .user = (void *)&stop};
    assert_int_equal(run_hooked(&spec, slow_batches, &hooks, &result, msg, sizeof(msg)),
                     PB_ERR_INTERRUPTED);
    assert_int_equal(result.points[0].repeat_count, 1);
    assert_true(result.points[0].repeats[0].interrupted);
    pb_result_free(&result);
    pb_spec_free(&spec);
}

static void *stop_soon(void *arg)
{
    usleep(300000);
    *(volatile sig_atomic_t *)arg = SIGTERM;
    return NULL;
}

/* A stop during the warm-up is an interrupt, not "the data ran out". */
static void test_stop_during_warmup_is_an_interrupt(void **state)
{
    (void)state;
    struct pb_spec spec;
    struct pb_result result;
    char msg[PB_MSG_MAX];
    volatile sig_atomic_t stop = 0;
    load_spec(&spec, "workers: 1", "warmup_batches: 1", "");
    static const char *const long_warmup[] = {"pipeline.decode.cost_us=100000",
                                              "run.warmup_batches=3", NULL};
    struct pb_run_hooks hooks = {.stop = &stop};
    pthread_t stopper;
    assert_int_equal(pthread_create(&stopper, NULL, stop_soon, (void *)&stop), 0);
    int rc = run_hooked(&spec, long_warmup, &hooks, &result, msg, sizeof(msg));
    pthread_join(stopper, NULL);
    if (rc != PB_ERR_INTERRUPTED)
        fail_msg("rc %d: %s", rc, msg);
    assert_int_equal(result.points[0].repeat_count, 0);
    pb_result_free(&result);
    pb_spec_free(&spec);
}

/* A rank still in its warm-up when the decider of a multi-rank run stops
 * the repeat ends it not kept, with no error: the decider's stop is not
 * "the data ran out" (issue 28, item 4). */
static void test_group_stop_during_warmup_is_not_kept(void **state)
{
    (void)state;
    struct pb_spec spec;
    struct pb_result result;
    char msg[PB_MSG_MAX];
    load_spec(&spec, "workers: 1", "warmup_batches: 3, min_time_s: 0.05, max_time_s: 0.2", "");
    struct pb_run_group group = {.decides = false};
    atomic_init(&group.local_done, false);
    atomic_init(&group.local_reason, PB_STOP_NONE);
    atomic_init(&group.group_done, true);
    atomic_init(&group.group_reason, PB_STOP_TIME_CAP);
    struct pb_run_hooks hooks = {.group = &group};
    int rc = run_hooked(&spec, NULL, &hooks, &result, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("rc %d: %s", rc, msg);
    assert_int_equal(result.points[0].repeat_count, 0);
    assert_true(atomic_load(&group.local_done));
    pb_result_free(&result);
    pb_spec_free(&spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_with_workers),
        cmocka_unit_test(test_counts_in_the_consumer),
        cmocka_unit_test(test_time_cap_is_recorded),
        cmocka_unit_test(test_no_sample_delivered_fails),
        cmocka_unit_test(test_no_batch_before_the_cap_is_left_out),
        cmocka_unit_test(test_error_share_and_error_files),
        cmocka_unit_test(test_sample_over_the_bound_is_a_data_error),
        cmocka_unit_test(test_pool_over_memory_is_refused_first),
        cmocka_unit_test(test_loop_time_and_first_batch),
        cmocka_unit_test(test_stop_while_waiting_marks_the_repeat),
        cmocka_unit_test(test_stop_during_warmup_is_an_interrupt),
        cmocka_unit_test(test_group_stop_during_warmup_is_not_kept),
    };
    pb_test_tmpdir_use(workdir);
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
