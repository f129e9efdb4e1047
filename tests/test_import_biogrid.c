/* The BioGRID reader on TAB 3.0 files written in the published 37-column
 * layout (and the real TAB 2.0 sample): filters on system type, systems,
 * organisms and throughput, the id columns, plain/gzip/zstd equivalence,
 * and malformed files named by file, line and reason. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "importutil.h"

TestSuite(import_biogrid, .init = pl_test_dir_init, .fini = pl_test_dir_fini);

/* The TAB 3.0 header as BioGRID publishes it. */
static const char *const tab3_cols[37] = {
    "#BioGRID Interaction ID", "Entrez Gene Interactor A", "Entrez Gene Interactor B",
    "BioGRID ID Interactor A", "BioGRID ID Interactor B", "Systematic Name Interactor A",
    "Systematic Name Interactor B", "Official Symbol Interactor A",
    "Official Symbol Interactor B", "Synonyms Interactor A", "Synonyms Interactor B",
    "Experimental System", "Experimental System Type", "Author", "Publication Source",
    "Organism ID Interactor A", "Organism ID Interactor B", "Throughput", "Score",
    "Modification", "Qualifications", "Tags", "Source Database",
    "SWISS-PROT Accessions Interactor A", "TREMBL Accessions Interactor A",
    "REFSEQ Accessions Interactor A", "SWISS-PROT Accessions Interactor B",
    "TREMBL Accessions Interactor B", "REFSEQ Accessions Interactor B", "Ontology Term IDs",
    "Ontology Term Names", "Ontology Term Categories", "Ontology Term Qualifier IDs",
    "Ontology Term Qualifier Names", "Ontology Term Types", "Organism Name Interactor A",
    "Organism Name Interactor B",
};

static void header(pl_test_text *t)
{
    for (int i = 0; i < 37; i++)
        pl_test_tprintf(t, "%s%s", tab3_cols[i], i < 36 ? "\t" : "\n");
}

/* One TAB 3.0 row in the published style ("-" for missing values). */
static void row(pl_test_text *t, int id, const char *sa, const char *sb, const char *syma,
                const char *symb, const char *system, const char *type, int org_a, int org_b,
                const char *throughput)
{
    pl_test_tprintf(t, "%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\tCDP1|YOL145C\t-\t%s\t%s\t"
                    "Krogan NJ (2006)\tPUBMED:16554755\t%d\t%d\t%s\t-\t-\t-\t-\tBIOGRID\t"
                    "P38439\t-\tNP_013537\tQ02206\t-\tNP_014700\t-\t-\t-\t-\t-\t-\t"
                    "Saccharomyces cerevisiae (S288c)\tSaccharomyces cerevisiae (S288c)\n",
                    id, 850000 + id, 860000 + id, 30000 + id, 40000 + id, sa, sb, syma, symb,
                    system, type, org_a, org_b, throughput);
}

static void sample(pl_test_text *t)
{
    header(t);
    row(t, 1, "YLR418C", "YOL145C", "CDC73", "CTR9", "Affinity Capture-MS", "physical", 559292,
        559292, "High Throughput");
    row(t, 2, "YOL145C", "YLR418C", "CTR9", "CDC73", "Two-hybrid", "physical", 559292, 559292,
        "Low Throughput");
    row(t, 3, "YAL001C", "YBR123C", "TFC3", "TFC1", "Synthetic Lethality", "genetic", 559292,
        559292, "Low Throughput|High Throughput");
    row(t, 4, "YAL001C", "-", "TFC3", "TP53", "Two-hybrid", "physical", 559292, 9606,
        "Low Throughput");
}

static int read_with(const pl_test_text *t, int codec, const pl_imp_opts *o, pl_test_text *out,
                     pl_imp_stats *st, pl_err *err)
{
    return pl_test_imp_collect("biogrid", pl_test_put("b.tab3.txt", t->s, codec), o, out, st,
                               err);
}

Test(import_biogrid, filters_and_codecs)
{
    pl_test_text t = {0};
    sample(&t);
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.system_type = "physical";
    o.organisms[o.n_organisms++] = 559292;
    for (int c = PL_TEST_PLAIN; c <= PL_TEST_ZSTD; c++) {
        pl_test_text out = {0};
        pl_imp_stats st;
        pl_err err;
        cr_assert_eq(read_with(&t, c, &o, &out, &st, &err), 0, "%s", err.msg);
        cr_assert_str_eq(out.s, "YLR418C\tYOL145C\t-\nYOL145C\tYLR418C\t-\n");
        cr_assert_eq(st.rows, 4);
        cr_assert_eq(st.filtered, 2);
        free(out.s);
    }
    /* systems and throughput */
    pl__imp_opts_init(&o);
    o.systems[o.n_systems++] = "Two-hybrid";
    o.systems[o.n_systems++] = "Synthetic Lethality";
    o.throughput = "low";
    o.id = "symbol";
    pl_test_text out = {0};
    pl_err err;
    cr_assert_eq(read_with(&t, PL_TEST_GZIP, &o, &out, NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "CTR9\tCDC73\t-\nTFC3\tTFC1\t-\nTFC3\tTP53\t-\n");
    free(out.s);
    out = (pl_test_text){0};
    pl__imp_opts_init(&o);
    o.throughput = "high";
    o.system_type = "genetic";
    o.id = "entrez";
    cr_assert_eq(read_with(&t, PL_TEST_PLAIN, &o, &out, NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "850003\t860003\t-\n");
    free(out.s), free(t.s);
}

/* The real TAB 2.0 sample reads through the same column names. */
Test(import_biogrid, real_tab2_sample)
{
    char *root = pl_test_real_data();
    char p[4096];
    snprintf(p, sizeof p, "%s/real-raw/biogrid/yeast.tab2.txt.gz", root);
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.system_type = "physical";
    o.organisms[o.n_organisms++] = 559292;
    pl_test_text out = {0};
    pl_imp_stats st;
    pl_err err;
    cr_assert_eq(pl_test_imp_collect("biogrid", p, &o, &out, &st, &err), 0, "%s", err.msg);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "zcat '%s' | awk -F'\\t' 'NR>1 && $13==\"physical\" && "
             "$16==559292 && $17==559292 {print $6 \"\\t\" $7 \"\\t-\"}'", p);
    FILE *f = popen(cmd, "r");
    char want[4096];
    size_t n = fread(want, 1, sizeof want - 1, f);
    want[n] = '\0';
    cr_assert_eq(pclose(f), 0);
    cr_assert_eq(st.rows, 3);
    cr_assert_str_eq(out.s, want);
    free(out.s), free(root);
}

static void expect_bad(const pl_test_text *t, int codec, const pl_imp_opts *o,
                       unsigned long line, unsigned long col, const char *reason)
{
    pl_test_imp_fails("biogrid", o, "b.tab3.txt", t->s, codec, line, col, reason);
}

Test(import_biogrid, bad_wrong_header)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, "BioGRID Interaction ID\tEntrez Gene Interactor A\n1\t2\n");
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    expect_bad(&t, PL_TEST_PLAIN, &o, 1, 0, "not a BioGRID TAB 3.0 header");
    free(t.s);
}

