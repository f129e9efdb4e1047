#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

double pl__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double pl__cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void pl__progress_start(pl__progress *p, int mode, const char *what, uint64_t total)
{
    p->on = mode < 0 ? isatty(STDERR_FILENO) : mode;
    p->what = what;
    p->total = total;
    p->t0 = p->last = pl__now();
}

static void print(pl__progress *p, uint64_t done, double frac, double now, const char *end)
{
    double dt = now - p->t0, rate = dt > 0 ? (double)done / dt : 0;
    if (frac < 0 && p->total)
        frac = (double)done / (double)p->total;
    if (frac > 0 && frac < 1 && p->total)
        fprintf(stderr, "\r%s: %llu / %llu (%.1f%%)  %.0f/s  ETA %.0fs   %s", p->what,
                (unsigned long long)done, (unsigned long long)p->total, 100.0 * frac, rate,
                dt * (1 - frac) / frac, end);
    else if (frac > 0 && frac < 1)
        fprintf(stderr, "\r%s: %llu (%.1f%%)  %.0f/s  ETA %.0fs   %s", p->what,
                (unsigned long long)done, 100.0 * frac, rate, dt * (1 - frac) / frac, end);
    else
        fprintf(stderr, "\r%s: %llu  %.0f/s  %.1fs   %s", p->what, (unsigned long long)done,
                rate, dt, end);
    fflush(stderr);
}

void pl__progress_update(pl__progress *p, uint64_t done, double frac)
{
    if (!p->on)
        return;
    double now = pl__now();
    if (now - p->last < 0.2)
        return;
    p->last = now;
    print(p, done, frac, now, "");
}

void pl__progress_end(pl__progress *p, uint64_t done)
{
    if (p->on)
        print(p, done, 1.0, pl__now(), "\n");
}
