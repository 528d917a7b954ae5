/* pbench wrap end to end (docs/wrap.md): the pbench binary runs the example
 * training job (examples/train/train.py) unchanged, on tiny photos it makes
 * itself, and the result holds the job's DataLoader, per-transform rows
 * from its worker processes under fork and spawn, the settings pbench set,
 * batches the job received bit for bit as without pbench, and clear errors
 * for a job that is not Python, makes no DataLoader, or fails before its
 * first batch; SIGTERM keeps what was measured; of two DDP ranks, the one
 * whose loader is slow is named the straggler. Skipped, saying why, where
 * Debian's python3-torch is missing. No test asserts a wall-clock time. */
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
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/base/fmt.h"
#include "tests/testutil.h"

static const char *source_dir;
static char workdir[] = "/tmp/pbench-wrap-XXXXXX";
static bool have_torch;
static char train[1024]; /* the example job, with tiny photos */

#define NEED_TORCH()                                                                               \
    do {                                                                                           \
        if (!have_torch) {                                                                         \
            fprintf(stderr, "skipped: torch is not installed: apt-get install python3-torch "      \
                            "python3-torchvision (scripts/setup.sh does)\n");                      \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static int setup(void **state)
{
    pb_test_tmpdir_use(workdir);
    source_dir = getenv("PBENCH_SOURCE_DIR");
    if (!getenv("PBENCH_BINARY") || !source_dir) {
        fprintf(stderr, "PBENCH_BINARY and PBENCH_SOURCE_DIR must be set (ctest sets them)\n");
        return -1;
    }
    have_torch = pb_test_have_torch();
    int rc = pb_test_tmpdir_setup(state);
    snprintf(train, sizeof train,
             "/usr/bin/python3 %s/examples/train/train.py --data %s/photos --images 64 --size 64 "
             "--crop 32 --batch-size 8",
             source_dir, workdir);
    return rc;
}

/* Runs pbench with args in the work folder; its stderr into *err. */
static int wrap(const char *args, char **err)
{
    return pb_test_run_pbench(workdir, args, err);
}

static void wrap_ok(const char *args)
{
    char *err = NULL;
    int rc = wrap(args, &err);
    if (rc != 0)
        fail_msg("pbench %s: exit %d: %s", args, rc, err);
    free(err);
}

static const json_t *first_point(const json_t *r)
{
    return json_array_get(json_object_get(r, "points"), 0);
}

/* The measured DataLoader of the point's last job account. */
static const json_t *measured_loader(const json_t *p)
{
    const json_t *jobs = json_object_get(json_object_get(p, "engine"), "jobs");
    const json_t *loaders =
        json_object_get(json_array_get(jobs, json_array_size(jobs) - 1), "loaders");
    for (size_t i = 0; i < json_array_size(loaders); i++)
        if (json_is_true(json_object_get(json_array_get(loaders, i), "measured")))
            return json_array_get(loaders, i);
    fail_msg("no measured DataLoader in the result");
    return NULL;
}

static const json_t *stage_row(const json_t *p, const char *name)
{
    const json_t *stages =
        json_object_get(json_array_get(json_object_get(p, "repeats"), 0), "stages");
    for (size_t i = 0; i < json_array_size(stages); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(stages, i), "name")), name) ==
            0)
            return json_array_get(stages, i);
    return NULL;
}

/* Runs pbench with args, its stdout and stderr into out.txt and err.txt,
 * then the shell redirections fds (which may close or replace those):
 * pbench as a job runner or a shell may start it. Its exit code; its
 * stderr into *err (empty where fds closed it). */
static int wrap_with_fds(const char *args, const char *fds, char **err)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f err.txt && '%s' %s >out.txt 2>err.txt %s", workdir,
             getenv("PBENCH_BINARY"), args, fds);
    int status = system(cmd);
    char path[600];
    snprintf(path, sizeof path, "%s/err.txt", workdir);
    *err = pb_test_read_file(path, NULL, false);
    if (!*err)
        *err = strdup("");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The relay starts and speaks the protocol whatever state pbench's fds 0-9
 * are in (closed, or open on a file without close-on-exec): each of them
 * closed in turn, all of 3-9 open, 0-2 all closed. A job that is not Python
 * gives its own error (exit 2), not a relay that could not read its
 * commands (exit 1). */
