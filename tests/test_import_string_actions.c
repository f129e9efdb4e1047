/* STRING protein.actions (format string_actions) and protein.aliases (alias
 * table format string_aliases) in their published layouts: random files
 * against counts and records recomputed here from the rows written (modes,
 * directed, min_score; sources filter, taxon prefix), plain, gzip and zstd;
 * the recipe keys; malformed files named by file, line and reason, and a
 * build that fails on one leaves no database. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "importutil.h"
#include "preprocess/import/edges/import.h"
#include "preprocess/import/recipe/recipe.h"

TestSuite(import_string_actions, .init = pl_test_dir_init, .fini = pl_test_dir_fini);

static const char *const modes[] = {"activation", "binding",  "catalysis", "expression",
                                    "inhibition", "ptmod",    "reaction"};

#define ACTIONS_HEADER "item_id_a\titem_id_b\tmode\taction\tis_directional\ta_is_acting\tscore\n"

typedef struct row {
    int a, b, mode, dir, acting, score;
} row;

/* A random actions file (v11 layout) of n rows; rows[] the model. */
static char *write_actions(row *rows, int n, int codec)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, ACTIONS_HEADER);
    for (int i = 0; i < n; i++) {
        row *r = &rows[i];
        r->a = (int)rnd(20), r->b = (int)rnd(20), r->mode = (int)rnd(7);
        r->dir = (int)rnd(2), r->acting = r->dir && rnd(2);
        r->score = 150 + (int)rnd(850);
        pl_test_tprintf(&t, "4932.Y%03d\t4932.Y%03d\t%s\t%s\t%s\t%s\t%d\n", r->a, r->b,
                        modes[r->mode], r->mode == 0 ? "activation" : "", r->dir ? "t" : "f",
                        r->acting ? "t" : "f", r->score);
    }
    char *p = pl_test_write_codec(dir, codec ? "actions.txt.z" : "actions.txt", t.s, t.len,
                                  codec);
    free(t.s);
    return p;
}

Test(import_string_actions, random_files_against_the_model)
{
    static row rows[500];
    for (int it = 0; it < 30; it++) {
        rng = 300 + (uint64_t)it;
        int n = 1 + (int)rnd(500);
        char *p = write_actions(rows, n, it % 3);
        pl_imp_opts o;
        pl__imp_opts_init(&o);
        int keep_mode[7] = {1, 1, 1, 1, 1, 1, 1};
        if (it % 2) {
            for (int m = 0; m < 7; m++)
                keep_mode[m] = 0;
            for (int k = 0, c = 1 + (int)rnd(3); k < c; k++) {
                int m = (int)rnd(7);
                if (!keep_mode[m])
                    o.modes[o.n_modes++] = modes[m];
                keep_mode[m] = 1;
            }
        }
        o.directed = it % 4 >= 2;
        if (it % 5)
            o.min_score = 200 + rnd(600);
        /* the oracle */
        pl_test_text want = {0};
        uint64_t kept = 0;
        for (int i = 0; i < n; i++) {
            const row *r = &rows[i];
            if (!keep_mode[r->mode] || (o.min_score == o.min_score && r->score < o.min_score) ||
                (o.directed && !(r->dir && r->acting)))
                continue;
            kept++;
            pl_test_tprintf(&want, "Y%03d\tY%03d\t%d\n", r->a, r->b, r->score);
        }
        pl_test_text got = {0};
        pl_imp_stats st;
        pl_err err = {0};
        cr_assert_eq(pl_test_imp_collect("string_actions", p, &o, &got, &st, &err), 0, "%s",
                     err.msg);
        cr_assert_eq(st.rows, (uint64_t)n);
        cr_assert_eq(st.emitted, kept);
        cr_assert_eq(st.filtered, (uint64_t)n - kept);
        cr_assert_str_eq(got.s ? got.s : "", want.s ? want.s : "", "iteration %d", it);
        free(got.s), free(want.s), free(p);
    }
}

static void actions_fails(const char *body, unsigned long line, unsigned long col,
                          const char *why)
{
    pl_test_imp_fails("string_actions", NULL, "bad.txt", body, PL_TEST_PLAIN, line, col, why);
}

