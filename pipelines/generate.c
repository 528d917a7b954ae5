/* Generated datasets: the atomic folder every generator writes into, the
 * random-bytes generator (kind files), the corrupt-file pick and the size
 * range all generators read. JPEG and video have files of their own. */
#include "pipelines/generate.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/base/pb.h"

int pb_parse_size_range(const char *text, int *min_w, int *min_h, int *max_w, int *max_h,
                        char *msg, size_t msglen)
{
    int a = 0, b = 0, c = 0, d = 0, used = 0;
    if (sscanf(text, "%dx%d%n", &a, &b, &used) == 2 && text[used] == 0) {
        c = a;
        d = b;
    } else if (sscanf(text, "%dx%d-%dx%d%n", &a, &b, &c, &d, &used) != 4 || text[used] != 0) {
        snprintf(msg, msglen, "size must be WxH or WxH-WxH, got '%s'", text);
        return PB_ERR_CONFIG;
    }
    if (a < 1 || b < 1 || c < a || d < b || c > 16384 || d > 16384) {
        snprintf(msg, msglen,
                 "size '%s' must have sides between 1 and 16384, the second size no smaller than "
                 "the first",
                 text);
        return PB_ERR_CONFIG;
    }
    *min_w = a;
    *min_h = b;
    *max_w = c;
    *max_h = d;
    return PB_OK;
}

