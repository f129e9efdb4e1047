/* The open database handle, shared by the run-time stages. */
#ifndef PL_CORE_DB_H
#define PL_CORE_DB_H

#include <lmdb.h>
#include <zstd.h>

#include "dbformat.h"
#include "sstore.h"
#include "strtab.h"

struct pl_db {
    char *path;
    MDB_env *env;
    MDB_txn *txn;                  /* one read transaction for the handle's life */
    MDB_dbi dbi[PL_DBI_COUNT];
    struct pl__meta meta;
    pl_db_info info;
    const char **names[5];         /* genes, types, labels, reactions, metabolites */
    pl_strtab gene_index;
    struct pl__block_entry *blocks; /* [n_blocks], copied out of the map */
    int samples_fd;
    int payload_fd;                /* payload.npy checked at open, or -1 */
    void *feat_copy[PL_N_NODE_TYPES]; /* pl_db_features: aligned copies, or NULL */
    /* pl_db_sample(): one cached decoded block */
    ZSTD_DCtx *dctx;
    void *blockbuf, *raw;
    size_t blockbuf_cap, raw_cap;
    int64_t cached_block;
    pl__block_view view;
};

/** The database fingerprint (pl_db_info.db_fingerprint; how: dbident.c)
 *  of the open handle's sub-databases into `*out`.
 *  @return 0, or PL_ECORRUPT / an LMDB error naming the database. */
int pl__db_fingerprint(pl_db *db, uint64_t *out, pl_err *err);

/** Read the category store's levels text into db->info.categories and
 *  check it against meta.n_categories (dbcats.c). @return 0, PL_ECORRUPT. */
int pl__db_open_cats(pl_db *db, pl_err *err);

/** Category column `c`'s code of every sample row, checked against its
 *  level count `n_levels`, into a new malloc'd array `*codes` of n_samples
 *  (+1, never NULL on success). @return 0, PL_ECORRUPT, -ENOMEM. */
int pl__db_cat_codes(pl_db *db, uint32_t c, uint64_t n_levels, uint32_t **codes, pl_err *err);

/** Read the whole compressed block `b` into `db->blockbuf` and decode it into
 *  `db->raw` (used by pl_db_sample and pl_db_verify). */
int pl__db_load_block(pl_db *db, uint64_t b, pl_err *err);

#endif
