/* WebDataset tar shards, read: the index (libarchive walks and checks
 * each shard; a member's data offset comes from its header position, so
 * the read stage does one pread per sample into the pipeline's buffer)
 * and the sampler's stream order (each worker reads its run of the shard
 * stream in order, shuffled within a window as WebDataset's shuffle(N)).
 * The shard writer is pipelines/tar_write.c. */
#include "pipelines/dataset.h"

#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench/base/pb.h"

size_t pb_dataset_storage_files(const struct pb_dataset *ds, char *const **paths,
                                const uint64_t **sizes)
{
    if (ds->offsets) {
        *paths = ds->shard_paths;
        *sizes = ds->shard_sizes;
        return ds->shard_count;
    }
    *paths = ds->paths;
    *sizes = ds->sizes;
    return ds->count;
}

/* ---- index ------------------------------------------------------------ */

struct tar_sample {
    uint64_t shard, offset, size; /* offset PB_MEMBER_BAD: size is the fault */
    size_t key_at;                /* into the key text                      */
};

struct tar_index {
    struct tar_sample *items;
    size_t count, cap;
    char *keys;
    size_t keys_used, keys_cap;
    /* The group being gathered: members sharing a key. */
    char key[PB_PATH_MAX];
    bool open, has_image, truncated;
    uint64_t offset, size;
    /* Members that are not regular files nor folders (links, devices,
     * FIFOs): left out, counted, the first named. */
    uint64_t odd_members;
    char first_odd[PB_PATH_MAX];
};

/* The members a decoder can read (decoders/jpeg.c, decoders/image_av.c):
 * a sample whose only picture is in another format (TIFF, PNM) has no
 * image member, said at its index rather than at a decode that fails. */
static bool is_image_extension(const char *ext)
{
    static const char *const images[] = {"jpg", "jpeg", "png", "bmp", "webp"};
    const char *last = strrchr(ext, '.');
    last = last ? last + 1 : ext;
    for (size_t i = 0; i < PB_ARRAY_LEN(images); i++)
        if (strcasecmp(last, images[i]) == 0)
            return true;
    return false;
}

/* WebDataset's key: the member's path up to the first dot of its base
 * name; ext points past that dot ("" when there is none). */
static void split_key(const char *name, char *key, size_t keylen, const char **ext)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strchr(base, '.');
    size_t len = dot ? (size_t)(dot - name) : strlen(name);
    if (len >= keylen)
        len = keylen - 1;
    memcpy(key, name, len);
    key[len] = '\0';
    *ext = dot ? dot + 1 : "";
}

static int add_sample(struct tar_index *ix, uint64_t shard, uint64_t offset, uint64_t size,
                      const char *key)
{
    if (ix->count == ix->cap) {
        size_t cap = ix->cap ? ix->cap * 2 : 1024;
        struct tar_sample *items = realloc(ix->items, cap * sizeof(*items));
        if (!items)
            return PB_ERR_NOMEM;
        ix->items = items;
        ix->cap = cap;
    }
    size_t len = strlen(key) + 1;
    if (ix->keys_used + len > ix->keys_cap) {
        size_t cap = ix->keys_cap ? ix->keys_cap * 2 : 65536;
        while (cap < ix->keys_used + len)
            cap *= 2;
        char *keys = realloc(ix->keys, cap);
        if (!keys)
            return PB_ERR_NOMEM;
        ix->keys = keys;
        ix->keys_cap = cap;
    }
    memcpy(ix->keys + ix->keys_used, key, len);
    ix->items[ix->count++] = (struct tar_sample){shard, offset, size, ix->keys_used};
    ix->keys_used += len;
    return PB_OK;
}

/* Ends the group being gathered: a sample, or a bad one without an image
 * member or with its data cut off. */
static int close_group(struct tar_index *ix, uint64_t shard)
{
    if (!ix->open)
        return PB_OK;
    ix->open = false;
    if (ix->truncated)
        return add_sample(ix, shard, PB_MEMBER_BAD, PB_MEMBER_TRUNCATED, ix->key);
    if (!ix->has_image)
        return add_sample(ix, shard, PB_MEMBER_BAD, PB_MEMBER_NO_IMAGE, ix->key);
    return add_sample(ix, shard, ix->offset, ix->size, ix->key);
}

static uint64_t tar_number(const unsigned char *field, size_t len)
{
    if (field[0] & 0x80) { /* base-256, for sizes of 8 GiB and more */
        uint64_t v = field[0] & 0x7f;
        for (size_t i = 1; i < len; i++)
            v = (v << 8) | field[i];
        return v;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < len && field[i]; i++)
        if (field[i] >= '0' && field[i] <= '7')
            v = v * 8 + (uint64_t)(field[i] - '0');
    return v;
}

