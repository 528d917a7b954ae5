/* The straggler of a wrapped job's ranks (bench/analyze/straggler.h): the
 * rank whose loop waits most on its loader, against the rank that waits
 * least; named with the figures of its own that differ, and whether it is
 * the slowest in every window of the measured time. */
#include "bench/analyze/straggler.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/base/pb.h"

/* A rank's stall must reach this, and twice the others' highest, for the
 * rank to hold the job back; below it no rank waits on its loader. */
#define STRAGGLER_STALL_PCT 5.0
/* The others' step at least this times the slow rank's: they wait for it
 * inside their step; and their loaders deliver at least this times its
 * own. */
#define WAITING_STEP_RATIO 1.2
/* The slow rank is "always" the slowest when it is in this share of the
 * windows. */
#define SAME_RANK_SHARE 0.8

static double num(const json_t *row, const char *key)
{
    const json_t *v = json_object_get(row, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static long long rank_of(const json_t *row)
{
    return (long long)json_integer_value(json_object_get(row, "rank"));
}

/* What a rank's loader delivers: what its workers could build (each one's
 * samples over its time building them), else the samples the loop took. */
static double loader_rate(const json_t *row)
{
    double rate = num(row, "loader_samples_per_s");
    return rate > 0 ? rate : num(row, "samples_per_s");
}

/* "rank 1", or "rank 1 on HOST" where the row names its host. */
static void rank_name(const json_t *row, char *buf, size_t size)
{
    const char *host = json_string_value(json_object_get(row, "host"));
    if (host && host[0])
        snprintf(buf, size, "rank %lld on %s", rank_of(row), host);
    else
        snprintf(buf, size, "rank %lld", rank_of(row));
}

static const json_t *stage_named(const json_t *row, const char *name)
{
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(row, "stages"), i, s)
    {
        const char *n = json_string_value(json_object_get(s, "name"));
        if (n && strcmp(n, name) == 0)
            return s;
    }
    return NULL;
}

/* Whether two rows time the same stage columns (the same transforms). */
static bool same_stages(const json_t *a, const json_t *b)
{
    const json_t *sa = json_object_get(a, "stages"), *sb = json_object_get(b, "stages");
    if (json_array_size(sa) == 0 || json_array_size(sa) != json_array_size(sb))
        return false;
    for (size_t i = 0; i < json_array_size(sa); i++) {
        const char *n = json_string_value(json_object_get(json_array_get(sa, i), "name"));
        if (!n || !stage_named(b, n))
            return false;
    }
    return true;
}

/* The slow rank's stage column whose wall time per sample exceeds the
 * fast rank's by the most, else its top stage (by CPU). */
static const char *grown_stage(const json_t *slow, const json_t *fast)
{
    const char *best = json_string_value(json_object_get(slow, "top_stage"));
    double most = 0;
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(slow, "stages"), i, s)
    {
        const char *name = json_string_value(json_object_get(s, "name"));
        const json_t *theirs = name ? stage_named(fast, name) : NULL;
        double grown = num(s, "wall_ns_per_sample") - num(theirs, "wall_ns_per_sample");
        if (theirs && grown > most) {
            most = grown;
            best = name;
        }
    }
    return best;
}

/* "; rank 1's getitem takes 2.4x rank 0's time per sample for the same
 * transforms (its CPU 1.0x: ...)": the slow rank's stage that grew most
 * against the same column of the fast rank, and what its CPU says of the
 * difference. */
static void stage_cause(const json_t *slow, const json_t *fast, char *buf, size_t size)
{
    buf[0] = '\0';
    const char *top = grown_stage(slow, fast);
    const json_t *mine = top ? stage_named(slow, top) : NULL;
    const json_t *theirs = top ? stage_named(fast, top) : NULL;
    char me[96], other[32];
    rank_name(slow, me, sizeof me);
    snprintf(other, sizeof other, "rank %lld", rank_of(fast));
    if (!mine || !theirs)
        return;
    double wall = num(mine, "wall_ns_per_sample") / num(theirs, "wall_ns_per_sample");
    double cpu = num(mine, "cpu_ns_per_sample") / num(theirs, "cpu_ns_per_sample");
    if (!isfinite(wall) || !isfinite(cpu) || !(wall > 0))
        return;
    const char *why = wall < WAITING_STEP_RATIO
                          ? "the same work per sample: its loader is short of workers or of CPU"
                      : cpu >= 0.8 * wall
                          ? "it computes more per sample, or on a slower or busier CPU"
                          : "the rest is waiting: on storage, the page cache or a lock";
    snprintf(buf, size, "; %s's %s takes %.1fx %s's time per sample%s (its CPU %.1fx: %s)", me,
             top, wall, other, same_stages(slow, fast) ? " for the same transforms" : "", cpu,
             why);
}

