#include "pipelines/dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/pb.h"

/* ---- index ------------------------------------------------------------ */

struct entry {
    char *path;
    uint64_t size;
};

struct collect {
    struct entry *items;
    size_t count, cap;
    int error;
};

static struct collect *walk_target; /* nftw has no user pointer */

static int collect_add(struct collect *c, const char *path, uint64_t size)
{
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        struct entry *items = realloc(c->items, cap * sizeof(*items));
        if (!items)
            return -1;
        c->items = items;
        c->cap = cap;
    }
    c->items[c->count].path = strdup(path);
    if (!c->items[c->count].path)
        return -1;
    c->items[c->count].size = size;
    c->count++;
    return 0;
}

static int walk_visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_F || !S_ISREG(st->st_mode))
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (base[0] == '.') /* hidden files: editor droppings, our own markers */
        return 0;
    if (collect_add(walk_target, path, (uint64_t)st->st_size) != 0) {
        walk_target->error = ENOMEM;
        return 1;
    }
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static bool is_glob(const char *path)
{
    return strpbrk(path, "*?[") != NULL;
}

static bool dir_is_empty_or_missing(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT;
    if (!S_ISDIR(st.st_mode))
        return false;
    char probe[PB_PATH_MAX + 4];
    snprintf(probe, sizeof(probe), "%s/*", path);
    glob_t g;
    int rc = glob(probe, 0, NULL, &g);
    globfree(&g);
    return rc == GLOB_NOMATCH;
}

int pb_dataset_open(const struct pb_dataset_spec *spec, struct pb_dataset *ds, char *msg,
                    size_t msglen)
{
    memset(ds, 0, sizeof(*ds));
    if (!spec->path[0]) {
        snprintf(msg, msglen, "dataset.path is required (a directory or a glob)");
        return PB_ERR_CONFIG;
    }
    if (spec->has_generate && !is_glob(spec->path) && dir_is_empty_or_missing(spec->path)) {
        int rc = pb_dataset_generate(&spec->generate, spec->path, msg, msglen);
        if (rc != PB_OK)
            return rc;
    }

    struct collect c = {0};
    if (is_glob(spec->path)) {
        glob_t g;
        int rc = glob(spec->path, 0, NULL, &g);
        if (rc == 0) {
            for (size_t i = 0; i < g.gl_pathc && !c.error; i++) {
                struct stat st;
                if (stat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode))
                    if (collect_add(&c, g.gl_pathv[i], (uint64_t)st.st_size) != 0)
                        c.error = ENOMEM;
            }
        }
        globfree(&g);
    } else {
        struct stat st;
        if (stat(spec->path, &st) != 0) {
            snprintf(msg, msglen, "dataset.path '%s': %s%s", spec->path, strerror(errno),
                     spec->has_generate ? "" : " (add a dataset.generate block to make data)");
            return PB_ERR_CONFIG;
        }
        if (S_ISREG(st.st_mode)) {
            if (collect_add(&c, spec->path, (uint64_t)st.st_size) != 0)
                c.error = ENOMEM;
        } else {
            walk_target = &c;
            if (nftw(spec->path, walk_visit, 32, FTW_PHYS) != 0 && !c.error)
                c.error = errno ? errno : EIO;
            walk_target = NULL;
        }
    }
    if (c.error) {
        snprintf(msg, msglen, "dataset.path '%s': %s", spec->path, strerror(c.error));
        for (size_t i = 0; i < c.count; i++)
            free(c.items[i].path);
        free(c.items);
        return PB_ERR;
    }
    if (c.count == 0) {
        snprintf(msg, msglen, "dataset.path '%s' matches no files", spec->path);
        free(c.items);
        return PB_ERR_CONFIG;
    }
    qsort(c.items, c.count, sizeof(*c.items), entry_cmp);

    size_t arena_bytes = 0;
    for (size_t i = 0; i < c.count; i++)
        arena_bytes += strlen(c.items[i].path) + 1;
    ds->arena = malloc(arena_bytes);
    ds->paths = malloc(c.count * sizeof(*ds->paths));
    ds->sizes = malloc(c.count * sizeof(*ds->sizes));
    int rc = PB_OK;
    if (!ds->arena || !ds->paths || !ds->sizes) {
        snprintf(msg, msglen, "out of memory indexing %zu files", c.count);
        rc = PB_ERR_NOMEM;
    } else {
        char *at = ds->arena;
        for (size_t i = 0; i < c.count; i++) {
            size_t len = strlen(c.items[i].path) + 1;
            memcpy(at, c.items[i].path, len);
            ds->paths[i] = at;
            at += len;
            ds->sizes[i] = c.items[i].size;
            ds->total_bytes += c.items[i].size;
            if (c.items[i].size > ds->max_bytes)
                ds->max_bytes = c.items[i].size;
        }
        ds->count = c.count;
    }
    for (size_t i = 0; i < c.count; i++)
        free(c.items[i].path);
    free(c.items);
    if (rc != PB_OK)
        pb_dataset_free(ds);
    return rc;
}

