/* The keys a config mapping accepts, and the sentences about names that
 * are not among them ("unknown key 'loader.wrkers'; did you mean
 * 'workers'? allowed: ..."). Shared by the YAML loader and `-s`
 * overrides, so both say the same thing. */
#ifndef PB_CONFIG_SCOPE_H
#define PB_CONFIG_SCOPE_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/base/opt.h"
#include "bench/config/spec.h"

/* The keys a mapping accepts: keys the caller handles itself (extras, such
 * as a stage's `decoder` or dataset's `generate`) and up to two option
 * tables with the structs their values go into. */
struct pb_scope {
    const char *prefix; /* "loader", "pipeline.decode"; "" at the top */
    const char *extras[3];
    const struct pb_opt *opts[2];
    void *bases[2];
    bool extras_last; /* list extras after the tables' names in messages */
};

/* The scope of an OPTIONS or VALUE section of spec: its table, and the
 * sections inside it as extras (dataset: generate). */
void pb_scope_of_section(const struct pb_spec *spec, const struct pb_section *section,
                         struct pb_scope *scope);

/* The scope of a stage: `decoder` (decoder stages), its own options and
 * its decoder's. */
void pb_scope_of_stage(const struct pb_stage_spec *st, const char *prefix, struct pb_scope *scope);

/* Whether key is one of the scope's extras. */
bool pb_scope_is_extra(const struct pb_scope *scope, const char *key);

/* The option key names in the scope, and the struct it goes into; NULL
 * when none does. */
const struct pb_opt *pb_scope_find(const struct pb_scope *scope, const char *key, void **base);

/* "unknown key 'qualified'; did you mean 'x'? allowed: a, b, c", the
 * suggestion looked for with the bare key the user typed. */
void pb_scope_unknown_key(const struct pb_scope *scope, const char *qualified, const char *bare,
                          char *buf, size_t buflen);

/* "unknown KIND 'qualified'; did you mean 'x'? LIST_LABEL: a, b, c". */
void pb_unknown_name(const char *kind, const char *qualified, const char *bare,
                     const char *const *names, size_t count, const char *list_label, char *buf,
                     size_t buflen);

/* Writes names comma separated ("a, b, c"), cut short if buf is full. */
void pb_join_names(const char *const *names, size_t count, char *buf, size_t buflen);

/* The names of the top-level sections (name, dataset, pipeline, ...), in
 * table order; returns how many (at most cap). */
size_t pb_top_section_names(const char **names, size_t cap);

/* The registry's decoder names, in registry order; returns how many. */
size_t pb_decoder_names(const char **names, size_t cap);

#endif
