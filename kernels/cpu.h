/* CPU pixel kernels: plain C that the compiler vectorizes. */
#ifndef PB_KERNELS_CPU_H
#define PB_KERNELS_CPU_H

#include <stddef.h>
#include <stdint.h>

/* Fills an HxWxC uint8 image with a smooth gradient plus seeded noise, so
 * synthetic images are neither flat nor random. */
void pb_fill_pattern(uint8_t *dst, int height, int width, int channels, uint64_t seed);

/* A cheap 64-bit digest of bytes (reads every byte). */
uint64_t pb_checksum(const uint8_t *data, size_t bytes);

/* Busy-waits until the calling thread has used ns of CPU time. */
void pb_spin_cpu_ns(uint64_t ns);

#endif
