/* Tests for bench/config/config_yaml.c, the YAML loader: what it refuses
 * while loading, each as "FILE:LINE:COLUMN: sentence" at the node at
 * fault, naming the option by its full path and, for a bad value, the
 * values it allows (a range, one of a list, true or false; the keys a
 * mapping takes, with a suggestion for a near miss); positions from a
 * file and its base name as the config's name; nesting capped while
 * parsing; a message cut to the caller's buffer. And what it accepts: the
 * same config in block or flow style, quoted or not, loads alike. Rules between options,
 * checked after loading, are tests/test_config.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "tests/bad_config.h"


/* The null decoder's keys, as the message for an unknown one lists them. */
static char null_keys[PB_MSG_MAX / 2 + 16];

static int setup_names(void **state)
{
    (void)state;
    const struct pb_decoder_ops *null = pb_decoder_find("null");
    if (!null)
        return -1;
    char names[PB_MSG_MAX / 2];
    pb_opt_names(null->opts, names, sizeof names);
    snprintf(null_keys, sizeof null_keys, "decoder, %s", names);
    return 0;
}

static void test_bad_configs(void **state)
{
    (void)state;
    char too_many[2048] = "dataset:\n  path: /data\npipeline:\n";
    for (int i = 0; i <= PB_MAX_STAGES; i++)
        strcat(too_many, "  - read:\n");
    char long_name[300] = "name: ";
    char unknown_cost_key[PB_MSG_MAX * 2];
    snprintf(unknown_cost_key, sizeof unknown_cost_key,
             "bad.yaml:5:7: unknown key 'pipeline.decode.cost_ms'; did you mean 'cost_us'? "
             "allowed: %s",
             null_keys);
    memset(long_name + 6, 'x', 130);

    const struct bad_case cases[] = {
        /* Out-of-range and malformed values. */
        {HEAD "loader:\n  workers: 2000\n",
         "bad.yaml:8:12: loader.workers must be between 0 and 1024, got 2000"},
        {HEAD "loader:\n  workers: four\n",
         "bad.yaml:8:12: loader.workers must be an integer between 0 and 1024, got 'four'"},
        {HEAD "loader:\n  batch_size: 1.5\n",
         "bad.yaml:8:15: loader.batch_size must be an integer between 1 and 65536, got '1.5'"},
        {HEAD "run:\n  on_error: ignore\n",
         "bad.yaml:8:13: run.on_error must be one of: skip, fail; got 'ignore'"},
        {HEAD "loader:\n  pin_memory: maybe\n",
         "bad.yaml:8:15: loader.pin_memory must be true or false, got 'maybe'"},
        {HEAD "run:\n  target_noise: abc\n",
         "bad.yaml:8:17: run.target_noise must be a number between 0.001 and 1, got 'abc'"},
        {HEAD "run:\n  max_time_s: 0\n",
         "bad.yaml:8:15: run.max_time_s must be between 0.01 and 86400, got 0"},
        {"dataset:\n  path: /data\n  shard: 4/4\npipeline: [read]\n",
         "bad.yaml:3:10: dataset.shard must be RANK/COUNT with 0 <= RANK < COUNT, got '4/4'"},
        {long_name, "bad.yaml:1:7: name is too long (at most 127 characters)"},
        /* Unknown keys, with and without a suggestion. */
        {HEAD "loadr:\n  workers: 4\n",
         "bad.yaml:7:1: unknown key 'loadr'; did you mean 'loader'? allowed: name, dataset, "
         "pipeline, loader, run, sweep, gpu, profile, wrap, analysis"},
        {HEAD "loader:\n  worker: 4\n",
         "bad.yaml:8:3: unknown key 'loader.worker'; did you mean 'workers'? allowed: workers, "
         "batch_size, prefetch_factor, pin_memory, drop_last, in_order, device_prefetch, affinity, engine, "
         "persistent_workers, torch_decode, python, python_path"},
        {HEAD "run:\n  threads: 4\n",
         "bad.yaml:8:3: unknown key 'run.threads'; allowed: warmup_batches, min_time_s, "
         "max_time_s, min_samples, target_noise, window_s, repeats, step_ms, on_error, "
         "stage_timing, max_error_pct, max_memory_mib, trace, stage_timeout_s"},
        {"dataset:\n  path: /data\n  generat: {count: 4}\npipeline: [read]\n",
         "bad.yaml:3:3: unknown key 'dataset.generat'; did you mean 'generate'? allowed: path, "
         "shuffle, seed, epochs, max_samples, shard, cache, format, shuffle_buffer, python, args, "
         "endpoint, region, profile, addressing, manifest, requests_in_flight, "
         "request_timeout_s, retries, list, list_max_mib, ca_file, generate"},
        {"dataset:\n  path: /data\n  generate:\n    cnt: 4\npipeline: [read]\n",
         "bad.yaml:4:5: unknown key 'dataset.generate.cnt'; did you mean 'count'? allowed: "
         "kind, count, size_bytes, seed, size, quality, progressive_fraction, grayscale_fraction, "
         "frames, fps, codec, gop, corrupt_fraction, shards"},
        {"pipeline:\n  - read: {block_kib: 10240, readahead: 4}\n",
         "bad.yaml:2:30: unknown key 'pipeline.read.readahead'; allowed: block_kib"},
        {"pipeline:\n  - read: {drop_cache: true}\n",
         "bad.yaml:2:12: 'pipeline.read.drop_cache' was removed: set dataset.cache: cold to evict "
         "the dataset's files before each repeat and each file after it is read (or direct for "
         "O_DIRECT reads); see docs/storage.md"},
        /* Wrong kinds of node. */
        {HEAD "loader:\n  workers: [1, 2]\n",
         "bad.yaml:8:12: loader.workers must be a scalar, got a sequence"},
        {HEAD "loader: 4\n", "bad.yaml:7:9: loader must be a mapping, got a scalar"},
        {"dataset:\n  path: /data\npipeline:\n  read: {}\n",
         "bad.yaml:4:3: pipeline must be a sequence of stages, got a mapping"},
        {"pipeline:\n  - read: 5\n",
         "bad.yaml:2:11: pipeline.read must be a mapping of options, got a scalar"},
        {"- read\n", "bad.yaml:1:1: the config must be a mapping with keys name, dataset, "
                     "pipeline, loader, run, sweep, gpu, profile, wrap, analysis, got a sequence"},
        /* Duplicates. */
        {HEAD "loader:\n  workers: 4\n  workers: 8\n",
         "bad.yaml:9:3: duplicate key 'loader.workers' (first set on line 8)"},
        {HEAD "run: {}\nrun: {}\n", "bad.yaml:8:1: duplicate key 'run' (first set on line 7)"},
        /* Pipeline shape. */
        {"dataset:\n  path: /data\n",
         "bad.yaml: pipeline is required (a list of stages, e.g. '- read:' then '- decode:'), "
         "unless dataset.python names your own Dataset"},
        {too_many, "bad.yaml:20:5: pipeline has more than 16 stages"},
        {"pipeline:\n  - read:\n  - decode:\n    decoder: null\n",
         "bad.yaml:3:5: a pipeline item must name one stage, got 2 keys ('decode', 'decoder'); "
         "indent a stage's options under its name"},
        {"pipeline:\n  - read:\n  -\n",
         "bad.yaml:3:4: a pipeline item must be a stage name with its options ('- STAGE:' or "
         "'- STAGE: {KEY: VALUE}'), got nothing"},
        {"pipeline:\n  - read:\n  - decode:\n      decoder: null\n      cost_ms: 3\n",
         unknown_cost_key},
        {"pipeline:\n  - read:\n  - decode: {decoder: null, width: 0}\n",
         "bad.yaml:3:36: pipeline.decode.width must be between 1 and 16384, got 0"},
        /* Syntax and documents. */
        {"dataset:\n  path: /data\nloader:\n  workers: 4\n   batch_size: 8\n",
         "bad.yaml:5:14: YAML syntax error: mapping values are not allowed in this context"},
        {"pipeline: [read, {decode: {decoder: null}}\n",
         "bad.yaml:2:1: YAML syntax error: did not find expected ',' or ']'"},
        {"", "bad.yaml: the config is empty; expected a mapping with keys name, dataset, "
             "pipeline, loader, run, sweep, gpu, profile, wrap, analysis"},
        {"dataset: {path: /a}\npipeline: [read]\n---\nloader: {}\n",
         "bad.yaml:3:1: the file holds more than one YAML document"},
    };
    check_bad_cases(cases, PB_ARRAY_LEN(cases), false);
}