Test(import_string_actions, malformed_actions)
{
    actions_fails("", 1, 0, "empty file (expected a STRING actions header");
    actions_fails("protein1 protein2 combined_score\n4932.A 4932.B 500\n", 1, 0,
                  "not a STRING actions header");
    actions_fails(ACTIONS_HEADER "4932.A\t4932.B\tbinding\t\tf\tf\n", 2, 0,
                  "expected 7 tab-separated fields as in the header, found 6");
    actions_fails(ACTIONS_HEADER "4932.A\t4932.B\tbonding\t\tf\tf\t500\n", 2, 15,
                  "unknown mode 'bonding'");
    actions_fails(ACTIONS_HEADER "4932.A\t4932.B\tbinding\t\tf\tf\t1001\n", 2, 28,
                  "bad score '1001' (expected an integer 0..1000)");
    actions_fails(ACTIONS_HEADER "4932.A\t4932.B\tbinding\t\tyes\tf\t500\n", 2, 24,
                  "bad is_directional 'yes' (expected t or f)");
    actions_fails(ACTIONS_HEADER "4932.A\t4932.B\tbinding\t\tt\t1\t500\n", 2, 26,
                  "bad a_is_acting '1' (expected t or f)");
    actions_fails(ACTIONS_HEADER "4932.A\tYB\tbinding\t\tf\tf\t500\n", 2, 8,
                  "protein id 'YB' is not TAXON.NAME");
    actions_fails(ACTIONS_HEADER "4932.A\t4932.B\tbinding\t\tf\tf\t500\n"
                  "4932.A\t9606.B\tbinding\t\tf\tf\t500\n", 3, 8,
                  "taxon 9606 differs from taxon 4932 of the rows before");
}

/* ------------------------------------------------------------- recipes */

/* `pertload ARGS` in the test's folder. */
static int run(const char *args, char **out)
{
    return pl_test_run_in(dir, args, out);
}

#define GENES "Y000\nY001\nY002\nY003\n"

/* directed: true makes as_listed the default; pairs: unordered overrides;
 * an unknown mode is a recipe error at its source. */
Test(import_string_actions, recipe_keys)
{
    free(pl_test_write(dir, "genes.txt", GENES));
    free(pl_test_write(dir, "a.txt", ACTIONS_HEADER
                       "4932.Y000\t4932.Y001\tactivation\tactivation\tt\tt\t900\n"
                       "4932.Y001\t4932.Y000\tactivation\tactivation\tt\tf\t900\n"
                       "4932.Y000\t4932.Y001\tbinding\t\tf\tf\t700\n"
                       "4932.Y001\t4932.Y000\tbinding\t\tf\tf\t700\n"
                       "4932.Y002\t4932.Y003\tinhibition\tinhibition\tt\tt\t300\n"));
    pl_recipe *r = pl_test_recipe_ok(
        "r.yaml", "version: 1\ngenes: {file: genes.txt}\nedges:\n"
                  "  - {name: all, format: string_actions, file: a.txt}\n"
                  "  - {name: act, format: string_actions, file: a.txt, directed: true,\n"
                  "     modes: [activation, inhibition], min_score: 400}\n"
                  "  - {name: und, format: string_actions, file: a.txt, directed: true,\n"
                  "     pairs: unordered}\n");
    cr_assert_eq(r->sources[0].undirected, 1);
    cr_assert_eq(r->sources[1].undirected, 0);
    cr_assert_eq(r->sources[1].opts.n_modes, 2);
    cr_assert_eq(r->sources[2].undirected, 1);
    pl__recipe_free(r);
    char *out;
    cr_assert_eq(run("recipe check r.yaml", &out), 0, "%s", out);
    /* all: 5 rows, pairs {0,1} x4 and {2,3}: 2 kept; act: the acting activation
     * row (inhibition under 400): 1 kept; und: 2 directed rows, 2 pairs */
    cr_assert(strstr(out, "source all format=string_actions rows=5 filtered=0 unresolved=0 "
                          "unresolved_names=0 duplicates=3 kept=2 pairs=unordered"), "%s", out);
    cr_assert(strstr(out, "source act format=string_actions rows=5 filtered=4 unresolved=0 "
                          "unresolved_names=0 duplicates=0 kept=1 pairs=as_listed"), "%s", out);
    cr_assert(strstr(out, "source und format=string_actions rows=5 filtered=3 unresolved=0 "
                          "unresolved_names=0 duplicates=0 kept=2 pairs=unordered"), "%s", out);
    free(out);
    pl_test_recipe_fails("m.yaml", "version: 1\ngenes: {file: genes.txt}\nedges:\n"
                         "  - {name: x, format: string_actions, file: a.txt, modes: [bind]}\n",
                         4, 5, "edge source 'x': unknown STRING action mode 'bind'");
    pl_err err = {0};
    char *p = pl_test_write(dir, "k.yaml", "version: 1\ngenes: {file: genes.txt}\nedges:\n"
                            "  - {name: x, format: string, file: a.txt, directed: true}\n");
    cr_assert_eq(pl__recipe_load(p, NULL, &r, &err), PL_EPARSE, "%s", err.msg);
    cr_assert(strstr(err.msg, "key 'directed' does not apply to format 'string'"), "%s",
              err.msg);
    free(p);
    /* a malformed actions file fails the build at file:line, no database left */
    free(pl_test_write(dir, "bad.txt", ACTIONS_HEADER
                       "4932.Y000\t4932.Y001\tbinding\t\tf\tf\t700\n"
                       "4932.Y000\t4932.Y001\tbinding\t\tmaybe\tf\t700\n"));
    free(pl_test_write(dir, "s.tsv", "genes\tfitness\nY000\t1\n"));
    free(pl_test_write(dir, "b.yaml", "version: 1\ngenes: {file: genes.txt}\nedges:\n"
                       "  - {name: x, format: string_actions, file: bad.txt}\n"
                       "samples: {format: tsv, file: s.tsv}\n"));
    pl_test_run_expect(dir, 1, "bad.txt:3:30: bad is_directional 'maybe' (expected t or f)",
                       "build --recipe b.yaml -o db --quiet");
    pl_test_expect_no_db("db");
}

