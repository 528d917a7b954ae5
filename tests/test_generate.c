/* pipelines/generate: the size range every generator reads, the seeded
 * corrupt-file pick, and the random-bytes generator writing a whole folder
 * or none. JPEG and video generation are tested with their decoders
 * (test_jpeg, test_video). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/pb.h"
#include "pipelines/generate.h"
#include "tests/testutil.h"

static void test_size_range(void **state)
{
    (void)state;
    int a, b, c, d;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_parse_size_range("640x480", &a, &b, &c, &d, msg, sizeof(msg)), PB_OK);
    assert_true(a == 640 && b == 480 && c == 640 && d == 480);
    assert_int_equal(pb_parse_size_range("400x300-600x450", &a, &b, &c, &d, msg, sizeof(msg)),
                     PB_OK);
    assert_true(a == 400 && b == 300 && c == 600 && d == 450);

    assert_int_equal(pb_parse_size_range("640", &a, &b, &c, &d, msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "size must be WxH or WxH-WxH, got '640'");
    assert_int_equal(pb_parse_size_range("64x48 ", &a, &b, &c, &d, msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    static const char *const out_of_range[] = {"0x10", "10x0", "600x450-400x300", "20000x10"};
    for (size_t i = 0; i < PB_ARRAY_LEN(out_of_range); i++) {
        assert_int_equal(pb_parse_size_range(out_of_range[i], &a, &b, &c, &d, msg, sizeof(msg)),
                         PB_ERR_CONFIG);
        assert_non_null(strstr(msg, "must have sides between 1 and 16384"));
    }
}

static void test_corrupt_pick(void **state)
{
    (void)state;
    struct pb_generate_spec spec = {.seed = 5, .corrupt_fraction = 0};
    for (int64_t i = 0; i < 1000; i++)
        assert_false(pb_generate_is_corrupt(&spec, i));
    spec.corrupt_fraction = 0.25;
    int picked = 0;
    for (int64_t i = 0; i < 20000; i++) {
        bool corrupt = pb_generate_is_corrupt(&spec, i);
        assert_int_equal(corrupt, pb_generate_is_corrupt(&spec, i)); /* seeded */
        picked += corrupt;
    }
    /* A quarter, within a few standard deviations (about 61 files). */
    assert_in_range(picked, 5000 - 300, 5000 + 300);
    spec.corrupt_fraction = 1;
    assert_true(pb_generate_is_corrupt(&spec, 7));
}

static size_t count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(d);
    return n;
}

static void test_generate_files(void **state)
{
    (void)state;
    struct pb_generate_spec spec = {.kind = PB_GENERATE_FILES, .count = 40, .size_bytes = 999,
                                    .seed = 11, .corrupt_fraction = 0.3};
    char workdir[] = "/tmp/pbench-generate-XXXXXX";
    assert_int_equal(pb_test_tmpdir_make(workdir), 0);
    char dir[PB_PATH_MAX], msg[PB_MSG_MAX];
    snprintf(dir, sizeof(dir), "%s/deep/er/data", workdir);
    assert_int_equal(pb_dataset_generate(&spec, dir, msg, sizeof(msg)), PB_OK);
    assert_int_equal(count_entries(dir, "sample_"), 40);
    char parent[PB_PATH_MAX];
    snprintf(parent, sizeof(parent), "%s/deep/er", workdir);
    assert_int_equal(count_entries(parent, "data.tmp-"), 0); /* renamed into place */
    for (int64_t i = 0; i < spec.count; i++) {
        char path[PB_PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/sample_%07lld.bin", dir, (long long)i);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_size, pb_generate_is_corrupt(&spec, i) ? 999 / 3 : 999);
    }

    /* A folder that cannot be made: an error naming it, and nothing left. */
    char blocker[PB_PATH_MAX];
    snprintf(blocker, sizeof(blocker), "%s/file", workdir);
    pb_test_write_file(blocker, "", 0);
    snprintf(dir, sizeof(dir), "%s/file/data", workdir);
    assert_int_equal(pb_dataset_generate(&spec, dir, msg, sizeof(msg)), PB_ERR);
    assert_non_null(strstr(msg, "cannot create"));

    assert_int_equal(pb_test_tmpdir_remove(workdir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_range),
        cmocka_unit_test(test_corrupt_pick),
        cmocka_unit_test(test_generate_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