static void test_relay_starts_whatever_the_fds(void **state)
{
    (void)state;
    char fds[256];
    for (int fd = -3; fd <= 9; fd++) {
        if (fd >= 0)
            snprintf(fds, sizeof fds, "%d>&-", fd);
        else if (fd == -3)
            snprintf(fds, sizeof fds, "3</dev/null 4</dev/null 5</dev/null 6</dev/null "
                                      "7</dev/null 8</dev/null 9</dev/null");
        else if (fd == -2)
            snprintf(fds, sizeof fds, "<&- 3</dev/null 4</dev/null 5</dev/null");
        else
            snprintf(fds, sizeof fds, "<&- >&- 2>&-");
        char *err = NULL;
        int rc = wrap_with_fds("wrap -- /bin/true", fds, &err);
        if (rc != 2)
            fail_msg("pbench wrap -- /bin/true %s: exit %d, not 2: %s", fds, rc, err);
        if (fd != 2 && fd != -1 && !strstr(err, "started no Python process with pbench's hook"))
            fail_msg("pbench wrap -- /bin/true %s said: %s", fds, err);
        free(err);
    }
}

/* A job measured with the live server on (its sockets take fds 3 and 4),
 * with pbench's stdin closed, and with fds 3-9 partly taken: the measured
 * batches, the result. The samples are slowed (--delay-ms) so that the
 * window is long beside /proc's 10 ms CPU ticks. */
static void test_measures_with_serve_and_stdin_closed(void **state)
{
    (void)state;
    NEED_TORCH();
    static const char *const fds[] = {"", "<&-", "<&- 3</dev/null 6</dev/null 9</dev/null"};
    for (size_t i = 0; i < PB_ARRAY_LEN(fds); i++) {
        char args[2048];
        if (i == 0)
            snprintf(args, sizeof args,
                     "wrap --serve 127.0.0.1:%d --warmup-batches 1 --batches 4 -o fds.json -- %s "
                     "--epochs 100 --delay-ms 10",
                     20000 + (int)(getpid() % 20000), train);
        else
            snprintf(args, sizeof args, "wrap --warmup-batches 1 --batches 4 -o fds.json -- %s "
                                        "--epochs 100 --delay-ms 10",
                     train);
        char *err = NULL;
        int rc = wrap_with_fds(args, fds[i], &err);
        if (rc == 2 && strstr(err, "built without libmicrohttpd")) {
            free(err);
            continue; /* --serve is not built here; the other states still run */
        }
        if (rc != 0)
            fail_msg("pbench %s %s: exit %d: %s", args, fds[i], rc, err);
        free(err);
        json_t *r = pb_test_load_json(workdir, "fds.json");
        const json_t *rep = json_array_get(json_object_get(first_point(r), "repeats"), 0);
        assert_int_equal(json_integer_value(json_object_get(rep, "batches")), 4);
        json_decref(r);
        char path[600];
        snprintf(path, sizeof path, "%s/fds.json", workdir);
        unlink(path);
    }
}

/* The path of a job of tests/wrap_jobs, into buf. */
static const char *job(const char *name, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%s/tests/wrap_jobs/%s", source_dir, name);
    return buf;
}

/* A thread that sends batches while another forks a worker each epoch: the
 * hook's lock, held at the fork, is a new one in the child, and the job
 * runs all its epochs (a worker that hung would fail it at its
 * DataLoader's 60 s timeout). */
static void test_fork_while_another_thread_sends(void **state)
{
    (void)state;
    NEED_TORCH();
    char path[1024], args[2048];
    snprintf(args, sizeof args, "wrap --warmup-batches 1 --until-exit -o fork_thread.json -- "
                                "/usr/bin/python3 %s 40",
             job("fork_thread.py", path, sizeof path));
    char *err = NULL;
    int rc = wrap(args, &err);
    if (rc != 0 || !strstr(err, "fork_thread.py ran 40 epochs") || strstr(err, "timed out"))
        fail_msg("pbench %s: exit %d: %s", args, rc, err);
    free(err);
}

/* A worker that segfaults mid-run: the last batch's step ends where the
 * loop's next() began, not when the job exited (it spends 2 s on its way
 * out), the crash is named and the job's failure is said under
 * --until-exit. */
static void test_a_worker_that_crashes(void **state)
{
    (void)state;
    NEED_TORCH();
    char path[1024], args[2048];
    snprintf(args, sizeof args, "wrap --warmup-batches 2 --until-exit -o crash.json -- "
                                "/usr/bin/python3 %s 120",
             job("worker_crash.py", path, sizeof path));
    char *err = NULL;
    int rc = wrap(args, &err);
    if (rc != 0)
        fail_msg("pbench %s: exit %d: %s", args, rc, err);
    free(err);
    snprintf(path, sizeof path, "%s/out.txt", workdir);
    char *out = pb_test_read_file(path, NULL, true);
    pb_test_assert_contains(out, (const char *const[]){"failed after", "in a next() that waited",
                                                        "exited with status 1",
                                                        "the job failed", NULL});
    free(out);
    json_t *r = pb_test_load_json(workdir, "crash.json");
    const json_t *rep = json_array_get(json_object_get(first_point(r), "repeats"), 0);
    const json_t *steps = json_object_get(json_object_get(rep, "batch_records"), "step_ns");
    assert_true(json_array_size(steps) > 0);
    size_t i;
    const json_t *step;
    json_array_foreach(steps, i, step)
    {
        /* The job's step is a 20 ms sleep; its 2 s way out is no step. */
        if (json_number_value(step) >= 2e9)
            fail_msg("batch %zu's step is %.2f s: the job's way out was booked as step", i,
                     json_number_value(step) / 1e9);
    }
    json_decref(r);
}

