/* The YAML config loader, `-s` overrides, cross-field validation and the
 * resolved spec's JSON form. Every key is looked up in an option table
 * (bench/opt.h), so messages, `pbench list` and result files agree. */
#include "bench/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "bench/pb.h"

#define PB_PRINTF(f, a) __attribute__((format(printf, f, a)))

static const char *const on_error_names[] = {"skip", "fail", NULL};
static const char *const generate_kind_names[] = {"files", "jpeg", "video", NULL};

#define DATASET(f) offsetof(struct pb_dataset_spec, f)
const struct pb_opt pb_dataset_opts[] = {
    {"path", PB_OPT_STRING, DATASET(path), 0, PB_PATH_MAX, "", NULL,
     "Directory of samples (walked recursively) or a glob such as 'data/*.jpg'."},
    {"shuffle", PB_OPT_BOOL, DATASET(shuffle), 0, 0, "true", NULL,
     "Visit the samples in a new random order every epoch."},
    {"seed", PB_OPT_INT, DATASET(seed), 0, 4611686018427387904.0, "0", NULL,
     "Seed of the shuffle and of every per-sample random choice."},
    {"epochs", PB_OPT_INT, DATASET(epochs), 0, 1e9, "0", NULL,
     "Passes over the data at most; 0 lets the run's stopping rule decide."},
    {"max_samples", PB_OPT_INT, DATASET(max_samples), 0, 1e15, "0", NULL,
     "Use at most this many samples of the dataset; 0 uses them all."},
    {"shard", PB_OPT_SHARD, DATASET(shard), 0, 0, "0/1", NULL,
     "This process's part of the data as RANK/COUNT, as a distributed sampler splits it."},
    {0},
};

#define GENERATE(f) offsetof(struct pb_generate_spec, f)
const struct pb_opt pb_generate_opts[] = {
    {"kind", PB_OPT_ENUM, GENERATE(kind), 0, 0, "files", generate_kind_names,
     "What to generate when dataset.path is missing or empty: files of random bytes, "
     "JPEG images or encoded videos."},
    {"count", PB_OPT_INT, GENERATE(count), 1, 1e7, "256", NULL,
     "Number of files to generate."},
    {"size_bytes", PB_OPT_INT, GENERATE(size_bytes), 1, 1073741824.0, "65536", NULL,
     "Size of each generated file, in bytes."},
    {"seed", PB_OPT_INT, GENERATE(seed), 0, 4611686018427387904.0, "1", NULL,
     "Seed of the generated contents, so every machine makes the same data."},
    {"size", PB_OPT_STRING, GENERATE(size), 0, 64, "500x375", NULL,
     "Image or video size as WxH, or a range WxH-WxH that sizes are spread over."},
    {"quality", PB_OPT_INT, GENERATE(quality), 1, 100, "90", NULL,
     "JPEG quality of generated images."},
    {"progressive_fraction", PB_OPT_DOUBLE, GENERATE(progressive_fraction), 0, 1, "0", NULL,
     "Share of generated JPEGs written progressive."},
    {"grayscale_fraction", PB_OPT_DOUBLE, GENERATE(grayscale_fraction), 0, 1, "0", NULL,
     "Share of generated JPEGs written grayscale."},
    {"frames", PB_OPT_INT, GENERATE(frames), 1, 100000, "64", NULL,
     "Frames in each generated video."},
    {"fps", PB_OPT_DOUBLE, GENERATE(fps), 1, 240, "30", NULL,
     "Frame rate of generated videos."},
    {"codec", PB_OPT_STRING, GENERATE(codec), 0, 32, "h264", NULL,
     "Codec of generated videos: h264 (libx264 when present), hevc, mpeg4, vp9, mjpeg, ..."},
    {"gop", PB_OPT_INT, GENERATE(gop), 1, 10000, "48", NULL,
     "Keyframe interval of generated videos, in frames."},
    {"corrupt_fraction", PB_OPT_DOUBLE, GENERATE(corrupt_fraction), 0, 1, "0", NULL,
     "Share of generated files written truncated, to exercise run.on_error."},
    {0},
};

#define LOADER(f) offsetof(struct pb_loader_spec, f)
const struct pb_opt pb_loader_opts[] = {
    {"workers", PB_OPT_INT, LOADER(workers), 0, 1024, "2", NULL,
     "Worker threads loading samples; 0 loads in the training loop's thread."},
    {"batch_size", PB_OPT_INT, LOADER(batch_size), 1, 65536, "32", NULL,
     "Samples per batch."},
    {"prefetch_factor", PB_OPT_INT, LOADER(prefetch_factor), 1, 1024, "2", NULL,
     "Batches each worker may have ready ahead of the training loop."},
    {"pin_memory", PB_OPT_BOOL, LOADER(pin_memory), 0, 0, "false", NULL,
     "Collate batches into page-locked memory for faster host-to-device copies."},
    {"drop_last", PB_OPT_BOOL, LOADER(drop_last), 0, 0, "false", NULL,
     "Drop an epoch's last batch when it is smaller than batch_size."},
    {"in_order", PB_OPT_BOOL, LOADER(in_order), 0, 0, "true", NULL,
     "Deliver batches in sampler order even when a later batch is ready first."},
    {"device_prefetch", PB_OPT_INT, LOADER(device_prefetch), 1, 64, "2", NULL,
     "Device buffers for batches in flight after to_device: 1 copies a batch only after the "
     "previous step is done, 2 or more overlap the next copy with the step."},
    {0},
};

