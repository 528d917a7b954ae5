/* Tests of bench/config/config.c against the real stage and decoder registry:
 * a good config and its defaults, `-s` overrides, cross-field validation,
 * the JSON round trip, and bad configs with their exact messages. The YAML
 * loader's own refusals (syntax, kinds of node, unknown keys, values out of
 * range, positions from a file) are tests/test_config_yaml.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "bench/base/engine_row.h"
#include "bench/config/sweep.h"
#include "tests/bad_config.h"


static const char good_yaml[] = "name: smoke\n"
                                "dataset:\n"
                                "  path: /tmp/pbench-data\n"
                                "  shuffle: no\n"
                                "  seed: 7\n"
                                "  shard: 1/2\n"
                                "  generate:\n"
                                "    count: 64\n"
                                "    size_bytes: 1024\n"
                                "pipeline:\n"
                                "  - read:\n"
                                "  - decode:\n"
                                "      decoder: null\n"
                                "      width: 64\n"
                                "      cost_us: 12.5\n"
                                "loader:\n"
                                "  workers: 4\n"
                                "  pin_memory: on\n"
                                "run:\n"
                                "  on_error: fail\n"
                                "  max_time_s: 3\n";

/* The registry's names, joined as messages list them. */
static char stage_list[PB_MSG_MAX / 2];
static char decoder_list[PB_MSG_MAX / 2];
static char null_keys[PB_MSG_MAX / 2 + 16];

static void append_name(char *list, size_t size, const char *name)
{
    size_t used = strlen(list);
    snprintf(list + used, size - used, "%s%s", used ? ", " : "", name);
}

static int setup_names(void **state)
{
    (void)state;
    size_t count;
    const struct pb_stage_ops *const *stages = pb_stage_all(&count);
    for (size_t i = 0; i < count; i++)
        append_name(stage_list, sizeof stage_list, stages[i]->name);
    const struct pb_decoder_ops *const *decoders = pb_decoder_all(&count);
    for (size_t i = 0; i < count; i++)
        append_name(decoder_list, sizeof decoder_list, decoders[i]->name);
    const struct pb_decoder_ops *null = pb_decoder_find("null");
    if (!null)
        return -1;
    char names[PB_MSG_MAX / 2];
    pb_opt_names(null->opts, names, sizeof names);
    snprintf(null_keys, sizeof null_keys, "decoder, %s", names);
    return 0;
}

/* The text of one option of a stage or decoder options struct. */
static const char *value_of(const struct pb_opt *table, const void *base, const char *name)
{
    static char buf[PB_PATH_MAX];
    const struct pb_opt *opt = pb_opt_find(table, name);
    assert_non_null(opt);
    pb_opt_format(opt, base, buf, sizeof buf);
    return buf;
}

static void load_good(struct pb_spec *spec)
{
    char msg[PB_MSG_MAX] = "";
    int rc = pb_config_load_string(good_yaml, "good.yaml", spec, msg, sizeof msg);
    if (rc != PB_OK)
        fail_msg("good config rejected: %s", msg);
    rc = pb_config_validate(spec, msg, sizeof msg);
    if (rc != PB_OK)
        fail_msg("good config invalid: %s", msg);
}

static void test_good_config(void **state)
{
    (void)state;
    struct pb_spec spec;
    load_good(&spec);

    assert_string_equal(spec.name, "smoke");
    assert_string_equal(spec.source, "good.yaml");
    assert_string_equal(spec.dataset.path, "/tmp/pbench-data");
    assert_false(spec.dataset.shuffle);
    assert_int_equal(spec.dataset.seed, 7);
    assert_int_equal(spec.dataset.epochs, 0);
    assert_int_equal(spec.dataset.max_samples, 0);
    assert_int_equal(spec.dataset.shard.rank, 1);
    assert_int_equal(spec.dataset.shard.count, 2);
    assert_true(spec.dataset.has_generate);
    assert_int_equal(spec.dataset.generate.kind, PB_GENERATE_FILES);
    assert_int_equal(spec.dataset.generate.count, 64);
    assert_int_equal(spec.dataset.generate.size_bytes, 1024);
    assert_int_equal(spec.dataset.generate.seed, 1);

    assert_int_equal(spec.stage_count, 2);
    const struct pb_stage_spec *read = &spec.stages[0], *decode = &spec.stages[1];
    assert_ptr_equal(read->ops, pb_stage_find("read"));
    assert_int_equal(read->line, 11);
    assert_int_equal(read->column, 5);
    assert_null(read->decoder);
    assert_string_equal(value_of(read->ops->opts, read->opts, "block_kib"), "0");
    assert_ptr_equal(decode->ops, pb_stage_find("decode"));
    assert_ptr_equal(decode->decoder, pb_decoder_find("null"));
    assert_int_equal(decode->line, 12);
    const struct pb_opt *null_opts = decode->decoder->opts;
    assert_string_equal(value_of(null_opts, decode->decoder_opts, "width"), "64");
    assert_string_equal(value_of(null_opts, decode->decoder_opts, "height"), "224");
    assert_string_equal(value_of(null_opts, decode->decoder_opts, "channels"), "3");
    assert_string_equal(value_of(null_opts, decode->decoder_opts, "cost_us"), "12.5");
    assert_string_equal(value_of(null_opts, decode->decoder_opts, "fail_every"), "0");

    assert_int_equal(spec.loader.workers, 4);
    assert_int_equal(spec.loader.batch_size, 32);
    assert_int_equal(spec.loader.prefetch_factor, 2);
    assert_true(spec.loader.pin_memory);
    assert_false(spec.loader.drop_last);
    assert_true(spec.loader.in_order);

    assert_int_equal(spec.run.warmup_batches, 5);
    assert_true(spec.run.min_time_s == 2.0);
    assert_true(spec.run.max_time_s == 3.0);
    assert_int_equal(spec.run.min_samples, 0);
    assert_true(spec.run.target_noise == 0.05);
    assert_true(spec.run.window_s == 0.25);
    assert_int_equal(spec.run.repeats, 3);
    assert_true(spec.run.step_ms == 0.0);
    assert_int_equal(spec.run.on_error, PB_ON_ERROR_FAIL);
    assert_true(spec.run.stage_timing);
    pb_spec_free(&spec);
    pb_spec_free(&spec); /* harmless twice */
}

static void test_minimal_config_defaults(void **state)
{
    (void)state;
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    /* A bare stage name is shorthand for `- read:`; no name means the base name. */
    const char *yaml = "dataset: {path: '/data/*.jpg'}\n"
                       "pipeline: [read, {decode: {decoder: null}}]\n"
                       "loader:\n"
                       "run: ~\n";
    assert_int_equal(pb_config_load_string(yaml, "configs/image.yaml", &spec, msg, sizeof msg),
                     PB_OK);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_OK);
    assert_string_equal(spec.name, "image");
    assert_string_equal(spec.dataset.path, "/data/*.jpg");
    assert_true(spec.dataset.shuffle);
    assert_false(spec.dataset.has_generate);
    assert_int_equal(spec.dataset.shard.count, 1);
    assert_int_equal(spec.stage_count, 2);
    assert_int_equal(spec.loader.workers, 2);
    assert_int_equal(spec.run.on_error, PB_ON_ERROR_SKIP);
    assert_true(spec.run.max_time_s == 10.0);
    /* A stuck stage ends a run near its own time: the default stage
     * timeout follows run.max_time_s (issue 38: it was a fixed 60 s, so a
     * 2-second run took a minute), and a timeout that is set is kept. */
    assert_true(spec.run.stage_timeout_s == 0);
    assert_true(pb_stage_timeout_s(&spec.run) == 10.0 + PB_STAGE_TIMEOUT_GRACE_S);
    spec.run.max_time_s = 2;
    assert_true(pb_stage_timeout_s(&spec.run) == 12.0);
    spec.run.stage_timeout_s = 1;
    assert_true(pb_stage_timeout_s(&spec.run) == 1.0);
    pb_spec_free(&spec);
}

