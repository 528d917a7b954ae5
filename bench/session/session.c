/* A run or sweep session as a library call (see session.h). The steps of
 * pb_session_run follow one another in this file in the order they run. */
#include "bench/session/session.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/analyze/analysis.h"
#include "bench/analyze/verdict.h"
#include "bench/analyze/history.h"
#include "bench/base/engine_row.h"
#include "bench/base/fileio.h"
#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/base/stats.h"
#include "bench/config/config.h"
#include "bench/config/sweep.h"
#include "bench/result/memgrowth.h"
#include "bench/run/engine_proc.h"
#include "bench/run/repeat.h"
#include "bench/run/storage_run.h"
#include "pipelines/remote.h"
#include "bench/run/trace.h"
#include "bench/session/calibrate.h"
#include "bench/session/interleave.h"
#include "bench/session/output.h"
#include "bench/session/data.h"
#include "bench/session/ranks.h"
#include "bench/sys/cupti.h"
#include "bench/sys/mpi.h"
#include "bench/sys/paths.h"
#include "kernels/gpu_rt.h"
#include "pipelines/dataset.h"
#include "pipelines/generate.h"

/* Everything one pb_session_run holds. */
struct session {
    const struct pb_session_opts *opts;
    const struct pb_session_hooks *hooks;
    struct pb_result *result;
    struct pb_session_outcome *outcome;
    char *msg;
    size_t msglen;

    struct pb_spec base;
    struct pb_sweep *sweep;         /* the base's, owned by it             */
    bool swept;
    struct pb_sweep_point *points;
    long point_count;
    struct pb_spec *specs;          /* point_count, each validated          */
    struct pb_spec calibration;     /* valid when has_calibration, else zero or partly loaded */
    bool has_calibration;
    struct pb_dataset ds;
    bool ds_open;
    struct pb_cupti_trace *trace;
    struct pb_trace *cpu_trace;     /* run.trace: the CPU timeline, or NULL  */
    double *overhead_pairs;
    int overhead_count;
    bool interrupted;
    bool measuring;                 /* between the measuring hook's on and off */
    struct pb_result baseline;      /* read before measuring when opts ask     */
    bool has_baseline;
    bool claimed;                   /* the default result file was made empty  */

    /* pbench compare BASE.yaml NEW.yaml: the new config, its sweep, its
     * dataset (the base's when both name one path), and which config each
     * point is (0 base, 1 new). */
    bool ab;
    struct pb_spec alt;
    struct pb_dataset alt_ds;
    bool alt_ds_open;
    unsigned char *variant;
    struct pb_session_relay relay;  /* the runner's progress and tick hooks */
};

static const struct pb_spec *base_of(const struct session *s, long i)
{
    return s->ab && s->variant[i] ? &s->alt : &s->base;
}

static const struct pb_dataset *ds_of(const struct session *s, long i)
{
    return s->ab && s->variant[i] && s->alt_ds_open ? &s->alt_ds : &s->ds;
}

static const struct pb_session_hooks no_hooks;


/* The session stops with rc: msg is its sentence, given to the hook too. */
static int fail(struct session *s, int rc)
{
    pb_session_say(s->hooks, PB_SESSION_ERROR, "%s", s->msg);
    return rc;
}

/* Also a warning in the result. */
static void warn(struct session *s, const char *text)
{
    pb_result_warn(s->result, "%s", text);
    pb_session_say(s->hooks, PB_SESSION_WARNING, "%s", text);
}

/* A relative dataset.path in the config file, resolved against the
 * config's data root (bench/sys/paths.h): the config's folder, the source
 * tree of a shipped config, or the cache folder for an installed one;
 * absolute, or relative to the current folder when it lies below it.
 * -s values come after, relative to the current folder. */
static int resolve_data_path(const char *config_path, struct pb_dataset_spec *d, char *msg,
                             size_t msglen)
{
    if (d->path[0] == '\0' || d->path[0] == '/' || pb_remote_is_url(d->path))
        return PB_OK;
    char root[PB_PATH_MAX], inner[PB_MSG_MAX];
    enum pb_data_root kind;
    if (pb_data_root(config_path, root, sizeof(root), &kind, inner, sizeof(inner)) != PB_OK) {
        snprintf(msg, msglen, "%s: dataset.path '%s': %s", config_path, d->path, inner);
        return PB_ERR_CONFIG;
    }
    const char *rest = strncmp(d->path, "./", 2) == 0 ? d->path + 2 : d->path;
    char joined[PB_PATH_MAX * 2 + 2];
    int n = snprintf(joined, sizeof(joined), "%s%s%s", root,
                     root[strlen(root) - 1] == '/' ? "" : "/", rest);
    if (n < 0 || (size_t)n >= sizeof(d->path)) {
        snprintf(msg, msglen, "%s: dataset.path '%s' in %s is too long a path", config_path,
                 d->path, root);
        return PB_ERR_CONFIG;
    }
    /* Under the current folder it is said from there, as it was written
     * when the two are one ("data/x", not "/home/u/pbench/data/x"). */
    char cwd[PB_PATH_MAX];
    size_t n_cwd = getcwd(cwd, sizeof(cwd)) ? strlen(cwd) : 0;
    bool below = n_cwd > 1 && strncmp(joined, cwd, n_cwd) == 0 && joined[n_cwd] == '/';
    pb_strlcpy(d->path, below ? joined + n_cwd + 1 : joined, sizeof(d->path));
    return PB_OK;
}

