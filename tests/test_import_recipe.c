/* Dataset recipes (preprocess/import/recipe/recipe.h) and `pertload recipe check`:
 * a recipe using every key, malformed recipes named by recipe:line:col, and
 * the command's report, --unresolved list and --strict mode on small files. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "importutil.h"
#include "preprocess/import/recipe/recipe.h"
#include "preprocess/import/source/source.h"

static void setup(void)
{
    pl_test_dir_init();
    free(pl_test_write(dir, "genes.txt", "YAL001C\nYAL002W\nYAL003W\n"));
    free(pl_test_write(dir, "alias.tsv", "Name\tORF\nTFC3\tYAL001C\nVPS8\tYAL002W\n"));
    const char *s = "protein1 protein2 combined_score\n4932.YAL001C 4932.YAL002W 500\n"
                    "4932.YAL002W 4932.YAL001C 500\n4932.YAL001C 4932.NOPE 900\n";
    free(pl_test_write_codec(dir, "links.txt.gz", s, strlen(s), PL_TEST_GZIP));
    const char *y = "TFC3;VPS8\nTFC3;ADE5,7\nVPS8;yal003w\n";
    free(pl_test_write_codec(dir, "reg.tsv.zst", y, strlen(y), PL_TEST_ZSTD));
}
TestSuite(import_recipe, .init = setup, .fini = pl_test_dir_fini);

/* A recipe's genes, with the alias table setup() writes, up to its edges. */
#define ALIASED                                                                                  \
    "version: 1\n"                                                                               \
    "genes:\n"                                                                                   \
    "  file: genes.txt\n"                                                                        \
    "  aliases:\n"                                                                               \
    "    - {file: alias.tsv, format: table, header: true, gene_column: 2, alias_column: 1}\n"    \
    "edges:\n"

static const char *good =
    ALIASED
    "  - name: physical\n"
    "    format: string\n"
    "    file: links.txt.gz\n"
    "    channel: combined_score\n"
    "    min_score: 400\n"
    "  - name: regulatory\n"
    "    format: yeastract\n"
    "    file: reg.tsv.zst\n"
    "  - name: bg\n"
    "    format: biogrid\n"
    "    file: /abs/bg.tab3.txt\n"
    "    system_type: physical\n"
    "    systems: [Two-hybrid, Affinity Capture-MS]\n"
    "    organisms: [559292, 4932]\n"
    "    throughput: low\n"
    "    id: symbol\n"
    "    pairs: as_listed\n"
    "  - name: tf\n"
    "    format: tflink\n"
    "    file: t.tsv\n"
    "    id: uniprot\n"
    "    small_scale: yes\n"
    "  - name: d\n"
    "    format: dango\n"
    "    file: d.txt\n"
    "    gene_list: genes.txt\n"
    "  - name: g\n"
    "    format: delim\n"
    "    file: g.csv\n"
    "    sep: ','\n"
    "    header: true\n"
    "    comment: '#'\n"
    "    source: from\n"
    "    target: to\n"
    "    score: 3\n";

Test(import_recipe, every_key)
{
    char *p = pl_test_write(dir, "r.yaml", good);
    pl_recipe *r;
    pl_err err = {0};
    cr_assert_eq(pl__recipe_load(p, NULL, &r, &err), 0, "%s", err.msg);
    char want[4200];
    snprintf(want, sizeof want, "%s/genes.txt", dir);
    cr_assert_str_eq(r->genes, want);
    cr_assert_eq(r->n_aliases, 1);
    cr_assert_eq(r->aliases[0].gene_col, 2);
    cr_assert_eq(r->aliases[0].alias_col, 1);
    cr_assert_eq(r->aliases[0].header, 1);
    cr_assert_eq(r->n_sources, 6);
    pl_imp_source *s = r->sources;
    cr_assert_str_eq(s[0].name, "physical");
    cr_assert_eq(s[0].fmt, &pl__imp_string);
    cr_assert_eq(s[0].undirected, 1); /* STRING's default */
    cr_assert_eq(s[0].opts.min_score, 400);
    cr_assert_eq(s[0].line, 7);
    cr_assert_eq(s[1].undirected, 0);
    cr_assert(isnan(s[1].opts.min_score));
    cr_assert_str_eq(s[2].file, "/abs/bg.tab3.txt");
    cr_assert_eq(s[2].undirected, 0);
    cr_assert_eq(s[2].opts.n_systems, 2);
    cr_assert_str_eq(s[2].opts.systems[1], "Affinity Capture-MS");
    cr_assert_eq(s[2].opts.n_organisms, 2);
    cr_assert_eq(s[2].opts.organisms[1], 4932);
    cr_assert_str_eq(s[2].opts.id, "symbol");
    cr_assert_eq(s[3].opts.small_scale, 1);
    cr_assert_str_eq(s[4].opts.gene_list, want);
    cr_assert_eq(s[5].opts.sep, ',');
    cr_assert_str_eq(s[5].opts.col_src, "from");
    cr_assert_str_eq(s[5].opts.col_score, "3");
    pl__recipe_free(r);
    /* --root replaces the base folder of relative paths */
    cr_assert_eq(pl__recipe_load(p, "/data", &r, &err), 0, "%s", err.msg);
    cr_assert_str_eq(r->genes, "/data/genes.txt");
    pl__recipe_free(r);
    free(p);
}

