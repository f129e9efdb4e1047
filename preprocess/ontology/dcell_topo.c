/* DCell's topology files (its repository's training/Topology/GO_*_topology):
 * blocks of three lines, space-separated, trailing blanks allowed:
 *
 *   ROOT: <term> <n>          the term and the number of its genes
 *   GENES: <gene> ...         the genes of the term, closure included (n)
 *   TERMS: <child term> ...   its child terms (possibly none)
 *
 * Blank lines and '#' lines between blocks are skipped. Every term named under
 * TERMS: must have a block of its own. The term's own annotations are the
 * genes of its GENES: line that no child's GENES: line lists; the closure is
 * recomputed by pl__onto_build(), so genes(T) is the union of T's GENES: line
 * and those of its descendants (the same set when the file is consistent).
 *
 * Errors at file:line: GENES: or TERMS: before any ROOT:, a ROOT: without its
 * two lines (or with them out of order), a duplicate ROOT: for a term, a
 * count n that disagrees with the GENES: line (an error, not a warning: the
 * file is not what its writer meant), a malformed ROOT: line, a child term
 * without a block. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ontology.h"
#include "preprocess/import/source/source.h"
#include "src/core/error.h"
#include "src/core/vec.h"

typedef struct block {
    uint32_t term;
    uint64_t line;           /* of its ROOT: line */
    uint64_t count;          /* n of the ROOT: line */
    uint64_t genes, n_genes; /* into topo.genes: resolved genes of GENES: */
    uint64_t kids, n_kids;   /* into topo.kids */
    uint64_t kids_line;      /* of its TERMS: line */
} block;

typedef struct topo {
    pl_onto_raw *r;
    pl_src *src;
    pl_onto_resolve_fn resolve;
    void *ctx;
    int strict;
    pl_onto_stats *st;
    block *b;
    uint64_t n_b, cap_b;
    uint32_t *genes, *kids;
    uint64_t n_genes, cap_genes, n_kids, cap_kids;
    uint32_t *block_of; /* per term: block index + 1, 0 = none yet */
    uint64_t cap_of;
    int state;          /* 0: expect ROOT:, 1: GENES:, 2: TERMS: */
} topo;

enum { EXPECT_ROOT, EXPECT_GENES, EXPECT_TERMS };

static const char *const keyword[] = {"ROOT:", "GENES:", "TERMS:"};

/* The next blank-separated token of line[*i..len), or 0 at its end. */
static int token(const char *line, size_t len, size_t *i, pl__field *f)
{
    while (*i < len && (line[*i] == ' ' || line[*i] == '\t'))
        (*i)++;
    if (*i >= len)
        return 0;
    size_t a = *i;
    while (*i < len && line[*i] != ' ' && line[*i] != '\t')
        (*i)++;
    *f = (pl__field){line + a, (uint32_t)(*i - a), (uint32_t)a + 1};
    return 1;
}

static int which(const pl__field *f)
{
    for (int k = 0; k < 3; k++)
        if (f->len == strlen(keyword[k]) && !memcmp(f->s, keyword[k], f->len))
            return k;
    return -1;
}

static int nomem(const topo *t, pl_err *err)
{
    return pl__err(err, -ENOMEM, "%s: out of memory", pl__src_path(t->src));
}

static int intern(topo *t, const pl__field *f, uint32_t *term, pl_err *err)
{
    if (pl__onto_raw_term(t->r, f->s, f->len, term) < 0)
        return nomem(t, err);
    uint64_t cap = t->cap_of;
    if (pl__grow(&t->block_of, &t->cap_of, (uint64_t)*term + 1, sizeof *t->block_of) < 0)
        return nomem(t, err);
    if (t->cap_of > cap)
        memset(t->block_of + cap, 0, (t->cap_of - cap) * sizeof *t->block_of);
    return 0;
}

