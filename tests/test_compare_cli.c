/* pbench compare's command line: -o for every form, a --gate that names a
 * stage neither side ran, and two configs checked in full (the engines'
 * refusals included) before either is measured. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/base/hist.h"
#include "bench/result/result.h"
#include "bench/session/interleave.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-compare-cli-XXXXXX";

/* One point of four repeats at rate samples/s, its stages decode (and
 * blur_us of GaussianBlur, when not 0) in every repeat and the point. */
static void fill_point(struct pb_point_result *p, json_t *axes, double rate, double blur_us)
{
    p->axes = axes;
    p->repeat_count = 4;
    p->repeats = calloc(4, sizeof(*p->repeats));
    assert_non_null(p->repeats);
    size_t stages = blur_us > 0 ? 2 : 1;
    for (size_t i = 0; i <= 4; i++) {
        struct pb_stage_result *st = calloc(stages, sizeof(*st));
        assert_non_null(st);
        snprintf(st[0].name, sizeof(st[0].name), "decode");
        snprintf(st[stages - 1].name, sizeof(st[0].name), "%s", stages > 1 ? "GaussianBlur" : "decode");
        double jitter = 1 + 0.01 * (double)((int)(i % 3) - 1);
        for (size_t s = 0; s < stages; s++)
            for (int k = 0; k < 1000; k++)
                pb_hist_add(&st[s].hist, 300000);
        st[0].cpu_ns = (uint64_t)(1000 * 300e3 * jitter);
        if (stages > 1) {
            st[1].cpu_ns = (uint64_t)(1000 * blur_us * 1e3 * jitter);
        }
        if (i < 4) {
            p->repeats[i].wall_s = 1;
            p->repeats[i].samples_per_s = rate * jitter;
            p->repeats[i].stages = st;
            p->repeats[i].stage_count = stages;
        } else {
            p->stages = st;
            p->stage_count = stages;
        }
    }
    p->samples_per_s = rate;
}

/* A result in workdir/name: one point, or (interleaved) the base and new
 * points of a compare of two configs, the new one with a GaussianBlur. */
