/* Dataset index and sampler: the shuffle is a permutation, is determined by
 * the seed and differs between epochs; shards are disjoint and complete;
 * drop_last, epochs and max_samples end the data where they should; the
 * index walks folders and globs in sorted order; generated data appears. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "pipelines/dataset.h"
#include "tests/testutil.h"

static void make_specs(struct pb_dataset_spec *ds, struct pb_loader_spec *loader, uint64_t batch,
                       bool drop_last, bool shuffle, int64_t seed)
{
    memset(ds, 0, sizeof(*ds));
    memset(loader, 0, sizeof(*loader));
    ds->shuffle = shuffle;
    ds->seed = seed;
    ds->shard.rank = 0;
    ds->shard.count = 1;
    loader->batch_size = (int64_t)batch;
    loader->drop_last = drop_last;
}

/* Sets up s over n samples with the specs make_specs makes; the set-up
 * must succeed. */
static void make_sampler(struct pb_sampler *s, uint64_t n, uint64_t batch, bool drop_last,
                         bool shuffle, int64_t seed)
{
    struct pb_dataset_spec ds;
    struct pb_loader_spec loader;
    make_specs(&ds, &loader, batch, drop_last, shuffle, seed);
    char msg[256];
    assert_int_equal(
        pb_sampler_init(s, n, &ds, loader.batch_size, loader.drop_last, msg, sizeof(msg)), 0);
}

/* Collects one epoch of a sampler into out (returns count). */
static uint64_t collect_epoch(const struct pb_sampler *s, uint64_t epoch, uint64_t *out)
{
    uint64_t *idx = calloc(s->batch_size, sizeof(uint64_t));
    uint64_t *seeds = calloc(s->batch_size, sizeof(uint64_t));
    uint64_t n = 0;
    for (uint64_t b = 0; b < s->batches_per_epoch; b++) {
        uint32_t count;
        assert_true(pb_sampler_batch(s, epoch * s->batches_per_epoch + b, idx, seeds, &count));
        memcpy(out + n, idx, count * sizeof(uint64_t));
        n += count;
    }
    free(idx);
    free(seeds);
    return n;
}

static void test_permutation_properties(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {1, 2, 3, 7, 64, 100, 1000, 4097};
    for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
        uint64_t n = sizes[t];
        struct pb_dataset_spec ds;
        struct pb_loader_spec loader;
        make_specs(&ds, &loader, 16, false, true, 42);
        struct pb_sampler s;
        char msg[256];
        assert_int_equal(
            pb_sampler_init(&s, n, &ds, loader.batch_size, loader.drop_last, msg, sizeof(msg)), 0);
        uint64_t *e0 = calloc(n, sizeof(uint64_t)), *e1 = calloc(n, sizeof(uint64_t));
        char *seen = calloc(n, 1);
        assert_int_equal(collect_epoch(&s, 0, e0), n);
        assert_int_equal(collect_epoch(&s, 1, e1), n);
        for (uint64_t i = 0; i < n; i++) {
            assert_true(e0[i] < n);
            assert_false(seen[e0[i]]);
            seen[e0[i]] = 1;
        }
        if (n >= 64) {
            assert_true(memcmp(e0, e1, n * sizeof(uint64_t)) != 0); /* epochs differ */
            uint64_t fixed = 0;
            for (uint64_t i = 0; i < n; i++)
                fixed += e0[i] == i;
            assert_true(fixed < n / 8); /* actually shuffled */
        }
        /* Same seed, same order; another seed, another order. */
        struct pb_sampler again, other;
        assert_int_equal(
            pb_sampler_init(&again, n, &ds, loader.batch_size, loader.drop_last, msg, sizeof(msg)),
            0);
        ds.seed = 43;
        assert_int_equal(
            pb_sampler_init(&other, n, &ds, loader.batch_size, loader.drop_last, msg, sizeof(msg)),
            0);
        uint64_t *a = calloc(n, sizeof(uint64_t)), *o = calloc(n, sizeof(uint64_t));
        collect_epoch(&again, 0, a);
        collect_epoch(&other, 0, o);
        assert_memory_equal(a, e0, n * sizeof(uint64_t));
        if (n >= 64)
            assert_true(memcmp(o, e0, n * sizeof(uint64_t)) != 0);
        free(e0);
        free(e1);
        free(seen);
        free(a);
        free(o);
    }
}

