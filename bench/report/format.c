/* The table of report formats and the calls that choose among them (see
 * format.h). */
#include "bench/report/format.h"

#include <errno.h>
#include <string.h>

#include "bench/analyze/verdict.h"
#include "bench/base/fileio.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/report/compare_text.h"
#include "bench/report/history_report.h"
#include "bench/report/history_text.h"
#include "bench/report/html.h"
#include "bench/report/live.h"
#include "bench/report/report.h"
#include "bench/report/report_csv.h"

const struct pb_format_ops pb_formats[] = {
    [PB_FORMAT_TABLE] = {.name = "table", .result = pb_report_table,
                         .comparison = pb_comparison_table, .analyzed = true,
                         .history = pb_history_print},
    [PB_FORMAT_JSON] = {.name = "json", .result = pb_report_json,
                        .comparison = pb_comparison_json, .history = pb_history_json},
    [PB_FORMAT_MARKDOWN] = {.name = "markdown", .result = pb_report_markdown,
                            .comparison = pb_comparison_markdown, .analyzed = true},
    [PB_FORMAT_CSV] = {.name = "csv", .result = pb_report_csv, .analyzed = true,
                       .repeats = pb_report_csv_repeats, .history = pb_history_csv},
    [PB_FORMAT_HTML] = {.name = "html", .result = pb_html_report,
                        .comparison = pb_html_comparison, .analyzed = true,
                        .history = pb_history_html, .whole_document = true},
    [PB_FORMAT_TSV] = {.name = "tsv", .result = pb_report_tsv, .analyzed = true,
                       .repeats = pb_report_tsv_repeats, .history = pb_history_tsv},
    /* Prometheus's text exposition, as /metrics serves it (bench/report/live.h):
     * for a Pushgateway or node_exporter's textfile collector. */
    [PB_FORMAT_PROMETHEUS] = {.name = "prometheus", .result = pb_live_report,
                              .history = pb_live_history},
};
_Static_assert(sizeof(pb_formats) / sizeof(pb_formats[0]) == PB_FORMAT_COUNT,
               "every enum pb_format has its row in pb_formats[]");

int pb_format_parse(const char *text, enum pb_format *format)
{
    for (int i = 0; text && i < PB_FORMAT_COUNT; i++) {
        if (strcmp(text, pb_formats[i].name) == 0) {
            *format = (enum pb_format)i;
            return PB_OK;
        }
    }
    return PB_ERR_CONFIG;
}

void pb_format_names(char *buf, size_t buflen, const char *sep, bool comparison)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < PB_FORMAT_COUNT && used < buflen; i++) {
        if (comparison && !pb_formats[i].comparison)
            continue;
        int n = snprintf(buf + used, buflen - used, "%s%s", used ? sep : "", pb_formats[i].name);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}

void pb_format_history_names(char *buf, size_t buflen, const char *sep)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < PB_FORMAT_COUNT && used < buflen; i++) {
        if (!pb_formats[i].history)
            continue;
        int n = snprintf(buf + used, buflen - used, "%s%s", used ? sep : "", pb_formats[i].name);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}

/* A format number from outside the table reads as the table. */
static const struct pb_format_ops *format_ops(int format)
{
    return &pb_formats[format >= 0 && format < PB_FORMAT_COUNT ? format : PB_FORMAT_TABLE];
}

int pb_report_rows_parse(const char *text, enum pb_report_rows *rows)
{
    if (text && strcmp(text, "points") == 0)
        *rows = PB_ROWS_POINTS;
    else if (text && strcmp(text, "repeats") == 0)
        *rows = PB_ROWS_REPEATS;
    else
        return PB_ERR_CONFIG;
    return PB_OK;
}

void pb_report_rows(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis,
                    enum pb_format format, enum pb_report_rows rows)
{
    const struct pb_format_ops *ops = format_ops((int)format);
    if (rows == PB_ROWS_REPEATS && ops->repeats)
        ops->repeats(out, result, analysis);
    else
        ops->result(out, result, analysis);
}

