/* The multi-rank and placement blocks of a point's report (see
 * report_ranks.h). */
#include "bench/report/report_ranks.h"

#include <string.h>

#include "bench/base/printable.h"
#include "bench/base/table.h"

static double number(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : 0;
}

static const char *text(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : "";
}

static void print_table(FILE *out, bool markdown, const struct pb_table *t)
{
    if (markdown)
        pb_table_print_markdown(out, t);
    else
        pb_table_print_text(out, t, "  ");
}

/* One row per rank, then the slowest rank, the imbalance and the cost of
 * starting and ending repeats together. */
static void report_ranks(FILE *out, bool markdown, const struct pb_point_result *p)
{
    const json_t *summary = p->multi_rank;
    size_t i;
    const json_t *rank;
    bool placed = false; /* loader.affinity: a column of CPU sets */
    json_array_foreach(p->ranks, i, rank) placed |= text(rank, "cpusets")[0] != '\0';
    struct pb_table t;
    pb_table_init(&t, placed ? 9 : 8, 0xfdu, false); /* numbers right-aligned */
    static const char *const header[] = {"rank",     "host",    "samples/s",
                                         "share%",   "stall%",  "worker CPU%",
                                         "peak RSS", "samples", "CPU sets"};
    for (size_t c = 0; c < (placed ? 9u : 8u); c++)
        pb_table_add(&t, "%s", header[c]);
    json_array_foreach(p->ranks, i, rank)
    {
        double rate = number(rank, "samples_per_s");
        pb_table_add(&t, "%.0f", number(rank, "rank"));
        pb_table_add(&t, "%s", text(rank, "host"));
        pb_table_add(&t, "%.1f", rate);
        pb_table_add(&t, "%.1f", p->samples_per_s > 0 ? 100.0 * rate / p->samples_per_s : 0);
        pb_table_add(&t, "%.1f", number(rank, "stall_pct"));
        pb_table_add(&t, "%.1f", number(rank, "worker_cpu_pct"));
        pb_table_add(&t, "%.1f MiB", number(rank, "rss_peak_bytes") / 1048576.0);
        pb_table_add(&t, "%.0f", number(rank, "samples"));
        if (placed)
            pb_table_add(&t, "%s", text(rank, "cpusets"));
    }
    fprintf(out, "\n%s%zu ranks (samples/s above is the sum of the rows)\n", markdown ? "" : "  ",
            json_array_size(p->ranks));
    print_table(out, markdown, &t);
    pb_table_free(&t);
    if (!summary)
        return;
    char host[PB_PRINTABLE_SIZE(64)], shown[PB_MARKDOWN_SIZE(PB_PRINTABLE_SIZE(64))];
    pb_printable(host, sizeof(host), text(summary, "slowest_host"));
    fprintf(out,
            "%sslowest rank %.0f on %s; imbalance %.2fx (fastest / slowest); stall mean %.1f%%, "
            "worst %.1f%% (rank %.0f)\n",
            markdown ? "- " : "  ", number(summary, "slowest_rank"),
            markdown ? pb_markdown_text(shown, sizeof(shown), host, false) : host,
            number(summary, "imbalance"), number(summary, "stall_mean_pct"),
            number(summary, "stall_worst_pct"), number(summary, "stall_worst_rank"));
    fprintf(out,
            "%srunning repeats together, per repeat on rank 0 (medians): start barrier %.2f ms, "
            "waiting for the last rank to stop %.2f ms, gather %.2f ms; all three at most %.2f "
            "ms\n",
            markdown ? "- " : "  ", number(summary, "barrier_ms_median"),
            number(summary, "stop_wait_ms_median"), number(summary, "gather_ms_median"),
            number(summary, "sync_ms_max"));
}

/* The policy, the topology and each thread's CPU set. */
static void report_affinity(FILE *out, bool markdown, const json_t *aff)
{
    char line[PB_PRINTABLE_SIZE(512)], shown[PB_MARKDOWN_SIZE(PB_PRINTABLE_SIZE(512))];
    pb_printable(line, sizeof(line), text(aff, "topology"));
    fprintf(out, "\n%splacement: loader.affinity %s on %s\n", markdown ? "" : "  ",
            text(aff, "policy"),
            markdown ? pb_markdown_text(shown, sizeof(shown), line, false) : line);
    const char *note = text(aff, "note");
    if (note[0]) {
        pb_printable(line, sizeof(line), note);
        fprintf(out, "%s%s\n", markdown ? "- " : "  ",
                markdown ? pb_markdown_text(shown, sizeof(shown), line, false) : line);
    }
    struct pb_table t;
    pb_table_init(&t, 3, 0, false);
    pb_table_add(&t, "thread");
    pb_table_add(&t, "cpuset");
    pb_table_add(&t, "ran on (at bind, at end)");
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(aff, "threads"), i, w)
    {
        pb_table_add(&t, "%s", text(w, "thread"));
        pb_table_add(&t, "%s", text(w, "cpuset"));
        char cpus[64] = "";
        size_t used = 0, j;
        const json_t *cpu;
        json_array_foreach(json_object_get(w, "cpus"), j, cpu) used +=
            (size_t)snprintf(cpus + used, used < sizeof(cpus) ? sizeof(cpus) - used : 0, "%s%lld",
                             j ? ", " : "", (long long)json_integer_value(cpu));
        pb_table_add(&t, "%s%s", cpus,
                     json_is_false(json_object_get(w, "within")) ? " (outside!)" : "");
    }
    print_table(out, markdown, &t);
    pb_table_free(&t);
}

void pb_report_ranks(FILE *out, bool markdown, const struct pb_point_result *point)
{
    if (json_is_array(point->ranks) && json_array_size(point->ranks) > 0)
        report_ranks(out, markdown, point);
    if (json_is_object(point->affinity))
        report_affinity(out, markdown, point->affinity);
}
