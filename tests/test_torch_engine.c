/* End to end on the torch engine (loader.engine: torch, docs/engines.md):
 * the pbench binary starts the Python engine on tiny generated photos and
 * videos and the result holds the engine's versions, stage rows that
 * agree with the workers' CPU, the side-by-side line of a sweep over
 * loader.engine, a user's Dataset with a row per transform, and clear
 * exit-2 errors for what the engine cannot run or an interpreter without
 * torch. Skipped, saying why, where Debian's python3-torch is missing.
 * No test asserts a wall-clock time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/config/config.h"
#include "bench/base/engine_row.h"
#include "bench/run/batch_frame.h"
#include "bench/run/engine_proc.h"
#include "bench/run/repeat.h"
#include "tests/testutil.h"

static const char *binary;
static const char *source_dir;
static char workdir[] = "/tmp/pbench-torch-XXXXXX";
static bool have_torch;

/* Small photos and short measured parts: each run is a few seconds, most
 * of it Python importing torch. */
#define IMAGES                                                                                 \
    "-s dataset.path=img -s dataset.generate.count=48 -s dataset.generate.size=96x72-128x96 " \
    "-s pipeline.random_resized_crop.size=48 -s run.warmup_batches=2 -s run.min_time_s=0.3 "  \
    "-s run.max_time_s=0.8 -s run.window_s=0.1 -s run.repeats=2 -s loader.batch_size=8 "

static int run(const char *args)
{
    char *err = NULL;
    int rc = pb_test_run_pbench(workdir, args, &err);
    free(err);
    return rc;
}

static char *file_text(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", workdir, name);
    return pb_test_read_file(path, NULL, false);
}

static void run_ok(const char *args)
{
    int rc = run(args);
    if (rc != 0) {
        char *err = file_text("err.txt");
        fail_msg("pbench %s: exit %d: %s", args, rc, err);
    }
}

static int setup(void **state)
{
    pb_test_tmpdir_use(workdir);
    binary = getenv("PBENCH_BINARY");
    source_dir = getenv("PBENCH_SOURCE_DIR");
    if (!binary || !source_dir) {
        fprintf(stderr, "PBENCH_BINARY and PBENCH_SOURCE_DIR must be set (ctest sets them)\n");
        return -1;
    }
    have_torch = pb_test_have_torch();
    return pb_test_tmpdir_setup(state);
}

#define NEED_TORCH()                                                                           \
    do {                                                                                       \
        if (!have_torch) {                                                                     \
            fprintf(stderr, "skipped: torch is not installed: apt-get install python3-torch "  \
                            "python3-torchvision python3-av (scripts/setup.sh does)\n");       \
            skip();                                                                            \
        }                                                                                      \
    } while (0)

static const json_t *point(const json_t *r, size_t i)
{
    return json_array_get(json_object_get(r, "points"), i);
}

static const json_t *stage(const json_t *p, const char *name)
{
    const json_t *stages = json_object_get(p, "stages");
    for (size_t k = 0; k < json_array_size(stages); k++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(stages, k), "name")), name))
            return json_array_get(stages, k);
    fail_msg("no stage row '%s'", name);
    return NULL;
}

static double number(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v))
        fail_msg("'%s' is not a number", key);
    return json_number_value(v);
}

/* The worker processes' CPU over the measured parts, in ns, from the
 * point's repeats (worker_cpu_pct is per worker). */
static double worker_cpu_ns(const json_t *p, int workers)
{
    const json_t *repeats = json_object_get(p, "repeats");
    double sum = 0;
    for (size_t r = 0; r < json_array_size(repeats); r++) {
        const json_t *rep = json_array_get(repeats, r);
        sum += number(rep, "wall_s") * 1e9 * number(rep, "worker_cpu_pct") / 100 * workers;
    }
    return sum;
}

static double stage_cpu_ns(const json_t *p)
{
    const json_t *stages = json_object_get(p, "stages");
    double sum = 0;
    for (size_t k = 0; k < json_array_size(stages); k++) {
        const json_t *s = json_array_get(stages, k);
        const char *parent = json_string_value(json_object_get(s, "parent"));
        if (!parent || !parent[0])
            sum += number(s, "cpu_ns");
    }
    return sum;
}

