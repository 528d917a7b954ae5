/* JSON values and field tables: the typed reads and writes a JSON file
 * format is built from (bench/result/result_json.c is the user). A field table
 * lists the flat fields of a struct once, and drives both writing the
 * struct as a JSON object and reading it back, so the two directions
 * cannot drift apart. */
#ifndef PB_JSONFIELD_H
#define PB_JSONFIELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Key paths in reader messages ("points[0].repeats[1].wall_s") are cut to
 * this many bytes; they only feed messages. */
#define PB_JSON_PATH_MAX 256

/* A flat field of a struct and its JSON key. An object field groups the
 * fields of its sub-table (offsets into the same struct) under its key. */
enum pb_field_type {
    PB_FIELD_U64,      /* uint64_t, a JSON integer                           */
    PB_FIELD_DOUBLE,   /* double, a JSON number (null when not finite)       */
    PB_FIELD_INT,      /* int, a JSON integer                                */
    PB_FIELD_UINT,     /* unsigned, a JSON integer                           */
    PB_FIELD_BOOL,     /* bool, true or false                                */
    PB_FIELD_TEXT,     /* char[size], a JSON string                          */
    PB_FIELD_OBJECT,   /* the sub-table's fields as a JSON object            */
};

/* What the reader checks of a number beyond its type (flags of a field). */
enum {
    PB_FIELD_NONNEG = 1u << 0, /* >= 0 (a double may still be null: not finite) */
    PB_FIELD_FINITE = 1u << 1, /* a double must be a number, never null         */
};

struct pb_field {
    const char *key;            /* NULL ends a table                      */
    enum pb_field_type type;
    size_t offset, size;
    const struct pb_field *sub;    /* PB_FIELD_OBJECT only                      */
    unsigned flags;             /* PB_FIELD_NONNEG, PB_FIELD_FINITE       */
};

#define PB_FIELD_CHECKED(type, key, member, kind, flags)                                         \
    {key, kind, offsetof(type, member), sizeof(((type *)0)->member), NULL, flags}
#define PB_FIELD(type, key, member, kind) PB_FIELD_CHECKED(type, key, member, kind, 0)
#define PB_FIELD_GROUP(key, sub) {key, PB_FIELD_OBJECT, 0, 0, sub, 0}
#define PB_FIELD_END {NULL, PB_FIELD_U64, 0, 0, NULL, 0}


/* ---- writing ------------------------------------------------------------- */

/* A uint64 as a JSON integer (int64), clamped to INT64_MAX (only an
 * open-ended histogram edge gets there). */
json_t *pb_json_u64(uint64_t v);
/* A double as a JSON real; non-finite values have no JSON form and are
 * written as null. */
json_t *pb_json_number(double v);

/* The length of the well-formed UTF-8 sequence at p (2 to 4 bytes), or 0
 * (an ASCII byte, or bytes that are not UTF-8: overlong forms, surrogates
 * and code points past U+10FFFF are not). */
int pb_utf8_length(const unsigned char *p);

/* Text (a file name) as a JSON string: as it is when it is UTF-8; else
 * each byte that is not part of UTF-8 stands for the Latin-1 character of
 * its value (0xff reads as U+00FF), so a file that Linux named with any
 * bytes is still listed, and the JSON stays valid. NULL only without
 * memory. */
json_t *pb_json_text(const char *text);

/* The exact bytes of text that is not UTF-8, as a JSON string of hex
 * digits, for a field beside its pb_json_text (which reads well but is not
 * the file's name): reading it back with pb_json_bytes_read gives the name
 * the file has. NULL when text is UTF-8 (nothing to add) or without
 * memory. */
json_t *pb_json_bytes(const char *text);

/* The text a pb_json_bytes value holds, into buf (of buflen, cut short
 * there). false, buf untouched, when v is not one. */
bool pb_json_bytes_read(const json_t *v, char *buf, size_t buflen);

