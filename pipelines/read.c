/* The `read` stage: a sample's bytes, into the pipeline's buffer. This is
 * the I/O a DataLoader's dataset __getitem__ does before decode: a loose
 * file read whole, or a tar member read at its offset in its shard (the
 * shard kept open while a worker streams through it). dataset.cache says
 * how: through the page cache (warm), evicting what was read (cold), or
 * with O_DIRECT into an aligned buffer (direct). A dataset in object
 * storage is read through the worker's fetcher (pipelines/remote.h),
 * which keeps dataset.requests_in_flight of the batch's objects requested
 * ahead; each request's connect, time to first byte and transfer are the
 * stage's sub-rows, its retries and their causes its counters. */
#include "bench/base/pb.h"
#include "pipelines/remote.h"
#include "pipelines/stage.h"
#include "pipelines/storage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* O_DIRECT wants offsets, lengths and buffers aligned to the logical
 * block size; 4 KiB covers the devices pbench meets. */
#define DIRECT_ALIGN 4096u

struct read_opts {
    int64_t block_kib; /* bytes per read call, KiB; 0: as few calls as fit */
};

static const struct pb_opt read_opts[] = {
    {.name = "block_kib", .type = PB_OPT_INT, .offset = offsetof(struct read_opts, block_kib),
     .max = 1048576, .def = "0",
     .help = "Bytes asked of each read() call, in KiB; 0 asks for the whole file (or tar member) "
             "at once. Set it to compare with a storage benchmark's block size (fio --bs); with "
             "dataset.cache: direct it is rounded up to whole 4 KiB blocks."},
    {0},
};

struct read_state {
    size_t block_bytes; /* 0: no limit                                */
    int cache;          /* enum pb_cache_mode                         */
    /* The open shard, kept while the worker reads its members. */
    const char *open_path;
    int open_fd;
    bool open_direct;
    /* direct: the aligned buffer reads land in before the sample's copy. */
    uint8_t *bounce;
    size_t bounce_bytes;
    /* Object storage: the dataset's requests and this worker's reader. */
    struct pb_remote *remote;
    struct pb_fetcher *fetcher;
};

static void read_cleanup(void *state)
{
    struct read_state *st = state;
    if (!st)
        return;
    if (st->open_fd >= 0)
        close(st->open_fd);
    pb_fetcher_free(st->fetcher);
    pb_remote_free(st->remote);
    free(st->bounce);
    free(st);
}

/* A dataset in object storage: this worker's reader, and the request
 * timings and counters as the stage's sub-rows and counters. */
static int remote_init(struct read_state *st, const struct pb_stage_plan *in,
                       struct pb_stage_plan *out, char *msg, size_t msglen)
{
    if (st->cache != PB_CACHE_WARM) {
        snprintf(msg, msglen, "dataset.cache: %s is for local files; a dataset in object storage "
                 "('%s') is read over the network every time (leave dataset.cache out)",
                 pb_cache_mode_names[st->cache], in->dataset->path);
        return PB_ERR_CONFIG;
    }
    int rc = pb_remote_new(in->dataset, &st->remote, msg, msglen);
    if (rc == PB_OK)
        rc = pb_fetcher_new(st->remote, (int)in->dataset->requests_in_flight,
                            in->max_bytes ? in->max_bytes : 1, &st->fetcher, msg, msglen);
    out->substages = pb_fetch_substages;
    out->counters = pb_fetch_counters;
    return rc;
}

static int read_init(void **state, const void *opts, const struct pb_stage_plan *in,
                     struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                     const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder, (void)decoder_opts;
    const struct read_opts *o = opts;
    struct read_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->block_bytes = (size_t)o->block_kib * 1024;
    st->cache = in->cache;
    st->open_fd = -1;
    if (st->cache == PB_CACHE_DIRECT) {
        /* O_DIRECT reads whole blocks: a block_kib that is not one rounds up. */
        st->block_bytes = (st->block_bytes + DIRECT_ALIGN - 1) & ~(size_t)(DIRECT_ALIGN - 1);
        /* The largest sample, rounded out to whole blocks at both ends,
         * and one block more to see a file that grew. */
        st->bounce_bytes = (in->max_bytes + 3 * (size_t)DIRECT_ALIGN) & ~(size_t)(DIRECT_ALIGN - 1);
        if (posix_memalign((void **)&st->bounce, DIRECT_ALIGN, st->bounce_bytes) != 0) {
            snprintf(msg, msglen, "read: cannot allocate a %zu-byte aligned buffer for O_DIRECT",
                     st->bounce_bytes);
            free(st);
            return PB_ERR_NOMEM;
        }
    }
    *state = st;
    *out = *in; /* in.max_bytes is the largest file in the dataset */
    out->shape.dtype = PB_DTYPE_BYTES;
    if (in->dataset && pb_remote_is_url(in->dataset->path))
        return remote_init(st, in, out, msg, msglen);
    return PB_OK;
}

