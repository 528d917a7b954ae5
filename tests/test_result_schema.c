/* docs/result.schema.json and the validator the tests check every result
 * file with (tests/jsonschema.h): the validator refuses what the schema
 * forbids, and a result pbench writes validates while one with a field the
 * schema does not name, or a wrong type, does not. */
#include "tests/testutil.h"

static json_t *schema;

static int load_schema(void **state)
{
    (void)state;
    schema = pb_test_result_schema();
    return schema ? 0 : -1;
}

static int check(const char *schema_text, const char *doc_text, char *err, size_t errlen)
{
    json_t *s = json_loads(schema_text, 0, NULL), *d = json_loads(doc_text, JSON_DECODE_ANY, NULL);
    assert_non_null(s);
    assert_non_null(d);
    int rc = pb_schema_validate(s, d, err, errlen);
    json_decref(s);
    json_decref(d);
    return rc;
}

static void test_validator_keywords(void **state)
{
    (void)state;
    char err[512];
    const char *s = "{\"type\": \"object\", \"required\": [\"a\"], \"additionalProperties\": false,"
                    " \"properties\": {\"a\": {\"$ref\": \"#/$defs/n\"}, \"b\": {\"type\": "
                    "\"array\", \"items\": {\"enum\": [\"x\", \"y\"]}}},"
                    " \"$defs\": {\"n\": {\"type\": \"integer\", \"minimum\": 0}}}";
    assert_int_equal(check(s, "{\"a\": 1, \"b\": [\"x\", \"y\"]}", err, sizeof(err)), 0);
    assert_int_equal(check(s, "{\"b\": []}", err, sizeof(err)), -1);
    assert_string_equal(err, "(top): required 'a' is missing");
    assert_int_equal(check(s, "{\"a\": -1}", err, sizeof(err)), -1);
    assert_string_equal(err, "a: below the minimum");
    assert_int_equal(check(s, "{\"a\": 1.5}", err, sizeof(err)), -1);
    assert_string_equal(err, "a: not of type \"integer\"");
    assert_int_equal(check(s, "{\"a\": 1, \"b\": [\"x\", \"z\"]}", err, sizeof(err)), -1);
    assert_string_equal(err, "b[1]: not one of the enum's values");
    assert_int_equal(check(s, "{\"a\": 1, \"c\": 0}", err, sizeof(err)), -1);
    assert_string_equal(err, "c: not in the schema (additionalProperties: false)");
    /* A keyword the validator does not check is refused, not ignored. */
    assert_int_equal(check("{\"oneOf\": []}", "1", err, sizeof(err)), -1);
}

/* A result file as pbench writes it: validates; then a field the schema
 * lacks, a wrong type and a missing required field do not. */
static void test_real_result(void **state)
{
    (void)state;
    const char *dir = *pb_test_tmpdir_slot();
    char args[4096], err[1024];
    const char *src = getenv("PBENCH_SOURCE_DIR");
    snprintf(args, sizeof(args),
             "run '%s/configs/null.yaml' -q -s dataset.path=data -s dataset.generate.count=32 "
             "-s dataset.generate.size_bytes=1024 -s run.repeats=2 -s run.warmup_batches=1 "
             "-s run.min_time_s=0.1 -s run.max_time_s=0.2 -a loader.batch_size=8,16 "
             "--no-calibrate -o r.json",
             src);
    char *stderr_text = NULL;
    assert_int_equal(pb_test_run_pbench(dir, args, &stderr_text), 0);
    free(stderr_text);
    json_t *r = pb_test_load_json(dir, "r.json");
    assert_int_equal(json_array_size(json_object_get(r, "points")), 2);
    if (pb_schema_validate(schema, r, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    json_t *point = json_array_get(json_object_get(r, "points"), 0);
    json_object_set_new(point, "novel_figure", json_integer(1));
    assert_int_equal(pb_schema_validate(schema, r, err, sizeof(err)), -1);
    assert_string_equal(err, "points[0].novel_figure: not in the schema (additionalProperties: "
                             "false)");
    json_object_del(point, "novel_figure");
    json_object_set_new(point, "samples_per_s", json_string("fast"));
    assert_int_equal(pb_schema_validate(schema, r, err, sizeof(err)), -1);
    json_object_set_new(point, "samples_per_s", json_real(1.0));
    /* The torch engine's object (docs/engines.md) is optional and typed. */
    json_object_set_new(r, "engine", json_pack("{s s s {s s}}", "name", "torch", "versions",
                                               "torch", "2.1.0"));
    assert_int_equal(pb_schema_validate(schema, r, err, sizeof(err)), 0);
    json_object_del(r, "machine");
    assert_int_equal(pb_schema_validate(schema, r, err, sizeof(err)), -1);
    assert_string_equal(err, "(top): required 'machine' is missing");
    json_decref(r);
}

int main(void)
{
    static char tmpl[] = "/tmp/pbench-schema-XXXXXX";
    pb_test_tmpdir_use(tmpl);
    if (load_schema(NULL) != 0) {
        fprintf(stderr, "PBENCH_SOURCE_DIR is not set: run through ctest\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validator_keywords),
        cmocka_unit_test(test_real_result),
    };
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
