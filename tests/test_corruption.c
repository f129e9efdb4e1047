/* Damaged databases: every checksum pl_db_open, pl_db_verify, pl_db_sample
 * and pl_graph_load rely on catches a flipped byte, names the key, block or
 * chunk involved, and never crashes. Each case damages its own copy of one
 * pristine database built from small inputs.
 *
 * The sample store's header records the checksum of the whole of data.mdb,
 * which catches any change to it at open. To reach the finer checks behind
 * it (value trailers, sizes), the cases that damage data.mdb record the
 * damaged file's checksum again (reseal) unless they test that check. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pertload.h"
#include "src/core/checksum.h"
#include "src/core/dbformat.h"
#include "src/core/sstore.h"
#include "testutil.h"

#define N_GENES 20
#define N_SAMPLES 3000
#define PAYLOAD_COLS 100

typedef struct cx {
    char *dir;
    char good[4096], bad[4096];
    uint64_t ids[N_SAMPLES]; /* pristine sample ids */
} cx;

static cx C;

static void join(char *buf, size_t cap, const char *dir, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

/* Build the pristine database: 20 genes, two edge types (TSV and .npy),
 * metabolism, 3000 samples (three sample-store blocks), a 1.2 MB payload
 * (two payload chunks). */
static void build_pristine(void)
{
    uint64_t s = 7;
    pl_test_text t = {0};
    pl_test_inputs in = {.dir = C.dir};
    for (int g = 0; g < N_GENES; g++)
        pl_test_tprintf(&t, "g%d\n", g);
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
    for (int e = 0; e < 40; e++)
        pl_test_tprintf(&t, "g%d\tg%d\t%.3f\n", (int)pl_test_below(&s, N_GENES),
                        (int)pl_test_below(&s, N_GENES), (double)pl_test_below(&s, 1000) / 1000);
    pl_test_inputs_edges(&in, "physical", pl_test_inputs_text(&in, "physical.tsv", &t));
    int64_t reg[2][30];
    for (int e = 0; e < 30; e++) {
        reg[0][e] = (int64_t)pl_test_below(&s, N_GENES);
        reg[1][e] = (int64_t)pl_test_below(&s, N_GENES);
    }
    pl_test_inputs_edges(&in, "regulatory",
                         pl_test_inputs_npy(&in, "regulatory.npy", "<i8", "(2, 30)", reg,
                                            sizeof reg));
    for (int r = 0; r < 6; r++)
        pl_test_tprintf(&t, "r%d\n", r);
    in.o.reactions = pl_test_inputs_text(&in, "reactions.txt", &t);
    for (int i = 0; i < 10; i++)
        pl_test_tprintf(&t, "g%d\tr%d\n", (int)pl_test_below(&s, N_GENES),
                        (int)pl_test_below(&s, 6));
    in.o.gpr = pl_test_inputs_text(&in, "gpr.tsv", &t);
    for (int i = 0; i < 12; i++)
        pl_test_tprintf(&t, "r%d\tm%d\t%d\n", (int)pl_test_below(&s, 6),
                        (int)pl_test_below(&s, 8), (int)pl_test_below(&s, 5) - 2);
    in.o.rmr = pl_test_inputs_text(&in, "rmr.tsv", &t);
    pl_test_tprintf(&t, "genes\tid\tfitness\tgrowth\n");
    for (int r = 0; r < N_SAMPLES; r++) {
        int k = 1 + (int)pl_test_below(&s, 3);
        for (int i = 0; i < k; i++)
            pl_test_tprintf(&t, "%sg%d", i ? ";" : "", (int)pl_test_below(&s, N_GENES));
        pl_test_tprintf(&t, "\t%d\t%.4f\t", 1000 + r,
                        (double)pl_test_below(&s, 10000) / 10000);
        if (r % 7 == 0)
            pl_test_tprintf(&t, "NA\n");
        else
            pl_test_tprintf(&t, "%.3f\n", (double)pl_test_below(&s, 1000) / 100);
    }
    in.o.samples = pl_test_inputs_text(&in, "samples.tsv", &t);
    float *pay = malloc(sizeof(float) * N_SAMPLES * PAYLOAD_COLS);
    cr_assert_not_null(pay);
    for (size_t i = 0; i < (size_t)N_SAMPLES * PAYLOAD_COLS; i++)
        pay[i] = (float)pl_test_below(&s, 1u << 20) / 1024.0f;
    char shape[64];
    snprintf(shape, sizeof shape, "(%d, %d)", N_SAMPLES, PAYLOAD_COLS);
    in.o.payload = pl_test_inputs_npy(&in, "payload.npy", "<f4", shape, pay,
                                      sizeof(float) * N_SAMPLES * PAYLOAD_COLS);
    free(pay);
    in.o.params = "corruption test";

    pl_err err = {0};
    pl_build_stats st;
    int rc = pl_test_inputs_build(&in, C.good, &st, &err);
    cr_assert_eq(rc, 0, "building the pristine database: %s", err.msg);
    cr_assert_eq(st.n_samples, N_SAMPLES);
    pl_test_inputs_free(&in);
}

/* Copy every file of the pristine database into C.bad. */
static void copy_db(void)
{
    int n = pl_test_copy_dir(C.good, C.bad);
    cr_assert_eq(n, 3, "expected data.mdb, samples.pls and payload.npy, found %d files", n);
}

static void cx_init(void)
{
    memset(&C, 0, sizeof C);
    C.dir = pl_test_tmpdir();
    join(C.good, sizeof C.good, C.dir, "good");
    join(C.bad, sizeof C.bad, C.dir, "bad");
    build_pristine();
    pl_db *db;
    pl_err err = {0};
    cr_assert_eq(pl_db_open(C.good, &db, &err), 0, "%s", err.msg);
    for (uint64_t r = 0; r < N_SAMPLES; r++) {
        pl_sample s;
        cr_assert_eq(pl_db_sample(db, r, &s, &err), 0, "%s", err.msg);
        C.ids[r] = s.id;
    }
    pl_db_close(db);
    copy_db();
}

static void cx_fini(void)
{
    if (C.dir)
        pl_test_rmtree(C.dir);
    free(C.dir);
    memset(&C, 0, sizeof C);
}

TestSuite(corruption, .init = cx_init, .fini = cx_fini, .timeout = 120);

/* ------------------------------------------------------------ helpers */

static void bad_path(char *buf, size_t cap, const char *file) { join(buf, cap, C.bad, file); }

static uint64_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
    return (uint64_t)st.st_size;
}

