/* history show's renderings besides its text table (which is
 * pb_history_print, bench/report/history_text.h): CSV and TSV, JSON and one
 * self-contained HTML page, each from the series pb_history_load read,
 * chosen by the history column of the format table
 * (bench/report/format.h). Nothing here reads the database. */
#ifndef PB_HISTORY_REPORT_H
#define PB_HISTORY_REPORT_H

#include <stdio.h>

#include "bench/analyze/history.h"

/* One row per run of every series, oldest first within a series: config,
 * machine, fingerprint, point (its axes as JSON), series (index), run
 * (index), created, revision, metric (its name), value, noise_pct,
 * median_before, vs_median_pct, step (1 on the run a step change starts
 * at), step_pct and regression (on that run). */
void pb_history_csv(FILE *out, const struct pb_history *h);
void pb_history_tsv(FILE *out, const struct pb_history *h);

/* The same as one JSON object: the metric, threshold and step counts, and
 * each series with its runs, its step (null for none) and its measured
 * settings. */
void pb_history_json(FILE *out, const struct pb_history *h);

/* The nightly dashboard: per series a trend chart of the metric over its
 * runs in time order (each run's noise as a band, a step change marked
 * with its size and the revision it starts at, the medians before and
 * after it), beside the series' config, machine, point, fingerprint and
 * measured settings; styled as the run report, no script, nothing
 * fetched. */
void pb_history_html(FILE *out, const struct pb_history *h);

#endif
