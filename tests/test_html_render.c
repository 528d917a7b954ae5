/* The HTML report in a real browser: a 2x2 sweep's page rendered by
 * headless Chromium (scripts/html-shot.sh) must draw something. Exits 77,
 * ctest's skip, where no Chromium is installed. */
#include <stdio.h>
#include <stdlib.h>

#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-html-render-XXXXXX";
static const char *source_dir;

static void test_sweep_page_renders(void **state)
{
    (void)state;
    char args[2048], *err;
    snprintf(args, sizeof(args),
             "run '%s/configs/null.yaml' -s dataset.path=data -s dataset.generate.count=64 "
             "-s dataset.generate.size_bytes=4096 -s run.warmup_batches=2 -s run.min_time_s=0.2 "
             "-s run.max_time_s=0.5 -s pipeline.decode.cost_us=100 -s run.step_ms=1 "
             "-s run.repeats=2 --no-calibrate -q -a loader.workers=1,2 -a loader.batch_size=4,8 "
             "-o sweep.json",
             source_dir);
    assert_int_equal(pb_test_run_pbench(workdir, args, &err), 0);
    free(err);
    assert_int_equal(pb_test_run_pbench(workdir, "report sweep.json --format html -o r.html", &err),
                     0);
    free(err);
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s/scripts/html-shot.sh' '%s/r.html' '%s/r.png'", source_dir,
             workdir, workdir);
    int status = system(cmd);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* not blank */
}

int main(void)
{
    source_dir = getenv("PBENCH_SOURCE_DIR");
    if (!source_dir || !getenv("PBENCH_BINARY")) {
        fprintf(stderr, "PBENCH_BINARY and PBENCH_SOURCE_DIR must be set (ctest sets them)\n");
        return 1;
    }
    if (system("command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null "
               "2>&1 || command -v google-chrome >/dev/null 2>&1") != 0) {
        fprintf(stderr, "skipped: no chromium installed (scripts/setup.sh installs it)\n");
        return 77;
    }
    pb_test_tmpdir_use(workdir);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_sweep_page_renders)};
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
