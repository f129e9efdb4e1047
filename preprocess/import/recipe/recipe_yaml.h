/* Reading a recipe's YAML node tree (recipe.h): the loader state and the
 * value readers shared by the parts of a recipe (recipe.c: genes and edges;
 * recipe_parts.c: metabolism, samples, ontology). Every failure is
 * PL_EPARSE (or -ENOMEM) with "recipe:line:col: reason" at the node. */
#ifndef PL_IMPORT_RECIPE_YAML_H
#define PL_IMPORT_RECIPE_YAML_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "recipe.h"

/** The loader state of one recipe. */
typedef struct pl__ry {
    pl_recipe *r;
    yaml_document_t doc;
    const char *base; /**< folder of relative paths */
    pl_err *err;
} pl__ry;

/** Fail at node `n`: "recipe:line:col: reason". @return PL_EPARSE. */
int pl__ry_fail(pl__ry *l, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Fail at node `n` with `what: ` and the message already in l->err (a
 *  check of the part's options that knows no recipe position). */
int pl__ry_wrap(pl__ry *l, const yaml_node_t *n, const char *what);

/** Node `i` of the document. */
yaml_node_t *pl__ry_node(pl__ry *l, int i);

/** The text of scalar node `n`. */
const char *pl__ry_str(const yaml_node_t *n);

/** Keep `s` (malloc'd; NULL: out of memory) until pl__recipe_free().
 *  @return `s`, or NULL with l->err set. */
char *pl__ry_own(pl__ry *l, char *s);

/** Fail unless `n` is a single value (`key` names it). */
int pl__ry_scalar(pl__ry *l, const yaml_node_t *n, const char *key);

/** A non-empty string without NUL bytes (owned by the recipe); also a
 *  column, a 1-based number or (with a header) a name. */
int pl__ry_string(pl__ry *l, const yaml_node_t *n, const char *key, const char **out);

/** A path; relative ones are joined to the recipe's base folder. */
int pl__ry_path(pl__ry *l, const yaml_node_t *n, const char *key, char **out);

/** true/yes or false/no. */
int pl__ry_bool(pl__ry *l, const yaml_node_t *n, const char *key, int *out);

/** A finite number. */
int pl__ry_double(pl__ry *l, const yaml_node_t *n, const char *key, double *out);

/** A non-negative decimal integer. */
int pl__ry_u64(pl__ry *l, const yaml_node_t *n, const char *key, uint64_t *out);

/** One character, "tab" or "space". */
int pl__ry_sep(pl__ry *l, const yaml_node_t *n, const char *key, char *out);

/** A list of at most PL_IMP_MAX_LIST columns appended to out[*n]. */
int pl__ry_columns(pl__ry *l, yaml_node_t *v, const char *key, const char **out, uint32_t *n);

/** A name or a list of names (letters, digits, '_', '-', ':', '.') as one
 *  comma-separated string owned by the recipe. */
int pl__ry_names(pl__ry *l, yaml_node_t *v, const char *key, const char **out);

/** How the value of a key is read (pl__ry_key). */
typedef enum pl__ry_kind {
    PL_RY_STRING,  /**< a `const char *` field (pl__ry_string) */
    PL_RY_PATH,    /**< a `char *` or `const char *` field (pl__ry_path) */
    PL_RY_BOOL,    /**< an `int` field */
    PL_RY_DOUBLE,  /**< a `double` field */
    PL_RY_SEP,     /**< a `char` field (pl__ry_sep) */
    PL_RY_COLUMNS  /**< a `const char *[PL_IMP_MAX_LIST]` field with its
                        `uint32_t` count at offset `count` (pl__ry_columns) */
} pl__ry_kind;

/** One key of a part, read into the field at offset `off` of the part's
 *  struct. */
typedef struct pl__ry_field {
    const char *key;
    pl__ry_kind kind;
    size_t off, count;
} pl__ry_field;

/** When `key` is one of `fields[0..n)`, read `v` into that field of `base`.
 *  @return 1 when `key` is none of them (nothing read), 0 when read, or the
 *  failure. */
int pl__ry_key(pl__ry *l, const pl__ry_field *fields, size_t n, const char *key,
               yaml_node_t *v, void *base);

/** The resolution rule of an edge or sample source when `key` is one of
 *  its keys: 'allow_empty' (true/false) into *allow_empty, 'min_resolved'
 *  (a share 0..1) into *min_resolved.
 *  @return 1 when `key` is neither (nothing read), 0 when read, or the
 *  failure. */
int pl__ry_resolution(pl__ry *l, const char *key, yaml_node_t *v, int *allow_empty,
                      double *min_resolved);

/** Handles one key of a mapping. */
typedef int (*pl__ry_pair_fn)(pl__ry *l, const char *key, yaml_node_t *k, yaml_node_t *v,
                              void *ctx);

/** Walk mapping `m` (`what` names it in messages), failing on a key that is
 *  not a plain name or is given twice; `fn` handles each pair. */
int pl__ry_pairs(pl__ry *l, yaml_node_t *m, const char *what, pl__ry_pair_fn fn, void *ctx);

/** The value of key `key` in mapping `m`, or NULL (also when `m` is not a
 *  mapping). */
yaml_node_t *pl__ry_value(pl__ry *l, yaml_node_t *m, const char *key);

/** The 'format' of part `m` (a mapping; `what` names the part, `formats`
 *  lists the accepted ones for the message) as a scalar node: it is read
 *  first, as it decides which keys apply. Fails when it is missing or not a
 *  single value. */
int pl__ry_format(pl__ry *l, yaml_node_t *m, const char *what, const char *formats,
                  yaml_node_t **out);

/** The parts of recipe_parts.c, each given the value of its top-level key. */
int pl__ry_metabolism(pl__ry *l, yaml_node_t *v);
int pl__ry_samples(pl__ry *l, yaml_node_t *v);
int pl__ry_ontology(pl__ry *l, yaml_node_t *v);

#endif
