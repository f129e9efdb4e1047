/* Checked LMDB values: body + XXH64(body, seed = XXH64(key)). */
#include "dbformat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "checksum.h"
#include "error.h"

const char *const pl__dbi_names[PL_DBI_COUNT] = {"meta", "names", "edges", "inc"};

void pl__key_describe(int dbi, const void *kp, size_t klen, char *buf, size_t cap)
{
    const unsigned char *k = kp;
    if (dbi == PL_DBI_INC && klen == 6) {
        unsigned kind = (unsigned)k[0] << 8 | k[1];
        unsigned long gene = (unsigned long)k[2] << 24 | (unsigned long)k[3] << 16 |
                             (unsigned long)k[4] << 8 | k[5];
        snprintf(buf, cap, "inc/kind %u/gene %lu", kind, gene);
    } else if (dbi == PL_DBI_EDGES && klen == 2 && k[0] == 'e') {
        snprintf(buf, cap, "edges/type %u", k[1]);
    } else {
        snprintf(buf, cap, "%s/%.*s", pl__dbi_names[dbi], (int)klen, (const char *)k);
    }
}

static uint64_t trailer(const void *key, size_t klen, const void *val, size_t len)
{
    return pl__xxh64(val, len, pl__xxh64(key, klen, 0));
}

int pl__db_put(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
               const void *val, size_t len, unsigned flags, pl_err *err)
{
    MDB_val k = {klen, (void *)key}, v = {len + 8, NULL};
    int rc = mdb_put(txn, dbi, &k, &v, flags | MDB_RESERVE);
    if (rc) {
        char kd[96];
        pl__key_describe(which, key, klen, kd, sizeof kd);
        return pl__err(err, pl__lmdb_code(rc), "writing %s: %s", kd, mdb_strerror(rc));
    }
    uint64_t sum = trailer(key, klen, val, len);
    if (len)
        memcpy(v.mv_data, val, len);
    memcpy((char *)v.mv_data + len, &sum, 8);
    return 0;
}

int pl__db_check(int which, const MDB_val *k, const MDB_val *v, pl_err *err)
{
    uint64_t sum;
    if (v->mv_size >= 8) {
        memcpy(&sum, (const char *)v->mv_data + v->mv_size - 8, 8);
        if (sum == trailer(k->mv_data, k->mv_size, v->mv_data, v->mv_size - 8))
            return 0;
    }
    char kd[96];
    pl__key_describe(which, k->mv_data, k->mv_size, kd, sizeof kd);
    return pl__err(err, PL_ECORRUPT, "key %s: checksum mismatch", kd);
}

int pl__db_get(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
               const void **val, size_t *len, pl_err *err)
{
    MDB_val k = {klen, (void *)key}, v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND)
        return -ENOENT;
    if (rc) {
        char kd[96];
        pl__key_describe(which, key, klen, kd, sizeof kd);
        return pl__err(err, pl__lmdb_code(rc), "reading %s: %s", kd, mdb_strerror(rc));
    }
    PL_TRY(pl__db_check(which, &k, &v, err));
    *val = v.mv_data;
    *len = v.mv_size - 8;
    return 0;
}

int pl__db_put_zstd(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
                    const void *val, size_t len, pl_err *err)
{
    size_t cap = ZSTD_compressBound(len);
    void *buf = malloc(cap ? cap : 1);
    if (!buf)
        return pl__err(err, -ENOMEM, "out of memory compressing %zu bytes", len);
    size_t n = ZSTD_compress(buf, cap, val, len, 3);
    int rc;
    if (ZSTD_isError(n))
        rc = pl__err(err, PL_EZSTD, "compressing: %s", ZSTD_getErrorName(n));
    else
        rc = pl__db_put(txn, dbi, which, key, klen, buf, n, 0, err);
    free(buf);
    return rc;
}

int pl__db_get_zstd(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
                    size_t want, void **out, pl_err *err)
{
    const void *v;
    size_t n;
    *out = NULL;
    PL_TRY(pl__db_get(txn, dbi, which, key, klen, &v, &n, err));
    void *buf = malloc(want ? want : 1);
    if (!buf)
        return pl__err(err, -ENOMEM, "out of memory (%zu bytes)", want);
    size_t got = ZSTD_decompress(buf, want, v, n);
    if (ZSTD_isError(got) || got != want) {
        char kd[96];
        pl__key_describe(which, key, klen, kd, sizeof kd);
        free(buf);
        return pl__err(err, PL_ECORRUPT, "key %s: %s (expected %zu bytes)", kd,
                       ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong size", want);
    }
    *out = buf;
    return 0;
}