static void test_no_shuffle_is_identity(void **state)
{
    (void)state;
    struct pb_sampler s;
    make_sampler(&s, 10, 4, false, false, 9);
    uint64_t out[10];
    assert_int_equal(collect_epoch(&s, 3, out), 10);
    for (uint64_t i = 0; i < 10; i++)
        assert_int_equal(out[i], i);
    assert_int_equal(s.batches_per_epoch, 3); /* 4 + 4 + 2 */
}

static void test_shards_disjoint_and_complete(void **state)
{
    (void)state;
    static const uint64_t sizes[] = {5, 17, 1000, 1001};
    for (size_t t = 0; t < 4; t++) {
        uint64_t n = sizes[t];
        for (int64_t count = 1; count <= 5; count++) {
            if ((uint64_t)count > n)
                continue;
            int *hits = calloc(n, sizeof(int));
            for (int64_t rank = 0; rank < count; rank++) {
                struct pb_dataset_spec ds;
                struct pb_loader_spec loader;
                make_specs(&ds, &loader, 3, false, true, 7);
                ds.shard.rank = rank;
                ds.shard.count = count;
                struct pb_sampler s;
                char msg[256];
                assert_int_equal(pb_sampler_init(&s, n, &ds, loader.batch_size, loader.drop_last,
                                                 msg, sizeof(msg)),
                                 0);
                uint64_t *out = calloc(n, sizeof(uint64_t));
                uint64_t got = collect_epoch(&s, 2, out);
                assert_int_equal(got, s.shard_len);
                for (uint64_t i = 0; i < got; i++)
                    hits[out[i]]++;
                free(out);
            }
            for (uint64_t i = 0; i < n; i++)
                assert_int_equal(hits[i], 1); /* each sample in exactly one shard */
            free(hits);
        }
    }
}

static void test_drop_last_epochs_max_samples(void **state)
{
    (void)state;
    struct pb_dataset_spec ds;
    struct pb_loader_spec loader;
    char msg[256];
    struct pb_sampler s;
    uint64_t idx[8], seeds[8];
    uint32_t count;

    make_specs(&ds, &loader, 8, true, true, 1);
    ds.epochs = 2;
    assert_int_equal(
        pb_sampler_init(&s, 20, &ds, loader.batch_size, loader.drop_last, msg, sizeof(msg)), 0);
    assert_int_equal(s.batches_per_epoch, 2); /* 20 / 8, remainder dropped */
    assert_true(pb_sampler_batch(&s, 3, idx, seeds, &count));
    assert_int_equal(count, 8);
    assert_false(pb_sampler_batch(&s, 4, idx, seeds, &count)); /* 2 epochs done */

    make_specs(&ds, &loader, 8, false, true, 1);
    ds.max_samples = 21;
    assert_int_equal(
        pb_sampler_init(&s, 20, &ds, loader.batch_size, loader.drop_last, msg, sizeof(msg)), 0);
    assert_int_equal(s.batches_per_epoch, 3);
    uint64_t total = 0;
    for (uint64_t b = 0; pb_sampler_batch(&s, b, idx, seeds, &count); b++)
        total += count;
    assert_int_equal(total, 21);

    make_specs(&ds, &loader, 8, true, true, 1);
    assert_int_equal(
        pb_sampler_init(&s, 5, &ds, loader.batch_size, loader.drop_last, msg, sizeof(msg)),
        PB_ERR_CONFIG);
    assert_string_equal(msg, "shard 0/1 holds 5 samples, fewer than one batch of 8 with "
                             "loader.drop_last");
    assert_int_equal(
        pb_sampler_init(&s, 0, &ds, loader.batch_size, loader.drop_last, msg, sizeof(msg)),
        PB_ERR_CONFIG);
    assert_string_equal(msg, "the dataset is empty");

    /* Without drop_last, an empty shard says so, and not drop_last. */
    make_specs(&ds, &loader, 8, false, true, 1);
    ds.shard.rank = 3;
    ds.shard.count = 4;
    assert_int_equal(
        pb_sampler_init(&s, 2, &ds, loader.batch_size, loader.drop_last, msg, sizeof(msg)),
        PB_ERR_CONFIG);
    assert_string_equal(msg, "shard 3/4 holds no samples: the dataset has 2 files for 4 shards; "
                             "use fewer shards (dataset.shard, or fewer ranks) or more data");
}

