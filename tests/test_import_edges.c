/* The DANGO adjacency and generic delimited readers: 1-based indices into a
 * gene list (the real DANGO files against awk), separators, header or not,
 * columns by number and by name, and malformed files named by file, line
 * and reason. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "importutil.h"

static char *genes;
static void setup(void)
{
    pl_test_dir_init();
    genes = pl_test_write(dir, "genes.txt", "YAL001C\nYAL002W\nQ0045\nYBR123C"); /* no final \n */
}
static void teardown(void)
{
    pl_test_dir_fini();
    free(genes);
}
TestSuite(import_edges, .init = setup, .fini = teardown);

static int read_as(const char *fmt, const char *text, int codec, const pl_imp_opts *o,
                   pl_test_text *out, pl_imp_stats *st, pl_err *err)
{
    return pl_test_imp_collect(fmt, pl_test_put("e.txt", text, codec), o, out, st, err);
}

static void expect_bad(const char *fmt, const char *text, int codec, const pl_imp_opts *o,
                       unsigned long line, unsigned long col, const char *reason)
{
    pl_test_imp_fails(fmt, o, "e.txt", text, codec, line, col, reason);
}

static pl_imp_opts dango_opts(void)
{
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.gene_list = genes;
    return o;
}

/* ---------------------------------------------------------------- DANGO */

Test(import_edges, dango_indices_are_one_based)
{
    const char *text = "1\t2\t0.150000\n2\t1\t0.150000\n3 4 0.9\n4\t4\t0.1\n";
    pl_imp_opts o = dango_opts();
    o.min_score = 0.15;
    for (int c = PL_TEST_PLAIN; c <= PL_TEST_ZSTD; c++) {
        pl_test_text out = {0};
        pl_imp_stats st;
        pl_err err;
        cr_assert_eq(read_as("dango", text, c, &o, &out, &st, &err), 0, "%s", err.msg);
        cr_assert_str_eq(out.s, "YAL001C\tYAL002W\t0.15\nYAL002W\tYAL001C\t0.15\n"
                                "Q0045\tYBR123C\t0.9\n");
        cr_assert_eq(st.rows, 4);
        cr_assert_eq(st.filtered, 1);
        free(out.s);
    }
}

Test(import_edges, dango_real_files_match_awk)
{
    char *root = pl_test_real_data();
    const char *ch[] = {"neighborhood", "fusion", "cooccurence", "database"};
    char gl[4096];
    snprintf(gl, sizeof gl, "%s/real/dango-string/yeast_string_genes.txt.gz", root);
    for (int i = 0; i < 4; i++) {
        char p[4096], cmd[12800];
        snprintf(p, sizeof p, "%s/real/dango-string/yeast_string_%s_adjacency.txt.gz", root,
                 ch[i]);
        /* rows, rows with weight >= 0.4, and the names of the last kept row */
        snprintf(cmd, sizeof cmd, "bash -c 'zcat \"%s\" > \"%s/g.txt\"; zcat \"%s\" | "
                 "awk \"NR==FNR{g[FNR]=\\$1; next} {n++} \\$3>=0.4{k++; a=g[\\$1]; b=g[\\$2]} "
                 "END{print n, k, a, b}\" \"%s/g.txt\" -'", gl, dir, p, dir);
        FILE *f = popen(cmd, "r");
        unsigned long n = 0, k = 0;
        char a[64] = "", b[64] = "";
        cr_assert_eq(fscanf(f, "%lu %lu %63s %63s", &n, &k, a, b), 4, "%s", cmd);
        cr_assert_eq(pclose(f), 0);
        pl_imp_opts o;
        pl__imp_opts_init(&o);
        o.gene_list = gl;
        o.min_score = 0.4;
        pl_test_text out = {0};
        pl_imp_stats st;
        pl_err err;
        cr_assert_eq(pl_test_imp_collect("dango", p, &o, &out, &st, &err), 0, "%s", err.msg);
        cr_assert_eq(st.rows, n, "%s", ch[i]);
        cr_assert_eq(st.emitted, k, "%s", ch[i]);
        char want[160];
        snprintf(want, sizeof want, "%s\t%s\t", a, b);
        char *last = out.s + out.len - 1;
        while (last > out.s && last[-1] != '\n')
            last--;
        cr_assert(strncmp(last, want, strlen(want)) == 0, "%s: last '%s', awk '%s'", ch[i], last,
                  want);
        free(out.s);
    }
    free(root);
}

Test(import_edges, dango_bad_files)
{
    pl_imp_opts o = dango_opts();
    expect_bad("dango", "1\t2\t0.5\n0\t2\t0.5\n", PL_TEST_PLAIN, &o, 2, 1,
               "index 0 out of range 1..4");
    expect_bad("dango", "1\t5\t0.5\n", PL_TEST_GZIP, &o, 1, 3, "index 5 out of range 1..4");
    expect_bad("dango", "1\t2\t0.5\n1\t2\n", PL_TEST_ZSTD, &o, 2, 0,
               "expected 'i j weight', found 2 fields (missing column)");
    expect_bad("dango", "1\t2\tabc\n", PL_TEST_PLAIN, &o, 1, 5, "bad weight 'abc'");
    expect_bad("dango", "i\tj\tweight\n1\t2\t0.5\n", PL_TEST_PLAIN, &o, 1, 1, "bad index 'i'");
    expect_bad("dango", "1\t2\tnan\n", PL_TEST_PLAIN, &o, 1, 5, "bad weight 'nan'");
    /* the gene list itself: an empty line is named in the list's file */
    char *bad = pl_test_write(dir, "badgenes.txt", "A\n\nB\n");
    o.gene_list = bad;
    pl_test_text out = {0};
    pl_err err;
    int rc = read_as("dango", "1\t2\t1\n", PL_TEST_PLAIN, &o, &out, NULL, &err);
    pl_test_expect_at(rc, PL_EPARSE, &err, bad, 2, 0, "empty line in a gene list");
    free(bad), free(out.s);
    /* two names on a line; no name at all */
    bad = pl_test_write(dir, "badgenes.txt", "A\nB C\n");
    o.gene_list = bad;
    out = (pl_test_text){0};
    rc = read_as("dango", "1\t2\t1\n", PL_TEST_PLAIN, &o, &out, NULL, &err);
    pl_test_expect_at(rc, PL_EPARSE, &err, bad, 2, 0,
                      "expected one name a line in a gene list (index 2)");
    free(bad), free(out.s);
    bad = pl_test_write(dir, "badgenes.txt", "");
    o.gene_list = bad;
    out = (pl_test_text){0};
    rc = read_as("dango", "1\t2\t1\n", PL_TEST_PLAIN, &o, &out, NULL, &err);
    pl_test_expect_at(rc, PL_EPARSE, &err, bad, 1, 0, "empty gene list");
    free(bad), free(out.s);
}

