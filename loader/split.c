/* The rows of a category level (pertload.h, pl_db_level_rows): the rows of
 * a split column's train, validation or test level.
 *
 * A category column is a float label whose values are the codes 0, 1, ...
 * of its levels; the level names are the database's "levels" metadata, one
 * line per category column: "column<TAB>level 0<TAB>level 1...". */
#include <stdio.h>
#include <string.h>

#include "split.h"

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
    if (at + len + 8 >= LIST_MAX) {
        snprintf(out + at, LIST_MAX - at, "%s...", at ? ", " : "");
        return;
    }
    snprintf(out + at, LIST_MAX - at, "%s'%.*s'", at ? ", " : "", (int)len, name);
}

/* The line of `column` in the levels text (after "column<TAB>", up to its
 * newline `*end`; `*end` NULL for a column without levels), or NULL; `cats`
 * gets the list of every category column. */
static const char *levels_of(const char *levels, const char *column, const char **end,
                             char *cats)
{
    const char *found = NULL;
    for (const char *line = levels; *line;) {
        const char *nl = strchr(line, '\n'), *tab;
        if (!nl)
            nl = line + strlen(line);
        tab = memchr(line, '\t', (size_t)(nl - line));
        size_t name_len = (size_t)((tab ? tab : nl) - line);
        list_add(cats, line, name_len);
        if (!found && name_len == strlen(column) && !memcmp(line, column, name_len)) {
            found = tab ? tab + 1 : nl;
            *end = tab ? nl : NULL;
        }
        line = *nl ? nl + 1 : nl;
    }
    return found;
}

/* The code of `level` among the TAB-separated names [at, end) (none when
 * `end` is NULL), or -1; `names` gets their list. */
static int64_t level_code(const char *at, const char *end, const char *level, char *names)
{
    int64_t found = -1;
    size_t want = strlen(level);
    for (int64_t code = 0; end; code++) {
        const char *tab = memchr(at, '\t', (size_t)(end - at));
        const char *stop = tab ? tab : end;
        list_add(names, at, (size_t)(stop - at));
        if (found < 0 && (size_t)(stop - at) == want && !memcmp(at, level, want))
            found = code;
        if (!tab)
            break;
        at = tab + 1;
    }
    return found;
}

int pl__level_find(const pl_db_info *info, const char *column, const char *level,
                   uint32_t *label_out, float *code_out, pl_err *err)
{
    char cats[LIST_MAX] = "", names[LIST_MAX] = "";
    const char *end = NULL;
    const char *at = levels_of(info->label_levels ? info->label_levels : "", column, &end, cats);
    uint32_t label = 0;
    while (label < info->n_labels && strcmp(info->label_names[label], column))
        label++;
    const char *none = "the database has none";
    PL_FAIL_IF(label == info->n_labels, err, PL_EUSAGE,
               "no label column '%s' (category columns: %s)", column, cats[0] ? cats : none);
    PL_FAIL_IF(!at, err, PL_EUSAGE,
               "label '%s' is not a category column (category columns: %s)", column,
               cats[0] ? cats : none);
    int64_t code = level_code(at, end, level, names);
    PL_FAIL_IF(code < 0, err, PL_EUSAGE, "category column '%s' has no level '%s' (levels: %s)",
               column, level, names[0] ? names : "none");
    PL_FAIL_IF(code >= (1 << 24), err, PL_EUSAGE,
               "category column '%s': level '%s' has code %lld, past the codes a float "
               "label holds exactly", column, level, (long long)code);
    *label_out = label;
    *code_out = (float)code; /* codes below 2^24 are exact floats */
    return 0;
}

PL_API int64_t pl_db_level_rows(pl_db *db, const char *column, const char *level,
                                uint32_t *rows, uint64_t cap, pl_err *err)
{
    const pl_db_info *info = pl_db_info_get(db);
    uint32_t label;
    float want;
    PL_TRY(pl__level_find(info, column, level, &label, &want, err));
    uint64_t n = 0;
    for (uint64_t r = 0; r < info->n_samples; r++) {
        pl_sample s;
        PL_TRY(pl_db_sample(db, r, &s, err));
        if (s.labels[label] == want) {
            if (n < cap)
                rows[n] = (uint32_t)r;
            n++;
        }
    }
    return (int64_t)n;
}
