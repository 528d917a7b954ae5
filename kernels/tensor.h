/* Tensors as kernels and stages see them: the element type, the memory
 * order and the shape of one sample. Raw bytes (before decode) are a
 * tensor of dtype BYTES. */
#ifndef PB_KERNELS_TENSOR_H
#define PB_KERNELS_TENSOR_H

#include <stddef.h>
#include <stdint.h>

enum pb_dtype { PB_DTYPE_BYTES = 0, PB_DTYPE_U8, PB_DTYPE_F16, PB_DTYPE_F32 };

/* Memory order of a tensor: T frames, H rows, W columns, C channels.
 * Decoders produce THWC (HWC for an image, T = 1); normalize may reorder. */
enum pb_layout { PB_LAYOUT_THWC = 0, PB_LAYOUT_TCHW, PB_LAYOUT_CTHW };

/* What flows between stages: raw bytes (before decode) or a pixel tensor.
 * Dimensions are maxima at plan time and actual values per sample. */
struct pb_shape {
    enum pb_dtype dtype;
    int32_t frames;   /* 1 for images */
    int32_t height;
    int32_t width;
    int32_t channels;
    enum pb_layout layout;
};

/* Bytes of one sample of this shape: frames (at least 1) x height x width
 * x channels x the element size. */
size_t pb_shape_bytes(const struct pb_shape *shape);

/* The dtype's name as configs and results spell it ("uint8", "float16",
 * ...), or "?" for a value outside the enum. */
const char *pb_dtype_name(enum pb_dtype dtype);

#endif
