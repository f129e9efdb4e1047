/* pl_build inputs: the genes, edges, reactions, GPR, rules and RMR files. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/npy.h"
#include "src/core/vec.h"
#include "text.h"

#include "builder.h"

/* ------------------------------------------------------------------ inputs */

int pl__build_read_names(builder *b, const char *path, pl_strtab *t, const char *what)
{
    pl__text tx;
    int rc = pl__text_open(&tx, path, b->err);
    pl__field f[2];
    while (rc == 0 && (rc = pl__text_next(&tx, b->err)) == 1) {
        int nf = pl__text_fields(&tx, f, 2);
        if (nf != 1) {
            rc = pl__text_fail(&tx, nf > 1 ? f[1].col : 1, b->err,
                               "expected one %s name per line, found %d fields", what, nf);
            break;
        }
        char what_name[32];
        snprintf(what_name, sizeof what_name, "%s name", what);
        if ((rc = pl__text_check_name(&tx, &f[0], what_name, b->err)) < 0)
            break;
        int added;
        int64_t i = pl__strtab_intern(t, f[0].s, f[0].len, &added);
        if (i < 0) {
            rc = NOMEM(b);
            break;
        }
        if (!added) {
            rc = pl__text_fail(&tx, f[0].col, b->err, "duplicate %s name '%.*s'", what,
                               (int)f[0].len, f[0].s);
            break;
        }
        rc = 0;
    }
    if (rc == 0 && t->n == 0)
        rc = pl__err(b->err, PL_EPARSE, "%s:1:1: no %s names in the file", path, what);
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}

/* Gene index of a field; -1 after counting a drop, or an error. */
static int64_t gene_of(builder *b, const pl__text *tx, const pl__field *f, uint64_t *dropped,
                       int *rc)
{
    int64_t g = pl__strtab_find(&b->genes, f->s, f->len);
    if (g >= 0)
        return g;
    if (b->o->drop_unknown_genes) {
        (*dropped)++;
        return -1;
    }
    *rc = pl__text_fail(tx, f->col, b->err, "unknown gene '%.*s'", (int)f->len, f->s);
    return -1;
}

/* Append edge (s, d) to type t. */
static int push_edge(builder *b, uint32_t t, uint64_t *cap, int64_t s, int64_t d)
{
    uint64_t n = b->n_edges[t], c = *cap;
    if (pl__grow(&b->src[t], &c, n + 1, 4) < 0 || pl__grow(&b->dst[t], cap, n + 1, 4) < 0)
        return NOMEM(b);
    b->src[t][n] = (int32_t)s;
    b->dst[t][n] = (int32_t)d;
    b->n_edges[t] = n + 1;
    return 0;
}

static int read_edges_tsv(builder *b, uint32_t t, const char *path, double min_score)
{
    pl__text tx;
    uint64_t cap = 0;
    int rc = pl__text_open(&tx, path, b->err);
    pl__field f[4];
    while (rc == 0 && (rc = pl__text_next(&tx, b->err)) == 1) {
        rc = 0;
        int nf = pl__text_fields(&tx, f, 4);
        if (nf < 2 || nf > 3) {
            rc = pl__text_fail(&tx, nf > 3 ? f[3].col : 1, b->err,
                               "expected 2 or 3 columns (src dst [score]), found %d", nf);
            break;
        }
        double score = INFINITY;
        if (nf == 3 && pl__parse_double(&f[2], &score) < 0) {
            rc = pl__text_fail(&tx, f[2].col, b->err, "bad score '%.*s'", (int)f[2].len,
                               f[2].s);
            break;
        }
        if (nf == 2 && !isnan(min_score)) {
            rc = pl__text_fail(&tx, f[1].col + f[1].len, b->err,
                               "no score column, but a minimum score is set for type '%s'",
                               b->o->type_names[t]);
            break;
        }
        int64_t s = gene_of(b, &tx, &f[0], &b->st.dropped_edges, &rc);
        if (rc < 0)
            break;
        int64_t d = s < 0 ? 0 : gene_of(b, &tx, &f[1], &b->st.dropped_edges, &rc);
        if (rc < 0)
            break;
        if (s < 0 || d < 0)
            continue;
        if (!isnan(min_score) && score < min_score) {
            b->st.filtered_edges++;
            continue;
        }
        if ((rc = push_edge(b, t, &cap, s, d)) < 0)
            break;
    }
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}

