/* pl_build: the category columns of the samples into the category store
 * (dbformat.h, "cats"): per column its level names and a uint32 code per
 * stored row, kept apart from the float labels. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/vec.h"

#include "builder.h"

int pl__build_cats_begin(builder *b, const pl__build_samples *s)
{
    uint32_t n = s->n_categories;
    PL_FAIL_IF(n > PL_MAX_CATEGORIES, b->err, PL_EUSAGE,
               "samples: %u category columns (at most %d)", n, PL_MAX_CATEGORIES);
    b->cat_names = calloc(n + 1, sizeof *b->cat_names);
    b->cat_codes = calloc(n + 1, sizeof *b->cat_codes);
    b->cat_max = calloc(n + 1, sizeof *b->cat_max);
    if (!b->cat_names || !b->cat_codes || !b->cat_max)
        return NOMEM(b);
    for (uint32_t c = 0; c < n; c++) {
        const char *name = s->category_names[c];
        PL_FAIL_IF(!name || !*name || strpbrk(name, "\t\n"), b->err, PL_EPARSE,
                   "samples: category column %u has an empty name or one with a tab or a "
                   "line break", c + 1);
        for (uint32_t k = 0; k < c; k++)
            PL_FAIL_IF(!strcmp(name, b->cat_names[k]), b->err, PL_EPARSE,
                       "samples: category column '%s' is named twice", name);
        if (!(b->cat_names[c] = strdup(name)))
            return NOMEM(b);
        b->n_cats = c + 1;
    }
    return 0;
}

int pl__build_cats_add(builder *b, const pl__sample_row *r, uint64_t row)
{
    if (b->n_cats == 0)
        return 0;
    PL_FAIL_IF(!r->cats, b->err, PL_EPARSE, "samples: row %llu has no category codes",
               (unsigned long long)row + 1);
    uint64_t at = b->sw.n_samples, cap = b->cap_codes;
    for (uint32_t c = 0; c < b->n_cats; c++) {
        cap = b->cap_codes;
        if (pl__grow(&b->cat_codes[c], &cap, at + 1, sizeof **b->cat_codes) < 0)
            return NOMEM(b);
        b->cat_codes[c][at] = r->cats[c];
        if (r->cats[c] >= b->cat_max[c])
            b->cat_max[c] = r->cats[c] + 1;
    }
    b->cap_codes = cap;
    return 0;
}

/* The level count of a line "column<TAB>level...": the column name must be
 * `name`, every level non-empty and distinct. */
static int check_line(builder *b, const char *line, size_t len, const char *name,
                      uint64_t *count)
{
    const char *tab = memchr(line, '\t', len);
    size_t nlen = tab ? (size_t)(tab - line) : len;
    PL_FAIL_IF(nlen != strlen(name) || memcmp(line, name, nlen), b->err, PL_EPARSE,
               "samples: the levels of category column '%s' are missing or out of order",
               name);
    pl_strtab seen;
    PL_FAIL_IF(pl__strtab_init(&seen) < 0, b->err, -ENOMEM, "out of memory");
    int rc = 0;
    *count = 0;
    for (const char *at = tab ? tab + 1 : NULL, *end = line + len; rc == 0 && at;) {
        const char *next = memchr(at, '\t', (size_t)(end - at));
        size_t l = (size_t)((next ? next : end) - at);
        int added = 0;
        if (l == 0)
            rc = pl__err(b->err, PL_EPARSE, "samples: category column '%s': level %llu is "
                         "empty", name, (unsigned long long)*count);
        else if (pl__strtab_intern(&seen, at, l, &added) < 0)
            rc = NOMEM(b);
        else if (!added)
            rc = pl__err(b->err, PL_EPARSE, "samples: category column '%s': level '%.*s' is "
                         "listed twice", name, (int)l, at);
        (*count)++;
        at = next ? next + 1 : NULL;
    }
    pl__strtab_free(&seen);
    return rc;
}

int pl__build_cats_end(builder *b, const pl__build_samples *s)
{
    const char *t = s->levels ? s->levels : "";
    for (uint32_t c = 0; c < b->n_cats; c++) {
        const char *nl = strchr(t, '\n');
        PL_FAIL_IF(!nl, b->err, PL_EPARSE, "samples: no levels for category column '%s'",
                   b->cat_names[c]);
        uint64_t count = 0;
        PL_TRY(check_line(b, t, (size_t)(nl - t), b->cat_names[c], &count));
        PL_FAIL_IF(b->cat_max[c] > count, b->err, PL_EPARSE, "samples: category column '%s': "
                   "a row holds code %u, the column has %llu levels", b->cat_names[c],
                   b->cat_max[c] - 1, (unsigned long long)count);
        t = nl + 1;
    }
    PL_FAIL_IF(*t, b->err, PL_EPARSE, "samples: levels given for more than the %u category "
               "columns", b->n_cats);
    if (b->n_cats && !(b->levels = strdup(s->levels))) /* the provider's goes first */
        return NOMEM(b);
    return 0;
}

int pl__build_cats_put(builder *b)
{
    b->meta.n_categories = b->n_cats;
    if (b->n_cats == 0)
        return 0;
    MDB_dbi d = b->dbi[PL_DBI_CATS];
    PL_TRY(pl__db_put(b->txn, d, PL_DBI_CATS, "levels", 6, b->levels, strlen(b->levels) + 1, 0,
                      b->err));
    uint64_t n = b->sw.n_samples;
    for (uint32_t c = 0; c < b->n_cats; c++) {
        unsigned char key[5];
        pl__cat_key(key, c);
        uint32_t none = 0;
        PL_TRY(pl__db_put_zstd(b->txn, d, PL_DBI_CATS, key, sizeof key,
                               n ? (const void *)b->cat_codes[c] : &none, n * sizeof none,
                               b->err));
    }
    return 0;
}

void pl__build_cats_free(builder *b)
{
    for (uint32_t c = 0; c < b->n_cats; c++) {
        free(b->cat_names[c]);
        free(b->cat_codes[c]);
    }
    free(b->cat_names);
    free(b->cat_codes);
    free(b->cat_max);
    free(b->levels);
}