/* The edge arrays of `db`'s types and its recipe's source lines with the
 * file= part cut (both recipes name one file). */
static void db_edges(const char *path, pl_test_text *t)
{
    pl_db *db;
    pl_err err = {0};
    cr_assert_eq(pl_db_open(path, &db, &err), 0, "%s", err.msg);
    const pl_db_info *info = pl_db_info_get(db);
    static int32_t buf[2 * 5000];
    for (uint32_t k = 0; k < info->n_types; k++) {
        int64_t n = pl_db_graph_array(db, (int)k, buf, sizeof buf, &err);
        cr_assert_geq(n, 0, "%s", err.msg);
        int64_t e = n / 8;
        pl_test_tprintf(t, "%s:", info->type_names[k]);
        for (int64_t i = 0; i < e; i++)
            pl_test_tprintf(t, " %d-%d", buf[i], buf[e + i]);
        pl_test_tprintf(t, "\n");
    }
    pl_test_tprintf(t, "%s", info->recipe_sources);
    pl_db_close(db);
}

/* One source, one type per mode (`types: {MODE: TYPE}`): the same edge types,
 * edges and counts as one source per mode (random files, modes, directed,
 * min_score, pair policies); 'name' or 'modes' beside it, a mode twice or
 * unknown, 'types' on another format are recipe errors. */
