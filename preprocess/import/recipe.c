/* Dataset recipes (recipe.h), read with libyaml's document loader: the node
 * tree keeps each node's position, so every error names recipe:line:col. */
#include "recipe.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "src/core/error.h"
#include "src/core/vec.h"

typedef struct ld {
    pl_recipe *r;
    yaml_document_t doc;
    const char *base; /* folder of relative paths */
    pl_err *err;
} ld;

static int fail_at(ld *l, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(ld *l, const yaml_node_t *n, const char *fmt, ...)
{
    char reason[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return pl__err(l->err, PL_EPARSE, "%s:%zu:%zu: %s", l->r->path, n->start_mark.line + 1,
                   n->start_mark.column + 1, reason);
}

static yaml_node_t *node(ld *l, int i) { return yaml_document_get_node(&l->doc, i); }

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

/* Keep `s` (malloc'd) until pl__recipe_free(). */
static char *own(ld *l, char *s)
{
    pl_recipe *r = l->r;
    if (!s || pl__grow(&r->owned, &r->cap_owned, r->n_owned + 1, sizeof *r->owned) < 0) {
        free(s);
        pl__err(l->err, -ENOMEM, "%s: out of memory", r->path);
        return NULL;
    }
    return r->owned[r->n_owned++] = s;
}

static int want_scalar(ld *l, const yaml_node_t *n, const char *key)
{
    if (n->type != YAML_SCALAR_NODE)
        return fail_at(l, n, "'%s' must be a single value", key);
    return 0;
}

static int get_string(ld *l, const yaml_node_t *n, const char *key, const char **out)
{
    PL_TRY(want_scalar(l, n, key));
    if (n->data.scalar.length == 0)
        return fail_at(l, n, "'%s' is empty", key);
    if (strlen(scalar(n)) != n->data.scalar.length)
        return fail_at(l, n, "'%s' holds a NUL byte", key);
    *out = own(l, strdup(scalar(n)));
    return *out ? 0 : -ENOMEM;
}

static int get_path(ld *l, const yaml_node_t *n, const char *key, char **out)
{
    const char *s;
    PL_TRY(get_string(l, n, key, &s));
    if (s[0] == '/' || !strcmp(s, "-")) {
        *out = (char *)s;
        return 0;
    }
    size_t len = strlen(l->base) + strlen(s) + 2;
    char *p = malloc(len);
    if (p)
        snprintf(p, len, "%s/%s", l->base, s);
    *out = own(l, p);
    return *out ? 0 : -ENOMEM;
}

static int get_bool(ld *l, const yaml_node_t *n, const char *key, int *out)
{
    PL_TRY(want_scalar(l, n, key));
    const char *s = scalar(n);
    if (!strcmp(s, "true") || !strcmp(s, "yes"))
        *out = 1;
    else if (!strcmp(s, "false") || !strcmp(s, "no"))
        *out = 0;
    else
        return fail_at(l, n, "'%s' must be true or false, not '%s'", key, s);
    return 0;
}

static int get_double(ld *l, const yaml_node_t *n, const char *key, double *out)
{
    PL_TRY(want_scalar(l, n, key));
    char *end;
    errno = 0;
    *out = strtod(scalar(n), &end);
    if (!scalar(n)[0] || *end || errno || !isfinite(*out))
        return fail_at(l, n, "'%s' must be a number, not '%s'", key, scalar(n));
    return 0;
}

static int get_u64(ld *l, const yaml_node_t *n, const char *key, uint64_t *out)
{
    PL_TRY(want_scalar(l, n, key));
    const char *s = scalar(n);
    char *end;
    errno = 0;
    *out = strtoull(s, &end, 10);
    if (!(s[0] >= '0' && s[0] <= '9') || *end || errno)
        return fail_at(l, n, "'%s' must be a non-negative integer, not '%s'", key, s);
    return 0;
}

static int get_sep(ld *l, const yaml_node_t *n, const char *key, char *out)
{
    PL_TRY(want_scalar(l, n, key));
    const char *s = scalar(n);
    if (!strcmp(s, "tab") || !strcmp(s, "\t"))
        *out = '\t';
    else if (!strcmp(s, "space") || !strcmp(s, " "))
        *out = ' ';
    else if (n->data.scalar.length == 1 && s[0] != '\n' && s[0] != '\r')
        *out = s[0];
    else
        return fail_at(l, n, "'%s' must be one character, \"tab\" or \"space\"", key);
    return 0;
}

/* Column: a 1-based number or (for delim with a header) a name. */
static int get_column(ld *l, const yaml_node_t *n, const char *key, const char **out)
{
    return get_string(l, n, key, out);
}

/* Walk a mapping, checking that no key repeats; `fn` handles each pair. */
typedef int (*pair_fn)(ld *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx);

static int each_pair(ld *l, yaml_node_t *m, const char *what, pair_fn fn, void *ctx)
{
    if (m->type != YAML_MAPPING_NODE)
        return fail_at(l, m, "%s must be a mapping of keys to values", what);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(l, p->key), *v = node(l, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return fail_at(l, k, "a key of %s is not a plain name", what);
        for (yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *k2 = node(l, q->key);
            if (k2->type == YAML_SCALAR_NODE && !strcmp(scalar(k2), scalar(k)))
                return fail_at(l, k, "key '%s' given twice in %s (first on line %zu)",
                               scalar(k), what, k2->start_mark.line + 1);
        }
        PL_TRY(fn(l, scalar(k), k, v, ctx));
    }
    return 0;
}

/* ------------------------------------------------------------- aliases */

static int alias_pair(ld *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    pl_alias_spec *a = ctx;
    uint64_t c;
    if (!strcmp(key, "file"))
        return get_path(l, v, key, (char **)&a->path);
    if (!strcmp(key, "format")) {
        PL_TRY(want_scalar(l, v, key));
        if (!strcmp(scalar(v), "table"))
            a->kind = PL_ALIAS_TABLE;
        else if (!strcmp(scalar(v), "sgd_features"))
            a->kind = PL_ALIAS_SGD_FEATURES;
        else
            return fail_at(l, v, "unknown alias table format '%s' (table or sgd_features)",
                           scalar(v));
        return 0;
    }
    if (!strcmp(key, "header"))
        return get_bool(l, v, key, &a->header);
    if (!strcmp(key, "sep"))
        return get_sep(l, v, key, &a->sep);
    if (!strcmp(key, "gene_column") || !strcmp(key, "alias_column")) {
        PL_TRY(get_u64(l, v, key, &c));
        if (c < 1 || c > 64)
            return fail_at(l, v, "'%s' must be a column number 1..64", key);
        *(key[0] == 'g' ? &a->gene_col : &a->alias_col) = (int)c;
        return 0;
    }
    return fail_at(l, k, "unknown key '%s' in an alias table (file, format, header, sep, "
                   "gene_column, alias_column)", key);
}

static int genes_pair(ld *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    (void)ctx;
    pl_recipe *r = l->r;
    if (!strcmp(key, "file"))
        return get_path(l, v, key, &r->genes);
    if (!strcmp(key, "header"))
        return get_bool(l, v, key, &r->genes_header);
    if (!strcmp(key, "aliases")) {
        if (v->type != YAML_SEQUENCE_NODE)
            return fail_at(l, v, "'aliases' must be a list of alias tables");
        for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
             i++) {
            yaml_node_t *m = node(l, *i);
            if (r->n_aliases == PL_RECIPE_MAX_ALIASES)
                return fail_at(l, m, "more than %d alias tables", PL_RECIPE_MAX_ALIASES);
            pl_alias_spec *a = &r->aliases[r->n_aliases++];
            a->gene_col = 1;
            a->alias_col = 2;
            PL_TRY(each_pair(l, m, "an alias table", alias_pair, a));
            if (!a->path)
                return fail_at(l, m, "an alias table without 'file'");
            if (a->kind == PL_ALIAS_TABLE && a->gene_col == a->alias_col)
                return fail_at(l, m, "gene_column and alias_column are the same column");
        }
        return 0;
    }
    return fail_at(l, k, "unknown key '%s' in 'genes' (file, header, aliases)", key);
}

/* --------------------------------------------------------------- edges */

/* Keys of an edge source: the common ones, then the format's (reader.h). */
static const struct {
    const char *key;
    unsigned bit;
} fkeys[] = {
    {"channel", PL_IMP_K_CHANNEL},         {"min_score", PL_IMP_K_MIN_SCORE},
    {"system_type", PL_IMP_K_SYSTEM_TYPE}, {"systems", PL_IMP_K_SYSTEMS},
    {"organisms", PL_IMP_K_ORGANISMS},     {"throughput", PL_IMP_K_THROUGHPUT},
    {"id", PL_IMP_K_ID},                   {"gene_list", PL_IMP_K_GENE_LIST},
    {"sep", PL_IMP_K_SEP},                 {"header", PL_IMP_K_HEADER},
    {"comment", PL_IMP_K_COMMENT},         {"source", PL_IMP_K_COLUMNS},
    {"target", PL_IMP_K_COLUMNS},          {"score", PL_IMP_K_COLUMNS},
    {"small_scale", PL_IMP_K_SMALL_SCALE},
};

typedef struct src_ctx {
    pl_imp_source *s;
    int pairs_set;
    yaml_node_t *format_node;
} src_ctx;

static int format_key(ld *l, pl_imp_source *s, const char *key, yaml_node_t *v)
{
    pl_imp_opts *o = &s->opts;
    if (!strcmp(key, "channel"))
        return get_string(l, v, key, &o->channel);
    if (!strcmp(key, "min_score"))
        return get_double(l, v, key, &o->min_score);
    if (!strcmp(key, "system_type"))
        return get_string(l, v, key, &o->system_type);
    if (!strcmp(key, "throughput"))
        return get_string(l, v, key, &o->throughput);
    if (!strcmp(key, "id"))
        return get_string(l, v, key, &o->id);
    if (!strcmp(key, "gene_list"))
        return get_path(l, v, key, (char **)&o->gene_list);
    if (!strcmp(key, "sep"))
        return get_sep(l, v, key, &o->sep);
    if (!strcmp(key, "header"))
        return get_bool(l, v, key, &o->header);
    if (!strcmp(key, "comment"))
        return get_string(l, v, key, &o->comment);
    if (!strcmp(key, "small_scale"))
        return get_bool(l, v, key, &o->small_scale);
    if (!strcmp(key, "source") || !strcmp(key, "target") || !strcmp(key, "score"))
        return get_column(l, v, key, key[1] == 'o' ? &o->col_src
                                     : key[1] == 'a' ? &o->col_dst : &o->col_score);
    /* lists: systems, organisms */
    if (v->type != YAML_SEQUENCE_NODE)
        return fail_at(l, v, "'%s' must be a list", key);
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
         i++) {
        yaml_node_t *e = node(l, *i);
        uint32_t *n = key[0] == 's' ? &o->n_systems : &o->n_organisms;
        if (*n == PL_IMP_MAX_LIST)
            return fail_at(l, e, "more than %d entries in '%s'", PL_IMP_MAX_LIST, key);
        if (key[0] == 's')
            PL_TRY(get_string(l, e, key, &o->systems[(*n)++]));
        else
            PL_TRY(get_u64(l, e, key, &o->organisms[(*n)++]));
    }
    return 0;
}