static void read_at(const char *path, uint64_t off, void *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(pread(fd, buf, len, (off_t)off), (ssize_t)len);
    close(fd);
}

static void write_at(const char *path, uint64_t off, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
    cr_assert_eq(close(fd), 0);
}

/* Record the current size and checksum of C.bad/data.mdb in the header of
 * C.bad/samples.pls, as build does for a finished database. */
static void reseal(void)
{
    char s[4352], l[4352];
    bad_path(s, sizeof s, PL_FILE_SAMPLES);
    bad_path(l, sizeof l, PL_FILE_LMDB);
    pl_err err = {0};
    cr_assert_eq(pl__sstore_seal(s, l, &err), 0, "reseal: %s", err.msg);
}

/* XOR the byte at `off` of C.bad/file with `mask` (resealing data.mdb). */
static void flip_mask(const char *file, uint64_t off, unsigned char mask)
{
    char p[4352];
    bad_path(p, sizeof p, file);
    cr_assert_lt(off, file_size(p));
    pl_test_xor_byte(p, off, mask);
    if (!strcmp(file, PL_FILE_LMDB))
        reseal();
}

/* Invert every bit of the byte at `off` of C.bad/file. */
static void flip(const char *file, uint64_t off) { flip_mask(file, off, 0xFF); }

static void truncate_to(const char *file, uint64_t size)
{
    char p[4352];
    bad_path(p, sizeof p, file);
    cr_assert_eq(truncate(p, (off_t)size), 0, "%s: %s", p, strerror(errno));
    if (!strcmp(file, PL_FILE_LMDB))
        reseal();
}

/* The stored bytes (value and checksum trailer) of `key` in sub-database
 * `dbi` of the pristine database, read through LMDB; NULL when absent. */
