/* The YEASTRACT and TFLink readers: names with commas kept whole, the real
 * YEASTRACT table against awk, TFLink files written in the published
 * simpleFormat layout, id choices and the small-scale filter, and malformed
 * files named by file, line and reason. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "importutil.h"

TestSuite(import_regulatory, .init = pl_test_dir_init, .fini = pl_test_dir_fini);

static int read_as(const char *fmt, const char *text, int codec, const pl_imp_opts *o,
                   pl_test_text *out, pl_imp_stats *st, pl_err *err)
{
    return pl_test_imp_collect(fmt, pl_test_put("r.tsv", text, codec), o, out, st, err);
}

static void expect_bad(const char *fmt, const char *text, int codec, const pl_imp_opts *o,
                       unsigned long line, unsigned long col, const char *reason)
{
    pl_test_imp_fails(fmt, o, "r.tsv", text, codec, line, col, reason);
}

/* ------------------------------------------------------------ YEASTRACT */

Test(import_regulatory, yeastract_commas_stay_in_names)
{
    const char *text = "SMP1;ICS2\r\nGCN4;ADE5,7\nGCN4;ARG5,6\n\nSMP1;SMP1\n";
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    for (int c = PL_TEST_PLAIN; c <= PL_TEST_ZSTD; c++) {
        pl_test_text out = {0};
        pl_imp_stats st;
        pl_err err;
        cr_assert_eq(read_as("yeastract", text, c, &o, &out, &st, &err), 0, "%s", err.msg);
        cr_assert_str_eq(out.s, "SMP1\tICS2\t-\nGCN4\tADE5,7\t-\nGCN4\tARG5,6\t-\nSMP1\tSMP1\t-\n");
        cr_assert_eq(st.rows, 4);
        free(out.s);
    }
}

