/* `pbench list`, rendered in-process: every section, stage and decoder is
 * listed, one entry or one key on request, and a clear error otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/cli/list.h"
#include "bench/config/config.h"
#include "bench/sys/paths.h"
#include "decoders/decoder.h"
#include "pipelines/stage.h"

static char msg[PB_MSG_MAX];

/* The listing for filter, as a string the caller frees; rc its result. */
static char *list(const char *filter, int *rc)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    msg[0] = '\0';
    *rc = pb_list_print(out, filter, msg, sizeof(msg));
    fclose(out);
    return text;
}

/* A line of text that starts (after its indent) with word and a space. */
static bool has_entry(const char *text, const char *word)
{
    size_t len = strlen(word);
    for (const char *line = text; line && *line; line = strchr(line, '\n')) {
        line += *line == '\n';
        const char *at = line + strspn(line, " ");
        if (strncmp(at, word, len) == 0 && (at[len] == ' ' || at[len] == '\n'))
            return true;
    }
    return false;
}

static void test_everything(void **state)
{
    (void)state;
    int rc;
    char *text = list(NULL, &rc);
    assert_int_equal(rc, PB_OK);
    static const char *const sections[] = {"name",     "dataset", "dataset.generate",
                                           "pipeline", "loader",  "run",
                                           "sweep",    "gpu",     "profile"};
    for (size_t i = 0; i < PB_ARRAY_LEN(sections); i++)
        if (!has_entry(text, sections[i]))
            fail_msg("section %s is not listed", sections[i]);
    for (size_t i = 0; i < pb_section_count; i++)
        assert_true(has_entry(text, pb_sections[i].name));
    size_t count;
    const struct pb_stage_ops *const *stages = pb_stage_all(&count);
    for (size_t i = 0; i < count; i++)
        if (!has_entry(text, stages[i]->name))
            fail_msg("stage %s is not listed", stages[i]->name);
    const struct pb_decoder_ops *const *decoders = pb_decoder_all(&count);
    for (size_t i = 0; i < count; i++)
        if (!has_entry(text, decoders[i]->name))
            fail_msg("decoder %s is not listed", decoders[i]->name);
    assert_true(has_entry(text, "loader.workers"));
    assert_non_null(strstr(text, "integer 0..1024; default 2"));
    assert_true(has_entry(text, "profile.gpu"));
    assert_true(has_entry(text, "dataset.generate.count"));
    /* Lines stay readable: no help runs on past the wrap width by much. */
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        if (len > 110 && !strstr(line, "default ["))
            fail_msg("line of %zu characters: %.*s", len, (int)len, line);
        line += len + (line[len] == '\n');
    }
    free(text);
}

static void test_decode_lists_decoders(void **state)
{
    (void)state;
    int rc;
    char *text = list("decode", &rc);
    assert_int_equal(rc, PB_OK);
    static const char *const names[] = {"jpeg", "image", "auto", "video", "null"};
    for (size_t i = 0; i < PB_ARRAY_LEN(names); i++) {
        if (!pb_decoder_find(names[i]))
            continue;
        if (!has_entry(text, names[i]))
            fail_msg("decoder %s is not listed under decode:\n%s", names[i], text);
    }
    assert_true(has_entry(text, "decoder"));
    assert_true(has_entry(text, "cost_us")); /* the null decoder's options */
    assert_null(strstr(text, "one of the decoders below"));
    assert_false(has_entry(text, "resize"));
    free(text);
}

/* Lists filter and checks the entries it must and must not show. */
static void expect_listing(const char *filter, const char *const *shown, size_t shown_count,
                           const char *absent)
{
    int rc;
    char *text = list(filter, &rc);
    assert_int_equal(rc, PB_OK);
    for (size_t i = 0; i < shown_count; i++)
        if (!has_entry(text, shown[i]) && !strstr(text, shown[i]))
            fail_msg("pbench list %s does not show '%s':\n%s", filter, shown[i], text);
    if (absent && strstr(text, absent))
        fail_msg("pbench list %s shows '%s':\n%s", filter, absent, text);
    free(text);
}

