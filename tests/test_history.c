/* History: step-change detection on series whose answer is known, and the
 * SQLite round trip through add and show. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bench/analyze/history.h"
#include "bench/report/history_text.h"
#include "bench/base/pb.h"
#include "tests/testutil.h"

static void test_step_detection(void **state)
{
    (void)state;
    double change;
    /* Flat with noise: no step. */
    const double flat[] = {100, 101, 99, 100.5, 99.5, 100, 101};
    assert_int_equal(pb_history_step(flat, 7, 5, &change), -1);
    /* A drop of 10% that holds for 3 runs: a step at index 4. */
    const double drop[] = {100, 101, 99, 100, 90, 89.5, 90.5};
    assert_int_equal(pb_history_step(drop, 7, 5, &change), 4);
    assert_true(change < -9 && change > -11);
    /* A single outlier does not make a step (it must persist 2 runs). */
    const double blip[] = {100, 101, 99, 100, 80, 100, 100};
    assert_int_equal(pb_history_step(blip, 7, 5, &change), -1);
    const double last[] = {100, 101, 99, 100, 100, 80};
    assert_int_equal(pb_history_step(last, 6, 5, &change), -1);
    /* Two runs in a row are enough; an improvement is a step too. */
    const double rise[] = {100, 100, 100, 112, 113};
    assert_int_equal(pb_history_step(rise, 5, 5, &change), 3);
    assert_true(change > 11);
    /* A change under the threshold is not a step. */
    const double small[] = {100, 100, 100, 104, 104, 104};
    assert_int_equal(pb_history_step(small, 6, 5, &change), -1);
}

static void test_add_and_show(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    char msg[PB_MSG_MAX];
    static const double sps[] = {1000, 1010, 990, 1000, 880, 885};
    for (size_t i = 0; i < PB_ARRAY_LEN(sps); i++) {
        struct pb_result r;
        memset(&r, 0, sizeof(r));
        snprintf(r.name, sizeof(r.name), "ci");
        snprintf(r.created, sizeof(r.created), "2026-11-%02zuT00:00:00Z", i + 1);
        snprintf(r.machine.cpu_model, sizeof(r.machine.cpu_model), "Test CPU");
        struct pb_point_result p;
        memset(&p, 0, sizeof(p));
        p.repeat_count = 1;
        p.samples_per_s = sps[i];
        r.points = &p;
        r.point_count = 1;
        char rev[16];
        snprintf(rev, sizeof(rev), "r%zu", i);
        assert_int_equal(pb_history_add(db, &r, rev, "test", msg, sizeof(msg)), PB_OK);
    }
    /* show prints the trend; its return value counts series with a step. */
    fflush(stdout);
    assert_int_equal(pb_history_show(db, "ci", "samples_per_s", 5, msg, sizeof(msg)), 1);
    assert_int_equal(pb_history_show(db, "ci", "samples_per_s", 20, msg, sizeof(msg)), 0);
    assert_int_equal(pb_history_show(db, "other", "samples_per_s", 5, msg, sizeof(msg)), PB_ERR);
    char expect[400];
    snprintf(expect, sizeof(expect), "%s: no runs of config other", db);
    assert_string_equal(msg, expect);
    assert_int_equal(pb_history_show(db, NULL, "bogus", 5, msg, sizeof(msg)), PB_ERR_CONFIG);
    /* The metrics history keeps, from the table (a new one joins the list). */
    char kept[256], want[400];
    pb_history_metric_names(kept, sizeof(kept), ", ");
    assert_non_null(strstr(kept, "samples_per_s, stall_pct, accel_util_pct, cpu_ns_per_sample, "
                                 "assembly_p99_ns, rss_peak_bytes, machine_ref_ns"));
    snprintf(want, sizeof(want),
             "--metric must be one of: %s, or cpu_ns_per_sample.STAGE; got 'bogus'", kept);
    assert_string_equal(msg, want);
    unlink(db);
    rmdir(dir);
}

/* A result of one point and one repeat measured at created, owned by the
 * caller (pb_result_free). */
