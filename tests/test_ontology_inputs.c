/* Ontology readers on malformed and edge-case inputs: each error names file,
 * line and reason; cycles name their terms; compressed inputs; the counts of
 * filtered rows and the list of unknown genes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "importutil.h"
#include "preprocess/ontology/ontology.h"

static pl_strtab genes;
static pl_onto_raw raw;
static pl_onto_stats st;
static pl_onto on;

static void setup(void)
{
    pl_test_dir_init();
    cr_assert_eq(pl__strtab_init(&genes), 0);
    const char *g[] = {"YAL001C", "YAL002W", "YAL003W", "YAL004W"};
    for (int i = 0; i < 4; i++)
        cr_assert_geq(pl__strtab_intern(&genes, g[i], strlen(g[i]), NULL), 0);
}
static void teardown(void)
{
    pl__onto_free(&on);
    pl__onto_raw_free(&raw);
    pl__onto_stats_free(&st);
    pl__strtab_free(&genes);
    pl_test_dir_fini();
}
TestSuite(ontology_inputs, .init = setup, .fini = teardown);

static int obo(const char *name, const char *text, const pl_onto_opts *o, char **path,
               pl_err *err)
{
    *path = pl_test_write(dir, name, text);
    return pl__onto_read_obo(&raw, *path, o, &st, err);
}

/* The readers under test as pl_test_read_fails() calls them: OBO with no
 * options into a fresh `raw`; the three-column file (not strict) and GAF
 * (options `o`) into `raw` as it is. */
static int read_obo(void *unused, const char *p, pl_err *err)
{
    (void)unused;
    pl_onto_opts o = {0};
    pl__onto_raw_free(&raw);
    return pl__onto_read_obo(&raw, p, &o, &st, err);
}

static int read_dcell(void *unused, const char *p, pl_err *err)
{
    (void)unused;
    return pl__onto_read_dcell(&raw, p, pl_test_resolve, &genes, 0, &st, err);
}

static int read_gaf(void *o, const char *p, pl_err *err)
{
    return pl__onto_read_gaf(&raw, p, o, pl_test_resolve, &genes, &st, err);
}

static void obo_fails(const char *text, unsigned long line, unsigned long col, const char *why)
{
    pl_test_read_fails(read_obo, NULL, "bad.obo", text, PL_TEST_PLAIN, line, col, why);
}

Test(ontology_inputs, malformed_obo)
{
    obo_fails("format-version: 1.2\n\n[Term]\nname: x\nid: GO:1\n", 4, 1,
              "tag 'name' before the id");
    obo_fails("[Term]\nid: GO:1\n\n[Term]\n\n[Term]\nid: GO:2\n", 4, 0,
              "[Term] stanza without an id");
    obo_fails("[Term]\nid: GO:1\n\n[Term]\n", 4, 0, "[Term] stanza without an id");
    obo_fails("[Term]\nid: GO:1\nthis line has no colon\n", 3, 1, "expected 'tag: value'");
    obo_fails("[Term]\nid: GO:1\n\n[Term]\nid: GO:1\n", 5, 5, "term GO:1 is defined twice");
    obo_fails("[Term]\nid: GO:1\nrelationship: part_of\n", 3, 15,
              "relationship 'part_of' without a target term");
    obo_fails("[Term]\nid: GO:1\nis_a: ! nothing\n", 3, 7, "is_a without a target term");
    obo_fails("[Term\nid: GO:1\n", 1, 1, "without its closing ']'");
    obo_fails("[Term]\nid: GO:1 GO:2\n", 2, 5, "bad term id 'GO:1 GO:2'");
    obo_fails("[Term]\nid: GO:1\nid: GO:2\n", 3, 1, "a second id");
}

Test(ontology_inputs, obo_cycle_names_its_terms)
{
    char *p;
    pl_err err = {0};
    pl_onto_opts o = {.relations = "is_a,part_of"};
    cr_assert_eq(obo("c.obo.gz", "[Term]\nid: A\n\n[Term]\nid: B\nis_a: A\n\n[Term]\nid: C\n"
                     "is_a: B\n\n[Term]\nid: D\nrelationship: part_of C\n\n[Term]\nid: R\n"
                     "\n[Term]\nid: A2\nis_a: R\nis_a: D\n",
                     &o, &p, &err), 0, "%s", err.msg);
    /* A is a part of nothing yet: no cycle */
    cr_assert_eq(pl__onto_build(&raw, 4, &o, &on, &st, &err), 0, "%s", err.msg);
    pl__onto_free(&on);
    pl__onto_raw_free(&raw);
    free(p);
    cr_assert_eq(obo("c.obo", "[Term]\nid: A\nis_a: D\n\n[Term]\nid: B\nis_a: A\n\n[Term]\nid: C\n"
                     "is_a: B\n\n[Term]\nid: D\nrelationship: part_of C\n\n[Term]\nid: R\n",
                     &o, &p, &err), 0, "%s", err.msg);
    int rc = pl__onto_build(&raw, 4, &o, &on, &st, &err);
    cr_assert_eq(rc, PL_EPARSE);
    cr_assert(strstr(err.msg, p) == err.msg, "%s", err.msg);
    cr_assert(strstr(err.msg, "the ontology has a cycle"), "%s", err.msg);
    const char *want[] = {"A -> D -> C -> B -> A", "D -> C -> B -> A -> D",
                          "C -> B -> A -> D -> C", "B -> A -> D -> C -> B"};
    int hit = 0;
    for (int i = 0; i < 4; i++)
        hit |= strstr(err.msg, want[i]) != NULL;
    cr_assert(hit, "%s", err.msg);
    /* the line of the edge that closes it: one of lines 3, 7, 11, 15 */
    unsigned long line = strtoul(err.msg + strlen(p) + 1, NULL, 10);
    cr_assert(line == 3 || line == 7 || line == 11 || line == 15, "%s", err.msg);
    cr_assert_eq(on.n_terms, 0);
    /* without part_of the cycle is gone */
    pl__onto_raw_free(&raw);
    pl_onto_opts isa = {0};
    cr_assert_eq(pl__onto_read_obo(&raw, p, &isa, &st, &err), 0);
    cr_assert_eq(pl__onto_build(&raw, 4, &isa, &on, &st, &err), 0, "%s", err.msg);
    free(p);
}