/* Where the data of the member whose headers start at pos begins: past
 * any pax ('x', 'g') or GNU long name ('L', 'K') headers and its own.
 * -1 when the headers cannot be read. */
static int64_t member_data_offset(int fd, uint64_t pos)
{
    for (int hops = 0; hops < 8; hops++) {
        unsigned char header[512];
        if (pread(fd, header, sizeof(header), (off_t)pos) != (ssize_t)sizeof(header))
            return -1;
        uint64_t size = tar_number(header + 124, 12);
        char type = (char)header[156];
        pos += 512;
        if (type != 'x' && type != 'g' && type != 'L' && type != 'K')
            return (int64_t)pos;
        pos += (size + 511) & ~(uint64_t)511;
    }
    return -1;
}

/* Whether the file open at fd starts with the magic bytes of gzip, bzip2,
 * xz or zstd: a compressed shard, whose members have no offsets to read
 * them at. */
static bool is_compressed(int fd)
{
    unsigned char head[6] = {0};
    if (pread(fd, head, sizeof(head), 0) < 4)
        return false;
    return (head[0] == 0x1f && head[1] == 0x8b) || memcmp(head, "BZh", 3) == 0 ||
           memcmp(head, "\xfd" "7zXZ", 5) == 0 || memcmp(head, "\x28\xb5\x2f\xfd", 4) == 0;
}

/* Adds the samples of shard k (at path, of shard_bytes) to ix. A shard
 * that ends early adds a bad sample where it ends; a compressed one is one
 * bad sample that says so. */
static int index_shard(struct tar_index *ix, uint64_t k, const char *path, uint64_t shard_bytes)
{
    struct archive *a = archive_read_new();
    if (!a)
        return PB_ERR_NOMEM;
    archive_read_support_format_tar(a);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc = PB_OK;
    if (fd >= 0 && is_compressed(fd)) {
        rc = add_sample(ix, k, PB_MEMBER_BAD, PB_MEMBER_COMPRESSED, "(shard)");
        goto done;
    }
    if (fd < 0 || archive_read_open_filename(a, path, 65536) != ARCHIVE_OK) {
        rc = add_sample(ix, k, PB_MEMBER_BAD, PB_MEMBER_UNREADABLE, "(shard)");
        goto done;
    }
    ix->open = false;
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) { /* truncated or not a tar: the rest is lost */
            if (!ix->open) {
                snprintf(ix->key, sizeof(ix->key), "(member after the last good one)");
                ix->open = true;
            }
            ix->truncated = true;
            break;
        }
        if (archive_entry_filetype(e) != AE_IFREG) {
            if (archive_entry_filetype(e) != AE_IFDIR && ix->odd_members++ == 0)
                snprintf(ix->first_odd, sizeof(ix->first_odd), "%s (member %s)", path,
                         archive_entry_pathname(e) ? archive_entry_pathname(e) : "?");
            continue;
        }
        char key[PB_PATH_MAX];
        const char *ext;
        const char *name = archive_entry_pathname(e);
        split_key(name ? name : "", key, sizeof(key), &ext);
        if (!ix->open || strcmp(key, ix->key) != 0) {
            rc = close_group(ix, k);
            if (rc != PB_OK)
                goto done;
            memcpy(ix->key, key, sizeof(key));
            ix->open = true;
            ix->has_image = ix->truncated = false;
        }
        uint64_t size = (uint64_t)archive_entry_size(e);
        if (!ix->has_image && is_image_extension(ext)) {
            int64_t data = member_data_offset(fd, (uint64_t)archive_read_header_position(a));
            ix->has_image = true;
            ix->offset = data < 0 ? 0 : (uint64_t)data;
            ix->size = size;
            ix->truncated = data < 0 || (uint64_t)data + size > shard_bytes;
        }
        if (archive_read_data_skip(a) != ARCHIVE_OK) {
            ix->truncated = true;
            break;
        }
    }
    rc = close_group(ix, k);
done:
    if (fd >= 0)
        close(fd);
    archive_read_free(a);
    return rc;
}

static bool has_suffix(const char *path, const char *suffix)
{
    size_t len = strlen(path), n = strlen(suffix);
    return len > n && strcasecmp(path + len - n, suffix) == 0;
}

static bool has_tar_suffix(const char *path)
{
    return has_suffix(path, ".tar");
}

/* Shards compressed whole (WebDataset's .tar.gz and the like), which
 * pbench cannot read members of at their offsets. */
static size_t compressed_shards(const struct pb_dataset *ds, const char **example)
{
    static const char *const suffixes[] = {".tar.gz", ".tgz", ".tar.zst", ".tar.xz",
                                           ".tar.bz2"};
    size_t n = 0;
    for (size_t i = 0; i < ds->count; i++)
        for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++)
            if (has_suffix(ds->paths[i], suffixes[k]) && n++ == 0)
                *example = ds->paths[i];
    return n;
}

