/* A series' step change, spread and suspect newest run (see steps.h). */
#include "bench/analyze/steps.h"

#include <math.h>
#include <stdlib.h>

#include "bench/base/stats.h"

/* pb_history_step and pb_history_step_pp over values without NaN: a
 * change is relative (%) or, absolute, in the values' own unit (pp). */
static long find_step(const double *values, size_t n, double threshold, bool absolute,
                      double *change)
{
    for (size_t i = 1; i + PB_STEP_MIN_RUNS <= n; i++) {
        double before = pb_median(values, i);
        if (!absolute && !(before > 0) && !(before < 0))
            continue;
        int direction = 0;
        bool all = true;
        for (size_t j = i; j < n && all; j++) {
            double d = absolute ? values[j] - before : 100 * (values[j] / before - 1);
            int dir = d > threshold ? 1 : d < -threshold ? -1 : 0;
            if (dir == 0 || (direction && dir != direction))
                all = false;
            direction = dir;
        }
        if (!all)
            continue;
        double after = pb_median(values + i, n - i);
        double shift = absolute ? after - before : 100 * (after / before - 1);
        if (fabs(shift) > threshold) {
            if (change)
                *change = shift;
            return (long)i;
        }
    }
    return -1;
}

/* Both step searches: the values that are numbers, kept in order, and the
 * step's index mapped back to values. */
long pb_step_find(const double *values, size_t n, double threshold, bool absolute,
                    double *change)
{
    double *known = malloc((n ? n : 1) * sizeof(double));
    size_t *at = malloc((n ? n : 1) * sizeof(size_t));
    long step = -1;
    size_t k = 0;
    for (size_t i = 0; known && at && i < n; i++)
        if (!isnan(values[i])) {
            known[k] = values[i];
            at[k++] = i;
        }
    if (known && at) {
        step = find_step(known, k, threshold, absolute, change);
        step = step >= 0 ? (long)at[step] : -1;
    }
    free(known);
    free(at);
    return step;
}

long pb_history_step(const double *values, size_t n, double threshold_pct, double *change_pct)
{
    return pb_step_find(values, n, threshold_pct, false, change_pct);
}

long pb_history_step_pp(const double *values, size_t n, double threshold_pp, double *change_pp)
{
    return pb_step_find(values, n, threshold_pp, true, change_pp);
}

double pb_run_spread(const double *values, size_t n, bool absolute)
{
    double *known = malloc((n ? n : 1) * sizeof(double));
    double *diff = malloc((n ? n : 1) * sizeof(double));
    size_t k = 0, d = 0;
    for (size_t i = 0; known && diff && i < n; i++)
        if (!isnan(values[i]))
            known[k++] = values[i];
    double spread = NAN;
    if (k >= PB_SPREAD_MIN_RUNS) {
        double median = pb_median(known, k);
        for (size_t i = 1; i < k; i++)
            diff[d++] = fabs(known[i] - known[i - 1]);
        double sd = pb_median(diff, d) / (0.6745 * M_SQRT2);
        spread = absolute ? sd : median != 0 ? 100 * sd / fabs(median) : NAN;
    }
    free(known);
    free(diff);
    return spread;
}

bool pb_step_suspect(const double *values, size_t n, double threshold, bool absolute,
                     struct pb_suspect *out)
{
    *out = (struct pb_suspect){.change = NAN, .noise = NAN};
    double *known = malloc((n ? n : 1) * sizeof(double));
    size_t k = 0;
    for (size_t i = 0; known && i < n; i++)
        if (!isnan(values[i]))
            known[k++] = values[i];
    if (k >= PB_SUSPECT_MIN_RUNS + 1) {
        double newest = known[k - 1], before = pb_median(known, k - 1);
        out->before = k - 1;
        if (absolute || before != 0)
            out->change = absolute ? newest - before : 100 * (newest / before - 1);
        out->noise = pb_run_spread(known, k - 1, absolute);
        double margin = isnan(out->noise) ? 0 : PB_SUSPECT_SIGMAS * out->noise;
        out->suspect = fabs(out->change) > threshold + margin;
    }
    free(known);
    return out->suspect;
}
