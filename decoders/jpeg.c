/* The `jpeg` decoder (libjpeg-turbo's TurboJPEG API). The `auto` decoder
 * (decoders/auto.c) sends JPEGs here with the same options.
 *
 * Baseline and progressive, 4:4:4/4:2:2/4:2:0/grayscale input, output RGB,
 * BGR or gray uint8 HWC (gray input becomes three channels for rgb/bgr).
 * DCT-domain scaling by 1, 1/2, 1/4, 1/8 or `auto`, the smallest factor that
 * leaves the image at least as large as the next sizing stage wants. CMYK
 * and YCCK files are converted to RGB or rejected. The EXIF orientation tag
 * is read from the APP1 segment and applied while writing the output.
 * With a crop stage next (fused_crop), only its window is decoded
 * (decoders/jpeg_window.c); on a rotated or mirrored file, the stored
 * pixels the window shows, oriented after.
 *
 * The markers before the first scan are walked here (cheap, bounds-checked)
 * for the size, component count, progressive flag, Adobe and EXIF
 * segments, so the hot path parses the header once, inside tjDecompress2;
 * tjDecompressHeader3 is the fallback that explains a header we cannot
 * read. No allocation per sample beyond libjpeg's own: a private buffer for
 * CMYK and oriented images grows when a larger one comes. */
#include "decoders/image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

#include "bench/base/pb.h"
#include "decoders/jpeg_window.h"

static const char *const output_names[] = {"rgb", "bgr", "gray", NULL};
static const char *const scale_names[] = {"1", "1/2", "1/4", "1/8", "auto", "window", NULL};
static const char *const cmyk_names[] = {"convert", "reject", NULL};
static const char *const dct_names[] = {"accurate", "fast", NULL};

#define OPT(f) offsetof(struct pb_image_opts, f)
const struct pb_opt pb_jpeg_opts[] = {
    {.name = "output", .type = PB_OPT_ENUM, .offset = OPT(output), .def = "rgb",
     .allowed = output_names,
     .help = "Pixel format written: rgb or bgr (3 channels, gray input expanded) or gray (1 "
             "channel)."},
    {.name = "scale", .type = PB_OPT_ENUM, .offset = OPT(scale), .def = "1", .allowed = scale_names,
     .help = "DCT-domain downscaling: 1, 1/2, 1/4, 1/8, or auto: the smallest factor that leaves "
             "the image at least as large as the next resize or crop needs; or window: full "
             "size, but the window a fused crop reads (fused_crop) is reduced while it stays at "
             "least twice that crop's output (random_resized_crop: the same windows as scale 1)."},
    {.name = "cmyk", .type = PB_OPT_ENUM, .offset = OPT(cmyk), .def = "convert",
     .allowed = cmyk_names,
     .help = "CMYK and YCCK JPEGs: convert to RGB (naive formula, no colour management) or "
             "reject them as bad samples."},
    {.name = "exif_orientation", .type = PB_OPT_BOOL, .offset = OPT(exif_orientation),
     .def = "true", .help = "Rotate and flip the image as its EXIF orientation tag says."},
    {.name = "strict", .type = PB_OPT_BOOL, .offset = OPT(strict), .def = "true",
     .help = "Treat libjpeg-turbo warnings (truncated or corrupt data it would fill with grey) "
             "as a bad sample; false keeps the partly decoded image."},
    {.name = "dct", .type = PB_OPT_ENUM, .offset = OPT(dct), .def = "accurate",
     .allowed = dct_names,
     .help = "Inverse DCT: accurate (libjpeg's islow, the default of PIL and tjbench) or fast "
             "(ifast)."},
    {.name = "fast_upsample", .type = PB_OPT_BOOL, .offset = OPT(fast_upsample), .def = "false",
     .help = "Nearest-neighbour chroma upsampling instead of libjpeg's smooth (fancy) upsampling."},
    {.name = "max_pixels", .type = PB_OPT_INT, .offset = OPT(max_pixels), .min = 1, .max = 1e12,
     .def = "89478485",
     .help = "Largest image accepted, width x height before scaling (PIL's limit by default); "
             "larger ones are bad samples, so a decompression bomb cannot exhaust memory."},
    {.name = "plan_width", .type = PB_OPT_INT, .offset = OPT(plan_width), .min = 1, .max = 65535,
     .def = "640",
     .help = "Width of the decoded image the pipeline's buffers start out sized for; larger "
             "images grow them once, except when decode ends the pipeline (a fixed batch slot)."},
    {.name = "plan_height", .type = PB_OPT_INT, .offset = OPT(plan_height), .min = 1, .max = 65535,
     .def = "480",
     .help = "Height of the decoded image the pipeline's buffers start out sized for."},
    {.name = "fused_crop", .type = PB_OPT_BOOL, .offset = OPT(fused_crop), .def = "true",
     .help = "When a crop stage (random_resized_crop, random_crop, center_crop) comes right "
             "after decode, decode only the window it reads (the same random window, drawn from "
             "the header's size; on an EXIF-rotated file, the stored pixels it shows, rotated "
             "after); see scale: window for DCT-reducing it too. Not for CMYK files, nor with a "
             "fixed scale below 1."},
    {0},
};

