/* Figures as text (see fmt.h). */
#include "bench/base/fmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/base/pb.h"

static const char *const duration_units[] = {"ns", "µs", "ms", "s"};

void pb_fmt_duration(char *buf, size_t size, double ns)
{
    if (!isfinite(ns)) {
        snprintf(buf, size, "-");
        return;
    }
    double v = ns;
    size_t unit = 0;
    while (unit + 1 < PB_ARRAY_LEN(duration_units) && fabs(v) >= 999.5) {
        v /= 1000;
        unit++;
    }
    if (unit == 0 || fabs(v) >= 99.95)
        snprintf(buf, size, "%.0f %s", v, duration_units[unit]);
    else if (fabs(v) >= 9.995)
        snprintf(buf, size, "%.1f %s", v, duration_units[unit]);
    else
        snprintf(buf, size, "%.2f %s", v, duration_units[unit]);
}

void pb_fmt_duration_tick(char *buf, size_t size, double ns)
{
    size_t unit = 0;
    while (unit + 1 < PB_ARRAY_LEN(duration_units) && fabs(ns) >= 1000) {
        ns /= 1000;
        unit++;
    }
    snprintf(buf, size, "%g %s", ns, duration_units[unit]);
}

const char *pb_fmt_change_unit(bool absolute)
{
    return absolute ? "pp" : "%";
}

void pb_fmt_json_value(char *buf, size_t size, const json_t *value)
{
    if (!value) {
        snprintf(buf, size, "?");
    } else if (json_is_string(value)) {
        snprintf(buf, size, "%s", json_string_value(value));
    } else if (json_is_integer(value)) {
        snprintf(buf, size, "%lld", (long long)json_integer_value(value));
    } else if (json_is_real(value)) {
        snprintf(buf, size, "%g", json_real_value(value));
    } else if (json_is_boolean(value)) {
        snprintf(buf, size, "%s", json_is_true(value) ? "true" : "false");
    } else if (json_is_null(value)) {
        snprintf(buf, size, "null");
    } else {
        char *text = json_dumps(value, JSON_COMPACT);
        snprintf(buf, size, "%s", text ? text : "?");
        free(text);
    }
}

void pb_fmt_axis_label(char *buf, size_t size, const char *what, const char *unit)
{
    if (unit && unit[0])
        snprintf(buf, size, "%s (%s)", what, unit);
    else
        snprintf(buf, size, "%s", what);
}

void pb_fmt_eta(double s, char *buf, size_t buflen)
{
    if (s < 60)
        snprintf(buf, buflen, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, buflen, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, buflen, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}
