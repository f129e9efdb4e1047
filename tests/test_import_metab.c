/* The yeast-GEM YAML reader: a small model in the !!omap layout and as plain
 * mappings, plain/gzip/zstd; the real yeast-GEM v9.0.2 against the flat
 * tables derived from it (reactions, stoichiometry, GPR pairs, rules checked
 * by a text evaluator); unresolved and strict gene names; malformed models
 * named by file, line and reason. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "importutil.h"
#include "preprocess/import/source/source.h"
#include "preprocess/import/metab/metab.h"
#include "src/core/rule.h"

static pl_names *nm;
static pl_metab m;

static void teardown(void)
{
    pl__metab_free(&m);
    pl__names_free(nm);
    nm = NULL;
    pl_test_dir_fini();
}
TestSuite(import_metab, .init = pl_test_dir_init, .fini = teardown);

static void genes(const char *list)
{
    pl__names_free(nm);
    nm = pl_test_names("genes.txt", list);
}

/* Read `p` as yeast-GEM into `m`; `strict` points at the mode. */
static int read_yeastgem(void *strict, const char *p, pl_err *err)
{
    pl__metab_free(&m);
    cr_assert_eq(pl__metab_init(&m, nm, *(const int *)strict, err), 0);
    return pl__metab_read_yeastgem(&m, p, err);
}

static int read_model(const char *text, int codec, int strict, pl_err *err)
{
    return read_yeastgem(&strict, pl_test_put("model.yml", text, codec), err);
}

static void expect_bad(const char *text, unsigned long line, unsigned long col,
                       const char *reason)
{
    int strict = 0;
    pl_test_read_fails(read_yeastgem, &strict, "model.yml", text, PL_TEST_PLAIN, line, col,
                       reason);
}

/* The model's RMR entries as "rxn met stoich" lines. */
static void rmr_text(pl_test_text *t)
{
    for (uint64_t i = 0; i < m.n_rmr; i++)
        pl_test_tprintf(t, "%s %s %.9g\n", m.reactions.names[m.rmr_rxn[i]],
                        m.metabolites.names[m.rmr_met[i]], (double)m.rmr_stoich[i]);
}

static void gpr_text(pl_test_text *t)
{
    for (uint64_t i = 0; i < m.n_gpr; i++)
        pl_test_tprintf(t, "%s %s\n", pl__names_gene(nm, (uint32_t)m.gpr_gene[i]),
                        m.reactions.names[m.gpr_rxn[i]]);
}

/* The program stored for reaction r, or NULL (n = 0). */
static const uint32_t *program(int64_t r, uint32_t *n)
{
    for (uint64_t i = 0; i < m.rules.n; i++)
        if (m.rules.rxn[i] == r) {
            *n = (uint32_t)(m.rules.off[i + 1] - m.rules.off[i]);
            return m.rules.code + m.rules.off[i];
        }
    *n = 0;
    return NULL;
}

typedef struct del {
    const int32_t *p;
    uint32_t np;
} del;

static int is_deleted(void *ctx, const char *name, size_t len)
{
    del *d = ctx;
    int64_t g = pl__names_resolve(nm, name, len);
    return g >= 0 && pl__rule_deleted(d->p, d->np, (uint32_t)g);
}

/* Reaction r's program against the text evaluator on `rule`: no deletion,
 * each gene of the rule alone, and every pair of its genes. */
static void check_rule(int64_t r, const char *rule)
{
    uint32_t n;
    const uint32_t *code = program(r, &n);
    if (!rule[0]) {
        cr_assert_eq(n, 0, "reaction %s: a program for an empty rule", m.reactions.names[r]);
        return;
    }
    cr_assert(code && n > 0, "reaction %s has no program", m.reactions.names[r]);
    int32_t gs[64];
    uint32_t ng = 0;
    for (uint64_t i = 0; i < m.n_gpr; i++)
        if (m.gpr_rxn[i] == r && ng < 64)
            gs[ng++] = m.gpr_gene[i];
    for (uint32_t a = 0; a <= ng; a++)
        for (uint32_t b = a; b <= ng; b++) {
            int32_t p[2];
            uint32_t np = 0;
            if (a < ng)
                p[np++] = gs[a];
            if (b < ng && b != a)
                p[np++] = gs[b];
            if (np == 2 && p[0] > p[1]) {
                int32_t t = p[0];
                p[0] = p[1], p[1] = t;
            }
            del d = {p, np};
            int want = pl_test_rule_holds(rule, is_deleted, &d);
            cr_assert_neq(want, -1, "rule '%s' does not parse", rule);
            cr_assert_eq(pl__rule_eval(code, n, p, np), want, "reaction %s, rule '%s'",
                         m.reactions.names[r], rule);
        }
}

