/* Unit tests of bench/base/opt.c: every option type, ranges and their messages,
 * suggestions, descriptions, formatting and the JSON round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "bench/base/opt.h"
#include "bench/base/pb.h"

struct sample {
    bool flag;
    int64_t count;
    double ratio;
    char label[8];
    int mode;
    struct pb_shard shard;
};

static const char *const modes[] = {"skip", "fail", NULL};

static const struct pb_opt table[] = {
    {.name = "flag", .type = PB_OPT_BOOL, .offset = offsetof(struct sample, flag), .def = "true",
     .help = "A flag."},
    {.name = "count", .type = PB_OPT_INT, .offset = offsetof(struct sample, count), .max = 1024,
     .def = "2", .help = "A count."},
    {.name = "ratio", .type = PB_OPT_DOUBLE, .offset = offsetof(struct sample, ratio), .min = 0.001,
     .max = 1, .def = "0.05", .help = "A ratio."},
    {.name = "label", .type = PB_OPT_STRING, .offset = offsetof(struct sample, label), .size = 8,
     .def = "abc", .help = "A label."},
    {.name = "mode", .type = PB_OPT_ENUM, .offset = offsetof(struct sample, mode), .def = "skip",
     .allowed = modes, .help = "A mode."},
    {.name = "shard", .type = PB_OPT_SHARD, .offset = offsetof(struct sample, shard), .def = "0/1",
     .help = "A shard."},
    {0},
};

static const struct pb_opt *opt(const char *name)
{
    const struct pb_opt *o = pb_opt_find(table, name);
    assert_non_null(o);
    return o;
}

/* Fills the record dst (size bytes) with a pattern, then with the defaults
 * of its option table. */
static void fill_defaults(const struct pb_opt *options, void *dst, size_t size)
{
    char msg[PB_MSG_MAX] = "";
    memset(dst, 0x5a, size);
    assert_int_equal(pb_opt_set_defaults(options, dst, msg, sizeof msg), PB_OK);
}

/* Expects option o of the table options to reject text with exactly want,
 * leaving a default record of size bytes as it was. */
static void expect_rejected(const struct pb_opt *options, const struct pb_opt *o, size_t size,
                            const char *text, const char *qualified, const char *want)
{
    union {
        max_align_t align;
        unsigned char bytes[1024];
    } rec, before;
    assert_true(size <= sizeof rec.bytes);
    fill_defaults(options, rec.bytes, size);
    fill_defaults(options, before.bytes, size);
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_opt_parse(o, text, rec.bytes, qualified, msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, want);
    assert_memory_equal(rec.bytes, before.bytes, size);
}

static struct sample defaults(void)
{
    struct sample s;
    fill_defaults(table, &s, sizeof s);
    return s;
}

/* Parses text into a default sample and expects it to be accepted. */
static struct sample parse_ok(const char *name, const char *text)
{
    struct sample s = defaults();
    char msg[PB_MSG_MAX] = "";
    int rc = pb_opt_parse(opt(name), text, &s, name, msg, sizeof msg);
    if (rc != PB_OK)
        fail_msg("'%s' rejected: %s", text, msg);
    return s;
}

/* Expects text to be rejected with exactly `want`, leaving the value alone. */
static void parse_bad(const char *name, const char *text, const char *qualified,
                      const char *want)
{
    expect_rejected(table, opt(name), sizeof(struct sample), text, qualified, want);
}

static void test_defaults(void **state)
{
    (void)state;
    struct sample s = defaults();
    assert_true(s.flag);
    assert_int_equal(s.count, 2);
    assert_true(s.ratio == 0.05);
    assert_string_equal(s.label, "abc");
    assert_int_equal(s.mode, 0);
    assert_int_equal(s.shard.rank, 0);
    assert_int_equal(s.shard.count, 1);
}

