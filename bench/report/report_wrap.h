/* A wrapped training job in the terminal and Markdown summary
 * (bench/report/report_wrap.c): the command and how it ended, the
 * DataLoader measured (where the job made it, its Dataset, its settings, and
 * those pbench set), and the job's other DataLoaders. */
#ifndef PB_REPORT_WRAP_H
#define PB_REPORT_WRAP_H

#include <stdbool.h>
#include <stdio.h>

#include "bench/base/table.h"
#include "bench/result/result.h"

/* Adds label/value rows for the wrapped job of point p to t (nothing for a
 * point of another engine). */
void pb_report_wrap_summary(struct pb_table *t, const struct pb_point_result *p);

/* "loader: the job's own, with workers=4 set by pbench" (no line end) for a
 * result of a wrapped job; false (nothing written) for any other. */
bool pb_report_wrap_loader(FILE *out, const struct pb_result *result);

#endif
