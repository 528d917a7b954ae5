/* One loader worker's reads from object storage (see remote.h): a curl
 * multi handle whose connections are kept alive between requests, and a
 * fixed set of slots, one per request in flight, each with a buffer of
 * the largest object's size made once. The worker plans a batch's
 * objects; while it waits for one, in_flight requests of the plan are
 * out, and while it decodes one, in_flight - 1, so their latency overlaps
 * the decode (with 1, objects are read one at a time, as a Dataset that
 * reads in __getitem__ does). Failed attempts that may pass (5xx, SlowDown,
 * resets, timeouts) wait out a backoff in their slot and go again. */
#include "pipelines/remote.h"
#include "pipelines/remote_curl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"

const char *const pb_fetch_substages[] = {"connect", "ttfb", "transfer", NULL};
const char *const pb_fetch_counters[] = {"requests",    "retries",     "retry_503",
                                         "retry_5xx",   "retry_reset", "retry_timeout",
                                         "failed",      "reused_connections", NULL};

/* The longest one wait for the network lasts, so a backoff that ends is
 * seen soon. */
#define POLL_MS 50

enum slot_state { SLOT_FREE, SLOT_ACTIVE, SLOT_BACKOFF, SLOT_DONE };

struct slot {
    CURL *easy;
    enum slot_state state;
    uint32_t entry;        /* its place in the plan                       */
    uint8_t *buf;
    size_t cap, len;       /* len counts past cap: an object larger than listed */
    int attempts;
    bool excess;           /* more bytes came than the Content-Length said */
    bool fresh;            /* the next attempt opens a new connection     */
    uint64_t due_ns;       /* SLOT_BACKOFF: when it goes again            */
    CURLcode rc;
    long status;
    enum pb_attempt how;
    struct pb_fetch_cost cost;
    char url[PB_PATH_MAX]; /* the request's                               */
    char err[CURL_ERROR_SIZE];
};

struct pb_fetcher {
    const struct pb_remote *r;
    CURLM *multi;
    int n;
    bool head;             /* HEAD: the objects' sizes, for a listing     */
    struct slot *slots;
    const char *const *plan;
    uint32_t plan_n, next, take; /* started up to next, read up to take   */
    const char *lone[1];   /* a read of an object that was not planned    */
    uint64_t seed;
    volatile sig_atomic_t *stop; /* raised: every wait ends               */
};

static size_t slot_write(char *p, size_t size, size_t n, void *user)
{
    struct slot *s = user;
    size_t add = size * n;
    if (s->len < s->cap) {
        size_t copy = s->cap - s->len < add ? s->cap - s->len : add;
        memcpy(s->buf + s->len, p, copy);
    }
    s->len += add;
    return add;
}

int pb_fetcher_new(const struct pb_remote *r, int in_flight, size_t max_bytes,
                   struct pb_fetcher **out, char *msg, size_t msglen)
{
    struct pb_fetcher *f = calloc(1, sizeof(*f));
    if (!f)
        return PB_ERR_NOMEM;
    f->r = r;
    f->n = in_flight > 0 ? in_flight : 1;
    f->head = max_bytes == 0;
    f->multi = curl_multi_init();
    f->slots = calloc((size_t)f->n, sizeof(*f->slots));
    int rc = f->multi && f->slots ? PB_OK : PB_ERR_NOMEM;
    /* Connections kept for reuse: one per request in flight, and a few more. */
    if (f->multi)
        curl_multi_setopt(f->multi, CURLMOPT_MAXCONNECTS, (long)f->n + 4);
    for (int i = 0; rc == PB_OK && i < f->n; i++) {
        struct slot *s = &f->slots[i];
        s->easy = curl_easy_init();
        /* One byte more than the largest object shows one that grew; an
         * error's body (S3's XML) needs at least a little. */
        s->cap = (max_bytes > 4096 ? max_bytes : 4096) + 1;
        s->buf = malloc(s->cap);
        if (!s->easy || !s->buf)
            rc = PB_ERR_NOMEM;
    }
    if (rc != PB_OK) {
        snprintf(msg, msglen, "out of memory for %d requests in flight of up to %zu bytes", f->n,
                 max_bytes);
        pb_fetcher_free(f);
        return rc;
    }
    f->seed = (uint64_t)(uintptr_t)f ^ pb_now_ns();
    *out = f;
    return PB_OK;
}

