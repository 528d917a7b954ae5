/* Text from files and the command line (config names, stage names, file
 * paths, machine strings) as it may be printed on a terminal: without the
 * control characters that would move the cursor, color the screen or break
 * a line. Used by every text, Markdown and CSV renderer; JSON output keeps
 * the exact text (the encoder escapes it). */
#ifndef PB_PRINTABLE_H
#define PB_PRINTABLE_H

#include <stddef.h>

/* Room for a text of n bytes once every byte is escaped. */
#define PB_PRINTABLE_SIZE(n) (4 * (n) + 1)

/* Copies text into buf (size > 0 bytes), writing each control character
 * (a byte below 0x20, 0x7f, and the UTF-8 form of U+0080..U+009F) as a
 * \xNN escape: "\x1b[31mred\nline" becomes "\\x1b[31mred\\x0aline". Cut
 * to fit, never inside an escape. Returns buf, for use as a printf
 * argument. */
char *pb_printable(char *buf, size_t size, const char *text);

#endif
