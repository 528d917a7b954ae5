/* Worker placement (bench/sys/affinity.h): each thread that binds itself under
 * a plan runs only on its planned CPU set, as the OS reports it
 * (sched_getaffinity, and sched_getcpu sampled while the thread works);
 * none plans nothing; numa on one NUMA node says it acts as compact; and
 * end to end, a run with loader.affinity: compact records every worker's
 * CPU set with each thread seen only inside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/sys/affinity.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-affinity-XXXXXX";

#define WORKERS 3

/* Whether cpu is in the hwloc list "0-3,6" (as the plan writes it). */
static bool in_list(const char *list, int cpu)
{
    const char *p = list;
    while (*p) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p)
            break;
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        if (cpu >= lo && cpu <= hi)
            return true;
        if (*end != ',')
            break;
        p = end + 1;
    }
    return false;
}

struct thread_check {
    struct pb_affinity *plan;
    int thread;
    cpu_set_t mask; /* sched_getaffinity after binding */
    int seen[64];   /* sched_getcpu while working      */
    int seen_count;
};

static void *bind_and_work(void *arg)
{
    struct thread_check *c = arg;
    pb_affinity_bind(c->plan, c->thread);
    sched_getaffinity(0, sizeof(c->mask), &c->mask);
    volatile uint64_t sink = 0;
    for (int s = 0; s < 64; s++) {
        for (int i = 0; i < 20000; i++)
            sink += (uint64_t)i * (uint64_t)s;
        c->seen[c->seen_count++] = sched_getcpu();
        if (s % 16 == 0)
            sched_yield(); /* give the scheduler chances to move it */
    }
    pb_affinity_thread_end(c->plan, c->thread);
    (void)sink; /* the busy work's only purpose: keep the thread running */
    return NULL;
}

static const json_t *thread_entry(const json_t *plan, int thread)
{
    const json_t *threads = json_object_get(plan, "threads");
    size_t i;
    const json_t *t;
    json_array_foreach(threads, i, t)
    {
        if (json_integer_value(json_object_get(t, "worker")) == thread - 1)
            return t;
    }
    return NULL;
}

/* Every thread runs only on the CPU set planned for it. */
static void check_policy(int policy)
{
    struct pb_affinity *plan;
    char msg[256];
    assert_int_equal(pb_affinity_open(&plan, policy, WORKERS, msg, sizeof(msg)), PB_OK);
    assert_non_null(plan);
    struct thread_check checks[WORKERS + 1];
    pthread_t threads[WORKERS + 1];
    for (int t = 0; t <= WORKERS; t++) {
        checks[t] = (struct thread_check){.plan = plan, .thread = t};
        assert_int_equal(pthread_create(&threads[t], NULL, bind_and_work, &checks[t]), 0);
    }
    for (int t = 0; t <= WORKERS; t++)
        pthread_join(threads[t], NULL);
    json_t *recorded = pb_affinity_to_json(plan);
    assert_string_equal(json_string_value(json_object_get(recorded, "policy")),
                        pb_affinity_policy_names[policy]);
    for (int t = 0; t <= WORKERS; t++) {
        const json_t *entry = thread_entry(recorded, t);
        assert_non_null(entry);
        const char *cpuset = json_string_value(json_object_get(entry, "cpuset"));
        assert_non_null(cpuset);
        assert_true(cpuset[0] != '\0');
        /* The binding read back is the planned set. */
        assert_string_equal(json_string_value(json_object_get(entry, "bound")), cpuset);
        assert_true(json_is_true(json_object_get(entry, "within")));
        /* The OS mask holds exactly the planned CPUs... */
        for (int cpu = 0; cpu < CPU_SETSIZE && cpu < 1024; cpu++)
            assert_int_equal(CPU_ISSET(cpu, &checks[t].mask) != 0, in_list(cpuset, cpu));
        /* ...and the thread was only ever seen on them. */
        assert_int_equal(checks[t].seen_count, 64);
        for (int s = 0; s < checks[t].seen_count; s++)
            if (!in_list(cpuset, checks[t].seen[s]))
                fail_msg("thread %d ran on CPU %d, outside its set %s", t, checks[t].seen[s],
                         cpuset);
    }
    json_decref(recorded);
    pb_affinity_close(plan);
}

