/* pipelines/generate: the size range every generator reads, the seeded
 * corrupt-file pick, the random-bytes generator writing a whole folder
 * or none, generation stopped by the stop flag leaving no temporary
 * folder, and stale temporary folders of dead processes removed. JPEG and
 * video generation are tested with their decoders
 * (test_jpeg, test_video). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "pipelines/generate.h"
#include "tests/testutil.h"

static void test_size_range(void **state)
{
    (void)state;
    int a, b, c, d;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_parse_size_range("640x480", &a, &b, &c, &d, msg, sizeof(msg)), PB_OK);
    assert_true(a == 640 && b == 480 && c == 640 && d == 480);
    assert_int_equal(pb_parse_size_range("400x300-600x450", &a, &b, &c, &d, msg, sizeof(msg)),
                     PB_OK);
    assert_true(a == 400 && b == 300 && c == 600 && d == 450);

    assert_int_equal(pb_parse_size_range("640", &a, &b, &c, &d, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_string_equal(msg, "size must be WxH or WxH-WxH, got '640'");
    assert_int_equal(pb_parse_size_range("64x48 ", &a, &b, &c, &d, msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    static const char *const out_of_range[] = {"0x10", "10x0", "600x450-400x300", "20000x10"};
    for (size_t i = 0; i < PB_ARRAY_LEN(out_of_range); i++) {
        assert_int_equal(pb_parse_size_range(out_of_range[i], &a, &b, &c, &d, msg, sizeof(msg)),
                         PB_ERR_CONFIG);
        assert_non_null(strstr(msg, "must have sides between 1 and 16384"));
    }
}

static void test_corrupt_pick(void **state)
{
    (void)state;
    struct pb_generate_spec spec = {.seed = 5, .corrupt_fraction = 0};
    for (int64_t i = 0; i < 1000; i++)
        assert_false(pb_generate_is_corrupt(&spec, i));
    spec.corrupt_fraction = 0.25;
    int picked = 0;
    for (int64_t i = 0; i < 20000; i++) {
        bool corrupt = pb_generate_is_corrupt(&spec, i);
        assert_int_equal(corrupt, pb_generate_is_corrupt(&spec, i)); /* seeded */
        picked += corrupt;
    }
    /* A quarter, within a few standard deviations (about 61 files). */
    assert_in_range(picked, 5000 - 300, 5000 + 300);
    spec.corrupt_fraction = 1;
    assert_true(pb_generate_is_corrupt(&spec, 7));
}

static size_t count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(d);
    return n;
}

