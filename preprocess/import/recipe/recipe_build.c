/* A dataset recipe into a database (recipe_build.h). */
#include "recipe_build.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "preprocess/build_input.h"
#include "preprocess/import/samples/provider.h"
#include "preprocess/ontology/store.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/vec.h"
#include "preprocess/import/source/source.h"

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
 * cannot be read fails naming the recipe line that names it (when known).
 * The digest is that of the bytes the line source read (source.h: links,
 * FIFOs and standard input as read, once); a file not read that way yet (a
 * sample table, read during the build) is read here, through its links.
 * With `t` NULL, only check that the file is there (before any is read). */
static int add_input(text *t, const pl_recipe *r, uint64_t line, const char *path, pl_err *err)
{
    if (!path)
        return 0;
    size_t plen = strlen(path);
    for (const char *p = t ? t->s : NULL; p && (p = strstr(p, path)); p++)
        if (p > t->s && p[-1] == '\t' && p[plen] == '\n')
            return 0;
    uint64_t size, sum;
    pl_err e = {0};
    int rc = 0;
    struct stat st;
    if (!t) {
        if (strcmp(path, "-") && stat(path, &st) < 0)
            rc = pl__err(&e, -errno, "%s: %s", path, strerror(errno));
        else if (strcmp(path, "-") && S_ISDIR(st.st_mode))
            rc = pl__err(&e, -EISDIR, "%s: %s", path, strerror(EISDIR));
    } else if (!pl__src_digest(path, &size, &sum)) {
        char *real = strcmp(path, "-") ? realpath(path, NULL) : NULL;
        rc = !strcmp(path, "-") ? pl__err(&e, PL_EUSAGE, "standard input is read during the "
                                          "build, after the inputs are digested: give a file")
             : real ? pl__file_xxh64(real, &size, &sum, &e)
                    : pl__err(&e, -errno, "%s: %s", path, strerror(errno));
        free(real);
    }
    if (rc < 0 && line)
        return pl__err(err, rc, "%s:%llu: %s", r->path, (unsigned long long)line, e.msg);
    if (rc < 0)
        return pl__err(err, rc, "%s: %s", r->path, e.msg);
    if (!t)
        return 0;
    return add(t, err, "%llu\t%016llx\t%s\n", (unsigned long long)size,
               (unsigned long long)sum, path);
}

/* Every file the recipe names, in recipe order (t NULL: only checked). */
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
    PL_TRY(add_input(t, r, m->line, m->file, err));
    for (uint32_t i = 0; i < r->n_tables; i++)
        PL_TRY(add_input(t, r, 0, r->tables[i].file, err));
    PL_TRY(add_input(t, r, r->ontology.line, r->ontology.file, err));
    for (uint32_t i = 0; i < r->n_features; i++)
        PL_TRY(add_input(t, r, r->features_line, r->feature_files[i], err));
    return add_input(t, r, r->ontology.line, r->ontology.annotations, err);
}

/* ------------------------------------- model files and sample tables */

/* The recipe's model file (yeast-gem, sbml) as the builder takes it. */
static int model_part(const pl_recipe *r, const pl_names *nm, int strict, pl_metab *m,
                      pl__build_metabolism *bm, text *sources, pl_err *err)
{
    PL_TRY(pl__recipe_metab(r, nm, strict, m, err));
    *bm = (pl__build_metabolism){
        .reactions = (const char *const *)m->reactions.names,
        .n_reactions = m->reactions.n,
        .metabolites = (const char *const *)m->metabolites.names,
        .n_metabolites = m->metabolites.n,
        .gpr_gene = m->gpr_gene, .gpr_rxn = m->gpr_rxn, .n_gpr = m->n_gpr,
        .rmr_rxn = m->rmr_rxn, .rmr_met = m->rmr_met, .rmr_stoich = m->rmr_stoich,
        .n_rmr = m->n_rmr, .rules = m->n_rules ? &m->rules : NULL};
    return add(sources, err, "metabolism format=%s reactions=%u metabolites=%u rmr=%llu "
               "rules=%llu gpr=%llu unresolved=%llu file=%s\n",
               r->metabolism.format, m->reactions.n,
               m->metabolites.n, (unsigned long long)m->n_rmr, (unsigned long long)m->n_rules,
               (unsigned long long)m->n_gpr, (unsigned long long)m->unresolved,
               r->metabolism.file);
}

/* The recipe's ontology, built for the builder; its counts as a line of
 * the sources text (a DCell topology's repeated children and count
 * mismatches when there are any, also on stderr unless `quiet`). */
