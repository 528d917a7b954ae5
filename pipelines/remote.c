/* A dataset in object storage: its requests' settings, credentials and
 * listing (see remote.h). */
#include "pipelines/remote.h"
#include "pipelines/remote_curl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"

const char *const pb_addressing_names[] = {"auto", "path", "virtual", NULL};
const char *const pb_list_mode_names[] = {"once", "per_rank", NULL};

bool pb_remote_is_url(const char *path)
{
    return strncmp(path, "s3://", 5) == 0 || strncmp(path, "http://", 7) == 0 ||
           strncmp(path, "https://", 8) == 0;
}

/* ---- credentials ---------------------------------------------------------- */

/* Copies value (the text after '=' on an INI line, blanks trimmed). */
static void ini_value(const char *line, char *out, size_t outlen)
{
    const char *v = strchr(line, '=') + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    pb_strlcpy(out, v, outlen);
    size_t n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
        out[--n] = '\0';
}

/* Reads profile's keys from an AWS credentials file. 1: found, 0: no
 * such profile (profiles lists those there), -1: no file. */
static int read_credentials_file(struct pb_remote *r, const char *file, const char *profile,
                                 char *token, size_t tokenlen, char *profiles, size_t proflen)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return -1;
    char line[4096];
    bool in = false, found = false;
    profiles[0] = '\0';
    while (fgets(line, sizeof(line), f)) {
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (end)
                *end = '\0';
            in = strcmp(s + 1, profile) == 0;
            found |= in;
            size_t at = strlen(profiles);
            snprintf(profiles + at, proflen - at, "%s%s", at ? ", " : "", s + 1);
            continue;
        }
        if (!in || !strchr(s, '='))
            continue;
        if (strncmp(s, "aws_access_key_id", 17) == 0)
            ini_value(s, r->key_id, sizeof(r->key_id));
        else if (strncmp(s, "aws_secret_access_key", 21) == 0)
            ini_value(s, r->secret, sizeof(r->secret));
        else if (strncmp(s, "aws_session_token", 17) == 0)
            ini_value(s, token, tokenlen);
    }
    fclose(f);
    return found ? 1 : 0;
}

/* The credentials: the environment's, else the credentials file's profile
 * (dataset.profile, else $AWS_PROFILE, else default), else none. */
static int find_credentials(struct pb_remote *r, const char *profile_opt, char *token,
                            size_t tokenlen, char *msg, size_t msglen)
{
    const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
    if (id && *id && !profile_opt[0]) {
        if (!secret || !*secret) {
            snprintf(msg, msglen, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not: "
                                  "set both, or neither to use ~/.aws/credentials");
            return PB_ERR_CONFIG;
        }
        pb_strlcpy(r->key_id, id, sizeof(r->key_id));
        pb_strlcpy(r->secret, secret, sizeof(r->secret));
        const char *t = getenv("AWS_SESSION_TOKEN");
        pb_strlcpy(token, t ? t : "", tokenlen);
        snprintf(r->credentials, sizeof(r->credentials), "environment (AWS_ACCESS_KEY_ID%s)",
                 t && *t ? ", AWS_SESSION_TOKEN" : "");
        return PB_OK;
    }
    const char *profile = profile_opt[0]                              ? profile_opt
                          : getenv("AWS_PROFILE") && *getenv("AWS_PROFILE") ? getenv("AWS_PROFILE")
                                                                         : "default";
    char file[PB_PATH_MAX], shown[PB_PATH_MAX];
    const char *env_file = getenv("AWS_SHARED_CREDENTIALS_FILE"), *home = getenv("HOME");
    if (env_file && *env_file) {
        pb_strlcpy(file, env_file, sizeof(file));
        pb_strlcpy(shown, env_file, sizeof(shown));
    } else {
        snprintf(file, sizeof(file), "%s/.aws/credentials", home ? home : "");
        pb_strlcpy(shown, "~/.aws/credentials", sizeof(shown));
    }
    char profiles[512];
    int found = read_credentials_file(r, file, profile, token, tokenlen, profiles, sizeof(profiles));
    if (found == 1 && r->key_id[0] && r->secret[0]) {
        snprintf(r->credentials, sizeof(r->credentials), "%.160s [%.24s]", shown, profile);
        return PB_OK;
    }
    if (found == 1 || (found == 0 && strcmp(profile, "default") != 0) ||
        (found == -1 && profile_opt[0])) {
        snprintf(msg, msglen,
                 found == 1    ? "profile '%s' in %s has no aws_access_key_id and "
                                 "aws_secret_access_key"
                 : found == 0 ? "profile '%s' is not in %s (profiles there: %s)"
                              : "profile '%s' was asked for, but %s cannot be read",
                 profile, shown, profiles[0] ? profiles : "none");
        return PB_ERR_CONFIG;
    }
    r->key_id[0] = r->secret[0] = token[0] = '\0';
    snprintf(r->credentials, sizeof(r->credentials),
             "none: requests are unsigned (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
             "~/.aws/credentials)");
    return PB_OK;
}

