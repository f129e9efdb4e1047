/* pl_build: data.mdb from the builder's arrays (names, edge arrays, GPR,
 * RMR, rules, incidence bitmaps, metadata). */
#include <errno.h>
#include <roaring/roaring.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/checksum.h"
#include "src/core/fileio.h"
#include "src/core/vec.h"

#include "builder.h"

/* --------------------------------------------------------------- incidence */

/* CSR over `keys` rows of n items: row a[i] (and b[i] when b and b[i] != a[i])
 * receives vals[i] (or i). Rows come out in item order. */
static int csr_build(builder *b, uint64_t keys, const int32_t *a, const int32_t *bb,
                     const int32_t *vals, uint64_t n, csr *out)
{
    out->off = calloc(keys + 1, sizeof *out->off);
    if (!out->off)
        return NOMEM(b);
    for (uint64_t i = 0; i < n; i++) {
        out->off[a[i] + 1]++;
        if (bb && bb[i] != a[i])
            out->off[bb[i] + 1]++;
    }
    for (uint64_t k = 0; k < keys; k++)
        out->off[k + 1] += out->off[k];
    out->val = malloc((out->off[keys] ? out->off[keys] : 1) * sizeof *out->val);
    uint64_t *pos = malloc((keys ? keys : 1) * sizeof *pos);
    if (!out->val || !pos) {
        free(pos);
        return NOMEM(b);
    }
    memcpy(pos, out->off, keys * sizeof *pos);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t v = vals ? (uint32_t)vals[i] : (uint32_t)i;
        out->val[pos[a[i]]++] = v;
        if (bb && bb[i] != a[i])
            out->val[pos[bb[i]]++] = v;
    }
    free(pos);
    return 0;
}

static void csr_free(csr *c)
{
    free(c->off);
    free(c->val);
    c->off = NULL;
    c->val = NULL;
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* Sort each row and drop repeated values, compacting in place. */
static void csr_sort_unique(csr *c, uint64_t keys)
{
    uint64_t w = 0;
    for (uint64_t k = 0; k < keys; k++) {
        uint64_t s = c->off[k], e = c->off[k + 1];
        if (e > s)
            qsort(c->val + s, e - s, sizeof *c->val, cmp_u32);
        c->off[k] = w;
        for (uint64_t i = s; i < e; i++)
            if (i == s || c->val[i] != c->val[i - 1])
                c->val[w++] = c->val[i];
    }
    c->off[keys] = w;
}

/* Store row g of `c` as the roaring bitmap inc/<kind>/<g>, for every gene. */
static int put_incidence(builder *b, uint32_t kind, const csr *c)
{
    for (uint64_t g = 0; g < b->n_genes; g++) {
        uint64_t n = c->off[g + 1] - c->off[g];
        if (n == 0)
            continue;
        roaring_bitmap_t *r = roaring_bitmap_of_ptr(n, c->val + c->off[g]);
        if (!r)
            return NOMEM(b);
        roaring_bitmap_run_optimize(r);
        size_t sz = roaring_bitmap_portable_size_in_bytes(r);
        if (pl__grow(&b->ser, &b->ser_cap, sz, 1) < 0) {
            roaring_bitmap_free(r);
            return NOMEM(b);
        }
        roaring_bitmap_portable_serialize(r, b->ser);
        roaring_bitmap_free(r);
        unsigned char key[6];
        pl__inc_key(key, kind, (uint32_t)g);
        PL_TRY(pl__db_put(b->txn, b->dbi[PL_DBI_INC], PL_DBI_INC, key, 6, b->ser, sz,
                          MDB_APPEND, b->err));
    }
    return 0;
}

/* GPR positions and reactions of every gene. RMR positions are not stored per
 * gene: a reaction shared by many genes would repeat them in each gene's
 * bitmap; the masks engine takes them from the RMR edge array by reaction. */
static int put_metabolic_incidence(builder *b)
{
    uint32_t T = b->meta.n_types;
    csr gpr = {0}, rxn = {0};
    int rc = csr_build(b, b->n_genes, b->gpr_gene, NULL, NULL, b->n_gpr, &gpr);
    if (rc == 0)
        rc = put_incidence(b, T + PL_LIST_GPR, &gpr);
    if (rc == 0)
        rc = csr_build(b, b->n_genes, b->gpr_gene, NULL, b->gpr_rxn, b->n_gpr, &rxn);
    if (rc == 0) {
        csr_sort_unique(&rxn, b->n_genes);
        rc = put_incidence(b, T + PL_LIST_REACTION, &rxn);
    }
    csr_free(&gpr);
    csr_free(&rxn);
    return rc;
}

/* ------------------------------------------------------------------- LMDB */

static int put_names(builder *b, const char *key, char *const *names, uint64_t n)
{
    size_t len = 0;
    for (uint64_t i = 0; i < n; i++)
        len += strlen(names[i]) + 1;
    char *blob = malloc(len ? len : 1), *p = blob;
    if (!blob)
        return NOMEM(b);
    for (uint64_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]) + 1;
        memcpy(p, names[i], l);
        p += l;
    }
    if (!strcmp(key, "genes"))
        b->meta.gene_fingerprint = pl__xxh64(blob, len, 0);
    int rc = pl__db_put(b->txn, b->dbi[PL_DBI_NAMES], PL_DBI_NAMES, key, strlen(key), blob,
                        len, 0, b->err);
    free(blob);
    return rc;
}