/* Adds the members left out for not being files to what the dataset
 * skipped ("...; skipped 2 tar members that are not regular files (links,
 * devices, FIFOs; first: SHARD (member NAME))"). */
static void note_odd_members(const struct tar_index *ix, struct pb_dataset *ds)
{
    if (!ix->odd_members)
        return;
    size_t used = strlen(ds->skipped);
    if (used < sizeof(ds->skipped))
        snprintf(ds->skipped + used, sizeof(ds->skipped) - used,
                 "%sskipped %llu tar %s (links, devices, FIFOs; first: %.300s)",
                 used ? "; " : "", (unsigned long long)ix->odd_members,
                 ix->odd_members == 1 ? "member that is not a regular file"
                                      : "members that are not regular files",
                 ix->first_odd);
}

int pb_dataset_index_tar(struct pb_dataset *ds, char *msg, size_t msglen)
{
    /* The walk found the shards: they become the storage's files. */
    size_t shards = 0;
    for (size_t i = 0; i < ds->count; i++)
        if (has_tar_suffix(ds->paths[i]))
            ds->paths[shards] = ds->paths[i], ds->sizes[shards++] = ds->sizes[i];
    const char *example = NULL;
    size_t compressed = shards == 0 ? compressed_shards(ds, &example) : 0;
    if (compressed > 0) {
        snprintf(msg, msglen,
                 "dataset.path holds %zu compressed tar shards (such as %s) and no plain .tar: "
                 "pbench reads each sample at its offset in the shard, so shards must be "
                 "uncompressed (gunzip -k, unzstd or unxz them, and point dataset.path at the "
                 "copies)",
                 compressed, example);
        return PB_ERR_CONFIG;
    }
    if (shards == 0) {
        snprintf(msg, msglen,
                 "dataset.format is tar but dataset.path holds no .tar shards (%zu other files)",
                 ds->count);
        return PB_ERR_CONFIG;
    }
    ds->shard_paths = ds->paths;
    ds->shard_sizes = ds->sizes;
    ds->shard_count = shards;
    ds->paths = NULL;
    ds->sizes = NULL;
    ds->count = 0;
    ds->max_bytes = 0;
    ds->max_index = 0;
    ds->total_bytes = 0;

    struct tar_index ix = {0};
    int rc = PB_OK;
    ds->shard_first = malloc((shards + 1) * sizeof(*ds->shard_first));
    if (!ds->shard_first)
        rc = PB_ERR_NOMEM;
    for (size_t k = 0; k < shards && rc == PB_OK; k++) {
        ds->shard_first[k] = ix.count;
        ds->total_bytes += ds->shard_sizes[k];
        rc = index_shard(&ix, k, ds->shard_paths[k], ds->shard_sizes[k]);
    }
    if (rc == PB_OK && ix.count == 0) {
        snprintf(msg, msglen, "the %zu tar shards at dataset.path hold no members", shards);
        rc = PB_ERR_CONFIG;
    }
    if (rc == PB_OK) {
        ds->shard_first[shards] = ix.count;
        ds->paths = malloc(ix.count * sizeof(*ds->paths));
        ds->sizes = malloc(ix.count * sizeof(*ds->sizes));
        ds->offsets = malloc(ix.count * sizeof(*ds->offsets));
        ds->members = malloc(ix.count * sizeof(*ds->members));
        if (!ds->paths || !ds->sizes || !ds->offsets || !ds->members)
            rc = PB_ERR_NOMEM;
    }
    if (rc == PB_OK) {
        ds->tar_arena = ix.keys;
        ix.keys = NULL;
        for (size_t i = 0; i < ix.count; i++) {
            const struct tar_sample *t = &ix.items[i];
            ds->paths[i] = ds->shard_paths[t->shard];
            ds->offsets[i] = t->offset;
            ds->sizes[i] = t->size;
            ds->members[i] = ds->tar_arena + t->key_at;
            if (t->offset == PB_MEMBER_BAD)
                ds->bad_samples++;
            else if (t->size > ds->max_bytes)
                ds->max_bytes = t->size, ds->max_index = i;
        }
        ds->count = ix.count;
        note_odd_members(&ix, ds);
    }
    if (rc == PB_ERR_NOMEM)
        snprintf(msg, msglen, "out of memory indexing %zu tar shards", shards);
    free(ix.items);
    free(ix.keys);
    return rc;
}

/* ---- the stream order ---------------------------------------------------- */

/* A keyed bijection on [0, n): a 4-round Feistel network on the smallest
 * even power of two holding n, walked until it lands inside. */
