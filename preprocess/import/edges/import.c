/* One edge source through reader, names and pair policy (import.h). */
#include "import.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

typedef struct run {
    const pl_names *nm;
    const pl_imp_source *s;
    int strict;
    pl_imp_out out;
    void *ctx;
    pl_imp_result *r;
    pl_pairset pairs;
} run;

static int resolve(run *u, const pl__field *f, const pl_src *src, int64_t *g, pl_err *err)
{
    *g = pl__names_resolve(u->nm, f->s, f->len);
    if (*g >= 0)
        return 0;
    if (u->strict)
        return pl__src_fail(src, f->col, err, "unresolved gene name '%.*s' (strict mode)",
                            (int)(f->len > 80 ? 80 : f->len), f->s);
    if (pl__unres_add(&u->r->names, f->s, f->len, pl__src_lineno(src)) < 0)
        return pl__err(err, -ENOMEM, "%s: out of memory", pl__src_path(src));
    return 0;
}

static int on_edge(void *ctx, const pl_imp_edge *e, const pl_src *src, pl_err *err)
{
    run *u = ctx;
    int64_t a, b;
    PL_TRY(resolve(u, &e->src, src, &a, err));
    PL_TRY(resolve(u, &e->dst, src, &b, err));
    if (a < 0 || b < 0) {
        u->r->unresolved++;
        return 0;
    }
    if (u->s->undirected) {
        int r = pl__pairset_add(&u->pairs, (uint32_t)a, (uint32_t)b);
        PL_FAIL_IF(r < 0, err, -ENOMEM, "%s: out of memory", pl__src_path(src));
        if (r == 0) {
            u->r->duplicates++;
            return 0;
        }
    }
    u->r->kept++;
    if (u->out)
        return u->out(u->ctx, (uint32_t)a, (uint32_t)b, e->score, err);
    return 0;
}

int pl__imp_run(const pl_names *nm, const pl_imp_source *s, int strict, pl_imp_out out,
                void *ctx, pl_imp_result *r, pl_err *err)
{
    memset(r, 0, sizeof *r);
    run u = {.nm = nm, .s = s, .strict = strict, .out = out, .ctx = ctx, .r = r};
    int rc = pl__imp_read_file(s->fmt, s->file, &s->opts, on_edge, &u, &r->read, err);
    pl__pairset_free(&u.pairs);
    return rc;
}

/* One pass for several sources: run j takes the edges of mode j. */
typedef struct shared {
    run *u;
    uint64_t *emitted;
} shared;

static int on_shared_edge(void *ctx, const pl_imp_edge *e, const pl_src *src, pl_err *err)
{
    shared *g = ctx;
    g->emitted[e->mode]++;
    return on_edge(&g->u[e->mode], e, src, err);
}

int pl__imp_run_shared(const pl_names *nm, const pl_imp_source *s, uint32_t k, int strict,
                       pl_imp_out out, void *const *ctxs, pl_imp_result *r, pl_err *err)
{
    memset(r, 0, k * sizeof *r);
    shared g = {calloc(k ? k : 1, sizeof *g.u), calloc(k ? k : 1, sizeof *g.emitted)};
    pl_imp_opts o = s[0].opts;
    int rc = g.u && g.emitted ? 0 : pl__err(err, -ENOMEM, "%s: out of memory", s[0].file);
    for (uint32_t j = 0; rc == 0 && j < k; j++) {
        g.u[j] = (run){.nm = nm, .s = &s[j], .strict = strict, .out = out,
                       .ctx = ctxs ? ctxs[j] : NULL, .r = &r[j]};
        o.modes[j] = s[j].opts.modes[0];
    }
    o.n_modes = k;
    pl_imp_stats st;
    if (rc == 0)
        rc = pl__imp_read_file(s[0].fmt, s[0].file, &o, on_shared_edge, &g, &st, err);
    for (uint32_t j = 0; g.u && j < k; j++) {
        if (rc == 0)
            r[j].read = (pl_imp_stats){.rows = st.rows, .filtered = st.rows - g.emitted[j],
                                       .emitted = g.emitted[j], .bytes = st.bytes};
        pl__pairset_free(&g.u[j].pairs);
    }
    free(g.u);
    free(g.emitted);
    return rc;
}