static void *lmdb_value(int dbi, const void *key, size_t klen, size_t *len)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi h;
    cr_assert_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, PL_DBI_COUNT);
    int rc = mdb_env_open(env, C.good, MDB_RDONLY | MDB_NOLOCK, 0644);
    cr_assert_eq(rc, 0, "mdb_env_open: %s", mdb_strerror(rc));
    cr_assert_eq(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    cr_assert_eq(mdb_dbi_open(txn, pl__dbi_names[dbi], 0, &h), 0);
    MDB_val k = {klen, (void *)key}, v;
    void *copy = NULL;
    rc = mdb_get(txn, h, &k, &v);
    if (rc == 0) {
        copy = malloc(v.mv_size);
        cr_assert_not_null(copy);
        memcpy(copy, v.mv_data, v.mv_size);
        *len = v.mv_size;
    } else {
        cr_assert_eq(rc, MDB_NOTFOUND, "mdb_get: %s", mdb_strerror(rc));
    }
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return copy;
}

/* Offset in C.bad/data.mdb of the one occurrence of `needle`. */
static uint64_t find_unique(const void *needle, size_t n)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    uint64_t size = file_size(p);
    char *buf = malloc(size);
    cr_assert_not_null(buf);
    read_at(p, 0, buf, size);
    const char *hit = memmem(buf, size, needle, n);
    cr_assert_not_null(hit, "value bytes not found in %s", p);
    uint64_t off = (uint64_t)(hit - buf);
    cr_assert_null(memmem(hit + 1, size - off - 1, needle, n), "value bytes not unique");
    free(buf);
    return off;
}

/* File offset and stored length (trailer included) of a value. */
static uint64_t locate(int dbi, const void *key, size_t klen, size_t *len)
{
    void *v = lmdb_value(dbi, key, klen, len);
    cr_assert_not_null(v, "key not found");
    uint64_t off = find_unique(v, *len);
    free(v);
    return off;
}

static void expect_msg(const pl_err *e, const char *want)
{
    cr_expect(strstr(e->msg, want) != NULL, "message '%s' lacks '%s'", e->msg, want);
}

static pl_db *open_bad(void)
{
    pl_db *db = NULL;
    pl_err err = {0};
    int rc = pl_db_open(C.bad, &db, &err);
    cr_assert_eq(rc, 0, "the damage should only show in deeper checks; open: %s", err.msg);
    return db;
}

/* pl_db_open(C.bad) fails with `code` (or any negative code when code is 0)
 * and a message containing `want`. */
static void expect_open_fails(int code, const char *want)
{
    pl_db *db = (pl_db *)&db;
    pl_err err = {0};
    int rc = pl_db_open(C.bad, &db, &err);
    if (rc == 0)
        pl_db_close(db);
    cr_assert_lt(rc, 0, "pl_db_open accepted the damaged database");
    if (code)
        cr_assert_eq(rc, code, "rc %d (%s), expected %s: %s", rc, pl_errname(rc),
                     pl_errname(code), err.msg);
    cr_expect_eq(err.code, rc);
    cr_expect_null(db, "the handle is not reset on failure");
    cr_expect_neq(err.msg[0], '\0', "no message");
    if (want)
        expect_msg(&err, want);
}

/* Flip byte `at` of the value of `key` in table `dbi` of the damaged copy's
 * data.mdb: pl_db_open() fails with PL_ECORRUPT and a message containing
 * `want`. */
static void value_open_fails(int dbi, const char *key, uint64_t at, const char *want)
{
    size_t len;
    uint64_t off = locate(dbi, key, strlen(key), &len);
    flip(PL_FILE_LMDB, off + at);
    expect_open_fails(PL_ECORRUPT, want);
}

/* pl_graph_load(db) fails with PL_ECORRUPT and a message containing `want`,
 * handing out no graph. */
static void expect_graph_fails(pl_db *db, const char *want)
{
    pl_graph *gr = (pl_graph *)&gr;
    pl_err err = {0};
    int rc = pl_graph_load(db, &gr, &err);
    if (rc == 0)
        pl_graph_free(gr);
    cr_expect_eq(rc, PL_ECORRUPT, "pl_graph_load: rc %d (%s): %s", rc, pl_errname(rc),
                 err.msg);
    cr_expect_null(rc == 0 ? NULL : gr);
    expect_msg(&err, want);
}

