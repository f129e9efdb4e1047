/* The masks engine against a brute-force oracle (DESIGN section 2).
 *
 * Random graphs go through the real pipeline: input files on disk, pl_build(),
 * pl_db_open(), pl_graph_load(). Their shapes vary: 1..2000 genes, 1..64 edge
 * types (some empty), hub genes, self-loops, duplicate edges, isolated genes,
 * edge types as TSV or .npy int32/int64, metabolism with and without a
 * reaction list (reactions without genes, duplicate GPR pairs), RMR rows in
 * random order, grouped by reaction, or grouped in the database's reaction
 * order; and heavy metabolism: many genes sharing reactions that have
 * hundreds of RMR rows, genes on a hundred reactions or more. Random
 * deletion sets of 0..200 genes (duplicates included; the engine merges up
 * to 128 lists in a tree and folds more) are computed by
 * pl_masks_compute() with each merge kernel and by pl__masks_union() (RMR:
 * pl__masks_rmr() of the removed reactions) into buffers of exactly the
 * documented room, and every list is compared with an
 * O(E) scan of the test's own edge lists. The samples stored in each database
 * are checked the same way through pl_db_sample(). Every other graph serves
 * its lists from a read-only image of them (pl__graph_image_adopt(), as the
 * ranks of `pertload serve` share one), after an image altered in one
 * position was refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "masks/masks.h"
#include "pertload.h"
#include "testutil.h"

#define N_GRAPHS 24
#define N_HEAVY 6 /* graphs after the N_GRAPHS: heavy metabolism */
#define SETS_PER_GRAPH 60
#define MAX_SET 200
#define MAX_SAMPLE_GENES 8

/* ------------------------------------------------------------ the graph */

typedef struct spec {
    int id;
    uint32_t n_genes, n_types;
    uint32_t hub;                       /* a gene with a huge degree */
    uint64_t n_edges[PL_MAX_TYPES];
    int32_t *src[PL_MAX_TYPES], *dst[PL_MAX_TYPES];
    int format[PL_MAX_TYPES];           /* 0 TSV, 1 .npy int32, 2 .npy int64 */
    int metab;                          /* 0 none, 1 with a reaction list, 2 without */
    int layout;                         /* RMR rows: 0 random, 1 by id, 2 database order */
    int heavy;                          /* many genes share reactions with many RMR rows */
    uint32_t n_reactions;               /* as indexed by the database */
    uint64_t n_gpr, n_rmr;
    int32_t *gpr_gene, *gpr_rxn, *rmr_rxn; /* reaction indices as in the database */
    uint32_t n_samples;
    uint32_t *sample_n;                 /* genes per stored sample */
    int32_t *sample_genes;              /* [n_samples * MAX_SAMPLE_GENES] as listed */
} spec;

/* Everything a test holds, released by the fixture even after a failure. */
static struct {
    char *dir;
    spec s;
    pl_db *db;
    pl_graph *g;
    pl_masks *m;
    int32_t *out, *scratch;
    void *image;          /* the read-only image g serves its lists from, or NULL */
    uint64_t image_bytes;
} T;

static void release_graph(void)
{
    pl_masks_free(T.m);
    pl_graph_free(T.g);
    if (T.image)
        munmap(T.image, T.image_bytes);
    T.image = NULL;
    pl_db_close(T.db);
    T.m = NULL;
    T.g = NULL;
    T.db = NULL;
    spec *s = &T.s;
    for (uint32_t t = 0; t < PL_MAX_TYPES; t++) {
        free(s->src[t]);
        free(s->dst[t]);
    }
    free(s->gpr_gene);
    free(s->gpr_rxn);
    free(s->rmr_rxn);
    free(s->sample_n);
    free(s->sample_genes);
    memset(s, 0, sizeof *s);
}

static void fx_init(void) { memset(&T, 0, sizeof T); }

static void fx_fini(void)
{
    release_graph();
    free(T.out);
    free(T.scratch);
    if (T.dir) {
        pl_test_rmtree(T.dir);
        free(T.dir);
    }
    memset(&T, 0, sizeof T);
}

TestSuite(masks_oracle, .init = fx_init, .fini = fx_fini, .timeout = 300);

/* --------------------------------------------------------- input files */

/* An int32 or int64 .npy of shape (2, E): row 0 the sources, row 1 the
 * destinations. */
