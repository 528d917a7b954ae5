/* The result as delimited tables for people's own tools (pandas, R,
 * spreadsheets, `cut -f`): CSV (RFC 4180 quoting) and TSV (tab-separated,
 * nothing quoted), each a row of the format table (bench/report/format.h).
 *
 * Every row starts with the run's name and created time, the point's
 * index and one column per sweep axis (named by the axis key, such as
 * loader.workers, holding the point's value; empty where a point lacks
 * the axis), then the axes joined as one cell. Text cells a spreadsheet
 * would run as a formula (=, +, - or @ first) get a leading '; numbers are
 * never guarded. The columns are documented in docs/results.md. */
#ifndef PB_REPORT_CSV_H
#define PB_REPORT_CSV_H

#include <stdbool.h>
#include <stdio.h>

#include "bench/analyze/analysis.h"
#include "bench/result/result.h"

/* One row per point and stage: the point's summary over repeats (with CPU
 * per delivered sample, other processes' CPU and the time to the first
 * batch), its place in the analysis, then the stage's latency, CPU and
 * CPU per sample. A point without stages gets one row with empty stage
 * cells. analysis may be NULL. */
void pb_report_csv(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis);
void pb_report_tsv(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis);

/* One row per repeat of each point (--rows repeats): the repeat's own
 * figures, then one column per CPU stage the result has,
 * "STAGE.cpu_us_per_sample" (empty where the repeat lacks the stage). */
void pb_report_csv_repeats(FILE *out, const struct pb_result *result,
                           const struct pb_analysis *analysis);
void pb_report_tsv_repeats(FILE *out, const struct pb_result *result,
                           const struct pb_analysis *analysis);

/* One text cell of a delimited table and its separator (a line break
 * when last): printable, formula-guarded, and quoted as RFC 4180 asks
 * unless sep is a tab. Shared with history show's CSV. */
void pb_csv_text(FILE *out, char sep, const char *raw, bool last);

#endif
