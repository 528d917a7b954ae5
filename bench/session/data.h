/* The dataset a session measures (bench/session/data.c): generated on
 * first use where the config says how (under mpirun, once per node that
 * lacks it), checked against the spec it was generated from, then
 * indexed. */
#ifndef PB_SESSION_DATA_H
#define PB_SESSION_DATA_H

#include <stddef.h>

#include "bench/config/config.h"
#include "bench/session/hooks.h"
#include "pipelines/dataset.h"

/* Opens the dataset spec names into ds (release with pb_dataset_close),
 * generating it first when its folder is missing or empty, saying so
 * through hooks; hooks->stop stops the generation. A dataset.python run
 * without dataset.path opens nothing. Returns PB_OK, or an error with
 * msg naming the config (or the data cache folder, where that is what
 * failed). */
int pb_session_open_dataset(const struct pb_session_opts *opts,
                            const struct pb_session_hooks *hooks, const struct pb_spec *spec,
                            struct pb_dataset *ds, char *msg, size_t msglen);

#endif
