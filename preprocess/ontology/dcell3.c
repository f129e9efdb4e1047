/* The three-column ontology file of the DCell and DrugCell code: one line
 * `parent child type`, tab- or blank-separated; type `gene` annotates gene
 * `child` to term `parent`, any other type is a term-term edge. '#' starts a
 * comment line; blank lines are skipped. A file whose first such line starts
 * with "ROOT:" (or "GENES:", "TERMS:") is a DCell topology file instead
 * (dcell_topo.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ontology.h"
#include "preprocess/import/source/source.h"
#include "src/core/error.h"

static int define(pl_onto_raw *r, const pl__field *f, uint32_t *t)
{
    PL_TRY(pl__onto_raw_term(r, f->s, f->len, t));
    int rc = pl__onto_raw_define(r, *t);
    return rc < 0 ? rc : 0;
}

static int row(pl_onto_raw *r, const pl_src *src, const char *line, size_t len,
               pl_onto_resolve_fn resolve, void *ctx, int strict, pl_onto_stats *st,
               pl_err *err)
{
    pl__field f[4];
    int k = pl__src_split(line, len, memchr(line, '\t', len) ? '\t' : ' ', f, 4);
    if (k != 3)
        return pl__src_fail(src, 0, err, "%d columns where `parent child type` has 3", k);
    for (int i = 0; i < 3; i++)
        if (f[i].len == 0)
            return pl__src_fail(src, f[i].col, err, "empty %s", i == 0 ? "parent"
                                : i == 1 ? "child" : "type");
    uint32_t parent, child;
    PL_TRY(define(r, &f[0], &parent));
    if (f[2].len == 4 && !memcmp(f[2].s, "gene", 4)) {
        st->rows++;
        int64_t g = resolve(ctx, f[1].s, f[1].len);
        if (g < 0 && strict)
            return pl__src_fail(src, f[1].col, err, "unresolved gene name '%.*s' (strict mode)",
                                (int)(f[1].len > 80 ? 80 : f[1].len), f[1].s);
        if (g < 0)
            return pl__unres_add(&st->unknown_genes, f[1].s, f[1].len, pl__src_lineno(src)) < 0
                       ? -ENOMEM : 0;
        return pl__onto_raw_ann(r, (uint32_t)g, parent);
    }
    PL_TRY(define(r, &f[1], &child));
    st->edges_read++;
    return pl__onto_raw_edge(r, child, parent, pl__src_lineno(src));
}

/* 1 when s[0..n) starts with keyword `k` followed by a blank or the end. */
static int topo_keyword(const char *s, size_t n, const char *k)
{
    size_t l = strlen(k);
    return n >= l && !memcmp(s, k, l) && (n == l || s[l] == ' ' || s[l] == '\t');
}

int pl__onto_read_dcell(pl_onto_raw *r, const char *path, pl_onto_resolve_fn resolve, void *ctx,
                        int strict, pl_onto_stats *st, pl_err *err)
{
    pl_src *src = NULL;
    PL_TRY(pl__src_open(path, &src, err));
    int rc = 0;
    free(r->edge_path);
    if (!(r->edge_path = strdup(path)))
        rc = -ENOMEM;
    const char *line;
    size_t len;
    int first = 1;
    while (rc == 0 && (rc = pl__src_line(src, &line, &len, err)) == 1) {
        size_t i = 0;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        rc = 0;
        if (i == len || line[i] == '#')
            continue;
        /* Recognised by content: the first line of a topology file (or a
         * block's later line, refused there as before any ROOT:). */
        if (first && (topo_keyword(line + i, len - i, "ROOT:") ||
                      topo_keyword(line + i, len - i, "GENES:") ||
                      topo_keyword(line + i, len - i, "TERMS:"))) {
            rc = pl__onto_read_dcell_blocks(r, src, line, len, resolve, ctx, strict, st, err);
            break;
        }
        first = 0;
        rc = row(r, src, line, len, resolve, ctx, strict, st, err);
    }
    if (rc == -ENOMEM)
        pl__err(err, rc, "%s: out of memory", path);
    pl__src_close(src);
    return rc < 0 ? rc : 0;
}
