/* A batch frame of the engine protocol (docs/engines.md): its fixed part,
 * the one description of it in C, and the limits of what a frame carries.
 * Read by the engine's interface (bench/run/engine.h) and its columns
 * (bench/run/engine_columns.h). */
#ifndef PB_BATCH_FRAME_H
#define PB_BATCH_FRAME_H

#include <stdint.h>

/* A batch frame's fixed part (docs/engines.md), little-endian, packed: the
 * one description of it. engines/batch_header.json describes the same
 * fields for the engines' Python writer and the tests' reader, and
 * tests/test_torch_engine.c holds the two to each other. */
#define PB_BATCH_HEADER_FIELDS(X)                                                                  \
    X(uint64_t, seq)                                                                               \
    X(uint64_t, t_wait_ns)                                                                         \
    X(uint64_t, t_taken_ns)                                                                        \
    X(uint64_t, t_done_ns)                                                                         \
    X(uint64_t, step_ns)                                                                           \
    X(uint64_t, t_first_ns)                                                                        \
    X(uint64_t, t_ready_ns)                                                                        \
    X(uint64_t, bytes)                                                                             \
    X(uint32_t, samples)                                                                           \
    X(uint32_t, errors)                                                                            \
    X(int32_t, worker)                                                                             \
    X(uint32_t, columns)                                                                           \
    X(uint32_t, records)                                                                           \
    X(uint32_t, counters)

struct __attribute__((packed)) pb_batch_header {
#define PB_BATCH_HEADER_MEMBER(type, name) type name;
    PB_BATCH_HEADER_FIELDS(PB_BATCH_HEADER_MEMBER)
#undef PB_BATCH_HEADER_MEMBER
};
_Static_assert(sizeof(struct pb_batch_header) == 88, "the batch header is 88 bytes");
#define PB_ENGINE_MAX_COLUMNS 32
#define PB_ENGINE_MAX_COUNTERS 32
#define PB_ENGINE_MAX_WORKERS 256
/* The most bytes a frame (its type, length and payload) may hold: docs/engines.md. */
#define PB_ENGINE_FRAME_MAX_BYTES (16u << 20)

#endif
