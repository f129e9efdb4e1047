/* Gene-reaction rules (`--rules`) that pl_build() refuses: each rejection is
 * PL_EPARSE "rules.tsv:line:col: reaction 'R': reason" (or PL_EUSAGE for
 * options that do not go together) and leaves neither the output directory
 * nor a "<out>.tmp-*" directory behind; and the lines it accepts (headers,
 * lines without a tab, genes outside the gene list when they are dropped). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_fx.h"
#include "testutil.h"

/* The build fixture (build_fx.h) with inputs of its own: a gene named like a
 * reaction's rule, one edge, one sample. */
static void rx_init(void)
{
    fx_init();
    F.o.genes = F.genes = put("genes.txt", "g1\ng2\ng3\ngpr1\n");
    F.files[0] = F.edges = put("phys.tsv", "g1\tg2\n");
    F.o.samples = F.samples = put("samples.tsv", "genes\tfitness\ng1\t0.5\n");
}

TestSuite(rules_errors, .init = rx_init, .fini = fx_fini);

static int build_rules(const char *text)
{
    F.o.rules = put("rules.tsv", text);
    return build();
}

/* The build of `text` fails with "rules.tsv:line:col: what". */
static void expect_parse_error(const char *text, int line, int col, const char *what)
{
    int rc = build_rules(text);
    cr_assert_eq(rc, PL_EPARSE, "rc %d (%s)", rc, F.err.msg);
    char want[1400];
    snprintf(want, sizeof want, "%s:%d:%d: %s", F.o.rules, line, col, what);
    cr_assert_str_eq(F.err.msg, want);
    expect_clean();
}

Test(rules_errors, unclosed_parenthesis)
{
    expect_parse_error("reaction\trule\nr1\tg1\nr2\t(g1 and g2\n", 3, 14,
                       "reaction 'r2': expected ')' to close the '(' at column 4, found the "
                       "end of the rule");
}

Test(rules_errors, unbalanced_closing_parenthesis)
{
    expect_parse_error("r1\tg1 and g2) or g3\n", 1, 13,
                       "reaction 'r1': unbalanced ')': no '(' to close");
}

Test(rules_errors, empty_operands)
{
    expect_parse_error("r1\tg1 and\n", 1, 10,
                       "reaction 'r1': expected a gene or '(' at the end of the rule");
    expect_parse_error("r1\tor g1\n", 1, 4,
                       "reaction 'r1': expected a gene or '(', found the operator 'or'");
    expect_parse_error("r1\tg1 and ()\n", 1, 12,
                       "reaction 'r1': expected a gene or '(', found ')'");
    expect_parse_error("r1\tg1 AND Or g2\n", 1, 11,
                       "reaction 'r1': expected a gene or '(', found the operator 'Or'");
}

Test(rules_errors, unknown_tokens)
{
    expect_parse_error("r1\tg1 & g2\n", 1, 7,
                       "reaction 'r1': unknown token '&' (a rule has genes, 'and', 'or' and "
                       "parentheses)");
    expect_parse_error("r1\tnot g2\n", 1, 4,
                       "reaction 'r1': unknown token 'not' (a rule has genes, 'and', 'or' and "
                       "parentheses)");
    expect_parse_error("r1\tg1 g2\n", 1, 7,
                       "reaction 'r1': expected 'and', 'or' or the end of the rule, found 'g2'");
}

Test(rules_errors, unknown_gene)
{
    expect_parse_error("r1\tg1\nr2\t(g2 or gX) and g3\n", 2, 11,
                       "reaction 'r2': unknown gene 'gX'");
}

Test(rules_errors, columns_and_duplicates)
{
    expect_parse_error("r1\tg1\textra\n", 1, 7,
                       "expected 2 tab-separated columns (reaction rule), found 3");
    expect_parse_error("r1\tg1\nr2\tg2\nr1\tg3\n", 3, 1,
                       "reaction 'r1' has a rule already (line 1)");
    expect_parse_error("\tg1\n", 1, 1, "empty reaction name");
}

/* Only the first line can be a header; a later one is data, and fails. */
Test(rules_errors, header_only_first)
{
    expect_parse_error("r1\tg1\nreaction\trule\n", 2, 10,
                       "reaction 'reaction': unknown gene 'rule'");
    /* With a reaction list, the header's reaction is not looked up. */
    char *rx = pl_test_write(F.dir, "reactions.txt", "r1\nr2\n");
    F.o.reactions = rx;
    cr_assert_eq(build_rules("rxn_id\tgene_reaction_rule\nr1\tg1 or g2\n"), 0, "%s",
                 F.err.msg);
    cr_expect_eq(F.st.n_rules, 1);
    cr_expect_eq(F.st.n_gpr, 2);
    free(rx);
}

/* A first line whose rule is a gene's name is data, even when the name
 * holds "gpr"; a line without a tab is the reaction then the rule. */
