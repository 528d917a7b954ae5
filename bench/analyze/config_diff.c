/* Where two configs differ, in words (see config_diff.h). */
#include "bench/analyze/config_diff.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pb_json_short_text(const json_t *v, char *buf, size_t n)
{
    if (!v) {
        snprintf(buf, n, "(none)");
        return;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(buf, n, "%s", s ? s : "?");
    free(s);
}

static void diff_json(const char *path, const json_t *a, const json_t *b,
                      pb_difference_fn note, void *user);

/* One of two strings quoted from byte from on (the start of the word where
 * they first differ; "..." stands for the words before it), cut short
 * with "..." where it does not fit in size. */
static void quote_from(const char *text, size_t from, char *out, size_t size)
{
    size_t len = strlen(text + from), room = size > 10 ? size - 10 : 0;
    snprintf(out, size, "\"%s%.*s%s\"", from ? "..." : "", (int)(len < room ? len : room),
             text + from, len < room ? "" : "...");
}

/* Two strings as JSON shows them where both fit in size; else each from
 * the word where they first differ: two commands that differ in their
 * last argument show that argument, not their common start. */
static void differing_words(const json_t *a, const json_t *b, char *x, char *y, size_t size)
{
    const char *p = json_string_value(a), *q = json_string_value(b);
    if (strlen(p) + 8 < size && strlen(q) + 8 < size) {
        pb_json_short_text(a, x, size);
        pb_json_short_text(b, y, size);
        return;
    }
    size_t same = 0;
    while (p[same] && p[same] == q[same])
        same++;
    for (int words = 0; words < 2 && same > 0; words++) { /* that word and one before it */
        if (words)
            same--;
        while (same > 0 && p[same - 1] != ' ')
            same--;
    }
    quote_from(p, same, x, size);
    quote_from(q, same, y, size);
}

/* The name of a pipeline stage ({"resize": {...}}), or NULL for anything
 * else. */
static const char *stage_name(const json_t *v)
{
    void *only = json_is_object(v) && json_object_size(v) == 1 ? json_object_iter((json_t *)v)
                                                                : NULL;
    return only ? json_object_iter_key(only) : NULL;
}

/* Whether stage `name` stands in list at from or later. */
static bool stage_later(const json_t *list, size_t from, const char *name)
{
    for (size_t k = from; name && k < json_array_size(list); k++)
        if (stage_name(json_array_get(list, k)) &&
            !strcmp(stage_name(json_array_get(list, k)), name))
            return true;
    return false;
}

/* Two pipelines, stage by stage: the stages both have are diffed by their
 * options, the others named as added or removed ("pipeline[2] added:
 * color_jitter") instead of the lists' JSON cut short. */
static void diff_stages(const char *path, const json_t *a, const json_t *b,
                        pb_difference_fn note, void *user)
{
    size_t i = 0, j = 0, na = json_array_size(a), nb = json_array_size(b);
    char text[300];
    while (i < na || j < nb) {
        const char *x = i < na ? stage_name(json_array_get(a, i)) : NULL;
        const char *y = j < nb ? stage_name(json_array_get(b, j)) : NULL;
        if (x && y && strcmp(x, y) == 0) {
            char sub[256];
            snprintf(sub, sizeof(sub), "%s[%zu].%s", path, j, y);
            diff_json(sub, json_object_get(json_array_get(a, i), x),
                      json_object_get(json_array_get(b, j), y), note, user);
            i++, j++;
        } else if (j < nb && (i >= na || !stage_later(a, i, y))) {
            snprintf(text, sizeof(text), "%s[%zu] added: %s", path, j, y ? y : "?");
            note(user, text);
            j++;
        } else {
            snprintf(text, sizeof(text), "%s[%zu] removed: %s", path, i, x ? x : "?");
            note(user, text);
            i++;
        }
    }
}

static void diff_json(const char *path, const json_t *a, const json_t *b,
                      pb_difference_fn note, void *user)
{
    if ((!a && !b) || json_equal((json_t *)a, (json_t *)b))
        return; /* json_equal calls two missing values different */
    if (json_is_object(a) && json_is_object(b)) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)a, key, v)
        {
            char sub[256];
            snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "", key);
            diff_json(sub, v, json_object_get(b, key), note, user);
        }
        json_object_foreach((json_t *)b, key, v)
        {
            if (json_object_get(a, key))
                continue;
            char sub[256];
            snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "", key);
            diff_json(sub, NULL, v, note, user);
        }
        return;
    }
    if (json_is_array(a) && json_is_array(b) && stage_name(json_array_get(a, 0)) &&
        stage_name(json_array_get(b, 0))) {
        diff_stages(path, a, b, note, user);
        return;
    }
    if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++) {
            char sub[256];
            snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
            diff_json(sub, json_array_get(a, i), json_array_get(b, i), note, user);
        }
        return;
    }
    char x[120], y[120], text[300];
    if (json_is_string(a) && json_is_string(b)) {
        differing_words(a, b, x, y, sizeof(x));
    } else {
        pb_json_short_text(a, x, sizeof(x));
        pb_json_short_text(b, y, sizeof(y));
    }
    snprintf(text, sizeof(text), "%s: %s -> %s", path, x, y);
    note(user, text);
}

void pb_config_diff(const char *path, const json_t *a, const json_t *b, pb_difference_fn note,
                    void *user)
{
    diff_json(path, a, b, note, user);
}
