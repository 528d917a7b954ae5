/* The plugin loader (pipelines/plugin.h): dlopen, the two symbols, the
 * ABI check, and a process-wide list of what is loaded. */
#include "pipelines/plugin.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/base/pb.h"

#define PLUGINS_MAX 16

static struct pb_plugin loaded[PLUGINS_MAX];
static int loaded_count;
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;

/* Where path names a file: absolute as is, with a '/' against the folder
 * of relative_to, a bare name in the plugins folder beside the executable
 * or in ../lib/pbench/plugins from it (installed) when it is there (else the bare name, for dlopen's own search). */
static void resolve(const char *path, const char *relative_to, char *out, size_t outlen)
{
    if (path[0] == '/') {
        snprintf(out, outlen, "%s", path);
    } else if (strchr(path, '/')) {
        const char *rest = path;
        while (rest[0] == '.' && rest[1] == '/')
            rest += 2;
        const char *slash = relative_to ? strrchr(relative_to, '/') : NULL;
        if (slash)
            snprintf(out, outlen, "%.*s/%s", (int)(slash - relative_to), relative_to, rest);
        else
            snprintf(out, outlen, "%s", path);
    } else {
        char exe[PB_PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        char *slash = NULL;
        if (n > 0) {
            exe[n] = '\0';
            slash = strrchr(exe, '/');
        }
        /* Beside the executable (a build folder), then where an
         * installed pbench keeps its plugins (<prefix>/lib/pbench/plugins). */
        static const char *const folders[] = {"plugins", "../lib/pbench/plugins"};
        for (size_t i = 0; slash && i < PB_ARRAY_LEN(folders); i++) {
            snprintf(out, outlen, "%.*s/%s/%s", (int)(slash - exe), exe, folders[i], path);
            if (access(out, F_OK) == 0)
                return;
        }
        snprintf(out, outlen, "%s", path);
    }
    char real[PATH_MAX];
    if (strchr(out, '/') && realpath(out, real))
        snprintf(out, outlen, "%s", real);
}

/* The ops table's own rules: what pbench needs to run it. */
static int check_ops(const char *file, const struct pb_stage_ops *ops, char *msg, size_t msglen)
{
    const char *why = NULL;
    unsigned side = ops->flags & (PB_STAGE_WORKER | PB_STAGE_CONSUMER);
    if (!ops->name || !ops->name[0] || strlen(ops->name) >= PB_NAME_MAX)
        why = "its stage has no name (or one longer than 63 characters)";
    else if (strcmp(ops->name, "plugin") == 0 || pb_stage_find(ops->name))
        why = "its stage takes the name of a built-in stage";
    else if (side != PB_STAGE_WORKER && side != PB_STAGE_CONSUMER)
        why = "its flags must say PB_STAGE_WORKER or PB_STAGE_CONSUMER, one of them";
    else if (ops->flags & (PB_STAGE_DECODER | PB_STAGE_TO_DEVICE | PB_STAGE_GPU))
        why = "only worker and training-loop stages can be plugins (no decoder, to_device or "
              "GPU flags)";
    else if (!ops->init || !ops->cleanup)
        why = "its ops table has no init or no cleanup";
    else if (side == PB_STAGE_WORKER ? !ops->process : !ops->process_batch)
        why = "its ops table has no process (worker) or process_batch (training loop)";
    else if (ops->opts_size && !ops->opts)
        why = "its ops table gives opts_size without an option table";
    if (!why)
        return PB_OK;
    snprintf(msg, msglen, "plugin %s (stage '%s'): %s; see docs/plugins.md", file,
             ops->name ? ops->name : "", why);
    return PB_ERR_CONFIG;
}

/* dlopen and the checks; on success fills p (the caller holds the lock). */
static int open_plugin(const char *path, const char *file, struct pb_plugin *p, char *msg,
                       size_t msglen)
{
    if (strchr(file, '/') && access(file, F_OK) != 0) {
        if (strcmp(path, file) == 0)
            snprintf(msg, msglen, "plugin %s: no such file", path);
        else
            snprintf(msg, msglen, "plugin %s: no such file (looked for %s)", path, file);
        return PB_ERR_CONFIG;
    }
    dlerror();
    void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *err = dlerror();
        snprintf(msg, msglen, "plugin %s: cannot load it: %s", path, err ? err : "dlopen failed");
        return PB_ERR_CONFIG;
    }
    const unsigned *abi = dlsym(handle, PB_PLUGIN_ABI_SYMBOL);
    const struct pb_stage_ops *const *stage = dlsym(handle, PB_PLUGIN_STAGE_SYMBOL);
    const char *missing = !abi ? PB_PLUGIN_ABI_SYMBOL : !stage ? PB_PLUGIN_STAGE_SYMBOL : NULL;
    int rc = PB_OK;
    if (missing) {
        snprintf(msg, msglen,
                 "plugin %s has no symbol '%s': it is not a pbench plugin (a plugin defines "
                 "%s and %s with PB_PLUGIN_DEFINE; see docs/plugins.md)",
                 file, missing, PB_PLUGIN_ABI_SYMBOL, PB_PLUGIN_STAGE_SYMBOL);
        rc = PB_ERR_CONFIG;
    } else if (*abi != PB_PLUGIN_ABI_VERSION) {
        snprintf(msg, msglen,
                 "plugin %s was built for plugin ABI version %u, this pbench has version %u: "
                 "rebuild it against this pbench's pipelines/plugin.h",
                 file, *abi, PB_PLUGIN_ABI_VERSION);
        rc = PB_ERR_CONFIG;
    } else if (!*stage) {
        snprintf(msg, msglen, "plugin %s: its %s is NULL", file, PB_PLUGIN_STAGE_SYMBOL);
        rc = PB_ERR_CONFIG;
    } else {
        rc = check_ops(file, *stage, msg, msglen);
    }
    if (rc != PB_OK) {
        dlclose(handle);
        return rc;
    }
    snprintf(p->path, sizeof p->path, "%s", file);
    p->ops = *stage;
    p->handle = handle;
    return PB_OK;
}