/* Opens path for the cache mode: O_DIRECT where it is asked for and the
 * file system takes it (*direct says whether it did). */
static int open_for(const struct read_state *st, const char *path, bool *direct)
{
    *direct = false;
    if (st->cache == PB_CACHE_DIRECT) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
        if (fd >= 0 || errno != EINVAL) {
            *direct = fd >= 0;
            return fd;
        }
    }
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Reads up to want bytes at offset into buf, in block_bytes calls. Returns
 * the bytes read (short at the end of the file) or -1 with errno. */
static ssize_t read_span(const struct read_state *st, int fd, uint8_t *buf, size_t want,
                         uint64_t offset)
{
    size_t got = 0;
    while (got < want) {
        size_t ask = want - got;
        if (st->block_bytes && ask > st->block_bytes)
            ask = st->block_bytes;
        ssize_t n = pread(fd, buf + got, ask, (off_t)(offset + got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Reads [offset, offset + want) of fd into out (at most cap bytes; want
 * SIZE_MAX: to the end of the file). With O_DIRECT the span is read
 * block-aligned into the bounce buffer and the sample's part copied out.
 * Returns the bytes the sample has, or -1 with errno. */
static ssize_t read_sample(const struct read_state *st, int fd, bool direct, uint8_t *out,
                           size_t cap, uint64_t offset, size_t want)
{
    if (!direct)
        return read_span(st, fd, out, want < cap ? want : cap, offset);
    uint64_t start = offset & ~(uint64_t)(DIRECT_ALIGN - 1);
    size_t lead = (size_t)(offset - start);
    size_t span = want == SIZE_MAX ? st->bounce_bytes
                                   : (lead + want + DIRECT_ALIGN - 1) & ~(size_t)(DIRECT_ALIGN - 1);
    if (span > st->bounce_bytes)
        span = st->bounce_bytes;
    ssize_t got = read_span(st, fd, st->bounce, span, start);
    if (got < 0)
        return -1;
    size_t have = (size_t)got > lead ? (size_t)got - lead : 0;
    if (want != SIZE_MAX && have > want)
        have = want;
    size_t copy = have < cap ? have : cap;
    memcpy(out, st->bounce + lead, copy);
    return (ssize_t)have;
}

static int member_fault(const struct pb_sample *s)
{
    static const char *const why[] = {
        [PB_MEMBER_TRUNCATED] = "the shard ends inside it (truncated tar)",
        [PB_MEMBER_NO_IMAGE] = "the sample has no image member (.jpg, .png, ...)",
        [PB_MEMBER_UNREADABLE] = "the shard cannot be read as a tar",
        [PB_MEMBER_COMPRESSED] = "the shard is compressed; pbench reads each member at its "
                                 "offset, so shards must be plain tar (decompress it: gunzip, "
                                 "unzstd, unxz)",
    };
    uint64_t fault = s->file_bytes < PB_ARRAY_LEN(why) ? s->file_bytes : PB_MEMBER_UNREADABLE;
    snprintf(s->msg, s->msglen, "%s: sample '%s': %s", s->path, s->member ? s->member : "?",
             why[fault] ? why[fault] : why[PB_MEMBER_UNREADABLE]);
    return PB_ERR_DATA;
}

/* The shard's descriptor, opened on the first of its members and kept
 * while the worker's members come from it. -1 with errno. */
static int shard_fd(struct read_state *st, const char *path, bool *direct)
{
    if (st->open_path != path) {
        if (st->open_fd >= 0)
            close(st->open_fd);
        st->open_path = NULL;
        st->open_fd = open_for(st, path, &st->open_direct);
        if (st->open_fd < 0)
            return -1;
        st->open_path = path;
    }
    *direct = st->open_direct;
    return st->open_fd;
}

/* A file that cannot be opened is a bad sample (counted, skipped under
 * run.on_error: skip), unless the process ran out of file descriptors or
 * memory: that is this machine's limit, not the file's fault, and every
 * sample after it would fail the same way, so the run stops and says
 * which limit. */
static int open_failure(struct pb_sample *s, int err)
{
    if (err == EMFILE || err == ENFILE || err == ENOMEM) {
        snprintf(s->msg, s->msglen,
                 "%s: %s: the process cannot open more files (%s); raise the limit (ulimit -n) "
                 "or lower loader.workers",
                 s->path, strerror(err), err == ENFILE ? "the system's limit" : "its own limit");
        return PB_ERR;
    }
    snprintf(s->msg, s->msglen, "%s: %s", s->path, strerror(err));
    return PB_ERR_DATA;
}

/* An object of the dataset in object storage. */
static int read_remote(struct read_state *st, struct pb_sample *s)
{
    size_t got = 0;
    struct pb_fetch_cost cost;
    int rc = pb_fetcher_get(st->fetcher, s->path, s->out, s->out_capacity, &got, &cost, s->msg,
                            s->msglen);
    for (int i = 0; i < PB_FETCH_SUBSTAGES; i++)
        s->substage_ns[i] = cost.ns[i];
    for (int i = 0; i < PB_FETCH_COUNTERS; i++)
        s->counters[i] = cost.counters[i];
    if (rc == PB_OK && got > s->out_capacity) {
        snprintf(s->msg, s->msglen, "%s: the object is larger than the %zu bytes the listing "
                 "gave: it changed since the dataset was listed", s->path, s->out_capacity);
        rc = PB_ERR_DATA;
    }
    got = rc == PB_OK ? got : 0;
    s->out_bytes = got;
    s->out_shape = (struct pb_shape){
        .dtype = PB_DTYPE_BYTES, .frames = 1, .height = 1, .width = (int32_t)got, .channels = 1};
    s->bytes_read += got;
    return rc;
}

static void read_batch_start(void *state, const char *const *paths, uint32_t count)
{
    struct read_state *st = state;
    if (st->fetcher)
        pb_fetcher_plan(st->fetcher, paths, count);
}

static int read_process(void *state, struct pb_sample *s)
{
    struct read_state *st = state;
    if (st->fetcher && s->path)
        return read_remote(st, s);
    if (!s->path) {
        snprintf(s->msg, s->msglen, "read: sample %llu has no file", (unsigned long long)s->index);
        return PB_ERR;
    }
    if (s->member && s->file_offset == PB_MEMBER_BAD)
        return member_fault(s);
    bool direct;
    int fd = s->member ? shard_fd(st, s->path, &direct) : open_for(st, s->path, &direct);
    if (fd < 0)
        return open_failure(s, errno);
    size_t want = s->member ? (size_t)s->file_bytes : SIZE_MAX;
    ssize_t got = read_sample(st, fd, direct, s->out, s->out_capacity, s->file_offset, want);
    int rc = PB_OK;
    if (got < 0) {
        snprintf(s->msg, s->msglen, "%s: %s", s->path, strerror(errno));
        rc = PB_ERR_DATA;
        got = 0;
    } else if (s->member && (size_t)got < want) {
        snprintf(s->msg, s->msglen, "%s: sample '%s': the shard ends inside it (truncated tar)",
                 s->path, s->member);
        rc = PB_ERR_DATA;
    } else if ((size_t)got > s->out_capacity ||
               (!s->member && (size_t)got == s->out_capacity &&
                read_span(st, fd, (uint8_t[1]){0}, direct ? 0 : 1, (uint64_t)got) > 0)) {
        /* The file grew past the size the dataset index recorded. */
        snprintf(s->msg, s->msglen, "%s: file grew beyond %zu bytes since the dataset was indexed",
                 s->path, s->out_capacity);
        rc = PB_ERR_DATA;
        got = (ssize_t)s->out_capacity;
    }
    if (st->cache != PB_CACHE_WARM && !direct && s->member) {
        /* Whole pages: the kernel keeps a page the range only touches. */
        uint64_t lo = s->file_offset & ~(uint64_t)(DIRECT_ALIGN - 1);
        uint64_t hi = (s->file_offset + want + DIRECT_ALIGN - 1) & ~(uint64_t)(DIRECT_ALIGN - 1);
        pb_storage_evict_range(fd, lo, hi - lo);
    } else if (st->cache != PB_CACHE_WARM && !direct) {
        pb_storage_evict_range(fd, 0, 0);
    }
    if (!s->member)
        close(fd);
    s->out_bytes = (size_t)got;
    s->out_shape = (struct pb_shape){
        .dtype = PB_DTYPE_BYTES, .frames = 1, .height = 1, .width = (int32_t)got, .channels = 1};
    s->bytes_read += (uint64_t)got;
    return rc;
}

const struct pb_stage_ops pb_stage_read = {
    .name = "read",
    .summary = "Read each sample's file (or tar member) into memory: the dataset's I/O.",
    .flags = PB_STAGE_WORKER | PB_STAGE_IO,
    .opts = read_opts,
    .opts_size = sizeof(struct read_opts),
    .init = read_init,
    .process = read_process,
    .batch_start = read_batch_start,
    .cleanup = read_cleanup,
};
