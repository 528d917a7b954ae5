/* Sweep axes: parsing with positions in errors, the Cartesian product with
 * zip groups and exclude rules, -a overrides, and typed axes in JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "bench/config/sweep.h"

static struct pb_sweep sweep;
static struct pb_sweep_point points[PB_SWEEP_MAX_POINTS];
static char msg[PB_MSG_MAX];

static long load(const char *yaml)
{
    if (pb_sweep_load_string(yaml, "s.yaml", &sweep, msg, sizeof(msg)) != PB_OK)
        fail_msg("load failed: %s", msg);
    return pb_sweep_points(&sweep, points, PB_SWEEP_MAX_POINTS, msg, sizeof(msg));
}

static void test_cartesian_product_order(void **state)
{
    (void)state;
    long n = load("name: x\n"
                  "sweep:\n"
                  "  loader.workers: [1, 2, 4]\n"
                  "  loader.batch_size: [32, 64]\n");
    assert_int_equal(n, 6);
    assert_int_equal(sweep.axis_count, 2);
    /* First axis slowest. */
    char a[256];
    pb_sweep_assignment(&sweep, &points[0], 0, a, sizeof(a));
    assert_string_equal(a, "loader.workers=1");
    pb_sweep_assignment(&sweep, &points[1], 1, a, sizeof(a));
    assert_string_equal(a, "loader.batch_size=64");
    pb_sweep_assignment(&sweep, &points[5], 0, a, sizeof(a));
    assert_string_equal(a, "loader.workers=4");
    assert_int_equal(sweep.axes[0].line, 3);
    assert_int_equal(sweep.axes[0].column, 3);
}

static void test_zip_and_exclude(void **state)
{
    (void)state;
    long n = load("sweep:\n"
                  "  loader.workers: [1, 2]\n"
                  "  loader.batch_size: [32, 64, 128]\n"
                  "  run.step_ms: [10, 20, 40]\n"
                  "  zip:\n"
                  "    - [loader.batch_size, run.step_ms]\n"
                  "  exclude:\n"
                  "    - {loader.workers: 1, loader.batch_size: 128}\n");
    assert_int_equal(n, 5); /* 2 x 3, less one */
    for (long i = 0; i < n; i++) {
        /* Zipped axes move together. */
        assert_int_equal(points[i].value[1], points[i].value[2]);
        assert_false(points[i].value[0] == 0 && points[i].value[1] == 2);
    }
    json_t *axes = pb_sweep_axes_json(&sweep, &points[4]);
    assert_int_equal(json_integer_value(json_object_get(axes, "loader.workers")), 2);
    assert_int_equal(json_integer_value(json_object_get(axes, "loader.batch_size")), 128);
    json_decref(axes);
}

static void test_no_sweep_is_one_point(void **state)
{
    (void)state;
    assert_int_equal(load("name: x\nloader: {workers: 2}\n"), 1);
    assert_int_equal(sweep.axis_count, 0);
}

