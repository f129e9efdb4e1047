/* Dataset recipes (recipe.h), read with libyaml's document loader: the node
 * tree keeps each node's position, so every error names recipe:line:col. */
#include "recipe.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe_yaml.h"
#include "preprocess/import/source/source.h"
#include "src/core/error.h"
#include "src/core/vec.h"

/* ------------------------------------------------------------- aliases */

static int alias_pair(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    pl_alias_spec *a = ctx;
    static const pl__ry_field keys[] = {
        {"file", PL_RY_PATH, offsetof(pl_alias_spec, path), 0},
        {"header", PL_RY_BOOL, offsetof(pl_alias_spec, header), 0},
        {"sep", PL_RY_SEP, offsetof(pl_alias_spec, sep), 0}};
    int rc = pl__ry_key(l, keys, 3, key, v, a);
    if (rc <= 0)
        return rc;
    uint64_t c;
    if (!strcmp(key, "format")) {
        PL_TRY(pl__ry_scalar(l, v, key));
        if (!strcmp(pl__ry_str(v), "table"))
            a->kind = PL_ALIAS_TABLE;
        else if (!strcmp(pl__ry_str(v), "sgd_features"))
            a->kind = PL_ALIAS_SGD_FEATURES;
        else if (!strcmp(pl__ry_str(v), "string_aliases"))
            a->kind = PL_ALIAS_STRING;
        else
            return pl__ry_fail(l, v, "unknown alias table format '%s' (table, sgd_features or "
                               "string_aliases)", pl__ry_str(v));
        return 0;
    }
    if (!strcmp(key, "sources")) {
        if (v->type != YAML_SEQUENCE_NODE)
            return pl__ry_fail(l, v, "'sources' must be a list of alias sources");
        for (yaml_node_item_t *i = v->data.sequence.items.start;
             i < v->data.sequence.items.top; i++) {
            yaml_node_t *e = pl__ry_node(l, *i);
            if (a->n_sources == PL_ALIAS_MAX_SOURCES)
                return pl__ry_fail(l, e, "more than %d alias sources", PL_ALIAS_MAX_SOURCES);
            PL_TRY(pl__ry_string(l, e, key, &a->sources[a->n_sources++]));
        }
        return 0;
    }
    if (!strcmp(key, "gene_column") || !strcmp(key, "alias_column")) {
        PL_TRY(pl__ry_u64(l, v, key, &c));
        if (c < 1 || c > 64)
            return pl__ry_fail(l, v, "'%s' must be a column number 1..64", key);
        *(key[0] == 'g' ? &a->gene_col : &a->alias_col) = (int)c;
        return 0;
    }
    return pl__ry_fail(l, k, "unknown key '%s' in an alias table (file, format, header, sep, "
                       "gene_column, alias_column, sources)", key);
}

static int genes_pair(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    (void)ctx;
    pl_recipe *r = l->r;
    static const pl__ry_field keys[] = {
        {"file", PL_RY_PATH, offsetof(pl_recipe, genes), 0},
        {"header", PL_RY_BOOL, offsetof(pl_recipe, genes_header), 0}};
    int rc = pl__ry_key(l, keys, 2, key, v, r);
    if (rc <= 0)
        return rc;
    if (!strcmp(key, "aliases")) {
        if (v->type != YAML_SEQUENCE_NODE)
            return pl__ry_fail(l, v, "'aliases' must be a list of alias tables");
        for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
             i++) {
            yaml_node_t *m = pl__ry_node(l, *i);
            if (r->n_aliases == PL_RECIPE_MAX_ALIASES)
                return pl__ry_fail(l, m, "more than %d alias tables", PL_RECIPE_MAX_ALIASES);
            pl_alias_spec *a = &r->aliases[r->n_aliases++];
            a->gene_col = 1;
            a->alias_col = 2;
            PL_TRY(pl__ry_pairs(l, m, "an alias table", alias_pair, a));
            if (!a->path)
                return pl__ry_fail(l, m, "an alias table without 'file'");
            if (a->kind == PL_ALIAS_TABLE && a->gene_col == a->alias_col)
                return pl__ry_fail(l, m, "gene_column and alias_column are the same column");
            if (a->n_sources && a->kind != PL_ALIAS_STRING)
                return pl__ry_fail(l, m, "'sources' applies to format string_aliases only");
        }
        return 0;
    }
    return pl__ry_fail(l, k, "unknown key '%s' in 'genes' (file, header, aliases)", key);
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
    {"small_scale", PL_IMP_K_SMALL_SCALE}, {"modes", PL_IMP_K_MODES},
    {"directed", PL_IMP_K_DIRECTED},
};

