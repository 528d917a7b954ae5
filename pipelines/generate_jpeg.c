/* JPEG dataset generation: being written (image pipeline issue). */
#include <stdio.h>

#include "bench/pb.h"
#include "pipelines/dataset.h"

int pb_generate_jpeg(const struct pb_generate_spec *spec, const char *dir, char *msg,
                     size_t msglen)
{
    (void)spec;
    (void)dir;
    snprintf(msg, msglen, "dataset.generate.kind 'jpeg' is not available in this build yet");
    return PB_ERR_UNAVAILABLE;
}
