/* Unions of per-gene sorted lists: the hot path of the loader.
 *
 * A sample deletes a handful of genes, so each list kind's removed set is the
 * union of a few sorted lists of up to a few hundred positions that interleave
 * at random. Roaring unions build containers and allocate per call, and a
 * branchy two-way merge mispredicts about every other element. Here:
 * - every list is followed by a vector of sentinels larger than any position,
 *   so no loop checks bounds;
 * - with AVX2, two lists merge eight positions per step through a bitonic
 *   network: a register holds the eight largest positions seen so far (kept
 *   descending), the next eight come from the list whose head is smaller, and
 *   min/max against the register yield the next eight outputs. The choice of
 *   list is arithmetic, not a branch. A position present in both lists comes
 *   out twice, side by side; equal neighbours are detected in registers and
 *   the rare output that has them is compacted afterwards;
 * - otherwise a branch-free scalar merge takes the minimum of the two heads and
 *   advances every head equal to it;
 * - a set of n > 2 genes merges through a balanced tree of two-way merges:
 *   each level merges neighbouring runs pairwise, levels alternate between a
 *   scratch buffer and the output so that the last lands in the output, and
 *   the cost is positions * ceil(log2 n) (folding one list at a time into the
 *   running union costs positions * n / 2: 3.3 times more for 32 genes). A
 *   set whose lists cover much of a kind marks a bitmap of the kind's
 *   positions instead; three lists, or more than TREE_RUNS * 2, are folded.
 * Under reaction rule gpr the reaction kind's union, the reactions of a
 * deleted gene (typically a few), is filtered in place by their compiled
 * rules (src/core/rule.h): a reaction stays in the removed list when its rule
 * is false with the set deleted. Other reactions' rules hold, as rules have
 * no negation, so nothing else is evaluated.
 * The RMR kind is not a union of gene lists: its positions are those of the
 * removed reactions, whose RMR sets are disjoint, copied end to end in
 * reaction order (ascending when the input lists RMR rows in reaction order),
 * else in the order of each reaction's first position, else sorted.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "masks.h"
#include "src/core/rule.h"
#include "src/core/vec.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define PL__MASKS_AVX2 1
#include <immintrin.h>
#else
#define PL__MASKS_AVX2 0
#endif

#define END PL__MASKS_END
#define PAD PL__MASKS_PAD
#define TREE_RUNS 64 /* runs a merge tree holds after its first level */

/* Every merge writes the union of its inputs to `o`, follows it with PAD
 * sentinels and returns its length. Inputs are followed by PAD sentinels. */

static uint64_t copy_list(const uint32_t *a, uint64_t na, uint32_t *o)
{
    memcpy(o, a, (na + PAD) * sizeof *o);
    return na;
}

static uint64_t merge_scalar(const uint32_t *a, const uint32_t *b, uint32_t *o)
{
    uint64_t i = 0, j = 0, k = 0;
    for (;;) {
        uint32_t x = a[i], y = b[j], m = x < y ? x : y;
        if (m == END)
            break;
        o[k++] = m;
        i += x <= y;
        j += y <= x;
    }
    for (uint32_t p = 0; p < PAD; p++)
        o[k + p] = END;
    return k;
}

#if PL__MASKS_AVX2
#define AVX2 __attribute__((target("avx2")))

/* Sort a bitonic vector: three half-cleaner stages. The blend masks pick the
 * maxima into the upper lanes (ascending) or the lower ones (descending). */
AVX2 static inline __m256i bitonic_sort(__m256i v, const int up)
{
    __m256i p = _mm256_permute2x128_si256(v, v, 1);
    __m256i lo = _mm256_min_epu32(v, p), hi = _mm256_max_epu32(v, p);
    v = up ? _mm256_blend_epi32(lo, hi, 0xF0) : _mm256_blend_epi32(lo, hi, 0x0F);
    p = _mm256_shuffle_epi32(v, 0x4E);
    lo = _mm256_min_epu32(v, p);
    hi = _mm256_max_epu32(v, p);
    v = up ? _mm256_blend_epi32(lo, hi, 0xCC) : _mm256_blend_epi32(lo, hi, 0x33);
    p = _mm256_shuffle_epi32(v, 0xB1);
    lo = _mm256_min_epu32(v, p);
    hi = _mm256_max_epu32(v, p);
    return up ? _mm256_blend_epi32(lo, hi, 0xAA) : _mm256_blend_epi32(lo, hi, 0x55);
}

