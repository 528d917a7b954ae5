/* pbench: the command line. Sub-commands: run, report, list, version, help.
 * Exit codes: 0 success, 1 error, 2 usage or config error, 3 regression
 * (compare, later), 130 interrupted (partial results written). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/config.h"
#include "bench/pb.h"
#include "bench/result.h"
#include "bench/runner.h"
#include "pipelines/dataset.h"

#define PB_EXIT_INTERRUPTED 130

static volatile sig_atomic_t interrupt_requested;

static void on_sigint(int sig)
{
    (void)sig;
    interrupt_requested = 1;
    /* A second Ctrl-C ends the process at once. */
    signal(SIGINT, SIG_DFL);
}

struct command {
    const char *name;
    const char *usage;
    const char *help;
    int (*fn)(int argc, char **argv);
};

static int cmd_run(int argc, char **argv);
static int cmd_report(int argc, char **argv);
static int cmd_list(int argc, char **argv);
static int cmd_gen(int argc, char **argv);
static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const struct command commands[] = {
    {"run", "pbench run CONFIG [-s key.path=value]... [-o results/NAME.json]\n"
            "                  [--format table|json|markdown|csv] [--quiet] [--overhead]",
     "Runs the pipeline CONFIG describes under its loader settings, prints a table and writes\n"
     "the complete result as JSON (default results/NAME-YYYYmmdd-HHMMSS.json).\n\n"
     "  -s, --set key.path=value  override one config value, e.g. -s loader.workers=4,\n"
     "                            -s pipeline.decode.cost_us=500 (repeatable)\n"
     "  -o, --output PATH         where to write the JSON result\n"
     "  -f, --format FORMAT       what to print: table (default), json, markdown, csv\n"
     "  -q, --quiet               no progress lines on stderr\n"
     "      --overhead            also measure the instrumentation's own cost: after each\n"
     "                            repeat, a paired round with stage timing off\n\n"
     "Ctrl-C stops after the current batch and still writes what was measured (exit 130).",
     cmd_run},
    {"gen", "pbench gen --kind files|jpeg|video --out DIR [--count N] [--size WxH[-WxH]]\n"
            "                  [--quality Q] [--progressive-fraction F] [--grayscale-fraction F]\n"
            "                  [--frames F] [--fps R] [--codec NAME] [--gop G] [--size-bytes B]\n"
            "                  [--corrupt-fraction F] [--seed S]",
     "Generates a dataset into DIR (which must not hold files yet): random-byte files, JPEG\n"
     "images or encoded videos of natural-looking, moving content. The options are those of a\n"
     "config's dataset.generate block ('pbench list dataset.generate'), with - for _.",
     cmd_gen},
    {"report", "pbench report RESULT.json [--format table|json|markdown|csv]",
     "Renders a result file written by pbench run again, in any format.", cmd_report},
    {"list", "pbench list [NAME]",
     "Lists every stage, decoder and config section with its options, defaults and ranges,\n"
     "and whether it is available in this build (with the reason when not). NAME shows one.",
     cmd_list},
    {"version", "pbench version",
     "Prints the pbench version, the build options and every library version, and the\n"
     "CUDA runtime and driver when built with CUDA.",
     cmd_version},
    {"help", "pbench help [COMMAND]", "Shows help for a command.", cmd_help},
};

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
    for (size_t i = 0; i < PB_ARRAY_LEN(commands); i++)
        fprintf(out, "  %s\n", commands[i].usage);
    fprintf(out, "\nExit codes: 0 success, 1 error, 2 usage or config error, 130 interrupted.\n"
                 "Run 'pbench help COMMAND' for details.\n");
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "pbench %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s\n", find_command(cmd)->usage);
    return PB_EXIT_USAGE;
}

/* ---- run ---------------------------------------------------------------- */

struct progress {
    bool quiet;
};

static void on_progress(void *user, int repeat, int repeats, const struct pb_repeat_result *r)
{
    const struct progress *p = user;
    if (p->quiet)
        return;
    fprintf(stderr,
            "  repeat %d/%d: %.1f samples/s, stall %.1f%%, %.2f s measured, %llu batches%s%s\n",
            repeat + 1, repeats, r->samples_per_s, r->stall_pct, r->wall_s,
            (unsigned long long)r->batches, r->hit_time_cap ? ", hit run.max_time_s" : "",
            r->interrupted ? ", interrupted" : "");
}