static void one_point_result(struct pb_result *r, const char *created, double samples_per_s)
{
    memset(r, 0, sizeof(*r));
    r->schema_version = 1;
    snprintf(r->name, sizeof(r->name), "ci");
    snprintf(r->created, sizeof(r->created), "%s", created);
    snprintf(r->machine.cpu_model, sizeof(r->machine.cpu_model), "Test CPU");
    r->points = calloc(1, sizeof(*r->points));
    assert_non_null(r->points);
    r->point_count = 1;
    r->points[0].repeats = calloc(1, sizeof(*r->points[0].repeats));
    assert_non_null(r->points[0].repeats);
    r->points[0].repeat_count = 1;
    r->points[0].repeats[0].wall_s = 1;
    r->points[0].repeats[0].samples_per_s = samples_per_s;
    r->points[0].samples_per_s = samples_per_s;
}

static long count_rows(const char *db_path)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM runs", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long n = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* A database that cannot be written (opened read-only through a SQLite
 * URI, which stops root too) gives SQLite's own error with the database,
 * not what the rollback left ("not an error"). */
static void test_add_to_read_only_database(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], uri[300], msg[PB_MSG_MAX];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    struct pb_result r;
    one_point_result(&r, "2026-11-01T00:00:00Z", 1000);
    assert_int_equal(pb_history_add(db, &r, "r1", "test", msg, sizeof(msg)), PB_OK);
    pb_result_free(&r);

    one_point_result(&r, "2026-11-02T00:00:00Z", 900);
    snprintf(uri, sizeof(uri), "file:%s?mode=ro", db);
    assert_int_equal(pb_history_add(uri, &r, "r2", "test", msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, uri));
    assert_non_null(strstr(msg, "attempt to write a readonly database"));
    assert_null(strstr(msg, "not an error"));
    assert_int_equal(count_rows(db), 1);
    pb_result_free(&r);
    unlink(db);
    rmdir(dir);
}

/* The same result added twice is stored once; the second add says so. */
static void test_add_twice_keeps_one_row(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], file[256], msg[PB_MSG_MAX], summary[PB_MSG_MAX * 2];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    snprintf(file, sizeof(file), "%s/r.json", dir);
    struct pb_result r;
    one_point_result(&r, "2026-11-01T00:00:00Z", 1000);
    assert_int_equal(pb_history_add(db, &r, "r1", "test", msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_history_add(db, &r, "r1", "test", msg, sizeof(msg)), PB_OK);
    assert_int_equal(count_rows(db), 1);

    assert_int_equal(pb_result_write(&r, file, msg, sizeof(msg)), PB_OK);
    assert_int_equal(
        pb_history_add_file(db, file, "r2", false, summary, sizeof(summary), msg, sizeof(msg)),
        PB_OK);
    assert_non_null(strstr(summary, "added 1 point(s) of ci"));
    assert_int_equal(count_rows(db), 2); /* filed under another revision */
    assert_int_equal(
        pb_history_add_file(db, file, "r2", false, summary, sizeof(summary), msg, sizeof(msg)),
        PB_OK);
    assert_non_null(strstr(summary, "already in the history"));
    assert_int_equal(count_rows(db), 2);
    pb_result_free(&r);
    unlink(db);
    unlink(file);
    rmdir(dir);
}

/* Adds one_point_result(created, samples_per_s, stall_pct) with a config
 * whose decode costs cost_us, measured in repeats rounds, under revision
 * rev. */
static void add_run_repeats(const char *db, const char *created, double samples_per_s,
                            double stall_pct, double cost_us, int repeats, const char *rev)
{
    struct pb_result r;
    char msg[PB_MSG_MAX];
    one_point_result(&r, created, samples_per_s);
    r.points[0].stall_pct = stall_pct;
    r.config = json_pack("{s:s, s:{s:s}, s:[{s:{s:s, s:f}}], s:{s:i}, s:{s:i, s:f}}", "name", "ci",
                         "dataset", "path", "data", "pipeline", "decode", "decoder", "null",
                         "cost_us", cost_us, "loader", "workers", 2, "run", "repeats", repeats,
                         "step_ms", 5.0);
    assert_non_null(r.config);
    assert_int_equal(pb_history_add(db, &r, rev, "test", msg, sizeof(msg)), PB_OK);
    pb_result_free(&r);
}