static void override_ok(struct pb_spec *spec, const char *assignment)
{
    char msg[PB_MSG_MAX] = "";
    if (pb_config_override(spec, assignment, msg, sizeof msg) != PB_OK)
        fail_msg("-s %s rejected: %s", assignment, msg);
}

static void test_overrides(void **state)
{
    (void)state;
    struct pb_spec spec;
    load_good(&spec);
    const struct pb_stage_spec *decode = &spec.stages[1];

    override_ok(&spec, "loader.workers=8");
    override_ok(&spec, "run.on_error=skip");
    override_ok(&spec, "run.target_noise=0.02");
    override_ok(&spec, "dataset.shard=3/4");
    override_ok(&spec, "dataset.path=/other=dir"); /* split at the first '=' */
    override_ok(&spec, "name=renamed");
    override_ok(&spec, "pipeline.decode.cost_us=50");
    override_ok(&spec, "pipeline.1.height=32");
    override_ok(&spec, "pipeline.0.block_kib=64");
    assert_int_equal(spec.loader.workers, 8);
    assert_int_equal(spec.run.on_error, PB_ON_ERROR_SKIP);
    assert_true(spec.run.target_noise == 0.02);
    assert_int_equal(spec.dataset.shard.rank, 3);
    assert_string_equal(spec.dataset.path, "/other=dir");
    assert_string_equal(spec.name, "renamed");
    const struct pb_opt *null_opts = decode->decoder->opts;
    assert_string_equal(value_of(null_opts, decode->decoder_opts, "cost_us"), "50");
    assert_string_equal(value_of(null_opts, decode->decoder_opts, "height"), "32");
    assert_string_equal(value_of(null_opts, decode->decoder_opts, "width"), "64");
    assert_string_equal(value_of(spec.stages[0].ops->opts, spec.stages[0].opts, "block_kib"),
                        "64");

    /* Choosing the decoder again resets its options to the defaults. */
    override_ok(&spec, "pipeline.decode.decoder=null");
    assert_ptr_equal(decode->decoder, pb_decoder_find("null"));
    assert_string_equal(value_of(null_opts, decode->decoder_opts, "width"), "224");
    assert_string_equal(value_of(null_opts, decode->decoder_opts, "cost_us"), "0");
    pb_spec_free(&spec);
}

static void test_override_generate_and_path(void **state)
{
    (void)state;
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    const char *yaml = "pipeline:\n  - read:\n";
    assert_int_equal(pb_config_load_string(yaml, "nopath.yaml", &spec, msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_ERR_CONFIG);
    assert_string_equal(msg, "nopath.yaml: dataset.path is required (a directory or a glob)");
    assert_false(spec.dataset.has_generate);

    /* Overrides come before validation, so -s can supply what is missing. */
    override_ok(&spec, "dataset.path=/scratch/gen");
    override_ok(&spec, "dataset.generate.count=10");
    assert_true(spec.dataset.has_generate);
    assert_int_equal(spec.dataset.generate.count, 10);
    assert_int_equal(spec.dataset.generate.size_bytes, 65536);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_OK);
    pb_spec_free(&spec);
}

static void test_bad_overrides(void **state)
{
    (void)state;
    char unknown_decoder[PB_MSG_MAX * 2], unknown_null_key[PB_MSG_MAX * 2];
    snprintf(unknown_null_key, sizeof unknown_null_key,
             "-s pipeline.decode.widht=3: unknown key 'pipeline.decode.widht'; did you mean "
             "'width'? allowed: %s",
             null_keys);
    snprintf(unknown_decoder, sizeof unknown_decoder,
             "-s pipeline.decode.decoder=xyzzy: unknown decoder 'xyzzy'; known decoders: %s",
             decoder_list);
    const struct {
        const char *assignment;
        const char *want;
    } cases[] = {
        {"loader.workers=abc",
         "-s loader.workers=abc: loader.workers must be an integer between 0 and 1024, got 'abc'"},
        {"loader.workers=5000",
         "-s loader.workers=5000: loader.workers must be between 0 and 1024, got 5000"},
        {"loader.wrkers=4",
         "-s loader.wrkers=4: unknown key 'loader.wrkers'; did you mean 'workers'? allowed: "
         "workers, batch_size, prefetch_factor, pin_memory, drop_last, in_order, device_prefetch, affinity, engine, "
         "persistent_workers, torch_decode, python, python_path"},
        {"workers", "-s workers: expected KEY=VALUE"},
        {"=4", "-s =4: expected KEY=VALUE"},
        {"lodaer.workers=4",
         "-s lodaer.workers=4: unknown key 'lodaer.workers'; did you mean 'loader'? allowed: "
         "name, dataset, pipeline, loader, run, sweep, gpu, profile, wrap, analysis"},
        {"sweep=loader.workers",
         "-s sweep=loader.workers: the sweep is not one setting: name the setting to sweep and "
         "its values, as in -a loader.workers=1,2,4 (or the config's sweep: section)"},
        {"name.first=x", "-s name.first=x: name is a value, not a section: expected name=VALUE"},
        {"loader=4",
         "-s loader=4: expected loader.KEY=VALUE; keys: workers, batch_size, prefetch_factor, "
         "pin_memory, drop_last, in_order, device_prefetch, affinity, engine, "
         "persistent_workers, torch_decode, python, python_path"},
        {"run.on_error=ignore",
         "-s run.on_error=ignore: run.on_error must be one of: skip, fail; got 'ignore'"},
        {"dataset.shard=2/2",
         "-s dataset.shard=2/2: dataset.shard must be RANK/COUNT with 0 <= RANK < COUNT, got "
         "'2/2'"},
        {"dataset.generate.cont=3",
         "-s dataset.generate.cont=3: unknown key 'dataset.generate.cont'; did you mean "
         "'count'? allowed: kind, count, size_bytes, seed, size, quality, "
         "progressive_fraction, grayscale_fraction, frames, fps, codec, gop, corrupt_fraction, "
         "shards"},
        {"pipeline.decode=4",
         "-s pipeline.decode=4: expected pipeline.STAGE.KEY=VALUE, where STAGE is a stage's "
         "name or position (0 is the first)"},
        {"pipeline.5.width=3",
         "-s pipeline.5.width=3: the pipeline has 2 stages, at positions 0 to 1"},
        {"pipeline.crop.size=3",
         "-s pipeline.crop.size=3: the pipeline has no stage 'crop'; its stages: read, decode"},
        {"pipeline.decode.widht=3", unknown_null_key},
        {"pipeline.1.width=0",
         "-s pipeline.1.width=0: pipeline.1.width must be between 1 and 16384, got 0"},
        {"pipeline.read.decoder=null",
         "-s pipeline.read.decoder=null: unknown key 'pipeline.read.decoder'; allowed: "
         "block_kib"},
        {"pipeline.decode.decoder=xyzzy", unknown_decoder},
    };
    struct pb_spec spec;
    load_good(&spec);
    json_t *before = pb_spec_to_json(&spec);
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        char msg[PB_MSG_MAX] = "";
        int rc = pb_config_override(&spec, cases[i].assignment, msg, sizeof msg);
        if (rc != PB_ERR_CONFIG || strcmp(msg, cases[i].want) != 0)
            fail_msg("-s %s: rc %d\n got: %s\nwant: %s", cases[i].assignment, rc, msg,
                     cases[i].want);
    }
    /* A rejected override changes nothing. */
    json_t *after = pb_spec_to_json(&spec);
    assert_true(json_equal(before, after));
    json_decref(before);
    json_decref(after);
    pb_spec_free(&spec);
}

