/* The live server (bench/sys/http.c) driven through plain sockets: its
 * routes, 404 and 405, the addresses it refuses, and clients that try to
 * wear it down (garbage, 200 connections at once, one that never reads).
 * Skipped where pbench was built without libmicrohttpd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/sys/http.h"

#define BIG_BYTES (1u << 20)

/* What the handler saw last, under its own lock as a caller's would be. */
static struct {
    pthread_mutex_t lock;
    char path[256], accept[256];
    int calls;
} seen = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* "/" says hello, "/big" is 1 MiB, anything else is 404. */
static int handler(void *user, const char *path, const char *accept, struct pb_http_reply *out)
{
    (void)user;
    pthread_mutex_lock(&seen.lock);
    snprintf(seen.path, sizeof(seen.path), "%s", path);
    snprintf(seen.accept, sizeof(seen.accept), "%s", accept);
    seen.calls++;
    pthread_mutex_unlock(&seen.lock);
    out->content_type = "text/plain; charset=utf-8";
    if (strcmp(path, "/") == 0) {
        out->body = strdup("hello\n");
        out->len = out->body ? strlen(out->body) : 0;
    } else if (strcmp(path, "/big") == 0) {
        out->body = malloc(BIG_BYTES);
        if (out->body)
            memset(out->body, 'x', BIG_BYTES);
        out->len = BIG_BYTES;
    } else {
        out->status = 404;
        out->body = strdup("no such page\n");
        out->len = out->body ? strlen(out->body) : 0;
    }
    return out->body ? PB_OK : PB_ERR_NOMEM;
}

static struct pb_http *start(const char *address, bool *public)
{
    struct pb_http *h = NULL;
    char msg[PB_MSG_MAX] = "";
    int rc = pb_http_start(address, handler, NULL, &h, public, msg, sizeof(msg));
    if (rc != PB_OK)
        fail_msg("pb_http_start(%s): %d %s", address, rc, msg);
    assert_non_null(h);
    return h;
}

/* A connected socket to port on 127.0.0.1 (or ::1), blocking, with a
 * long receive timeout so that a broken server fails the test, not hangs it. */
static int connect_to(int family, int port)
{
    int fd = socket(family, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {.tv_sec = 60};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
                               .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int rc = family == AF_INET ? connect(fd, (struct sockaddr *)&in, sizeof(in))
                               : connect(fd, (struct sockaddr *)&in6, sizeof(in6));
    if (rc != 0)
        fail_msg("connect to port %d: %s", port, strerror(errno));
    return fd;
}

static void send_all(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0)
            return; /* the server may close a hostile client early */
        data += n;
        len -= (size_t)n;
    }
}

static char *request_as(int family, int port, const char *text, bool hang_up, int *status,
                        size_t *len);

static char *request(int family, int port, const char *text, int *status, size_t *len)
{
    return request_as(family, port, text, false, status, len);
}

/* Everything the server sends until it closes; *status is the status
 * line's code (0 when there was none). */
