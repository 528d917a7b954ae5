/* What pbench's stage timing costs per reading on this machine: one
 * CLOCK_MONOTONIC and one CLOCK_THREAD_CPUTIME_ID clock_gettime, the pair
 * the runner reads at every stage boundary. scripts/bench-image.sh builds
 * it to estimate the instrumentation overhead from first principles:
 * (stages + 1) x this cost / CPU time per sample. Prints two numbers, ns. */
#include <stdio.h>
#include <time.h>

static unsigned long long now_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(void)
{
    const int n = 200000;
    unsigned long long sink = 0;
    unsigned long long t0 = now_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < n; i++)
        sink += now_ns(CLOCK_MONOTONIC);
    unsigned long long t1 = now_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < n; i++)
        sink += now_ns(CLOCK_THREAD_CPUTIME_ID);
    unsigned long long t2 = now_ns(CLOCK_MONOTONIC);
    printf("%.1f %.1f\n", (double)(t1 - t0) / n, (double)(t2 - t1) / n);
    return sink == 1 ? 1 : 0; /* keeps the readings from being optimized away */
}
