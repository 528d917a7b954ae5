/* pbench: the command line. Sub-commands: run, report, list, version, help.
 * Exit codes: 0 success, 1 error, 2 usage or config error, 3 regression
 * (compare, later), 130 interrupted (partial results written). */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/config.h"
#include "bench/cupti.h"
#include "bench/h2d_bandwidth.h"
#include "bench/pb.h"
#include "bench/result.h"
#include "bench/analysis.h"
#include "bench/compare.h"
#include "bench/fileio.h"
#include "bench/history.h"
#include "bench/machine.h"
#include "bench/report.h"
#include "bench/list.h"
#include "bench/runner.h"
#include "bench/stats.h"
#include "bench/sweep.h"
#include "kernels/gpu_rt.h"
#include "pipelines/dataset.h"

#define PB_EXIT_INTERRUPTED 130

static volatile sig_atomic_t interrupt_requested;

static void on_sigint(int sig)
{
    (void)sig;
    interrupt_requested = 1;
    /* A second Ctrl-C ends the process at once. */
    signal(SIGINT, SIG_DFL);
}

struct command {
    const char *name;
    const char *usage;
    const char *help;
    int (*fn)(int argc, char **argv);
};

static int cmd_run(int argc, char **argv);
static int cmd_report(int argc, char **argv);
static int cmd_list(int argc, char **argv);
static int cmd_gen(int argc, char **argv);
static int cmd_calibrate(int argc, char **argv);
static int cmd_history(int argc, char **argv);
static int cmd_compare(int argc, char **argv);
struct compare_options {
    double threshold_pct;
    int format;
    bool force, fail_on_regression;
};
static int compare_results(const struct pb_result *base, const struct pb_result *next,
                           const char *base_name, const char *next_name,
                           const struct compare_options *o);
static int parse_threshold(const char *text, double *out);
static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const struct command commands[] = {
    {"run", "pbench run CONFIG [-s key.path=value]... [-a key.path=v1,v2]... [-o results/NAME.json]\n"
            "                  [--format table|json|markdown|csv] [--quiet] [--overhead]\n"
            "                  [--baseline BASE.json [--threshold 5%] [--fail-on-regression]]",
     "Runs the pipeline CONFIG describes under its loader settings, prints a table and writes\n"
     "the complete result as JSON (default results/NAME-YYYYmmdd-HHMMSS.json).\n\n"
     "  -s, --set key.path=value  override one config value, e.g. -s loader.workers=4,\n"
     "                            -s pipeline.decode.cost_us=500 (repeatable)\n"
     "  -o, --output PATH         where to write the JSON result\n"
     "  -f, --format FORMAT       what to print: table (default), json, markdown, csv\n"
     "  -q, --quiet               no progress lines on stderr\n"
     "  -a, --axis key.path=v1,v2 sweep this option over these values (adds to or replaces\n"
     "                            the config's sweep: section; repeatable)\n"
     "      --overhead            also measure the instrumentation's own cost: after each\n"
     "                            repeat, a paired round with stage timing off\n"
     "      --no-calibrate        skip the one-core calibration a sweep starts with\n"
     "      --baseline BASE.json  compare the new result with BASE.json (as pbench compare)\n"
     "      --threshold PCT       practical threshold of that comparison (default 5%)\n"
     "      --fail-on-regression  exit 3 when the comparison finds a regression\n\n"
     "Ctrl-C stops after the current batch and still writes what was measured (exit 130).",
     cmd_run},
    {"gen", "pbench gen --kind files|jpeg|video --out DIR [--count N] [--size WxH[-WxH]]\n"
            "                  [--quality Q] [--progressive-fraction F] [--grayscale-fraction F]\n"
            "                  [--frames F] [--fps R] [--codec NAME] [--gop G] [--size-bytes B]\n"
            "                  [--corrupt-fraction F] [--seed S]",
     "Generates a dataset into DIR (which must not hold files yet): random-byte files, JPEG\n"
     "images or encoded videos of natural-looking, moving content. The options are those of a\n"
     "config's dataset.generate block ('pbench list dataset.generate'), with - for _.",
     cmd_gen},
    {"compare", "pbench compare BASE.json NEW.json [--threshold 5%] [--format table|json|markdown]\n"
                "                  [--fail-on-regression] [--force]",
     "Compares two results point by point (matched by their sweep axes): samples/s, batch\n"
     "assembly p50/p99, stall % and peak RSS, each with the change, a 95% bootstrap confidence\n"
     "interval over the repeats, a Mann-Whitney U p-value, and a verdict: improved, regressed,\n"
     "same or ambiguous (not enough data to tell). A change counts only when it is significant\n"
     "and at least --threshold (default 5%). Results from different machines or configs are\n"
     "refused, with every difference listed, unless --force. See docs/statistics.md.\n\n"
     "Exit codes: 0 no regression (or no --fail-on-regression), 3 a regression with\n"
     "--fail-on-regression, 1 unreadable files, 2 usage error or incompatible results.",
     cmd_compare},
    {"history", "pbench history add RESULT.json [--db results/history.db] [--revision REV]\n"
                "       pbench history show [--db results/history.db] [--config NAME]\n"
                "                  [--metric samples_per_s|stall_pct|assembly_p99_ns|rss_peak_bytes]\n"
                "                  [--threshold 5%]",
     "Keeps each run's summary in an SQLite database (one row per point), keyed by machine,\n"
     "config and git revision (--revision, else $GITHUB_SHA, else git rev-parse in the current\n"
     "folder), and prints the trend of a metric per series, flagging a step change: a shift\n"
     "of the median beyond the threshold that holds for at least 2 runs in a row.\n"
     "Exit codes: 0, or 3 when show finds a step change; 1 on errors.",
     cmd_history},
    {"calibrate", "pbench calibrate CONFIG [--gpu] [-s key.path=value]...",
     "Measures what this machine does at best for CONFIG's data: the pipeline on one core\n"
     "(one loader worker, no training step), memcpy bandwidth, and the\n"
     "cores. A sweep runs the same calibration first (unless --no-calibrate) and states each\n"
     "point's efficiency against it.",
     cmd_calibrate},
    {"report", "pbench report RESULT.json [--format table|json|markdown|csv]",
     "Renders a result file written by pbench run again, in any format.", cmd_report},
    {"list", "pbench list [NAME]",
     "Lists every stage, decoder and config section with its options, defaults and ranges,\n"
     "and whether it is available in this build (with the reason when not). NAME shows one.",
     cmd_list},
    {"version", "pbench version",
     "Prints the pbench version, the build options and every library version, and the\n"
     "CUDA runtime and driver when built with CUDA.",
     cmd_version},
    {"help", "pbench help [COMMAND]", "Shows help for a command.", cmd_help},
};

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < PB_ARRAY_LEN(commands); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void print_usage(FILE *out)
{
    fprintf(out, "pbench %s: benchmark ML data-loading pipelines\n\nUsage:\n", PB_VERSION);
    for (size_t i = 0; i < PB_ARRAY_LEN(commands); i++)
        fprintf(out, "  %s\n", commands[i].usage);
    fprintf(out, "\nExit codes: 0 success, 1 error, 2 usage or config error, 130 interrupted.\n"
                 "Run 'pbench help COMMAND' for details.\n");
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "pbench %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s\n", find_command(cmd)->usage);
    return PB_EXIT_USAGE;
}

