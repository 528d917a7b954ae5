/* The `python` stage: a user's Python function, `{callable: "module:fn"}`,
 * called with each sample as a stage of its own. Only the torch engine
 * runs Python (engines/torch, docs/engines.md); pbench's own engine
 * refuses the config at the stage's line (bench/config/config.c), so
 * init here is never reached through a valid config and says why if it
 * is. */
#include "bench/base/pb.h"
#include "pipelines/stage.h"

#include <stdio.h>
#include <string.h>

struct python_opts {
    char callable[256];
};

static const struct pb_opt python_opts[] = {
    {.name = "callable", .type = PB_OPT_STRING, .offset = offsetof(struct python_opts, callable),
     .size = sizeof(((struct python_opts *)0)->callable), .def = "",
     .help = "The function as 'module:function' (its module found on loader.python_path); it "
             "takes a sample and returns it transformed."},
    {0},
};

static int python_validate(const void *opts, char *msg, size_t msglen)
{
    const char *callable = ((const struct python_opts *)opts)->callable;
    const char *colon = strchr(callable, ':');
    if (!colon || colon == callable || colon[1] == '\0') {
        snprintf(msg, msglen,
                 "pipeline.python.callable must be 'module:function' (e.g. "
                 "'my_transforms:add_noise'), got '%s'",
                 callable);
        return PB_ERR_CONFIG;
    }
    return PB_OK;
}

static int python_init(void **state, const void *opts, const struct pb_stage_plan *in,
                       struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                       const void *decoder_opts, char *msg, size_t msglen)
{
    (void)state, (void)opts, (void)in, (void)out, (void)decoder, (void)decoder_opts;
    snprintf(msg, msglen, "the python stage runs only on loader.engine: torch");
    return PB_ERR_CONFIG;
}

const struct pb_stage_ops pb_stage_python = {
    .name = "python",
    .summary = "loader.engine torch: a Python function of yours, 'module:function', per sample",
    .flags = PB_STAGE_WORKER,
    .opts = python_opts,
    .opts_size = sizeof(struct python_opts),
    .validate = python_validate,
    .init = python_init,
};
