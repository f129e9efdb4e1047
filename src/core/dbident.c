/* The database fingerprint (pl_db_info.db_fingerprint): one identity over
 * everything a database serves.
 *
 * Every value of every sub-database (pl__dbi_names, in that order; a
 * sub-database added to the format is covered by being listed there) ends
 * with an 8-byte XXH64 trailer seeded by its key (dbformat.h), so the
 * fingerprint chains, per sub-database, its name and then per entry (in key
 * order) the key's length, the key and the trailer:
 *
 *   h = 0; for each part p: h = XXH64(p, h)
 *
 * This reads one page per value, not the values. Provenance that does not
 * change what is served is left out (meta/"params", "recipe", "inputs",
 * "sources": paths and the command line), so the same inputs built twice,
 * anywhere, give the same fingerprint; genes, edges, metabolism, rules,
 * ontology, labels, the category store (levels and codes), the sample
 * blocks' index (each block's XXH64) and the payload's chunk checksums all
 * count. */
#include <lmdb.h>
#include <string.h>

#include "checksum.h"
#include "db.h"
#include "dbformat.h"
#include "error.h"

static int provenance(int dbi, const MDB_val *k)
{
    static const char *const skip[] = {"params", "recipe", "inputs", "sources"};
    if (dbi != PL_DBI_META)
        return 0;
    for (size_t i = 0; i < sizeof skip / sizeof *skip; i++)
        if (k->mv_size == strlen(skip[i]) && !memcmp(k->mv_data, skip[i], k->mv_size))
            return 1;
    return 0;
}

int pl__db_fingerprint(pl_db *db, uint64_t *out, pl_err *err)
{
    uint64_t h = 0;
    for (int i = 0; i < PL_DBI_COUNT; i++) {
        h = pl__xxh64(pl__dbi_names[i], strlen(pl__dbi_names[i]) + 1, h);
        MDB_cursor *c;
        int rc = mdb_cursor_open(db->txn, db->dbi[i], &c);
        PL_FAIL_IF(rc, err, pl__lmdb_code(rc), "%s: sub-database %s: %s", db->path,
                   pl__dbi_names[i], mdb_strerror(rc));
        MDB_val k, v;
        for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
             rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
            if (provenance(i, &k))
                continue;
            uint64_t klen = k.mv_size;
            h = pl__xxh64(&klen, sizeof klen, h);
            h = pl__xxh64(k.mv_data, k.mv_size, h);
            if (v.mv_size < 8) {
                mdb_cursor_close(c);
                char kd[160];
                pl__key_describe(i, k.mv_data, k.mv_size, kd, sizeof kd);
                return pl__err(err, PL_ECORRUPT, "%s: key %s: a value of %zu bytes has no "
                               "checksum trailer", db->path, kd, v.mv_size);
            }
            h = pl__xxh64((const char *)v.mv_data + v.mv_size - 8, 8, h);
        }
        mdb_cursor_close(c);
        PL_FAIL_IF(rc != MDB_NOTFOUND, err, pl__lmdb_code(rc), "%s: sub-database %s: %s",
                   db->path, pl__dbi_names[i], mdb_strerror(rc));
    }
    *out = h;
    return 0;
}
