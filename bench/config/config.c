/* The config's shape (the section table and the option tables), the
 * spec's life cycle (defaults, copy, free), `-s` overrides and cross-field
 * validation. The YAML loader is config_yaml.c, the JSON form
 * config_json.c; every key is looked up in an option table (bench/base/opt.h),
 * so messages, `pbench list` and result files agree. */
#include "bench/config/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "bench/sys/affinity.h"
#include "bench/config/config_scope.h"
#include "bench/base/pb.h"
#include "bench/config/sweep.h"
#include "pipelines/storage.h"

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
    {"cache", PB_OPT_ENUM, DATASET(cache), 0, 0, "warm", pb_cache_mode_names,
     "Page cache policy: warm reads through it as a DataLoader does; cold evicts the dataset's "
     "files before each repeat and each file after it is read, so every epoch reads storage; "
     "direct reads with O_DIRECT. Each repeat measures how much of the dataset was cached."},
    {"format", PB_OPT_ENUM, DATASET(format), 0, 0, "files", pb_dataset_format_names,
     "files: one sample per file; tar: WebDataset tar shards (members grouped by key, the "
     "image member decoded), each worker reading its run of shards in order."},
    {"shuffle_buffer", PB_OPT_INT, DATASET(shuffle_buffer), 0, 1e7, "0", NULL,
     "tar: shuffle samples within windows of this many as each worker streams its shards "
     "(with dataset.shuffle); 0 keeps shard order."},
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
    {"shards", PB_OPT_INT, GENERATE(shards), 0, 1e6, "0", NULL,
     "Pack the generated files into this many WebDataset tar shards (read them with "
     "dataset.format: tar); 0 leaves loose files."},
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
    {"affinity", PB_OPT_ENUM, LOADER(affinity), 0, 0, "none", pb_affinity_policy_names,
     "Where the training loop and the workers run (hwloc): none leaves it to the OS; compact "
     "binds each thread to its own core, neighbours first; spread spaces them evenly over the "
     "cores (so neighbours land on different packages and NUMA nodes); numa binds each thread to a whole NUMA node, round "
     "robin (as compact, and said so, on a machine with one node). Under mpirun the ranks on "
     "a node split its cores first. The result records each thread's CPU set."},
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
    {"max_error_pct", PB_OPT_DOUBLE, RUN(max_error_pct), 0, 100, "50", NULL,
     "A repeat fails (exit 1) when more than this share of its samples, in percent, are bad "
     "(skipped under on_error: skip); one that delivers no sample at all always fails."},
    {"max_memory_mib", PB_OPT_INT, RUN(max_memory_mib), 0, 1e9, "0", NULL,
     "Largest batch pool and worker buffers a point may allocate, in MiB; 0 allows what the "
     "machine has available (MemAvailable). A point needing more is refused before it "
     "allocates."},
    {"trace", PB_OPT_BOOL, RUN(trace), 0, 0, "false", NULL,
     "Write a CPU timeline beside the result (NAME.trace.json, Chrome trace-event JSON for "
     "Perfetto or chrome://tracing): a span per sample per stage on each worker's track, the "
     "training loop's wait, stages and step, and the queue depth. Needs stage_timing for the "
     "stage spans; pbench run --trace FILE names the file."},
    {0},
};

static const char *const profile_gpu_names[] = {"events", "cupti", NULL};
static const char *const profile_level_names[] = {"basic", "detailed", "comprehensive", NULL};

const struct pb_opt pb_profile_opts[] = {
    {"gpu", PB_OPT_ENUM, offsetof(struct pb_profile_spec, gpu), 0, 0, "events",
     profile_gpu_names,
     "GPU measurement: events (CUDA events around every copy, stage and step) or cupti (also "
     "a CUPTI activity trace of every kernel and copy, summarized and written as a Chrome "
     "trace beside the result)."},
    {"level", PB_OPT_ENUM, offsetof(struct pb_profile_spec, level), 0, 0, "detailed",
     profile_level_names,
     "How much to measure: basic (throughput, stall, memory; no per-stage timing, the least "
     "overhead), detailed (also per-stage histograms and CPU time) or comprehensive (also the "
     "CPU trace as run.trace, per-stage perf counters: page faults and context switches, and "
     "cycles, instructions and cache misses where the machine allows; CUPTI with a GPU). "
     "docs/profiling.md measures each level's cost."},
    {0},
};


static const char *const gpu_policy_names[] = {"required", "optional", NULL};

/* The top-level scalars, each a one-entry table over its own value. */
static const struct pb_opt name_opts[] = {
    {"name", PB_OPT_STRING, 0, 0, sizeof(((struct pb_spec *)0)->name), NULL, NULL,
     "Name of the config in tables and result files; defaults to the file's base name."},
    {0},
};

