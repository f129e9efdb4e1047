/* DCell's topology files (blocks ROOT: / GENES: / TERMS:) read by the option
 * and recipe format of the three-column file, recognised by content: random
 * DAGs written in the published layout (GENES: the closure, blocks in random
 * order, unknown genes, terms without genes or children, gzip) against a
 * brute-force closure oracle and against the same DAG as a three-column
 * file; the reader's counts recomputed from the model; malformed blocks at
 * file:line, and a build that fails on one leaves no database behind. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "importutil.h"
#include "preprocess/ontology/ontology.h"
#include "testutil.h"

enum { MAXT = 60, MAXG = 30, MAXE = 200 };

static char *dir;
static pl_strtab genes;

static void setup(void)
{
    dir = pl_test_tmpdir();
    cr_assert_eq(pl__strtab_init(&genes), 0);
    for (int g = 0; g < MAXG; g++) {
        char s[16];
        snprintf(s, sizeof s, "G%d", g);
        cr_assert_geq(pl__strtab_intern(&genes, s, strlen(s), NULL), 0);
    }
}

static void teardown(void)
{
    pl__strtab_free(&genes);
    pl_test_rmtree(dir);
    free(dir);
}

TestSuite(ontology_topology, .init = setup, .fini = teardown);

static int64_t resolve(void *ctx, const char *s, size_t len)
{
    return pl__strtab_find(ctx, s, len);
}

static uint64_t rng;
static uint32_t rnd(uint32_t n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng >> 33) % n;
}

/* A random DAG: edges from a higher rank to a lower one, distinct; direct
 * annotations dir[t][g]; unk[t] unknown gene names listed under t. */
typedef struct model {
    int nt, ng, ne;
    int ec[MAXE], ep[MAXE];
    int direct[MAXT][MAXG];
    int unk[MAXT];
    int closure[MAXT][MAXG]; /* the oracle: genes of t and its descendants */
} model;

static void reach(const model *m, int t, int *g, int *seen)
{
    if (seen[t]++)
        return;
    for (int x = 0; x < m->ng; x++)
        g[x] |= m->direct[t][x];
    for (int e = 0; e < m->ne; e++)
        if (m->ep[e] == t)
            reach(m, m->ec[e], g, seen);
}

static void make(model *m)
{
    memset(m, 0, sizeof *m);
    m->nt = 2 + (int)rnd(MAXT - 2);
    m->ng = 2 + (int)rnd(MAXG - 2);
    for (int c = 1; c < m->nt; c++)
        for (int k = 0, n = (int)rnd(3); k < n && m->ne < MAXE; k++) {
            int p = (int)rnd((uint32_t)c), dup = 0;
            for (int e = 0; e < m->ne; e++)
                dup |= m->ec[e] == c && m->ep[e] == p;
            if (!dup)
                m->ec[m->ne] = c, m->ep[m->ne++] = p;
        }
    for (int t = 0; t < m->nt; t++) {
        if (rnd(4) == 0)
            continue; /* no gene of its own */
        for (int k = 0, n = 1 + (int)rnd(3); k < n; k++)
            m->direct[t][rnd((uint32_t)m->ng)] = 1;
        m->unk[t] = rnd(5) == 0;
    }
    for (int t = 0; t < m->nt; t++) {
        int seen[MAXT] = {0};
        reach(m, t, m->closure[t], seen);
    }
}

/* Unknown names are listed by every term whose closure holds the term that
 * owns one (as DCell lists closures), here: by the owner only, and counted
 * in the ROOT: line. */
static char *write_topology(const model *m, const char *name, int codec, uint64_t *rows,
                            uint64_t *unknown)
{
    int order[MAXT];
    for (int i = 0; i < m->nt; i++)
        order[i] = i;
    for (int i = m->nt - 1; i > 0; i--) {
        int j = (int)rnd((uint32_t)i + 1), x = order[i];
        order[i] = order[j], order[j] = x;
    }
    pl_test_text t = {0};
    pl_test_tprintf(&t, "# a DCell topology\n");
    *rows = *unknown = 0;
    for (int i = 0; i < m->nt; i++) {
        int k = order[i], n = m->unk[k];
        for (int g = 0; g < m->ng; g++)
            n += m->closure[k][g];
        pl_test_tprintf(&t, "ROOT: T%d %d\nGENES:", k, n);
        /* genes from the highest index down: the order says nothing */
        for (int g = m->ng - 1; g >= 0; g--)
            if (m->closure[k][g])
                pl_test_tprintf(&t, " G%d", g);
        if (m->unk[k])
            pl_test_tprintf(&t, " UNKNOWN%d", k);
        pl_test_tprintf(&t, "%s\nTERMS:", i % 3 ? "" : "  ");
        for (int e = 0; e < m->ne; e++)
            if (m->ep[e] == k)
                pl_test_tprintf(&t, " T%d", m->ec[e]);
        pl_test_tprintf(&t, "\n%s", i % 4 == 1 ? "\n" : "");
        *rows += (uint64_t)n;
        *unknown += (uint64_t)m->unk[k];
    }
    char *path = pl_test_write_codec(dir, name, t.s, t.len, codec);
    free(t.s);
    return path;
}

