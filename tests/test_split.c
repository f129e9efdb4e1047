/* The rows of a split (pl_db_level_rows, serve --split's subset): a database
 * built by `pertload build --recipe` from a sample table with a text `split`
 * column (stored as a category: codes and level names in the category
 * store, apart from the labels) gives, for each level, exactly the rows whose column holds it in
 * the input file, read back here line by line; unknown columns and levels,
 * and labels that are no category, are errors that name them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loader/io.h"
#include "loader/split.h"
#include "loader/subset.h"
#include "loader/table.h"
#include "testutil.h"

#define N_GENES 40
#define N_ROWS 2600 /* three sample-store blocks of 1024 rows */

static const char *const levels[] = {"train", "val", "test"};

/* In `d`: genes.txt, one edge file, and a table of N_ROWS rows (with a text
 * `split` column when `with_split`) plus, with it, one row naming an
 * unknown gene (dropped at build; its level "holdout" is kept). */
static void write_inputs(const char *d, int with_split)
{
    pl_test_text t = {0};
    for (int g = 0; g < N_GENES; g++)
        pl_test_tprintf(&t, "G%02d\n", g);
    free(pl_test_put_text(d, "genes.txt", &t));
    uint64_t st = 11;
    for (int e = 0; e < 60; e++) {
        int a = (int)pl_test_below(&st, N_GENES), b = (int)pl_test_below(&st, N_GENES);
        pl_test_tprintf(&t, "G%02d\tG%02d\n", a, b);
    }
    free(pl_test_put_text(d, "phys.tsv", &t));
    pl_test_tprintf(&t, with_split ? "genes,fitness,split\n" : "genes,fitness\n");
    for (int r = 0; r < N_ROWS; r++) {
        int a = (int)pl_test_below(&st, N_GENES), b = (int)pl_test_below(&st, N_GENES);
        pl_test_tprintf(&t, "G%02d;G%02d,%d", a, b, r % 7);
        if (with_split) { /* about 70/15/15; the levels first appear in this order */
            uint64_t x = pl_test_below(&st, 20);
            pl_test_tprintf(&t, ",%s", levels[r < 3 ? r : x < 14 ? 0 : x < 17 ? 1 : 2]);
        }
        pl_test_tprintf(&t, "\n");
        if (r == N_ROWS / 2 && with_split)
            pl_test_tprintf(&t, "NOPE,1,holdout\n");
    }
    free(pl_test_put_text(d, "s.csv", &t));
    pl_test_tprintf(&t, "version: 1\ngenes: {file: genes.txt}\nedges:\n"
                    "  - {name: physical, format: delim, file: phys.tsv, source: 1, target: 2}\n"
                    "samples: {format: table, file: s.csv, sep: ','%s}\n",
                    with_split ? ", categories: [split]" : "");
    free(pl_test_put_text(d, "recipe.yaml", &t));
}

/* Build dir/NAME from the inputs in dir/NAME-in and open it. */
static pl_db *build(const char *name, int with_split)
{
    char in[4200], out[4200], recipe[4300], msg[4096];
    snprintf(in, sizeof in, "%s/%s-in", dir, name);
    snprintf(out, sizeof out, "%s/%s", dir, name);
    snprintf(recipe, sizeof recipe, "%s/recipe.yaml", in);
    cr_assert_eq(mkdir(in, 0700), 0);
    write_inputs(in, with_split);
    char *argv[] = {"pertload", "build", "--recipe", recipe, "-o", out, "--quiet", NULL};
    cr_assert_eq(pl_test_run_cli(argv, msg, sizeof msg), 0, "%s", msg);
    pl_db *db;
    pl_err err = {0};
    cr_assert_eq(pl_db_open(out, &db, &err), 0, "%s", err.msg);
    return db;
}

/* The rows (kept rows, in order) whose split field in dir/NAME-in/s.csv is
 * `level`, read from the file; returns their count. */
