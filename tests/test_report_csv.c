/* Tests for bench/report/report_csv.c: the result as CSV and TSV for
 * people's own tools. The header's columns, a row per point and stage
 * (or per repeat), a column per sweep axis, RFC 4180 quoting of text
 * cells, numbers unquoted and never formula-guarded, text that a
 * spreadsheet would run guarded with a leading ', and TSV as the same
 * table with tabs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/base/stats.h"
#include "bench/report/format.h"
#include "bench/report/report_csv.h"
#include "bench/result/figures.h"
#include "bench/result/result.h"
#include "tests/result_fixture.h"
#include "tests/testutil.h"

/* TSV is the CSV table with tabs: the same header and rows, 38 cells
 * each, nothing quoted (the axes keep their comma); a tab inside a name
 * is printed as \x09, so it never splits a cell. */
static void test_report_tsv(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 17);
    char *csv = render(&result, PB_FORMAT_CSV);
    char *tsv = render(&result, PB_FORMAT_TSV);
    size_t csv_lines = 0, tsv_lines = 0;
    for (const char *p = csv; *p; p++)
        csv_lines += *p == '\n';
    int tabs = 0;
    for (const char *p = tsv; *p; p++) {
        if (*p == '\t')
            tabs++;
        if (*p == '\n') {
            assert_int_equal(tabs, 37);
            tabs = 0;
            tsv_lines++;
        }
    }
    assert_int_equal(tsv_lines, csv_lines);
    assert_true(tsv_lines > 1);
    size_t header = strcspn(csv, "\n");
    for (size_t i = 0; i < header; i++)
        if (csv[i] == ',')
            csv[i] = '\t';
    assert_memory_equal(tsv, csv, header + 1);
    assert_null(strchr(tsv, '"'));
    pb_test_assert_contains(tsv, (const char *const[]){
                                     "\t0\t2\t224,224\tloader.workers=2;pipeline.resize.size=224,224\t", NULL});
    free(csv);
    free(tsv);
    snprintf(result.points[0].stages[0].name, sizeof(result.points[0].stages[0].name), "a\tb");
    tsv = render(&result, PB_FORMAT_TSV);
    pb_test_assert_contains(tsv, (const char *const[]){"\ta\\x09b\t", NULL});
    free(tsv);
    pb_result_free(&result);
}

/* Splits one CSV line (RFC 4180 quoting, no line breaks inside a field)
 * into cells, each allocated; returns the count. */
static size_t csv_cells(const char *line, char **cells, size_t max)
{
    size_t n = 0;
    const char *p = line;
    while (n < max) {
        char *cell = malloc(strlen(line) + 1);
        assert_non_null(cell);
        size_t used = 0;
        if (*p == '"') {
            for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
                if (*p == '"')
                    p++;
                cell[used++] = *p;
            }
            p += *p == '"';
        } else {
            while (*p && *p != ',' && *p != '\n')
                cell[used++] = *p++;
        }
        cell[used] = '\0';
        cells[n++] = cell;
        if (*p != ',')
            break;
        p++;
    }
    return n;
}

static void cells_free(char **cells, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(cells[i]);
}

/* The index of name among the header's cells; fails the test when absent. */
static size_t column_of(char **header, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(header[i], name) == 0)
            return i;
    fail_msg("no column %s", name);
    return 0;
}

/* The CSV renders result in rows (the analysis left out). */
static __attribute__((noinline)) char *render_rows(const struct pb_result *result, enum pb_format format,
                         enum pb_report_rows rows)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    pb_report_rows(out, result, NULL, format, rows);
    fclose(out);
    return text;
}

/* A point's stage's CPU per sample by hand, µs: the median over the
 * repeats that ran to their end of each one's row's CPU over the samples
 * through its pipeline (bench/result/figures.h). */
