/* Listing a dataset in object storage (see remote.h): S3's
 * ListObjectsV2, page by page, or an HTTP manifest, into the dataset
 * index (each sample's path the object's URL, with its size). */
#include "pipelines/remote.h"
#include "pipelines/remote_curl.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/base/pb.h"
#include "bench/base/userinfo.h"

/* HEADs kept in flight for a manifest's objects without a size. */
#define HEADS_IN_FLIGHT 16
/* The most one ListObjectsV2 page may be: 1,000 keys of 1,024 bytes, their
 * XML and entities, are well under it. */
#define PAGE_MAX_BYTES (16u << 20)
/* Pages in a row that list nothing and say there is more: a store that
 * goes round, and not a listing. */
#define EMPTY_PAGES_MAX 1000
/* What one name costs the listing beyond its text: the found list's
 * pointer and size, the allocator's overhead. */
#define NAME_OVERHEAD_BYTES 32

/* The objects found so far, and what the listing said beside them. */
struct found {
    char **names;
    uint64_t *sizes;     /* UINT64_MAX: unknown yet (HEAD it)                 */
    size_t count, cap;
    uint64_t bytes;      /* the memory they hold, against max_bytes           */
    uint64_t max_bytes;  /* dataset.list_max_mib                              */
    uint64_t markers;    /* "folder/" keys and hidden names left out          */
    uint64_t malformed;  /* <Contents> without a Key or a Size                */
    uint64_t too_long;   /* keys too long for pbench's paths: left out, not cut */
    char notes[PB_MSG_MAX / 2]; /* what else a warning should say             */
};

/* One listing: its request handle, the stop flag it honours, what it has
 * found so far and what it cost. */
struct lister {
    struct pb_remote *r;
    CURL *easy;
    volatile sig_atomic_t *stop;
    uint64_t *requests;
    struct found *f;
    char *msg;
    size_t msglen;
};

struct body {
    uint8_t *data;
    size_t len, cap;
    size_t limit;       /* the most it may hold (a page, a manifest)         */
    bool text;          /* a manifest: a NUL byte says it is none            */
    bool too_large;     /* stopped at limit                                  */
    int64_t binary_at;  /* where the NUL byte was; -1: none                  */
};

static size_t body_write(char *p, size_t size, size_t n, void *user)
{
    struct body *b = user;
    size_t add = size * n;
    const char *nul = b->text ? memchr(p, '\0', add) : NULL;
    if (nul) {
        b->binary_at = (int64_t)(b->len + (size_t)(nul - p));
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    if (b->len + add > b->limit) {
        b->too_large = true;
        return 0;
    }
    if (b->len + add + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 65536);
        while (cap < b->len + add + 1)
            cap *= 2;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown)
            return 0;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, add);
    b->len += add;
    b->data[b->len] = '\0';
    return add;
}

static bool stopped(const struct lister *l)
{
    return l->stop && *l->stop;
}

/* curl asks this about once a second, and more often while bytes arrive:
 * non-zero stops the transfer (CURLE_ABORTED_BY_CALLBACK). */
static int keep_going(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                      curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const struct lister *l = user;
    return stopped(l) ? 1 : 0;
}

/* Sleeps ns, in slices, until the stop flag is raised. */
static void sleep_unless_stopped(const struct lister *l, uint64_t ns)
{
    uint64_t end = pb_now_ns() + ns;
    for (uint64_t now = pb_now_ns(); now < end && !stopped(l); now = pb_now_ns()) {
        uint64_t slice = end - now < 50000000u ? end - now : 50000000u;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)slice};
        nanosleep(&ts, NULL);
    }
}

/* The sentence and code of a listing a stop signal ended. */
static int interrupted(const struct lister *l)
{
    snprintf(l->msg, l->msglen, "interrupted while listing %s, after %llu requests and %zu "
             "objects: nothing was measured, no result written", l->r->url,
             (unsigned long long)*l->requests, l->f->count);
    return PB_ERR_INTERRUPTED;
}

