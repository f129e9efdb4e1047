/* Masks engine throughput beside its peers, on the same samples, in one run.
 *
 * Peers (each computes the removed positions of every list kind of a sample
 * as a sorted uint32 array, the output pertload emits):
 *   roaring_or_many  CRoaring roaring_bitmap_or_many + to_uint32_array
 *   roaring_or       CRoaring pairwise roaring_bitmap_or + to_uint32_array
 *   plain_merge      two-way merges of the per-gene sorted arrays with bounds
 *                    checks, pairwise for three or more genes
 *   write_only       memcpy of the engine's output bytes alone into a buffer
 *                    larger than the caches (the roofline)
 * The RMR kind is computed as the engine does, from the sample's removed
 * reactions: the peers merge (or OR) the RMR lists of those reactions.
 * Every peer's total output size is checked against the engine's. */
#include <errno.h>
#include <roaring/roaring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "opts.h"
#include "loader/plan.h"
#include "masks/masks.h"
#include "src/core/db.h"
#include "src/core/error.h"
#include "src/core/progress.h"

typedef struct samples {
    uint64_t n;
    uint64_t *ptr;    /* [n+1] */
    int32_t *genes;   /* sorted unique per sample */
} samples;

typedef struct peer_ctx {
    const pl_graph *g;
    roaring_bitmap_t **bm;  /* [kind * n_genes + gene], NULL when empty */
    roaring_bitmap_t **rbm; /* [reaction]: its RMR positions, NULL when none */
    uint64_t n_rbm;
    uint32_t *out, *tmp;
    uint32_t *rx;           /* the sample's removed reactions, for its RMR kind */
    uint64_t n_rx, cap;
} peer_ctx;

/* The reaction kind's union `v[0..n)` of the sample genes gs[0..k): under
 * rule gpr filtered by the rules as the engine does (pl__masks_rules; `v`
 * has room for the pad), then kept for the RMR kind. Returns its length. */
static uint64_t keep_reactions(peer_ctx *p, uint32_t kind, uint32_t *v, uint64_t n,
                               const int32_t *gs, uint32_t k)
{
    if (kind == p->g->n_types + PL_LIST_REACTION) {
        if (kind == p->g->rules_kind)
            n = pl__masks_rules(p->g, gs, k, (int32_t *)v, n);
        memcpy(p->rx, v, n * sizeof *v);
        p->n_rx = n;
    }
    return n;
}

/* The bitmaps the roaring peers OR for list `kind` of the sample genes
 * gs[0..k): the genes' own, or for RMR those of the removed reactions. */
static size_t peer_inputs(const peer_ctx *p, uint32_t kind, const int32_t *gs, uint32_t k,
                          const roaring_bitmap_t **in, size_t cap)
{
    const pl_graph *g = p->g;
    size_t m = 0;
    if (kind >= g->n_gene_lists) {
        for (uint64_t j = 0; j < p->n_rx && m < cap; j++)
            if (p->rbm[p->rx[j]])
                in[m++] = p->rbm[p->rx[j]];
        return m;
    }
    for (uint32_t j = 0; j < k && m < cap; j++) {
        roaring_bitmap_t *b = p->bm[(uint64_t)kind * g->n_genes + (uint32_t)gs[j]];
        if (b)
            in[m++] = b;
    }
    return m;
}

/* The genes with a GPR edge (a non-empty reaction list). */
static int gpr_gene_pool(const pl_graph *g, int32_t **pool, uint32_t *n, pl_err *err)
{
    PL_FAIL_IF(g->n_lists == g->n_types, err, PL_EUSAGE, "--gpr-genes: no metabolism");
    *pool = malloc(g->n_genes * sizeof **pool);
    PL_FAIL_IF(!*pool, err, -ENOMEM, "out of memory");
    for (uint32_t gene = 0; gene < g->n_genes; gene++) {
        uint64_t len;
        pl__graph_list(g, g->n_types + PL_LIST_REACTION, gene, &len);
        if (len)
            (*pool)[(*n)++] = (int32_t)gene;
    }
    PL_FAIL_IF(*n == 0, err, PL_EUSAGE, "--gpr-genes: no gene has a GPR edge");
    return 0;
}

