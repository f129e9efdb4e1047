/* A small synthetic database for the loader and upload tests (pertload synth
 * at a reduced scale, built with pl_build), and a brute-force oracle of its
 * masks (DESIGN section 2) that scans the edge arrays stored in it.
 * Failures abort with a message: this file serves Criterion tests and plain
 * programs alike. */
#ifndef PL_TESTDB_H
#define PL_TESTDB_H

#include <stddef.h>
#include <stdint.h>

#include "loader/expand.h"
#include "loader/table.h"
#include "pertload.h"

typedef struct pl_test_db {
    char *dir;                        /**< temporary directory of inputs and database */
    char path[4096];                  /**< the database */
    pl_db *db;                        /**< open on it */
    uint32_t n_types, n_lists;
    uint64_t n_genes, n_samples, n_rx;
    uint64_t len[PL_MAX_TYPES + 4];   /**< positions per list kind, then genes */
    int32_t *edges[PL_MAX_TYPES];     /**< int32 [2, E_t] per edge type */
    int32_t *gpr, *rmr;               /**< int32 [2, n_gpr], [2, n_rmr] (NULL without) */
    char **rule;                      /**< [n_rx] rule text by reaction under the reaction
                                           rule gpr (NULL for none), else NULL */
    unsigned char *payload;           /**< payload rows [n_samples, payload_row_bytes] */
    uint64_t payload_row_bytes;
    /* pl_test_db_load() */
    pl_graph *g;
    pl__table table;
    unsigned char *want;              /**< pl_test_collate()'s slot */
    uint64_t want_cap;
    int32_t *scratch;
    unsigned char *P, *row;           /**< scratch of the mask checks */
} pl_test_db;

/** Edge types the next databases get at least (0: synth's): the types
 *  past synth's reuse the first type's file under the names copy0, copy1...
 *  (up to PL_MAX_TYPES, as many lists as a batch can hold). */
extern uint32_t pl_test_db_types;

/** Generate and build a database in a fresh temporary directory. */
void pl_test_db_make(pl_test_db *t, uint64_t n_genes, uint64_t n_samples, double scale,
                     uint32_t payload_dim, uint64_t seed);

/** A sample of pl_test_db_make_outliers(): row `row` deletes the first
 *  n_genes genes of the gene list (all of them when n_genes >= the genes). */
typedef struct pl_test_outlier {
    uint64_t row;
    uint32_t n_genes;
} pl_test_outlier;

/** pl_test_db_make() with the deleted genes of some samples replaced before
 *  the build. */
void pl_test_db_make_outliers(pl_test_db *t, uint64_t n_genes, uint64_t n_samples, double scale,
                              uint32_t payload_dim, uint64_t seed, const pl_test_outlier *out,
                              uint32_t n_out);

/** Close and remove everything. */
void pl_test_db_free(pl_test_db *t);

/** The deleted set of sample `row`: P[g] = 1 for its genes ([n_genes]). */
void pl_test_db_pert(const pl_test_db *t, uint64_t row, unsigned char *P);

/** Removed positions of list kind `k` (k = n_lists: the genes) for the
 *  deleted set P, ascending, into `out` (room for len[k]); returns the count. */
uint64_t pl_test_oracle(const pl_test_db *t, uint32_t k, const unsigned char *P, int32_t *out);

/** The dense row (kept = 1) of list `k` for P: PL_MASK_BOOL bytes or
 *  PL_MASK_BITS words, tail bits zero. `row` has room for the row's bytes. */
void pl_test_oracle_row(const pl_test_db *t, uint32_t k, const unsigned char *P, uint32_t dense,
                        unsigned char *row);

/** Load the graph and the sample table, for pl_test_collate(). */
void pl_test_db_load(pl_test_db *t);

/** Collate plan batch `pb` of a plan of batch size B directly, as the
 *  loader's workers do (payload included, no dense masks), into t->want.
 *  @param rows set to the batch's rows (room for B)
 *  @return the batch's samples. */
uint32_t pl_test_collate(pl_test_db *t, const pl_plan *plan, uint32_t B, uint64_t pb,
                         uint64_t epoch, uint64_t *rows);

/** Compare a slot with t->want: header, descriptors and every array's bytes
 *  (padding between arrays aside), and `bytes` with the used bytes.
 *  @return 0 when equal, else 1 with the difference in `why`. */
int pl_test_slot_diff(const pl_test_db *t, const void *slot, uint64_t bytes, char *why,
                      size_t cap);

/** Compare the dense masks of a batch of `n` samples (host copies: gene_mask
 *  and mask[k], each [n, row]) with the oracle's rows.
 *  @return 0 when equal, else 1 with the first difference in `why`. */
int pl_test_masks_diff(pl_test_db *t, uint32_t dense, uint32_t n, const uint64_t *rows,
                       const void *gene_mask, const void *const *mask, char *why, size_t cap);

/** A hand-made expansion of lists of awkward lengths (empty, 1, 63, 64, 65,
 *  several tiles; rows with nothing, everything, the first and the last
 *  position removed): a fake slot of `slot_bytes` holding the lists, the
 *  job, and the expected mask region of `mask_bytes`. Free with free(). */
typedef struct pl_test_expand_case {
    pl__expand_job job;
    unsigned char *slot, *want;
    uint64_t slot_bytes, mask_bytes;
} pl_test_expand_case;

void pl_test_expand_case_make(pl_test_expand_case *c, uint32_t dense, uint64_t seed);
/** The same over a grid of more than one row (loader/expand.h,
 *  pl__expand_shape): over 70,000 tiles, an odd number, of short lists of
 *  one tile each. */
void pl_test_expand_case_make_wide(pl_test_expand_case *c, uint32_t dense, uint64_t seed);
void pl_test_expand_case_free(pl_test_expand_case *c);

/** Flip one byte in the middle of sample-store block `b` of the database. */
void pl_test_db_corrupt_block(const pl_test_db *t, uint32_t b);

#endif
