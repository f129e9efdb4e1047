/* k-hop neighbourhoods (contract in khop.h).
 *
 * Build: each walked type's edge_index is read once. The walk adjacency is a
 * CSR over genes merged over the walked types, each gene's neighbours sorted
 * and deduplicated (duplicate edges and an edge present in two types are
 * walked once) and self-loops dropped (they add nothing to a walk). The
 * owned lists keep every edge of a walked type once, under its end of lesser
 * degree in that type (the lesser index between equal degrees), as (other
 * end, position) pairs in ascending position: a counting sort by owner over
 * the edges in input order. An edge with both ends in S is owned by exactly
 * one gene of S whichever end owns it; owning by degree keeps a hub's list
 * short (its edges mostly belong to its many low-degree partners), so the
 * edge pass over a set holding hubs reads far fewer entries than a scan of
 * every incident edge (the degree ordering of triangle counting).
 *
 * Per sample: the visited array holds a generation stamp per gene, bumped
 * once per sample (cleared only when the counter wraps), so membership is one
 * load and nothing is cleared per sample. The queue holds S in BFS order, hop
 * by hop; a hop that overflows the cap is undone by resetting the stamps of
 * the genes it queued. S is sorted through a bitmap of genes limited to the
 * words between its least and greatest gene, cleared as it is read (a short
 * set by insertion). The kept edges of a type are gathered from the owned
 * lists of S (an edge with both ends in S is owned by exactly one gene of S),
 * branch-free, and sorted: by insertion when short, through a bitmap of the
 * type's positions when the list is long beside the type (the words between
 * its least and greatest position are read once and left zero), else by a
 * least-significant-digit radix sort over the digits the type's positions
 * need.
 */
#include "khop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/vec.h"

typedef struct owned {
    uint32_t other; /* the edge's other end */
    uint32_t pos;   /* its position in its type */
} owned;

struct pl__khop {
    uint32_t n_genes, n_types, k, max_genes;
    uint32_t types[PL_MAX_TYPES];
    uint64_t n_edges[PL_MAX_TYPES];
    uint64_t *adj_off; /* [n_genes + 1] */
    uint32_t *adj;
    uint32_t *own_off[PL_MAX_TYPES]; /* [n_genes + 1] each */
    owned *own[PL_MAX_TYPES];
    uint64_t *own_top[PL_MAX_TYPES]; /* [n_genes + 1]: sum of the i largest owned counts */
};

struct pl__khop_ctx {
    const pl__khop *kh;
    uint32_t gen;
    uint32_t *stamp; /* [n_genes] */
    uint32_t *queue; /* [n_genes] */
    uint64_t *bits;  /* [n_genes / 64 + 1], zero between calls */
    uint64_t *ebits; /* [most edges of a walked type / 64 + 1], zero between calls */
    uint32_t *tmp;   /* radix sort scratch */
    uint64_t tmp_cap;
    int sort;        /* PL__KHOP_SORT_* */
};

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* The owner of edge (s, d): the end of lesser degree in its type, the
 * lesser index between equal degrees. */
static inline uint32_t owner(const uint32_t *deg, uint32_t s, uint32_t d)
{
    return deg[s] < deg[d] || (deg[s] == deg[d] && s < d) ? s : d;
}