static void test_bad_list_options(void **state)
{
    (void)state;
    const struct bad_case cases[] = {
        {HEAD "  - resize: {size: [256, 0]}\n",
         "bad.yaml:7:26: pipeline.resize.size[1] must be between 1 and 16384, got 0"},
        {HEAD "  - resize: {size: 0}\n",
         "bad.yaml:7:20: pipeline.resize.size must be between 1 and 16384, got 0"},
        {HEAD "  - normalize:\n      mean:\n        - 0.5\n        - abc\n",
         "bad.yaml:10:11: pipeline.normalize.mean[1] must be a number between -1000000 and "
         "1000000, got 'abc'"},
        {HEAD "  - resize: {size: [[1], 2]}\n",
         "bad.yaml:7:21: pipeline.resize.size[0] must be a scalar, got a sequence"},
        {HEAD "  - resize: {size: [1, 2, 3, 4, 5, 6, 7, 8, 9]}\n",
         "bad.yaml:7:45: pipeline.resize.size takes at most 8 values, got 9"},
        {HEAD "  - resize: {size: {h: 1}}\n",
         "bad.yaml:7:20: pipeline.resize.size must be a scalar or a sequence, got a mapping"},
    };
    check_bad_cases(cases, PB_ARRAY_LEN(cases), false);
}

