/* Epoch plans (loader/plan.h) against the documented algorithm.
 *
 * The order is re-derived here from the text of plan.h alone (splitmix64,
 * Fisher-Yates with a 128-bit multiply-shift, DistributedSampler-style
 * sharding, batching) and compared exactly with pl_plan_*, over a grid of
 * sample counts, world sizes, batch sizes, shuffle and drop_last, seeds and
 * epochs. The sharding properties are checked on their own as well: a
 * permutation across ranks without padding, disjoint equal shares with
 * drop_last, documented padding otherwise, and resuming mid-epoch. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pertload.h"
#include "testutil.h"

static const uint64_t sizes[] = {0, 1, 2, 7, 64, 1000, 4097};
#define N_SIZES (sizeof sizes / sizeof sizes[0])
#define MAX_WORLD 5u
#define MAX_BATCH 70u

/* ------------------------------------------------- reference algorithm */

/* The rank's rows (step 2); sets *m. */
static uint64_t *ref_rows(const pl_plan_opts *o, const uint32_t *order, uint64_t *m)
{
    uint64_t n = o->n_samples, W = o->world_size;
    *m = o->drop_last ? n / W : (n + W - 1) / W;
    uint64_t *r = malloc((*m ? *m : 1) * sizeof *r);
    cr_assert_not_null(r);
    /* padded order: order followed by its own start, repeated as needed */
    for (uint64_t k = 0; k < *m; k++) {
        uint64_t pos = o->rank + k * W;
        while (pos >= n)
            pos -= n;
        r[k] = order[pos];
    }
    return r;
}

/* --------------------------------------------------------- plan helpers */

static pl_plan *make(const pl_plan_opts *o)
{
    pl_plan *p = NULL;
    pl_err err = {0};
    int rc = pl_plan_new(o, &p, &err);
    CHECK(rc == 0 && p, "pl_plan_new(n=%llu rank=%u world=%u batch=%u): %d %s",
          (unsigned long long)o->n_samples, o->rank, o->world_size, o->batch_size, rc, err.msg);
    return p;
}

/* Every batch of a plan, concatenated; checks the batch sizes. */
static uint64_t *all_rows(const pl_plan *p, const pl_plan_opts *o, uint64_t *count)
{
    uint64_t nb = pl_plan_n_batches(p), m = pl_plan_n_samples(p), B = o->batch_size;
    uint64_t *out = malloc((m ? m : 1) * sizeof *out);
    uint64_t *buf = malloc(B * sizeof *buf);
    cr_assert(out && buf);
    uint64_t at = 0;
    for (uint64_t b = 0; b < nb; b++) {
        for (uint64_t i = 0; i < B; i++)
            buf[i] = UINT64_MAX;
        uint32_t got = pl_plan_batch(p, b, buf);
        if (b + 1 < nb || o->drop_last)
            CHECK(got == B, "batch %llu of %llu has %u rows, expected a full %llu",
                  (unsigned long long)b, (unsigned long long)nb, got, (unsigned long long)B);
        else
            CHECK(got >= 1 && got <= B, "last batch has %u rows (batch size %llu)", got,
                  (unsigned long long)B);
        for (uint64_t i = got; i < B; i++)
            CHECK(buf[i] == UINT64_MAX, "pl_plan_batch wrote past its %u rows", got);
        CHECK(at + got <= m, "batches hold more than the rank's %llu samples",
              (unsigned long long)m);
        memcpy(out + at, buf, got * sizeof *buf);
        at += got;
    }
    CHECK(pl_plan_batch(p, nb, buf) == 0, "a batch past the end is not empty");
    CHECK(pl_plan_batch(p, nb + 12345, buf) == 0, "a batch far past the end is not empty");
    free(buf);
    *count = at;
    return out;
}

/* ------------------------------------------------------------ the grid */

/* Checks one (n, world, batch, shuffle, drop_last, seed, epoch) point across
 * all ranks. */
