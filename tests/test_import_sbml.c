/* The SBML reader: a small SBML L3V1 FBC v2 model in yeast-GEM's published
 * layout (species, reactions with listOfReactants/Products,
 * fbc:geneProductAssociation with fbc:and / fbc:or / fbc:geneProductRef,
 * fbc:listOfGeneProducts with fbc:label), plain/gzip/zstd; the same model as
 * yeast-GEM YAML gives the same metabolism; malformed models named by file,
 * line and reason (libsbml's column: the end of the element's start tag). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "importutil.h"
#include "preprocess/import/metab/metab.h"
#include "src/core/rule.h"

static pl_names *nm;
static pl_metab m, y;

static void setup(void)
{
    pl_test_dir_init();
    nm = pl_test_names("genes.txt", "G1\nG2\nG3\nG4\nG5\n");
}
static void teardown(void)
{
    pl__metab_free(&m);
    pl__metab_free(&y);
    pl__names_free(nm);
    pl_test_dir_fini();
}
TestSuite(import_sbml, .init = setup, .fini = teardown);

#define SBML_HEAD                                                                          \
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"                                         \
    "<sbml xmlns=\"http://www.sbml.org/sbml/level3/version1/core\" "                       \
    "xmlns:fbc=\"http://www.sbml.org/sbml/level3/version1/fbc/version2\" level=\"3\" "     \
    "version=\"1\" fbc:required=\"false\">\n"                                              \
    "  <model id=\"tiny\" fbc:strict=\"true\">\n"                                          \
    "    <listOfCompartments>\n"                                                           \
    "      <compartment id=\"c\" constant=\"true\"/>\n"                                    \
    "    </listOfCompartments>\n"
#define SPECIES(id)                                                                        \
    "      <species id=\"" id "\" compartment=\"c\" hasOnlySubstanceUnits=\"false\" "       \
    "boundaryCondition=\"false\" constant=\"false\"/>\n"
#define SREF(id, v)                                                                        \
    "          <speciesReference species=\"" id "\" stoichiometry=\"" v "\" "               \
    "constant=\"true\"/>\n"
#define GREF(g) "              <fbc:geneProductRef fbc:geneProduct=\"" g "\"/>\n"
#define RXN(id) "      <reaction id=\"" id "\" reversible=\"false\" fast=\"false\">\n"
#define GENE(id, label)                                                                    \
    "      <fbc:geneProduct fbc:id=\"" id "\" " label "/>\n"
#define SBML_TAIL "  </model>\n</sbml>\n"

static const char *tiny_sbml =
    SBML_HEAD
    "    <listOfSpecies>\n" SPECIES("m_a") SPECIES("m_b") SPECIES("m_c")
    "    </listOfSpecies>\n"
    "    <listOfReactions>\n"
    RXN("r_1")
    "        <listOfReactants>\n" SREF("m_a", "1") "        </listOfReactants>\n"
    "        <listOfProducts>\n" SREF("m_b", "1") "        </listOfProducts>\n"
    "        <fbc:geneProductAssociation>\n"
    "          <fbc:or>\n"
    "            <fbc:and>\n" GREF("G_G1") GREF("G_G2") "            </fbc:and>\n"
    "            <fbc:geneProductRef fbc:geneProduct=\"G_G3\"/>\n"
    "          </fbc:or>\n"
    "        </fbc:geneProductAssociation>\n"
    "      </reaction>\n"
    RXN("r_2")
    "        <listOfReactants>\n" SREF("m_a", "2.25") "        </listOfReactants>\n"
    "        <listOfProducts>\n" SREF("m_c", "0.5") "        </listOfProducts>\n"
    "      </reaction>\n"
    RXN("r_3")
    "        <listOfReactants>\n" SREF("m_c", "1") "        </listOfReactants>\n"
    "        <fbc:geneProductAssociation>\n"
    "          <fbc:or>\n"
    "            <fbc:geneProductRef fbc:geneProduct=\"G_G2\"/>\n"
    "            <fbc:and>\n" GREF("G_G4") GREF("G_G1") "            </fbc:and>\n"
    "          </fbc:or>\n"
    "        </fbc:geneProductAssociation>\n"
    "      </reaction>\n"
    "    </listOfReactions>\n"
    "    <fbc:listOfGeneProducts>\n"
    GENE("G_G1", "fbc:label=\"G1\"") GENE("G_G2", "fbc:label=\"G2\" fbc:name=\"two\"")
    GENE("G_G3", "fbc:label=\"G3\"") GENE("G_G4", "fbc:label=\"G4\"")
    "    </fbc:listOfGeneProducts>\n"
    SBML_TAIL;

/* The same model as yeast-GEM YAML (reactants first, as SBML lists them). */
static const char *tiny_yaml =
    "!!omap\n"
    "- metabolites:\n"
    "    - !!omap\n      - id: \"m_a\"\n"
    "    - !!omap\n      - id: \"m_b\"\n"
    "    - !!omap\n      - id: \"m_c\"\n"
    "- reactions:\n"
    "    - !!omap\n"
    "      - id: \"r_1\"\n"
    "      - metabolites: !!omap\n          - m_a: -1\n          - m_b: 1\n"
    "      - gene_reaction_rule: \"(G1 and G2) or G3\"\n"
    "    - !!omap\n"
    "      - id: \"r_2\"\n"
    "      - metabolites: !!omap\n          - m_a: -2.25\n          - m_c: 0.5\n"
    "      - gene_reaction_rule: \"\"\n"
    "    - !!omap\n"
    "      - id: \"r_3\"\n"
    "      - metabolites: !!omap\n          - m_c: -1\n"
    "      - gene_reaction_rule: \"G2 or (G4 and G1)\"\n"
    "- genes:\n"
    "    - !!omap\n      - id: \"G1\"\n"
    "    - !!omap\n      - id: \"G2\"\n"
    "    - !!omap\n      - id: \"G3\"\n"
    "    - !!omap\n      - id: \"G4\"\n";