static const char *tiny_omap =
    "---\n"
    "!!omap\n"
    "- metaData:\n"
    "    id: \"tiny\"\n"
    "- metabolites:\n"
    "    - !!omap\n"
    "      - id: \"m_a\"\n"
    "      - name: \"A, with (parentheses)\"\n"
    "    - !!omap\n"
    "      - id: \"m_b\"\n"
    "    - !!omap\n"
    "      - id: \"m_c\"\n"
    "      - annotation: !!omap\n"
    "          - chebi: \"CHEBI:1\"\n"
    "- reactions:\n"
    "    - !!omap\n"
    "      - id: \"r_1\"\n"
    "      - name: \"one\"\n"
    "      - metabolites: !!omap\n"
    "          - m_b: 1\n"
    "          - m_a: -1\n"
    "      - lower_bound: 0\n"
    "      - gene_reaction_rule: \"(G1 and G2) or G3\"\n"
    "      - subsystem:\n"
    "          - \"x\"\n"
    "    - !!omap\n"
    "      - id: \"r_2\"\n"
    "      - metabolites: !!omap\n"
    "          - m_c: 0.5\n"
    "          - m_a: -2.25\n"
    "      - gene_reaction_rule: \"\"\n"
    "    - !!omap\n"
    "      - id: \"r_3\"\n"
    "      - metabolites: !!omap\n"
    "          - m_c: -1e0\n"
    "      - gene_reaction_rule: \"g2 OR (G4 and G1)\"\n"
    "- genes:\n"
    "    - !!omap\n"
    "      - id: \"G1\"\n"
    "    - !!omap\n"
    "      - id: \"G2\"\n"
    "- compartments: !!omap\n"
    "    - c: \"cytoplasm\"\n";

/* The same model as plain mappings, keys in another order. */
static const char *tiny_plain =
    "metabolites:\n"
    "  - {id: m_a, name: 'A, with (parentheses)'}\n"
    "  - id: m_b\n"
    "  - id: m_c\n"
    "reactions:\n"
    "  - metabolites: {m_b: 1, m_a: -1}\n"
    "    gene_reaction_rule: (G1 and G2) or G3\n"
    "    id: r_1\n"
    "  - id: r_2\n"
    "    metabolites: {m_c: 0.5, m_a: -2.25}\n"
    "  - id: r_3\n"
    "    gene_reaction_rule: 'g2 OR (G4 and G1)'\n"
    "    metabolites:\n"
    "      m_c: -1\n"
    "genes: [{id: G1}, {id: G2}]\n";

static void check_tiny(void)
{
    cr_assert_eq(m.reactions.n, 3);
    cr_assert_str_eq(m.reactions.names[0], "r_1");
    cr_assert_str_eq(m.reactions.names[2], "r_3");
    cr_assert_eq(m.metabolites.n, 3);
    cr_assert_str_eq(m.metabolites.names[0], "m_a");
    cr_assert_str_eq(m.metabolites.names[1], "m_b");
    cr_assert_str_eq(m.metabolites.names[2], "m_c");
    pl_test_text t = {0};
    rmr_text(&t);
    cr_assert_str_eq(t.s, "r_1 m_b 1\nr_1 m_a -1\nr_2 m_c 0.5\nr_2 m_a -2.25\nr_3 m_c -1\n");
    free(t.s);
    t = (pl_test_text){0};
    gpr_text(&t);
    cr_assert_str_eq(t.s, "G1 r_1\nG2 r_1\nG3 r_1\nG2 r_3\nG4 r_3\nG1 r_3\n");
    free(t.s);
    cr_assert_eq(m.n_rules, 2);
    cr_assert_eq(m.unresolved, 0);
    check_rule(0, "(G1 and G2) or G3");
    check_rule(1, "");
    check_rule(2, "G2 or (G4 and G1)");
}

Test(import_metab, omap_and_plain_layouts_give_one_model)
{
    genes("G1\nG2\nG3\nG4\nG5\n");
    for (int c = PL_TEST_PLAIN; c <= PL_TEST_ZSTD; c++) {
        pl_err err;
        cr_assert_eq(read_model(tiny_omap, c, 1, &err), 0, "%s", err.msg);
        check_tiny();
        cr_assert_eq(m.n_model_genes, 2);
        cr_assert_eq(read_model(tiny_plain, c, 1, &err), 0, "%s", err.msg);
        check_tiny();
    }
}

