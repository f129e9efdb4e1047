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
 *       - {file: 4932.protein.aliases.v12.0.txt.gz, format: string_aliases,
 *          sources: [SGD_ID]}     # optional filter
 *   edges:
 *     - name: physical      # the edge type; unique
 *       format: string      # string, string_actions, biogrid, yeastract,
 *                           #   tflink, dango, delim
 *       file: 4932.protein.physical.links.v12.0.txt.gz
 *       pairs: unordered    # or as_listed; default per format (reader.h)
 *       channel: combined_score   # format keys, see reader.h:
 *       min_score: 400            #   channel min_score system_type systems
 *                                 #   organisms throughput id gene_list sep
 *                                 #   header comment source target score
 *                                 #   small_scale modes directed
 *       min_resolved: 0.5   # optional: share of rows that must resolve
 *       allow_empty: false  # optional: true accepts any share, no edge
 *     - format: string_actions  # no name: one edge type per mode, one read
 *       file: 4932.protein.actions.v11.0.txt.gz
 *       types: {activation: activation, inhibition: inhibition}
 *   metabolism:             # optional: a metabolic model (metab.h)
 *     format: yeast-gem     # yeast-gem (COBRApy YAML) or sbml
 *     file: yeast-GEM.yml.gz
 *   samples:                # optional: one sample table or a list of them,
 *     - format: sga         # all with the same labels and categories
 *       file: SGA_ExE.txt.gz      # (samples.h); table keys: sep header
 *     - format: table             #   comment genes gene_sep gene_columns
 *       file: screen.tsv          #   id labels categories
 *       categories: [split]
 *       set: {batch: b1}    # every format: a constant category column,
 *       min_resolved: 0.5   #   the resolution rule of edge sources
 *     - {format: dcell_samples, file: train.txt}  # DCell's `2 g1 g2 score`
 *
 *   metabolism:             # or format tsv: pertload's own text files
 *     format: tsv           #   (plain files, as `build --reactions ...` reads)
 *     reactions: reactions.txt   # optional reaction list
 *     rules: rules.tsv      # gene-reaction rules, or gpr: gpr.tsv
 *     rmr: rmr.tsv          # optional stoichiometry
 *     reaction_rule: gpr    # optional: any or gpr
 *   samples:                # or format tsv: pertload's samples TSV
 *     format: tsv           #   (a plain file)
 *     file: samples.tsv
 *     payload: payload.npy  # optional per-sample .npy
 *   ontology:               # optional: ontology layers (DESIGN section 10)
 *     format: obo           # obo (OBO + GAF annotations) or dcell (the
 *     file: go-basic.obo.gz #   three-column `parent child type` file, or
 *                           #   DCell's ROOT:/GENES:/TERMS: topology blocks)
 *     annotations: gene_association.sgd.gz  # obo: the GAF file
 *     namespaces: [biological_process]      # obo, optional (default: all)
 *     relations: [is_a, part_of]            # obo, optional (default: is_a)
 *     evidence: [IDA, IMP]  # obo, optional; or exclude_evidence: [IEA]
 *     min_term_genes: 3     # optional (default: every term with a gene)
 *   features:               # optional: node features (DESIGN section 16), a
 *     gene: esm2.npy        #   float32 or float16 [n_nodes, F] .npy per node
 *                           #   type (gene, reaction, metabolite, term),
 *                           #   stored in the database (build_features.c)
 *
 * The ontology's gene names (GAF columns 3, 11, 2; the dcell file's genes)
 * resolve through the gene list and alias tables like every other source.
 *
 * An edge source that keeps no edge, or resolves under min_resolved of its
 * rows, stops the build (pl__imp_check_resolved(), import.h).
 *
 * Every error names "recipe:line:col: reason": unknown or repeated keys, a
 * key that does not apply to the source's (or part's) format, an edge-type
 * name used twice, a value of the wrong kind, unknown channel or system
 * names, an obo ontology without annotations, both evidence and
 * exclude_evidence.
 *
 * The real yeast recipe (recipes/yeast-real.yaml: eleven edge sources,
 * yeast-GEM, three SGA tables, GO biological process with the SGD
 * annotations) builds in 0.82-0.90 s wall, 0.4 s CPU (release build, 2-core
 * VM under a load average of 13; target 30 s, DESIGN section 14).
 */
#ifndef PL_IMPORT_RECIPE_H
#define PL_IMPORT_RECIPE_H

#include <stdint.h>

#include "preprocess/import/edges/import.h"
#include "preprocess/import/metab/metab.h"
#include "preprocess/ontology/ontology.h"
#include "preprocess/import/names/names.h"
#include "preprocess/import/samples/samples.h"

