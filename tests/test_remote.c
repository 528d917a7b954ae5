/* Object storage (pipelines/remote.h) against a small HTTP server of the
 * test's own on loopback, whose answers each test scripts: S3 listings
 * over pages with escaped keys, manifests, missing buckets and objects,
 * access denied, 503 SlowDown and resets retried and counted, requests in
 * flight, and the credentials (whose secret must never show). The real
 * servers (s3rver, nginx over TLS, a delaying proxy) are tests/objstore.sh's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/base/opt.h"
#include "bench/base/pb.h"
#include "bench/base/userinfo.h"
#include "bench/config/spec.h"
#include "pipelines/remote.h"
#include "pipelines/remote_curl.h"
#include "testutil.h"

#define SECRET "pbench-test-secret-9f2c"
#define URL_PASS_EARLY "pbench-location-pass-3c"

/* ---- the server ------------------------------------------------------------ */

/* One scripted answer: requests whose path starts with prefix get status
 * and body; the first fail_first of them get fail_status (0: the
 * connection closed without an answer) instead. raw, when set, is sent
 * as the whole answer (status line, headers and body as they are), and
 * answer, when set, writes the body of each request (a listing that goes
 * on) and returns its status. */
struct route {
    const char *prefix;
    int status;
    const char *body;
    int fail_first, fail_status;
    const char *raw;
    size_t raw_len; /* 0: strlen(raw) */
    const char *raw_later; /* sent 100 ms after raw, on the same connection */
    int (*answer)(const char *path, int seen, char *body, size_t bodylen);
    atomic_int seen;
};

static struct route routes[16];
static int route_count;
static int listen_fd = -1, port;
static atomic_int requests, max_open, open_now;

/* The requests the server saw, the last SEEN_MAX of them: the request
 * line's method and path as sent, and the Authorization header. */
#define SEEN_MAX 64
struct seen_request {
    char method[8];
    char path[4096];
    char auth[256];
};
static struct seen_request seen[SEEN_MAX];
static int seen_count;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_request(const char *method, const char *path, const char *head)
{
    pthread_mutex_lock(&seen_lock);
    struct seen_request *q = &seen[seen_count++ % SEEN_MAX];
    snprintf(q->method, sizeof q->method, "%s", method);
    snprintf(q->path, sizeof q->path, "%s", path);
    q->auth[0] = '\0';
    const char *auth = strstr(head, "\r\nAuthorization: ");
    if (auth) {
        auth += strlen("\r\nAuthorization: ");
        snprintf(q->auth, sizeof q->auth, "%.*s", (int)strcspn(auth, "\r\n"), auth);
    }
    pthread_mutex_unlock(&seen_lock);
}

/* The last request whose path starts with prefix, copied into *out; false
 * when there was none. */
static bool seen_request(const char *prefix, struct seen_request *out)
{
    bool found = false;
    pthread_mutex_lock(&seen_lock);
    for (int i = seen_count - 1; i >= 0 && i >= seen_count - SEEN_MAX && !found; i--)
        if (strncmp(seen[i % SEEN_MAX].path, prefix, strlen(prefix)) == 0) {
            *out = seen[i % SEEN_MAX];
            found = true;
        }
    pthread_mutex_unlock(&seen_lock);
    return found;
}

static void route(const char *prefix, int status, const char *body)
{
    routes[route_count++] = (struct route){.prefix = prefix, .status = status, .body = body};
}

static struct route *find_route(const char *path)
{
    for (int i = 0; i < route_count; i++)
        if (strncmp(path, routes[i].prefix, strlen(routes[i].prefix)) == 0)
            return &routes[i];
    return NULL;
}

/* Answers the requests of one connection, kept alive, until it closes. */
static void *serve_connection(void *arg)
{
    int fd = (int)(intptr_t)arg;
    int now = atomic_fetch_add(&open_now, 1) + 1;
    for (int m = atomic_load(&max_open); now > m && !atomic_compare_exchange_weak(&max_open, &m, now);)
        ;
    char buf[16384];
    size_t have = 0;
    for (;;) {
        char *end = NULL;
        while (!(end = strstr(buf, "\r\n\r\n"))) {
            ssize_t n = recv(fd, buf + have, sizeof(buf) - 1 - have, 0);
            if (n <= 0)
                goto done;
            have += (size_t)n;
            buf[have] = '\0';
        }
        char method[8] = "", path[4096] = "";
        sscanf(buf, "%7s %4095s", method, path);
        end[2] = '\0'; /* the headers, for note_request */
        note_request(method, path, buf);
        size_t used = (size_t)(end + 4 - buf);
        memmove(buf, buf + used, have - used);
        have -= used;
        buf[have] = '\0';
        atomic_fetch_add(&requests, 1);
        struct route *r = find_route(path);
        int status = r ? r->status : 404;
        const char *body = r ? r->body : "<Error><Code>NoSuchKey</Code></Error>";
        bool failing = r && atomic_fetch_add(&r->seen, 1) < r->fail_first;
        if (failing) {
            if (r->fail_status == 0)
                goto done; /* a reset: no answer at all */
            status = r->fail_status;
            body = "<Error><Code>SlowDown</Code><Message>Please reduce your request "
                   "rate.</Message></Error>";
        }
        if (r && r->raw && !failing) {
            if (send(fd, r->raw, r->raw_len ? r->raw_len : strlen(r->raw), MSG_NOSIGNAL) < 0)
                goto done;
            if (r->raw_later) {
                usleep(100000);
                if (send(fd, r->raw_later, strlen(r->raw_later), MSG_NOSIGNAL) < 0)
                    goto done;
            }
            continue;
        }
        static _Thread_local char made[1 << 16];
        if (r && r->answer && !failing) {
            status = r->answer(path, atomic_load(&r->seen), made, sizeof made);
            body = made;
        }
        char head[256];
        int n = snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n\r\n",
                         status, strlen(body));
        if (send(fd, head, (size_t)n, MSG_NOSIGNAL) < 0 ||
            (strcmp(method, "HEAD") != 0 && send(fd, body, strlen(body), MSG_NOSIGNAL) < 0))
            goto done;
    }
done:
    atomic_fetch_sub(&open_now, 1);
    close(fd);
    return NULL;
}

static void *accept_loop(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0)
            return NULL;
        int one = 1; /* the head and the body go out at once, not 40 ms apart */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        pthread_create(&t, NULL, serve_connection, (void *)(intptr_t)fd);
        pthread_detach(t);
    }
}