/* Concatenate `k` int32/float arrays of n elements into one zstd value. */
static int put_arrays(builder *b, const void *key, size_t klen, const void *const *arrs,
                      int k, uint64_t n, uint64_t *fingerprint)
{
    char *buf = malloc(4 * n * (uint64_t)k + 1);
    if (!buf)
        return NOMEM(b);
    for (int i = 0; i < k && n > 0; i++)
        memcpy(buf + 4 * n * (uint64_t)i, arrs[i], 4 * n);
    if (fingerprint)
        *fingerprint = pl__xxh64(buf, 4 * n * (uint64_t)k, 0);
    int rc = pl__db_put_zstd(b->txn, b->dbi[PL_DBI_EDGES], PL_DBI_EDGES, key, klen, buf,
                             4 * n * (uint64_t)k, b->err);
    free(buf);
    return rc;
}

/* The recipe's texts (build_input.h), when the build has them. */
static int put_texts(builder *b)
{
    const pl__build_input *in = b->in;
    if (!in)
        return 0;
    const char *keys[3] = {"recipe", "inputs", "sources"};
    const char *vals[3] = {in->recipe, in->inputs, in->sources};
    size_t lens[3] = {in->recipe_len, 0, 0};
    for (int i = 0; i < 3; i++) {
        if (!vals[i])
            continue;
        size_t len = i == 0 ? lens[0] : strlen(vals[i]);
        char *v = malloc(len + 1);
        if (!v)
            return NOMEM(b);
        memcpy(v, vals[i], len);
        v[len] = '\0';
        int rc = pl__db_put(b->txn, b->dbi[PL_DBI_META], PL_DBI_META, keys[i], strlen(keys[i]),
                            v, len + 1, 0, b->err);
        free(v);
        PL_TRY(rc);
    }
    return 0;
}