static double stage_median_us(const struct pb_point_result *p, const char *name)
{
    double v[16];
    size_t n = 0;
    for (size_t r = 0; r < pb_point_finished_repeats(p) && n < 16; r++) {
        const struct pb_repeat_result *rep = &p->repeats[r];
        for (size_t k = 0; !rep->interrupted && k < rep->stage_count; k++)
            if (strcmp(rep->stages[k].name, name) == 0 && rep->stages[k].cpu_ns > 0)
                v[n++] = (double)rep->stages[k].cpu_ns /
                         (double)pb_stages_samples(rep->stages, rep->stage_count);
    }
    if (n)
        return pb_median(v, n) / 1000;
    for (size_t k = 0; k < p->stage_count; k++) /* no such repeat: the pooled rows' */
        if (strcmp(p->stages[k].name, name) == 0)
            return (double)p->stages[k].cpu_ns /
                   (double)pb_stages_samples(p->stages, p->stage_count) / 1000;
    return NAN;
}

/* Data out for people's own tools: each CSV row names the run, its created
 * time and point, a column per sweep axis holds the point's value (numbers
 * as numbers, never formula-guarded; text guarded), and the point's other
 * CPU, time to the first batch and CPU per sample (the stages' CPU over the
 * samples through them, as compare and history read it) sit beside the
 * stage's CPU per sample through the pipeline. */
static void test_report_csv_columns(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 18);
    /* An axis only the second point has, with text a spreadsheet would run. */
    json_object_set_new(result.points[1].axes, "dataset.tag", json_string("=cmd"));
    json_object_set_new(result.points[1].axes, "loader.workers", json_integer(-3));
    char *csv = render(&result, PB_FORMAT_CSV);
    char *header[64], *cells[64];
    size_t columns = csv_cells(csv, header, 64);
    assert_int_equal(columns, 3 + 3 + 1 + 32);
    size_t workers = column_of(header, columns, "loader.workers");
    size_t tag = column_of(header, columns, "dataset.tag");
    size_t cpu_us = column_of(header, columns, "cpu_us_per_sample");
    size_t other = column_of(header, columns, "other_cpu_pct");
    size_t first = column_of(header, columns, "first_batch_s");
    size_t stage = column_of(header, columns, "stage");
    size_t stage_us = column_of(header, columns, "stage_cpu_us_per_sample");
    assert_int_equal(column_of(header, columns, "run"), 0);
    assert_int_equal(column_of(header, columns, "created"), 1);
    assert_int_equal(column_of(header, columns, "point"), 2);
    size_t rows = 0;
    for (const char *line = strchr(csv, '\n') + 1; *line; line = strchr(line, '\n') + 1, rows++) {
        size_t n = csv_cells(line, cells, 64);
        assert_int_equal(n, columns);
        assert_string_equal(cells[0], "image-basic");
        assert_string_equal(cells[1], "2025-01-02T03:04:05Z");
        size_t i = (size_t)atoi(cells[2]);
        const struct pb_point_result *p = &result.points[i];
        assert_string_equal(cells[workers], i == 0 ? "2" : "-3"); /* a number: no ' */
        assert_string_equal(cells[tag], i == 0 ? "" : "'=cmd");
        assert_true(fabs(strtod(cells[other], NULL) - p->other_cpu_pct) < 1e-6);
        assert_true(fabs(strtod(cells[first], NULL) - p->first_batch_s) < 1e-6);
        double want = pb_point_cpu_ns_per_sample(p) / 1000;
        assert_true(fabs(strtod(cells[cpu_us], NULL) / want - 1) < 1e-8);
        const struct pb_stage_result *st = NULL;
        for (size_t k = 0; k < p->stage_count; k++)
            if (strcmp(p->stages[k].name, cells[stage]) == 0)
                st = &p->stages[k];
        assert_non_null(st);
        want = stage_median_us(p, st->name);
        assert_true(fabs(strtod(cells[stage_us], NULL) / want - 1) < 1e-8);
        cells_free(cells, n);
    }
    assert_int_equal(rows, result.points[0].stage_count + result.points[1].stage_count);
    cells_free(header, columns);
    free(csv);
    pb_result_free(&result);
}

/* --rows repeats: one row per repeat of each point, numbered, with the
 * axes as columns, the repeat's own figures and a column of CPU per sample
 * for each stage; TSV has the same cells. The formats without the form
 * have no repeats renderer. */