/* GETs url whole into b (at most b->limit bytes), retrying what may pass
 * (5xx, SlowDown, resets, timeouts) with backoff. PB_OK; PB_ERR_CONFIG
 * for what the config can fix (no bucket, access denied, TLS, missing, an
 * answer over b->limit or not text where text was asked: b says which);
 * PB_ERR_INTERRUPTED once the stop flag is raised; PB_ERR otherwise. */
static int get_whole(const struct lister *l, const char *url, struct body *b)
{
    char errbuf[CURL_ERROR_SIZE];
    for (int attempt = 0;; attempt++) {
        if (stopped(l))
            return interrupted(l);
        b->len = 0;
        b->too_large = false;
        b->binary_at = -1;
        errbuf[0] = '\0';
        pb_remote_setup(l->r, l->easy, url, errbuf);
        curl_easy_setopt(l->easy, CURLOPT_WRITEFUNCTION, body_write);
        curl_easy_setopt(l->easy, CURLOPT_WRITEDATA, b);
        curl_easy_setopt(l->easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)b->limit);
        curl_easy_setopt(l->easy, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(l->easy, CURLOPT_XFERINFOFUNCTION, keep_going);
        curl_easy_setopt(l->easy, CURLOPT_XFERINFODATA, l);
        CURLcode rc = curl_easy_perform(l->easy);
        long status = 0;
        curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &status);
        (*l->requests)++;
        if (stopped(l))
            return interrupted(l);
        if (rc == CURLE_FILESIZE_EXCEEDED)
            b->too_large = true;
        if (b->too_large || b->binary_at >= 0) {
            snprintf(l->msg, l->msglen, "%s: %s", url, b->too_large ? "the answer is too large"
                                                                     : "the answer is not text");
            return PB_ERR_CONFIG;
        }
        enum pb_attempt how = pb_remote_classify(rc, status);
        if (how == PB_ATTEMPT_OK)
            return PB_OK;
        bool retry = how >= PB_ATTEMPT_RETRY_503 && how <= PB_ATTEMPT_RETRY_TIMEOUT;
        if (!retry || attempt >= l->r->retries) {
            char *location = NULL;
            curl_easy_getinfo(l->easy, CURLINFO_REDIRECT_URL, &location);
            pb_remote_explain(l->r, url, rc, status, errbuf, location, b->data, b->len, l->msg,
                              l->msglen);
            if (retry) {
                size_t n = strlen(l->msg);
                snprintf(l->msg + n, l->msglen - n, " (after %d attempts)", attempt + 1);
            }
            return retry || how == PB_ATTEMPT_FAILED ? PB_ERR : PB_ERR_CONFIG;
        }
        sleep_unless_stopped(l, pb_remote_backoff_ns(attempt + 1, (uint64_t)attempt * 7919u));
    }
}

/* ---- the objects found ---------------------------------------------------- */

/* PB_OK; PB_ERR_NOSPACE past f->max_bytes (listing_full says so). */
static int found_add(struct found *f, const char *name, uint64_t size)
{
    size_t len = strlen(name) + 1;
    if (f->bytes + len + NAME_OVERHEAD_BYTES > f->max_bytes)
        return PB_ERR_NOSPACE;
    if (f->count == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 1024;
        char **names = realloc(f->names, cap * sizeof(*names));
        if (names)
            f->names = names;
        uint64_t *sizes = realloc(f->sizes, cap * sizeof(*sizes));
        if (sizes)
            f->sizes = sizes;
        if (!names || !sizes)
            return PB_ERR_NOMEM;
        f->cap = cap;
    }
    f->names[f->count] = malloc(len);
    if (!f->names[f->count])
        return PB_ERR_NOMEM;
    memcpy(f->names[f->count], name, len);
    f->sizes[f->count++] = size;
    f->bytes += len + NAME_OVERHEAD_BYTES;
    return PB_OK;
}

