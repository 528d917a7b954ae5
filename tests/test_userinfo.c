/* Passwords in dataset URLs (bench/base/userinfo.h): taken out of the URL
 * as the config is read, kept by origin for the requests, and in no spec,
 * resolved config, sweep label or error message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/base/userinfo.h"
#include "bench/config/config.h"
#include "bench/config/sweep.h"

#define PASS "pbench-url-pass-51c3"

static int forget(void **state)
{
    (void)state;
    pb_userinfo_forget_all();
    return 0;
}

static void test_take_and_find(void **state)
{
    (void)state;
    char url[256] = "http://user:" PASS "@127.0.0.1:9000/data/", user[64], password[64],
         source[64];
    assert_true(pb_userinfo_take(url, "dataset.path"));
    assert_string_equal(url, "http://127.0.0.1:9000/data/");
    assert_true(pb_userinfo_find("http://127.0.0.1:9000/data/x.jpg", user, sizeof user, password,
                                 sizeof password, source, sizeof source));
    assert_string_equal(user, "user");
    assert_string_equal(password, PASS);
    assert_string_equal(source, "dataset.path");
    /* Another origin (host, port or scheme) has none. */
    assert_false(pb_userinfo_find("http://127.0.0.1:9001/data/", user, sizeof user, password,
                                  sizeof password, source, sizeof source));
    assert_string_equal(password, "");
    assert_false(pb_userinfo_find("https://127.0.0.1:9000/", NULL, 0, NULL, 0, NULL, 0));
    assert_true(pb_userinfo_find("HTTP://127.0.0.1:9000", NULL, 0, NULL, 0, NULL, 0));
    /* Percent-encoded parts are decoded; the last '@' ends the userinfo. */
    char enc[] = "https://u%40corp:p%3Aq@ss@h.example/x";
    assert_true(pb_userinfo_take(enc, "dataset.endpoint"));
    assert_string_equal(enc, "https://h.example/x");
    assert_true(pb_userinfo_find(enc, user, sizeof user, password, sizeof password, NULL, 0));
    assert_string_equal(user, "u@corp");
    assert_string_equal(password, "p:q@ss");
    /* A user without a password. */
    char bare[] = "http://only@h2/";
    assert_true(pb_userinfo_take(bare, "dataset.path"));
    assert_string_equal(bare, "http://h2/");
    assert_true(pb_userinfo_find(bare, user, sizeof user, password, sizeof password, NULL, 0));
    assert_string_equal(user, "only");
    assert_string_equal(password, "");
    /* Nothing to take: '@' in a path, a local path, no scheme. */
    char path_at[] = "http://h/x@y", local[] = "data/u:p@x", s3key[] = "s3://b/k@1";
    assert_false(pb_userinfo_take(path_at, "dataset.path"));
    assert_false(pb_userinfo_take(local, "dataset.path"));
    assert_false(pb_userinfo_take(s3key, "dataset.path"));
    assert_string_equal(path_at, "http://h/x@y");
    assert_string_equal(local, "data/u:p@x");
    /* A later one for the same origin replaces it; forgetting wipes all. */
    char again[] = "http://user:other@127.0.0.1:9000/";
    assert_true(pb_userinfo_take(again, "dataset.manifest"));
    assert_true(pb_userinfo_find(again, NULL, 0, password, sizeof password, source, sizeof source));
    assert_string_equal(password, "other");
    assert_string_equal(source, "dataset.manifest");
    pb_userinfo_forget_all();
    assert_false(pb_userinfo_find(again, NULL, 0, NULL, 0, NULL, 0));
}

static void test_more_origins_than_kept(void **state)
{
    (void)state;
    char url[64];
    for (int i = 0; i < PB_USERINFO_MAX + 2; i++) {
        snprintf(url, sizeof url, "http://u:p%d@h%d/", i, i);
        assert_true(pb_userinfo_take(url, "dataset.path"));
        assert_null(strchr(url, '@')); /* taken out even when an older one gives way */
    }
    char password[16];
    assert_false(pb_userinfo_find("http://h0/", NULL, 0, NULL, 0, NULL, 0)); /* the oldest */
    assert_true(pb_userinfo_find("http://h9/", NULL, 0, password, sizeof password, NULL, 0));
    assert_string_equal(password, "p9");
}

