/* Sample tables (samples.h): the per-row work the readers share. */
#include "samples.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "smp.h"
#include "src/core/error.h"
#include "src/core/vec.h"

#define NOMEM(d) pl__err((d)->err, -ENOMEM, "%s: out of memory", (d)->s->file)

int pl__smp_col_number(const char *c)
{
    if (!c)
        return -1;
    char *end;
    long v = strtol(c, &end, 10);
    if (*c >= '0' && *c <= '9' && !*end)
        return v >= 1 && v <= 256 ? (int)v - 1 : -3;
    return -2;
}

int pl__smp_setup(pl_smp_rd *d, uint32_t n_labels, uint32_t n_cats)
{
    pl_smp_result *r = d->r;
    uint32_t n_own = n_cats;
    n_cats += d->s->n_set; /* the constant categories follow the file's own */
    d->lnames = calloc(n_labels + 1, sizeof *d->lnames);
    d->cnames = calloc(n_cats + 1, sizeof *d->cnames);
    d->labels = calloc(n_labels + 1, sizeof *d->labels);
    d->cats = calloc(n_cats + 1, sizeof *d->cats);
    if (!d->lnames || !d->cnames || !d->labels || !d->cats)
        return NOMEM(d);
    d->nl = n_labels;
    d->nc = n_cats;
    for (uint32_t k = 0; k < d->s->n_set; k++) {
        const char *n = d->s->set_names[k];
        PL_TRY(pl__smp_name(d, &d->cnames[n_own + k], n, strlen(n)));
    }
    if (r->cat_values) /* a later file: the first one's categories */
        return 0;
    r->cat_values = calloc(n_cats + 1, sizeof *r->cat_values);
    if (!r->cat_values)
        return NOMEM(d);
    for (uint32_t i = 0; i < n_cats; i++) {
        if (pl__strtab_init(&r->cat_values[i]) < 0)
            return NOMEM(d);
        r->n_categories = i + 1;
    }
    return 0;
}

/* Whether the names `a[0..na)` and `b[0..nb)` are the same list. */
static int same_names(char **a, uint32_t na, char **b, uint32_t nb)
{
    if (na != nb)
        return 0;
    for (uint32_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]))
            return 0;
    return 1;
}

int pl__smp_names_done(pl_smp_rd *d)
{
    pl_smp_result *r = d->r;
    if (r->label_names) {
        if (!same_names(r->label_names, r->n_labels, d->lnames, d->nl) ||
            !same_names(r->cat_names, r->n_categories, d->cnames, d->nc))
            return pl__src_fail(d->src, 0, d->err, "the labels and categories differ from "
                                "those of the first sample table");
        return 0;
    }
    r->label_names = d->lnames;
    r->n_labels = d->nl;
    r->cat_names = d->cnames;
    d->lnames = d->cnames = NULL; /* the result owns them */
    d->names_moved = 1;
    return 0;
}

int pl__smp_name(pl_smp_rd *d, char **slot, const char *s, size_t len)
{
    *slot = strndup(s, len);
    return *slot ? 0 : NOMEM(d);
}

const char *pl__smp_label_name(const pl_smp_rd *d, uint32_t l)
{
    return d->names_moved ? d->r->label_names[l] : d->lnames[l];
}

const char *pl__smp_cat_name(const pl_smp_rd *d, uint32_t c)
{
    return d->names_moved ? d->r->cat_names[c] : d->cnames[c];
}

void pl__smp_row_begin(pl_smp_rd *d)
{
    d->ng = 0;
    d->unknown = 0;
}