/* Read `p` as SBML into `m` (strict). */
static int read_sbml_file(void *unused, const char *p, pl_err *err)
{
    (void)unused;
    pl__metab_free(&m);
    cr_assert_eq(pl__metab_init(&m, nm, 1, err), 0);
    return pl__metab_read_sbml(&m, p, err);
}

static int read_sbml(const char *text, int codec, pl_err *err)
{
    return read_sbml_file(NULL, pl_test_put("model.xml", text, codec), err);
}

static void expect_bad(const char *text, int codec, unsigned long line, unsigned long col,
                       const char *reason)
{
    pl_test_read_fails(read_sbml_file, NULL, "model.xml", text, codec, line, col, reason);
}

/* Two metabolisms hold the same reactions, metabolites, RMR, GPR and
 * programs. */
static void same(const pl_metab *a, const pl_metab *b)
{
    cr_assert_eq(a->reactions.n, b->reactions.n);
    for (uint32_t i = 0; i < a->reactions.n; i++)
        cr_assert_str_eq(a->reactions.names[i], b->reactions.names[i]);
    cr_assert_eq(a->metabolites.n, b->metabolites.n);
    for (uint32_t i = 0; i < a->metabolites.n; i++)
        cr_assert_str_eq(a->metabolites.names[i], b->metabolites.names[i]);
    cr_assert_eq(a->n_rmr, b->n_rmr);
    for (uint64_t i = 0; i < a->n_rmr; i++) {
        cr_assert_eq(a->rmr_rxn[i], b->rmr_rxn[i]);
        cr_assert_eq(a->rmr_met[i], b->rmr_met[i]);
        cr_assert_eq(a->rmr_stoich[i], b->rmr_stoich[i], "RMR %llu: %g %g",
                     (unsigned long long)i, (double)a->rmr_stoich[i], (double)b->rmr_stoich[i]);
    }
    cr_assert_eq(a->n_gpr, b->n_gpr);
    for (uint64_t i = 0; i < a->n_gpr; i++) {
        cr_assert_eq(a->gpr_gene[i], b->gpr_gene[i]);
        cr_assert_eq(a->gpr_rxn[i], b->gpr_rxn[i]);
    }
    cr_assert_eq(a->n_rules, b->n_rules);
    cr_assert_eq(a->rules.n, b->rules.n);
    for (uint64_t i = 0; i < a->rules.n; i++) {
        cr_assert_eq(a->rules.rxn[i], b->rules.rxn[i]);
        cr_assert_eq(a->rules.off[i + 1], b->rules.off[i + 1]);
    }
    uint64_t words = a->rules.n ? a->rules.off[a->rules.n] : 0;
    cr_assert(words == 0 || !memcmp(a->rules.code, b->rules.code, words * 4));
    cr_assert_eq(a->n_model_genes, b->n_model_genes);
}

