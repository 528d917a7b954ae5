/* Tests of pipelines/plugin.c: the example plugin (examples/plugin) loads,
 * its option parses and validates from YAML and -s, its stage runs, and
 * the config round-trips through JSON; a missing file, a shared object
 * without the symbols and one built for another ABI version are refused
 * with sentences naming the path, the symbol and both versions. The
 * plugins' folder comes from CMake (PB_TEST_PLUGIN_DIR). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/cli/list.h"
#include "bench/config/config.h"
#include "pipelines/plugin.h"
#include "tests/testutil.h"

#define EXAMPLE PB_TEST_PLUGIN_DIR "/libpbench_example_plugin.so"
#define BAD_ABI PB_TEST_PLUGIN_DIR "/libpbench_test_bad_abi.so"
#define NO_STAGE PB_TEST_PLUGIN_DIR "/libpbench_test_no_stage.so"

/* The pipeline a plugin sits in: read, null decode (8x4 RGB), then the
 * plugin on line 7 with its options after it. */
static const char *yaml_with(const char *plugin_lines, char *buf, size_t buflen)
{
    snprintf(buf, buflen,
             "dataset: {path: /data}\n"
             "pipeline:\n"
             "  - read:\n"
             "  - decode:\n"
             "      decoder: null\n"
             "      width: 8\n"
             "      height: 4\n"
             "%s",
             plugin_lines);
    return buf;
}

static void test_loads_the_example(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX] = "";
    const struct pb_plugin *p = NULL, *again = NULL;
    assert_int_equal(pb_plugin_load(EXAMPLE, NULL, &p, msg, sizeof msg), PB_OK);
    assert_non_null(p);
    assert_string_equal(p->ops->name, "example_gain");
    assert_true(p->ops->flags & PB_STAGE_WORKER);
    assert_non_null(pb_opt_find(p->ops->opts, "gain"));
    /* Loaded once: the same entry, and found from its ops. */
    assert_int_equal(pb_plugin_load(EXAMPLE, NULL, &again, msg, sizeof msg), PB_OK);
    assert_ptr_equal(p, again);
    assert_ptr_equal(pb_plugin_of(p->ops), p);
    assert_null(pb_plugin_of(pb_stage_find("resize")));
}

/* Its options parse from YAML, validate, take -s, and its stage runs on
 * pixels: out = clamp(in * gain + bias). */
static void test_option_parses_and_stage_runs(void **state)
{
    (void)state;
    char yaml[1024], msg[PB_MSG_MAX] = "";
    struct pb_spec spec;
    yaml_with("  - plugin: {path: " EXAMPLE ", gain: 2.0, bias: -10}\n", yaml, sizeof yaml);
    assert_int_equal(pb_config_load_string(yaml, "p.yaml", &spec, msg, sizeof msg), PB_OK);
    assert_int_equal(spec.stage_count, 3);
    const struct pb_stage_spec *st = &spec.stages[2];
    assert_string_equal(st->ops->name, "example_gain");
    assert_int_equal(st->line, 8);
    const struct pb_opt *gain = pb_opt_find(st->ops->opts, "gain");
    const struct pb_opt *bias = pb_opt_find(st->ops->opts, "bias");
    char text[64];
    pb_opt_format(gain, st->opts, text, sizeof text);
    assert_string_equal(text, "2");
    pb_opt_format(bias, st->opts, text, sizeof text);
    assert_string_equal(text, "-10");
    assert_int_equal(pb_config_validate(&spec, msg, sizeof msg), PB_OK);
    assert_int_equal(pb_config_override(&spec, "pipeline.example_gain.bias=5", msg, sizeof msg),
                     PB_OK);
    pb_opt_format(bias, st->opts, text, sizeof text);
    assert_string_equal(text, "5");

    struct pb_stage_plan in = {.shape = {.dtype = PB_DTYPE_U8, .frames = 1, .height = 1,
                                         .width = 2, .channels = 3},
                               .max_bytes = 6};
    struct pb_stage_plan out = {0};
    void *inst = NULL;
    assert_int_equal(st->ops->init(&inst, st->opts, &in, &out, NULL, NULL, msg, sizeof msg),
                     PB_OK);
    assert_int_equal(out.max_bytes, 6);
    const uint8_t pixels[6] = {0, 1, 50, 100, 125, 255};
    uint8_t result[6] = {0};
    struct pb_sample s = {.in = pixels, .in_bytes = 6, .in_shape = in.shape, .out = result,
                          .out_capacity = sizeof result, .msg = msg, .msglen = sizeof msg};
    assert_int_equal(st->ops->process(inst, &s), PB_OK);
    assert_int_equal(s.out_bytes, 6);
    const uint8_t want[6] = {5, 7, 105, 205, 255, 255}; /* 2x + 5, clamped */
    assert_memory_equal(result, want, 6);
    s.out_capacity = 3; /* too small: asks for more, as built-in stages do */
    assert_int_equal(st->ops->process(inst, &s), PB_ERR_NOSPACE);
    assert_int_equal(s.out_bytes, 6);
    st->ops->cleanup(inst);
    pb_spec_free(&spec);
}

