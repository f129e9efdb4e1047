/* Collation into self-describing slots (collate/slot.h) against an oracle.
 *
 * A small database is built from files written here: 60 genes, three edge
 * types (TSV with a hub, self-loops and duplicate edges; an empty one; a .npy
 * int32 export), metabolism with a reaction list (one reaction without genes,
 * one only in RMR, duplicate GPR pairs), 1300 samples of 1..5 genes with
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
#include "loader/io.h"
#include "loader/table.h"
#include "masks/masks.h"
#include "pertload.h"
#include "testutil.h"

#define N_GENES 60
#define N_TYPES 3
#define N_SAMPLES 1300
#define N_LABELS 2
#define N_RX 20
#define N_MET 15
#define PAY_COLS 3
#define MAX_SG 5
#define N_GPR 45
#define N_RMR 55
#define GUARD 4096
#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)

/* the third name has the longest length pl_build accepts (100) */
static const char *const type_names[N_TYPES] = {
    "alpha", "void",
    "beta_long.name-long.name-long.name-long.name-long.name-long.name-long.name-long.name-long.name-xxxxx"};
static const uint64_t type_edges[N_TYPES] = {900, 0, 400};

static struct {
    char *dir;
    char db_path[4096];
    int32_t *src[N_TYPES], *dst[N_TYPES];
    int32_t gpr_gene[N_GPR], gpr_rxn[N_GPR], rmr_rxn[N_RMR];
    uint64_t ids[N_SAMPLES];
    uint32_t n_listed[N_SAMPLES];
    int32_t listed[N_SAMPLES][MAX_SG];
    float labels[N_SAMPLES][N_LABELS];
    float payload[N_SAMPLES][PAY_COLS];
    pl_db *db;
    pl_graph *g;
    pl__table tab[2];
    unsigned char *buf;
    int32_t *scratch;
} T;

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

static void setup(void)
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

static void teardown(void)
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

TestSuite(collate, .init = setup, .fini = teardown, .timeout = 240);

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

/* --------------------------------------------------------- slot reader */

typedef struct arr {
    char name[PL_SLOT_NAME_MAX];
    char dtype[8];
    uint32_t ndim;
    uint64_t shape[PL_SLOT_MAX_DIMS];
    uint64_t offset, nbytes;
    const unsigned char *p;
} arr;

typedef struct slot_view {
    struct pl_slot_header h;
    uint32_t n;
    arr a[128];
} slot_view;

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
static void parse_slot(const unsigned char *slot, uint64_t cap, slot_view *v)
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

static const arr *find(const slot_view *v, const char *name, const char *dtype, uint32_t ndim,
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

static int64_t rd_i64(const arr *a, uint64_t i)
{
    int64_t x;
    memcpy(&x, a->p + 8 * i, 8);
    return x;
}

static int32_t rd_i32(const arr *a, uint64_t i)
{
    int32_t x;
    memcpy(&x, a->p + 4 * i, 4);
    return x;
}

static uint64_t rd_u64(const arr *a, uint64_t i)
{
    uint64_t x;
    memcpy(&x, a->p + 8 * i, 8);
    return x;
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

typedef struct batch {
    uint32_t n;
    uint64_t rows[64], ids[64];
    const int32_t *genes[64];
    uint32_t n_genes[64];
    const float *labels[64];
} batch;

static void make_batch(const pl__table *tab, batch *b, uint32_t n, uint64_t *s)
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

static pl__batch_src src_of(const batch *b)
{
    return (pl__batch_src){.n = b->n, .ids = b->ids, .rows = b->rows, .genes = b->genes,
                           .n_genes = b->n_genes, .labels = b->labels};
}

static uint64_t slot_cap(const pl__collate_cfg *c, const pl__table *tab, uint32_t B)
{
    return pl__collate_slot_bytes(c, B, (uint64_t)B * tab->max_genes,
                                  (uint64_t)B * tab->max_bound);
}

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