static void default_result_path(const char *name, char *buf, size_t buflen)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    snprintf(buf, buflen, "results/%s-%s.json", name, stamp);
}

static int exit_for(int rc)
{
    switch (rc) {
    case PB_OK: return PB_EXIT_OK;
    case PB_ERR_CONFIG: return PB_EXIT_USAGE;
    case PB_ERR_INTERRUPTED: return PB_EXIT_INTERRUPTED;
    case PB_ERR_UNAVAILABLE: return PB_EXIT_ERROR;
    default: return PB_EXIT_ERROR;
    }
}

static int cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"set", required_argument, NULL, 's'},   {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'}, {"quiet", no_argument, NULL, 'q'},
        {"overhead", no_argument, NULL, 'O'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char **overrides = calloc((size_t)argc, sizeof(char *));
    int override_count = 0;
    const char *output = NULL;
    enum pb_format format = PB_FORMAT_TABLE;
    bool quiet = false, overhead = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "s:o:f:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 's': overrides[override_count++] = optarg; break;
        case 'o': output = optarg; break;
        case 'f':
            if (pb_format_parse(optarg, &format) != PB_OK) {
                free(overrides);
                return usage_error("run", "unknown format '%s'; allowed: table, json, markdown, csv",
                                   optarg);
            }
            break;
        case 'q': quiet = true; break;
        case 'O': overhead = true; break;
        case 'h':
            free(overrides);
            return cmd_help(2, (char *[]){"help", "run", NULL});
        default: free(overrides); return usage_error("run", "%s", "bad option");
        }
    }
    if (optind != argc - 1) {
        free(overrides);
        return usage_error("run", "%s", optind >= argc ? "expected one CONFIG file" : "expected one CONFIG file, got more");
    }
    const char *config_path = argv[optind];

    char msg[PB_MSG_MAX * 2];
    struct pb_spec spec;
    int rc = pb_config_load(config_path, &spec, msg, sizeof(msg));
    for (int i = 0; rc == PB_OK && i < override_count; i++)
        rc = pb_config_override(&spec, overrides[i], msg, sizeof(msg));
    if (rc == PB_OK)
        rc = pb_config_validate(&spec, msg, sizeof(msg));
    free(overrides);
    if (rc != PB_OK) {
        fprintf(stderr, "pbench: %s\n", msg);
        pb_spec_free(&spec);
        return rc == PB_ERR_CONFIG ? PB_EXIT_USAGE : PB_EXIT_ERROR;
    }

    struct pb_dataset ds;
    if (!quiet && spec.dataset.has_generate && access(spec.dataset.path, F_OK) != 0)
        fprintf(stderr, "pbench: generating %lld files of %lld bytes into %s (first use)\n",
                (long long)spec.dataset.generate.count, (long long)spec.dataset.generate.size_bytes,
                spec.dataset.path);
    rc = pb_dataset_open(&spec.dataset, &ds, msg, sizeof(msg));
    if (rc != PB_OK) {
        fprintf(stderr, "pbench: %s: %s\n", config_path, msg);
        pb_spec_free(&spec);
        return exit_for(rc);
    }

    struct pb_result result;
    memset(&result, 0, sizeof(result));
    result.schema_version = PB_SCHEMA_VERSION;
    snprintf(result.pbench_version, sizeof(result.pbench_version), "%s", PB_VERSION);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(result.created, sizeof(result.created), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(result.name, sizeof(result.name), "%s", spec.name);
    pb_machine_probe(&result.machine);
    result.config = pb_spec_to_json(&spec);
    result.points = calloc(1, sizeof(*result.points));
    result.point_count = 1;
    result.points[0].axes = json_object();

    if (!quiet)
        fprintf(stderr,
                "pbench: %s: %zu files (%.1f MiB), %lld workers, batch %lld, prefetch %lld, "
                "%lld repeats\n",
                spec.name, ds.count, (double)ds.total_bytes / 1048576.0,
                (long long)spec.loader.workers, (long long)spec.loader.batch_size,
                (long long)spec.loader.prefetch_factor, (long long)spec.run.repeats);

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    struct progress progress = {.quiet = quiet};
    struct pb_run_hooks hooks = {.progress = on_progress, .user = &progress,
                                 .stop = &interrupt_requested};
    double overhead_pct = 0, overhead_noise = 0;
    rc = pb_run_point(&spec, &ds, &hooks, overhead, &result.points[0], &overhead_pct,
                      &overhead_noise, msg, sizeof(msg));
    signal(SIGINT, SIG_DFL);
    if (overhead && rc == PB_OK) {
        result.overhead_measured = true;
        result.overhead_pct = overhead_pct;
        result.overhead_noise_pct = overhead_noise;
    }
    if (rc == PB_ERR_INTERRUPTED) {
        result.interrupted = true;
        pb_result_warn(&result, "interrupted by the user: the result holds %zu of %lld repeats",
                       result.points[0].repeat_count, (long long)spec.run.repeats);
    } else if (rc != PB_OK) {
        fprintf(stderr, "pbench: %s\n", msg);
        if (result.points[0].repeat_count > 0)
            pb_result_warn(&result, "stopped by an error: %s", msg);
    }

    int exit_code = exit_for(rc);
    if (result.points[0].repeat_count > 0) {
        char path[PB_PATH_MAX];
        if (output)
            snprintf(path, sizeof(path), "%s", output);
        else
            default_result_path(spec.name, path, sizeof(path));
        char wmsg[PB_MSG_MAX];
        if (pb_result_write(&result, path, wmsg, sizeof(wmsg)) != PB_OK) {
            fprintf(stderr, "pbench: %s\n", wmsg);
            exit_code = PB_EXIT_ERROR;
        } else if (!quiet) {
            fprintf(stderr, "pbench: result written to %s\n", path);
        }
        pb_report(stdout, &result, format);
    }
    pb_result_free(&result);
    pb_dataset_free(&ds);
    pb_spec_free(&spec);
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
        char name[64], key[80];
        pb_strlcpy(name, arg + 2, sizeof(name));
        for (char *c = name; *c; c++)
            if (*c == '-')
                *c = '_';
        const struct pb_opt *opt = pb_opt_find(pb_generate_opts, name);
        if (!opt) {
            const char *near = pb_opt_nearest(pb_generate_opts, name);
            char all[512];
            pb_opt_names(pb_generate_opts, all, sizeof(all));
            fprintf(stderr, "pbench gen: unknown option '%s'%s%s%s; options: %s, out\n", arg,
                    near ? "; did you mean '--" : "", near ? near : "", near ? "'?" : "", all);
            return PB_EXIT_USAGE;
        }
        snprintf(key, sizeof(key), "--%s", arg + 2);
        if (pb_opt_parse(opt, value, &spec, key, msg, sizeof(msg)) != PB_OK) {
            fprintf(stderr, "pbench gen: %s\n", msg);
            return PB_EXIT_USAGE;
        }
    }
    if (!out)
        return usage_error("gen", "%s", "--out DIR is required");
    if (access(out, F_OK) == 0 && rmdir(out) != 0) {
        fprintf(stderr, "pbench gen: '%s' already exists and is not an empty folder; choose a new "
                        "one\n",
                out);
        return PB_EXIT_USAGE;
    }
    uint64_t start = pb_now_ns();
    int rc = pb_dataset_generate(&spec, out, msg, sizeof(msg));
    if (rc != PB_OK) {
        fprintf(stderr, "pbench gen: %s\n", msg);
        return exit_for(rc);
    }
    struct pb_dataset_spec ds = {.shard = {0, 1}};
    pb_strlcpy(ds.path, out, sizeof(ds.path));
    struct pb_dataset index;
    if (pb_dataset_open(&ds, &index, msg, sizeof(msg)) == PB_OK) {
        printf("generated %zu files (%.1f MiB) in %s in %.1f s\n", index.count,
               (double)index.total_bytes / 1048576.0, out, (double)(pb_now_ns() - start) / 1e9);
        pb_dataset_free(&index);
    }
    return PB_EXIT_OK;
}

