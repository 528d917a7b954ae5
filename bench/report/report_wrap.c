/* The rows of a wrapped training job (bench/report/report_wrap.h), read from
 * the point's engine object: one account per repeat under "jobs", the last
 * shown. */
#include "bench/report/report_wrap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/analyze/straggler.h"
#include "bench/base/engine_row.h"
#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/result/figures.h"

/* "num_workers 2, batch_size 32, pin_memory false" from a loader's args, and
 * what pbench changed ("num_workers 2 in the script, 4 under pbench"). */
static void loader_settings(const json_t *loader, char *buf, size_t buflen)
{
    static const char *const shown[][2] = {{"workers", "num_workers"},
                                           {"batch_size", "batch_size"},
                                           {"prefetch_factor", "prefetch_factor"},
                                           {"pin_memory", "pin_memory"},
                                           {"persistent_workers", "persistent_workers"}};
    const json_t *args = json_object_get(loader, "args");
    const json_t *changed = json_object_get(loader, "changed");
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < PB_ARRAY_LEN(shown) && used < buflen; k++) {
        const json_t *v = json_object_get(args, shown[k][0]);
        char text[64];
        if (json_is_integer(v))
            snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
        else if (json_is_boolean(v))
            snprintf(text, sizeof text, "%s", json_is_true(v) ? "true" : "false");
        else
            continue;
        const json_t *was = json_array_get(json_object_get(changed, shown[k][1]), 0);
        char before[64] = "";
        if (json_is_integer(was))
            snprintf(before, sizeof before, " (%lld in the script)",
                     (long long)json_integer_value(was));
        else if (json_is_boolean(was))
            snprintf(before, sizeof before, " (%s in the script)",
                     json_is_true(was) ? "true" : "false");
        else if (was)
            snprintf(before, sizeof before, " (the script's default)");
        used += (size_t)snprintf(buf + used, buflen - used, "%s%s %s%s", used ? ", " : "",
                                 shown[k][1], text, before);
    }
}

/* A row per worker process of the measured DataLoader: its batches, its
 * samples' CPU each and how much of the measured window it was building. */
static void worker_rows(struct pb_table *t, const json_t *workers)
{
    size_t i;
    const json_t *w;
    json_array_foreach(workers, i, w)
    {
        /* No figure where its samples were not timed (--overhead's paired run). */
        char cpu[64] = "CPU per sample not timed", ns_text[32];
        double ns = pb_worker_cpu_ns_per_sample(w);
        if (!isnan(ns)) {
            pb_fmt_duration(ns_text, sizeof ns_text, ns);
            snprintf(cpu, sizeof cpu, "%s CPU per sample", ns_text);
        }
        json_int_t id = json_integer_value(json_object_get(w, "worker"));
        pb_table_add(t, id < 0 ? "loop's process" : "worker %lld", (long long)id);
        char pid[40] = ""; /* the loop's process may have none recorded */
        json_int_t number = json_integer_value(json_object_get(w, "pid"));
        if (number > 0)
            snprintf(pid, sizeof pid, "pid %lld: ", (long long)number);
        pb_table_add(t, "%s%lld batches, %lld samples, %s, building "
                        "batches %.0f%% of the window",
                     pid,
                     (long long)json_integer_value(json_object_get(w, "batches")),
                     (long long)json_integer_value(json_object_get(w, "samples")), cpu,
                     json_number_value(json_object_get(w, "busy_pct")));
    }
}

/* ", step 12 ms a batch, its loader 61 samples/s, top stage getitem, 1.2 ms
 * CPU per sample": what a rank row adds for the straggler line, where the
 * relay measured it. */
static void rank_detail(const json_t *r, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    const json_t *step = json_object_get(r, "step_ms");
    const json_t *rate = json_object_get(r, "loader_samples_per_s");
    const json_t *top = json_object_get(r, "top_stage");
    const json_t *cpu = json_object_get(r, "cpu_ns_per_sample");
    char text[32];
    if (json_is_number(step) && used < size) {
        pb_fmt_duration(text, sizeof text, json_number_value(step) * 1e6);
        used += (size_t)snprintf(buf + used, size - used, ", step %s a batch", text);
    }
    if (json_is_number(rate) && used < size)
        used += (size_t)snprintf(buf + used, size - used, ", its loader %.1f samples/s",
                                 json_number_value(rate));
    if (json_is_string(top) && used < size)
        used += (size_t)snprintf(buf + used, size - used, ", top stage %s",
                                 json_string_value(top));
    if (json_is_number(cpu) && used < size) {
        pb_fmt_duration(text, sizeof text, json_number_value(cpu));
        snprintf(buf + used, size - used, ", %s CPU per sample", text);
    }
}

