/* Where two configs (or any two JSON values) differ, in words, one
 * difference at a time: "loader.workers: 2 -> 4", and two pipelines stage
 * by stage, "pipeline[2] added: color_jitter", rather than two lists of
 * JSON cut short. compare lists them as setting changes or as what makes
 * two results incompatible; history as what broke a series. */
#ifndef PB_CONFIG_DIFF_H
#define PB_CONFIG_DIFF_H

#include <stddef.h>

#include <jansson.h>

/* Called once per difference with its text (valid during the call). */
typedef void (*pb_difference_fn)(void *user, const char *text);

/* Calls note for every place a and b differ under path ("" for the top;
 * keys are joined with '.'); a value missing on one side is "(none)". */
void pb_config_diff(const char *path, const json_t *a, const json_t *b, pb_difference_fn note,
                    void *user);

/* v as compact JSON in buf (cut at n), "(none)" for NULL. */
void pb_json_short_text(const json_t *v, char *buf, size_t n);

#endif