/* ---- run ---------------------------------------------------------------- */

/* Progress on stderr: a bar redrawn in place on a terminal, plain lines
 * otherwise (logs, CI), nothing with --quiet. */
struct progress {
    bool quiet;
    bool tty;
    int rounds_total, rounds_done;
    uint64_t start_ns;
    char label[256];        /* the current point's axes                  */
    int point, points;      /* 1-based, for the bar                      */
    int round, rounds;
};

static void format_duration(double s, char *buf, size_t buflen)
{
    if (s < 60)
        snprintf(buf, buflen, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, buflen, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(buf, buflen, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

static void draw_bar(struct progress *p, double samples_per_s, bool live)
{
    if (p->quiet || !p->tty)
        return;
    int width = 24, filled = p->rounds_total ? width * p->rounds_done / p->rounds_total : 0;
    char bar[32], eta[32] = "?";
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = 0;
    if (p->rounds_done > 0) {
        double elapsed = (double)(pb_now_ns() - p->start_ns) / 1e9;
        format_duration(elapsed / p->rounds_done * (p->rounds_total - p->rounds_done), eta,
                        sizeof(eta));
    }
    fprintf(stderr, "\r\033[K[%s] round %d/%d point %d/%d %s · %.0f samples/s%s · ETA %s", bar,
            p->round, p->rounds, p->point, p->points, p->label, samples_per_s,
            live ? " (running)" : "", eta);
    fflush(stderr);
}

static void on_progress(void *user, int repeat, int repeats, const struct pb_repeat_result *r)
{
    struct progress *p = user;
    p->rounds_done++;
    if (p->quiet)
        return;
    if (p->tty) {
        draw_bar(p, r->samples_per_s, false);
        return;
    }
    fprintf(stderr, "  %s%s%srepeat %d/%d: %.1f samples/s, stall %.1f%%, %.2f s measured, %llu "
                    "batches%s%s\n",
            p->points > 1 ? "point " : "", p->points > 1 ? p->label : "", p->points > 1 ? " " : "",
            repeat + 1, repeats, r->samples_per_s, r->stall_pct, r->wall_s,
            (unsigned long long)r->batches, r->hit_time_cap ? ", hit run.max_time_s" : "",
            r->interrupted ? ", interrupted" : "");
}

static void on_tick(void *user, double samples_per_s)
{
    draw_bar(user, samples_per_s, true);
}

static void default_result_path(const char *name, char *buf, size_t buflen)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    snprintf(buf, buflen, "results/%s-%s.json", name, stamp);
}

static int exit_for(int rc)
{
    switch (rc) {
    case PB_OK: return PB_EXIT_OK;
    case PB_ERR_CONFIG: return PB_EXIT_USAGE;
    case PB_ERR_INTERRUPTED: return PB_EXIT_INTERRUPTED;
    case PB_ERR_UNAVAILABLE: return PB_EXIT_ERROR;
    default: return PB_EXIT_ERROR;
    }
}

/* The spec of one point: the config, then the user's -s overrides, then the
 * point's sweep values (extra, e.g. calibration settings, last). */
static int load_point_spec(const char *config_path, const char *const *overrides,
                           int override_count, const struct pb_sweep *sweep,
                           const struct pb_sweep_point *point, const char *const *extra,
                           int extra_count, struct pb_spec *spec, char *msg, size_t msglen)
{
    int rc = pb_config_load(config_path, spec, msg, msglen);
    for (int i = 0; rc == PB_OK && i < override_count; i++)
        rc = pb_config_override(spec, overrides[i], msg, msglen);
    for (int a = 0; rc == PB_OK && sweep && point && a < sweep->axis_count; a++) {
        char assignment[256];
        pb_sweep_assignment(sweep, point, a, assignment, sizeof(assignment));
        rc = pb_config_override(spec, assignment, msg, msglen);
        if (rc != PB_OK) {
            /* "-s path=v: sentence" reads better as a sweep error. */
            char inner[PB_MSG_MAX * 2];
            const char *colon = strstr(msg, ": ");
            pb_strlcpy(inner, colon ? colon + 2 : msg, sizeof(inner));
            int n = sweep->axes[a].line
                        ? snprintf(msg, msglen, "%s:%d:%d: sweep value %s: ", config_path,
                                   sweep->axes[a].line, sweep->axes[a].column, assignment)
                        : snprintf(msg, msglen, "-a %s: ", assignment);
            if (n > 0 && (size_t)n < msglen)
                pb_strlcpy(msg + n, inner, msglen - (size_t)n);
        }
    }
    for (int i = 0; rc == PB_OK && i < extra_count; i++)
        rc = pb_config_override(spec, extra[i], msg, msglen);
    if (rc == PB_OK)
        rc = pb_config_validate(spec, msg, msglen);
    return rc;
}

/* What this machine does at best for the config's data: the pipeline in one
 * loader worker (one core; the training loop takes no step), and memcpy. */
static int calibrate(const char *config_path, const char *const *overrides, int override_count,
                     const struct pb_dataset *ds, bool gpu, struct pb_calibration *cal, bool quiet,
                     char *msg, size_t msglen)
{
    static const char *const settings[] = {
        "loader.workers=1", "run.step_ms=0", "run.repeats=1", "run.warmup_batches=2",
    };
    struct pb_spec spec;
    int rc = load_point_spec(config_path, overrides, override_count, NULL, NULL, settings,
                             (int)PB_ARRAY_LEN(settings), &spec, msg, msglen);
    if (rc != PB_OK) {
        pb_spec_free(&spec);
        return rc;
    }
    /* The loader's ceiling is the CPU part; the copy is measured apart. */
    bool uses_gpu = pb_spec_uses_gpu(&spec);
    char dropped[PB_MSG_MAX];
    pb_spec_drop_gpu(&spec, dropped, sizeof(dropped));
    if (!quiet)
        fprintf(stderr, "pbench: calibrating: the pipeline on one core, then memory bandwidth%s\n",
                uses_gpu || gpu ? " and host-to-device copies" : "");
    /* A one-point result, so pb_result_free releases what the run made. */
    struct pb_result holder = {.point_count = 1, .points = calloc(1, sizeof(*holder.points))};
    if (!holder.points) {
        pb_spec_free(&spec);
        return PB_ERR_NOMEM;
    }
    struct pb_point_result *point = &holder.points[0];
    struct pb_run_hooks hooks = {.stop = &interrupt_requested};
    rc = pb_run_point(&spec, ds, &hooks, point, msg, msglen);
    if (rc == PB_OK) {
        cal->single_core_samples_per_s = point->samples_per_s;
        double amp, ns_frame, frames;
        if (pb_decode_figures(point, &amp, &ns_frame, &frames))
            cal->decode_ns_per_frame = ns_frame;
        size_t bytes = 64u << 20;
        char *a = malloc(bytes), *b = malloc(bytes);
        if (a && b) {
            memset(a, 1, bytes);
            memset(b, 2, bytes);
            uint64_t t0 = pb_now_ns();
            for (int i = 0; i < 8; i++)
                memcpy(i % 2 ? a : b, i % 2 ? b : a, bytes);
            double s = (double)(pb_now_ns() - t0) / 1e9;
            cal->memcpy_gb_per_s = 8.0 * (double)bytes / 1e9 / s;
        }
        free(a);
        free(b);
        long pus = sysconf(_SC_NPROCESSORS_ONLN);
        cal->cores = pus > 0 ? (int)pus : 1;
        cal->measured = true;
        /* Host-to-device copies of one batch of this pipeline, as CUDA's
         * bandwidthTest measures them (pinned and pageable). */
        if (uses_gpu || gpu) {
            struct pb_h2d_bandwidth bw;
            char why[PB_MSG_MAX];
            size_t bytes = point->batch_bytes ? point->batch_bytes : (size_t)32 << 20;
            if (pb_gpu_h2d_bandwidth(bytes, 20, &bw, why, sizeof(why)) == 0) {
                cal->h2d_bytes = bw.bytes;
                cal->h2d_pinned_gb_s = bw.pinned_gb_s;
                cal->h2d_pageable_gb_s = bw.pageable_gb_s;
            } else if (gpu) {
                snprintf(msg, msglen, "calibrate --gpu: %s", why);
                rc = PB_ERR_UNAVAILABLE;
            }
        }
    }
    pb_result_free(&holder);
    pb_spec_free(&spec);
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"set", required_argument, NULL, 's'},   {"axis", required_argument, NULL, 'a'},
        {"output", required_argument, NULL, 'o'}, {"format", required_argument, NULL, 'f'},
        {"quiet", no_argument, NULL, 'q'},       {"overhead", no_argument, NULL, 'O'},
        {"no-calibrate", no_argument, NULL, 'C'}, {"help", no_argument, NULL, 'h'},
        {"baseline", required_argument, NULL, 'B'}, {"threshold", required_argument, NULL, 'T'},
        {"fail-on-regression", no_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    const char **overrides = calloc((size_t)argc, sizeof(char *));
    const char **axes = calloc((size_t)argc, sizeof(char *));
    int override_count = 0, axis_count = 0;
    const char *output = NULL;
    enum pb_format format = PB_FORMAT_TABLE;
    bool quiet = false, overhead = false, no_calibrate = false, fail_on_regression = false;
    const char *baseline = NULL;
    double threshold_pct = 5;
    int c, exit_code = PB_EXIT_OK;
    optind = 1;
    while ((c = getopt_long(argc, argv, "s:a:o:f:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 's': overrides[override_count++] = optarg; break;
        case 'a': axes[axis_count++] = optarg; break;
        case 'o': output = optarg; break;
        case 'f':
            if (pb_format_parse(optarg, &format) != PB_OK) {
                exit_code = usage_error("run", "unknown format '%s'; allowed: table, json, markdown, csv",
                                        optarg);
                goto out_args;
            }
            break;
        case 'q': quiet = true; break;
        case 'O': overhead = true; break;
        case 'C': no_calibrate = true; break;
        case 'B': baseline = optarg; break;
        case 'F': fail_on_regression = true; break;
        case 'T':
            if (parse_threshold(optarg, &threshold_pct) != PB_OK) {
                exit_code = usage_error("run", "--threshold takes a percentage such as 5%%, got '%s'",
                                        optarg);
                goto out_args;
            }
            break;
        case 'h': exit_code = cmd_help(2, (char *[]){"help", "run", NULL}); goto out_args;
        default: exit_code = usage_error("run", "%s", "bad option"); goto out_args;
        }
    }
    if (optind != argc - 1) {
        exit_code = usage_error("run", "%s",
                                optind >= argc ? "expected one CONFIG file"
                                               : "expected one CONFIG file, got more");
        goto out_args;
    }
    const char *config_path = argv[optind];
    char msg[PB_MSG_MAX * 2];

    /* The base config and the sweep, checked in full before anything runs. */
    struct pb_spec base;
    int rc = load_point_spec(config_path, overrides, override_count, NULL, NULL, NULL, 0, &base,
                             msg, sizeof(msg));
    static struct pb_sweep sweep;
    if (rc == PB_OK)
        rc = pb_sweep_load(config_path, &sweep, msg, sizeof(msg));
    for (int i = 0; rc == PB_OK && i < axis_count; i++)
        rc = pb_sweep_set_axis(&sweep, axes[i], msg, sizeof(msg));
    if (rc != PB_OK) {
        fprintf(stderr, "pbench: %s\n", msg);
        pb_spec_free(&base);
        exit_code = rc == PB_ERR_CONFIG ? PB_EXIT_USAGE : PB_EXIT_ERROR;
        goto out_args;
    }

    struct pb_result result;
    memset(&result, 0, sizeof(result));
    result.schema_version = PB_SCHEMA_VERSION;
    snprintf(result.pbench_version, sizeof(result.pbench_version), "%s", PB_VERSION);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(result.created, sizeof(result.created), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(result.name, sizeof(result.name), "%s", base.name);
    pb_machine_probe(&result.machine);
    result.config = pb_spec_to_json(&base);

    for (int a = 0; a < sweep.axis_count; a++) {
        if (strcmp(sweep.axes[a].path, "loader.pin_memory") != 0)
            continue;
        char why[PB_MSG_MAX];
        if (!pb_gpu_available(why, sizeof(why))) {
            pb_sweep_drop_axis(&sweep, "loader.pin_memory");
            pb_result_warn(&result, "sweep axis loader.pin_memory dropped: %s", why);
            if (!quiet)
                fprintf(stderr, "pbench: warning: sweep axis loader.pin_memory dropped: %s\n", why);
        }
        break;
    }
    struct pb_sweep_point *points = calloc(PB_SWEEP_MAX_POINTS, sizeof(*points));
    long point_count = points ? pb_sweep_points(&sweep, points, PB_SWEEP_MAX_POINTS, msg, sizeof(msg))
                              : -1;
    if (point_count < 0 || point_count > PB_SWEEP_MAX_POINTS || point_count == 0) {
        if (point_count > PB_SWEEP_MAX_POINTS)
            snprintf(msg, sizeof(msg), "the sweep has %ld points, more than %d: narrow it",
                     point_count, PB_SWEEP_MAX_POINTS);
        else if (point_count == 0)
            snprintf(msg, sizeof(msg), "sweep.exclude leaves no point to run");
        fprintf(stderr, "pbench: %s\n", msg);
        exit_code = PB_EXIT_USAGE;
        goto out_result;
    }
    bool swept = sweep.axis_count > 0;
    if (overhead && point_count > 1) {
        fprintf(stderr, "pbench: --overhead measures one point; run it without a sweep (or pin "
                        "the axes with -a)\n");
        exit_code = PB_EXIT_USAGE;
        goto out_result;
    }

    /* Every point's spec, validated before the first measurement. */
    struct pb_spec *specs = calloc((size_t)point_count, sizeof(*specs));
    result.points = calloc((size_t)point_count, sizeof(*result.points));
    result.point_count = (size_t)point_count;
    for (long i = 0; i < point_count; i++) {
        rc = load_point_spec(config_path, overrides, override_count, swept ? &sweep : NULL,
                             &points[i], NULL, 0, &specs[i], msg, sizeof(msg));
        result.points[i].axes = swept ? pb_sweep_axes_json(&sweep, &points[i]) : json_object();
        if (rc != PB_OK) {
            fprintf(stderr, "pbench: %s\n", msg);
            exit_code = rc == PB_ERR_CONFIG ? PB_EXIT_USAGE : PB_EXIT_ERROR;
            for (long j = 0; j <= i; j++)
                pb_spec_free(&specs[j]);
            free(specs);
            goto out_result;
        }
    }

    /* GPU stages need a device: without one, stop (gpu: required) or run
     * the CPU part and say what was skipped (gpu: optional). */
    if (pb_spec_uses_gpu(&base)) {
        char why[PB_MSG_MAX];
        if (!pb_gpu_available(why, sizeof(why))) {
            char dropped[PB_MSG_MAX] = "";
            if (base.gpu == PB_GPU_REQUIRED) {
                pb_spec_drop_gpu(&base, dropped, sizeof(dropped));
                fprintf(stderr,
                        "pbench: %s: %s; the pipeline needs it for %s. Run on a machine with a "
                        "GPU, or set gpu: optional (-s gpu=optional) to measure the CPU part "
                        "with those stages skipped\n",
                        config_path, why, dropped);
                exit_code = PB_EXIT_USAGE;
                for (long j = 0; j < point_count; j++)
                    pb_spec_free(&specs[j]);
                free(specs);
                goto out_result;
            }
            for (long i = 0; i < point_count; i++)
                pb_spec_drop_gpu(&specs[i], dropped, sizeof(dropped));
            snprintf(result.gpu_skipped, sizeof(result.gpu_skipped),
                     "gpu: optional and %.100s: skipped %.80s; the training step is a host sleep",
                     why, dropped);
            pb_result_warn(&result, "%s", result.gpu_skipped);
            if (!quiet)
                fprintf(stderr, "pbench: warning: %s\n", result.gpu_skipped);
        }
    }

    struct pb_dataset ds;
    if (!quiet && base.dataset.has_generate && access(base.dataset.path, F_OK) != 0)
        fprintf(stderr, "pbench: generating %lld %s files into %s (first use)\n",
                (long long)base.dataset.generate.count,
                base.dataset.generate.kind == PB_GENERATE_JPEG    ? "JPEG"
                : base.dataset.generate.kind == PB_GENERATE_VIDEO ? "video"
                                                                  : "random-byte",
                base.dataset.path);
    rc = pb_dataset_open(&base.dataset, &ds, msg, sizeof(msg));
    if (rc != PB_OK) {
        fprintf(stderr, "pbench: %s: %s\n", config_path, msg);
        exit_code = exit_for(rc);
        for (long j = 0; j < point_count; j++)
            pb_spec_free(&specs[j]);
        free(specs);
        goto out_result;
    }
    for (long i = 0; i < point_count; i++)
        if (strcmp(specs[i].dataset.path, base.dataset.path) != 0) {
            fprintf(stderr, "pbench: sweeping dataset.path is not supported: run one sweep per "
                            "dataset\n");
            exit_code = PB_EXIT_USAGE;
            pb_dataset_free(&ds);
            for (long j = 0; j < point_count; j++)
                pb_spec_free(&specs[j]);
            free(specs);
            goto out_result;
        }

    int repeats = (int)base.run.repeats;
    if (!quiet) {
        fprintf(stderr, "pbench: %s: %zu files (%.1f MiB)", base.name, ds.count,
                (double)ds.total_bytes / 1048576.0);
        if (swept) {
            double lo = 0, hi = 0;
            for (long i = 0; i < point_count; i++) {
                lo += (double)specs[i].run.repeats * specs[i].run.min_time_s;
                hi += (double)specs[i].run.repeats * specs[i].run.max_time_s;
            }
            char a[32], b[32];
            format_duration(lo, a, sizeof(a));
            format_duration(hi, b, sizeof(b));
            fprintf(stderr, "; sweep of %ld points x %d repeats, interleaved: %s to %s measured, "
                            "plus warm-up\n",
                    point_count, repeats, a, b);
            if (hi > 3600)
                fprintf(stderr, "pbench: warning: this sweep may take over an hour; narrow it "
                                "with -a PATH=V1,V2 or lower run.max_time_s\n");
        } else {
            fprintf(stderr, ", %lld workers, batch %lld, prefetch %lld, %d repeats\n",
                    (long long)base.loader.workers, (long long)base.loader.batch_size,
                    (long long)base.loader.prefetch_factor, repeats);
        }
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);

    if (swept && !no_calibrate) {
        char cmsg[PB_MSG_MAX * 2];
        int crc = calibrate(config_path, overrides, override_count, &ds, false,
                            &result.calibration, quiet, cmsg, sizeof(cmsg));
        if (crc != PB_OK && crc != PB_ERR_INTERRUPTED)
            pb_result_warn(&result, "calibration failed: %s", cmsg);
    }

    struct progress progress = {.quiet = quiet, .tty = isatty(2) != 0, .points = (int)point_count,
                                .rounds_total = (int)point_count * repeats, .rounds = repeats,
                                .start_ns = pb_now_ns()};
    struct pb_run_hooks hooks = {.progress = on_progress, .tick = on_tick, .user = &progress,
                                 .stop = &interrupt_requested};
    struct pb_cupti_trace *trace = NULL;
    if (base.profile.gpu == PB_PROFILE_GPU_CUPTI && !result.gpu_skipped[0] &&
        pb_spec_uses_gpu(&base)) {
        char tmsg[PB_MSG_MAX];
        if (pb_cupti_start(&trace, tmsg, sizeof(tmsg)) != 0) {
            trace = NULL;
            pb_result_warn(&result, "profile.gpu: cupti: no trace: %s", tmsg);
        }
    }
    double overhead_sum = 0, *overhead_pairs = calloc((size_t)repeats, sizeof(double));
    int overhead_count = 0;
    bool interrupted = interrupt_requested != 0;
    /* Rounds interleaved across points: round 1 of every point, then round
     * 2, so a drift in machine speed does not pass for a difference. */
    for (int r = 0; r < repeats && !interrupted; r++) {
        for (long i = 0; i < point_count && !interrupted; i++) {
            struct pb_point_result *pt = &result.points[i];
            if (pt->error[0])
                continue;
            if (r >= specs[i].run.repeats)
                continue;
            progress.point = (int)i + 1;
            progress.round = r + 1;
            char label[256] = "";
            size_t used = 0;
            for (int a = 0; a < sweep.axis_count && used < sizeof(label); a++)
                used += (size_t)snprintf(label + used, sizeof(label) - used, "%s%s=%s",
                                         a ? " " : "", strrchr(sweep.axes[a].path, '.') + 1,
                                         sweep.axes[a].values[points[i].value[a]]);
            snprintf(progress.label, sizeof(progress.label), "%s", label);
            struct pb_point_run *run;
            rc = pb_point_open(&specs[i], &ds, &hooks, pt, &run, msg, sizeof(msg));
            if (rc == PB_OK) {
                double pair = NAN;
                rc = pb_point_repeat(run, r, overhead, &pair, msg, sizeof(msg));
                if (overhead && !isnan(pair)) {
                    overhead_pairs[overhead_count++] = pair;
                    overhead_sum += pair;
                }
                pb_point_close(run);
            }
            if (rc == PB_ERR_INTERRUPTED) {
                interrupted = true;
            } else if (rc != PB_OK) {
                pb_strlcpy(pt->error, msg, sizeof(pt->error));
                if (progress.tty && !quiet)
                    fputc('\n', stderr);
                fprintf(stderr, "pbench: %s%s%s\n", swept ? label : "", swept ? ": " : "", msg);
                if (!swept)
                    exit_code = exit_for(rc);
            }
        }
    }
    signal(SIGINT, SIG_DFL);
    if (progress.tty && !quiet)
        fputc('\n', stderr);
    if (trace) {
        char tmsg[PB_MSG_MAX];
        if (pb_cupti_stop(trace, tmsg, sizeof(tmsg)) != 0)
            pb_result_warn(&result, "profile.gpu: cupti: %s", tmsg);
        result.gpu_profile = pb_cupti_summary_json(trace);
    }

    size_t measured_points = 0;
    for (long i = 0; i < point_count; i++) {
        if (result.points[i].repeat_count > 0) {
            pb_point_summarize(&result.points[i]);
            measured_points++;
        }
    }
    if (overhead && overhead_count > 0) {
        result.overhead_measured = true;
        result.overhead_pct = pb_median(overhead_pairs, (size_t)overhead_count);
        double mean = overhead_sum / overhead_count, m2 = 0;
        for (int i = 0; i < overhead_count; i++)
            m2 += (overhead_pairs[i] - mean) * (overhead_pairs[i] - mean);
        result.overhead_noise_pct = overhead_count > 1 ? sqrt(m2 / (overhead_count - 1)) : 0;
    }
    free(overhead_pairs);
    if (interrupted) {
        result.interrupted = true;
        exit_code = PB_EXIT_INTERRUPTED;
        pb_result_warn(&result, "interrupted by the user: the result holds every repeat finished "
                                "before Ctrl-C");
    } else if (!swept && result.points[0].error[0] && result.points[0].repeat_count > 0) {
        pb_result_warn(&result, "stopped by an error: %s", result.points[0].error);
    }

    if (measured_points > 0) {
        struct pb_analysis analysis;
        if (swept && pb_analyze(&result, &analysis) == PB_OK) {
            result.analysis = pb_analysis_to_json(&analysis);
            pb_analysis_free(&analysis);
        }
        char path[PB_PATH_MAX];
        if (output)
            snprintf(path, sizeof(path), "%s", output);
        else
            default_result_path(base.name, path, sizeof(path));
        char wmsg[PB_MSG_MAX];
        if (trace) {
            /* The Chrome trace beside the result: NAME.json -> NAME.trace.json. */
            size_t len = strlen(path);
            size_t stem = len > 5 && strcmp(path + len - 5, ".json") == 0 ? len - 5 : len;
            snprintf(result.gpu_trace_path, sizeof(result.gpu_trace_path), "%.*s.trace.json",
                     (int)stem, path);
            if (pb_make_parent_dirs(path, wmsg, sizeof(wmsg)) != PB_OK ||
                pb_cupti_write_chrome_trace(trace, result.gpu_trace_path, wmsg, sizeof(wmsg)) !=
                    0) {
                pb_result_warn(&result, "profile.gpu: cupti: %s", wmsg);
                result.gpu_trace_path[0] = '\0';
            }
        }
        if (pb_result_write(&result, path, wmsg, sizeof(wmsg)) != PB_OK) {
            fprintf(stderr, "pbench: %s\n", wmsg);
            exit_code = PB_EXIT_ERROR;
        } else if (!quiet) {
            fprintf(stderr, "pbench: result written to %s\n", path);
        }
        pb_report(stdout, &result, format);
        if (baseline) {
            struct pb_result base_result;
            char bmsg[PB_MSG_MAX];
            if (pb_result_read(baseline, &base_result, bmsg, sizeof(bmsg)) != PB_OK) {
                fprintf(stderr, "pbench: --baseline: %s\n", bmsg);
                if (exit_code == PB_EXIT_OK)
                    exit_code = PB_EXIT_ERROR;
            } else {
                struct compare_options o = {
                    .threshold_pct = threshold_pct,
                    .format = format == PB_FORMAT_CSV ? (int)PB_FORMAT_TABLE : (int)format,
                    .fail_on_regression = fail_on_regression};
                fputc('\n', stdout);
                int code = compare_results(&base_result, &result, baseline, path, &o);
                if (exit_code == PB_EXIT_OK)
                    exit_code = code;
            }
            pb_result_free(&base_result);
        }
    } else if (exit_code == PB_EXIT_OK) {
        exit_code = interrupted ? PB_EXIT_INTERRUPTED : PB_EXIT_ERROR;
    }
    pb_dataset_free(&ds);
    for (long j = 0; j < point_count; j++)
        pb_spec_free(&specs[j]);
    free(specs);
    pb_cupti_free(trace);
out_result:
    free(points);
    pb_result_free(&result);
    pb_spec_free(&base);
out_args:
    free(overrides);
    free(axes);
    return exit_code;
}

/* ---- compare ------------------------------------------------------------ */

/* Compares and prints; returns the exit code. */
static int compare_results(const struct pb_result *base, const struct pb_result *next,
                           const char *base_name, const char *next_name,
                           const struct compare_options *o)
{
    struct pb_comparison cmp;
    if (pb_compare(base, next, o->threshold_pct, &cmp) != PB_OK) {
        fprintf(stderr, "pbench compare: out of memory\n");
        return PB_EXIT_ERROR;
    }
    int code = PB_EXIT_OK;
    if (cmp.incompatible && !o->force) {
        fprintf(stderr, "pbench compare: %s and %s were measured differently:\n", base_name,
                next_name);
        for (int i = 0; i < cmp.difference_count; i++)
            fprintf(stderr, "  %s\n", cmp.differences[i]);
        fprintf(stderr, "compare them anyway with --force\n");
        code = PB_EXIT_USAGE;
    } else {
        if (cmp.point_count == 0)
            fprintf(stderr, "pbench compare: no point of %s matches one of %s (points match by "
                            "their sweep axes)\n",
                    base_name, next_name);
        pb_comparison_report(stdout, &cmp, base_name, next_name, o->format);
        if (o->fail_on_regression && cmp.regressions > 0)
            code = PB_EXIT_REGRESSION;
    }
    pb_comparison_free(&cmp);
    return code;
}

static int parse_threshold(const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || (*end && strcmp(end, "%") != 0) || !(v >= 0 && v < 1000))
        return PB_ERR_CONFIG;
    *out = v;
    return PB_OK;
}

static int cmd_compare(int argc, char **argv)
{
    struct compare_options o = {.threshold_pct = 5, .format = PB_FORMAT_TABLE};
    const char *files[2] = {NULL, NULL};
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--threshold") == 0 && i + 1 < argc) {
            if (parse_threshold(argv[++i], &o.threshold_pct) != PB_OK)
                return usage_error("compare", "--threshold takes a percentage such as 5%%, got '%s'",
                                   argv[i]);
        } else if ((strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) && i + 1 < argc) {
            enum pb_format f;
            if (pb_format_parse(argv[++i], &f) != PB_OK || f == PB_FORMAT_CSV)
                return usage_error("compare", "unknown format '%s'; allowed: table, json, markdown",
                                   argv[i]);
            o.format = (int)f;
        } else if (strcmp(a, "--force") == 0) {
            o.force = true;
        } else if (strcmp(a, "--fail-on-regression") == 0) {
            o.fail_on_regression = true;
        } else if (a[0] == '-' || nfiles == 2) {
            return usage_error("compare", "unexpected argument '%s'", a);
        } else {
            files[nfiles++] = a;
        }
    }
    if (nfiles != 2)
        return usage_error("compare", "%s", "expected BASE.json and NEW.json");
    struct pb_result base, next;
    char msg[PB_MSG_MAX];
    memset(&next, 0, sizeof(next));
    if (pb_result_read(files[0], &base, msg, sizeof(msg)) != PB_OK ||
        pb_result_read(files[1], &next, msg, sizeof(msg)) != PB_OK) {
        fprintf(stderr, "pbench compare: %s\n", msg);
        pb_result_free(&base);
        pb_result_free(&next);
        return PB_EXIT_ERROR;
    }
    int code = compare_results(&base, &next, files[0], files[1], &o);
    pb_result_free(&base);
    pb_result_free(&next);
    return code;
}

/* ---- history ------------------------------------------------------------ */

static void git_revision(char *buf, size_t buflen)
{
    buf[0] = 0;
    const char *env = getenv("GITHUB_SHA");
    if (env && *env) {
        pb_strlcpy(buf, env, buflen);
        return;
    }
    FILE *p = popen("git rev-parse --short HEAD 2>/dev/null", "r");
    if (!p)
        return;
    if (fgets(buf, (int)buflen, p))
        buf[strcspn(buf, "\r\n")] = 0;
    else
        buf[0] = 0;
    pclose(p);
}

static int cmd_history(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("history", "%s", "expected 'add' or 'show'");
    const char *db = "results/history.db", *config = NULL, *metric = "samples_per_s";
    const char *revision = NULL, *file = NULL;
    double threshold = 5;
    bool add = strcmp(argv[1], "add") == 0;
    if (!add && strcmp(argv[1], "show") != 0)
        return usage_error("history", "expected 'add' or 'show', got '%s'", argv[1]);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--db") == 0 && has_value)
            db = argv[++i];
        else if (strcmp(a, "--config") == 0 && has_value && !add)
            config = argv[++i];
        else if (strcmp(a, "--metric") == 0 && has_value && !add)
            metric = argv[++i];
        else if (strcmp(a, "--revision") == 0 && has_value && add)
            revision = argv[++i];
        else if (strcmp(a, "--threshold") == 0 && has_value && !add) {
            if (parse_threshold(argv[++i], &threshold) != PB_OK)
                return usage_error("history", "--threshold takes a percentage such as 5%%, got '%s'",
                                   argv[i]);
        } else if (add && a[0] != '-' && !file)
            file = a;
        else
            return usage_error("history", "unexpected argument '%s'", a);
    }
    char msg[PB_MSG_MAX];
    if (add) {
        if (!file)
            return usage_error("history", "%s", "history add needs a RESULT.json");
        struct pb_result result;
        if (pb_result_read(file, &result, msg, sizeof(msg)) != PB_OK) {
            fprintf(stderr, "pbench history: %s\n", msg);
            pb_result_free(&result);
            return PB_EXIT_ERROR;
        }
        char rev[64];
        if (revision)
            pb_strlcpy(rev, revision, sizeof(rev));
        else
            git_revision(rev, sizeof(rev));
        int rc = pb_history_add(db, &result, rev, file, msg, sizeof(msg));
        if (rc == PB_OK)
            printf("added %zu point(s) of %s (%s, revision %s) to %s\n", result.point_count,
                   result.name, result.created, rev[0] ? rev : "unknown", db);
        else
            fprintf(stderr, "pbench history: %s\n", msg);
        pb_result_free(&result);
        return rc == PB_OK ? PB_EXIT_OK : PB_EXIT_ERROR;
    }
    int steps = pb_history_show(db, config, metric, threshold, msg, sizeof(msg));
    if (steps < 0) {
        fprintf(stderr, "pbench history: %s\n", msg);
        return steps == PB_ERR_CONFIG ? PB_EXIT_USAGE : PB_EXIT_ERROR;
    }
    return steps > 0 ? PB_EXIT_REGRESSION : PB_EXIT_OK;
}