/* Whether pid is a process whose command line holds needle. */
static bool process_runs(long pid, const char *needle)
{
    char path[64], cmdline[4096];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    FILE *f = fopen(path, "rb"); /* /proc's files have no size to read by */
    size_t len = f ? fread(cmdline, 1, sizeof cmdline - 1, f) : 0;
    if (f)
        fclose(f);
    cmdline[len] = '\0';
    bool found = false;
    for (size_t i = 0; i < len; i += strlen(cmdline + i) + 1)
        found = found || strstr(cmdline + i, needle);
    return found;
}

/* pbench killed (SIGKILL) while a DataLoader worker of the job is stuck in
 * a sample: the worker does not live on with ppid 1. */
static void test_a_stuck_worker_ends_with_pbench(void **state)
{
    (void)state;
    NEED_TORCH();
    char path[1024], cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && rm -f stuck.pid && { '%s' wrap --until-exit -o stuck.json -- "
             "/usr/bin/python3 %s '%s/stuck.pid' >stuck.out 2>stuck.err & pb=$!; n=0; "
             "while [ ! -f stuck.pid ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done; "
             "kill -9 $pb; wait $pb; }; true",
             workdir, getenv("PBENCH_BINARY"), job("stuck_worker.py", path, sizeof path), workdir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/stuck.pid", workdir);
    char *text = pb_test_read_file(path, NULL, true);
    long worker = strtol(text, NULL, 10);
    free(text);
    assert_true(worker > 1);
    /* It looks for its parent each second; a minute is slack for a busy
     * machine, not a time asserted. */
    for (int i = 0; i < 600 && process_runs(worker, "stuck_worker.py"); i++)
        usleep(100000);
    if (process_runs(worker, "stuck_worker.py")) {
        kill((pid_t)worker, SIGKILL);
        fail_msg("the stuck worker %ld outlived pbench", worker);
    }
}

/* The job's batches, each transform of its Compose timed in its fork
 * workers, the window counted in batches, the DataLoader named by where the
 * job made it. */
static void test_measures_the_example_job(void **state)
{
    (void)state;
    NEED_TORCH();
    char args[2048];
    snprintf(args, sizeof args,
             "wrap --warmup-batches 2 --batches 6 -o fork.json --trace fork.trace.json -- %s "
             "--epochs 100",
             train);
    wrap_ok(args);
    json_t *r = pb_test_load_json(workdir, "fork.json");
    const json_t *p = first_point(r);
    const json_t *rep = json_array_get(json_object_get(p, "repeats"), 0);
    assert_int_equal(json_integer_value(json_object_get(rep, "batches")), 6);
    assert_int_equal(json_integer_value(json_object_get(rep, "samples")), 48);
    static const char *const rows[] = {"getitem",     "RandomResizedCrop", "RandomHorizontalFlip",
                                       "ColorJitter", "ToTensor",          "Normalize",
                                       "collate"};
    for (size_t i = 0; i < PB_ARRAY_LEN(rows); i++) {
        const json_t *row = stage_row(p, rows[i]);
        if (!row)
            fail_msg("no stage row %s", rows[i]);
        assert_true(json_number_value(json_object_get(row, "cpu_ns")) > 0);
    }
    const json_t *loader = measured_loader(p);
    const char *site = json_string_value(json_object_get(loader, "site"));
    assert_non_null(strstr(site, "examples/train/train.py:"));
    assert_string_equal(json_string_value(json_object_get(loader, "dataset")), "__main__.Photos");
    assert_string_equal(json_string_value(json_object_get(loader, "context")), "fork");
    char path[600];
    snprintf(path, sizeof path, "%s/out.txt", workdir);
    char *out = pb_test_read_file(path, NULL, true);
    pb_test_assert_contains(
        out, (const char *const[]){"engine: wrap", "DataLoader", "examples/train/train.py:",
                                   "the job's own, measured", "verdict:", "at batch 8", NULL});
    free(out);
    json_decref(r);
    /* The timeline: the loop's waits on track 0, each transform on a
     * worker's track. */
    json_t *trace = pb_test_load_json(workdir, "fork.trace.json");
    const json_t *events = json_is_array(trace) ? trace : json_object_get(trace, "traceEvents");
    bool wait = false, jitter = false;
    size_t i;
    const json_t *e;
    json_array_foreach(events, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        json_int_t tid = json_integer_value(json_object_get(e, "tid"));
        wait = wait || (name && strcmp(name, "wait") == 0 && tid == 0);
        jitter = jitter || (name && strcmp(name, "ColorJitter") == 0 && tid >= 1);
    }
    assert_true(wait);
    assert_true(jitter);
    json_decref(trace);
}

/* Spawned workers are measured too, and -s loader.workers reaches the
 * DataLoader where the job builds it, said with the script's own value. */
static void test_spawn_workers_and_a_setting(void **state)
{
    (void)state;
    NEED_TORCH();
    char args[2048];
    snprintf(args, sizeof args,
             "wrap -s loader.workers=1 --warmup-batches 1 --batches 4 -o spawn.json -- %s "
             "--epochs 100 --start-method spawn",
             train);
    wrap_ok(args);
    json_t *r = pb_test_load_json(workdir, "spawn.json");
    const json_t *p = first_point(r);
    const json_t *loader = measured_loader(p);
    assert_string_equal(json_string_value(json_object_get(loader, "context")), "spawn");
    const json_t *changed = json_object_get(json_object_get(loader, "changed"), "num_workers");
    assert_int_equal(json_integer_value(json_array_get(changed, 0)), 2);
    assert_int_equal(json_integer_value(json_array_get(changed, 1)), 1);
    assert_non_null(stage_row(p, "ColorJitter"));
    assert_non_null(stage_row(p, "collate"));
    json_decref(r);
}

/* The hook changes nothing the job computes: with a fixed seed, every
 * batch it receives has the same SHA-256 with and without pbench. */
static void test_batches_unchanged(void **state)
{
    (void)state;
    NEED_TORCH();
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && %s --epochs 2 --checksum plain.sums >/dev/null 2>&1",
             workdir, train);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "wrap --warmup-batches 1 --until-exit -o sums.json -- %s --epochs 2 --checksum "
             "wrapped.sums",
             train);
    wrap_ok(cmd);
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/plain.sums", workdir);
    snprintf(b, sizeof b, "%s/wrapped.sums", workdir);
    size_t alen = 0, blen = 0;
    char *plain = pb_test_read_file(a, &alen, true), *wrapped = pb_test_read_file(b, &blen, true);
    assert_true(alen > 0);
    assert_int_equal(alen, blen);
    assert_memory_equal(plain, wrapped, alen);
    free(plain);
    free(wrapped);
}