/* Lanes of sorted `v` equal to their predecessor (lane 0's is `prev`'s lane 7). */
AVX2 static inline __m256i equal_neighbours(__m256i v, __m256i prev)
{
    __m256i shifted = _mm256_alignr_epi8(v, _mm256_permute2x128_si256(prev, v, 0x21), 12);
    return _mm256_cmpeq_epi32(v, shifted);
}

/* Both lists non-empty. The stream of outputs is the sorted multiset union of
 * a and b then sentinels; it stops once na + nb positions are out. */
AVX2 static uint64_t merge_avx2(const uint32_t *a, uint64_t na, const uint32_t *b,
                                uint64_t nb, uint32_t *o)
{
    const __m256i rev = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    const __m256i endv = _mm256_set1_epi32(-1);
    const uint64_t n = na + nb;
    uint32_t *w = o, *const we = o + n;
    __m256i va = _mm256_loadu_si256((const __m256i *)a);
    __m256i top = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)b), rev);
    __m256i out = bitonic_sort(_mm256_min_epu32(va, top), 1);
    top = bitonic_sort(_mm256_max_epu32(va, top), 0);
    _mm256_storeu_si256((__m256i *)w, out);
    w += 8;
    a += 8;
    b += 8;
    /* Equal neighbours of each output vector, or'ed one step late: only the
     * last vector can hold sentinels (equal to each other), so its lanes are
     * masked below. */
    __m256i last = equal_neighbours(out, endv), seen = _mm256_setzero_si256();
    uint32_t x = *a, y = *b;
    /* Heads stay within the pads: a list is taken while its head is a position
     * (or both heads are sentinels, which ends the loop first). */
    while (w < we && (x & y) != END) {
        uintptr_t take_a = -(uintptr_t)(x <= y), ua = (uintptr_t)a, ub = (uintptr_t)b;
        const uint32_t *p = (const uint32_t *)((ua & take_a) | (ub & ~take_a));
        a = (const uint32_t *)(ua + (32 & take_a));
        b = (const uint32_t *)(ub + (32 & ~take_a));
        __m256i v = _mm256_loadu_si256((const __m256i *)p);
        __m256i next = bitonic_sort(_mm256_min_epu32(v, top), 1);
        top = bitonic_sort(_mm256_max_epu32(v, top), 0);
        _mm256_storeu_si256((__m256i *)w, next);
        w += 8;
        seen = _mm256_or_si256(seen, last);
        last = equal_neighbours(next, out);
        out = next;
        x = *a;
        y = *b;
    }
    if (w < we) {
        /* Everything was read: the rest is in the register. */
        __m256i next = _mm256_permutevar8x32_epi32(top, rev);
        _mm256_storeu_si256((__m256i *)w, next);
        seen = _mm256_or_si256(seen, last);
        last = equal_neighbours(next, out);
        out = next;
    }
    seen = _mm256_or_si256(seen, _mm256_andnot_si256(_mm256_cmpeq_epi32(out, endv), last));
    uint64_t k = n;
    if (!_mm256_testz_si256(seen, seen)) {
        uint32_t prev = o[0];
        k = 1;
        for (uint64_t i = 1; i < n; i++) {
            uint32_t v = o[i];
            o[k] = v;
            k += v != prev;
            prev = v;
        }
    }
    _mm256_storeu_si256((__m256i *)(o + k), endv);
    return k;
}
#endif

static uint64_t merge2(const pl_graph *g, const uint32_t *a, uint64_t na, const uint32_t *b,
                       uint64_t nb, uint32_t *o)
{
    if (na == 0)
        return copy_list(b, nb, o);
    if (nb == 0)
        return copy_list(a, na, o);
#if PL__MASKS_AVX2
    if (g->simd)
        return merge_avx2(a, na, b, nb, o);
#else
    (void)g;
#endif
    return merge_scalar(a, b, o);
}

