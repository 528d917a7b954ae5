/* The nightly history (bench/analyze/history.h): run summaries kept in SQLite by
 * fingerprint, and the step changes and suspect nights found in each series. */
#include "bench/analyze/history.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "bench/analyze/config_diff.h"
#include "bench/analyze/steps.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/base/stats.h"
#include "bench/result/metrics.h"

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS runs ("
    " id INTEGER PRIMARY KEY,"
    " created TEXT NOT NULL,"      /* when the run was measured (result.created) */
    " added TEXT NOT NULL,"
    " config TEXT NOT NULL,"
    " machine TEXT NOT NULL,"
    " revision TEXT NOT NULL,"
    " point TEXT NOT NULL,"        /* the point's axes as JSON */
    " samples_per_s REAL, noise_pct REAL, stall_pct REAL,"
    " assembly_p99_ns REAL, rss_peak_bytes REAL,"
    " source TEXT,"
    " identity TEXT,"              /* the row's measurement, see row_identity() */
    " fingerprint TEXT,"           /* what was measured, see config_fingerprint() */
    " measured TEXT);"             /* the JSON the fingerprint hashes, machine aside */
    "CREATE INDEX IF NOT EXISTS runs_series ON runs(config, machine, point, created);";
/* Made after the columns exist (databases from before them get them
 * added; their rows keep a NULL fingerprint and form a series of their own
 * per config and machine, as they did). */
static const char *const late_indexes =
    "CREATE UNIQUE INDEX IF NOT EXISTS runs_identity ON runs(identity);"
    "CREATE INDEX IF NOT EXISTS runs_fingerprint ON runs(fingerprint, point, created);";

/* Adds column to runs when a database made before it lacks it. Another
 * process adding it at the same time is no error. */
static int add_missing_column(sqlite3 *db, const char *column, const char *type, char **err)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT %s FROM runs", column);
    sqlite3_stmt *probe = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &probe, NULL);
    sqlite3_finalize(probe);
    if (rc == SQLITE_OK)
        return SQLITE_OK;
    if (!strstr(sqlite3_errmsg(db), "no such column"))
        return rc; /* busy past the timeout, corrupt: the caller reports it */
    snprintf(sql, sizeof(sql), "ALTER TABLE runs ADD COLUMN %s %s", column, type);
    rc = sqlite3_exec(db, sql, NULL, NULL, err);
    if (rc != SQLITE_OK && *err && strstr(*err, "duplicate column name")) {
        sqlite3_free(*err);
        *err = NULL;
        rc = SQLITE_OK;
    }
    return rc;
}

/* How long a command waits for another one writing the database (parallel
 * `history add`s take turns). */
#define BUSY_TIMEOUT_MS 60000

/* Runs sql, and again while it fails at once on another connection's lock:
 * SQLite gives up without waiting where waiting could deadlock (two
 * commands switching a new database to WAL, each holding the read lock the
 * other waits on). Retries for up to BUSY_TIMEOUT_MS in all. */
static int exec_retrying(sqlite3 *db, const char *sql, char **err)
{
    uint64_t deadline_ns = pb_now_ns() + (uint64_t)BUSY_TIMEOUT_MS * 1000000u;
    for (;;) {
        int rc = sqlite3_exec(db, sql, NULL, NULL, err);
        if (rc != SQLITE_BUSY || pb_now_ns() >= deadline_ns)
            return rc;
        sqlite3_free(*err);
        *err = NULL;
        sqlite3_sleep(5);
    }
}

/* Brings the schema up to date: the table and its first index, the columns
 * that databases made before an identity, a fingerprint or a metric lack,
 * and the indexes on them. A writable database is updated in one
 * transaction that takes the write lock first, so commands opening one new
 * database at once take turns. */
