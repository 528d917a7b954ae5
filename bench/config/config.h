/* The typed run specification and the YAML config loader.
 *
 * A config file has the sections name, gpu, profile, dataset (with
 * dataset.generate), pipeline, loader, run and sweep (see configs/ and
 * README.md). They are listed once, in pb_sections[], and each section's
 * keys once, in an option table (bench/base/opt.h), so the YAML loader, `-s`
 * overrides, the result file's JSON and `pbench list` all see the same
 * names.
 *
 * A run or sweep reads its config once:
 *
 *   pb_config_load(path, &base, ...);              // sweep: too, typed
 *   for each -s:  pb_config_override(&base, "loader.workers=4", ...);
 *   for each -a:  pb_config_sweep_axis(&base, "loader.workers=1,2,4", ...);
 *   for each point of pb_sweep_points(base.sweep, ...) (one point, all
 *   defaults, when base.sweep is NULL):
 *       pb_spec_copy(&point, &base, ...);
 *       pb_sweep_apply(&point, base.sweep, &points[i], ...);
 *       pb_config_validate(&point, ...);
 */
#ifndef PB_CONFIG_H
#define PB_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "bench/analyze/analysis.h"
#include "bench/base/opt.h"
#include "bench/base/pb.h"
#include "decoders/decoder.h"
#include "pipelines/dataset.h"
#include "pipelines/stage.h"

#define PB_MAX_STAGES 16

enum pb_on_error { PB_ON_ERROR_SKIP = 0, PB_ON_ERROR_FAIL = 1 };

struct pb_loader_spec {
    int64_t workers;         /* 0: load in the consumer thread           */
    int64_t batch_size;
    int64_t prefetch_factor; /* batches in flight per worker             */
    bool pin_memory;
    bool drop_last;
    bool in_order;
    int64_t device_prefetch; /* batches in flight on the device (to_device) */
    int affinity;            /* enum pb_affinity_policy (bench/sys/affinity.h) */
};

struct pb_run_spec {
    int64_t warmup_batches;
    double min_time_s;
    double max_time_s;
    int64_t min_samples;
    double target_noise;     /* relative noise of windowed throughput    */
    double window_s;         /* throughput window for the noise rule     */
    int64_t repeats;
    double step_ms;          /* simulated training step                  */
    int on_error;            /* enum pb_on_error                         */
    bool stage_timing;       /* per-stage histograms and CPU time        */
    double max_error_pct;    /* a repeat with more bad samples fails     */
    int64_t max_memory_mib;  /* the batch pool's limit; 0: available memory */
    bool trace;              /* a CPU timeline beside the result (bench/run/trace.h) */
};

struct pb_stage_spec {
    const struct pb_stage_ops *ops;
    void *opts;                          /* ops->opts_size bytes, owned   */
    const struct pb_decoder_ops *decoder; /* PB_STAGE_DECODER stages only */
    void *decoder_opts;                  /* owned                         */
    int line, column;                    /* where the stage was declared */
};

enum pb_gpu_policy { PB_GPU_REQUIRED = 0, PB_GPU_OPTIONAL = 1 };
enum pb_profile_gpu { PB_PROFILE_GPU_EVENTS = 0, PB_PROFILE_GPU_CUPTI = 1 };
/* How much a run measures (docs/profiling.md): basic leaves out per-stage
 * timing; detailed is per-stage timing (the default); comprehensive adds
 * the CPU trace, per-stage perf counters and CUPTI on a GPU. */
enum pb_profile_level { PB_PROFILE_BASIC = 0, PB_PROFILE_DETAILED, PB_PROFILE_COMPREHENSIVE };

struct pb_profile_spec {
    int gpu; /* enum pb_profile_gpu: CUDA events always; cupti adds a trace */
    int level; /* enum pb_profile_level */
};


struct pb_sweep; /* bench/config/sweep.h */

/* Where the config file set an option, by its dotted path
 * ("dataset.generate.shards"), so a rule that spans options can name the
 * line and column. */
#define PB_SPEC_POSITIONS 128
struct pb_key_position {
    char path[80];
    int line, column;
};