static int source_pair(ld *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    src_ctx *c = ctx;
    pl_imp_source *s = c->s;
    if (!strcmp(key, "name"))
        return get_string(l, v, key, (const char **)&s->name);
    if (!strcmp(key, "file"))
        return get_path(l, v, key, &s->file);
    if (!strcmp(key, "format")) {
        PL_TRY(want_scalar(l, v, key));
        c->format_node = v;
        return 0; /* looked up first, by source() */
    }
    if (!strcmp(key, "pairs")) {
        PL_TRY(want_scalar(l, v, key));
        if (!strcmp(scalar(v), "unordered"))
            s->undirected = 1;
        else if (!strcmp(scalar(v), "as_listed"))
            s->undirected = 0;
        else
            return fail_at(l, v, "'pairs' must be unordered or as_listed, not '%s'", scalar(v));
        c->pairs_set = 1;
        return 0;
    }
    for (size_t i = 0; i < sizeof fkeys / sizeof fkeys[0]; i++) {
        if (strcmp(fkeys[i].key, key))
            continue;
        if (!(s->fmt->keys & fkeys[i].bit))
            return fail_at(l, k, "key '%s' does not apply to format '%s'", key, s->fmt->name);
        return format_key(l, s, key, v);
    }
    return fail_at(l, k, "unknown key '%s' in an edge source", key);
}

