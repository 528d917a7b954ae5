/* Inline-SVG charts: axes with "nice" ticks (1-2-5 steps, or decades on a
 * log axis), a legend beside the plot, and three chart kinds the HTML
 * report is made of. Coordinates are written with one decimal; text is
 * escaped. */
#include "bench/report/svg.h"

#include <math.h>
#include <string.h>

#include "bench/base/fmt.h"
#include "bench/base/pb.h"

#define FONT "font-family=\"sans-serif\""
#define LEGEND_ROW 16
#define LEGEND_CHARS 60

const char *pb_svg_color(size_t i)
{
    /* Okabe-Ito, then Tableau's extras: distinguishable without red/green. */
    static const char *const colors[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
                                         "#D55E00", "#000000", "#F0E442", "#8C564B", "#7F7F7F",
                                         "#17BECF", "#BCBD22"};
    return colors[i % PB_ARRAY_LEN(colors)];
}

void pb_svg_escape(FILE *out, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if (*p >= 0x20 && *p != 0x7f)
                fputc(*p, out);
        }
    }
}

/* At most max_chars code points of text, "…" when cut. */
static void escape_cut(FILE *out, const char *text, size_t max_chars)
{
    char buf[512];
    size_t used = 0, chars = 0;
    const char *p = text ? text : "";
    for (; *p && used + 4 < sizeof(buf); p++) {
        if (((unsigned char)*p & 0xC0) != 0x80 && ++chars > max_chars)
            break;
        buf[used++] = *p;
    }
    buf[used] = '\0';
    pb_svg_escape(out, buf);
    if (*p)
        fputs("…", out);
}

/* ------------------------------------------------------------------ axes */

struct axis {
    double lo, hi;              /* data range shown (log10 of it when log) */
    bool log;
    double px0, px1;            /* pixel positions of lo and hi           */
};

static double axis_px(const struct axis *a, double v)
{
    double t = a->log ? log10(v) : v;
    return a->px0 + (t - a->lo) / (a->hi - a->lo) * (a->px1 - a->px0);
}

static bool axis_ok(const struct axis *a, double v)
{
    return isfinite(v) && (!a->log || v > 0);
}

/* A step of 1, 2 or 5 times a power of ten giving about target ticks. */
static double nice_step(double range, int target)
{
    double raw = range / target, mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

/* Widens [lo, hi] to ticks (linear) or decades (log) and a little air. */
static void axis_fit(struct axis *a, double lo, double hi, bool from_zero)
{
    if (a->log) {
        lo = log10(lo);
        hi = log10(hi);
        a->lo = floor(lo);
        a->hi = ceil(hi);
        if (a->hi <= a->lo)
            a->hi = a->lo + 1;
        return;
    }
    if (from_zero && lo > 0)
        lo = 0;
    if (hi <= lo) {
        double pad = lo != 0 ? fabs(lo) * 0.1 : 1;
        lo -= pad;
        hi += pad;
    }
    hi += (hi - lo) * 0.06; /* air above the highest point for its marker */
    double step = nice_step(hi - lo, 5);
    a->lo = floor(lo / step) * step;
    a->hi = ceil(hi / step) * step;
}

/* A tick label: durations for ns axes, else 3 significant digits with k/M. */
static void tick_label(char *buf, size_t size, double v, bool ns)
{
    if (ns) {
        pb_fmt_duration_tick(buf, size, v);
    } else if (fabs(v) >= 1e6) {
        snprintf(buf, size, "%gM", v / 1e6);
    } else if (fabs(v) >= 1e4) {
        snprintf(buf, size, "%gk", v / 1e3);
    } else {
        snprintf(buf, size, "%.4g", fabs(v) < 1e-12 ? 0.0 : v);
    }
}

/* Tick values of an axis into ticks (at most max); returns the count. */
static size_t axis_ticks(const struct axis *a, double *ticks, size_t max)
{
    size_t n = 0;
    if (a->log) {
        double decades = a->hi - a->lo;
        int every = decades > 8 ? 2 : 1;
        for (double e = a->lo; e <= a->hi + 1e-9 && n < max; e += every)
            ticks[n++] = pow(10, e);
        return n;
    }
    double step = nice_step(a->hi - a->lo, 5);
    for (double v = a->lo; v <= a->hi + step * 1e-6 && n < max; v += step)
        ticks[n++] = v;
    return n;
}

static void text_at(FILE *out, double x, double y, const char *anchor, int size, const char *extra,
                    const char *text)
{
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\" %s%s>", x, y,
            anchor, size, FONT, extra ? extra : "");
    pb_svg_escape(out, text);
    fputs("</text>\n", out);
}

