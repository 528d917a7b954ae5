/* Stage chains with fake stages: which stages run in the loader workers
 * and why a pipeline is refused, how each stage's plan follows from the
 * one before (slot, scratch and shape sizes), what the consumer chain
 * puts where, and that cleanup reaches every instance made. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdbool.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/run/chain.h"

static int inits, cleanups, device_opens;
static int32_t seen_want_width[PB_MAX_STAGES]; /* per init, in order */
static bool seen_window[PB_MAX_STAGES], seen_next_mirrors[PB_MAX_STAGES];

/* A worker stage that doubles its input's size and makes a 2-row shape. */
static int double_init(void **state, const void *opts, const struct pb_stage_plan *in,
                       struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                       const void *decoder_opts, char *msg, size_t msglen)
{
    (void)opts, (void)decoder, (void)decoder_opts, (void)msg, (void)msglen;
    seen_window[inits % PB_MAX_STAGES] = in->window != NULL;
    seen_next_mirrors[inits % PB_MAX_STAGES] = in->next_mirrors;
    seen_want_width[inits++ % PB_MAX_STAGES] = in->want_width;
    out->max_bytes = in->max_bytes * 2;
    out->shape = (struct pb_shape){.dtype = PB_DTYPE_U8,
                                   .frames = 1,
                                   .height = 2,
                                   .width = (int32_t)in->max_bytes,
                                   .channels = 1};
    *state = &inits;
    return PB_OK;
}

static int failing_init(void **state, const void *opts, const struct pb_stage_plan *in,
                        struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                        const void *decoder_opts, char *msg, size_t msglen)
{
    (void)opts, (void)in, (void)out, (void)decoder, (void)decoder_opts;
    *state = NULL;
    snprintf(msg, msglen, "no");
    return PB_ERR_CONFIG;
}

static void want_width_7(const void *opts, int32_t *height, int32_t *width)
{
    (void)opts;
    *height = 5;
    *width = 7;
}

static bool whole_window(const void *opts, uint64_t seed, int height, int width,
                         struct pb_window *w)
{
    (void)opts, (void)seed;
    *w = (struct pb_window){.height = height, .width = width};
    return true;
}

static void count_cleanup(void *state)
{
    (void)state;
    cleanups++;
}

static const struct pb_stage_ops worker_stage = {
    .name = "w", .flags = PB_STAGE_WORKER, .init = double_init, .cleanup = count_cleanup};
static const struct pb_stage_ops sizing_stage = {.name = "sizing",
                                                 .flags = PB_STAGE_WORKER,
                                                 .init = double_init,
                                                 .min_input = want_width_7,
                                                 .cleanup = count_cleanup};
static const struct pb_stage_ops window_stage = {.name = "window",
                                                 .flags = PB_STAGE_WORKER,
                                                 .init = double_init,
                                                 .window = whole_window,
                                                 .cleanup = count_cleanup};
static const struct pb_stage_ops mirrors_stage = {.name = "mirrors",
                                                  .flags = PB_STAGE_WORKER | PB_STAGE_MIRRORS,
                                                  .init = double_init,
                                                  .cleanup = count_cleanup};
static const struct pb_stage_ops consumer_stage = {
    .name = "c", .flags = PB_STAGE_CONSUMER, .init = double_init, .cleanup = count_cleanup};
static const struct pb_stage_ops gpu_stage = {.name = "g",
                                              .flags = PB_STAGE_CONSUMER | PB_STAGE_GPU,
                                              .init = double_init,
                                              .cleanup = count_cleanup};
static const struct pb_stage_ops bad_gpu_stage = {.name = "bad",
                                                  .flags = PB_STAGE_CONSUMER | PB_STAGE_GPU,
                                                  .init = failing_init,
                                                  .cleanup = count_cleanup};
static const struct pb_stage_ops to_device_stage = {
    .name = "to_device", .flags = PB_STAGE_CONSUMER | PB_STAGE_TO_DEVICE};
static const struct pb_stage_ops missing_stage = {
    .name = "missing", .flags = PB_STAGE_WORKER, .unavailable_reason = "built without it"};

static void make_spec(struct pb_spec *spec, const struct pb_stage_ops *const *ops, int n)
{
    memset(spec, 0, sizeof(*spec));
    spec->stage_count = n;
    for (int i = 0; i < n; i++)
        spec->stages[i].ops = ops[i];
}

static int split(const struct pb_stage_ops *const *ops, int n, int *worker_spec, int *count,
                 char *msg)
{
    struct pb_spec spec;
    make_spec(&spec, ops, n);
    return pb_chain_split(&spec, worker_spec, count, msg, PB_MSG_MAX);
}

static void test_split(void **state)
{
    (void)state;
    int worker_spec[PB_MAX_STAGES], count;
    char msg[PB_MSG_MAX];
    const struct pb_stage_ops *good[] = {&worker_stage, &worker_stage, &to_device_stage,
                                         &gpu_stage};
    assert_int_equal(split(good, 4, worker_spec, &count, msg), PB_OK);
    assert_int_equal(count, 2);
    assert_int_equal(worker_spec[0], 0);
    assert_int_equal(worker_spec[1], 1);

    const struct pb_stage_ops *after[] = {&worker_stage, &consumer_stage, &worker_stage};
    assert_int_equal(split(after, 3, worker_spec, &count, msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "cannot follow a consumer-side stage"));

    const struct pb_stage_ops *none[] = {&consumer_stage};
    assert_int_equal(split(none, 1, worker_spec, &count, msg), PB_ERR_CONFIG);
    assert_non_null(strstr(msg, "no stage that runs in the loader workers"));

    const struct pb_stage_ops *missing[] = {&worker_stage, &missing_stage};
    assert_int_equal(split(missing, 2, worker_spec, &count, msg), PB_ERR_UNAVAILABLE);
    assert_string_equal(msg, "stage 'missing' is not available in this build: built without it");
}

