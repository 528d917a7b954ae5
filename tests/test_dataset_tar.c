/* Tests of WebDataset tar shards (pipelines/dataset_tar.c): shards hold the
 * same samples as the loose files they were packed from, the read stage
 * reads a member's exact bytes, the stream sampler visits every sample
 * once an epoch with each worker reading a contiguous run, and bad shards
 * (truncated, a sample without an image member) are counted errors. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"

#include "pipelines/dataset.h"
#include "pipelines/stage.h"
#include "pipelines/storage.h"

static char root[] = "/tmp/pbench-test-tar-XXXXXX";
#define COUNT 24

static int setup(void **state)
{
    if (pb_test_tmpdir_setup(state) != 0)
        return -1;
    struct pb_generate_spec gen = {
        .kind = PB_GENERATE_JPEG, .count = COUNT, .seed = 3, .quality = 80, .size = "64x48"};
    char dir[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/loose", root);
    if (pb_dataset_generate(&gen, dir, msg, sizeof(msg)) != PB_OK)
        return fprintf(stderr, "%s\n", msg), -1;
    gen.shards = 3;
    snprintf(dir, sizeof(dir), "%s/shards", root);
    if (pb_dataset_generate(&gen, dir, msg, sizeof(msg)) != PB_OK)
        return fprintf(stderr, "%s\n", msg), -1;
    return 0;
}

static void open_ok(const char *sub, int format, struct pb_dataset *ds)
{
    struct pb_dataset_spec spec = {.shard = {0, 1}, .format = format};
    snprintf(spec.path, sizeof(spec.path), "%s/%s", root, sub);
    char msg[PB_MSG_MAX];
    int rc = pb_dataset_open(&spec, ds, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("%s: %s", spec.path, msg);
}

/* The read stage's instance for a dataset whose largest sample is
 * max_bytes, under cache mode cache. */
static void *read_stage(size_t max_bytes, int cache)
{
    const struct pb_stage_ops *ops = pb_stage_find("read");
    struct {
        int64_t block_kib;
    } opts = {0};
    struct pb_stage_plan in = {.shape = {.dtype = PB_DTYPE_BYTES},
                               .max_bytes = max_bytes,
                               .cache = cache},
                         out;
    void *state = NULL;
    char msg[PB_MSG_MAX];
    assert_int_equal(ops->init(&state, &opts, &in, &out, NULL, NULL, msg, sizeof(msg)), PB_OK);
    return state;
}

/* Runs the read stage on sample i of ds into out; returns its code. */
static int read_sample(void *state, const struct pb_dataset *ds, uint64_t i, uint8_t *out,
                       size_t cap, size_t *got, char *msg, size_t msglen)
{
    struct pb_sample s = {.index = i,
                          .path = ds->paths[i],
                          .file_bytes = ds->sizes[i],
                          .file_offset = ds->offsets ? ds->offsets[i] : 0,
                          .member = ds->members ? ds->members[i] : NULL,
                          .out = out,
                          .out_capacity = cap,
                          .msg = msg,
                          .msglen = msglen};
    int rc = pb_stage_find("read")->process(state, &s);
    *got = s.out_bytes;
    return rc;
}