enum { PL_RECIPE_MAX_ALIASES = 16, PL_RECIPE_MAX_SAMPLES = 16 };

/** The metabolism part of a recipe (format NULL: none). */
typedef struct pl_recipe_metabolism {
    const char *format;        /**< "tsv", "yeast-gem", "sbml", or NULL */
    pl_metab_format model;     /**< yeast-gem, sbml: the model file's format */
    uint64_t line;             /**< recipe line of the 'metabolism' key */
    char *file;                /**< yeast-gem, sbml: the model (resolved) */
    char *reactions, *gpr, *rules, *rmr; /**< tsv: resolved paths or NULL */
    int reaction_rule;         /**< PL_REACTION_* */
} pl_recipe_metabolism;

/** The samples part of a recipe in format tsv (format NULL: none; sample
 *  tables of the formats table and sga are pl_recipe.tables). */
typedef struct pl_recipe_samples {
    const char *format;        /**< "tsv", or NULL */
    uint64_t line;
    char *file, *payload;      /**< resolved paths (payload may be NULL) */
} pl_recipe_samples;

/** The ontology part of a recipe (format NULL: none). */
typedef struct pl_recipe_ontology {
    const char *format;        /**< "obo", "dcell", or NULL */
    uint64_t line;             /**< recipe line where the part's mapping starts */
    char *file;                /**< the ontology (resolved) */
    char *annotations;         /**< obo: the GAF file (resolved) */
    pl_onto_opts opts;         /**< filters (comma-separated lists); strict unset */
} pl_recipe_ontology;

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
    pl_smp_spec tables[PL_RECIPE_MAX_SAMPLES]; /**< sample tables (table, sga), in order */
    uint32_t n_tables;
    pl_recipe_ontology ontology;
    const char *feature_types[PL_N_NODE_TYPES]; /**< features: node type of each */
    char *feature_files[PL_N_NODE_TYPES];       /**< features: .npy paths (resolved) */
    uint32_t n_features;
    uint64_t features_line;    /**< recipe line of the 'features' key */
    uint64_t max_line;         /**< max_line: the line limit (0: not set) */
    uint64_t max_text;         /**< max_text: the text limit (0: not set) */
    char *text;                /**< the recipe file's bytes as parsed (text_len of them) */
    size_t text_len;
    char **owned;              /* every string above */
    uint64_t n_owned, cap_owned;
} pl_recipe;

/** Parse and validate the recipe at `path`; `root`, when not NULL, replaces
 *  the recipe's base folder of relative paths. Files are not opened.
 *  @return 0 or PL_EPARSE / -errno with "recipe:line:col: reason". */
int pl__recipe_load(const char *path, const char *root, pl_recipe **out, pl_err *err);

/** Release; accepts NULL. */
void pl__recipe_free(pl_recipe *r);

/** Set the limits of the line source (source.h) for the recipe's inputs:
 *  `max_line` / `max_text` when not 0 (the command line's), else the
 *  recipe's max_line / max_text keys when it has them. */
void pl__recipe_limits(const pl_recipe *r, uint64_t max_line, uint64_t max_text);

/** Read the recipe's metabolism (when it has one) into `m` through `nm`
 *  (pl__metab_init() done here; pl__metab_free() it even on failure). */
int pl__recipe_metab(const pl_recipe *r, const pl_names *nm, int strict, pl_metab *m,
                     pl_err *err);

/** Read every sample table of the recipe in order into one `res`
 *  (zero-initialised; pl__smp_result_free() it even on failure), calling
 *  `emit` (may be NULL) per kept sample. */
int pl__recipe_samples(const pl_recipe *r, const pl_names *nm, int strict, pl_smp_emit emit,
                       void *ctx, pl_smp_result *res, pl_err *err);

/** Read and build the recipe's ontology (format not NULL) over the genes of
 *  `nm`, names resolved through it (pl__onto_read(): `st` zero-initialised,
 *  pl__onto_stats_free() it and pl__onto_free() `out` even on failure).
 *  `strict`: an unresolved gene name is an error naming file:line:col. */
int pl__recipe_ontology(const pl_recipe *r, const pl_names *nm, int strict, pl_onto *out,
                        pl_onto_stats *st, pl_err *err);

/** Load the recipe's gene list and alias tables into a new resolver;
 *  `st` (n_aliases entries) receives each table's counts. */
int pl__recipe_names(const pl_recipe *r, pl_names **out, pl_alias_stats *st, pl_err *err);

#endif