static int start_server(void **state)
{
    (void)state;
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(listen_fd, 64) != 0 ||
        getsockname(listen_fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    port = ntohs(a.sin_port);
    pthread_t t;
    pthread_create(&t, NULL, accept_loop, NULL);
    pthread_detach(t);
    return 0;
}

/* Raised between tests: an answer held back (answer_late) goes out now. */
static atomic_int release_late;

static int reset_routes(void **state)
{
    (void)state;
    /* The last test's connections are gone before this one counts its own
     * (a guard of 10 s, not a limit: a busy machine closes them late). */
    atomic_store(&release_late, 1);
    for (int wait = 0; atomic_load(&open_now) > 0 && wait < 1000; wait++)
        usleep(10000);
    atomic_store(&release_late, 0);
    for (int i = 0; i < route_count; i++)
        routes[i] = (struct route){0};
    route_count = 0;
    pthread_mutex_lock(&seen_lock);
    seen_count = 0;
    pthread_mutex_unlock(&seen_lock);
    pb_userinfo_forget_all();
    atomic_store(&requests, 0);
    atomic_store(&max_open, 0);
    setenv("AWS_ACCESS_KEY_ID", "AKIDPBENCHTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");
    return 0;
}

/* A dataset section for path at the test's server. */
static struct pb_dataset_spec spec_for(const char *path)
{
    struct pb_dataset_spec d = {.request_timeout_s = 5, .retries = 3, .requests_in_flight = 1,
                                .list_max_mib = 64};
    if (strncmp(path, "s3://", 5) == 0) {
        snprintf(d.path, sizeof(d.path), "%s", path);
        snprintf(d.endpoint, sizeof(d.endpoint), "http://127.0.0.1:%d", port);
    } else {
        snprintf(d.path, sizeof(d.path), "http://127.0.0.1:%d%s", port, path);
    }
    return d;
}

static int list(const struct pb_dataset_spec *d, struct pb_dataset *ds,
                struct pb_remote_listing *listing, char *msg, size_t msglen)
{
    struct pb_remote *r;
    int rc = pb_remote_new(d, &r, msg, msglen);
    if (rc != PB_OK)
        return rc;
    memset(ds, 0, sizeof(*ds));
    rc = pb_remote_list(r, NULL, ds, listing, msg, msglen);
    pb_remote_free(r);
    return rc;
}

/* ---- S3 ------------------------------------------------------------------------ */

static void test_s3_listing_pages_and_escapes(void **state)
{
    (void)state;
    route("/bkt?continuation-token=t2",200,
          "<ListBucketResult><Contents><Key>imgs/b&amp;c.jpg</Key><Size>7</Size></Contents>"
          "<IsTruncated>false</IsTruncated></ListBucketResult>");
    route("/bkt?list-type=2", 200,
          "<ListBucketResult><Contents><Key>imgs/</Key><Size>0</Size></Contents>"
          "<Contents><Key>imgs/z a.jpg</Key><Size>5</Size></Contents>"
          "<Contents><Key>imgs/.hidden</Key><Size>3</Size></Contents>"
          "<IsTruncated>true</IsTruncated><NextContinuationToken>t2</NextContinuationToken>"
          "</ListBucketResult>");
    struct pb_dataset_spec d = spec_for("s3://bkt/imgs/");
    struct pb_dataset ds;
    struct pb_remote_listing listing;
    char msg[PB_MSG_MAX * 2] = "";
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_OK);
    assert_int_equal(ds.count, 2);
    assert_string_equal(ds.paths[0], "s3://bkt/imgs/b&c.jpg"); /* sorted, unescaped */
    assert_string_equal(ds.paths[1], "s3://bkt/imgs/z a.jpg");
    assert_int_equal(ds.sizes[0], 7);
    assert_int_equal(ds.total_bytes, 12);
    assert_int_equal(listing.requests, 2);
    assert_non_null(strstr(ds.skipped, "2 folder markers or hidden objects"));
    pb_dataset_free(&ds);
}

static void test_s3_missing_bucket_and_denied(void **state)
{
    (void)state;
    route("/nob", 404, "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not "
                       "exist</Message></Error>");
    route("/locked", 403, "<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id "
                          "you provided does not exist in our records.</Message></Error>");
    struct pb_dataset ds;
    struct pb_remote_listing listing;
    char msg[PB_MSG_MAX * 2] = "";
    struct pb_dataset_spec d = spec_for("s3://nob/x/");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "the bucket 'nob' does not exist"));
    d = spec_for("s3://locked/x/");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "access denied (403 InvalidAccessKeyId"));
    assert_non_null(strstr(msg, "credentials: environment (AWS_ACCESS_KEY_ID)"));
    assert_null(strstr(msg, SECRET));
}

static void test_s3_request_urls(void **state)
{
    (void)state;
    struct pb_dataset_spec d = spec_for("s3://bkt/p/");
    struct pb_remote *r;
    char msg[PB_MSG_MAX], url[PB_PATH_MAX], want[PB_PATH_MAX];
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    assert_true(pb_remote_request_url(r, "s3://bkt/p/a b+c\xc3\xa9.jpg", url, sizeof url));
    snprintf(want, sizeof want, "http://127.0.0.1:%d/bkt/p/a%%20b%%2Bc%%C3%%A9.jpg", port);
    assert_string_equal(url, want);
    pb_remote_free(r);
    /* AWS itself: virtual-hosted, path-style for a dotted bucket. */
    d.endpoint[0] = '\0';
    snprintf(d.region, sizeof d.region, "eu-west-1");
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    assert_string_equal(pb_remote_endpoint(r), "https://bkt.s3.eu-west-1.amazonaws.com");
    pb_remote_free(r);
    snprintf(d.path, sizeof d.path, "s3://my.bucket/p/");
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    assert_true(pb_remote_request_url(r, "s3://my.bucket/p/k", url, sizeof url));
    assert_string_equal(url, "https://s3.eu-west-1.amazonaws.com/my.bucket/p/k");
    pb_remote_free(r);
    /* Mistakes are config errors that say what to write. */
    snprintf(d.path, sizeof d.path, "s3:///p/");
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "names no bucket"));
    snprintf(d.path, sizeof d.path, "s3://bkt/p/");
    snprintf(d.endpoint, sizeof d.endpoint, "127.0.0.1:9000");
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "is not an http:// or https:// URL"));
}

