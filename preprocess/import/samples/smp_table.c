/* The generic delimited sample table (samples.h, format `table`). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smp.h"
#include "src/core/error.h"

enum { MAX_COLS = 256 };

/* Roles of the columns. */
enum { R_NONE = 0, R_GENES, R_GENE1, R_ID, R_LABEL, R_CAT };

typedef struct layout {
    int n;                   /* columns of every row */
    int genes, id;           /* column of the genes (one column), of the id */
    int gene_col[PL_IMP_MAX_LIST];
    int label_col[MAX_COLS]; /* column of label i */
    int label_cat[MAX_COLS]; /* the category label i is also, or -1 */
    int cat_col[PL_IMP_MAX_LIST];
} layout;

/* Column `c` (name or number) among the header fields `f[0..n)`. */
static int find(pl_smp_rd *d, const pl__field *f, int n, const char *c, int *out)
{
    int k = pl__smp_col_number(c);
    if (k == -2)
        k = pl__imp_col(f, n, c);
    if (k < 0) /* the samples TSV names the line's first column */
        return pl__src_fail(d->src, d->s->tsv ? 1 : 0, d->err, "the header has no '%s' "
                            "column", c);
    if (k >= n)
        return pl__src_fail(d->src, 0, d->err, "column %d is asked for, the %s has %d",
                            k + 1, d->s->header ? "header" : "first row", n);
    *out = k;
    return 0;
}

static int col_name(pl_smp_rd *d, const pl__field *f, int k, char **slot)
{
    if (d->s->header)
        return pl__smp_name(d, slot, f[k].s, f[k].len);
    char buf[32];
    snprintf(buf, sizeof buf, "column%d", k + 1);
    return pl__smp_name(d, slot, buf, strlen(buf));
}

/* A header that is a row of data (header: false forgotten): a field that
 * parses as a number, or a gene column's field that is a gene of the list. */
static int header_is_data(pl_smp_rd *d, const pl__field *f, int n, const layout *L)
{
    static const char hint[] = "the first row looks like data: did you mean header: false?";
    for (int k = 0; k < n; k++) {
        float x;
        if (!pl__field_missing(&f[k]) && pl__parse_float(&f[k], &x) != -1)
            return pl__src_fail(d->src, f[k].col, d->err, "header field '%.*s' is a number; %s",
                                (int)(f[k].len > 40 ? 40 : f[k].len), f[k].s, hint);
    }
    int cols[PL_IMP_MAX_LIST + 1], nc = 0;
    if (L->genes >= 0)
        cols[nc++] = L->genes;
    for (uint32_t i = 0; i < d->s->n_gene_columns; i++)
        cols[nc++] = L->gene_col[i];
    for (int i = 0; i < nc; i++) {
        const pl__field *g = &f[cols[i]];
        if (g->len && pl__names_resolve(d->nm, g->s, g->len) >= 0)
            return pl__src_fail(d->src, g->col, d->err, "header field '%.*s' of a gene column "
                                "is a gene of the list; %s", (int)(g->len > 40 ? 40 : g->len),
                                g->s, hint);
    }
    return 0;
}

/* The header's names: none empty, none twice; the samples TSV's free of
 * invisible characters too. */
static int header_names(pl_smp_rd *d, const pl__field *f, int n)
{
    for (int k = 0; k < n; k++) {
        if (f[k].len == 0)
            return pl__src_fail(d->src, f[k].col, d->err, "empty column name in the header");
        if (d->s->tsv)
            PL_TRY(pl__text_check_name(&d->tx, &f[k], "column name", d->err));
        for (int j = 0; j < k; j++)
            if (f[j].len == f[k].len && !memcmp(f[j].s, f[k].s, f[k].len))
                return pl__src_fail(d->src, f[k].col, d->err, "duplicate column '%.*s' in the "
                                    "header", (int)f[k].len, f[k].s);
    }
    return 0;
}

/* The roles of the columns from the first line (the header, or the first
 * row). The samples TSV's header names are checked first, a recipe table's
 * last. */
