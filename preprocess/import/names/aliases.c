/* The alias-table readers (names.h): a column pair of a delimited table,
 * SGD_features.tab and STRING protein.aliases (v11 and later; a source
 * column may hold several sources, blank-separated, v11.0), each filling
 * the names table through its alias calls. */
#include <errno.h>
#include <string.h>

#include "names.h"
#include "preprocess/import/source/fields.h"
#include "src/core/error.h"

/* 1 when one of the blank-separated sources of `f` is in the spec's list. */
static int wanted(const pl_alias_spec *spec, const pl__field *f)
{
    if (spec->n_sources == 0)
        return 1;
    pl__field s[64];
    int n = pl__src_split(f->s, f->len, ' ', s, 64);
    for (int i = 0; i < n && i < 64; i++)
        for (uint32_t k = 0; k < spec->n_sources; k++)
            if (strlen(spec->sources[k]) == s[i].len &&
                !memcmp(spec->sources[k], s[i].s, s[i].len))
                return 1;
    return 0;
}

/* STRING protein.aliases (names.h): tab-separated `string_protein_id alias
 * source` after a '#' header line ("#string_protein_id alias source", v11.0
 * "## string_protein_id ## alias ## source ##"). The protein id
 * "4932.YAL001C" names gene YAL001C of the list; the alias maps to it. */
static int load_string(pl_names *nm, const pl_alias_spec *spec, pl_alias_stats *st,
                       pl_err *err)
{
    pl_src *src;
    PL_TRY(pl__src_open(spec->path, &src, err));
    uint32_t prec = pl__names_table_begin(nm);
    pl_imp_taxon tx = {0};
    const char *line;
    size_t len;
    pl__field f[4];
    int rc;
    while ((rc = pl__src_line(src, &line, &len, err)) > 0) {
        if (len == 0 || line[0] == '#')
            continue;
        int n = pl__src_split(line, len, '\t', f, 4);
        if (n != 3) {
            rc = pl__src_fail(src, 0, err, "expected the 3 tab-separated columns of STRING "
                              "protein.aliases (string_protein_id alias source), found %d", n);
            break;
        }
        st->rows++;
        if ((rc = pl__imp_nonempty(src, &f[1], "alias", err)) < 0 ||
            (rc = pl__imp_strip_taxon(src, &f[0], &tx, err)) < 0)
            break;
        if (!wanted(spec, &f[2])) {
            st->filtered++;
            continue;
        }
        int64_t g = pl__names_listed(nm, f[0].s, f[0].len);
        if (g < 0) {
            st->no_gene++;
            continue;
        }
        if ((rc = pl__names_add_alias(nm, f[1].s, f[1].len, (int32_t)g, prec, st)) < 0)
            break;
    }
    if (rc == -ENOMEM)
        rc = pl__err(err, rc, "%s: out of memory", spec->path);
    pl__src_close(src);
    return rc < 0 ? rc : 0;
}

int pl__names_load_aliases(pl_names *nm, const pl_alias_spec *spec, pl_alias_stats *st,
                           pl_err *err)
{
    memset(st, 0, sizeof *st);
    PL_FAIL_IF(!pl__names_count(nm), err, PL_EUSAGE, "%s: alias table before the gene list", spec->path);
    if (spec->kind == PL_ALIAS_STRING)
        return load_string(nm, spec, st, err);
    int sgd = spec->kind == PL_ALIAS_SGD_FEATURES;
    int gc = sgd ? 3 : spec->gene_col - 1, ac = sgd ? 4 : spec->alias_col - 1;
    PL_FAIL_IF(gc < 0 || ac < 0 || gc == ac || gc > 63 || ac > 63, err, PL_EUSAGE,
               "%s: bad gene/alias columns %d and %d", spec->path, spec->gene_col,
               spec->alias_col);
    char sep = sgd ? '\t' : spec->sep ? spec->sep : '\t';
    int need = (gc > ac ? gc : ac) + 1;
    if (sgd)
        need = 6;
    pl_src *src;
    PL_TRY(pl__src_open(spec->path, &src, err));
    /* Precedence: tables in load order; inside SGD_features.tab, standard
     * names and SGDIDs before the free-form alias column. */
    uint32_t prec = pl__names_table_begin(nm);
    const char *line;
    size_t len;
    pl__field f[65];
    int rc;
    while ((rc = pl__src_line(src, &line, &len, err)) > 0) {
        if (len == 0 || (!sgd && spec->header && pl__src_lineno(src) == 1))
            continue;
        int n = pl__src_split(line, len, sep, f, 65);
        if (n < need || (sgd && n != 16)) {
            rc = pl__src_fail(src, 0, err, sgd ? "expected the 16 tab-separated columns of "
                              "SGD_features.tab, found %d" : "expected at least %d fields, "
                              "found %d (missing column)", sgd ? n : need, n);
            break;
        }
        st->rows++;
        if (f[gc].len == 0)
            continue; /* SGD CDS and intron rows name no feature */
        int64_t g = pl__names_listed(nm, f[gc].s, f[gc].len);
        if (g < 0) {
            st->no_gene++;
            continue;
        }
        if ((rc = pl__names_add_alias(nm, f[ac].s, f[ac].len, (int32_t)g, prec, st)) < 0)
            break;
        if (sgd) {
            if ((rc = pl__names_add_alias(nm, f[0].s, f[0].len, (int32_t)g, prec, st)) < 0)
                break;
            pl__field a[64];
            int na = pl__src_split(f[5].s, f[5].len, '|', a, 64);
            for (int i = 0; i < na && i < 64 && rc >= 0; i++)
                rc = pl__names_add_alias(nm, a[i].s, a[i].len, (int32_t)g, prec + 1, st);
            if (rc < 0)
                break;
        }
    }
    if (rc == -ENOMEM)
        rc = pl__err(err, rc, "%s: out of memory", spec->path);
    pl__src_close(src);
    return rc;
}