static void test_seeds_differ_per_sample(void **state)
{
    (void)state;
    struct pb_sampler s;
    make_sampler(&s, 100, 8, false, true, 5);
    uint64_t idx[8], seeds[8], idx2[8], seeds2[8];
    uint32_t count, count2;
    assert_true(pb_sampler_batch(&s, 1, idx, seeds, &count));
    assert_true(pb_sampler_batch(&s, 1, idx2, seeds2, &count2));
    assert_memory_equal(seeds, seeds2, sizeof(seeds)); /* reproducible */
    for (int i = 1; i < 8; i++)
        assert_true(seeds[i] != seeds[0]);
}

static void write_file(const char *path, size_t bytes)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < bytes; i++)
        fputc((int)(i & 0xff), f);
    fclose(f);
}

static void test_index_folder_glob_and_generate(void **state)
{
    (void)state;
    char root[] = "/tmp/pbench-test-dataset-XXXXXX";
    assert_int_equal(pb_test_tmpdir_make(root), 0);
    char path[512], sub[512];
    snprintf(sub, sizeof(sub), "%s/data/sub", root);
    snprintf(path, sizeof(path), "%s/data", root);
    mkdir(path, 0755);
    mkdir(sub, 0755);
    snprintf(path, sizeof(path), "%s/data/b.bin", root);
    write_file(path, 10);
    snprintf(path, sizeof(path), "%s/data/a.bin", root);
    write_file(path, 30);
    snprintf(path, sizeof(path), "%s/data/sub/c.txt", root);
    write_file(path, 20);
    snprintf(path, sizeof(path), "%s/data/.hidden", root);
    write_file(path, 5);

    struct pb_dataset_spec spec;
    memset(&spec, 0, sizeof(spec));
    snprintf(spec.path, sizeof(spec.path), "%s/data", root);
    struct pb_dataset ds;
    char msg[512];
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), 0);
    assert_int_equal(ds.count, 3);
    assert_true(strstr(ds.paths[0], "/data/a.bin") != NULL);
    assert_true(strstr(ds.paths[1], "/data/b.bin") != NULL);
    assert_true(strstr(ds.paths[2], "/data/sub/c.txt") != NULL);
    assert_int_equal(ds.max_bytes, 30);
    assert_int_equal(ds.total_bytes, 60);
    pb_dataset_free(&ds);

    snprintf(spec.path, sizeof(spec.path), "%s/data/*.bin", root);
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), 0);
    assert_int_equal(ds.count, 2);
    pb_dataset_free(&ds);

    snprintf(spec.path, sizeof(spec.path), "%s/data/*.png", root);
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_ERR_CONFIG);
    char expect[PB_PATH_MAX + 200];
    snprintf(expect, sizeof(expect), "dataset.path '%s' matches no files", spec.path);
    assert_string_equal(msg, expect);

    snprintf(spec.path, sizeof(spec.path), "%s/missing", root);
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_ERR_CONFIG);
    snprintf(expect, sizeof(expect),
             "dataset.path '%s': No such file or directory (add a dataset.generate block to make "
             "data)",
             spec.path);
    assert_string_equal(msg, expect);

    /* With a generate block, the missing folder is made on first use: the
     * caller generates, then opens; pb_dataset_open itself only reads. */
    spec.has_generate = true;
    spec.generate = (struct pb_generate_spec){.kind = PB_GENERATE_FILES, .count = 12,
                                              .size_bytes = 1000, .seed = 3};
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_int_equal(access(spec.path, F_OK), -1);
    assert_int_equal(pb_dataset_generate(&spec.generate, spec.path, msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), 0);
    assert_int_equal(ds.count, 12);
    assert_int_equal(ds.total_bytes, 12000);
    pb_dataset_free(&ds);

    assert_int_equal(pb_test_tmpdir_remove(root), 0);
}

/* ---- issue 16: symlinks followed, skipped entries reported ------------ */

/* Opens path (a folder or glob) into ds; returns the code, msg the reason. */
static int open_path(const char *path, struct pb_dataset *ds, char *msg, size_t msglen)
{
    struct pb_dataset_spec spec;
    memset(&spec, 0, sizeof(spec));
    pb_strlcpy(spec.path, path, sizeof(spec.path));
    return pb_dataset_open(&spec, ds, msg, msglen);
}

/* A folder of symlinks to files is indexed as a glob over it is; a link
 * back to a folder already walked ends the walk there; broken links, link
 * loops and links that cannot be resolved are counted with the first path
 * per reason. (As root, permissions deny nothing, so "unreadable" here is
 * a link whose target has a name too long to resolve.) */