int pl__smp_gene(pl_smp_rd *d, const pl__field *f)
{
    if (f->len == 0)
        return pl__src_fail(d->src, f->col, d->err, "empty gene name");
    int64_t g = pl__names_resolve(d->nm, f->s, f->len);
    if (g < 0) {
        int n = (int)(f->len > 80 ? 80 : f->len);
        if (d->strict && d->s->tsv)
            return pl__src_fail(d->src, f->col, d->err, "unknown gene '%.*s'", n, f->s);
        if (d->strict)
            return pl__src_fail(d->src, f->col, d->err, "unresolved gene name '%.*s' (strict "
                                "mode)", n, f->s);
        d->unknown++;
        if (pl__unres_add(&d->r->names, f->s, f->len, pl__src_lineno(d->src)) < 0)
            return NOMEM(d);
        return 0;
    }
    for (uint32_t i = 0; !d->s->tsv && i < d->ng; i++) /* the samples TSV keeps repeats */
        if (d->genes[i] == g)
            return 0;
    if (pl__grow(&d->genes, &d->cap_genes, d->ng + 1, sizeof *d->genes) < 0)
        return NOMEM(d);
    d->genes[d->ng++] = (int32_t)g;
    return 0;
}

int pl__smp_label(pl_smp_rd *d, const pl__field *f, uint32_t l)
{
    if (pl__field_missing(f)) {
        d->labels[l] = NAN;
        return 0;
    }
    int pr = pl__parse_float(f, &d->labels[l]);
    if (pr == PL_ERANGE)
        return pl__src_fail(d->src, f->col, d->err, "label '%.*s' in column '%s' is out of "
                            "the float32 range (magnitude above 3.4028235e+38)",
                            (int)(f->len > 40 ? 40 : f->len), f->s, pl__smp_label_name(d, l));
    if (pr < 0 && d->s->tsv)
        return pl__src_fail(d->src, f->col, d->err, "bad number '%.*s' in column '%s'",
                            (int)(f->len > 40 ? 40 : f->len), f->s, pl__smp_label_name(d, l));
    if (pr < 0 && d->first_row) /* a header read as data */
        return pl__src_fail(d->src, f->col, d->err, "bad number '%.*s' in label column '%s' "
                            "of the first row, read as data (header: false): did you mean "
                            "header: true?", (int)(f->len > 40 ? 40 : f->len), f->s,
                            pl__smp_label_name(d, l));
    if (pr < 0)
        return pl__src_fail(d->src, f->col, d->err, "bad number '%.*s' in label column '%s' "
                            "(a text column is kept with 'categories')",
                            (int)(f->len > 40 ? 40 : f->len), f->s, pl__smp_label_name(d, l));
    return 0;
}

int pl__smp_cat(pl_smp_rd *d, const pl__field *f, uint32_t c)
{
    if (memchr(f->s, 0, f->len))
        return pl__src_fail(d->src, f->col, d->err, "a NUL byte in category column '%s'",
                            pl__smp_cat_name(d, c));
    if (f->len == 0)
        return pl__src_fail(d->src, f->col, d->err, "empty value in category column '%s' "
                            "(a level needs a name)", pl__smp_cat_name(d, c));
    for (uint32_t i = 0; i < f->len; i++)
        if (f->s[i] == '\t' || f->s[i] == '\n' || f->s[i] == '\r')
            return pl__src_fail(d->src, f->col + i, d->err, "a tab or a line break in "
                                "category column '%s'", pl__smp_cat_name(d, c));
    int added;
    int64_t code = pl__strtab_intern(&d->r->cat_values[c], f->s, f->len, &added);
    if (code < 0)
        return NOMEM(d);
    d->cats[c] = (uint32_t)code;
    return 0;
}

int pl__smp_row_end(pl_smp_rd *d, uint64_t id, uint32_t col)
{
    pl_smp_result *r = d->r;
    uint64_t row = r->rows;
    if (!d->unknown && d->ng == 0)
        return pl__src_fail(d->src, col, d->err, "sample has no genes");
    for (uint32_t k = 0, base = d->nc - d->s->n_set; k < d->s->n_set; k++) {
        pl__field f = {d->s->set_values[k], (uint32_t)strlen(d->s->set_values[k]), 0};
        PL_TRY(pl__smp_cat(d, &f, base + k));
    }
    r->rows++;
    d->out = (pl_smp_row){row, id, d->genes, d->ng, d->labels, d->cats, d->unknown > 0};
    if (d->unknown) {
        if (pl__grow(&r->dropped_rows, &r->cap_dropped, r->dropped + 1, 8) < 0)
            return NOMEM(d);
        r->dropped_rows[r->dropped++] = row;
    } else {
        r->kept++;
    }
    return 0;
}
