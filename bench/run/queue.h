/* The bounded ready queue between loader workers and the consumer.
 *
 * Each worker owns prefetch_factor batch slots (PyTorch's per-worker
 * prefetch): it acquires a free slot of its own, fills it, and pushes it.
 * The consumer pops the next batch, either strictly in sequence order
 * (in_order, the default in PyTorch) or whichever is ready first, and
 * releases it back to its worker. Owning slots per worker is what makes
 * in-order delivery deadlock free: the worker holding the batch the
 * consumer waits for always has a slot to build it in.
 *
 * Locks are taken once per batch, never per sample. */
#ifndef PB_QUEUE_H
#define PB_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pipelines/stage.h"

struct pb_slot {
    struct pb_batch batch;    /* data buffer and, once filled, its batch   */
    int worker;               /* owner                                     */
    uint64_t assembly_ns;     /* set by the worker                         */
    uint64_t bytes_read;      /* I/O for this batch                        */
    uint32_t errors;          /* samples skipped under on_error: skip      */
    bool ready;
};

/* Alignment of batch buffers and the loaders' scratch buffers, bytes. */
#define PB_BATCH_ALIGN 64

/* Rounds bytes up to a multiple of PB_BATCH_ALIGN. */
static inline size_t pb_batch_align(size_t bytes)
{
    return (bytes + PB_BATCH_ALIGN - 1) / PB_BATCH_ALIGN * PB_BATCH_ALIGN;
}

/* The batch pool: count slots, each with a buffer for batch_size samples
 * of slot_bytes (PB_BATCH_ALIGN aligned and faulted in now, not in the
 * measured part; page-locked when pinned) and batch_size seeds. Returns
 * the slots, or NULL with msg saying what could not be allocated.
 * Release with pb_slots_free. */
struct pb_slot *pb_slots_alloc(int count, size_t batch_size, size_t slot_bytes, bool pinned,
                               char *msg, size_t msglen);
void pb_slots_free(struct pb_slot *slots, int count);

struct pb_queue {
    pthread_mutex_t lock;
    pthread_cond_t consumer_cv; /* a batch became ready, or state changed */
    pthread_cond_t worker_cv;   /* a slot was released, or closed         */
    int workers;
    int prefetch_factor;
    struct pb_slot *slots;      /* workers * prefetch_factor, not owned   */
    struct pb_slot **free_list; /* per worker stacks, prefetch each       */
    int *free_count;
    struct pb_slot **ready;     /* ready batches in push order            */
    int ready_count;
    bool *worker_done;          /* the worker will push nothing more      */
    bool closed;
};

/* Sets up a queue over slots[workers * prefetch_factor]: slot i belongs to
 * worker i / prefetch_factor. Returns PB_OK or PB_ERR_NOMEM. */
int pb_queue_init(struct pb_queue *q, int workers, int prefetch_factor, struct pb_slot *slots);
void pb_queue_destroy(struct pb_queue *q);

/* Worker side: waits for one of the worker's free slots. NULL once the
 * queue is closed. */
struct pb_slot *pb_queue_acquire(struct pb_queue *q, int worker);

/* Worker side: publishes a filled slot (slot->batch.seq set). */
void pb_queue_push(struct pb_queue *q, struct pb_slot *slot);

/* Worker side: the worker has no more batches to produce. */
void pb_queue_worker_done(struct pb_queue *q, int worker);

/* Consumer side: waits for batch `seq` (in_order) or for any ready batch,
 * and writes how many batches were ready when it was taken into *depth.
 * Returns NULL when the queue is closed, or when the batch wanted can no
 * longer arrive (its worker is done; with any order, all workers are). */
struct pb_slot *pb_queue_pop(struct pb_queue *q, bool in_order, uint64_t seq, uint32_t *depth);

/* Consumer side: gives a slot back to its worker. */
void pb_queue_release(struct pb_queue *q, struct pb_slot *slot);

/* Stops everything: waiting workers and consumer return NULL. */
void pb_queue_close(struct pb_queue *q);

#endif