static int update_schema(sqlite3 *db, bool writable, char **err)
{
    int rc = writable ? exec_retrying(db, "BEGIN IMMEDIATE", err) : SQLITE_OK;
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, schema, NULL, NULL, err);
    if (rc == SQLITE_OK)
        rc = add_missing_column(db, "identity", "TEXT", err);
    if (rc == SQLITE_OK)
        rc = add_missing_column(db, "fingerprint", "TEXT", err);
    if (rc == SQLITE_OK)
        rc = add_missing_column(db, "measured", "TEXT", err);
    /* What the machine was doing besides the run (struct pb_history_run). */
    static const char *const interference[] = {"other_cpu_pct", "steal_pct", "throttled_pct"};
    for (size_t i = 0; rc == SQLITE_OK && i < PB_ARRAY_LEN(interference); i++)
        rc = add_missing_column(db, interference[i], "REAL", err);
    /* Each pipeline stage's CPU time per sample, {"decode": ns, ...}. */
    if (rc == SQLITE_OK)
        rc = add_missing_column(db, "stage_cpu_ns", "TEXT", err);
    /* A metric added to the table after the database was made. */
    for (int m = 0; rc == SQLITE_OK && m < PB_METRIC_COUNT; m++)
        if (pb_metrics[m].of_point)
            rc = add_missing_column(db, pb_metrics[m].name, "REAL", err);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, late_indexes, NULL, NULL, err);
    if (writable && rc == SQLITE_OK)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, err);
    if (writable && rc != SQLITE_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Opens the database at path, a file name or a SQLite "file:" URI: creates
 * it when missing if create, else a missing database is PB_ERR saying "no
 * history yet". Waits up to BUSY_TIMEOUT_MS for other writers, puts a
 * writable database in WAL mode (readers and a writer at once), and brings
 * its schema up to date: databases made before results had an identity or
 * a fingerprint get the columns and their indexes. */
static int open_db(const char *path, bool create, sqlite3 **db, char *msg, size_t msglen)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
        bool missing = !create && *db && sqlite3_errcode(*db) == SQLITE_CANTOPEN &&
                       sqlite3_system_errno(*db) == ENOENT;
        if (missing)
            snprintf(msg, msglen, "%s: no history yet (pbench history add RESULT.json creates it)",
                     path);
        else
            snprintf(msg, msglen, "%s: %s", path, *db ? sqlite3_errmsg(*db) : "cannot open");
        sqlite3_close(*db);
        *db = NULL;
        return PB_ERR;
    }
    sqlite3_busy_timeout(*db, BUSY_TIMEOUT_MS);
    char *err = NULL;
    bool writable = sqlite3_db_readonly(*db, "main") == 0;
    int rc = writable ? exec_retrying(*db, "PRAGMA journal_mode=WAL", &err) : SQLITE_OK;
    if (rc == SQLITE_OK)
        rc = update_schema(*db, writable, &err);
    if (rc != SQLITE_OK) {
        /* A reader that cannot make the WAL's index beside the database. */
        bool wal_reader = !create && sqlite3_errcode(*db) == SQLITE_READONLY;
        snprintf(msg, msglen, "%s: %s%s", path, err ? err : sqlite3_errmsg(*db),
                 wal_reader ? " (the history is in WAL mode: read it where its folder can be "
                              "written, or as --db 'file:PATH?immutable=1' while nothing adds "
                              "to it)"
                            : "");
        sqlite3_free(err);
        sqlite3_close(*db);
        *db = NULL;
        return PB_ERR;
    }
    return PB_OK;
}

/* What makes a row the same measurement: the result (when, what, where,
 * measured how fast), the point and the revision it is filed under, as a
 * 64-bit FNV-1a hash in hex. The same file added again under the same
 * revision has the same identity; another revision files it anew. */
static void row_identity(const struct pb_result *result, const char *machine, const char *axes,
                         const char *revision, const struct pb_point_result *p, char *buf,
                         size_t buflen)
{
    char text[2048];
    snprintf(text, sizeof(text), "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%.17g %.17g %.17g %llu %llu",
             result->created, result->name, machine, result->machine.hostname, axes, revision,
             p->samples_per_s, p->samples_per_s_noise_pct, p->stall_pct,
             (unsigned long long)p->assembly_p99_ns, (unsigned long long)p->rss_peak_bytes);
    snprintf(buf, buflen, "%016llx", (unsigned long long)pb_fnv1a(text, PB_FNV_BASIS));
}

/* The machine a series is kept for, as its column holds it. */
static void machine_text(const struct pb_result *result, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%s, %d cores / %d PUs%s%s", result->machine.cpu_model,
             result->machine.cores, result->machine.pus, result->machine.gpu_name[0] ? ", " : "",
             result->machine.gpu_name);
}

/* What was measured, as a 64-bit FNV-1a hash in hex: the resolved config's
 * dataset, pipeline, loader and profile sections and its run section less
 * the settings that say how long and how often to measure (they change the
 * noise, not the quantity), in canonical JSON, then the machine. The
 * config's name is left out: renaming a config keeps its series. */
static void config_fingerprint(const struct pb_result *result, const char *machine, char *buf,
                               size_t buflen, char **measured_text)
{
    static const char *const sections[] = {"dataset", "pipeline", "loader", "profile", "run"};
    static const char *const how_long[] = {"warmup_batches", "min_time_s", "max_time_s",
                                           "min_samples",    "target_noise", "window_s",
                                           "repeats",        "max_error_pct", "max_memory_mib"};
    json_t *measured = json_object();
    for (size_t i = 0; result->config && i < PB_ARRAY_LEN(sections); i++) {
        json_t *section = json_object_get(result->config, sections[i]);
        if (section)
            json_object_set_new(measured, sections[i], json_deep_copy(section));
    }
    json_t *run = json_object_get(measured, "run");
    for (size_t i = 0; json_is_object(run) && i < PB_ARRAY_LEN(how_long); i++)
        json_object_del(run, how_long[i]);
    char *text = json_dumps(measured, JSON_COMPACT | JSON_SORT_KEYS);
    uint64_t hash = pb_fnv1a(text ? text : "{}", PB_FNV_BASIS);
    hash = pb_fnv1a("\x1f", hash);
    snprintf(buf, buflen, "%016llx", (unsigned long long)pb_fnv1a(machine, hash));
    *measured_text = text; /* the caller frees it */
    json_decref(measured);
}


/* A point's pipeline stages' CPU time per sample (ns) as a JSON object,
 * the sub-stages and device rows aside; the caller frees it. */
