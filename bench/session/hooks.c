/* How a session speaks (see hooks.h). */
#include "bench/session/hooks.h"

#include <stdarg.h>
#include <stdio.h>

#include "bench/base/pb.h"

void pb_session_say(const struct pb_session_hooks *hooks, enum pb_session_level level,
                    const char *fmt, ...)
{
    if (!hooks || !hooks->message)
        return;
    char text[PB_MSG_MAX * 3];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    hooks->message(hooks->user, level, text);
}
