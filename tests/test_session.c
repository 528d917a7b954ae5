/* The session in-process: a tiny null-decoder run on generated files
 * (points, repeats, the result file), a sweep through -a, and config errors
 * that stop the session, with FILE:LINE:COL, before any data is made; so do
 * an output path that is not a file and an unreadable baseline. A config
 * name never leads the default result file out of results/, and a stop
 * keeps the repeat it cut short out of the summary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/result/result.h"
#include "bench/session/interleave.h"
#include "bench/session/session.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-session-XXXXXX";

/* The harness alone on a small files dataset: short measured parts, two
 * repeats, no training step. DATA is replaced by the dataset's folder. */
static const char *const config_text =
    "name: session-test\n"
    "dataset:\n"
    "  path: DATA\n"
    "  generate: {kind: files, count: 48, size_bytes: 4096, seed: 1}\n"
    "pipeline:\n"
    "  - read:\n"
    "  - decode: {decoder: null, width: 16, height: 16, channels: 3, cost_us: 20}\n"
    "loader: {workers: 2, batch_size: 8, prefetch_factor: 2}\n"
    "run: {warmup_batches: 2, min_time_s: 0.05, max_time_s: 0.2, window_s: 0.02, repeats: 2,\n"
    "      step_ms: 0}\n";

