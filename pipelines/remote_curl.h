/* What pipelines/remote.c (the dataset's requests and listing) and
 * pipelines/fetch.c (a worker's reads) share: the settings of one request
 * and how its outcome is read. Internal to those two files. */
#ifndef PB_REMOTE_CURL_H
#define PB_REMOTE_CURL_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/base/pb.h"

struct pb_remote {
    int kind;                  /* enum pb_remote_kind                    */
    char url[PB_PATH_MAX];     /* dataset.path as given                  */
    char bucket[256];          /* S3                                     */
    char prefix[1024];         /* S3: the key prefix listed              */
    char endpoint[512];        /* scheme://host[:port], no slash at end  */
    bool path_style;           /* S3: endpoint/bucket/key, else bucket.host/key */
    char region[64];
    char sigv4[96];            /* "aws:amz:REGION:s3"; "" when unsigned  */
    char key_id[256];
    char secret[256];          /* never printed, never stored            */
    struct curl_slist *headers;/* x-amz-content-sha256, the session token */
    char credentials[192];     /* where they came from                   */
    char manifest[PB_PATH_MAX];/* HTTP: the manifest's URL               */
    char ca_file[PB_PATH_MAX];
    long timeout_ms, connect_timeout_ms;
    int retries;
};

/* How a finished attempt ended. */
enum pb_attempt {
    PB_ATTEMPT_OK,
    PB_ATTEMPT_RETRY_503,     /* 503 (S3's SlowDown) or 429             */
    PB_ATTEMPT_RETRY_5XX,
    PB_ATTEMPT_RETRY_RESET,   /* reset, closed, truncated, refused      */
    PB_ATTEMPT_RETRY_TIMEOUT,
    PB_ATTEMPT_MISSING,       /* 404: this object's fault               */
    PB_ATTEMPT_FATAL,         /* 401/403, TLS: every request's          */
    PB_ATTEMPT_FAILED,        /* other 4xx, other curl errors           */
};

/* Classifies an attempt from curl's result and the HTTP status. */
enum pb_attempt pb_remote_classify(CURLcode rc, long status);

/* The request URL of an object's URL (s3://BUCKET/KEY, or http(s)://...),
 * the key percent-encoded; false when it does not fit. */
bool pb_remote_request_url(const struct pb_remote *r, const char *object, char *out,
                           size_t outlen);

/* Appends text to out (of outlen, *at used) percent-encoded: RFC 3986's
 * unreserved characters, and '/' with keep_slash, stay as they are. */
bool pb_remote_encode(char *out, size_t outlen, size_t *at, const char *text, bool keep_slash);

/* Copies the text of the first <tag>...</tag> in [from, to) (to NULL:
 * the end of from's string) into out, its XML entities decoded; returns
 * where it ends, or NULL when there is none. */
const char *pb_remote_xml_field(const char *from, const char *to, const char *tag, char *out,
                                size_t outlen);

/* Sets easy up for r's requests to url: signing, headers, timeouts, the
 * CA file, the error buffer (CURL_ERROR_SIZE bytes). */
void pb_remote_setup(const struct pb_remote *r, CURL *easy, const char *url, char *errbuf);

/* The sentence for a failed request of url: the status and S3's error
 * code and message from body (an XML <Error>), or curl's error, with what
 * to do where pbench knows (the credential source on 401/403, ca_file on
 * a certificate error). */
void pb_remote_explain(const struct pb_remote *r, const char *url, CURLcode rc, long status,
                       const char *errbuf, const uint8_t *body, size_t body_len, char *msg,
                       size_t msglen);

/* The backoff before attempt number attempt (1: the first retry), as
 * PB_REMOTE_BACKOFF_* in pipelines/remote.h say (engines/shared.json),
 * with the jitter drawn from seed. */
uint64_t pb_remote_backoff_ns(int attempt, uint64_t seed);

#endif
