/* pl_build: node feature matrices (DESIGN section 16), one .npy per node
 * type, checked against the database being built and stored whole under
 * feat/<node type> (src/core/dbformat.h).
 *
 * The .npy is read by the core reader (src/core/npy.h: versions 1.0-3.0,
 * magic, header, C order, little-endian, the file size against the shape);
 * here it must also be a 2-D matrix of float32 ('<f4') or float16 ('<f2')
 * with one row per node of its type and at least one column, every element
 * finite (no NaN, no infinity). Every other dtype (float64, integers, bool,
 * big-endian, object) is refused: convert it with numpy first. Errors name
 * the file and the reason. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "src/core/npy.h"

static const char *const node_types[PL_N_NODE_TYPES] = PL_NODE_TYPES;

/* The node count of type t in the database being built (its meta record is
 * not filled yet), and whether the database has that type at all. */
static uint64_t count_of(const builder *b, int t, int *has)
{
    const pl_build_opts *o = b->o;
    int metabolism = o->gpr || o->rmr || o->reactions || o->rules;
    const uint64_t n[PL_N_NODE_TYPES] = {b->n_genes, metabolism ? b->reactions.n : 0,
                                         metabolism ? b->metabolites.n : 0, b->on->n_terms};
    *has = t == 0 || (t < 3 ? metabolism : b->on->n_terms > 0);
    return n[t];
}

/* The node types this database has, for messages. */
static void types_text(const builder *b, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int t = 0; t < PL_N_NODE_TYPES; t++) {
        int has;
        count_of(b, t, &has);
        if (has)
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? ", " : "",
                     node_types[t]);
    }
}

/* Refuse a matrix holding a NaN or an infinity (as stoichiometries must be
 * finite): its first such element by row and column. */
static int check_finite(const pl__npy *n, const char *path, const char *type, pl_err *err)
{
    const unsigned char *p = (const unsigned char *)n->map + n->offset;
    int half = n->itemsize == 2;
    uint32_t exp_mask = half ? 0x7c00u : 0x7f800000u, frac_mask = half ? 0x3ffu : 0x7fffffu;
    for (uint64_t i = 0; i < n->count; i++) {
        uint32_t bits = 0;
        if (half) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            bits = h;
        } else {
            memcpy(&bits, p + 4 * i, 4);
        }
        if ((bits & exp_mask) != exp_mask)
            continue;
        int neg = (bits >> (half ? 15 : 31)) != 0;
        const char *what = (bits & frac_mask) ? "NaN" : neg ? "-inf" : "inf";
        return pl__err(err, PL_EPARSE, "%s: features of '%s': row %llu, column %llu is %s; "
                       "node features must be finite", path, type,
                       (unsigned long long)(i / n->shape[1]),
                       (unsigned long long)(i % n->shape[1]), what);
    }
    return 0;
}

static int open_one(builder *b, const char *type, const char *path)
{
    char have[64];
    types_text(b, have, sizeof have);
    int t = pl__node_type(type);
    PL_FAIL_IF(t < 0, b->err, PL_EUSAGE, "%s: features of '%s': not a node type (this "
               "database has %s)", path, type, have);
    int has;
    uint64_t rows = count_of(b, t, &has);
    PL_FAIL_IF(!has, b->err, PL_EUSAGE, "%s: features of '%s': the database has no %s nodes "
               "(it has %s)", path, type, type, have);
    PL_FAIL_IF(b->feat[t].fd >= 0, b->err, PL_EUSAGE, "%s: features of '%s' given twice (also "
               "%s)", path, type, b->feat[t].path);
    pl__npy *n = &b->feat[t];
    PL_TRY(pl__npy_open(n, path, b->err));
    PL_FAIL_IF(strcmp(n->descr, "<f4") && strcmp(n->descr, "<f2"), b->err, PL_EPARSE,
               "%s: features of '%s': dtype '%s'; float32 ('<f4') or float16 ('<f2') "
               "expected", path, type, n->descr);
    PL_FAIL_IF(n->ndim != 2, b->err, PL_EPARSE, "%s: features of '%s': %u dimension%s; a "
               "matrix [%llu, F] expected", path, type, n->ndim, n->ndim == 1 ? "" : "s",
               (unsigned long long)rows);
    PL_FAIL_IF(n->shape[0] != rows, b->err, PL_EPARSE, "%s: features of '%s': %llu rows; the "
               "database has %llu %s nodes", path, type, (unsigned long long)n->shape[0],
               (unsigned long long)rows, type);
    PL_FAIL_IF(n->shape[1] == 0, b->err, PL_EPARSE, "%s: features of '%s': 0 columns", path,
               type);
    PL_TRY(pl__npy_map(n, b->err));
    return check_finite(n, path, type, b->err);
}

int pl__build_open_features(builder *b)
{
    const pl_build_opts *o = b->o;
    for (size_t i = 0; i < o->n_node_features; i++) {
        PL_FAIL_IF(!o->feature_types || !o->feature_files || !o->feature_types[i] ||
                       !o->feature_files[i], b->err, PL_EUSAGE,
                   "pl_build: node feature %zu without a type or a file", i + 1);
        PL_TRY(open_one(b, o->feature_types[i], o->feature_files[i]));
    }
    return 0;
}

int pl__build_put_features(builder *b)
{
    for (int t = 0; t < PL_N_NODE_TYPES; t++) {
        const pl__npy *n = &b->feat[t];
        if (!n->map)
            continue;
        struct pl__feat_header h = {.rows = n->shape[0], .cols = n->shape[1]};
        memcpy(h.dtype, n->descr, 4);
        size_t bytes = (size_t)(n->count * n->itemsize);
        char *v = malloc(sizeof h + bytes);
        if (!v)
            return NOMEM(b);
        memcpy(v, &h, sizeof h);
        memcpy(v + sizeof h, (const char *)n->map + n->offset, bytes);
        const char *key = node_types[t];
        int rc = pl__db_put(b->txn, b->dbi[PL_DBI_FEAT], PL_DBI_FEAT, key, strlen(key), v,
                            sizeof h + bytes, 0, b->err);
        free(v);
        PL_TRY(rc);
    }
    return 0;
}

void pl__build_close_features(builder *b)
{
    for (int t = 0; t < PL_N_NODE_TYPES; t++)
        pl__npy_close(&b->feat[t]);
}
