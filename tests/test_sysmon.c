/* The system sampler on this process: the series fills while the thread
 * runs, the tick reports the consumer's published throughput, the runner's
 * watchdog is called every period, and the one-shot readings are plausible. Waits are
 * for progress (with a generous limit), never for a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "bench/base/pb.h"
#include "bench/run/sysmon.h"

static atomic_int ticks, wakes;
static _Atomic double last_rate;

static void on_tick(void *user, double samples_per_s)
{
    (void)user;
    atomic_store(&last_rate, samples_per_s);
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
        pb_sysmon_publish(&mon, 1000);
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
        cmocka_unit_test(test_watch_called_each_period),
        cmocka_unit_test(test_readings),
        cmocka_unit_test(test_proc_stat_parse),
        cmocka_unit_test(test_interference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