/* Writes text (with DATA replaced by workdir/data_dir) to workdir/name. */
static void write_config(const char *name, const char *text, const char *data_dir, char *path,
                         size_t pathlen)
{
    char data[512];
    snprintf(data, sizeof(data), "%s/%s", workdir, data_dir);
    snprintf(path, pathlen, "%s/%s", workdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    const char *at = strstr(text, "DATA");
    if (at)
        fprintf(f, "%.*s%s%s", (int)(at - text), text, data, at + 4);
    else
        fputs(text, f);
    fclose(f);
}

/* workdir/out, where the tests' -o files go: -o makes no folder. */
static void make_out_folder(void)
{
    char out[512];
    snprintf(out, sizeof(out), "%s/out", workdir);
    assert_true(mkdir(out, 0755) == 0 || errno == EEXIST);
}

static void test_single_point(void **state)
{
    (void)state;
    char config[512], output[512], msg[PB_MSG_MAX * 2];
    write_config("single.yaml", config_text, "data", config, sizeof(config));
    make_out_folder();
    snprintf(output, sizeof(output), "%s/out/single.json", workdir);
    struct pb_session_opts opts = {.config_path = config, .output_path = output};
    struct pb_result result;
    struct pb_session_outcome outcome;
    int rc = pb_session_run(&opts, NULL, &result, &outcome, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("session failed: %s", msg);
    assert_true(outcome.measured);
    assert_false(outcome.compared);
    assert_string_equal(outcome.result_path, output);
    assert_string_equal(result.name, "session-test");
    assert_int_equal(result.point_count, 1);
    assert_int_equal(result.points[0].repeat_count, 2);
    assert_true(result.points[0].samples_per_s > 0);
    assert_int_equal(json_object_size(result.points[0].axes), 0);
    assert_false(result.calibration.measured);
    assert_false(result.interrupted);

    struct pb_result back;
    if (pb_result_read(output, &back, msg, sizeof(msg)) != PB_OK)
        fail_msg("cannot read the result back: %s", msg);
    assert_int_equal(back.point_count, 1);
    assert_int_equal(back.points[0].repeat_count, 2);
    assert_int_equal(back.points[0].samples, result.points[0].samples);
    pb_result_free(&back);
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
}

/* What the hooks saw of a session. */
struct seen {
    int points, repeats, rounds, progress, measuring_on, measuring_off, infos, errors;
    char labels[8][64];
    char last_info[PB_MSG_MAX * 3];
};

static void on_message(void *user, enum pb_session_level level, const char *text)
{
    struct seen *seen = user;
    if (level == PB_SESSION_ERROR)
        seen->errors++;
    if (level == PB_SESSION_INFO) {
        seen->infos++;
        snprintf(seen->last_info, sizeof(seen->last_info), "%s", text);
    }
}

static void on_measuring(void *user, bool on)
{
    struct seen *seen = user;
    if (on)
        seen->measuring_on++;
    else
        seen->measuring_off++;
}

static void on_rounds(void *user, int points, int repeats)
{
    struct seen *seen = user;
    seen->points = points;
    seen->repeats = repeats;
}

static void on_round(void *user, int point, int round, const char *label)
{
    struct seen *seen = user;
    assert_true(point >= 1 && point <= seen->points && round >= 1 && round <= seen->repeats);
    if (seen->rounds < 8)
        snprintf(seen->labels[seen->rounds], sizeof(seen->labels[0]), "%s", label);
    seen->rounds++;
}

static void on_progress(void *user, int repeat, int repeats, const struct pb_repeat_result *done)
{
    struct seen *seen = user;
    assert_true(repeat >= 0 && repeat < repeats && done->samples > 0);
    seen->progress++;
}

static void test_sweep_axis_and_baseline(void **state)
{
    (void)state;
    char config[512], output[512], base[512], msg[PB_MSG_MAX * 2];
    write_config("sweep.yaml", config_text, "data", config, sizeof(config));
    snprintf(output, sizeof(output), "%s/sweep.json", workdir);
    snprintf(base, sizeof(base), "%s/out/single.json", workdir);
    const char *axes[] = {"loader.workers=1,2"};
    const char *overrides[] = {"run.repeats=2"};
    struct pb_session_opts opts = {.config_path = config, .output_path = output,
                                   .overrides = overrides, .override_count = 1, .axes = axes,
                                   .axis_count = 1};
    /* The single point's result, when that test ran first, is the baseline. */
    if (access(base, F_OK) == 0) {
        opts.baseline_path = base;
        opts.threshold_pct = 5;
    }
    struct seen seen = {0};
    struct pb_session_hooks hooks = {.user = &seen, .message = on_message,
                                     .measuring = on_measuring, .rounds = on_rounds,
                                     .round = on_round, .progress = on_progress};
    struct pb_result result;
    struct pb_session_outcome outcome;
    int rc = pb_session_run(&opts, &hooks, &result, &outcome, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("session failed: %s", msg);
    /* Rounds interleave across points: point 1, point 2, point 1, point 2. */
    assert_int_equal(seen.points, 2);
    assert_int_equal(seen.repeats, 2);
    assert_int_equal(seen.rounds, 4);
    assert_int_equal(seen.progress, 4);
    assert_string_equal(seen.labels[0], "workers=1");
    assert_string_equal(seen.labels[1], "workers=2");
    assert_string_equal(seen.labels[2], "workers=1");
    assert_int_equal(seen.measuring_on, 1);
    assert_int_equal(seen.measuring_off, 1);
    assert_int_equal(seen.errors, 0);
    assert_non_null(strstr(seen.last_info, "result written to"));
    assert_int_equal(result.point_count, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(result.points[i].repeat_count, 2);
        json_t *workers = json_object_get(result.points[i].axes, "loader.workers");
        assert_true(json_is_integer(workers));
        assert_int_equal(json_integer_value(workers), (json_int_t)i + 1);
    }
    assert_non_null(result.analysis);
    assert_int_equal(outcome.compared, opts.baseline_path != NULL);

    struct pb_result back;
    if (pb_result_read(output, &back, msg, sizeof(msg)) != PB_OK)
        fail_msg("cannot read the result back: %s", msg);
    assert_int_equal(back.point_count, 2);
    assert_int_equal(json_integer_value(json_object_get(back.points[1].axes, "loader.workers")),
                     2);
    pb_result_free(&back);
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
}

/* Runs the session opts describe on text, written to workdir/name (its
 * path into config), and checks that it stops with rc_want before the
 * dataset (name.data) is generated; msg gets its message. */
static void expect_stop_before_data(const char *name, const char *text,
                                    struct pb_session_opts *opts, int rc_want, char *config,
                                    size_t configlen, char *msg, size_t msglen)
{
    char data_dir[128], data[512];
    snprintf(data_dir, sizeof(data_dir), "%s.data", name);
    write_config(name, text, data_dir, config, configlen);
    snprintf(data, sizeof(data), "%s/%s", workdir, data_dir);
    opts->config_path = config;
    struct pb_result result;
    struct pb_session_outcome outcome;
    assert_int_equal(pb_session_run(opts, NULL, &result, &outcome, msg, msglen), rc_want);
    assert_false(outcome.measured);
    assert_int_equal(access(data, F_OK), -1);
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
}

/* A config error stops the session before the dataset is generated; where
 * is the "LINE:" the message gives after the file's name (NULL: no check). */
static void expect_config_error(const char *name, const char *text, const char *const *axes,
                                int axis_count, const char *where)
{
    char config[512], msg[PB_MSG_MAX * 2];
    struct pb_session_opts opts = {.axes = axes, .axis_count = axis_count, .calibrate = true};
    expect_stop_before_data(name, text, &opts, PB_ERR_CONFIG, config, sizeof(config), msg,
                            sizeof(msg));
    char prefix[600];
    snprintf(prefix, sizeof(prefix), "%s:%s", config, where ? where : "");
    if (where && strncmp(msg, prefix, strlen(prefix)) != 0)
        fail_msg("expected '%s...', got '%s'", prefix, msg);
}

static void test_config_errors_make_no_data(void **state)
{
    (void)state;
    /* A decoder that needs the samples' bytes, with no read stage. */
    expect_config_error("no-read.yaml",
                        "name: no-read\n"
                        "dataset:\n"
                        "  path: DATA\n"
                        "  generate: {kind: files, count: 8, size_bytes: 1024}\n"
                        "pipeline:\n"
                        "  - decode: {decoder: null}\n",
                        NULL, 0, "6:");
    /* One point of a sweep out of range. */
    expect_config_error("bad-point.yaml",
                        "name: bad-point\n"
                        "dataset:\n"
                        "  path: DATA\n"
                        "  generate: {kind: files, count: 8, size_bytes: 1024}\n"
                        "pipeline:\n"
                        "  - read:\n"
                        "  - decode: {decoder: null}\n"
                        "sweep:\n"
                        "  loader.workers: [1, 5000]\n",
                        NULL, 0, "9:");
    /* A rule between a stage's options (its validate callback): named at
     * the stage's line and column. */
    expect_config_error("rrc.yaml",
                        "name: rrc\n"
                        "dataset:\n"
                        "  path: DATA\n"
                        "  generate: {kind: jpeg, count: 8, size: 64x64}\n"
                        "pipeline:\n"
                        "  - read:\n"
                        "  - decode: {decoder: jpeg}\n"
                        "  - random_resized_crop: {size: 224, scale: [0.9, 0.1]}\n",
                        NULL, 0, "8:5:");
    /* A stage rule broken by one point of a sweep. */
    expect_config_error("rrc-point.yaml",
                        "name: rrc-point\n"
                        "dataset:\n"
                        "  path: DATA\n"
                        "  generate: {kind: jpeg, count: 8, size: 64x64}\n"
                        "pipeline:\n"
                        "  - read:\n"
                        "  - decode: {decoder: jpeg}\n"
                        "  - resize: {size: [64, 64]}\n"
                        "sweep:\n"
                        "  pipeline.resize.shorter_side: [0, 32]\n",
                        NULL, 0, "8:5:");
    /* Sweeping the dataset's folder, from the command line. */
    const char *axes[] = {"dataset.path=a,b"};
    expect_config_error("swept-path.yaml", config_text, axes, 1, NULL);
}

/* The session of config_text with opts stops before any data is made
 * with rc_want and a message holding each of wants. */
static void expect_early_stop(struct pb_session_opts *opts, int rc_want, const char *const *wants)
{
    char config[512], msg[PB_MSG_MAX * 2];
    expect_stop_before_data("early.yaml", config_text, opts, rc_want, config, sizeof(config), msg,
                            sizeof(msg));
    pb_test_assert_contains(msg, wants);
}

static void test_bad_output_and_baseline_stop_first(void **state)
{
    (void)state;
    char path[600], want[700];
    /* -o naming a folder or a device. */
    struct pb_session_opts opts = {.output_path = workdir};
    snprintf(want, sizeof(want), "-o %s: is a directory, not a file; give a file path", workdir);
    expect_early_stop(&opts, PB_ERR_CONFIG, (const char *const[]){want, NULL});
    opts.output_path = "/dev/null";
    expect_early_stop(&opts, PB_ERR_CONFIG,
                      (const char *const[]){"-o /dev/null: is a character device", NULL});
    struct stat st;
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* A baseline that is missing, or is not a result. */
    snprintf(path, sizeof(path), "%s/missing-base.json", workdir);
    opts = (struct pb_session_opts){.baseline_path = path, .threshold_pct = 5};
    expect_early_stop(&opts, PB_ERR, (const char *const[]){"--baseline: ", path, NULL});
    snprintf(path, sizeof(path), "%s/bad-base.json", workdir);
    pb_test_write_file(path, "{\"points\": [", 12);
    expect_early_stop(&opts, PB_ERR, (const char *const[]){"--baseline: ", path, NULL});
}

/* -o is checked for writing before anything runs, and never names an
 * input: a missing folder (not created), a folder that takes no file, the
 * config itself, and --trace on the baseline all stop the session before
 * the data is made, the inputs left as they were. */
static void test_output_checked_before_data(void **state)
{
    (void)state;
    char path[600], config[512], base[512];
    struct pb_session_opts opts = {.output_path = path};
    snprintf(path, sizeof(path), "%s/no-such/dir/x.json", workdir);
    expect_early_stop(&opts, PB_ERR_CONFIG, (const char *const[]){"-o ", "does not exist", NULL});
    snprintf(path, sizeof(path), "%s/no-such", workdir);
    assert_int_equal(access(path, F_OK), -1);
    /* A folder that takes no file: read-only for a user, /sys for root. */
    snprintf(path, sizeof(path), "%s/locked", workdir);
    assert_int_equal(mkdir(path, 0555), 0);
    snprintf(path, sizeof(path), geteuid() == 0 ? "/sys/pbench-x.json" : "%s/locked/x.json",
             workdir);
    expect_early_stop(&opts, PB_ERR_CONFIG,
                      (const char *const[]){"-o ", "cannot create a file in", NULL});
    /* The config itself, as -o: refused, the config intact. */
    snprintf(path, sizeof(path), "%s/early.yaml", workdir);
    expect_early_stop(&opts, PB_ERR_CONFIG,
                      (const char *const[]){"-o ", "is the config", "another file", NULL});
    write_config("early.yaml", config_text, "early.yaml.data", config, sizeof(config));
    char *text = pb_test_read_file(config, NULL, true);
    assert_non_null(strstr(text, "session-test"));
    free(text);
    /* --trace on the baseline: refused, the baseline intact. */
    snprintf(base, sizeof(base), "%s/trace-base.json", workdir);
    pb_test_write_file(base, "{}", 2);
    snprintf(path, sizeof(path), "%s/trace-out.json", workdir);
    opts = (struct pb_session_opts){.output_path = path, .baseline_path = base,
                                    .trace_path = base, .threshold_pct = 5};
    expect_early_stop(&opts, PB_ERR_CONFIG,
                      (const char *const[]){"--trace ", "is the --baseline result", NULL});
    text = pb_test_read_file(base, NULL, true);
    assert_string_equal(text, "{}");
    free(text);
}

/* Sessions started together with the default output each keep their
 * result: results/NAME-DATE.json, -2.json, -3.json, no empty claim left. */
static void test_parallel_default_names(void **state)
{
    (void)state;
    char config[512], cwd[600], old_cwd[512], msg[PB_MSG_MAX * 2];
    write_config("parallel.yaml", config_text, "data", config, sizeof(config));
    snprintf(cwd, sizeof(cwd), "%s/parallel", workdir);
    assert_int_equal(mkdir(cwd, 0755), 0);
    assert_non_null(getcwd(old_cwd, sizeof(old_cwd)));
    assert_int_equal(chdir(cwd), 0);
    /* The data made once first: this test is about the results. */
    const char *overrides[] = {"run.repeats=1", "run.min_time_s=0.02", "run.max_time_s=0.05"};
    struct pb_session_opts opts = {.config_path = config, .overrides = overrides,
                                   .override_count = 3};
    struct pb_result result;
    struct pb_session_outcome outcome;
    int rc = pb_session_run(&opts, NULL, &result, &outcome, msg, sizeof(msg));
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
    pid_t kids[3];
    for (int i = 0; rc == PB_OK && i < 3; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0) {
            int child_rc = pb_session_run(&opts, NULL, &result, &outcome, msg, sizeof(msg));
            _exit(child_rc == PB_OK ? 0 : 1);
        }
    }
    int ok = 0;
    for (int i = 0; rc == PB_OK && i < 3; i++) {
        int status;
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    int files = 0, empty = 0;
    DIR *d = opendir("results");
    for (struct dirent *e; d && (e = readdir(d));) {
        struct stat st;
        char file[600];
        snprintf(file, sizeof(file), "results/%s", e->d_name);
        if (e->d_name[0] == '.' || stat(file, &st) != 0)
            continue;
        files++;
        empty += st.st_size == 0;
    }
    if (d)
        closedir(d);
    assert_int_equal(chdir(old_cwd), 0);
    if (rc != PB_OK)
        fail_msg("session failed: %s", msg);
    assert_int_equal(ok, 3);
    assert_int_equal(files, 4);
    assert_int_equal(empty, 0);
}

/* A dataset folder generated from one dataset.generate and run with
 * another is refused (a config error naming the differing settings and
 * the fix), not measured as if it were the new data. */
static void test_changed_generate_refused(void **state)
{
    (void)state;
    char config[512], output[600], msg[PB_MSG_MAX * 2];
    write_config("stamped.yaml", config_text, "data-stamped", config, sizeof(config));
    make_out_folder();
    snprintf(output, sizeof(output), "%s/out/stamped.json", workdir);
    const char *overrides[] = {"run.repeats=1", "dataset.generate.count=50"};
    struct pb_session_opts opts = {.config_path = config, .overrides = overrides,
                                   .override_count = 1, .output_path = output};
    struct pb_result result;
    struct pb_session_outcome outcome;
    int rc = pb_session_run(&opts, NULL, &result, &outcome, msg, sizeof(msg));
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
    if (rc != PB_OK)
        fail_msg("session failed: %s", msg);
    opts.override_count = 2;
    rc = pb_session_run(&opts, NULL, &result, &outcome, msg, sizeof(msg));
    assert_false(outcome.measured);
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
    assert_int_equal(rc, PB_ERR_CONFIG);
    pb_test_assert_contains(msg, (const char *const[]){config, "count: 48 in the folder, 50 in "
                                                               "the config",
                                                       "remove the folder", NULL});
}

static void test_name_stays_in_results(void **state)
{
    (void)state;
    char config[512], cwd[512], old_cwd[512], msg[PB_MSG_MAX * 2];
    const char *hostile = "name: \"../../escaped/.evil name\"\n";
    char text[2048];
    snprintf(text, sizeof(text), "%s%s", hostile, strchr(config_text, '\n') + 1);
    write_config("hostile.yaml", text, "data", config, sizeof(config));
    snprintf(cwd, sizeof(cwd), "%s/a", workdir);
    assert_int_equal(mkdir(cwd, 0755), 0);
    snprintf(cwd, sizeof(cwd), "%s/a/b", workdir);
    assert_int_equal(mkdir(cwd, 0755), 0);
    assert_non_null(getcwd(old_cwd, sizeof(old_cwd)));
    assert_int_equal(chdir(cwd), 0);
    const char *overrides[] = {"run.repeats=1"};
    struct pb_session_opts opts = {.config_path = config, .overrides = overrides,
                                   .override_count = 1};
    struct pb_result result;
    struct pb_session_outcome outcome;
    int rc = pb_session_run(&opts, NULL, &result, &outcome, msg, sizeof(msg));
    assert_int_equal(chdir(old_cwd), 0);
    if (rc != PB_OK)
        fail_msg("session failed: %s", msg);
    /* results/ + a safe name: no '/', no leading '.', the spaces replaced. */
    const char *file = outcome.result_path;
    assert_int_equal(strncmp(file, "results/", 8), 0);
    assert_null(strchr(file + 8, '/'));
    assert_int_equal(strncmp(file + 8, "_._.._escaped_.evil_name-", 25), 0);
    char written[PB_PATH_MAX + 600], escaped[600];
    snprintf(written, sizeof(written), "%s/%s", cwd, file);
    assert_int_equal(access(written, F_OK), 0);
    snprintf(escaped, sizeof(escaped), "%s/escaped", workdir);
    assert_int_equal(access(escaped, F_OK), -1);
    /* The result keeps the name as written. */
    assert_string_equal(result.name, "../../escaped/.evil name");
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
}

/* Raises the stop flag at the first progress tick of the second repeat
 * (a quarter second in, well inside its 0.8 s), as a signal would. */
struct stopper {
    volatile sig_atomic_t stop;
    int finished, ticks_after;
};

static void stop_progress(void *user, int repeat, int repeats, const struct pb_repeat_result *done)
{
    (void)repeat;
    (void)repeats;
    (void)done;
    ((struct stopper *)user)->finished++;
}

static void stop_tick(void *user, double samples_per_s, double stall_pct)
{
    (void)samples_per_s;
    (void)stall_pct;
    struct stopper *st = user;
    if (st->finished >= 1 && ++st->ticks_after >= 1)
        st->stop = SIGTERM;
}

static void test_stop_leaves_partial_repeat_out(void **state)
{
    (void)state;
    char config[512], output[512], msg[PB_MSG_MAX * 2];
    write_config("partial.yaml", config_text, "data", config, sizeof(config));
    snprintf(output, sizeof(output), "%s/partial.json", workdir);
    const char *overrides[] = {"run.repeats=3", "run.min_time_s=0.8", "run.max_time_s=0.8"};
    struct pb_session_opts opts = {.config_path = config, .output_path = output,
                                   .overrides = overrides, .override_count = 3};
    struct stopper st = {0};
    struct pb_session_hooks hooks = {
        .user = &st, .progress = stop_progress, .tick = stop_tick, .stop = &st.stop};
    struct pb_result result;
    struct pb_session_outcome outcome;
    int rc = pb_session_run(&opts, &hooks, &result, &outcome, msg, sizeof(msg));
    assert_int_equal(rc, PB_ERR_INTERRUPTED);
    assert_true(result.interrupted);
    const struct pb_point_result *p = &result.points[0];
    assert_int_equal(p->repeat_count, 2);
    assert_false(p->repeats[0].interrupted);
    assert_true(p->repeats[1].interrupted);
    /* The summary is the finished repeat's alone, and the warning says so. */
    assert_true(p->samples_per_s == p->repeats[0].samples_per_s);
    assert_int_equal(p->samples, p->repeats[0].samples);
    bool said = false;
    for (int i = 0; i < result.warning_count; i++)
        said = said || (strstr(result.warnings[i], "interrupted by SIGTERM") &&
                        strstr(result.warnings[i], "left out of the summary"));
    assert_true(said);
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
}

/* The stop signals stay caught while the result is summarized and written
 * (issue 28): the measuring hook is still on when "result written" is
 * said, and goes off only after it. */
struct write_watch {
    bool measuring, written, written_while_measuring;
};

static void watch_measuring(void *user, bool on)
{
    ((struct write_watch *)user)->measuring = on;
}

static void watch_message(void *user, enum pb_session_level level, const char *text)
{
    struct write_watch *w = user;
    if (level == PB_SESSION_INFO && strncmp(text, "result written", 14) == 0) {
        w->written = true;
        w->written_while_measuring = w->measuring;
    }
}

static void test_signals_caught_through_the_write(void **state)
{
    (void)state;
    char config[512], output[512], msg[PB_MSG_MAX * 2];
    write_config("write.yaml", config_text, "data", config, sizeof(config));
    snprintf(output, sizeof(output), "%s/write.json", workdir);
    const char *overrides[] = {"run.repeats=1"};
    struct pb_session_opts opts = {.config_path = config, .output_path = output,
                                   .overrides = overrides, .override_count = 1};
    struct write_watch w = {0};
    struct pb_session_hooks hooks = {
        .user = &w, .message = watch_message, .measuring = watch_measuring};
    struct pb_result result;
    struct pb_session_outcome outcome;
    int rc = pb_session_run(&opts, &hooks, &result, &outcome, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("session failed: %s", msg);
    assert_true(w.written);
    assert_true(w.written_while_measuring);
    assert_false(w.measuring);
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
}

/* pbench compare A.yaml B.yaml: both configs in one session, rounds in the
 * order A B B A A ..., one result holding both points tagged base/new, and
 * a comparison that finds a tenfold decode cost a regression; the file
 * alone gives the same comparison again. */
static void test_interleaved_configs(void **state)
{
    (void)state;
    char base[512], next[512], output[512], msg[PB_MSG_MAX * 2];
    static const char *const repeats5 = "run.repeats=5";
    write_config("ab-base.yaml", config_text, "data-ab", base, sizeof(base));
    char slow_text[1024];
    const char *at = strstr(config_text, "cost_us: 20");
    snprintf(slow_text, sizeof(slow_text), "%.*scost_us: 200%s", (int)(at - config_text),
             config_text, at + strlen("cost_us: 20"));
    write_config("ab-new.yaml", slow_text, "data-ab", next, sizeof(next));
    make_out_folder();
    snprintf(output, sizeof(output), "%s/out/ab.json", workdir);
    struct pb_session_opts opts = {.config_path = base, .new_config_path = next,
                                   .overrides = &repeats5, .override_count = 1,
                                   .output_path = output, .threshold_pct = 5};
    struct seen seen = {0};
    struct pb_session_hooks hooks = {.user = &seen, .rounds = on_rounds, .round = on_round};
    struct pb_result result;
    struct pb_session_outcome outcome;
    int rc = pb_session_run(&opts, &hooks, &result, &outcome, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("session failed: %s", msg);
    assert_int_equal(seen.points, 2);
    assert_int_equal(seen.repeats, 5);
    assert_int_equal(seen.rounds, 10);
    static const char *const order[] = {"base", "new", "new", "base", "base", "new", "new", "base"};
    for (int i = 0; i < 8; i++)
        assert_string_equal(seen.labels[i], order[i]);
    assert_int_equal(result.point_count, 2);
    assert_string_equal(json_string_value(json_object_get(result.points[0].axes, "compare")),
                        "base");
    assert_string_equal(json_string_value(json_object_get(result.points[1].axes, "compare")),
                        "new");
    assert_non_null(result.interleaved);
    assert_true(outcome.compared);
    assert_false(outcome.analyzed);
    const struct pb_comparison *cmp = &outcome.comparison;
    assert_true(cmp->interleaved);
    assert_false(cmp->incompatible);
    assert_int_equal(cmp->point_count, 1);
    /* The decode costs more: CPU per sample regresses whatever else runs;
     * samples/s regresses too, or (another test beside this one under
     * ctest -j2) its verdict is withheld as disturbed. */
    const struct pb_metric_cmp *cpu = &cmp->points[0].metrics[3];
    assert_string_equal(cpu->name, "cpu_ns_per_sample");
    /* CPU time per sample is withheld only where the machine's own reference
     * speed moved between the sides (a busy CI runner under ASan). */
    if (cmp->points[0].interference.machine_changed)
        assert_int_equal(cpu->verdict, PB_VERDICT_DISTURBED);
    else
        assert_int_equal(cpu->verdict, PB_VERDICT_REGRESSED);
    enum pb_verdict samples = cmp->points[0].metrics[0].verdict;
    if (cmp->points[0].interference.disturbed)
        assert_true(samples == PB_VERDICT_DISTURBED || samples == PB_VERDICT_AMBIGUOUS);
    else
        assert_int_equal(samples, PB_VERDICT_REGRESSED);
    assert_true(cmp->regressions >= 1);
    assert_int_equal(cmp->setting_change_count, 1); /* the cost, not the name */
    assert_non_null(strstr(cmp->setting_changes[0], "cost_us"));

    /* The file holds both and the comparison; compare re-reads it. */
    struct pb_result back;
    struct pb_comparison again;
    assert_int_equal(pb_result_read(output, &back, msg, sizeof(msg)), PB_OK);
    assert_non_null(json_object_get(back.interleaved, "comparison"));
    assert_int_equal(pb_interleaved_compare(&back, 5, &again, msg, sizeof(msg)), PB_OK);
    assert_int_equal(again.regressions, cmp->regressions);
    assert_int_equal(again.points[0].metrics[0].verdict, cmp->points[0].metrics[0].verdict);
    pb_comparison_free(&again);
    struct pb_result a, b;
    assert_int_equal(pb_interleaved_split(&back, &a, &b, msg, sizeof(msg)), PB_OK);
    assert_int_equal(a.point_count, 1);
    assert_int_equal(b.point_count, 1);
    assert_int_equal(json_object_size(a.points[0].axes), 0);
    assert_true(a.points[0].samples_per_s > b.points[0].samples_per_s);
    pb_result_free(&a);
    pb_result_free(&b);
    pb_result_free(&back);
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);

    /* An ordinary result is not a comparison: said, not crashed. */
    struct pb_result plain = {0};
    assert_int_equal(pb_interleaved_split(&plain, &a, &b, msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, "pbench compare BASE.json NEW.json"));
    pb_result_free(&a);
    pb_result_free(&b);
}

/* pbench compare C.yaml C.yaml --set-new KEY=VALUE: one config given
 * twice, the setting on the new side alone (after -s), listed as the
 * change under test and in the new side's name; a bad or swept key stops
 * before any data is made, naming the file and the option. */
static void test_set_new_on_one_config(void **state)
{
    (void)state;
    char config[512], output[512], msg[PB_MSG_MAX * 2], label[PB_MSG_MAX];
    static const char *const shared = "pipeline.decode.cost_us=30";
    static const char *const change = "pipeline.decode.cost_us=300";
    write_config("one.yaml", config_text, "data-one", config, sizeof(config));
    make_out_folder();
    snprintf(output, sizeof(output), "%s/out/one.json", workdir);
    struct pb_session_opts opts = {.config_path = config, .new_config_path = config,
                                   .overrides = &shared, .override_count = 1,
                                   .new_overrides = &change, .new_override_count = 1,
                                   .output_path = output, .threshold_pct = 5};
    struct pb_result result;
    struct pb_session_outcome outcome;
    if (pb_session_run(&opts, NULL, &result, &outcome, msg, sizeof(msg)) != PB_OK)
        fail_msg("session failed: %s", msg);
    assert_true(outcome.compared);
    const struct pb_comparison *cmp = &outcome.comparison;
    assert_false(cmp->incompatible);
    assert_int_equal(cmp->setting_change_count, 1);
    assert_non_null(strstr(cmp->setting_changes[0], "decode.cost_us: 30.0 -> 300.0"));
    char want[700];
    snprintf(want, sizeof(want), "%s with pipeline.decode.cost_us=300", config);
    assert_string_equal(pb_interleaved_label(result.interleaved, "new", label, sizeof(label)),
                        want);
    assert_string_equal(pb_interleaved_label(result.interleaved, "base", label, sizeof(label)),
                        config);
    const struct pb_metric_cmp *cpu = &cmp->points[0].metrics[3]; /* the new side ran it */
    assert_string_equal(cpu->name, "cpu_ns_per_sample");
    assert_true(cpu->next > 2 * cpu->base);
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);

    /* A bad key, and a key the config sweeps. */
    static const char *const typo = "loader.wrkers=2";
    opts = (struct pb_session_opts){.new_overrides = &typo, .new_override_count = 1};
    opts.new_config_path = config;
    expect_stop_before_data("one.yaml", config_text, &opts, PB_ERR_CONFIG, config,
                            sizeof(config), msg, sizeof(msg));
    snprintf(want, sizeof(want), "%s: --set-new loader.wrkers=2: unknown key 'loader.wrkers'; "
             "did you mean 'workers'? allowed: workers,", config);
    if (strncmp(msg, want, strlen(want)) != 0)
        fail_msg("expected '%s...', got '%s'", want, msg);
    static const char *const swept = "loader.workers=4";
    char sweep_text[1024];
    snprintf(sweep_text, sizeof(sweep_text), "%ssweep:\n  loader.workers: [1, 2]\n",
             config_text);
    opts = (struct pb_session_opts){.new_overrides = &swept, .new_override_count = 1};
    write_config("swept.yaml", sweep_text, "swept.yaml.data", config, sizeof(config));
    opts.new_config_path = config;
    expect_stop_before_data("swept.yaml", sweep_text, &opts, PB_ERR_CONFIG, config,
                            sizeof(config), msg, sizeof(msg));
    assert_non_null(strstr(msg, "--set-new loader.workers=4: loader.workers is swept"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_point),
        cmocka_unit_test(test_sweep_axis_and_baseline),
        cmocka_unit_test(test_config_errors_make_no_data),
        cmocka_unit_test(test_bad_output_and_baseline_stop_first),
        cmocka_unit_test(test_output_checked_before_data),
        cmocka_unit_test(test_parallel_default_names),
        cmocka_unit_test(test_changed_generate_refused),
        cmocka_unit_test(test_name_stays_in_results),
        cmocka_unit_test(test_stop_leaves_partial_repeat_out),
        cmocka_unit_test(test_signals_caught_through_the_write),
        cmocka_unit_test(test_interleaved_configs),
        cmocka_unit_test(test_set_new_on_one_config),
    };
    pb_test_tmpdir_use(workdir);
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