/* Out of range at its line and column, like a built-in stage's option;
 * an unknown key says what the plugin takes. */
static void test_bad_options(void **state)
{
    (void)state;
    char yaml[1024], msg[PB_MSG_MAX] = "";
    struct pb_spec spec;
    yaml_with("  - plugin:\n      path: " EXAMPLE "\n      gain: 99\n", yaml, sizeof yaml);
    assert_int_equal(pb_config_load_string(yaml, "p.yaml", &spec, msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "p.yaml:10:13: pipeline.example_gain.gain must be between 0 and 16, "
                             "got 99");
    pb_spec_free(&spec);
    yaml_with("  - plugin: {path: " EXAMPLE ", gian: 2}\n", yaml, sizeof yaml);
    assert_int_equal(pb_config_load_string(yaml, "p.yaml", &spec, msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "unknown key 'pipeline.example_gain.gian'"));
    assert_non_null(strstr(msg, "gain"));
    pb_spec_free(&spec);
    yaml_with("  - plugin: {gain: 2}\n", yaml, sizeof yaml);
    assert_int_equal(pb_config_load_string(yaml, "p.yaml", &spec, msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "p.yaml:8:5: pipeline.plugin.path is required"));
    pb_spec_free(&spec);
}

/* A result's config names the plugin by its path and reads back. */
static void test_json_round_trip(void **state)
{
    (void)state;
    char yaml[1024], msg[PB_MSG_MAX] = "";
    struct pb_spec spec, back;
    yaml_with("  - plugin: {path: " EXAMPLE ", gain: 3}\n", yaml, sizeof yaml);
    assert_int_equal(pb_config_load_string(yaml, "p.yaml", &spec, msg, sizeof msg), PB_OK);
    json_t *json = pb_spec_to_json(&spec);
    assert_non_null(json);
    json_t *item = json_array_get(json_object_get(json, "pipeline"), 2);
    json_t *opts = json_object_get(item, "plugin");
    assert_non_null(opts);
    assert_non_null(strstr(json_string_value(json_object_get(opts, "path")),
                           "libpbench_example_plugin.so"));
    assert_int_equal(pb_spec_from_json(json, &back, msg, sizeof msg), PB_OK);
    assert_ptr_equal(back.stages[2].ops, spec.stages[2].ops);
    assert_memory_equal(back.stages[2].opts, spec.stages[2].opts, spec.stages[2].ops->opts_size);
    json_decref(json);
    pb_spec_free(&back);
    pb_spec_free(&spec);
}

/* `pbench list PATH` shows the plugin's stage and its option table;
 * `pbench list plugin` says how to use one. */
static void test_list_shows_its_options(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX] = "", *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(pb_list_print(out, EXAMPLE, msg, sizeof msg), PB_OK);
    assert_int_equal(pb_list_print(out, "plugin", msg, sizeof msg), PB_OK);
    fclose(out);
    assert_non_null(strstr(text, "example_gain"));
    assert_non_null(strstr(text, "gain                        number 0..16; default 1.25"));
    assert_non_null(strstr(text, "bias                        integer -255..255; default 0"));
    assert_non_null(strstr(text, "A stage loaded from a plugin: - plugin:"));
    free(text);
    out = open_memstream(&text, &len);
    assert_int_equal(pb_list_print(out, "/nonexistent/libgone.so", msg, sizeof msg),
                     PB_ERR_CONFIG);
    fclose(out);
    free(text);
    assert_string_equal(msg, "plugin /nonexistent/libgone.so: no such file");
}

