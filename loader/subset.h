/* The subset of a database's rows an epoch runs over (plan.h, step 0).
 *
 * A subset is a list of distinct sample-store rows in a chosen order: the
 * rows A..B-1 of a range "A:B", or the entries of a one-dimensional integer
 * .npy file (int32, int64 or uint32; numpy's np.save) (serve --rows), or the
 * rows of one level of a category column in ascending order (serve --split:
 * "COLUMN=LEVEL", or "LEVEL" of the column named "split"). The plan is
 * computed over positions 0..n-1 of the subset as over a database of n
 * samples, and position k then stands for row rows[k]: ranks, batches,
 * shuffling and resuming apply to the subset unchanged, so every row of the
 * subset is delivered exactly once per epoch across ranks (without padding).
 */
#ifndef PL_LOADER_SUBSET_H
#define PL_LOADER_SUBSET_H

#include <stdint.h>

#include "pertload.h"
#include "split.h"

/** The category column of a split given as a level alone. */
#define PL__SPLIT_COLUMN "split"

typedef struct pl__subset {
    uint32_t *rows; /* [n] distinct rows below the database's sample count */
    uint64_t n;
} pl__subset;

/** Read the subset `spec` ("A:B", or the path of a .npy file) of a database
 *  of n_samples rows into `s`.
 *  @return 0, PL_EUSAGE (a malformed range, a row at or past n_samples, a
 *  row given twice, an empty subset, a file of another dtype or shape: err
 *  names the spec and the first offending entry), the file's errors, -ENOMEM.
 *  `s` is left empty on failure. */
int pl__subset_load(pl__subset *s, const char *spec, uint64_t n_samples, pl_err *err);

/** A split: the spec, its column (owned) and level, and the level's
 *  column and code in the category store (split.h). */
typedef struct pl__split {
    const char *spec;
    char *column;
    const char *level; /* inside spec */
    pl__level lv;
} pl__split;

/** Parse the split `spec`, "COLUMN=LEVEL" (split at the first '='), or
 *  "LEVEL" for the column PL__SPLIT_COLUMN, and find its level among the
 *  category columns of the database `info` describes (metadata only).
 *  @return 0, PL_EUSAGE (no such category column or level: err names the
 *  spec, the column and the level, and lists the category columns or the
 *  levels), -ENOMEM. `sp` keeps `spec`; pl__split_free() it either way. */
int pl__split_find(pl__split *sp, const pl_db_info *info, const char *spec, pl_err *err);

/** Release what pl__split_find() allocated; safe on a zeroed split. */
void pl__split_free(pl__split *sp);

/** The subset of the rows of split `sp`: the rows, ascending, whose code
 *  in the category store of `db` is the level's.
 *  @return 0, PL_EUSAGE (no row holds the level: err names the spec, the
 *  column and the level), PL_ECORRUPT, -ENOMEM. `s` is left empty on
 *  failure. */
int pl__subset_split(pl__subset *s, const pl__split *sp, pl_db *db, pl_err *err);

/** Map a plan over the subset's positions to the subset's rows, in place. */
void pl__subset_apply(const pl__subset *s, pl_plan *plan);

/** Free the rows; safe on a zeroed subset. */
void pl__subset_free(pl__subset *s);

#endif
