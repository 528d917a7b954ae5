/* The terminal side of a session: a progress bar redrawn in place on a
 * terminal, a line per repeat otherwise (logs, CI), the session's messages
 * as "pbench: ..." lines, all on stderr, and SIGINT (Ctrl-C), SIGTERM or
 * SIGHUP raising the session's stop flag from the time it first generates
 * data or measures until the process ends (repeated signals are one stop;
 * a signal never takes its default action there). A signal the process inherited
 * ignored (SIGINT under `&` in a script, SIGHUP under nohup) stays
 * ignored. */
#ifndef PB_PROGRESS_H
#define PB_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/session/session.h"

struct pb_progress {
    const char *command;    /* prefix of error lines: "pbench", "pbench calibrate" */
    bool quiet;             /* errors only                                */
    bool tty;               /* stderr is a terminal: draw the bar         */
    bool in_rounds;         /* between the rounds hook and the end        */
    bool bar_shown;         /* the bar is drawn and its line not ended    */
    int rounds_total, rounds_done;
    uint64_t start_ns;
    char label[256];        /* the current point's axes                   */
    int point, points;      /* 1-based, for the bar                       */
    int round, rounds;
};

/* Sets p up and points hooks at it: messages, progress, the stop signals. */
void pb_progress_init(struct pb_progress *p, const char *command, bool quiet,
                      struct pb_session_hooks *hooks);

/* The signal that raised the stop flag (SIGINT, SIGTERM or SIGHUP); 0 when
 * none did. An interrupted command exits 128 + that number. */
int pb_progress_stop_signal(void);

#endif
