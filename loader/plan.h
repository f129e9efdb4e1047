/* Epoch plans: which samples, in which order, in which batches.
 *
 * The order is a pure function of (n, seed, epoch, shuffle, rank, world,
 * batch size, drop_last, and an elastic resume's position `from`), so any
 * tool can reproduce it:
 *
 *  0. The subset (serve --rows or --split; loader/subset.h). Without one, n
 *     is the database's sample count and a position is a row. With one of n
 *     rows, steps 1-3 run over positions 0..n-1 and position k then stands
 *     for the subset's k-th row (a split's rows are in ascending order).
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
 *
 *  1e. Elastic resume (from > 0): the order of step 1 (or 1b) is computed
 *      over the n samples as always, its first `from` entries dropped (they
 *      were consumed), and every later step (2, 2b, 2c, 2d) runs over the
 *      rest, order[from..n), as over an epoch of n - from samples: padding
 *      repeats the rest from its start, only at its end. In every order the
 *      first k steps of all the ranks of a world consume a prefix of the
 *      order (padding aside): min(k * B * W, n) entries (steps 2-3, 2b),
 *      min(k * T, n) (2d), or the rows of the first k * W global batches
 *      (2c); pl_plan_position gives it, counted from the order's start.
 *      A state taken after k steps of W ranks thus resumes on W' ranks as
 *      the plan with from = that prefix: what was consumed and what the W'
 *      ranks serve are the epoch exactly once (padding and drop_last
 *      aside), the rest keeps the order's sequence, dealt to the new ranks,
 *      and a budget's global batches come out as before (a batch is cut
 *      from where the previous one ended).
 *
 * Block-shuffled order (order = PL_ORDER_BLOCK; `shuffle` is not read), for
 * payloads read from disk: K = block_rows (0 means 16), w = window_blocks (0
 * means ceil(batch_size / K), one batch), B = batch_size, W = world_size.
 *
 *  1b. Blocks: row i belongs to block i / K (nb = ceil(n / K) blocks, the last
 *      one shorter when K does not divide n). The blocks are permuted by the
 *      Fisher-Yates of step 1 over nb items (same seed, same splitmix64
 *      stream), and their rows laid out block after block, each block's rows
 *      in increasing order. This sequence is cut into windows of w blocks
 *      (the last window may hold fewer); window after window, the same
 *      splitmix64 stream, continued, shuffles the rows inside the window by
 *      Fisher-Yates as in step 1 (i from the window's length - 1 down to 1,
 *      positions relative to the window).
 *  2b. Ranks take whole batches: S = floor(n / (B * W)) steps with drop_last,
 *      else S = ceil(n / (B * W)) (the same count as steps 2-3 give); the
 *      order is cut, or padded by repeating it from its start (cyclically), to
 *      S * B * W entries; batch k of rank r is entries (k * W + r) * B ..
 *      (k * W + r + 1) * B - 1. Every batch has B samples.
 *  3b. The rows of each batch are sorted increasingly (a batch is a set to
 *      the model; consecutive rows are read from the payload in one request).
 *
 * Randomness of the block order: a batch takes rows of the windows it meets.
 * When K divides n and wK = B (the default window with K dividing B), windows
 * and batches coincide, so every batch holds exactly w whole blocks, chosen at
 * random; with wK = cB every batch is a uniformly random B-subset of its
 * window's rows and meets on average w * (1 - C(wK - K, B) / C(wK, B))
 * distinct blocks (tests/test_plan_block.c measures both). Larger windows mix
 * more and read shorter runs.
 *
 * Budgeted batches (budget > 0, pl_plan_new_costs with cost[row]; the row
 * order of step 1, shuffled or not; not with PL_ORDER_BLOCK): batches cost
 * about the same instead of holding the same count.
 *
 *  2c. Global batches: walking the epoch's order, a row joins the current
 *      batch unless the batch is not empty and either holds batch_size rows
 *      or would cost more than `budget` with the row; then the row starts the
 *      next batch. A batch costs at most `budget` unless it is one row that
 *      alone costs more. G batches in all.
 *  3c. Ranks take whole batches: S = floor(G / W) steps with drop_last, else
 *      S = ceil(G / W); step k of rank r is global batch (k * W + r) mod G
 *      (padding repeats the first global batches, as steps 2-3 repeat the
 *      first samples). Every global batch goes to exactly one rank when W
 *      divides G. Rows keep their order within a batch.
 * Resuming at batch b yields batches b, b+1, ... as before.
 *
 * Weighted ranks (rank_weights w[0..W), each >= 1; the row order of step 1;
 * not with a budget or the block order): mixed GPUs get shares proportional
 * to their weights in the same number of steps.
 *
 *  2d. With sum = w[0] + ... + w[W-1] and top = max(w), a step takes
 *      T = floor(B * sum / top) entries; rank r's part of a step starts at
 *      c[r] = floor(T * (w[0] + ... + w[r-1]) / sum) (c[W] = T), so its
 *      batches hold b[r] = c[r+1] - c[r] <= B samples (each must be >= 1).
 *      S = floor(n / T) steps with drop_last, else ceil(n / T); the order is
 *      cut or padded (repeated from its start, cyclically) to S * T entries;
 *      batch k of rank r is entries k * T + c[r] .. k * T + c[r+1] - 1.
 *
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
    uint64_t *off;       /* budgeted plans: [n_batches + 1] batch starts in
                            rows; NULL: batch b starts at b * batch_size */
    uint64_t n_rest;     /* entries of the order the plan runs over (n - from) */
    uint64_t step;       /* entries of the order one step of all ranks takes */
    uint64_t *gstart;    /* budgeted plans: [n_global + 1] global batch starts
                            in the rest (step 2c); else NULL */
    uint64_t n_global;
};

/** Rows [*lo, *hi) of `rows` that make batch b (< n_batches) of plan p. */
static inline void pl__plan_span(const struct pl_plan *p, uint64_t b, uint64_t *lo,
                                 uint64_t *hi)
{
    if (p->off) {
        *lo = p->off[b];
        *hi = p->off[b + 1];
    } else {
        *lo = b * p->o.batch_size;
        *hi = *lo + p->o.batch_size < p->m ? *lo + p->o.batch_size : p->m;
    }
}

/** splitmix64 step (exposed for tests that re-derive the order). */
static inline uint64_t pl__splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

#endif
