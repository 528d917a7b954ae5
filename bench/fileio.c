/* Atomic file writing: a temporary file beside the target, fsync, rename,
 * then fsync of the folder so the rename itself survives a crash. */
#include "bench/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/pb.h"

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
    for (char *p = dir + 1; ; p++) {
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

int pb_write_atomic(const char *path, int (*fill)(FILE *f, void *user), void *user, char *msg,
                    size_t msglen)
{
    char tmp[PB_PATH_MAX + 32];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(msg, msglen, "cannot write %s: %s", tmp, strerror(errno));
        return PB_ERR;
    }
    errno = 0;
    int rc = fill(f, user);
    if (rc == 0 && fflush(f) != 0)
        rc = -1;
    if (rc == 0 && fsync(fileno(f)) != 0)
        rc = -1;
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        snprintf(msg, msglen, "cannot write %s: %s", path, strerror(saved ? saved : EIO));
        unlink(tmp);
        return PB_ERR;
    }
    fsync_parent_dir(path);
    return PB_OK;
}
