/* The in-memory metabolism of a model file (metab.h): what the readers
 * share. */
#include "metab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/vec.h"

#define NOMEM(err, file) pl__err((err), -ENOMEM, "%s: out of memory", (file))

int pl__metab_vfail(pl_err *err, const char *file, uint64_t line, uint64_t col,
                    const char *fmt, va_list ap)
{
    char why[600];
    vsnprintf(why, sizeof why, fmt, ap);
    return pl__err(err, PL_EPARSE, "%s:%llu:%llu: %s", file, (unsigned long long)line,
                   (unsigned long long)col, why);
}

int pl__metab_init(pl_metab *m, const pl_names *nm, int strict, pl_err *err)
{
    memset(m, 0, sizeof *m);
    m->nm = nm;
    m->strict = strict;
    if (pl__strtab_init(&m->reactions) < 0 || pl__strtab_init(&m->metabolites) < 0) {
        pl__metab_free(m);
        return pl__err(err, -ENOMEM, "out of memory");
    }
    return 0;
}

void pl__metab_free(pl_metab *m)
{
    pl__strtab_free(&m->reactions);
    pl__strtab_free(&m->metabolites);
    free(m->rmr_rxn);
    free(m->rmr_met);
    free(m->rmr_stoich);
    pl__ruleset_free(&m->rules);
    free(m->gpr_gene);
    free(m->gpr_rxn);
    pl__unres_free(&m->names);
    free(m->met_listed);
    free(m->met_line);
    memset(m, 0, sizeof *m);
}

/* Intern metabolite s; first sight recorded with `line`. */
static int64_t met_of(pl_metab *m, const char *s, size_t len, uint64_t line, int *added)
{
    int64_t i = pl__strtab_intern(&m->metabolites, s, len, added);
    if (i < 0)
        return i;
    uint64_t c = m->cap_met;
    if (pl__grow(&m->met_line, &c, (uint64_t)i + 1, sizeof *m->met_line) < 0 ||
        pl__grow(&m->met_listed, &m->cap_met, (uint64_t)i + 1, 1) < 0)
        return -ENOMEM;
    if (*added) {
        m->met_line[i] = line;
        m->met_listed[i] = 0;
    }
    return i;
}

int pl__metab_list_met(pl_metab *m, const char *file, uint64_t line, uint64_t col,
                       const char *s, size_t len, pl_err *err)
{
    PL_FAIL_IF(len == 0, err, PL_EPARSE, "%s:%llu:%llu: empty metabolite id", file,
               (unsigned long long)line, (unsigned long long)col);
    int added;
    int64_t i = met_of(m, s, len, line, &added);
    PL_FAIL_IF(i < 0, err, -ENOMEM, "%s: out of memory", file);
    PL_FAIL_IF(m->met_listed[i], err, PL_EPARSE, "%s:%llu:%llu: metabolite '%.*s' listed "
               "twice (first on line %llu)", file, (unsigned long long)line,
               (unsigned long long)col, (int)(len > 80 ? 80 : len), s,
               (unsigned long long)m->met_line[i]);
    m->met_listed[i] = 1;
    m->met_line[i] = line;
    m->listed_mets = 1;
    return 0;
}

int pl__metab_reaction(pl_metab *m, const char *file, uint64_t line, uint64_t col,
                       const char *s, size_t len, int64_t *r, pl_err *err)
{
    PL_FAIL_IF(len == 0, err, PL_EPARSE, "%s:%llu:%llu: empty reaction id", file,
               (unsigned long long)line, (unsigned long long)col);
    PL_FAIL_IF(m->reactions.n >= INT32_MAX, err, PL_EPARSE, "%s:%llu: too many reactions",
               file, (unsigned long long)line);
    int added;
    *r = pl__strtab_intern(&m->reactions, s, len, &added);
    PL_FAIL_IF(*r < 0, err, -ENOMEM, "%s: out of memory", file);
    PL_FAIL_IF(!added, err, PL_EPARSE, "%s:%llu:%llu: reaction '%.*s' given twice", file,
               (unsigned long long)line, (unsigned long long)col, (int)(len > 80 ? 80 : len),
               s);
    return 0;
}

