/* Tests of the storage measurements (pipelines/storage.c): page-cache
 * residency after an eviction and after a warm read, the read stage's cold
 * mode evicting what it read, sampling of large datasets, and the cold
 * read ceiling. They need a file system that can evict clean pages; where
 * the build folder's cannot (tmpfs, some overlays) the program says so and
 * exits 77 (skipped). */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"

#include "bench/run/storage_run.h"
#include "pipelines/dataset.h"
#include "pipelines/stage.h"
#include "pipelines/storage.h"

/* In the folder ctest runs in (the build folder), whose file system is
 * the one checked. */
static char root[] = "pbench-test-storage-XXXXXX";
#define FILES 6
#define FILE_BYTES (1u << 20)

static void write_files(const char *dir, int count, size_t bytes)
{
    assert_int_equal(mkdir(dir, 0755), 0);
    uint8_t *data = malloc(bytes);
    assert_non_null(data);
    uint64_t rnd = 1;
    for (size_t i = 0; i < bytes; i++)
        data[i] = (uint8_t)pb_test_rnd(&rnd);
    for (int i = 0; i < count; i++) {
        char path[PB_PATH_MAX];
        snprintf(path, sizeof(path), "%s/f%05d.bin", dir, i);
        data[0] = (uint8_t)i;
        pb_test_write_file(path, data, bytes);
    }
    free(data);
}

static void open_dir(const char *sub, struct pb_dataset *ds)
{
    struct pb_dataset_spec spec = {.shard = {0, 1}};
    snprintf(spec.path, sizeof(spec.path), "%s/%s", root, sub);
    char msg[PB_MSG_MAX];
    if (pb_dataset_open(&spec, ds, msg, sizeof(msg)) != PB_OK)
        fail_msg("%s", msg);
}

static double resident_pct(const struct pb_dataset *ds)
{
    struct pb_residency r;
    assert_int_equal(pb_residency_measure(ds, &r), PB_OK);
    assert_int_equal(r.files_failed, 0);
    return r.resident_pct;
}

static void read_all(const struct pb_dataset *ds)
{
    for (size_t i = 0; i < ds->count; i++) {
        size_t len;
        free(pb_test_read_file(ds->paths[i], &len, true));
        assert_int_equal(len, ds->sizes[i]);
    }
}

static void test_residency_after_eviction_and_read(void **state)
{
    (void)state;
    struct pb_dataset ds;
    open_dir("data", &ds);
    assert_int_equal(pb_storage_evict(&ds), 0);
    double cold = resident_pct(&ds);
    assert_true(cold < 5.0);
    read_all(&ds);
    double warm = resident_pct(&ds);
    assert_true(warm > 90.0);
    /* What a repeat's start does: cold evicts, warm leaves the cache be. */
    struct pb_residency r;
    pb_storage_before_repeat(&ds, PB_CACHE_WARM, &r);
    assert_int_equal(r.files_checked, FILES);
    assert_int_equal(r.files_total, FILES);
    assert_int_equal(r.bytes_checked, (uint64_t)FILES * FILE_BYTES);
    assert_true(r.resident_pct > 90.0);
    pb_storage_before_repeat(&ds, PB_CACHE_COLD, &r);
    assert_true(r.resident_pct < 5.0);
    pb_dataset_free(&ds);
}

/* A warm repeat right after a cold one: the repeat's start reads the
 * dataset in (it fits in memory) and says so, so it reads from memory. */
