/* STRING protein.aliases as an alias table (names.h): v11 and later,
 * tab-separated `string_protein_id alias source` after a '#' header line
 * ("#string_protein_id alias source", v11.0 "## string_protein_id ## alias
 * ## source ##"). The protein id "4932.YAL001C" names gene YAL001C of the
 * list; the alias maps to it. A source column may hold several sources,
 * blank-separated (v11.0). */
#include <errno.h>
#include <string.h>

#include "preprocess/import/names/names.h"
#include "reader.h"
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

int pl__names_load_string_aliases(pl_names *nm, const pl_alias_spec *spec, pl_alias_stats *st,
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
