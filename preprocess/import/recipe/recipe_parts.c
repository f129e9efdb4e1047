/* The parts of a recipe besides the genes and edges: metabolism, samples,
 * ontology (recipe_yaml.h), and the readers of their files. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preprocess/ontology/store.h"
#include "recipe_yaml.h"
#include "src/core/error.h"

/* ---------------------------------------------------------- metabolism */

static int metabolism_pair(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    (void)ctx;
    pl_recipe_metabolism *m = &l->r->metabolism;
    if (!strcmp(key, "format"))
        return 0; /* read first, by pl__ry_metabolism() */
    if (!strcmp(key, "reaction_rule")) { /* every format */
        PL_TRY(pl__ry_scalar(l, v, key));
        if (strcmp(pl__ry_str(v), "any") && strcmp(pl__ry_str(v), "gpr"))
            return pl__ry_fail(l, v, "'reaction_rule' is any or gpr, not '%s'", pl__ry_str(v));
        m->reaction_rule = !strcmp(pl__ry_str(v), "gpr") ? PL_REACTION_GPR : PL_REACTION_ANY;
        return 0;
    }
    if (m->model != PL_METAB_NONE) {
        if (!strcmp(key, "file"))
            return pl__ry_path(l, v, key, &m->file);
        return pl__ry_fail(l, k, "unknown key '%s' in 'metabolism' of format '%s' (format, file, "
                           "reaction_rule)", key, m->format);
    }
    static const pl__ry_field keys[] = {
        {"reactions", PL_RY_PATH, offsetof(pl_recipe_metabolism, reactions), 0},
        {"gpr", PL_RY_PATH, offsetof(pl_recipe_metabolism, gpr), 0},
        {"rules", PL_RY_PATH, offsetof(pl_recipe_metabolism, rules), 0},
        {"rmr", PL_RY_PATH, offsetof(pl_recipe_metabolism, rmr), 0}};
    int rc = pl__ry_key(l, keys, 4, key, v, m);
    if (rc <= 0)
        return rc;
    return pl__ry_fail(l, k, "unknown key '%s' in 'metabolism' (format, reactions, gpr, rules, "
                       "rmr, reaction_rule)", key);
}

/* 'metabolism': pertload's text files (tsv) or a model file (yeast-gem,
 * sbml). */
int pl__ry_metabolism(pl__ry *l, yaml_node_t *v)
{
    pl_recipe_metabolism *m = &l->r->metabolism;
    m->line = v->start_mark.line + 1;
    yaml_node_t *f;
    PL_TRY(pl__ry_format(l, v, "'metabolism'", "tsv, yeast-gem or sbml", &f));
    if (!strcmp(pl__ry_str(f), "tsv"))
        m->format = "tsv";
    else if (!strcmp(pl__ry_str(f), "yeast-gem"))
        m->format = "yeast-gem", m->model = PL_METAB_YEASTGEM;
    else if (!strcmp(pl__ry_str(f), "sbml"))
        m->format = "sbml", m->model = PL_METAB_SBML;
    else
        return pl__ry_fail(l, f, "unknown metabolism format '%s' (tsv, yeast-gem or sbml)",
                           pl__ry_str(f));
    PL_TRY(pl__ry_pairs(l, v, "'metabolism'", metabolism_pair, NULL));
    if (m->model != PL_METAB_NONE)
        return m->file ? 0 : pl__ry_fail(l, v, "'metabolism' without 'file'");
    if (!m->gpr && !m->rules && !m->rmr && !m->reactions)
        return pl__ry_fail(l, v, "'metabolism' names no file (reactions, gpr, rules, rmr)");
    if (m->gpr && m->rules)
        return pl__ry_fail(l, v, "'metabolism': give 'gpr' or 'rules' (the rules give the GPR "
                           "edges), not both");
    return 0;
}

/* ------------------------------------------------------------- samples */