static void test_credentials_file_and_profiles(void **state)
{
    (void)state;
    char path[] = "/tmp/pbench-creds-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = "
                       SECRET "\n[team]\naws_access_key_id=AKIDTEAM\naws_secret_access_key="
                       SECRET "\naws_session_token = tok\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    struct pb_dataset_spec d = spec_for("s3://bkt/p/");
    struct pb_remote *r;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    assert_non_null(strstr(pb_remote_credentials(r), "[default]"));
    assert_string_equal(r->key_id, "AKIDDEFAULT");
    pb_remote_free(r);
    snprintf(d.profile, sizeof d.profile, "team");
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    assert_string_equal(r->key_id, "AKIDTEAM");
    assert_null(strstr(pb_remote_credentials(r), SECRET));
    pb_remote_free(r);
    snprintf(d.profile, sizeof d.profile, "nobody");
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "profile 'nobody' is not in"));
    assert_non_null(strstr(msg, "default, team"));
    assert_null(strstr(msg, SECRET));
    unlink(path);
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
}

/* ---- reading ---------------------------------------------------------------- */

/* Reads urls in order through a fetcher of in_flight; returns the summed
 * counters, the first failure's code in *rc. */
static struct pb_fetch_cost read_all(const struct pb_remote *r, int in_flight,
                                     const char *const *urls, uint32_t n, int *rc, char *msg,
                                     size_t msglen)
{
    struct pb_fetcher *f;
    struct pb_fetch_cost sum = {0};
    assert_int_equal(pb_fetcher_new(r, in_flight, 64, &f, msg, msglen), PB_OK);
    pb_fetcher_plan(f, urls, n);
    *rc = PB_OK;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t out[64];
        size_t got;
        struct pb_fetch_cost cost;
        int one = pb_fetcher_get(f, urls[i], out, sizeof out, &got, &cost, msg, msglen);
        if (one != PB_OK && *rc == PB_OK)
            *rc = one;
        if (one == PB_OK)
            assert_memory_equal(out, "object!", 7);
        for (int c = 0; c < PB_FETCH_COUNTERS; c++)
            sum.counters[c] += cost.counters[c];
    }
    pb_fetcher_free(f);
    return sum;
}

static void test_retries_counted_by_cause(void **state)
{
    (void)state;
    route("/bkt/slow", 200, "object!");
    routes[0].fail_first = 2;
    routes[0].fail_status = 503;
    route("/bkt/reset", 200, "object!");
    routes[1].fail_first = 1;
    routes[1].fail_status = 0;
    route("/bkt/gone", 200, "object!");
    routes[2].fail_first = 100; /* more than the retries */
    routes[2].fail_status = 500;
    struct pb_dataset_spec d = spec_for("s3://bkt/");
    d.retries = 3;
    struct pb_remote *r;
    char msg[PB_MSG_MAX * 2];
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    const char *urls[] = {"s3://bkt/slow", "s3://bkt/reset"};
    int rc;
    struct pb_fetch_cost c = read_all(r, 2, urls, 2, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_OK);
    assert_int_equal(c.counters[PB_FETCH_REQUESTS], 5);
    assert_int_equal(c.counters[PB_FETCH_RETRIES], 3);
    assert_int_equal(c.counters[PB_FETCH_RETRY_503], 2);
    assert_int_equal(c.counters[PB_FETCH_RETRY_RESET], 1);
    assert_int_equal(c.counters[PB_FETCH_FAILED], 0);
    const char *gone[] = {"s3://bkt/gone"};
    c = read_all(r, 1, gone, 1, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_ERR_DATA); /* this object's, counted under run.on_error */
    assert_int_equal(c.counters[PB_FETCH_REQUESTS], 4);
    assert_int_equal(c.counters[PB_FETCH_RETRY_5XX], 3);
    assert_int_equal(c.counters[PB_FETCH_FAILED], 1);
    assert_non_null(strstr(msg, "HTTP 500"));
    assert_non_null(strstr(msg, "after 4 attempts"));
    const char *missing[] = {"s3://bkt/nothing-here"};
    c = read_all(r, 1, missing, 1, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_ERR_DATA);
    assert_int_equal(c.counters[PB_FETCH_RETRIES], 0); /* a 404 is not retried */
    assert_non_null(strstr(msg, "the object is missing"));
    pb_remote_free(r);
}

static void test_requests_in_flight(void **state)
{
    (void)state;
    route("/bkt/", 200, "object!");
    struct pb_dataset_spec d = spec_for("s3://bkt/");
    struct pb_remote *r;
    char msg[PB_MSG_MAX * 2];
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    const char *urls[32];
    char names[32][32];
    for (int i = 0; i < 32; i++) {
        snprintf(names[i], sizeof names[i], "s3://bkt/o%02d", i);
        urls[i] = names[i];
    }
    int rc;
    struct pb_fetch_cost c = read_all(r, 1, urls, 32, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_OK);
    assert_int_equal(atomic_load(&max_open), 1); /* one at a time, one kept connection */
    assert_int_equal(c.counters[PB_FETCH_REUSED], 31);
    c = read_all(r, 8, urls, 32, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_OK);
    assert_int_equal(c.counters[PB_FETCH_REQUESTS], 32);
    assert_true(atomic_load(&max_open) > 1 && atomic_load(&max_open) <= 8 + 1);
    /* An object read that was not planned is read on its own. */
    const char *lone[] = {"s3://bkt/other"};
    c = read_all(r, 4, lone, 1, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_OK);
    pb_remote_free(r);
}

static void test_keys_sent_as_they_are(void **state)
{
    (void)state;
    route("/dotdot/", 200, "object!");
    route("/ok/", 200, "<Error><Code>WrongObject</Code></Error>");
    routes[1].status = 403;
    route("/data/manifest.txt", 200, "../../../etc/passwd 7\n./a/./b.jpg 7\n");
    route("/data/", 200, "object!");
    struct pb_dataset_spec d = spec_for("s3://dotdot/");
    struct pb_remote *r;
    char msg[PB_MSG_MAX * 2] = "";
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    const char *dots[] = {"s3://dotdot/a/../../ok/img/000.jpg"};
    int rc;
    read_all(r, 1, dots, 1, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_OK);
    struct seen_request q;
    assert_true(seen_request("/dotdot/", &q));
    assert_string_equal(q.path, "/dotdot/a/../../ok/img/000.jpg");
    assert_false(seen_request("/ok/", &q)); /* not another bucket's object */
    pb_remote_free(r);
    /* A manifest's names too: the server is asked for them as written. */
    struct pb_dataset ds;
    struct pb_remote_listing listing;
    d = spec_for("/data/");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_OK);
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    const char *names[] = {ds.paths[0], ds.paths[1]};
    read_all(r, 1, names, 2, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_OK);
    assert_true(seen_request("/data/../", &q));
    assert_string_equal(q.path, "/data/../../../etc/passwd");
    assert_true(seen_request("/data/a/", &q));
    assert_string_equal(q.path, "/data/a/./b.jpg");
    pb_dataset_free(&ds);
    pb_remote_free(r);
}

