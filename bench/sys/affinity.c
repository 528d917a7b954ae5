/* Worker placement with hwloc (see affinity.h). */
#include "bench/sys/affinity.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "bench/base/pb.h"
#include "bench/sys/mpi.h"

const char *const pb_affinity_policy_names[] = {"none", "compact", "spread", "numa", NULL};

#define CPUS_TEXT 64

/* What one thread was given and where it ran. */
struct placed {
    hwloc_bitmap_t set;
    char bound[CPUS_TEXT]; /* the binding read back                    */
    int cpu_at_bind, cpu_at_end;
    atomic_bool bound_once;
};

struct pb_affinity {
    int policy;
    hwloc_topology_t topology;
    int threads;
    struct placed *thread;
    hwloc_bitmap_t consumer_before; /* the loop's binding before the plan */
    bool consumer_bound;
    char topology_text[160];
    char note[256];
};

static void describe_topology(struct pb_affinity *a)
{
    hwloc_topology_t t = a->topology;
    int packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
    int nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    int pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
    snprintf(a->topology_text, sizeof(a->topology_text),
             "%d package%s, %d NUMA node%s, %d cores, %d PUs", packages, packages == 1 ? "" : "s",
             nodes, nodes == 1 ? "" : "s", cores, pus);
}

static void add_note(struct pb_affinity *a, const char *text)
{
    size_t used = strlen(a->note);
    snprintf(a->note + used, sizeof(a->note) - used, "%s%s", used ? "; " : "", text);
}

/* The cores this rank places its threads on: all of the node's, or its
 * share of them when several ranks run on the node. Returns how many,
 * filling first. */
static int rank_cores(struct pb_affinity *a, int *first)
{
    int cores = hwloc_get_nbobjs_by_type(a->topology, HWLOC_OBJ_CORE);
    const struct pb_mpi_info *mpi = pb_mpi();
    *first = 0;
    if (mpi->local_size <= 1)
        return cores;
    if (cores < mpi->local_size) {
        add_note(a, "fewer cores than ranks on this node: the ranks share every core");
        return cores;
    }
    *first = mpi->local_rank * cores / mpi->local_size;
    return (mpi->local_rank + 1) * cores / mpi->local_size - *first;
}

/* The core of thread t of n on count cores from first: compact takes
 * neighbours in order; spread spaces the threads evenly over the cores
 * (so consecutive threads land on different packages and nodes when
 * there are several), both wrapping when threads outnumber cores. */
static int core_for(int policy, int t, int n, int first, int count)
{
    if (policy == PB_AFFINITY_SPREAD && n <= count)
        return first + (int)((long)t * count / n);
    return first + t % count;
}

/* Thread t's set under numa: the NUMA node t mod nodes, within the
 * rank's cores. */
static void numa_set(struct pb_affinity *a, int t, int nodes, hwloc_const_bitmap_t mine,
                     hwloc_bitmap_t set)
{
    hwloc_obj_t node =
        hwloc_get_obj_by_type(a->topology, HWLOC_OBJ_NUMANODE, (unsigned)(t % nodes));
    hwloc_bitmap_and(set, node->cpuset, mine);
    if (hwloc_bitmap_iszero(set))
        hwloc_bitmap_copy(set, mine); /* the rank has no core on that node */
}

static int plan(struct pb_affinity *a)
{
    int first = 0, count = rank_cores(a, &first);
    if (count <= 0)
        return PB_ERR;
    int nodes = hwloc_get_nbobjs_by_type(a->topology, HWLOC_OBJ_NUMANODE);
    int policy = a->policy;
    if (policy == PB_AFFINITY_NUMA && nodes <= 1) {
        add_note(a, "one NUMA node: numa places threads as compact does");
        policy = PB_AFFINITY_COMPACT;
    }
    if (a->threads > count)
        add_note(a, "more threads than cores: threads share cores");
    hwloc_bitmap_t mine = hwloc_bitmap_alloc();
    if (!mine)
        return PB_ERR;
    for (int c = first; c < first + count; c++)
        hwloc_bitmap_or(mine, mine,
                        hwloc_get_obj_by_type(a->topology, HWLOC_OBJ_CORE, (unsigned)c)->cpuset);
    int rc = PB_OK;
    for (int t = 0; t < a->threads && rc == PB_OK; t++) {
        struct placed *p = &a->thread[t];
        p->cpu_at_bind = p->cpu_at_end = -1;
        if (!(p->set = hwloc_bitmap_alloc())) {
            rc = PB_ERR;
        } else if (policy == PB_AFFINITY_NUMA) {
            numa_set(a, t, nodes, mine, p->set);
        } else {
            int core = core_for(policy, t, a->threads, first, count);
            hwloc_bitmap_copy(
                p->set, hwloc_get_obj_by_type(a->topology, HWLOC_OBJ_CORE, (unsigned)core)->cpuset);
        }
    }
    hwloc_bitmap_free(mine);
    return rc;
}