typedef struct src_ctx {
    pl_imp_source *s;
    int pairs_set;
    yaml_node_t *format_node;
    yaml_node_t *types; /* string_actions: {mode: edge type} */
} src_ctx;

#define OPT(key, kind, field) {key, PL_RY_##kind, offsetof(pl_imp_opts, field), 0}
static const pl__ry_field okeys[] = {
    OPT("channel", STRING, channel),         OPT("min_score", DOUBLE, min_score),
    OPT("system_type", STRING, system_type), OPT("throughput", STRING, throughput),
    OPT("id", STRING, id),                   OPT("gene_list", PATH, gene_list),
    OPT("sep", SEP, sep),                    OPT("header", BOOL, header),
    OPT("comment", STRING, comment),         OPT("small_scale", BOOL, small_scale),
    OPT("source", STRING, col_src),          OPT("target", STRING, col_dst),
    OPT("score", STRING, col_score),         OPT("directed", BOOL, directed),
};
#undef OPT

static int format_key(pl__ry *l, pl_imp_source *s, const char *key, yaml_node_t *v)
{
    pl_imp_opts *o = &s->opts;
    int rc = pl__ry_key(l, okeys, sizeof okeys / sizeof *okeys, key, v, o);
    if (rc <= 0)
        return rc;
    /* lists: systems, organisms, modes */
    if (v->type != YAML_SEQUENCE_NODE)
        return pl__ry_fail(l, v, "'%s' must be a list", key);
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
         i++) {
        yaml_node_t *e = pl__ry_node(l, *i);
        if (key[0] == 'm') {
            if (o->n_modes == PL_IMP_MAX_LIST)
                return pl__ry_fail(l, e, "more than %d entries in '%s'", PL_IMP_MAX_LIST, key);
            PL_TRY(pl__ry_string(l, e, key, &o->modes[o->n_modes++]));
            continue;
        }
        uint32_t *n = key[0] == 's' ? &o->n_systems : &o->n_organisms;
        if (*n == PL_IMP_MAX_LIST)
            return pl__ry_fail(l, e, "more than %d entries in '%s'", PL_IMP_MAX_LIST, key);
        if (key[0] == 's')
            PL_TRY(pl__ry_string(l, e, key, &o->systems[(*n)++]));
        else
            PL_TRY(pl__ry_u64(l, e, key, &o->organisms[(*n)++]));
    }
    return 0;
}

