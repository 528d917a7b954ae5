/* What the still-image decoders share (decoders/image.h): the channels
 * an output option makes, the kind of image bytes start with, and the name
 * a sample's messages give. */
#include "decoders/image.h"

#include <string.h>

int pb_image_output_channels(const void *opts)
{
    return ((const struct pb_image_opts *)opts)->output == PB_IMAGE_GRAY ? 1 : 3;
}

enum pb_image_kind pb_image_sniff(const uint8_t *b, size_t n)
{
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
        return PB_IMAGE_JPEG;
    if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0)
        return PB_IMAGE_PNG;
    if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
        return PB_IMAGE_WEBP;
    if (n >= 2 && b[0] == 'B' && b[1] == 'M')
        return PB_IMAGE_BMP;
    return PB_IMAGE_UNKNOWN;
}

const char *pb_image_sample_name(const struct pb_sample *s)
{
    return s->path ? s->path : "(sample)";
}