static char *stage_cpu_text(const struct pb_point_result *p)
{
    json_t *stages = json_object();
    for (size_t s = 0; p->stages && s < p->stage_count; s++) {
        const struct pb_stage_result *st = &p->stages[s];
        double v = pb_point_stage_cpu_ns_per_sample(p, st);
        if (pb_stage_is_cpu(st) && !isnan(v))
            json_object_set_new(stages, st->name, json_real(v));
    }
    char *text = json_dumps(stages, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(stages);
    return text;
}

/* Adds result's points; *added counts the rows that were new (a point
 * already in the history is left as it is). */
static int add_points(const char *db_path, const struct pb_result *result, const char *revision,
                      const char *source, size_t *added, char *msg, size_t msglen)
{
    *added = 0;
    sqlite3 *db;
    if (open_db(db_path, true, &db, msg, msglen) != PB_OK)
        return PB_ERR;
    char machine[512], added_at[40];
    machine_text(result, machine, sizeof(machine));
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(added_at, sizeof(added_at), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (!revision)
        revision = "";
    char fingerprint[32], *measured = NULL;
    config_fingerprint(result, machine, fingerprint, sizeof(fingerprint), &measured);
    /* The fixed columns, then one per kept metric (bench/result/metrics.h). */
    char sql[1024] = "INSERT OR IGNORE INTO runs (created, added, config, machine, revision,"
                     " point, noise_pct, source, identity, fingerprint, measured,"
                     " other_cpu_pct, steal_pct, throttled_pct, stage_cpu_ns";
    char values[256] = "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?";
    for (int m = 0; m < PB_METRIC_COUNT; m++) {
        if (!pb_metrics[m].of_point)
            continue;
        size_t used = strlen(sql), vused = strlen(values);
        snprintf(sql + used, sizeof(sql) - used, ", %s", pb_metrics[m].name);
        snprintf(values + vused, sizeof(values) - vused, ",?");
    }
    size_t used = strlen(sql);
    snprintf(sql + used, sizeof(sql) - used, ") VALUES (%s)", values);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    char *err = NULL;
    if (rc == SQLITE_OK)
        rc = exec_retrying(db, "BEGIN IMMEDIATE", &err); /* the write lock first */
    sqlite3_free(err); /* sqlite3_errmsg says it again below */
    for (size_t i = 0; rc == SQLITE_OK && i < result->point_count; i++) {
        const struct pb_point_result *p = &result->points[i];
        if (p->repeat_count == 0)
            continue;
        char *axes = p->axes ? json_dumps(p->axes, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        char identity[32];
        row_identity(result, machine, axes ? axes : "{}", revision, p, identity,
                     sizeof(identity));
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, result->created, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, added_at, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, result->name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, machine, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, revision, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 6, axes ? axes : "{}", -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(st, 7, p->samples_per_s_noise_pct);
        sqlite3_bind_text(st, 8, source ? source : "", -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 9, identity, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 10, fingerprint, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 11, measured ? measured : "{}", -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(st, 12, p->other_cpu_pct);
        sqlite3_bind_double(st, 13, p->steal_pct);
        sqlite3_bind_double(st, 14, pb_point_median_throttled(p));
        char *stages = stage_cpu_text(p);
        sqlite3_bind_text(st, 15, stages ? stages : "{}", -1, SQLITE_TRANSIENT);
        free(stages);
        for (int m = 0, column = 16; m < PB_METRIC_COUNT; m++)
            if (pb_metrics[m].of_point)
                sqlite3_bind_double(st, column++, pb_metrics[m].of_point(p));
        free(axes);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
            *added += (size_t)sqlite3_changes(db);
            rc = SQLITE_OK;
        }
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        /* The message before ROLLBACK, which would replace it. */
        snprintf(msg, msglen, "cannot add to the history database %s: %s", db_path,
                 sqlite3_errmsg(db));
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        *added = 0;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(measured);
    return rc == SQLITE_OK ? PB_OK : PB_ERR;
}

int pb_history_add(const char *db_path, const struct pb_result *result, const char *revision,
                   const char *source, char *msg, size_t msglen)
{
    size_t added;
    return add_points(db_path, result, revision, source, &added, msg, msglen);
}

void pb_history_metric_names(char *buf, size_t buflen, const char *sep)
{
    pb_metric_names(buf, buflen, sep, PB_METRICS_KEPT);
}

void pb_history_free(struct pb_history *h)
{
    for (size_t i = 0; i < h->series_count; i++) {
        for (size_t r = 0; r < h->series[i].run_count; r++)
            free(h->series[i].runs[r].stages);
        free(h->series[i].runs);
        free(h->series[i].measured);
    }
    free(h->series);
    memset(h, 0, sizeof(*h));
}

/* The median of one figure of s's runs [from, to), its NaNs left out
 * (NaN when none has it); field is the figure's offset in the run. values
 * is scratch of run_count. */
static double runs_median(const struct pb_history_series *s, size_t from, size_t to, size_t field,
                          double *values)
{
    size_t n = 0;
    for (size_t i = from; i < to; i++) {
        double v;
        memcpy(&v, (const char *)&s->runs[i] + field, sizeof(v));
        if (!isnan(v))
            values[n++] = v;
    }
    return n ? pb_median(values, n) : NAN;
}

/* The machine reference's median shift across s's step, in %: the runs
 * before it against the runs from it (values is scratch of run_count). */
static double machine_shift(const struct pb_history_series *s, double *values)
{
    size_t field = offsetof(struct pb_history_run, machine);
    double b = runs_median(s, 0, (size_t)s->step, field, values);
    double a = runs_median(s, (size_t)s->step, s->run_count, field, values);
    return b > 0 && a > 0 ? 100.0 * (a / b - 1) : NAN;
}

/* Whether other processes (or a CPU quota) moved a wall-clock step of s:
 * the runs before it or from it took place on a busy machine (the rule of
 * compare, bench/analyze/compare.h). Fills other_before, other_after. */
static bool step_disturbed(struct pb_history_series *s, double *values)
{
    size_t step = (size_t)s->step, n = s->run_count;
    size_t other = offsetof(struct pb_history_run, other_cpu),
           steal = offsetof(struct pb_history_run, steal),
           throttled = offsetof(struct pb_history_run, throttled);
    s->other_before = runs_median(s, 0, step, other, values);
    s->other_after = runs_median(s, step, n, other, values);
    double steal_before = runs_median(s, 0, step, steal, values),
           steal_after = runs_median(s, step, n, steal, values);
    double quota_before = runs_median(s, 0, step, throttled, values),
           quota_after = runs_median(s, step, n, throttled, values);
    return pb_machine_disturbed(s->other_before, steal_before, quota_before) ||
           pb_machine_disturbed(s->other_after, steal_after, quota_after);
}

/* A run's CPU time per sample in stage (ns) from its stages JSON: 0 where
 * the run has stage data without it, NaN where it has none (a row from
 * before they were kept). *has says whether the run ran the stage. */
static double run_stage_ns(const json_t *stages, const char *stage, bool *has)
{
    const json_t *v = json_object_get(stages, stage);
    *has = json_is_number(v);
    return !json_is_object(stages) ? NAN : *has ? json_number_value(v) : 0;
}

/* One stage's change across [begin, split) and [split, end) of a series'
 * runs (parsed is each run's stages JSON, values scratch of its runs). */
static void stage_change(json_t *const *parsed, size_t begin, size_t split, size_t end,
                         const char *stage, double *values, struct pb_history_stage_change *c)
{
    memset(c, 0, sizeof(*c));
    pb_strlcpy(c->stage, stage, sizeof(c->stage));
    size_t k = 0, had_before = 0, had_after = 0;
    c->first_run = SIZE_MAX;
    for (size_t i = begin; i < end; i++) {
        bool has;
        double v = run_stage_ns(parsed[i], stage, &has);
        if (has && c->first_run == SIZE_MAX)
            c->first_run = i;
        if (i == split) {
            c->before_ns = k ? pb_median(values, k) : NAN;
            k = 0;
        }
        if (!isnan(v))
            values[k++] = v;
        had_before += has && i < split;
        had_after += has && i >= split;
    }
    c->after_ns = k ? pb_median(values, k) : NAN;
    c->absent_before = had_before == 0;
    c->absent_after = had_after == 0;
}

/* The stages that explain s's change at split (against the runs from
 * begin): each stage any of the runs had, by its change, largest first,
 * those moving the stages' sum before by a fifth of the threshold or
 * more (as compare counts a stage's change). */
static void explain_stages(struct pb_history_series *s, double threshold_pct, size_t begin,
                           size_t split)
{
    s->explained_count = 0;
    s->explained_from = split;
    json_t **parsed = calloc(s->run_count + 1, sizeof(json_t *));
    double *values = malloc((s->run_count + 1) * sizeof(double));
    json_t *names = json_object();
    for (size_t i = begin; parsed && i < s->run_count; i++) {
        parsed[i] = s->runs[i].stages ? json_loads(s->runs[i].stages, 0, NULL) : NULL;
        json_object_update(names, json_is_object(parsed[i]) ? parsed[i] : NULL);
    }
    struct pb_history_stage_change all[64];
    int n = 0;
    double total_before = 0, total_change = 0;
    const char *stage;
    json_t *unused;
    json_object_foreach(names, stage, unused)
    {
        if (!parsed || !values || n >= 64)
            break;
        stage_change(parsed, begin, split, s->run_count, stage, values, &all[n]);
        double before = isnan(all[n].before_ns) ? 0 : all[n].before_ns;
        double after = isnan(all[n].after_ns) ? 0 : all[n].after_ns;
        total_before += before;
        total_change += after - before;
        n++;
    }
    for (int i = 0; i < n; i++) {
        double moved = (isnan(all[i].after_ns) ? 0 : all[i].after_ns) -
                       (isnan(all[i].before_ns) ? 0 : all[i].before_ns);
        all[i].share_pct = total_change != 0 ? 100 * moved / total_change : NAN;
        if (fabs(moved) < threshold_pct / 5 / 100 * total_before || moved * total_change <= 0 ||
            s->explained_count >= PB_HISTORY_EXPLAINED)
            continue;
        int at = s->explained_count++;
        while (at > 0 && s->explained[at - 1].share_pct < all[i].share_pct) {
            s->explained[at] = s->explained[at - 1];
            at--;
        }
        s->explained[at] = all[i];
    }
    for (size_t i = begin; parsed && i < s->run_count; i++)
        json_decref(parsed[i]);
    json_decref(names);
    free(parsed);
    free(values);
}

/* The engine of s from its newest run's measured settings (loader.engine,
 * "pbench" when the setting is absent); "" for rows without them. */
static void series_engine(struct pb_history_series *s)
{
    json_t *measured = s->measured ? json_loads(s->measured, 0, NULL) : NULL;
    const char *engine = json_string_value(
        json_object_get(json_object_get(measured, "loader"), "engine"));
    pb_strlcpy(s->engine, engine ? engine : measured ? "pbench" : "", sizeof(s->engine));
    json_decref(measured);
}

/* Whether s's newest run is suspect (struct pb_history_series), against
 * the runs from its step (or all); values holds the runs' values. */
static void find_suspect(const struct pb_history *h, struct pb_history_series *s,
                         const double *values)
{
    size_t from = s->step >= 0 ? (size_t)s->step : 0, n = s->run_count;
    pb_step_suspect(values + from, n - from, h->threshold_pct, h->absolute, &s->newest);
    bool worse = h->higher_is_better ? s->newest.change < 0 : s->newest.change > 0;
    const struct pb_history_run *last = &s->runs[n - 1];
    bool busy =
        h->wall_clock && pb_machine_disturbed(last->other_cpu, last->steal, last->throttled);
    s->suspect = s->newest.suspect && worse && !busy && !isnan(values[n - 1]);
}

/* Finds the series' step change (pb_history_step) and whether it makes
 * the metric worse; counts it in h, unless the machine moved it: a slower
 * reference workload, or (a wall-clock metric) other processes. Then
 * whether the newest run is suspect, and the stages that explain either. */
static void series_finish(struct pb_history *h, struct pb_history_series *s)
{
    double *values = malloc((s->run_count ? s->run_count : 1) * sizeof(double));
    s->step = -1;
    s->step_pct = 0;
    s->step_worse = false;
    s->machine_shift_pct = s->other_before = s->other_after = NAN;
    s->machine_step = s->disturbed = false;
    if (!values)
        return;
    for (size_t i = 0; i < s->run_count; i++)
        values[i] = s->runs[i].value;
    while (s->first_with_value < s->run_count && isnan(values[s->first_with_value]))
        s->first_with_value++;
    s->step = pb_step_find(values, s->run_count, h->threshold_pct, h->absolute, &s->step_pct);
    if (s->step >= 0) {
        s->step_worse = h->higher_is_better ? s->step_pct < 0 : s->step_pct > 0;
        s->machine_shift_pct = machine_shift(s, values);
        const struct pb_metric *row = pb_metric_find(h->metric);
        s->machine_step = s->step_worse && !(row && row->machine) &&
                          s->machine_shift_pct >= PB_MACHINE_CHANGE_PCT;
        s->disturbed = h->wall_clock && step_disturbed(s, values);
        h->disturbed += s->disturbed;
        h->regressions += s->step_worse && !s->machine_step && !s->disturbed;
        h->improvements += !s->step_worse && !s->disturbed;
    }
    find_suspect(h, s, values);
    h->suspects += s->suspect;
    series_engine(s);
    size_t from = s->step >= 0 ? (size_t)s->step : 0;
    if (s->suspect)
        explain_stages(s, h->threshold_pct, from, s->run_count - 1);
    else if (s->step >= 0)
        explain_stages(s, h->threshold_pct, 0, (size_t)s->step);
    free(values);
}

/* The median of the runs' values before run i (run 0's own value at 0). */
double pb_history_median_before(const struct pb_history_series *s, size_t i)
{
    if (i == 0)
        return s->run_count ? s->runs[0].value : NAN;
    double *values = malloc(i * sizeof(double));
    if (!values)
        return NAN;
    size_t n = 0;
    for (size_t k = 0; k < i; k++)
        if (!isnan(s->runs[k].value))
            values[n++] = s->runs[k].value;
    double median = n ? pb_median(values, n) : NAN;
    free(values);
    return median;
}

/* The rows show reads: per series (what was measured, at one point) its
 * newest PB_HISTORY_MAX_RUNS runs in time order, with the series' size.
 * metric is a name from the metric table, never user text in SQL. Rows
 * from before fingerprints form a series per config and machine. Series
 * are listed by config name, then fingerprint. */
static void show_query(char *sql, size_t sqllen, const char *metric, bool one_config)
{
    /* A stage's CPU time per sample: read from the JSON column by a bound
     * path (:stage), never the user's text in the SQL. */
    bool stage = strncmp(metric, PB_STAGE_CPU_PREFIX, strlen(PB_STAGE_CPU_PREFIX)) == 0;
    snprintf(sql, sqllen,
             "WITH keyed AS (SELECT id, config, machine, point, created, revision, %s AS value,"
             " noise_pct, measured, machine_ref_ns AS machine_ref,"
             " other_cpu_pct, steal_pct, throttled_pct, stage_cpu_ns,"
             " COALESCE(fingerprint, 'none:' || config || char(31) || machine) AS series"
             " FROM runs %s),"
             " ranked AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY series, point"
             " ORDER BY created DESC, id DESC) AS newer,"
             " COUNT(*) OVER (PARTITION BY series, point) AS total,"
             " MIN(config) OVER (PARTITION BY series) AS first_config FROM keyed)"
             " SELECT config, machine, point, created, revision, value, series, total,"
             " noise_pct, measured, machine_ref, other_cpu_pct, steal_pct, throttled_pct,"
             " stage_cpu_ns FROM ranked WHERE newer <= %d"
             " ORDER BY first_config, series, point, created, id",
             stage ? "json_extract(stage_cpu_ns, :stage)" : metric,
             one_config ? "WHERE config = :config" : "", PB_HISTORY_MAX_RUNS);
}

static const char *column_text(sqlite3_stmt *st, int column)
{
    const char *text = (const char *)sqlite3_column_text(st, column);
    return text ? text : "";
}

/* A REAL column, NaN where it is NULL (a row from before it was kept). */
static double column_number(sqlite3_stmt *st, int column)
{
    return sqlite3_column_type(st, column) == SQLITE_NULL ? NAN : sqlite3_column_double(st, column);
}

/* Starts a series at the current row of st, appended to h; NULL when out
 * of memory. */
static struct pb_history_series *series_start(struct pb_history *h, sqlite3_stmt *st)
{
    struct pb_history_series *grown =
        realloc(h->series, (h->series_count + 1) * sizeof(*h->series));
    if (!grown)
        return NULL;
    h->series = grown;
    struct pb_history_series *s = &h->series[h->series_count++];
    memset(s, 0, sizeof(*s));
    const char *id = column_text(st, 6);
    pb_strlcpy(s->config, column_text(st, 0), sizeof(s->config));
    pb_strlcpy(s->machine, column_text(st, 1), sizeof(s->machine));
    pb_strlcpy(s->point, column_text(st, 2), sizeof(s->point));
    pb_strlcpy(s->id, id, sizeof(s->id));
    if (strncmp(id, "none:", 5) != 0)
        pb_strlcpy(s->fingerprint, id, sizeof(s->fingerprint));
    s->total = sqlite3_column_int64(st, 7);
    return s;
}

/* Appends the current row of st to series s (its newest run's measured
 * settings become the series'). PB_OK, or PB_ERR out of memory. */
static int series_add(struct pb_history_series *s, sqlite3_stmt *st)
{
    struct pb_history_run *grown = realloc(s->runs, (s->run_count + 1) * sizeof(*s->runs));
    if (!grown)
        return PB_ERR;
    s->runs = grown;
    struct pb_history_run *run = &s->runs[s->run_count++];
    pb_strlcpy(run->created, column_text(st, 3), sizeof(run->created));
    pb_strlcpy(run->revision, column_text(st, 4), sizeof(run->revision));
    run->value = column_number(st, 5);
    run->noise_pct = column_number(st, 8);
    run->machine = column_number(st, 10);
    run->other_cpu = column_number(st, 11);
    run->steal = column_number(st, 12);
    run->throttled = column_number(st, 13);
    run->stages = sqlite3_column_type(st, 14) == SQLITE_NULL ? NULL : strdup(column_text(st, 14));
    if (sqlite3_column_type(st, 9) != SQLITE_NULL) {
        free(s->measured);
        s->measured = strdup(column_text(st, 9));
    }
    return PB_OK;
}

/* Reads the rows of the prepared query st into h. Returns SQLITE_DONE, an
 * SQLite error code, or SQLITE_NOMEM. */
static int read_series(struct pb_history *h, sqlite3_stmt *st)
{
    struct pb_history_series *s = NULL;
    int step_rc;
    while ((step_rc = sqlite3_step(st)) == SQLITE_ROW) {
        bool same = s && strcmp(column_text(st, 6), s->id) == 0 &&
                    strcmp(column_text(st, 2), s->point) == 0;
        if (!same && s)
            series_finish(h, s);
        if (!same && !(s = series_start(h, st)))
            return SQLITE_NOMEM;
        if (s->run_count < PB_HISTORY_MAX_RUNS && series_add(s, st) != PB_OK)
            return SQLITE_NOMEM;
    }
    if (s)
        series_finish(h, s);
    return step_rc;
}

/* One change that broke a series (pb_config_diff's callback). */
static void note_break(void *user, const char *text)
{
    struct pb_history_series *s = user;
    if (s->break_count < PB_HISTORY_BREAKS)
        pb_strlcpy(s->breaks[s->break_count++], text, sizeof(s->breaks[0]));
    else
        s->break_more++;
}

/* Whether p is the series s broke from: the same config, machine and
 * point under another fingerprint, every run of it before s's first. */
static bool broke_from(const struct pb_history_series *s, const struct pb_history_series *p)
{
    return p != s && p->fingerprint[0] && p->measured && p->run_count > 0 &&
           strcmp(p->id, s->id) != 0 && strcmp(p->config, s->config) == 0 &&
           strcmp(p->machine, s->machine) == 0 && strcmp(p->point, s->point) == 0 &&
           strcmp(p->runs[p->run_count - 1].created, s->runs[0].created) <= 0;
}

/* Each series that follows another of the same config, machine and point
 * measured differently: a break, with what changed between the newest
 * such series and it. */
static void find_breaks(struct pb_history *h)
{
    for (size_t i = 0; i < h->series_count; i++) {
        struct pb_history_series *s = &h->series[i];
        const struct pb_history_series *before = NULL;
        for (size_t j = 0; s->fingerprint[0] && s->measured && s->run_count && j < h->series_count;
             j++)
            if (broke_from(s, &h->series[j]) &&
                (!before || strcmp(h->series[j].runs[h->series[j].run_count - 1].created,
                                   before->runs[before->run_count - 1].created) > 0))
                before = &h->series[j];
        if (!before)
            continue;
        json_t *a = json_loads(before->measured, 0, NULL), *b = json_loads(s->measured, 0, NULL);
        pb_config_diff("", a, b, note_break, s);
        json_decref(a);
        json_decref(b);
        pb_strlcpy(s->break_from, before->fingerprint, sizeof(s->break_from));
        pb_strlcpy(s->break_revision, before->runs[before->run_count - 1].revision,
                   sizeof(s->break_revision));
    }
}

/* Whether any run read has a value: a stage's metric names a stage some
 * run ran. */
static bool stage_known(const struct pb_history *h)
{
    for (size_t i = 0; i < h->series_count; i++)
        if (h->series[i].first_with_value < h->series[i].run_count)
            return true;
    return false;
}

/* "--metric cpu_ns_per_sample.TYPO: no run ... has a stage 'TYPO'", with
 * the stages the runs read have and the metrics. */
static void stage_names_message(const struct pb_history *h, const char *stage, char *msg,
                                size_t msglen)
{
    json_t *names = json_object();
    for (size_t i = 0; i < h->series_count; i++)
        for (size_t r = 0; r < h->series[i].run_count; r++) {
            json_t *stages = h->series[i].runs[r].stages
                                 ? json_loads(h->series[i].runs[r].stages, 0, NULL)
                                 : NULL;
            json_object_update(names, json_is_object(stages) ? stages : NULL);
            json_decref(stages);
        }
    size_t used = (size_t)snprintf(msg, msglen,
                                   "--metric " PB_STAGE_CPU_PREFIX "%s: no run of the history has "
                                   "a stage '%s', so it would show nothing; the stages its runs "
                                   "have:",
                                   stage, stage);
    const char *name;
    json_t *unused;
    int k = 0;
    json_object_foreach(names, name, unused)
        if (used < msglen)
            used += (size_t)snprintf(msg + used, msglen - used, "%s %s", k++ ? "," : "", name);
    char metrics[256];
    pb_history_metric_names(metrics, sizeof(metrics), ", ");
    if (used < msglen)
        snprintf(msg + used, msglen - used, "%s (as " PB_STAGE_CPU_PREFIX "STAGE); the metrics: %s",
                 k ? "" : " none", metrics);
    json_decref(names);
}

int pb_history_load(const char *db_path, const char *config_name, const char *metric,
                    double threshold_pct, struct pb_history *h, char *msg, size_t msglen)
{
    memset(h, 0, sizeof(*h));
    /* A stage's row reads as CPU time per sample does. */
    const char *stage = strncmp(metric, PB_STAGE_CPU_PREFIX, strlen(PB_STAGE_CPU_PREFIX)) == 0
                            ? metric + strlen(PB_STAGE_CPU_PREFIX)
                            : NULL;
    const struct pb_metric *known = pb_metric_find(stage && *stage ? "cpu_ns_per_sample" : metric);
    if (!known || !known->of_point || strlen(metric) >= sizeof(h->metric)) {
        char names[256];
        pb_history_metric_names(names, sizeof(names), ", ");
        snprintf(msg, msglen,
                 "--metric must be one of: %s, or " PB_STAGE_CPU_PREFIX "STAGE; got '%s'", names,
                 metric);
        return PB_ERR_CONFIG;
    }
    pb_strlcpy(h->metric, metric, sizeof(h->metric));
    pb_strlcpy(h->unit, known->unit ? known->unit : "", sizeof(h->unit));
    h->higher_is_better = known->higher_is_better;
    h->absolute = known->absolute;
    h->wall_clock = known->wall_clock;
    h->threshold_pct = threshold_pct;
    sqlite3 *db;
    if (open_db(db_path, false, &db, msg, msglen) != PB_OK)
        return PB_ERR;
    char sql[1024];
    show_query(sql, sizeof(sql), metric, config_name != NULL);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(msg, msglen, "%s: %s", db_path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return PB_ERR;
    }
    if (config_name)
        sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":config"), config_name, -1,
                          SQLITE_TRANSIENT);
    if (stage) {
        char path[200];
        snprintf(path, sizeof(path), "$.\"%s\"", stage);
        sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":stage"), path, -1,
                          SQLITE_TRANSIENT);
    }
    int step_rc = read_series(h, st);
    /* A read that fails (a corrupt file) is an error, not the end of the
     * runs: what was read is incomplete. */
    if (step_rc != SQLITE_DONE)
        snprintf(msg, msglen, "%s: cannot read the history: %s", db_path,
                 step_rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (step_rc == SQLITE_DONE)
        find_breaks(h);
    if (step_rc == SQLITE_DONE && stage && h->series_count > 0 && !stage_known(h)) {
        stage_names_message(h, stage, msg, msglen);
        pb_history_free(h);
        return PB_ERR_CONFIG;
    }
    if (step_rc == SQLITE_DONE && h->series_count == 0) {
        snprintf(msg, msglen, "%s: no runs%s%s", db_path, config_name ? " of config " : "",
                 config_name ? config_name : "");
        step_rc = SQLITE_ERROR;
    }
    if (step_rc != SQLITE_DONE) {
        pb_history_free(h);
        return PB_ERR;
    }
    return PB_OK;
}

int pb_history_run_spread(const char *db_path, const struct pb_result *result, size_t point,
                          double spread[PB_METRIC_COUNT], int *runs)
{
    for (int m = 0; m < PB_METRIC_COUNT; m++)
        spread[m] = NAN;
    *runs = 0;
    if (!db_path || point >= result->point_count || access(db_path, R_OK) != 0)
        return PB_OK;
    char machine[512], fingerprint[32], *measured = NULL;
    machine_text(result, machine, sizeof(machine));
    config_fingerprint(result, machine, fingerprint, sizeof(fingerprint), &measured);
    free(measured);
    const json_t *axes = result->points[point].axes;
    char *axes_text = axes ? json_dumps(axes, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    sqlite3 *db;
    char msg[PB_MSG_MAX];
    int rc = open_db(db_path, false, &db, msg, sizeof(msg));
    for (int m = 0; rc == PB_OK && m < PB_METRIC_COUNT; m++) {
        if (!pb_metrics[m].of_point)
            continue;
        char sql[512];
        snprintf(sql, sizeof(sql),
                 "SELECT %s FROM (SELECT %s, created, id FROM runs WHERE fingerprint = ? AND "
                 "point = ? ORDER BY created DESC, id DESC LIMIT %d) ORDER BY created, id",
                 pb_metrics[m].name, pb_metrics[m].name, PB_SPREAD_RUNS);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
            break;
        sqlite3_bind_text(st, 1, fingerprint, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, axes_text ? axes_text : "{}", -1, SQLITE_TRANSIENT);
        double values[PB_SPREAD_RUNS];
        size_t n = 0;
        while (n < PB_SPREAD_RUNS && sqlite3_step(st) == SQLITE_ROW)
            values[n++] = column_number(st, 0);
        sqlite3_finalize(st);
        spread[m] = pb_run_spread(values, n, pb_metrics[m].absolute);
        *runs = (int)n > *runs ? (int)n : *runs;
    }
    if (rc == PB_OK)
        sqlite3_close(db);
    free(axes_text);
    return PB_OK;
}

void pb_history_revision(char *buf, size_t buflen)
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

/* Whether result's figures are whole: false, with the reason in why, for a
 * run that was interrupted, a point that failed, a repeat cut short or a
 * point without a complete repeat. */
static bool result_is_whole(const struct pb_result *result, char *why, size_t whylen)
{
    if (result->interrupted) {
        snprintf(why, whylen, "the run was interrupted");
        return false;
    }
    for (size_t i = 0; i < result->point_count; i++) {
        const struct pb_point_result *p = &result->points[i];
        size_t complete = 0;
        for (size_t r = 0; r < p->repeat_count; r++)
            complete += !p->repeats[r].interrupted;
        if (p->error[0])
            snprintf(why, whylen, "point %zu failed (%s)", i, p->error);
        else if (complete < p->repeat_count)
            snprintf(why, whylen, "a repeat of point %zu was cut short", i);
        else if (complete == 0)
            snprintf(why, whylen, "point %zu has no complete repeat", i);
        else
            continue;
        return false;
    }
    return true;
}

int pb_history_add_file(const char *db_path, const char *path, const char *revision, bool force,
                        char *summary, size_t summarylen, char *msg, size_t msglen)
{
    struct pb_result result;
    int rc = pb_result_read(path, &result, msg, msglen);
    char why[400];
    if (rc == PB_OK && !force && !result_is_whole(&result, why, sizeof(why))) {
        snprintf(msg, msglen,
                 "%s not added: %s, so its figures are partial and would read as a step in the "
                 "history; measure again, or add it anyway with --force",
                 path, why);
        rc = PB_ERR;
    }
    if (rc == PB_OK) {
        char rev[64];
        if (revision)
            pb_strlcpy(rev, revision, sizeof(rev));
        else
            pb_history_revision(rev, sizeof(rev));
        size_t added, measured = 0;
        for (size_t i = 0; i < result.point_count; i++)
            measured += result.points[i].repeat_count > 0;
        rc = add_points(db_path, &result, rev, path, &added, msg, msglen);
        if (rc == PB_OK && added == 0 && measured > 0)
            snprintf(summary, summarylen,
                     "%s (%s, revision %s) is already in the history %s; nothing added",
                     result.name, result.created, rev[0] ? rev : "unknown", db_path);
        else if (rc == PB_OK)
            snprintf(summary, summarylen, "added %zu point(s) of %s (%s, revision %s) to %s",
                     added, result.name, result.created, rev[0] ? rev : "unknown", db_path);
    }
    pb_result_free(&result);
    return rc == PB_OK ? PB_OK : PB_ERR;
}
