/* A wrapped training job in the terminal and Markdown summary
 * (bench/report/report_wrap.c): the command and how it ended, the
 * DataLoader measured (where the job made it, its Dataset, its settings, and
 * those pbench set), and the job's other DataLoaders. */
#ifndef PB_REPORT_WRAP_H
#define PB_REPORT_WRAP_H

#include <stdbool.h>
#include <stdio.h>

#include "bench/analyze/compare.h"
#include "bench/base/table.h"
#include "bench/result/result.h"

/* Adds label/value rows for the wrapped job of point p to t (nothing for a
 * point of another engine). */
void pb_report_wrap_summary(struct pb_table *t, const struct pb_point_result *p);

/* "loader: the job's own, with workers=4 set by pbench" (no line end) for a
 * result of a wrapped job; false (nothing written) for any other. */
bool pb_report_wrap_loader(FILE *out, const struct pb_result *result);

/* pbench wrap --ideal's headline: what a loader that never waits would give
 * the job, from cmp, the comparison of result's two sides (the new one ran
 * with wrap.ideal); a side other processes disturbed says so, as the gain
 * is then the machine's as much as the loader's. Nothing for other
 * comparisons. */
void pb_report_wrap_ideal(FILE *out, const struct pb_result *result,
                          const struct pb_comparison *cmp);

#endif
