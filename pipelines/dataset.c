/* The dataset index and the sampler (pipelines/dataset.h): the files of a folder, glob or
 * list, sorted, then shuffled, sharded and epoched by seed. */
#include "pipelines/dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "bench/base/pb.h"

const char *const pb_dataset_format_names[] = {"files", "tar", NULL};

/* ---- index ------------------------------------------------------------ */

struct entry {
    char *path;
    uint64_t size;
};

/* Why the walk left an entry out; hidden files are left out on purpose and
 * are not counted. */
enum skip_reason {
    SKIP_UNREADABLE_FOLDER,
    SKIP_BROKEN_LINK,
    SKIP_LINK_LOOP,
    SKIP_WALKED_FOLDER,
    SKIP_UNREADABLE_ENTRY,
    SKIP_NOT_REGULAR,
    SKIP_OUTSIDE,
    SKIP_REASONS
};

static const char *const skip_names[SKIP_REASONS][2] = {
    {"unreadable folder", "unreadable folders"},
    {"broken symlink", "broken symlinks"},
    {"symlink loop", "symlink loops"},
    {"folder already walked through another symlink", "folders already walked through another "
                                                      "symlink"},
    {"unreadable entry", "unreadable entries"},
    {"entry that is not a regular file", "entries that are not regular files"},
    {"symlink to a folder that holds dataset.path, or to a system folder (/proc, /sys, /dev)",
     "symlinks to folders that hold dataset.path, or to system folders (/proc, /sys, /dev)"},
};

/* A folder by device and inode, so one reached again (a symlink loop, or a
 * second link to it) is walked once. */
struct folder_id {
    dev_t dev;
    ino_t ino;
};

struct collect {
    struct entry *items;
    size_t count, cap;
    int error;
    char path[PB_PATH_MAX];   /* the walk's current path, grown and cut */
    struct folder_id *walked; /* open-addressing set, walked_cap a power of 2 */
    size_t walked_count, walked_cap;
    uint64_t skipped[SKIP_REASONS];
    char first[SKIP_REASONS][PB_MSG_MAX / 2]; /* smallest path per reason, why */
    char root[PB_PATH_MAX]; /* dataset.path resolved (realpath): the walk's top */
};

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

/* Counts a skipped entry; keeps the smallest path per reason (the walk's
 * order is the file system's), with errno's sentence when err is set. */
static void skip(struct collect *c, enum skip_reason reason, const char *path, int err)
{
    char text[sizeof(c->first[0])];
    if (err)
        snprintf(text, sizeof(text), "%s: %s", path, strerror(err));
    else
        snprintf(text, sizeof(text), "%s", path);
    if (c->skipped[reason]++ == 0 || strcmp(text, c->first[reason]) < 0)
        memcpy(c->first[reason], text, sizeof(text));
}

static size_t folder_slot(const struct folder_id *id, size_t cap)
{
    return (size_t)pb_mix64((uint64_t)id->dev * 0x9e3779b97f4a7c15ull ^ (uint64_t)id->ino) &
           (cap - 1);
}

/* Adds the folder to the walked set: 1 when it is new, 0 when it was
 * walked already, -1 out of memory. */
static int walk_once(struct collect *c, const struct stat *st)
{
    struct folder_id id = {st->st_dev, st->st_ino};
    if (c->walked_cap && c->walked_count * 2 >= c->walked_cap) {
        size_t cap = c->walked_cap * 2;
        struct folder_id *grown = calloc(cap, sizeof(*grown));
        if (!grown)
            return -1;
        for (size_t i = 0; i < c->walked_cap; i++) {
            if (c->walked[i].ino == 0 && c->walked[i].dev == 0)
                continue;
            size_t at = folder_slot(&c->walked[i], cap);
            while (grown[at].ino || grown[at].dev)
                at = (at + 1) & (cap - 1);
            grown[at] = c->walked[i];
        }
        free(c->walked);
        c->walked = grown;
        c->walked_cap = cap;
    } else if (!c->walked_cap) {
        c->walked = calloc(64, sizeof(*c->walked));
        if (!c->walked)
            return -1;
        c->walked_cap = 64;
    }
    size_t at = folder_slot(&id, c->walked_cap);
    for (; c->walked[at].ino || c->walked[at].dev; at = (at + 1) & (c->walked_cap - 1))
        if (c->walked[at].dev == id.dev && c->walked[at].ino == id.ino)
            return 0;
    c->walked[at] = id;
    c->walked_count++;
    return 1;
}