/* Files: positions come from the file, the name from its base name. */
static void test_files(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    char dir[PB_PATH_MAX];
    snprintf(dir, sizeof dir, "%s/pbench-config-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));

    char good[PB_PATH_MAX + 32], bad[PB_PATH_MAX + 32], missing[PB_PATH_MAX + 32];
    snprintf(good, sizeof good, "%s/image.yaml", dir);
    snprintf(bad, sizeof bad, "%s/bad.yaml", dir);
    snprintf(missing, sizeof missing, "%s/missing.yaml", dir);
    FILE *f = fopen(good, "w");
    assert_non_null(f);
    fputs(HEAD "loader:\n  workers: 3\n", f);
    fclose(f);
    f = fopen(bad, "w");
    assert_non_null(f);
    fputs("dataset:\n  path: /data\nloader:\n  workers: 2000\n", f);
    fclose(f);

    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "", want[PB_MSG_MAX + PB_PATH_MAX];
    assert_int_equal(pb_config_load(good, &spec, msg, sizeof msg), PB_OK);
    assert_string_equal(spec.name, "image");
    assert_string_equal(spec.source, good);
    assert_int_equal(spec.loader.workers, 3);
    assert_int_equal(spec.stage_count, 2);
    pb_spec_free(&spec);

    assert_int_equal(pb_config_load(bad, &spec, msg, sizeof msg), PB_ERR_CONFIG);
    snprintf(want, sizeof want, "%s:4:12: loader.workers must be between 0 and 1024, got 2000",
             bad);
    assert_string_equal(msg, want);
    pb_spec_free(&spec);

    /* No file there: a usage error (exit 2), as the README says. */
    assert_int_equal(pb_config_load(missing, &spec, msg, sizeof msg), PB_ERR_CONFIG);
    snprintf(want, sizeof want, "cannot open '%s': No such file or directory", missing);
    assert_string_equal(msg, want);
    pb_spec_free(&spec);

    unlink(good);
    unlink(bad);
    rmdir(dir);
}

static void test_short_message_buffer(void **state)
{
    (void)state;
    struct pb_spec spec;
    char msg[16];
    assert_int_equal(pb_config_load_string(HEAD "loader:\n  worker: 4\n", "bad.yaml", &spec, msg,
                                           sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "bad.yaml:8:3: u");
    pb_spec_free(&spec);
}

/* Nesting is capped while parsing (libyaml is quadratic in depth): a
 * 100000-deep flow sequence fails at the collection that crossed the cap,
 * in the file and in a string, long before the whole input is read. */
static void test_deep_nesting_fails_fast(void **state)
{
    (void)state;
    enum { DEPTH = 100000 };
    static const char prefix[] = "name: deep\npipeline: ";
    char *yaml = malloc(sizeof prefix + 2 * DEPTH);
    assert_non_null(yaml);
    char *end = yaml + sprintf(yaml, "%s", prefix);
    memset(end, '[', DEPTH);
    memset(end + DEPTH, ']', DEPTH);
    end[2 * DEPTH] = '\0';
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    /* The root mapping is level 1, the first '[' (column 11) level 2: the
     * 65th level opens at column 11 + 63. */
    assert_int_equal(pb_config_load_string(yaml, "deep.yaml", &spec, msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "deep.yaml:2:74: the YAML nests deeper than 64 levels");
    pb_spec_free(&spec);

    char path[] = "/tmp/pbench-deep-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
    close(fd);
    assert_int_equal(pb_config_load(path, &spec, msg, sizeof msg), PB_ERR_CONFIG);
    char want[PB_MSG_MAX];
    snprintf(want, sizeof want, "%s:2:74: the YAML nests deeper than 64 levels", path);
    assert_string_equal(msg, want);
    pb_spec_free(&spec);
    unlink(path);
    free(yaml);
}

/* Loads yaml as name and returns the resolved config as JSON (a new
 * reference); fails the test with the loader's message when it refuses. */
static json_t *load_as_json(const char *yaml, const char *name)
{
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    if (pb_config_load_string(yaml, name, &spec, msg, sizeof msg) != PB_OK)
        fail_msg("%s refused: %s\n%s", name, msg, yaml);
    json_t *json = pb_spec_to_json(&spec);
    assert_non_null(json);
    pb_spec_free(&spec);
    return json;
}

/* The same config in block style, in flow style, with comments, quotes
 * and each form a pipeline item takes ('- read', '- read:', '- read: {}')
 * loads to the same spec: the loader reads YAML's nodes, not its layout. */
static void test_styles_load_alike(void **state)
{
    (void)state;
    static const char block[] = "name: styles\n"
                                "dataset:\n"
                                "  path: /data\n"
                                "pipeline:\n"
                                "  - read:\n"
                                "  - decode:\n"
                                "      decoder: null\n"
                                "      cost_us: 12.5\n"
                                "  - resize:\n"
                                "      size: [64, 48]\n"
                                "loader:\n"
                                "  workers: 3\n"
                                "  pin_memory: true\n";
    static const char flow[] = "{name: styles, dataset: {path: /data},\n"
                               " pipeline: [read, {decode: {decoder: null, cost_us: 12.5}},\n"
                               "            {resize: {size: [64, 48]}}],\n"
                               " loader: {workers: 3, pin_memory: true}}\n";
    static const char commented[] = "# a comment\n"
                                    "name: 'styles'   # quoted\n"
                                    "dataset: {path: \"/data\"}\n"
                                    "pipeline:\n"
                                    "  - read: {}\n"
                                    "  - decode: {decoder: \"null\", cost_us: \"12.5\"}\n"
                                    "  - resize:\n"
                                    "      size:\n"
                                    "        - 64\n"
                                    "        - 48\n"
                                    "loader:\n"
                                    "  workers: \"3\"\n"
                                    "  pin_memory: true\n";
    json_t *want = load_as_json(block, "block.yaml");
    json_t *loader = json_object_get(want, "loader");
    assert_int_equal(json_integer_value(json_object_get(loader, "workers")), 3);
    assert_true(json_is_true(json_object_get(loader, "pin_memory")));
    assert_string_equal(json_string_value(json_object_get(want, "name")), "styles");
    const char *const others[] = {flow, commented};
    for (size_t i = 0; i < PB_ARRAY_LEN(others); i++) {
        json_t *got = load_as_json(others[i], "other.yaml");
        if (!json_equal(got, want)) {
            char *a = json_dumps(want, JSON_COMPACT), *b = json_dumps(got, JSON_COMPACT);
            fail_msg("style %zu loads differently:\nwant %s\n got %s", i, a, b);
        }
        json_decref(got);
    }
    json_decref(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_styles_load_alike),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_bad_list_options),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_short_message_buffer),
        cmocka_unit_test(test_deep_nesting_fails_fast),
    };
    return cmocka_run_group_tests(tests, setup_names, NULL);
}
