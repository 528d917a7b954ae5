/* Fuzz target: the video open/seek/decode path. The input is a video
 * file's bytes. The `video` decoder opens files itself
 * (PB_DECODER_OPENS_FILE), so each input is written to one reused file in
 * a private folder (under $PBENCH_FUZZ_TMPDIR, else in /dev/shm when there
 * is one; a crash leaves the folder behind, scripts/fuzz.sh removes it),
 * then the `decode` stage takes two clips of 2 frames from it (two seeds:
 * a seek, then the reused demuxer) and one clip of a valid video generated
 * at start-up, which must still decode after whatever the input did to the
 * decoder. Seeds: `pbench gen --kind video` (scripts/fuzz.sh). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/config/config.h"
#include "pipelines/generate.h"
#include "tests/fuzz/fuzzutil.h"

static char folder[PB_PATH_MAX];
static char input_path[PB_PATH_MAX];
static char good_path[PB_PATH_MAX];
static char good_dir[PB_PATH_MAX];

static void remove_files(void)
{
    unlink(input_path);
    unlink(good_path);
    rmdir(good_dir);
    rmdir(folder);
}

/* Makes the private folder and a valid 8-frame video in it. */
static void make_folder(void)
{
    const char *base = getenv("PBENCH_FUZZ_TMPDIR");
    if (!base)
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(folder, sizeof(folder), "%s/pbench-fuzz-video-XXXXXX", base ? base : "/tmp");
    FUZZ_CHECK(mkdtemp(folder) != NULL, "mkdtemp %s", folder);
    snprintf(input_path, sizeof(input_path), "%s/input.mp4", folder);
    snprintf(good_dir, sizeof(good_dir), "%s/good", folder);
    atexit(remove_files);

    struct pb_generate_spec g;
    char msg[PB_MSG_MAX];
    FUZZ_CHECK(pb_opt_set_defaults(pb_generate_opts, &g, msg, sizeof(msg)) == PB_OK, "%s", msg);
    g.kind = PB_GENERATE_VIDEO;
    g.count = 1;
    g.frames = 8;
    g.gop = 4;
    pb_strlcpy(g.size, "64x48", sizeof(g.size));
    FUZZ_CHECK(pb_dataset_generate(&g, good_dir, msg, sizeof(msg)) == PB_OK, "%s", msg);
    DIR *dir = opendir(good_dir);
    FUZZ_CHECK(dir != NULL, "opendir %s", good_dir);
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        if (e->d_name[0] != '.')
            snprintf(good_path, sizeof(good_path), "%s/%s", good_dir, e->d_name);
    closedir(dir);
    FUZZ_CHECK(good_path[0] != 0, "no video generated in %s", good_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    make_folder();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(input_path, "wb");
    FUZZ_CHECK(f != NULL, "cannot write %s", input_path);
    FUZZ_CHECK(fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s", input_path);

    static const char *const options[] = {"clip_frames=2", "frame_stride=2", NULL};
    struct fuzz_decode d;
    fuzz_decode_open(&d, "video", options, 1);
    struct pb_sample s;
    for (uint64_t seed = 1; seed <= 2; seed++)
        fuzz_decode_run(&d, input_path, NULL, 0, seed, &s);
    int rc = fuzz_decode_run(&d, good_path, NULL, 0, 3, &s);
    FUZZ_CHECK(rc == PB_OK, "a valid video after the input fails: %s", d.msg);
    fuzz_decode_close(&d);
    return 0;
}