static int samples_pair(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    (void)ctx;
    pl_recipe_samples *s = &l->r->samples;
    if (!strcmp(key, "format")) {
        s->format = "tsv"; /* the only value that leads here (pl__ry_samples) */
        return 0;
    }
    static const pl__ry_field keys[] = {
        {"file", PL_RY_PATH, offsetof(pl_recipe_samples, file), 0},
        {"payload", PL_RY_PATH, offsetof(pl_recipe_samples, payload), 0}};
    int rc = pl__ry_key(l, keys, 2, key, v, s);
    if (rc <= 0)
        return rc;
    return pl__ry_fail(l, k, "unknown key '%s' in 'samples' (format, file, payload)", key);
}

/* One column name (`column` NULL) or value of `set`: a string, not empty,
 * without a tab or a line break (names and values become category columns
 * and levels), refused at its own line and column. */
static int set_string(pl__ry *l, yaml_node_t *n, const char *column, const char **out)
{
    PL_TRY(pl__ry_scalar(l, n, "set"));
    if (n->data.scalar.length == 0)
        return column ? pl__ry_fail(l, n, "'set' value of '%s' is empty", column)
                      : pl__ry_fail(l, n, "'set' has an empty column name");
    if (strpbrk(pl__ry_str(n), "\t\n\r"))
        return column ? pl__ry_fail(l, n, "'set' value of '%s' holds a tab or a line break",
                                    column)
                      : pl__ry_fail(l, n, "'set' column name holds a tab or a line break");
    return pl__ry_string(l, n, "set", out);
}

static int sample_pair(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    pl_smp_spec *s = ctx;
    if (!strcmp(key, "file"))
        return pl__ry_path(l, v, key, (char **)&s->file);
    if (!strcmp(key, "format"))
        return 0; /* read first, by samples_one() */
    if (!strcmp(key, "set")) {
        if (v->type != YAML_MAPPING_NODE)
            return pl__ry_fail(l, v, "'set' must be a mapping {COLUMN: VALUE}");
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top;
             p++) {
            if (s->n_set == PL_IMP_MAX_LIST)
                return pl__ry_fail(l, v, "more than %d columns in 'set'", PL_IMP_MAX_LIST);
            PL_TRY(set_string(l, pl__ry_node(l, p->key), NULL, &s->set_names[s->n_set]));
            PL_TRY(set_string(l, pl__ry_node(l, p->value), s->set_names[s->n_set],
                              &s->set_values[s->n_set]));
            s->n_set++;
        }
        return 0;
    }
    int rc = pl__ry_resolution(l, key, v, &s->allow_empty, &s->min_resolved);
    if (rc <= 0)
        return rc;
    if (s->format == PL_SMP_SGA)
        return pl__ry_fail(l, k, "key '%s' does not apply to format 'sga' (format, file, set, "
                           "min_resolved, allow_empty)", key);
#define COL(key, kind, field, n) {key, PL_RY_##kind, offsetof(pl_smp_spec, field), n}
    static const pl__ry_field keys[] = {
        COL("sep", SEP, sep, 0), COL("header", BOOL, header, 0),
        COL("comment", STRING, comment, 0), COL("genes", STRING, genes, 0),
        COL("id", STRING, id, 0), COL("gene_sep", SEP, gene_sep, 0),
        COL("gene_columns", COLUMNS, gene_columns, offsetof(pl_smp_spec, n_gene_columns)),
        COL("labels", COLUMNS, labels, offsetof(pl_smp_spec, n_labels)),
        COL("categories", COLUMNS, categories, offsetof(pl_smp_spec, n_categories))};
#undef COL
    rc = pl__ry_key(l, keys, sizeof keys / sizeof *keys, key, v, s);
    if (rc <= 0)
        return rc;
    return pl__ry_fail(l, k, "unknown key '%s' in a sample table (format, file, sep, header, "
                       "comment, genes, gene_sep, gene_columns, id, labels, categories, set, "
                       "min_resolved, allow_empty)", key);
}