static void add_run(const char *db, const char *created, double samples_per_s, double stall_pct,
                    double cost_us, const char *rev)
{
    add_run_repeats(db, created, samples_per_s, stall_pct, cost_us, 3, rev);
}

/* A step is a failure only when it makes the metric worse: samples/s up,
 * or stall % down, is reported and exits 0; the other way round counts. */
static void test_only_regression_steps_count(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], msg[PB_MSG_MAX];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    static const double sps[] = {1000, 1005, 995, 1200, 1210};
    static const double stall[] = {10, 10, 10, 20, 21};
    for (size_t i = 0; i < PB_ARRAY_LEN(sps); i++) {
        char created[32], rev[8];
        snprintf(created, sizeof(created), "2026-11-%02zuT00:00:00Z", i + 1);
        snprintf(rev, sizeof(rev), "r%zu", i);
        add_run(db, created, sps[i], stall[i], 300, rev);
    }
    fflush(stdout);
    assert_int_equal(pb_history_show(db, "ci", "samples_per_s", 5, msg, sizeof(msg)), 0);
    assert_int_equal(pb_history_show(db, "ci", "stall_pct", 5, msg, sizeof(msg)), 1);
    unlink(db);
    rmdir(dir);
}

/* Four results of one config name with cost_us 300, 300, 600, 600 are two
 * series (what was measured changed), not a step change. */
static void test_series_keyed_by_what_was_measured(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], msg[PB_MSG_MAX];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    add_run(db, "2026-11-01T00:00:00Z", 1000, 10, 300, "r1");
    add_run(db, "2026-11-02T00:00:00Z", 1002, 10, 300, "r2");
    add_run(db, "2026-11-03T00:00:00Z", 500, 10, 600, "r3");
    add_run(db, "2026-11-04T00:00:00Z", 501, 10, 600, "r4");
    fflush(stdout);
    assert_int_equal(pb_history_show(db, "ci", "samples_per_s", 5, msg, sizeof(msg)), 0);
    sqlite3 *h;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT count(DISTINCT fingerprint) FROM runs", -1,
                                        &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 2);
    sqlite3_finalize(st);
    sqlite3_close(h);
    /* Not a silent new series: a break, naming what changed. */
    struct pb_history loaded;
    assert_int_equal(pb_history_load(db, "ci", "samples_per_s", 5, &loaded, msg, sizeof(msg)),
                     PB_OK);
    assert_int_equal(loaded.series_count, 2);
    const struct pb_history_series *later =
        loaded.series[0].runs[0].created[9] == '3' ? &loaded.series[0] : &loaded.series[1];
    const struct pb_history_series *earlier = later == loaded.series ? &loaded.series[1]
                                                                     : &loaded.series[0];
    assert_int_equal(earlier->break_count, 0);
    assert_int_equal(later->break_count, 1);
    assert_string_equal(later->breaks[0], "pipeline[0].decode.cost_us: 300.0 -> 600.0");
    assert_string_equal(later->break_revision, "r2");
    char out[300];
    snprintf(out, sizeof(out), "%s/show.txt", dir);
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    pb_history_print(f, &loaded);
    fclose(f);
    pb_history_free(&loaded);
    char *text = pb_test_read_file(out, NULL, true);
    pb_test_assert_contains(text, (const char *const[]){"BREAK in the series: from "
                                                        "2026-11-03T00:00:00Z on",
                                                        "(newest run: revision r2)",
                                                        "what changed: pipeline[0].decode.cost_us: "
                                                        "300.0 -> 600.0",
                                                        NULL});
    free(text);
    unlink(out);
    /* The same cost again, measured in more repeats (how often, not what):
     * the same series, now slower, a step. */
    add_run_repeats(db, "2026-11-05T00:00:00Z", 400, 10, 600, 8, "r5");
    add_run_repeats(db, "2026-11-06T00:00:00Z", 401, 10, 600, 8, "r6");
    assert_int_equal(pb_history_show(db, "ci", "samples_per_s", 5, msg, sizeof(msg)), 1);
    unlink(db);
    rmdir(dir);
}

/* A database from before fingerprints gets the column; its old rows form
 * a series of their own, apart from runs added since. */