static int read_edges_npy(builder *b, uint32_t t, const char *path)
{
    pl__npy n;
    int rc = pl__npy_open(&n, path, b->err);
    if (rc == 0 && (strcmp(n.descr, "<i4") != 0 && strcmp(n.descr, "<i8") != 0))
        rc = pl__err(b->err, PL_EPARSE, "%s: edge_index dtype must be int32 or int64, "
                     "found '%s'", path, n.descr);
    if (rc == 0 && (n.ndim != 2 || n.shape[0] != 2))
        rc = pl__err(b->err, PL_EPARSE, "%s: edge_index must have shape [2, E]", path);
    if (rc == 0 && !isnan(b->o->min_score ? b->o->min_score[t] : NAN))
        rc = pl__err(b->err, PL_EPARSE, "%s: a .npy edge_index has no scores; --min-score "
                     "cannot apply to type '%s'", path, b->o->type_names[t]);
    if (rc == 0)
        rc = pl__npy_map(&n, b->err);
    uint64_t E = rc == 0 ? n.shape[1] : 0, cap = 0;
    if (rc == 0 && E > UINT32_MAX - 1)
        rc = pl__err(b->err, PL_EPARSE, "%s: too many edges", path);
    const unsigned char *data = rc == 0 ? (const unsigned char *)n.map + n.offset : NULL;
    for (uint64_t e = 0; rc == 0 && e < E; e++) {
        int64_t v[2] = {0, 0};
        for (int r = 0; r < 2; r++) {
            uint64_t i = (uint64_t)r * E + e;
            if (n.itemsize == 4) {
                int32_t x;
                memcpy(&x, data + 4 * i, 4);
                v[r] = x;
            } else {
                memcpy(&v[r], data + 8 * i, 8);
            }
            if (v[r] < 0 || (uint64_t)v[r] >= b->n_genes) {
                rc = pl__err(b->err, PL_EPARSE, "%s: edge_index[%d][%llu] = %lld is %s", path,
                             r, (unsigned long long)e, (long long)v[r],
                             v[r] < 0 ? "negative" : "not a gene index (out of range)");
                break;
            }
        }
        if (rc == 0)
            rc = push_edge(b, t, &cap, v[0], v[1]);
    }
    pl__npy_close(&n);
    return rc;
}

static int is_npy(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && !strcmp(path + n - 4, ".npy");
}

static int64_t reaction_of(builder *b, const pl__text *tx, const pl__field *f, int *rc)
{
    if (f->len == 0) {
        *rc = pl__text_fail(tx, f->col, b->err, "empty reaction name");
        return -1;
    }
    if (b->o->reactions) {
        int64_t r = pl__strtab_find(&b->reactions, f->s, f->len);
        if (r < 0)
            *rc = pl__text_fail(tx, f->col, b->err, "reaction '%.*s' is not in the reaction "
                                "list %s", (int)f->len, f->s, b->o->reactions);
        return r;
    }
    int64_t r = pl__strtab_intern(&b->reactions, f->s, f->len, NULL);
    if (r < 0)
        *rc = NOMEM(b);
    return r;
}

/* The first line of a GPR table is a header when its first field names no
 * gene and says "gene", and its second says "reaction" or "rxn" (any case). */
static int gpr_header(const builder *b, const pl__field *f)
{
    return pl__text_contains_ci(f[0].s, f[0].len, "gene") &&
           pl__strtab_find(&b->genes, f[0].s, f[0].len) < 0 &&
           (pl__text_contains_ci(f[1].s, f[1].len, "reaction") ||
            pl__text_contains_ci(f[1].s, f[1].len, "rxn"));
}

int pl__build_read_gpr(builder *b, const char *path)
{
    pl__text tx;
    int rc = pl__text_open(&tx, path, b->err);
    int first = 1;
    pl__field f[3];
    while (rc == 0 && (rc = pl__text_next(&tx, b->err)) == 1) {
        rc = 0;
        int nf = pl__text_fields(&tx, f, 3);
        if (nf != 2) {
            rc = pl__text_fail(&tx, nf > 2 ? f[2].col : 1, b->err,
                               "expected 2 columns (gene reaction), found %d", nf);
            break;
        }
        if (first && gpr_header(b, f)) {
            first = 0;
            continue;
        }
        first = 0;
        int64_t g = gene_of(b, &tx, &f[0], &b->st.dropped_gpr, &rc);
        if (rc < 0)
            break;
        int64_t r = reaction_of(b, &tx, &f[1], &rc);
        if (rc < 0)
            break;
        if (g < 0)
            continue;
        uint64_t c = b->cap_gpr;
        if (pl__grow(&b->gpr_gene, &c, b->n_gpr + 1, 4) < 0 ||
            pl__grow(&b->gpr_rxn, &b->cap_gpr, b->n_gpr + 1, 4) < 0) {
            rc = NOMEM(b);
            break;
        }
        b->gpr_gene[b->n_gpr] = (int32_t)g;
        b->gpr_rxn[b->n_gpr++] = (int32_t)r;
    }
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}

