/* The "try" lines (bench/analyze/suggest.h): what to change for the measured point, each
 * with the figures behind it and the command that tests it. */
#include "bench/analyze/suggest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/analyze/engines.h"
#include "bench/analyze/straggler.h"
#include "bench/base/engine_row.h"
#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/result/figures.h"

/* ---- suggestions -------------------------------------------------------- */

/* Adds a suggestion; past the last slot, drops it. */
#define SUGGEST(an, ...) PB_LINES_ADD((an)->suggestions, &(an)->suggestion_count, __VA_ARGS__)

/* The decoder the base config's decode stage uses, or "". */
static const char *decoder_name(const struct pb_result *result)
{
    const json_t *pipeline = result->config ? json_object_get(result->config, "pipeline") : NULL;
    for (size_t i = 0; i < json_array_size(pipeline); i++) {
        const json_t *decode = json_object_get(json_array_get(pipeline, i), "decode");
        const json_t *name = decode ? json_object_get(decode, "decoder") : NULL;
        if (json_is_string(name))
            return json_string_value(name);
    }
    return "";
}

static bool name_is(const char *name, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(name, *names) == 0)
            return true;
    return false;
}

/* A config path longer than this is not quoted in a suggestion's
 * commands: NAME.yaml stands for it, so that no command is cut short (a
 * compare names the config twice, and a suggestion may hold three
 * commands). */
#define CONFIG_QUOTED_MAX 120
#define CONFIG_SIZE (CONFIG_QUOTED_MAX + 8)
/* Room for "pbench run CONFIG -s loader.engine=NAME". */
#define RUN_SIZE (CONFIG_SIZE + 80)
/* Room for any test command: a sweep appended to a run, or a compare, its
 * config twice, the engine, the setting now and the one to test. */
#define COMMAND_SIZE 512

/* text as one word of a shell command into buf: as it is when it holds
 * only letters, digits and ./_+=,-, else in single quotes. False (buf "")
 * when it holds a single quote or would not fit. */
static bool shell_word(const char *text, char *buf, size_t size)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789./_+=,-";
    bool quote = text[strspn(text, plain)] != '\0';
    int n = snprintf(buf, size, quote ? "'%s'" : "%s", text);
    if (strchr(text, '\'') || n < 0 || (size_t)n >= size) {
        buf[0] = '\0';
        return false;
    }
    return true;
}

/* The config a suggestion's commands name, as typed in a shell: the file
 * the result was made from, or NAME.yaml standing for it (a result from
 * an older pbench, a path over CONFIG_QUOTED_MAX or with a quote). */
static void command_config(const struct pb_result *result, char *buf, size_t size)
{
    /* A wrapped job's config is its command line: --command 'python3 ...'. */
    const char *job = json_string_value(pb_result_config_value(result, "wrap.command"));
    char word[CONFIG_SIZE];
    if (result->point_count && pb_point_wrapped(result, 0)) {
        if (!job || strlen(job) > CONFIG_QUOTED_MAX - 12 || !shell_word(job, word, sizeof word))
            snprintf(buf, size, "--command 'YOUR JOB'");
        else
            snprintf(buf, size, "--command %.*s", (int)(CONFIG_QUOTED_MAX - 10), word);
        return;
    }
    if (strlen(result->config_path) > CONFIG_QUOTED_MAX || !result->config_path[0] ||
        !shell_word(result->config_path, buf, size))
        snprintf(buf, size, "%.100s.yaml", result->name[0] ? result->name : "CONFIG");
}

/* " -s loader.engine=NAME" for point i on an engine whose row asks for it
 * (engine_option: the file may not name it); "" for pbench's, for one
 * whose command sets it (the wrapped job's), and for i past the points (a
 * command that sweeps the engine). Returns buf. */
#define ANY_ENGINE ((size_t)-1)
static const char *engine_option(const struct pb_result *result, size_t i, char *buf,
                                 size_t size)
{
    const struct pb_engine_row *row =
        i < result->point_count ? pb_point_engine_row(result, i) : NULL;
    if (row && row->engine_option)
        snprintf(buf, size, " -s loader.engine=%.40s", row->name);
    else if (size > 0)
        buf[0] = '\0';
    return buf;
}

static bool wrapped(const struct pb_result *result)
{
    return result->point_count > 0 && pb_point_wrapped(result, 0);
}

/* The pbench command that measures the result's engine again: its row's
 * (a wrapped job: its own command), else run. */