/* ---- calibrate ---------------------------------------------------------- */

static int cmd_calibrate(int argc, char **argv)
{
    const char **overrides = calloc((size_t)argc, sizeof(char *));
    int override_count = 0;
    const char *config_path = NULL;
    int exit_code = PB_EXIT_OK;
    bool gpu = false;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--set") == 0) && i + 1 < argc)
            overrides[override_count++] = argv[++i];
        else if (strcmp(argv[i], "--gpu") == 0)
            gpu = true;
        else if (argv[i][0] != '-' && !config_path)
            config_path = argv[i];
        else {
            free(overrides);
            return usage_error("calibrate", "unexpected argument '%s'", argv[i]);
        }
    }
    if (!config_path) {
        free(overrides);
        return usage_error("calibrate", "%s", "expected a CONFIG file");
    }
    char msg[PB_MSG_MAX * 2];
    struct pb_spec spec;
    int rc = load_point_spec(config_path, overrides, override_count, NULL, NULL, NULL, 0, &spec,
                             msg, sizeof(msg));
    struct pb_dataset ds;
    memset(&ds, 0, sizeof(ds));
    if (rc == PB_OK)
        rc = pb_dataset_open(&spec.dataset, &ds, msg, sizeof(msg));
    struct pb_calibration cal = {0};
    if (rc == PB_OK)
        rc = calibrate(config_path, overrides, override_count, &ds, gpu, &cal, false, msg,
                       sizeof(msg));
    if (rc != PB_OK) {
        fprintf(stderr, "pbench calibrate: %s\n", msg);
        exit_code = exit_for(rc);
    } else {
        printf("%s on this machine, at best:\n", spec.name);
        printf("  one core        %.1f samples/s  (the whole pipeline in one worker, no step)\n",
               cal.single_core_samples_per_s);
        char cores[32];
        snprintf(cores, sizeof(cores), "all %d cores", cal.cores);
        printf("  %-15s %.1f samples/s  if the pipeline scaled perfectly\n", cores,
               cal.single_core_samples_per_s * cal.cores);
        printf("  memcpy          %.1f GB/s\n", cal.memcpy_gb_per_s);
        if (cal.decode_ns_per_frame > 0)
            printf("  video decode    %.1f frames/s on one core (demux + decode, frames decoded)\n",
                   1e9 / cal.decode_ns_per_frame);
        if (cal.h2d_bytes)
            printf("  host-to-device  pinned %.1f GB/s, pageable %.1f GB/s  (cudaMemcpyAsync of "
                   "one %.1f MiB batch, as bandwidthTest)\n",
                   cal.h2d_pinned_gb_s, cal.h2d_pageable_gb_s, (double)cal.h2d_bytes / 1048576.0);
    }
    pb_dataset_free(&ds);
    pb_spec_free(&spec);
    free(overrides);
    return exit_code;
}

