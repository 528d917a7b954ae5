/* Atomic file writing: a temporary file beside the target, fsync, rename,
 * then fsync of the folder so the rename itself survives a crash. */
#include "bench/base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bench/base/pb.h"

/* mkdir -p for the folder holding path; the file name itself is skipped. */
int pb_make_parent_dirs(const char *path, char *msg, size_t msglen)
{
    char dir[PB_PATH_MAX];
    if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir)) {
        snprintf(msg, msglen, "%s: path too long", path);
        return PB_ERR;
    }
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return PB_OK;
    *slash = '\0';
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            snprintf(msg, msglen, "cannot create folder %s: %s", dir, strerror(errno));
            return PB_ERR;
        }
        *p = saved;
        if (saved == '\0')
            break;
    }
    return PB_OK;
}

/* The folder holding path: "." for a bare name, "/" for a file at the
 * root. */
static void folder_of(const char *path, char *dir, size_t dirlen)
{
    snprintf(dir, dirlen, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, dirlen, ".");
}

static void fsync_parent_dir(const char *path)
{
    char dir[PB_PATH_MAX];
    folder_of(path, dir, sizeof(dir));
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd); /* best effort: makes the rename itself durable */
        close(fd);
    }
}

/* What a file type is, in the words of an error message. */
static const char *file_kind(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

/* Symbolic links followed before the path counts as a loop (Linux's own
 * limit). */
#define MAX_LINKS 40

int pb_output_target(const char *path, char *target, size_t targetlen, char *msg, size_t msglen)
{
    size_t len = strlen(path);
    if (len == 0 || path[len - 1] == '/') {
        snprintf(msg, msglen, "%s: names a folder, not a file; give a file path", path);
        return PB_ERR_CONFIG;
    }
    char cur[PB_PATH_MAX];
    if (snprintf(cur, sizeof(cur), "%s", path) >= (int)sizeof(cur)) {
        snprintf(msg, msglen, "%.200s...: path longer than %d bytes", path, PB_PATH_MAX - 1);
        return PB_ERR_CONFIG;
    }
    for (int links = 0;; links++) {
        struct stat st;
        if (lstat(cur, &st) != 0) {
            if (errno == ENOENT)
                break; /* the write creates it */
            snprintf(msg, msglen, "%s: %s", path, strerror(errno));
            return PB_ERR;
        }
        if (S_ISREG(st.st_mode))
            break;
        if (!S_ISLNK(st.st_mode)) {
            if (strcmp(cur, path) == 0)
                snprintf(msg, msglen, "%s: is %s, not a file; give a file path", path,
                         file_kind(st.st_mode));
            else
                snprintf(msg, msglen, "%s: links to %s, which is %s, not a file; give a file path",
                         path, cur, file_kind(st.st_mode));
            return PB_ERR_CONFIG;
        }
        char link[PB_PATH_MAX];
        ssize_t n = links < MAX_LINKS ? readlink(cur, link, sizeof(link) - 1) : -1;
        if (n < 0) {
            snprintf(msg, msglen, "%s: %s", path,
                     links < MAX_LINKS ? strerror(errno) : "too many levels of symbolic links");
            return links < MAX_LINKS ? PB_ERR : PB_ERR_CONFIG;
        }
        link[n] = '\0';
        /* A relative link is relative to the folder holding it. */
        char *slash = strrchr(cur, '/');
        int dir_len = link[0] == '/' || !slash ? 0 : (int)(slash - cur + 1);
        char next[PB_PATH_MAX];
        if (snprintf(next, sizeof(next), "%.*s%s", dir_len, cur, link) >= (int)sizeof(next)) {
            snprintf(msg, msglen, "%s: the file it links to has a path longer than %d bytes", path,
                     PB_PATH_MAX - 1);
            return PB_ERR_CONFIG;
        }
        memcpy(cur, next, sizeof(cur));
    }
    if (snprintf(target, targetlen, "%s", cur) >= (int)targetlen) {
        snprintf(msg, msglen, "%s: path too long", path);
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

/* Creates the temporary file tmp for writing; one left by an earlier
 * process of the same id is replaced. NULL with errno set on failure. */
static FILE *create_temp(const char *tmp)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return f;
}

int pb_write_atomic(const char *path, int (*fill)(FILE *f, void *user), void *user, char *msg,
                    size_t msglen)
{
    /* Checked again at write time: the path may have changed since the
     * session checked it. */
    char target[PB_PATH_MAX];
    if (pb_output_target(path, target, sizeof(target), msg, msglen) != PB_OK)
        return PB_ERR;
    char tmp[PB_PATH_MAX + 32];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", target, (long)getpid());
    FILE *f = create_temp(tmp);
    int rc;
    if (!f) {
        snprintf(msg, msglen, "cannot write %s: %s", tmp, strerror(errno));
        return PB_ERR;
    }
    errno = 0;
    rc = fill(f, user);
    if (rc == 0 && fflush(f) != 0)
        rc = -1;
    if (rc == 0 && fsync(fileno(f)) != 0)
        rc = -1;
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && rename(tmp, target) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        snprintf(msg, msglen, "cannot write %s: %s", path, strerror(saved ? saved : EIO));
        unlink(tmp);
        return PB_ERR;
    }
    fsync_parent_dir(target);
    return PB_OK;
}

/* Whether the file system holding dir has no block left to write. */
static bool folder_full(const char *dir)
{
    struct statvfs fs;
    if (statvfs(dir, &fs) != 0)
        return false; /* unknown: the write says */
    return (geteuid() == 0 ? fs.f_bfree : fs.f_bavail) == 0;
}

int pb_output_check(const char *path, char *msg, size_t msglen)
{
    char target[PB_PATH_MAX], dir[PB_PATH_MAX], linked[PB_PATH_MAX + 64] = "";
    int rc = pb_output_target(path, target, sizeof(target), msg, msglen);
    if (rc != PB_OK)
        return rc;
    if (strcmp(target, path) != 0)
        snprintf(linked, sizeof(linked), " (it links to %s)", target);
    folder_of(target, dir, sizeof(dir));
    struct stat st;
    int err = stat(dir, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (err) {
        snprintf(msg, msglen,
                 "%s%s: the folder %s %s; create it first (pbench makes no folder for an output "
                 "path)",
                 path, linked, dir,
                 err == ENOENT || err == ENOTDIR ? "does not exist" : strerror(err));
        return PB_ERR_CONFIG;
    }
    /* The name pb_write_atomic writes first, made and removed. */
    char probe[PB_PATH_MAX + 32];
    snprintf(probe, sizeof(probe), "%s.tmp.%ld", target, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) {
        snprintf(msg, msglen, "%s%s: cannot create a file in %s: %s", path, linked, dir,
                 strerror(errno));
        return PB_ERR_CONFIG;
    }
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    if (folder_full(dir)) {
        snprintf(msg, msglen, "%s%s: no space left on the file system of %s", path, linked, dir);
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

/* path with its links followed and "."/".." removed, as far as it exists:
 * the folder resolved and the file name kept when the file does not. */
static void resolve_path(const char *path, char *out, size_t outlen)
{
    char real[PATH_MAX], dir[PB_PATH_MAX];
    if (realpath(path, real)) {
        snprintf(out, outlen, "%s", real);
        return;
    }
    folder_of(path, dir, sizeof(dir));
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int len = realpath(dir, real) ? snprintf(out, outlen, "%s/%s",
                                             strcmp(real, "/") == 0 ? "" : real, name)
                                  : -1;
    if (len < 0 || (size_t)len >= outlen)
        snprintf(out, outlen, "%s", path);
}

bool pb_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    bool has_a = stat(a, &sa) == 0, has_b = stat(b, &sb) == 0;
    if (has_a && has_b)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (has_a != has_b)
        return false;
    char ra[PB_PATH_MAX], rb[PB_PATH_MAX];
    resolve_path(a, ra, sizeof(ra));
    resolve_path(b, rb, sizeof(rb));
    return strcmp(ra, rb) == 0;
}

int pb_output_check_inputs(const char *path, const char *const *inputs, int count, char *msg,
                           size_t msglen)
{
    int rc = pb_output_check(path, msg, msglen);
    for (int i = 0; rc == PB_OK && i < count; i++) {
        if (inputs[i] && pb_same_file(path, inputs[i])) {
            snprintf(msg, msglen, "%s is the input %s; give another file", path, inputs[i]);
            rc = PB_ERR_CONFIG;
        }
    }
    return rc;
}

/* Names tried before pb_claim_new_file gives up. */
#define MAX_CLAIMS 10000

int pb_claim_new_file(const char *stem, const char *ext, char *path, size_t pathlen, char *msg,
                      size_t msglen)
{
    for (int n = 1; n <= MAX_CLAIMS; n++) {
        int len = n == 1 ? snprintf(path, pathlen, "%s%s", stem, ext)
                         : snprintf(path, pathlen, "%s-%d%s", stem, n, ext);
        if (len < 0 || (size_t)len >= pathlen) {
            snprintf(msg, msglen, "%s%s: path too long", stem, ext);
            return PB_ERR;
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            close(fd);
            return PB_OK;
        }
        if (errno != EEXIST) {
            char dir[PB_PATH_MAX];
            folder_of(path, dir, sizeof(dir));
            snprintf(msg, msglen, "cannot create a file in %s: %s", dir, strerror(errno));
            return PB_ERR;
        }
    }
    snprintf(msg, msglen, "%s%s: %d files of that name exist already", stem, ext, MAX_CLAIMS);
    return PB_ERR;
}

void pb_release_claim(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        unlink(path);
}