static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 100) /* as `build --edges` takes them */
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return 0;
    return 1;
}

static int source(ld *l, yaml_node_t *m)
{
    pl_recipe *r = l->r;
    if (m->type != YAML_MAPPING_NODE)
        return fail_at(l, m, "an edge source must be a mapping of keys to values");
    /* The format first: it decides which keys are allowed. */
    yaml_node_t *fmt = NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(l, p->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), "format"))
            fmt = node(l, p->value);
    }
    if (!fmt)
        return fail_at(l, m, "an edge source without 'format'");
    PL_TRY(want_scalar(l, fmt, "format"));
    const pl_imp_format *f = pl__imp_format(scalar(fmt));
    if (!f)
        return fail_at(l, fmt, "unknown format '%s' (string, biogrid, yeastract, tflink, dango, "
                       "delim)", scalar(fmt));
    pl_imp_source *s = &r->sources[r->n_sources++];
    memset(s, 0, sizeof *s);
    s->fmt = f;
    s->undirected = f->undirected;
    s->line = m->start_mark.line + 1;
    pl__imp_opts_init(&s->opts);
    src_ctx c = {.s = s};
    PL_TRY(each_pair(l, m, "an edge source", source_pair, &c));
    if (!s->name)
        return fail_at(l, m, "an edge source without 'name'");
    if (!valid_name(s->name))
        return fail_at(l, m, "edge-type name '%s' must be 1-100 letters, digits, '_', '-' or '.'",
                       s->name);
    if (!s->file)
        return fail_at(l, m, "edge source '%s' without 'file'", s->name);
    for (uint32_t i = 0; i + 1 < r->n_sources; i++)
        if (!strcmp(r->sources[i].name, s->name))
            return fail_at(l, m, "edge type '%s' named twice (first on line %llu)", s->name,
                           (unsigned long long)r->sources[i].line);
    if (f->check && f->check(&s->opts, l->err) < 0) {
        char why[PL_ERR_MSG_MAX];
        snprintf(why, sizeof why, "%s", l->err->msg);
        return fail_at(l, m, "edge source '%s': %s", s->name, why);
    }
    if (f == &pl__imp_dango && !s->opts.gene_list)
        return fail_at(l, m, "edge source '%s': the dango format needs 'gene_list'", s->name);
    return 0;
}

