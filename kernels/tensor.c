/* Tensors as kernels and stages see them (kernels/tensor.h): element type, memory order
 * and the shape of one sample. */
#include "kernels/tensor.h"

size_t pb_shape_bytes(const struct pb_shape *s)
{
    size_t elem = 1;
    switch (s->dtype) {
    case PB_DTYPE_BYTES:
    case PB_DTYPE_U8: elem = 1; break;
    case PB_DTYPE_F16: elem = 2; break;
    case PB_DTYPE_F32: elem = 4; break;
    }
    size_t frames = s->frames > 0 ? (size_t)s->frames : 1;
    return frames * (size_t)s->height * (size_t)s->width * (size_t)s->channels * elem;
}

const char *pb_dtype_name(enum pb_dtype dtype)
{
    switch (dtype) {
    case PB_DTYPE_BYTES: return "bytes";
    case PB_DTYPE_U8: return "uint8";
    case PB_DTYPE_F16: return "float16";
    case PB_DTYPE_F32: return "float32";
    }
    return "?";
}
