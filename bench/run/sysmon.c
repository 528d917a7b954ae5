/* The system sampler (bench/run/sysmon.h): RSS and CPU at 20 Hz while a repeat runs, the
 * progress tick, and the watchdog's period. */
#include "bench/run/sysmon.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench/base/pb.h"
#include "bench/sys/refspeed.h"

static uint64_t rss_bytes_now(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    unsigned long long size = 0, resident = 0;
    int n = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    if (n != 2)
        return 0;
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

uint64_t pb_process_cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

uint64_t pb_mem_available_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kib = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
            break;
    fclose(f);
    return (uint64_t)kib * 1024;
}

double pb_cpu_mhz_now(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    char line[256];
    double sum = 0, mhz;
    int n = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "cpu MHz : %lf", &mhz) == 1) {
            sum += mhz;
            n++;
        }
    fclose(f);
    return n ? sum / n : 0;
}

int pb_proc_stat_parse(const char *text, struct pb_machine_cpu *out)
{
    memset(out, 0, sizeof(*out));
    const char *line = text;
    while (line && strncmp(line, "cpu ", 4) != 0) {
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (!line)
        return PB_ERR;
    /* user nice system idle iowait irq softirq steal; older kernels stop
     * before steal, which then stays 0. */
    unsigned long long v[8] = {0};
    int n = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    if (n < 4)
        return PB_ERR;
    out->steal_ticks = v[7];
    out->busy_ticks = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    out->total_ticks = out->busy_ticks + v[3] + v[4];
    return PB_OK;
}

int pb_machine_cpu_now(struct pb_machine_cpu *out)
{
    char text[1024];
    FILE *f = fopen("/proc/stat", "r");
    size_t len = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    text[len] = '\0';
    return pb_proc_stat_parse(text, out);
}

void pb_interference(const struct pb_machine_cpu *start, const struct pb_machine_cpu *end,
                     uint64_t own_cpu_ns, long ticks_per_s, double *other_cpu_pct,
                     double *steal_pct)
{
    *other_cpu_pct = *steal_pct = 0;
    if (!start->total_ticks || end->total_ticks <= start->total_ticks || ticks_per_s <= 0)
        return;
    double total = (double)(end->total_ticks - start->total_ticks);
    double steal = (double)(end->steal_ticks - start->steal_ticks);
    double own = (double)own_cpu_ns * (double)ticks_per_s / 1e9;
    double other = (double)(end->busy_ticks - start->busy_ticks) - steal - own;
    *other_cpu_pct = other <= 0 ? 0 : other >= total ? 100 : 100 * other / total;
    *steal_pct = 100 * steal / total;
}

bool pb_stall_window_update(struct pb_stall_window *w, uint64_t measuring_ns, uint64_t now_ns,
                            uint64_t samples, uint64_t wait_ns, uint64_t min_window_ns)
{
    if (measuring_ns != w->measuring_ns || !measuring_ns)
        *w = (struct pb_stall_window){.measuring_ns = measuring_ns, .start_ns = measuring_ns,
                                      .stall_pct = NAN};
    if (!measuring_ns)
        return false;
    if (samples < w->samples || wait_ns < w->wait_ns || now_ns < w->start_ns) {
        w->start_ns = now_ns;
        w->samples = samples;
        w->wait_ns = wait_ns;
        return false;
    }
    if (now_ns - w->start_ns < min_window_ns || samples == w->samples)
        return false;
    double share = (double)(wait_ns - w->wait_ns) / (double)(now_ns - w->start_ns);
    w->stall_pct = 100.0 * (share > 1 ? 1 : share);
    w->start_ns = now_ns;
    w->samples = samples;
    w->wait_ns = wait_ns;
    return true;
}

/* The tick: the measured part's samples/s so far, and the stall of its
 * last window of about a second. */
static void tick(struct pb_sysmon *mon, struct pb_stall_window *window, uint64_t now)
{
    uint64_t start = atomic_load_explicit(&mon->live_start_ns, memory_order_acquire);
    uint64_t samples = atomic_load_explicit(&mon->live_samples, memory_order_relaxed);
    uint64_t wait_ns = atomic_load_explicit(&mon->live_wait_ns, memory_order_relaxed);
    pb_stall_window_update(window, start, now, samples, wait_ns, PB_STALL_WINDOW_NS);
    if (start && now > start)
        mon->tick(mon->tick_user, (double)samples * 1e9 / (double)(now - start),
                  window->stall_pct);
}

static void *sampler_main(void *arg)
{
    struct pb_sysmon *mon = arg;
    uint64_t last_ns = pb_now_ns(), last_cpu = pb_process_cpu_ns();
    unsigned ticks = 0;
    struct pb_stall_window window = {.stall_pct = NAN};
    while (!atomic_load(&mon->stop)) {
        struct timespec period = {0, (long)PB_SYSMON_PERIOD_NS};
        nanosleep(&period, NULL);
        uint64_t now = pb_now_ns(), cpu = pb_process_cpu_ns();
        if (mon->watch)
            mon->watch(mon->watch_user, now);
        uint64_t rss = rss_bytes_now();
        if (mon->tick && (++ticks % 5) == 0)
            tick(mon, &window, now);
        if (rss > mon->rss_peak_bytes)
            mon->rss_peak_bytes = rss;
        if (mon->rss_count < PB_SYSMON_MAX_SAMPLES) {
            struct pb_rss_sample *r = &mon->rss[mon->rss_count++];
            r->t_s = (double)(now - mon->start_ns) / 1e9;
            r->rss_bytes = rss;
            r->own_bytes = mon->own_bytes ? mon->own_bytes(mon->own_user) : 0;
            r->cpu_pct =
                now > last_ns ? 100.0 * (double)(cpu - last_cpu) / (double)(now - last_ns) : 0;
        }
        last_ns = now;
        last_cpu = cpu;
    }
    return NULL;
}

int pb_sysmon_init(struct pb_sysmon *mon)
{
    mon->rss = calloc(PB_SYSMON_MAX_SAMPLES, sizeof(*mon->rss));
    return mon->rss ? PB_OK : PB_ERR_NOMEM;
}

void pb_sysmon_free(struct pb_sysmon *mon)
{
    free(mon->rss);
    mon->rss = NULL;
}

int pb_sysmon_start(struct pb_sysmon *mon)
{
    mon->rss_count = 0;
    mon->rss_peak_bytes = 0;
    atomic_store(&mon->live_start_ns, 0);
    atomic_store(&mon->live_samples, 0);
    atomic_store(&mon->live_wait_ns, 0);
    mon->start_ns = pb_now_ns();
    atomic_store(&mon->stop, false);
    mon->running = pthread_create(&mon->thread, NULL, sampler_main, mon) == 0;
    return mon->running ? PB_OK : PB_ERR;
}

void pb_sysmon_measuring(struct pb_sysmon *mon, uint64_t start_ns)
{
    atomic_store_explicit(&mon->live_samples, 0, memory_order_relaxed);
    atomic_store_explicit(&mon->live_wait_ns, 0, memory_order_relaxed);
    /* Released: a sampler that sees the new start sees the counts' reset. */
    atomic_store_explicit(&mon->live_start_ns, start_ns, memory_order_release);
    pb_machine_cpu_now(&mon->machine_start);
}

void pb_sysmon_interference(struct pb_sysmon *mon, uint64_t own_cpu_ns, double *other_cpu_pct,
                            double *steal_pct)
{
    struct pb_machine_cpu end;
    pb_machine_cpu_now(&end);
    pb_interference(&mon->machine_start, &end, own_cpu_ns, sysconf(_SC_CLK_TCK), other_cpu_pct,
                    steal_pct);
}

void pb_sysmon_publish(struct pb_sysmon *mon, uint64_t samples, uint64_t wait_ns)
{
    atomic_store_explicit(&mon->live_wait_ns, wait_ns, memory_order_relaxed);
    atomic_store_explicit(&mon->live_samples, samples, memory_order_relaxed);
}

void pb_sysmon_stop(struct pb_sysmon *mon)
{
    if (!mon->running)
        return;
    atomic_store(&mon->stop, true);
    pthread_join(mon->thread, NULL);
    mon->running = false;
}

void pb_sysmon_copy(const struct pb_sysmon *mon, struct pb_rss_sample **rss, size_t *rss_count)
{
    *rss_count = 0;
    *rss = malloc((mon->rss_count ? mon->rss_count : 1) * sizeof(**rss));
    if (*rss) {
        memcpy(*rss, mon->rss, mon->rss_count * sizeof(**rss));
        *rss_count = mon->rss_count;
    }
}

void pb_machine_speed_before(struct pb_repeat_result *rep, struct pb_speed_mark *mark)
{
    struct pb_ref_speed ref;
    pb_ref_speed_measure(&ref);
    rep->ref_cpu_ns = ref.cpu_ns;
    rep->ref_mem_gb_s = ref.mem_gb_s;
    mark->throttled_us = pb_cgroup_throttled_us();
    mark->t_ns = pb_now_ns();
}

void pb_machine_speed_after(struct pb_repeat_result *rep, const struct pb_speed_mark *mark)
{
    /* The cgroup's throttled time is summed over its CPUs: a share of the
     * machine's CPU time over the repeat. */
    uint64_t us = pb_cgroup_throttled_us(), elapsed_ns = pb_now_ns() - mark->t_ns;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double capacity_ns = (double)elapsed_ns * (double)(cpus > 0 ? cpus : 1);
    rep->throttled_pct = us > mark->throttled_us && elapsed_ns > 0
                             ? 100.0 * (double)(us - mark->throttled_us) * 1e3 / capacity_ns
                             : 0;
}
