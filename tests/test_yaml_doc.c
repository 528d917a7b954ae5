/* The YAML document loader: nesting up to the cap loads, one level more
 * fails at its line and column; syntax errors, a second document and a
 * missing file say so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/base/yaml_doc.h"

/* "key: " then depth - 1 nested flow sequences: depth levels in all. */
static char *nested(int depth)
{
    char *text = malloc(2 * (size_t)depth + 16);
    assert_non_null(text);
    int n = sprintf(text, "key: ");
    memset(text + n, '[', (size_t)depth - 1);
    memset(text + n + depth - 1, ']', (size_t)depth - 1);
    text[n + 2 * (depth - 1)] = '\0';
    return text;
}

static void test_depth_cap(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX];
    yaml_document_t doc;
    char *text = nested(PB_YAML_MAX_DEPTH);
    assert_int_equal(pb_yaml_load(NULL, text, "ok.yaml", &doc, msg, sizeof(msg)), PB_OK);
    yaml_document_delete(&doc);
    free(text);
    text = nested(PB_YAML_MAX_DEPTH + 1);
    assert_int_equal(pb_yaml_load(NULL, text, "deep.yaml", &doc, msg, sizeof(msg)), PB_ERR_CONFIG);
    /* The 65th level is the 64th '[' (column 6 + 63). */
    assert_string_equal(msg, "deep.yaml:1:69: the YAML nests deeper than 64 levels");
    free(text);
}

static void test_errors(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX];
    yaml_document_t doc;
    assert_int_equal(pb_yaml_load(NULL, "a: [1, 2\n", "bad.yaml", &doc, msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "bad.yaml:"));
    assert_non_null(strstr(msg, "YAML syntax error"));
    assert_int_equal(pb_yaml_load(NULL, "a: 1\n---\nb: 2\n", "two.yaml", &doc, msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "two.yaml:2:1: the file holds more than one YAML document");
    assert_int_equal(
        pb_yaml_load("/nonexistent/x.yaml", NULL, "/nonexistent/x.yaml", &doc, msg, sizeof(msg)),
        PB_ERR_CONFIG); /* a missing config is a usage error: exit 2 */
    assert_non_null(strstr(msg, "cannot open '/nonexistent/x.yaml'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_depth_cap),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
