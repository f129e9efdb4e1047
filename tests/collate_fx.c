/* The fixture of the collation suites (test_collate.c, test_collate_limits.c):
 * the database they collate from, built from files written here and loaded
 * with each io backend; the test's own reader of a slot through its header
 * and descriptors; batches of sample rows as the loader hands them to
 * pl__collate. */
#include "collate_fx.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/io.h"
#include "testutil.h"

/* the third name has the longest length pl_build accepts (100) */
const char *const type_names[N_TYPES] = {
    "alpha", "void",
    "beta_long.name-long.name-long.name-long.name-long.name-long.name-long.name-long.name-long.name-xxxxx"};
const uint64_t type_edges[N_TYPES] = {900, 0, 400};

co T;

/* ------------------------------------------------------------ inputs */

static void gen_edges(uint64_t *s, int t)
{
    uint64_t E = type_edges[t];
    T.src[t] = malloc((E + 1) * 4);
    T.dst[t] = malloc((E + 1) * 4);
    cr_assert(T.src[t] && T.dst[t]);
    for (uint64_t e = 0; e < E; e++) {
        uint64_t roll = pl_test_below(s, 100);
        if (roll < 6 && e > 0) { /* duplicate of an earlier edge */
            uint64_t f = pl_test_below(s, e);
            T.src[t][e] = T.src[t][f];
            T.dst[t][e] = T.dst[t][f];
            continue;
        }
        /* genes 55..59 are isolated; gene 0 is a hub */
        T.src[t][e] = roll < 14 ? 0 : (int32_t)pl_test_below(s, 55);
        T.dst[t][e] = roll >= 14 && roll < 20 ? T.src[t][e] /* self-loop */
                                              : (int32_t)pl_test_below(s, 55);
    }
}

