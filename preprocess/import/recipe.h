/* Dataset recipes: one YAML file naming the gene list, its alias tables and
 * every edge source with its format, filters and edge-type name.
 *
 *   version: 1
 *   root: data              # optional: base of relative paths, itself relative
 *                           # to the recipe's folder (default: that folder)
 *   genes:
 *     file: genes.txt.gz    # one name a line
 *     header: false         # optional
 *     aliases:              # optional; earlier tables take precedence
 *       - {file: SGD_features.tab.gz, format: sgd_features}
 *       - {file: orftogene.txt.gz, format: table, header: true,
 *          gene_column: 2, alias_column: 1, sep: "\t"}
 *   edges:
 *     - name: physical      # the edge type; unique
 *       format: string      # string, biogrid, yeastract, tflink, dango, delim
 *       file: 4932.protein.physical.links.v12.0.txt.gz
 *       pairs: unordered    # or as_listed; default per format (reader.h)
 *       channel: combined_score   # format keys, see reader.h:
 *       min_score: 400            #   channel min_score system_type systems
 *                                 #   organisms throughput id gene_list sep
 *                                 #   header comment source target score
 *                                 #   small_scale
 *
 *   metabolism:             # optional; format tsv: pertload's own text files
 *     format: tsv           #   (plain files, as `build --reactions ...` reads)
 *     reactions: reactions.txt   # optional reaction list
 *     rules: rules.tsv      # gene-reaction rules, or gpr: gpr.tsv
 *     rmr: rmr.tsv          # optional stoichiometry
 *     reaction_rule: gpr    # optional: any or gpr
 *   samples:                # optional; format tsv: pertload's samples TSV
 *     format: tsv           #   (a plain file)
 *     file: samples.tsv
 *     payload: payload.npy  # optional per-sample .npy
 *
 * Every error names "recipe:line:col: reason": unknown or repeated keys, a
 * key that does not apply to the source's format, an edge-type name used
 * twice, a value of the wrong kind, unknown channel or system names.
 */
#ifndef PL_IMPORT_RECIPE_H
#define PL_IMPORT_RECIPE_H

#include <stdint.h>

#include "import.h"
#include "names.h"

enum { PL_RECIPE_MAX_ALIASES = 16 };

/** The metabolism part of a recipe (format NULL: none). */
typedef struct pl_recipe_metabolism {
    const char *format;        /**< "tsv", or NULL */
    uint64_t line;             /**< recipe line of the 'metabolism' key */
    char *reactions, *gpr, *rules, *rmr; /**< resolved paths or NULL */
    int reaction_rule;         /**< PL_REACTION_* */
} pl_recipe_metabolism;

/** The samples part of a recipe (format NULL: none). */
typedef struct pl_recipe_samples {
    const char *format;        /**< "tsv", or NULL */
    uint64_t line;
    char *file, *payload;      /**< resolved paths (payload may be NULL) */
} pl_recipe_samples;

typedef struct pl_recipe {
    char *path;                /**< the recipe file */
    char *genes;               /**< gene list path (resolved) */
    int genes_header;
    pl_alias_spec aliases[PL_RECIPE_MAX_ALIASES];
    uint32_t n_aliases;
    pl_imp_source *sources;    /**< edge sources, in recipe order */
    uint32_t n_sources;
    pl_recipe_metabolism metabolism;
    pl_recipe_samples samples;
    char **owned;              /* every string above */
    uint64_t n_owned, cap_owned;
} pl_recipe;

/** Parse and validate the recipe at `path`; `root`, when not NULL, replaces
 *  the recipe's base folder of relative paths. Files are not opened.
 *  @return 0 or PL_EPARSE / -errno with "recipe:line:col: reason". */
int pl__recipe_load(const char *path, const char *root, pl_recipe **out, pl_err *err);

/** Release; accepts NULL. */
void pl__recipe_free(pl_recipe *r);

/** Load the recipe's gene list and alias tables into a new resolver;
 *  `st` (n_aliases entries) receives each table's counts. */
int pl__recipe_names(const pl_recipe *r, pl_names **out, pl_alias_stats *st, pl_err *err);

#endif
