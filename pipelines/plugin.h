/* Users' own stages as plugins: a shared object that pbench loads with
 * dlopen when a config says `- plugin: {path: ./libmystage.so, KEY: VALUE}`
 * (fio's external I/O engines are the model).
 *
 * A plugin exports two symbols, both declared by PB_PLUGIN_DEFINE:
 *   pb_plugin_abi_version  an unsigned int, PB_PLUGIN_ABI_VERSION as the
 *                          plugin was built;
 *   pb_plugin_stage        a struct pb_stage_ops (pipelines/stage.h), the
 *                          same ops table built-in stages fill, with its
 *                          own option table: YAML, `-s`, sweeps, the
 *                          result's JSON and `pbench list PATH` read it.
 * docs/plugins.md shows a whole plugin. The header is both sides' contract:
 * pbench's loader below, and what a plugin includes. */
#ifndef PB_PLUGIN_H
#define PB_PLUGIN_H

#include <stddef.h>
#include <stdio.h>

#include "bench/base/pb.h" /* PB_OK and the error codes a stage returns */
#include "pipelines/stage.h"

/* Raised whenever struct pb_stage_ops, struct pb_sample, struct pb_batch,
 * struct pb_stage_plan, struct pb_shape or struct pb_opt change layout, so
 * a plugin built against other headers is refused instead of misread. */
#define PB_PLUGIN_ABI_VERSION 2u /* 2: struct pb_opt has .size */

#define PB_PLUGIN_ABI_SYMBOL "pb_plugin_abi_version"
#define PB_PLUGIN_STAGE_SYMBOL "pb_plugin_stage"

/* In the plugin's one C file: PB_PLUGIN_DEFINE(my_stage_ops) exports the
 * ABI version and the ops table under the names pbench looks up. */
#define PB_PLUGIN_DEFINE(ops_table)                                                               \
    __attribute__((visibility("default"))) const unsigned pb_plugin_abi_version =                 \
        PB_PLUGIN_ABI_VERSION;                                                                     \
    __attribute__((visibility("default"))) const struct pb_stage_ops *const pb_plugin_stage =     \
        &(ops_table)

/* A loaded plugin. Plugins stay loaded until the process ends (their ops
 * tables are referenced by specs and results), and loading the same file
 * twice gives the same entry. */
struct pb_plugin {
    char path[4096];               /* the file as loaded (absolute when it
                                      was found by a relative path)        */
    const struct pb_stage_ops *ops;
    void *handle;
};

/* Loads the plugin at path. A path with a '/' that is not absolute is
 * taken relative to the folder of relative_to (the config file; NULL or ""
 * for the working directory); a bare file name is looked for in the
 * `plugins` folder beside the pbench executable, then in ../lib/pbench/plugins
 * from it (an installed pbench), then where dlopen looks
 * (LD_LIBRARY_PATH, the system's folders). Checks the ABI version and the
 * ops table (a name no built-in stage has, a worker or training-loop
 * stage with its callbacks). Returns PB_OK with *plugin set, or
 * PB_ERR_CONFIG with a sentence naming the path and what is wrong: no such
 * file, not a loadable object (dlerror), a missing symbol, or "built for
 * plugin ABI version X, this pbench has Y". */
int pb_plugin_load(const char *path, const char *relative_to, const struct pb_plugin **plugin,
                   char *msg, size_t msglen);

/* The loaded plugin whose stage is ops, or NULL for a built-in stage. */
const struct pb_plugin *pb_plugin_of(const struct pb_stage_ops *ops);

#endif
