/* The fixture of the corruption suites (test_corruption.c,
 * test_corruption_values.c): one pristine database built from small inputs
 * per suite, a copy of it each test damages, and the checks that a damaged
 * database is refused with a message naming what is wrong. */
#include "corruption_fx.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/dbformat.h"
#include "src/core/sstore.h"
#include "testutil.h"

cx C;

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

void cx_init(void)
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

void cx_fini(void)
{
    if (C.dir)
        pl_test_rmtree(C.dir);
    free(C.dir);
    memset(&C, 0, sizeof C);
}

void bad_path(char *buf, size_t cap, const char *file) { join(buf, cap, C.bad, file); }

uint64_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
    return (uint64_t)st.st_size;
}

void read_at(const char *path, uint64_t off, void *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(pread(fd, buf, len, (off_t)off), (ssize_t)len);
    close(fd);
}

void write_at(const char *path, uint64_t off, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
    cr_assert_eq(close(fd), 0);
}

/* Record the current size and checksum of C.bad/data.mdb in the header of
 * C.bad/samples.pls, as build does for a finished database. */
void reseal(void)
{
    char s[4352], l[4352];
    bad_path(s, sizeof s, PL_FILE_SAMPLES);
    bad_path(l, sizeof l, PL_FILE_LMDB);
    pl_err err = {0};
    cr_assert_eq(pl__sstore_seal(s, l, &err), 0, "reseal: %s", err.msg);
}

/* XOR the byte at `off` of C.bad/file with `mask` (resealing data.mdb). */
void flip_mask(const char *file, uint64_t off, unsigned char mask)
{
    char p[4352];
    bad_path(p, sizeof p, file);
    cr_assert_lt(off, file_size(p));
    pl_test_xor_byte(p, off, mask);
    if (!strcmp(file, PL_FILE_LMDB))
        reseal();
}

/* Invert every bit of the byte at `off` of C.bad/file. */
void flip(const char *file, uint64_t off) { flip_mask(file, off, 0xFF); }

void truncate_to(const char *file, uint64_t size)
{
    char p[4352];
    bad_path(p, sizeof p, file);
    cr_assert_eq(truncate(p, (off_t)size), 0, "%s: %s", p, strerror(errno));
    if (!strcmp(file, PL_FILE_LMDB))
        reseal();
}

/* The stored bytes (value and checksum trailer) of `key` in sub-database
 * `dbi` of the pristine database, read through LMDB; NULL when absent. */
void *lmdb_value(int dbi, const void *key, size_t klen, size_t *len)
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
uint64_t find_unique(const void *needle, size_t n)
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
uint64_t locate(int dbi, const void *key, size_t klen, size_t *len)
{
    void *v = lmdb_value(dbi, key, klen, len);
    cr_assert_not_null(v, "key not found");
    uint64_t off = find_unique(v, *len);
    free(v);
    return off;
}

void expect_msg(const pl_err *e, const char *want)
{
    cr_expect(strstr(e->msg, want) != NULL, "message '%s' lacks '%s'", e->msg, want);
}

pl_db *open_bad(void)
{
    pl_db *db = NULL;
    pl_err err = {0};
    int rc = pl_db_open(C.bad, &db, &err);
    cr_assert_eq(rc, 0, "the damage should only show in deeper checks; open: %s", err.msg);
    return db;
}

/* pl_db_open(C.bad) fails with `code` (or any negative code when code is 0)
 * and a message containing `want`. */
void expect_open_fails(int code, const char *want)
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
void value_open_fails(int dbi, const char *key, uint64_t at, const char *want)
{
    size_t len;
    uint64_t off = locate(dbi, key, strlen(key), &len);
    flip(PL_FILE_LMDB, off + at);
    expect_open_fails(PL_ECORRUPT, want);
}

/* pl_graph_load(db) fails with PL_ECORRUPT and a message containing `want`,
 * handing out no graph. */
void expect_graph_fails(pl_db *db, const char *want)
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

void expect_verify_fails(pl_db *db, const char *want)
{
    pl_err err = {0};
    int rc = pl_db_verify(db, &err);
    cr_assert_eq(rc, PL_ECORRUPT, "pl_db_verify: rc %d (%s): %s", rc, pl_errname(rc),
                 err.msg);
    cr_expect_eq(err.code, PL_ECORRUPT);
    expect_msg(&err, want);
}