static const char *put_npy(pl_test_inputs *in, const char *name, const int32_t *src,
                           const int32_t *dst, uint64_t E, int wide)
{
    size_t w = wide ? 8 : 4, len = 2 * E * w;
    unsigned char *buf = malloc(len ? len : 1);
    cr_assert_not_null(buf);
    for (uint64_t e = 0; e < E; e++) {
        int64_t v[2] = {src[e], dst[e]};
        for (int r = 0; r < 2; r++) {
            unsigned char *at = buf + ((uint64_t)r * E + e) * w;
            if (wide)
                memcpy(at, &v[r], 8);
            else {
                int32_t v32 = (int32_t)v[r];
                memcpy(at, &v32, 4);
            }
        }
    }
    char shape[64];
    snprintf(shape, sizeof shape, "(2, %llu)", (unsigned long long)E);
    const char *p = pl_test_inputs_npy(in, name, wide ? "<i8" : "<i4", shape, buf, len);
    free(buf);
    return p;
}

static const char *gene_name(char *buf, size_t cap, uint32_t g)
{
    /* Some names carry UTF-8; all are unique. */
    snprintf(buf, cap, g % 7 == 3 ? "g\xc3\xa8ne%u" : "g%u", g);
    return buf;
}

/* ----------------------------------------------------- random generation */

static uint64_t below(uint64_t *r, uint64_t n) { return pl_test_below(r, n); }

/* An endpoint: the hub with probability hub_pct %, else one of the first
 * `active` genes (genes past them are isolated unless they are the hub). */
static int32_t endpoint(uint64_t *r, const spec *s, uint32_t active, uint32_t hub_pct)
{
    if (below(r, 100) < hub_pct)
        return (int32_t)s->hub;
    return (int32_t)below(r, active);
}

static void gen_edges(uint64_t *r, spec *s, uint32_t t, uint32_t active, uint64_t max_e)
{
    uint64_t E = below(r, 7) == 0 ? 0 : 1 + below(r, max_e);
    uint32_t hub_pct = (uint32_t)below(r, 4) * 15;  /* 0, 15, 30 or 45 % */
    s->n_edges[t] = E;
    s->src[t] = malloc((E ? E : 1) * sizeof(int32_t));
    s->dst[t] = malloc((E ? E : 1) * sizeof(int32_t));
    cr_assert(s->src[t] && s->dst[t]);
    for (uint64_t e = 0; e < E; e++) {
        uint64_t roll = below(r, 100);
        if (roll < 5 && e > 0) { /* duplicate of an earlier edge */
            uint64_t f = below(r, e);
            s->src[t][e] = s->src[t][f];
            s->dst[t][e] = s->dst[t][f];
            continue;
        }
        s->src[t][e] = endpoint(r, s, active, hub_pct);
        s->dst[t][e] = roll < 10 ? s->src[t][e] : endpoint(r, s, active, hub_pct);
    }
    /* Many real edge files are sorted by source: long runs of positions. */
    if (E > 1 && below(r, 3) == 0) {
        for (uint64_t i = 1; i < E; i++) {
            int32_t a = s->src[t][i], b = s->dst[t][i];
            uint64_t j = i;
            for (; j > 0 && s->src[t][j - 1] > a; j--) {
                s->src[t][j] = s->src[t][j - 1];
                s->dst[t][j] = s->dst[t][j - 1];
            }
            s->src[t][j] = a;
            s->dst[t][j] = b;
        }
    }
    s->format[t] = (int)below(r, 3);
}

/* A reaction id skewed towards small ids: a few reactions are popular. */
static uint64_t skewed(uint64_t *r, uint64_t n) { return below(r, 1 + below(r, n)); }

/* Metabolism: reactions are named r<id>; ids 0..n_ids-1, some never in GPR.
 * With a reaction list (metab 1) the database indexes reactions in the list's
 * (shuffled) order; without (metab 2) in order of first appearance in GPR,
 * then RMR. RMR rows come in random order (layout 0, a reaction's rows
 * interleave with others'), grouped by reaction in id order (layout 1, not
 * the database's order) or grouped in the database's order (layout 2). A
 * heavy graph has up to 3,000 GPR rows on popular reactions (many genes
 * share them, the hub takes part in a hundred or more) and up to 5,000 RMR
 * rows, most on the popular reactions. Writes the files and fills the spec's
 * GPR and RMR in database indices. */
