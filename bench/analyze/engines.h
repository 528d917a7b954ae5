/* Two engines side by side (docs/engines.md): where a result holds the
 * same pipeline on pbench's engine and on another (a sweep over
 * loader.engine), the sentence that says where the other loses, stage by
 * stage in CPU per sample, and what each needs to keep the training step
 * fed. Plain functions of a result. */
#ifndef PB_ENGINES_H
#define PB_ENGINES_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/result/result.h"

/* The engine point i ran on: its axis loader.engine, else the config's,
 * else "pbench" (results from before engines). */
const char *pb_point_engine(const struct pb_result *result, size_t i);

/* The comparison sentence into out, for the first pair of usable points
 * that differ in loader.engine alone; false (out "") when the result has
 * no such pair. */
bool pb_engine_comparison(const struct pb_result *result, char *out, size_t outlen);

#endif
