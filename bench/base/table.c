/* Text tables (bench/base/table.h): cells made printable, rendered aligned for a terminal
 * or as GitHub Markdown. */
#include "bench/base/table.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"
#include "bench/base/printable.h"

void pb_table_init(struct pb_table *t, size_t cols, unsigned right_mask, bool plain_header)
{
    memset(t, 0, sizeof(*t));
    t->cols = cols;
    t->right_mask = right_mask;
    t->plain_header = plain_header;
}

void pb_table_add(struct pb_table *t, const char *fmt, ...)
{
    char raw[PB_TABLE_CELL_MAX], text[PB_PRINTABLE_SIZE(PB_TABLE_CELL_MAX)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    pb_printable(text, sizeof(text), raw); /* cells hold names from the result */
    if (t->cell_count == t->capacity) {
        size_t capacity = t->capacity ? 2 * t->capacity : 64;
        char **cells = realloc(t->cells, capacity * sizeof(*cells));
        if (!cells)
            return;
        t->cells = cells;
        t->capacity = capacity;
    }
    char *copy = strdup(text);
    if (copy)
        t->cells[t->cell_count++] = copy;
}

void pb_table_free(struct pb_table *t)
{
    for (size_t i = 0; i < t->cell_count; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

/* Display width of UTF-8 text: code points, not bytes ("µs" is 2). */
static size_t text_width(const char *s)
{
    size_t width = 0;
    for (; *s; s++)
        width += ((unsigned char)*s & 0xC0) != 0x80;
    return width;
}

static void put_spaces(FILE *out, size_t n)
{
    while (n--)
        fputc(' ', out);
}

void pb_table_print_text(FILE *out, const struct pb_table *t, const char *indent)
{
    size_t rows = t->cell_count / t->cols;
    size_t first = t->plain_header ? 1 : 0;
    size_t widths[16] = {0};
    if (t->cols > PB_ARRAY_LEN(widths) || rows <= first)
        return;
    for (size_t r = first; r < rows; r++)
        for (size_t c = 0; c < t->cols; c++) {
            size_t w = text_width(t->cells[r * t->cols + c]);
            if (w > widths[c])
                widths[c] = w;
        }
    for (size_t r = first; r < rows; r++) {
        fputs(indent, out);
        for (size_t c = 0; c < t->cols; c++) {
            const char *cell = t->cells[r * t->cols + c];
            size_t pad = widths[c] - text_width(cell);
            bool right = (t->right_mask >> c) & 1u;
            bool last = c + 1 == t->cols;
            if (right)
                put_spaces(out, pad);
            fputs(cell, out);
            if (!right && !last)
                put_spaces(out, pad);
            if (!last)
                fputs("  ", out);
        }
        fputc('\n', out);
        if (r == 0) {
            size_t total = 0;
            for (size_t c = 0; c < t->cols; c++)
                total += widths[c] + (c + 1 < t->cols ? 2 : 0);
            fputs(indent, out);
            for (size_t i = 0; i < total; i++)
                fputc('-', out);
            fputc('\n', out);
        }
    }
}

/* What c becomes in Markdown text (in a table cell when in_cell), or NULL
 * when it stays as it is. */
static const char *markdown_escape(char c, bool in_cell)
{
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '|': return in_cell ? "\\|" : NULL;
    case '\n':
    case '\r': return in_cell ? " " : NULL;
    default: return NULL;
    }
}

const char *pb_markdown_text(char *buf, size_t size, const char *text, bool in_cell)
{
    size_t used = 0;
    if (size == 0)
        return buf;
    for (; *text; text++) {
        const char *escaped = markdown_escape(*text, in_cell);
        size_t len = escaped ? strlen(escaped) : 1;
        if (used + len >= size)
            break;
        memcpy(buf + used, escaped ? escaped : text, len);
        used += len;
    }
    buf[used] = '\0';
    return buf;
}

static void put_markdown_cell(FILE *out, const char *cell)
{
    for (; *cell; cell++) {
        const char *escaped = markdown_escape(*cell, true);
        if (escaped)
            fputs(escaped, out);
        else
            fputc(*cell, out);
    }
}

void pb_table_print_markdown(FILE *out, const struct pb_table *t)
{
    size_t rows = t->cell_count / t->cols;
    if (rows < 1)
        return;
    for (size_t r = 0; r < rows; r++) {
        fputs("|", out);
        for (size_t c = 0; c < t->cols; c++) {
            fputc(' ', out);
            put_markdown_cell(out, t->cells[r * t->cols + c]);
            fputs(" |", out);
        }
        fputc('\n', out);
        if (r == 0) {
            fputs("|", out);
            for (size_t c = 0; c < t->cols; c++)
                fputs((t->right_mask >> c) & 1u ? " ---: |" : " --- |", out);
            fputc('\n', out);
        }
    }
    fputc('\n', out);
}