/* format dcell_samples: its layout is fixed; file and set only. */
static int dcell_sample_pair(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v,
                             void *ctx)
{
    if (strcmp(key, "file") && strcmp(key, "format") && strcmp(key, "set") &&
        strcmp(key, "min_resolved") && strcmp(key, "allow_empty"))
        return pl__ry_fail(l, k, "key '%s' does not apply to format 'dcell_samples' (format, "
                           "file, set, min_resolved, allow_empty)", key);
    return sample_pair(l, key, k, v, ctx);
}

static int samples_one(pl__ry *l, yaml_node_t *m)
{
    pl_recipe *r = l->r;
    if (m->type != YAML_MAPPING_NODE)
        return pl__ry_fail(l, m, "a sample table must be a mapping of keys to values");
    if (r->n_tables == PL_RECIPE_MAX_SAMPLES)
        return pl__ry_fail(l, m, "more than %d sample tables", PL_RECIPE_MAX_SAMPLES);
    pl_smp_spec *s = &r->tables[r->n_tables++];
    pl__smp_spec_init(s);
    yaml_node_t *fmt;
    PL_TRY(pl__ry_format(l, m, "a sample table", "table, sga or dcell_samples", &fmt));
    if (!strcmp(pl__ry_str(fmt), "sga")) {
        s->format = PL_SMP_SGA;
    } else if (!strcmp(pl__ry_str(fmt), "dcell_samples")) {
        /* DCell's data files as published: `2 <gene> <gene> <score>`,
         * space-separated, no header */
        s->sep = ' ';
        s->header = 0;
        s->gene_columns[0] = "2", s->gene_columns[1] = "3", s->n_gene_columns = 2;
        s->labels[0] = "4", s->n_labels = 1;
    } else if (strcmp(pl__ry_str(fmt), "table")) {
        return pl__ry_fail(l, fmt, "unknown sample format '%s' (table, sga or dcell_samples)",
                           pl__ry_str(fmt));
    }
    PL_TRY(pl__ry_pairs(l, m, "a sample table", s->n_gene_columns ? dcell_sample_pair
                                                                   : sample_pair, s));
    if (!s->file)
        return pl__ry_fail(l, m, "a sample table without 'file'");
    return pl__smp_check(s, l->err) < 0 ? pl__ry_wrap(l, m, "sample table") : 0;
}

/* 'samples': pertload's samples TSV (format tsv), or one sample table or a
 * list of them (table, sga). */
int pl__ry_samples(pl__ry *l, yaml_node_t *v)
{
    pl_recipe *r = l->r;
    yaml_node_t *f = pl__ry_value(l, v, "format");
    if (f && f->type == YAML_SCALAR_NODE && !strcmp(pl__ry_str(f), "tsv")) {
        r->samples.line = v->start_mark.line + 1;
        PL_TRY(pl__ry_pairs(l, v, "'samples'", samples_pair, NULL));
        if (!r->samples.file)
            return pl__ry_fail(l, v, "'samples' needs 'format' and 'file'");
        return 0;
    }
    if (v->type != YAML_SEQUENCE_NODE)
        return samples_one(l, v);
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++)
        PL_TRY(samples_one(l, pl__ry_node(l, *i)));
    if (!r->n_tables)
        return pl__ry_fail(l, v, "'samples' is an empty list");
    return 0;
}

/* ------------------------------------------------------------ ontology */

