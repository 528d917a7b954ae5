#include "bench/report/report_storage.h"

#include <string.h>

#include "bench/base/printable.h"
#include "bench/base/table.h"

/* Shares of the dataset cached at a repeat's start that read as "from
 * memory" and "from storage"; between them, partly from each. */
#define FROM_MEMORY_PCT 90.0
#define FROM_STORAGE_PCT 10.0

void pb_report_storage(FILE *out, bool markdown, const struct pb_result *result,
                       const struct pb_point_result *point)
{
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
