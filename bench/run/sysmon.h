/* The system sampler: a thread that, while a repeat runs, samples the
 * process's resident memory and CPU use at 20 Hz into a series, keeps the
 * RSS peak, calls the progress tick about four times a second with the
 * running throughput, and calls the runner's watchdog every period.
 * Also the one-shot readings the runner takes around a repeat (process CPU
 * time, MemAvailable, CPU clock).
 *
 * Each sample also holds what pbench's own growing buffers (the trace,
 * the batch records) take of that RSS, from the own_bytes hook.
 *
 * The consumer publishes its measured samples and the time it has waited
 * for data with pb_sysmon_publish (relaxed stores, no lock, per batch);
 * the sampler turns the wait into the stall of each window of about a
 * second (struct pb_stall_window), which the tick carries. The series
 * belongs to the sampler thread between pb_sysmon_start and pb_sysmon_stop
 * and to the caller outside. */
#ifndef PB_SYSMON_H
#define PB_SYSMON_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/result/result.h"

#define PB_SYSMON_PERIOD_NS 50000000ull /* 20 Hz */
#define PB_SYSMON_MAX_SAMPLES 8192
/* The live stall's window: at least this long (and until a batch ends). */
#define PB_STALL_WINDOW_NS 1000000000ull

/* The live stall: the share of a window of the measured part that the
 * training loop spent waiting for data, from the cumulative wait the loop
 * publishes. A window opens where the last one closed (or where the
 * measured part starts) and closes at the first update at least
 * min_window_ns later at which a batch has ended since it opened: the wait
 * is counted when a batch ends, so a window with none would read 0. Its
 * stall is the wait added over it / its length, clamped to 0..100 %, and
 * stays the figure until the next window closes; the error is at most one
 * batch's wait out of the window. Plain data: reads no clock, takes no
 * lock (the sampler's thread owns it). */
struct pb_stall_window {
    uint64_t measuring_ns;  /* the measured part it belongs to (its start); 0 none */
    uint64_t start_ns;      /* the open window's start */
    uint64_t wait_ns;       /* the loop's cumulative wait then */
    uint64_t samples;       /* and its samples */
    double stall_pct;       /* the last closed window's; NaN before one closes */
};

/* Feeds the window what the loop has published by now_ns: its measured
 * part's start (measuring_ns, 0 before it starts: the window is cleared),
 * the samples and the wait it has counted since. A new measuring_ns starts
 * over (a new repeat); counts that went back (a repeat's reset seen before
 * its start) open the window again from now. Returns true when a window
 * closed (w->stall_pct is new). */
bool pb_stall_window_update(struct pb_stall_window *w, uint64_t measuring_ns, uint64_t now_ns,
                            uint64_t samples, uint64_t wait_ns, uint64_t min_window_ns);

/* The whole machine's CPU time, all CPUs together, in clock ticks
 * (sysconf(_SC_CLK_TCK) a second), from the "cpu" line of /proc/stat.
 * busy is user + nice + system + irq + softirq + steal (guest time is
 * already inside user); total is busy + idle + iowait, the capacity. */
struct pb_machine_cpu {
    uint64_t busy_ticks, steal_ticks, total_ticks;
};

struct pb_sysmon {
    /* Set by the caller before pb_sysmon_start; any may be NULL. */
    /* samples_per_s: of the measured part so far; stall_pct: of the last
     * closed window (struct pb_stall_window), NaN before the first. */
    void (*tick)(void *user, double samples_per_s, double stall_pct);
    void *tick_user;
    /* Called from the sampler thread every period with the time: the
     * runner's watchdog (a stop, a stuck stage, the time cap), which wakes a
     * consumer blocked on a slow batch. Runs until pb_sysmon_stop. */
    void (*watch)(void *watch_user, uint64_t now_ns);
    void *watch_user;
    /* Called from the sampler thread at each sample: the bytes of
     * pbench's own buffers that grow during a repeat (the trace's records,
     * the batch records), kept beside the RSS as own_bytes so that memory
     * growth leaves them out (bench/result/memgrowth.h). NULL: none. */
    uint64_t (*own_bytes)(void *own_user);
    void *own_user;

