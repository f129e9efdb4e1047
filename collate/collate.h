/* Collation: one batch -> one slot (layout in slot.h).
 *
 * The fixed-size arrays (ids, rows, labels, every ptr array, the payload and
 * the dense masks) come first, at offsets that depend only on the batch size,
 * so the loader can start reading payload rows into the slot before the masks
 * are computed; the variable-size lists (perturbation indices, removed
 * positions) follow, each list kind written straight into the slot by the
 * masks engine, with no intermediate copy. The graph itself is never copied:
 * removed positions are offsets into the shared edge arrays. */
#ifndef PL_COLLATE_COLLATE_H
#define PL_COLLATE_COLLATE_H

#include <stdint.h>

#include "collate/slot.h"
#include "pertload.h"

/* The dense forms of the public PL_MASK_* (pertload.h), under the slot's name. */
enum {
    PL_DENSE_NONE = PL_MASK_NONE,
    PL_DENSE_BITS = PL_MASK_BITS,
    PL_DENSE_BOOL = PL_MASK_BOOL,
};

/** What every batch of a run shares. */
typedef struct pl__collate_cfg {
    const pl_graph *g;
    uint32_t n_genes;
    uint32_t n_labels;
    uint32_t dense;                 /* PL_DENSE_* */
    uint32_t max_batch;             /* batch size */
    char payload_dtype[8];          /* "" without payload */
    uint32_t payload_ndim;          /* dimensions after the sample axis */
    uint64_t payload_shape[8];
    uint64_t payload_row_bytes;
    uint64_t list_len[PL_MAX_TYPES + 3]; /* positions per list kind (E_t, GPR, ...) */
    const struct pl__khop *khop;    /* NULL, or the perturbation neighbourhoods to add
                                       (masks/khop.h); each batch source then brings
                                       its worker's context */
    const pl_ontology *onto;        /* NULL, or the ontology whose lists to add
                                       (DESIGN section 10, pl_ontology_removed) */
} pl__collate_cfg;

/** Fill `c` from an open database and its loaded graph. */
void pl__collate_cfg_init(pl__collate_cfg *c, const pl_db *db, const pl_graph *g,
                          uint32_t batch_size, uint32_t dense);

/** The samples of one batch: sample i has ids[i], rows[i], genes[i][0..n_genes[i])
 *  (sorted ascending, unique, in range) and labels[i][0..n_labels). A part of
 *  a split batch (loader/parts.h) says which part it is and where its samples
 *  start in the batch; n_parts 0 means a whole batch. */
typedef struct pl__batch_src {
    uint32_t n;
    const uint64_t *ids, *rows;
    const int32_t *const *genes;
    const uint32_t *n_genes;
    const float *const *labels;
    uint32_t part, n_parts, first;
    struct pl__khop_ctx *khop;      /* the worker's k-hop context when cfg->khop */
} pl__batch_src;

/** Offset in the slot of the payload of a batch of `n` samples (rows go there
 *  back to back, payload_row_bytes each). */
uint64_t pl__collate_payload_offset(const pl__collate_cfg *c, uint32_t n);

/** Slot bytes a batch of `n` samples needs at most when its samples delete
 *  `genes` genes in all and their per-kind list lengths sum to `positions`
 *  (pl__masks_bound summed over kinds and samples; with k-hop lists, plus
 *  each sample's pl__collate_khop_bound() / 4; with ontology lists, plus
 *  each sample's pl__collate_onto_bound()). */
uint64_t pl__collate_slot_bytes(const pl__collate_cfg *c, uint32_t n, uint64_t genes,
                                uint64_t positions);

/** Slot bytes of the k-hop lists of one sample deleting `n_pert` genes at
 *  most: the set's bound and every walked type's edge bound for a set that
 *  large (pl__khop_genes_bound(), pl__khop_edges_bound()), 4 bytes each. */
uint64_t pl__collate_khop_bound(const pl__collate_cfg *c, uint64_t n_pert);

/** Entries of the two ontology lists of one sample deleting genes[0..n) at
 *  most: per list the sizes of the genes' stored sets summed, capped at the
 *  list's length (n_terms, n_annotations); 0 without cfg->onto. */
uint64_t pl__collate_onto_bound(const pl__collate_cfg *c, const int32_t *genes, uint32_t n);

/** Collate batch `src` into `slot` (`cap` bytes), leaving the payload region
 *  untouched (the loader fills it).
 *  @param scratch room for the longest single-kind union bound of the batch
 *         + 1 (used for sets of more than a few genes)
 *  @return 0, or PL_ERANGE when the batch does not fit (a sizing bug). */
int pl__collate(const pl__collate_cfg *c, const pl__batch_src *src, void *slot, uint64_t cap,
                uint64_t batch, uint64_t epoch, int32_t *scratch, uint64_t scratch_len,
                pl_err *err);

#endif
