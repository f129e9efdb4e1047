/* Checks of single fields shared by the readers of downloaded files (edge
 * readers, alias tables): an empty name, STRING's "TAXON." id prefix. Each
 * fails at "file:line:col: reason" (pl__src_fail()). */
#ifndef PL_IMPORT_FIELDS_H
#define PL_IMPORT_FIELDS_H

#include <stddef.h>

#include "preprocess/import/source/source.h"

/** The taxon of STRING ids, as first seen (lines do not outlive their call). */
typedef struct pl_imp_taxon {
    char s[24];
    size_t len;
} pl_imp_taxon;

/** Strip the "TAXON." prefix of a STRING id in place ("4932.YAL001C" ->
 *  "YAL001C"); the taxon must be the same on every row (`tx` remembers the
 *  first; zero it before the first row). Fails at file:line:col when the id
 *  is not TAXON.NAME or the taxon differs. */
int pl__imp_strip_taxon(const pl_src *src, pl__field *f, pl_imp_taxon *tx, pl_err *err);

/** Fail with "file:line:col: empty <what>" when the field is empty. */
int pl__imp_nonempty(const pl_src *src, const pl__field *f, const char *what, pl_err *err);

#endif
