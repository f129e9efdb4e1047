/* The ontology layers of a database (pl_ontology, DESIGN section 10): the
 * "onto" sub-database decoded and checked (dbformat.h). Nothing stored is
 * trusted: every index is range-checked, and the strata are recomputed from
 * the children, which also proves the term graph acyclic. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "dbformat.h"
#include "error.h"

typedef struct onto_handle {
    pl_ontology pub;
    uint32_t *buf;      /* the decompressed schedule */
    const char **names;
    uint64_t *gptr[2];  /* per gene: terms, annotations */
    uint32_t *gidx[2];
} onto_handle;

/* A CSR over `n` keys with `m` entries each below `limit`, runs ascending. */
static int csr_ok(const uint32_t *ptr, const uint32_t *idx, uint64_t n, uint64_t m,
                  uint64_t limit)
{
    if (ptr[0] != 0 || ptr[n] != m)
        return 0;
    for (uint64_t i = 0; i < n; i++) {
        if (ptr[i] > ptr[i + 1])
            return 0;
        for (uint32_t j = ptr[i]; j < ptr[i + 1]; j++)
            if (idx[j] >= limit || (j > ptr[i] && idx[j - 1] >= idx[j]))
                return 0;
    }
    return 1;
}

/* Every term's stratum is 0 without children, else 1 + the maximum of its
 * children's: strictly above every child, which no cycle can satisfy. */
static int strata_ok(const pl_ontology *o)
{
    for (uint32_t t = 0; t < o->n_terms; t++) {
        uint32_t want = 0;
        for (uint32_t i = o->child_ptr[t]; i < o->child_ptr[t + 1]; i++)
            if (o->stratum[o->child_idx[i]] + 1 > want)
                want = o->stratum[o->child_idx[i]] + 1;
        if (o->stratum[t] != want || want >= o->n_strata)
            return 0;
    }
    return 1;
}

static int groups_ok(const pl_ontology *o)
{
    uint32_t T = o->n_terms, G = o->n_groups, S = o->n_strata;
    if (o->stratum_ptr[0] != 0 || o->stratum_ptr[S] != G || o->group_ptr[0] != 0 ||
        o->group_ptr[G] != T)
        return 0;
    uint8_t *seen = calloc(T ? T : 1, 1);
    if (!seen)
        return -ENOMEM;
    int ok = 1;
    for (uint32_t s = 0; ok && s < S; s++) {
        ok = o->stratum_ptr[s] < o->stratum_ptr[s + 1];
        for (uint32_t k = o->stratum_ptr[s]; ok && k < o->stratum_ptr[s + 1]; k++) {
            ok = o->group_ptr[k] < o->group_ptr[k + 1];
            for (uint32_t i = o->group_ptr[k]; ok && i < o->group_ptr[k + 1]; i++) {
                uint32_t t = o->group_terms[i];
                ok = t < T && !seen[t]++ && o->stratum[t] == s &&
                     o->gene_ptr[t + 1] - o->gene_ptr[t] == o->group_n_genes[k] &&
                     o->child_ptr[t + 1] - o->child_ptr[t] == o->group_n_children[k];
            }
        }
    }
    free(seen);
    return ok;
}

/* The per-gene bitmaps of kind `kind` into a CSR over the genes. */
static int load_gene_sets(pl_db *db, onto_handle *h, int kind, uint64_t limit, pl_err *err)
{
    uint32_t G = h->pub.n_genes;
    uint64_t *ptr = calloc((size_t)G + 1, sizeof *ptr), cap = 0, n = 0;
    uint32_t *vals = NULL;
    h->gptr[kind - 1] = ptr;
    PL_FAIL_IF(!ptr, err, -ENOMEM, "out of memory");
    MDB_cursor *cur;
    int rc = mdb_cursor_open(db->txn, db->dbi[PL_DBI_ONTO], &cur);
    PL_FAIL_IF(rc, err, pl__lmdb_code(rc), "%s: %s", db->path, mdb_strerror(rc));
    unsigned char key[5];
    pl__onto_key(key, (uint32_t)kind, 0);
    MDB_val k = {5, key}, v;
    uint64_t next = 0; /* genes below have their ptr set */
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        const unsigned char *kb = k.mv_data;
        if (k.mv_size != 5 || kb[0] != kind)
            break;
        char kd[64];
        pl__key_describe(PL_DBI_ONTO, kb, 5, kd, sizeof kd);
        uint32_t gene = (uint32_t)kb[1] << 24 | (uint32_t)kb[2] << 16 | (uint32_t)kb[3] << 8 |
                        kb[4];
        if (gene >= G) {
            rc = pl__err(err, PL_ECORRUPT, "key %s: gene out of range", kd);
            break;
        }
        if ((rc = pl__db_check(PL_DBI_ONTO, &k, &v, err)) < 0)
            break;
        while (next <= gene)
            ptr[next++] = n;
        if ((rc = pl__inc_decode(v.mv_data, v.mv_size - 8, limit, &vals, &cap, &n, kd, err)) <
            0)
            break;
    }
    mdb_cursor_close(cur);
    while (next <= G)
        ptr[next++] = n;
    h->gidx[kind - 1] = vals ? vals : malloc(sizeof *vals);
    if (rc < 0)
        return rc;
    PL_FAIL_IF(!h->gidx[kind - 1], err, -ENOMEM, "out of memory");
    PL_FAIL_IF(rc != MDB_NOTFOUND && rc != 0, err, pl__lmdb_code(rc), "%s: %s", db->path,
               mdb_strerror(rc));
    return 0;
}