#define RUN(f) offsetof(struct pb_run_spec, f)
const struct pb_opt pb_run_opts[] = {
    {"warmup_batches", PB_OPT_INT, RUN(warmup_batches), 0, 1e6, "5", NULL,
     "Batches consumed before measuring starts."},
    {"min_time_s", PB_OPT_DOUBLE, RUN(min_time_s), 0, 86400, "2", NULL,
     "Measure for at least this many seconds."},
    {"max_time_s", PB_OPT_DOUBLE, RUN(max_time_s), 0.01, 86400, "10", NULL,
     "Stop measuring after this many seconds even if throughput is still noisy."},
    {"min_samples", PB_OPT_INT, RUN(min_samples), 0, 1e12, "0", NULL,
     "Measure at least this many samples."},
    {"target_noise", PB_OPT_DOUBLE, RUN(target_noise), 0.001, 1, "0.05", NULL,
     "Stop once the relative noise of windowed throughput is below this."},
    {"window_s", PB_OPT_DOUBLE, RUN(window_s), 0.01, 60, "0.25", NULL,
     "Length of the throughput windows the noise rule looks at, in seconds."},
    {"repeats", PB_OPT_INT, RUN(repeats), 1, 1000, "3", NULL,
     "Separate measured rounds per point; repeats are the statistical replicates."},
    {"step_ms", PB_OPT_DOUBLE, RUN(step_ms), 0, 1e6, "0", NULL,
     "Simulated training step per batch, in milliseconds; 0 consumes as fast as possible."},
    {"on_error", PB_OPT_ENUM, RUN(on_error), 0, 0, "skip", on_error_names,
     "What a corrupt sample does: skip it (counted and reported) or fail the run."},
    {"stage_timing", PB_OPT_BOOL, RUN(stage_timing), 0, 0, "true", NULL,
     "Time every stage of every sample (per-stage histograms and CPU time)."},
    {0},
};

static const char *const gpu_policy_names[] = {"required", "optional", NULL};
static const char *const profile_gpu_names[] = {"events", "cupti", NULL};

/* The top-level scalars `name` and `gpu`, as options of struct pb_spec. */
static const struct pb_opt name_opts[] = {
    {"name", PB_OPT_STRING, offsetof(struct pb_spec, name), 0,
     sizeof(((struct pb_spec *)0)->name), NULL, NULL,
     "Name of the config in tables and result files; defaults to the file's base name."},
    {"gpu", PB_OPT_ENUM, offsetof(struct pb_spec, gpu), 0, 0, "required", gpu_policy_names,
     "With no CUDA device, a pipeline with to_device or GPU stages stops (required) or runs "
     "its CPU part with those stages skipped and says so (optional)."},
    {0},
};

const struct pb_opt pb_profile_opts[] = {
    {"gpu", PB_OPT_ENUM, offsetof(struct pb_profile_spec, gpu), 0, 0, "events",
     profile_gpu_names,
     "GPU measurement: events (CUDA events around every copy, stage and step) or cupti (also "
     "a CUPTI activity trace of every kernel and copy, summarized and written as a Chrome "
     "trace beside the result)."},
    {0},
};

/* snprintf for message sentences, where cutting a long list short is fine. */
static PB_PRINTF(3, 4) void say(char *buf, size_t buflen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, buflen, fmt, ap);
    va_end(ap);
}

static const char *const top_keys[] = {"name",  "dataset", "pipeline", "loader",
                                       "run",   "sweep",   "gpu",      "profile"};

/* ---- names and messages shared by the YAML loader and `-s` ---- */

/* The keys a mapping accepts: keys the caller handles itself (extras) and
 * up to two option tables with the structs their values go into. */
struct scope {
    const char *prefix; /* "loader", "pipeline.decode"; "" at the top */
    const char *extras[3];
    const struct pb_opt *opts[2];
    void *bases[2];
    bool extras_last; /* list extras after the tables' names in messages */
};

static size_t scope_names(const struct scope *scope, const char **names, size_t cap)
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

static bool scope_is_extra(const struct scope *scope, const char *key)
{
    for (size_t i = 0; i < PB_ARRAY_LEN(scope->extras) && scope->extras[i]; i++) {
        if (strcmp(scope->extras[i], key) == 0)
            return true;
    }
    return false;
}

static const struct pb_opt *scope_find(const struct scope *scope, const char *key, void **base)
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

static void join_names(const char *const *names, size_t count, char *buf, size_t buflen)
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

/* "unknown KIND 'qualified'; did you mean 'x'? LIST_LABEL: a, b, c". The
 * suggestion is looked for with the bare name the user typed. */
static void unknown_name(const char *kind, const char *qualified, const char *bare,
                         const char *const *names, size_t count, const char *list_label,
                         char *buf, size_t buflen)
{
    char list[PB_MSG_MAX / 2];
    join_names(names, count, list, sizeof list);
    const char *near = pb_nearest_name(names, count, bare);
    if (near)
        snprintf(buf, buflen, "unknown %s '%s'; did you mean '%s'? %s: %s", kind, qualified, near,
                 list_label, list);
    else
        snprintf(buf, buflen, "unknown %s '%s'; %s: %s", kind, qualified, list_label, list);
}

static void unknown_key(const struct scope *scope, const char *qualified, const char *bare,
                        char *buf, size_t buflen)
{
    const char *names[64];
    size_t count = scope_names(scope, names, PB_ARRAY_LEN(names));
    unknown_name("key", qualified, bare, names, count, "allowed", buf, buflen);
}

