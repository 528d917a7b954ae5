/* The comparable metrics, as one table: what `pbench compare` tests, what
 * `pbench history` keeps and shows, and how the ranks of a multi-rank run
 * combine into the job's figure, each read from this one row per metric.
 * A new metric is one row here plus whatever produces its value; the
 * comparison, its table, markdown, JSON and HTML, the history database's
 * column, `history show --metric` and the ranks' aggregate follow. A
 * figure a metric shares with the sinks (CPU per sample) is defined once,
 * in bench/result/figures.h, and read from there by both. */
#ifndef PB_METRICS_H
#define PB_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/result/figures.h"
#include "bench/result/result.h"

/* How the ranks of a multi-rank run combine one repeat's value into the
 * job's: summed (rates and memory of the whole job), the mean over ranks
 * (shares of time), or rank 0's own (computed from rank 0's batches). */
enum pb_metric_ranks { PB_RANKS_SUM, PB_RANKS_MEAN, PB_RANKS_ROOT };

struct pb_metric {
    const char *name; /* "samples_per_s": in JSON, history and --metric */
    const char *unit; /* "samples/s", "ns", "%" or "bytes"             */
    bool higher_is_better;
    bool absolute; /* its change is in percentage points (stall)   */
    /* A regression that comes with changed settings is their cost (more
     * workers or prefetch hold more batches), not counted as one; with
     * loader_cost, only a change of loader.* settings explains it (more
     * workers sharing cores cost CPU per sample; a costlier stage is a
     * regression). */
    bool setting_cost;
    /* --fail-on-regression fails on it unless told otherwise: what users
     * gate on (throughput, stall, utilization, CPU per sample); the others
     * gate when named (--gate). */
    bool gates;
    /* One repeat's value; NAN when it has none. */
    double (*of_repeat)(const struct pb_repeat_result *repeat);
    /* Writes a value back into a repeat (the ranks' aggregate); NULL for a
     * value computed from the repeat's batches (PB_RANKS_ROOT). */
    void (*to_repeat)(struct pb_repeat_result *repeat, double value);
    enum pb_metric_ranks ranks;
    /* The point's summary value, kept by history; NULL: not kept. */
    double (*of_point)(const struct pb_point_result *point);
    /* A wall-clock figure, which other processes on the machine move: its
     * verdict is withheld where the two sides' interference differs
     * (bench/analyze/compare.h). CPU time per sample and memory are not. */
    bool wall_clock;
    bool loader_cost;
    /* The machine's figure, not the code's (its reference workload): shown
     * beside the verdicts and kept by history, never counted or gated. */
    bool machine;
};

#define PB_METRIC_COUNT 8
extern const struct pb_metric pb_metrics[PB_METRIC_COUNT];

/* The metric named name, or NULL. */
const struct pb_metric *pb_metric_find(const char *name);

/* The machine's own row (the one with .machine), or NULL. */
const struct pb_metric *pb_metric_machine(void);

/* Which rows pb_metric_names lists: all, those history keeps (a point
 * value), those --fail-on-regression gates on by default, those --gate
 * can name (all but the machine's). */
enum pb_metric_filter { PB_METRICS_ALL, PB_METRICS_KEPT, PB_METRICS_GATED, PB_METRICS_GATEABLE };

/* Writes the names of the table's rows that filter admits, joined by sep,
 * into buf (cut short at buflen): the lists help and the messages about an
 * unknown metric give, so they cannot drift from the table. */
void pb_metric_names(char *buf, size_t buflen, const char *sep, enum pb_metric_filter filter);

#endif