static void test_redact(void **state)
{
    (void)state;
    char out[256];
    assert_string_equal(pb_userinfo_redact("-s dataset.path=http://user:" PASS "@h:1/x: too long",
                                           out, sizeof out),
                        "-s dataset.path=http://***@h:1/x: too long");
    assert_string_equal(pb_userinfo_redact("'https://a:b@h/' and s3://k:s@bkt/p, mail x@y.z", out,
                                           sizeof out),
                        "'https://***@h/' and s3://***@bkt/p, mail x@y.z");
    assert_string_equal(pb_userinfo_redact("http://h/a@b no userinfo", out, sizeof out),
                        "http://h/a@b no userinfo");
    assert_string_equal(pb_userinfo_redact("http://u:p@h", out, 12), "http://***@");
    char msg[64] = "x http://u:" PASS "@h/";
    pb_userinfo_redact_msg(msg, sizeof msg);
    assert_string_equal(msg, "x http://***@h/");
}

/* The config layer: -s, YAML and -a take the password out as they read the
 * value, so the spec, its JSON (the result's config) and the errors that
 * quote what was typed never hold it. */
static void test_config_never_holds_it(void **state)
{
    (void)state;
    struct pb_spec spec;
    char msg[PB_MSG_MAX * 2];
    const char *yaml = "name: t\ndataset:\n  path: https://reader:" PASS "@store.example/train/\n"
                       "  endpoint: http://k:" PASS "@127.0.0.1:9000\n"
                       "  manifest: https://m:" PASS "@lists.example/m.txt\n"
                       "pipeline: [read]\n";
    assert_int_equal(pb_config_load_string(yaml, "t.yaml", &spec, msg, sizeof msg), PB_OK);
    assert_string_equal(spec.dataset.path, "https://store.example/train/");
    assert_string_equal(spec.dataset.endpoint, "http://127.0.0.1:9000");
    assert_string_equal(spec.dataset.manifest, "https://lists.example/m.txt");
    char source[64];
    assert_true(pb_userinfo_find(spec.dataset.path, NULL, 0, NULL, 0, source, sizeof source));
    assert_string_equal(source, "dataset.path");
    assert_int_equal(pb_config_override(&spec, "dataset.path=http://u:" PASS "@h/d/", msg,
                                        sizeof msg), PB_OK);
    assert_string_equal(spec.dataset.path, "http://h/d/");
    /* Sweep labels show the value as the config holds it. */
    assert_int_equal(pb_config_sweep_axis(&spec, "dataset.endpoint=http://a:" PASS "@h:1,"
                                                 "http://a:" PASS "@h:2", msg, sizeof msg),
                     PB_OK);
    for (int i = 0; i < spec.sweep->axes[0].value_count; i++)
        assert_null(strstr(spec.sweep->axes[0].values[i], PASS));
    json_t *j = pb_spec_to_json(&spec);
    char *text = json_dumps(j, 0);
    assert_null(strstr(text, PASS));
    assert_non_null(strstr(text, "http://h/d/"));
    free(text);
    json_decref(j);
    /* Errors that quote the assignment quote it without the password. */
    assert_int_equal(pb_config_override(&spec, "dataset.pth=http://u:" PASS "@h/d/", msg,
                                        sizeof msg), PB_ERR_CONFIG);
    assert_null(strstr(msg, PASS));
    assert_non_null(strstr(msg, "http://***@h/d/"));
    assert_int_equal(pb_config_sweep_axis(&spec, "dataset.nope=http://u:" PASS "@h/", msg,
                                          sizeof msg), PB_ERR_CONFIG);
    assert_null(strstr(msg, PASS));
    pb_spec_free(&spec);
    const char *bad = "name: t\ndataset:\n  path: http://u:" PASS "@h/\n  pth: http://u:" PASS
                      "@h/\npipeline: [read]\n";
    assert_int_equal(pb_config_load_string(bad, "t.yaml", &spec, msg, sizeof msg), PB_ERR_CONFIG);
    assert_null(strstr(msg, PASS));
    pb_spec_free(&spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_take_and_find, forget),
        cmocka_unit_test_setup(test_more_origins_than_kept, forget),
        cmocka_unit_test_setup(test_redact, forget),
        cmocka_unit_test_setup(test_config_never_holds_it, forget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
