/* Atomic file writing: a temporary file beside the target, fsync, rename,
 * then fsync of the folder so the rename itself survives a crash. */
#include "bench/base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
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

static void fsync_parent_dir(const char *path)
{
    char dir[PB_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
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