/* Load `text` as a recipe: fails with `reason` at line:col of the recipe. */
static void expect_bad(const char *text, unsigned long line, unsigned long col,
                       const char *reason)
{
    pl_test_recipe_fails("bad.yaml", text, line, col, reason);
}

#define HEAD "version: 1\ngenes:\n  file: genes.txt\nedges:\n"

Test(import_recipe, bad_keys)
{
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\nsampels: 3\n", 6, 1,
               "unknown key 'sampels' (version, root, genes, edges, metabolism, samples, "
               "ontology, features)");
    expect_bad(HEAD "  - name: a\n    format: yeastract\n    file: x\n    fiel: y\n", 8, 5,
               "unknown key 'fiel' in an edge source");
    expect_bad(HEAD "  - name: a\n    format: biogrid\n    file: x\n    channel: fusion\n", 8, 5,
               "key 'channel' does not apply to format 'biogrid'");
    expect_bad(HEAD "  - name: a\n    format: yeastract\n    file: x\n    file: y\n", 8, 5,
               "key 'file' given twice in an edge source (first on line 7)");
    expect_bad("version: 1\ngenes:\n  file: g\n  alias: []\nedges: []\n", 4, 3,
               "unknown key 'alias' in 'genes'");
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\nmetabolism: {}\n", 6, 13,
               "'metabolism' without 'format' (tsv, yeast-gem or sbml)");
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\nmetabolism: {format: tsv}\n", 6,
               13, "'metabolism' names no file (reactions, gpr, rules, rmr)");
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\n"
               "metabolism: {format: tsv, gpr: g, rules: r}\n", 6, 13,
               "'metabolism': give 'gpr' or 'rules'");
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\n"
               "metabolism: {format: cobra, gpr: g}\n", 6, 22,
               "unknown metabolism format 'cobra' (tsv, yeast-gem or sbml)");
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\n"
               "metabolism: {format: sbml, gpr: g}\n", 6, 28,
               "unknown key 'gpr' in 'metabolism' of format 'sbml' (format, file, "
               "reaction_rule)");
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\n"
               "metabolism: {format: tsv, rules: r, reaction_rule: all}\n", 6, 52,
               "'reaction_rule' is any or gpr, not 'all'");
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\nsamples: {format: tsv}\n", 6, 10,
               "'samples' needs 'format' and 'file'");
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\n"
               "samples: {format: tsv, file: s, labels: [x]}\n", 6, 33,
               "unknown key 'labels' in 'samples' (format, file, payload)");
}

Test(import_recipe, bad_sources)
{
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\n"
               "  - {name: a, format: yeastract, file: y}\n", 6, 5,
               "edge type 'a' named twice (first on line 5)");
    expect_bad(HEAD "  - {name: a, format: strings, file: x}\n", 5, 23,
               "unknown format 'strings'");
    expect_bad(HEAD "  - {name: a, format: string, file: x, channel: experimentz}\n", 5, 5,
               "edge source 'a': unknown STRING channel 'experimentz'");
    expect_bad(HEAD "  - name: a\n    format: biogrid\n    file: x\n"
               "    systems: [Two-hybrid, Synthetic Lethal]\n", 5, 5,
               "edge source 'a': unknown BioGRID Experimental System 'Synthetic Lethal'");
    expect_bad(HEAD "  - {name: a, format: string, file: x, min_score: high}\n", 5, 51,
               "'min_score' must be a number, not 'high'");
    expect_bad(HEAD "  - {name: a, format: biogrid, file: x, organisms: [yeast]}\n", 5, 53,
               "'organisms' must be a non-negative integer, not 'yeast'");
    expect_bad(HEAD "  - {name: a, format: dango, file: x}\n", 5, 5,
               "the dango format needs 'gene_list'");
    expect_bad(HEAD "  - {name: 'a b', format: yeastract, file: x}\n", 5, 5,
               "edge-type name 'a b' must be");
    expect_bad(HEAD "  - {name: a, format: yeastract}\n", 5, 5, "edge source 'a' without 'file'");
    pl_test_text t = {0};
    pl_test_tprintf(&t, HEAD);
    for (int i = 0; i <= PL_MAX_TYPES; i++)
        pl_test_tprintf(&t, "  - {name: e%d, format: yeastract, file: x}\n", i);
    expect_bad(t.s, 5, 3, "65 edge sources; a database holds at most 64 edge types");
    free(t.s);
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x, pairs: both}\n", 5, 50,
               "'pairs' must be unordered or as_listed, not 'both'");
}

