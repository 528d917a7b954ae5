/* Nightly history: each run's summary in an SQLite database, keyed by
 * machine, config and git revision, and step-change detection over it
 * (after asv: a shift of the median beyond the threshold that persists for
 * at least PB_STEP_MIN_RUNS runs). */
#ifndef PB_HISTORY_H
#define PB_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/result/result.h"

#define PB_STEP_MIN_RUNS 2
/* The runs of a series history show reads: the newest, when it has more. */
#define PB_HISTORY_MAX_RUNS 4096

/* Adds every point of result to the database at db_path, a file name or a
 * SQLite "file:" URI (created when missing). revision may be NULL. A point
 * already there under the same revision (the same result added again) is
 * not added twice. Returns PB_OK, or PB_ERR with SQLite's message and the
 * database. */
int pb_history_add(const char *db_path, const struct pb_result *result, const char *revision,
                   const char *source, char *msg, size_t msglen);

/* Prints the trend of metric (samples_per_s, stall_pct, assembly_p99_ns,
 * rss_peak_bytes) for each series (what was measured, at one point),
 * optionally only config_name, and flags step changes beyond threshold_pct.
 * A series of more than PB_HISTORY_MAX_RUNS runs is shown, and searched for
 * a step, by its newest PB_HISTORY_MAX_RUNS, and says so. Returns the number
 * of series with a step that is a regression, or a negative code with a
 * message. */
int pb_history_show(const char *db_path, const char *config_name, const char *metric,
                    double threshold_pct, char *msg, size_t msglen);

/* Step detection on a series in time order: the earliest index i such that
 * every value from i on differs from the median of the values before i by
 * more than threshold_pct in one direction, the median from i on does too,
 * and at least PB_STEP_MIN_RUNS values follow i (i included). -1 if none.
 * *change_pct gets the shift of the median. */
long pb_history_step(const double *values, size_t n, double threshold_pct, double *change_pct);

/* The revision a run is filed under when none is given: $GITHUB_SHA, else
 * `git rev-parse --short HEAD` in the current folder, else "". */
void pb_history_revision(char *buf, size_t buflen);

/* `pbench history add`: reads the result file at path and adds it (as
 * pb_history_add) under revision, or pb_history_revision()'s when NULL. A
 * result whose figures are partial (the run interrupted, a point failed, a
 * repeat cut short, a point without a complete repeat) is refused with the
 * reason unless force. On success writes "added N point(s) of NAME (CREATED, revision REV) to DB"
 * into summary, or "NAME (CREATED, revision REV) is already in the history
 * DB; nothing added". Returns PB_OK or PB_ERR with msg. */
int pb_history_add_file(const char *db_path, const char *path, const char *revision, bool force,
                        char *summary, size_t summarylen, char *msg, size_t msglen);

/* Writes the names of the metrics history keeps (a column each, those of
 * bench/result/metrics.h with a point value), joined by sep, into buf. */
void pb_history_metric_names(char *buf, size_t buflen, const char *sep);

#endif