void pb_report_analyzed(FILE *out, const struct pb_result *result,
                        const struct pb_analysis *analysis, enum pb_format format)
{
    pb_report_rows(out, result, analysis, format, PB_ROWS_POINTS);
}

void pb_report(FILE *out, const struct pb_result *result, enum pb_format format)
{
    struct pb_analysis analysis;
    bool analyzed = format_ops((int)format)->analyzed && pb_analyze(result, &analysis) == PB_OK;
    pb_report_analyzed(out, result, analyzed ? &analysis : NULL, format);
    if (analyzed)
        pb_analysis_free(&analysis);
}

void pb_comparison_report(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                          const char *next_name, int format)
{
    const struct pb_format_ops *ops = format_ops(format);
    if (!ops->comparison)
        ops = &pb_formats[PB_FORMAT_TABLE];
    ops->comparison(out, cmp, base_name, next_name);
}

int pb_comparison_print(FILE *out, FILE *err, const struct pb_comparison *cmp,
                        const char *base_name, const char *next_name, int format, bool force)
{
    char base[PB_PRINTABLE_SIZE(256)], next[PB_PRINTABLE_SIZE(256)];
    char text[PB_PRINTABLE_SIZE(sizeof(cmp->differences[0]))];
    pb_printable(base, sizeof(base), base_name);
    pb_printable(next, sizeof(next), next_name);
    if (cmp->incompatible && !force) {
        fprintf(err, "pbench compare: %s and %s were measured differently:\n", base, next);
        for (int i = 0; i < cmp->difference_count; i++)
            fprintf(err, "  %s\n", pb_printable(text, sizeof(text), cmp->differences[i]));
        fprintf(err, "compare them anyway with --force\n");
        return PB_ERR_CONFIG;
    }
    if (cmp->point_count == 0) {
        fprintf(err,
                "pbench compare: no point of %s matches one of %s (points match by their sweep "
                "axes), so nothing was compared; compare results of the same sweep\n",
                base, next);
        return PB_ERR_CONFIG;
    }
    pb_comparison_report(out, cmp, base_name, next_name, format);
    return PB_OK;
}

/* ---- to a file ------------------------------------------------------------ */

struct report_fill {
    const struct pb_history *history;
    const struct pb_result *result;
    const struct pb_analysis *analysis;
    const struct pb_comparison *cmp;
    const char *base_name, *next_name;
    int format;
    enum pb_report_rows rows;
};

static int fill_report(FILE *f, void *user)
{
    const struct report_fill *r = user;
    if (r->history)
        format_ops(r->format)->history(f, r->history);
    else if (r->cmp)
        pb_comparison_report(f, r->cmp, r->base_name, r->next_name, r->format);
    else
        pb_report_rows(f, r->result, r->analysis, (enum pb_format)r->format, r->rows);
    if (ferror(f)) {
        if (errno == 0) /* the failed write's own errno (ENOSPC) is the reason */
            errno = EIO;
        return -1;
    }
    return 0;
}

int pb_report_write(const char *path, const struct pb_result *result,
                    const struct pb_analysis *analysis, int format, enum pb_report_rows rows,
                    char *msg, size_t msglen)
{
    struct report_fill r = {
        .result = result, .analysis = analysis, .format = format, .rows = rows};
    return pb_write_atomic(path, fill_report, &r, msg, msglen);
}

int pb_comparison_write(const char *path, const struct pb_comparison *cmp, const char *base_name,
                        const char *next_name, int format, char *msg, size_t msglen)
{
    struct report_fill r = {
        .cmp = cmp, .base_name = base_name, .next_name = next_name, .format = format};
    return pb_write_atomic(path, fill_report, &r, msg, msglen);
}

int pb_history_report(FILE *out, const char *path, const struct pb_history *history, int format,
                      char *msg, size_t msglen)
{
    const struct pb_format_ops *ops = format_ops(format);
    if (!ops->history)
        ops = &pb_formats[PB_FORMAT_TABLE];
    struct report_fill r = {.history = history, .format = (int)(ops - pb_formats)};
    if (path)
        return pb_write_atomic(path, fill_report, &r, msg, msglen);
    ops->history(out, history);
    return PB_OK;
}