/* configs/image.yaml on the torch engine: versions, rows, worker CPU. */
static void test_image_pipeline_on_torch(void **state)
{
    (void)state;
    NEED_TORCH();
    char args[2048];
    snprintf(args, sizeof args,
             "run '%s/configs/image.yaml' " IMAGES "-s loader.engine=torch -o torch.json",
             source_dir);
    run_ok(args);
    char *out = file_text("out.txt");
    pb_test_assert_contains(out, (const char *const[]){"engine: torch · Python", "torch 1.",
                                                        "peak PSS", "random_resized_crop",
                                                        "on the torch engine", NULL});
    free(out);
    json_t *r = pb_test_load_json(workdir, "torch.json");
    const json_t *engine = json_object_get(r, "engine");
    assert_string_equal(json_string_value(json_object_get(engine, "name")), "torch");
    assert_non_null(json_string_value(json_object_get(json_object_get(engine, "versions"),
                                                      "torchvision")));
    const json_t *p = point(r, 0);
    assert_true(number(p, "samples") > 0);
    assert_true(number(p, "first_batch_s") > 0);
    static const char *const rows[] = {"read", "decode", "random_resized_crop", "flip",
                                       "normalize", "collate"};
    for (size_t i = 0; i < PB_ARRAY_LEN(rows); i++)
        assert_true(number(json_object_get(stage(p, rows[i]), "histogram"), "count") > 0 ||
                    number(stage(p, rows[i]), "cpu_ns") > 0);
    /* JPEG counters, as pbench's own decoder counts them. */
    assert_non_null(json_object_get(json_object_get(stage(p, "decode"), "counters"),
                                    "progressive"));
    /* The rows are the workers' work: their CPU is most of the workers'
     * CPU and not more (/proc's clock ticks are 10 ms, and a batch taken
     * early in the part was begun before it). */
    double rows_cpu = stage_cpu_ns(p), workers_cpu = worker_cpu_ns(p, 2);
    if (!(rows_cpu > 0.5 * workers_cpu && rows_cpu < 1.5 * workers_cpu + 5e7))
        fail_msg("stage rows' CPU %.0f ms against the workers' %.0f ms", rows_cpu / 1e6,
                 workers_cpu / 1e6);
    json_decref(r);
}

/* A sweep's points and repeats on the torch engine share one engine
 * process (its interpreter started and torch imported once), each round
 * opened anew with its point's config: a sweep of 2 points x 2 repeats
 * starts Python once, and each point still runs its own settings. */
static void test_engine_kept_across_rounds(void **state)
{
    (void)state;
    NEED_TORCH();
    char script[600], log[600];
    snprintf(script, sizeof script, "%s/counting-python", workdir);
    snprintf(log, sizeof log, "%s/starts.log", workdir);
    char text[1400];
    snprintf(text, sizeof text, "#!/bin/sh\necho start >> '%s'\nexec /usr/bin/python3 \"$@\"\n",
             log);
    pb_test_write_file(script, text, strlen(text));
    chmod(script, 0755);
    char args[3000];
    snprintf(args, sizeof args,
             "run '%s/configs/image.yaml' " IMAGES "-s loader.engine=torch -s loader.python=%s "
             "-a loader.workers=1,2 -o kept.json",
             source_dir, script);
    run_ok(args);
    size_t len = 0;
    char *starts = pb_test_read_file(log, &len, true);
    assert_int_equal(len, strlen("start\n"));
    free(starts);
    json_t *r = pb_test_load_json(workdir, "kept.json");
    for (size_t i = 0; i < 2; i++) {
        const json_t *p = point(r, i);
        assert_int_equal(json_array_size(json_object_get(p, "repeats")), 2);
        assert_true(number(p, "samples") > 0);
    }
    json_decref(r);
}

/* -a loader.engine=pbench,torch: one table, and the verdict's engines
 * line with per-stage ratios and the per-core rates. */
static void test_side_by_side(void **state)
{
    (void)state;
    NEED_TORCH();
    char args[2048];
    snprintf(args, sizeof args,
             "run '%s/configs/image.yaml' " IMAGES "-a loader.engine=pbench,torch -o both.json",
             source_dir);
    run_ok(args);
    char *out = file_text("out.txt");
    pb_test_assert_contains(out, (const char *const[]){"engines: the torch engine delivers",
                                                        "CPU per sample, torch against pbench: "
                                                        "read ",
                                                        "decode ", "per core of CPU", NULL});
    free(out);
    json_t *r = pb_test_load_json(workdir, "both.json");
    assert_int_equal(json_array_size(json_object_get(r, "points")), 2);
    const char *engines =
        json_string_value(json_object_get(json_object_get(r, "analysis"), "engines"));
    assert_non_null(engines);
    assert_non_null(strstr(engines, "random_resized_crop"));
    json_decref(r);
}

