/* What a build reads, handed over in memory: the seam between the readers
 * of downloaded files (preprocess/import/) and the database writer.
 *
 * pl_build() reads its inputs from the files named in pl_build_opts.
 * pl__build_run() takes the same options plus a pl__build_input whose
 * non-NULL parts replace the corresponding files:
 *
 *   genes       the gene list in database order (replaces opts->genes);
 *   edges       one pl__build_edges per edge type (replaces opts->type_*;
 *               opts->min_score does not apply: filter before handing over);
 *   metabolism  reactions, metabolites, GPR, RMR and compiled rules
 *               (replaces opts->reactions, gpr, rules and rmr);
 *   samples     a row provider (replaces opts->samples); the samples TSV's
 *               is the sample table reader's (import/samples/provider.h);
 *   ontology    a built ontology over the same genes (pl__onto_read();
 *               replaces opts->ontology, annotations, ontology_dcell and
 *               their filters); its gene count must be n_genes, its
 *               arrays are stored as pl__onto_read() built them.
 *
 * Every array is borrowed: the caller owns it and keeps it alive and
 * unchanged until pl__build_run() returns. Gene, reaction and metabolite
 * indices are checked against their lists (PL_EPARSE naming the part, the
 * position and the value), so a provider's bug cannot write a database whose
 * indices point outside its lists. The database is byte-for-byte the one the
 * file path writes from the same genes, edges and rows (the build
 * parameters text aside).
 */
#ifndef PL_PREPROCESS_BUILD_INPUT_H
#define PL_PREPROCESS_BUILD_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "ontology/ontology.h"
#include "pertload.h"
#include "ruleset.h"
#include "src/core/strtab.h"

/** One edge type: edge i goes from gene src[i] to gene dst[i]. */
typedef struct pl__build_edges {
    const char *name;          /**< edge-type name (letters, digits, '_-.') */
    const int32_t *src, *dst;  /**< [n] gene indices */
    uint64_t n;
} pl__build_edges;

/** Metabolism: the lists and arrays the GPR/RMR/rules files would give. */
typedef struct pl__build_metabolism {
    const char *const *reactions;   /**< [n_reactions] distinct names */
    uint64_t n_reactions;
    const char *const *metabolites; /**< [n_metabolites] distinct names */
    uint64_t n_metabolites;
    const int32_t *gpr_gene, *gpr_rxn; /**< [n_gpr] gene -> reaction */
    uint64_t n_gpr;
    const int32_t *rmr_rxn, *rmr_met;  /**< [n_rmr] reaction -> metabolite */
    const float *rmr_stoich;           /**< [n_rmr] finite stoichiometry */
    uint64_t n_rmr;
    /** compiled gene-reaction rules by reaction index (pl__ruleset_add), or
     *  NULL; with rules, the GPR arrays are the rules' genes (ruleset.h) */
    const pl__ruleset *rules;
} pl__build_metabolism;

/** One sample row as a provider yields it. */
typedef struct pl__sample_row {
    uint64_t id;
    const int32_t *genes;  /**< [n_genes] deleted genes (gene indices) */
    uint32_t n_genes;      /**< >= 1 */
    const float *labels;   /**< [n_labels], NaN where missing */
    /** 1: the row is not stored (it named an unknown gene under
     *  drop_unknown_genes); counted as a dropped sample, and its payload
     *  row is skipped */
    int dropped;
    const uint32_t *cats;  /**< [n_categories] level codes (NULL without) */
} pl__sample_row;

/** A sample-row provider. Label and category names are known before the
 *  first row (the store is created with them). Category columns (a split
 *  name, a strain background) are stored apart from the labels, as a
 *  uint32 code per row and column (dbformat.h, "cats"), with their level
 *  names in `levels`; a provider puts a category column among the labels
 *  too (as float codes) only when asked to. */
typedef struct pl__build_samples {
    uint32_t n_labels;                /**< <= 256 */
    const char *const *label_names;   /**< [n_labels] distinct, non-empty */
    /** The next row into `*row` (its arrays valid until the next call).
     *  @return 1 with a row, 0 at the end, or a negative code with `err`
     *  naming file:line:col. */
    int (*next)(void *ctx, pl__sample_row *row, pl_err *err);
    /** Fraction of the input read so far (progress), or NULL. */
    double (*frac)(void *ctx);
    void *ctx;
    /** The levels of the category columns, or NULL: one line per column, in
     *  column order, "column<TAB>level 0<TAB>level 1...\n" (code k is level
     *  k; levels non-empty, distinct, without tab or line break); stored as
     *  cats/"levels", read back as pl_db_info.categories. Read once next()
     *  has returned 0 (the levels of a streamed table are known only then);
     *  valid until pl__build_run() returns. Checked against the names and
     *  every code given (PL_EPARSE naming the column). */
    const char *levels;
    uint32_t n_categories;               /**< <= PL_MAX_CATEGORIES */
    const char *const *category_names;   /**< [n_categories] distinct, non-empty */
} pl__build_samples;

/** Everything pl__build_run() takes in memory; NULL parts are read from the
 *  files of pl_build_opts. The three texts are stored as they are (see
 *  dbformat.h, meta/"recipe", "inputs", "sources") and may be NULL. */
typedef struct pl__build_input {
    const char *const *genes;          /**< [n_genes] distinct names, or NULL */
    uint64_t n_genes;
    const pl__build_edges *edges;      /**< [n_types], or NULL */
    uint32_t n_types;
    const pl__build_metabolism *metabolism; /**< or NULL */
    const pl__build_samples *samples;  /**< or NULL */
    const pl_onto *ontology;           /**< over n_genes genes, or NULL */
    /** the ontology's annotation rows naming unresolved genes, reported as
     *  pl_build_stats.unknown_term_genes */
    uint64_t ontology_unknown;
    const char *recipe;                /**< the recipe file's bytes */
    size_t recipe_len;
    const char *inputs;   /**< lines "size<TAB>xxh64<TAB>path" of its inputs */
    const char *sources;  /**< lines of per-source counts */
} pl__build_input;

/** Build like pl_build(), with `in` (may be NULL) replacing input files.
 *  Options a part replaces are ignored; the rest (out, payload,
 *  drop_unknown_genes, progress, params, reaction_rule) apply as usual. */
int pl__build_run(const pl_build_opts *opts, const pl__build_input *in,
                  pl_build_stats *stats, pl_err *err);

#endif
