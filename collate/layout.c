/* pl_layout_*: the batch layouts on the host (the twin of the kernels, one
 * loop over the same elements) or on a CUDA device (layout_cuda.cu). */
#include "collate/layout_ops.h"
#include "collate/lists.h"
#include "pl_config.h"
#include "src/core/error.h"

/* Every element of the operation, in order, on this thread. */
static void layout_host(const pl__layout_args *a)
{
    if (a->op == PL__LAYOUT_UNION || a->op == PL__LAYOUT_ROWS) {
        uint64_t size = pl__layout_size(a);
        for (uint64_t k = 0; k < size; k++) {
            if (a->op == PL__LAYOUT_UNION)
                pl__layout_union_at(a, k);
            else
                pl__layout_rows_at(a, k);
        }
    } else {
        for (uint32_t b = 0; b < a->l.n; b++)
            for (uint64_t v = 0; v < a->per; v++) {
                if (a->op == PL__LAYOUT_TILE)
                    pl__layout_tile_at(a, b, v);
                else
                    pl__layout_nodes_at(a, b, v);
            }
    }
    if (a->out_ptr)
        for (uint32_t b = 0; b <= a->l.n; b++)
            pl__layout_ptr_at(a, b);
}

#if !PL_HAVE_CUDA
int pl__layout_cuda(const pl__layout_args *a, int device, void *stream, pl_err *err)
{
    (void)a, (void)stream;
    return pl__err(err, PL_EUSAGE, "layout on CUDA device %d: libpertload was built without "
                   "the CUDA toolkit", device);
}
#endif

/* The checks every operation shares, then the host twin or the device. */
static int layout_run(const pl__layout_args *a, int device, void *stream, pl_err *err)
{
    PL_FAIL_IF(a->op == PL__LAYOUT_UNION && a->l.len > (uint64_t)a->l.n * a->per, err,
               PL_EUSAGE, "layout: %llu removed positions of %u samples of %llu edges",
               (unsigned long long)a->l.len, a->l.n, (unsigned long long)a->per);
    PL_FAIL_IF(a->l.len && (!a->l.pos || !a->l.ptr), err, PL_EUSAGE, "layout: no lists");
    if (pl__layout_size(a) == 0 && !a->out_ptr)
        return 0;
    if (device < 0) {
        layout_host(a);
        return 0;
    }
    return pl__layout_cuda(a, device, stream, err);
}

int pl_layout_cuda_built(void)
{
    return PL_HAVE_CUDA;
}

/* The inputs union and tile share: the graph's edges (n_edges a sample, with
 * `attr` gathered alike when given), the batch's lists and the node shifts. */
static pl__layout_args edge_args(int op, const int64_t *src, const int64_t *dst,
                                 const float *attr, uint64_t n_edges, const int64_t *pos,
                                 const int64_t *ptr, uint32_t n, uint64_t n_pos,
                                 int64_t shift_src, int64_t shift_dst)
{
    return (pl__layout_args){.op = op, .l = {pos, ptr, n, n_pos}, .per = n_edges, .src = src,
                             .dst = dst, .attr = attr, .shift_src = shift_src,
                             .shift_dst = shift_dst};
}

int pl_layout_union(int device, void *stream, const int64_t *src, const int64_t *dst,
                    const float *attr, uint64_t n_edges, const int64_t *pos, const int64_t *ptr,
                    uint32_t n, uint64_t n_pos, int64_t shift_src, int64_t shift_dst,
                    int64_t *out_src, int64_t *out_dst, float *out_attr, int64_t *out_ptr,
                    pl_err *err)
{
    pl__layout_args a = edge_args(PL__LAYOUT_UNION, src, dst, attr, n_edges, pos, ptr, n, n_pos,
                                  shift_src, shift_dst);
    a.out_src = out_src;
    a.out_dst = out_dst;
    a.out_attr = attr ? out_attr : NULL;
    a.out_ptr = out_ptr;
    PL_FAIL_IF(n_edges && (!src || !dst), err, PL_EUSAGE, "layout union: no edge arrays");
    PL_FAIL_IF(n_pos < (uint64_t)n * n_edges && (!out_src || !out_dst), err, PL_EUSAGE,
               "layout union: no output arrays");
    return layout_run(&a, device, stream, err);
}

int pl_layout_tile(int device, void *stream, const int64_t *src, const int64_t *dst,
                   const float *attr, uint64_t n_edges, const int64_t *pos, const int64_t *ptr,
                   uint32_t n, uint64_t n_pos, int64_t shift_src, int64_t shift_dst,
                   int64_t *out_src, int64_t *out_dst, float *out_attr, uint8_t *out_kept,
                   pl_err *err)
{
    pl__layout_args a = edge_args(PL__LAYOUT_TILE, src, dst, attr, n_edges, pos, ptr, n, n_pos,
                                  shift_src, shift_dst);
    a.out_src = src ? out_src : NULL;
    a.out_dst = src ? out_dst : NULL;
    a.out_attr = attr ? out_attr : NULL;
    a.out_kept = out_kept;
    PL_FAIL_IF(src && (!dst || (n && n_edges && (!out_src || !out_dst))), err, PL_EUSAGE,
               "layout tile: edge arrays incomplete");
    return layout_run(&a, device, stream, err);
}