Test(import_recipe, bad_documents)
{
    expect_bad("version: 2\n", 1, 10, "recipe version 2 is not supported");
    expect_bad("version: 1\ngenes: [\n", 3, 1, "did not find expected node content");
    expect_bad("- a\n- b\n", 1, 1, "a recipe is a mapping");
    expect_bad("version: 1\nedges:\n  - {name: a, format: yeastract, file: x}\n", 1, 1,
               "the recipe has no 'genes' with a 'file'");
    pl_test_recipe_fails("empty.yaml", "", 1, 1, "empty recipe");
}

/* Run `pertload recipe check ARGS`; stdout and stderr into *out (malloc'd).
 * @return the exit status. */
static int run(const char *args, char **out)
{
    char a[8192 + 16];
    snprintf(a, sizeof a, "recipe check %s", args);
    return pl_test_run_in(NULL, a, out);
}

static const char *small =
    ALIASED
    "  - {name: physical, format: string, file: links.txt.gz, min_score: 400}\n"
    "  - {name: regulatory, format: yeastract, file: reg.tsv.zst}\n";

Test(import_recipe, check_reports_lists_and_strict)
{
    char *p = pl_test_write(dir, "small.yaml", small);
    char *u = pl_test_path(dir, "unresolved.tsv");
    char args[8192], *out;
    snprintf(args, sizeof args, "--unresolved '%s' '%s'", u, p);
    cr_assert_eq(run(args, &out), 0, "%s", out);
    cr_assert(strstr(out, "genes 3 "), "%s", out);
    cr_assert(strstr(out, "source physical format=string rows=3 filtered=0 unresolved=1 "
                          "unresolved_names=1 duplicates=1 kept=1 pairs=unordered"), "%s", out);
    cr_assert(strstr(out, "source regulatory format=yeastract rows=3 filtered=0 unresolved=1 "
                          "unresolved_names=1 duplicates=0 kept=2 pairs=as_listed"), "%s", out);
    cr_assert(strstr(out, "total sources=2 kept=3 unresolved=2"), "%s", out);
    free(out);
    size_t len;
    char *list = pl_test_read_file(u, &len);
    char want[8192];
    snprintf(want, sizeof want, "source\tname\tcount\tfirst_seen\nphysical\tNOPE\t1\t%s/links.txt.gz:4\n"
             "regulatory\tADE5,7\t1\t%s/reg.tsv.zst:2\n", dir, dir);
    cr_assert_str_eq(list, want);
    free(list);
    /* strict: the first unresolved name fails the check, at its file:line:col */
    snprintf(want, sizeof want, "pertload recipe: %s/links.txt.gz:4:19: unresolved gene name "
             "'NOPE' (strict mode)", dir);
    pl_test_run_expect(NULL, 1, want, "recipe check --strict '%s'", p);
    /* a recipe error: exit 1 and recipe:line:col; usage errors: exit 2 */
    char *b = pl_test_write(dir, "b.yaml", HEAD "  - {name: a, format: nope, file: x}\n");
    snprintf(want, sizeof want, "%s:5:23: unknown format 'nope'", b);
    pl_test_run_expect(NULL, 1, want, "recipe check '%s'", b);
    cr_assert_eq(run("--bogus x", &out), 2, "%s", out);
    free(out);
    /* a missing data file: named, exit 1, no unresolved list left behind */
    char *m = pl_test_write(dir, "m.yaml", HEAD "  - {name: a, format: yeastract, file: gone.txt}\n");
    remove(u);
    snprintf(args, sizeof args, "--unresolved '%s' '%s'", u, m);
    cr_assert_eq(run(args, &out), 1, "%s", out);
    snprintf(want, sizeof want, "%s/gone.txt: cannot open", dir);
    cr_assert(strstr(out, want), "%s", out);
    FILE *f = fopen(u, "r");
    cr_assert_null(f, "a half-written unresolved list was left behind");
    free(out), free(p), free(u), free(b), free(m);
}

