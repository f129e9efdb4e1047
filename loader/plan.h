/* Epoch plans: which samples, in which order, in which batches.
 *
 * The order is a pure function of (n, seed, epoch, shuffle, rank, world,
 * batch size, drop_last), so any tool can reproduce it:
 *
 *  0. The subset (serve --rows; loader/subset.h). Without one, n is the
 *     database's sample count and a position is a row. With one of n rows,
 *     steps 1-3 run over positions 0..n-1 and position k then stands for
 *     the subset's k-th row.
 *  1. Permutation. Without shuffle, order[i] = i. With shuffle, start from the
 *     identity and run Fisher-Yates from the top: for i = n-1 down to 1,
 *     j = (x * (i + 1)) >> 64 (128-bit product) where x is the next output of
 *     splitmix64 seeded with seed + epoch * 0x9E3779B97F4A7C15 (mod 2^64);
 *     swap order[i] and order[j].
 *     splitmix64: s += 0x9E3779B97F4A7C15; z = s;
 *     z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9; z = (z ^ z >> 27) * 0x94D049BB133111EB;
 *     x = z ^ z >> 31.
 *  2. Ranks, as torch's DistributedSampler: with drop_last the order is cut
 *     to m * world entries, m = floor(n / world); otherwise it is padded to
 *     m * world entries, m = ceil(n / world), by repeating it from its start
 *     (cyclically when world > n). Rank r takes entries r, r + world,
 *     r + 2 * world, ... (m of them).
 *  3. Batches: the rank's m samples in runs of batch_size; with drop_last a
 *     final partial batch is dropped.
 * Resuming at batch b yields batches b, b+1, ... of the same plan.
 * The public interface is in pertload.h (pl_plan_*).
 */
#ifndef PL_LOADER_PLAN_H
#define PL_LOADER_PLAN_H

#include <stdint.h>

#include "pertload.h"

struct pl_plan {
    pl_plan_opts o;
    uint64_t m;          /* the rank's samples */
    uint64_t n_batches;
    uint32_t *rows;      /* [m] sample-store rows in order */
};

/** splitmix64 step (exposed for tests that re-derive the order). */
static inline uint64_t pl__splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

#endif