/* The rank whose loop waits most (ties: the slower loader), and the one
 * that waits least. */
static void slow_and_fast(const json_t *rows, const json_t **slow, const json_t **fast)
{
    size_t i;
    const json_t *r;
    *slow = *fast = NULL;
    json_array_foreach(rows, i, r)
    {
        double stall = num(r, "stall_pct");
        if (!*slow || stall > num(*slow, "stall_pct") ||
            (stall == num(*slow, "stall_pct") && loader_rate(r) < loader_rate(*slow)))
            *slow = r;
    }
    json_array_foreach(rows, i, r)
    {
        if (r != *slow && (!*fast || num(r, "stall_pct") < num(*fast, "stall_pct")))
            *fast = r;
    }
}

/* The others' median loader rate and highest stall. */
static void others_figures(const json_t *rows, const json_t *slow, double *rate, double *stall)
{
    double rates[256];
    size_t n = 0, i;
    const json_t *r;
    *stall = 0;
    json_array_foreach(rows, i, r)
    {
        if (r == slow)
            continue;
        if (n < PB_ARRAY_LEN(rates))
            rates[n++] = loader_rate(r);
        *stall = fmax(*stall, num(r, "stall_pct"));
    }
    for (size_t a = 1; a < n; a++) /* a few ranks: insertion sort */
        for (size_t b = a; b > 0 && rates[b - 1] > rates[b]; b--) {
            double t = rates[b];
            rates[b] = rates[b - 1];
            rates[b - 1] = t;
        }
    *rate = n ? (n % 2 ? rates[n / 2] : (rates[n / 2 - 1] + rates[n / 2]) / 2) : NAN;
}

/* The rank slowest in the most windows other than skip, with its count. */
static const json_t *other_slowest(const json_t *rows, const json_t *skip, int *count)
{
    size_t i;
    const json_t *r, *best = NULL;
    *count = 0;
    json_array_foreach(rows, i, r)
    {
        int k = (int)json_integer_value(json_object_get(r, "slowest_windows"));
        if (r != skip && k > *count) {
            best = r;
            *count = k;
        }
    }
    return best;
}

/* Every rank waits and the slowest moves: the loader is slow everywhere. */
static void everywhere_sentence(const json_t *rows, const json_t *slow, struct pb_straggler *s)
{
    int second = 0;
    const json_t *next = other_slowest(rows, slow, &second);
    char moves[200] = "";
    if (s->windows >= 2 && next)
        snprintf(moves, sizeof moves,
                 "the slowest rank changes from window to window (rank %lld in %d of %d windows, "
                 "rank %lld in %d) and ",
                 s->rank, s->slowest_windows, s->windows, rank_of(next), second);
    snprintf(s->sentence, sizeof s->sentence,
             "no one rank holds the job back: %sthe ranks' loops wait on their loaders (%.0f%% at "
             "most, rank %lld's): the loader is too slow on every rank, not on one node",
             moves, s->stall_pct, s->rank);
}

/* One rank holds the others back: the sentence that names it and why. */

/* A sentence cut by its buffer ends at its last whole clause. */
static void cut_at_clause(char *text)
{
    char *last = strrchr(text, ';');
    if (last)
        *last = '\0';
}