static int mkdir_parents(const char *path)
{
    char buf[PB_PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

static int remove_tree_visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

/* Kind files: random bytes, some truncated when corrupt_fraction asks. */
static int generate_files(const struct pb_generate_spec *spec, const char *tmp,
                          volatile sig_atomic_t *stop, char *msg, size_t msglen)
{
    size_t bytes = (size_t)spec->size_bytes;
    uint8_t *buf = malloc(bytes);
    if (!buf) {
        snprintf(msg, msglen, "out of memory generating %zu-byte files", bytes);
        return PB_ERR_NOMEM;
    }
    int rc = PB_OK;
    for (int64_t i = 0; i < spec->count && rc == PB_OK; i++) {
        if (pb_generate_stopped(stop)) {
            rc = PB_ERR_INTERRUPTED;
            break;
        }
        uint64_t x = pb_mix64((uint64_t)spec->seed * 0x100000001b3ull + (uint64_t)i);
        for (size_t b = 0; b < bytes; b += 8) {
            x = pb_mix64(x);
            size_t n = bytes - b < 8 ? bytes - b : 8;
            memcpy(buf + b, &x, n);
        }
        size_t length = pb_generate_is_corrupt(spec, i) ? bytes / 3 : bytes;
        char path[PB_PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/sample_%07lld.bin", tmp, (long long)i);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(buf, 1, length, f) != length) {
            snprintf(msg, msglen, "cannot write '%s': %s", path, strerror(errno));
            rc = PB_ERR;
        }
        if (f && fclose(f) != 0 && rc == PB_OK) {
            snprintf(msg, msglen, "cannot write '%s': %s", path, strerror(errno));
            rc = PB_ERR;
        }
    }
    free(buf);
    return rc;
}

bool pb_generate_is_corrupt(const struct pb_generate_spec *spec, int64_t index)
{
    if (spec->corrupt_fraction <= 0)
        return false;
    uint64_t h = pb_mix64((uint64_t)spec->seed ^ pb_mix64((uint64_t)index + 0xc0ffee));
    return (double)(h >> 11) / 9007199254740992.0 < spec->corrupt_fraction;
}

/* The process id of a temporary folder name "BASE.tmp-PID" made for the
 * folder whose last name is base; 0 when name is not one. */
static long temp_folder_pid(const char *name, const char *base)
{
    size_t len = strlen(base);
    if (strncmp(name, base, len) != 0 || strncmp(name + len, ".tmp-", 5) != 0)
        return 0;
    const char *digits = name + len + 5;
    char *end;
    errno = 0;
    long pid = strtol(digits, &end, 10);
    bool valid = digits[0] >= '1' && digits[0] <= '9' && *end == '\0' && errno == 0;
    return valid ? pid : 0;
}

/* Removes the folders dir.tmp-PID that generations by processes no longer
 * running left behind (killed before they could clean up). */
static void remove_stale_temp_folders(const char *dir)
{
    char parent[PB_PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", dir);
    char *slash = strrchr(parent, '/');
    const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    if (slash == parent)
        snprintf(parent, sizeof(parent), "/");
    else if (slash)
        *slash = '\0';
    else
        snprintf(parent, sizeof(parent), ".");
    DIR *d = opendir(parent);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = temp_folder_pid(e->d_name, base);
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char stale[PB_PATH_MAX * 2];
        snprintf(stale, sizeof(stale), "%s/%s", parent, e->d_name);
        nftw(stale, remove_tree_visit, 16, FTW_DEPTH | FTW_PHYS);
    }
    closedir(d);
}

/* The settings that shape a generated folder, by kind. */
static void stamp_kind_lines(const struct pb_generate_spec *spec, char *buf, size_t buflen,
                             size_t used)
{
    if (spec->kind == PB_GENERATE_FILES) {
        snprintf(buf + used, buflen - used, "size_bytes: %lld\n", (long long)spec->size_bytes);
    } else if (spec->kind == PB_GENERATE_JPEG) {
        snprintf(buf + used, buflen - used,
                 "size: %s\nquality: %lld\nprogressive_fraction: %.17g\n"
                 "grayscale_fraction: %.17g\n",
                 spec->size, (long long)spec->quality, spec->progressive_fraction,
                 spec->grayscale_fraction);
    } else {
        snprintf(buf + used, buflen - used,
                 "size: %s\nframes: %lld\nfps: %.17g\ncodec: %s\ngop: %lld\n", spec->size,
                 (long long)spec->frames, spec->fps, spec->codec, (long long)spec->gop);
    }
}

void pb_generate_stamp_text(const struct pb_generate_spec *spec, char *buf, size_t buflen)
{
    static const char *const kinds[] = {"files", "jpeg", "video"};
    const char *kind = spec->kind >= 0 && spec->kind <= 2 ? kinds[spec->kind] : "unknown";
    int n = snprintf(buf, buflen,
                     "kind: %s\ncount: %lld\nseed: %lld\ncorrupt_fraction: %.17g\nshards: %lld\n",
                     kind, (long long)spec->count, (long long)spec->seed, spec->corrupt_fraction,
                     (long long)spec->shards);
    if (n > 0 && (size_t)n < buflen)
        stamp_kind_lines(spec, buf, buflen, (size_t)n);
}

/* Writes spec's stamp into dir. PB_OK or PB_ERR with msg. */
static int write_stamp(const struct pb_generate_spec *spec, const char *dir, char *msg,
                       size_t msglen)
{
    char text[1024], path[PB_PATH_MAX + 32];
    pb_generate_stamp_text(spec, text, sizeof(text));
    snprintf(path, sizeof(path), "%s/" PB_GENERATE_STAMP, dir);
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) != EOF;
    if ((f && fclose(f) != 0) || !ok) {
        snprintf(msg, msglen, "cannot write '%s': %s", path, strerror(errno));
        return PB_ERR;
    }
    return PB_OK;
}

/* The value of key in a stamp's text ("" when it has none) into value. */
static void stamp_value(const char *text, const char *key, char *value, size_t valuelen)
{
    size_t len = strlen(key);
    value[0] = '\0';
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        if (strncmp(line, key, len) == 0 && line[len] == ':' && line[len + 1] == ' ') {
            snprintf(value, valuelen, "%.*s", (int)(end - line - (int)len - 2), line + len + 2);
            return;
        }
        line = *end ? end + 1 : end;
    }
}

/* "count: 48 in the folder, 64 in the config; ..." for each key whose
 * value differs between the stamps had and want. */
static void stamp_differences(const char *had, const char *want, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    for (const char *line = want; *line && used < outlen;) {
        const char *colon = strchr(line, ':'), *end = strchr(line, '\n');
        if (!colon || !end)
            break;
        char key[64], a[256], b[256];
        snprintf(key, sizeof(key), "%.*s", (int)(colon - line), line);
        stamp_value(had, key, a, sizeof(a));
        stamp_value(want, key, b, sizeof(b));
        if (strcmp(a, b) != 0)
            used += (size_t)snprintf(out + used, outlen - used, "%s%s: %s in the folder, %s in "
                                     "the config", used ? "; " : "", key, a[0] ? a : "(none)", b);
        line = end + 1;
    }
}

