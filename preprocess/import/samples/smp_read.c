/* Sample tables (samples.h): opening a table, its rows through the reader
 * of its format (smp_table.c, smp_sga.c) and closing it. */
#include "samples.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smp.h"
#include "src/core/error.h"

void pl__smp_spec_init(pl_smp_spec *s)
{
    memset(s, 0, sizeof *s);
    s->header = 1;
    s->min_resolved = 0.5;
}

int pl__smp_check_resolved(const pl_smp_spec *s, uint64_t rows, uint64_t kept,
                           const pl_unres *unres, pl_err *err)
{
    if (s->allow_empty)
        return 0;
    double share = rows ? (double)kept / (double)rows : 0.0;
    char names[1024];
    if (kept == 0 && s->min_resolved > 0) {
        pl__unres_top(unres, names, sizeof names);
        return pl__err(err, PL_EPARSE, "%s: the sample table keeps no sample: %llu rows, %llu "
                       "with an unresolved gene name; most frequent unresolved names: %s (an "
                       "alias table for them, or allow_empty: true, accepts it)", s->file,
                       (unsigned long long)rows, (unsigned long long)(rows - kept), names);
    }
    if (rows > 0 && share < s->min_resolved) {
        pl__unres_top(unres, names, sizeof names);
        return pl__err(err, PL_EPARSE, "%s: only %llu of the sample table's %llu rows resolve "
                       "(share %.3f, under min_resolved %g); most frequent unresolved names: %s "
                       "(a lower min_resolved, or allow_empty: true, accepts it)", s->file,
                       (unsigned long long)kept, (unsigned long long)rows, share,
                       s->min_resolved, names);
    }
    return 0;
}

/* A constant category named like a category of the file, or twice. */
static int check_set(const pl_smp_spec *s, pl_err *err)
{
    for (uint32_t i = 0; i < s->n_set; i++) {
        const char *n = s->set_names[i];
        PL_FAIL_IF(s->format == PL_SMP_SGA && !strcmp(n, "arraytype_temp"), err, PL_EUSAGE,
                   "'set' names the sga table's own category 'arraytype_temp'");
        for (uint32_t j = 0; s->format == PL_SMP_TABLE && j < s->n_categories; j++)
            PL_FAIL_IF(!strcmp(n, s->categories[j]), err, PL_EUSAGE,
                       "'set' names '%s', a category column of the file", n);
        for (uint32_t j = 0; j < i; j++)
            PL_FAIL_IF(!strcmp(n, s->set_names[j]), err, PL_EUSAGE,
                       "'set' names '%s' twice", n);
        PL_FAIL_IF(strpbrk(n, "\t\n\r"), err, PL_EUSAGE,
                   "'set' column name '%s' holds a tab or a line break", n);
        PL_FAIL_IF(strpbrk(s->set_values[i], "\t\n\r"), err, PL_EUSAGE,
                   "'set' value of '%s' holds a tab or a line break", n);
        PL_FAIL_IF(!*s->set_values[i], err, PL_EUSAGE, "'set' value of '%s' is empty", n);
    }
    return 0;
}

int pl__smp_check(const pl_smp_spec *s, pl_err *err)
{
    PL_TRY(check_set(s, err));
    if (s->format == PL_SMP_SGA)
        return 0;
    const char *all[3 * PL_IMP_MAX_LIST + 2];
    uint32_t n = 0;
    all[n++] = s->n_gene_columns ? NULL : s->genes ? s->genes : "genes";
    all[n++] = s->id;
    for (uint32_t i = 0; i < s->n_gene_columns; i++)
        all[n++] = s->gene_columns[i];
    for (uint32_t i = 0; i < s->n_labels; i++)
        all[n++] = s->labels[i];
    for (uint32_t i = 0; i < s->n_categories; i++)
        all[n++] = s->categories[i];
    for (uint32_t i = 0; i < n; i++) {
        int c = all[i] ? pl__smp_col_number(all[i]) : -1;
        PL_FAIL_IF(c == -3, err, PL_EUSAGE, "column %s out of range 1..256", all[i]);
        PL_FAIL_IF(c == -2 && !s->header, err, PL_EUSAGE, "column '%s' is a name, but the "
                   "file has no header (header: true)", all[i]);
        for (uint32_t j = 0; all[i] && j < i; j++) /* a label may be a category too */
            PL_FAIL_IF(all[j] && !strcmp(all[i], all[j]) &&
                       !(i >= n - s->n_categories && j >= n - s->n_categories - s->n_labels &&
                         j < n - s->n_categories),
                       err, PL_EUSAGE, "column '%s' is given two roles", all[i]);
    }
    PL_FAIL_IF(s->genes && s->n_gene_columns, err, PL_EUSAGE,
               "give either 'genes' (one column) or 'gene_columns', not both");
    PL_FAIL_IF(s->sep == '\n' || s->sep == '\r', err, PL_EUSAGE,
               "a line break cannot be the separator");
    return 0;
}