/* Why stat failed on c->path: a broken symlink, a loop of them, or another
 * error (err). */
static void skip_unstatable(struct collect *c, int err)
{
    struct stat link;
    bool is_link = lstat(c->path, &link) == 0 && S_ISLNK(link.st_mode);
    if (is_link && err == ENOENT)
        skip(c, SKIP_BROKEN_LINK, c->path, 0);
    else if (is_link && err == ELOOP)
        skip(c, SKIP_LINK_LOOP, c->path, 0);
    else
        skip(c, SKIP_UNREADABLE_ENTRY, c->path, err);
}

/* Whether the folder at path is a kernel's view (/proc, /sys, /dev and
 * the like), which holds no data and, through /proc/self/root, the whole
 * file system again. */
static bool is_system_folder(const char *path)
{
    static const unsigned long kinds[] = {
        0x9fa0,     /* proc */
        0x62656572, /* sysfs */
        0x1373,     /* devfs */
        0x1cd1,     /* devpts */
        0x64626720, /* debugfs */
        0x74726163, /* tracefs */
        0x27e0eb,   /* cgroup */
        0x63677270, /* cgroup2 */
        0x73636673, /* securityfs */
        0xcafe4a11, /* bpf */
    };
    struct statfs fs;
    if (statfs(path, &fs) != 0)
        return false;
    for (size_t i = 0; i < PB_ARRAY_LEN(kinds); i++)
        if ((unsigned long)fs.f_type == kinds[i])
            return true;
    return false;
}

/* Whether a folder reached through a symlink leads back above the walk's
 * top (to a folder that holds dataset.path: its parent, "/"), where the
 * walk would take in everything beside the dataset. */
static bool leads_above_root(const struct collect *c, const char *path)
{
    char real[PB_PATH_MAX];
    if (!realpath(path, real))
        return false;
    size_t n = strlen(real);
    if (n == 1) /* "/" */
        return true;
    /* The top itself is walked once already (walk_once says so). */
    return strncmp(c->root, real, n) == 0 && c->root[n] == '/';
}

/* Whether a folder entry of the walk is one to leave out: a symlink to a
 * folder above the top, or a system folder (looked for only where the
 * walk crosses onto another file system: from the folder of device dev). */
static bool outside_the_dataset(const struct collect *c, const struct dirent *d,
                                const struct stat *entry, dev_t dev)
{
    bool link = d->d_type == DT_LNK;
    if (d->d_type == DT_UNKNOWN) {
        struct stat st;
        link = lstat(c->path, &st) == 0 && S_ISLNK(st.st_mode);
    }
    return (link && leads_above_root(c, c->path)) ||
           (entry->st_dev != dev && is_system_folder(c->path));
}

/* Walks the folder at c->path (st its stat), following symlinks to files
 * and folders; every folder once. Returns 0, or -1 with c->error set. */
