/* pbench: the command line. Sub-commands: run, wrap, gen, compare, history,
 * calibrate, report, serve, list, version, help, in the order `pbench help`
 * lists them (bench/cli/commands.h; bench/cli/help.c binds each to its
 * cmd_NAME: run and compare here, wrap in bench/cli/wrap.c, the others in
 * bench/cli/tools.c). This file parses arguments and renders; a run or sweep
 * is a session (bench/session/session.h), drawn on the terminal by
 * bench/cli/progress.h.
 * Exit codes (PB_EXIT_* in bench/base/pb.h; PB_EXIT_CODES_TEXT in
 * commands.h is what help says of them): 0 success, 1 error (stdout that
 * cannot be written included), 2 usage or config error, 3 regression
 * (compare, run --baseline, history show), 4 inconclusive (with
 * --fail-on-regression: a gated wall-clock verdict withheld because other
 * processes disturbed a side, and no gated regression), 5 suspect (history
 * show: a series' newest run outside its run-to-run noise, not yet a step),
 * 128 + the signal when interrupted: 130 SIGINT (Ctrl-C), 143 SIGTERM, 129
 * SIGHUP (partial results written). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/analyze/compare.h"
#include "bench/analyze/history.h"
#include "bench/base/fileio.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/cli/cli.h"
#include "bench/cli/commands.h"
#include "bench/cli/progress.h"
#include "bench/config/config.h"
#include "bench/report/format.h"
#include "bench/report/report_wrap.h"
#include "bench/result/result.h"
#include "bench/session/interleave.h"
#include "bench/session/ranks.h"
#include "bench/cli/serve.h"
#include "bench/session/session.h"
#include "bench/sys/mpi.h"
#include "bench/sys/paths.h"


int pb_cli_exit(int rc)
{
    int sig = pb_progress_stop_signal();
    return rc == PB_OK                ? PB_EXIT_OK
           : rc == PB_ERR_CONFIG      ? PB_EXIT_USAGE
           : rc == PB_ERR_INTERRUPTED ? 128 + (sig ? sig : SIGINT)
                                      : PB_EXIT_ERROR;
}

int pb_cli_comparison_exit(int print_rc, const struct pb_comparison *cmp,
                           const struct pb_gate *gate)
{
    return print_rc != PB_OK ? PB_EXIT_USAGE
           : gate->fail_on_regression && cmp->gated_regressions > 0 ? PB_EXIT_REGRESSION
           : gate->fail_on_regression && cmp->gated_withheld > 0   ? PB_EXIT_INCONCLUSIVE
                                                                   : PB_EXIT_OK;
}

void pb_cli_error(const char *cmd, const char *msg)
{
    char shown[PB_PRINTABLE_SIZE(PB_MSG_MAX * 2)];
    fprintf(stderr, "pbench%s%s: %s\n", cmd ? " " : "", cmd ? cmd : "",
            pb_printable(shown, sizeof(shown), msg));
}

/* --gate NAME[,NAME]: each a comparable metric, else a usage error (-1:
 * fine, so parsing goes on). */
static int gate_check(const char *cmd, const char *names)
{
    struct pb_comparison none;
    memset(&none, 0, sizeof(none));
    char msg[PB_MSG_MAX];
    if (pb_comparison_gate(&none, names, msg, sizeof(msg)) == PB_OK)
        return -1;
    return pb_cli_usage_error(cmd, "%s", msg);
}

/* --gate against what was compared: a stage neither side ran is a usage
 * error that lists the stages each side ran (-1: fine). */
static int gate_apply(const char *cmd, struct pb_comparison *cmp, const struct pb_gate *gate)
{
    char msg[PB_MSG_MAX * 4];
    if (pb_comparison_gate(cmp, gate->metrics, msg, sizeof(msg)) == PB_OK)
        return -1;
    return pb_cli_usage_error(cmd, "%s", msg);
}

/* ---- measuring: run and compare of two configs ------------------------- */

/* Runs the session opts describes, with the progress lines on stderr, and
 * prints what it measured: a run's result in format, then its comparison
 * (with --baseline); two configs measured together, their comparison
 * alone, into comparison_path when given (else on stdout). Returns the exit
 * code: the session's, else the comparison's. */
