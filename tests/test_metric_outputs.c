/* Every metric appears in every output that lists metrics: each row of
 * pb_metrics[] (bench/result/metrics.h) in every form of `pbench compare`
 * (table, markdown, JSON, HTML), and each one history keeps (a row with a
 * point value) in every output of `pbench history show`: the table's
 * text, JSON, CSV, TSV and HTML name it, and the Prometheus text gives it
 * a family of its own (bench/report/live.c's history_families) with a
 * sample. The test walks both tables, the metrics' and the formats', so a
 * metric added to the one and forgotten by an output fails here
 * (docs/architecture.md, "Where to add"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/analyze/compare.h"
#include "bench/analyze/history.h"
#include "bench/base/pb.h"
#include "bench/report/format.h"
#include "bench/report/history_report.h"
#include "bench/result/metrics.h"

#define NIGHTS 3
#define REPEATS 5
#define BATCHES 4

static char dir[] = "/tmp/pbench-metric-outputs-XXXXXX";
static char db[256];

/* A point every kept metric has a value for: throughput, stall, the step's
 * share, the process's CPU, assembly, memory and the machine's reference
 * workload in each repeat. */
static void fill_point(struct pb_point_result *p, struct pb_repeat_result *repeats, int night)
{
    memset(repeats, 0, 2 * sizeof(*repeats));
    for (int r = 0; r < 2; r++) {
        repeats[r].samples_per_s = 1000 + night;
        repeats[r].ref_cpu_ns = 5e6 + night;
    }
    p->repeats = repeats;
    p->repeat_count = 2;
    p->axes = json_object();
    p->samples_per_s = 1000 + night;
    p->samples_per_s_noise_pct = 2;
    p->stall_pct = 12.5;
    p->accel_util_pct = 80;
    p->cpu_util_pct = 150;
    p->assembly_p99_ns = 2500000;
    p->rss_peak_bytes = 1 << 28;
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(db, sizeof(db), "%s/h.db", dir);
    for (int night = 0; night < NIGHTS; night++) {
        struct pb_result r;
        memset(&r, 0, sizeof(r));
        snprintf(r.name, sizeof(r.name), "ci");
        snprintf(r.created, sizeof(r.created), "2026-11-%02dT03:00:00Z", night + 1);
        snprintf(r.machine.cpu_model, sizeof(r.machine.cpu_model), "Test CPU");
        r.config = json_pack("{s{s i}}", "loader", "batch_size", 32);
        struct pb_point_result p;
        struct pb_repeat_result repeats[2];
        memset(&p, 0, sizeof(p));
        fill_point(&p, repeats, night);
        r.points = &p;
        r.point_count = 1;
        char rev[16], msg[PB_MSG_MAX];
        snprintf(rev, sizeof(rev), "r%d", night);
        int rc = pb_history_add(db, &r, rev, "test", msg, sizeof(msg));
        json_decref(p.axes);
        json_decref(r.config);
        if (rc != PB_OK)
            return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* history rendered in format, as text the caller frees (through a file,
 * read back whole). */
static char *render(const struct pb_history *h, enum pb_format format)
{
    char msg[PB_MSG_MAX];
    FILE *out = tmpfile();
    assert_non_null(out);
    assert_int_equal(pb_history_report(out, NULL, h, (int)format, msg, sizeof(msg)), PB_OK);
    long size = ftell(out);
    assert_true(size >= 0);
    char *text = calloc((size_t)size + 1, 1);
    assert_non_null(text);
    rewind(out);
    assert_int_equal(fread(text, 1, (size_t)size, out), (size_t)size);
    fclose(out);
    return text;
}

/* Whether the Prometheus text has a family of the metric's own, beside the
 * series' bookkeeping (pbench_history_*), holding a sample. */
static bool has_own_family(const char *text)
{
    for (const char *p = strstr(text, "# TYPE "); p; p = strstr(p + 1, "# TYPE ")) {
        const char *name = p + strlen("# TYPE ");
        size_t len = strcspn(name, " ");
        if (strncmp(name, "pbench_history_", strlen("pbench_history_")) == 0)
            continue;
        const char *line = strchr(name, '\n');
        return line && strncmp(line + 1, name, len) == 0;
    }
    return false;
}

/* What output says of metric: NULL when it names it, else the complaint. */
static const char *missing_from(const char *metric, enum pb_format format, const char *text)
{
    if (format == PB_FORMAT_PROMETHEUS)
        return has_own_family(text) ? NULL
                                    : "no Prometheus family (bench/report/live.c's "
                                      "history_families)";
    return strstr(text, metric) ? NULL : "the metric is not named";
}

static void test_every_kept_metric_in_every_history_output(void **state)
{
    (void)state;
    int kept = 0, failures = 0;
    for (int m = 0; m < PB_METRIC_COUNT; m++) {
        const struct pb_metric *row = &pb_metrics[m];
        if (!row->of_point)
            continue; /* not kept by history: compare's alone */
        kept++;
        struct pb_history h;
        char msg[PB_MSG_MAX];
        assert_int_equal(pb_history_load(db, NULL, row->name, 5, &h, msg, sizeof(msg)), PB_OK);
        assert_int_equal(h.series_count, 1);
        /* The fixture's point must give the metric a value, or the outputs
         * have nothing to show: fill_point is where a new one's goes. */
        if (h.series[0].run_count != NIGHTS || !isfinite(h.series[0].runs[0].value)) {
            print_error("%s: the fixture's point has no value of it (fill_point)\n", row->name);
            failures++;
        }
        for (int f = 0; f < PB_FORMAT_COUNT; f++) {
            if (!pb_formats[f].history)
                continue;
            char *text = render(&h, (enum pb_format)f);
            const char *why = missing_from(row->name, (enum pb_format)f, text);
            if (why) {
                print_error("metric %s, format %s: %s\n", row->name, pb_formats[f].name, why);
                failures++;
            }
            free(text);
        }
        pb_history_free(&h);
    }
    assert_true(kept > 0);
    assert_int_equal(failures, 0);
}

/* A result of one point whose repeats give every metric a value (the
 * assembly quantiles from their batches). */
static void make_side(struct pb_result *r)
{
    memset(r, 0, sizeof(*r));
    r->schema_version = PB_SCHEMA_VERSION;
    snprintf(r->name, sizeof(r->name), "ci");
    r->config = json_pack("{s s s {s i}}", "name", "ci", "run", "repeats", REPEATS);
    r->point_count = 1;
    r->points = calloc(1, sizeof(*r->points));
    assert_non_null(r->points);
    struct pb_point_result *p = &r->points[0];
    p->axes = json_object();
    p->repeat_count = REPEATS;
    p->repeats = calloc(REPEATS, sizeof(struct pb_repeat_result));
    assert_non_null(p->repeats);
    for (size_t i = 0; i < REPEATS; i++) {
        struct pb_repeat_result *rep = &p->repeats[i];
        rep->wall_s = 2;
        rep->samples_per_s = 1000 + (double)i;
        rep->stall_pct = 10;
        rep->accel_util_pct = 80;
        rep->cpu_util_pct = 150;
        rep->rss_peak_bytes = 100u << 20;
        rep->ref_cpu_ns = 5e6;
        rep->batch_count = BATCHES;
        rep->batch_records = calloc(BATCHES, sizeof(struct pb_batch_record));
        assert_non_null(rep->batch_records);
        for (size_t b = 0; b < BATCHES; b++)
            rep->batch_records[b].assembly_ns = 1000000 * (b + 1);
    }
    pb_point_summarize(p);
}

static void test_every_metric_in_every_comparison_output(void **state)
{
    (void)state;
    struct pb_result base, next;
    make_side(&base);
    make_side(&next);
    struct pb_comparison cmp;
    assert_int_equal(pb_compare(&base, &next, 5, &cmp), PB_OK);
    int failures = 0;
    for (int f = 0; f < PB_FORMAT_COUNT; f++) {
        if (!pb_formats[f].comparison)
            continue;
        char *text = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&text, &size);
        assert_non_null(out);
        pb_formats[f].comparison(out, &cmp, "base.json", "new.json");
        fclose(out);
        for (int m = 0; m < PB_METRIC_COUNT; m++)
            if (!strstr(text, pb_metrics[m].name)) {
                print_error("metric %s, compare --format %s: the metric is not named\n",
                            pb_metrics[m].name, pb_formats[f].name);
                failures++;
            }
        free(text);
    }
    pb_comparison_free(&cmp);
    pb_result_free(&base);
    pb_result_free(&next);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kept_metric_in_every_history_output),
        cmocka_unit_test(test_every_metric_in_every_comparison_output),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
