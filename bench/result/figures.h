/* One definition per figure: the figures with one name that every sink,
 * the verdict, compare and history read from a result, each computed
 * here and nowhere else, so the terminal table, Markdown, CSV, TSV, JSON,
 * HTML, the engines line, the analysis, compare and history show the same
 * number under the same name (tests/test_agreement.c holds them to it).
 *
 * CPU per sample is the stages' thread CPU time over the samples that went
 * through them: the most any CPU stage handled (pb_stages_samples: the
 * first stage sees each sample, batches still in flight when measuring
 * stopped included), so collate's per-batch cost is spread over its
 * samples. It is the work per sample, which other processes barely move,
 * where the whole process's CPU over delivered samples (the loop's waits
 * and bookkeeping included) moves with the machine's load.
 *
 * A point's CPU per sample, the pipeline's and each stage's, is the median
 * over its repeats that ran to their end of each repeat's figure, as its
 * samples/s is: the number compare tests and shows, history keeps, the
 * capacity line and the engines line turn into cores, and every sink
 * prints. (Pooling the repeats' rows instead weights each repeat by its
 * samples: on repeats that differ, collate's 1.82 µs in the CSV against
 * compare's 1.89 µs for one result.) */
#ifndef PB_FIGURES_H
#define PB_FIGURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/result/result.h"

/* Whether a stage row is one of the pipeline's CPU stages: not a device
 * row, not a decoder's sub-stage (whose time is its parent's). */
bool pb_stage_is_cpu(const struct pb_stage_result *stage);

/* CPU time per sample, ns: cpu_ns over samples; NAN when either is 0
 * (none measured is not zero). Every CPU per sample is this division. */
double pb_cpu_ns_per_sample(uint64_t cpu_ns, uint64_t samples);

/* A wrapped job's worker row (its job frame's "workers", as the relay
 * sends it): the thread CPU of the samples it built (cpu_ns) over those
 * samples, ns, by pb_cpu_ns_per_sample; NAN where they were not timed.
 * Results from before the relay sent cpu_ns hold its cpu_ns_per_sample. */
double pb_worker_cpu_ns_per_sample(const json_t *worker);

/* A stage's thread CPU time per sample, ns, over the samples through the
 * pipeline of the rows it belongs to (stages, count: a point's or a
 * repeat's); NAN for a device row or a stage without CPU time. A
 * sub-stage's is over the same samples. */
double pb_stage_cpu_ns_per_sample(const struct pb_stage_result *stages, size_t count,
                                  const struct pb_stage_result *stage);

/* The pipeline's CPU time per sample, ns: the CPU stages' summed thread
 * CPU over the samples through them; NAN without stage CPU times. */
double pb_stages_cpu_ns_per_sample(const struct pb_stage_result *stages, size_t count);

/* A repeat's CPU time per sample, ns: its stages' figure; without stage
 * CPU times (no stage timing) the whole process's CPU (100 = one core;
 * its engine's processes) over the samples it delivered; NAN when neither
 * is known. */
double pb_repeat_cpu_ns_per_sample(const struct pb_repeat_result *repeat);

/* A repeat's CPU time per sample in its stage row named name (not a
 * device row), ns; NAN where it has none or the row has no CPU time. */
double pb_repeat_stage_cpu_ns_per_sample(const struct pb_repeat_result *repeat, const char *name);

/* The values a point's CPU per sample is the median of: one per repeat
 * that ran to its end and has the figure, into out (room for the point's
 * repeat_count), the pipeline's, or with name a stage's; their count. */
size_t pb_point_cpu_values(const struct pb_point_result *point, const char *name, double *out);

/* The point's CPU time per sample, ns, the pipeline's: the median of
 * pb_point_cpu_values; where no repeat has it (a point without repeats),
 * that of its merged rows and figures; NAN when neither is known. */
double pb_point_cpu_ns_per_sample(const struct pb_point_result *point);

/* The point's CPU time per sample in stage, one of its (merged) rows, ns:
 * the median over its repeats of their row of that name, as
 * pb_point_cpu_ns_per_sample; NAN for a device row or a stage without CPU
 * time. */
double pb_point_stage_cpu_ns_per_sample(const struct pb_point_result *point,
                                        const struct pb_stage_result *stage);

/* The cores a point's loading takes to deliver need samples/s, from its
 * CPU per sample (pb_point_cpu_ns_per_sample: the stages' thread CPU, not
 * the whole process's): need times it, with the range over the repeats. */
struct pb_cores {
    double cores, lo, hi; /* the median repeat's, and the repeats' range */
    double cpu_ns;        /* the CPU per sample it is from, ns          */
};

/* The cores point needs for need samples/s into *out; false where its CPU
 * per sample is not known. The capacity line and the engines line read
 * this one figure. */
bool pb_point_cores_needed(const struct pb_point_result *point, double need,
                           struct pb_cores *out);

/* A CPU stage's share of the pipeline's thread CPU time, %; NAN for a row
 * that is not a CPU stage or rows without CPU times. The shares of the
 * CPU stages add up to 100. (A stage row's share_pct is of wall time.) */
double pb_stage_cpu_share_pct(const struct pb_stage_result *stages, size_t count,
                              const struct pb_stage_result *stage);

/* The point's stall as its repeats had it: the median and the range of
 * the finished repeats' stall_pct (pb_point_finished_repeats); false when
 * there are fewer than 2. The point's stall_pct itself is the total wait
 * over the total wall of those repeats (a ratio of sums, like step, stages
 * and other, so that the four add up to 100), not this median: tables
 * show both, each named. */
bool pb_point_stall_repeats(const struct pb_point_result *point, double *median, double *lo,
                            double *hi);

#endif
