/* The table's storage line for a point: how much of the dataset the page
 * cache held at each repeat's start (measured, not guessed), under which
 * dataset.cache mode, and the read rate against the storage ceiling when
 * calibration measured one. A sink: it renders the result, never measures. */
#ifndef PB_REPORT_STORAGE_H
#define PB_REPORT_STORAGE_H

#include <stdbool.h>
#include <stdio.h>

#include "bench/result/result.h"

/* Writes the lines (markdown: as list items); nothing when no repeat
 * measured residency (results older than the measurement). */
void pb_report_storage(FILE *out, bool markdown, const struct pb_result *result,
                       const struct pb_point_result *point);

#endif
