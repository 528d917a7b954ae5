/* Where pbench's own files and generated data live, installed or not:
 * the share folder (shipped configs, engines, examples), shipped configs
 * found by name (`pbench run video`), and the data root a config's
 * relative dataset.path is resolved against. docs/install.md has the
 * rules a user reads. */
#ifndef PB_PATHS_H
#define PB_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* pbench's data folder: $PBENCH_SHARE when set, else
 * <folder of the executable>/../share/pbench when it exists (an installed
 * pbench: /usr/bin/pbench -> /usr/share/pbench), else the source tree
 * pbench was built from (a build folder's pbench). Found once, absolute,
 * and never NULL; it may not exist (a moved build). */
const char *pb_share_dir(void);

/* The cache folder generated data goes to when a config that is not in
 * a source tree names a relative dataset.path: $PBENCH_DATA, else
 * $XDG_CACHE_HOME/pbench, else $HOME/.cache/pbench. Returns 0, or
 * PB_ERR_CONFIG with a sentence in msg when none of them is set. */
int pb_data_cache_dir(char *out, size_t outlen, char *msg, size_t msglen);

/* What a config's relative dataset.path is relative to. */
enum pb_data_root {
    PB_DATA_ROOT_CONFIG, /* the config file's folder (users' own configs) */
    PB_DATA_ROOT_SOURCE, /* the source tree a shipped config is in: configs/x.yaml's
                            data/x is the clone's ./data/x, as it always was */
    PB_DATA_ROOT_CACHE,  /* the cache folder: a config installed in <share>/configs */
};

/* Sets root to the folder config_path's relative dataset.path is
 * resolved against and returns which rule chose it: a config in the
 * configs/ folder of a pbench source tree (one whose CMakeLists.txt says
 * project(pbench ...)) uses the tree's root; one in <share>/configs the
 * cache folder; any other its own folder. Returns a negative code with
 * msg when the config's folder cannot be resolved or the cache folder is
 * unknown. */
int pb_data_root(const char *config_path, char *root, size_t rootlen, enum pb_data_root *kind,
                 char *msg, size_t msglen);

/* Whether path lies in the cache folder (for saying so). */
bool pb_path_in_data_cache(const char *path);

/* A config named on the command line: a NAME with no '/' and no .yaml or
 * .yml suffix that is not a file here is a shipped config, looked for as
 * ./configs/NAME.yaml, then <share>/configs/NAME.yaml; anything else is
 * a path, copied as it is. Returns 0 with the path in out, or
 * PB_ERR_CONFIG with "no config called 'x' ...; known names: a, b" in msg. */
int pb_config_by_name(const char *name, char *out, size_t outlen, char *msg, size_t msglen);

/* The rule for relative paths, one sentence: said alike by `pbench help
 * run`, `pbench list configs`, the README and docs/install.md (a test holds
 * the documents to it). */
#define PB_PATH_RULE                                                                            \
    "Relative paths in a config (dataset.path, a plugin's path, loader.python,\n"               \
    "loader.python_path) are relative to the config file's folder; values given with -s are\n" \
    "relative to the current folder."

/* One shipped config: its name, its file, and its description (the first
 * sentence of its leading comment, its lines joined; cut at a word with
 * "..." where longer than the field). */
struct pb_config_entry {
    char name[64];
    char path[4096];
    char description[160];
};

/* The shipped configs, ./configs first, then <share>/configs (a name in
 * both is the first one, as pb_config_find finds it), sorted by name.
 * Returns how many were found, at most max. */
size_t pb_config_entries(struct pb_config_entry *entries, size_t max);

#endif