static void test_loader_plan(void **state)
{
    (void)state;
    const struct pb_stage_ops *ops[] = {&worker_stage, &worker_stage, &sizing_stage};
    struct pb_spec spec;
    make_spec(&spec, ops, 3);
    int worker_spec[PB_MAX_STAGES], count;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_chain_split(&spec, worker_spec, &count, msg, sizeof(msg)), PB_OK);
    struct pb_chain chain = {0};
    struct pb_stage_stats stats = {0};
    struct pb_chain_sizes sizes;
    inits = cleanups = 0;
    assert_int_equal(pb_chain_init_loader(&chain, &spec, worker_spec, count, 100, 0, &stats, &sizes,
                                          msg, sizeof(msg)),
                     PB_OK);
    assert_int_equal(inits, 3);
    assert_int_equal(chain.count, 3);
    assert_int_equal(stats.stage_count, 3);
    assert_string_equal(stats.names[2], "sizing");
    /* 100 -> 200 -> 400 -> 800: the slot holds the last output, scratch
     * the largest one before it. */
    assert_int_equal(sizes.slot_bytes, 800);
    assert_int_equal(sizes.scratch_bytes, 400);
    assert_int_equal(sizes.sample_shape.width, 400);
    /* The stages before the sizing one are told what it wants; it is told
     * nothing, as nothing after it says. */
    assert_int_equal(seen_want_width[0], 7);
    assert_int_equal(seen_want_width[1], 7);
    assert_int_equal(seen_want_width[2], 0);
    pb_chain_cleanup(&chain);
    assert_int_equal(cleanups, 3);
    assert_int_equal(chain.count, 0);
    pb_stage_stats_free(&stats);
}

/* A stage learns the window callback of the stage right after it (only),
 * and whether that one is the last and mirrors (fused decode and crop;
 * flip fused into normalize). */
static void test_fusion_plans(void **state)
{
    (void)state;
    const struct pb_stage_ops *ops[] = {&worker_stage, &window_stage, &worker_stage,
                                        &mirrors_stage, &worker_stage, &mirrors_stage};
    struct pb_spec spec;
    make_spec(&spec, ops, 6);
    int worker_spec[PB_MAX_STAGES], count;
    char msg[PB_MSG_MAX];
    assert_int_equal(pb_chain_split(&spec, worker_spec, &count, msg, sizeof(msg)), PB_OK);
    struct pb_chain chain = {0};
    struct pb_stage_stats stats = {0};
    struct pb_chain_sizes sizes;
    inits = 0;
    assert_int_equal(pb_chain_init_loader(&chain, &spec, worker_spec, count, 100, 0, &stats, &sizes,
                                          msg, sizeof(msg)),
                     PB_OK);
    static const bool window[] = {true, false, false, false, false, false};
    /* Only the stage before the last one, which mirrors; not the one before
     * a mirroring stage in the middle. */
    static const bool mirrors[] = {false, false, false, false, true, false};
    for (int k = 0; k < 6; k++) {
        assert_int_equal(seen_window[k], window[k]);
        assert_int_equal(seen_next_mirrors[k], mirrors[k]);
    }
    pb_chain_cleanup(&chain);
    pb_stage_stats_free(&stats);
}

static int open_device(void *user, const struct pb_stage_spec *ss, char *msg, size_t msglen)
{
    (void)msg, (void)msglen;
    assert_ptr_equal(ss->ops, &to_device_stage);
    assert_ptr_equal(user, &device_opens);
    device_opens++;
    return PB_OK;
}

static void test_consumer_chain(void **state)
{
    (void)state;
    const struct pb_stage_ops *ops[] = {&worker_stage, &consumer_stage, &to_device_stage,
                                        &gpu_stage,    &gpu_stage,      &bad_gpu_stage};
    struct pb_spec spec;
    struct pb_stage_plan plan = {.max_bytes = 10, .worker = -1};
    char msg[PB_MSG_MAX];
    struct pb_chain cpu = {0}, gpu = {0};

    make_spec(&spec, ops, 5);
    inits = cleanups = device_opens = 0;
    assert_int_equal(pb_chain_init_consumer(&cpu, &gpu, 8, &spec, &plan, open_device, &device_opens,
                                            msg, sizeof(msg)),
                     PB_OK);
    assert_int_equal(device_opens, 1);
    assert_int_equal(cpu.count, 1);
    assert_int_equal(cpu.stages[0].spec_index, 1);
    assert_int_equal(gpu.count, 2);
    assert_int_equal(gpu.stages[1].spec_index, 4);
    pb_chain_cleanup(&cpu);
    pb_chain_cleanup(&gpu);
    assert_int_equal(cleanups, 3);

    /* Too many GPU stages. */
    assert_int_equal(pb_chain_init_consumer(&cpu, &gpu, 1, &spec, &plan, open_device, &device_opens,
                                            msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_string_equal(msg, "at most 1 stages may run on the GPU");
    pb_chain_cleanup(&cpu);
    pb_chain_cleanup(&gpu);

    /* A stage whose init fails stays in its chain for cleanup. */
    make_spec(&spec, ops, 6);
    cleanups = 0;
    assert_int_equal(pb_chain_init_consumer(&cpu, &gpu, 8, &spec, &plan, open_device, &device_opens,
                                            msg, sizeof(msg)),
                     PB_ERR_CONFIG);
    assert_int_equal(gpu.count, 3);
    pb_chain_cleanup(&cpu);
    pb_chain_cleanup(&gpu);
    assert_int_equal(cleanups, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_loader_plan),
        cmocka_unit_test(test_fusion_plans),
        cmocka_unit_test(test_consumer_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
