/* Collation into self-describing slots (collate/slot.h) against an oracle.
 *
 * A small database is built from files the fixture writes (collate_fx.h; the
 * slots and scratches too small are test_collate_limits.c's): 60 genes, three
 * edge types (TSV with a hub, self-loops and duplicate edges; an empty one; a
 * .npy int32 export), metabolism with a reaction list (one reaction without
 * genes, one only in RMR, duplicate GPR pairs), 1300 samples of 1..5 genes with
 * duplicates, two label columns with missing values, and a float32 payload
 * [S, 3]. The sample table is loaded with each io backend, batches of random
 * rows are collated as the loader does (slot sized by pl__collate_slot_bytes
 * from the table's maxima, payload rows placed first; with the AVX2 and the
 * scalar merge), and each slot is read back only through its header and
 * descriptors, then compared array by array with a brute-force scan of the
 * test's own edge lists (DESIGN section 2). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collate/collate.h"
#include "collate_fx.h"
#include "loader/table.h"
#include "masks/masks.h"
#include "pertload.h"
#include "testutil.h"

#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)

TestSuite(collate, .init = co_init, .fini = co_fini, .timeout = 240);

/* ------------------------------------------------------------- oracle */

/* The deleted set of sample row r. */
static void pert_set(uint64_t r, unsigned char *P)
{
    memset(P, 0, N_GENES);
    for (uint32_t i = 0; i < T.n_listed[r]; i++)
        P[T.listed[r][i]] = 1;
}

/* Removed positions of list kind k for set P (ascending); returns the count. */
static uint32_t oracle_removed(uint32_t k, const unsigned char *P, int32_t *out)
{
    uint32_t n = 0;
    if (k < N_TYPES) {
        for (uint64_t e = 0; e < type_edges[k]; e++)
            if (P[T.src[k][e]] || P[T.dst[k][e]])
                out[n++] = (int32_t)e;
        return n;
    }
    unsigned char has[N_RX] = {0}, gone[N_RX] = {0};
    for (int i = 0; i < N_GPR; i++) {
        has[T.gpr_rxn[i]] = 1;
        if (P[T.gpr_gene[i]])
            gone[T.gpr_rxn[i]] = 1;
    }
    switch (k - N_TYPES) {
    case PL_LIST_GPR:
        for (int i = 0; i < N_GPR; i++)
            if (P[T.gpr_gene[i]])
                out[n++] = i;
        break;
    case PL_LIST_REACTION:
        for (int r = 0; r < N_RX; r++)
            if (has[r] && gone[r])
                out[n++] = r;
        break;
    default:
        for (int i = 0; i < N_RMR; i++)
            if (gone[T.rmr_rxn[i]])
                out[n++] = i;
        break;
    }
    return n;
}

static uint64_t kind_len(uint32_t k)
{
    if (k < N_TYPES)
        return type_edges[k];
    return k - N_TYPES == PL_LIST_GPR ? N_GPR : k - N_TYPES == PL_LIST_REACTION ? N_RX : N_RMR;
}

static void kind_prefix(uint32_t k, char *buf, size_t cap)
{
    static const char *const meta[3] = {"gpr", "reaction", "rmr"};
    if (k < N_TYPES)
        snprintf(buf, cap, "edges/%s", type_names[k]);
    else
        snprintf(buf, cap, "%s", meta[k - N_TYPES]);
}
/* Check a removed list and its ptr array against the oracle lists. */
static void check_list(const slot_view *v, const char *prefix, uint32_t n,
                       int32_t *const *want, const uint32_t *want_n)
{
    char name[PL_SLOT_NAME_MAX + 16];
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += want_n[i];
    snprintf(name, sizeof name, "%s/ptr", prefix);
    const arr *ptr = find(v, name, "<i8", 1, n + 1, 0);
    snprintf(name, sizeof name, "%s/removed", prefix);
    const arr *rem = find(v, name, "<i4", 1, total, 0);
    CHECK(rd_i64(ptr, 0) == 0, "%s: ptr[0] = %lld", name, (long long)rd_i64(ptr, 0));
    for (uint32_t i = 0; i < n; i++) {
        int64_t a = rd_i64(ptr, i), b = rd_i64(ptr, i + 1);
        CHECK(b - a == (int64_t)want_n[i], "%s: sample %u has %lld entries, oracle %u", name,
              i, (long long)(b - a), want_n[i]);
        for (uint32_t j = 0; j < want_n[i]; j++)
            CHECK(rd_i32(rem, (uint64_t)a + j) == want[i][j],
                  "%s: sample %u entry %u is %d, oracle %d", name, i, j,
                  rd_i32(rem, (uint64_t)a + j), want[i][j]);
    }
}