static void test_shards_hold_the_loose_samples(void **state)
{
    (void)state;
    struct pb_dataset loose, tar;
    open_ok("loose", PB_FORMAT_FILES, &loose);
    open_ok("shards", PB_FORMAT_TAR, &tar);
    assert_int_equal(loose.count, COUNT);
    assert_int_equal(tar.count, COUNT);
    assert_int_equal(tar.shard_count, 3);
    assert_int_equal(tar.bad_samples, 0);
    assert_int_equal(tar.shard_first[3], COUNT);
    char *const *paths;
    const uint64_t *sizes;
    assert_int_equal(pb_dataset_storage_files(&tar, &paths, &sizes), 3);
    assert_non_null(strstr(paths[0], "shard-000000.tar"));
    assert_int_equal(tar.max_bytes, loose.max_bytes);

    for (int cache = PB_CACHE_WARM; cache <= PB_CACHE_DIRECT; cache++) {
        void *reader = read_stage(tar.max_bytes, cache);
        uint8_t *buf = malloc(tar.max_bytes);
        assert_non_null(buf);
        for (size_t i = 0; i < tar.count; i++) {
            /* Packed in path order: sample i is loose file i, keyed by its
             * name without the extension. */
            const char *base = strrchr(loose.paths[i], '/') + 1;
            assert_int_equal(strncmp(tar.members[i], base, strlen(tar.members[i])), 0);
            assert_string_equal(base + strlen(tar.members[i]), ".jpg");
            size_t len;
            char *want = pb_test_read_file(loose.paths[i], &len, true);
            assert_int_equal(tar.sizes[i], len);
            size_t got;
            char msg[PB_MSG_MAX] = "";
            assert_int_equal(
                read_sample(reader, &tar, i, buf, tar.max_bytes, &got, msg, sizeof(msg)), PB_OK);
            assert_int_equal(got, len);
            assert_memory_equal(buf, want, len);
            free(want);
        }
        free(buf);
        pb_stage_find("read")->cleanup(reader);
    }
    pb_dataset_free(&loose);
    pb_dataset_free(&tar);
}

/* Every epoch visits every sample once; without shuffling, each worker's
 * batches are one contiguous, increasing run of the shard stream. */
static void test_stream_visits_each_sample_once(void **state)
{
    (void)state;
    struct pb_dataset tar;
    open_ok("shards", PB_FORMAT_TAR, &tar);
    static const uint64_t workers[] = {1, 2, 3, 5};
    static const int64_t batch_sizes[] = {1, 4, 5, 7};
    static const uint64_t buffers[] = {0, 6, 100};
    for (size_t a = 0; a < PB_ARRAY_LEN(workers); a++)
        for (size_t b = 0; b < PB_ARRAY_LEN(batch_sizes); b++)
            for (size_t c = 0; c < PB_ARRAY_LEN(buffers); c++)
                for (int shuffle = 0; shuffle < 2; shuffle++) {
                    struct pb_dataset_spec spec = {
                        .shard = {0, 1}, .shuffle = shuffle, .seed = 9, .epochs = 2};
                    struct pb_sampler s;
                    char msg[PB_MSG_MAX];
                    assert_int_equal(pb_sampler_init(&s, tar.count, &spec, batch_sizes[b], false,
                                                     msg, sizeof(msg)),
                                     PB_OK);
                    pb_sampler_stream(&s, &tar, workers[a], buffers[c], false, 2);
                    for (uint64_t epoch = 0; epoch < 2; epoch++) {
                        uint64_t seen[COUNT] = {0}, last[8];
                        memset(last, 0xff, sizeof(last));
                        for (uint64_t k = 0; k < s.batches_per_epoch; k++) {
                            uint64_t idx[8], seeds[8];
                            uint32_t n;
                            uint64_t batch = epoch * s.batches_per_epoch + k;
                            assert_true(pb_sampler_batch(&s, batch, idx, seeds, &n));
                            assert_true(n >= 1 && n <= (uint32_t)batch_sizes[b]);
                            /* The runner's worker for the batch. */
                            uint64_t w = batch % workers[a];
                            for (uint32_t j = 0; j < n; j++) {
                                assert_true(idx[j] < COUNT);
                                seen[idx[j]]++;
                                if (!shuffle && last[w] != UINT64_MAX)
                                    assert_int_equal(idx[j], last[w] + 1);
                                last[w] = idx[j];
                            }
                        }
                        for (int i = 0; i < COUNT; i++)
                            assert_int_equal(seen[i], 1);
                    }
                    uint64_t idx[8], seeds[8];
                    uint32_t n;
                    assert_false(pb_sampler_batch(&s, 2 * s.batches_per_epoch, idx, seeds, &n));
                }
    pb_dataset_free(&tar);
}

