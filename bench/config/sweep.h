/* Sweeps: a config's `sweep:` section names option paths and the values
 * to try, e.g.
 *
 *   sweep:
 *     loader.workers: [1, 2, 4]
 *     loader.batch_size: [32, 64]
 *     pipeline.decode.scale: [1, auto]
 *     zip:                      # axes that vary together, value by value
 *       - [loader.batch_size, run.step_ms]
 *     exclude:                  # points to leave out: all pairs must match
 *       - {loader.workers: 1, loader.batch_size: 64}
 *
 * The points are the Cartesian product of the axes (a zip group counts as
 * one axis), the first axis varying slowest, less the excluded ones. Each
 * point is the base config with its values applied as `-s path=value`
 * would apply them, so every option that `-s` can set can be swept.
 *
 * The config loader reads the section once (pb_sweep_parse) and types it
 * against the spec (pb_sweep_resolve): each axis is looked up in the
 * option tables and its values parsed with that option's descriptor, so a
 * bad value is reported at its FILE:LINE:COL before anything runs. A point
 * is then a copy of the base spec with the typed values written in
 * (pb_sweep_apply); see bench/config/config.h for the whole sequence. */
#ifndef PB_SWEEP_H
#define PB_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <yaml.h>

#include "bench/base/opt.h"

struct pb_spec; /* bench/config/spec.h */

#define PB_SWEEP_MAX_AXES 12
#define PB_SWEEP_MAX_VALUES 32
#define PB_SWEEP_MAX_RULES 32
#define PB_SWEEP_MAX_POINTS 4096

struct pb_sweep_axis {
    char path[128];
    int value_count;
    char values[PB_SWEEP_MAX_VALUES][64];
    int zip_group;              /* -1 when the axis varies on its own      */
    int line, column;           /* where it was declared, 0 for -a         */
    int value_line[PB_SWEEP_MAX_VALUES], value_column[PB_SWEEP_MAX_VALUES];
    /* Set by pb_sweep_resolve: the option the values are for, and each
     * value parsed with it. opt stays NULL for a decoder stage's `decoder`
     * (and for a decoder's option while that decoder is swept too): those
     * values are applied as `-s` text, after the decoder is chosen. */
    bool resolved;
    const struct pb_opt *opt;
    union pb_opt_value typed[PB_SWEEP_MAX_VALUES];
};

struct pb_sweep_rule {
    int count;
    char paths[PB_SWEEP_MAX_AXES][128];
    char values[PB_SWEEP_MAX_AXES][64];
};

struct pb_sweep {
    int axis_count;
    struct pb_sweep_axis axes[PB_SWEEP_MAX_AXES];
    int zip_count;
    int rule_count;
    struct pb_sweep_rule rules[PB_SWEEP_MAX_RULES];
};

/* One point: the value index chosen on each axis. */
struct pb_sweep_point {
    int value[PB_SWEEP_MAX_AXES];
};

/* Reads a `sweep:` mapping node of doc into sweep (reset first), untyped.
 * file names the document in messages: "FILE:LINE:COL: sentence". Returns
 * PB_OK or PB_ERR_CONFIG. pb_config_load calls it for the config's
 * section; the spec then owns the sweep (spec->sweep). */
int pb_sweep_parse(struct pb_sweep *sweep, yaml_document_t *doc, const yaml_node_t *node,
                   const char *file, char *msg, size_t msglen);

/* Types every axis not typed yet against spec's option tables (the config
 * loader does this for the file's axes; call it again after -a). An axis
 * that names no option, or a value its option rejects, fails with
 * PB_ERR_CONFIG and "FILE:LINE:COL: sweep value PATH=VALUE: sentence" at
 * the value (-a axes: "-a PATH=VALUE: sentence"). */
int pb_sweep_resolve(struct pb_sweep *sweep, const struct pb_spec *spec, char *msg,
                     size_t msglen);

/* Writes the point's values into spec, normally a pb_spec_copy of the base:
 * typed values straight into their option's slot; decoder switches (and
 * axes not resolved yet) through the `-s` path, decoders first. Errors read
 * as pb_sweep_resolve's; PB_OK or PB_ERR_CONFIG. Run pb_config_validate on
 * the result. A NULL sweep applies nothing. */
int pb_sweep_apply(struct pb_spec *spec, const struct pb_sweep *sweep,
                   const struct pb_sweep_point *point, char *msg, size_t msglen);

/* Reads the `sweep:` section of the YAML file at path (none: axis_count 0),
 * untyped: for tools that need the axes without a spec. Errors read
 * "FILE:LINE:COL: sentence"; returns PB_OK or PB_ERR_CONFIG. */
int pb_sweep_load(const char *path, struct pb_sweep *sweep, char *msg, size_t msglen);
int pb_sweep_load_string(const char *yaml, const char *name, struct pb_sweep *sweep, char *msg,
                         size_t msglen);

/* Applies `-a path=v1,v2,...`: replaces that axis's values, or adds the
 * axis. An axis in a zip group must keep its group's value count. A
 * replaced axis that was typed is typed again at once with its option
 * ("-a path=v1,v2: sentence" for a bad value); a new axis is typed by the
 * next pb_sweep_resolve. */
int pb_sweep_set_axis(struct pb_sweep *sweep, const char *assignment, char *msg, size_t msglen);

/* Removes an axis (e.g. loader.pin_memory without a GPU). */
void pb_sweep_drop_axis(struct pb_sweep *sweep, const char *path);

/* Lists the points into points[0..max), returning how many there are. The
 * count is first computed as the product of the axes' value counts: when
 * that exceeds max it is returned at once (exclusions not subtracted,
 * nothing written), so a huge sweep is refused without enumerating it.
 * Fails with -1 and a message when a zip group's axes have different value
 * counts. A NULL sweep (a config without one) is one point. */
long pb_sweep_points(const struct pb_sweep *sweep, struct pb_sweep_point *points, size_t max,
                     char *msg, size_t msglen);

/* "path=value" for axis a of point p, for pb_config_override. */
void pb_sweep_assignment(const struct pb_sweep *sweep, const struct pb_sweep_point *point, int axis,
                         char *buf, size_t buflen);

/* The point's axes as a JSON object, values typed (numbers, booleans,
 * strings) as a reader of the result would want them (a NULL sweep: {}).
 * New reference. */
json_t *pb_sweep_axes_json(const struct pb_sweep *sweep, const struct pb_sweep_point *point);

/* Applies `-a path=v1,v2,...` to the spec's sweep (made when the config
 * has none) and types the axis against spec at once. Errors read
 * "-a path=v1,v2: sentence"; PB_OK, PB_ERR_CONFIG or PB_ERR_NOMEM. */
int pb_config_sweep_axis(struct pb_spec *spec, const char *assignment, char *msg, size_t msglen);

#endif
