/* The engines' rows moved to bench/base/engine_row.h (below the result's
 * readers, which look an engine up by the name a result holds); this name
 * is kept for the files that include the rows by it. */
#ifndef PB_CONFIG_ENGINE_ROW_H
#define PB_CONFIG_ENGINE_ROW_H

#include "bench/base/engine_row.h"

#endif
