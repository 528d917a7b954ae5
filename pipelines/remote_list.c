/* Listing a dataset in object storage (see remote.h): S3's
 * ListObjectsV2, page by page, or an HTTP manifest, into the dataset
 * index (each sample's path the object's URL, with its size). */
#include "pipelines/remote.h"
#include "pipelines/remote_curl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/base/pb.h"

/* HEADs kept in flight for a manifest's objects without a size. */
#define HEADS_IN_FLIGHT 16

struct body {
    uint8_t *data;
    size_t len, cap;
};

static size_t body_write(char *p, size_t size, size_t n, void *user)
{
    struct body *b = user;
    size_t add = size * n;
    if (b->len + add + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 65536);
        while (cap < b->len + add + 1)
            cap *= 2;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown)
            return 0; /* curl stops with CURLE_WRITE_ERROR */
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, add);
    b->len += add;
    b->data[b->len] = '\0';
    return add;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* GETs url whole into b, retrying what may pass (5xx, SlowDown, resets,
 * timeouts) with backoff. PB_OK; PB_ERR_CONFIG for what the config can
 * fix (no bucket, access denied, TLS, missing); PB_ERR otherwise. */
static int get_whole(const struct pb_remote *r, CURL *easy, const char *url, struct body *b,
                     uint64_t *requests, char *msg, size_t msglen)
{
    char errbuf[CURL_ERROR_SIZE];
    for (int attempt = 0;; attempt++) {
        b->len = 0;
        errbuf[0] = '\0';
        pb_remote_setup(r, easy, url, errbuf);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, body_write);
        curl_easy_setopt(easy, CURLOPT_WRITEDATA, b);
        CURLcode rc = curl_easy_perform(easy);
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        (*requests)++;
        enum pb_attempt how = pb_remote_classify(rc, status);
        if (how == PB_ATTEMPT_OK)
            return PB_OK;
        bool retry = how >= PB_ATTEMPT_RETRY_503 && how <= PB_ATTEMPT_RETRY_TIMEOUT;
        if (!retry || attempt >= r->retries) {
            pb_remote_explain(r, url, rc, status, errbuf, b->data, b->len, msg, msglen);
            if (retry) {
                size_t n = strlen(msg);
                snprintf(msg + n, msglen - n, " (after %d attempts)", attempt + 1);
            }
            return retry || how == PB_ATTEMPT_FAILED ? PB_ERR : PB_ERR_CONFIG;
        }
        sleep_ns(pb_remote_backoff_ns(attempt + 1, (uint64_t)attempt * 7919u));
    }
}

/* ---- the objects found ---------------------------------------------------- */

struct found {
    char **names;
    uint64_t *sizes; /* UINT64_MAX: unknown yet (HEAD it) */
    size_t count, cap;
    uint64_t markers; /* "folder/" keys and hidden names left out */
};

static int found_add(struct found *f, const char *name, uint64_t size)
{
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
    f->names[f->count] = strdup(name);
    if (!f->names[f->count])
        return PB_ERR_NOMEM;
    f->sizes[f->count++] = size;
    return PB_OK;
}

