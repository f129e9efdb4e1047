/* Row subsets of an epoch (subset.h). */
#include "subset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "split.h"
#include "src/core/error.h"
#include "src/core/npy.h"

/* "A:B" with decimal A < B, or 0 when `spec` is no range (a file name). */
static int parse_range(const char *spec, uint64_t *a, uint64_t *b)
{
    const char *colon = strchr(spec, ':');
    if (!colon || colon == spec || !colon[1])
        return 0;
    uint64_t v[2] = {0, 0};
    const char *s = spec;
    for (int k = 0; k < 2; k++, s = colon + 1) {
        const char *end = k ? s + strlen(s) : colon;
        for (const char *c = s; c < end; c++) {
            if (*c < '0' || *c > '9' || v[k] > (UINT64_MAX - 9) / 10)
                return 0;
            v[k] = v[k] * 10 + (uint64_t)(*c - '0');
        }
    }
    *a = v[0];
    *b = v[1];
    return 1;
}

/* Entry k of a mapped integer array as uint64 (negative values wrap high). */
static uint64_t entry(const pl__npy *n, const unsigned char *d, uint64_t k)
{
    if (!strcmp(n->descr, "<i4")) {
        int32_t x;
        memcpy(&x, d + 4 * k, 4);
        return (uint64_t)(int64_t)x;
    }
    if (!strcmp(n->descr, "<u4")) {
        uint32_t x;
        memcpy(&x, d + 4 * k, 4);
        return x;
    }
    uint64_t x;
    memcpy(&x, d + 8 * k, 8);
    return x;
}

static int load_file(pl__subset *s, const char *spec, uint64_t n_samples, pl_err *err)
{
    pl__npy n;
    int rc = pl__npy_open(&n, spec, err);
    if (rc < 0)
        return rc;
    int ok = !strcmp(n.descr, "<i4") || !strcmp(n.descr, "<i8") || !strcmp(n.descr, "<u4");
    if (!ok || n.ndim != 1)
        rc = pl__err(err, PL_EUSAGE, "--rows %s: a one-dimensional int32, int64 or uint32 "
                     "array is expected, not %s with %u dimensions", spec, n.descr,
                     n.ndim);
    if (rc == 0)
        rc = pl__npy_map(&n, err);
    if (rc == 0 && !(s->rows = malloc((n.count ? n.count : 1) * sizeof *s->rows)))
        rc = pl__err(err, -ENOMEM, "--rows %s: out of memory", spec);
    for (uint64_t k = 0; rc == 0 && k < n.count; k++) {
        uint64_t r = entry(&n, (const unsigned char *)n.map + n.offset, k);
        if (r >= n_samples)
            rc = pl__err(err, PL_EUSAGE, "--rows %s: entry %llu is %lld, not a row of the "
                         "database's %llu", spec, (unsigned long long)k, (long long)r,
                         (unsigned long long)n_samples);
        else
            s->rows[k] = (uint32_t)r;
    }
    s->n = n.count;
    pl__npy_close(&n);
    return rc;
}

int pl__subset_load(pl__subset *s, const char *spec, uint64_t n_samples, pl_err *err)
{
    memset(s, 0, sizeof *s);
    uint64_t a, b;
    int rc = 0;
    if (parse_range(spec, &a, &b)) {
        PL_FAIL_IF(a >= b || b > n_samples, err, PL_EUSAGE,
                   "--rows %s: a range A:B with A < B <= %llu (the database's samples) is "
                   "expected", spec, (unsigned long long)n_samples);
        s->rows = malloc((b - a) * sizeof *s->rows);
        PL_FAIL_IF(!s->rows, err, -ENOMEM, "--rows %s: out of memory", spec);
        for (uint64_t k = 0; k < b - a; k++)
            s->rows[k] = (uint32_t)(a + k);
        s->n = b - a;
        return 0;
    }
    rc = load_file(s, spec, n_samples, err);
    if (rc == 0 && s->n == 0)
        rc = pl__err(err, PL_EUSAGE, "--rows %s: no rows", spec);
    /* Distinct rows: one bit per row of the database. */
    uint64_t *seen = rc == 0 ? calloc(n_samples / 64 + 1, 8) : NULL;
    if (rc == 0 && !seen)
        rc = pl__err(err, -ENOMEM, "--rows %s: out of memory", spec);
    for (uint64_t k = 0; rc == 0 && k < s->n; k++) {
        uint32_t r = s->rows[k];
        if (seen[r / 64] >> (r % 64) & 1)
            rc = pl__err(err, PL_EUSAGE, "--rows %s: row %u is given twice (entry %llu)", spec,
                         r, (unsigned long long)k);
        seen[r / 64] |= 1ULL << (r % 64);
    }
    free(seen);
    if (rc < 0)
        pl__subset_free(s);
    return rc;
}

int pl__split_find(pl__split *sp, const pl_db_info *info, const char *spec, pl_err *err)
{
    memset(sp, 0, sizeof *sp);
    sp->spec = spec;
    const char *eq = strchr(spec, '=');
    size_t clen = eq ? (size_t)(eq - spec) : strlen(PL__SPLIT_COLUMN);
    sp->column = malloc(clen + 1);
    PL_FAIL_IF(!sp->column, err, -ENOMEM, "--split %s: out of memory", spec);
    memcpy(sp->column, eq ? spec : PL__SPLIT_COLUMN, clen);
    sp->column[clen] = 0;
    sp->level = eq ? eq + 1 : spec;
    int rc = pl__level_find(info, sp->column, sp->level, &sp->lv, err);
    if (rc < 0)
        pl__err_prefix(err, "--split %s", spec);
    return rc;
}

void pl__split_free(pl__split *sp)
{
    free(sp->column);
    memset(sp, 0, sizeof *sp);
}

int pl__subset_split(pl__subset *s, const pl__split *sp, pl_db *db, pl_err *err)
{
    memset(s, 0, sizeof *s);
    int rc = pl__level_rows(db, &sp->lv, &s->rows, &s->n, err);
    if (rc < 0)
        pl__err_prefix(err, "--split %s", sp->spec);
    if (rc == 0 && s->n == 0)
        rc = pl__err(err, PL_EUSAGE, "--split %s: no row of category column '%s' holds "
                     "level '%s'", sp->spec, sp->column, sp->level);
    if (rc < 0)
        pl__subset_free(s);
    return rc;
}

void pl__subset_apply(const pl__subset *s, pl_plan *plan)
{
    for (uint64_t k = 0; k < plan->m; k++)
        plan->rows[k] = s->rows[plan->rows[k]];
}

void pl__subset_free(pl__subset *s)
{
    free(s->rows);
    memset(s, 0, sizeof *s);
}
