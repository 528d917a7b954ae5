/* The typed run specification and the YAML config loader.
 *
 * A config file has the sections name, dataset, pipeline, loader and run
 * (see configs/ and README.md). Each section's keys are declared once in an
 * option table (bench/opt.h) exposed below, so `pbench list`, `-s`
 * overrides and the result file all see the same names. */
#ifndef PB_CONFIG_H
#define PB_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "bench/opt.h"
#include "bench/pb.h"
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

struct pb_profile_spec {
    int gpu; /* enum pb_profile_gpu: CUDA events always; cupti adds a trace */
};

struct pb_spec {
    char name[128];
    int gpu;                             /* enum pb_gpu_policy            */
    struct pb_profile_spec profile;
    char source[PB_PATH_MAX];            /* the config file's path        */
    struct pb_dataset_spec dataset;
    struct pb_stage_spec stages[PB_MAX_STAGES];
    int stage_count;
    struct pb_loader_spec loader;
    struct pb_run_spec run;
};

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
 * failure returns PB_ERR_CONFIG (or PB_ERR if the file cannot be read) and
 * writes "FILE:LINE:COL: sentence" to msg. spec must be released with
 * pb_spec_free() whatever the result. Keys, types and ranges are checked
 * here; cross-field rules (a dataset.path, read before decode, ...) are
 * left to pb_config_validate(), run after the `-s` overrides. */
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

void pb_spec_free(struct pb_spec *spec);

#endif
