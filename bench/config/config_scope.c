/* The keys a config mapping accepts (bench/config/config_scope.h), and the "unknown key;
 * did you mean" sentences that the YAML loader and -s share. */
#include "bench/config/config_scope.h"

#include <stdio.h>
#include <string.h>

#include "bench/base/pb.h"

static size_t scope_names(const struct pb_scope *scope, const char **names, size_t cap)
{
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == (scope->extras_last ? 1 : 0)) {
            for (size_t i = 0; i < PB_ARRAY_LEN(scope->extras) && n < cap; i++) {
                if (scope->extras[i])
                    names[n++] = scope->extras[i];
            }
            continue;
        }
        for (size_t t = 0; t < 2; t++) {
            for (const struct pb_opt *o = scope->opts[t]; o && o->name && n < cap; o++)
                names[n++] = o->name;
        }
    }
    return n;
}

bool pb_scope_is_extra(const struct pb_scope *scope, const char *key)
{
    for (size_t i = 0; i < PB_ARRAY_LEN(scope->extras) && scope->extras[i]; i++) {
        if (strcmp(scope->extras[i], key) == 0)
            return true;
    }
    return false;
}

const struct pb_opt *pb_scope_find(const struct pb_scope *scope, const char *key, void **base)
{
    for (size_t t = 0; t < 2; t++) {
        const struct pb_opt *opt = pb_opt_find(scope->opts[t], key);
        if (opt) {
            *base = scope->bases[t];
            return opt;
        }
    }
    return NULL;
}

void pb_join_names(const char *const *names, size_t count, char *buf, size_t buflen)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        int n = snprintf(buf + used, buflen - used, "%s%s", i ? ", " : "", names[i]);
        if (n < 0 || (size_t)n >= buflen - used)
            return;
        used += (size_t)n;
    }
}

void pb_unknown_name(const char *kind, const char *qualified, const char *bare,
                     const char *const *names, size_t count, const char *list_label, char *buf,
                     size_t buflen)
{
    char list[PB_MSG_MAX / 2];
    pb_join_names(names, count, list, sizeof list);
    const char *near = pb_nearest_name(names, count, bare);
    if (near)
        snprintf(buf, buflen, "unknown %s '%s'; did you mean '%s'? %s: %s", kind, qualified, near,
                 list_label, list);
    else
        snprintf(buf, buflen, "unknown %s '%s'; %s: %s", kind, qualified, list_label, list);
}

void pb_scope_unknown_key(const struct pb_scope *scope, const char *qualified, const char *bare,
                          char *buf, size_t buflen)
{
    /* Keys pbench had once, and what took their place. */
    if (strcmp(bare, "drop_cache") == 0 && pb_scope_find(scope, "block_kib", &(void *){NULL})) {
        snprintf(buf, buflen,
                 "'%s' was removed: set dataset.cache: cold to evict the dataset's files before "
                 "each repeat and each file after it is read (or direct for O_DIRECT reads); "
                 "see docs/storage.md",
                 qualified);
        return;
    }
    const char *names[64];
    size_t count = scope_names(scope, names, PB_ARRAY_LEN(names));
    pb_unknown_name("key", qualified, bare, names, count, "allowed", buf, buflen);
}

void pb_scope_of_section(const struct pb_spec *spec, const struct pb_section *section,
                         struct pb_scope *scope)
{
    memset(scope, 0, sizeof(*scope));
    bool top = section->kind == PB_SECTION_VALUE;
    scope->prefix = top ? "" : section->name;
    scope->opts[0] = section->opts;
    scope->bases[0] = (char *)spec + section->offset;
    scope->extras_last = true;
    size_t len = strlen(section->name), extras = 0;
    for (size_t i = 0; i < pb_section_count && !top; i++) {
        const char *name = pb_sections[i].name;
        if (strncmp(name, section->name, len) == 0 && name[len] == '.' &&
            !strchr(name + len + 1, '.') && extras < PB_ARRAY_LEN(scope->extras))
            scope->extras[extras++] = name + len + 1;
    }
}

void pb_scope_of_stage(const struct pb_stage_spec *st, const char *prefix, struct pb_scope *scope)
{
    memset(scope, 0, sizeof(*scope));
    scope->prefix = prefix;
    if (st->ops->flags & PB_STAGE_DECODER)
        scope->extras[0] = "decoder";
    if (st->opts) {
        scope->opts[0] = st->ops->opts;
        scope->bases[0] = st->opts;
    }
    if (st->decoder && st->decoder_opts) {
        scope->opts[1] = st->decoder->opts;
        scope->bases[1] = st->decoder_opts;
    }
}

size_t pb_top_section_names(const char **names, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < pb_section_count && n < cap; i++)
        if (!strchr(pb_sections[i].name, '.'))
            names[n++] = pb_sections[i].name;
    return n;
}

size_t pb_decoder_names(const char **names, size_t cap)
{
    size_t count, n = 0;
    const struct pb_decoder_ops *const *all = pb_decoder_all(&count);
    for (size_t i = 0; i < count && n < cap; i++)
        names[n++] = all[i]->name;
    return n;
}