int pb_plugin_load(const char *path, const char *relative_to, const struct pb_plugin **plugin,
                   char *msg, size_t msglen)
{
    *plugin = NULL;
    if (!path || !path[0]) {
        snprintf(msg, msglen, "plugin needs a path (the shared object, e.g. ./libmystage.so)");
        return PB_ERR_CONFIG;
    }
    char file[PB_PATH_MAX];
    resolve(path, relative_to, file, sizeof file);
    pthread_mutex_lock(&loaded_lock);
    int rc = PB_OK;
    for (int i = 0; i < loaded_count && !*plugin; i++)
        if (strcmp(loaded[i].path, file) == 0)
            *plugin = &loaded[i];
    if (!*plugin && loaded_count == PLUGINS_MAX) {
        snprintf(msg, msglen, "plugin %s: more than %d plugins in one process", path, PLUGINS_MAX);
        rc = PB_ERR_CONFIG;
    } else if (!*plugin) {
        rc = open_plugin(path, file, &loaded[loaded_count], msg, msglen);
        if (rc == PB_OK) {
            /* Another file may hold a stage of the same name. */
            for (int i = 0; i < loaded_count && rc == PB_OK; i++)
                if (strcmp(loaded[i].ops->name, loaded[loaded_count].ops->name) == 0) {
                    snprintf(msg, msglen, "plugin %s: its stage '%s' has the name of plugin %s's",
                             file, loaded[i].ops->name, loaded[i].path);
                    dlclose(loaded[loaded_count].handle);
                    memset(&loaded[loaded_count], 0, sizeof loaded[0]);
                    rc = PB_ERR_CONFIG;
                }
            if (rc == PB_OK)
                *plugin = &loaded[loaded_count++];
        }
    }
    pthread_mutex_unlock(&loaded_lock);
    return rc;
}

const struct pb_plugin *pb_plugin_of(const struct pb_stage_ops *ops)
{
    const struct pb_plugin *found = NULL;
    pthread_mutex_lock(&loaded_lock);
    for (int i = 0; i < loaded_count && !found; i++)
        if (loaded[i].ops == ops)
            found = &loaded[i];
    pthread_mutex_unlock(&loaded_lock);
    return found;
}
