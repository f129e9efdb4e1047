/* Reading a recipe's YAML node tree (recipe_yaml.h). */
#include "recipe_yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/vec.h"

int pl__ry_fail(pl__ry *l, const yaml_node_t *n, const char *fmt, ...)
{
    char reason[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return pl__err(l->err, PL_EPARSE, "%s:%zu:%zu: %s", l->r->path, n->start_mark.line + 1,
                   n->start_mark.column + 1, reason);
}

yaml_node_t *pl__ry_node(pl__ry *l, int i) { return yaml_document_get_node(&l->doc, i); }

const char *pl__ry_str(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

/* Keep `s` (malloc'd) until pl__recipe_free(). */
char *pl__ry_own(pl__ry *l, char *s)
{
    pl_recipe *r = l->r;
    if (!s || pl__grow(&r->owned, &r->cap_owned, r->n_owned + 1, sizeof *r->owned) < 0) {
        free(s);
        pl__err(l->err, -ENOMEM, "%s: out of memory", r->path);
        return NULL;
    }
    return r->owned[r->n_owned++] = s;
}

int pl__ry_scalar(pl__ry *l, const yaml_node_t *n, const char *key)
{
    if (n->type != YAML_SCALAR_NODE)
        return pl__ry_fail(l, n, "'%s' must be a single value", key);
    return 0;
}

int pl__ry_string(pl__ry *l, const yaml_node_t *n, const char *key, const char **out)
{
    PL_TRY(pl__ry_scalar(l, n, key));
    if (n->data.scalar.length == 0)
        return pl__ry_fail(l, n, "'%s' is empty", key);
    if (strlen(pl__ry_str(n)) != n->data.scalar.length)
        return pl__ry_fail(l, n, "'%s' holds a NUL byte", key);
    *out = pl__ry_own(l, strdup(pl__ry_str(n)));
    return *out ? 0 : -ENOMEM;
}

int pl__ry_path(pl__ry *l, const yaml_node_t *n, const char *key, char **out)
{
    const char *s;
    PL_TRY(pl__ry_string(l, n, key, &s));
    if (s[0] == '/' || !strcmp(s, "-")) {
        *out = (char *)s;
        return 0;
    }
    size_t len = strlen(l->base) + strlen(s) + 2;
    char *p = malloc(len);
    if (p)
        snprintf(p, len, "%s/%s", l->base, s);
    *out = pl__ry_own(l, p);
    return *out ? 0 : -ENOMEM;
}

int pl__ry_bool(pl__ry *l, const yaml_node_t *n, const char *key, int *out)
{
    PL_TRY(pl__ry_scalar(l, n, key));
    const char *s = pl__ry_str(n);
    if (!strcmp(s, "true") || !strcmp(s, "yes"))
        *out = 1;
    else if (!strcmp(s, "false") || !strcmp(s, "no"))
        *out = 0;
    else
        return pl__ry_fail(l, n, "'%s' must be true or false, not '%s'", key, s);
    return 0;
}

int pl__ry_double(pl__ry *l, const yaml_node_t *n, const char *key, double *out)
{
    PL_TRY(pl__ry_scalar(l, n, key));
    char *end;
    errno = 0;
    *out = strtod(pl__ry_str(n), &end);
    if (!pl__ry_str(n)[0] || *end || errno || !isfinite(*out))
        return pl__ry_fail(l, n, "'%s' must be a number, not '%s'", key, pl__ry_str(n));
    return 0;
}

int pl__ry_u64(pl__ry *l, const yaml_node_t *n, const char *key, uint64_t *out)
{
    PL_TRY(pl__ry_scalar(l, n, key));
    const char *s = pl__ry_str(n);
    char *end;
    errno = 0;
    *out = strtoull(s, &end, 10);
    if (!(s[0] >= '0' && s[0] <= '9') || *end || errno)
        return pl__ry_fail(l, n, "'%s' must be a non-negative integer, not '%s'", key, s);
    return 0;
}

int pl__ry_sep(pl__ry *l, const yaml_node_t *n, const char *key, char *out)
{
    PL_TRY(pl__ry_scalar(l, n, key));
    const char *s = pl__ry_str(n);
    if (!strcmp(s, "tab") || !strcmp(s, "\t"))
        *out = '\t';
    else if (!strcmp(s, "space") || !strcmp(s, " "))
        *out = ' ';
    else if (n->data.scalar.length == 1 && s[0] != '\n' && s[0] != '\r')
        *out = s[0];
    else
        return pl__ry_fail(l, n, "'%s' must be one character, \"tab\" or \"space\"", key);
    return 0;
}

int pl__ry_pairs(pl__ry *l, yaml_node_t *m, const char *what, pl__ry_pair_fn fn, void *ctx)
{
    if (m->type != YAML_MAPPING_NODE)
        return pl__ry_fail(l, m, "%s must be a mapping of keys to values", what);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = pl__ry_node(l, p->key), *v = pl__ry_node(l, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return pl__ry_fail(l, k, "a key of %s is not a plain name", what);
        for (yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *k2 = pl__ry_node(l, q->key);
            if (k2->type == YAML_SCALAR_NODE && !strcmp(pl__ry_str(k2), pl__ry_str(k)))
                return pl__ry_fail(l, k, "key '%s' given twice in %s (first on line %zu)",
                                   pl__ry_str(k), what, k2->start_mark.line + 1);
        }
        PL_TRY(fn(l, pl__ry_str(k), k, v, ctx));
    }
    return 0;
}

/* The value of key `key` in mapping `m`, or NULL. */
yaml_node_t *pl__ry_value(pl__ry *l, yaml_node_t *m, const char *key)
{
    if (m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = pl__ry_node(l, p->key);
        if (k->type == YAML_SCALAR_NODE && !strcmp(pl__ry_str(k), key))
            return pl__ry_node(l, p->value);
    }
    return NULL;
}

/* A list of column names or numbers. */
int pl__ry_columns(pl__ry *l, yaml_node_t *v, const char *key, const char **out, uint32_t *n)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return pl__ry_fail(l, v, "'%s' must be a list of columns", key);
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top;
         i++) {
        yaml_node_t *e = pl__ry_node(l, *i);
        if (*n == PL_IMP_MAX_LIST)
            return pl__ry_fail(l, e, "more than %d entries in '%s'", PL_IMP_MAX_LIST, key);
        PL_TRY(pl__ry_string(l, e, key, &out[(*n)++]));
    }
    return 0;
}