int pl__build_write_lmdb(builder *b, const chunker *payload)
{
    char p[4096];
    int rc = mdb_env_create(&b->env);
    PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: %s", b->tmp.path, mdb_strerror(rc));
    mdb_env_set_maxdbs(b->env, PL_DBI_COUNT);
    mdb_env_set_mapsize(b->env, PL_DB_MAPSIZE);
    rc = mdb_env_open(b->env, b->tmp.path, MDB_NOSYNC, 0644);
    PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: %s",
               pl__path_join(p, sizeof p, b->tmp.path, PL_FILE_LMDB), mdb_strerror(rc));
    rc = mdb_txn_begin(b->env, NULL, 0, &b->txn);
    PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: %s", b->tmp.path, mdb_strerror(rc));
    for (int i = 0; i < PL_DBI_COUNT; i++) {
        rc = mdb_dbi_open(b->txn, pl__dbi_names[i], MDB_CREATE, &b->dbi[i]);
        PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: %s", b->tmp.path, mdb_strerror(rc));
    }
    struct pl__meta *m = &b->meta;
    PL_TRY(put_names(b, "genes", b->genes.names, b->n_genes));
    PL_TRY(put_names(b, "types", (char *const *)b->o->type_names, m->n_types));
    PL_TRY(put_names(b, "labels", b->label_names, b->n_labels));
    if (m->has_metabolism) {
        PL_TRY(put_names(b, "reactions", b->reactions.names, b->reactions.n));
        PL_TRY(put_names(b, "metabolites", b->metabolites.names, b->metabolites.n));
    }
    for (uint32_t t = 0; t < m->n_types; t++) {
        unsigned char key[2];
        pl__edges_key(key, t);
        const void *arrs[2] = {b->src[t], b->dst[t]};
        PL_TRY(put_arrays(b, key, 2, arrs, 2, b->n_edges[t], &m->edge_fingerprint[t]));
    }
    if (m->has_metabolism) {
        const void *gpr[2] = {b->gpr_gene, b->gpr_rxn};
        const void *rmr[3] = {b->rmr_rxn, b->rmr_met, b->rmr_stoich};
        PL_TRY(put_arrays(b, "gpr", 3, gpr, 2, b->n_gpr, NULL));
        PL_TRY(put_arrays(b, "rmr", 3, rmr, 3, b->n_rmr, NULL));
        PL_TRY(pl__ruleset_put(b->rs, b->txn, b->dbi[PL_DBI_EDGES], m, b->err));
    }
    for (uint32_t t = 0; t < m->n_types; t++) {
        csr c;
        rc = csr_build(b, b->n_genes, b->src[t], b->dst[t], NULL, b->n_edges[t], &c);
        if (rc == 0)
            rc = put_incidence(b, t, &c);
        csr_free(&c);
        PL_TRY(rc);
    }
    if (m->has_metabolism)
        PL_TRY(put_metabolic_incidence(b));
    PL_TRY(pl__onto_put(b->txn, b->dbi[PL_DBI_ONTO], b->on, m, b->err));
    PL_TRY(pl__build_put_features(b));
    PL_TRY(pl__build_cats_put(b));
    MDB_dbi meta = b->dbi[PL_DBI_META];
    PL_TRY(pl__db_put(b->txn, meta, PL_DBI_META, "blocks", 6, b->sw.index,
                      b->sw.n_blocks * sizeof *b->sw.index, 0, b->err));
    PL_TRY(pl__db_put(b->txn, meta, PL_DBI_META, "meta", 4, m, sizeof *m, 0, b->err));
    const char *params = b->o->params ? b->o->params : "";
    PL_TRY(pl__db_put(b->txn, meta, PL_DBI_META, "params", 6, params, strlen(params) + 1, 0,
                      b->err));
    PL_TRY(put_texts(b));
    if (m->payload_dtype[0])
        PL_TRY(pl__db_put(b->txn, meta, PL_DBI_META, "payload", 7, payload->sums,
                          payload->n_sums * 8, 0, b->err));
    /* The pages reach data.mdb here: a full file system or the file size
     * limit shows as EIO from LMDB (a short write), said plainly. */
    char why[256];
    rc = mdb_txn_commit(b->txn);
    b->txn = NULL;
    pl__path_join(p, sizeof p, b->tmp.path, PL_FILE_LMDB);
    if (rc > 0 && rc < 4096)
        return pl__err(b->err, pl__write_error(p, rc, why, sizeof why), "%s: commit: %s", p,
                       why);
    PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: commit: %s", p, mdb_strerror(rc));
    rc = mdb_env_sync(b->env, 1);
    if (rc > 0 && rc < 4096)
        return pl__err(b->err, pl__write_error(p, rc, why, sizeof why), "%s: sync: %s", p,
                       why);
    PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: sync: %s", p, mdb_strerror(rc));
    mdb_env_close(b->env);
    b->env = NULL;
    unlink(pl__path_join(p, sizeof p, b->tmp.path, "lock.mdb"));
    return 0;
}

