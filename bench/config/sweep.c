/* Sweep axes: the `sweep:` section, typed against the spec's option
 * tables, the points of their product, and each point applied to a copy of
 * the base spec. */
#include "bench/config/sweep.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "bench/base/pb.h"
#include "bench/base/userinfo.h"
#include "bench/base/yaml_doc.h"
#include "bench/config/config.h"

struct parse {
    yaml_document_t *doc;
    const char *file;
    struct pb_sweep *sweep;
    char *msg;
    size_t msglen;
};

static __attribute__((format(printf, 3, 4))) int node_error(struct parse *p,
                                                            const yaml_node_t *node,
                                                            const char *fmt, ...)
{
    char text[PB_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    snprintf(p->msg, p->msglen, "%s:%zu:%zu: %s", p->file, node->start_mark.line + 1,
             node->start_mark.column + 1, text);
    return PB_ERR_CONFIG;
}

static const char *scalar(const yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

static struct pb_sweep_axis *find_axis(struct pb_sweep *sweep, const char *path)
{
    for (int i = 0; i < sweep->axis_count; i++)
        if (strcmp(sweep->axes[i].path, path) == 0)
            return &sweep->axes[i];
    return NULL;
}

static int parse_axis(struct parse *p, const yaml_node_t *key, const yaml_node_t *value)
{
    const char *path = scalar(key);
    struct pb_sweep *sw = p->sweep;
    if (find_axis(sw, path))
        return node_error(p, key, "sweep axis '%s' is given twice", path);
    if (sw->axis_count == PB_SWEEP_MAX_AXES)
        return node_error(p, key, "sweep has too many axes (at most %d)", PB_SWEEP_MAX_AXES);
    if (strlen(path) >= sizeof(sw->axes[0].path))
        return node_error(p, key, "sweep axis '%s' is too long", path);
    struct pb_sweep_axis *axis = &sw->axes[sw->axis_count];
    memset(axis, 0, sizeof(*axis));
    snprintf(axis->path, sizeof(axis->path), "%s", path);
    axis->zip_group = -1;
    axis->line = (int)key->start_mark.line + 1;
    axis->column = (int)key->start_mark.column + 1;
    if (value->type != YAML_SEQUENCE_NODE)
        return node_error(p, value, "sweep axis '%s' must be a list of values, e.g. [1, 2, 4]",
                          path);
    for (yaml_node_item_t *it = value->data.sequence.items.start;
         it < value->data.sequence.items.top; it++) {
        const yaml_node_t *item = yaml_document_get_node(p->doc, *it);
        const char *text = scalar(item);
        if (!text)
            return node_error(p, item, "sweep axis '%s': each value must be a scalar", path);
        if (axis->value_count == PB_SWEEP_MAX_VALUES)
            return node_error(p, item, "sweep axis '%s' has too many values (at most %d)", path,
                              PB_SWEEP_MAX_VALUES);
        if (strlen(text) >= sizeof(axis->values[0]))
            return node_error(p, item, "sweep axis '%s': value '%s' is too long", path, text);
        axis->value_line[axis->value_count] = (int)item->start_mark.line + 1;
        axis->value_column[axis->value_count] = (int)item->start_mark.column + 1;
        snprintf(axis->values[axis->value_count++], sizeof(axis->values[0]), "%s", text);
    }
    if (axis->value_count == 0)
        return node_error(p, value, "sweep axis '%s' has no values", path);
    sw->axis_count++;
    return PB_OK;
}

/* Parses each item of list with parse_item; list must be a sequence, else
 * the error says must_be. */
static int parse_list(struct parse *p, const yaml_node_t *list, const char *must_be,
                      int (*parse_item)(struct parse *p, const yaml_node_t *item))
{
    if (list->type != YAML_SEQUENCE_NODE)
        return node_error(p, list, "%s", must_be);
    for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top;
         it++) {
        int rc = parse_item(p, yaml_document_get_node(p->doc, *it));
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

/* One sweep.zip group: two or more axes with as many values each. */
static int parse_zip_group(struct parse *p, const yaml_node_t *group)
{
    struct pb_sweep *sw = p->sweep;
    if (group->type != YAML_SEQUENCE_NODE ||
        group->data.sequence.items.top - group->data.sequence.items.start < 2)
        return node_error(p, group, "a sweep.zip group must list two or more axes");
    int count = -1;
    for (yaml_node_item_t *it = group->data.sequence.items.start;
         it < group->data.sequence.items.top; it++) {
        const yaml_node_t *item = yaml_document_get_node(p->doc, *it);
        const char *path = scalar(item);
        struct pb_sweep_axis *axis = path ? find_axis(sw, path) : NULL;
        if (!axis)
            return node_error(p, item, "sweep.zip names '%s', which is not a sweep axis",
                              path ? path : "?");
        if (axis->zip_group >= 0)
            return node_error(p, item, "sweep axis '%s' is in two zip groups", path);
        if (count >= 0 && axis->value_count != count) {
            return node_error(p, item,
                              "sweep.zip: axis '%s' must have as many values as the group's "
                              "first (%d)",
                              path, count);
        }
        count = axis->value_count;
        axis->zip_group = sw->zip_count;
    }
    sw->zip_count++;
    return PB_OK;
}

/* One sweep.exclude rule: a mapping of axes to one of their values. */
static int parse_exclude_rule(struct parse *p, const yaml_node_t *rule)
{
    struct pb_sweep *sw = p->sweep;
    if (rule->type != YAML_MAPPING_NODE)
        return node_error(p, rule, "a sweep.exclude rule must be a mapping of axis: value");
    if (sw->rule_count == PB_SWEEP_MAX_RULES)
        return node_error(p, rule, "sweep.exclude has too many rules (at most %d)",
                          PB_SWEEP_MAX_RULES);
    struct pb_sweep_rule *out = &sw->rules[sw->rule_count];
    memset(out, 0, sizeof(*out));
    for (yaml_node_pair_t *kv = rule->data.mapping.pairs.start; kv < rule->data.mapping.pairs.top;
         kv++) {
        const yaml_node_t *k = yaml_document_get_node(p->doc, kv->key);
        const yaml_node_t *v = yaml_document_get_node(p->doc, kv->value);
        const char *path = scalar(k), *text = scalar(v);
        struct pb_sweep_axis *axis = path ? find_axis(sw, path) : NULL;
        if (!axis)
            return node_error(p, k, "sweep.exclude names '%s', which is not a sweep axis",
                              path ? path : "?");
        if (!text)
            return node_error(p, v, "sweep.exclude: the value of '%s' must be a scalar", path);
        bool known = false;
        for (int i = 0; i < axis->value_count; i++)
            known = known || strcmp(axis->values[i], text) == 0;
        if (!known)
            return node_error(p, v, "sweep.exclude: '%s' is not one of the values of '%s'", text,
                              path);
        if (out->count == PB_SWEEP_MAX_AXES)
            break;
        snprintf(out->paths[out->count], sizeof(out->paths[0]), "%s", path);
        snprintf(out->values[out->count], sizeof(out->values[0]), "%s", text);
        out->count++;
    }
    sw->rule_count++;
    return PB_OK;
}

static int parse_sweep(struct parse *p, const yaml_node_t *node)
{
    if (node->type != YAML_MAPPING_NODE)
        return node_error(p, node, "sweep must be a mapping of option paths to lists of values");
    const yaml_node_t *zip = NULL, *exclude = NULL;
    for (yaml_node_pair_t *kv = node->data.mapping.pairs.start; kv < node->data.mapping.pairs.top;
         kv++) {
        const yaml_node_t *k = yaml_document_get_node(p->doc, kv->key);
        const yaml_node_t *v = yaml_document_get_node(p->doc, kv->value);
        const char *key = scalar(k);
        if (!key)
            return node_error(p, k, "sweep keys must be option paths such as loader.workers");
        if (strcmp(key, "zip") == 0)
            zip = v;
        else if (strcmp(key, "exclude") == 0)
            exclude = v;
        else if (!strchr(key, '.'))
            return node_error(p, k,
                              "sweep key '%s' is not an option path (section.key, e.g. "
                              "loader.workers), nor zip or exclude",
                              key);
        else {
            int rc = parse_axis(p, k, v);
            if (rc != PB_OK)
                return rc;
        }
    }
    int rc = PB_OK;
    if (zip)
        rc = parse_list(p, zip,
                        "sweep.zip must be a list of groups, e.g. "
                        "[[loader.batch_size, run.step_ms]]",
                        parse_zip_group);
    if (rc == PB_OK && exclude)
        rc = parse_list(p, exclude,
                        "sweep.exclude must be a list of rules, e.g. [{loader.workers: 1}]",
                        parse_exclude_rule);
    return rc;
}

int pb_sweep_parse(struct pb_sweep *sweep, yaml_document_t *doc, const yaml_node_t *node,
                   const char *file, char *msg, size_t msglen)
{
    memset(sweep, 0, sizeof(*sweep));
    struct parse p = {doc, file, sweep, msg, msglen};
    return parse_sweep(&p, node);
}

/* The untyped sweep of the file at path (text == NULL) or of text. */
static int load(const char *path, const char *text, const char *name, struct pb_sweep *sweep,
                char *msg, size_t msglen)
{
    memset(sweep, 0, sizeof(*sweep));
    yaml_document_t doc;
    int rc = pb_yaml_load(path, text, name, &doc, msg, msglen);
    if (rc != PB_OK)
        return rc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && root->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *kv = root->data.mapping.pairs.start;
             kv < root->data.mapping.pairs.top && rc == PB_OK; kv++) {
            const char *key = scalar(yaml_document_get_node(&doc, kv->key));
            if (key && strcmp(key, "sweep") == 0)
                rc = pb_sweep_parse(sweep, &doc, yaml_document_get_node(&doc, kv->value), name,
                                    msg, msglen);
        }
    }
    yaml_document_delete(&doc);
    return rc;
}

int pb_sweep_load(const char *path, struct pb_sweep *sweep, char *msg, size_t msglen)
{
    return load(path, NULL, path, sweep, msg, msglen);
}

int pb_sweep_load_string(const char *yaml, const char *name, struct pb_sweep *sweep, char *msg,
                         size_t msglen)
{
    return load(NULL, yaml, name, sweep, msg, msglen);
}

/* "FILE:LINE:COL: sweep value PATH=VALUE: why" at the value (or its axis),
 * "-a PATH=VALUE: why" for an axis from the command line; value < 0: the
 * axis as a whole. */
static int axis_error(const char *file, const struct pb_sweep_axis *axis, int value,
                      const char *why, char *msg, size_t msglen)
{
    char what[PB_MSG_MAX];
    if (value >= 0)
        snprintf(what, sizeof(what), "%s=%s", axis->path, axis->values[value]);
    else
        snprintf(what, sizeof(what), "%s", axis->path);
    int line = value >= 0 && axis->value_line[value] ? axis->value_line[value] : axis->line;
    int column = value >= 0 && axis->value_line[value] ? axis->value_column[value] : axis->column;
    if (line > 0)
        snprintf(msg, msglen, "%s:%d:%d: sweep %s %s: %s", file, line, column,
                 value >= 0 ? "value" : "axis", what, why);
    else
        snprintf(msg, msglen, "-a %s: %s", what, why);
    return PB_ERR_CONFIG;
}

int pb_sweep_set_axis(struct pb_sweep *sweep, const char *assignment, char *msg, size_t msglen)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment || !eq[1]) {
        snprintf(msg, msglen, "-a %s: expected PATH=V1,V2,... (e.g. loader.workers=1,2,4)",
                 assignment);
        return PB_ERR_CONFIG;
    }
    char path[128];
    size_t len = (size_t)(eq - assignment);
    if (len >= sizeof(path) || !memchr(assignment, '.', len)) {
        snprintf(msg, msglen, "-a %s: '%.*s' is not an option path such as loader.workers",
                 assignment, (int)(len < 100 ? len : 100), assignment);
        return PB_ERR_CONFIG;
    }
    memcpy(path, assignment, len);
    path[len] = 0;
    struct pb_sweep_axis fresh = {.zip_group = -1};
    snprintf(fresh.path, sizeof(fresh.path), "%s", path);
    const char *at = eq + 1;
    if (*at == '[')
        at++;
    while (*at) {
        const char *end = strchr(at, ',');
        size_t n = end ? (size_t)(end - at) : strlen(at);
        while (n > 0 && (at[n - 1] == ']' || at[n - 1] == ' '))
            n--;
        while (n > 0 && *at == ' ') {
            at++;
            n--;
        }
        if (n == 0 || n >= sizeof(fresh.values[0]) || fresh.value_count == PB_SWEEP_MAX_VALUES) {
            snprintf(msg, msglen, "-a %s: values must be non-empty, comma separated, at most %d",
                     assignment, PB_SWEEP_MAX_VALUES);
            return PB_ERR_CONFIG;
        }
        memcpy(fresh.values[fresh.value_count], at, n);
        fresh.values[fresh.value_count++][n] = 0;
        at = end ? end + 1 : at + strlen(at);
    }
    struct pb_sweep_axis *axis = find_axis(sweep, path);
    if (axis) {
        if (axis->zip_group >= 0 && axis->value_count != fresh.value_count) {
            snprintf(msg, msglen,
                     "-a %s: '%s' is in a zip group of %d values; give it %d values too",
                     assignment, path, axis->value_count, axis->value_count);
            return PB_ERR_CONFIG;
        }
        fresh.zip_group = axis->zip_group;
        if (axis->resolved && axis->opt) {
            for (int i = 0; i < fresh.value_count; i++) {
                char why[PB_MSG_MAX];
                if (pb_opt_parse_value(axis->opt, fresh.values[i], &fresh.typed[i], path, why,
                                       sizeof(why)) != PB_OK)
                    return axis_error("", &fresh, i, why, msg, msglen);
                if (axis->opt->type == PB_OPT_URL) /* the labels show the value */
                    pb_userinfo_take(fresh.values[i], path);
            }
            fresh.resolved = true;
            fresh.opt = axis->opt;
        }
        *axis = fresh;
        /* Exclude rules that name a value the axis no longer has match
         * nothing now, which is what the user asked for. */
        return PB_OK;
    }
    if (sweep->axis_count == PB_SWEEP_MAX_AXES) {
        snprintf(msg, msglen, "-a %s: too many sweep axes (at most %d)", assignment,
                 PB_SWEEP_MAX_AXES);
        return PB_ERR_CONFIG;
    }
    sweep->axes[sweep->axis_count++] = fresh;
    return PB_OK;
}

