/* pl_pyg_edges: one edge type of the PyG batch layout on the CPU.
 *
 * Sample i's kept edges are the runs of edge positions between its removed
 * positions, so the output is written run by run: a shifted copy of the
 * graph's src and dst arrays, one pass over the output (a loop the compiler
 * vectorises), no mask and no index array in between. */
#include "collate/lists.h"
#include "pertload.h"
#include "src/core/error.h"

/* out[k] = in[k] + shift for k < n. */
static void shifted(int64_t *restrict out, const int64_t *restrict in, uint64_t n,
                    int64_t shift)
{
    for (uint64_t k = 0; k < n; k++)
        out[k] = in[k] + shift;
}

/* The lists as pl_pyg_edges() requires them (pl__lists_check: sets below
 * n_edges, at most n_edges a sample), checked before anything is written:
 * then the output holds exactly n_samples * n_edges - ptr[n]. */
static int check_lists(uint64_t n_edges, const int64_t *removed, const int64_t *ptr,
                       uint32_t n_samples, pl_err *err)
{
    pl__lists_fault f;
    switch (pl__lists_check(removed, 8, ptr, n_samples, (uint64_t)ptr[n_samples], n_edges,
                            n_edges, 1, &f)) {
    case PL__LISTS_OK:
        return 0;
    case PL__LISTS_PTR0:
        return pl__err(err, PL_EPARSE, "pyg layout: ptr[0] is %lld, not 0", (long long)f.value);
    case PL__LISTS_COUNT:
        return pl__err(err, PL_EPARSE, "pyg layout: sample %u removes %lld of %llu edges",
                       f.sample, (long long)f.value, (unsigned long long)n_edges);
    case PL__LISTS_RANGE:
    case PL__LISTS_ORDER:
        return pl__err(err, PL_EPARSE, "pyg layout: sample %u: removed position %lld is %s",
                       f.sample, (long long)f.value,
                       f.rule == PL__LISTS_RANGE ? "out of range" : "not above the one before");
    default: /* DECREASES (LEN: n_pos is ptr[n]) */
        return pl__err(err, PL_EPARSE, "pyg layout: ptr decreases at sample %u", f.sample);
    }
}

int pl_pyg_edges(const int64_t *src, const int64_t *dst, uint64_t n_edges,
                 const int64_t *removed, const int64_t *ptr, uint32_t n_samples,
                 int64_t shift_src, int64_t shift_dst, int64_t *out_src, int64_t *out_dst,
                 int64_t *out_ptr, pl_err *err)
{
    PL_TRY(check_lists(n_edges, removed, ptr, n_samples, err));
    uint64_t k = 0;
    for (uint32_t i = 0; i < n_samples; i++) {
        out_ptr[i] = (int64_t)k;
        int64_t s = (int64_t)i * shift_src, d = (int64_t)i * shift_dst;
        uint64_t at = 0; /* the first edge not yet kept or skipped */
        for (int64_t j = ptr[i]; j < ptr[i + 1]; j++) {
            uint64_t p = (uint64_t)removed[j], n = p - at;
            shifted(out_src + k, src + at, n, s);
            shifted(out_dst + k, dst + at, n, d);
            k += n;
            at = p + 1;
        }
        shifted(out_src + k, src + at, n_edges - at, s);
        shifted(out_dst + k, dst + at, n_edges - at, d);
        k += n_edges - at;
    }
    out_ptr[n_samples] = (int64_t)k;
    return 0;
}
