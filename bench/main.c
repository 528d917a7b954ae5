/* pbench: the command line. Sub-commands: run, compare, history, calibrate,
 * gen, report, list, version, help. This file parses arguments and renders;
 * a run or sweep is a session (bench/session.h), drawn on the terminal by
 * bench/progress.h.
 * Exit codes: 0 success, 1 error, 2 usage or config error, 3 regression
 * (compare, run --baseline, history show), 130 interrupted (partial results
 * written). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/analysis.h"
#include "bench/calibrate.h"
#include "bench/compare.h"
#include "bench/config.h"
#include "bench/history.h"
#include "bench/pb.h"
#include "bench/progress.h"
#include "bench/result.h"
#include "bench/session.h"
#include "pipelines/dataset.h"

#define PB_EXIT_INTERRUPTED 130

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
static int render_comparison(const struct pb_comparison *cmp, const char *base_name,
                             const char *next_name, const struct compare_options *o);
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

static int exit_for(int rc)
{
    switch (rc) {
    case PB_OK: return PB_EXIT_OK;
    case PB_ERR_CONFIG: return PB_EXIT_USAGE;
    case PB_ERR_INTERRUPTED: return PB_EXIT_INTERRUPTED;
    default: return PB_EXIT_ERROR;
    }
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
    struct pb_session_opts opts = {.overrides = overrides, .axes = axes, .calibrate = true,
                                   .threshold_pct = 5};
    struct compare_options compare = {.threshold_pct = 5};
    enum pb_format format = PB_FORMAT_TABLE;
    bool quiet = false;
    int c, exit_code = -1;
    optind = 1;
    while (exit_code < 0 && (c = getopt_long(argc, argv, "s:a:o:f:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 's': overrides[opts.override_count++] = optarg; break;
        case 'a': axes[opts.axis_count++] = optarg; break;
        case 'o': opts.output_path = optarg; break;
        case 'f':
            if (pb_format_parse(optarg, &format) != PB_OK)
                exit_code = usage_error("run", "unknown format '%s'; allowed: table, json, markdown, csv",
                                        optarg);
            break;
        case 'q': quiet = true; break;
        case 'O': opts.overhead = true; break;
        case 'C': opts.calibrate = false; break;
        case 'B': opts.baseline_path = optarg; break;
        case 'F': compare.fail_on_regression = true; break;
        case 'T':
            if (parse_threshold(optarg, &opts.threshold_pct) != PB_OK)
                exit_code = usage_error("run", "--threshold takes a percentage such as 5%%, got '%s'",
                                        optarg);
            break;
        case 'h': exit_code = cmd_help(2, (char *[]){"help", "run", NULL}); break;
        default: exit_code = usage_error("run", "%s", "bad option"); break;
        }
    }
    if (exit_code < 0 && optind != argc - 1)
        exit_code = usage_error("run", "%s",
                                optind >= argc ? "expected one CONFIG file"
                                               : "expected one CONFIG file, got more");
    if (exit_code < 0) {
        opts.config_path = argv[optind];
        struct pb_progress progress;
        struct pb_session_hooks hooks;
        pb_progress_init(&progress, "pbench", quiet, &hooks);
        struct pb_result result;
        struct pb_session_outcome outcome;
        char msg[PB_MSG_MAX * 2];
        exit_code = exit_for(pb_session_run(&opts, &hooks, &result, &outcome, msg, sizeof(msg)));
        if (outcome.measured)
            pb_report(stdout, &result, format);
        if (outcome.compared) {
            compare.format = format == PB_FORMAT_CSV ? (int)PB_FORMAT_TABLE : (int)format;
            fputc('\n', stdout);
            int code = render_comparison(&outcome.comparison, opts.baseline_path,
                                         outcome.result_path, &compare);
            if (exit_code == PB_EXIT_OK)
                exit_code = code;
        }
        pb_session_outcome_free(&outcome);
        pb_result_free(&result);
    }
    free(overrides);
    free(axes);
    return exit_code;
}

/* ---- compare ------------------------------------------------------------ */