static void test_content_length_shorter_than_body(void **state)
{
    (void)state;
    /* The body's tail in the same read as its head, and 100 ms later. */
    route("/bkt/short", 200, "");
    routes[0].raw = "HTTP/1.1 200 X\r\nContent-Length: 4\r\n\r\nobject!";
    route("/bkt/late", 200, "");
    routes[1].raw = "HTTP/1.1 200 X\r\nContent-Length: 7\r\n\r\nobject!";
    routes[1].raw_later = "TAIL OF THE BODY";
    route("/bkt/", 200, "object!");
    struct pb_dataset_spec d = spec_for("s3://bkt/");
    struct pb_remote *r;
    char msg[PB_MSG_MAX * 2] = "";
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    struct pb_fetcher *f;
    assert_int_equal(pb_fetcher_new(r, 1, 64, &f, msg, sizeof msg), PB_OK);
    const char *urls[] = {"s3://bkt/short", "s3://bkt/next", "s3://bkt/late", "s3://bkt/after"};
    pb_fetcher_plan(f, urls, 4);
    uint8_t out[64];
    size_t got;
    struct pb_fetch_cost cost;
    /* That object is bad, named; the next, on a new connection, is read. */
    assert_int_equal(pb_fetcher_get(f, urls[0], out, sizeof out, &got, &cost, msg, sizeof msg),
                     PB_ERR_DATA);
    assert_non_null(strstr(msg, "s3://bkt/short: the answer's body is longer than its "
                                "Content-Length"));
    assert_int_equal(pb_fetcher_get(f, urls[1], out, sizeof out, &got, &cost, msg, sizeof msg),
                     PB_OK);
    assert_int_equal(got, 7);
    /* A tail that comes after curl was done is in the kept connection: the
     * next object is asked again on a new one, a reset retried. */
    assert_int_equal(pb_fetcher_get(f, urls[2], out, sizeof out, &got, &cost, msg, sizeof msg),
                     PB_OK);
    usleep(300000); /* the tail arrives */
    assert_int_equal(pb_fetcher_get(f, urls[3], out, sizeof out, &got, &cost, msg, sizeof msg),
                     PB_OK);
    assert_int_equal(got, 7);
    assert_memory_equal(out, "object!", 7);
    assert_int_equal(cost.counters[PB_FETCH_RETRY_RESET], 1);
    pb_fetcher_free(f);
    pb_remote_free(r);
}

static void test_redirect_named_with_target(void **state)
{
    (void)state;
    route("/moved?", 301, "<Error><Code>PermanentRedirect</Code><Message>The bucket you are "
                          "attempting to access must be addressed using the specified "
                          "endpoint.</Message><Endpoint>moved.s3.eu-west-1.amazonaws.com"
                          "</Endpoint></Error>");
    route("/temp/k", 200, "");
    routes[1].raw = "HTTP/1.1 307 X\r\nLocation: http://u:" URL_PASS_EARLY "@10.0.0.9/temp/k"
                    "\r\nContent-Length: 0\r\n\r\n";
    struct pb_dataset ds;
    struct pb_remote_listing listing;
    char msg[PB_MSG_MAX * 2] = "";
    struct pb_dataset_spec d = spec_for("s3://moved/");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR);
    assert_non_null(strstr(msg, "HTTP 301 PermanentRedirect"));
    assert_non_null(strstr(msg, "to the endpoint moved.s3.eu-west-1.amazonaws.com"));
    assert_non_null(strstr(msg, "dataset.region"));
    d = spec_for("s3://temp/");
    struct pb_remote *r;
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    const char *urls[] = {"s3://temp/k"};
    int rc;
    read_all(r, 1, urls, 1, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_ERR_DATA);
    assert_non_null(strstr(msg, "HTTP 307"));
    assert_non_null(strstr(msg, "to http://***@10.0.0.9/temp/k"));
    assert_null(strstr(msg, URL_PASS_EARLY));
    pb_remote_free(r);
}

/* An object that arrives slowly, a byte every 400 ms for 3.2 s, against a
 * request timeout of 2 s: it is still arriving, so it is not cut. */
static void *trickle(void *arg)
{
    int fd = accept((int)(intptr_t)arg, NULL, NULL);
    char buf[4096];
    if (recv(fd, buf, sizeof buf, 0) > 0) {
        const char *head = "HTTP/1.1 200 X\r\nContent-Length: 8\r\n\r\n";
        send(fd, head, strlen(head), MSG_NOSIGNAL);
        for (int i = 0; i < 8; i++) {
            usleep(400000);
            send(fd, &"objects!"[i], 1, MSG_NOSIGNAL);
        }
    }
    usleep(200000);
    close(fd);
    return NULL;
}

static void test_timeout_is_no_progress(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
    struct pb_dataset_spec d = spec_for("s3://bkt/");
    snprintf(d.endpoint, sizeof d.endpoint, "http://127.0.0.1:%d", ntohs(a.sin_port));
    d.request_timeout_s = 2;
    d.retries = 0;
    struct pb_remote *r;
    char msg[PB_MSG_MAX * 2] = "";
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    struct pb_fetcher *f;
    assert_int_equal(pb_fetcher_new(r, 1, 64, &f, msg, sizeof msg), PB_OK);
    const char *urls[] = {"s3://bkt/slow"};
    pb_fetcher_plan(f, urls, 1);
    pthread_t t;
    pthread_create(&t, NULL, trickle, (void *)(intptr_t)lfd);
    uint8_t out[64];
    size_t got = 0;
    struct pb_fetch_cost cost;
    int rc = pb_fetcher_get(f, urls[0], out, sizeof out, &got, &cost, msg, sizeof msg);
    pthread_join(t, NULL);
    assert_int_equal(rc, PB_OK);
    assert_int_equal(got, 8);
    assert_memory_equal(out, "objects!", 8);
    pb_fetcher_free(f);
    pb_remote_free(r);
    close(lfd);
}

