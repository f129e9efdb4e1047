/* The rates `pertload bench` prints from event or clock times. */
#ifndef PL_BENCH_RATE_H
#define PL_BENCH_RATE_H

#include <stdint.h>

/** Per second, of `n` batches of `per_batch` each (bytes, samples) taking
 *  `total_ms` milliseconds in all: per_batch * n / (total_ms / 1000). The
 *  amount and the time must cover the same batches (a batch's bytes over the
 *  time of n batches is n times too slow); 0 when nothing was timed. */
static inline double pl_bench_per_s(double per_batch, uint64_t n, double total_ms)
{
    return total_ms > 0 ? per_batch * (double)n / (total_ms / 1e3) : 0;
}

#endif