static int load_samples(pl_db *db, uint64_t want, samples *s, pl_err *err)
{
    const pl_db_info *info = pl_db_info_get(db);
    s->n = want < info->n_samples ? want : info->n_samples;
    s->ptr = malloc((s->n + 1) * sizeof *s->ptr);
    uint64_t cap = 4 * s->n + 16, used = 0;
    s->genes = malloc(cap * sizeof *s->genes);
    if (!s->ptr || !s->genes)
        return pl__err(err, -ENOMEM, "out of memory");
    s->ptr[0] = 0;
    for (uint64_t r = 0; r < s->n; r++) {
        pl_sample smp;
        PL_TRY(pl_db_sample(db, r, &smp, err));
        if (used + smp.n_genes > cap) {
            cap = 2 * (used + smp.n_genes);
            int32_t *g = realloc(s->genes, cap * sizeof *g);
            if (!g)
                return pl__err(err, -ENOMEM, "out of memory");
            s->genes = g;
        }
        uint32_t bad;
        int64_t k = pl__masks_genes((uint32_t)info->n_genes, smp.genes, smp.n_genes,
                                    s->genes + used, &bad);
        PL_FAIL_IF(k < 0, err, PL_ECORRUPT, "row %llu: gene out of range",
                   (unsigned long long)r);
        used += (uint64_t)k;
        s->ptr[r + 1] = used;
    }
    return 0;
}

/* `n` samples of `k` distinct genes each, drawn uniformly (as `pertload
 * synth` draws them) from splitmix64(seed): the deletion-size scaling curve.
 * With `pool`, the genes are pool[0..n_genes) (the genes of GPR edges). */
static int random_samples(uint32_t n_genes, const int32_t *pool, uint32_t k, uint64_t n,
                          uint64_t seed, samples *s, pl_err *err)
{
    PL_FAIL_IF(k == 0 || k > n_genes, err, PL_EUSAGE, "--genes %u: %u genes to draw from", k,
               n_genes);
    s->n = n;
    s->ptr = malloc((n + 1) * sizeof *s->ptr);
    s->genes = malloc(n * k * sizeof *s->genes);
    PL_FAIL_IF(!s->ptr || !s->genes, err, -ENOMEM, "out of memory");
    int32_t *tmp = malloc(k * sizeof *tmp);
    PL_FAIL_IF(!tmp, err, -ENOMEM, "out of memory");
    s->ptr[0] = 0;
    for (uint64_t r = 0; r < n; r++) {
        for (uint32_t i = 0; i < k;) {
            int32_t g = (int32_t)(((pl__splitmix64(&seed) >> 32) * n_genes) >> 32);
            g = pool ? pool[g] : g;
            uint32_t j = 0;
            while (j < i && tmp[j] != g)
                j++;
            if (j == i)
                tmp[i++] = g;
        }
        uint32_t bad;
        int64_t got = pl__masks_genes(INT32_MAX, tmp, k, s->genes + s->ptr[r], &bad);
        s->ptr[r + 1] = s->ptr[r] + (uint64_t)(got < 0 ? 0 : got);
    }
    free(tmp);
    return 0;
}

/* ------------------------------------------------------------------ peers */

static uint64_t run_engine(pl_masks *m, const samples *s, uint64_t n)
{
    uint64_t total = 0;
    pl_masks_result res;
    for (uint64_t i = 0; i < n; i++) {
        pl_masks_compute(m, s->genes + s->ptr[i], (uint32_t)(s->ptr[i + 1] - s->ptr[i]), &res);
        for (uint32_t k = 0; k < res.n_lists; k++)
            total += res.removed[k].n;
    }
    return total;
}

