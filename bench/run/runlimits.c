/* What a point may use and lose (bench/run/runlimits.h): the memory its batch pool
 * needs, checked before it is allocated, and the share of bad samples a repeat may have. */
#include "bench/run/runlimits.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bench/base/pb.h"

void pb_format_bytes(double bytes, char *buf, size_t buflen)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < (int)PB_ARRAY_LEN(units) - 1) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, buflen, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

double pb_pool_bytes(const struct pb_pool_plan *plan)
{
    /* In double: a hostile config's product overflows 64 bits. */
    double slots = plan->workers > 0 ? (double)plan->workers * plan->prefetch_factor : 1;
    return slots * (double)plan->batch_size * (double)plan->slot_bytes +
           (double)plan->scratch_buffers * (double)plan->scratch_bytes;
}

/* Whether the plan is that big because of the largest file: it is an
 * outlier (over 16 times the others' mean), and the buffers as big as it take over
 * half of need. */
static bool one_file_to_blame(const struct pb_pool_plan *plan, double need)
{
    if (!plan->largest_file || plan->largest_bytes == 0 ||
        (double)plan->largest_bytes <= 16.0 * (double)plan->others_mean_bytes)
        return false;
    struct pb_pool_plan tied = *plan;
    if (tied.scratch_bytes < plan->largest_bytes)
        tied.scratch_buffers = 0;
    if (tied.slot_bytes < plan->largest_bytes)
        tied.slot_bytes = 0;
    return 2 * pb_pool_bytes(&tied) > need;
}

/* The pool is too big because one sample is: the loader holds a sample
 * whole, so each buffer is as big as the largest file. */
static int largest_file_error(const struct pb_pool_plan *plan, double need, double limit,
                              bool by_option, char *msg, size_t msglen)
{
    char size_s[32], need_s[32], limit_s[32];
    pb_format_bytes((double)plan->largest_bytes, size_s, sizeof(size_s));
    pb_format_bytes(need, need_s, sizeof(need_s));
    pb_format_bytes(limit, limit_s, sizeof(limit_s));
    snprintf(msg, msglen,
             "the dataset's largest file, %s, is %s: a sample is held whole, so the loader's "
             "buffers need %s but %s %s; remove that file from dataset.path (or name the files "
             "with a glob that leaves it out)",
             plan->largest_file, size_s, need_s, limit_s,
             by_option ? "is allowed by run.max_memory_mib" : "is available");
    return PB_ERR_CONFIG;
}

int pb_pool_check(const struct pb_pool_plan *plan, const struct pb_run_spec *run,
                  uint64_t available_bytes, char *msg, size_t msglen)
{
    double batch_bytes = (double)plan->batch_size * (double)plan->slot_bytes;
    double scratch_bytes = (double)plan->scratch_buffers * (double)plan->scratch_bytes;
    double need = pb_pool_bytes(plan);
    double limit = (double)available_bytes, allowed = (double)run->max_memory_mib * 1048576.0;
    bool by_option = run->max_memory_mib > 0 && (limit == 0 || allowed < limit);
    if (by_option)
        limit = allowed;
    if (limit == 0 || need <= limit)
        return PB_OK;
    if (one_file_to_blame(plan, need))
        return largest_file_error(plan, need, limit, by_option, msg, msglen);
    char need_s[32], batch_s[32], limit_s[32], one_s[32], pool[128], scratch[96] = "";
    pb_format_bytes(need, need_s, sizeof(need_s));
    pb_format_bytes(batch_bytes, batch_s, sizeof(batch_s));
    pb_format_bytes(limit, limit_s, sizeof(limit_s));
    if (plan->workers > 0)
        snprintf(pool, sizeof(pool), "%d workers x %d prefetch x %s", plan->workers,
                 plan->prefetch_factor, batch_s);
    else
        snprintf(pool, sizeof(pool), "one batch of %s", batch_s);
    if (scratch_bytes > 0) {
        pb_format_bytes((double)plan->scratch_bytes, one_s, sizeof(one_s));
        snprintf(scratch, sizeof(scratch), ", plus %d scratch buffers of %s", plan->scratch_buffers,
                 one_s);
    }
    snprintf(msg, msglen,
             "the batch pool needs %s (%s%s) but %s %s; lower loader.prefetch_factor, "
             "loader.workers or loader.batch_size, or the pipeline's output size",
             need_s, pool, scratch, limit_s,
             by_option ? "is allowed by run.max_memory_mib" : "is available");
    return PB_ERR_CONFIG;
}

int pb_error_share_check(const struct pb_run_spec *run, uint64_t delivered, uint64_t errors,
                         const char *first_error, char *msg, size_t msglen)
{
    if (delivered == 0 && errors == 0) {
        snprintf(msg, msglen, "no sample was delivered in the measured part");
        return PB_ERR_DATA;
    }
    if (delivered == 0) {
        snprintf(msg, msglen, "every one of the %llu samples failed: first error %s",
                 (unsigned long long)errors, first_error);
        return PB_ERR_DATA;
    }
    double pct = 100.0 * (double)errors / (double)(delivered + errors);
    if (pct <= run->max_error_pct)
        return PB_OK;
    snprintf(msg, msglen,
             "%.0f%% of samples failed (%llu of %llu), above run.max_error_pct %g: first error %s",
             pct, (unsigned long long)errors, (unsigned long long)(delivered + errors),
             run->max_error_pct, first_error);
    return PB_ERR_DATA;
}

/* The " (failed N times)" note at the end of an error_files entry: where
 * it starts and N, or NULL (the file failed once). */
static char *repeat_note(char *entry, int *times)
{
    char *note = strrchr(entry, '(');
    int end = 0;
    if (!note || note == entry || note[-1] != ' ' ||
        sscanf(note, "(failed %d times)%n", times, &end) != 1 || end == 0 || note[end] != '\0')
        return NULL;
    return note - 1;
}

void pb_error_files_add(struct pb_point_result *point, const char *path, const char *what)
{
    size_t path_len = path ? strlen(path) : 0;
    for (int i = 0; i < point->error_file_count && i < PB_MAX_ERROR_FILES; i++) {
        char *entry = point->error_files[i];
        bool same = path ? strncmp(entry, path, path_len) == 0 && entry[path_len] == ':'
                         : strcmp(entry, what) == 0;
        if (!same)
            continue;
        int times = 1;
        char *note = repeat_note(entry, &times);
        size_t len = note ? (size_t)(note - entry) : strlen(entry);
        char text[32];
        size_t text_len = (size_t)snprintf(text, sizeof(text), " (failed %d times)", times + 1);
        /* Shorten the reason for the note, never the "PATH:" it is found by. */
        size_t room = sizeof(point->error_files[i]) - 1 - text_len;
        if (len > room)
            len = room > path_len + 1 ? room : path_len + 1;
        if (len + text_len < sizeof(point->error_files[i]))
            memcpy(entry + len, text, text_len + 1);
        return;
    }
    if (point->error_file_count < PB_MAX_ERROR_FILES)
        pb_strlcpy(point->error_files[point->error_file_count++], what,
                   sizeof(point->error_files[0]));
    else
        point->error_files_unlisted++;
}