struct pb_spec {
    char name[128];
    int gpu;                             /* enum pb_gpu_policy            */
    struct pb_profile_spec profile;
    struct pb_analysis_spec analysis;    /* the verdict's thresholds      */
    char source[PB_PATH_MAX];            /* the config file's path        */
    struct pb_dataset_spec dataset;
    struct pb_stage_spec stages[PB_MAX_STAGES];
    int stage_count;
    struct pb_loader_spec loader;
    struct pb_run_spec run;
    /* The config's `sweep:` section, typed against this spec; owned, NULL
     * when the config has none. Not part of pb_spec_to_json (a result
     * records each point's axes instead). */
    struct pb_sweep *sweep;
    /* The options the file set, in file order (the first
     * PB_SPEC_POSITIONS); a -s override forgets its key's. */
    struct pb_key_position positions[PB_SPEC_POSITIONS];
    int position_count;
};

/* Records that the file set path at line:column (config_yaml.c). */
void pb_spec_note_position(struct pb_spec *spec, const char *path, int line, int column);

/* What spec's profile level and run options ask for: per-stage timing
 * (run.stage_timing, off at level basic), the CPU trace (run.trace, or
 * level comprehensive) and per-stage perf counters (comprehensive). */
static inline bool pb_spec_stage_timing(const struct pb_spec *spec)
{
    return spec->run.stage_timing && spec->profile.level != PB_PROFILE_BASIC;
}
static inline bool pb_spec_traced(const struct pb_spec *spec)
{
    return spec->run.trace || spec->profile.level == PB_PROFILE_COMPREHENSIVE;
}

/* How a section's value is written and read. */
enum pb_section_kind {
    PB_SECTION_VALUE,    /* a top-level scalar; opts is its one-entry table */
    PB_SECTION_OPTIONS,  /* a mapping of the keys in opts                    */
    PB_SECTION_PIPELINE, /* the list of stages, parsed by the stage registry */
    PB_SECTION_SWEEP,    /* sweep axes, parsed by bench/config/sweep.c              */
};

/* One entry of the config's shape. A section named "a.b" sits inside the
 * section "a" (dataset.generate is the key `generate` of dataset). */
struct pb_section {
    const char *name;          /* dotted path, e.g. "loader", "dataset.generate" */
    enum pb_section_kind kind;
    const struct pb_opt *opts; /* VALUE and OPTIONS; NULL otherwise            */
    size_t offset;             /* of the section's struct (or value) in struct pb_spec */
    size_t present_offset;     /* a bool in struct pb_spec set once the section is
                                  given, or 0 when it is always present        */
    const char *help;          /* one sentence for `pbench list`               */
    const char *keys;          /* PIPELINE and SWEEP: what goes inside, for `pbench list` */
};

/* Every section, in the order messages list them. */
extern const struct pb_section pb_sections[];
extern const size_t pb_section_count;

/* The section with this dotted name, or NULL. */
const struct pb_section *pb_section_find(const char *name);

/* The sections' option tables (pb_generate_opts is dataset.generate). */
extern const struct pb_opt pb_dataset_opts[];
extern const struct pb_opt pb_generate_opts[];
extern const struct pb_opt pb_loader_opts[];
extern const struct pb_opt pb_run_opts[];
extern const struct pb_opt pb_profile_opts[];

/* Whether the pipeline has a to_device or GPU stage. */
bool pb_spec_uses_gpu(const struct pb_spec *spec);

/* Drops to_device and the GPU stages (gpu: optional on a machine without
 * a device), writing their names, comma separated, into dropped. */
void pb_spec_drop_gpu(struct pb_spec *spec, char *dropped, size_t droppedlen);

/* Loads and validates a YAML config into spec (defaults filled in). On
 * failure returns PB_ERR_CONFIG (no file at path included; PB_ERR when the
 * file is there but cannot be read) and
 * writes "FILE:LINE:COL: sentence" to msg. spec must be released with
 * pb_spec_free() whatever the result. Keys, types and ranges are checked
 * here; cross-field rules (a dataset.path, read before decode, ...) are
 * left to pb_config_validate(), run after the `-s` overrides. The `sweep:`
 * section is read too, typed against the spec, into spec->sweep. */
int pb_config_load(const char *path, struct pb_spec *spec, char *msg, size_t msglen);