/* A shuffle buffer moves samples, but only within its window. */
static void test_shuffle_buffer_stays_local(void **state)
{
    (void)state;
    struct pb_dataset tar;
    open_ok("shards", PB_FORMAT_TAR, &tar);
    struct pb_dataset_spec spec = {.shard = {0, 1}, .shuffle = true, .seed = 4};
    struct pb_sampler s;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_sampler_init(&s, tar.count, &spec, 1, false, msg, sizeof(msg)), PB_OK);
    pb_sampler_stream(&s, &tar, 1, 6, false, 0);
    /* One worker, batch 1: position p of the epoch holds a sample of
     * window p / 6 of the stream, which starts at some shard's first. */
    uint64_t idx[COUNT];
    for (uint64_t p = 0; p < COUNT; p++) {
        uint64_t seed;
        uint32_t n;
        assert_true(pb_sampler_batch(&s, p, &idx[p], &seed, &n));
        assert_int_equal(n, 1);
    }
    uint64_t moved = 0;
    bool local = false;
    for (size_t k = 0; k < tar.shard_count && !local; k++) {
        uint64_t rotate = tar.shard_first[k];
        local = true;
        moved = 0;
        for (uint64_t p = 0; p < COUNT; p++) {
            uint64_t pos = (idx[p] + COUNT - rotate) % COUNT;
            local &= pos / 6 == p / 6;
            moved += pos != p;
        }
    }
    assert_true(local);
    assert_true(moved > 0);
    pb_dataset_free(&tar);
}

static void copy_file(const char *from, const char *to, size_t keep)
{
    size_t len;
    char *data = pb_test_read_file(from, &len, true);
    pb_test_write_file(to, data, keep && keep < len ? keep : len);
    free(data);
}

static void test_bad_shards_are_counted_errors(void **state)
{
    (void)state;
    char bad[PB_PATH_MAX], path[PB_PATH_MAX * 2], from[PB_PATH_MAX * 2], msg[PB_MSG_MAX];
    snprintf(bad, sizeof(bad), "%s/bad", root);
    assert_int_equal(mkdir(bad, 0755), 0);
    /* A good shard, one cut in the middle of a member, one whose only
     * sample has no image member. */
    snprintf(from, sizeof(from), "%s/shards/shard-000000.tar", root);
    snprintf(path, sizeof(path), "%s/a-good.tar", bad);
    copy_file(from, path, 0);
    struct stat st;
    assert_int_equal(stat(from, &st), 0);
    snprintf(path, sizeof(path), "%s/b-truncated.tar", bad);
    copy_file(from, path, (size_t)st.st_size / 2 + 100);
    char labels[PB_PATH_MAX];
    snprintf(labels, sizeof(labels), "%s/labels", root);
    assert_int_equal(mkdir(labels, 0755), 0);
    snprintf(path, sizeof(path), "%s/orphan.cls", labels);
    pb_test_write_file(path, "7\n", 2);
    assert_int_equal(pb_dataset_pack_shards(labels, 1, msg, sizeof(msg)), PB_OK);
    snprintf(from, sizeof(from), "%s/shard-000000.tar", labels);
    snprintf(path, sizeof(path), "%s/c-labels.tar", bad);
    copy_file(from, path, 0);

    struct pb_dataset ds;
    open_ok("bad", PB_FORMAT_TAR, &ds);
    assert_int_equal(ds.shard_count, 3);
    uint64_t good = ds.shard_first[1]; /* shard 0: all of its samples */
    assert_int_equal(good, COUNT / 3);
    assert_int_equal(ds.bad_samples, 2);
    uint64_t truncated = 0, no_image = 0;
    void *reader = read_stage(ds.max_bytes, PB_CACHE_WARM);
    uint8_t *buf = malloc(ds.max_bytes);
    for (size_t i = 0; i < ds.count; i++) {
        size_t got;
        int rc = read_sample(reader, &ds, i, buf, ds.max_bytes, &got, msg, sizeof(msg));
        if (ds.offsets[i] != PB_MEMBER_BAD) {
            assert_int_equal(rc, PB_OK);
            continue;
        }
        assert_int_equal(rc, PB_ERR_DATA);
        truncated += strstr(msg, "truncated tar") != NULL;
        no_image += strstr(msg, "no image member") != NULL && strstr(msg, "orphan") != NULL;
    }
    assert_int_equal(truncated, 1);
    assert_int_equal(no_image, 1);
    free(buf);
    pb_stage_find("read")->cleanup(reader);
    pb_dataset_free(&ds);

    /* No shard at all is a config error that says so. */
    struct pb_dataset_spec spec = {.shard = {0, 1}, .format = PB_FORMAT_TAR};
    snprintf(spec.path, sizeof(spec.path), "%s/loose", root);
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "no .tar shards"));
}

