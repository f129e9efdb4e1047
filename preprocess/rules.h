/* The gene-reaction rule compiler: text (COBRApy's gene_reaction_rule
 * grammar) -> the postfix program of src/core/rule.h.
 *
 * Grammar: `or` binds looser than `and` (as in Python, which COBRApy
 * evaluates); operators are the words and/or in any case (`AND`, `Or`);
 * parentheses group; a gene is any other run of characters up to white
 * space or a parenthesis. An empty (or all-blank) rule is "no rule". The
 * words `not`, `&`, `&&`, `|`, `||`, `!` and `~` are refused as operators
 * COBRApy's rules do not have. Parentheses nest at most PL__RULE_MAX_NEST
 * deep.
 *
 * Nested operators of one kind are flattened, genes the resolver declares
 * always present fold away (`A or X` is always true, `A and X` is `A`), and
 * operands are emitted deepest first so the program's stack stays within
 * PL__RULE_MAX_DEPTH.
 */
#ifndef PL_PREPROCESS_RULES_H
#define PL_PREPROCESS_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "pertload.h"

#define PL__RULE_MAX_NEST 1000

/** Resolver result for a gene outside the gene list that is to be taken as
 *  always present (a gene that no sample can delete). */
#define PL__GENE_PRESENT (-2)

/** Look up the gene `name[0..len)`.
 *  @return its index (>= 0), PL__GENE_PRESENT, or -1: unknown, an error. */
typedef int64_t (*pl__gene_resolver)(void *ctx, const char *name, size_t len);

/** A compiled rule; zero-initialise, reuse between calls, free with
 *  pl__rule_free(). */
typedef struct pl__rule {
    uint32_t *code;   /**< the program ([n]; n == 0: no rule) */
    uint32_t n;
    uint32_t *genes;  /**< the distinct resolved genes in order of first
                           appearance in the text ([n_genes]) */
    uint32_t n_genes;
    uint32_t n_present; /**< gene names resolved as PL__GENE_PRESENT */
    uint64_t cap_code, cap_genes;
    void *scratch;    /**< parser state, kept between calls */
} pl__rule;

/** Compile `s[0..len)`.
 *  @param col0 the 1-based column of s[0] in its line, for the messages that
 *  name another position (a '(' left open).
 *  @param col on a parse error, set to the 0-based byte offset in `s` where
 *  the problem is (the end of the text for a missing operand or ')').
 *  @param why on a parse error, the reason ("unknown gene 'X'", "expected
 *  ')' to close the '(' at column N", ...), NUL-terminated in `cap` bytes.
 *  @return 0, PL_EPARSE, or -ENOMEM. */
int pl__rule_compile(const char *s, size_t len, uint32_t col0, pl__gene_resolver resolve,
                     void *ctx, pl__rule *out, uint32_t *col, char *why, size_t cap);

/** Free what pl__rule_compile() allocated; the struct can be reused. */
void pl__rule_free(pl__rule *r);

#endif