static const struct pb_opt gpu_opts[] = {
    {"gpu", PB_OPT_ENUM, 0, 0, 0, "required", gpu_policy_names,
     "With no CUDA device, a pipeline with to_device or GPU stages stops (required) or runs "
     "its CPU part with those stages skipped and says so (optional)."},
    {0},
};

#define SPEC(f) offsetof(struct pb_spec, f)
const struct pb_section pb_sections[] = {
    {"name", PB_SECTION_VALUE, name_opts, SPEC(name), 0,
     "The config's name in tables and result files.", NULL},
    {"dataset", PB_SECTION_OPTIONS, pb_dataset_opts, SPEC(dataset), 0,
     "The samples: where they are, their order, and this process's shard.", NULL},
    {"dataset.generate", PB_SECTION_OPTIONS, pb_generate_opts, SPEC(dataset.generate),
     SPEC(dataset.has_generate),
     "Data pbench makes on first use when dataset.path is missing or empty "
     "(also 'pbench gen').",
     NULL},
    {"pipeline", PB_SECTION_PIPELINE, NULL, 0, 0,
     "The stages each sample and batch go through, in order.",
     "a list of '- STAGE: {KEY: VALUE}' (see the stages below); a decode stage also takes "
     "'decoder: NAME' and that decoder's options"},
    {"loader", PB_SECTION_OPTIONS, pb_loader_opts, SPEC(loader), 0,
     "How batches are made, as PyTorch's DataLoader: workers, batch size, prefetch, pinning.",
     NULL},
    {"run", PB_SECTION_OPTIONS, pb_run_opts, SPEC(run), 0,
     "How long each point is measured and repeated, the simulated step, corrupt samples.",
     NULL},
    {"sweep", PB_SECTION_SWEEP, NULL, 0, 0,
     "Settings to try: every combination of the axes' values is a point (also '-a').",
     "'SECTION.KEY: [V1, V2, ...]' for any key -s can set (pipeline.STAGE.KEY too); "
     "'zip: [[AXIS, AXIS]]' moves axes together; 'exclude: [{AXIS: VALUE, ...}]' leaves "
     "points out"},
    {"gpu", PB_SECTION_VALUE, gpu_opts, SPEC(gpu), 0,
     "What a GPU pipeline does on a machine without a CUDA device.", NULL},
    {"profile", PB_SECTION_OPTIONS, pb_profile_opts, SPEC(profile), 0,
     "How much is measured (profile.level) and how the GPU side is (profile.gpu).", NULL},
    {"analysis", PB_SECTION_OPTIONS, pb_analysis_opts, SPEC(analysis), 0,
     "The verdict's thresholds: input-bound bands, ties, the utilization target, the knee.",
     NULL},
};
const size_t pb_section_count = PB_ARRAY_LEN(pb_sections);

const struct pb_section *pb_section_find(const char *name)
{
    for (size_t i = 0; i < pb_section_count; i++)
        if (strcmp(pb_sections[i].name, name) == 0)
            return &pb_sections[i];
    return NULL;
}

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

int pb_config_sweep_axis(struct pb_spec *spec, const char *assignment, char *msg, size_t msglen)
{
    if (!spec->sweep && !(spec->sweep = calloc(1, sizeof(*spec->sweep)))) {
        snprintf(msg, msglen, "out of memory");
        return PB_ERR_NOMEM;
    }
    int rc = pb_sweep_set_axis(spec->sweep, assignment, msg, msglen);
    return rc == PB_OK ? pb_sweep_resolve(spec->sweep, spec, msg, msglen) : rc;
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
    if (!section || (value && rest) || section->kind == PB_SECTION_SWEEP) {
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
    if (rc != PB_OK)
        return rc;
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
    char why[PB_MSG_MAX];
    int rc = apply_override(spec, assignment, why, sizeof why);
    if (rc != PB_OK)
        snprintf(msg, msglen, "-s %s: %s", assignment, why);
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
    return PB_OK;
}

int pb_config_validate(const struct pb_spec *spec, char *msg, size_t msglen)
{
    if (spec->dataset.path[0] == '\0')
        return key_error(spec, KEYS("dataset"), msg, msglen,
                         "dataset.path is required (a directory or a glob)");
    if (spec->stage_count == 0)
        return key_error(spec, KEYS("pipeline"), msg, msglen,
                         "pipeline must list at least one stage");
    int rc = check_stage_order(spec, msg, msglen);
    if (rc == PB_OK)
        rc = check_bounds(spec, msg, msglen);
    if (rc == PB_OK)
        rc = check_sample_counts(spec, msg, msglen);
    if (rc == PB_OK)
        rc = check_tar_format(spec, msg, msglen);
    return rc;
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
