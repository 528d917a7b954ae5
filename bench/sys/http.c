/* The live page's HTTP server (bench/sys/http.h): the address a user gives
 * read and checked here, the serving left to libmicrohttpd. */
#include "bench/sys/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#if PB_HAVE_HTTP
#include <microhttpd.h>
#endif

#include "bench/base/pb.h"

#define DEFAULT_HOST "127.0.0.1"
#define LISTEN_BACKLOG 64

/* Where to listen, as read from "[HOST:]PORT". */
struct listen_at {
    struct sockaddr_storage addr;
    socklen_t addr_len;
    int port;
    char host[INET6_ADDRSTRLEN]; /* numeric, as bound */
    char name[256];              /* the host as the user gave it ("localhost", a name, a number) */
    bool ipv6, loopback, any;    /* any: 0.0.0.0 or [::], every interface */
};

struct pb_http {
#if PB_HAVE_HTTP
    struct MHD_Daemon *daemon;
#endif
    pb_http_handler handler;
    void *user;
    int port;
    char host[INET6_ADDRSTRLEN]; /* the Host values answered: see host_allowed */
    char name[256];
    bool any;
    char url[INET6_ADDRSTRLEN + 32];
};

bool pb_http_available(void)
{
    return PB_HAVE_HTTP;
}

/* Reads PORT: decimal digits, 0 to 65535. */
static int read_port(const char *address, const char *text, int *port, char *msg, size_t msglen)
{
    size_t digits = strspn(text, "0123456789");
    if (!text[0] || text[digits] || digits > 9) {
        snprintf(msg, msglen,
                 "address \"%s\": the port \"%s\" is not a number; give [HOST:]PORT, "
                 "e.g. 8080 or 127.0.0.1:8080",
                 address, text);
        return PB_ERR_CONFIG;
    }
    long value = strtol(text, NULL, 10);
    if (value > 65535) {
        snprintf(msg, msglen,
                 "address \"%s\": port %ld is out of range (0 to 65535; 0 picks a free one)",
                 address, value);
        return PB_ERR_CONFIG;
    }
    *port = (int)value;
    return PB_OK;
}

/* Splits "[HOST:]PORT" into host and port text: "[::1]:80" gives "::1" and
 * "80"; a bare port or ":PORT" gives the default host. */
static int split_address(const char *address, char *host, size_t hostlen, char *port,
                         size_t portlen, char *msg, size_t msglen)
{
    const char *colon = strrchr(address, ':');
    const char *host_start = address, *host_end = colon ? colon : address;
    if (address[0] == '[') {
        const char *close = strchr(address, ']');
        if (!close || close[1] != ':') {
            snprintf(msg, msglen,
                     "address \"%s\": an IPv6 address in brackets needs its port after it, "
                     "e.g. [::1]:8080",
                     address);
            return PB_ERR_CONFIG;
        }
        host_start = address + 1;
        host_end = close;
        colon = close + 1;
    } else if (colon && memchr(address, ':', (size_t)(colon - address))) {
        snprintf(msg, msglen,
                 "address \"%s\": an IPv6 address goes in brackets, e.g. [::1]:8080", address);
        return PB_ERR_CONFIG;
    }
    size_t host_len = colon ? (size_t)(host_end - host_start) : 0;
    if (host_len >= hostlen || strlen(colon ? colon + 1 : address) >= portlen) {
        snprintf(msg, msglen, "address \"%s\" is too long", address);
        return PB_ERR_CONFIG;
    }
    if (host_len)
        memcpy(host, host_start, host_len);
    host[host_len] = '\0';
    if (!host[0])
        snprintf(host, hostlen, "%s", DEFAULT_HOST);
    snprintf(port, portlen, "%s", colon ? colon + 1 : address);
    return PB_OK;
}

/* Whether a socket address is the machine's own loopback (127.0.0.0/8,
 * ::1, or 127.x mapped into IPv6). */
static bool is_loopback(const struct sockaddr_storage *addr)
{
    if (addr->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
        return true;
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
}

/* Resolves host (a number, or a name such as localhost) to the first IPv4
 * or IPv6 address it has, with port. */
static int resolve(const char *address, const char *host, bool bracketed, int port,
                   struct listen_at *at, char *msg, size_t msglen)
{
    struct addrinfo hints = {.ai_family = bracketed ? AF_INET6 : AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = bracketed ? AI_NUMERICHOST : 0};
    struct addrinfo *found = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &found);
    if (rc != 0) {
        snprintf(msg, msglen, "address \"%s\": cannot resolve the host \"%s\": %s", address, host,
                 rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return PB_ERR_CONFIG;
    }
    const struct addrinfo *ai = found;
    while (ai && ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
        ai = ai->ai_next;
    if (!ai || ai->ai_addrlen > sizeof(at->addr)) {
        freeaddrinfo(found);
        snprintf(msg, msglen, "address \"%s\": the host \"%s\" has no IPv4 or IPv6 address",
                 address, host);
        return PB_ERR_CONFIG;
    }
    memset(&at->addr, 0, sizeof(at->addr));
    memcpy(&at->addr, ai->ai_addr, ai->ai_addrlen);
    at->addr_len = (socklen_t)ai->ai_addrlen;
    freeaddrinfo(found);
    at->ipv6 = at->addr.ss_family == AF_INET6;
    if (at->ipv6) {
        ((struct sockaddr_in6 *)&at->addr)->sin6_port = htons((uint16_t)port);
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&at->addr)->sin6_addr, at->host,
                  sizeof(at->host));
    } else {
        ((struct sockaddr_in *)&at->addr)->sin_port = htons((uint16_t)port);
        inet_ntop(AF_INET, &((struct sockaddr_in *)&at->addr)->sin_addr, at->host,
                  sizeof(at->host));
    }
    at->port = port;
    at->loopback = is_loopback(&at->addr);
    at->any = at->ipv6 ? IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&at->addr)->sin6_addr)
                       : ((struct sockaddr_in *)&at->addr)->sin_addr.s_addr == htonl(INADDR_ANY);
    snprintf(at->name, sizeof(at->name), "%s", host);
    return PB_OK;
}

