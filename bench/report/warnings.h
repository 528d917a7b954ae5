/* Warnings grouped by their cause (bench/report/warnings.c): a sweep's
 * points each warn with their own figures ("other processes used 96% of
 * the machine's CPU ...", 94% at the next), and a report says each cause
 * once, with how many points share it. */
#ifndef PB_REPORT_WARNINGS_H
#define PB_REPORT_WARNINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/result/result.h"

/* Whether warnings a and b have one cause: the same text once each run of
 * digits (with its decimal point) is taken as one number, whatever its
 * value. */
bool pb_warning_same_cause(const char *a, const char *b);

/* Whether warning w of point i has a cause an earlier point (or an earlier
 * warning of point i) already gave; and, where it is the first, into
 * *alike the later points that give the same cause. */
bool pb_warning_seen(const struct pb_result *result, size_t i, int w, size_t *alike);

#endif
