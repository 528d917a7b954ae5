/* pbench list (bench/cli/list.h): config sections, stages and decoders with their options,
 * defaults, ranges and availability, rendered from the tables the loader reads. */
#include "bench/cli/list.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/opt.h"
#include "bench/base/engine_row.h"
#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "bench/sys/paths.h"
#include "decoders/decoder.h"
#include "pipelines/plugin.h"
#include "pipelines/stage.h"

#define KEY_WIDTH 28
#define HELP_WIDTH 96

/* Writes text as lines of at most HELP_WIDTH columns, each indented
 * (the first by first_indent, as far as the caller has already written). */
static void print_wrapped_from(FILE *out, const char *text, int first_indent, int indent)
{
    bool first = true;
    while (*text) {
        int at = first ? first_indent : indent;
        size_t room = HELP_WIDTH - (size_t)(at > indent ? at : indent), len = strlen(text);
        size_t cut = len;
        if (len > room) {
            cut = room;
            while (cut > 0 && text[cut] != ' ')
                cut--;
            if (cut == 0)
                cut = strcspn(text, " ");
        }
        fprintf(out, "%*s%.*s\n", first ? 0 : indent, "", (int)cut, text);
        first = false;
        text += cut;
        while (*text == ' ')
            text++;
    }
}

static void print_wrapped(FILE *out, const char *text, int indent)
{
    fprintf(out, "%*s", indent, "");
    print_wrapped_from(out, text, indent, indent);
}

/* An entry's name in a column, then its tags and sentence, wrapped. */
static void print_entry(FILE *out, const char *name, const char *tags, const char *text)
{
    char line[PB_MSG_MAX * 2];
    snprintf(line, sizeof(line), "%s%s%s", tags, tags[0] ? " " : "", text ? text : "");
    int width = fprintf(out, "  %-20s ", name);
    print_wrapped_from(out, line, width, 23);
}

/* An option's help with "{engines}" filled in from the engines' rows
 * (loader.engine's: "pbench (its own C threads), torch (...) or ..."). */
static const char *option_help(const char *help, char *buf, size_t buflen)
{
    static const char token[] = "{engines}";
    const char *at = strstr(help, token);
    if (!at)
        return help;
    char engines[PB_MSG_MAX];
    pb_engine_rows_text(engines, sizeof engines);
    snprintf(buf, buflen, "%.*s%s%s", (int)(at - help), help, engines, at + strlen(token));
    return buf;
}

/* One key: "    prefix.key   what, default D" and its help below. */
static void print_option(FILE *out, const struct pb_opt *opt, const char *prefix, int indent)
{
    char key[PB_NAME_MAX * 3], what[PB_MSG_MAX], def[PB_MSG_MAX / 2] = "";
    snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "." : "", opt->name);
    pb_opt_describe(opt, what, sizeof(what));
    if (opt->def)
        snprintf(def, sizeof(def), "; default %s", opt->def[0] ? opt->def : "\"\"");
    int width = (int)strlen(key) < KEY_WIDTH ? KEY_WIDTH : (int)strlen(key) + 2;
    fprintf(out, "%*s%-*s%s%s\n", indent, "", width, key, what, def);
    char help[PB_MSG_MAX * 2];
    if (opt->help)
        print_wrapped(out, option_help(opt->help, help, sizeof help), indent + 4);
}

static void print_options(FILE *out, const struct pb_opt *opts, const char *prefix, int indent)
{
    if (!opts || !opts[0].name)
        fprintf(out, "%*s(no options)\n", indent, "");
    for (const struct pb_opt *o = opts; o && o->name; o++)
        print_option(out, o, prefix, indent);
}

static void print_section(FILE *out, const struct pb_section *s)
{
    print_entry(out, s->name, "", s->help);
    if (s->kind == PB_SECTION_VALUE)
        print_option(out, &s->opts[0], "", 4);
    else if (s->kind == PB_SECTION_OPTIONS)
        print_options(out, s->opts, s->name, 4);
    else
        print_wrapped(out, s->keys, 4);
}

static void decoder_list(char *buf, size_t buflen)
{
    size_t count, used = 0;
    const struct pb_decoder_ops *const *all = pb_decoder_all(&count);
    buf[0] = '\0';
    for (size_t i = 0; i < count && used < buflen; i++)
        used += (size_t)snprintf(buf + used, buflen - used, "%s%s", i ? ", " : "", all[i]->name);
}

static void print_decoder_key(FILE *out, const char *key, int indent)
{
    char names[PB_MSG_MAX / 2], line[PB_MSG_MAX];
    decoder_list(names, sizeof(names));
    snprintf(line, sizeof(line), "one of: %s", names);
    fprintf(out, "%*s%-*s%s\n", indent, "", KEY_WIDTH, key, line);
    print_wrapped(out, "The decoder (listed under Decoders); its options go beside this key.",
                  indent + 4);
}