/* Reads "[HOST:]PORT" into where to listen; PB_ERR_CONFIG with the reason. */
static int read_address(const char *address, struct listen_at *at, char *msg, size_t msglen)
{
    if (!address || !address[0]) {
        snprintf(msg, msglen,
                 "the address is empty; give [HOST:]PORT, e.g. 8080 or 127.0.0.1:8080");
        return PB_ERR_CONFIG;
    }
    char host[256], port_text[32];
    int port = 0;
    int rc = split_address(address, host, sizeof(host), port_text, sizeof(port_text), msg, msglen);
    if (rc == PB_OK)
        rc = read_port(address, port_text, &port, msg, msglen);
    if (rc == PB_OK)
        rc = resolve(address, host, address[0] == '[', port, at, msg, msglen);
    return rc;
}

/* Why the server could not listen at at: a socket of our own tries the
 * same bind and says what the system says ("in use", "needs privileges"). */
static void explain_bind_failure(const char *address, const struct listen_at *at, char *msg,
                                 size_t msglen)
{
    int fd = socket(at->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0) {
        int on = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
        if (bind(fd, (const struct sockaddr *)&at->addr, at->addr_len) != 0 ||
            listen(fd, 1) != 0)
            err = errno;
        close(fd);
    }
    const char *host_fmt = at->ipv6 ? "[%s]" : "%s";
    char host[INET6_ADDRSTRLEN + 2];
    snprintf(host, sizeof(host), host_fmt, at->host);
    if (err == EADDRINUSE)
        snprintf(msg, msglen, "address \"%s\": port %d on %s is in use", address, at->port, host);
    else if (err == EACCES)
        snprintf(msg, msglen,
                 "address \"%s\": port %d on %s needs privileges (ports below 1024 do); "
                 "choose a port from 1024 up",
                 address, at->port, host);
    else if (err == EADDRNOTAVAIL)
        snprintf(msg, msglen, "address \"%s\": %s is not an address of this machine", address,
                 host);
    else if (err)
        snprintf(msg, msglen, "address \"%s\": cannot listen on port %d on %s: %s", address,
                 at->port, host, strerror(err));
    else
        snprintf(msg, msglen, "address \"%s\": libmicrohttpd could not start a server there",
                 address);
}

/* Whether name (a Host header's host, without its port) is a numeric
 * IPv4 address, or an IPv6 one without its brackets. */
static bool is_ip_literal(const char *name)
{
    unsigned char addr[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1;
}

/* Whether a request's Host header names the server: the address it
 * listens on, the host the user gave, or localhost; where it listens on
 * every interface, any address literal or this machine's name. A page on
 * another site whose name was rebound to this machine sends its own name
 * and is refused, so it cannot read /result.json. No Host (HTTP/1.0) is
 * answered: a browser always sends one. */
bool pb_http_host_allowed(const char *host_header, const char *bound, const char *given,
                          bool any)
{
    if (!host_header)
        return true;
    char name[256];
    size_t len = strlen(host_header);
    if (len >= sizeof(name) || len == 0)
        return false;
    memcpy(name, host_header, len + 1);
    if (name[0] == '[') { /* [v6]:port */
        char *close = strchr(name, ']');
        if (!close || (close[1] && close[1] != ':'))
            return false;
        *close = '\0';
        memmove(name, name + 1, strlen(name + 1) + 1);
    } else {
        char *colon = strchr(name, ':');
        if (colon && strchr(colon + 1, ':'))
            return false; /* a bare IPv6 address is no Host value */
        if (colon)
            *colon = '\0';
    }
    len = strlen(name);
    if (len && name[len - 1] == '.')
        name[--len] = '\0'; /* "localhost." is localhost */
    if (!name[0])
        return false;
    if (strcasecmp(name, "localhost") == 0 || strcasecmp(name, bound) == 0 ||
        (given && given[0] && strcasecmp(name, given) == 0))
        return true;
    if (any) {
        char self[256] = "";
        if (is_ip_literal(name) ||
            (gethostname(self, sizeof(self) - 1) == 0 && strcasecmp(name, self) == 0))
            return true;
    }
    return false;
}

#if PB_HAVE_HTTP

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result mhd_result;
#else
typedef int mhd_result;
#endif

/* Queues a short plain-text answer of pbench's own (405, 500). */
static mhd_result answer_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
    struct MHD_Response *response =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!response)
        return MHD_NO;
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    mhd_result rc = MHD_queue_response(conn, status, response);
    MHD_destroy_response(response);
    return rc;
}