/* ---- HTTP manifests ------------------------------------------------------------ */

static void test_manifest_lines_json_and_heads(void **state)
{
    (void)state;
    route("/data/nothing.txt", 404, "");
    route("/data/manifest.txt", 200, "# the set\nb.jpg 11\n./a.jpg\n\nsub/c d.jpg 5\n");
    route("/data/list.json", 200, "[\"x.jpg\", {\"name\": \"y.jpg\", \"size\": 3}]");
    route("/data/", 200, "object!");
    struct pb_dataset ds;
    struct pb_remote_listing listing;
    char msg[PB_MSG_MAX * 2] = "", want[256];
    struct pb_dataset_spec d = spec_for("/data/");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_OK);
    assert_int_equal(ds.count, 3);
    snprintf(want, sizeof want, "http://127.0.0.1:%d/data/a.jpg", port);
    assert_string_equal(ds.paths[0], want);
    assert_int_equal(ds.sizes[0], 7); /* asked with HEAD: the manifest gave none */
    assert_int_equal(ds.sizes[1], 11);
    snprintf(want, sizeof want, "http://127.0.0.1:%d/data/sub/c%%20d.jpg", port);
    assert_string_equal(ds.paths[2], want);
    assert_int_equal(listing.requests, 2); /* the manifest, one HEAD */
    pb_dataset_free(&ds);
    snprintf(d.manifest, sizeof d.manifest, "list.json");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_OK);
    assert_int_equal(ds.count, 2);
    assert_int_equal(ds.sizes[1], 3);
    pb_dataset_free(&ds);
    snprintf(d.manifest, sizeof d.manifest, "nothing.txt");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "the manifest"));
    assert_non_null(strstr(msg, "is missing (404)"));
}

/* ---- listings that would not end, or end early ----------------------------- */

/* The page number a listing request asks for: its continuation token
 * ("pN"), else 0. */
static int page_asked(const char *path)
{
    const char *t = strstr(path, "continuation-token=p");
    return t ? atoi(t + strlen("continuation-token=p")) : 0;
}

/* A listing that goes on for ever: page N lists 50 new keys, in order, and
 * gives the token of page N + 1. */
static int endless_pages(const char *path, int seen_count, char *body, size_t bodylen)
{
    (void)seen_count;
    int page = page_asked(path);
    size_t n = (size_t)snprintf(body, bodylen, "<ListBucketResult>");
    for (int k = 0; k < 50; k++)
        n += (size_t)snprintf(body + n, bodylen - n, "<Contents><Key>k%09d.jpg</Key><Size>7"
                              "</Size></Contents>", page * 50 + k);
    snprintf(body + n, bodylen - n, "<IsTruncated>true</IsTruncated><NextContinuationToken>p%d"
             "</NextContinuationToken></ListBucketResult>", page + 1);
    return 200;
}

/* Pages that come back to the start: every token lists the same keys. */
static int round_pages(const char *path, int seen_count, char *body, size_t bodylen)
{
    snprintf(body, bodylen, "<ListBucketResult><Contents><Key>a.jpg</Key><Size>7</Size>"
             "</Contents><IsTruncated>true</IsTruncated><NextContinuationToken>p%d"
             "</NextContinuationToken></ListBucketResult>", page_asked(path) + seen_count);
    return 200;
}

/* IsTruncated without a token: a.jpg, b.jpg, then after b.jpg the last. */
static int tokenless_pages(const char *path, int seen_count, char *body, size_t bodylen)
{
    (void)seen_count;
    if (strstr(path, "start-after=b.jpg"))
        snprintf(body, bodylen, "<ListBucketResult><Contents><Key>c.jpg</Key><Size>7</Size>"
                 "</Contents><IsTruncated>false</IsTruncated></ListBucketResult>");
    else
        snprintf(body, bodylen, "<ListBucketResult><Contents><Key>a.jpg</Key><Size>7</Size>"
                 "</Contents><Contents><Key>b.jpg</Key><Size>7</Size></Contents>"
                 "<IsTruncated>true</IsTruncated></ListBucketResult>");
    return 200;
}

/* The first answer cut short (no closing tag), whole after that. */
static int cut_once(const char *path, int seen_count, char *body, size_t bodylen)
{
    (void)path;
    snprintf(body, bodylen, "<ListBucketResult><Contents><Key>a.jpg</Key><Size>7</Size>"
             "</Contents><Contents><Key>b.jpg</Key><Size>7</Size></Contents>%s",
             seen_count <= 1 ? "<Contents><Key>c.j"
                             : "<Contents><Key>c.jpg</Key><Size>7</Size></Contents>"
                               "<IsTruncated>false</IsTruncated></ListBucketResult>");
    return 200;
}

static void test_listing_that_goes_round_stops(void **state)
{
    (void)state;
    route("/same?", 200, "<ListBucketResult><IsTruncated>true</IsTruncated>"
                         "<NextContinuationToken>again</NextContinuationToken></ListBucketResult>");
    route("/round?", 200, "");
    routes[1].answer = round_pages;
    struct pb_dataset ds;
    struct pb_remote_listing listing;
    char msg[PB_MSG_MAX * 2] = "";
    struct pb_dataset_spec d = spec_for("s3://same/");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR);
    assert_non_null(strstr(msg, "gave the continuation token it was asked with"));
    assert_int_equal(listing.requests, 2);
    d = spec_for("s3://round/");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR);
    assert_non_null(strstr(msg, "the store's listing goes round"));
    assert_int_equal(listing.requests, 2);
}

static void test_listing_bounded_in_memory(void **state)
{
    (void)state;
    route("/endless?", 200, "");
    routes[0].answer = endless_pages;
    struct pb_dataset ds;
    struct pb_remote_listing listing;
    char msg[PB_MSG_MAX * 2] = "";
    struct pb_dataset_spec d = spec_for("s3://endless/");
    d.list_max_mib = 1;
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "holds more than dataset.list_max_mib (1 MiB)"));
    /* Each name costs its URL and more: no more than 1 MiB of them. */
    assert_true(listing.requests * 50 < (1 << 20) / 40);
}

/* Raises *arg once the server has seen 20 requests, or one to /slow. */
static void *raise_stop_later(void *arg)
{
    volatile sig_atomic_t *stop = arg;
    struct seen_request q;
    while (atomic_load(&requests) < 20 && !seen_request("/slow", &q))
        usleep(1000);
    *stop = SIGTERM;
    return NULL;
}

