/* Edge sources that resolve too little: `pertload recipe check` and `pertload
 * build --recipe` refuse a source that keeps no edge or whose rows resolve
 * under min_resolved (default 0.5), naming the source, its share and its ten
 * most frequent unresolved names (all recomputed here from the file written),
 * and leave no database; allow_empty: true and a lower min_resolved accept
 * it; a bad min_resolved is a recipe error at recipe:line:col. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "importutil.h"

static void setup(void)
{
    pl_test_dir_init();
    free(pl_test_write(dir, "genes.txt", "G0\nG1\nG2\nG3\nG4\nG5\nG6\nG7\nG8\nG9\n"));
    free(pl_test_write(dir, "samples.tsv", "genes\tfitness\nG0\t1\n"));
}

TestSuite(import_resolved, .init = setup, .fini = pl_test_dir_fini);

/* Run `pertload ARGS` in `dir`; stdout and stderr into *out (malloc'd).
 * @return the exit status. */
/* `pertload ARGS` in the test's folder. */
static int run(const char *args, char **out)
{
    return pl_test_run_in(dir, args, out);
}

enum { NX = 14 }; /* unknown names X0..X13 */

/* The model of the edge file: per row its two names (gene g < 10, or
 * unknown 100 + x). */
typedef struct edges {
    int a[400], b[400], n;
} edges;

/* One name: a gene with probability p_known/100, else an unknown one
 * (skewed, so that counts differ). */
static int pick(int p_known)
{
    if ((int)rnd(100) < p_known)
        return (int)rnd(10);
    uint32_t x = rnd(NX);
    return 100 + (int)(rnd(2) ? x : x / 3);
}

static void write_edges(edges *e, int n, int p_known)
{
    pl_test_text t = {0};
    e->n = n;
    for (int i = 0; i < n; i++) {
        e->a[i] = pick(p_known);
        e->b[i] = pick(p_known);
        pl_test_tprintf(&t, "%s%d\t%s%d\t%d\n", e->a[i] < 100 ? "G" : "X",
                        e->a[i] % 100, e->b[i] < 100 ? "G" : "X", e->b[i] % 100, i % 10);
    }
    free(pl_test_put_text(dir, "edges.tsv", &t));
}

/* The share of rows whose two names resolve, and the expected message part
 * "'X3' (7), 'X1' (5), ..." (ten most frequent, ties in first-seen order). */
static double expected(const edges *e, char *names, size_t cap)
{
    int count[NX] = {0}, first[NX], seen = 0, ok = 0;
    for (int x = 0; x < NX; x++)
        first[x] = -1;
    for (int i = 0; i < e->n; i++) {
        ok += e->a[i] < 100 && e->b[i] < 100;
        int v[2] = {e->a[i], e->b[i]};
        for (int k = 0; k < 2; k++)
            if (v[k] >= 100) {
                int x = v[k] - 100;
                if (first[x] < 0)
                    first[x] = seen++;
                count[x]++;
            }
    }
    size_t h = 0;
    names[0] = 0;
    int used[NX] = {0};
    for (int j = 0; j < 10; j++) {
        int best = -1;
        for (int x = 0; x < NX; x++)
            if (count[x] && !used[x] &&
                (best < 0 || count[x] > count[best] ||
                 (count[x] == count[best] && first[x] < first[best])))
                best = x;
        if (best < 0)
            break;
        used[best] = 1;
        h += (size_t)snprintf(names + h, cap - h, "%s'X%d' (%d)", j ? ", " : "", best,
                              count[best]);
    }
    return (double)ok / e->n;
}

static void write_recipe(const char *extra)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, "version: 1\ngenes:\n  file: genes.txt\nedges:\n"
                        "  - name: phys\n    format: delim\n    file: edges.tsv\n"
                        "    source: 1\n    target: 2\n    score: 3\n%s"
                        "samples:\n  format: tsv\n  file: samples.tsv\n", extra);
    free(pl_test_put_text(dir, "r.yaml", &t));
}

