/* Collation into a slot or a scratch too small (collate/collate.h): PL_ERANGE
 * with a message, nothing written at or past the slot's end, and the size
 * pl__collate_slot_bytes computes is enough; on the database of
 * tests/collate_fx.h (test_collate.c checks the slots against an oracle). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "collate/collate.h"
#include "collate_fx.h"
#include "loader/table.h"
#include "masks/masks.h"
#include "pertload.h"
#include "testutil.h"

TestSuite(collate, .init = co_init, .fini = co_fini, .timeout = 240);

/* A slot too small: PL_ERANGE, and nothing written at or past `cap`. */
Test(collate, too_small_slot_is_erange)
{
    for (uint32_t dense = 0; dense < 3; dense++) {
        pl__collate_cfg c;
        pl__collate_cfg_init(&c, T.db, T.g, 64, dense);
        const pl__table *tab = &T.tab[1];
        uint64_t full = slot_cap(&c, tab, 64), scratch_len = tab->max_kind_bound + PL__MASKS_PAD;
        free(T.buf);
        free(T.scratch);
        T.buf = aligned_alloc(4096, (full + GUARD + 4095) / 4096 * 4096);
        T.scratch = malloc(scratch_len * 4);
        cr_assert(T.buf && T.scratch);
        uint64_t s = 77 + dense;
        batch b;
        make_batch(tab, &b, 64, &s);
        pl__batch_src src = src_of(&b);
        pl_err err = {0};
        cr_assert_eq(pl__collate(&c, &src, T.buf, full, 0, 0, T.scratch, scratch_len, &err), 0,
                     "%s", err.msg);
        uint64_t used = ((const struct pl_slot_header *)T.buf)->used;
        cr_assert_leq(used, full);
        uint64_t caps[600];
        int nc = 0;
        uint64_t fixed_end = pl__collate_payload_offset(&c, 64);
        uint64_t specials[] = {0, 1, 63, 64, 65, 303, 304, 4095, fixed_end - 1, fixed_end,
                               fixed_end + 1, used - 64, used - 4, used - 1, used, used + 1,
                               full - 1, full};
        for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
            if (specials[i] <= full)
                caps[nc++] = specials[i];
        for (uint64_t x = 0; x < full && nc < 500; x += full / 400 + 1)
            caps[nc++] = x;
        while (nc < 600)
            caps[nc++] = pl_test_below(&s, full + 1);
        for (int i = 0; i < nc; i++) {
            uint64_t cap = caps[i];
            memset(T.buf, 0x5A, full + GUARD);
            memset(&err, 0, sizeof err);
            int rc = pl__collate(&c, &src, T.buf, cap, 1, 1, T.scratch, scratch_len, &err);
            for (uint64_t j = cap; j < full + GUARD; j++)
                CHECK(T.buf[j] == 0x5A, "dense %u cap %llu (rc %d): byte %llu written", dense,
                      (unsigned long long)cap, rc, (unsigned long long)j);
            if (cap < used)
                CHECK(rc == PL_ERANGE, "dense %u cap %llu < used %llu: rc %d", dense,
                      (unsigned long long)cap, (unsigned long long)used, rc);
            else
                CHECK(rc == 0 || rc == PL_ERANGE, "dense %u cap %llu: rc %d", dense,
                      (unsigned long long)cap, rc);
            if (cap >= full)
                CHECK(rc == 0, "dense %u: the computed size %llu is refused: %s", dense,
                      (unsigned long long)full, err.msg);
            if (rc == PL_ERANGE)
                CHECK(err.code == PL_ERANGE && err.msg[0], "dense %u cap %llu: no message",
                      dense, (unsigned long long)cap);
            if (rc == 0) {
                slot_view *v = malloc(sizeof *v);
                cr_assert_not_null(v);
                parse_slot(T.buf, cap, v);
                free(v);
            }
        }
    }
}

Test(collate, scratch_too_small_is_erange)
{
    /* a sample of more than two genes needs the scratch; too little is an error */
    const pl__table *tab = &T.tab[0];
    uint64_t r = 0;
    while (r < N_SAMPLES && tab->gptr[r + 1] - tab->gptr[r] < 3)
        r++;
    cr_assert_lt(r, N_SAMPLES, "no sample with three distinct genes");
    pl__collate_cfg c;
    pl__collate_cfg_init(&c, T.db, T.g, 1, PL_DENSE_NONE);
    uint64_t cap = slot_cap(&c, tab, 1);
    T.buf = aligned_alloc(4096, (cap + GUARD + 4095) / 4096 * 4096);
    T.scratch = malloc(4 * PL__MASKS_PAD);
    cr_assert(T.buf && T.scratch);
    batch b = {0};
    b.n = 1;
    b.rows[0] = r;
    b.ids[0] = tab->ids[r];
    b.genes[0] = tab->genes + tab->gptr[r];
    b.n_genes[0] = (uint32_t)(tab->gptr[r + 1] - tab->gptr[r]);
    b.labels[0] = tab->labels + r * tab->n_labels;
    uint64_t need = 0;
    for (uint32_t k = 0; k < N_TYPES + 3; k++) {
        uint64_t x = pl__masks_bound(T.g, k, b.genes[0], b.n_genes[0]);
        if (x > need)
            need = x;
    }
    cr_assert_gt(need, 0);
    pl__batch_src src = src_of(&b);
    pl_err err = {0};
    int rc = pl__collate(&c, &src, T.buf, cap, 0, 0, T.scratch, 0, &err);
    cr_expect_eq(rc, PL_ERANGE, "rc %d", rc);
    free(T.scratch);
    T.scratch = malloc((need + PL__MASKS_PAD) * 4);
    cr_assert_not_null(T.scratch);
    rc = pl__collate(&c, &src, T.buf, cap, 0, 0, T.scratch, need + PL__MASKS_PAD, &err);
    cr_expect_eq(rc, 0, "%s", err.msg);
}