/* One --set-new override of the new config, its errors naming that file
 * ("NEW.yaml: --set-new loader.workers=abc: sentence"). A key the sweep
 * varies is refused: the sweep would set it at every point, and the
 * comparison would list a change that was never measured. */
static int set_new(struct pb_spec *spec, const char *path, const char *assignment, char *msg,
                   size_t msglen)
{
    char inner[PB_MSG_MAX];
    int rc = pb_config_override_as(spec, "--set-new", assignment, inner, sizeof(inner));
    size_t keylen = strcspn(assignment, "=");
    for (int a = 0; rc == PB_OK && spec->sweep && a < spec->sweep->axis_count; a++) {
        if (strlen(spec->sweep->axes[a].path) != keylen ||
            strncmp(spec->sweep->axes[a].path, assignment, keylen) != 0)
            continue;
        snprintf(inner, sizeof(inner), "--set-new %s: %s is swept by the config's sweep: "
                 "section, which would set it at every point over --set-new; compare a copy of the "
                 "config without that axis",
                 assignment, spec->sweep->axes[a].path);
        rc = PB_ERR_CONFIG;
    }
    if (rc != PB_OK)
        snprintf(msg, msglen, "%s: %s", path, inner);
    return rc;
}

/* The base spec of a side (new_side: the new config of a compare): the
 * config file, parsed once (its sweep: section too, typed), the user's -s
 * overrides, on the new side then its --set-new ones, the -a axes,
 * validated. base always owns a sweep afterwards (with no axis when
 * nothing is swept). */
static int load_base(const struct pb_session_opts *opts, bool new_side, struct pb_spec *base,
                     char *msg, size_t msglen)
{
    const char *path = new_side ? opts->new_config_path : opts->config_path;
    const char *text = new_side ? opts->new_config_text : opts->config_text;
    int rc = text ? pb_config_load_string(text, path, base, msg, msglen)
                  : pb_config_load(path, base, msg, msglen);
    if (rc == PB_OK)
        rc = resolve_data_path(path, &base->dataset, msg, msglen);
    for (int i = 0; rc == PB_OK && i < opts->override_count; i++)
        rc = pb_config_override(base, opts->overrides[i], msg, msglen);
    for (int i = 0; rc == PB_OK && new_side && i < opts->new_override_count; i++)
        rc = set_new(base, path, opts->new_overrides[i], msg, msglen);
    for (int i = 0; rc == PB_OK && i < opts->axis_count; i++)
        rc = pb_config_sweep_axis(base, opts->axes[i], msg, msglen);
    if (rc == PB_OK && !base->sweep && !(base->sweep = calloc(1, sizeof(*base->sweep)))) {
        snprintf(msg, msglen, "out of memory");
        rc = PB_ERR_NOMEM;
    }
    if (rc == PB_OK)
        rc = pb_config_validate(base, msg, msglen);
    return rc;
}

/* The spec of one point: a copy of the base with the point's typed sweep
 * values (none when point is NULL), then extra settings (calibration's),
 * validated. Every spec of a session is built here; the config file is
 * not read again. */
static int point_spec(const struct pb_spec *base, const struct pb_sweep_point *point,
                      const char *const *extra, struct pb_spec *spec, char *msg, size_t msglen)
{
    int rc = pb_spec_copy(spec, base, msg, msglen);
    if (rc == PB_OK && point)
        rc = pb_sweep_apply(spec, base->sweep, point, msg, msglen);
    for (int i = 0; rc == PB_OK && extra && extra[i]; i++)
        rc = pb_config_override(spec, extra[i], msg, msglen);
    if (rc == PB_OK)
        rc = pb_config_validate(spec, msg, msglen);
    return rc;
}

/* The session enters (on) or leaves the part a stop signal ends politely:
 * data generation, calibration and the measured rounds. */
static void set_measuring(const struct pb_session_hooks *hooks, bool *measuring, bool on)
{
    if (*measuring != on && hooks->measuring)
        hooks->measuring(hooks->user, on);
    *measuring = on;
}

/* Runs the calibration spec, saying what it measures. */
static int run_calibration(const struct pb_session_hooks *hooks, struct pb_spec *spec,
                           const struct pb_dataset *ds, bool gpu, struct pb_calibration *cal,
                           char *msg, size_t msglen)
{
    pb_session_say(hooks, PB_SESSION_INFO, "calibrating: the pipeline on one core, then memory bandwidth%s",
        pb_spec_uses_gpu(spec) || gpu ? " and host-to-device copies" : "");
    return pb_calibrate(spec, ds, gpu, hooks->stop, cal, msg, msglen);
}

/* ---- the steps of a session ---- */

/* The base config and the sweep, checked in full before anything runs. */
static int load_config(struct session *s)
{
    int rc = load_base(s->opts, false, &s->base, s->msg, s->msglen);
    s->sweep = s->base.sweep;
    if (rc == PB_OK && s->opts->new_config_path) {
        s->ab = true;
        rc = load_base(s->opts, true, &s->alt, s->msg, s->msglen);
    }
    if (rc == PB_OK)
        rc = pb_ranks_apply_shard(&s->base.dataset, s->opts->config_path, s->msg, s->msglen);
    if (rc == PB_OK && s->ab)
        rc = pb_ranks_apply_shard(&s->alt.dataset, s->opts->new_config_path, s->msg, s->msglen);
    if (rc == PB_OK && s->opts->overhead && pb_mpi()->size > 1) {
        snprintf(s->msg, s->msglen, "--overhead measures one process; run it without mpirun");
        rc = PB_ERR_CONFIG;
    }
    return rc == PB_OK ? PB_OK : fail(s, rc);
}