Test(import_sbml, small_model_reads_as_its_yaml_twin)
{
    pl_err err;
    char *yp = pl_test_write(dir, "model.yml", tiny_yaml);
    cr_assert_eq(pl__metab_init(&y, nm, 1, &err), 0);
    cr_assert_eq(pl__metab_read_yeastgem(&y, yp, &err), 0, "%s", err.msg);
    free(yp);
    for (int c = PL_TEST_PLAIN; c <= PL_TEST_ZSTD; c++) {
        cr_assert_eq(read_sbml(tiny_sbml, c, &err), 0, "%s", err.msg);
        same(&m, &y);
    }
    /* and what that is */
    cr_assert_eq(m.reactions.n, 3);
    cr_assert_eq(m.n_rmr, 5);
    cr_assert_eq(m.rmr_stoich[0], -1.0f);
    cr_assert_eq(m.rmr_stoich[2], -2.25f);
    cr_assert_eq(m.rmr_stoich[3], 0.5f);
    cr_assert_eq(m.n_gpr, 6);
    cr_assert_eq(m.n_rules, 2);
    cr_assert_eq(m.n_model_genes, 4);
    /* r_1 = (G1 and G2) or G3: survives G1 alone, not G1 with G3 */
    const uint32_t *code = m.rules.code + m.rules.off[0];
    uint32_t n = (uint32_t)(m.rules.off[1] - m.rules.off[0]);
    int32_t g1[] = {0}, g13[] = {0, 2};
    cr_assert_eq(pl__rule_eval(code, n, g1, 1), 1);
    cr_assert_eq(pl__rule_eval(code, n, g13, 2), 0);
}

Test(import_sbml, truncated_gzip)
{
    size_t n;
    void *z = pl_test_compress(tiny_sbml, strlen(tiny_sbml), PL_TEST_GZIP, &n);
    free(path);
    path = pl_test_path(dir, "cut.xml.gz");
    pl_test_write_bytes(path, z, n - 4);
    free(z);
    pl_err err;
    pl__metab_free(&m);
    cr_assert_eq(pl__metab_init(&m, nm, 1, &err), 0);
    int rc = pl__metab_read_sbml(&m, path, &err);
    unsigned long lines = 0;
    for (const char *c = tiny_sbml; *c; c++)
        lines += *c == '\n';
    /* every line was handed out before the missing trailer is noticed */
    pl_test_expect_at(rc, PL_EPARSE, &err, path, lines + 1, 0, "truncated gzip stream");
}

Test(import_sbml, not_sbml)
{
    expect_bad("hello world\n", PL_TEST_PLAIN, 2, 1, "not a readable SBML model");
    expect_bad("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sbml xmlns=\"http://www.sbml.org/sbml/level3/"
               "version1/core\" level=\"3\" version=\"1\">\n</sbml>\n",
               PL_TEST_PLAIN, 4, 1, "not a readable SBML model: No model definition found");
    expect_bad("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<notes>hi</notes>\n", PL_TEST_GZIP,
               3, 1, "not a readable SBML model: Document does not conform");
}

Test(import_sbml, unknown_gene_product)
{
    expect_bad(SBML_HEAD "    <listOfSpecies>\n" SPECIES("m_a") "    </listOfSpecies>\n"
               "    <listOfReactions>\n" RXN("r_1")
               "        <fbc:geneProductAssociation>\n" GREF("G_X")
               "        </fbc:geneProductAssociation>\n      </reaction>\n"
               "    </listOfReactions>\n" SBML_TAIL,
               PL_TEST_GZIP, 13, 56,
               "reaction 'r_1': gene product 'G_X' is not in the model's fbc:listOfGeneProducts");
}

Test(import_sbml, unknown_gene_in_strict_mode)
{
    expect_bad(SBML_HEAD "    <listOfSpecies>\n" SPECIES("m_a") "    </listOfSpecies>\n"
               "    <listOfReactions>\n" RXN("r_1")
               "        <fbc:geneProductAssociation>\n" GREF("G_Z")
               "        </fbc:geneProductAssociation>\n      </reaction>\n"
               "    </listOfReactions>\n"
               "    <fbc:listOfGeneProducts>\n" GENE("G_Z", "fbc:label=\"ZZZ\"")
               "    </fbc:listOfGeneProducts>\n" SBML_TAIL,
               PL_TEST_PLAIN, 12, 0, "reaction 'r_1': unknown gene 'ZZZ'");
}