static uint64_t window_permute(uint64_t key, uint64_t n, uint64_t i)
{
    unsigned bits = 2;
    while (bits < 64 && (1ull << bits) < n)
        bits += 2;
    unsigned half = bits / 2;
    uint64_t mask = (1ull << half) - 1, x = i;
    do {
        uint64_t hi = x >> half, lo = x & mask;
        for (uint64_t round = 0; round < 4; round++) {
            uint64_t mixed = hi ^ (pb_mix64(lo ^ key ^ (round << 58)) & mask);
            hi = lo;
            lo = mixed;
        }
        x = (hi << half) | lo;
    } while (x >= n);
    return x;
}

/* How many of [0, n) are v modulo workers. */
static uint64_t batches_of(uint64_t n, uint64_t v, uint64_t workers)
{
    return n > v ? (n - v + workers - 1) / workers : 0;
}

void pb_sampler_stream(struct pb_sampler *s, const struct pb_dataset *ds, uint64_t workers,
                       uint64_t shuffle_buffer, bool drop_last, int64_t epochs)
{
    uint64_t n = ds->count;
    uint64_t lo = n * s->shard_rank / s->shard_count;
    uint64_t hi = n * (s->shard_rank + 1) / s->shard_count;
    s->stream_workers = workers ? workers : 1;
    s->stream_buffer = shuffle_buffer > 1 && s->shuffle ? shuffle_buffer : 0;
    s->stream_lo = lo;
    s->stream_shards = ds->shard_count;
    s->stream_shard_first = ds->shard_first;
    s->shard_len = hi - lo;
    s->batches_per_epoch = drop_last ? s->shard_len / s->batch_size
                                     : (s->shard_len + s->batch_size - 1) / s->batch_size;
    if (s->batches_per_epoch == 0)
        s->batches_per_epoch = 1; /* pb_sampler_init refused what cannot give one */
    s->total_batches = epochs > 0 ? s->batches_per_epoch * (uint64_t)epochs : UINT64_MAX;
}

bool pb_sampler_stream_batch(const struct pb_sampler *s, uint64_t batch, uint64_t *indices,
                             uint64_t *seeds, uint32_t *count)
{
    *count = 0;
    if (batch >= s->total_batches)
        return false;
    uint64_t per = s->batches_per_epoch, epoch = batch / per, b = batch % per;
    /* The runner has worker (batch mod workers) build a batch. In this
     * epoch, worker v builds the batches x in [shift, shift + per) with x
     * mod workers = v (x = shift + b), over its own run of the stream; the
     * runs follow each other in worker order. */
    uint64_t workers = s->stream_workers;
    uint64_t shift = (epoch % workers) * (per % workers) % workers, x = shift + b;
    uint64_t w = x % workers;
    uint64_t run_start = 0;
    for (uint64_t v = 0; v < w; v++)
        run_start += batches_of(shift + per, v, workers) - batches_of(shift, v, workers);
    uint64_t run_batches =
        batches_of(shift + per, w, workers) - batches_of(shift, w, workers);
    uint64_t j = batches_of(x, w, workers) - batches_of(shift, w, workers);
    uint64_t first = (run_start + j) * s->batch_size;
    uint64_t n = s->shard_len - first < s->batch_size ? s->shard_len - first : s->batch_size;
    if (s->max_samples) {
        uint64_t before = epoch * per * s->batch_size + b * s->batch_size;
        if (before >= s->max_samples)
            return false;
        if (before + n > s->max_samples)
            n = s->max_samples - before;
    }
    uint64_t run_lo = run_start * s->batch_size;
    uint64_t run_hi = (run_start + run_batches) * s->batch_size;
    if (run_hi > s->shard_len)
        run_hi = s->shard_len;
    /* Each epoch starts the whole stream at a seeded shard when shuffling. */
    uint64_t total = s->dataset_count, rotate = 0;
    if (s->shuffle && s->stream_shards > 1)
        rotate =
            s->stream_shard_first[pb_mix64(s->seed ^ pb_mix64(epoch + 0x7a3)) % s->stream_shards];
    for (uint64_t i = 0; i < n; i++) {
        uint64_t q = first + i - run_lo; /* position in the worker's run */
        if (s->stream_buffer) {
            uint64_t window = q / s->stream_buffer, at = window * s->stream_buffer;
            uint64_t len =
                run_hi - run_lo - at < s->stream_buffer ? run_hi - run_lo - at : s->stream_buffer;
            uint64_t key = pb_mix64(s->seed ^ pb_mix64((epoch << 32) ^ (w << 20) ^ window));
            q = at + window_permute(key, len, q - at);
        }
        uint64_t index = (s->stream_lo + run_lo + q + rotate) % total;
        indices[i] = index;
        seeds[i] = pb_mix64(s->seed ^ pb_mix64((epoch << 40) ^ index));
    }
    *count = (uint32_t)n;
    return true;
}