static void test_missing_file(void **state)
{
    (void)state;
    char yaml[1024], msg[PB_MSG_MAX] = "";
    const struct pb_plugin *p = NULL;
    assert_int_equal(pb_plugin_load("/nonexistent/libgone.so", NULL, &p, msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_null(p);
    assert_string_equal(msg, "plugin /nonexistent/libgone.so: no such file");
    /* Relative to the config file's folder, both paths in the sentence. */
    struct pb_spec spec;
    yaml_with("  - plugin: {path: plugins/libgone.so}\n", yaml, sizeof yaml);
    assert_int_equal(pb_config_load_string(yaml, "/etc/pbench/p.yaml", &spec, msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "/etc/pbench/p.yaml:8:20: plugin plugins/libgone.so: no such file "
                             "(looked for /etc/pbench/plugins/libgone.so)");
    pb_spec_free(&spec);
}

static void test_missing_symbol(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX] = "";
    const struct pb_plugin *p = NULL;
    assert_int_equal(pb_plugin_load(NO_STAGE, NULL, &p, msg, sizeof msg), PB_ERR_CONFIG);
    assert_null(p);
    assert_non_null(strstr(msg, "libpbench_test_no_stage.so has no symbol 'pb_plugin_stage'"));
}

static void test_abi_mismatch(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX] = "", want[160];
    const struct pb_plugin *p = NULL;
    assert_int_equal(pb_plugin_load(BAD_ABI, NULL, &p, msg, sizeof msg), PB_ERR_CONFIG);
    assert_null(p);
    assert_non_null(strstr(msg, "libpbench_test_bad_abi.so was built for plugin ABI version"));
    snprintf(want, sizeof want, "version %u, this pbench has version %u",
             PB_PLUGIN_ABI_VERSION + 1000, PB_PLUGIN_ABI_VERSION);
    assert_non_null(strstr(msg, want));
}

static char workdir[] = "/tmp/pbench-plugin-XXXXXX";

/* The binary end to end: configs/plugin.yaml (made short, on 16 small
 * generated JPEGs) runs the example plugin, whose row is in the table and
 * the result; a config naming a missing .so exits 2 with its path. */
static void test_pbench_runs_the_plugin_config(void **state)
{
    (void)state;
    const char *source = getenv("PBENCH_SOURCE_DIR");
    if (!getenv("PBENCH_BINARY") || !source) {
        skip();
        return;
    }
    char args[2048], *err = NULL;
    snprintf(args, sizeof args,
             "run '%s/configs/plugin.yaml' -s dataset.path=pdata -s dataset.generate.count=16 "
             "-s dataset.generate.size=96x64-128x96 -s loader.batch_size=4 -s run.repeats=1 "
             "-s run.warmup_batches=0 -s run.min_time_s=0 -s run.max_time_s=0.3 "
             "-s pipeline.example_gain.gain=1.5 -o r.json",
             source);
    int rc = pb_test_run_pbench(workdir, args, &err);
    if (rc != 0)
        fprintf(stderr, "pbench run configs/plugin.yaml: exit %d: %s\n", rc, err);
    assert_int_equal(rc, 0);
    free(err);
    char path[PB_PATH_MAX];
    snprintf(path, sizeof path, "%s/out.txt", workdir);
    char *out = pb_test_read_file(path, NULL, false);
    assert_non_null(strstr(out, "example_gain"));
    free(out);
    json_t *r = pb_test_load_json(workdir, "r.json");
    json_t *point = json_array_get(json_object_get(r, "points"), 0);
    json_t *stage = json_array_get(json_object_get(point, "stages"), 3);
    assert_string_equal(json_string_value(json_object_get(stage, "name")), "example_gain");
    assert_true(json_integer_value(json_object_get(stage, "count")) > 0);
    json_t *plugin = json_object_get(
        json_array_get(json_object_get(json_object_get(r, "config"), "pipeline"), 3), "plugin");
    assert_true(json_number_value(json_object_get(plugin, "gain")) == 1.5);
    json_decref(r);

    snprintf(path, sizeof path, "%s/missing.yaml", workdir);
    const char yaml[] = "dataset: {path: pdata}\n"
                        "pipeline:\n"
                        "  - read:\n"
                        "  - plugin: {path: ./libnothere.so}\n";
    pb_test_write_file(path, yaml, sizeof yaml - 1);
    rc = pb_test_run_pbench(workdir, "run missing.yaml", &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "missing.yaml:4:20: plugin ./libnothere.so: no such file"));
    free(err);
}

int main(void)
{
    pb_test_tmpdir_use(workdir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loads_the_example),
        cmocka_unit_test(test_option_parses_and_stage_runs),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_list_shows_its_options),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_missing_symbol),
        cmocka_unit_test(test_abi_mismatch),
        cmocka_unit_test(test_pbench_runs_the_plugin_config),
    };
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
