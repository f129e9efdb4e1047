/* YEASTRACT regulation tables: "TF;target" on each line, gene symbols, no
 * header. A name may hold commas (ADE5,7): only the semicolon separates. */
#include <math.h>
#include <string.h>

#include "reader.h"
#include "src/core/error.h"

static int read_yeastract(pl_src *src, const pl_imp_opts *o, pl_imp_emit emit, void *ctx,
                          pl_imp_stats *st, pl_err *err)
{
    const char *line;
    size_t len;
    pl__field f[3];
    int rc;
    while ((rc = pl__src_line(src, &line, &len, err)) > 0) {
        if (len == 0)
            continue;
        int n = pl__src_split(line, len, ';', f, 3);
        if (n != 2)
            return pl__src_fail(src, 0, err, "expected 'TF;target' (two names and one ';'), "
                                "found %d field%s", n, n == 1 ? "" : "s");
        st->rows++;
        pl_imp_edge e = {f[0], f[1], NAN, 0};
        PL_TRY(pl__imp_nonempty(src, &e.src, "TF name", err));
        PL_TRY(pl__imp_nonempty(src, &e.dst, "target name", err));
        if (memchr(line, '\t', len))
            return pl__src_fail(src, 0, err, "a tab in a 'TF;target' line (not a YEASTRACT "
                                "regulation table?)");
        PL_TRY(pl__imp_keep(o, &e, emit, ctx, src, st, err));
    }
    return rc;
}

const pl_imp_format pl__imp_yeastract = {
    .name = "yeastract",
    .keys = 0,
    .undirected = 0,
    .read = read_yeastract,
};