/* An answer that comes after 20 s: a listing that must not wait for it. */
static int answer_late(const char *path, int seen_count, char *body, size_t bodylen)
{
    (void)path, (void)seen_count;
    for (int waited = 0; waited < 2000 && !atomic_load(&release_late); waited++)
        usleep(10000); /* 20 s, or until the next test starts */
    snprintf(body, bodylen, "<ListBucketResult><IsTruncated>false</IsTruncated>"
             "</ListBucketResult>");
    return 200;
}

static void test_listing_stops_on_signal(void **state)
{
    (void)state;
    route("/endless?", 200, "");
    routes[0].answer = endless_pages;
    route("/slow", 200, "");
    routes[1].answer = answer_late;
    const char *where[] = {"s3://endless/", "s3://slow/"};
    for (int i = 0; i < 2; i++) {
        static volatile sig_atomic_t stop;
        stop = 0;
        atomic_store(&requests, 0);
        pthread_t t;
        pthread_create(&t, NULL, raise_stop_later, (void *)&stop);
        struct pb_dataset_spec d = spec_for(where[i]);
        d.request_timeout_s = 60;
        struct pb_remote *r;
        char msg[PB_MSG_MAX * 2] = "";
        assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
        struct pb_dataset ds = {0};
        struct pb_remote_listing listing;
        assert_int_equal(pb_remote_list(r, &stop, &ds, &listing, msg, sizeof msg),
                         PB_ERR_INTERRUPTED);
        assert_non_null(strstr(msg, "interrupted while listing"));
        assert_non_null(strstr(msg, "nothing was measured"));
        pthread_join(t, NULL);
        pb_remote_free(r);
    }
}

/* pbench itself, listing for ever when SIGTERM or SIGINT comes: it stops,
 * exits 143 or 130, says nothing was measured and writes no result. */
static void test_pbench_stops_listing_on_signal(void **state)
{
    (void)state;
    const char *binary = getenv("PBENCH_BINARY"), *source = getenv("PBENCH_SOURCE_DIR");
    if (!binary || !source)
        skip(); /* ctest sets both */
    route("/endless?", 200, "");
    routes[0].answer = endless_pages;
    char config[PB_PATH_MAX], endpoint[128];
    snprintf(config, sizeof config, "%s/configs/null.yaml", source);
    snprintf(endpoint, sizeof endpoint, "dataset.endpoint=http://127.0.0.1:%d", port);
    const int signals[] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        char dir[] = "/tmp/pbench-remote-XXXXXX", out[PB_PATH_MAX], result[PB_PATH_MAX];
        assert_non_null(mkdtemp(dir));
        snprintf(out, sizeof out, "%s/err.txt", dir);
        snprintf(result, sizeof result, "%s/r.json", dir);
        char *argv[] = {"pbench", "run", config, "-q", "-s", "dataset.path=s3://endless/",
                        "-s", endpoint, "-o", result, NULL};
        atomic_store(&requests, 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(fd, 1);
            dup2(fd, 2);
            signal(SIGINT, SIG_DFL); /* a background shell's job has it ignored */
            signal(SIGTERM, SIG_DFL);
            execv(binary, argv);
            _exit(127);
        }
        /* Once it is well into the listing (a guard of 120 s, not a limit). */
        for (int wait = 0; atomic_load(&requests) < 20 && wait < 12000; wait++)
            usleep(10000);
        assert_true(atomic_load(&requests) >= 20);
        kill(pid, signals[i]);
        int status = 0, wait = 0;
        while (waitpid(pid, &status, WNOHANG) == 0 && wait++ < 12000)
            usleep(10000);
        if (wait >= 12000) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fail_msg("pbench did not stop listing after signal %d", signals[i]);
        }
        char *err = NULL;
        FILE *f = fopen(out, "r");
        assert_non_null(f);
        err = calloc(1, 65536);
        size_t got = fread(err, 1, 65535, f);
        fclose(f);
        err[got] = '\0';
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 128 + signals[i])
            fail_msg("pbench exited %d (signal %d), not %d: %s", WEXITSTATUS(status),
                     WIFSIGNALED(status) ? WTERMSIG(status) : 0, 128 + signals[i], err);
        assert_non_null(strstr(err, "interrupted while listing s3://endless/"));
        assert_non_null(strstr(err, "nothing was measured"));
        assert_int_equal(access(result, F_OK), -1);
        free(err);
        unlink(out);
        rmdir(dir);
    }
}

/* pbench itself on keys with a newline and a tab: its messages on stderr
 * write them escaped, as the table does, so no key prints a line of its own. */
