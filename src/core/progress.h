/* Progress lines on a terminal (counts, rate, ETA); silent in pipes. */
#ifndef PL_CORE_PROGRESS_H
#define PL_CORE_PROGRESS_H

#include <stdint.h>

typedef struct pl__progress {
    int on;
    const char *what;
    uint64_t total;   /* 0 when unknown */
    double t0, last;
} pl__progress;

/** Monotonic seconds. */
double pl__now(void);

/** CPU seconds of the process so far: time that other work on a shared
 *  machine does not inflate (the benchmarks' single-core figures). */
double pl__cpu_now(void);

/** Start a progress line. @param mode 1 on, 0 off, -1 on when stderr is a tty. */
void pl__progress_start(pl__progress *p, int mode, const char *what, uint64_t total);

/** Report `done` units; prints at most five times a second.
 *  @param frac fraction of the work done (for the ETA when the total is not
 *  known in units, e.g. bytes of a file read); negative: done / total. */
void pl__progress_update(pl__progress *p, uint64_t done, double frac);

/** Print the final count and end the line. */
void pl__progress_end(pl__progress *p, uint64_t done);

#endif
