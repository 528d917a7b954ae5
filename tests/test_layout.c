/* The shape of the tree (docs/architecture.md): bench/ holds folders by
 * concern and no loose sources, and each folder of bench/, pipelines/,
 * decoders/ and kernels/ includes only the folders its rule allows, so no
 * include runs back up and no two folders depend on each other.
 *
 * The rules are the table below. A change that needs a new edge changes
 * the table, in review, with docs/architecture.md; a change that breaks
 * one fails here, naming the file, the line and what it may include.
 * scripts/include-graph.py counts the same graph at the level of modules,
 * calls included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Each folder and the folders it may include besides itself, lowest
 * first. bench/cli is the command line: it may include everything. */
static const struct rule {
    const char *folder;
    const char *may_include[12];
} rules[] = {
    {"bench/base", {NULL}},
    {"kernels", {"bench/base", NULL}},
    {"decoders", {"bench/base", "kernels", NULL}},
    {"pipelines", {"bench/base", "kernels", "decoders", NULL}},
    {"bench/sys", {"bench/base", "kernels", NULL}},
    {"bench/result", {"bench/base", "bench/sys", NULL}},
    {"bench/analyze", {"bench/base", "bench/result", NULL}},
    /* The config holds the analysis section's thresholds (struct
     * pb_analysis_spec), so it sits above analyze. */
    {"bench/config",
     {"bench/base", "bench/sys", "kernels", "decoders", "pipelines", "bench/analyze", NULL}},
    {"bench/run",
     {"bench/base", "bench/sys", "kernels", "decoders", "pipelines", "bench/result", "bench/config",
      NULL}},
    {"bench/report", {"bench/base", "bench/result", "bench/analyze", NULL}},
    {"bench/session",
     {"bench/base", "bench/sys", "kernels", "decoders", "pipelines", "bench/result",
      "bench/analyze", "bench/config", "bench/run", NULL}},
    {"bench/cli",
     {"bench/base", "bench/sys", "kernels", "decoders", "pipelines", "bench/result",
      "bench/analyze", "bench/config", "bench/run", "bench/report", "bench/session", NULL}},
};

static const struct rule *rule_of(const char *folder)
{
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        if (strcmp(rules[i].folder, folder) == 0)
            return &rules[i];
    return NULL;
}

/* The folder part of a path ("bench/run/runner.c" -> "bench/run"). */
static void folder_of(const char *path, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%s", path);
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
    else
        buf[0] = '\0';
}

/* Whether file (a path from the source root) may include target (the
 * quoted path of an #include). Includes outside pbench's folders (a
 * system header, tests/) are not this table's business. Writes why not. */
static bool include_allowed(const char *file, const char *target, char *why, size_t whylen)
{
    char from[256], to[256];
    folder_of(file, from, sizeof(from));
    folder_of(target, to, sizeof(to));
    if (strcmp(from, to) == 0 || !rule_of(to))
        return true;
    const struct rule *r = rule_of(from);
    if (!r) {
        snprintf(why, whylen, "%s is in no folder of the layout", file);
        return false;
    }
    for (int i = 0; i < 12 && r->may_include[i]; i++)
        if (strcmp(r->may_include[i], to) == 0)
            return true;
    size_t used = (size_t)snprintf(why, whylen, "%s includes %s, but %s/ may include only", file,
                                   target, from);
    for (int i = 0; i < 12 && r->may_include[i] && used < whylen; i++)
        used += (size_t)snprintf(why + used, whylen - used, " %s/", r->may_include[i]);
    if (!r->may_include[0] && used < whylen)
        snprintf(why + used, whylen - used, " itself");
    return false;
}

/* Checks every quoted #include of text (the contents of file); returns
 * how many break a rule, printing each with its line on report (NULL:
 * quiet). */
static int check_text(const char *file, const char *text, FILE *report)
{
    int broken = 0, line = 1;
    for (const char *p = text; *p; line++) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *q = p;
        while (q < p + len && (*q == ' ' || *q == '\t'))
            q++;
        char target[256];
        if (sscanf(q, "#include \"%255[^\"]\"", target) == 1) {
            char why[512];
            if (!include_allowed(file, target, why, sizeof(why))) {
                if (report)
                    fprintf(report, "%s:%d: %s\n", file, line, why);
                broken++;
            }
        }
        p += len + (end != NULL);
    }
    return broken;
}