static void gen_metabolism(uint64_t *r, spec *s, uint32_t active, pl_test_inputs *in)
{
    uint32_t n_ids = s->heavy ? 20 + (uint32_t)below(r, 200) : 1 + (uint32_t)below(r, 120);
    uint32_t with_genes = s->heavy ? n_ids - n_ids / 4    /* ids below have GPR rows */
                                   : 1 + (uint32_t)below(r, n_ids);
    uint64_t n_gpr = s->heavy ? 500 + below(r, 2500) : s->metab == 2 ? 1 + below(r, 300)
                                                                       : below(r, 300);
    uint64_t n_rmr = s->heavy ? 1000 + below(r, 4000) : below(r, 400);
    int32_t *gid = malloc((n_gpr + 1) * 4), *grx = malloc((n_gpr + 1) * 4);
    int32_t *rrx = malloc((n_rmr + 1) * 4);
    int32_t *index = malloc(n_ids * 4), *id_of = malloc(n_ids * 4); /* index <-> id */
    cr_assert(gid && grx && rrx && index && id_of);
    for (uint64_t i = 0; i < n_gpr; i++) {
        if (i > 0 && below(r, 8) == 0) { /* duplicate GPR pair */
            uint64_t f = below(r, i);
            gid[i] = gid[f];
            grx[i] = grx[f];
            continue;
        }
        int hub = below(r, 5) == 0;
        gid[i] = hub ? (int32_t)s->hub : (int32_t)below(r, active);
        grx[i] = (int32_t)(s->heavy && !hub ? skewed(r, with_genes) : below(r, with_genes));
    }
    for (uint64_t i = 0; i < n_rmr; i++)
        rrx[i] = (int32_t)(s->heavy ? skewed(r, n_ids) : below(r, n_ids));
    for (uint32_t i = 0; i < n_ids; i++)
        index[i] = -1;
    pl_test_text t = {0};
    char name[64];
    uint32_t n_rx = 0;
    if (s->metab == 1) {
        /* The list: every id once, shuffled. */
        for (uint32_t i = 0; i < n_ids; i++)
            id_of[i] = (int32_t)i;
        for (uint32_t i = n_ids; i > 1; i--) {
            uint32_t j = (uint32_t)below(r, i);
            int32_t x = id_of[i - 1];
            id_of[i - 1] = id_of[j];
            id_of[j] = x;
        }
        for (uint32_t i = 0; i < n_ids; i++) {
            index[id_of[i]] = (int32_t)i;
            pl_test_tprintf(&t, "r%d\n", id_of[i]);
        }
        n_rx = n_ids;
        in->o.reactions = pl_test_inputs_text(in, "reactions.txt", &t);
    } else {
        for (uint64_t i = 0; i < n_gpr; i++)
            if (index[grx[i]] < 0) {
                id_of[n_rx] = grx[i];
                index[grx[i]] = (int32_t)n_rx++;
            }
    }
    /* Group the RMR rows (a counting sort by key): by id, or by database
     * index, ids without one (no GPR row, metab 2) after the others in id
     * order, which then index them in that order. */
    if (s->layout) {
        uint64_t *count = calloc(2 * (uint64_t)n_ids + 1, 8);
        int32_t *sorted = malloc((n_rmr + 1) * 4);
        cr_assert(count && sorted);
        for (uint64_t i = 0; i < n_rmr; i++) {
            int32_t x = rrx[i];
            uint32_t key = s->layout == 1 ? (uint32_t)x
                           : index[x] >= 0 ? (uint32_t)index[x] : n_ids + (uint32_t)x;
            rrx[i] = (int32_t)key; /* the key for now */
            count[key + 1]++;
        }
        for (uint32_t k = 0; k < 2 * n_ids; k++)
            count[k + 1] += count[k];
        for (uint64_t i = 0; i < n_rmr; i++)
            sorted[count[rrx[i]]++] = rrx[i];
        for (uint64_t i = 0; i < n_rmr; i++) { /* key back to id */
            uint32_t key = (uint32_t)sorted[i];
            rrx[i] = s->layout == 1 ? (int32_t)key
                     : key >= n_ids ? (int32_t)(key - n_ids)
                                    : id_of[key];
        }
        free(count);
        free(sorted);
    }
    if (s->metab == 2)
        for (uint64_t i = 0; i < n_rmr; i++)
            if (index[rrx[i]] < 0)
                index[rrx[i]] = (int32_t)n_rx++;
    for (uint64_t i = 0; i < n_gpr; i++)
        pl_test_tprintf(&t, "%s\tr%d\n", gene_name(name, sizeof name, (uint32_t)gid[i]),
                        grx[i]);
    in->o.gpr = pl_test_inputs_text(in, "gpr.tsv", &t);
    for (uint64_t i = 0; i < n_rmr; i++)
        pl_test_tprintf(&t, "r%d\tm%u\t%.2f\n", rrx[i], (unsigned)below(r, 50),
                        (double)((int)below(r, 9) - 4) / 2);
    in->o.rmr = pl_test_inputs_text(in, "rmr.tsv", &t);
    s->n_reactions = n_rx;
    s->n_gpr = n_gpr;
    s->n_rmr = n_rmr;
    s->gpr_gene = gid;
    s->gpr_rxn = grx;
    s->rmr_rxn = rrx;
    for (uint64_t i = 0; i < n_gpr; i++)
        grx[i] = index[grx[i]];
    for (uint64_t i = 0; i < n_rmr; i++)
        rrx[i] = index[rrx[i]];
    /* Layout 2 is in database order: each reaction's rows are contiguous and
     * their reactions ascend. */
    for (uint64_t i = 1; s->layout == 2 && i < n_rmr; i++)
        cr_assert_leq(rrx[i - 1], rrx[i], "graph %d: RMR rows not in database order", s->id);
    free(index);
    free(id_of);
}

