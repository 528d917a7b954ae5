/* The `read` stage: a sample's file, whole, into the pipeline's buffer.
 * This is the I/O a DataLoader's dataset __getitem__ does before decode. */
#include "bench/pb.h"
#include "pipelines/stage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct read_opts {
    bool drop_cache; /* reserved: see docs; off by default */
};

static const struct pb_opt read_opts[] = {
    {.name = "drop_cache", .type = PB_OPT_BOOL, .offset = offsetof(struct read_opts, drop_cache),
     .def = "false",
     .help = "Advise the kernel to drop each file from the page cache after reading it "
             "(posix_fadvise DONTNEED), so repeated epochs read from storage, not memory."},
    {0},
};

/* The state is a copy of the options. */
static int read_init(void **state, const void *opts, const struct pb_stage_plan *in,
                     struct pb_stage_plan *out, const struct pb_decoder_ops *decoder,
                     const void *decoder_opts, char *msg, size_t msglen)
{
    (void)decoder, (void)decoder_opts, (void)msg, (void)msglen;
    struct read_opts *st = malloc(sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    *st = *(const struct read_opts *)opts;
    *state = st;
    *out = *in; /* in.max_bytes is the largest file in the dataset */
    out->shape.dtype = PB_DTYPE_BYTES;
    return PB_OK;
}

static int read_process(void *state, struct pb_sample *s)
{
    const struct read_opts *st = state;
    if (!s->path) {
        snprintf(s->msg, s->msglen, "read: sample %llu has no file", (unsigned long long)s->index);
        return PB_ERR;
    }
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(s->msg, s->msglen, "%s: %s", s->path, strerror(errno));
        return PB_ERR_DATA;
    }
    size_t got = 0;
    int rc = PB_OK;
    while (got < s->out_capacity) {
        ssize_t n = read(fd, s->out + got, s->out_capacity - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(s->msg, s->msglen, "%s: %s", s->path, strerror(errno));
            rc = PB_ERR_DATA;
            break;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (rc == PB_OK && got == s->out_capacity) {
        /* The file grew past the size the dataset index recorded. */
        char probe;
        if (read(fd, &probe, 1) > 0) {
            snprintf(s->msg, s->msglen, "%s: file grew beyond %zu bytes since the dataset was indexed",
                     s->path, s->out_capacity);
            rc = PB_ERR_DATA;
        }
    }
    if (st->drop_cache)
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    s->out_bytes = got;
    s->out_shape = (struct pb_shape){.dtype = PB_DTYPE_BYTES, .frames = 1, .height = 1,
                                     .width = (int32_t)got, .channels = 1};
    s->bytes_read += got;
    return rc;
}

const struct pb_stage_ops pb_stage_read = {
    .name = "read",
    .summary = "Read each sample's file into memory (the dataset's I/O).",
    .flags = PB_STAGE_WORKER | PB_STAGE_IO,
    .opts = read_opts,
    .opts_size = sizeof(struct read_opts),
    .init = read_init,
    .process = read_process,
    .cleanup = free,
};
