/* pbench: the command line. Sub-commands: run, compare, history, calibrate,
 * gen, report, list, version, help (listed in bench/cli/commands.h). This file
 * parses arguments and renders; a run or sweep is a session
 * (bench/session/session.h), drawn on the terminal by bench/cli/progress.h.
 * Exit codes: 0 success, 1 error, 2 usage or config error, 3 regression
 * (compare, run --baseline, history show), 128 + the signal when
 * interrupted: 130 SIGINT (Ctrl-C), 143 SIGTERM, 129 SIGHUP (partial
 * results written). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/analyze/analysis.h"
#include "bench/session/calibrate.h"
#include "bench/analyze/compare.h"
#include "bench/cli/commands.h"
#include "bench/config/config.h"
#include "bench/analyze/history.h"
#include "bench/report/html.h"
#include "bench/session/interleave.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/cli/progress.h"
#include "bench/result/result.h"
#include "bench/session/ranks.h"
#include "bench/sys/mpi.h"
#include "bench/session/session.h"
#include "bench/cli/list.h"
#include "bench/report/report.h"
#include "bench/sys/machine.h"
#include "pipelines/dataset.h"

static int usage_error(const char *cmd, const char *fmt, const char *arg);
static int cmd_help(int argc, char **argv);

/* A library return code as the process's exit code: an interrupted
 * command exits as shells report a death by that signal, 128 + its number. */
static int exit_for(int rc)
{
    int sig = pb_progress_stop_signal();
    return rc == PB_OK                ? PB_EXIT_OK
           : rc == PB_ERR_CONFIG      ? PB_EXIT_USAGE
           : rc == PB_ERR_INTERRUPTED ? 128 + (sig ? sig : SIGINT)
                                      : PB_EXIT_ERROR;
}

/* The exit code of a printed comparison (compare, run --baseline). */
static int comparison_exit(int print_rc, const struct pb_comparison *cmp, bool fail_on_regression)
{
    return print_rc != PB_OK                           ? PB_EXIT_USAGE
           : fail_on_regression && cmp->regressions > 0 ? PB_EXIT_REGRESSION
                                                        : PB_EXIT_OK;
}

/* ---- run ---------------------------------------------------------------- */

