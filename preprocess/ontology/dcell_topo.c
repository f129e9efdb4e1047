/* DCell's topology files (its repository's training/Topology/GO_*_topology):
 * blocks of three lines, space-separated, trailing blanks allowed:
 *
 *   ROOT: <term> <n>          the term and the size of its gene closure
 *   GENES: <gene> ...         the term's direct genes (possibly none)
 *   TERMS: <child term> ...   its child terms (possibly none)
 *
 * Blank lines and '#' lines between blocks are skipped. Every term named under
 * TERMS: must have a block of its own; a child named twice on one TERMS: line
 * is one link (counted in repeated_children). Every gene of a GENES: line is
 * annotated to its term; pl__onto_build() computes genes(T), the union of T's
 * GENES: line and those of its descendants.
 *
 * n is |genes(T)| counted over the names as written (unresolved names
 * included): a count that differs is a warning naming the term
 * (count_mismatches, count_notes), an error under strict.
 *
 * Errors at file:line: GENES: or TERMS: before any ROOT:, a ROOT: without its
 * two lines (or with them out of order), a duplicate ROOT: for a term, a
 * malformed ROOT: line, a child term without a block. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <roaring/roaring.h>

#include "ontology.h"
#include "preprocess/import/source/source.h"
#include "src/core/error.h"
#include "src/core/vec.h"

typedef struct block {
    uint32_t term;
    uint64_t line;           /* of its ROOT: line */
    uint64_t count;          /* n of the ROOT: line */
    uint64_t genes, n_genes; /* into topo.genes: resolved genes of GENES: */
    uint64_t names, n_names; /* into topo.names: every name of GENES: */
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
    uint32_t *genes, *kids, *names;
    uint64_t n_genes, cap_genes, n_kids, cap_kids, n_names, cap_names;
    pl_strtab nm;       /* the gene names as written, resolved or not */
    uint32_t *block_of; /* per term: block index + 1, 0 = none yet */
    uint32_t *kid_of;   /* per term: block index + 1 of the last TERMS: naming it */
    uint64_t cap_of, cap_kid_of;
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
    cap = t->cap_kid_of;
    if (pl__grow(&t->kid_of, &t->cap_kid_of, (uint64_t)*term + 1, sizeof *t->kid_of) < 0)
        return nomem(t, err);
    if (t->cap_kid_of > cap)
        memset(t->kid_of + cap, 0, (t->cap_kid_of - cap) * sizeof *t->kid_of);
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
    b->names = t->n_names;
    pl__field f;
    while (token(line, len, &i, &f)) {
        t->st->rows++;
        int64_t id = pl__strtab_intern(&t->nm, f.s, f.len, NULL);
        if (id < 0 || pl__grow(&t->names, &t->cap_names, t->n_names + 1, sizeof *t->names) < 0)
            return nomem(t, err);
        t->names[t->n_names++] = (uint32_t)id;
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
    b->n_names = t->n_names - b->names;
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
        if (t->kid_of[term] == t->n_b) { /* named twice on this line: one link */
            t->st->repeated_children++;
            continue;
        }
        t->kid_of[term] = (uint32_t)t->n_b;
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

/* Edges child -> term and the term's annotations: every gene of its GENES:
 * line. */
static int emit(topo *t, pl_err *err)
{
    for (uint64_t k = 0; k < t->n_b; k++) {
        const block *b = &t->b[k];
        for (uint64_t c = 0; c < b->n_kids; c++) {
            uint32_t kid = t->kids[b->kids + c];
            if (!t->block_of[kid])
                return pl__err(err, PL_EPARSE, "%s:%llu: term '%s' under TERMS: has no ROOT: "
                               "block", pl__src_path(t->src), (unsigned long long)b->kids_line,
                               t->r->ids.names[kid]);
            if (pl__onto_raw_edge(t->r, kid, b->term, b->kids_line) < 0)
                return nomem(t, err);
            t->st->edges_read++;
        }
        for (uint64_t j = 0; j < b->n_genes; j++)
            if (pl__onto_raw_ann(t->r, t->genes[b->genes + j], b->term) < 0)
                return nomem(t, err);
    }
    return 0;
}

/* One ROOT: count that differs from the closure: an error under strict,
 * else counted and, for the first PL_ONTO_NOTES terms, a line of
 * st->count_notes. */
static int mismatch(topo *t, const block *b, uint64_t closure, pl_err *err)
{
    const char *name = t->r->ids.names[b->term];
    if (t->strict)
        return pl__err(err, PL_EPARSE, "%s:%llu: the ROOT: count of term '%s' is %llu where its "
                       "gene closure (%llu direct under GENES: and its descendants') has %llu "
                       "(strict mode)", pl__src_path(t->src), (unsigned long long)b->line, name,
                       (unsigned long long)b->count, (unsigned long long)b->n_names,
                       (unsigned long long)closure);
    pl_onto_stats *st = t->st;
    if (st->count_mismatches++ >= PL_ONTO_NOTES)
        return 0;
    char esc[256], note[512];
    pl__ctrl_escape(esc, sizeof esc, name, strlen(name), 0);
    int n = snprintf(note, sizeof note, "%s:%llu: the ROOT: count of term '%s' is %llu where its "
                     "gene closure has %llu\n", pl__src_path(t->src),
                     (unsigned long long)b->line, esc, (unsigned long long)b->count,
                     (unsigned long long)closure);
    size_t have = st->count_notes ? strlen(st->count_notes) : 0;
    size_t add = n < 0 ? 0 : (size_t)n < sizeof note ? (size_t)n : sizeof note - 1;
    char *p = realloc(st->count_notes, have + add + 1);
    if (!p)
        return nomem(t, err);
    memcpy(p + have, note, add);
    p[have + add] = 0;
    st->count_notes = p;
    return 0;
}

/* Each block's closure over the names as written (children first, an
 * explicit stack), against its ROOT: count. A cycle stops the check: the
 * build names it. */
static int check_counts(topo *t, pl_err *err)
{
    roaring_bitmap_t **set = calloc(t->n_b ? t->n_b : 1, sizeof *set);
    uint8_t *state = calloc(t->n_b ? t->n_b : 1, 1); /* 0 new, 1 open, 2 done */
    uint64_t *stack = malloc((t->n_b ? t->n_b : 1) * sizeof *stack);
    uint64_t *next = calloc(t->n_b ? t->n_b : 1, sizeof *next);
    int rc = set && state && stack && next ? 0 : nomem(t, err), cycle = 0;
    for (uint64_t root = 0; rc == 0 && !cycle && root < t->n_b; root++) {
        if (state[root])
            continue;
        uint64_t depth = 0;
        stack[depth++] = root;
        state[root] = 1;
        while (rc == 0 && !cycle && depth) {
            uint64_t k = stack[depth - 1];
            const block *b = &t->b[k];
            if (next[k] < b->n_kids) {
                uint64_t c = t->block_of[t->kids[b->kids + next[k]++]] - 1;
                cycle = state[c] == 1;
                if (state[c] == 0) {
                    state[c] = 1;
                    stack[depth++] = c;
                }
                continue;
            }
            depth--;
            state[k] = 2;
            /* (no names at all: t->names is NULL, and no offset may be applied to it) */
            const uint32_t *direct = b->n_names ? t->names + b->names : NULL;
            if (!(set[k] = roaring_bitmap_of_ptr(b->n_names, direct))) {
                rc = nomem(t, err);
                break;
            }
            for (uint64_t c = 0; c < b->n_kids; c++)
                roaring_bitmap_or_inplace(set[k], set[t->block_of[t->kids[b->kids + c]] - 1]);
            uint64_t closure = roaring_bitmap_get_cardinality(set[k]);
            if (closure != b->count)
                rc = mismatch(t, b, closure, err);
        }
    }
    for (uint64_t k = 0; set && k < t->n_b; k++)
        if (set[k])
            roaring_bitmap_free(set[k]);
    free(set);
    free(state);
    free(stack);
    free(next);
    return rc;
}

int pl__onto_read_dcell_blocks(pl_onto_raw *r, pl_src *src, const char *line, size_t len,
                               pl_onto_resolve_fn resolve, void *ctx, int strict,
                               pl_onto_stats *st, pl_err *err)
{
    topo t = {.r = r, .src = src, .resolve = resolve, .ctx = ctx, .strict = strict, .st = st};
    int rc = pl__strtab_init(&t.nm) < 0 ? nomem(&t, err) : 0;
    if (rc == 0)
        rc = on_line(&t, line, len, err);
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
    if (rc == 0)
        rc = check_counts(&t, err);
    free(t.b);
    free(t.genes);
    free(t.names);
    free(t.kids);
    free(t.block_of);
    free(t.kid_of);
    pl__strtab_free(&t.nm);
    return rc;
}
