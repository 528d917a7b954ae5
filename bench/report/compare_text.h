/* A comparison of two results in words (the statistics are
 * bench/analyze/compare.h): the terminal table, GitHub markdown for a pull
 * request comment, and JSON. Table and markdown print names without
 * control characters; JSON keeps them exact. base_name and next_name name
 * the two sides (file names, or "base" and "new"). */
#ifndef PB_COMPARE_TEXT_H
#define PB_COMPARE_TEXT_H

#include <stdio.h>

#include "bench/analyze/compare.h"

void pb_comparison_table(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                         const char *next_name);
void pb_comparison_markdown(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                            const char *next_name);
void pb_comparison_json(FILE *out, const struct pb_comparison *cmp, const char *base_name,
                        const char *next_name);

/* Why a point's verdicts were withheld, in one sentence with its figures
 * (other processes, the machine's reference speed, a CPU quota); ""
 * when they were not. */
void pb_interference_text(const struct pb_point_cmp *pc, char *buf, size_t buflen);

#endif
