/* Sample store (samples.pls): the block codec, a writer and a block decoder.
 *
 * File: a 64-byte header, then blocks. The header records the counts, and the
 * size and XXH64 of the whole of data.mdb (written last by build, checked at
 * open before LMDB reads any page: LMDB trusts its page structure, so a
 * damaged page could crash or loop it; values inside are checked again by
 * their own trailers). A block is a 32-byte header
 * {u32 magic "PLBK", u32 comp_size, u32 raw_size, u32 n_rows, u64 first_row,
 * u64 XXH64(compressed)} followed by zstd(raw). The raw block is columnar:
 *   u32 n_rows, u32 n_refs, u64 ids[n], u32 gptr[n+1], i32 genes[n_refs],
 *   f32 labels[n * n_labels]
 * Blocks hold PL_BLOCK_ROWS rows (the last one fewer); their index lives in
 * LMDB (meta/blocks) and is repeated in each block header.
 */
#ifndef PL_CORE_SSTORE_H
#define PL_CORE_SSTORE_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "dbformat.h"

#define PL_SSTORE_MAGIC "PLSAMPL1"
#define PL_SSTORE_HEADER 64u
#define PL_BLOCK_HEADER 32u
#define PL_BLOCK_MAGIC 0x4b424c50u /* "PLBK" */

/** Raw size of a block with `n` rows, `refs` gene references, `labels`
 *  columns; UINT64_MAX when it does not fit 64 bits (counts read from a
 *  corrupt database can be anything). */
static inline uint64_t pl__block_raw_size(uint64_t n, uint64_t refs, uint64_t labels)
{
    uint64_t lab, size;
    if (n > UINT64_MAX / 16 || refs > UINT64_MAX / 8 ||
        __builtin_mul_overflow(4 * n, labels, &lab) ||
        __builtin_add_overflow(12 + 12 * n + 4 * refs, lab, &size))
        return UINT64_MAX;
    return size;
}

typedef struct pl__sstore_writer {
    int fd;
    char *path;
    uint32_t n_labels;
    /* rows of the open block */
    uint32_t n;
    uint64_t *ids;
    uint32_t *gptr;
    float *labels;
    int32_t *genes;
    size_t n_refs;
    uint64_t cap_refs;
    /* output */
    void *buf;            /* block header + compressed bytes */
    uint64_t buf_cap;
    void *raw;
    uint64_t raw_cap;
    ZSTD_CCtx *cctx;
    uint64_t offset, n_samples;
    struct pl__block_entry *index;
    size_t n_blocks;
    uint64_t cap_blocks;
} pl__sstore_writer;

/** Create `path` (must not exist) for a store with `n_labels` label columns. */
int pl__sstore_create(pl__sstore_writer *w, const char *path, uint32_t n_labels,
                      pl_err *err);

/** Append one sample; `genes` holds `n` gene indices (n >= 1). */
int pl__sstore_add(pl__sstore_writer *w, uint64_t id, const int32_t *genes,
                   uint32_t n, const float *labels, pl_err *err);

/** Flush the last block, write the file header and fsync. The index stays in
 *  `w->index[0..n_blocks)` for the caller to store. */
int pl__sstore_finish(pl__sstore_writer *w, pl_err *err);

/** Release the writer (closes the file; does not delete it). */
void pl__sstore_writer_free(pl__sstore_writer *w);

/** A decoded block: arrays point into the caller's raw buffer. */
typedef struct pl__block_view {
    uint32_t n, n_refs;
    const uint64_t *ids;
    const uint32_t *gptr;   /* [n+1] */
    const int32_t *genes;   /* [n_refs] */
    const float *labels;    /* [n * n_labels] */
} pl__block_view;

/** Check a block read from the file at `e->offset` (header + compressed
 *  bytes, `len` = PL_BLOCK_HEADER + e->comp_size) against its index entry,
 *  decompress it into `raw` (8-byte aligned, >= e->raw_size bytes) and
 *  validate its structure (gene indices < n_genes, each sample >= 1 gene).
 *  @param which the block number, for messages. */
int pl__block_decode(const void *block, size_t len, const struct pl__block_entry *e,
                     uint64_t which, uint32_t n_labels, uint64_t n_genes,
                     ZSTD_DCtx *dctx, void *raw, pl__block_view *v, pl_err *err);

/** What the store's file header records. */
typedef struct pl__sstore_header {
    uint32_t version, n_labels, block_rows;
    uint64_t n_samples, n_blocks;
    uint64_t lmdb_bytes;    /**< size of data.mdb */
    uint64_t lmdb_checksum; /**< XXH64 (seed 0) of the whole of data.mdb */
} pl__sstore_header;

/** Parse the store's PL_SSTORE_HEADER-byte file header `hdr` into `out`,
 *  checking its magic, its own checksum and the format version.
 *  @return 0, PL_ECORRUPT or PL_EFORMAT with a message naming samples.pls. */
int pl__sstore_read_header(const void *hdr, pl__sstore_header *out, pl_err *err);

/** Check a parsed header's counts against the metadata. */
int pl__sstore_check_header(const pl__sstore_header *h, uint64_t n_samples,
                            uint64_t n_blocks, uint32_t n_labels, pl_err *err);

/** Record the size and XXH64 of the file `lmdb_path` in the header of the
 *  finished store at `path`, then fsync it. Build calls it once data.mdb is
 *  complete and closed.
 *  @return 0, or a negative code (the store's header unreadable or invalid,
 *  data.mdb unreadable, a failed write). */
int pl__sstore_seal(const char *path, const char *lmdb_path, pl_err *err);

/** Decode the sample-store index (the "meta"/"blocks" value, `len` bytes) of
 *  the store `m` describes: one entry per block, each of 1..PL_BLOCK_ROWS
 *  rows with the raw size of its rows, references and labels, rows and file
 *  offsets contiguous and covering exactly m->n_samples rows and
 *  m->samples_bytes bytes.
 *  @param out set to a new malloc'd copy of the entries (free() it). */
int pl__blocks_decode(const void *v, size_t len, const struct pl__meta *m,
                      struct pl__block_entry **out, pl_err *err);

#endif