/* ---- report ------------------------------------------------------------- */

static int cmd_report(int argc, char **argv)
{
    enum pb_format format = PB_FORMAT_TABLE;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--format") == 0 || strcmp(argv[i], "-f") == 0) && i + 1 < argc) {
            if (pb_format_parse(argv[++i], &format) != PB_OK)
                return usage_error("report", "unknown format '%s'; allowed: table, json, markdown, csv",
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
        fprintf(stderr, "pbench: %s\n", msg);
        pb_result_free(&result);
        return PB_EXIT_ERROR;
    }
    pb_report(stdout, &result, format);
    pb_result_free(&result);
    return PB_EXIT_OK;
}

/* ---- list --------------------------------------------------------------- */

static void list_options(const struct pb_opt *opts, const char *prefix)
{
    if (!opts || !opts[0].name) {
        printf("    (no options)\n");
        return;
    }
    for (const struct pb_opt *o = opts; o->name; o++) {
        char what[256], key[128];
        pb_opt_describe(o, what, sizeof(what));
        snprintf(key, sizeof(key), "%s%s", prefix, o->name);
        printf("    %-26s %-24s default %-8s %s\n", key, what, o->def && o->def[0] ? o->def : "\"\"",
               o->help ? o->help : "");
    }
}

static bool wanted(const char *filter, const char *name)
{
    return !filter || strcmp(filter, name) == 0;
}