static void test_control_characters_escaped(void **state)
{
    (void)state;
    const char *binary = getenv("PBENCH_BINARY"), *source = getenv("PBENCH_SOURCE_DIR");
    if (!binary || !source)
        skip(); /* ctest sets both */
    route("/ctrl?", 200, "<ListBucketResult><Contents><Key>nl&#10;INJECTED LINE.jpg</Key><Size>7"
                         "</Size></Contents><Contents><Key>tab&#9;x.jpg</Key><Size>7</Size>"
                         "</Contents><IsTruncated>false</IsTruncated></ListBucketResult>");
    char dir[] = "/tmp/pbench-remote-XXXXXX", args[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(args, sizeof args, "run '%s/configs/null.yaml' -q -s dataset.path=s3://ctrl/ -s "
             "dataset.endpoint=http://127.0.0.1:%d -s dataset.retries=0 -s run.on_error=skip "
             "-o r.json", source, port);
    char *err = NULL;
    int rc = pb_test_run_pbench(dir, args, &err);
    assert_int_equal(rc, 1); /* every sample is a 404 */
    assert_true(strstr(err, "nl\\x0aINJECTED LINE.jpg") || strstr(err, "tab\\x09x.jpg"));
    for (const char *line = err; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (strncmp(line, "INJECTED", 8) == 0 || strstr(line, "\t"))
            fail_msg("a key printed raw: %s", err);
    free(err);
    char path[PB_PATH_MAX];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/err.txt", dir);
    unlink(path);
    rmdir(dir);
}

static void test_partial_listings(void **state)
{
    (void)state;
    route("/notoken?", 200, "");
    routes[0].answer = tokenless_pages;
    route("/cutonce?", 200, "");
    routes[1].answer = cut_once;
    route("/cut?", 200, "<ListBucketResult><Contents><Key>a.jpg</Key><Size>7</Size></Contents>"
                        "<Contents><Key>b.j");
    char long_page[12000], long_key[5200];
    memset(long_key, 'k', 3000);
    long_key[3000] = '\0';
    int n = snprintf(long_page, sizeof long_page, "<ListBucketResult><Contents><Key>%s.jpg</Key>"
                     "<Size>7</Size></Contents>", long_key);
    memset(long_key, 'z', 5000);
    long_key[5000] = '\0';
    snprintf(long_page + n, sizeof long_page - (size_t)n, "<Contents><Key>%s.jpg</Key><Size>7"
             "</Size></Contents><IsTruncated>false</IsTruncated></ListBucketResult>", long_key);
    route("/long?", 200, long_page);
    struct pb_dataset ds;
    struct pb_remote_listing listing;
    char msg[PB_MSG_MAX * 2] = "";
    /* IsTruncated without a token: on after the last key, with a warning. */
    struct pb_dataset_spec d = spec_for("s3://notoken/");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_OK);
    assert_int_equal(ds.count, 3);
    assert_non_null(strstr(ds.skipped, "without a NextContinuationToken"));
    pb_dataset_free(&ds);
    /* A page cut short is asked again; one always cut short is an error. */
    d = spec_for("s3://cutonce/");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_OK);
    assert_int_equal(ds.count, 3);
    assert_int_equal(listing.requests, 2);
    pb_dataset_free(&ds);
    d = spec_for("s3://cut/");
    d.retries = 1;
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR);
    assert_non_null(strstr(msg, "ends before </ListBucketResult>"));
    assert_non_null(strstr(msg, "after 2 attempts"));
    /* A key of 3000 bytes is listed whole; one too long to name is left out, not cut. */
    d = spec_for("s3://long/");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_OK);
    assert_int_equal(ds.count, 1);
    assert_int_equal(strlen(ds.paths[0]), strlen("s3://long/") + 3000 + 4);
    assert_non_null(strstr(ds.skipped, "1 key left out: longer than pbench's paths"));
    pb_dataset_free(&ds);
}

static void test_manifest_that_is_not_one(void **state)
{
    (void)state;
    static const char binary[] = "HTTP/1.1 200 X\r\nContent-Length: 10\r\n\r\n\x89PNG\r\n\x1a\n\0\0";
    route("/bin/photo.png", 200, "");
    routes[0].raw = binary;
    routes[0].raw_len = sizeof binary - 1;
    route("/big/video.mp4", 200, "");
    routes[1].raw = "HTTP/1.1 200 X\r\nContent-Length: 5000000\r\n\r\n";
    struct pb_dataset ds;
    struct pb_remote_listing listing;
    char msg[PB_MSG_MAX * 2] = "";
    struct pb_dataset_spec d = spec_for("/bin/photo.png");
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "photo.png is not a manifest: byte 8 is a NUL"));
    assert_non_null(strstr(msg, "a folder's URL ends with '/'"));
    d = spec_for("/big/video.mp4");
    d.list_max_mib = 1;
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "video.mp4 is larger than dataset.list_max_mib (1 MiB)"));
    assert_non_null(strstr(msg, "a folder's URL ends with '/'"));
}

/* ---- passwords in URLs --------------------------------------------------- */

#define URL_PASS "pbench-url-pass-7d1e"

/* Sets the dataset option key to value as the config layer does (-s, YAML). */
static void set_option(struct pb_dataset_spec *d, const char *key, const char *value)
{
    char qualified[64], msg[PB_MSG_MAX];
    snprintf(qualified, sizeof qualified, "dataset.%s", key);
    assert_int_equal(pb_opt_parse(pb_opt_find(pb_dataset_opts, key), value, d, qualified, msg,
                                  sizeof msg),
                     PB_OK);
}

static void test_url_password_sent_never_shown(void **state)
{
    (void)state;
    char manifest[256];
    snprintf(manifest, sizeof manifest, "a.jpg 7\nhttp://localhost:%d/data/b.jpg 7\n", port);
    route("/data/manifest.txt", 200, manifest);
    route("/data/", 200, "object!");
    struct pb_dataset_spec d = spec_for("/data/");
    char url[256];
    snprintf(url, sizeof url, "http://reader:" URL_PASS "@127.0.0.1:%d/data/", port);
    set_option(&d, "path", url);
    assert_null(strstr(d.path, URL_PASS)); /* the spec never holds it */
    struct pb_remote *r;
    char msg[PB_MSG_MAX * 2] = "";
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    assert_string_equal(pb_remote_credentials(r),
                        "user and password from dataset.path's URL (never shown or stored)");
    assert_null(strstr(pb_remote_endpoint(r), URL_PASS));
    struct pb_dataset ds = {0};
    struct pb_remote_listing listing;
    assert_int_equal(pb_remote_list(r, NULL, &ds, &listing, msg, sizeof msg), PB_OK);
    assert_int_equal(ds.count, 2);
    for (size_t i = 0; i < ds.count; i++)
        assert_null(strstr(ds.paths[i], URL_PASS));
    /* Basic auth to the dataset's origin ("reader:" URL_PASS in base64)... */
    struct seen_request q;
    assert_true(seen_request("/data/manifest.txt", &q));
    assert_string_equal(q.auth, "Basic cmVhZGVyOnBiZW5jaC11cmwtcGFzcy03ZDFl");
    int rc;
    const char *first[] = {ds.paths[0]}; /* http://127.0.0.1:PORT/data/a.jpg */
    read_all(r, 1, first, 1, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_OK);
    assert_true(seen_request("/data/a.jpg", &q));
    assert_string_equal(q.auth, "Basic cmVhZGVyOnBiZW5jaC11cmwtcGFzcy03ZDFl");
    /* ... and none to another origin the manifest names (localhost). */
    const char *other[] = {ds.paths[1]};
    read_all(r, 1, other, 1, &rc, msg, sizeof msg);
    assert_int_equal(rc, PB_OK);
    assert_true(seen_request("/data/b.jpg", &q));
    assert_string_equal(q.auth, "");
    pb_dataset_free(&ds);
    pb_remote_free(r);
    /* A refused password: the 401 names the source, not the password. */
    route("/locked/", 401, "");
    d = spec_for("/locked/");
    snprintf(url, sizeof url, "http://reader:" URL_PASS "@127.0.0.1:%d/locked/", port);
    set_option(&d, "path", url);
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "credentials: user and password from dataset.path's URL"));
    assert_null(strstr(msg, URL_PASS));
}

