/* Slot sizes and the deliveries of a run.
 *
 * A slot is sized for a typical batch, not for the largest sample of the
 * database: pl__parts_measure() looks at every batch the run will produce
 * (the weights of its samples: deleted genes and pl__masks_bound positions,
 * which bound the batch's bytes as the collation stage checks them) and
 * reports what a typical batch, the largest batch and the largest single
 * sample need;
 * pl__parts_fit() picks the slot size and count within a byte limit. A batch
 * that does not fit one slot is split into parts of consecutive samples (as
 * many as fit, in plan order), delivered one after another in slots of their
 * own: each part's slot header names the batch, the part and the part's
 * first sample (collate/slot.h). Samples are never split, so a slot always
 * holds at least the largest single sample.
 *
 * The epoch plan is unchanged by splitting: batch b of the plan is still
 * batch b (same samples, same order), so the batch count, drop_last,
 * rank/world_size and resuming at a plan batch mean what they meant. Only
 * the deliveries are counted apart: a run of n batches with k extra parts
 * makes n + k deliveries, numbered from 0 in order. */
#ifndef PL_LOADER_PARTS_H
#define PL_LOADER_PARTS_H

#include <stdint.h>

#include "collate/collate.h"
#include "loader/table.h"
#include "pertload.h"

/** What the batches of a run need, in slot bytes rounded up to 4096. */
typedef struct pl__needs {
    uint64_t typical;  /**< a full batch whose lists hold twice the positions
                            of the run's 90th-percentile batch */
    uint64_t largest;  /**< the run's largest batch, whole */
    uint64_t one;      /**< the run's largest single sample, as a batch of one */
    uint64_t one_row;  /**< that sample's row */
    uint64_t one_id;   /**< and its id */
} pl__needs;

/** Measure the batches start_batch.. of `plan` (one pass over the weights of
 *  their samples, pl__table.weight).
 *  @param c the run's collation settings (dense masks and payload included).
 *  @return 0 or -ENOMEM. */
int pl__parts_measure(const pl__collate_cfg *c, const pl__table *t, const pl_plan *plan,
                      uint64_t start_batch, pl__needs *out, pl_err *err);

/** Choose the slot size and count: `want` slots of max(typical, one) bytes
 *  (never more than the largest batch needs) when they fit the budget, `limit`
 *  less `overhead` bytes; else as many as fit, but at least min(want, 2) so
 *  that the producer can fill one slot while the consumer reads another,
 *  with smaller slots (more batches split) when needed, and at least `keep`
 *  slots in any case; one slot as a last resort (when keep <= 1).
 *  @param limit_name how the user sets `limit`, for messages
 *         ("--max-ring-bytes")
 *  @return 0 with *n_slots and *slot_bytes (a multiple of 4096, at least
 *  `one`), or PL_EUSAGE when not even the largest single sample fits. */
int pl__parts_fit(const pl__needs *nd, uint32_t want, uint32_t keep, uint64_t limit,
                  uint64_t overhead, const char *limit_name, uint32_t *n_slots,
                  uint64_t *slot_bytes, pl_err *err);

/** One delivery: a whole batch or a part of one. */
typedef struct pl__part {
    uint64_t batch;    /**< batch of the run (plan batch start_batch + batch) */
    uint32_t part;     /**< 0..n_parts-1 */
    uint32_t n_parts;  /**< 1: the whole batch */
    uint32_t first;    /**< the part's first sample within the batch */
    uint32_t n;        /**< the part's samples; 0 for a whole batch (all of them) */
} pl__part;

/** The deliveries of a run: only split batches are stored. */
typedef struct pl__parts {
    uint64_t n_batches;    /**< batches of the run */
    uint64_t n_deliveries; /**< n_batches + the extra parts */
    uint64_t n_split;      /**< batches split */
    uint64_t *batch;       /**< [n_split] each split batch, ascending */
    uint64_t *at;          /**< [n_split] the delivery of its first part */
    uint64_t *cut_at;      /**< [n_split + 1] its entries in `cuts` */
    uint32_t *cuts;        /**< per split batch: each part's first sample, then the
                                batch's size */
    uint64_t cap_split, n_cuts, cap_cuts;
} pl__parts;

/** A schedule of `n_batches` whole batches (no allocation). */
void pl__parts_init(pl__parts *s, uint64_t n_batches);

/** Split batch `batch` (after every batch split before it) into parts
 *  starting at samples cuts[0] = 0 < cuts[1] < ... < cuts[n_parts - 1] < size.
 *  @return 0, PL_EUSAGE for cuts out of order, -ENOMEM. */
int pl__parts_split(pl__parts *s, uint64_t batch, const uint32_t *cuts, uint32_t n_parts,
                    uint32_t size, pl_err *err);

/** Initialise `s` and split every batch of the run that needs more than
 *  `slot_bytes` (at least nd->one, from pl__parts_measure() of the same run)
 *  into parts that fit; no pass over the samples when the largest batch fits.
 *  @return 0, -ENOMEM, PL_ERANGE (a sample over nd->one: a bug). */
int pl__parts_plan(pl__parts *s, const pl__collate_cfg *c, const pl__table *t,
                   const pl_plan *plan, uint64_t start_batch, const pl__needs *nd,
                   uint64_t slot_bytes, pl_err *err);

/** Delivery `d` (< n_deliveries). O(log n_split). */
void pl__parts_get(const pl__parts *s, uint64_t d, pl__part *out);

/** Release the arrays (safe on an initialised or zeroed schedule). */
void pl__parts_free(pl__parts *s);

#endif