int pb_cli_measure(const struct pb_session_opts *opts, const char *title, bool quiet, int format,
                   const struct pb_gate *gate, const char *comparison_path)
{
    struct pb_progress progress;
    struct pb_session_hooks hooks, served;
    pb_progress_init(&progress, title, quiet, &hooks);
    struct pb_result result;
    struct pb_session_outcome outcome;
    char msg[PB_MSG_MAX * 2];
    struct pb_serve *server = NULL;
    /* Under mpirun the process that gathers the ranks serves them all. */
    if (opts->serve && pb_mpi_is_root()) { /* a busy port or a bad address: said first */
        int code = pb_cli_serve_start(opts, title, &server);
        if (code >= 0)
            return code;
        pb_serve_hooks(server, &result, &hooks, &served);
    }
    int session_rc =
        pb_session_run(opts, server ? &served : &hooks, &result, &outcome, msg, sizeof(msg));
    if (server) /* the end: the page shows the verdict, then pbench goes */
        pb_cli_serve_end(server, &result, &outcome, session_rc);
    int code = pb_cli_exit(session_rc);
    if (session_rc != PB_OK && session_rc != PB_ERR_INTERRUPTED)
        pb_mpi_abort(code, msg); /* an error on any rank ends them all */
    bool two_configs = opts->new_config_path != NULL;
    if (outcome.measured && !two_configs)
        pb_report_analyzed(stdout, &result, outcome.analyzed ? &outcome.analysis : NULL,
                           (enum pb_format)format);
    if (outcome.compared) {
        /* An HTML page on stdout is one document, so a run's comparison
         * goes to stderr as a table. */
        bool beside_page = !two_configs && pb_formats[format].whole_document;
        if (!two_configs)
            fputc('\n', stdout);
        int gate_code = gate_apply(two_configs ? "compare" : "run", &outcome.comparison, gate);
        char next[PB_MSG_MAX];
        if (two_configs)
            pb_interleaved_label(result.interleaved, "new", next, sizeof(next));
        const char *base = two_configs ? opts->config_path : opts->baseline_path;
        const char *shown_next = two_configs ? next : outcome.result_path;
        int rc = comparison_path
                     ? pb_comparison_write(comparison_path, &outcome.comparison, base, shown_next,
                                           format, msg, sizeof(msg))
                     : pb_comparison_print(beside_page ? stderr : stdout, stderr,
                                           &outcome.comparison, base, shown_next,
                                           beside_page ? PB_FORMAT_TABLE : format, false);
        if (comparison_path && rc != PB_OK) {
            pb_cli_error("compare", msg);
            gate_code = PB_EXIT_ERROR;
        } else if (comparison_path) {
            fprintf(stderr, "pbench: comparison written to %s\n", comparison_path);
        }
        if (two_configs && rc == PB_OK && !comparison_path && format == PB_FORMAT_TABLE)
            pb_report_wrap_ideal(stdout, &result, &outcome.comparison);
        int verdict =
            gate_code >= 0 ? gate_code : pb_cli_comparison_exit(rc, &outcome.comparison, gate);
        if (code == PB_EXIT_OK)
            code = verdict;
    }
    pb_session_outcome_free(&outcome);
    pb_result_free(&result);
    return code;
}

/* ---- run ---------------------------------------------------------------- */

int cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"set", required_argument, NULL, 's'},   {"axis", required_argument, NULL, 'a'},
        {"output", required_argument, NULL, 'o'}, {"format", required_argument, NULL, 'f'},
        {"quiet", no_argument, NULL, 'q'},       {"overhead", no_argument, NULL, 'O'},
        {"no-calibrate", no_argument, NULL, 'C'}, {"help", no_argument, NULL, 'h'},
        {"baseline", required_argument, NULL, 'B'}, {"threshold", required_argument, NULL, 'T'},
        {"fail-on-regression", no_argument, NULL, 'F'},
        {"gate", required_argument, NULL, 'G'},
        {"trace", required_argument, NULL, 'R'},
        {"serve", required_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char **overrides = calloc((size_t)argc, sizeof(char *));
    const char **axes = calloc((size_t)argc, sizeof(char *));
    struct pb_session_opts opts = {.overrides = overrides, .axes = axes, .calibrate = true,
                                   .threshold_pct = 5};
    enum pb_format format = PB_FORMAT_TABLE;
    bool quiet = false;
    struct pb_gate gate = {false, NULL};
    int c, exit_code = -1;
    optind = 1;
    while (exit_code < 0 && (c = getopt_long(argc, argv, "s:a:o:f:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 's': overrides[opts.override_count++] = optarg; break;
        case 'a': axes[opts.axis_count++] = optarg; break;
        case 'o': opts.output_path = optarg; break;
        case 'f':
            if (pb_format_parse(optarg, &format) != PB_OK)
                exit_code = pb_cli_format_error("run", optarg, false);
            break;
        case 'q': quiet = true; break;
        case 'O': opts.overhead = true; break;
        case 'C': opts.calibrate = false; break;
        case 'B': opts.baseline_path = optarg; break;
        case 'R': /* --trace FILE: run.trace into FILE (2 arguments, so room in overrides) */
            opts.trace_path = optarg;
            overrides[opts.override_count++] = "run.trace=true";
            break;
        case 'F': gate.fail_on_regression = true; break;
        case 'V': opts.serve = optarg; break;
        case 'G':
            gate.metrics = optarg;
            exit_code = gate_check("run", optarg);
            break;
        case 'T':
            if (pb_threshold_parse(optarg, &opts.threshold_pct) != PB_OK)
                exit_code = pb_cli_usage_error(
                    "run", "--threshold takes a percentage such as 5%%, got '%s'", optarg);
            break;
        case 'h': exit_code = pb_cli_help(2, (char *[]){"help", "run", NULL}); break;
        default: exit_code = pb_cli_usage_error("run", "%s", "bad option"); break;
        }
    }
    if (exit_code < 0 && optind != argc - 1)
        exit_code = pb_cli_usage_error("run", "%s",
                                optind >= argc ? "expected one CONFIG file"
                                               : "expected one CONFIG file, got more");
    char config[PB_PATH_MAX], msg[PB_MSG_MAX * 2];
    if (exit_code < 0 && pb_config_by_name(argv[optind], config, sizeof(config), msg,
                                        sizeof(msg)) != PB_OK) {
        pb_cli_error("run", msg);
        exit_code = PB_EXIT_USAGE;
    }
    if (exit_code < 0) {
        opts.config_path = config;
        char mpi_msg[PB_MSG_MAX];
        if (pb_mpi_start(mpi_msg, sizeof(mpi_msg)) != PB_OK) {
            fprintf(stderr, "pbench run: %s\n", mpi_msg);
            exit_code = PB_EXIT_ERROR;
        } else {
            /* One rank prints: the others only their errors. */
            exit_code = pb_cli_measure(&opts, "pbench", quiet || !pb_mpi_is_root(), format, &gate,
                                NULL);
            pb_ranks_release();
            pb_mpi_finish();
        }
    }
    free(overrides);
    free(axes);
    return exit_code;
}

/* ---- compare ------------------------------------------------------------ */

/* What `pbench compare` was given. */
struct compare_args {
    const char *files[2];
    int nfiles;
    const char *output;
    double threshold_pct;
    int format;
    bool format_given; /* --format named: with two configs, -o is that rendering */
    bool force, quiet;
    struct pb_gate gate;
    const char **overrides;     /* -s: both configs                          */
    int override_count;
    const char **new_overrides; /* --set-new (-S): the new config alone      */
    int new_override_count;
    const char *history_db;     /* --db: run-to-run noise of two result files */
    const char *serve;          /* --serve: two configs measured, served while they run */
};

/* Reads compare's arguments into args (its override lists sized for argc
 * entries; release them with free). Returns -1, or the exit code of a
 * usage error it printed. */
static int compare_parse(int argc, char **argv, struct compare_args *args)
{
    *args = (struct compare_args){
        .threshold_pct = 5, .format = PB_FORMAT_TABLE, .history_db = PB_HISTORY_DB};
    args->overrides = calloc((size_t)argc, sizeof(char *));
    args->new_overrides = calloc((size_t)argc, sizeof(char *));
    int code = -1;
    for (int i = 1; i < argc && code < 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--threshold") == 0 && i + 1 < argc) {
            if (pb_threshold_parse(argv[++i], &args->threshold_pct) != PB_OK)
                code = pb_cli_usage_error(
                    "compare", "--threshold takes a percentage such as 5%%, got '%s'", argv[i]);
        } else if ((strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) && i + 1 < argc) {
            enum pb_format f;
            if (pb_format_parse(argv[++i], &f) != PB_OK || !pb_formats[f].comparison)
                code = pb_cli_format_error("compare", argv[i], true);
            args->format = (int)f;
            args->format_given = true;
        } else if ((strcmp(a, "--set") == 0 || strcmp(a, "-s") == 0) && i + 1 < argc) {
            args->overrides[args->override_count++] = argv[++i];
        } else if ((strcmp(a, "--set-new") == 0 || strcmp(a, "-S") == 0) && i + 1 < argc) {
            args->new_overrides[args->new_override_count++] = argv[++i];
        } else if ((strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0) && i + 1 < argc) {
            args->output = argv[++i];
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            args->quiet = true;
        } else if (strcmp(a, "--db") == 0 && i + 1 < argc) {
            args->history_db = argv[++i];
        } else if (strcmp(a, "--serve") == 0 && i + 1 < argc) {
            args->serve = argv[++i];
        } else if (strcmp(a, "--force") == 0) {
            args->force = true;
        } else if (strcmp(a, "--fail-on-regression") == 0) {
            args->gate.fail_on_regression = true;
        } else if (strcmp(a, "--gate") == 0 && i + 1 < argc) {
            args->gate.metrics = argv[++i];
            code = gate_check("compare", args->gate.metrics);
        } else if (a[0] == '-' || args->nfiles == 2) {
            code = pb_cli_usage_error("compare", "unexpected argument '%s'", a);
        } else {
            args->files[args->nfiles++] = a;
        }
    }
    return code;
}

