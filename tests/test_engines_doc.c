/* docs/engines.md runs as written: each `pbench run` line of its examples
 * and its YAML config (your own Dataset), on small generated photos with
 * short measured parts appended to the command line. Skipped, saying why,
 * where Debian's python3-torch is missing. No test asserts a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

static const char *binary;
static const char *source_dir;
static char workdir[] = "/tmp/pbench-enginesdoc-XXXXXX";
static bool have_torch;

/* Appended to each command: a small measured part, on small photos when
 * the command names a shipped config (its data would be 1000 photos). */
#define SHORT                                                                                  \
    " -s run.warmup_batches=1 -s run.min_time_s=0.2 -s run.max_time_s=0.5 "                   \
    "-s run.window_s=0.1 -s run.repeats=1 -s loader.batch_size=8"
#define SMALL_DATA                                                                             \
    " -s dataset.path=img -s dataset.generate.count=32 -s dataset.generate.size=96x72-128x96"

static int setup(void **state)
{
    pb_test_tmpdir_use(workdir);
    binary = getenv("PBENCH_BINARY");
    source_dir = getenv("PBENCH_SOURCE_DIR");
    if (!binary || !source_dir) {
        fprintf(stderr, "PBENCH_BINARY and PBENCH_SOURCE_DIR must be set (ctest sets them)\n");
        return -1;
    }
    have_torch = pb_test_have_torch();
    return pb_test_tmpdir_setup(state);
}

static void run_ok(const char *args)
{
    char *err = NULL;
    int rc = pb_test_run_pbench(workdir, args, &err);
    if (rc != 0)
        fail_msg("pbench %s: exit %d: %s", args, rc, err ? err : "");
    free(err);
}

/* The page's text. */
static char *page(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/docs/engines.md", source_dir);
    return pb_test_read_file(path, NULL, true);
}

/* Each line of a ``` block that starts "pbench run ": run from the
 * source tree's configs, with the short settings. Returns how many ran. */
static int run_command_lines(const char *text)
{
    int ran = 0;
    bool in_block = false;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len >= 3 && strncmp(line, "```", 3) == 0)
            in_block = !in_block;
        else if (in_block && len > 11 && strncmp(line, "pbench run ", 11) == 0) {
            char command[1024], args[2048];
            snprintf(command, sizeof command, "%.*s", (int)len, line);
            char *comment = strstr(command, "  #");
            if (comment)
                *comment = '\0';
            const char *rest = command + 11; /* "configs/NAME.yaml ..." */
            snprintf(args, sizeof args, "run '%s/%s" SHORT "%s", source_dir, rest,
                     strncmp(rest, "configs/", 8) == 0 ? SMALL_DATA : "");
            char *space = strchr(args + 5, ' '); /* close the quote after the file */
            if (space) {
                memmove(space + 1, space, strlen(space) + 1);
                *space = '\'';
            }
            run_ok(args);
            ran++;
        }
        line = end ? end + 1 : NULL;
    }
    return ran;
}

static void test_command_lines_run(void **state)
{
    (void)state;
    if (!have_torch) {
        fprintf(stderr, "skipped: torch is not installed: apt-get install python3-torch "
                        "python3-torchvision python3-av (scripts/setup.sh does)\n");
        skip();
    }
    char *text = page();
    assert_true(run_command_lines(text) >= 4);
    free(text);
}

/* The ```yaml block (your own Dataset), saved as its comment says, in a
 * folder laid out as pbench's (examples/ beside it, data/image made). */
static void test_own_dataset_yaml_runs(void **state)
{
    (void)state;
    if (!have_torch) {
        fprintf(stderr, "skipped: torch is not installed\n");
        skip();
    }
    char *text = page();
    const char *start = strstr(text, "```yaml\n");
    assert_non_null(start);
    start += 8;
    const char *end = strstr(start, "```");
    assert_non_null(end);
    char path[700], args[1024];
    snprintf(path, sizeof path, "%s/my-dataset.yaml", workdir);
    pb_test_write_file(path, start, (size_t)(end - start));
    free(text);
    snprintf(path, sizeof path, "%s/examples", workdir);
    char target[600];
    snprintf(target, sizeof target, "%s/examples", source_dir);
    assert_int_equal(symlink(target, path), 0);
    snprintf(args, sizeof args,
             "gen --kind jpeg --out data/image --count 32 --size 96x72-128x96");
    run_ok(args);
    run_ok("run my-dataset.yaml" SHORT " -o mine.json");
    json_t *r = pb_test_load_json(workdir, "mine.json");
    const json_t *p = json_array_get(json_object_get(r, "points"), 0);
    assert_true(json_number_value(json_object_get(p, "samples")) > 0);
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_dataset_yaml_runs),
        cmocka_unit_test(test_command_lines_run),
    };
    return cmocka_run_group_tests(tests, setup, pb_test_tmpdir_teardown);
}
