/* The typed run specification and the YAML config loader.
 *
 * A config file has the sections name, gpu, profile, dataset (with
 * dataset.generate), pipeline, loader, run and sweep (see configs/ and
 * README.md). They are listed once, in pb_sections[], and each section's
 * keys once, in an option table (bench/base/opt.h), so the YAML loader, `-s`
 * overrides, the result file's JSON and `pbench list` all see the same
 * names. The spec's types and those tables are bench/config/spec.h; this
 * header is what is done with a spec.
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

#include "bench/base/opt.h"
#include "bench/base/pb.h"
#include "bench/config/spec.h"
#include "decoders/decoder.h"
#include "pipelines/dataset.h"
#include "pipelines/stage.h"

/* Records that the file set path at line:column (config_yaml.c). */
void pb_spec_note_position(struct pb_spec *spec, const char *path, int line, int column);

/* Whether the pipeline has a to_device or GPU stage, or a decoder told to
 * decode on the GPU (`hwaccel: cuda`). */
bool pb_spec_uses_gpu(const struct pb_spec *spec);

/* Drops to_device and the GPU stages (gpu: optional on a machine without
 * a device) and turns a GPU decode into a CPU one (`hwaccel: cuda` to
 * none), writing what it dropped, comma separated, into dropped. */
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

/* pb_config_override under the name of the option that gave it, for its
 * errors: "--set-new loader.workers=abc: loader.workers must be ...". */
int pb_config_override_as(struct pb_spec *spec, const char *option, const char *assignment,
                          char *msg, size_t msglen);

/* Checks cross-field rules after overrides (e.g. a decode stage needs a
 * read stage before it). Same message conventions. */
int pb_config_validate(const struct pb_spec *spec, char *msg, size_t msglen);

struct pb_engine_row; /* bench/base/engine_row.h */

/* What spec asks of the engine of row (NULL: pbench's own) that it cannot
 * run: a stage, a decoder, an option's value or a loader setting. PB_OK, or
 * PB_ERR_CONFIG with "FILE:LINE:COLUMN: loader.engine NAME cannot run ..."
 * in msg, the setting to use instead named. pb_config_validate calls it with
 * loader.engine's row. */
int pb_config_check_engine(const struct pb_engine_row *row, const struct pb_spec *spec, char *msg,
                           size_t msglen);

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