static char *write_columns(const model *m, const char *name)
{
    pl_test_text t = {0};
    for (int e = 0; e < m->ne; e++)
        pl_test_tprintf(&t, "T%d\tT%d\tdefault\n", m->ep[e], m->ec[e]);
    for (int k = 0; k < m->nt; k++)
        for (int g = 0; g < m->ng; g++)
            if (m->direct[k][g])
                pl_test_tprintf(&t, "T%d\tG%d\tgene\n", k, g);
    return pl_test_put_text(dir, name, &t);
}

static int term_of(const pl_onto *on, const char *id)
{
    for (uint32_t T = 0; T < on->n_terms; T++)
        if (!strcmp(on->term_id[T], id))
            return (int)T;
    return -1;
}

static void check(const model *m, const pl_onto *on, const pl_onto *ref, uint32_t min)
{
    int kept = 0;
    for (int t = 0; t < m->nt; t++) {
        char id[16];
        snprintf(id, sizeof id, "T%d", t);
        int n = 0;
        for (int g = 0; g < m->ng; g++)
            n += m->closure[t][g];
        int T = term_of(on, id), R = term_of(ref, id);
        cr_assert_eq(T >= 0, n >= (int)(min ? min : 1), "%s kept: %d genes, min %u", id, n, min);
        cr_assert_eq(R >= 0, T >= 0, "%s: kept in one layout only", id);
        if (T < 0)
            continue;
        kept++;
        cr_assert_eq(on->ngenes[T], (uint32_t)n, "genes(%s)", id);
        cr_assert_eq(on->stratum[T], ref->stratum[R], "stratum of %s", id);
        cr_assert_eq(on->child_ptr[T + 1] - on->child_ptr[T],
                     ref->child_ptr[R + 1] - ref->child_ptr[R], "children of %s", id);
        for (uint32_t i = on->child_ptr[T]; i < on->child_ptr[T + 1]; i++) {
            const char *c = on->term_id[on->child_idx[i]];
            int found = 0;
            for (uint32_t j = ref->child_ptr[R]; j < ref->child_ptr[R + 1]; j++)
                found |= !strcmp(ref->term_id[ref->child_idx[j]], c);
            cr_assert(found, "child %s of %s", c, id);
        }
    }
    cr_assert_eq(on->n_terms, (uint32_t)kept);
    /* the terms a gene affects: those whose closure holds it */
    for (int g = 0; g < m->ng; g++) {
        int hit[MAXT] = {0};
        for (uint64_t i = on->gterm_ptr[g]; i < on->gterm_ptr[g + 1]; i++)
            hit[on->gterm_idx[i]] = 1;
        for (uint32_t T = 0; T < on->n_terms; T++) {
            int t = atoi(on->term_id[T] + 1);
            cr_assert_eq(hit[T], m->closure[t][g], "G%d affects %s", g, on->term_id[T]);
        }
    }
}