/* Point the public arrays into the schedule buffer; checks its layout. */
static void lay_out(onto_handle *h, const struct pl__meta *m)
{
    pl_ontology *o = &h->pub;
    uint32_t *p = h->buf, T = (uint32_t)m->n_terms, G = m->n_term_groups;
    o->child_ptr = p, p += T + 1;
    o->child_idx = p, p += m->n_term_children;
    o->gene_ptr = p, p += T + 1;
    o->gene_idx = p, p += m->n_term_direct;
    o->n_term_genes = p, p += T;
    o->stratum = p, p += T;
    o->stratum_ptr = p, p += m->n_strata + 1;
    o->group_ptr = p, p += G + 1;
    o->group_n_genes = p, p += G;
    o->group_n_children = p, p += G;
    o->group_terms = p, p += T;
    o->ann_gene = p, p += m->n_term_ann;
    o->ann_term = p;
}

static int check(const pl_ontology *o, const struct pl__meta *m)
{
    uint32_t T = o->n_terms;
    if (!csr_ok(o->child_ptr, o->child_idx, T, m->n_term_children, T) ||
        !csr_ok(o->gene_ptr, o->gene_idx, T, m->n_term_direct, o->n_genes) || !strata_ok(o))
        return 0;
    for (uint32_t t = 0; t < T; t++)
        if (o->n_term_genes[t] > o->n_genes || o->n_term_genes[t] == 0)
            return 0;
    for (uint64_t i = 0; i < o->n_annotations; i++)
        if (o->ann_gene[i] >= o->n_genes || o->ann_term[i] >= T)
            return 0;
    for (uint32_t s = 0; s < o->n_strata; s++)
        if (o->stratum_ptr[s] > o->stratum_ptr[s + 1])
            return 0;
    for (uint32_t k = 0; k < o->n_groups; k++)
        if (o->group_ptr[k] > o->group_ptr[k + 1] || o->stratum_ptr[o->n_strata] != o->n_groups)
            return 0;
    return groups_ok(o);
}

