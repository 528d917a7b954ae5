/* The engine's process: found, started, read and ended (bench/run/engine_proc.h). */
#include "bench/run/engine_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/base/jsonfield.h"
#include "bench/run/batch_frame.h"
#include "bench/base/pb.h"
#include "bench/sys/paths.h"

extern char **environ;

#define TAIL_BYTES 4096       /* the engine's stderr kept for messages     */
#define SPAWN_FD_FLOOR 10     /* pipes for the engine are moved this high   */

struct pb_engine_proc {
    pid_t pid;
    int cmd_fd;  /* its stdin                                  */
    int rec_fd;  /* its fd 3                                   */
    int err_fd;  /* its stdout and stderr                      */
    uint8_t *buf; /* frames read, [start, end) not yet handed out */
    size_t cap, start, end;
    char tail[TAIL_BYTES]; /* ring of stderr's last bytes */
    size_t tail_len, tail_pos;
    char tail_text[TAIL_BYTES + 1];
    bool ended;  /* the record pipe reached its end */
    bool reaped; /* waited for: status says how it ended */
    int status;
    char python[PB_PATH_MAX]; /* the interpreter, as started */
    char key[5 * PB_PATH_MAX]; /* its row, interpreter and PYTHONPATH: what may reuse it */
    const struct pb_engine_row *row; /* which engine it is */
};

const char *pb_engine_dir(char *buf, size_t buflen)
{
    const char *env = getenv("PBENCH_ENGINES");
    if (env && env[0])
        snprintf(buf, buflen, "%s", env);
    else
        snprintf(buf, buflen, "%s/engines", pb_share_dir());
    return buf;
}

/* A bare name (no '/') on PATH, as a shell finds it: its path into out, or
 * false. */