static void check_point(uint64_t n, uint32_t W, uint32_t B, int shuffle, int drop_last,
                        uint64_t seed, uint64_t epoch)
{
    uint32_t *order = pl_test_plan_order(n, seed, epoch, shuffle);
    uint64_t *seen = calloc(n ? n : 1, sizeof *seen);
    cr_assert_not_null(seen);
    uint64_t m_expect = drop_last ? n / W : (n + W - 1) / W;
    uint64_t pad = drop_last ? 0 : m_expect * W - n;
    uint64_t total = 0;
    /* the padded (or cut) order as the ranks see it, entry by entry */
    uint64_t *slot_owner = malloc((m_expect * W + 1) * sizeof *slot_owner);
    cr_assert_not_null(slot_owner);
    for (uint32_t r = 0; r < W; r++) {
        pl_plan_opts o = {.n_samples = n, .seed = seed, .epoch = epoch, .rank = r,
                          .world_size = W, .batch_size = B, .shuffle = shuffle,
                          .drop_last = drop_last};
        pl_plan *p = make(&o);
        uint64_t m = pl_plan_n_samples(p);
        CHECK(m == m_expect, "n=%llu W=%u drop=%d: rank %u has %llu samples, expected %llu",
              (unsigned long long)n, W, drop_last, r, (unsigned long long)m,
              (unsigned long long)m_expect);
        uint64_t nb = pl_plan_n_batches(p);
        uint64_t nb_expect = drop_last ? m / B : (m + B - 1) / B;
        CHECK(nb == nb_expect, "rank %u: %llu batches, expected %llu", r,
              (unsigned long long)nb, (unsigned long long)nb_expect);
        uint64_t cnt;
        uint64_t *rows = all_rows(p, &o, &cnt);
        uint64_t cnt_expect = drop_last ? nb * B : m;
        CHECK(cnt == cnt_expect, "rank %u: %llu rows in batches, expected %llu", r,
              (unsigned long long)cnt, (unsigned long long)cnt_expect);

        /* exact agreement with the documented algorithm */
        uint64_t rm;
        uint64_t *ref = ref_rows(&o, order, &rm);
        CHECK(rm == m, "reference share size");
        for (uint64_t k = 0; k < cnt; k++)
            CHECK(rows[k] == ref[k],
                  "n=%llu W=%u r=%u B=%u shuffle=%d drop=%d seed=%llu epoch=%llu: "
                  "row %llu is %llu, the documented order gives %llu",
                  (unsigned long long)n, W, r, B, shuffle, drop_last,
                  (unsigned long long)seed, (unsigned long long)epoch,
                  (unsigned long long)k, (unsigned long long)rows[k],
                  (unsigned long long)ref[k]);
        free(ref);

        /* shuffle off: the identity strided by rank */
        if (!shuffle)
            for (uint64_t k = 0; k < cnt; k++)
                CHECK(rows[k] == (r + k * W) % n, "no shuffle: rank %u row %llu is %llu", r,
                      (unsigned long long)k, (unsigned long long)rows[k]);

        /* the whole share (before batching drops anything) */
        uint64_t *share = malloc((m ? m : 1) * sizeof *share);
        cr_assert_not_null(share);
        memcpy(share, rows, cnt * sizeof *rows);
        for (uint64_t k = cnt; k < m; k++) /* the dropped partial batch: from the order */
            share[k] = UINT64_MAX;
        for (uint64_t k = 0; k < m; k++) {
            uint64_t v = share[k];
            if (v == UINT64_MAX)
                continue;
            CHECK(v < n, "row %llu out of range (n=%llu)", (unsigned long long)v,
                  (unsigned long long)n);
            seen[v]++;
            total++;
            slot_owner[r + k * W] = v;
        }
        free(share);

        /* resume: batches from b on are the tail of the full list */
        if (nb) {
            uint64_t bs[3] = {0, nb / 2, nb - 1};
            pl_plan *q = make(&o);
            uint64_t *buf = malloc(B * sizeof *buf);
            cr_assert_not_null(buf);
            for (int t = 0; t < 3; t++) {
                uint64_t at = bs[t] * B;
                for (uint64_t b = bs[t]; b < nb; b++) {
                    uint32_t got = pl_plan_batch(q, b, buf);
                    CHECK(memcmp(buf, rows + at, got * sizeof *buf) == 0,
                          "resume at %llu: batch %llu differs", (unsigned long long)bs[t],
                          (unsigned long long)b);
                    at += got;
                }
                CHECK(at == cnt, "resume at %llu: %llu rows, expected %llu",
                      (unsigned long long)bs[t], (unsigned long long)at,
                      (unsigned long long)cnt);
            }
            free(buf);
            pl_plan_free(q);
        }
        free(rows);
        pl_plan_free(p);
    }

    if (drop_last) {
        /* disjoint and equal shares; every rank the same full batches */
        for (uint64_t i = 0; i < n; i++)
            CHECK(seen[i] <= 1, "drop_last: row %llu in %llu shares", (unsigned long long)i,
                  (unsigned long long)seen[i]);
        uint64_t full = (m_expect / B) * B;
        CHECK(total == (uint64_t)W * full, "drop_last: %llu rows over ranks, expected %llu",
              (unsigned long long)total, (unsigned long long)((uint64_t)W * full));
        if (m_expect % B == 0)
            for (uint64_t k = 0; k < m_expect * W; k++)
                CHECK(slot_owner[k] == order[k], "drop_last: cut order entry %llu",
                      (unsigned long long)k);
    } else {
        /* every sample at least once; the extra entries are the documented padding */
        for (uint64_t i = 0; i < n; i++)
            CHECK(seen[i] >= 1, "row %llu missing from every rank (n=%llu W=%u)",
                  (unsigned long long)i, (unsigned long long)n, W);
        CHECK(total == n + pad, "%llu rows over ranks, expected %llu", (unsigned long long)total,
              (unsigned long long)(n + pad));
        for (uint64_t k = 0; k < n; k++)
            CHECK(slot_owner[k] == order[k], "padded order entry %llu", (unsigned long long)k);
        for (uint64_t k = 0; k < pad; k++)
            CHECK(slot_owner[n + k] == order[k % n],
                  "padding entry %llu is %llu, expected order[%llu] = %u",
                  (unsigned long long)k, (unsigned long long)slot_owner[n + k],
                  (unsigned long long)(k % n), order[k % n]);
        if (pad == 0)
            for (uint64_t i = 0; i < n; i++)
                CHECK(seen[i] == 1, "no padding: row %llu seen %llu times",
                      (unsigned long long)i, (unsigned long long)seen[i]);
        if (pad > 0 && W <= n) {
            /* only the first `pad` entries of the order repeat, once each */
            for (uint64_t k = 0; k < n; k++)
                CHECK(seen[order[k]] == (k < pad ? 2u : 1u),
                      "padding: order[%llu] seen %llu times", (unsigned long long)k,
                      (unsigned long long)seen[order[k]]);
        }
    }
    free(slot_owner);
    free(seen);
    free(order);
}