/* Prints a comparison; returns the exit code. */
static int render_comparison(const struct pb_comparison *cmp, const char *base_name,
                             const char *next_name, const struct compare_options *o)
{
    if (cmp->incompatible && !o->force) {
        fprintf(stderr, "pbench compare: %s and %s were measured differently:\n", base_name,
                next_name);
        for (int i = 0; i < cmp->difference_count; i++)
            fprintf(stderr, "  %s\n", cmp->differences[i]);
        fprintf(stderr, "compare them anyway with --force\n");
        return PB_EXIT_USAGE;
    }
    if (cmp->point_count == 0)
        fprintf(stderr, "pbench compare: no point of %s matches one of %s (points match by "
                        "their sweep axes)\n",
                base_name, next_name);
    pb_comparison_report(stdout, cmp, base_name, next_name, o->format);
    return o->fail_on_regression && cmp->regressions > 0 ? PB_EXIT_REGRESSION : PB_EXIT_OK;
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
    struct pb_comparison cmp;
    int code = PB_EXIT_ERROR;
    if (pb_compare(&base, &next, o.threshold_pct, &cmp) != PB_OK) {
        fprintf(stderr, "pbench compare: out of memory\n");
    } else {
        code = render_comparison(&cmp, files[0], files[1], &o);
        pb_comparison_free(&cmp);
    }
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
    struct pb_session_opts opts = {.overrides = overrides};
    int exit_code = -1;
    for (int i = 1; i < argc && exit_code < 0; i++) {
        if ((strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--set") == 0) && i + 1 < argc)
            overrides[opts.override_count++] = argv[++i];
        else if (strcmp(argv[i], "--gpu") == 0)
            opts.calibrate_gpu = true;
        else if (argv[i][0] != '-' && !opts.config_path)
            opts.config_path = argv[i];
        else
            exit_code = usage_error("calibrate", "unexpected argument '%s'", argv[i]);
    }
    if (exit_code < 0 && !opts.config_path)
        exit_code = usage_error("calibrate", "%s", "expected a CONFIG file");
    if (exit_code < 0) {
        struct pb_progress progress;
        struct pb_session_hooks hooks;
        pb_progress_init(&progress, "pbench calibrate", false, &hooks);
        struct pb_calibration cal;
        char name[128], msg[PB_MSG_MAX * 2];
        int rc = pb_session_calibrate(&opts, &hooks, &cal, name, sizeof(name), msg, sizeof(msg));
        if (rc == PB_OK)
            pb_calibration_print(stdout, name, &cal);
        exit_code = exit_for(rc);
    }
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
    if (result.point_count > 1) {
        struct pb_analysis analysis;
        if (pb_analyze(&result, &analysis) == PB_OK) {
            json_decref(result.analysis);
            result.analysis = pb_analysis_to_json(&analysis);
            pb_analysis_free(&analysis);
        }
    }
    pb_report(stdout, &result, format);
    pb_result_free(&result);
    return PB_EXIT_OK;
}

/* ---- list --------------------------------------------------------------- */

static void list_options(const struct pb_opt *opts, const char *prefix)
{
    if (!opts || !opts[0].name) {
        printf("    (no options)\n");
        return;
    }
    for (const struct pb_opt *o = opts; o->name; o++) {
        char what[256], key[128];
        pb_opt_describe(o, what, sizeof(what));
        snprintf(key, sizeof(key), "%s%s", prefix, o->name);
        printf("    %-26s %-24s default %-8s %s\n", key, what, o->def && o->def[0] ? o->def : "\"\"",
               o->help ? o->help : "");
    }
}

static bool wanted(const char *filter, const char *name)
{
    return !filter || strcmp(filter, name) == 0;
}

static int cmd_list(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    bool shown = false;
    size_t n;
    const struct pb_stage_ops *const *stages = pb_stage_all(&n);
    if (!filter)
        printf("Stages (pipeline: - NAME: {options}):\n");
    for (size_t i = 0; i < n; i++) {
        const struct pb_stage_ops *s = stages[i];
        if (!wanted(filter, s->name))
            continue;
        shown = true;
        printf("  %-20s %s [%s%s] %s\n", s->name, s->unavailable_reason ? "unavailable" : "available",
               s->flags & PB_STAGE_CONSUMER ? "consumer" : "worker",
               s->flags & PB_STAGE_DECODER ? ", takes decoder: NAME" : "", s->summary);
        if (s->unavailable_reason)
            printf("    why unavailable: %s\n", s->unavailable_reason);
        if (s->flags & PB_STAGE_DECODER)
            printf("    decoder                    one of the decoders below; its options go here too\n");
        if (s->opts)
            list_options(s->opts, "");
        else if (!(s->flags & PB_STAGE_DECODER))
            list_options(NULL, "");
    }
    const struct pb_decoder_ops *const *decoders = pb_decoder_all(&n);
    if (!filter)
        printf("\nDecoders (pipeline: - decode: {decoder: NAME, options}):\n");
    for (size_t i = 0; i < n; i++) {
        const struct pb_decoder_ops *d = decoders[i];
        if (!wanted(filter, d->name))
            continue;
        shown = true;
        printf("  %-20s %s %s\n", d->name, d->unavailable_reason ? "unavailable" : "available",
               d->summary);
        if (d->unavailable_reason)
            printf("    why unavailable: %s\n", d->unavailable_reason);
        list_options(d->opts, "");
    }
    static const struct {
        const char *name;
        const struct pb_opt *opts;
    } sections[] = {{"dataset", pb_dataset_opts},
                    {"dataset.generate", pb_generate_opts},
                    {"loader", pb_loader_opts},
                    {"run", pb_run_opts}};
    if (!filter)
        printf("\nConfig sections:\n");
    for (size_t i = 0; i < PB_ARRAY_LEN(sections); i++) {
        if (!wanted(filter, sections[i].name))
            continue;
        shown = true;
        printf("  %s\n", sections[i].name);
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "%s.", sections[i].name);
        list_options(sections[i].opts, prefix);
    }
    if (!shown) {
        fprintf(stderr, "pbench list: nothing is called '%s'; run 'pbench list' for every entry\n",
                filter);
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
