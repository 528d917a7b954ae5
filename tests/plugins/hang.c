/* A test plugin whose stage never returns (tests/test_e2e.c, issue 28): a
 * worker stage, `hang`, that passes the process's first `after` samples
 * through (counted over every worker and repeat) and then waits in pause()
 * for good, as a stage stuck on a dead mount or a
 * FIFO would. The watchdog (run.stage_timeout_s) must name it and its
 * sample, write what was measured and end pbench without joining it; a
 * stop must end pbench without waiting for it. With `mark`, the first
 * call that hangs creates that file (a test waits for it). */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipelines/plugin.h"

struct hang_opts {
    int64_t after;
    char mark[256];
};

static const struct pb_opt hang_opts_table[] = {
    {.name = "after", .type = PB_OPT_INT, .offset = offsetof(struct hang_opts, after),
     .max = 1000000000, .def = "0",
     .help = "Samples passed through (all workers and repeats together) before the stage hangs."},
    {.name = "mark", .type = PB_OPT_STRING, .offset = offsetof(struct hang_opts, mark), .size = 256,
     .def = "", .help = "A file created when the stage first hangs; empty: none."},
    {0},
};

struct hang_state {
    int64_t after;
    char mark[256];
};

/* Samples passed through so far, in the whole process. */
static atomic_llong passed;

static int hang_init(void **state, const void *opts, const struct pb_stage_plan *in,
                     struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                     const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder;
    (void)decoder_opts;
    (void)msg;
    (void)msglen;
    struct hang_state *st = malloc(sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->after = ((const struct hang_opts *)opts)->after;
    memcpy(st->mark, ((const struct hang_opts *)opts)->mark, sizeof st->mark);
    *out = *in;
    *state = st;
    return PB_OK;
}

static int hang_process(void *state, struct pb_sample *s)
{
    struct hang_state *st = state;
    if (atomic_fetch_add(&passed, 1) >= st->after) {
        int fd = st->mark[0] ? open(st->mark, O_WRONLY | O_CREAT, 0644) : -1;
        if (fd >= 0)
            close(fd);
        for (;;)
            pause(); /* a handled signal returns from pause(): wait again */
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

static void hang_cleanup(void *state)
{
    free(state);
}

static const struct pb_stage_ops hang_stage = {
    .name = "hang",
    .summary = "Test plugin: passes `after` samples through, then never returns.",
    .flags = PB_STAGE_WORKER,
    .opts = hang_opts_table,
    .opts_size = sizeof(struct hang_opts),
    .init = hang_init,
    .process = hang_process,
    .cleanup = hang_cleanup,
};

PB_PLUGIN_DEFINE(hang_stage);
