/* A recipe's tsv parts (metabolism: reactions, gpr, rmr; samples) read
 * through the line source like every other input: the same files gzip'd or
 * zstd'd (names unchanged: the first bytes decide) build the database of the
 * plain ones, compared through pl_db_info and the graph arrays. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "importutil.h"

TestSuite(recipe_codecs, .init = pl_test_dir_init, .fini = pl_test_dir_fini);

static const char *const files[][2] = {
    {"reactions.txt", "r1\nr2\n"},
    {"gpr.tsv", "g1\tr1\ng3\tr2\ng4\tr2\n"},
    {"rmr.tsv", "r1\tm1\t-1\nr2\tm2\t2\nr2\tm1\t0.5\n"},
    {"samples.tsv", "id\tgenes\tfitness\n10\tg1\t0.5\n11\tg2;g3\tNA\n12\tg4\t-3\n"},
};

static pl_db *build(const char *sub, int which, int codec)
{
    char *d = pl_test_path(dir, sub);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", d);
    cr_assert_eq(system(cmd), 0);
    free(pl_test_write(d, "genes.txt", "g1\ng2\ng3\ng4\n"));
    free(pl_test_write(d, "e.txt", "g1;g2\ng2;g3\n"));
    for (int k = 0; k < 4; k++)
        free(pl_test_write_codec(d, files[k][0], files[k][1], strlen(files[k][1]),
                                 k == which ? codec : PL_TEST_PLAIN));
    char *r = pl_test_write(d, "r.yaml", "version: 1\ngenes: {file: genes.txt}\nedges:\n"
                            "  - {name: reg, format: yeastract, file: e.txt}\n"
                            "metabolism: {format: tsv, reactions: reactions.txt, gpr: gpr.tsv, "
                            "rmr: rmr.tsv}\nsamples: {format: tsv, file: samples.tsv}\n");
    pl_test_run_expect(NULL, 0, NULL, "build --recipe '%s' -o '%s/db' --quiet", r, d);
    snprintf(cmd, sizeof cmd, "%s/db", d);
    pl_db *db;
    pl_err err;
    cr_assert_eq(pl_db_open(cmd, &db, &err), 0, "%s", err.msg);
    free(r), free(d);
    return db;
}

static void same(pl_db *a, pl_db *b, int which)
{
    const pl_db_info *x = pl_db_info_get(a), *y = pl_db_info_get(b);
    cr_assert_eq(x->n_reactions, y->n_reactions);
    cr_assert_eq(x->n_metabolites, y->n_metabolites);
    cr_assert_eq(x->n_gpr, y->n_gpr);
    cr_assert_eq(x->n_rmr, y->n_rmr);
    cr_assert_eq(x->n_samples, y->n_samples);
    cr_assert_eq(x->n_labels, y->n_labels);
    int arrays[] = {PL_ARRAY_GPR, PL_ARRAY_RMR, PL_ARRAY_RMR_STOICH};
    size_t bytes[] = {8 * x->n_gpr, 8 * x->n_rmr, 4 * x->n_rmr};
    for (int i = 0; i < 3; i++) {
        char p[256], q[256];
        pl_err err;
        cr_assert_eq(pl_db_graph_array(a, arrays[i], p, bytes[i], &err), (int64_t)bytes[i]);
        cr_assert_eq(pl_db_graph_array(b, arrays[i], q, bytes[i], &err), (int64_t)bytes[i]);
        cr_assert(!memcmp(p, q, bytes[i]), "file %d: array %d differs", which, arrays[i]);
    }
    for (uint64_t r = 0; r < x->n_samples; r++) {
        pl_sample s;
        pl_err err;
        cr_assert_eq(pl_db_sample(a, r, &s, &err), 0, "%s", err.msg);
        uint64_t id = s.id;
        float l = s.labels[0];
        cr_assert_eq(pl_db_sample(b, r, &s, &err), 0, "%s", err.msg);
        cr_assert_eq(id, s.id);
        cr_assert((l != l && s.labels[0] != s.labels[0]) || l == s.labels[0]);
    }
}

static void codec_case(int codec)
{
    pl_db *ref = build("ref", -1, PL_TEST_PLAIN);
    const pl_db_info *i = pl_db_info_get(ref);
    cr_assert_eq(i->n_reactions, 2);
    cr_assert_eq(i->n_gpr, 3);
    cr_assert_eq(i->n_rmr, 3);
    cr_assert_eq(i->n_samples, 3);
    for (int k = 0; k < 4; k++) {
        char sub[16];
        snprintf(sub, sizeof sub, "z%d", k);
        pl_db *db = build(sub, k, codec);
        same(db, ref, k);
        pl_db_close(db);
    }
    pl_db_close(ref);
}

Test(recipe_codecs, gzip_tsv_parts) { codec_case(PL_TEST_GZIP); }
Test(recipe_codecs, zstd_tsv_parts) { codec_case(PL_TEST_ZSTD); }