static bool on_path(const char *name, char *out, size_t outlen)
{
    const char *path = getenv("PATH");
    char folders[4096];
    pb_strlcpy(folders, path && path[0] ? path : "/usr/local/bin:/usr/bin:/bin", sizeof folders);
    char *save = NULL;
    for (char *f = strtok_r(folders, ":", &save); f; f = strtok_r(NULL, ":", &save)) {
        int n = snprintf(out, outlen, "%s/%s", f, name);
        struct stat st;
        if (n > 0 && (size_t)n < outlen && stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
            return true;
    }
    return false;
}

/* The interpreter to start, into out: loader.python (a bare name looked up
 * on PATH, a relative path against the config file's folder, as
 * loader.python_path), else $PBENCH_PYTHON (a bare name on PATH), else
 * Debian's interpreter. *from says which: the option, the variable or
 * the default. */
static const char *interpreter(const struct pb_engine_row *row, const struct pb_spec *spec,
                               char *out, size_t outlen, const char **from)
{
    const char *env = row->interpreter_env ? getenv(row->interpreter_env) : NULL;
    const char *name = spec->loader.python[0] ? spec->loader.python
                       : env && env[0]        ? env
                                              : row->interpreter;
    *from = spec->loader.python[0] ? "loader.python" : env && env[0] ? "$" : NULL;
    if (!strchr(name, '/')) {
        if (!on_path(name, out, outlen))
            pb_strlcpy(out, name, outlen); /* not found: said so when it is run */
    } else if (name[0] != '/' && spec->loader.python[0]) {
        char dir[PB_PATH_MAX];
        int n = snprintf(out, outlen, "%s/%s", pb_engine_config_dir(spec, dir, sizeof dir), name);
        if (n < 0 || (size_t)n >= outlen)
            pb_strlcpy(out, name, outlen); /* too long a path: said so when it is run */
    } else {
        pb_strlcpy(out, name, outlen);
    }
    return out;
}

/* Why python cannot be started (a missing file, a folder, a file that is
 * not executable), as a config error at loader.python's place; PB_OK
 * when it can. */
static int check_interpreter(const struct pb_engine_row *row, const struct pb_spec *spec,
                             const char *python, const char *from, char *msg, size_t msglen)
{
    struct stat st;
    const char *why = !strchr(python, '/')     ? "not found on PATH"
                      : stat(python, &st) != 0 ? strerror(errno)
                      : S_ISDIR(st.st_mode)  ? "it is a folder"
                      : !S_ISREG(st.st_mode) ? "it is not a file"
                      : access(python, X_OK) != 0 ? strerror(errno)
                                                  : NULL;
    if (!why)
        return PB_OK;
    char place[PB_PATH_MAX + 32] = "";
    if (from && strcmp(from, "loader.python") == 0)
        pb_engine_option_place(spec, "loader.python", place, sizeof place);
    bool env = from && from[0] == '$';
    snprintf(msg, msglen,
             "%sloader.engine %s: the interpreter '%s'%s%s%s%s cannot be started (%s); name %s "
             "with loader.python%s%s",
             place, row->name, python, from ? " (" : "", from ? from : "",
             env ? row->interpreter_env : "", from ? ")" : "", why,
             row->needs ? row->needs : "another", row->interpreter_env ? " or $" : "",
             row->interpreter_env ? row->interpreter_env : "");
    return PB_ERR_CONFIG;
}

const char *pb_engine_proc_command(const struct pb_engine_proc *p, const char *python, char *buf,
                                   size_t buflen)
{
    size_t used = (size_t)snprintf(buf, buflen, "%s", python);
    for (size_t i = 0; i < PB_ARRAY_LEN(p->row->args) && p->row->args[i] && used < buflen; i++)
        used += (size_t)snprintf(buf + used, buflen - used, " %s", p->row->args[i]);
    return buf;
}

const char *pb_engine_config_dir(const struct pb_spec *spec, char *buf, size_t buflen)
{
    const char *slash = strrchr(spec->source, '/');
    if (slash)
        snprintf(buf, buflen, "%.*s", (int)(slash - spec->source), spec->source);
    else
        snprintf(buf, buflen, ".");
    return buf;
}

/* PYTHONPATH for the engine: its package, loader.python_path's folders
 * (relative ones against the config file's folder), then the caller's. */
static void python_path(const struct pb_engine_row *row, const struct pb_spec *spec,
                        const char *engines, char *out, size_t outlen)
{
    char config_dir[PB_PATH_MAX];
    pb_engine_config_dir(spec, config_dir, sizeof config_dir);
    size_t used = (size_t)snprintf(out, outlen, "PYTHONPATH=%s%s%s", row->folder ? engines : "",
                                   row->folder ? "/" : "", row->folder ? row->folder : ".");
    char folders[PB_PATH_MAX];
    pb_strlcpy(folders, spec->loader.python_path, sizeof folders);
    char *save = NULL;
    for (char *f = strtok_r(folders, ":", &save); f && used < outlen;
         f = strtok_r(NULL, ":", &save)) {
        used += (size_t)snprintf(out + used, outlen - used, ":%s%s%s", f[0] == '/' ? "" : config_dir,
                                 f[0] == '/' ? "" : "/", f);
    }
    const char *caller = getenv("PYTHONPATH");
    if (caller && caller[0] && used < outlen)
        snprintf(out + used, outlen - used, ":%s", caller);
}

/* The environment: the caller's, with PYTHONPATH replaced and the
 * protocol's version added. NULL when out of memory. */
static char **engine_environment(const char *pythonpath)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 6, sizeof(*env));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "PYTHONPATH=", 11) != 0 &&
            strncmp(environ[i], "PBENCH_ENGINE_PROTOCOL=", 23) != 0 &&
            strncmp(environ[i], "PBENCH_CALLER_PYTHONPATH=", 25) != 0)
            env[k++] = environ[i];
    /* The caller's own PYTHONPATH, unchanged: what a job the engine starts
     * (the wrapped one) must see. */
    static char caller[PB_PATH_MAX * 4];
    const char *own = getenv("PYTHONPATH");
    if (own && snprintf(caller, sizeof caller, "PBENCH_CALLER_PYTHONPATH=%s", own) <
                   (int)sizeof caller)
        env[k++] = caller;
    env[k++] = (char *)pythonpath;
    env[k++] = "PBENCH_ENGINE_PROTOCOL=1";
    env[k++] = "PYTHONUNBUFFERED=1";
    env[k++] = "PYTHONDONTWRITEBYTECODE=1"; /* nothing written into share/ or the tree */
    env[k] = NULL;
    return env;
}

