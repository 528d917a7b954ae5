/* The stopping rule of a repeat's measured part (see DESIGN.md, measurement
 * rules): it stops once run.min_time_s and run.min_samples are reached and
 * the relative noise of windowed throughput is under run.target_noise, and
 * at run.max_time_s whatever the noise (the time cap, flagged).
 *
 * Throughput windows are closed at batch boundaries: a window closes once
 * it is run.window_s long and holds at least 2 batches. The noise is that
 * of the windows of the last min_time_s (at least 3), and the rule needs
 * 3 windows in all, however slow the batches (with slow batches windows
 * are longer than window_s and fewer fit in min_time_s).
 *
 * The rule is plain data driven by the caller's clock readings: it reads
 * no clock and takes no lock, so it can be driven with synthetic timings. */
#ifndef PB_STOPRULE_H
#define PB_STOPRULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/config/config.h"

/* Why a repeat's measured part ended. */
enum pb_stop_reason {
    PB_STOP_NONE = 0,    /* still running */
    PB_STOP_STABLE,      /* min time and samples reached, noise under target */
    PB_STOP_TIME_CAP,    /* run.max_time_s reached */
    PB_STOP_DATA_END,    /* the sampler ran out of batches (epochs, max_samples) */
    PB_STOP_INTERRUPTED, /* the user stopped the run (SIGINT) */
    PB_STOP_FAILED,      /* a stage or the device failed */
    PB_STOP_STUCK,       /* a stage passed run.stage_timeout_s (the watchdog) */
};

struct pb_stoprule {
    /* From run: the rule's settings. */
    double min_time_s, max_time_s, target_noise;
    uint64_t window_ns, min_samples;
    uint64_t noise_windows; /* windows the noise is computed over */
    /* Windowed throughput, samples/s per closed window. */
    double *throughput;
    size_t count, cap;
    uint64_t start_ns; /* start of the measured part */
    uint64_t window_start_ns, window_start_samples, window_start_batches;
    uint64_t samples, batches; /* measured so far */
    double noise;              /* of the last noise_windows; INFINITY below 2 */
    enum pb_stop_reason reason;
};

/* The fewest windows the rule decides on. */
#define PB_STOPRULE_MIN_WINDOWS 3

/* Sets up a rule for run (window storage for max_time_s / window_s
 * windows). Returns PB_OK or PB_ERR_NOMEM. Release with pb_stoprule_free. */
int pb_stoprule_init(struct pb_stoprule *rule, const struct pb_run_spec *run);
void pb_stoprule_free(struct pb_stoprule *rule);

/* Starts the measured part at start_ns: no windows, no samples. */
void pb_stoprule_start(struct pb_stoprule *rule, uint64_t start_ns);

/* Feeds one measured batch of samples, completed at done_ns (on the clock
 * start_ns was read from). Returns true when the measured part should stop
 * now, with rule->reason PB_STOP_STABLE or PB_STOP_TIME_CAP. */
bool pb_stoprule_batch(struct pb_stoprule *rule, uint64_t done_ns, uint64_t samples);

/* Records that the measured part ended for a reason outside the rule
 * (data end, interrupt, failure); a reason already set is kept. */
void pb_stoprule_end(struct pb_stoprule *rule, enum pb_stop_reason reason);

/* Whether the repeat counts as noisy: it hit the time cap with the noise
 * still above target. */
bool pb_stoprule_noisy(const struct pb_stoprule *rule);

/* The relative noise to report: the last computed one, 0 if none. */
double pb_stoprule_noise(const struct pb_stoprule *rule);

/* A stable, lower-case name for reason ("stable", "time_cap", ...). */
const char *pb_stop_reason_name(enum pb_stop_reason reason);

#endif