static void assert_wrap_says(const char *args, int code, const char *const *needles)
{
    char *err = NULL;
    int rc = wrap(args, &err);
    if (rc != code)
        fail_msg("pbench %s: exit %d, not %d: %s", args, rc, code, err);
    pb_test_assert_contains(err, needles);
    free(err);
}

/* What cannot be measured says why: not a Python job (2), a program that
 * is not there (2), a Python job without a DataLoader (1), a job that fails
 * before its first batch (1, with its last lines). */
static void test_jobs_that_cannot_be_measured(void **state)
{
    (void)state;
    NEED_TORCH();
    assert_wrap_says("wrap -- /bin/true", 2,
                     (const char *const[]){"started no Python process with pbench's hook", NULL});
    assert_wrap_says(
        "wrap -- pbench-no-such-program", 2,
        (const char *const[]){"'pbench-no-such-program' is not a program on PATH", NULL});
    assert_wrap_says("wrap -- /usr/bin/python3 -c 'print(42)'", 1,
                     (const char *const[]){"exited with status 0 without creating a torch "
                                           "DataLoader",
                                           NULL});
    char script[600];
    snprintf(script, sizeof script, "%s/broken.py", workdir);
    static const char broken[] =
        "import torch.utils.data as d\n"
        "class Broken(d.Dataset):\n"
        "    def __len__(self): return 8\n"
        "    def __getitem__(self, i): raise ValueError('sample %d is unreadable' % i)\n"
        "for batch in d.DataLoader(Broken(), batch_size=2, num_workers=1): pass\n";
    pb_test_write_file(script, broken, strlen(broken));
    assert_wrap_says("wrap -- /usr/bin/python3 broken.py", 1,
                     (const char *const[]){"exited with status 1 before the measured "
                                           "DataLoader's first batch",
                                           "broken.py:5", "is unreadable", NULL});
    assert_wrap_says("wrap -s loader.engine=torch -- /usr/bin/python3 broken.py", 2,
                     (const char *const[]){"gives the job's DataLoader only", NULL});
}

/* A job that leaves a helper in its session and a double-forked, setsid
 * grandchild: neither holds --until-exit open after the job's first
 * process ends, nor outlives pbench at the window's end (--time); both
 * are named. */