static void found_free(struct found *f)
{
    for (size_t i = 0; i < f->count; i++)
        free(f->names[i]);
    free(f->names);
    free(f->sizes);
}

/* The sentence for a found_add that failed. */
static int listing_full(const struct lister *l, int rc)
{
    if (rc == PB_ERR_NOSPACE) {
        snprintf(l->msg, l->msglen, "the listing of %s holds more than dataset.list_max_mib "
                 "(%llu MiB) after %zu objects: raise it for a dataset this large, or list "
                 "a narrower prefix", l->r->url,
                 (unsigned long long)(l->f->max_bytes >> 20), l->f->count);
        return PB_ERR_CONFIG;
    }
    if (rc == PB_ERR_NOMEM)
        snprintf(l->msg, l->msglen, "out of memory listing %s after %zu objects", l->r->url,
                 l->f->count);
    return rc;
}

/* Appends a sentence to the warning the listing leaves (once each). */
static void note(struct found *f, const char *text)
{
    if (strstr(f->notes, text))
        return;
    size_t n = strlen(f->notes);
    snprintf(f->notes + n, sizeof(f->notes) - n, "%s%s", n ? "; " : "", text);
}

/* Whether a listed name is a sample: not a folder marker ("x/"), not
 * hidden (a basename starting with '.'), as the local walk leaves out. */
static bool is_sample_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || name[n - 1] == '/')
        return false;
    const char *base = strrchr(name, '/');
    return (base ? base[1] : name[0]) != '.';
}

/* ---- S3's ListObjectsV2 -------------------------------------------------- */

/* What one page said beyond its objects. */
struct page {
    bool truncated;           /* IsTruncated: more pages follow             */
    char token[2048];         /* NextContinuationToken, "" when none        */
    char first[PB_PATH_MAX];  /* its first and last keys, "" when it had none */
    char last[PB_PATH_MAX];
    size_t keys;
};

/* One <Contents> of a page into l->f (a sample, a marker, or left out). */
static int page_entry(const struct lister *l, const char *at, const char *end, struct page *p)
{
    char key[PB_PATH_MAX], url[PB_PATH_MAX], size[32];
    bool key_cut = false;
    if (!pb_remote_xml_field(at, end, "Key", key, sizeof(key), &key_cut) ||
        !pb_remote_xml_field(at, end, "Size", size, sizeof(size), NULL)) {
        l->f->malformed++;
        return PB_OK;
    }
    if (!key_cut) {
        if (!p->keys++)
            pb_strlcpy(p->first, key, sizeof(p->first));
        pb_strlcpy(p->last, key, sizeof(p->last));
    }
    if (!is_sample_name(key)) {
        l->f->markers++;
        return PB_OK;
    }
    /* A key that does not fit is left out, never cut into another key. */
    if (key_cut || (size_t)snprintf(url, sizeof(url), "s3://%s/%s", l->r->bucket, key) >=
                       sizeof(url)) {
        l->f->too_long++;
        return PB_OK;
    }
    int rc = found_add(l->f, url, strtoull(size, NULL, 10));
    return rc == PB_OK ? PB_OK : listing_full(l, rc);
}

/* One ListObjectsV2 page's objects into l->f, and what it said into p. */
static int parse_page(const struct lister *l, const char *xml, struct page *p)
{
    p->truncated = false;
    p->token[0] = p->first[0] = p->last[0] = '\0';
    p->keys = 0;
    for (const char *at = strstr(xml, "<Contents>"); at; at = strstr(at, "<Contents>")) {
        const char *end = strstr(at, "</Contents>");
        if (!end) {
            l->f->malformed++;
            break;
        }
        int rc = page_entry(l, at, end, p);
        if (rc != PB_OK)
            return rc;
        at = end;
    }
    char truncated[16] = "";
    bool cut = false;
    pb_remote_xml_field(xml, NULL, "IsTruncated", truncated, sizeof(truncated), NULL);
    p->truncated = strcmp(truncated, "true") == 0;
    if (p->truncated)
        pb_remote_xml_field(xml, NULL, "NextContinuationToken", p->token, sizeof(p->token), &cut);
    if (cut) {
        snprintf(l->msg, l->msglen, "%s: the store's continuation token is longer than %zu "
                 "bytes: pbench cannot go on with the listing", l->r->url, sizeof(p->token) - 1);
        return PB_ERR;
    }
    return PB_OK;
}

