/* The fully resolved spec as JSON (every default included), as written
 * into result files, and back. Driven by the section table. */
#include <stdio.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/config/config.h"
#include "pipelines/plugin.h"

/* Sets obj[key] = value, taking over value (NULL means it failed). */
static bool put(json_t *obj, const char *key, json_t *value)
{
    return json_object_set_new(obj, key, value) == 0;
}

static json_t *stage_to_json(const struct pb_stage_spec *st)
{
    json_t *opts = json_object();
    if (!opts)
        return NULL;
    bool ok = true;
    if (st->decoder)
        ok = put(opts, "decoder", json_string(st->decoder->name));
    const struct pb_plugin *plugin = pb_plugin_of(st->ops);
    if (plugin) /* read back as `- plugin: {path: ...}` */
        ok = put(opts, "path", json_string(plugin->path));
    const struct pb_opt *tables[2] = {st->opts ? st->ops->opts : NULL,
                                      st->decoder_opts ? st->decoder->opts : NULL};
    const void *bases[2] = {st->opts, st->decoder_opts};
    for (int t = 0; t < 2 && ok; t++) {
        if (!tables[t])
            continue;
        json_t *part = pb_opt_to_json(tables[t], bases[t]);
        ok = part && json_object_update(opts, part) == 0;
        json_decref(part);
    }
    if (!ok) {
        json_decref(opts);
        return NULL;
    }
    json_t *item = json_object();
    if (!item) {
        json_decref(opts);
        return NULL;
    }
    return put(item, plugin ? "plugin" : st->ops->name, opts) ? item : (json_decref(item), NULL);
}

static json_t *pipeline_to_json(const struct pb_spec *spec)
{
    json_t *pipeline = json_array();
    bool ok = pipeline != NULL;
    for (int i = 0; ok && i < spec->stage_count; i++)
        ok = json_array_append_new(pipeline, stage_to_json(&spec->stages[i])) == 0;
    return ok ? pipeline : (json_decref(pipeline), NULL);
}

/* The object a section's keys go into: the root, or its parent's object
 * ("dataset" for dataset.generate), NULL when that is not there. */
static json_t *parent_object(json_t *root, const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return root;
    char parent[PB_NAME_MAX];
    snprintf(parent, sizeof parent, "%.*s", (int)(dot - name), name);
    return json_object_get(root, parent);
}

json_t *pb_spec_to_json(const struct pb_spec *spec)
{
    json_t *root = json_object();
    bool ok = root != NULL;
    for (size_t i = 0; ok && i < pb_section_count; i++) {
        const struct pb_section *s = &pb_sections[i];
        const void *base = (const char *)spec + s->offset;
        if (s->present_offset && !*(const bool *)((const char *)spec + s->present_offset))
            continue;
        json_t *value = NULL;
        if (s->kind == PB_SECTION_VALUE) {
            json_t *one = pb_opt_to_json(s->opts, base);
            ok = one && json_object_update(root, one) == 0;
            json_decref(one);
            continue;
        }
        if (s->kind == PB_SECTION_SWEEP)
            continue; /* a result records each point's axes instead */
        value =
            s->kind == PB_SECTION_PIPELINE ? pipeline_to_json(spec) : pb_opt_to_json(s->opts, base);
        json_t *parent = parent_object(root, s->name);
        const char *key = strrchr(s->name, '.') ? strrchr(s->name, '.') + 1 : s->name;
        /* put() takes over the value it is given, even when it fails. */
        ok = parent && value && put(parent, key, value);
        if (!parent)
            json_decref(value);
    }
    if (!ok) {
        json_decref(root);
        return NULL;
    }
    return root;
}