static void test_warm_means_warm(void **state)
{
    (void)state;
    struct pb_dataset ds;
    open_dir("data", &ds);
    assert_int_equal(pb_storage_evict(&ds), 0);
    assert_true(resident_pct(&ds) < 5.0);
    struct pb_spec spec;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_spec_init(&spec, "", msg, sizeof msg), PB_OK);
    spec.dataset.cache = PB_CACHE_WARM;
    struct pb_point_result point = {0};
    struct pb_repeat_result rep = {0};
    pb_storage_repeat_start(&spec, &ds, &point, &rep);
    assert_true(rep.page_cache_resident_pct > 90.0);
    assert_int_equal(point.warning_count, 1);
    assert_non_null(strstr(point.warnings[0], "dataset.cache: warm: 0% of the dataset"));
    /* Already warm: nothing to read, nothing said. */
    struct pb_point_result again = {0};
    pb_storage_repeat_start(&spec, &ds, &again, &rep);
    assert_int_equal(again.warning_count, 0);
    pb_spec_free(&spec);
    pb_dataset_free(&ds);
}

/* The read stage under cold drops each file after reading it; under warm
 * the file stays cached. */
static void test_read_stage_cold_evicts(void **state)
{
    (void)state;
    struct pb_dataset ds;
    open_dir("data", &ds);
    const struct pb_stage_ops *read = pb_stage_find("read");
    uint8_t *buf = malloc(ds.max_bytes);
    assert_non_null(buf);
    for (int cache = PB_CACHE_WARM; cache <= PB_CACHE_DIRECT; cache++) {
        pb_storage_evict(&ds);
        struct {
            int64_t block_kib;
        } opts = {64};
        struct pb_stage_plan in = {.max_bytes = ds.max_bytes, .cache = cache}, out;
        void *st = NULL;
        char msg[PB_MSG_MAX] = "";
        assert_int_equal(read->init(&st, &opts, &in, &out, NULL, NULL, msg, sizeof(msg)), PB_OK);
        for (size_t i = 0; i < ds.count; i++) {
            struct pb_sample s = {.index = i,
                                  .path = ds.paths[i],
                                  .file_bytes = ds.sizes[i],
                                  .out = buf,
                                  .out_capacity = ds.max_bytes,
                                  .msg = msg,
                                  .msglen = sizeof(msg)};
            assert_int_equal(read->process(st, &s), PB_OK);
            assert_int_equal(s.out_bytes, ds.sizes[i]);
            assert_int_equal(buf[0], (uint8_t)i);
        }
        read->cleanup(st);
        double pct = resident_pct(&ds);
        if (cache == PB_CACHE_WARM)
            assert_true(pct > 90.0);
        else
            assert_true(pct < 5.0);
    }
    free(buf);
    pb_dataset_free(&ds);
}

/* Out of file descriptors is the machine's limit, not a bad file: the
 * read stage ends the run (PB_ERR) and names the limit, where a missing
 * file is a bad sample (PB_ERR_DATA). */