/* What the engine cannot run, and an interpreter without torch: exit 2,
 * naming the engine, the place, and the packages. */
static void test_refusals_exit_2(void **state)
{
    (void)state;
    char args[2048];
    snprintf(args, sizeof args,
             "run '%s/configs/image.yaml' -s loader.engine=torch -s pipeline.decode.scale=window",
             source_dir);
    assert_int_equal(run(args), 2);
    char *err = file_text("err.txt");
    pb_test_assert_contains(err, (const char *const[]){"configs/image.yaml:", "loader.engine torch "
                                                        "cannot run jpeg's scale: window", NULL});
    free(err);
    snprintf(args, sizeof args, "run '%s/configs/null.yaml' -s loader.engine=torch", source_dir);
    assert_int_equal(run(args), 2);
    /* An interpreter that cannot import torch (Python with torch hidden). */
    char fake[600], script[1400];
    snprintf(fake, sizeof fake, "%s/python-without-torch", workdir);
    snprintf(script, sizeof script,
             "#!/bin/sh\nexec /usr/bin/python3 -c \"import sys, runpy; sys.modules['torch'] = "
             "None; sys.argv = ['pbench_torch']; runpy.run_module('pbench_torch', "
             "run_name='__main__')\"\n");
    pb_test_write_file(fake, script, strlen(script));
    chmod(fake, 0755);
    snprintf(args, sizeof args,
             "run '%s/configs/image.yaml' " IMAGES "-s loader.engine=torch -s loader.python=%s",
             source_dir, fake);
    assert_int_equal(run(args), 2);
    err = file_text("err.txt");
    pb_test_assert_contains(err, (const char *const[]){"cannot import torch",
                                                        "python3-torch python3-torchvision",
                                                        NULL});
    free(err);
}

/* Corrupt photos on the torch engine: counted and listed with their files
 * under on_error: skip; under fail the run stops naming the file. */
static void test_bad_samples(void **state)
{
    (void)state;
    NEED_TORCH();
    char args[2048];
    snprintf(args, sizeof args,
             "run '%s/configs/image.yaml' " IMAGES "-s dataset.path=bad "
             "-s dataset.generate.corrupt_fraction=0.2 -s loader.engine=torch -o bad.json",
             source_dir);
    run_ok(args);
    json_t *r = pb_test_load_json(workdir, "bad.json");
    const json_t *errors = json_object_get(point(r, 0), "errors");
    assert_true(number(errors, "count") > 0);
    const char *first = json_string_value(json_array_get(json_object_get(errors, "files"), 0));
    assert_non_null(first);
    assert_non_null(strstr(first, "bad/img_"));
    json_decref(r);
    snprintf(args, sizeof args,
             "run '%s/configs/image.yaml' " IMAGES "-s dataset.path=bad "
             "-s dataset.generate.corrupt_fraction=0.2 -s loader.engine=torch "
             "-s run.on_error=fail",
             source_dir);
    assert_int_equal(run(args), 1);
    char *err = file_text("err.txt");
    pb_test_assert_contains(err, (const char *const[]){"bad/img_", "run.on_error: fail", NULL});
    free(err);
}

/* A small pipeline on the torch engine, as a config file's text, reading
 * `data` (an absolute folder of JPEGs). */
static void write_config(const char *path, const char *data, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof text,
             "dataset:\n  path: %s\npipeline:\n  - read:\n  - decode: {decoder: jpeg}\n"
             "  - center_crop: {size: [32, 32]}\n  - normalize:\nloader:\n  engine: torch\n"
             "  workers: 0\n  batch_size: 4\nrun:\n  warmup_batches: 1\n  min_time_s: 0.3\n"
             "  max_time_s: 0.8\n  window_s: 0.1\n  repeats: 1\n  on_error: skip\n%s",
             data, extra ? extra : "");
    pb_test_write_file(path, text, strlen(text));
}

