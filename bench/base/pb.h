/* Common definitions shared by every pbench module: error codes, clocks
 * and small helpers. Everything here is header-only and allocation-free. */
#ifndef PB_H
#define PB_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Return codes. Functions return PB_OK or one of the negative codes below;
 * the human sentence goes into a caller-supplied message buffer. */
enum {
    PB_OK = 0,
    PB_ERR = -1,             /* generic failure (I/O, library error)      */
    PB_ERR_CONFIG = -2,      /* bad config, bad option, bad command line  */
    PB_ERR_DATA = -3,        /* a corrupt or unsupported sample: policy   */
    PB_ERR_UNAVAILABLE = -4, /* skipped: a feature or device is missing   */
    PB_ERR_NOMEM = -5,
    PB_ERR_INTERRUPTED = -6, /* stopped by SIGINT; partial results kept   */
    PB_ERR_NOSPACE = -7,     /* output buffer too small: out_bytes says  */
};

/* Process exit codes, documented in README.md. */
enum {
    PB_EXIT_OK = 0,
    PB_EXIT_ERROR = 1,
    PB_EXIT_USAGE = 2,
    PB_EXIT_REGRESSION = 3,
    PB_EXIT_INCONCLUSIVE = 4, /* --fail-on-regression: a gated verdict withheld */
    PB_EXIT_SUSPECT = 5,      /* history show: a newest run outside the noise, not yet a step */
    PB_EXIT_SKIP = 77, /* ctest's skip code, used by tests only */
};

#define PB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PB_MSG_MAX 512   /* size of a message buffer for one sentence */
#define PB_NAME_MAX 64   /* stage, decoder, option names              */
#define PB_PATH_MAX 4096

/* Monotonic wall clock in nanoseconds. */
static inline uint64_t pb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* When a pb_now_ns() instant was, in seconds since the Unix epoch (the
 * wall clock, read now: what lines it up with other time series). The
 * wall clock is read between two monotonic reads, again where the thread
 * was preempted between them, so the two clocks are paired to within
 * microseconds. */
static inline double pb_unix_time_of(uint64_t mono_ns)
{
    struct timespec wall;
    uint64_t before, after;
    int tries = 0;
    do {
        before = pb_now_ns();
        clock_gettime(CLOCK_REALTIME, &wall);
        after = pb_now_ns();
    } while (after - before > 20000 && ++tries < 8);
    uint64_t now = before + (after - before) / 2;
    double ago_s = now > mono_ns ? (double)(now - mono_ns) / 1e9 : -(double)(mono_ns - now) / 1e9;
    return (double)wall.tv_sec + (double)wall.tv_nsec / 1e9 - ago_s;
}

/* CPU time consumed by the calling thread, in nanoseconds. */
static inline uint64_t pb_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Copies src into dst[size], truncating, always NUL-terminated (size > 0).
 * Returns strlen(src) so a caller can tell that it was truncated. */
static inline size_t pb_strlcpy(char *dst, const char *src, size_t size)
{
    size_t len = 0;
    while (src[len])
        len++;
    size_t n = len < size - 1 ? len : size - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
    dst[n] = 0;
    return len;
}

/* Formats one more line into lines, an array of capacity lines of
 * line_size bytes each of which *count are taken, and counts it; a full
 * array keeps what it has. PB_LINES_ADD passes a char[N][M] array's sizes. */
static inline __attribute__((format(printf, 5, 6))) void
pb_lines_add(char *lines, size_t line_size, size_t capacity, int *count, const char *fmt, ...)
{
    if (*count >= (int)capacity)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lines + (size_t)(*count)++ * line_size, line_size, fmt, ap);
    va_end(ap);
}
#define PB_LINES_ADD(array, count, ...)                                                            \
    pb_lines_add((array)[0], sizeof((array)[0]), PB_ARRAY_LEN(array), (count), __VA_ARGS__)

/* splitmix64: a fast, well-mixed 64-bit hash used to derive seeds. */
static inline uint64_t pb_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* 64-bit FNV-1a of text, continuing from hash (start with PB_FNV_BASIS):
 * the fingerprints of what a run measured (history series, MPI ranks). */
#define PB_FNV_BASIS 0xcbf29ce484222325ull
static inline uint64_t pb_fnv1a(const char *text, uint64_t hash)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        hash = (hash ^ *c) * 0x100000001b3ull;
    return hash;
}

#endif
