/* Printable text: control characters as \xNN escapes. */
#include "bench/base/printable.h"

#include <stdbool.h>
#include <stdio.h>

char *pb_printable(char *buf, size_t size, const char *text)
{
    size_t used = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        /* A C1 control in UTF-8 is 0xc2 then 0x80..0x9f: both bytes go. */
        bool c1 = c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f;
        size_t bytes = c1 ? 2 : 1;
        if (c[0] < 0x20 || c[0] == 0x7f || c1) {
            if (used + 4 * bytes >= size)
                break;
            for (size_t b = 0; b < bytes; b++)
                used += (size_t)snprintf(buf + used, size - used, "\\x%02x", c[b]);
            c += bytes - 1;
        } else {
            if (used + 1 >= size)
                break;
            buf[used++] = (char)*c;
        }
    }
    buf[used] = '\0';
    return buf;
}