Test(import_metab, unresolved_genes_counted_or_strict)
{
    genes("G1\nG2\nG4\n");
    pl_err err;
    cr_assert_eq(read_model(tiny_omap, PL_TEST_GZIP, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(m.unresolved, 1);
    cr_assert_eq(pl__unres_distinct(&m.names), 1);
    uint64_t count, line;
    cr_assert_str_eq(pl__unres_name(&m.names, 0, &count, &line), "G3");
    cr_assert_eq(count, 1);
    cr_assert_eq(line, 23);
    /* G3 always present: r_1 survives any deletion of G1 and G2 */
    uint32_t n;
    const uint32_t *code = program(0, &n);
    int32_t p[] = {0, 1};
    cr_assert_eq(pl__rule_eval(code, n, p, 2), 1);
    cr_assert_eq(read_model(tiny_omap, PL_TEST_PLAIN, 1, &err), PL_EPARSE);
    pl_test_expect_at(PL_EPARSE, PL_EPARSE, &err, path, 23, 45, "reaction 'r_1': unknown gene 'G3'");
}

/* A count from a shell pipeline. */
static unsigned long shell_count(const char *cmd)
{
    FILE *f = popen(cmd, "r");
    unsigned long n = 0;
    cr_assert(f);
    cr_assert_eq(fscanf(f, "%lu", &n), 1, "%s", cmd);
    cr_assert_eq(pclose(f), 0);
    return n;
}

Test(import_metab, real_yeast_gem_matches_derived_tables, .timeout = 300)
{
    char *root = pl_test_real_data();
    char yml[4096], gl[4096], cmd[9000];
    snprintf(yml, sizeof yml, "%s/real/yeast-gem/yeast-GEM.yml.gz", root);
    snprintf(gl, sizeof gl, "%s/real/yeast-gem/genes.tsv.gz", root);
    nm = pl_test_names_from(gl, 1);
    pl_err err;
    cr_assert_eq(pl__metab_init(&m, nm, 1, &err), 0);
    cr_assert_eq(pl__metab_read_yeastgem(&m, yml, &err), 0, "%s", err.msg);

    /* reactions: the derived table's, in its order; the rules' count */
    snprintf(cmd, sizeof cmd, "zcat '%s/real/yeast-gem/reactions.tsv.gz' | awk -F'\\t' "
             "'NR>1' | wc -l", root);
    unsigned long n_rxn = shell_count(cmd);
    cr_assert_eq(n_rxn, 4131);
    cr_assert_eq(m.reactions.n, n_rxn);
    snprintf(cmd, sizeof cmd, "zcat '%s/real/yeast-gem/reactions.tsv.gz' | awk -F'\\t' "
             "'NR>1 && $6 != \"\"' | wc -l", root);
    cr_assert_eq(m.n_rules, shell_count(cmd));
    cr_assert_eq(m.n_rules, 4131 - 1422);
    snprintf(cmd, sizeof cmd, "zcat '%s/real/yeast-gem/metabolites.tsv.gz' | awk 'NR>1' | "
             "wc -l", root);
    cr_assert_eq(m.metabolites.n, shell_count(cmd));
    cr_assert_eq(m.n_model_genes, 1161);
    cr_assert_eq(m.unresolved, 0);

    /* each reaction's rule (from the derived table) against its program */
    snprintf(cmd, sizeof cmd, "zcat '%s/real/yeast-gem/reactions.tsv.gz'", root);
    FILE *f = popen(cmd, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint64_t row = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (row++ == 0)
            continue;
        line[strcspn(line, "\n")] = 0;
        char *rule = strrchr(line, '\t') + 1;
        size_t idlen = strcspn(line, "\t");
        cr_assert_str_eq(m.reactions.names[row - 2], (line[idlen] = 0, line));
        check_rule((int64_t)row - 2, rule);
    }
    free(line);
    cr_assert_eq(pclose(f), 0);

    /* RMR and GPR: the derived tables, sorted, line for line */
    pl_test_text t = {0};
    rmr_text(&t);
    char *ours = pl_test_put_text(dir, "rmr.txt", &t);
    /* keys exact, coefficients to float precision */
    snprintf(cmd, sizeof cmd, "zcat '%s/real/yeast-gem/rxn_met_stoich.tsv.gz' | awk -F'\\t' "
             "'NR>1 {print $1, $2, $3}' | sort -k1,2 > '%s/want.txt'; sort -k1,2 '%s' | "
             "paste -d' ' - '%s/want.txt' | awk '{d = $3 - $6; if ($1 != $4 || $2 != $5 || "
             "d * d > 1e-12 * $6 * $6) bad++} END {print (bad ? -1 : NR)}'", root, dir, ours,
             dir);
    cr_assert_eq(shell_count(cmd), 15567);
    cr_assert_eq(m.n_rmr, 15567);
    free(ours);
    t = (pl_test_text){0};
    gpr_text(&t);
    ours = pl_test_put_text(dir, "gpr.txt", &t);
    snprintf(cmd, sizeof cmd, "zcat '%s/real/yeast-gem/gene_rxn_gpr.tsv.gz' | awk -F'\\t' "
             "'NR>1 {print $1, $2}' | sort > '%s/want.txt'; sort '%s' | cmp - '%s/want.txt' && "
             "wc -l < '%s/want.txt'", root, dir, ours, dir, dir);
    cr_assert_eq(shell_count(cmd), 4095);
    cr_assert_eq(m.n_gpr, 4095);
    free(ours);
    free(root);
}

/* ------------------------------------------------------------ malformed */

Test(import_metab, truncated_gzip_names_file_and_line)
{
    genes("G1\nG2\nG3\nG4\n");
    size_t n;
    void *z = pl_test_compress(tiny_omap, strlen(tiny_omap), PL_TEST_GZIP, &n);
    size_t cuts[] = {n - 4, n / 2};
    for (int i = 0; i < 2; i++) {
        free(path);
        path = pl_test_path(dir, "cut.yml.gz");
        pl_test_write_bytes(path, z, cuts[i]);
        /* the line source's own verdict on the same bytes */
        pl_src *s;
        pl_err want, err;
        cr_assert_eq(pl__src_open(path, &s, &want), 0);
        const char *l;
        size_t len;
        int rc;
        while ((rc = pl__src_line(s, &l, &len, &want)) > 0)
            ;
        pl__src_close(s);
        cr_assert_eq(rc, PL_EPARSE);
        pl__metab_free(&m);
        cr_assert_eq(pl__metab_init(&m, nm, 0, &err), 0);
        cr_assert_eq(pl__metab_read_yeastgem(&m, path, &err), PL_EPARSE);
        cr_assert_str_eq(err.msg, want.msg);
        unsigned long line = strtoul(err.msg + strlen(path) + 1, NULL, 10);
        pl_test_expect_at(PL_EPARSE, PL_EPARSE, &err, path, line, 0, "truncated gzip stream");
        cr_assert(line >= 1 && line <= 46, "%s", err.msg);
    }
    free(z);
}

Test(import_metab, not_a_model)
{
    genes("G1\n");
    expect_bad("hello world\n", 1, 1, "not a yeast-GEM (COBRApy YAML) model");
    expect_bad("id: x\nmetabolites: []\n", 1, 1, "no 'reactions'");
    expect_bad("", 1, 1, "empty file");
    expect_bad("reactions: {a: 1}\n", 1, 12, "'reactions' must be a list");
    expect_bad("reactions:\n  - id: r\n    metabolites: [1, 2]\n", 3, 19,
               "an !!omap entry must be a one-key mapping");
    expect_bad("reactions:\n  - id: r\n  id: [\n", 3, 3, "not YAML");
    pl_err err;
    cr_assert_eq(read_model("reactions: []\n", PL_TEST_PLAIN, 0, &err), PL_EPARSE);
    cr_assert(strstr(err.msg, path) == err.msg && strstr(err.msg, ": the model has no reactions"),
              "%s", err.msg);
    expect_bad("reactions: [{id: r}]\n---\nx: 1\n", 2, 1, "a second YAML document");
}

Test(import_metab, reaction_without_id)
{
    genes("G1\n");
    expect_bad("reactions:\n  - id: r_1\n  - name: two\n    gene_reaction_rule: G1\n", 3, 5,
               "a reaction without 'id'");
    expect_bad("reactions:\n  - id: r_1\n  - id: r_1\n", 3, 9, "reaction 'r_1' given twice");
    expect_bad("reactions:\n  - id: ''\n", 2, 10, "empty reaction id");
}

Test(import_metab, bad_stoichiometry)
{
    genes("G1\n");
    expect_bad("reactions:\n  - id: r\n    metabolites: {a: 1, b: x2}\n", 3, 28,
               "bad stoichiometry 'x2' of metabolite 'b'");
    expect_bad("reactions:\n  - id: r\n    metabolites: {a: 1e999}\n", 3, 22,
               "bad stoichiometry '1e999'");
    expect_bad("reactions:\n  - id: r\n    metabolites: {a: [1]}\n", 3, 22,
               "stoichiometry of 'a' must be a number");
    expect_bad("reactions:\n  - id: r\n    metabolites: {a: 1, a: 2}\n", 3, 25,
               "reaction 'r' names metabolite 'a' twice");
    expect_bad("metabolites: [{id: a}]\nreactions:\n  - id: r\n    metabolites:\n"
               "      a: 1\n      z: -1\n", 6, 0, "metabolite 'z' is not in the model's metabolites");
    expect_bad("metabolites: [{id: a}, {id: a}]\nreactions: [{id: r}]\n", 1, 29,
               "metabolite 'a' listed twice (first on line 1)");
}

Test(import_metab, rule_that_does_not_parse)
{
    genes("G1\nG2\n");
    expect_bad("reactions:\n  - id: r_9\n    gene_reaction_rule: \"G1 and (G2 or\"\n", 3, 39,
               "reaction 'r_9': ");
    expect_bad("reactions:\n  - id: r_9\n    gene_reaction_rule: G1 && G2\n", 3, 28,
               "reaction 'r_9': ");
    expect_bad("reactions:\n  - gene_reaction_rule: G1 G2\n    id: r_8\n", 2, 28,
               "reaction 'r_8': ");
}

Test(import_metab, yaml_aliases_refused)
{
    genes("G1\n");
    expect_bad("reactions:\n  - &x {id: r}\n  - *x\n", 3, 5, "YAML aliases");
}

/* libyaml's time grows with the square of the flow nesting (1M levels fit in
 * a 2 KB .yml.gz): collections nested past PL_YAML_MAX_DEPTH are refused at
 * the first one too deep, at once. */
Test(import_metab, yaml_nesting_limit)
{
    genes("G1\n");
    size_t deep = 200000;
    pl_test_text t = {0};
    pl_test_tprintf(&t, "reactions:\n  - id: r\n    notes: ");
    for (size_t i = 0; i < deep; i++)
        pl_test_tprintf(&t, "[");
    pl_err err;
    int rc = read_model(t.s, PL_TEST_GZIP, 0, &err);
    /* "notes:" opens level 3 (model, list, reaction); each '[' one more */
    pl_test_expect_at(rc, PL_EPARSE, &err, path, 3, 12 + (PL_YAML_MAX_DEPTH - 3),
                      "YAML collections nested deeper than 64");
    /* at the limit: read */
    t.len = 0;
    pl_test_tprintf(&t, "reactions:\n  - id: r\n    notes: ");
    for (int i = 0; i < PL_YAML_MAX_DEPTH - 3; i++)
        pl_test_tprintf(&t, "[");
    for (int i = 0; i < PL_YAML_MAX_DEPTH - 3; i++)
        pl_test_tprintf(&t, "]");
    pl_test_tprintf(&t, "\n");
    cr_assert_eq(read_model(t.s, PL_TEST_PLAIN, 0, &err), 0, "%s", err.msg);
    free(t.s);
}

/* A key twice in one reaction was merged (the RMR entries of both, the later
 * rule): refused at the second, as the recipe reader refuses them. */
Test(import_metab, duplicate_keys_in_a_reaction)
{
    genes("G1\nG2\n");
    expect_bad("reactions:\n  - id: r\n    metabolites: {a: 1}\n    gene_reaction_rule: G1\n"
               "    metabolites: {b: -1}\n", 5, 5,
               "key 'metabolites' given twice in a reaction (first on line 3)");
    expect_bad("reactions:\n  - id: r\n    gene_reaction_rule: G1\n    gene_reaction_rule: G2\n",
               4, 5, "key 'gene_reaction_rule' given twice in a reaction (first on line 3)");
    expect_bad("reactions:\n  - {id: r, name: x, id: s}\n", 2, 22,
               "key 'id' given twice in a reaction (first on line 2)");
    /* the same keys in two reactions are fine */
    pl_err err;
    cr_assert_eq(read_model("reactions:\n  - {id: r, gene_reaction_rule: G1}\n"
                            "  - {id: s, gene_reaction_rule: G2}\n", PL_TEST_PLAIN, 0, &err),
                 0, "%s", err.msg);
}