Test(import_biogrid, bad_missing_header_column)
{
    pl_test_text t = {0};
    for (int i = 0; i < 37; i++)
        if (i != 12) /* no Experimental System Type */
            pl_test_tprintf(&t, "%s%s", tab3_cols[i], i < 36 ? "\t" : "\n");
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    expect_bad(&t, PL_TEST_GZIP, &o, 1, 0, "the header has no 'Experimental System Type' column");
    free(t.s);
}

Test(import_biogrid, bad_missing_column_in_row)
{
    pl_test_text t = {0};
    sample(&t);
    pl_test_tprintf(&t, "5\t1\t2\t3\n");
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    expect_bad(&t, PL_TEST_ZSTD, &o, 6, 0, "expected 37 tab-separated fields as in the header, "
               "found 4 (missing column)");
    free(t.s);
}

Test(import_biogrid, bad_organism_number)
{
    pl_test_text t = {0};
    header(&t);
    row(&t, 1, "YLR418C", "YOL145C", "CDC73", "CTR9", "Two-hybrid", "physical", 559292, 559292,
        "Low Throughput");
    /* the organism of B written as a name */
    char *bad = strdup("9\t1\t2\t3\t4\tYAL001C\tYAL002W\tA\tB\t-\t-\tTwo-hybrid\tphysical\tX\t"
                       "PUBMED:1\t559292\tyeast\tLow Throughput\t-\t-\t-\t-\tBIOGRID\t-\t-\t-\t-"
                       "\t-\t-\t-\t-\t-\t-\t-\t-\tS\tS\n");
    pl_test_tprintf(&t, "%s", bad);
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.organisms[o.n_organisms++] = 559292;
    const char *col = strstr(bad, "yeast");
    expect_bad(&t, PL_TEST_PLAIN, &o, 3, (unsigned long)(col - bad) + 1, "bad organism id 'yeast'");
    free(t.s), free(bad);
}

Test(import_biogrid, bad_unknown_system_name)
{
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.systems[o.n_systems++] = "Two-Hybrid"; /* BioGRID spells it "Two-hybrid" */
    pl_err err = {0};
    cr_assert_eq(pl__imp_biogrid.check(&o, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "unknown BioGRID Experimental System 'Two-Hybrid'"), "%s", err.msg);
    pl__imp_opts_init(&o);
    o.system_type = "physicall";
    cr_assert_eq(pl__imp_biogrid.check(&o, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "unknown Experimental System Type 'physicall'"), "%s", err.msg);
    pl__imp_opts_init(&o);
    o.id = "orf";
    cr_assert_eq(pl__imp_biogrid.check(&o, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "unknown BioGRID id 'orf'"), "%s", err.msg);
}

Test(import_biogrid, bad_empty_name_and_truncated_zstd)
{
    pl_test_text t = {0};
    sample(&t);
    row(&t, 5, "", "YOL145C", "CDC73", "CTR9", "Two-hybrid", "physical", 559292, 559292,
        "Low Throughput");
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    expect_bad(&t, PL_TEST_PLAIN, &o, 6, 29, "empty Systematic Name Interactor A");
    free(t.s);
    t = (pl_test_text){0};
    sample(&t);
    for (int i = 0; i < 3000; i++)
        row(&t, 10 + i, "YAL001C", "YAL002W", "A", "B", "Two-hybrid", "physical", 559292,
            559292, "Low Throughput");
    size_t n;
    void *z = pl_test_compress(t.s, t.len, PL_TEST_ZSTD, &n);
    free(path);
    path = pl_test_path(dir, "cut.zst");
    pl_test_write_bytes(path, z, n - 3);
    pl_test_text out = {0};
    pl_err err;
    int rc = pl_test_imp_collect("biogrid", path, &o, &out, NULL, &err);
    size_t lines = 1;
    for (size_t k = 0; k < out.len; k++)
        lines += out.s[k] == '\n';
    pl_test_expect_at(rc, PL_EPARSE, &err, path, (unsigned long)lines + 1, 0,
                      "truncated zstd stream");
    free(out.s), free(z), free(t.s);
}
