/* Costanzo et al. 2016 SGA tables (samples.h, format `sga`): one double
 * mutant per row, the query and array strains' genes deleted. */
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

int pl__smp_read_sga(pl_smp_rd *d)
{
    pl__field f[NCOLS + 1];
    int q = -1, a = -1, cat = -1, lab[NLABELS], ncols = 0;
    const char *line;
    size_t len;
    int rc;
    while ((rc = pl__src_line(d->src, &line, &len, d->err)) > 0) {
        if (len == 0)
            continue;
        int n = pl__src_split(line, len, '\t', f, NCOLS + 1);
        if (!ncols) { /* the header */
            ncols = n;
            q = pl__imp_col(f, n < NCOLS ? n : NCOLS, "Query Strain ID");
            a = pl__imp_col(f, n < NCOLS ? n : NCOLS, "Array Strain ID");
            cat = pl__imp_col(f, n < NCOLS ? n : NCOLS, "Arraytype/Temp");
            const char *miss = q < 0 ? "Query Strain ID" : a < 0 ? "Array Strain ID"
                               : cat < 0 ? "Arraytype/Temp" : NULL;
            for (int i = 0; i < NLABELS; i++)
                if ((lab[i] = pl__imp_col(f, n < NCOLS ? n : NCOLS, labels[i].column)) < 0 &&
                    !miss)
                    miss = labels[i].column;
            if (miss)
                return pl__src_fail(d->src, 0, d->err, "not a Costanzo SGA table: the header "
                                    "has no '%s' column", miss);
            if (n > NCOLS)
                return pl__src_fail(d->src, f[NCOLS].col, d->err, "more than %d columns in "
                                    "the header", NCOLS);
            PL_TRY(pl__smp_setup(d, NLABELS, 1));
            for (int i = 0; i < NLABELS; i++)
                PL_TRY(pl__smp_name(d, &d->lnames[i], labels[i].label,
                                    strlen(labels[i].label)));
            PL_TRY(pl__smp_name(d, &d->cnames[0], "arraytype_temp", 14));
            PL_TRY(pl__smp_names_done(d));
            continue;
        }
        if (n != ncols)
            return pl__src_fail(d->src, n > ncols ? f[ncols].col : (uint32_t)len + 1, d->err,
                                "expected %d columns as in the header, found %d", ncols, n);
        pl__smp_row_begin(d);
        PL_TRY(strain_gene(d, &f[q], "query strain id"));
        PL_TRY(strain_gene(d, &f[a], "array strain id"));
        for (int i = 0; i < NLABELS; i++)
            PL_TRY(pl__smp_label(d, &f[lab[i]], (uint32_t)i));
        PL_TRY(pl__smp_cat(d, &f[cat], 0));
        PL_TRY(pl__smp_row_end(d, d->r->rows, f[q].col));
    }
    if (rc == 0 && !ncols)
        return pl__err(d->err, PL_EPARSE, "%s:1: empty file, not a Costanzo SGA table",
                       d->s->file);
    return rc;
}