/* ---- gen ---------------------------------------------------------------- */

static int cmd_gen(int argc, char **argv)
{
    struct pb_generate_spec spec;
    char msg[PB_MSG_MAX];
    if (pb_opt_set_defaults(pb_generate_opts, &spec, msg, sizeof(msg)) != PB_OK) {
        fprintf(stderr, "pbench gen: %s\n", msg);
        return PB_EXIT_ERROR;
    }
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return cmd_help(2, (char *[]){"help", "gen", NULL});
        if (strncmp(arg, "--", 2) != 0 || i + 1 >= argc)
            return usage_error("gen", "expected --NAME VALUE, got '%s'", arg);
        const char *value = argv[++i];
        if (strcmp(arg, "--out") == 0) {
            out = value;
            continue;
        }
        char name[64], key[80];
        pb_strlcpy(name, arg + 2, sizeof(name));
        for (char *c = name; *c; c++)
            if (*c == '-')
                *c = '_';
        const struct pb_opt *opt = pb_opt_find(pb_generate_opts, name);
        if (!opt) {
            const char *near = pb_opt_nearest(pb_generate_opts, name);
            char all[512];
            pb_opt_names(pb_generate_opts, all, sizeof(all));
            fprintf(stderr, "pbench gen: unknown option '%s'%s%s%s; options: %s, out\n", arg,
                    near ? "; did you mean '--" : "", near ? near : "", near ? "'?" : "", all);
            return PB_EXIT_USAGE;
        }
        snprintf(key, sizeof(key), "--%s", arg + 2);
        if (pb_opt_parse(opt, value, &spec, key, msg, sizeof(msg)) != PB_OK) {
            fprintf(stderr, "pbench gen: %s\n", msg);
            return PB_EXIT_USAGE;
        }
    }
    if (!out)
        return usage_error("gen", "%s", "--out DIR is required");
    if (access(out, F_OK) == 0 && rmdir(out) != 0) {
        fprintf(stderr, "pbench gen: '%s' already exists and is not an empty folder; choose a new "
                        "one\n",
                out);
        return PB_EXIT_USAGE;
    }
    uint64_t start = pb_now_ns();
    int rc = pb_dataset_generate(&spec, out, msg, sizeof(msg));
    if (rc != PB_OK) {
        fprintf(stderr, "pbench gen: %s\n", msg);
        return exit_for(rc);
    }
    struct pb_dataset_spec ds = {.shard = {0, 1}};
    pb_strlcpy(ds.path, out, sizeof(ds.path));
    struct pb_dataset index;
    if (pb_dataset_open(&ds, &index, msg, sizeof(msg)) == PB_OK) {
        printf("generated %zu files (%.1f MiB) in %s in %.1f s\n", index.count,
               (double)index.total_bytes / 1048576.0, out, (double)(pb_now_ns() - start) / 1e9);
        pb_dataset_free(&index);
    }
    return PB_EXIT_OK;
}

