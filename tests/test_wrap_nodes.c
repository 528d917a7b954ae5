/* pbench wrap across machines (docs/wrap.md, "Across machines"), for real on
 * one machine: two "nodes", each a network namespace on a bridge with an
 * address of its own, its own hostname and a private /tmp and /run
 * (unshare --uts --mount), so that only TCP reaches the head, as on a
 * cluster. The head's pbench wrap --listen starts a launcher that starts one
 * rank of the example job (DDP over gloo, on CPU) in each node with the
 * environment passed on, as srun would; the result holds one row per rank
 * with its host, samples/s and stall. A connection from outside the job,
 * without the token, is refused and counted, and the figures are still
 * there. Skipped, saying why, where namespaces cannot be made (not root, no
 * ip or unshare) or torch is missing; the namespaces and the bridge are
 * removed even when a check fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"

#define NODES 2 /* the nodes of a job, but the 3-node case's */
#define MADE 3  /* the nodes made */

/* Outside /tmp: the nodes see the head's folders but not its /tmp, as
 * ranks on a cluster see its shared storage. */
static char workdir[] = "/var/tmp/pbench-wrap-nodes-XXXXXX";
static char tag[16];    /* this run's names: namespaces, bridge, veths */
static int subnet;      /* 10.79.SUBNET.0/24 */
static pid_t head = -1; /* the pbench wrap under test, while it runs */
static pid_t joiner = -1; /* a node's pbench wrap --join, while it runs */
static pid_t third = -1;  /* the third node's, in the 3-node case */

/* Runs a shell command line; its exit status (-1: it did not exit). */
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int status = system(cmd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Removes what make_nodes made: what still runs in a node, the nodes, the
 * bridge. Quiet where something is already gone. */
static void remove_nodes(void)
{
    pid_t *ours[] = {&head, &joiner, &third};
    for (size_t i = 0; i < 3; i++)
        if (*ours[i] > 0) {
            kill(*ours[i], SIGKILL);
            waitpid(*ours[i], NULL, 0);
            *ours[i] = -1;
        }
    for (int k = 1; k <= MADE; k++)
        sh("ip netns pids %s-%d 2>/dev/null | xargs -r kill -9 2>/dev/null; "
           "ip netns del %s-%d 2>/dev/null",
           tag, k, tag, k);
    sh("ip link del %sbr 2>/dev/null", tag);
}

/* The bridge (the head at 10.79.S.1) and NODES namespaces on it (node K at
 * 10.79.S.(10+K), its interface eth0); NULL, or why they cannot be made. */
static const char *make_nodes(void)
{
    if (geteuid() != 0)
        return "not root: network namespaces need it (CI runs this as root)";
    if (sh("command -v ip >/dev/null && command -v unshare >/dev/null") != 0)
        return "no ip or unshare here (iproute2, util-linux)";
    if (sh("set -e; ip link add %sbr type bridge; ip addr add 10.79.%d.1/24 dev %sbr; "
           "ip link set %sbr up",
           tag, subnet, tag, tag) != 0)
        return "ip link add ... type bridge failed (no bridge support, or no CAP_NET_ADMIN)";
    for (int k = 1; k <= MADE; k++)
        if (sh("set -e; ip netns add %s-%d; ip link add %sh%d type veth peer name %sn%d; "
               "ip link set %sh%d master %sbr up; ip link set %sn%d netns %s-%d; "
               "ip -n %s-%d link set %sn%d name eth0; "
               "ip -n %s-%d addr add 10.79.%d.%d/24 dev eth0; ip -n %s-%d link set eth0 up; "
               "ip -n %s-%d link set lo up; ip -n %s-%d route add default via 10.79.%d.1",
               tag, k, tag, k, tag, k, tag, k, tag, tag, k, tag, k, tag, k, tag, k, tag, k,
               subnet, 10 + k, tag, k, tag, k, tag, k, subnet) != 0)
            return "ip netns add or a veth pair failed (no network namespaces here)";
    return NULL;
}

/* A free TCP port on the head's address. */
static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    char head_addr[32];
    snprintf(head_addr, sizeof head_addr, "10.79.%d.1", subnet);
    inet_pton(AF_INET, head_addr, &a.sin_addr);
    socklen_t len = sizeof a;
    assert_true(s >= 0);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
    close(s);
    return ntohs(a.sin_port);
}