/* pbench compare BASE.yaml NEW.yaml: both configs measured here, in
 * interleaved rounds, into one result; then the same comparison. */
static int compare_configs(const struct compare_args *args)
{
    /* -o names the result (JSON) as run's does; with --format named it is
     * the comparison in that format, and the result goes to its default
     * file. */
    bool rendered = args->output && args->format_given;
    if (rendered) {
        char msg[PB_MSG_MAX * 2];
        if (pb_output_check_inputs(args->output, args->files, 2, msg, sizeof(msg)) != PB_OK) {
            pb_cli_error("compare", msg); /* checked before measuring, never over an input */
            return PB_EXIT_USAGE;
        }
    }
    struct pb_session_opts opts = {.config_path = args->files[0],
                                   .new_config_path = args->files[1],
                                   .overrides = args->overrides,
                                   .override_count = args->override_count,
                                   .new_overrides = args->new_overrides,
                                   .new_override_count = args->new_override_count,
                                   .output_path = rendered ? NULL : args->output,
                                   .threshold_pct = args->threshold_pct,
                                   .serve = args->serve};
    return pb_cli_measure(&opts, "pbench compare", args->quiet, args->format, &args->gate,
                   rendered ? args->output : NULL);
}

/* Shows a comparison as pbench compare does: into -o when given and the
 * comparison can be shown (else explained on stderr), else on stdout; the
 * gate checked first. Returns the exit code. */
static int compare_show(const struct compare_args *args, struct pb_comparison *cmp,
                        const char *base, const char *next)
{
    char msg[PB_MSG_MAX * 2];
    int code = gate_apply("compare", cmp, &args->gate);
    if (code >= 0)
        return code;
    bool to_file = args->output && cmp->point_count > 0 && (args->force || !cmp->incompatible);
    int rc = to_file ? pb_comparison_write(args->output, cmp, base, next, args->format, msg,
                                           sizeof(msg))
                     : pb_comparison_print(stdout, stderr, cmp, base, next, args->format,
                                           args->force);
    if (to_file && rc != PB_OK) {
        pb_cli_error("compare", msg);
        return PB_EXIT_ERROR;
    }
    return pb_cli_comparison_exit(rc, cmp, &args->gate);
}