/* ------------------------------------------------- metabolism, samples */

#define EDGE "  - {name: a, format: yeastract, file: x}\n"

Test(import_recipe, metabolism_and_sample_keys)
{
    pl_recipe *r = pl_test_recipe_ok("ms.yaml", HEAD EDGE
                                     "metabolism: {format: sbml, file: m.xml.gz}\n"
                                     "samples:\n"
                                     "  - format: sga\n"
                                     "    file: /abs/SGA_ExE.txt\n"
                                     "  - format: table\n"
                                     "    file: s.csv\n"
                                     "    sep: ','\n"
                                     "    header: true\n"
                                     "    comment: '#'\n"
                                     "    gene_columns: [query, array]\n"
                                     "    id: 1\n"
                                     "    labels: [fitness, 5]\n"
                                     "    categories: [split]\n");
    char want[4200];
    snprintf(want, sizeof want, "%s/m.xml.gz", dir);
    cr_assert_eq(r->metabolism.model, PL_METAB_SBML);
    cr_assert_eq(r->metabolism.reaction_rule, PL_REACTION_DEFAULT);
    cr_assert_str_eq(r->metabolism.format, "sbml");
    cr_assert_str_eq(r->metabolism.file, want);
    cr_assert_eq(r->n_tables, 2);
    cr_assert_null(r->samples.format);
    cr_assert_eq(r->tables[0].format, PL_SMP_SGA);
    cr_assert_str_eq(r->tables[0].file, "/abs/SGA_ExE.txt");
    const pl_smp_spec *t = &r->tables[1];
    cr_assert_eq(t->format, PL_SMP_TABLE);
    cr_assert_eq(t->sep, ',');
    cr_assert_str_eq(t->comment, "#");
    cr_assert_eq(t->n_gene_columns, 2);
    cr_assert_str_eq(t->gene_columns[1], "array");
    cr_assert_str_eq(t->id, "1");
    cr_assert_eq(t->n_labels, 2);
    cr_assert_str_eq(t->labels[1], "5");
    cr_assert_eq(t->n_categories, 1);
    cr_assert_str_eq(t->categories[0], "split");
    pl__recipe_free(r);
    /* one mapping is one table; yeast-gem by name, with its reaction rule */
    r = pl_test_recipe_ok("ms1.yaml", HEAD EDGE "metabolism:\n  format: yeast-gem\n  file: y.yml\n"
                          "  reaction_rule: any\n"
                          "samples: {format: table, file: s.tsv, genes: mutant, gene_sep: '+'}\n");
    cr_assert_eq(r->metabolism.model, PL_METAB_YEASTGEM);
    cr_assert_eq(r->metabolism.reaction_rule, PL_REACTION_ANY);
    cr_assert_eq(r->n_tables, 1);
    cr_assert_str_eq(r->tables[0].genes, "mutant");
    cr_assert_eq(r->tables[0].gene_sep, '+');
    pl__recipe_free(r);
}

Test(import_recipe, bad_metabolism_and_samples)
{
    expect_bad(HEAD EDGE "metabolism: {format: cobra, file: m}\n", 6, 22,
               "unknown metabolism format 'cobra' (tsv, yeast-gem or sbml)");
    expect_bad(HEAD EDGE "metabolism: {format: sbml}\n", 6, 13, "'metabolism' without 'file'");
    expect_bad(HEAD EDGE "metabolism: {format: sbml, file: m, strict: true}\n", 6, 37,
               "unknown key 'strict' in 'metabolism' of format 'sbml' (format, file, "
               "reaction_rule)");
    expect_bad(HEAD EDGE "metabolism: {format: yeast-gem, file: m, reaction_rule: all}\n", 6,
               57, "'reaction_rule' is any or gpr, not 'all'");
    expect_bad(HEAD EDGE "samples: {format: sga, file: s, sep: ','}\n", 6, 33,
               "key 'sep' does not apply to format 'sga'");
    expect_bad(HEAD EDGE "samples: [{format: csv, file: s}]\n", 6, 20,
               "unknown sample format 'csv' (table, sga or dcell_samples)");
    expect_bad(HEAD EDGE "samples: [{format: table}]\n", 6, 11, "a sample table without 'file'");
    expect_bad(HEAD EDGE "samples: [{file: s}]\n", 6, 11, "a sample table without 'format'");
    expect_bad(HEAD EDGE "samples: {format: table, file: s, header: false, genes: g}\n", 6, 10,
               "sample table: column 'g' is a name, but the file has no header");
    expect_bad(HEAD EDGE "samples: {format: table, file: s, labels: fitness}\n", 6, 43,
               "'labels' must be a list of columns");
    expect_bad(HEAD EDGE "samples: {format: table, file: s, id: x, categories: [x]}\n",
               6, 10, "sample table: column 'x' is given two roles");
    expect_bad(HEAD EDGE "samples: []\n", 6, 10, "'samples' is an empty list");
}

