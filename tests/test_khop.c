/* k-hop neighbourhoods (DESIGN section 11) against a brute-force BFS.
 *
 * Random graphs go through the real pipeline (input files, pl_build(),
 * pl_db_open()) with hub genes, self-loops, duplicate edges, edges repeated
 * across types, isolated genes and disconnected parts (genes split into
 * components that no edge joins), edge types as TSV or .npy. For k = 0..3,
 * walked type sets of one type, several and all, random deletion sets
 * (duplicates included) and caps from 1 to beyond the gene count, the set
 * and every walked type's kept edges of pl__khop_genes()/pl__khop_edges()
 * (into buffers of exactly the documented room) are compared with the
 * oracle (each way of sorting the kept edges in turn): balls grown by scanning every walked edge both ways, the cap
 * taking the ball of the largest radius that fits, and a scan of every edge
 * for those with both ends in the set. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "masks/khop.h"
#include "masks/masks.h"
#include "pertload.h"
#include "testutil.h"

#define N_GRAPHS 16
#define MAX_TYPES 5

typedef struct graph {
    uint32_t n_genes, n_types;
    uint64_t n_edges[MAX_TYPES];
    int32_t *src[MAX_TYPES], *dst[MAX_TYPES];
} graph;

static struct {
    char *dir;
    graph s;
    pl_db *db;
    pl__khop *kh;
    pl__khop_ctx *x;
} T;

static void fx_init(void) { memset(&T, 0, sizeof T); }

static void release(void)
{
    pl__khop_ctx_free(T.x);
    pl__khop_free(T.kh);
    T.x = NULL;
    T.kh = NULL;
}

static void fx_fini(void)
{
    release();
    pl_db_close(T.db);
    for (uint32_t t = 0; t < MAX_TYPES; t++) {
        free(T.s.src[t]);
        free(T.s.dst[t]);
    }
    if (T.dir) {
        pl_test_rmtree(T.dir);
        free(T.dir);
    }
    memset(&T, 0, sizeof T);
}

TestSuite(khop, .init = fx_init, .fini = fx_fini, .timeout = 300);

static uint64_t below(uint64_t *r, uint64_t n) { return pl_test_below(r, n); }

/* A gene of component c of n_comp (genes g with g % n_comp == c, below
 * `active`; genes from `active` on are isolated), or the component's hub. */
static int32_t endpoint(uint64_t *r, const graph *s, uint32_t active, uint32_t n_comp,
                        uint32_t c, uint32_t hub_pct)
{
    uint32_t per = (active - c + n_comp - 1) / n_comp; /* genes of component c */
    if (per == 0)
        return (int32_t)c;
    if (below(r, 100) < hub_pct)
        return (int32_t)c; /* its first gene is its hub */
    (void)s;
    return (int32_t)(c + n_comp * (uint32_t)below(r, per));
}

static void gen_type(uint64_t *r, graph *s, uint32_t t, uint32_t active, uint32_t n_comp)
{
    uint64_t E = below(r, 8) == 0 ? 0 : 1 + below(r, 1 + 3 * (uint64_t)active);
    uint32_t hub_pct = (uint32_t)below(r, 4) * 12;
    s->n_edges[t] = E;
    s->src[t] = malloc((E ? E : 1) * 4);
    s->dst[t] = malloc((E ? E : 1) * 4);
    cr_assert(s->src[t] && s->dst[t]);
    for (uint64_t e = 0; e < E; e++) {
        uint64_t roll = below(r, 100);
        if (roll < 6 && e > 0) { /* duplicate, possibly reversed */
            uint64_t f = below(r, e);
            int rev = below(r, 2) == 0;
            s->src[t][e] = rev ? s->dst[t][f] : s->src[t][f];
            s->dst[t][e] = rev ? s->src[t][f] : s->dst[t][f];
            continue;
        }
        if (roll < 10 && t > 0 && s->n_edges[0] > 0) { /* an edge of type 0 again */
            uint64_t f = below(r, s->n_edges[0]);
            s->src[t][e] = s->src[0][f];
            s->dst[t][e] = s->dst[0][f];
            continue;
        }
        uint32_t c = (uint32_t)below(r, n_comp);
        s->src[t][e] = endpoint(r, s, active, n_comp, c, hub_pct);
        s->dst[t][e] = roll < 16 ? s->src[t][e] : endpoint(r, s, active, n_comp, c, hub_pct);
    }
}

