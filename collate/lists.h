/* The rules a batch's removed lists keep before a layout reads them (ptr
 * [n + 1] from 0 to the count of positions, never decreasing, every position
 * in range, with sets each sample's strictly increasing): one check, which
 * pl_layout_check() (layout.c) and pl_pyg_edges() (pyg.c) each put in words
 * of their own. */
#ifndef PL_COLLATE_LISTS_H
#define PL_COLLATE_LISTS_H

#include <stdint.h>

/** The rules, in the order they are checked (every sample for one rule
 *  before the next). */
typedef enum pl__lists_rule {
    PL__LISTS_OK = 0,
    PL__LISTS_PTR0,      /**< ptr[0] is not 0 (value: ptr[0]) */
    PL__LISTS_DECREASES, /**< ptr[sample + 1] < ptr[sample] */
    PL__LISTS_COUNT,     /**< sample holds more than max_count positions (value: how many) */
    PL__LISTS_LEN,       /**< ptr[n] is not n_pos (value: ptr[n]) */
    PL__LISTS_RANGE,     /**< a position of sample outside 0 .. limit - 1 (value: it) */
    PL__LISTS_ORDER,     /**< sets: a position of sample not above the one before (value: it) */
} pl__lists_rule;

/** The first rule broken and where. */
typedef struct pl__lists_fault {
    pl__lists_rule rule;
    uint32_t sample;
    int64_t value;
} pl__lists_fault;

/** Check lists `pos` (int32 or int64: pos_bytes 4 or 8) and `ptr` [n + 1]
 *  of n samples and n_pos positions against the rules above; each sample
 *  holds at most `max_count` positions (UINT64_MAX: no bound), every
 *  position is below `limit`, and with `sets` each sample's are strictly
 *  increasing. The positions are read only once ptr is found sound.
 *  @return PL__LISTS_OK, or the first rule broken, *f saying where. */
pl__lists_rule pl__lists_check(const void *pos, int pos_bytes, const int64_t *ptr, uint32_t n,
                               uint64_t n_pos, uint64_t limit, uint64_t max_count, int sets,
                               pl__lists_fault *f);

#endif