static int source_pair(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    src_ctx *c = ctx;
    pl_imp_source *s = c->s;
    if (!strcmp(key, "name"))
        return pl__ry_string(l, v, key, (const char **)&s->name);
    if (!strcmp(key, "file"))
        return pl__ry_path(l, v, key, &s->file);
    if (!strcmp(key, "format")) {
        PL_TRY(pl__ry_scalar(l, v, key));
        c->format_node = v;
        return 0; /* looked up first, by source() */
    }
    if (!strcmp(key, "pairs")) {
        PL_TRY(pl__ry_scalar(l, v, key));
        if (!strcmp(pl__ry_str(v), "unordered"))
            s->undirected = 1;
        else if (!strcmp(pl__ry_str(v), "as_listed"))
            s->undirected = 0;
        else
            return pl__ry_fail(l, v, "'pairs' must be unordered or as_listed, not '%s'",
                               pl__ry_str(v));
        c->pairs_set = 1;
        return 0;
    }
    int rc = pl__ry_resolution(l, key, v, &s->allow_empty, &s->min_resolved);
    if (rc <= 0)
        return rc;
    if (!strcmp(key, "types")) {
        if (s->fmt != &pl__imp_string_actions)
            return pl__ry_fail(l, k, "key 'types' does not apply to format '%s'", s->fmt->name);
        if (v->type != YAML_MAPPING_NODE ||
            v->data.mapping.pairs.top == v->data.mapping.pairs.start)
            return pl__ry_fail(l, v, "'types' must be a mapping {MODE: EDGE_TYPE}");
        c->types = v;
        return 0;
    }
    for (size_t i = 0; i < sizeof fkeys / sizeof fkeys[0]; i++) {
        if (strcmp(fkeys[i].key, key))
            continue;
        if (!(s->fmt->keys & fkeys[i].bit))
            return pl__ry_fail(l, k, "key '%s' does not apply to format '%s'", key, s->fmt->name);
        return format_key(l, s, key, v);
    }
    return pl__ry_fail(l, k, "unknown key '%s' in an edge source", key);
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

/* A string_actions source with `types: {MODE: TYPE, ...}`: the source `s`
 * (the last of r->sources) becomes one source per pair, named TYPE and
 * keeping MODE, read in one pass (shared: build_recipe.c). */
static int expand_types(pl__ry *l, yaml_node_t *m, const src_ctx *c)
{
    pl_recipe *r = l->r;
    pl_imp_source *s = &r->sources[r->n_sources - 1];
    if (s->name)
        return pl__ry_fail(l, m, "an edge source with 'types' takes no 'name' (each type is "
                           "named in 'types')");
    if (s->opts.n_modes)
        return pl__ry_fail(l, m, "an edge source with 'types' takes no 'modes' (the modes are "
                           "the keys of 'types')");
    const pl_imp_source base = *s;
    uint32_t first = r->n_sources - 1, k = 0;
    for (yaml_node_pair_t *p = c->types->data.mapping.pairs.start;
         p < c->types->data.mapping.pairs.top; p++, k++) {
        yaml_node_t *mode = pl__ry_node(l, p->key), *type = pl__ry_node(l, p->value);
        if (first + k >= PL_MAX_TYPES)
            return pl__ry_fail(l, type, "more than %d edge types", PL_MAX_TYPES);
        pl_imp_source *t = &r->sources[first + k];
        *t = base;
        PL_TRY(pl__ry_string(l, mode, "types", &t->opts.modes[0]));
        t->opts.n_modes = 1;
        PL_TRY(pl__ry_string(l, type, "types", (const char **)&t->name));
        if (base.fmt->check(&t->opts, l->err) < 0)
            return pl__ry_wrap(l, mode, "'types'");
        for (uint32_t j = first; j < first + k; j++)
            if (!strcmp(r->sources[j].opts.modes[0], t->opts.modes[0]))
                return pl__ry_fail(l, mode, "mode '%s' given twice in 'types'",
                                   t->opts.modes[0]);
    }
    r->n_sources = first + k;
    r->sources[first].shared = k;
    return 0;
}

static int source(pl__ry *l, yaml_node_t *m)
{
    pl_recipe *r = l->r;
    /* The format first: it decides which keys are allowed. */
    yaml_node_t *fmt;
    PL_TRY(pl__ry_format(l, m, "an edge source", "string, string_actions, biogrid, yeastract, "
                         "tflink, dango, delim", &fmt));
    const pl_imp_format *f = pl__imp_format(pl__ry_str(fmt));
    if (!f)
        return pl__ry_fail(l, fmt, "unknown format '%s' (string, string_actions, biogrid, "
                           "yeastract, tflink, dango, delim)", pl__ry_str(fmt));
    pl_imp_source *s = &r->sources[r->n_sources++];
    memset(s, 0, sizeof *s);
    s->fmt = f;
    s->undirected = f->undirected;
    s->line = m->start_mark.line + 1;
    s->min_resolved = 0.5;
    pl__imp_opts_init(&s->opts);
    src_ctx c = {.s = s};
    PL_TRY(pl__ry_pairs(l, m, "an edge source", source_pair, &c));
    uint32_t first = r->n_sources - 1;
    if (c.types)
        PL_TRY(expand_types(l, m, &c));
    for (uint32_t t = first; t < r->n_sources; t++) {
        const char *name = r->sources[t].name;
        if (!name)
            return pl__ry_fail(l, m, "an edge source without 'name'");
        if (!valid_name(name))
            return pl__ry_fail(l, m, "edge-type name '%s' must be 1-100 letters, digits, '_', "
                               "'-' or '.'", name);
        if (!r->sources[t].file)
            return pl__ry_fail(l, m, "edge source '%s' without 'file'", name);
        for (uint32_t i = 0; i < t; i++)
            if (!strcmp(r->sources[i].name, name))
                return pl__ry_fail(l, m, "edge type '%s' named twice (first on line %llu)",
                                   name, (unsigned long long)r->sources[i].line);
    }
    if (f->check && f->check(&s->opts, l->err) < 0) {
        char what[160];
        snprintf(what, sizeof what, "edge source '%s'", s->name);
        return pl__ry_wrap(l, m, what);
    }
    /* directed actions keep their direction unless pairs says otherwise */
    for (uint32_t t = first; t < r->n_sources; t++)
        if (r->sources[t].opts.directed && !c.pairs_set)
            r->sources[t].undirected = 0;
    if (f == &pl__imp_dango && !s->opts.gene_list)
        return pl__ry_fail(l, m, "edge source '%s': the dango format needs 'gene_list'", s->name);
    return 0;
}

/* ----------------------------------------------------------- features */

/* features: {node type: .npy}; the node type's count is checked by the build. */
static int features_pair(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v,
                         void *ctx)
{
    (void)ctx;
    pl_recipe *r = l->r;
    static const char *const types[PL_N_NODE_TYPES] = PL_NODE_TYPES;
    for (int t = 0; t < PL_N_NODE_TYPES; t++)
        if (!strcmp(key, types[t])) {
            r->feature_types[r->n_features] = types[t];
            return pl__ry_path(l, v, key, &r->feature_files[r->n_features++]);
        }
    return pl__ry_fail(l, k, "unknown node type '%s' in 'features' (gene, reaction, metabolite, "
                       "term)", key);
}

/* ---------------------------------------------------------------- top */

static int top_pair(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
    (void)ctx;
    pl_recipe *r = l->r;
    if (!strcmp(key, "version")) {
        uint64_t ver;
        PL_TRY(pl__ry_u64(l, v, key, &ver));
        if (ver != 1)
            return pl__ry_fail(l, v, "recipe version %llu is not supported (this pertload reads "
                               "version 1)", (unsigned long long)ver);
        return 0;
    }
    if (!strcmp(key, "root"))
        return 0; /* read first, by pl__recipe_load() */
    if (!strcmp(key, "max_line") || !strcmp(key, "max_text")) {
        PL_TRY(pl__ry_scalar(l, v, key));
        uint64_t *out = key[4] == 'l' ? &r->max_line : &r->max_text;
        if (pl__src_parse_limit(pl__ry_str(v), out) < 0)
            return pl__ry_fail(l, v, "%s wants a number of bytes (1048576, 4M, 1G), got '%.40s'",
                               key, pl__ry_str(v));
        return 0;
    }
    if (!strcmp(key, "genes"))
        return pl__ry_pairs(l, v, "'genes'", genes_pair, NULL);
    if (!strcmp(key, "edges")) {
        if (v->type != YAML_SEQUENCE_NODE)
            return pl__ry_fail(l, v, "'edges' must be a list of edge sources");
        size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
        if (n > PL_MAX_TYPES)
            return pl__ry_fail(l, v, "%zu edge sources; a database holds at most %d edge types", n,
                               PL_MAX_TYPES);
        /* room for every type: a source with `types` makes several */
        r->sources = calloc(PL_MAX_TYPES, sizeof *r->sources);
        if (!r->sources)
            return pl__err(l->err, -ENOMEM, "%s: out of memory", r->path);
        for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
             i++)
            PL_TRY(source(l, pl__ry_node(l, *i)));
        return 0;
    }
    if (!strcmp(key, "metabolism"))
        return pl__ry_metabolism(l, v);
    if (!strcmp(key, "samples"))
        return pl__ry_samples(l, v);
    if (!strcmp(key, "ontology"))
        return pl__ry_ontology(l, v);
    if (!strcmp(key, "features")) {
        r->features_line = k->start_mark.line + 1;
        return pl__ry_pairs(l, v, "'features'", features_pair, NULL);
    }
    return pl__ry_fail(l, k, "unknown key '%s' (version, root, genes, edges, metabolism, samples, "
                       "ontology, features)",
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

static int syntax_error(const yaml_parser_t *p, const char *path, pl_err *err)
{
    if (p->error == YAML_MEMORY_ERROR)
        return pl__err(err, -ENOMEM, "%s: out of memory", path);
    return pl__err(err, PL_EPARSE, "%s:%zu:%zu: %s%s%s", path, p->problem_mark.line + 1,
                   p->problem_mark.column + 1, p->problem ? p->problem : "YAML syntax error",
                   p->context ? " " : "", p->context ? p->context : "");
}

/* The event stream of the recipe's text before libyaml builds its tree:
 * collections nested past PL_YAML_MAX_DEPTH are refused at their line (the
 * parse time grows with the square of the nesting). */
static int check_depth(const char *path, const unsigned char *text, size_t len, pl_err *err)
{
    yaml_parser_t p;
    PL_FAIL_IF(!yaml_parser_initialize(&p), err, -ENOMEM, "%s: out of memory", path);
    yaml_parser_set_input_string(&p, text, len);
    int depth = 0, rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = syntax_error(&p, path, err);
            break;
        }
        yaml_event_type_t t = ev.type;
        size_t line = ev.start_mark.line + 1, col = ev.start_mark.column + 1;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT)
            break;
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
            if (++depth > PL_YAML_MAX_DEPTH) {
                rc = pl__err(err, PL_EPARSE, "%s:%zu:%zu: YAML collections nested deeper than "
                             "%d", path, line, col, PL_YAML_MAX_DEPTH);
                break;
            }
        } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
            depth--;
        }
    }
    yaml_parser_delete(&p);
    return rc;
}

