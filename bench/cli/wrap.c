/* pbench wrap [options] -- COMMAND [ARGS...]: the user's own training job,
 * measured in place (docs/wrap.md). The command line becomes a config of
 * its own (loader.engine: wrap, the command in wrap.command), so the job is
 * measured as a point of a session like any other: repeats, the stopping
 * rule, sweeps (-a loader.workers=1,2,4), the interleaved A/B (--set-new),
 * --baseline, the tables, the verdict and the result file. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/analyze/compare.h"
#include "bench/base/pb.h"
#include "bench/cli/cli.h"
#include "bench/config/config.h"
#include "bench/report/format.h"
#include "bench/run/engine_proc.h"
#include "bench/session/hooks.h"

/* This command's name, in its messages and its help. */
static const char command_name[] = "wrap";

/* What the command line of wrap said, beyond a run's options. */
struct wrap_args {
    long long warmup, batches;
    double time_s, grace_s;
    bool until_exit, time_given;
    int repeats; /* run.repeats unless -s gives it */
    const char *loader;
    const char *listen; /* --listen ADDR[:PORT], else NULL */
    const char *join;   /* --join HOST:PORT, else NULL */
    char set[256]; /* the loader keys -s, -a and --set-new give the job */
};

/* An assignment of -s, -a or --set-new: false for a key pbench wrap cannot
 * give the job (pb_wrap_settable). A loader key is added to w->set, the
 * DataLoader arguments the hook replaces. */
static bool note_key(struct wrap_args *w, const char *assignment)
{
    if (!pb_wrap_settable_key(assignment))
        return false;
    if (strncmp(assignment, "loader.", 7) != 0)
        return true;
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)strcspn(assignment + 7, "="), assignment + 7);
    if (!strstr(w->set, key)) {
        size_t used = strlen(w->set);
        snprintf(w->set + used, sizeof w->set - used, "%s%s", used ? "," : "", key);
    }
    return true;
}

/* argv as one shell-quoted line into out (a word with anything but
 * [A-Za-z0-9_./:=@%+,-] in single quotes). false when it does not fit. */
static bool shell_line(char **argv, int argc, char *out, size_t outlen)
{
    size_t used = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool plain = a[0] != '\0' && strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                               "0123456789_./:=@%+,-") == strlen(a);
        if (i && used + 1 < outlen)
            out[used++] = ' ';
        if (!plain && used + 1 < outlen)
            out[used++] = '\'';
        for (const char *c = a; *c && used + 5 < outlen; c++) {
            if (*c == '\'' && !plain) {
                memcpy(out + used, "'\\''", 4);
                used += 4;
            } else {
                out[used++] = *c;
            }
        }
        if (!plain && used + 1 < outlen)
            out[used++] = '\'';
        if (used + 5 >= outlen)
            return false;
    }
    out[used] = '\0';
    return true;
}

/* text as a YAML double-quoted scalar (JSON's escapes) into out. */
static void yaml_quoted(const char *text, char *out, size_t outlen)
{
    size_t used = 0;
    out[used++] = '"';
    for (const unsigned char *c = (const unsigned char *)text; *c && used + 8 < outlen; c++) {
        if (*c == '"' || *c == '\\')
            used += (size_t)snprintf(out + used, outlen - used, "\\%c", *c);
        else if (*c < 0x20)
            used += (size_t)snprintf(out + used, outlen - used, "\\x%02x", *c);
        else
            out[used++] = (char)*c;
    }
    out[used++] = '"';
    out[used] = '\0';
}

/* The config a wrapped command runs under. Its name is the job's script (or
 * its program) so that results and history tell jobs apart. */
