/* Damaged databases, the values stored in data.mdb: every checksum
 * pl_db_open, pl_db_verify and pl_graph_load rely on for incidence bitmaps,
 * edge arrays, metadata and names catches a flipped byte and names the key
 * involved; a value with a valid checksum that says something wrong (a
 * fingerprint, a format version, an index out of range) is refused too. Each
 * case damages its own copy of one pristine database built from small inputs
 * (tests/corruption_fx.h; the files as a whole are test_corruption.c's), and
 * records the damaged data.mdb's checksum again (reseal) so that the check
 * reached is the value's own. */
#include <criterion/criterion.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corruption_fx.h"
#include "pertload.h"
#include "src/core/checksum.h"
#include "src/core/dbformat.h"

TestSuite(corruption, .init = cx_init, .fini = cx_fini, .timeout = 120);

/* ---------------------------------------------------- incidence bitmaps */

/* Damage the bitmap of the first gene that has one in list kind `kind`. */
static void incidence_case(uint32_t kind)
{
    unsigned char key[6];
    size_t len = 0;
    void *v = NULL;
    uint32_t g;
    for (g = 0; g < N_GENES && !v; g++) {
        pl__inc_key(key, kind, g);
        v = lmdb_value(PL_DBI_INC, key, 6, &len);
    }
    cr_assert_not_null(v, "no bitmap of kind %u", kind);
    g--;
    cr_assert_gt(len, 8);
    uint64_t off = find_unique(v, len);
    free(v);
    flip(PL_FILE_LMDB, off + (len - 8) / 2);

    char want[64];
    snprintf(want, sizeof want, "inc/kind %u/gene %u", kind, g);
    pl_db *db = open_bad();
    expect_verify_fails(db, want);
    expect_graph_fails(db, want);
    pl_db_close(db);
}

Test(corruption, incidence_bitmap_edge_type) { incidence_case(0); }

/* A bitmap whose key is altered (LMDB stores the key just before the value):
 * the trailer is seeded by the key, so the value no longer matches it. */
Test(corruption, incidence_key_renamed)
{
    unsigned char key[6];
    size_t len = 0;
    void *v = NULL;
    uint32_t g;
    for (g = 0; g < N_GENES && !v; g++) {
        pl__inc_key(key, 0, g);
        v = lmdb_value(PL_DBI_INC, key, 6, &len);
    }
    cr_assert_not_null(v);
    g--;
    uint64_t off = find_unique(v, len);
    free(v);
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    unsigned char stored[6];
    read_at(p, off - 6, stored, 6);
    cr_assert_eq(memcmp(stored, key, 6), 0, "the key is not stored just before its value");
    flip_mask(PL_FILE_LMDB, off - 1, 0x10); /* gene g -> g ^ 16 */
    char want[64];
    snprintf(want, sizeof want, "inc/kind 0/gene %u", g ^ 16);
    pl_db *db = open_bad();
    expect_verify_fails(db, want);
    pl_graph *gr = NULL;
    pl_err err = {0};
    int rc = pl_graph_load(db, &gr, &err);
    pl_graph_free(rc == 0 ? gr : NULL);
    cr_expect_eq(rc, PL_ECORRUPT, "pl_graph_load: rc %d (%s): %s", rc, pl_errname(rc),
                 err.msg);
    pl_db_close(db);
}

Test(corruption, incidence_bitmap_second_edge_type) { incidence_case(1); }

/* RMR positions are not stored per gene (each gene would repeat those of all
 * its reactions): the masks engine reads them from the RMR edge array, and
 * reports its damage by key. */
Test(corruption, rmr_array)
{
    unsigned char key[6];
    size_t len;
    for (uint32_t g = 0; g < N_GENES; g++) {
        pl__inc_key(key, 2 + PL_LIST_RMR, g);
        cr_assert_null(lmdb_value(PL_DBI_INC, key, 6, &len), "gene %u has an RMR bitmap", g);
    }
    uint64_t off = locate(PL_DBI_EDGES, "rmr", 3, &len);
    flip(PL_FILE_LMDB, off + (len - 8) / 2);
    pl_db *db = open_bad();
    expect_verify_fails(db, "key edges/rmr: checksum mismatch");
    expect_graph_fails(db, "key edges/rmr: checksum mismatch");
    pl_db_close(db);
}