static int on_root(topo *t, const char *line, size_t len, size_t i, pl_err *err)
{
    pl__field f[3];
    int n = 0;
    while (n < 3 && token(line, len, &i, &f[n]))
        n++;
    pl__field extra;
    if (n < 2 || token(line, len, &i, &extra))
        return pl__src_fail(t->src, 0, err, "expected 'ROOT: <term> <gene count>', found "
                            "%d fields", n + 1 + (n == 2 ? 1 : 0));
    uint64_t count;
    if (pl__parse_u64(&f[1], &count) < 0)
        return pl__src_fail(t->src, f[1].col, err, "bad gene count '%.*s' (expected an "
                            "unsigned integer)", (int)(f[1].len > 40 ? 40 : f[1].len), f[1].s);
    uint32_t term;
    PL_TRY(intern(t, &f[0], &term, err));
    if (t->block_of[term])
        return pl__src_fail(t->src, f[0].col, err, "duplicate ROOT: for term '%.*s' (first "
                            "at line %llu)", (int)(f[0].len > 80 ? 80 : f[0].len), f[0].s,
                            (unsigned long long)t->b[t->block_of[term] - 1].line);
    if (pl__grow(&t->b, &t->cap_b, t->n_b + 1, sizeof *t->b) < 0)
        return nomem(t, err);
    t->b[t->n_b++] = (block){.term = term, .line = pl__src_lineno(t->src), .count = count};
    t->block_of[term] = (uint32_t)t->n_b;
    if (pl__onto_raw_define(t->r, term) < 0)
        return nomem(t, err);
    t->st->terms_read++;
    return 0;
}

static int on_genes(topo *t, const char *line, size_t len, size_t i, pl_err *err)
{
    block *b = &t->b[t->n_b - 1];
    b->genes = t->n_genes;
    uint64_t listed = 0;
    pl__field f;
    while (token(line, len, &i, &f)) {
        listed++;
        t->st->rows++;
        int64_t g = t->resolve(t->ctx, f.s, f.len);
        if (g < 0 && t->strict)
            return pl__src_fail(t->src, f.col, err, "unresolved gene name '%.*s' (strict mode)",
                                (int)(f.len > 80 ? 80 : f.len), f.s);
        if (g < 0) {
            if (pl__unres_add(&t->st->unknown_genes, f.s, f.len, pl__src_lineno(t->src)) < 0)
                return nomem(t, err);
            continue;
        }
        if (pl__grow(&t->genes, &t->cap_genes, t->n_genes + 1, sizeof *t->genes) < 0)
            return nomem(t, err);
        t->genes[t->n_genes++] = (uint32_t)g;
    }
    b->n_genes = t->n_genes - b->genes;
    if (listed != b->count)
        return pl__src_fail(t->src, 0, err, "GENES: lists %llu genes where the ROOT: of line "
                            "%llu says %llu", (unsigned long long)listed,
                            (unsigned long long)b->line, (unsigned long long)b->count);
    return 0;
}

static int on_terms(topo *t, const char *line, size_t len, size_t i, pl_err *err)
{
    block *b = &t->b[t->n_b - 1];
    b->kids = t->n_kids;
    b->kids_line = pl__src_lineno(t->src);
    pl__field f;
    while (token(line, len, &i, &f)) {
        uint32_t term;
        PL_TRY(intern(t, &f, &term, err));
        b = &t->b[t->n_b - 1];
        if (pl__grow(&t->kids, &t->cap_kids, t->n_kids + 1, sizeof *t->kids) < 0)
            return nomem(t, err);
        t->kids[t->n_kids++] = term;
    }
    b->n_kids = t->n_kids - b->kids;
    return 0;
}