uint64_t pl__masks_bound(const pl_graph *g, uint32_t kind, const int32_t *genes, uint32_t n)
{
    uint64_t sum = 0, len;
    if (kind >= g->n_gene_lists) {
        for (uint32_t i = 0; i < n; i++)
            sum += g->rmr_len[genes[i]];
        return sum < g->kind[kind].count ? sum : g->kind[kind].count;
    }
    for (uint32_t i = 0; i < n; i++) {
        pl__graph_list(g, kind, (uint32_t)genes[i], &len);
        sum += len;
    }
    /* A level of the merge tree keeps up to n / 2 runs in one buffer, each
     * followed by its sentinels: the room for the ones beyond the first. */
    if (n >= 4 && n <= 2 * TREE_RUNS)
        sum += (uint64_t)PAD * (n / 2 - 1);
    return sum;
}

void pl__masks_prefetch(const pl_graph *g, const int32_t *genes, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint64_t row = (uint64_t)genes[i] * g->n_gene_lists;
        const char *p = (const char *)(g->vals + g->off[row]);
        const char *e = (const char *)(g->vals + g->off[row + g->n_gene_lists]);
        for (; p < e; p += 64)
            __builtin_prefetch(p);
    }
}

/* Union of many lists through a bitmap of `words` 32-bit words in `bits`. */
static uint64_t union_bitmap(const pl_graph *g, uint32_t kind, const int32_t *genes,
                             uint32_t n, uint32_t *o, uint32_t *bits, uint64_t words)
{
    uint64_t len, k = 0;
    memset(bits, 0, words * sizeof *bits);
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t *l = pl__graph_list(g, kind, (uint32_t)genes[i], &len);
        for (uint64_t j = 0; j < len; j++)
            bits[l[j] >> 5] |= 1u << (l[j] & 31);
    }
    for (uint64_t w = 0; w < words; w++)
        for (uint32_t b = bits[w]; b; b &= b - 1)
            o[k++] = (uint32_t)(w << 5) + (uint32_t)__builtin_ctz(b);
    for (uint32_t p = 0; p < PAD; p++)
        o[k + p] = END;
    return k;
}

typedef struct run {
    const uint32_t *p;
    uint64_t n;
    int in_buffer; /* 0: a list of the graph, never overwritten */
} run;

/* Union of 4 <= n <= 2 * TREE_RUNS lists through a balanced merge tree. Level
 * j writes its runs one after the other (each with its sentinels) into
 * buf[(levels - j) & 1], so the last level writes `out`; an odd run out is
 * carried to the next level, copied when it lives in a buffer, which that
 * next level's successor overwrites. */
static uint64_t union_tree(const pl_graph *g, uint32_t kind, const int32_t *genes, uint32_t n,
                           uint32_t *out, uint32_t *scratch)
{
    run r[TREE_RUNS];
    uint32_t levels = 0, nr = 0;
    for (uint32_t m = n; m > 1; m = (m + 1) / 2)
        levels++;
    uint32_t *const buf[2] = {out, scratch};
    uint32_t *w = buf[(levels - 1) & 1];
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        uint64_t la, lb;
        const uint32_t *a = pl__graph_list(g, kind, (uint32_t)genes[i], &la);
        const uint32_t *b = pl__graph_list(g, kind, (uint32_t)genes[i + 1], &lb);
        uint64_t k = merge2(g, a, la, b, lb, w);
        r[nr++] = (run){w, k, 1};
        w += k + PAD;
    }
    if (n & 1) {
        r[nr].p = pl__graph_list(g, kind, (uint32_t)genes[n - 1], &r[nr].n);
        r[nr++].in_buffer = 0;
    }
    for (uint32_t level = 2; level <= levels; level++) {
        uint32_t m = 0;
        w = buf[(levels - level) & 1];
        for (uint32_t i = 0; i + 1 < nr; i += 2) {
            uint64_t k = merge2(g, r[i].p, r[i].n, r[i + 1].p, r[i + 1].n, w);
            r[m++] = (run){w, k, 1};
            w += k + PAD;
        }
        if (nr & 1) {
            run last = r[nr - 1];
            if (last.in_buffer) {
                copy_list(last.p, last.n, w);
                last.p = w;
            }
            r[m++] = last;
        }
        nr = m;
    }
    assert(nr == 1 && r[0].p == out);
    return r[0].n;
}

