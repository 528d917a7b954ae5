/* What a point may use and lose, checked by the runner: the memory its
 * batch pool and worker buffers need (estimated from the plan before any
 * of it is allocated), the share of bad samples a repeat may have
 * (run.max_error_pct), and the point's list of failing files, each file
 * once with how often it failed. Plain functions on plain data, testable
 * without threads. */
#ifndef PB_RUNLIMITS_H
#define PB_RUNLIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "bench/config/config.h"
#include "bench/result/result.h"

/* What a point's buffers take: slots batch buffers of batch_size samples of
 * slot_bytes each (the pool), and scratch_buffers buffers of scratch_bytes
 * (the workers' scratch, as allocated: with headroom and alignment). */
struct pb_pool_plan {
    int workers; /* 0: the consumer loads, one batch buffer */
    int prefetch_factor;
    int64_t batch_size;
    size_t slot_bytes;
    size_t scratch_bytes; /* one scratch buffer, 0 for none */
    int scratch_buffers;  /* all workers' together          */
    const char *largest_file; /* the dataset's largest sample (NULL: unknown) */
    uint64_t largest_bytes;   /* its size                                    */
    uint64_t others_mean_bytes; /* the other samples' mean size              */
};

/* The bytes the plan takes: the pool and the scratch buffers. */
double pb_pool_bytes(const struct pb_pool_plan *plan);

/* Compares the plan with available_bytes (MemAvailable; 0: unknown, no
 * limit) or run->max_memory_mib when that is lower. Returns PB_OK, or
 * PB_ERR_CONFIG with the sentence in msg ("the batch pool needs 25.8 GiB
 * (1024 workers x 1024 prefetch x 24.6 KiB) but 21.3 GiB is available;
 * lower ..."); when the buffers are that big because of one sample (the
 * largest file over 16 times the others' mean size, and the buffers as big as it
 * over half the need), the sentence names that file, its size and the
 * limit instead of advising on the loader. */
int pb_pool_check(const struct pb_pool_plan *plan, const struct pb_run_spec *run,
                  uint64_t available_bytes, char *msg, size_t msglen);

/* Whether a repeat's measured part may stand: delivered good samples and
 * errors bad ones, first_error the first bad one's sentence. PB_OK, or
 * PB_ERR_DATA with msg when nothing was delivered ("every one of the 110380
 * samples failed: first error FILE: REASON") or the share of errors is
 * above run->max_error_pct ("42% of samples failed (...), above
 * run.max_error_pct 30: first error ..."). */
int pb_error_share_check(const struct pb_run_spec *run, uint64_t delivered, uint64_t errors,
                         const char *first_error, char *msg, size_t msglen);

/* Adds a bad sample of file path (NULL: what is the key) with the sentence
 * what to point->error_files: a file already listed gets its count raised
 * ("PATH: why (failed 3 times)", the first reason kept); a new one is added
 * while there is room. The caller serializes calls. */
void pb_error_files_add(struct pb_point_result *point, const char *path, const char *what);

/* "24.6 KiB", "25.8 GiB": bytes in the binary unit that fits. */
void pb_format_bytes(double bytes, char *buf, size_t buflen);

#endif
