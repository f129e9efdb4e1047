/* DANGO-style adjacency lists: "i j weight" per line (tabs or spaces, no
 * header), i and j 1-based indices into a gene list file of one name a
 * line. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "src/core/error.h"
#include "src/core/vec.h"

/* The gene list: names packed in `text`, name i at text[off[i]..off[i+1]). */
typedef struct glist {
    char *text;
    uint64_t *off;
    uint64_t n, cap_text, cap_off, used;
} glist;

static void glist_free(glist *g)
{
    free(g->text);
    free(g->off);
}

static int glist_load(const char *path, glist *g, pl_err *err)
{
    pl_src *src;
    PL_TRY(pl__src_open(path, &src, err));
    const char *line;
    size_t len;
    pl__field f[2];
    int rc;
    if (pl__grow(&g->off, &g->cap_off, 1, sizeof *g->off) < 0)
        goto nomem;
    g->off[0] = 0;
    while ((rc = pl__src_line(src, &line, &len, err)) > 0) {
        int n = pl__src_split(line, len, ' ', f, 2);
        if (n != 1) {
            rc = pl__src_fail(src, 0, err, n == 0 ? "empty line in a gene list (index %llu)"
                              : "expected one name a line in a gene list (index %llu)",
                              (unsigned long long)g->n + 1);
            break;
        }
        if (pl__grow(&g->text, &g->cap_text, g->used + f[0].len, 1) < 0 ||
            pl__grow(&g->off, &g->cap_off, g->n + 2, sizeof *g->off) < 0)
            goto nomem;
        memcpy(g->text + g->used, f[0].s, f[0].len);
        g->used += f[0].len;
        g->off[++g->n] = g->used;
    }
    if (rc == 0 && g->n == 0)
        rc = pl__err(err, PL_EPARSE, "%s:1: empty gene list", pl__src_path(src));
    pl__src_close(src);
    return rc;
nomem:
    pl__src_close(src);
    return pl__err(err, -ENOMEM, "%s: out of memory", path);
}

static int index_field(const pl_src *src, const glist *g, const pl__field *f, pl__field *name,
                       pl_err *err)
{
    uint64_t i;
    if (pl__parse_u64(f, &i) < 0)
        return pl__src_fail(src, f->col, err, "bad index '%.*s' (expected an integer 1..%llu)",
                            (int)(f->len > 40 ? 40 : f->len), f->s, (unsigned long long)g->n);
    if (i == 0 || i > g->n)
        return pl__src_fail(src, f->col, err, "index %llu out of range 1..%llu (the gene "
                            "list's length; indices are 1-based)", (unsigned long long)i,
                            (unsigned long long)g->n);
    *name = (pl__field){g->text + g->off[i - 1], (uint32_t)(g->off[i] - g->off[i - 1]), 0};
    return 0;
}

static int read_dango(pl_src *src, const pl_imp_opts *o, pl_imp_emit emit, void *ctx,
                      pl_imp_stats *st, pl_err *err)
{
    PL_FAIL_IF(!o->gene_list, err, PL_EUSAGE, "%s: the dango format needs a gene_list file",
               pl__src_path(src));
    glist g = {0};
    int rc = glist_load(o->gene_list, &g, err);
    const char *line;
    size_t len;
    pl__field f[4];
    while (rc >= 0 && (rc = pl__src_line(src, &line, &len, err)) > 0) {
        if (len == 0)
            continue;
        int n = pl__src_split(line, len, ' ', f, 4);
        if (n != 3) {
            rc = pl__src_fail(src, 0, err, "expected 'i j weight', found %d field%s%s", n,
                              n == 1 ? "" : "s", n < 3 ? " (missing column)" : "");
            break;
        }
        st->rows++;
        pl_imp_edge e = {.mode = 0}; /* one mode */
        if ((rc = index_field(src, &g, &f[0], &e.src, err)) < 0 ||
            (rc = index_field(src, &g, &f[1], &e.dst, err)) < 0 ||
            (rc = pl__imp_score(src, &f[2], "weight", &e.score, err)) < 0)
            break;
        if ((rc = pl__imp_keep(o, &e, emit, ctx, src, st, err)) < 0)
            break;
    }
    glist_free(&g);
    return rc < 0 ? rc : 0;
}

const pl_imp_format pl__imp_dango = {
    .name = "dango",
    .keys = PL_IMP_K_GENE_LIST | PL_IMP_K_MIN_SCORE,
    .undirected = 1,
    .read = read_dango,
};