static const char *command_word(const struct pb_result *result)
{
    const struct pb_engine_row *row =
        result->point_count > 0 ? pb_point_engine_row(result, 0) : NULL;
    return row && row->command ? row->command : "run";
}

/* The command that measures point i's config again, for a suggestion to
 * append its sweep to (-a key=v1,v2): "pbench run CONFIG", with the
 * point's engine. */
static void run_command(const struct pb_result *result, size_t i, char *buf, size_t size)
{
    char config[CONFIG_SIZE], engine[64];
    command_config(result, config, sizeof config);
    snprintf(buf, size, "pbench %s %s%s", command_word(result), config,
             engine_option(result, i, engine, sizeof engine));
}

/* A setting's value as typed after '=': numbers, booleans and strings. */
static void value_text(const json_t *v, char *buf, size_t size)
{
    if (json_is_string(v))
        snprintf(buf, size, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
    else if (json_is_number(v))
        snprintf(buf, size, "%g", json_number_value(v));
    else
        snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
}

static const json_t *decode_option(const struct pb_result *result, size_t i, const char *opt);

/* Setting key (a dotted path) at point i as it ran: its axis, else the
 * config's value (a decode option: the decode stage's); NULL when the
 * result does not hold it. */
static const json_t *setting_now(const struct pb_result *result, size_t i, const char *key)
{
    static const char decode[] = "pipeline.decode.";
    if (strncmp(key, decode, strlen(decode)) == 0)
        return decode_option(result, i, key + strlen(decode));
    return pb_point_setting(result, i, key);
}

/* The command that tests one setting ("key.path=value") against point i
 * as it ran: the config compared with itself in interleaved rounds, the
 * setting on the new side alone, on both the point's engine and the
 * setting's value now, which the run may have set with -s ("pbench compare
 * C.yaml C.yaml -s pipeline.decode.scale=1 --set-new
 * pipeline.decode.scale=auto"): a verdict with its confidence interval
 * (for a config with a sweep: section, at each of its points). A setting
 * the result swept is compared by sweeping it ("pbench run C.yaml -a
 * key.path=NOW,value"), since a sweep would override --set-new. Fits whole
 * in COMMAND_SIZE. */
static void compare_command(const struct pb_result *result, size_t i, const char *setting,
                            char *buf, size_t size)
{
    char config[CONFIG_SIZE], engine[64], key[96], now[100] = "", pin[120] = "", word[112];
    command_config(result, config, sizeof config);
    engine_option(result, i, engine, sizeof engine);
    size_t keylen = strcspn(setting, "=");
    snprintf(key, sizeof key, "%.*s", (int)keylen, setting);
    const json_t *swept = i < result->point_count ? json_object_get(result->points[i].axes, key)
                                                  : NULL;
    const json_t *current = setting_now(result, i, key);
    if (current) {
        value_text(current, now, sizeof now);
        char assignment[200];
        snprintf(assignment, sizeof assignment, "%s=%s", key, now);
        if (shell_word(assignment, word, sizeof word))
            snprintf(pin, sizeof pin, " -s %s", word);
    }
    if (swept)
        snprintf(buf, size, "pbench %s %s%s -a %s=%s,%s", command_word(result), config, engine,
                 key, now, setting[keylen] ? setting + keylen + 1 : "");
    else if (wrapped(result)) /* the job against itself: wrap's own interleaved A/B */
        snprintf(buf, size, "pbench %s %s%s --set-new %s", command_word(result), config, pin,
                 setting);
    else
        snprintf(buf, size, "pbench compare %s %s%s%s --set-new %s", config, config, engine, pin,
                 setting);
}

/* Worker counts to sweep from now: doubling up to the hardware threads,
 * "1,2,4" from 0 workers; at least two values. */
static void worker_counts(int64_t now, int pus, char *buf, size_t size)
{
    int64_t w = now > 0 ? now : 1;
    size_t used = 0;
    buf[0] = 0;
    for (int k = 0; k < 4 && used < size; k++, w *= 2) {
        if (k >= 2 && w > pus)
            break;
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", k ? "," : "", (long long)w);
    }
}

/* Option opt of point i's decode stage as it ran: the point's axis, else
 * the config's decode stage; NULL when neither has it. */
static const json_t *decode_option(const struct pb_result *result, size_t i, const char *opt)
{
    char key[96];
    snprintf(key, sizeof(key), "pipeline.decode.%s", opt);
    if (i < result->point_count && json_object_get(result->points[i].axes, key))
        return json_object_get(result->points[i].axes, key);
    const json_t *stage;
    size_t k;
    json_array_foreach(pb_result_config_value(result, "pipeline"), k, stage) {
        const json_t *decode = json_object_get(stage, "decode");
        if (decode)
            return json_object_get(decode, opt);
    }
    return NULL;
}

/* The video decoder's clips_per_visit at point i: the point's axis, else
 * the config's decode stage, else 1. */
static int64_t clips_per_visit(const struct pb_result *result, size_t i)
{
    const json_t *v = decode_option(result, i, "clips_per_visit");
    return json_is_number(v) ? (int64_t)json_number_value(v) : 1;
}

/* The crop stage point i's JPEG decode is fused with (decoders/jpeg.c:
 * fused_crop, a crop stage next, scale 1, auto or window; the decode then
 * reads only the crop's window), or NULL. */
static const json_t *jpeg_fused_crop(const struct pb_result *result, size_t i)
{
    static const char *const crops[] = {"random_resized_crop", "random_crop", "center_crop",
                                        NULL};
    const json_t *pipeline = pb_result_config_value(result, "pipeline"), *stage, *crop = NULL;
    size_t k;
    bool after_decode = false;
    json_array_foreach(pipeline, k, stage) {
        void *only = json_object_size(stage) == 1 ? json_object_iter((json_t *)stage) : NULL;
        const char *name = only ? json_object_iter_key(only) : "";
        if (after_decode) {
            crop = name_is(name, crops) ? json_object_iter_value(only) : NULL;
            break;
        }
        after_decode = strcmp(name, "decode") == 0;
    }
    const json_t *fused = decode_option(result, i, "fused_crop");
    const char *scale = json_string_value(decode_option(result, i, "scale"));
    bool fusable = json_is_true(fused) && scale &&
                   (!strcmp(scale, "1") || !strcmp(scale, "auto") || !strcmp(scale, "window"));
    return fusable ? crop : NULL;
}

/* The JPEG decode suggestion. Fused with a crop, the decode already reads
 * only the window, so what is left is libjpeg's entropy decoding of the
 * rows down to the window's bottom; scale: window (DCT scaling of windows
 * at least twice the output) is the one setting that cuts more, and only
 * on sources larger than twice the output. */
static void jpeg_decode_suggestion(const struct pb_result *result, size_t i, double share,
                                   const char *of, struct pb_analysis *an)
{
    const struct pb_stage_result *decode = pb_analysis_find_stage(&result->points[i], "decode");
    const json_t *crop = jpeg_fused_crop(result, i);
    double scaled = 0, progressive = 0, count = decode ? (double)decode->hist.count : 0;
    char test[COMMAND_SIZE];
    if (!crop || count <= 0) {
        compare_command(result, i, "pipeline.decode.scale=auto", test, sizeof test);
        SUGGEST(an,
                "decode takes %.0f%% of %s: decode at reduced size (JPEG DCT scaling; "
                "test: %s), store a smaller source resolution, or decode on the GPU",
                share, of, test);
    } else {
        pb_analysis_counter(decode, "scaled", &scaled);
        const json_t *size = json_object_get(crop, "size");
        int64_t h = json_integer_value(json_is_array(size) ? json_array_get(size, 0) : size);
        int64_t w = json_is_array(size) ? json_integer_value(json_array_get(size, 1)) : h;
        const char *scale = json_string_value(decode_option(result, i, "scale"));
        char window[COMMAND_SIZE + 160] = "";
        /* DCT scaling helps only windows at least twice the output: said
         * where the sources (their median, from the dataset's headers) are
         * large enough, or their size is unknown. */
        uint64_t sw = result->dataset.source_width, sh = result->dataset.source_height;
        bool small = sw > 0 && sh > 0 && (sw < 2 * (uint64_t)w || sh < 2 * (uint64_t)h);
        compare_command(result, i, "pipeline.decode.scale=window", test, sizeof test);
        if (scale && strcmp(scale, "window") != 0 && h > 0 && w > 0 && !small)
            snprintf(window, sizeof(window),
                     "DCT scaling of the windows at least twice the output, for sources larger "
                     "than %lldx%lld (test: %s); ",
                     (long long)(2 * w), (long long)(2 * h), test);
        else if (small)
            snprintf(window, sizeof(window),
                     "not DCT scaling: these sources (median %llux%llu) are under twice the "
                     "%lldx%lld output, where it cannot reduce the window; ",
                     (unsigned long long)sw, (unsigned long long)sh, (long long)w, (long long)h);
        SUGGEST(an,
                "decode takes %.0f%% of %s although it decodes only the crop's window (fused "
                "with the crop; %.0f of %.0f samples DCT-reduced): the rest is libjpeg's entropy "
                "decoding of the rows down to the window's bottom. What cuts it: %ssmaller or "
                "lower-quality source files; or a GPU decoder",
                share, of, scaled, count, window);
    }
    /* Progressive files are entropy-decoded whole, window or not. Measured:
     * scripts/real-photos.sh's 400 photographs rewritten progressive with
     * `jpegtran -progressive` decode in 1455 us against 400 us as baseline
     * (configs/image.yaml, batch 32: 1304 against 4060 samples/s). */
    compare_command(result, i, "dataset.path=COPY", test, sizeof test);
    if (decode && count > 0 && pb_analysis_counter(decode, "progressive", &progressive) &&
        progressive >= 0.05 * count)
        SUGGEST(an,
                "%.0f%% of the JPEGs decoded (%.0f of %.0f) are progressive, which libjpeg "
                "entropy-decodes whole, in several passes, before its first row: rewrite them "
                "as baseline, losslessly, with libjpeg-turbo's jpegtran (jpegtran -copy all "
                "-outfile OUT.jpg IN.jpg for each file) and measure the copy (test: %s)",
                100 * progressive / count, progressive, count, test);
}

/* A dominant decode on the torch engine: PIL decodes whole images (no
 * window decode), so what it can do is draft mode (DCT scaling), lighter
 * sources, or pbench's engine, which decodes only the crop's window. */
static void torch_decode_suggestion(const struct pb_result *result, size_t i, double share,
                                    const char *of, struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    const struct pb_stage_result *decode = pb_analysis_find_stage(p, "decode");
    double per_sample = pb_point_stage_cpu_ns_per_sample(p, decode) / 1e3;
    per_sample = isnan(per_sample) ? 0 : per_sample;
    const char *scale = json_string_value(decode_option(result, i, "scale"));
    char base[RUN_SIZE], test[COMMAND_SIZE];
    run_command(result, ANY_ENGINE, base, sizeof base);
    compare_command(result, i, "pipeline.decode.scale=auto", test, sizeof test);
    char draft[COMMAND_SIZE + 120] = "";
    if (scale && strcmp(scale, "auto") != 0)
        snprintf(draft, sizeof draft,
                 "let PIL decode at 1/2, 1/4 or 1/8 where the crop allows (Image.draft; test: "
                 "%s); ",
                 test);
    SUGGEST(an,
            "decode takes %.0f%% of %s on the torch engine (%.0f µs of CPU a sample; PIL "
            "decodes the whole image before the crop): %ssmaller or baseline source files; or "
            "pbench's engine, which decodes only the crop's window (test: %s -a "
            "loader.engine=pbench,torch)",
            share, of, per_sample, draft, base);
}

/* The suggestion for a dominant decode stage, by the decoder the config
 * uses: video, null (whose cost the config sets), else JPEG. */
static void decode_suggestion(const struct pb_result *result, size_t i, const char *of,
                              const char *run, struct pb_analysis *an)
{
    const struct pb_point_analysis *a = &an->points[i];
    const char *decoder = decoder_name(result);
    char base[RUN_SIZE], test[COMMAND_SIZE], visit[COMMAND_SIZE + 80] = "";
    run_command(result, ANY_ENGINE, base, sizeof base);
    compare_command(result, i, "pipeline.decode.clips_per_visit=4", test, sizeof test);
    if (clips_per_visit(result, i) <= 1)
        snprintf(visit, sizeof visit,
                 "take several clips per video visit, decoded in one pass (test: %s), ", test);
    compare_command(result, i, "pipeline.decode.discard=nonref", test, sizeof test);
    const struct pb_engine_row *row = pb_point_engine_row(result, i);
    bool own_engine = row && row->in_process; /* pbench's own decoders */
    if (strcmp(decoder, "video") == 0 && !own_engine)
        SUGGEST(an, /* PyAV: no discard, one clip per __getitem__ */
                "decode takes %.0f%% of %s and decodes %.2fx the frames it delivers (PyAV "
                "decodes every frame from the keyframe before the clip): trade workers for "
                "decoder threads (test: %s -a pipeline.decode.threads=1,2,4), encode the "
                "sources with a shorter GOP, or measure pbench's engine, which can skip the "
                "non-reference frames and take several clips per visit (test: %s -a "
                "loader.engine=pbench,%.40s)",
                a->top_share_pct, of, a->amplification, run, base, pb_point_engine(result, i));
    else if (strcmp(decoder, "video") == 0)
        SUGGEST(an,
                "decode takes %.0f%% of %s and decodes %.2fx the frames it delivers: "
                "skip the non-reference frames nobody receives (test: %s), %strade workers "
                "for decoder threads (test: %s -a pipeline.decode.threads=1,2,4), encode the "
                "sources with a shorter GOP, or decode on the GPU",
                a->top_share_pct, of, a->amplification, test, visit, run);
    else if (strcmp(decoder, "null") == 0)
        SUGGEST(an,
                "decode takes %.0f%% of %s: the null decoder's cost_us sets it; a "
                "real decoder's share is the figure to watch",
                a->top_share_pct, of);
    else if (!own_engine)
        torch_decode_suggestion(result, i, a->top_share_pct, of, an);
    else
        jpeg_decode_suggestion(result, i, a->top_share_pct, of, an);
}

/* The device side: what the copy to the GPU costs the loop and the GPU. */
static void copy_suggestions(const struct pb_result *result, const struct pb_point_result *p,
                             struct pb_analysis *an)
{
    const struct pb_gpu_figures *g = &p->gpu;
    double wall_ns = g->wall_s * 1e9;
    double copy_wait_pct = wall_ns > 0 ? 100 * (double)g->copy_wait_ns / wall_ns : 0;
    double copy_pct = wall_ns > 0 ? 100 * g->copy_ns / wall_ns : 0;
    double peak = result->calibration.h2d_pinned_gb_s;
    if (p->pinned_bytes == 0 && copy_wait_pct >= 5)
        SUGGEST(an,
                "the loop waits %.1f%% of its time on pageable copies (%.2f GB/s): pin the "
                "batch buffers (loader.pin_memory: true) so copies are asynchronous DMA",
                copy_wait_pct, g->copy_gb_per_s);
    if (copy_pct >= 5 && g->overlap_pct < 50 && g->step_ns > 0)
        SUGGEST(an,
                "copies take %.1f%% of wall time and only %.0f%% of it overlaps the step: "
                "loader.device_prefetch >= 2 with to_device.stream: copy runs the next copy "
                "during the step",
                copy_pct, g->overlap_pct);
    if (copy_pct >= 10)
        SUGGEST(an,
                "copies take %.1f%% of wall time: copy uint8 and normalize on the GPU "
                "(pipeline.normalize.device: gpu) to move 4x fewer bytes than float32",
                copy_pct);
    if (p->pinned_bytes > 0 && peak > 0 && g->copy_gb_per_s < 0.5 * peak)
        SUGGEST(an,
                "pinned copies reach %.2f GB/s, %.0f%% of this machine's calibrated %.1f GB/s: "
                "other traffic shares the link, or the GPU is not on the CPU's nearest PCIe "
                "root (check nvidia-smi topo -m)",
                g->copy_gb_per_s, 100 * g->copy_gb_per_s / peak, peak);
}

static double epoch_restart_pct(const struct pb_result *result, size_t i, double *epoch_s);

/* The test of more workers than now, counts being worker_counts': a
 * sweep of them, or where they are the count now and twice it, a compare
 * of the two. */
static void more_workers_command(const struct pb_result *result, size_t i, const char *run,
                                 int64_t now, const char *counts, char *buf, size_t size)
{
    char pair[64], setting[64];
    snprintf(pair, sizeof pair, "%lld,%lld", (long long)now, (long long)(2 * now));
    snprintf(setting, sizeof setting, "loader.workers=%lld", (long long)(2 * now));
    if (now > 0 && strcmp(counts, pair) == 0)
        compare_command(result, i, setting, buf, size);
    else
        snprintf(buf, size, "%s -a loader.workers=%s", run, counts);
}

/* Workers beyond the hardware threads, cores not saturated: back to as
 * many workers as threads, tested against the count now. */
static void fewer_workers_suggestion(const struct pb_result *result, size_t i, int pus,
                                     struct pb_analysis *an)
{
    char setting[64], test[COMMAND_SIZE];
    snprintf(setting, sizeof setting, "loader.workers=%d", pus);
    compare_command(result, i, setting, test, sizeof test);
    SUGGEST(an, "%lld workers share %d hardware threads: use at most %d (test: %s)",
            (long long)an->points[i].workers, pus, pus, test);
}

/* What more workers can do for a waiting loop, by whether the cores are
 * saturated and the workers on CPU; and what workers beyond the hardware
 * threads cost. */
/* Whether this result's sweep measured more workers than point i's, with
 * its other settings, and none of them faster beyond the tie (the larger
 * of analysis.tie_pct and i's noise): then no line may advise more
 * workers. Sets *most and *most_rate to the largest such count and its
 * samples/s. */
static bool more_workers_measured_no_faster(const struct pb_result *result,
                                            const struct pb_analysis *an, size_t i,
                                            int64_t *most, double *most_rate)
{
    int series[64];
    int n = pb_analysis_worker_series(result, an, i, series, 64);
    const struct pb_point_result *p = &result->points[i];
    double tie = fmax(an->thresholds.tie_pct, p->samples_per_s_noise_pct) / 100.0;
    *most = 0;
    for (int k = 0; k < n; k++) {
        const struct pb_point_analysis *o = &an->points[series[k]];
        if (o->workers <= an->points[i].workers)
            continue;
        if (result->points[series[k]].samples_per_s > p->samples_per_s * (1 + tie))
            return false;
        *most = o->workers;
        *most_rate = result->points[series[k]].samples_per_s;
    }
    return *most > 0;
}

static void worker_suggestions(const struct pb_result *result, size_t i, const char *run,
                               struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    const struct pb_point_analysis *a = &an->points[i];
    int pus = result->machine.pus > 0 ? result->machine.pus : 1;
    bool waits = a->input_bound != PB_INPUT_BOUND_NO;
    char workers[64];
    worker_counts(a->workers, pus, workers, sizeof(workers));
    if (waits && a->saturated)
        SUGGEST(an,
                "all %d hardware threads are busy (%.0f%% CPU) and the loop still waits %.1f%%: "
                "more workers cannot help; cut the work per sample (the largest stage first) or "
                "add cores",
                pus, p->cpu_util_pct, p->stall_pct);
    int64_t most = 0;
    double most_rate = 0;
    /* A sweep whose recommendation is withheld (other processes moved its
     * points) cannot say that more workers were no faster either. */
    bool measured_no_faster = !an->withheld[0] &&
                              more_workers_measured_no_faster(result, an, i, &most, &most_rate);
    if (waits && measured_no_faster && !a->saturated)
        SUGGEST(an,
                "the loop waits %.1f%%, yet this sweep measured more workers no faster (%lld "
                "workers: %.4g samples/s against %.4g with %lld): more workers do not help here; "
                "cut the work per sample (the largest stage first)%s",
                p->stall_pct, (long long)most, most_rate, p->samples_per_s,
                (long long)a->workers,
                a->cpu_bound ? "" : ", or look for what the workers wait on (storage, a lock)");
    if (waits && a->cpu_bound && !a->saturated && a->workers < pus && !measured_no_faster) {
        char test[COMMAND_SIZE];
        more_workers_command(result, i, run, a->workers, workers, test, sizeof test);
        SUGGEST(an,
                "workers are busy (%.0f%% on CPU) and the loop still waits %.1f%%: add workers, "
                "up to the %d hardware threads (now %lld); test: %s",
                p->worker_cpu_pct, p->stall_pct, pus, (long long)a->workers, test);
    }
    double epoch_s;
    bool restarts = epoch_restart_pct(result, i, &epoch_s) >= 3; /* said on its own */
    /* Workers off CPU while other processes hold the machine were starved
     * of it: neither more workers nor prefetch is the cure. */
    bool starved = pb_machine_disturbed(p->other_cpu_pct, p->steal_pct, 0);
    if (waits && !a->cpu_bound && !a->saturated && a->workers > 0 && starved)
        SUGGEST(an,
                "workers are on CPU only %.0f%% of the time while the loop waits %.1f%%, and "
                "other processes took %.0f%% of the machine's CPU (steal %.0f%%) while this ran: "
                "the workers were starved of CPU by them, which more workers or prefetch would "
                "not cure; measure on a quiet machine (or compare CPU per sample, which they "
                "barely move)",
                p->worker_cpu_pct, p->stall_pct, p->other_cpu_pct, p->steal_pct);
    if (waits && !a->cpu_bound && !a->saturated && a->workers > 0 && !restarts && !starved &&
        !measured_no_faster)
        SUGGEST(an,
                "workers are on CPU only %.0f%% of the time while the loop waits %.1f%%: they "
                "wait on I/O or each other; more workers or a larger prefetch_factor can hide it "
                "(test: %s -a loader.workers=%s -a loader.prefetch_factor=2,4)",
                p->worker_cpu_pct, p->stall_pct, run, workers);
    if (a->oversubscribed && a->saturated)
        SUGGEST(an,
                "%lld workers share %d hardware threads: with the cores saturated, a worker beyond "
                "%d adds only queueing (more batches in flight), not compute; compare the %d-worker "
                "rows before buying it with memory",
                (long long)a->workers, pus, pus, pus);
    else if (a->oversubscribed && (int)i == an->recommended && result->point_count > 1)
        SUGGEST(an,
                "%lld workers share %d hardware threads and still measured faster than every "
                "point within them by more than the noise: the extra workers overlap their "
                "waits (reads, page faults) with the others' work; recheck on the training "
                "machine, whose cores may differ",
                (long long)a->workers, pus);
    else if (a->oversubscribed)
        fewer_workers_suggestion(result, i, pus, an);
}

/* A loader holding over a quarter of the machine's memory. */
static void memory_suggestion(const struct pb_result *result, size_t i, const char *run,
                              struct pb_analysis *an)
{
    const struct pb_point_analysis *a = &an->points[i];
    uint64_t machine_bytes = result->machine.memory_bytes;
    if (machine_bytes > 0 && a->memory_bytes > machine_bytes / 4)
        SUGGEST(an,
                "the loader holds %.0f MiB (%.0f%% of the machine's memory): lower "
                "loader.prefetch_factor (now %lld; test: %s -a loader.prefetch_factor=1,2) or the "
                "batch size",
                (double)a->memory_bytes / 1048576.0,
                100.0 * (double)a->memory_bytes / (double)machine_bytes,
                (long long)a->prefetch_factor, run);
}

/* A DataLoader without persistent workers starts its worker processes at
 * every epoch: with a short epoch that start-up is a share of the time
 * the workers do not load (measured: first batch after the start). The
 * share in %, with the epoch's length; 0 where it does not apply. */
static double epoch_restart_pct(const struct pb_result *result, size_t i, double *epoch_s)
{
    const struct pb_point_result *p = &result->points[i];
    *epoch_s = 0;
    const struct pb_engine_row *row = pb_point_engine_row(result, i);
    if (!row || !row->epoch_workers || p->samples_per_s <= 0 ||
        p->first_batch_s <= 0 || result->dataset.samples == 0 ||
        pb_point_setting_int(result, i, "loader.workers", 0) == 0 ||
        json_is_true(pb_point_setting(result, i, "loader.persistent_workers")))
        return 0;
    *epoch_s = (double)result->dataset.samples / p->samples_per_s;
    return 100.0 * p->first_batch_s / (*epoch_s + p->first_batch_s);
}

static void epoch_restart_suggestion(const struct pb_result *result, size_t i,
                                     struct pb_analysis *an)
{
    double epoch_s, share = epoch_restart_pct(result, i, &epoch_s);
    char test[COMMAND_SIZE];
    compare_command(result, i, "loader.persistent_workers=true", test, sizeof test);
    if (share >= 3)
        SUGGEST(an,
                "the DataLoader starts its worker processes at every epoch (%.0f ms to the "
                "first batch, against an epoch of %.1f s: about %.0f%% of the time without "
                "batches): keep them with loader.persistent_workers: true (test: %s)",
                1e3 * result->points[i].first_batch_s, epoch_s, share, test);
}

/* A dataset in object storage: workers that wait on their requests
 * overlap more of them (dataset.requests_in_flight); a store that
 * throttles (503 SlowDown) wants fewer. */
static void object_storage_suggestions(const struct pb_result *result, size_t i, const char *run,
                                       struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    const struct pb_stage_result *read = pb_analysis_find_stage(p, "read");
    const struct pb_stage_result *ttfb = pb_analysis_find_stage(p, "read.ttfb");
    if (!result->dataset.endpoint[0] || !read || !ttfb)
        return;
    int64_t now = pb_point_setting_int(result, i, "dataset.requests_in_flight", 1);
    uint64_t requests = pb_analysis_count(read, "requests");
    uint64_t throttled = pb_analysis_count(read, "retry_503");
    if (requests && throttled * 100 >= requests)
        SUGGEST(an,
                "the store throttles: %.1f%% of the requests met 503 SlowDown and were retried "
                "after a backoff; fewer requests at once (dataset.requests_in_flight, now %lld, or "
                "loader.workers) or keys spread over more prefixes ease it (test: %s -a "
                "dataset.requests_in_flight=%lld,%lld)",
                100.0 * (double)throttled / (double)requests, (long long)now, run,
                (long long)(now > 1 ? now / 2 : 1), (long long)now);
    if (an->points[i].input_bound == PB_INPUT_BOUND_NO || read->share_pct < 30 || now >= 64)
        return;
    /* The bucket and endpoint go with the command: they are often -s
     * values the config file does not hold. */
    char where[RUN_SIZE] = "", word[CONFIG_SIZE];
    const char *endpoint = json_string_value(pb_result_config_value(result, "dataset.endpoint"));
    if (shell_word(result->dataset.path, word, sizeof word)) {
        size_t at = (size_t)snprintf(where, sizeof where, " -s dataset.path=%s", word);
        if (endpoint && endpoint[0] && shell_word(endpoint, word, sizeof word) && at < sizeof where)
            snprintf(where + at, sizeof where - at, " -s dataset.endpoint=%s", word);
    }
    SUGGEST(an,
            "the loop waits on object storage: the workers spend %.0f%% of their stage time in "
            "read, waiting %.1f ms (p50) for each object's first byte from %s with %lld request%s "
            "in flight each; raise dataset.requests_in_flight so they overlap (test: %s%s -a "
            "dataset.requests_in_flight=%lld,%lld,%lld)",
            read->share_pct, (double)pb_hist_quantile(&ttfb->hist, 0.5) / 1e6,
            result->dataset.endpoint, (long long)now, now == 1 ? "" : "s", run, where,
            (long long)now, (long long)now * 2, (long long)now * 4);
}

/* One rank's loader holds a wrapped job back (bench/analyze/straggler.h):
 * the try line points at that rank, not at every rank's workers. */
static void straggler_suggestion(const struct pb_straggler *s, const char *run,
                                 struct pb_analysis *an)
{
    SUGGEST(an,
            "the job runs at %s's pace: its loader is the straggler (its loop waits %.0f%%, the "
            "others' %.0f%% at most%s), so more workers on every rank would not help the ranks "
            "that wait for it; fix that rank: its data or shard, its node's storage, page cache "
            "or CPU (its row beside the others'), or more workers for it alone; measure again "
            "(%s) to see whether the same rank is slow again",
            s->name, s->stall_pct, s->others_stall_pct,
            s->others_wait ? ", and they wait for it in their step" : "", run);
}

/* The suggestions for point i (the recommended one, or a single run's
 * only point), each quoting its figures and, where one exists, ending with
 * the command that tests it. A wrapped job's point is rank 0's: where one
 * rank holds the others back, what its workers need is said of that rank
 * alone. */
void pb_suggest(const struct pb_result *result, size_t i, struct pb_analysis *an)
{
    const struct pb_point_result *p = &result->points[i];
    const struct pb_point_analysis *a = &an->points[i];
    const char *top = a->top_stage >= 0 ? p->stages[a->top_stage].name : "";
    static const char *const decode_names[] = {"decode", NULL};
    static const char *const sizing_names[] = {"resize", "center_crop", "random_crop",
                                               "random_resized_crop", NULL};

    const char *of = a->top_share_of_cpu ? "worker CPU time" : "worker time";
    char run[RUN_SIZE];
    run_command(result, i, run, sizeof(run));

    struct pb_straggler straggler;
    pb_point_straggler(p, &straggler);
    if (straggler.kind == PB_STRAGGLER_ONE)
        straggler_suggestion(&straggler, run, an);
    if (a->input_bound == PB_INPUT_BOUND_NO && straggler.kind == PB_STRAGGLER_NONE)
        SUGGEST(an,
                "the loader keeps up: the loop waits %.1f%% of its time (< %.0f%%); a faster "
                "loader would not speed up training at this step time",
                p->stall_pct, an->thresholds.input_bound_moderate_pct);
    if (a->top_stage >= 0 && a->top_share_pct >= 40 && name_is(top, decode_names))
        decode_suggestion(result, i, of, run, an);
    if (a->top_stage >= 0 && a->top_share_pct >= 30 && name_is(top, sizing_names))
        SUGGEST(an,
                "%s takes %.0f%% of %s: crop before resizing (random_resized_crop "
                "resamples only the crop), or use interpolation: bilinear instead of area",
                top, a->top_share_pct, of);
    if (p->gpu.used)
        copy_suggestions(result, p, an);
    object_storage_suggestions(result, i, run, an);
    if (straggler.kind != PB_STRAGGLER_ONE)
        worker_suggestions(result, i, run, an);
    epoch_restart_suggestion(result, i, an);
    memory_suggestion(result, i, run, an);
}