int pl__metab_rmr(pl_metab *m, const char *file, uint64_t line, uint64_t col, int64_t r,
                  const char *s, size_t len, double stoich, pl_err *err)
{
    PL_FAIL_IF(len == 0, err, PL_EPARSE, "%s:%llu:%llu: reaction '%s': empty metabolite id",
               file, (unsigned long long)line, (unsigned long long)col,
               m->reactions.names[r]);
    int added;
    int64_t i = met_of(m, s, len, line, &added);
    for (uint64_t k = m->n_rmr; i >= 0 && !added && k-- > 0 && m->rmr_rxn[k] == r;)
        PL_FAIL_IF(m->rmr_met[k] == i, err, PL_EPARSE, "%s:%llu:%llu: reaction '%s' names "
                   "metabolite '%.*s' twice", file, (unsigned long long)line,
                   (unsigned long long)col, m->reactions.names[r], (int)(len > 80 ? 80 : len),
                   s);
    uint64_t n = m->n_rmr, c1 = m->cap_rmr, c2 = m->cap_rmr;
    if (i < 0 || pl__grow(&m->rmr_rxn, &c1, n + 1, 4) < 0 ||
        pl__grow(&m->rmr_met, &c2, n + 1, 4) < 0 ||
        pl__grow(&m->rmr_stoich, &m->cap_rmr, n + 1, 4) < 0)
        return pl__err(err, -ENOMEM, "out of memory");
    m->rmr_rxn[n] = (int32_t)r;
    m->rmr_met[n] = (int32_t)i;
    m->rmr_stoich[n] = (float)stoich;
    m->n_rmr = n + 1;
    return 0;
}

static int64_t resolve(void *ctx, const char *name, size_t len)
{
    pl_metab *m = ctx;
    int64_t g = pl__names_resolve(m->nm, name, len);
    if (g >= 0 || m->strict)
        return g;
    m->unresolved++;
    if (pl__unres_add(&m->names, name, len, m->rule_line) < 0)
        m->nomem = 1;
    return PL__GENE_PRESENT;
}

int pl__metab_rule(pl_metab *m, int64_t r, const char *file, uint64_t line, uint64_t col,
                   const char *s, size_t len, pl_err *err)
{
    size_t i = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n'))
        i++;
    if (i == len)
        return 0;
    uint32_t at = 0;
    char why[512];
    m->rule_line = line;
    int rc = pl__rule_compile(s, len, (uint32_t)(col ? col : 1), resolve, m, &m->rules.rule, &at, why,
                              sizeof why);
    if (rc == PL_EPARSE && col == 0)
        return pl__err(err, PL_EPARSE, "%s:%llu: reaction '%s': %s", file,
                       (unsigned long long)line, m->reactions.names[r], why);
    if (rc == PL_EPARSE)
        return pl__err(err, PL_EPARSE, "%s:%llu:%llu: reaction '%s': %s", file,
                       (unsigned long long)line, (unsigned long long)(col + at),
                       m->reactions.names[r], why);
    pl__gpr_out o = {&m->gpr_gene, &m->gpr_rxn, &m->n_gpr, &m->cap_gpr, &(uint64_t){0}};
    if (rc < 0 || m->nomem || pl__gpr_add(&o, &m->rules.rule, r) < 0 ||
        pl__ruleset_add(&m->rules, (int32_t)r, m->rules.rule.code, m->rules.rule.n) < 0)
        return NOMEM(err, file);
    m->n_rules++;
    return 0;
}

int pl__metab_done(pl_metab *m, const char *file, pl_err *err)
{
    PL_FAIL_IF(m->reactions.n == 0, err, PL_EPARSE, "%s: the model has no reactions", file);
    if (!m->listed_mets)
        return 0;
    for (uint32_t i = 0; i < m->metabolites.n; i++)
        PL_FAIL_IF(!m->met_listed[i], err, PL_EPARSE, "%s:%llu: metabolite '%s' is not in the "
                   "model's metabolites", file, (unsigned long long)m->met_line[i],
                   m->metabolites.names[i]);
    return 0;
}
