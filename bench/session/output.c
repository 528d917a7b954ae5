/* Where a session's files go (see output.h). */
#include "bench/session/output.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench/base/fileio.h"
#include "bench/base/pb.h"
#include "bench/sys/mpi.h"

/* The longest config name a default result file name keeps. */
#define SAFE_NAME_MAX 64

/* name as a file name: letters, digits, '.', '_' and '-' kept, anything
 * else (a '/', a space, a control character) '_', no leading '.', at most
 * SAFE_NAME_MAX bytes, "result" when nothing is left. */
static void safe_file_name(const char *name, char *buf, size_t buflen)
{
    size_t n = 0;
    for (const char *c = name; *c && n + 1 < buflen && n < SAFE_NAME_MAX; c++) {
        bool keep = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                    (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' || (*c == '.' && n > 0);
        buf[n++] = keep ? *c : '_';
    }
    buf[n] = '\0';
    if (n == 0)
        snprintf(buf, buflen, "result");
}

/* The folder default results go into, the only one a session creates. */
#define RESULTS_FOLDER "results"

/* results/NAME-YYYYmmdd-HHMMSS, the default result file without ".json". */
static void default_result_stem(const char *name, char *buf, size_t buflen)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32], file_name[SAFE_NAME_MAX + 1];
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    safe_file_name(name, file_name, sizeof(file_name));
    snprintf(buf, buflen, RESULTS_FOLDER "/%s-%s", file_name, stamp);
}

/* The default result file: results/NAME-DATE.json, or NAME-DATE-2.json
 * and so on when that is taken, claimed (made empty) so that a session
 * started in the same second gets another name. Ranks other than 0 write
 * no result and claim nothing. */
static int claim_default_output(const char *name, bool *claimed, char *path, size_t pathlen,
                                char *why, size_t whylen)
{
    char stem[SAFE_NAME_MAX + 64];
    default_result_stem(name, stem, sizeof(stem));
    if (!pb_mpi_is_root()) {
        snprintf(path, pathlen, "%s.json", stem);
        return PB_OK;
    }
    if (mkdir(RESULTS_FOLDER, 0777) != 0 && errno != EEXIST) {
        snprintf(why, whylen, "cannot create the folder %s: %s", RESULTS_FOLDER, strerror(errno));
        return PB_ERR_CONFIG;
    }
    if (pb_claim_new_file(stem, ".json", path, pathlen, why, whylen) != PB_OK)
        return PB_ERR_CONFIG;
    *claimed = true;
    return pb_output_check(path, why, whylen);
}

/* An output (what names the option) that is one of the session's inputs:
 * the config, the other config, the baseline. PB_ERR_CONFIG with msg. */
static int output_is_input(const struct pb_session_opts *o, const char *what, const char *path,
                           char *msg, size_t msglen)
{
    const char *inputs[][2] = {{o->config_path, "the config"},
                               {o->new_config_path, "the new config"},
                               {o->baseline_path, "the --baseline result"}};
    for (size_t i = 0; i < PB_ARRAY_LEN(inputs); i++) {
        if (!inputs[i][0] || !pb_same_file(path, inputs[i][0]))
            continue;
        snprintf(msg, msglen, "%s %s is %s (%s), an input it would overwrite; give another file",
                 what, path, inputs[i][1], inputs[i][0]);
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

int pb_session_decide_output(const struct pb_session_opts *o, const char *name, char *path,
                             size_t pathlen, bool *claimed, char *msg, size_t msglen)
{
    char why[PB_MSG_MAX * 2];
    int rc;
    if (o->output_path) {
        pb_strlcpy(path, o->output_path, pathlen);
        rc = pb_output_check(path, why, sizeof(why));
    } else {
        rc = claim_default_output(name, claimed, path, pathlen, why, sizeof(why));
    }
    if (rc != PB_OK) {
        snprintf(msg, msglen, "%s%s", o->output_path ? "-o " : "", why);
        return rc;
    }
    if (o->output_path && output_is_input(o, "-o", path, msg, msglen) != PB_OK)
        return PB_ERR_CONFIG;
    if (!o->trace_path)
        return PB_OK;
    if (pb_same_file(o->trace_path, path)) {
        snprintf(msg, msglen, "--trace %s is the result file too; give another file",
                 o->trace_path);
        return PB_ERR_CONFIG;
    }
    rc = pb_output_check(o->trace_path, why, sizeof(why));
    if (rc != PB_OK) {
        snprintf(msg, msglen, "--trace %s", why);
        return rc;
    }
    return output_is_input(o, "--trace", o->trace_path, msg, msglen);
}