static int cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"set", required_argument, NULL, 's'},   {"axis", required_argument, NULL, 'a'},
        {"output", required_argument, NULL, 'o'}, {"format", required_argument, NULL, 'f'},
        {"quiet", no_argument, NULL, 'q'},       {"overhead", no_argument, NULL, 'O'},
        {"no-calibrate", no_argument, NULL, 'C'}, {"help", no_argument, NULL, 'h'},
        {"baseline", required_argument, NULL, 'B'}, {"threshold", required_argument, NULL, 'T'},
        {"fail-on-regression", no_argument, NULL, 'F'},
        {"trace", required_argument, NULL, 'R'},
        {NULL, 0, NULL, 0},
    };
    const char **overrides = calloc((size_t)argc, sizeof(char *));
    const char **axes = calloc((size_t)argc, sizeof(char *));
    struct pb_session_opts opts = {.overrides = overrides, .axes = axes, .calibrate = true,
                                   .threshold_pct = 5};
    enum pb_format format = PB_FORMAT_TABLE;
    bool quiet = false, fail_on_regression = false;
    int c, exit_code = -1;
    optind = 1;
    while (exit_code < 0 && (c = getopt_long(argc, argv, "s:a:o:f:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 's': overrides[opts.override_count++] = optarg; break;
        case 'a': axes[opts.axis_count++] = optarg; break;
        case 'o': opts.output_path = optarg; break;
        case 'f':
            if (pb_format_parse(optarg, &format) != PB_OK)
                exit_code = usage_error("run", "unknown format '%s'; allowed: table, json, markdown, csv, html",
                                        optarg);
            break;
        case 'q': quiet = true; break;
        case 'O': opts.overhead = true; break;
        case 'C': opts.calibrate = false; break;
        case 'B': opts.baseline_path = optarg; break;
        case 'R': /* --trace FILE: run.trace into FILE (2 arguments, so room in overrides) */
            opts.trace_path = optarg;
            overrides[opts.override_count++] = "run.trace=true";
            break;
        case 'F': fail_on_regression = true; break;
        case 'T':
            if (pb_threshold_parse(optarg, &opts.threshold_pct) != PB_OK)
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
        char mpi_msg[PB_MSG_MAX];
        if (pb_mpi_start(mpi_msg, sizeof(mpi_msg)) != PB_OK) {
            fprintf(stderr, "pbench run: %s\n", mpi_msg);
            free(overrides);
            free(axes);
            return PB_EXIT_ERROR;
        }
        quiet |= !pb_mpi_is_root(); /* one rank prints: the others only their errors */
        struct pb_progress progress;
        struct pb_session_hooks hooks;
        pb_progress_init(&progress, "pbench", quiet, &hooks);
        struct pb_result result;
        struct pb_session_outcome outcome;
        char msg[PB_MSG_MAX * 2];
        int session_rc = pb_session_run(&opts, &hooks, &result, &outcome, msg, sizeof(msg));
        exit_code = exit_for(session_rc);
        if (session_rc != PB_OK && session_rc != PB_ERR_INTERRUPTED)
            pb_mpi_abort(exit_code, msg); /* an error on any rank ends them all */
        if (outcome.measured)
            pb_report_analyzed(stdout, &result, outcome.analyzed ? &outcome.analysis : NULL,
                               format);
        if (outcome.compared) {
            fputc('\n', stdout);
            const struct pb_comparison *cmp = &outcome.comparison;
            /* CSV has no comparison form; an HTML page on stdout is one
             * document, so its comparison goes to stderr as a table. */
            bool html = format == PB_FORMAT_HTML;
            int rc = pb_comparison_print(html ? stderr : stdout, stderr, cmp, opts.baseline_path,
                                         outcome.result_path,
                                         format == PB_FORMAT_CSV || html ? PB_FORMAT_TABLE : format,
                                         false);
            int code = comparison_exit(rc, cmp, fail_on_regression);
            if (exit_code == PB_EXIT_OK)
                exit_code = code;
        }
        pb_session_outcome_free(&outcome);
        pb_result_free(&result);
        pb_ranks_release();
        pb_mpi_finish();
    }
    free(overrides);
    free(axes);
    return exit_code;
}

/* ---- compare ------------------------------------------------------------ */

/* "pbench CMD: MESSAGE" on stderr; the message names files from the
 * command line or a result, printed without control characters. */
static void print_error(const char *cmd, const char *msg)
{
    char shown[PB_PRINTABLE_SIZE(PB_MSG_MAX * 2)];
    fprintf(stderr, "pbench%s%s: %s\n", cmd ? " " : "", cmd ? cmd : "",
            pb_printable(shown, sizeof(shown), msg));
}

/* pbench compare BASE.yaml NEW.yaml: both configs measured here, in
 * interleaved rounds, into one result; then the same comparison. */
static int compare_configs(const char *base, const char *next, const char **overrides,
                           int override_count, const char *output, bool quiet,
                           double threshold_pct, int format, bool fail_on_regression)
{
    struct pb_session_opts opts = {.config_path = base, .new_config_path = next,
                                   .overrides = overrides, .override_count = override_count,
                                   .output_path = output, .threshold_pct = threshold_pct};
    struct pb_progress progress;
    struct pb_session_hooks hooks;
    pb_progress_init(&progress, "pbench compare", quiet, &hooks);
    struct pb_result result;
    struct pb_session_outcome outcome;
    char msg[PB_MSG_MAX * 2];
    int code = exit_for(pb_session_run(&opts, &hooks, &result, &outcome, msg, sizeof(msg)));
    if (outcome.compared) {
        int rc = pb_comparison_print(stdout, stderr, &outcome.comparison, base, next, format,
                                     false);
        int verdict = comparison_exit(rc, &outcome.comparison, fail_on_regression);
        if (code == PB_EXIT_OK)
            code = verdict;
    }
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
    return code;
}

/* pbench compare AB.json: the comparison a compare of two configs wrote. */
static int compare_one_file(const char *path, double threshold_pct, int format,
                            bool fail_on_regression)
{
    struct pb_result r;
    struct pb_comparison cmp;
    char msg[PB_MSG_MAX * 2];
    int rc = pb_result_read(path, &r, msg, sizeof(msg));
    if (rc == PB_OK)
        rc = pb_interleaved_compare(&r, threshold_pct, &cmp, msg, sizeof(msg));
    if (rc != PB_OK) {
        pb_result_free(&r);
        print_error("compare", msg);
        return PB_EXIT_ERROR;
    }
    const char *base = json_string_value(
        json_object_get(json_object_get(r.interleaved, "base"), "config_path"));
    const char *next = json_string_value(
        json_object_get(json_object_get(r.interleaved, "new"), "config_path"));
    rc = pb_comparison_print(stdout, stderr, &cmp, base ? base : "base", next ? next : "new",
                             format, false);
    int code = comparison_exit(rc, &cmp, fail_on_regression);
    pb_comparison_free(&cmp);
    pb_result_free(&r);
    return code;
}

static int cmd_compare(int argc, char **argv)
{
    double threshold_pct = 5;
    int format = PB_FORMAT_TABLE;
    bool force = false, fail_on_regression = false, quiet = false;
    const char *files[2] = {NULL, NULL}, *output = NULL;
    const char **overrides = calloc((size_t)argc, sizeof(char *));
    int nfiles = 0, override_count = 0, code = -1;
    for (int i = 1; i < argc && code < 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--threshold") == 0 && i + 1 < argc) {
            if (pb_threshold_parse(argv[++i], &threshold_pct) != PB_OK)
                code = usage_error("compare", "--threshold takes a percentage such as 5%%, got '%s'",
                                   argv[i]);
        } else if ((strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) && i + 1 < argc) {
            enum pb_format f;
            if (pb_format_parse(argv[++i], &f) != PB_OK || f == PB_FORMAT_CSV)
                code = usage_error("compare", "unknown format '%s'; allowed: table, json, markdown, html",
                                   argv[i]);
            format = (int)f;
        } else if ((strcmp(a, "--set") == 0 || strcmp(a, "-s") == 0) && i + 1 < argc) {
            overrides[override_count++] = argv[++i];
        } else if ((strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0) && i + 1 < argc) {
            output = argv[++i];
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            quiet = true;
        } else if (strcmp(a, "--force") == 0) {
            force = true;
        } else if (strcmp(a, "--fail-on-regression") == 0) {
            fail_on_regression = true;
        } else if (a[0] == '-' || nfiles == 2) {
            code = usage_error("compare", "unexpected argument '%s'", a);
        } else {
            files[nfiles++] = a;
        }
    }
    bool configs = nfiles == 2 && pb_is_config_path(files[0]) && pb_is_config_path(files[1]);
    if (code >= 0) {
        /* a usage error was printed */
    } else if (nfiles == 2 && pb_is_config_path(files[0]) != pb_is_config_path(files[1])) {
        code = usage_error("compare", "%s",
                           "give two results (BASE.json NEW.json) or two configs (BASE.yaml "
                           "NEW.yaml), not one of each");
    } else if (!configs && override_count > 0) {
        code = usage_error("compare", "%s",
                           "-s applies when compare runs two configs (BASE.yaml NEW.yaml)");
    } else if (configs) {
        code = compare_configs(files[0], files[1], overrides, override_count, output, quiet,
                               threshold_pct, format, fail_on_regression);
    } else if (nfiles == 1 && pb_is_config_path(files[0])) {
        code = usage_error("compare", "%s",
                           "a config is compared with another: pbench compare BASE.yaml NEW.yaml");
    } else if (nfiles == 1) {
        code = compare_one_file(files[0], threshold_pct, format, fail_on_regression);
    } else if (nfiles != 2) {
        code = usage_error("compare", "%s",
                           "expected BASE.json and NEW.json, or BASE.yaml and NEW.yaml");
    } else {
        struct pb_comparison cmp;
        char msg[PB_MSG_MAX];
        if (pb_compare_files(files[0], files[1], threshold_pct, &cmp, msg, sizeof(msg)) != PB_OK) {
            print_error("compare", msg);
            code = PB_EXIT_ERROR;
        } else {
            /* A comparison that can be shown goes to -o when given; one
             * that cannot is explained on stderr either way. */
            bool to_file = output && cmp.point_count > 0 && (force || !cmp.incompatible);
            int rc = to_file ? pb_comparison_write(output, &cmp, files[0], files[1], format, msg,
                                                   sizeof(msg))
                             : pb_comparison_print(stdout, stderr, &cmp, files[0], files[1],
                                                   format, force);
            if (to_file && rc != PB_OK) {
                print_error("compare", msg);
                code = PB_EXIT_ERROR;
            } else {
                code = comparison_exit(rc, &cmp, fail_on_regression);
            }
            pb_comparison_free(&cmp);
        }
    }
    free(overrides);
    return code;
}