int pl_layout_nodes(int device, void *stream, uint64_t n_nodes, const int64_t *pos,
                    const int64_t *ptr, uint32_t n, uint64_t n_pos, int64_t *out_batch,
                    int64_t *out_id, uint8_t *out_kept, uint8_t *out_removed, int64_t *out_ptr,
                    pl_err *err)
{
    pl__layout_args a = {.op = PL__LAYOUT_NODES, .l = {pos, ptr, n, n_pos}, .per = n_nodes,
                         .out_ptr = out_ptr, .out_batch = out_batch, .out_id = out_id,
                         .out_kept = out_kept, .out_removed = out_removed};
    return layout_run(&a, device, stream, err);
}

int pl_layout_rows(int device, void *stream, const int64_t *pos, const int64_t *ptr,
                   uint32_t n, uint64_t n_pos, int64_t shift, int64_t *out_rows,
                   int64_t *out_shifted, pl_err *err)
{
    pl__layout_args a = {.op = PL__LAYOUT_ROWS, .l = {pos, ptr, n, n_pos}, .shift_src = shift,
                         .out_src = out_rows, .out_dst = out_shifted};
    PL_FAIL_IF(n == 0 && n_pos, err, PL_EUSAGE, "layout rows: positions of no sample");
    return layout_run(&a, device, stream, err);
}

pl__lists_rule pl__lists_check(const void *pos, int pos_bytes, const int64_t *ptr, uint32_t n,
                               uint64_t n_pos, uint64_t limit, uint64_t max_count, int sets,
                               pl__lists_fault *f)
{
    *f = (pl__lists_fault){PL__LISTS_OK, 0, 0};
    if (ptr[0] != 0)
        *f = (pl__lists_fault){PL__LISTS_PTR0, 0, ptr[0]};
    else if ((uint64_t)ptr[n] != n_pos) /* also a negative ptr[n] */
        *f = (pl__lists_fault){PL__LISTS_LEN, n, ptr[n]};
    for (uint32_t b = 0; b < n && !f->rule; b++) {
        if (ptr[b + 1] < ptr[b])
            *f = (pl__lists_fault){PL__LISTS_DECREASES, b, 0};
        else if ((uint64_t)(ptr[b + 1] - ptr[b]) > max_count) /* both >= 0 */
            *f = (pl__lists_fault){PL__LISTS_COUNT, b, ptr[b + 1] - ptr[b]};
    }
    /* ptr rises from 0 to n_pos: the positions, every one in range, then
     * with sets each sample's in order. */
    const int32_t *p32 = (const int32_t *)pos;
    const int64_t *p64 = (const int64_t *)pos;
#define PL__AT(j) (pos_bytes == 4 ? (int64_t)p32[j] : p64[j])
    for (uint32_t b = 0; b < n && !f->rule; b++)
        for (int64_t j = ptr[b]; j < ptr[b + 1] && !f->rule; j++)
            if (PL__AT(j) < 0 || (uint64_t)PL__AT(j) >= limit)
                *f = (pl__lists_fault){PL__LISTS_RANGE, b, PL__AT(j)};
    for (uint32_t b = 0; b < n && sets && !f->rule; b++)
        for (int64_t j = ptr[b] + 1; j < ptr[b + 1] && !f->rule; j++)
            if (PL__AT(j) <= PL__AT(j - 1))
                *f = (pl__lists_fault){PL__LISTS_ORDER, b, PL__AT(j)};
#undef PL__AT
    return f->rule;
}

int pl_layout_check(const void *pos, int pos_bytes, const int64_t *ptr, uint32_t n,
                    uint64_t n_pos, uint64_t limit, int sets, pl_err *err)
{
    PL_FAIL_IF(pos_bytes != 4 && pos_bytes != 8, err, PL_EUSAGE,
               "positions of %d bytes (4 or 8)", pos_bytes);
    pl__lists_fault f = {PL__LISTS_PTR0, 0, 0};
    switch (ptr ? pl__lists_check(pos, pos_bytes, ptr, n, n_pos, limit, UINT64_MAX, sets, &f)
                : f.rule) {
    case PL__LISTS_OK:
        return 0;
    case PL__LISTS_DECREASES:
        return pl__err(err, PL_EPARSE, "ptr decreases");
    case PL__LISTS_RANGE:
        return pl__err(err, PL_EPARSE, "holds a position outside 0..%lld", (long long)limit - 1);
    case PL__LISTS_ORDER:
        return pl__err(err, PL_EPARSE, "positions of a sample are not increasing");
    default: /* PTR0, LEN (COUNT: no bound here) */
        return pl__err(err, PL_EPARSE, "ptr does not index its %llu positions",
                       (unsigned long long)n_pos);
    }
}