static void test_old_database_migrated(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], msg[PB_MSG_MAX];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(h,
                     "CREATE TABLE runs (id INTEGER PRIMARY KEY, created TEXT NOT NULL,"
                     " added TEXT NOT NULL, config TEXT NOT NULL, machine TEXT NOT NULL,"
                     " revision TEXT NOT NULL, point TEXT NOT NULL, samples_per_s REAL,"
                     " noise_pct REAL, stall_pct REAL, assembly_p99_ns REAL,"
                     " rss_peak_bytes REAL, source TEXT);"
                     "INSERT INTO runs VALUES (1, '2026-10-01T00:00:00Z', 'x', 'ci', 'Test CPU',"
                     " 'o1', '{}', 2000, 1, 5, 0, 0, '');"
                     "INSERT INTO runs VALUES (2, '2026-10-02T00:00:00Z', 'x', 'ci', 'Test CPU',"
                     " 'o2', '{}', 2001, 1, 5, 0, 0, '');",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(h);
    add_run(db, "2026-11-01T00:00:00Z", 1000, 10, 300, "r1");
    add_run(db, "2026-11-02T00:00:00Z", 1001, 10, 300, "r2");
    fflush(stdout);
    assert_int_equal(pb_history_show(db, "ci", "samples_per_s", 5, msg, sizeof(msg)), 0);
    assert_int_equal(count_rows(db), 4);
    unlink(db);
    rmdir(dir);
}

/* Calls pb_history_show with stdout going to the file out (read back by
 * the caller) and returns what it returned. */
static int show_into(const char *out, const char *db, const char *metric, char *msg,
                     size_t msglen)
{
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    int rc = pb_history_show(db, NULL, metric, 5, msg, msglen);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    return rc;
}

/* The file at path as a string the caller frees. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *text = malloc((size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    text[size] = '\0';
    fclose(f);
    return text;
}

/* A step that comes with the machine's own reference slowing as much is
 * the runner's, said so and not counted; the same step on a steady machine
 * is the code's. */
static void test_machine_step_is_the_runners(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], out[300], msg[PB_MSG_MAX];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    snprintf(out, sizeof(out), "%s/show.txt", dir);
    for (int slower_machine = 1; slower_machine >= 0; slower_machine--) {
        unlink(db);
        for (int i = 0; i < 6; i++) {
            struct pb_result r;
            char created[32], rev[8];
            snprintf(created, sizeof(created), "2026-11-%02dT00:00:00Z", i + 1);
            snprintf(rev, sizeof(rev), "r%d", i);
            one_point_result(&r, created, i < 3 ? 1000 : 800);
            r.points[0].repeats[0].ref_cpu_ns = i < 3 || !slower_machine ? 600e3 : 750e3;
            r.config = json_pack("{s:s}", "name", "ci");
            assert_int_equal(pb_history_add(db, &r, rev, "test", msg, sizeof(msg)), PB_OK);
            pb_result_free(&r);
        }
        int rc = show_into(out, db, "samples_per_s", msg, sizeof(msg));
        char *text = read_text(out);
        if (slower_machine) {
            assert_int_equal(rc, 0);
            assert_non_null(strstr(text, "not counted as a regression"));
            assert_non_null(strstr(text, "machine_ref_ns) moved +25.0% at the same run: a "
                                         "slower runner"));
        } else {
            assert_int_equal(rc, 1);
            assert_non_null(strstr(text, "a REGRESSION (exit 3)"));
            assert_non_null(strstr(text, "moved +0.0% at the same run: the runner did not "
                                         "slow down"));
        }
        free(text);
    }
    unlink(out);
    unlink(db);
    rmdir(dir);
}

/* A series of 10,006 runs whose newest 6 are 30% slower: show reads the
 * newest 4096, finds the step (a regression) and says it shows only the
 * newest of a longer series. The runs are copies of one added run, made in
 * one transaction. */