/* Owned lists of walked type j from its edge_index (src[E], dst[E]). */
static int build_owned(pl__khop *kh, uint32_t j, const int32_t *ei, uint64_t E, pl_err *err)
{
    const uint32_t N = kh->n_genes;
    uint32_t *off = calloc((size_t)N + 1, sizeof *off), *deg = calloc((size_t)N + 1, sizeof *deg);
    owned *own = malloc((E ? E : 1) * sizeof *own);
    uint64_t *top = calloc((size_t)N + 1, sizeof *top), *cnt = malloc(((size_t)N + 1) * sizeof *cnt);
    kh->own_off[j] = off;
    kh->own[j] = own;
    kh->own_top[j] = top;
    if (!off || !deg || !own || !top || !cnt) {
        free(cnt);
        free(deg);
        return pl__err(err, -ENOMEM, "out of memory (%llu edges)", (unsigned long long)E);
    }
    for (uint64_t e = 0; e < 2 * E; e++)
        deg[ei[e]]++;
    for (uint64_t e = 0; e < E; e++)
        off[owner(deg, (uint32_t)ei[e], (uint32_t)ei[E + e]) + 1]++;
    for (uint32_t g = 0; g < N; g++) {
        cnt[g] = off[g + 1];
        off[g + 1] += off[g];
    }
    uint32_t *fill = (uint32_t *)top; /* borrowed before top is computed */
    memcpy(fill, off, (size_t)N * sizeof *fill);
    for (uint64_t e = 0; e < E; e++) {
        uint32_t s = (uint32_t)ei[e], d = (uint32_t)ei[E + e], o = owner(deg, s, d);
        own[fill[o]++] = (owned){o == s ? d : s, (uint32_t)e};
    }
    free(deg);
    qsort(cnt, N, sizeof *cnt, cmp_u64_desc);
    top[0] = 0;
    for (uint32_t i = 0; i < N; i++)
        top[i + 1] = top[i] + cnt[i];
    free(cnt);
    return 0;
}

/* The walk adjacency, from the walked types' edge arrays. */
static int build_adj(pl__khop *kh, int32_t *const *ei, pl_err *err)
{
    const uint32_t N = kh->n_genes;
    uint64_t total = 0;
    kh->adj_off = calloc((size_t)N + 1, sizeof *kh->adj_off);
    PL_FAIL_IF(!kh->adj_off, err, -ENOMEM, "out of memory");
    for (uint32_t j = 0; j < kh->n_types; j++) {
        uint64_t E = kh->n_edges[j];
        for (uint64_t e = 0; e < E; e++) {
            uint32_t s = (uint32_t)ei[j][e], d = (uint32_t)ei[j][E + e];
            if (s != d) {
                kh->adj_off[s + 1]++;
                kh->adj_off[d + 1]++;
                total += 2;
            }
        }
    }
    for (uint32_t g = 0; g < N; g++)
        kh->adj_off[g + 1] += kh->adj_off[g];
    kh->adj = malloc((total ? total : 1) * sizeof *kh->adj);
    uint64_t *fill = malloc(((size_t)N + 1) * sizeof *fill);
    if (!kh->adj || !fill) {
        free(fill);
        return pl__err(err, -ENOMEM, "out of memory (%llu adjacency entries)",
                       (unsigned long long)total);
    }
    memcpy(fill, kh->adj_off, ((size_t)N + 1) * sizeof *fill);
    for (uint32_t j = 0; j < kh->n_types; j++) {
        uint64_t E = kh->n_edges[j];
        for (uint64_t e = 0; e < E; e++) {
            uint32_t s = (uint32_t)ei[j][e], d = (uint32_t)ei[j][E + e];
            if (s != d) {
                kh->adj[fill[s]++] = d;
                kh->adj[fill[d]++] = s;
            }
        }
    }
    free(fill);
    /* Sort and deduplicate each gene's neighbours, compacting in place. */
    uint64_t w = 0;
    for (uint32_t g = 0; g < N; g++) {
        uint64_t a = kh->adj_off[g], b = kh->adj_off[g + 1];
        qsort(kh->adj + a, b - a, sizeof *kh->adj, cmp_u32);
        kh->adj_off[g] = w;
        for (uint64_t i = a; i < b; i++)
            if (i == a || kh->adj[i] != kh->adj[i - 1])
                kh->adj[w++] = kh->adj[i];
    }
    kh->adj_off[N] = w;
    return 0;
}

