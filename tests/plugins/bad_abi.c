/* A plugin built for another ABI version: pbench must refuse it, naming
 * both versions (tests/test_plugin.c). */
#include "pipelines/plugin.h"

static int never_init(void **state, const void *opts, const struct pb_stage_plan *in,
                      struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                      const void *decoder_opts, char *msg, size_t msglen)
{
    (void)state, (void)opts, (void)in, (void)out, (void)decoder, (void)decoder_opts;
    (void)msg, (void)msglen;
    return PB_ERR;
}

static int never_process(void *state, struct pb_sample *s)
{
    (void)state, (void)s;
    return PB_ERR;
}

static void never_cleanup(void *state)
{
    (void)state;
}

static const struct pb_stage_ops future_stage = {
    .name = "from_the_future",
    .flags = PB_STAGE_WORKER,
    .init = never_init,
    .process = never_process,
    .cleanup = never_cleanup,
};

__attribute__((visibility("default"))) const unsigned pb_plugin_abi_version =
    PB_PLUGIN_ABI_VERSION + 1000;
__attribute__((visibility("default"))) const struct pb_stage_ops *const pb_plugin_stage =
    &future_stage;