static void test_invalid_configs(void **state)
{
    (void)state;
    /* Cross-field rules, found by pb_config_validate(). */
    const struct bad_case cases[] = {
        {"pipeline:\n  - read:\n", "bad.yaml: dataset.path is required (a directory or a glob)"},
        {"dataset:\n  path: /data\npipeline: []\n",
         "bad.yaml:3:1: pipeline must list at least one stage, unless dataset.python names your own "
         "Dataset"},
        {HEAD "run:\n  min_time_s: 20\n  max_time_s: 5\n",
         "bad.yaml:8:3: run.min_time_s (20) must not exceed run.max_time_s (5)"},
        {"dataset:\n  path: /data\npipeline:\n  - decode:\n      decoder: null\n  - read:\n",
         "bad.yaml:4:5: stage 'decode' with decoder 'null' needs a stage that reads the samples' "
         "bytes (such as "
         "'read') earlier in the pipeline"},
        {"dataset:\n  path: /data\n  shard: 3/8\n  generate: {count: 4}\npipeline: [read]\n",
         "bad.yaml:3:3: dataset.shard splits the data over 8 ranks but dataset.generate.count is "
         "4; every rank needs at least one sample"},
        {"dataset: {path: /data, max_samples: 10}\npipeline: [read]\nloader: {drop_last: on}\n",
         "bad.yaml:1:24: dataset.max_samples (10) is less than loader.batch_size (32) and "
         "loader.drop_last is on, so no batch would ever be delivered"},
        {"dataset:\n  path: /data\n  generate: {count: 4, shards: 2}\npipeline: [read]\n",
         "bad.yaml:3:24: dataset.generate.shards writes tar shards, which dataset.format: files "
         "does not read; set dataset.format: tar"},
    };
    check_bad_cases(cases, PB_ARRAY_LEN(cases), true);
}

/* What loader.engine can run: each refusal names the engine, the line
 * and column of the stage or option, and what is allowed instead. */
