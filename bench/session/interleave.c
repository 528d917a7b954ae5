/* pbench compare BASE.yaml NEW.yaml (bench/session/interleave.h): two configs measured in
 * one session, their rounds interleaved so the machine's drift falls on both. */
#include "bench/session/interleave.h"

#include <stdio.h>
#include <string.h>

#include "bench/base/pb.h"

static json_t *side(const char *path, const json_t *config)
{
    json_t *o = json_object();
    json_object_set_new(o, "config_path", json_string(path ? path : ""));
    json_object_set_new(o, "config", config ? json_deep_copy(config) : json_null());
    return o;
}

json_t *pb_interleaved_new(const char *base_path, const json_t *base_config,
                           const char *new_path, const json_t *new_config,
                           const char *const *new_sets, int new_set_count)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "order", json_string("ABBA"));
    json_object_set_new(o, "base", side(base_path, base_config));
    json_t *next = side(new_path, new_config);
    if (new_set_count > 0) {
        json_t *sets = json_array();
        for (int i = 0; i < new_set_count; i++)
            json_array_append_new(sets, json_string(new_sets[i]));
        json_object_set_new(next, "set", sets);
    }
    json_object_set_new(o, "new", next);
    return o;
}

const char *pb_interleaved_label(const json_t *interleaved, const char *role, char *buf,
                                 size_t size)
{
    const json_t *s = json_object_get(interleaved, role);
    const char *path = json_string_value(json_object_get(s, "config_path"));
    int n = snprintf(buf, size, "%s", path && path[0] ? path : role);
    size_t used = n > 0 ? (size_t)n : 0;
    size_t i;
    const json_t *set;
    json_array_foreach(json_object_get(s, "set"), i, set)
    {
        if (used >= size)
            break;
        n = snprintf(buf + used, size - used, "%s%s", i ? ", " : " with ",
                     json_string_value(set) ? json_string_value(set) : "?");
        used += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

/* The standalone result of one role ("base" or "new") as JSON: the
 * common fields, that side's config, its points without the tag. */
static json_t *half(const json_t *root, const json_t *interleaved, const char *role)
{
    json_t *out = json_deep_copy(root);
    const json_t *s = json_object_get(interleaved, role);
    json_object_del(out, "interleaved");
    json_object_del(out, "analysis");
    json_object_set(out, "config", json_object_get(s, "config"));
    json_object_set(out, "config_path", json_object_get(s, "config_path"));
    const json_t *cfg = json_object_get(s, "config");
    if (json_is_string(json_object_get(cfg, "name")))
        json_object_set(out, "name", json_object_get(cfg, "name"));
    json_t *kept = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(root, "points"), i, p)
    {
        json_t *axes = json_object_get(p, "axes");
        const char *tag = json_string_value(json_object_get(axes, PB_INTERLEAVE_AXIS));
        if (!tag || strcmp(tag, role) != 0)
            continue;
        json_t *copy = json_deep_copy(p);
        json_object_del(json_object_get(copy, "axes"), PB_INTERLEAVE_AXIS);
        json_array_append_new(kept, copy);
    }
    json_object_set_new(out, "points", kept);
    return out;
}

int pb_interleaved_split(const struct pb_result *r, struct pb_result *base,
                         struct pb_result *next, char *msg, size_t msglen)
{
    memset(base, 0, sizeof(*base));
    memset(next, 0, sizeof(*next));
    if (!r->interleaved) {
        snprintf(msg, msglen, "the result holds one run, not an interleaved comparison of two "
                              "configs; compare it with another result: pbench compare BASE.json "
                              "NEW.json");
        return PB_ERR;
    }
    json_t *root = pb_result_to_json(r);
    if (!root) {
        snprintf(msg, msglen, "out of memory");
        return PB_ERR;
    }
    json_t *a = half(root, r->interleaved, "base"), *b = half(root, r->interleaved, "new");
    int rc = pb_result_from_json(a, base, msg, msglen);
    if (rc == PB_OK)
        rc = pb_result_from_json(b, next, msg, msglen);
    json_decref(a);
    json_decref(b);
    json_decref(root);
    return rc == PB_OK ? PB_OK : PB_ERR;
}

int pb_interleaved_compare(const struct pb_result *r, double threshold_pct,
                           struct pb_comparison *out, char *msg, size_t msglen)
{
    struct pb_result a, b;
    int rc = pb_interleaved_split(r, &a, &b, msg, msglen);
    if (rc == PB_OK && pb_compare_configs(&a, &b, threshold_pct, out) != PB_OK) {
        snprintf(msg, msglen, "out of memory");
        rc = PB_ERR;
    }
    pb_result_free(&a);
    pb_result_free(&b);
    return rc;
}

bool pb_is_config_path(const char *path)
{
    size_t n = strlen(path);
    return (n > 5 && strcmp(path + n - 5, ".yaml") == 0) ||
           (n > 4 && strcmp(path + n - 4, ".yml") == 0);
}
