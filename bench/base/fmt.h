/* The one way each kind of figure becomes text, shared by every sink
 * (bench/report/), the sentences of the analysis and the engines line
 * (bench/analyze/), so a duration, a change's unit, a setting's value and
 * an axis label read the same in the table, Markdown, HTML and SVG. They
 * sit here, below both folders, because the analysis writes sentences too.
 * Each writes into buf (truncated to size, always terminated). */
#ifndef PB_FMT_H
#define PB_FMT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A duration with 3 significant digits and its unit: "850 ns", "12.3 µs",
 * "1.20 ms", "3.46 s"; "-" when ns is not finite. */
void pb_fmt_duration(char *buf, size_t size, double ns);

/* An axis tick's duration: the value as exact as it is, in the largest
 * unit it reaches ("100 ns", "1 µs", "2.5 ms"), so round ticks stay round. */
void pb_fmt_duration_tick(char *buf, size_t size, double ns);

/* The unit of a metric's change: "pp" (percentage points) for a metric
 * that is itself a percentage (absolute: stall, utilization), else "%". */
const char *pb_fmt_change_unit(bool absolute);

/* A JSON value as a user would type it in a config or -s: a string as it
 * is, integers, reals (%g), true, false, null; a list or mapping as
 * compact JSON; "?" for NULL. */
void pb_fmt_json_value(char *buf, size_t size, const json_t *value);

/* A chart axis's label: what it shows and its unit in parentheses,
 * "CPU time per sample (µs)"; what alone when unit is NULL or "". */
void pb_fmt_axis_label(char *buf, size_t size, const char *what, const char *unit);

/* A coarse span of seconds for ETAs and plans: "45s", "2m05s", "1h30m". */
void pb_fmt_eta(double seconds, char *buf, size_t buflen);

#endif