static int build(pl_db *db, pl__khop *kh, const uint32_t *types, uint32_t n_types,
                 int32_t **ei, pl_err *err)
{
    const pl_db_info *info = pl_db_info_get(db);
    for (uint32_t j = 0; j < n_types; j++) {
        uint32_t t = types[j];
        PL_FAIL_IF(t >= info->n_types, err, PL_EUSAGE, "k-hop: no edge type %u", t);
        for (uint32_t i = 0; i < j; i++)
            PL_FAIL_IF(types[i] == t, err, PL_EUSAGE, "k-hop: edge type %s named twice",
                       info->type_names[t]);
        uint64_t E = info->n_edges[t];
        kh->types[j] = t;
        kh->n_edges[j] = E;
        ei[j] = malloc(E ? 8 * E : 8);
        PL_FAIL_IF(!ei[j], err, -ENOMEM, "out of memory (%llu edges of %s)",
                   (unsigned long long)E, info->type_names[t]);
        int64_t got = pl_db_graph_array(db, (int)t, ei[j], 8 * E, err);
        PL_TRY(got < 0 ? (int)got : 0);
        for (uint64_t i = 0; i < 2 * E; i++)
            PL_FAIL_IF(ei[j][i] < 0 || (uint64_t)ei[j][i] >= kh->n_genes, err, PL_ECORRUPT,
                       "k-hop: edge %llu of type %s has gene index %d, out of range",
                       (unsigned long long)(i % E), info->type_names[t], (int)ei[j][i]);
        kh->n_types = j + 1;
    }
    PL_TRY(build_adj(kh, ei, err));
    for (uint32_t j = 0; j < n_types; j++)
        PL_TRY(build_owned(kh, j, ei[j], kh->n_edges[j], err));
    return 0;
}

int pl__khop_new(pl_db *db, const uint32_t *types, uint32_t n_types, uint32_t k,
                 uint32_t max_genes, pl__khop **out, pl_err *err)
{
    *out = NULL;
    PL_FAIL_IF(k > PL_KHOP_MAX_K, err, PL_EUSAGE, "k-hop: k = %u is above %u", k,
               PL_KHOP_MAX_K);
    PL_FAIL_IF(n_types == 0 || n_types > PL_MAX_TYPES, err, PL_EUSAGE,
               "k-hop: %u edge types to walk (1 to %u)", n_types, PL_MAX_TYPES);
    PL_FAIL_IF(max_genes == 0, err, PL_EUSAGE, "k-hop: the cap on genes must be at least 1");
    pl__khop *kh = calloc(1, sizeof *kh);
    int32_t *ei[PL_MAX_TYPES] = {0};
    PL_FAIL_IF(!kh, err, -ENOMEM, "out of memory");
    kh->n_genes = (uint32_t)pl_db_info_get(db)->n_genes;
    kh->k = k;
    kh->max_genes = max_genes;
    int rc = build(db, kh, types, n_types, ei, err);
    for (uint32_t j = 0; j < n_types; j++)
        free(ei[j]);
    if (rc < 0) {
        pl__khop_free(kh);
        return rc;
    }
    *out = kh;
    return 0;
}

void pl__khop_free(pl__khop *kh)
{
    if (!kh)
        return;
    free(kh->adj_off);
    free(kh->adj);
    for (uint32_t j = 0; j < PL_MAX_TYPES; j++) {
        free(kh->own_off[j]);
        free(kh->own[j]);
        free(kh->own_top[j]);
    }
    free(kh);
}

int pl__khop_parse_types(const pl_db *db, const char *list, uint32_t *types, pl_err *err)
{
    const pl_db_info *info = pl_db_info_get(db);
    uint32_t n = 0;
    for (const char *p = list;; p++) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        uint32_t t = 0;
        while (t < info->n_types &&
               (strlen(info->type_names[t]) != len || memcmp(info->type_names[t], p, len)))
            t++;
        PL_FAIL_IF(len == 0, err, PL_EUSAGE, "k-hop types '%s': an empty type name", list);
        PL_FAIL_IF(t == info->n_types, err, PL_EUSAGE,
                   "k-hop types '%s': no edge type '%.*s' in this database", list, (int)len, p);
        for (uint32_t i = 0; i < n; i++)
            PL_FAIL_IF(types[i] == t, err, PL_EUSAGE, "k-hop types '%s': '%.*s' named twice",
                       list, (int)len, p);
        types[n++] = t;
        if (!e)
            return (int)n;
        p = e;
    }
}