static uint64_t rows_in_file(const char *name, const char *level, uint32_t *rows)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/%s-in/s.csv", dir, name);
    size_t len;
    char *text = pl_test_read_file(path, &len);
    uint64_t row = 0, n = 0;
    char *save = NULL;
    strtok_r(text, "\n", &save); /* the header */
    for (char *line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "NOPE,", 5))
            continue; /* dropped at build: not a row of the database */
        if (!strcmp(strrchr(line, ',') + 1, level))
            rows[n++] = (uint32_t)row;
        row++;
    }
    cr_assert_eq(row, N_ROWS);
    free(text);
    return n;
}

TestSuite(split, .init = pl_test_dir_init, .fini = pl_test_dir_fini);

Test(split, level_rows_are_the_rows_of_the_level_in_the_file)
{
    pl_db *db = build("db", 1);
    const pl_db_info *info = pl_db_info_get(db);
    cr_assert_eq(info->n_samples, N_ROWS);
    cr_assert_str_eq(info->categories, "split\ttrain\tval\ttest\tholdout\n");
    cr_assert_eq(info->n_categories, 1);
    uint32_t *got = malloc(N_ROWS * sizeof *got), *want = malloc(N_ROWS * sizeof *want);
    unsigned char *seen = calloc(N_ROWS, 1);
    pl_err err = {0};
    for (int l = 0; l < 3; l++) {
        uint64_t n = rows_in_file("db", levels[l], want);
        cr_assert_gt(n, 100, "%s: %llu rows", levels[l], (unsigned long long)n);
        memset(got, 0xff, N_ROWS * sizeof *got);
        int64_t m = pl_db_level_rows(db, "split", levels[l], got, N_ROWS, &err);
        cr_assert_eq(m, (int64_t)n, "%s: %lld rows, the file has %llu (%s)", levels[l],
                     (long long)m, (unsigned long long)n, err.msg);
        cr_assert(!memcmp(got, want, n * sizeof *got), "%s: other rows", levels[l]);
        for (uint64_t k = 0; k < n; k++) {
            cr_assert_eq(seen[got[k]], 0, "row %u in two levels", got[k]);
            seen[got[k]] = 1;
        }
        /* counting alone, and a short buffer: the count, the first rows */
        cr_assert_eq(pl_db_level_rows(db, "split", levels[l], NULL, 0, &err), m);
        memset(got, 0xff, N_ROWS * sizeof *got);
        cr_assert_eq(pl_db_level_rows(db, "split", levels[l], got, 5, &err), m);
        cr_assert(!memcmp(got, want, 5 * sizeof *got));
        cr_assert_eq(got[5], UINT32_MAX, "a row written past cap");
    }
    for (uint32_t r = 0; r < N_ROWS; r++) /* train, val and test cover every row */
        cr_assert_eq(seen[r], 1, "row %u in no level", r);
    /* a level only a dropped row held: no rows */
    cr_assert_eq(pl_db_level_rows(db, "split", "holdout", got, N_ROWS, &err), 0);
    free(got), free(want), free(seen);
    pl_db_close(db);
}

/* The category column is no label: the one label is `fitness`, and each
 * stored row's label is the fitness the file gives it. */
Test(split, labels_hold_no_category_column)
{
    pl_db *db = build("db", 1);
    const pl_db_info *info = pl_db_info_get(db);
    cr_assert_eq(info->n_labels, 1);
    cr_assert_str_eq(info->label_names[0], "fitness");
    char path[4300];
    snprintf(path, sizeof path, "%s/db-in/s.csv", dir);
    size_t len;
    char *text = pl_test_read_file(path, &len), *save = NULL;
    strtok_r(text, "\n", &save); /* the header */
    uint64_t row = 0;
    pl_err err = {0};
    for (char *line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "NOPE,", 5))
            continue;
        float want = strtof(strchr(line, ',') + 1, NULL);
        pl_sample smp;
        cr_assert_eq(pl_db_sample(db, row, &smp, &err), 0, "%s", err.msg);
        cr_assert_eq(smp.labels[0], want, "row %llu: label %g, the file %g",
                     (unsigned long long)row, smp.labels[0], want);
        row++;
    }
    cr_assert_eq(row, info->n_samples);
    free(text);
    pl_db_close(db);
}