/* JPEGs in workdir/name (48 small photos), made once; its absolute path. */
static const char *photos(const char *name, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%s/%s", workdir, name);
    struct stat st;
    if (stat(buf, &st) != 0) {
        char args[1024];
        snprintf(args, sizeof args, "gen --kind jpeg --out '%s' --count 48 --size 96x72-128x96",
                 buf);
        run_ok(args);
    }
    return buf;
}

/* File names travel as bytes: a corrupt file whose name is not UTF-8 is a
 * bad sample listed with its exact bytes (errors.files_bytes), and a
 * config in a folder whose name is not UTF-8 runs. */
static void test_names_not_utf8(void **state)
{
    (void)state;
    NEED_TORCH();
    char data[600], path[700], cmd[1600];
    photos("odd", data, sizeof data);
    snprintf(path, sizeof path, "%s/corrupt\xff.jpg", data);
    pb_test_write_file(path, "x", 1);
    snprintf(path, sizeof path, "%s/odd.yaml", workdir);
    write_config(path, data, NULL);
    run_ok("run odd.yaml -o odd.json");
    json_t *r = pb_test_load_json(workdir, "odd.json");
    const json_t *errors = json_object_get(point(r, 0), "errors");
    assert_true(number(errors, "count") > 0);
    const char *exact = json_string_value(json_array_get(json_object_get(errors, "files_bytes"), 0));
    assert_non_null(exact);
    assert_non_null(strstr(exact, "636f7272757074ff2e6a7067")); /* "corrupt\xff.jpg" */
    json_decref(r);
    /* The config in a folder named with a byte that is not UTF-8, given by
     * its absolute path. */
    snprintf(path, sizeof path, "%s/cfg\xfe", workdir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/cfg\xfe/odd.yaml", workdir);
    write_config(path, data, NULL);
    snprintf(cmd, sizeof cmd, "run '%s' -o odd2.json", path);
    run_ok(cmd);
    r = pb_test_load_json(workdir, "odd2.json");
    assert_true(number(point(r, 0), "samples") > 0);
    json_decref(r);
}

/* A config of your own Dataset dies:Dies(how) (a module in workdir) with
 * extra lines under loader:, at workdir/name. */
static void write_dies(const char *name, const char *how, const char *loader_extra,
                       const char *run_extra)
{
    static const char module[] =
        "import os, signal, time\n"
        "class Dies:\n"
        "    def __init__(self, how):\n"
        "        self.how = how\n"
        "        if how == 'exit':\n"
        "            os._exit(7)\n"
        "        if how == 'hang':\n"
        "            time.sleep(3600)\n"
        "    def __len__(self):\n"
        "        return 64\n"
        "    def __getitem__(self, i):\n"
        "        if self.how == 'segv':\n"
        "            os.kill(os.getpid(), signal.SIGSEGV)\n"
        "        return i\n";
    char path[700], text[2048];
    snprintf(path, sizeof path, "%s/dies.py", workdir);
    pb_test_write_file(path, module, strlen(module));
    snprintf(text, sizeof text,
             "dataset:\n  python: \"dies:Dies\"\n  args: {how: %s}\npipeline: []\n"
             "loader:\n  engine: torch\n  python_path: %s\n  workers: 0\n  batch_size: 4\n%s"
             "run:\n  warmup_batches: 1\n  min_time_s: 0.3\n  max_time_s: 0.8\n  repeats: 1\n%s",
             how, workdir, loader_extra ? loader_extra : "", run_extra ? run_extra : "");
    snprintf(path, sizeof path, "%s/%s", workdir, name);
    pb_test_write_file(path, text, strlen(text));
}

static void assert_run_says(const char *args, int code, const char *const *needles)
{
    assert_int_equal(run(args), code);
    char *err = file_text("err.txt");
    pb_test_assert_contains(err, needles);
    free(err);
}

/* loader.python as the path rule says: a bare name on PATH, a relative
 * path against the config's folder; one that cannot start is a config
 * error at its line (a folder and a text file alike). */
static void test_interpreter_found_and_refused(void **state)
{
    (void)state;
    char path[700], args[1600];
    snprintf(path, sizeof path, "%s/bin", workdir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/bin/python3", workdir);
    assert_int_equal(symlink("/usr/bin/python3", path), 0);
    snprintf(path, sizeof path, "%s/bin/notes.txt", workdir);
    pb_test_write_file(path, "not a program\n", 14);
    write_dies("folder.yaml", "none", "  python: ./bin\n", NULL);
    assert_run_says("run folder.yaml", 2,
                    (const char *const[]){"folder.yaml:10:3: loader.engine torch: the "
                                          "interpreter", "/bin' (loader.python) cannot be "
                                          "started (it is a folder)", NULL});
    write_dies("text.yaml", "none", "  python: bin/notes.txt\n", NULL);
    assert_run_says("run text.yaml", 2,
                    (const char *const[]){"text.yaml:10:3:", "cannot be started", NULL});
    write_dies("nowhere.yaml", "none", "  python: no-such-python\n", NULL);
    assert_run_says("run nowhere.yaml", 2,
                    (const char *const[]){"nowhere.yaml:10:3:", "not found on PATH", NULL});
    if (!have_torch)
        return;
    /* Relative to the config's folder, run from another folder. */
    snprintf(path, sizeof path, "%s/elsewhere", workdir);
    mkdir(path, 0755);
    write_dies("relative.yaml", "none", "  python: bin/python3\n", NULL);
    run_ok("run relative.yaml -o relative.json");
    snprintf(args, sizeof args, "run '%s/relative.yaml' -o '%s/relative2.json'", workdir, workdir);
    char *err = NULL;
    snprintf(path, sizeof path, "%s/elsewhere", workdir);
    int rc = pb_test_run_pbench(path, args, &err);
    if (rc != 0)
        fail_msg("from another folder: exit %d: %s", rc, err);
    free(err);
    /* A bare name on PATH. */
    write_dies("bare.yaml", "none", "  python: python3\n", NULL);
    snprintf(args, sizeof args, "run bare.yaml -o bare.json");
    char command[2048];
    snprintf(command, sizeof command, "cd '%s' && PATH='%s/bin':\"$PATH\" '%s' %s >out.txt 2>err.txt",
             workdir, workdir, binary, args);
    rc = system(command);
    if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
        char *text = file_text("err.txt");
        fail_msg("loader.python: python3 on PATH: %s", text);
    }
}

/* An engine that dies says how: its exit status or signal. */
static void test_engine_death_says_how(void **state)
{
    (void)state;
    write_dies("false.yaml", "none", "  python: /bin/false\n", NULL);
    assert_run_says("run false.yaml", 1,
                    (const char *const[]){"/bin/false -m pbench_torch", "exited with status 1",
                                          NULL});
    write_dies("true.yaml", "none", "  python: /bin/true\n", NULL);
    assert_run_says("run true.yaml", 1, (const char *const[]){"exited with status 0", NULL});
    NEED_TORCH();
    write_dies("exit.yaml", "exit", NULL, NULL);
    assert_run_says("run exit.yaml", 1, (const char *const[]){"exited with status 7", NULL});
    write_dies("segv.yaml", "segv", NULL, NULL);
    assert_run_says("run segv.yaml", 1,
                    (const char *const[]){"the torch engine's process", "killed by signal 11 "
                                          "(SIGSEGV)", NULL});
    /* In a worker: the engine names the worker and how it ended. */
    assert_run_says("run segv.yaml -s loader.workers=1", 1,
                    (const char *const[]){"DataLoader worker 0 (pid", "killed by signal 11 "
                                          "(SIGSEGV)", "the engine's own process is alive",
                                          NULL});
}

/* A Dataset constructor that hangs: the wait for the engine's ready is
 * run.stage_timeout_s, and the message says so. */
static void test_startup_wait_is_the_stage_timeout(void **state)
{
    (void)state;
    NEED_TORCH();
    write_dies("hang.yaml", "hang", NULL, "  stage_timeout_s: 6\n");
    assert_run_says("run hang.yaml", 1,
                    (const char *const[]){"did not answer open within run.stage_timeout_s (6 s)",
                                          NULL});
}

/* The slowest samples of your own Dataset are named from the Dataset (its
 * `paths` here, in the reverse of pbench's order), not from pbench's index
 * of dataset.path; a Dataset that names no files says so. */
static void test_slowest_files_of_own_dataset(void **state)
{
    (void)state;
    NEED_TORCH();
    static const char module[] =
        "import os, time\n"
        "class Reversed:\n"
        "    def __init__(self, root, named=True):\n"
        "        self.files = [os.path.join(root, f) for f in sorted(os.listdir(root))[::-1]]\n"
        "        if named:\n"
        "            self.paths = self.files\n"
        "        else:\n"
        "            del self.files  # no attribute that names them\n"
        "            self.hidden = [os.path.join(root, f) for f in sorted(os.listdir(root))[::-1]]\n"
        "    def __len__(self):\n"
        "        return len(getattr(self, 'paths', None) or self.hidden)\n"
        "    def __getitem__(self, i):\n"
        "        path = (getattr(self, 'paths', None) or self.hidden)[i]\n"
        "        if path.endswith('img_0000007.jpg'):\n"
        "            time.sleep(0.2)\n"
        "        with open(path, 'rb') as f:\n"
        "            return len(f.read())\n";
    char data[600], path[700], text[2048];
    photos("slow", data, sizeof data);
    snprintf(path, sizeof path, "%s/slowfile.py", workdir);
    pb_test_write_file(path, module, strlen(module));
    for (int named = 1; named >= 0; named--) {
        snprintf(text, sizeof text,
                 "dataset:\n  path: %s\n  python: \"slowfile:Reversed\"\n"
                 "  args: {root: \"${dataset.path}\", named: %s}\npipeline: []\n"
                 "loader:\n  engine: torch\n  python_path: .\n  workers: 0\n  batch_size: 4\n"
                 "run:\n  warmup_batches: 0\n  min_time_s: 0.3\n  max_time_s: 1\n"
                 "  repeats: 1\n  window_s: 0.1\n",
                 data, named ? "true" : "false");
        snprintf(path, sizeof path, "%s/slow.yaml", workdir);
        pb_test_write_file(path, text, strlen(text));
        run_ok("run slow.yaml -s dataset.epochs=1 -o slow.json");
        json_t *r = pb_test_load_json(workdir, "slow.json");
        const json_t *slowest = json_object_get(stage(point(r, 0), "getitem"), "slowest");
        const char *file = json_string_value(json_object_get(json_array_get(slowest, 0), "file"));
        assert_non_null(file);
        if (named)
            assert_non_null(strstr(file, "/slow/img_0000007.jpg"));
        else
            assert_non_null(strstr(file, "names no file"));
        json_decref(r);
    }
}

/* An engine whose batches claim more samples than they carry (a copy of
 * the engine that multiplies collate's count) is refused, not believed. */
static void test_sample_count_is_checked(void **state)
{
    (void)state;
    NEED_TORCH();
    char command[2048], data[600], path[700];
    snprintf(command, sizeof command,
             "cp -r '%s/engines' '%s/liar' && sed -i 's/return batch, len(good), records/"
             "return batch, len(good) * 1000, records/' '%s/liar/torch/pbench_torch/collate.py' "
             "&& grep -q 'len(good) \\* 1000' '%s/liar/torch/pbench_torch/collate.py'",
             source_dir, workdir, workdir, workdir);
    assert_int_equal(system(command), 0);
    photos("liar-photos", data, sizeof data); /* every one good: 4 samples a batch */
    snprintf(path, sizeof path, "%s/liar.yaml", workdir);
    write_config(path, data, NULL);
    snprintf(command, sizeof command,
             "cd '%s' && PBENCH_ENGINES='%s/liar' '%s' run liar.yaml >out.txt 2>err.txt", workdir,
             workdir, binary);
    int rc = system(command);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
    char *err = file_text("err.txt");
    pb_test_assert_contains(err, (const char *const[]){"says it holds 4000 samples",
                                                        "a count pbench cannot trust", NULL});
    free(err);
}

/* configs/torch-dataset.yaml: the example Dataset class, a row per
 * transform of its Compose and one for the rest of __getitem__. */
static void test_users_dataset(void **state)
{
    (void)state;
    NEED_TORCH();
    char args[2048];
    snprintf(args, sizeof args,
             "run '%s/configs/torch-dataset.yaml' -s dataset.path=img "
             "-s dataset.generate.count=48 "
             "-s dataset.generate.size=96x72-128x96 -s run.warmup_batches=2 "
             "-s run.min_time_s=0.3 -s run.max_time_s=0.8 -s run.repeats=2 "
             "-s loader.batch_size=8 -o user.json",
             source_dir);
    run_ok(args);
    char *out = file_text("out.txt"); /* its bytes read are not known, not zero */
    pb_test_assert_contains(out, (const char *const[]){"MB/s read", "unknown (your Dataset "
                                                        "reads its files itself)", NULL});
    free(out);
    json_t *r = pb_test_load_json(workdir, "user.json");
    const json_t *p = point(r, 0);
    static const char *const rows[] = {"getitem", "RandomResizedCrop", "RandomHorizontalFlip",
                                       "ToTensor", "Normalize", "collate"};
    for (size_t i = 0; i < PB_ARRAY_LEN(rows); i++)
        assert_true(number(stage(p, rows[i]), "cpu_ns") > 0);
    json_decref(r);
}

/* configs/video.yaml on the torch engine: clips through PyAV with the
 * decoded and delivered frames counted as pbench's decoder counts them. */
static void test_video_on_torch(void **state)
{
    (void)state;
    NEED_TORCH();
    char args[2048];
    snprintf(args, sizeof args,
             "run '%s/configs/video.yaml' -s loader.engine=torch -s dataset.path=vid "
             "-s dataset.generate.size=160x96 -s dataset.generate.frames=40 "
             "-s dataset.generate.count=2 -s dataset.generate.gop=12 -s run.min_time_s=0.3 "
             "-s run.max_time_s=0.8 -s run.repeats=1 -s run.window_s=0.1 "
             "-s pipeline.decode.shorter_side=64 -s pipeline.random_crop.size=48 -o video.json",
             source_dir);
    run_ok(args);
    json_t *r = pb_test_load_json(workdir, "video.json");
    const json_t *counters = json_object_get(stage(point(r, 0), "decode"), "counters");
    double decoded = number(counters, "frames_decoded");
    double delivered = number(counters, "frames_delivered");
    assert_true(delivered > 0 && decoded >= delivered);
    stage(point(r, 0), "decode.seek"); /* PyAV's sub-stages as rows */
    json_decref(r);
}

/* The batch header's one description (engines/batch_header.json), read by
 * the engine's writer and its tests' reader, is pbench's packed struct:
 * the same fields in the same order, each at its offset with its size and
 * sign. A field changed in one place fails here. */
static void test_batch_header_layout(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        size_t offset, size;
        bool is_signed;
    } fields[] = {
#define FIELD(type, name)                                                                      \
    {#name, offsetof(struct pb_batch_header, name), sizeof(type), #type[0] == 'i'},
        PB_BATCH_HEADER_FIELDS(FIELD)
#undef FIELD
    };
    char path[600];
    snprintf(path, sizeof path, "%s/engines/batch_header.json", source_dir);
    json_t *doc = json_load_file(path, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "size")),
                     sizeof(struct pb_batch_header));
    const json_t *described = json_object_get(doc, "fields");
    assert_int_equal(json_array_size(described), sizeof fields / sizeof fields[0]);
    size_t offset = 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const json_t *f = json_array_get(described, i);
        const char *name = json_string_value(json_array_get(f, 0));
        const char *kind = json_string_value(json_array_get(f, 1));
        assert_non_null(name);
        assert_non_null(kind);
        char want[8];
        snprintf(want, sizeof want, "%c%zu", fields[i].is_signed ? 'i' : 'u', 8 * fields[i].size);
        if (strcmp(name, fields[i].name) || strcmp(kind, want) || offset != fields[i].offset)
            fail_msg("field %zu: %s %s at %zu described, struct pb_batch_header has %s %s at %zu",
                     i, name, kind, offset, fields[i].name, want, fields[i].offset);
        offset += fields[i].size;
    }
    json_decref(doc);
}