static void test_long_series_shows_newest_runs(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], out[256], msg[PB_MSG_MAX];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    snprintf(out, sizeof(out), "%s/show.txt", dir);
    add_run(db, "2026-01-01T00:00:00Z", 1000, 10, 300, "r0");
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(h,
                     "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k"
                     " WHERE n < 10005)"
                     " INSERT INTO runs (created, added, config, machine, revision, point,"
                     " samples_per_s, stall_pct, identity, fingerprint)"
                     " SELECT strftime('%Y-%m-%dT%H:%M:%SZ', created, '+' || n || ' minutes'),"
                     " added, config, machine, 'g' || n, point,"
                     " CASE WHEN n > 9999 THEN 700 ELSE 1000 + n % 7 END, stall_pct,"
                     " 'gen' || n, fingerprint FROM k, (SELECT * FROM runs WHERE id = 1)",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(h);
    assert_int_equal(count_rows(db), 10006);
    assert_int_equal(show_into(out, db, "samples_per_s", msg, sizeof(msg)), 1);
    char *text = read_text(out);
    assert_non_null(strstr(text, "the newest 4096 of its 10006 runs"));
    assert_non_null(strstr(text, "(revision g10000) the median moved -30."));
    assert_non_null(strstr(text, "a REGRESSION (exit 3)"));
    free(text);
    unlink(out);
    unlink(db);
    rmdir(dir);
}

/* Writes one_point_result into dir/file after how(), which makes it
 * partial in one way; returns the path in path. */
static void write_partial(const char *dir, const char *file, int how, char *path, size_t pathlen)
{
    struct pb_result r;
    char msg[PB_MSG_MAX];
    one_point_result(&r, "2026-11-01T00:00:00Z", 38084);
    struct pb_point_result *p = &r.points[0];
    if (how == 0) /* run.on_error: fail keeps the repeat the failure cut short */
        snprintf(p->error, sizeof(p->error), "data/s_29.bin: sample marked corrupt");
    if (how == 1) { /* Ctrl-C in the only repeat */
        r.interrupted = true;
        p->repeats[0].interrupted = true;
    }
    if (how == 2) /* a repeat cut short, the result not marked */
        p->repeats[0].interrupted = true;
    if (how == 3) { /* a point never measured */
        free(p->repeats);
        p->repeats = NULL;
        p->repeat_count = 0;
    }
    snprintf(path, pathlen, "%s/%s", dir, file);
    assert_int_equal(pb_result_write(&r, path, msg, sizeof(msg)), PB_OK);
    pb_result_free(&r);
}

/* history add refuses a result whose figures are partial, saying why and
 * how to add it anyway; --force adds it. */
static void test_add_refuses_partial_results(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], file[300], msg[PB_MSG_MAX * 2], summary[PB_MSG_MAX * 2];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    static const char *const why[] = {
        ("not added: point 0 failed (data/s_29.bin: sample marked corrupt), so its figures are "
         "partial"),
        "not added: the run was interrupted", "not added: a repeat of point 0 was cut short",
        "not added: point 0 has no complete repeat"};
    for (int how = 0; how < 4; how++) {
        write_partial(dir, "p.json", how, file, sizeof(file));
        msg[0] = '\0';
        assert_int_equal(pb_history_add_file(db, file, "r1", false, summary, sizeof(summary), msg,
                                             sizeof(msg)),
                         PB_ERR);
        if (!strstr(msg, why[how]) || !strstr(msg, "add it anyway with --force"))
            fail_msg("case %d: %s", how, msg);
        assert_int_equal(access(db, F_OK), -1); /* nothing written */
    }
    write_partial(dir, "p.json", 0, file, sizeof(file));
    assert_int_equal(
        pb_history_add_file(db, file, "r1", true, summary, sizeof(summary), msg, sizeof(msg)),
        PB_OK);
    assert_non_null(strstr(summary, "added 1 point(s) of ci"));
    assert_int_equal(count_rows(db), 1);
    unlink(file);
    unlink(db);
    rmdir(dir);
}

/* Adds night i of a nightly series: samples/s, other processes' CPU and
 * the process's CPU (100 = one core), under revision ri. */
