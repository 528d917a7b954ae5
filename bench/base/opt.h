/* Option descriptor tables.
 *
 * Every configurable thing in pbench (a config section, a stage, a decoder)
 * declares its options once, as an array of struct pb_opt ending with a
 * zeroed entry. The same table drives YAML parsing, `-s key=value` command
 * line overrides, validation messages, the resolved config written into
 * result files, and `pbench list`. */
#ifndef PB_OPT_H
#define PB_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum pb_opt_type {
    PB_OPT_END = 0, /* terminates a table                                   */
    PB_OPT_BOOL,    /* bool; true|false|yes|no|on|off                        */
    PB_OPT_INT,     /* int64_t, range [min, max]                             */
    PB_OPT_DOUBLE,  /* double, range [min, max]                              */
    PB_OPT_STRING,  /* char[size]: size is the buffer's, its NUL included    */
    PB_OPT_ENUM,    /* int: index into allowed[]                             */
    PB_OPT_SHARD,   /* struct pb_shard, written "RANK/COUNT", e.g. "0/4"     */
    PB_OPT_INT_LIST,    /* struct pb_int_list; each element in [min, max]   */
    PB_OPT_DOUBLE_LIST, /* struct pb_double_list; each element in [min, max] */
    PB_OPT_JSON,    /* char[size]: a JSON object as compact text (in YAML a
                       mapping), passed through to code pbench does not own,
                       e.g. the keyword arguments of a user's Python Dataset */
    PB_OPT_URL,     /* char[size] as STRING: a path or a URL, whose user:password@
                       is taken out as it is parsed and kept aside
                       (bench/base/userinfo.h), so no spec holds it            */
};

/* List values hold up to PB_LIST_MAX elements. As text they are written
 * "256,256" or "[256, 256]" ("[]" or "" is the empty list, a bare "224"
 * a one-element list); in YAML a sequence or a scalar; in JSON an array. */
#define PB_LIST_MAX 8

struct pb_int_list {
    int count;
    int64_t v[PB_LIST_MAX];
};

struct pb_double_list {
    int count;
    double v[PB_LIST_MAX];
};

struct pb_shard {
    int64_t rank;
    int64_t count;
};

/* One option. Tables fill rows by field name, as fio's option tables do
 * ({.name = "workers", .type = PB_OPT_INT, .offset = ..., .max = 1024,
 * ...}); a field a row leaves out is zero. */
struct pb_opt {
    const char *name;
    enum pb_opt_type type;
    size_t offset;               /* where the value lives in its struct    */
    double min, max;             /* INT, DOUBLE and list elements: range   */
    size_t size;                 /* STRING, URL, JSON: buffer size, NUL in */
    const char *def;             /* default, as text parsed like a value   */
    const char *const *allowed;  /* ENUM: NULL-terminated list of names    */
    const char *help;            /* one sentence for `pbench list`         */
};

/* One option's value on its own, outside any struct: what a sweep axis
 * holds for each of its values once they are parsed (a STRING value is at
 * most PB_OPT_VALUE_TEXT bytes here, its NUL included). */
#define PB_OPT_VALUE_TEXT 64
union pb_opt_value {
    bool b;
    int64_t i;
    double d;
    int e; /* ENUM index */
    struct pb_shard shard;
    struct pb_int_list ints;
    struct pb_double_list doubles;
    char text[PB_OPT_VALUE_TEXT];
};

/* Writes every option's default into base. Returns PB_OK, or PB_ERR with a
 * message if a default fails its own validation (a bug in the table). */
int pb_opt_set_defaults(const struct pb_opt *opts, void *base, char *msg, size_t msglen);

/* Finds an option by name; NULL when the table has none. */
const struct pb_opt *pb_opt_find(const struct pb_opt *opts, const char *name);

/* Parses text into the option's slot in base and validates it. On failure
 * returns PB_ERR_CONFIG and writes a sentence naming `qualified` (the dotted
 * key as the user wrote it, e.g. "loader.workers") and the allowed range or
 * values, e.g. "loader.workers must be between 0 and 1024, got 2000". */
int pb_opt_parse(const struct pb_opt *opt, const char *text, void *base,
                 const char *qualified, char *msg, size_t msglen);

/* Parses text as pb_opt_parse does, into a stand-alone value. Returns
 * PB_OK or PB_ERR_CONFIG with the same sentences (a STRING longer than
 * the option or PB_OPT_VALUE_TEXT allows is "too long"). */
int pb_opt_parse_value(const struct pb_opt *opt, const char *text, union pb_opt_value *value,
                       const char *qualified, char *msg, size_t msglen);

/* Writes a value parsed by pb_opt_parse_value into the option's slot in
 * base. It was checked when it was parsed, so this cannot fail. */
void pb_opt_store_value(const struct pb_opt *opt, const union pb_opt_value *value, void *base);

/* Whether opt is an entry of the table opts (the same descriptor). */
bool pb_opt_in_table(const struct pb_opt *opts, const struct pb_opt *opt);

/* Parses the elements of a list option (PB_OPT_INT_LIST or
 * PB_OPT_DOUBLE_LIST) given one text each, e.g. a YAML sequence's scalars,
 * and stores them only if all are valid. On failure returns PB_ERR_CONFIG,
 * sets *bad_index to the offending element (or -1 when the count is the
 * problem) and writes a sentence naming it, e.g.
 * "pipeline.resize.size[1] must be between 1 and 16384, got 0" (the
 * element is named without [i] when the list has one element). */
int pb_opt_parse_list(const struct pb_opt *opt, const char *const *items, int count, void *base,
                      const char *qualified, int *bad_index, char *msg, size_t msglen);

/* The option in the table whose name is nearest to name (edit distance,
 * small enough to be a plausible misspelling), or NULL. */
const char *pb_opt_nearest(const struct pb_opt *opts, const char *name);

/* The same over a plain list of names (stages, decoders, section keys):
 * the unique name within edit distance max(2, strlen(name) / 3), or NULL. */
const char *pb_nearest_name(const char *const *names, size_t count, const char *name);

/* Writes the allowed names of a table, comma separated ("a, b, c"). */
void pb_opt_names(const struct pb_opt *opts, char *buf, size_t buflen);

/* Writes what values an option takes, e.g. "integer 0..1024",
 * "one of: skip, fail", "true or false". */
void pb_opt_describe(const struct pb_opt *opt, char *buf, size_t buflen);

/* Formats the option's current value in base as text ("4", "skip", "0/1"). */
void pb_opt_format(const struct pb_opt *opt, const void *base, char *buf, size_t buflen);

/* Returns a new JSON object holding every option of the table with its
 * current value in base, typed (numbers as numbers, bools as bools). */
json_t *pb_opt_to_json(const struct pb_opt *opts, const void *base);

/* Reads back what pb_opt_to_json wrote (missing keys keep their value).
 * Returns PB_OK or PB_ERR_CONFIG with a message. */
int pb_opt_from_json(const struct pb_opt *opts, void *base, const json_t *obj,
                     const char *section, char *msg, size_t msglen);

/* The option a command-line flag names: "--size-bytes" is size_bytes.
 * NULL when the table has none, with "unknown option '--x'; did you mean
 * '--y'?; options: a, b" in msg. */
const struct pb_opt *pb_opt_find_flag(const struct pb_opt *opts, const char *flag, char *msg,
                                      size_t msglen);

#endif