void pb_sweep_drop_axis(struct pb_sweep *sweep, const char *path)
{
    for (int i = 0; i < sweep->axis_count; i++) {
        if (strcmp(sweep->axes[i].path, path) != 0)
            continue;
        memmove(&sweep->axes[i], &sweep->axes[i + 1],
                (size_t)(sweep->axis_count - i - 1) * sizeof(sweep->axes[0]));
        sweep->axis_count--;
        return;
    }
}

static bool excluded(const struct pb_sweep *sw, const struct pb_sweep_point *pt)
{
    for (int r = 0; r < sw->rule_count; r++) {
        const struct pb_sweep_rule *rule = &sw->rules[r];
        bool all = rule->count > 0;
        for (int k = 0; k < rule->count && all; k++) {
            bool hit = false;
            for (int a = 0; a < sw->axis_count; a++)
                if (strcmp(sw->axes[a].path, rule->paths[k]) == 0)
                    hit = strcmp(sw->axes[a].values[pt->value[a]], rule->values[k]) == 0;
            all = hit;
        }
        if (all)
            return true;
    }
    return false;
}

long pb_sweep_points(const struct pb_sweep *sw, struct pb_sweep_point *points, size_t max, char *msg,
                     size_t msglen)
{
    static const struct pb_sweep none;
    if (!sw)
        sw = &none;
    /* Dimensions: each free axis, and each zip group (led by its first axis). */
    int dim_axis[PB_SWEEP_MAX_AXES], dims = 0;
    for (int a = 0; a < sw->axis_count; a++) {
        int g = sw->axes[a].zip_group;
        bool leader = true;
        for (int b = 0; b < a && g >= 0; b++)
            if (sw->axes[b].zip_group == g)
                leader = false;
        if (!leader) {
            for (int b = 0; b < a; b++)
                if (sw->axes[b].zip_group == g && sw->axes[b].value_count != sw->axes[a].value_count) {
                    snprintf(msg, msglen,
                             "sweep.zip: '%s' has %d values but '%s' in its group has %d",
                             sw->axes[a].path, sw->axes[a].value_count, sw->axes[b].path,
                             sw->axes[b].value_count);
                    return -1;
                }
            continue;
        }
        dim_axis[dims++] = a;
    }
    if (dims == 0) {
        if (max > 0)
            memset(&points[0], 0, sizeof(points[0]));
        return 1;
    }
    long product = 1;
    for (int d = 0; d < dims; d++) {
        long values = sw->axes[dim_axis[d]].value_count;
        if (values > 0 && product > LONG_MAX / values) {
            snprintf(msg, msglen, "the sweep has more than %ld points: narrow it", LONG_MAX);
            return -1;
        }
        product *= values;
    }
    if (product > 0 && (size_t)product > max)
        return product;
    int index[PB_SWEEP_MAX_AXES] = {0};
    long count = 0;
    for (;;) {
        struct pb_sweep_point pt;
        memset(&pt, 0, sizeof(pt));
        for (int d = 0; d < dims; d++) {
            int lead = dim_axis[d];
            pt.value[lead] = index[d];
            for (int a = 0; a < sw->axis_count; a++)
                if (sw->axes[lead].zip_group >= 0 && sw->axes[a].zip_group == sw->axes[lead].zip_group)
                    pt.value[a] = index[d];
        }
        if (!excluded(sw, &pt)) {
            if ((size_t)count < max)
                points[count] = pt;
            count++;
        }
        /* Advance the mixed-radix counter, last dimension fastest. */
        int d = dims - 1;
        while (d >= 0 && ++index[d] == sw->axes[dim_axis[d]].value_count)
            index[d--] = 0;
        if (d < 0)
            break;
    }
    return count;
}

