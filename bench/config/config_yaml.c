/* The YAML config loader: a file's one document, walked by the section
 * table, every value parsed with its option's descriptor, every error at
 * its FILE:LINE:COL. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "bench/base/pb.h"
#include "bench/base/userinfo.h"
#include "bench/base/yaml_doc.h"
#include "bench/config/config.h"
#include "bench/config/config_scope.h"
#include "bench/config/sweep.h"
#include "pipelines/plugin.h"

#define PB_PRINTF(f, a) __attribute__((format(printf, f, a)))

struct loader {
    const char *file; /* name used in messages */
    yaml_document_t *doc;
    struct pb_spec *spec;
    char *msg;
    size_t msglen;
    bool have_pipeline;
    const yaml_node_t *sweep; /* parsed last, against the whole spec */
};

static PB_PRINTF(3, 4) int node_error(const struct loader *ld, const yaml_node_t *node,
                                      const char *fmt, ...)
{
    char sentence[PB_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    snprintf(ld->msg, ld->msglen, "%s:%zu:%zu: %s", ld->file, node->start_mark.line + 1,
             node->start_mark.column + 1, sentence);
    return PB_ERR_CONFIG;
}

static const char *node_kind(const yaml_node_t *node)
{
    switch (node->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a sequence";
    case YAML_MAPPING_NODE:
        return "a mapping";
    case YAML_NO_NODE:
        break;
    }
    return "nothing";
}

static const char *scalar_text(const yaml_node_t *node)
{
    return (const char *)node->data.scalar.value;
}

/* A plain empty, `~` or `null` scalar: where a mapping or sequence is
 * expected, it means "nothing given". Option values are never nulls: a
 * string option may well be "null" (the null decoder). */
static bool is_null(const yaml_node_t *node)
{
    if (node->type != YAML_SCALAR_NODE || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = scalar_text(node);
    return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

static yaml_node_t *get_node(const struct loader *ld, int index)
{
    return yaml_document_get_node(ld->doc, index);
}

static void qualify(const char *prefix, const char *key, char *buf, size_t buflen)
{
    if (prefix && prefix[0])
        snprintf(buf, buflen, "%s.%s", prefix, key);
    else
        snprintf(buf, buflen, "%s", key);
}

/* Every key of a mapping is a scalar and appears once. */
static int check_mapping(const struct loader *ld, const yaml_node_t *node, const char *prefix)
{
    const yaml_node_pair_t *start = node->data.mapping.pairs.start;
    for (const yaml_node_pair_t *p = start; p < node->data.mapping.pairs.top; p++) {
        const yaml_node_t *key = get_node(ld, p->key);
        if (key->type != YAML_SCALAR_NODE)
            return node_error(ld, key, "keys must be names, got %s", node_kind(key));
        for (const yaml_node_pair_t *q = start; q < p; q++) {
            const yaml_node_t *earlier = get_node(ld, q->key);
            if (strcmp(scalar_text(earlier), scalar_text(key)) == 0) {
                char qualified[PB_MSG_MAX / 2];
                qualify(prefix, scalar_text(key), qualified, sizeof qualified);
                return node_error(ld, key, "duplicate key '%s' (first set on line %zu)",
                                  qualified, earlier->start_mark.line + 1);
            }
        }
    }
    return PB_OK;
}

/* A list option's value: a sequence of scalars (`[256, 256]`, or a block
 * sequence) or one scalar, a one-element list. An error names the file,
 * line and column of the offending element. */
static int set_list_option(const struct loader *ld, const struct pb_opt *opt, void *base,
                           const char *qualified, const yaml_node_t *value)
{
    char why[PB_MSG_MAX];
    const char *items[PB_LIST_MAX + 1];
    const yaml_node_t *nodes[PB_LIST_MAX + 1];
    int count = 0;
    if (value->type == YAML_SCALAR_NODE) {
        nodes[0] = value;
        items[0] = scalar_text(value);
        count = 1;
    } else {
        for (const yaml_node_item_t *i = value->data.sequence.items.start;
             i < value->data.sequence.items.top; i++, count++) {
            const yaml_node_t *item = get_node(ld, *i);
            if (count > PB_LIST_MAX)
                continue; /* counted for the message only */
            if (item->type != YAML_SCALAR_NODE)
                return node_error(ld, item, "%s[%d] must be a scalar, got %s", qualified, count,
                                  node_kind(item));
            nodes[count] = item;
            items[count] = scalar_text(item);
        }
    }
    int bad = -1;
    if (pb_opt_parse_list(opt, items, count, base, qualified, &bad, why, sizeof why) != PB_OK)
        return node_error(ld, bad >= 0 && bad < count ? nodes[bad] : value, "%s", why);
    return PB_OK;
}

/* A plain YAML scalar as JSON reads it: a number, true/false, null, or
 * else a string (a quoted scalar is always a string). */
static json_t *scalar_to_json(const yaml_node_t *node)
{
    const char *text = scalar_text(node);
    if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && text[0]) {
        if (!strcmp(text, "true") || !strcmp(text, "false"))
            return json_boolean(text[0] == 't');
        if (!strcmp(text, "null") || !strcmp(text, "~"))
            return json_null();
        char *end;
        long long i = strtoll(text, &end, 10);
        if (*end == '\0')
            return json_integer(i);
        double d = strtod(text, &end);
        if (*end == '\0')
            return json_real(d);
    }
    return json_string(text);
}

/* A YAML value (mapping, sequence, scalar) as JSON, for a PB_OPT_JSON
 * option; NULL for a key that is not a scalar or a depth past 32. */
static json_t *node_to_json(const struct loader *ld, const yaml_node_t *node, int depth)
{
    if (depth > 32)
        return NULL;
    if (node->type == YAML_SCALAR_NODE)
        return scalar_to_json(node);
    if (node->type == YAML_SEQUENCE_NODE) {
        json_t *a = json_array();
        for (const yaml_node_item_t *i = node->data.sequence.items.start;
             a && i < node->data.sequence.items.top; i++) {
            json_t *e = node_to_json(ld, get_node(ld, *i), depth + 1);
            if (!e || json_array_append_new(a, e) != 0) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    if (node->type != YAML_MAPPING_NODE)
        return NULL;
    json_t *o = json_object();
    for (const yaml_node_pair_t *p = node->data.mapping.pairs.start;
         o && p < node->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = get_node(ld, p->key);
        json_t *v = k->type == YAML_SCALAR_NODE ? node_to_json(ld, get_node(ld, p->value), depth + 1)
                                                : NULL;
        if (!v || json_object_set_new(o, scalar_text(k), v) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* A PB_OPT_JSON option's value: a mapping, kept as JSON text. */
static int set_json_option(const struct loader *ld, const struct pb_opt *opt, void *base,
                           const char *qualified, const yaml_node_t *value)
{
    char why[PB_MSG_MAX];
    if (value->type != YAML_MAPPING_NODE &&
        !(value->type == YAML_SCALAR_NODE && scalar_text(value)[0] == '\0'))
        return node_error(ld, value, "%s must be a mapping (key: value, ...), got %s", qualified,
                          node_kind(value));
    json_t *v = value->type == YAML_MAPPING_NODE ? node_to_json(ld, value, 0) : json_object();
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    if (!text)
        return node_error(ld, value, "%s: keys must be scalars, nested at most 32 deep",
                          qualified);
    int rc = pb_opt_parse(opt, text, base, qualified, why, sizeof why);
    free(text);
    return rc == PB_OK ? PB_OK : node_error(ld, value, "%s", why);
}

/* key: value where the key must be one of the scope's options. */
static int set_option(const struct loader *ld, const struct pb_scope *scope, const yaml_node_t *key,
                      const yaml_node_t *value)
{
    char qualified[PB_MSG_MAX / 2];
    char why[PB_MSG_MAX];
    qualify(scope->prefix, scalar_text(key), qualified, sizeof qualified);
    void *base = NULL;
    const struct pb_opt *opt = pb_scope_find(scope, scalar_text(key), &base);
    if (!opt) {
        pb_scope_unknown_key(scope, qualified, scalar_text(key), why, sizeof why);
        return node_error(ld, key, "%s", why);
    }
    if (opt->type == PB_OPT_JSON) {
        pb_spec_note_position(ld->spec, qualified, (int)key->start_mark.line + 1,
                              (int)key->start_mark.column + 1);
        return set_json_option(ld, opt, base, qualified, value);
    }
    bool list = opt->type == PB_OPT_INT_LIST || opt->type == PB_OPT_DOUBLE_LIST;
    if (list && value->type == YAML_MAPPING_NODE)
        return node_error(ld, value, "%s must be a scalar or a sequence, got %s", qualified,
                          node_kind(value));
    if (list) {
        pb_spec_note_position(ld->spec, qualified, (int)key->start_mark.line + 1,
                              (int)key->start_mark.column + 1);
        return set_list_option(ld, opt, base, qualified, value);
    }
    if (value->type != YAML_SCALAR_NODE)
        return node_error(ld, value, "%s must be a scalar, got %s", qualified, node_kind(value));
    if (pb_opt_parse(opt, scalar_text(value), base, qualified, why, sizeof why) != PB_OK)
        return node_error(ld, value, "%s", why);
    pb_spec_note_position(ld->spec, qualified, (int)key->start_mark.line + 1,
                          (int)key->start_mark.column + 1);
    return PB_OK;
}

/* Applies a mapping of options; keys in scope->extras are skipped (the
 * caller handles them). A null value means "all defaults". */
static int parse_options(const struct loader *ld, const yaml_node_t *node,
                         const struct pb_scope *scope)
{
    if (is_null(node))
        return PB_OK;
    if (node->type != YAML_MAPPING_NODE)
        return node_error(ld, node, "%s must be a mapping, got %s", scope->prefix,
                          node_kind(node));
    int rc = check_mapping(ld, node, scope->prefix);
    if (rc != PB_OK)
        return rc;
    for (const yaml_node_pair_t *p = node->data.mapping.pairs.start;
         p < node->data.mapping.pairs.top; p++) {
        const yaml_node_t *key = get_node(ld, p->key);
        if (pb_scope_is_extra(scope, scalar_text(key)))
            continue;
        rc = set_option(ld, scope, key, get_node(ld, p->value));
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

/* The value of key `name` in a mapping node, or NULL. */
static const yaml_node_t *mapping_get(const struct loader *ld, const yaml_node_t *node,
                                      const char *name)
{
    if (!node || node->type != YAML_MAPPING_NODE)
        return NULL;
    for (const yaml_node_pair_t *p = node->data.mapping.pairs.start;
         p < node->data.mapping.pairs.top; p++) {
        const yaml_node_t *key = get_node(ld, p->key);
        if (key->type == YAML_SCALAR_NODE && strcmp(scalar_text(key), name) == 0)
            return get_node(ld, p->value);
    }
    return NULL;
}

/* An OPTIONS section's mapping, and the sections inside it (dataset:
 * generate), which are marked present when given. */
static int parse_section(const struct loader *ld, const struct pb_section *section,
                         const yaml_node_t *node)
{
    struct pb_scope scope;
    pb_scope_of_section(ld->spec, section, &scope);
    int rc = parse_options(ld, node, &scope);
    for (size_t e = 0; e < PB_ARRAY_LEN(scope.extras) && scope.extras[e] && rc == PB_OK; e++) {
        const yaml_node_t *inner = mapping_get(ld, node, scope.extras[e]);
        char name[PB_NAME_MAX];
        snprintf(name, sizeof name, "%s.%s", section->name, scope.extras[e]);
        const struct pb_section *child = pb_section_find(name);
        if (!inner || !child)
            continue;
        rc = parse_section(ld, child, inner);
        if (rc == PB_OK && child->present_offset)
            *(bool *)((char *)ld->spec + child->present_offset) = true;
    }
    return rc;
}

/* A decoder stage's decoder, from its `decoder` key; NULL after an error. */
static const struct pb_decoder_ops *parse_decoder(const struct loader *ld, const char *prefix,
                                                  const yaml_node_t *name_node,
                                                  const yaml_node_t *options)
{
    char why[PB_MSG_MAX];
    const yaml_node_t *value = mapping_get(ld, options, "decoder");
    if (!value) {
        const char *names[64];
        char list[PB_MSG_MAX / 2];
        pb_join_names(names, pb_decoder_names(names, PB_ARRAY_LEN(names)), list, sizeof list);
        node_error(ld, name_node, "%s.decoder is required; known decoders: %s", prefix, list);
        return NULL;
    }
    if (value->type != YAML_SCALAR_NODE) {
        node_error(ld, value, "%s.decoder must be a scalar, got %s", prefix, node_kind(value));
        return NULL;
    }
    const struct pb_decoder_ops *decoder = pb_config_decoder(scalar_text(value), why, sizeof why);
    if (!decoder)
        node_error(ld, value, "%s", why);
    return decoder;
}

/* A `plugin` item's stage: its `path` loaded (relative to the config
 * file's folder, see pipelines/plugin.h); NULL after an error. */
static const struct pb_stage_ops *parse_plugin(const struct loader *ld,
                                               const yaml_node_t *name_node,
                                               const yaml_node_t *options)
{
    char why[PB_MSG_MAX];
    const yaml_node_t *value = mapping_get(ld, options, "path");
    if (!value) {
        node_error(ld, name_node,
                   "pipeline.plugin.path is required: the plugin's shared object, e.g. "
                   "'- plugin: {path: ./libmystage.so}'");
        return NULL;
    }
    if (value->type != YAML_SCALAR_NODE) {
        node_error(ld, value, "pipeline.plugin.path must be a scalar, got %s", node_kind(value));
        return NULL;
    }
    const struct pb_plugin *plugin = NULL;
    if (pb_plugin_load(scalar_text(value), ld->file, &plugin, why, sizeof why) != PB_OK) {
        node_error(ld, value, "%s", why);
        return NULL;
    }
    return plugin->ops;
}

/* One pipeline item: `STAGE: {options}`, `STAGE:` or just `STAGE`. */
static int parse_stage(const struct loader *ld, const yaml_node_t *item)
{
    struct pb_spec *spec = ld->spec;
    char why[PB_MSG_MAX];
    const yaml_node_t *name_node = NULL, *options = NULL;
    if (item->type == YAML_SCALAR_NODE && !is_null(item)) {
        name_node = item;
    } else if (item->type == YAML_MAPPING_NODE) {
        const yaml_node_pair_t *pairs = item->data.mapping.pairs.start;
        long count = item->data.mapping.pairs.top - pairs;
        if (count == 1) {
            name_node = get_node(ld, pairs[0].key);
            options = get_node(ld, pairs[0].value);
            if (name_node->type != YAML_SCALAR_NODE)
                return node_error(ld, name_node, "a stage name must be a scalar, got %s",
                                  node_kind(name_node));
        } else if (count > 1) {
            const yaml_node_t *first = get_node(ld, pairs[0].key);
            const yaml_node_t *second = get_node(ld, pairs[1].key);
            return node_error(ld, item,
                              "a pipeline item must name one stage, got %ld keys ('%s', '%s'%s); "
                              "indent a stage's options under its name",
                              count,
                              first->type == YAML_SCALAR_NODE ? scalar_text(first) : "?",
                              second->type == YAML_SCALAR_NODE ? scalar_text(second) : "?",
                              count > 2 ? ", ..." : "");
        }
    }
    if (!name_node)
        return node_error(ld, item,
                          "a pipeline item must be a stage name with its options "
                          "('- STAGE:' or '- STAGE: {KEY: VALUE}'), got %s",
                          is_null(item) ? "nothing" : node_kind(item));

    if (spec->stage_count >= PB_MAX_STAGES)
        return node_error(ld, item, "pipeline has more than %d stages", PB_MAX_STAGES);
    const char *name = scalar_text(name_node);
    bool plugin = strcmp(name, "plugin") == 0;
    const struct pb_stage_ops *ops =
        plugin ? parse_plugin(ld, name_node, options) : pb_config_stage(name, why, sizeof why);
    if (plugin && !ops)
        return PB_ERR_CONFIG;
    if (!ops)
        return node_error(ld, name_node, "%s", why);
    if (plugin)
        name = ops->name; /* its options are pipeline.NAME.KEY, as -s names them */
    if (ops->unavailable_reason)
        return node_error(ld, name_node, "stage '%s' is not available in this build: %s", name,
                          ops->unavailable_reason);

    char prefix[PB_NAME_MAX + 16];
    snprintf(prefix, sizeof prefix, "pipeline.%s", name);
    if (options && !is_null(options)) {
        if (options->type != YAML_MAPPING_NODE)
            return node_error(ld, options, "%s must be a mapping of options, got %s", prefix,
                              node_kind(options));
        int rc = check_mapping(ld, options, prefix);
        if (rc != PB_OK)
            return rc;
    }

    const struct pb_decoder_ops *decoder = NULL;
    if ((ops->flags & PB_STAGE_DECODER) &&
        !(decoder = parse_decoder(ld, prefix, name_node, options)))
        return PB_ERR_CONFIG;
    int rc = pb_spec_add_stage(spec, ops, decoder, why, sizeof why);
    if (rc != PB_OK)
        return node_error(ld, name_node, "%s", why);
    struct pb_stage_spec *st = &spec->stages[spec->stage_count - 1];
    st->line = (int)name_node->start_mark.line + 1;
    st->column = (int)name_node->start_mark.column + 1;
    struct pb_scope scope;
    pb_scope_of_stage(st, prefix, &scope);
    if (plugin)
        scope.extras[0] = "path";
    rc = options ? parse_options(ld, options, &scope) : PB_OK;
    /* A GPU version missing from this build is the run's gpu policy to
     * explain (gpu: required fails with the reason, optional drops it). */
    if (rc == PB_OK)
        st->ops = pb_stage_for_device(st->ops, st->opts);
    return rc;
}

static int parse_pipeline(const struct loader *ld, const yaml_node_t *node)
{
    /* An empty pipeline is refused by pb_config_validate unless
     * dataset.python makes the samples (which may come later in the file). */
    if (is_null(node))
        return PB_OK;
    if (node->type != YAML_SEQUENCE_NODE)
        return node_error(ld, node, "pipeline must be a sequence of stages, got %s",
                          node_kind(node));
    for (const yaml_node_item_t *i = node->data.sequence.items.start;
         i < node->data.sequence.items.top; i++) {
        int rc = parse_stage(ld, get_node(ld, *i));
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

/* The `sweep:` section, read by bench/config/sweep.c and typed against the
 * spec (which is complete by now, whatever the order of the keys). */
static int parse_sweep(struct loader *ld)
{
    ld->spec->sweep = calloc(1, sizeof(*ld->spec->sweep));
    if (!ld->spec->sweep) {
        snprintf(ld->msg, ld->msglen, "%s: out of memory", ld->file);
        return PB_ERR_NOMEM;
    }
    int rc = pb_sweep_parse(ld->spec->sweep, ld->doc, ld->sweep, ld->file, ld->msg, ld->msglen);
    return rc == PB_OK ? pb_sweep_resolve(ld->spec->sweep, ld->spec, ld->msg, ld->msglen) : rc;
}

static int parse_root(struct loader *ld, const yaml_node_t *root)
{
    const char *top[16];
    size_t top_count = pb_top_section_names(top, PB_ARRAY_LEN(top));
    char list[PB_MSG_MAX / 2];
    pb_join_names(top, top_count, list, sizeof list);
    if (!root) {
        snprintf(ld->msg, ld->msglen, "%s: the config is empty; expected a mapping with keys %s",
                 ld->file, list);
        return PB_ERR_CONFIG;
    }
    if (root->type != YAML_MAPPING_NODE)
        return node_error(ld, root, "the config must be a mapping with keys %s, got %s", list,
                          node_kind(root));
    int rc = check_mapping(ld, root, "");
    for (const yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top && rc == PB_OK; p++) {
        const yaml_node_t *key = get_node(ld, p->key);
        const yaml_node_t *value = get_node(ld, p->value);
        const char *k = scalar_text(key);
        const struct pb_section *section = strchr(k, '.') ? NULL : pb_section_find(k);
        struct pb_scope scope;
        if (section)
            pb_spec_note_position(ld->spec, k, (int)key->start_mark.line + 1,
                                  (int)key->start_mark.column + 1);
        switch (section ? section->kind : PB_SECTION_VALUE) {
        case PB_SECTION_VALUE:
            if (!section) {
                char why[PB_MSG_MAX];
                pb_unknown_name("key", k, k, top, top_count, "allowed", why, sizeof why);
                rc = node_error(ld, key, "%s", why);
                break;
            }
            pb_scope_of_section(ld->spec, section, &scope);
            rc = set_option(ld, &scope, key, value);
            break;
        case PB_SECTION_OPTIONS:
            rc = parse_section(ld, section, value);
            if (rc == PB_OK && section->present_offset) /* wrap: */
                *(bool *)((char *)ld->spec + section->present_offset) = true;
            break;
        case PB_SECTION_PIPELINE:
            ld->have_pipeline = true;
            rc = parse_pipeline(ld, value);
            break;
        case PB_SECTION_SWEEP:
            ld->sweep = value;
            break;
        }
    }
    /* A user's Dataset (dataset.python), or a wrapped job, makes its
     * samples itself. */
    if (rc == PB_OK && !ld->have_pipeline && !pb_spec_own_samples(ld->spec)) {
        snprintf(ld->msg, ld->msglen,
                 "%s: pipeline is required (a list of stages, e.g. '- read:' then '- decode:'), "
                 "unless dataset.python names your own Dataset",
                 ld->file);
        rc = PB_ERR_CONFIG;
    }
    if (rc == PB_OK && ld->sweep)
        rc = parse_sweep(ld);
    return rc;
}

/* Loads the file at path (text == NULL) or text into spec. */
static int load(const char *path, const char *text, const char *name, struct pb_spec *spec,
                char *msg, size_t msglen)
{
    int rc = pb_spec_init(spec, name, msg, msglen);
    yaml_document_t doc;
    if (rc == PB_OK)
        rc = pb_yaml_load(path, text, name, &doc, msg, msglen);
    if (rc != PB_OK)
        return rc;
    struct loader ld = {.file = name, .doc = &doc, .spec = spec, .msg = msg, .msglen = msglen};
    rc = parse_root(&ld, yaml_document_get_root_node(&doc));
    yaml_document_delete(&doc);
    if (rc != PB_OK)
        pb_userinfo_redact_msg(msg, msglen); /* a password a value carried */
    return rc;
}

/* Cross-field rules are left to pb_config_validate(), which the caller
 * runs after applying `-s` overrides. */
int pb_config_load(const char *path, struct pb_spec *spec, char *msg, size_t msglen)
{
    return load(path, NULL, path, spec, msg, msglen);
}

int pb_config_load_string(const char *yaml, const char *name, struct pb_spec *spec, char *msg,
                          size_t msglen)
{
    return load(NULL, yaml, name, spec, msg, msglen);
}