/* A dense mask array against the oracle removed lists of the batch. */
static void check_dense(const slot_view *v, const char *name, uint32_t dense, uint32_t n,
                        uint64_t len, int32_t *const *removed, const uint32_t *n_removed)
{
    uint64_t words = (len + 63) / 64;
    const arr *a = dense == PL_DENSE_BOOL ? find(v, name, "|b1", 2, n, len)
                                          : find(v, name, "<u8", 2, n, words);
    unsigned char *kept = malloc(len + 1);
    cr_assert_not_null(kept);
    for (uint32_t i = 0; i < n; i++) {
        memset(kept, 1, len);
        for (uint32_t j = 0; j < n_removed[i]; j++)
            kept[removed[i][j]] = 0;
        if (dense == PL_DENSE_BOOL) {
            const unsigned char *row = a->p + len * i;
            for (uint64_t e = 0; e < len; e++)
                CHECK(row[e] == kept[e], "%s: sample %u position %llu is %u, expected %u",
                      name, i, (unsigned long long)e, row[e], kept[e]);
        } else {
            for (uint64_t w = 0; w < words; w++) {
                uint64_t word = rd_u64(a, i * words + w), want = 0;
                for (uint64_t b = 0; b < 64 && w * 64 + b < len; b++)
                    want |= (uint64_t)kept[w * 64 + b] << b;
                CHECK(word == want, "%s: sample %u word %llu is %016llx, expected %016llx "
                      "(LSB first, tail bits zero)", name, i, (unsigned long long)w,
                      (unsigned long long)word, (unsigned long long)want);
            }
        }
    }
    free(kept);
}

/* ------------------------------------------------------ batch driving */
/* Fill the payload region of a batch of b->n as the loader would. */
static void put_payload(const pl__collate_cfg *c, unsigned char *slot, const batch *b)
{
    uint64_t off = pl__collate_payload_offset(c, b->n);
    cr_assert_eq(off % PL_SLOT_ALIGN, 0);
    for (uint32_t i = 0; i < b->n; i++)
        memcpy(slot + off + i * c->payload_row_bytes, T.payload[b->rows[i]],
               c->payload_row_bytes);
}

