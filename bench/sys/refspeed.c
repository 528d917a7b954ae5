/* The machine's own speed (bench/sys/refspeed.h). */
#include "bench/sys/refspeed.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/base/stats.h"

#define TABLE_WORDS 2048 /* 16 KiB: in L1 on every core pbench runs on */
#define ROUNDS 96

/* A fixed chain of dependent multiply-xor-shift steps over the table:
 * the same instructions every time, bound by the core's speed. */
static uint64_t reference_loop(uint64_t *table)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < TABLE_WORDS; i++) {
            x ^= table[(x >> 7) & (TABLE_WORDS - 1)];
            x *= 0xbf58476d1ce4e5b9ull;
            x ^= x >> 31;
            table[i] += x;
        }
    return x;
}

static double cpu_reference_ns(void)
{
    uint64_t *table = calloc(TABLE_WORDS, sizeof(*table));
    if (!table)
        return 0;
    double runs[7];
    volatile uint64_t sink = 0;
    for (int k = 0; k < 7; k++) {
        for (int i = 0; i < TABLE_WORDS; i++)
            table[i] = (uint64_t)i * 0x2545f4914f6cdd1dull;
        uint64_t t0 = pb_now_ns();
        sink += reference_loop(table);
        runs[k] = (double)(pb_now_ns() - t0);
    }
    (void)sink;
    free(table);
    /* The fastest of seven: the core's speed with the fewest interruptions
     * (a median moves ±6% from run to run on a quiet machine, the minimum
     * about ±1%), so what moves it is the clock or what shares the core. */
    double best = runs[0];
    for (int k = 1; k < 7; k++)
        if (runs[k] < best)
            best = runs[k];
    return best;
}

double pb_memcpy_gb_s(size_t bytes, int copies)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    double runs[16] = {0};
    copies = copies < 1 ? 1 : copies > 16 ? 16 : copies;
    bool ok = a && b;
    if (ok) {
        memset(a, 1, bytes);
        memset(b, 2, bytes);
        for (int k = 0; k < copies; k++) {
            uint64_t t0 = pb_now_ns();
            memcpy(k % 2 ? a : b, k % 2 ? b : a, bytes);
            double s = (double)(pb_now_ns() - t0) / 1e9;
            runs[k] = s > 0 ? (double)bytes / 1e9 / s : 0;
        }
    }
    free(a);
    free(b);
    return ok ? pb_median(runs, (size_t)copies) : 0;
}

void pb_ref_speed_measure(struct pb_ref_speed *out)
{
    out->cpu_ns = cpu_reference_ns();
    out->mem_gb_s = pb_memcpy_gb_s(32u << 20, 3);
}

/* The cpu.stat file of this process's cgroup for the CPU controller:
 * cgroup v2's single hierarchy ("0::/path"), else v1's cpu controller
 * ("N:cpu,cpuacct:/path"). */
static bool cpu_stat_path(char *path, size_t pathlen, bool *v2)
{
    char line[4096];
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return false;
    path[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':');
        char *where = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!where)
            continue;
        *where++ = '\0';
        controllers++;
        if (controllers[0] == '\0' && !path[0]) { /* v2: used unless v1 has cpu */
            snprintf(path, pathlen, "/sys/fs/cgroup%s/cpu.stat", where);
            *v2 = true;
        }
        char *save = NULL;
        for (char *c = strtok_r(controllers, ",", &save); c; c = strtok_r(NULL, ",", &save))
            if (strcmp(c, "cpu") == 0) {
                snprintf(path, pathlen, "/sys/fs/cgroup/cpu%s/cpu.stat", where);
                *v2 = false;
            }
    }
    fclose(f);
    return path[0] != '\0';
}

uint64_t pb_cgroup_throttled_us(void)
{
    char path[4200], line[256];
    bool v2 = false;
    if (!cpu_stat_path(path, sizeof path, &v2))
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long us = 0, v;
    while (fgets(line, sizeof line, f)) {
        if (v2 && sscanf(line, "throttled_usec %llu", &v) == 1)
            us = v;
        else if (!v2 && sscanf(line, "throttled_time %llu", &v) == 1)
            us = v / 1000; /* v1 counts nanoseconds */
    }
    fclose(f);
    return (uint64_t)us;
}
