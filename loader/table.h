/* The sample table: every sample of the store decoded into memory once per
 * process (about 36 bytes a sample: 490 MB for 13.5M samples), so that any
 * epoch order reads it at random at memory speed.
 *
 * Blocks are read with the io backend (io_uring with registered, page-locked
 * buffers where available) double-buffered: while the blocks of one half of
 * the buffer are decompressed and checked, the reads of the next group are in
 * flight in the other half. */
#ifndef PL_LOADER_TABLE_H
#define PL_LOADER_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "pertload.h"

typedef struct pl__table {
    uint64_t n;
    uint32_t n_labels;
    uint64_t *ids;       /* [n] */
    uint64_t *gptr;      /* [n+1] into genes */
    int32_t *genes;      /* per sample sorted ascending, unique */
    float *labels;       /* [n * n_labels] */
    uint32_t *weight;    /* [n] deleted genes + positions (pl__masks_bound over every
                            kind): what a sample adds to a slot's lists, 4 bytes
                            each; saturated at UINT32_MAX */
    uint32_t max_genes;  /* most genes of one sample */
    uint64_t max_bound;  /* most positions of one sample, all kinds (pl__masks_bound) */
    uint64_t max_kind_bound; /* most positions of one sample in one kind */
    const char *backend; /* "io_uring" or "pread" */
    int locked;          /* read buffers page-locked (mlock, or by the allocator) */
    int registered;      /* read buffers registered with io_uring */
} pl__table;

/** Where the read buffers come from: page-locked memory of a GPU backend
 *  (cudaHostAlloc) when the loader uploads to a device. */
typedef struct pl__table_mem {
    void *ctx;
    int (*alloc)(void *ctx, size_t bytes, void **p, pl_err *err);
    void (*free)(void *ctx, void *p);
} pl__table_mem;

/** Decode the whole sample store of `db` and size it against graph `g`.
 *  The read buffers are aligned_alloc'd and mlock'd.
 *  @param io_mode PL_IO_* (loader/io.h). */
int pl__table_load(pl_db *db, const pl_graph *g, int io_mode, pl__table *t, pl_err *err);

/** pl__table_load() with read buffers from `mem` (page-locked by it); NULL
 *  `mem`: aligned_alloc and mlock. */
int pl__table_load_with(pl_db *db, const pl_graph *g, int io_mode, const pl__table_mem *mem,
                        pl__table *t, pl_err *err);

/** Release the table (safe on a zeroed struct). */
void pl__table_free(pl__table *t);

#endif