/* pbench compare AB.json: the comparison a compare of two configs wrote. */
static int compare_one_file(const struct compare_args *args)
{
    struct pb_result r;
    struct pb_comparison cmp;
    char msg[PB_MSG_MAX * 2];
    if (args->output &&
        pb_output_check_inputs(args->output, args->files, 1, msg, sizeof(msg)) != PB_OK) {
        pb_cli_error("compare", msg); /* before comparing: never over the input */
        return PB_EXIT_ERROR;
    }
    int rc = pb_result_read(args->files[0], &r, msg, sizeof(msg));
    if (rc == PB_OK)
        rc = pb_interleaved_compare(&r, args->threshold_pct, &cmp, msg, sizeof(msg));
    if (rc != PB_OK) {
        pb_result_free(&r);
        pb_cli_error("compare", msg);
        return PB_EXIT_ERROR;
    }
    char base[PB_MSG_MAX], next[PB_MSG_MAX];
    pb_interleaved_label(r.interleaved, "base", base, sizeof(base));
    pb_interleaved_label(r.interleaved, "new", next, sizeof(next));
    int code = compare_show(args, &cmp, base, next);
    if (!args->output && args->format == PB_FORMAT_TABLE)
        pb_report_wrap_ideal(stdout, &r, &cmp);
    pb_comparison_free(&cmp);
    pb_result_free(&r);
    return code;
}

/* pbench compare BASE.json NEW.json: two result files, compared. */
static int compare_results(const struct compare_args *args)
{
    char msg[PB_MSG_MAX];
    if (args->output &&
        pb_output_check_inputs(args->output, args->files, 2, msg, sizeof(msg)) != PB_OK) {
        pb_cli_error("compare", msg); /* before comparing: never over an input */
        return PB_EXIT_ERROR;
    }
    struct pb_comparison cmp;
    if (pb_compare_files(args->files[0], args->files[1], args->threshold_pct, args->history_db,
                         &cmp, msg, sizeof(msg)) != PB_OK) {
        pb_cli_error("compare", msg);
        return PB_EXIT_ERROR;
    }
    /* A comparison that can be shown goes to -o when given; one that
     * cannot is explained on stderr either way. */
    int code = compare_show(args, &cmp, args->files[0], args->files[1]);
    pb_comparison_free(&cmp);
    return code;
}

int cmd_compare(int argc, char **argv)
{
    struct compare_args args;
    int code = compare_parse(argc, argv, &args);
    const char **files = args.files;
    int nfiles = args.nfiles;
    bool configs = nfiles == 2 && pb_is_config_path(files[0]) && pb_is_config_path(files[1]);
    if (code >= 0) {
        /* a usage error was printed */
    } else if (nfiles == 2 && pb_is_config_path(files[0]) != pb_is_config_path(files[1])) {
        code = pb_cli_usage_error("compare", "%s",
                           "give two results (BASE.json NEW.json) or two configs (BASE.yaml "
                           "NEW.yaml), not one of each");
    } else if (!configs && (args.override_count > 0 || args.new_override_count > 0)) {
        code = pb_cli_usage_error("compare", "%s applies when compare runs two configs "
                                  "(BASE.yaml NEW.yaml)",
                                  args.override_count > 0 ? "-s" : "--set-new");
    } else if (configs) {
        code = compare_configs(&args);
    } else if (nfiles == 1 && pb_is_config_path(files[0])) {
        code = pb_cli_usage_error("compare", "%s",
                           "a config is compared with another, or with itself and a change: "
                           "pbench compare BASE.yaml NEW.yaml, pbench compare CONFIG.yaml "
                           "CONFIG.yaml --set-new key.path=value");
    } else if (nfiles == 1) {
        code = compare_one_file(&args);
    } else if (nfiles != 2) {
        code = pb_cli_usage_error("compare", "%s",
                           "expected BASE.json and NEW.json, or BASE.yaml and NEW.yaml");
    } else {
        code = compare_results(&args);
    }
    free(args.overrides);
    free(args.new_overrides);
    return code;
}

/* Whether everything the command printed reached stdout: a full disk or a
 * closed stdout is said ("pbench CMD: cannot write the output: REASON")
 * and a success becomes exit 1; another failure keeps its code. */
static int check_output(const char *name, int code)
{
    errno = 0;
    bool flushed = fflush(stdout) == 0;
    if (flushed && !ferror(stdout))
        return code;
    /* An error flag without a failing flush: the write that failed was
     * earlier, and errno no longer says why. */
    fprintf(stderr, "pbench%s%s: cannot write the output: %s\n", name ? " " : "",
            name ? name : "", !flushed && errno ? strerror(errno) : "an earlier write failed");
    return code == PB_EXIT_OK ? PB_EXIT_ERROR : code;
}

int main(int argc, char **argv)
{
    const char *name;
    int code = pb_cli_dispatch(argc, argv, &name);
    return check_output(name, code);
}
