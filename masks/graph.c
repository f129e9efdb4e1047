/* Loading the incidence bitmaps of a database into the engine's lists.
 *
 * One cursor pass over sub-database "inc": its keys sort by (kind, gene), so
 * each kind is decoded gene by gene into a compact per-kind array, absent keys
 * being empty lists. Every value is checked (trailer, roaring structure, exact
 * size, positions strictly ascending and below the kind's count) before the
 * hot path relies on it: the merges trust the order and read up to the
 * sentinels. The per-kind arrays are then regrouped gene by gene, so that a
 * sample's lists lie in a few contiguous runs, in memory backed by huge pages
 * where the kernel offers them (the graph is tens of megabytes read at random).
 *
 * The RMR positions of each reaction come from the RMR edge array itself
 * (edges/rmr, its reaction column checked against the reaction count): a
 * counting sort by reaction, so each reaction's positions ascend and the
 * reactions' sets are disjoint by construction. Memory is linear in the
 * input: each RMR edge is held once, whatever the number of genes of its
 * reaction.
 */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "masks.h"
#include "src/core/db.h"
#include "src/core/error.h"
#include "src/core/rule.h"
#include "src/core/vec.h"

#define HUGE_PAGE ((size_t)2 << 20)

static const char *const meta_names[3] = {"gpr", "reaction", "rmr"};

/* Give the heap's free pages back to the system. The per-kind arrays of a
 * load grow by realloc past glibc's mmap threshold, which then rises, so the
 * next ones come from the heap and stay resident once freed (16 MiB a
 * process at yeast scale): every serve rank would hold them. */
static void trim_heap(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* One kind as read from the database: gene g's positions are
 * vals[off[g] .. off[g+1]), without sentinels. */
typedef struct kind_lists {
    uint64_t *off;
    uint32_t *vals;
    uint64_t n_vals, cap;
    uint32_t next_gene;   /* genes below have their list */
} kind_lists;

/* Give every gene in [next_gene, upto) an empty list. */
static void skip_to(kind_lists *t, uint32_t upto)
{
    for (; t->next_gene < upto; t->next_gene++)
        t->off[t->next_gene + 1] = t->n_vals;
}

/* Decode the bitmap `v` (key described by `kd`) as gene `gene`'s list. */
static int decode(pl_graph *g, kind_lists *t, uint32_t kind, uint32_t gene, const MDB_val *v,
                  const char *kd, pl_err *err)
{
    skip_to(t, gene);
    uint64_t before = t->n_vals;
    PL_TRY(pl__inc_decode(v->mv_data, v->mv_size - 8, g->kind[kind].count, &t->vals, &t->cap,
                          &t->n_vals, kd, err));
    t->off[gene + 1] = t->n_vals;
    t->next_gene = gene + 1;
    if (t->n_vals - before > g->kind[kind].max_len)
        g->kind[kind].max_len = t->n_vals - before;
    return 0;
}

static int read_kinds(pl_db *db, pl_graph *g, kind_lists *t, MDB_cursor *cur, pl_err *err)
{
    MDB_val k, v;
    int rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        char kd[96];
        pl__key_describe(PL_DBI_INC, k.mv_data, k.mv_size, kd, sizeof kd);
        PL_FAIL_IF(k.mv_size != 6, err, PL_ECORRUPT, "key %s: not an incidence key", kd);
        PL_TRY(pl__db_check(PL_DBI_INC, &k, &v, err));
        const unsigned char *kb = k.mv_data;
        uint32_t kind = (uint32_t)kb[0] << 8 | kb[1];
        uint32_t gene = (uint32_t)kb[2] << 24 | (uint32_t)kb[3] << 16 |
                        (uint32_t)kb[4] << 8 | kb[5];
        PL_FAIL_IF(kind >= g->n_gene_lists, err, PL_ECORRUPT, "key %s: unknown list kind",
                   kd);
        PL_FAIL_IF(gene >= g->n_genes, err, PL_ECORRUPT, "key %s: gene out of range", kd);
        /* LMDB returns keys in order, so a kind's genes only ascend. */
        PL_FAIL_IF(gene < t[kind].next_gene, err, PL_ECORRUPT, "key %s: out of order", kd);
        PL_TRY(decode(g, &t[kind], kind, gene, &v, kd, err));
    }
    PL_FAIL_IF(rc != MDB_NOTFOUND, err, pl__lmdb_code(rc), "%s: reading sub-database inc: %s",
               db->path, mdb_strerror(rc));
    for (uint32_t kind = 0; kind < g->n_gene_lists; kind++)
        skip_to(&t[kind], g->n_genes);
    return 0;
}

