/* A generic delimited edge list: a separator, a header row or none, and the
 * source, target and (optional) score columns by 1-based number or, with a
 * header, by name. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "src/core/error.h"

enum { MAX_COLS = 256 };

/* A column given as "3" -> 2 (0-based); as a name -> -2; absent -> -1. */
static int col_number(const char *s)
{
    if (!s)
        return -1;
    char *end;
    long v = strtol(s, &end, 10);
    if (*s >= '0' && *s <= '9' && !*end)
        return v >= 1 && v <= MAX_COLS ? (int)v - 1 : -3;
    return -2;
}

static int check(const pl_imp_opts *o, pl_err *err)
{
    const char *cols[3] = {o->col_src, o->col_dst, o->col_score};
    const char *what[3] = {"source", "target", "score"};
    for (int i = 0; i < 3; i++) {
        int c = col_number(cols[i]);
        if (c == -1 && i < 2)
            return pl__err(err, PL_EUSAGE, "the %s column is not given", what[i]);
        if (c == -3)
            return pl__err(err, PL_EUSAGE, "%s column %s out of range 1..%d", what[i], cols[i],
                           MAX_COLS);
        if (c == -2 && !o->header)
            return pl__err(err, PL_EUSAGE, "%s column '%s' is a name, but the file has no "
                           "header (header: true)", what[i], cols[i]);
    }
    if (o->sep == '\n' || o->sep == '\r')
        return pl__err(err, PL_EUSAGE, "a line break cannot be the separator");
    return 0;
}

static int read_delim(pl_src *src, const pl_imp_opts *o, pl_imp_emit emit, void *ctx,
                      pl_imp_stats *st, pl_err *err)
{
    PL_TRY(check(o, err));
    char sep = o->sep ? o->sep : '\t';
    size_t clen = o->comment ? strlen(o->comment) : 0;
    const char *cols[3] = {o->col_src, o->col_dst, o->col_score};
    int c[3], ncols = -1, need = 0;
    pl__field *f = malloc((MAX_COLS + 1) * sizeof *f);
    PL_FAIL_IF(!f, err, -ENOMEM, "%s: out of memory", pl__src_path(src));
    const char *line;
    size_t len;
    int rc;
    while ((rc = pl__src_line(src, &line, &len, err)) > 0) {
        if (len == 0 || (clen && len >= clen && !memcmp(line, o->comment, clen)))
            continue;
        int n = pl__src_split(line, len, sep, f, MAX_COLS + 1);
        if (n > MAX_COLS) {
            rc = pl__src_fail(src, 0, err, "more than %d fields", MAX_COLS);
            break;
        }
        if (ncols < 0) { /* the first line: the header, or the first row */
            ncols = o->header ? n : 0;
            for (int i = 0; i < 3; i++) {
                c[i] = col_number(cols[i]);
                if (c[i] == -2 && (c[i] = pl__imp_col(f, n, cols[i])) < 0) {
                    rc = pl__src_fail(src, 0, err, "the header has no '%s' column", cols[i]);
                    goto out;
                }
                if (c[i] + 1 > need)
                    need = c[i] + 1;
            }
            if (o->header) {
                if (need > n) {
                    rc = pl__src_fail(src, 0, err, "the header has %d columns, column %d "
                                      "is asked for", n, need);
                    goto out;
                }
                continue;
            }
        }
        if (ncols > 0 && n != ncols) {
            rc = pl__src_fail(src, 0, err, "expected %d fields as in the header, found %d%s",
                              ncols, n, n < ncols ? " (missing column)" : "");
            break;
        }
        if ((rc = pl__imp_need(src, n, need, err)) < 0)
            break;
        st->rows++;
        pl_imp_edge e = {f[c[0]], f[c[1]], NAN, 0};
        if ((rc = pl__imp_nonempty(src, &e.src, "source name", err)) < 0 ||
            (rc = pl__imp_nonempty(src, &e.dst, "target name", err)) < 0)
            break;
        if (c[2] >= 0 && (rc = pl__imp_score(src, &f[c[2]], "score", &e.score, err)) < 0)
            break;
        if ((rc = pl__imp_keep(o, &e, emit, ctx, src, st, err)) < 0)
            break;
    }
out:
    free(f);
    return rc < 0 ? rc : 0;
}

const pl_imp_format pl__imp_delim = {
    .name = "delim",
    .keys = PL_IMP_K_SEP | PL_IMP_K_HEADER | PL_IMP_K_COMMENT | PL_IMP_K_COLUMNS |
            PL_IMP_K_MIN_SCORE,
    .undirected = 0,
    .check = check,
    .read = read_delim,
};