/* A second engine, a row of this test's own: a shell that answers open
 * with a fatal frame. What pbench says of it comes from its row: its name
 * and title, its command line, its interpreter. */
/* The shell's answer: one JSON frame (u32 length, u32 type 1, the JSON),
 * its length counted by the shell. */
#define ECHO_FATAL                                                                             \
    "{\"type\":\"fatal\",\"kind\":\"engine\",\"message\":\"ValueError: boom\",\"traceback\":"  \
    "\"Traceback (most recent call last):\\n  File \\\"m.py\\\", line 1, in <module>\\n  "      \
    "File \\\"m.py\\\", line 9, in make\\n    raise ValueError(\\\"boom\\\")\\nValueError: "     \
    "boom\\n\"}"
#define ECHO_SCRIPT(json)                                                                      \
    "read line; j='" json "'; printf \"$(printf '\\\\%03o' $((${#j} + 4)))\\\\000\\\\000"     \
    "\\\\000\\\\001\\\\000\\\\000\\\\000%s\" \"$j\" >&3; exit 1"
static const char *const echo_stages[] = {"read", NULL};
static const char *const echo_decoders[] = {NULL};
static const struct pb_engine_row echo_row = {
    .name = "echo",
    .title = "the echo engine",
    .interpreter = "/bin/sh",
    .args = {"-c", ECHO_SCRIPT(ECHO_FATAL), NULL},
    .stages = echo_stages,
    .decoders = echo_decoders,
    .starting = "starting the shell",
};

