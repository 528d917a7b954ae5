/* The spec's life cycle (defaults, copy, free), `-s` overrides and cross-field
 * validation. The config's shape (the section table and the option
 * tables) is spec.c, the YAML loader config_yaml.c, the JSON form
 * config_json.c; every key is looked up in an option table (bench/base/opt.h),
 * so messages, `pbench list` and result files agree. */
#include "bench/config/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "bench/base/pb.h"
#include "bench/base/userinfo.h"
#include "bench/config/config_scope.h"
#include "bench/base/engine_row.h"
#include "bench/sys/affinity.h"
#include "pipelines/remote.h"
#include "pipelines/storage.h"

#define PB_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* The section a dotted path starts with, the longest that matches
 * ("dataset.generate.count": dataset.generate); *rest is what follows its
 * dot, or NULL when the path is the section's name alone. */
static const struct pb_section *section_of_path(const char *path, const char **rest)
{
    const struct pb_section *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < pb_section_count; i++) {
        size_t len = strlen(pb_sections[i].name);
        if (strncmp(path, pb_sections[i].name, len) == 0 && (!path[len] || path[len] == '.') &&
            len > best_len) {
            best = &pb_sections[i];
            best_len = len;
        }
    }
    if (best)
        *rest = path[best_len] ? path + best_len + 1 : NULL;
    return best;
}

/* snprintf for message sentences, where cutting a long list short is fine. */
static PB_PRINTF(3, 4) void say(char *buf, size_t buflen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, buflen, fmt, ap);
    va_end(ap);
}

#define REGISTRY_NAMES_MAX 64

const struct pb_stage_ops *pb_config_stage(const char *name, char *why, size_t whylen)
{
    const struct pb_stage_ops *ops = pb_stage_find(name);
    if (ops)
        return ops;
    const char *names[REGISTRY_NAMES_MAX];
    size_t count, n = 0;
    const struct pb_stage_ops *const *all = pb_stage_all(&count);
    for (size_t i = 0; i < count && n < REGISTRY_NAMES_MAX; i++)
        names[n++] = all[i]->name;
    pb_unknown_name("stage", name, name, names, n, "known stages", why, whylen);
    return NULL;
}

const struct pb_decoder_ops *pb_config_decoder(const char *name, char *why, size_t whylen)
{
    const struct pb_decoder_ops *dec = pb_decoder_find(name);
    if (!dec) {
        const char *names[REGISTRY_NAMES_MAX];
        size_t n = pb_decoder_names(names, REGISTRY_NAMES_MAX);
        pb_unknown_name("decoder", name, name, names, n, "known decoders", why, whylen);
        return NULL;
    }
    if (dec->unavailable_reason) {
        snprintf(why, whylen, "decoder '%s' is not available in this build: %s", name,
                 dec->unavailable_reason);
        return NULL;
    }
    return dec;
}

/* A new options block of size bytes holding a copy of from, or the table's
 * defaults when from is NULL; NULL (and PB_OK) when size is 0. */
static int new_opts(const struct pb_opt *table, size_t size, const void *from, void **out,
                    char *msg, size_t msglen)
{
    *out = NULL;
    if (size == 0)
        return PB_OK;
    void *opts = calloc(1, size);
    if (!opts) {
        snprintf(msg, msglen, "out of memory");
        return PB_ERR_NOMEM;
    }
    int rc = from ? (memcpy(opts, from, size), PB_OK)
                  : pb_opt_set_defaults(table, opts, msg, msglen);
    if (rc != PB_OK) {
        free(opts);
        return rc;
    }
    *out = opts;
    return PB_OK;
}

int pb_spec_add_stage(struct pb_spec *spec, const struct pb_stage_ops *ops,
                      const struct pb_decoder_ops *decoder, char *msg, size_t msglen)
{
    if (spec->stage_count >= PB_MAX_STAGES) {
        snprintf(msg, msglen, "pipeline has more than %d stages", PB_MAX_STAGES);
        return PB_ERR_CONFIG;
    }
    struct pb_stage_spec *st = &spec->stages[spec->stage_count++];
    memset(st, 0, sizeof(*st));
    st->ops = ops;
    st->decoder = decoder;
    int rc = new_opts(ops->opts, ops->opts_size, NULL, &st->opts, msg, msglen);
    if (rc == PB_OK && decoder)
        rc = new_opts(decoder->opts, decoder->opts_size, NULL, &st->decoder_opts, msg, msglen);
    return rc;
}

int pb_spec_init(struct pb_spec *spec, const char *source, char *msg, size_t msglen)
{
    memset(spec, 0, sizeof(*spec));
    int rc = PB_OK;
    for (size_t i = 0; i < pb_section_count && rc == PB_OK; i++)
        if (pb_sections[i].opts)
            rc = pb_opt_set_defaults(pb_sections[i].opts, (char *)spec + pb_sections[i].offset,
                                     msg, msglen);
    snprintf(spec->source, sizeof spec->source, "%s", source);
    const char *base = strrchr(source, '/');
    base = base ? base + 1 : source;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (len >= sizeof spec->name)
        len = sizeof spec->name - 1;
    memcpy(spec->name, base, len);
    spec->name[len] = '\0';
    return rc;
}

