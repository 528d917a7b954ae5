/* Renderings of a result for people and tools: terminal table, GitHub
 * markdown, CSV and JSON. Nothing here measures; the analysis shown beside
 * the points is computed by the caller (bench/analyze/analysis.h) or, through
 * pb_report, once per call. */
#ifndef PB_REPORT_H
#define PB_REPORT_H

#include <stdio.h>

#include "bench/analyze/analysis.h"
#include "bench/result/result.h"

enum pb_format { PB_FORMAT_TABLE, PB_FORMAT_JSON, PB_FORMAT_MARKDOWN, PB_FORMAT_CSV,
                 PB_FORMAT_HTML };

/* Parses "table", "json", "markdown", "csv" or "html" (bench/report/html.h) into *format; PB_OK, or
 * PB_ERR_CONFIG for anything else (NULL included). */
int pb_format_parse(const char *text, enum pb_format *format);

/* Renders result to out with the analysis of it (pb_analyze of the same
 * result; NULL when it could not be analyzed). The caller owns both. */
void pb_report_analyzed(FILE *out, const struct pb_result *result,
                        const struct pb_analysis *analysis, enum pb_format format);

/* Analyzes result once and renders it, as pb_report_analyzed. */
void pb_report(FILE *out, const struct pb_result *result, enum pb_format format);

#endif