static void test_what_the_job_leaves_is_ended(void **state)
{
    (void)state;
    NEED_TORCH();
    static const char *const windows[] = {"--until-exit", "--time 2"};
    for (size_t w = 0; w < PB_ARRAY_LEN(windows); w++) {
        char path[1024], pids[700], args[2048];
        snprintf(pids, sizeof pids, "%s/left.pids", workdir);
        unlink(pids);
        snprintf(args, sizeof args, "wrap --warmup-batches 1 %s -o left.json -- /usr/bin/python3 "
                                    "%s %s %d",
                 windows[w], job("leaves_helpers.py", path, sizeof path), pids,
                 w == 0 ? 20 : 1000000);
        char *err = NULL;
        int rc = wrap(args, &err);
        if (rc != 0)
            fail_msg("pbench %s: exit %d: %s", args, rc, err);
        free(err);
        snprintf(path, sizeof path, "%s/out.txt", workdir);
        char *out = pb_test_read_file(path, NULL, true);
        pb_test_assert_contains(out, (const char *const[]){"the job left", "(sleep 45)",
                                                            "(sleep 46)", "pbench ended them",
                                                            NULL});
        free(out);
        char *text = pb_test_read_file(pids, NULL, true);
        char *next = text;
        for (int i = 0; i < 2; i++) {
            long pid = strtol(next, &next, 10);
            assert_true(pid > 1);
            if (process_runs(pid, "sleep")) {
                kill((pid_t)pid, SIGKILL);
                fail_msg("%s: the job's helper %ld outlived pbench", windows[w], pid);
            }
        }
        free(text);
    }
}

/* A Python that cannot load the hook says why: the flag (-S, -I, -E) or
 * the reset (env -i, env -u PYTHONPATH, PYTHONPATH set by a launcher), and
 * a job that would run on is ended at the window (--time), not at its end
 * (it sleeps 45 s and exits 0). No torch is needed. */
static void test_a_python_without_the_hook_says_why(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"/usr/bin/python3 -S -c pass", "python -S skips the site module"},
        {"/usr/bin/python3 -I -c pass", "python -I isolated mode"},
        {"/usr/bin/python3 -sE -c pass", "python -E ignores PYTHON* variables"},
        {"env -u PYTHONPATH /usr/bin/python3 -c pass", "a launcher reset PYTHONPATH"},
        {"env -i /usr/bin/python3 -c pass", "a launcher cleared it"},
        {"--time 2 -- sh -c 'PYTHONPATH=/nowhere /usr/bin/python3 -c \"import time; "
         "time.sleep(45)\"'",
         "its PYTHONPATH is '/nowhere'"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        char args[1024];
        snprintf(args, sizeof args, "wrap %s%s", strncmp(cases[i][0], "--", 2) ? "-- " : "",
                 cases[i][0]);
        char *err = NULL;
        int rc = wrap(args, &err);
        bool window = strncmp(cases[i][0], "--time", 6) == 0; /* ended there, not at its end */
        if (rc != 2 || !strstr(err, "started no Python process with pbench's hook") ||
            !strstr(err, cases[i][1]) || (window && strstr(err, "exited with status 0 and")))
            fail_msg("pbench %s: exit %d: %s", args, rc, err);
        free(err);
    }
}

/* Processes that loaded the hook but could not reach pbench are said to be
 * so, with where they looked: a socket path changed on the way, and (where
 * user namespaces allow it) a private /tmp and another host name. */