/* Connects to the head's relay at port (retrying while pbench starts),
 * sends bytes and closes; whether it got through. */
static bool intrude(int port, const void *bytes, size_t len)
{
    char head_addr[32];
    snprintf(head_addr, sizeof head_addr, "10.79.%d.1", subnet);
    for (int attempt = 0; attempt < 300; attempt++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        inet_pton(AF_INET, head_addr, &a.sin_addr);
        if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
            bool sent = send(s, bytes, len, MSG_NOSIGNAL) == (ssize_t)len;
            nanosleep(&(struct timespec){.tv_nsec = 200000000}, NULL);
            close(s);
            return sent;
        }
        if (s >= 0)
            close(s);
        nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
    }
    return false;
}

/* The last job account of the result's first point. */
static const json_t *last_job(const json_t *r)
{
    const json_t *jobs = json_object_get(
        json_object_get(json_array_get(json_object_get(r, "points"), 0), "engine"), "jobs");
    assert_true(json_array_size(jobs) > 0);
    return json_array_get(jobs, json_array_size(jobs) - 1);
}

static int teardown_nodes(void **state)
{
    (void)state;
    remove_nodes();
    return 0;
}

/* Two nodes, one rank each, one result: a row per rank with its host. */
static void test_two_nodes_one_result(void **state)
{
    (void)state;
    if (!pb_test_have_torch()) {
        fprintf(stderr, "skipped: torch is not installed: apt-get install python3-torch "
                        "python3-torchvision\n");
        skip();
    }
    const char *why = make_nodes();
    if (why) {
        fprintf(stderr, "skipped: %s\n", why);
        skip();
    }
    const char *src = getenv("PBENCH_SOURCE_DIR");
    int port = free_port();
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && exec '%s' wrap --listen 10.79.%d.1:%d --warmup-batches 2 --time 4 "
             "--grace 2 -o nodes.json -- /usr/bin/python3 %s/tests/wrap_jobs/nodes_launch.py "
             "--master 10.79.%d.11 --port %d --netns %s-1 --netns %s-2 -- /usr/bin/python3 "
             "%s/examples/train/train.py --ddp --data %s/photos --images 128 --size 48 "
             "--crop 32 --batch-size 8 --workers 1 --epochs 100000 >out.txt 2>err.txt",
             workdir, getenv("PBENCH_BINARY"), subnet, port, src, subnet,
             20000 + (int)(getpid() % 20000), tag, tag, src, workdir);
    head = fork();
    assert_true(head >= 0);
    if (head == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    /* From outside the job: a hello with a wrong token, and bytes that are
     * no frame at all (an HTTP request). */
    static const char wrong[] = "{\"type\":\"hello\",\"token\":\"0123\",\"pid\":1}";
    unsigned char frame[8 + sizeof wrong];
    uint32_t head_words[2] = {(uint32_t)(sizeof wrong - 1 + 4), 1}; /* little-endian hosts */
    memcpy(frame, head_words, 8);
    memcpy(frame + 8, wrong, sizeof wrong - 1);
    assert_true(intrude(port, frame, 8 + sizeof wrong - 1));
    static const char http[] = "GET / HTTP/1.0\r\n\r\n";
    assert_true(intrude(port, http, sizeof http - 1));
    int status = 0;
    assert_int_equal(waitpid(head, &status, 0), head);
    head = -1;
    char path[600];
    snprintf(path, sizeof path, "%s/err.txt", workdir);
    char *err = pb_test_read_file(path, NULL, false);
    snprintf(path, sizeof path, "%s/out.txt", workdir);
    char *out = pb_test_read_file(path, NULL, false);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("pbench wrap across 2 nodes: status %d: %s", status, err);
    json_t *r = pb_test_load_json(workdir, "nodes.json");
    const json_t *job = last_job(r), *rows = json_object_get(job, "rank_rows");
    if (json_array_size(rows) != NODES)
        fail_msg("%zu rank rows, not %d: %s", json_array_size(rows), NODES,
                 json_dumps(job, JSON_COMPACT));
    for (size_t i = 0; i < NODES; i++) {
        const json_t *row = json_array_get(rows, i);
        char host[16];
        snprintf(host, sizeof host, "node%zu", i + 1);
        assert_int_equal(json_integer_value(json_object_get(row, "rank")), (json_int_t)i);
        assert_string_equal(json_string_value(json_object_get(row, "host")), host);
        assert_int_equal(json_integer_value(json_object_get(row, "local_rank")), 0);
        assert_true(json_number_value(json_object_get(row, "samples_per_s")) > 0);
        assert_true(json_is_number(json_object_get(row, "stall_pct")));
        assert_non_null(strstr(out, host)); /* the table's rank row names it */
    }
    /* Both nodes came over TCP, each with its clock measured. */
    const json_t *nodes = json_object_get(job, "nodes"), *node;
    size_t i, tcp = 0;
    json_array_foreach(nodes, i, node)
    {
        if (strcmp(json_string_value(json_object_get(node, "via")), "tcp") == 0) {
            tcp++;
            assert_true(json_is_integer(json_object_get(node, "clock_residual_ns")));
        }
    }
    assert_int_equal(tcp, NODES);
    /* The intruders: refused, counted, said; the figures are there. */
    if (json_integer_value(json_object_get(job, "refused")) != 2)
        fail_msg("%lld connections refused, not the 2 intruders: %s",
                 (long long)json_integer_value(json_object_get(job, "refused")), out);
    pb_test_assert_contains(out, (const char *const[]){"2 connections to pbench's TCP address "
                                                       "refused and dropped",
                                                       "a wrong token", NULL});
    fprintf(stderr, "%s", out); /* the table, for whoever reads the test's log */
    const json_t *point = json_array_get(json_object_get(r, "points"), 0);
    assert_true(json_number_value(json_object_get(point, "samples_per_s")) > 0);
    json_decref(r);
    free(err);
    free(out);
}