Test(import_resolved, low_share_refused_by_check_and_build)
{
    for (int it = 0; it < 6; it++) {
        rng = 40 + (uint64_t)it;
        edges e;
        write_edges(&e, 100 + (int)rnd(200), 45 + (int)rnd(10));
        char names[2048], want[4096];
        double share = expected(&e, names, sizeof names);
        cr_assert_lt(share, 0.5, "the model should resolve under half its rows");
        int ok = (int)(share * e.n + 0.5);
        snprintf(want, sizeof want, "edge source 'phys' (./edges.tsv): only %d of %d rows "
                 "resolve (share %.3f, under min_resolved 0.5); most frequent unresolved "
                 "names: %s (", ok, e.n, share, names);
        write_recipe("");
        char *out;
        cr_assert_eq(run("recipe check r.yaml", &out), 1, "%s", out);
        cr_assert(strstr(out, want), "check: want '%s' in\n%s", want, out);
        cr_assert(strstr(out, "source phys format=delim"), "the report goes on: %s", out);
        free(out);
        pl_test_run_expect(dir, 1, want, "build --recipe r.yaml -o db --quiet");
        pl_test_expect_no_db("db");
        /* a threshold under the share, or allow_empty, accepts it */
        char extra[128];
        snprintf(extra, sizeof extra, "    min_resolved: %.3f\n", share - 0.01);
        write_recipe(extra);
        pl_test_run_expect(dir, 0, NULL, "recipe check r.yaml");
        write_recipe("    allow_empty: true\n");
        pl_test_run_expect(dir, 0, NULL, "build --recipe r.yaml -o db2 --quiet");
        char *p = pl_test_path(dir, "db2");
        pl_db *db;
        pl_err err;
        cr_assert_eq(pl_db_open(p, &db, &err), 0, "%s", err.msg);
        cr_assert_eq(pl_db_info_get(db)->n_edges[0], (uint64_t)ok, "rows resolved, kept as listed");
        pl_db_close(db);
        pl_test_rmtree(p);
        free(p);
    }
}

/* A source that keeps nothing (its filter drops every row; or no name
 * resolves) is refused even above the share; min_resolved: 0 accepts. */
Test(import_resolved, empty_source_refused)
{
    edges e;
    rng = 9;
    write_edges(&e, 50, 100);
    write_recipe("    min_score: 100\n");
    char want[4096];
    snprintf(want, sizeof want, "edge source 'phys' (./edges.tsv) keeps no edge: 50 rows, 50 "
             "filtered out, 0 with an unresolved name (resolved share 0.000); most frequent "
             "unresolved names: none (allow_empty: true or min_resolved: 0 accepts it)");
    pl_test_run_expect(dir, 1, want, "build --recipe r.yaml -o db --quiet");
    pl_test_expect_no_db("db");
    write_recipe("    min_score: 100\n    min_resolved: 0\n");
    pl_test_run_expect(dir, 0, NULL, "build --recipe r.yaml -o db --quiet");
    /* nothing resolves: the names are those of another organism */
    write_edges(&e, 30, 0);
    char names[2048];
    cr_assert_eq(expected(&e, names, sizeof names), 0.0);
    snprintf(want, sizeof want, "edge source 'phys' (./edges.tsv) keeps no edge: 30 rows, 0 "
             "filtered out, 30 with an unresolved name (resolved share 0.000); most frequent "
             "unresolved names: %s (", names);
    write_recipe("");
    pl_test_run_expect(dir, 1, want, "recipe check r.yaml");
}

Test(import_resolved, bad_min_resolved)
{
    write_recipe("    min_resolved: 1.5\n");
    pl_test_run_expect(dir, 1, "r.yaml:11:19: 'min_resolved' must be a share 0..1",
                       "recipe check r.yaml");
    write_recipe("    allow_empty: maybe\n");
    pl_test_run_expect(dir, 1, "r.yaml:11:18:", "recipe check r.yaml");
}