static uint64_t union_lists(const pl_graph *g, uint32_t kind, const int32_t *genes,
                            uint32_t n, int32_t *out, int32_t *scratch)
{
    uint32_t *o = (uint32_t *)out;
    uint64_t la, lb;
    assert(kind < g->n_gene_lists);
    if (n == 0) {
        for (uint32_t p = 0; p < PAD; p++)
            o[p] = END;
        return 0;
    }
    const uint32_t *a = pl__graph_list(g, kind, (uint32_t)genes[0], &la);
    if (n == 1)
        return copy_list(a, la, o);
    assert(n == 2 || scratch);
    if (n > 2) {
        /* The tree costs about ceil(log2 n) * bound steps (folding, about
         * (n - 1) * bound / 2); marking a bitmap of the kind's positions and
         * reading it back costs about count / 8 and two steps per position.
         * The bitmap wins for sets whose lists cover much of the kind. */
        uint64_t bound = pl__masks_bound(g, kind, genes, n), count = g->kind[kind].count;
        uint64_t words = (count + 31) / 32, steps = 0;
        for (uint32_t m = n; m > 1; m = (m + 1) / 2)
            steps += bound;
        if (n == 3 || n > 2 * TREE_RUNS)
            steps = (n - 1) * bound / 2;
        if (words <= bound + PAD && count / 8 + 2 * bound < steps)
            return union_bitmap(g, kind, genes, n, o, (uint32_t *)scratch, words);
        if (n > 3 && n <= 2 * TREE_RUNS) /* three lists: the fold is the tree */
            return union_tree(g, kind, genes, n, o, (uint32_t *)scratch);
    }
    /* n - 1 merges; the destinations alternate and the last one is `out`. */
    uint32_t *buf[2] = {o, (uint32_t *)scratch};
    uint32_t dst = (n - 2) & 1;
    const uint32_t *b = pl__graph_list(g, kind, (uint32_t)genes[1], &lb);
    uint64_t len = merge2(g, a, la, b, lb, buf[dst]);
    for (uint32_t i = 2; i < n; i++) {
        b = pl__graph_list(g, kind, (uint32_t)genes[i], &lb);
        len = merge2(g, buf[dst], len, b, lb, buf[dst ^ 1]);
        dst ^= 1;
    }
    assert(buf[dst] == o);
    return len;
}

uint64_t pl__masks_rules(const pl_graph *g, const int32_t *genes, uint32_t n, int32_t *rxns,
                         uint64_t len)
{
    const uint32_t *off = g->rule_off, *code = g->rule_code;
    uint64_t k = 0;
    for (uint64_t i = 0; i < len; i++) {
        int32_t r = rxns[i];
        uint32_t a = off[r], b = off[r + 1];
        rxns[k] = r;
        /* Without a rule, never removed (none when the GPR edges come from
         * the rules, as pl_build makes them). */
        k += a != b && !pl__rule_eval(code + a, b - a, genes, n);
    }
    for (uint32_t p = 0; p < PAD; p++)
        rxns[k + p] = -1;
    return k;
}

uint64_t pl__masks_union(const pl_graph *g, uint32_t kind, const int32_t *genes, uint32_t n,
                         int32_t *out, int32_t *scratch)
{
    uint64_t len = union_lists(g, kind, genes, n, out, scratch);
    if (kind == g->rules_kind)
        len = pl__masks_rules(g, genes, n, out, len);
    return len;
}

/* --------------------------------------------------------------------- RMR */

#define RMR_ORDER 64 /* reactions pl__masks_rmr reorders on the stack */

/* Copy n positions eight at a time: up to seven entries past the end are read
 * (rmr_vals ends with a pad) and written (the output's room ends with one). */
static inline void copy_blocks(uint32_t *dst, const uint32_t *src, uint64_t n)
{
    for (uint64_t i = 0; i < n; i += 8)
        memcpy(dst + i, src + i, 8 * sizeof *dst);
}