/* An RMR edge array with a valid checksum whose reaction index is out of
 * range (as a buggy writer could store it): the engine indexes reactions by
 * it, so pl_graph_load refuses it, naming the key and the edge. */
Test(corruption, rmr_reaction_out_of_range)
{
    pl_db *db;
    pl_err err = {0};
    cr_assert_eq(pl_db_open(C.good, &db, &err), 0, "%s", err.msg);
    const pl_db_info *in = pl_db_info_get(db);
    uint64_t n = in->n_rmr, R = in->n_reactions;
    pl_db_close(db);
    cr_assert_gt(n, 3);
    int32_t *arr = calloc(3 * n, 4);
    cr_assert_not_null(arr);
    for (uint64_t i = 0; i < n; i++)
        arr[i] = (int32_t)(i % R);
    arr[3] = (int32_t)R;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi h;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, PL_DBI_COUNT);
    mdb_env_set_mapsize(env, (size_t)1 << 30);
    int rc = mdb_env_open(env, C.bad, MDB_NOLOCK, 0644);
    cr_assert_eq(rc, 0, "mdb_env_open: %s", mdb_strerror(rc));
    cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    cr_assert_eq(mdb_dbi_open(txn, pl__dbi_names[PL_DBI_EDGES], 0, &h), 0);
    rc = pl__db_put_zstd(txn, h, PL_DBI_EDGES, "rmr", 3, arr, 12 * n, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    free(arr);
    reseal();
    db = open_bad();
    expect_verify_fails(db, "key edges/rmr: index out of range");
    pl_graph *gr = NULL;
    rc = pl_graph_load(db, &gr, &err);
    pl_graph_free(rc == 0 ? gr : NULL);
    cr_expect_eq(rc, PL_ECORRUPT, "pl_graph_load: rc %d (%s): %s", rc, pl_errname(rc),
                 err.msg);
    char want[96];
    snprintf(want, sizeof want, "key edges/rmr: RMR edge 3 has reaction index %llu, out of "
             "range", (unsigned long long)R);
    expect_msg(&err, want);
    pl_db_close(db);
}

/* ------------------------------------------------------- edge arrays */

Test(corruption, edge_array)
{
    unsigned char key[2];
    pl__edges_key(key, 1);
    size_t len;
    uint64_t off = locate(PL_DBI_EDGES, key, 2, &len);
    flip(PL_FILE_LMDB, off + (len - 8) / 2);
    pl_db *db = open_bad();
    expect_verify_fails(db, "key edges/type 1: checksum mismatch");
    pl_db_close(db);
}

Test(corruption, gpr_array_trailer)
{
    size_t len;
    uint64_t off = locate(PL_DBI_EDGES, "gpr", 3, &len);
    flip(PL_FILE_LMDB, off + len - 1); /* the checksum itself */
    pl_db *db = open_bad();
    expect_verify_fails(db, "key edges/gpr: checksum mismatch");
    pl_db_close(db);
}

/* ---------------------------------------------------------- metadata */

Test(corruption, format_version)
{
    size_t len;
    uint64_t off = locate(PL_DBI_META, "meta", 4, &len);
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    char magic[8];
    read_at(p, off, magic, 8);
    cr_assert_eq(memcmp(magic, PL_META_MAGIC, 8), 0);
    uint32_t v;
    read_at(p, off + 8, &v, 4);
    cr_assert_eq(v, PL_FORMAT_VERSION);
    v = PL_FORMAT_VERSION + 1;
    write_at(p, off + 8, &v, 4);
    reseal();
    char want[64];
    snprintf(want, sizeof want, "format version %u", PL_FORMAT_VERSION + 1);
    expect_open_fails(PL_EFORMAT, want);
    snprintf(want, sizeof want, "reads version %u", PL_FORMAT_VERSION);
    expect_open_fails(PL_EFORMAT, want);
}