static char *wrap_config(const struct wrap_args *w, const char *line, char *msg, size_t msglen)
{
    char quoted[2 * PB_WRAP_COMMAND_MAX], loader[2 * PB_PATH_MAX], listen[600];
    yaml_quoted(line, quoted, sizeof quoted);
    yaml_quoted(w->loader ? w->loader : "", loader, sizeof loader);
    yaml_quoted(w->listen ? w->listen : "", listen, sizeof listen);
    /* The job's name: its first word that names a .py file, else the
     * program's base name. */
    char words[PB_WRAP_COMMAND_MAX], *save = NULL;
    pb_strlcpy(words, line, sizeof words);
    const char *name = NULL, *first = NULL;
    for (char *word = strtok_r(words, " '", &save); word && !name;
         word = strtok_r(NULL, " '", &save)) {
        first = first ? first : word;
        if (strlen(word) > 3 && strcmp(word + strlen(word) - 3, ".py") == 0)
            name = word;
    }
    name = name ? name : first ? first : "job";
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    char job[128], qjob[300];
    snprintf(job, sizeof job, "wrap-%.*s", (int)strcspn(base, "."), base);
    yaml_quoted(job, qjob, sizeof qjob);
    /* The window: --time S fixes it; --batches N and --until-exit leave the
     * end to the job's relay (the time cap then only guards a job that
     * stops delivering); otherwise run's stopping rule, over a longer
     * window than a loader benchmark's, since a step is real work. */
    double min_s = 5, max_s = 60;
    if (w->time_given)
        min_s = max_s = w->time_s;
    else if (w->batches > 0 || w->until_exit)
        min_s = max_s = 86400;
    size_t cap = 3 * PB_WRAP_COMMAND_MAX + 2 * PB_PATH_MAX + 2048;
    char *yaml = malloc(cap);
    if (!yaml) {
        snprintf(msg, msglen, "out of memory");
        return NULL;
    }
    snprintf(yaml, cap,
             "name: %s\n"
             "loader: {engine: wrap}\n"
             "run: {warmup_batches: %lld, min_time_s: %g, max_time_s: %g, repeats: %d}\n"
             "wrap:\n"
             "  command: %s\n"
             "  loader: %s\n"
             "  set: \"%s\"\n"
             "  batches: %lld\n"
             "  until_exit: %s\n"
             "  grace_s: %g\n"
             "  listen: %s\n",
             qjob, w->warmup, min_s, max_s, w->repeats, quoted, loader, w->set, w->batches,
             w->until_exit ? "true" : "false", w->grace_s, listen);
    return yaml;
}

/* A number option's value, else a usage error's code (-1: fine). */
static int number(const char *option, const char *text, double lo, double *out)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (!end || end == text || *end || !(v >= lo)) {
        char what[128];
        snprintf(what, sizeof what, "%s takes a number of at least %g, got '%%s'", option, lo);
        return pb_cli_usage_error(command_name, what, text);
    }
    *out = v;
    return -1;
}

/* Everything wrap's command line says. */
struct wrap_cli {
    struct pb_session_opts opts;
    const char **overrides, **axes, **news; /* argc entries each */
    struct wrap_args w;
    const char *line; /* --command's, else NULL */
    char ideal[64];   /* --ideal's setting for the new side */
    char new_command[PB_WRAP_COMMAND_MAX + 16]; /* --set-new-command's, as wrap.command=... */
    enum pb_format format;
    bool quiet;
    struct pb_gate gate;
    int others; /* options other than --join: the head's, never a joining node's */
};

