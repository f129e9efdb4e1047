/* Elastic resume of an epoch plan (pl_plan_opts.from, pl_plan_position;
 * loader/plan.h step 1e; DESIGN section 22).
 *
 * Black-box over a grid of orders (rows, shuffled rows, block, budget,
 * weights), pad and drop_last, old worlds W and new worlds W' (fewer, the
 * same, more, 1) and resume steps: the rows the W ranks took in their first
 * steps (pl_plan_batch) and the rows the W' ranks serve from the position
 * are every sample of the epoch exactly once, a repeat only in the new last
 * step (padding), none with drop_last and fewer missing than one new step;
 * every old rank gives the same position; with W' = W the rest is the
 * ordinary plan's batches from the resume step on; a resume of a resumed
 * plan keeps exactly once; a position past the epoch is refused. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pertload.h"
#include "testutil.h"

enum { ROWS, SHUFFLED, BLOCK, BUDGET, WEIGHTS };

typedef struct {
    int kind, drop;
    uint32_t B;
    uint64_t n;
    const uint32_t *cost;
} plan_case;

static uint32_t weights_of[9] = {3, 1, 2, 2, 1, 3, 1, 2, 1};

static pl_plan *make(const plan_case *c, uint32_t rank, uint32_t W, uint64_t from)
{
    pl_plan_opts o = {.n_samples = c->n, .seed = 11, .epoch = 3, .rank = rank,
                      .world_size = W, .batch_size = c->B, .drop_last = c->drop,
                      .shuffle = c->kind != ROWS, .from = from};
    if (c->kind == BLOCK) {
        o.order = PL_ORDER_BLOCK;
        o.block_rows = 4;
    }
    if (c->kind == BUDGET)
        o.budget = 3 * c->B; /* costs 1..5: batches of about 3/5 * B */
    if (c->kind == WEIGHTS)
        o.rank_weights = weights_of;
    pl_plan *p = NULL;
    pl_err err = {0};
    int rc = pl_plan_new_costs(&o, c->cost, &p, &err);
    CHECK(rc == 0, "kind %d n %llu W %u from %llu: %s", c->kind, (unsigned long long)c->n,
          W, (unsigned long long)from, err.msg);
    return p;
}

/* Count into seen[] the rows of batches [lo, hi) of every rank of world W
 * at `from`; the rows of the last step counted apart in last[]. Returns the
 * steps of the world. */
static uint64_t take(const plan_case *c, uint32_t W, uint64_t from, uint64_t lo, uint64_t hi,
                     uint32_t *seen, uint32_t *last)
{
    uint64_t *rows = malloc(c->B * sizeof *rows), S = 0;
    cr_assert(rows);
    for (uint32_t r = 0; r < W; r++) {
        pl_plan *p = make(c, r, W, from);
        S = pl_plan_n_batches(p);
        for (uint64_t b = lo; b < hi && b < S; b++) {
            uint32_t k = pl_plan_batch(p, b, rows);
            for (uint32_t i = 0; i < k; i++)
                (b + 1 == S && last ? last : seen)[rows[i]]++;
        }
        pl_plan_free(p);
    }
    free(rows);
    return S;
}

/* W ranks take `steps` steps from `from0` (their rows counted in seen[]):
 * the position, checked the same on every rank. */
static uint64_t check_resume(const plan_case *c, uint32_t W, uint64_t from0, uint64_t steps,
                             uint32_t *seen)
{
    uint64_t pos = 0;
    for (uint32_t r = 0; r < W; r++) { /* the same position from every rank */
        pl_plan *p = make(c, r, W, from0);
        uint64_t at = pl_plan_position(p, steps);
        CHECK(r == 0 || at == pos, "kind %d: rank %u says %llu, rank 0 %llu", c->kind, r,
              (unsigned long long)at, (unsigned long long)pos);
        pos = at;
        pl_plan_free(p);
    }
    CHECK(pos >= from0 && pos <= c->n, "position %llu outside %llu..%llu",
          (unsigned long long)pos, (unsigned long long)from0, (unsigned long long)c->n);
    take(c, W, from0, 0, steps, seen, NULL);
    return pos;
}

/* The union of seen[] (consumed before, each once), the new world's served
 * rows outside its last step and in it: every row once; repeats only in
 * the last step (padding), none and fewer than a step missing with drop. */
static void check_union(const plan_case *c, uint32_t W2, uint64_t pos, uint32_t *seen,
                        const char *what)
{
    uint32_t *last = calloc(c->n, sizeof *last);
    cr_assert(last);
    take(c, W2, pos, 0, ~0ULL, seen, last);
    uint64_t missing = 0, step = (uint64_t)c->B * W2;
    if (c->kind == WEIGHTS) /* T of step 2d: B * sum / max */
        for (uint32_t r = 0, sum = 0, top = 0; r < W2; r++) {
            sum += weights_of[r];
            top = weights_of[r] > top ? weights_of[r] : top;
            step = (uint64_t)c->B * sum / top;
        }
    for (uint64_t i = 0; i < c->n; i++) {
        CHECK(seen[i] <= 1, "%s: kind %d drop %d: row %llu twice outside the new last step",
              what, c->kind, c->drop, (unsigned long long)i);
        CHECK(!c->drop || seen[i] + last[i] <= 1, "%s: kind %d: row %llu twice with drop_last",
              what, c->kind, (unsigned long long)i);
        missing += seen[i] + last[i] == 0;
    }
    CHECK(c->drop ? missing < step : missing == 0,
          "%s: kind %d drop %d n %llu W' %u: %llu rows missing", what, c->kind, c->drop,
          (unsigned long long)c->n, W2, (unsigned long long)missing);
    free(last);
}