/* Moves *fd to 10 or above (close-on-exec), so that no dup2 onto the
 * child's fds 0-5 overwrites it before it is used: pbench may run with
 * its stdin closed (a pipe then lands on fd 0) or with fds 3-9 taken (the
 * live server's sockets). False, *fd unchanged, where it cannot. */
static bool lift_fd(int *fd)
{
    if (*fd >= SPAWN_FD_FLOOR)
        return true;
    int high = fcntl(*fd, F_DUPFD_CLOEXEC, SPAWN_FD_FLOOR);
    if (high < 0)
        return false;
    close(*fd);
    *fd = high;
    return true;
}

/* pbench's stderr, or /dev/null where it is closed, at 10 or above: what
 * the engine's fd 5 becomes. -1 where neither can be opened. */
static int terminal_fd(void)
{
    int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, SPAWN_FD_FLOOR);
    if (fd < 0) {
        fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (fd >= 0 && !lift_fd(&fd)) {
            close(fd);
            fd = -1;
        }
    }
    return fd;
}

/* Starts the engine with cmd[0] on its fd 0, err[1] on 1 and 2, rec[1] on
 * 3 and `terminal` (or nothing, -1) on 5; every source fd is 10 or above
 * (lift_fd), so the order of the dup2s cannot matter. */
