/* `pertload build --recipe`: a dataset recipe (recipe.h) into a database.
 *
 * The gene list and alias tables are loaded (pl__recipe_names), every edge
 * source is read (pl__imp_run) into one edge type of the same name, in recipe
 * order, and everything is handed to the builder in memory
 * (preprocess/build_input.h): no temporary files; so is the ontology, read
 * and built here (pl__recipe_ontology). The metabolism and samples parts of
 * format tsv are read by the builder from their (plain) files.
 * Stored with the database (meta/"recipe", "inputs", "sources"): the recipe
 * file's bytes, the size and XXH64 of every input file it names, and each
 * source's counts.
 */
#ifndef PL_IMPORT_RECIPE_BUILD_H
#define PL_IMPORT_RECIPE_BUILD_H

#include "preprocess/import/edges/import.h"
#include "pertload.h"
#include "recipe.h"

/** Build the database `o->out` from recipe `r`. Of `o`, only out, progress,
 *  params and reaction_rule (PL_REACTION_DEFAULT: the recipe's
 *  `reaction_rule`, of any metabolism format) are used; the rest comes from
 *  the recipe. Not `strict`: rows with unresolved names are dropped and
 *  counted (edge sources), samples and GPR records naming a gene outside the list likewise (drop_unknown_genes);
 *  `strict`: any of them is an error naming file:line:col.
 *  @param res [r->n_sources], zeroed and filled per source read (their
 *  unresolved names too, even on failure: pl__unres_free() each).
 *  @param st filled on success (may be NULL).
 *  @return 0 or a negative code; nothing is left at o->out on failure. */
int pl__recipe_build(const pl_recipe *r, const pl_build_opts *o, int strict,
                     pl_imp_result *res, pl_build_stats *st, pl_err *err);

#endif
