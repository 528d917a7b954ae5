/* Atomic file writing (bench/base/fileio.c): a regular file is replaced whole;
 * a symbolic link keeps being a link and its target gets the contents; a
 * FIFO, a directory or a device is refused and left as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/base/fileio.h"
#include "bench/base/pb.h"
#include "tests/testutil.h"

static char workdir[] = "/tmp/pbench-fileio-XXXXXX";

static int fill_hello(FILE *f, void *user)
{
    return fputs((const char *)user, f) == EOF ? -1 : 0;
}

/* workdir/name into path. */
static void at(const char *name, char *path, size_t pathlen)
{
    snprintf(path, pathlen, "%s/%s", workdir, name);
}

/* Whether the folder holding path has a leftover temporary file. */
static bool temp_left(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "ls '%s' | grep -q '\\.tmp\\.'", workdir);
    return system(cmd) == 0;
}

static void test_regular_file_replaced(void **state)
{
    (void)state;
    char path[512], msg[PB_MSG_MAX];
    at("plain.json", path, sizeof(path));
    pb_test_write_file(path, "old contents, longer than the new", 33);
    assert_int_equal(pb_write_atomic(path, fill_hello, "new", msg, sizeof(msg)), PB_OK);
    char *text = pb_test_read_file(path, NULL, true);
    assert_string_equal(text, "new");
    free(text);
    assert_false(temp_left());
}

/* Makes workdir/name a symbolic link to to and writes its path into path. */
static void make_link(const char *to, const char *name, char *path, size_t pathlen)
{
    at(name, path, pathlen);
    assert_int_equal(symlink(to, path), 0);
}

/* Writes contents through link, which stays a link, into workdir/file. */
static void expect_written_through(const char *link, const char *file, const char *contents)
{
    char msg[PB_MSG_MAX], path[512];
    assert_int_equal(pb_write_atomic(link, fill_hello, (void *)contents, msg, sizeof(msg)), PB_OK);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    at(file, path, sizeof(path));
    char *text = pb_test_read_file(path, NULL, true);
    assert_string_equal(text, contents);
    free(text);
}

static void test_symlink_writes_its_target(void **state)
{
    (void)state;
    char target[512], link[512], chain[512], msg[PB_MSG_MAX];
    at("target.json", target, sizeof(target));
    pb_test_write_file(target, "old", 3);
    /* A relative link, resolved from the link's own folder, and a chain. */
    make_link("target.json", "link.json", link, sizeof(link));
    make_link(link, "chain.json", chain, sizeof(chain));
    expect_written_through(chain, "target.json", "through");
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    /* A dangling link: the file it names is created. */
    char dangling[512];
    make_link("made.json", "dangling.json", dangling, sizeof(dangling));
    expect_written_through(dangling, "made.json", "made");
    /* A loop of links is refused. */
    char loop_a[512], loop_b[512];
    make_link("loop-b", "loop-a", loop_a, sizeof(loop_a));
    make_link("loop-a", "loop-b", loop_b, sizeof(loop_b));
    assert_int_equal(pb_write_atomic(loop_a, fill_hello, "x", msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, "symbolic links"));
    assert_false(temp_left());
}

/* path is refused with "is KIND, not a file" and left as it was. */
static void expect_refused(const char *path, const char *kind, mode_t type)
{
    char msg[PB_MSG_MAX], want[256];
    assert_int_equal(pb_write_atomic(path, fill_hello, "x", msg, sizeof(msg)), PB_ERR);
    snprintf(want, sizeof(want), "%s: is %s, not a file; give a file path", path, kind);
    assert_string_equal(msg, want);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_mode & S_IFMT, type);
    char target[PB_PATH_MAX];
    assert_int_equal(pb_output_target(path, target, sizeof(target), msg, sizeof(msg)),
                     PB_ERR_CONFIG);
}

static void test_fifo_directory_device_refused(void **state)
{
    (void)state;
    char fifo[512], dir[512], link[512], msg[PB_MSG_MAX];
    at("fifo", fifo, sizeof(fifo));
    assert_int_equal(mkfifo(fifo, 0600), 0);
    expect_refused(fifo, "a FIFO", S_IFIFO);
    at("folder", dir, sizeof(dir));
    assert_int_equal(mkdir(dir, 0700), 0);
    expect_refused(dir, "a directory", S_IFDIR);
    expect_refused("/dev/null", "a character device", S_IFCHR);
    /* A link to a device names both. */
    make_link("/dev/null", "to-null", link, sizeof(link));
    assert_int_equal(pb_write_atomic(link, fill_hello, "x", msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, "links to /dev/null, which is a character device"));
    /* A path ending in '/' names a folder. */
    char slash[512];
    at("new-folder/", slash, sizeof(slash));
    assert_int_equal(pb_write_atomic(slash, fill_hello, "x", msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, "names a folder"));
    assert_false(temp_left());
}

/* Claims in one second of one name: NAME.json, then NAME-2.json and
 * NAME-3.json, each made empty; three processes claiming at once get three
 * names. An empty claim is given back, a written one stays. */
