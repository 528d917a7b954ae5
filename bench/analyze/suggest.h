/* The "try" lines of a run's analysis (bench/analyze/suggest.c): what to
 * change for the point that was measured (decode, sizing, copies, workers,
 * epoch starts, memory), each with the command that tests it, quoted for
 * a shell (pbench run ... -a, or pbench compare C.yaml C.yaml --set-new).
 * Reads the result and the analysis of its points; writes only the
 * analysis's suggestions. */
#ifndef PB_ANALYZE_SUGGEST_H
#define PB_ANALYZE_SUGGEST_H

#include <stddef.h>

#include "bench/analyze/analysis.h"
#include "bench/result/result.h"

/* Adds point i's suggestions to an->suggestions (an->points[i] analysed
 * already); past the last slot, the rest are dropped. */
void pb_suggest(const struct pb_result *result, size_t i, struct pb_analysis *an);

#endif
