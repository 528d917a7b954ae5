/* Generated datasets: the dataset.generate spec and the generators that
 * make random files, JPEG images (pipelines/generate_jpeg.c) or videos
 * (pipelines/generate_video.c) from it, so a config runs on a fresh
 * machine. Every file derives from (seed, index): the same spec makes the
 * same files everywhere. */
#ifndef PB_GENERATE_H
#define PB_GENERATE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pb_generate_kind { PB_GENERATE_FILES = 0, PB_GENERATE_JPEG = 1, PB_GENERATE_VIDEO = 2 };

/* dataset.generate: data pbench makes on first use when dataset.path is
 * missing or empty, so a config runs on a fresh machine. */
struct pb_generate_spec {
    int kind;            /* enum pb_generate_kind                        */
    int64_t count;       /* number of files                              */
    int64_t size_bytes;  /* bytes per file (kind files)                  */
    int64_t seed;
    char size[64];       /* images/videos: "WxH" or a range "WxH-WxH"    */
    int64_t quality;     /* jpeg: 1..100                                 */
    double progressive_fraction; /* jpeg: share of progressive files     */
    double grayscale_fraction;   /* jpeg: share of grayscale files       */
    int64_t frames;      /* video: frames per file                       */
    double fps;          /* video: frame rate                            */
    char codec[32];      /* video: h264, hevc, mpeg4, vp9, mjpeg, ...    */
    int64_t gop;         /* video: keyframe interval, frames             */
    double corrupt_fraction; /* share of files written truncated, to
                                exercise run.on_error                    */
    int64_t shards;      /* > 0: packed into this many tar shards         */
};

/* Packs the loose files of dir (as generated) into shards tar files
 * dir/shard-NNNNNN.tar, WebDataset style (each file a member keyed by its
 * name without extension), and removes the loose files
 * (pipelines/tar_write.c). PB_OK or an error with msg. */
int pb_dataset_pack_shards(const char *dir, int64_t shards, char *msg, size_t msglen);

/* Parses "WxH" or "WxH-WxH" (a range, sizes spread between the two).
 * Returns PB_OK or PB_ERR_CONFIG with a message naming the text. */
int pb_parse_size_range(const char *text, int *min_w, int *min_h, int *max_w, int *max_h,
                        char *msg, size_t msglen);

/* Generates the dataset spec describes into dir: spec->count files of
 * random bytes (kind files), JPEG images (jpeg) or videos (video). Atomic
 * per folder: everything is written to dir.tmp-PID, then renamed to dir, so
 * an interrupted generation never leaves a half-made dataset; folders
 * dir.tmp-PID of processes that no longer exist are removed first. The
 * folder gets its stamp (PB_GENERATE_STAMP). When another process renamed
 * its folder into place first (two runs of one config started together),
 * its data is used when its stamp matches spec, and ours removed. Same as
 * pb_dataset_generate_stoppable with no stop flag. */
int pb_dataset_generate(const struct pb_generate_spec *spec, const char *dir, char *msg,
                        size_t msglen);

/* pb_dataset_generate, checking *stop (raised by a signal handler; NULL:
 * never) between files: once it is raised the temporary folder is removed
 * and PB_ERR_INTERRUPTED returned, with msg saying so. */
int pb_dataset_generate_stoppable(const struct pb_generate_spec *spec, const char *dir,
                                  volatile sig_atomic_t *stop, char *msg, size_t msglen);

/* The stamp a generation leaves in its folder: the dataset.generate spec
 * that made it, one "key: value" line per setting that shapes the files
 * (the settings of its kind), so that a folder is known complete and a
 * changed spec is noticed. Hidden: the dataset walk skips it. */
#define PB_GENERATE_STAMP ".pbench-generate"

/* The stamp's text for spec into buf ("kind: files\ncount: 48\n..."). */
void pb_generate_stamp_text(const struct pb_generate_spec *spec, char *buf, size_t buflen);

/* Compares spec with the stamp in dir. PB_OK when they agree or dir has no
 * stamp (data made before stamps, or by hand); PB_ERR_CONFIG when they
 * differ, msg saying which settings ("count: 48 in the folder, 64 in the
 * config") and the fix; PB_ERR when the stamp cannot be read. */
int pb_generate_stamp_check(const struct pb_generate_spec *spec, const char *dir, char *msg,
                            size_t msglen);

/* Whether generated file index is one of the corrupt_fraction written
 * truncated (seeded, so the same files every time). */
bool pb_generate_is_corrupt(const struct pb_generate_spec *spec, int64_t index);

/* The generators behind pb_dataset_generate, writing into an existing
 * (temporary) folder. A share corrupt_fraction of the files is written
 * truncated. They check *stop (may be NULL) before each file. Return PB_OK,
 * PB_ERR_INTERRUPTED once *stop was raised (files already written stay), or
 * an error with a message. */
int pb_generate_jpeg(const struct pb_generate_spec *spec, const char *dir,
                     volatile sig_atomic_t *stop, char *msg, size_t msglen);
int pb_generate_video(const struct pb_generate_spec *spec, const char *dir,
                      volatile sig_atomic_t *stop, char *msg, size_t msglen);

/* Whether *stop (may be NULL) has been raised. */
static inline bool pb_generate_stopped(volatile sig_atomic_t *stop)
{
    return stop && *stop;
}

#endif
