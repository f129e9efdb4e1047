/* The in-memory inputs of a build (preprocess/build_input.h): the same
 * genes, edges, metabolism and samples handed over in memory give the same
 * database, byte for byte, as the files; a provider's indices outside their
 * lists are refused and leave nothing behind. */
#include <criterion/criterion.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "preprocess/build_input.h"
#include "preprocess/ontology/store.h"
#include "preprocess/rules.h"
#include "testutil.h"

TestSuite(build_input, .init = pl_test_dir_init, .fini = pl_test_dir_fini);

static const char *gene_names[] = {"YAL001C", "YAL002W", "YAL003W", "YAL004W", "YAL005C"};
/* physical: YAL001C-YAL002W, YAL003W-YAL004W, YAL005C-YAL001C; regulatory:
 * YAL002W->YAL005C, YAL002W->YAL003W */
static const int32_t phys_src[] = {0, 2, 4}, phys_dst[] = {1, 3, 0};
static const int32_t reg_src[] = {1, 1}, reg_dst[] = {4, 2};
static const char *const reactions[] = {"r1", "r2"}, *const metabolites[] = {"m1", "m2", "m3"};
static const int32_t gpr_gene[] = {0, 1, 2}, gpr_rxn[] = {0, 0, 1};
static const int32_t rmr_rxn[] = {0, 0, 1}, rmr_met[] = {0, 1, 2};
static const float rmr_st[] = {-1.0f, 1.0f, 2.5f};

/* The sample rows of samples.tsv below. */
typedef struct rows {
    int i;
} rows;

static int next_row(void *ctx, pl__sample_row *r, pl_err *err)
{
    (void)err;
    static const int32_t g0[] = {0}, g1[] = {2, 4}, g2[] = {1};
    static const float l0[] = {0.5f, 1.0f}, l1[] = {-2.0f, NAN}, l2[] = {3.0f, 4.0f};
    static const uint32_t c0[] = {1}, c1[] = {0}, c2[] = {1};
    static const pl__sample_row all[] = {{10, g0, 1, l0, 0, c0}, {11, g1, 2, l1, 0, c1},
                                         {12, g2, 1, l2, 0, c2}};
    rows *s = ctx;
    if (s->i == 3)
        return 0;
    *r = all[s->i++];
    return 1;
}

static const char *const labels[] = {"fitness", "epsilon"};