static void svg_open(FILE *out, int width, int height, const char *title)
{
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" role=\"img\">\n<title>",
            width, height, width, height);
    pb_svg_escape(out, title);
    fprintf(out, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
    text_at(out, 12, 20, "start", 14, " font-weight=\"bold\"", title);
}

static size_t text_chars(const char *text);

/* Gridlines, ticks and tick labels of the x (horizontal) and y axes. */
static void draw_axes(FILE *out, const struct axis *x, const struct axis *y, bool y_ticks, bool x_ns,
                      const char *const *x_names, size_t x_name_count, const char *x_label,
                      const char *y_label)
{
    double ticks[32];
    char label[64];
    double top = y->px1, bottom = y->px0, left = x->px0, right = x->px1;
    size_t n = y_ticks ? axis_ticks(y, ticks, PB_ARRAY_LEN(ticks)) : 0;
    for (size_t i = 0; i < n; i++) {
        double py = axis_px(y, ticks[i]);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
                left, py, right, py);
        tick_label(label, sizeof(label), ticks[i], false);
        text_at(out, left - 6, py + 4, "end", 11, NULL, label);
    }
    if (x_names) {
        /* Room for a name of the longest length at 6.5 px a character. */
        size_t longest = 1;
        for (size_t i = 0; i < x_name_count; i++)
            longest = text_chars(x_names[i]) > longest ? text_chars(x_names[i]) : longest;
        double slot = x_name_count > 1 ? (right - left) / (double)x_name_count : right - left;
        size_t every = (size_t)ceil(((double)longest * 6.5 + 10) / slot);
        every = every ? every : 1;
        for (size_t i = 0; i < x_name_count; i++) {
            double px = axis_px(x, (double)i);
            fprintf(out,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
                    px, top, px, bottom);
            /* The last name always; the one before it only with room. */
            bool last = i + 1 == x_name_count;
            if (!last && (i % every != 0 || (x_name_count - 1 - i) < every))
                continue;
            char cut[64];
            snprintf(cut, sizeof(cut), "%s", x_names[i]);
            text_at(out, px, bottom + 16, "middle", 11, NULL, cut);
        }
    } else {
        n = axis_ticks(x, ticks, PB_ARRAY_LEN(ticks));
        for (size_t i = 0; i < n; i++) {
            double px = axis_px(x, ticks[i]);
            fprintf(out,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
                    px, top, px, bottom);
            tick_label(label, sizeof(label), ticks[i], x_ns);
            text_at(out, px, bottom + 16, "middle", 11, NULL, label);
        }
        if (x->log) /* minor ticks at 2 and 5 of each decade */
            for (double e = x->lo; e < x->hi; e++)
                for (int m = 2; m <= 5; m += 3) {
                    double px = axis_px(x, m * pow(10, e));
                    fprintf(out,
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                            "stroke=\"#f2f2f2\"/>\n",
                            px, top, px, bottom);
                }
    }
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#888\"/>\n",
            left, top, right - left, bottom - top);
    text_at(out, (left + right) / 2, bottom + 36, "middle", 12, NULL, x_label);
    if (y_label) {
        char extra[96];
        double cx = 16, cy = (top + bottom) / 2;
        snprintf(extra, sizeof(extra), " transform=\"rotate(-90 %.1f %.1f)\"", cx, cy);
        text_at(out, cx, cy, "middle", 12, extra, y_label);
    }
}

/* Code points of text, at most LEGEND_CHARS. */
static size_t text_chars(const char *text)
{
    size_t n = 0;
    for (const char *p = text ? text : ""; *p && n < LEGEND_CHARS; p++)
        n += ((unsigned char)*p & 0xC0) != 0x80;
    return n;
}

/* The width a legend of these labels takes beside a plot. */
static int legend_width(const struct pb_svg_series *series, size_t count)
{
    size_t chars = 8;
    for (size_t s = 0; s < count; s++)
        if (text_chars(series[s].label) > chars)
            chars = text_chars(series[s].label);
    return 48 + (int)(chars * 6.4);
}

/* One legend row: a swatch in color and the label, at row (0-based). */
static void legend_row(FILE *out, double x, double y0, size_t row, const char *color,
                       bool block, const char *label)
{
    double y = y0 + (double)row * LEGEND_ROW;
    if (block)
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\"/>\n", x,
                y - 9, color);
    else
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2.5\"/>\n",
                x, y - 4, x + 16, y - 4, color);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" %s>", x + 22, y, FONT);
    escape_cut(out, label, LEGEND_CHARS);
    fputs("</text>\n", out);
}