static void test_hooked_processes_that_cannot_reach_pbench(void **state)
{
    (void)state;
    assert_wrap_says("wrap -- env PBENCH_WRAP_SOCKET=/nonexistent/records /usr/bin/python3 -c pass",
                     2,
                     (const char *const[]){"loaded pbench's hook but could not reach pbench",
                                           "looked for its relay at /nonexistent/records",
                                           "changed PBENCH_WRAP_SOCKET", NULL});
    if (system("unshare -rmu sh -c 'mount -t tmpfs tmpfs /tmp && hostname pbench-other' "
               ">/dev/null 2>&1") != 0) {
        fprintf(stderr, "note: no user namespaces here (unshare -rmu): the private /tmp and "
                        "the other host are not tried\n");
        return;
    }
    /* A private /tmp as a launcher gives it: a tmpfs over the relay's own
     * folder, not over all of /tmp, where pbench's tree (and so the hook)
     * may itself lie, as a CI clone may. */
    static const char *const launchers[][2] = {
        {"unshare -rm sh -c 'mount -t tmpfs tmpfs \"${PBENCH_WRAP_SOCKET%/*}\" && exec \"$0\" "
         "\"$@\"'",
         "another /tmp"},
        {"unshare -rmu sh -c 'mount -t tmpfs tmpfs \"${PBENCH_WRAP_SOCKET%/*}\" && hostname "
         "pbench-other && exec \"$0\" \"$@\"'",
         "on pbench-other, another machine"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(launchers); i++) {
        char args[1024];
        snprintf(args, sizeof args, "wrap -- %s /usr/bin/python3 -c pass", launchers[i][0]);
        assert_wrap_says(args, 2,
                         (const char *const[]){"loaded pbench's hook but could not reach pbench",
                                               "looked for its relay at /tmp/pbench-wrap-",
                                               launchers[i][1], NULL});
    }
}

/* SIGTERM from a job runner's timeout ends the job and keeps what was
 * measured (exit 143, the result written, its repeat cut short). */
static void test_sigterm_keeps_what_was_measured(void **state)
{
    (void)state;
    NEED_TORCH();
    char args[2048];
    /* The job starts (importing torch, making its photos) in seconds; 25 s
     * leave room on a busy machine. */
    snprintf(args, sizeof args,
             "wrap --warmup-batches 1 --until-exit --grace 1 -o term.json -- %s --epochs 100000 "
             "--delay-ms 5",
             train);
    char cmd[2300];
    snprintf(cmd, sizeof cmd, "timeout --preserve-status -s TERM 25 %s", getenv("PBENCH_BINARY"));
    char full[4500];
    snprintf(full, sizeof full, "cd '%s' && %s %s >out.txt 2>err.txt", workdir, cmd, args);
    int status = system(full);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 143);
    json_t *r = pb_test_load_json(workdir, "term.json");
    const json_t *rep = json_array_get(json_object_get(first_point(r), "repeats"), 0);
    assert_true(json_integer_value(json_object_get(rep, "samples")) > 0);
    json_decref(r);
}

/* A tiny job of the tests' own: a Dataset of tensors, its DataLoader built
 * once (workers from its first argument, else 0), a small matrix product
 * a step. It starts in about a second and runs until it is ended. */
static void write_tiny_job(void)
{
    static const char tiny[] =
        "import sys\n"
        "import torch\n"
        "import torch.utils.data as d\n"
        "class Squares(d.Dataset):\n"
        "    def __len__(self): return 64\n"
        "    def __getitem__(self, i): return torch.full((16,), float(i * i))\n"
        "loader = d.DataLoader(Squares(), batch_size=4,\n"
        "                      num_workers=int(sys.argv[1]) if len(sys.argv) > 1 else 0)\n"
        "for epoch in range(100000):\n"
        "    for batch in loader:\n"
        "        torch.mm(torch.ones(64, 64), torch.ones(64, 64))\n";
    char path[600];
    snprintf(path, sizeof path, "%s/tiny.py", workdir);
    pb_test_write_file(path, tiny, strlen(tiny));
}

static char *wrap_out(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/out.txt", workdir);
    return pb_test_read_file(path, NULL, true);
}

/* What pbench wrap cannot give a job (the step is the job's, the data the
 * job reads itself) is refused before the job starts, naming what wrap
 * does set: exit 2, and nothing runs. */
static void test_settings_wrap_cannot_give(void **state)
{
    (void)state;
    static const char *const sets[] = {"loader.workers, batch_size, pin_memory",
                                       "and drop_last", "wrap.*", "run.warmup_batches",
                                       "repeats", NULL};
    assert_wrap_says("wrap -s run.step_ms=500 -- /usr/bin/python3 tiny.py", 2, sets);
    assert_wrap_says("wrap -s run.step_ms=500 -- /usr/bin/python3 tiny.py", 2,
                     (const char *const[]){"-s run.step_ms=500: a wrapped job cannot be given "
                                           "run.step_ms (the job's step is its own, measured)",
                                           NULL});
    assert_wrap_says("wrap --set-new dataset.args.x=1 -- /usr/bin/python3 tiny.py", 2, sets);
    assert_wrap_says("wrap --set-new dataset.args.x=1 -- /usr/bin/python3 tiny.py", 2,
                     (const char *const[]){"--set-new dataset.args.x=1: a wrapped job cannot be "
                                           "given dataset.args.x",
                                           NULL});
    assert_wrap_says("wrap -a pipeline.decode.cost_us=1,2 -- /usr/bin/python3 tiny.py", 2, sets);
}

/* --ideal runs 4 repeats a side, interleaved, by default, so its
 * comparison can decide (no "can never reach p < 0.05"); its table has no
 * stage rows, as the ideal side runs no loader. */