static void make_graph(int id)
{
    uint64_t r = 0x6b6f7000u + (uint64_t)id * 104729;
    static const uint32_t genes_of[N_GRAPHS] = {1,  2,   5,   17,  64,  300, 1000, 2500,
                                                40, 129, 700, 3,   200, 63,  65,   1500};
    graph *s = &T.s;
    s->n_genes = genes_of[id];
    s->n_types = 1 + (uint32_t)below(&r, MAX_TYPES);
    uint32_t active = s->n_genes > 3 ? s->n_genes - (uint32_t)below(&r, s->n_genes / 4 + 1)
                                     : s->n_genes;
    uint32_t n_comp = 1 + (uint32_t)below(&r, active < 4 ? active : 4);
    T.dir = pl_test_tmpdir();
    pl_test_text t = {0};
    pl_test_inputs in = {.dir = T.dir};
    for (uint32_t g = 0; g < s->n_genes; g++)
        pl_test_tprintf(&t, "g%u\n", g);
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
    static char names[MAX_TYPES][16];
    for (uint32_t ty = 0; ty < s->n_types; ty++) {
        gen_type(&r, s, ty, active, n_comp);
        snprintf(names[ty], sizeof names[ty], "t%u", ty);
        char file[32];
        const char *path;
        if (below(&r, 2)) {
            pl_test_tprintf(&t, "# edges\n");
            for (uint64_t e = 0; e < s->n_edges[ty]; e++)
                pl_test_tprintf(&t, "g%d\tg%d\n", s->src[ty][e], s->dst[ty][e]);
            snprintf(file, sizeof file, "t%u.tsv", ty);
            path = pl_test_inputs_text(&in, file, &t);
        } else {
            uint64_t E = s->n_edges[ty];
            int32_t *buf = malloc((2 * E + 1) * 4);
            cr_assert_not_null(buf);
            memcpy(buf, s->src[ty], E * 4);
            memcpy(buf + E, s->dst[ty], E * 4);
            char shape[64];
            snprintf(shape, sizeof shape, "(2, %llu)", (unsigned long long)E);
            snprintf(file, sizeof file, "t%u.npy", ty);
            path = pl_test_inputs_npy(&in, file, "<i4", shape, buf, E * 8);
            free(buf);
        }
        pl_test_inputs_edges(&in, names[ty], path);
    }
    pl_test_tprintf(&t, "genes\tfitness\ng0\t1.0\n");
    in.o.samples = pl_test_inputs_text(&in, "samples.tsv", &t);
    in.o.progress = 0;
    char dbp[4096];
    snprintf(dbp, sizeof dbp, "%s/db", T.dir);
    pl_err err = {0};
    pl_build_stats st;
    int rc = pl_test_inputs_build(&in, dbp, &st, &err);
    cr_assert_eq(rc, 0, "graph %d: pl_build: %s", id, err.msg);
    pl_test_inputs_free(&in);
    rc = pl_db_open(dbp, &T.db, &err);
    cr_assert_eq(rc, 0, "graph %d: pl_db_open: %s", id, err.msg);
}

/* ------------------------------------------------------------ the oracle */

/* Ball of radius k around P (in[g] = 1), walking types[0..nt) both ways,
 * with the cap; returns its size, sets *capped. */
static uint32_t oracle_set(const graph *s, const uint32_t *types, uint32_t nt, uint32_t k,
                           uint32_t cap, const unsigned char *P, unsigned char *in,
                           int *capped)
{
    uint32_t N = s->n_genes, size = 0;
    unsigned char *cur = malloc(N + 1), *next = malloc(N + 1);
    cr_assert(cur && next);
    memcpy(cur, P, N);
    for (uint32_t g = 0; g < N; g++)
        size += cur[g];
    memcpy(in, cur, N);
    uint32_t in_size = size;
    *capped = 0;
    for (uint32_t h = 1; h <= k; h++) {
        memcpy(next, cur, N);
        for (uint32_t j = 0; j < nt; j++) {
            uint32_t t = types[j];
            for (uint64_t e = 0; e < s->n_edges[t]; e++) {
                int32_t a = s->src[t][e], b = s->dst[t][e];
                if (cur[a])
                    next[b] = 1;
                if (cur[b])
                    next[a] = 1;
            }
        }
        uint32_t n = 0;
        for (uint32_t g = 0; g < N; g++)
            n += next[g];
        memcpy(cur, next, N);
        if (n <= cap && !*capped) {
            memcpy(in, cur, N);
            in_size = n;
        } else if (n != in_size) {
            *capped = 1;
        }
    }
    free(cur);
    free(next);
    return in_size;
}

/* ------------------------------------------------------------- the checks */