static char *read_all(int fd, size_t *len, int *status)
{
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    for (;;) {
        if (used == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            assert_non_null(buf);
        }
        ssize_t n = recv(fd, buf + used, cap - used, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            fail_msg("the server sent nothing for 60 s");
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    buf[used] = '\0';
    if (len)
        *len = used;
    if (status)
        *status = strncmp(buf, "HTTP/1.", 7) == 0 ? atoi(buf + 9) : 0;
    return buf;
}

/* One request on a fresh connection; the whole response (free it). With
 * hang_up, the client says it has sent everything (as a client that sent
 * garbage and left does), so the server need not wait out its timeout. */
static char *request_as(int family, int port, const char *text, bool hang_up, int *status,
                        size_t *len)
{
    int fd = connect_to(family, port);
    send_all(fd, text, strlen(text));
    if (hang_up)
        shutdown(fd, SHUT_WR);
    char *response = read_all(fd, len, status);
    close(fd);
    return response;
}

static char *get(int port, const char *path, int *status)
{
    char text[512];
    snprintf(text, sizeof(text), "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
             path);
    return request(AF_INET, port, text, status, NULL);
}

/* The body of a response: after the blank line. */
static const char *body_of(const char *response)
{
    const char *end = strstr(response, "\r\n\r\n");
    return end ? end + 4 : "";
}

static void assert_serves(int port)
{
    int status = 0;
    char *response = get(port, "/", &status);
    assert_int_equal(status, 200);
    assert_string_equal(body_of(response), "hello\n");
    free(response);
}

static void test_routes(void **state)
{
    (void)state;
    bool public = true;
    struct pb_http *h = start("127.0.0.1:0", &public);
    assert_false(public);
    int port = pb_http_port(h);
    assert_true(port > 0);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
    assert_string_equal(pb_http_url(h), url);

    assert_serves(port);
    int status = 0;
    char *response = get(port, "/nowhere", &status);
    assert_int_equal(status, 404);
    assert_string_equal(body_of(response), "no such page\n");
    free(response);

    /* The query is not part of the path; the Accept header reaches the handler. */
    response = request(AF_INET, port,
                       "GET /?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/openmetrics-text\r\n"
                       "Connection: close\r\n\r\n",
                       &status, NULL);
    assert_int_equal(status, 200);
    assert_non_null(strstr(response, "Content-Type: text/plain; charset=utf-8"));
    free(response);
    pthread_mutex_lock(&seen.lock);
    assert_string_equal(seen.path, "/");
    assert_string_equal(seen.accept, "application/openmetrics-text");
    pthread_mutex_unlock(&seen.lock);

    /* HEAD: the headers, no body. */
    response = request(AF_INET, port, "HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                       &status, NULL);
    assert_int_equal(status, 200);
    assert_string_equal(body_of(response), "");
    free(response);
    pb_http_stop(h);
    pb_http_stop(NULL);
}

static void test_other_methods_405(void **state)
{
    (void)state;
    struct pb_http *h = start("127.0.0.1:0", NULL);
    int port = pb_http_port(h);
    pthread_mutex_lock(&seen.lock);
    int calls = seen.calls;
    pthread_mutex_unlock(&seen.lock);
    static const char *const requests[] = {
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
        "PUT /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        "DELETE / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(requests); i++) {
        int status = 0;
        char *response = request(AF_INET, port, requests[i], &status, NULL);
        assert_int_equal(status, 405);
        assert_non_null(strstr(response, "Allow: GET, HEAD"));
        free(response);
    }
    pthread_mutex_lock(&seen.lock);
    assert_int_equal(seen.calls, calls); /* the handler never saw them */
    pthread_mutex_unlock(&seen.lock);
    assert_serves(port);
    pb_http_stop(h);
}

/* A client that sends text (what fits without waiting) and, when all of
 * it went, says it has nothing more; its socket, to read from later. */
static int send_and_leave(int port, const char *text)
{
    int fd = connect_to(AF_INET, port);
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    size_t len = strlen(text), sent = 0;
    while (sent < len) {
        ssize_t n = send(fd, text + sent, len - sent, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        sent += (size_t)n;
    }
    if (sent == len)
        shutdown(fd, SHUT_WR);
    fcntl(fd, F_SETFL, flags);
    return fd;
}

/* Clients that send garbage, all at once: each is refused (4xx, 5xx) or
 * closed, and the server answers others while they are there. */
static void test_garbage(void **state)
{
    (void)state;
    struct pb_http *h = start("127.0.0.1:0", NULL);
    int port = pb_http_port(h);
    size_t huge = 4 * PB_HTTP_MEMORY_BYTES; /* headers beyond a connection's memory */
    char *long_header = malloc(huge + 64);
    assert_non_null(long_header);
    int used = snprintf(long_header, huge + 64, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: ");
    memset(long_header + used, 'a', huge);
    memcpy(long_header + used + huge, "\r\n\r\n", 5);
    const char *const junk[] = {
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not a TLS hello\r\n\r\n",
        "GET\r\n\r\n",
        "GET / HTTP/9.9\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBroken header line\r\n\r\n",
        "\r\n\r\n\r\n\r\n",
        "GET /\x01\x02 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        long_header,
    };
    int fds[PB_ARRAY_LEN(junk)];
    for (size_t i = 0; i < PB_ARRAY_LEN(junk); i++)
        fds[i] = send_and_leave(port, junk[i]);
    assert_serves(port);
    for (size_t i = 0; i < PB_ARRAY_LEN(junk); i++) {
        int status = 0;
        free(read_all(fds[i], NULL, &status));
        close(fds[i]);
        if (status != 0 && status < 400)
            fail_msg("garbage %zu was answered %d", i, status);
    }
    free(long_header);
    assert_serves(port);
    pb_http_stop(h);
}

/* 200 connections at once, each asking for a page: the server holds no
 * more than its limit (the rest wait in the listen queue, or the system
 * refuses them), answers those it holds, and after they are gone a GET
 * works. */
static void test_many_connections(void **state)
{
    (void)state;
    struct pb_http *h = start("127.0.0.1:0", NULL);
    int port = pb_http_port(h);
    enum { CLIENTS = 200 };
    int fds[CLIENTS];
    bool answered[CLIENTS] = {false};
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int i = 0; i < CLIENTS; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        assert_true(fds[i] >= 0);
        int rc = connect(fds[i], (struct sockaddr *)&in, sizeof(in));
        assert_true(rc == 0 || errno == EINPROGRESS);
    }
    int answers = 0;
    unsigned most_held = 0;
    bool sent[CLIENTS] = {false};
    const char *text = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    /* Until the server holds its limit's worth, or a second passes with no new answer. */
    for (int round = 0, quiet = 0; round < 600 && answers < PB_HTTP_CONNECTIONS && quiet < 20;
         round++) {
        int before = answers;
        struct pollfd pfd[CLIENTS];
        for (int i = 0; i < CLIENTS; i++)
            pfd[i] = (struct pollfd){.fd = fds[i], .events = sent[i] ? POLLIN : POLLOUT};
        poll(pfd, CLIENTS, 50);
        for (int i = 0; i < CLIENTS; i++) {
            char buf[512];
            if (!sent[i] && (pfd[i].revents & POLLOUT))
                sent[i] = send(fds[i], text, strlen(text), MSG_NOSIGNAL) > 0;
            else if (sent[i] && !answered[i] && (pfd[i].revents & POLLIN) &&
                     recv(fds[i], buf, sizeof(buf), 0) > 0)
                answered[i] = true, answers++;
        }
        quiet = answers > before || answers == 0 ? 0 : quiet + 1;
        unsigned held = pb_http_connections(h);
        most_held = held > most_held ? held : most_held;
        assert_true(held <= PB_HTTP_CONNECTIONS);
    }
    printf("# %d of %d connections answered, at most %u held at once\n", answers, CLIENTS,
           most_held);
    assert_true(answers >= 1);
    for (int i = 0; i < CLIENTS; i++)
        close(fds[i]);
    assert_serves(port);
    pb_http_stop(h);
}

/* Clients that ask for 1 MiB and never read it: the others are served. */
static void test_client_never_reads(void **state)
{
    (void)state;
    struct pb_http *h = start("127.0.0.1:0", NULL);
    int port = pb_http_port(h);
    enum { STUCK = 4 };
    int fds[STUCK];
    for (int i = 0; i < STUCK; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fds[i] >= 0);
        int small = 4096;
        setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
        struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        assert_int_equal(connect(fds[i], (struct sockaddr *)&in, sizeof(in)), 0);
        const char *text = "GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        send_all(fds[i], text, strlen(text));
    }
    assert_serves(port);
    /* And one that does read gets all of it. */
    int status = 0;
    size_t len = 0;
    char *response = request(AF_INET, port, "GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                             &status, &len);
    assert_int_equal(status, 200);
    assert_int_equal(strlen(body_of(response)), BIG_BYTES);
    free(response);
    pb_http_stop(h); /* with the stuck clients still connected */
    for (int i = 0; i < STUCK; i++)
        close(fds[i]);
}

static void test_busy_port(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&in, sizeof(in)), 0);
    assert_int_equal(listen(fd, 1), 0);
    socklen_t len = sizeof(in);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&in, &len), 0);
    char address[64], want[96], msg[PB_MSG_MAX] = "";
    snprintf(address, sizeof(address), "127.0.0.1:%d", ntohs(in.sin_port));
    snprintf(want, sizeof(want), "port %d on 127.0.0.1 is in use", ntohs(in.sin_port));
    struct pb_http *h = NULL;
    assert_int_equal(pb_http_start(address, handler, NULL, &h, NULL, msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_null(h);
    if (!strstr(msg, want))
        fail_msg("\"%s\" not in \"%s\"", want, msg);
    close(fd);
}

static void test_bad_addresses(void **state)
{
    (void)state;
    static const struct {
        const char *address, *says;
    } bad[] = {
        {"nonsense:99999", "port 99999 is out of range"},
        {"99999", "port 99999 is out of range"},
        {"", "the address is empty"},
        {"localhost:http", "is not a number"},
        {"127.0.0.1:-1", "is not a number"},
        {"127.0.0.1:", "is not a number"},
        {"::1:8080", "in brackets"},
        {"[::1]8080", "in brackets"},
        {"[::1", "in brackets"},
        {"[not-v6]:8080", "cannot resolve"},
    };
    for (size_t i = 0; i < PB_ARRAY_LEN(bad); i++) {
        struct pb_http *h = NULL;
        char msg[PB_MSG_MAX] = "";
        int rc = pb_http_start(bad[i].address, handler, NULL, &h, NULL, msg, sizeof(msg));
        if (rc != PB_ERR_CONFIG || !strstr(msg, bad[i].says))
            fail_msg("\"%s\": %d \"%s\", wanted \"%s\"", bad[i].address, rc, msg, bad[i].says);
        assert_null(h);
        char quoted[96];
        snprintf(quoted, sizeof(quoted), "\"%s\"", bad[i].address);
        if (bad[i].address[0])
            assert_non_null(strstr(msg, quoted)); /* the message names the address */
    }
}

static void test_ipv6_and_public(void **state)
{
    (void)state;
    int probe = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    bool have_v6 = probe >= 0 && bind(probe, (struct sockaddr *)&in6, sizeof(in6)) == 0;
    if (probe >= 0)
        close(probe);
    if (have_v6) {
        bool public = true;
        struct pb_http *h = start("[::1]:0", &public);
        assert_false(public);
        char url[64];
        snprintf(url, sizeof(url), "http://[::1]:%d/", pb_http_port(h));
        assert_string_equal(pb_http_url(h), url);
        int status = 0;
        char text[128];
        snprintf(text, sizeof(text), "GET / HTTP/1.1\r\nHost: [::1]:%d\r\nConnection: close\r\n\r\n",
                 pb_http_port(h));
        free(request(AF_INET6, pb_http_port(h), text, &status, NULL));
        assert_int_equal(status, 200);
        pb_http_stop(h);
    } else {
        printf("# IPv6 part skipped: no ::1 on this machine\n");
    }
    bool public = false;
    struct pb_http *h = start("0.0.0.0:0", &public);
    assert_true(public); /* every interface: the caller warns */
    assert_serves(pb_http_port(h));
    pb_http_stop(h);
}

/* DNS rebinding: a page on another site whose name now points at this
 * machine sends its own name as Host; pbench answers 421 and its handler
 * never runs, so /result.json cannot be read that way. */
static void test_host_header(void **state)
{
    (void)state;
    struct pb_http *h = start("127.0.0.1:0", NULL);
    int port = pb_http_port(h);
    pthread_mutex_lock(&seen.lock);
    int calls = seen.calls;
    pthread_mutex_unlock(&seen.lock);
    const char *refused[] = {"evil.example.com", "evil.example.com:%d", "127.0.0.1.evil.example",
                             "localhost.evil.example", "10.0.0.1:%d", "", "[::1"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        char host[96], text[256];
        snprintf(host, sizeof(host), refused[i], port);
        snprintf(text, sizeof(text), "GET /result.json HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
                 host);
        int status = 0;
        char *response = request(AF_INET, port, text, &status, NULL);
        if (host[0]) /* an empty Host is libmicrohttpd's to refuse (400) or ours (421) */
            assert_int_equal(status, 421);
        else
            assert_true(status == 421 || status == 400);
        free(response);
    }
    pthread_mutex_lock(&seen.lock);
    assert_int_equal(seen.calls, calls); /* the handler saw none of them */
    pthread_mutex_unlock(&seen.lock);
    const char *answered[] = {"127.0.0.1:%d", "127.0.0.1", "localhost:%d", "LOCALHOST", "localhost."};
    for (size_t i = 0; i < sizeof(answered) / sizeof(answered[0]); i++) {
        char host[96], text[256];
        snprintf(host, sizeof(host), answered[i], port);
        snprintf(text, sizeof(text), "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host);
        int status = 0;
        free(request(AF_INET, port, text, &status, NULL));
        assert_int_equal(status, 200);
    }
    /* HTTP/1.0 without a Host is answered: no browser sends one. */
    int status = 0;
    free(request(AF_INET, port, "GET / HTTP/1.0\r\n\r\n", &status, NULL));
    assert_int_equal(status, 200);
    pb_http_stop(h);

    /* The rule itself: a name the user gave is answered; on every
     * interface any address literal is, a name still is not. */
    assert_true(pb_http_host_allowed("box.lan:8080", "192.168.1.5", "box.lan", false));
    assert_false(pb_http_host_allowed("other.lan:8080", "192.168.1.5", "box.lan", false));
    assert_true(pb_http_host_allowed("[::1]:80", "::1", "::1", false));
    assert_false(pb_http_host_allowed("::1", "::1", "::1", false));
    assert_true(pb_http_host_allowed("10.1.2.3:80", "0.0.0.0", "0.0.0.0", true));
    assert_true(pb_http_host_allowed("[fe80::1]:80", "::", "::", true));
    assert_false(pb_http_host_allowed("evil.example.com", "0.0.0.0", "0.0.0.0", true));
    assert_false(pb_http_host_allowed("10.1.2.3:80", "127.0.0.1", "127.0.0.1", false));
}

int main(void)
{
    if (!pb_http_available()) {
        struct pb_http *h = NULL;
        char msg[PB_MSG_MAX] = "";
        int rc = pb_http_start("127.0.0.1:0", handler, NULL, &h, NULL, msg, sizeof(msg));
        if (rc != PB_ERR_UNAVAILABLE || !strstr(msg, "libmicrohttpd-dev") || h) {
            fprintf(stderr, "built without libmicrohttpd, pb_http_start said %d \"%s\"\n", rc, msg);
            return 1;
        }
        printf("SKIP: pbench was built without libmicrohttpd (install libmicrohttpd-dev and "
               "rebuild)\n");
        return PB_EXIT_SKIP;
    }
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes),          cmocka_unit_test(test_other_methods_405),
        cmocka_unit_test(test_garbage),         cmocka_unit_test(test_many_connections),
        cmocka_unit_test(test_client_never_reads), cmocka_unit_test(test_busy_port),
        cmocka_unit_test(test_bad_addresses),   cmocka_unit_test(test_ipv6_and_public),
        cmocka_unit_test(test_host_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