static void test_bad_default_is_reported(void **state)
{
    (void)state;
    static const struct pb_opt broken[] = {
        {.name = "workers", .type = PB_OPT_INT, .offset = 0, .max = 10, .def = "11",
         .help = "Broken."},
        {0},
    };
    int64_t value = 0;
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_opt_set_defaults(broken, &value, msg, sizeof msg), PB_ERR);
    assert_string_equal(msg,
                        "bad default in option table: workers must be between 0 and 10, got 11");
}

/* parse_bad on each of values under the key qualified, the message being
 * want_format with the value in place of its %s. */
static void parse_bad_each(const char *name, const char *const *values, size_t count,
                           const char *qualified, const char *want_format)
{
    for (size_t i = 0; i < count; i++) {
        char want[PB_MSG_MAX];
        snprintf(want, sizeof want, want_format, values[i]);
        parse_bad(name, values[i], qualified, want);
    }
}

static void test_bool(void **state)
{
    (void)state;
    const char *yes[] = {"true", "TRUE", "Yes", "on", "ON"};
    const char *no[] = {"false", "False", "no", "NO", "off"};
    for (size_t i = 0; i < PB_ARRAY_LEN(yes); i++) {
        struct sample s = parse_ok("flag", no[i]);
        assert_false(s.flag);
        s = defaults();
        s.flag = false;
        char msg[PB_MSG_MAX];
        assert_int_equal(pb_opt_parse(opt("flag"), yes[i], &s, "flag", msg, sizeof msg), PB_OK);
        assert_true(s.flag);
    }
    parse_bad("flag", "maybe", "loader.pin_memory",
              "loader.pin_memory must be true or false, got 'maybe'");
    parse_bad("flag", "1", "flag", "flag must be true or false, got '1'");
    parse_bad("flag", "", "flag", "flag must be true or false, got ''");
}

static void test_int(void **state)
{
    (void)state;
    assert_int_equal(parse_ok("count", "0").count, 0);
    assert_int_equal(parse_ok("count", "1024").count, 1024);
    assert_int_equal(parse_ok("count", "+7").count, 7);
    parse_bad("count", "2000", "loader.workers",
              "loader.workers must be between 0 and 1024, got 2000");
    parse_bad("count", "-1", "loader.workers",
              "loader.workers must be between 0 and 1024, got -1");
    parse_bad("count", "99999999999999999999", "c",
              "c must be between 0 and 1024, got 99999999999999999999");
    parse_bad("count", "four", "loader.workers",
              "loader.workers must be an integer between 0 and 1024, got 'four'");
    static const char *const not_integers[] = {"4x", "1.5", "1e3", " 4", "", "0x10"};
    parse_bad_each("count", not_integers, PB_ARRAY_LEN(not_integers), "c",
                   "c must be an integer between 0 and 1024, got '%s'");
}

static void test_int_extreme_bounds(void **state)
{
    (void)state;
    static const struct pb_opt wide[] = {
        {.name = "seed", .type = PB_OPT_INT, .offset = 0, .max = 4611686018427387904.0, .def = "0",
         .help = "Seed."},
        {0},
    };
    int64_t v = 0;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_opt_parse(&wide[0], "4611686018427387904", &v, "seed", msg, sizeof msg),
                     PB_OK);
    assert_int_equal(v, INT64_C(4611686018427387904));
    assert_int_equal(pb_opt_parse(&wide[0], "4611686018427387905", &v, "seed", msg, sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg,
                        "seed must be between 0 and 4611686018427387904, got 4611686018427387905");
}

static void test_double(void **state)
{
    (void)state;
    assert_true(parse_ok("ratio", "0.5").ratio == 0.5);
    assert_true(parse_ok("ratio", "1").ratio == 1.0);
    assert_true(parse_ok("ratio", "1e-3").ratio == 0.001);
    assert_true(parse_ok("ratio", ".25").ratio == 0.25);
    parse_bad("ratio", "abc", "run.target_noise",
              "run.target_noise must be a number between 0.001 and 1, got 'abc'");
    parse_bad("ratio", "2", "run.target_noise",
              "run.target_noise must be between 0.001 and 1, got 2");
    parse_bad("ratio", "0", "r", "r must be between 0.001 and 1, got 0");
    parse_bad("ratio", "1e999", "r", "r must be between 0.001 and 1, got 1e999");
    static const char *const not_numbers[] = {"nan", "inf", "0.5s", ""};
    parse_bad_each("ratio", not_numbers, PB_ARRAY_LEN(not_numbers), "r",
                   "r must be a number between 0.001 and 1, got '%s'");
}