static int plan(pl_smp_rd *d, const pl__field *f, int n, layout *L)
{
    const pl_smp_spec *s = d->s;
    unsigned char role[MAX_COLS] = {0};
    if (s->header && s->tsv)
        PL_TRY(header_names(d, f, n));
    L->n = n;
    L->genes = L->id = -1;
    if (!s->n_gene_columns) {
        PL_TRY(find(d, f, n, s->genes ? s->genes : "genes", &L->genes));
        role[L->genes] = R_GENES;
    }
    for (uint32_t i = 0; i < s->n_gene_columns; i++) {
        PL_TRY(find(d, f, n, s->gene_columns[i], &L->gene_col[i]));
        role[L->gene_col[i]] = R_GENE1;
    }
    if (s->header && !s->tsv)
        PL_TRY(header_is_data(d, f, n, L));
    if (s->id && !(s->id_optional && pl__imp_col(f, n, s->id) < 0)) {
        PL_TRY(find(d, f, n, s->id, &L->id));
        role[L->id] = R_ID;
    }
    for (uint32_t i = 0; i < s->n_categories; i++) {
        PL_TRY(find(d, f, n, s->categories[i], &L->cat_col[i]));
        if (role[L->cat_col[i]])
            return pl__src_fail(d->src, 0, d->err, "column '%s' is given two roles",
                                s->categories[i]);
        role[L->cat_col[i]] = R_CAT;
    }
    uint32_t nl = 0;
    if (s->n_labels) {
        for (uint32_t i = 0; i < s->n_labels; i++) {
            int k;
            PL_TRY(find(d, f, n, s->labels[i], &k));
            /* a category listed as a label too: its code as a float */
            L->label_cat[nl] = -1;
            for (uint32_t c = 0; role[k] == R_CAT && c < s->n_categories; c++)
                if (L->cat_col[c] == k)
                    L->label_cat[nl] = (int)c;
            if (role[k] && role[k] != R_CAT)
                return pl__src_fail(d->src, 0, d->err, "column '%s' is given two roles",
                                    s->labels[i]);
            role[k] = role[k] ? role[k] : R_LABEL;
            L->label_col[nl++] = k;
        }
    } else {
        for (int k = 0; k < n; k++)
            if (!role[k]) {
                L->label_cat[nl] = -1;
                L->label_col[nl++] = k;
            }
    }
    PL_TRY(pl__smp_setup(d, nl, s->n_categories));
    for (uint32_t i = 0; i < nl; i++)
        PL_TRY(col_name(d, f, L->label_col[i], &d->lnames[i]));
    for (uint32_t i = 0; i < s->n_categories; i++)
        PL_TRY(col_name(d, f, L->cat_col[i], &d->cnames[i]));
    PL_TRY(pl__smp_names_done(d));
    return s->header && !s->tsv ? header_names(d, f, n) : 0;
}

static int row(pl_smp_rd *d, const layout *L, const pl__field *f)
{
    const pl_smp_spec *s = d->s;
    pl__smp_row_begin(d);
    uint32_t gcol = 0;
    if (L->genes >= 0) {
        const pl__field *gf = &f[L->genes];
        char sep = s->gene_sep ? s->gene_sep : ';';
        gcol = gf->col;
        for (uint32_t i = 0, start = 0; gf->len && i <= gf->len; i++) {
            if (i < gf->len && gf->s[i] != sep)
                continue;
            pl__field g = {gf->s + start, i - start, gf->col + start};
            start = i + 1;
            while (g.len && (g.s[0] == ' ' || g.s[0] == '\t'))
                g.s++, g.len--, g.col++;
            while (g.len && (g.s[g.len - 1] == ' ' || g.s[g.len - 1] == '\t'))
                g.len--;
            if (g.len == 0)
                return pl__src_fail(d->src, g.col, d->err, "empty gene name in '%.*s'",
                                    (int)(gf->len > 80 ? 80 : gf->len), gf->s);
            PL_TRY(pl__smp_gene(d, &g));
        }
    }
    for (uint32_t i = 0; i < s->n_gene_columns; i++) {
        const pl__field *g = &f[L->gene_col[i]];
        if (i == 0)
            gcol = g->col;
        if (g->len)
            PL_TRY(pl__smp_gene(d, g));
    }
    uint64_t id = d->r->rows;
    if (L->id >= 0 && pl__parse_u64(&f[L->id], &id) < 0)
        return pl__src_fail(d->src, f[L->id].col, d->err, "bad id '%.*s' (expected an "
                            "unsigned 64-bit integer)", (int)(f[L->id].len > 40 ? 40
                            : f[L->id].len), f[L->id].s);
    for (uint32_t c = 0; c < s->n_categories; c++)
        PL_TRY(pl__smp_cat(d, &f[L->cat_col[c]], c));
    for (uint32_t l = 0; l < d->nl; l++) {
        uint32_t code = L->label_cat[l] >= 0 ? d->cats[L->label_cat[l]] : 0;
        if (code >= (1u << 24)) /* a code below 2^24 is an exact float */
            return pl__src_fail(d->src, f[L->label_col[l]].col, d->err, "column '%s', a "
                                "label and a category, has more levels than a float label "
                                "holds exactly (2^24)", pl__smp_label_name(d, l));
        if (L->label_cat[l] >= 0)
            d->labels[l] = (float)code;
        else
            PL_TRY(pl__smp_label(d, &f[L->label_col[l]], l));
    }
    return pl__smp_row_end(d, id, gcol);
}