Test(import_string_actions, types_per_mode_in_one_source)
{
    static row rows[400];
    pl_test_text g = {0};
    for (int i = 0; i < 20; i++)
        pl_test_tprintf(&g, "Y%03d\n", i);
    free(pl_test_put_text(dir, "genes.txt", &g));
    free(pl_test_write(dir, "s.tsv", "genes\tfitness\nY000\t1\n"));
    for (int it = 0; it < 6; it++) {
        rng = 900 + (uint64_t)it;
        char *p = write_actions(rows, 50 + (int)rnd(350), it % 3);
        const char *file = strrchr(p, '/') + 1;
        char opts[128] = "";
        int n = snprintf(opts, sizeof opts, "%s", it % 2 ? ", directed: true" : "");
        if (it % 3)
            n += snprintf(opts + n, sizeof opts - (size_t)n, ", min_score: %u", 200 + rnd(600));
        if (it == 4)
            snprintf(opts + n, sizeof opts - (size_t)n, ", pairs: as_listed");
        pl_test_text one = {0}, many = {0};
        const char *head = "version: 1\ngenes: {file: genes.txt}\n"
                           "samples: {format: tsv, file: s.tsv}\nedges:\n";
        pl_test_tprintf(&one, "%s  - {format: string_actions, file: %s%s, types: {", head, file,
                        opts);
        pl_test_tprintf(&many, "%s", head);
        int used[7] = {0}, k = 2 + (int)rnd(6);
        for (int j = 0; j < k; j++) {
            int m = (int)rnd(7);
            while (used[m])
                m = (m + 1) % 7;
            used[m] = 1;
            pl_test_tprintf(&one, "%s%s: t_%s", j ? ", " : "", modes[m], modes[m]);
            pl_test_tprintf(&many, "  - {name: t_%s, format: string_actions, file: %s%s, "
                                   "modes: [%s]}\n", modes[m], file, opts, modes[m]);
        }
        pl_test_tprintf(&one, "}}\n");
        free(pl_test_put_text(dir, "one.yaml", &one));
        free(pl_test_put_text(dir, "many.yaml", &many));
        char *pa = pl_test_path(dir, "one.db"), *pb = pl_test_path(dir, "many.db");
        pl_test_rmtree(pa), pl_test_rmtree(pb);
        pl_test_run_expect(dir, 0, NULL, "build --recipe one.yaml -o one.db --quiet");
        pl_test_run_expect(dir, 0, NULL, "build --recipe many.yaml -o many.db --quiet");
        pl_test_text a = {0}, b = {0};
        db_edges(pa, &a);
        db_edges(pb, &b);
        cr_assert_str_eq(a.s, b.s, "iteration %d", it);
        /* recipe check: the same counts */
        char *oa, *ob;
        cr_assert_eq(run("recipe check one.yaml", &oa), 0, "%s", oa);
        cr_assert_eq(run("recipe check many.yaml", &ob), 0, "%s", ob);
        /* line by line, up to the timing of each read */
        for (const char *x = strstr(oa, "\nsource "), *y = strstr(ob, "\nsource "); x && y;
             x = strstr(x + 1, "\nsource "), y = strstr(y + 1, "\nsource ")) {
            size_t lx = strcspn(x, "("), ly = strcspn(y, "(");
            cr_assert(lx == ly && !memcmp(x, y, lx), "%.*s\n%.*s", (int)lx, x, (int)ly, y);
        }
        free(oa), free(ob), free(a.s), free(b.s), free(pa), free(pb), free(p);
    }
    static const struct {
        const char *src;
        unsigned long col;
        const char *why;
    } bad[] = {
        {"{name: x, format: string_actions, file: a, types: {binding: b}}", 5,
         "an edge source with 'types' takes no 'name'"},
        {"{format: string_actions, file: a, modes: [binding], types: {binding: b}}", 5,
         "an edge source with 'types' takes no 'modes'"},
        {"{format: string_actions, file: a, types: {binding: b, binding: c}}", 59,
         "mode 'binding' given twice in 'types'"},
        {"{format: string_actions, file: a, types: {bind: b}}", 47,
         "'types': unknown STRING action mode 'bind'"},
        {"{format: string_actions, file: a, types: {binding: a b}}", 5,
         "edge-type name 'a b' must be"},
        {"{format: string_actions, file: a, types: []}", 46,
         "'types' must be a mapping {MODE: EDGE_TYPE}"},
        {"{name: x, format: string, file: a, types: {binding: b}}", 40,
         "key 'types' does not apply to format 'string'"},
        {"{name: binding, format: string, file: a}\n  - {format: string_actions, file: a, "
         "types: {binding: binding}}", 5, "edge type 'binding' named twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[512];
        snprintf(text, sizeof text, "version: 1\ngenes: {file: genes.txt}\nedges:\n  - %s\n",
                 bad[i].src);
        unsigned long line = strstr(bad[i].src, "\n") ? 5 : 4;
        pl_test_recipe_fails("bad.yaml", text, line, bad[i].col, bad[i].why);
    }
}

/* ------------------------------------------------------------- aliases */

static const char *const sources[] = {"Ensembl_UniProt_GN", "SGD_ID", "BLAST_UniProt_AC",
                                      "Ensembl_gene"};

Test(import_string_actions, random_aliases_against_the_model)
{
    for (int it = 0; it < 20; it++) {
        rng = 900 + (uint64_t)it;
        pl_names *nm = pl_test_names("g.txt", "Y000\nY001\nY002\nY003\nY004\nY005\n");
        pl_err err = {0};
        pl_alias_spec spec = {.kind = PL_ALIAS_STRING};
        int keep[4] = {1, 1, 1, 1};
        if (it % 2) {
            keep[0] = keep[2] = keep[3] = 0;
            spec.sources[spec.n_sources++] = sources[1];
            if (it % 4 == 1)
                spec.sources[spec.n_sources++] = sources[3], keep[3] = 1;
        }
        pl_test_text t = {0};
        pl_test_tprintf(&t, it % 3 ? "#string_protein_id\talias\tsource\n"
                                   : "## string_protein_id ## alias ## source ##\n");
        uint64_t rows = 0, filtered = 0, no_gene = 0, added = 0;
        int owner[40];
        for (int a = 0; a < 40; a++)
            owner[a] = -1;
        for (int i = 0, n = 5 + (int)rnd(60); i < n; i++) {
            int g = (int)rnd(8), a = (int)rnd(40), s1 = (int)rnd(4), s2 = (int)rnd(5);
            /* v11.0 lists several sources in one column */
            pl_test_tprintf(&t, "4932.Y%03d\tA%d\t%s%s%s\n", g, a, sources[s1],
                            s2 < 4 ? " " : "", s2 < 4 ? sources[s2] : "");
            rows++;
            if (!keep[s1] && !(s2 < 4 && keep[s2])) {
                filtered++;
                continue;
            }
            if (g >= 6) {
                no_gene++;
                continue;
            }
            /* first mapping wins the count; a second gene makes it ambiguous */
            if (owner[a] == -1) {
                owner[a] = g;
                added++;
            } else if (owner[a] != g) {
                owner[a] = -2;
            }
        }
        spec.path = pl_test_put_text(dir, it % 2 ? "aliases.txt.gz" : "aliases.txt", &t);
        if (it % 2) { /* gzip it */
            size_t len;
            char *text = pl_test_read_file(spec.path, &len);
            free((char *)spec.path);
            spec.path = pl_test_write_codec(dir, "aliases.txt.gz", text, len, PL_TEST_GZIP);
            free(text);
        }
        pl_alias_stats st;
        cr_assert_eq(pl__names_load_aliases(nm, &spec, &st, &err), 0, "%s", err.msg);
        cr_assert_eq(st.rows, rows);
        cr_assert_eq(st.filtered, filtered);
        cr_assert_eq(st.no_gene, no_gene);
        cr_assert_eq(st.added, added, "iteration %d", it);
        for (int a = 0; a < 40; a++) {
            char s[8];
            snprintf(s, sizeof s, "A%d", a);
            cr_assert_eq(pl__names_resolve(nm, s, strlen(s)), owner[a] >= 0 ? owner[a] : -1,
                         "alias %s", s);
        }
        pl__names_free(nm);
        free((char *)spec.path);
    }
}

/* Load `p` as a STRING alias table into the name table `nm`. */
static int read_aliases(void *nm, const char *p, pl_err *err)
{
    pl_alias_spec spec = {.kind = PL_ALIAS_STRING, .path = p};
    pl_alias_stats st;
    return pl__names_load_aliases(nm, &spec, &st, err);
}

static void aliases_fail(const char *body, unsigned long line, unsigned long col,
                         const char *why)
{
    pl_names *nm = pl_test_names("g.txt", "Y000\nY001\n");
    pl_test_read_fails(read_aliases, nm, "bad-aliases.txt", body, PL_TEST_PLAIN, line, col, why);
    pl__names_free(nm);
}

#define AHEAD "#string_protein_id\talias\tsource\n"

Test(import_string_actions, malformed_aliases)
{
    aliases_fail(AHEAD "4932.Y000\tA\n", 2, 0, "expected the 3 tab-separated columns of STRING "
                 "protein.aliases (string_protein_id alias source), found 2");
    aliases_fail(AHEAD "4932.Y000\tA\tS\textra\n", 2, 0, "found 4");
    aliases_fail(AHEAD "Y000\tA\tS\n", 2, 1, "protein id 'Y000' is not TAXON.NAME");
    aliases_fail(AHEAD "4932.Y000\tA\tS\n9606.Y001\tB\tS\n", 3, 1,
                 "taxon 9606 differs from taxon 4932 of the rows before");
    aliases_fail(AHEAD "4932.Y000\t\tS\n", 2, 11, "empty alias");
    aliases_fail(AHEAD "4932.\tA\tS\n", 2, 1, "protein id '4932.' is not TAXON.NAME");
}

Test(import_string_actions, alias_recipe_keys)
{
    free(pl_test_write(dir, "genes.txt", GENES));
    free(pl_test_write(dir, "al.txt", AHEAD "4932.Y000\tTFC3\tSGD_ID\n"));
    pl_recipe *r = pl_test_recipe_ok("r.yaml", "version: 1\ngenes:\n  file: genes.txt\n"
                                     "  aliases:\n"
                                     "    - {file: al.txt, format: string_aliases, sources: "
                                     "[SGD_ID]}\n"
                                     "edges:\n  - {name: x, format: yeastract, file: y.txt}\n");
    cr_assert_eq(r->aliases[0].kind, PL_ALIAS_STRING);
    cr_assert_eq(r->aliases[0].n_sources, 1);
    cr_assert_str_eq(r->aliases[0].sources[0], "SGD_ID");
    pl__recipe_free(r);
    pl_test_recipe_fails("s.yaml", "version: 1\ngenes:\n  file: genes.txt\n  aliases:\n"
                         "    - {file: al.txt, format: table, sources: [SGD_ID]}\n"
                         "edges:\n  - {name: x, format: yeastract, file: y.txt}\n",
                         5, 7, "'sources' applies to format string_aliases only");
}
