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
 * overrides, so every option that `-s` can set can be swept. */
#ifndef PB_SWEEP_H
#define PB_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

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

/* Reads the `sweep:` section of the YAML file at path (none: axis_count 0).
 * Errors read "FILE:LINE:COL: sentence"; returns PB_OK or PB_ERR_CONFIG. */
int pb_sweep_load(const char *path, struct pb_sweep *sweep, char *msg, size_t msglen);
int pb_sweep_load_string(const char *yaml, const char *name, struct pb_sweep *sweep, char *msg,
                         size_t msglen);

/* Applies `-a path=v1,v2,...`: replaces that axis's values, or adds the
 * axis. An axis in a zip group must keep its group's value count. */
int pb_sweep_set_axis(struct pb_sweep *sweep, const char *assignment, char *msg, size_t msglen);

/* Removes an axis (e.g. loader.pin_memory without a GPU). */
void pb_sweep_drop_axis(struct pb_sweep *sweep, const char *path);

/* Lists the points into points[0..max), returning how many there are (which
 * may exceed max; only max are written). Fails with -1 and a message when
 * a zip group's axes have different value counts. */
long pb_sweep_points(const struct pb_sweep *sweep, struct pb_sweep_point *points, size_t max,
                     char *msg, size_t msglen);

/* "path=value" for axis a of point p, for pb_config_override. */
void pb_sweep_assignment(const struct pb_sweep *sweep, const struct pb_sweep_point *point, int axis,
                         char *buf, size_t buflen);

/* The point's axes as a JSON object, values typed (numbers, booleans,
 * strings) as a reader of the result would want them. New reference. */
json_t *pb_sweep_axes_json(const struct pb_sweep *sweep, const struct pb_sweep_point *point);

#endif
