/* A dataset recipe into a database (recipe_build.h). */
#include "recipe_build.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preprocess/build_input.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/vec.h"

/* The edges of one source, as the builder takes them. */
typedef struct edges {
    int32_t *src, *dst;
    uint64_t n, cap;
} edges;

static int push(void *ctx, uint32_t src, uint32_t dst, double score, pl_err *err)
{
    (void)score;
    edges *e = ctx;
    uint64_t c = e->cap;
    if (pl__grow(&e->src, &c, e->n + 1, 4) < 0 || pl__grow(&e->dst, &e->cap, e->n + 1, 4) < 0)
        return pl__err(err, -ENOMEM, "out of memory");
    e->src[e->n] = (int32_t)src;
    e->dst[e->n++] = (int32_t)dst;
    return 0;
}

/* A growing text. */
typedef struct text {
    char *s;
    uint64_t n, cap;
} text;

static int add(text *t, pl_err *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int add(text *t, pl_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0 || pl__grow(&t->s, &t->cap, t->n + (uint64_t)len + 1, 1) < 0)
        return pl__err(err, -ENOMEM, "out of memory");
    va_start(ap, fmt);
    vsnprintf(t->s + t->n, (size_t)len + 1, fmt, ap);
    va_end(ap);
    t->n += (uint64_t)len;
    return 0;
}

/* One input line: size, XXH64 and path (each file once); a file that
 * cannot be read fails naming the recipe line that names it (when known). */
static int add_input(text *t, const pl_recipe *r, uint64_t line, const char *path, pl_err *err)
{
    if (!path)
        return 0;
    size_t plen = strlen(path);
    for (const char *p = t->s; p && (p = strstr(p, path)); p++)
        if (p > t->s && p[-1] == '\t' && p[plen] == '\n')
            return 0;
    uint64_t size, sum;
    pl_err e = {0};
    int rc = pl__file_xxh64(path, &size, &sum, &e);
    if (rc < 0 && line)
        return pl__err(err, rc, "%s:%llu: %s", r->path, (unsigned long long)line, e.msg);
    if (rc < 0)
        return pl__err(err, rc, "%s: %s", r->path, e.msg);
    return add(t, err, "%llu\t%016llx\t%s\n", (unsigned long long)size,
               (unsigned long long)sum, path);
}

/* Every file the recipe names, in recipe order. */
static int digest_inputs(const pl_recipe *r, text *t, pl_err *err)
{
    PL_TRY(add_input(t, r, 0, r->genes, err));
    for (uint32_t i = 0; i < r->n_aliases; i++)
        PL_TRY(add_input(t, r, 0, r->aliases[i].path, err));
    for (uint32_t i = 0; i < r->n_sources; i++) {
        PL_TRY(add_input(t, r, r->sources[i].line, r->sources[i].file, err));
        PL_TRY(add_input(t, r, r->sources[i].line, r->sources[i].opts.gene_list, err));
    }
    const pl_recipe_metabolism *m = &r->metabolism;
    const char *more[] = {m->reactions, m->gpr, m->rules, m->rmr, r->samples.file,
                          r->samples.payload};
    for (size_t i = 0; i < sizeof more / sizeof *more; i++)
        PL_TRY(add_input(t, r, i < 4 ? m->line : r->samples.line, more[i], err));
    return 0;
}

/* The recipe file's bytes. */
static int read_recipe(const char *path, char **out, size_t *len, pl_err *err)
{
    FILE *f = fopen(path, "rb");
    PL_FAIL_IF(!f, err, -errno, "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    uint64_t n = 0, cap = 0;
    int rc = 0;
    for (;;) {
        if (pl__grow(&buf, &cap, n + 65536, 1) < 0) {
            rc = pl__err(err, -ENOMEM, "out of memory");
            break;
        }
        size_t got = fread(buf + n, 1, 65536, f);
        n += got;
        if (got < 65536) {
            if (ferror(f))
                rc = pl__err(err, -EIO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = n;
    return 0;
}

int pl__recipe_build(const pl_recipe *r, const pl_build_opts *o, int strict,
                     pl_imp_result *res, pl_build_stats *st, pl_err *err)
{
    memset(res, 0, r->n_sources * sizeof *res);
    pl_alias_stats ast[PL_RECIPE_MAX_ALIASES];
    pl_names *nm = NULL;
    edges *e = calloc(r->n_sources ? r->n_sources : 1, sizeof *e);
    pl__build_edges *be = calloc(r->n_sources ? r->n_sources : 1, sizeof *be);
    const char **genes = NULL;
    text inputs = {0}, sources = {0};
    char *recipe = NULL;
    size_t recipe_len = 0;
    int rc = e && be ? 0 : pl__err(err, -ENOMEM, "out of memory");
    if (rc == 0)
        rc = read_recipe(r->path, &recipe, &recipe_len, err);
    if (rc == 0)
        rc = digest_inputs(r, &inputs, err);
    if (rc == 0)
        rc = pl__recipe_names(r, &nm, ast, err);
    for (uint32_t i = 0; rc == 0 && i < r->n_sources; i++) {
        const pl_imp_source *s = &r->sources[i];
        rc = pl__imp_run(nm, s, strict, push, &e[i], &res[i], err);
        be[i] = (pl__build_edges){s->name, e[i].src, e[i].dst, e[i].n};
        if (rc == 0)
            rc = add(&sources, err, "%s format=%s rows=%llu filtered=%llu unresolved=%llu "
                     "duplicates=%llu kept=%llu pairs=%s file=%s\n", s->name, s->fmt->name,
                     (unsigned long long)res[i].read.rows,
                     (unsigned long long)res[i].read.filtered,
                     (unsigned long long)res[i].unresolved,
                     (unsigned long long)res[i].duplicates, (unsigned long long)res[i].kept,
                     s->undirected ? "unordered" : "as_listed", s->file);
    }
    uint32_t ng = rc == 0 ? pl__names_count(nm) : 0;
    if (rc == 0 && !(genes = malloc((ng ? ng : 1) * sizeof *genes)))
        rc = pl__err(err, -ENOMEM, "out of memory");
    for (uint32_t g = 0; rc == 0 && g < ng; g++)
        genes[g] = pl__names_gene(nm, g);
    if (rc == 0) {
        const pl_recipe_metabolism *m = &r->metabolism;
        pl_build_opts bo = {.out = o->out, .progress = o->progress, .params = o->params,
                            .drop_unknown_genes = !strict, .reactions = m->reactions,
                            .gpr = m->gpr, .rules = m->rules, .rmr = m->rmr,
                            .reaction_rule = m->reaction_rule, .samples = r->samples.file,
                            .payload = r->samples.payload};
        pl__build_input in = {.genes = genes, .n_genes = ng, .edges = be,
                              .n_types = r->n_sources, .recipe = recipe,
                              .recipe_len = recipe_len, .inputs = inputs.s ? inputs.s : "",
                              .sources = sources.s ? sources.s : ""};
        rc = pl__build_run(&bo, &in, st, err);
    }
    for (uint32_t i = 0; e && i < r->n_sources; i++) {
        free(e[i].src);
        free(e[i].dst);
    }
    free(e);
    free(be);
    free(genes);
    free(inputs.s);
    free(sources.s);
    free(recipe);
    pl__names_free(nm);
    return rc;
}
