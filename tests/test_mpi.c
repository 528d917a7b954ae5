/* Multi-rank runs end to end (bench/sys/mpi.h, bench/session/ranks.h): `mpirun -n 2 --oversubscribe`
 * runs the pbench binary on tiny generated data, one epoch per repeat, and
 * the ONE result file holds two ranks whose figures add up to the point's,
 * each rank having read its own shard to the end (so every sample is read
 * by exactly one rank per epoch: the per-rank counts match the shard sizes,
 * the aggregate matches the dataset, and the shards are disjoint and
 * complete). Also: with loader.affinity the ranks split the node's cores
 * and record their CPU sets; a config error on the ranks ends the job with
 * the rank and host named; and a plain run (no mpirun) has no rank list.
 *
 * Skipped (77) when pbench was built without MPI or mpirun is missing.
 * Under AddressSanitizer the ranks get tests/lsan-openmpi.supp: Open MPI
 * keeps its start-up allocations until exit. */
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
#include <unistd.h>

#include "pipelines/dataset.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-mpi-XXXXXX";

#define FILES 61 /* odd: the shards differ by one sample */
#define RANKS 2
#define REPEATS 2

static const char config[] = "name: mpi-tiny\n"
                             "dataset:\n"
                             "  path: data\n"
                             "  generate: {kind: files, count: 61, size_bytes: 512, seed: 3}\n"
                             "  shuffle: true\n"
                             "  seed: 7\n"
                             "  epochs: 1\n"
                             "pipeline:\n"
                             "  - read:\n"
                             "  - decode: {decoder: null, width: 8, height: 8, channels: 3, "
                             "cost_us: 20}\n"
                             "loader: {workers: 1, batch_size: 8, prefetch_factor: 2, "
                             "drop_last: false}\n"
                             "run: {warmup_batches: 0, min_time_s: 30, max_time_s: 60, "
                             "repeats: 2, step_ms: 0}\n";
/* min_time_s is far above the time one epoch takes, so that each repeat
 * ends at the end of the data (every rank reads its shard to the end) and
 * never on the stopping rule, however slow the machine. */

/* "mpirun -n 2 --oversubscribe [--allow-run-as-root] [-x ...] PBENCH".
 * Under a sanitizer the ranks get the leak suppressions for Open MPI, full
 * stacks (Open MPI is built without frame pointers, so the fast unwinder
 * stops in its first frame) and Open MPI's components kept loaded (a
 * component unloaded at exit leaves frames no suppression can name). */
static void mpirun_prefix_n(char *buf, size_t buflen, int ranks)
{
    const char *source_dir = getenv("PBENCH_SOURCE_DIR");
    char env[1024] = "", pass[256] = "";
    if (source_dir && strcmp(PB_SANITIZE, "OFF") != 0) {
        snprintf(env, sizeof(env),
                 "LSAN_OPTIONS=suppressions=%s/tests/lsan-openmpi.supp:fast_unwind_on_malloc=0 "
                 "OMPI_MCA_mca_base_component_disable_dlclose=1 ",
                 source_dir);
        snprintf(pass, sizeof(pass),
                 "-x LSAN_OPTIONS -x OMPI_MCA_mca_base_component_disable_dlclose"
                 "%s%s ",
                 getenv("ASAN_OPTIONS") ? " -x ASAN_OPTIONS" : "",
                 getenv("UBSAN_OPTIONS") ? " -x UBSAN_OPTIONS" : "");
    }
    snprintf(buf, buflen, "%smpirun -n %d --oversubscribe %s%s'%s'", env, ranks,
             geteuid() == 0 ? "--allow-run-as-root " : "", pass, getenv("PBENCH_BINARY"));
}

static void mpirun_prefix(char *buf, size_t buflen)
{
    mpirun_prefix_n(buf, buflen, RANKS);
}

/* Runs `cd workdir && PREFIX args`, stdout and stderr to files there;
 * returns the exit code. */