void pb_sweep_assignment(const struct pb_sweep *sweep, const struct pb_sweep_point *point, int axis,
                         char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%s=%s", sweep->axes[axis].path, sweep->axes[axis].values[point->value[axis]]);
}

static json_t *typed_value(const char *text)
{
    char *end;
    errno = 0;
    long long i = strtoll(text, &end, 10);
    if (*text && !*end && errno == 0)
        return json_integer(i);
    double d = strtod(text, &end);
    if (*text && !*end)
        return json_real(d);
    if (strcmp(text, "true") == 0)
        return json_true();
    if (strcmp(text, "false") == 0)
        return json_false();
    return json_string(text);
}

json_t *pb_sweep_axes_json(const struct pb_sweep *sweep, const struct pb_sweep_point *point)
{
    json_t *obj = json_object();
    for (int a = 0; sweep && a < sweep->axis_count; a++)
        json_object_set_new(obj, sweep->axes[a].path,
                            typed_value(sweep->axes[a].values[point->value[a]]));
    return obj;
}

/* Whether path is "pipeline.REF.KEY" and the sweep also switches the
 * decoder of pipeline.REF, so KEY may belong to a decoder chosen later. */
static bool decoder_swept(const struct pb_sweep *sweep, const char *path)
{
    const char *key = strrchr(path, '.');
    if (strncmp(path, "pipeline.", 9) != 0 || !key || strcmp(key, ".decoder") == 0)
        return false;
    for (int a = 0; a < sweep->axis_count; a++) {
        const char *other = sweep->axes[a].path;
        size_t stem = (size_t)(key - path);
        if (strncmp(other, path, stem) == 0 && strcmp(other + stem, ".decoder") == 0)
            return true;
    }
    return false;
}