static char *files_db(void)
{
    char *g = pl_test_write(dir, "genes.txt", "YAL001C\nYAL002W\nYAL003W\nYAL004W\nYAL005C\n");
    char *p = pl_test_write(dir, "phys.tsv", "YAL001C\tYAL002W\nYAL003W\tYAL004W\n"
                                             "YAL005C\tYAL001C\n");
    char *r = pl_test_write(dir, "reg.tsv", "YAL002W\tYAL005C\nYAL002W\tYAL003W\n");
    char *rx = pl_test_write(dir, "reactions.txt", "r1\nr2\n");
    char *gp = pl_test_write(dir, "gpr.tsv", "YAL001C\tr1\nYAL002W\tr1\nYAL003W\tr2\n");
    char *rm = pl_test_write(dir, "rmr.tsv", "r1\tm1\t-1\nr1\tm2\t1\nr2\tm3\t2.5\n");
    char *s = pl_test_write(dir, "samples.tsv", "genes\tid\tfitness\tepsilon\n"
                                                "YAL001C\t10\t0.5\t1\n"
                                                "YAL003W;YAL005C\t11\t-2\tNA\n"
                                                "YAL002W\t12\t3\t4\n");
    const char *names[] = {"physical", "regulatory"}, *files[] = {p, r};
    char *out = pl_test_path(dir, "from-files");
    pl_build_opts o = {.out = out, .genes = g, .n_types = 2, .type_names = names,
                       .type_files = files, .reactions = rx, .gpr = gp, .rmr = rm,
                       .samples = s, .params = "same"};
    pl_err err = {0};
    int rc = pl_build(&o, NULL, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    free(g), free(p), free(r), free(rx), free(gp), free(rm), free(s);
    return out;
}

static int memory_db_levels(const char *out, const pl__build_edges *edges, const char *levels,
                            pl_err *err)
{
    pl__build_metabolism m = {reactions, 2, metabolites, 3, gpr_gene, gpr_rxn, 3,
                              rmr_rxn, rmr_met, rmr_st, 3, NULL};
    rows st = {0};
    static const char *const cats[] = {"split"};
    pl__build_samples s = {2, labels, next_row, NULL, &st, levels, levels ? 1 : 0, cats};
    pl__build_input in = {.genes = gene_names, .n_genes = 5, .edges = edges, .n_types = 2,
                          .metabolism = &m, .samples = &s};
    pl_build_opts o = {.out = out, .params = "same"};
    return pl__build_run(&o, &in, NULL, err);
}

static int memory_db(const char *out, const pl__build_edges *edges, pl_err *err)
{
    return memory_db_levels(out, edges, NULL, err);
}

/* The category columns of a provider are stored apart from the labels and
 * read back; levels that do not match the names or the codes are refused. */
Test(build_input, category_levels)
{
    pl__build_edges e[2] = {{"physical", phys_src, phys_dst, 3},
                            {"regulatory", reg_src, reg_dst, 2}};
    char *out = pl_test_path(dir, "levels");
    const char *levels = "split\ttrain\tval\ttest\n";
    pl_err err = {0};
    cr_assert_eq(memory_db_levels(out, e, levels, &err), 0, "%s", err.msg);
    pl_db *db;
    cr_assert_eq(pl_db_open(out, &db, &err), 0, "%s", err.msg);
    const pl_db_info *info = pl_db_info_get(db);
    cr_assert_str_eq(info->categories, levels);
    cr_assert_eq(info->n_categories, 1);
    cr_assert_eq(info->n_labels, 2); /* fitness, epsilon: no split among them */
    uint32_t rows[3];
    cr_assert_eq(pl_db_level_rows(db, "split", "val", rows, 3, &err), 2, "%s", err.msg);
    cr_assert(rows[0] == 0 && rows[1] == 2);
    cr_assert_eq(pl_db_level_rows(db, "split", "train", rows, 3, &err), 1, "%s", err.msg);
    cr_assert_eq(rows[0], 1);
    cr_assert_eq(pl_db_level_rows(db, "split", "test", rows, 3, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_db_verify(db, &err), 0, "%s", err.msg);
    pl_db_close(db);
    const char *bad[][2] = {{"split\ttrain\n", "a row holds code 1, the column has 1 levels"},
                            {"fold\ttrain\tval\n", "levels of category column 'split' are"},
                            {"split\ttrain\t\n", "level 1 is empty"},
                            {"split\ttrain\ttrain\n", "level 'train' is listed twice"},
                            {"split\ta\tb\nx\ty\n", "levels given for more than"}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char *o = pl_test_path(dir, "bad-levels");
        cr_assert_eq(memory_db_levels(o, e, bad[k][0], &err), PL_EPARSE, "%zu", k);
        cr_assert(strstr(err.msg, bad[k][1]), "%zu: %s", k, err.msg);
        struct stat st;
        cr_assert_neq(stat(o, &st), 0, "a database left behind");
        free(o);
    }
    free(out);
}

/* The category store counts in the database fingerprint: the same inputs
 * built twice agree, other level names (same codes, same labels) do not. */
Test(build_input, fingerprint_covers_the_category_store)
{
    pl__build_edges e[2] = {{"physical", phys_src, phys_dst, 3},
                            {"regulatory", reg_src, reg_dst, 2}};
    const char *lv[3] = {"split\ttrain\tval\n", "split\ttrain\tval\n", "split\ttrain\ttest\n"};
    uint64_t fp[3];
    pl_err err = {0};
    for (int k = 0; k < 3; k++) {
        char name[16];
        snprintf(name, sizeof name, "fp%d", k);
        char *out = pl_test_path(dir, name);
        cr_assert_eq(memory_db_levels(out, e, lv[k], &err), 0, "%s", err.msg);
        pl_db *db;
        cr_assert_eq(pl_db_open(out, &db, &err), 0, "%s", err.msg);
        fp[k] = pl_db_info_get(db)->db_fingerprint;
        pl_db_close(db);
        free(out);
    }
    cr_assert_eq(fp[0], fp[1]);
    cr_assert_neq(fp[0], fp[2]);
}

static void same_file(const char *a, const char *b, const char *name)
{
    char *pa = pl_test_path(a, name), *pb = pl_test_path(b, name);
    size_t la, lb;
    char *da = pl_test_read_file(pa, &la), *db = pl_test_read_file(pb, &lb);
    cr_assert_eq(la, lb, "%s: %zu vs %zu bytes", name, la, lb);
    cr_assert(!memcmp(da, db, la), "%s differs", name);
    free(pa), free(pb), free(da), free(db);
}

Test(build_input, memory_equals_files_byte_for_byte)
{
    char *a = files_db(), *b = pl_test_path(dir, "from-memory");
    pl__build_edges e[2] = {{"physical", phys_src, phys_dst, 3},
                            {"regulatory", reg_src, reg_dst, 2}};
    pl_err err = {0};
    cr_assert_eq(memory_db(b, e, &err), 0, "%s", err.msg);
    same_file(a, b, "data.mdb");
    same_file(a, b, "samples.pls");
    pl_db *db;
    cr_assert_eq(pl_db_open(b, &db, &err), 0, "%s", err.msg);
    const pl_db_info *i = pl_db_info_get(db);
    cr_assert_eq(i->n_samples, 3);
    cr_assert_eq(i->n_gpr, 3);
    cr_assert_eq(i->n_rmr, 3);
    cr_assert_str_empty(i->recipe);
    pl_db_close(db);
    free(a), free(b);
}

Test(build_input, bad_indices_refused_nothing_left)
{
    static const int32_t bad_dst[] = {1, 5, 0};
    pl__build_edges e[2] = {{"physical", phys_src, bad_dst, 3},
                            {"regulatory", reg_src, reg_dst, 2}};
    char *out = pl_test_path(dir, "bad");
    pl_err err = {0};
    cr_assert_eq(memory_db(out, e, &err), PL_EPARSE);
    cr_assert(strstr(err.msg, "dst[1] = 5 is not a gene index (5 of them)"), "%s", err.msg);
    struct stat st;
    cr_assert_neq(lstat(out, &st), 0, "%s was left behind", out);
    glob_t g;
    char *pat = pl_test_path(dir, "bad*");
    cr_assert_eq(glob(pat, 0, NULL, &g), GLOB_NOMATCH, "a temporary directory was left");
    free(pat);
    free(out);
}

static int64_t resolve_gene(void *ctx, const char *name, size_t len)
{
    (void)ctx;
    for (int64_t g = 0; g < 5; g++)
        if (strlen(gene_names[g]) == len && !memcmp(gene_names[g], name, len))
            return g;
    return -1;
}

/* Rules handed over compiled (pl__ruleset_add, the importers' entry point)
 * give the database the rules file gives. */
Test(build_input, rules_in_memory_equal_rules_file)
{
    char *g = pl_test_write(dir, "genes.txt", "YAL001C\nYAL002W\nYAL003W\nYAL004W\nYAL005C\n");
    char *p = pl_test_write(dir, "phys.tsv", "YAL001C\tYAL002W\nYAL003W\tYAL004W\n"
                                             "YAL005C\tYAL001C\n");
    char *r = pl_test_write(dir, "reg.tsv", "YAL002W\tYAL005C\nYAL002W\tYAL003W\n");
    char *rx = pl_test_write(dir, "reactions.txt", "r1\nr2\n");
    char *ru = pl_test_write(dir, "rules.tsv", "r1\t(YAL001C and YAL002W) or YAL001C\n"
                                               "r2\tYAL003W\n");
    char *rm = pl_test_write(dir, "rmr.tsv", "r1\tm1\t-1\nr1\tm2\t1\nr2\tm3\t2.5\n");
    char *s = pl_test_write(dir, "samples.tsv", "genes\tid\tfitness\tepsilon\n"
                                                "YAL001C\t10\t0.5\t1\n"
                                                "YAL003W;YAL005C\t11\t-2\tNA\n"
                                                "YAL002W\t12\t3\t4\n");
    const char *names[] = {"physical", "regulatory"}, *files[] = {p, r};
    char *a = pl_test_path(dir, "rules-files"), *b = pl_test_path(dir, "rules-memory");
    pl_build_opts o = {.out = a, .genes = g, .n_types = 2, .type_names = names,
                       .type_files = files, .reactions = rx, .rules = ru, .rmr = rm,
                       .samples = s, .params = "same"};
    pl_err err = {0};
    cr_assert_eq(pl_build(&o, NULL, &err), 0, "%s", err.msg);

    pl__ruleset rs = {0};
    pl__rule rule = {0};
    const char *text[] = {"(YAL001C and YAL002W) or YAL001C", "YAL003W"};
    int32_t gg[8], gr[8];
    uint32_t ngpr = 0, col;
    char why[256];
    for (int32_t k = 0; k < 2; k++) {
        cr_assert_eq(pl__rule_compile(text[k], strlen(text[k]), 1, resolve_gene, NULL, &rule,
                                      &col, why, sizeof why), 0, "%s", why);
        cr_assert_eq(pl__ruleset_add(&rs, k, rule.code, rule.n), 0);
        for (uint32_t i = 0; i < rule.n_genes; i++) {
            gg[ngpr] = (int32_t)rule.genes[i];
            gr[ngpr++] = k;
        }
    }
    pl__build_edges e[2] = {{"physical", phys_src, phys_dst, 3},
                            {"regulatory", reg_src, reg_dst, 2}};
    pl__build_metabolism m = {reactions, 2, metabolites, 3, gg, gr, ngpr,
                              rmr_rxn, rmr_met, rmr_st, 3, &rs};
    rows st = {0};
    pl__build_samples sp = {2, labels, next_row, NULL, &st, NULL, 0, NULL};
    pl__build_input in = {.genes = gene_names, .n_genes = 5, .edges = e, .n_types = 2,
                          .metabolism = &m, .samples = &sp};
    pl_build_opts mo = {.out = b, .params = "same"};
    cr_assert_eq(pl__build_run(&mo, &in, NULL, &err), 0, "%s", err.msg);
    same_file(a, b, "data.mdb");
    same_file(a, b, "samples.pls");
    pl_db *db;
    cr_assert_eq(pl_db_open(b, &db, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_db_info_get(db)->n_rules, 2);
    cr_assert_eq(pl_db_info_get(db)->reaction_rule, PL_REACTION_GPR);
    pl_db_close(db);
    pl__rule_free(&rule);
    pl__ruleset_free(&rs);
    free(g), free(p), free(r), free(rx), free(ru), free(rm), free(s), free(a), free(b);
}

/* A built ontology handed over in memory gives the database the ontology
 * files give; one built over another number of genes is refused. */
Test(build_input, ontology_in_memory_equals_ontology_file)
{
    char *g = pl_test_write(dir, "genes.txt", "YAL001C\nYAL002W\nYAL003W\nYAL004W\nYAL005C\n");
    char *p = pl_test_write(dir, "phys.tsv", "YAL001C\tYAL002W\nYAL003W\tYAL004W\n"
                                             "YAL005C\tYAL001C\n");
    char *r = pl_test_write(dir, "reg.tsv", "YAL002W\tYAL005C\nYAL002W\tYAL003W\n");
    char *dc = pl_test_write(dir, "onto.txt", "T1\tT2\tdefault\nT1\tT3\tdefault\n"
                             "T2\tYAL001C\tgene\nT2\tYAL002W\tgene\nT3\tYAL003W\tgene\n"
                             "T3\tNOPE\tgene\nT1\tYAL005C\tgene\n");
    char *sm = pl_test_write(dir, "samples.tsv", "genes\tid\tfitness\tepsilon\n"
                                                 "YAL001C\t10\t0.5\t1\n"
                                                 "YAL003W;YAL005C\t11\t-2\tNA\n"
                                                 "YAL002W\t12\t3\t4\n");
    const char *names[] = {"physical", "regulatory"}, *files[] = {p, r};
    char *a = pl_test_path(dir, "onto-files"), *b = pl_test_path(dir, "onto-memory");
    pl_build_opts fo = {.out = a, .genes = g, .n_types = 2, .type_names = names,
                        .type_files = files, .samples = sm, .ontology_dcell = dc,
                        .params = "same"};
    pl_err err = {0};
    pl_build_stats st;
    cr_assert_eq(pl_build(&fo, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(st.unknown_term_genes, 1);
    pl_onto_input oi = {.dcell = dc, .resolve = resolve_gene};
    pl_onto on;
    pl_onto_stats os = {0};
    cr_assert_eq(pl__onto_read(&oi, 5, &on, &os, &err), 0, "%s", err.msg);
    cr_assert_eq(on.n_terms, 3);
    pl__build_edges e[2] = {{"physical", phys_src, phys_dst, 3},
                            {"regulatory", reg_src, reg_dst, 2}};
    rows rs = {0};
    pl__build_samples smp = {2, labels, next_row, NULL, &rs, NULL, 0, NULL};
    pl__build_input in = {.genes = gene_names, .n_genes = 5, .edges = e, .n_types = 2,
                          .samples = &smp, .ontology = &on,
                          .ontology_unknown = os.unknown_genes.total};
    pl_build_opts mo = {.out = b, .params = "same"};
    cr_assert_eq(pl__build_run(&mo, &in, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(st.unknown_term_genes, 1);
    same_file(a, b, "data.mdb");
    /* over another gene count: refused, nothing left */
    char *c = pl_test_path(dir, "onto-bad");
    in.n_genes = 4;
    rs = (rows){0};
    mo.out = c;
    cr_assert_eq(pl__build_run(&mo, &in, NULL, &err), PL_EPARSE);
    cr_assert(strstr(err.msg, "ontology: built over 5 genes, the gene list has 4"), "%s",
              err.msg);
    struct stat sb;
    cr_assert_neq(lstat(c, &sb), 0, "%s was left behind", c);
    pl__onto_free(&on);
    pl__onto_stats_free(&os);
    free(g), free(p), free(r), free(dc), free(sm), free(a), free(b), free(c);
}