uint32_t pl__khop_n_types(const pl__khop *kh) { return kh->n_types; }
uint32_t pl__khop_type(const pl__khop *kh, uint32_t j) { return kh->types[j]; }
uint32_t pl__khop_k(const pl__khop *kh) { return kh->k; }
uint32_t pl__khop_max_genes(const pl__khop *kh) { return kh->max_genes; }

uint64_t pl__khop_genes_bound(const pl__khop *kh, uint64_t n_pert)
{
    uint64_t b = n_pert > kh->max_genes ? n_pert : kh->max_genes;
    return b < kh->n_genes ? b : kh->n_genes;
}

uint64_t pl__khop_edges_bound(const pl__khop *kh, uint32_t j, uint64_t n_set)
{
    if (n_set > kh->n_genes)
        n_set = kh->n_genes;
    return kh->own_top[j][n_set];
}

uint64_t pl__khop_owned(const pl__khop *kh, uint32_t j, const int32_t *set, uint32_t n)
{
    const uint32_t *off = kh->own_off[j];
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += off[set[i] + 1] - off[set[i]];
    return sum;
}

pl__khop_ctx *pl__khop_ctx_new(const pl__khop *kh)
{
    pl__khop_ctx *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    size_t N = kh->n_genes;
    x->kh = kh;
    x->stamp = calloc(N + 1, sizeof *x->stamp);
    x->queue = malloc((N + 1) * sizeof *x->queue);
    x->bits = calloc(N / 64 + 1, sizeof *x->bits);
    uint64_t most = 0;
    for (uint32_t j = 0; j < kh->n_types; j++)
        most = kh->n_edges[j] > most ? kh->n_edges[j] : most;
    x->ebits = calloc(most / 64 + 1, sizeof *x->ebits);
    if (!x->stamp || !x->queue || !x->bits || !x->ebits) {
        pl__khop_ctx_free(x);
        return NULL;
    }
    return x;
}

void pl__khop_ctx_sort(pl__khop_ctx *x, int how) { x->sort = how; }

void pl__khop_ctx_free(pl__khop_ctx *x)
{
    if (!x)
        return;
    free(x->stamp);
    free(x->queue);
    free(x->bits);
    free(x->ebits);
    free(x->tmp);
    free(x);
}

/* Short lists: insertion sort. */
static void insertion_sort(uint32_t *a, uint64_t n)
{
    for (uint64_t i = 1; i < n; i++) {
        uint32_t v = a[i];
        uint64_t j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

/* in[0..n) (below `limit`) written ascending to out (which may be
 * in) through the zeroed bitmap `bits` of limit bits, left zero: every input
 * is read before the first output is written, and the words between the
 * least and the greatest are read once. */
static void bitmap_sort(const uint32_t *in, uint64_t n, uint64_t *bits, uint32_t *out)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t w = in[i] >> 6;
        bits[w] |= UINT64_C(1) << (in[i] & 63);
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
    }
    uint64_t k = 0;
    for (uint32_t w = lo; w <= hi; w++) {
        for (uint64_t b = bits[w]; b; b &= b - 1)
            out[k++] = (w << 6) + (uint32_t)__builtin_ctzll(b);
        bits[w] = 0;
    }
}

/* S, queued in q[0..n), written ascending to out; the bitmap is left zero. */
static void sort_set(pl__khop_ctx *x, const uint32_t *q, uint32_t n, uint32_t *out)
{
    if (n <= 32) {
        memcpy(out, q, n * sizeof *out);
        insertion_sort(out, n);
        return;
    }
    bitmap_sort(q, n, x->bits, out);
}

