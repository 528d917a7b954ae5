/* Datasets in object storage: `s3://BUCKET/PREFIX/` and
 * `http(s)://HOST/PATH/`, read with libcurl.
 *
 * pb_remote is what every request of one dataset shares: where the
 * objects are (an S3 endpoint, path-style or virtual-hosted, or an HTTP
 * folder), the credentials (the AWS environment variables, else
 * ~/.aws/credentials and its profile; requests are signed with curl's own
 * AWS Signature V4) and the request policy (timeout, retries). It never
 * prints or stores a secret: messages and results name only the source.
 *
 * The listing (pb_remote_list) is S3's ListObjectsV2, page by page, or an
 * HTTP manifest; objects whose size the manifest does not give are asked
 * with HEAD. Each sample's path is then the object's URL.
 *
 * pb_fetcher is one loader worker's reader: a curl multi handle with a
 * pool of kept-alive connections, which keeps dataset.requests_in_flight
 * objects of the batch requested ahead while the worker decodes, and
 * retries 5xx, SlowDown, resets and timeouts with exponential backoff,
 * counting each cause. */
#ifndef PB_REMOTE_H
#define PB_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decoders/sample.h"
#include "pipelines/dataset.h"

enum pb_remote_kind { PB_REMOTE_S3 = 1, PB_REMOTE_HTTP = 2 };
/* dataset.addressing: auto (path-style with an endpoint, virtual-hosted on
 * AWS), path or virtual. */
enum pb_addressing { PB_ADDRESSING_AUTO = 0, PB_ADDRESSING_PATH = 1, PB_ADDRESSING_VIRTUAL = 2 };
extern const char *const pb_addressing_names[];
/* dataset.list under MPI: rank 0 lists and broadcasts, or every rank. */
enum pb_list_mode { PB_LIST_ONCE = 0, PB_LIST_PER_RANK = 1 };
extern const char *const pb_list_mode_names[];

/* Whether a dataset.path names object storage (s3://, http://, https://). */
bool pb_remote_is_url(const char *path);

struct pb_remote;

/* Sets up the requests of the dataset spec names (its path is a URL):
 * the endpoint, addressing, region and credentials. PB_OK, or
 * PB_ERR_CONFIG with a sentence (a URL that is not one, a profile that
 * is not in the credentials file). Release with pb_remote_free. */
int pb_remote_new(const struct pb_dataset_spec *spec, struct pb_remote **out, char *msg,
                  size_t msglen);
void pb_remote_free(struct pb_remote *r);

/* Where the credentials came from, for messages and the result:
 * "environment (AWS_ACCESS_KEY_ID)", "~/.aws/credentials [default]",
 * "none: requests are unsigned"; never a secret. */
const char *pb_remote_credentials(const struct pb_remote *r);
/* The endpoint requests go to, e.g. "http://127.0.0.1:9000" or
 * "https://bucket.s3.eu-west-1.amazonaws.com". */
const char *pb_remote_endpoint(const struct pb_remote *r);

/* What listing cost. */
struct pb_remote_listing {
    uint64_t requests;  /* LIST pages, manifest GETs and HEADs            */
    uint64_t ns;        /* wall time of the whole listing                */
    uint64_t objects;
};

/* Lists the dataset into ds (paths: the objects' URLs, sorted; sizes),
 * timing it into listing. PB_OK, PB_ERR_CONFIG for what the config can
 * fix (no such bucket, access denied with the credential source, no
 * objects, a TLS certificate not trusted), PB_ERR otherwise. */
int pb_remote_list(struct pb_remote *r, struct pb_dataset *ds, struct pb_remote_listing *listing,
                   char *msg, size_t msglen);

/* pb_dataset_open for a dataset.path that is a URL: lists it (with
 * pb_remote_new and pb_remote_list) into ds, with the listing's cost and
 * the credential source. PB_OK, or an error with msg. */
int pb_remote_dataset_open(const struct pb_dataset_spec *spec, struct pb_dataset *ds, char *msg,
                           size_t msglen);

/* ---- one worker's reads ------------------------------------------------ */

/* The read stage's sub-rows and counters for a remote dataset. */
enum { PB_FETCH_CONNECT, PB_FETCH_TTFB, PB_FETCH_TRANSFER, PB_FETCH_SUBSTAGES };
extern const char *const pb_fetch_substages[];
enum {
    PB_FETCH_REQUESTS,
    PB_FETCH_RETRIES,
    PB_FETCH_RETRY_503,
    PB_FETCH_RETRY_5XX,
    PB_FETCH_RETRY_RESET,
    PB_FETCH_RETRY_TIMEOUT,
    PB_FETCH_FAILED,
    PB_FETCH_REUSED,
    PB_FETCH_COUNTERS,
};
extern const char *const pb_fetch_counters[];

/* What one object's read cost: its successful (or last) request's
 * connect (PB_SUBSTAGE_NONE when a kept connection was reused), time to
 * first byte and transfer, and the counters above. */
struct pb_fetch_cost {
    uint64_t ns[PB_FETCH_SUBSTAGES];
    uint64_t counters[PB_FETCH_COUNTERS];
};

struct pb_fetcher;

/* A reader of up to in_flight objects at once, each up to max_bytes.
 * r must outlive it. */
int pb_fetcher_new(const struct pb_remote *r, int in_flight, size_t max_bytes,
                   struct pb_fetcher **out, char *msg, size_t msglen);
void pb_fetcher_free(struct pb_fetcher *f);

/* The objects the worker will read next, in order (a batch's samples):
 * the first in_flight are requested now. urls must stay valid until they
 * are read. Replaces what was planned and not yet read. */
void pb_fetcher_plan(struct pb_fetcher *f, const char *const *urls, uint32_t n);

/* Reads url (the next planned one, or on its own) into out (cap bytes),
 * keeping the planned ones after it in flight. Returns the object's size
 * (*got; more than cap: it is larger than listed), PB_OK; PB_ERR_DATA for
 * an object that cannot be read (missing, or still failing after the
 * retries), PB_ERR for what every object would meet (access denied, TLS
 * not trusted); msg says which. */
int pb_fetcher_get(struct pb_fetcher *f, const char *url, uint8_t *out, size_t cap, size_t *got,
                   struct pb_fetch_cost *cost, char *msg, size_t msglen);

/* What C and Python both apply, described once in engines/shared.json
 * (tests/test_shared_limits.c checks these against it; the torch engine
 * reads it): the requests a worker keeps in flight, and the retry backoff,
 * first_ms doubling to cap_ms, times jitter_low..jitter_high. */
#define PB_REMOTE_REQUESTS_IN_FLIGHT_MIN 1
#define PB_REMOTE_REQUESTS_IN_FLIGHT_MAX 256
#define PB_REMOTE_BACKOFF_FIRST_MS 100
#define PB_REMOTE_BACKOFF_CAP_MS 5000
#define PB_REMOTE_BACKOFF_JITTER_LOW_PCT 50
#define PB_REMOTE_BACKOFF_JITTER_HIGH_PCT 100

#endif