static void add_night(const char *db, int i, double samples_per_s, double other_cpu,
                      double cpu_util)
{
    struct pb_result r;
    char created[32], rev[8], msg[PB_MSG_MAX];
    snprintf(created, sizeof(created), "2026-11-%02dT03:00:00Z", i + 1);
    snprintf(rev, sizeof(rev), "r%d", i);
    one_point_result(&r, created, samples_per_s);
    r.points[0].other_cpu_pct = other_cpu;
    r.points[0].cpu_util_pct = cpu_util;
    r.config = json_pack("{s:s}", "name", "ci");
    assert_int_equal(pb_history_add(db, &r, rev, "test", msg, sizeof(msg)), PB_OK);
    pb_result_free(&r);
}

/* Nights on a runner that turns busy from night 3 (other processes at
 * 40%): samples/s drops a third, a step that is the machine's, withheld.
 * From night 5 the code costs 20% more CPU per sample: the gate catches
 * it by CPU per sample, which other processes barely move. */
static void test_busy_nights_gate_on_cpu_time(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], out[300], msg[PB_MSG_MAX];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    snprintf(out, sizeof(out), "%s/show.txt", dir);
    for (int i = 0; i < 8; i++) {
        double sps = i < 3 ? 2000 : i < 5 ? 1330 : 1110;
        double cpu_per_sample_s = (i < 5 ? 500e-6 : 600e-6) * (1 + 0.01 * (i % 2));
        add_night(db, i, sps + i, i < 3 ? 1 : 40, 100 * sps * cpu_per_sample_s);
    }
    int rc = show_into(out, db, "samples_per_s", msg, sizeof(msg));
    char *text = read_text(out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(text, "not counted: other processes shared the machine"));
    assert_non_null(strstr(text, "other processes took 1% of the machine's CPU over the runs "
                                 "before it and 40% from it"));
    assert_non_null(strstr(text, "1 step(s) withheld (other processes)"));
    free(text);

    FILE *f = fopen(out, "w");
    assert_non_null(f);
    int suspects;
    assert_int_equal(pb_history_gate(f, db, "ci", 5, &suspects, msg, sizeof(msg)), 1);
    fclose(f);
    text = read_text(out);
    assert_non_null(strstr(text, "cpu_ns_per_sample"));
    assert_non_null(strstr(text, "from revision r5: a REGRESSION"));
    assert_non_null(strstr(text, "stall_pct          no step and no suspect run in 1 series"));
    assert_non_null(strstr(text, "a regression step: history show exits 3"));
    free(text);
    unlink(out);
    unlink(db);
    rmdir(dir);
}

/* Stall is a share of time: its steps are in percentage points, so 0.5%
 * against 0.8% is no 60% step, and 10% against 20% is a 10-point one. */
static void test_stall_steps_in_points(void **state)
{
    (void)state;
    const double small[] = {0.5, 0.4, 0.5, 0.8, 0.9, 0.8};
    double change;
    assert_true(pb_history_step(small, 6, 5, &change) >= 0); /* a "step" of +60% */
    assert_int_equal(pb_history_step_pp(small, 6, 5, &change), -1);
    const double big[] = {10, 10, 11, 20, 21};
    assert_int_equal(pb_history_step_pp(big, 5, 5, &change), 3);
    assert_true(change > 9.9 && change < 11.1);
    /* A run without the figure (NaN) is left out, not a break. */
    const double gap[] = {10, NAN, 10, 20, NAN, 21};
    assert_int_equal(pb_history_step_pp(gap, 6, 5, &change), 3);
}

/* The run-to-run spread of a series: from consecutive runs, in % of the
 * median; unknown below PB_SPREAD_MIN_RUNS runs or without a database. */
static void test_run_spread(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    double spread[PB_METRIC_COUNT];
    int runs;
    struct pb_result r;
    one_point_result(&r, "2026-12-01T00:00:00Z", 1000);
    r.config = json_pack("{s:s}", "name", "ci");
    assert_int_equal(pb_history_run_spread(db, &r, 0, spread, &runs), PB_OK);
    assert_int_equal(runs, 0);
    assert_true(isnan(spread[0]));
    /* Runs alternating 1000 +- 20: consecutive runs differ by 40, 4% of the
     * median, which is sqrt(2) 0.6745 sigma: sigma = 4.19%. */
    for (int i = 0; i < 10; i++)
        add_night(db, i, i % 2 ? 1020 : 980, 0, 50);
    assert_int_equal(pb_history_run_spread(db, &r, 0, spread, &runs), PB_OK);
    assert_int_equal(runs, 10);
    const struct pb_metric *sps = pb_metric_find("samples_per_s");
    assert_true(fabs(spread[sps - pb_metrics] - 4.0 / (0.6745 * M_SQRT2)) < 0.01);
    /* Another point of the config has no runs. */
    r.points[0].axes = json_pack("{s:i}", "loader.workers", 2);
    assert_int_equal(pb_history_run_spread(db, &r, 0, spread, &runs), PB_OK);
    assert_int_equal(runs, 0);
    pb_result_free(&r);
    unlink(db);
    rmdir(dir);
}