/* One option of wrap's (c from getopt_long); -1, or a usage error's code. */
static int wrap_option(struct wrap_cli *cli, int c)
{
    struct pb_session_opts *opts = &cli->opts;
    struct wrap_args *w = &cli->w;
    double v = 0;
    int code = -1;
    if (c != 'J')
        cli->others++;
    switch (c) {
    case 's': cli->overrides[opts->override_count++] = optarg; break;
    case 'a': cli->axes[opts->axis_count++] = optarg; break;
    case 'S': cli->news[opts->new_override_count++] = optarg; break;
    case 'o': opts->output_path = optarg; break;
    case 'f':
        if (pb_format_parse(optarg, &cli->format) != PB_OK)
            code = pb_cli_format_error(command_name, optarg, false);
        break;
    case 'q': cli->quiet = true; break;
    case 'O': opts->overhead = true; break;
    case 'B': opts->baseline_path = optarg; break;
    case 'F': cli->gate.fail_on_regression = true; break;
    case 'T':
        if (pb_threshold_parse(optarg, &opts->threshold_pct) != PB_OK)
            code = pb_cli_usage_error(command_name,
                                      "--threshold takes a percentage such as 5%%, got '%s'",
                                      optarg);
        break;
    case 'w':
        if ((code = number("--warmup-batches", optarg, 0, &v)) < 0)
            w->warmup = (long long)v;
        break;
    case 'b':
        if ((code = number("--batches", optarg, 1, &v)) < 0)
            w->batches = (long long)v;
        break;
    case 't':
        if ((code = number("--time", optarg, 0.01, &v)) < 0) {
            w->time_s = v;
            w->time_given = true;
        }
        break;
    case 'U': w->until_exit = true; break;
    case 'c': cli->line = optarg; break;
    case 'N': /* an A/B of two commands: the new side runs this one */
        snprintf(cli->new_command, sizeof cli->new_command, "wrap.command=%s", optarg);
        cli->news[opts->new_override_count++] = cli->new_command;
        break;
    case 'R': /* --trace FILE: run.trace into FILE (2 arguments: room in overrides) */
        opts->trace_path = optarg;
        cli->overrides[opts->override_count++] = "run.trace=true";
        break;
    case 'I': /* the job against itself with batches handed out again */
        if ((code = number("--ideal", optarg ? optarg : "8", 1, &v)) < 0) {
            snprintf(cli->ideal, sizeof cli->ideal, "wrap.ideal=%lld", (long long)v);
            cli->news[opts->new_override_count++] = cli->ideal;
        }
        break;
    case 'L': w->loader = optarg; break;
    case 'l':
        if (strlen(optarg) >= 256 || !*optarg)
            code = pb_cli_usage_error(command_name,
                                      "--listen takes ADDR[:PORT] (an address of this machine "
                                      "the other nodes reach), got '%s'",
                                      optarg);
        else
            w->listen = optarg;
        break;
    case 'J':
        if (strlen(optarg) >= 256 || !strchr(optarg, ':'))
            code = pb_cli_usage_error(command_name,
                                      "--join takes HOST:PORT (where the head's pbench wrap "
                                      "--listen listens), got '%s'",
                                      optarg);
        else
            w->join = optarg;
        break;
    case 'V': opts->serve = optarg; break;
    case 'g': code = number("--grace", optarg, 0, &w->grace_s); break;
    case 'h': code = pb_cli_help(2, (char *[]){"help", (char *)command_name, NULL}); break;
    default: code = pb_cli_usage_error(command_name, "%s", "bad option"); break;
    }
    return code;
}

/* The usage error for a key pbench wrap cannot give the job: what the
 * job does with it instead, and every key wrap does set. */
static int refuse_key(const char *option, const char *assignment)
{
    char loader[200], others[400], why[80] = "";
    pb_wrap_settable_text(loader, sizeof loader, true);
    pb_wrap_settable_text(others, sizeof others, false);
    size_t len = strcspn(assignment, "=");
    if (len == 11 && strncmp(assignment, "run.step_ms", len) == 0)
        snprintf(why, sizeof why, " (the job's step is its own, measured)");
    else if (strncmp(assignment, "dataset.", 8) == 0 || strncmp(assignment, "pipeline.", 9) == 0)
        snprintf(why, sizeof why, " (the job reads and transforms its own data)");
    char what[1000];
    snprintf(what, sizeof what,
             "%s %s: a wrapped job cannot be given %.*s%s; pbench wrap gives the job's "
             "DataLoader only %s, and sets %s (an A/B of two commands: --set-new-command "
             "'COMMAND')",
             option, assignment, (int)len, assignment, why, loader, others);
    return pb_cli_usage_error(command_name, "%s", what);
}

