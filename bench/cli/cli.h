/* What the command files of pbench's command line share: the exit code of
 * a library return code, errors and usage errors in one voice, help, and
 * the commands themselves (bound by name in bench/cli/commands.h). */
#ifndef PB_CLI_H
#define PB_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bench/analyze/compare.h"

/* A library return code as the process's exit code: an interrupted
 * command exits as shells report a death by that signal, 128 + its
 * number. */
int pb_cli_exit(int rc);

/* What a comparison's exit code answers to: --fail-on-regression, and the
 * metrics --gate adds to those the table gates on by default. */
struct pb_gate {
    bool fail_on_regression;
    const char *metrics; /* "assembly_p99_ns,rss_peak_bytes", or NULL */
};

/* The exit code of a printed comparison (compare, run --baseline): 3 for
 * a regression of a gated metric under --fail-on-regression. */
int pb_cli_comparison_exit(int print_rc, const struct pb_comparison *cmp,
                           const struct pb_gate *gate);

/* "pbench CMD: MESSAGE" on stderr; the message names files from the
 * command line or a result, printed without control characters. cmd may
 * be NULL. */
void pb_cli_error(const char *cmd, const char *msg);

/* "pbench CMD: " fmt (with arg) and the command's usage on stderr;
 * returns PB_EXIT_USAGE. */
int pb_cli_usage_error(const char *cmd, const char *fmt, const char *arg);

/* "unknown format 'text'; allowed: ..." from the format table (those with
 * a comparison form when comparison), as pb_cli_usage_error. */
int pb_cli_format_error(const char *cmd, const char *text, bool comparison);

/* pbench help [COMMAND]; `pbench help --man` writes the manual page. */
int pb_cli_help(int argc, char **argv);

/* Runs the command argv names (argv[1]; --help and --version too) and
 * returns its exit code; *name gets the command's name for messages (NULL
 * when there is none). */
int pb_cli_dispatch(int argc, char **argv, const char **name);

/* text with {formats}, {format-list}, {comparison-formats} and {metrics}
 * filled in from the tables they come from (bench/cli/main.c); returns buf. */
const char *pb_cli_expand(const char *text, char *buf, size_t buflen);

/* The manual page, pbench.1 in roff, written to out from the command
 * table (bench/cli/commands.h) as help shows it, so the two cannot drift
 * (bench/cli/manpage.c). Returns the exit code. */
int pb_cli_man(FILE *out);

struct pb_session_opts; /* bench/session/hooks.h */

/* Runs the session opts describes (progress on stderr unless quiet) and
 * prints what it measured in format, or two configs' comparison (into
 * comparison_path when given); returns the exit code (bench/cli/main.c). */
int pb_cli_measure(const struct pb_session_opts *opts, const char *title, bool quiet, int format,
                   const struct pb_gate *gate, const char *comparison_path);

/* The commands that do not measure a pipeline (bench/cli/tools.c). */
int cmd_run(int argc, char **argv);
int cmd_wrap(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_version(int argc, char **argv);

#endif