/* One peer's count for list `kind` of a sample of genes gs[0..k): the
 * positions it removes (in p->out), less the reactions kept. */
typedef uint64_t (*peer_fn)(peer_ctx *p, uint32_t kind, const int32_t *gs, uint32_t k);

/* A peer over samples [0, n), every list of each: its counts summed. */
static uint64_t run_peer(peer_ctx *p, const samples *s, uint64_t n, peer_fn one)
{
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        const int32_t *gs = s->genes + s->ptr[i];
        uint32_t k = (uint32_t)(s->ptr[i + 1] - s->ptr[i]);
        for (uint32_t kind = 0; kind < p->g->n_lists; kind++)
            total += one(p, kind, gs, k);
    }
    return total;
}

/* The union `u` (freed) written into p->out: its count, less the reactions
 * kept. */
static uint64_t union_count(peer_ctx *p, uint32_t kind, roaring_bitmap_t *u, const int32_t *gs,
                            uint32_t k)
{
    roaring_bitmap_to_uint32_array(u, p->out);
    uint64_t c = roaring_bitmap_get_cardinality(u);
    c = keep_reactions(p, kind, p->out, c, gs, k);
    roaring_bitmap_free(u);
    return c;
}

static uint64_t or_many(peer_ctx *p, uint32_t kind, const int32_t *gs, uint32_t k)
{
    const roaring_bitmap_t *in[1024];
    size_t m = peer_inputs(p, kind, gs, k, in, 1024);
    return union_count(p, kind, roaring_bitmap_or_many(m, in), gs, k);
}

static uint64_t or_pairwise(peer_ctx *p, uint32_t kind, const int32_t *gs, uint32_t k)
{
    roaring_bitmap_t *u = roaring_bitmap_create();
    const roaring_bitmap_t *in[1024];
    size_t m = peer_inputs(p, kind, gs, k, in, 1024);
    for (size_t j = 0; j < m; j++) {
        roaring_bitmap_t *v = roaring_bitmap_or(u, in[j]);
        roaring_bitmap_free(u);
        u = v;
    }
    return union_count(p, kind, u, gs, k);
}

/* A textbook two-way merge with bounds checks. */
static uint64_t merge_plain(const uint32_t *a, uint64_t na, const uint32_t *b, uint64_t nb,
                            uint32_t *o)
{
    uint64_t i = 0, j = 0, n = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j])
            o[n++] = a[i++];
        else if (b[j] < a[i])
            o[n++] = b[j++];
        else
            o[n++] = a[i++], j++;
    }
    while (i < na)
        o[n++] = a[i++];
    while (j < nb)
        o[n++] = b[j++];
    return n;
}

static uint64_t plain_merge(peer_ctx *p, uint32_t kind, const int32_t *gs, uint32_t k)
{
    const pl_graph *g = p->g;
    uint64_t len = 0, l;
    int rmr = kind >= g->n_gene_lists;
    uint64_t parts = rmr ? p->n_rx : k;
    for (uint64_t j = 0; j < parts; j++) {
        const uint32_t *b;
        if (rmr) {
            b = g->rmr_vals + g->rmr_off[p->rx[j]];
            l = g->rmr_off[p->rx[j] + 1] - g->rmr_off[p->rx[j]];
        } else {
            b = pl__graph_list(g, kind, (uint32_t)gs[j], &l);
        }
        len = merge_plain(p->out, len, b, l, p->tmp);
        uint32_t *t = p->out;
        p->out = p->tmp;
        p->tmp = t;
    }
    return keep_reactions(p, kind, p->out, len, gs, k);
}