int pl__smp_open(const pl_smp_spec *s, const pl_names *nm, int strict, pl_smp_result *r,
                 pl_smp_rd **out, pl_err *err)
{
    *out = NULL;
    PL_TRY(pl__smp_check(s, err));
    pl_smp_rd *d = calloc(1, sizeof *d);
    PL_FAIL_IF(!d, err, -ENOMEM, "%s: out of memory", s->file);
    *d = (pl_smp_rd){.s = s, .nm = nm, .strict = strict, .r = r, .err = err};
    int rc = s->tsv ? pl__text_open(&d->tx, s->file, err) : pl__src_open(s->file, &d->src, err);
    if (s->tsv)
        d->src = d->tx.src; /* closed as the source (pl__text_close() does no more) */
    if (rc == 0)
        rc = s->format == PL_SMP_SGA ? pl__smp_sga_open(d) : pl__smp_table_open(d);
    if (rc < 0) {
        pl__smp_close(d);
        return rc;
    }
    *out = d;
    return 0;
}

int pl__smp_next(pl_smp_rd *d, const pl_smp_row **row, pl_err *err)
{
    d->err = err;
    int rc = d->s->format == PL_SMP_SGA ? pl__smp_sga_next(d) : pl__smp_table_next(d);
    *row = rc == 1 ? &d->out : NULL;
    return rc;
}

double pl__smp_frac(const pl_smp_rd *d)
{
    return pl__src_frac(d->src);
}

void pl__smp_close(pl_smp_rd *d)
{
    if (!d)
        return;
    if (d->src)
        d->r->bytes += pl__src_bytes(d->src);
    pl__src_close(d->src);
    for (uint32_t i = 0; d->lnames && i < d->nl; i++)
        free(d->lnames[i]);
    for (uint32_t i = 0; d->cnames && i < d->nc; i++)
        free(d->cnames[i]);
    free(d->lnames);
    free(d->cnames);
    free(d->genes);
    free(d->labels);
    free(d->cats);
    free(d->state);
    free(d);
}

int pl__smp_read(const pl_smp_spec *s, const pl_names *nm, int strict, pl_smp_emit emit,
                 void *ctx, pl_smp_result *r, pl_err *err)
{
    pl_smp_rd *d;
    PL_TRY(pl__smp_open(s, nm, strict, r, &d, err));
    const pl_smp_row *row;
    int rc;
    while ((rc = pl__smp_next(d, &row, err)) == 1)
        if (!row->dropped && emit && (rc = emit(ctx, row, err)) < 0)
            break;
    pl__smp_close(d);
    return rc < 0 ? rc : 0;
}

void pl__smp_result_free(pl_smp_result *r)
{
    for (uint32_t i = 0; r->label_names && i < r->n_labels; i++)
        free(r->label_names[i]);
    for (uint32_t i = 0; r->cat_names && i < r->n_categories; i++) {
        free(r->cat_names[i]);
        pl__strtab_free(&r->cat_values[i]);
    }
    for (uint32_t i = r->n_categories; r->cat_values && r->cat_names == NULL && i-- > 0;)
        pl__strtab_free(&r->cat_values[i]);
    free(r->label_names);
    free(r->cat_names);
    free(r->cat_values);
    free(r->dropped_rows);
    pl__unres_free(&r->names);
    memset(r, 0, sizeof *r);
}