/* What cannot be read member by member is named: a folder of .tar.gz is
 * a config error that says to decompress them, a .tar that is really gzip
 * a counted bad sample that says the same, a picture no decoder reads (a
 * TIFF) no image member, and a link member a counted, named skip. */
static void test_unreadable_shards_and_members_are_named(void **state)
{
    (void)state;
    char dir[PB_PATH_MAX], path[PB_PATH_MAX * 2], msg[PB_MSG_MAX];
    static const char gzip[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03junk";
    snprintf(dir, sizeof(dir), "%s/gz", root);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof(path), "%s/shard-000000.tar.gz", dir);
    pb_test_write_file(path, gzip, sizeof(gzip) - 1);
    struct pb_dataset ds;
    struct pb_dataset_spec spec = {.shard = {0, 1}, .format = PB_FORMAT_TAR};
    snprintf(spec.path, sizeof(spec.path), "%s", dir);
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_ERR_CONFIG);
    pb_test_assert_contains(msg, (const char *const[]){"1 compressed tar shards",
                                                       "shard-000000.tar.gz", "gunzip", NULL});

    snprintf(path, sizeof(path), "%s/shard-000001.tar", dir);
    pb_test_write_file(path, gzip, sizeof(gzip) - 1);
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_OK);
    assert_int_equal(ds.count, 1);
    assert_int_equal(ds.offsets[0], PB_MEMBER_BAD);
    void *reader = read_stage(64, PB_CACHE_WARM);
    uint8_t buf[64];
    size_t got;
    assert_int_equal(read_sample(reader, &ds, 0, buf, sizeof(buf), &got, msg, sizeof(msg)),
                     PB_ERR_DATA);
    pb_test_assert_contains(msg, (const char *const[]){"the shard is compressed", NULL});
    pb_stage_find("read")->cleanup(reader);
    pb_dataset_free(&ds);

    /* A sample whose picture no decoder reads (TIFF) has no image member,
     * said when the shard is indexed. */
    char tif[PB_PATH_MAX];
    snprintf(tif, sizeof(tif), "%s/tif", root);
    assert_int_equal(mkdir(tif, 0755), 0);
    snprintf(path, sizeof(path), "%s/x.tif", tif);
    pb_test_write_file(path, "II*\0tiff", 8);
    assert_int_equal(pb_dataset_pack_shards(tif, 1, msg, sizeof(msg)), PB_OK);
    snprintf(spec.path, sizeof(spec.path), "%s", tif);
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_OK);
    assert_int_equal(ds.count, 1);
    assert_int_equal(ds.offsets[0], PB_MEMBER_BAD);
    assert_int_equal(ds.sizes[0], PB_MEMBER_NO_IMAGE);
    pb_dataset_free(&ds);

    /* A member that is a link (or a device, a FIFO) is no sample: it is
     * left out, and counted and named where the run warns. */
    char links[PB_PATH_MAX], cmd[PB_PATH_MAX * 2];
    snprintf(links, sizeof(links), "%s/links-tar", root);
    assert_int_equal(mkdir(links, 0755), 0);
    snprintf(path, sizeof(path), "%s/a.jpg", links);
    pb_test_write_file(path, "\xff\xd8\xff\xd9", 4);
    snprintf(path, sizeof(path), "%s/b.jpg", links);
    assert_int_equal(symlink("a.jpg", path), 0);
    snprintf(cmd, sizeof(cmd), "cd '%s' && tar -cf s.tar a.jpg b.jpg && rm a.jpg b.jpg", links);
    assert_int_equal(system(cmd), 0);
    snprintf(spec.path, sizeof(spec.path), "%s", links);
    assert_int_equal(pb_dataset_open(&spec, &ds, msg, sizeof(msg)), PB_OK);
    assert_int_equal(ds.count, 1);
    pb_test_assert_contains(ds.skipped, (const char *const[]){
                                            "skipped 1 tar member that is not a regular file",
                                            "(member b.jpg)", NULL});
    pb_dataset_free(&ds);
}

