/* Dense mask expansion of a collated slot: one algorithm for the CPU and the
 * GPU (this header compiles as C and as CUDA C++).
 *
 * A job expands, for the n samples of a slot, every removed-position list
 * (each list kind, then the genes from perturbation_indices) into dense rows
 * of kept = 1 / removed = 0: bool (one byte per position) or packed bits
 * (uint64 words, LSB first, bits past the row's length zero). The rows of one
 * list lie back to back ([n, row bytes]) in a mask region beside the slot.
 *
 * The work is cut into tiles of PL__EXPAND_TILE bytes of one row; the tiles
 * of a batch form one flat grid (sample, list, tile), so one CUDA launch (one
 * block per tile) covers every list of every sample. A tile is expanded in two
 * phases: fill its bytes with ones, then clear the removed positions that fall
 * in it, found by binary search in the row's sorted list. The phases touch
 * only the tile's own bytes, so tiles are independent. */
#ifndef PL_LOADER_EXPAND_H
#define PL_LOADER_EXPAND_H

#include <stdint.h>
#include <string.h>

#include "pertload.h"

#if defined(__CUDACC__)
#define PL__HD __host__ __device__
#else
#define PL__HD
#endif

/** Bytes of a row a tile covers (a multiple of 8). */
#define PL__EXPAND_TILE 16384u

/** Lists a job can hold: every list kind, then the genes. */
#define PL__EXPAND_MAX (PL_MAX_TYPES + 4)

/** One list of a job. */
typedef struct pl__expand_list {
    uint64_t removed; /**< slot offset of the positions (int32, sorted per sample) */
    uint64_t ptr;     /**< slot offset of the row pointers (int64 [n + 1]) */
    uint64_t out;     /**< mask region offset of the rows (8-byte aligned) */
    uint32_t len;     /**< positions in a row */
    uint32_t tiles;   /**< tiles of a row */
    uint32_t first;   /**< tiles of the lists before this one, per sample */
    uint32_t reserved;
} pl__expand_list;

/** A batch's expansion; small enough to be a CUDA kernel parameter. */
typedef struct pl__expand_job {
    uint32_t dense;   /**< PL_MASK_BITS or PL_MASK_BOOL */
    uint32_t n;       /**< samples: rows of every list */
    uint32_t n_lists; /**< lists used in `list` */
    uint32_t tiles;   /**< tiles of one sample, all lists */
    pl__expand_list list[PL__EXPAND_MAX];
} pl__expand_job;

/** Bytes of one row of `len` positions. */
PL__HD static inline uint64_t pl__expand_row_bytes(uint32_t dense, uint64_t len)
{
    return dense == PL_MASK_BITS ? 8 * ((len + 63) / 64) : len;
}

/** Tiles of the whole grid. */
PL__HD static inline uint64_t pl__expand_grid(const pl__expand_job *j)
{
    return (uint64_t)j->n * j->tiles;
}

/** Blocks of the launch of `grid` tiles (grid >= 1): `gx` by `gy`, gx at
 *  most 65,535 (so that grids past it run the 2-D indexing the tests reach)
 *  and the rows balanced, so fewer than gy blocks idle. 0 when gy would pass
 *  its own limit of 65,535. */
PL__HD static inline int pl__expand_shape(uint64_t grid, uint32_t *gx, uint32_t *gy)
{
    uint64_t rows = (grid + 65534) / 65535;
    if (rows > 65535)
        return 0;
    *gy = (uint32_t)rows;
    *gx = (uint32_t)((grid + rows - 1) / rows);
    return 1;
}

/** The piece of work one tile does. */
typedef struct pl__expand_tile {
    unsigned char *row; /**< the row's first byte */
    uint64_t b0, b1;    /**< bytes [b0, b1) of the row */
    uint32_t len;       /**< positions in the row */
    int64_t s, e;       /**< removed positions of the tile: list indices [s, e) */
    const int32_t *pos; /**< the list's positions */
} pl__expand_tile;