/* The query, its parameters in the sorted order a V4 signature wants. */
static bool list_url(const struct pb_remote *r, const char *token, const char *after, char *out,
                     size_t outlen)
{
    char enc_prefix[3 * 1024 + 1], enc_token[3 * 2048 + 1], enc_after[3 * PB_PATH_MAX + 1];
    size_t a = 0, b = 0, c = 0;
    if (!pb_remote_encode(enc_prefix, sizeof(enc_prefix), &a, r->prefix, false) ||
        !pb_remote_encode(enc_token, sizeof(enc_token), &b, token, false) ||
        !pb_remote_encode(enc_after, sizeof(enc_after), &c, after, false))
        return false;
    int n = snprintf(out, outlen, "%s/%s?%s%s%slist-type=2&prefix=%s%s%s", r->endpoint,
                     r->path_style ? r->bucket : "", token[0] ? "continuation-token=" : "",
                     enc_token, token[0] ? "&" : "", enc_prefix, after[0] ? "&start-after=" : "",
                     enc_after);
    return n > 0 && (size_t)n < outlen;
}

/* GETs one listing page whole: an S3 listing, and all of it (a page cut
 * short, without its closing tag, is asked again as a truncated body is). */
static int get_page(const struct lister *l, const char *url, struct body *b)
{
    for (int attempt = 0;; attempt++) {
        int rc = get_whole(l, url, b);
        const char *xml = b->data ? (const char *)b->data : "";
        if (rc == PB_ERR_CONFIG && b->too_large)
            snprintf(l->msg, l->msglen, "%s: a listing page larger than %u MiB: not an S3 "
                     "listing (is dataset.endpoint an S3 endpoint?)", url, PAGE_MAX_BYTES >> 20);
        if (rc != PB_OK)
            return rc;
        if (!strstr(xml, "<ListBucketResult")) {
            snprintf(l->msg, l->msglen, "%s: the answer is not an S3 listing (is "
                     "dataset.endpoint an S3 endpoint?)", url);
            return PB_ERR_CONFIG;
        }
        if (strstr(xml, "</ListBucketResult>"))
            return PB_OK;
        if (attempt >= l->r->retries) {
            snprintf(l->msg, l->msglen, "%s: the listing page ends before </ListBucketResult> "
                     "(%zu bytes; after %d attempts): the store cut it short, so pbench would "
                     "list only part of the dataset", url, b->len, attempt + 1);
            return PB_ERR;
        }
        sleep_unless_stopped(l, pb_remote_backoff_ns(attempt + 1, (uint64_t)attempt * 104729u));
    }
}

/* Where the next page starts: the continuation token, or (a store that
 * says IsTruncated without one) after the page's last key. An error where
 * the listing would go round: the same token again, a page that starts at
 * or before where the last one ended (S3 lists keys in order), or pages
 * that say there is more and list nothing. */
