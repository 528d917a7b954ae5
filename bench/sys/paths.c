/* Where pbench's own files and generated data live (paths.h). */
#include "bench/sys/paths.h"

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/base/pb.h"

#ifndef PB_SOURCE_DIR
#define PB_SOURCE_DIR "."
#endif

static char share_dir[PB_PATH_MAX];
static pthread_once_t share_once = PTHREAD_ONCE_INIT;

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void find_share_dir(void)
{
    const char *env = getenv("PBENCH_SHARE");
    if (env && env[0]) {
        pb_strlcpy(share_dir, env, sizeof(share_dir));
        return;
    }
    char exe[PB_PATH_MAX], installed[PB_PATH_MAX + 32], resolved[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        snprintf(installed, sizeof(installed), "%s/../share/pbench", exe);
        if (realpath(installed, resolved) && is_dir(resolved)) {
            pb_strlcpy(share_dir, resolved, sizeof(share_dir));
            return;
        }
    }
    pb_strlcpy(share_dir, PB_SOURCE_DIR, sizeof(share_dir));
}

const char *pb_share_dir(void)
{
    pthread_once(&share_once, find_share_dir);
    return share_dir;
}

int pb_data_cache_dir(char *out, size_t outlen, char *msg, size_t msglen)
{
    const char *data = getenv("PBENCH_DATA"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (data && data[0])
        n = snprintf(out, outlen, "%s", data);
    else if (xdg && xdg[0] == '/')
        n = snprintf(out, outlen, "%s/pbench", xdg);
    else if (home && home[0])
        n = snprintf(out, outlen, "%s/.cache/pbench", home);
    else {
        snprintf(msg, msglen, "no folder for generated data: set PBENCH_DATA (or "
                              "XDG_CACHE_HOME, or HOME)");
        return PB_ERR_CONFIG;
    }
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(msg, msglen, "the folder for generated data is too long a path");
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

/* Whether folder/CMakeLists.txt is pbench's: it declares project(pbench. */
static bool is_source_tree(const char *folder)
{
    char path[PB_PATH_MAX + 32], text[4096];
    snprintf(path, sizeof(path), "%s/CMakeLists.txt", folder);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    return strstr(text, "project(pbench ") || strstr(text, "project(pbench)");
}

int pb_data_root(const char *config_path, char *root, size_t rootlen, enum pb_data_root *kind,
                 char *msg, size_t msglen)
{
    char config[PATH_MAX], share[PATH_MAX + 16];
    if (!realpath(config_path, config)) {
        snprintf(msg, msglen, "%s: cannot resolve its folder", config_path);
        return PB_ERR_CONFIG;
    }
    char *slash = strrchr(config, '/');
    *slash = '\0'; /* realpath is absolute: there is one */
    if (config[0] == '\0')
        pb_strlcpy(config, "/", sizeof(config));
    const char *base = strrchr(config, '/');
    if (strcmp(base, "/configs") == 0) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%.*s", (int)(base - config), config);
        if (is_source_tree(parent[0] ? parent : "/")) {
            *kind = PB_DATA_ROOT_SOURCE;
            snprintf(root, rootlen, "%s", parent[0] ? parent : "/");
            return PB_OK;
        }
        snprintf(share, sizeof(share), "%s/configs", pb_share_dir());
        char shared[PATH_MAX];
        if (realpath(share, shared) && strcmp(shared, config) == 0) {
            *kind = PB_DATA_ROOT_CACHE;
            return pb_data_cache_dir(root, rootlen, msg, msglen);
        }
    }
    *kind = PB_DATA_ROOT_CONFIG;
    snprintf(root, rootlen, "%s", config);
    return PB_OK;
}

bool pb_path_in_data_cache(const char *path)
{
    char cache[PB_PATH_MAX], msg[128];
    if (pb_data_cache_dir(cache, sizeof(cache), msg, sizeof(msg)) != PB_OK)
        return false;
    size_t n = strlen(cache);
    while (n > 1 && cache[n - 1] == '/')
        n--;
    return strncmp(path, cache, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* ---- shipped configs by name ---- */

/* Whether name ends in .yaml or .yml; its length without it in *stem. */
static bool yaml_name(const char *name, size_t *stem)
{
    size_t n = strlen(name);
    if (n > 5 && strcmp(name + n - 5, ".yaml") == 0) {
        *stem = n - 5;
        return true;
    }
    if (n > 4 && strcmp(name + n - 4, ".yml") == 0) {
        *stem = n - 4;
        return true;
    }
    return false;
}

/* The first line of the file's leading comment, without "# ". */
static void first_comment_line(const char *path, char *out, size_t outlen)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    /* The first sentence of the leading comment, its lines joined: a
     * description cut mid-phrase ("... my_data.py (a") says nothing. */
    char line[1024], text[1024] = "";
    size_t used = 0;
    while (fgets(line, sizeof(line), f)) {
        const char *p = line + strspn(line, " \t");
        if (*p != '#')
            break; /* the comment ends (or there is none) */
        p += 1 + strspn(p + 1, " \t");
        size_t n = strcspn(p, "\r\n");
        if (n == 0)
            break; /* a blank comment line ends the first paragraph */
        used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%.*s", used ? " " : "",
                                 (int)n, p);
        if (used >= sizeof(text) - 1 || (n > 0 && p[n - 1] == '.') || strstr(text, ". "))
            break;
    }
    fclose(f);
    char *stop = strstr(text, ". ");
    if (stop)
        stop[1] = '\0';
    if (strlen(text) < outlen) {
        pb_strlcpy(out, text, outlen);
        return;
    }
    /* Too long for one line of the list: cut at a word, and say so. */
    size_t cut = outlen > 4 ? outlen - 4 : 0;
    while (cut > 0 && text[cut] != ' ')
        cut--;
    snprintf(out, outlen, "%.*s...", (int)cut, text);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct pb_config_entry *)a)->name,
                  ((const struct pb_config_entry *)b)->name);
}