Test(split, unknown_columns_levels_and_plain_labels_are_named)
{
    pl_db *db = build("db", 1);
    pl_err err = {0};
    cr_assert_eq(pl_db_level_rows(db, "split", "validation", NULL, 0, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "category column 'split' has no level 'validation' (levels: "
                              "'train', 'val', 'test', 'holdout')");
    cr_assert_eq(pl_db_level_rows(db, "fitness", "train", NULL, 0, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "label 'fitness' is not a category column (category columns: "
                              "'split')");
    cr_assert_eq(pl_db_level_rows(db, "fold", "train", NULL, 0, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "no category column 'fold' (category columns: 'split')");
    cr_assert_eq(pl_db_level_rows(db, "spli", "train", NULL, 0, &err), PL_EUSAGE);
    cr_assert_eq(pl_db_level_rows(db, "split", "trai", NULL, 0, &err), PL_EUSAGE);
    pl_db_close(db);
    db = build("plain", 0);
    cr_assert_eq(pl_db_level_rows(db, "fitness", "train", NULL, 0, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "label 'fitness' is not a category column (category columns: "
                              "the database has none)");
    cr_assert_eq(pl_db_level_rows(db, "split", "train", NULL, 0, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "no category column 'split' (category columns: the database "
                              "has none)");
    pl_db_close(db);
}

/* The level names as pl_db_info.categories holds them, read by
 * pl__level_find() alone: a column without levels, a last line without its
 * newline, and lists of names too long for a message (cut with "..."). */
Test(split, level_text_edge_cases)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, "fold\n");                 /* a column without levels */
    pl_test_tprintf(&t, "many");
    for (int i = 0; i < 300; i++)
        pl_test_tprintf(&t, "\tlevel-%04d", i);    /* 300 levels of 10 bytes */
    pl_test_tprintf(&t, "\n");
    for (int i = 0; i < 150; i++)
        pl_test_tprintf(&t, "column-%04d\tx\n", i); /* 150 more columns */
    pl_test_tprintf(&t, "last\ta\tb");             /* no newline at the end */
    pl_db_info info = {0};
    info.categories = t.s;
    pl__level lv;
    pl_err err = {0};

    cr_assert_eq(pl__level_find(&info, "last", "b", &lv, &err), 0, "%s", err.msg);
    cr_assert_eq(lv.column, 152);
    cr_assert_eq(lv.code, 1);
    cr_assert_eq(lv.n_levels, 2);
    cr_assert_eq(pl__level_find(&info, "many", "level-0299", &lv, &err), 0, "%s", err.msg);
    cr_assert_eq(lv.column, 1);
    cr_assert_eq(lv.code, 299);
    cr_assert_eq(lv.n_levels, 300);

    cr_assert_eq(pl__level_find(&info, "fold", "a", &lv, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "category column 'fold' has no level 'a' (levels: none)");

    /* the levels listed up to about 1 KiB, then "..." */
    cr_assert_eq(pl__level_find(&info, "many", "other", &lv, &err), PL_EUSAGE);
    const char *start = "category column 'many' has no level 'other' (levels: 'level-0000', "
                        "'level-0001', ";
    cr_assert(!strncmp(err.msg, start, strlen(start)), "%s", err.msg);
    size_t m = strlen(err.msg);
    cr_assert(m > 1000 && m < 1200, "%zu", m);
    cr_assert_str_eq(err.msg + m - 6, ", ...)");
    cr_assert(!strstr(err.msg, "level-0299"), "%s", err.msg);

    /* the columns likewise */
    cr_assert_eq(pl__level_find(&info, "none", "a", &lv, &err), PL_EUSAGE);
    cr_assert(!strncmp(err.msg, "no category column 'none' (category columns: 'fold', 'many', "
                                "'column-0000', ", 70), "%s", err.msg);
    m = strlen(err.msg);
    cr_assert_str_eq(err.msg + m - 6, ", ...)");
    cr_assert(!strstr(err.msg, "'last'"), "%s", err.msg);
    free(t.s);
}

/* serve --split's subset: "LEVEL" of the column `split`, or "COLUMN=LEVEL",
 * found in the metadata, then its rows in the category store. */
Test(split, subset_of_a_split_spec)
{
    pl_db *db = build("db", 1);
    const pl_db_info *info = pl_db_info_get(db);
    pl_graph *g;
    pl__table t;
    pl_err err = {0};
    cr_assert_eq(pl_graph_load(db, &g, &err), 0, "%s", err.msg);
    cr_assert_eq(pl__table_load(db, g, PL_IO_AUTO, &t, &err), 0, "%s", err.msg);
    uint32_t *want = malloc(N_ROWS * sizeof *want);
    pl__subset s;
    pl__split sp;
    const char *specs[] = {"val", "split=val"};
    uint64_t n = rows_in_file("db", "val", want);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(pl__split_find(&sp, info, specs[k], &err), 0, "%s", err.msg);
        cr_assert_str_eq(sp.column, "split");
        cr_assert_str_eq(sp.level, "val");
        cr_assert_eq(pl__subset_split(&s, &sp, db, &err), 0, "%s",
                     err.msg);
        cr_assert_eq(s.n, n);
        cr_assert(!memcmp(s.rows, want, n * sizeof *want));
        pl__subset_free(&s);
        pl__split_free(&sp);
    }
    cr_assert_eq(pl__split_find(&sp, info, "holdout", &err), 0, "%s", err.msg);
    cr_assert_eq(pl__subset_split(&s, &sp, db, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "--split holdout: no row of category column 'split' holds level "
                              "'holdout'");
    cr_assert_null(s.rows);
    pl__split_free(&sp);
    cr_assert_eq(pl__split_find(&sp, info, "fitness=3", &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "--split fitness=3: label 'fitness' is not a category column "
                              "(category columns: 'split')");
    pl__split_free(&sp);
    cr_assert_eq(pl__split_find(&sp, info, "split=", &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "--split split=: category column 'split' has no level '' "
                              "(levels: 'train', 'val', 'test', 'holdout')");
    pl__split_free(&sp);
    free(want);
    pl__table_free(&t);
    pl_graph_free(g);
    pl_db_close(db);
}

/* serve --rows: "A:B" is a range only with digits on both sides of the
 * colon; any other spec is the name of a .npy file. */
Test(split, rows_specs_that_are_no_range_name_files)
{
    pl__subset s;
    pl_err err = {0};
    cr_assert_eq(pl__subset_load(&s, "3:7", 100, &err), 0, "%s", err.msg);
    cr_assert_eq(s.n, 4);
    for (uint32_t k = 0; k < 4; k++)
        cr_assert_eq(s.rows[k], 3 + k);
    pl__subset_free(&s);
    cr_assert_eq(pl__subset_load(&s, "7:3", 100, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "--rows 7:3: a range A:B with A < B <= 100 (the database's "
                              "samples) is expected");
    cr_assert_null(s.rows);
    static const char *const files[] = {"5:", ":5", "99999999999999999999:30", "2:x"};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(pl__subset_load(&s, files[i], 100, &err), -ENOENT, "%s", files[i]);
        char want[96];
        snprintf(want, sizeof want, "%s: cannot open: %s", files[i], strerror(ENOENT));
        cr_assert_str_eq(err.msg, want);
        cr_assert_null(s.rows);
    }
}