static void print_stage(FILE *out, const struct pb_stage_ops *s)
{
    char tags[PB_MSG_MAX];
    snprintf(tags, sizeof(tags), "[%s%s%s]",
             s->flags & PB_STAGE_CONSUMER ? "per batch, training loop" : "per sample, worker",
             s->flags & PB_STAGE_DECODER ? ", takes decoder: NAME" : "",
             s->unavailable_reason ? ", unavailable" : "");
    print_entry(out, s->name, tags, s->summary);
    if (s->unavailable_reason)
        fprintf(out, "      why unavailable: %s\n", s->unavailable_reason);
    if (s->gpu && s->gpu->unavailable_reason)
        fprintf(out, "      device: gpu is unavailable: %s\n", s->gpu->unavailable_reason);
    else if (s->gpu)
        fprintf(out, "      device: gpu is built in: per batch on the GPU, after to_device\n");
    if (s->flags & PB_STAGE_DECODER)
        print_decoder_key(out, "decoder", 4);
    if (s->opts || !(s->flags & PB_STAGE_DECODER))
        print_options(out, s->opts, "", 4);
}

static void print_decoder(FILE *out, const struct pb_decoder_ops *d)
{
    print_entry(out, d->name, d->unavailable_reason ? "[unavailable]" : "", d->summary);
    if (d->unavailable_reason)
        fprintf(out, "      why unavailable: %s\n", d->unavailable_reason);
    print_options(out, d->opts, "", 4);
}

static void print_decoders(FILE *out)
{
    size_t count;
    const struct pb_decoder_ops *const *all = pb_decoder_all(&count);
    fprintf(out, "\nDecoders (pipeline: - decode: {decoder: NAME, KEY: VALUE}):\n");
    for (size_t i = 0; i < count; i++)
        print_decoder(out, all[i]);
}

/* The `plugin` item: what it takes and where its options are listed. */
static void print_plugin_entry(FILE *out)
{
    print_entry(out, "plugin", "[a shared object: your own stage]",
                "A stage loaded from a plugin: - plugin: {path: ./libmystage.so, KEY: VALUE}; "
                "'pbench list PATH' lists its options (docs/plugins.md).");
}

static void print_all(FILE *out)
{
    fprintf(out, "Config sections (pbench list SECTION, or SECTION.KEY for one key):\n");
    for (size_t i = 0; i < pb_section_count; i++)
        print_section(out, &pb_sections[i]);
    size_t count;
    const struct pb_stage_ops *const *stages = pb_stage_all(&count);
    fprintf(out, "\nStages (pipeline: - NAME: {KEY: VALUE}):\n");
    for (size_t i = 0; i < count; i++)
        print_stage(out, stages[i]);
    print_plugin_entry(out);
    print_decoders(out);
}

/* `pbench list ./libmystage.so`: a plugin's stage and its options. */
static int print_plugin(FILE *out, const char *path, char *msg, size_t msglen)
{
    const struct pb_plugin *plugin = NULL;
    int rc = pb_plugin_load(path, NULL, &plugin, msg, msglen);
    if (rc != PB_OK)
        return rc;
    fprintf(out, "Plugin %s (- plugin: {path: %s, KEY: VALUE}):\n", plugin->path, path);
    print_stage(out, plugin->ops);
    return PB_OK;
}

/* Everything that has a name, for "did you mean". */
#define NAMES_MAX 128

struct names {
    const char *v[NAMES_MAX];
    size_t count;
};

static void add_name(struct names *n, const char *name)
{
    if (n->count < NAMES_MAX)
        n->v[n->count++] = name;
}

static void add_table(struct names *n, const struct pb_opt *opts)
{
    for (const struct pb_opt *o = opts; o && o->name; o++)
        add_name(n, o->name);
}

/* The entries called name: sections (and the sections inside them),
 * stages and decoders. Returns whether any was. */
static bool print_named(FILE *out, const char *name)
{
    bool shown = false;
    size_t len = strlen(name), count;
    for (size_t i = 0; i < pb_section_count; i++) {
        const char *s = pb_sections[i].name;
        if (strcmp(s, name) == 0 || (strncmp(s, name, len) == 0 && s[len] == '.')) {
            print_section(out, &pb_sections[i]);
            shown = true;
        }
    }
    const struct pb_stage_ops *const *stages = pb_stage_all(&count);
    for (size_t i = 0; i < count; i++) {
        if (strcmp(stages[i]->name, name) != 0)
            continue;
        print_stage(out, stages[i]);
        if (stages[i]->flags & PB_STAGE_DECODER)
            print_decoders(out);
        shown = true;
    }
    const struct pb_decoder_ops *const *decoders = pb_decoder_all(&count);
    for (size_t i = 0; i < count; i++) {
        if (strcmp(decoders[i]->name, name) == 0) {
            print_decoder(out, decoders[i]);
            shown = true;
        }
    }
    return shown;
}

/* The key of one table, printed as prefix.key; the table's names go into
 * near for a suggestion. Returns whether it has the key. */
static bool print_table_key(FILE *out, const struct pb_opt *opts, const char *prefix,
                            const char *key, struct names *near)
{
    const struct pb_opt *opt = pb_opt_find(opts, key);
    if (opt)
        print_option(out, opt, prefix, 0);
    add_table(near, opts);
    return opt != NULL;
}

