/* The commands that read or write files without measuring a pipeline
 * (history, calibrate, gen, report, list, version); run and compare, which
 * measure through one session set-up, are main.c's. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/analyze/analysis.h"
#include "bench/analyze/verdict.h"
#include "bench/analyze/compare.h"
#include "bench/analyze/history.h"
#include "bench/base/fileio.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/cli/cli.h"
#include "bench/cli/list.h"
#include "bench/cli/progress.h"
#include "bench/config/config.h"
#include "bench/report/format.h"
#include "bench/report/history_text.h"
#include "bench/result/result.h"
#include "bench/session/calibrate.h"
#include "bench/cli/serve.h"
#include "bench/session/session.h"
#include "bench/sys/machine.h"
#include "bench/sys/paths.h"
#include "pipelines/dataset.h"
#include "pipelines/generate.h"

/* ---- history ------------------------------------------------------------ */

/* history show's output: the series read once, rendered in format to
 * stdout or to output (atomically, never over the database). The exit
 * code says whether a step is a regression (3), else whether a series'
 * newest run is suspect (5), whatever the format: of the metric named with
 * --metric, else of any metric the gate gates on (the table then ends with
 * each one's step). */
static int history_show(const char *db, const char *config, const char *metric, bool gate,
                        double threshold, enum pb_format format, const char *output)
{
    char msg[PB_MSG_MAX * 2];
    if (output && pb_output_check_inputs(output, &db, 1, msg, sizeof(msg)) != PB_OK) {
        pb_cli_error("history", msg);
        return PB_EXIT_ERROR;
    }
    struct pb_history history;
    int rc = pb_history_load(db, config, metric, threshold, &history, msg, sizeof(msg));
    if (rc != PB_OK) {
        pb_cli_error("history", msg);
        return pb_cli_exit(rc);
    }
    rc = pb_history_report(stdout, output, &history, (int)format, msg, sizeof(msg));
    int regressions = history.regressions, suspects = history.suspects;
    pb_history_free(&history);
    if (rc != PB_OK) {
        pb_cli_error("history", msg);
        return PB_EXIT_ERROR;
    }
    if (gate) {
        bool text = format == PB_FORMAT_TABLE && !output;
        regressions = pb_history_gate(text ? stdout : NULL, db, config, threshold, &suspects, msg,
                                      sizeof(msg));
        if (regressions < 0) {
            pb_cli_error("history", msg);
            return pb_cli_exit(regressions);
        }
    }
    return regressions ? PB_EXIT_REGRESSION : suspects ? PB_EXIT_SUSPECT : PB_EXIT_OK;
}

/* history show --format NAME: one with a history form, or a usage error. */
static int history_format(const char *name, enum pb_format *format)
{
    if (pb_format_parse(name, format) == PB_OK && pb_formats[*format].history)
        return PB_OK;
    char names[128], fmt[256];
    pb_format_history_names(names, sizeof(names), ", ");
    snprintf(fmt, sizeof(fmt), "history show --format takes %s; got '%%s'", names);
    return pb_cli_usage_error("history", fmt, name);
}

/* What `pbench history add|show` was given. */
struct history_args {
    const char *db, *config, *metric, *revision, *file, *output;
    double threshold;
    enum pb_format format;
    bool force, metric_named;
};

/* Reads history's options the way run reads its own (getopt_long: --db
 * PATH and --db=PATH alike); an option of the other sub-command is a usage
 * error. Returns -1 to go on, else the exit code. */
