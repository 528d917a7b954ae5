/* A session served while it runs (bench/cli/serve.h). */
#include "bench/cli/serve.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/analyze/history.h"
#include "bench/report/history_report.h"
#include "bench/result/metrics.h"
#include "bench/report/html.h"
#include "bench/report/live.h"
#include "bench/session/ranks.h"
#include "bench/session/session.h"
#include "bench/cli/cli.h"
#include "bench/sys/http.h"

#define SERIES 600 /* the last 10 minutes of samples/s and stall, once a second */
#define TICK_NS 1000000000ull

struct pb_serve {
    struct pb_http *http;
    pthread_mutex_t lock;
    struct pb_live live;
    double t[SERIES], rate[SERIES], stall[SERIES];
    int point[SERIES], repeat[SERIES];
    size_t n;               /* samples kept, oldest first */
    uint64_t t0_ns, last_tick_ns;
    struct pb_result snap;  /* the result so far, summarized: what /metrics reads */
    bool have_snap;
    char *result_json;      /* /result.json */
    size_t result_len;
    char *report;           /* /report.html, once the session has ended */
    size_t report_len;
    /* The session's: its result as it fills, and the hooks served ones call. */
    struct pb_result *result;
    const struct pb_session_hooks *next;
    int rounds_done, rounds_total;
    /* pbench serve history.db: what it serves, rendered once at the start. */
    struct history_pages {
        char *html, *json, *metrics, *openmetrics;
        size_t html_len, json_len, metrics_len, openmetrics_len;
    } history;
};

/* ---- what is served ------------------------------------------------- */

static char *copy_of(const char *text, size_t len)
{
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, text, len);
        c[len] = '\0';
    }
    return c;
}

static int reply(struct pb_http_reply *out, int status, const char *type, char *body, size_t len)
{
    out->status = status;
    out->content_type = type;
    out->body = body;
    out->len = len;
    return body ? PB_OK : PB_ERR_NOMEM;
}

