/* Checking compiled gene-reaction rules (rule.h): every program read from a
 * database passes here before the masks engine evaluates it. */
#include "rule.h"

#include "error.h"

int pl__rule_check(const uint32_t *code, uint32_t n, uint64_t n_genes, uint32_t *depth,
                   uint32_t *at)
{
    uint32_t d = 0, most = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = code[i];
        *at = i;
        if (w == PL__RULE_AND || w == PL__RULE_OR) {
            if (d < 2)
                return -1;
            d--;
            continue;
        }
        if (w < PL__RULE_OP_MIN && w >= n_genes)
            return -1;
        if (++d > PL__RULE_MAX_DEPTH)
            return -1;
        most = d > most ? d : most;
    }
    *at = n;
    if (n > 0 && d != 1)
        return -1;
    *depth = most;
    return 0;
}

int pl__rules_decode(const void *v, size_t len, uint64_t n_reactions, uint64_t n_words,
                     uint64_t n_rules, uint64_t n_genes, const uint32_t **off,
                     const uint32_t **code, uint32_t *depth, pl_err *err)
{
    const uint32_t *o = v;
    PL_FAIL_IF(len != (n_reactions + 1 + n_words) * sizeof(uint32_t), err, PL_ECORRUPT,
               "key edges/rules: %zu bytes, expected %llu", len,
               (unsigned long long)((n_reactions + 1 + n_words) * sizeof(uint32_t)));
    PL_FAIL_IF(o[0] != 0 || o[n_reactions] != n_words, err, PL_ECORRUPT,
               "key edges/rules: offsets do not span the programs");
    const uint32_t *c = o + n_reactions + 1;
    uint64_t with = 0;
    uint32_t most = 0;
    for (uint64_t r = 0; r < n_reactions; r++) {
        uint32_t d, at;
        PL_FAIL_IF(o[r + 1] < o[r] || o[r + 1] > n_words, err, PL_ECORRUPT,
                   "key edges/rules: offset of reaction %llu out of order",
                   (unsigned long long)r);
        PL_FAIL_IF(pl__rule_check(c + o[r], o[r + 1] - o[r], n_genes, &d, &at) < 0, err,
                   PL_ECORRUPT, "key edges/rules: the rule of reaction %llu is malformed "
                   "at word %u", (unsigned long long)r, at);
        with += o[r + 1] > o[r];
        most = d > most ? d : most;
    }
    PL_FAIL_IF(with != n_rules, err, PL_ECORRUPT, "key edges/rules: %llu reactions have "
               "rules, the metadata says %llu", (unsigned long long)with,
               (unsigned long long)n_rules);
    *off = o;
    *code = c;
    *depth = most;
    return 0;
}
