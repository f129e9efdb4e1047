/* The layout operations behind pl_layout_*: their arguments in one struct,
 * the host twin that computes them element by element, and the CUDA launcher
 * (layout_cuda.cu, built with the toolkit) that computes the same elements
 * with one kernel launch per operation. */
#ifndef PL_COLLATE_LAYOUT_OPS_H
#define PL_COLLATE_LAYOUT_OPS_H

#include <stdint.h>

#include "collate/layout.h"
#include "pertload.h"

/** The operations (pertload_ring.h says what each writes). */
enum { PL__LAYOUT_UNION, PL__LAYOUT_TILE, PL__LAYOUT_NODES, PL__LAYOUT_ROWS };

/** One operation's arguments; NULL outputs are not written. Small enough to
 *  be a kernel parameter. */
typedef struct pl__layout_args {
    int op;
    pl__lists l;              /**< the batch's lists of this kind */
    uint64_t per;             /**< edges (union, tile) or nodes (nodes) per sample */
    const int64_t *src, *dst; /**< the graph's edge ends (union, tile) */
    const float *attr;        /**< an edge attribute gathered alike, or NULL */
    int64_t shift_src, shift_dst; /**< node offsets per sample (rows: shift_src) */
    int64_t *out_src, *out_dst;   /**< edge ends (union, tile); rows, shifted (rows) */
    float *out_attr;
    int64_t *out_ptr;         /**< union, nodes: [n + 1] */
    int64_t *out_batch, *out_id; /**< nodes: each copy's sample and graph node */
    uint8_t *out_kept, *out_removed; /**< tile, nodes: 1 = kept; nodes: its negation */
} pl__layout_args;

/** Elements the operation writes (union: n * per - len; tile, nodes:
 *  n * per; rows: len). */
static inline uint64_t pl__layout_size(const pl__layout_args *a)
{
    switch (a->op) {
    case PL__LAYOUT_UNION:
        return (uint64_t)a->l.n * a->per - a->l.len;
    case PL__LAYOUT_ROWS:
        return a->l.len;
    default:
        return (uint64_t)a->l.n * a->per;
    }
}

/** Union output k. */
PL__LAYOUT_HD static inline void pl__layout_union_at(const pl__layout_args *a, uint64_t k)
{
    uint32_t b;
    uint64_t e = pl__union_edge(&a->l, a->per, k, &b);
    a->out_src[k] = a->src[e] + (int64_t)b * a->shift_src;
    a->out_dst[k] = a->dst[e] + (int64_t)b * a->shift_dst;
    if (a->out_attr)
        a->out_attr[k] = a->attr[e];
}

/** Tile element e of sample b. */
PL__LAYOUT_HD static inline void pl__layout_tile_at(const pl__layout_args *a, uint32_t b,
                                                    uint64_t e)
{
    uint64_t i = (uint64_t)b * a->per + e;
    if (a->out_src) {
        a->out_src[i] = a->src[e] + (int64_t)b * a->shift_src;
        a->out_dst[i] = a->dst[e] + (int64_t)b * a->shift_dst;
    }
    if (a->out_attr)
        a->out_attr[i] = a->attr[e];
    if (a->out_kept)
        a->out_kept[i] = (uint8_t)pl__layout_kept(&a->l, b, (int64_t)e);
}

/** Node v of sample b. */
PL__LAYOUT_HD static inline void pl__layout_nodes_at(const pl__layout_args *a, uint32_t b,
                                                     uint64_t v)
{
    uint64_t i = (uint64_t)b * a->per + v;
    if (a->out_batch)
        a->out_batch[i] = b;
    if (a->out_id)
        a->out_id[i] = (int64_t)v;
    if (a->out_kept || a->out_removed) {
        uint8_t kept = (uint8_t)pl__layout_kept(&a->l, b, (int64_t)v);
        if (a->out_kept)
            a->out_kept[i] = kept;
        if (a->out_removed)
            a->out_removed[i] = (uint8_t)!kept;
    }
}

/** Entry j of a list: its sample, and itself shifted into the batch's nodes. */
PL__LAYOUT_HD static inline void pl__layout_rows_at(const pl__layout_args *a, uint64_t j)
{
    uint32_t b = pl__list_sample(&a->l, j);
    if (a->out_src)
        a->out_src[j] = b;
    if (a->out_dst)
        a->out_dst[j] = a->l.pos[j] + (int64_t)b * a->shift_src;
}

/** out_ptr[b], b <= n: the union's first edge of sample b, or b * per. */
PL__LAYOUT_HD static inline void pl__layout_ptr_at(const pl__layout_args *a, uint32_t b)
{
    a->out_ptr[b] = a->op == PL__LAYOUT_UNION ? pl__union_first(&a->l, a->per, b)
                                              : (int64_t)b * (int64_t)a->per;
}

/** The operation on the device `device`, queued on `stream` (a cudaStream_t
 *  of that device; NULL: the legacy default stream). Only the launch's own
 *  errors are reported. */
int pl__layout_cuda(const pl__layout_args *a, int device, void *stream, pl_err *err);

#endif
