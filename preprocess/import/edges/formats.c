/* The table of readers and the helpers they share (reader.h). */
#include "reader.h"

#include <math.h>
#include <string.h>

#include "src/core/error.h"

static const pl_imp_format *const formats[] = {
    &pl__imp_string, &pl__imp_biogrid, &pl__imp_yeastract,
    &pl__imp_tflink, &pl__imp_dango,   &pl__imp_delim,  &pl__imp_string_actions,
};

const pl_imp_format *pl__imp_format(const char *name)
{
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(formats[i]->name, name))
            return formats[i];
    return NULL;
}

void pl__imp_opts_init(pl_imp_opts *o)
{
    memset(o, 0, sizeof *o);
    o->min_score = NAN;
}

int pl__imp_read_file(const pl_imp_format *fmt, const char *path, const pl_imp_opts *o,
                      pl_imp_emit emit, void *ctx, pl_imp_stats *st, pl_err *err)
{
    memset(st, 0, sizeof *st);
    pl_src *src;
    PL_TRY(pl__src_open(path, &src, err));
    int rc = fmt->read(src, o, emit, ctx, st, err);
    st->bytes = pl__src_bytes(src);
    pl__src_close(src);
    return rc;
}

int pl__imp_keep(const pl_imp_opts *o, const pl_imp_edge *e, pl_imp_emit emit, void *ctx,
                 const pl_src *src, pl_imp_stats *st, pl_err *err)
{
    if (!isnan(o->min_score) && e->score < o->min_score) {
        st->filtered++;
        return 0;
    }
    st->emitted++;
    return emit(ctx, e, src, err);
}

int pl__imp_col(const pl__field *f, int n, const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < n; i++)
        if (f[i].len == len && !memcmp(f[i].s, name, len))
            return i;
    return -1;
}

int pl__imp_score(const pl_src *src, const pl__field *f, const char *what, double *out,
                  pl_err *err)
{
    if (pl__parse_double(f, out) < 0 || !isfinite(*out))
        return pl__src_fail(src, f->col, err, "bad %s '%.*s'", what,
                            (int)(f->len > 40 ? 40 : f->len), f->s);
    return 0;
}

int pl__imp_need(const pl_src *src, int n, int need, pl_err *err)
{
    if (n < need)
        return pl__src_fail(src, 0, err, "expected %d fields, found %d (missing column)",
                            need, n);
    return 0;
}

int pl__imp_first_line(pl_src *src, const char **line, size_t *len, const char *expected,
                       pl_err *err)
{
    int rc = pl__src_line(src, line, len, err);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return pl__err(err, PL_EPARSE, "%s:1: empty file (expected %s)", pl__src_path(src),
                       expected);
    return 1;
}

int pl__imp_header(pl_src *src, pl__field *f, int max, const char *expected, pl_err *err)
{
    const char *line;
    size_t len;
    PL_TRY(pl__imp_first_line(src, &line, &len, expected, err));
    return pl__src_split(line, len, '\t', f, max + 1);
}

int pl__imp_row_sep(pl_src *src, char sep, pl__field *f, int max, int ncols, pl_err *err)
{
    const char *line;
    size_t len;
    int rc;
    while ((rc = pl__src_line(src, &line, &len, err)) > 0) {
        if (len == 0)
            continue;
        int n = pl__src_split(line, len, sep, f, max + 1);
        if (n != ncols)
            return pl__src_fail(src, 0, err, "expected %d%s fields as in the header, found %d%s",
                                ncols, sep == '\t' ? " tab-separated" : "", n,
                                n < ncols ? " (missing column)" : "");
        return 1;
    }
    return rc;
}

int pl__imp_row(pl_src *src, pl__field *f, int max, int ncols, pl_err *err)
{
    return pl__imp_row_sep(src, '\t', f, max, ncols, err);
}
