/* The straggler of a wrapped job's ranks (docs/wrap.md, "Ranks"): from the
 * rank rows the relay writes (points[].engine.jobs[].rank_rows), the rank
 * whose loader holds the others back and why, or that the loader is too
 * slow on every rank. In a synchronous job the fast ranks wait for the
 * slow one inside their step (the all-reduce): a rank whose step is long
 * while its stall is short, beside a rank whose stall is long, is waiting
 * for that rank. The rank rows' table, the verdict and the try lines read
 * it here, so that they say the same. */
#ifndef PB_ANALYZE_STRAGGLER_H
#define PB_ANALYZE_STRAGGLER_H

#include <stdbool.h>

#include <jansson.h>

#include "bench/result/result.h"

enum pb_straggler_kind {
    PB_STRAGGLER_NONE = 0,  /* fewer than 2 ranks, or no rank waits on its loader */
    PB_STRAGGLER_ONE,       /* one rank's loader holds the job back               */
    PB_STRAGGLER_EVERYWHERE /* every rank waits; the slowest changes              */
};

struct pb_straggler {
    int kind;              /* enum pb_straggler_kind                         */
    long long rank;        /* the slow rank (its loop waits the most)        */
    long long fast_rank;   /* the rank that waits least, the one compared    */
    char name[96];         /* "rank 1" or "rank 1 on HOST"                    */
    double stall_pct, others_stall_pct; /* its stall, the others' highest   */
    bool others_wait;      /* the others' step is longer: a synchronous job  */
    double step_ratio;     /* the fast rank's step per batch over its        */
    int windows, slowest_windows; /* windows measured; the ones it was slowest in */
    char sentence[1000];   /* what the table's straggler row says            */
};

/* The straggler of rank_rows (NULL or fewer than 2: kind NONE) into *out. */
void pb_straggler_of(const json_t *rank_rows, struct pb_straggler *out);

/* A wrapped point's rank rows: its engine's last job's, or NULL. */
const json_t *pb_point_rank_rows(const struct pb_point_result *p);

/* The straggler of point p's rank rows. */
void pb_point_straggler(const struct pb_point_result *p, struct pb_straggler *out);

#endif