static void test_report_csv_repeats(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 19);
    char *csv = render_rows(&result, PB_FORMAT_CSV, PB_ROWS_REPEATS);
    char *header[64], *cells[64];
    size_t columns = csv_cells(csv, header, 64);
    /* run, created, point, repeat, 2 axes, axes, 16 figures, 4 stages */
    assert_int_equal(columns, 4 + 2 + 1 + 16 + 4);
    assert_string_equal(header[3], "repeat");
    size_t workers = column_of(header, columns, "loader.workers");
    size_t sps = column_of(header, columns, "samples_per_s");
    size_t cpu_us = column_of(header, columns, "cpu_us_per_sample");
    size_t decode_us = column_of(header, columns, "decode.cpu_us_per_sample");
    size_t interrupted = column_of(header, columns, "interrupted");
    size_t rows = 0;
    for (const char *line = strchr(csv, '\n') + 1; *line; line = strchr(line, '\n') + 1, rows++) {
        size_t n = csv_cells(line, cells, 64);
        assert_int_equal(n, columns);
        size_t i = (size_t)atoi(cells[2]), r = (size_t)atoi(cells[3]);
        assert_true(i < result.point_count && r < result.points[i].repeat_count);
        assert_int_equal(rows, i * result.points[0].repeat_count + r);
        const struct pb_repeat_result *rep = &result.points[i].repeats[r];
        assert_int_equal(atoi(cells[workers]), 2 + 2 * (int)i);
        assert_true(fabs(strtod(cells[sps], NULL) / rep->samples_per_s - 1) < 1e-8);
        double want = pb_repeat_cpu_ns_per_sample(rep) / 1000;
        assert_true(fabs(strtod(cells[cpu_us], NULL) / want - 1) < 1e-8);
        const struct pb_stage_result *decode = &rep->stages[1];
        assert_string_equal(decode->name, "decode");
        want = (double)decode->cpu_ns / (double)pb_stages_samples(rep->stages, rep->stage_count) /
               1000;
        assert_true(fabs(strtod(cells[decode_us], NULL) / want - 1) < 1e-8);
        assert_int_equal(atoi(cells[interrupted]), rep->interrupted ? 1 : 0);
        cells_free(cells, n);
    }
    assert_int_equal(rows, result.points[0].repeat_count + result.points[1].repeat_count);
    cells_free(header, columns);
    char *tsv = render_rows(&result, PB_FORMAT_TSV, PB_ROWS_REPEATS);
    size_t tabs = 0, lines = 0;
    for (const char *p = tsv; *p; p++) {
        tabs += *p == '\t';
        lines += *p == '\n';
    }
    assert_int_equal(lines, rows + 1);
    assert_int_equal(tabs, lines * (columns - 1));
    free(tsv);
    free(csv);
    /* A format without a repeats form renders its usual page. */
    assert_null(pb_formats[PB_FORMAT_TABLE].repeats);
    assert_null(pb_formats[PB_FORMAT_HTML].repeats);
    enum pb_report_rows rows_parsed;
    assert_int_equal(pb_report_rows_parse("repeats", &rows_parsed), PB_OK);
    assert_int_equal(rows_parsed, PB_ROWS_REPEATS);
    assert_int_equal(pb_report_rows_parse("points", &rows_parsed), PB_OK);
    assert_int_equal(rows_parsed, PB_ROWS_POINTS);
    assert_int_equal(pb_report_rows_parse("repeat", &rows_parsed), PB_ERR_CONFIG);
    pb_result_free(&result);
}

/* One text cell through pb_csv_text with separator sep; the caller frees
 * the text. */
static __attribute__((noinline)) char *text_cell(char sep, const char *raw, bool last)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    pb_csv_text(out, sep, raw, last);
    fclose(out);
    return text;
}

/* A text cell, as RFC 4180 asks: quoted when it holds a comma or a quote,
 * a quote doubled inside; a line break printed as \x0a, so it needs no
 * quotes; text a spreadsheet would run as a formula (=, +, -, @ first)
 * guarded with a leading ', then quoted if need be; TSV never quotes. The
 * separator follows, a line break after the last cell. */