#define REGISTRY_NAMES_MAX 64

/* The registry's stage names, in registry order. */
static size_t stage_names(const char **names)
{
    size_t count, n = 0;
    const struct pb_stage_ops *const *all = pb_stage_all(&count);
    for (size_t i = 0; i < count && n < REGISTRY_NAMES_MAX; i++)
        names[n++] = all[i]->name;
    return n;
}

static size_t decoder_names(const char **names)
{
    size_t count, n = 0;
    const struct pb_decoder_ops *const *all = pb_decoder_all(&count);
    for (size_t i = 0; i < count && n < REGISTRY_NAMES_MAX; i++)
        names[n++] = all[i]->name;
    return n;
}

static void unknown_stage(const char *name, char *buf, size_t buflen)
{
    const char *names[REGISTRY_NAMES_MAX];
    size_t n = stage_names(names);
    unknown_name("stage", name, name, names, n, "known stages", buf, buflen);
}

/* Finds a decoder by name, or explains why it cannot be used. */
static const struct pb_decoder_ops *choose_decoder(const char *name, char *buf, size_t buflen)
{
    const struct pb_decoder_ops *dec = pb_decoder_find(name);
    if (!dec) {
        const char *names[REGISTRY_NAMES_MAX];
        size_t n = decoder_names(names);
        unknown_name("decoder", name, name, names, n, "known decoders", buf, buflen);
        return NULL;
    }
    if (dec->unavailable_reason) {
        snprintf(buf, buflen, "decoder '%s' is not available in this build: %s", name,
                 dec->unavailable_reason);
        return NULL;
    }
    return dec;
}

/* A zeroed options struct of size bytes with the table's defaults; NULL
 * (and PB_OK) when the table has no options. */
static int new_opts(const struct pb_opt *table, size_t size, void **out, char *msg,
                    size_t msglen)
{
    *out = NULL;
    if (size == 0)
        return PB_OK;
    void *opts = calloc(1, size);
    if (!opts) {
        snprintf(msg, msglen, "out of memory");
        return PB_ERR_NOMEM;
    }
    int rc = pb_opt_set_defaults(table, opts, msg, msglen);
    if (rc != PB_OK) {
        free(opts);
        return rc;
    }
    *out = opts;
    return PB_OK;
}

/* The options a stage accepts: its own table, and its decoder's. */
static void stage_scope(const struct pb_stage_spec *st, const char *prefix, struct scope *scope)
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

/* Resets spec to defaults; source names it in messages and gives the
 * default name (the base name without its extension). */
static int spec_init(struct pb_spec *spec, const char *source, char *msg, size_t msglen)
{
    memset(spec, 0, sizeof(*spec));
    snprintf(spec->source, sizeof spec->source, "%s", source);
    const char *base = strrchr(source, '/');
    base = base ? base + 1 : source;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (len >= sizeof spec->name)
        len = sizeof spec->name - 1;
    memcpy(spec->name, base, len);
    spec->name[len] = '\0';

    int rc = pb_opt_set_defaults(pb_dataset_opts, &spec->dataset, msg, msglen);
    if (rc == PB_OK)
        rc = pb_opt_set_defaults(pb_generate_opts, &spec->dataset.generate, msg, msglen);
    if (rc == PB_OK)
        rc = pb_opt_set_defaults(pb_loader_opts, &spec->loader, msg, msglen);
    if (rc == PB_OK)
        rc = pb_opt_set_defaults(pb_run_opts, &spec->run, msg, msglen);
    if (rc == PB_OK)
        rc = pb_opt_set_defaults(pb_profile_opts, &spec->profile, msg, msglen);
    if (rc == PB_OK)
        rc = pb_opt_set_defaults(name_opts + 1, spec, msg, msglen);
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
}

/* ---- YAML ---- */