/* The RMR positions of reactions rxns[0..n), in that order, to `o`; clears
 * *sorted when a reaction's first position is below the previous one's last. */
static inline uint64_t rmr_emit(const pl_graph *g, const int32_t *rxns, uint64_t n,
                                uint32_t *o, int *sorted)
{
    const uint32_t *off = g->rmr_off, *v = g->rmr_vals;
    uint64_t k = 0;
    uint32_t next = 0; /* the least position that keeps the output ascending */
    for (uint64_t i = 0; i < n; i++) {
        uint32_t a = off[rxns[i]], b = off[rxns[i] + 1];
        if (a == b)
            continue;
        *sorted &= v[a] >= next;
        next = v[b - 1] + 1;
        copy_blocks(o + k, v + a, b - a);
        k += b - a;
    }
    return k;
}

static void sift_down(uint32_t *a, uint64_t i, uint64_t n)
{
    uint32_t x = a[i];
    for (uint64_t c; (c = 2 * i + 1) < n; i = c) {
        c += c + 1 < n && a[c + 1] > a[c];
        if (a[c] <= x)
            break;
        a[i] = a[c];
    }
    a[i] = x;
}

/* In place, without allocating: the engine's last resort. */
static void heap_sort(uint32_t *a, uint64_t n)
{
    for (uint64_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (uint64_t e = n; e-- > 1;) {
        uint32_t x = a[0];
        a[0] = a[e];
        a[e] = x;
        sift_down(a, 0, e);
    }
}

/* The output of rmr_emit (k positions in o) was not ascending: the RMR rows
 * of the reactions do not come in reaction order. Emit again in the order of
 * each reaction's first position: ascending when each reaction's rows are
 * contiguous in the input. A sample has few reactions with RMR positions;
 * past RMR_ORDER, or when reactions' rows interleave, sort the positions.
 * Out of line: the common path stays small. */
__attribute__((noinline)) static uint64_t rmr_reorder(const pl_graph *g, const int32_t *rxns,
                                                      uint64_t n, uint32_t *o, uint64_t k)
{
    const uint32_t *off = g->rmr_off, *v = g->rmr_vals;
    int32_t ids[RMR_ORDER];
    uint32_t m = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t a = off[rxns[i]], j;
        if (a == off[rxns[i] + 1])
            continue;
        if (m == RMR_ORDER) {
            heap_sort(o, k);
            return k;
        }
        for (j = m++; j > 0 && v[off[ids[j - 1]]] > v[a]; j--)
            ids[j] = ids[j - 1];
        ids[j] = rxns[i];
    }
    int sorted = 1;
    k = rmr_emit(g, ids, m, o, &sorted);
    if (!sorted)
        heap_sort(o, k);
    return k;
}

uint64_t pl__masks_rmr(const pl_graph *g, const int32_t *rxns, uint64_t n, int32_t *out)
{
    uint32_t *o = (uint32_t *)out;
    int sorted = 1;
    /* Reactions whose RMR rows come in reaction order (as most files list
     * them) give their positions ascending, end to end. */
    uint64_t k = rmr_emit(g, rxns, n, o, &sorted);
    if (!sorted)
        k = rmr_reorder(g, rxns, n, o, k);
    for (uint32_t p = 0; p < PAD; p++)
        o[k + p] = END;
    return k;
}

