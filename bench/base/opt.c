/* Option descriptor tables (bench/base/opt.h): one table per section, stage or decoder
 * drives YAML parsing, -s overrides, validation messages and pbench list. */
#include "bench/base/opt.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/base/jsonfield.h"
#include "bench/base/pb.h"
#include "bench/base/userinfo.h"

/* Names longer than this get no "did you mean" suggestion. */
#define NEAREST_MAX_LEN 127

static void *slot(void *base, const struct pb_opt *opt)
{
    return (char *)base + opt->offset;
}

static const void *cslot(const void *base, const struct pb_opt *opt)
{
    return (const char *)base + opt->offset;
}

/* An INT bound from the table's double, clamped to int64_t. */
static int64_t int_bound(double v)
{
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

/* Shortest text that reads back as the same double ("0.05", not
 * "0.050000000000000003"). */
static void format_double(double v, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, buflen, "%.17g", v);
}

static bool is_int_type(const struct pb_opt *opt)
{
    return opt->type == PB_OPT_INT || opt->type == PB_OPT_INT_LIST;
}

static bool is_list_type(const struct pb_opt *opt)
{
    return opt->type == PB_OPT_INT_LIST || opt->type == PB_OPT_DOUBLE_LIST;
}

static void format_range(const struct pb_opt *opt, char *lo, char *hi, size_t len)
{
    if (is_int_type(opt)) {
        snprintf(lo, len, "%lld", (long long)int_bound(opt->min));
        snprintf(hi, len, "%lld", (long long)int_bound(opt->max));
    } else {
        format_double(opt->min, lo, len);
        format_double(opt->max, hi, len);
    }
}

static void join_allowed(const char *const *allowed, char *buf, size_t buflen)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; allowed && allowed[i]; i++) {
        int n = snprintf(buf + used, buflen - used, "%s%s", i ? ", " : "", allowed[i]);
        if (n < 0 || (size_t)n >= buflen - used)
            return;
        used += (size_t)n;
    }
}

/* Decimal integer with an optional sign and nothing else around it.
 * Returns 0 on success, 1 for text that is not an integer, 2 for overflow. */
static int parse_int64(const char *text, int64_t *out)
{
    const char *p = text;
    if (*p == '+' || *p == '-')
        p++;
    if (*p < '0' || *p > '9')
        return 1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*end != '\0')
        return 1;
    if (errno == ERANGE)
        return 2;
    *out = (int64_t)v;
    return 0;
}

static int parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on"};
    static const char *const no[] = {"false", "no", "off"};
    for (size_t i = 0; i < PB_ARRAY_LEN(yes); i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return 1;
}

static int parse_shard(const char *text, struct pb_shard *out)
{
    const char *slash = strchr(text, '/');
    if (!slash || slash == text || (size_t)(slash - text) > 20)
        return 1;
    char rank_text[24];
    memcpy(rank_text, text, (size_t)(slash - text));
    rank_text[slash - text] = '\0';
    int64_t rank, count;
    if (rank_text[0] == '+' || rank_text[0] == '-' || slash[1] == '+' || slash[1] == '-')
        return 1;
    if (parse_int64(rank_text, &rank) != 0 || parse_int64(slash + 1, &count) != 0)
        return 1;
    if (count < 1 || rank < 0 || rank >= count)
        return 1;
    out->rank = rank;
    out->count = count;
    return 0;
}

/* One integer of an INT or INT_LIST option, range-checked; qualified
 * names it in the message. */
static int parse_int_value(const struct pb_opt *opt, const char *text, int64_t *out,
                           const char *qualified, char *msg, size_t msglen)
{
    char lo[48], hi[48];
    int64_t v = 0;
    int rc = parse_int64(text, &v);
    format_range(opt, lo, hi, sizeof lo);
    if (rc == 1) {
        snprintf(msg, msglen, "%s must be an integer between %s and %s, got '%s'", qualified, lo,
                 hi, text);
        return PB_ERR_CONFIG;
    }
    if (rc == 2 || v < int_bound(opt->min) || v > int_bound(opt->max)) {
        snprintf(msg, msglen, "%s must be between %s and %s, got %s", qualified, lo, hi, text);
        return PB_ERR_CONFIG;
    }
    *out = v;
    return PB_OK;
}

