/* Weighted ranks (pl_plan_opts.rank_weights, loader/plan.h step 2d).
 *
 * Re-derived here from the text of plan.h and compared exactly with pl_plan_*
 * over a grid of sample counts, weights, batch sizes, shuffle and drop_last;
 * checked on their own: every rank the same number of steps, batch sizes in
 * proportion to the weights (within one sample), the largest weight's batch
 * the batch size, every sample exactly once when the steps divide the epoch,
 * and the refusals. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pertload.h"
#include "testutil.h"

/* Step 2d: c[0..W] of a step of *T entries; 0 when a rank would get none. */
static int ref_cuts(const uint32_t *w, uint32_t W, uint32_t B, uint64_t *T, uint64_t *c)
{
    uint64_t sum = 0, top = 0, acc = 0;
    for (uint32_t r = 0; r < W; r++) {
        sum += w[r];
        top = w[r] > top ? w[r] : top;
    }
    *T = (uint64_t)B * sum / top; /* small values: no overflow */
    for (uint32_t r = 0; r <= W; r++) {
        c[r] = *T * acc / sum;
        if (r && c[r] == c[r - 1])
            return 0;
        acc += r < W ? w[r] : 0;
    }
    return 1;
}

static void check_point(uint64_t n, const uint32_t *w, uint32_t W, uint32_t B, int shuffle,
                        int drop, uint64_t seed)
{
    uint64_t T, c[9];
    cr_assert(W <= 8);
    pl_plan_opts o = {.n_samples = n, .seed = seed, .epoch = 2, .world_size = W,
                      .batch_size = B, .shuffle = shuffle, .drop_last = drop,
                      .rank_weights = w};
    if (!ref_cuts(w, W, B, &T, c)) {
        pl_plan *p = (pl_plan *)1;
        pl_err err = {0};
        CHECK(pl_plan_new(&o, &p, &err) == PL_EUSAGE && !p, "a rank without samples "
              "was accepted (B=%u)", B);
        CHECK(strstr(err.msg, "raise the batch size") != NULL, "%s", err.msg);
        return;
    }
    uint32_t *order = pl_test_plan_order(n, seed, 2, shuffle);
    uint32_t *seen = calloc(n + 1, sizeof *seen);
    uint64_t *got = malloc(B * sizeof *got);
    uint64_t S = drop ? n / T : (n + T - 1) / T;
    cr_assert(seen && got);
    for (uint32_t r = 0; r < W; r++) {
        o.rank = r;
        pl_plan *p = NULL;
        pl_err err = {0};
        CHECK(pl_plan_new(&o, &p, &err) == 0, "%s", err.msg);
        CHECK(pl_plan_n_batches(p) == S, "rank %u: %llu steps, not %llu", r,
              (unsigned long long)pl_plan_n_batches(p), (unsigned long long)S);
        CHECK(pl_plan_n_samples(p) == S * (c[r + 1] - c[r]), "rank %u: %llu samples", r,
              (unsigned long long)pl_plan_n_samples(p));
        for (uint64_t k = 0; k < S; k++) {
            uint32_t m = pl_plan_batch(p, k, got);
            CHECK(m == c[r + 1] - c[r], "rank %u batch %llu has %u samples, not %llu", r,
                  (unsigned long long)k, m, (unsigned long long)(c[r + 1] - c[r]));
            for (uint32_t i = 0; i < m; i++) {
                uint32_t want = order[(k * T + c[r] + i) % n];
                CHECK(got[i] == want, "n=%llu W=%u B=%u rank %u batch %llu sample %u: %llu, "
                      "the documented plan says %u", (unsigned long long)n, W, B, r,
                      (unsigned long long)k, i, (unsigned long long)got[i], want);
                seen[want]++;
            }
        }
        pl_plan_free(p);
    }
    for (uint64_t i = 0; i < n; i++)
        CHECK(S * T == n ? seen[i] == 1 : drop ? seen[i] <= 1 : seen[i] >= 1,
              "row %llu seen %u times", (unsigned long long)i, seen[i]);
    free(order);
    free(seen);
    free(got);
}

Test(plan_weights, grid_matches_documented_algorithm, .timeout = 300)
{
    static const uint32_t weights[][8] = {{1}, {1, 1}, {3, 1}, {1, 2, 2}, {5, 1, 1, 1},
                                          {2, 3, 5, 7, 11, 13, 1, 1}, {100, 1}};
    static const uint32_t worlds[] = {1, 2, 2, 3, 4, 8, 2};
    static const uint64_t sizes[] = {0, 1, 7, 100, 1000, 4097};
    static const uint32_t batches[] = {1, 3, 16, 64};
    for (size_t a = 0; a < sizeof worlds / sizeof *worlds; a++)
        for (size_t b = 0; b < sizeof sizes / sizeof *sizes; b++)
            for (size_t d = 0; d < sizeof batches / sizeof *batches; d++)
                for (int bits = 0; bits < 4; bits++)
                    check_point(sizes[b], weights[a], worlds[a], batches[d], bits & 1,
                                bits >> 1, 3 + a + d);
}

Test(plan_weights, shares_follow_the_weights)
{
    /* An H100 beside two A100s: weights 3, 2, 2 with batch size 96 give
     * batches of 96, 64 and 64, the same steps, and shares 3:2:2. */
    const uint32_t w[] = {3, 2, 2};
    pl_plan_opts o = {.n_samples = 22400, .seed = 1, .world_size = 3, .batch_size = 96,
                      .shuffle = 1, .rank_weights = w};
    uint64_t rows[96];
    for (uint32_t r = 0; r < 3; r++) {
        o.rank = r;
        pl_plan *p = NULL;
        pl_err err = {0};
        cr_assert_eq(pl_plan_new(&o, &p, &err), 0, "%s", err.msg);
        cr_assert_eq(pl_plan_n_batches(p), 100);
        cr_assert_eq(pl_plan_batch(p, 0, rows), r == 0 ? 96u : 64u);
        cr_assert_eq(pl_plan_n_samples(p), r == 0 ? 9600u : 6400u);
        pl_plan_free(p);
    }
    o.rank = 0;
    const uint32_t zero[] = {1, 0, 2};
    o.rank_weights = zero;
    pl_plan *p = (pl_plan *)1;
    pl_err err = {0};
    cr_assert_eq(pl_plan_new(&o, &p, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "rank 1 has weight 0"), "%s", err.msg);
    o.rank_weights = w;
    o.order = PL_ORDER_BLOCK;
    cr_assert_eq(pl_plan_new(&o, &p, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "weighted ranks take the row order"), "%s", err.msg);
}