/* Every array of a parsed slot against the oracle. */
static void check_slot(const slot_view *v, const pl__collate_cfg *c, const batch *b,
                       uint64_t batch_no, uint64_t epoch, const unsigned char *slot)
{
    const uint32_t n = b->n, K = N_TYPES + 3, dense = c->dense;
    CHECK(v->h.n_samples == n, "n_samples %u, expected %u", v->h.n_samples, n);
    CHECK(v->h.dense == dense, "dense %u, expected %u", v->h.dense, dense);
    CHECK(v->h.batch == batch_no && v->h.epoch == epoch, "batch/epoch %llu/%llu",
          (unsigned long long)v->h.batch, (unsigned long long)v->h.epoch);
    uint32_t expect_arrays = 5 + 2 * K + 1 + (dense ? 1 + K : 0);
    CHECK(v->n == expect_arrays, "%u arrays, expected %u", v->n, expect_arrays);

    const arr *ids = find(v, "sample_id", "<u8", 1, n, 0);
    const arr *rows = find(v, "row", "<u8", 1, n, 0);
    const arr *lab = find(v, "labels", "<f4", 2, n, N_LABELS);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t r = b->rows[i];
        CHECK(rd_u64(rows, i) == r, "row[%u] = %llu, expected %llu", i,
              (unsigned long long)rd_u64(rows, i), (unsigned long long)r);
        CHECK(rd_u64(ids, i) == T.ids[r], "sample_id[%u] = %llu, expected %llu", i,
              (unsigned long long)rd_u64(ids, i), (unsigned long long)T.ids[r]);
        for (int l = 0; l < N_LABELS; l++) {
            float x;
            memcpy(&x, lab->p + 4 * ((uint64_t)i * N_LABELS + l), 4);
            float want = T.labels[r][l];
            if (isnan(want))
                CHECK(isnan(x), "labels[%u,%d] = %g, expected NaN", i, l, (double)x);
            else
                CHECK(x == want, "labels[%u,%d] = %g, expected %g", i, l, (double)x,
                      (double)want);
        }
    }

    /* perturbation indices: sorted unique of the listed genes */
    int32_t *pert[64];
    uint32_t pert_n[64];
    unsigned char P[64][N_GENES];
    for (uint32_t i = 0; i < n; i++) {
        pert_set(b->rows[i], P[i]);
        pert[i] = malloc(N_GENES * 4);
        cr_assert_not_null(pert[i]);
        pert_n[i] = 0;
        for (int g = 0; g < N_GENES; g++)
            if (P[i][g])
                pert[i][pert_n[i]++] = g;
    }
    if (dense)
        check_dense(v, "gene/mask", dense, n, N_GENES, pert, pert_n);

    int32_t *rem[64];
    uint32_t rem_n[64];
    for (uint32_t i = 0; i < n; i++) {
        rem[i] = malloc(1024 * 4);
        cr_assert_not_null(rem[i]);
    }
    char prefix[PL_SLOT_NAME_MAX - 16], name[PL_SLOT_NAME_MAX + 16];
    for (uint32_t k = 0; k < K; k++) {
        for (uint32_t i = 0; i < n; i++)
            rem_n[i] = oracle_removed(k, P[i], rem[i]);
        kind_prefix(k, prefix, sizeof prefix);
        check_list(v, prefix, n, rem, rem_n);
        if (dense) {
            snprintf(name, sizeof name, "%s/mask", prefix);
            check_dense(v, name, dense, n, kind_len(k), rem, rem_n);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        free(rem[i]);
        free(pert[i]);
    }

    /* the payload the loader put there, untouched, described as stored */
    const arr *pay = find(v, "payload", "<f4", 2, n, PAY_COLS);
    CHECK(pay->offset == pl__collate_payload_offset(c, n), "payload at %llu, expected %llu",
          (unsigned long long)pay->offset,
          (unsigned long long)pl__collate_payload_offset(c, n));
    CHECK(pay->p == slot + pay->offset, "payload pointer");
    for (uint32_t i = 0; i < n; i++)
        CHECK(!memcmp(pay->p + (uint64_t)i * 4 * PAY_COLS, T.payload[b->rows[i]], 4 * PAY_COLS),
              "payload row %u overwritten", i);
}

/* perturbation_indices and perturbation_ptr against the sorted unique sets. */
static void check_pert_arrays(const slot_view *v, const batch *b)
{
    const uint32_t n = b->n;
    uint64_t total = 0;
    uint32_t cnt[64];
    unsigned char P[N_GENES];
    for (uint32_t i = 0; i < n; i++) {
        pert_set(b->rows[i], P);
        cnt[i] = 0;
        for (int g = 0; g < N_GENES; g++)
            cnt[i] += P[g];
        total += cnt[i];
    }
    const arr *ptr = find(v, "perturbation_ptr", "<i8", 1, n + 1, 0);
    const arr *idx = find(v, "perturbation_indices", "<i4", 1, total, 0);
    CHECK(rd_i64(ptr, 0) == 0, "perturbation_ptr[0]");
    for (uint32_t i = 0; i < n; i++) {
        pert_set(b->rows[i], P);
        int64_t a = rd_i64(ptr, i);
        CHECK(rd_i64(ptr, i + 1) - a == cnt[i], "sample %u: %lld perturbed genes, oracle %u", i,
              (long long)(rd_i64(ptr, i + 1) - a), cnt[i]);
        uint32_t j = 0;
        for (int g = 0; g < N_GENES; g++)
            if (P[g]) {
                CHECK(rd_i32(idx, (uint64_t)a + j) == g,
                      "sample %u perturbation_indices[%u] = %d, oracle %d", i, j,
                      rd_i32(idx, (uint64_t)a + j), g);
                j++;
            }
    }
}

