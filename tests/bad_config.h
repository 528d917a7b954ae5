/* A config that must be refused, and the sentence it must be refused
 * with: shared by the tests of the YAML loader (test_config_yaml.c) and of
 * the spec's rules (test_config.c). Header only, for tests. */
#ifndef PB_TESTS_BAD_CONFIG_H
#define PB_TESTS_BAD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/config/config.h"

/* A valid dataset and pipeline, 6 lines; cases append from line 7. */
#define HEAD                                                                                  \
    "dataset:\n"                                                                              \
    "  path: /data\n"                                                                         \
    "pipeline:\n"                                                                             \
    "  - read:\n"                                                                             \
    "  - decode:\n"                                                                           \
    "      decoder: null\n"

struct bad_case {
    const char *yaml;
    const char *want;
};

/* Loads c->yaml as bad.yaml; with at_validate, the config loads and then
 * fails pb_config_validate(). Fails the test unless the refusal is
 * PB_ERR_CONFIG with exactly c->want. */
static inline void check_bad(const struct bad_case *c, size_t index, bool at_validate)
{
    struct pb_spec spec;
    char msg[PB_MSG_MAX] = "";
    int rc = pb_config_load_string(c->yaml, "bad.yaml", &spec, msg, sizeof msg);
    if (at_validate) {
        if (rc != PB_OK)
            fail_msg("case %zu should load but: %s", index, msg);
        rc = pb_config_validate(&spec, msg, sizeof msg);
    }
    pb_spec_free(&spec);
    if (rc != PB_ERR_CONFIG || strcmp(msg, c->want) != 0)
        fail_msg("case %zu: rc %d\n got: %s\nwant: %s\nyaml:\n%s", index, rc, msg, c->want,
                 c->yaml);
}

/* check_bad on each of the count cases. */
static inline void check_bad_cases(const struct bad_case *cases, size_t count, bool at_validate)
{
    for (size_t i = 0; i < count; i++)
        check_bad(&cases[i], i, at_validate);
}

#endif