PL_API int pl_ontology_load(pl_db *db, pl_ontology **out, pl_err *err)
{
    *out = NULL;
    const struct pl__meta *m = &db->meta;
    PL_FAIL_IF(m->n_terms == 0, err, -ENOENT, "%s: the database has no ontology", db->path);
    onto_handle *h = calloc(1, sizeof *h);
    PL_FAIL_IF(!h, err, -ENOMEM, "out of memory");
    pl_ontology *o = &h->pub;
    o->n_terms = (uint32_t)m->n_terms;
    o->n_strata = m->n_strata;
    o->n_groups = m->n_term_groups;
    o->n_genes = (uint32_t)m->n_genes;
    o->n_annotations = m->n_term_ann;
    uint64_t T = m->n_terms, G = m->n_term_groups;
    uint64_t words = 2 * (T + 1) + m->n_term_children + m->n_term_direct + 3 * T +
                     m->n_strata + 1 + G + 1 + 2 * G + 2 * m->n_term_ann;
    const void *v;
    size_t len;
    int rc = pl__db_get(db->txn, db->dbi[PL_DBI_ONTO], PL_DBI_ONTO, "terms", 5, &v, &len, err);
    if (rc == -ENOENT)
        rc = pl__err(err, PL_ECORRUPT, "key onto/terms missing");
    if (rc == 0)
        rc = pl__names_split("onto/terms", v, len, T, &h->names, err);
    if (rc == 0) {
        o->term_names = h->names;
        rc = pl__db_get_zstd(db->txn, db->dbi[PL_DBI_ONTO], PL_DBI_ONTO, "schedule", 8,
                             4 * words, (void **)&h->buf, err);
        if (rc == -ENOENT)
            rc = pl__err(err, PL_ECORRUPT, "key onto/schedule missing");
    }
    if (rc == 0) {
        lay_out(h, m);
        int ok = check(o, m);
        if (ok < 0)
            rc = pl__err(err, -ENOMEM, "out of memory");
        else if (!ok)
            rc = pl__err(err, PL_ECORRUPT, "key onto/schedule: inconsistent arrays");
    }
    if (rc == 0)
        rc = load_gene_sets(db, h, PL_ONTO_KIND_TERM, T, err);
    if (rc == 0)
        rc = load_gene_sets(db, h, PL_ONTO_KIND_ANN, m->n_term_ann, err);
    if (rc < 0) {
        pl_ontology_free(o);
        return rc;
    }
    o->gene_term_ptr = h->gptr[0];
    o->gene_term_idx = h->gidx[0];
    o->gene_ann_ptr = h->gptr[1];
    o->gene_ann_idx = h->gidx[1];
    *out = o;
    return 0;
}

PL_API void pl_ontology_free(pl_ontology *o)
{
    onto_handle *h = (onto_handle *)o;
    if (!h)
        return;
    free(h->buf);
    free(h->names);
    for (int k = 0; k < 2; k++) {
        free(h->gptr[k]);
        free(h->gidx[k]);
    }
    free(h);
}

/* out[0..u) and l[0..nl), both ascending without duplicates, merged in place
 * from the back (room for u + nl); returns the size of the union. */
static uint64_t merge_into(uint32_t *out, uint64_t u, const uint32_t *l, uint64_t nl)
{
    uint64_t w = u + nl, i = u, j = nl;
    while (j > 0) {
        if (i > 0 && out[i - 1] > l[j - 1]) {
            out[--w] = out[--i];
        } else {
            if (i > 0 && out[i - 1] == l[j - 1])
                i--;
            out[--w] = l[--j];
        }
    }
    /* out[0..i) is in place; the merged rest starts at w >= i */
    if (w != i)
        memmove(out + i, out + w, (u + nl - w) * sizeof *out);
    return i + (u + nl - w);
}

/* Union of the genes' runs of one CSR into `out` (room for `limit`, the
 * position count): merges while the runs fit, else a mark per position. */
static int union_of(const uint64_t *ptr, const uint32_t *idx, const int32_t *genes, uint32_t n,
                    uint64_t limit, uint32_t *out, uint64_t *n_out)
{
    uint64_t u = 0, i = 0;
    for (; i < n; i++) {
        uint64_t a = ptr[genes[i]], nl = ptr[genes[i] + 1] - a;
        if (u + nl > limit)
            break;
        u = merge_into(out, u, idx + a, nl);
    }
    if (i < n) {
        uint8_t *mark = calloc(limit ? limit : 1, 1);
        if (!mark)
            return -ENOMEM;
        for (uint64_t k = 0; k < u; k++)
            mark[out[k]] = 1;
        for (; i < n; i++)
            for (uint64_t j = ptr[genes[i]]; j < ptr[genes[i] + 1]; j++)
                mark[idx[j]] = 1;
        u = 0;
        for (uint64_t p = 0; p < limit; p++)
            if (mark[p])
                out[u++] = (uint32_t)p;
        free(mark);
    }
    *n_out = u;
    return 0;
}

PL_API int pl_ontology_removed(const pl_ontology *o, const int32_t *genes, uint32_t n,
                               uint32_t *terms, uint32_t *n_out_terms, uint32_t *ann,
                               uint64_t *n_out_ann)
{
    for (uint32_t i = 0; i < n; i++)
        if (genes[i] < 0 || (uint32_t)genes[i] >= o->n_genes)
            return PL_ERANGE;
    uint64_t nt;
    PL_TRY(union_of(o->gene_term_ptr, o->gene_term_idx, genes, n, o->n_terms, terms, &nt));
    *n_out_terms = (uint32_t)nt;
    return union_of(o->gene_ann_ptr, o->gene_ann_idx, genes, n, o->n_annotations, ann,
                    n_out_ann);
}