static void check_case(const plan_case *c, uint32_t W, uint32_t W2)
{
    uint32_t *seen = calloc(c->n, sizeof *seen);
    cr_assert(seen);
    pl_plan *p0 = make(c, 0, W, 0);
    uint64_t S = pl_plan_n_batches(p0);
    pl_plan_free(p0);
    uint64_t at[] = {0, 1, S / 2, S ? S - 1 : 0};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        if (at[k] && at[k] >= S)
            continue; /* the whole epoch, padding included: position_at_the_end */
        memset(seen, 0, c->n * sizeof *seen);
        uint64_t pos = check_resume(c, W, 0, at[k], seen);
        check_union(c, W2, pos, seen, "one resume");
        if (W2 == W) { /* same world: the ordinary rest */
            for (uint32_t r = 0; r < W; r++) {
                pl_plan *a = make(c, r, W, 0), *b = make(c, r, W, pos);
                uint64_t *x = malloc(c->B * sizeof *x), *y = malloc(c->B * sizeof *y);
                cr_assert(x && y);
                CHECK(pl_plan_n_batches(b) == S - at[k], "kind %d: %llu steps after %llu of %llu",
                      c->kind, (unsigned long long)pl_plan_n_batches(b),
                      (unsigned long long)at[k], (unsigned long long)S);
                for (uint64_t i = at[k]; i + 1 < S; i++) { /* the last may pad otherwise */
                    uint32_t nx = pl_plan_batch(a, i, x), ny = pl_plan_batch(b, i - at[k], y);
                    CHECK(nx == ny && !memcmp(x, y, nx * sizeof *x),
                          "kind %d rank %u: batch %llu differs after a resume at %llu",
                          c->kind, r, (unsigned long long)i, (unsigned long long)at[k]);
                }
                free(x);
                free(y);
                pl_plan_free(a);
                pl_plan_free(b);
            }
        }
        /* A second resume, from the W2 plan at its middle, onto W. */
        memset(seen, 0, c->n * sizeof *seen);
        pl_plan *q = make(c, 0, W2, pos);
        uint64_t S2 = pl_plan_n_batches(q);
        pl_plan_free(q);
        take(c, W, 0, 0, at[k], seen, NULL);
        uint64_t pos2 = check_resume(c, W2, pos, S2 / 2, seen);
        check_union(c, W, pos2, seen, "two resumes");
    }
    free(seen);
}

Test(plan_elastic, exactly_once_across_world_sizes)
{
    uint32_t *cost = malloc(400 * sizeof *cost);
    cr_assert(cost);
    uint64_t rng = 5;
    for (int i = 0; i < 400; i++)
        cost[i] = 1 + (uint32_t)(pl_test_rand(&rng) % 5);
    uint64_t ns[] = {1, 7, 100, 397};
    uint32_t worlds[][2] = {{4, 3}, {4, 6}, {4, 1}, {4, 4}, {1, 5}, {3, 8}, {2, 2}};
    for (int kind = ROWS; kind <= WEIGHTS; kind++)
        for (int drop = 0; drop < 2; drop++)
            for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
                for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
                    plan_case c = {.kind = kind, .drop = drop, .B = kind == BLOCK ? 8 : 5,
                                   .n = ns[i], .cost = cost};
                    check_case(&c, worlds[w][0], worlds[w][1]);
                }
    free(cost);
}

Test(plan_elastic, position_past_the_epoch_refused)
{
    pl_plan_opts o = {.n_samples = 10, .world_size = 2, .batch_size = 3, .from = 11};
    pl_plan *p = (pl_plan *)1;
    pl_err err = {0};
    CHECK(pl_plan_new(&o, &p, &err) == PL_EUSAGE && !p, "from 11 of 10 accepted");
    CHECK(strstr(err.msg, "resume position 11 is past the 10 samples") != NULL, "%s", err.msg);
    o.from = 10; /* all consumed: an empty rest */
    CHECK(pl_plan_new(&o, &p, &err) == 0, "%s", err.msg);
    CHECK(pl_plan_n_batches(p) == 0 && pl_plan_position(p, 5) == 10, "an empty rest");
    pl_plan_free(p);
}

Test(plan_elastic, position_at_the_end)
{
    /* 10 samples, 4 ranks of batches of 3: one step of 12 entries, 2 of
     * them padding; a state after it resumes nothing on any world. */
    pl_plan_opts o = {.n_samples = 10, .world_size = 4, .batch_size = 3, .shuffle = 1};
    pl_plan *p = NULL;
    pl_err err = {0};
    CHECK(pl_plan_new(&o, &p, &err) == 0, "%s", err.msg);
    CHECK(pl_plan_n_batches(p) == 1, "%llu steps", (unsigned long long)pl_plan_n_batches(p));
    CHECK(pl_plan_position(p, 1) == 10 && pl_plan_position(p, 9) == 10,
          "the end is at %llu", (unsigned long long)pl_plan_position(p, 1));
    CHECK(pl_plan_position(p, 0) == 0, "the start");
    pl_plan_free(p);
}