static void test_string(void **state)
{
    (void)state;
    assert_string_equal(parse_ok("label", "").label, "");
    assert_string_equal(parse_ok("label", "1234567").label, "1234567");
    parse_bad("label", "12345678", "dataset.label",
              "dataset.label is too long (at most 7 characters)");
}

static void test_enum(void **state)
{
    (void)state;
    assert_int_equal(parse_ok("mode", "fail").mode, 1);
    assert_int_equal(parse_ok("mode", "skip").mode, 0);
    parse_bad("mode", "ignore", "run.on_error",
              "run.on_error must be one of: skip, fail; got 'ignore'");
    parse_bad("mode", "FAIL", "run.on_error",
              "run.on_error must be one of: skip, fail; got 'FAIL'");
}

static void test_shard(void **state)
{
    (void)state;
    struct sample s = parse_ok("shard", "3/4");
    assert_int_equal(s.shard.rank, 3);
    assert_int_equal(s.shard.count, 4);
    s = parse_ok("shard", "0/1");
    assert_int_equal(s.shard.count, 1);
    const char *bad[] = {"4/4", "0/0", "-1/4", "1/-4", "a/b", "1", "1/", "/4", "1/4/5", "1 /4",
                         ""};
    for (size_t i = 0; i < PB_ARRAY_LEN(bad); i++) {
        char want[PB_MSG_MAX];
        snprintf(want, sizeof want,
                 "dataset.shard must be RANK/COUNT with 0 <= RANK < COUNT, got '%s'", bad[i]);
        parse_bad("shard", bad[i], "dataset.shard", want);
    }
}

static void test_find_and_names(void **state)
{
    (void)state;
    assert_ptr_equal(pb_opt_find(table, "ratio"), &table[2]);
    assert_null(pb_opt_find(table, "rati"));
    assert_null(pb_opt_find(NULL, "ratio"));
    char buf[128];
    pb_opt_names(table, buf, sizeof buf);
    assert_string_equal(buf, "flag, count, ratio, label, mode, shard");
    pb_opt_names(NULL, buf, sizeof buf);
    assert_string_equal(buf, "");
    char small[12];
    pb_opt_names(table, small, sizeof small);
    assert_true(strlen(small) < sizeof small);
}

static void test_nearest(void **state)
{
    (void)state;
    assert_string_equal(pb_opt_nearest(table, "cont"), "count");
    assert_string_equal(pb_opt_nearest(table, "counts"), "count");
    assert_string_equal(pb_opt_nearest(table, "flga"), "flag"); /* transposition */
    assert_string_equal(pb_opt_nearest(table, "shrad"), "shard");
    assert_null(pb_opt_nearest(table, "workers"));
    assert_null(pb_opt_nearest(NULL, "count"));

    static const char *const keys[] = {"workers", "batch_size", "prefetch_factor",
                                       "pin_memory", "drop_last", "in_order"};
    assert_string_equal(pb_nearest_name(keys, PB_ARRAY_LEN(keys), "worker"), "workers");
    assert_string_equal(pb_nearest_name(keys, PB_ARRAY_LEN(keys), "batchsize"), "batch_size");
    assert_string_equal(pb_nearest_name(keys, PB_ARRAY_LEN(keys), "prefetch_factr"),
                        "prefetch_factor");
    /* Long names allow more edits: len / 3. */
    assert_string_equal(pb_nearest_name(keys, PB_ARRAY_LEN(keys), "prefech_fator"),
                        "prefetch_factor");
    assert_null(pb_nearest_name(keys, PB_ARRAY_LEN(keys), "threads"));

    /* A tie suggests nothing. */
    static const char *const twins[] = {"ab", "ac"};
    assert_null(pb_nearest_name(twins, 2, "aa"));
    assert_string_equal(pb_nearest_name(twins, 2, "ab"), "ab");
}

