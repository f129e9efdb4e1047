/* yeast-GEM / COBRApy YAML models (metab.h), read with libyaml's event
 * parser as the file streams in: the document is never held whole.
 *
 * The layout (cobra.io.save_yaml_model, yeast-GEM's model/yeast-GEM.yml):
 *
 *   !!omap
 *   - metaData: ...
 *   - metabolites:
 *       - !!omap
 *         - id: "s_0001"
 *         - ...
 *   - reactions:
 *       - !!omap
 *         - id: "r_0001"
 *         - metabolites: !!omap
 *             - s_0025: -1
 *             - s_1399: 1
 *         - gene_reaction_rule: "(YDL174C and YEL039C) or YEL071W"
 *   - genes:
 *       - !!omap
 *         - id: "Q0045"
 *
 * An `!!omap` (a sequence of one-pair mappings) and a plain mapping are read
 * alike wherever a mapping is expected; keys other than these are skipped.
 * libyaml reads the decompressed lines of the source (source.h), so gzip and
 * zstd files stream and every position is the file's own line and column.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "metab.h"
#include "preprocess/import/source/source.h"
#include "src/core/error.h"
#include "src/core/vec.h"

typedef struct yp {
    yaml_parser_t p;
    yaml_event_t ev;
    int have;            /* ev holds an event to delete */
    int depth;           /* collections open */
    pl_src *src;
    const char *path;
    const char *line;    /* the source line being fed */
    size_t len, off;
    int nl, eof;         /* '\n' still to feed after line; source ended */
    int src_rc;          /* the source's error, its message in src_err */
    pl_err src_err;
    pl_err *err;
    pl_metab *m;
} yp;

/* libyaml's input: the source's lines, each followed by '\n'. */
static int feed(void *data, unsigned char *buf, size_t size, size_t *got)
{
    yp *y = data;
    size_t n = 0;
    while (n < size && !y->eof) {
        if (y->off < y->len) {
            size_t k = y->len - y->off < size - n ? y->len - y->off : size - n;
            memcpy(buf + n, y->line + y->off, k);
            y->off += k;
            n += k;
        } else if (y->nl) {
            buf[n++] = '\n';
            y->nl = 0;
        } else {
            int rc = pl__src_line(y->src, &y->line, &y->len, &y->src_err);
            if (rc < 0) {
                y->src_rc = rc;
                return 0;
            }
            y->eof = rc == 0;
            y->off = 0;
            y->nl = rc > 0;
        }
    }
    *got = n;
    return 1;
}

