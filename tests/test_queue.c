/* The ready queue: in-order delivery, any-order delivery, back-pressure
 * (a worker never holds more than prefetch_factor batches), and clean
 * shutdown, with real threads. Also run under the sanitizer build. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/base/pb.h"
#include "bench/run/queue.h"

#define MAX_WORKERS 8

struct harness {
    struct pb_queue q;
    struct pb_slot *slots;
    int workers, prefetch;
    uint64_t batches;               /* total batches to produce */
    atomic_int held[MAX_WORKERS];   /* slots a worker holds now */
    atomic_int max_held[MAX_WORKERS];
    bool jitter;
};

struct worker_arg {
    struct harness *h;
    int index;
};

static void tiny_sleep(uint64_t seed)
{
    struct timespec ts = {0, (long)(pb_mix64(seed) % 200000)}; /* < 0.2 ms */
    nanosleep(&ts, NULL);
}

static void *worker(void *p)
{
    struct worker_arg *a = p;
    struct harness *h = a->h;
    for (uint64_t seq = (uint64_t)a->index; seq < h->batches; seq += (uint64_t)h->workers) {
        struct pb_slot *slot = pb_queue_acquire(&h->q, a->index);
        if (!slot)
            break;
        assert_int_equal(slot->worker, a->index);
        int held = atomic_fetch_add(&h->held[a->index], 1) + 1;
        int prev = atomic_load(&h->max_held[a->index]);
        while (held > prev && !atomic_compare_exchange_weak(&h->max_held[a->index], &prev, held))
            ;
        if (h->jitter)
            tiny_sleep(seq * 7 + (uint64_t)a->index);
        slot->batch.seq = seq;
        memcpy(slot->batch.data, &seq, sizeof(seq));
        pb_queue_push(&h->q, slot);
    }
    pb_queue_worker_done(&h->q, a->index);
    return NULL;
}

static void run_harness(int workers, int prefetch, uint64_t batches, bool in_order, bool jitter,
                        bool slow_consumer)
{
    struct harness h;
    memset(&h, 0, sizeof(h));
    h.workers = workers;
    h.prefetch = prefetch;
    h.batches = batches;
    h.jitter = jitter;
    int total = workers * prefetch;
    h.slots = calloc((size_t)total, sizeof(*h.slots));
    for (int i = 0; i < total; i++)
        h.slots[i].batch.data = malloc(sizeof(uint64_t));
    assert_int_equal(pb_queue_init(&h.q, workers, prefetch, h.slots), PB_OK);

    pthread_t threads[MAX_WORKERS];
    struct worker_arg args[MAX_WORKERS];
    for (int w = 0; w < workers; w++) {
        args[w] = (struct worker_arg){&h, w};
        pthread_create(&threads[w], NULL, worker, &args[w]);
    }
    bool *seen = calloc(batches, sizeof(bool));
    uint64_t got = 0;
    for (uint64_t seq = 0;; seq++) {
        uint32_t depth = 0;
        struct pb_slot *slot = pb_queue_pop(&h.q, in_order, seq, &depth);
        if (!slot)
            break;
        assert_true(depth >= 1 && depth <= (uint32_t)total);
        uint64_t value;
        memcpy(&value, slot->batch.data, sizeof(value));
        assert_int_equal(value, slot->batch.seq);
        if (in_order)
            assert_int_equal(slot->batch.seq, seq);
        assert_false(seen[slot->batch.seq]);
        seen[slot->batch.seq] = true;
        got++;
        if (slow_consumer)
            tiny_sleep(seq);
        atomic_fetch_sub(&h.held[slot->worker], 1);
        pb_queue_release(&h.q, slot);
    }
    assert_int_equal(got, batches); /* every batch exactly once */
    for (int w = 0; w < workers; w++) {
        pthread_join(threads[w], NULL);
        /* Back-pressure: never more than prefetch_factor batches per worker
         * built and not yet consumed. */
        assert_true(atomic_load(&h.max_held[w]) <= prefetch);
        assert_true(atomic_load(&h.max_held[w]) >= 1);
    }
    free(seen);
    pb_queue_destroy(&h.q);
    for (int i = 0; i < total; i++)
        free(h.slots[i].batch.data);
    free(h.slots);
}

/* One run of the harness. */
struct harness_run {
    int workers, prefetch;
    uint64_t batches;
    bool in_order, jitter, slow_consumer;
};

/* The runs of the harness tests, each list ended by a run with no workers.
 * In the slow-consumer one, workers fill their slots and must block. */
static struct harness_run in_order_many_workers[] = {
    {4, 2, 2000, true, true, false}, {8, 1, 1001, true, true, false}, {0}};
static struct harness_run in_order_slow_consumer_backpressure[] = {
    {3, 2, 300, true, false, true}, {0}};
static struct harness_run any_order[] = {
    {4, 3, 2000, false, true, false}, {2, 1, 500, false, false, true}, {0}};
static struct harness_run single_worker[] = {
    {1, 4, 500, true, true, false}, {1, 1, 7, false, false, false}, {0}};

/* Runs the harness once for each run of the list *state points to. */
static void test_harness_runs(void **state)
{
    for (const struct harness_run *r = *state; r->workers; r++)
        run_harness(r->workers, r->prefetch, r->batches, r->in_order, r->jitter, r->slow_consumer);
}

/* A harness test named after its list of runs. */
#define HARNESS_TEST(runs) {"test_" #runs, test_harness_runs, NULL, NULL, runs}

/* Sets up q for workers x prefetch slots (two in all) on slots, cleared. */
static void init_queue(struct pb_queue *q, int workers, int prefetch, struct pb_slot slots[2])
{
    memset(slots, 0, 2 * sizeof(slots[0]));
    assert_int_equal(pb_queue_init(q, workers, prefetch, slots), PB_OK);
}

static void test_close_wakes_everyone(void **state)
{
    (void)state;
    /* Take both slots, so the next acquire would block. */
    struct pb_slot slots[2];
    struct pb_queue q;
    init_queue(&q, 1, 2, slots);
    assert_non_null(pb_queue_acquire(&q, 0));
    assert_non_null(pb_queue_acquire(&q, 0));
    pb_queue_close(&q);
    assert_null(pb_queue_acquire(&q, 0));
    uint32_t depth;
    assert_null(pb_queue_pop(&q, true, 0, &depth));
    pb_queue_destroy(&q);
}

static void test_pop_ends_when_owner_done(void **state)
{
    (void)state;
    struct pb_slot slots[2];
    struct pb_queue q;
    init_queue(&q, 2, 1, slots);
    struct pb_slot *s = pb_queue_acquire(&q, 0);
    s->batch.seq = 0;
    pb_queue_push(&q, s);
    pb_queue_worker_done(&q, 1); /* worker 1 has no batch 1 to give */
    pb_queue_worker_done(&q, 0);
    uint32_t depth;
    struct pb_slot *got = pb_queue_pop(&q, true, 0, &depth);
    assert_ptr_equal(got, s);
    assert_int_equal(depth, 1);
    pb_queue_release(&q, got);
    assert_null(pb_queue_pop(&q, true, 1, &depth));
    pb_queue_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(in_order_many_workers),
        HARNESS_TEST(in_order_slow_consumer_backpressure),
        HARNESS_TEST(any_order),
        HARNESS_TEST(single_worker),
        cmocka_unit_test(test_close_wakes_everyone),
        cmocka_unit_test(test_pop_ends_when_owner_done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