/* A database of the previous format: version 6 had no category store (its
 * categories were float labels). Its sub-database "cats" dropped and its
 * version set back, it is refused as of another version, not as damaged. */
Test(corruption, previous_format_without_the_category_store)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi h;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, PL_DBI_COUNT);
    int rc = mdb_env_open(env, C.bad, MDB_NOLOCK, 0644);
    cr_assert_eq(rc, 0, "mdb_env_open: %s", mdb_strerror(rc));
    cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    cr_assert_eq(mdb_dbi_open(txn, pl__dbi_names[PL_DBI_CATS], 0, &h), 0);
    cr_assert_eq(mdb_drop(txn, h, 1), 0);
    MDB_val k = {4, "meta"}, v;
    cr_assert_eq(mdb_dbi_open(txn, pl__dbi_names[PL_DBI_META], 0, &h), 0);
    cr_assert_eq(mdb_get(txn, h, &k, &v), 0);
    char *meta = malloc(v.mv_size);
    cr_assert_not_null(meta);
    memcpy(meta, v.mv_data, v.mv_size);
    uint32_t old = 6;
    memcpy(meta + 8, &old, 4);
    MDB_val nv = {v.mv_size, meta};
    cr_assert_eq(mdb_put(txn, h, &k, &nv, 0), 0);
    free(meta);
    cr_assert_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    char lock[4352];
    bad_path(lock, sizeof lock, "lock.mdb");
    unlink(lock);
    reseal();
    expect_open_fails(PL_EFORMAT, "database format version 6; this pertload reads version 7 "
                                  "(rebuild the database)");
}

/* Rewrite meta/meta through `edit`, with a valid trailer (and reseal): only
 * what the record says is wrong. */
static void edit_meta(void (*edit)(struct pl__meta *))
{
    size_t len;
    uint64_t off = locate(PL_DBI_META, "meta", 4, &len);
    cr_assert_eq(len, sizeof(struct pl__meta) + 8);
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    struct pl__meta m;
    read_at(p, off, &m, sizeof m);
    edit(&m);
    uint64_t sum = pl__xxh64(&m, sizeof m, pl__xxh64("meta", 4, 0));
    write_at(p, off, &m, sizeof m);
    write_at(p, off + sizeof m, &sum, 8);
    reseal();
}

static void bump_gene_fingerprint(struct pl__meta *m) { m->gene_fingerprint++; }
static void bump_edge_fingerprint(struct pl__meta *m) { m->edge_fingerprint[1] ^= 1; }

Test(corruption, gene_fingerprint)
{
    edit_meta(bump_gene_fingerprint);
    expect_open_fails(PL_ECORRUPT, "of key meta/meta is not that of the stored gene names");
}

Test(corruption, edge_fingerprint)
{
    edit_meta(bump_edge_fingerprint);
    pl_db *db = open_bad();
    expect_verify_fails(db, "key edges/type 1: the arrays' fingerprint");
    pl_db_close(db);
}

Test(corruption, meta_value)
{
    value_open_fails(PL_DBI_META, "meta", 16 /* n_genes */, "key meta/meta: checksum mismatch");
}

Test(corruption, meta_magic)
{
    value_open_fails(PL_DBI_META, "meta", 2, "meta/meta");
}

Test(corruption, block_index)
{
    value_open_fails(PL_DBI_META, "blocks", sizeof(struct pl__block_entry) + 4,
                     "key meta/blocks: checksum mismatch");
}

Test(corruption, params_value)
{
    value_open_fails(PL_DBI_META, "params", 1, "key meta/params: checksum mismatch");
}

Test(corruption, gene_names)
{
    value_open_fails(PL_DBI_NAMES, "genes", 1, "key names/genes: checksum mismatch");
}

Test(corruption, type_names)
{
    value_open_fails(PL_DBI_NAMES, "types", 3, "key names/types: checksum mismatch");
}
