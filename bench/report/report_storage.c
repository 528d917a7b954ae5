/* The table's storage line (bench/report/report_storage.h): page-cache residency at each
 * repeat's start, the cache mode, and the read rate against the storage ceiling. */
#include "bench/report/report_storage.h"

#include <string.h>

#include "bench/analyze/analysis.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/base/table.h"

/* Shares of the dataset cached at a repeat's start that read as "from
 * memory" and "from storage"; between them, partly from each. */
#define FROM_MEMORY_PCT 90.0
#define FROM_STORAGE_PCT 10.0

/* The retries by cause, "12 retries (503/SlowDown 10, reset 2)". */
static void retries_text(const struct pb_stage_result *read, char *buf, size_t buflen)
{
    static const char *const causes[][2] = {{"retry_503", "503/SlowDown"},
                                            {"retry_5xx", "other 5xx"},
                                            {"retry_reset", "reset or truncated"},
                                            {"retry_timeout", "timeout"}};
    uint64_t total = pb_analysis_count(read, "retries");
    int at = snprintf(buf, buflen, "%llu %s", (unsigned long long)total,
                      total == 1 ? "retry" : "retries");
    const char *sep = " (";
    for (size_t i = 0; total && i < PB_ARRAY_LEN(causes) && at > 0 && (size_t)at < buflen; i++) {
        uint64_t n = pb_analysis_count(read, causes[i][0]);
        if (n) {
            at += snprintf(buf + at, buflen - (size_t)at, "%s%s %llu", sep, causes[i][1],
                           (unsigned long long)n);
            sep = ", ";
        }
    }
    if (total && at > 0 && (size_t)at < buflen)
        snprintf(buf + at, buflen - (size_t)at, ")");
}

/* A dataset in object storage: what its requests cost. */
static void report_remote(FILE *out, bool markdown, const struct pb_result *result,
                          const struct pb_point_result *point)
{
    const struct pb_dataset_info *d = &result->dataset;
    const struct pb_stage_result *read = pb_analysis_find_stage(point, "read");
    const struct pb_stage_result *ttfb = pb_analysis_find_stage(point, "read.ttfb");
    const char *bullet = markdown ? "- " : "  ";
    char retries[160], line[2048], printable[PB_PRINTABLE_SIZE(2048)];
    retries_text(read, retries, sizeof(retries));
    uint64_t requests = pb_analysis_count(read, "requests");
    uint64_t reused = pb_analysis_count(read, "reused_connections");
    uint64_t failed = pb_analysis_count(read, "failed");
    /* A sweep over dataset.requests_in_flight: the point's own. */
    json_t *axis = point->axes ? json_object_get(point->axes, "dataset.requests_in_flight") : NULL;
    uint64_t in_flight = json_is_integer(axis) ? (uint64_t)json_integer_value(axis)
                                               : d->requests_in_flight;
    char failed_text[64] = "";
    if (failed)
        snprintf(failed_text, sizeof(failed_text), ", %llu failed", (unsigned long long)failed);
    snprintf(line, sizeof(line),
             "read from %s (%s): %.1f MB/s in %llu requests, %llu on kept connections; TTFB "
             "p50 %.2f ms, p99 %.2f ms; %s%s; %llu in flight per worker",
             d->path, d->endpoint, point->mb_per_s, (unsigned long long)requests,
             (unsigned long long)reused,
             ttfb ? (double)pb_hist_quantile(&ttfb->hist, 0.5) / 1e6 : 0.0,
             ttfb ? (double)pb_hist_quantile(&ttfb->hist, 0.99) / 1e6 : 0.0, retries, failed_text,
             (unsigned long long)in_flight);
    fprintf(out, "%s%s\n", bullet, pb_printable(printable, sizeof(printable), line));
    snprintf(line, sizeof(line), "listed %llu objects in %.2f s (%llu %s); credentials: %s",
             (unsigned long long)d->files, d->list_s, (unsigned long long)d->list_requests,
             d->list_requests == 1 ? "request" : "requests", d->credentials);
    fprintf(out, "%s%s\n", bullet, pb_printable(printable, sizeof(printable), line));
}

void pb_report_storage(FILE *out, bool markdown, const struct pb_result *result,
                       const struct pb_point_result *point)
{
    if (result->dataset.endpoint[0]) {
        report_remote(out, markdown, result, point);
        return;
    }
    double lo = 101, hi = -1, sum = 0;
    size_t measured = 0;
    uint64_t checked = 0;
    for (size_t i = 0; i < point->repeat_count; i++) {
        const struct pb_repeat_result *r = &point->repeats[i];
        if (!r->page_cache_files_checked)
            continue;
        double pct = r->page_cache_resident_pct;
        lo = pct < lo ? pct : lo;
        hi = pct > hi ? pct : hi;
        sum += pct;
        checked = r->page_cache_files_checked;
        measured++;
    }
    if (!measured)
        return;
    const struct pb_dataset_info *d = &result->dataset;
    double mean = sum / (double)measured;
    const char *where = mean >= FROM_MEMORY_PCT    ? "read from memory"
                        : mean <= FROM_STORAGE_PCT ? "read from storage"
                                                   : "read partly from memory";
    char share[64];
    if (hi - lo < 0.5)
        snprintf(share, sizeof(share), "%.0f%%", mean);
    else
        snprintf(share, sizeof(share), "%.0f-%.0f%%", lo, hi);
    char files[96] = "";
    const char *unit = d->shards ? "shards" : "files";
    if (d->files && checked < d->files)
        snprintf(files, sizeof(files), "; a sample of %llu of its %llu %s checked",
                 (unsigned long long)checked, (unsigned long long)d->files, unit);
    else if (d->files)
        snprintf(files, sizeof(files), "; all %llu %s checked", (unsigned long long)d->files, unit);
    char text[512], printable[PB_PRINTABLE_SIZE(512)];
    snprintf(text, sizeof(text),
             "%s: %s of the dataset was in the page cache at the start of %s (dataset.cache: "
             "%s%s%s)",
             where, share, measured == 1 ? "the repeat" : "each repeat",
             d->cache[0] ? d->cache : "warm", d->filesystem[0] ? ", on " : "", d->filesystem);
    char shown[PB_MARKDOWN_SIZE(sizeof(printable))];
    pb_printable(printable, sizeof(printable), text);
    fprintf(out, "%s%s%s\n", markdown ? "\n- " : "  ",
            markdown ? pb_markdown_text(shown, sizeof(shown), printable, false) : printable, files);
    const char *bullet = markdown ? "- " : "  ";
    if (d->cache_note[0])
        fprintf(out, "%sdataset.cache: %s did not work as asked on %s: %s\n", bullet, d->cache,
                d->filesystem, pb_printable(printable, sizeof(printable), d->cache_note));
    /* The read rate against the storage's, where reads go to storage. */
    double ceiling = result->calibration.storage_cold_mb_per_s > 0
                         ? result->calibration.storage_cold_mb_per_s
                         : d->cold_read_mb_per_s;
    if (ceiling > 0 && point->mb_per_s > 0 && mean < FROM_MEMORY_PCT)
        fprintf(out,
                "%sread %.1f MB/s: %.0f%% of this storage's cold sequential read, %.1f MB/s "
                "in 1 MiB reads\n",
                bullet, point->mb_per_s, 100.0 * point->mb_per_s / ceiling, ceiling);
    if (d->bad_samples)
        fprintf(out,
                "%sthe tar shards hold %llu bad samples (truncated, or with no image "
                "member): counted as errors under run.on_error\n",
                bullet, (unsigned long long)d->bad_samples);
}
