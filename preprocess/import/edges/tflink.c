/* TFLink TF-target tables (TFLink_<organism>_interactions_*_simpleFormat):
 * tab-separated with a header row naming UniprotID.TF, UniprotID.Target,
 * NCBI.GeneID.TF, NCBI.GeneID.Target, Name.TF, Name.Target,
 * Detection.method, PubmedID, Organism, Source.database,
 * Small-scale.evidence (and, in later releases, ortholog columns). Columns
 * are found by name. */
#include <math.h>
#include <string.h>

#include "reader.h"
#include "src/core/error.h"

enum { MAX_COLS = 32 };

static const struct {
    const char *id, *tf, *target;
} ids[] = {
    {"name", "Name.TF", "Name.Target"},
    {"uniprot", "UniprotID.TF", "UniprotID.Target"},
    {"entrez", "NCBI.GeneID.TF", "NCBI.GeneID.Target"},
};

static int id_index(const char *id)
{
    for (int i = 0; i < (int)(sizeof ids / sizeof ids[0]); i++)
        if (!strcmp(ids[i].id, id ? id : "name"))
            return i;
    return -1;
}

static int check(const pl_imp_opts *o, pl_err *err)
{
    if (id_index(o->id) < 0)
        return pl__err(err, PL_EUSAGE, "unknown TFLink id '%s' (name, uniprot or entrez)",
                       o->id);
    return 0;
}

static int read_tflink(pl_src *src, const pl_imp_opts *o, pl_imp_emit emit, void *ctx,
                       pl_imp_stats *st, pl_err *err)
{
    pl__field f[MAX_COLS + 1];
    PL_TRY(check(o, err));
    int ncols = pl__imp_header(src, f, MAX_COLS, "a TFLink header 'UniprotID.TF\\tUniprotID."
                               "Target\\t...'", err);
    if (ncols < 0)
        return ncols;
    if (ncols > MAX_COLS || pl__imp_col(f, ncols, "UniprotID.TF") != 0)
        return pl__src_fail(src, 0, err, "not a TFLink header (expected 'UniprotID.TF' first "
                            "and tab-separated column names)");
    int id = id_index(o->id);
    int ctf = pl__imp_col(f, ncols, ids[id].tf), ctg = pl__imp_col(f, ncols, ids[id].target);
    if (ctf < 0 || ctg < 0)
        return pl__src_fail(src, 0, err, "the header has no '%s' column",
                            ctf < 0 ? ids[id].tf : ids[id].target);
    int css = pl__imp_col(f, ncols, "Small-scale.evidence");
    if (o->small_scale && css < 0)
        return pl__src_fail(src, 0, err, "the header has no 'Small-scale.evidence' column");
    int rc;
    while ((rc = pl__imp_row(src, f, MAX_COLS, ncols, err)) > 0) {
        st->rows++;
        if (o->small_scale) {
            const pl__field *s = &f[css];
            int yes = s->len == 3 && !memcmp(s->s, "Yes", 3);
            if (!yes && !(s->len == 2 && !memcmp(s->s, "No", 2)))
                return pl__src_fail(src, s->col, err, "bad Small-scale.evidence '%.*s' "
                                    "(expected Yes or No)", (int)(s->len > 20 ? 20 : s->len),
                                    s->s);
            if (!yes) {
                st->filtered++;
                continue;
            }
        }
        pl_imp_edge e = {f[ctf], f[ctg], NAN, 0};
        PL_TRY(pl__imp_nonempty(src, &e.src, ids[id].tf, err));
        PL_TRY(pl__imp_nonempty(src, &e.dst, ids[id].target, err));
        PL_TRY(pl__imp_keep(o, &e, emit, ctx, src, st, err));
    }
    return rc;
}

const pl_imp_format pl__imp_tflink = {
    .name = "tflink",
    .keys = PL_IMP_K_ID | PL_IMP_K_SMALL_SCALE,
    .undirected = 0,
    .check = check,
    .read = read_tflink,
};