/* One number of a DOUBLE or DOUBLE_LIST option, range-checked. */
static int parse_double_value(const struct pb_opt *opt, const char *text, double *out,
                              const char *qualified, char *msg, size_t msglen)
{
    char lo[48], hi[48];
    format_range(opt, lo, hi, sizeof lo);
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    bool blank = text[0] == '\0' || isspace((unsigned char)text[0]);
    if (blank || *end != '\0' || (isnan(v) || (isinf(v) && errno != ERANGE))) {
        snprintf(msg, msglen, "%s must be a number between %s and %s, got '%s'", qualified, lo,
                 hi, text);
        return PB_ERR_CONFIG;
    }
    if (!isfinite(v) || v < opt->min || v > opt->max) {
        snprintf(msg, msglen, "%s must be between %s and %s, got %s", qualified, lo, hi, text);
        return PB_ERR_CONFIG;
    }
    *out = v;
    return PB_OK;
}

int pb_opt_parse_list(const struct pb_opt *opt, const char *const *items, int count, void *base,
                      const char *qualified, int *bad_index, char *msg, size_t msglen)
{
    *bad_index = -1;
    if (!is_list_type(opt)) {
        snprintf(msg, msglen, "%s does not take a list of values", qualified);
        return PB_ERR_CONFIG;
    }
    if (count > PB_LIST_MAX) {
        *bad_index = PB_LIST_MAX;
        snprintf(msg, msglen, "%s takes at most %d values, got %d", qualified, PB_LIST_MAX,
                 count);
        return PB_ERR_CONFIG;
    }
    struct pb_int_list ints = {.count = count};
    struct pb_double_list doubles = {.count = count};
    for (int i = 0; i < count; i++) {
        char name[PB_MSG_MAX / 2];
        if (count > 1)
            snprintf(name, sizeof name, "%s[%d]", qualified, i);
        else
            snprintf(name, sizeof name, "%s", qualified);
        int rc = opt->type == PB_OPT_INT_LIST
                     ? parse_int_value(opt, items[i], &ints.v[i], name, msg, msglen)
                     : parse_double_value(opt, items[i], &doubles.v[i], name, msg, msglen);
        if (rc != PB_OK) {
            *bad_index = i;
            return rc;
        }
    }
    if (opt->type == PB_OPT_INT_LIST)
        *(struct pb_int_list *)slot(base, opt) = ints;
    else
        *(struct pb_double_list *)slot(base, opt) = doubles;
    return PB_OK;
}

static char *trim(char *text)
{
    while (isspace((unsigned char)*text))
        text++;
    size_t len = strlen(text);
    while (len > 0 && isspace((unsigned char)text[len - 1]))
        text[--len] = '\0';
    return text;
}

/* "256,256", "[256, 256]", "224", "[]": split on commas, then parsed
 * element by element. */