/* ---- report ------------------------------------------------------------- */

static int cmd_report(int argc, char **argv)
{
    enum pb_format format = PB_FORMAT_TABLE;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--format") == 0 || strcmp(argv[i], "-f") == 0) && i + 1 < argc) {
            if (pb_format_parse(argv[++i], &format) != PB_OK)
                return usage_error("report", "unknown format '%s'; allowed: table, json, markdown, csv",
                                   argv[i]);
        } else if (argv[i][0] == '-' || path) {
            return usage_error("report", "unexpected argument '%s'", argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return usage_error("report", "%s", "expected a RESULT.json file");
    struct pb_result result;
    char msg[PB_MSG_MAX];
    if (pb_result_read(path, &result, msg, sizeof(msg)) != PB_OK) {
        fprintf(stderr, "pbench: %s\n", msg);
        pb_result_free(&result);
        return PB_EXIT_ERROR;
    }
    /* The analysis is recomputed from the measurements, so a file written
     * by an older pbench reads with today's rules everywhere. */
    struct pb_analysis analysis;
    bool analyzed = pb_analyze(&result, &analysis) == PB_OK;
    if (analyzed && result.point_count > 1) {
        json_decref(result.analysis);
        result.analysis = pb_analysis_to_json(&analysis);
    }
    pb_report_analyzed(stdout, &result, analyzed ? &analysis : NULL, format);
    if (analyzed)
        pb_analysis_free(&analysis);
    pb_result_free(&result);
    return PB_EXIT_OK;
}

/* ---- list --------------------------------------------------------------- */

static int cmd_list(int argc, char **argv)
{
    char msg[PB_MSG_MAX];
    if (pb_list_print(stdout, argc > 1 ? argv[1] : NULL, msg, sizeof(msg)) != PB_OK) {
        fprintf(stderr, "pbench list: %s\n", msg);
        return PB_EXIT_USAGE;
    }
    return PB_EXIT_OK;
}

/* ---- version ------------------------------------------------------------ */

static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    struct pb_machine m;
    pb_machine_probe(&m);
    printf("pbench %s (%s build, %s%s%s)\n", PB_VERSION, PB_BUILD_TYPE, m.compiler,
           strcmp(PB_SANITIZE, "OFF") ? ", sanitize=" : "", strcmp(PB_SANITIZE, "OFF") ? PB_SANITIZE : "");
    printf("  CUDA support: %s; MPI support: %s\n", PB_HAVE_CUDA ? "built" : "not built",
           PB_HAVE_MPI ? "built" : "not built");
    for (int i = 0; i < m.library_count; i++)
        printf("  %-14s %s\n", m.libraries[i][0], m.libraries[i][1]);
    if (m.cuda_runtime_version) {
        printf("  CUDA runtime %d.%d, ", m.cuda_runtime_version / 1000,
               (m.cuda_runtime_version % 1000) / 10);
        if (m.cuda_driver_version)
            printf("driver %d.%d\n", m.cuda_driver_version / 1000,
                   (m.cuda_driver_version % 1000) / 10);
        else
            printf("no CUDA driver\n");
    }
    printf("  GPU: %s%s%s\n", m.gpu_count ? m.gpu_name : "", m.gpu_count ? ", " : "", m.gpu_status);
    printf("  machine: %s, %d cores / %d threads, %s\n", m.cpu_model, m.cores, m.pus, m.kernel);
    return PB_EXIT_OK;
}

/* ---- help --------------------------------------------------------------- */

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stdout);
        return PB_EXIT_OK;
    }
    const struct command *cmd = find_command(argv[1]);
    if (!cmd) {
        fprintf(stderr, "pbench help: unknown command '%s'\n", argv[1]);
        print_usage(stderr);
        return PB_EXIT_USAGE;
    }
    printf("usage: %s\n\n%s\n", cmd->usage, cmd->help);
    return PB_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return PB_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return cmd_help(1, argv);
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(1, argv);
    const struct command *cmd = find_command(argv[1]);
    if (!cmd) {
        fprintf(stderr, "pbench: unknown command '%s'\n\n", argv[1]);
        print_usage(stderr);
        return PB_EXIT_USAGE;
    }
    return cmd->fn(argc - 1, argv + 1);
}