/* One non-blank, non-comment line. */
static int on_line(topo *t, const char *line, size_t len, pl_err *err)
{
    size_t i = 0;
    pl__field f;
    token(line, len, &i, &f);
    int k = which(&f);
    if (k < 0)
        return pl__src_fail(t->src, f.col, err, "expected '%s' (a DCell topology block: ROOT:, "
                            "GENES:, TERMS:), found '%.*s'", keyword[t->state],
                            (int)(f.len > 40 ? 40 : f.len), f.s);
    if (k != t->state) {
        if (t->state == EXPECT_ROOT && t->n_b == 0)
            return pl__src_fail(t->src, f.col, err, "%s before any ROOT:", keyword[k]);
        if (t->state == EXPECT_ROOT)
            return pl__src_fail(t->src, f.col, err, "%s without its ROOT: (the block of line "
                                "%llu is complete)", keyword[k],
                                (unsigned long long)t->b[t->n_b - 1].line);
        return pl__src_fail(t->src, f.col, err, "expected '%s' after the ROOT: of line %llu, "
                            "found '%s'", keyword[t->state],
                            (unsigned long long)t->b[t->n_b - 1].line, keyword[k]);
    }
    t->state = (t->state + 1) % 3;
    return k == 0 ? on_root(t, line, len, i, err)
         : k == 1 ? on_genes(t, line, len, i, err)
                  : on_terms(t, line, len, i, err);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Edges child -> term and the term's own genes: those of its GENES: line
 * that no child's GENES: line lists. */
static int emit(topo *t, pl_err *err)
{
    uint32_t *under = NULL;
    uint64_t cap = 0;
    int rc = 0;
    for (uint64_t k = 0; rc == 0 && k < t->n_b; k++) {
        const block *b = &t->b[k];
        uint64_t n = 0;
        for (uint64_t c = 0; rc == 0 && c < b->n_kids; c++) {
            uint32_t kid = t->kids[b->kids + c];
            const block *kb = t->block_of[kid] ? &t->b[t->block_of[kid] - 1] : NULL;
            if (!kb) {
                rc = pl__err(err, PL_EPARSE, "%s:%llu: term '%s' under TERMS: has no ROOT: "
                             "block", pl__src_path(t->src), (unsigned long long)b->kids_line,
                             t->r->ids.names[kid]);
                break;
            }
            if (pl__onto_raw_edge(t->r, kid, b->term, b->kids_line) < 0 ||
                pl__grow(&under, &cap, n + kb->n_genes + 1, sizeof *under) < 0) {
                rc = nomem(t, err);
                break;
            }
            t->st->edges_read++;
            if (kb->n_genes)
                memcpy(under + n, t->genes + kb->genes, kb->n_genes * sizeof *under);
            n += kb->n_genes;
        }
        if (rc < 0)
            break;
        if (n) /* qsort takes no null array, even empty */
            qsort(under, n, sizeof *under, cmp_u32);
        for (uint64_t j = 0; j < b->n_genes; j++) {
            uint32_t g = t->genes[b->genes + j];
            if (n && bsearch(&g, under, n, sizeof *under, cmp_u32))
                continue;
            if (pl__onto_raw_ann(t->r, g, b->term) < 0) {
                rc = nomem(t, err);
                break;
            }
        }
    }
    free(under);
    return rc;
}

int pl__onto_read_dcell_blocks(pl_onto_raw *r, pl_src *src, const char *line, size_t len,
                               pl_onto_resolve_fn resolve, void *ctx, int strict,
                               pl_onto_stats *st, pl_err *err)
{
    topo t = {.r = r, .src = src, .resolve = resolve, .ctx = ctx, .strict = strict, .st = st};
    int rc = on_line(&t, line, len, err);
    while (rc == 0 && (rc = pl__src_line(src, &line, &len, err)) == 1) {
        size_t i = 0;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        rc = 0;
        if (i < len && line[i] != '#')
            rc = on_line(&t, line, len, err);
    }
    if (rc == 0 && t.state != EXPECT_ROOT)
        rc = pl__err(err, PL_EPARSE, "%s:%llu: the ROOT: of this line has no %s line (the "
                     "file ends)", pl__src_path(src),
                     (unsigned long long)t.b[t.n_b - 1].line, keyword[t.state]);
    if (rc == 0)
        rc = emit(&t, err);
    free(t.b);
    free(t.genes);
    free(t.kids);
    free(t.block_of);
    return rc;
}
