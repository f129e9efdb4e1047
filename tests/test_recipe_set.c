/* A recipe sample part's constant categories (`set: {COLUMN: VALUE}`):
 * DCell's data files, one per split, in their published layout (`2 <gene>
 * <gene> <score>` rows, space-separated), read by `format: dcell_samples` and by
 * the table it stands for, built with `set: {split: ...}` per file: the rows of
 * each level are those of its file (recomputed here from the files written),
 * levels in order of first appearance, the score the only label; sga tables
 * take it too; bad `set` values are recipe errors at recipe:line:col. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "importutil.h"
#include "preprocess/import/recipe/recipe.h"

TestSuite(recipe_set, .init = pl_test_dir_init, .fini = pl_test_dir_fini);

static int build(const char *recipe, const char *out, char **msg)
{
    char args[4096];
    snprintf(args, sizeof args, "build --recipe '%s' -o '%s' --quiet", recipe, out);
    return pl_test_run_in(NULL, args, msg);
}

static const char *const split[3] = {"train", "val", "test"};

Test(recipe_set, dcell_files_split_by_file)
{
    free(pl_test_write(dir, "genes.txt", "G0\nG1\nG2\nG3\nG4\nG5\nG6\nG7\n"));
    free(pl_test_write(dir, "e.txt", "G0 G1\n"));
    for (int it = 0; it < 4; it++) {
        rng = 77 + (uint64_t)it;
        int n[3], total = 0;
        static float score[3][100];
        /* file order: test, train, val (the levels follow the recipe order) */
        int order[3] = {2, 0, 1};
        for (int k = 0; k < 3; k++) {
            n[k] = 1 + (int)rnd(60);
            pl_test_text t = {0};
            for (int i = 0; i < n[k]; i++) {
                int a = (int)rnd(8), b = (a + 1 + (int)rnd(7)) % 8;
                score[k][i] = (float)((int)rnd(2000) - 1000) / 1000.0f;
                /* as published: space-separated (a trailing blank on some) */
                pl_test_tprintf(&t, "2 G%d G%d %g%s\n", a, b, (double)score[k][i],
                                i % 5 ? "" : " ");
            }
            char name[32];
            snprintf(name, sizeof name, "%s_%d.txt", split[k], it);
            free(pl_test_put_text(dir, name, &t));
            total += n[k];
        }
        pl_test_text r = {0};
        pl_test_tprintf(&r, "version: 1\ngenes: {file: genes.txt}\nedges:\n"
                            "  - {name: e, format: delim, file: e.txt, sep: space, source: 1, "
                            "target: 2}\nsamples:\n");
        for (int j = 0; j < 3; j++) {
            int k = order[j];
            /* format dcell_samples, or the table it stands for */
            if ((j + it) % 2)
                pl_test_tprintf(&r, "  - {format: dcell_samples, file: %s_%d.txt, "
                                    "set: {split: %s}}\n", split[k], it, split[k]);
            else
                pl_test_tprintf(&r, "  - format: table\n    file: %s_%d.txt\n    header: false\n"
                                    "    sep: space\n    gene_columns: [2, 3]\n    labels: [4]\n"
                                    "    set: {split: %s}\n", split[k], it, split[k]);
        }
        char *rp = pl_test_put_text(dir, "r.yaml", &r);
        char *out = pl_test_path(dir, "db");
        pl_test_rmtree(out);
        pl_test_run_expect(NULL, 0, NULL, "build --recipe '%s' -o '%s' --quiet", rp, out);
        pl_db *db;
        pl_err err = {0};
        cr_assert_eq(pl_db_open(out, &db, &err), 0, "%s", err.msg);
        const pl_db_info *info = pl_db_info_get(db);
        cr_assert_eq(info->n_samples, (uint64_t)total);
        cr_assert_str_eq(info->categories, "split\ttest\ttrain\tval\n");
        cr_assert_eq(info->n_labels, 1, "the constant category is no label");
        /* the rows of each level: those of its file, in file order */
        uint64_t first = 0;
        for (int j = 0; j < 3; j++) {
            int k = order[j];
            static uint32_t rows[300];
            int64_t got = pl_db_level_rows(db, "split", split[k], rows, 300, &err);
            cr_assert_eq(got, n[k], "%s: %s", split[k], err.msg);
            for (int i = 0; i < n[k]; i++) {
                cr_assert_eq(rows[i], first + (uint64_t)i);
                pl_sample s;
                cr_assert_eq(pl_db_sample(db, rows[i], &s, &err), 0, "%s", err.msg);
                cr_assert_eq(s.n_genes, 2);
                cr_assert_str_eq(info->label_names[0], "column4");
                cr_assert_eq(s.labels[0], score[k][i], "%s row %d", split[k], i);
            }
            first += (uint64_t)n[k];
        }
        pl_db_close(db);
        free(rp), free(out);
    }
}