/* End to end: a run over the bad shards counts their samples as errors
 * under on_error: skip, and the result says what the dataset is. */
static void test_run_over_shards(void **state)
{
    (void)state;
    char config[128], args[256];
    snprintf(config, sizeof(config), "%s/tar.yaml", root);
    char text[1024];
    int len = snprintf(text, sizeof(text),
                       "name: tar\n"
                       "dataset: {path: %s/bad, format: tar, cache: cold, shuffle_buffer: 4}\n"
                       "pipeline:\n  - read:\n  - decode: {decoder: jpeg}\n"
                       "  - resize: {size: [32, 32]}\n"
                       "loader: {workers: 2, batch_size: 4}\n"
                       "run: {warmup_batches: 0, min_time_s: 0.05, max_time_s: 0.2, repeats: 2, "
                       "max_error_pct: 100}\n",
                       root);
    pb_test_write_file(config, text, (size_t)len);
    snprintf(args, sizeof(args), "run '%s' -o result.json -q", config);
    char *err = NULL;
    int rc = pb_test_run_pbench(root, args, &err);
    if (rc != 0)
        fail_msg("pbench exited %d: %s", rc, err ? err : "");
    free(err);
    json_t *result = pb_test_load_json(root, "result.json");
    json_t *dataset = json_object_get(result, "dataset");
    assert_string_equal(json_string_value(json_object_get(dataset, "format")), "tar");
    struct pb_dataset ds;
    open_ok("bad", PB_FORMAT_TAR, &ds);
    assert_int_equal(json_integer_value(json_object_get(dataset, "samples")), ds.count);
    pb_dataset_free(&ds);
    assert_int_equal(json_integer_value(json_object_get(dataset, "shards")), 3);
    assert_int_equal(json_integer_value(json_object_get(dataset, "bad_samples")), 2);
    json_t *point = json_array_get(json_object_get(result, "points"), 0);
    assert_true(json_integer_value(json_object_get(json_object_get(point, "errors"), "count")) > 0);
    json_t *repeat = json_array_get(json_object_get(point, "repeats"), 0);
    assert_true(json_integer_value(json_object_get(repeat, "page_cache_files_checked")) == 3);
    json_decref(result);
}

int main(void)
{
    pb_test_tmpdir_use(root);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shards_hold_the_loose_samples),
        cmocka_unit_test(test_stream_visits_each_sample_once),
        cmocka_unit_test(test_shuffle_buffer_stays_local),
        cmocka_unit_test(test_bad_shards_are_counted_errors),
        cmocka_unit_test(test_unreadable_shards_and_members_are_named),
        cmocka_unit_test(test_run_over_shards),
    };
    return cmocka_run_group_tests(tests, setup, pb_test_tmpdir_teardown);
}
