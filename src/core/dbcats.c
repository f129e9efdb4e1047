/* The category store of a database (dbformat.h, sub-database "cats"): the
 * level names of each category column and its code per sample row. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "dbformat.h"
#include "error.h"

int pl__db_open_cats(pl_db *db, pl_err *err)
{
    const void *v;
    size_t len;
    uint32_t n = db->meta.n_categories;
    db->info.categories = "";
    int rc = pl__db_get(db->txn, db->dbi[PL_DBI_CATS], PL_DBI_CATS, "levels", 6, &v, &len, err);
    if (rc == -ENOENT && n == 0)
        return 0;
    PL_FAIL_IF(rc == -ENOENT, err, PL_ECORRUPT, "%s: key cats/levels missing", db->path);
    if (rc < 0) {
        pl__err_prefix(err, "%s", db->path);
        return rc;
    }
    const char *t = v;
    PL_FAIL_IF(len == 0 || t[len - 1] != '\0' || strlen(t) != len - 1, err, PL_ECORRUPT,
               "%s: key cats/levels: not one NUL-terminated text", db->path);
    uint32_t lines = 0;
    for (const char *c = t; *c; c++)
        lines += *c == '\n';
    PL_FAIL_IF(lines != n || (len > 1 && t[len - 2] != '\n'), err, PL_ECORRUPT,
               "%s: key cats/levels: %u lines for %u category columns", db->path, lines, n);
    db->info.categories = t;
    return 0;
}

int pl__db_cat_codes(pl_db *db, uint32_t c, uint64_t n_levels, uint32_t **codes, pl_err *err)
{
    uint64_t n = db->meta.n_samples;
    unsigned char key[5];
    pl__cat_key(key, c);
    *codes = NULL;
    if (n == 0) {
        *codes = malloc(sizeof **codes);
        PL_FAIL_IF(!*codes, err, -ENOMEM, "out of memory");
        return 0;
    }
    void *out;
    int rc = pl__db_get_zstd(db->txn, db->dbi[PL_DBI_CATS], PL_DBI_CATS, key, sizeof key,
                             n * sizeof **codes, &out, err);
    PL_FAIL_IF(rc == -ENOENT, err, PL_ECORRUPT, "%s: key cats/column %u missing", db->path, c);
    if (rc < 0) {
        pl__err_prefix(err, "%s", db->path);
        return rc;
    }
    uint32_t *k = out;
    for (uint64_t r = 0; r < n; r++)
        if (k[r] >= n_levels) {
            rc = pl__err(err, PL_ECORRUPT, "%s: key cats/column %u: row %llu holds code %u, "
                         "the column has %llu levels", db->path, c, (unsigned long long)r,
                         k[r], (unsigned long long)n_levels);
            free(out);
            return rc;
        }
    *codes = k;
    return 0;
}