static int ontology_pair(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    (void)ctx;
    pl_recipe_ontology *o = &l->r->ontology;
    if (!strcmp(key, "format"))
        return 0; /* read first, by pl__ry_ontology() */
    if (!strcmp(key, "file"))
        return pl__ry_path(l, v, key, &o->file);
    if (!strcmp(key, "min_term_genes")) {
        uint64_t n;
        PL_TRY(pl__ry_u64(l, v, key, &n));
        if (n > UINT32_MAX)
            return pl__ry_fail(l, v, "'min_term_genes' is larger than %u", UINT32_MAX);
        o->opts.min_term_genes = (uint32_t)n;
        return 0;
    }
    static const char *const obo_keys[] = {"annotations", "namespaces", "relations", "evidence",
                                           "exclude_evidence"};
    size_t i = 0;
    while (i < 5 && strcmp(key, obo_keys[i]))
        i++;
    if (i == 5)
        return pl__ry_fail(l, k, "unknown key '%s' in 'ontology' (format, file, annotations, "
                           "namespaces, relations, evidence, exclude_evidence, "
                           "min_term_genes)", key);
    if (strcmp(o->format, "obo"))
        return pl__ry_fail(l, k, "key '%s' does not apply to format '%s' (format, file, "
                           "min_term_genes)", key, o->format);
    if (i == 0)
        return pl__ry_path(l, v, key, &o->annotations);
    const char **list[] = {NULL, &o->opts.namespaces, &o->opts.relations, &o->opts.evidence,
                           &o->opts.exclude_evidence};
    return pl__ry_names(l, v, key, list[i]);
}

/* 'ontology': OBO with its GAF annotations, or the three-column file. */
int pl__ry_ontology(pl__ry *l, yaml_node_t *v)
{
    pl_recipe_ontology *o = &l->r->ontology;
    o->line = v->start_mark.line + 1;
    yaml_node_t *f;
    PL_TRY(pl__ry_format(l, v, "'ontology'", "obo or dcell", &f));
    if (!strcmp(pl__ry_str(f), "obo") || !strcmp(pl__ry_str(f), "dcell"))
        o->format = pl__ry_str(f)[0] == 'o' ? "obo" : "dcell";
    else
        return pl__ry_fail(l, f, "unknown ontology format '%s' (obo or dcell)", pl__ry_str(f));
    PL_TRY(pl__ry_pairs(l, v, "'ontology'", ontology_pair, NULL));
    if (!o->file)
        return pl__ry_fail(l, v, "'ontology' without 'file'");
    if (!strcmp(o->format, "obo") && !o->annotations)
        return pl__ry_fail(l, v, "'ontology' of format 'obo' without 'annotations' (a GAF "
                           "file)");
    if (o->opts.evidence && o->opts.exclude_evidence)
        return pl__ry_fail(l, v, "'ontology': give 'evidence' or 'exclude_evidence', not both");
    return 0;
}

static int64_t resolve_name(void *ctx, const char *s, size_t len)
{
    return pl__names_resolve(ctx, s, len);
}

int pl__recipe_metab(const pl_recipe *r, const pl_names *nm, int strict, pl_metab *m,
                     pl_err *err)
{
    PL_TRY(pl__metab_init(m, nm, strict, err));
    if (r->metabolism.model == PL_METAB_YEASTGEM)
        return pl__metab_read_yeastgem(m, r->metabolism.file, err);
    if (r->metabolism.model == PL_METAB_SBML)
        return pl__metab_read_sbml(m, r->metabolism.file, err);
    return 0;
}

int pl__recipe_samples(const pl_recipe *r, const pl_names *nm, int strict, pl_smp_emit emit,
                       void *ctx, pl_smp_result *res, pl_err *err)
{
    for (uint32_t i = 0; i < r->n_tables; i++)
        PL_TRY(pl__smp_read(&r->tables[i], nm, strict, emit, ctx, res, err));
    return 0;
}


int pl__recipe_ontology(const pl_recipe *r, const pl_names *nm, int strict, pl_onto *out,
                        pl_onto_stats *st, pl_err *err)
{
    const pl_recipe_ontology *o = &r->ontology;
    int obo = !strcmp(o->format, "obo");
    pl_onto_input in = {.obo = obo ? o->file : NULL, .gaf = o->annotations,
                        .dcell = obo ? NULL : o->file, .opts = o->opts,
                        .resolve = resolve_name, .ctx = (void *)nm};
    in.opts.strict = strict;
    return pl__onto_read(&in, pl__names_count(nm), out, st, err);
}