/* ------------------------------------------------- metabolism, samples */

/* The format of a samples part in pertload's own text file: "tsv". */
static int part_format(ld *l, const yaml_node_t *v, const char *what, const char **out)
{
    PL_TRY(want_scalar(l, v, "format"));
    if (strcmp(scalar(v), "tsv"))
        return fail_at(l, v, "unknown %s format '%s' (tsv)", what, scalar(v));
    *out = "tsv";
    return 0;
}

/* The value of key `key` in mapping `m`, or NULL. */
static yaml_node_t *value_of(ld *l, yaml_node_t *m, const char *key)
{
    if (m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(l, p->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), key))
            return node(l, p->value);
    }
    return NULL;
}

static int metabolism_pair(ld *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    (void)ctx;
    pl_recipe_metabolism *m = &l->r->metabolism;
    if (!strcmp(key, "format"))
        return 0; /* read first, by metabolism() */
    if (m->model != PL_METAB_NONE) {
        if (!strcmp(key, "file"))
            return get_path(l, v, key, &m->file);
        return fail_at(l, k, "unknown key '%s' in 'metabolism' of format '%s' (format, file)",
                       key, m->format);
    }
    if (!strcmp(key, "reactions"))
        return get_path(l, v, key, &m->reactions);
    if (!strcmp(key, "gpr"))
        return get_path(l, v, key, &m->gpr);
    if (!strcmp(key, "rules"))
        return get_path(l, v, key, &m->rules);
    if (!strcmp(key, "rmr"))
        return get_path(l, v, key, &m->rmr);
    if (!strcmp(key, "reaction_rule")) {
        PL_TRY(want_scalar(l, v, key));
        if (strcmp(scalar(v), "any") && strcmp(scalar(v), "gpr"))
            return fail_at(l, v, "'reaction_rule' is any or gpr, not '%s'", scalar(v));
        m->reaction_rule = !strcmp(scalar(v), "gpr") ? PL_REACTION_GPR : PL_REACTION_ANY;
        return 0;
    }
    return fail_at(l, k, "unknown key '%s' in 'metabolism' (format, reactions, gpr, rules, "
                   "rmr, reaction_rule)", key);
}