static int history_parse(int argc, char **argv, bool add, struct history_args *h)
{
    enum { DB = 256, CONFIG, METRIC, REVISION, FORCE, THRESHOLD };
    static const struct option longopts[] = {
        {"db", required_argument, NULL, DB},        {"config", required_argument, NULL, CONFIG},
        {"metric", required_argument, NULL, METRIC}, {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'},   {"revision", required_argument, NULL, REVISION},
        {"force", no_argument, NULL, FORCE},        {"threshold", required_argument, NULL, THRESHOLD},
        {0, 0, 0, 0}};
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:f:", longopts, NULL)) != -1) {
        bool show_only = c == CONFIG || c == METRIC || c == 'o' || c == 'f' || c == THRESHOLD;
        bool add_only = c == REVISION || c == FORCE;
        if (c == '?' || c == ':' || (add && show_only) || (!add && add_only))
            return pb_cli_usage_error("history", "unexpected argument '%s'", argv[optind - 1]);
        if (c == DB)
            h->db = optarg;
        else if (c == CONFIG)
            h->config = optarg;
        else if (c == METRIC) {
            h->metric = optarg;
            h->metric_named = true;
        } else if (c == 'o')
            h->output = optarg;
        else if (c == 'f' && history_format(optarg, &h->format) != PB_OK)
            return PB_EXIT_USAGE;
        else if (c == REVISION)
            h->revision = optarg;
        else if (c == FORCE)
            h->force = true;
        else if (c == THRESHOLD && pb_threshold_parse(optarg, &h->threshold) != PB_OK)
            return pb_cli_usage_error(
                "history", "--threshold takes a percentage such as 5%%, got '%s'", optarg);
    }
    for (int i = optind; i < argc; i++) {
        if (!add || h->file)
            return pb_cli_usage_error("history", "unexpected argument '%s'", argv[i]);
        h->file = argv[i];
    }
    return -1;
}

int cmd_history(int argc, char **argv)
{
    if (argc < 2)
        return pb_cli_usage_error("history", "%s", "expected 'add' or 'show'");
    bool add = strcmp(argv[1], "add") == 0;
    if (!add && strcmp(argv[1], "show") != 0)
        return pb_cli_usage_error("history", "expected 'add' or 'show', got '%s'", argv[1]);
    struct history_args h = {.db = PB_HISTORY_DB, .metric = "samples_per_s", .threshold = 5,
                             .format = PB_FORMAT_TABLE};
    int code = history_parse(argc - 1, argv + 1, add, &h);
    if (code >= 0)
        return code;
    if (!add)
        return history_show(h.db, h.config, h.metric, !h.metric_named, h.threshold, h.format,
                            h.output);
    if (!h.file)
        return pb_cli_usage_error("history", "%s", "history add needs a RESULT.json");
    char msg[PB_MSG_MAX * 2], summary[PB_MSG_MAX * 2];
    int rc = pb_history_add_file(h.db, h.file, h.revision, h.force, summary, sizeof(summary), msg,
                                 sizeof(msg));
    if (rc < 0) {
        pb_cli_error("history", msg);
        return pb_cli_exit(rc);
    }
    char shown[PB_PRINTABLE_SIZE(sizeof(summary))];
    printf("%s\n", pb_printable(shown, sizeof(shown), summary));
    return PB_EXIT_OK;
}

/* ---- calibrate ---------------------------------------------------------- */

int cmd_calibrate(int argc, char **argv)
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
            exit_code = pb_cli_usage_error("calibrate", "unexpected argument '%s'", argv[i]);
    }
    if (exit_code < 0 && !opts.config_path)
        exit_code = pb_cli_usage_error("calibrate", "%s", "expected a CONFIG file");
    char config[PB_PATH_MAX], found_msg[PB_MSG_MAX * 2];
    if (exit_code < 0 && pb_config_by_name(opts.config_path, config, sizeof(config), found_msg,
                                        sizeof(found_msg)) != PB_OK) {
        pb_cli_error("calibrate", found_msg);
        exit_code = PB_EXIT_USAGE;
    }
    if (exit_code < 0)
        opts.config_path = config;
    if (exit_code < 0) {
        struct pb_progress progress;
        struct pb_session_hooks hooks;
        pb_progress_init(&progress, "pbench calibrate", false, &hooks);
        struct pb_calibration cal;
        char name[128], msg[PB_MSG_MAX * 2];
        int rc = pb_session_calibrate(&opts, &hooks, &cal, name, sizeof(name), msg, sizeof(msg));
        if (rc == PB_OK)
            pb_calibration_print(stdout, name, &cal);
        exit_code = pb_cli_exit(rc);
    }
    free(overrides);
    return exit_code;
}

/* ---- gen ---------------------------------------------------------------- */

