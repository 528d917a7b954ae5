/* Fuzz target: the result reader with `report` and `compare`. The input is
 * a result file's JSON. It is read as `pbench report` reads one (main.c:
 * pb_result_from_json, pb_analyze, the analysis replaced for a sweep),
 * rendered in every format, compared with itself and the comparison
 * printed in every format, all to /dev/null.
 *
 * Beyond crashes, sanitizer reports and leaks it checks that a result
 * compared with itself shows no regression or improvement and no
 * difference, and that a result read from JSON writes JSON that reads
 * back. Seeds: small results of `pbench run configs/null.yaml` and
 * configs/sweep-null.yaml (scripts/fuzz.sh). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "bench/analyze/analysis.h"
#include "bench/analyze/verdict.h"
#include "bench/analyze/compare.h"
#include "bench/report/format.h"
#include "bench/report/report.h"
#include "bench/result/result.h"
#include "tests/fuzz/fuzzutil.h"

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    devnull = fopen("/dev/null", "w");
    FUZZ_CHECK(devnull != NULL, "cannot open /dev/null");
    return 0;
}

static void report_every_format(struct pb_result *result)
{
    static const enum pb_format formats[] = {PB_FORMAT_TABLE, PB_FORMAT_JSON, PB_FORMAT_MARKDOWN,
                                             PB_FORMAT_CSV};
    struct pb_analysis analysis;
    bool analyzed = pb_analyze(result, &analysis) == PB_OK;
    if (analyzed && result->point_count > 1) {
        json_decref(result->analysis);
        result->analysis = pb_analysis_to_json(&analysis);
    }
    for (size_t i = 0; i < PB_ARRAY_LEN(formats); i++)
        pb_report_analyzed(devnull, result, analyzed ? &analysis : NULL, formats[i]);
    if (analyzed)
        pb_analysis_free(&analysis);
}

static void compare_with_itself(const struct pb_result *result)
{
    static const int formats[] = {PB_FORMAT_TABLE, PB_FORMAT_JSON, PB_FORMAT_MARKDOWN};
    struct pb_comparison cmp;
    FUZZ_CHECK(pb_compare(result, result, 5.0, &cmp) == PB_OK, "pb_compare failed");
    FUZZ_CHECK(cmp.regressions == 0 && cmp.improvements == 0,
               "a result compared with itself: %d regressions, %d improvements", cmp.regressions,
               cmp.improvements);
    FUZZ_CHECK(!cmp.incompatible && cmp.difference_count == 0,
               "a result compared with itself differs: %s",
               cmp.difference_count ? cmp.differences[0] : "(incompatible)");
    for (size_t i = 0; i < PB_ARRAY_LEN(formats); i++)
        pb_comparison_print(devnull, devnull, &cmp, "base.json", "new.json", formats[i], false);
    json_decref(pb_comparison_to_json(&cmp));
    pb_comparison_free(&cmp);
}

/* What pbench writes from a result it read, it reads again. */
static void check_written_reads_back(const struct pb_result *result)
{
    json_t *json = pb_result_to_json(result);
    FUZZ_CHECK(json != NULL, "pb_result_to_json returned NULL");
    struct pb_result again;
    char msg[PB_MSG_MAX] = "";
    int rc = pb_result_from_json(json, &again, msg, sizeof(msg));
    FUZZ_CHECK(rc == PB_OK, "a result written from one read does not read back: %s", msg);
    pb_result_free(&again);
    json_decref(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t error;
    json_t *root = json_loadb((const char *)data, size, 0, &error);
    if (!root)
        return 0;
    struct pb_result result;
    char msg[PB_MSG_MAX] = "";
    int rc = pb_result_from_json(root, &result, msg, sizeof(msg));
    json_decref(root);
    if (rc != PB_OK) {
        FUZZ_CHECK(msg[0] != 0, "pb_result_from_json failed without a message");
        pb_result_free(&result);
        return 0;
    }
    check_written_reads_back(&result);
    compare_with_itself(&result);
    report_every_format(&result);
    fflush(devnull);
    pb_result_free(&result);
    return 0;
}