static int spawn(struct pb_engine_proc *p, const char *python, char **env, int cmd[2],
                 int rec[2], int err[2], int terminal)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, cmd[0], 0);
    posix_spawn_file_actions_adddup2(&fa, err[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawn_file_actions_adddup2(&fa, rec[1], 3);
    if (terminal >= 0)
        posix_spawn_file_actions_adddup2(&fa, terminal, 5);
    else
        posix_spawn_file_actions_addclose(&fa, 5); /* not one of pbench's own fds */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    /* fds pbench inherited without close-on-exec (a shell's 4, 6-9) stay
     * out of the engine and the job. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 6);
    posix_spawn_file_actions_addclose(&fa, 4);
#endif
    /* A process group of its own: the engine and its DataLoader workers
     * are ended together (a worker stuck in a stage never notices its
     * parent's end), and the terminal's Ctrl-C reaches pbench alone, which
     * stops the engine through the protocol and keeps what it measured. */
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    char *argv[PB_ARRAY_LEN(p->row->args) + 2] = {(char *)python};
    for (size_t i = 0; i < PB_ARRAY_LEN(p->row->args) && p->row->args[i]; i++)
        argv[i + 1] = (char *)p->row->args[i];
    int rc = posix_spawn(&p->pid, python, &fa, &attr, argv, env);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* The engine parked between points (pb_engine_proc_park): one at most. */
static struct pb_engine_proc *parked;

/* Whether p's process still runs and has said nothing since it was parked. */
static bool idle_and_alive(struct pb_engine_proc *p)
{
    int status;
    if (p->ended || p->reaped || waitpid(p->pid, &status, WNOHANG) == p->pid)
        return false;
    struct pollfd fd = {.fd = p->rec_fd, .events = POLLIN};
    return poll(&fd, 1, 0) == 0 && p->start == p->end;
}

void pb_engine_proc_park(struct pb_engine_proc *p)
{
    if (!p)
        return;
    pb_engine_proc_release();
    json_t *release = json_pack("{s:s}", "type", "release");
    int rc = release ? pb_engine_proc_send(p, release) : PB_ERR_NOMEM;
    json_decref(release);
    if (rc != PB_OK) {
        pb_engine_proc_end(p, false);
        return;
    }
    parked = p;
}

void pb_engine_proc_release(void)
{
    struct pb_engine_proc *p = parked;
    parked = NULL;
    pb_engine_proc_end(p, true);
}

int pb_engine_proc_start(const struct pb_engine_row *row, const struct pb_spec *spec,
                         struct pb_engine_proc **out, char *msg, size_t msglen)
{
    *out = NULL;
    char python[PB_PATH_MAX];
    const char *from = NULL;
    interpreter(row, spec, python, sizeof python, &from);
    int checked = check_interpreter(row, spec, python, from, msg, msglen);
    if (checked != PB_OK)
        return checked;
    char engines[PB_PATH_MAX], pythonpath[3 * PB_PATH_MAX], key[sizeof parked->key];
    python_path(row, spec, pb_engine_dir(engines, sizeof engines), pythonpath, sizeof pythonpath);
    snprintf(key, sizeof key, "%.64s\n%s\n%s", row->name, python, pythonpath);
    if (parked && strcmp(parked->key, key) == 0 && idle_and_alive(parked)) {
        /* The same engine, its packages imported: its next `open` starts
         * the point, without the seconds a new interpreter takes. */
        struct pb_engine_proc *p = parked;
        parked = NULL;
        p->tail_len = p->tail_pos = 0;
        *out = p;
        return PB_OK;
    }
    pb_engine_proc_release();
    struct pb_engine_proc *p = calloc(1, sizeof(*p));
    if (p)
        p->row = row;
    bool spawn_failed = false;
    char **env = engine_environment(pythonpath);
    int cmd[2] = {-1, -1}, rec[2] = {-1, -1}, err[2] = {-1, -1};
    if (!p || !env || pipe2(cmd, O_CLOEXEC) || pipe2(rec, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
        snprintf(msg, msglen, "cannot start %s: %s", row->title, strerror(errno));
        goto fail;
    }
    int terminal = -1;
    if (!lift_fd(&cmd[0]) || !lift_fd(&cmd[1]) || !lift_fd(&rec[0]) || !lift_fd(&rec[1]) ||
        !lift_fd(&err[0]) || !lift_fd(&err[1]) ||
        (row->pass_terminal && (terminal = terminal_fd()) < 0)) {
        snprintf(msg, msglen, "cannot start %s: %s", row->title, strerror(errno));
        goto fail;
    }
    signal(SIGPIPE, SIG_IGN); /* an engine that died: write() says EPIPE */
    int rc = spawn(p, python, env, cmd, rec, err, terminal);
    if (terminal >= 0)
        close(terminal);
    if (rc != 0) { /* not a program the kernel runs (ENOEXEC, EACCES) */
        char place[PB_PATH_MAX + 32] = "";
        if (from && strcmp(from, "loader.python") == 0)
            pb_engine_option_place(spec, "loader.python", place, sizeof place);
        char command[PB_PATH_MAX + 128];
        pb_engine_proc_command(p, python, command, sizeof command);
        snprintf(msg, msglen, "%sloader.engine %s: the interpreter '%s' cannot be started (%s: %s)",
                 place, row->name, python, command, strerror(rc));
        spawn_failed = true;
        goto fail;
    }
    pb_strlcpy(p->python, python, sizeof p->python);
    pb_strlcpy(p->key, key, sizeof p->key);
    close(cmd[0]);
    close(rec[1]);
    close(err[1]);
    p->cmd_fd = cmd[1];
    p->rec_fd = rec[0];
    p->err_fd = err[0];
    fcntl(p->err_fd, F_SETFL, fcntl(p->err_fd, F_GETFL) | O_NONBLOCK);
    free(env);
    *out = p;
    return PB_OK;
fail:
    for (int i = 0; i < 2; i++) {
        if (cmd[i] >= 0)
            close(cmd[i]);
        if (rec[i] >= 0)
            close(rec[i]);
        if (err[i] >= 0)
            close(err[i]);
    }
    free(env);
    free(p);
    return spawn_failed ? PB_ERR_CONFIG : PB_ERR;
}

int pb_engine_put_name(json_t *obj, const char *key, const char *name)
{
    char bytes_key[64];
    snprintf(bytes_key, sizeof bytes_key, "%s_bytes", key);
    json_t *exact = pb_json_bytes(name); /* NULL for UTF-8 */
    int rc = json_object_set_new(obj, key, pb_json_text(name)) == 0 ? PB_OK : PB_ERR_NOMEM;
    if (exact && json_object_set_new(obj, bytes_key, exact) != 0)
        rc = PB_ERR_NOMEM;
    return rc;
}

const char *pb_engine_name(const json_t *obj, const char *key, char *buf, size_t buflen)
{
    char bytes_key[64];
    snprintf(bytes_key, sizeof bytes_key, "%s_bytes", key);
    if (pb_json_bytes_read(json_object_get(obj, bytes_key), buf, buflen))
        return buf;
    const char *text = json_string_value(json_object_get(obj, key));
    if (!text)
        return NULL;
    pb_strlcpy(buf, text, buflen);
    return buf;
}

int pb_engine_proc_send(struct pb_engine_proc *p, json_t *command)
{
    char *line = json_dumps(command, JSON_COMPACT);
    if (!line)
        return PB_ERR_NOMEM;
    size_t len = strlen(line);
    line[len] = '\n'; /* replaces the NUL: the buffer is not a string now */
    size_t done = 0;
    while (done < len + 1) {
        ssize_t n = write(p->cmd_fd, line + done, len + 1 - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    free(line);
    return done == len + 1 ? PB_OK : PB_ERR;
}

/* Moves what the engine wrote to stdout and stderr into the tail ring. */
static void drain_stderr(struct pb_engine_proc *p)
{
    char chunk[1024];
    for (;;) {
        ssize_t n = read(p->err_fd, chunk, sizeof chunk);
        if (n <= 0)
            return;
        for (ssize_t i = 0; i < n; i++) {
            p->tail[p->tail_pos] = chunk[i];
            p->tail_pos = (p->tail_pos + 1) % TAIL_BYTES;
            if (p->tail_len < TAIL_BYTES)
                p->tail_len++;
        }
    }
}

const char *pb_engine_proc_stderr(struct pb_engine_proc *p)
{
    drain_stderr(p);
    size_t first = (p->tail_pos + TAIL_BYTES - p->tail_len) % TAIL_BYTES;
    for (size_t i = 0; i < p->tail_len; i++)
        p->tail_text[i] = p->tail[(first + i) % TAIL_BYTES];
    p->tail_text[p->tail_len] = '\0';
    /* The last 8 lines, without the trailing newline. */
    size_t len = p->tail_len;
    while (len > 0 && p->tail_text[len - 1] == '\n')
        p->tail_text[--len] = '\0';
    if (len == 0)
        return "(nothing on its stderr)";
    const char *start = p->tail_text;
    int lines = 0;
    for (size_t i = len; i > 0; i--)
        if (p->tail_text[i - 1] == '\n' && ++lines == 8) {
            start = p->tail_text + i;
            break;
        }
    return start;
}

int pb_engine_proc_pid(const struct pb_engine_proc *p)
{
    return (int)p->pid;
}

/* A whole frame in the buffer: its type, payload and length; false when
 * more bytes are needed. */
static bool have_frame(struct pb_engine_proc *p, uint32_t *type, const uint8_t **data,
                       uint32_t *len, bool *too_big)
{
    size_t avail = p->end - p->start;
    if (avail < 8)
        return false;
    uint32_t length, t;
    memcpy(&length, p->buf + p->start, 4);
    memcpy(&t, p->buf + p->start + 4, 4);
    if (length < 4 || length > PB_ENGINE_FRAME_MAX_BYTES) {
        *too_big = true;
        return false;
    }
    if (avail < 4 + (size_t)length)
        return false;
    *type = t;
    *data = p->buf + p->start + 8;
    *len = length - 4;
    p->start += 4 + (size_t)length;
    return true;
}

/* Reads what the record pipe holds into the buffer; PB_OK, or PB_ERR at
 * its end (the engine exited) or on an error. */
static int fill(struct pb_engine_proc *p)
{
    if (p->start > 0 && p->start == p->end)
        p->start = p->end = 0;
    if (p->cap - p->end < 65536) {
        if (p->start > 0) { /* slide the unread part to the front */
            memmove(p->buf, p->buf + p->start, p->end - p->start);
            p->end -= p->start;
            p->start = 0;
        }
        if (p->cap - p->end < 65536) {
            size_t cap = p->cap ? p->cap * 2 : 1u << 20;
            uint8_t *grown = realloc(p->buf, cap);
            if (!grown)
                return PB_ERR_NOMEM;
            p->buf = grown;
            p->cap = cap;
        }
    }
    ssize_t n = read(p->rec_fd, p->buf + p->end, p->cap - p->end);
    if (n < 0 && errno == EINTR)
        return PB_OK;
    if (n <= 0) {
        p->ended = true;
        return PB_ERR;
    }
    p->end += (size_t)n;
    return PB_OK;
}

int pb_engine_proc_frame(struct pb_engine_proc *p, int timeout_ms, uint32_t *type,
                         const uint8_t **data, uint32_t *len, char *msg, size_t msglen)
{
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : pb_now_ns() + (uint64_t)timeout_ms * 1000000;
    for (;;) {
        bool too_big = false;
        if (have_frame(p, type, data, len, &too_big))
            return PB_OK;
        if (too_big) {
            snprintf(msg, msglen,
                     "%s broke the protocol (a frame over 16 MiB or under 4 bytes); its last "
                     "words: %s",
                     p->row->title, pb_engine_proc_stderr(p));
            return PB_ERR;
        }
        if (p->ended) {
            char how[160], command[PB_PATH_MAX + 128];
            pb_engine_proc_command(p, p->python, command, sizeof command);
            snprintf(msg, msglen, "%s's process (%s, pid %d) %s; its last words: %s",
                     p->row->title, command, (int)p->pid,
                     pb_engine_proc_ending(p, how, sizeof how), pb_engine_proc_stderr(p));
            return PB_ERR;
        }
        uint64_t now = pb_now_ns();
        if (now >= deadline)
            return PB_ENGINE_NO_FRAME;
        struct pollfd fds[2] = {{.fd = p->rec_fd, .events = POLLIN},
                                {.fd = p->err_fd, .events = POLLIN}};
        uint64_t left_ms = deadline == UINT64_MAX ? 1000 : (deadline - now + 999999) / 1000000;
        int n = poll(fds, 2, (int)(left_ms < 1000 ? left_ms : 1000));
        if (n < 0 && errno != EINTR)
            return PB_ERR;
        if (n > 0 && fds[1].revents)
            drain_stderr(p);
        if (n > 0 && fds[0].revents) {
            int rc = fill(p);
            if (rc == PB_ERR_NOMEM) {
                snprintf(msg, msglen, "out of memory reading %s's records", p->row->title);
                return rc;
            }
        }
    }
}

const char *pb_engine_proc_ending(struct pb_engine_proc *p, char *buf, size_t buflen)
{
    /* Its record pipe is closed: it has exited, or is about to. */
    for (int i = 0; i < 40 && !p->reaped; i++) { /* up to 2 s */
        p->reaped = waitpid(p->pid, &p->status, WNOHANG) == p->pid;
        if (!p->reaped)
            usleep(50000);
    }
    if (!p->reaped)
        snprintf(buf, buflen, "closed its record pipe and is still running");
    else if (WIFEXITED(p->status))
        snprintf(buf, buflen, "exited with status %d", WEXITSTATUS(p->status));
    else if (WIFSIGNALED(p->status))
        snprintf(buf, buflen, "was killed by signal %d (SIG%s)", WTERMSIG(p->status),
                 sigabbrev_np(WTERMSIG(p->status)) ? sigabbrev_np(WTERMSIG(p->status)) : "?");
    else
        snprintf(buf, buflen, "ended (wait status %#x)", (unsigned)p->status);
    return buf;
}

void pb_engine_proc_end(struct pb_engine_proc *p, bool polite)
{
    if (!p)
        return;
    if (polite) {
        json_t *close_cmd = json_pack("{s:s}", "type", "close");
        if (close_cmd)
            pb_engine_proc_send(p, close_cmd);
        json_decref(close_cmd);
    }
    close(p->cmd_fd); /* end of stdin: the engine exits */
    /* Short waits: a stop must end pbench within the 5 s that job runners
     * (`timeout -k 5`) give before SIGKILL, and the engine exits in well
     * under a second after close. */
    int status;
    bool gone = p->reaped; /* already waited for: its pid may be another's now */
    for (int i = 0; i < (polite ? 40 : 0) && !gone; i++) { /* up to 2 s */
        gone = waitpid(p->pid, &status, WNOHANG) == p->pid;
        if (!gone)
            usleep(50000);
    }
    if (!gone) {
        kill(-p->pid, SIGTERM); /* its group: the engine and its workers */
        for (int i = 0; i < 10 && !gone; i++) { /* 0.5 s */
            gone = waitpid(p->pid, &status, WNOHANG) == p->pid;
            if (!gone)
                usleep(50000);
        }
    }
    if (!gone) {
        kill(-p->pid, SIGKILL);
        waitpid(p->pid, &status, 0);
    }
    if (!p->reaped)
        kill(-p->pid, SIGKILL); /* workers the engine left behind, if any */
    close(p->rec_fd);
    close(p->err_fd);
    free(p->buf);
    free(p);
}

uint64_t pb_proc_cpu_ns(int pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *p = strrchr(text, ')'); /* the name may hold spaces */
    unsigned long long utime = 0, stime = 0;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                     &stime) != 2)
        return 0;
    long tck = sysconf(_SC_CLK_TCK);
    return (utime + stime) * (1000000000ull / (uint64_t)(tck > 0 ? tck : 100));
}

uint64_t pb_proc_pss_bytes(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Pss: %llu kB", &kib) == 1)
            break;
    fclose(f);
    return (uint64_t)kib * 1024;
}

void pb_engine_option_place(const struct pb_spec *spec, const char *option, char *out,
                            size_t outlen)
{
    int line = 0, column = 0, stage;
    if (option && sscanf(option, "pipeline[%d]", &stage) == 1 && stage >= 0 &&
        stage < spec->stage_count) {
        line = spec->stages[stage].line;
        column = spec->stages[stage].column;
    }
    for (int i = 0; option && !line && i < spec->position_count; i++)
        if (strcmp(spec->positions[i].path, option) == 0) {
            line = spec->positions[i].line;
            column = spec->positions[i].column;
        }
    const char *file = spec->source[0] ? spec->source : spec->name;
    if (line > 0)
        snprintf(out, outlen, "%s:%d:%d: ", file, line, column);
    else
        snprintf(out, outlen, "%s: ", file);
}

int pb_engine_keep_traceback(struct pb_point_result *point, const struct pb_engine_row *row,
                             const char *traceback)
{
    if (!point->engine)
        point->engine = json_pack("{s:s}", "name", row->name);
    if (!point->engine || json_object_set_new(point->engine, "traceback",
                                              json_string(traceback)) != 0)
        return PB_ERR_NOMEM;
    return PB_OK;
}

const char *pb_engine_traceback_tail(const char *traceback, const char *message, int lines,
                                     char *buf, size_t buflen)
{
    size_t len = strlen(traceback);
    while (len > 0 && traceback[len - 1] == '\n')
        len--;
    size_t message_len = message ? strlen(message) : 0;
    if (message_len && len > message_len && traceback[len - message_len - 1] == '\n' &&
        strncmp(traceback + len - message_len, message, message_len) == 0)
        len -= message_len + 1; /* the message is said already */
    size_t start = len;
    for (int seen = 0; start > 0; start--)
        if (traceback[start - 1] == '\n' && ++seen == lines)
            break;
    snprintf(buf, buflen, "%.*s", (int)(len - start), traceback + start);
    return buf;
}