/* Reads wrap's options into cli; -1, or the exit code of a usage error it
 * printed. optind is then the command's first word. */
static int wrap_parse(int argc, char **argv, struct wrap_cli *cli)
{
    static const struct option longopts[] = {
        {"set", required_argument, NULL, 's'},   {"axis", required_argument, NULL, 'a'},
        {"output", required_argument, NULL, 'o'}, {"format", required_argument, NULL, 'f'},
        {"quiet", no_argument, NULL, 'q'},       {"overhead", no_argument, NULL, 'O'},
        {"help", no_argument, NULL, 'h'},        {"baseline", required_argument, NULL, 'B'},
        {"threshold", required_argument, NULL, 'T'},
        {"fail-on-regression", no_argument, NULL, 'F'},
        {"set-new", required_argument, NULL, 'S'},
        {"warmup-batches", required_argument, NULL, 'w'},
        {"batches", required_argument, NULL, 'b'},
        {"time", required_argument, NULL, 't'},
        {"until-exit", no_argument, NULL, 'U'},
        {"loader", required_argument, NULL, 'L'},
        {"grace", required_argument, NULL, 'g'},
        {"command", required_argument, NULL, 'c'},
        {"set-new-command", required_argument, NULL, 'N'},
        {"ideal", optional_argument, NULL, 'I'},
        {"trace", required_argument, NULL, 'R'},
        {"serve", required_argument, NULL, 'V'},
        {"listen", required_argument, NULL, 'l'},
        {"join", required_argument, NULL, 'J'},
        {NULL, 0, NULL, 0},
    };
    int c, code = -1;
    optind = 1;
    /* "+": options end at the first word of the command, as they do at --. */
    while (code < 0 && (c = getopt_long(argc, argv, "+s:a:o:f:qhS:", longopts, NULL)) != -1)
        code = wrap_option(cli, c);
    const char *const *lists[] = {cli->overrides, cli->axes, cli->news};
    static const char *const option[] = {"-s", "-a", "--set-new"};
    for (int l = 0; l < 3 && code < 0; l++)
        for (int i = 0; lists[l][i] && code < 0; i++)
            if (!note_key(&cli->w, lists[l][i]))
                code = refuse_key(option[l], lists[l][i]);
    if (code < 0 && optind >= argc && !cli->line)
        code = pb_cli_usage_error(command_name, "%s",
                                  "expected the training job's command after --, e.g. "
                                  "pbench wrap -- python3 train.py");
    if (code < 0 && optind < argc && cli->line)
        code = pb_cli_usage_error(command_name, "%s",
                                  "the job's command comes after -- or in --command, not both");
    return code;
}

/* pbench wrap --join HOST:PORT -- COMMAND: this node's part of a job whose
 * launcher starts one pbench per node. The relay's join side
 * (engines/torch/pbench_wrap/join.py) runs in pbench's place: it joins the
 * head's run, runs COMMAND with the hook, its ranks send their records to
 * the head, which holds the one result. Returns only when it cannot start. */