static void write_result(const char *name, bool interleaved, double blur_us)
{
    struct pb_result r;
    memset(&r, 0, sizeof(r));
    r.schema_version = 1;
    snprintf(r.name, sizeof(r.name), "cli");
    snprintf(r.created, sizeof(r.created), "2026-11-23T10:00:00Z");
    snprintf(r.machine.cpu_model, sizeof(r.machine.cpu_model), "Test CPU");
    r.config = json_pack("{s s}", "name", "cli");
    r.point_count = interleaved ? 2 : 1;
    r.points = calloc(r.point_count, sizeof(*r.points));
    assert_non_null(r.points);
    if (interleaved) {
        r.interleaved = pb_interleaved_new("A.yaml", r.config, "B.yaml", r.config, NULL, 0);
        fill_point(&r.points[0], json_pack("{s s}", PB_INTERLEAVE_AXIS, "base"), 1000, 0);
        fill_point(&r.points[1], json_pack("{s s}", PB_INTERLEAVE_AXIS, "new"), 500, blur_us);
    } else {
        fill_point(&r.points[0], json_object(), blur_us > 0 ? 500 : 1000, blur_us);
    }
    char path[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(path, sizeof(path), "%s/%s", workdir, name);
    if (pb_result_write(&r, path, msg, sizeof(msg)) != PB_OK)
        fail_msg("%s", msg);
    pb_result_free(&r);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(workdir))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[PB_PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* pb_test_run_pbench, failing with pbench's stderr when its exit code is
 * not want. */
static char *run_expecting(const char *args, int want)
{
    char *err;
    int code = pb_test_run_pbench(workdir, args, &err);
    if (code != want)
        fail_msg("pbench %s: exit %d, not %d: %s", args, code, want, err ? err : "");
    return err;
}

static bool exists(const char *name)
{
    char path[PB_PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", workdir, name);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* -o writes the comparison of an interleaved result, in any format, and
 * nothing goes to stdout. */
static void test_output_for_one_result(void **state)
{
    (void)state;
    write_result("AB.json", true, 300);
    char *err;
    err = run_expecting("compare AB.json --format html -o x.html", 0);
    free(err);
    assert_true(exists("x.html"));
    assert_false(exists("out.txt"));
    char path[PB_PATH_MAX];
    snprintf(path, sizeof(path), "%s/x.html", workdir);
    char *page = pb_test_read_file(path, NULL, true);
    assert_non_null(strstr(page, "GaussianBlur"));
    free(page);
    err = run_expecting("compare AB.json -o x.md --format markdown", 0);
    free(err);
    assert_true(exists("x.md"));
}

/* A gate on a stage neither side ran would gate nothing: exit 2, with the
 * stages each side ran, for two result files and for one interleaved. */
static void test_gate_on_unknown_stage(void **state)
{
    (void)state;
    write_result("A.json", false, 0);
    write_result("B.json", false, 300);
    write_result("AB.json", true, 300);
    static const char *const forms[] = {"compare A.json B.json", "compare AB.json"};
    for (size_t f = 0; f < 2; f++) {
        char args[256], *err;
        snprintf(args, sizeof(args), "%s --gate cpu_ns_per_sample.nosuchstage "
                                     "--fail-on-regression", forms[f]);
        err = run_expecting(args, 2);
        pb_test_assert_contains(err, (const char *const[]){"no stage 'nosuchstage'",
                                                           "the base ran: decode",
                                                           "the new ran: decode, GaussianBlur",
                                                           "samples_per_s", NULL});
        free(err);
        snprintf(args, sizeof(args), "%s --gate cpu_ns_per_sample.GaussianBlur "
                                     "--fail-on-regression --force", forms[f]);
        err = run_expecting(args, 3);
        free(err);
    }
}

/* Two configs, the new one refused by the torch engine (a decode it cannot
 * do): exit 2 before the base is measured, the refusal at the new config's
 * line, and no result written. */
static void test_both_configs_checked_first(void **state)
{
    (void)state;
    static const char *const config =
        "name: %s\n"
        "dataset:\n"
        "  path: data/img\n"
        "  generate: {kind: jpeg, count: 32, size: 64x48, seed: 1}\n"
        "pipeline:\n"
        "  - read:\n"
        "  - decode: {decoder: jpeg}\n"
        "loader: {workers: 1, batch_size: 8%s}\n"
        "run: {min_time_s: 0.3, max_time_s: 1, repeats: 2, warmup_batches: 1}\n";
    for (int side = 0; side < 2; side++) {
        char path[PB_PATH_MAX], text[1024];
        snprintf(path, sizeof(path), "%s/%s.yaml", workdir, side ? "B" : "A");
        int n = snprintf(text, sizeof(text), config, side ? "b" : "a",
                         side ? ", engine: torch, torch_decode: torchvision" : "");
        pb_test_write_file(path, text, (size_t)n);
    }
    char *err;
    err = run_expecting("compare A.yaml B.yaml -o ab.json", 2);
    /* The engine's row refuses it at B's line, before either side starts. */
    pb_test_assert_contains(err, (const char *const[]){"B.yaml:7:", "exif_orientation", NULL});
    assert_null(strstr(err, "repeat 1/"));
    free(err);
    assert_false(exists("ab.json"));

    /* What only the engine can find (a Dataset module that does not
     * import) is found by starting B's engine once, before A is measured. */
    if (!pb_test_have_torch())
        return; /* no torch here: the engine cannot start to find it */
    static const char *const own =
        "name: b\ndataset: {python: 'nosuchmodule:make'}\npipeline: []\n"
        "loader: {workers: 1, batch_size: 8, engine: torch}\n"
        "run: {min_time_s: 0.3, max_time_s: 1, repeats: 2, warmup_batches: 1}\n";
    char path[PB_PATH_MAX];
    snprintf(path, sizeof(path), "%s/C.yaml", workdir);
    pb_test_write_file(path, own, strlen(own));
    err = run_expecting("compare A.yaml C.yaml -o ac.json", 2);
    pb_test_assert_contains(err, (const char *const[]){"new (checked before either config was "
                                                       "measured)", "C.yaml:2:", "nosuchmodule",
                                                       NULL});
    assert_null(strstr(err, "repeat 1/"));
    free(err);
    assert_false(exists("ac.json"));
}

/* Two configs measured here with --format given: -o is the comparison in
 * that format (the result goes to its default file), not the result's JSON
 * in a file named .html; without --format, -o names the result. */
static void test_output_for_two_configs(void **state)
{
    (void)state;
    static const char *const config =
        "name: side\n"
        "dataset:\n"
        "  path: data/null\n"
        "  generate: {kind: files, count: 64, size_bytes: 1024, seed: 1}\n"
        "pipeline:\n"
        "  - read:\n"
        "  - decode: {decoder: null, cost_us: 50}\n"
        "loader: {workers: 1, batch_size: 8}\n"
        "run: {min_time_s: 0.2, max_time_s: 0.4, repeats: 2, warmup_batches: 1}\n";
    char path[PB_PATH_MAX];
    snprintf(path, sizeof(path), "%s/S.yaml", workdir);
    pb_test_write_file(path, config, strlen(config));
    char *err = run_expecting("compare S.yaml S.yaml -S pipeline.decode.cost_us=100 "
                              "--format html -o ab.html -q", 0);
    free(err);
    snprintf(path, sizeof(path), "%s/ab.html", workdir);
    char *page = pb_test_read_file(path, NULL, true);
    assert_non_null(strstr(page, "<html"));
    assert_null(strstr(page, "\"schema_version\""));
    free(page);
    err = run_expecting("compare S.yaml S.yaml -o ab.json -q", 0);
    free(err);
    json_t *r = pb_test_load_json(workdir, "ab.json");
    assert_non_null(json_object_get(r, "schema_version"));
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_for_one_result),
        cmocka_unit_test(test_gate_on_unknown_stage),
        cmocka_unit_test(test_both_configs_checked_first),
        cmocka_unit_test(test_output_for_two_configs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