int pl__ry_wrap(pl__ry *l, const yaml_node_t *n, const char *what)
{
    char why[PL_ERR_MSG_MAX];
    snprintf(why, sizeof why, "%s", l->err->msg);
    return pl__ry_fail(l, n, "%s: %s", what, why);
}

int pl__ry_format(pl__ry *l, yaml_node_t *m, const char *what, const char *formats,
                  yaml_node_t **out)
{
    if (m->type != YAML_MAPPING_NODE)
        return pl__ry_fail(l, m, "%s must be a mapping of keys to values", what);
    *out = pl__ry_value(l, m, "format");
    if (!*out)
        return pl__ry_fail(l, m, "%s without 'format' (%s)", what, formats);
    return pl__ry_scalar(l, *out, "format");
}

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == ':' || c == '.';
}

int pl__ry_names(pl__ry *l, yaml_node_t *v, const char *key, const char **out)
{
    int seq = v->type == YAML_SEQUENCE_NODE;
    size_t n = seq ? (size_t)(v->data.sequence.items.top - v->data.sequence.items.start) : 1;
    if (n == 0)
        return pl__ry_fail(l, v, "'%s' is an empty list", key);
    const char **item = calloc(n, sizeof *item);
    if (!pl__ry_own(l, (char *)item))
        return -ENOMEM;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *e = seq ? pl__ry_node(l, v->data.sequence.items.start[i]) : v;
        PL_TRY(pl__ry_string(l, e, key, &item[i]));
        for (const char *c = item[i]; *c; c++)
            if (!name_char(*c))
                return pl__ry_fail(l, e, "'%s': '%s' is not a name (letters, digits, '_', "
                                   "'-', ':', '.')", key, item[i]);
        len += strlen(item[i]) + 1;
    }
    char *joined = pl__ry_own(l, malloc(len)), *p = joined;
    if (!joined)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s%s", i ? "," : "", item[i]);
    *out = joined;
    return 0;
}

int pl__ry_key(pl__ry *l, const pl__ry_field *fields, size_t n, const char *key,
               yaml_node_t *v, void *base)
{
    const pl__ry_field *f = fields;
    while (f < fields + n && strcmp(f->key, key))
        f++;
    if (f == fields + n)
        return 1;
    char *at = (char *)base + f->off;
    const char *s;
    char *path;
    switch (f->kind) {
    case PL_RY_STRING:
        PL_TRY(pl__ry_string(l, v, key, &s));
        memcpy(at, &s, sizeof s);
        return 0;
    case PL_RY_PATH:
        PL_TRY(pl__ry_path(l, v, key, &path));
        memcpy(at, &path, sizeof path);
        return 0;
    case PL_RY_BOOL:
        return pl__ry_bool(l, v, key, (int *)at);
    case PL_RY_DOUBLE:
        return pl__ry_double(l, v, key, (double *)at);
    case PL_RY_SEP:
        return pl__ry_sep(l, v, key, at);
    case PL_RY_COLUMNS:
        return pl__ry_columns(l, v, key, (const char **)at, (uint32_t *)((char *)base + f->count));
    }
    return 1;
}

int pl__ry_resolution(pl__ry *l, const char *key, yaml_node_t *v, int *allow_empty,
                      double *min_resolved)
{
    if (!strcmp(key, "allow_empty"))
        return pl__ry_bool(l, v, key, allow_empty);
    if (strcmp(key, "min_resolved"))
        return 1;
    PL_TRY(pl__ry_double(l, v, key, min_resolved));
    if (!(*min_resolved >= 0 && *min_resolved <= 1))
        return pl__ry_fail(l, v, "'min_resolved' must be a share 0..1");
    return 0;
}
