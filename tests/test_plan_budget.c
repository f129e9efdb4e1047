/* Budgeted epoch plans (pl_plan_new_costs, loader/plan.h steps 2c-3c).
 *
 * Re-derived here from the text of plan.h and compared exactly with pl_plan_*
 * over a grid of sample counts, ranks, budgets, batch caps, shuffle and
 * drop_last, with costs drawn at random (zeros, and rows that alone exceed
 * the budget, included); checked on their own: every rank the same number of
 * steps, every batch within the budget (or one row), every row exactly once
 * when the ranks divide the batches, resuming mid-epoch. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pertload.h"
#include "testutil.h"

/* Step 2c: global batch g is order[start[g] .. start[g + 1]); returns G. */
static uint64_t ref_global(const uint32_t *order, const uint32_t *cost, uint64_t n,
                           uint64_t budget, uint64_t cap, uint64_t *start)
{
    uint64_t G = 0;
    for (uint64_t i = 0; i < n;) {
        start[G++] = i;
        uint64_t sum = cost[order[i]], k = 1; /* a batch takes its first row */
        for (i++; i < n && k < cap && sum + cost[order[i]] <= budget; i++, k++)
            sum += cost[order[i]];
    }
    start[G] = n;
    return G;
}

static pl_plan *make(const pl_plan_opts *o, const uint32_t *cost)
{
    pl_plan *p = NULL;
    pl_err err = {0};
    int rc = pl_plan_new_costs(o, cost, &p, &err);
    CHECK(rc == 0 && p, "pl_plan_new_costs(n=%llu rank=%u world=%u budget=%llu): %d %s",
          (unsigned long long)o->n_samples, o->rank, o->world_size,
          (unsigned long long)o->budget, rc, err.msg);
    return p;
}

static void check_point(uint64_t n, uint32_t W, uint32_t cap, uint64_t budget, int shuffle,
                        int drop, uint64_t seed)
{
    uint64_t r = seed * 77 + n;
    uint32_t *cost = malloc((n + 1) * sizeof *cost);
    uint64_t *start = malloc((n + 2) * sizeof *start), *got = malloc(cap * sizeof *got);
    uint32_t *seen = calloc(n + 1, sizeof *seen);
    cr_assert(cost && start && got && seen);
    for (uint64_t i = 0; i < n; i++) /* 0 .. 2 * budget: zeros and oversized rows too */
        cost[i] = (uint32_t)pl_test_below(&r, 2 * budget + 1);
    uint32_t *order = pl_test_plan_order(n, seed, 3, shuffle);
    uint64_t G = ref_global(order, cost, n, budget, cap, start);
    uint64_t S = drop ? G / W : (G + W - 1) / W;
    pl_plan_opts o = {.n_samples = n, .seed = seed, .epoch = 3, .world_size = W,
                      .batch_size = cap, .shuffle = shuffle, .drop_last = drop,
                      .budget = budget};
    for (uint32_t rank = 0; rank < W; rank++) {
        o.rank = rank;
        pl_plan *p = make(&o, cost);
        CHECK(pl_plan_n_batches(p) == S, "n=%llu W=%u budget=%llu: rank %u has %llu steps, "
              "not %llu", (unsigned long long)n, W, (unsigned long long)budget, rank,
              (unsigned long long)pl_plan_n_batches(p), (unsigned long long)S);
        uint64_t total = 0;
        for (uint64_t k = 0; k < S; k++) {
            uint64_t g = (k * W + rank) % G, len = start[g + 1] - start[g], sum = 0;
            uint32_t m = pl_plan_batch(p, k, got);
            CHECK(m == len, "rank %u batch %llu has %u rows, the documented plan %llu", rank,
                  (unsigned long long)k, m, (unsigned long long)len);
            for (uint32_t i = 0; i < m; i++) {
                CHECK(got[i] == order[start[g] + i], "n=%llu W=%u cap=%u budget=%llu "
                      "shuffle=%d drop=%d: rank %u batch %llu row %u is %llu, not %u",
                      (unsigned long long)n, W, cap, (unsigned long long)budget, shuffle,
                      drop, rank, (unsigned long long)k, i, (unsigned long long)got[i],
                      order[start[g] + i]);
                sum += cost[got[i]];
                seen[got[i]]++;
            }
            CHECK(m >= 1 && m <= cap && (sum <= budget || m == 1),
                  "batch of %u rows costs %llu (budget %llu, cap %u)", m,
                  (unsigned long long)sum, (unsigned long long)budget, cap);
            total += m;
        }
        CHECK(pl_plan_n_samples(p) == total, "n_samples %llu, batches hold %llu",
              (unsigned long long)pl_plan_n_samples(p), (unsigned long long)total);
        CHECK(pl_plan_batch(p, S, got) == 0, "a batch past the end is not empty");
        pl_plan_free(p);
    }
    for (uint64_t i = 0; i < n; i++) {
        if (G % W == 0)
            CHECK(seen[i] == 1, "row %llu seen %u times", (unsigned long long)i, seen[i]);
        else if (drop)
            CHECK(seen[i] <= 1, "row %llu seen %u times", (unsigned long long)i, seen[i]);
        else
            CHECK(seen[i] >= 1 && seen[i] <= (S * W + G - 1) / G, "row %llu seen %u times",
                  (unsigned long long)i, seen[i]);
    }
    free(cost);
    free(start);
    free(got);
    free(seen);
    free(order);
}

