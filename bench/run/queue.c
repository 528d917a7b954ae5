/* The bounded ready queue between the loader workers and the consumer
 * (bench/run/queue.h): per-worker batch slots, pushed in order or as they finish. */
#include "bench/run/queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "kernels/gpu_rt.h"

static void *alloc_batch_buffer(size_t bytes, bool pinned)
{
    if (pinned)
        return pb_pinned_alloc(bytes);
    size_t rounded = pb_batch_align(bytes);
    void *p = aligned_alloc(PB_BATCH_ALIGN, rounded ? rounded : PB_BATCH_ALIGN);
    if (p)
        memset(p, 0, rounded);
    return p;
}

struct pb_slot *pb_slots_alloc(int count, size_t batch_size, size_t slot_bytes, bool pinned,
                               char *msg, size_t msglen)
{
    struct pb_slot *slots = calloc((size_t)count, sizeof(*slots));
    if (!slots) {
        snprintf(msg, msglen, "out of memory allocating %d batch slots", count);
        return NULL;
    }
    size_t buffer_bytes = batch_size * slot_bytes;
    for (int i = 0; i < count; i++) {
        slots[i].batch.data = alloc_batch_buffer(buffer_bytes, pinned);
        slots[i].batch.slot_bytes = slot_bytes;
        slots[i].batch.pinned = pinned;
        slots[i].batch.seeds = calloc(batch_size, sizeof(uint64_t));
        if (!slots[i].batch.data || !slots[i].batch.seeds) {
            snprintf(msg, msglen, "cannot allocate %d batch buffers of %zu bytes%s", count,
                     buffer_bytes, pinned ? " (pinned)" : "");
            pb_slots_free(slots, count);
            return NULL;
        }
    }
    return slots;
}

void pb_slots_free(struct pb_slot *slots, int count)
{
    if (!slots)
        return;
    for (int i = 0; i < count; i++) {
        free(slots[i].batch.seeds);
        if (slots[i].batch.pinned)
            pb_pinned_free(slots[i].batch.data);
        else
            free(slots[i].batch.data);
    }
    free(slots);
}

int pb_queue_init(struct pb_queue *q, int workers, int prefetch_factor, struct pb_slot *slots)
{
    memset(q, 0, sizeof(*q));
    int total = workers * prefetch_factor;
    q->workers = workers;
    q->prefetch_factor = prefetch_factor;
    q->slots = slots;
    q->free_list = calloc((size_t)total, sizeof(*q->free_list));
    q->free_count = calloc((size_t)workers, sizeof(*q->free_count));
    q->ready = calloc((size_t)total, sizeof(*q->ready));
    q->worker_done = calloc((size_t)workers, sizeof(*q->worker_done));
    if (!q->free_list || !q->free_count || !q->ready || !q->worker_done) {
        pb_queue_destroy(q);
        return PB_ERR_NOMEM;
    }
    for (int i = 0; i < total; i++) {
        int w = i / prefetch_factor;
        slots[i].worker = w;
        slots[i].ready = false;
        q->free_list[w * prefetch_factor + q->free_count[w]++] = &slots[i];
    }
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->consumer_cv, NULL);
    pthread_cond_init(&q->worker_cv, NULL);
    return PB_OK;
}

void pb_queue_destroy(struct pb_queue *q)
{
    if (q->free_list) {
        pthread_mutex_destroy(&q->lock);
        pthread_cond_destroy(&q->consumer_cv);
        pthread_cond_destroy(&q->worker_cv);
    }
    free(q->free_list);
    free(q->free_count);
    free(q->ready);
    free(q->worker_done);
    memset(q, 0, sizeof(*q));
}

struct pb_slot *pb_queue_acquire(struct pb_queue *q, int worker)
{
    struct pb_slot *slot = NULL;
    pthread_mutex_lock(&q->lock);
    while (!q->closed && q->free_count[worker] == 0)
        pthread_cond_wait(&q->worker_cv, &q->lock);
    if (!q->closed)
        slot = q->free_list[worker * q->prefetch_factor + --q->free_count[worker]];
    pthread_mutex_unlock(&q->lock);
    return slot;
}

void pb_queue_push(struct pb_queue *q, struct pb_slot *slot)
{
    pthread_mutex_lock(&q->lock);
    slot->ready = true;
    q->ready[q->ready_count++] = slot;
    pthread_cond_signal(&q->consumer_cv);
    pthread_mutex_unlock(&q->lock);
}

void pb_queue_worker_done(struct pb_queue *q, int worker)
{
    pthread_mutex_lock(&q->lock);
    q->worker_done[worker] = true;
    pthread_cond_signal(&q->consumer_cv);
    pthread_mutex_unlock(&q->lock);
}

static bool all_done(const struct pb_queue *q)
{
    for (int w = 0; w < q->workers; w++)
        if (!q->worker_done[w])
            return false;
    return true;
}

struct pb_slot *pb_queue_pop(struct pb_queue *q, bool in_order, uint64_t seq, uint32_t *depth)
{
    struct pb_slot *slot = NULL;
    /* In PyTorch's assignment, batch seq is built by worker seq % workers. */
    int owner = (int)(seq % (uint64_t)q->workers);
    pthread_mutex_lock(&q->lock);
    for (;;) {
        if (q->closed)
            break;
        int found = -1;
        if (in_order) {
            for (int i = 0; i < q->ready_count; i++)
                if (q->ready[i]->batch.seq == seq) {
                    found = i;
                    break;
                }
        } else if (q->ready_count > 0) {
            found = 0;
        }
        if (found >= 0) {
            *depth = (uint32_t)q->ready_count;
            slot = q->ready[found];
            memmove(&q->ready[found], &q->ready[found + 1],
                    (size_t)(q->ready_count - found - 1) * sizeof(*q->ready));
            q->ready_count--;
            slot->ready = false;
            break;
        }
        if (in_order ? q->worker_done[owner] : all_done(q))
            break;
        pthread_cond_wait(&q->consumer_cv, &q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    return slot;
}

void pb_queue_release(struct pb_queue *q, struct pb_slot *slot)
{
    pthread_mutex_lock(&q->lock);
    int w = slot->worker;
    q->free_list[w * q->prefetch_factor + q->free_count[w]++] = slot;
    pthread_cond_broadcast(&q->worker_cv);
    pthread_mutex_unlock(&q->lock);
}

void pb_queue_close(struct pb_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_cond_broadcast(&q->worker_cv);
    pthread_cond_broadcast(&q->consumer_cv);
    pthread_mutex_unlock(&q->lock);
}
