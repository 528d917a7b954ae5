/* Per-stage hardware and software counters from perf_event_open, for
 * profile.level: comprehensive. Each loader thread opens its own counters
 * (software: page faults and context switches, which every Linux has;
 * hardware: cycles, instructions and cache misses, where the machine and
 * perf_event_paranoid allow) and reads them at the same stage boundaries
 * as its clocks: one read() per group, no allocation, no lock, no
 * formatting. A counter that cannot be opened is left out with the reason. */
#ifndef PB_PERFCOUNT_H
#define PB_PERFCOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bench/result/result.h"

struct pb_perf_thread {
    int group_fd[2];            /* software group, hardware group; -1 none */
    int members[2];             /* counters in each group                 */
    int counter[2][3];          /* which counter each member is           */
    int fds[2][3];              /* each member's file descriptor          */
    unsigned mask;              /* bit i: counter i is counted            */
};

/* Opens the counters for the calling thread. Returns the mask of counters
 * opened (0: none); why_hw (may be NULL) receives why the hardware ones
 * could not be, "" when they could. */
unsigned pb_perf_open(struct pb_perf_thread *p, char *why_hw, size_t why_len);

/* Reads every open counter into values (indexed by enum pb_perf_counter;
 * the others are left alone). Hot path safe: one read() per group. */
void pb_perf_read(const struct pb_perf_thread *p, uint64_t values[PB_PERF_COUNTERS]);

void pb_perf_close(struct pb_perf_thread *p);

/* Probes the counters on the calling thread and warns in point about
 * those that cannot be counted, with the reason. */
void pb_perf_note(struct pb_point_result *point);

#endif