static int run_in_workdir(bool under_mpirun, const char *args)
{
    char prefix[2048], cmd[4096];
    if (under_mpirun)
        mpirun_prefix(prefix, sizeof(prefix));
    else
        snprintf(prefix, sizeof(prefix), "'%s'", getenv("PBENCH_BINARY"));
    snprintf(cmd, sizeof(cmd), "cd '%s' && %s %s >out.txt 2>err.txt", workdir, prefix, args);
    int status = system(cmd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static char *workdir_file(const char *name)
{
    char path[PB_PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", workdir, name);
    return pb_test_read_file(path, NULL, false);
}

/* Runs pbench under mpirun with args; fails the test, with its stderr,
 * when the job exits other than 0. */
static void mpirun_ok(const char *args)
{
    int rc = run_in_workdir(true, args);
    if (rc == 0)
        return;
    char *err = workdir_file("err.txt");
    print_error("mpirun exit %d: %s\n", rc, err);
    free(err);
    fail();
}

static double number(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v))
        fail_msg("\"%s\" is missing or not a number", key);
    return json_number_value(v);
}

/* The samples of shard rank/RANKS of FILES, as the sampler splits them. */
static uint64_t shard_len(int rank)
{
    return (uint64_t)(FILES - rank + RANKS - 1) / RANKS;
}

static void test_two_ranks_one_result(void **state)
{
    (void)state;
    mpirun_ok("run -q tiny.yaml -o R.json");
    json_t *root = pb_test_load_json(workdir, "R.json");
    const json_t *point = json_array_get(json_object_get(root, "points"), 0);
    assert_non_null(point);
    const json_t *ranks = json_object_get(point, "ranks");
    assert_true(json_is_array(ranks));
    assert_int_equal(json_array_size(ranks), RANKS);

    /* The aggregate is the sum of the ranks. */
    double sum = 0;
    bool seen[RANKS] = {false};
    for (size_t k = 0; k < RANKS; k++) {
        const json_t *rank = json_array_get(ranks, k);
        int r = (int)number(rank, "rank");
        assert_true(r >= 0 && r < RANKS);
        assert_false(seen[r]);
        seen[r] = true;
        char shard[16];
        snprintf(shard, sizeof(shard), "%d/%d", r, RANKS);
        assert_string_equal(json_string_value(json_object_get(rank, "shard")), shard);
        assert_true(json_is_string(json_object_get(rank, "host")));
        assert_true(number(rank, "samples_per_s") > 0);
        sum += number(rank, "samples_per_s");
        /* Each rank read its whole shard once per repeat (one epoch). */
        assert_int_equal((uint64_t)number(rank, "samples"), REPEATS * shard_len(r));
        assert_true(number(rank, "rss_peak_bytes") > 0);
    }
    double total = number(point, "samples_per_s");
    assert_true(fabs(sum - total) <= 1e-6 * total);

    /* Each repeat's aggregate read the dataset exactly once. */
    const json_t *repeats = json_object_get(point, "repeats");
    assert_int_equal(json_array_size(repeats), REPEATS);
    for (size_t i = 0; i < REPEATS; i++)
        assert_int_equal((uint64_t)number(json_array_get(repeats, i), "samples"), FILES);

    const json_t *summary = json_object_get(point, "multi_rank");
    assert_true(json_is_object(summary));
    assert_int_equal((int)number(summary, "ranks"), RANKS);
    assert_true(number(summary, "imbalance") >= 1.0);
    assert_true(number(summary, "sync_ms_max") >= 0);
    json_decref(root);

    /* ONE result file: rank 1 wrote none of its own. */
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && ls *.json > ls.txt 2>/dev/null; ls results >> ls.txt "
             "2>/dev/null; true",
             workdir);
    assert_int_equal(system(cmd), 0);
    char *listing = workdir_file("ls.txt");
    assert_string_equal(listing, "R.json\n");
    free(listing);

    /* Only rank 0 prints the table, with the rank block. */
    char *out = workdir_file("out.txt");
    const char *const wants[] = {"2 ranks", "slowest rank", "imbalance", NULL};
    pb_test_assert_contains(out, wants);
    const char *header = strstr(out, "mpi-tiny \xc2\xb7 pbench");
    assert_non_null(header);
    assert_null(strstr(header + 1, "mpi-tiny \xc2\xb7 pbench"));
    free(out);
}

