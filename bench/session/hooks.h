/* What a session is asked and how it speaks (bench/session/hooks.c): the
 * options of a session, its hooks (every sentence a user reads, progress,
 * the stop flag), and the one helper that says a sentence through them.
 * Below session.h, so the session's own modules (data, output) read them
 * without reaching back up to the session. */
#ifndef PB_SESSION_HOOKS_H
#define PB_SESSION_HOOKS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "bench/run/hooks.h"

struct pb_session_opts {
    const char *config_path;
    const char *config_text;        /* the config itself (pbench wrap makes one);
                                       config_path is then only its name          */
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
    const char *new_config_text;    /* as config_text, for new_config_path       */
    const char *baseline_path;      /* NULL: no comparison                        */
    const char *trace_path;         /* run.trace's file; NULL: NAME.trace.json beside
                                       the result                                 */
    double threshold_pct;           /* practical threshold of that comparison     */
    const char *serve;              /* --serve [HOST:]PORT: the command line serves the
                                       session there while it runs (bench/cli/serve.h);
                                       NULL: not served                              */
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
    /* Passed to the runner as they are (see bench/run/hooks.h). */
    pb_progress_fn progress;
    void (*tick)(void *user, double samples_per_s, double stall_pct);
    volatile sig_atomic_t *stop;
};

/* Says a sentence through hooks->message at level (nothing where hooks
 * or its message hook is NULL). */
void pb_session_say(const struct pb_session_hooks *hooks, enum pb_session_level level,
                    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Between the session and the runner: the session's progress and tick
 * hooks, with a repeat of a fixed window (pb_session_planned_end) said as
 * it ended, at its planned time, not at a cap. The runner's hooks take
 * pb_session_relay_progress and _tick with a relay as their user. */
struct pb_session_relay {
    const struct pb_session_hooks *hooks;
    bool fixed_window; /* the point measured now */
};
void pb_session_relay_progress(void *user, int repeat, int repeats,
                               const struct pb_repeat_result *done);
void pb_session_relay_tick(void *user, double samples_per_s, double stall_pct);

/* A window of fixed length (run.min_time_s at least max_time_s: pbench
 * wrap --time S, --batches, --until-exit) ends at its planned time: a
 * repeat of one did not hit a cap (hit_time_cap), nor stop noisy at one
 * (noisy). Clears both where fixed; returns fixed. */
bool pb_session_planned_end(const struct pb_run_spec *run, struct pb_repeat_result *rep);

#endif