/* The ranks of a job a launcher started: each one's busiest DataLoader over
 * the measured window, the slowest named, the imbalance, and the straggler
 * with its cause (bench/analyze/straggler.h). */
static void rank_rows(struct pb_table *t, const json_t *ranks)
{
    size_t n = json_array_size(ranks), i;
    if (n < 2)
        return;
    const json_t *r, *slowest = NULL, *fastest = NULL;
    double total = 0;
    json_array_foreach(ranks, i, r)
    {
        double rate = json_number_value(json_object_get(r, "samples_per_s"));
        total += rate;
        if (!slowest || rate < json_number_value(json_object_get(slowest, "samples_per_s")))
            slowest = r;
        if (!fastest || rate > json_number_value(json_object_get(fastest, "samples_per_s")))
            fastest = r;
        char detail[256];
        rank_detail(r, detail, sizeof detail);
        pb_table_add(t, "rank %lld", (long long)json_integer_value(json_object_get(r, "rank")));
        const char *host = json_string_value(json_object_get(r, "host")); /* its machine */
        pb_table_add(t, "%.1f samples/s, stall %.1f %%%s, %lld batches (%s%spid %lld, %s)", rate,
                     json_number_value(json_object_get(r, "stall_pct")), detail,
                     (long long)json_integer_value(json_object_get(r, "batches")),
                     host ? host : "", host ? ", " : "",
                     (long long)json_integer_value(json_object_get(r, "pid")),
                     json_string_value(json_object_get(r, "site")));
    }
    double slow = json_number_value(json_object_get(slowest, "samples_per_s"));
    struct pb_straggler s;
    pb_straggler_of(ranks, &s);
    /* In a synchronous job every rank takes batches at the pace of the
     * slowest: the slowest is then the straggler, not the lowest samples/s. */
    long long slowest_rank = s.kind == PB_STRAGGLER_ONE
                                 ? s.rank
                                 : (long long)json_integer_value(json_object_get(slowest, "rank"));
    pb_table_add(t, "ranks");
    pb_table_add(t, "%zu, %.1f samples/s together; slowest rank %lld%s, imbalance %.2fx (fastest / "
                    "slowest samples/s); the figures here are rank 0's",
                 n, total, slowest_rank, s.kind == PB_STRAGGLER_ONE ? " (the straggler)" : "",
                 slow > 0 ? json_number_value(json_object_get(fastest, "samples_per_s")) / slow
                          : 0);
    /* A clause a line: the sentence is longer than a cell. */
    const char *at = s.kind != PB_STRAGGLER_NONE ? s.sentence : NULL;
    for (bool first = true; at && *at; first = false) {
        const char *end = strstr(at, "; ");
        int len = end ? (int)(end - at) : (int)strlen(at);
        pb_table_add(t, "%s", first ? "straggler" : "");
        pb_table_add(t, "%.*s", len, at);
        at = end ? end + 2 : NULL;
    }
}

void pb_report_wrap_summary(struct pb_table *t, const struct pb_point_result *p)
{
    const json_t *jobs = json_object_get(p->engine, "jobs");
    const struct pb_engine_row *row =
        pb_engine_row_named(json_string_value(json_object_get(p->engine, "name")));
    if (!row || !row->job_sizes || json_array_size(jobs) == 0)
        return;
    const json_t *job = json_array_get(jobs, json_array_size(jobs) - 1);
    const char *command = json_string_value(json_object_get(job, "command"));
    const char *ended = json_string_value(json_object_get(job, "ended"));
    json_int_t after = json_integer_value(json_object_get(job, "lines_after_the_end"));
    char hidden[96] = "";
    if (after > 0)
        snprintf(hidden, sizeof hidden, "; its %lld line%s of output after that: in the result",
                 (long long)after, after == 1 ? "" : "s");
    pb_table_add(t, "job");
    pb_table_add(t, "%s  (%s%s%s)", command ? command : "?", ended ? ended : "?", hidden,
                 json_array_size(jobs) > 1 ? "; the last of its runs" : "");
    const json_t *loaders = json_object_get(job, "loaders");
    size_t others = 0;
    for (size_t i = 0; i < json_array_size(loaders); i++) {
        const json_t *l = json_array_get(loaders, i);
        if (!json_is_true(json_object_get(l, "measured"))) {
            /* another rank's copy of it has the rank's row */
            const json_t *rank = json_object_get(l, "rank");
            others += !json_is_integer(rank) || json_integer_value(rank) == 0;
            continue;
        }
        const char *site = json_string_value(json_object_get(l, "site"));
        const char *dataset = json_string_value(json_object_get(l, "dataset"));
        const char *context = json_string_value(json_object_get(l, "context"));
        char settings[400];
        loader_settings(l, settings, sizeof settings);
        pb_table_add(t, "DataLoader");
        pb_table_add(t, "%s  (%s; %s; workers by %s)", site ? site : "?",
                     dataset ? dataset : "?", settings, context ? context : "?");
    }
    worker_rows(t, json_object_get(job, "workers"));
    rank_rows(t, json_object_get(job, "rank_rows"));
    if (others > 0) {
        pb_table_add(t, "other loaders");
        pb_table_add(t, "%zu not measured (the result's points[].engine.jobs lists them; "
                        "pbench wrap --loader FILE:LINE picks one)", others);
    }
}