    pthread_t thread;
    bool running;
    atomic_bool stop;
    _Atomic uint64_t live_samples;
    _Atomic uint64_t live_wait_ns;  /* the loop's wait for data, measured part */
    _Atomic uint64_t live_start_ns; /* 0 until the measured part starts */
    uint64_t start_ns;              /* the repeat's start: series times */
    struct pb_rss_sample *rss;      /* PB_SYSMON_MAX_SAMPLES, owned */
    size_t rss_count;
    uint64_t rss_peak_bytes;
    /* The machine's CPU time when the measured part started. */
    struct pb_machine_cpu machine_start;
};

/* Allocates the series. Returns PB_OK or PB_ERR_NOMEM; release with
 * pb_sysmon_free (also after a failed init). */
int pb_sysmon_init(struct pb_sysmon *mon);
void pb_sysmon_free(struct pb_sysmon *mon);

/* Clears the series and starts the sampler thread; the series' times count
 * from now. Returns PB_OK or PB_ERR when the thread cannot start. */
int pb_sysmon_start(struct pb_sysmon *mon);

/* Consumer side: the measured part starts at start_ns (the tick's
 * throughput and stall count from there; the machine's CPU time is read),
 * and, once per batch, the samples measured so far and the time the loop
 * has waited for data over them (two relaxed stores). */
void pb_sysmon_measuring(struct pb_sysmon *mon, uint64_t start_ns);
void pb_sysmon_publish(struct pb_sysmon *mon, uint64_t samples, uint64_t wait_ns);

/* Consumer side, at the end of the measured part: what other processes
 * and steal took of the machine since pb_sysmon_measuring, given this
 * process's CPU time over it (pb_interference). */
void pb_sysmon_interference(struct pb_sysmon *mon, uint64_t own_cpu_ns, double *other_cpu_pct,
                            double *steal_pct);

/* Stops and joins the sampler thread (no-op if it is not running). */
void pb_sysmon_stop(struct pb_sysmon *mon);

/* Copies the series into a new array for a repeat result (owned by it);
 * rss_count is 0 and *rss NULL when out of memory. */
void pb_sysmon_copy(const struct pb_sysmon *mon, struct pb_rss_sample **rss, size_t *rss_count);

/* One-shot readings: CPU time of the whole process (user + system), the
 * kernel's MemAvailable (0 unknown), the mean "cpu MHz" of
 * /proc/cpuinfo (0 unknown). */
uint64_t pb_process_cpu_ns(void);
uint64_t pb_mem_available_bytes(void);
double pb_cpu_mhz_now(void);

/* The machine's own speed around a repeat (bench/sys/refspeed.h): before
 * it, the reference workload into rep and the cgroup's throttled time
 * into mark; after it, the share of the repeat's time throttled. */
struct pb_speed_mark {
    uint64_t throttled_us, t_ns;
};
void pb_machine_speed_before(struct pb_repeat_result *rep, struct pb_speed_mark *mark);
void pb_machine_speed_after(struct pb_repeat_result *rep, const struct pb_speed_mark *mark);

/* Parses the text of /proc/stat (only its first "cpu " line is read).
 * Returns PB_OK, or PB_ERR when the line is missing or malformed. */
int pb_proc_stat_parse(const char *text, struct pb_machine_cpu *out);

/* Reads /proc/stat now. PB_OK, or PB_ERR (out zeroed) where it cannot be
 * read, e.g. off Linux. */
int pb_machine_cpu_now(struct pb_machine_cpu *out);

/* What other processes took of the machine between two readings: the busy
 * time less steal and less own_cpu_ns (this process's CPU time over the
 * same window), as % of the machine's capacity (100 = every CPU), and the
 * steal time as %. Both 0 when no time passed; other_cpu_pct is clamped to
 * 0..100. */
void pb_interference(const struct pb_machine_cpu *start, const struct pb_machine_cpu *end,
                     uint64_t own_cpu_ns, long ticks_per_s, double *other_cpu_pct,
                     double *steal_pct);

#endif