static uint64_t run_write_only(peer_ctx *p, pl_masks *m, const samples *s, uint64_t n,
                               double *secs)
{
    /* Sizes first (untimed), then copy that many bytes per list. */
    uint32_t *sizes = malloc(n * p->g->n_lists * sizeof *sizes);
    pl_masks_result res;
    uint64_t total = 0;
    for (uint64_t i = 0; sizes && i < n; i++) {
        pl_masks_compute(m, s->genes + s->ptr[i], (uint32_t)(s->ptr[i + 1] - s->ptr[i]), &res);
        for (uint32_t k = 0; k < res.n_lists; k++)
            sizes[i * res.n_lists + k] = res.removed[k].n;
    }
    /* The destination streams through 64 MiB, as batches fill ring slots. */
    const size_t span = (size_t)64 << 20;
    char *dst = malloc(span), *src = (char *)p->tmp;
    size_t at = 0;
    if (dst)
        memset(dst, 1, span);
    double t0 = pl__now();
    for (uint64_t i = 0; sizes && dst && i < n; i++)
        for (uint32_t k = 0; k < p->g->n_lists; k++) {
            size_t bytes = 4 * (size_t)sizes[i * p->g->n_lists + k];
            if (at + bytes > span)
                at = 0;
            memcpy(dst + at, src, bytes);
            at += bytes;
            total += bytes / 4;
        }
    *secs = pl__now() - t0;
    free(dst);
    free(sizes);
    return total;
}

/* ---------------------------------------------------------------- driver */

static int load_bitmaps(pl_db *db, peer_ctx *p, pl_err *err)
{
    const pl_graph *g = p->g;
    p->bm = calloc((size_t)g->n_lists * g->n_genes, sizeof *p->bm);
    PL_FAIL_IF(!p->bm, err, -ENOMEM, "out of memory");
    if (g->n_lists > g->n_gene_lists) {
        p->n_rbm = pl_db_info_get(db)->n_reactions;
        p->rbm = calloc(p->n_rbm + 1, sizeof *p->rbm);
        PL_FAIL_IF(!p->rbm, err, -ENOMEM, "out of memory");
        for (uint64_t r = 0; r < p->n_rbm; r++)
            if (g->rmr_off[r + 1] > g->rmr_off[r])
                p->rbm[r] = roaring_bitmap_of_ptr(g->rmr_off[r + 1] - g->rmr_off[r],
                                                  g->rmr_vals + g->rmr_off[r]);
    }
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(db->txn, db->dbi[PL_DBI_INC], &cur);
    PL_FAIL_IF(rc, err, pl__lmdb_code(rc), "%s", mdb_strerror(rc));
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        const unsigned char *kb = k.mv_data;
        uint32_t kind = (uint32_t)kb[0] << 8 | kb[1];
        uint32_t gene = (uint32_t)kb[2] << 24 | (uint32_t)kb[3] << 16 | (uint32_t)kb[4] << 8 |
                        kb[5];
        if (kind < g->n_gene_lists && gene < g->n_genes)
            p->bm[(uint64_t)kind * g->n_genes + gene] =
                roaring_bitmap_portable_deserialize_safe(v.mv_data, v.mv_size - 8);
    }
    mdb_cursor_close(cur);
    return 0;
}

static void report(pl_bench_json *j, const char *name, uint64_t n, double secs,
                   double base_rate, uint64_t total, uint64_t want_total)
{
    double rate = secs > 0 ? (double)n / secs : 0;
    char key[64];
    snprintf(key, sizeof key, "%s_samples_per_s", name);
    pl_bench_json_num(j, key, rate);
    if (total != want_total) {
        snprintf(key, sizeof key, "%s_output_mismatch", name);
        pl_bench_json_num(j, key, 1);
    }
    printf("  %-16s %10llu samples %9.3f s %12.0f samples/s %9.3f us/sample  engine is "
           "%7.2fx%s\n", name, (unsigned long long)n, secs, rate, rate > 0 ? 1e6 / rate : 0,
           rate > 0 ? base_rate / rate : 0, total == want_total ? "" : "  OUTPUT MISMATCH");
}