static int parse_list_text(const struct pb_opt *opt, const char *text, void *base,
                           const char *qualified, char *msg, size_t msglen)
{
    char copy[PB_MSG_MAX];
    if (strlen(text) >= sizeof copy) {
        snprintf(msg, msglen, "%s is too long (at most %zu characters)", qualified,
                 sizeof copy - 1);
        return PB_ERR_CONFIG;
    }
    memcpy(copy, text, strlen(text) + 1);
    char *inner = trim(copy);
    size_t len = strlen(inner);
    if (inner[0] == '[' || (len > 0 && inner[len - 1] == ']')) {
        if (len < 2 || inner[0] != '[' || inner[len - 1] != ']') {
            snprintf(msg, msglen, "%s must be a list such as [1, 2] or 1,2, got '%s'", qualified,
                     text);
            return PB_ERR_CONFIG;
        }
        inner[len - 1] = '\0';
        inner = trim(inner + 1);
    }
    const char *items[PB_LIST_MAX + 1];
    int count = 0;
    if (inner[0] != '\0') {
        char *p = inner;
        for (;;) {
            char *comma = strchr(p, ',');
            if (comma)
                *comma = '\0';
            if (count <= PB_LIST_MAX)
                items[count] = trim(p);
            count++;
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    int bad;
    return pb_opt_parse_list(opt, items, count, base, qualified, &bad, msg, msglen);
}

/* A JSON object's text ("" is {}), stored compact so that two spellings
 * of one mapping compare equal. */
static int parse_json_text(const struct pb_opt *opt, const char *text, void *base,
                           const char *qualified, char *msg, size_t msglen)
{
    json_error_t err;
    json_t *v = json_loads(text[0] ? text : "{}", JSON_DECODE_ANY, &err);
    if (!json_is_object(v)) {
        snprintf(msg, msglen, "%s must be a mapping (JSON: {\"key\": value, ...}), got '%s'%s%s",
                 qualified, text, v ? "" : ": ", v ? "" : err.text);
        json_decref(v);
        return PB_ERR_CONFIG;
    }
    char *compact = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(v);
    size_t size = opt->size;
    size_t len = compact ? strlen(compact) : 0;
    if (!compact || size == 0 || len >= size) {
        snprintf(msg, msglen, "%s is too long (at most %zu characters of JSON)", qualified,
                 size ? size - 1 : 0);
        free(compact);
        return PB_ERR_CONFIG;
    }
    memcpy(slot(base, opt), compact, len + 1);
    free(compact);
    return PB_OK;
}

int pb_opt_parse(const struct pb_opt *opt, const char *text, void *base,
                 const char *qualified, char *msg, size_t msglen)
{
    switch (opt->type) {
    case PB_OPT_BOOL: {
        bool v;
        if (parse_bool(text, &v) != 0) {
            snprintf(msg, msglen, "%s must be true or false, got '%s'", qualified, text);
            return PB_ERR_CONFIG;
        }
        *(bool *)slot(base, opt) = v;
        return PB_OK;
    }
    case PB_OPT_INT:
        return parse_int_value(opt, text, (int64_t *)slot(base, opt), qualified, msg, msglen);
    case PB_OPT_DOUBLE:
        return parse_double_value(opt, text, (double *)slot(base, opt), qualified, msg, msglen);
    case PB_OPT_INT_LIST:
    case PB_OPT_DOUBLE_LIST:
        return parse_list_text(opt, text, base, qualified, msg, msglen);
    case PB_OPT_STRING:
    case PB_OPT_URL: {
        size_t size = opt->size;
        size_t len = strlen(text);
        if (size == 0 || len >= size) {
            snprintf(msg, msglen, "%s is too long (at most %zu characters)", qualified,
                     size ? size - 1 : 0);
            return PB_ERR_CONFIG;
        }
        memcpy(slot(base, opt), text, len + 1);
        if (opt->type == PB_OPT_URL)
            pb_userinfo_take(slot(base, opt), qualified);
        return PB_OK;
    }
    case PB_OPT_JSON:
        return parse_json_text(opt, text, base, qualified, msg, msglen);
    case PB_OPT_ENUM:
        for (int i = 0; opt->allowed && opt->allowed[i]; i++) {
            if (strcmp(opt->allowed[i], text) == 0) {
                *(int *)slot(base, opt) = i;
                return PB_OK;
            }
        }
        char names[PB_MSG_MAX / 2];
        join_allowed(opt->allowed, names, sizeof names);
        snprintf(msg, msglen, "%s must be one of: %s; got '%s'", qualified, names, text);
        return PB_ERR_CONFIG;
    case PB_OPT_SHARD: {
        struct pb_shard v;
        if (parse_shard(text, &v) != 0) {
            snprintf(msg, msglen, "%s must be RANK/COUNT with 0 <= RANK < COUNT, got '%s'",
                     qualified, text);
            return PB_ERR_CONFIG;
        }
        *(struct pb_shard *)slot(base, opt) = v;
        return PB_OK;
    }
    case PB_OPT_END:
        break;
    }
    snprintf(msg, msglen, "%s has an unknown option type %d", qualified, (int)opt->type);
    return PB_ERR_CONFIG;
}

/* The size of the value an option writes, for zeroing it. */
static size_t slot_size(const struct pb_opt *opt)
{
    switch (opt->type) {
    case PB_OPT_BOOL:
        return sizeof(bool);
    case PB_OPT_INT:
        return sizeof(int64_t);
    case PB_OPT_DOUBLE:
        return sizeof(double);
    case PB_OPT_STRING:
    case PB_OPT_URL:
    case PB_OPT_JSON: return opt->size;
    case PB_OPT_ENUM:
        return sizeof(int);
    case PB_OPT_SHARD:
        return sizeof(struct pb_shard);
    case PB_OPT_INT_LIST:
        return sizeof(struct pb_int_list);
    case PB_OPT_DOUBLE_LIST:
        return sizeof(struct pb_double_list);
    case PB_OPT_END:
        break;
    }
    return 0;
}

/* A one-option table whose slot is the value itself, so pb_opt_parse
 * can fill a stand-alone value; STRING is capped at the value's size. */
static struct pb_opt value_opt(const struct pb_opt *opt)
{
    struct pb_opt v = *opt;
    v.offset = 0;
    if ((v.type == PB_OPT_STRING || v.type == PB_OPT_URL || v.type == PB_OPT_JSON) &&
        (v.size == 0 || v.size > PB_OPT_VALUE_TEXT))
        v.size = PB_OPT_VALUE_TEXT;
    return v;
}

int pb_opt_parse_value(const struct pb_opt *opt, const char *text, union pb_opt_value *value,
                       const char *qualified, char *msg, size_t msglen)
{
    const struct pb_opt v = value_opt(opt);
    memset(value, 0, sizeof(*value));
    return pb_opt_parse(&v, text, value, qualified, msg, msglen);
}

void pb_opt_store_value(const struct pb_opt *opt, const union pb_opt_value *value, void *base)
{
    if (opt->type == PB_OPT_STRING || opt->type == PB_OPT_URL || opt->type == PB_OPT_JSON) {
        /* Checked against the option's own size when it was parsed. */
        memcpy(slot(base, opt), value->text, strlen(value->text) + 1);
        return;
    }
    memcpy(slot(base, opt), value, slot_size(opt));
}

bool pb_opt_in_table(const struct pb_opt *opts, const struct pb_opt *opt)
{
    for (const struct pb_opt *o = opts; opts && o->name; o++)
        if (o == opt)
            return true;
    return false;
}

int pb_opt_set_defaults(const struct pb_opt *opts, void *base, char *msg, size_t msglen)
{
    for (const struct pb_opt *opt = opts; opts && opt->name; opt++) {
        if (!opt->def) {
            memset(slot(base, opt), 0, slot_size(opt));
            continue;
        }
        char why[PB_MSG_MAX];
        if (pb_opt_parse(opt, opt->def, base, opt->name, why, sizeof why) != PB_OK) {
            snprintf(msg, msglen, "bad default in option table: %s", why);
            return PB_ERR;
        }
    }
    return PB_OK;
}

const struct pb_opt *pb_opt_find(const struct pb_opt *opts, const char *name)
{
    for (const struct pb_opt *opt = opts; opts && opt->name; opt++) {
        if (strcmp(opt->name, name) == 0)
            return opt;
    }
    return NULL;
}

/* Optimal string alignment distance (Levenshtein plus adjacent swaps). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t rows[3][NEAREST_MAX_LEN + 2];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (prev[j - 1] + cost < best)
                best = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

const char *pb_nearest_name(const char *const *names, size_t count, const char *name)
{
    size_t len = strlen(name);
    if (len > NEAREST_MAX_LEN)
        return NULL;
    size_t limit = len / 3 > 2 ? len / 3 : 2;
    const char *best = NULL;
    size_t best_distance = (size_t)-1;
    bool tie = false;
    for (size_t i = 0; i < count; i++) {
        if (!names[i] || strlen(names[i]) > NEAREST_MAX_LEN)
            continue;
        size_t d = edit_distance(name, names[i]);
        if (d < best_distance) {
            best = names[i];
            best_distance = d;
            tie = false;
        } else if (d == best_distance) {
            tie = true;
        }
    }
    if (!best || tie || best_distance > limit)
        return NULL;
    return best;
}

const char *pb_opt_nearest(const struct pb_opt *opts, const char *name)
{
    const char *names[256];
    size_t count = 0;
    for (const struct pb_opt *opt = opts; opts && opt->name && count < PB_ARRAY_LEN(names);
         opt++)
        names[count++] = opt->name;
    return pb_nearest_name(names, count, name);
}

void pb_opt_names(const struct pb_opt *opts, char *buf, size_t buflen)
{
    size_t used = 0;
    if (buflen == 0)
        return;
    buf[0] = '\0';
    for (const struct pb_opt *opt = opts; opts && opt->name; opt++) {
        int n = snprintf(buf + used, buflen - used, "%s%s", opt == opts ? "" : ", ",
                         opt->name);
        if (n < 0 || (size_t)n >= buflen - used)
            return;
        used += (size_t)n;
    }
}

void pb_opt_describe(const struct pb_opt *opt, char *buf, size_t buflen)
{
    char lo[48], hi[48];
    switch (opt->type) {
    case PB_OPT_BOOL:
        snprintf(buf, buflen, "true or false");
        return;
    case PB_OPT_INT:
        format_range(opt, lo, hi, sizeof lo);
        snprintf(buf, buflen, "integer %s..%s", lo, hi);
        return;
    case PB_OPT_DOUBLE:
        format_range(opt, lo, hi, sizeof lo);
        snprintf(buf, buflen, "number %s..%s", lo, hi);
        return;
    case PB_OPT_STRING:
        snprintf(buf, buflen, "text");
        return;
    case PB_OPT_URL:
        snprintf(buf, buflen, "a path or URL (a user:password@ in it is never shown or stored)");
        return;
    case PB_OPT_JSON:
        snprintf(buf, buflen, "a mapping (YAML, or JSON with -s)");
        return;
    case PB_OPT_ENUM: {
        char names[PB_MSG_MAX / 2];
        join_allowed(opt->allowed, names, sizeof names);
        snprintf(buf, buflen, "one of: %s", names);
        return;
    }
    case PB_OPT_SHARD:
        snprintf(buf, buflen, "RANK/COUNT");
        return;
    case PB_OPT_INT_LIST:
        format_range(opt, lo, hi, sizeof lo);
        snprintf(buf, buflen, "list of up to %d integers %s..%s", PB_LIST_MAX, lo, hi);
        return;
    case PB_OPT_DOUBLE_LIST:
        format_range(opt, lo, hi, sizeof lo);
        snprintf(buf, buflen, "list of up to %d numbers %s..%s", PB_LIST_MAX, lo, hi);
        return;
    case PB_OPT_END:
        break;
    }
    snprintf(buf, buflen, "?");
}

static const char *enum_name(const struct pb_opt *opt, int index)
{
    for (int i = 0; opt->allowed && opt->allowed[i]; i++) {
        if (i == index)
            return opt->allowed[i];
    }
    return NULL;
}

void pb_opt_format(const struct pb_opt *opt, const void *base, char *buf, size_t buflen)
{
    const void *p = cslot(base, opt);
    switch (opt->type) {
    case PB_OPT_BOOL:
        snprintf(buf, buflen, "%s", *(const bool *)p ? "true" : "false");
        return;
    case PB_OPT_INT:
        snprintf(buf, buflen, "%lld", (long long)*(const int64_t *)p);
        return;
    case PB_OPT_DOUBLE:
        format_double(*(const double *)p, buf, buflen);
        return;
    case PB_OPT_STRING:
    case PB_OPT_URL:
    case PB_OPT_JSON:
        snprintf(buf, buflen, "%s", (const char *)p);
        return;
    case PB_OPT_ENUM: {
        const char *name = enum_name(opt, *(const int *)p);
        snprintf(buf, buflen, "%s", name ? name : "?");
        return;
    }
    case PB_OPT_SHARD: {
        const struct pb_shard *s = p;
        snprintf(buf, buflen, "%lld/%lld", (long long)s->rank, (long long)s->count);
        return;
    }
    case PB_OPT_INT_LIST:
    case PB_OPT_DOUBLE_LIST: {
        /* "[256, 256]": reads back through pb_opt_parse. */
        size_t used = 0;
        int count = opt->type == PB_OPT_INT_LIST ? ((const struct pb_int_list *)p)->count
                                                 : ((const struct pb_double_list *)p)->count;
        if (buflen == 0)
            return;
        buf[0] = '\0';
        for (int i = -1; i <= count; i++) {
            char item[48];
            if (i < 0)
                snprintf(item, sizeof item, "[");
            else if (i == count)
                snprintf(item, sizeof item, "]");
            else if (opt->type == PB_OPT_INT_LIST)
                snprintf(item, sizeof item, "%s%lld", i ? ", " : "",
                         (long long)((const struct pb_int_list *)p)->v[i]);
            else {
                char number[40];
                format_double(((const struct pb_double_list *)p)->v[i], number, sizeof number);
                snprintf(item, sizeof item, "%s%s", i ? ", " : "", number);
            }
            int n = snprintf(buf + used, buflen - used, "%s", item);
            if (n < 0 || (size_t)n >= buflen - used)
                return;
            used += (size_t)n;
        }
        return;
    }
    case PB_OPT_END:
        break;
    }
    snprintf(buf, buflen, "?");
}

