/* Reading `--rules` files into compiled rules and GPR edges (ruleset.h). */
#include "ruleset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/core/error.h"
#include "src/core/vec.h"

typedef struct resolve_ctx {
    const pl_strtab *genes;
    int drop_unknown;
} resolve_ctx;

static int64_t resolve_gene(void *ctx, const char *name, size_t len)
{
    const resolve_ctx *c = ctx;
    int64_t g = pl__strtab_find(c->genes, name, len);
    if (g >= 0)
        return g;
    return c->drop_unknown ? PL__GENE_PRESENT : -1;
}

int pl__ruleset_add(pl__ruleset *rs, int32_t rxn, const uint32_t *code, uint32_t n)
{
    if (pl__grow(&rs->rxn, &rs->cap, rs->n + 1, sizeof *rs->rxn) < 0 ||
        pl__grow(&rs->off, &rs->cap_off, rs->n + 2, sizeof *rs->off) < 0)
        return -ENOMEM;
    uint64_t at = rs->n ? rs->off[rs->n] : 0;
    if (pl__grow(&rs->code, &rs->cap_code, at + n, sizeof *rs->code) < 0)
        return -ENOMEM;
    rs->off[0] = 0;
    if (n)
        memcpy(rs->code + at, code, n * sizeof *code);
    rs->rxn[rs->n++] = rxn;
    rs->off[rs->n] = at + n;
    return 0;
}

/* The first line is a header when its rule is one word naming a rule column. */
static int is_header(const pl_strtab *genes, const char *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (r[i] == ' ' || r[i] == '\t' || r[i] == '(' || r[i] == ')')
            return 0;
    return n > 0 && (pl__text_contains_ci(r, n, "rule") || pl__text_contains_ci(r, n, "gpr")) &&
           pl__strtab_find(genes, r, n) < 0;
}

int pl__gpr_add(const pl__gpr_out *o, const pl__rule *rule, int64_t r)
{
    uint64_t n = *o->n, c = *o->cap;
    if (pl__grow(o->gene, &c, n + rule->n_genes, 4) < 0 ||
        pl__grow(o->rxn, o->cap, n + rule->n_genes, 4) < 0)
        return -ENOMEM;
    for (uint32_t i = 0; i < rule->n_genes; i++) {
        (*o->gene)[n + i] = (int32_t)rule->genes[i];
        (*o->rxn)[n + i] = (int32_t)r;
    }
    *o->n = n + rule->n_genes;
    *o->dropped += rule->n_present;
    return 0;
}

static int read_line(pl__ruleset *rs, pl__text *tx, int first, resolve_ctx *rc_ctx,
                     pl__reaction_resolver reaction, void *rctx, const pl__gpr_out *gpr,
                     pl_err *err)
{
    pl__field f[3];
    int nf = pl__text_fields(tx, f, 3);
    const char *rule;
    size_t rlen;
    uint32_t rcol;
    if (memchr(tx->cur, '\t', tx->cur_len)) {
        if (nf > 2)
            return pl__text_fail(tx, f[2].col, err, "expected 2 tab-separated columns "
                                 "(reaction rule), found %d", nf);
        rule = nf == 2 ? f[1].s : "";
        rlen = nf == 2 ? f[1].len : 0;
        rcol = nf == 2 ? f[1].col : (uint32_t)tx->cur_len + 1;
    } else {
        /* Without a tab: the reaction, then the rest of the line. */
        rule = nf >= 2 ? f[1].s : "";
        rlen = nf >= 2 ? (size_t)(tx->cur + tx->cur_len - f[1].s) : 0;
        rcol = nf >= 2 ? f[1].col : (uint32_t)tx->cur_len + 1;
        while (rlen && (rule[rlen - 1] == ' ' || rule[rlen - 1] == '\t'))
            rlen--;
    }
    if (first && is_header(rc_ctx->genes, rule, rlen))
        return 0;
    int rc = 0;
    int64_t r = reaction(rctx, tx, &f[0], &rc);
    if (rc < 0)
        return rc;
    uint64_t had = rs->cap_line;
    if (pl__grow(&rs->line_of, &rs->cap_line, (uint64_t)r + 1, sizeof *rs->line_of) < 0)
        return pl__err(err, -ENOMEM, "out of memory");
    if (rs->cap_line > had)
        memset(rs->line_of + had, 0, (rs->cap_line - had) * sizeof *rs->line_of);
    if (rs->line_of[r])
        return pl__text_fail(tx, f[0].col, err, "reaction '%.*s' has a rule already (line "
                             "%llu)", (int)f[0].len, f[0].s,
                             (unsigned long long)rs->line_of[r]);
    uint32_t col = 0;
    char why[512];
    rc = pl__rule_compile(rule, rlen, rcol, resolve_gene, rc_ctx, &rs->rule, &col, why,
                          sizeof why);
    if (rc == PL_EPARSE)
        return pl__text_fail(tx, rcol + col, err, "reaction '%.*s': %s", (int)f[0].len,
                             f[0].s, why);
    if (rc < 0 || pl__gpr_add(gpr, &rs->rule, r) < 0 ||
        pl__ruleset_add(rs, (int32_t)r, rs->rule.code, rs->rule.n) < 0)
        return pl__err(err, -ENOMEM, "out of memory");
    rs->line_of[r] = tx->line;
    return 0;
}