uint32_t pl__khop_genes(pl__khop_ctx *x, const int32_t *pert, uint32_t n, int32_t *out,
                        int *capped)
{
    const pl__khop *kh = x->kh;
    uint32_t *stamp = x->stamp, *q = x->queue;
    if (++x->gen == 0) {
        memset(stamp, 0, (size_t)kh->n_genes * sizeof *stamp);
        x->gen = 1;
    }
    const uint32_t gen = x->gen, cap = kh->max_genes;
    uint32_t nq = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t g = (uint32_t)pert[i];
        if (stamp[g] != gen) {
            stamp[g] = gen;
            q[nq++] = g;
        }
    }
    *capped = 0;
    uint32_t hop_start = 0;
    for (uint32_t h = 1; h <= kh->k && hop_start < nq; h++) {
        const uint32_t hop_end = nq;
        for (uint32_t i = hop_start; i < hop_end; i++) {
            const uint32_t *a = kh->adj + kh->adj_off[q[i]], *e = kh->adj + kh->adj_off[q[i] + 1];
            for (; a < e; a++) {
                uint32_t v = *a;
                if (stamp[v] == gen)
                    continue;
                if (nq >= cap)
                    goto overflow;
                stamp[v] = gen;
                q[nq++] = v;
            }
        }
        hop_start = hop_end;
        continue;
    overflow:
        /* Hop h does not fit: drop it whole; S is the ball of radius h - 1. */
        for (uint32_t i = hop_end; i < nq; i++)
            stamp[q[i]] = 0;
        nq = hop_end;
        *capped = 1;
        break;
    }
    sort_set(x, q, nq, (uint32_t *)out);
    return nq;
}

/* Ascending order of a[0..n) through the scratch tmp[0..n): least
 * significant digit first, 8 bits a pass, as many passes as `max` needs. */
static void radix_sort(uint32_t *a, uint32_t *tmp, uint64_t n, uint32_t max)
{
    uint32_t *src = a, *dst = tmp;
    for (uint32_t shift = 0; shift < 32 && (max >> shift) != 0; shift += 8) {
        uint64_t count[257] = {0};
        for (uint64_t i = 0; i < n; i++)
            count[((src[i] >> shift) & 255) + 1]++;
        for (uint32_t d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (uint64_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 255]++] = src[i];
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

int64_t pl__khop_edges(pl__khop_ctx *x, uint32_t j, const int32_t *set, uint32_t n,
                       int32_t *out)
{
    const pl__khop *kh = x->kh;
    const uint32_t *stamp = x->stamp, *off = kh->own_off[j], gen = x->gen;
    const owned *own = kh->own[j];
    uint32_t *o = (uint32_t *)out;
    uint64_t m = 0;
    /* Branch-free: every position is written, the kept ones advance. The
     * room is the owned count, so the last write stays inside it. */
    for (uint32_t i = 0; i < n; i++) {
        for (const owned *p = own + off[set[i]], *e = own + off[set[i] + 1]; p < e; p++) {
            o[m] = p->pos;
            m += stamp[p->other] == gen;
        }
    }
    if (m <= 1)
        return (int64_t)m;
    int how = x->sort;
    if (how == PL__KHOP_SORT_AUTO) {
        /* A bitmap of the type's positions costs a read of its words; the
         * radix sort three or so passes over the list and its counts. */
        uint64_t words = (kh->n_edges[j] + 63) / 64;
        how = m <= 48 ? PL__KHOP_SORT_INSERTION
              : words <= 8 * m ? PL__KHOP_SORT_BITMAP
                               : PL__KHOP_SORT_RADIX;
    }
    if (how == PL__KHOP_SORT_INSERTION) {
        insertion_sort(o, m);
        return (int64_t)m;
    }
    if (how == PL__KHOP_SORT_BITMAP) {
        bitmap_sort(o, m, x->ebits, o);
        return (int64_t)m;
    }
    if (pl__grow(&x->tmp, &x->tmp_cap, m, sizeof *x->tmp) < 0)
        return -ENOMEM;
    radix_sort(o, x->tmp, m, (uint32_t)(kh->n_edges[j] - 1));
    return (int64_t)m;
}