static json_t *value_to_json(const struct pb_opt *opt, const void *base)
{
    const void *p = cslot(base, opt);
    char text[64];
    switch (opt->type) {
    case PB_OPT_BOOL:
        return json_boolean(*(const bool *)p);
    case PB_OPT_INT:
        return json_integer((json_int_t)*(const int64_t *)p);
    case PB_OPT_DOUBLE:
        return json_real(*(const double *)p);
    case PB_OPT_STRING:
    case PB_OPT_URL: {
        /* Not UTF-8 (an odd path): its bytes as Latin-1 rather than drop
         * the key or write JSON no reader accepts. */
        return pb_json_text((const char *)p);
    }
    case PB_OPT_JSON: {
        json_t *v = json_loads((const char *)p, 0, NULL);
        return v ? v : json_object();
    }
    case PB_OPT_ENUM:
    case PB_OPT_SHARD:
        pb_opt_format(opt, base, text, sizeof text);
        return json_string(text);
    case PB_OPT_INT_LIST: {
        const struct pb_int_list *l = p;
        json_t *a = json_array();
        for (int i = 0; a && i < l->count && i < PB_LIST_MAX; i++)
            json_array_append_new(a, json_integer((json_int_t)l->v[i]));
        return a;
    }
    case PB_OPT_DOUBLE_LIST: {
        const struct pb_double_list *l = p;
        json_t *a = json_array();
        for (int i = 0; a && i < l->count && i < PB_LIST_MAX; i++)
            json_array_append_new(a, json_real(l->v[i]));
        return a;
    }
    case PB_OPT_END:
        break;
    }
    return json_null();
}