static void test_engine_rules(void **state)
{
    (void)state;
#define JPEG_HEAD "dataset: {path: /data}\nloader: {engine: torch}\npipeline:\n  - read:\n"
    const struct bad_case cases[] = {
        {HEAD "loader: {engine: torch}\n",
         "bad.yaml:5:5: loader.engine torch cannot run decoder 'null' (it is pbench's own); with "
         "torch use jpeg, image, auto or video"},
        {JPEG_HEAD "  - decode: {decoder: jpeg, scale: window}\n",
         "bad.yaml:5:5: loader.engine torch cannot run jpeg's scale: window (PIL decodes whole "
         "images or, with Image.draft, at 1/2, 1/4 and 1/8 (auto); it has no window decode); "
         "allowed with torch: 1, auto, or loader.engine: pbench"},
        {JPEG_HEAD "  - decode: {decoder: jpeg}\n  - to_device:\n",
         "bad.yaml:6:5: loader.engine torch cannot run stage 'to_device' (a device stage: the "
         "torch engine's batches stay on the host); the torch engine runs: read, decode, "
         "resize, center_crop, random_crop, random_resized_crop, flip, color_jitter, normalize "
         "and python stages, on the CPU"},
        {"dataset: {path: /data}\nloader: {engine: torch, in_order: false}\n"
         "pipeline: [read]\n",
         "bad.yaml:2:25: loader.engine torch cannot run loader.in_order: false (the DataLoader "
         "always delivers in order); set it true, or use loader.engine: pbench"},
        /* Once checked by the engine only, now by its row before it starts. */
        {JPEG_HEAD "  - decode: {decoder: jpeg, cmyk: reject}\n",
         "bad.yaml:5:5: loader.engine torch cannot run jpeg's cmyk: reject (PIL converts CMYK "
         "images to RGB and cannot reject them); allowed with torch: convert, or loader.engine: "
         "pbench"},
        {JPEG_HEAD "  - decode: {decoder: auto, cmyk: reject}\n",
         "bad.yaml:5:5: loader.engine torch cannot run auto's cmyk: reject (PIL converts CMYK "
         "images to RGB and cannot reject them); allowed with torch: convert, or loader.engine: "
         "pbench"},
        {"dataset: {path: /data}\nloader: {engine: torch, torch_decode: torchvision}\n"
         "pipeline:\n  - read:\n  - decode: {decoder: jpeg}\n",
         "bad.yaml:5:5: loader.engine torch cannot run jpeg's exif_orientation: true "
         "(torchvision's decode_jpeg cannot apply EXIF orientation); allowed with torch and "
         "loader.torch_decode: torchvision: false, or loader.torch_decode: pil"},
        {"dataset: {path: /data}\nloader: {engine: torch, torch_decode: torchvision}\n"
         "pipeline:\n  - read:\n  - decode: {decoder: jpeg, exif_orientation: false, "
         "scale: auto}\n",
         "bad.yaml:5:5: loader.engine torch cannot run jpeg's scale: auto (torchvision's "
         "decode_jpeg has no DCT scaling); allowed with torch and loader.torch_decode: "
         "torchvision: 1, or loader.torch_decode: pil"},

        {HEAD "  - python: {callable: 'm:f'}\n",
         "bad.yaml:7:5: a python stage runs only on loader.engine: torch (pbench's own engine "
         "runs no Python); set loader.engine: torch"},
        {"dataset: {python: 'm:make'}\n",
         "bad.yaml:1:11: dataset.python runs only on loader.engine: torch (pbench's own engine "
         "runs no Python); set loader.engine: torch"},
        {"dataset: {python: 'm:make'}\nloader: {engine: torch}\npipeline: [read]\n",
         "bad.yaml:3:12: stage 'read' works on files at dataset.path, but dataset.python makes "
         "the samples with its own __getitem__; with dataset.python the pipeline holds only "
         "python stages (or none)"},
        {"dataset: {python: 'm:make'}\nloader: {engine: torch}\n"
         "pipeline: [{python: {callable: nocolon}}]\n",
         "bad.yaml:3:13: pipeline.python.callable must be 'module:function' (e.g. "
         "'my_transforms:add_noise'), got 'nocolon'"},
    };
    /* pbench's color_jitter has no hue, on any engine: its option table
     * refuses it as the file is read. */
    const struct bad_case hue[] = {
        {JPEG_HEAD "  - decode: {decoder: jpeg}\n  - color_jitter: {hue: 0.1}\n",
         "bad.yaml:6:20: unknown key 'pipeline.color_jitter.hue'; allowed: brightness, "
         "contrast, saturation"},
    };
#undef JPEG_HEAD
    check_bad_cases(cases, PB_ARRAY_LEN(cases), true);
    check_bad_cases(hue, PB_ARRAY_LEN(hue), false);
    /* A user's Dataset needs no path nor pipeline; its arguments are a
     * mapping kept as JSON. */
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_config_load_string("dataset:\n  python: 'm:make'\n  args: {root: "
                                           "data/x, n: 3, on: true, list: [1, 'a']}\n"
                                           "loader: {engine: torch}\n",
                                           "ok.yaml", &spec, msg, sizeof msg),
                     PB_OK);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_OK);
    assert_string_equal(spec.dataset.args, "{\"list\":[1,\"a\"],\"n\":3,\"on\":true,\"root\":\"data/x\"}");
    json_t *j = pb_spec_to_json(&spec);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(j, "dataset"), "args"), "n")),
                     3);
    json_decref(j);
    /* -s and -S take a key inside the mapping, nested too: JSON where it
     * is JSON, a string otherwise. */
    assert_int_equal(pb_config_override(&spec, "dataset.args.draft=true", msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_override(&spec, "dataset.args.n=4", msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_override(&spec, "dataset.args.crop.size=[224,224]", msg,
                                        sizeof msg),
                     PB_OK);
    assert_int_equal(pb_config_override(&spec, "dataset.args.mode=fast", msg, sizeof msg), PB_OK);
    assert_string_equal(spec.dataset.args,
                        "{\"crop\":{\"size\":[224,224]},\"draft\":true,\"list\":[1,\"a\"],"
                        "\"mode\":\"fast\",\"n\":4,\"on\":true,\"root\":\"data/x\"}");
    assert_int_equal(pb_config_override(&spec, "dataset.nosuch.x=1", msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "dataset.nosuch"));
    pb_spec_free(&spec);
}

/* A second engine's row, for this test only: the config checks take the
 * engine's name, its stages, decoders, rules and the loader settings it
 * refuses from the row, not from the torch engine's. */
static const struct pb_engine_rule other_rules[] = {
    {"jpeg", "scale", {"1"}, "it decodes whole images", NULL, NULL},
};
static const char *const other_stages[] = {"read", "decode", "resize", NULL};
static const char *const other_decoders[] = {"jpeg", NULL};
static const struct pb_engine_row other_row = {
    .name = "other",
    .title = "the other engine",
    .interpreter = "/bin/sh",
    .stages = other_stages,
    .decoders = other_decoders,
    .rules = other_rules,
    .rule_count = 1,
    .affinity_why = "it runs one thread",
};

static int check_other(const char *yaml, char *msg, size_t msglen)
{
    struct pb_spec spec;
    int rc = pb_config_load_string(yaml, "other.yaml", &spec, msg, msglen);
    if (rc != PB_OK)
        fail_msg("%s", msg);
    rc = pb_config_check_engine(&other_row, &spec, msg, msglen);
    pb_spec_free(&spec);
    return rc;
}

static void test_second_engine_row(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX] = "";
#define OTHER_HEAD "dataset: {path: /data}\npipeline:\n  - read:\n"
    assert_int_equal(check_other(OTHER_HEAD "  - decode: {decoder: jpeg, scale: auto}\n", msg,
                                 sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "other.yaml:4:5: loader.engine other cannot run jpeg's scale: auto "
                             "(it decodes whole images); allowed with other: 1, or "
                             "loader.engine: pbench");
    assert_int_equal(check_other(OTHER_HEAD "  - decode: {decoder: video}\n", msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "other.yaml:4:5: loader.engine other cannot run decoder 'video' (it "
                             "is pbench's own); with other use jpeg");
    assert_int_equal(check_other(OTHER_HEAD "  - decode: {decoder: jpeg}\n  - flip:\n", msg,
                                 sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "other.yaml:5:5: loader.engine other cannot run stage 'flip'; the "
                             "other engine runs: read, decode and resize stages, on the CPU");
    assert_int_equal(check_other("dataset: {path: /data}\nloader: {affinity: compact}\n"
                                 "pipeline: [read]\n",
                                 msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "loader.engine other cannot run loader.affinity (it runs one "
                                "thread)"));
    /* What the torch engine refuses and this row does not: accepted. */
    assert_int_equal(check_other("loader: {in_order: false}\n"
                                 "dataset: {path: /data, cache: direct}\npipeline:\n"
                                 "  - read:\n"
                                 "  - decode: {decoder: jpeg, cmyk: reject}\n",
                                 msg, sizeof msg),
                     PB_OK);
#undef OTHER_HEAD
}

/* A rule over two options names where the file set the first of them; a
 * -s override of a key takes the error to the next key the file still
 * sets, or to the file alone. */
static void test_cross_field_positions(void **state)
{
    (void)state;
    const char *yaml = HEAD "run:\n  min_time_s: 1\n  max_time_s: 5\n";
    struct pb_spec spec;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_config_load_string(yaml, "bad.yaml", &spec, msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_override(&spec, "run.max_time_s=0.5", msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_ERR_CONFIG);
    assert_string_equal(msg, "bad.yaml:8:3: run.min_time_s (1) must not exceed run.max_time_s "
                             "(0.5)");
    assert_int_equal(pb_config_override(&spec, "run.min_time_s=10", msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_override(&spec, "run.max_time_s=5", msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_ERR_CONFIG);
    assert_string_equal(msg, "bad.yaml:7:1: run.min_time_s (10) must not exceed run.max_time_s "
                             "(5)");
    pb_spec_free(&spec);
}

/* The GPU side: `device: gpu` selects a stage's GPU version, which needs a
 * to_device before it; a CPU stage listed after to_device (but before any
 * GPU stage) runs before the copy; gpu and profile are top-level keys. */
#define GPU_HEAD                                                                              \
    "dataset:\n  path: /data\npipeline:\n  - read:\n  - decode:\n      decoder: null\n"

static void test_gpu_configs(void **state)
{
    (void)state;
    const struct bad_case invalid[] = {
        {GPU_HEAD "  - normalize:\n      device: gpu\n",
         "bad.yaml:7:5: stage 'normalize' has device: gpu, so it needs a 'to_device' stage "
         "before it (the batch must be on the GPU)"},
        {GPU_HEAD "  - to_device:\n  - normalize: {device: gpu}\n  - flip:\n",
         "bad.yaml:9:5: stage 'flip' runs per sample in a worker, so it must come before "
         "'normalize', which runs on the GPU"},
        {GPU_HEAD "  - to_device:\n  - to_device:\n",
         "bad.yaml:8:5: the pipeline has two 'to_device' stages; keep one"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(invalid); i++)
        check_bad(&invalid[i], i, true);
    const struct bad_case bad[] = {
        {GPU_HEAD "  - flip: {device: tpu}\n",
         "bad.yaml:7:20: pipeline.flip.device must be one of: cpu, gpu; got 'tpu'"},
        {GPU_HEAD "gpu: maybe\n",
         "bad.yaml:7:6: gpu must be one of: required, optional; got 'maybe'"},
        {GPU_HEAD "profile: {gpu: nsight}\n",
         "bad.yaml:7:16: profile.gpu must be one of: events, cupti; got 'nsight'"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(bad); i++)
        check_bad(&bad[i], i, false);

    /* A valid GPU pipeline: device resolution, overrides and the JSON form. */
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    const char *yaml = GPU_HEAD "  - flip:\n  - to_device: {stream: compute}\n"
                                "  - normalize: {device: gpu, dtype: float16}\n"
                                "gpu: optional\nprofile: {gpu: cupti}\n"
                                "loader: {device_prefetch: 3}\n";
    assert_int_equal(pb_config_load_string(yaml, "gpu.yaml", &spec, msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_OK);
    assert_true(pb_spec_uses_gpu(&spec));
    assert_int_equal(spec.gpu, PB_GPU_OPTIONAL);
    assert_int_equal(spec.profile.gpu, PB_PROFILE_GPU_CUPTI);
    assert_int_equal(spec.loader.device_prefetch, 3);
    assert_true(spec.stages[2].ops->flags & PB_STAGE_WORKER);       /* flip on the CPU */
    assert_true(spec.stages[3].ops->flags & PB_STAGE_TO_DEVICE);
    assert_true(spec.stages[4].ops->flags & PB_STAGE_GPU);          /* normalize on the GPU */
    assert_true(pb_to_device_on_compute(spec.stages[3].opts));
    /* -s moves a stage between devices; a CPU stage after to_device is fine. */
    assert_int_equal(pb_config_override(&spec, "pipeline.normalize.device=cpu", msg, sizeof msg),
                     PB_OK);
    assert_true(spec.stages[4].ops->flags & PB_STAGE_WORKER);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_override(&spec, "pipeline.normalize.device=gpu", msg, sizeof msg),
                     PB_OK);
    assert_int_equal(pb_config_override(&spec, "gpu=required", msg, sizeof msg), PB_OK);
    assert_int_equal(spec.gpu, PB_GPU_REQUIRED);
    json_t *j = pb_spec_to_json(&spec);
    struct pb_spec back;
    assert_int_equal(pb_spec_from_json(j, &back, msg, sizeof msg), PB_OK);
    assert_true(back.stages[4].ops->flags & PB_STAGE_GPU);
    assert_int_equal(back.profile.gpu, PB_PROFILE_GPU_CUPTI);
    assert_int_equal(back.loader.device_prefetch, 3);
    json_decref(j);
    pb_spec_free(&back);
    /* gpu: optional without a device drops to_device and the GPU stages. */
    char dropped[128];
    pb_spec_drop_gpu(&spec, dropped, sizeof dropped);
    assert_string_equal(dropped, "to_device, normalize");
    assert_int_equal(spec.stage_count, 3);
    assert_false(pb_spec_uses_gpu(&spec));
    pb_spec_free(&spec);
}

/* NVDEC (`hwaccel: cuda`) needs a GPU as a GPU stage does: gpu: required
 * stops without one, gpu: optional decodes on the CPU instead and says so;
 * `auto` needs none. */
static void test_gpu_decode_policy(void **state)
{
    (void)state;
    static const char *const yaml =
        "dataset: {path: v}\n"
        "pipeline:\n"
        "  - decode: {decoder: video, hwaccel: %s, shorter_side: 64}\n";
    const char *values[] = {"cuda", "auto", "none"};
    for (int i = 0; i < 3; i++) {
        char text[256], msg[PB_MSG_MAX] = "", dropped[128];
        snprintf(text, sizeof text, yaml, values[i]);
        struct pb_spec spec;
        assert_int_equal(pb_config_load_string(text, "v.yaml", &spec, msg, sizeof msg), PB_OK);
        assert_int_equal(pb_spec_uses_gpu(&spec), i == 0);
        pb_spec_drop_gpu(&spec, dropped, sizeof dropped);
        assert_string_equal(dropped, i == 0 ? "decode.hwaccel: cuda (NVDEC)" : "");
        assert_int_equal(spec.stage_count, 1); /* the decode stays */
        assert_false(pb_spec_uses_gpu(&spec));
        pb_spec_free(&spec);
    }
}

/* Messages that list the registry's names: built from the registry, so a
 * new stage or decoder does not break them. */
static void test_bad_registry_names(void **state)
{
    (void)state;
    char want[4][PB_MSG_MAX * 2];
    snprintf(want[0], sizeof want[0],
             "bad.yaml:5:5: unknown stage 'decod'; did you mean 'decode'? known stages: %s",
             stage_list);
    snprintf(want[1], sizeof want[1],
             "bad.yaml:6:16: unknown decoder 'nul'; did you mean 'null'? known decoders: %s",
             decoder_list);
    snprintf(want[2], sizeof want[2],
             "bad.yaml:6:16: unknown decoder 'xyzzy'; known decoders: %s", decoder_list);
    snprintf(want[3], sizeof want[3],
             "bad.yaml:5:5: pipeline.decode.decoder is required; known decoders: %s",
             decoder_list);
    const struct bad_case cases[] = {
        {"dataset:\n  path: /data\npipeline:\n  - read:\n  - decod:\n", want[0]},
        {"dataset:\n  path: /data\npipeline:\n  - read:\n  - decode:\n      decoder: nul\n",
         want[1]},
        {"dataset:\n  path: /data\npipeline:\n  - read:\n  - decode:\n      decoder: xyzzy\n",
         want[2]},
        {"dataset:\n  path: /data\npipeline:\n  - read:\n  - decode:\n", want[3]},
    };
    check_bad_cases(cases, PB_ARRAY_LEN(cases), false);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    struct pb_spec spec, back;
    char msg[PB_MSG_MAX] = "";
    load_good(&spec);
    json_t *obj = pb_spec_to_json(&spec);
    assert_non_null(obj);

    assert_string_equal(json_string_value(json_object_get(obj, "name")), "smoke");
    json_t *dataset = json_object_get(obj, "dataset");
    assert_string_equal(json_string_value(json_object_get(dataset, "shard")), "1/2");
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(dataset, "generate"), "count")),
                     64);
    json_t *pipeline = json_object_get(obj, "pipeline");
    assert_int_equal(json_array_size(pipeline), 2);
    json_t *read = json_object_get(json_array_get(pipeline, 0), "read");
    assert_true(json_is_integer(json_object_get(read, "block_kib")));
    assert_int_equal(json_integer_value(json_object_get(read, "block_kib")), 0);
    json_t *decode = json_object_get(json_array_get(pipeline, 1), "decode");
    assert_string_equal(json_string_value(json_object_get(decode, "decoder")), "null");
    assert_int_equal(json_integer_value(json_object_get(decode, "width")), 64);
    assert_int_equal(json_integer_value(json_object_get(decode, "height")), 224);
    assert_true(json_real_value(json_object_get(decode, "cost_us")) == 12.5);
    json_t *loader = json_object_get(obj, "loader");
    assert_int_equal(json_integer_value(json_object_get(loader, "batch_size")), 32);
    assert_true(json_is_true(json_object_get(loader, "pin_memory")));
    json_t *run = json_object_get(obj, "run");
    assert_string_equal(json_string_value(json_object_get(run, "on_error")), "fail");
    assert_true(json_real_value(json_object_get(run, "window_s")) == 0.25);

    /* Read back, the spec writes the same JSON. */
    assert_int_equal(pb_spec_from_json(obj, &back, msg, sizeof msg), PB_OK);
    json_t *again = pb_spec_to_json(&back);
    assert_true(json_equal(obj, again));
    assert_int_equal(back.stage_count, 2);
    assert_ptr_equal(back.stages[1].decoder, pb_decoder_find("null"));
    assert_int_equal(back.loader.workers, 4);
    json_decref(again);

    /* generate appears only when the config has it. */
    spec.dataset.has_generate = false;
    json_t *plain = pb_spec_to_json(&spec);
    assert_null(json_object_get(json_object_get(plain, "dataset"), "generate"));
    json_decref(plain);

    json_decref(obj);
    pb_spec_free(&spec);
    pb_spec_free(&back);
}

static void test_json_errors(void **state)
{
    (void)state;
    const struct {
        const char *json;
        const char *want;
    } cases[] = {
        {"[]", "the config must be a JSON object"},
        {"{\"name\": \"x\"}", "pipeline must be an array of stages"},
        {"{\"pipeline\": [{\"decode\": {}}]}", "pipeline.decode.decoder is required"},
        {"{\"pipeline\": [{\"read\": {}, \"decode\": {}}]}",
         "pipeline item 0 must be an object with one key, the stage name"},
        {"{\"pipeline\": [{\"read\": {}}], \"loader\": {\"workers\": \"4\"}}",
         "loader.workers must be an integer, got a string"},
        {"{\"pipeline\": [{\"decode\": {\"decoder\": \"null\", \"width\": 0}}]}",
         "pipeline.decode.width must be between 1 and 16384, got 0"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        json_t *obj = json_loads(cases[i].json, 0, NULL);
        assert_non_null(obj);
        struct pb_spec spec;
        char msg[PB_MSG_MAX] = "";
        int rc = pb_spec_from_json(obj, &spec, msg, sizeof msg);
        pb_spec_free(&spec);
        json_decref(obj);
        if (rc != PB_ERR_CONFIG || strcmp(msg, cases[i].want) != 0)
            fail_msg("case %zu: rc %d\n got: %s\nwant: %s", i, rc, msg, cases[i].want);
    }
}

/* List options (resize.size, normalize.mean, ...) take a YAML sequence,
 * flow or block, or a scalar as a one-element list. */
static void test_list_options(void **state)
{
    (void)state;
    static const char yaml[] = HEAD
        "  - resize: {size: [256, 320], interpolation: area}\n"
        "  - random_resized_crop: {size: 224, scale: [0.5, 1], ratio: [0.75, 1.25]}\n"
        "  - normalize:\n"
        "      mean:\n"
        "        - 0.5\n"
        "        - 0.25\n"
        "        - 0.125\n"
        "      std: 0.5\n";
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    if (pb_config_load_string(yaml, "lists.yaml", &spec, msg, sizeof msg) != PB_OK)
        fail_msg("rejected: %s", msg);
    assert_int_equal(spec.stage_count, 5);
    const struct pb_stage_spec *resize = &spec.stages[2], *rrc = &spec.stages[3],
                               *norm = &spec.stages[4];
    assert_string_equal(value_of(resize->ops->opts, resize->opts, "size"), "[256, 320]");
    assert_string_equal(value_of(rrc->ops->opts, rrc->opts, "size"), "[224]");
    assert_string_equal(value_of(rrc->ops->opts, rrc->opts, "scale"), "[0.5, 1]");
    assert_string_equal(value_of(rrc->ops->opts, rrc->opts, "ratio"), "[0.75, 1.25]");
    assert_string_equal(value_of(norm->ops->opts, norm->opts, "mean"), "[0.5, 0.25, 0.125]");
    assert_string_equal(value_of(norm->ops->opts, norm->opts, "std"), "[0.5]");

    /* -s takes "a,b" or "[a, b]". */
    override_ok(&spec, "pipeline.resize.size=128,96");
    assert_string_equal(value_of(resize->ops->opts, resize->opts, "size"), "[128, 96]");
    override_ok(&spec, "pipeline.2.size=[64, 48]");
    assert_string_equal(value_of(resize->ops->opts, resize->opts, "size"), "[64, 48]");
    override_ok(&spec, "pipeline.normalize.std=[0.2,0.3,0.4]");
    assert_string_equal(value_of(norm->ops->opts, norm->opts, "std"), "[0.2, 0.3, 0.4]");
    assert_int_equal(pb_config_override(&spec, "pipeline.resize.size=64,0", msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "-s pipeline.resize.size=64,0: pipeline.resize.size[1] must be "
                             "between 1 and 16384, got 0");

    /* The JSON round trip keeps them, as arrays. */
    json_t *obj = pb_spec_to_json(&spec);
    assert_non_null(obj);
    struct pb_spec back;
    if (pb_spec_from_json(obj, &back, msg, sizeof msg) != PB_OK)
        fail_msg("round trip rejected: %s", msg);
    json_t *again = pb_spec_to_json(&back);
    assert_true(json_equal(obj, again));
    const json_t *size = json_object_get(
        json_object_get(json_array_get(json_object_get(obj, "pipeline"), 2), "resize"), "size");
    assert_true(json_is_array(size));
    json_decref(obj);
    json_decref(again);
    pb_spec_free(&back);
    pb_spec_free(&spec);
}

/* A copy owns its option blocks and sweep: changing it leaves the source
 * as it was, and both free on their own. */
static void test_spec_copy_is_independent(void **state)
{
    (void)state;
    static const char yaml[] = "name: smoke\n" HEAD "sweep:\n  loader.workers: [1, 2]\n";
    struct pb_spec spec, copy;
    char msg[PB_MSG_MAX] = "";
    if (pb_config_load_string(yaml, "copy.yaml", &spec, msg, sizeof msg) != PB_OK)
        fail_msg("rejected: %s", msg);
    json_t *before = pb_spec_to_json(&spec);
    assert_int_equal(pb_spec_copy(&copy, &spec, msg, sizeof msg), PB_OK);
    json_t *copied = pb_spec_to_json(&copy);
    assert_true(json_equal(before, copied));
    assert_ptr_not_equal(copy.stages[1].decoder_opts, spec.stages[1].decoder_opts);
    assert_null(copy.sweep); /* a copy is one point; the sweep stays with the base */

    override_ok(&copy, "loader.workers=9");
    override_ok(&copy, "pipeline.decode.width=17");
    override_ok(&copy, "dataset.generate.count=5");
    override_ok(&copy, "name=other");
    json_t *after = pb_spec_to_json(&spec);
    assert_true(json_equal(before, after));
    assert_int_equal(spec.sweep->axis_count, 1);
    assert_false(spec.dataset.has_generate);
    assert_string_equal(value_of(copy.stages[1].decoder->opts, copy.stages[1].decoder_opts,
                                 "width"),
                        "17");

    /* A decoder switched in the copy frees only the copy's block. */
    override_ok(&copy, "pipeline.decode.decoder=jpeg");
    assert_ptr_equal(spec.stages[1].decoder, pb_decoder_find("null"));
    json_decref(before);
    json_decref(copied);
    json_decref(after);
    pb_spec_free(&copy);
    pb_spec_free(&spec);
}

/* The sweep is read with the config, once, and typed against it. */
static void test_sweep_loads_with_config(void **state)
{
    (void)state;
    static const char yaml[] = "sweep:\n"
                               "  loader.workers: [1, 4]\n"
                               "  pipeline.decode.cost_us: [0, 2.5]\n"
                               "  dataset.shard: [0/2, 1/2]\n" HEAD;
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    if (pb_config_load_string(yaml, "sweep.yaml", &spec, msg, sizeof msg) != PB_OK)
        fail_msg("rejected: %s", msg);
    assert_non_null(spec.sweep);
    assert_int_equal(spec.sweep->axis_count, 3);
    const struct pb_sweep_axis *workers = &spec.sweep->axes[0], *cost = &spec.sweep->axes[1],
                               *shard = &spec.sweep->axes[2];
    assert_true(workers->resolved);
    assert_ptr_equal(workers->opt, pb_opt_find(pb_loader_opts, "workers"));
    assert_int_equal(workers->typed[1].i, 4);
    assert_true(cost->typed[1].d == 2.5);
    assert_int_equal(shard->typed[1].shard.rank, 1);
    assert_int_equal(shard->typed[1].shard.count, 2);
    /* The resolved config's JSON has no sweep: points carry their axes. */
    json_t *obj = pb_spec_to_json(&spec);
    assert_null(json_object_get(obj, "sweep"));
    json_decref(obj);
    pb_spec_free(&spec);

    /* No sweep section: no sweep. */
    assert_int_equal(pb_config_load_string(HEAD, "plain.yaml", &spec, msg, sizeof msg), PB_OK);
    assert_null(spec.sweep);
    pb_spec_free(&spec);
}

/* A bad sweep value is reported at its own line and column at load. */
static void test_sweep_errors_at_load(void **state)
{
    (void)state;
    char unknown_decoder[PB_MSG_MAX * 2];
    snprintf(unknown_decoder, sizeof unknown_decoder,
             "bad.yaml:8:35: sweep value pipeline.decode.decoder=xyzzy: unknown decoder 'xyzzy'; "
             "known decoders: %s",
             decoder_list);
    char unknown_null_key[PB_MSG_MAX * 2];
    snprintf(unknown_null_key, sizeof unknown_null_key,
             "bad.yaml:8:3: sweep axis pipeline.decode.widht: unknown key "
             "'pipeline.decode.widht'; did you mean 'width'? allowed: %s",
             null_keys);
    const struct bad_case cases[] = {
        {HEAD "sweep:\n  loader.workers: [1, abc]\n",
         "bad.yaml:8:23: sweep value loader.workers=abc: loader.workers must be an integer "
         "between 0 and 1024, got 'abc'"},
        {HEAD "sweep:\n  run.on_error:\n    - skip\n    - ignore\n",
         "bad.yaml:10:7: sweep value run.on_error=ignore: run.on_error must be one of: skip, "
         "fail; got 'ignore'"},
        {HEAD "sweep:\n  loader.wrkers: [1, 2]\n",
         "bad.yaml:8:3: sweep axis loader.wrkers: unknown key 'loader.wrkers'; did you mean "
         "'workers'? allowed: workers, batch_size, prefetch_factor, pin_memory, drop_last, "
         "in_order, device_prefetch, affinity, engine, persistent_workers, torch_decode, python, "
         "python_path"},
        {HEAD "sweep:\n  pipeline.decode.widht: [1, 2]\n", unknown_null_key},
        {HEAD "sweep:\n  pipeline.decode.decoder: [null, xyzzy]\n", unknown_decoder},
    };
    check_bad_cases(cases, PB_ARRAY_LEN(cases), false);
}

/* ---- stage and decoder rules (validate callbacks) ---------------------- */

/* The rules between a stage's options run in pb_config_validate, before
 * any data is made, and name the stage's line and column. */
static void test_stage_rule_before_data(void **state)
{
    (void)state;
    static const char yaml[] = "name: rrc\n"
                               "dataset:\n"
                               "  path: data/rrc-never\n"
                               "  generate: {kind: jpeg, count: 8, size: 64x64}\n"
                               "pipeline:\n"
                               "  - read:\n"
                               "  - decode: {decoder: jpeg}\n"
                               "  - random_resized_crop: {size: 224, scale: [0.9, 0.1]}\n";
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_config_load_string(yaml, "rrc.yaml", &spec, msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_ERR_CONFIG);
    assert_true(strncmp(msg, "rrc.yaml:8:", strlen("rrc.yaml:8:")) == 0);
    assert_string_equal(msg, "rrc.yaml:8:5: pipeline.random_resized_crop.scale must be [lo, hi] "
                             "with lo <= hi, got [0.9, 0.1]");
    pb_spec_free(&spec);
    assert_int_not_equal(access("data/rrc-never", F_OK), 0);
}

/* One case per rule moved out of the stages' and decoders' init. */
static void test_stage_rules(void **state)
{
    (void)state;
    const struct bad_case cases[] = {
        {HEAD "  - resize:\n",
         "bad.yaml:7:5: pipeline.resize needs size: [height, width] or shorter_side: N"},
        {HEAD "  - resize: {size: [256, 320], shorter_side: 256}\n",
         "bad.yaml:7:5: pipeline.resize takes size or shorter_side, not both (size: [height, "
         "width] for an exact size, shorter_side: N to keep the aspect ratio)"},
        {HEAD "  - resize: {size: 256}\n",
         "bad.yaml:7:5: pipeline.resize.size takes [height, width]; for torchvision's "
         "Resize(256), which sizes the shorter side, write shorter_side: 256"},
        {HEAD "  - resize: {size: [1, 2, 3]}\n",
         "bad.yaml:7:5: pipeline.resize.size takes [height, width], got 3 values"},
        {HEAD "  - center_crop: {size: []}\n",
         "bad.yaml:7:5: pipeline.center_crop.size takes N (a square) or [height, width], got 0 "
         "values"},
        {HEAD "  - random_crop: {size: [1, 2, 3]}\n",
         "bad.yaml:7:5: pipeline.random_crop.size takes N (a square) or [height, width], got 3 "
         "values"},
        {HEAD "  - random_resized_crop: {scale: [0.5]}\n",
         "bad.yaml:7:5: pipeline.random_resized_crop.scale takes [lo, hi], got 1 values"},
        {HEAD "  - random_resized_crop: {ratio: [2, 1]}\n",
         "bad.yaml:7:5: pipeline.random_resized_crop.ratio must be [lo, hi] with lo <= hi, got "
         "[2, 1]"},
        {HEAD "  - color_jitter: {brightness: [0.1, 0.2, 0.3]}\n",
         "bad.yaml:7:5: pipeline.color_jitter.brightness takes J (a factor in [1 - J, 1 + J]) "
         "or [lo, hi] with lo <= hi"},
        {HEAD "  - color_jitter: {saturation: [2, 1]}\n",
         "bad.yaml:7:5: pipeline.color_jitter.saturation takes J (a factor in [1 - J, 1 + J]) "
         "or [lo, hi] with lo <= hi"},
        {HEAD "  - normalize: {mean: [0.5, 0.5, 0.5], std: [0.5, 0.5]}\n",
         "bad.yaml:7:5: pipeline.normalize: mean and std need one value each, or one per "
         "channel (got 3 and 2)"},
        {HEAD "  - normalize: {mean: [0, 0, 0, 0, 0], std: 1}\n",
         "bad.yaml:7:5: pipeline.normalize: at most 4 channels, got 5 values"},
        /* The GPU version checks the same rules. */
        {HEAD "  - to_device:\n  - normalize: {device: gpu, mean: [1, 2], std: [1, 2, 3]}\n",
         "bad.yaml:8:5: pipeline.normalize: mean and std need one value each, or one per "
         "channel (got 2 and 3)"},
        /* A decoder's rules, at its decode stage. */
        {"dataset:\n  path: /data\npipeline:\n"
         "  - decode: {decoder: video, size: [64, 48], shorter_side: 32}\n",
         "bad.yaml:4:5: pipeline.decode (decoder: video) takes size or shorter_side, not both"},
        {"dataset:\n  path: /data\npipeline:\n  - decode: {decoder: video, size: [1, 2, 3]}\n",
         "bad.yaml:4:5: pipeline.decode.size takes N (a square) or [height, width], got 3 "
         "values"},
    };
    check_bad_cases(cases, PB_ARRAY_LEN(cases), true);
}

/* -s can break a rule that the file kept: validation after the overrides
 * catches it at the stage's line. */
static void test_stage_rule_after_override(void **state)
{
    (void)state;
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_config_load_string(HEAD "  - resize: {size: [256, 320]}\n", "ov.yaml",
                                           &spec, msg, sizeof msg),
                     PB_OK);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_OK);
    override_ok(&spec, "pipeline.resize.shorter_side=128");
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_ERR_CONFIG);
    assert_string_equal(msg, "ov.yaml:7:5: pipeline.resize takes size or shorter_side, not both "
                             "(size: [height, width] for an exact size, shorter_side: N to keep "
                             "the aspect ratio)");
    override_ok(&spec, "pipeline.resize.size=[]");
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_OK);
    pb_spec_free(&spec);
}

/* device: gpu in a build without CUDA still loads and validates (the run's
 * gpu policy explains it, or drops the stage with gpu: optional); the
 * GPU version says why it is unavailable. */
static void test_gpu_version_without_cuda(void **state)
{
    (void)state;
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_config_load_string(HEAD "  - to_device:\n  - flip: {device: gpu}\n",
                                           "gpu.yaml", &spec, msg, sizeof msg),
                     PB_OK);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_OK);
    const struct pb_stage_ops *flip = spec.stages[3].ops;
    assert_true(flip->flags & PB_STAGE_GPU);
#if PB_HAVE_CUDA
    assert_null(flip->unavailable_reason);
#else
    assert_non_null(flip->unavailable_reason);
    assert_non_null(strstr(flip->unavailable_reason, "without CUDA"));
#endif
    pb_spec_free(&spec);
}

/* ---- issue 16: channels known from the config, run limits ------------- */

/* Loads yaml as "ok.yaml" and validates it; fails the test unless both
 * succeed. */
static void expect_valid(const char *yaml)
{
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    int rc = pb_config_load_string(yaml, "ok.yaml", &spec, msg, sizeof msg);
    if (rc == PB_OK)
        rc = pb_config_validate(&spec, msg, sizeof msg);
    pb_spec_free(&spec);
    if (rc != PB_OK)
        fail_msg("%s\nyaml:\n%s", msg, yaml);
}

/* normalize's mean/std count against the channels a decoder declares from
 * its options, at the normalize stage's line and column (both devices);
 * one value fits any image, and a gray image is repeated into N. */
static void test_channel_mismatch_at_validate(void **state)
{
    (void)state;
    const struct bad_case cases[] = {
        {"dataset:\n  path: /data\npipeline:\n  - read:\n"
         "  - decode: {decoder: null, channels: 4}\n"
         "  - normalize: {mean: [0.5, 0.5, 0.5], std: [0.2, 0.2, 0.2]}\n",
         "bad.yaml:6:5: pipeline.normalize has 3 mean/std values but the decoder writes 4 "
         "channels; give 4 values (one per channel) or one for all (decoder 'null')"},
        {"dataset:\n  path: /data\npipeline:\n  - read:\n  - decode: {decoder: jpeg}\n"
         "  - resize: {size: [32, 32]}\n"
         "  - normalize: {mean: [0.5, 0.5, 0.5, 0.5], std: 0.2}\n",
         "bad.yaml:7:5: pipeline.normalize has 4 mean/std values but the decoder writes 3 "
         "channels; give 3 values (one per channel) or one for all (decoder 'jpeg')"},
        {"dataset:\n  path: /data\npipeline:\n  - decode: {decoder: video}\n"
         "  - to_device:\n  - normalize: {device: gpu, mean: [0.5, 0.5], std: [1, 1]}\n",
         "bad.yaml:6:5: pipeline.normalize has 2 mean/std values but the decoder writes 3 "
         "channels; give 3 values (one per channel) or one for all (decoder 'video')"},
    };
    check_bad_cases(cases, PB_ARRAY_LEN(cases), true);
    expect_valid("dataset:\n  path: /data\npipeline:\n  - read:\n"
                 "  - decode: {decoder: jpeg, output: gray}\n"
                 "  - normalize: {mean: [0.5, 0.5, 0.5], std: [0.2, 0.2, 0.2]}\n");
    expect_valid("dataset:\n  path: /data\npipeline:\n  - read:\n"
                 "  - decode: {decoder: null, channels: 4}\n"
                 "  - normalize: {mean: 0.5, std: 0.2}\n");
    expect_valid("dataset:\n  path: /data\npipeline:\n  - read:\n"
                 "  - decode: {decoder: auto}\n"
                 "  - normalize: {mean: [0.5, 0.5, 0.5], std: [0.2, 0.2, 0.2]}\n");
}

/* run.max_error_pct (0..100, default 50) and run.max_memory_mib (default
 * 0: no limit beyond what is available). */
static void test_run_limit_options(void **state)
{
    (void)state;
    struct pb_spec spec;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_config_load_string(HEAD, "ok.yaml", &spec, msg, sizeof msg), PB_OK);
    assert_true(spec.run.max_error_pct == 50);
    assert_int_equal(spec.run.max_memory_mib, 0);
    assert_int_equal(pb_config_override(&spec, "run.max_error_pct=12.5", msg, sizeof msg), PB_OK);
    assert_true(spec.run.max_error_pct == 12.5);
    assert_int_equal(pb_config_override(&spec, "run.max_memory_mib=2048", msg, sizeof msg), PB_OK);
    assert_int_equal(spec.run.max_memory_mib, 2048);
    assert_int_equal(pb_config_override(&spec, "run.max_error_pct=101", msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "run.max_error_pct"));
    assert_int_equal(pb_config_override(&spec, "run.max_memory_mib=-1", msg, sizeof msg),
                     PB_ERR_CONFIG);
    pb_spec_free(&spec);
}