/* 'metabolism': pertload's text files (tsv) or a model file (yeast-gem,
 * sbml). */
static int metabolism(ld *l, yaml_node_t *v)
{
    pl_recipe_metabolism *m = &l->r->metabolism;
    m->line = v->start_mark.line + 1;
    yaml_node_t *f = value_of(l, v, "format");
    if (f) {
        PL_TRY(want_scalar(l, f, "format"));
        if (!strcmp(scalar(f), "tsv"))
            m->format = "tsv";
        else if (!strcmp(scalar(f), "yeast-gem"))
            m->format = "yeast-gem", m->model = PL_METAB_YEASTGEM;
        else if (!strcmp(scalar(f), "sbml"))
            m->format = "sbml", m->model = PL_METAB_SBML;
        else
            return fail_at(l, f, "unknown metabolism format '%s' (tsv, yeast-gem or sbml)",
                           scalar(f));
    }
    PL_TRY(each_pair(l, v, "'metabolism'", metabolism_pair, NULL));
    if (!m->format)
        return fail_at(l, v, "'metabolism' without 'format' (tsv, yeast-gem or sbml)");
    if (m->model != PL_METAB_NONE)
        return m->file ? 0 : fail_at(l, v, "'metabolism' without 'file'");
    if (!m->gpr && !m->rules && !m->rmr && !m->reactions)
        return fail_at(l, v, "'metabolism' names no file (reactions, gpr, rules, rmr)");
    if (m->gpr && m->rules)
        return fail_at(l, v, "'metabolism': give 'gpr' or 'rules' (the rules give the GPR "
                       "edges), not both");
    return 0;
}

static int samples_pair(ld *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    (void)ctx;
    pl_recipe_samples *s = &l->r->samples;
    if (!strcmp(key, "format"))
        return part_format(l, v, "samples", &s->format);
    if (!strcmp(key, "file"))
        return get_path(l, v, key, &s->file);
    if (!strcmp(key, "payload"))
        return get_path(l, v, key, &s->payload);
    return fail_at(l, k, "unknown key '%s' in 'samples' (format, file, payload)", key);
}

/* A list of column names or numbers. */
static int get_columns(ld *l, yaml_node_t *v, const char *key, const char **out, uint32_t *n)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return fail_at(l, v, "'%s' must be a list of columns", key);
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
         i++) {
        yaml_node_t *e = node(l, *i);
        if (*n == PL_IMP_MAX_LIST)
            return fail_at(l, e, "more than %d entries in '%s'", PL_IMP_MAX_LIST, key);
        PL_TRY(get_column(l, e, key, &out[(*n)++]));
    }
    return 0;
}

static int sample_pair(ld *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    pl_smp_spec *s = ctx;
    if (!strcmp(key, "file"))
        return get_path(l, v, key, (char **)&s->file);
    if (!strcmp(key, "format"))
        return 0; /* read first, by samples_one() */
    if (s->format == PL_SMP_SGA)
        return fail_at(l, k, "key '%s' does not apply to format 'sga' (format, file)", key);
    if (!strcmp(key, "sep"))
        return get_sep(l, v, key, &s->sep);
    if (!strcmp(key, "header"))
        return get_bool(l, v, key, &s->header);
    if (!strcmp(key, "comment"))
        return get_string(l, v, key, &s->comment);
    if (!strcmp(key, "genes"))
        return get_column(l, v, key, &s->genes);
    if (!strcmp(key, "id"))
        return get_column(l, v, key, &s->id);
    if (!strcmp(key, "gene_sep")) {
        char c;
        PL_TRY(get_sep(l, v, key, &c));
        s->gene_sep = c;
        return 0;
    }
    if (!strcmp(key, "gene_columns"))
        return get_columns(l, v, key, s->gene_columns, &s->n_gene_columns);
    if (!strcmp(key, "labels"))
        return get_columns(l, v, key, s->labels, &s->n_labels);
    if (!strcmp(key, "categories"))
        return get_columns(l, v, key, s->categories, &s->n_categories);
    return fail_at(l, k, "unknown key '%s' in a sample table (format, file, sep, header, "
                   "comment, genes, gene_sep, gene_columns, id, labels, categories)", key);
}

