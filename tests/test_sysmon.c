/* The system sampler on this process: the series fills while the thread
 * runs, the tick reports the consumer's published throughput and the stall
 * of its last window, the runner's watchdog is called every period, and the
 * one-shot readings are plausible. The stall's window arithmetic is checked
 * with synthetic timings against a plain reference. Waits are for progress
 * (with a generous limit), never for a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "bench/base/pb.h"
#include "bench/run/sysmon.h"

static atomic_int ticks, wakes, stall_ticks;
static _Atomic double last_rate, last_stall;

static void on_tick(void *user, double samples_per_s, double stall_pct)
{
    (void)user;
    atomic_store(&last_rate, samples_per_s);
    if (isfinite(stall_pct)) {
        atomic_store(&last_stall, stall_pct);
        atomic_fetch_add(&stall_ticks, 1);
    }
    atomic_fetch_add(&ticks, 1);
}

static void on_watch(void *user, uint64_t now_ns)
{
    (void)user;
    assert_true(now_ns > 0);
    atomic_fetch_add(&wakes, 1);
}

/* Waits until *counter reaches at least n; fails after a minute. */
static void wait_for(atomic_int *counter, int n)
{
    for (int i = 0; i < 60000 && atomic_load(counter) < n; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    assert_true(atomic_load(counter) >= n);
}

static void test_series_and_tick(void **state)
{
    (void)state;
    struct pb_sysmon mon = {.tick = on_tick};
    assert_int_equal(pb_sysmon_init(&mon), PB_OK);
    for (int round = 0; round < 2; round++) {
        atomic_store(&ticks, 0);
        assert_int_equal(pb_sysmon_start(&mon), PB_OK);
        pb_sysmon_measuring(&mon, pb_now_ns());
        pb_sysmon_publish(&mon, 1000, 0);
        wait_for(&ticks, 2);
        pb_sysmon_stop(&mon);
        pb_sysmon_stop(&mon); /* stopping twice is harmless */
        /* A tick comes every 5 samples. */
        assert_true(mon.rss_count >= 10);
        assert_true(mon.rss_peak_bytes > 0);
        assert_true(atomic_load(&last_rate) > 0);
        for (size_t i = 0; i < mon.rss_count; i++) {
            assert_true(mon.rss[i].rss_bytes > 0 && mon.rss[i].rss_bytes <= mon.rss_peak_bytes);
            assert_true(mon.rss[i].cpu_pct >= 0);
            if (i > 0)
                assert_true(mon.rss[i].t_s > mon.rss[i - 1].t_s);
        }
        struct pb_rss_sample *copy;
        size_t count;
        pb_sysmon_copy(&mon, &copy, &count);
        assert_int_equal(count, mon.rss_count);
        assert_true(copy[count - 1].t_s == mon.rss[count - 1].t_s);
        free(copy);
    }
    pb_sysmon_free(&mon);
}

/* A consumer that waits half of its time (its published wait is half the
 * time since the start): once a window of a second has closed, the tick
 * carries a stall near 50 %. */
static void test_tick_carries_stall(void **state)
{
    (void)state;
    struct pb_sysmon mon = {.tick = on_tick};
    assert_int_equal(pb_sysmon_init(&mon), PB_OK);
    atomic_store(&stall_ticks, 0);
    assert_int_equal(pb_sysmon_start(&mon), PB_OK);
    uint64_t start = pb_now_ns();
    pb_sysmon_measuring(&mon, start);
    for (uint64_t batch = 1; batch < 60000 && atomic_load(&stall_ticks) < 2; batch++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        pb_sysmon_publish(&mon, batch, (pb_now_ns() - start) / 2);
    }
    pb_sysmon_stop(&mon);
    assert_true(atomic_load(&stall_ticks) >= 2);
    /* The error is one batch's wait (1 ms here) out of the window, and a
     * late publish on a busy machine: a loose bound. */
    assert_float_equal(atomic_load(&last_stall), 50.0, 5.0);
    pb_sysmon_free(&mon);
}

/* ---- the stall's window, with synthetic timings ------------------------ */

#define MS 1000000ull

/* Before the measured part there is no stall; the first window closes a
 * second after the start, at a tick where a batch has ended; a window in
 * which none ended stays open; a new start begins again. */
static void test_stall_window_steps(void **state)
{
    (void)state;
    struct pb_stall_window w = {0};
    assert_false(pb_stall_window_update(&w, 0, 500 * MS, 0, 0, 1000 * MS));
    assert_true(isnan(w.stall_pct));
    uint64_t t0 = 1000 * MS;
    assert_false(pb_stall_window_update(&w, t0, t0 + 500 * MS, 10, 200 * MS, 1000 * MS));
    assert_true(isnan(w.stall_pct));
    assert_true(pb_stall_window_update(&w, t0, t0 + 1000 * MS, 20, 500 * MS, 1000 * MS));
    assert_float_equal(w.stall_pct, 50.0, 1e-9);
    /* No batch ended between 2.0 s and 3.0 s: the window stays open, and
     * closes at 3.5 s over 1.5 s, 0.9 s of it waited. */
    assert_false(pb_stall_window_update(&w, t0, t0 + 2000 * MS, 20, 500 * MS, 1000 * MS));
    assert_float_equal(w.stall_pct, 50.0, 1e-9);
    assert_true(pb_stall_window_update(&w, t0, t0 + 2500 * MS, 30, 1400 * MS, 1000 * MS));
    assert_float_equal(w.stall_pct, 60.0, 1e-9);
    /* A batch that waited longer than the window (counted at its end):
     * the share is clamped to the whole window. */
    assert_true(pb_stall_window_update(&w, t0, t0 + 3500 * MS, 31, 3400 * MS, 1000 * MS));
    assert_float_equal(w.stall_pct, 100.0, 1e-9);
    /* Counts that went back (a reset seen before its start): the window
     * opens again from now, nothing closes. */
    assert_false(pb_stall_window_update(&w, t0, t0 + 4500 * MS, 5, 100 * MS, 1000 * MS));
    assert_true(pb_stall_window_update(&w, t0, t0 + 5500 * MS, 15, 100 * MS, 1000 * MS));
    assert_float_equal(w.stall_pct, 0.0, 1e-9);
    /* The next repeat: no stall until its first window closes. */
    uint64_t t1 = t0 + 9000 * MS;
    assert_false(pb_stall_window_update(&w, t1, t1 + 250 * MS, 40, 10 * MS, 1000 * MS));
    assert_true(isnan(w.stall_pct));
    /* Measuring ended: cleared. */
    assert_false(pb_stall_window_update(&w, 0, t1 + 2000 * MS, 0, 0, 1000 * MS));
    assert_true(isnan(w.stall_pct));
}

/* A random loop (each batch waits 0 to 40 ms, then steps 0 to 20 ms),
 * ticked every 250 ms: each closed window's stall is within one batch's
 * wait of the true share of that window spent waiting (the reference sums
 * the wait intervals inside it), and the windows, weighted by length, add
 * up to the loop's whole stall. */
static void test_stall_window_against_reference(void **state)
{
    (void)state;
    enum { BATCHES = 4000 };
    static uint64_t wait_from[BATCHES], wait_to[BATCHES], done[BATCHES];
    uint64_t seed = 12345, t = 1000 * MS, max_wait = 0;
    uint64_t t0 = t;
    for (int i = 0; i < BATCHES; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t wait = (seed >> 33) % (40 * MS), step = (seed >> 13) % (20 * MS);
        wait_from[i] = t;
        wait_to[i] = t + wait;
        done[i] = t + wait + step;
        t = done[i];
        max_wait = wait > max_wait ? wait : max_wait;
    }
    struct pb_stall_window w = {0};
    uint64_t opened = t0, samples = 0, published_wait = 0;
    double weighted = 0, covered = 0;
    int windows = 0, next = 0;
    for (uint64_t now = t0 + 250 * MS; now < t; now += 250 * MS) {
        while (next < BATCHES && done[next] <= now) {
            published_wait += wait_to[next] - wait_from[next];
            samples += 32;
            next++;
        }
        if (!pb_stall_window_update(&w, t0, now, samples, published_wait, 1000 * MS))
            continue;
        uint64_t waited = 0;
        for (int i = 0; i < BATCHES; i++) {
            uint64_t from = wait_from[i] > opened ? wait_from[i] : opened;
            uint64_t to = wait_to[i] < now ? wait_to[i] : now;
            waited += to > from ? to - from : 0;
        }
        double span = (double)(now - opened);
        double truth = 100.0 * (double)waited / span;
        assert_true(w.stall_pct >= 0 && w.stall_pct <= 100);
        assert_float_equal(w.stall_pct, truth, 100.0 * (double)max_wait / span + 1e-9);
        weighted += w.stall_pct * span;
        covered += span;
        opened = now;
        windows++;
    }
    assert_true(windows > 100);
    double total = 100.0 * (double)w.wait_ns / (double)(opened - t0);
    assert_float_equal(weighted / covered, total, 100.0 * (double)max_wait / covered + 1e-9);
}

/* The watchdog is called every period, with the time, until the stop. */
static void test_watch_called_each_period(void **state)
{
    (void)state;
    struct pb_sysmon mon = {.watch = on_watch};
    assert_int_equal(pb_sysmon_init(&mon), PB_OK);
    assert_int_equal(pb_sysmon_start(&mon), PB_OK);
    wait_for(&wakes, 2);
    pb_sysmon_stop(&mon);
    pb_sysmon_free(&mon);
}

static void test_readings(void **state)
{
    (void)state;
    uint64_t before = pb_process_cpu_ns();
    volatile uint64_t sink = 0;
    for (uint64_t i = 0; i < 50000000; i++)
        sink += i;
    (void)sink; /* the loop only burns CPU time */
    assert_true(pb_process_cpu_ns() > before);
    assert_true(pb_mem_available_bytes() > 0);
    assert_true(pb_cpu_mhz_now() >= 0);
}

/* /proc/stat's first "cpu" line, parsed from a sample text: busy is user,
 * nice, system, irq, softirq and steal; guest is not counted twice. */
static void test_proc_stat_parse(void **state)
{
    (void)state;
    const char *text = "cpu  100 20 30 800 50 5 6 7 40 0\n"
                       "cpu0 50 10 15 400 25 2 3 3 20 0\n"
                       "intr 12345\n";
    struct pb_machine_cpu cpu;
    assert_int_equal(pb_proc_stat_parse(text, &cpu), PB_OK);
    assert_int_equal(cpu.busy_ticks, 100 + 20 + 30 + 5 + 6 + 7);
    assert_int_equal(cpu.steal_ticks, 7);
    assert_int_equal(cpu.total_ticks, 100 + 20 + 30 + 5 + 6 + 7 + 800 + 50);
    /* An old kernel without steal. */
    assert_int_equal(pb_proc_stat_parse("cpu 1 2 3 4\n", &cpu), PB_OK);
    assert_int_equal(cpu.busy_ticks, 6);
    assert_int_equal(cpu.total_ticks, 10);
    assert_int_equal(pb_proc_stat_parse("intr 1 2 3\ncpu0 1 2 3 4\n", &cpu), PB_ERR);
    assert_int_equal(pb_proc_stat_parse("cpu 1 2\n", &cpu), PB_ERR);
    assert_int_equal(pb_machine_cpu_now(&cpu), PB_OK);
    assert_true(cpu.total_ticks >= cpu.busy_ticks);
}

/* Other processes' share with synthetic readings, 100 ticks a second. */
static void test_interference(void **state)
{
    (void)state;
    struct pb_machine_cpu a = {.busy_ticks = 1000, .steal_ticks = 10, .total_ticks = 5000};
    /* 400 ticks of capacity (2 CPUs for 2 s): 250 busy, of which 20 steal
     * and 1 s (100 ticks) this process: others took 130 = 32.5%. */
    struct pb_machine_cpu b = {.busy_ticks = 1250, .steal_ticks = 30, .total_ticks = 5400};
    double other, steal;
    pb_interference(&a, &b, 1000000000ull, 100, &other, &steal);
    assert_float_equal(other, 32.5, 1e-9);
    assert_float_equal(steal, 5.0, 1e-9);
    /* This process's own time measured a little above the machine's busy
     * time (different clocks): never below 0. */
    pb_interference(&a, &b, 3000000000ull, 100, &other, &steal);
    assert_float_equal(other, 0, 1e-9);
    /* No time passed: no figure. */
    pb_interference(&a, &a, 0, 100, &other, &steal);
    assert_float_equal(other, 0, 1e-9);
    assert_float_equal(steal, 0, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_series_and_tick),
        cmocka_unit_test(test_tick_carries_stall),
        cmocka_unit_test(test_stall_window_steps),
        cmocka_unit_test(test_stall_window_against_reference),
        cmocka_unit_test(test_watch_called_each_period),
        cmocka_unit_test(test_readings),
        cmocka_unit_test(test_proc_stat_parse),
        cmocka_unit_test(test_interference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
