/* Gene-name resolution (preprocess/import/names/names.h): gene list, alias tables
 * with precedence and ambiguity, the case policy, unresolved-name counts,
 * the unordered-pair set, and the pair policy and strict mode of a run. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "importutil.h"
#include "preprocess/import/edges/import.h"
#include "preprocess/import/names/names.h"

static pl_names *nm;
static void setup(void)
{
    pl_test_dir_init();
    pl_err err = {0};
    cr_assert_eq(pl__names_new(&nm, &err), 0);
}
static void teardown(void)
{
    pl__names_free(nm);
    pl_test_dir_fini();
}
TestSuite(import_names, .init = setup, .fini = teardown);

static int64_t res(const char *s) { return pl__names_resolve(nm, s, strlen(s)); }

static void load_genes(const char *text)
{
    char *p = pl_test_write_codec(dir, "genes.txt.gz", text, strlen(text), PL_TEST_GZIP);
    pl_err err = {0};
    cr_assert_eq(pl__names_load_genes(nm, p, 0, &err), 0, "%s", err.msg);
    free(p);
}

static void load_table(const char *name, const char *text, int gene_col, int alias_col,
                       int header, pl_alias_stats *st)
{
    char *p = pl_test_write(dir, name, text);
    pl_alias_spec a = {.path = p, .kind = PL_ALIAS_TABLE, .gene_col = gene_col,
                       .alias_col = alias_col, .header = header};
    pl_err err = {0};
    cr_assert_eq(pl__names_load_aliases(nm, &a, st, &err), 0, "%s", err.msg);
    free(p);
}

Test(import_names, genes_aliases_precedence_and_case)
{
    load_genes("YDL229W\nYHL034C\nYBR182C\nQ0045\nYAL016C-A\nCOX1\n");
    cr_assert_eq(pl__names_count(nm), 6);
    cr_assert_str_eq(pl__names_gene(nm, 3), "Q0045");
    pl_alias_stats st;
    /* Name, ORF (as YEASTRACT's orftogene.txt): the gene is column 2 */
    load_table("orftogene.txt", "Name\tORF\nSSB1\tYDL229W\nSMP1\tYBR182C\nX1\tYDL229W\n"
               "X1\tYHL034C\nTPD3\tYAL999W\nYHL034C\tYDL229W\n", 2, 1, 1, &st);
    cr_assert_eq(st.rows, 6);
    cr_assert_eq(st.no_gene, 1);    /* YAL999W is not a gene of the list */
    cr_assert_eq(st.ambiguous, 1);  /* X1 -> two genes */
    cr_assert_eq(st.added, 3);      /* SSB1, SMP1, X1; a gene name is never an alias */
    /* a later table: SSB1 -> YHL034C loses to the earlier SSB1 -> YDL229W */
    load_table("later.tsv", "YHL034C\tSSB1\nYHL034C\tSBP1\nYBR182C\tX1\n", 1, 2, 0, &st);
    cr_assert_eq(res("YDL229W"), 0);
    cr_assert_eq(res("SSB1"), 0);
    cr_assert_eq(res("SBP1"), 1);
    cr_assert_eq(res("SMP1"), 2);
    cr_assert_eq(res("X1"), -1, "ambiguous in its table, and later tables do not settle it");
    cr_assert_eq(res("YHL034C"), 1, "a gene name beats an alias spelled the same");
    /* case: upper-cased lookups after the exact ones */
    cr_assert_eq(res("q0045"), 3);
    cr_assert_eq(res("yal016c-a"), 4);
    cr_assert_eq(res("Smp1"), 2);
    cr_assert_eq(res("ssb1"), 0);
    cr_assert_eq(res("Cox1"), 5);
    cr_assert_eq(res("NOPE"), -1);
    cr_assert_eq(res(""), -1);
}

Test(import_names, case_collisions_are_ambiguous)
{
    load_genes("abc1\nABC1\nXyz\n");
    cr_assert_eq(res("abc1"), 0);
    cr_assert_eq(res("ABC1"), 1);
    cr_assert_eq(res("Abc1"), -1, "two genes share the upper-cased key");
    cr_assert_eq(res("XYZ"), 2);
}

