/* A test plugin that misbehaves as plugins in the wild do (tests/test_e2e.c,
 * issue 28): a worker stage, `misbehave`, that passes `after` samples
 * through (counted over the process) and then, by `mode`: crashes
 * (SIGSEGV), returns a code that is not pbench's, fails without a
 * message, claims more output than its buffer holds, or calls exit(0).
 * pbench must name the stage and the sample each time and never exit 0. */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipelines/plugin.h"

static const char *const mode_names[] = {"crash", "code", "silent", "overrun", "exit", NULL};
enum { CRASH, CODE, SILENT, OVERRUN, EXIT };

struct misbehave_opts {
    int64_t after;
    int mode;
};

static const struct pb_opt misbehave_opts_table[] = {
    {.name = "after", .type = PB_OPT_INT, .offset = offsetof(struct misbehave_opts, after),
     .max = 1000000000, .def = "0",
     .help = "Samples passed through (all workers and repeats together) before it misbehaves."},
    {.name = "mode", .type = PB_OPT_ENUM, .offset = offsetof(struct misbehave_opts, mode),
     .def = "crash", .allowed = mode_names,
     .help = "How it misbehaves: crash, code (returns 42), silent (PB_ERR, no message), overrun "
             "(PB_OK with more bytes than its buffer), exit (calls exit(0))."},
    {0},
};

static atomic_llong passed;

static int misbehave_init(void **state, const void *opts, const struct pb_stage_plan *in,
                          struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                          const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    (void)msg;
    (void)msglen;
    struct misbehave_opts *st = malloc(sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    *st = *(const struct misbehave_opts *)opts;
    *out = *in;
    *state = st;
    return PB_OK;
}

static int misbehave_process(void *state, struct pb_sample *s)
{
    const struct misbehave_opts *st = state;
    if (atomic_fetch_add(&passed, 1) >= st->after) {
        switch (st->mode) {
        case CRASH: raise(SIGSEGV); break;
        case CODE: return 42;
        case SILENT: return PB_ERR;
        case OVERRUN: s->out_bytes = s->out_capacity + 1; return PB_OK;
        case EXIT: exit(0);
        }
    }
    if (s->in_bytes > s->out_capacity) {
        s->out_bytes = s->in_bytes;
        return PB_ERR_NOSPACE;
    }
    memcpy(s->out, s->in, s->in_bytes);
    s->out_bytes = s->in_bytes;
    s->out_shape = s->in_shape;
    return PB_OK;
}

static void misbehave_cleanup(void *state)
{
    free(state);
}

static const struct pb_stage_ops misbehave_stage = {
    .name = "misbehave",
    .summary = "Test plugin: passes `after` samples through, then misbehaves by `mode`.",
    .flags = PB_STAGE_WORKER,
    .opts = misbehave_opts_table,
    .opts_size = sizeof(struct misbehave_opts),
    .init = misbehave_init,
    .process = misbehave_process,
    .cleanup = misbehave_cleanup,
};

PB_PLUGIN_DEFINE(misbehave_stage);