Test(import_sbml, stoichiometry_missing)
{
    expect_bad(SBML_HEAD "    <listOfSpecies>\n" SPECIES("m_a") "    </listOfSpecies>\n"
               "    <listOfReactions>\n" RXN("r_1") "        <listOfReactants>\n"
               "          <speciesReference species=\"m_a\" constant=\"true\"/>\n"
               "        </listOfReactants>\n      </reaction>\n    </listOfReactions>\n"
               SBML_TAIL,
               PL_TEST_ZSTD, 13, 58, "reaction 'r_1': species 'm_a' without a finite "
               "stoichiometry");
}

Test(import_sbml, species_not_listed)
{
    expect_bad(SBML_HEAD "    <listOfSpecies>\n" SPECIES("m_a") "    </listOfSpecies>\n"
               "    <listOfReactions>\n" RXN("r_1") "        <listOfProducts>\n"
               SREF("m_a", "1") SREF("m_q", "1")
               "        </listOfProducts>\n      </reaction>\n    </listOfReactions>\n"
               SBML_TAIL,
               PL_TEST_PLAIN, 14, 0, "metabolite 'm_q' is not in the model's metabolites");
}

Test(import_sbml, empty_association)
{
    expect_bad(SBML_HEAD "    <listOfSpecies>\n" SPECIES("m_a") "    </listOfSpecies>\n"
               "    <listOfReactions>\n" RXN("r_1")
               "        <fbc:geneProductAssociation>\n          <fbc:and>\n"
               "          </fbc:and>\n        </fbc:geneProductAssociation>\n"
               "      </reaction>\n    </listOfReactions>\n" SBML_TAIL,
               PL_TEST_PLAIN, 13, 19, "reaction 'r_1': an empty fbc:and");
}

/* libsbml 5.19 dereferences NULL on any element after a geneProductAssociation's
 * association (found by fuzz_models): such files are refused before libsbml
 * reads them, naming the element's line; notes and annotation before the
 * association are SBML and read. */
#define GPA_CASE(inner)                                                                    \
    SBML_HEAD "    <listOfSpecies>\n" SPECIES("m_a") "    </listOfSpecies>\n"              \
              "    <listOfReactions>\n" RXN("r_1")                                         \
              "        <fbc:geneProductAssociation>\n" inner                               \
              "        </fbc:geneProductAssociation>\n"                                    \
              "      </reaction>\n    </listOfReactions>\n"                                \
              "    <fbc:listOfGeneProducts>\n" GENE("G_G1", "fbc:label=\"G1\"")             \
              "    </fbc:listOfGeneProducts>\n" SBML_TAIL

Test(import_sbml, element_after_the_association)
{
    expect_bad(GPA_CASE(GREF("G_G1") "          <annotation/>\n"), PL_TEST_PLAIN, 14, 0,
               "<annotation> in an fbc:geneProductAssociation after its association");
    expect_bad(GPA_CASE("          <fbc:and>\n" GREF("G_G1") GREF("G_G1")
                        "          </fbc:and>\n          <listOfReactants/>\n"),
               PL_TEST_PLAIN, 17, 0,
               "<listOfReactants> in an fbc:geneProductAssociation after its association");
    expect_bad(GPA_CASE(GREF("G_G1") GREF("G_G1")), PL_TEST_PLAIN, 14, 0,
               "<geneProductRef> in an fbc:geneProductAssociation after its association");
    expect_bad(GPA_CASE("          <reaction/>\n" GREF("G_G1")), PL_TEST_PLAIN, 13, 0,
               "<reaction> in an fbc:geneProductAssociation is not an association");
    /* the fuzzer's input: the document ends inside a second, nested association */
    expect_bad(SBML_HEAD "    <listOfSpecies>\n" SPECIES("m_a") "    </listOfSpecies>\n"
               "    <listOfReactions>\n" RXN("r_1")
               "        <fbc:geneProductAssociation>\n"
               "          <fbc:or>\n" GREF("G_G1") "          </fbc:or>\n"
               "        <fbc:geneProductAssociation>\n          <fbc:or><fbc:and><f",
               PL_TEST_PLAIN, 16, 0, "after its association");
}