struct loader {
    const char *file; /* name used in messages */
    yaml_document_t *doc;
    struct pb_spec *spec;
    char *msg;
    size_t msglen;
    bool have_pipeline;
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

/* key: value where the key must be one of the scope's options. */
static int set_option(const struct loader *ld, const struct scope *scope, const yaml_node_t *key,
                      const yaml_node_t *value)
{
    char qualified[PB_MSG_MAX / 2];
    char why[PB_MSG_MAX];
    qualify(scope->prefix, scalar_text(key), qualified, sizeof qualified);
    void *base = NULL;
    const struct pb_opt *opt = scope_find(scope, scalar_text(key), &base);
    if (!opt) {
        unknown_key(scope, qualified, scalar_text(key), why, sizeof why);
        return node_error(ld, key, "%s", why);
    }
    bool list = opt->type == PB_OPT_INT_LIST || opt->type == PB_OPT_DOUBLE_LIST;
    if (list && value->type == YAML_MAPPING_NODE)
        return node_error(ld, value, "%s must be a scalar or a sequence, got %s", qualified,
                          node_kind(value));
    if (list)
        return set_list_option(ld, opt, base, qualified, value);
    if (value->type != YAML_SCALAR_NODE)
        return node_error(ld, value, "%s must be a scalar, got %s", qualified, node_kind(value));
    if (pb_opt_parse(opt, scalar_text(value), base, qualified, why, sizeof why) != PB_OK)
        return node_error(ld, value, "%s", why);
    return PB_OK;
}

/* Applies a mapping of options; keys in scope->extras are skipped (the
 * caller handles them). A null value means "all defaults". */
static int parse_options(const struct loader *ld, const yaml_node_t *node,
                         const struct scope *scope)
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
        if (scope_is_extra(scope, scalar_text(key)))
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

static int parse_dataset(const struct loader *ld, const yaml_node_t *node)
{
    struct pb_dataset_spec *ds = &ld->spec->dataset;
    const struct scope scope = {.prefix = "dataset", .extras = {"generate"},
                                .opts = {pb_dataset_opts}, .bases = {ds}, .extras_last = true};
    int rc = parse_options(ld, node, &scope);
    if (rc != PB_OK)
        return rc;
    const yaml_node_t *gen = mapping_get(ld, node, "generate");
    if (!gen)
        return PB_OK;
    const struct scope gen_scope = {.prefix = "dataset.generate", .opts = {pb_generate_opts},
                                    .bases = {&ds->generate}};
    rc = parse_options(ld, gen, &gen_scope);
    if (rc == PB_OK)
        ds->has_generate = true;
    return rc;
}

/* Chooses a decoder stage's decoder from its `decoder` key. */
static int parse_decoder(const struct loader *ld, struct pb_stage_spec *st, const char *prefix,
                         const yaml_node_t *name_node, const yaml_node_t *options)
{
    char why[PB_MSG_MAX];
    const yaml_node_t *value = mapping_get(ld, options, "decoder");
    if (!value) {
        const char *names[REGISTRY_NAMES_MAX];
        char list[PB_MSG_MAX / 2];
        join_names(names, decoder_names(names), list, sizeof list);
        return node_error(ld, name_node, "%s.decoder is required; known decoders: %s", prefix,
                          list);
    }
    if (value->type != YAML_SCALAR_NODE)
        return node_error(ld, value, "%s.decoder must be a scalar, got %s", prefix,
                          node_kind(value));
    st->decoder = choose_decoder(scalar_text(value), why, sizeof why);
    if (!st->decoder)
        return node_error(ld, value, "%s", why);
    int rc = new_opts(st->decoder->opts, st->decoder->opts_size, &st->decoder_opts, why,
                      sizeof why);
    if (rc != PB_OK)
        return node_error(ld, value, "%s", why);
    return PB_OK;
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
    const struct pb_stage_ops *ops = pb_stage_find(name);
    if (!ops) {
        unknown_stage(name, why, sizeof why);
        return node_error(ld, name_node, "%s", why);
    }
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

    struct pb_stage_spec *st = &spec->stages[spec->stage_count++];
    st->ops = ops;
    st->line = (int)name_node->start_mark.line + 1;
    st->column = (int)name_node->start_mark.column + 1;
    int rc = new_opts(ops->opts, ops->opts_size, &st->opts, why, sizeof why);
    if (rc != PB_OK)
        return node_error(ld, name_node, "%s", why);
    if (ops->flags & PB_STAGE_DECODER) {
        rc = parse_decoder(ld, st, prefix, name_node, options);
        if (rc != PB_OK)
            return rc;
    }
    struct scope scope;
    stage_scope(st, prefix, &scope);
    rc = options ? parse_options(ld, options, &scope) : PB_OK;
    /* A GPU version missing from this build is the run's gpu policy to
     * explain (gpu: required fails with the reason, optional drops it). */
    if (rc == PB_OK)
        st->ops = pb_stage_for_device(st->ops, st->opts);
    return rc;
}

static int parse_pipeline(const struct loader *ld, const yaml_node_t *node)
{
    if (is_null(node) ||
        (node->type == YAML_SEQUENCE_NODE &&
         node->data.sequence.items.top == node->data.sequence.items.start))
        return node_error(ld, node, "pipeline must list at least one stage");
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

static int parse_root(struct loader *ld, const yaml_node_t *root)
{
    char list[PB_MSG_MAX / 2];
    join_names(top_keys, PB_ARRAY_LEN(top_keys), list, sizeof list);
    if (!root) {
        snprintf(ld->msg, ld->msglen, "%s: the config is empty; expected a mapping with keys %s",
                 ld->file, list);
        return PB_ERR_CONFIG;
    }
    if (root->type != YAML_MAPPING_NODE)
        return node_error(ld, root, "the config must be a mapping with keys %s, got %s", list,
                          node_kind(root));
    int rc = check_mapping(ld, root, "");
    if (rc != PB_OK)
        return rc;

    const struct scope top = {.prefix = "", .opts = {name_opts}, .bases = {ld->spec}};
    for (const yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top && rc == PB_OK; p++) {
        const yaml_node_t *key = get_node(ld, p->key);
        const yaml_node_t *value = get_node(ld, p->value);
        const char *k = scalar_text(key);
        if (strcmp(k, "dataset") == 0) {
            rc = parse_dataset(ld, value);
        } else if (strcmp(k, "pipeline") == 0) {
            ld->have_pipeline = true;
            rc = parse_pipeline(ld, value);
        } else if (strcmp(k, "loader") == 0) {
            const struct scope s = {.prefix = "loader", .opts = {pb_loader_opts},
                                    .bases = {&ld->spec->loader}};
            rc = parse_options(ld, value, &s);
        } else if (strcmp(k, "run") == 0) {
            const struct scope s = {.prefix = "run", .opts = {pb_run_opts},
                                    .bases = {&ld->spec->run}};
            rc = parse_options(ld, value, &s);
        } else if (strcmp(k, "profile") == 0) {
            const struct scope s = {.prefix = "profile", .opts = {pb_profile_opts},
                                    .bases = {&ld->spec->profile}};
            rc = parse_options(ld, value, &s);
        } else if (strcmp(k, "name") == 0 || strcmp(k, "gpu") == 0) {
            rc = set_option(ld, &top, key, value);
        } else if (strcmp(k, "sweep") == 0) {
            /* Axes to sweep: read and checked by bench/sweep.c. */
        } else {
            char why[PB_MSG_MAX];
            unknown_name("key", k, k, top_keys, PB_ARRAY_LEN(top_keys), "allowed", why,
                         sizeof why);
            rc = node_error(ld, key, "%s", why);
        }
    }
    if (rc == PB_OK && !ld->have_pipeline) {
        snprintf(ld->msg, ld->msglen,
                 "%s: pipeline is required (a list of stages, e.g. '- read:' then '- decode:')",
                 ld->file);
        rc = PB_ERR_CONFIG;
    }
    return rc;
}

static int yaml_error(const yaml_parser_t *parser, const char *file, char *msg, size_t msglen)
{
    const char *problem = parser->problem ? parser->problem : "unknown problem";
    switch (parser->error) {
    case YAML_MEMORY_ERROR:
        snprintf(msg, msglen, "%s: out of memory while reading YAML", file);
        return PB_ERR_NOMEM;
    case YAML_READER_ERROR:
        snprintf(msg, msglen, "%s: cannot read YAML: %s at byte %zu", file, problem,
                 parser->problem_offset);
        return PB_ERR_CONFIG;
    default:
        snprintf(msg, msglen, "%s:%zu:%zu: YAML syntax error: %s", file,
                 parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem);
        return PB_ERR_CONFIG;
    }
}

/* Loads the one document the parser holds into spec. */
static int load_parser(yaml_parser_t *parser, const char *file, struct pb_spec *spec, char *msg,
                       size_t msglen)
{
    yaml_document_t doc, extra;
    if (!yaml_parser_load(parser, &doc))
        return yaml_error(parser, file, msg, msglen);
    int rc = PB_OK;
    if (!yaml_parser_load(parser, &extra)) {
        rc = yaml_error(parser, file, msg, msglen);
    } else {
        const yaml_node_t *second = yaml_document_get_root_node(&extra);
        if (second)
            snprintf(msg, msglen, "%s:%zu:%zu: the file holds more than one YAML document",
                     file, extra.start_mark.line + 1, extra.start_mark.column + 1);
        rc = second ? PB_ERR_CONFIG : PB_OK;
        yaml_document_delete(&extra);
    }
    if (rc == PB_OK) {
        struct loader ld = {.file = file, .doc = &doc, .spec = spec, .msg = msg, .msglen = msglen};
        rc = parse_root(&ld, yaml_document_get_root_node(&doc));
    }
    yaml_document_delete(&doc);
    return rc;
}

/* Cross-field rules are left to pb_config_validate(), which the caller
 * runs after applying `-s` overrides. */
int pb_config_load(const char *path, struct pb_spec *spec, char *msg, size_t msglen)
{
    int rc = spec_init(spec, path, msg, msglen);
    if (rc != PB_OK)
        return rc;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, msglen, "cannot open '%s': %s", path, strerror(errno));
        return PB_ERR;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        snprintf(msg, msglen, "%s: out of memory", path);
        return PB_ERR_NOMEM;
    }
    yaml_parser_set_input_file(&parser, f);
    rc = load_parser(&parser, path, spec, msg, msglen);
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

int pb_config_load_string(const char *yaml, const char *name, struct pb_spec *spec, char *msg,
                          size_t msglen)
{
    int rc = spec_init(spec, name, msg, msglen);
    if (rc != PB_OK)
        return rc;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(msg, msglen, "%s: out of memory", name);
        return PB_ERR_NOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, strlen(yaml));
    rc = load_parser(&parser, name, spec, msg, msglen);
    yaml_parser_delete(&parser);
    return rc;
}

