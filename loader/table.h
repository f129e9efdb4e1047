/* The sample table: every sample of the store decoded into memory (about 36
 * bytes a sample: 466 MiB for 13.5M samples), so that any epoch order reads it
 * at random at memory speed.
 *
 * Private or shared: pl__table_load() decodes into this process's heap;
 * pl__table_load_shared() (table_shared.h, the default of `pertload serve`)
 * decodes once per node into a read-only POSIX shared-memory segment that
 * every later process over the same database maps, so that the ranks of one
 * node hold one table between them. The segment:
 *   - is named /dev/shm/pertload-table-UID-HASH, HASH an XXH64 of the
 *     database's identity: st_dev, st_ino, size and mtime of samples.pls,
 *     the samples.pls header (sizes and XXH64 of data.mdb), the metadata
 *     (with the gene and edge fingerprints) and the block index (an XXH64 per
 *     block of samples); the header repeats the identity and an attach
 *     compares it whole, so a database replaced at the same path gets a
 *     segment of its own and never a stale table;
 *   - is built under a name with 64 random bits (pertload-table-...-new-RANDOM),
 *     exclusively locked (flock LOCK_EX) and sized before it is linked under
 *     its name, so that whoever finds the name finds the creator's lock: a
 *     later process waits on the lock (LOCK_SH), never on a dead creator (the
 *     kernel drops the lock of a dead process); a header that is still not
 *     complete once the lock is granted is a creator that died halfway, and
 *     that process removes the name and builds the table again;
 *   - is used only when it is this user's, mode 0600 or 0400 (src/core/shm.h), its
 *     size is the header's, and the header's magic, version, identity, layout
 *     and XXH64 checksum hold, and the data's XXH64 matches: a truncated or
 *     altered segment is an error (PL_ECORRUPT), never a SIGBUS;
 *   - is mapped read-only (the creator write-protects its mapping and sets
 *     mode 0400 once done); every user holds LOCK_SH while it maps it, and the
 *     last one to go (whose LOCK_EX | LOCK_NB succeeds) removes it; segments of
 *     dead processes (no lock held) are removed by the next creator.
 * Whoever can write a segment is the same user, who could alter the process
 * anyway: the checks catch corruption and accidents, not that user.
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
    /* Shared tables (table_shared.h); shm_base NULL for a private one. */
    void (*release)(struct pl__table *t); /* frees a shared table; NULL: private */
    void *shm_base;      /* the read-only mapping of the segment */
    size_t shm_bytes;
    int shm_fd;          /* holds LOCK_SH while mapped */
    int shm_created;     /* 1: this process built it; 0: attached */
    char shm_path[128];
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

/** Gene references of the whole store (the genes array's capacity). */
uint64_t pl__table_refs(const pl_db *db);

/** Decode the store into the arrays already in `t` (n and n_labels set, ids
 *  [n], gptr [n+1] zeroed, genes [pl__table_refs()], labels [n*n_labels],
 *  weight [n]); fills the maxima and the read path's fields. The arrays are
 *  not released on failure. */
int pl__table_decode(pl_db *db, const pl_graph *g, int io_mode, const pl__table_mem *mem,
                     pl__table *t, pl_err *err);

/** Release the table (safe on a zeroed struct). */
void pl__table_free(pl__table *t);

#endif