Test(plan_budget, grid_matches_documented_algorithm, .timeout = 300)
{
    static const uint64_t sizes[] = {0, 1, 2, 7, 100, 1000, 4097};
    static const uint32_t worlds[] = {1, 2, 3, 8}, caps[] = {1, 4, 64};
    static const uint64_t budgets[] = {1, 10, 1000};
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++)
        for (size_t b = 0; b < sizeof worlds / sizeof *worlds; b++)
            for (size_t c = 0; c < sizeof caps / sizeof *caps; c++)
                for (size_t d = 0; d < sizeof budgets / sizeof *budgets; d++)
                    for (int bits = 0; bits < 4; bits++)
                        check_point(sizes[a], worlds[b], caps[c], budgets[d], bits & 1,
                                    bits >> 1, 5 + a + c);
}

Test(plan_budget, batches_even_out_a_mix_of_costs)
{
    /* Singles, doubles and triples cost about 1, 2 and 3: fixed batches of 64
     * cost 64 - 192; budgeted ones 150 - 200 but for the last. */
    const uint64_t n = 30000;
    uint32_t *cost = malloc(n * sizeof *cost);
    uint64_t r = 1, rows[256];
    cr_assert_not_null(cost);
    for (uint64_t i = 0; i < n; i++)
        cost[i] = 700 * (1 + (uint32_t)pl_test_below(&r, 3));
    pl_plan_opts o = {.n_samples = n, .seed = 2, .world_size = 4, .batch_size = 256,
                      .shuffle = 1, .budget = 700 * 200};
    uint64_t steps = 0, lo = UINT64_MAX, hi = 0;
    for (uint32_t rank = 0; rank < 4; rank++) {
        o.rank = rank;
        pl_plan *p = make(&o, cost);
        if (rank)
            cr_assert_eq(pl_plan_n_batches(p), steps);
        steps = pl_plan_n_batches(p);
        for (uint64_t k = 0; k + 1 < steps; k++) {
            uint32_t m = pl_plan_batch(p, k, rows);
            uint64_t sum = 0;
            for (uint32_t i = 0; i < m; i++)
                sum += cost[rows[i]];
            lo = sum < lo ? sum : lo;
            hi = sum > hi ? sum : hi;
        }
        pl_plan_free(p);
    }
    cr_assert_leq(hi, 700 * 200);
    cr_assert_geq(lo, 700 * 197, "a batch (not the last) costs %llu", (unsigned long long)lo);
    free(cost);
}

Test(plan_budget, resume_and_refusals)
{
    uint32_t cost[500];
    for (int i = 0; i < 500; i++)
        cost[i] = (uint32_t)(i % 7);
    pl_plan_opts o = {.n_samples = 500, .seed = 4, .world_size = 2, .rank = 1,
                      .batch_size = 32, .shuffle = 1, .budget = 40};
    pl_plan *a = make(&o, cost), *b = make(&o, cost);
    uint64_t x[32], y[32];
    for (uint64_t k = pl_plan_n_batches(a); k-- > 0;) {
        uint32_t m = pl_plan_batch(a, k, x);
        cr_assert_eq(pl_plan_batch(b, k, y), m);
        cr_assert_arr_eq(x, y, m * sizeof *x);
    }
    pl_plan_free(a);
    pl_plan_free(b);
    pl_plan *p = (pl_plan *)1;
    pl_err err = {0};
    cr_assert_eq(pl_plan_new(&o, &p, &err), PL_EUSAGE);
    cr_assert_null(p);
    cr_assert(strstr(err.msg, "needs the rows' costs"), "%s", err.msg);
    o.order = PL_ORDER_BLOCK;
    cr_assert_eq(pl_plan_new_costs(&o, cost, &p, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "take the row order"), "%s", err.msg);
}
