/* What the live server shows while a session runs (bench/sys/http.h
 * serves it): the result so far as Prometheus metrics, the running
 * repeat's figures as JSON, and the live page that reads them. Each renders
 * from plain data the caller holds under its own lock (the result's points
 * hold the finished repeats; struct pb_live the running one) and returns
 * what it wrote; nothing here measures, locks or serves (bench/report/live.c,
 * the page in bench/report/live_page.c). */
#ifndef PB_LIVE_H
#define PB_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bench/analyze/history.h"
#include "bench/result/result.h"

/* The Content-Type of each rendering, for the server's reply. */
#define PB_LIVE_METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define PB_LIVE_OPENMETRICS_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define PB_LIVE_JSON_TYPE "application/json"
#define PB_LIVE_PAGE_TYPE "text/html; charset=utf-8"

/* The live figures between repeats (the tick of the running repeat). */
struct pb_live {
    char config[128], engine[32], state[16]; /* state: "starting", "measuring", "done", "interrupted" */
    int point, points, repeat, repeats;      /* 1-based; 0 before any */
    char label[256];                         /* the point's axes: "workers=2" */
    double eta_s;                            /* -1 unknown */
    double samples_per_s;                    /* the running repeat's, so far */
    double stall_pct;                        /* its last window's (about 1 s); until one
                                                closes, the last finished repeat's */
    double t_s;                              /* seconds since the session started */
};

/* Whether a scraper's Accept header asks for OpenMetrics
 * ("application/openmetrics-text"); Prometheus's text format otherwise. */
bool pb_live_wants_openmetrics(const char *accept);

/* Prometheus text exposition (openmetrics: the OpenMetrics format, with its # EOF) of result r
 * and live: gauges pbench_samples_per_second and pbench_stall_ratio (0..1) per point (labels
 * config, point, engine, and rank where the point has ranks: r->points[i].ranks JSON array),
 * the running repeat's live values as pbench_live_samples_per_second / pbench_live_stall_ratio,
 * per-stage latency as real histograms pbench_stage_latency_seconds_bucket{le=...}/_sum/_count
 * (labels config, point, engine, stage) from the point's merged stage histograms
 * (pb_hist: convert its buckets to cumulative le= bounds in seconds, ending with le="+Inf"),
 * pbench_worker_cpu_seconds_total (counter), pbench_errors_total (counter),
 * pbench_machine_reference_seconds (the machine's reference speed, see machine_ref in
 * result.h/metrics.c), pbench_cpu_seconds_per_sample and
 * pbench_stage_cpu_seconds_per_sample{stage} (bench/result/figures.h's CPU per sample, the
 * names history's metrics give them). Follow Prometheus naming rules (base units, _total for
 * counters, HELP and TYPE lines); escape label values (backslash, quote, newline). Returns a
 * malloc'd string and its length, NULL when out of memory.
 *
 * Besides: pbench_point_info{config, point, engine, axes} 1 (an info metric: the point's
 * axes as "loader.workers=2, ..."), and of the running repeat pbench_live_point,
 * pbench_live_points, pbench_live_repeat, pbench_live_repeats, pbench_live_eta_seconds (when
 * known), pbench_live_elapsed_seconds and pbench_live_state{state} (1 for the state it is
 * in, 0 for the others). r or live may be NULL (nothing of it is written). A point's own
 * figures carry no rank label; where it has ranks, each rank's are written beside them with
 * one. The histogram's finite le bounds are the same for every stage: each the upper edge of
 * the pb_hist bucket holding 100 ns, 250 ns, 500 ns, 1 µs, ... 100 s, so the cumulative
 * counts are exact. Figures that are not known (NaN) are left out. */
char *pb_live_metrics(const struct pb_result *r, const struct pb_live *live, bool openmetrics,
                      size_t *len);

/* The samples of the running repeats the caller kept, oldest first: n of each, at t_s
 * seconds since the session started, the repeat's samples/s so far and its last window's
 * stall (NaN before one closed), and which point and repeat (1-based) they were of. */
struct pb_live_series {
    const double *t_s, *samples_per_s, *stall_pct;
    const int *point, *repeat;
    size_t n;
};

/* /live.json: live as a JSON object, plus "series": arrays t, samples_per_s, stall_pct,
 * point and repeat of series (NULL: empty). eta_s is null when unknown; figures that are
 * not finite are null. Returns a malloc'd string and its length, NULL when out of
 * memory. */
char *pb_live_json(const struct pb_live *live, const struct pb_live_series *series,
                   size_t *len);

/* The live page: one self-contained HTML document (inline CSS and JS, no external
 * script, style, font or image: it must work offline) that polls /live.json and
 * /result.json every second and shows: the config, point label, repeat and point counters,
 * ETA and state; samples/s (each repeat's so far) and stall (per window of about a second)
 * over time as two small inline-SVG line charts; a table
 * of the points measured so far (samples/s, stall %, worker CPU %, other processes' CPU %,
 * steal %, the machine's reference (the median of the repeats' ref_cpu_ns, as
 * pbench_machine_reference_seconds) and the repeats finished, and per stage p50/p99 latency
 * and CPU per sample, read from /result.json as the final result file holds them); for a
 * point with ranks (points[].ranks under MPI, a wrapped job's engine.jobs[].rank_rows) a
 * line per rank, the slowest marked; at the end (state done/interrupted) the verdict text if
 * /result.json holds one and a link to /report.html. Every name from the data is inserted
 * as text (textContent), never as HTML. Each figure's cell carries data-field and
 * data-value (the number it shows, unformatted) and its row data-point (and data-rank), so a
 * test reads the page back against /result.json. A static string. */
const char *pb_live_page(void);

/* pbench report -f prometheus (a row of bench/report/format.h): the result's figures as
 * pb_live_metrics writes them with no running repeat, in Prometheus's text format, for a
 * Pushgateway or a textfile collector. The analysis is not a metric (ignored). */
struct pb_analysis;
void pb_live_report(FILE *out, const struct pb_result *result, const struct pb_analysis *analysis);

/* A history's latest figures (pbench serve history.db's /metrics, pbench history show -f
 * prometheus): per series (labels config, machine, point: its axes as text, engine,
 * fingerprint)
 * pbench_history_runs, pbench_history_newest_run_info{revision, created}, and
 * pbench_history_regression and pbench_history_suspect (0 or 1) of histories[0]'s metric;
 * then the newest run's value of each history's metric under the name /metrics gives it
 * (samples_per_s: pbench_samples_per_second, stall_pct: pbench_stall_ratio, machine_ref_ns:
 * pbench_machine_reference_seconds, ... in base units; cpu_ns_per_sample.STAGE:
 * pbench_stage_cpu_seconds_per_sample{stage}). count histories of distinct metrics, each
 * pb_history_load's. PB_OK, or PB_ERR when out could not be written. */
int pb_live_history_metrics(FILE *out, const struct pb_history *const *histories, size_t count,
                            bool openmetrics);

/* The history form of the format row: pb_live_history_metrics of the one history. */
void pb_live_history(FILE *out, const struct pb_history *history);

#endif
