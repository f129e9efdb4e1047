/* Block-shuffled epoch plans (PL_ORDER_BLOCK, loader/plan.h steps 1b-3b).
 *
 * The order is re-derived here from the text of plan.h alone and compared
 * exactly with pl_plan_* over a grid of sample counts, ranks, batch sizes,
 * block sizes and windows; exactly-once coverage across ranks and equal step
 * counts are checked on their own; and the documented randomness is
 * measured: with the default window every batch is w whole blocks, with a
 * window of c batches the mean number of distinct blocks per batch matches
 * the hypergeometric expectation. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pertload.h"
#include "testutil.h"

/* Fisher-Yates of a[0..n) from the top (step 1 of plan.h). */
static void ref_shuffle(uint32_t *a, uint64_t n, uint64_t *s)
{
    for (uint64_t i = n; i-- > 1;) {
        uint64_t j = pl_test_mulhi64(pl_test_rand(s), i + 1);
        uint32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* Step 1b: the epoch's block order over all n rows. */
static uint32_t *ref_block_order(uint64_t n, uint64_t seed, uint64_t epoch, uint64_t K,
                                 uint64_t w)
{
    uint64_t nb = (n + K - 1) / K;
    uint32_t *blocks = malloc((nb + 1) * sizeof *blocks), *o = malloc((n + 1) * sizeof *o);
    uint64_t *len = malloc((nb + 1) * sizeof *len);
    cr_assert(blocks && o && len);
    for (uint64_t b = 0; b < nb; b++)
        blocks[b] = (uint32_t)b;
    uint64_t s = seed + epoch * UINT64_C(0x9E3779B97F4A7C15);
    ref_shuffle(blocks, nb, &s);
    uint64_t at = 0;
    for (uint64_t b = 0; b < nb; b++) {
        uint64_t first = (uint64_t)blocks[b] * K, last = first + K < n ? first + K : n;
        len[b] = last - first;
        for (uint64_t r = first; r < last; r++)
            o[at++] = (uint32_t)r;
    }
    CHECK(at == n, "blocks hold %llu rows, not %llu", (unsigned long long)at,
          (unsigned long long)n);
    for (uint64_t b = 0, lo = 0; b < nb; b += w) {
        uint64_t rows = 0;
        for (uint64_t x = b; x < b + w && x < nb; x++)
            rows += len[x];
        ref_shuffle(o + lo, rows, &s);
        lo += rows;
    }
    free(blocks);
    free(len);
    return o;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Steps 2b-3b: batch k of rank r into out[0..B); the steps through *steps. */
static void ref_batch(const uint32_t *order, const pl_plan_opts *o, uint64_t k, uint64_t *out)
{
    uint64_t n = o->n_samples, B = o->batch_size, W = o->world_size;
    uint64_t first = (k * W + o->rank) * B;
    for (uint64_t i = 0; i < B; i++)
        out[i] = order[(first + i) % n];
    qsort(out, B, sizeof *out, cmp_u64);
}

static uint64_t ref_steps(const pl_plan_opts *o)
{
    uint64_t g = (uint64_t)o->batch_size * o->world_size;
    return o->drop_last ? o->n_samples / g : (o->n_samples + g - 1) / g;
}

static pl_plan *make(const pl_plan_opts *o)
{
    pl_plan *p = NULL;
    pl_err err = {0};
    int rc = pl_plan_new(o, &p, &err);
    CHECK(rc == 0 && p, "pl_plan_new(n=%llu rank=%u world=%u batch=%u K=%u w=%u): %d %s",
          (unsigned long long)o->n_samples, o->rank, o->world_size, o->batch_size,
          o->block_rows, o->window_blocks, rc, err.msg);
    return p;
}

static void check_point(uint64_t n, uint32_t W, uint32_t B, uint32_t K, uint32_t w, int drop,
                        uint64_t seed, uint64_t epoch)
{
    pl_plan_opts o = {.n_samples = n, .seed = seed, .epoch = epoch, .world_size = W,
                      .batch_size = B, .drop_last = drop, .order = PL_ORDER_BLOCK,
                      .block_rows = K, .window_blocks = w, .shuffle = (int)(seed & 1)};
    uint64_t Kd = K ? K : 16, wd = w ? w : (B + Kd - 1) / Kd;
    uint32_t *order = ref_block_order(n, seed, epoch, Kd, wd);
    uint64_t S = ref_steps(&o), *want = malloc(B * sizeof *want), *got = malloc(B * sizeof *got);
    uint32_t *seen = calloc(n + 1, sizeof *seen);
    cr_assert(want && got && seen);
    for (uint32_t r = 0; r < W; r++) {
        o.rank = r;
        pl_plan *p = make(&o);
        CHECK(pl_plan_n_batches(p) == S, "n=%llu W=%u B=%u: rank %u has %llu steps, not %llu",
              (unsigned long long)n, W, B, r, (unsigned long long)pl_plan_n_batches(p),
              (unsigned long long)S);
        CHECK(pl_plan_n_samples(p) == S * B, "rank %u: %llu samples", r,
              (unsigned long long)pl_plan_n_samples(p));
        for (uint64_t k = 0; k < S; k++) {
            ref_batch(order, &o, k, want);
            CHECK(pl_plan_batch(p, k, got) == B, "batch %llu is not full",
                  (unsigned long long)k);
            for (uint32_t i = 0; i < B; i++) {
                CHECK(got[i] == want[i], "n=%llu W=%u r=%u B=%u K=%u w=%u drop=%d seed=%llu "
                      "epoch=%llu: batch %llu row %u is %llu, the documented plan says %llu",
                      (unsigned long long)n, W, r, B, K, w, drop, (unsigned long long)seed,
                      (unsigned long long)epoch, (unsigned long long)k, i,
                      (unsigned long long)got[i], (unsigned long long)want[i]);
                seen[got[i]]++;
            }
        }
        CHECK(pl_plan_batch(p, S, got) == 0, "a batch past the end is not empty");
        pl_plan_free(p);
    }
    /* Exactly once: every row once when nothing is dropped or padded; at
     * most once with drop_last; at least once when padded. */
    uint64_t total = S * B * W;
    for (uint64_t i = 0; i < n; i++) {
        if (total == n)
            CHECK(seen[i] == 1, "row %llu seen %u times", (unsigned long long)i, seen[i]);
        else if (drop)
            CHECK(seen[i] <= 1, "row %llu seen %u times", (unsigned long long)i, seen[i]);
        else
            CHECK(seen[i] >= 1 && seen[i] <= 1 + (total - 1) / n, "row %llu seen %u times",
                  (unsigned long long)i, seen[i]);
    }
    free(seen);
    free(want);
    free(got);
    free(order);
}

Test(plan_block, grid_matches_documented_algorithm, .timeout = 300)
{
    static const uint64_t sizes[] = {0, 1, 7, 64, 100, 1000, 4097};
    static const uint32_t worlds[] = {1, 2, 3, 8}, batches[] = {1, 5, 16, 64};
    static const uint32_t blocks[] = {0, 1, 3, 16}, windows[] = {0, 1, 4};
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++)
        for (size_t b = 0; b < sizeof worlds / sizeof *worlds; b++)
            for (size_t c = 0; c < sizeof batches / sizeof *batches; c++)
                for (size_t d = 0; d < sizeof blocks / sizeof *blocks; d++)
                    for (size_t e = 0; e < sizeof windows / sizeof *windows; e++)
                        for (int drop = 0; drop < 2; drop++)
                            check_point(sizes[a], worlds[b], batches[c], blocks[d],
                                        windows[e], drop, 7 + a + d, c + e);
}

Test(plan_block, same_steps_as_the_row_order)
{
    /* Ranks of a job may mix orders only if their step counts agree; the
     * block order keeps the row order's count. */
    for (uint64_t n = 0; n < 300; n += 7)
        for (uint32_t W = 1; W <= 9; W += 4)
            for (uint32_t B = 1; B <= 40; B += 13)
                for (int drop = 0; drop < 2; drop++) {
                    pl_plan_opts o = {.n_samples = n, .world_size = W, .batch_size = B,
                                      .drop_last = drop, .shuffle = 1};
                    pl_plan *rows = make(&o);
                    o.order = PL_ORDER_BLOCK;
                    pl_plan *blk = make(&o);
                    CHECK(pl_plan_n_batches(rows) == pl_plan_n_batches(blk),
                          "n=%llu W=%u B=%u drop=%d: %llu steps in row order, %llu in block",
                          (unsigned long long)n, W, B, drop,
                          (unsigned long long)pl_plan_n_batches(rows),
                          (unsigned long long)pl_plan_n_batches(blk));
                    pl_plan_free(rows);
                    pl_plan_free(blk);
                }
}

/* Distinct blocks (row / K) of each batch of a one-rank plan: their mean,
 * their least and most; each batch's rows sorted and within-block counts
 * returned through *whole (batches made of whole blocks only). */
static double distinct_blocks(pl_plan *p, uint32_t B, uint32_t K, uint64_t *lo, uint64_t *hi,
                              uint64_t *whole)
{
    uint64_t nb = pl_plan_n_batches(p), sum = 0, rows[1024];
    cr_assert(B <= 1024);
    *lo = UINT64_MAX, *hi = 0, *whole = 0;
    for (uint64_t b = 0; b < nb; b++) {
        uint32_t n = pl_plan_batch(p, b, rows);
        uint64_t d = 0, run = 0, all_whole = 1;
        for (uint32_t i = 0; i < n; i++) {
            CHECK(i == 0 || rows[i] > rows[i - 1], "batch %llu is not sorted",
                  (unsigned long long)b);
            if (i == 0 || rows[i] / K != rows[i - 1] / K) {
                if (i)
                    all_whole &= run == K;
                d++;
                run = 0;
            }
            run++;
        }
        all_whole &= run == K;
        *whole += all_whole;
        sum += d;
        *lo = d < *lo ? d : *lo;
        *hi = d > *hi ? d : *hi;
    }
    return nb ? (double)sum / (double)nb : 0;
}

Test(plan_block, default_window_is_whole_blocks)
{
    /* K divides n and B: each batch is w = B / K whole blocks. */
    const uint32_t B = 64, K = 16;
    pl_plan_opts o = {.n_samples = 64 * 500, .seed = 3, .world_size = 1, .batch_size = B,
                      .order = PL_ORDER_BLOCK, .block_rows = K};
    pl_plan *p = make(&o);
    uint64_t lo, hi, whole;
    double mean = distinct_blocks(p, B, K, &lo, &hi, &whole);
    cr_assert_eq(lo, 4, "a batch meets %llu blocks", (unsigned long long)lo);
    cr_assert_eq(hi, 4, "a batch meets %llu blocks", (unsigned long long)hi);
    cr_assert_eq(whole, 500, "%llu of 500 batches are whole blocks", (unsigned long long)whole);
    cr_assert_float_eq(mean, 4.0, 1e-12);
    /* The blocks themselves are shuffled: the first batches are not blocks
     * 0..3, and consecutive batches do not read neighbouring blocks. */
    uint64_t rows[64], near = 0, prev = 0;
    for (uint64_t b = 0; b < 500; b++) {
        pl_plan_batch(p, b, rows);
        if (b && (rows[0] / K == prev + 1 || rows[0] / K + 1 == prev))
            near++;
        prev = rows[63] / K;
    }
    cr_assert_lt(near, 25, "%llu of 500 batches start next to the previous batch's block",
                 (unsigned long long)near);
    pl_plan_free(p);
}

/* log C(a, b) */
static double lchoose(double a, double b)
{
    return lgamma(a + 1) - lgamma(b + 1) - lgamma(a - b + 1);
}

Test(plan_block, larger_windows_mix_as_documented)
{
    /* wK = cB: each batch is a random B-subset of its window; the mean number
     * of distinct blocks is w * (1 - C(wK - K, B) / C(wK, B)). */
    static const struct {
        uint32_t B, K, w;
    } cases[] = {{64, 16, 16}, {64, 16, 32}, {32, 8, 16}, {64, 64, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint32_t B = cases[c].B, K = cases[c].K, w = cases[c].w;
        double wK = (double)w * K;
        pl_plan_opts o = {.n_samples = (uint64_t)w * K * 200, .seed = 11 + c, .world_size = 1,
                          .batch_size = B, .order = PL_ORDER_BLOCK, .block_rows = K,
                          .window_blocks = w};
        pl_plan *p = make(&o);
        uint64_t lo, hi, whole;
        double mean = distinct_blocks(p, B, K, &lo, &hi, &whole);
        double want = w * (1 - exp(lchoose(wK - K, B) - lchoose(wK, B)));
        /* 200 windows of wK / B batches: the standard error of the mean is
         * well below 1% of it; 3% is a wide margin that still tells a window
         * of w blocks from one of w / 2 or 2w. */
        cr_assert(fabs(mean - want) < 0.03 * want,
                  "B=%u K=%u w=%u: %.3f distinct blocks per batch, documented %.3f", B, K, w,
                  mean, want);
        cr_assert_leq(hi, w < B ? w : B, "a batch meets %llu blocks", (unsigned long long)hi);
        pl_plan_free(p);
    }
}

Test(plan_block, resume_and_epochs)
{
    pl_plan_opts o = {.n_samples = 5000, .seed = 9, .epoch = 1, .world_size = 3, .rank = 2,
                      .batch_size = 32, .order = PL_ORDER_BLOCK};
    pl_plan *a = make(&o), *b = make(&o);
    o.epoch = 2;
    pl_plan *c = make(&o);
    uint64_t x[32], y[32], z[32], same = 0;
    for (uint64_t k = pl_plan_n_batches(a); k-- > 0;) { /* any batch, any order */
        pl_plan_batch(a, k, x);
        pl_plan_batch(b, k, y);
        pl_plan_batch(c, k, z);
        cr_assert_arr_eq(x, y, sizeof x, "batch %llu differs between two equal plans",
                         (unsigned long long)k);
        same += !memcmp(x, z, sizeof x);
    }
    cr_assert_eq(same, 0, "%llu batches equal across epochs", (unsigned long long)same);
    pl_plan_free(a);
    pl_plan_free(b);
    pl_plan_free(c);
}

Test(plan_block, unknown_order_is_refused)
{
    pl_plan_opts o = {.n_samples = 10, .world_size = 1, .batch_size = 2, .order = 2};
    pl_plan *p = (pl_plan *)1;
    pl_err err = {0};
    cr_assert_eq(pl_plan_new(&o, &p, &err), PL_EUSAGE);
    cr_assert_null(p);
    cr_assert(strstr(err.msg, "unknown sample order 2"), "%s", err.msg);
}