static void test_one_section_and_one_key(void **state)
{
    (void)state;
    static const struct {
        const char *filter;
        const char *shown[3];
        const char *absent;
    } cases[] = {
        {"loader", {"loader", "loader.batch_size"}, "run.repeats"},
        {"loader.workers",
         {"loader.workers", "integer 0..1024; default 2", "Worker threads"},
         "batch_size"},
        {"dataset", {"dataset.shuffle", "dataset.generate.count"}, "loader.workers"},
        {"gpu", {"one of: required, optional"}, "profile"},
        {"resize.size", {"resize.size"}, "interpolation"},
        {"pipeline.resize", {"shorter_side"}, "cost_us"},
        {"null.cost_us", {"null.cost_us"}, "width"},
        {"decode.decoder", {"decode.decoder"}, "cost_us"},
        {"analysis", {"analysis.input_bound_high_pct", "analysis.tie_pct", "default 20"},
         "loader"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        size_t n = 0;
        while (n < PB_ARRAY_LEN(cases[i].shown) && cases[i].shown[n])
            n++;
        expect_listing(cases[i].filter, cases[i].shown, n, cases[i].absent);
    }
}

static void test_unknown_names(void **state)
{
    (void)state;
    int rc;
    char *text = list("lodaer", &rc);
    assert_int_equal(rc, PB_ERR_CONFIG);
    assert_string_equal(msg, "nothing is called 'lodaer'; did you mean 'loader'? run 'pbench "
                             "list' for every entry");
    assert_string_equal(text, "");
    free(text);

    text = list("loader.wrkers", &rc);
    assert_int_equal(rc, PB_ERR_CONFIG);
    assert_string_equal(msg, "nothing is called 'loader.wrkers'; did you mean 'loader.workers'? "
                             "run 'pbench list' for every entry");
    free(text);

    text = list("xyzzy", &rc);
    assert_int_equal(rc, PB_ERR_CONFIG);
    assert_string_equal(msg, "nothing is called 'xyzzy'; run 'pbench list' for every entry");
    free(text);
}

/* Each shipped config's line in `pbench list configs` is a whole
 * sentence: joined from its comment's first paragraph, ended by a full
 * stop, or cut at a word with "..." - never mid-phrase ("my_data.py (a"). */
static void test_config_descriptions_are_sentences(void **state)
{
    (void)state;
    const char *src = getenv("PBENCH_SOURCE_DIR");
    if (!src)
        skip();
    assert_int_equal(chdir(src), 0);
    static struct pb_config_entry entries[64];
    size_t n = pb_config_entries(entries, 64);
    assert_true(n >= 5);
    for (size_t i = 0; i < n; i++) {
        const char *d = entries[i].description;
        size_t len = strlen(d);
        int open = 0;
        for (const char *c = d; *c; c++)
            open += *c == '(' ? 1 : *c == ')' ? -1 : 0;
        if (len == 0 || d[len - 1] != '.' || open != 0)
            fail_msg("%s: description '%s' is not a sentence", entries[i].name, d);
    }
}

/* text with every run of white space made one space, in place. */
static void squeeze(char *text)
{
    char *out = text;
    for (const char *c = text; *c; c++) {
        bool space = *c == ' ' || *c == '\n' || *c == '\t';
        if (!space || (out > text && out[-1] != ' '))
            *out++ = space ? ' ' : *c;
    }
    *out = '\0';
}

/* The rule for relative paths is one sentence, said alike by pbench's
 * help and list and by the README and docs/install.md. */
static void test_path_rule_said_alike(void **state)
{
    (void)state;
    const char *src = getenv("PBENCH_SOURCE_DIR");
    if (!src)
        skip();
    char rule[] = PB_PATH_RULE;
    squeeze(rule);
    static const char *const docs[] = {"README.md", "docs/install.md"};
    for (size_t i = 0; i < 2; i++) {
        char path[PB_PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", src, docs[i]);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        static char text[1 << 20];
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = '\0';
        squeeze(text);
        if (!strstr(text, rule))
            fail_msg("%s does not state the path rule: %s", docs[i], rule);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_everything),
        cmocka_unit_test(test_decode_lists_decoders),
        cmocka_unit_test(test_one_section_and_one_key),
        cmocka_unit_test(test_unknown_names),
        cmocka_unit_test(test_config_descriptions_are_sentences),
        cmocka_unit_test(test_path_rule_said_alike),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
