/* pl_pyg_edges: one edge type of the PyG batch layout on the CPU.
 *
 * Sample i's kept edges are the runs of edge positions between its removed
 * positions, so the output is written run by run: a shifted copy of the
 * graph's src and dst arrays, one pass over the output (a loop the compiler
 * vectorises), no mask and no index array in between. */
#include "pertload.h"
#include "src/core/error.h"

/* out[k] = in[k] + shift for k < n. */
static void shifted(int64_t *restrict out, const int64_t *restrict in, uint64_t n,
                    int64_t shift)
{
    for (uint64_t k = 0; k < n; k++)
        out[k] = in[k] + shift;
}

/* The lists as pl_pyg_edges() requires them, checked before anything is
 * written: then the output holds exactly n_samples * n_edges - ptr[n]. */
static int check_lists(uint64_t n_edges, const int64_t *removed, const int64_t *ptr,
                       uint32_t n_samples, pl_err *err)
{
    PL_FAIL_IF(ptr[0] != 0, err, PL_EPARSE, "pyg layout: ptr[0] is %lld, not 0",
               (long long)ptr[0]);
    for (uint32_t i = 0; i < n_samples; i++) {
        int64_t lo = ptr[i], hi = ptr[i + 1];
        PL_FAIL_IF(hi < lo, err, PL_EPARSE, "pyg layout: ptr decreases at sample %u", i);
        PL_FAIL_IF((uint64_t)(hi - lo) > n_edges, err, PL_EPARSE,
                   "pyg layout: sample %u removes %lld of %llu edges", i,
                   (long long)(hi - lo), (unsigned long long)n_edges);
        for (int64_t j = lo; j < hi; j++) {
            int64_t p = removed[j];
            PL_FAIL_IF(p < 0 || (uint64_t)p >= n_edges || (j > lo && p <= removed[j - 1]), err,
                       PL_EPARSE, "pyg layout: sample %u: removed position %lld is %s", i,
                       (long long)p, p < 0 || (uint64_t)p >= n_edges ? "out of range"
                                                                     : "not above the one before");
        }
    }
    return 0;
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