static int samples_one(ld *l, yaml_node_t *m)
{
    pl_recipe *r = l->r;
    if (m->type != YAML_MAPPING_NODE)
        return fail_at(l, m, "a sample table must be a mapping of keys to values");
    if (r->n_tables == PL_RECIPE_MAX_SAMPLES)
        return fail_at(l, m, "more than %d sample tables", PL_RECIPE_MAX_SAMPLES);
    pl_smp_spec *s = &r->tables[r->n_tables++];
    pl__smp_spec_init(s);
    yaml_node_t *fmt = NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node(l, p->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), "format"))
            fmt = node(l, p->value);
    }
    if (!fmt)
        return fail_at(l, m, "a sample table without 'format' (table or sga)");
    PL_TRY(want_scalar(l, fmt, "format"));
    if (!strcmp(scalar(fmt), "sga"))
        s->format = PL_SMP_SGA;
    else if (strcmp(scalar(fmt), "table"))
        return fail_at(l, fmt, "unknown sample format '%s' (table or sga)", scalar(fmt));
    PL_TRY(each_pair(l, m, "a sample table", sample_pair, s));
    if (!s->file)
        return fail_at(l, m, "a sample table without 'file'");
    if (pl__smp_check(s, l->err) < 0) {
        char why[PL_ERR_MSG_MAX];
        snprintf(why, sizeof why, "%s", l->err->msg);
        return fail_at(l, m, "sample table: %s", why);
    }
    return 0;
}

static int samples(ld *l, yaml_node_t *v)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return samples_one(l, v);
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++)
        PL_TRY(samples_one(l, node(l, *i)));
    if (!l->r->n_tables)
        return fail_at(l, v, "'samples' is an empty list");
    return 0;
}

/* ---------------------------------------------------------------- top */

static int top_pair(ld *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    (void)ctx;
    pl_recipe *r = l->r;
    if (!strcmp(key, "version")) {
        uint64_t ver;
        PL_TRY(get_u64(l, v, key, &ver));
        if (ver != 1)
            return fail_at(l, v, "recipe version %llu is not supported (this pertload reads "
                           "version 1)", (unsigned long long)ver);
        return 0;
    }
    if (!strcmp(key, "root"))
        return 0; /* read first, by pl__recipe_load() */
    if (!strcmp(key, "genes"))
        return each_pair(l, v, "'genes'", genes_pair, NULL);
    if (!strcmp(key, "edges")) {
        if (v->type != YAML_SEQUENCE_NODE)
            return fail_at(l, v, "'edges' must be a list of edge sources");
        size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
        if (n > PL_MAX_TYPES)
            return fail_at(l, v, "%zu edge sources; a database holds at most %d edge types", n,
                           PL_MAX_TYPES);
        r->sources = calloc(n ? n : 1, sizeof *r->sources);
        if (!r->sources)
            return pl__err(l->err, -ENOMEM, "%s: out of memory", r->path);
        for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
             i++)
            PL_TRY(source(l, node(l, *i)));
        return 0;
    }
    if (!strcmp(key, "metabolism"))
        return metabolism(l, v);
    if (!strcmp(key, "samples")) {
        yaml_node_t *f = value_of(l, v, "format");
        if (!f || f->type != YAML_SCALAR_NODE || strcmp(scalar(f), "tsv"))
            return samples(l, v); /* sample tables: table, sga */
        r->samples.line = v->start_mark.line + 1;
        PL_TRY(each_pair(l, v, "'samples'", samples_pair, NULL));
        if (!r->samples.file)
            return fail_at(l, v, "'samples' needs 'format' and 'file'");
        return 0;
    }
    return fail_at(l, k, "unknown key '%s' (version, root, genes, edges, metabolism, samples)",
                   key);
}