/* Collate `n_batches` random batches of size B (the last one partial) with
 * table `tab` and dense mode `dense`, checking every slot. */
static void run_batches(const pl__table *tab, uint32_t dense, uint32_t B, int n_batches,
                        uint64_t seed)
{
    pl__collate_cfg c;
    pl__collate_cfg_init(&c, T.db, T.g, B, dense);
    cr_assert_eq(c.payload_row_bytes, 4 * PAY_COLS);
    cr_assert_str_eq(c.payload_dtype, "<f4");
    uint64_t cap = slot_cap(&c, tab, B);
    uint64_t scratch_len = tab->max_kind_bound + PL__MASKS_PAD;
    free(T.buf);
    free(T.scratch);
    T.buf = aligned_alloc(4096, (cap + GUARD + 4095) / 4096 * 4096);
    T.scratch = malloc(scratch_len * 4);
    cr_assert(T.buf && T.scratch);
    uint64_t s = seed;
    uint64_t total_edges = type_edges[0] + type_edges[1] + type_edges[2] + N_GPR + N_RMR;
    for (int bi = 0; bi < n_batches; bi++) {
        batch b;
        uint32_t n = bi == n_batches - 1 && B > 1 ? 1 + (uint32_t)pl_test_below(&s, B - 1) : B;
        make_batch(tab, &b, n, &s);
        memset(T.buf, 0xA5, cap + GUARD);
        put_payload(&c, T.buf, &b);
        pl__batch_src src = src_of(&b);
        pl_err err = {0};
        uint64_t epoch = 3 + (uint64_t)bi % 2;
        int rc = pl__collate(&c, &src, T.buf, cap, (uint64_t)bi, epoch, T.scratch, scratch_len,
                             &err);
        CHECK(rc == 0, "pl__collate (B=%u n=%u dense=%u): %d %s", B, n, dense, rc, err.msg);
        for (uint64_t i = cap; i < cap + GUARD; i++)
            CHECK(T.buf[i] == 0xA5, "byte %llu past the slot's %llu written",
                  (unsigned long long)i, (unsigned long long)cap);
        slot_view *v = malloc(sizeof *v);
        cr_assert_not_null(v);
        parse_slot(T.buf, cap, v);
        check_slot(v, &c, &b, (uint64_t)bi, epoch, T.buf);
        check_pert_arrays(v, &b);
        if (dense == PL_DENSE_NONE) {
            /* removed lists are offsets into the shared graph, never a copy of it */
            uint64_t bound = ALIGN64(sizeof v->h + (uint64_t)v->n * sizeof(struct pl_slot_array));
            for (uint32_t i = 0; i < v->n; i++)
                bound += ALIGN64(v->a[i].nbytes);
            /* + the padding that puts the payload array on a page (slot.h) */
            CHECK(v->h.used <= bound + 64 + PL_SLOT_PAGE - PL_SLOT_ALIGN,
                  "used %llu bytes, arrays account for %llu",
                  (unsigned long long)v->h.used, (unsigned long long)bound);
            if (n >= 7)
                CHECK(v->h.used * 3 < (uint64_t)n * total_edges * 4,
                      "slot of %u samples uses %llu bytes: not far below B * E * 4 = %llu", n,
                      (unsigned long long)v->h.used,
                      (unsigned long long)((uint64_t)n * total_edges * 4));
        }
        free(v);
    }
}

/* ---------------------------------------------------------------- tests */