/* The analysis: section: read from YAML and -s, in the resolved config,
 * its bands kept in order by validation. */
static void test_analysis_section(void **state)
{
    (void)state;
    static const char yaml[] = "name: a\n"
                               "dataset: {path: /tmp}\n"
                               "pipeline:\n"
                               "  - read:\n"
                               "analysis:\n"
                               "  input_bound_high_pct: 40\n";
    struct pb_spec spec;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_config_load_string(yaml, "a.yaml", &spec, msg, sizeof msg), PB_OK);
    assert_true(spec.analysis.input_bound_high_pct == 40);
    assert_true(spec.analysis.input_bound_moderate_pct == 5);
    assert_int_equal(pb_config_override(&spec, "analysis.tie_pct=1.5", msg, sizeof msg), PB_OK);
    assert_true(spec.analysis.tie_pct == 1.5);
    json_t *j = pb_spec_to_json(&spec);
    assert_true(json_number_value(json_object_get(json_object_get(j, "analysis"), "tie_pct")) ==
                1.5);
    json_decref(j);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_OK);
    assert_int_equal(
        pb_config_override(&spec, "analysis.input_bound_moderate_pct=60", msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "analysis.input_bound_moderate_pct (60) must not exceed "
                                "analysis.input_bound_high_pct (40)"));
    pb_spec_free(&spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_analysis_section),
        cmocka_unit_test(test_good_config),
        cmocka_unit_test(test_minimal_config_defaults),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_override_generate_and_path),
        cmocka_unit_test(test_bad_overrides),
        cmocka_unit_test(test_invalid_configs),
        cmocka_unit_test(test_cross_field_positions),
        cmocka_unit_test(test_gpu_configs),
        cmocka_unit_test(test_gpu_decode_policy),
        cmocka_unit_test(test_bad_registry_names),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_json_errors),
        cmocka_unit_test(test_list_options),
        cmocka_unit_test(test_spec_copy_is_independent),
        cmocka_unit_test(test_sweep_loads_with_config),
        cmocka_unit_test(test_sweep_errors_at_load),
        cmocka_unit_test(test_stage_rule_before_data),
        cmocka_unit_test(test_stage_rules),
        cmocka_unit_test(test_stage_rule_after_override),
        cmocka_unit_test(test_gpu_version_without_cuda),
        cmocka_unit_test(test_channel_mismatch_at_validate),
        cmocka_unit_test(test_run_limit_options),
        cmocka_unit_test(test_engine_rules),
        cmocka_unit_test(test_second_engine_row),
    };
    return cmocka_run_group_tests(tests, setup_names, NULL);
}