/* ------------------------------------------------------------ line chart */

/* The range of the chart's plottable points (error bars included) and
 * rules, widened into xlo..xhi and ylo..yhi; they stay infinite when there
 * is nothing to plot. */
static void line_chart_extent(const struct pb_svg_chart *c, const struct axis *x,
                              const struct axis *y, double *xlo, double *xhi, double *ylo,
                              double *yhi)
{
    for (size_t s = 0; s < c->series_count; s++) {
        const struct pb_svg_series *se = &c->series[s];
        for (size_t i = 0; i < se->count; i++) {
            if (!axis_ok(x, se->x[i]) || !axis_ok(y, se->y[i]))
                continue;
            double err = se->y_err && isfinite(se->y_err[i]) ? se->y_err[i] : 0;
            *xlo = fmin(*xlo, se->x[i]);
            *xhi = fmax(*xhi, se->x[i]);
            *ylo = fmin(*ylo, y->log ? se->y[i] : se->y[i] - err);
            *yhi = fmax(*yhi, se->y[i] + err);
        }
    }
    for (size_t r = 0; r < c->hrule_count; r++)
        if (axis_ok(y, c->hrules[r].at)) {
            *ylo = fmin(*ylo, c->hrules[r].at);
            *yhi = fmax(*yhi, c->hrules[r].at);
        }
}

/* The dashed horizontal and vertical rules, each with its label. */
static void draw_rules(FILE *out, const struct pb_svg_chart *c, const struct axis *x,
                       const struct axis *y)
{
    for (size_t r = 0; r < c->hrule_count; r++) {
        if (!axis_ok(y, c->hrules[r].at))
            continue;
        double py = axis_px(y, c->hrules[r].at);
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                "stroke-dasharray=\"5 4\"/>\n",
                x->px0, py, x->px1, py);
        bool start = c->hrules[r].label_at_start;
        text_at(out, start ? x->px0 + 4 : x->px1 - 4, py - 4, start ? "start" : "end", 10,
                " fill=\"#333\"", c->hrules[r].label);
    }
    for (size_t r = 0; r < c->vrule_count; r++) {
        if (!axis_ok(x, c->vrules[r].at))
            continue;
        double px = axis_px(x, c->vrules[r].at);
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                "stroke-dasharray=\"5 4\"/>\n",
                px, y->px1, px, y->px0);
        bool right_half = px > (x->px0 + x->px1) / 2;
        text_at(out, right_half ? px - 4 : px + 4, y->px1 + 12 + 13 * (double)r,
                right_half ? "end" : "start", 10, " fill=\"#333\"", c->vrules[r].label);
    }
}

/* What sits on point i of a series: its error bar, its dot, and the ring
 * and label of the marked point. */
static void draw_point(FILE *out, const struct pb_svg_series *se, size_t i, const char *color,
                       const struct axis *x, const struct axis *y)
{
    double px = axis_px(x, se->x[i]), py = axis_px(y, se->y[i]);
    double err = se->y_err && isfinite(se->y_err[i]) ? se->y_err[i] : 0;
    if (err > 0 && !se->band && axis_ok(y, se->y[i] - err)) {
        double a = axis_px(y, se->y[i] - err), b = axis_px(y, se->y[i] + err);
        fprintf(out,
                "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" stroke=\"%s\" "
                "stroke-width=\"1.5\"/>\n",
                px, a, b, px - 4, a, px + 4, px - 4, b, px + 4, color);
    }
    if (se->dots)
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", px, py, color);
    if ((int)i == se->marked) {
        fprintf(out,
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\" stroke=\"#C00000\" "
                "stroke-width=\"2.5\"/>\n",
                px, py);
        text_at(out, px, py - 12, "middle", 11, " fill=\"#C00000\" font-weight=\"bold\"",
                se->mark_label ? se->mark_label : "");
    }
}

/* A band series' noise: a translucent area from y - err to y + err along
 * the plottable points with a known err (none for a lone point: its ring
 * is its bar), drawn under the line so the line stays on top. */
