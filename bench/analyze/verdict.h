/* A run's conclusion (bench/analyze/verdict.c): the analysis of its
 * points (bench/analyze/analysis.h), then, for the recommended point, the
 * "try" lines (bench/analyze/suggest.h), the verdict line and the
 * capacity line. What every sink prints last. */
#ifndef PB_ANALYZE_VERDICT_H
#define PB_ANALYZE_VERDICT_H

#include "bench/analyze/analysis.h"
#include "bench/result/result.h"

/* Analyzes result into out (release with pb_analysis_free), a single run
 * as a sweep of one point: the verdict and suggestions are of the
 * recommended point. */
int pb_analyze(const struct pb_result *result, struct pb_analysis *out);

#endif