/* Regroup the per-kind lists gene by gene, each list followed by the pad. */
static int regroup(pl_graph *g, const kind_lists *t, pl_err *err)
{
    uint64_t rows = (uint64_t)g->n_genes * g->n_gene_lists, total = rows * PL__MASKS_PAD;
    for (uint32_t k = 0; k < g->n_gene_lists; k++)
        total += t[k].n_vals;
    g->off = malloc((rows + 1) * sizeof *g->off);
    size_t bytes = total * sizeof *g->vals;
    if (bytes >= HUGE_PAGE) {
        bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        g->vals = aligned_alloc(HUGE_PAGE, bytes);
        if (g->vals)
            madvise(g->vals, bytes, MADV_HUGEPAGE); /* advice: failure is harmless */
    } else {
        g->vals = malloc(bytes);
    }
    PL_FAIL_IF(!g->off || !g->vals, err, -ENOMEM, "out of memory (%llu positions)",
               (unsigned long long)total);
    uint64_t at = 0;
    for (uint32_t gene = 0; gene < g->n_genes; gene++) {
        for (uint32_t k = 0; k < g->n_gene_lists; k++) {
            uint64_t a = t[k].off[gene], n = t[k].off[gene + 1] - a;
            g->off[(uint64_t)gene * g->n_gene_lists + k] = at;
            if (n)
                memcpy(g->vals + at, t[k].vals + a, n * sizeof *g->vals);
            at += n;
            for (uint32_t p = 0; p < PL__MASKS_PAD; p++)
                g->vals[at++] = PL__MASKS_END;
        }
    }
    g->off[rows] = at;
    return 0;
}

/* Reaction r's RMR positions, from the RMR edge array; then each gene's
 * count of RMR positions over its reactions (the RMR kind's bound). */
static int load_rmr(pl_db *db, pl_graph *g, pl_err *err)
{
    const struct pl__meta *m = &db->meta;
    uint64_t n = m->n_rmr, R = m->n_reactions;
    int32_t *arr = NULL; /* reaction[n], metabolite[n], stoichiometry[n] */
    uint32_t *fill = NULL;
    int rc = pl__db_get_zstd(db->txn, db->dbi[PL_DBI_EDGES], PL_DBI_EDGES, "rmr", 3, 12 * n,
                             (void **)&arr, err);
    PL_FAIL_IF(rc == -ENOENT, err, PL_ECORRUPT, "%s: key edges/rmr missing", db->path);
    PL_TRY(rc);
    g->rmr_off = calloc(R + 1, sizeof *g->rmr_off);
    g->rmr_vals = malloc((n + PL__MASKS_PAD) * sizeof *g->rmr_vals);
    g->rmr_len = calloc((size_t)g->n_genes + 1, sizeof *g->rmr_len);
    fill = malloc((R + 1) * sizeof *fill);
    if (!g->rmr_off || !g->rmr_vals || !g->rmr_len || !fill)
        rc = pl__err(err, -ENOMEM, "out of memory (%llu RMR edges)", (unsigned long long)n);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        if (arr[i] < 0 || (uint64_t)arr[i] >= R)
            rc = pl__err(err, PL_ECORRUPT, "%s: key edges/rmr: RMR edge %llu has reaction "
                         "index %d, out of range", db->path, (unsigned long long)i,
                         (int)arr[i]);
        else
            g->rmr_off[arr[i] + 1]++;
    }
    if (rc == 0) {
        for (uint64_t r = 0; r < R; r++)
            g->rmr_off[r + 1] += g->rmr_off[r];
        memcpy(fill, g->rmr_off, (R + 1) * sizeof *fill);
        /* Positions in ascending order: each reaction's come out sorted. */
        for (uint64_t i = 0; i < n; i++)
            g->rmr_vals[fill[arr[i]]++] = (uint32_t)i;
        for (uint32_t p = 0; p < PL__MASKS_PAD; p++)
            g->rmr_vals[n + p] = PL__MASKS_END;
        /* Distinct reactions have disjoint RMR sets: a gene's count is the sum
         * over its reactions, at most n. */
        uint32_t kr = g->n_types + PL_LIST_REACTION;
        pl__kind *k = &g->kind[g->n_types + PL_LIST_RMR];
        for (uint32_t gene = 0; gene < g->n_genes; gene++) {
            uint64_t len, sum = 0;
            const uint32_t *rx = pl__graph_list(g, kr, gene, &len);
            for (uint64_t i = 0; i < len; i++)
                sum += g->rmr_off[rx[i] + 1] - g->rmr_off[rx[i]];
            g->rmr_len[gene] = (uint32_t)sum;
            if (sum > k->max_len)
                k->max_len = sum;
        }
    }
    free(fill);
    free(arr);
    return rc;
}