static void expect_verify_fails(pl_db *db, const char *want)
{
    pl_err err = {0};
    int rc = pl_db_verify(db, &err);
    cr_assert_eq(rc, PL_ECORRUPT, "pl_db_verify: rc %d (%s): %s", rc, pl_errname(rc),
                 err.msg);
    cr_expect_eq(err.code, PL_ECORRUPT);
    expect_msg(&err, want);
}

/* ------------------------------------------------------------- pristine */

Test(corruption, pristine_database_verifies)
{
    const char *dirs[2] = {C.good, C.bad};
    for (int i = 0; i < 2; i++) {
        pl_db *db;
        pl_err err = {0};
        cr_assert_eq(pl_db_open(dirs[i], &db, &err), 0, "%s", err.msg);
        const pl_db_info *in = pl_db_info_get(db);
        cr_expect_eq(in->n_samples, N_SAMPLES);
        cr_expect_eq(in->n_blocks, 3);
        cr_expect_eq(in->n_types, 2);
        cr_expect_eq(in->has_metabolism, 1);
        cr_expect_str_eq(in->payload_dtype, "<f4");
        cr_expect_eq(in->payload_row_bytes, 4 * PAYLOAD_COLS);
        cr_expect_gt(in->payload_bytes, PL_PAYLOAD_ALIGN + PL_PAYLOAD_CHUNK);
        cr_expect_eq(pl_db_verify(db, &err), 0, "%s: %s", dirs[i], err.msg);
        pl_graph *g = NULL;
        cr_expect_eq(pl_graph_load(db, &g, &err), 0, "%s", err.msg);
        if (g)
            cr_expect_eq(pl_graph_n_lists(g), 5);
        pl_graph_free(g);
        pl_db_close(db);
    }
}

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

/* ------------------------------------------------------- sample blocks */

struct blk {
    uint64_t offset;
    uint32_t comp_size, n_rows;
};

/* Block `b` of C.bad/samples.pls, walked through the block headers. */
static struct blk block_at(uint32_t b)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_SAMPLES);
    uint64_t off = PL_SSTORE_HEADER;
    for (uint32_t i = 0;; i++) {
        uint32_t h[4];
        read_at(p, off, h, sizeof h);
        cr_assert_eq(h[0], PL_BLOCK_MAGIC, "no block header at %llu", (unsigned long long)off);
        if (i == b)
            return (struct blk){off, h[1], h[3]};
        off += PL_BLOCK_HEADER + h[1];
    }
}

static void expect_rows(pl_db *db, const uint64_t *rows, int n)
{
    for (int i = 0; i < n; i++) {
        pl_sample s;
        pl_err err = {0};
        int rc = pl_db_sample(db, rows[i], &s, &err);
        cr_expect_eq(rc, 0, "row %llu: %s", (unsigned long long)rows[i], err.msg);
        if (rc == 0)
            cr_expect_eq(s.id, C.ids[rows[i]], "row %llu", (unsigned long long)rows[i]);
    }
}

static void expect_row_corrupt(pl_db *db, uint64_t row, const char *want)
{
    pl_sample s;
    pl_err err = {0};
    int rc = pl_db_sample(db, row, &s, &err);
    cr_expect_eq(rc, PL_ECORRUPT, "row %llu: rc %d (%s): %s", (unsigned long long)row, rc,
                 pl_errname(rc), err.msg);
    expect_msg(&err, want);
}

