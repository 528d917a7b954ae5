/* pbench's commands as one table (bench/cli/commands.h), their help and
 * usage with the lists they name filled in from the format and metric
 * tables, and the dispatch from argv to a command (see cli.h). */
#include "bench/cli/cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/cli/commands.h"
#include "bench/report/format.h"
#include "bench/result/metrics.h"

struct command {
    const char *name, *usage, *help;
    int (*fn)(int argc, char **argv);
};

static int cmd_help(int argc, char **argv)
{
    return pb_cli_help(argc, argv);
}

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

/* text with its lists filled in from the tables they come from, so help
 * cannot drift from them: {formats} "table|json|...", {format-list}
 * "table, json, ...", {comparison-formats} those with a comparison form,
 * {history-formats} those with a history form, {metrics} the metrics
 * history shows, {gated-metrics} those --fail-on-regression gates on,
 * {gate-metrics} those --gate can name. */
static const char *expand(const char *text, char *buf, size_t buflen)
{
    enum { FORMATS, COMPARISON_FORMATS, HISTORY_FORMATS, METRICS };
    static const struct {
        const char *token, *sep;
        int list;
        enum pb_metric_filter metrics;
    } tokens[] = {{"{formats}", "|", FORMATS, 0},
                  {"{format-list}", ", ", FORMATS, 0},
                  {"{comparison-formats}", "|", COMPARISON_FORMATS, 0},
                  {"{history-formats}", "|", HISTORY_FORMATS, 0},
                  {"{metrics}", "|", METRICS, PB_METRICS_KEPT},
                  {"{gated-metrics}", ", ", METRICS, PB_METRICS_GATED},
                  {"{gate-metrics}", "|", METRICS, PB_METRICS_GATEABLE}};
    size_t used = 0;
    buf[0] = '\0';
    while (*text && used + 1 < buflen) {
        size_t k = 0;
        while (k < PB_ARRAY_LEN(tokens) && strncmp(text, tokens[k].token, strlen(tokens[k].token)))
            k++;
        if (k == PB_ARRAY_LEN(tokens)) {
            buf[used++] = *text++;
            buf[used] = '\0';
            continue;
        }
        if (tokens[k].list == METRICS)
            pb_metric_names(buf + used, buflen - used, tokens[k].sep, tokens[k].metrics);
        else if (tokens[k].list == HISTORY_FORMATS)
            pb_format_history_names(buf + used, buflen - used, tokens[k].sep);
        else
            pb_format_names(buf + used, buflen - used, tokens[k].sep,
                            tokens[k].list == COMPARISON_FORMATS);
        used += strlen(buf + used);
        text += strlen(tokens[k].token);
    }
    return buf;
}

const char *pb_cli_expand(const char *text, char *buf, size_t buflen)
{
    return expand(text, buf, buflen);
}

static void print_usage(FILE *out)
{
    fprintf(out, "pbench %s: benchmark ML data-loading pipelines\n\nUsage:\n", PB_VERSION);
    /* A usage's second form ("       pbench history show") is indented to
     * follow "usage: "; here it lines up with the first. */
    char text[4096];
    for (size_t i = 0; i < PB_ARRAY_LEN(commands); i++) {
        const char *usage = expand(commands[i].usage, text, sizeof(text));
        for (const char *line = usage; *line;) {
            size_t len = strcspn(line, "\n");
            bool second_form = strncmp(line, "       pbench ", 14) == 0;
            bool first = line == usage;
            fprintf(out, "%s%.*s\n", first || second_form ? "  " : "",
                    (int)(len - (second_form ? 7 : 0)), line + (second_form ? 7 : 0));
            line += len + (line[len] == '\n');
        }
    }
    fprintf(out, "\nExit codes: %s\nRun 'pbench help COMMAND' for details.\n",
            PB_EXIT_CODES_TEXT);
}

int pb_cli_usage_error(const char *cmd, const char *fmt, const char *arg)
{
    char text[4096];
    fprintf(stderr, "pbench %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s\n", expand(find_command(cmd)->usage, text, sizeof(text)));
    return PB_EXIT_USAGE;
}

int pb_cli_format_error(const char *cmd, const char *text, bool comparison)
{
    char names[256], fmt[320];
    pb_format_names(names, sizeof(names), ", ", comparison);
    snprintf(fmt, sizeof(fmt), "unknown format '%%s'; allowed: %s", names);
    return pb_cli_usage_error(cmd, fmt, text);
}

int pb_cli_help(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stdout);
        return PB_EXIT_OK;
    }
    if (strcmp(argv[1], "--man") == 0)
        return pb_cli_man(stdout);
    const struct command *cmd = find_command(argv[1]);
    if (!cmd) {
        fprintf(stderr, "pbench help: unknown command '%s'\n", argv[1]);
        print_usage(stderr);
        return PB_EXIT_USAGE;
    }
    char usage[4096], help[8192];
    printf("usage: %s\n\n%s\n", expand(cmd->usage, usage, sizeof(usage)),
           expand(cmd->help, help, sizeof(help)));
    return PB_EXIT_OK;
}

int pb_cli_dispatch(int argc, char **argv, const char **name)
{
    *name = NULL;
    if (argc < 2) {
        print_usage(stderr);
        return PB_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        *name = "help";
        return pb_cli_help(1, argv);
    }
    if (strcmp(argv[1], "--version") == 0) {
        *name = "version";
        return cmd_version(1, argv);
    }
    const struct command *cmd = find_command(argv[1]);
    if (!cmd) {
        fprintf(stderr, "pbench: unknown command '%s'\n\n", argv[1]);
        print_usage(stderr);
        return PB_EXIT_USAGE;
    }
    *name = cmd->name;
    return cmd->fn(argc - 1, argv + 1);
}

