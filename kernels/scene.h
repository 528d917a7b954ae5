/* Synthetic scenes for generated datasets: natural-looking enough that
 * encoders and decoders work as hard as on photos (smooth gradients, hard
 * edged shapes, fine texture and sensor-like noise), never flat colour,
 * which compresses and decodes unrealistically fast. */
#ifndef PB_KERNELS_SCENE_H
#define PB_KERNELS_SCENE_H

#include <stdint.h>

/* Renders an RGB (channels 3) or gray (channels 1) uint8 image, rows packed
 * (stride width * channels). seed picks the scene; t (seconds) moves its
 * shapes and texture, so consecutive t make a video with real motion. */
void pb_scene_render(uint8_t *dst, int height, int width, int channels, uint64_t seed, double t);

#endif