/* The rules of a database built with rule GPR, each program checked. */
static int load_rules(pl_db *db, pl_graph *g, pl_err *err)
{
    const struct pl__meta *m = &db->meta;
    size_t len = (m->n_reactions + 1 + m->n_rule_words) * sizeof(uint32_t);
    uint32_t depth;
    int rc = pl__db_get_zstd(db->txn, db->dbi[PL_DBI_EDGES], PL_DBI_EDGES, "rules", 5, len,
                             &g->rules_buf, err);
    PL_FAIL_IF(rc == -ENOENT, err, PL_ECORRUPT, "%s: key edges/rules missing", db->path);
    PL_TRY(rc);
    PL_TRY(pl__rules_decode(g->rules_buf, len, m->n_reactions, m->n_rule_words, m->n_rules,
                            m->n_genes, &g->rule_off, &g->rule_code, &depth, err));
    g->rules_kind = g->n_types + PL_LIST_REACTION;
    return 0;
}

static int load(pl_db *db, pl_graph *g, kind_lists *t, pl_err *err)
{
    const struct pl__meta *m = &db->meta;
    g->n_genes = (uint32_t)m->n_genes;
    g->n_types = m->n_types;
    g->n_lists = m->n_types + (m->has_metabolism ? 3 : 0);
    g->n_gene_lists = m->n_types + (m->has_metabolism ? 2 : 0);
    g->type_names = db->info.type_names;
    g->rules_kind = UINT32_MAX;
    for (uint32_t k = 0; k < g->n_lists; k++) {
        uint64_t n = k < m->n_types                         ? m->n_edges[k]
                     : k - m->n_types == PL_LIST_GPR      ? m->n_gpr
                     : k - m->n_types == PL_LIST_REACTION ? m->n_reactions
                                                          : m->n_rmr;
        /* Positions leave the engine as int32. */
        PL_FAIL_IF(n > (uint64_t)INT32_MAX + 1, err, PL_ERANGE,
                   "%s: list kind %s has %llu positions, more than int32 indexes", db->path,
                   pl_graph_list_name(g, k), (unsigned long long)n);
        g->kind[k].count = n;
        if (k >= g->n_gene_lists)
            continue;
        t[k].off = calloc((size_t)g->n_genes + 1, sizeof *t[k].off);
        PL_FAIL_IF(!t[k].off, err, -ENOMEM, "out of memory");
    }
    MDB_cursor *cur;
    int rc = mdb_cursor_open(db->txn, db->dbi[PL_DBI_INC], &cur);
    PL_FAIL_IF(rc, err, pl__lmdb_code(rc), "%s: %s", db->path, mdb_strerror(rc));
    rc = read_kinds(db, g, t, cur, err);
    mdb_cursor_close(cur);
    PL_TRY(rc);
    PL_TRY(regroup(g, t, err));
    if (m->has_metabolism)
        PL_TRY(load_rmr(db, g, err));
    return m->reaction_rule == PL_REACTION_GPR ? load_rules(db, g, err) : 0;
}