static void one_sentence(const json_t *slow, const json_t *fast, double others_rate,
                         struct pb_straggler *s)
{
    char waits[300], cause[400], windows[200], fast_name[96];
    rank_name(fast, fast_name, sizeof fast_name);
    if (s->others_wait)
        snprintf(waits, sizeof waits,
                 "; the other ranks wait for it in their step (%s's step %.1fx %s's): the job "
                 "runs at the slowest rank's pace",
                 fast_name, s->step_ratio, s->name);
    else if (isfinite(s->step_ratio))
        snprintf(waits, sizeof waits,
                 "; the other ranks' step is %.1fx its own: they do not wait for it, each rank "
                 "runs at its own pace",
                 s->step_ratio);
    else
        snprintf(waits, sizeof waits, "; the rows time no step to say whether the others wait");
    stage_cause(slow, fast, cause, sizeof cause);
    size_t used = strlen(cause);
    long long mine = json_integer_value(json_object_get(slow, "workers_seen"));
    long long theirs = json_integer_value(json_object_get(fast, "workers_seen"));
    if (mine != theirs && used < sizeof cause)
        snprintf(cause + used, sizeof cause - used, "; it ran %lld worker%s against %lld", mine,
                 mine == 1 ? "" : "s", theirs);
    if (s->windows >= 2)
        snprintf(windows, sizeof windows,
                 "; it is the slowest rank in %d of %d windows: a problem of this rank or its "
                 "node (the figures of its row that differ), not of the loader everywhere",
                 s->slowest_windows, s->windows);
    else
        snprintf(windows, sizeof windows, "; %s, whether it is always this rank is not known",
                 s->windows == 1 ? "over one window" : "without windows in the rows");
    int n = snprintf(s->sentence, sizeof s->sentence,
                     "%s is the straggler: its loader delivers %.0f samples/s against %.0f on the "
                     "other ranks (its loop waits %.0f%% of the time, the others' %.0f%% at "
                     "most)%s%s%s",
                     s->name, loader_rate(slow), others_rate, s->stall_pct, s->others_stall_pct,
                     waits, cause, windows);
    if (n >= (int)sizeof s->sentence) /* cut at a clause's end, not inside a word */
        cut_at_clause(s->sentence);
}

void pb_straggler_of(const json_t *rows, struct pb_straggler *s)
{
    memset(s, 0, sizeof *s);
    if (json_array_size(rows) < 2)
        return;
    const json_t *slow, *fast;
    double others_rate;
    slow_and_fast(rows, &slow, &fast);
    others_figures(rows, slow, &others_rate, &s->others_stall_pct);
    s->rank = rank_of(slow);
    s->fast_rank = rank_of(fast);
    rank_name(slow, s->name, sizeof s->name);
    s->stall_pct = num(slow, "stall_pct");
    s->windows = (int)json_integer_value(json_object_get(slow, "windows"));
    s->slowest_windows = (int)json_integer_value(json_object_get(slow, "slowest_windows"));
    s->step_ratio = num(fast, "step_ms") / num(slow, "step_ms");
    s->others_wait = isfinite(s->step_ratio) && s->step_ratio >= WAITING_STEP_RATIO;
    if (!(s->stall_pct >= STRAGGLER_STALL_PCT))
        return;
    bool moves = s->windows >= 2 && s->slowest_windows < SAME_RANK_SHARE * s->windows;
    /* Ranks whose loaders deliver alike split their wait by their phase
     * (who reaches the all-reduce first), not by a slow loader. */
    double slow_rate = num(slow, "loader_samples_per_s");
    bool slower = !(slow_rate > 0 && others_rate > 0) ||
                  others_rate >= WAITING_STEP_RATIO * slow_rate;
    bool alone = slower && s->stall_pct >= 2 * s->others_stall_pct &&
                 s->stall_pct - s->others_stall_pct >= STRAGGLER_STALL_PCT;
    if (alone && !moves) {
        s->kind = PB_STRAGGLER_ONE;
        one_sentence(slow, fast, others_rate, s);
    } else if (moves || s->others_stall_pct >= STRAGGLER_STALL_PCT) {
        s->kind = PB_STRAGGLER_EVERYWHERE;
        everywhere_sentence(rows, slow, s);
    }
}

const json_t *pb_point_rank_rows(const struct pb_point_result *p)
{
    const json_t *jobs = p ? json_object_get(p->engine, "jobs") : NULL;
    size_t n = json_array_size(jobs);
    return n ? json_object_get(json_array_get(jobs, n - 1), "rank_rows") : NULL;
}

void pb_point_straggler(const struct pb_point_result *p, struct pb_straggler *out)
{
    pb_straggler_of(pb_point_rank_rows(p), out);
}
