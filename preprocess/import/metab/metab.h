/* A metabolic model read from a downloaded file (yeast-GEM YAML, SBML): the
 * in-memory metabolism a build takes in place of `--reactions`, `--rmr` and
 * `--rules`.
 *
 *   reactions    names in model order (a reaction listed twice is an error);
 *   metabolites  names in document order: the model's metabolite list where it
 *                comes first, else order of first appearance in a reaction;
 *                a reaction naming a metabolite that the model's list (when it
 *                has one) lacks is an error;
 *   RMR          (reaction, metabolite, stoichiometry) per entry of each
 *                reaction's metabolite map, in model order;
 *   rules        each reaction's gene-reaction rule compiled (rules.h) with
 *                gene names resolved through the recipe's gene list and
 *                aliases (names.h); an unresolved gene is counted and taken as
 *                always present (no sample can delete it), or in strict mode
 *                is an error naming file, line and reaction;
 *   GPR          per rule, its distinct resolved genes (ruleset.h).
 */
#ifndef PL_IMPORT_METAB_H
#define PL_IMPORT_METAB_H

#include <stdarg.h>
#include <stdint.h>

#include "preprocess/import/names/names.h"
#include "preprocess/ruleset.h"
#include "src/core/strtab.h"

/** Model file formats. */
typedef enum pl_metab_format {
    PL_METAB_NONE = 0,
    PL_METAB_YEASTGEM = 1, /**< yeast-GEM / COBRApy YAML */
    PL_METAB_SBML = 2,     /**< SBML Level 3 with FBC */
} pl_metab_format;

typedef struct pl_metab {
    pl_strtab reactions, metabolites;
    int32_t *rmr_rxn, *rmr_met;   /**< [n_rmr] */
    float *rmr_stoich;            /**< [n_rmr] */
    uint64_t n_rmr, cap_rmr;
    pl__ruleset rules;            /**< one entry per reaction with a non-empty rule */
    int32_t *gpr_gene, *gpr_rxn;  /**< [n_gpr] */
    uint64_t n_gpr, cap_gpr;
    uint64_t n_rules;             /**< reactions with a non-empty rule text */
    uint64_t n_model_genes;       /**< entries of the model's own gene list */
    uint64_t unresolved;          /**< gene occurrences in rules not resolved */
    pl_unres names;               /**< the unresolved gene names */
    /* reading state */
    const pl_names *nm;
    int strict, listed_mets;
    uint8_t *met_listed;          /* [metabolites] listed in the model's list */
    uint64_t *met_line, cap_met;  /* [metabolites] first line naming it */
    uint64_t rule_line;           /* line of the rule being compiled */
    int nomem;
} pl_metab;

/** Start reading into `m` (zeroed first): genes resolve through `nm`
 *  (borrowed until pl__metab_done()); `strict`: see above.
 *  @return 0 or -ENOMEM. */
int pl__metab_init(pl_metab *m, const pl_names *nm, int strict, pl_err *err);

/** Release everything; accepts a zeroed struct. */
void pl__metab_free(pl_metab *m);

/** Reader helpers (yeastgem.c, sbml.c). Messages name "file:line:col". */

/** Note metabolite `s` as listed by the model's metabolite list at `line`.
 *  A metabolite listed twice is an error. */
int pl__metab_list_met(pl_metab *m, const char *file, uint64_t line, uint64_t col,
                       const char *s, size_t len, pl_err *err);

/** Add reaction `s` (a reaction given twice is an error); its index in `*r`. */
int pl__metab_reaction(pl_metab *m, const char *file, uint64_t line, uint64_t col,
                       const char *s, size_t len, int64_t *r, pl_err *err);

/** Add the RMR entry (r, metabolite `s`, `stoich`) read at file:line:col; a
 *  metabolite named twice by one reaction is an error. */
int pl__metab_rmr(pl_metab *m, const char *file, uint64_t line, uint64_t col, int64_t r,
                  const char *s, size_t len, double stoich, pl_err *err);

/** Compile reaction r's rule `s[0..len)` (its first byte at file:line:col)
 *  and add it with its GPR edges; an empty rule adds nothing. Errors:
 *  "file:line:col: reaction 'R': reason" ("file:line: ..." when col is 0:
 *  a rule written out from another form). */
int pl__metab_rule(pl_metab *m, int64_t r, const char *file, uint64_t line, uint64_t col,
                   const char *s, size_t len, pl_err *err);

/** Fail with PL_EPARSE at line `line`, column `col` of `file`: the message
 *  "file:line:col: " and `fmt` formatted with `ap` (at most 599 bytes of it),
 *  the readers' errors at a place in their input.
 *  @return PL_EPARSE. */
int pl__metab_vfail(pl_err *err, const char *file, uint64_t line, uint64_t col,
                    const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

/** Finish: every metabolite a reaction names is in the model's list when the
 *  model has one ("file:line: metabolite 'X' is not in the model's
 *  metabolites"), at least one reaction. */
int pl__metab_done(pl_metab *m, const char *file, pl_err *err);

/** Read a yeast-GEM / COBRApy YAML model (yeastgem.c) into `m` (after
 *  pl__metab_init()). @return 0 or a negative code, the message naming
 *  "file:line:col: reason". */
int pl__metab_read_yeastgem(pl_metab *m, const char *path, pl_err *err);

/** Read an SBML Level 3 FBC model (sbml.c) into `m`, likewise. */
int pl__metab_read_sbml(pl_metab *m, const char *path, pl_err *err);

#endif