static int stage_from_json(struct pb_spec *spec, size_t index, const json_t *item, char *msg,
                           size_t msglen)
{
    if (!json_is_object(item) || json_object_size(item) != 1) {
        snprintf(msg, msglen, "pipeline item %zu must be an object with one key, the stage name",
                 index);
        return PB_ERR_CONFIG;
    }
    const char *name = json_object_iter_key(json_object_iter((json_t *)item));
    const json_t *opts = json_object_iter_value(json_object_iter((json_t *)item));
    const struct pb_stage_ops *ops = NULL;
    if (strcmp(name, "plugin") == 0) {
        const json_t *path = json_is_object(opts) ? json_object_get(opts, "path") : NULL;
        const struct pb_plugin *plugin = NULL;
        if (!json_is_string(path)) {
            snprintf(msg, msglen, "pipeline item %zu: plugin.path is required", index);
            return PB_ERR_CONFIG;
        }
        if (pb_plugin_load(json_string_value(path), NULL, &plugin, msg, msglen) != PB_OK)
            return PB_ERR_CONFIG;
        ops = plugin->ops;
        name = ops->name;
    } else if (!(ops = pb_config_stage(name, msg, msglen))) {
        return PB_ERR_CONFIG;
    }
    char prefix[PB_NAME_MAX + 16];
    snprintf(prefix, sizeof prefix, "pipeline.%s", name);
    if (json_is_null(opts))
        opts = NULL;
    /* A result written where a decoder is available reads anywhere. */
    const struct pb_decoder_ops *decoder = NULL;
    if (ops->flags & PB_STAGE_DECODER) {
        const json_t *dec = opts ? json_object_get(opts, "decoder") : NULL;
        if (!json_is_string(dec)) {
            snprintf(msg, msglen, "%s.decoder is required", prefix);
            return PB_ERR_CONFIG;
        }
        decoder = pb_decoder_find(json_string_value(dec));
        if (!decoder) {
            snprintf(msg, msglen, "unknown decoder '%s'", json_string_value(dec));
            return PB_ERR_CONFIG;
        }
    }
    int rc = pb_spec_add_stage(spec, ops, decoder, msg, msglen);
    if (rc != PB_OK || !opts)
        return rc;
    struct pb_stage_spec *st = &spec->stages[spec->stage_count - 1];
    if (st->opts)
        rc = pb_opt_from_json(ops->opts, st->opts, opts, prefix, msg, msglen);
    if (rc == PB_OK && st->decoder_opts)
        rc = pb_opt_from_json(st->decoder->opts, st->decoder_opts, opts, prefix, msg, msglen);
    if (rc == PB_OK)
        st->ops = pb_stage_for_device(st->ops, st->opts);
    return rc;
}

static int pipeline_from_json(struct pb_spec *spec, const json_t *pipeline, char *msg,
                              size_t msglen)
{
    if (!json_is_array(pipeline)) {
        snprintf(msg, msglen, "pipeline must be an array of stages");
        return PB_ERR_CONFIG;
    }
    for (size_t i = 0; i < json_array_size(pipeline); i++) {
        int rc = stage_from_json(spec, i, json_array_get(pipeline, i), msg, msglen);
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

/* Unknown keys are ignored (a newer build may have written them); types,
 * ranges, stage and decoder names are checked. */
int pb_spec_from_json(const json_t *obj, struct pb_spec *spec, char *msg, size_t msglen)
{
    int rc = pb_spec_init(spec, "", msg, msglen);
    if (rc != PB_OK)
        return rc;
    if (!json_is_object(obj)) {
        snprintf(msg, msglen, "the config must be a JSON object");
        return PB_ERR_CONFIG;
    }
    const json_t *pipeline = NULL;
    for (size_t i = 0; i < pb_section_count && rc == PB_OK; i++) {
        const struct pb_section *s = &pb_sections[i];
        void *base = (char *)spec + s->offset;
        if (s->kind == PB_SECTION_VALUE) {
            rc = pb_opt_from_json(s->opts, base, obj, "", msg, msglen);
            continue;
        }
        const json_t *parent = parent_object((json_t *)obj, s->name);
        const char *key = strrchr(s->name, '.') ? strrchr(s->name, '.') + 1 : s->name;
        const json_t *value = parent ? json_object_get(parent, key) : NULL;
        if (s->kind == PB_SECTION_PIPELINE)
            pipeline = value;
        if (s->kind != PB_SECTION_OPTIONS || !value || json_is_null(value))
            continue;
        rc = pb_opt_from_json(s->opts, base, value, s->name, msg, msglen);
        if (rc == PB_OK && s->present_offset)
            *(bool *)((char *)spec + s->present_offset) = true;
    }
    return rc == PB_OK ? pipeline_from_json(spec, pipeline, msg, msglen) : rc;
}
