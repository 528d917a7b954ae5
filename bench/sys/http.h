/* A small read-only HTTP server for the live page and the Prometheus
 * endpoint, on libmicrohttpd (no HTTP parsing of pbench's own).
 *
 * One internal polling thread (epoll or poll, whichever libmicrohttpd
 * picks) serves every connection; it holds at most PB_HTTP_CONNECTIONS at
 * once (more are closed as they come), gives each PB_HTTP_MEMORY_BYTES for
 * its request and drops one idle for PB_HTTP_TIMEOUT_S, so many
 * connections, half-open ones and a client that never reads cannot block
 * it or grow its memory. Only GET and HEAD are answered (anything else is
 * 405, a Host header naming another site 421); what a path shows is the handler's, which never takes a file path
 * from the request. Built without libmicrohttpd (PB_HAVE_HTTP 0) pbench
 * still builds, and pb_http_start says how to get the server. */
#ifndef PB_HTTP_H
#define PB_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define PB_HTTP_CONNECTIONS 32
#define PB_HTTP_TIMEOUT_S 5
#define PB_HTTP_MEMORY_BYTES (32 * 1024)

struct pb_http;

/* A route's answer, filled by the handler; body is malloc'd and freed by the server. */
struct pb_http_reply {
    int status;               /* 200, 404, ... */
    const char *content_type; /* a static string */
    char *body;
    size_t len;
};

/* Called from the server's own thread for every GET/HEAD: path is the request's path
 * (no query), accept its Accept header or "". The handler takes its own lock. Returns PB_OK,
 * or PB_ERR_NOMEM. */
typedef int (*pb_http_handler)(void *user, const char *path, const char *accept,
                               struct pb_http_reply *out);

/* Whether this pbench was built with the server (libmicrohttpd). */
bool pb_http_available(void);

/* Serves on address "[HOST:]PORT" (HOST defaults to 127.0.0.1; PORT 0 picks a free one;
 * IPv6 in brackets: "[::1]:8080"). PB_OK, or PB_ERR_CONFIG with msg naming the address and
 * why: a bad address, a port out of range, "port 8080 on 127.0.0.1 is in use". *public is
 * set when the address is not loopback (the caller warns who can read it). Built without
 * libmicrohttpd: PB_ERR_UNAVAILABLE, msg saying to install libmicrohttpd-dev and rebuild. */
int pb_http_start(const char *address, pb_http_handler handler, void *user,
                  struct pb_http **out, bool *public, char *msg, size_t msglen);

/* "http://127.0.0.1:PORT/" with the port actually bound ("http://[::1]:PORT/" for IPv6). */
const char *pb_http_url(const struct pb_http *h);

/* The port actually bound. */
int pb_http_port(const struct pb_http *h);

/* The connections the server holds now: at most PB_HTTP_CONNECTIONS. */
unsigned pb_http_connections(const struct pb_http *h);

/* Whether a request with this Host header (NULL: none) is answered by a
 * server bound to the numeric address bound, given by the user as given
 * (a name or a number), on every interface where any: the bound address,
 * the given host, localhost, and where any an address literal or this
 * machine's name; the port is not compared. Any other Host is answered
 * 421, so a page whose name was rebound to this machine (DNS rebinding)
 * cannot read what pbench serves. */
bool pb_http_host_allowed(const char *host_header, const char *bound, const char *given,
                          bool any);

/* Stops the server: waits for its thread, closes every connection, frees h.
 * NULL is fine. */
void pb_http_stop(struct pb_http *h);

#endif