/* The recipe file's bytes, at most the text limit (source.h). */
static int read_text(const char *path, unsigned char **out, size_t *len, pl_err *err)
{
    FILE *f = fopen(path, "rb");
    PL_FAIL_IF(!f, err, -errno, "%s: cannot open: %s", path, strerror(errno));
    uint64_t max, n = 0, cap = 0;
    pl__src_limits(NULL, &max);
    unsigned char *buf = NULL;
    int rc = 0;
    for (;;) {
        if (pl__grow(&buf, &cap, n + 65536, 1) < 0) {
            rc = pl__err(err, -ENOMEM, "%s: out of memory", path);
            break;
        }
        size_t got = fread(buf + n, 1, 65536, f);
        n += got;
        if (n > max) {
            rc = pl__err(err, PL_EPARSE, "%s: a recipe longer than the limit of %llu bytes",
                         path, (unsigned long long)max);
            break;
        }
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

/* The recipe's one YAML document into l->doc; its bytes kept in the recipe. */
static int parse(pl__ry *l, const char *path)
{
    unsigned char *text = NULL;
    size_t len = 0;
    PL_TRY(read_text(path, &text, &len, l->err));
    l->r->text = (char *)text;
    l->r->text_len = len;
    int rc = check_depth(path, text, len, l->err);
    yaml_parser_t p;
    if (rc == 0 && !yaml_parser_initialize(&p))
        rc = pl__err(l->err, -ENOMEM, "%s: out of memory", path);
    if (rc < 0)
        return rc;
    yaml_parser_set_input_string(&p, text, len);
    if (!yaml_parser_load(&p, &l->doc)) {
        rc = syntax_error(&p, path, l->err);
        memset(&l->doc, 0, sizeof l->doc);
    } else {
        yaml_document_t extra;
        if (yaml_parser_load(&p, &extra)) {
            if (yaml_document_get_root_node(&extra) != NULL)
                rc = pl__err(l->err, PL_EPARSE, "%s: more than one YAML document", path);
            yaml_document_delete(&extra);
        }
    }
    yaml_parser_delete(&p);
    return rc;
}

static int load(pl__ry *l, const char *path, const char *root_override)
{
    pl_recipe *r = l->r;
    PL_TRY(parse(l, path));
    yaml_node_t *top = yaml_document_get_root_node(&l->doc);
    PL_FAIL_IF(!top, l->err, PL_EPARSE, "%s:1:1: empty recipe", path);
    if (top->type != YAML_MAPPING_NODE)
        return pl__ry_fail(l, top, "a recipe is a mapping (version, root, genes, edges)");
    /* The base folder of relative paths, before any path is read. */
    char *rdir = pl__ry_own(l, dirname_of(path));
    if (!rdir)
        return -ENOMEM;
    l->base = rdir;
    for (yaml_node_pair_t *q = top->data.mapping.pairs.start; q < top->data.mapping.pairs.top;
         q++) {
        yaml_node_t *k = pl__ry_node(l, q->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp(pl__ry_str(k), "root"))
            PL_TRY(pl__ry_path(l, pl__ry_node(l, q->value), "root", (char **)&l->base));
    }
    if (root_override)
        l->base = root_override;
    PL_TRY(pl__ry_pairs(l, top, "the recipe", top_pair, NULL));
    if (!r->genes)
        return pl__ry_fail(l, top, "the recipe has no 'genes' with a 'file'");
    /* as `build` takes --edges: left out (or none) only with a metabolism
     * or an ontology */
    if (!r->n_sources && !r->metabolism.format && !r->ontology.format)
        return pl__ry_fail(l, top, "the recipe has no 'edges' (they may be left out, or empty, "
                           "only with a 'metabolism' or an 'ontology')");
    return 0;
}

int pl__recipe_load(const char *path, const char *root, pl_recipe **out, pl_err *err)
{
    *out = NULL;
    pl_recipe *r = calloc(1, sizeof *r);
    PL_FAIL_IF(!r, err, -ENOMEM, "%s: out of memory", path);
    pl__ry l = {.r = r, .err = err};
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

void pl__recipe_limits(const pl_recipe *r, uint64_t max_line, uint64_t max_text)
{
    pl__src_set_limits(max_line ? max_line : r->max_line, max_text ? max_text : r->max_text);
}

void pl__recipe_free(pl_recipe *r)
{
    if (!r)
        return;
    for (uint64_t i = 0; i < r->n_owned; i++)
        free(r->owned[i]);
    free(r->owned);
    free(r->sources);
    free(r->text);
    free(r->path);
    free(r);
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