Test(ontology_topology, random_dags_against_closure_oracle)
{
    static model m;
    for (int it = 0; it < 120; it++) {
        rng = 7000 + (uint64_t)it;
        make(&m);
        uint64_t rows, unknown;
        int codec = it % 3 == 0 ? PL_TEST_PLAIN : it % 3 == 1 ? PL_TEST_GZIP : PL_TEST_ZSTD;
        char *tp = write_topology(&m, "topo", codec, &rows, &unknown);
        char *cp = write_columns(&m, "cols.txt");
        pl_onto_opts o = {.min_term_genes = (uint32_t)rnd(4)};
        pl_onto_raw r = {0}, rr = {0};
        pl_onto_stats st = {0}, rst = {0};
        pl_err err = {0};
        cr_assert_eq(pl__onto_read_dcell(&r, tp, resolve, &genes, 0, &st, &err), 0, "%s",
                     err.msg);
        /* the reader's counts, from the model */
        cr_assert_eq(st.terms_read, (uint64_t)m.nt);
        cr_assert_eq(st.edges_read, (uint64_t)m.ne);
        cr_assert_eq(st.rows, rows);
        cr_assert_eq(st.unknown_genes.total, unknown);
        cr_assert_eq(r.n_def, (uint64_t)m.nt);
        cr_assert_eq(pl__onto_read_dcell(&rr, cp, resolve, &genes, 0, &rst, &err), 0, "%s",
                     err.msg);
        pl_onto on, ref;
        cr_assert_eq(pl__onto_build(&r, MAXG, &o, &on, &st, &err), 0, "%s", err.msg);
        cr_assert_eq(pl__onto_build(&rr, MAXG, &o, &ref, &rst, &err), 0, "%s", err.msg);
        check(&m, &on, &ref, o.min_term_genes);
        pl__onto_free(&on);
        pl__onto_free(&ref);
        pl__onto_raw_free(&r);
        pl__onto_raw_free(&rr);
        pl__onto_stats_free(&st);
        pl__onto_stats_free(&rst);
        free(tp);
        free(cp);
    }
}

/* Terms are defined in block order; a term's own genes are those no child
 * lists; strict mode refuses an unknown gene at its column. */