bool pb_report_wrap_loader(FILE *out, const struct pb_result *result)
{
    if (result->point_count == 0 || !pb_point_wrapped(result, 0))
        return false;
    const char *set = json_string_value(pb_result_config_value(result, "wrap.set"));
    fprintf(out, "loader: the job's own%s", set && set[0] ? ", with" : "");
    char keys[256], *save = NULL;
    pb_strlcpy(keys, set ? set : "", sizeof keys);
    for (char *k = strtok_r(keys, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        char path[300], value[64], last[64] = "";
        snprintf(path, sizeof(path), "loader.%s", k);
        fprintf(out, " %s=", k);
        for (size_t i = 0; i < result->point_count; i++) { /* a swept key: its values */
            pb_fmt_json_value(value, sizeof(value), pb_point_setting(result, i, path));
            if (strcmp(value, last) != 0)
                fprintf(out, "%s%s", last[0] ? "," : "", value);
            pb_strlcpy(last, value, sizeof last);
        }
    }
    if (set && set[0])
        fputs(" set by pbench", out);
    return true;
}

/* "; disturbed: ..." for a point whose sides other processes disturbed, or
 * "". */
static void ideal_disturbed(const struct pb_point_cmp *pc, char *buf, size_t size)
{
    const struct pb_interference *in = &pc->interference;
    buf[0] = '\0';
    if (in->disturbed)
        snprintf(buf, size,
                 " Disturbed: other processes took %.0f%% of the machine's CPU beside the job "
                 "and %.0f%% beside the ideal loader, so this gain is the machine's as much as "
                 "the loader's: measure again on a quiet machine.",
                 in->base_other, in->next_other);
}

void pb_report_wrap_ideal(FILE *out, const struct pb_result *result,
                          const struct pb_comparison *cmp)
{
    /* The new side of the interleaved pair is the job with wrap.ideal set,
     * in the section its engine's row runs from. */
    const json_t *config = json_object_get(json_object_get(result->interleaved, "new"), "config");
    const struct pb_engine_row *row = pb_engine_row_named(
        json_string_value(json_object_get(json_object_get(config, "loader"), "engine")));
    if (!row && result->point_count)
        row = pb_point_engine_row(result, 0);
    const json_t *wrap = row && row->section ? json_object_get(config, row->section) : NULL;
    const json_t *ideal = json_object_get(wrap, "ideal");
    if (!json_is_integer(ideal) || json_integer_value(ideal) <= 0)
        return;
    for (size_t k = 0; k < cmp->point_count; k++) {
        const struct pb_point_cmp *pc = &cmp->points[k];
        for (int m = 0; m < pc->metric_count; m++) {
            const struct pb_metric_cmp *mc = &pc->metrics[m];
            if (strcmp(mc->name, "samples_per_s") != 0 || !(mc->base > 0) || !(mc->next > 0))
                continue;
            double batch = (double)pb_point_batch_size(result, pc->base_index);
            double unit = batch > 0 ? batch : 1;
            char ci[96] = "", disturbed[300];
            if (isfinite(mc->ci_low_pct) && isfinite(mc->ci_high_pct))
                snprintf(ci, sizeof ci, "; 95%% CI %+.0f%% to %+.0f%%", mc->ci_low_pct,
                         mc->ci_high_pct);
            ideal_disturbed(pc, disturbed, sizeof disturbed);
            bool single = strcmp(pc->label, "(single point)") == 0;
            fprintf(out,
                    "\nideal loader%s%s%s: a loader that never made this job wait would take it "
                    "from %.2f to %.2f %s (%+.0f%%%s): loading costs %.0f%% of this job's time. "
                    "Its batches were reused, and a step whose time depends on the data "
                    "differs.%s\n",
                    single ? "" : " at ", single ? "" : pc->label,
                    pc->interference.disturbed ? " (disturbed)" : "", mc->base / unit,
                    mc->next / unit, batch > 0 ? "steps/s" : "samples/s",
                    100.0 * (mc->next / mc->base - 1), ci, 100.0 * (1 - mc->base / mc->next),
                    disturbed);
        }
    }
}
