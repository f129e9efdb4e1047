/* GAF 2.x reader: 15 to 17 tab-separated columns, '!' comment lines. Kept:
 * rows without a NOT qualifier, with an evidence code the options allow, a
 * defined term (an alt_id maps to its term) and a gene that resolves. */
#include <errno.h>
#include <string.h>

#include "ontology.h"
#include "preprocess/import/source/source.h"
#include "src/core/error.h"

enum { GAF_MIN = 15, GAF_MAX = 17 };

/* 1 when the '|'-separated qualifier field holds NOT. */
static int has_not(const pl__field *f)
{
    pl__field q[16];
    int k = pl__src_split(f->s, f->len, '|', q, 16);
    for (int i = 0; i < k && i < 16; i++)
        if (q[i].len == 3 && !memcmp(q[i].s, "NOT", 3))
            return 1;
    return 0;
}

static int64_t term_of(const pl_onto_raw *r, const pl__field *f)
{
    int64_t t = r->ids.slots ? pl__strtab_find(&r->ids, f->s, f->len) : -1;
    if (t >= 0 && (r->flags[t] & PL_ONTO_DEFINED))
        return t;
    int64_t a = r->alt.slots ? pl__strtab_find(&r->alt, f->s, f->len) : -1;
    return a >= 0 ? (int64_t)r->alt_to[a] : -1;
}

static int64_t gene_of(const pl__field *c, pl_onto_resolve_fn resolve, void *ctx)
{
    int64_t g = resolve(ctx, c[2].s, c[2].len);
    if (g >= 0)
        return g;
    pl__field syn[64];
    int k = pl__src_split(c[10].s, c[10].len, '|', syn, 64);
    for (int i = 0; i < k && i < 64; i++)
        if (syn[i].len && (g = resolve(ctx, syn[i].s, syn[i].len)) >= 0)
            return g;
    return resolve(ctx, c[1].s, c[1].len);
}

static int row(pl_onto_raw *r, const pl_src *src, const char *line, size_t len,
               const pl_onto_opts *o, pl_onto_resolve_fn resolve, void *ctx, pl_onto_stats *st,
               pl_err *err)
{
    pl__field c[GAF_MAX + 1];
    int k = pl__src_split(line, len, '\t', c, GAF_MAX + 1);
    if (k < GAF_MIN || k > GAF_MAX)
        return pl__src_fail(src, 0, err, "%d tab-separated columns where GAF 2.x has 15 to 17",
                            k);
    if (k < GAF_MAX)
        c[16] = c[15] = (pl__field){line + len, 0, (uint32_t)len + 1};
    if (c[2].len == 0)
        return pl__src_fail(src, c[2].col, err, "empty DB Object Symbol (column 3)");
    if (c[4].len == 0)
        return pl__src_fail(src, c[4].col, err, "empty GO ID (column 5)");
    if (c[6].len == 0)
        return pl__src_fail(src, c[6].col, err, "empty evidence code (column 7)");
    st->rows++;
    if (has_not(&c[3])) {
        st->not_rows++;
        return 0;
    }
    if ((o->evidence && !pl__onto_in_list(o->evidence, c[6].s, c[6].len)) ||
        (o->exclude_evidence && pl__onto_in_list(o->exclude_evidence, c[6].s, c[6].len))) {
        st->evidence_skipped++;
        return 0;
    }
    int64_t t = term_of(r, &c[4]);
    if (t < 0) {
        st->unknown_terms++;
        return 0;
    }
    int64_t g = gene_of(c, resolve, ctx);
    if (g < 0 && o->strict)
        return pl__src_fail(src, c[2].col, err, "unresolved gene name '%.*s' (strict mode)",
                            (int)(c[2].len > 80 ? 80 : c[2].len), c[2].s);
    if (g < 0) {
        if (pl__unres_add(&st->unknown_genes, c[2].s, c[2].len, pl__src_lineno(src)) < 0)
            return -ENOMEM;
        return 0;
    }
    return pl__onto_raw_ann(r, (uint32_t)g, (uint32_t)t);
}

int pl__onto_read_gaf(pl_onto_raw *r, const char *path, const pl_onto_opts *o,
                      pl_onto_resolve_fn resolve, void *ctx, pl_onto_stats *st, pl_err *err)
{
    pl_src *src = NULL;
    PL_TRY(pl__src_open(path, &src, err));
    int rc;
    const char *line;
    size_t len;
    while ((rc = pl__src_line(src, &line, &len, err)) == 1) {
        if (len == 0 || line[0] == '!')
            continue;
        if ((rc = row(r, src, line, len, o, resolve, ctx, st, err)) < 0)
            break;
    }
    if (rc == -ENOMEM)
        pl__err(err, rc, "%s: out of memory", path);
    pl__src_close(src);
    return rc < 0 ? rc : 0;
}
