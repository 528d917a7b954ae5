/* The machine's own speed, measured where pbench runs: a short fixed
 * reference workload timed before each repeat, and the CPU time the
 * process's cgroup was throttled (a CPU quota). A result records both per
 * repeat, so a compare can tell a slower machine (a lower clock, a busier
 * core, a quota) from slower code, and history keeps the reference as a
 * series of its own. */
#ifndef PB_REFSPEED_H
#define PB_REFSPEED_H

#include <stddef.h>
#include <stdint.h>

/* The reference workload: a fixed integer loop over an L1-resident table
 * (the core's speed: its clock and what shares the core), the fastest of
 * seven runs of about a millisecond each, in ns; and a 32 MiB memcpy,
 * GB/s, median of three (the memory system's). About 20 ms in all. */
struct pb_ref_speed {
    double cpu_ns;
    double mem_gb_s;
};
void pb_ref_speed_measure(struct pb_ref_speed *out);

/* memcpy bandwidth between two buffers of bytes each, GB/s: the median of
 * copies copies (1 to 16); 0 when out of memory. */
double pb_memcpy_gb_s(size_t bytes, int copies);

/* The CPU time this process's cgroup (v2) has been throttled by its quota
 * (cpu.max), in microseconds since the cgroup began; 0 when there is no
 * such accounting (no cgroup v2, no quota). */
uint64_t pb_cgroup_throttled_us(void);

#endif