static void check_set(int id, const uint32_t *types, uint32_t nt, uint32_t k, uint32_t cap,
                      const int32_t *genes, uint32_t n_genes, uint64_t *rng)
{
    const graph *s = &T.s;
    const uint32_t N = s->n_genes;
    unsigned char *P = calloc(N + 1, 1), *in = calloc(N + 1, 1);
    int32_t *pert = malloc((n_genes + 1) * 4);
    cr_assert(P && in && pert);
    for (uint32_t i = 0; i < n_genes; i++)
        P[genes[i]] = 1;
    uint32_t bad;
    int64_t np = pl__masks_genes(N, genes, n_genes, pert, &bad);
    cr_assert_geq(np, 0);
    int want_capped;
    uint32_t want_n = oracle_set(s, types, nt, k, cap, P, in, &want_capped);

    uint64_t room = pl__khop_genes_bound(T.kh, (uint64_t)np);
    int32_t *set = malloc((room + 1) * 4);
    cr_assert_not_null(set);
    set[room] = 0x5a5a5a5a; /* a guard just past the room */
    int capped = -1;
    uint32_t n = pl__khop_genes(T.x, pert, (uint32_t)np, set, &capped);
    cr_assert_eq(set[room], 0x5a5a5a5a, "graph %d: set written past its room", id);
    cr_assert_eq(n, want_n, "graph %d k %u cap %u |P| %lld: %u genes, oracle %u", id, k, cap,
                 (long long)np, n, want_n);
    cr_assert_eq(capped, want_capped, "graph %d k %u cap %u: capped %d, oracle %d", id, k, cap,
                 capped, want_capped);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert(set[i] >= 0 && (uint32_t)set[i] < N && in[set[i]],
                  "graph %d k %u: gene %d not in the oracle's set", id, k, set[i]);
        cr_assert(i == 0 || set[i - 1] < set[i], "graph %d: set not ascending", id);
    }
    for (uint32_t j = 0; j < nt; j++) {
        uint32_t t = types[j];
        uint64_t E = s->n_edges[t], m = 0;
        int32_t *want = malloc((E + 1) * 4);
        cr_assert_not_null(want);
        for (uint64_t e = 0; e < E; e++)
            if (in[s->src[t][e]] && in[s->dst[t][e]])
                want[m++] = (int32_t)e;
        uint64_t own = pl__khop_owned(T.kh, j, set, n);
        cr_assert_leq(m, own);
        cr_assert_leq(own, pl__khop_edges_bound(T.kh, j, n));
        int32_t *got = malloc((own + 1) * 4);
        cr_assert_not_null(got);
        got[own] = 0x5a5a5a5a;
        int64_t c = pl__khop_edges(T.x, j, set, n, got);
        cr_assert_eq(got[own], 0x5a5a5a5a, "graph %d: edges written past their room", id);
        cr_assert_eq(c, (int64_t)m, "graph %d k %u type %u: %lld edges, oracle %llu", id, k, t,
                     (long long)c, (unsigned long long)m);
        cr_assert_arr_eq(got, want, m * 4, "graph %d k %u type %u: edge positions differ", id,
                         k, t);
        free(got);
        free(want);
    }
    (void)rng;
    free(set);
    free(P);
    free(in);
    free(pert);
}

static void run_graph(int id)
{
    make_graph(id);
    const graph *s = &T.s;
    uint64_t r = 0xbf5a0000u + (uint64_t)id;
    pl_err err = {0};
    for (int round = 0; round < 12; round++) {
        uint32_t types[MAX_TYPES], nt = 0;
        if (round % 3 == 0) { /* all */
            for (uint32_t t = 0; t < s->n_types; t++)
                types[nt++] = t;
        } else if (round % 3 == 1) { /* one */
            types[nt++] = (uint32_t)below(&r, s->n_types);
        } else { /* a random subset, in random order */
            for (uint32_t t = s->n_types; t-- > 0;)
                if (below(&r, 2))
                    types[nt++] = t;
            if (nt == 0)
                types[nt++] = 0;
        }
        uint32_t k = (uint32_t)round % 4;
        uint32_t cap = round < 4 ? 1u << 30
                       : round < 8 ? 1 + (uint32_t)below(&r, s->n_genes + 2)
                                   : 1 + (uint32_t)below(&r, 8);
        int rc = pl__khop_new(T.db, types, nt, k, cap, &T.kh, &err);
        cr_assert_eq(rc, 0, "graph %d: pl__khop_new: %s", id, err.msg);
        T.x = pl__khop_ctx_new(T.kh);
        cr_assert_not_null(T.x);
        pl__khop_ctx_sort(T.x, (round + round / 4) % 4); /* auto, insertion, bitmap, radix */
        for (int i = 0; i < 25; i++) {
            uint32_t n = (uint32_t)below(&r, i % 5 == 0 ? 12 : 4);
            int32_t genes[16];
            for (uint32_t j = 0; j < n; j++)
                genes[j] = j > 0 && below(&r, 5) == 0 ? genes[j - 1]
                           : below(&r, 4) == 0        ? 0 /* a hub */
                                                      : (int32_t)below(&r, s->n_genes);
            check_set(id, types, nt, k, cap, genes, n, &r);
        }
        release();
    }
}

#define GRAPH_TEST(i)                                                                      \
    Test(khop, graph_##i) { run_graph(i); }
GRAPH_TEST(0)
GRAPH_TEST(1)
GRAPH_TEST(2)
GRAPH_TEST(3)
GRAPH_TEST(4)
GRAPH_TEST(5)
GRAPH_TEST(6)
GRAPH_TEST(7)
GRAPH_TEST(8)
GRAPH_TEST(9)
GRAPH_TEST(10)
GRAPH_TEST(11)
GRAPH_TEST(12)
GRAPH_TEST(13)
GRAPH_TEST(14)
GRAPH_TEST(15)
