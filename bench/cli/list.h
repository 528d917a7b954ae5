/* `pbench list`: what a config can say, rendered from the section table
 * (bench/config/config.h) and the stage and decoder registries, so the listing
 * cannot drift from what the loader accepts. */
#ifndef PB_LIST_H
#define PB_LIST_H

#include <stddef.h>
#include <stdio.h>

/* Writes the listing to out. filter NULL lists everything: the config
 * sections with their keys, every stage and every decoder. Otherwise it
 * names what to show: a section ("loader", "dataset.generate"), a stage
 * ("resize", or "pipeline.resize"; a decoder stage lists the decoders
 * too), a decoder ("jpeg"), or one key of any of them ("loader.workers",
 * "resize.size", "jpeg.scale"). Returns PB_OK, or PB_ERR_CONFIG when
 * nothing has that name, with "nothing is called 'x'; did you mean 'y'?
 * ..." in msg. */
int pb_list_print(FILE *out, const char *filter, char *msg, size_t msglen);

#endif