static void test_url_password_in_s3_settings(void **state)
{
    (void)state;
    route("/bkt?list-type=2", 200,
          "<ListBucketResult><Contents><Key>k.jpg</Key><Size>7</Size></Contents>"
          "<IsTruncated>false</IsTruncated></ListBucketResult>");
    char endpoint[128];
    snprintf(endpoint, sizeof endpoint, "http://gate:" URL_PASS "@127.0.0.1:%d", port);
    /* Unsigned (no AWS keys): the endpoint's user and password go as Basic. */
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/pbench-test", 1);
    struct pb_dataset_spec d = spec_for("s3://bkt/");
    set_option(&d, "endpoint", endpoint);
    struct pb_dataset ds;
    struct pb_remote_listing listing;
    char msg[PB_MSG_MAX * 2] = "";
    struct pb_remote *r;
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    assert_non_null(strstr(pb_remote_credentials(r), "Basic auth with dataset.endpoint's user"));
    assert_null(strstr(pb_remote_endpoint(r), URL_PASS));
    pb_remote_free(r);
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_OK);
    struct seen_request q;
    assert_true(seen_request("/bkt?", &q));
    assert_string_equal(q.auth, "Basic Z2F0ZTpwYmVuY2gtdXJsLXBhc3MtN2QxZQ==");
    pb_dataset_free(&ds);
    /* Signed: SigV4, and the note says the URL's password is not sent. */
    setenv("AWS_ACCESS_KEY_ID", "AKIDPBENCHTEST", 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_OK);
    assert_non_null(strstr(pb_remote_credentials(r), "environment (AWS_ACCESS_KEY_ID); "
                                                     "dataset.endpoint's user and password are "
                                                     "not sent"));
    pb_remote_free(r);
    assert_int_equal(list(&d, &ds, &listing, msg, sizeof msg), PB_OK);
    assert_true(seen_request("/bkt?", &q));
    assert_non_null(strstr(q.auth, "AWS4-HMAC-SHA256"));
    pb_dataset_free(&ds);
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    /* An s3:// path with a user and password: refused, the password gone. */
    d = spec_for("s3://bkt/");
    set_option(&d, "path", "s3://AKID:" URL_PASS "@bkt/p/");
    assert_int_equal(pb_remote_new(&d, &r, msg, sizeof msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "an s3:// URL carries no user or password"));
    assert_null(strstr(msg, URL_PASS));
}

static void test_classify_and_backoff(void **state)
{
    (void)state;
    assert_int_equal(pb_remote_classify(CURLE_OK, 200), PB_ATTEMPT_OK);
    assert_int_equal(pb_remote_classify(CURLE_OK, 206), PB_ATTEMPT_OK);
    assert_int_equal(pb_remote_classify(CURLE_OK, 503), PB_ATTEMPT_RETRY_503);
    assert_int_equal(pb_remote_classify(CURLE_OK, 429), PB_ATTEMPT_RETRY_503);
    assert_int_equal(pb_remote_classify(CURLE_OK, 502), PB_ATTEMPT_RETRY_5XX);
    assert_int_equal(pb_remote_classify(CURLE_OK, 404), PB_ATTEMPT_MISSING);
    assert_int_equal(pb_remote_classify(CURLE_OK, 403), PB_ATTEMPT_FATAL);
    assert_int_equal(pb_remote_classify(CURLE_OK, 400), PB_ATTEMPT_FAILED);
    assert_int_equal(pb_remote_classify(CURLE_OPERATION_TIMEDOUT, 0), PB_ATTEMPT_RETRY_TIMEOUT);
    assert_int_equal(pb_remote_classify(CURLE_PARTIAL_FILE, 200), PB_ATTEMPT_RETRY_RESET);
    assert_int_equal(pb_remote_classify(CURLE_GOT_NOTHING, 0), PB_ATTEMPT_RETRY_RESET);
    assert_int_equal(pb_remote_classify(CURLE_PEER_FAILED_VERIFICATION, 0), PB_ATTEMPT_FATAL);
    for (int attempt = 1; attempt <= 12; attempt++) {
        uint64_t ns = pb_remote_backoff_ns(attempt, (uint64_t)attempt);
        uint64_t base = 100000000ull << (attempt > 6 ? 6 : attempt - 1);
        base = base > 5000000000ull ? 5000000000ull : base;
        assert_true(ns >= base / 2 && ns <= base);
    }
    assert_true(pb_remote_is_url("s3://b/p") && pb_remote_is_url("https://h/x"));
    assert_false(pb_remote_is_url("data/s3:/x") || pb_remote_is_url("/s3://x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_s3_listing_pages_and_escapes, reset_routes),
        cmocka_unit_test_setup(test_s3_missing_bucket_and_denied, reset_routes),
        cmocka_unit_test_setup(test_s3_request_urls, reset_routes),
        cmocka_unit_test_setup(test_credentials_file_and_profiles, reset_routes),
        cmocka_unit_test_setup(test_retries_counted_by_cause, reset_routes),
        cmocka_unit_test_setup(test_requests_in_flight, reset_routes),
        cmocka_unit_test_setup(test_keys_sent_as_they_are, reset_routes),
        cmocka_unit_test_setup(test_content_length_shorter_than_body, reset_routes),
        cmocka_unit_test_setup(test_redirect_named_with_target, reset_routes),
        cmocka_unit_test_setup(test_timeout_is_no_progress, reset_routes),
        cmocka_unit_test_setup(test_manifest_lines_json_and_heads, reset_routes),
        cmocka_unit_test_setup(test_listing_that_goes_round_stops, reset_routes),
        cmocka_unit_test_setup(test_listing_bounded_in_memory, reset_routes),
        cmocka_unit_test_setup(test_listing_stops_on_signal, reset_routes),
        cmocka_unit_test_setup(test_pbench_stops_listing_on_signal, reset_routes),
        cmocka_unit_test_setup(test_control_characters_escaped, reset_routes),
        cmocka_unit_test_setup(test_partial_listings, reset_routes),
        cmocka_unit_test_setup(test_manifest_that_is_not_one, reset_routes),
        cmocka_unit_test_setup(test_url_password_sent_never_shown, reset_routes),
        cmocka_unit_test_setup(test_url_password_in_s3_settings, reset_routes),
        cmocka_unit_test_setup(test_classify_and_backoff, reset_routes),
    };
    return cmocka_run_group_tests(tests, start_server, NULL);
}