/* ---- history ------------------------------------------------------------ */

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
            if (pb_threshold_parse(argv[++i], &threshold) != PB_OK)
                return usage_error("history", "--threshold takes a percentage such as 5%%, got '%s'",
                                   argv[i]);
        } else if (add && a[0] != '-' && !file)
            file = a;
        else
            return usage_error("history", "unexpected argument '%s'", a);
    }
    if (add && !file)
        return usage_error("history", "%s", "history add needs a RESULT.json");
    char msg[PB_MSG_MAX * 2], summary[PB_MSG_MAX * 2];
    int rc = add ? pb_history_add_file(db, file, revision, summary, sizeof(summary), msg,
                                       sizeof(msg))
                 : pb_history_show(db, config, metric, threshold, msg, sizeof(msg));
    if (rc < 0) {
        print_error("history", msg);
    } else if (add) {
        char shown[PB_PRINTABLE_SIZE(sizeof(summary))];
        printf("%s\n", pb_printable(shown, sizeof(shown), summary));
    }
    return rc < 0 ? exit_for(rc) : rc > 0 ? PB_EXIT_REGRESSION : PB_EXIT_OK;
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
        /* An unknown flag's message lists the options; --out is one too. */
        const struct pb_opt *opt = pb_opt_find_flag(pb_generate_opts, arg, msg, sizeof(msg));
        if (!opt || pb_opt_parse(opt, value, &spec, arg, msg, sizeof(msg)) != PB_OK) {
            fprintf(stderr, "pbench gen: %s%s\n", msg, opt ? "" : ", out");
            return PB_EXIT_USAGE;
        }
    }
    if (!out)
        return usage_error("gen", "%s", "--out DIR is required");
    uint64_t start = pb_now_ns();
    struct pb_dataset index;
    int rc = pb_dataset_generate_new(&spec, out, &index, msg, sizeof(msg));
    if (rc != PB_OK) {
        fprintf(stderr, "pbench gen: %s\n", msg);
        return exit_for(rc);
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

static int cmd_report(int argc, char **argv)
{
    enum pb_format format = PB_FORMAT_TABLE;
    const char *path = NULL, *output = NULL;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--output") == 0 || strcmp(argv[i], "-o") == 0) && i + 1 < argc) {
            output = argv[++i];
            continue;
        }
        if ((strcmp(argv[i], "--format") == 0 || strcmp(argv[i], "-f") == 0) && i + 1 < argc) {
            if (pb_format_parse(argv[++i], &format) != PB_OK)
                return usage_error("report", "unknown format '%s'; allowed: table, json, markdown, csv, html",
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
        print_error(NULL, msg);
        pb_result_free(&result);
        return PB_EXIT_ERROR;
    }
    /* The analysis is recomputed from the measurements, so a file written
     * by an older pbench reads with today's rules everywhere. */
    struct pb_analysis analysis;
    /* Two configs side by side are compared, not ranked for a pick. */
    bool analyzed = !result.interleaved && pb_analyze(&result, &analysis) == PB_OK;
    if (analyzed && result.point_count > 1) {
        json_decref(result.analysis);
        result.analysis = pb_analysis_to_json(&analysis);
    }
    int code = PB_EXIT_OK;
    if (!output)
        pb_report_analyzed(stdout, &result, analyzed ? &analysis : NULL, format);
    else if (pb_report_write(output, &result, analyzed ? &analysis : NULL, (int)format, msg,
                             sizeof(msg)) != PB_OK) {
        print_error("report", msg);
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
    pb_machine_print_versions(stdout, &m);
    return PB_EXIT_OK;
}

/* ---- help --------------------------------------------------------------- */

struct command {
    const char *name, *usage, *help;
    int (*fn)(int argc, char **argv);
};

#define COMMAND(name, usage, help) {#name, usage, help, cmd_##name},
static const struct command commands[] = {PB_COMMANDS(COMMAND)};
#undef COMMAND

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
    /* A usage's second form ("       pbench history show") is indented to
     * follow "usage: "; here it lines up with the first. */
    for (size_t i = 0; i < PB_ARRAY_LEN(commands); i++)
        for (const char *line = commands[i].usage; *line;) {
            size_t len = strcspn(line, "\n");
            bool second_form = strncmp(line, "       pbench ", 14) == 0;
            bool first = line == commands[i].usage;
            fprintf(out, "%s%.*s\n", first || second_form ? "  " : "",
                    (int)(len - (second_form ? 7 : 0)), line + (second_form ? 7 : 0));
            line += len + (line[len] == '\n');
        }
    fprintf(out, "\nExit codes: 0 success, 1 error, 2 usage or config error, 3 regression,\n"
                 "130 interrupted by Ctrl-C (143 SIGTERM, 129 SIGHUP).\n"
                 "Run 'pbench help COMMAND' for details.\n");
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "pbench %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s\n", find_command(cmd)->usage);
    return PB_EXIT_USAGE;
}

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