Test(import_recipe, check_reports_metabolism_and_samples)
{
    free(pl_test_write(dir, "m.yml", "reactions:\n"
                                     "  - {id: r1, metabolites: {a: -1, b: 1}, "
                                     "gene_reaction_rule: TFC3 or GHOST}\n"
                                     "  - {id: r2, metabolites: {b: -2}}\n"));
    free(pl_test_write(dir, "s1.tsv", "genes\tfitness\tsplit\nYAL001C;VPS8\t0.5\ttrain\n"
                                      "YAL003W;NOPE\t1\tval\nyal003w\tNA\ttest\n"));
    free(pl_test_write(dir, "s2.tsv", "genes\tfitness\tsplit\nYAL002W\t0.25\tval\n"));
    free(pl_test_write(dir, "s3.tsv", "genes\tscore\nYAL002W\t0.25\n"));
    free(pl_test_write(dir, "reg2.tsv", "TFC3;VPS8\n"));
    const char *head = ALIASED "  - {name: regulatory, format: yeastract, file: reg2.tsv}\n"
                               "metabolism: {format: yeast-gem, file: m.yml}\n";
    char text[2048];
    snprintf(text, sizeof text, "%ssamples:\n  - {format: table, file: s1.tsv, categories: "
             "[split]}\n  - {format: table, file: s2.tsv, categories: [split]}\n", head);
    char *p = pl_test_write(dir, "ms.yaml", text);
    char *u = pl_test_path(dir, "unresolved.tsv");
    char args[8192], want[8192], *out;
    snprintf(args, sizeof args, "--unresolved '%s' '%s'", u, p);
    cr_assert_eq(run(args, &out), 0, "%s", out);
    snprintf(want, sizeof want, "metabolism format=yeast-gem reactions=2 metabolites=2 rmr=3 "
             "rules=1 gpr=1 model_genes=0 unresolved=1 unresolved_names=1 file=%s/m.yml\n", dir);
    cr_assert(strstr(out, want), "%s", out);
    snprintf(want, sizeof want, "samples format=table rows=3 kept=2 dropped_unresolved=1 "
             "unresolved_names=1 labels=1 categories=1 file=%s/s1.tsv\n", dir);
    cr_assert(strstr(out, want), "%s", out);
    snprintf(want, sizeof want, "samples format=table rows=1 kept=1 dropped_unresolved=0 "
             "unresolved_names=0 labels=1 categories=1 file=%s/s2.tsv\n", dir);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert(strstr(out, "total sources=1 kept=1 unresolved=2\n"), "%s", out);
    free(out);
    size_t len;
    char *list = pl_test_read_file(u, &len);
    snprintf(want, sizeof want, "source\tname\tcount\tfirst_seen\nmetabolism\tGHOST\t1\t"
             "%s/m.yml:2\nsamples\tNOPE\t1\t%s/s1.tsv:3\n", dir, dir);
    cr_assert_str_eq(list, want);
    free(list);
    /* strict: the model's unresolved gene fails at its file:line:col */
    snprintf(args, sizeof args, "--strict '%s'", p);
    cr_assert_eq(run(args, &out), 1, "%s", out);
    cr_assert(strstr(out, "m.yml:2:"), "%s", out);
    cr_assert(strstr(out, "reaction 'r1': unknown gene 'GHOST'"), "%s", out);
    free(out), free(p);
    /* tables with other labels than the first */
    snprintf(text, sizeof text, "%ssamples:\n  - {format: table, file: s1.tsv, categories: "
             "[split]}\n  - {format: table, file: s3.tsv}\n", head);
    p = pl_test_write(dir, "ms2.yaml", text);
    snprintf(want, sizeof want, "%s/s3.tsv:1: the labels and categories differ from those of "
             "the first sample table", dir);
    pl_test_run_expect(NULL, 1, want, "recipe check '%s'", p);
    free(p), free(u);
}

/* ------------------------------------------------------------ ontology */

