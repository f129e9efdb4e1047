/* Category levels of a database's samples (split.c; pl_db_level_rows in
 * pertload.h): the column and code of a level named by column and level,
 * and the rows that hold it. */
#ifndef PL_LOADER_SPLIT_H
#define PL_LOADER_SPLIT_H

#include <stdint.h>

#include "pertload.h"

/** A level of a category column: the column's index among
 *  pl_db_info.categories, the level's code and the column's level count. */
typedef struct pl__level {
    uint32_t column, code;
    uint64_t n_levels;
} pl__level;

/** The level `level` of the category column `column` of a database
 *  described by `info` (metadata only; no code is read).
 *  @return 0, or PL_EUSAGE (no category column `column` (a label of that
 *  name is said to be no category column), no level `level`: err names them
 *  and lists the category columns or the column's levels). */
int pl__level_find(const pl_db_info *info, const char *column, const char *level,
                   pl__level *out, pl_err *err);

/** The rows (ascending) of level `lv` of the open database `db`, from the
 *  category store: a new malloc'd array `*rows` (free() it) of `*n`.
 *  @return 0, PL_ECORRUPT, -ENOMEM. */
int pl__level_rows(pl_db *db, const pl__level *lv, uint32_t **rows, uint64_t *n, pl_err *err);

#endif