int pb_spec_copy(struct pb_spec *dst, const struct pb_spec *src, char *msg, size_t msglen)
{
    *dst = *src;
    dst->sweep = NULL;
    for (int i = 0; i < src->stage_count; i++)
        dst->stages[i].opts = dst->stages[i].decoder_opts = NULL;
    int rc = PB_OK;
    for (int i = 0; i < src->stage_count && rc == PB_OK; i++) {
        const struct pb_stage_spec *from = &src->stages[i];
        struct pb_stage_spec *to = &dst->stages[i];
        rc = new_opts(NULL, from->opts ? from->ops->opts_size : 0, from->opts, &to->opts, msg,
                      msglen);
        if (rc == PB_OK && from->decoder_opts)
            rc = new_opts(NULL, from->decoder->opts_size, from->decoder_opts, &to->decoder_opts,
                          msg, msglen);
    }
    return rc;
}

void pb_spec_free(struct pb_spec *spec)
{
    for (int i = 0; i < spec->stage_count && i < PB_MAX_STAGES; i++) {
        free(spec->stages[i].opts);
        free(spec->stages[i].decoder_opts);
        memset(&spec->stages[i], 0, sizeof(spec->stages[i]));
    }
    spec->stage_count = 0;
    free(spec->sweep);
    spec->sweep = NULL;
}

/* ---- option paths: `-s key.path=value` and sweep axes ---- */

/* The stage a `pipeline.REF.key` path names: a position or a name. */
static int find_stage(const struct pb_spec *spec, const char *ref, char *why, size_t whylen)
{
    if (ref[0] >= '0' && ref[0] <= '9' && strspn(ref, "0123456789") == strlen(ref)) {
        long index = strlen(ref) > 6 ? PB_MAX_STAGES : strtol(ref, NULL, 10);
        if (index >= spec->stage_count) {
            snprintf(why, whylen, "the pipeline has %d stages, at positions 0 to %d",
                     spec->stage_count, spec->stage_count - 1);
            return -1;
        }
        return (int)index;
    }
    int found = -1, matches = 0;
    for (int i = 0; i < spec->stage_count; i++) {
        if (strcmp(spec->stages[i].ops->name, ref) == 0) {
            if (found < 0)
                found = i;
            matches++;
        }
    }
    if (matches == 1)
        return found;
    if (matches > 1) {
        snprintf(why, whylen,
                 "the pipeline has %d stages named '%s'; name one by its position, e.g. "
                 "pipeline.%d.KEY",
                 matches, ref, found);
        return -1;
    }
    const char *names[PB_MAX_STAGES];
    for (int i = 0; i < spec->stage_count; i++)
        names[i] = spec->stages[i].ops->name;
    char list[PB_MSG_MAX / 2];
    pb_join_names(names, (size_t)spec->stage_count, list, sizeof list);
    snprintf(why, whylen, "the pipeline has no stage '%s'; its stages: %s", ref, list);
    return -1;
}

/* "expected SECTION.KEY=VALUE; keys: a, b, generate.KEY". */
static void section_needs_key(const struct pb_section *section, char *why, size_t whylen)
{
    char names[PB_MSG_MAX / 2];
    pb_opt_names(section->opts, names, sizeof names);
    size_t len = strlen(section->name);
    for (size_t i = 0; i < pb_section_count; i++) {
        const char *name = pb_sections[i].name;
        if (strncmp(name, section->name, len) == 0 && name[len] == '.') {
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, ", %s.KEY", name + len + 1);
        }
    }
    say(why, whylen, "expected %s.KEY=VALUE; keys: %s", section->name, names);
}

