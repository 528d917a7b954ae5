/* The slowest samples of each stage (the five longest, with their files):
 * a huge or pathological file is often the whole story of a long tail.
 * Each loader thread keeps its own five per stage in struct pb_stage_stats
 * (pb_slowest_add on the hot path: one compare in the common case, no
 * allocation); they are merged into the stage rows of a repeat, then of a
 * point, and written in the JSON as "slowest" (the stage row's side is
 * in bench/result/result.h). */
#ifndef PB_SLOWEST_H
#define PB_SLOWEST_H

#include <stdint.h>

/* How many slow samples each stage keeps (five). */
#define PB_SLOWEST_SAMPLES 5

/* Five (ns, sample) pairs, slowest first; ns 0 marks an empty place. */
struct pb_slowest {
    uint64_t ns[PB_SLOWEST_SAMPLES];
    uint64_t sample[PB_SLOWEST_SAMPLES];
};

/* Keeps (ns, sample) when it is among the five slowest seen, each sample
 * once at its slowest (a big file read every epoch would otherwise fill
 * all five places). The common case is the first compare. */
static inline void pb_slowest_add(struct pb_slowest *s, uint64_t sample, uint64_t ns)
{
    if (ns <= s->ns[PB_SLOWEST_SAMPLES - 1])
        return;
    int i = PB_SLOWEST_SAMPLES - 1;
    for (int k = 0; k < PB_SLOWEST_SAMPLES && s->ns[k]; k++) {
        if (s->sample[k] != sample)
            continue;
        if (ns <= s->ns[k])
            return; /* already there, slower */
        i = k;      /* move it up from its own place */
        break;
    }
    for (; i > 0 && s->ns[i - 1] < ns; i--) {
        s->ns[i] = s->ns[i - 1];
        s->sample[i] = s->sample[i - 1];
    }
    s->ns[i] = ns;
    s->sample[i] = sample;
}

#endif
