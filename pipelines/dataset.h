/* The dataset index and the sampler.
 *
 * The index is the list of files (a directory walked recursively, or a
 * glob), sorted by path so that a seed means the same order everywhere,
 * with each file's size. The sampler maps a batch number to the dataset
 * indices in it: seeded shuffle per epoch, shard rank/count (disjoint and
 * complete, as torch's DistributedSampler without padding), drop_last,
 * epochs and max_samples. It is stateless per call, so any worker can ask
 * for any batch without locks or allocation. */
#ifndef PB_DATASET_H
#define PB_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/base/opt.h"
#include "bench/base/pb.h"
#include "pipelines/generate.h"

/* dataset.format: loose files, one sample each, or WebDataset tar shards. */
enum pb_dataset_format { PB_FORMAT_FILES = 0, PB_FORMAT_TAR = 1 };
extern const char *const pb_dataset_format_names[];

/* The dataset section: where the samples are, how they are ordered and
 * sharded, and the data to generate when the folder is missing or empty. */
struct pb_dataset_spec {
    char path[PB_PATH_MAX]; /* directory (walked recursively) or glob    */
    bool shuffle;
    int64_t seed;
    int64_t epochs;         /* 0: as many as the run's stopping rule wants */
    int64_t max_samples;    /* 0: no cap                                 */
    struct pb_shard shard;  /* this process's rank/count                 */
    bool has_generate;
    struct pb_generate_spec generate;
    int cache;              /* enum pb_cache_mode (pipelines/storage.h)  */
    int format;             /* enum pb_dataset_format: files or tar      */
    int64_t shuffle_buffer; /* tar: samples shuffled within this window  */
    /* loader.engine torch: a user's Dataset ("module:callable") and its
     * keyword arguments as JSON text; "" runs the files at path. */
    char python[256];
    char args[2048];
    /* Object storage (pipelines/remote.h): dataset.path s3://BUCKET/PREFIX/
     * or http(s)://HOST/PATH/. */
    char endpoint[512];     /* S3-compatible endpoint; "": AWS           */
    char region[64];
    char profile[128];
    int addressing;         /* enum pb_addressing                        */
    char manifest[1024];    /* http(s): the manifest, name or URL        */
    int64_t requests_in_flight;
    double request_timeout_s;
    int64_t retries;
    int list;               /* enum pb_list_mode                         */
    int64_t list_max_mib;   /* the most the listing may hold in memory   */
    char ca_file[PB_PATH_MAX];
};

struct pb_dataset {
    size_t count;
    char **paths;          /* count entries, pointing into an arena      */
    uint64_t *sizes;       /* file sizes in bytes                        */
    uint64_t max_bytes;    /* largest file                               */
    size_t max_index;      /* the sample max_bytes is the size of        */
    uint64_t total_bytes;
    char *arena;
    /* What the walk left out and why, for a warning: "skipped 3 entries: 2
     * unreadable folders (first: data/x: Permission denied), 1 broken
     * symlink (first: data/y)"; "" when nothing was. */
    char skipped[PB_MSG_MAX];
    /* dataset.format: tar (pipelines/dataset_tar.c): each sample is a
     * member of a shard. paths[i] is its shard's path (one pointer per
     * shard), offsets[i] where its data starts in the shard (or
     * PB_MEMBER_BAD, sizes[i] then an enum pb_member_fault) and members[i]
     * its key, for messages. NULL for loose files. */
    uint64_t *offsets;
    char **members;
    size_t shard_count;
    char **shard_paths;    /* the shards, sorted; the storage's files    */
    uint64_t *shard_sizes;
    uint64_t *shard_first; /* shard k's samples: [first[k], first[k+1])  */
    uint64_t bad_samples;  /* members indexed as bad (counted at read)   */
    char *tar_arena;
    /* Object storage: paths are the objects' URLs; what listing cost. */
    bool remote;
    uint64_t list_requests, list_ns;
    char credentials[192]; /* where the credentials came from, no secret */
    char endpoint[512];
};

/* A tar sample that cannot be read, and why (in sizes[i]). */
#define PB_MEMBER_BAD UINT64_MAX
enum pb_member_fault {
    PB_MEMBER_TRUNCATED = 1,
    PB_MEMBER_NO_IMAGE = 2,
    PB_MEMBER_UNREADABLE = 3,
    PB_MEMBER_COMPRESSED = 4, /* gzip, bzip2, xz or zstd: members have no offsets */
};

/* The files storage holds: the loose files, or the tar shards. Returns
 * how many, with their paths and sizes. */
size_t pb_dataset_storage_files(const struct pb_dataset *ds, char *const **paths,
                                const uint64_t **sizes);

/* dataset.format: tar: turns the shards ds indexed (its paths) into the
 * samples they hold, WebDataset style: consecutive members sharing a key
 * (the name up to the basename's first dot) are one sample, whose image
 * member (.jpg, .jpeg, .png, ...) is the sample's bytes. A truncated shard
 * or a group without an image is indexed as a bad sample, counted under
 * run.on_error when read. Returns PB_OK, or an error with msg. */
int pb_dataset_index_tar(struct pb_dataset *ds, char *msg, size_t msglen);