static int resolve_axis(const struct pb_sweep *sweep, struct pb_sweep_axis *axis,
                        const struct pb_spec *spec, char *msg, size_t msglen)
{
    char why[PB_MSG_MAX];
    const char *file = spec->source[0] ? spec->source : spec->name;
    if (decoder_swept(sweep, axis->path)) {
        axis->resolved = true; /* applied as text, once its decoder is chosen */
        axis->opt = NULL;
        return PB_OK;
    }
    struct pb_config_target target;
    if (pb_config_find(spec, axis->path, &target, why, sizeof(why)) != PB_OK)
        return axis_error(file, axis, -1, why, msg, msglen);
    for (int i = 0; i < axis->value_count; i++) {
        bool ok = target.opt ? pb_opt_parse_value(target.opt, axis->values[i], &axis->typed[i],
                                                  axis->path, why, sizeof(why)) == PB_OK
                             : pb_config_decoder(axis->values[i], why, sizeof(why)) != NULL;
        if (!ok)
            return axis_error(file, axis, i, why, msg, msglen);
        if (target.opt && target.opt->type == PB_OPT_URL) /* the labels show the value */
            pb_userinfo_take(axis->values[i], axis->path);
    }
    axis->resolved = true;
    axis->opt = target.opt;
    return PB_OK;
}