Test(import_recipe, ontology_keys)
{
    pl_recipe *r = pl_test_recipe_ok("o.yaml", HEAD EDGE
                                     "ontology:\n"
                                     "  format: obo\n"
                                     "  file: go.obo.gz\n"
                                     "  annotations: /abs/gene_association.sgd.gz\n"
                                     "  namespaces: [biological_process, cellular_component]\n"
                                     "  relations: [is_a, part_of]\n"
                                     "  exclude_evidence: IEA\n"
                                     "  min_term_genes: 3\n");
    const pl_recipe_ontology *o = &r->ontology;
    char want[4200];
    snprintf(want, sizeof want, "%s/go.obo.gz", dir);
    cr_assert_str_eq(o->format, "obo");
    cr_assert_eq(o->line, 7);
    cr_assert_str_eq(o->file, want);
    cr_assert_str_eq(o->annotations, "/abs/gene_association.sgd.gz");
    cr_assert_str_eq(o->opts.namespaces, "biological_process,cellular_component");
    cr_assert_str_eq(o->opts.relations, "is_a,part_of");
    cr_assert_null(o->opts.evidence);
    cr_assert_str_eq(o->opts.exclude_evidence, "IEA");
    cr_assert_eq(o->opts.min_term_genes, 3);
    pl__recipe_free(r);
    r = pl_test_recipe_ok("o2.yaml", HEAD EDGE "ontology: {format: dcell, file: dc.txt}\n");
    cr_assert_str_eq(r->ontology.format, "dcell");
    cr_assert_null(r->ontology.annotations);
    cr_assert_eq(r->ontology.opts.min_term_genes, 0);
    pl__recipe_free(r);
    r = pl_test_recipe_ok("o3.yaml", HEAD EDGE);
    cr_assert_null(r->ontology.format);
    pl__recipe_free(r);
}

#define OBO "ontology: {format: obo, file: o, annotations: a, "

Test(import_recipe, bad_ontology)
{
    expect_bad(HEAD EDGE OBO "namespace: [x]}\n", 6, 50,
               "unknown key 'namespace' in 'ontology' (format, file, annotations");
    expect_bad(HEAD EDGE "ontology: {format: dcell, file: o, annotations: a}\n", 6, 36,
               "key 'annotations' does not apply to format 'dcell' (format, file, "
               "min_term_genes)");
    expect_bad(HEAD EDGE "ontology: {format: dcell, file: o, evidence: [IDA]}\n", 6, 36,
               "key 'evidence' does not apply to format 'dcell'");
    expect_bad(HEAD EDGE "ontology: {format: obo, file: o}\n", 6, 11,
               "'ontology' of format 'obo' without 'annotations' (a GAF file)");
    expect_bad(HEAD EDGE OBO "evidence: [IDA], exclude_evidence: [IEA]}\n", 6, 11,
               "'ontology': give 'evidence' or 'exclude_evidence', not both");
    expect_bad(HEAD EDGE "ontology: {format: owl, file: o}\n", 6, 20,
               "unknown ontology format 'owl' (obo or dcell)");
    expect_bad(HEAD EDGE "ontology: {file: o}\n", 6, 11,
               "'ontology' without 'format' (obo or dcell)");
    expect_bad(HEAD EDGE "ontology: {format: dcell}\n", 6, 11, "'ontology' without 'file'");
    expect_bad(HEAD EDGE "ontology: [obo]\n", 6, 11,
               "'ontology' must be a mapping of keys to values");
    expect_bad(HEAD EDGE OBO "min_term_genes: -1}\n", 6, 66,
               "'min_term_genes' must be a non-negative integer, not '-1'");
    expect_bad(HEAD EDGE OBO "min_term_genes: 4294967296}\n", 6, 66,
               "'min_term_genes' is larger than 4294967295");
    expect_bad(HEAD EDGE OBO "namespaces: []}\n", 6, 62, "'namespaces' is an empty list");
    expect_bad(HEAD EDGE OBO "relations: [is_a, 'part_of,x']}\n", 6, 68,
               "'relations': 'part_of,x' is not a name");
    expect_bad(HEAD EDGE OBO "evidence: [{IDA: 1}]}\n", 6, 61, "'evidence' must be a single value");
    expect_bad(HEAD EDGE OBO "file: b}\n", 6, 50, "key 'file' given twice in 'ontology'");
}

/* A small GO-like OBO and GAF: names resolve through the alias table (TFC3,
 * VPS8), a synonym in column 11 (yal003w) and not at all (NOPE). */