static int ontology_part(const pl_recipe *r, const pl_names *nm, int strict, int quiet,
                         pl_onto *on, uint64_t *unknown, text *sources, pl_err *err)
{
    pl_onto_stats st = {0};
    int rc = pl__recipe_ontology(r, nm, strict, on, &st, err);
    *unknown = st.unknown_genes.total;
    const pl_recipe_ontology *o = &r->ontology;
    if (rc == 0 && !quiet)
        pl__onto_warn(&st, o->file);
    char more[96] = "";
    if (st.repeated_children || st.count_mismatches)
        snprintf(more, sizeof more, " repeated_children=%llu count_mismatches=%llu",
                 (unsigned long long)st.repeated_children,
                 (unsigned long long)st.count_mismatches);
    if (rc == 0)
        rc = add(sources, err, "ontology format=%s terms=%u annotations=%llu strata=%u "
                 "rows=%llu unresolved=%llu file=%s%s%s%s\n", o->format, on->n_terms,
                 (unsigned long long)on->n_ann, on->n_strata, (unsigned long long)st.rows,
                 (unsigned long long)st.unknown_genes.total, o->file,
                 o->annotations ? " annotation_file=" : "", o->annotations ? o->annotations : "",
                 more);
    pl__onto_stats_free(&st);
    return rc;
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
    pl_metab mm = {0};
    pl__build_metabolism bm;
    pl_smp_provider tb = {0};
    pl__build_samples bs;
    pl_onto on = {0};
    uint64_t onto_unknown = 0;
    int rc = e && be ? 0 : pl__err(err, -ENOMEM, "out of memory");
    if (rc == 0)
        rc = digest_inputs(r, NULL, err); /* a missing file named with its recipe line */
    if (rc == 0)
        rc = pl__recipe_names(r, &nm, ast, err);
    uint32_t read_to = 0; /* the sources below it are read (string_actions types: together) */
    for (uint32_t i = 0; rc == 0 && i < r->n_sources; i++) {
        const pl_imp_source *s = &r->sources[i];
        if (i >= read_to && s->shared > 1) {
            void *ctxs[PL_MAX_TYPES];
            for (uint32_t j = 0; j < s->shared; j++)
                ctxs[j] = &e[i + j];
            rc = pl__imp_run_shared(nm, s, s->shared, strict, push, ctxs, &res[i], err);
            read_to = i + s->shared;
        } else if (i >= read_to) {
            rc = pl__imp_run(nm, s, strict, push, &e[i], &res[i], err);
            read_to = i + 1;
        }
        be[i] = (pl__build_edges){s->name, e[i].src, e[i].dst, e[i].n};
        if (rc == 0)
            rc = pl__imp_check_resolved(s, &res[i], err);
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
    int model = r->metabolism.model != PL_METAB_NONE;
    int rule = o->reaction_rule != PL_REACTION_DEFAULT ? o->reaction_rule
                                                       : r->metabolism.reaction_rule;
    if (rc == 0 && model)
        rc = model_part(r, nm, strict, &mm, &bm, &sources, err);
    if (rc == 0 && model && rule == PL_REACTION_GPR && mm.n_rules == 0)
        rc = pl__err(err, PL_EPARSE, "%s:%llu: reaction rule gpr: %s has no gene-reaction "
                     "rule", r->path, (unsigned long long)r->metabolism.line,
                     r->metabolism.file);
    if (rc == 0 && r->ontology.format)
        rc = ontology_part(r, nm, strict, o->progress == 0, &on, &onto_unknown, &sources, err);
    /* After the inputs read above, before the sample tables the build reads. */
    if (rc == 0)
        rc = digest_inputs(r, &inputs, err);
    if (rc == 0 && r->n_tables)
        rc = pl__smp_provider_open(&tb, r->tables, r->n_tables, nm, strict, &bs, err);
    if (rc == 0) {
        const pl_recipe_metabolism *m = &r->metabolism;
        pl_build_opts bo = {.out = o->out, .progress = o->progress, .params = o->params,
                            .drop_unknown_genes = !strict, .reactions = m->reactions,
                            .gpr = m->gpr, .rules = m->rules, .rmr = m->rmr,
                            .reaction_rule = rule, .samples = r->samples.file,
                            .payload = r->samples.payload,
                            .n_node_features = r->n_features,
                            .feature_types = r->feature_types,
                            .feature_files = (const char *const *)r->feature_files};
        pl__build_input in = {.genes = genes, .n_genes = ng, .edges = be,
                              .n_types = r->n_sources, .recipe = r->text,
                              .recipe_len = r->text_len, .inputs = inputs.s ? inputs.s : "",
                              .sources = sources.s ? sources.s : "",
                              .metabolism = model ? &bm : NULL,
                              .samples = r->n_tables ? &bs : NULL,
                              .ontology = r->ontology.format ? &on : NULL,
                              .ontology_unknown = onto_unknown};
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
    pl__metab_free(&mm);
    pl__onto_free(&on);
    pl__smp_provider_close(&tb);
    pl__names_free(nm);
    return rc;
}