static int next_page(const struct lister *l, const struct page *p, uint64_t number,
                     const char *prev_last, char *token, char *after, int *empty)
{
    const char *url = l->r->url;
    if (p->keys && prev_last[0] && strcmp(p->first, prev_last) <= 0) {
        snprintf(l->msg, l->msglen, "%s: page %llu of the listing starts at '%.200s', at or "
                 "before the last page's end ('%.200s'): the store's listing goes round, so "
                 "pbench stops rather than list forever", url, (unsigned long long)number,
                 p->first, prev_last);
        return PB_ERR;
    }
    *empty = p->keys ? 0 : *empty + 1;
    if (*empty >= EMPTY_PAGES_MAX) {
        snprintf(l->msg, l->msglen, "%s: %d pages in a row listed nothing and said there is "
                 "more: the store's listing does not end", url, EMPTY_PAGES_MAX);
        return PB_ERR;
    }
    if (p->token[0]) {
        if (strcmp(p->token, token) == 0) {
            snprintf(l->msg, l->msglen, "%s: page %llu of the listing gave the continuation "
                     "token it was asked with: the store's listing does not end, so pbench "
                     "stops rather than list forever", url, (unsigned long long)number);
            return PB_ERR;
        }
        pb_strlcpy(token, p->token, 2048);
        after[0] = '\0';
        return PB_OK;
    }
    if (!p->last[0]) {
        snprintf(l->msg, l->msglen, "%s: page %llu of the listing says IsTruncated but gives "
                 "no NextContinuationToken and no key to go on after: pbench cannot list the "
                 "rest", url, (unsigned long long)number);
        return PB_ERR;
    }
    note(l->f, "the store said IsTruncated without a NextContinuationToken; pbench went on "
               "after each page's last key (start-after)");
    token[0] = '\0';
    pb_strlcpy(after, p->last, PB_PATH_MAX);
    return PB_OK;
}

static int list_s3(const struct lister *l)
{
    struct body b = {.limit = PAGE_MAX_BYTES};
    struct page *p = malloc(sizeof(*p));
    char *token = calloc(1, 2048), *after = calloc(1, PB_PATH_MAX),
         *prev_last = calloc(1, PB_PATH_MAX), *url = malloc(PB_PATH_MAX * 4);
    int rc = p && token && after && prev_last && url ? PB_OK : PB_ERR_NOMEM;
    int empty = 0;
    for (uint64_t number = 1; rc == PB_OK; number++) {
        if (!list_url(l->r, token, after, url, PB_PATH_MAX * 4)) {
            snprintf(l->msg, l->msglen, "dataset.path '%s': the listing's URL is too long",
                     l->r->url);
            rc = PB_ERR_CONFIG;
            break;
        }
        rc = get_page(l, url, &b);
        if (rc == PB_OK)
            rc = parse_page(l, (const char *)b.data, p);
        if (rc != PB_OK || !p->truncated)
            break;
        rc = next_page(l, p, number, prev_last, token, after, &empty);
        if (p->last[0])
            pb_strlcpy(prev_last, p->last, PB_PATH_MAX);
    }
    free(b.data);
    free(p);
    free(token);
    free(after);
    free(prev_last);
    free(url);
    return rc;
}

/* ---- HTTP manifests ------------------------------------------------------- */

/* A manifest entry's URL: whole, or relative to the manifest's folder. A
 * user and password a whole URL carries are taken out and kept for its
 * origin, as the config's are. */
static int manifest_add(const struct lister *l, const char *name, uint64_t size)
{
    char url[PB_PATH_MAX];
    const char *manifest = l->r->manifest;
    while (name[0] == '.' && name[1] == '/')
        name += 2;
    if (!name[0])
        return PB_OK;
    int rc;
    if (pb_remote_is_url(name)) {
        if (pb_strlcpy(url, name, sizeof(url)) >= sizeof(url))
            return PB_ERR_CONFIG;
        if (pb_userinfo_take(url, "the manifest"))
            pb_remote_keep_auth(l->r, url, NULL);
        rc = found_add(l->f, url, size);
    } else {
        const char *slash = strrchr(manifest, '/');
        size_t at = (size_t)snprintf(url, sizeof(url), "%.*s/", (int)(slash - manifest), manifest);
        if (at >= sizeof(url) || !pb_remote_encode(url, sizeof(url), &at, name, true))
            return PB_ERR_CONFIG;
        rc = found_add(l->f, url, size);
    }
    return rc == PB_OK ? PB_OK : listing_full(l, rc);
}

