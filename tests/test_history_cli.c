/* pbench history through the binary: add refuses partial results unless
 * --force, parallel adds to one database all land, a corrupt database is an
 * error naming the file, and show opens a read-only SQLite URI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/hist.h"
#include "bench/result/result.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-history-cli-XXXXXX";

/* Runs pbench with args in workdir and checks its exit code and that its
 * stdout (or stderr, when from_stderr) holds want. */
static void expect(const char *args, int code, bool from_stderr, const char *want)
{
    char *err, path[PB_PATH_MAX];
    int rc = pb_test_run_pbench(workdir, args, &err);
    snprintf(path, sizeof(path), "%s/out.txt", workdir);
    char *out = pb_test_read_file(path, NULL, false);
    if (rc != code || !strstr(from_stderr ? err : out, want))
        fail_msg("pbench %s: exit %d (expected %d), wanted \"%s\"\nstdout:\n%s\nstderr:\n%s",
                 args, rc, code, want, out, err);
    free(out);
    free(err);
}

/* Writes workdir/file: one point of samples_per_s measured at created,
 * complete, or failed (how 1: run.on_error: fail kept the repeat the failure
 * cut short) or interrupted (how 2). */
static void write_result(const char *file, const char *created, double samples_per_s, int how)
{
    struct pb_result r;
    memset(&r, 0, sizeof(r));
    r.schema_version = 1;
    snprintf(r.name, sizeof(r.name), "hist");
    snprintf(r.created, sizeof(r.created), "%s", created);
    snprintf(r.machine.cpu_model, sizeof(r.machine.cpu_model), "Test CPU");
    r.config = json_pack("{s s}", "name", "hist");
    r.points = calloc(1, sizeof(*r.points));
    assert_non_null(r.points);
    r.point_count = 1;
    struct pb_point_result *p = &r.points[0];
    p->repeats = calloc(1, sizeof(*p->repeats));
    assert_non_null(p->repeats);
    p->repeat_count = 1;
    p->repeats[0].wall_s = how == 1 ? 0.0001 : 1;
    p->repeats[0].samples_per_s = p->samples_per_s = samples_per_s;
    if (how == 1)
        snprintf(p->error, sizeof(p->error), "data/sample_29.bin: marked corrupt");
    r.interrupted = p->repeats[0].interrupted = how == 2;
    char path[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(path, sizeof(path), "%s/%s", workdir, file);
    if (pb_result_write(&r, path, msg, sizeof(msg)) != PB_OK)
        fail_msg("%s", msg);
    pb_result_free(&r);
}

/* A failed run's partial repeat and an interrupted run are refused, with
 * why and how to add them anyway; --force adds them. */
static void test_add_refuses_partial_results(void **state)
{
    (void)state;
    write_result("failed.json", "2026-11-01T00:00:00Z", 38084, 1);
    write_result("stopped.json", "2026-11-02T00:00:00Z", 900, 2);
    expect("history add failed.json --db partial.db --revision r1", 1, true,
           "pbench history: failed.json not added: point 0 failed (data/sample_29.bin: marked "
           "corrupt), so its figures are partial and would read as a step in the history; "
           "measure again, or add it anyway with --force");
    expect("history add stopped.json --db partial.db --revision r1", 1, true,
           "stopped.json not added: the run was interrupted");
    expect("history show --db partial.db", 1, true, "no history yet");
    expect("history add failed.json --db partial.db --revision r1 --force", 0, false,
           "added 1 point(s) of hist");
    expect("history show --force", 2, true, "unexpected argument '--force'");
}

/* Ten `history add`s at once into one new database all land: each waits
 * for the others' writes instead of failing "database is locked". */
static void test_parallel_adds_all_land(void **state)
{
    (void)state;
    enum { ADDS = 10 };
    for (int i = 0; i < ADDS; i++) {
        char file[32], created[40];
        snprintf(file, sizeof(file), "par%d.json", i);
        snprintf(created, sizeof(created), "2026-11-01T00:00:%02dZ", i);
        write_result(file, created, 1000 + i, 0);
    }
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && for i in 0 1 2 3 4 5 6 7 8 9; do"
             " ('%s' history add par$i.json --db par.db --revision r$i >par$i.out 2>&1;"
             " echo $? >par$i.rc) & done; wait",
             workdir, getenv("PBENCH_BINARY"));
    assert_int_equal(system(cmd), 0);
    for (int i = 0; i < ADDS; i++) {
        char path[PB_PATH_MAX];
        snprintf(path, sizeof(path), "%s/par%d.rc", workdir, i);
        char *rc = pb_test_read_file(path, NULL, true);
        snprintf(path, sizeof(path), "%s/par%d.out", workdir, i);
        char *out = pb_test_read_file(path, NULL, false);
        if (strcmp(rc, "0\n") != 0)
            fail_msg("add %d of %d exited %s: %s", i, ADDS, rc, out);
        free(rc);
        free(out);
    }
    expect("history show --db par.db", 0, false,
           "1 series of samples_per_s: 0 regression step(s)");
    char path[PB_PATH_MAX];
    snprintf(path, sizeof(path), "%s/par.db", workdir);
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM runs", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), ADDS);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A history whose pages after the first are garbage is an error naming
 * the file, not "no runs". */
static void test_corrupt_database_is_an_error(void **state)
{
    (void)state;
    write_result("c.json", "2026-11-01T00:00:00Z", 1000, 0);
    expect("history add c.json --db corrupt.db --revision r1", 0, false, "added 1 point(s)");
    char path[PB_PATH_MAX];
    snprintf(path, sizeof(path), "%s/corrupt.db", workdir);
    size_t size;
    unsigned char *bytes = (unsigned char *)pb_test_read_file(path, &size, true);
    size_t page = (size_t)bytes[16] << 8 | bytes[17];
    assert_true(page >= 512 && size > 2 * page);
    memset(bytes + page, 0xff, size - page); /* the first page, the schema, stays */
    pb_test_write_file(path, bytes, size);
    free(bytes);
    expect("history show --db corrupt.db", 1, true,
           "pbench history: corrupt.db: cannot read the history: database disk image is "
           "malformed");
}

/* show takes the read-only SQLite URI the help shows; a URI naming a file
 * that does not exist is "no history yet". */
static void test_show_read_only_uri(void **state)
{
    (void)state;
    write_result("ro.json", "2026-11-01T00:00:00Z", 1000, 0);
    expect("history add ro.json --db ro.db --revision r1", 0, false, "added 1 point(s)");
    expect("history show --db 'file:ro.db?mode=ro'", 0, false,
           "1 series of samples_per_s: 0 regression step(s)");
    expect("history show --db 'file:none.db?mode=ro'", 1, true,
           "file:none.db?mode=ro: no history yet");
    expect("history show --db none.db", 1, true, "none.db: no history yet");
    expect("history add ro.json --db 'file:ro.db?mode=ro' --revision r2", 1, true,
           "attempt to write a readonly database");
}

/* history takes its options the way run does: --db=PATH as --db PATH,
 * options before or after the file, and an option of the other
 * sub-command is a usage error. */
static void test_options_as_run_takes_them(void **state)
{
    (void)state;
    write_result("eq.json", "2026-11-01T00:00:00Z", 1000, 0);
    expect("history add --db=eq.db --revision=r1 eq.json", 0, false, "added 1 point(s)");
    expect("history show --db=eq.db --format=csv", 0, false, "samples_per_s");
    expect("history show --db eq.db --revision r2", 2, true, "unexpected argument");
    expect("history add eq.json --db=eq.db --metric stall_pct", 2, true, "unexpected argument");
}

/* Writes workdir/file: night i of a config whose pipeline gained a
 * GaussianBlur (340 us a sample, doubling the CPU per sample) from night
 * blur_from on. */
static void write_blur_night(const char *file, int i, int blur_from)
{
    struct pb_result r;
    memset(&r, 0, sizeof(r));
    r.schema_version = 1;
    snprintf(r.name, sizeof(r.name), "blur");
    snprintf(r.created, sizeof(r.created), "2026-11-%02dT03:00:00Z", i + 1);
    snprintf(r.machine.cpu_model, sizeof(r.machine.cpu_model), "Test CPU");
    r.config = json_pack("{s s}", "name", "blur");
    r.points = calloc(1, sizeof(*r.points));
    assert_non_null(r.points);
    r.point_count = 1;
    struct pb_point_result *p = &r.points[0];
    p->repeats = calloc(1, sizeof(*p->repeats));
    assert_non_null(p->repeats);
    p->repeat_count = 1;
    bool blur = i >= blur_from;
    double jitter = 1 + 0.004 * (double)(i % 3);
    p->repeats[0].wall_s = 1;
    p->repeats[0].samples_per_s = p->samples_per_s = (blur ? 500 : 1000) * jitter;
    p->stage_count = blur ? 2 : 1;
    p->stages = calloc(2, sizeof(*p->stages));
    assert_non_null(p->stages);
    for (size_t s = 0; s < p->stage_count; s++) {
        snprintf(p->stages[s].name, sizeof(p->stages[s].name), "%s", s ? "GaussianBlur" : "decode");
        for (int k = 0; k < 100; k++)
            pb_hist_add(&p->stages[s].hist, 340000);
        p->stages[s].cpu_ns = (uint64_t)(100 * 340e3 * jitter);
    }
    char path[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(path, sizeof(path), "%s/%s", workdir, file);
    if (pb_result_write(&r, path, msg, sizeof(msg)) != PB_OK)
        fail_msg("%s", msg);
    pb_result_free(&r);
}

/* The nightly gate: the first night a stage doubles the CPU per sample
 * exits 5 (suspect) naming the stage, the second 3 (the step); a metric or
 * stage misspelt exits 2 with the names known. */
static void test_bad_night_exit_codes(void **state)
{
    (void)state;
    for (int i = 0; i < 5; i++) {
        char file[32], args[128];
        snprintf(file, sizeof(file), "night%d.json", i);
        write_blur_night(file, i, 3);
        snprintf(args, sizeof(args), "history add %s --db blur.db --revision r%d", file, i);
        expect(args, 0, false, "added 1 point(s)");
        if (i < 2)
            continue;
        expect("history show --db blur.db", i == 2 ? 0 : i == 3 ? 5 : 3, false,
               i == 2 ? "no regression step, no suspect run: history show exits 0"
               : i == 3 ? "GaussianBlur new (absent before run 4)"
                        : "a regression step: history show exits 3");
    }
    expect("history show --db blur.db --metric cpu_ns_per_sample.GaussianBlur", 0, false,
           "absent before run 4");
    expect("history show --db blur.db --metric typo", 2, true, "samples_per_s, stall_pct");
    expect("history show --db blur.db --metric cpu_ns_per_sample.typo", 2, true,
           "the stages its runs have: decode, GaussianBlur");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_refuses_partial_results),
        cmocka_unit_test(test_parallel_adds_all_land),
        cmocka_unit_test(test_corrupt_database_is_an_error),
        cmocka_unit_test(test_show_read_only_uri),
        cmocka_unit_test(test_options_as_run_takes_them),
        cmocka_unit_test(test_bad_night_exit_codes),
    };
    pb_test_tmpdir_use(workdir);
    if (!getenv("PBENCH_BINARY")) {
        fprintf(stderr, "PBENCH_BINARY must be set (ctest sets it)\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