static int find_in_pipeline(const struct pb_spec *spec, const char *path, const char *rest,
                            struct pb_config_target *t, char *why, size_t whylen)
{
    const char *key = rest ? strchr(rest, '.') : NULL;
    if (!key) {
        snprintf(why, whylen,
                 "expected pipeline.STAGE.KEY=VALUE, where STAGE is a stage's name or "
                 "position (0 is the first)");
        return PB_ERR_CONFIG;
    }
    char ref[PB_NAME_MAX];
    snprintf(ref, sizeof ref, "%.*s", (int)(key - rest), rest);
    key++;
    int index = find_stage(spec, ref, why, whylen);
    if (index < 0)
        return PB_ERR_CONFIG;
    t->stage = (struct pb_stage_spec *)&spec->stages[index];
    if ((t->stage->ops->flags & PB_STAGE_DECODER) && strcmp(key, "decoder") == 0)
        return PB_OK; /* t->opt stays NULL: the decoder itself */
    char prefix[PB_NAME_MAX + 16];
    snprintf(prefix, sizeof prefix, "pipeline.%s", ref);
    struct pb_scope scope;
    pb_scope_of_stage(t->stage, prefix, &scope);
    t->opt = pb_scope_find(&scope, key, &t->base);
    if (!t->opt) {
        pb_scope_unknown_key(&scope, path, key, why, whylen);
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

int pb_config_find(const struct pb_spec *spec, const char *path, struct pb_config_target *t,
                   char *why, size_t whylen)
{
    memset(t, 0, sizeof(*t));
    const char *rest = NULL;
    const struct pb_section *section = section_of_path(path, &rest);
    bool value = section && section->kind == PB_SECTION_VALUE;
    if (section && section->kind == PB_SECTION_SWEEP) {
        snprintf(why, whylen,
                 "the sweep is not one setting: name the setting to sweep and its values, as "
                 "in -a loader.workers=1,2,4 (or the config's sweep: section)");
        return PB_ERR_CONFIG;
    }
    if (value && rest) {
        snprintf(why, whylen, "%s is a value, not a section: expected %s=VALUE", section->name,
                 section->name);
        return PB_ERR_CONFIG;
    }
    if (!section) {
        const char *names[16];
        size_t n = pb_top_section_names(names, PB_ARRAY_LEN(names));
        char top[PB_NAME_MAX];
        snprintf(top, sizeof top, "%.*s", (int)strcspn(path, "."), path);
        pb_unknown_name("key", path, top, names, n, "allowed", why, whylen);
        return PB_ERR_CONFIG;
    }
    if (section->kind == PB_SECTION_PIPELINE)
        return find_in_pipeline(spec, path, rest, t, why, whylen);
    if (!value && !rest) {
        section_needs_key(section, why, whylen);
        return PB_ERR_CONFIG;
    }
    struct pb_scope scope;
    pb_scope_of_section(spec, section, &scope);
    t->section = section;
    t->opt = pb_scope_find(&scope, value ? section->name : rest, &t->base);
    if (!t->opt) {
        pb_scope_unknown_key(&scope, path, rest, why, whylen);
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

void pb_config_touched(struct pb_spec *spec, const struct pb_config_target *t)
{
    if (t->section && t->section->present_offset)
        *(bool *)((char *)spec + t->section->present_offset) = true;
    struct pb_stage_spec *st = t->stage;
    if (st && t->opt)
        st->ops = pb_stage_for_device(st->ops, st->opts);
}

static int switch_decoder(struct pb_stage_spec *st, const char *name, char *why, size_t whylen)
{
    const struct pb_decoder_ops *dec = pb_config_decoder(name, why, whylen);
    if (!dec)
        return PB_ERR_CONFIG;
    void *opts;
    int rc = new_opts(dec->opts, dec->opts_size, NULL, &opts, why, whylen);
    if (rc != PB_OK)
        return rc;
    free(st->decoder_opts);
    st->decoder = dec;
    st->decoder_opts = opts;
    return PB_OK;
}

/* A key inside a JSON option's mapping (dataset.args.draft=true, or
 * dataset.args.crop.size=[224,224] through nested mappings): the option's
 * JSON with that key set to value, read as JSON where it is JSON (true, 3,
 * "x", [1, 2], {...}) and as a string otherwise, then parsed as the option
 * is. PB_OK or the option's error; NOT_IN_JSON when no prefix of path
 * names a JSON option (why untouched). */
#define NOT_IN_JSON 1
static int override_in_json(struct pb_spec *spec, const char *path, const char *value,
                            char *why, size_t whylen)
{
    char prefix[256], inner[PB_MSG_MAX];
    pb_strlcpy(prefix, path, sizeof prefix);
    struct pb_config_target t = {0};
    char *dot;
    while ((dot = strrchr(prefix, '.')) != NULL) {
        *dot = '\0';
        if (pb_config_find(spec, prefix, &t, inner, sizeof inner) == PB_OK && t.opt)
            break;
    }
    if (!dot || t.opt->type != PB_OPT_JSON)
        return NOT_IN_JSON;
    json_t *root = json_loads((const char *)t.base + t.opt->offset, 0, NULL);
    json_t *leaf = json_loads(value, JSON_DECODE_ANY, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        root = json_object();
    }
    json_t *at = root;
    char *key = prefix + strlen(prefix) + 1, *next;
    pb_strlcpy(key, path + (size_t)(key - prefix), sizeof prefix - (size_t)(key - prefix));
    for (; (next = strchr(key, '.')) != NULL; key = next + 1) {
        *next = '\0';
        if (!json_is_object(json_object_get(at, key)))
            json_object_set_new(at, key, json_object());
        at = json_object_get(at, key);
    }
    json_object_set_new(at, key, leaf ? leaf : json_string(value));
    char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(root);
    int rc = text ? pb_opt_parse(t.opt, text, t.base, path, why, whylen) : PB_ERR_NOMEM;
    free(text);
    if (rc == PB_OK)
        pb_config_touched(spec, &t);
    return rc;
}

static int apply_override(struct pb_spec *spec, const char *assignment, char *why, size_t whylen)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment) {
        snprintf(why, whylen, "expected KEY=VALUE");
        return PB_ERR_CONFIG;
    }
    char path[256];
    size_t keylen = (size_t)(eq - assignment);
    if (keylen >= sizeof path) {
        snprintf(why, whylen, "the key is too long");
        return PB_ERR_CONFIG;
    }
    memcpy(path, assignment, keylen);
    path[keylen] = '\0';
    struct pb_config_target t;
    int rc = pb_config_find(spec, path, &t, why, whylen);
    if (rc != PB_OK) {
        int in_json = override_in_json(spec, path, eq + 1, why, whylen);
        return in_json == NOT_IN_JSON ? rc : in_json;
    }
    if (!t.opt)
        return switch_decoder(t.stage, eq + 1, why, whylen);
    rc = pb_opt_parse(t.opt, eq + 1, t.base, path, why, whylen);
    if (rc == PB_OK) {
        pb_config_touched(spec, &t);
        for (int i = 0; i < spec->position_count; i++) /* the file no longer says it */
            if (strcmp(spec->positions[i].path, path) == 0)
                spec->positions[i].line = 0;
    }
    return rc;
}

void pb_spec_note_position(struct pb_spec *spec, const char *path, int line, int column)
{
    if (spec->position_count >= PB_SPEC_POSITIONS ||
        strlen(path) >= sizeof(spec->positions[0].path))
        return;
    struct pb_key_position *p = &spec->positions[spec->position_count++];
    pb_strlcpy(p->path, path, sizeof(p->path));
    p->line = line;
    p->column = column;
}

/* Where the file set path, or NULL (not in the file, or overridden). */
static const struct pb_key_position *key_position(const struct pb_spec *spec, const char *path)
{
    for (int i = 0; i < spec->position_count; i++)
        if (spec->positions[i].line > 0 && strcmp(spec->positions[i].path, path) == 0)
            return &spec->positions[i];
    return NULL;
}

int pb_config_override(struct pb_spec *spec, const char *assignment, char *msg, size_t msglen)
{
    return pb_config_override_as(spec, "-s", assignment, msg, msglen);
}

int pb_config_override_as(struct pb_spec *spec, const char *option, const char *assignment,
                          char *msg, size_t msglen)
{
    char why[PB_MSG_MAX];
    int rc = apply_override(spec, assignment, why, sizeof why);
    if (rc != PB_OK) {
        snprintf(msg, msglen, "%s %s: %s", option, assignment, why);
        pb_userinfo_redact_msg(msg, msglen); /* a password the value carried */
    }
    return rc;
}

/* ---- cross-field rules ---- */

/* "FILE:LINE:COLUMN: sentence", or "FILE: sentence" without a line. */
static int located_error(const struct pb_spec *spec, int line, int column, char *msg, size_t msglen,
                         const char *sentence)
{
    const char *file = spec->source[0] ? spec->source : spec->name[0] ? spec->name : "config";
    if (line > 0)
        snprintf(msg, msglen, "%s:%d:%d: %s", file, line, column, sentence);
    else
        snprintf(msg, msglen, "%s: %s", file, sentence);
    return PB_ERR_CONFIG;
}

static PB_PRINTF(5, 6) int spec_error(const struct pb_spec *spec, const struct pb_stage_spec *st,
                                      char *msg, size_t msglen, const char *fmt, ...)
{
    char sentence[PB_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    return located_error(spec, st ? st->line : 0, st ? st->column : 0, msg, msglen, sentence);
}

/* A rule over options, at the first of keys (dotted paths, NULL-ended)
 * the file set; without any, the file alone. */
static PB_PRINTF(5, 6) int key_error(const struct pb_spec *spec, const char *const *keys, char *msg,
                                     size_t msglen, const char *fmt, ...)
{
    char sentence[PB_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    const struct pb_key_position *at = NULL;
    for (; *keys && !at; keys++)
        at = key_position(spec, *keys);
    return located_error(spec, at ? at->line : 0, at ? at->column : 0, msg, msglen, sentence);
}
#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The rules within one stage: its own options', then its decoder's. */
static int check_stage_options(const struct pb_spec *spec, const struct pb_stage_spec *st,
                               char *msg, size_t msglen)
{
    char why[PB_MSG_MAX];
    if (st->ops->validate && st->ops->validate(st->opts, why, sizeof why) != PB_OK)
        return spec_error(spec, st, msg, msglen, "%s", why);
    if (st->decoder && st->decoder->validate &&
        st->decoder->validate(st->decoder_opts, why, sizeof why) != PB_OK)
        return spec_error(spec, st, msg, msglen, "%s", why);
    return PB_OK;
}

/* The rules between stages, in pipeline order: a decoder has the bytes
 * it needs, a stage takes the channels the last decoder gives, per-sample
 * stages come before the training loop's, and GPU stages after the one
 * 'to_device'. */
static int check_stage_order(const struct pb_spec *spec, char *msg, size_t msglen)
{
    const struct pb_stage_spec *reader = NULL, *consumer = NULL, *to_device = NULL;
    const struct pb_decoder_ops *decoder = NULL; /* the last decode stage's */
    int channels = 0; /* as that decoder declares them; 0: the files decide */
    for (int i = 0; i < spec->stage_count; i++) {
        const struct pb_stage_spec *st = &spec->stages[i];
        unsigned flags = st->ops->flags;
        char why[PB_MSG_MAX];
        int rc = check_stage_options(spec, st, msg, msglen);
        if (rc != PB_OK)
            return rc;
        if ((flags & PB_STAGE_DECODER) && st->decoder &&
            !(st->decoder->flags & PB_DECODER_OPENS_FILE) && !reader)
            return spec_error(spec, st, msg, msglen,
                              "stage '%s' with decoder '%s' needs a stage that reads the "
                              "samples' bytes (such as 'read') earlier in the pipeline",
                              st->ops->name, st->decoder->name);
        if ((flags & PB_STAGE_DECODER) && !st->decoder)
            return spec_error(spec, st, msg, msglen, "stage '%s' has no decoder",
                              st->ops->name);
        if (st->decoder) {
            decoder = st->decoder;
            channels = decoder->output_channels ? decoder->output_channels(st->decoder_opts) : 0;
        }
        /* The registry's entry: a GPU version shares the CPU's rules. */
        const struct pb_stage_ops *cpu = pb_stage_find(st->ops->name);
        if (channels > 0 && cpu && cpu->validate_channels &&
            cpu->validate_channels(st->opts, channels, why, sizeof why) != PB_OK)
            return spec_error(spec, st, msg, msglen, "%s (decoder '%s')", why, decoder->name);
        /* to_device marks where batches go to the GPU; a CPU stage after
         * it (but before any GPU stage) runs before the copy, so a config
         * can sweep pipeline.STAGE.device=cpu,gpu. */
        if ((flags & PB_STAGE_WORKER) && consumer)
            return spec_error(spec, st, msg, msglen,
                              "stage '%s' runs per sample in a worker, so it must come before "
                              "'%s', which runs %s",
                              st->ops->name, consumer->ops->name,
                              (consumer->ops->flags & PB_STAGE_GPU) ? "on the GPU"
                                                                     : "in the training loop");
        if ((flags & PB_STAGE_GPU) && !to_device)
            return spec_error(spec, st, msg, msglen,
                              "stage '%s' has device: gpu, so it needs a 'to_device' stage "
                              "before it (the batch must be on the GPU)",
                              st->ops->name);
        if ((flags & PB_STAGE_TO_DEVICE) && to_device)
            return spec_error(spec, st, msg, msglen,
                              "the pipeline has two 'to_device' stages; keep one");
        if (flags & PB_STAGE_TO_DEVICE)
            to_device = st;
        if (flags & PB_STAGE_IO)
            reader = st;
        if ((flags & PB_STAGE_CONSUMER) && !(flags & PB_STAGE_TO_DEVICE) && !consumer)
            consumer = st;
    }
    return PB_OK;
}

/* The settings that come in pairs, a lower bound and an upper one. */
static int check_bounds(const struct pb_spec *spec, char *msg, size_t msglen)
{
    const struct pb_run_spec *run = &spec->run;
    if (run->min_time_s > run->max_time_s) {
        char lo[32], hi[32];
        pb_opt_format(pb_opt_find(pb_run_opts, "min_time_s"), run, lo, sizeof lo);
        pb_opt_format(pb_opt_find(pb_run_opts, "max_time_s"), run, hi, sizeof hi);
        return key_error(spec, KEYS("run.min_time_s", "run.max_time_s", "run"), msg, msglen,
                         "run.min_time_s (%s) must not exceed run.max_time_s (%s)", lo, hi);
    }
    if (spec->analysis.input_bound_moderate_pct > spec->analysis.input_bound_high_pct)
        return key_error(
            spec,
            KEYS("analysis.input_bound_moderate_pct", "analysis.input_bound_high_pct", "analysis"),
            msg, msglen,
            "analysis.input_bound_moderate_pct (%g) must not exceed "
            "analysis.input_bound_high_pct (%g)",
            spec->analysis.input_bound_moderate_pct, spec->analysis.input_bound_high_pct);
    return PB_OK;
}

/* A valid shard, and enough samples that every rank gets one and, with
 * loader.drop_last, a whole batch. */
static int check_sample_counts(const struct pb_spec *spec, char *msg, size_t msglen)
{
    const struct pb_dataset_spec *ds = &spec->dataset;
    if (ds->shard.count < 1 || ds->shard.rank < 0 || ds->shard.rank >= ds->shard.count)
        return key_error(spec, KEYS("dataset.shard", "dataset"), msg, msglen,
                         "dataset.shard must be RANK/COUNT with 0 <= RANK < COUNT, "
                         "got '%lld/%lld'",
                         (long long)ds->shard.rank, (long long)ds->shard.count);
    if (ds->has_generate && ds->generate.count < ds->shard.count)
        return key_error(spec, KEYS("dataset.shard", "dataset.generate.count", "dataset"), msg,
                         msglen,
                         "dataset.shard splits the data over %lld ranks but "
                         "dataset.generate.count is %lld; every rank needs at least one sample",
                         (long long)ds->shard.count, (long long)ds->generate.count);
    if (ds->max_samples > 0 && ds->max_samples < ds->shard.count)
        return key_error(spec, KEYS("dataset.shard", "dataset.max_samples", "dataset"), msg, msglen,
                         "dataset.shard splits the data over %lld ranks but "
                         "dataset.max_samples is %lld; every rank needs at least one sample",
                         (long long)ds->shard.count, (long long)ds->max_samples);
    if (spec->loader.drop_last && ds->max_samples > 0 &&
        ds->max_samples < spec->loader.batch_size)
        return key_error(spec, KEYS("dataset.max_samples", "loader.drop_last", "dataset"), msg,
                         msglen,
                         "dataset.max_samples (%lld) is less than loader.batch_size (%lld) and "
                         "loader.drop_last is on, so no batch would ever be delivered",
                         (long long)ds->max_samples, (long long)spec->loader.batch_size);
    return PB_OK;
}

/* Tar shards are generated only for dataset.format: tar, and read by the
 * decoders that take bytes from a stage, not by those that open files. */
static int check_tar_format(const struct pb_spec *spec, char *msg, size_t msglen)
{
    const struct pb_dataset_spec *ds = &spec->dataset;
    if (ds->has_generate && ds->generate.shards > 0 && ds->format != PB_FORMAT_TAR)
        return key_error(spec, KEYS("dataset.generate.shards", "dataset.format", "dataset"), msg,
                         msglen,
                         "dataset.generate.shards writes tar shards, which dataset.format: files "
                         "does not read; set dataset.format: tar");
    for (int i = 0; i < spec->stage_count && ds->format == PB_FORMAT_TAR; i++)
        if (spec->stages[i].decoder && (spec->stages[i].decoder->flags & PB_DECODER_OPENS_FILE))
            return spec_error(spec, &spec->stages[i], msg, msglen,
                              "decoder '%s' opens its files itself, so it cannot read samples "
                              "from tar shards (dataset.format: tar); use dataset.format: files",
                              spec->stages[i].decoder->name);
    for (int i = 0; i < spec->stage_count && pb_remote_is_url(ds->path); i++)
        if (spec->stages[i].decoder && (spec->stages[i].decoder->flags & PB_DECODER_OPENS_FILE))
            return spec_error(spec, &spec->stages[i], msg, msglen,
                              "decoder '%s' opens its files itself, so it cannot read objects "
                              "from %s: put a read stage before a decoder that takes bytes "
                              "(e.g. jpeg), or copy the data to a local folder",
                              spec->stages[i].decoder->name, ds->path);
    return PB_OK;
}

/* ---- what each engine runs (docs/engines.md) ------------------------- */

static bool in_list(const char *const *list, const char *name)
{
    for (; *list; list++)
        if (strcmp(*list, name) == 0)
            return true;
    return false;
}

/* Whether rule r holds for spec: always, or where the setting its `when`
 * names ("loader.torch_decode: torchvision") formats as that value. */
static bool rule_applies(const struct pb_engine_rule *r, const struct pb_spec *spec)
{
    const char *colon = r->when ? strstr(r->when, ": ") : NULL;
    if (!colon)
        return true;
    char key[PB_NAME_MAX * 3], why[PB_MSG_MAX], value[64];
    snprintf(key, sizeof key, "%.*s", (int)(colon - r->when), r->when);
    struct pb_config_target t;
    if (pb_config_find(spec, key, &t, why, sizeof why) != PB_OK || !t.opt)
        return true; /* a key no config has: tests/test_engine_rules.c */
    pb_opt_format(t.opt, t.base, value, sizeof value);
    return strcmp(value, colon + 2) == 0;
}

/* The row's rules that apply to one owner's options. */
static int check_engine_rules(const struct pb_engine_row *row, const struct pb_spec *spec,
                              const struct pb_stage_spec *st, const char *owner,
                              const struct pb_opt *opts, const void *values, char *msg,
                              size_t msglen)
{
    for (size_t i = 0; i < row->rule_count; i++) {
        const struct pb_engine_rule *r = &row->rules[i];
        const struct pb_opt *opt = strcmp(r->owner, owner) ? NULL : pb_opt_find(opts, r->option);
        if (!opt || !rule_applies(r, spec))
            continue;
        char value[64], allowed[128] = "";
        pb_opt_format(opt, values, value, sizeof value);
        bool ok = false;
        for (int k = 0; k < 4 && r->allowed[k]; k++) {
            ok |= strcmp(value, r->allowed[k]) == 0;
            size_t used = strlen(allowed);
            snprintf(allowed + used, sizeof allowed - used, "%s%s", k ? ", " : "", r->allowed[k]);
        }
        if (!ok)
            return spec_error(spec, st, msg, msglen,
                              "loader.engine %s cannot run %s's %s: %s (%s); allowed with "
                              "%s%s%s: %s, or %s",
                              row->name, owner, r->option, value, r->why, row->name,
                              r->when ? " and " : "", r->when ? r->when : "", allowed,
                              r->instead ? r->instead : "loader.engine: pbench");
    }
    return PB_OK;
}

/* One stage on the row's engine: a stage it has, on the CPU, with options
 * it can honour. */
static int check_engine_stage(const struct pb_engine_row *row, const struct pb_spec *spec,
                              const struct pb_stage_spec *st, char *msg, size_t msglen)
{
    const char *name = st->ops->name;
    bool device = st->ops->flags & (PB_STAGE_GPU | PB_STAGE_TO_DEVICE);
    char list[256];
    if (!in_list(row->stages, name) || device) {
        pb_engine_row_list(row->stages, " and ", list, sizeof list);
        return spec_error(spec, st, msg, msglen,
                          "loader.engine %s cannot run stage '%s'%s%s%s; %s runs: %s stages, on "
                          "the CPU",
                          row->name, name, device ? " (a device stage: " : "",
                          device ? row->title : "",
                          device ? "'s batches stay on the host)" : "", row->title, list);
    }
    if (spec->dataset.python[0] && strcmp(name, "python") != 0)
        return spec_error(spec, st, msg, msglen,
                          "stage '%s' works on files at dataset.path, but dataset.python makes "
                          "the samples with its own __getitem__; with dataset.python the "
                          "pipeline holds only python stages (or none)",
                          name);
    if (st->decoder && !in_list(row->decoders, st->decoder->name)) {
        pb_engine_row_list(row->decoders, " or ", list, sizeof list);
        return spec_error(spec, st, msg, msglen,
                          "loader.engine %s cannot run decoder '%s' (it is pbench's own); with "
                          "%s use %s",
                          row->name, st->decoder->name, row->name, list);
    }
    int rc = check_engine_rules(row, spec, st, name, st->ops->opts, st->opts, msg, msglen);
    if (rc == PB_OK && st->decoder)
        rc = check_engine_rules(row, spec, st, st->decoder->name, st->decoder->opts,
                                st->decoder_opts, msg, msglen);
    return rc;
}

/* Python (dataset.python, python stages) on pbench's own engine, which
 * runs none: named with the engine that does. */
static int check_own_engine(const struct pb_spec *spec, char *msg, size_t msglen)
{
    const struct pb_engine_row *py = pb_engine_python_row();
    const char *name = py ? py->name : "?";
    for (int i = 0; i < spec->stage_count; i++)
        if (strcmp(spec->stages[i].ops->name, "python") == 0)
            return spec_error(spec, &spec->stages[i], msg, msglen,
                              "a python stage runs only on loader.engine: %s (pbench's own "
                              "engine runs no Python); set loader.engine: %s",
                              name, name);
    if (spec->dataset.python[0])
        return key_error(spec, KEYS("dataset.python", "dataset"), msg, msglen,
                         "dataset.python runs only on loader.engine: %s (pbench's own engine "
                         "runs no Python); set loader.engine: %s",
                         name, name);
    return PB_OK;
}

int pb_config_check_engine(const struct pb_engine_row *row, const struct pb_spec *spec, char *msg,
                           size_t msglen)
{
    if (!row || row->in_process)
        return check_own_engine(spec, msg, msglen);
    if (!spec->loader.in_order && row->in_order_false_why)
        return key_error(spec, KEYS("loader.in_order", "loader.engine", "loader"), msg, msglen,
                         "loader.engine %s cannot run loader.in_order: false (%s); set it true, "
                         "or use loader.engine: pbench",
                         row->name, row->in_order_false_why);
    if (spec->dataset.cache == PB_CACHE_DIRECT && row->cache_direct_why)
        return key_error(spec, KEYS("dataset.cache", "loader.engine", "dataset"), msg, msglen,
                         "loader.engine %s cannot run dataset.cache: direct (%s); use warm or "
                         "cold (evicted before each repeat and after each read), or "
                         "loader.engine: pbench",
                         row->name, row->cache_direct_why);
    if (spec->loader.affinity != 0 && row->affinity_why)
        return key_error(spec, KEYS("loader.affinity", "loader.engine", "loader"), msg, msglen,
                         "loader.engine %s cannot run loader.affinity (%s); set it none, or use "
                         "loader.engine: pbench",
                         row->name, row->affinity_why);
    for (int i = 0; i < spec->stage_count; i++) {
        int rc = check_engine_stage(row, spec, &spec->stages[i], msg, msglen);
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

/* The key an engine runs from (the wrapped job's wrap.command): set, or
 * the row's sentence of what it names. */
static int check_required_key(const struct pb_engine_row *row, const struct pb_spec *spec,
                              char *msg, size_t msglen)
{
    if (!row || !row->section || !row->required)
        return PB_OK;
    char key[PB_NAME_MAX * 2], why[PB_MSG_MAX], value[8] = "";
    snprintf(key, sizeof key, "%s.%s", row->section, row->required);
    struct pb_config_target t;
    if (pb_config_find(spec, key, &t, why, sizeof why) == PB_OK && t.opt)
        pb_opt_format(t.opt, t.base, value, sizeof value);
    if (value[0])
        return PB_OK;
    return key_error(spec, KEYS(key, row->section, "loader.engine"), msg, msglen,
                     "loader.engine %s %s", row->name, row->required_why);
}

int pb_config_validate(const struct pb_spec *spec, char *msg, size_t msglen)
{
    bool own_dataset = pb_spec_own_samples(spec);
    int rc = check_required_key(pb_engine_row(spec->loader.engine), spec, msg, msglen);
    if (rc != PB_OK)
        return rc;
    if (spec->dataset.path[0] == '\0' && !own_dataset)
        return key_error(spec, KEYS("dataset"), msg, msglen,
                         "dataset.path is required (a directory or a glob)");
    if (spec->stage_count == 0 && !own_dataset)
        return key_error(spec, KEYS("pipeline"), msg, msglen,
                         "pipeline must list at least one stage, unless dataset.python names "
                         "your own Dataset");
    rc = pb_config_check_engine(pb_engine_row(spec->loader.engine), spec, msg, msglen);
    if (rc == PB_OK)
        rc = check_stage_order(spec, msg, msglen);
    if (rc == PB_OK)
        rc = check_bounds(spec, msg, msglen);
    if (rc == PB_OK)
        rc = check_sample_counts(spec, msg, msglen);
    if (rc == PB_OK)
        rc = check_tar_format(spec, msg, msglen);
    return rc;
}

/* A decoder told to decode on the GPU where there must be one: its
 * `hwaccel` option (the video decoder's NVDEC) set to "cuda". ("auto"
 * decodes on the CPU where there is no GPU, "none" always.) Sets *opt. */
static bool decodes_on_gpu(const struct pb_stage_spec *st, const struct pb_opt **opt)
{
    *opt = st->decoder ? pb_opt_find(st->decoder->opts, "hwaccel") : NULL;
    if (!*opt || !st->decoder_opts)
        return false;
    char value[32];
    pb_opt_format(*opt, st->decoder_opts, value, sizeof(value));
    return strcmp(value, "cuda") == 0;
}

bool pb_spec_uses_gpu(const struct pb_spec *spec)
{
    const struct pb_opt *hwaccel;
    for (int i = 0; i < spec->stage_count; i++)
        if (spec->stages[i].ops->flags & (PB_STAGE_TO_DEVICE | PB_STAGE_GPU) ||
            decodes_on_gpu(&spec->stages[i], &hwaccel))
            return true;
    return false;
}

void pb_spec_drop_gpu(struct pb_spec *spec, char *dropped, size_t droppedlen)
{
    size_t used = 0;
    if (droppedlen)
        dropped[0] = '\0';
    int kept = 0;
    for (int i = 0; i < spec->stage_count; i++) {
        struct pb_stage_spec *st = &spec->stages[i];
        const struct pb_opt *hwaccel;
        char why[PB_MSG_MAX];
        if (decodes_on_gpu(st, &hwaccel) &&
            pb_opt_parse(hwaccel, "none", st->decoder_opts, "hwaccel", why, sizeof(why)) ==
                PB_OK &&
            used < droppedlen) /* the decode stays, on the CPU */
            used += (size_t)snprintf(dropped + used, droppedlen - used,
                                     "%s%s.hwaccel: cuda (NVDEC)", used ? ", " : "",
                                     st->ops->name);
        if (st->ops->flags & (PB_STAGE_TO_DEVICE | PB_STAGE_GPU)) {
            if (used < droppedlen)
                used += (size_t)snprintf(dropped + used, droppedlen - used, "%s%s",
                                         used ? ", " : "", st->ops->name);
            free(st->opts);
            free(st->decoder_opts);
            continue;
        }
        spec->stages[kept++] = *st;
    }
    for (int i = kept; i < spec->stage_count; i++)
        memset(&spec->stages[i], 0, sizeof(spec->stages[i]));
    spec->stage_count = kept;
}
