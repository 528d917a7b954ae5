/* pbench compare BASE.yaml NEW.yaml: two configs measured in one session,
 * their rounds interleaved (A B B A A B ...), so whatever the machine does
 * meanwhile (a neighbour's job, thermal drift, the page cache) falls on
 * both alike. The session (bench/session/session.c) runs the two configs' points
 * as one list; the result holds both, each point tagged with the axis
 * "compare": "base" or "new", and the result's "interleaved" object names
 * the two configs and holds their comparison. This module builds that
 * object and splits such a result back into two ordinary results, which
 * pb_compare_configs compares as two result files would be. */
#ifndef PB_INTERLEAVE_H
#define PB_INTERLEAVE_H

#include <jansson.h>
#include <stddef.h>

#include "bench/analyze/compare.h"
#include "bench/result/result.h"

/* The axis that tags a point with its config. */
#define PB_INTERLEAVE_AXIS "compare"

/* {"order": "ABBA", "base": {"config_path", "config"}, "new": {...}}; the
 * configs are copied. The new side also holds "set": its --set-new
 * overrides (new_sets[0..new_set_count)), when there are any. NULL when
 * out of memory. */
json_t *pb_interleaved_new(const char *base_path, const json_t *base_config,
                           const char *new_path, const json_t *new_config,
                           const char *const *new_sets, int new_set_count);

/* The name a side of an interleaved result goes by (role "base" or
 * "new"): its config path, with the new side's --set-new overrides after
 * it ("configs/image.yaml with loader.workers=4"), so that one config
 * compared with itself reads as two. Writes into buf (fallback, "base" or
 * "new", when the object names no path) and returns buf. */
const char *pb_interleaved_label(const json_t *interleaved, const char *role, char *buf,
                                 size_t size);

/* Splits a result holding both configs into two standalone results
 * (release both with pb_result_free whatever the return): each keeps its
 * own points, without the "compare" axis, and its own config and path.
 * PB_OK, or PB_ERR with msg when r holds no interleaved comparison. */
int pb_interleaved_split(const struct pb_result *r, struct pb_result *base,
                         struct pb_result *next, char *msg, size_t msglen);

/* Splits r and compares its two halves (pb_compare_configs). PB_OK, or
 * PB_ERR with msg; release out with pb_comparison_free on PB_OK. */
int pb_interleaved_compare(const struct pb_result *r, double threshold_pct,
                           struct pb_comparison *out, char *msg, size_t msglen);

/* Whether path names a config rather than a result: it ends in .yaml or
 * .yml. */
bool pb_is_config_path(const char *path);

#endif
