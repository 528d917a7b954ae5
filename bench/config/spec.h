/* The config's shape: the typed run specification (struct pb_spec), the
 * table of its sections (pb_sections[]) and each section's option table.
 * Plain data, defined in spec.c; the loaders (config_yaml.c,
 * config_json.c), `-s` overrides and validation (config.c), the key
 * lookups and messages (config_scope.c) and `pbench list` all read it. */
#ifndef PB_SPEC_H
#define PB_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/analyze/analysis.h"
#include "bench/base/engine_row.h"
#include "bench/base/opt.h"
#include "bench/base/pb.h"
#include "decoders/decoder.h"
#include "pipelines/dataset.h"
#include "pipelines/stage.h"

#define PB_MAX_STAGES 16

enum pb_on_error { PB_ON_ERROR_SKIP = 0, PB_ON_ERROR_FAIL = 1 };

/* loader.engine: what runs dataset, pipeline and loader (docs/engines.md);
 * each value's row is bench/base/engine_rows.c's, by this order. */
enum pb_engine {
    PB_ENGINE_PBENCH = 0,
    PB_ENGINE_TORCH = 1,
    PB_ENGINE_WRAP = 2,
    PB_ENGINE_COUNT /* not an engine: how many there are */
};
extern const char *const pb_engine_names[];
enum pb_torch_decode { PB_TORCH_DECODE_PIL = 0, PB_TORCH_DECODE_TORCHVISION = 1 };
extern const char *const pb_torch_decode_names[];

struct pb_loader_spec {
    int64_t workers;         /* 0: load in the consumer thread           */
    int64_t batch_size;
    int64_t prefetch_factor; /* batches in flight per worker             */
    bool pin_memory;
    bool drop_last;
    bool in_order;
    int64_t device_prefetch; /* batches in flight on the device (to_device) */
    int affinity;            /* enum pb_affinity_policy (bench/sys/affinity.h) */
    int engine;              /* enum pb_engine                           */
    bool persistent_workers; /* torch: keep worker processes between epochs */
    int torch_decode;        /* enum pb_torch_decode                     */
    char python[PB_PATH_MAX];      /* torch: the interpreter; "": default */
    char python_path[PB_PATH_MAX]; /* torch: ':'-separated sys.path folders */
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
    double stage_timeout_s;  /* a stage call longer than this is stuck: the run ends;
                              * 0: pb_stage_timeout_s's default */
};

/* What run.stage_timeout_s 0 (its default) adds to run.max_time_s. */
#define PB_STAGE_TIMEOUT_GRACE_S 10.0

/* The stage timeout a run applies: run.stage_timeout_s, or where that is 0,
 * run.max_time_s plus PB_STAGE_TIMEOUT_GRACE_S (a stuck stage ends the run
 * near its own end; a stage call of a few seconds is still allowed). */
static inline double pb_stage_timeout_s(const struct pb_run_spec *run)
{
    return run->stage_timeout_s > 0 ? run->stage_timeout_s
                                    : run->max_time_s + PB_STAGE_TIMEOUT_GRACE_S;
}

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

/* loader.engine: wrap (docs/wrap.md): the user's own training job, run
 * with pbench's hook in every Python process it starts. */
#define PB_WRAP_COMMAND_MAX 4096
struct pb_wrap_spec {
    char command[PB_WRAP_COMMAND_MAX]; /* the job's command line, shell-quoted */
    char loader[PB_PATH_MAX];  /* FILE:LINE of the DataLoader measured; "": the first */
    char set[256];             /* loader keys that override the job's own (",") */
    int64_t batches;           /* measured batches, then the job is ended; 0: the rule's */
    bool until_exit;           /* measure until the job ends by itself */
    double grace_s;            /* SIGINT, then SIGTERM after this many seconds */
    int64_t ideal;             /* batches kept after the warm-up and handed out again; 0: off */
    char listen[256];          /* ADDR[:PORT] the ranks on other machines send to; "": auto */
};

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
    struct pb_wrap_spec wrap;
    bool has_wrap; /* the config has a wrap: section */
    /* The config's `sweep:` section, typed against this spec; owned, NULL
     * when the config has none. Not part of pb_spec_to_json (a result
     * records each point's axes instead). */
    struct pb_sweep *sweep;
    /* The options the file set, in file order (the first
     * PB_SPEC_POSITIONS); a -s override forgets its key's. */
    struct pb_key_position positions[PB_SPEC_POSITIONS];
    int position_count;
};

/* The engine makes the samples itself, so no dataset.path or pipeline is
 * needed: your own Dataset (dataset.python) or a wrapped job (an engine
 * whose row takes the batches' sizes from the job). */
static inline bool pb_spec_own_samples(const struct pb_spec *spec)
{
    const struct pb_engine_row *row = pb_engine_row(spec->loader.engine);
    return spec->dataset.python[0] != '\0' || (row && row->job_sizes);
}

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
extern const struct pb_opt pb_wrap_opts[];

/* What pbench wrap can give a wrapped job, by key ("wrap.*": the whole
 * section): the DataLoader arguments it replaces where the job builds
 * its loaders (the "loader." entries, first), the wrap section, the run's
 * window and repeat options, the verdict's thresholds and the name. A key
 * outside it (run.step_ms: the job's step is its own; dataset.*: the job
 * reads its own data) would be accepted and change nothing. NULL-ended. */
extern const char *const pb_wrap_settable[];

/* Whether assignment ("KEY=VALUE", or a bare KEY) names a key of
 * pb_wrap_settable. */
bool pb_wrap_settable_key(const char *assignment);

/* pb_wrap_settable in words, for the message that refuses another key:
 * its loader keys (loader true: "loader.workers, batch_size, ... and
 * drop_last") or the others ("wrap.*; run.warmup_batches, ...; name"). */
void pb_wrap_settable_text(char *buf, size_t buflen, bool loader);

#endif
