/* A JSON Schema validator for the tests, over jansson: the subset of draft
 * 2020-12 that docs/result.schema.json uses (type, properties, required,
 * additionalProperties, items, enum, minimum, $ref to "#/$defs/NAME"; the
 * annotations are ignored). Anything else in a schema is refused, so the
 * schema cannot quietly say more than is checked. Header-only, like
 * testutil.h: tests/test_result_schema.c tests it, and testutil.h checks
 * every result file a test leaves behind with it. */
#ifndef PB_TEST_JSONSCHEMA_H
#define PB_TEST_JSONSCHEMA_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static inline bool pb_schema_type_is(const json_t *v, const char *type)
{
    if (strcmp(type, "object") == 0)
        return json_is_object(v);
    if (strcmp(type, "array") == 0)
        return json_is_array(v);
    if (strcmp(type, "string") == 0)
        return json_is_string(v);
    if (strcmp(type, "integer") == 0)
        return json_is_integer(v);
    if (strcmp(type, "number") == 0)
        return json_is_number(v);
    if (strcmp(type, "boolean") == 0)
        return json_is_boolean(v);
    return strcmp(type, "null") == 0 && json_is_null(v);
}

static inline int pb_schema_fail(char *err, size_t errlen, const char *at, const char *what)
{
    snprintf(err, errlen, "%s: %s", at[0] ? at : "(top)", what);
    return -1;
}

static inline int pb_schema_check(const json_t *root, const json_t *schema, const json_t *v,
                                  const char *at, char *err, size_t errlen);

static inline int pb_schema_check_object(const json_t *root, const json_t *schema,
                                         const json_t *v, const char *at, char *err,
                                         size_t errlen)
{
    const json_t *props = json_object_get(schema, "properties");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    const json_t *req = json_object_get(schema, "required");
    char child[512], what[256];
    size_t i;
    const json_t *name;
    json_array_foreach(req, i, name) {
        if (!json_object_get(v, json_string_value(name))) {
            snprintf(what, sizeof(what), "required '%s' is missing", json_string_value(name));
            return pb_schema_fail(err, errlen, at, what);
        }
    }
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)v, key, value) {
        snprintf(child, sizeof(child), "%s%s%s", at, at[0] ? "." : "", key);
        const json_t *sub = json_object_get(props, key);
        if (!sub && json_is_false(extra))
            return pb_schema_fail(err, errlen, child,
                                  "not in the schema (additionalProperties: false)");
        if (!sub && json_is_object(extra))
            sub = extra;
        if (sub && pb_schema_check(root, sub, value, child, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* Checks v against schema (a part of root); 0, or -1 with "AT: what" in err. */
static inline int pb_schema_check(const json_t *root, const json_t *schema, const json_t *v,
                                  const char *at, char *err, size_t errlen)
{
    static const char *const known[] = {
        "$schema", "$id", "title", "description", "$defs", "type", "properties", "required",
        "additionalProperties", "items", "enum", "minimum", "$ref"};
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)schema, key, value) {
        bool ok = false;
        for (size_t k = 0; k < sizeof(known) / sizeof(known[0]) && !ok; k++)
            ok = strcmp(key, known[k]) == 0;
        if (!ok)
            return pb_schema_fail(err, errlen, at, "the schema uses a keyword this validator "
                                                   "does not check");
    }
    const char *ref = json_string_value(json_object_get(schema, "$ref"));
    if (ref) {
        const json_t *target = strncmp(ref, "#/$defs/", 8) == 0
                                   ? json_object_get(json_object_get(root, "$defs"), ref + 8)
                                   : NULL;
        if (!target)
            return pb_schema_fail(err, errlen, at, "a $ref to nothing");
        if (pb_schema_check(root, target, v, at, err, errlen) != 0)
            return -1;
    }
    const json_t *type = json_object_get(schema, "type");
    if (type) {
        bool ok = false;
        if (json_is_string(type))
            ok = pb_schema_type_is(v, json_string_value(type));
        size_t i;
        const json_t *t;
        json_array_foreach(type, i, t) ok = ok || pb_schema_type_is(v, json_string_value(t));
        if (!ok) {
            char *want = json_dumps(type, JSON_COMPACT | JSON_ENCODE_ANY);
            char what[256];
            snprintf(what, sizeof(what), "not of type %s", want ? want : "?");
            free(want);
            return pb_schema_fail(err, errlen, at, what);
        }
    }
    const json_t *choices = json_object_get(schema, "enum");
    if (choices) {
        bool ok = false;
        size_t i;
        const json_t *c;
        json_array_foreach(choices, i, c) ok = ok || json_equal((json_t *)c, (json_t *)v);
        if (!ok)
            return pb_schema_fail(err, errlen, at, "not one of the enum's values");
    }
    const json_t *minimum = json_object_get(schema, "minimum");
    if (minimum && json_is_number(v) && json_number_value(v) < json_number_value(minimum))
        return pb_schema_fail(err, errlen, at, "below the minimum");
    if (json_is_object(v) && pb_schema_check_object(root, schema, v, at, err, errlen) != 0)
        return -1;
    const json_t *items = json_object_get(schema, "items");
    if (items && json_is_array(v)) {
        size_t i;
        const json_t *item;
        char child[512];
        json_array_foreach(v, i, item) {
            snprintf(child, sizeof(child), "%s[%zu]", at, i);
            if (pb_schema_check(root, items, item, child, err, errlen) != 0)
                return -1;
        }
    }
    return 0;
}

/* Checks a document against a whole schema. */
static inline int pb_schema_validate(const json_t *schema, const json_t *doc, char *err,
                                     size_t errlen)
{
    return pb_schema_check(schema, schema, doc, "", err, errlen);
}

#endif