static void test_read_stage_out_of_descriptors(void **state)
{
    (void)state;
    struct pb_dataset ds;
    open_dir("data", &ds);
    const struct pb_stage_ops *read = pb_stage_find("read");
    uint8_t *buf = malloc(ds.max_bytes);
    assert_non_null(buf);
    struct {
        int64_t block_kib;
    } opts = {64};
    struct pb_stage_plan in = {.max_bytes = ds.max_bytes, .cache = PB_CACHE_WARM}, out;
    void *st = NULL;
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(read->init(&st, &opts, &in, &out, NULL, NULL, msg, sizeof(msg)), PB_OK);
    struct pb_sample s = {.path = ds.paths[0], .file_bytes = ds.sizes[0], .out = buf,
                          .out_capacity = ds.max_bytes, .msg = msg, .msglen = sizeof(msg)};
    struct pb_sample missing = s;
    missing.path = "no/such/file.bin";
    assert_int_equal(read->process(st, &missing), PB_ERR_DATA);

    /* Take every descriptor the limit leaves, then read. */
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    struct rlimit low = {64, old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fds[64], taken = 0;
    while (taken < 64 && (fds[taken] = open("/dev/null", O_RDONLY)) >= 0)
        taken++;
    int rc = read->process(st, &s);
    while (taken > 0)
        close(fds[--taken]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(rc, PB_ERR);
    pb_test_assert_contains(msg, (const char *const[]){"cannot open more files", "ulimit -n",
                                                       NULL});
    read->cleanup(st);
    free(buf);
    pb_dataset_free(&ds);
}

/* A dataset file swapped for a FIFO after indexing (nobody writes it)
 * must not block the residency check or the eviction in the loop's
 * thread, which no watchdog covers: they count it as failed and go on. */
static void test_fifo_does_not_block_the_cache_step(void **state)
{
    (void)state;
    char dir[PB_PATH_MAX], path[PB_PATH_MAX * 2];
    snprintf(dir, sizeof(dir), "%s/fifo", root);
    write_files(dir, 4, 4096);
    struct pb_dataset ds;
    open_dir("fifo", &ds);
    snprintf(path, sizeof(path), "%s", ds.paths[1]);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(20); /* a blocked open ends the child by SIGALRM */
        struct pb_residency r;
        pb_residency_measure(&ds, &r);
        pb_storage_evict(&ds);
        _exit(r.files_failed == 1 && r.files_checked == 3 ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    pb_dataset_free(&ds);
}

/* More files than one measurement checks: a spread sample, said so. */
static void test_large_dataset_is_sampled(void **state)
{
    (void)state;
    char dir[PB_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/many", root);
    write_files(dir, PB_RESIDENCY_MAX_FILES + 100, 64);
    struct pb_dataset ds;
    open_dir("many", &ds);
    struct pb_residency r;
    assert_int_equal(pb_residency_measure(&ds, &r), PB_OK);
    assert_int_equal(r.files_total, PB_RESIDENCY_MAX_FILES + 100);
    assert_true(r.files_checked <= PB_RESIDENCY_MAX_FILES);
    assert_true(r.files_checked >= PB_RESIDENCY_MAX_FILES / 2);
    pb_dataset_free(&ds);
}

/* The storage ceiling reads every byte and leaves the files cached. */
static void test_cold_read_ceiling(void **state)
{
    (void)state;
    struct pb_dataset ds;
    open_dir("data", &ds);
    char msg[PB_MSG_MAX] = "";
    double mb_per_s = pb_storage_cold_read_mb_per_s(&ds, 1u << 20, 0, msg, sizeof(msg));
    assert_true(mb_per_s > 0);
    assert_true(resident_pct(&ds) > 90.0);
    pb_dataset_free(&ds);
}

int main(void)
{
    if (pb_test_tmpdir_make(root) != 0) {
        perror(root);
        return 1;
    }
    char data[PB_PATH_MAX];
    snprintf(data, sizeof(data), "%s/data", root);
    write_files(data, FILES, FILE_BYTES);
    /* Can this file system evict? If not, nothing here can be tested. */
    struct pb_dataset ds;
    open_dir("data", &ds);
    pb_storage_evict(&ds);
    struct pb_residency r;
    int probe = pb_residency_measure(&ds, &r);
    char fs[32];
    pb_storage_fs_name(&ds, fs, sizeof(fs));
    pb_dataset_free(&ds);
    if (probe != PB_OK || r.resident_pct > 50.0) {
        printf("skipped: the file system under %s (%s) %s\n", root, fs,
               probe != PB_OK ? "cannot be measured with mincore"
                              : "keeps pages after posix_fadvise(DONTNEED)");
        pb_test_tmpdir_remove(root);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_residency_after_eviction_and_read),
        cmocka_unit_test(test_warm_means_warm),
        cmocka_unit_test(test_read_stage_cold_evicts),
        cmocka_unit_test(test_read_stage_out_of_descriptors),
        cmocka_unit_test(test_fifo_does_not_block_the_cache_step),
        cmocka_unit_test(test_large_dataset_is_sampled),
        cmocka_unit_test(test_cold_read_ceiling),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pb_test_tmpdir_remove(root);
    return rc;
}