static int cmp_gene(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int64_t pl__masks_genes(uint32_t n_genes, const int32_t *genes, uint32_t n, int32_t *out,
                        uint32_t *bad)
{
    for (uint32_t i = 0; i < n; i++) {
        if (genes[i] < 0 || (uint32_t)genes[i] >= n_genes) {
            *bad = i;
            return PL_ERANGE;
        }
    }
    uint32_t m = 0;
    if (n > 64) {
        memcpy(out, genes, n * sizeof *out);
        qsort(out, n, sizeof *out, cmp_gene);
        for (uint32_t i = 0; i < n; i++)
            if (m == 0 || out[i] != out[m - 1])
                out[m++] = out[i];
        return m;
    }
    /* Insertion sort, dropping duplicates as they meet: sets are small. */
    for (uint32_t i = 0; i < n; i++) {
        int32_t v = genes[i];
        uint32_t j = m;
        while (j > 0 && out[j - 1] > v)
            j--;
        if (j > 0 && out[j - 1] == v)
            continue;
        memmove(out + j + 1, out + j, (m - j) * sizeof *out);
        out[j] = v;
        m++;
    }
    return m;
}

/* ------------------------------------------------------------- the context */

struct pl_masks {
    const pl_graph *g;
    int32_t *pert;
    uint64_t pert_cap;
    int32_t *scratch;
    uint64_t scratch_cap;
    int32_t *buf[PL__MASKS_MAX_KINDS];
    uint64_t cap[PL__MASKS_MAX_KINDS];
    pl_list removed[PL__MASKS_MAX_KINDS];
};

PL_API pl_masks *pl_masks_new(const pl_graph *g)
{
    pl_masks *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->g = g;
    /* Room for any three genes: single, double and triple deletions never
     * allocate. */
    int rc = pl__grow(&m->pert, &m->pert_cap, 64, sizeof *m->pert);
    uint64_t most = 0;
    for (uint32_t k = 0; rc == 0 && k < g->n_lists; k++) {
        uint64_t need = 3 * g->kind[k].max_len;
        if (k >= g->n_gene_lists && need > g->kind[k].count) /* RMR: at most all of them */
            need = g->kind[k].count;
        need += PAD;
        rc = pl__grow(&m->buf[k], &m->cap[k], need, sizeof *m->buf[k]);
        if (k < g->n_gene_lists) /* the RMR kind needs no scratch */
            most = need > most ? need : most;
    }
    if (rc == 0)
        rc = pl__grow(&m->scratch, &m->scratch_cap, most, sizeof *m->scratch);
    if (rc < 0) {
        pl_masks_free(m);
        return NULL;
    }
    return m;
}

PL_API void pl_masks_free(pl_masks *m)
{
    if (!m)
        return;
    free(m->pert);
    free(m->scratch);
    for (uint32_t k = 0; k < PL__MASKS_MAX_KINDS; k++)
        free(m->buf[k]);
    free(m);
}

PL_API int pl_masks_compute(pl_masks *m, const int32_t *genes, uint32_t n,
                            pl_masks_result *out)
{
    const pl_graph *g = m->g;
    uint32_t bad;
    /* Range first: a rejected set leaves the previous result intact. */
    for (uint32_t i = 0; i < n; i++)
        if (genes[i] < 0 || (uint32_t)genes[i] >= g->n_genes)
            return PL_ERANGE;
    if (pl__grow(&m->pert, &m->pert_cap, n, sizeof *m->pert) < 0)
        return -ENOMEM;
    int64_t np = pl__masks_genes(g->n_genes, genes, n, m->pert, &bad);
    assert(np >= 0);
    uint32_t k = (uint32_t)np;
    pl__masks_prefetch(g, m->pert, k);
    for (uint32_t t = 0; t < g->n_lists; t++) {
        /* Up to three genes fit the buffers pl_masks_new() sized. */
        uint64_t need = k <= 3 ? 0 : pl__masks_bound(g, t, m->pert, k) + PAD, len;
        if (pl__grow(&m->buf[t], &m->cap[t], need, sizeof *m->buf[t]) < 0 ||
            (t < g->n_gene_lists &&
             pl__grow(&m->scratch, &m->scratch_cap, need, sizeof *m->scratch) < 0))
            return -ENOMEM;
        if (t < g->n_gene_lists) {
            len = pl__masks_union(g, t, m->pert, k, m->buf[t], m->scratch);
        } else {
            /* RMR, from the reactions just computed. */
            const pl_list *rx = &m->removed[g->n_types + PL_LIST_REACTION];
            len = pl__masks_rmr(g, rx->v, rx->n, m->buf[t]);
        }
        m->removed[t].v = m->buf[t];
        m->removed[t].n = (uint32_t)len;
    }
    out->pert.v = m->pert;
    out->pert.n = k;
    out->n_lists = g->n_lists;
    out->removed = m->removed;
    return 0;
}