/* Each run keeps its stages' CPU time per sample: history show --metric
 * cpu_ns_per_sample.decode follows one stage and finds its step, which the
 * pipeline's total shows diluted. */
static void test_stage_cpu_series(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], out[300], msg[PB_MSG_MAX];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    snprintf(out, sizeof(out), "%s/show.txt", dir);
    for (int i = 0; i < 6; i++) {
        struct pb_result r;
        char created[32], rev[8];
        snprintf(created, sizeof(created), "2026-11-%02dT03:00:00Z", i + 1);
        snprintf(rev, sizeof(rev), "r%d", i);
        one_point_result(&r, created, 1000);
        struct pb_point_result *p = &r.points[0];
        p->samples = 1000;
        p->stages = calloc(2, sizeof(*p->stages));
        assert_non_null(p->stages);
        p->stage_count = 2;
        snprintf(p->stages[0].name, sizeof(p->stages[0].name), "decode");
        snprintf(p->stages[1].name, sizeof(p->stages[1].name), "resize");
        p->stages[0].hist.count = p->stages[1].hist.count = 1000;
        p->stages[0].cpu_ns = (uint64_t)(1000 * (i < 3 ? 100e3 : 125e3));
        p->stages[1].cpu_ns = (uint64_t)(1000 * 600e3);
        r.config = json_pack("{s:s}", "name", "ci");
        assert_int_equal(pb_history_add(db, &r, rev, "test", msg, sizeof(msg)), PB_OK);
        pb_result_free(&r);
    }
    int rc = show_into(out, db, "cpu_ns_per_sample.decode", msg, sizeof(msg));
    char *text = read_text(out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(text, "the median moved +25.0%"));
    free(text);
    /* The pipeline's total moves 3.6%: under the threshold, no step. */
    assert_int_equal(show_into(out, db, "cpu_ns_per_sample", msg, sizeof(msg)), 0);
    /* A stage no run has would show nothing: refused, with the stages the
     * runs have; a bare prefix is no metric. */
    assert_int_equal(show_into(out, db, "cpu_ns_per_sample.flip", msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    pb_test_assert_contains(msg, (const char *const[]){"no run of the history has a stage 'flip'",
                                                       "decode, resize", "samples_per_s", NULL});
    assert_int_equal(pb_history_show(db, NULL, "cpu_ns_per_sample.", 5, msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "cpu_ns_per_sample.STAGE"));
    unlink(out);
    unlink(db);
    rmdir(dir);
}

/* Night i of a config whose Dataset gained a GaussianBlur from night
 * blur_from on: decode 300 us and resize 40 us a sample, then blur 340 us,
 * which halves samples/s. */
static void add_blur_night(const char *db, int i, int blur_from)
{
    struct pb_result r;
    char created[32], rev[8], msg[PB_MSG_MAX];
    snprintf(created, sizeof(created), "2026-11-%02dT03:00:00Z", i + 1);
    snprintf(rev, sizeof(rev), "r%d", i);
    bool blur = i >= blur_from;
    double jitter = 1 + 0.004 * (double)(i % 3);
    one_point_result(&r, created, (blur ? 500 : 1000) * jitter);
    struct pb_point_result *p = &r.points[0];
    p->samples = 1000;
    p->stage_count = blur ? 3 : 2;
    p->stages = calloc(3, sizeof(*p->stages));
    assert_non_null(p->stages);
    static const char *const names[] = {"decode", "resize", "GaussianBlur"};
    static const double cost_us[] = {300, 40, 340};
    for (size_t s = 0; s < p->stage_count; s++) {
        snprintf(p->stages[s].name, sizeof(p->stages[s].name), "%s", names[s]);
        p->stages[s].hist.count = 1000;
        p->stages[s].cpu_ns = (uint64_t)(1000 * cost_us[s] * 1e3 * jitter);
    }
    r.config = json_pack("{s:s, s:{s:s}}", "name", "ci", "loader", "engine", "torch");
    assert_int_equal(pb_history_add(db, &r, rev, "test", msg, sizeof(msg)), PB_OK);
    pb_result_free(&r);
}

/* The first night a stage doubles the CPU per sample is suspect at once,
 * naming the new stage; the second makes the step, naming it too; the
 * stage's own series says it was absent before, never nan. */
static void test_bad_night_suspect_then_step(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], out[300], msg[PB_MSG_MAX * 2];
    snprintf(db, sizeof(db), "%s/h.db", dir);
    snprintf(out, sizeof(out), "%s/show.txt", dir);
    for (int i = 0; i < 4; i++)
        add_blur_night(db, i, 3);
    struct pb_history h;
    assert_int_equal(pb_history_load(db, NULL, "cpu_ns_per_sample", 5, &h, msg, sizeof(msg)),
                     PB_OK);
    const struct pb_history_series *s = &h.series[0];
    assert_int_equal(s->step, -1);
    assert_true(s->suspect);
    assert_int_equal(h.suspects, 1);
    assert_string_equal(s->engine, "torch");
    assert_true(s->explained_count >= 1);
    assert_string_equal(s->explained[0].stage, "GaussianBlur");
    assert_true(s->explained[0].absent_before);
    assert_int_equal(s->explained[0].first_run, 3);
    pb_history_free(&h);
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    int suspects;
    assert_int_equal(pb_history_gate(f, db, NULL, 5, &suspects, msg, sizeof(msg)), 0);
    fclose(f);
    assert_int_equal(suspects, 2); /* samples/s and CPU per sample */
    char *text = read_text(out);
    pb_test_assert_contains(text, (const char *const[]){"SUSPECT newest run (revision r3)",
                                                        "GaussianBlur new (absent before run 4)",
                                                        "history show exits 5", NULL});
    free(text);
    assert_int_equal(show_into(out, db, "cpu_ns_per_sample", msg, sizeof(msg)), 0);
    text = read_text(out);
    pb_test_assert_contains(text, (const char *const[]){"engine torch", "<- suspect",
                                                        "SUSPECT: the newest run", NULL});
    free(text);
    add_blur_night(db, 4, 3);
    assert_int_equal(show_into(out, db, "cpu_ns_per_sample", msg, sizeof(msg)), 1);
    text = read_text(out);
    pb_test_assert_contains(text, (const char *const[]){"STEP CHANGE", "a REGRESSION",
                                                        "GaussianBlur new (absent before run 4)",
                                                        NULL});
    assert_null(strstr(text, "SUSPECT"));
    free(text);
    assert_int_equal(show_into(out, db, "cpu_ns_per_sample.GaussianBlur", msg, sizeof(msg)), 0);
    text = read_text(out);
    pb_test_assert_contains(text, (const char *const[]){"absent", "absent before run 4", NULL});
    assert_null(strstr(text, "nan"));
    free(text);
    unlink(out);
    unlink(db);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_detection),
        cmocka_unit_test(test_add_and_show),
        cmocka_unit_test(test_add_to_read_only_database),
        cmocka_unit_test(test_add_twice_keeps_one_row),
        cmocka_unit_test(test_only_regression_steps_count),
        cmocka_unit_test(test_machine_step_is_the_runners),
        cmocka_unit_test(test_busy_nights_gate_on_cpu_time),
        cmocka_unit_test(test_stall_steps_in_points),
        cmocka_unit_test(test_run_spread),
        cmocka_unit_test(test_stage_cpu_series),
        cmocka_unit_test(test_bad_night_suspect_then_step),
        cmocka_unit_test(test_series_keyed_by_what_was_measured),
        cmocka_unit_test(test_old_database_migrated),
        cmocka_unit_test(test_long_series_shows_newest_runs),
        cmocka_unit_test(test_add_refuses_partial_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