static void draw_band(FILE *out, const struct pb_svg_series *se, const char *color,
                      const struct axis *x, const struct axis *y)
{
    size_t drawn = 0;
    for (size_t i = 0; i < se->count; i++)
        drawn += axis_ok(x, se->x[i]) && axis_ok(y, se->y[i]) && se->y_err &&
                 isfinite(se->y_err[i]) && axis_ok(y, se->y[i] - se->y_err[i]);
    if (drawn < 2)
        return;
    fprintf(out, "<polygon fill=\"%s\" fill-opacity=\"0.18\" stroke=\"none\" points=\"", color);
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < se->count; k++) {
            size_t i = pass == 0 ? k : se->count - 1 - k;
            double err = se->y_err[i];
            if (!axis_ok(x, se->x[i]) || !axis_ok(y, se->y[i]) || !isfinite(err) ||
                !axis_ok(y, se->y[i] - err))
                continue;
            fprintf(out, "%.1f,%.1f ", axis_px(x, se->x[i]),
                    axis_px(y, pass == 0 ? se->y[i] + err : se->y[i] - err));
        }
    fputs("\"/>\n", out);
}

/* One series: the line through its plottable points, then each point. */
static void draw_series(FILE *out, const struct pb_svg_series *se, const char *color,
                        const struct axis *x, const struct axis *y)
{
    if (se->band && se->y_err)
        draw_band(out, se, color, x, y);
    fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
    for (size_t i = 0; i < se->count; i++)
        if (axis_ok(x, se->x[i]) && axis_ok(y, se->y[i]))
            fprintf(out, "%.1f,%.1f ", axis_px(x, se->x[i]), axis_px(y, se->y[i]));
    fputs("\"/>\n", out);
    for (size_t i = 0; i < se->count; i++)
        if (axis_ok(x, se->x[i]) && axis_ok(y, se->y[i]))
            draw_point(out, se, i, color, x, y);
}

void pb_svg_line_chart(FILE *out, const struct pb_svg_chart *c)
{
    int width = c->width ? c->width : 640, height = c->height ? c->height : 340;
    bool legend = c->series_count > 1 || (c->series_count == 1 && c->series[0].label);
    int plot_right = width - (legend ? legend_width(c->series, c->series_count) : 20);
    int needed = 40 + (int)c->series_count * LEGEND_ROW + 60;
    if (legend && needed > height)
        height = needed;
    struct axis x = {.log = c->x_log, .px0 = 70, .px1 = plot_right};
    struct axis y = {.log = c->y_log, .px0 = height - 56, .px1 = 36};
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    line_chart_extent(c, &x, &y, &xlo, &xhi, &ylo, &yhi);
    svg_open(out, width, height, c->title);
    if (!isfinite(xlo) || !isfinite(ylo)) {
        text_at(out, width / 2.0, height / 2.0, "middle", 12, NULL, "no data to plot");
        fputs("</svg>\n", out);
        return;
    }
    if (c->x_names) {
        x.lo = -0.5;
        x.hi = (double)(c->x_name_count ? c->x_name_count : 1) - 0.5;
    } else {
        axis_fit(&x, xlo, xhi, false);
    }
    axis_fit(&y, ylo, yhi, c->y_from_zero);
    if (c->y_max > 0 && !y.log)
        y.hi = c->y_max;
    draw_axes(out, &x, &y, true, c->x_ns, c->x_names, c->x_name_count, c->x_label, c->y_label);
    draw_rules(out, c, &x, &y);
    for (size_t s = 0; s < c->series_count; s++)
        draw_series(out, &c->series[s], pb_svg_color(s), &x, &y);
    if (legend)
        for (size_t s = 0; s < c->series_count; s++)
            legend_row(out, plot_right + 16, 48, s, pb_svg_color(s), false, c->series[s].label);
    fputs("</svg>\n", out);
}

/* ----------------------------------------------------------- stacked bars */