void pb_dataset_free(struct pb_dataset *ds)
{
    free(ds->arena);
    free(ds->paths);
    free(ds->sizes);
    memset(ds, 0, sizeof(*ds));
}

int pb_dataset_generate_new(const struct pb_generate_spec *spec, const char *dir,
                            struct pb_dataset *index, char *msg, size_t msglen)
{
    if (access(dir, F_OK) == 0 && rmdir(dir) != 0) {
        snprintf(msg, msglen, "'%s' already exists and is not an empty folder; choose a new one",
                 dir);
        return PB_ERR_CONFIG;
    }
    int rc = pb_dataset_generate(spec, dir, msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct pb_dataset_spec made = {.shard = {0, 1}};
    pb_strlcpy(made.path, dir, sizeof(made.path));
    return pb_dataset_open(&made, index, msg, msglen);
}

/* ---- sampler ---------------------------------------------------------- */

int pb_sampler_init(struct pb_sampler *s, uint64_t dataset_count, const struct pb_dataset_spec *ds,
                    int64_t batch_size, bool drop_last, char *msg, size_t msglen)
{
    memset(s, 0, sizeof(*s));
    if (dataset_count == 0) {
        snprintf(msg, msglen, "the dataset is empty");
        return PB_ERR_CONFIG;
    }
    s->dataset_count = dataset_count;
    s->shard_rank = (uint64_t)ds->shard.rank;
    s->shard_count = ds->shard.count > 0 ? (uint64_t)ds->shard.count : 1;
    s->shard_len = dataset_count > s->shard_rank
                       ? (dataset_count - s->shard_rank + s->shard_count - 1) / s->shard_count
                       : 0;
    s->batch_size = (uint64_t)batch_size;
    s->drop_last = drop_last;
    s->shuffle = ds->shuffle;
    s->seed = (uint64_t)ds->seed;
    s->max_samples = (uint64_t)ds->max_samples;
    s->batches_per_epoch = s->drop_last ? s->shard_len / s->batch_size
                                        : (s->shard_len + s->batch_size - 1) / s->batch_size;
    if (s->batches_per_epoch == 0) {
        snprintf(msg, msglen,
                 "shard %llu/%llu holds %llu samples, fewer than one batch of %llu with "
                 "loader.drop_last",
                 (unsigned long long)s->shard_rank, (unsigned long long)s->shard_count,
                 (unsigned long long)s->shard_len, (unsigned long long)s->batch_size);
        return PB_ERR_CONFIG;
    }
    s->total_batches = ds->epochs > 0 ? s->batches_per_epoch * (uint64_t)ds->epochs : UINT64_MAX;
    unsigned bits = 2;
    while (bits < 64 && (1ull << bits) < dataset_count)
        bits++;
    if (bits & 1)
        bits++;
    s->perm_half_bits = bits / 2;
    return PB_OK;
}

uint64_t pb_sampler_permute(const struct pb_sampler *s, uint64_t epoch, uint64_t i)
{
    if (!s->shuffle)
        return i;
    /* A keyed 4-round Feistel network is a bijection on [0, 2^bits); cycle
     * walking maps it onto [0, n). O(1) memory, any position on demand. */
    unsigned half = s->perm_half_bits;
    uint64_t mask = (1ull << half) - 1;
    uint64_t key = pb_mix64(s->seed ^ pb_mix64(epoch + 0x51ed270b27e3d1c5ull));
    uint64_t x = i;
    do {
        uint64_t left = x >> half, right = x & mask;
        for (unsigned round = 0; round < 4; round++) {
            uint64_t f = pb_mix64(right ^ key ^ ((uint64_t)round << 56)) & mask;
            uint64_t next = left ^ f;
            left = right;
            right = next;
        }
        x = (left << half) | right;
    } while (x >= s->dataset_count);
    return x;
}

bool pb_sampler_batch(const struct pb_sampler *s, uint64_t batch, uint64_t *indices,
                      uint64_t *seeds, uint32_t *count)
{
    *count = 0;
    if (batch >= s->total_batches)
        return false;
    uint64_t epoch = batch / s->batches_per_epoch;
    uint64_t in_epoch = batch % s->batches_per_epoch;
    uint64_t first = in_epoch * s->batch_size;
    uint64_t n = s->shard_len - first < s->batch_size ? s->shard_len - first : s->batch_size;
    if (s->max_samples) {
        uint64_t per_epoch = s->drop_last ? s->batches_per_epoch * s->batch_size : s->shard_len;
        uint64_t before = epoch * per_epoch + first; /* samples in earlier batches */
        if (before >= s->max_samples)
            return false;
        if (before + n > s->max_samples) {
            if (s->drop_last)
                return false;
            n = s->max_samples - before;
        }
    }
    for (uint64_t j = 0; j < n; j++) {
        uint64_t global = s->shard_rank + (first + j) * s->shard_count;
        uint64_t index = pb_sampler_permute(s, epoch, global);
        indices[j] = index;
        seeds[j] = pb_mix64(s->seed ^ pb_mix64((epoch << 40) ^ index));
    }
    *count = (uint32_t)n;
    return true;
}