int cmd_gen(int argc, char **argv)
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
            return pb_cli_help(2, (char *[]){"help", "gen", NULL});
        if (strncmp(arg, "--", 2) != 0 || i + 1 >= argc)
            return pb_cli_usage_error("gen", "expected --NAME VALUE, got '%s'", arg);
        const char *value = argv[++i];
        if (strcmp(arg, "--out") == 0) {
            out = value;
            continue;
        }
        /* An unknown flag's message lists the options; --out is one too. */
        const struct pb_opt *opt = pb_opt_find_flag(pb_generate_opts, arg, msg, sizeof(msg));
        if (!opt || pb_opt_parse(opt, value, &spec, arg, msg, sizeof(msg)) != PB_OK) {
            fprintf(stderr, "pbench gen: %s%s\n", msg, opt ? "" : ", out");
            return PB_EXIT_USAGE;
        }
    }
    if (!out)
        return pb_cli_usage_error("gen", "%s", "--out DIR is required");
    uint64_t start = pb_now_ns();
    struct pb_dataset index;
    int rc = pb_dataset_generate_new(&spec, out, &index, msg, sizeof(msg));
    if (rc != PB_OK) {
        fprintf(stderr, "pbench gen: %s\n", msg);
        return pb_cli_exit(rc);
    }
    printf("generated %zu %s (%.1f MiB) in %s in %.1f s\n", index.count,
           index.shard_count ? "samples" : "files", (double)index.total_bytes / 1048576.0, out,
           (double)(pb_now_ns() - start) / 1e9);
    if (index.shard_count)
        printf("packed into %zu tar shards: read them with -s dataset.format=tar\n",
               index.shard_count);
    pb_dataset_free(&index);
    return PB_EXIT_OK;
}

/* ---- report ------------------------------------------------------------- */

/* Reads the result file at path and analyzes it again from its
 * measurements, so a file written by an older pbench reads with today's
 * rules everywhere; the analysis goes into result->analysis where it ranks
 * points. Two configs side by side (interleaved) are compared, not ranked
 * for a pick: *analyzed stays false. PB_OK, and the caller frees result
 * (and analysis when *analyzed); or PB_ERR, the error said, nothing held. */
static int read_analyzed(const char *path, struct pb_result *result,
                         struct pb_analysis *analysis, bool *analyzed)
{
    char msg[PB_MSG_MAX];
    *analyzed = false;
    if (pb_result_read(path, result, msg, sizeof(msg)) != PB_OK) {
        pb_cli_error(NULL, msg);
        pb_result_free(result);
        return PB_ERR;
    }
    *analyzed = !result->interleaved && pb_analyze(result, analysis) == PB_OK;
    if (*analyzed && result->point_count > 1) {
        json_decref(result->analysis);
        result->analysis = pb_analysis_to_json(analysis);
    }
    return PB_OK;
}

int cmd_report(int argc, char **argv)
{
    enum pb_format format = PB_FORMAT_TABLE;
    enum pb_report_rows rows = PB_ROWS_POINTS;
    const char *path = NULL, *output = NULL;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--output") == 0 || strcmp(argv[i], "-o") == 0) && i + 1 < argc) {
            output = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
            if (pb_report_rows_parse(argv[++i], &rows) != PB_OK)
                return pb_cli_usage_error("report", "--rows takes points or repeats, got '%s'",
                                          argv[i]);
            continue;
        }
        if ((strcmp(argv[i], "--format") == 0 || strcmp(argv[i], "-f") == 0) && i + 1 < argc) {
            if (pb_format_parse(argv[++i], &format) != PB_OK)
                return pb_cli_format_error("report", argv[i], false);
        } else if (argv[i][0] == '-' || path) {
            return pb_cli_usage_error("report", "unexpected argument '%s'", argv[i]);
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return pb_cli_usage_error("report", "%s", "expected a RESULT.json file");
    if (rows == PB_ROWS_REPEATS && !pb_formats[format].repeats)
        return pb_cli_usage_error("report", "--rows repeats is for --format csv or tsv, not %s",
                                  pb_formats[format].name);
    struct pb_result result;
    char msg[PB_MSG_MAX];
    if (output && pb_output_check_inputs(output, &path, 1, msg, sizeof(msg)) != PB_OK) {
        pb_cli_error("report", msg); /* before reading: never over its own input */
        return PB_EXIT_ERROR;
    }
    struct pb_analysis analysis;
    bool analyzed;
    if (read_analyzed(path, &result, &analysis, &analyzed) != PB_OK)
        return PB_EXIT_ERROR;
    int code = PB_EXIT_OK;
    if (!output)
        pb_report_rows(stdout, &result, analyzed ? &analysis : NULL, format, rows);
    else if (pb_report_write(output, &result, analyzed ? &analysis : NULL, (int)format, rows, msg,
                             sizeof(msg)) != PB_OK) {
        pb_cli_error("report", msg);
        code = PB_EXIT_ERROR;
    }
    if (result.interleaved && format == PB_FORMAT_TABLE && !output)
        printf("\nboth configs of an interleaved comparison; the verdicts: pbench compare %s\n",
               path);
    if (analyzed)
        pb_analysis_free(&analysis);
    pb_result_free(&result);
    return code;
}