json_t *pb_opt_to_json(const struct pb_opt *opts, const void *base)
{
    json_t *obj = json_object();
    if (!obj)
        return NULL;
    for (const struct pb_opt *opt = opts; opts && opt->name; opt++) {
        if (json_object_set_new(obj, opt->name, value_to_json(opt, base)) != 0) {
            json_decref(obj);
            return NULL;
        }
    }
    return obj;
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "a value";
}

/* A list option from a JSON array of numbers (or one number). */
static int list_from_json(const struct pb_opt *opt, void *base, const json_t *v,
                          const char *qualified, char *msg, size_t msglen)
{
    bool integer = opt->type == PB_OPT_INT_LIST;
    const char *want = integer ? "an integer" : "a number";
    size_t count = json_is_array(v) ? json_array_size(v) : 1;
    if (!json_is_array(v) && !(integer ? json_is_integer(v) : json_is_number(v))) {
        snprintf(msg, msglen, "%s must be an array of %s, got %s", qualified,
                 integer ? "integers" : "numbers", json_kind(v));
        return PB_ERR_CONFIG;
    }
    if (count > PB_LIST_MAX) {
        snprintf(msg, msglen, "%s takes at most %d values, got %zu", qualified, PB_LIST_MAX,
                 count);
        return PB_ERR_CONFIG;
    }
    char numbers[PB_LIST_MAX][64];
    const char *items[PB_LIST_MAX];
    for (size_t i = 0; i < count; i++) {
        const json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        if (integer ? !json_is_integer(e) : !json_is_number(e)) {
            snprintf(msg, msglen, "%s[%zu] must be %s, got %s", qualified, i, want, json_kind(e));
            return PB_ERR_CONFIG;
        }
        if (integer)
            snprintf(numbers[i], sizeof numbers[i], "%lld", (long long)json_integer_value(e));
        else
            snprintf(numbers[i], sizeof numbers[i], "%.17g", json_number_value(e));
        items[i] = numbers[i];
    }
    int bad;
    return pb_opt_parse_list(opt, items, (int)count, base, qualified, &bad, msg, msglen);
}

