/* The ontology layers in `pertload build`: read the inputs named by the
 * build options, and store the result in the "onto" sub-database
 * (src/core/dbformat.h). */
#ifndef PL_ONTOLOGY_STORE_H
#define PL_ONTOLOGY_STORE_H

#include <lmdb.h>

#include "ontology.h"
#include "src/core/dbformat.h"

/** Read and build the ontology of `o` (ontology + annotations, or
 *  ontology_dcell) over the gene list `genes`; `out` stays zeroed when the
 *  build has none. Unknown genes are counted (`*unknown` rows) and, unless
 *  `quiet`, listed on stderr (each distinct name with its count and first
 *  line, the first 20). @return 0, PL_EUSAGE, PL_EPARSE, -errno. */
int pl__onto_from_build(const pl_build_opts *o, const pl_strtab *genes, int quiet, pl_onto *out,
                        uint64_t *unknown, pl_err *err);

/** Store `on` under the "onto" sub-database `dbi` and set its counts in `m`
 *  (nothing when it has no terms). */
int pl__onto_put(MDB_txn *txn, MDB_dbi dbi, const pl_onto *on, struct pl__meta *m, pl_err *err);

#endif
