/* The engines' option rules, described once (engines/engine_rules.json):
 * the rows pbench's config checks read (bench/base/engine_rows.c) hold the
 * description's rules, in its order; a description changed on one side
 * only, in a scratch copy, is caught, naming the rule; and each rule's
 * condition names a setting a config has. The torch engine's Python reads
 * the same file (engines/torch/tests/test_shared.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/engine_row.h"
#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "bench/config/spec.h"

static char description[4096];

/* "a, b" from a JSON array of strings, or from a row's NULL-ended list. */
static void json_list(const json_t *array, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < json_array_size(array) && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                                 json_string_value(json_array_get(array, i)));
}

static void row_list(const char *const *list, size_t cap, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < cap && list[i] && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", list[i]);
}

/* One text field of rule k of engine name: described against built; a
 * difference is counted and named in report. */
static int field(const char *name, size_t k, const struct pb_engine_rule *r, const char *key,
                 const char *described, const char *built, char *report, size_t size)
{
    if (strcmp(described ? described : "(null)", built ? built : "(null)") == 0)
        return 0;
    size_t used = strlen(report);
    if (used < size)
        snprintf(report + used, size - used, "%s rule %zu (%s.%s) %s: '%s' described, '%s' built; ",
                 name, k, r ? r->owner : "?", r ? r->option : "?", key,
                 described ? described : "(null)", built ? built : "(null)");
    return 1;
}

/* The differences between engine name's described rules and its row's. */
static int rule_differences(const char *name, const json_t *rules, char *report, size_t size)
{
    const struct pb_engine_row *row = pb_engine_row_named(name);
    size_t built = row ? row->rule_count : 0;
    int n = 0;
    if (json_array_size(rules) != built) {
        char want[32], have[32];
        snprintf(want, sizeof want, "%zu", json_array_size(rules));
        snprintf(have, sizeof have, "%zu", built);
        n += field(name, 0, NULL, "rule count", want, have, report, size);
    }
    for (size_t k = 0; k < built && k < json_array_size(rules); k++) {
        const json_t *d = json_array_get(rules, k);
        const struct pb_engine_rule *r = &row->rules[k];
        char want[256], have[256];
        json_list(json_object_get(d, "allowed"), want, sizeof want);
        row_list(r->allowed, PB_ARRAY_LEN(r->allowed), have, sizeof have);
        n += field(name, k, r, "owner", json_string_value(json_object_get(d, "owner")), r->owner,
                   report, size);
        n += field(name, k, r, "option", json_string_value(json_object_get(d, "option")),
                   r->option, report, size);
        n += field(name, k, r, "allowed", want, have, report, size);
        n += field(name, k, r, "why", json_string_value(json_object_get(d, "why")), r->why, report,
                   size);
        n += field(name, k, r, "when", json_string_value(json_object_get(d, "when")), r->when,
                   report, size);
        n += field(name, k, r, "instead", json_string_value(json_object_get(d, "instead")),
                   r->instead, report, size);
    }
    return n;
}

/* Compares every engine row's rules with the description at path; the
 * number of differences, each named in report. */
static int differences(const char *path, char *report, size_t size)
{
    report[0] = '\0';
    json_t *doc = json_load_file(path, 0, NULL);
    if (!doc) {
        snprintf(report, size, "%s: not readable JSON", path);
        return -1;
    }
    int n = 0;
    for (size_t e = 0; pb_engine_names[e]; e++) {
        const char *name = pb_engine_names[e];
        const struct pb_engine_row *row = pb_engine_row_named(name);
        const json_t *rules = json_object_get(doc, name);
        if (rules || (row && row->rule_count))
            n += rule_differences(name, rules, report, size);
    }
    const char *key;
    json_t *value;
    json_object_foreach(doc, key, value) {
        if (strcmp(key, "about") != 0 && !pb_engine_row_named(key))
            n += field(key, 0, NULL, "engine", key, "no row of that name", report, size);
    }
    json_decref(doc);
    return n;
}

static void test_rows_as_described(void **state)
{
    (void)state;
    char report[4096];
    int n = differences(description, report, sizeof report);
    if (n != 0)
        fail_msg("%s and the engine rows differ: %s", description, report);
}

/* A rule changed in the description only (a scratch copy, as someone who
 * edits it for the Python side would) fails, naming the rule and field. */
static void test_one_sided_change_caught(void **state)
{
    (void)state;
    json_t *doc = json_load_file(description, 0, NULL);
    assert_non_null(doc);
    json_t *rules = json_object_get(doc, "torch");
    assert_true(json_array_size(rules) > 3);
    json_array_set_new(json_object_get(json_array_get(rules, 3), "allowed"), 0,
                       json_string("fast"));
    json_object_set_new(json_array_get(rules, json_array_size(rules) - 1), "when", json_null());
    char scratch[] = "/tmp/pbench-engine-rules-XXXXXX";
    int fd = mkstemp(scratch);
    assert_true(fd >= 0);
    assert_int_equal(json_dumpfd(doc, fd, 0), 0);
    close(fd);
    json_decref(doc);
    char report[4096];
    int n = differences(scratch, report, sizeof report);
    unlink(scratch);
    assert_int_equal(n, 2);
    assert_non_null(strstr(report, "torch rule 3 (jpeg.dct) allowed: 'fast' described, "
                                   "'accurate' built"));
    assert_non_null(strstr(report, "(auto.scale) when: '(null)' described, "
                                   "'loader.torch_decode: torchvision' built"));
}

/* Each rule's condition ("loader.torch_decode: torchvision") names a
 * setting a config has, with a value that setting takes: config.c reads
 * it there. */
static void test_conditions_name_settings(void **state)
{
    (void)state;
    struct pb_spec spec;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_config_load_string("dataset: {path: /data}\npipeline: [read]\n",
                                           "rules.yaml", &spec, msg, sizeof msg),
                     PB_OK);
    for (size_t e = 0; pb_engine_names[e]; e++) {
        const struct pb_engine_row *row = pb_engine_row_named(pb_engine_names[e]);
        for (size_t k = 0; row && k < row->rule_count; k++) {
            const char *conditions[] = {row->rules[k].when, row->rules[k].instead};
            for (size_t c = 0; c < PB_ARRAY_LEN(conditions); c++) {
                const char *when = conditions[c], *colon = when ? strstr(when, ": ") : NULL;
                if (!when)
                    continue;
                if (!colon)
                    fail_msg("%s rule %zu: '%s' is not KEY: VALUE", row->name, k, when);
                char assignment[128];
                snprintf(assignment, sizeof assignment, "%.*s=%s", (int)(colon - when), when,
                         colon + 2);
                if (pb_config_override(&spec, assignment, msg, sizeof msg) != PB_OK)
                    fail_msg("%s rule %zu: %s", row->name, k, msg);
            }
        }
    }
    pb_spec_free(&spec);
}

int main(void)
{
    const char *path = getenv("PBENCH_ENGINE_RULES"), *src = getenv("PBENCH_SOURCE_DIR");
    if (path)
        snprintf(description, sizeof description, "%s", path);
    else
        snprintf(description, sizeof description, "%s/engines/engine_rules.json",
                 src ? src : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_as_described),
        cmocka_unit_test(test_one_sided_change_caught),
        cmocka_unit_test(test_conditions_name_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