/* ---- where the objects are ------------------------------------------------- */

/* scheme://host[:port] of url into out (no path, no slash at the end). */
static bool url_origin(const char *url, char *out, size_t outlen)
{
    const char *host = strstr(url, "://");
    if (!host || host[3] == '\0' || host[3] == '/')
        return false;
    const char *end = strchr(host + 3, '/');
    size_t n = end ? (size_t)(end - url) : strlen(url);
    if (n >= outlen)
        return false;
    memcpy(out, url, n);
    out[n] = '\0';
    return true;
}

static int parse_s3(struct pb_remote *r, const struct pb_dataset_spec *spec, char *msg,
                    size_t msglen)
{
    const char *b = spec->path + 5, *slash = strchr(b, '/');
    size_t blen = slash ? (size_t)(slash - b) : strlen(b);
    if (blen == 0 || blen >= sizeof(r->bucket)) {
        snprintf(msg, msglen, "dataset.path '%s' names no bucket: write s3://BUCKET/PREFIX/",
                 spec->path);
        return PB_ERR_CONFIG;
    }
    memcpy(r->bucket, b, blen);
    r->bucket[blen] = '\0';
    pb_strlcpy(r->prefix, slash ? slash + 1 : "", sizeof(r->prefix));
    const char *region = spec->region[0]                                       ? spec->region
                         : getenv("AWS_REGION") && *getenv("AWS_REGION")         ? getenv("AWS_REGION")
                         : getenv("AWS_DEFAULT_REGION") && *getenv("AWS_DEFAULT_REGION")
                             ? getenv("AWS_DEFAULT_REGION")
                             : "us-east-1";
    pb_strlcpy(r->region, region, sizeof(r->region));
    bool dotted = strchr(r->bucket, '.') != NULL;
    if (spec->endpoint[0]) {
        if (!url_origin(spec->endpoint, r->endpoint, sizeof(r->endpoint)) ||
            (strncmp(spec->endpoint, "http://", 7) != 0 &&
             strncmp(spec->endpoint, "https://", 8) != 0)) {
            snprintf(msg, msglen, "dataset.endpoint '%s' is not an http:// or https:// URL "
                     "(e.g. http://127.0.0.1:9000)", spec->endpoint);
            return PB_ERR_CONFIG;
        }
        r->path_style = spec->addressing != PB_ADDRESSING_VIRTUAL;
        if (!r->path_style) {
            const char *host = strstr(r->endpoint, "://") + 3;
            char scheme[16];
            snprintf(scheme, sizeof(scheme), "%.*s", (int)(host - r->endpoint), r->endpoint);
            char origin[sizeof(r->endpoint)];
            snprintf(origin, sizeof(origin), "%s%s.%s", scheme, r->bucket, host);
            pb_strlcpy(r->endpoint, origin, sizeof(r->endpoint));
        }
    } else {
        /* AWS: virtual-hosted unless asked, or the bucket has a dot (TLS
         * names would not match). */
        r->path_style = spec->addressing == PB_ADDRESSING_PATH || dotted;
        if (r->path_style)
            snprintf(r->endpoint, sizeof(r->endpoint), "https://s3.%s.amazonaws.com", r->region);
        else
            snprintf(r->endpoint, sizeof(r->endpoint), "https://%s.s3.%s.amazonaws.com",
                     r->bucket, r->region);
    }
    return PB_OK;
}