Test(plan, grid_matches_documented_algorithm, .timeout = 300)
{
    static const uint64_t seeds[][2] = {{0, 0}, {42, 3}, {UINT64_MAX, UINT64_MAX - 1}};
    for (size_t si = 0; si < N_SIZES; si++)
        for (uint32_t W = 1; W <= MAX_WORLD; W++)
            for (uint32_t B = 1; B <= MAX_BATCH; B++)
                for (int shuffle = 0; shuffle < 2; shuffle++)
                    for (int drop = 0; drop < 2; drop++) {
                        /* all seeds on small n; one rotating seed on large n */
                        size_t ns = sizes[si] <= 64 ? 3 : 1;
                        for (size_t k = 0; k < ns; k++) {
                            size_t pick = ns == 3 ? k : (B + W) % 3;
                            check_point(sizes[si], W, B, shuffle, drop, seeds[pick][0],
                                        seeds[pick][1]);
                        }
                    }
}

Test(plan, world_larger_than_samples_pads_cyclically)
{
    /* W > n: the padded order wraps more than once */
    for (uint64_t n = 1; n <= 4; n++)
        for (uint32_t W = 1; W <= 13; W++)
            for (int shuffle = 0; shuffle < 2; shuffle++)
                for (int drop = 0; drop < 2; drop++)
                    check_point(n, W, 3, shuffle, drop, 99, 7);
    /* explicit: n = 2, W = 5, no shuffle: ranks get 0,1,0,1,0 */
    for (uint32_t r = 0; r < 5; r++) {
        pl_plan_opts o = {.n_samples = 2, .seed = 1, .rank = r, .world_size = 5, .batch_size = 4};
        pl_plan *p = make(&o);
        cr_assert_eq(pl_plan_n_samples(p), 1);
        cr_assert_eq(pl_plan_n_batches(p), 1);
        uint64_t row = 99;
        cr_assert_eq(pl_plan_batch(p, 0, &row), 1);
        cr_expect_eq(row, r % 2, "rank %u got %llu", r, (unsigned long long)row);
        pl_plan_free(p);
        o.drop_last = 1;
        p = make(&o);
        cr_expect_eq(pl_plan_n_samples(p), 0);
        cr_expect_eq(pl_plan_n_batches(p), 0);
        pl_plan_free(p);
    }
}