int pl__ruleset_read(pl__ruleset *rs, const char *path, const pl_strtab *genes,
                     int drop_unknown, pl__reaction_resolver reaction, void *rctx,
                     const pl__gpr_out *gpr, pl_err *err)
{
    pl__text tx;
    resolve_ctx c = {genes, drop_unknown};
    int rc = pl__text_open(&tx, path, err);
    for (int first = 1; rc == 0 && (rc = pl__text_next(&tx, err)) == 1; first = 0)
        rc = read_line(rs, &tx, first, &c, reaction, rctx, gpr, err);
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}

int pl__ruleset_value(const pl__ruleset *rs, uint64_t n_reactions, void **out, size_t *len,
                      uint64_t *words)
{
    uint64_t total = rs->n ? rs->off[rs->n] : 0;
    size_t bytes = (size_t)(n_reactions + 1 + total) * sizeof(uint32_t);
    uint32_t *v = calloc(1, bytes), *code;
    if (!v)
        return -ENOMEM;
    code = v + n_reactions + 1;
    /* Lengths by reaction, then offsets, then the programs in reaction order. */
    for (uint64_t i = 0; i < rs->n; i++)
        v[rs->rxn[i] + 1] = (uint32_t)(rs->off[i + 1] - rs->off[i]);
    for (uint64_t r = 0; r < n_reactions; r++)
        v[r + 1] += v[r];
    for (uint64_t i = 0; i < rs->n; i++)
        memcpy(code + v[rs->rxn[i]], rs->code + rs->off[i],
               (rs->off[i + 1] - rs->off[i]) * sizeof *code);
    *out = v;
    *len = bytes;
    *words = total;
    return 0;
}

int pl__ruleset_check_opts(const pl_build_opts *o, pl_err *err)
{
    PL_FAIL_IF(o->rules && o->gpr, err, PL_EUSAGE, "--gpr %s and --rules %s: the rules give "
               "the GPR edges; give one of them", o->gpr, o->rules);
    PL_FAIL_IF(o->reaction_rule < PL_REACTION_DEFAULT || o->reaction_rule > PL_REACTION_GPR,
               err, PL_EUSAGE, "unknown reaction rule %d", o->reaction_rule);
    PL_FAIL_IF(o->reaction_rule == PL_REACTION_GPR && !o->rules, err, PL_EUSAGE,
               "the reaction rule gpr needs gene-reaction rules (--rules)");
    return 0;
}

int pl__ruleset_meta(const pl__ruleset *rs, const pl_build_opts *o, struct pl__meta *m,
                     pl_err *err)
{
    m->n_rules = 0;
    for (uint64_t i = 0; i < rs->n; i++)
        m->n_rules += rs->off[i + 1] > rs->off[i];
    m->n_rule_words = m->n_rules ? rs->off[rs->n] : 0;
    m->reaction_rule = o->reaction_rule != PL_REACTION_DEFAULT ? (uint32_t)o->reaction_rule
                       : m->n_rules                           ? PL_REACTION_GPR
                                                              : PL_REACTION_ANY;
    PL_FAIL_IF(m->reaction_rule == PL_REACTION_GPR && m->n_rules == 0, err, PL_EPARSE,
               "%s: no reaction has a rule (the reaction rule gpr needs one)", o->rules);
    PL_FAIL_IF(m->n_rule_words > UINT32_MAX, err, PL_EPARSE, "%s: the rules are too large",
               o->rules);
    return 0;
}

int pl__ruleset_put(const pl__ruleset *rs, MDB_txn *txn, MDB_dbi dbi,
                    const struct pl__meta *m, pl_err *err)
{
    void *v;
    size_t len;
    uint64_t words;
    if (m->n_rules == 0)
        return 0;
    if (pl__ruleset_value(rs, m->n_reactions, &v, &len, &words) < 0)
        return pl__err(err, -ENOMEM, "out of memory");
    int rc = pl__db_put_zstd(txn, dbi, PL_DBI_EDGES, "rules", 5, v, len, err);
    free(v);
    return rc;
}

void pl__ruleset_free(pl__ruleset *rs)
{
    free(rs->rxn);
    free(rs->off);
    free(rs->code);
    free(rs->line_of);
    pl__rule_free(&rs->rule);
    memset(rs, 0, sizeof *rs);
}