static void test_axis_override_and_drop(void **state)
{
    (void)state;
    load("sweep:\n  loader.workers: [1, 2]\n  loader.pin_memory: [false, true]\n");
    assert_int_equal(pb_sweep_set_axis(&sweep, "loader.workers=1,2,4,8", msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_sweep_set_axis(&sweep, "pipeline.decode.scale=[1, auto]", msg, sizeof(msg)),
                     PB_OK);
    pb_sweep_drop_axis(&sweep, "loader.pin_memory");
    assert_int_equal(pb_sweep_points(&sweep, points, PB_SWEEP_MAX_POINTS, msg, sizeof(msg)), 8);
    assert_string_equal(sweep.axes[1].path, "pipeline.decode.scale");
    assert_string_equal(sweep.axes[1].values[1], "auto");
    json_t *axes = pb_sweep_axes_json(&sweep, &points[1]);
    assert_string_equal(json_string_value(json_object_get(axes, "pipeline.decode.scale")), "auto");
    assert_true(json_is_integer(json_object_get(axes, "loader.workers")));
    json_decref(axes);

    assert_int_equal(pb_sweep_set_axis(&sweep, "workers=1,2", msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_string_equal(msg, "-a workers=1,2: 'workers' is not an option path such as loader.workers");
    assert_int_equal(pb_sweep_set_axis(&sweep, "loader.workers", msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_string_equal(msg, "-a loader.workers: expected PATH=V1,V2,... (e.g. loader.workers=1,2,4)");
    assert_int_equal(pb_sweep_set_axis(&sweep, "loader.workers=1,,2", msg, sizeof(msg)),
                     PB_ERR_CONFIG);
}

static void expect_error(const char *yaml, const char *expected)
{
    int rc = pb_sweep_load_string(yaml, "s.yaml", &sweep, msg, sizeof(msg));
    if (rc != PB_ERR_CONFIG || strcmp(msg, expected) != 0)
        fail_msg("yaml:\n%s\n got: %s\nwant: %s", yaml, msg, expected);
}

static void test_errors_name_line_and_column(void **state)
{
    (void)state;
    expect_error("sweep:\n  loader.workers: 4\n",
                 "s.yaml:2:19: sweep axis 'loader.workers' must be a list of values, e.g. [1, 2, 4]");
    expect_error("sweep:\n  workers: [1, 2]\n",
                 "s.yaml:2:3: sweep key 'workers' is not an option path (section.key, e.g. "
                 "loader.workers), nor zip or exclude");
    expect_error("sweep:\n  loader.workers: []\n",
                 "s.yaml:2:19: sweep axis 'loader.workers' has no values");
    expect_error("sweep:\n  loader.workers: [1, 2]\n  zip:\n    - [loader.workers, run.step_ms]\n",
                 "s.yaml:4:24: sweep.zip names 'run.step_ms', which is not a sweep axis");
    expect_error("sweep:\n  loader.workers: [1, 2]\n  run.step_ms: [1, 2, 3]\n  zip:\n"
                 "    - [loader.workers, run.step_ms]\n",
                 "s.yaml:5:24: sweep.zip: axis 'run.step_ms' must have as many values as the "
                 "group's first (2)");
    expect_error("sweep:\n  loader.workers: [1, 2]\n  exclude:\n    - {loader.workers: 3}\n",
                 "s.yaml:4:24: sweep.exclude: '3' is not one of the values of 'loader.workers'");
    expect_error("sweep: [1, 2]\n",
                 "s.yaml:1:8: sweep must be a mapping of option paths to lists of values");
    expect_error("sweep:\n  loader.workers: [1, 2\n",
                 "s.yaml:3:1: YAML syntax error: did not find expected ',' or ']'");
}


/* A valid dataset and pipeline on two lines. */
#define BASE "dataset: {path: /data}\npipeline: [read, {decode: {decoder: null}}]\n"

static void load_spec(const char *yaml, struct pb_spec *spec)
{
    if (pb_config_load_string(yaml, "s.yaml", spec, msg, sizeof(msg)) != PB_OK)
        fail_msg("load failed: %s", msg);
}

/* Each point is a copy of the base with the typed values written in. */
static void test_apply_typed_values(void **state)
{
    (void)state;
    struct pb_spec base, point;
    load_spec(BASE "sweep:\n"
                   "  loader.workers: [1, 3]\n"
                   "  loader.pin_memory: [false, true]\n"
                   "  pipeline.decode.cost_us: [0, 7.5]\n"
                   "  dataset.generate.count: [16]\n"
                   "  run.on_error: [fail]\n"
                   "  zip:\n"
                   "    - [loader.workers, loader.pin_memory]\n",
              &base);
    assert_int_equal(pb_config_override(&base, "loader.batch_size=8", msg, sizeof(msg)), PB_OK);
    const struct pb_sweep *sw = base.sweep;
    long n = pb_sweep_points(sw, points, PB_SWEEP_MAX_POINTS, msg, sizeof(msg));
    assert_int_equal(n, 4);
    for (long i = 0; i < n; i++) {
        assert_int_equal(pb_spec_copy(&point, &base, msg, sizeof(msg)), PB_OK);
        if (pb_sweep_apply(&point, sw, &points[i], msg, sizeof(msg)) != PB_OK)
            fail_msg("point %ld: %s", i, msg);
        assert_int_equal(pb_config_validate(&point, msg, sizeof(msg)), PB_OK);
        int zip = points[i].value[0], cost = points[i].value[2];
        assert_int_equal(point.loader.workers, zip ? 3 : 1);
        assert_int_equal(point.loader.pin_memory, zip == 1);
        assert_int_equal(point.loader.batch_size, 8); /* the -s override stays */
        assert_true(*(const double *)((const char *)point.stages[1].decoder_opts +
                                      pb_opt_find(point.stages[1].decoder->opts, "cost_us")
                                          ->offset) == (cost ? 7.5 : 0));
        assert_true(point.dataset.has_generate);
        assert_int_equal(point.dataset.generate.count, 16);
        assert_int_equal(point.run.on_error, PB_ON_ERROR_FAIL);
        pb_spec_free(&point);
    }
    /* The base is untouched. */
    assert_int_equal(base.loader.workers, 2);
    assert_false(base.dataset.has_generate);
    pb_spec_free(&base);

    /* A config without a sweep is one point with nothing to apply. */
    load_spec(BASE, &base);
    assert_null(base.sweep);
    assert_int_equal(pb_sweep_points(base.sweep, points, PB_SWEEP_MAX_POINTS, msg, sizeof(msg)),
                     1);
    assert_int_equal(pb_sweep_apply(&base, base.sweep, &points[0], msg, sizeof(msg)), PB_OK);
    json_t *axes = pb_sweep_axes_json(base.sweep, &points[0]);
    assert_int_equal(json_object_size(axes), 0);
    json_decref(axes);
    pb_spec_free(&base);
}

/* A decoder axis goes through the -s path, before the decoder's options;
 * options of a swept decoder are applied as text once it is chosen. */
static void test_apply_decoder_axis(void **state)
{
    (void)state;
    struct pb_spec base, point;
    load_spec(BASE "sweep:\n"
                   "  pipeline.decode.width: [32]\n"
                   "  pipeline.decode.decoder: [null, null]\n",
              &base);
    assert_true(base.sweep->axes[0].resolved);
    assert_null(base.sweep->axes[0].opt);
    long n = pb_sweep_points(base.sweep, points, PB_SWEEP_MAX_POINTS, msg, sizeof(msg));
    assert_int_equal(n, 2);
    assert_int_equal(pb_spec_copy(&point, &base, msg, sizeof(msg)), PB_OK);
    if (pb_sweep_apply(&point, base.sweep, &points[1], msg, sizeof(msg)) != PB_OK)
        fail_msg("apply: %s", msg);
    const struct pb_opt *width = pb_opt_find(point.stages[1].decoder->opts, "width");
    assert_int_equal(*(const int64_t *)((const char *)point.stages[1].decoder_opts +
                                        width->offset),
                     32);
    pb_spec_free(&point);
    pb_spec_free(&base);

    /* jpeg has no width: the point fails, at the value's position. */
    load_spec(BASE "sweep:\n"
                   "  pipeline.decode.decoder: [jpeg]\n"
                   "  pipeline.decode.width: [32]\n",
              &base);
    assert_int_equal(pb_sweep_points(base.sweep, points, PB_SWEEP_MAX_POINTS, msg, sizeof(msg)),
                     1);
    assert_int_equal(pb_spec_copy(&point, &base, msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_sweep_apply(&point, base.sweep, &points[0], msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "s.yaml:5:27: sweep value pipeline.decode.width=32: unknown key "
                                "'pipeline.decode.width'"));
    pb_spec_free(&point);
    pb_spec_free(&base);
}

/* -a axes: a replaced axis is typed at once, a new one by resolve. */
static void test_axis_from_command_line(void **state)
{
    (void)state;
    struct pb_spec base, point;
    load_spec(BASE "sweep:\n  loader.workers: [1, 2]\n", &base);
    assert_int_equal(pb_sweep_set_axis(base.sweep, "loader.workers=1,x", msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "-a loader.workers=x: loader.workers must be an integer between "
                             "0 and 1024, got 'x'");
    assert_int_equal(pb_sweep_set_axis(base.sweep, "loader.workers=6", msg, sizeof(msg)), PB_OK);
    assert_int_equal(base.sweep->axes[0].typed[0].i, 6);
    assert_int_equal(pb_sweep_set_axis(base.sweep, "run.step_ms=1,-1", msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_sweep_resolve(base.sweep, &base, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_string_equal(msg, "-a run.step_ms=-1: run.step_ms must be between 0 and 1000000, "
                             "got -1");
    assert_int_equal(pb_sweep_set_axis(base.sweep, "run.step_ms=1,2", msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_sweep_resolve(base.sweep, &base, msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_sweep_points(base.sweep, points, PB_SWEEP_MAX_POINTS, msg, sizeof(msg)),
                     2);
    assert_int_equal(pb_spec_copy(&point, &base, msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_sweep_apply(&point, base.sweep, &points[1], msg, sizeof(msg)), PB_OK);
    assert_int_equal(point.loader.workers, 6);
    assert_true(point.run.step_ms == 2);
    pb_spec_free(&point);
    pb_spec_free(&base);

    /* A config without a sweep gets one from -a. */
    load_spec(BASE, &base);
    assert_null(base.sweep);
    assert_int_equal(pb_config_sweep_axis(&base, "pipeline.decode.cost_us=1,x", msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "-a pipeline.decode.cost_us=x: pipeline.decode.cost_us must be a "
                             "number between 0 and 10000000, got 'x'");
    assert_int_equal(pb_config_sweep_axis(&base, "pipeline.decode.cost_us=1,2", msg, sizeof(msg)),
                     PB_OK);
    assert_non_null(base.sweep);
    assert_true(base.sweep->axes[0].resolved);
    assert_true(base.sweep->axes[0].typed[1].d == 2);
    pb_spec_free(&base);
}

/* The point count is a product: a sweep of 32^12 points is refused at
 * once, not enumerated. */
static void test_huge_sweep_counted_not_enumerated(void **state)
{
    (void)state;
    char yaml[8192] = "sweep:\n";
    for (int a = 0; a < PB_SWEEP_MAX_AXES; a++) {
        char line[256];
        int used = snprintf(line, sizeof(line), "  axis.a%d: [", a);
        for (int v = 0; v < PB_SWEEP_MAX_VALUES; v++)
            used += snprintf(line + used, sizeof(line) - (size_t)used, "%s%d", v ? ", " : "", v);
        snprintf(line + used, sizeof(line) - (size_t)used, "]\n");
        strcat(yaml, line);
    }
    strcat(yaml, "  exclude:\n    - {axis.a0: 0}\n");
    if (pb_sweep_load_string(yaml, "s.yaml", &sweep, msg, sizeof(msg)) != PB_OK)
        fail_msg("load failed: %s", msg);
    uint64_t start = pb_now_ns();
    long n = pb_sweep_points(&sweep, points, PB_SWEEP_MAX_POINTS, msg, sizeof(msg));
    assert_int_equal(n, 1L << 60); /* 32^12, exclusions not subtracted */
    assert_true(pb_now_ns() - start < 1000000000ull);
}

/* The sweep's own loader caps nesting depth too, at the line and column
 * of the collection that crossed it. */
static void test_deep_sweep_fails_fast(void **state)
{
    (void)state;
    enum { DEPTH = 100000 };
    char *yaml = malloc(2 * DEPTH + 16);
    assert_non_null(yaml);
    char *end = yaml + sprintf(yaml, "sweep: ");
    memset(end, '[', DEPTH);
    memset(end + DEPTH, ']', DEPTH);
    end[2 * DEPTH] = '\0';
    assert_int_equal(pb_sweep_load_string(yaml, "s.yaml", &sweep, msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "s.yaml:1:71: the YAML nests deeper than 64 levels");
    free(yaml);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cartesian_product_order),
        cmocka_unit_test(test_zip_and_exclude),
        cmocka_unit_test(test_no_sweep_is_one_point),
        cmocka_unit_test(test_axis_override_and_drop),
        cmocka_unit_test(test_errors_name_line_and_column),
        cmocka_unit_test(test_apply_typed_values),
        cmocka_unit_test(test_apply_decoder_axis),
        cmocka_unit_test(test_axis_from_command_line),
        cmocka_unit_test(test_huge_sweep_counted_not_enumerated),
        cmocka_unit_test(test_deep_sweep_fails_fast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