Test(plan, determinism_and_epochs)
{
    uint64_t s = 1234;
    for (int trial = 0; trial < 200; trial++) {
        uint64_t n = 10 + pl_test_below(&s, 3000);
        uint32_t W = 1 + (uint32_t)pl_test_below(&s, 4);
        uint32_t B = 1 + (uint32_t)pl_test_below(&s, 100);
        pl_plan_opts o = {.n_samples = n, .seed = pl_test_rand(&s),
                          .epoch = pl_test_below(&s, 1000), .world_size = 1,
                          .batch_size = B, .shuffle = 1};
        o.world_size = W;
        o.rank = (uint32_t)pl_test_below(&s, W);
        o.drop_last = (int)pl_test_below(&s, 2);
        pl_plan *a = make(&o), *b = make(&o);
        uint64_t ca, cb;
        uint64_t *ra = all_rows(a, &o, &ca), *rb = all_rows(b, &o, &cb);
        cr_assert_eq(ca, cb);
        cr_assert_eq(memcmp(ra, rb, ca * sizeof *ra), 0, "same options, different rows");
        free(rb);
        pl_plan_free(b);

        /* another epoch (and another seed) reorders, for n >= 10: compared on
         * the whole epoch order (one rank, nothing dropped) */
        free(ra);
        pl_plan_free(a);
        o.world_size = 1;
        o.rank = 0;
        o.drop_last = 0;
        a = make(&o);
        ra = all_rows(a, &o, &ca);
        cr_assert_eq(ca, n);
        pl_plan_opts o2 = o;
        o2.epoch = o.epoch + 1 + pl_test_below(&s, 5);
        b = make(&o2);
        rb = all_rows(b, &o2, &cb);
        cr_assert_eq(ca, cb);
        cr_expect_neq(memcmp(ra, rb, ca * sizeof *ra), 0,
                      "epoch %llu and %llu give the same order (n=%llu)",
                      (unsigned long long)o.epoch, (unsigned long long)o2.epoch,
                      (unsigned long long)n);
        /* both are permutations of the same rows */
        {
            uint64_t *sa = malloc(n * 8), *sb = malloc(n * 8);
            cr_assert(sa && sb);
            memset(sa, 0, n * 8);
            memset(sb, 0, n * 8);
            for (uint64_t i = 0; i < n; i++) {
                sa[ra[i]]++;
                sb[rb[i]]++;
            }
            cr_expect_eq(memcmp(sa, sb, n * 8), 0);
            free(sa);
            free(sb);
        }
        free(rb);
        pl_plan_free(b);
        o2 = o;
        o2.seed = o.seed ^ 1;
        b = make(&o2);
        rb = all_rows(b, &o2, &cb);
        cr_expect_neq(memcmp(ra, rb, ca * sizeof *ra), 0, "seeds differ, orders equal");
        free(rb);
        pl_plan_free(b);
        free(ra);
        pl_plan_free(a);
    }
}

Test(plan, shuffle_actually_shuffles)
{
    /* a shuffled order of 1000 is not the identity and moves most rows */
    pl_plan_opts o = {.n_samples = 1000, .seed = 7, .world_size = 1, .batch_size = 1000,
                      .shuffle = 1};
    pl_plan *p = make(&o);
    uint64_t rows[1000];
    cr_assert_eq(pl_plan_batch(p, 0, rows), 1000);
    int fixed = 0;
    for (int i = 0; i < 1000; i++)
        fixed += rows[i] == (uint64_t)i;
    cr_expect_lt(fixed, 20, "%d of 1000 rows stayed in place", fixed);
    pl_plan_free(p);
}

