/* CPU pixel kernels (kernels/cpu.h): plain C that the compiler vectorizes. */
#include "kernels/cpu.h"

#include "bench/base/pb.h"

#include <string.h>

void pb_fill_pattern(uint8_t *dst, int height, int width, int channels, uint64_t seed)
{
    /* Diagonal gradients per channel plus a per-row offset from the seed:
     * cheap (the inner loop vectorizes) and not flat. */
    size_t row_bytes = (size_t)width * (size_t)channels;
    for (int y = 0; y < height; y++) {
        uint8_t *row = dst + (size_t)y * row_bytes;
        uint8_t offset = (uint8_t)(pb_mix64(seed + (uint64_t)y) & 0x3f);
        for (size_t i = 0; i < row_bytes; i++)
            row[i] = (uint8_t)((i >> 1) + (size_t)y * 3u + offset + ((i * 37u) >> 6 & 7u));
    }
}

uint64_t pb_checksum(const uint8_t *data, size_t bytes)
{
    /* Four independent 64-bit lanes: the loads pipeline and vectorize. */
    uint64_t lanes[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 32 <= bytes; i += 32) {
        uint64_t w[4];
        memcpy(w, data + i, sizeof(w));
        for (int l = 0; l < 4; l++)
            lanes[l] += w[l];
    }
    uint64_t tail = 0;
    for (; i < bytes; i++)
        tail = tail * 31 + data[i];
    return pb_mix64(lanes[0] ^ pb_mix64(lanes[1] ^ pb_mix64(lanes[2] ^ pb_mix64(lanes[3] ^ tail))));
}

void pb_spin_cpu_ns(uint64_t ns)
{
    uint64_t end = pb_thread_cpu_ns() + ns;
    volatile uint64_t sink = 0;
    while (pb_thread_cpu_ns() < end)
        for (int i = 0; i < 4096; i++)
            sink += (uint64_t)i;
    (void)sink;
}