/* The shards the ranks took are disjoint and complete in every epoch. */
static void test_shards_cover_each_sample_once(void **state)
{
    (void)state;
    unsigned reads[FILES] = {0};
    for (int epoch_seed = 0; epoch_seed < 3; epoch_seed++) {
        memset(reads, 0, sizeof(reads));
        for (int r = 0; r < RANKS; r++) {
            struct pb_dataset_spec ds = {
                .shuffle = true, .seed = 7 + epoch_seed, .epochs = 1, .shard = {r, RANKS}};
            struct pb_sampler sampler;
            char msg[256];
            assert_int_equal(pb_sampler_init(&sampler, FILES, &ds, 8, false, msg, sizeof(msg)),
                             PB_OK);
            uint64_t indices[8], seeds[8];
            uint32_t count;
            uint64_t read = 0;
            for (uint64_t b = 0; pb_sampler_batch(&sampler, b, indices, seeds, &count); b++)
                for (uint32_t i = 0; i < count; i++, read++)
                    reads[indices[i]]++;
            assert_int_equal(read, shard_len(r));
        }
        for (int i = 0; i < FILES; i++)
            assert_int_equal(reads[i], 1);
    }
}

/* With loader.affinity, each rank records its threads' CPU sets, and the
 * ranks on this node split its cores (disjoint sets with 2 cores or more). */
static void test_ranks_split_cores(void **state)
{
    (void)state;
    mpirun_ok("run -q tiny.yaml -s loader.affinity=compact -o A.json");
    json_t *root = pb_test_load_json(workdir, "A.json");
    const json_t *point = json_array_get(json_object_get(root, "points"), 0);
    const json_t *affinity = json_object_get(point, "affinity");
    assert_true(json_is_object(affinity));
    assert_int_equal(json_integer_value(json_object_get(affinity, "local_size")), RANKS);
    /* The loop and one worker, each with its set, seen running inside it. */
    const json_t *threads = json_object_get(affinity, "threads");
    assert_int_equal(json_array_size(threads), 2);
    size_t i;
    const json_t *t;
    json_array_foreach(threads, i, t) assert_true(json_is_true(json_object_get(t, "within")));
    const json_t *ranks = json_object_get(point, "ranks");
    assert_int_equal(json_array_size(ranks), RANKS);
    const char *sets[RANKS];
    for (size_t k = 0; k < RANKS; k++) {
        sets[k] = json_string_value(json_object_get(json_array_get(ranks, k), "cpusets"));
        assert_non_null(sets[k]);
        assert_non_null(strstr(sets[k], "worker 0 "));
    }
    if (sysconf(_SC_NPROCESSORS_ONLN) >= RANKS)
        assert_string_not_equal(sets[0], sets[1]);
    json_decref(root);
}

/* A config error on the ranks ends the job, naming the rank and host. */
static void test_error_names_rank_and_stops_all(void **state)
{
    (void)state;
    int rc = run_in_workdir(true, "run -q tiny.yaml -s dataset.shard=1/2 -o bad.json");
    assert_int_not_equal(rc, 0);
    char *err = workdir_file("err.txt");
    const char *const wants[] = {"rank ", " on ", "leave dataset.shard out", NULL};
    pb_test_assert_contains(err, wants);
    free(err);
    char *listing = workdir_file("bad.json");
    assert_string_equal(listing, "");
    free(listing);
}

/* The line per repeat on stderr shows the job's figures (the ranks
 * summed), the same the result holds, not rank 0's own. */
