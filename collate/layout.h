/* The batch layouts built where the model runs: one algorithm for the host
 * and the GPU (this header compiles as C and as CUDA C++).
 *
 * Every output element is computed on its own from the shared graph's arrays
 * and the batch's removed lists (each sample's positions sorted and unique,
 * ptr [n + 1]), so a layout is one pass over its output with no scan, no
 * mask in between and no size read back: the sizes follow from counts the
 * host already has (n samples, E edges, P = ptr[n] removed positions).
 *
 * - union (layout "pyg"): the kept edges of every sample, sample-major. The
 *   first output edge of sample b is b * E - ptr[b] (the kept edges before
 *   it), so output k belongs to the last sample whose first edge is at most
 *   k, and is that sample's r-th kept edge, r = k - first: position
 *   r + #{j : L[j] - j <= r} of the graph's edges (L the sample's list).
 * - tile (layout "lazy"): every edge of every sample with a kept flag.
 * - nodes: a node type's per-sample copies (batch, n_id, kept flag) and ptr.
 * - rows: the sample of each entry of a list, and the entry shifted into the
 *   batch's node numbering.
 *
 * Indices are clamped to the arrays they address, so lists that break the
 * rules (checked by the caller before the copy) give a wrong layout, never an
 * access outside the arrays. */
#ifndef PL_COLLATE_LAYOUT_H
#define PL_COLLATE_LAYOUT_H

#include <stdint.h>

#if defined(__CUDACC__)
#define PL__LAYOUT_HD __host__ __device__
#else
#define PL__LAYOUT_HD
#endif

/** A batch's removed lists of one kind: sample b's are pos[ptr[b] ..
 *  ptr[b+1]), n samples, len = ptr[n] positions in all; ptr NULL: none. */
typedef struct pl__lists {
    const int64_t *pos;
    const int64_t *ptr;
    uint32_t n;
    uint64_t len;
} pl__lists;

/** ptr[b] clamped to the positions there are. */
PL__LAYOUT_HD static inline uint64_t pl__lists_at(const pl__lists *l, uint32_t b)
{
    if (!l->ptr)
        return 0; /* no lists: nothing removed */
    int64_t v = l->ptr[b];
    return v < 0 ? 0 : (uint64_t)v > l->len ? l->len : (uint64_t)v;
}

/** Sample b's list: *first and its length. */
PL__LAYOUT_HD static inline uint64_t pl__lists_of(const pl__lists *l, uint32_t b,
                                                  uint64_t *first)
{
    uint64_t lo = pl__lists_at(l, b), hi = pl__lists_at(l, b + 1);
    *first = lo;
    return hi > lo ? hi - lo : 0;
}

/** Whether position v is in the sorted list L[0 .. m). */
PL__LAYOUT_HD static inline int pl__layout_removed(const int64_t *L, uint64_t m, int64_t v)
{
    uint64_t lo = 0, hi = m;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (L[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m && L[lo] == v;
}

/** First output edge of sample b in the union: b * E minus the removed
 *  positions of the samples before it. */
PL__LAYOUT_HD static inline int64_t pl__union_first(const pl__lists *l, uint64_t E, uint32_t b)
{
    return (int64_t)b * (int64_t)E - (int64_t)pl__lists_at(l, b);
}

/** The sample of union output k: the last b < n whose first edge is <= k. */
PL__LAYOUT_HD static inline uint32_t pl__union_sample(const pl__lists *l, uint64_t E, uint64_t k)
{
    uint32_t lo = 0, hi = l->n;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (pl__union_first(l, E, mid) <= (int64_t)k)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/** The graph edge of union output k, and (*sample) its sample. */
PL__LAYOUT_HD static inline uint64_t pl__union_edge(const pl__lists *l, uint64_t E, uint64_t k,
                                                    uint32_t *sample)
{
    uint32_t b = pl__union_sample(l, E, k);
    int64_t r0 = (int64_t)k - pl__union_first(l, E, b);
    uint64_t r = r0 < 0 ? 0 : (uint64_t)r0, first, m = pl__lists_of(l, b, &first);
    const int64_t *L = l->pos + first;
    uint64_t lo = 0, hi = m; /* #{j : L[j] - j <= r} */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (L[mid] - (int64_t)mid <= (int64_t)r)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t e = r + lo;
    *sample = b;
    return e < E ? e : E - 1;
}

/** Whether edge (or node) v of sample b is kept: not in b's list. */
PL__LAYOUT_HD static inline int pl__layout_kept(const pl__lists *l, uint32_t b, int64_t v)
{
    uint64_t first, m = pl__lists_of(l, b, &first);
    return !pl__layout_removed(l->pos + first, m, v);
}

/** The sample of list entry j (j < len): the last b < n with ptr[b] <= j. */
PL__LAYOUT_HD static inline uint32_t pl__list_sample(const pl__lists *l, uint64_t j)
{
    uint32_t lo = 0, hi = l->n;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (pl__lists_at(l, mid) <= j)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

#endif
