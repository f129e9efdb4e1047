/* Compiled gene-reaction rules: the stored form and its evaluation.
 *
 * A reaction's rule (`(A and B) or C`, DESIGN section 2, rule `gpr`) is kept
 * as a postfix boolean program of uint32 words:
 *   w < PL__RULE_OP_MIN   push "gene w is not deleted"
 *   PL__RULE_AND          pop two, push their conjunction
 *   PL__RULE_OR           pop two, push their disjunction
 *   PL__RULE_TRUE         push true (a gene outside the gene list: it can
 *                         never be deleted)
 * A valid program leaves exactly one value; an empty program means the
 * reaction has no rule (it is never removed).
 *
 * Why a program and not disjunctive clauses: converting a rule to clauses can
 * grow exponentially ((A1 or B1) and ... and (An or Bn) has 2^n clauses),
 * whereas the program is linear in the rule's size. The stack is a uint64
 * of bits: the compiler emits the operand that needs the deeper stack first
 * (Sethi-Ullman order), so a rule of n genes needs at most log2(n) + 2
 * levels, and PL__RULE_MAX_DEPTH (64) holds any rule of fewer than 2^62
 * genes. Evaluation is one pass over the words with no allocation.
 */
#ifndef PL_CORE_RULE_H
#define PL_CORE_RULE_H

#include <stdint.h>

#include "pertload.h"

#define PL__RULE_AND 0xFFFFFFFFu
#define PL__RULE_OR 0xFFFFFFFEu
#define PL__RULE_TRUE 0xFFFFFFFDu
#define PL__RULE_OP_MIN 0xFFFFFFFDu /**< words from here on are operators */
#define PL__RULE_MAX_DEPTH 64u

/** Check a program of `n` words: every gene word below `n_genes`, the stack
 *  never underflows nor exceeds PL__RULE_MAX_DEPTH, and one value is left
 *  (n == 0: no rule, valid).
 *  @param depth set to the deepest stack the program uses (0 when n == 0).
 *  @return 0, or -1 with the offending word's index in `*at`. */
int pl__rule_check(const uint32_t *code, uint32_t n, uint64_t n_genes, uint32_t *depth,
                   uint32_t *at);

/** Decode the value edges/"rules" (decompressed, `len` bytes; see
 *  dbformat.h): offsets ascending within the programs, every program checked
 *  (pl__rule_check) and `n_rules` of them non-empty.
 *  @param off, code set to point into `v`; @param depth set to the deepest
 *  stack of any program.
 *  @return 0 or PL_ECORRUPT naming the reaction. */
int pl__rules_decode(const void *v, size_t len, uint64_t n_reactions, uint64_t n_words,
                     uint64_t n_rules, uint64_t n_genes, const uint32_t **off,
                     const uint32_t **code, uint32_t *depth, pl_err *err);

/** Whether gene `g` is among the sorted deleted genes `p[0..np)`. */
static inline int pl__rule_deleted(const int32_t *p, uint32_t np, uint32_t g)
{
    if (np <= 8) {
        int hit = 0;
        for (uint32_t i = 0; i < np; i++)
            hit |= (uint32_t)p[i] == g;
        return hit;
    }
    uint32_t lo = 0, hi = np;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if ((uint32_t)p[mid] < g)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < np && (uint32_t)p[lo] == g;
}

/** Evaluate a checked, non-empty program with the genes `p[0..np)` (sorted
 *  ascending) deleted and every other gene present.
 *  @return 1 when the rule holds (the reaction survives), 0 when not. */
static inline int pl__rule_eval(const uint32_t *code, uint32_t n, const int32_t *p,
                                uint32_t np)
{
    uint64_t s = 0; /* bit 0 is the top of the stack */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = code[i];
        if (w < PL__RULE_OP_MIN)
            s = s << 1 | (uint64_t)!pl__rule_deleted(p, np, w);
        else if (w == PL__RULE_AND)
            s = (s >> 1) & (s | ~(uint64_t)1);
        else if (w == PL__RULE_OR)
            s = (s >> 1) | (s & 1);
        else
            s = s << 1 | 1;
    }
    return (int)(s & 1);
}

#endif
