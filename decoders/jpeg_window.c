/* The JPEG decoder's fused crop (decoders/jpeg_window.h): only the window a crop stage
 * reads is decoded, through libjpeg-turbo's libjpeg API. */
#include "decoders/jpeg_window.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "bench/base/pb.h"

/* TurboJPEG's TJFLAG_LIMITSCANS: more scans than this is a corrupt or
 * hostile progressive file, refused rather than decoded for minutes. */
#define MAX_SCANS 500
/* Rows handed to jpeg_read_scanlines at once (libjpeg gives at most its
 * output iMCU row, up to 16 rows). */
#define ROWS_PER_READ 16

struct error_mgr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    bool strict;
    char text[JMSG_LENGTH_MAX];
};

struct pb_jpeg_window {
    struct jpeg_decompress_struct d;
    struct error_mgr err;
    struct jpeg_progress_mgr progress;
    struct pb_image_opts o;
};

static void on_error(j_common_ptr cinfo)
{
    struct error_mgr *e = (struct error_mgr *)cinfo->err;
    cinfo->err->format_message(cinfo, e->text);
    longjmp(e->jump, 1);
}

/* Warnings (corrupt data libjpeg fills in) fail the sample when strict, as
 * TJFLAG_STOPONWARNING does; trace messages are dropped. */
static void on_message(j_common_ptr cinfo, int level)
{
    struct error_mgr *e = (struct error_mgr *)cinfo->err;
    if (level < 0) {
        cinfo->err->num_warnings++;
        if (e->strict) {
            cinfo->err->format_message(cinfo, e->text);
            longjmp(e->jump, 1);
        }
    }
}

static void on_progress(j_common_ptr cinfo)
{
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (cinfo->is_decompressor && d->progressive_mode && d->input_scan_number > MAX_SCANS) {
        struct error_mgr *e = (struct error_mgr *)cinfo->err;
        snprintf(e->text, sizeof(e->text), "Progressive JPEG image has more than %d scans",
                 MAX_SCANS);
        longjmp(e->jump, 1);
    }
}

struct pb_jpeg_window *pb_jpeg_window_new(const struct pb_image_opts *o)
{
    struct pb_jpeg_window *volatile w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->o = *o;
    w->d.err = jpeg_std_error(&w->err.pub);
    w->err.pub.error_exit = on_error;
    w->err.pub.emit_message = on_message;
    w->err.strict = o->strict;
    if (setjmp(w->err.jump)) {
        free(w); /* jpeg_create_decompress ran out of memory */
        return NULL;
    }
    jpeg_create_decompress(&w->d);
    w->progress.progress_monitor = on_progress;
    w->d.progress = &w->progress;
    return w;
}

void pb_jpeg_window_free(struct pb_jpeg_window *w)
{
    if (!w)
        return;
    jpeg_destroy_decompress(&w->d);
    free(w);
}

int pb_jpeg_window_scale(const struct pb_window *window)
{
    int denom = 1;
    if (!window->resamples || window->out_height < 1 || window->out_width < 1)
        return 1;
    while (denom < 8 && window->height / (denom * 2) >= window->out_height &&
           window->width / (denom * 2) >= window->out_width)
        denom *= 2;
    return denom;
}

static J_COLOR_SPACE color_space(const struct pb_image_opts *o, int channels)
{
    if (channels == 1)
        return JCS_GRAYSCALE;
    return o->output == PB_IMAGE_BGR ? JCS_EXT_BGR : JCS_RGB;
}

int pb_jpeg_window_decode(struct pb_jpeg_window *w, struct pb_sample *s,
                          const struct pb_window *window, int channels, int *denom)
{
    struct jpeg_decompress_struct *d = &w->d;
    int base = *denom, extra = pb_jpeg_window_scale(window);
    while (base * extra > 8)
        extra /= 2;
    if (setjmp(w->err.jump)) {
        jpeg_abort_decompress(d);
        snprintf(s->msg, s->msglen, "%s: %s", s->path ? s->path : "(sample)", w->err.text);
        return PB_ERR_DATA;
    }
    jpeg_mem_src(d, s->in, (unsigned long)s->in_bytes);
    jpeg_read_header(d, TRUE);
    d->out_color_space = color_space(&w->o, channels);
    d->dct_method = w->o.dct == PB_DCT_FAST ? JDCT_IFAST : JDCT_ISLOW;
    d->do_fancy_upsampling = !w->o.fast_upsample;
    d->scale_num = 1;
    d->scale_denom = (unsigned)(base * extra);
    jpeg_start_decompress(d);
    *denom = base * extra;

    /* The window in the (further scaled) output, rounded outwards. */
    int k = extra, full_h = (int)d->output_height, full_w = (int)d->output_width;
    int top = window->top / k, left = window->left / k;
    int bottom = (window->top + window->height + k - 1) / k;
    int right = (window->left + window->width + k - 1) / k;
    bottom = bottom < full_h ? bottom : full_h;
    right = right < full_w ? right : full_w;
    JDIMENSION x = (JDIMENSION)left, width = (JDIMENSION)(right - left);
    if ((int)width < full_w)
        jpeg_crop_scanline(d, &x, &width); /* widens to iMCU columns */
    size_t row_bytes = (size_t)d->output_width * (size_t)channels;
    int rows = bottom - top;
    size_t need = row_bytes * (size_t)rows;
    if (need > s->out_capacity) {
        jpeg_abort_decompress(d);
        s->out_bytes = need;
        return PB_ERR_NOSPACE;
    }
    if (top > 0)
        jpeg_skip_scanlines(d, (JDIMENSION)top);
    while ((int)d->output_scanline < bottom) {
        int at = (int)d->output_scanline - top;
        JSAMPROW ptrs[ROWS_PER_READ];
        int n = bottom - (int)d->output_scanline;
        n = n < ROWS_PER_READ ? n : ROWS_PER_READ;
        for (int i = 0; i < n; i++)
            ptrs[i] = s->out + (size_t)(at + i) * row_bytes;
        if (jpeg_read_scanlines(d, ptrs, (JDIMENSION)n) == 0) {
            jpeg_abort_decompress(d);
            snprintf(s->msg, s->msglen, "%s: libjpeg returned no rows at row %d",
                     s->path ? s->path : "(sample)", (int)d->output_scanline);
            return PB_ERR_DATA;
        }
    }
    jpeg_abort_decompress(d); /* the rows below the window are never decoded */

    s->out_bytes = need;
    s->out_shape = (struct pb_shape){.dtype = PB_DTYPE_U8,
                                     .frames = 1,
                                     .height = rows,
                                     .width = (int32_t)d->output_width,
                                     .channels = channels,
                                     .layout = PB_LAYOUT_THWC};
    s->window = *window;
    s->window.top = 0;
    s->window.left = left - (int)x;
    s->window.height = rows;
    s->window.width = right - left;
    s->window_set = true;
    return PB_OK;
}
