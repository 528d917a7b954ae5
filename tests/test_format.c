/* Tests for bench/report/format.c: the table of report formats, one row
 * per format, --format's names parsed back to their rows, and a report
 * written atomically that says why when it cannot be. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/report/format.h"
#include "bench/result/result.h"
#include "tests/result_fixture.h"
#include "tests/testutil.h"

static void test_format_parse(void **state)
{
    (void)state;
    enum pb_format format = PB_FORMAT_TABLE;
    assert_int_equal(pb_format_parse("json", &format), PB_OK);
    assert_int_equal(format, PB_FORMAT_JSON);
    assert_int_equal(pb_format_parse("markdown", &format), PB_OK);
    assert_int_equal(format, PB_FORMAT_MARKDOWN);
    assert_int_equal(pb_format_parse("csv", &format), PB_OK);
    assert_int_equal(format, PB_FORMAT_CSV);
    assert_int_equal(pb_format_parse("table", &format), PB_OK);
    assert_int_equal(format, PB_FORMAT_TABLE);
    assert_int_equal(pb_format_parse("yaml", &format), PB_ERR_CONFIG);
    assert_int_equal(pb_format_parse(NULL, &format), PB_ERR_CONFIG);
}

/* Every format in enum pb_format has its row: a name --format takes back,
 * a result renderer; the names in help and messages come from the rows. */
static void test_format_table_complete(void **state)
{
    (void)state;
    for (int f = 0; f < PB_FORMAT_COUNT; f++) {
        assert_non_null(pb_formats[f].name);
        assert_non_null(pb_formats[f].result);
        enum pb_format back = PB_FORMAT_COUNT;
        assert_int_equal(pb_format_parse(pb_formats[f].name, &back), PB_OK);
        assert_int_equal(back, f);
    }
    char names[256];
    pb_format_names(names, sizeof(names), "|", false);
    assert_string_equal(names, "table|json|markdown|csv|html|tsv|prometheus");
    pb_format_names(names, sizeof(names), ", ", true);
    assert_string_equal(names, "table, json, markdown, html");
}

/* A report that cannot be written says why with the write's own reason
 * (a full disk reads "No space left on device", here a file size limit
 * "File too large"), not a generic "Input/output error"; no file is left. */
static void test_report_write_error_names_the_cause(void **state)
{
    (void)state;
    char dir[] = "/tmp/pbench-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof(path), "%s/r.json", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead */
        struct rlimit small = {512, 512};
        setrlimit(RLIMIT_FSIZE, &small);
        struct pb_result result;
        make_result(&result, 17);
        char msg[PB_MSG_MAX];
        int rc = pb_report_write(path, &result, NULL, PB_FORMAT_JSON, PB_ROWS_POINTS, msg, sizeof(msg));
        pb_result_free(&result);
        _exit(rc == PB_ERR && strstr(msg, strerror(EFBIG)) && access(path, F_OK) != 0 ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(pb_test_tmpdir_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_parse),
        cmocka_unit_test(test_format_table_complete),
        cmocka_unit_test(test_report_write_error_names_the_cause),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