static int walk_folder(struct collect *c, const struct stat *st)
{
    int fresh = walk_once(c, st);
    if (fresh <= 0) {
        if (fresh < 0)
            c->error = ENOMEM;
        else
            skip(c, SKIP_WALKED_FOLDER, c->path, 0);
        return fresh;
    }
    DIR *dir = opendir(c->path);
    if (!dir) {
        skip(c, SKIP_UNREADABLE_FOLDER, c->path, errno);
        return 0;
    }
    size_t len = strlen(c->path);
    struct dirent *d;
    int rc = 0;
    while (rc == 0 && (errno = 0, d = readdir(dir)) != NULL) {
        if (d->d_name[0] == '.') /* ., .., hidden files: editor droppings, our markers */
            continue;
        int n = snprintf(c->path + len, sizeof(c->path) - len, "/%s", d->d_name);
        if (n < 0 || (size_t)n >= sizeof(c->path) - len) {
            c->path[len] = '\0';
            skip(c, SKIP_UNREADABLE_ENTRY, c->path, ENAMETOOLONG);
            continue;
        }
        struct stat entry;
        if (stat(c->path, &entry) != 0)
            skip_unstatable(c, errno);
        else if (S_ISDIR(entry.st_mode) && outside_the_dataset(c, d, &entry, st->st_dev))
            skip(c, SKIP_OUTSIDE, c->path, 0);
        else if (S_ISDIR(entry.st_mode))
            rc = walk_folder(c, &entry);
        else if (!S_ISREG(entry.st_mode))
            skip(c, SKIP_NOT_REGULAR, c->path, 0);
        else if (collect_add(c, c->path, (uint64_t)entry.st_size) != 0)
            c->error = ENOMEM, rc = -1;
        c->path[len] = '\0';
    }
    if (rc == 0 && errno != 0) /* readdir failed part way */
        skip(c, SKIP_UNREADABLE_FOLDER, c->path, errno);
    closedir(dir);
    return rc;
}

/* "skipped 3 entries: 2 unreadable folders (first: data/x: Permission
 * denied), 1 broken symlink (first: data/y)", or "" when none was. */