int pb_affinity_open(struct pb_affinity **out, int policy, int workers, char *msg, size_t msglen)
{
    *out = NULL;
    if (policy == PB_AFFINITY_NONE)
        return PB_OK;
    struct pb_affinity *a = calloc(1, sizeof(*a));
    if (!a) {
        snprintf(msg, msglen, "out of memory");
        return PB_ERR_NOMEM;
    }
    a->policy = policy;
    a->threads = (workers > 0 ? workers : 0) + 1;
    a->thread = calloc((size_t)a->threads, sizeof(*a->thread));
    if (!a->thread || hwloc_topology_init(&a->topology) != 0) {
        free(a->thread);
        free(a);
        snprintf(msg, msglen, "out of memory");
        return PB_ERR_NOMEM;
    }
    if (hwloc_topology_load(a->topology) != 0 || plan(a) != PB_OK) {
        snprintf(msg, msglen, "loader.affinity: hwloc cannot read this machine's topology");
        pb_affinity_close(a);
        return PB_ERR;
    }
    describe_topology(a);
    *out = a;
    return PB_OK;
}

void pb_affinity_bind(struct pb_affinity *a, int thread)
{
    if (!a || thread < 0 || thread >= a->threads)
        return;
    struct placed *p = &a->thread[thread];
    if (thread == 0 && !a->consumer_bound) {
        a->consumer_before = hwloc_bitmap_alloc();
        if (a->consumer_before &&
            hwloc_get_thread_cpubind(a->topology, pthread_self(), a->consumer_before, 0) != 0) {
            hwloc_bitmap_free(a->consumer_before);
            a->consumer_before = NULL;
        }
        a->consumer_bound = true;
    }
    hwloc_set_thread_cpubind(a->topology, pthread_self(), p->set, 0);
    hwloc_bitmap_t back = hwloc_bitmap_alloc();
    if (back && hwloc_get_thread_cpubind(a->topology, pthread_self(), back, 0) == 0)
        hwloc_bitmap_list_snprintf(p->bound, sizeof(p->bound), back);
    hwloc_bitmap_free(back);
    p->cpu_at_bind = sched_getcpu();
    atomic_store(&p->bound_once, true);
}

void pb_affinity_thread_end(struct pb_affinity *a, int thread)
{
    if (a && thread >= 0 && thread < a->threads)
        a->thread[thread].cpu_at_end = sched_getcpu();
}

/* Whether cpu (-1: not seen) lies in set. */
static bool within(hwloc_const_bitmap_t set, int cpu)
{
    return cpu < 0 || hwloc_bitmap_isset(set, (unsigned)cpu);
}

json_t *pb_affinity_to_json(const struct pb_affinity *a)
{
    if (!a)
        return NULL;
    const struct pb_mpi_info *mpi = pb_mpi();
    json_t *threads = json_array();
    for (int t = 0; t < a->threads; t++) {
        const struct placed *p = &a->thread[t];
        if (!atomic_load(&p->bound_once))
            continue;
        char name[32], set[CPUS_TEXT];
        if (t == 0)
            snprintf(name, sizeof(name), "loop");
        else
            snprintf(name, sizeof(name), "worker %d", t - 1);
        hwloc_bitmap_list_snprintf(set, sizeof(set), p->set);
        json_t *cpus = json_array();
        if (p->cpu_at_bind >= 0)
            json_array_append_new(cpus, json_integer(p->cpu_at_bind));
        if (p->cpu_at_end >= 0)
            json_array_append_new(cpus, json_integer(p->cpu_at_end));
        json_array_append_new(
            threads, json_pack("{s s s i s s s s s o s b}", "thread", name, "worker", t - 1,
                               "cpuset", set, "bound", p->bound, "cpus", cpus, "within",
                               within(p->set, p->cpu_at_bind) && within(p->set, p->cpu_at_end)));
    }
    return json_pack("{s s s s s s s i s i s o}", "policy", pb_affinity_policy_names[a->policy],
                     "topology", a->topology_text, "note", a->note, "local_rank", mpi->local_rank,
                     "local_size", mpi->local_size, "threads", threads);
}

void pb_affinity_close(struct pb_affinity *a)
{
    if (!a)
        return;
    if (a->consumer_before)
        hwloc_set_thread_cpubind(a->topology, pthread_self(), a->consumer_before, 0);
    hwloc_bitmap_free(a->consumer_before);
    for (int t = 0; t < a->threads; t++)
        hwloc_bitmap_free(a->thread[t].set);
    if (a->topology)
        hwloc_topology_destroy(a->topology);
    free(a->thread);
    free(a);
}