/* Adds folder's *.yaml configs to entries, names already there skipped. */
static size_t add_folder(const char *folder, struct pb_config_entry *entries, size_t count,
                         size_t max)
{
    DIR *d = opendir(folder);
    if (!d)
        return count;
    for (struct dirent *e; count < max && (e = readdir(d));) {
        size_t stem;
        if (e->d_name[0] == '.' || !yaml_name(e->d_name, &stem) ||
            stem >= sizeof(entries[0].name))
            continue;
        struct pb_config_entry *c = &entries[count];
        snprintf(c->name, sizeof(c->name), "%.*s", (int)stem, e->d_name);
        snprintf(c->path, sizeof(c->path), "%s/%s", folder, e->d_name);
        bool seen = false;
        for (size_t i = 0; i < count && !seen; i++)
            seen = strcmp(entries[i].name, c->name) == 0;
        if (seen || !is_file(c->path))
            continue;
        first_comment_line(c->path, c->description, sizeof(c->description));
        count++;
    }
    closedir(d);
    return count;
}

/* The two folders shipped configs are looked for in, in order; the
 * second is empty when it is the first (run in the source tree). */
static void config_folders(char here[PATH_MAX], char shared[PB_PATH_MAX + 16])
{
    snprintf(shared, PB_PATH_MAX + 16, "%s/configs", pb_share_dir());
    char a[PATH_MAX], b[PATH_MAX];
    pb_strlcpy(here, "configs", PATH_MAX);
    if (realpath(here, a) && realpath(shared, b) && strcmp(a, b) == 0)
        shared[0] = '\0';
}

size_t pb_config_entries(struct pb_config_entry *entries, size_t max)
{
    char here[PATH_MAX], shared[PB_PATH_MAX + 16];
    config_folders(here, shared);
    size_t count = add_folder(here, entries, 0, max);
    size_t local = count;
    if (shared[0])
        count = add_folder(shared, entries, count, max);
    qsort(entries, local, sizeof(*entries), by_name);
    qsort(entries + local, count - local, sizeof(*entries), by_name);
    return count;
}

int pb_config_by_name(const char *name, char *out, size_t outlen, char *msg, size_t msglen)
{
    size_t stem;
    if (strchr(name, '/') || yaml_name(name, &stem) || is_file(name) || !name[0]) {
        snprintf(out, outlen, "%s", name);
        return PB_OK;
    }
    char here[PATH_MAX], shared[PB_PATH_MAX + 16];
    config_folders(here, shared);
    const char *folders[] = {here, shared};
    for (size_t i = 0; i < PB_ARRAY_LEN(folders); i++) {
        int n = snprintf(out, outlen, "%s/%s.yaml", folders[i], name);
        if (folders[i][0] && n > 0 && (size_t)n < outlen && is_file(out))
            return PB_OK;
    }
    struct pb_config_entry *entries = calloc(64, sizeof(*entries));
    size_t count = entries ? pb_config_entries(entries, 64) : 0;
    int used = snprintf(msg, msglen,
                        "no config called '%s': not a file here, not in ./configs/%s%s; known "
                        "names (pbench list configs):",
                        name, shared[0] ? " nor in " : "", shared);
    for (size_t i = 0; i < count && used > 0 && (size_t)used < msglen; i++)
        used += snprintf(msg + used, msglen - (size_t)used, "%s %s", i ? "," : "",
                         entries[i].name);
    if (count == 0 && used > 0 && (size_t)used < msglen)
        snprintf(msg + used, msglen - (size_t)used, " none");
    free(entries);
    return PB_ERR_CONFIG;
}