/* Starts a shell command line in workdir; its pid. */
static pid_t start(const char *fmt, ...)
{
    char line[4096], cmd[4200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && exec %s", workdir, line);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The job's command line, as every node runs it: rank R of 2, the data
 * in workdir. */
static void job_line(char *out, size_t outlen, const char *src)
{
    snprintf(out, outlen,
             "/usr/bin/python3 %s/examples/train/train.py --ddp --data %s/photos --images 128 "
             "--size 48 --crop 32 --batch-size 8 --workers 1 --epochs 100000 --checksum "
             "%s/sums.txt",
             src, workdir, workdir);
}

/* One launcher per node, as torchrun per node: the head's pbench wrap
 * --listen runs in node 1 with rank 0 (over its Unix socket), and node 2's
 * pbench wrap --join runs rank 1, whose records reach the head over TCP.
 * window: the head's --time. */
static void start_joined(int window_s, int port, int nodes)
{
    const char *src = getenv("PBENCH_SOURCE_DIR"), *pbench = getenv("PBENCH_BINARY");
    char job[1200], launch[1200];
    job_line(job, sizeof job, src);
    snprintf(launch, sizeof launch,
             "/usr/bin/python3 %s/tests/wrap_jobs/nodes_launch.py --master 10.79.%d.11 --port %d "
             "--world %d",
             src, subnet, 20000 + (int)(getpid() % 20000), nodes);
    /* The same token on both, as a Slurm script exports one before srun. */
    setenv("PBENCH_WRAP_TOKEN", "3f1e0c2b9a8d7e6f5a4b3c2d1e0f9a8b", 1);
    head = start("%s --netns %s-1 -- '%s' wrap --listen 10.79.%d.11:%d --warmup-batches 2 "
                 "--time %d --grace 2 -o joined.json -- %s >head-out.txt 2>head-err.txt",
                 launch, tag, pbench, subnet, port, window_s, job);
    joiner = start("%s --netns %s-2 --first-rank 1 -- '%s' wrap --join 10.79.%d.11:%d -- %s "
                   ">node-out.txt 2>node-err.txt",
                   launch, tag, pbench, subnet, port, job);
    if (nodes > 2)
        third = start("%s --netns %s-3 --first-rank 2 -- '%s' wrap --join 10.79.%d.11:%d -- %s "
                      ">node3-out.txt 2>node3-err.txt",
                      launch, tag, pbench, subnet, port, job);
    unsetenv("PBENCH_WRAP_TOKEN");
}

/* Waits for pid to exit, up to timeout_s; its status, or -1 when it did not. */
static int wait_exit(pid_t *pid, int timeout_s)
{
    int status = 0;
    for (int i = 0; i < timeout_s * 10; i++) {
        if (waitpid(*pid, &status, WNOHANG) == *pid) {
            *pid = -1;
            return status;
        }
        nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
    }
    return -1;
}

/* What still runs in node k's namespace, as `ip netns pids` lists it with
 * its command lines ("" when nothing does). */
static char *node_processes(int k)
{
    char path[600];
    snprintf(path, sizeof path, "%s/ps-%d.txt", workdir, k);
    sh("for p in $(ip netns pids %s-%d); do tr '\\0' ' ' </proc/$p/cmdline; echo; done "
       ">'%s' 2>/dev/null",
       tag, k, path);
    return pb_test_read_file(path, NULL, false);
}

static char *workdir_file(const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", workdir, name);
    return pb_test_read_file(path, NULL, false);
}

static void skip_without_nodes(void)
{
    if (!pb_test_have_torch()) {
        fprintf(stderr, "skipped: torch is not installed: apt-get install python3-torch "
                        "python3-torchvision\n");
        skip();
    }
    const char *why = make_nodes();
    if (why) {
        fprintf(stderr, "skipped: %s\n", why);
        skip();
    }
}

/* --join: one pbench per node gives the same one result on the head, a
 * row per rank with its host, and the node that joined in the account. */
static void test_joined_nodes_one_result(void **state)
{
    (void)state;
    skip_without_nodes();
    start_joined(4, free_port(), 2);
    int status = wait_exit(&head, 240);
    char *err = workdir_file("head-err.txt"), *out = workdir_file("head-out.txt");
    if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the head's pbench wrap: status %d: %s", status, err);
    int node_status = wait_exit(&joiner, 30);
    char *node_err = workdir_file("node-err.txt");
    if (node_status < 0)
        fail_msg("node 2's pbench wrap --join still runs after the head ended: %s", node_err);
    pb_test_assert_contains(node_err, (const char *const[]){"joined the head at", NULL});
    json_t *r = pb_test_load_json(workdir, "joined.json");
    const json_t *job = last_job(r), *rows = json_object_get(job, "rank_rows");
    if (json_array_size(rows) != NODES)
        fail_msg("%zu rank rows, not %d: %s", json_array_size(rows), NODES,
                 json_dumps(job, JSON_COMPACT));
    for (size_t i = 0; i < NODES; i++) {
        const json_t *row = json_array_get(rows, i);
        char host[16];
        snprintf(host, sizeof host, "node%zu", i + 1);
        assert_int_equal(json_integer_value(json_object_get(row, "rank")), (json_int_t)i);
        assert_string_equal(json_string_value(json_object_get(row, "host")), host);
        assert_true(json_number_value(json_object_get(row, "samples_per_s")) > 0);
        assert_non_null(strstr(out, host));
    }
    const json_t *joined = json_object_get(job, "joined");
    assert_int_equal(json_array_size(joined), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(joined, 0), "host")),
                        "node2");
    fprintf(stderr, "%s", out);
    json_decref(r);
    free(err);
    free(out);
    free(node_err);
}

