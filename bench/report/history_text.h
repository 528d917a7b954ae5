/* history show as text: each series' runs against the median before
 * each, its step change and what the machine did across it, and the
 * nightly gate's summary over every gated metric. The series and their
 * steps are bench/analyze/history.h's; this file only renders them. */
#ifndef PB_HISTORY_TEXT_H
#define PB_HISTORY_TEXT_H

#include <stdio.h>

#include "bench/analyze/history.h"

/* Prints h as text (history show's table): per series its runs against
 * the median before each and its step change, then the count of steps. */
void pb_history_print(FILE *out, const struct pb_history *h);

/* Prints the trend of metric (samples_per_s, stall_pct, assembly_p99_ns,
 * rss_peak_bytes) for each series (what was measured, at one point),
 * optionally only config_name, and flags step changes beyond threshold_pct.
 * A series of more than PB_HISTORY_MAX_RUNS runs is shown, and searched for
 * a step, by its newest PB_HISTORY_MAX_RUNS, and says so. Returns the number
 * of series with a step that is a regression, or a negative code with a
 * message. */
int pb_history_show(const char *db_path, const char *config_name, const char *metric,
                    double threshold_pct, char *msg, size_t msglen);

/* What the nightly gate reads without --metric: every metric
 * --fail-on-regression gates on that history keeps (samples/s, stall,
 * accelerator utilization, CPU per sample), each searched for a step and a
 * suspect newest run as history show does. Writes, when out is not NULL,
 * one line per metric and series with a step or a suspect newest run (or
 * that it has neither). Returns the number of counted regression steps
 * (*suspects: the series whose newest run is suspect), or a negative code
 * with msg (as pb_history_load). */
int pb_history_gate(FILE *out, const char *db_path, const char *config_name, double threshold_pct,
                    int *suspects, char *msg, size_t msglen);

#endif
