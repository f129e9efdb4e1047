/* The ontology layers in `pertload build`: read the inputs named by the
 * build options, and store the result in the "onto" sub-database
 * (src/core/dbformat.h). */
#ifndef PL_ONTOLOGY_STORE_H
#define PL_ONTOLOGY_STORE_H

#include <lmdb.h>

#include "ontology.h"
#include "src/core/dbformat.h"

/** Where an ontology comes from: OBO + GAF, or the three-column file. */
typedef struct pl_onto_input {
    const char *obo, *gaf;   /**< the OBO ontology and its GAF annotations, or NULL */
    const char *dcell;       /**< the three-column file, or NULL */
    pl_onto_opts opts;
    pl_onto_resolve_fn resolve; /**< gene names to indices below n_genes */
    void *ctx;
} pl_onto_input;

/** Read `in` and build its ontology over `n_genes` genes (the one path of
 *  `build --ontology` and of recipes). An ontology left without terms is
 *  PL_EPARSE naming its file. `st` zero-initialised: counts and unresolved
 *  names (pl__onto_stats_free() it, pl__onto_free() `out`, even on
 *  failure). */
int pl__onto_read(const pl_onto_input *in, uint32_t n_genes, pl_onto *out, pl_onto_stats *st,
                  pl_err *err);

/** On stderr: a warning for each ROOT: count of a DCell topology file that
 *  differs from its term's gene closure (the notes of `st`, then how many
 *  more), and how many children were named again on their TERMS: line;
 *  `src` names the file. Nothing when there is none. */
void pl__onto_warn(const pl_onto_stats *st, const char *src);

/** Read and build the ontology of `o` (ontology + annotations, or
 *  ontology_dcell) over the gene list `genes` (exact names); `out` stays
 *  zeroed when the build has none. Unknown genes are counted (`*unknown`
 *  rows) and, unless `quiet`, listed on stderr (each distinct name with its
 *  count and first line, the first 20). @return 0, PL_EUSAGE, PL_EPARSE, -errno. */
int pl__onto_from_build(const pl_build_opts *o, const pl_strtab *genes, int quiet, pl_onto *out,
                        uint64_t *unknown, pl_err *err);

/** Store `on` under the "onto" sub-database `dbi` and set its counts in `m`
 *  (nothing when it has no terms). */
int pl__onto_put(MDB_txn *txn, MDB_dbi dbi, const pl_onto *on, struct pl__meta *m, pl_err *err);

#endif
