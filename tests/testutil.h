/* Helpers the CMocka tests share: a temporary folder per test program,
 * small files written and read back, the pbench binary run in a folder,
 * JSON results loaded with a failing assertion when they cannot be,
 * substring checks and a seeded random source. Header only: every function is static inline, so a test uses
 * what it needs and nothing is linked twice. */
#ifndef PB_TESTS_TESTUTIL_H
#define PB_TESTS_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ftw.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench/base/pb.h"
#include "tests/jsonschema.h"

/* Creates a fresh folder from tmpl, whose name ends in XXXXXX (replaced in
 * place, as mkdtemp does). Returns 0 on success and -1 on failure, the
 * return value of a CMocka group setup. */
static inline int pb_test_tmpdir_make(char *tmpl)
{
    return mkdtemp(tmpl) ? 0 : -1;
}

/* The result schema (docs/result.schema.json), loaded once; NULL when
 * PBENCH_SOURCE_DIR is not set (a test run by hand). */
static inline json_t *pb_test_result_schema(void)
{
    static json_t *schema;
    static bool loaded;
    const char *src = getenv("PBENCH_SOURCE_DIR");
    if (!loaded && src) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/docs/result.schema.json", src);
        json_error_t jerr;
        schema = json_load_file(path, 0, &jerr);
        if (!schema) {
            fprintf(stderr, "%s:%d: %s\n", path, jerr.line, jerr.text);
            exit(1);
        }
    }
    loaded = true;
    return schema;
}

/* How many result files pb_test_remove_entry found not to match the schema. */
static inline int *pb_test_schema_failures(void)
{
    static int failures;
    return &failures;
}

/* A result file pbench wrote (schema_version, pbench_version and machine at
 * the top) is checked against the schema before it goes: every result the
 * test suite writes validates (docs/results.md). */
static inline void pb_test_check_result_file(const char *path)
{
    size_t n = strlen(path);
    json_t *schema = pb_test_result_schema();
    if (!schema || n < 5 || strcmp(path + n - 5, ".json") != 0)
        return;
    json_t *doc = json_load_file(path, 0, NULL);
    if (json_is_object(doc) && json_object_get(doc, "schema_version") &&
        json_object_get(doc, "pbench_version") && json_object_get(doc, "machine")) {
        char err[1024];
        if (pb_schema_validate(schema, doc, err, sizeof(err)) != 0) {
            fprintf(stderr, "%s does not match docs/result.schema.json: %s\n", path, err);
            (*pb_test_schema_failures())++;
        }
    }
    json_decref(doc);
}

/* The nftw callback of pb_test_tmpdir_remove: removes one entry, checking
 * a result file first. */
static inline int pb_test_remove_entry(const char *path, const struct stat *st, int flag,
                                       struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_F)
        pb_test_check_result_file(path);
    return remove(path);
}

/* Removes dir and everything below it, without following links. Returns 0
 * on success and -1 on failure, the return value of a CMocka group
 * teardown. A result file below it that does not match the schema ends
 * the test program with exit status 1. */
static inline int pb_test_tmpdir_remove(const char *dir)
{
    int rc = nftw(dir, pb_test_remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
    if (*pb_test_schema_failures() > 0) {
        fprintf(stderr, "%d result file(s) do not match docs/result.schema.json\n",
                *pb_test_schema_failures());
        exit(1);
    }
    return rc;
}

/* The folder template that pb_test_tmpdir_setup makes and
 * pb_test_tmpdir_teardown removes, set by pb_test_tmpdir_use. */
static inline char **pb_test_tmpdir_slot(void)
{
    static char *tmpl;
    return &tmpl;
}

/* Names the test program's folder template (kept, not copied: the setup
 * replaces its XXXXXX) for the two group fixtures below. */
static inline void pb_test_tmpdir_use(char *tmpl)
{
    *pb_test_tmpdir_slot() = tmpl;
}

/* CMocka group setup: makes the folder named by pb_test_tmpdir_use. */
static inline int pb_test_tmpdir_setup(void **state)
{
    (void)state;
    return pb_test_tmpdir_make(*pb_test_tmpdir_slot());
}

/* CMocka group teardown: removes that folder and all below it. */
static inline int pb_test_tmpdir_teardown(void **state)
{
    (void)state;
    return pb_test_tmpdir_remove(*pb_test_tmpdir_slot());
}

/* Writes len bytes of data to path (created or truncated); fails the
 * running test when the file cannot be written whole. */
static inline void pb_test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* Reads the whole file at path into a new NUL-terminated buffer (free it)
 * and stores its size in *len_bytes when that is not NULL. A file that
 * cannot be opened fails the running test when required is true and reads
 * as an empty string otherwise. */
static inline char *pb_test_read_file(const char *path, size_t *len_bytes, bool required)
{
    FILE *f = fopen(path, "rb");
    if (required)
        assert_non_null(f);
    size_t n = 0;
    char *buf = NULL;
    if (f) {
        fseek(f, 0, SEEK_END);
        long end = ftell(f);
        fseek(f, 0, SEEK_SET);
        n = end > 0 ? (size_t)end : 0;
        buf = calloc(1, n + 1);
        assert_non_null(buf);
        if (fread(buf, 1, n, f) != n) {
            assert_false(required);
            buf[0] = 0;
            n = 0;
        }
        fclose(f);
    } else {
        buf = calloc(1, 1);
        assert_non_null(buf);
    }
    if (len_bytes)
        *len_bytes = n;
    return buf;
}

/* Runs the pbench binary named by $PBENCH_BINARY with args (a shell
 * fragment) in the folder dir, its stdout going to dir/out.txt and its
 * stderr to dir/err.txt. Stores that stderr in *err (a new string: free
 * it) and returns the exit code, -1 when pbench did not exit. */
static inline int pb_test_run_pbench(const char *dir, const char *args, char **err)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' %s >'%s/out.txt' 2>'%s/err.txt'", dir,
             getenv("PBENCH_BINARY"), args, dir, dir);
    int status = system(cmd);
    char path[PB_PATH_MAX];
    snprintf(path, sizeof(path), "%s/err.txt", dir);
    *err = pb_test_read_file(path, NULL, false);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Loads the JSON document dir/name; fails the running test with the parser's
 * message when it cannot. The caller owns the reference. */
/* Whether the Python that the torch engine runs ($PBENCH_PYTHON, else
 * Debian's /usr/bin/python3) imports torch and torchvision. */
static inline bool pb_test_have_torch(void)
{
    const char *python = getenv("PBENCH_PYTHON");
    char probe[600];
    snprintf(probe, sizeof probe, "'%s' -c 'import torch, torchvision' >/dev/null 2>&1",
             python && python[0] ? python : "/usr/bin/python3");
    return system(probe) == 0;
}

static inline json_t *pb_test_load_json(const char *dir, const char *name)
{
    char path[PB_PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root)
        fail_msg("cannot load %s: %s (line %d)", path, err.text, err.line);
    return root;
}

/* Asserts that text contains each string of the NULL-terminated list
 * needles, one assertion a string, in order. */
static inline void pb_test_assert_contains(const char *text, const char *const *needles)
{
    for (const char *const *n = needles; *n; n++)
        if (!strstr(text, *n))
            fail_msg("\"%s\" not found in:\n%s", *n, text);
}

/* The next value of the seeded random sequence kept in *state. */
static inline uint64_t pb_test_rnd(uint64_t *state)
{
    *state = pb_mix64(*state);
    return *state;
}

/* qsort order of uint64_t values, smallest first. */
static inline int pb_test_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

#endif
