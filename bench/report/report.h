/* Renderings of a result for people and tools: terminal table, GitHub
 * markdown and JSON (CSV and TSV: report_csv.h), each a row of the format table
 * (bench/report/format.h), which is where a format is chosen. Nothing here
 * measures; the analysis shown beside the points is computed by the caller
 * (bench/analyze/analysis.h). */
#ifndef PB_REPORT_H
#define PB_REPORT_H

#include <stdio.h>

#include "bench/analyze/analysis.h"
#include "bench/result/result.h"

/* The result as a terminal table and as GitHub markdown: the points'
 * summary, the analysis (NULL when none) with its verdict and
 * recommendation, each point's stages, warnings. */
void pb_report_table(FILE *out, const struct pb_result *result,
                     const struct pb_analysis *analysis);
void pb_report_markdown(FILE *out, const struct pb_result *result,
                        const struct pb_analysis *analysis);

/* A point's axes as "key=value" joined by sep, printable (control
 * characters as \xNN); "" without axes. */
void pb_report_axes(char *buf, size_t size, const json_t *axes, const char *sep);

/* The result file's JSON (bench/result/result_json.c), analysis unused. */
void pb_report_json(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis);

#endif