static void gen_samples(uint64_t *r, spec *s, pl_test_inputs *in)
{
    pl_test_text t = {0};
    char name[64];
    int with_id = below(r, 2) == 0;
    pl_test_tprintf(&t, with_id ? "id\tgenes\tfitness\n" : "genes\tfitness\tsecond_label\n");
    s->n_samples = 1 + (uint32_t)below(r, 60);
    s->sample_n = malloc(s->n_samples * 4);
    s->sample_genes = malloc((size_t)s->n_samples * MAX_SAMPLE_GENES * 4);
    cr_assert(s->sample_n && s->sample_genes);
    for (uint32_t i = 0; i < s->n_samples; i++) {
        uint32_t k = 1 + (uint32_t)below(r, MAX_SAMPLE_GENES);
        int32_t *gs = s->sample_genes + (size_t)i * MAX_SAMPLE_GENES;
        s->sample_n[i] = k;
        if (with_id)
            pl_test_tprintf(&t, "%u\t", 1000 + 3 * i);
        for (uint32_t j = 0; j < k; j++) {
            gs[j] = j > 0 && below(r, 6) == 0 ? gs[j - 1]
                    : below(r, 4) == 0        ? (int32_t)s->hub
                                              : (int32_t)below(r, s->n_genes);
            pl_test_tprintf(&t, "%s%s", j ? ";" : "",
                            gene_name(name, sizeof name, (uint32_t)gs[j]));
        }
        if (with_id)
            pl_test_tprintf(&t, "\t%s\n", i % 5 == 2 ? "NA" : "0.25");
        else
            pl_test_tprintf(&t, "\t%.3f\t%s\n", (double)i / 8, i % 3 ? "nan" : "-1.5");
    }
    in->o.samples = pl_test_inputs_text(in, "samples.tsv", &t);
}

/* Serve T.g's lists from a read-only mapping of their image, after checking
 * that an image differing in one position (or in size) is refused. */