void pb_fetcher_watch_stop(struct pb_fetcher *f, volatile sig_atomic_t *stop)
{
    f->stop = stop;
}

void pb_fetcher_free(struct pb_fetcher *f)
{
    if (!f)
        return;
    for (int i = 0; f->slots && i < f->n; i++) {
        struct slot *s = &f->slots[i];
        if (s->state == SLOT_ACTIVE)
            curl_multi_remove_handle(f->multi, s->easy);
        if (s->easy)
            curl_easy_cleanup(s->easy);
        free(s->buf);
    }
    free(f->slots);
    if (f->multi)
        curl_multi_cleanup(f->multi);
    free(f);
}

/* curl retries a request once on a fresh connection, by itself, when a
 * kept one turns out dead before answering; it says so only in its debug
 * text. That is a reset retried: counted as one. */
static int slot_debug(CURL *easy, curl_infotype type, char *data, size_t size, void *user)
{
    (void)easy;
    struct slot *s = user;
    static const char died[] = "Connection died", excess[] = "Excess found";
    if (type == CURLINFO_TEXT && size >= sizeof(died) - 1 && memcmp(data, died, sizeof(died) - 1) == 0) {
        s->cost.counters[PB_FETCH_REQUESTS]++;
        s->cost.counters[PB_FETCH_RETRIES]++;
        s->cost.counters[PB_FETCH_RETRY_RESET]++;
    }
    /* The answer's body is longer than its Content-Length: curl stops at
     * the length and closes the connection, so what it kept is not the
     * object. */
    if (type == CURLINFO_TEXT && size >= sizeof(excess) - 1 &&
        memcmp(data, excess, sizeof(excess) - 1) == 0)
        s->excess = true;
    return 0;
}

/* Sends the slot's request (again, after a backoff). */
static void send_request(struct pb_fetcher *f, struct slot *s)
{
    s->len = 0;
    s->err[0] = '\0';
    s->excess = false;
    s->state = SLOT_ACTIVE;
    s->attempts++;
    pb_remote_setup(f->r, s->easy, s->url, s->err);
    curl_easy_setopt(s->easy, CURLOPT_FRESH_CONNECT, s->fresh ? 1L : 0L);
    s->fresh = false;
    curl_easy_setopt(s->easy, CURLOPT_NOBODY, f->head ? 1L : 0L);
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, slot_write);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
    curl_easy_setopt(s->easy, CURLOPT_DEBUGFUNCTION, slot_debug);
    curl_easy_setopt(s->easy, CURLOPT_DEBUGDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_VERBOSE, 1L);
    if (curl_multi_add_handle(f->multi, s->easy) != CURLM_OK) {
        s->state = SLOT_DONE;
        s->rc = CURLE_FAILED_INIT;
        s->how = PB_ATTEMPT_FATAL;
    }
}

/* Starts plan entry e in a free slot; false when none is free. */
static bool start(struct pb_fetcher *f, uint32_t e)
{
    for (int i = 0; i < f->n; i++) {
        struct slot *s = &f->slots[i];
        if (s->state != SLOT_FREE)
            continue;
        memset(&s->cost, 0, sizeof(s->cost));
        s->fresh = false;
        s->entry = e;
        s->attempts = 0;
        if (!pb_remote_request_url(f->r, f->plan[e], s->url, sizeof(s->url))) {
            s->state = SLOT_DONE;
            s->rc = CURLE_URL_MALFORMAT;
            s->how = PB_ATTEMPT_FAILED;
            pb_strlcpy(s->err, "the object's URL is too long", sizeof(s->err));
            return true;
        }
        send_request(f, s);
        return true;
    }
    return false;
}

/* Starts planned requests until limit are in flight (or waiting out a
 * backoff). */
static void top_up(struct pb_fetcher *f, int limit)
{
    int busy = 0;
    for (int i = 0; i < f->n; i++)
        busy += f->slots[i].state != SLOT_FREE;
    for (; busy < limit && f->next < f->plan_n && start(f, f->next); busy++)
        f->next++;
}