int pb_generate_stamp_check(const struct pb_generate_spec *spec, const char *dir, char *msg,
                            size_t msglen)
{
    char path[PB_PATH_MAX + 32], want[1024], diff[PB_MSG_MAX];
    snprintf(path, sizeof(path), "%s/" PB_GENERATE_STAMP, dir);
    FILE *f = fopen(path, "r");
    if (!f && errno == ENOENT)
        return PB_OK; /* made before stamps, or by hand */
    if (!f) {
        snprintf(msg, msglen, "cannot read '%s': %s", path, strerror(errno));
        return PB_ERR;
    }
    char had[1024];
    size_t n = fread(had, 1, sizeof(had) - 1, f);
    had[n] = '\0';
    fclose(f);
    pb_generate_stamp_text(spec, want, sizeof(want));
    if (strcmp(had, want) == 0)
        return PB_OK;
    stamp_differences(had, want, diff, sizeof(diff));
    snprintf(msg, msglen,
             "dataset.path '%s' was generated from another dataset.generate (%s); the data is "
             "not what the config describes: remove the folder to generate it again, or point "
             "dataset.path elsewhere",
             dir, diff[0] ? diff : "the stamp differs");
    return PB_ERR_CONFIG;
}

/* The rename into place lost to another process that made dir first:
 * its data is used when its stamp says it is what spec makes. */
static int use_theirs(const struct pb_generate_spec *spec, const char *dir, int rename_errno,
                      char *msg, size_t msglen)
{
    char path[PB_PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/" PB_GENERATE_STAMP, dir);
    if (access(path, F_OK) != 0) {
        snprintf(msg, msglen, "cannot rename the generated data to '%s': %s (the folder is not "
                 "empty, and no generation finished it)", dir, strerror(rename_errno));
        return PB_ERR;
    }
    return pb_generate_stamp_check(spec, dir, msg, msglen);
}

int pb_dataset_generate(const struct pb_generate_spec *spec, const char *dir, char *msg,
                        size_t msglen)
{
    return pb_dataset_generate_stoppable(spec, dir, NULL, msg, msglen);
}

int pb_dataset_generate_stoppable(const struct pb_generate_spec *spec, const char *dir,
                                  volatile sig_atomic_t *stop, char *msg, size_t msglen)
{
    char tmp[PB_PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d", dir, (int)getpid());
    if (mkdir_parents(tmp) != 0 || (mkdir(tmp, 0755) != 0 && errno != EEXIST)) {
        snprintf(msg, msglen, "cannot create '%s': %s", tmp, strerror(errno));
        return PB_ERR;
    }
    remove_stale_temp_folders(dir);
    int rc;
    switch (spec->kind) {
    case PB_GENERATE_JPEG: rc = pb_generate_jpeg(spec, tmp, stop, msg, msglen); break;
    case PB_GENERATE_VIDEO: rc = pb_generate_video(spec, tmp, stop, msg, msglen); break;
    default: rc = generate_files(spec, tmp, stop, msg, msglen); break;
    }
    if (rc == PB_OK && spec->shards > 0)
        rc = pb_dataset_pack_shards(tmp, spec->shards, msg, msglen);
    if (rc == PB_OK)
        rc = write_stamp(spec, tmp, msg, msglen);
    bool theirs = false;
    if (rc == PB_OK) {
        rmdir(dir); /* an empty folder may already be there */
        if (rename(tmp, dir) != 0) {
            int err = errno;
            theirs = true; /* ours is removed either way */
            if (err == ENOTEMPTY || err == EEXIST) {
                rc = use_theirs(spec, dir, err, msg, msglen);
            } else {
                snprintf(msg, msglen, "cannot rename '%s' to '%s': %s", tmp, dir, strerror(err));
                rc = PB_ERR;
            }
        }
    }
    if (rc == PB_ERR_INTERRUPTED)
        snprintf(msg, msglen, "interrupted while generating '%s'; the partial data was removed",
                 dir);
    if (rc != PB_OK || theirs)
        nftw(tmp, remove_tree_visit, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
