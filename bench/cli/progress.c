/* Session progress and messages on stderr (see progress.h). */
#include "bench/cli/progress.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/base/fmt.h"
#include "bench/base/pb.h"
#include "bench/base/printable.h"
#include "bench/run/hooks.h"

/* The session's stop flag: the number of the signal that raised it. */
static volatile sig_atomic_t stop_signal;

/* The signals that stop a session politely, and what they did before. */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction saved_actions[PB_ARRAY_LEN(stop_signals)];
static bool handled[PB_ARRAY_LEN(stop_signals)];

/* When the first stop signal came (CLOCK_MONOTONIC, ns). */
static volatile sig_atomic_t first_stop_s;

/* A stop signal raises the flag and stays handled: SIGTERM sent twice (GNU
 * timeout sends it to pbench, then to its process group) or SIGHUP after
 * SIGTERM is one stop, and the first signal's number is kept for the exit
 * code. Only a second Ctrl-C typed at the terminal (the kernel sends it:
 * SI_KERNEL), a second or more after the first, asks for the stop to be
 * at once: the loop stops waiting for loader threads still inside a
 * stage (the session still writes what was measured, and says so). */
static void on_stop_signal(int sig, siginfo_t *info, void *context)
{
    (void)context;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!stop_signal) {
        stop_signal = sig;
        first_stop_s = (sig_atomic_t)now.tv_sec;
        return;
    }
    if (sig != SIGINT || info->si_code != SI_KERNEL || (stop_signal & PB_RUN_STOP_NOW) ||
        now.tv_sec - first_stop_s < 2)
        return;
    stop_signal |= PB_RUN_STOP_NOW;
    static const char said[] = "\npbench: second Ctrl-C: stopping now, without waiting for the "
                               "loader threads\n";
    ssize_t ignored = write(STDERR_FILENO, said, sizeof(said) - 1);
    (void)ignored;
}

int pb_progress_stop_signal(void)
{
    return stop_signal & ~PB_RUN_STOP_NOW;
}

static void draw_bar(struct pb_progress *p, double samples_per_s, bool live)
{
    if (p->quiet || !p->tty)
        return;
    int width = 24, filled = p->rounds_total ? width * p->rounds_done / p->rounds_total : 0;
    char bar[32], eta[32] = "?";
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = 0;
    if (p->rounds_done > 0) {
        double elapsed = (double)(pb_now_ns() - p->start_ns) / 1e9;
        pb_fmt_eta(elapsed / p->rounds_done * (p->rounds_total - p->rounds_done), eta,
                           sizeof(eta));
    }
    fprintf(stderr, "\r\033[K[%s] round %d/%d point %d/%d %s · %.0f samples/s%s · ETA %s", bar,
            p->round, p->rounds, p->point, p->points, p->label, samples_per_s,
            live ? " (running)" : "", eta);
    fflush(stderr);
    p->bar_shown = true;
}

static void on_progress(void *user, int repeat, int repeats, const struct pb_repeat_result *r)
{
    struct pb_progress *p = user;
    p->rounds_done++;
    if (p->quiet)
        return;
    if (p->tty) {
        draw_bar(p, r->samples_per_s, false);
        return;
    }
    fprintf(stderr, "  %s%s%srepeat %d/%d: %.1f samples/s, stall %.1f%%, %.2f s measured, %llu "
                    "batches%s%s\n",
            p->points > 1 ? "point " : "", p->points > 1 ? p->label : "", p->points > 1 ? " " : "",
            repeat + 1, repeats, r->samples_per_s, r->stall_pct, r->wall_s,
            (unsigned long long)r->batches, r->hit_time_cap ? ", hit run.max_time_s" : "",
            r->interrupted ? ", interrupted" : "");
}

static void on_tick(void *user, double samples_per_s, double stall_pct)
{
    (void)stall_pct; /* the bar shows throughput; the stall is the repeat line's */
    draw_bar(user, samples_per_s, true);
}

static void on_message(void *user, enum pb_session_level level, const char *text)
{
    struct pb_progress *p = user;
    if (level != PB_SESSION_ERROR && p->quiet)
        return;
    /* A message ends the bar's line rather than overwrite it. */
    if (p->bar_shown) {
        fputc('\n', stderr);
        p->bar_shown = false;
    }
    /* A key or a path with a newline or a tab prints escaped, as the
     * table writes it, never as a line of its own. */
    size_t size = PB_PRINTABLE_SIZE(strlen(text));
    char *shown = malloc(size);
    fprintf(stderr, "%s: %s%s\n", level == PB_SESSION_ERROR ? p->command : "pbench",
            level == PB_SESSION_WARNING ? "warning: " : "",
            shown ? pb_printable(shown, size, text) : text);
    free(shown);
}

static void on_measuring(void *user, bool on)
{
    struct pb_progress *p = user;
    for (size_t i = 0; i < PB_ARRAY_LEN(stop_signals); i++) {
        if (on && !handled[i]) {
            struct sigaction sa;
            memset(&sa, 0, sizeof(sa));
            sa.sa_sigaction = on_stop_signal;
            sa.sa_flags = SA_SIGINFO;
            sigemptyset(&sa.sa_mask);
            /* A signal inherited ignored stays ignored: whoever started
             * pbench asked for that. */
            if (sigaction(stop_signals[i], NULL, &saved_actions[i]) == 0 &&
                saved_actions[i].sa_handler != SIG_IGN)
                handled[i] = sigaction(stop_signals[i], &sa, NULL) == 0;
        }
        /* Off, the handlers stay until the process ends: a signal while the
         * table is printed must not kill it either, and the exit code says
         * whether the session was cut short. */
    }
    if (on)
        return;
    if (p->bar_shown)
        fputc('\n', stderr);
    p->bar_shown = false;
    p->in_rounds = false;
}

static void on_rounds(void *user, int points, int repeats)
{
    struct pb_progress *p = user;
    p->points = points;
    p->rounds = repeats;
    p->rounds_total = points * repeats;
    p->start_ns = pb_now_ns();
    p->in_rounds = true;
}

static void on_round(void *user, int point, int round, const char *label)
{
    struct pb_progress *p = user;
    p->point = point;
    p->round = round;
    snprintf(p->label, sizeof(p->label), "%s", label);
}

void pb_progress_init(struct pb_progress *p, const char *command, bool quiet,
                      struct pb_session_hooks *hooks)
{
    *p = (struct pb_progress){.command = command, .quiet = quiet, .tty = isatty(2) != 0};
    *hooks = (struct pb_session_hooks){
        .user = p,           .message = on_message, .measuring = on_measuring,
        .rounds = on_rounds, .round = on_round,     .progress = on_progress,
        .tick = on_tick,     .stop = &stop_signal,
    };
}