/* "OWNER.KEY": one key of a section, stage or decoder. */
static bool print_key(FILE *out, const char *owner, const char *key, struct names *near)
{
    bool shown = false;
    const struct pb_section *s = pb_section_find(owner);
    if (s && s->opts)
        shown =
            print_table_key(out, s->opts, s->kind == PB_SECTION_VALUE ? "" : s->name, key, near);
    const struct pb_stage_ops *stage = pb_stage_find(owner);
    if (stage && (stage->flags & PB_STAGE_DECODER) && strcmp(key, "decoder") == 0) {
        char label[PB_NAME_MAX * 2 + 16];
        snprintf(label, sizeof(label), "%s.decoder", owner);
        print_decoder_key(out, label, 0);
        shown = true;
    } else if (stage) {
        shown = print_table_key(out, stage->opts, owner, key, near) || shown;
    }
    const struct pb_decoder_ops *decoder = pb_decoder_find(owner);
    if (decoder)
        shown = print_table_key(out, decoder->opts, owner, key, near) || shown;
    return shown;
}

/* `pbench list configs`: the shipped configs by name, with the rule for
 * the relative paths inside them. */
static void print_configs(FILE *out)
{
    struct pb_config_entry *entries = calloc(128, sizeof(*entries));
    size_t count = entries ? pb_config_entries(entries, 128) : 0, width = 4;
    for (size_t i = 0; i < count; i++)
        width = strlen(entries[i].name) > width ? strlen(entries[i].name) : width;
    fprintf(out, "Shipped configs (pbench run NAME): ./configs/NAME.yaml first, then "
                 "%s/configs/NAME.yaml\n\n", pb_share_dir());
    for (size_t i = 0; i < count; i++)
        fprintf(out, "  %-*s  %s\n  %-*s  (%s)\n", (int)width, entries[i].name,
                entries[i].description, (int)width, "", entries[i].path);
    if (count == 0)
        fprintf(out, "  (none found)\n");
    char cache[PB_PATH_MAX], why[PB_MSG_MAX];
    if (pb_data_cache_dir(cache, sizeof(cache), why, sizeof(why)) != PB_OK)
        pb_strlcpy(cache, why, sizeof(cache));
    fprintf(out, "\n" PB_PATH_RULE "\nThe one exception: a shipped config's dataset.path is "
                 "relative to its source tree\n(a clone's ./data) or, installed, to the cache "
                 "folder, now %s\n($PBENCH_DATA, else $XDG_CACHE_HOME/pbench, else "
                 "~/.cache/pbench). docs/install.md has the details.\n", cache);
    free(entries);
}

int pb_list_print(FILE *out, const char *filter, char *msg, size_t msglen)
{
    if (!filter || !filter[0]) {
        print_all(out);
        return PB_OK;
    }
    if (strcmp(filter, "configs") == 0) {
        print_configs(out);
        return PB_OK;
    }
    if (strchr(filter, '/') || strstr(filter, ".so"))
        return print_plugin(out, filter, msg, msglen);
    if (strncmp(filter, "pipeline.", 9) == 0 && filter[9])
        filter += 9; /* pipeline.resize: the stage */
    if (strcmp(filter, "plugin") == 0) {
        print_plugin_entry(out);
        return PB_OK;
    }
    if (print_named(out, filter))
        return PB_OK;
    struct names near = {.count = 0};
    const char *dot = strrchr(filter, '.');
    if (dot && dot[1]) {
        char owner[PB_NAME_MAX * 2];
        snprintf(owner, sizeof(owner), "%.*s", (int)(dot - filter), filter);
        if (print_key(out, owner, dot + 1, &near))
            return PB_OK;
    }
    const char *bare = dot && near.count ? dot + 1 : filter;
    if (!near.count) {
        size_t count;
        for (size_t i = 0; i < pb_section_count; i++)
            add_name(&near, pb_sections[i].name);
        const struct pb_stage_ops *const *stages = pb_stage_all(&count);
        for (size_t i = 0; i < count; i++)
            add_name(&near, stages[i]->name);
        const struct pb_decoder_ops *const *decoders = pb_decoder_all(&count);
        for (size_t i = 0; i < count; i++)
            add_name(&near, decoders[i]->name);
    }
    const char *suggestion = pb_nearest_name(near.v, near.count, bare);
    if (suggestion && dot && bare != filter)
        snprintf(msg, msglen,
                 "nothing is called '%s'; did you mean '%.*s.%s'? run 'pbench list' "
                 "for every entry",
                 filter, (int)(dot - filter), filter, suggestion);
    else if (suggestion)
        snprintf(msg, msglen,
                 "nothing is called '%s'; did you mean '%s'? run 'pbench list' for "
                 "every entry",
                 filter, suggestion);
    else
        snprintf(msg, msglen, "nothing is called '%s'; run 'pbench list' for every entry", filter);
    return PB_ERR_CONFIG;
}
