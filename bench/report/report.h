/* Renderings of a result for people and tools: terminal table, GitHub
 * markdown, CSV and JSON, each a row of the format table
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

/* One row per point and stage, for spreadsheets and scripts: CSV (RFC
 * 4180 quoting) and TSV (tab-separated, no quoting). */
void pb_report_csv(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis);
void pb_report_tsv(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis);

/* The result file's JSON (bench/result/result_json.c), analysis unused. */
void pb_report_json(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis);

#endif