static int answer(void *user, const char *path, const char *accept, struct pb_http_reply *out)
{
    struct pb_serve *s = user;
    int rc;
    size_t len = 0;
    pthread_mutex_lock(&s->lock);
    if (strcmp(path, "/") == 0) {
        const char *page = pb_live_page();
        rc = reply(out, 200, PB_LIVE_PAGE_TYPE, copy_of(page, strlen(page)), strlen(page));
    } else if (strcmp(path, "/live.json") == 0) {
        struct pb_live_series series = {.t_s = s->t, .samples_per_s = s->rate,
                                        .stall_pct = s->stall, .point = s->point,
                                        .repeat = s->repeat, .n = s->n};
        char *body = pb_live_json(&s->live, &series, &len);
        rc = reply(out, 200, PB_LIVE_JSON_TYPE, body, len);
    } else if (strcmp(path, "/result.json") == 0) {
        const char *none = "{}";
        rc = s->result_json ? reply(out, 200, PB_LIVE_JSON_TYPE,
                                    copy_of(s->result_json, s->result_len), s->result_len)
                            : reply(out, 200, PB_LIVE_JSON_TYPE, copy_of(none, 2), 2);
    } else if (strcmp(path, "/metrics") == 0) {
        bool om = pb_live_wants_openmetrics(accept);
        char *body = pb_live_metrics(s->have_snap ? &s->snap : NULL, &s->live, om, &len);
        rc = reply(out, 200, om ? PB_LIVE_OPENMETRICS_TYPE : PB_LIVE_METRICS_TYPE, body, len);
    } else if (strcmp(path, "/report.html") == 0 && s->report) {
        rc = reply(out, 200, PB_LIVE_PAGE_TYPE, copy_of(s->report, s->report_len),
                   s->report_len);
    } else {
        const char *nf = "not found: pbench serves /, /live.json, /result.json, /metrics and, "
                         "once the run has ended, /report.html\n";
        rc = reply(out, 404, "text/plain; charset=utf-8", copy_of(nf, strlen(nf)), strlen(nf));
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* pbench serve history.db: the history report, its JSON and its latest
 * figures; nothing else. */
static int answer_history(void *user, const char *path, const char *accept,
                          struct pb_http_reply *out)
{
    const struct history_pages *h = &((struct pb_serve *)user)->history;
    if (strcmp(path, "/") == 0)
        return reply(out, 200, PB_LIVE_PAGE_TYPE, copy_of(h->html, h->html_len), h->html_len);
    if (strcmp(path, "/history.json") == 0)
        return reply(out, 200, PB_LIVE_JSON_TYPE, copy_of(h->json, h->json_len), h->json_len);
    if (strcmp(path, "/metrics") == 0 && pb_live_wants_openmetrics(accept))
        return reply(out, 200, PB_LIVE_OPENMETRICS_TYPE,
                     copy_of(h->openmetrics, h->openmetrics_len), h->openmetrics_len);
    if (strcmp(path, "/metrics") == 0)
        return reply(out, 200, PB_LIVE_METRICS_TYPE, copy_of(h->metrics, h->metrics_len),
                     h->metrics_len);
    const char *nf = "not found: pbench serves a history's /, /history.json and /metrics\n";
    return reply(out, 404, "text/plain; charset=utf-8", copy_of(nf, strlen(nf)), strlen(nf));
}

/* ---- the snapshot --------------------------------------------------- */

/* The result so far as text and as a summarized copy (what /result.json
 * and /metrics serve); in the session's thread, between repeats. */
static void snapshot(struct pb_serve *s, const struct pb_result *result)
{
    json_t *root = pb_result_to_json(result);
    struct pb_result copy;
    char msg[PB_MSG_MAX];
    bool parsed = root && pb_result_from_json(root, &copy, msg, sizeof msg) == PB_OK;
    json_decref(root);
    /* Each point summarized over its finished repeats, as the final file
     * will be; the text served is of that copy. */
    if (parsed)
        for (size_t i = 0; i < copy.point_count; i++)
            if (copy.points[i].repeat_count > 0) {
                pb_point_summarize(&copy.points[i]);
                /* Under mpirun, the ranks' own figures so far (rank 0
                 * gathers them; a no-op elsewhere): the final result
                 * adds them only at the end. */
                if (!copy.points[i].ranks)
                    pb_ranks_point((long)i, &copy.points[i]);
            }
    root = parsed ? pb_result_to_json(&copy) : NULL;
    char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    pthread_mutex_lock(&s->lock);
    if (result->name[0]) /* the config's name, as the result and /metrics give it */
        pb_strlcpy(s->live.config, result->name, sizeof s->live.config);
    if (text) {
        free(s->result_json);
        s->result_json = text;
        s->result_len = strlen(text);
    }
    if (parsed) {
        if (s->have_snap)
            pb_result_free(&s->snap);
        s->snap = copy;
        s->have_snap = true;
    }
    pthread_mutex_unlock(&s->lock);
}

static void add_sample(struct pb_serve *s, double rate, double stall)
{
    if (s->n == SERIES) {
        memmove(s->t, s->t + 1, (SERIES - 1) * sizeof(double));
        memmove(s->rate, s->rate + 1, (SERIES - 1) * sizeof(double));
        memmove(s->stall, s->stall + 1, (SERIES - 1) * sizeof(double));
        memmove(s->point, s->point + 1, (SERIES - 1) * sizeof(int));
        memmove(s->repeat, s->repeat + 1, (SERIES - 1) * sizeof(int));
        s->n--;
    }
    s->t[s->n] = s->live.t_s;
    s->rate[s->n] = rate;
    s->stall[s->n] = stall;
    s->point[s->n] = s->live.point;
    s->repeat[s->n] = s->live.repeat;
    s->n++;
}

/* ---- the session's hooks -------------------------------------------- */

static void on_message(void *user, enum pb_session_level level, const char *text)
{
    struct pb_serve *s = user;
    if (s->next->message)
        s->next->message(s->next->user, level, text);
}

static void on_measuring(void *user, bool on)
{
    struct pb_serve *s = user;
    pthread_mutex_lock(&s->lock);
    if (on && strcmp(s->live.state, "starting") == 0)
        pb_strlcpy(s->live.state, "measuring", sizeof s->live.state);
    pthread_mutex_unlock(&s->lock);
    if (s->next->measuring)
        s->next->measuring(s->next->user, on);
}

static void on_rounds(void *user, int points, int repeats)
{
    struct pb_serve *s = user;
    pthread_mutex_lock(&s->lock);
    s->live.points = points;
    s->live.repeats = repeats;
    s->rounds_total = points * repeats;
    pthread_mutex_unlock(&s->lock);
    if (s->next->rounds)
        s->next->rounds(s->next->user, points, repeats);
}

static void on_round(void *user, int point, int round, const char *label)
{
    struct pb_serve *s = user;
    uint64_t now = pb_now_ns();
    pthread_mutex_lock(&s->lock);
    s->live.point = point;
    s->live.repeat = round;
    pb_strlcpy(s->live.label, label ? label : "", sizeof s->live.label);
    double elapsed = (double)(now - s->t0_ns) / 1e9;
    s->live.eta_s = s->rounds_done > 0 && s->rounds_total > 0
                        ? elapsed / s->rounds_done * (s->rounds_total - s->rounds_done)
                        : -1;
    pthread_mutex_unlock(&s->lock);
    if (s->next->round)
        s->next->round(s->next->user, point, round, label);
}

static void on_progress(void *user, int repeat, int repeats, const struct pb_repeat_result *rep)
{
    struct pb_serve *s = user;
    snapshot(s, s->result);
    pthread_mutex_lock(&s->lock);
    s->rounds_done++;
    s->live.samples_per_s = rep->samples_per_s;
    s->live.stall_pct = rep->stall_pct;
    pthread_mutex_unlock(&s->lock);
    if (s->next->progress)
        s->next->progress(s->next->user, repeat, repeats, rep);
}

/* The running repeat's throughput and its last window's stall, from the
 * sampler: kept once a second. Until the repeat's first window closes the
 * stall shown stays the last finished repeat's, and none is kept. */
static void on_tick(void *user, double samples_per_s, double stall_pct)
{
    struct pb_serve *s = user;
    uint64_t now = pb_now_ns();
    pthread_mutex_lock(&s->lock);
    s->live.samples_per_s = samples_per_s;
    if (isfinite(stall_pct))
        s->live.stall_pct = stall_pct;
    s->live.t_s = (double)(now - s->t0_ns) / 1e9;
    if (now - s->last_tick_ns >= TICK_NS) {
        s->last_tick_ns = now;
        add_sample(s, samples_per_s, stall_pct);
    }
    pthread_mutex_unlock(&s->lock);
    if (s->next->tick)
        s->next->tick(s->next->user, samples_per_s, stall_pct);
}

/* ---- life --------------------------------------------------------------- */

/* A server's state, its lock made; NULL with msg when out of memory. */
static struct pb_serve *serve_new(struct pb_serve **out, char *msg, size_t msglen)
{
    *out = NULL;
    struct pb_serve *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

int pb_serve_start(const char *address, const char *config, struct pb_serve **out, bool *public,
                   char *msg, size_t msglen)
{
    struct pb_serve *s = serve_new(out, msg, msglen);
    if (!s)
        return PB_ERR_NOMEM;
    pb_strlcpy(s->live.config, config ? config : "", sizeof s->live.config);
    pb_strlcpy(s->live.state, "starting", sizeof s->live.state);
    s->live.eta_s = -1;
    /* Not known before the first tick (a result file served: never). */
    s->live.samples_per_s = s->live.stall_pct = s->live.t_s = NAN;
    s->t0_ns = pb_now_ns();
    int rc = pb_http_start(address, answer, s, &s->http, public, msg, msglen);
    if (rc != PB_OK) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return rc;
    }
    *out = s;
    return PB_OK;
}

const char *pb_serve_url(const struct pb_serve *s)
{
    return pb_http_url(s->http);
}

void pb_serve_hooks(struct pb_serve *s, struct pb_result *result,
                    const struct pb_session_hooks *next, struct pb_session_hooks *out)
{
    static const struct pb_session_hooks none;
    s->result = result;
    s->next = next ? next : &none;
    *out = (struct pb_session_hooks){
        .user = s,
        .message = on_message,
        .measuring = on_measuring,
        .rounds = on_rounds,
        .round = on_round,
        .progress = on_progress,
        .tick = on_tick,
        .stop = s->next->stop,
    };
}

void pb_serve_finish(struct pb_serve *s, const struct pb_result *result,
                     const struct pb_analysis *analysis, bool interrupted)
{
    snapshot(s, result);
    char *page = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&page, &len);
    if (f) {
        pb_html_report(f, result, analysis);
        fclose(f);
    }
    pthread_mutex_lock(&s->lock);
    free(s->report);
    s->report = page;
    s->report_len = page ? len : 0;
    pb_strlcpy(s->live.state, interrupted ? "interrupted" : "done", sizeof s->live.state);
    s->live.eta_s = 0;
    pthread_mutex_unlock(&s->lock);
}

/* The database at path opened read-only: a SQLite URI as it is, a file
 * name as "file:PATH?mode=ro" (its %, ? and # escaped). */
static void read_only_uri(const char *path, char *uri, size_t size)
{
    if (strncmp(path, "file:", 5) == 0) {
        pb_strlcpy(uri, path, size);
        return;
    }
    size_t used = (size_t)snprintf(uri, size, "file:");
    for (const char *c = path; *c && used + 4 < size; c++) {
        if (strchr("%?#", *c)) {
            used += (size_t)snprintf(uri + used, size - used, "%%%02x", (unsigned char)*c);
        } else {
            uri[used++] = *c;
            uri[used] = '\0';
        }
    }
    snprintf(uri + used, size - used, "?mode=ro");
}

/* Renders what pbench serve history.db serves: the report and JSON of the
 * samples/s history (as pbench history show --format html|json), and the
 * newest figures of every metric history keeps. PB_OK, or the error of
 * reading samples/s's (no history, not a history) with msg. */
static int render_history(const char *db, struct history_pages *pages, char *msg, size_t msglen)
{
    char uri[PB_PATH_MAX * 3 + 16];
    read_only_uri(db, uri, sizeof uri);
    struct pb_history loaded[PB_METRIC_COUNT];
    const struct pb_history *kept[PB_METRIC_COUNT];
    size_t count = 0;
    int rc = pb_history_load(uri, NULL, "samples_per_s", 5, &loaded[0], msg, msglen);
    if (rc != PB_OK)
        return rc;
    kept[count++] = &loaded[0];
    char ignored[PB_MSG_MAX];
    for (size_t m = 0; m < PB_METRIC_COUNT; m++)
        if (pb_metrics[m].of_point && strcmp(pb_metrics[m].name, "samples_per_s") != 0 &&
            pb_history_load(uri, NULL, pb_metrics[m].name, 5, &loaded[count], ignored,
                            sizeof ignored) == PB_OK) {
            kept[count] = &loaded[count];
            count++;
        }
    FILE *f = open_memstream(&pages->html, &pages->html_len);
    if (f) {
        pb_history_html(f, &loaded[0]);
        fclose(f);
    }
    f = open_memstream(&pages->json, &pages->json_len);
    if (f) {
        pb_history_json(f, &loaded[0]);
        fclose(f);
    }
    for (int om = 0; om < 2; om++) {
        f = open_memstream(om ? &pages->openmetrics : &pages->metrics,
                           om ? &pages->openmetrics_len : &pages->metrics_len);
        if (f) {
            pb_live_history_metrics(f, kept, count, om);
            fclose(f);
        }
    }
    for (size_t k = 0; k < count; k++)
        pb_history_free(&loaded[k]);
    bool all = pages->html && pages->json && pages->metrics && pages->openmetrics;
    if (!all)
        snprintf(msg, msglen, "out of memory rendering %s", db);
    return all ? PB_OK : PB_ERR_NOMEM;
}

static void free_history(struct history_pages *pages)
{
    free(pages->html);
    free(pages->json);
    free(pages->metrics);
    free(pages->openmetrics);
}

int pb_serve_history(const char *address, const char *db, struct pb_serve **out, bool *public,
                     char *msg, size_t msglen)
{
    struct pb_serve *s = serve_new(out, msg, msglen);
    if (!s)
        return PB_ERR_NOMEM;
    int rc = render_history(db, &s->history, msg, msglen);
    if (rc == PB_OK)
        rc = pb_http_start(address, answer_history, s, &s->http, public, msg, msglen);
    if (rc != PB_OK) {
        free_history(&s->history);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return rc;
    }
    *out = s;
    return PB_OK;
}

void pb_serve_stop(struct pb_serve *s)
{
    if (!s)
        return;
    pb_http_stop(s->http); /* its thread is gone: nothing reads the rest now */
    free_history(&s->history);
    if (s->have_snap)
        pb_result_free(&s->snap);
    free(s->result_json);
    free(s->report);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ---- the command line's side: starting and ending a served session ---- */

/* --serve ADDRESS: the server started for a session (-1), or the exit code
 * of why it cannot be (2: a bad address or a busy port, before anything is
 * measured). */
int pb_cli_serve_start(const struct pb_session_opts *opts, const char *title,
                       struct pb_serve **out)
{
    char msg[PB_MSG_MAX];
    bool open_to_all = false;
    const char *slash = strrchr(opts->config_path, '/');
    int rc = pb_serve_start(opts->serve, slash ? slash + 1 : opts->config_path, out,
                            &open_to_all, msg, sizeof msg);
    if (rc != PB_OK) {
        /* "pbench compare" -> "compare"; run's title is "pbench" alone */
        const char *space = strchr(title, ' ');
        pb_cli_error(space ? space + 1 : "run", msg);
        return PB_EXIT_USAGE;
    }
    fprintf(stderr, "pbench: the run is served at %s (/metrics for Prometheus, /result.json)\n",
            pb_serve_url(*out));
    if (open_to_all)
        fprintf(stderr, "pbench: warning: %s is not a loopback address: anyone who can reach "
                        "this machine can read the run there\n",
                opts->serve);
    return -1;
}

/* The session ended: the final result and its verdict served for the
 * page's next poll, then the server stopped. */
void pb_cli_serve_end(struct pb_serve *server, const struct pb_result *result,
                      const struct pb_session_outcome *outcome, int session_rc)
{
    pb_serve_finish(server, result, outcome->analyzed ? &outcome->analysis : NULL,
                    session_rc == PB_ERR_INTERRUPTED);
    if (session_rc != PB_ERR_INTERRUPTED)
        sleep(PB_SERVE_LINGER_S); /* a page polling once a second sees the end */
    pb_serve_stop(server);
}
