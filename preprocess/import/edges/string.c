/* STRING protein.links, .detailed, .full and protein.physical.links (v11,
 * v12): "protein1 protein2 <score columns...>", single spaces, ids
 * "TAXON.NAME", scores integers 0..1000. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reader.h"
#include "src/core/error.h"

enum { MAX_COLS = 24 };

/* Every score column STRING has published in these files. */
static const char *const channels[] = {
    "neighborhood", "neighborhood_transferred", "fusion", "cooccurence", "homology",
    "coexpression", "coexpression_transferred", "experimental", "experiments",
    "experiments_transferred", "database", "database_transferred", "textmining",
    "textmining_transferred", "combined_score",
};

static int known_channel(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++)
        if (strlen(channels[i]) == len && !memcmp(channels[i], name, len))
            return 1;
    return 0;
}

static int check(const pl_imp_opts *o, pl_err *err)
{
    if (o->channel && !known_channel(o->channel, strlen(o->channel)))
        return pl__err(err, PL_EUSAGE,
                       "unknown STRING channel '%s' (neighborhood, fusion, cooccurence, "
                       "coexpression, experimental, database, textmining, combined_score, "
                       "or a *_transferred column of protein.links.full)", o->channel);
    return 0;
}

static int read_string(pl_src *src, const pl_imp_opts *o, pl_imp_emit emit, void *ctx,
                       pl_imp_stats *st, pl_err *err)
{
    const char *line;
    size_t len;
    pl__field f[MAX_COLS + 1];
    int rc = pl__imp_first_line(src, &line, &len, "a STRING header 'protein1 protein2 ...'",
                                err);
    if (rc < 0)
        return rc;
    int ncols = pl__src_split(line, len, ' ', f, MAX_COLS + 1);
    if (ncols < 3 || ncols > MAX_COLS || pl__imp_col(f, 2, "protein1") != 0 ||
        pl__imp_col(f, 2, "protein2") != 1)
        return pl__src_fail(src, 0, err, "not a STRING links header (expected 'protein1 "
                            "protein2' and score columns, found '%.*s')",
                            (int)(len > 80 ? 80 : len), line);
    for (int i = 2; i < ncols; i++)
        if (!known_channel(f[i].s, f[i].len))
            return pl__src_fail(src, f[i].col, err, "unknown STRING column '%.*s' in the "
                                "header", (int)f[i].len, f[i].s);
    const char *want = o->channel ? o->channel : "combined_score";
    int col = pl__imp_col(f, ncols, want);
    /* protein.links.detailed says "experimental", .full says "experiments". */
    if (col < 0 && !strcmp(want, "experimental"))
        col = pl__imp_col(f, ncols, "experiments");
    if (col < 0 && !strcmp(want, "experiments"))
        col = pl__imp_col(f, ncols, "experimental");
    if (col < 0) {
        char have[256] = "";
        size_t h = 0;
        for (int i = 2; i < ncols && h < sizeof have - 1; i++)
            h += (size_t)snprintf(have + h, sizeof have - h, "%s%.*s", i > 2 ? " " : "",
                                  (int)f[i].len, f[i].s);
        return pl__src_fail(src, 0, err, "channel '%s' is not a column of this file (it has: "
                            "%s)", want, have);
    }
    pl_imp_taxon tx = {0};
    while ((rc = pl__imp_row_sep(src, ' ', f, MAX_COLS, ncols, err)) > 0) {
        st->rows++;
        uint64_t v;
        if (pl__parse_u64(&f[col], &v) < 0 || v > 1000)
            return pl__src_fail(src, f[col].col, err, "bad %s score '%.*s' (expected an "
                                "integer 0..1000)", want, (int)(f[col].len > 40 ? 40 : f[col].len),
                                f[col].s);
        pl_imp_edge e = {f[0], f[1], (double)v, 0};
        PL_TRY(pl__imp_strip_taxon(src, &e.src, &tx, err));
        PL_TRY(pl__imp_strip_taxon(src, &e.dst, &tx, err));
        PL_TRY(pl__imp_keep(o, &e, emit, ctx, src, st, err));
    }
    return rc;
}

const pl_imp_format pl__imp_string = {
    .name = "string",
    .keys = PL_IMP_K_CHANNEL | PL_IMP_K_MIN_SCORE,
    .undirected = 1,
    .check = check,
    .read = read_string,
};
