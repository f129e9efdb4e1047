/* The gene-reaction rules of a build: read from `--rules` (TSV
 * `reaction<TAB>rule`), compiled (rules.h), turned into GPR edges and stored
 * as the database value edges/"rules" (src/core/dbformat.h).
 *
 * The GPR edges of a rules file are, line by line, the distinct genes of the
 * line's rule in order of first appearance in the rule: `(A and B) or (A and
 * C)` gives (A, r), (B, r), (C, r). A gene outside the gene list is an error
 * naming the line and column; with drop_unknown it is taken as always present
 * (no sample can delete it: `A or X` is never false, `A and X` is `A`), gives
 * no GPR edge and is counted as a dropped GPR record.
 */
#ifndef PL_PREPROCESS_RULESET_H
#define PL_PREPROCESS_RULESET_H

#include <stdint.h>

#include "pertload.h"
#include "rules.h"
#include "src/core/dbformat.h"
#include "src/core/strtab.h"
#include "text.h"

/** Rules by reaction, in the order given. */
typedef struct pl__ruleset {
    uint64_t n;          /**< rules */
    int32_t *rxn;        /**< [n] reaction of rule i */
    uint64_t *off;       /**< [n + 1] rule i is code[off[i] .. off[i + 1]) */
    uint32_t *code;
    uint64_t cap, cap_off, cap_code;
    uint64_t *line_of;   /**< [reaction] line of its rule, 0 = none yet */
    uint64_t cap_line;
    pl__rule rule;       /**< compiler scratch */
} pl__ruleset;

/** Where GPR edges derived from the rules go (the builder's arrays). */
typedef struct pl__gpr_out {
    int32_t **gene, **rxn;
    uint64_t *n, *cap;
    uint64_t *dropped;   /**< genes taken as present, counted */
} pl__gpr_out;

/** The builder's reaction lookup for a field of the rules file: its index,
 *  or -1 with *rc set to the error (a reaction not in the reaction list). */
typedef int64_t (*pl__reaction_resolver)(void *ctx, const pl__text *tx, const pl__field *f,
                                         int *rc);

/** Read a rules file: a first line whose rule column is one word holding
 *  "rule" or "gpr" (any case) that is not a gene name is a header; a line
 *  with a tab has one or two tab-separated columns, any other line is the
 *  reaction, spaces, then the rule; an empty rule is a reaction without
 *  genes. A reaction given twice, a rule that does not parse or names an
 *  unknown gene is PL_EPARSE "file:line:column: reaction 'R': reason".
 *  @param genes the gene names; @param drop_unknown see above. */
int pl__ruleset_read(pl__ruleset *rs, const char *path, const pl_strtab *genes,
                     int drop_unknown, pl__reaction_resolver reaction, void *rctx,
                     const pl__gpr_out *gpr, pl_err *err);

/** Add a compiled rule for reaction `rxn` (the importers' entry point; the
 *  reader uses it). @return 0 or -ENOMEM. */
int pl__ruleset_add(pl__ruleset *rs, int32_t rxn, const uint32_t *code, uint32_t n);

/** Append the GPR edges of `rule` (just compiled) for reaction `r`: its
 *  distinct genes in order of first appearance; genes taken as present are
 *  counted in *o->dropped. @return 0 or -ENOMEM. */
int pl__gpr_add(const pl__gpr_out *o, const pl__rule *rule, int64_t r);

/** The stored value for `n_reactions` reactions: uint32 off[n_reactions + 1]
 *  then the programs' words (a reaction without a rule has an empty one).
 *  @param out set to a malloc'd buffer of `*len` bytes; @param words set to
 *  the number of program words. @return 0 or -ENOMEM. */
int pl__ruleset_value(const pl__ruleset *rs, uint64_t n_reactions, void **out, size_t *len,
                      uint64_t *words);

/** Check the rule options of a build: `rules` and `gpr` exclude each other
 *  (the rules give the GPR edges), rule GPR needs `rules`.
 *  @return 0 or PL_EUSAGE. */
int pl__ruleset_check_opts(const pl_build_opts *o, pl_err *err);

/** Fill the rule fields of the metadata from the rules read: the reaction
 *  rule (the default is GPR when a reaction has a non-empty rule, else ANY),
 *  n_rules and n_rule_words. @return 0 or PL_EPARSE (rule GPR asked for and
 *  no reaction has a rule; programs too large). */
int pl__ruleset_meta(const pl__ruleset *rs, const pl_build_opts *o, struct pl__meta *m,
                     pl_err *err);

/** Store edges/"rules" (pl__ruleset_value()) when m->n_rules > 0. */
int pl__ruleset_put(const pl__ruleset *rs, MDB_txn *txn, MDB_dbi dbi,
                    const struct pl__meta *m, pl_err *err);

/** Free everything; the struct is zeroed. */
void pl__ruleset_free(pl__ruleset *rs);

#endif