/* ------------------------------------------------------------ delimited */

Test(import_edges, delim_columns_by_number_and_name)
{
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.sep = ',';
    o.header = 1;
    o.col_src = "to";
    o.col_dst = "from";
    o.col_score = "w";
    o.min_score = 0.5;
    const char *csv = "from,to,w\nA,B,0.5\nC,D,0.25\nE,\"F,G\",1\n";
    pl_test_text out = {0};
    pl_imp_stats st;
    pl_err err;
    /* quotes are not special: the field splits at the comma inside them */
    int rc = read_as("delim", csv, PL_TEST_GZIP, &o, &out, &st, &err);
    pl_test_expect_at(rc, PL_EPARSE, &err, path, 4, 0, "expected 3 fields as in the header, found 4");
    free(out.s);
    out = (pl_test_text){0};
    csv = "from,to,w\nA,B,0.5\nC,D,0.25\n";
    cr_assert_eq(read_as("delim", csv, PL_TEST_ZSTD, &o, &out, &st, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "B\tA\t0.5\n");
    cr_assert_eq(st.rows, 2);
    cr_assert_eq(st.filtered, 1);
    free(out.s);
    /* space-separated, no header, no score, a comment line */
    pl__imp_opts_init(&o);
    o.sep = ' ';
    o.col_src = "1";
    o.col_dst = "2";
    o.comment = "%";
    out = (pl_test_text){0};
    cr_assert_eq(read_as("delim", "% a comment\nYAL001C  YAL002W\n\tQ0045 YBR123C  \n",
                         PL_TEST_PLAIN, &o, &out, &st, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "YAL001C\tYAL002W\t-\nQ0045\tYBR123C\t-\n");
    free(out.s);
}

/* The BIONIC and scl-bioinfo networks read as space-separated lists. */
Test(import_edges, delim_real_networks_match_awk)
{
    char *root = pl_test_real_data();
    const char *files[] = {"real/bionic/Hu-2007.txt.gz", "real/bionic/Krogan-2006.txt.gz",
                           "real/scl-bioinfo/BIM.txt.gz"};
    const unsigned long rows[] = {14826, 7075, 48286};
    for (int i = 0; i < 3; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", root, files[i]);
        pl_imp_opts o;
        pl__imp_opts_init(&o);
        o.sep = ' ';
        o.col_src = "1";
        o.col_dst = "2";
        if (i != 1)
            o.col_score = "3";
        pl_imp_stats st;
        pl_test_text out = {0};
        pl_err err;
        cr_assert_eq(pl_test_imp_collect("delim", p, &o, &out, &st, &err), 0, "%s", err.msg);
        cr_assert_eq(st.rows, rows[i], "%s: %llu rows", files[i], (unsigned long long)st.rows);
        free(out.s);
    }
    free(root);
}

Test(import_edges, delim_bad_files)
{
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.header = 1;
    o.col_src = "source";
    o.col_dst = "target";
    o.col_score = "score";
    expect_bad("delim", "source\ttarget\nA\tB\n", PL_TEST_PLAIN, &o, 1, 0,
               "the header has no 'score' column");
    expect_bad("delim", "source\ttarget\tscore\nA\tB\t0.1\nA\tB\n", PL_TEST_GZIP, &o, 3, 0,
               "expected 3 fields as in the header, found 2 (missing column)");
    expect_bad("delim", "source\ttarget\tscore\nA\tB\t1e999\n", PL_TEST_PLAIN, &o, 2, 5,
               "bad score '1e999'");
    expect_bad("delim", "source\ttarget\tscore\n\tB\t1\n", PL_TEST_PLAIN, &o, 2, 1,
               "empty source name");
    pl__imp_opts_init(&o);
    o.col_src = "1";
    o.col_dst = "3";
    expect_bad("delim", "A\tB\tC\nA\tB\n", PL_TEST_ZSTD, &o, 2, 0,
               "expected 3 fields, found 2 (missing column)");
    /* a header where none was declared does not pass as data: its score is no number */
    o.col_score = "2";
    expect_bad("delim", "gene_a\tscore\tgene_b\nA\t0.5\tB\n", PL_TEST_PLAIN, &o, 1, 8,
               "bad score 'score'");
    /* a column named without a header */
    pl__imp_opts_init(&o);
    o.col_src = "source";
    o.col_dst = "2";
    pl_err err = {0};
    cr_assert_eq(pl__imp_delim.check(&o, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "source column 'source' is a name, but the file has no header"),
              "%s", err.msg);
}
