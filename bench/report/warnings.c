/* Warnings grouped by their cause (see warnings.h). */
#include "bench/report/warnings.h"

#include <ctype.h>
#include <string.h>

/* The end of the number at text: its digits, with at most one '.' between
 * two of them. */
static const char *number_end(const char *text)
{
    bool dot = false;
    for (;; text++) {
        if (isdigit((unsigned char)*text))
            continue;
        if (*text == '.' && !dot && isdigit((unsigned char)text[1])) {
            dot = true;
            continue;
        }
        return text;
    }
}

bool pb_warning_same_cause(const char *a, const char *b)
{
    while (*a && *b) {
        bool x = isdigit((unsigned char)*a), y = isdigit((unsigned char)*b);
        if (x != y)
            return false;
        if (x) {
            a = number_end(a);
            b = number_end(b);
        } else if (*a++ != *b++) {
            return false;
        }
    }
    return *a == *b;
}

/* Whether point i's warnings hold one of text's cause, among its first
 * count. */
static bool point_has_cause(const struct pb_point_result *p, int count, const char *text)
{
    for (int v = 0; v < count && v < p->warning_count; v++)
        if (pb_warning_same_cause(p->warnings[v], text))
            return true;
    return false;
}

bool pb_warning_seen(const struct pb_result *result, size_t i, int w, size_t *alike)
{
    const char *text = result->points[i].warnings[w];
    for (size_t j = 0; j < i; j++)
        if (point_has_cause(&result->points[j], PB_MAX_WARNINGS, text))
            return true;
    if (point_has_cause(&result->points[i], w, text))
        return true;
    *alike = 0;
    for (size_t j = i + 1; j < result->point_count; j++)
        *alike += point_has_cause(&result->points[j], PB_MAX_WARNINGS, text);
    return false;
}