Test(collate, table_matches_inputs)
{
    for (int m = 0; m < 2; m++) {
        const pl__table *t = &T.tab[m];
        cr_assert_eq(t->n, N_SAMPLES);
        cr_assert_eq(t->n_labels, N_LABELS);
        uint32_t max_genes = 0;
        for (uint64_t r = 0; r < N_SAMPLES; r++) {
            unsigned char P[N_GENES];
            pert_set(r, P);
            CHECK(t->ids[r] == T.ids[r], "row %llu id", (unsigned long long)r);
            uint64_t k = t->gptr[r];
            uint32_t cnt = 0;
            for (int g = 0; g < N_GENES; g++)
                if (P[g]) {
                    CHECK(k < t->gptr[r + 1] && t->genes[k] == g,
                          "row %llu: genes are not the sorted unique set", (unsigned long long)r);
                    k++;
                    cnt++;
                }
            CHECK(k == t->gptr[r + 1], "row %llu: extra genes", (unsigned long long)r);
            if (cnt > max_genes)
                max_genes = cnt;
            for (int l = 0; l < N_LABELS; l++) {
                float x = t->labels[r * N_LABELS + l], want = T.labels[r][l];
                CHECK(isnan(want) ? isnan(x) : x == want, "row %llu label %d: %g vs %g",
                      (unsigned long long)r, l, (double)x, (double)want);
            }
        }
        cr_expect_eq(t->max_genes, max_genes);
    }
}

static void dense_case(uint32_t dense)
{
    static const uint32_t sizes[] = {1, 7, 64};
    int simd = T.g->simd;
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 3; i++) {
            T.g->simd = m == 0 ? simd : 0; /* the scalar merge on the second pass */
            run_batches(&T.tab[m], dense, sizes[i], sizes[i] == 64 ? 12 : 30,
                        1000 * (uint64_t)dense + 10 * (uint64_t)i + (uint64_t)m);
        }
    T.g->simd = simd;
}

Test(collate, sparse_batches_match_oracle) { dense_case(PL_DENSE_NONE); }

Test(collate, dense_bits_batches_match_oracle) { dense_case(PL_DENSE_BITS); }

Test(collate, dense_bool_batches_match_oracle) { dense_case(PL_DENSE_BOOL); }

Test(collate, every_row_once)
{
    /* every sample of the store through a batch of 64, in row order */
    pl__collate_cfg c;
    pl__collate_cfg_init(&c, T.db, T.g, 64, PL_DENSE_BITS);
    const pl__table *tab = &T.tab[0];
    uint64_t cap = slot_cap(&c, tab, 64), scratch_len = tab->max_kind_bound + PL__MASKS_PAD;
    T.buf = aligned_alloc(4096, (cap + 4095) / 4096 * 4096);
    T.scratch = malloc(scratch_len * 4);
    cr_assert(T.buf && T.scratch);
    slot_view *v = malloc(sizeof *v);
    cr_assert_not_null(v);
    for (uint64_t first = 0; first < N_SAMPLES; first += 64) {
        batch b;
        b.n = (uint32_t)(N_SAMPLES - first < 64 ? N_SAMPLES - first : 64);
        for (uint32_t i = 0; i < b.n; i++) {
            uint64_t r = first + i;
            b.rows[i] = r;
            b.ids[i] = tab->ids[r];
            b.genes[i] = tab->genes + tab->gptr[r];
            b.n_genes[i] = (uint32_t)(tab->gptr[r + 1] - tab->gptr[r]);
            b.labels[i] = tab->labels + r * tab->n_labels;
        }
        put_payload(&c, T.buf, &b);
        pl__batch_src src = src_of(&b);
        pl_err err = {0};
        int rc = pl__collate(&c, &src, T.buf, cap, first / 64, 0, T.scratch, scratch_len, &err);
        cr_assert_eq(rc, 0, "%s", err.msg);
        parse_slot(T.buf, cap, v);
        check_slot(v, &c, &b, first / 64, 0, T.buf);
        check_pert_arrays(v, &b);
    }
    free(v);
}