void pb_svg_stacked_bars(FILE *out, const struct pb_svg_bars *b)
{
    int width = b->width ? b->width : 900, name_w = 230, bar_h = 18, gap = 8;
    int legend_rows = (int)b->layer_count;
    int plot_h = (int)b->bar_count * (bar_h + gap) + gap;
    int height = 36 + (plot_h > legend_rows * LEGEND_ROW ? plot_h : legend_rows * LEGEND_ROW) + 56;
    double hi = 0;
    for (size_t i = 0; i < b->bar_count; i++) {
        double sum = 0;
        for (size_t l = 0; l < b->layer_count; l++) {
            double v = b->values[i * b->layer_count + l];
            sum += isfinite(v) && v > 0 ? v : 0;
        }
        hi = fmax(hi, sum);
    }
    struct axis x = {.px0 = name_w, .px1 = width - 200};
    struct axis y = {.lo = 0, .hi = 1, .px0 = 36 + plot_h, .px1 = 36};
    svg_open(out, width, height, b->title);
    axis_fit(&x, 0, hi > 0 ? hi : 1, true);
    draw_axes(out, &x, &y, false, false, NULL, 0, b->x_label, NULL);
    for (size_t i = 0; i < b->bar_count; i++) {
        double top = 36 + gap + (double)i * (bar_h + gap), left = x.px0;
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\" %s%s>",
                x.px0 - 8, top + bar_h - 5, FONT,
                (int)i == b->highlighted ? " font-weight=\"bold\" fill=\"#C00000\"" : "");
        escape_cut(out, b->bar_names[i], 36);
        fputs("</text>\n", out);
        for (size_t l = 0; l < b->layer_count; l++) {
            double v = b->values[i * b->layer_count + l];
            if (!isfinite(v) || v <= 0)
                continue;
            double w = axis_px(&x, v) - x.px0;
            fprintf(out,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>",
                    left, top, w, bar_h, pb_svg_color(l));
            pb_svg_escape(out, b->layer_names[l]);
            fprintf(out, ": %.4g</title></rect>\n", v);
            left += w;
        }
    }
    for (size_t l = 0; l < b->layer_count; l++)
        legend_row(out, width - 180, 48, l, pb_svg_color(l), true, b->layer_names[l]);
    fputs("</svg>\n", out);
}

/* ---------------------------------------------------------------- forest */

void pb_svg_forest_chart(FILE *out, const struct pb_svg_forest *f)
{
    static const char *const verdict_color[] = {"#7F7F7F", "#009E73", "#D55E00", "#E69F00"};
    static const char *const verdict_name[] = {"same", "improved", "regressed", "ambiguous"};
    /* The names' column fits the longest (11 px text, about 6.6 px a
     * character), the plot keeps its width. */
    size_t longest = 0;
    for (size_t i = 0; i < f->row_count; i++)
        longest = f->rows[i].name && strlen(f->rows[i].name) > longest ? strlen(f->rows[i].name)
                                                                        : longest;
    int name_w = (int)fmax(200, 16 + 6.6 * (double)longest);
    int width = (f->width ? f->width : 900) + name_w - 200, row_h = 26;
    int plot_h = (int)f->row_count * row_h + 10;
    int height = 36 + plot_h + 56;
    double lo = -f->band, hi = f->band;
    for (size_t i = 0; i < f->row_count; i++) {
        const struct pb_svg_interval *r = &f->rows[i];
        if (isfinite(r->low))
            lo = fmin(lo, r->low);
        if (isfinite(r->high))
            hi = fmax(hi, r->high);
        if (isfinite(r->value)) {
            lo = fmin(lo, r->value);
            hi = fmax(hi, r->value);
        }
    }
    double span = fmax(hi - lo, 1);
    struct axis x = {.px0 = name_w, .px1 = width - 130};
    struct axis y = {.lo = 0, .hi = 1, .px0 = 36 + plot_h, .px1 = 36};
    svg_open(out, width, height, f->title);
    axis_fit(&x, lo - span * 0.05, hi + span * 0.05, false);
    if (f->band > 0)
        fprintf(out,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#eeeeee\"/>\n",
                axis_px(&x, -f->band), y.px1, axis_px(&x, f->band) - axis_px(&x, -f->band),
                y.px0 - y.px1);
    draw_axes(out, &x, &y, false, false, NULL, 0, f->x_label, NULL);
    double zero = axis_px(&x, 0);
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", zero,
            y.px1, zero, y.px0);
    for (size_t i = 0; i < f->row_count; i++) {
        const struct pb_svg_interval *r = &f->rows[i];
        double cy = 36 + 5 + (double)i * row_h + row_h / 2.0;
        int v = r->verdict >= 0 && r->verdict < 4 ? r->verdict : 3;
        text_at(out, x.px0 - 8, cy + 4, "end", 11, NULL, r->name);
        if (isfinite(r->low) && isfinite(r->high))
            fprintf(out,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                    "stroke-width=\"3\"/>\n",
                    axis_px(&x, r->low), cy, axis_px(&x, r->high), cy, verdict_color[v]);
        if (isfinite(r->value))
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>\n",
                    axis_px(&x, r->value), cy, verdict_color[v]);
        char extra[64];
        snprintf(extra, sizeof(extra), " fill=\"%s\" font-weight=\"bold\"", verdict_color[v]);
        text_at(out, x.px1 + 10, cy + 4, "start", 11, extra, r->label ? r->label : verdict_name[v]);
    }
    fputs("</svg>\n", out);
}