static int join_node(const struct wrap_cli *cli, int argc, char **argv)
{
    if (cli->others > 0)
        return pb_cli_usage_error(command_name, "%s",
                                  "--join runs this node's part of the job and takes no other "
                                  "option: the head's pbench wrap --listen takes them (-s, -a, "
                                  "-o, --time, ...) and gives them to every node");
    if (cli->line)
        return pb_cli_usage_error(command_name, "%s",
                                  "--join runs the command after --, not --command's");
    char engines[PB_PATH_MAX], path[4 * PB_PATH_MAX];
    const char *own = getenv("PYTHONPATH");
    int n = snprintf(path, sizeof path, "%s/%s%s%s", pb_engine_dir(engines, sizeof engines),
                     pb_engine_wrap_row.folder, own && own[0] ? ":" : "", own ? own : "");
    if (n < 0 || (size_t)n >= sizeof path) {
        pb_cli_error(command_name, "PYTHONPATH is too long to run --join");
        return PB_EXIT_ERROR;
    }
    if (own && own[0])
        setenv("PBENCH_CALLER_PYTHONPATH", own, 1); /* the job's own, unchanged */
    setenv("PYTHONPATH", path, 1);
    setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
    const char *python = getenv(pb_engine_wrap_row.interpreter_env);
    if (!python || !python[0])
        python = pb_engine_wrap_row.interpreter;
    char **args = calloc((size_t)(argc - optind) + 6, sizeof(char *));
    if (!args)
        return PB_EXIT_ERROR;
    int k = 0;
    args[k++] = (char *)python;
    args[k++] = "-m";
    args[k++] = "pbench_wrap.join";
    args[k++] = (char *)cli->w.join;
    args[k++] = "--";
    for (int i = optind; i < argc; i++)
        args[k++] = argv[i];
    execvp(python, args);
    char msg[PB_PATH_MAX + 200];
    snprintf(msg, sizeof msg, "--join cannot start %.*s (%s): name a Python 3 with $%s",
             PB_PATH_MAX, python, strerror(errno), pb_engine_wrap_row.interpreter_env);
    pb_cli_error(command_name, msg);
    free(args);
    return PB_EXIT_ERROR;
}

int cmd_wrap(int argc, char **argv)
{
    struct wrap_cli cli = {.w = {.warmup = 5, .grace_s = 10}, .format = PB_FORMAT_TABLE};
    cli.overrides = calloc((size_t)argc, sizeof(char *));
    cli.axes = calloc((size_t)argc, sizeof(char *));
    cli.news = calloc((size_t)argc, sizeof(char *));
    cli.opts = (struct pb_session_opts){.overrides = cli.overrides, .axes = cli.axes,
                                        .new_overrides = cli.news, .calibrate = false,
                                        .threshold_pct = 5};
    int code = cli.overrides && cli.axes && cli.news ? wrap_parse(argc, argv, &cli) : PB_EXIT_ERROR;
    if (code < 0 && cli.w.join)
        code = join_node(&cli, argc, argv);
    char msg[PB_MSG_MAX], joined[PB_WRAP_COMMAND_MAX];
    const char *line = cli.line;
    if (code < 0 && !line && !shell_line(argv + optind, argc - optind, joined, sizeof joined)) {
        pb_cli_error(command_name, "the command is longer than 4095 bytes");
        code = PB_EXIT_USAGE;
    }
    if (code < 0 && !line)
        line = joined;
    if (cli.opts.new_override_count > 0 && cli.w.warmup == 0)
        cli.w.warmup = 1; /* --ideal keeps its batches after the warm-up's first */
    /* An A/B (--set-new, --ideal) runs the job on each side as often as
     * compare needs to decide at all (4 against 4 for Mann-Whitney's
     * p < 0.05), interleaved; a run or a sweep runs it once a point.
     * -s run.repeats=N says otherwise. */
    cli.w.repeats = cli.opts.new_override_count > 0 ? pb_compare_min_repeats() : 1;
    char *yaml = code < 0 ? wrap_config(&cli.w, line, msg, sizeof msg) : NULL;
    if (code < 0 && !yaml) {
        pb_cli_error(command_name, msg);
        code = PB_EXIT_USAGE;
    }
    if (code < 0) {
        cli.opts.config_path = "pbench wrap";
        cli.opts.config_text = yaml;
        if (cli.opts.new_override_count > 0) { /* the job against itself with one change */
            cli.opts.new_config_path = cli.opts.config_path;
            cli.opts.new_config_text = yaml;
        }
        code = pb_cli_measure(&cli.opts, "pbench wrap", cli.quiet, cli.format, &cli.gate, NULL);
    }
    free(yaml);
    free(cli.overrides);
    free(cli.axes);
    free(cli.news);
    return code;
}