/* Drops every request of the plan not read yet. */
static void cancel_all(struct pb_fetcher *f)
{
    for (int i = 0; i < f->n; i++) {
        struct slot *s = &f->slots[i];
        if (s->state == SLOT_ACTIVE)
            curl_multi_remove_handle(f->multi, s->easy);
        s->state = SLOT_FREE;
    }
    f->plan_n = f->next = f->take = 0;
}

void pb_fetcher_plan(struct pb_fetcher *f, const char *const *urls, uint32_t n)
{
    cancel_all(f);
    f->plan = urls;
    f->plan_n = n;
    top_up(f, f->n - 1);
}

/* How a finished attempt's time splits: connection set-up (0 when a kept
 * connection was reused), request to first byte, first byte to last. */
static void attempt_times(struct slot *s)
{
    curl_off_t conn = 0, app = 0, pre = 0, first = 0, total = 0;
    long connects = 0;
    curl_easy_getinfo(s->easy, CURLINFO_CONNECT_TIME_T, &conn);
    curl_easy_getinfo(s->easy, CURLINFO_APPCONNECT_TIME_T, &app);
    curl_easy_getinfo(s->easy, CURLINFO_PRETRANSFER_TIME_T, &pre);
    curl_easy_getinfo(s->easy, CURLINFO_STARTTRANSFER_TIME_T, &first);
    curl_easy_getinfo(s->easy, CURLINFO_TOTAL_TIME_T, &total);
    curl_easy_getinfo(s->easy, CURLINFO_NUM_CONNECTS, &connects);
    uint64_t *ns = s->cost.ns;
    ns[PB_FETCH_CONNECT] =
        connects ? (uint64_t)(app > conn ? app : conn) * 1000u : PB_SUBSTAGE_NONE;
    ns[PB_FETCH_TTFB] = first > pre ? (uint64_t)(first - pre) * 1000u : 0;
    ns[PB_FETCH_TRANSFER] = total > first && first > 0 ? (uint64_t)(total - first) * 1000u : 0;
    if (!connects)
        s->cost.counters[PB_FETCH_REUSED]++;
}

/* An attempt of slot s ended: done, or a retry after a backoff. */
static void attempt_ended(struct pb_fetcher *f, struct slot *s, CURLcode rc)
{
    curl_multi_remove_handle(f->multi, s->easy);
    s->rc = rc;
    s->status = 0;
    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    s->how = pb_remote_classify(rc, s->status);
    long connects = 0;
    curl_easy_getinfo(s->easy, CURLINFO_NUM_CONNECTS, &connects);
    if (connects == 0 && (rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_WEIRD_SERVER_REPLY)) {
        /* A kept connection that held what the last answer left over (a
         * body longer than its Content-Length): not this object's fault;
         * it goes again on a new connection. */
        s->how = PB_ATTEMPT_RETRY_RESET;
        s->fresh = true;
    } else if (s->how == PB_ATTEMPT_OK && s->excess) {
        s->how = PB_ATTEMPT_FAILED;
        s->rc = CURLE_WEIRD_SERVER_REPLY;
        snprintf(s->err, sizeof(s->err), "the answer's body is longer than its Content-Length "
                 "(%zu bytes): what was kept is not the object", s->len);
    }
    uint64_t *c = s->cost.counters;
    c[PB_FETCH_REQUESTS]++;
    bool retry = s->how >= PB_ATTEMPT_RETRY_503 && s->how <= PB_ATTEMPT_RETRY_TIMEOUT;
    if (retry && s->attempts <= f->r->retries) {
        c[PB_FETCH_RETRIES]++;
        c[s->how == PB_ATTEMPT_RETRY_503     ? PB_FETCH_RETRY_503
          : s->how == PB_ATTEMPT_RETRY_5XX   ? PB_FETCH_RETRY_5XX
          : s->how == PB_ATTEMPT_RETRY_RESET ? PB_FETCH_RETRY_RESET
                                             : PB_FETCH_RETRY_TIMEOUT]++;
        s->state = SLOT_BACKOFF;
        s->due_ns = pb_now_ns() + pb_remote_backoff_ns(s->attempts, f->seed++);
        return;
    }
    attempt_times(s);
    if (s->how != PB_ATTEMPT_OK)
        c[PB_FETCH_FAILED]++;
    s->state = SLOT_DONE;
}

