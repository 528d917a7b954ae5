/* A run or sweep session as a library call: what `pbench run` does between
 * parsing its arguments and rendering its result.
 *
 * A session loads the config and the sweep, builds and validates every
 * point's spec (before any data is generated), applies the GPU policy
 * (gpu: required stops without a device, gpu: optional drops to_device,
 * the GPU stages and a loader.pin_memory axis), opens the dataset
 * (generating it on first use), calibrates a sweep, measures the points in
 * rounds interleaved across points (with CUPTI and overhead pairs when
 * asked), summarizes and analyzes, writes the result atomically and
 * compares it with a baseline. It never prints: everything a user reads
 * goes through the hooks, so a terminal front end draws progress and a test
 * runs silently with no hooks at all. */
#ifndef PB_SESSION_H
#define PB_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "bench/analyze/analysis.h"
#include "bench/analyze/compare.h"
#include "bench/result/result.h"
#include "bench/run/hooks.h"
#include "bench/session/hooks.h"

/* What a session leaves besides its result. */
struct pb_session_outcome {
    bool measured;                   /* a point has a repeat: the result is worth rendering */
    char result_path[PB_PATH_MAX];   /* the result file (unwritten when writing failed)     */
    bool compared;                   /* the baseline was read and compared                  */
    struct pb_comparison comparison; /* valid when compared                                 */
    bool analyzed;                   /* the analysis of the result, what the table shows    */
    struct pb_analysis analysis;     /* valid when analyzed                                 */
};

/* Runs the session opts describes and fills result (release it with
 * pb_result_free whatever the return) and outcome (release it with
 * pb_session_outcome_free). Returns PB_OK; PB_ERR_CONFIG for a config,
 * sweep or command-line error, found before any data is generated, with
 * "FILE:LINE:COL: sentence" in msg where the config has a position (the
 * dataset's own errors come later and name the config file and the path),
 * and for a result path that is a directory, device, FIFO or socket
 * ("-o PATH: is a character device, not a file; give a file path"), also
 * found first; PB_ERR_INTERRUPTED when the stop flag was raised (while the
 * data was generated: its temporary folder is removed; while measuring: the
 * result holds every finished repeat, is marked interrupted and written,
 * and a repeat cut short stays out of the summary); the error of a failed
 * single point (its result is still written); PB_ERR when the baseline
 * cannot be read (found before measuring, the message naming it) or the
 * result cannot be written. The default result path is
 * results/NAME-YYYYmmdd-HHMMSS.json with the config's name reduced to
 * letters, digits, '.', '_' and '-'. msg holds the last error's sentence,
 * which was also given to the message hook. */
int pb_session_run(const struct pb_session_opts *opts, const struct pb_session_hooks *hooks,
                   struct pb_result *result, struct pb_session_outcome *outcome, char *msg,
                   size_t msglen);

void pb_session_outcome_free(struct pb_session_outcome *outcome);

/* `pbench calibrate`: the config with opts' overrides (not its axes) and
 * the calibration's settings, validated, then its dataset (generated on
 * first use), then pb_calibrate (bench/session/calibrate.h) with
 * opts->calibrate_gpu. Writes the config's name into name. Returns PB_OK or
 * an error with msg (also given to the message hook). */
int pb_session_calibrate(const struct pb_session_opts *opts, const struct pb_session_hooks *hooks,
                         struct pb_calibration *cal, char *name, size_t namelen, char *msg,
                         size_t msglen);



#endif