/* Keys that are not in the table are ignored, so a result written by a
 * build with more options still reads. */
int pb_opt_from_json(const struct pb_opt *opts, void *base, const json_t *obj,
                     const char *section, char *msg, size_t msglen)
{
    if (!json_is_object(obj)) {
        snprintf(msg, msglen, "%s must be an object, got %s", section ? section : "options",
                 obj ? json_kind(obj) : "nothing");
        return PB_ERR_CONFIG;
    }
    for (const struct pb_opt *opt = opts; opts && opt->name; opt++) {
        const json_t *v = json_object_get(obj, opt->name);
        if (!v)
            continue;
        char qualified[PB_NAME_MAX * 3];
        if (section && section[0])
            snprintf(qualified, sizeof qualified, "%s.%s", section, opt->name);
        else
            snprintf(qualified, sizeof qualified, "%s", opt->name);

        if (is_list_type(opt)) {
            int rc = list_from_json(opt, base, v, qualified, msg, msglen);
            if (rc != PB_OK)
                return rc;
            continue;
        }
        if (opt->type == PB_OPT_JSON) {
            char *dumped = json_is_object(v) ? json_dumps(v, JSON_COMPACT) : NULL;
            int rc = dumped ? pb_opt_parse(opt, dumped, base, qualified, msg, msglen)
                            : PB_ERR_CONFIG;
            if (!dumped)
                snprintf(msg, msglen, "%s must be an object, got %s", qualified, json_kind(v));
            free(dumped);
            if (rc != PB_OK)
                return rc;
            continue;
        }
        char number[64];
        const char *text = NULL;
        const char *want = "a string";
        switch (opt->type) {
        case PB_OPT_BOOL:
            want = "true or false";
            if (json_is_boolean(v)) {
                *(bool *)slot(base, opt) = json_is_true(v);
                continue;
            }
            break;
        case PB_OPT_INT:
            want = "an integer";
            if (json_is_integer(v)) {
                snprintf(number, sizeof number, "%lld", (long long)json_integer_value(v));
                text = number;
            }
            break;
        case PB_OPT_DOUBLE:
            want = "a number";
            if (json_is_number(v)) {
                snprintf(number, sizeof number, "%.17g", json_number_value(v));
                text = number;
            }
            break;
        case PB_OPT_STRING:
        case PB_OPT_URL:
        case PB_OPT_ENUM:
        case PB_OPT_SHARD:
            if (json_is_string(v))
                text = json_string_value(v);
            break;
        case PB_OPT_INT_LIST:
        case PB_OPT_DOUBLE_LIST:
        case PB_OPT_JSON:
        case PB_OPT_END:
            break;
        }
        if (!text) {
            snprintf(msg, msglen, "%s must be %s, got %s", qualified, want, json_kind(v));
            return PB_ERR_CONFIG;
        }
        int rc = pb_opt_parse(opt, text, base, qualified, msg, msglen);
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

const struct pb_opt *pb_opt_find_flag(const struct pb_opt *opts, const char *flag, char *msg,
                                      size_t msglen)
{
    char name[64];
    pb_strlcpy(name, strncmp(flag, "--", 2) == 0 ? flag + 2 : flag, sizeof(name));
    for (char *c = name; *c; c++)
        if (*c == '-')
            *c = '_';
    const struct pb_opt *opt = pb_opt_find(opts, name);
    if (!opt) {
        const char *near = pb_opt_nearest(opts, name);
        char all[512];
        pb_opt_names(opts, all, sizeof(all));
        snprintf(msg, msglen, "unknown option '%s'%s%s%s; options: %s", flag,
                 near ? "; did you mean '--" : "", near ? near : "", near ? "'?" : "", all);
    }
    return opt;
}