static void test_progress_line_shows_the_job(void **state)
{
    (void)state;
    mpirun_ok("run tiny.yaml -s run.repeats=2 -o P.json");
    char *err = workdir_file("err.txt");
    json_t *r = pb_test_load_json(workdir, "P.json");
    json_t *repeats = json_object_get(json_array_get(json_object_get(r, "points"), 0), "repeats");
    assert_int_equal(json_array_size(repeats), 2);
    for (size_t k = 0; k < 2; k++) {
        char line[96];
        snprintf(line, sizeof(line), "repeat %zu/2: %.1f samples/s", k + 1,
                 number(json_array_get(repeats, k), "samples_per_s"));
        pb_test_assert_contains(err, (const char *const[]){line, NULL});
    }
    json_decref(r);
    free(err);
}

/* Ranks launched on different settings (an MPMD launch, or one rank's
 * command line edited) are refused before anything is measured, naming the
 * rank and both fingerprints, and no result is written. */
static void test_ranks_on_different_configs_refused(void **state)
{
    (void)state;
    char prefix[2048], cmd[4096];
    mpirun_prefix_n(prefix, sizeof(prefix), 1);
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && %s run -q tiny.yaml -s run.repeats=2 -o diff.json : -n 1 '%s' run -q "
             "tiny.yaml -s run.repeats=4 -o diff.json >out.txt 2>err.txt",
             workdir, prefix, getenv("PBENCH_BINARY"));
    int status = system(cmd);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), PB_EXIT_USAGE);
    char *err = workdir_file("err.txt");
    const char *const wants[] = {"rank 1 (on ", "another config than rank 0", "fingerprint ",
                                 NULL};
    pb_test_assert_contains(err, wants);
    free(err);
    char *listing = workdir_file("diff.json");
    assert_string_equal(listing, "");
    free(listing);
}

/* Without mpirun, the run is a single process: no rank list. */
static void test_plain_run_has_no_ranks(void **state)
{
    (void)state;
    assert_int_equal(run_in_workdir(false, "run -q tiny.yaml -o plain.json"), 0);
    json_t *root = pb_test_load_json(workdir, "plain.json");
    const json_t *point = json_array_get(json_object_get(root, "points"), 0);
    assert_null(json_object_get(point, "ranks"));
    assert_null(json_object_get(point, "multi_rank"));
    /* The whole dataset, one epoch per repeat, in one process. */
    const json_t *repeats = json_object_get(point, "repeats");
    for (size_t i = 0; i < json_array_size(repeats); i++)
        assert_int_equal((uint64_t)number(json_array_get(repeats, i), "samples"), FILES);
    json_decref(root);
}

static int setup(void **state)
{
    if (pb_test_tmpdir_setup(state) != 0)
        return -1;
    char path[PB_PATH_MAX];
    snprintf(path, sizeof(path), "%s/tiny.yaml", workdir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(config, f);
    return fclose(f) == 0 ? 0 : -1;
}

int main(void)
{
    if (!PB_HAVE_MPI) {
        printf("skipped: pbench was built without MPI (PBENCH_MPI=OFF or no MPI found)\n");
        return PB_EXIT_SKIP;
    }
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        printf("skipped: mpirun is not on PATH (scripts/setup.sh installs openmpi-bin)\n");
        return PB_EXIT_SKIP;
    }
    if (system(geteuid() == 0 ? "mpirun -n 1 --allow-run-as-root true >/dev/null 2>&1"
                              : "mpirun -n 1 true >/dev/null 2>&1") != 0) {
        printf("skipped: mpirun cannot start a one-process job on this machine\n");
        return PB_EXIT_SKIP;
    }
    if (!getenv("PBENCH_BINARY")) {
        printf("skipped: PBENCH_BINARY is not set (run through ctest)\n");
        return PB_EXIT_SKIP;
    }
    pb_test_tmpdir_use(workdir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shards_cover_each_sample_once),
        cmocka_unit_test(test_two_ranks_one_result),
        cmocka_unit_test(test_ranks_split_cores),
        cmocka_unit_test(test_error_names_rank_and_stops_all),
        cmocka_unit_test(test_ranks_on_different_configs_refused),
        cmocka_unit_test(test_progress_line_shows_the_job),
        cmocka_unit_test(test_plain_run_has_no_ranks),
    };
    return cmocka_run_group_tests(tests, setup, pb_test_tmpdir_teardown);
}