Test(import_sbml, notes_and_annotation_before_the_association)
{
    pl_err err;
    int rc = read_sbml(GPA_CASE("          <notes><p xmlns=\"http://www.w3.org/1999/xhtml\">"
                                "x</p></notes>\n          <annotation/>\n" GREF("G_G1")),
                       PL_TEST_PLAIN, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(m.n_gpr, 1);
    cr_assert_eq(m.rules.n, 1);
}

/* RMR entries of `m` as sorted "rxn met stoich" lines. */
static char *rmr_sorted(const pl_metab *x, const char *name)
{
    pl_test_text t = {0};
    for (uint64_t i = 0; i < x->n_rmr; i++)
        pl_test_tprintf(&t, "%s %s %.9g\n", x->reactions.names[x->rmr_rxn[i]],
                        x->metabolites.names[x->rmr_met[i]], (double)x->rmr_stoich[i]);
    char *p = pl_test_put_text(dir, name, &t);
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "sort -o '%s' '%s'", p, p);
    cr_assert_eq(system(cmd), 0);
    size_t len;
    char *s = pl_test_read_file(p, &len);
    free(p);
    return s;
}

/* The real yeast-GEM written as SBML by COBRApy (ids R_/M_/G_-prefixed,
 * '-' escaped as __45__, reactants and products apart) reads as the YAML it
 * came from: the same reactions, metabolites, stoichiometry, GPR pairs and
 * compiled rules. */
Test(import_sbml, real_yeast_gem_through_cobrapy, .timeout = 600)
{
    char *root = pl_test_real_data();
    char yml[4096], gl[4096], xml[4096], cmd[16000];
    snprintf(yml, sizeof yml, "%s/real/yeast-gem/yeast-GEM.yml.gz", root);
    snprintf(gl, sizeof gl, "%s/real/yeast-gem/genes.tsv.gz", root);
    snprintf(xml, sizeof xml, "%s/yeast-GEM.xml", dir);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c \"import cobra, gzip, sys; "
             "m = cobra.io.yaml.from_yaml(gzip.open(sys.argv[1], 'rt').read()); "
             "cobra.io.write_sbml_model(m, sys.argv[2])\" '%s' '%s' > /dev/null 2>&1 && "
             "gzip '%s'", yml, xml, xml);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    strcat(xml, ".gz");
    pl__names_free(nm);
    nm = pl_test_names_from(gl, 1);
    pl_err err;
    cr_assert_eq(pl__metab_init(&y, nm, 1, &err), 0);
    cr_assert_eq(pl__metab_read_yeastgem(&y, yml, &err), 0, "%s", err.msg);
    cr_assert_eq(pl__metab_init(&m, nm, 1, &err), 0);
    cr_assert_eq(pl__metab_read_sbml(&m, xml, &err), 0, "%s", err.msg);
    cr_assert_eq(m.reactions.n, 4131);
    cr_assert_eq(m.metabolites.n, 2806);
    char *a = rmr_sorted(&m, "sbml.txt"), *b = rmr_sorted(&y, "yaml.txt");
    cr_assert(!strcmp(a, b), "the stoichiometry differs");
    free(a), free(b);
    /* everything else in the same order: SBML lists reactants first, so
     * compare the rest with the RMR set aside */
    m.n_rmr = y.n_rmr = 0;
    same(&m, &y);
    free(root);
}

/* libsbml recurses once per nested association and overflowed the stack
 * (SIGSEGV) some 12,000 levels down, before pertload's own depth check: the
 * libxml2 pre-pass refuses elements nested past its limit first. 50,000
 * levels gzip to a few KB. */
Test(import_sbml, association_nested_too_deep)
{
    pl_test_text inner = {0};
    size_t deep = 50000;
    pl_test_tprintf(&inner, "          ");
    for (size_t i = 0; i < deep; i++)
        pl_test_tprintf(&inner, "<fbc:or>");
    pl_test_tprintf(&inner, "\n" GREF("G_G1"));
    for (size_t i = 0; i < deep; i++)
        pl_test_tprintf(&inner, "</fbc:or>");
    pl_test_tprintf(&inner, "\n");
    pl_test_text doc = {0};
    pl_test_tprintf(&doc, "%s%s%s",
                    SBML_HEAD "    <listOfSpecies>\n" SPECIES("m_a") "    </listOfSpecies>\n"
                              "    <listOfReactions>\n" RXN("r_1")
                              "        <fbc:geneProductAssociation>\n",
                    inner.s,
                    "        </fbc:geneProductAssociation>\n"
                    "      </reaction>\n    </listOfReactions>\n"
                    "    <fbc:listOfGeneProducts>\n" GENE("G_G1", "fbc:label=\"G1\"")
                    "    </fbc:listOfGeneProducts>\n" SBML_TAIL);
    expect_bad(doc.s, PL_TEST_GZIP, 13, 0, "XML elements nested deeper than 128");
    free(doc.s);
    free(inner.s);
}