static void build_db(void)
{
    uint64_t s = 2024;
    pl_test_text t = {0};
    pl_test_inputs in = {.dir = T.dir};
    for (int g = 0; g < N_GENES; g++)
        pl_test_tprintf(&t, "G%02d\n", g);
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);

    for (int ty = 0; ty < N_TYPES; ty++)
        gen_edges(&s, ty);
    pl_test_tprintf(&t, "# alpha edges\n");
    for (uint64_t e = 0; e < type_edges[0]; e++)
        pl_test_tprintf(&t, "G%02d\tG%02d\n", T.src[0][e], T.dst[0][e]);
    pl_test_inputs_edges(&in, type_names[0], pl_test_inputs_text(&in, "alpha.tsv", &t));
    pl_test_inputs_edges(&in, type_names[1], pl_test_inputs_text(&in, "void.tsv", &t));
    int32_t *beta2 = malloc(2 * type_edges[2] * 4);
    cr_assert_not_null(beta2);
    memcpy(beta2, T.src[2], type_edges[2] * 4);
    memcpy(beta2 + type_edges[2], T.dst[2], type_edges[2] * 4);
    char shape[64];
    snprintf(shape, sizeof shape, "(2, %llu)", (unsigned long long)type_edges[2]);
    pl_test_inputs_edges(&in, type_names[2], pl_test_inputs_npy(&in, "beta.npy", "<i4", shape,
                                                                beta2, 2 * type_edges[2] * 4));
    free(beta2);

    /* reactions r0..r19 listed in order: r18 only in RMR, r19 nowhere */
    for (int r = 0; r < N_RX; r++)
        pl_test_tprintf(&t, "r%d\n", r);
    in.o.reactions = pl_test_inputs_text(&in, "reactions.txt", &t);
    for (int i = 0; i < N_GPR; i++) {
        if (i > 0 && pl_test_below(&s, 6) == 0) {
            int f = (int)pl_test_below(&s, (uint64_t)i);
            T.gpr_gene[i] = T.gpr_gene[f];
            T.gpr_rxn[i] = T.gpr_rxn[f];
        } else {
            T.gpr_gene[i] = pl_test_below(&s, 5) == 0 ? 0 : (int32_t)pl_test_below(&s, 55);
            T.gpr_rxn[i] = (int32_t)pl_test_below(&s, 18);
        }
        pl_test_tprintf(&t, "G%02d\tr%d\n", T.gpr_gene[i], T.gpr_rxn[i]);
    }
    in.o.gpr = pl_test_inputs_text(&in, "gpr.tsv", &t);
    for (int i = 0; i < N_RMR; i++) {
        T.rmr_rxn[i] = i == 7 ? 18 : i == 9 ? 19 : (int32_t)pl_test_below(&s, N_RX);
        pl_test_tprintf(&t, "r%d\tm%d\t%d\n", T.rmr_rxn[i], (int)pl_test_below(&s, N_MET),
                        (int)pl_test_below(&s, 7) - 3);
    }
    in.o.rmr = pl_test_inputs_text(&in, "rmr.tsv", &t);

    static const char *const na[] = {"NA", "NaN", "nan", ""};
    pl_test_tprintf(&t, "genes\tid\tfit\tgrowth\n");
    for (int r = 0; r < N_SAMPLES; r++) {
        uint32_t k = 1 + (uint32_t)pl_test_below(&s, MAX_SG);
        T.n_listed[r] = k;
        for (uint32_t i = 0; i < k; i++) {
            int32_t g = i > 0 && pl_test_below(&s, 4) == 0
                            ? T.listed[r][pl_test_below(&s, i)] /* duplicate */
                            : (int32_t)pl_test_below(&s, N_GENES);
            T.listed[r][i] = g;
            pl_test_tprintf(&t, "%sG%02d", i ? ";" : "", g);
        }
        T.ids[r] = 5000000000ULL + 3ULL * (uint64_t)r;
        pl_test_tprintf(&t, "\t%llu", (unsigned long long)T.ids[r]);
        for (int l = 0; l < N_LABELS; l++) {
            if (pl_test_below(&s, 5) == 0) {
                T.labels[r][l] = NAN;
                pl_test_tprintf(&t, "\t%s", na[pl_test_below(&s, l == 0 ? 4 : 3)]);
            } else {
                T.labels[r][l] = (float)((int)pl_test_below(&s, 4000) - 2000) / 8.0f;
                pl_test_tprintf(&t, "\t%.3f", (double)T.labels[r][l]);
            }
        }
        pl_test_tprintf(&t, "\n");
    }
    in.o.samples = pl_test_inputs_text(&in, "samples.tsv", &t);
    for (int r = 0; r < N_SAMPLES; r++)
        for (int c = 0; c < PAY_COLS; c++)
            T.payload[r][c] = (float)r + (float)c / 4.0f;
    snprintf(shape, sizeof shape, "(%d, %d)", N_SAMPLES, PAY_COLS);
    in.o.payload = pl_test_inputs_npy(&in, "payload.npy", "<f4", shape, T.payload,
                                      sizeof T.payload);

    pl_build_stats st;
    pl_err err = {0};
    snprintf(T.db_path, sizeof T.db_path, "%s/db", T.dir);
    cr_assert_eq(pl_test_inputs_build(&in, T.db_path, &st, &err), 0, "pl_build: %s", err.msg);
    cr_assert_eq(st.n_samples, N_SAMPLES);
    cr_assert_eq(st.n_edges, type_edges[0] + type_edges[1] + type_edges[2]);
    cr_assert_eq(st.n_reactions, N_RX);
    cr_assert_eq(st.n_gpr, N_GPR);
    cr_assert_eq(st.n_rmr, N_RMR);
    pl_test_inputs_free(&in);
}