static void test_describe(void **state)
{
    (void)state;
    char buf[128];
    pb_opt_describe(opt("flag"), buf, sizeof buf);
    assert_string_equal(buf, "true or false");
    pb_opt_describe(opt("count"), buf, sizeof buf);
    assert_string_equal(buf, "integer 0..1024");
    pb_opt_describe(opt("ratio"), buf, sizeof buf);
    assert_string_equal(buf, "number 0.001..1");
    pb_opt_describe(opt("label"), buf, sizeof buf);
    assert_string_equal(buf, "text");
    pb_opt_describe(opt("mode"), buf, sizeof buf);
    assert_string_equal(buf, "one of: skip, fail");
    pb_opt_describe(opt("shard"), buf, sizeof buf);
    assert_string_equal(buf, "RANK/COUNT");
}

static void test_format(void **state)
{
    (void)state;
    struct sample s = defaults();
    s.flag = false;
    s.count = 1000;
    s.ratio = 0.1;
    s.mode = 1;
    s.shard = (struct pb_shard){3, 8};
    char buf[64];
    pb_opt_format(opt("flag"), &s, buf, sizeof buf);
    assert_string_equal(buf, "false");
    pb_opt_format(opt("count"), &s, buf, sizeof buf);
    assert_string_equal(buf, "1000");
    pb_opt_format(opt("ratio"), &s, buf, sizeof buf);
    assert_string_equal(buf, "0.1");
    pb_opt_format(opt("label"), &s, buf, sizeof buf);
    assert_string_equal(buf, "abc");
    pb_opt_format(opt("mode"), &s, buf, sizeof buf);
    assert_string_equal(buf, "fail");
    pb_opt_format(opt("shard"), &s, buf, sizeof buf);
    assert_string_equal(buf, "3/8");

    /* Formatted values parse back to the same value. */
    s.ratio = 1.0 / 3.0;
    pb_opt_format(opt("ratio"), &s, buf, sizeof buf);
    struct sample back = parse_ok("ratio", buf);
    assert_true(back.ratio == s.ratio);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    struct sample s = defaults();
    s.flag = false;
    s.count = 17;
    s.ratio = 0.3;
    strcpy(s.label, "xyz");
    s.mode = 1;
    s.shard = (struct pb_shard){2, 5};

    json_t *obj = pb_opt_to_json(table, &s);
    assert_non_null(obj);
    assert_int_equal(json_object_size(obj), 6);
    assert_true(json_is_false(json_object_get(obj, "flag")));
    assert_true(json_is_integer(json_object_get(obj, "count")));
    assert_int_equal(json_integer_value(json_object_get(obj, "count")), 17);
    assert_true(json_is_real(json_object_get(obj, "ratio")));
    assert_string_equal(json_string_value(json_object_get(obj, "label")), "xyz");
    assert_string_equal(json_string_value(json_object_get(obj, "mode")), "fail");
    assert_string_equal(json_string_value(json_object_get(obj, "shard")), "2/5");

    struct sample back = defaults();
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_opt_from_json(table, &back, obj, "sec", msg, sizeof msg), PB_OK);
    assert_memory_equal(&back, &s, sizeof s);
    json_decref(obj);
}