static int parse_http(struct pb_remote *r, const struct pb_dataset_spec *spec, char *msg,
                      size_t msglen)
{
    if (!url_origin(spec->path, r->endpoint, sizeof(r->endpoint))) {
        snprintf(msg, msglen, "dataset.path '%s' names no host", spec->path);
        return PB_ERR_CONFIG;
    }
    size_t n = strlen(spec->path);
    bool folder = spec->path[n - 1] == '/';
    const char *manifest = spec->manifest[0] ? spec->manifest : "manifest.txt";
    if (!folder)
        pb_strlcpy(r->manifest, spec->path, sizeof(r->manifest));
    else if (pb_remote_is_url(manifest))
        pb_strlcpy(r->manifest, manifest, sizeof(r->manifest));
    else if ((size_t)snprintf(r->manifest, sizeof(r->manifest), "%s%s", spec->path, manifest) >=
             sizeof(r->manifest)) {
        snprintf(msg, msglen, "dataset.manifest: the URL is too long");
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

int pb_remote_new(const struct pb_dataset_spec *spec, struct pb_remote **out, char *msg,
                  size_t msglen)
{
    static bool curl_ready;
    if (!curl_ready) { /* the session's thread, before any worker */
        curl_global_init(CURL_GLOBAL_DEFAULT);
        curl_ready = true;
    }
    struct pb_remote *r = calloc(1, sizeof(*r));
    if (!r)
        return PB_ERR_NOMEM;
    pb_strlcpy(r->url, spec->path, sizeof(r->url));
    r->kind = strncmp(spec->path, "s3://", 5) == 0 ? PB_REMOTE_S3 : PB_REMOTE_HTTP;
    r->timeout_ms = (long)(spec->request_timeout_s * 1000.0);
    r->connect_timeout_ms = r->timeout_ms < 10000 ? r->timeout_ms : 10000;
    r->retries = (int)spec->retries;
    pb_strlcpy(r->ca_file, spec->ca_file, sizeof(r->ca_file));
    int rc = r->kind == PB_REMOTE_S3 ? parse_s3(r, spec, msg, msglen)
                                     : parse_http(r, spec, msg, msglen);
    char token[2048] = "";
    if (rc == PB_OK && r->kind == PB_REMOTE_S3)
        rc = find_credentials(r, spec->profile, token, sizeof(token), msg, msglen);
    if (rc == PB_OK && r->kind == PB_REMOTE_HTTP)
        pb_strlcpy(r->credentials, "none (http)", sizeof(r->credentials));
    if (rc == PB_OK && r->kind == PB_REMOTE_S3) {
        r->headers = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
        if (token[0]) {
            char header[2100];
            snprintf(header, sizeof(header), "x-amz-security-token: %s", token);
            r->headers = curl_slist_append(r->headers, header);
            memset(header, 0, sizeof(header));
        }
        if (r->key_id[0])
            snprintf(r->sigv4, sizeof(r->sigv4), "aws:amz:%s:s3", r->region);
    }
    memset(token, 0, sizeof(token));
    if (rc != PB_OK) {
        pb_remote_free(r);
        return rc;
    }
    *out = r;
    return PB_OK;
}

void pb_remote_free(struct pb_remote *r)
{
    if (!r)
        return;
    curl_slist_free_all(r->headers);
    memset(r->secret, 0, sizeof(r->secret));
    free(r);
}

const char *pb_remote_credentials(const struct pb_remote *r)
{
    return r->credentials;
}

const char *pb_remote_endpoint(const struct pb_remote *r)
{
    return r->endpoint;
}

/* ---- one request ----------------------------------------------------------- */

/* Appends text to out percent-encoded (RFC 3986's unreserved characters
 * and, with keep_slash, '/' stay as they are). */
bool pb_remote_encode(char *out, size_t outlen, size_t *at, const char *text, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        bool plain = isalnum(*c) || *c == '-' || *c == '_' || *c == '.' || *c == '~' ||
                     (keep_slash && *c == '/');
        if (*at + (plain ? 1 : 3) >= outlen)
            return false;
        if (plain) {
            out[(*at)++] = (char)*c;
        } else {
            out[(*at)++] = '%';
            out[(*at)++] = hex[*c >> 4];
            out[(*at)++] = hex[*c & 15];
        }
    }
    out[*at] = '\0';
    return true;
}

bool pb_remote_request_url(const struct pb_remote *r, const char *object, char *out,
                           size_t outlen)
{
    if (r->kind != PB_REMOTE_S3 || strncmp(object, "s3://", 5) != 0)
        return pb_strlcpy(out, object, outlen) < outlen;
    const char *key = strchr(object + 5, '/');
    key = key ? key + 1 : "";
    int n = r->path_style ? snprintf(out, outlen, "%s/%s/", r->endpoint, r->bucket)
                          : snprintf(out, outlen, "%s/", r->endpoint);
    if (n < 0 || (size_t)n >= outlen)
        return false;
    size_t at = (size_t)n;
    return pb_remote_encode(out, outlen, &at, key, true);
}

void pb_remote_setup(const struct pb_remote *r, CURL *easy, const char *url, char *errbuf)
{
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, r->connect_timeout_ms);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "pbench/" PB_VERSION);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    if (r->ca_file[0])
        curl_easy_setopt(easy, CURLOPT_CAINFO, r->ca_file);
    if (r->headers)
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, r->headers);
    if (r->sigv4[0]) {
        curl_easy_setopt(easy, CURLOPT_AWS_SIGV4, r->sigv4);
        curl_easy_setopt(easy, CURLOPT_USERNAME, r->key_id);
        curl_easy_setopt(easy, CURLOPT_PASSWORD, r->secret);
    }
    if (r->kind == PB_REMOTE_HTTP) {
        curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
    }
}