int pb_sweep_resolve(struct pb_sweep *sweep, const struct pb_spec *spec, char *msg,
                     size_t msglen)
{
    for (int a = 0; a < sweep->axis_count; a++) {
        if (sweep->axes[a].resolved)
            continue;
        int rc = resolve_axis(sweep, &sweep->axes[a], spec, msg, msglen);
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

/* One axis's value: typed into its slot when the spec still has that
 * option there, else as `-s PATH=VALUE`. */
static int apply_axis(struct pb_spec *spec, const struct pb_sweep_axis *axis, int value,
                      char *msg, size_t msglen)
{
    char why[PB_MSG_MAX * 2];
    const char *file = spec->source[0] ? spec->source : spec->name;
    struct pb_config_target target;
    if (axis->resolved && axis->opt &&
        pb_config_find(spec, axis->path, &target, why, sizeof(why)) == PB_OK &&
        target.opt == axis->opt) {
        pb_opt_store_value(target.opt, &axis->typed[value], target.base);
        pb_config_touched(spec, &target);
        return PB_OK;
    }
    char assignment[256];
    snprintf(assignment, sizeof(assignment), "%s=%s", axis->path, axis->values[value]);
    if (pb_config_override(spec, assignment, why, sizeof(why)) == PB_OK)
        return PB_OK;
    /* "-s PATH=VALUE: sentence" reads better as a sweep error. */
    size_t prefix = strlen("-s ") + strlen(assignment) + strlen(": ");
    return axis_error(file, axis, value, strlen(why) > prefix ? why + prefix : why, msg,
                      msglen);
}

int pb_sweep_apply(struct pb_spec *spec, const struct pb_sweep *sweep,
                   const struct pb_sweep_point *point, char *msg, size_t msglen)
{
    /* Decoder switches first: a decoder's options go into the new one. */
    for (int pass = 0; sweep && pass < 2; pass++) {
        for (int a = 0; a < sweep->axis_count; a++) {
            const struct pb_sweep_axis *axis = &sweep->axes[a];
            const char *key = strrchr(axis->path, '.');
            bool decoder = key && strcmp(key, ".decoder") == 0 && !axis->opt;
            if (decoder != (pass == 0))
                continue;
            int rc = apply_axis(spec, axis, point->value[a], msg, msglen);
            if (rc != PB_OK)
                return rc;
        }
    }
    return PB_OK;
}

int pb_config_sweep_axis(struct pb_spec *spec, const char *assignment, char *msg, size_t msglen)
{
    if (!spec->sweep && !(spec->sweep = calloc(1, sizeof(*spec->sweep)))) {
        snprintf(msg, msglen, "out of memory");
        return PB_ERR_NOMEM;
    }
    int rc = pb_sweep_set_axis(spec->sweep, assignment, msg, msglen);
    rc = rc == PB_OK ? pb_sweep_resolve(spec->sweep, spec, msg, msglen) : rc;
    if (rc != PB_OK)
        pb_userinfo_redact_msg(msg, msglen); /* a password a value carried */
    return rc;
}