/* Indexes the files at spec->path; it only reads, and never generates
 * data: a caller with a generate block makes the data first
 * (pb_dataset_generate into a missing or empty folder, as the session
 * does on first use). A folder is walked
 * recursively, following symlinks to files and folders (each folder once,
 * by device and inode, so a symlink loop ends); hidden entries are left
 * out, and what else is left out (unreadable folders, broken symlinks, ...)
 * is counted in ds->skipped. Returns PB_OK, or
 * PB_ERR_CONFIG / PB_ERR with a message naming the path. Release with
 * pb_dataset_free(). */
int pb_dataset_open(const struct pb_dataset_spec *spec, struct pb_dataset *ds, char *msg,
                    size_t msglen);
void pb_dataset_free(struct pb_dataset *ds);

/* The largest sample's name, for a message: its file, or for a tar
 * sample "SHARD (member KEY)". "" for an empty dataset. */
void pb_dataset_largest_name(const struct pb_dataset *ds, char *buf, size_t buflen);

/* `pbench gen`: generates into dir, which must not exist yet or be an
 * empty folder (PB_ERR_CONFIG otherwise), then indexes what it made into
 * index (release with pb_dataset_free). PB_OK or an error with msg. */
int pb_dataset_generate_new(const struct pb_generate_spec *spec, const char *dir,
                            struct pb_dataset *index, char *msg, size_t msglen);

struct pb_sampler {
    uint64_t dataset_count;
    uint64_t shard_rank, shard_count, shard_len;
    uint64_t batch_size;
    bool drop_last, shuffle;
    uint64_t seed;
    uint64_t batches_per_epoch;
    uint64_t total_batches;   /* UINT64_MAX when unbounded               */
    uint64_t max_samples;     /* 0: no cap                               */
    unsigned perm_half_bits;  /* Feistel domain: 2 * half bits           */
    /* Tar shards: batches come from per-worker runs of the shard stream
     * (pb_sampler_stream); 0 for the index order above. */
    uint64_t stream_workers, stream_buffer, stream_lo, stream_shards;
    const uint64_t *stream_shard_first; /* shard k's first sample; owned by the dataset */
    /* Samples each visit of a file gives (a video decoder's
     * clips_per_visit): they come one after the other in the epoch, so an
     * epoch holds files x clips_per_file samples. 1 for everything else. */
    uint64_t clips_per_file;
};

/* Sets up a sampler over dataset_count samples for the dataset spec ds
 * (shuffle, seed, epochs, max_samples, shard) and the loader's batch_size
 * and drop_last. Fails (PB_ERR_CONFIG) when the shard holds fewer
 * samples than one batch with drop_last, or the dataset is empty. */
int pb_sampler_init(struct pb_sampler *s, uint64_t dataset_count, const struct pb_dataset_spec *ds,
                    int64_t batch_size, bool drop_last, char *msg, size_t msglen);

/* pb_sampler_init for a decoder that makes clips_per_file samples of each
 * file it visits (shuffle, shard and epochs move whole visits; batches,
 * drop_last and max_samples count samples). clips_per_file 1 is
 * pb_sampler_init. */
int pb_sampler_init_visits(struct pb_sampler *s, uint64_t dataset_count, uint64_t clips_per_file,
                           const struct pb_dataset_spec *ds, int64_t batch_size, bool drop_last,
                           char *msg, size_t msglen);

/* Fills indices[0..*count) with the dataset indices of batch number batch
 * (0-based over all epochs) and seeds[] with their per-sample seeds.
 * Returns false once the run's epochs or max_samples are exhausted. */
bool pb_sampler_batch(const struct pb_sampler *s, uint64_t batch, uint64_t *indices,
                      uint64_t *seeds, uint32_t *count);

/* Switches s (after pb_sampler_init) to WebDataset order over ds's tar
 * shards: this rank's contiguous part of the shard stream (its shard order
 * rotated to a seeded shard each epoch when shuffling), split into one
 * contiguous run per worker (workers: the loader's threads, batch k built
 * by worker k % workers), each read in order, shuffled within windows of
 * shuffle_buffer samples (0 or 1: not shuffled). */
void pb_sampler_stream(struct pb_sampler *s, const struct pb_dataset *ds, uint64_t workers,
                       uint64_t shuffle_buffer, bool drop_last, int64_t epochs);
/* pb_sampler_batch in that order. */
bool pb_sampler_stream_batch(const struct pb_sampler *s, uint64_t batch, uint64_t *indices,
                             uint64_t *seeds, uint32_t *count);
/* pb_sampler_batch, and for each sample its visit: visit_seeds[j] is
 * the seed of the file's visit (the same for its clips_per_file samples;
 * seeds[j] is the sample's own, for its random augmentations) and
 * clips[j] which of them it is, 0-based. Either array may be NULL. */
bool pb_sampler_batch_visits(const struct pb_sampler *s, uint64_t batch, uint64_t *indices,
                             uint64_t *seeds, uint64_t *visit_seeds, uint32_t *clips,
                             uint32_t *count);

/* The shuffled position of i in epoch's permutation of [0, n). */
uint64_t pb_sampler_permute(const struct pb_sampler *s, uint64_t epoch, uint64_t i);

#endif