static int64_t rule_reaction(void *ctx, const pl__text *tx, const pl__field *f, int *rc)
{
    return reaction_of(ctx, tx, f, rc);
}

/* Gene-reaction rules: compiled, and their genes as the GPR edges. */
int pl__build_read_rules(builder *b, const char *path)
{
    const pl__gpr_out gpr = {&b->gpr_gene, &b->gpr_rxn, &b->n_gpr, &b->cap_gpr,
                             &b->st.dropped_gpr};
    return pl__ruleset_read(&b->rules, path, &b->genes, b->o->drop_unknown_genes,
                            rule_reaction, b, &gpr, b->err);
}

int pl__build_read_rmr(builder *b, const char *path)
{
    pl__text tx;
    int rc = pl__text_open(&tx, path, b->err);
    pl__field f[4];
    while (rc == 0 && (rc = pl__text_next(&tx, b->err)) == 1) {
        rc = 0;
        int nf = pl__text_fields(&tx, f, 4);
        if (nf != 3) {
            rc = pl__text_fail(&tx, nf > 3 ? f[3].col : 1, b->err,
                               "expected 3 columns (reaction metabolite stoichiometry), "
                               "found %d", nf);
            break;
        }
        float st;
        int pr = pl__parse_float(&f[2], &st);
        if (pr < 0 || isinf(st)) {
            rc = pl__text_fail(&tx, f[2].col, b->err,
                               pr == PL_ERANGE ? "stoichiometry '%.*s' is out of the float32 "
                                                 "range (magnitude above 3.4028235e+38)"
                                               : "bad stoichiometry '%.*s'",
                               (int)f[2].len, f[2].s);
            break;
        }
        int64_t r = reaction_of(b, &tx, &f[0], &rc);
        if (rc < 0)
            break;
        if (f[1].len == 0) {
            rc = pl__text_fail(&tx, f[1].col, b->err, "empty metabolite name");
            break;
        }
        int64_t m = pl__strtab_intern(&b->metabolites, f[1].s, f[1].len, NULL);
        uint64_t c1 = b->cap_rmr, c2 = b->cap_rmr;
        if (m < 0 || pl__grow(&b->rmr_rxn, &c1, b->n_rmr + 1, 4) < 0 ||
            pl__grow(&b->rmr_met, &c2, b->n_rmr + 1, 4) < 0 ||
            pl__grow(&b->rmr_stoich, &b->cap_rmr, b->n_rmr + 1, 4) < 0) {
            rc = NOMEM(b);
            break;
        }
        b->rmr_rxn[b->n_rmr] = (int32_t)r;
        b->rmr_met[b->n_rmr] = (int32_t)m;
        b->rmr_stoich[b->n_rmr++] = st;
    }
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}

int pl__build_read_edges(builder *b, uint32_t t, const char *path, double min_score)
{
    return is_npy(path) ? read_edges_npy(b, t, path) : read_edges_tsv(b, t, path, min_score);
}

/* ------------------------------------------------------------- in memory */

/* Intern every name of `names` into `t`; a repeated or empty name fails. */
static int take_names(builder *b, pl_strtab *t, const char *const *names, uint64_t n,
                      const char *what)
{
    for (uint64_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        PL_FAIL_IF(len == 0, b->err, PL_EPARSE, "%s %llu: empty name", what,
                   (unsigned long long)i + 1);
        int added;
        int64_t k = pl__strtab_intern(t, names[i], len, &added);
        if (k < 0)
            return NOMEM(b);
        PL_FAIL_IF(!added, b->err, PL_EPARSE, "%s %llu: duplicate name '%s'", what,
                   (unsigned long long)i + 1, names[i]);
    }
    return 0;
}

/* Check that every v[i] lies in [0, limit). */
static int check_index(builder *b, const int32_t *v, uint64_t n, uint64_t limit,
                       const char *what, const char *of)
{
    for (uint64_t i = 0; i < n; i++)
        PL_FAIL_IF(v[i] < 0 || (uint64_t)v[i] >= limit, b->err, PL_EPARSE,
                   "%s[%llu] = %d is not a %s index (%llu of them)", what,
                   (unsigned long long)i, v[i], of, (unsigned long long)limit);
    return 0;
}