/* ---- `-s key.path=value` ---- */

/* The stage a `pipeline.REF.key` override names: a position or a name. */
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
    join_names(names, (size_t)spec->stage_count, list, sizeof list);
    snprintf(why, whylen, "the pipeline has no stage '%s'; its stages: %s", ref, list);
    return -1;
}

static int switch_decoder(struct pb_stage_spec *st, const char *name, char *why, size_t whylen)
{
    const struct pb_decoder_ops *dec = choose_decoder(name, why, whylen);
    if (!dec)
        return PB_ERR_CONFIG;
    void *opts;
    int rc = new_opts(dec->opts, dec->opts_size, &opts, why, whylen);
    if (rc != PB_OK)
        return rc;
    free(st->decoder_opts);
    st->decoder = dec;
    st->decoder_opts = opts;
    return PB_OK;
}

static int set_from_text(const struct scope *scope, const char *qualified, const char *key,
                         const char *value, char *why, size_t whylen)
{
    void *base = NULL;
    const struct pb_opt *opt = scope_find(scope, key, &base);
    if (!opt) {
        unknown_key(scope, qualified, key, why, whylen);
        return PB_ERR_CONFIG;
    }
    return pb_opt_parse(opt, value, base, qualified, why, whylen);
}

static void section_needs_key(const char *section, const struct pb_opt *opts, const char *extra,
                              char *why, size_t whylen)
{
    char names[PB_MSG_MAX / 2];
    pb_opt_names(opts, names, sizeof names);
    say(why, whylen, "expected %s.KEY=VALUE; keys: %s%s%s", section, names,
             extra ? ", " : "", extra ? extra : "");
}