int pl_bench_masks(int argc, char **argv)
{
    const char *usage = "usage: pertload bench masks DB [--samples N] [--peer-samples M] "
                        "[--genes K [--gpr-genes]] [--seed S] [--json FILE]\n";
    const char *path = NULL, *json = NULL;
    unsigned long long n_samples = 1000000, n_peer = 20000, k_genes = 0, seed = 1;
    int gpr_genes = 0;
    const pl_bench_opt opts[] = {
        {"--samples", PL_BENCH_OPT_U64, &n_samples, NULL},
        {"--peer-samples", PL_BENCH_OPT_U64, &n_peer, NULL},
        {"--genes", PL_BENCH_OPT_U64, &k_genes, NULL},
        {"--gpr-genes", PL_BENCH_OPT_FLAG, &gpr_genes, NULL},
        {"--seed", PL_BENCH_OPT_U64, &seed, NULL},
        {"--json", PL_BENCH_OPT_STR, &json, NULL},
    };
    if (pl_bench_opts("bench masks", usage, argc, argv, opts, sizeof opts / sizeof *opts, &path))
        return 2;
    pl_bench_json j;
    int st = pl_bench_begin(usage, path && k_genes <= UINT32_MAX, &j, json);
    if (st)
        return st;
    pl_err err = {0};
    pl_db *db = NULL;
    pl_graph *g = NULL;
    pl_masks *m = NULL;
    samples s = {0};
    peer_ctx p = {0};
    int rc = pl_db_open(path, &db, &err);
    double t0 = pl__now();
    if (rc == 0)
        rc = pl_graph_load(db, &g, &err);
    double t_load = pl__now() - t0;
    int32_t *pool = NULL;
    uint32_t n_pool = 0;
    if (rc == 0 && gpr_genes)
        rc = gpr_gene_pool(g, &pool, &n_pool, &err);
    if (rc == 0 && k_genes)
        rc = random_samples(pool ? n_pool : (uint32_t)pl_db_info_get(db)->n_genes, pool,
                            (uint32_t)k_genes, n_samples, seed, &s, &err);
    else if (rc == 0)
        rc = load_samples(db, n_samples, &s, &err);
    if (rc == 0 && !(m = pl_masks_new(g)))
        rc = pl__err(&err, -ENOMEM, "out of memory");
    p.g = g;
    if (rc == 0 && n_peer)
        rc = load_bitmaps(db, &p, &err);
    if (rc == 0) {
        uint64_t maxlen = 0;
        for (uint32_t k = 0; k < g->n_lists; k++)
            maxlen += g->kind[k].count + 1;
        p.cap = maxlen;
        p.out = malloc(maxlen * 4);
        p.tmp = calloc(maxlen, 4);
        p.rx = malloc(maxlen * 4);
        if (!p.out || !p.tmp || !p.rx)
            rc = pl__err(&err, -ENOMEM, "out of memory");
    }
    if (rc < 0) {
        fprintf(stderr, "pertload bench masks: %s\n", err.msg);
        goto out;
    }
    uint64_t np = n_peer < s.n ? n_peer : s.n;
    uint64_t removed = 0, genes = s.ptr[s.n];
    printf("masks engine, one core, sparse output for %u lists (%u edge types%s); graph "
           "loaded in %.3f s\n", g->n_lists, g->n_types, g->n_lists > g->n_types ?
           " + GPR, reactions, RMR" : "", t_load);
    run_engine(m, &s, np < 1000 ? np : 1000); /* warm-up */
    t0 = pl__now();
    removed = run_engine(m, &s, s.n);
    double t_all = pl__now() - t0;
    printf("  %s: %llu samples, %.2f genes and %.0f removed positions per sample\n",
           k_genes ? "random samples" : "stored samples", (unsigned long long)s.n,
           s.n ? (double)genes / (double)s.n : 0, s.n ? (double)removed / (double)s.n : 0);
    double rate_all = s.n && t_all > 0 ? (double)s.n / t_all : 0;
    pl_bench_json_num(&j, "samples", (double)s.n);
    pl_bench_json_num(&j, "genes_per_sample", s.n ? (double)genes / (double)s.n : 0);
    pl_bench_json_num(&j, "removed_per_sample", s.n ? (double)removed / (double)s.n : 0);
    uint64_t n_edges = 0;
    for (uint32_t t = 0; t < pl_db_info_get(db)->n_types; t++)
        n_edges += pl_db_info_get(db)->n_edges[t];
    pl_bench_json_num(&j, "edges", (double)n_edges);
    pl_bench_json_num(&j, "genes", (double)g->n_genes);
    report(&j, "engine", s.n, t_all, rate_all, 0, 0);
    if (g->rules_kind != UINT32_MAX) {
        /* The same graph and samples with rule any: the rules' cost. */
        pl_graph *gm = (pl_graph *)g;
        uint32_t kind = gm->rules_kind;
        gm->rules_kind = UINT32_MAX;
        run_engine(m, &s, s.n < 1000 ? s.n : 1000);
        t0 = pl__now();
        uint64_t removed_any = run_engine(m, &s, s.n);
        double t_any = pl__now() - t0;
        gm->rules_kind = kind;
        printf("  reaction rule gpr above; the same samples under rule any: %.0f removed "
               "positions per sample\n", s.n ? (double)removed_any / (double)s.n : 0);
        report(&j, "engine_rule_any", s.n, t_any, rate_all, 0, 0);
    }
    pl_bench_json_num(&j, "reaction_rule_gpr", g->rules_kind != UINT32_MAX);
    if (np == 0)
        goto out;
    printf("peers on the first %llu samples (same samples for all):\n", (unsigned long long)np);
    /* The engine's run over the subset is short: repeat it to time it. */
    const int reps = 10;
    uint64_t want = run_engine(m, &s, np);
    t0 = pl__now();
    for (int r = 0; r < reps; r++)
        run_engine(m, &s, np);
    double t_eng = (pl__now() - t0) / reps, base = np && t_eng > 0 ? (double)np / t_eng : 0;
    report(&j, "engine_subset", np, t_eng, base, want, want);
    t0 = pl__now();
    uint64_t got = run_peer(&p, &s, np, plain_merge);
    report(&j, "plain_merge", np, pl__now() - t0, base, got, want);
    t0 = pl__now();
    got = run_peer(&p, &s, np, or_pairwise);
    report(&j, "roaring_or", np, pl__now() - t0, base, got, want);
    uint64_t nm = np < 2000 ? np : 2000;
    t0 = pl__now();
    got = run_peer(&p, &s, nm, or_many);
    uint64_t want_m = run_engine(m, &s, nm);
    report(&j, "roaring_or_many", nm, pl__now() - t0, base, got, want_m);
    double t_w;
    got = run_write_only(&p, m, &s, np, &t_w);
    report(&j, "write_only", np, t_w, base, got, want);
out:
    if (p.bm)
        for (uint64_t i = 0; g && i < (uint64_t)g->n_lists * g->n_genes; i++)
            if (p.bm[i]) /* CRoaring 0.2 does not accept NULL */
                roaring_bitmap_free(p.bm[i]);
    free(p.bm);
    for (uint64_t r = 0; p.rbm && r < p.n_rbm; r++)
        if (p.rbm[r])
            roaring_bitmap_free(p.rbm[r]);
    free(p.rbm);
    free(p.rx);
    free(p.out);
    free(p.tmp);
    free(s.ptr);
    free(s.genes);
    free(pool);
    pl_masks_free(m);
    pl_graph_free(g);
    pl_db_close(db);
    if (pl_bench_json_close(&j) < 0)
        rc = -1;
    return rc < 0 ? 1 : 0;
}