static void test_walk_follows_symlinks_and_reports_skips(void **state)
{
    (void)state;
    char root[] = "/tmp/pbench-test-walk-XXXXXX";
    assert_int_equal(pb_test_tmpdir_make(root), 0);
    char path[1024], target[600];
    snprintf(path, sizeof(path), "%s/real", root);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/links", root);
    mkdir(path, 0755);
    const char *const names[] = {"a.bin", "b.bin"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/real/%s", root, names[i]);
        write_file(path, 10 + (size_t)i);
        snprintf(target, sizeof(target), "%s/links/%s", root, names[i]);
        assert_int_equal(symlink(path, target), 0);
    }
    struct pb_dataset ds;
    char msg[PB_MSG_MAX * 2], links[128], want[4096];
    snprintf(links, sizeof(links), "%s/links", root);
    assert_int_equal(open_path(links, &ds, msg, sizeof(msg)), PB_OK);
    assert_int_equal(ds.count, 2);
    assert_int_equal(ds.total_bytes, 21);
    assert_string_equal(ds.skipped, "");
    pb_dataset_free(&ds);

    /* Links that lead nowhere, round in circles or back to the folder. */
    snprintf(path, sizeof(path), "%s/links/broken.bin", root);
    assert_int_equal(symlink("/nonexistent/pbench/file", path), 0);
    snprintf(path, sizeof(path), "%s/links/self", root);
    assert_int_equal(symlink(path, path), 0);
    snprintf(path, sizeof(path), "%s/links/again", root);
    assert_int_equal(symlink(links, path), 0);
    char long_name[300];
    memset(long_name, 'n', 299);
    long_name[299] = '\0';
    snprintf(target, sizeof(target), "/tmp/%s", long_name);
    snprintf(path, sizeof(path), "%s/links/toolong.bin", root);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(open_path(links, &ds, msg, sizeof(msg)), PB_OK);
    assert_int_equal(ds.count, 2);
    snprintf(want, sizeof(want),
             "skipped 4 entries: 1 broken symlink (first: %s/broken.bin), 1 symlink loop (first: "
             "%s/self), 1 folder already walked through another symlink (first: %s/again), 1 "
             "unreadable entry (first: %s/toolong.bin: File name too long)",
             links, links, links, links);
    assert_string_equal(ds.skipped, want);
    pb_dataset_free(&ds);

    /* A link to the folder from outside is followed like the folder. */
    snprintf(path, sizeof(path), "%s/via", root);
    assert_int_equal(symlink(links, path), 0);
    assert_int_equal(open_path(path, &ds, msg, sizeof(msg)), PB_OK);
    assert_int_equal(ds.count, 2);
    assert_non_null(strstr(ds.paths[0], "/via/a.bin"));
    pb_dataset_free(&ds);

    /* A glob says what it skipped too; nothing usable says why. */
    snprintf(path, sizeof(path), "%s/*.bin", links);
    assert_int_equal(open_path(path, &ds, msg, sizeof(msg)), PB_OK);
    assert_int_equal(ds.count, 2);
    assert_non_null(strstr(ds.skipped, "1 broken symlink (first: "));
    pb_dataset_free(&ds);
    snprintf(path, sizeof(path), "%s/broken*", links);
    assert_int_equal(open_path(path, &ds, msg, sizeof(msg)), PB_ERR_CONFIG);
    snprintf(want, sizeof(want),
             "dataset.path '%s' matches no files (skipped 1 entry: 1 broken symlink (first: "
             "%s/broken.bin))",
             path, links);
    assert_string_equal(msg, want);
    assert_int_equal(pb_test_tmpdir_remove(root), 0);
}

/* A decoder's several samples per visit (clips_per_visit): an epoch holds
 * files x K samples, a file's K come one after the other with clips 0..K-1
 * and one visit seed, each file is visited once per epoch (shuffled and
 * sharded by visits), and the samples' own seeds differ. */
