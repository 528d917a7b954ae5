/* Per-stage counters from perf_event_open (bench/run/perfcount.h) for profile.level:
 * comprehensive: page faults and context switches everywhere, hardware counters where there are. */
#include "bench/run/perfcount.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench/base/pb.h"

static const struct {
    uint32_t type;
    uint64_t config;
} counter_kinds[PB_PERF_COUNTERS] = {
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
};

static int open_counter(int counter, int group_fd, bool exclude_kernel)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = counter_kinds[counter].type;
    a.config = counter_kinds[counter].config;
    a.read_format = PERF_FORMAT_GROUP;
    a.exclude_kernel = exclude_kernel;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0 /* this thread */, -1, group_fd, 0);
}

/* Opens counters [first, last] as group g; returns the errno of the
 * leader's failure, 0 when it opened. */
static int open_group(struct pb_perf_thread *p, int g, int first, int last)
{
    int err = 0;
    for (int c = first; c <= last; c++) {
        /* Software events count in the kernel (a page fault is handled
         * there); where that is refused, count the user side only. */
        bool user_only = counter_kinds[c].type == PERF_TYPE_HARDWARE;
        int fd = open_counter(c, p->group_fd[g], user_only);
        if (fd < 0 && !user_only && errno == EACCES)
            fd = open_counter(c, p->group_fd[g], true);
        if (fd < 0) {
            if (c == first)
                err = errno;
            continue;
        }
        if (p->group_fd[g] < 0)
            p->group_fd[g] = fd;
        p->fds[g][p->members[g]] = fd;
        p->counter[g][p->members[g]++] = c;
        p->mask |= 1u << c;
    }
    return err;
}

unsigned pb_perf_open(struct pb_perf_thread *p, char *why_hw, size_t why_len)
{
    memset(p, 0, sizeof(*p));
    p->group_fd[0] = p->group_fd[1] = -1;
    open_group(p, 0, PB_PERF_PAGE_FAULTS, PB_PERF_CONTEXT_SWITCHES);
    int err = open_group(p, 1, PB_PERF_CYCLES, PB_PERF_CACHE_MISSES);
    if (why_hw && why_len) {
        if (!err)
            why_hw[0] = '\0';
        else
            snprintf(why_hw, why_len, "perf_event_open: %s%s", strerror(err),
                     err == ENOENT || err == EOPNOTSUPP
                         ? " (no hardware performance counters: a virtual machine often has none)"
                     : err == EACCES || err == EPERM
                         ? " (kernel.perf_event_paranoid or the container forbids them)"
                         : "");
    }
    return p->mask;
}

void pb_perf_read(const struct pb_perf_thread *p, uint64_t values[PB_PERF_COUNTERS])
{
    for (int g = 0; g < 2; g++) {
        if (p->group_fd[g] < 0)
            continue;
        uint64_t buf[1 + 3];
        ssize_t n = read(p->group_fd[g], buf, sizeof(buf));
        if (n < (ssize_t)sizeof(uint64_t))
            continue;
        for (uint64_t m = 0; m < buf[0] && m < (uint64_t)p->members[g]; m++)
            values[p->counter[g][m]] = buf[1 + m];
    }
}

void pb_perf_close(struct pb_perf_thread *p)
{
    for (int g = 0; g < 2; g++) {
        for (int m = p->members[g] - 1; m >= 0; m--) /* the leader last */
            close(p->fds[g][m]);
        p->members[g] = 0;
        p->group_fd[g] = -1;
    }
    p->mask = 0;
}

void pb_perf_note(struct pb_point_result *point)
{
    struct pb_perf_thread probe;
    char why[200];
    unsigned mask = pb_perf_open(&probe, why, sizeof(why));
    pb_perf_close(&probe);
    if (!(mask & (1u << PB_PERF_PAGE_FAULTS)))
        pb_point_warn(point, "profile.level comprehensive: no per-stage page faults or context "
                             "switches: perf_event_open refused software counters");
    if (why[0])
        pb_point_warn(point,
                      "profile.level comprehensive: cycles, instructions and cache misses are "
                      "not counted: %s",
                      why);
}