static void test_json_partial_and_errors(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX] = "";
    struct sample s = defaults();

    /* Missing keys keep their value; unknown keys are ignored; an integer
     * is a fine number. */
    json_t *obj = json_pack("{s:i, s:i, s:s}", "count", 9, "ratio", 1, "newer_option", "x");
    assert_int_equal(pb_opt_from_json(table, &s, obj, "sec", msg, sizeof msg), PB_OK);
    assert_int_equal(s.count, 9);
    assert_true(s.ratio == 1.0);
    assert_true(s.flag);
    json_decref(obj);

    struct {
        json_t *obj;
        const char *want;
    } cases[] = {
        {json_pack("{s:s}", "count", "4"), "sec.count must be an integer, got a string"},
        {json_pack("{s:f}", "count", 4.5), "sec.count must be an integer, got a number"},
        {json_pack("{s:i}", "count", 5000), "sec.count must be between 0 and 1024, got 5000"},
        {json_pack("{s:i}", "flag", 1), "sec.flag must be true or false, got a number"},
        {json_pack("{s:s}", "ratio", "0.5"), "sec.ratio must be a number, got a string"},
        {json_pack("{s:s}", "mode", "never"), "sec.mode must be one of: skip, fail; got 'never'"},
        {json_pack("{s:i}", "shard", 1), "sec.shard must be a string, got a number"},
        {json_pack("[]"), "sec must be an object, got an array"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        assert_non_null(cases[i].obj);
        assert_int_equal(pb_opt_from_json(table, &s, cases[i].obj, "sec", msg, sizeof msg),
                         PB_ERR_CONFIG);
        assert_string_equal(msg, cases[i].want);
        json_decref(cases[i].obj);
    }
}

/* ---- list options ---- */

struct lists {
    struct pb_int_list size;
    struct pb_double_list mean;
};

static const struct pb_opt list_table[] = {
    {.name = "size", .type = PB_OPT_INT_LIST, .offset = offsetof(struct lists, size), .min = 1,
     .max = 16384, .def = "[224]", .help = "A size."},
    {.name = "mean", .type = PB_OPT_DOUBLE_LIST, .offset = offsetof(struct lists, mean), .min = -1,
     .max = 1, .def = "0.5, 0.25", .help = "Means."},
    {0},
};

static struct lists list_defaults(void)
{
    struct lists l;
    fill_defaults(list_table, &l, sizeof l);
    return l;
}

static struct pb_int_list parse_sizes(const char *text)
{
    struct lists l = list_defaults();
    char msg[PB_MSG_MAX] = "";
    if (pb_opt_parse(&list_table[0], text, &l, "size", msg, sizeof msg) != PB_OK)
        fail_msg("'%s' rejected: %s", text, msg);
    return l.size;
}

static void list_bad(int index, const char *text, const char *want)
{
    const char *qualified = index == 0 ? "pipeline.resize.size" : "pipeline.normalize.mean";
    expect_rejected(list_table, &list_table[index], sizeof(struct lists), text, qualified, want);
}

static void test_list_parse(void **state)
{
    (void)state;
    struct lists l = list_defaults();
    assert_int_equal(l.size.count, 1);
    assert_int_equal(l.size.v[0], 224);
    assert_int_equal(l.mean.count, 2);
    assert_true(l.mean.v[0] == 0.5 && l.mean.v[1] == 0.25);

    struct pb_int_list v = parse_sizes("256,256");
    assert_int_equal(v.count, 2);
    assert_int_equal(v.v[0], 256);
    assert_int_equal(v.v[1], 256);
    v = parse_sizes(" [ 1 ,2,3 ] ");
    assert_int_equal(v.count, 3);
    assert_int_equal(v.v[2], 3);
    v = parse_sizes("7"); /* a scalar is a one-element list */
    assert_int_equal(v.count, 1);
    assert_int_equal(v.v[0], 7);
    assert_int_equal(parse_sizes("[]").count, 0);
    assert_int_equal(parse_sizes("").count, 0);
    assert_int_equal(parse_sizes("1,2,3,4,5,6,7,8").count, PB_LIST_MAX);

    list_bad(0, "[256, 0]", "pipeline.resize.size[1] must be between 1 and 16384, got 0");
    list_bad(0, "0", "pipeline.resize.size must be between 1 and 16384, got 0");
    list_bad(0, "1,x",
             "pipeline.resize.size[1] must be an integer between 1 and 16384, got 'x'");
    list_bad(0, "1,,2",
             "pipeline.resize.size[1] must be an integer between 1 and 16384, got ''");
    list_bad(0, "[1,2", "pipeline.resize.size must be a list such as [1, 2] or 1,2, got '[1,2'");
    list_bad(0, "1,2,3,4,5,6,7,8,9", "pipeline.resize.size takes at most 8 values, got 9");
    list_bad(1, "0.5, 2", "pipeline.normalize.mean[1] must be between -1 and 1, got 2");
    list_bad(1, "[nan]", "pipeline.normalize.mean must be a number between -1 and 1, got 'nan'");

    /* Element by element, as the YAML loader calls it. */
    const char *items[] = {"3", "4", "-5"};
    int bad = 0;
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_opt_parse_list(&list_table[0], items, 3, &l, "size", &bad, msg,
                                       sizeof msg),
                     PB_ERR_CONFIG);
    assert_int_equal(bad, 2);
    assert_string_equal(msg, "size[2] must be between 1 and 16384, got -5");
    assert_int_equal(pb_opt_parse_list(&list_table[0], items, 2, &l, "size", &bad, msg,
                                       sizeof msg),
                     PB_OK);
    assert_int_equal(l.size.count, 2);
    assert_int_equal(l.size.v[1], 4);
    assert_int_equal(pb_opt_parse_list(opt("count"), items, 1, &l, "count", &bad, msg,
                                       sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "count does not take a list of values");
}