Test(corruption, sample_block_data)
{
    struct blk b0 = block_at(0), b1 = block_at(1);
    cr_assert_eq(b0.offset, PL_SSTORE_HEADER);
    cr_assert_eq(b1.n_rows, PL_BLOCK_ROWS);
    flip(PL_FILE_SAMPLES, b1.offset + PL_BLOCK_HEADER + b1.comp_size / 2);
    pl_db *db = open_bad();
    expect_verify_fails(db, "samples.pls: block 1: checksum mismatch");
    uint64_t good_before[] = {0, 1, PL_BLOCK_ROWS - 1};
    expect_rows(db, good_before, 3);
    expect_row_corrupt(db, PL_BLOCK_ROWS + 7, "block 1");
    uint64_t good_after[] = {2 * PL_BLOCK_ROWS, N_SAMPLES - 1, 5};
    expect_rows(db, good_after, 3);
    expect_row_corrupt(db, 2 * PL_BLOCK_ROWS - 1, "block 1");
    expect_row_corrupt(db, PL_BLOCK_ROWS, "block 1");
    pl_db_close(db);
}

Test(corruption, sample_block_first_byte)
{
    struct blk b0 = block_at(0);
    flip(PL_FILE_SAMPLES, b0.offset + PL_BLOCK_HEADER);
    pl_db *db = open_bad();
    expect_verify_fails(db, "block 0");
    expect_row_corrupt(db, 3, "block 0");
    uint64_t ok[] = {PL_BLOCK_ROWS, N_SAMPLES - 1};
    expect_rows(db, ok, 2);
    pl_db_close(db);
}

Test(corruption, sample_block_header)
{
    struct blk b2 = block_at(2);
    flip(PL_FILE_SAMPLES, b2.offset); /* the block magic */
    pl_db *db = open_bad();
    expect_verify_fails(db, "samples.pls: block 2: header does not match the index");
    expect_row_corrupt(db, N_SAMPLES - 1, "block 2");
    uint64_t ok[] = {0, PL_BLOCK_ROWS};
    expect_rows(db, ok, 2);
    pl_db_close(db);
}

/* -------------------------------------------------------------- payload */

Test(corruption, payload_data)
{
    uint64_t off = PL_PAYLOAD_ALIGN + PL_PAYLOAD_CHUNK + 123;
    flip(PL_FILE_PAYLOAD, off);
    pl_db *db = open_bad();
    char want[128];
    snprintf(want, sizeof want, "chunk 1 (bytes %llu..",
             (unsigned long long)(PL_PAYLOAD_ALIGN + PL_PAYLOAD_CHUNK));
    expect_verify_fails(db, want);
    pl_db_close(db);
}

Test(corruption, payload_first_chunk)
{
    flip(PL_FILE_PAYLOAD, PL_PAYLOAD_ALIGN);
    pl_db *db = open_bad();
    expect_verify_fails(db, "payload.npy: chunk 0 (bytes 4096..");
    pl_db_close(db);
}

/* Caught at open (tests/test_payload_check.c has the cases). */
Test(corruption, payload_truncated)
{
    char p[4352], want[4600];
    bad_path(p, sizeof p, PL_FILE_PAYLOAD);
    uint64_t size = file_size(p);
    truncate_to(PL_FILE_PAYLOAD, size - 100);
    snprintf(want, sizeof want, "%s: %llu bytes, the database expects %llu (truncated or "
             "replaced)", p, (unsigned long long)size - 100, (unsigned long long)size);
    expect_open_fails(PL_ECORRUPT, want);
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

/* ------------------------------------------------------- sample store */

Test(corruption, samples_magic)
{
    flip(PL_FILE_SAMPLES, 0);
    expect_open_fails(PL_ECORRUPT, "samples.pls: not a pertload sample store (bad magic)");
}

/* Without the reseal: the whole-file check at open names data.mdb. */
Test(corruption, lmdb_whole_file_checksum)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    uint64_t offs[3] = {0, 4096 + 100, file_size(p) - 1}; /* meta page, a page, the end */
    for (int i = 0; i < 3; i++) {
        pl_test_xor_byte(p, offs[i], 0x01);
        expect_open_fails(PL_ECORRUPT, "data.mdb: checksum mismatch");
        pl_test_xor_byte(p, offs[i], 0x01);
    }
    pl_db *db = open_bad();
    pl_db_close(db);
}

Test(corruption, lmdb_size_recorded)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    uint64_t size = file_size(p);
    cr_assert_eq(truncate(p, (off_t)(size + 4096)), 0, "%s: %s", p, strerror(errno));
    char want[128];
    snprintf(want, sizeof want, "data.mdb: %llu bytes, the database expects %llu",
             (unsigned long long)(size + 4096), (unsigned long long)size);
    expect_open_fails(PL_ECORRUPT, want);
}

