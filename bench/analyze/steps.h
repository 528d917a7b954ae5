/* What a series of runs says, as plain data in and out: its step change
 * (after asv: a shift of the median beyond the threshold that persists for
 * at least PB_STEP_MIN_RUNS runs), its run-to-run spread, and whether its
 * newest run is suspect (one night outside the spread by more than the
 * threshold). No database, no clock, no output: bench/analyze/history.c
 * reads the runs and calls these. */
#ifndef PB_STEPS_H
#define PB_STEPS_H

#include <stdbool.h>
#include <stddef.h>

#define PB_STEP_MIN_RUNS 2

/* Step detection on a series in time order: the earliest index i such that
 * every value from i on differs from the median of the values before i by
 * more than threshold_pct in one direction, the median from i on does too,
 * and at least PB_STEP_MIN_RUNS values follow i (i included). -1 if none.
 * *change_pct gets the shift of the median. NaN values (a run without the
 * metric) are left out. pb_history_step_pp is the same in percentage
 * points, for shares of time such as stall_pct (a stall of 0.5% against
 * 0.8% is no 60% step). */
long pb_history_step(const double *values, size_t n, double threshold_pct, double *change_pct);
long pb_history_step_pp(const double *values, size_t n, double threshold_pp, double *change_pp);
/* Either of them: absolute picks percentage points. */
long pb_step_find(const double *values, size_t n, double threshold, bool absolute,
                  double *change);

/* The robust run-to-run SD of values (in time order, NaNs left out): the
 * median |difference| of consecutive runs / 0.954 (for normal noise the
 * difference's SD is sqrt(2) sigma, and its median absolute value 0.6745
 * of that), in % of their median (pp when absolute); NaN below
 * PB_SPREAD_MIN_RUNS values. */
#define PB_SPREAD_MIN_RUNS 5
double pb_run_spread(const double *values, size_t n, bool absolute);

/* A suspect run: the newest value of a series (in time order, NaNs left
 * out) against the median of the values before it, when at least
 * PB_SUSPECT_MIN_RUNS came before. It is suspect when its change (% or pp)
 * is past the threshold by more than PB_SUSPECT_SIGMAS times the runs'
 * own spread (pb_run_spread of the runs before; 0 where fewer than
 * PB_SPREAD_MIN_RUNS give none): one night, not yet a step, that the
 * series' noise does not explain. Fills what was found either way
 * (change, noise: NaN unknown); returns whether it is suspect. */
#define PB_SUSPECT_MIN_RUNS 2
#define PB_SUSPECT_SIGMAS 3.0
struct pb_suspect {
    bool suspect;
    double change;  /* the newest run against the median before it, % or pp */
    double noise;   /* the run-to-run spread of the runs before, % or pp    */
    size_t before;  /* the runs with a value before the newest              */
};
bool pb_step_suspect(const double *values, size_t n, double threshold, bool absolute,
                     struct pb_suspect *out);

#endif
