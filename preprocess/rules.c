/* Gene-reaction rule compiler (rules.h): a recursive-descent parser builds
 * an n-ary tree (flattened, constants folded), which is then emitted as a
 * postfix program, deepest operand first. */
#include "rules.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "src/core/rule.h"
#include "src/core/vec.h"

enum { N_GENE, N_TRUE, N_AND, N_OR };

typedef struct node {
    uint32_t kind, gene;     /* gene: N_GENE only */
    uint32_t first, n_kids;  /* children: kids[first .. first + n_kids) */
    uint32_t need;           /* stack depth the node's program needs */
} node;

typedef struct parser {
    const char *s;
    size_t len, pos;
    pl__gene_resolver resolve;
    void *ctx;
    pl__rule *out;
    char *why;
    size_t why_cap;
    uint32_t err_col;
    uint32_t col0;           /* column of s[0] in its line, for messages */
    node *nodes;
    uint64_t n_nodes, cap_nodes;
    uint32_t *kids, *stack;
    uint64_t n_kids, cap_kids, n_stack, cap_stack;
    uint32_t *seen;          /* open-addressing set of gene index + 1 */
    uint64_t seen_cap;       /* a power of two, or 0 */
    uint32_t depth;          /* parentheses open */
} parser;

static int fail(parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(parser *p, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, p->why_cap, fmt, ap);
    va_end(ap);
    p->err_col = (uint32_t)at;
    return PL_EPARSE;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* The next token: '(' , ')', a word, or the end (len 0 at p->len). */
static void peek(parser *p, size_t *at, size_t *tlen)
{
    while (p->pos < p->len && is_space(p->s[p->pos]))
        p->pos++;
    size_t i = p->pos;
    *at = i;
    if (i == p->len) {
        *tlen = 0;
        return;
    }
    if (p->s[i] == '(' || p->s[i] == ')') {
        *tlen = 1;
        return;
    }
    while (i < p->len && !is_space(p->s[i]) && p->s[i] != '(' && p->s[i] != ')')
        i++;
    *tlen = i - *at;
}

static int is_word(const char *s, size_t n, const char *w)
{
    return n == strlen(w) && strncasecmp(s, w, n) == 0;
}

/* Operators of other languages, which COBRApy's rules do not have. */
static int is_bad_token(const char *t, size_t n)
{
    static const char *const bad[] = {"not", "&", "&&", "|", "||", "!", "~"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (is_word(t, n, bad[i]))
            return 1;
    return 0;
}

#define BAD_TOKEN "unknown token '%.*s' (a rule has genes, 'and', 'or' and parentheses)"

static int new_node(parser *p, uint32_t kind, uint32_t gene, uint32_t *id)
{
    if (pl__grow(&p->nodes, &p->cap_nodes, p->n_nodes + 1, sizeof *p->nodes) < 0)
        return -ENOMEM;
    *id = (uint32_t)p->n_nodes;
    p->nodes[p->n_nodes++] = (node){.kind = kind, .gene = gene};
    return 0;
}

static int push(parser *p, uint32_t id)
{
    if (pl__grow(&p->stack, &p->cap_stack, p->n_stack + 1, sizeof *p->stack) < 0)
        return -ENOMEM;
    p->stack[p->n_stack++] = id;
    return 0;
}

/* Record gene g among the rule's distinct genes. */
static int note_gene(parser *p, uint32_t g)
{
    pl__rule *r = p->out;
    if (2 * ((uint64_t)r->n_genes + 1) > p->seen_cap) {
        uint64_t cap = p->seen_cap ? 2 * p->seen_cap : 64;
        uint32_t *s = calloc(cap, sizeof *s);
        if (!s)
            return -ENOMEM;
        free(p->seen);
        p->seen = s;
        p->seen_cap = cap;
        for (uint32_t i = 0; i < r->n_genes; i++) {
            uint64_t h = (r->genes[i] * UINT64_C(0x9E3779B97F4A7C15)) >> 20;
            while (s[h & (cap - 1)])
                h++;
            s[h & (cap - 1)] = r->genes[i] + 1;
        }
    }
    uint64_t h = (g * UINT64_C(0x9E3779B97F4A7C15)) >> 20;
    for (; p->seen[h & (p->seen_cap - 1)]; h++)
        if (p->seen[h & (p->seen_cap - 1)] == g + 1)
            return 0;
    p->seen[h & (p->seen_cap - 1)] = g + 1;
    if (pl__grow(&r->genes, &r->cap_genes, r->n_genes + 1, sizeof *r->genes) < 0)
        return -ENOMEM;
    r->genes[r->n_genes++] = g;
    return 0;
}

/* Make an operator node of the ids on the stack from `base`, folding:
 * children of the same kind are spliced in, `true` operands vanish from an
 * `and` and absorb an `or`; one operand is itself. */
static int reduce(parser *p, uint32_t kind, uint64_t base, uint32_t *id)
{
    uint64_t n = p->n_stack - base, m = 0;
    if (n == 1) {
        *id = p->stack[base];
        p->n_stack = base;
        return 0;
    }
    uint64_t start = p->n_kids;
    int has_true = 0;
    for (uint64_t i = 0; i < n; i++) {
        const node *c = &p->nodes[p->stack[base + i]];
        if (c->kind == N_TRUE) {
            has_true = 1;
            continue;
        }
        uint64_t add = c->kind == kind ? c->n_kids : 1;
        if (pl__grow(&p->kids, &p->cap_kids, p->n_kids + add, sizeof *p->kids) < 0)
            return -ENOMEM;
        c = &p->nodes[p->stack[base + i]];
        if (c->kind == kind)
            memcpy(p->kids + p->n_kids, p->kids + c->first, add * sizeof *p->kids);
        else
            p->kids[p->n_kids] = p->stack[base + i];
        p->n_kids += add;
        m += add;
    }
    p->n_stack = base;
    if ((has_true && kind == N_OR) || m == 0) {
        p->n_kids = start;
        return new_node(p, N_TRUE, 0, id);
    }
    if (m == 1) {
        *id = p->kids[start];
        p->n_kids = start;
        return 0;
    }
    int rc = new_node(p, kind, 0, id);
    if (rc == 0) {
        p->nodes[*id].first = (uint32_t)start;
        p->nodes[*id].n_kids = (uint32_t)m;
    }
    return rc;
}

static int parse_or(parser *p, uint32_t *id);

static int parse_factor(parser *p, uint32_t *id)
{
    size_t at, n;
    peek(p, &at, &n);
    if (n == 0)
        return fail(p, at, "expected a gene or '(' at the end of the rule");
    const char *t = p->s + at;
    if (*t == ')')
        return fail(p, at, "expected a gene or '(', found ')'");
    if (is_word(t, n, "and") || is_word(t, n, "or"))
        return fail(p, at, "expected a gene or '(', found the operator '%.*s'", (int)n, t);
    if (*t == '(') {
        if (p->depth == PL__RULE_MAX_NEST)
            return fail(p, at, "parentheses nest deeper than %d levels", PL__RULE_MAX_NEST);
        p->depth++;
        p->pos = at + 1;
        int rc = parse_or(p, id);
        if (rc < 0)
            return rc;
        size_t cat, cn;
        peek(p, &cat, &cn);
        if (cn == 0 || p->s[cat] != ')')
            return fail(p, cat, "expected ')' to close the '(' at column %zu%s", at + p->col0,
                        cn ? "" : ", found the end of the rule");
        p->pos = cat + 1;
        p->depth--;
        return 0;
    }
    if (is_bad_token(t, n))
        return fail(p, at, BAD_TOKEN, (int)n, t);
    int64_t g = p->resolve(p->ctx, t, n);
    if (g == -1)
        return fail(p, at, "unknown gene '%.*s'", (int)n, t);
    p->pos = at + n;
    if (g == PL__GENE_PRESENT) {
        p->out->n_present++;
        return new_node(p, N_TRUE, 0, id);
    }
    int rc = note_gene(p, (uint32_t)g);
    return rc < 0 ? rc : new_node(p, N_GENE, (uint32_t)g, id);
}

static int parse_and(parser *p, uint32_t *id)
{
    uint64_t base = p->n_stack;
    for (;;) {
        uint32_t f;
        int rc = parse_factor(p, &f);
        if (rc < 0 || (rc = push(p, f)) < 0)
            return rc;
        size_t at, n;
        peek(p, &at, &n);
        if (!is_word(p->s + at, n, "and"))
            break;
        p->pos = at + n;
    }
    return reduce(p, N_AND, base, id);
}

static int parse_or(parser *p, uint32_t *id)
{
    uint64_t base = p->n_stack;
    for (;;) {
        uint32_t f;
        int rc = parse_and(p, &f);
        if (rc < 0 || (rc = push(p, f)) < 0)
            return rc;
        size_t at, n;
        peek(p, &at, &n);
        if (!is_word(p->s + at, n, "or"))
            break;
        p->pos = at + n;
    }
    return reduce(p, N_OR, base, id);
}

/* ---------------------------------------------------------------- emitting */

static int by_need(const void *a, const void *b, void *ctx)
{
    const node *nodes = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t nx = nodes[x].need, ny = nodes[y].need;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    return (x > y) - (x < y);
}

/* Stack needs, children reordered deepest first (recursion depth is bounded
 * by the nesting limit: flattening leaves one level per parenthesis). */
static void measure(parser *p, uint32_t id)
{
    node *v = &p->nodes[id];
    if (v->kind == N_GENE || v->kind == N_TRUE) {
        v->need = 1;
        return;
    }
    for (uint32_t i = 0; i < v->n_kids; i++)
        measure(p, p->kids[v->first + i]);
    qsort_r(p->kids + v->first, v->n_kids, sizeof *p->kids, by_need, p->nodes);
    uint32_t need = 0;
    for (uint32_t i = 0; i < v->n_kids; i++) {
        uint32_t k = p->nodes[p->kids[v->first + i]].need + (i > 0);
        need = k > need ? k : need;
    }
    v->need = need;
}

static int emit_word(pl__rule *r, uint32_t w)
{
    if (pl__grow(&r->code, &r->cap_code, (uint64_t)r->n + 1, sizeof *r->code) < 0)
        return -ENOMEM;
    r->code[r->n++] = w;
    return 0;
}

static int emit(parser *p, uint32_t id)
{
    const node *v = &p->nodes[id];
    if (v->kind == N_GENE)
        return emit_word(p->out, v->gene);
    if (v->kind == N_TRUE)
        return emit_word(p->out, PL__RULE_TRUE);
    uint32_t op = v->kind == N_AND ? PL__RULE_AND : PL__RULE_OR;
    for (uint32_t i = 0; i < v->n_kids; i++) {
        int rc = emit(p, p->kids[v->first + i]);
        if (rc == 0 && i > 0)
            rc = emit_word(p->out, op);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int pl__rule_compile(const char *s, size_t len, uint32_t col0, pl__gene_resolver resolve,
                     void *ctx, pl__rule *out, uint32_t *col, char *why, size_t cap)
{
    parser *p = out->scratch;
    if (!p) {
        p = out->scratch = calloc(1, sizeof *p);
        if (!p)
            return -ENOMEM;
    }
    p->s = s;
    p->len = len;
    p->col0 = col0;
    p->pos = 0;
    p->resolve = resolve;
    p->ctx = ctx;
    p->out = out;
    p->why = why;
    p->why_cap = cap;
    p->n_nodes = p->n_kids = p->n_stack = 0;
    p->depth = 0;
    if (p->seen)
        memset(p->seen, 0, p->seen_cap * sizeof *p->seen);
    out->n = out->n_genes = out->n_present = 0;
    size_t at, n;
    peek(p, &at, &n);
    if (n == 0)
        return 0;
    uint32_t root;
    int rc = parse_or(p, &root);
    if (rc == 0) {
        peek(p, &at, &n);
        if (n && p->s[at] == ')')
            rc = fail(p, at, "unbalanced ')': no '(' to close");
        else if (is_bad_token(p->s + at, n))
            rc = fail(p, at, BAD_TOKEN, (int)n, p->s + at);
        else if (n)
            rc = fail(p, at, "expected 'and', 'or' or the end of the rule, found '%.*s'",
                      (int)n, p->s + at);
    }
    if (rc == 0) {
        measure(p, root);
        if (p->nodes[root].need > PL__RULE_MAX_DEPTH)
            rc = fail(p, 0, "the rule needs a stack deeper than %u", PL__RULE_MAX_DEPTH);
    }
    if (rc == 0)
        rc = emit(p, root);
    if (rc == PL_EPARSE)
        *col = p->err_col;
    return rc;
}

void pl__rule_free(pl__rule *r)
{
    parser *p = r->scratch;
    if (p) {
        free(p->nodes);
        free(p->kids);
        free(p->stack);
        free(p->seen);
        free(p);
    }
    free(r->code);
    free(r->genes);
    memset(r, 0, sizeof *r);
}