/* A JSON manifest: a list of names, or of {"name": ..., "size": ...}. */
static int parse_manifest_json(const struct lister *l, const char *text)
{
    const char *manifest = l->r->manifest;
    json_error_t err;
    json_t *list = json_loads(text, 0, &err);
    if (!json_is_array(list)) {
        snprintf(l->msg, l->msglen, "%s: not a JSON list of names (line %d: %s)", manifest,
                 err.line, list ? "not a list" : err.text);
        json_decref(list);
        return PB_ERR_CONFIG;
    }
    int rc = PB_OK;
    for (size_t i = 0; rc == PB_OK && i < json_array_size(list); i++) {
        json_t *e = json_array_get(list, i);
        const char *name = json_is_string(e) ? json_string_value(e)
                                             : json_string_value(json_object_get(e, "name"));
        json_t *size = json_is_object(e) ? json_object_get(e, "size") : NULL;
        if (!name) {
            snprintf(l->msg, l->msglen, "%s: entry %zu has no name (a string, or {\"name\": "
                     "..., \"size\": ...})", manifest, i + 1);
            rc = PB_ERR_CONFIG;
            break;
        }
        rc = manifest_add(l, name,
                          json_is_integer(size) ? (uint64_t)json_integer_value(size) : UINT64_MAX);
    }
    json_decref(list);
    return rc;
}

/* A text manifest: one object per line, NAME or NAME SIZE; '#' comments. */
static int parse_manifest_lines(const struct lister *l, char *text)
{
    int rc = PB_OK;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); rc == PB_OK && line;
         line = strtok_r(NULL, "\n", &save)) {
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
            line[--n] = '\0';
        while (*line == ' ' || *line == '\t')
            line++;
        if (!*line || *line == '#')
            continue;
        uint64_t size = UINT64_MAX;
        char *space = strrchr(line, ' ');
        if (!space)
            space = strrchr(line, '\t');
        if (space && space[1] && strspn(space + 1, "0123456789") == strlen(space + 1)) {
            size = strtoull(space + 1, NULL, 10);
            *space = '\0';
        }
        rc = manifest_add(l, line, size);
    }
    return rc;
}

/* HEADs the objects whose size the manifest left out; a missing one keeps
 * size 0 and is counted as a bad sample when it is read. */
static int head_sizes(const struct lister *l)
{
    struct found *f = l->f;
    size_t unknown = 0;
    for (size_t i = 0; i < f->count; i++)
        unknown += f->sizes[i] == UINT64_MAX;
    if (!unknown)
        return PB_OK;
    struct pb_fetcher *heads;
    int rc = pb_fetcher_new(l->r, HEADS_IN_FLIGHT, 0, &heads, l->msg, l->msglen);
    if (rc != PB_OK)
        return rc;
    pb_fetcher_watch_stop(heads, l->stop);
    const char **urls = malloc(unknown * sizeof(*urls));
    size_t *which = malloc(unknown * sizeof(*which));
    if (!urls || !which)
        rc = PB_ERR_NOMEM;
    for (size_t i = 0, k = 0; rc == PB_OK && i < f->count; i++) {
        if (f->sizes[i] == UINT64_MAX) {
            which[k] = i;
            urls[k++] = f->names[i];
        }
    }
    if (rc == PB_OK)
        pb_fetcher_plan(heads, urls, (uint32_t)unknown);
    for (size_t k = 0; rc == PB_OK && k < unknown; k++) {
        size_t got = 0;
        struct pb_fetch_cost cost = {0};
        int one = pb_fetcher_get(heads, urls[k], NULL, 0, &got, &cost, l->msg, l->msglen);
        *l->requests += cost.counters[PB_FETCH_REQUESTS];
        f->sizes[which[k]] = one == PB_OK ? got : 0;
        if (stopped(l))
            rc = interrupted(l);
        else if (one == PB_ERR)
            rc = PB_ERR_CONFIG;
    }
    free(urls);
    free(which);
    pb_fetcher_free(heads);
    return rc;
}

