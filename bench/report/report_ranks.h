/* The multi-rank and placement blocks of a point's report (bench/sys/mpi.h,
 * loader.affinity): a table of ranks with the slowest one and the
 * imbalance, and each worker's CPU set. They read the point's pass-through
 * JSON (ranks, multi_rank, affinity), so a result file read back renders
 * the same. Nothing is printed for a point without them. */
#ifndef PB_REPORT_RANKS_H
#define PB_REPORT_RANKS_H

#include <stdbool.h>
#include <stdio.h>

#include "bench/result/result.h"

/* Prints the blocks point has, as text or GitHub markdown. */
void pb_report_ranks(FILE *out, bool markdown, const struct pb_point_result *point);

#endif
