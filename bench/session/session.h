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
#include "bench/run/runner.h"

struct pb_session_opts {
    const char *config_path;
    const char *const *overrides;   /* "-s key.path=value", applied in order */
    int override_count;
    const char *const *axes;        /* "-a key.path=v1,v2", over the sweep: section */
    int axis_count;
    const char *output_path;        /* NULL: results/NAME-YYYYmmdd-HHMMSS.json; a link
                                       is followed to the file it names */
    bool overhead;                  /* paired rounds with stage timing off       */
    bool calibrate;                 /* a sweep starts with the one-core calibration */
    bool calibrate_gpu;             /* pb_session_calibrate: host-to-device copies too,
                                       failing without a device                  */
    const char *new_config_path;    /* pbench compare BASE.yaml NEW.yaml: NEW's points
                                       run in rounds interleaved with config_path's,
                                       one result holds both (bench/session/interleave.h)
                                       and the outcome their comparison          */
    const char *const *new_overrides; /* pbench compare --set-new key.path=value: on the
                                       new config alone, after the -s overrides; the
                                       change under test when both configs are one file */
    int new_override_count;
    const char *baseline_path;      /* NULL: no comparison                        */
    const char *trace_path;         /* run.trace's file; NULL: NAME.trace.json beside
                                       the result                                 */
    double threshold_pct;           /* practical threshold of that comparison     */
};

enum pb_session_level {
    PB_SESSION_INFO,    /* what is happening ("generating 512 files ...")     */
    PB_SESSION_WARNING, /* a caveat that also travels into the result          */
    PB_SESSION_ERROR,   /* an error: the session stops, or a point failed      */
};

/* Every callback may be NULL, and so may the hooks themselves. */
struct pb_session_hooks {
    void *user;
    /* One sentence for the user, without a prefix or a newline. */
    void (*message)(void *user, enum pb_session_level level, const char *text);
    /* The session enters (on) and leaves (off) the part that a stop signal
     * (Ctrl-C, SIGTERM, SIGHUP) should end politely: data generation,
     * calibration and the measured rounds. */
    void (*measuring)(void *user, bool on);
    /* The interleaved rounds start: points x repeats rounds in all. */
    void (*rounds)(void *user, int points, int repeats);
    /* A round of one point starts (both 1-based); label names its axes,
     * "workers=2 batch_size=32", or "" without a sweep. */
    void (*round)(void *user, int point, int round, const char *label);
    /* Passed to the runner as they are (see bench/run/runner.h). */
    pb_progress_fn progress;
    void (*tick)(void *user, double samples_per_s);
    volatile sig_atomic_t *stop;
};

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

/* Seconds as people read a duration: "42s", "3m05s", "1h02m". */
void pb_format_duration(double seconds, char *buf, size_t buflen);

#endif