static int cmd_list(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    bool shown = false;
    size_t n;
    const struct pb_stage_ops *const *stages = pb_stage_all(&n);
    if (!filter)
        printf("Stages (pipeline: - NAME: {options}):\n");
    for (size_t i = 0; i < n; i++) {
        const struct pb_stage_ops *s = stages[i];
        if (!wanted(filter, s->name))
            continue;
        shown = true;
        printf("  %-10s %s [%s%s] %s\n", s->name, s->unavailable_reason ? "unavailable" : "available",
               s->flags & PB_STAGE_CONSUMER ? "consumer" : "worker",
               s->flags & PB_STAGE_DECODER ? ", takes decoder: NAME" : "", s->summary);
        if (s->unavailable_reason)
            printf("    why unavailable: %s\n", s->unavailable_reason);
        if (s->flags & PB_STAGE_DECODER)
            printf("    decoder                    one of the decoders below; its options go here too\n");
        if (s->opts)
            list_options(s->opts, "");
        else if (!(s->flags & PB_STAGE_DECODER))
            list_options(NULL, "");
    }
    const struct pb_decoder_ops *const *decoders = pb_decoder_all(&n);
    if (!filter)
        printf("\nDecoders (pipeline: - decode: {decoder: NAME, options}):\n");
    for (size_t i = 0; i < n; i++) {
        const struct pb_decoder_ops *d = decoders[i];
        if (!wanted(filter, d->name))
            continue;
        shown = true;
        printf("  %-10s %s %s\n", d->name, d->unavailable_reason ? "unavailable" : "available",
               d->summary);
        if (d->unavailable_reason)
            printf("    why unavailable: %s\n", d->unavailable_reason);
        list_options(d->opts, "");
    }
    static const struct {
        const char *name;
        const struct pb_opt *opts;
    } sections[] = {{"dataset", pb_dataset_opts},
                    {"dataset.generate", pb_generate_opts},
                    {"loader", pb_loader_opts},
                    {"run", pb_run_opts}};
    if (!filter)
        printf("\nConfig sections:\n");
    for (size_t i = 0; i < PB_ARRAY_LEN(sections); i++) {
        if (!wanted(filter, sections[i].name))
            continue;
        shown = true;
        printf("  %s\n", sections[i].name);
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "%s.", sections[i].name);
        list_options(sections[i].opts, prefix);
    }
    if (!shown) {
        fprintf(stderr, "pbench list: nothing is called '%s'; run 'pbench list' for every entry\n",
                filter);
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
    printf("pbench %s (%s build, %s%s%s)\n", PB_VERSION, PB_BUILD_TYPE, m.compiler,
           strcmp(PB_SANITIZE, "OFF") ? ", sanitize=" : "", strcmp(PB_SANITIZE, "OFF") ? PB_SANITIZE : "");
    printf("  CUDA support: %s; MPI support: %s\n", PB_HAVE_CUDA ? "built" : "not built",
           PB_HAVE_MPI ? "built" : "not built");
    for (int i = 0; i < m.library_count; i++)
        printf("  %-14s %s\n", m.libraries[i][0], m.libraries[i][1]);
    if (m.cuda_runtime_version) {
        printf("  CUDA runtime %d.%d, ", m.cuda_runtime_version / 1000,
               (m.cuda_runtime_version % 1000) / 10);
        if (m.cuda_driver_version)
            printf("driver %d.%d\n", m.cuda_driver_version / 1000,
                   (m.cuda_driver_version % 1000) / 10);
        else
            printf("no CUDA driver\n");
    }
    printf("  GPU: %s%s%s\n", m.gpu_count ? m.gpu_name : "", m.gpu_count ? ", " : "", m.gpu_status);
    printf("  machine: %s, %d cores / %d threads, %s\n", m.cpu_model, m.cores, m.pus, m.kernel);
    return PB_EXIT_OK;
}

/* ---- help --------------------------------------------------------------- */

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
