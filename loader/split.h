/* Category levels of a database's labels (split.c; pl_db_level_rows in
 * pertload.h): the label and code of a level named by column and level. */
#ifndef PL_LOADER_SPLIT_H
#define PL_LOADER_SPLIT_H

#include <stdint.h>

#include "pertload.h"

/** The label index and code of level `level` of the category column
 *  `column` of a database described by `info`: a row is in the level when
 *  its label `*label` equals `*code` (metadata only; no sample is read).
 *  @return 0, or PL_EUSAGE (no label `column`, a label that is no category
 *  column, no level `level`: err names them and lists the category columns
 *  or the column's levels). */
int pl__level_find(const pl_db_info *info, const char *column, const char *level,
                   uint32_t *label, float *code, pl_err *err);

#endif