Test(import_regulatory, yeastract_real_table_matches_awk)
{
    char *root = pl_test_real_data();
    char p[4096], cmd[4400];
    snprintf(p, sizeof p, "%s/real/yeastract/RegulationTwoColumnTable_both.tsv.gz", root);
    snprintf(cmd, sizeof cmd, "zcat '%s' | awk -F';' 'NF==2 {n++; if ($2 ~ /,/) c++} "
             "END{print n, c}'", p);
    FILE *f = popen(cmd, "r");
    unsigned long n = 0, commas = 0;
    cr_assert_eq(fscanf(f, "%lu %lu", &n, &commas), 2);
    cr_assert_eq(pclose(f), 0);
    cr_assert_eq(n, 90895);
    cr_assert_gt(commas, 0);
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    pl_test_text out = {0};
    pl_imp_stats st;
    pl_err err;
    cr_assert_eq(pl_test_imp_collect("yeastract", p, &o, &out, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(st.rows, n);
    cr_assert_eq(st.emitted, n);
    unsigned long seen = 0;
    for (char *l = out.s; (l = strstr(l, "\t")); l++) { /* targets with a comma */
        char *end = strchr(l + 1, '\t');
        if (memchr(l + 1, ',', (size_t)(end - l - 1)))
            seen++;
        l = strchr(end, '\n');
    }
    cr_assert_eq(seen, commas);
    free(out.s), free(root);
}

Test(import_regulatory, yeastract_bad_lines)
{
    expect_bad("yeastract", "SMP1;ICS2\nSMP1 ICS2\n", PL_TEST_PLAIN, NULL, 2, 0,
               "expected 'TF;target' (two names and one ';'), found 1 field");
    expect_bad("yeastract", "SMP1;ICS2\nA;B;C\n", PL_TEST_GZIP, NULL, 2, 0, "found 3 fields");
    expect_bad("yeastract", "SMP1;ICS2\n;ICS2\n", PL_TEST_ZSTD, NULL, 2, 1, "empty TF name");
    expect_bad("yeastract", "SMP1;\n", PL_TEST_PLAIN, NULL, 1, 6, "empty target name");
    expect_bad("yeastract", "TF\ttarget;x\n", PL_TEST_PLAIN, NULL, 1, 0, "a tab in a 'TF;target' line");
    expect_bad("yeastract", "SMP1;IC\xffS2\n", PL_TEST_PLAIN, NULL, 1, 8, "invalid UTF-8");
}

/* --------------------------------------------------------------- TFLink */

/* The header of TFLink_*_interactions_All_simpleFormat_v1.0.tsv. */
#define TFLINK_HEADER "UniprotID.TF\tUniprotID.Target\tNCBI.GeneID.TF\tNCBI.GeneID.Target\t" \
    "Name.TF\tName.Target\tDetection.method\tPubmedID\tOrganism\tSource.database\t" \
    "Small-scale.evidence\tTF.TFLink.ortho\tTF.nonTFLink.ortho\tTarget.TFLink.ortho\t" \
    "Target.nonTFLink.ortho\n"

static const char *tflink_text =
    TFLINK_HEADER
    "P03069\tP07258\t856709\t851474\tGCN4\tCPA1\tchromatin immunoprecipitation assay;"
    "inferred by curator\t11069890;16522208\tSaccharomyces cerevisiae\tYEASTRACT;GTRD\tYes\t-"
    "\t-\t-\t-\n"
    "P03069\tP04076\t856709\t856520\tGCN4\tARG4\tchromatin immunoprecipitation assay\t"
    "27924024\tSaccharomyces cerevisiae\tGTRD\tNo\t-\t-\t-\t-\n"
    "Q02206\tP07258\t854020\t851474\tCTR9\tCPA1\tinferred by curator\t26578589\t"
    "Saccharomyces cerevisiae\tYEASTRACT\tYes\t-\t-\t-\t-\n";

Test(import_regulatory, tflink_ids_and_small_scale)
{
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    for (int c = PL_TEST_PLAIN; c <= PL_TEST_ZSTD; c++) {
        pl_test_text out = {0};
        pl_err err;
        cr_assert_eq(read_as("tflink", tflink_text, c, &o, &out, NULL, &err), 0, "%s", err.msg);
        cr_assert_str_eq(out.s, "GCN4\tCPA1\t-\nGCN4\tARG4\t-\nCTR9\tCPA1\t-\n");
        free(out.s);
    }
    o.id = "uniprot";
    o.small_scale = 1;
    pl_test_text out = {0};
    pl_imp_stats st;
    pl_err err;
    cr_assert_eq(read_as("tflink", tflink_text, PL_TEST_GZIP, &o, &out, &st, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(out.s, "P03069\tP07258\t-\nQ02206\tP07258\t-\n");
    cr_assert_eq(st.rows, 3);
    cr_assert_eq(st.filtered, 1);
    free(out.s);
    out = (pl_test_text){0};
    o.id = "entrez";
    o.small_scale = 0;
    cr_assert_eq(read_as("tflink", tflink_text, PL_TEST_PLAIN, &o, &out, NULL, &err), 0, "%s",
                 err.msg);
    cr_assert(strncmp(out.s, "856709\t851474\t-\n", 16) == 0, "%s", out.s);
    free(out.s);
}

Test(import_regulatory, tflink_bad_files)
{
    /* wrong header: a YEASTRACT line */
    expect_bad("tflink", "GCN4;CPA1\n", PL_TEST_PLAIN, NULL, 1, 0, "not a TFLink header");
    /* header without Name.Target */
    expect_bad("tflink", "UniprotID.TF\tUniprotID.Target\tName.TF\nA\tB\tC\n", PL_TEST_GZIP,
               NULL, 1, 0, "the header has no 'Name.Target' column");
    /* a row with a missing column */
    pl_test_text t = {0};
    pl_test_tprintf(&t, "%sP1\tP2\t1\t2\tA\tB\n", tflink_text);
    expect_bad("tflink", t.s, PL_TEST_ZSTD, NULL, 5, 0, "expected 15 tab-separated fields as in "
               "the header, found 6 (missing column)");
    free(t.s);
    /* a bad Small-scale.evidence value under the filter */
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.small_scale = 1;
    t = (pl_test_text){0};
    pl_test_tprintf(&t, TFLINK_HEADER "P1\tP2\t1\t2\tA\tB\tm\t1\tS\tGTRD\tyes\t-\t-\t-\t-\n");
    const char *yes = strstr(t.s + strlen(TFLINK_HEADER), "yes");
    expect_bad("tflink", t.s, PL_TEST_PLAIN, &o, 2,
               (unsigned long)(yes - (t.s + strlen(TFLINK_HEADER))) + 1,
               "bad Small-scale.evidence 'yes' (expected Yes or No)");
    free(t.s);
    /* an empty name */
    expect_bad("tflink", TFLINK_HEADER "P1\tP2\t1\t2\t\tB\tm\t1\tS\tGTRD\tNo\t-\t-\t-\t-\n",
               PL_TEST_PLAIN, NULL, 2, 11, "empty Name.TF");
    /* an unknown id choice */
    pl__imp_opts_init(&o);
    o.id = "symbol";
    pl_err err = {0};
    cr_assert_eq(pl__imp_tflink.check(&o, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "unknown TFLink id 'symbol'"), "%s", err.msg);
}