PL_API int pl_graph_load(pl_db *db, pl_graph **out, pl_err *err)
{
    *out = NULL;
    pl_graph *g = calloc(1, sizeof *g);
    kind_lists *t = calloc(PL__MASKS_MAX_KINDS, sizeof *t);
    int rc = g && t ? load(db, g, t, err) : pl__err(err, -ENOMEM, "out of memory");
    for (uint32_t k = 0; t && k < PL__MASKS_MAX_KINDS; k++) {
        free(t[k].off);
        free(t[k].vals);
    }
    free(t);
    trim_heap();
    if (rc < 0) {
        pl_graph_free(g);
        return rc;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    g->simd = __builtin_cpu_supports("avx2") != 0;
#endif
    *out = g;
    return 0;
}

/* Free the lists g owns (not an adopted image's). */
static void free_lists(pl_graph *g)
{
    free(g->off);
    free(g->vals);
    free(g->rmr_off);
    free(g->rmr_vals);
    free(g->rmr_len);
}

PL_API void pl_graph_free(pl_graph *g)
{
    if (!g)
        return;
    if (!g->lists_shared)
        free_lists(g);
    free(g->rules_buf);
    free(g);
}

PL_API uint32_t pl_graph_n_lists(const pl_graph *g) { return g->n_lists; }

PL_API const char *pl_graph_list_name(const pl_graph *g, uint32_t k)
{
    if (k < g->n_types)
        return g->type_names[k];
    if (k < g->n_lists)
        return meta_names[k - g->n_types];
    return NULL;
}

/* The parts of the image of g's lists: their bytes and 64-aligned offsets;
 * returns the image's size. Parts: off, vals, then with metabolism rmr_off,
 * rmr_vals, rmr_len. */
static uint64_t image_parts(const pl_graph *g, const void *part[5], uint64_t at[5],
                            uint64_t len[5])
{
    uint64_t rows = (uint64_t)g->n_genes * g->n_gene_lists;
    int metab = g->n_lists > g->n_types;
    uint64_t n_rx = metab ? g->kind[g->n_types + PL_LIST_REACTION].count : 0;
    uint64_t n_rmr = metab ? g->kind[g->n_types + PL_LIST_RMR].count : 0;
    const void *p[5] = {g->off, g->vals, g->rmr_off, g->rmr_vals, g->rmr_len};
    uint64_t l[5] = {(rows + 1) * sizeof *g->off, g->off[rows] * sizeof *g->vals,
                     metab ? (n_rx + 1) * sizeof *g->rmr_off : 0,
                     metab ? (n_rmr + PL__MASKS_PAD) * sizeof *g->rmr_vals : 0,
                     metab ? (uint64_t)g->n_genes * sizeof *g->rmr_len : 0};
    uint64_t pos = 0;
    for (int i = 0; i < 5; i++) {
        part[i] = p[i];
        at[i] = pos;
        len[i] = l[i];
        pos = (pos + l[i] + 63) & ~(uint64_t)63;
    }
    return pos;
}

uint64_t pl__graph_image_bytes(const pl_graph *g)
{
    const void *part[5];
    uint64_t at[5], len[5];
    return image_parts(g, part, at, len);
}

void pl__graph_image_write(const pl_graph *g, void *dst)
{
    const void *part[5];
    uint64_t at[5], len[5];
    uint64_t bytes = image_parts(g, part, at, len);
    unsigned char *d = dst;
    for (int i = 0; i < 5; i++) { /* each part, then zeros up to the next */
        uint64_t end = i < 4 ? at[i + 1] : bytes;
        if (len[i])
            memcpy(d + at[i], part[i], len[i]);
        memset(d + at[i] + len[i], 0, end - at[i] - len[i]);
    }
}

int pl__graph_image_adopt(pl_graph *g, const void *src, uint64_t bytes)
{
    const void *part[5];
    uint64_t at[5], len[5];
    if (g->lists_shared || image_parts(g, part, at, len) != bytes)
        return 0;
    const unsigned char *s = src;
    for (int i = 0; i < 5; i++)
        if (len[i] && memcmp(s + at[i], part[i], len[i]) != 0)
            return 0;
    int metab = g->n_lists > g->n_types;
    free_lists(g);
    g->off = (uint64_t *)(s + at[0]);
    g->vals = (uint32_t *)(s + at[1]);
    g->rmr_off = metab ? (uint32_t *)(s + at[2]) : NULL;
    g->rmr_vals = metab ? (uint32_t *)(s + at[3]) : NULL;
    g->rmr_len = metab ? (uint32_t *)(s + at[4]) : NULL;
    g->lists_shared = 1;
    trim_heap();
    return 1;
}