static void found_free(struct found *f)
{
    for (size_t i = 0; i < f->count; i++)
        free(f->names[i]);
    free(f->names);
    free(f->sizes);
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

/* One ListObjectsV2 page's objects into f; the continuation token into
 * token ("" on the last page). */
static int parse_page(const struct pb_remote *r, const char *xml, struct found *f, char *token,
                      size_t tokenlen)
{
    char key[2048], size[32], url[PB_PATH_MAX];
    for (const char *at = strstr(xml, "<Contents>"); at; at = strstr(at, "<Contents>")) {
        const char *end = strstr(at, "</Contents>");
        if (!end)
            break;
        if (pb_remote_xml_field(at, end, "Key", key, sizeof(key)) &&
            pb_remote_xml_field(at, end, "Size", size, sizeof(size))) {
            if (!is_sample_name(key)) {
                f->markers++;
            } else {
                snprintf(url, sizeof(url), "s3://%s/%s", r->bucket, key);
                if (found_add(f, url, strtoull(size, NULL, 10)) != PB_OK)
                    return PB_ERR_NOMEM;
            }
        }
        at = end;
    }
    char truncated[16] = "";
    pb_remote_xml_field(xml, NULL, "IsTruncated", truncated, sizeof(truncated));
    token[0] = '\0';
    if (strcmp(truncated, "true") == 0)
        pb_remote_xml_field(xml, NULL, "NextContinuationToken", token, tokenlen);
    return PB_OK;
}

/* The query, its parameters in the sorted order a V4 signature wants. */
static bool list_url(const struct pb_remote *r, const char *token, char *out, size_t outlen)
{
    char enc_prefix[3 * 1024 + 1], enc_token[3 * 2048 + 1];
    size_t a = 0, b = 0;
    if (!pb_remote_encode(enc_prefix, sizeof(enc_prefix), &a, r->prefix, false) ||
        !pb_remote_encode(enc_token, sizeof(enc_token), &b, token, false))
        return false;
    int n = snprintf(out, outlen, "%s/%s?%s%s%slist-type=2&prefix=%s", r->endpoint,
                     r->path_style ? r->bucket : "", token[0] ? "continuation-token=" : "", enc_token, token[0] ? "&" : "",
                     enc_prefix);
    return n > 0 && (size_t)n < outlen;
}

static int list_s3(const struct pb_remote *r, CURL *easy, struct found *f, uint64_t *requests,
                   char *msg, size_t msglen)
{
    struct body b = {0};
    char token[2048] = "", url[PB_PATH_MAX];
    int rc = PB_OK;
    do {
        if (!list_url(r, token, url, sizeof(url))) {
            snprintf(msg, msglen, "dataset.path '%s': the listing's URL is too long", r->url);
            rc = PB_ERR_CONFIG;
            break;
        }
        rc = get_whole(r, easy, url, &b, requests, msg, msglen);
        if (rc == PB_OK && !strstr(b.data ? (char *)b.data : "", "<ListBucketResult")) {
            snprintf(msg, msglen, "%s: the answer is not an S3 listing (is dataset.endpoint an "
                     "S3 endpoint?)", url);
            rc = PB_ERR_CONFIG;
        }
        if (rc == PB_OK)
            rc = parse_page(r, (const char *)b.data, f, token, sizeof(token));
    } while (rc == PB_OK && token[0]);
    free(b.data);
    return rc;
}

/* A manifest entry's URL: whole, or relative to the manifest's folder. */
static int manifest_add(const char *manifest, const char *name, uint64_t size, struct found *f)
{
    while (name[0] == '.' && name[1] == '/')
        name += 2;
    if (!name[0])
        return PB_OK;
    if (pb_remote_is_url(name))
        return found_add(f, name, size);
    const char *slash = strrchr(manifest, '/');
    char url[PB_PATH_MAX];
    size_t at = (size_t)snprintf(url, sizeof(url), "%.*s/", (int)(slash - manifest), manifest);
    if (at >= sizeof(url) || !pb_remote_encode(url, sizeof(url), &at, name, true))
        return PB_ERR_CONFIG;
    return found_add(f, url, size);
}

/* A JSON manifest: a list of names, or of {"name": ..., "size": ...}. */
static int parse_manifest_json(const char *manifest, const char *text, struct found *f, char *msg,
                               size_t msglen)
{
    json_error_t err;
    json_t *list = json_loads(text, 0, &err);
    if (!json_is_array(list)) {
        snprintf(msg, msglen, "%s: not a JSON list of names (line %d: %s)", manifest, err.line,
                 list ? "not a list" : err.text);
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
            snprintf(msg, msglen, "%s: entry %zu has no name (a string, or {\"name\": ..., "
                     "\"size\": ...})", manifest, i + 1);
            rc = PB_ERR_CONFIG;
            break;
        }
        rc = manifest_add(manifest, name,
                          json_is_integer(size) ? (uint64_t)json_integer_value(size) : UINT64_MAX,
                          f);
    }
    json_decref(list);
    return rc;
}