Test(ontology_topology, block_order_and_own_genes)
{
    char *p = pl_test_write(dir, "t", "ROOT: B 3 \nGENES: G2 G0 G1\nTERMS: A\n"
                                      "ROOT: A 2\nGENES: G0 G1\nTERMS:\n");
    pl_onto_raw r = {0};
    pl_onto_stats st = {0};
    pl_err err = {0};
    cr_assert_eq(pl__onto_read_dcell(&r, p, resolve, &genes, 0, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(r.n_def, 2);
    cr_assert_str_eq(r.ids.names[r.def[0]], "B");
    cr_assert_str_eq(r.ids.names[r.def[1]], "A");
    /* B owns G2 only; A owns G0, G1 */
    cr_assert_eq(r.n_ann, 3);
    cr_assert_eq(r.a_gene[0], 2);
    cr_assert_str_eq(r.ids.names[r.a_term[0]], "B");
    cr_assert_str_eq(r.ids.names[r.a_term[1]], "A");
    cr_assert_eq(r.n_edges, 1);
    cr_assert_str_eq(r.ids.names[r.e_child[0]], "A");
    cr_assert_eq(r.e_line[0], 3);
    pl__onto_raw_free(&r);
    pl__onto_stats_free(&st);
    free(p);
    p = pl_test_write(dir, "u", "ROOT: A 2\nGENES: G0 NOPE\nTERMS:\n");
    pl_onto_raw r2 = {0};
    pl_onto_stats st2 = {0};
    pl_test_expect_at(pl__onto_read_dcell(&r2, p, resolve, &genes, 1, &st2, &err), PL_EPARSE,
                      &err, p, 2, 11, "unresolved gene name 'NOPE' (strict mode)");
    pl__onto_raw_free(&r2);
    pl__onto_stats_free(&st2);
    free(p);
}

static void malformed(const char *text, unsigned long line, unsigned long col, const char *why)
{
    char *p = pl_test_write(dir, "bad", text);
    pl_onto_raw r = {0};
    pl_onto_stats st = {0};
    pl_err err = {0};
    pl_test_expect_at(pl__onto_read_dcell(&r, p, resolve, &genes, 0, &st, &err), PL_EPARSE, &err,
                      p, line, col, why);
    pl__onto_raw_free(&r);
    pl__onto_stats_free(&st);
    free(p);
}

Test(ontology_topology, malformed_blocks)
{
    malformed("ROOT: A 1\nGENES: G0\nTERMS:\nGENES: G1\n", 4, 1,
              "GENES: without its ROOT: (the block of line 1 is complete)");
    malformed("ROOT: A 1\nROOT: B 0\nGENES:\nTERMS:\n", 2, 1,
              "expected 'GENES:' after the ROOT: of line 1, found 'ROOT:'");
    malformed("ROOT: A 1\nGENES: G0\nROOT: B 0\n", 3, 1,
              "expected 'TERMS:' after the ROOT: of line 1, found 'ROOT:'");
    malformed("ROOT: A 1\nGENES: G0\n", 1, 0, "the ROOT: of this line has no TERMS: line");
    malformed("ROOT: A 1\nGENES: G0\nTERMS:\nROOT: A 1\nGENES: G0\nTERMS:\n", 4, 7,
              "duplicate ROOT: for term 'A' (first at line 1)");
    malformed("ROOT: A 3\nGENES: G0 G1\nTERMS:\n", 2, 0,
              "GENES: lists 2 genes where the ROOT: of line 1 says 3");
    malformed("ROOT: A x\nGENES:\nTERMS:\n", 1, 9, "bad gene count 'x'");
    malformed("ROOT: A\nGENES:\nTERMS:\n", 1, 0, "expected 'ROOT: <term> <gene count>'");
    malformed("ROOT: A 0\nGENES:\nTERMS: B\n", 3, 0, "term 'B' under TERMS: has no ROOT: block");
    malformed("ROOT: A 0\nGENES:\nTERMS:\nA B default\n", 4, 1,
              "expected 'ROOT:' (a DCell topology block");
}

/* GENES: or TERMS: first: the three-column reader would take it as a row;
 * a file starting so is refused naming the line. A self-loop is a cycle for
 * pl__onto_build(). */
Test(ontology_topology, keyword_first_and_self_loop)
{
    char *p = pl_test_write(dir, "g", "GENES: G0\nTERMS:\n");
    pl_onto_raw r = {0};
    pl_onto_stats st = {0};
    pl_err err = {0};
    pl_test_expect_at(pl__onto_read_dcell(&r, p, resolve, &genes, 0, &st, &err), PL_EPARSE, &err,
                      p, 1, 1, "GENES: before any ROOT:");
    pl__onto_raw_free(&r);
    free(p);
    p = pl_test_write(dir, "s", "ROOT: A 1\nGENES: G0\nTERMS: A\n");
    pl_onto_raw r2 = {0};
    cr_assert_eq(pl__onto_read_dcell(&r2, p, resolve, &genes, 0, &st, &err), 0, "%s", err.msg);
    pl_onto on;
    int rc = pl__onto_build(&r2, MAXG, &(pl_onto_opts){0}, &on, &st, &err);
    cr_assert_eq(rc, PL_EPARSE, "%s", err.msg);
    cr_assert(strstr(err.msg, "cycle"), "%s", err.msg);
    pl__onto_raw_free(&r2);
    pl__onto_stats_free(&st);
    free(p);
}

/* Through pl_build (--ontology-dcell): a topology file builds the ontology;
 * a malformed one fails at file:line and leaves no database. */
Test(ontology_topology, build_option)
{
    pl_test_inputs in = {.dir = dir};
    pl_test_text t = {0};
    pl_test_tprintf(&t, "G0\nG1\nG2\n");
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
    pl_test_tprintf(&t, "G0\tG1\n");
    pl_test_inputs_edges(&in, "physical", pl_test_inputs_text(&in, "e.tsv", &t));
    pl_test_tprintf(&t, "id\tgenes\tfitness\n1\tG0;G1\t0.5\n");
    in.o.samples = pl_test_inputs_text(&in, "s.tsv", &t);
    pl_test_tprintf(&t, "ROOT: R 3\nGENES: G0 G1 G2\nTERMS: L\nROOT: L 2\nGENES: G0 G1\n"
                        "TERMS:\n");
    in.o.ontology_dcell = pl_test_inputs_text(&in, "topo.txt", &t);
    char *out = pl_test_path(dir, "db");
    pl_build_stats st;
    pl_err err = {0};
    cr_assert_eq(pl_test_inputs_build(&in, out, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(st.n_terms, 2);
    cr_assert_eq(st.n_strata, 2);
    cr_assert_eq(st.n_term_annotations, 3); /* R: G2; L: G0, G1 */
    pl_test_tprintf(&t, "ROOT: R 3\nGENES: G0 G1 G2\nTERMS: L\nROOT: L 2\nGENES: G0\nTERMS:\n");
    in.o.ontology_dcell = pl_test_inputs_text(&in, "bad.txt", &t);
    char *bad = pl_test_path(dir, "bad.db");
    pl_test_expect_at(pl_test_inputs_build(&in, bad, &st, &err), PL_EPARSE, &err,
                      in.o.ontology_dcell, 5, 0, "GENES: lists 1 genes where the ROOT: of line 4 "
                                                 "says 2");
    struct stat sb;
    cr_assert(lstat(bad, &sb) < 0 && errno == ENOENT, "%s left behind", bad);
    free(out);
    free(bad);
    pl_test_inputs_free(&in);
}