static void bad(const char *part, unsigned long line, unsigned long col, const char *why)
{
    char text[2048];
    snprintf(text, sizeof text, "version: 1\ngenes: {file: g.txt}\nedges:\n"
             "  - {name: e, format: yeastract, file: e.txt}\nsamples:\n%s", part);
    pl_test_recipe_fails("bad.yaml", text, line, col, why);
}

Test(recipe_set, bad_set)
{
    bad("  - {format: table, file: s, set: split}\n", 6, 35, "'set' must be a mapping");
    bad("  - {format: table, file: s, set: {split: ''}}\n", 6, 43,
        "'set' value of 'split' is empty");
    bad("  - {format: table, file: s, categories: [split], set: {split: a}}\n", 6, 5,
        "sample table: 'set' names 'split', a category column of the file");
    bad("  - {format: sga, file: s, set: {arraytype_temp: a}}\n", 6, 5,
        "'set' names the sga table's own category 'arraytype_temp'");
    bad("  - {format: table, file: s, set: {a: \"x\\ty\"}}\n", 6, 39,
        "'set' value of 'a' holds a tab or a line break");
    bad("  - {format: table, file: s, set: {a: \"x\\ny\"}}\n", 6, 39,
        "'set' value of 'a' holds a tab or a line break");
    bad("  - {format: table, file: s, set: {'': x}}\n", 6, 36, "'set' has an empty column name");
    bad("  - {format: table, file: s, set: {\"a\\tb\": x}}\n", 6, 36,
        "'set' column name holds a tab or a line break");
    bad("  - {format: table, file: s, set: {split: a, \"\\r\": x}}\n", 6, 46,
        "'set' column name holds a tab or a line break");
}

/* An sga table with a constant category: after its own arraytype_temp. */
Test(recipe_set, sga_with_set)
{
    free(pl_test_write(dir, "g.txt", "G0\n"));
    pl_recipe *r = pl_test_recipe_ok(
        "r.yaml", "version: 1\ngenes: {file: g.txt}\nedges:\n"
                  "  - {name: e, format: yeastract, file: e.txt}\nsamples:\n"
                  "  - {format: sga, file: s.txt, set: {screen: nxn, batch: '1'}}\n");
    cr_assert_eq(r->tables[0].n_set, 2);
    cr_assert_str_eq(r->tables[0].set_names[1], "batch");
    cr_assert_str_eq(r->tables[0].set_values[1], "1");
    pl__recipe_free(r);
}

/* format dcell_samples fixes its layout: only file and set apply. */
Test(recipe_set, dcell_samples_keys)
{
    bad("  - {format: dcell_samples, file: s, sep: tab}\n", 6, 38,
        "key 'sep' does not apply to format 'dcell_samples' (format, file, set, "
        "min_resolved, allow_empty)");
    bad("  - {format: dcell_samples, set: {split: train}}\n", 6, 5,
        "a sample table without 'file'");
    bad("  - {format: dcells, file: s}\n", 6, 14,
        "unknown sample format 'dcells' (table, sga or dcell_samples)");
}

/* A sample table resolves as an edge source must: one that keeps no sample
 * (standard names against a list of systematic ones, no alias table) or
 * resolves on too small a share is an error naming the file and its most
 * frequent unresolved names; min_resolved and allow_empty accept it. */