Test(plan, first_values_of_the_order)
{
    /* Pin the order numerically: Fisher-Yates of 5 from the top, seed 0, epoch 0.
     * splitmix64(0) first outputs are well known. */
    uint64_t s = 0;
    cr_assert_eq(pl_test_rand(&s), UINT64_C(0xE220A8397B1DCDAF));
    cr_assert_eq(pl_test_rand(&s), UINT64_C(0x6E789E6AA1B965F4));
    cr_assert_eq(pl_test_mulhi64(UINT64_MAX, UINT64_MAX), UINT64_MAX - 1);
    cr_assert_eq(pl_test_mulhi64(UINT64_C(1) << 63, 5), 2);
    uint32_t *ord = pl_test_plan_order(5, 0, 0, 1);
    pl_plan_opts o = {.n_samples = 5, .world_size = 1, .batch_size = 5, .shuffle = 1};
    pl_plan *p = make(&o);
    uint64_t rows[5];
    cr_assert_eq(pl_plan_batch(p, 0, rows), 5);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(rows[i], ord[i]);
    pl_plan_free(p);
    free(ord);
}

static void expect_usage(pl_plan_opts o, const char *what)
{
    pl_plan *p = (pl_plan *)&p;
    pl_err err = {0};
    int rc = pl_plan_new(&o, &p, &err);
    cr_expect_eq(rc, PL_EUSAGE, "%s: rc %d (%s)", what, rc, pl_errname(rc));
    cr_expect_null(p, "%s: handle not reset", what);
    cr_expect_eq(err.code, PL_EUSAGE, "%s: err.code %d", what, err.code);
    cr_expect_neq(err.msg[0], '\0', "%s: no message", what);
    if (rc == 0)
        pl_plan_free(p);
}

Test(plan, invalid_options)
{
    expect_usage((pl_plan_opts){.n_samples = 10, .world_size = 0, .batch_size = 4}, "world 0");
    expect_usage((pl_plan_opts){.n_samples = 10, .rank = 1, .world_size = 1, .batch_size = 4},
                                "rank 1 of 1");
    expect_usage((pl_plan_opts){.n_samples = 10, .rank = 5, .world_size = 5, .batch_size = 4,
                                .shuffle = 1}, "rank 5 of 5");
    expect_usage((pl_plan_opts){.n_samples = 10, .rank = UINT32_MAX, .world_size = 3,
                                .batch_size = 4, .shuffle = 1, .drop_last = 1}, "rank huge");
    expect_usage((pl_plan_opts){.n_samples = 10, .world_size = 1, .batch_size = 0}, "batch 0");
    expect_usage((pl_plan_opts){.world_size = 1, .batch_size = 0, .shuffle = 1, .drop_last = 1},
                                "batch 0, no samples");
    expect_usage((pl_plan_opts){.n_samples = (uint64_t)UINT32_MAX + 2, .world_size = 1,
                                .batch_size = 4},
                 "more samples than a plan holds");
    /* err may be NULL */
    pl_plan *p = NULL;
    pl_plan_opts o = {.n_samples = 10, .rank = 3, .world_size = 2, .batch_size = 4};
    cr_expect_eq(pl_plan_new(&o, &p, NULL), PL_EUSAGE);
    pl_plan_free(NULL);
}

Test(plan, empty_epoch)
{
    for (uint32_t W = 1; W <= 3; W++)
        for (int drop = 0; drop < 2; drop++) {
            pl_plan_opts o = {.seed = 5, .epoch = 5, .rank = W - 1, .world_size = W,
                              .batch_size = 8, .shuffle = 1, .drop_last = drop};
            pl_plan *p = make(&o);
            cr_expect_eq(pl_plan_n_samples(p), 0);
            cr_expect_eq(pl_plan_n_batches(p), 0);
            uint64_t rows[8];
            cr_expect_eq(pl_plan_batch(p, 0, rows), 0);
            pl_plan_free(p);
        }
}