static int fail_ev(yp *y, const yaml_event_t *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_ev(yp *y, const yaml_event_t *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = pl__metab_vfail(y->err, y->path, e->start_mark.line + 1, e->start_mark.column + 1,
                             fmt, ap);
    va_end(ap);
    return rc;
}

/* The next event into y->ev. */
static int next(yp *y)
{
    if (y->have)
        yaml_event_delete(&y->ev);
    y->have = 0;
    if (!yaml_parser_parse(&y->p, &y->ev)) {
        if (y->src_rc < 0) {
            *y->err = y->src_err;
            return y->src_rc;
        }
        if (y->p.error == YAML_MEMORY_ERROR)
            return pl__err(y->err, -ENOMEM, "%s: out of memory", y->path);
        return pl__err(y->err, PL_EPARSE, "%s:%zu:%zu: not YAML: %s%s%s", y->path,
                       y->p.problem_mark.line + 1, y->p.problem_mark.column + 1,
                       y->p.problem ? y->p.problem : "syntax error",
                       y->p.context ? " " : "", y->p.context ? y->p.context : "");
    }
    y->have = 1;
    if (y->ev.type == YAML_SEQUENCE_START_EVENT || y->ev.type == YAML_MAPPING_START_EVENT) {
        /* libyaml's time grows with the square of the flow nesting */
        if (++y->depth > PL_YAML_MAX_DEPTH)
            return fail_ev(y, &y->ev, "YAML collections nested deeper than %d",
                           PL_YAML_MAX_DEPTH);
    } else if (y->ev.type == YAML_SEQUENCE_END_EVENT || y->ev.type == YAML_MAPPING_END_EVENT) {
        y->depth--;
    }
    if (y->ev.type == YAML_ALIAS_EVENT)
        return fail_ev(y, &y->ev, "YAML aliases (*name) are not read in models");
    return 0;
}

/* Skip the node whose first event is y->ev. */
static int skip(yp *y)
{
    int depth = 0;
    for (;;) {
        switch (y->ev.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            depth++;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        default:
            break;
        }
        if (depth == 0)
            return 0;
        PL_TRY(next(y));
    }
}

static int is_scalar(const yp *y) { return y->ev.type == YAML_SCALAR_EVENT; }

static const char *sval(const yp *y) { return (const char *)y->ev.data.scalar.value; }

static int key_is(const yp *y, const char *k)
{
    return is_scalar(y) && y->ev.data.scalar.length == strlen(k) && !strcmp(sval(y), k);
}

/* A mapping or an omap being walked: `omap` = a sequence of one-pair
 * mappings. */
typedef struct walk {
    int omap;
    const char *what;
} walk;

/* Begin walking the mapping (or omap) whose start is y->ev. */
static int walk_begin(yp *y, walk *w, const char *what)
{
    w->what = what;
    if (y->ev.type == YAML_MAPPING_START_EVENT)
        w->omap = 0;
    else if (y->ev.type == YAML_SEQUENCE_START_EVENT)
        w->omap = 1;
    else
        return fail_ev(y, &y->ev, "%s must be a mapping", what);
    return 0;
}

/* The next key into y->ev (a scalar): 1, or 0 at the end of the mapping. */
static int walk_key(yp *y, walk *w)
{
    PL_TRY(next(y));
    if (w->omap) {
        if (y->ev.type == YAML_SEQUENCE_END_EVENT)
            return 0;
        if (y->ev.type != YAML_MAPPING_START_EVENT)
            return fail_ev(y, &y->ev, "%s: an !!omap entry must be a one-key mapping", w->what);
        PL_TRY(next(y));
    } else if (y->ev.type == YAML_MAPPING_END_EVENT) {
        return 0;
    }
    if (!is_scalar(y))
        return fail_ev(y, &y->ev, "%s: a key must be a plain name", w->what);
    return 1;
}

/* After the value of an entry: close the omap's one-pair mapping. */
static int walk_value_done(yp *y, walk *w)
{
    if (!w->omap)
        return 0;
    PL_TRY(next(y));
    if (y->ev.type != YAML_MAPPING_END_EVENT)
        return fail_ev(y, &y->ev, "%s: an !!omap entry must be a one-key mapping", w->what);
    return 0;
}

/* Walk a sequence of items: each call puts the next item's first event in
 * y->ev; 1, or 0 at the end. */
static int seq_item(yp *y)
{
    PL_TRY(next(y));
    return y->ev.type == YAML_SEQUENCE_END_EVENT ? 0 : 1;
}

static int want_seq(yp *y, const char *what)
{
    if (y->ev.type != YAML_SEQUENCE_START_EVENT)
        return fail_ev(y, &y->ev, "'%s' must be a list", what);
    return 0;
}

static uint64_t ln(const yp *y) { return y->ev.start_mark.line + 1; }
static uint64_t cl(const yp *y) { return y->ev.start_mark.column + 1; }

/* Column of a scalar's first character (after an opening quote). */
static uint64_t text_col(const yp *y)
{
    yaml_scalar_style_t s = y->ev.data.scalar.style;
    return cl(y) + (s == YAML_SINGLE_QUOTED_SCALAR_STYLE || s == YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

/* A reaction's metabolite entry held until its id is known. */
typedef struct pend {
    char *met;
    double v;
    uint64_t line, col;
} pend;

typedef struct rxn {
    char *id, *rule;
    size_t id_len, rule_len;
    uint64_t line, col, id_line, id_col, rule_line, rule_col;
    pend *p;
    uint64_t n, cap;
} rxn;

static void rxn_clear(rxn *x)
{
    for (uint64_t i = 0; i < x->n; i++)
        free(x->p[i].met);
    free(x->p);
    free(x->id);
    free(x->rule);
    memset(x, 0, sizeof *x);
}

/* A scalar value for key `k`, copied. */
static int copy_scalar(yp *y, const char *k, char **out, size_t *len)
{
    if (!is_scalar(y))
        return fail_ev(y, &y->ev, "'%s' must be a single value", k);
    if (strlen(sval(y)) != y->ev.data.scalar.length)
        return fail_ev(y, &y->ev, "'%s' holds a NUL byte", k);
    free(*out);
    *out = strndup(sval(y), y->ev.data.scalar.length);
    *len = y->ev.data.scalar.length;
    PL_FAIL_IF(!*out, y->err, -ENOMEM, "%s: out of memory", y->path);
    return 0;
}

static int rxn_mets(yp *y, rxn *x)
{
    walk w;
    PL_TRY(walk_begin(y, &w, "a reaction's 'metabolites'"));
    int rc;
    while ((rc = walk_key(y, &w)) == 1) {
        if (pl__grow(&x->p, &x->cap, x->n + 1, sizeof *x->p) < 0)
            return pl__err(y->err, -ENOMEM, "%s: out of memory", y->path);
        pend *p = &x->p[x->n];
        memset(p, 0, sizeof *p);
        size_t len;
        PL_TRY(copy_scalar(y, "metabolite", &p->met, &len));
        x->n++;
        p->line = ln(y);
        p->col = cl(y);
        PL_TRY(next(y));
        if (!is_scalar(y))
            return fail_ev(y, &y->ev, "stoichiometry of '%s' must be a number", p->met);
        char *end;
        errno = 0;
        p->v = strtod(sval(y), &end);
        if (!sval(y)[0] || *end || errno == ERANGE || !isfinite(p->v) ||
            fabs(p->v) > FLT_MAX)
            return fail_ev(y, &y->ev, "bad stoichiometry '%.40s' of metabolite '%s'", sval(y),
                           p->met);
        PL_TRY(walk_value_done(y, &w));
    }
    return rc;
}

/* Refuse key y->ev (a scalar) when it is already in `keys` (each with its
 * line), else add it. */
static int key_once(yp *y, char ***keys, uint64_t **lines, uint64_t *n, uint64_t *cap)
{
    for (uint64_t i = 0; i < *n; i++)
        if (!strcmp((*keys)[i], sval(y)))
            return fail_ev(y, &y->ev, "key '%s' given twice in a reaction (first on line %llu)",
                           sval(y), (unsigned long long)(*lines)[i]);
    uint64_t c = *cap;
    char *k = strdup(sval(y));
    if (!k || pl__grow(keys, &c, *n + 1, sizeof **keys) < 0 ||
        pl__grow(lines, cap, *n + 1, sizeof **lines) < 0) {
        free(k);
        return pl__err(y->err, -ENOMEM, "%s: out of memory", y->path);
    }
    (*keys)[*n] = k;
    (*lines)[(*n)++] = ln(y);
    return 0;
}

static int reaction(yp *y)
{
    rxn x = {.line = ln(y), .col = cl(y)};
    walk w;
    char **keys = NULL;
    uint64_t *lines = NULL, n_keys = 0, cap_keys = 0;
    int rc = walk_begin(y, &w, "a reaction");
    while (rc >= 0 && (rc = walk_key(y, &w)) == 1 &&
           (rc = key_once(y, &keys, &lines, &n_keys, &cap_keys)) >= 0) {
        if (key_is(y, "id")) {
            rc = next(y);
            x.id_line = ln(y), x.id_col = text_col(y);
            if (rc >= 0)
                rc = copy_scalar(y, "id", &x.id, &x.id_len);
        } else if (key_is(y, "metabolites")) {
            if ((rc = next(y)) >= 0)
                rc = rxn_mets(y, &x);
        } else if (key_is(y, "gene_reaction_rule")) {
            rc = next(y);
            x.rule_line = ln(y), x.rule_col = text_col(y);
            if (rc >= 0)
                rc = copy_scalar(y, "gene_reaction_rule", &x.rule, &x.rule_len);
        } else if ((rc = next(y)) >= 0) {
            rc = skip(y);
        }
        if (rc >= 0)
            rc = walk_value_done(y, &w);
    }
    for (uint64_t i = 0; i < n_keys; i++)
        free(keys[i]);
    free(keys);
    free(lines);
    pl_metab *m = y->m;
    int64_t r = -1;
    if (rc >= 0 && !x.id)
        rc = pl__err(y->err, PL_EPARSE, "%s:%llu:%llu: a reaction without 'id'", y->path,
                     (unsigned long long)x.line, (unsigned long long)x.col);
    if (rc >= 0)
        rc = pl__metab_reaction(m, y->path, x.id_line, x.id_col, x.id, x.id_len, &r, y->err);
    for (uint64_t i = 0; rc >= 0 && i < x.n; i++)
        rc = pl__metab_rmr(m, y->path, x.p[i].line, x.p[i].col, r, x.p[i].met,
                           strlen(x.p[i].met), x.p[i].v, y->err);
    if (rc >= 0 && x.rule)
        rc = pl__metab_rule(m, r, y->path, x.rule_line, x.rule_col, x.rule, x.rule_len, y->err);
    rxn_clear(&x);
    return rc < 0 ? rc : 0;
}

/* An item of `metabolites` or `genes`: its id. */
static int listed(yp *y, int genes)
{
    walk w;
    uint64_t line = ln(y), col = cl(y);
    int rc, seen = 0;
    PL_TRY(walk_begin(y, &w, genes ? "a gene" : "a metabolite"));
    while ((rc = walk_key(y, &w)) == 1) {
        int id = key_is(y, "id");
        PL_TRY(next(y));
        if (id) {
            if (!is_scalar(y))
                return fail_ev(y, &y->ev, "'id' must be a single value");
            seen = 1;
            if (!genes)
                PL_TRY(pl__metab_list_met(y->m, y->path, ln(y), text_col(y), sval(y),
                                          y->ev.data.scalar.length, y->err));
        } else {
            PL_TRY(skip(y));
        }
        PL_TRY(walk_value_done(y, &w));
    }
    PL_TRY(rc);
    if (!seen)
        return pl__err(y->err, PL_EPARSE, "%s:%llu:%llu: a %s without 'id'", y->path,
                       (unsigned long long)line, (unsigned long long)col,
                       genes ? "gene" : "metabolite");
    y->m->n_model_genes += genes;
    return 0;
}

static int model(yp *y)
{
    walk w;
    int rc, seen = 0;
    if (y->ev.type != YAML_MAPPING_START_EVENT && y->ev.type != YAML_SEQUENCE_START_EVENT)
        return fail_ev(y, &y->ev, "not a yeast-GEM (COBRApy YAML) model: expected a mapping "
                       "with metabolites, reactions and genes");
    PL_TRY(walk_begin(y, &w, "the model"));
    while ((rc = walk_key(y, &w)) == 1) {
        int which = key_is(y, "reactions") ? 1 : key_is(y, "metabolites") ? 2
                    : key_is(y, "genes")   ? 3 : 0;
        PL_TRY(next(y));
        if (which == 0) {
            PL_TRY(skip(y));
        } else {
            PL_TRY(want_seq(y, which == 1 ? "reactions" : which == 2 ? "metabolites" : "genes"));
            while ((rc = seq_item(y)) == 1)
                PL_TRY(which == 1 ? reaction(y) : listed(y, which == 3));
            PL_TRY(rc);
            seen |= which == 1;
        }
        PL_TRY(walk_value_done(y, &w));
    }
    PL_TRY(rc);
    if (!seen)
        return pl__err(y->err, PL_EPARSE, "%s:1:1: not a yeast-GEM (COBRApy YAML) model: no "
                       "'reactions'", y->path);
    return 0;
}

static int document(yp *y)
{
    PL_TRY(next(y)); /* stream start */
    PL_TRY(next(y));
    if (y->ev.type == YAML_STREAM_END_EVENT)
        return pl__err(y->err, PL_EPARSE, "%s:1:1: empty file, not a yeast-GEM model", y->path);
    PL_TRY(next(y)); /* the root node */
    PL_TRY(model(y));
    PL_TRY(next(y)); /* document end */
    PL_TRY(next(y));
    if (y->ev.type != YAML_STREAM_END_EVENT)
        return fail_ev(y, &y->ev, "a second YAML document after the model");
    return pl__metab_done(y->m, y->path, y->err);
}

int pl__metab_read_yeastgem(pl_metab *m, const char *path, pl_err *err)
{
    yp y = {.path = path, .err = err, .m = m};
    PL_TRY(pl__src_open(path, &y.src, err));
    if (!yaml_parser_initialize(&y.p)) {
        pl__src_close(y.src);
        return pl__err(err, -ENOMEM, "%s: out of memory", path);
    }
    yaml_parser_set_input(&y.p, feed, &y);
    int rc = document(&y);
    if (y.have)
        yaml_event_delete(&y.ev);
    yaml_parser_delete(&y.p);
    pl__src_close(y.src);
    return rc;
}