typedef struct table {
    layout L;
    pl__field f[MAX_COLS + 1];
    int pending;           /* without a header: the first row, split in f */
    int n_pending;
    size_t len_pending;
} table;

/* The next data line split into t->f (MAX_COLS + 1 fields at most): its
 * field count, 0 at the end. */
static int next_line(pl_smp_rd *d, table *t, size_t *len)
{
    const pl_smp_spec *s = d->s;
    if (s->tsv) { /* the build's text rules (text.h) */
        int rc = pl__text_next(&d->tx, d->err);
        *len = d->tx.cur_len;
        return rc <= 0 ? rc : pl__text_fields(&d->tx, t->f, MAX_COLS + 1);
    }
    char sep = s->sep ? s->sep : '\t';
    size_t clen = s->comment ? strlen(s->comment) : 0;
    const char *line;
    int rc;
    while ((rc = pl__src_line(d->src, &line, len, d->err)) > 0) {
        if (*len == 0 || (clen && *len >= clen && !memcmp(line, s->comment, clen)))
            continue;
        return pl__src_split(line, *len, sep, t->f, MAX_COLS + 1);
    }
    return rc;
}

int pl__smp_table_open(pl_smp_rd *d)
{
    table *t = calloc(1, sizeof *t);
    if (!t)
        return pl__err(d->err, -ENOMEM, "%s: out of memory", d->s->file);
    d->state = t;
    size_t len;
    int n = next_line(d, t, &len);
    if (n < 0)
        return n;
    if (n == 0 && d->s->tsv)
        return pl__err(d->err, PL_EPARSE, "%s:1:1: no header row (expected a 'genes' column)",
                       pl__src_path(d->src));
    if (n == 0)
        return pl__err(d->err, PL_EPARSE, "%s:1: no %s", d->s->file,
                       d->s->header ? "header row" : "rows");
    /* the first line's width; a later line wider than it is a count mismatch */
    if (n > MAX_COLS)
        return pl__src_fail(d->src, t->f[MAX_COLS].col, d->err, "more than %d columns",
                            MAX_COLS);
    PL_TRY(plan(d, t->f, n, &t->L));
    if (!d->s->header) {
        t->pending = 1;
        t->n_pending = n;
        t->len_pending = len;
    }
    return 0;
}

int pl__smp_table_next(pl_smp_rd *d)
{
    table *t = d->state;
    size_t len = t->len_pending;
    int n = t->n_pending;
    if (!t->pending && (n = next_line(d, t, &len)) <= 0)
        return n;
    d->first_row = t->pending;
    t->pending = 0;
    if (n != t->L.n)
        return pl__src_fail(d->src, n > t->L.n ? t->f[t->L.n].col : (uint32_t)len + 1, d->err,
                            "expected %d columns as in the %s, found %d", t->L.n,
                            d->s->header ? "header" : "first row", n);
    int rc = row(d, &t->L, t->f);
    d->first_row = 0;
    PL_TRY(rc);
    return 1;
}