static void test_list_describe_format_json(void **state)
{
    (void)state;
    char buf[128];
    pb_opt_describe(&list_table[0], buf, sizeof buf);
    assert_string_equal(buf, "list of up to 8 integers 1..16384");
    pb_opt_describe(&list_table[1], buf, sizeof buf);
    assert_string_equal(buf, "list of up to 8 numbers -1..1");

    struct lists l = list_defaults();
    pb_opt_format(&list_table[0], &l, buf, sizeof buf);
    assert_string_equal(buf, "[224]");
    l.mean.count = 3;
    l.mean.v[2] = 1.0 / 3.0;
    pb_opt_format(&list_table[1], &l, buf, sizeof buf);
    assert_string_equal(buf, "[0.5, 0.25, 0.33333333333333331]");
    struct lists back = list_defaults();
    char msg[PB_MSG_MAX] = "";
    assert_int_equal(pb_opt_parse(&list_table[1], buf, &back, "mean", msg, sizeof msg), PB_OK);
    assert_memory_equal(&back.mean, &l.mean, sizeof l.mean);
    l.size.count = 0;
    pb_opt_format(&list_table[0], &l, buf, sizeof buf);
    assert_string_equal(buf, "[]");

    /* JSON: arrays of numbers, and back. */
    l.size.count = 2;
    l.size.v[0] = 256;
    l.size.v[1] = 320;
    json_t *obj = pb_opt_to_json(list_table, &l);
    assert_non_null(obj);
    const json_t *size = json_object_get(obj, "size");
    assert_true(json_is_array(size));
    assert_int_equal(json_array_size(size), 2);
    assert_int_equal(json_integer_value(json_array_get(size, 1)), 320);
    assert_true(json_is_real(json_array_get(json_object_get(obj, "mean"), 0)));
    back = list_defaults();
    assert_int_equal(pb_opt_from_json(list_table, &back, obj, "sec", msg, sizeof msg), PB_OK);
    assert_int_equal(back.size.count, 2);
    assert_memory_equal(back.size.v, l.size.v, 2 * sizeof l.size.v[0]);
    assert_memory_equal(&back.mean, &l.mean, sizeof l.mean);
    json_decref(obj);

    /* A bare number is a one-element list. */
    obj = json_pack("{s:i, s:f}", "size", 5, "mean", 0.75);
    assert_int_equal(pb_opt_from_json(list_table, &back, obj, "sec", msg, sizeof msg), PB_OK);
    assert_int_equal(back.size.count, 1);
    assert_int_equal(back.size.v[0], 5);
    assert_true(back.mean.count == 1 && back.mean.v[0] == 0.75);
    json_decref(obj);

    struct {
        json_t *obj;
        const char *want;
    } cases[] = {
        {json_pack("{s:s}", "size", "256"), "sec.size must be an array of integers, got a string"},
        {json_pack("{s:[i,s]}", "size", 1, "a"), "sec.size[1] must be an integer, got a string"},
        {json_pack("{s:[i,f]}", "size", 1, 2.5), "sec.size[1] must be an integer, got a number"},
        {json_pack("{s:[i,i]}", "size", 1, 0), "sec.size[1] must be between 1 and 16384, got 0"},
        {json_pack("{s:[i,i,i,i,i,i,i,i,i]}", "size", 1, 1, 1, 1, 1, 1, 1, 1, 1),
         "sec.size takes at most 8 values, got 9"},
        {json_pack("{s:[b]}", "mean", 1), "sec.mean[0] must be a number, got a boolean"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        assert_non_null(cases[i].obj);
        assert_int_equal(pb_opt_from_json(list_table, &back, cases[i].obj, "sec", msg,
                                          sizeof msg),
                         PB_ERR_CONFIG);
        assert_string_equal(msg, cases[i].want);
        json_decref(cases[i].obj);
    }
}


/* Stand-alone values: parsed with the descriptor, stored into a struct
 * later, the same as pb_opt_parse would have written. */
static void test_values(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX] = "";
    static const char *const cases[][2] = {
        {"flag", "off"}, {"count", "17"}, {"ratio", "0.5"}, {"label", "xyz"},
        {"mode", "fail"}, {"shard", "2/4"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        const struct pb_opt *o = opt(cases[i][0]);
        union pb_opt_value value;
        if (pb_opt_parse_value(o, cases[i][1], &value, o->name, msg, sizeof msg) != PB_OK)
            fail_msg("%s=%s rejected: %s", cases[i][0], cases[i][1], msg);
        struct sample stored, parsed;
        assert_int_equal(pb_opt_set_defaults(table, &stored, msg, sizeof msg), PB_OK);
        parsed = stored;
        pb_opt_store_value(o, &value, &stored);
        assert_int_equal(pb_opt_parse(o, cases[i][1], &parsed, o->name, msg, sizeof msg), PB_OK);
        char a[64], b[64];
        pb_opt_format(o, &stored, a, sizeof a);
        pb_opt_format(o, &parsed, b, sizeof b);
        assert_string_equal(a, b);
        assert_true(pb_opt_in_table(table, o));
        assert_false(pb_opt_in_table(list_table, o));
    }
    union pb_opt_value value;
    assert_int_equal(pb_opt_parse_value(opt("count"), "2000", &value, "loader.workers", msg,
                                        sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "loader.workers must be between 0 and 1024, got 2000");
    assert_int_equal(pb_opt_parse_value(opt("label"), "toolong", &value, "label", msg,
                                        sizeof msg),
                     PB_OK);
    assert_int_equal(pb_opt_parse_value(opt("label"), "much too long", &value, "label", msg,
                                        sizeof msg),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "label is too long (at most 7 characters)");

    struct lists l = list_defaults();
    assert_int_equal(pb_opt_parse_value(&list_table[0], "[64, 48]", &value, "size", msg,
                                        sizeof msg),
                     PB_OK);
    pb_opt_store_value(&list_table[0], &value, &l);
    assert_int_equal(l.size.count, 2);
    assert_int_equal(l.size.v[1], 48);
    assert_true(l.mean.v[1] == 0.25); /* its neighbour is untouched */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_bad_default_is_reported),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_int),
        cmocka_unit_test(test_int_extreme_bounds),
        cmocka_unit_test(test_double),
        cmocka_unit_test(test_string),
        cmocka_unit_test(test_enum),
        cmocka_unit_test(test_shard),
        cmocka_unit_test(test_find_and_names),
        cmocka_unit_test(test_nearest),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_json_partial_and_errors),
        cmocka_unit_test(test_list_parse),
        cmocka_unit_test(test_list_describe_format_json),
        cmocka_unit_test(test_values),
    };
    return cmocka_run_group_tests(tests, 0, NULL);
}
