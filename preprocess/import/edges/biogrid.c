/* BioGRID TAB 3.0 (37 columns) and the older TAB 2.0 (24 columns):
 * tab-separated, header "#BioGRID Interaction ID\t...", missing values "-".
 * Columns are found by their header names, so either release reads. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reader.h"
#include "src/core/error.h"

enum { MAX_COLS = 64 };

/* BioGRID's Experimental System names (physical, then genetic). */
static const char *const systems[] = {
    "Affinity Capture-Luminescence", "Affinity Capture-MS", "Affinity Capture-RNA",
    "Affinity Capture-Western", "Biochemical Activity", "Co-crystal Structure",
    "Co-fractionation", "Co-localization", "Co-purification", "Cross-Linking-MS (XL-MS)",
    "FRET", "Far Western", "PCA", "Protein-peptide", "Protein-RNA", "Proximity Label-MS",
    "Reconstituted Complex", "Two-hybrid",
    "Dosage Growth Defect", "Dosage Lethality", "Dosage Rescue", "Negative Genetic",
    "Phenotypic Enhancement", "Phenotypic Suppression", "Positive Genetic",
    "Synthetic Growth Defect", "Synthetic Haploinsufficiency", "Synthetic Lethality",
    "Synthetic Rescue",
};

/* The name columns of each `id` choice (A, then B). */
static const struct {
    const char *id, *a, *b;
} ids[] = {
    {"systematic", "Systematic Name Interactor A", "Systematic Name Interactor B"},
    {"symbol", "Official Symbol Interactor A", "Official Symbol Interactor B"},
    {"entrez", "Entrez Gene Interactor A", "Entrez Gene Interactor B"},
    {"biogrid", "BioGRID ID Interactor A", "BioGRID ID Interactor B"},
};

static int id_index(const char *id)
{
    for (int i = 0; i < (int)(sizeof ids / sizeof ids[0]); i++)
        if (!strcmp(ids[i].id, id ? id : "systematic"))
            return i;
    return -1;
}

static int check(const pl_imp_opts *o, pl_err *err)
{
    if (id_index(o->id) < 0)
        return pl__err(err, PL_EUSAGE, "unknown BioGRID id '%s' (systematic, symbol, entrez "
                       "or biogrid)", o->id);
    if (o->system_type && strcmp(o->system_type, "physical") && strcmp(o->system_type, "genetic"))
        return pl__err(err, PL_EUSAGE, "unknown Experimental System Type '%s' (physical or "
                       "genetic)", o->system_type);
    if (o->throughput && strcmp(o->throughput, "low") && strcmp(o->throughput, "high"))
        return pl__err(err, PL_EUSAGE, "unknown throughput '%s' (low or high)", o->throughput);
    for (uint32_t k = 0; k < o->n_systems; k++) {
        size_t i = 0;
        while (i < sizeof systems / sizeof systems[0] && strcmp(systems[i], o->systems[k]))
            i++;
        if (i == sizeof systems / sizeof systems[0])
            return pl__err(err, PL_EUSAGE, "unknown BioGRID Experimental System '%s'",
                           o->systems[k]);
    }
    return 0;
}

static int field_is(const pl__field *f, const char *s)
{
    size_t n = strlen(s);
    return f->len == n && !memcmp(f->s, s, n);
}

static int organism_ok(const pl_src *src, const pl_imp_opts *o, const pl__field *f, int *ok,
                       pl_err *err)
{
    uint64_t v;
    if (pl__parse_u64(f, &v) < 0)
        return pl__src_fail(src, f->col, err, "bad organism id '%.*s'",
                            (int)(f->len > 40 ? 40 : f->len), f->s);
    int hit = 0;
    for (uint32_t i = 0; i < o->n_organisms; i++)
        hit |= o->organisms[i] == v;
    *ok &= hit;
    return 0;
}

static int read_biogrid(pl_src *src, const pl_imp_opts *o, pl_imp_emit emit, void *ctx,
                        pl_imp_stats *st, pl_err *err)
{
    pl__field f[MAX_COLS + 1];
    PL_TRY(check(o, err));
    int ncols = pl__imp_header(src, f, MAX_COLS, "the BioGRID header '#BioGRID Interaction ID "
                               "...'", err);
    if (ncols < 0)
        return ncols;
    if (ncols > MAX_COLS || !field_is(&f[0], "#BioGRID Interaction ID"))
        return pl__src_fail(src, 0, err, "not a BioGRID TAB 3.0 header (expected '#BioGRID "
                            "Interaction ID' and tab-separated column names)");
    int id = id_index(o->id);
    const char *need[] = {ids[id].a, ids[id].b, "Experimental System",
                          "Experimental System Type", "Throughput"};
    int c[5];
    for (int i = 0; i < 5; i++)
        if ((c[i] = pl__imp_col(f, ncols, need[i])) < 0)
            return pl__src_fail(src, 0, err, "the header has no '%s' column", need[i]);
    /* TAB 3.0 "Organism ID Interactor A"; TAB 2.0 "Organism Interactor A". */
    int org_a = pl__imp_col(f, ncols, "Organism ID Interactor A");
    int org_b = pl__imp_col(f, ncols, "Organism ID Interactor B");
    if (org_a < 0 || org_b < 0) {
        org_a = pl__imp_col(f, ncols, "Organism Interactor A");
        org_b = pl__imp_col(f, ncols, "Organism Interactor B");
    }
    if (org_a < 0 || org_b < 0)
        return pl__src_fail(src, 0, err, "the header has no 'Organism ID Interactor A/B' "
                            "columns");
    const char *tp = !o->throughput ? NULL
                     : !strcmp(o->throughput, "high") ? "High Throughput" : "Low Throughput";
    int rc;
    while ((rc = pl__imp_row(src, f, MAX_COLS, ncols, err)) > 0) {
        st->rows++;
        int ok = 1;
        if (o->system_type)
            ok &= field_is(&f[c[3]], o->system_type);
        if (ok && o->n_systems) {
            int hit = 0;
            for (uint32_t i = 0; i < o->n_systems; i++)
                hit |= field_is(&f[c[2]], o->systems[i]);
            ok &= hit;
        }
        if (ok && tp)
            ok &= memmem(f[c[4]].s, f[c[4]].len, tp, strlen(tp)) != NULL;
        if (ok && o->n_organisms) {
            PL_TRY(organism_ok(src, o, &f[org_a], &ok, err));
            PL_TRY(organism_ok(src, o, &f[org_b], &ok, err));
        }
        if (!ok) {
            st->filtered++;
            continue;
        }
        pl_imp_edge e = {f[c[0]], f[c[1]], NAN, 0};
        PL_TRY(pl__imp_nonempty(src, &e.src, need[0], err));
        PL_TRY(pl__imp_nonempty(src, &e.dst, need[1], err));
        PL_TRY(pl__imp_keep(o, &e, emit, ctx, src, st, err));
    }
    return rc;
}

const pl_imp_format pl__imp_biogrid = {
    .name = "biogrid",
    .keys = PL_IMP_K_SYSTEM_TYPE | PL_IMP_K_SYSTEMS | PL_IMP_K_ORGANISMS |
            PL_IMP_K_THROUGHPUT | PL_IMP_K_ID,
    .undirected = 1,
    .check = check,
    .read = read_biogrid,
};
