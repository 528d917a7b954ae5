/* The HTML report: one self-contained page (inline CSS and SVG, no script,
 * nothing fetched) that shows a result, or a comparison of two, as charts
 * beside the tables the terminal report prints. Like every sink it renders
 * the result structs and the analysis computed from them (bench/analyze/analysis.h,
 * bench/analyze/compare.h) and never measures. */
#ifndef PB_HTML_H
#define PB_HTML_H

#include <stdio.h>

#include "bench/analyze/analysis.h"
#include "bench/analyze/compare.h"
#include "bench/result/result.h"

/* Opens a page in the report's style: the doctype, title (escaped) and
 * the inline stylesheet, up to <body>. The caller writes the body and
 * "</body></html>". */
void pb_html_page_open(FILE *out, const char *title);

/* Writes the page for result: the verdict and recommendation, the points'
 * summary table, for a sweep samples/s (with noise bars) and accelerator
 * utilization against each swept axis, each point's stage breakdown (CPU
 * time per sample), per-stage latency CDFs from the histograms, per-repeat
 * timelines (throughput, queue depth, RSS, CPU) and the terminal report.
 * analysis is pb_analyze of result, or NULL when it could not be made. */
void pb_html_report(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis);

/* Writes the page for a comparison: what differs between the runs, and per
 * matched point each metric before and after with its 95% interval, p and
 * verdict, as a table and an interval chart. */
void pb_html_comparison(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                        const char *next_name);

#endif