/** First index i in [lo, hi) with v[i] >= x (hi when none). */
PL__HD static inline int64_t pl__expand_lower(const int32_t *v, int64_t lo, int64_t hi, int64_t x)
{
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if ((int64_t)v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/** Locate tile `t` of the grid (t < pl__expand_grid(j)).
 *  @param slot the slot the job was made from (this side's copy)
 *  @param masks the mask region (this side's) */
PL__HD static inline pl__expand_tile pl__expand_locate(const pl__expand_job *j, uint64_t t,
                                                       const unsigned char *slot,
                                                       unsigned char *masks)
{
    pl__expand_tile w;
    uint32_t i = (uint32_t)(t / j->tiles), r = (uint32_t)(t % j->tiles), k = 0;
    while (k + 1 < j->n_lists && r >= j->list[k + 1].first)
        k++;
    const pl__expand_list *l = &j->list[k];
    uint64_t row = pl__expand_row_bytes(j->dense, l->len);
    w.row = masks + l->out + row * i;
    w.b0 = (uint64_t)(r - l->first) * PL__EXPAND_TILE;
    w.b1 = w.b0 + PL__EXPAND_TILE < row ? w.b0 + PL__EXPAND_TILE : row;
    w.len = l->len;
    /* positions of the tile: bytes x 8 for bits */
    uint64_t p0 = j->dense == PL_MASK_BITS ? 8 * w.b0 : w.b0;
    uint64_t p1 = j->dense == PL_MASK_BITS ? 8 * w.b1 : w.b1;
    const int64_t *ptr = (const int64_t *)(slot + l->ptr);
    w.pos = (const int32_t *)(slot + l->removed);
    w.s = pl__expand_lower(w.pos, ptr[i], ptr[i + 1], (int64_t)p0);
    w.e = pl__expand_lower(w.pos, w.s, ptr[i + 1], (int64_t)p1);
    return w;
}

/** Phase 1: the tile's bytes to kept; a bits row's last word keeps only the
 *  bits of real positions. Thread `tid` of `nthr` does its share. */
PL__HD static inline void pl__expand_fill(const pl__expand_job *j, const pl__expand_tile *w,
                                          uint32_t tid, uint32_t nthr)
{
    if (j->dense == PL_MASK_BITS) {
        uint64_t *words = (uint64_t *)w->row;
        uint64_t last = (w->len + 63) / 64 - 1;
        uint64_t tail = w->len % 64 ? (UINT64_C(1) << (w->len % 64)) - 1 : ~UINT64_C(0);
        for (uint64_t x = w->b0 / 8 + tid; x < w->b1 / 8; x += nthr)
            words[x] = x == last ? tail : ~UINT64_C(0);
    } else {
#if defined(__CUDA_ARCH__)
        for (uint64_t x = w->b0 + tid; x < w->b1; x += nthr)
            w->row[x] = 1;
#else
        (void)tid;
        (void)nthr;
        memset(w->row + w->b0, 1, w->b1 - w->b0);
#endif
    }
}

/** Phase 2 (after every thread's phase 1): clear the tile's removed
 *  positions. Positions are unique per row, but several share a word of a
 *  bits row, so word updates are atomic on the GPU. */
PL__HD static inline void pl__expand_scatter(const pl__expand_job *j, const pl__expand_tile *w,
                                             uint32_t tid, uint32_t nthr)
{
    if (j->dense == PL_MASK_BITS) {
        uint64_t *words = (uint64_t *)w->row;
        for (int64_t x = w->s + tid; x < w->e; x += nthr) {
            uint32_t p = (uint32_t)w->pos[x];
#if defined(__CUDA_ARCH__)
            atomicAnd((unsigned long long *)&words[p >> 6], ~(1ULL << (p & 63)));
#else
            words[p >> 6] &= ~(UINT64_C(1) << (p & 63));
#endif
        }
    } else {
        for (int64_t x = w->s + tid; x < w->e; x += nthr)
            w->row[(uint32_t)w->pos[x]] = 0;
    }
}

/** Make the job of a collated slot (dense none) of a database with
 *  `n_types` edge types named `type_names` and `n_lists` list kinds.
 *  @param lens positions per list kind ([n_lists]), then the gene count
 *  @param out mask region offsets, per list kind then the genes ([n_lists + 1])
 *  @return 0, or PL_ECORRUPT when the slot lacks an array of the layout. */
int pl__expand_job_init(pl__expand_job *j, const void *slot, uint32_t dense, uint32_t n_types,
                        const char *const *type_names, uint32_t n_lists, const uint64_t *lens,
                        const uint64_t *out, pl_err *err);

/** Run a job on the CPU, tile by tile (the kernel's algorithm, one thread). */
void pl__expand_run(const pl__expand_job *j, const unsigned char *slot, unsigned char *masks);

#endif