Test(recipe_set, samples_that_do_not_resolve)
{
    free(pl_test_write(dir, "genes.txt", "YAL001C\nYBL002W\nYCR003C\nYDR004W\n"));
    free(pl_test_write(dir, "e.txt", "YAL001C YBL002W\n"));
    /* standard names: nothing resolves */
    free(pl_test_write(dir, "std.txt", "2 TFC3 VPS8 0.1\n2 TFC3 ACT1 0.2\n2 EFB1 TFC3 0.3\n"));
    /* 1 row of 4 resolves (share 0.25) */
    free(pl_test_write(dir, "few.txt", "2 YAL001C YBL002W 0.1\n2 TFC3 YBL002W 0.2\n"
                                       "2 YAL001C VPS8 0.3\n2 TFC3 VPS8 0.4\n"));
    const char *head = "version: 1\ngenes: {file: genes.txt}\nedges:\n"
                       "  - {name: e, format: delim, file: e.txt, sep: space, source: 1, "
                       "target: 2}\nsamples:\n";
    struct {
        const char *part, *want;
        int rc;
    } cases[] = {
        {"  - {format: dcell_samples, file: std.txt}\n",
         "std.txt: the sample table keeps no sample: 3 rows, 3 with an unresolved gene name; "
         "most frequent unresolved names: 'TFC3' (3), 'VPS8' (1), 'ACT1' (1), 'EFB1' (1) (an "
         "alias table for them, or allow_empty: true, accepts it)", 1},
        {"  - {format: table, file: few.txt, header: false, sep: space, gene_columns: [2, 3],"
         " labels: [4]}\n",
         "few.txt: only 1 of the sample table's 4 rows resolve (share 0.250, under "
         "min_resolved 0.5); most frequent unresolved names: 'TFC3' (2), 'VPS8' (2)", 1},
        {"  - {format: dcell_samples, file: few.txt, min_resolved: 0.25}\n", NULL, 0},
        {"  - {format: dcell_samples, file: std.txt, allow_empty: true}\n", NULL, 0},
        {"  - {format: dcell_samples, file: std.txt, min_resolved: 2}\n",
         "'min_resolved' must be a share 0..1", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024], *msg;
        snprintf(text, sizeof text, "%s%s", head, cases[i].part);
        char *rp = pl_test_write(dir, "r.yaml", text), *out = pl_test_path(dir, "db");
        pl_test_rmtree(out);
        int rc = build(rp, out, &msg);
        cr_assert_eq(rc != 0, cases[i].rc, "case %zu: %s", i, msg);
        if (cases[i].want)
            cr_assert(strstr(msg, cases[i].want), "case %zu: %s", i, msg);
        struct stat sb;
        cr_assert_eq(lstat(out, &sb) == 0, !cases[i].rc, "case %zu: database", i);
        free(msg);
        /* recipe check says the same */
        char args[2048];
        snprintf(args, sizeof args, "recipe check '%s'", rp);
        rc = pl_test_run_in(NULL, args, &msg);
        cr_assert_eq(rc != 0, cases[i].rc, "case %zu: %s", i, msg);
        if (cases[i].want)
            cr_assert(strstr(msg, cases[i].want), "case %zu: %s", i, msg);
        free(msg), free(rp), free(out);
    }
}

/* header: false forgotten on a headerless table: a number in the header, or
 * a gene column's header field that is a gene, stops the build suggesting
 * header: false (the first row used to be dropped, a label named after
 * its score); header: false over a file with a header points at
 * header: true, not at 'categories'. */
Test(recipe_set, header_that_is_data)
{
    free(pl_test_write(dir, "genes.txt", "YAL001C\nYBL002W\nYCR003C\n"));
    free(pl_test_write(dir, "e.txt", "YAL001C YBL002W\n"));
    free(pl_test_write(dir, "rows.tsv", "2\tYAL001C\tYBL002W\t0.0447\n"
                                        "2\tYCR003C\tYBL002W\t0.1\n"));
    free(pl_test_write(dir, "named.tsv", "n\tgene1\tgene2\tscore\n2\tYAL001C\tYBL002W\t0.1\n"));
    free(pl_test_write(dir, "genes_first.tsv", "x\tYAL001C\tYBL002W\ty\n"
                                               "2\tYCR003C\tYBL002W\t0.1\n"));
    const char *head = "version: 1\ngenes: {file: genes.txt}\nedges:\n"
                       "  - {name: e, format: delim, file: e.txt, sep: space, source: 1, "
                       "target: 2}\nsamples:\n";
    struct {
        const char *part, *want;
    } cases[] = {
        {"  - {format: table, file: rows.tsv, gene_columns: [2, 3], labels: [4]}\n",
         "rows.tsv:1:1: header field '2' is a number; the first row looks like data: did you "
         "mean header: false?"},
        {"  - {format: table, file: genes_first.tsv, gene_columns: [2, 3], labels: [4]}\n",
         "genes_first.tsv:1:3: header field 'YAL001C' of a gene column is a gene of the list; "
         "the first row looks like data: did you mean header: false?"},
        {"  - {format: table, file: named.tsv, header: false, gene_columns: [2, 3], "
         "labels: [4]}\n",
         "named.tsv:1:15: bad number 'score' in label column 'column4' of the first row, read "
         "as data (header: false): did you mean header: true?"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024], *msg;
        snprintf(text, sizeof text, "%s%s", head, cases[i].part);
        char *rp = pl_test_write(dir, "r.yaml", text), *out = pl_test_path(dir, "db");
        pl_test_rmtree(out);
        cr_assert_neq(build(rp, out, &msg), 0, "case %zu: %s", i, msg);
        cr_assert(strstr(msg, cases[i].want), "case %zu: %s", i, msg);
        free(msg), free(rp), free(out);
    }
    /* with the right header key each builds */
    const char *good[] = {
        "  - {format: table, file: rows.tsv, header: false, gene_columns: [2, 3], labels: [4]}\n",
        "  - {format: table, file: named.tsv, gene_columns: [gene1, gene2], labels: [score]}\n"};
    for (size_t i = 0; i < 2; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", head, good[i]);
        char *rp = pl_test_write(dir, "r.yaml", text), *out = pl_test_path(dir, "db");
        pl_test_rmtree(out);
        pl_test_run_expect(NULL, 0, NULL, "build --recipe '%s' -o '%s' --quiet", rp, out);
        free(rp), free(out);
    }
}