/* Waits until the loop has taken batches (the job's checksums are
 * flushed), then 2 s more: the measured window has begun. */
static void wait_measuring(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/sums.txt", workdir);
    bool measuring = false;
    for (int i = 0; i < 1800 && !measuring; i++) {
        FILE *f = fopen(path, "r");
        measuring = f && fgetc(f) != EOF;
        if (f)
            fclose(f);
        if (!measuring)
            nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
    }
    if (!measuring)
        fail_msg("the job took no batch within 180 s: %s", workdir_file("head-err.txt"));
    nanosleep(&(struct timespec){.tv_sec = 2}, NULL);
}

/* SIGTERM to the head: its job ends, it tells the joined node to stop, no
 * job process is left in any node, and the result keeps what was
 * measured. */
static void test_sigterm_to_the_head_ends_every_node(void **state)
{
    (void)state;
    skip_without_nodes();
    start_joined(120, free_port(), 2);
    wait_measuring();
    assert_int_equal(kill(head, SIGTERM), 0); /* the launcher passes it on to pbench */
    int status = wait_exit(&head, 60);
    char *err = workdir_file("head-err.txt");
    if (status < 0)
        fail_msg("the head's pbench wrap did not end within 60 s of SIGTERM: %s", err);
    int node_status = wait_exit(&joiner, 30);
    char *node_err = workdir_file("node-err.txt");
    if (node_status < 0)
        fail_msg("node 2's pbench wrap --join did not end within 30 s of the head: %s", node_err);
    pb_test_assert_contains(node_err, (const char *const[]){"joined the head at", NULL});
    for (int k = 1; k <= NODES; k++) {
        char *left = NULL;
        for (int i = 0; i < 100; i++) { /* what was told to end has ended */
            free(left);
            left = node_processes(k);
            if (!left[0])
                break;
            nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
        }
        if (left[0])
            fail_msg("node %d still runs after SIGTERM to the head:\n%s", k, left);
        free(left);
    }
    json_t *r = pb_test_load_json(workdir, "joined.json");
    const json_t *job = last_job(r);
    assert_true(json_array_size(json_object_get(job, "rank_rows")) >= 1);
    const json_t *joined = json_array_get(json_object_get(job, "joined"), 0);
    assert_non_null(joined);
    assert_string_equal(json_string_value(json_object_get(joined, "ended")),
                        "stopped by the head");
    const json_t *point = json_array_get(json_object_get(r, "points"), 0);
    assert_true(json_number_value(json_object_get(point, "samples_per_s")) > 0);
    json_decref(r);
    free(err);
    free(node_err);
}

int main(void)
{
    snprintf(tag, sizeof tag, "pbw%d", (int)(getpid() % 100000));
    subnet = 1 + (int)(getpid() % 250);
    if (!getenv("PBENCH_BINARY") || !getenv("PBENCH_SOURCE_DIR")) {
        fprintf(stderr, "PBENCH_BINARY and PBENCH_SOURCE_DIR must be set (ctest sets them)\n");
        return 1;
    }
    pb_test_tmpdir_use(workdir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_two_nodes_one_result, teardown_nodes),
        cmocka_unit_test_teardown(test_joined_nodes_one_result, teardown_nodes),
        cmocka_unit_test_teardown(test_sigterm_to_the_head_ends_every_node, teardown_nodes),
    };
    return cmocka_run_group_tests(tests, pb_test_tmpdir_setup, pb_test_tmpdir_teardown);
}
