/* Video dataset generation: being written (video pipeline issue). */
#include <stdio.h>

#include "bench/pb.h"
#include "pipelines/dataset.h"

int pb_generate_video(const struct pb_generate_spec *spec, const char *dir, char *msg,
                     size_t msglen)
{
    (void)spec;
    (void)dir;
    snprintf(msg, msglen, "dataset.generate.kind 'video' is not available in this build yet");
    return PB_ERR_UNAVAILABLE;
}