static void test_visits_keep_a_files_clips_together(void **state)
{
    (void)state;
    enum { FILES = 13, K = 4, BATCH = 8 };
    const int64_t ranks = 2;
    uint64_t visited[FILES] = {0};
    uint64_t total = 0;
    for (int64_t rank = 0; rank < ranks; rank++) {
        struct pb_dataset_spec ds;
        struct pb_loader_spec loader;
        make_specs(&ds, &loader, BATCH, false, true, 5);
        ds.shard = (struct pb_shard){rank, ranks};
        struct pb_sampler s;
        char msg[256];
        assert_int_equal(pb_sampler_init_visits(&s, FILES, K, &ds, BATCH, false, msg, sizeof msg),
                         PB_OK);
        uint64_t files_in_shard = (FILES - (uint64_t)rank + ranks - 1) / ranks;
        assert_int_equal(s.shard_len, files_in_shard * K);
        uint64_t idx[BATCH], seeds[BATCH], visits[BATCH], position = 0, prev_index = 0,
                 prev_visit = 0;
        uint32_t clips[BATCH], count;
        for (uint64_t b = 0; b < s.batches_per_epoch; b++) {
            assert_true(pb_sampler_batch_visits(&s, b, idx, seeds, visits, clips, &count));
            for (uint32_t j = 0; j < count; j++, position++) {
                assert_int_equal(clips[j], position % K);
                if (clips[j] == 0) {
                    visited[idx[j]]++;
                } else { /* the same visit as the sample before */
                    assert_int_equal(idx[j], prev_index);
                    assert_int_equal(visits[j], prev_visit);
                }
                assert_true(seeds[j] != visits[j]);
                prev_index = idx[j];
                prev_visit = visits[j];
            }
        }
        assert_int_equal(position, files_in_shard * K);
        total += position;
        /* Plain pb_sampler_batch gives the same indices and seeds. */
        uint64_t idx2[BATCH], seeds2[BATCH];
        assert_true(pb_sampler_batch_visits(&s, 1, idx, seeds, NULL, NULL, &count));
        assert_true(pb_sampler_batch(&s, 1, idx2, seeds2, &count));
        assert_memory_equal(idx, idx2, count * sizeof idx[0]);
        assert_memory_equal(seeds, seeds2, count * sizeof seeds[0]);
    }
    assert_int_equal(total, (uint64_t)FILES * K);
    for (int f = 0; f < FILES; f++)
        assert_int_equal(visited[f], 1); /* every file once per epoch, over the shards */
}

/* The walk stays in the dataset: a symlink to a folder that holds
 * dataset.path (its parent, "/") or to /proc is left out and counted, and
 * a dataset.path that is "/" (or reaches it, as /proc/self/root does) is
 * refused rather than walked. */
static void test_walk_stays_in_the_dataset(void **state)
{
    (void)state;
    char base[256], dir[300], path[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(base, sizeof(base), "/tmp/pbench-walk-XXXXXX");
    assert_non_null(mkdtemp(base));
    snprintf(dir, sizeof(dir), "%s/data", base);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/a.bin", dir);
    pb_test_write_file(path, "abc", 3);
    snprintf(path, sizeof(path), "%s/beside.bin", base); /* beside the dataset: not in it */
    pb_test_write_file(path, "xyz", 3);
    snprintf(path, sizeof(path), "%s/up", dir);
    assert_int_equal(symlink("..", path), 0);
    snprintf(path, sizeof(path), "%s/proc", dir);
    assert_int_equal(symlink("/proc", path), 0);
    struct pb_dataset_spec spec = {.shard = {0, 1}};
    snprintf(spec.path, sizeof(spec.path), "%s", dir);
    struct pb_dataset ds;
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_OK);
    assert_int_equal(ds.count, 1);
    pb_test_assert_contains(ds.skipped, (const char *const[]){"2 symlinks to folders that hold "
                                                              "dataset.path, or to system",
                                                              NULL});
    pb_dataset_free(&ds);

    snprintf(spec.path, sizeof(spec.path), "/proc/self/root");
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_ERR_CONFIG);
    pb_test_assert_contains(msg, (const char *const[]){"is the root folder /", NULL});
    snprintf(spec.path, sizeof(spec.path), "/sys/kernel");
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_ERR_CONFIG);
    pb_test_assert_contains(msg, (const char *const[]){"is a system folder", NULL});
    assert_int_equal(pb_test_tmpdir_remove(base), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_stays_in_the_dataset),
        cmocka_unit_test(test_permutation_properties),
        cmocka_unit_test(test_no_shuffle_is_identity),
        cmocka_unit_test(test_shards_disjoint_and_complete),
        cmocka_unit_test(test_drop_last_epochs_max_samples),
        cmocka_unit_test(test_seeds_differ_per_sample),
        cmocka_unit_test(test_index_folder_glob_and_generate),
        cmocka_unit_test(test_walk_follows_symlinks_and_reports_skips),
        cmocka_unit_test(test_visits_keep_a_files_clips_together),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