/* Moves the transfers on until slot s is done (or the stop flag ends it). */
static void wait_for(struct pb_fetcher *f, struct slot *s)
{
    while (s->state != SLOT_DONE) {
        if (f->stop && *f->stop) {
            if (s->state == SLOT_ACTIVE)
                curl_multi_remove_handle(f->multi, s->easy);
            s->state = SLOT_DONE;
            s->rc = CURLE_ABORTED_BY_CALLBACK;
            s->how = PB_ATTEMPT_FAILED;
            pb_strlcpy(s->err, "interrupted", sizeof(s->err));
            return;
        }
        uint64_t now = pb_now_ns(), wait_ms = POLL_MS;
        for (int i = 0; i < f->n; i++) {
            struct slot *b = &f->slots[i];
            if (b->state != SLOT_BACKOFF)
                continue;
            if (b->due_ns <= now)
                send_request(f, b);
            else if ((b->due_ns - now) / 1000000u < wait_ms)
                wait_ms = (b->due_ns - now) / 1000000u + 1;
        }
        int running = 0;
        curl_multi_perform(f->multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(f->multi, &left))) {
            struct slot *done = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&done);
            if (m->msg == CURLMSG_DONE && done)
                attempt_ended(f, done, m->data.result);
        }
        if (s->state != SLOT_DONE)
            curl_multi_poll(f->multi, NULL, 0, (int)wait_ms, NULL);
    }
}

/* The slot of plan entry e, started if it was not. */
static struct slot *slot_of(struct pb_fetcher *f, uint32_t e)
{
    for (int i = 0; i < f->n; i++)
        if (f->slots[i].state != SLOT_FREE && f->slots[i].entry == e)
            return &f->slots[i];
    if (f->next <= e) {
        f->next = e;
        if (!start(f, f->next++))
            return NULL;
        return slot_of(f, e);
    }
    return NULL;
}

/* The object's outcome as the read stage's return code, with msg. */
static int outcome(struct pb_fetcher *f, struct slot *s, const char *url, char *msg,
                   size_t msglen)
{
    if (s->how == PB_ATTEMPT_OK)
        return PB_OK;
    size_t body = s->len < s->cap ? s->len : s->cap;
    char *location = NULL;
    curl_easy_getinfo(s->easy, CURLINFO_REDIRECT_URL, &location);
    pb_remote_explain(f->r, url, s->rc, s->status, s->err, location, s->buf, body, msg, msglen);
    bool retried = s->how >= PB_ATTEMPT_RETRY_503 && s->how <= PB_ATTEMPT_RETRY_TIMEOUT;
    if (retried) {
        size_t n = strlen(msg);
        snprintf(msg + n, msglen - n, " (still failing after %d attempts; dataset.retries: %d)",
                 s->attempts, f->r->retries);
    }
    return s->how == PB_ATTEMPT_FATAL ? PB_ERR : PB_ERR_DATA;
}

int pb_fetcher_get(struct pb_fetcher *f, const char *url, uint8_t *out, size_t cap, size_t *got,
                   struct pb_fetch_cost *cost, char *msg, size_t msglen)
{
    if (f->take >= f->plan_n || strcmp(f->plan[f->take], url) != 0) {
        f->lone[0] = url;
        pb_fetcher_plan(f, f->lone, 1);
    }
    struct slot *s = slot_of(f, f->take);
    if (!s) {
        snprintf(msg, msglen, "%s: no request slot is free (a bug in pbench's reader)", url);
        return PB_ERR;
    }
    top_up(f, f->n);
    wait_for(f, s);
    int rc = outcome(f, s, url, msg, msglen);
    if (f->head) {
        curl_off_t length = -1;
        curl_easy_getinfo(s->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
        *got = length > 0 ? (size_t)length : 0;
    } else {
        *got = s->len;
        if (rc == PB_OK && out)
            memcpy(out, s->buf, s->len < cap ? s->len : cap);
    }
    *cost = s->cost;
    s->state = SLOT_FREE;
    f->take++;
    /* While the caller decodes this one, in_flight - 1 requests are out:
     * with 1, none, as a Dataset that reads in __getitem__. */
    top_up(f, f->n - 1);
    int running;
    curl_multi_perform(f->multi, &running);
    return rc;
}