/* The sentence for a manifest that cannot be one: too large, or binary. */
static void not_a_manifest(const struct lister *l, const struct body *b)
{
    const struct pb_remote *r = l->r;
    const char *hint = r->manifest_is_path
                           ? ": dataset.path names a file, which pbench reads as the manifest; "
                             "a folder's URL ends with '/'"
                           : "";
    if (b->too_large)
        snprintf(l->msg, l->msglen, "the manifest %s is larger than dataset.list_max_mib "
                 "(%llu MiB)%s", r->manifest, (unsigned long long)(b->limit >> 20),
                 hint[0] ? hint : ": raise it for a manifest that large");
    else
        snprintf(l->msg, l->msglen, "%s is not a manifest: byte %lld is a NUL, as in binary "
                 "data, not a list of names%s", r->manifest, (long long)b->binary_at, hint);
}

static int list_manifest(const struct lister *l)
{
    struct body b = {.limit = l->f->max_bytes, .text = true};
    int rc = get_whole(l, l->r->manifest, &b);
    if (rc == PB_OK) {
        /* What the manifest holds counts against the listing's memory too. */
        l->f->bytes += b.cap;
        char *text = b.data ? (char *)b.data : (char *)"";
        text += strspn(text, " \t\r\n");
        rc = text[0] == '[' ? parse_manifest_json(l, text) : parse_manifest_lines(l, text);
        if (rc == PB_ERR_CONFIG && !l->msg[0])
            snprintf(l->msg, l->msglen, "%s: a name is too long for a URL", l->r->manifest);
    } else if (rc == PB_ERR_CONFIG && (b.too_large || b.binary_at >= 0)) {
        not_a_manifest(l, &b);
    } else if (strstr(l->msg, "the object is missing")) {
        snprintf(l->msg, l->msglen, "the manifest %s is missing (404): put one object name per "
                 "line there, or name it in dataset.manifest", l->r->manifest);
    }
    free(b.data);
    return rc == PB_OK ? head_sizes(l) : rc;
}

/* ---- the index -------------------------------------------------------------- */

struct named {
    const char *name;
    uint64_t size;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
}

/* What the listing left out and why, for the point's warning. */
static void describe_left_out(const struct found *f, char *out, size_t outlen)
{
    size_t n = 0;
    out[0] = '\0';
    if (f->markers)
        n += (size_t)snprintf(out + n, outlen - n,
                              "%llu %s left out (names ending in '/' or starting with '.')",
                              (unsigned long long)f->markers,
                              f->markers == 1 ? "folder marker or hidden object"
                                              : "folder markers or hidden objects");
    if (f->too_long && n < outlen)
        n += (size_t)snprintf(out + n, outlen - n, "%s%llu %s left out: longer than pbench's "
                              "paths (%d bytes)", n ? "; " : "", (unsigned long long)f->too_long,
                              f->too_long == 1 ? "key" : "keys", PB_PATH_MAX - 1);
    if (f->malformed && n < outlen)
        n += (size_t)snprintf(out + n, outlen - n, "%s%llu listing %s without a Key or a Size "
                              "left out", n ? "; " : "", (unsigned long long)f->malformed,
                              f->malformed == 1 ? "entry" : "entries");
    if (f->notes[0] && n < outlen)
        snprintf(out + n, outlen - n, "%s%s", n ? "; " : "", f->notes);
}

