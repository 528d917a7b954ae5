/* JSON values and field tables: the typed reads and writes a JSON file
 * format is built from. A field table lists the flat fields of a struct
 * ({JSON key, type, offset}) once, and drives both writing the struct as a
 * JSON object and reading it back, so the two directions cannot drift.
 * Readers name the key path of a bad value in their message, e.g.
 * "points[0].repeats[1].wall_s: expected a number". */
#include "bench/base/jsonfield.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"

/* Integers are written as JSON integers (int64); the few values that can
 * exceed it (an open-ended bucket edge) are clamped. */
json_t *pb_json_u64(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* Non-finite doubles have no JSON form; they are written as null. */
json_t *pb_json_number(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

int pb_utf8_length(const unsigned char *p)
{
    int n = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
            : p[0] >= 0xe0 && p[0] <= 0xef ? 3
            : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                           : 0;
    unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (p[0] == 0xe0)
        lo = 0xa0;
    else if (p[0] == 0xed)
        hi = 0x9f;
    else if (p[0] == 0xf0)
        lo = 0x90;
    else if (p[0] == 0xf4)
        hi = 0x8f;
    if (n == 0 || p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

json_t *pb_json_text(const char *text)
{
    json_t *s = json_string(text);
    if (s)
        return s;
    size_t len = strlen(text);
    char *fixed = malloc(2 * len + 1); /* a stray byte becomes two */
    if (!fixed)
        return NULL;
    size_t at = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        int n = *p >= 0x80 ? pb_utf8_length(p) : 1;
        if (n > 0) {
            memcpy(fixed + at, p, (size_t)n);
            at += (size_t)n;
            p += n - 1;
        } else { /* U+0080..U+00FF in UTF-8 */
            fixed[at++] = (char)(0xc0 | (*p >> 6));
            fixed[at++] = (char)(0x80 | (*p & 0x3f));
        }
    }
    fixed[at] = '\0';
    s = json_string(fixed);
    free(fixed);
    return s;
}

json_t *pb_json_bytes(const char *text)
{
    json_t *probe = json_string(text);
    if (probe) {
        json_decref(probe);
        return NULL; /* UTF-8: pb_json_text holds it exactly */
    }
    static const char digits[] = "0123456789abcdef";
    size_t len = strlen(text);
    char *hex = malloc(2 * len + 1);
    if (!hex)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        hex[2 * i] = digits[(unsigned char)text[i] >> 4];
        hex[2 * i + 1] = digits[(unsigned char)text[i] & 15];
    }
    hex[2 * len] = '\0';
    json_t *s = json_string(hex);
    free(hex);
    return s;
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool pb_json_bytes_read(const json_t *v, char *buf, size_t buflen)
{
    const char *hex = json_string_value(v);
    size_t len = hex ? strlen(hex) : 0;
    if (!hex || len % 2 || buflen == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (hex_value(hex[i]) < 0 || (i % 2 == 0 && hex[i] == '0' && hex[i + 1] == '0'))
            return false; /* not hex, or a NUL byte no file name has */
    size_t n = len / 2 < buflen - 1 ? len / 2 : buflen - 1;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(hex_value(hex[2 * i]) << 4 | hex_value(hex[2 * i + 1]));
    buf[n] = '\0';
    return true;
}

/* Sets the table's fields of the struct at base into obj, in table order. */
void pb_fields_put(json_t *obj, const void *base, const struct pb_field *fields)
{
    for (const struct pb_field *f = fields; f->key; f++) {
        const char *at = (const char *)base + f->offset;
        json_t *v = NULL;
        switch (f->type) {
        case PB_FIELD_U64: v = pb_json_u64(*(const uint64_t *)at); break;
        case PB_FIELD_DOUBLE: v = pb_json_number(*(const double *)at); break;
        case PB_FIELD_INT: v = json_integer(*(const int *)at); break;
        case PB_FIELD_UINT: v = json_integer((int)*(const unsigned *)at); break;
        case PB_FIELD_BOOL: v = json_boolean(*(const bool *)at); break;
        case PB_FIELD_TEXT: v = json_string(at); break;
        case PB_FIELD_OBJECT: v = pb_fields_to_json(base, f->sub); break;
        }
        json_object_set_new(obj, f->key, v);
    }
}

json_t *pb_fields_to_json(const void *base, const struct pb_field *fields)
{
    json_t *obj = json_object();
    pb_fields_put(obj, base, fields);
    return obj;
}

/* "PATH.KEY" then sep then the sentence into the reader's message. */
static int vfail(struct pb_json_reader *rd, const char *path, const char *key, const char *sep,
                 const char *fmt, va_list ap)
{
    if (rd->msg && rd->msglen) {
        char what[256];
        vsnprintf(what, sizeof(what), fmt, ap);
        snprintf(rd->msg, rd->msglen, "%s%s%s%s%s", path, *path && *key ? "." : "", key, sep,
                 what);
    }
    return PB_ERR;
}

int pb_json_fail(struct pb_json_reader *rd, const char *path, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(rd, path, key, ": ", fmt, ap);
    va_end(ap);
    return rc;
}

/* "PATH.KEY must ..., got ...": a value of the right type out of range. */
static __attribute__((format(printf, 4, 5))) int
range_fail(struct pb_json_reader *rd, const char *path, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(rd, path, key, " ", fmt, ap);
    va_end(ap);
    return rc;
}

/* A double field's flags, checked after it was read as v. */
static int check_double(struct pb_json_reader *rd, const char *path, const char *key,
                        unsigned flags, double v)
{
    if ((flags & PB_FIELD_FINITE) && !isfinite(v))
        return range_fail(rd, path, key, "must be a number%s, got null",
                          flags & PB_FIELD_NONNEG ? " >= 0" : "");
    if ((flags & PB_FIELD_NONNEG) && v < 0)
        return range_fail(rd, path, key, "must be >= 0, got %g", v);
    return PB_OK;
}

/* Key paths longer than PB_JSON_PATH_MAX are cut; they only feed messages. */
const char *pb_json_child_path(char *buf, const char *path, const char *key)
{
    if (snprintf(buf, PB_JSON_PATH_MAX, "%s%s%s", path, *path ? "." : "", key) >= PB_JSON_PATH_MAX)
        buf[PB_JSON_PATH_MAX - 1] = '\0';
    return buf;
}

const char *pb_json_index_path(char *buf, const char *path, const char *key, size_t index)
{
    if (snprintf(buf, PB_JSON_PATH_MAX, "%s%s%s[%zu]", path, *path ? "." : "", key, index) >=
        PB_JSON_PATH_MAX)
        buf[PB_JSON_PATH_MAX - 1] = '\0';
    return buf;
}

int pb_json_get_u64_value(struct pb_json_reader *rd, const json_t *v, const char *path,
                          const char *key, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return pb_json_fail(rd, path, key, "expected a non-negative integer");
    *out = (uint64_t)json_integer_value(v);
    return PB_OK;
}

int pb_json_get_u64(struct pb_json_reader *rd, const json_t *obj, const char *path, const char *key,
                    uint64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    return v ? pb_json_get_u64_value(rd, v, path, key, out) : PB_OK;
}

int pb_json_get_int(struct pb_json_reader *rd, const json_t *obj, const char *path, const char *key,
                    int *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return PB_OK;
    if (!json_is_integer(v))
        return pb_json_fail(rd, path, key, "expected an integer");
    json_int_t i = json_integer_value(v);
    if (i < INT_MIN || i > INT_MAX)
        return pb_json_fail(rd, path, key, "%lld is out of range", (long long)i);
    *out = (int)i;
    return PB_OK;
}

int pb_json_get_double_value(struct pb_json_reader *rd, const json_t *v, const char *path,
                             const char *key, double *out)
{
    if (json_is_null(v)) { /* how non-finite values are written */
        *out = NAN;
        return PB_OK;
    }
    if (!json_is_number(v))
        return pb_json_fail(rd, path, key, "expected a number");
    *out = json_number_value(v);
    return PB_OK;
}

int pb_json_get_double(struct pb_json_reader *rd, const json_t *obj, const char *path,
                       const char *key, double *out)
{
    const json_t *v = json_object_get(obj, key);
    return v ? pb_json_get_double_value(rd, v, path, key, out) : PB_OK;
}

int pb_json_get_bool(struct pb_json_reader *rd, const json_t *obj, const char *path,
                     const char *key, bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return PB_OK;
    if (!json_is_boolean(v))
        return pb_json_fail(rd, path, key, "expected true or false");
    *out = json_is_true(v);
    return PB_OK;
}

int pb_json_get_string(struct pb_json_reader *rd, const json_t *obj, const char *path,
                       const char *key, char *out, size_t size)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        return PB_OK;
    if (!json_is_string(v))
        return pb_json_fail(rd, path, key, "expected a string");
    snprintf(out, size, "%s", json_string_value(v));
    return PB_OK;
}

/* An optional member of one JSON type: *out is NULL when key is missing. */
static int get_member(struct pb_json_reader *rd, const json_t *obj, const char *path,
                      const char *key, json_type type, const char *expected, const json_t **out)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (v && json_typeof(v) != type)
        return pb_json_fail(rd, path, key, "expected %s", expected);
    *out = v;
    return PB_OK;
}

int pb_json_get_object(struct pb_json_reader *rd, const json_t *obj, const char *path,
                       const char *key, const json_t **out)
{
    return get_member(rd, obj, path, key, JSON_OBJECT, "an object", out);
}

int pb_json_get_array(struct pb_json_reader *rd, const json_t *obj, const char *path,
                      const char *key, const json_t **out)
{
    return get_member(rd, obj, path, key, JSON_ARRAY, "an array", out);
}

int pb_json_get_uint(struct pb_json_reader *rd, const json_t *obj, const char *path,
                     const char *key, unsigned *out)
{
    uint64_t v = *out;
    if (pb_json_get_u64(rd, obj, path, key, &v))
        return PB_ERR;
    if (v > UINT_MAX)
        return pb_json_fail(rd, path, key, "%llu is out of range", (unsigned long long)v);
    *out = (unsigned)v;
    return PB_OK;
}

/* Reads the table's fields from obj into the struct at base, in table
 * order; a missing key leaves its field as it is. */
int pb_fields_read(struct pb_json_reader *rd, const json_t *obj, const char *path, void *base,
                   const struct pb_field *fields)
{
    char at[PB_JSON_PATH_MAX];
    for (const struct pb_field *f = fields; f->key; f++) {
        char *field = (char *)base + f->offset;
        const json_t *sub;
        int rc = PB_OK;
        switch (f->type) {
        case PB_FIELD_U64: rc = pb_json_get_u64(rd, obj, path, f->key, (uint64_t *)field); break;
        case PB_FIELD_DOUBLE:
            rc = pb_json_get_double(rd, obj, path, f->key, (double *)field);
            if (rc == PB_OK && json_object_get(obj, f->key))
                rc = check_double(rd, path, f->key, f->flags, *(double *)field);
            break;
        case PB_FIELD_INT: rc = pb_json_get_int(rd, obj, path, f->key, (int *)field); break;
        case PB_FIELD_UINT: rc = pb_json_get_uint(rd, obj, path, f->key, (unsigned *)field); break;
        case PB_FIELD_BOOL: rc = pb_json_get_bool(rd, obj, path, f->key, (bool *)field); break;
        case PB_FIELD_TEXT: rc = pb_json_get_string(rd, obj, path, f->key, field, f->size); break;
        case PB_FIELD_OBJECT:
            rc = pb_json_get_object(rd, obj, path, f->key, &sub);
            if (rc == PB_OK && sub)
                rc = pb_fields_read(rd, sub, pb_json_child_path(at, path, f->key), base, f->sub);
            break;
        }
        if (rc != PB_OK)
            return PB_ERR;
    }
    return PB_OK;
}

/* The same for the parts read leniently: a missing key or a value of
 * another type reads as zero (a string field is left as it is). */
void pb_fields_read_leniently(const json_t *obj, void *base, const struct pb_field *fields)
{
    for (const struct pb_field *f = fields; f->key; f++) {
        char *field = (char *)base + f->offset;
        const json_t *v = json_object_get(obj, f->key);
        switch (f->type) {
        case PB_FIELD_U64: *(uint64_t *)field = (uint64_t)json_integer_value(v); break;
        case PB_FIELD_DOUBLE: *(double *)field = json_number_value(v); break;
        case PB_FIELD_INT: *(int *)field = (int)json_integer_value(v); break;
        case PB_FIELD_UINT: *(unsigned *)field = (unsigned)json_integer_value(v); break;
        case PB_FIELD_BOOL: *(bool *)field = json_is_true(v); break;
        case PB_FIELD_TEXT:
            if (json_is_string(v))
                snprintf(field, f->size, "%s", json_string_value(v));
            break;
        case PB_FIELD_OBJECT:
            if (json_is_object(v))
                pb_fields_read_leniently(v, base, f->sub);
            break;
        }
    }
}

/* A group of parallel arrays: all present arrays must have the same
 * length, which is returned in *count. */
int pb_json_parallel_arrays(struct pb_json_reader *rd, const json_t *obj, const char *path,
                            const char *const *keys, const json_t **arrays, size_t n, size_t *count)
{
    *count = 0;
    bool first = true;
    for (size_t k = 0; k < n; k++) {
        if (pb_json_get_array(rd, obj, path, keys[k], &arrays[k]))
            return PB_ERR;
        if (!arrays[k])
            continue;
        size_t len = json_array_size(arrays[k]);
        if (first)
            *count = len;
        else if (len != *count)
            return pb_json_fail(rd, path, keys[k], "has %zu entries, %s has %zu", len, keys[0],
                                *count);
        first = false;
    }
    return PB_OK;
}

int pb_json_elem_u64(struct pb_json_reader *rd, const json_t *arr, const char *path,
                     const char *key, size_t i, uint64_t *out)
{
    char at[PB_JSON_PATH_MAX];
    const json_t *v = arr ? json_array_get(arr, i) : NULL;
    return v ? pb_json_get_u64_value(rd, v, pb_json_index_path(at, path, key, i), "", out) : PB_OK;
}

int pb_json_elem_double(struct pb_json_reader *rd, const json_t *arr, const char *path,
                        const char *key, size_t i, double *out)
{
    char at[PB_JSON_PATH_MAX];
    const json_t *v = arr ? json_array_get(arr, i) : NULL;
    return v ? pb_json_get_double_value(rd, v, pb_json_index_path(at, path, key, i), "", out)
             : PB_OK;
}