static const char *source_dir(void)
{
    const char *dir = getenv("PBENCH_SOURCE_DIR");
    return dir && dir[0] ? dir : ".";
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, f) != (size_t)size) {
        free(text);
        text = NULL;
    }
    if (text)
        text[size] = '\0';
    fclose(f);
    return text;
}

static bool is_source(const char *name)
{
    size_t n = strlen(name);
    return (n > 2 && (strcmp(name + n - 2, ".c") == 0 || strcmp(name + n - 2, ".h") == 0)) ||
           (n > 3 && strcmp(name + n - 3, ".cu") == 0);
}

/* Checks every source file below rel (a folder from the source root),
 * skipping bench/peers (programs of their own); counts files and broken
 * includes. */
static void check_folder(const char *rel, int *files, int *broken)
{
    if (strcmp(rel, "bench/peers") == 0)
        return;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", source_dir(), rel);
    DIR *d = opendir(path);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char child[512], full[1536];
        snprintf(child, sizeof(child), "%s/%s", rel, e->d_name);
        snprintf(full, sizeof(full), "%s/%s", source_dir(), child);
        struct stat st;
        if (stat(full, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            check_folder(child, files, broken);
        } else if (is_source(e->d_name)) {
            char *text = read_file(full);
            assert_non_null(text);
            *broken += check_text(child, text, stderr);
            (*files)++;
            free(text);
        }
    }
    closedir(d);
}

static void test_every_include_keeps_the_rules(void **state)
{
    (void)state;
    int files = 0, broken = 0;
    const char *const tops[] = {"bench", "pipelines", "decoders", "kernels"};
    for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++)
        check_folder(tops[i], &files, &broken);
    assert_true(files > 150); /* the tree was found and read */
    assert_int_equal(broken, 0);
}

/* bench/ itself holds folders only: a loose source file has no rule. */
static void test_bench_holds_folders_only(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/bench", source_dir());
    DIR *d = opendir(path);
    assert_non_null(d);
    struct dirent *e;
    int folders = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (is_source(e->d_name))
            fprintf(stderr, "bench/%s: a loose source file; put it in the folder of its concern\n",
                    e->d_name);
        assert_false(is_source(e->d_name));
        char rel[300];
        snprintf(rel, sizeof(rel), "bench/%s", e->d_name);
        folders += rule_of(rel) != NULL;
    }
    closedir(d);
    assert_int_equal(folders, 9); /* base sys result analyze config run report session cli */
}

/* The checker itself: a deliberate bad include is caught, with the file,
 * the line and what is allowed; good ones are not. */
static void test_a_bad_include_is_caught(void **state)
{
    (void)state;
    assert_int_equal(
        check_text("bench/base/hist.c", "#include \"bench/base/pb.h\"\n#include <stdio.h>\n", NULL),
        0);
    assert_int_equal(
        check_text("bench/base/hist.c", "/* x */\n#include \"bench/run/runner.h\"\n", NULL), 1);
    assert_int_equal(check_text("decoders/jpeg.c", "  #include \"pipelines/stage.h\"\n", NULL), 1);
    assert_int_equal(check_text("bench/analyze/compare.c",
                                "#include \"bench/report/report.h\"\n"
                                "#include \"bench/result/result.h\"\n",
                                NULL),
                     1);
    assert_int_equal(check_text("bench/cli/main.c",
                                "#include \"bench/session/session.h\"\n"
                                "#include \"bench/report/format.h\"\n",
                                NULL),
                     0);
    char why[512];
    assert_false(include_allowed("bench/sys/mpi.h", "bench/run/runner.h", why, sizeof(why)));
    assert_string_equal(why, "bench/sys/mpi.h includes bench/run/runner.h, but bench/sys/ may "
                             "include only bench/base/ kernels/");
    assert_false(include_allowed("bench/base/opt.c", "bench/sys/machine.h", why, sizeof(why)));
    assert_string_equal(why, "bench/base/opt.c includes bench/sys/machine.h, but bench/base/ may "
                             "include only itself");
    /* tests/ is in no folder of the layout: its own includes are free,
     * but a file there is never taken for one of pbench's folders. */
    assert_false(include_allowed("tests/test_x.c", "bench/run/runner.h", why, sizeof(why)));
    assert_true(include_allowed("bench/run/runner.c", "tests/testutil.h", why, sizeof(why)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_include_keeps_the_rules),
        cmocka_unit_test(test_bench_holds_folders_only),
        cmocka_unit_test(test_a_bad_include_is_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
