/* The rows of a category level (pertload.h, pl_db_level_rows): the rows of
 * a split column's train, validation or test level.
 *
 * A category column holds per row the code 0, 1, ... of its level in the
 * database's category store (dbformat.h, "cats"); the level names are
 * pl_db_info.categories, one line per category column: "column<TAB>level
 * 0<TAB>level 1...". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "split.h"

#include "src/core/db.h"
#include "src/core/error.h"

/* The list of names shown in a message: the most it holds before "...". */
#define LIST_MAX 1024

/* Append `name` (`len` bytes) to the ", "-separated list `out` (LIST_MAX
 * bytes, NUL-terminated); once full, the list ends with "...". */
static void list_add(char *out, const char *name, size_t len)
{
    size_t at = strlen(out);
    if (at >= 3 && !strcmp(out + at - 3, "..."))
        return; /* full (a name in the list ends with a quote) */
    /* Room for this name (its quotes and ", " included), then for ", ..."
     * and the NUL: a list that ends full still ends with the whole "...". */
    if (at + 2 + len + 2 + 5 + 1 > LIST_MAX) {
        snprintf(out + at, LIST_MAX - at, "%s...", at ? ", " : "");
        return;
    }
    snprintf(out + at, LIST_MAX - at, "%s'%.*s'", at ? ", " : "", (int)len, name);
}

/* The line of `column` in the levels text (after "column<TAB>", up to its
 * newline `*end`; `*end` NULL for a column without levels), or NULL; `*index`
 * gets its line number and `cats` the list of every category column. */
static const char *levels_of(const char *levels, const char *column, const char **end,
                             uint32_t *index, char *cats)
{
    const char *found = NULL;
    uint32_t k = 0;
    for (const char *line = levels; *line; k++) {
        const char *nl = strchr(line, '\n'), *tab;
        if (!nl)
            nl = line + strlen(line);
        tab = memchr(line, '\t', (size_t)(nl - line));
        size_t name_len = (size_t)((tab ? tab : nl) - line);
        list_add(cats, line, name_len);
        if (!found && name_len == strlen(column) && !memcmp(line, column, name_len)) {
            found = tab ? tab + 1 : nl;
            *end = tab ? nl : NULL;
            *index = k;
        }
        line = *nl ? nl + 1 : nl;
    }
    return found;
}

/* The code of `level` among the TAB-separated names [at, end) (none when
 * `end` is NULL), or -1; `names` gets their list and `*count` their number. */
static int64_t level_code(const char *at, const char *end, const char *level, char *names,
                          uint64_t *count)
{
    int64_t found = -1;
    size_t want = strlen(level);
    *count = 0;
    for (int64_t code = 0; end; code++) {
        const char *tab = memchr(at, '\t', (size_t)(end - at));
        const char *stop = tab ? tab : end;
        list_add(names, at, (size_t)(stop - at));
        (*count)++;
        if (found < 0 && (size_t)(stop - at) == want && !memcmp(at, level, want))
            found = code;
        if (!tab)
            break;
        at = tab + 1;
    }
    return found;
}

int pl__level_find(const pl_db_info *info, const char *column, const char *level,
                   pl__level *out, pl_err *err)
{
    char cats[LIST_MAX] = "", names[LIST_MAX] = "";
    const char *end = NULL;
    uint32_t index = 0;
    const char *at = levels_of(info->categories ? info->categories : "", column, &end, &index,
                               cats);
    const char *none = "the database has none";
    uint32_t label = 0;
    while (label < info->n_labels && strcmp(info->label_names[label], column))
        label++;
    PL_FAIL_IF(!at && label < info->n_labels, err, PL_EUSAGE,
               "label '%s' is not a category column (category columns: %s)", column,
               cats[0] ? cats : none);
    PL_FAIL_IF(!at, err, PL_EUSAGE, "no category column '%s' (category columns: %s)", column,
               cats[0] ? cats : none);
    uint64_t count;
    int64_t code = level_code(at, end, level, names, &count);
    PL_FAIL_IF(code < 0, err, PL_EUSAGE, "category column '%s' has no level '%s' (levels: %s)",
               column, level, names[0] ? names : "none");
    *out = (pl__level){index, (uint32_t)code, count};
    return 0;
}

int pl__level_rows(pl_db *db, const pl__level *lv, uint32_t **rows, uint64_t *n, pl_err *err)
{
    uint32_t *codes;
    PL_TRY(pl__db_cat_codes(db, lv->column, lv->n_levels, &codes, err));
    uint64_t ns = pl_db_info_get(db)->n_samples, m = 0;
    for (uint64_t r = 0; r < ns; r++)
        if (codes[r] == lv->code)
            codes[m++] = (uint32_t)r; /* m <= r: in place */
    *rows = codes;
    *n = m;
    return 0;
}

PL_API int64_t pl_db_level_rows(pl_db *db, const char *column, const char *level,
                                uint32_t *rows, uint64_t cap, pl_err *err)
{
    pl__level lv;
    PL_TRY(pl__level_find(pl_db_info_get(db), column, level, &lv, err));
    uint32_t *all;
    uint64_t n;
    PL_TRY(pl__level_rows(db, &lv, &all, &n, err));
    if (cap && n)
        memcpy(rows, all, (n < cap ? n : cap) * sizeof *rows);
    free(all);
    return (int64_t)n;
}