/* Sets the table's fields of the struct at base into obj, in table order. */
void pb_fields_put(json_t *obj, const void *base, const struct pb_field *fields);
/* The same into a new object (a new reference). */
json_t *pb_fields_to_json(const void *base, const struct pb_field *fields);

/* ---- reading ------------------------------------------------------------- */

/* The reader treats a missing key as zero or empty (so files stay readable
 * when keys are added within a schema version) and a key of the wrong type
 * as an error naming its path, e.g. "points[0].repeats[1].wall_s". */
struct pb_json_reader {
    char *msg;
    size_t msglen;
};

/* Writes "PATH.KEY: what" into the reader's message; returns PB_ERR. */
int pb_json_fail(struct pb_json_reader *rd, const char *path, const char *key, const char *fmt,
                 ...) __attribute__((format(printf, 4, 5)));

/* "path.key" and "path.key[index]" into buf (PB_JSON_PATH_MAX bytes);
 * return buf. */
const char *pb_json_child_path(char *buf, const char *path, const char *key);
const char *pb_json_index_path(char *buf, const char *path, const char *key, size_t index);

/* Typed members of obj: PB_OK, leaving *out as it is when key is missing;
 * PB_ERR with the message when it has another type or is out of range. A
 * double reads null as NAN (how non-finite values are written). */
int pb_json_get_u64(struct pb_json_reader *rd, const json_t *obj, const char *path,
                    const char *key, uint64_t *out);
int pb_json_get_int(struct pb_json_reader *rd, const json_t *obj, const char *path,
                    const char *key, int *out);
int pb_json_get_uint(struct pb_json_reader *rd, const json_t *obj, const char *path,
                     const char *key, unsigned *out);
int pb_json_get_double(struct pb_json_reader *rd, const json_t *obj, const char *path,
                       const char *key, double *out);
int pb_json_get_bool(struct pb_json_reader *rd, const json_t *obj, const char *path,
                     const char *key, bool *out);
/* Copies the string into out (size bytes), cut to fit. */
int pb_json_get_string(struct pb_json_reader *rd, const json_t *obj, const char *path,
                       const char *key, char *out, size_t size);
/* Optional object and array members: *out is NULL when the key is missing. */
int pb_json_get_object(struct pb_json_reader *rd, const json_t *obj, const char *path,
                       const char *key, const json_t **out);
int pb_json_get_array(struct pb_json_reader *rd, const json_t *obj, const char *path,
                      const char *key, const json_t **out);

/* The same for a value itself (an array element): v must not be NULL. */
int pb_json_get_u64_value(struct pb_json_reader *rd, const json_t *v, const char *path,
                          const char *key, uint64_t *out);
int pb_json_get_double_value(struct pb_json_reader *rd, const json_t *v, const char *path,
                             const char *key, double *out);

/* Reads the table's fields from obj into the struct at base, in table
 * order, with the typed getters above; stops at the first bad value. A
 * double field's flags are checked too: "PATH.KEY must be >= 0, got -3",
 * "PATH.KEY must be a number >= 0, got null". */
int pb_fields_read(struct pb_json_reader *rd, const json_t *obj, const char *path, void *base,
                   const struct pb_field *fields);
/* The same for parts read leniently: a missing key or a value of another
 * type reads as zero (a text field is left as it is); never fails. */
void pb_fields_read_leniently(const json_t *obj, void *base, const struct pb_field *fields);

/* A group of parallel arrays, keys[0..n) of obj, into arrays[] (NULL for a
 * missing key): all present arrays must have the same length, returned in
 * *count (0 when none is present). */
int pb_json_parallel_arrays(struct pb_json_reader *rd, const json_t *obj, const char *path,
                            const char *const *keys, const json_t **arrays, size_t n,
                            size_t *count);
/* Element i of arr (NULL or shorter: *out is left as it is). */
int pb_json_elem_u64(struct pb_json_reader *rd, const json_t *arr, const char *path,
                     const char *key, size_t i, uint64_t *out);
int pb_json_elem_double(struct pb_json_reader *rd, const json_t *arr, const char *path,
                        const char *key, size_t i, double *out);

#endif