/* The found objects into ds, sorted by URL as the local index is. */
static int fill_index(struct found *f, struct pb_dataset *ds, char *msg, size_t msglen)
{
    struct named *order = malloc(f->count * sizeof(*order));
    size_t arena = 0;
    for (size_t i = 0; i < f->count; i++)
        arena += strlen(f->names[i]) + 1;
    ds->arena = malloc(arena ? arena : 1);
    ds->paths = malloc(f->count * sizeof(*ds->paths));
    ds->sizes = malloc(f->count * sizeof(*ds->sizes));
    if (!order || !ds->arena || !ds->paths || !ds->sizes) {
        free(order);
        snprintf(msg, msglen, "out of memory indexing %zu objects", f->count);
        return PB_ERR_NOMEM;
    }
    for (size_t i = 0; i < f->count; i++)
        order[i] = (struct named){f->names[i], f->sizes[i]};
    qsort(order, f->count, sizeof(*order), by_name);
    char *at = ds->arena;
    for (size_t i = 0; i < f->count; i++) {
        size_t len = strlen(order[i].name) + 1;
        memcpy(at, order[i].name, len);
        ds->paths[i] = at;
        at += len;
        ds->sizes[i] = order[i].size;
        ds->total_bytes += order[i].size;
        if (order[i].size > ds->max_bytes) {
            ds->max_bytes = order[i].size;
            ds->max_index = i;
        }
    }
    free(order);
    ds->count = f->count;
    describe_left_out(f, ds->skipped, sizeof(ds->skipped));
    return PB_OK;
}

int pb_remote_list(struct pb_remote *r, volatile sig_atomic_t *stop, struct pb_dataset *ds,
                   struct pb_remote_listing *listing, char *msg, size_t msglen)
{
    memset(listing, 0, sizeof(*listing));
    uint64_t start = pb_now_ns();
    CURL *easy = curl_easy_init();
    if (!easy) {
        snprintf(msg, msglen, "libcurl cannot make a request handle");
        return PB_ERR;
    }
    struct found f = {.max_bytes = r->list_max_bytes};
    struct lister l = {.r = r, .easy = easy, .stop = stop, .requests = &listing->requests,
                       .f = &f, .msg = msg, .msglen = msglen};
    msg[0] = '\0';
    int rc = r->kind == PB_REMOTE_S3 ? list_s3(&l) : list_manifest(&l);
    curl_easy_cleanup(easy);
    if (rc == PB_OK && f.count == 0) {
        snprintf(msg, msglen, "dataset.path '%s' holds no objects%s%s", r->url,
                 f.markers ? " (only folder markers or hidden names)" : "",
                 r->kind == PB_REMOTE_S3 && r->prefix[0] && r->prefix[strlen(r->prefix) - 1] != '/'
                     ? "; a prefix that names a folder ends with '/'"
                     : "");
        rc = PB_ERR_CONFIG;
    }
    if (rc == PB_OK)
        rc = fill_index(&f, ds, msg, msglen);
    found_free(&f);
    listing->ns = pb_now_ns() - start;
    listing->objects = ds->count;
    return rc;
}

/* A dataset in object storage: listed, its paths the objects' URLs. */
int pb_remote_dataset_open(const struct pb_dataset_spec *spec, volatile sig_atomic_t *stop,
                           struct pb_dataset *ds, char *msg, size_t msglen)
{
    memset(ds, 0, sizeof(*ds));
    if (spec->format == PB_FORMAT_TAR) {
        snprintf(msg, msglen, "dataset.format: tar is not read from object storage yet "
                 "(dataset.path '%s'): copy the shards to a local folder, or store the "
                 "samples as objects of their own", spec->path);
        return PB_ERR_CONFIG;
    }
    struct pb_remote *r;
    int rc = pb_remote_new(spec, &r, msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct pb_remote_listing listing;
    rc = pb_remote_list(r, stop, ds, &listing, msg, msglen);
    ds->remote = true;
    ds->list_requests = listing.requests;
    ds->list_ns = listing.ns;
    pb_strlcpy(ds->credentials, pb_remote_credentials(r), sizeof(ds->credentials));
    pb_strlcpy(ds->endpoint, pb_remote_endpoint(r), sizeof(ds->endpoint));
    pb_remote_free(r);
    if (rc != PB_OK)
        pb_dataset_free(ds);
    return rc;
}
