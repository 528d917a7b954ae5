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

bool pb_session_planned_end(const struct pb_run_spec *run, struct pb_repeat_result *rep)
{
    bool fixed = run->min_time_s >= run->max_time_s;
    if (fixed && rep)
        rep->hit_time_cap = rep->noisy = false;
    return fixed;
}

void pb_session_relay_progress(void *user, int repeat, int repeats,
                               const struct pb_repeat_result *done)
{
    const struct pb_session_relay *relay = user;
    struct pb_repeat_result shown = *done; /* its arrays stay the runner's */
    if (relay->fixed_window)
        shown.hit_time_cap = shown.noisy = false;
    relay->hooks->progress(relay->hooks->user, repeat, repeats, &shown);
}

void pb_session_relay_tick(void *user, double samples_per_s, double stall_pct)
{
    const struct pb_session_relay *relay = user;
    relay->hooks->tick(relay->hooks->user, samples_per_s, stall_pct);
}