static void test_claim_new_file_unique(void **state)
{
    (void)state;
    char stem[512], path[PB_PATH_MAX], msg[PB_MSG_MAX];
    at("claims/r-20250101-000000", stem, sizeof(stem));
    char folder[512];
    at("claims", folder, sizeof(folder));
    assert_int_equal(mkdir(folder, 0755), 0);
    const char *want[] = {"r-20250101-000000.json", "r-20250101-000000-2.json",
                          "r-20250101-000000-3.json"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pb_claim_new_file(stem, ".json", path, sizeof(path), msg, sizeof(msg)),
                         PB_OK);
        assert_string_equal(strrchr(path, '/') + 1, want[i]);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_size, 0);
    }
    /* Written into: kept; still empty: removed. */
    assert_int_equal(pb_write_atomic(path, fill_hello, "result", msg, sizeof(msg)), PB_OK);
    pb_release_claim(path);
    assert_int_equal(access(path, F_OK), 0);
    at("claims/r-20250101-000000-2.json", path, sizeof(path));
    pb_release_claim(path);
    assert_int_equal(access(path, F_OK), -1);

    /* Three processes at once: three names, none shared. */
    at("claims/p", stem, sizeof(stem));
    pid_t kids[3];
    for (int i = 0; i < 3; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0)
            _exit(pb_claim_new_file(stem, ".json", path, sizeof(path), msg, sizeof(msg)) == PB_OK
                      ? 0
                      : 1);
    }
    for (int i = 0; i < 3; i++) {
        int status;
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    const char *names[] = {"claims/p.json", "claims/p-2.json", "claims/p-3.json"};
    for (int i = 0; i < 3; i++) {
        at(names[i], path, sizeof(path));
        assert_int_equal(access(path, F_OK), 0);
    }
    /* No folder: said, nothing made. */
    at("no-such-folder/r", stem, sizeof(stem));
    assert_int_equal(pb_claim_new_file(stem, ".json", path, sizeof(path), msg, sizeof(msg)),
                     PB_ERR);
    assert_non_null(strstr(msg, "no-such-folder"));
}

/* An output path is checked before a run: a missing folder (given, or
 * reached through a dangling link) and a folder that takes no file are
 * refused with a sentence naming them, and no folder is created; a good
 * path is left as it was (nothing made there). */
static void test_output_check(void **state)
{
    (void)state;
    char path[600], link[512], msg[PB_MSG_MAX];
    at("missing/deeper/x.json", path, sizeof(path));
    assert_int_equal(pb_output_check(path, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "does not exist"));
    at("missing", path, sizeof(path));
    assert_int_equal(access(path, F_OK), -1);
    make_link("gone/x.json", "dangling-out.json", link, sizeof(link));
    assert_int_equal(pb_output_check(link, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "links to"));
    assert_non_null(strstr(msg, "does not exist"));
    /* A folder that takes no file: read-only for a user, /sys for root. */
    char locked[512];
    at("locked", locked, sizeof(locked));
    assert_int_equal(mkdir(locked, 0555), 0);
    snprintf(path, sizeof(path), "%s/x.json", locked);
    if (geteuid() == 0)
        snprintf(path, sizeof(path), "/sys/pbench-no-such-file.json");
    assert_int_equal(pb_output_check(path, msg, sizeof(msg)), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "cannot create a file in"));
    at("fine.json", path, sizeof(path));
    assert_int_equal(pb_output_check(path, msg, sizeof(msg)), PB_OK);
    assert_int_equal(access(path, F_OK), -1);
    assert_false(temp_left());
}

/* One file by two names (a link, a hard link, "." and "..") is the same
 * file; a file not yet made is compared by its resolved path. */
static void test_same_file(void **state)
{
    (void)state;
    char file[512], sym[512], hard[512], sub[512], dotted[512], other[512];
    at("same.yaml", file, sizeof(file));
    pb_test_write_file(file, "x", 1);
    make_link("same.yaml", "same-link.yaml", sym, sizeof(sym));
    at("same-sub", sub, sizeof(sub));
    assert_int_equal(mkdir(sub, 0755), 0);
    at("same-hard.yaml", hard, sizeof(hard));
    assert_int_equal(link(file, hard), 0);
    snprintf(dotted, sizeof(dotted), "%s/./same-sub/../same.yaml", workdir);
    assert_true(pb_same_file(file, sym));
    assert_true(pb_same_file(file, hard));
    assert_true(pb_same_file(dotted, file));
    at("not-yet.json", other, sizeof(other));
    assert_false(pb_same_file(file, other));
    snprintf(dotted, sizeof(dotted), "%s/same-sub/../not-yet.json", workdir);
    assert_true(pb_same_file(dotted, other));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regular_file_replaced),
        cmocka_unit_test(test_symlink_writes_its_target),
        cmocka_unit_test(test_fifo_directory_device_refused),
        cmocka_unit_test(test_claim_new_file_unique),
        cmocka_unit_test(test_output_check),
        cmocka_unit_test(test_same_file),
    };
    pb_test_tmpdir_use(workdir);
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