/* ---- list --------------------------------------------------------------- */

int cmd_list(int argc, char **argv)
{
    char msg[PB_MSG_MAX];
    if (pb_list_print(stdout, argc > 1 ? argv[1] : NULL, msg, sizeof(msg)) != PB_OK) {
        fprintf(stderr, "pbench list: %s\n", msg);
        return PB_EXIT_USAGE;
    }
    return PB_EXIT_OK;
}

/* ---- version ------------------------------------------------------------ */

int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    struct pb_machine m;
    pb_machine_probe(&m);
    pb_machine_print_versions(stdout, &m);
    return PB_EXIT_OK;
}

/* ---- serve ------------------------------------------------------------- */

/* Whether the file at path is an SQLite database (a history), by its
 * header; a result file is JSON. */
static bool is_history_db(const char *path)
{
    static const char magic[16] = "SQLite format 3";
    char head[16];
    FILE *f = fopen(path, "rb");
    bool db = f && fread(head, 1, sizeof head, f) == sizeof head &&
              memcmp(head, magic, sizeof head) == 0;
    if (f)
        fclose(f);
    return db || strncmp(path, "file:", 5) == 0;
}

/* Says where server serves what, warns when anyone can reach it, and
 * serves until Ctrl-C (or SIGTERM, SIGHUP); then stops it. */
static void serve_until_stopped(struct pb_serve *server, const char *path, const char *routes,
                                const char *address, bool open_to_all)
{
    fprintf(stderr, "pbench: %s is served at %s until Ctrl-C (%s)\n", path,
            pb_serve_url(server), routes);
    if (open_to_all)
        fprintf(stderr, "pbench: warning: %s is not a loopback address: anyone who can "
                        "reach this machine can read it\n", address);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    int sig = 0;
    sigwait(&stop, &sig);
    pb_serve_stop(server);
}

/* pbench serve history.db: the database read once, read-only. */
static int serve_history(const char *path, const char *address)
{
    struct pb_serve *server = NULL;
    bool open_to_all = false;
    char msg[PB_MSG_MAX * 2];
    int rc = pb_serve_history(address, path, &server, &open_to_all, msg, sizeof msg);
    if (rc != PB_OK) {
        pb_cli_error("serve", msg);
        return rc == PB_ERR_CONFIG || rc == PB_ERR_UNAVAILABLE ? PB_EXIT_USAGE : PB_EXIT_ERROR;
    }
    serve_until_stopped(server, path, "/ the history report, /history.json, /metrics", address,
                        open_to_all);
    return PB_EXIT_OK;
}

int cmd_serve(int argc, char **argv)
{
    const char *path = NULL, *address = "127.0.0.1:8080";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return pb_cli_help(2, (char *[]){"help", "serve", NULL});
        if (strcmp(argv[i], "--serve") == 0 && i + 1 < argc)
            address = argv[++i];
        else if (argv[i][0] == '-' || path)
            return pb_cli_usage_error("serve", "unexpected argument '%s'", argv[i]);
        else
            path = argv[i];
    }
    if (!path)
        return pb_cli_usage_error("serve", "%s", "expected one RESULT.json or history.db");
    if (is_history_db(path))
        return serve_history(path, address);
    struct pb_result result;
    struct pb_analysis analysis;
    bool analyzed;
    if (read_analyzed(path, &result, &analysis, &analyzed) != PB_OK)
        return PB_EXIT_ERROR;
    char msg[PB_MSG_MAX * 2];
    /* Only this file is served, read once: no path is taken from a request. */
    struct pb_serve *server = NULL;
    bool open_to_all = false;
    int rc = pb_serve_start(address, result.name, &server, &open_to_all, msg, sizeof msg);
    if (rc != PB_OK) {
        pb_cli_error("serve", msg);
    } else {
        pb_serve_finish(server, &result, analyzed ? &analysis : NULL, result.interrupted);
        serve_until_stopped(server, path, "/report.html, /metrics, /result.json", address,
                            open_to_all);
    }
    if (analyzed)
        pb_analysis_free(&analysis);
    pb_result_free(&result);
    return rc == PB_OK ? PB_EXIT_OK : PB_EXIT_USAGE;
}