/* A copy of n int32/float values (4 bytes each) into *dst. */
static int copy4(builder *b, void *dst, const void *src, uint64_t n)
{
    void **d = dst;
    *d = malloc(n ? 4 * n : 1);
    if (!*d)
        return NOMEM(b);
    if (n)
        memcpy(*d, src, 4 * n);
    return 0;
}

int pl__build_take_genes(builder *b, const char *const *names, uint64_t n)
{
    PL_FAIL_IF(n == 0, b->err, PL_EPARSE, "genes: no gene names");
    PL_FAIL_IF(n > INT32_MAX, b->err, PL_EPARSE, "genes: too many genes");
    return take_names(b, &b->genes, names, n, "gene");
}

int pl__build_take_edges(builder *b, uint32_t t, const pl__build_edges *e)
{
    PL_FAIL_IF(e->n >= UINT32_MAX, b->err, PL_EPARSE, "edge type '%s': too many edges",
               e->name);
    PL_TRY(check_index(b, e->src, e->n, b->n_genes, "src", "gene"));
    PL_TRY(check_index(b, e->dst, e->n, b->n_genes, "dst", "gene"));
    PL_TRY(copy4(b, &b->src[t], e->src, e->n));
    PL_TRY(copy4(b, &b->dst[t], e->dst, e->n));
    b->n_edges[t] = e->n;
    return 0;
}

/* Rules by reaction: each reaction at most once and in range, every gene
 * word a gene index. */
static int check_rules(builder *b, const pl__ruleset *rs)
{
    for (uint64_t i = 0; i < rs->n; i++) {
        PL_TRY(check_index(b, &rs->rxn[i], 1, b->reactions.n, "rules reaction", "reaction"));
        for (uint64_t w = rs->off[i]; w < rs->off[i + 1]; w++)
            PL_FAIL_IF(rs->code[w] < 0xFFFFFFFDu && rs->code[w] >= b->n_genes, b->err,
                       PL_EPARSE, "rule of reaction '%s': gene %u is not a gene index",
                       b->reactions.names[rs->rxn[i]], rs->code[w]);
    }
    return 0;
}

int pl__build_take_metabolism(builder *b, const pl__build_metabolism *m)
{
    PL_TRY(take_names(b, &b->reactions, m->reactions, m->n_reactions, "reaction"));
    PL_TRY(take_names(b, &b->metabolites, m->metabolites, m->n_metabolites, "metabolite"));
    PL_FAIL_IF(m->n_gpr > INT32_MAX || m->n_rmr > INT32_MAX, b->err, PL_EPARSE,
               "metabolism: too many GPR or RMR edges");
    PL_TRY(check_index(b, m->gpr_gene, m->n_gpr, b->n_genes, "gpr gene", "gene"));
    PL_TRY(check_index(b, m->gpr_rxn, m->n_gpr, m->n_reactions, "gpr reaction", "reaction"));
    PL_TRY(check_index(b, m->rmr_rxn, m->n_rmr, m->n_reactions, "rmr reaction", "reaction"));
    PL_TRY(check_index(b, m->rmr_met, m->n_rmr, m->n_metabolites, "rmr metabolite",
                       "metabolite"));
    for (uint64_t i = 0; i < m->n_rmr; i++)
        PL_FAIL_IF(!isfinite(m->rmr_stoich[i]), b->err, PL_EPARSE,
                   "rmr stoichiometry[%llu] is not finite", (unsigned long long)i);
    PL_TRY(copy4(b, &b->gpr_gene, m->gpr_gene, m->n_gpr));
    PL_TRY(copy4(b, &b->gpr_rxn, m->gpr_rxn, m->n_gpr));
    PL_TRY(copy4(b, &b->rmr_rxn, m->rmr_rxn, m->n_rmr));
    PL_TRY(copy4(b, &b->rmr_met, m->rmr_met, m->n_rmr));
    PL_TRY(copy4(b, &b->rmr_stoich, m->rmr_stoich, m->n_rmr));
    b->n_gpr = b->cap_gpr = m->n_gpr;
    b->n_rmr = b->cap_rmr = m->n_rmr;
    if (m->rules) {
        PL_TRY(check_rules(b, m->rules));
        b->rs = m->rules;
    }
    return 0;
}