static void write_go(void)
{
    free(pl_test_write(dir, "go.obo", "format-version: 1.2\n\n"
                       "[Term]\nid: GO:0000001\nnamespace: biological_process\n\n"
                       "[Term]\nid: GO:0000002\nnamespace: biological_process\n"
                       "is_a: GO:0000001 ! root\n\n"
                       "[Term]\nid: GO:0000003\nnamespace: biological_process\n"
                       "relationship: part_of GO:0000001\n"));
    const char *row = "SGD\t%s\t%s\t\t%s\tPMID:1\tIDA\t\tP\tname\t%s\tgene\ttaxon:4932\t"
                      "20111224\tSGD\t\t\n";
    char gaf[2048];
    int n = snprintf(gaf, sizeof gaf, "!gaf-version: 2.0\n");
    n += snprintf(gaf + n, sizeof gaf - (size_t)n, row, "S1", "TFC3", "GO:0000002", "");
    n += snprintf(gaf + n, sizeof gaf - (size_t)n, row, "S2", "VPS8", "GO:0000003", "");
    n += snprintf(gaf + n, sizeof gaf - (size_t)n, row, "S3", "GHOST", "GO:0000002",
                  "G1|yal003w");
    snprintf(gaf + n, sizeof gaf - (size_t)n, row, "S4", "NOPE", "GO:0000003", "");
    free(pl_test_write(dir, "go.gaf", gaf));
    free(pl_test_write(dir, "reg1.tsv", "TFC3;VPS8\n"));
    free(pl_test_write(dir, "dc.txt", "GO:1\tGO:2\tdefault\nGO:2\tTFC3\tgene\n"
                       "GO:1\tNOPE2\tgene\n"));
}

Test(import_recipe, check_reports_ontology)
{
    write_go();
    const char *head = ALIASED "  - {name: regulatory, format: yeastract, file: reg1.tsv}\n";
    char text[2048], args[8192], want[8192], *out;
    snprintf(text, sizeof text, "%sontology: {format: obo, file: go.obo, annotations: go.gaf, "
             "relations: [is_a, part_of]}\n", head);
    char *p = pl_test_write(dir, "go.yaml", text);
    char *u = pl_test_path(dir, "unresolved.tsv");
    snprintf(args, sizeof args, "--unresolved '%s' '%s'", u, p);
    cr_assert_eq(run(args, &out), 0, "%s", out);
    snprintf(want, sizeof want, "ontology format=obo terms=3 annotations=3 strata=2 rows=4 "
             "unresolved=1 unresolved_names=1 file=%s/go.obo annotation_file=%s/go.gaf\n", dir,
             dir);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert(strstr(out, "total sources=1 kept=1 unresolved=1\n"), "%s", out);
    free(out);
    size_t len;
    char *list = pl_test_read_file(u, &len);
    snprintf(want, sizeof want, "source\tname\tcount\tfirst_seen\nontology\tNOPE\t1\t"
             "%s/go.gaf:5\n", dir);
    cr_assert_str_eq(list, want);
    free(list);
    /* strict: the annotation's gene at its file:line:col (column 3) */
    snprintf(want, sizeof want, "pertload recipe: %s/go.gaf:5:8: unresolved gene name 'NOPE' "
             "(strict mode)", dir);
    pl_test_run_expect(NULL, 1, want, "recipe check --strict '%s'", p);
    free(p);
    /* the three-column file: its genes through the aliases too */
    snprintf(text, sizeof text, "%sontology: {format: dcell, file: dc.txt}\n", head);
    p = pl_test_write(dir, "dc.yaml", text);
    snprintf(want, sizeof want, "ontology format=dcell terms=2 annotations=1 strata=2 rows=2 "
             "unresolved=1 unresolved_names=1 file=%s/dc.txt\n", dir);
    pl_test_run_expect(NULL, 0, want, "recipe check --unresolved '%s' '%s'", u, p);
    list = pl_test_read_file(u, &len);
    snprintf(want, sizeof want, "ontology\tNOPE2\t1\t%s/dc.txt:3\n", dir);
    cr_assert(strstr(list, want), "%s", list);
    free(list);
    snprintf(want, sizeof want, "%s/dc.txt:3:6: unresolved gene name 'NOPE2' (strict mode)",
             dir);
    pl_test_run_expect(NULL, 1, want, "recipe check --strict '%s'", p);
    free(p), free(u);
}

/* A recipe nested a million levels deep ran past a minute in libyaml: the
 * event stream is checked before the tree is built. */
Test(import_recipe, nesting_limit)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, HEAD "  - {name: a, format: yeastract, file: x}\nx: ");
    for (int i = 0; i < 1000000; i++)
        pl_test_tprintf(&t, "[");
    /* the top mapping is level 1: the 64th '[' is the 65th level */
    expect_bad(t.s, 6, 4 + PL_YAML_MAX_DEPTH - 1, "YAML collections nested deeper than 64");
    free(t.s);
}