Test(rules_errors, first_line_data_and_lines_without_tabs)
{
    cr_assert_eq(build_rules("r1\tgpr1\nr2 g1 and (g2 OR g3)\nr3\n"), 0, "%s", F.err.msg);
    cr_expect_eq(F.st.n_reactions, 3);
    cr_expect_eq(F.st.n_rules, 2);
    cr_expect_eq(F.st.n_gpr, 4);
    pl_db *db;
    cr_assert_eq(pl_db_open(F.out, &db, &F.err), 0, "%s", F.err.msg);
    const pl_db_info *i = pl_db_info_get(db);
    cr_expect_eq(i->reaction_rule, PL_REACTION_GPR);
    cr_expect_eq(i->n_rules, 2);
    /* GPR edges: per line, the rule's genes in order of first appearance. */
    int32_t gpr[8];
    cr_assert_eq(pl_db_graph_array(db, PL_ARRAY_GPR, gpr, sizeof gpr, &F.err), 32);
    const int32_t want[8] = {3, 0, 1, 2, 0, 1, 1, 1};
    cr_expect_arr_eq(gpr, want, sizeof want);
    pl_db_close(db);
}

Test(rules_errors, options_that_exclude_each_other)
{
    F.o.gpr = put("gpr.tsv", "g1\tr1\n");
    cr_assert_eq(build_rules("r1\tg1\n"), PL_EUSAGE);
    cr_expect(strstr(F.err.msg, "the rules give the GPR edges; give one of them"), "%s",
              F.err.msg);
    expect_clean();
    F.o.rules = NULL;
    F.o.reaction_rule = PL_REACTION_GPR;
    memset(&F.err, 0, sizeof F.err);
    cr_assert_eq(pl_build(&F.o, &F.st, &F.err), PL_EUSAGE);
    cr_expect_str_eq(F.err.msg, "the reaction rule gpr needs gene-reaction rules (--rules)");
    expect_clean();
    F.o.gpr = NULL;
    F.o.reaction_rule = 7;
    cr_assert_eq(build_rules("r1\tg1\n"), PL_EUSAGE);
    expect_clean();
    /* rule gpr asked for, and every rule empty */
    F.o.reaction_rule = PL_REACTION_GPR;
    cr_assert_eq(build_rules("r1\t\nr2\n"), PL_EPARSE);
    cr_expect(strstr(F.err.msg, "no reaction has a rule"), "%s", F.err.msg);
    expect_clean();
    /* ... which is rule any by default */
    F.o.reaction_rule = PL_REACTION_DEFAULT;
    cr_assert_eq(build_rules("r1\t\nr2\n"), 0, "%s", F.err.msg);
    cr_expect_eq(F.st.n_reactions, 2);
    cr_expect_eq(F.st.n_rules, 0);
}

/* With drop_unknown_genes a gene outside the gene list is always present:
 * `g1 or gX` never fails, `g1 and gX` is `g1`; each is a dropped GPR record. */
Test(rules_errors, unknown_genes_dropped_are_present)
{
    F.o.drop_unknown_genes = 1;
    cr_assert_eq(build_rules("r1\tg1 or gX\nr2\tg1 and gX\nr3\tgX\nr4\t(gX or g2) and g1\n"), 0,
                 "%s", F.err.msg);
    cr_expect_eq(F.st.dropped_gpr, 4);
    /* Genes of the rules, dropped ones aside: g1 r1, g1 r2, g2 r4, g1 r4 (g2
     * can no longer matter, but it is a gene of r4's rule). */
    cr_expect_eq(F.st.n_gpr, 4);
    cr_expect_eq(F.st.n_rules, 4);
    pl_db *db;
    pl_graph *g;
    cr_assert_eq(pl_db_open(F.out, &db, &F.err), 0, "%s", F.err.msg);
    cr_assert_eq(pl_graph_load(db, &g, &F.err), 0, "%s", F.err.msg);
    pl_masks *m = pl_masks_new(g);
    cr_assert_not_null(m);
    pl_masks_result r;
    const int32_t g1 = 0;
    cr_assert_eq(pl_masks_compute(m, &g1, 1, &r), 0);
    const pl_list *rx = &r.removed[1 + PL_LIST_REACTION];
    cr_assert_eq(rx->n, 2);
    cr_expect_eq(rx->v[0], 1); /* r2 */
    cr_expect_eq(rx->v[1], 3); /* r4 */
    const int32_t g2 = 1;
    cr_assert_eq(pl_masks_compute(m, &g2, 1, &r), 0);
    cr_expect_eq(r.removed[1 + PL_LIST_REACTION].n, 0, "(true or g2) and g1 holds");
    cr_expect_eq(r.removed[1 + PL_LIST_GPR].n, 1);
    pl_masks_free(m);
    pl_graph_free(g);
    pl_db_close(db);
}