static void share_lists(int id)
{
    T.image_bytes = pl__graph_image_bytes(T.g);
    cr_assert_eq(T.image_bytes % 64, 0);
    T.image = mmap(NULL, T.image_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    cr_assert_neq(T.image, MAP_FAILED);
    pl__graph_image_write(T.g, T.image);
    uint64_t rows = (uint64_t)T.g->n_genes * T.g->n_gene_lists;
    uint32_t *vals = (uint32_t *)((unsigned char *)T.image + ((8 * (rows + 1) + 63) & ~63ull));
    const uint32_t *own = T.g->vals;
    cr_assert_eq(memcmp(vals, own, T.g->off[rows] * 4), 0, "graph %d: vals not where expected",
                 id);
    vals[0] ^= 1; /* the first list's first position, or its first sentinel */
    cr_assert_eq(pl__graph_image_adopt(T.g, T.image, T.image_bytes), 0,
                 "graph %d: an altered image was adopted", id);
    vals[0] ^= 1;
    cr_assert_eq(pl__graph_image_adopt(T.g, T.image, T.image_bytes - 64), 0, "graph %d", id);
    cr_assert_eq(T.g->vals, own, "graph %d: a refused image replaced the lists", id);
    mprotect(T.image, T.image_bytes, PROT_READ);
    cr_assert_eq(pl__graph_image_adopt(T.g, T.image, T.image_bytes), 1, "graph %d", id);
    cr_assert(T.g->lists_shared && (void *)T.g->off == T.image, "graph %d", id);
    cr_assert_eq(pl__graph_image_adopt(T.g, T.image, T.image_bytes), 0, "graph %d", id);
}

/* Generate graph `id`, write its files, build and open it into T. */
static void make_graph(int id)
{
    uint64_t r = 0x5eed0000u + (uint64_t)id * 7919;
    spec *s = &T.s;
    memset(s, 0, sizeof *s);
    s->id = id;
    /* Sizes from one gene to about 2000; graph 5 has 64 edge types. */
    static const uint32_t genes_of[N_GRAPHS] = {1,   2,    3,   17,  40,   300,  2000, 128,
                                                999, 64,   500, 1,   1200, 33,   250,  1800,
                                                7,   1024, 90,  400, 2,    1500, 60,   777};
    /* Heavy metabolism: genes, reaction list or not, RMR layout. */
    static const struct {
        uint32_t genes;
        int metab, layout;
    } heavy_of[N_HEAVY] = {{300, 1, 1}, {2000, 2, 2}, {64, 1, 2},
                           {500, 2, 1}, {1000, 2, 0}, {40, 1, 1}};
    s->heavy = id >= N_GRAPHS;
    s->n_genes = s->heavy ? heavy_of[id - N_GRAPHS].genes : genes_of[id];
    s->n_types = s->heavy  ? 1 + (uint32_t)below(&r, 3)
                 : id == 5  ? PL_MAX_TYPES
                 : id == 11 ? 1
                            : 1 + (uint32_t)below(&r, 12);
    s->hub = (uint32_t)below(&r, s->n_genes);
    uint32_t active = s->n_genes > 3 ? s->n_genes - (uint32_t)below(&r, s->n_genes / 3)
                                     : s->n_genes;
    uint64_t max_e = s->n_types > 16 ? 400 : 1 + (uint64_t)s->n_genes * (1 + below(&r, 8));
    if (max_e > 12000)
        max_e = 12000;
    s->metab = s->heavy ? heavy_of[id - N_GRAPHS].metab : id % 3;
    s->layout = s->heavy ? heavy_of[id - N_GRAPHS].layout : id / 3 % 3;

    pl_test_text t = {0};
    pl_test_inputs inp = {.dir = T.dir};
    char name[64];
    for (uint32_t g = 0; g < s->n_genes; g++)
        pl_test_tprintf(&t, "%s\n", gene_name(name, sizeof name, g));
    inp.o.genes = pl_test_inputs_text(&inp, "genes.txt", &t);
    char tnames[PL_MAX_TYPES][32];
    for (uint32_t ty = 0; ty < s->n_types; ty++) {
        gen_edges(&r, s, ty, active, max_e);
        snprintf(tnames[ty], sizeof tnames[ty], ty % 5 == 4 ? "Type-%u.x_" : "type%u",
                 ty);
        char fname[64];
        const char *file;
        if (s->format[ty] == 0) {
            if (s->n_edges[ty] == 0)
                pl_test_tprintf(&t, "# an edge type without edges\n");
            for (uint64_t e = 0; e < s->n_edges[ty]; e++) {
                char a[64], b[64];
                pl_test_tprintf(&t, "%s\t%s\n",
                                gene_name(a, sizeof a, (uint32_t)s->src[ty][e]),
                                gene_name(b, sizeof b, (uint32_t)s->dst[ty][e]));
            }
            snprintf(fname, sizeof fname, "t%u.tsv", ty);
            file = pl_test_inputs_text(&inp, fname, &t);
        } else {
            snprintf(fname, sizeof fname, "t%u.npy", ty);
            file = put_npy(&inp, fname, s->src[ty], s->dst[ty], s->n_edges[ty],
                           s->format[ty] == 2);
        }
        pl_test_inputs_edges(&inp, tnames[ty], file);
    }
    char dbp[4096];
    snprintf(dbp, sizeof dbp, "%s/db", T.dir);
    inp.o.progress = 0;
    if (s->metab)
        gen_metabolism(&r, s, active, &inp);
    gen_samples(&r, s, &inp);

    pl_build_stats st;
    pl_err err = {0};
    int rc = pl_test_inputs_build(&inp, dbp, &st, &err);
    cr_assert_eq(rc, 0, "graph %d: pl_build: %d (%s): %s", id, rc, pl_errname(rc), err.msg);
    pl_test_inputs_free(&inp);
    rc = pl_db_open(dbp, &T.db, &err);
    cr_assert_eq(rc, 0, "graph %d: pl_db_open: %s", id, err.msg);
    rc = pl_graph_load(T.db, &T.g, &err);
    cr_assert_eq(rc, 0, "graph %d: pl_graph_load: %s", id, err.msg);
    if (id % 2)
        share_lists(id);
    T.m = pl_masks_new(T.g);
    cr_assert_not_null(T.m);

    const pl_db_info *in = pl_db_info_get(T.db);
    cr_assert_eq(in->n_genes, s->n_genes, "graph %d", id);
    cr_assert_eq(in->n_types, s->n_types, "graph %d", id);
    for (uint32_t ty = 0; ty < s->n_types; ty++)
        cr_assert_eq(in->n_edges[ty], s->n_edges[ty], "graph %d type %u", id, ty);
    cr_assert_eq(in->has_metabolism, s->metab != 0, "graph %d", id);
    if (s->metab) {
        cr_assert_eq(in->n_reactions, s->n_reactions, "graph %d", id);
        cr_assert_eq(in->n_gpr, s->n_gpr, "graph %d", id);
        cr_assert_eq(in->n_rmr, s->n_rmr, "graph %d", id);
    }
    uint32_t n_lists = s->n_types + (s->metab ? 3 : 0);
    cr_assert_eq(pl_graph_n_lists(T.g), n_lists, "graph %d", id);
    for (uint32_t k = 0; k < n_lists; k++) {
        const char *want = k < s->n_types                          ? tnames[k]
                           : k - s->n_types == PL_LIST_GPR      ? "gpr"
                           : k - s->n_types == PL_LIST_REACTION ? "reaction"
                                                                : "rmr";
        cr_assert_str_eq(pl_graph_list_name(T.g, k), want, "graph %d kind %u", id, k);
    }
    cr_assert_null(pl_graph_list_name(T.g, n_lists));
}

/* ------------------------------------------------------------ the oracle */

/* The lists DESIGN section 2 defines, by brute force over the spec's edges. */
typedef struct oracle {
    uint32_t n_lists;
    int32_t *pert;
    uint32_t n_pert;
    int32_t *list[PL_MAX_TYPES + 3];
    uint32_t len[PL_MAX_TYPES + 3];
} oracle;

static void oracle_compute(const spec *s, const int32_t *genes, uint32_t n, oracle *o)
{
    memset(o, 0, sizeof *o);
    char *in = calloc(s->n_genes, 1);
    cr_assert_not_null(in);
    for (uint32_t i = 0; i < n; i++)
        in[genes[i]] = 1;
    o->pert = malloc((s->n_genes + 1) * 4);
    cr_assert_not_null(o->pert);
    for (uint32_t g = 0; g < s->n_genes; g++)
        if (in[g])
            o->pert[o->n_pert++] = (int32_t)g;
    o->n_lists = s->n_types + (s->metab ? 3 : 0);
    for (uint32_t t = 0; t < s->n_types; t++) {
        o->list[t] = malloc((s->n_edges[t] + 1) * 4);
        cr_assert_not_null(o->list[t]);
        for (uint64_t e = 0; e < s->n_edges[t]; e++)
            if (in[s->src[t][e]] || in[s->dst[t][e]])
                o->list[t][o->len[t]++] = (int32_t)e;
    }
    if (s->metab) {
        uint32_t kg = s->n_types + PL_LIST_GPR, kr = s->n_types + PL_LIST_REACTION,
                 km = s->n_types + PL_LIST_RMR;
        char *removed = calloc(s->n_reactions + 1, 1);
        o->list[kg] = malloc((s->n_gpr + 1) * 4);
        o->list[kr] = malloc((s->n_reactions + 1) * 4);
        o->list[km] = malloc((s->n_rmr + 1) * 4);
        cr_assert(removed && o->list[kg] && o->list[kr] && o->list[km]);
        for (uint64_t i = 0; i < s->n_gpr; i++) {
            if (in[s->gpr_gene[i]]) {
                o->list[kg][o->len[kg]++] = (int32_t)i;
                removed[s->gpr_rxn[i]] = 1;
            }
        }
        for (uint32_t x = 0; x < s->n_reactions; x++)
            if (removed[x])
                o->list[kr][o->len[kr]++] = (int32_t)x;
        for (uint64_t i = 0; i < s->n_rmr; i++)
            if (removed[s->rmr_rxn[i]])
                o->list[km][o->len[km]++] = (int32_t)i;
        free(removed);
    }
    free(in);
}

static void oracle_free(oracle *o)
{
    free(o->pert);
    for (uint32_t k = 0; k < PL_MAX_TYPES + 3; k++)
        free(o->list[k]);
}

/* Index of the first difference of two lists, or -1. */
static int64_t first_diff(const int32_t *a, uint32_t na, const int32_t *b, uint32_t nb)
{
    uint32_t n = na < nb ? na : nb;
    for (uint32_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return i;
    return na == nb ? -1 : (int64_t)n;
}

static void expect_list(const char *what, int set, uint32_t k, const int32_t *got, uint32_t ng,
                        const int32_t *want, uint32_t nw)
{
    cr_assert_eq(ng, nw, "graph %d, %s %d, kind %u (%s): %u positions, oracle %u", T.s.id,
                 what, set, k, pl_graph_list_name(T.g, k), ng, nw);
    int64_t d = first_diff(got, ng, want, nw);
    cr_assert_eq(d, -1, "graph %d, %s %d, kind %u (%s): entry %lld is %d, oracle %d", T.s.id,
                 what, set, k, pl_graph_list_name(T.g, k), (long long)d,
                 d >= 0 ? got[d] : 0, d >= 0 ? want[d] : 0);
}

/* pl_masks_compute() against the oracle. */
static void check_compute(const char *what, int set, const int32_t *genes, uint32_t n,
                          const oracle *o)
{
    pl_masks_result res;
    int rc = pl_masks_compute(T.m, genes, n, &res);
    cr_assert_eq(rc, 0, "graph %d, %s %d: pl_masks_compute: %d", T.s.id, what, set, rc);
    cr_assert_eq(res.n_lists, o->n_lists, "graph %d, %s %d", T.s.id, what, set);
    cr_assert_eq(res.pert.n, o->n_pert, "graph %d, %s %d: %u perturbation indices, oracle %u",
                 T.s.id, what, set, res.pert.n, o->n_pert);
    cr_assert_eq(first_diff(res.pert.v, res.pert.n, o->pert, o->n_pert), -1,
                 "graph %d, %s %d: perturbation indices differ", T.s.id, what, set);
    for (uint32_t k = 0; k < o->n_lists; k++)
        expect_list(what, set, k, res.removed[k].v, res.removed[k].n, o->list[k], o->len[k]);
}

#define CANARY 0x5A5A5A5A

/* pl__masks_union() into buffers of exactly the documented room, fenced. */
static void check_union(int set, const oracle *o)
{
    const pl_graph *g = T.g;
    for (uint32_t k = 0; k < o->n_lists; k++) {
        uint64_t bound = pl__masks_bound(g, k, o->pert, o->n_pert);
        uint64_t room = bound + PL__MASKS_PAD;
        T.out = realloc(T.out, (room + 16) * 4);
        T.scratch = realloc(T.scratch, (room + 16) * 4);
        cr_assert(T.out && T.scratch);
        for (uint64_t i = 0; i < room + 16; i++)
            T.out[i] = T.scratch[i] = CANARY;
        /* RMR from the removed reactions (the oracle's, checked just before),
         * with no scratch. */
        uint32_t kr = T.s.n_types + PL_LIST_REACTION;
        uint64_t n = k < g->n_gene_lists
                         ? pl__masks_union(g, k, o->pert, o->n_pert, T.out,
                                           o->n_pert > 2 ? T.scratch : NULL)
                         : pl__masks_rmr(g, o->list[kr], o->len[kr], T.out);
        cr_assert_leq(n, bound);
        expect_list("union set", set, k, T.out, (uint32_t)n, o->list[k], o->len[k]);
        for (uint32_t p = 0; p < PL__MASKS_PAD; p++)
            cr_assert_eq(T.out[n + p], -1, "graph %d, set %d, kind %u: pad entry %u not a "
                         "sentinel", T.s.id, set, k, p);
        for (uint64_t i = room; i < room + 16; i++) {
            cr_assert_eq(T.out[i], CANARY, "graph %d, set %d, kind %u: write past the room",
                         T.s.id, set, k);
            cr_assert_eq(T.scratch[i], CANARY, "graph %d, set %d, kind %u: scratch written "
                         "past the room", T.s.id, set, k);
        }
    }
}

/* A random deletion set: 0..64 genes, hub-heavy, with duplicates. */
static uint32_t random_set(uint64_t *r, int32_t *genes)
{
    uint32_t n = below(r, 4) == 0 ? (uint32_t)below(r, MAX_SET + 1) : (uint32_t)below(r, 5);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t roll = below(r, 10);
        genes[i] = roll == 0 && i > 0 ? genes[below(r, i)]
                   : roll == 1        ? (int32_t)T.s.hub
                                      : (int32_t)below(r, T.s.n_genes);
    }
    return n;
}

static int run_graph(int id)
{
    make_graph(id);
    int simd = T.g->simd;
    uint64_t r = 0xabcdefu + (uint64_t)id;
    int32_t genes[MAX_SET];
    int sets = 0;
    for (int set = 0; set < SETS_PER_GRAPH; set++) {
        uint32_t n = random_set(&r, genes);
        oracle o;
        oracle_compute(&T.s, genes, n, &o);
        /* Each kernel this machine has. */
        for (int kernel = simd; kernel >= 0; kernel--) {
            T.g->simd = kernel;
            check_compute("set", set, genes, n, &o);
            check_union(set, &o);
        }
        T.g->simd = simd;
        oracle_free(&o);
        sets++;
    }
    /* The stored samples: genes as listed, masks as the oracle's. */
    for (uint32_t i = 0; i < T.s.n_samples; i++) {
        pl_sample smp;
        pl_err err = {0};
        int rc = pl_db_sample(T.db, i, &smp, &err);
        cr_assert_eq(rc, 0, "graph %d, row %u: %s", id, i, err.msg);
        const int32_t *want = T.s.sample_genes + (size_t)i * MAX_SAMPLE_GENES;
        cr_assert_eq(smp.n_genes, T.s.sample_n[i], "graph %d, row %u", id, i);
        cr_assert_eq(first_diff(smp.genes, smp.n_genes, want, T.s.sample_n[i]), -1,
                     "graph %d, row %u: stored genes differ", id, i);
        uint32_t k = smp.n_genes;
        int32_t copy[MAX_SAMPLE_GENES];
        memcpy(copy, smp.genes, k * sizeof *copy);
        oracle o;
        oracle_compute(&T.s, copy, k, &o);
        check_compute("row", (int)i, copy, k, &o);
        oracle_free(&o);
    }
    /* A gene out of range is rejected and leaves the last result intact. */
    pl_masks_result before, after;
    int32_t one = (int32_t)T.s.hub, bad[3] = {0, (int32_t)T.s.n_genes, -1};
    cr_assert_eq(pl_masks_compute(T.m, &one, 1, &before), 0);
    uint32_t n0 = before.removed[0].n;
    int32_t first = n0 ? before.removed[0].v[0] : -1;
    cr_assert_eq(pl_masks_compute(T.m, bad, 2, &after), PL_ERANGE, "graph %d", id);
    cr_assert_eq(pl_masks_compute(T.m, bad + 2, 1, &after), PL_ERANGE, "graph %d", id);
    cr_assert_eq(before.removed[0].n, n0);
    cr_assert_eq(n0 ? before.removed[0].v[0] : -1, first);
    cr_assert_eq(before.pert.n, 1);
    cr_assert_eq(before.pert.v[0], one);
    release_graph();
    pl_test_rmtree(T.dir);
    free(T.dir);
    T.dir = NULL;
    return sets;
}

Test(masks_oracle, random_graphs)
{
    int sets = 0;
    for (int id = 0; id < N_GRAPHS + N_HEAVY; id++) {
        T.dir = pl_test_tmpdir();
        sets += run_graph(id);
    }
    cr_assert_geq(sets, 1000);
}