static void test_csv_text_cells(void **state)
{
    (void)state;
    static const struct {
        char sep;
        const char *raw;
        bool last;
        const char *want;
    } cases[] = {
        {',', "decode", false, "decode,"},
        {',', "decode", true, "decode\n"},
        {',', "", true, "\n"},
        {',', "224,224", false, "\"224,224\","},
        {',', "say \"hi\"", false, "\"say \"\"hi\"\"\","},
        {',', "line\nbreak", false, "line\\x0abreak,"},
        {',', "tab\there", true, "tab\\x09here\n"},
        {',', "=1+2", false, "'=1+2,"},
        {',', "+cmd", false, "'+cmd,"},
        {',', "-cmd", false, "'-cmd,"},
        {',', "@SUM(A1)", false, "'@SUM(A1),"},
        {',', "=A1,B1", false, "\"'=A1,B1\","},
        {',', "a=b", false, "a=b,"},
        {'\t', "224,224", false, "224,224\t"},
        {'\t', "say \"hi\"", true, "say \"hi\"\n"},
        {'\t', "=1", false, "'=1\t"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(cases); i++) {
        char *got = text_cell(cases[i].sep, cases[i].raw, cases[i].last);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu: got [%s], want [%s]", i, got, cases[i].want);
        free(got);
    }
}

/* The header names the run, created time and point, then a column per
 * sweep axis (in the order the points first have them), the axes as one
 * cell and the point's and stage's figures in their documented order; the
 * figures are numbers, unquoted and never guarded, and an axis that is a
 * number is written as one. */
static void test_csv_header_and_numbers(void **state)
{
    (void)state;
    struct pb_result result;
    make_result(&result, 21);
    json_object_set_new(result.points[0].axes, "loader.workers", json_integer(-4));
    result.points[0].samples_per_s = 1234.5;
    char *csv = render(&result, PB_FORMAT_CSV);
    const char *header =
        "run,created,point,loader.workers,pipeline.resize.size,axes,samples_per_s,"
        "samples_per_s_noise_pct,batches_per_s,mb_per_s,stall_pct,accel_util_pct,cpu_util_pct,"
        "worker_cpu_pct,other_cpu_pct,first_batch_s,cpu_us_per_sample,wait_p50_ns,wait_p99_ns,"
        "assembly_p50_ns,assembly_p99_ns,rss_peak_bytes,pinned_bytes,samples,errors,input_bound,"
        "recommended,stage,count,mean_ns,p50_ns,p90_ns,p95_ns,p99_ns,max_ns,cpu_ns,share_pct,"
        "stage_cpu_us_per_sample\n";
    assert_memory_equal(csv, header, strlen(header));
    char *cells[64];
    size_t n = csv_cells(csv + strlen(header), cells, 64);
    assert_int_equal(n, 38);
    assert_string_equal(cells[0], "image-basic");
    assert_string_equal(cells[2], "0");
    assert_string_equal(cells[3], "-4"); /* a number: not guarded */
    assert_string_equal(cells[4], "224,224");
    assert_string_equal(cells[6], "1234.5");
    assert_string_equal(cells[27], result.points[0].stages[0].name);
    char count[32];
    snprintf(count, sizeof(count), "%llu",
             (unsigned long long)result.points[0].stages[0].hist.count);
    assert_string_equal(cells[28], count);
    cells_free(cells, n);
    /* No figure is quoted: the only quotes are the axis value's and the
     * axes cell's, both holding a comma. */
    const char *row = csv + strlen(header);
    assert_non_null(strstr(row, ",-4,\"224,224\","
                                "\"loader.workers=-4;pipeline.resize.size=224,224\",1234.5,"));
    free(csv);
    pb_result_free(&result);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_tsv),
        cmocka_unit_test(test_csv_text_cells),
        cmocka_unit_test(test_csv_header_and_numbers),
        cmocka_unit_test(test_report_csv_columns),
        cmocka_unit_test(test_report_csv_repeats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