/* The same, from a string; name is used in messages in place of a path. */
int pb_config_load_string(const char *yaml, const char *name, struct pb_spec *spec,
                          char *msg, size_t msglen);

/* Applies one command-line override "key.path=value", e.g.
 * "loader.workers=4", "run.on_error=fail", "pipeline.decode.cost_us=50"
 * (a stage is named by its name, or by its position: "pipeline.1.x").
 * Errors read "-s loader.workers=abc: loader.workers must be ...". */
int pb_config_override(struct pb_spec *spec, const char *assignment, char *msg, size_t msglen);

/* Checks cross-field rules after overrides (e.g. a decode stage needs a
 * read stage before it). Same message conventions. */
int pb_config_validate(const struct pb_spec *spec, char *msg, size_t msglen);

/* The fully resolved config (every default included) as JSON, and back. */
json_t *pb_spec_to_json(const struct pb_spec *spec);
int pb_spec_from_json(const json_t *obj, struct pb_spec *spec, char *msg, size_t msglen);

/* Resets spec to every section's defaults (no stages, no sweep); source
 * names it in messages and gives the default name (its base name without
 * the extension). Does not free: spec is overwritten. */
int pb_spec_init(struct pb_spec *spec, const char *source, char *msg, size_t msglen);

/* Makes dst a deep copy of src for one run: stage and decoder option
 * blocks are allocations of dst's own, so changing one spec never changes
 * the other. The sweep is not copied (dst->sweep is NULL): a copy is one
 * point, and the sweep stays with the base it was made from. dst is
 * overwritten (not freed first) and must be released with pb_spec_free()
 * whatever the result. Returns PB_OK or PB_ERR_NOMEM. */
int pb_spec_copy(struct pb_spec *dst, const struct pb_spec *src, char *msg, size_t msglen);

/* Applies `-a path=v1,v2,...` to the spec's sweep (made when the config
 * has none) and types the axis against spec at once. Errors read
 * "-a path=v1,v2: sentence"; PB_OK, PB_ERR_CONFIG or PB_ERR_NOMEM. */
int pb_config_sweep_axis(struct pb_spec *spec, const char *assignment, char *msg, size_t msglen);

/* Frees what the spec owns (option blocks, the sweep); safe twice. */
void pb_spec_free(struct pb_spec *spec);

/* Where an option path lives in a spec. */
struct pb_config_target {
    const struct pb_section *section; /* NULL for a pipeline stage           */
    struct pb_stage_spec *stage;      /* pipeline paths                       */
    const struct pb_opt *opt;         /* NULL: a decoder stage's `decoder`   */
    void *base;                       /* the struct opt's offset is within   */
};

/* Finds the option a dotted path ("loader.workers", "gpu",
 * "dataset.generate.count", "pipeline.decode.scale", "pipeline.1.size")
 * names in spec, as `-s` does. On failure returns PB_ERR_CONFIG and writes
 * the sentence `-s` would print after "-s ASSIGNMENT: ". The target
 * points into spec (which is why a const spec gives a writable base: only
 * write through it when spec is yours to change). */
int pb_config_find(const struct pb_spec *spec, const char *path, struct pb_config_target *target,
                   char *why, size_t whylen);

/* Call after writing a value through a target: marks an optional section
 * present and switches a stage to its GPU version (or back) after its
 * `device` changed. A GPU version missing from this build is left to the
 * run's gpu policy to explain (gpu: required fails with the reason,
 * optional drops the stage). */
void pb_config_touched(struct pb_spec *spec, const struct pb_config_target *target);

/* The stage or decoder of that name, or NULL with "unknown stage 'x'; did
 * you mean ...? known stages: ..." (decoders: also "not available in this
 * build: why") in why. */
const struct pb_stage_ops *pb_config_stage(const char *name, char *why, size_t whylen);
const struct pb_decoder_ops *pb_config_decoder(const char *name, char *why, size_t whylen);

/* Adds a stage with its default options (and, for a decoder stage, the
 * decoder's) at the end of the pipeline. PB_ERR_CONFIG when the pipeline
 * is full, PB_ERR_NOMEM. */
int pb_spec_add_stage(struct pb_spec *spec, const struct pb_stage_ops *ops,
                      const struct pb_decoder_ops *decoder, char *msg, size_t msglen);

#endif
