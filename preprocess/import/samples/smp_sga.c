/* Costanzo et al. 2016 SGA tables (samples.h, format `sga`): one double
 * mutant per row, the query and array strains' genes deleted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "smp.h"
#include "src/core/error.h"

enum { NCOLS = 11 };

/* The published header's columns the reader takes, and their label names. */
static const struct {
    const char *column, *label;
} labels[] = {
    {"Genetic interaction score (\xce\xb5)", "epsilon"},
    {"P-value", "pvalue"},
    {"Query single mutant fitness (SMF)", "query_smf"},
    {"Array SMF", "array_smf"},
    {"Double mutant fitness", "dmf"},
    {"Double mutant fitness standard deviation", "dmf_std"},
};
enum { NLABELS = sizeof labels / sizeof labels[0] };

/* The gene of a strain id: the text before the last '_' (YAL002W_dma1). */
static int strain_gene(pl_smp_rd *d, const pl__field *f, const char *what)
{
    if (f->len == 0)
        return pl__src_fail(d->src, f->col, d->err, "empty %s", what);
    pl__field g = *f;
    for (uint32_t i = f->len; i-- > 0;)
        if (f->s[i] == '_') {
            g.len = i;
            break;
        }
    if (g.len == 0)
        return pl__src_fail(d->src, f->col, d->err, "%s '%.*s' has no gene before its '_'",
                            what, (int)(f->len > 60 ? 60 : f->len), f->s);
    return pl__smp_gene(d, &g);
}

typedef struct sga {
    int q, a, cat, lab[NLABELS], ncols;
} sga;

int pl__smp_sga_open(pl_smp_rd *d)
{
    pl__field f[NCOLS + 1];
    sga *g = calloc(1, sizeof *g);
    if (!g)
        return pl__err(d->err, -ENOMEM, "%s: out of memory", d->s->file);
    d->state = g;
    const char *line;
    size_t len;
    int rc;
    while ((rc = pl__src_line(d->src, &line, &len, d->err)) > 0 && len == 0)
        ;
    if (rc < 0)
        return rc;
    if (rc == 0)
        return pl__err(d->err, PL_EPARSE, "%s:1: empty file, not a Costanzo SGA table",
                       d->s->file);
    int n = pl__src_split(line, len, '\t', f, NCOLS + 1), m = n < NCOLS ? n : NCOLS;
    g->ncols = n;
    g->q = pl__imp_col(f, m, "Query Strain ID");
    g->a = pl__imp_col(f, m, "Array Strain ID");
    g->cat = pl__imp_col(f, m, "Arraytype/Temp");
    const char *miss = g->q < 0 ? "Query Strain ID" : g->a < 0 ? "Array Strain ID"
                       : g->cat < 0 ? "Arraytype/Temp" : NULL;
    for (int i = 0; i < NLABELS; i++)
        if ((g->lab[i] = pl__imp_col(f, m, labels[i].column)) < 0 && !miss)
            miss = labels[i].column;
    if (miss)
        return pl__src_fail(d->src, 0, d->err, "not a Costanzo SGA table: the header has no "
                            "'%s' column", miss);
    if (n > NCOLS)
        return pl__src_fail(d->src, f[NCOLS].col, d->err, "more than %d columns in the "
                            "header", NCOLS);
    PL_TRY(pl__smp_setup(d, NLABELS, 1));
    for (int i = 0; i < NLABELS; i++)
        PL_TRY(pl__smp_name(d, &d->lnames[i], labels[i].label, strlen(labels[i].label)));
    PL_TRY(pl__smp_name(d, &d->cnames[0], "arraytype_temp", 14));
    return pl__smp_names_done(d);
}

int pl__smp_sga_next(pl_smp_rd *d)
{
    const sga *g = d->state;
    pl__field f[NCOLS + 1];
    const char *line;
    size_t len;
    int rc;
    while ((rc = pl__src_line(d->src, &line, &len, d->err)) > 0 && len == 0)
        ;
    if (rc <= 0)
        return rc;
    int n = pl__src_split(line, len, '\t', f, NCOLS + 1);
    if (n != g->ncols)
        return pl__src_fail(d->src, n > g->ncols ? f[g->ncols].col : (uint32_t)len + 1, d->err,
                            "expected %d columns as in the header, found %d", g->ncols, n);
    pl__smp_row_begin(d);
    PL_TRY(strain_gene(d, &f[g->q], "query strain id"));
    PL_TRY(strain_gene(d, &f[g->a], "array strain id"));
    for (int i = 0; i < NLABELS; i++)
        PL_TRY(pl__smp_label(d, &f[g->lab[i]], (uint32_t)i));
    PL_TRY(pl__smp_cat(d, &f[g->cat], 0));
    PL_TRY(pl__smp_row_end(d, d->r->rows, f[g->q].col));
    return 1;
}