Test(ontology_inputs, dcell_cycle_and_self_loop)
{
    pl_err err = {0};
    const char *text = "R\tA\tdefault\nA\tB\tdefault\nB\tA\tdefault\nA\tYAL001C\tgene\n";
    char *p = pl_test_write_codec(dir, "d.txt.zst", text, strlen(text), PL_TEST_ZSTD);
    cr_assert_eq(pl__onto_read_dcell(&raw, p, pl_test_resolve, &genes, 0, &st, &err), 0,
                 "%s", err.msg);
    pl_onto_opts o = {0};
    cr_assert_eq(pl__onto_build(&raw, 4, &o, &on, &st, &err), PL_EPARSE);
    cr_assert(strstr(err.msg, "A -> B -> A") || strstr(err.msg, "B -> A -> B"), "%s", err.msg);
    char at[4096];
    snprintf(at, sizeof at, "%s:", p);
    cr_assert(!strncmp(err.msg, at, strlen(at)), "%s", err.msg);
    free(p);
    pl__onto_raw_free(&raw);
    p = pl_test_write(dir, "s.txt", "R X default\nX X default\nX YAL002W gene\n");
    cr_assert_eq(pl__onto_read_dcell(&raw, p, pl_test_resolve, &genes, 0, &st, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(pl__onto_build(&raw, 4, &o, &on, &st, &err), PL_EPARSE);
    snprintf(at, sizeof at, "%s:2: the ontology has a cycle: X -> X", p);
    cr_assert(!strncmp(err.msg, at, strlen(at)), "%s", err.msg);
    free(p);
}

Test(ontology_inputs, malformed_dcell)
{
    pl_test_read_fails(read_dcell, NULL, "d.txt", "# comment\nR\tA\tdefault\nA\tYAL001C\n",
                       PL_TEST_PLAIN, 3, 0, "2 columns where `parent child type` has 3");
    pl_test_read_fails(read_dcell, NULL, "e.txt", "R\t\tdefault\n", PL_TEST_PLAIN, 1, 3,
                       "empty child");
    pl_test_read_fails(read_dcell, NULL, "f.txt", "R A default\nA B\xff gene\n", PL_TEST_PLAIN,
                       2, 4, "UTF-8");
}

static const char gaf_obo[] =
    "[Term]\nid: GO:1\nnamespace: biological_process\n\n"
    "[Term]\nid: GO:2\nnamespace: biological_process\nalt_id: GO:20\nis_a: GO:1 ! one\n\n"
    "[Term]\nid: GO:3\nnamespace: cellular_component\n\n"
    "[Term]\nid: GO:4\nnamespace: biological_process\nis_obsolete: true\n\n"
    "[Typedef]\nid: part_of\nis_transitive: true\n";

#define ROW(sym, qual, go, ev, syn)                                                           \
    "SGD\tS1\t" sym "\t" qual "\t" go "\tPMID:1\t" ev "\t\tP\tname\t" syn                     \
    "\tgene\ttaxon:4932\t20110101\tSGD\t\t\n"

Test(ontology_inputs, gaf_rows_counts_and_unknown_genes)
{
    char *p, *g;
    pl_err err = {0};
    pl_onto_opts o = {.namespaces = "biological_process", .exclude_evidence = "IEA"};
    cr_assert_eq(obo("go.obo", gaf_obo, &o, &p, &err), 0, "%s", err.msg);
    const char *text = "!gaf-version: 2.0\n"
        ROW("ACT1", "", "GO:2", "IDA", "YAL001C|act")          /* synonym resolves */
        ROW("YAL002W", "NOT", "GO:2", "IDA", "")               /* NOT */
        ROW("YAL002W", "NOT|contributes_to", "GO:1", "IMP", "") /* NOT among others */
        ROW("YAL003W", "", "GO:20", "IMP", "")                 /* alt_id */
        ROW("YAL003W", "", "GO:2", "IEA", "")                  /* evidence */
        ROW("FOO1", "", "GO:1", "IDA", "foo|bar")              /* unknown gene */
        ROW("FOO1", "", "GO:2", "IDA", "")                     /* again */
        ROW("YAL004W", "", "GO:3", "IDA", "")                  /* other namespace */
        ROW("YAL004W", "", "GO:4", "IDA", "")                  /* obsolete term */
        ROW("YAL004W", "", "GO:99", "IDA", "")                 /* unknown term */
        ROW("YAL001C", "", "GO:2", "TAS", "");                 /* duplicate pair */
    g = pl_test_write_codec(dir, "a.gaf.gz", text, strlen(text), PL_TEST_GZIP);
    cr_assert_eq(pl__onto_read_gaf(&raw, g, &o, pl_test_resolve, &genes, &st, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(st.rows, 11);
    cr_assert_eq(st.not_rows, 2);
    cr_assert_eq(st.evidence_skipped, 1);
    cr_assert_eq(st.unknown_terms, 1);
    cr_assert_eq(st.unknown_genes.total, 2);
    cr_assert_eq(pl__unres_distinct(&st.unknown_genes), 1);
    uint64_t count, line;
    cr_assert_str_eq(pl__unres_name(&st.unknown_genes, 0, &count, &line), "FOO1");
    cr_assert_eq(count, 2);
    cr_assert_eq(line, 7);
    cr_assert_eq(pl__onto_build(&raw, 4, &o, &on, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(st.namespace_rows, 1);
    cr_assert_eq(st.obsolete_rows, 1);
    cr_assert_eq(st.duplicates, 1);
    cr_assert_eq(on.n_terms, 2);
    cr_assert_str_eq(on.term_id[0], "GO:1");
    cr_assert_eq(on.n_ann, 2); /* (YAL001C, GO:2), (YAL003W, GO:2) */
    cr_assert_eq(on.ann_gene[0], 0);
    cr_assert_eq(on.ann_gene[1], 2);
    cr_assert_eq(on.ngenes[0], 2);
    cr_assert_eq(on.n_strata, 2);
    cr_assert_eq(on.stratum[0], 1);
    free(g);
    free(p);
    /* an unknown namespace is a usage error naming it */
    pl__onto_free(&on);
    pl_onto_opts bad = {.namespaces = "biological_proces"};
    cr_assert_eq(pl__onto_build(&raw, 4, &bad, &on, &st, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "no term has the namespace 'biological_proces'"), "%s", err.msg);
}

Test(ontology_inputs, malformed_gaf)
{
    char *p;
    pl_err err = {0};
    pl_onto_opts o = {0};
    cr_assert_eq(obo("go.obo", gaf_obo, &o, &p, &err), 0, "%s", err.msg);
    pl_test_read_fails(read_gaf, &o, "a.gaf",
                       "!c\n" ROW("ACT1", "", "GO:2", "IDA", "") "SGD\tS1\tX\n", PL_TEST_PLAIN, 3,
                       0, "3 tab-separated columns where GAF 2.x has 15 to 17");
    pl_test_read_fails(read_gaf, &o, "b.gaf", ROW("ACT1", "", "", "IDA", ""), PL_TEST_PLAIN, 1,
                       14, "empty GO ID (column 5)");
    pl_test_read_fails(read_gaf, &o, "c.gaf", ROW("", "", "GO:1", "IDA", ""), PL_TEST_PLAIN, 1, 8,
                       "empty DB Object Symbol (column 3)");
    pl_test_read_fails(read_gaf, &o, "d.gaf", ROW("ACT1", "", "GO:1", "", ""), PL_TEST_PLAIN, 1,
                       26, "empty evidence code (column 7)");
    free(p);
}

Test(ontology_inputs, min_genes_reattaches)
{
    /* R <- M <- L1, L2 (one gene each); M has one direct gene too; with at
     * least 2 genes per term the leaves go, their genes move to M. */
    pl_err err = {0};
    char *p = pl_test_write(dir, "m.txt", "R M is_a\nM L1 is_a\nM L2 is_a\nL1 YAL001C gene\n"
                            "L2 YAL002W gene\nM YAL003W gene\nR E is_a\n");
    cr_assert_eq(pl__onto_read_dcell(&raw, p, pl_test_resolve, &genes, 0, &st, &err), 0,
                 "%s", err.msg);
    pl_onto_opts o = {.min_term_genes = 2};
    cr_assert_eq(pl__onto_build(&raw, 4, &o, &on, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(on.n_terms, 2);
    cr_assert_str_eq(on.term_id[0], "R");
    cr_assert_str_eq(on.term_id[1], "M");
    cr_assert_eq(st.removed_terms, 3); /* L1, L2 and E (no genes) */
    cr_assert_eq(on.dgene_ptr[2] - on.dgene_ptr[1], 3);
    cr_assert_eq(on.ngenes[0], 3);
    cr_assert_eq(on.n_ann, 3);
    cr_assert_eq(on.ann_gene[0], 0);
    cr_assert_eq(on.ann_term[0], 1);
    cr_assert_eq(on.n_strata, 2);
    cr_assert_eq(on.n_groups, 2);
    free(p);
}
