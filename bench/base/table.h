/* Small tables of text cells, rendered as aligned plain text or as a
 * GitHub Markdown table: the shape every human-readable report of pbench
 * is built from. Cells are formatted once, made printable (control
 * characters escaped: they often hold names from a result file) and kept
 * until pb_table_free. */
#ifndef PB_TABLE_H
#define PB_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define PB_TABLE_CELL_MAX 512 /* bytes of one cell before it is made printable */

struct pb_table {
    size_t cols;
    size_t cell_count, capacity;
    char **cells;        /* row-major; the first row is the header        */
    unsigned right_mask; /* bit c set: column c is right-aligned          */
    bool plain_header;   /* text form: print no header (key/value lists)  */
};

/* Starts an empty table of cols columns (at most 16 are printed as text). */
void pb_table_init(struct pb_table *t, size_t cols, unsigned right_mask, bool plain_header);

/* Appends one cell, row by row; a cell that cannot be stored (out of
 * memory) is dropped. */
void pb_table_add(struct pb_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Releases the cells; t may be initialized again. */
void pb_table_free(struct pb_table *t);

/* Aligned text, each row after indent, the header underlined (or left out
 * with plain_header). UTF-8 cells are measured in code points. */
void pb_table_print_text(FILE *out, const struct pb_table *t, const char *indent);

/* A GitHub Markdown table ('|' escaped, newlines as spaces, and &, <, >
 * as entities: cells hold names from configs and results, shown as
 * written, never as HTML). */
void pb_table_print_markdown(FILE *out, const struct pb_table *t);

/* The bytes pb_markdown_text may need for text of n bytes. */
#define PB_MARKDOWN_SIZE(n) (5 * (n) + 1)

/* text (a name from a config or result, already printable) for GitHub
 * Markdown: &, < and > as entities, so it shows as written and is never
 * HTML; in_cell also escapes '|' and turns line breaks into spaces (a
 * table cell). Writes into buf of size bytes, cut before a character or
 * entity that does not fit, and returns buf. */
const char *pb_markdown_text(char *buf, size_t size, const char *text, bool in_cell);

#endif
