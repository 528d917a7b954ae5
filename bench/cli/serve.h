/* A session served while it runs (--serve [HOST:]PORT; docs/live.md): the
 * live page, /metrics for Prometheus and /result.json, from a snapshot the
 * session's hooks update between repeats (the result so far, summarized)
 * and at each tick (the running repeat's samples/s and its last window's
 * stall). The server's thread
 * reads the snapshot under a lock; the measurement never waits for it: the
 * snapshot is taken outside the hot path, at most a few times a second. */
#ifndef PB_SERVE_H
#define PB_SERVE_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/result/result.h"
#include "bench/session/hooks.h"

struct pb_serve;

/* How long the command line keeps serving after the session ends, so that
 * a page polling once a second shows the verdict and the report's link. */
#define PB_SERVE_LINGER_S 2

/* Starts serving on address ("[HOST:]PORT") for the session about to run
 * config (its name). PB_OK, or PB_ERR_CONFIG with msg (a bad address, a
 * port in use), PB_ERR_UNAVAILABLE (pbench built without libmicrohttpd):
 * before anything is measured. *public: the address is not loopback. */
int pb_serve_start(const char *address, const char *config, struct pb_serve **out, bool *public,
                   char *msg, size_t msglen);

/* pbench serve history.db: serves the history database at db (a file, opened read-only, or
 * a SQLite URI), read once now: / the history report (pbench history show --format html's
 * page, of samples/s), /history.json (--format json's), /metrics the newest figures of every
 * metric history keeps per series (bench/report/live.h: pb_live_history_metrics); anything
 * else 404. PB_OK; PB_ERR with msg where the history cannot be read (missing, empty, not a
 * history); PB_ERR_CONFIG with msg for a bad address or a port in use, as pb_serve_start. */
int pb_serve_history(const char *address, const char *db, struct pb_serve **out, bool *public,
                     char *msg, size_t msglen);

/* Where it serves: "http://127.0.0.1:8080/". */
const char *pb_serve_url(const struct pb_serve *s);

/* Hooks for the session: they keep the snapshot of result (the result the
 * session fills) up to date, then call next's. */
void pb_serve_hooks(struct pb_serve *s, struct pb_result *result,
                    const struct pb_session_hooks *next, struct pb_session_hooks *out);

/* The session ended (or a result file is served: pbench serve): the final
 * result, its analysis and the HTML report (/report.html) are served,
 * state done (or interrupted). analysis may be NULL. */
struct pb_analysis;
void pb_serve_finish(struct pb_serve *s, const struct pb_result *result,
                     const struct pb_analysis *analysis, bool interrupted);

void pb_serve_stop(struct pb_serve *s);

/* The command line's --serve ADDRESS for a session (run, compare of two
 * configs, wrap): the server started and its address said on stderr (a
 * warning where it is not loopback), returning -1; or the exit code of why
 * it cannot be (2: a bad address or a busy port, before anything is
 * measured). title names the command in the error ("pbench compare"). */
struct pb_session_opts;
struct pb_session_outcome;
int pb_cli_serve_start(const struct pb_session_opts *opts, const char *title,
                       struct pb_serve **out);

/* The session ended: the final result and its verdict served for the
 * page's next poll (PB_SERVE_LINGER_S), then the server stopped. */
void pb_cli_serve_end(struct pb_serve *server, const struct pb_result *result,
                      const struct pb_session_outcome *outcome, int session_rc);

#endif
