/* The command line checks that its output was written: every command whose
 * stdout is /dev/full (a full disk) or closed exits 1 saying "pbench CMD:
 * cannot write the output: REASON", and prints as before when it can. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/result/result.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-cli-output-XXXXXX";

/* Runs `pbench args` in workdir with stdout redirected by redirect (a
 * shell fragment) and stderr into err.txt; returns the exit code and the
 * stderr in *err (free it). */
static int run(const char *args, const char *redirect, char **err)
{
    char cmd[4096], path[PB_PATH_MAX];
    snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s %s 2>err.txt", workdir,
             getenv("PBENCH_BINARY"), args, redirect);
    int status = system(cmd);
    snprintf(path, sizeof(path), "%s/err.txt", workdir);
    *err = pb_test_read_file(path, NULL, false);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A result of one point and three repeats in workdir/R.json. */
static void write_result(void)
{
    struct pb_result r;
    memset(&r, 0, sizeof(r));
    r.schema_version = 1;
    snprintf(r.name, sizeof(r.name), "out");
    snprintf(r.created, sizeof(r.created), "2026-11-23T10:00:00Z");
    snprintf(r.machine.cpu_model, sizeof(r.machine.cpu_model), "Test CPU");
    r.config = json_pack("{s s}", "name", "out");
    r.points = calloc(1, sizeof(*r.points));
    assert_non_null(r.points);
    r.point_count = 1;
    struct pb_point_result *p = &r.points[0];
    p->repeats = calloc(3, sizeof(*p->repeats));
    assert_non_null(p->repeats);
    p->repeat_count = 3;
    for (int i = 0; i < 3; i++) {
        p->repeats[i].wall_s = 1;
        p->repeats[i].samples_per_s = 1000 + i;
    }
    p->samples_per_s = 1001;
    char path[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(path, sizeof(path), "%s/R.json", workdir);
    if (pb_result_write(&r, path, msg, sizeof(msg)) != PB_OK)
        fail_msg("%s", msg);
    pb_result_free(&r);
}

/* Commands that succeed when their output can be written, each with its
 * name in the message. */
static const struct {
    const char *args, *name;
} commands[] = {
    {"report R.json", "report"},
    {"report R.json --format markdown", "report"},
    {"report R.json --format csv", "report"},
    {"compare R.json R.json --format markdown", "compare"},
    {"list", "list"},
    {"help history", "help"},
    {"--help", "help"},
    {"version", "version"},
};

static void test_full_disk_exits_1(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0)
        skip();
    write_result();
    for (size_t c = 0; c < PB_ARRAY_LEN(commands); c++) {
        char *err, want[200];
        assert_int_equal(run(commands[c].args, ">/dev/null", &err), 0);
        free(err);
        int rc = run(commands[c].args, ">/dev/full", &err);
        snprintf(want, sizeof(want), "pbench %s: cannot write the output: No space left on device",
                 commands[c].name);
        if (rc != 1 || !strstr(err, want))
            fail_msg("pbench %s >/dev/full: exit %d, stderr:\n%s", commands[c].args, rc, err);
        free(err);
    }
}

/* run --format json writes its result file, then cannot print it. */
static void test_run_json_to_full_disk_exits_1(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0)
        skip();
    char args[2048], *err;
    snprintf(args, sizeof(args),
             "run '%s/configs/null.yaml' -q -s dataset.path=data -s dataset.generate.count=32 "
             "-s dataset.generate.size_bytes=1024 -s run.warmup_batches=1 -s run.min_time_s=0.1 "
             "-s run.max_time_s=0.2 -s run.repeats=1 -s pipeline.decode.cost_us=50 -o run.json "
             "--format json",
             getenv("PBENCH_SOURCE_DIR"));
    int rc = run(args, ">/dev/full", &err);
    if (rc != 1 || !strstr(err, "pbench run: cannot write the output: No space left on device"))
        fail_msg("pbench run --format json >/dev/full: exit %d, stderr:\n%s", rc, err);
    free(err);
}

/* A closed stdout is an error too. */
static void test_closed_stdout_exits_1(void **state)
{
    (void)state;
    write_result();
    char *err;
    int rc = run("report R.json", ">&-", &err);
    if (rc != 1 || !strstr(err, "pbench report: cannot write the output: Bad file descriptor"))
        fail_msg("pbench report >&-: exit %d, stderr:\n%s", rc, err);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_disk_exits_1),
        cmocka_unit_test(test_run_json_to_full_disk_exits_1),
        cmocka_unit_test(test_closed_stdout_exits_1),
    };
    pb_test_tmpdir_use(workdir);
    if (!getenv("PBENCH_BINARY") || !getenv("PBENCH_SOURCE_DIR")) {
        fprintf(stderr, "PBENCH_BINARY and PBENCH_SOURCE_DIR must be set (ctest sets them)\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
