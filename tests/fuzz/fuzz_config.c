/* Fuzz target: the config loader with sweeps and command-line settings.
 * The input is a YAML config. It is loaded as `pbench run` loads one
 * (bench/session/session.c): the YAML, then `-s` overrides, then `-a` axes, each
 * stopping at the first error, then the sweep's points and, for the first
 * few, pb_spec_copy + pb_sweep_apply + pb_config_validate.
 *
 * The overrides and axes come from the input's bytes twice over: its
 * comment lines "#s PATH=VALUE" and "#a PATH=V1,V2" (YAML ignores them, so
 * the fuzzer can grow them freely; see tests/fuzz/config.dict), and one of
 * each from the fixed tables below, picked by a hash of the input.
 *
 * Beyond crashes, sanitizer reports and leaks it checks that every failure
 * comes with a message and that a valid point's JSON (pb_spec_to_json, as
 * a result file stores it) reads back (pb_spec_from_json) into a spec whose
 * JSON is the same. Seeds: the YAML files in configs/ (scripts/fuzz.sh). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/config/config.h"
#include "bench/config/sweep.h"
#include "tests/fuzz/fuzzutil.h"

#define MAX_LINES 4   /* of each kind, "#s" and "#a"            */
#define MAX_POINTS 16 /* pb_sweep_points' cap                   */
#define CHECKED_POINTS 3

static const char *const table_overrides[] = {
    NULL, /* none */
    "loader.workers=0",
    "loader.batch_size=3",
    "run.on_error=fail",
    "pipeline.decode.decoder=jpeg",
    "pipeline.decode.decoder=video",
    "pipeline.1.cost_us=5",
    "pipeline.decode.scale=auto",
    "dataset.generate.kind=jpeg",
    "gpu=optional",
};

static const char *const table_axes[] = {
    NULL, /* none */
    "loader.workers=1,2",
    "loader.batch_size=8,16,32",
    "pipeline.decode.decoder=null,jpeg",
    "pipeline.decode.scale=1,auto",
    "run.step_ms=0,1.5",
    "loader.pin_memory=false,true",
};

/* The assignments of the input's "#s " (kind 's') or "#a " lines, at most
 * MAX_LINES, then the table's pick; copies into lines[], NULL-terminated. */
static int collect(const char *text, char kind, const char *picked, char lines[][256],
                   const char **out)
{
    int count = 0;
    for (const char *p = text; *p && count < MAX_LINES;) {
        size_t len = strcspn(p, "\n");
        if (len >= 3 && p[0] == '#' && p[1] == kind && p[2] == ' ') {
            snprintf(lines[count], 256, "%.*s", (int)(len - 3 < 255 ? len - 3 : 255), p + 3);
            out[count] = lines[count];
            count++;
        }
        p += p[len] ? len + 1 : len;
    }
    if (picked)
        out[count++] = picked;
    out[count] = NULL;
    return count;
}

static void check_failure(int rc, const char *msg, const char *what)
{
    FUZZ_CHECK(rc == PB_OK || msg[0] != 0, "%s failed (%d) without a message", what, rc);
}

/* A spec's JSON reads back into a spec with the same JSON. */
static void check_json_round_trip(const struct pb_spec *spec)
{
    char msg[PB_MSG_MAX] = "";
    json_t *json = pb_spec_to_json(spec);
    FUZZ_CHECK(json != NULL, "pb_spec_to_json returned NULL");
    struct pb_spec back;
    int rc = pb_spec_from_json(json, &back, msg, sizeof(msg));
    if (rc != PB_OK) {
        char *text = json_dumps(json, JSON_COMPACT);
        FUZZ_CHECK(rc == PB_OK, "a valid spec's JSON does not read back: %s\n%s", msg,
                   text ? text : "");
    }
    json_t *again = pb_spec_to_json(&back);
    if (!json_equal(json, again)) {
        char *a = json_dumps(json, JSON_COMPACT), *b = json_dumps(again, JSON_COMPACT);
        FUZZ_CHECK(false, "the spec's JSON changes on a round trip:\n%s\n%s", a ? a : "",
                   b ? b : "");
    }
    json_decref(again);
    json_decref(json);
    pb_spec_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FUZZ_CHECK(text != NULL, "out of memory");
    memcpy(text, data, size);
    text[size] = 0;
    uint64_t h = fuzz_hash(data, size, 0);
    const char *override_pick = table_overrides[h % PB_ARRAY_LEN(table_overrides)];
    const char *axis_pick = table_axes[(h >> 16) % PB_ARRAY_LEN(table_axes)];
    char override_lines[MAX_LINES][256], axis_lines[MAX_LINES][256];
    const char *overrides[MAX_LINES + 2], *axes[MAX_LINES + 2];
    collect(text, 's', override_pick, override_lines, overrides);
    collect(text, 'a', axis_pick, axis_lines, axes);

    struct pb_spec base;
    char msg[PB_MSG_MAX] = "";
    int rc = pb_config_load_string(text, "fuzz.yaml", &base, msg, sizeof(msg));
    check_failure(rc, msg, "pb_config_load_string");
    for (int i = 0; rc == PB_OK && overrides[i]; i++) {
        rc = pb_config_override(&base, overrides[i], msg, sizeof(msg));
        check_failure(rc, msg, "pb_config_override");
    }
    for (int i = 0; rc == PB_OK && axes[i]; i++) {
        rc = pb_config_sweep_axis(&base, axes[i], msg, sizeof(msg));
        check_failure(rc, msg, "pb_config_sweep_axis");
    }
    if (rc == PB_OK) {
        rc = pb_config_validate(&base, msg, sizeof(msg));
        check_failure(rc, msg, "pb_config_validate");
    }
    if (rc == PB_OK)
        check_json_round_trip(&base);

    struct pb_sweep_point points[MAX_POINTS];
    long count =
        rc == PB_OK ? pb_sweep_points(base.sweep, points, MAX_POINTS, msg, sizeof(msg)) : 0;
    FUZZ_CHECK(count >= -1, "pb_sweep_points returned %ld", count);
    check_failure(count < 0 ? PB_ERR_CONFIG : PB_OK, msg, "pb_sweep_points");
    for (long i = 0; i < count && i < CHECKED_POINTS && count <= MAX_POINTS; i++) {
        struct pb_spec point;
        int prc = pb_spec_copy(&point, &base, msg, sizeof(msg));
        if (prc == PB_OK)
            prc = pb_sweep_apply(&point, base.sweep, &points[i], msg, sizeof(msg));
        if (prc == PB_OK)
            prc = pb_config_validate(&point, msg, sizeof(msg));
        check_failure(prc, msg, "a sweep point");
        if (prc == PB_OK)
            check_json_round_trip(&point);
        pb_spec_free(&point);
    }
    pb_spec_free(&base);
    free(text);
    return 0;
}