const char *const pb_jpeg_counters[] = {"scaled", "progressive", "grayscale", "cmyk", NULL};
enum { COUNT_SCALED, COUNT_PROGRESSIVE, COUNT_GRAYSCALE, COUNT_CMYK };

struct jpeg_state {
    struct pb_image_opts o;
    tjhandle tj;
    int32_t want_height, want_width;
    uint8_t *tmp; /* CMYK pixels, or the image before orientation */
    size_t tmp_capacity;
    /* Fused decode and crop: the next stage's window, and the libjpeg
     * decompressor that decodes it (NULL when not fused). */
    bool (*window)(const void *opts, uint64_t seed, int height, int width,
                   struct pb_window *window);
    const void *window_opts;
    struct pb_jpeg_window *fused;
};

/* What the markers before the first scan say. */
struct jpeg_header {
    int width, height, components;
    bool progressive;
    bool adobe;        /* an Adobe APP14 segment: CMYK is stored inverted */
    int orientation;   /* EXIF 1..8, 1 when absent                        */
};

static uint16_t get16(const uint8_t *p, bool big_endian)
{
    return big_endian ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

static uint32_t get32(const uint8_t *p, bool big_endian)
{
    return big_endian ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                      : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* The orientation tag (0x0112) of IFD0 in an Exif APP1 payload (after its
 * length), or 1 when absent or malformed. */
static int exif_orientation(const uint8_t *p, size_t len)
{
    if (len < 14 || memcmp(p, "Exif\0\0", 6) != 0)
        return 1;
    const uint8_t *tiff = p + 6;
    size_t tiff_len = len - 6;
    bool big;
    if (tiff[0] == 'M' && tiff[1] == 'M')
        big = true;
    else if (tiff[0] == 'I' && tiff[1] == 'I')
        big = false;
    else
        return 1;
    if (get16(tiff + 2, big) != 42)
        return 1;
    uint32_t ifd = get32(tiff + 4, big);
    if (ifd > tiff_len || tiff_len - ifd < 2)
        return 1;
    unsigned entries = get16(tiff + ifd, big);
    const uint8_t *e = tiff + ifd + 2;
    if ((size_t)entries * 12 > tiff_len - ifd - 2)
        return 1;
    for (unsigned i = 0; i < entries; i++, e += 12) {
        if (get16(e, big) != 0x0112)
            continue;
        unsigned type = get16(e + 2, big);
        unsigned value = type == 3 ? get16(e + 8, big) : type == 4 ? get32(e + 8, big) : 0;
        return value >= 1 && value <= 8 ? (int)value : 1;
    }
    return 1;
}

/* Walks the segments from SOI to the first SOS. Returns false when no
 * usable frame header is found (libjpeg then explains what is wrong). */
static bool read_header(const uint8_t *b, size_t n, struct jpeg_header *h)
{
    memset(h, 0, sizeof(*h));
    h->orientation = 1;
    if (n < 4 || b[0] != 0xFF || b[1] != 0xD8)
        return false;
    size_t i = 2;
    while (i + 4 <= n) {
        if (b[i] != 0xFF) {
            i++; /* garbage between segments: libjpeg warns, we keep looking */
            continue;
        }
        uint8_t m = b[i + 1];
        if (m == 0xFF) {
            i++; /* fill byte */
            continue;
        }
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
            i += 2;
            continue;
        }
        if (m == 0xD9 || m == 0xDA)
            break;
        size_t len = (size_t)(b[i + 2] << 8 | b[i + 3]);
        if (len < 2 || i + 2 + len > n)
            break;
        const uint8_t *p = b + i + 4;
        size_t plen = len - 2;
        bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
        if (sof && plen >= 6 && h->width == 0) {
            h->height = p[1] << 8 | p[2];
            h->width = p[3] << 8 | p[4];
            h->components = p[5];
            h->progressive = m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE;
        } else if (m == 0xE1 && h->orientation == 1) {
            h->orientation = exif_orientation(p, plen);
        } else if (m == 0xEE && plen >= 5 && memcmp(p, "Adobe", 5) == 0) {
            h->adobe = true;
        }
        i += 2 + len;
    }
    return h->width > 0 && h->height > 0 && h->components > 0;
}

static int grow_tmp(struct jpeg_state *st, size_t bytes)
{
    if (bytes <= st->tmp_capacity)
        return PB_OK;
    size_t capacity = bytes + bytes / 4;
    uint8_t *p = malloc(capacity);
    if (!p)
        return PB_ERR_NOMEM;
    free(st->tmp);
    st->tmp = p;
    st->tmp_capacity = capacity;
    return PB_OK;
}

/* CMYK to RGB (or BGR or gray) in place or forward (dst <= src): the
 * formula PIL uses, no colour management. Adobe files store inverted ink. */
static void cmyk_to_output(uint8_t *dst, const uint8_t *src, size_t pixels, int output,
                           bool inverted)
{
    for (size_t i = 0; i < pixels; i++) {
        unsigned c = src[4 * i], m = src[4 * i + 1], y = src[4 * i + 2], k = src[4 * i + 3];
        if (!inverted) {
            c = 255 - c;
            m = 255 - m;
            y = 255 - y;
            k = 255 - k;
        }
        unsigned r = (c * k + 127) / 255, g = (m * k + 127) / 255, b = (y * k + 127) / 255;
        if (output == PB_IMAGE_GRAY) {
            dst[i] = (uint8_t)((77 * r + 150 * g + 29 * b + 128) >> 8);
        } else {
            dst[3 * i] = (uint8_t)(output == PB_IMAGE_BGR ? b : r);
            dst[3 * i + 1] = (uint8_t)g;
            dst[3 * i + 2] = (uint8_t)(output == PB_IMAGE_BGR ? r : b);
        }
    }
}

/* Where EXIF orientation takes each displayed pixel from, in an image
 * stored width x height with pixels px and rows row apart: displayed
 * (x, y) is stored offset origin + x * step_x + y * step_y. */
static void orient_steps(int orientation, int width, int height, ptrdiff_t px, ptrdiff_t row,
                         ptrdiff_t *origin, ptrdiff_t *step_x, ptrdiff_t *step_y)
{
    ptrdiff_t last_x = (ptrdiff_t)(width - 1) * px, last_y = (ptrdiff_t)(height - 1) * row;
    *origin = 0, *step_x = px, *step_y = row;
    switch (orientation) {
    case 2: *origin = last_x, *step_x = -px, *step_y = row; break;
    case 3: *origin = last_x + last_y, *step_x = -px, *step_y = -row; break;
    case 4: *origin = last_y, *step_x = px, *step_y = -row; break;
    case 5: *origin = 0, *step_x = row, *step_y = px; break;
    case 6: *origin = last_y, *step_x = -row, *step_y = px; break;
    case 7: *origin = last_x + last_y, *step_x = -row, *step_y = -px; break;
    case 8: *origin = last_x, *step_x = row, *step_y = -px; break;
    default: break;
    }
}

/* Writes src (width x height x ch, as stored, rows src_row bytes apart)
 * into dst as EXIF orientation says; dst is height x width for
 * orientations 5..8. */
static void orient(uint8_t *dst, const uint8_t *src, int width, int height, size_t src_row, int ch,
                   int orientation)
{
    ptrdiff_t origin, step_x, step_y;
    orient_steps(orientation, width, height, ch, (ptrdiff_t)src_row, &origin, &step_x, &step_y);
    int out_w = orientation >= 5 ? height : width, out_h = orientation >= 5 ? width : height;
    /* A transposing orientation reads a source column per output row: in
     * tiles of TILE rows the columns' cache lines are reused by the next
     * rows instead of fetched again for each. */
    enum { TILE = 16 };
    int tile = orientation >= 5 ? TILE : out_h;
    for (int y0 = 0; y0 < out_h; y0 += tile) {
        int y1 = y0 + tile < out_h ? y0 + tile : out_h;
        for (int x0 = 0; x0 < out_w; x0 += 64) {
            int x1 = x0 + 64 < out_w ? x0 + 64 : out_w;
            for (int y = y0; y < y1; y++) {
                const uint8_t *s = src + origin + (ptrdiff_t)y * step_y + (ptrdiff_t)x0 * step_x;
                uint8_t *d = dst + ((size_t)y * (size_t)out_w + (size_t)x0) * (size_t)ch;
                if (ch == 3) {
                    for (int x = x0; x < x1; x++, s += step_x, d += 3) {
                        d[0] = s[0];
                        d[1] = s[1];
                        d[2] = s[2];
                    }
                } else {
                    for (int x = x0; x < x1; x++, s += step_x, d += ch)
                        memcpy(d, s, (size_t)ch);
                }
            }
        }
    }
}

static const tjscalingfactor factors[] = {{1, 1}, {1, 2}, {1, 4}, {1, 8}};

static int jpeg_init(void **state, const void *opts, const struct pb_stage_plan *in,
                     struct pb_stage_plan *out, char *msg, size_t msglen)
{
    struct jpeg_state *st = calloc(1, sizeof(*st));
    if (!st)
        return PB_ERR_NOMEM;
    st->o = *(const struct pb_image_opts *)opts;
    st->want_height = in->want_height;
    st->want_width = in->want_width;
    st->tj = tjInitDecompress();
    if (!st->tj) {
        snprintf(msg, msglen, "jpeg: tjInitDecompress failed: %s", tjGetErrorStr2(NULL));
        free(st);
        return PB_ERR;
    }
    pb_image_plan_output(&st->o, out);
    *state = st;
    if (in->window && st->o.fused_crop &&
        (st->o.scale == PB_SCALE_1 || st->o.scale == PB_SCALE_AUTO ||
         st->o.scale == PB_SCALE_WINDOW)) {
        st->window = in->window;
        st->window_opts = in->window_opts;
        st->fused = pb_jpeg_window_new(&st->o);
        if (!st->fused) {
            snprintf(msg, msglen, "jpeg: out of memory for the fused crop decoder");
            tjDestroy(st->tj);
            free(st);
            *state = NULL;
            return PB_ERR_NOMEM;
        }
    }
    return PB_OK;
}

/* The scaling factor index for an image of width x height (as stored;
 * transposed when the orientation swaps the axes). */
static int choose_scale(const struct jpeg_state *st, int width, int height, bool transposed)
{
    if (st->o.scale == PB_SCALE_WINDOW)
        return PB_SCALE_1; /* only a fused crop's window is reduced */
    if (st->o.scale != PB_SCALE_AUTO)
        return st->o.scale;
    if (st->want_height <= 0 && st->want_width <= 0)
        return PB_SCALE_1;
    for (int i = PB_SCALE_1_8; i > PB_SCALE_1; i--) {
        int w = TJSCALED(width, factors[i]), h = TJSCALED(height, factors[i]);
        if (transposed) {
            int t = w;
            w = h;
            h = t;
        }
        if (h >= st->want_height && w >= st->want_width)
            return i;
    }
    return PB_SCALE_1;
}

/* A failed libjpeg call leaves the decompressor mid-stream, so the next
 * file would be read as its continuation ("Bogus marker length" on a valid
 * file): starts a fresh decompressor after s->msg says why the sample
 * failed. Returns PB_ERR_DATA, or PB_ERR when no new one can be made. */
static int reset_after_failure(struct jpeg_state *st, struct pb_sample *s)
{
    tjDestroy(st->tj);
    st->tj = tjInitDecompress();
    if (!st->tj) {
        snprintf(s->msg, s->msglen, "jpeg: tjInitDecompress failed after a corrupt file (%s)",
                 pb_image_sample_name(s));
        return PB_ERR;
    }
    return PB_ERR_DATA;
}

/* libjpeg's reason for the failure, then a fresh decompressor. */
static int libjpeg_failure(struct jpeg_state *st, struct pb_sample *s)
{
    snprintf(s->msg, s->msglen, "%s: %s", pb_image_sample_name(s), tjGetErrorStr2(st->tj));
    return reset_after_failure(st, s);
}

/* The stored pixel (sx, sy) that displayed pixel (x, y) shows, for an
 * image stored w x h under EXIF orientation (orient()'s mapping). */
static void stored_pixel(int orientation, int w, int h, int x, int y, int *sx, int *sy)
{
    ptrdiff_t origin, step_x, step_y;
    orient_steps(orientation, w, h, 1, w, &origin, &step_x, &step_y);
    ptrdiff_t at = origin + (ptrdiff_t)x * step_x + (ptrdiff_t)y * step_y;
    *sx = (int)(at % w);
    *sy = (int)(at / w);
}

/* A rotated or mirrored image's window: the stored window orientation
 * shows as it (opposite corners map to opposite corners) is decoded into
 * tmp, then oriented into s->out, which then holds exactly the window. */
static int decode_oriented_window(struct jpeg_state *st, struct pb_sample *s,
                                  const struct pb_window *window, int stored_w, int stored_h,
                                  int orientation, int channels, int *denom)
{
    int ax, ay, bx, by;
    stored_pixel(orientation, stored_w, stored_h, window->left, window->top, &ax, &ay);
    stored_pixel(orientation, stored_w, stored_h, window->left + window->width - 1,
                 window->top + window->height - 1, &bx, &by);
    struct pb_window stored = *window;
    stored.left = ax < bx ? ax : bx;
    stored.top = ay < by ? ay : by;
    stored.width = abs(bx - ax) + 1;
    stored.height = abs(by - ay) + 1;
    if (orientation >= 5) {
        stored.out_height = window->out_width;
        stored.out_width = window->out_height;
    }
    size_t most = (size_t)window->height * (size_t)window->width * (size_t)channels;
    if (most > s->out_capacity) { /* before decoding: at most the window, unreduced */
        s->out_bytes = most;
        return PB_ERR_NOSPACE;
    }
    struct pb_sample t = *s; /* the same input and message buffer, tmp as output */
    int base = *denom, rc;
    do {
        t.out = st->tmp;
        t.out_capacity = st->tmp_capacity;
        *denom = base;
        rc = pb_jpeg_window_decode(st->fused, &t, &stored, channels, denom);
        if (rc == PB_ERR_NOSPACE && grow_tmp(st, t.out_bytes) != PB_OK) {
            snprintf(s->msg, s->msglen, "%s: out of memory for a %dx%d window", pb_image_sample_name(s),
                     stored.width, stored.height);
            return PB_ERR_NOMEM;
        }
    } while (rc == PB_ERR_NOSPACE);
    if (rc != PB_OK)
        return rc;
    size_t row = (size_t)t.out_shape.width * (size_t)channels;
    orient(s->out, t.out + (size_t)t.window.top * row + (size_t)t.window.left * (size_t)channels,
           t.window.width, t.window.height, row, channels, orientation);
    int out_w = orientation >= 5 ? t.window.height : t.window.width;
    int out_h = orientation >= 5 ? t.window.width : t.window.height;
    s->out_bytes = (size_t)out_w * (size_t)out_h * (size_t)channels;
    s->out_shape = t.out_shape;
    s->out_shape.height = out_h;
    s->out_shape.width = out_w;
    s->window = *window;
    s->window.top = 0;
    s->window.left = 0;
    s->window.height = out_h;
    s->window.width = out_w;
    s->window_set = true;
    return PB_OK;
}

/* Fused decode and crop: only the window the next stage will read, which
 * it has drawn from the displayed image's size at the chosen scale
 * (1/base_denom) as it would on the decoded image (pipelines/stage.h).
 * With scale: window it is reduced while it stays twice its output. An
 * image stored stored_w x stored_h with an EXIF orientation other than 1
 * has its window mapped to the stored pixels and oriented after. */
static int decode_window(struct jpeg_state *st, struct pb_sample *s, const struct jpeg_header *h,
                         struct pb_window window, int base_denom, int orientation, int stored_w,
                         int stored_h)
{
    int channels = st->o.output == PB_IMAGE_GRAY ? 1 : 3;
    window.resamples = window.resamples && st->o.scale == PB_SCALE_WINDOW;
    if (pb_decoded_size_check(s, (double)window.height * window.width * channels, window.width,
                              window.height) != PB_OK)
        return PB_ERR_DATA;
    int denom = base_denom;
    int rc = orientation == 1 ? pb_jpeg_window_decode(st->fused, s, &window, channels, &denom)
                              : decode_oriented_window(st, s, &window, stored_w, stored_h,
                                                       orientation, channels, &denom);
    if (rc != PB_OK)
        return rc;
    s->counters[COUNT_SCALED] += denom != 1;
    s->counters[COUNT_PROGRESSIVE] += h->progressive;
    s->counters[COUNT_GRAYSCALE] += h->components == 1;
    return PB_OK;
}

static int jpeg_decode(void *state, struct pb_sample *s)
{
    struct jpeg_state *st = state;
    const struct pb_image_opts *o = &st->o;
    if (s->in_bytes == 0) {
        snprintf(s->msg, s->msglen, "%s: empty file", pb_image_sample_name(s));
        return PB_ERR_DATA;
    }
    struct jpeg_header h;
    if (!read_header(s->in, s->in_bytes, &h)) {
        int w = 0, ht = 0, subsamp = 0, cs = 0; /* not always set on success */
        if (tjDecompressHeader3(st->tj, s->in, s->in_bytes, &w, &ht, &subsamp, &cs) != 0)
            return libjpeg_failure(st, s);
        /* JPEG sizes are 16-bit and not 0: anything else is a header
         * libjpeg could not read to the end. */
        if (w < 1 || w > 65535 || ht < 1 || ht > 65535) {
            snprintf(s->msg, s->msglen,
                     "%s: corrupt or truncated JPEG header: no valid frame size", pb_image_sample_name(s));
            return reset_after_failure(st, s);
        }
        h.width = w;
        h.height = ht;
        h.components = cs == TJCS_GRAY ? 1 : cs == TJCS_CMYK || cs == TJCS_YCCK ? 4 : 3;
    }
    if ((int64_t)h.width * h.height > o->max_pixels) {
        snprintf(s->msg, s->msglen, "%s: %dx%d JPEG is larger than max_pixels (%lld pixels)",
                 pb_image_sample_name(s), h.width, h.height, (long long)o->max_pixels);
        return PB_ERR_DATA;
    }
    bool cmyk = h.components == 4;
    if (cmyk && o->cmyk == PB_CMYK_REJECT) {
        snprintf(s->msg, s->msglen, "%s: CMYK JPEG not supported (decoder option cmyk: reject)",
                 pb_image_sample_name(s));
        return PB_ERR_DATA;
    }
    int orientation = o->exif_orientation ? h.orientation : 1;
    int scale = choose_scale(st, h.width, h.height, orientation >= 5);
    int width = TJSCALED(h.width, factors[scale]), height = TJSCALED(h.height, factors[scale]);
    struct pb_window window; /* drawn on the image as displayed */
    int shown_h = orientation >= 5 ? width : height, shown_w = orientation >= 5 ? height : width;
    if (st->fused && !cmyk && st->window(st->window_opts, s->seed, shown_h, shown_w, &window))
        return decode_window(st, s, &h, window, factors[scale].denom, orientation, width, height);
    int channels = o->output == PB_IMAGE_GRAY ? 1 : 3;
    size_t pixels = (size_t)width * (size_t)height;
    size_t need = pixels * (size_t)channels;
    if (pb_decoded_size_check(s, (double)need, width, height) != PB_OK)
        return PB_ERR_DATA;
    if (need > s->out_capacity) {
        s->out_bytes = need;
        return PB_ERR_NOSPACE;
    }

    int format = o->output == PB_IMAGE_GRAY ? TJPF_GRAY : o->output == PB_IMAGE_BGR ? TJPF_BGR
                                                                                 : TJPF_RGB;
    /* LIMITSCANS: a progressive file of thousands of scans is refused, not
     * decoded for minutes. */
    int flags = TJFLAG_LIMITSCANS | (o->strict ? TJFLAG_STOPONWARNING : 0) |
                (o->dct == PB_DCT_FAST ? TJFLAG_FASTDCT : 0) |
                (o->fast_upsample ? TJFLAG_FASTUPSAMPLE : 0);
    uint8_t *target = s->out;
    if (cmyk || orientation != 1) {
        if (grow_tmp(st, pixels * (cmyk ? 4u : (size_t)channels)) != PB_OK) {
            snprintf(s->msg, s->msglen, "%s: out of memory for a %dx%d image", pb_image_sample_name(s), width,
                     height);
            return PB_ERR_NOMEM;
        }
        target = st->tmp;
        if (cmyk)
            format = TJPF_CMYK;
    }
    if (tjDecompress2(st->tj, s->in, s->in_bytes, target, width, 0, height, format, flags) != 0) {
        if (o->strict || tjGetErrorCode(st->tj) != TJERR_WARNING)
            return libjpeg_failure(st, s);
    }
    if (cmyk)
        cmyk_to_output(orientation == 1 ? s->out : st->tmp, st->tmp, pixels, o->output, h.adobe);
    if (orientation != 1) {
        orient(s->out, st->tmp, width, height, (size_t)width * (size_t)channels, channels,
               orientation);
        if (orientation >= 5) {
            int t = width;
            width = height;
            height = t;
        }
    }
    s->out_bytes = need;
    s->out_shape = (struct pb_shape){.dtype = PB_DTYPE_U8, .frames = 1, .height = height,
                                     .width = width, .channels = channels,
                                     .layout = PB_LAYOUT_THWC};
    s->counters[COUNT_SCALED] += scale != PB_SCALE_1;
    s->counters[COUNT_PROGRESSIVE] += h.progressive;
    s->counters[COUNT_GRAYSCALE] += h.components == 1;
    s->counters[COUNT_CMYK] += cmyk;
    return PB_OK;
}

static void jpeg_cleanup(void *state)
{
    struct jpeg_state *st = state;
    if (!st)
        return;
    if (st->tj)
        tjDestroy(st->tj);
    pb_jpeg_window_free(st->fused);
    free(st->tmp);
    free(st);
}

const struct pb_decoder_ops pb_decoder_jpeg = {
    .name = "jpeg",
    .summary = "JPEG through libjpeg-turbo: baseline/progressive, DCT scaling, CMYK, EXIF "
               "orientation; RGB, BGR or gray.",
    .counters = pb_jpeg_counters,
    .opts = pb_jpeg_opts,
    .opts_size = sizeof(struct pb_image_opts),
    .output_channels = pb_image_output_channels,
    .init = jpeg_init,
    .decode = jpeg_decode,
    .cleanup = jpeg_cleanup,
};

bool pb_jpeg_dimensions(const uint8_t *data, size_t len, int *width, int *height)
{
    if (len < 4 || data[0] != 0xFF || data[1] != 0xD8)
        return false;
    size_t at = 2;
    while (at + 4 <= len) {
        if (data[at] != 0xFF)
            return false;
        uint8_t marker = data[at + 1];
        if (marker == 0xFF) { /* fill byte */
            at++;
            continue;
        }
        size_t seg = (size_t)data[at + 2] << 8 | data[at + 3];
        /* SOF0..SOF15, less DHT (C4), JPG (C8) and DAC (CC). */
        if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
            marker != 0xCC) {
            if (at + 9 > len)
                return false;
            *height = data[at + 5] << 8 | data[at + 6];
            *width = data[at + 7] << 8 | data[at + 8];
            return *width > 0 && *height > 0;
        }
        if (marker == 0xDA || seg < 2)
            return false; /* scan data before any frame header */
        at += 2 + seg;
    }
    return false;
}