static void start_result(struct session *s)
{
    struct pb_result *r = s->result;
    r->schema_version = PB_SCHEMA_VERSION;
    snprintf(r->pbench_version, sizeof(r->pbench_version), "%s", PB_VERSION);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(r->created, sizeof(r->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(r->name, sizeof(r->name), "%s", s->base.name);
    snprintf(r->config_path, sizeof(r->config_path), "%s", s->opts->config_path);
    pb_machine_probe(&r->machine);
    r->config = pb_spec_to_json(&s->base);
    if (s->ab) {
        json_t *alt = pb_spec_to_json(&s->alt);
        r->interleaved = pb_interleaved_new(s->opts->config_path, r->config,
                                            s->opts->new_config_path, alt,
                                            s->opts->new_overrides,
                                            s->opts->new_override_count);
        json_decref(alt);
        snprintf(r->name, sizeof(r->name), "%.60s-vs-%.60s", s->base.name, s->alt.name);
    }
}

/* loader.pin_memory is dropped from a sweep without a device. */
static void drop_pin_memory_axis(struct session *s, struct pb_sweep *sweep)
{
    for (int a = 0; a < sweep->axis_count; a++) {
        if (strcmp(sweep->axes[a].path, "loader.pin_memory") != 0)
            continue;
        char why[PB_MSG_MAX], text[PB_MSG_MAX * 2];
        if (!pb_gpu_available(why, sizeof(why))) {
            pb_sweep_drop_axis(sweep, "loader.pin_memory");
            snprintf(text, sizeof(text), "sweep axis loader.pin_memory dropped: %s", why);
            warn(s, text);
        }
        break;
    }
}

/* A sweep's points into s->points from index at, tagged variant; returns
 * how many, or a negative or oversized count after setting msg. */
static long sweep_points_at(struct session *s, const struct pb_sweep *sweep, long at,
                            unsigned char variant)
{
    long count = pb_sweep_points(sweep, s->points + at, (size_t)(PB_SWEEP_MAX_POINTS - at), s->msg,
                                 s->msglen);
    if (count > PB_SWEEP_MAX_POINTS - at)
        snprintf(s->msg, s->msglen, "the sweep has %ld points, more than %d: narrow it", count,
                 PB_SWEEP_MAX_POINTS);
    else if (count == 0)
        snprintf(s->msg, s->msglen, "sweep.exclude leaves no point to run");
    for (long i = at; count > 0 && i < at + count && i < PB_SWEEP_MAX_POINTS; i++)
        s->variant[i] = variant;
    return count;
}

/* The sweep's points (both configs' with pbench compare A.yaml B.yaml). */
static int plan_points(struct session *s)
{
    drop_pin_memory_axis(s, s->sweep);
    if (s->ab)
        drop_pin_memory_axis(s, s->alt.sweep);
    s->points = calloc(PB_SWEEP_MAX_POINTS, sizeof(*s->points));
    s->variant = calloc(PB_SWEEP_MAX_POINTS, 1);
    if (!s->points || !s->variant) {
        snprintf(s->msg, s->msglen, "out of memory");
        return fail(s, PB_ERR_NOMEM);
    }
    long count = sweep_points_at(s, s->sweep, 0, 0);
    if (count <= 0 || count > PB_SWEEP_MAX_POINTS)
        return fail(s, PB_ERR_CONFIG);
    if (s->ab) {
        long more = sweep_points_at(s, s->alt.sweep, count, 1);
        if (more <= 0 || more > PB_SWEEP_MAX_POINTS - count)
            return fail(s, PB_ERR_CONFIG);
        count += more;
    }
    s->point_count = count;
    s->swept = s->sweep->axis_count > 0 || (s->ab && s->alt.sweep->axis_count > 0);
    if (s->opts->overhead && count > 1) {
        snprintf(s->msg, s->msglen, "--overhead measures one point; run it without a sweep (or "
                                    "pin the axes with -a)");
        return fail(s, PB_ERR_CONFIG);
    }
    return PB_OK;
}

/* Every point's spec (and the calibration's), validated before the first
 * piece of data is made. */
static int build_specs(struct session *s)
{
    const struct pb_session_opts *o = s->opts;
    s->specs = calloc((size_t)s->point_count, sizeof(*s->specs));
    s->result->points = calloc((size_t)s->point_count, sizeof(*s->result->points));
    if (!s->specs || !s->result->points) {
        snprintf(s->msg, s->msglen, "out of memory");
        return fail(s, PB_ERR_NOMEM);
    }
    s->result->point_count = (size_t)s->point_count;
    for (long i = 0; i < s->point_count; i++) {
        const struct pb_spec *base = base_of(s, i);
        int rc = point_spec(base, &s->points[i], NULL, &s->specs[i], s->msg, s->msglen);
        json_t *axes = base->sweep->axis_count > 0 ? pb_sweep_axes_json(base->sweep, &s->points[i])
                                                   : json_object();
        if (s->ab)
            json_object_set_new(axes, PB_INTERLEAVE_AXIS,
                                json_string(s->variant[i] ? "new" : "base"));
        s->result->points[i].axes = axes;
        if (rc != PB_OK)
            return fail(s, rc);
        if (strcmp(s->specs[i].dataset.path, base->dataset.path) != 0) {
            snprintf(s->msg, s->msglen,
                     "sweeping dataset.path is not supported: run one sweep per dataset");
            return fail(s, PB_ERR_CONFIG);
        }
    }
    if (s->swept && o->calibrate && !s->ab) {
        char cmsg[PB_MSG_MAX * 2];
        s->has_calibration = true;
        if (point_spec(&s->base, NULL, pb_calibration_overrides, &s->calibration, cmsg,
                       sizeof(cmsg)) != PB_OK) {
            s->has_calibration = false;
            pb_result_warn(s->result, "calibration failed: %s", cmsg);
        }
    }
    return PB_OK;
}

/* What this process will measure, as a 64-bit FNV-1a hash: every point's
 * resolved config in canonical JSON, less the shard (each rank reads its
 * own). Ranks of one job must agree on it (pb_ranks_agree). */
static uint64_t measured_fingerprint(const struct session *s)
{
    uint64_t hash = PB_FNV_BASIS;
    for (long i = 0; i < s->point_count; i++) {
        json_t *spec = pb_spec_to_json(&s->specs[i]);
        json_object_del(json_object_get(spec, "dataset"), "shard");
        char *text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
        hash = pb_fnv1a("\x1e", pb_fnv1a(text ? text : "", hash)); /* points apart */
        free(text);
        json_decref(spec);
    }
    return hash;
}

static int ranks_agree(struct session *s)
{
    int rc = pb_ranks_agree(measured_fingerprint(s), s->opts->config_path, s->msg, s->msglen);
    return rc == PB_OK ? PB_OK : fail(s, rc);
}

/* GPU stages need a device: without one, stop (gpu: required) or run the
 * CPU part and say what was skipped (gpu: optional). */
static int apply_gpu_policy(struct session *s)
{
    char why[PB_MSG_MAX];
    bool uses = pb_spec_uses_gpu(&s->base) || (s->ab && pb_spec_uses_gpu(&s->alt));
    if (!uses || pb_gpu_available(why, sizeof(why)))
        return PB_OK;
    char dropped[PB_MSG_MAX] = "";
    if (s->base.gpu == PB_GPU_REQUIRED || (s->ab && s->alt.gpu == PB_GPU_REQUIRED)) {
        pb_spec_drop_gpu(s->base.gpu == PB_GPU_REQUIRED ? &s->base : &s->alt, dropped,
                         sizeof(dropped));
        snprintf(s->msg, s->msglen,
                 "%s: %s; the pipeline needs it for %s. Run on a machine with a GPU, or set gpu: "
                 "optional (-s gpu=optional) to measure the CPU part with those stages skipped",
                 s->opts->config_path, why, dropped);
        return fail(s, PB_ERR_CONFIG);
    }
    for (long i = 0; i < s->point_count; i++)
        pb_spec_drop_gpu(&s->specs[i], dropped, sizeof(dropped));
    struct pb_result *r = s->result;
    snprintf(r->gpu_skipped, sizeof(r->gpu_skipped),
             "gpu: optional and %.100s: skipped %.80s; the training step is a host sleep", why,
             dropped);
    warn(s, r->gpu_skipped);
    return PB_OK;
}

/* What is about to run, and for how long a sweep may take. */
static void announce(struct session *s)
{
    const struct pb_spec *b = &s->base;
    char text[PB_MSG_MAX * 2];
    const struct pb_engine_row *row = pb_engine_row(b->loader.engine);
    bool job = row && row->job_sizes; /* a wrapped job: its command says what runs */
    int n = job ? snprintf(text, sizeof(text), "%s: the job '%.300s%s' with its own data and "
                           "DataLoader settings%s",
                           b->name, b->wrap.command, strlen(b->wrap.command) > 300 ? "..." : "",
                           b->wrap.set[0] ? " (some set by pbench)" : "")
            : s->ds.shard_count
                ? snprintf(text, sizeof(text), "%s: %zu samples in %zu tar shards (%.1f MiB)",
                           b->name, s->ds.count, s->ds.shard_count,
                           (double)s->ds.total_bytes / 1048576.0)
            : s->ds.remote
                ? snprintf(text, sizeof(text), "%s: %zu objects at %.300s (%.1f MiB, listed in "
                           "%.2f s)", b->name, s->ds.count, b->dataset.path,
                           (double)s->ds.total_bytes / 1048576.0, (double)s->ds.list_ns / 1e9)
                : snprintf(text, sizeof(text), "%s: %zu files (%.1f MiB)", b->name, s->ds.count,
                           (double)s->ds.total_bytes / 1048576.0);
    size_t used = n > 0 && (size_t)n < sizeof(text) ? (size_t)n : 0;
    if (s->ab) {
        int rounds = (int)(b->run.repeats > s->alt.run.repeats ? b->run.repeats
                                                                : s->alt.run.repeats);
        char next[PB_MSG_MAX];
        pb_interleaved_label(s->result->interleaved, "new", next, sizeof(next));
        snprintf(text + used, sizeof(text) - used,
                 "; %s (base) against %s (new), %d rounds interleaved A B B A ...",
                 s->opts->config_path, next, rounds);
        pb_session_say(s->hooks, PB_SESSION_INFO, "%s", text);
        return;
    }
    if (!s->swept && job) {
        snprintf(text + used, sizeof(text) - used, ", %d run%s of it", (int)b->run.repeats,
                 b->run.repeats == 1 ? "" : "s");
        pb_session_say(s->hooks, PB_SESSION_INFO, "%s", text);
        return;
    }
    if (!s->swept) {
        snprintf(text + used, sizeof(text) - used,
                 ", %lld worker%s, batch %lld, prefetch %lld, %d repeat%s",
                 (long long)b->loader.workers, b->loader.workers == 1 ? "" : "s",
                 (long long)b->loader.batch_size, (long long)b->loader.prefetch_factor,
                 (int)b->run.repeats, b->run.repeats == 1 ? "" : "s");
        pb_session_say(s->hooks, PB_SESSION_INFO, "%s", text);
        return;
    }
    double lo = 0, hi = 0;
    for (long i = 0; i < s->point_count; i++) {
        lo += (double)s->specs[i].run.repeats * s->specs[i].run.min_time_s;
        hi += (double)s->specs[i].run.repeats * s->specs[i].run.max_time_s;
    }
    char a[32], z[32];
    pb_fmt_eta(lo, a, sizeof(a));
    pb_fmt_eta(hi, z, sizeof(z));
    snprintf(text + used, sizeof(text) - used,
             "; sweep of %ld points x %d repeats, interleaved: %s to %s measured, plus warm-up",
             s->point_count, (int)b->run.repeats, a, z);
    pb_session_say(s->hooks, PB_SESSION_INFO, "%s", text);
    if (hi > 3600)
        pb_session_say(s->hooks, PB_SESSION_WARNING, "this sweep may take over an hour; narrow it with -a "
                                          "PATH=V1,V2 or lower run.max_time_s");
}

static void calibrate_sweep(struct session *s)
{
    if (!s->has_calibration)
        return;
    char cmsg[PB_MSG_MAX * 2];
    int rc = run_calibration(s->hooks, &s->calibration, &s->ds, false, &s->result->calibration,
                             cmsg, sizeof(cmsg));
    if (rc != PB_OK && rc != PB_ERR_INTERRUPTED)
        pb_result_warn(s->result, "calibration failed: %s", cmsg);
}

static void start_cupti(struct session *s)
{
    if ((s->base.profile.gpu != PB_PROFILE_GPU_CUPTI &&
         s->base.profile.level != PB_PROFILE_COMPREHENSIVE) ||
        s->result->gpu_skipped[0] ||
        !pb_spec_uses_gpu(&s->base))
        return;
    char tmsg[PB_MSG_MAX];
    if (pb_cupti_start(&s->trace, tmsg, sizeof(tmsg)) != 0) {
        s->trace = NULL;
        pb_result_warn(s->result, "profile.gpu: cupti: no trace: %s", tmsg);
    }
}

static void stop_cupti(struct session *s)
{
    if (!s->trace)
        return;
    char tmsg[PB_MSG_MAX];
    if (pb_cupti_stop(s->trace, tmsg, sizeof(tmsg)) != 0)
        pb_result_warn(s->result, "profile.gpu: cupti: %s", tmsg);
    s->result->gpu_profile = pb_cupti_summary_json(s->trace);
}

/* "workers=2 batch_size=32": the point's axes by their last name. */
static void point_label(const struct session *s, long i, char *label, size_t labellen)
{
    size_t used = 0;
    const struct pb_sweep *sweep = base_of(s, i)->sweep;
    label[0] = '\0';
    if (s->ab)
        used = (size_t)snprintf(label, labellen, "%s", s->variant[i] ? "new" : "base");
    for (int a = 0; a < sweep->axis_count && used < labellen; a++)
        used += (size_t)snprintf(label + used, labellen - used, "%s%s=%s", used ? " " : "",
                                 strrchr(sweep->axes[a].path, '.') + 1,
                                 sweep->axes[a].values[s->points[i].value[a]]);
}

/* One round of point i; returns the runner's code. */
static int run_round(struct session *s, long i, int round, const struct pb_run_hooks *run_hooks)
{
    struct pb_point_result *pt = &s->result->points[i];
    struct pb_point_run *run;
    int rc = pb_point_open(&s->specs[i], ds_of(s, i), run_hooks, pt, &run, s->msg, s->msglen);
    if (rc != PB_OK)
        return rc;
    double pair = NAN;
    size_t kept = pt->repeat_count;
    s->relay.fixed_window = pb_session_planned_end(&s->specs[i].run, NULL);
    rc = pb_point_repeat(run, round, s->opts->overhead, &pair, s->msg, s->msglen);
    for (size_t k = kept; k < pt->repeat_count; k++)
        pb_session_planned_end(&s->specs[i].run, &pt->repeats[k]);
    if (s->opts->overhead && !isnan(pair))
        s->overhead_pairs[s->overhead_count++] = pair;
    pb_point_close(run);
    return rc;
}

/* Two configs compared: each point on an engine whose row asks for it
 * (checked_first: the torch engine) is started once and closed before
 * either side is measured, so that the engine's refusals of either config
 * come before any measurement. */
static int check_engines(struct session *s)
{
    for (long i = 0; s->ab && i < s->point_count; i++) {
        const struct pb_engine_row *row = pb_engine_row(s->specs[i].loader.engine);
        if (!row || !row->checked_first)
            continue;
        struct pb_result scratch = {.point_count = 1, .points = calloc(1, sizeof(*scratch.points))};
        struct pb_run_hooks quiet = {.stop = s->hooks->stop};
        struct pb_point_run *run = NULL;
        char inner[PB_MSG_MAX * 2];
        int rc = scratch.points ? pb_point_open(&s->specs[i], ds_of(s, i), &quiet, scratch.points,
                                                &run, inner, sizeof(inner))
                                : PB_ERR_NOMEM;
        if (rc == PB_OK)
            pb_point_close(run);
        pb_result_free(&scratch);
        if (rc != PB_OK) {
            snprintf(s->msg, s->msglen, "%s (checked before either config was measured): %s",
                     s->variant[i] ? "new" : "base", rc == PB_ERR_NOMEM ? "out of memory" : inner);
            return fail(s, rc);
        }
    }
    return PB_OK;
}

/* Rounds interleaved across points: round 1 of every point, then round 2,
 * so a drift in machine speed does not pass for a difference. Returns the
 * error of a failed single point, else PB_OK. */
static int measure(struct session *s)
{
    const struct pb_session_hooks *h = s->hooks;
    int repeats = (int)s->base.run.repeats, point_rc = PB_OK;
    if (s->ab && s->alt.run.repeats > repeats)
        repeats = (int)s->alt.run.repeats;
    if (h->rounds)
        h->rounds(h->user, (int)s->point_count, repeats);
    /* A multi-rank run's line per repeat shows the job's figures, so it is
     * said once rank 0 has gathered them, not by the runner. */
    bool ranks = pb_mpi()->active && pb_mpi()->size > 1;
    s->relay.hooks = h;
    struct pb_run_hooks run_hooks = {
        .progress = ranks || !h->progress ? NULL : pb_session_relay_progress,
        .tick = h->tick ? pb_session_relay_tick : NULL, .user = &s->relay, .stop = h->stop};
    start_cupti(s);
    run_hooks.trace = s->cpu_trace = pb_trace_for_specs(s->specs, (size_t)s->point_count, &s->ds);
    s->overhead_pairs = calloc((size_t)repeats, sizeof(double));
    s->interrupted = h->stop && *h->stop;
    bool stuck = false; /* a stage never returned: no round after it */
    for (int r = 0; r < repeats && !s->interrupted && !stuck; r++) {
        for (long k = 0; k < s->point_count && !s->interrupted && !stuck; k++) {
            /* Two configs go A B, then B A: neither always runs first
             * after the other, so what one leaves behind (a warm cache)
             * helps both alike. */
            long i = s->ab && (r % 2) ? s->point_count - 1 - k : k;
            struct pb_point_result *pt = &s->result->points[i];
            if (pt->error[0] || r >= s->specs[i].run.repeats)
                continue;
            char label[256];
            point_label(s, i, label, sizeof(label));
            if (h->round)
                h->round(h->user, (int)i + 1, r + 1, label);
            struct pb_ranks_repeat together;
            pb_ranks_repeat_begin(&together, &run_hooks.group);
            size_t kept_before = pt->repeat_count;
            run_hooks.point = (int)i;
            int rc = run_round(s, i, r, &run_hooks);
            if (rc == PB_ERR_INTERRUPTED) {
                s->interrupted = true;
            } else if (rc != PB_OK) {
                pb_strlcpy(pt->error, s->msg, sizeof(pt->error));
                pb_session_say(h, PB_SESSION_ERROR, "%s%s%s", label, label[0] ? ": " : "", s->msg);
                if (!s->swept || rc == PB_ERR_STALLED)
                    point_rc = rc;
                stuck = rc == PB_ERR_STALLED;
            }
            if (!pb_ranks_repeat_end(&together, i, rc, s->msg, pt, kept_before))
                s->interrupted = true; /* another rank was stopped */
            if (ranks && h->progress && pt->repeat_count > kept_before)
                h->progress(h->user, r, (int)s->specs[i].run.repeats,
                            &pt->repeats[pt->repeat_count - 1]);
            run_hooks.group = NULL;
        }
    }
    stop_cupti(s);
    return point_rc;
}

/* What raised the stop flag, in a user's words. */
static const char *stop_cause(int stop)
{
    int sig = stop & ~PB_RUN_STOP_NOW; /* the first signal's number */
    return sig == SIGINT ? "Ctrl-C" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP"
                                                                                 : "the user";
}

/* Summarizes a point (over its finished repeats: see pb_point_summarize);
 * returns whether a repeat a stop cut short was left out. */
static bool summarize_finished(struct pb_point_result *point)
{
    pb_point_summarize(point);
    return pb_point_finished_repeats(point) < point->repeat_count;
}

/* Point summaries, the overhead figure and the run's own warnings; returns
 * how many points have a repeat. */
static size_t summarize(struct session *s)
{
    struct pb_result *r = s->result;
    size_t measured_points = 0;
    bool left_out = false, only_partial = false;
    for (long i = 0; i < s->point_count; i++) {
        struct pb_point_result *pt = &r->points[i];
        if (pt->repeat_count > 0) {
            left_out |= summarize_finished(pt);
            pb_ranks_point(i, pt);
            pb_memory_growth_check(pt, s->specs[i].analysis.memory_growth_mib);
            only_partial |= pt->repeat_count == 1 && pt->repeats[0].interrupted;
            measured_points++;
        }
    }
    int overhead_count = s->overhead_count;
    double *overhead_pairs = s->overhead_pairs;
    if (s->opts->overhead && overhead_count > 0) {
        r->overhead_measured = true;
        r->overhead_pct = pb_median(overhead_pairs, (size_t)overhead_count);
        r->overhead_noise_pct = pb_stddev(overhead_pairs, (size_t)overhead_count);
    }
    if (s->interrupted) {
        r->interrupted = true;
        pb_result_warn(r,
                       "interrupted by %s: the result holds every repeat finished before the "
                       "stop%s%s",
                       stop_cause(s->hooks->stop ? (int)*s->hooks->stop : 0),
                       left_out ? "; the repeat cut short is kept, marked interrupted, and left "
                                  "out of the summary"
                                : "",
                       only_partial ? "; a point whose only repeat was cut short is summarized "
                                      "from it"
                                    : "");
    } else if (!s->swept && r->points[0].error[0] && r->points[0].repeat_count > 0) {
        pb_result_warn(r, "stopped by an error: %s", r->points[0].error);
    }
    return measured_points;
}

/* Where the result goes, decided before any data is made
 * (bench/session/output.h). */
static int decide_output(struct session *s)
{
    int rc = pb_session_decide_output(s->opts, s->result->name, s->outcome->result_path,
                                      sizeof(s->outcome->result_path), &s->claimed, s->msg,
                                      s->msglen);
    return rc == PB_OK ? PB_OK : fail(s, rc);
}

/* The baseline, read before measuring so that a missing or malformed file
 * stops the session at once. */
static int read_baseline(struct session *s)
{
    char bmsg[PB_MSG_MAX];
    if (pb_result_read(s->opts->baseline_path, &s->baseline, bmsg, sizeof(bmsg)) != PB_OK) {
        pb_result_free(&s->baseline);
        snprintf(s->msg, s->msglen, "--baseline: %s", bmsg); /* it names the file */
        return fail(s, PB_ERR);
    }
    s->has_baseline = true;
    return PB_OK;
}

/* The Chrome trace beside the result: NAME.json -> NAME.trace.json. */
static void write_trace(struct session *s, const char *path)
{
    struct pb_result *r = s->result;
    char wmsg[PB_MSG_MAX];
    pb_trace_default_path(path, r->gpu_trace_path, sizeof(r->gpu_trace_path));
    if (pb_make_parent_dirs(path, wmsg, sizeof(wmsg)) != PB_OK ||
        pb_cupti_write_chrome_trace(s->trace, r->gpu_trace_path, wmsg, sizeof(wmsg)) != 0) {
        pb_result_warn(r, "profile.gpu: cupti: %s", wmsg);
        r->gpu_trace_path[0] = '\0';
    }
}

/* pbench compare A.yaml B.yaml: the comparison of the two halves, into the
 * outcome and the result, in place of the analysis of a run. */
static void compare_interleaved(struct session *s)
{
    struct pb_result *r = s->result;
    char cmsg[PB_MSG_MAX];
    if (pb_interleaved_compare(r, s->opts->threshold_pct, &s->outcome->comparison, cmsg,
                               sizeof(cmsg)) == PB_OK) {
        s->outcome->compared = true;
        json_object_set_new(r->interleaved, "comparison",
                            pb_comparison_to_json(&s->outcome->comparison));
    } else {
        pb_result_warn(r, "the comparison failed: %s", cmsg);
    }
}

/* The analysis (kept for rendering; a sweep's goes into the file too),
 * the trace and the result file. */
static int write_result(struct session *s)
{
    struct pb_result *r = s->result;
    struct pb_session_outcome *out = s->outcome;
    if (s->ab)
        compare_interleaved(s);
    else
        out->analyzed = pb_analyze(r, &out->analysis) == PB_OK;
    if (out->analyzed && s->swept) {
        json_decref(r->analysis);
        r->analysis = pb_analysis_to_json(&out->analysis);
    }
    const char *path = s->outcome->result_path;
    if (s->cpu_trace) {
        /* One file: the CPU tracks, and the GPU's on the same clock. */
        struct pb_trace_extra gpu = {pb_cupti_trace_events, s->trace};
        pb_trace_write_beside(s->cpu_trace, s->opts->trace_path, path, s->trace ? &gpu : NULL, r);
        if (s->trace)
            pb_strlcpy(r->gpu_trace_path, r->trace_path, sizeof(r->gpu_trace_path));
    } else if (s->trace) {
        write_trace(s, path);
    }
    if (pb_result_write(r, path, s->msg, s->msglen) != PB_OK)
        return fail(s, PB_ERR);
    pb_session_say(s->hooks, PB_SESSION_INFO, "result%s written to %s", s->ab ? " (both configs)" : "",
        path);
    if (r->trace_path[0])
        pb_session_say(s->hooks, PB_SESSION_INFO, "trace written to %s: open it in Perfetto or "
            "chrome://tracing", r->trace_path);
    else if (r->gpu_trace_path[0])
        pb_session_say(s->hooks, PB_SESSION_INFO, "GPU trace written to %s: open it in Perfetto or "
            "chrome://tracing", r->gpu_trace_path);
    return PB_OK;
}

static int compare_baseline(struct session *s)
{
    /* Two runs: history's run-to-run spread of the series counts too. */
    if (pb_compare_runs(&s->baseline, s->result, s->opts->threshold_pct, PB_HISTORY_DB,
                        &s->outcome->comparison) != PB_OK) {
        snprintf(s->msg, s->msglen, "--baseline: out of memory");
        return fail(s, PB_ERR_NOMEM);
    }
    s->outcome->compared = true;
    return PB_OK;
}

/* The measured part: from the open dataset to the written result. */
static int run_measured(struct session *s)
{
    announce(s);
    if (pb_mpi()->active)
        pb_session_say(s->hooks, PB_SESSION_INFO,
            "%d ranks (%d on this node): each reads shard rank/%d; rank 0 decides when a repeat "
            "stops and writes the result",
            pb_mpi()->size, pb_mpi()->local_size, pb_mpi()->size);
    calibrate_sweep(s);
    /* The stop signals stay caught through summarizing and writing: a
     * SIGTERM now (timeout's second one) must not cut the result short. */
    int rc = measure(s);
    size_t measured_points = summarize(s);
    if (s->interrupted)
        rc = PB_ERR_INTERRUPTED;
    if (!pb_mpi_is_root())
        return rc; /* rank 0 writes the one result of a multi-rank run; a rank
                    * that the decider always stopped in warm-up kept nothing */
    if (measured_points == 0 && rc == PB_ERR_INTERRUPTED) {
        snprintf(s->msg, s->msglen,
                 "interrupted by %s before any repeat finished: nothing was measured, no result "
                 "written",
                 stop_cause(s->hooks->stop ? (int)*s->hooks->stop : 0));
        return fail(s, rc);
    }
    if (measured_points == 0) { /* every point failed and said why (msg holds the last) */
        pb_session_say(s->hooks, PB_SESSION_INFO, "nothing was measured: no result written");
        return rc == PB_OK ? PB_ERR : rc;
    }
    s->outcome->measured = true;
    int wrc = write_result(s);
    if (wrc != PB_OK)
        rc = wrc;
    if (s->has_baseline && !s->ab) {
        int brc = compare_baseline(s);
        if (rc == PB_OK)
            rc = brc;
    }
    return rc;
}

int pb_session_run(const struct pb_session_opts *opts, const struct pb_session_hooks *hooks,
                   struct pb_result *result, struct pb_session_outcome *outcome, char *msg,
                   size_t msglen)
{
    memset(result, 0, sizeof(*result));
    memset(outcome, 0, sizeof(*outcome));
    msg[0] = '\0';
    struct session *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(msg, msglen, "out of memory");
        return PB_ERR_NOMEM;
    }
    *s = (struct session){.opts = opts, .hooks = hooks ? hooks : &no_hooks, .result = result,
                          .outcome = outcome, .msg = msg, .msglen = msglen};
    int rc = load_config(s);
    if (rc == PB_OK) {
        start_result(s);
        rc = plan_points(s);
    }
    if (rc == PB_OK)
        rc = build_specs(s);
    if (rc == PB_OK)
        rc = ranks_agree(s);
    if (rc == PB_OK)
        rc = apply_gpu_policy(s);
    if (rc == PB_OK)
        rc = decide_output(s);
    if (rc == PB_OK && opts->baseline_path)
        rc = read_baseline(s);
    /* The stop signals are caught from here on: generating the data can
     * take minutes too. */
    if (rc == PB_OK)
        set_measuring(s->hooks, &s->measuring, true);
    if (rc == PB_OK) {
        rc = pb_session_open_dataset(opts, s->hooks, &s->base, &s->ds, msg, msglen);
        if (rc == PB_OK) {
            s->ds_open = true;
            pb_storage_dataset_info(&s->base, &s->ds, &s->result->dataset);
        } else {
            fail(s, rc);
        }
    }
    if (rc == PB_OK && s->ab && strcmp(s->alt.dataset.path, s->base.dataset.path) != 0) {
        struct pb_session_opts alt = *opts;
        alt.config_path = opts->new_config_path;
        rc = pb_session_open_dataset(&alt, s->hooks, &s->alt, &s->alt_ds, msg, msglen);
        if (rc == PB_OK)
            s->alt_ds_open = true;
        else
            fail(s, rc);
    }
    if (rc == PB_OK)
        rc = check_engines(s);
    if (rc == PB_OK)
        rc = run_measured(s);
    pb_engine_proc_release(); /* the engine kept between points */
    set_measuring(s->hooks, &s->measuring, false);
    if (s->claimed)
        pb_release_claim(outcome->result_path); /* no result went into it */

    if (s->has_baseline)
        pb_result_free(&s->baseline);
    if (s->ds_open)
        pb_dataset_free(&s->ds);
    if (s->alt_ds_open)
        pb_dataset_free(&s->alt_ds);
    pb_spec_free(&s->alt);
    free(s->variant);
    for (long i = 0; s->specs && i < s->point_count; i++)
        pb_spec_free(&s->specs[i]);
    pb_spec_free(&s->calibration);
    pb_cupti_free(s->trace);
    pb_trace_free(s->cpu_trace);
    pb_spec_free(&s->base);
    free(s->specs);
    free(s->points);
    free(s->overhead_pairs);
    free(s);
    return rc;
}

void pb_session_outcome_free(struct pb_session_outcome *outcome)
{
    if (outcome->compared)
        pb_comparison_free(&outcome->comparison);
    outcome->compared = false;
    if (outcome->analyzed)
        pb_analysis_free(&outcome->analysis);
    outcome->analyzed = false;
}

int pb_session_calibrate(const struct pb_session_opts *opts, const struct pb_session_hooks *hooks,
                         struct pb_calibration *cal, char *name, size_t namelen, char *msg,
                         size_t msglen)
{
    hooks = hooks ? hooks : &no_hooks;
    memset(cal, 0, sizeof(*cal));
    struct pb_spec spec;
    struct pb_dataset ds;
    memset(&spec, 0, sizeof(spec));
    memset(&ds, 0, sizeof(ds));
    /* The calibration spec is the config's, validated, with a few settings
     * on top: checked in full before the dataset is made. */
    struct pb_spec base;
    int rc = load_base(opts, false, &base, msg, msglen);
    if (rc == PB_OK)
        rc = point_spec(&base, NULL, pb_calibration_overrides, &spec, msg, msglen);
    pb_spec_free(&base);
    bool measuring = false;
    if (rc == PB_OK) {
        pb_strlcpy(name, spec.name, namelen);
        set_measuring(hooks, &measuring, true);
        rc = pb_session_open_dataset(opts, hooks, &spec, &ds, msg, msglen);
    }
    if (rc == PB_OK)
        rc = run_calibration(hooks, &spec, &ds, opts->calibrate_gpu, cal, msg, msglen);
    set_measuring(hooks, &measuring, false);
    if (rc != PB_OK)
        pb_session_say(hooks, PB_SESSION_ERROR, "%s", msg);
    pb_dataset_free(&ds);
    pb_spec_free(&spec);
    return rc;
}