Test(corruption, samples_header_lmdb_checksum)
{
    flip(PL_FILE_SAMPLES, 48); /* the recorded checksum of data.mdb */
    expect_open_fails(PL_ECORRUPT, "samples.pls: header checksum mismatch");
}

Test(corruption, samples_header_version)
{
    flip_mask(PL_FILE_SAMPLES, 8, 0x04);
    char want[128];
    snprintf(want, sizeof want, "samples.pls: format version %u, this pertload reads version %u",
             PL_FORMAT_VERSION ^ 0x04, PL_FORMAT_VERSION);
    expect_open_fails(PL_EFORMAT, want);
}

Test(corruption, samples_header_counts)
{
    flip(PL_FILE_SAMPLES, 16); /* n_samples */
    expect_open_fails(PL_ECORRUPT, "samples.pls: header checksum mismatch");
}

Test(corruption, samples_truncated)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_SAMPLES);
    truncate_to(PL_FILE_SAMPLES, file_size(p) - 1);
    expect_open_fails(PL_ECORRUPT, "truncated or replaced");
}

Test(corruption, samples_truncated_to_header)
{
    truncate_to(PL_FILE_SAMPLES, 10);
    expect_open_fails(PL_ECORRUPT, "samples.pls");
}

Test(corruption, samples_missing)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_SAMPLES);
    cr_assert_eq(unlink(p), 0);
    expect_open_fails(-ENOENT, "samples.pls");
}

/* ---------------------------------------------------- truncated LMDB */

/* Open (and verify, when open succeeds) C.bad in a child, so that a crash is
 * reported as such; the child sends back the return code and message. */
static void expect_open_or_verify_fails_in_child(void)
{
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        pl_db *db;
        pl_err err;
        memset(&err, 0, sizeof err);
        int rc = pl_db_open(C.bad, &db, &err);
        if (rc == 0) {
            rc = pl_db_verify(db, &err);
            pl_db_close(db);
            if (rc == 0)
                rc = 1; /* opened and verified: the damage went unnoticed */
        }
        pl_test_send(fd, &rc, sizeof rc);
        pl_test_send(fd, &err, sizeof err);
        _exit(0);
    }
    int rc = 0;
    pl_err err;
    memset(&err, 0, sizeof err);
    size_t n1 = pl_test_recv(fd, &rc, sizeof rc);
    size_t n2 = n1 == sizeof rc ? pl_test_recv(fd, &err, sizeof err) : 0;
    close(fd);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(!WIFSIGNALED(status), "opening the damaged database crashed: signal %d (%s)",
              WTERMSIG(status), strsignal(WTERMSIG(status)));
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
    cr_assert(n1 == sizeof rc && n2 == sizeof err, "short result from the child");
    cr_assert_neq(rc, 1, "the truncated database opened and verified");
    cr_assert_eq(rc, PL_ECORRUPT, "rc %d (%s), expected PL_ECORRUPT: %s", rc, pl_errname(rc),
                 err.msg);
    cr_expect_neq(err.msg[0], '\0', "no message");
    cr_expect(strstr(err.msg, "data.mdb") != NULL || strstr(err.msg, C.bad) != NULL,
              "message '%s' names neither the file nor the database", err.msg);
}

Test(corruption, lmdb_truncated_half)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    truncate_to(PL_FILE_LMDB, file_size(p) / 2 / 4096 * 4096);
    expect_open_or_verify_fails_in_child();
}

Test(corruption, lmdb_truncated_to_meta_pages)
{
    truncate_to(PL_FILE_LMDB, 2 * 4096);
    expect_open_or_verify_fails_in_child();
}

Test(corruption, lmdb_truncated_last_page)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    truncate_to(PL_FILE_LMDB, file_size(p) - 4096);
    expect_open_or_verify_fails_in_child();
}

Test(corruption, lmdb_empty)
{
    truncate_to(PL_FILE_LMDB, 0);
    expect_open_or_verify_fails_in_child();
}