static void describe_skips(const struct collect *c, char *out, size_t outlen)
{
    uint64_t total = 0;
    for (int r = 0; r < SKIP_REASONS; r++)
        total += c->skipped[r];
    out[0] = '\0';
    if (!total)
        return;
    size_t used = (size_t)snprintf(out, outlen, "skipped %llu %s:", (unsigned long long)total,
                                   total == 1 ? "entry" : "entries");
    const char *sep = " ";
    for (int r = 0; r < SKIP_REASONS && used < outlen; r++) {
        if (!c->skipped[r])
            continue;
        used += (size_t)snprintf(out + used, outlen - used, "%s%llu %s (first: %s)", sep,
                                 (unsigned long long)c->skipped[r],
                                 skip_names[r][c->skipped[r] != 1], c->first[r]);
        sep = ", ";
    }
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static bool is_glob(const char *path)
{
    return strpbrk(path, "*?[") != NULL;
}

/* Finds the files at spec->path into c, then lays them out in ds, sorted. */
static int index_files(const struct pb_dataset_spec *spec, struct pb_dataset *ds, struct collect *c,
                       char *msg, size_t msglen)
{
    if (is_glob(spec->path)) {
        glob_t g;
        int rc = glob(spec->path, 0, NULL, &g);
        if (rc == 0) {
            for (size_t i = 0; i < g.gl_pathc && !c->error; i++) {
                struct stat st;
                pb_strlcpy(c->path, g.gl_pathv[i], sizeof(c->path));
                if (stat(c->path, &st) != 0)
                    skip_unstatable(c, errno);
                else if (S_ISREG(st.st_mode) && collect_add(c, c->path, (uint64_t)st.st_size) != 0)
                    c->error = ENOMEM;
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
            if (collect_add(c, spec->path, (uint64_t)st.st_size) != 0)
                c->error = ENOMEM;
        } else {
            pb_strlcpy(c->path, spec->path, sizeof(c->path));
            size_t len = strlen(c->path);
            while (len > 1 && c->path[len - 1] == '/')
                c->path[--len] = '\0';
            if (!realpath(c->path, c->root))
                pb_strlcpy(c->root, c->path, sizeof(c->root));
            if (strcmp(c->root, "/") == 0 || is_system_folder(c->path)) {
                snprintf(msg, msglen,
                         "dataset.path '%s' is %s: pbench does not walk %s for data; point "
                         "dataset.path at the dataset's own folder",
                         spec->path, strcmp(c->root, "/") == 0 ? "the root folder /" : "a system "
                         "folder", strcmp(c->root, "/") == 0 ? "the whole file system" : "it");
                return PB_ERR_CONFIG;
            }
            walk_folder(c, &st);
        }
    }
    describe_skips(c, ds->skipped, sizeof(ds->skipped));
    if (c->error) {
        snprintf(msg, msglen, "dataset.path '%s': %s", spec->path, strerror(c->error));
        return PB_ERR;
    }
    if (c->count == 0) {
        snprintf(msg, msglen, "dataset.path '%s' matches no files%s%s%s", spec->path,
                 ds->skipped[0] ? " (" : "", ds->skipped, ds->skipped[0] ? ")" : "");
        return PB_ERR_CONFIG;
    }
    qsort(c->items, c->count, sizeof(*c->items), entry_cmp);

    size_t arena_bytes = 0;
    for (size_t i = 0; i < c->count; i++)
        arena_bytes += strlen(c->items[i].path) + 1;
    ds->arena = malloc(arena_bytes);
    ds->paths = malloc(c->count * sizeof(*ds->paths));
    ds->sizes = malloc(c->count * sizeof(*ds->sizes));
    if (!ds->arena || !ds->paths || !ds->sizes) {
        snprintf(msg, msglen, "out of memory indexing %zu files", c->count);
        return PB_ERR_NOMEM;
    }
    char *at = ds->arena;
    for (size_t i = 0; i < c->count; i++) {
        size_t len = strlen(c->items[i].path) + 1;
        memcpy(at, c->items[i].path, len);
        ds->paths[i] = at;
        at += len;
        ds->sizes[i] = c->items[i].size;
        ds->total_bytes += c->items[i].size;
        if (c->items[i].size > ds->max_bytes) {
            ds->max_bytes = c->items[i].size;
            ds->max_index = i;
        }
    }
    ds->count = c->count;
    return PB_OK;
}

int pb_dataset_open(const struct pb_dataset_spec *spec, struct pb_dataset *ds, char *msg,
                    size_t msglen)
{
    memset(ds, 0, sizeof(*ds));
    if (!spec->path[0]) {
        snprintf(msg, msglen, "dataset.path is required (a directory or a glob)");
        return PB_ERR_CONFIG;
    }
    struct collect *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(msg, msglen, "out of memory indexing dataset.path '%s'", spec->path);
        return PB_ERR_NOMEM;
    }
    int rc = index_files(spec, ds, c, msg, msglen);
    for (size_t i = 0; i < c->count; i++)
        free(c->items[i].path);
    free(c->items);
    free(c->walked);
    free(c);
    if (rc == PB_OK && spec->format == PB_FORMAT_TAR)
        rc = pb_dataset_index_tar(ds, msg, msglen);
    if (rc != PB_OK)
        pb_dataset_free(ds);
    return rc;
}

void pb_dataset_largest_name(const struct pb_dataset *ds, char *buf, size_t buflen)
{
    size_t i = ds->max_index;
    if (i >= ds->count)
        snprintf(buf, buflen, "%s", "");
    else if (ds->members)
        snprintf(buf, buflen, "%s (member %s)", ds->paths[i], ds->members[i]);
    else
        snprintf(buf, buflen, "%s", ds->paths[i]);
}

void pb_dataset_free(struct pb_dataset *ds)
{
    free(ds->arena);
    free(ds->paths);
    free(ds->sizes);
    free(ds->offsets);
    free(ds->members);
    free(ds->shard_paths);
    free(ds->shard_sizes);
    free(ds->shard_first);
    free(ds->tar_arena);
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
    struct pb_dataset_spec made = {.shard = {0, 1},
                                   .format = spec->shards > 0 ? PB_FORMAT_TAR : PB_FORMAT_FILES};
    pb_strlcpy(made.path, dir, sizeof(made.path));
    return pb_dataset_open(&made, index, msg, msglen);
}

/* ---- sampler ---------------------------------------------------------- */

int pb_sampler_init(struct pb_sampler *s, uint64_t dataset_count, const struct pb_dataset_spec *ds,
                    int64_t batch_size, bool drop_last, char *msg, size_t msglen)
{
    return pb_sampler_init_visits(s, dataset_count, 1, ds, batch_size, drop_last, msg, msglen);
}

int pb_sampler_init_visits(struct pb_sampler *s, uint64_t dataset_count, uint64_t clips_per_file,
                           const struct pb_dataset_spec *ds, int64_t batch_size, bool drop_last,
                           char *msg, size_t msglen)
{
    memset(s, 0, sizeof(*s));
    s->clips_per_file = clips_per_file > 0 ? clips_per_file : 1;
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
    s->shard_len *= s->clips_per_file; /* samples, not files */
    s->batch_size = (uint64_t)batch_size;
    s->drop_last = drop_last;
    s->shuffle = ds->shuffle;
    s->seed = (uint64_t)ds->seed;
    s->max_samples = (uint64_t)ds->max_samples;
    s->batches_per_epoch = s->drop_last ? s->shard_len / s->batch_size
                                        : (s->shard_len + s->batch_size - 1) / s->batch_size;
    if (s->batches_per_epoch == 0 && s->shard_len > 0) {
        snprintf(msg, msglen,
                 "shard %llu/%llu holds %llu samples, fewer than one batch of %llu with "
                 "loader.drop_last",
                 (unsigned long long)s->shard_rank, (unsigned long long)s->shard_count,
                 (unsigned long long)s->shard_len, (unsigned long long)s->batch_size);
        return PB_ERR_CONFIG;
    }
    if (s->batches_per_epoch == 0) {
        snprintf(msg, msglen,
                 "shard %llu/%llu holds no samples: the dataset has %llu files for %llu shards; "
                 "use fewer shards (dataset.shard, or fewer ranks) or more data",
                 (unsigned long long)s->shard_rank, (unsigned long long)s->shard_count,
                 (unsigned long long)dataset_count, (unsigned long long)s->shard_count);
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
    return pb_sampler_batch_visits(s, batch, indices, seeds, NULL, NULL, count);
}

bool pb_sampler_batch_visits(const struct pb_sampler *s, uint64_t batch, uint64_t *indices,
                             uint64_t *seeds, uint64_t *visit_seeds, uint32_t *clips,
                             uint32_t *count)
{
    if (s->stream_workers) { /* tar shards: one sample per member group, no visits */
        bool more = pb_sampler_stream_batch(s, batch, indices, seeds, count);
        for (uint32_t j = 0; more && j < *count; j++) {
            if (visit_seeds)
                visit_seeds[j] = seeds[j];
            if (clips)
                clips[j] = 0;
        }
        return more;
    }
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
        uint64_t clip = (first + j) % s->clips_per_file; /* a visit's samples are adjacent */
        uint64_t global = s->shard_rank + (first + j) / s->clips_per_file * s->shard_count;
        uint64_t index = pb_sampler_permute(s, epoch, global);
        uint64_t visit = pb_mix64(s->seed ^ pb_mix64((epoch << 40) ^ index));
        indices[j] = index;
        seeds[j] = s->clips_per_file > 1 ? pb_mix64(visit + clip + 1) : visit;
        if (visit_seeds)
            visit_seeds[j] = visit;
        if (clips)
            clips[j] = (uint32_t)clip;
    }
    *count = (uint32_t)n;
    return true;
}