static void test_ideal_decides_by_default(void **state)
{
    (void)state;
    NEED_TORCH();
    write_tiny_job();
    wrap_ok("wrap --ideal --warmup-batches 1 --batches 20 -o ideal.json -- /usr/bin/python3 "
            "tiny.py");
    json_t *r = pb_test_load_json(workdir, "ideal.json");
    const json_t *points = json_object_get(r, "points");
    assert_int_equal(json_array_size(points), 2);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(json_array_size(json_object_get(json_array_get(points, i), "repeats")),
                         4);
    json_decref(r);
    char *out = wrap_out();
    pb_test_assert_contains(out, (const char *const[]){"ideal loader", "samples_per_s", NULL});
    assert_null(strstr(out, "can never reach"));
    assert_null(strstr(out, "cpu_ns_per_sample."));
    assert_null(strstr(out, "stages that explain"));
    free(out);
}

/* A sweep of a wrapped job is ranked by the job's own samples/s and either
 * recommends a point or withholds it, saying why (a shared machine); the
 * header names the swept values, the capacity line the job's own CPU. */
static void test_a_sweep_by_the_jobs_own_speed(void **state)
{
    (void)state;
    NEED_TORCH();
    write_tiny_job();
    wrap_ok("wrap -a loader.workers=0,1 --warmup-batches 1 --batches 20 -o sweep.json -- "
            "/usr/bin/python3 tiny.py");
    char *out = wrap_out();
    pb_test_assert_contains(out, (const char *const[]){"loader: the job's own, with workers=0,1",
                                                       "a wrapped job by what it gains",
                                                       "the job's main process", NULL});
    if (!strstr(out, "(* = recommended)"))
        pb_test_assert_contains(out, (const char *const[]){"recommendation withheld: below",
                                                           "withheld, disturbed: other "
                                                           "processes took",
                                                           NULL});
    assert_null(strstr(out, "pid 0:"));
    free(out);
}

/* An A/B of two commands: --set-new-command gives the new side's, and the
 * comparison lists the change as a setting's. */
static void test_set_new_command(void **state)
{
    (void)state;
    NEED_TORCH();
    write_tiny_job();
    wrap_ok("wrap --set-new-command '/usr/bin/python3 tiny.py 1' -s run.repeats=1 "
            "--warmup-batches 1 --batches 10 -o commands.json -- /usr/bin/python3 tiny.py");
    char *out = wrap_out();
    pb_test_assert_contains(out, (const char *const[]){"setting changed: wrap.command: "
                                                       "\"/usr/bin/python3 tiny.py\" -> "
                                                       "\"/usr/bin/python3 tiny.py 1\"",
                                                       NULL});
    free(out);
}

/* Each worker row's CPU per sample is pbench's division of the raw
 * figures the relay sent (the thread CPU of the samples it built, cpu_ns,
 * over those samples): the known answer, in the result and in the table
 * (out) where the row's line says it. */
static void assert_workers_cpu(const json_t *workers, const char *out)
{
    size_t i, timed = 0;
    const json_t *w;
    json_array_foreach(workers, i, w)
    {
        const json_t *cpu = json_object_get(w, "cpu_ns"), *samples = json_object_get(w, "samples");
        const json_t *per = json_object_get(w, "cpu_ns_per_sample");
        if (!json_is_integer(cpu) || json_integer_value(samples) <= 0) {
            assert_true(json_is_null(per));
            continue;
        }
        double want = (double)json_integer_value(cpu) / (double)json_integer_value(samples);
        if (!json_is_number(per) || fabs(json_number_value(per) - want) > 1e-9 * want)
            fail_msg("worker row %zu: cpu_ns_per_sample is not cpu_ns / samples (%.6g): %s", i,
                     want, json_dumps(w, JSON_COMPACT));
        char text[32], line[64];
        pb_fmt_duration(text, sizeof text, want);
        snprintf(line, sizeof line, "%s CPU per sample", text);
        if (!strstr(out, line))
            fail_msg("worker row %zu: no '%s' in the table:\n%s", i, line, out);
        timed++;
    }
    assert_true(timed > 0);
}

/* --time S is a window of S seconds, not a cap: no repeat "hit
 * run.max_time_s" nor is "capped"; rows of nothing (pbench's loop stages,
 * MB/s read, worker_start under persistent workers) are left out. */