/* max_line and max_text set the line source's limits unless the command
 * line gave them. */
Test(import_recipe, limits)
{
    pl_recipe *r = pl_test_recipe_ok("r.yaml", HEAD "  - {name: a, format: yeastract, file: x}\n"
                                                "max_line: 4M\nmax_text: 1073741824\n");
    cr_assert_eq(r->max_line, 4u << 20);
    cr_assert_eq(r->max_text, 1u << 30);
    uint64_t line, text;
    pl__src_limits(&line, &text);
    cr_assert_eq(line, PL_SRC_MAX_LINE_DEFAULT, "loading alone changes nothing");
    pl__recipe_limits(r, 0, 0);
    pl__src_limits(&line, &text);
    cr_assert_eq(line, 4u << 20);
    cr_assert_eq(text, 1u << 30);
    pl__recipe_limits(r, 8u << 20, 0); /* the command line's wins */
    pl__src_limits(&line, &text);
    cr_assert_eq(line, 8u << 20);
    pl__recipe_free(r);
    expect_bad(HEAD "  - {name: a, format: yeastract, file: x}\nmax_line: lots\n", 6, 11,
               "max_line wants a number of bytes (1048576, 4M, 1G), got 'lots'");
}

/* Malformed aliases, edge sources, documents and parts: the node each error
 * names, at recipe:line:col. */
#define GA "version: 1\ngenes:\n  file: genes.txt\n  aliases: "
#define ED "edges:\n" EDGE

Test(import_recipe, more_bad_recipes)
{
    expect_bad(GA "[{file: a, format: csv}]\n" ED, 4, 31,
               "unknown alias table format 'csv' (table, sgd_features or ");
    expect_bad(GA "[{file: a, format: string_aliases, sources: x}]\n" ED, 4, 56,
               "'sources' must be a list of alias sources");
    expect_bad(GA "[{file: a, format: table, gene_column: 0}]\n" ED, 4, 51,
               "'gene_column' must be a column number 1..64");
    expect_bad(GA "[{file: a, format: table, colour: red}]\n" ED, 4, 38,
               "unknown key 'colour' in an alias table (file, format, header, sep, ");
    expect_bad(GA "x\n" ED, 4, 12,
               "'aliases' must be a list of alias tables");
    expect_bad(GA "[{format: table}]\n" ED, 4, 13,
               "an alias table without 'file'");
    expect_bad(GA "[{file: a, format: table, gene_column: 2, alias_column: 2}]\n" ED, 4, 13,
               "gene_column and alias_column are the same column");
    expect_bad(HEAD "  - {name: a, format: biogrid, file: x, systems: Two-hybrid}\n", 5, 50,
               "'systems' must be a list");
    expect_bad(HEAD "  - {format: yeastract, file: x}\n", 5, 5,
               "an edge source without 'name'");
    expect_bad("version: 1\ngenes:\n  file: genes.txt\nedges: x\n", 4, 8,
               "'edges' must be a list of edge sources");
    expect_bad("version: 1\ngenes:\n  file: genes.txt\n", 1, 1,
               "the recipe has no 'edges' (they may be left out, or empty, only with a "
               "'metabolism' or an 'ontology')");
    expect_bad("version: 1\ngenes:\n  file: genes.txt\nedges: []\n", 1, 1,
               "the recipe has no 'edges'");
    expect_bad(HEAD "  - {name: a, format: delim, file: x, sep: ab}\n", 5, 44,
               "'sep' must be one character, \"tab\" or \"space\"");
    expect_bad(HEAD "  - x\n", 5, 5,
               "an edge source must be a mapping of keys to values");
    expect_bad(HEAD "  - {[n]: a, format: yeastract, file: x}\n", 5, 6,
               "a key of an edge source is not a plain name");
    expect_bad(HEAD "  - {name: a, format: yeastract, file: \"x\\0y\"}\n", 5, 40,
               "'file' holds a NUL byte");
    expect_bad(HEAD EDGE "metabolism: {format: tsv, rules: r, colour: x}\n", 6, 37,
               "unknown key 'colour' in 'metabolism' (format, reactions, gpr, rules, ");
    expect_bad(HEAD EDGE "metabolism: {format: tsv, rules: r, reaction_rule: all}\n", 6, 52,
               "'reaction_rule' is any or gpr, not 'all'");
    expect_bad(HEAD EDGE "samples: {format: table, file: s, colour: x}\n", 6, 35,
               "unknown key 'colour' in a sample table (format, file, sep, header, ");
    expect_bad(HEAD EDGE "samples: [x]\n", 6, 11,
               "a sample table must be a mapping of keys to values");
}