static void test_generate_files(void **state)
{
    (void)state;
    struct pb_generate_spec spec = {.kind = PB_GENERATE_FILES,
                                    .count = 40,
                                    .size_bytes = 999,
                                    .seed = 11,
                                    .corrupt_fraction = 0.3};
    char workdir[] = "/tmp/pbench-generate-XXXXXX";
    assert_int_equal(pb_test_tmpdir_make(workdir), 0);
    char dir[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/deep/er/data", workdir);
    assert_int_equal(pb_dataset_generate(&spec, dir, msg, sizeof(msg)), PB_OK);
    assert_int_equal(count_entries(dir, "sample_"), 40);
    char parent[PB_PATH_MAX];
    snprintf(parent, sizeof(parent), "%s/deep/er", workdir);
    assert_int_equal(count_entries(parent, "data.tmp-"), 0); /* renamed into place */
    for (int64_t i = 0; i < spec.count; i++) {
        char path[PB_PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/sample_%07lld.bin", dir, (long long)i);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_size, pb_generate_is_corrupt(&spec, i) ? 999 / 3 : 999);
    }

    /* A folder that cannot be made: an error naming it, and nothing left. */
    char blocker[PB_PATH_MAX];
    snprintf(blocker, sizeof(blocker), "%s/file", workdir);
    pb_test_write_file(blocker, "", 0);
    snprintf(dir, sizeof(dir), "%s/file/data", workdir);
    assert_int_equal(pb_dataset_generate(&spec, dir, msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, "cannot create"));

    assert_int_equal(pb_test_tmpdir_remove(workdir), 0);
}

/* Raises *stop once the temporary folder holds some files, as a signal
 * handler would in the middle of a generation. */
struct stop_watch {
    char parent[PB_PATH_MAX];
    char tmp[PB_PATH_MAX + 32];
    volatile sig_atomic_t stop;
    size_t files_seen;
};

static void *raise_stop_after_files(void *arg)
{
    struct stop_watch *w = arg;
    for (int i = 0; i < 20000 && !w->stop; i++) {
        w->files_seen = count_entries(w->tmp, "sample_");
        if (w->files_seen >= 5)
            w->stop = SIGTERM;
        else
            usleep(200);
    }
    return NULL;
}

static void test_generation_stops_and_cleans_up(void **state)
{
    (void)state;
    char workdir[] = "/tmp/pbench-generate-XXXXXX";
    assert_int_equal(pb_test_tmpdir_make(workdir), 0);
    char dir[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/data", workdir);
    /* Far more files than can be written before the watcher sees five. */
    struct pb_generate_spec spec = {
        .kind = PB_GENERATE_FILES, .count = 200000, .size_bytes = 64, .seed = 3};
    struct stop_watch w = {0};
    snprintf(w.parent, sizeof(w.parent), "%s", workdir);
    snprintf(w.tmp, sizeof(w.tmp), "%s.tmp-%d", dir, (int)getpid());
    pthread_t watcher;
    assert_int_equal(pthread_create(&watcher, NULL, raise_stop_after_files, &w), 0);
    int rc = pb_dataset_generate_stoppable(&spec, dir, &w.stop, msg, sizeof(msg));
    pthread_join(watcher, NULL);
    assert_int_equal(rc, PB_ERR_INTERRUPTED);
    assert_true(w.files_seen >= 5);
    assert_non_null(strstr(msg, "interrupted while generating"));
    assert_int_equal(count_entries(workdir, "data"), 0); /* neither data nor data.tmp-PID */

    /* Every generator checks the flag, JPEG and video too. */
    volatile sig_atomic_t raised = SIGINT;
    spec =
        (struct pb_generate_spec){.kind = PB_GENERATE_JPEG, .count = 8, .seed = 1, .quality = 90};
    snprintf(spec.size, sizeof(spec.size), "32x32");
    assert_int_equal(pb_dataset_generate_stoppable(&spec, dir, &raised, msg, sizeof(msg)),
                     PB_ERR_INTERRUPTED);
    spec.kind = PB_GENERATE_VIDEO;
    spec.frames = 4;
    spec.fps = 25;
    spec.gop = 4;
    snprintf(spec.codec, sizeof(spec.codec), "mpeg4");
    assert_int_equal(pb_dataset_generate_stoppable(&spec, dir, &raised, msg, sizeof(msg)),
                     PB_ERR_INTERRUPTED);
    assert_int_equal(count_entries(workdir, "data"), 0);
    assert_int_equal(pb_test_tmpdir_remove(workdir), 0);
}

static void test_stale_temp_folders_removed(void **state)
{
    (void)state;
    char workdir[] = "/tmp/pbench-generate-XXXXXX";
    assert_int_equal(pb_test_tmpdir_make(workdir), 0);
    /* The id of a process that has ended and been reaped. */
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    char stale[PB_PATH_MAX], live[PB_PATH_MAX], other[PB_PATH_MAX], file[PB_PATH_MAX + 16];
    snprintf(stale, sizeof(stale), "%s/data.tmp-%d", workdir, (int)dead);
    snprintf(live, sizeof(live), "%s/data.tmp-%d", workdir, (int)getppid());
    snprintf(other, sizeof(other), "%s/other.tmp-%d", workdir, (int)dead);
    const char *const made[] = {stale, live, other};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(mkdir(made[i], 0755), 0);
        snprintf(file, sizeof(file), "%s/sample_0000000.bin", made[i]);
        pb_test_write_file(file, "half", 4);
    }
    char dir[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/data", workdir);
    struct pb_generate_spec spec = {.kind = PB_GENERATE_FILES, .count = 4, .size_bytes = 16};
    assert_int_equal(pb_dataset_generate(&spec, dir, msg, sizeof(msg)), PB_OK);
    struct stat st;
    assert_int_equal(stat(stale, &st), -1); /* its process is gone */
    assert_int_equal(stat(live, &st), 0);   /* its process may still be writing */
    assert_int_equal(stat(other, &st), 0);  /* another dataset's folder */
    assert_int_equal(count_entries(dir, "sample_"), 4);
    assert_int_equal(pb_test_tmpdir_remove(workdir), 0);
}

/* A generated folder holds its stamp: the same spec agrees with it, a
 * changed one is refused with the settings that differ and the fix, and a
 * folder without a stamp (made by hand, or before stamps) is accepted. */
static void test_stamp_records_the_spec(void **state)
{
    (void)state;
    char workdir[] = "/tmp/pbench-generate-XXXXXX";
    assert_int_equal(pb_test_tmpdir_make(workdir), 0);
    char dir[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/data", workdir);
    struct pb_generate_spec spec = {.kind = PB_GENERATE_FILES, .count = 6, .size_bytes = 64,
                                    .seed = 3};
    assert_int_equal(pb_dataset_generate(&spec, dir, msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_generate_stamp_check(&spec, dir, msg, sizeof(msg)), PB_OK);
    struct pb_generate_spec changed = spec;
    changed.count = 9;
    changed.size_bytes = 128;
    assert_int_equal(pb_generate_stamp_check(&changed, dir, msg, sizeof(msg)), PB_ERR_CONFIG);
    pb_test_assert_contains(msg, (const char *const[]){
                                     "count: 6 in the folder, 9 in the config",
                                     "size_bytes: 64 in the folder, 128 in the config",
                                     "remove the folder", "dataset.path elsewhere", NULL});
    assert_null(strstr(msg, "seed"));
    char hand[PB_PATH_MAX], file[PB_PATH_MAX + 16];
    snprintf(hand, sizeof(hand), "%s/by-hand", workdir);
    assert_int_equal(mkdir(hand, 0755), 0);
    snprintf(file, sizeof(file), "%s/a.bin", hand);
    pb_test_write_file(file, "abc", 3);
    assert_int_equal(pb_generate_stamp_check(&changed, hand, msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_test_tmpdir_remove(workdir), 0);
}

/* Three processes generating one folder at once all succeed: the first
 * rename wins, the others use its data (its stamp matching) and remove
 * their own; no temporary folder is left. */
static void test_parallel_generation_all_succeed(void **state)
{
    (void)state;
    char workdir[] = "/tmp/pbench-generate-XXXXXX";
    assert_int_equal(pb_test_tmpdir_make(workdir), 0);
    char dir[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/data", workdir);
    struct pb_generate_spec spec = {.kind = PB_GENERATE_FILES, .count = 200, .size_bytes = 512};
    pid_t kids[3];
    for (int i = 0; i < 3; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0)
            _exit(pb_dataset_generate(&spec, dir, msg, sizeof(msg)) == PB_OK ? 0 : 1);
    }
    int ok = 0;
    for (int i = 0; i < 3; i++) {
        int status;
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    assert_int_equal(ok, 3);
    assert_int_equal(count_entries(dir, "sample_"), 200);
    assert_int_equal(count_entries(workdir, "data.tmp-"), 0);
    /* A later run with the same spec finds the folder done. */
    assert_int_equal(pb_dataset_generate(&spec, dir, msg, sizeof(msg)), PB_OK);
    assert_int_equal(count_entries(dir, "sample_"), 200);
    assert_int_equal(pb_test_tmpdir_remove(workdir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_range),
        cmocka_unit_test(test_corrupt_pick),
        cmocka_unit_test(test_generate_files),
        cmocka_unit_test(test_generation_stops_and_cleans_up),
        cmocka_unit_test(test_stale_temp_folders_removed),
        cmocka_unit_test(test_stamp_records_the_spec),
        cmocka_unit_test(test_parallel_generation_all_succeed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
