/* Worker placement (loader.affinity): where the training loop and each
 * loader worker run, with hwloc.
 *
 * A plan is made once per point: the node's cores (split between the
 * ranks of a multi-rank run on the node, by local rank, so ranks never
 * overlap when there are cores enough), ordered by the policy, one CPU set
 * per thread: thread 0 is the training loop (consumer), thread 1 + w is
 * worker w. Each thread binds itself once, when it starts, and records
 * what the OS reports back (the binding read back and the CPU it was on
 * at bind time and when it ended), so a result shows where every thread
 * ran, not only where it was asked to. Nothing here runs on the hot path. */
#ifndef PB_AFFINITY_H
#define PB_AFFINITY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

enum pb_affinity_policy {
    PB_AFFINITY_NONE = 0,
    PB_AFFINITY_COMPACT,
    PB_AFFINITY_SPREAD,
    PB_AFFINITY_NUMA,
};

/* "none", "compact", "spread", "numa", NULL: the config's allowed values. */
extern const char *const pb_affinity_policy_names[];

struct pb_affinity;

/* Plans the placement of workers + 1 threads under policy. *out is NULL
 * for PB_AFFINITY_NONE (and every call below accepts NULL and does
 * nothing). Returns PB_OK, or PB_ERR with msg when hwloc cannot read the
 * topology. */
int pb_affinity_open(struct pb_affinity **out, int policy, int workers, char *msg, size_t msglen);

/* Binds the calling thread as thread number thread (0: the training loop,
 * keeping its previous binding to restore; 1 + w: worker w) and records
 * the binding read back and the CPU it is on. */
void pb_affinity_bind(struct pb_affinity *a, int thread);

/* Records the CPU the calling thread (number thread) is on as it ends. */
void pb_affinity_thread_end(struct pb_affinity *a, int thread);

/* {policy, topology, note, local_rank, local_size, threads: [{thread,
 * cpuset, bound, cpus, within}]}: a new reference (docs/results.md). */
json_t *pb_affinity_to_json(const struct pb_affinity *a);

/* Restores the training loop's previous binding and frees the plan. */
void pb_affinity_close(struct pb_affinity *a);

#endif