static void test_compact_binds_each_thread(void **state)
{
    (void)state;
    check_policy(PB_AFFINITY_COMPACT);
}

static void test_spread_binds_each_thread(void **state)
{
    (void)state;
    check_policy(PB_AFFINITY_SPREAD);
}

static void test_numa_binds_each_thread(void **state)
{
    (void)state;
    check_policy(PB_AFFINITY_NUMA);
}

/* numa on a machine with one NUMA node acts as compact, and says so. */
static void test_numa_on_one_node_says_compact(void **state)
{
    (void)state;
    struct pb_affinity *numa, *compact;
    char msg[256];
    assert_int_equal(pb_affinity_open(&numa, PB_AFFINITY_NUMA, 1, msg, sizeof(msg)), PB_OK);
    assert_int_equal(pb_affinity_open(&compact, PB_AFFINITY_COMPACT, 1, msg, sizeof(msg)), PB_OK);
    json_t *a = pb_affinity_to_json(numa), *b = pb_affinity_to_json(compact);
    const char *topology = json_string_value(json_object_get(a, "topology"));
    if (strstr(topology, " 1 NUMA node,"))
        assert_non_null(strstr(json_string_value(json_object_get(a, "note")),
                               "numa places threads as compact does"));
    else
        assert_null(strstr(json_string_value(json_object_get(a, "note")), "as compact"));
    json_decref(a);
    json_decref(b);
    pb_affinity_close(numa);
    pb_affinity_close(compact);
}

static void test_none_plans_nothing(void **state)
{
    (void)state;
    struct pb_affinity *plan = (struct pb_affinity *)&plan; /* overwritten */
    char msg[256];
    assert_int_equal(pb_affinity_open(&plan, PB_AFFINITY_NONE, 4, msg, sizeof(msg)), PB_OK);
    assert_null(plan);
    pb_affinity_bind(plan, 0); /* no-ops */
    assert_null(pb_affinity_to_json(plan));
    pb_affinity_close(plan);
}

/* End to end: the result holds each worker's set, each thread seen only
 * inside it. */
static void test_run_records_worker_sets(void **state)
{
    (void)state;
    char *err;
    int rc = pb_test_run_pbench(
        workdir,
        "run -q \"$PBENCH_SOURCE_DIR/configs/null.yaml\" -s dataset.path=data "
        "-s dataset.generate.count=64 -s dataset.generate.size_bytes=1024 -s run.repeats=1 "
        "-s run.min_time_s=0.2 -s run.max_time_s=1 -s pipeline.decode.cost_us=20 "
        "-s loader.affinity=compact -o R.json",
        &err);
    if (rc != 0)
        fail_msg("pbench exit %d: %s", rc, err);
    free(err);
    json_t *root = pb_test_load_json(workdir, "R.json");
    const json_t *point = json_array_get(json_object_get(root, "points"), 0);
    const json_t *affinity = json_object_get(point, "affinity");
    assert_true(json_is_object(affinity));
    assert_string_equal(json_string_value(json_object_get(affinity, "policy")), "compact");
    const json_t *threads = json_object_get(affinity, "threads");
    assert_int_equal(json_array_size(threads), 3); /* the loop and 2 workers */
    size_t i;
    const json_t *t;
    json_array_foreach(threads, i, t)
    {
        const char *cpuset = json_string_value(json_object_get(t, "cpuset"));
        assert_non_null(cpuset);
        assert_string_equal(json_string_value(json_object_get(t, "bound")), cpuset);
        assert_true(json_is_true(json_object_get(t, "within")));
        size_t j;
        const json_t *cpu;
        json_array_foreach(json_object_get(t, "cpus"), j, cpu)
            assert_true(in_list(cpuset, (int)json_integer_value(cpu)));
    }
    json_decref(root);
}

int main(void)
{
    pb_test_tmpdir_use(workdir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none_plans_nothing),
        cmocka_unit_test(test_compact_binds_each_thread),
        cmocka_unit_test(test_spread_binds_each_thread),
        cmocka_unit_test(test_numa_binds_each_thread),
        cmocka_unit_test(test_numa_on_one_node_says_compact),
        cmocka_unit_test(test_run_records_worker_sets),
    };
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