Test(import_names, sgd_features_standard_names_beat_aliases)
{
    load_genes("YDL229W\nYHL034C\n");
    /* the two real rows (16 columns): SSB1 is YDL229W's name and YHL034C's alias */
    const char *text =
        "S000001026\tORF\tVerified\tYHL034C\tSBP1\tSSB1|SSBR1\tchromosome 8\t\t8\t37427\t36543"
        "\tC\t\t1996-07-31\t1996-07-31\tProtein\n"
        "S000002388\tORF\tVerified\tYDL229W\tSSB1\tHsp70 family ATPase SSB1|YG101\tchromosome 4"
        "\t\t4\t38050\t39893\tW\t\t1996-07-31\t1996-07-31\tATPase\n"
        "S000031098\tCDS\t\t\t\t\tYDL229W\t\t4\t38050\t39893\tW\t\t1996-07-31\t1996-07-31\t\n";
    char *p = pl_test_write(dir, "SGD_features.tab", text);
    pl_alias_spec a = {.path = p, .kind = PL_ALIAS_SGD_FEATURES};
    pl_alias_stats st;
    pl_err err = {0};
    cr_assert_eq(pl__names_load_aliases(nm, &a, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(st.rows, 3);
    cr_assert_eq(res("SSB1"), 0);
    cr_assert_eq(res("SBP1"), 1);
    cr_assert_eq(res("SSBR1"), 1);
    cr_assert_eq(res("S000002388"), 0);
    cr_assert_eq(res("YG101"), 0);
    /* a malformed row: too few columns */
    char *bad = pl_test_write(dir, "bad.tab", "S1\tORF\tVerified\tYDL229W\n");
    a.path = bad;
    cr_assert_eq(pl__names_load_aliases(nm, &a, &st, &err), PL_EPARSE);
    pl_test_expect_at(PL_EPARSE, PL_EPARSE, &err, bad, 1, 0, "expected the 16 tab-separated "
                      "columns of SGD_features.tab, found 4");
    free(p), free(bad);
}

Test(import_names, bad_gene_lists)
{
    char *p = pl_test_write(dir, "dup.txt", "A\nB\nA\n");
    pl_err err = {0};
    int rc = pl__names_load_genes(nm, p, 0, &err);
    pl_test_expect_at(rc, PL_EPARSE, &err, p, 3, 1, "gene 'A' listed twice (first on line 1)");
    pl__names_free(nm);
    cr_assert_eq(pl__names_new(&nm, &err), 0);
    char *q = pl_test_write(dir, "blank.txt", "A\n  \nB\n");
    rc = pl__names_load_genes(nm, q, 0, &err);
    pl_test_expect_at(rc, PL_EPARSE, &err, q, 2, 0, "empty line in the gene list");
    pl__names_free(nm);
    cr_assert_eq(pl__names_new(&nm, &err), 0);
    /* with a header line declared, the header is not a gene */
    char *h = pl_test_write(dir, "h.txt", "gene\nA\n");
    cr_assert_eq(pl__names_load_genes(nm, h, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(pl__names_count(nm), 1);
    cr_assert_eq(res("gene"), -1);
    /* control characters (ESC, BEL, C1) are refused at their column */
    const char *bad[] = {"A\nB\x1b[2J\n", "A\nB\x07\n", "A\nB\xc2\x9b\n"};
    const unsigned want[] = {0x1b, 0x07, 0xc2};
    for (int i = 0; i < 3; i++) {
        pl__names_free(nm);
        cr_assert_eq(pl__names_new(&nm, &err), 0);
        char *c = pl_test_write(dir, "ctl.txt", bad[i]);
        char why[80];
        snprintf(why, sizeof why, "a gene name holds the control character 0x%02x", want[i]);
        pl_test_expect_at(pl__names_load_genes(nm, c, 0, &err), PL_EPARSE, &err, c, 2, 2, why);
        free(c);
    }
    free(p), free(q), free(h);
}

Test(import_names, bad_alias_tables)
{
    load_genes("YAL001C\nYAL002W\n");
    pl_alias_stats st;
    pl_err err = {0};
    /* a row without its alias column */
    char *p = pl_test_write(dir, "short.tsv", "YAL001C\tTFC3\nYAL002W\n");
    pl_alias_spec a = {.path = p, .kind = PL_ALIAS_TABLE, .gene_col = 1, .alias_col = 2};
    pl_test_expect_at(pl__names_load_aliases(nm, &a, &st, &err), PL_EPARSE, &err, p, 2, 0,
                      "expected at least 2 fields, found 1 (missing column)");
    /* a truncated gzip table */
    pl_test_text t = {0};
    for (int i = 0; i < 5000; i++)
        pl_test_tprintf(&t, "YAL001C\tALIAS%d\n", i);
    size_t n;
    void *z = pl_test_compress(t.s, t.len, PL_TEST_GZIP, &n);
    char *g = pl_test_path(dir, "cut.tsv.gz");
    pl_test_write_bytes(g, z, n / 2);
    a.path = g;
    int rc = pl__names_load_aliases(nm, &a, &st, &err);
    cr_assert_eq(rc, PL_EPARSE);
    cr_assert(strncmp(err.msg, g, strlen(g)) == 0 && strstr(err.msg, "truncated gzip stream"),
              "%s", err.msg);
    /* bad columns, a missing file, a table before the gene list */
    a = (pl_alias_spec){.path = p, .kind = PL_ALIAS_TABLE, .gene_col = 2, .alias_col = 2};
    cr_assert_eq(pl__names_load_aliases(nm, &a, &st, &err), PL_EUSAGE, "%s", err.msg);
    char *m = pl_test_path(dir, "missing.tsv");
    a = (pl_alias_spec){.path = m, .kind = PL_ALIAS_TABLE, .gene_col = 1, .alias_col = 2};
    cr_assert_eq(pl__names_load_aliases(nm, &a, &st, &err), -ENOENT, "%s", err.msg);
    cr_assert(strstr(err.msg, m), "%s", err.msg);
    pl_names *empty;
    cr_assert_eq(pl__names_new(&empty, &err), 0);
    a.path = p;
    cr_assert_eq(pl__names_load_aliases(empty, &a, &st, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "alias table before the gene list"), "%s", err.msg);
    pl__names_free(empty);
    free(p), free(g), free(m), free(z), free(t.s);
}

Test(import_names, unresolved_counts_and_first_lines)
{
    pl_unres u = {0};
    cr_assert_eq(pl__unres_add(&u, "X", 1, 3), 0);
    cr_assert_eq(pl__unres_add(&u, "Y", 1, 5), 0);
    cr_assert_eq(pl__unres_add(&u, "X", 1, 9), 0);
    cr_assert_eq(pl__unres_distinct(&u), 2);
    cr_assert_eq(u.total, 3);
    uint64_t c, l;
    cr_assert_str_eq(pl__unres_name(&u, 0, &c, &l), "X");
    cr_assert_eq(c, 2);
    cr_assert_eq(l, 3);
    cr_assert_str_eq(pl__unres_name(&u, 1, &c, &l), "Y");
    cr_assert_eq(l, 5);
    pl__unres_free(&u);
}

Test(import_names, pairset_is_unordered_and_grows)
{
    pl_pairset p = {0};
    cr_assert_eq(pl__pairset_add(&p, 1, 2), 1);
    cr_assert_eq(pl__pairset_add(&p, 2, 1), 0);
    cr_assert_eq(pl__pairset_add(&p, 2, 2), 1);
    cr_assert_eq(pl__pairset_add(&p, 0, 0), 1);
    for (uint32_t i = 0; i < 100000; i++)
        cr_assert_eq(pl__pairset_add(&p, i, i + 7), 1);
    for (uint32_t i = 0; i < 100000; i++)
        cr_assert_eq(pl__pairset_add(&p, i + 7, i), 0);
    cr_assert_eq(p.n, 100003);
    pl__pairset_free(&p);
}

typedef struct edges {
    pl_test_text t;
} edges;

static int out_edge(void *ctx, uint32_t a, uint32_t b, double score, pl_err *err)
{
    (void)err;
    pl_test_tprintf(ctx, "%u-%u:%g ", a, b, score);
    return 0;
}

Test(import_names, run_pairs_policy_unresolved_and_strict)
{
    load_genes("YAL001C\nYAL002W\nYAL003W\n");
    char *f = pl_test_write(dir, "s.txt", "protein1 protein2 combined_score\n"
                            "4932.YAL001C 4932.YAL002W 500\n"
                            "4932.YAL002W 4932.YAL001C 500\n"
                            "4932.YAL001C 4932.NOPE1 900\n"
                            "4932.YAL003W 4932.YAL003W 300\n"
                            "4932.NOPE1 4932.NOPE2 900\n"
                            "4932.YAL003W 4932.YAL001C 100\n"
                            "4932.YAL001C 4932.YAL003W 700\n");
    pl_imp_source s = {.name = "phys", .fmt = &pl__imp_string, .file = f, .undirected = 1};
    pl__imp_opts_init(&s.opts);
    s.opts.min_score = 200;
    pl_imp_result r;
    pl_test_text out = {0};
    pl_err err = {0};
    cr_assert_eq(pl__imp_run(nm, &s, 0, out_edge, &out, &r, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "0-1:500 2-2:300 0-2:700 ");
    cr_assert_eq(r.read.rows, 7);
    cr_assert_eq(r.read.filtered, 1);
    cr_assert_eq(r.unresolved, 2);
    cr_assert_eq(r.duplicates, 1);
    cr_assert_eq(r.kept, 3);
    cr_assert_eq(pl__unres_distinct(&r.names), 2);
    uint64_t c, l;
    cr_assert_str_eq(pl__unres_name(&r.names, 0, &c, &l), "NOPE1");
    cr_assert_eq(c, 2);
    cr_assert_eq(l, 4);
    pl__unres_free(&r.names);
    free(out.s);
    /* as listed: the reversed pair stays */
    s.undirected = 0;
    out = (pl_test_text){0};
    cr_assert_eq(pl__imp_run(nm, &s, 0, out_edge, &out, &r, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "0-1:500 1-0:500 2-2:300 0-2:700 ");
    cr_assert_eq(r.duplicates, 0);
    pl__unres_free(&r.names);
    free(out.s);
    /* strict: the first unresolved name is an error at its line and column */
    cr_assert_eq(pl__imp_run(nm, &s, 1, NULL, NULL, &r, &err), PL_EPARSE);
    pl_test_expect_at(PL_EPARSE, PL_EPARSE, &err, f, 4, 19, "unresolved gene name 'NOPE1' "
                      "(strict mode)");
    pl__unres_free(&r.names);
    free(f);
}