/* The folder part of `path` ("." when none), malloc'd. */
static char *dirname_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static int load(ld *l, const char *path, const char *root_override)
{
    pl_recipe *r = l->r;
    FILE *f = fopen(path, "rb");
    PL_FAIL_IF(!f, l->err, -errno, "%s: cannot open: %s", path, strerror(errno));
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        return pl__err(l->err, -ENOMEM, "%s: out of memory", path);
    }
    yaml_parser_set_input_file(&p, f);
    int rc = 0;
    if (!yaml_parser_load(&p, &l->doc)) {
        rc = pl__err(l->err, PL_EPARSE, "%s:%zu:%zu: %s%s%s", path, p.problem_mark.line + 1,
                     p.problem_mark.column + 1, p.problem ? p.problem : "YAML syntax error",
                     p.context ? " " : "", p.context ? p.context : "");
        yaml_parser_delete(&p);
        fclose(f);
        memset(&l->doc, 0, sizeof l->doc);
        return rc;
    }
    yaml_document_t extra;
    int more = 0;
    if (yaml_parser_load(&p, &extra)) {
        more = yaml_document_get_root_node(&extra) != NULL;
        yaml_document_delete(&extra);
    }
    yaml_parser_delete(&p);
    fclose(f);
    yaml_node_t *top = yaml_document_get_root_node(&l->doc);
    PL_FAIL_IF(!top, l->err, PL_EPARSE, "%s:1:1: empty recipe", path);
    PL_FAIL_IF(more, l->err, PL_EPARSE, "%s: more than one YAML document", path);
    if (top->type != YAML_MAPPING_NODE)
        return fail_at(l, top, "a recipe is a mapping (version, root, genes, edges)");
    /* The base folder of relative paths, before any path is read. */
    char *rdir = own(l, dirname_of(path));
    if (!rdir)
        return -ENOMEM;
    l->base = rdir;
    for (yaml_node_pair_t *q = top->data.mapping.pairs.start; q < top->data.mapping.pairs.top;
         q++) {
        yaml_node_t *k = node(l, q->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), "root"))
            PL_TRY(get_path(l, node(l, q->value), "root", (char **)&l->base));
    }
    if (root_override)
        l->base = root_override;
    PL_TRY(each_pair(l, top, "the recipe", top_pair, NULL));
    if (!r->genes)
        return fail_at(l, top, "the recipe has no 'genes' with a 'file'");
    if (!r->n_sources)
        return fail_at(l, top, "the recipe has no 'edges'");
    return 0;
}

int pl__recipe_load(const char *path, const char *root, pl_recipe **out, pl_err *err)
{
    *out = NULL;
    pl_recipe *r = calloc(1, sizeof *r);
    PL_FAIL_IF(!r, err, -ENOMEM, "%s: out of memory", path);
    ld l = {.r = r, .err = err};
    r->path = strdup(path);
    int rc = r->path ? load(&l, path, root) : pl__err(err, -ENOMEM, "%s: out of memory", path);
    yaml_document_delete(&l.doc);
    if (rc < 0) {
        pl__recipe_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void pl__recipe_free(pl_recipe *r)
{
    if (!r)
        return;
    for (uint64_t i = 0; i < r->n_owned; i++)
        free(r->owned[i]);
    free(r->owned);
    free(r->sources);
    free(r->path);
    free(r);
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

int pl__recipe_names(const pl_recipe *r, pl_names **out, pl_alias_stats *st, pl_err *err)
{
    pl_names *nm;
    PL_TRY(pl__names_new(&nm, err));
    int rc = pl__names_load_genes(nm, r->genes, r->genes_header, err);
    for (uint32_t i = 0; rc >= 0 && i < r->n_aliases; i++)
        rc = pl__names_load_aliases(nm, &r->aliases[i], &st[i], err);
    if (rc < 0) {
        pl__names_free(nm);
        return rc;
    }
    *out = nm;
    return 0;
}