static int apply_override(struct pb_spec *spec, const char *assignment, char *why, size_t whylen)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment) {
        snprintf(why, whylen, "expected KEY=VALUE");
        return PB_ERR_CONFIG;
    }
    char full[256], path[256];
    size_t keylen = (size_t)(eq - assignment);
    if (keylen >= sizeof full) {
        snprintf(why, whylen, "the key is too long");
        return PB_ERR_CONFIG;
    }
    memcpy(full, assignment, keylen);
    full[keylen] = '\0';
    memcpy(path, full, keylen + 1);
    const char *value = eq + 1;

    char *section = path;
    char *rest = strchr(path, '.');
    if (rest)
        *rest++ = '\0';

    if ((strcmp(section, "name") == 0 || strcmp(section, "gpu") == 0) && !rest) {
        const struct scope s = {.prefix = "", .opts = {name_opts}, .bases = {spec}};
        return set_from_text(&s, full, section, value, why, whylen);
    }
    if (strcmp(section, "dataset") == 0) {
        struct pb_dataset_spec *ds = &spec->dataset;
        if (!rest) {
            section_needs_key("dataset", pb_dataset_opts, "generate.KEY", why, whylen);
            return PB_ERR_CONFIG;
        }
        if (strncmp(rest, "generate", 8) == 0 && (rest[8] == '\0' || rest[8] == '.')) {
            if (rest[8] == '\0') {
                section_needs_key("dataset.generate", pb_generate_opts, NULL, why, whylen);
                return PB_ERR_CONFIG;
            }
            const struct scope s = {.prefix = "dataset.generate", .opts = {pb_generate_opts},
                                    .bases = {&ds->generate}};
            int rc = set_from_text(&s, full, rest + 9, value, why, whylen);
            if (rc == PB_OK)
                ds->has_generate = true;
            return rc;
        }
        const struct scope s = {.prefix = "dataset", .extras = {"generate"},
                                .opts = {pb_dataset_opts}, .bases = {ds}, .extras_last = true};
        return set_from_text(&s, full, rest, value, why, whylen);
    }
    if (strcmp(section, "loader") == 0 || strcmp(section, "run") == 0 ||
        strcmp(section, "profile") == 0) {
        const struct pb_opt *opts = section[0] == 'l'   ? pb_loader_opts
                                    : section[0] == 'r' ? pb_run_opts
                                                        : pb_profile_opts;
        if (!rest) {
            section_needs_key(section, opts, NULL, why, whylen);
            return PB_ERR_CONFIG;
        }
        void *base = section[0] == 'l'   ? (void *)&spec->loader
                     : section[0] == 'r' ? (void *)&spec->run
                                         : (void *)&spec->profile;
        const struct scope s = {.prefix = section, .opts = {opts}, .bases = {base}};
        return set_from_text(&s, full, rest, value, why, whylen);
    }
    if (strcmp(section, "pipeline") == 0) {
        char *key = rest ? strchr(rest, '.') : NULL;
        if (!key) {
            snprintf(why, whylen,
                     "expected pipeline.STAGE.KEY=VALUE, where STAGE is a stage's name or "
                     "position (0 is the first)");
            return PB_ERR_CONFIG;
        }
        *key++ = '\0';
        int index = find_stage(spec, rest, why, whylen);
        if (index < 0)
            return PB_ERR_CONFIG;
        struct pb_stage_spec *st = &spec->stages[index];
        if ((st->ops->flags & PB_STAGE_DECODER) && strcmp(key, "decoder") == 0)
            return switch_decoder(st, value, why, whylen);
        char prefix[PB_NAME_MAX + 16];
        snprintf(prefix, sizeof prefix, "pipeline.%s", rest);
        struct scope s;
        stage_scope(st, prefix, &s);
        int rc = set_from_text(&s, full, key, value, why, whylen);
        if (rc == PB_OK)
            st->ops = pb_stage_for_device(st->ops, st->opts);
        return rc;
    }
    unknown_name("key", full, section, top_keys, PB_ARRAY_LEN(top_keys), "allowed", why, whylen);
    return PB_ERR_CONFIG;
}

int pb_config_override(struct pb_spec *spec, const char *assignment, char *msg, size_t msglen)
{
    char why[PB_MSG_MAX];
    int rc = apply_override(spec, assignment, why, sizeof why);
    if (rc != PB_OK)
        snprintf(msg, msglen, "-s %s: %s", assignment, why);
    return rc;
}

/* ---- cross-field rules ---- */