enum pb_attempt pb_remote_classify(CURLcode rc, long status)
{
    switch (rc) {
    case CURLE_OK:
        break;
    case CURLE_OPERATION_TIMEDOUT:
        return PB_ATTEMPT_RETRY_TIMEOUT;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_COULDNT_CONNECT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return PB_ATTEMPT_RETRY_RESET;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return PB_ATTEMPT_FATAL;
    default:
        return PB_ATTEMPT_FAILED;
    }
    if (status >= 200 && status < 300)
        return PB_ATTEMPT_OK;
    if (status == 503 || status == 429)
        return PB_ATTEMPT_RETRY_503;
    if (status >= 500)
        return PB_ATTEMPT_RETRY_5XX;
    if (status == 404 || status == 410)
        return PB_ATTEMPT_MISSING;
    if (status == 401 || status == 403)
        return PB_ATTEMPT_FATAL;
    return PB_ATTEMPT_FAILED;
}

/* XML text with its five entities and numeric references decoded, in place. */
static void xml_unescape(char *s)
{
    static const struct { const char *ent; char c; } ents[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    char *w = s;
    for (const char *p = s; *p;) {
        bool done = false;
        for (size_t i = 0; *p == '&' && !done && i < PB_ARRAY_LEN(ents); i++) {
            size_t n = strlen(ents[i].ent);
            if (strncmp(p, ents[i].ent, n) == 0) {
                *w++ = ents[i].c;
                p += n;
                done = true;
            }
        }
        if (!done && p[0] == '&' && p[1] == '#') {
            char *end;
            unsigned long c = p[2] == 'x' ? strtoul(p + 3, &end, 16) : strtoul(p + 2, &end, 10);
            if (*end == ';' && c > 0 && c < 128) {
                *w++ = (char)c;
                p = end + 1;
                done = true;
            }
        }
        if (!done)
            *w++ = *p++;
    }
    *w = '\0';
}

const char *pb_remote_xml_field(const char *from, const char *to, const char *tag, char *out,
                             size_t outlen)
{
    char open[48], close[48];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *a = strstr(from, open);
    if (!a || (to && a >= to))
        return NULL;
    a += strlen(open);
    const char *b = strstr(a, close);
    if (!b || (to && b > to))
        return NULL;
    snprintf(out, outlen, "%.*s", (int)(b - a), a);
    xml_unescape(out);
    return b + strlen(close);
}

/* The text of <tag>...</tag> in an error's body (not NUL-ended), or "". */
static void xml_text(const uint8_t *body, size_t len, const char *tag, char *out, size_t outlen)
{
    char text[1024];
    size_t n = len < sizeof(text) - 1 ? len : sizeof(text) - 1;
    if (n)
        memcpy(text, body, n);
    text[n] = '\0';
    out[0] = '\0';
    pb_remote_xml_field(text, NULL, tag, out, outlen);
}

void pb_remote_explain(const struct pb_remote *r, const char *url, CURLcode rc, long status,
                       const char *errbuf, const uint8_t *body, size_t body_len, char *msg,
                       size_t msglen)
{
    if (rc != CURLE_OK) {
        bool tls = rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CONNECT_ERROR ||
                   rc == CURLE_SSL_CACERT_BADFILE;
        snprintf(msg, msglen, "%s: %s%s", url, errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc),
                 !tls ? ""
                 : r->ca_file[0] ? " (dataset.ca_file does not vouch for the server's certificate)"
                                 : " (a private CA or a self-signed server: name its certificate "
                                   "in dataset.ca_file)");
        return;
    }
    char code[96], text[256];
    xml_text(body, body_len, "Code", code, sizeof(code));
    xml_text(body, body_len, "Message", text, sizeof(text));
    char detail[400] = "";
    if (code[0] || text[0])
        snprintf(detail, sizeof(detail), " %s%s%s", code, code[0] && text[0] ? ": " : "", text);
    if (status == 401 || status == 403)
        snprintf(msg, msglen, "%s: access denied (%ld%s); credentials: %s", url, status, detail,
                 r->credentials);
    else if (status == 404 && strcmp(code, "NoSuchBucket") == 0)
        snprintf(msg, msglen, "%s: the bucket '%s' does not exist at %s (404 NoSuchBucket)", url,
                 r->bucket, r->endpoint);
    else if (status == 404)
        snprintf(msg, msglen, "%s: 404%s: the object is missing", url,
                 detail[0] ? detail : " Not Found");
    else
        snprintf(msg, msglen, "%s: HTTP %ld%s", url, status, detail);
}

uint64_t pb_remote_backoff_ns(int attempt, uint64_t seed)
{
    int doublings = attempt < 1 ? 0 : attempt - 1;
    uint64_t base = (uint64_t)PB_REMOTE_BACKOFF_FIRST_MS * 1000000ull
                    << (doublings > 16 ? 16 : doublings);
    if (base > (uint64_t)PB_REMOTE_BACKOFF_CAP_MS * 1000000ull)
        base = (uint64_t)PB_REMOTE_BACKOFF_CAP_MS * 1000000ull;
    /* jitter_low to jitter_high of it, so retrying workers do not move in step. */
    uint64_t low = base / 100 * PB_REMOTE_BACKOFF_JITTER_LOW_PCT;
    uint64_t high = base / 100 * PB_REMOTE_BACKOFF_JITTER_HIGH_PCT;
    return low + pb_mix64(seed) % (high - low + 1);
}
