/* The report formats, as one table: each row names a format and the
 * functions that render a result (with its analysis) and a comparison in
 * it. Choosing a format happens here and only here; the renderers
 * (report.c, report_csv.c, compare_text.c, html.c) never call each other's formats. A
 * new format is its renderers in a file of their own plus one row of
 * pb_formats[] (and its name in enum pb_format). */
#ifndef PB_FORMAT_H
#define PB_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bench/analyze/analysis.h"
#include "bench/analyze/compare.h"
#include "bench/analyze/history.h"
#include "bench/result/result.h"

/* Indexes of pb_formats[], in the order help and messages list them. */
enum pb_format {
    PB_FORMAT_TABLE,
    PB_FORMAT_JSON,
    PB_FORMAT_MARKDOWN,
    PB_FORMAT_CSV,
    PB_FORMAT_HTML,
    PB_FORMAT_TSV,
    PB_FORMAT_PROMETHEUS,
    PB_FORMAT_COUNT
};

struct pb_format_ops {
    const char *name; /* what --format takes */
    /* Renders a result; analysis is pb_analyze of it, NULL when it could
     * not be made (or is not wanted: see analyzed). */
    void (*result)(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis);
    /* Renders a comparison; NULL when the format has no comparison form. */
    void (*comparison)(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                       const char *next_name);
    /* Whether the result form shows the analysis (JSON carries the result
     * as it is, so pb_report does not analyze for it). */
    bool analyzed;
    /* Renders a result one row per repeat (--rows repeats); NULL when the
     * format has no such form. */
    void (*repeats)(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis);
    /* Renders what history show read; NULL when the format has no history
     * form. */
    void (*history)(FILE *out, const struct pb_history *history);
    /* A whole document (a page): a comparison measured with it goes beside
     * it as a table on stderr, not into it. */
    bool whole_document;
};

/* What a row of a tabular report is (--rows): a point (the default: in
 * CSV and TSV a row per point and stage) or a repeat. */
enum pb_report_rows { PB_ROWS_POINTS, PB_ROWS_REPEATS };

extern const struct pb_format_ops pb_formats[PB_FORMAT_COUNT];

/* Parses a format's name into *format; PB_OK, or PB_ERR_CONFIG for
 * anything else (NULL included). */
int pb_format_parse(const char *text, enum pb_format *format);

/* Writes the formats' names joined by sep ("table|json|..." for usage,
 * ", " for messages) into buf; with comparison, only those that render a
 * comparison. */
void pb_format_names(char *buf, size_t buflen, const char *sep, bool comparison);

/* As pb_format_names, the formats with a history form. */
void pb_format_history_names(char *buf, size_t buflen, const char *sep);

/* Parses --rows ("points" or "repeats") into *rows; PB_OK, or
 * PB_ERR_CONFIG for anything else. */
int pb_report_rows_parse(const char *text, enum pb_report_rows *rows);

/* Renders result to out in format with the analysis of it (pb_analyze of
 * the same result; NULL when it could not be analyzed), a row per point.
 * The caller owns both. */
void pb_report_analyzed(FILE *out, const struct pb_result *result,
                        const struct pb_analysis *analysis, enum pb_format format);

/* As pb_report_analyzed, with rows per repeat where asked and the format
 * has a repeats form (the caller checks pb_formats[format].repeats); else
 * per point. */
void pb_report_rows(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis,
                    enum pb_format format, enum pb_report_rows rows);

/* Analyzes result once (when the format shows the analysis) and renders
 * it, as pb_report_analyzed. */
void pb_report(FILE *out, const struct pb_result *result, enum pb_format format);

/* Renders a comparison in format; a format without a comparison form
 * (CSV) renders the table. */
void pb_comparison_report(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                          const char *next_name, int format);

/* Prints cmp as pbench compare does, names without control characters
 * (bench/base/printable.h). When the machine or config differ and not force:
 * every difference on err and PB_ERR_CONFIG. When no point matched: a note
 * on err and PB_ERR_CONFIG. Else the report on out and PB_OK. */
int pb_comparison_print(FILE *out, FILE *err, const struct pb_comparison *cmp,
                        const char *base_name, const char *next_name, int format, bool force);

/* Writes a report of result in format to path atomically
 * (bench/base/fileio.h), or a comparison. PB_OK, or PB_ERR with msg naming
 * the file and why. */
int pb_report_write(const char *path, const struct pb_result *result,
                    const struct pb_analysis *analysis, int format, enum pb_report_rows rows,
                    char *msg, size_t msglen);
int pb_comparison_write(const char *path, const struct pb_comparison *cmp, const char *base_name,
                        const char *next_name, int format, char *msg, size_t msglen);

/* Renders history in format (one with a history form) to out, or to path
 * atomically when path is not NULL. PB_OK, or PB_ERR with msg naming the
 * file and why. */
int pb_history_report(FILE *out, const char *path, const struct pb_history *history, int format,
                      char *msg, size_t msglen);

#endif