/* A text manifest: one object per line, NAME or NAME SIZE; '#' comments. */
static int parse_manifest_lines(const char *manifest, char *text, struct found *f)
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
        rc = manifest_add(manifest, line, size, f);
    }
    return rc;
}

/* HEADs the objects whose size the manifest left out; a missing one keeps
 * size 0 and is counted as a bad sample when it is read. */
static int head_sizes(const struct pb_remote *r, struct found *f, uint64_t *requests, char *msg,
                      size_t msglen)
{
    size_t unknown = 0;
    for (size_t i = 0; i < f->count; i++)
        unknown += f->sizes[i] == UINT64_MAX;
    if (!unknown)
        return PB_OK;
    struct pb_fetcher *heads;
    int rc = pb_fetcher_new(r, HEADS_IN_FLIGHT, 0, &heads, msg, msglen);
    if (rc != PB_OK)
        return rc;
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
        int one = pb_fetcher_get(heads, urls[k], NULL, 0, &got, &cost, msg, msglen);
        *requests += cost.counters[PB_FETCH_REQUESTS];
        f->sizes[which[k]] = one == PB_OK ? got : 0;
        if (one == PB_ERR)
            rc = PB_ERR_CONFIG;
    }
    free(urls);
    free(which);
    pb_fetcher_free(heads);
    return rc;
}

static int list_manifest(const struct pb_remote *r, CURL *easy, struct found *f,
                         uint64_t *requests, char *msg, size_t msglen)
{
    struct body b = {0};
    int rc = get_whole(r, easy, r->manifest, &b, requests, msg, msglen);
    if (rc == PB_OK) {
        char *text = b.data ? (char *)b.data : (char *)"";
        text += strspn(text, " \t\r\n");
        rc = text[0] == '[' ? parse_manifest_json(r->manifest, text, f, msg, msglen)
                            : parse_manifest_lines(r->manifest, text, f);
        if (rc == PB_ERR_CONFIG && !msg[0])
            snprintf(msg, msglen, "%s: a name is too long for a URL", r->manifest);
    } else if (strstr(msg, "the object is missing")) {
        snprintf(msg, msglen, "the manifest %s is missing (404): put one object name per line "
                 "there, or name it in dataset.manifest", r->manifest);
    }
    free(b.data);
    return rc == PB_OK ? head_sizes(r, f, requests, msg, msglen) : rc;
}

struct named {
    const char *name;
    uint64_t size;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
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
    if (f->markers)
        snprintf(ds->skipped, sizeof(ds->skipped),
                 "%llu %s left out (names ending in '/' or starting with '.')",
                 (unsigned long long)f->markers,
                 f->markers == 1 ? "folder marker or hidden object" : "folder markers or hidden objects");
    return PB_OK;
}

int pb_remote_list(struct pb_remote *r, struct pb_dataset *ds, struct pb_remote_listing *listing,
                   char *msg, size_t msglen)
{
    memset(listing, 0, sizeof(*listing));
    uint64_t start = pb_now_ns();
    CURL *easy = curl_easy_init();
    if (!easy) {
        snprintf(msg, msglen, "libcurl cannot make a request handle");
        return PB_ERR;
    }
    struct found f = {0};
    msg[0] = '\0';
    int rc = r->kind == PB_REMOTE_S3 ? list_s3(r, easy, &f, &listing->requests, msg, msglen)
                                     : list_manifest(r, easy, &f, &listing->requests, msg, msglen);
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
int pb_remote_dataset_open(const struct pb_dataset_spec *spec, struct pb_dataset *ds, char *msg,
                           size_t msglen)
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
    rc = pb_remote_list(r, ds, &listing, msg, msglen);
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
