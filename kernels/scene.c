/* Synthetic scenes for generated datasets (kernels/scene.h): gradients, shapes, texture
 * and noise, so encoders and decoders work as hard as on photos. */
#include "kernels/scene.h"

#include <math.h>

#include "bench/base/pb.h"

#define SHAPES 12

struct shape {
    double cx, cy, r;     /* centre and size, in units of the image's width */
    double vx, vy;        /* motion, widths per second                      */
    uint8_t rgb[3];
    int square;
};

static double unit(uint64_t *state)
{
    *state = pb_mix64(*state);
    return (double)(*state >> 11) / 9007199254740992.0;
}

void pb_scene_render(uint8_t *dst, int height, int width, int channels, uint64_t seed, double t)
{
    uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    /* Background: a two-colour diagonal gradient. */
    double base[2][3];
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 3; c++)
            base[i][c] = 30 + 200 * unit(&state);
    double angle = 6.2831853 * unit(&state);
    double gx = cos(angle) / width, gy = sin(angle) / height;
    struct shape shapes[SHAPES];
    for (int i = 0; i < SHAPES; i++) {
        shapes[i].cx = unit(&state);
        shapes[i].cy = unit(&state);
        shapes[i].r = 0.03 + 0.15 * unit(&state);
        shapes[i].vx = (unit(&state) - 0.5) * 0.2;
        shapes[i].vy = (unit(&state) - 0.5) * 0.2;
        for (int c = 0; c < 3; c++)
            shapes[i].rgb[c] = (uint8_t)(255 * unit(&state));
        shapes[i].square = unit(&state) < 0.4;
        shapes[i].cx += shapes[i].vx * t;
        shapes[i].cy += shapes[i].vy * t;
        shapes[i].cx -= floor(shapes[i].cx);
        shapes[i].cy -= floor(shapes[i].cy);
    }
    double freq = 0.05 + 0.2 * unit(&state);
    double phase = t * 2.0;
    uint64_t noise = pb_mix64(seed ^ (uint64_t)(t * 1000.0 + 0.5));
    for (int y = 0; y < height; y++) {
        uint8_t *row = dst + (size_t)y * (size_t)width * (size_t)channels;
        double fy = (double)y / width;
        for (int x = 0; x < width; x++) {
            double fx = (double)x / width;
            double mix = 0.5 + 0.5 * sin(3.0 * ((double)x * gx + (double)y * gy) * 3.14159);
            double texture = 12.0 * sin(freq * x + phase) * cos(freq * 0.7 * y - phase);
            double rgb[3];
            for (int c = 0; c < 3; c++)
                rgb[c] = base[0][c] * mix + base[1][c] * (1 - mix) + texture;
            for (int i = 0; i < SHAPES; i++) {
                double dx = fx - shapes[i].cx, dy = fy - shapes[i].cy * height / width;
                int inside = shapes[i].square
                                 ? fabs(dx) < shapes[i].r && fabs(dy) < shapes[i].r * 0.7
                                 : dx * dx + dy * dy < shapes[i].r * shapes[i].r;
                if (inside)
                    for (int c = 0; c < 3; c++)
                        rgb[c] = shapes[i].rgb[c] + texture * 0.5 + 20.0 * dx / shapes[i].r;
            }
            noise = noise * 6364136223846793005ull + 1442695040888963407ull;
            int n = (int)((noise >> 59) & 0xf) - 8; /* sensor-like noise, +-8 */
            if (channels == 1) {
                double v = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] + n;
                row[x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            } else {
                for (int c = 0; c < 3 && c < channels; c++) {
                    double v = rgb[c] + n;
                    row[(size_t)x * (size_t)channels + (size_t)c] =
                        (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
                for (int c = 3; c < channels; c++)
                    row[(size_t)x * (size_t)channels + (size_t)c] = 255;
            }
        }
    }
}