/* Opens row's engine on a small spec; the point's engine object (its
 * traceback) into *engine when engine is not NULL. */
static int open_echo(const struct pb_engine_row *row, char *msg, size_t msglen, json_t **engine)
{
    struct pb_spec spec;
    assert_int_equal(pb_config_load_string("dataset: {python: 'm:make'}\nloader: {engine: torch}\n",
                                           "echo.yaml", &spec, msg, msglen),
                     PB_OK);
    struct pb_dataset ds;
    memset(&ds, 0, sizeof ds);
    struct pb_point_result point;
    memset(&point, 0, sizeof point);
    struct pb_point_run *run = NULL;
    int rc = pb_point_open_row(row, &spec, &ds, NULL, &point, &run, msg, msglen);
    pb_point_close(run);
    free(point.repeats);
    if (engine)
        *engine = point.engine;
    else
        json_decref(point.engine);
    pb_spec_free(&spec);
    return rc;
}

static void test_second_engine_row(void **state)
{
    (void)state;
    char msg[PB_MSG_MAX] = "";
    json_t *engine = NULL;
    assert_int_equal(open_echo(&echo_row, msg, sizeof msg, &engine), PB_ERR);
    /* The message shows the traceback's last lines; the point keeps it whole. */
    assert_string_equal(msg, "the echo engine failed: ValueError: boom\n  File \"m.py\", line 1, "
                             "in <module>\n  File \"m.py\", line 9, in make\n    raise "
                             "ValueError(\"boom\")");
    assert_string_equal(json_string_value(json_object_get(engine, "name")), "echo");
    const char *trace = json_string_value(json_object_get(engine, "traceback"));
    assert_non_null(trace);
    assert_true(strncmp(trace, "Traceback (most recent call last):\n  File \"m.py\", line 1", 50) ==
                0);
    json_decref(engine);
    struct pb_engine_row missing = echo_row;
    missing.interpreter = "/nonexistent/sh";
    assert_int_equal(open_echo(&missing, msg, sizeof msg, NULL), PB_ERR_CONFIG);
    pb_test_assert_contains(msg, (const char *const[]){"loader.engine echo: the interpreter "
                                                        "'/nonexistent/sh' cannot be started",
                                                        NULL});
    assert_null(strstr(msg, "torch"));
    /* An engine that ends without a word: its command line from the row. */
    struct pb_engine_row mute = echo_row;
    mute.args[1] = "read line; exit 3";
    assert_int_equal(open_echo(&mute, msg, sizeof msg, NULL), PB_ERR);
    pb_test_assert_contains(msg, (const char *const[]){"the echo engine's process (/bin/sh -c "
                                                        "read line; exit 3, pid ",
                                                        "exited with status 3", NULL});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_header_layout),
        cmocka_unit_test(test_second_engine_row),
        cmocka_unit_test(test_refusals_exit_2),
        cmocka_unit_test(test_image_pipeline_on_torch),
        cmocka_unit_test(test_engine_kept_across_rounds),
        cmocka_unit_test(test_side_by_side),
        cmocka_unit_test(test_users_dataset),
        cmocka_unit_test(test_bad_samples),
        cmocka_unit_test(test_video_on_torch),
        cmocka_unit_test(test_names_not_utf8),
        cmocka_unit_test(test_sample_count_is_checked),
        cmocka_unit_test(test_slowest_files_of_own_dataset),
        cmocka_unit_test(test_interpreter_found_and_refused),
        cmocka_unit_test(test_engine_death_says_how),
        cmocka_unit_test(test_startup_wait_is_the_stage_timeout),
    };
    if (getenv("PB_TEST_FILTER")) /* one test by name, while working on it */
        cmocka_set_test_filter(getenv("PB_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, pb_test_tmpdir_teardown);
}