static void test_a_timed_window_without_clutter(void **state)
{
    (void)state;
    NEED_TORCH();
    write_tiny_job();
    char *err = NULL;
    int rc = wrap("wrap --time 1.5 -s loader.persistent_workers=true --warmup-batches 1 -o "
                  "timed.json -- /usr/bin/python3 tiny.py 1",
                  &err);
    if (rc != 0)
        fail_msg("pbench wrap --time: exit %d: %s", rc, err);
    assert_null(strstr(err, "hit run.max_time_s"));
    free(err);
    char *out = wrap_out();
    pb_test_assert_contains(out, (const char *const[]){"loop time", "wait ", NULL});
    static const char *const clutter[] = {"capped", "hit run.max_time_s", "stages 0.0%",
                                          "MB/s read", "worker_start      0", NULL};
    for (const char *const *c = clutter; *c; c++)
        if (strstr(out, *c))
            fail_msg("'%s' in the output of wrap --time:\n%s", *c, out);
    json_t *r = pb_test_load_json(workdir, "timed.json");
    const json_t *rep = json_array_get(json_object_get(first_point(r), "repeats"), 0);
    assert_false(json_is_true(json_object_get(rep, "hit_time_cap")));
    /* Each worker row names its process, persistent workers too. */
    const json_t *job0 = json_array_get(json_object_get(json_object_get(first_point(r), "engine"),
                                                        "jobs"), 0);
    const json_t *workers = json_object_get(job0, "workers");
    assert_true(json_array_size(workers) > 0);
    for (size_t i = 0; i < json_array_size(workers); i++) {
        const json_t *pid = json_object_get(json_array_get(workers, i), "pid");
        if (!json_is_integer(pid) || json_integer_value(pid) <= 0)
            fail_msg("worker row %zu has no pid: %s", i,
                     json_dumps(json_array_get(workers, i), JSON_COMPACT));
    }
    assert_workers_cpu(workers, out);
    free(out);
    json_decref(r);
}

/* Two DDP ranks (gloo on CPU), rank 1's Dataset 6 ms a sample against
 * rank 0's 1 ms: the table names rank 1 as the straggler, says that rank 0
 * waits for it in its step, and no try line tells every rank to add
 * workers (docs/wrap.md, "The straggler"). */
static void test_a_slow_rank_is_the_straggler(void **state)
{
    (void)state;
    NEED_TORCH();
    char args[2048], path[1100];
    snprintf(args, sizeof args,
             "wrap --warmup-batches 5 --until-exit -o ranks.json -- /usr/bin/python3 "
             "%s/examples/train/launch.py --nproc 2 -- /usr/bin/python3 %s --slow-rank 1",
             source_dir, job("slow_rank.py", path, sizeof path));
    wrap_ok(args);
    json_t *r = pb_test_load_json(workdir, "ranks.json");
    const json_t *jobs = json_object_get(json_object_get(first_point(r), "engine"), "jobs");
    const json_t *rows =
        json_object_get(json_array_get(jobs, json_array_size(jobs) - 1), "rank_rows");
    assert_int_equal(json_array_size(rows), 2);
    const json_t *slow = json_array_get(rows, 1), *fast = json_array_get(rows, 0);
    assert_true(json_number_value(json_object_get(slow, "stall_pct")) >
                json_number_value(json_object_get(fast, "stall_pct")));
    assert_true(json_number_value(json_object_get(fast, "step_ms")) >
                json_number_value(json_object_get(slow, "step_ms")));
    assert_string_equal(json_string_value(json_object_get(slow, "top_stage")), "getitem");
    json_decref(r);
    snprintf(path, sizeof path, "%s/out.txt", workdir);
    char *out = pb_test_read_file(path, NULL, true);
    /* The rows name each rank's host (this machine's) where the hook said it. */
    pb_test_assert_contains(out, (const char *const[]){"rank 1 on ", " is the straggler",
                                                       "the other ranks wait for it in their "
                                                       "step (rank 0 on ", "slowest rank 1 ",
                                                       "input-bound through one rank", NULL});
    assert_null(strstr(out, "add workers"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measures_the_example_job),
        cmocka_unit_test(test_spawn_workers_and_a_setting),
        cmocka_unit_test(test_batches_unchanged),
        cmocka_unit_test(test_jobs_that_cannot_be_measured),
        cmocka_unit_test(test_sigterm_keeps_what_was_measured),
        cmocka_unit_test(test_relay_starts_whatever_the_fds),
        cmocka_unit_test(test_measures_with_serve_and_stdin_closed),
        cmocka_unit_test(test_fork_while_another_thread_sends),
        cmocka_unit_test(test_a_worker_that_crashes),
        cmocka_unit_test(test_a_stuck_worker_ends_with_pbench),
        cmocka_unit_test(test_what_the_job_leaves_is_ended),
        cmocka_unit_test(test_a_python_without_the_hook_says_why),
        cmocka_unit_test(test_hooked_processes_that_cannot_reach_pbench),
        cmocka_unit_test(test_settings_wrap_cannot_give),
        cmocka_unit_test(test_ideal_decides_by_default),
        cmocka_unit_test(test_a_sweep_by_the_jobs_own_speed),
        cmocka_unit_test(test_set_new_command),
        cmocka_unit_test(test_a_timed_window_without_clutter),
        cmocka_unit_test(test_a_slow_rank_is_the_straggler),
    };
    if (getenv("PB_TEST_FILTER")) /* one test by name, while working on it */
        cmocka_set_test_filter(getenv("PB_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, pb_test_tmpdir_teardown);
}
