/* Small inline-SVG charts for the HTML report (bench/report/html.c): line charts
 * with error bars, stacked horizontal bars and interval ("forest") charts,
 * each with axes, ticks, units and a legend. Plain data in, SVG text out:
 * nothing here knows about results. Text is XML-escaped; numbers that are
 * not finite are left out of a chart rather than drawn. */
#ifndef PB_SVG_H
#define PB_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One line of a line chart. x and y hold count values; y_err (may be NULL)
 * the half-width of a noise bar at each point. marked: the index of a point
 * to ring and label with mark_label (e.g. "recommended"), -1 for none. */
struct pb_svg_series {
    const char *label;
    size_t count;
    const double *x, *y, *y_err;
    int marked;
    const char *mark_label;
    bool dots;                  /* draw a dot at each point                */
    /* Draw y_err as a shaded band around the line (a run's noise over
     * time) instead of a bar at each point. */
    bool band;
};

/* A horizontal or vertical reference line with a short label. A vertical
 * rule's label sits at the top beside the line, on its left where the
 * line is in the right half of the plot; a horizontal rule's at its right
 * end (or left, label_at_start), above the line. */
struct pb_svg_rule {
    double at;
    const char *label;
    bool label_at_start;        /* a horizontal rule's label at its left end */
};

struct pb_svg_chart {
    const char *title, *x_label, *y_label; /* labels carry the units      */
    int width, height;          /* 0: 640 x 340                           */
    bool x_log, y_log;          /* base-10 axes (non-positive values left out) */
    bool y_from_zero;           /* a linear y axis that starts at 0       */
    bool x_ns;                  /* x values are nanoseconds: ticks "10 µs" */
    double y_max;               /* > 0: a linear y axis up to exactly this */
    /* Categorical x: names of the positions x = 0, 1, ...; NULL for a
     * numeric axis. Where they would crowd, every k-th is written (the
     * first and the last always). */
    const char *const *x_names;
    size_t x_name_count;
    size_t series_count;
    const struct pb_svg_series *series;
    size_t hrule_count, vrule_count;
    const struct pb_svg_rule *hrules, *vrules;
};

/* Writes c as one <svg> element. */
void pb_svg_line_chart(FILE *out, const struct pb_svg_chart *c);

/* Stacked horizontal bars: bar_count bars (one per name, top to bottom),
 * each the sum of layer_count layers; values is bar-major
 * (values[bar * layer_count + layer]), in the unit x_label names. */
struct pb_svg_bars {
    const char *title, *x_label;
    int width;                  /* 0: 900; the height follows the bars    */
    size_t bar_count, layer_count;
    const char *const *bar_names;
    const char *const *layer_names;
    const double *values;
    int highlighted;            /* a bar drawn with a marker, -1 for none  */
};

void pb_svg_stacked_bars(FILE *out, const struct pb_svg_bars *b);

/* Intervals on one horizontal axis, one row each (a forest plot): a dot at
 * value, a bar from low to high, coloured by verdict (0 same, 1 better,
 * 2 worse, 3 undecided). A band of +-band around 0 is shaded (the
 * practical threshold), and 0 is drawn. */
struct pb_svg_interval {
    const char *name;
    double value, low, high;    /* NAN: nothing drawn (not measured)       */
    int verdict;                /* its colour: same, improved, regressed,
                                   else undecided                           */
    const char *label;          /* the verdict as written; NULL: its name  */
};

struct pb_svg_forest {
    const char *title, *x_label;
    int width;                  /* 0: 900                                  */
    double band;
    size_t row_count;
    const struct pb_svg_interval *rows;
};

void pb_svg_forest_chart(FILE *out, const struct pb_svg_forest *f);

/* text with &, <, >, " and ' escaped, control characters dropped. */
void pb_svg_escape(FILE *out, const char *text);

/* The colour of series i in every chart (a colour-blind safe cycle). */
const char *pb_svg_color(size_t i);

#endif