void co_init(void)
{
    memset(&T, 0, sizeof T);
    T.dir = pl_test_tmpdir();
    build_db();
    pl_err err = {0};
    cr_assert_eq(pl_db_open(T.db_path, &T.db, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_graph_load(T.db, &T.g, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_graph_n_lists(T.g), N_TYPES + 3);
    cr_assert_eq(pl__table_load(T.db, T.g, PL_IO_URING, &T.tab[0], &err), 0,
                 "table through io_uring: %s", err.msg);
    cr_assert_str_eq(T.tab[0].backend, "io_uring");
    cr_assert_eq(pl__table_load(T.db, T.g, PL_IO_PREAD, &T.tab[1], &err), 0,
                 "table through pread: %s", err.msg);
    cr_assert_str_eq(T.tab[1].backend, "pread");
}

void co_fini(void)
{
    free(T.buf);
    free(T.scratch);
    pl__table_free(&T.tab[0]);
    pl__table_free(&T.tab[1]);
    pl_graph_free(T.g);
    pl_db_close(T.db);
    for (int t = 0; t < N_TYPES; t++) {
        free(T.src[t]);
        free(T.dst[t]);
    }
    if (T.dir)
        pl_test_rmtree(T.dir);
    free(T.dir);
    memset(&T, 0, sizeof T);
}

/* --------------------------------------------------------- slot reader */

static uint64_t itemsize(const char *dtype)
{
    static const struct {
        const char *t;
        uint64_t size;
    } known[] = {{"<u8", 8}, {"<i8", 8}, {"<i4", 4}, {"<f4", 4},
                 {"<f2", 2}, {"|u1", 1}, {"|b1", 1}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(dtype, known[i].t))
            return known[i].size;
    return 0;
}

/* Parse and validate a slot of `cap` bytes through its header only: the
 * library's check, then this test's own, independent one. */
void parse_slot(const unsigned char *slot, uint64_t cap, slot_view *v)
{
    memset(v, 0, sizeof *v);
    pl_err err;
    CHECK(pl_slot_check(slot, cap, &err) == 0, "pl_slot_check: %s", err.msg);
    CHECK(cap >= sizeof v->h, "slot smaller than its header");
    memcpy(&v->h, slot, sizeof v->h);
    CHECK(!memcmp(v->h.magic, PL_SLOT_MAGIC, 8), "bad slot magic");
    CHECK(v->h.version == PL_SLOT_VERSION, "slot version %u", v->h.version);
    CHECK(v->h.n_arrays >= 1 && v->h.n_arrays <= 128, "n_arrays %u", v->h.n_arrays);
    CHECK(v->h.used <= cap, "used %llu > cap %llu", (unsigned long long)v->h.used,
          (unsigned long long)cap);
    uint64_t desc_end = sizeof v->h + (uint64_t)v->h.n_arrays * sizeof(struct pl_slot_array);
    CHECK(desc_end <= v->h.used, "descriptors end at %llu past used %llu",
          (unsigned long long)desc_end, (unsigned long long)v->h.used);
    v->n = v->h.n_arrays;
    for (uint32_t i = 0; i < v->n; i++) {
        struct pl_slot_array d;
        memcpy(&d, slot + sizeof v->h + i * sizeof d, sizeof d);
        arr *a = &v->a[i];
        CHECK(memchr(d.name, 0, sizeof d.name) != NULL, "array %u: name not terminated", i);
        CHECK(d.name[0] != 0, "array %u: empty name", i);
        CHECK(memchr(d.dtype, 0, sizeof d.dtype) != NULL, "array %u: dtype not terminated", i);
        memcpy(a->name, d.name, sizeof a->name);
        memcpy(a->dtype, d.dtype, sizeof a->dtype);
        uint64_t isz = itemsize(a->dtype);
        CHECK(isz, "%s: unknown dtype '%s'", a->name, a->dtype);
        CHECK(d.ndim >= 1 && d.ndim <= PL_SLOT_MAX_DIMS, "%s: ndim %u", a->name, d.ndim);
        a->ndim = d.ndim;
        uint64_t count = 1;
        for (uint32_t k = 0; k < PL_SLOT_MAX_DIMS; k++) {
            a->shape[k] = d.shape[k];
            if (k < d.ndim)
                count *= d.shape[k];
            else
                CHECK(d.shape[k] == 0, "%s: shape[%u] = %llu past ndim", a->name, k,
                      (unsigned long long)d.shape[k]);
        }
        CHECK(count * isz == d.nbytes, "%s: nbytes %llu, shape gives %llu", a->name,
              (unsigned long long)d.nbytes, (unsigned long long)(count * isz));
        CHECK(d.offset % PL_SLOT_ALIGN == 0, "%s: offset %llu not 64-aligned", a->name,
              (unsigned long long)d.offset);
        CHECK(d.offset >= desc_end, "%s: offset %llu inside the descriptors", a->name,
              (unsigned long long)d.offset);
        CHECK(d.offset <= v->h.used && d.nbytes <= v->h.used - d.offset,
              "%s: [%llu, +%llu) past used %llu", a->name, (unsigned long long)d.offset,
              (unsigned long long)d.nbytes, (unsigned long long)v->h.used);
        a->offset = d.offset;
        a->nbytes = d.nbytes;
        a->p = slot + d.offset;
        for (uint32_t j = 0; j < i; j++)
            CHECK(strcmp(v->a[j].name, a->name) != 0, "array name %s twice", a->name);
    }
    /* no two arrays share a byte */
    for (uint32_t i = 0; i < v->n; i++)
        for (uint32_t j = i + 1; j < v->n; j++) {
            const arr *x = &v->a[i], *y = &v->a[j];
            if (!x->nbytes || !y->nbytes)
                continue;
            CHECK(x->offset + x->nbytes <= y->offset || y->offset + y->nbytes <= x->offset,
                  "%s [%llu,+%llu) overlaps %s [%llu,+%llu)", x->name,
                  (unsigned long long)x->offset, (unsigned long long)x->nbytes, y->name,
                  (unsigned long long)y->offset, (unsigned long long)y->nbytes);
        }
}

const arr *find(const slot_view *v, const char *name, const char *dtype, uint32_t ndim,
                uint64_t d0, uint64_t d1)
{
    for (uint32_t i = 0; i < v->n; i++) {
        const arr *a = &v->a[i];
        if (strcmp(a->name, name))
            continue;
        CHECK(!strcmp(a->dtype, dtype), "%s: dtype %s, expected %s", name, a->dtype, dtype);
        CHECK(a->ndim == ndim, "%s: ndim %u, expected %u", name, a->ndim, ndim);
        CHECK(a->shape[0] == d0, "%s: shape[0] %llu, expected %llu", name,
              (unsigned long long)a->shape[0], (unsigned long long)d0);
        if (ndim > 1)
            CHECK(a->shape[1] == d1, "%s: shape[1] %llu, expected %llu", name,
                  (unsigned long long)a->shape[1], (unsigned long long)d1);
        return a;
    }
    cr_assert_fail("array %s missing from the slot", name);
    return NULL;
}

int64_t rd_i64(const arr *a, uint64_t i)
{
    int64_t x;
    memcpy(&x, a->p + 8 * i, 8);
    return x;
}

int32_t rd_i32(const arr *a, uint64_t i)
{
    int32_t x;
    memcpy(&x, a->p + 4 * i, 4);
    return x;
}

uint64_t rd_u64(const arr *a, uint64_t i)
{
    uint64_t x;
    memcpy(&x, a->p + 8 * i, 8);
    return x;
}

/* ------------------------------------------------------ batch driving */

void make_batch(const pl__table *tab, batch *b, uint32_t n, uint64_t *s)
{
    b->n = n;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t r = pl_test_below(s, N_SAMPLES);
        if (i == 0 && pl_test_below(s, 3) == 0)
            r = N_SAMPLES - 1; /* the last row of the last block */
        b->rows[i] = r;
        b->ids[i] = tab->ids[r];
        b->genes[i] = tab->genes + tab->gptr[r];
        b->n_genes[i] = (uint32_t)(tab->gptr[r + 1] - tab->gptr[r]);
        b->labels[i] = tab->labels + r * tab->n_labels;
    }
}

pl__batch_src src_of(const batch *b)
{
    return (pl__batch_src){.n = b->n, .ids = b->ids, .rows = b->rows, .genes = b->genes,
                           .n_genes = b->n_genes, .labels = b->labels};
}

uint64_t slot_cap(const pl__collate_cfg *c, const pl__table *tab, uint32_t B)
{
    return pl__collate_slot_bytes(c, B, (uint64_t)B * tab->max_genes,
                                  (uint64_t)B * tab->max_bound);
}