static PB_PRINTF(5, 6) int spec_error(const struct pb_spec *spec, const struct pb_stage_spec *st,
                                      char *msg, size_t msglen, const char *fmt, ...)
{
    char sentence[PB_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    const char *file = spec->source[0] ? spec->source : spec->name[0] ? spec->name : "config";
    if (st && st->line > 0)
        snprintf(msg, msglen, "%s:%d:%d: %s", file, st->line, st->column, sentence);
    else
        snprintf(msg, msglen, "%s: %s", file, sentence);
    return PB_ERR_CONFIG;
}

int pb_config_validate(const struct pb_spec *spec, char *msg, size_t msglen)
{
    const struct pb_dataset_spec *ds = &spec->dataset;
    const struct pb_run_spec *run = &spec->run;
    if (ds->path[0] == '\0')
        return spec_error(spec, NULL, msg, msglen,
                          "dataset.path is required (a directory or a glob)");
    if (spec->stage_count == 0)
        return spec_error(spec, NULL, msg, msglen, "pipeline must list at least one stage");

    const struct pb_stage_spec *reader = NULL, *consumer = NULL, *to_device = NULL;
    for (int i = 0; i < spec->stage_count; i++) {
        const struct pb_stage_spec *st = &spec->stages[i];
        unsigned flags = st->ops->flags;
        /* The rules between a stage's (and its decoder's) options. */
        char why[PB_MSG_MAX];
        if (st->ops->validate && st->ops->validate(st->opts, why, sizeof why) != PB_OK)
            return spec_error(spec, st, msg, msglen, "%s", why);
        if (st->decoder && st->decoder->validate &&
            st->decoder->validate(st->decoder_opts, why, sizeof why) != PB_OK)
            return spec_error(spec, st, msg, msglen, "%s", why);
        if ((flags & PB_STAGE_DECODER) && st->decoder &&
            !(st->decoder->flags & PB_DECODER_OPENS_FILE) && !reader)
            return spec_error(spec, st, msg, msglen,
                              "stage '%s' with decoder '%s' needs a stage that reads the "
                              "samples' bytes (such as 'read') earlier in the pipeline",
                              st->ops->name, st->decoder->name);
        if ((flags & PB_STAGE_DECODER) && !st->decoder)
            return spec_error(spec, st, msg, msglen, "stage '%s' has no decoder",
                              st->ops->name);
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

    if (run->min_time_s > run->max_time_s) {
        char lo[32], hi[32];
        pb_opt_format(pb_opt_find(pb_run_opts, "min_time_s"), run, lo, sizeof lo);
        pb_opt_format(pb_opt_find(pb_run_opts, "max_time_s"), run, hi, sizeof hi);
        return spec_error(spec, NULL, msg, msglen,
                          "run.min_time_s (%s) must not exceed run.max_time_s (%s)", lo, hi);
    }
    if (ds->shard.count < 1 || ds->shard.rank < 0 || ds->shard.rank >= ds->shard.count)
        return spec_error(spec, NULL, msg, msglen,
                          "dataset.shard must be RANK/COUNT with 0 <= RANK < COUNT, "
                          "got '%lld/%lld'",
                          (long long)ds->shard.rank, (long long)ds->shard.count);
    if (ds->has_generate && ds->generate.count < ds->shard.count)
        return spec_error(spec, NULL, msg, msglen,
                          "dataset.shard splits the data over %lld ranks but "
                          "dataset.generate.count is %lld; every rank needs at least one sample",
                          (long long)ds->shard.count, (long long)ds->generate.count);
    if (ds->max_samples > 0 && ds->max_samples < ds->shard.count)
        return spec_error(spec, NULL, msg, msglen,
                          "dataset.shard splits the data over %lld ranks but "
                          "dataset.max_samples is %lld; every rank needs at least one sample",
                          (long long)ds->shard.count, (long long)ds->max_samples);
    if (spec->loader.drop_last && ds->max_samples > 0 &&
        ds->max_samples < spec->loader.batch_size)
        return spec_error(spec, NULL, msg, msglen,
                          "dataset.max_samples (%lld) is less than loader.batch_size (%lld) and "
                          "loader.drop_last is on, so no batch would ever be delivered",
                          (long long)ds->max_samples, (long long)spec->loader.batch_size);
    return PB_OK;
}

/* ---- JSON ---- */

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
    return put(item, st->ops->name, opts) ? item : (json_decref(item), NULL);
}

json_t *pb_spec_to_json(const struct pb_spec *spec)
{
    json_t *root = json_object();
    json_t *dataset = pb_opt_to_json(pb_dataset_opts, &spec->dataset);
    json_t *pipeline = json_array();
    bool ok = root && dataset && pipeline;
    if (ok && spec->dataset.has_generate)
        ok = put(dataset, "generate", pb_opt_to_json(pb_generate_opts, &spec->dataset.generate));
    for (int i = 0; ok && i < spec->stage_count; i++)
        ok = json_array_append_new(pipeline, stage_to_json(&spec->stages[i])) == 0;
    /* put() takes over the value it is given, even when it fails. */
    if (ok) {
        ok = put(root, "name", json_string(spec->name));
        ok = put(root, "dataset", dataset) && ok;
        ok = put(root, "pipeline", pipeline) && ok;
        dataset = pipeline = NULL;
        ok = ok && put(root, "loader", pb_opt_to_json(pb_loader_opts, &spec->loader));
        ok = ok && put(root, "run", pb_opt_to_json(pb_run_opts, &spec->run));
        ok = ok && put(root, "profile", pb_opt_to_json(pb_profile_opts, &spec->profile));
        ok = ok && put(root, "gpu", json_string(gpu_policy_names[spec->gpu]));
    }
    json_decref(dataset);
    json_decref(pipeline);
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
    if (spec->stage_count >= PB_MAX_STAGES) {
        snprintf(msg, msglen, "pipeline has more than %d stages", PB_MAX_STAGES);
        return PB_ERR_CONFIG;
    }
    const char *name = json_object_iter_key(json_object_iter((json_t *)item));
    const json_t *opts = json_object_iter_value(json_object_iter((json_t *)item));
    const struct pb_stage_ops *ops = pb_stage_find(name);
    if (!ops) {
        unknown_stage(name, msg, msglen);
        return PB_ERR_CONFIG;
    }
    struct pb_stage_spec *st = &spec->stages[spec->stage_count++];
    st->ops = ops;
    int rc = new_opts(ops->opts, ops->opts_size, &st->opts, msg, msglen);
    if (rc != PB_OK)
        return rc;
    char prefix[PB_NAME_MAX + 16];
    snprintf(prefix, sizeof prefix, "pipeline.%s", name);
    if (json_is_null(opts))
        opts = NULL;
    if (ops->flags & PB_STAGE_DECODER) {
        const json_t *dec = opts ? json_object_get(opts, "decoder") : NULL;
        if (!json_is_string(dec)) {
            snprintf(msg, msglen, "%s.decoder is required", prefix);
            return PB_ERR_CONFIG;
        }
        st->decoder = pb_decoder_find(json_string_value(dec));
        if (!st->decoder) {
            snprintf(msg, msglen, "unknown decoder '%s'", json_string_value(dec));
            return PB_ERR_CONFIG;
        }
        rc = new_opts(st->decoder->opts, st->decoder->opts_size, &st->decoder_opts, msg, msglen);
        if (rc != PB_OK)
            return rc;
    }
    if (!opts)
        return PB_OK;
    if (st->opts)
        rc = pb_opt_from_json(ops->opts, st->opts, opts, prefix, msg, msglen);
    if (rc == PB_OK && st->decoder_opts)
        rc = pb_opt_from_json(st->decoder->opts, st->decoder_opts, opts, prefix, msg, msglen);
    if (rc == PB_OK)
        st->ops = pb_stage_for_device(st->ops, st->opts);
    return rc;
}

/* Unknown keys are ignored (a newer build may have written them); types,
 * ranges, stage and decoder names are checked. */
int pb_spec_from_json(const json_t *obj, struct pb_spec *spec, char *msg, size_t msglen)
{
    int rc = spec_init(spec, "", msg, msglen);
    if (rc != PB_OK)
        return rc;
    if (!json_is_object(obj)) {
        snprintf(msg, msglen, "the config must be a JSON object");
        return PB_ERR_CONFIG;
    }
    const json_t *name = json_object_get(obj, "name");
    if (name) {
        if (!json_is_string(name)) {
            snprintf(msg, msglen, "name must be a string");
            return PB_ERR_CONFIG;
        }
        rc = pb_opt_parse(&name_opts[0], json_string_value(name), spec, "name", msg, msglen);
        if (rc != PB_OK)
            return rc;
    }
    const json_t *dataset = json_object_get(obj, "dataset");
    if (dataset) {
        rc = pb_opt_from_json(pb_dataset_opts, &spec->dataset, dataset, "dataset", msg, msglen);
        if (rc != PB_OK)
            return rc;
        const json_t *gen = json_object_get(dataset, "generate");
        if (gen && !json_is_null(gen)) {
            rc = pb_opt_from_json(pb_generate_opts, &spec->dataset.generate, gen,
                                  "dataset.generate", msg, msglen);
            if (rc != PB_OK)
                return rc;
            spec->dataset.has_generate = true;
        }
    }
    const json_t *loader = json_object_get(obj, "loader");
    if (loader && (rc = pb_opt_from_json(pb_loader_opts, &spec->loader, loader, "loader", msg,
                                         msglen)) != PB_OK)
        return rc;
    const json_t *run = json_object_get(obj, "run");
    if (run && (rc = pb_opt_from_json(pb_run_opts, &spec->run, run, "run", msg, msglen)) != PB_OK)
        return rc;
    const json_t *profile = json_object_get(obj, "profile");
    if (profile && (rc = pb_opt_from_json(pb_profile_opts, &spec->profile, profile, "profile",
                                          msg, msglen)) != PB_OK)
        return rc;
    const json_t *gpu = json_object_get(obj, "gpu");
    if (json_is_string(gpu) &&
        (rc = pb_opt_parse(&name_opts[1], json_string_value(gpu), spec, "gpu", msg, msglen)) !=
            PB_OK)
        return rc;

    const json_t *pipeline = json_object_get(obj, "pipeline");
    if (!json_is_array(pipeline)) {
        snprintf(msg, msglen, "pipeline must be an array of stages");
        return PB_ERR_CONFIG;
    }
    for (size_t i = 0; i < json_array_size(pipeline); i++) {
        rc = stage_from_json(spec, i, json_array_get(pipeline, i), msg, msglen);
        if (rc != PB_OK)
            return rc;
    }
    return PB_OK;
}

int pb_parse_size_range(const char *text, int *min_w, int *min_h, int *max_w, int *max_h,
                        char *msg, size_t msglen)
{
    int a = 0, b = 0, c = 0, d = 0, used = 0;
    if (sscanf(text, "%dx%d%n", &a, &b, &used) == 2 && text[used] == 0) {
        c = a;
        d = b;
    } else if (sscanf(text, "%dx%d-%dx%d%n", &a, &b, &c, &d, &used) != 4 || text[used] != 0) {
        snprintf(msg, msglen, "size must be WxH or WxH-WxH, got '%s'", text);
        return PB_ERR_CONFIG;
    }
    if (a < 1 || b < 1 || c < a || d < b || c > 16384 || d > 16384) {
        snprintf(msg, msglen,
                 "size '%s' must have sides between 1 and 16384, the second size no smaller than "
                 "the first",
                 text);
        return PB_ERR_CONFIG;
    }
    *min_w = a;
    *min_h = b;
    *max_w = c;
    *max_h = d;
    return PB_OK;
}

bool pb_spec_uses_gpu(const struct pb_spec *spec)
{
    for (int i = 0; i < spec->stage_count; i++)
        if (spec->stages[i].ops->flags & (PB_STAGE_TO_DEVICE | PB_STAGE_GPU))
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