/* libmicrohttpd's access handler: GET and HEAD go to the handler (HEAD's
 * body is left out by libmicrohttpd) once the request is read, so the
 * connection can stay open for the page's next poll; anything else is 405
 * at once, its body never read (and the connection closed). */
static mhd_result answer(void *cls, struct MHD_Connection *conn, const char *url,
                         const char *method, const char *version, const char *upload_data,
                         size_t *upload_data_size, void **req_cls)
{
    static int request_seen;
    (void)version;
    (void)upload_data;
    struct pb_http *h = cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return answer_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "pbench serves GET and HEAD only\n");
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!pb_http_host_allowed(host, h->host, h->name, h->any))
        return answer_text(conn, 421,
                           "pbench answers only requests for the address it listens on "
                           "(or localhost); this Host header names another\n");
    if (!*req_cls) {
        *req_cls = &request_seen; /* the headers: answer once the request is read */
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* a GET's body means nothing here */
        return MHD_YES;
    }
    const char *accept =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    struct pb_http_reply reply = {.status = MHD_HTTP_OK};
    if (h->handler(h->user, url ? url : "/", accept ? accept : "", &reply) != PB_OK) {
        free(reply.body);
        return answer_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "pbench is out of memory\n");
    }
    struct MHD_Response *response =
        reply.body ? MHD_create_response_from_buffer(reply.len, reply.body, MHD_RESPMEM_MUST_FREE)
                   : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!response) {
        free(reply.body);
        return MHD_NO;
    }
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                            reply.content_type ? reply.content_type
                                               : "text/plain; charset=utf-8");
    MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
    mhd_result rc = MHD_queue_response(conn, (unsigned)(reply.status ? reply.status : 200),
                                       response);
    MHD_destroy_response(response);
    return rc;
}

/* Starts libmicrohttpd's daemon at at; NULL when it cannot listen there. */
static struct MHD_Daemon *start_daemon(struct pb_http *h, const struct listen_at *at)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    if (at->ipv6)
        flags |= MHD_USE_IPv6;
    return MHD_start_daemon(
        flags, (uint16_t)at->port, NULL, NULL, answer, h, MHD_OPTION_SOCK_ADDR,
        (const struct sockaddr *)&at->addr, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)PB_HTTP_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)PB_HTTP_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)PB_HTTP_MEMORY_BYTES,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)LISTEN_BACKLOG, MHD_OPTION_END);
}

int pb_http_start(const char *address, pb_http_handler handler, void *user,
                  struct pb_http **out, bool *public, char *msg, size_t msglen)
{
    *out = NULL;
    struct listen_at at;
    int rc = read_address(address, &at, msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct pb_http *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(msg, msglen, "out of memory starting the server on \"%s\"", address);
        return PB_ERR_NOMEM;
    }
    h->handler = handler;
    h->user = user;
    snprintf(h->host, sizeof(h->host), "%s", at.host);
    snprintf(h->name, sizeof(h->name), "%s", at.name);
    h->any = at.any;
    h->daemon = start_daemon(h, &at);
    if (!h->daemon) {
        explain_bind_failure(address, &at, msg, msglen);
        free(h);
        return PB_ERR_CONFIG;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info && info->port ? info->port : at.port;
    snprintf(h->url, sizeof(h->url), at.ipv6 ? "http://[%s]:%d/" : "http://%s:%d/", at.host,
             h->port);
    if (public)
        *public = !at.loopback;
    *out = h;
    return PB_OK;
}

unsigned pb_http_connections(const struct pb_http *h)
{
    const union MHD_DaemonInfo *info =
        h ? MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS) : NULL;
    return info ? info->num_connections : 0;
}

void pb_http_stop(struct pb_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->daemon);
    free(h);
}

#else /* !PB_HAVE_HTTP */

int pb_http_start(const char *address, pb_http_handler handler, void *user,
                  struct pb_http **out, bool *public, char *msg, size_t msglen)
{
    (void)handler;
    (void)user;
    (void)public;
    (void)read_address;
    (void)explain_bind_failure;
    *out = NULL;
    snprintf(msg, msglen,
             "cannot serve on \"%s\": pbench was built without libmicrohttpd; install "
             "libmicrohttpd-dev and rebuild (scripts/setup.sh does)",
             address ? address : "");
    return PB_ERR_UNAVAILABLE;
}

unsigned pb_http_connections(const struct pb_http *h)
{
    (void)h;
    return 0;
}

void pb_http_stop(struct pb_http *h)
{
    free(h);
}

#endif

const char *pb_http_url(const struct pb_http *h)
{
    return h ? h->url : "";
}

int pb_http_port(const struct pb_http *h)
{
    return h ? h->port : 0;
}
