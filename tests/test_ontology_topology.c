/* DCell's topology files (blocks ROOT: / GENES: / TERMS:) read by the option
 * and recipe format of the three-column file, recognised by content: random
 * DAGs written in the published layout (ROOT: the closure's size, GENES: the
 * direct genes, blocks in random order, unknown genes, children repeated on
 * a TERMS: line, terms without genes or children, gzip) against a
 * brute-force closure oracle and against the same DAG as a three-column
 * file; the reader's counts recomputed from the model; a count that differs
 * from the closure a warning (an error under strict); malformed blocks at
 * file:line, and a build that fails on one leaves no database behind. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "importutil.h"
#include "preprocess/import/recipe/recipe.h"
#include "preprocess/ontology/ontology.h"
#include "testutil.h"

enum { MAXT = 60, MAXG = 30, MAXE = 200 };

static pl_strtab genes;

static void setup(void)
{
    pl_test_dir_init();
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
    pl_test_dir_fini();
}

TestSuite(ontology_topology, .init = setup, .fini = teardown);

/* A random DAG: edges from a higher rank to a lower one, distinct; direct
 * annotations dir[t][g]; unk[t] unknown gene names listed under t. */
typedef struct model {
    int nt, ng, ne;
    int ec[MAXE], ep[MAXE];
    int direct[MAXT][MAXG];
    int unk[MAXT];
    int closure[MAXT][MAXG]; /* the oracle: genes of t and its descendants */
    int unk_closure[MAXT];   /* unknown names of t and its descendants */
} model;

static void reach(const model *m, int t, int *g, int *seen, int *unk)
{
    if (seen[t]++)
        return;
    *unk += m->unk[t];
    for (int x = 0; x < m->ng; x++)
        g[x] |= m->direct[t][x];
    for (int e = 0; e < m->ne; e++)
        if (m->ep[e] == t)
            reach(m, m->ec[e], g, seen, unk);
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
        reach(m, t, m->closure[t], seen, &m->unk_closure[t]);
    }
}

/* As DCell publishes them: ROOT: counts the closure (unknown names of the
 * term and its descendants included), GENES: lists the direct genes and the
 * term's own unknown name; every third block names each child twice
 * (`*repeated` counts the extra names). */
static char *write_topology(const model *m, const char *name, int codec, uint64_t *rows,
                            uint64_t *unknown, uint64_t *repeated)
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
    *rows = *unknown = *repeated = 0;
    for (int i = 0; i < m->nt; i++) {
        int k = order[i], n = m->unk_closure[k], listed = m->unk[k];
        for (int g = 0; g < m->ng; g++)
            n += m->closure[k][g], listed += m->direct[k][g];
        pl_test_tprintf(&t, "ROOT: T%d %d\nGENES:", k, n);
        /* genes from the highest index down: the order says nothing */
        for (int g = m->ng - 1; g >= 0; g--)
            if (m->direct[k][g])
                pl_test_tprintf(&t, " G%d", g);
        if (m->unk[k])
            pl_test_tprintf(&t, " UNKNOWN%d", k);
        pl_test_tprintf(&t, "%s\nTERMS:", i % 3 ? "" : "  ");
        for (int twice = 0; twice < (i % 3 == 2 ? 2 : 1); twice++)
            for (int e = 0; e < m->ne; e++)
                if (m->ep[e] == k) {
                    pl_test_tprintf(&t, " T%d", m->ec[e]);
                    *repeated += (uint64_t)twice;
                }
        pl_test_tprintf(&t, "\n%s", i % 4 == 1 ? "\n" : "");
        *rows += (uint64_t)listed;
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
        uint64_t rows, unknown, repeated;
        int codec = it % 3 == 0 ? PL_TEST_PLAIN : it % 3 == 1 ? PL_TEST_GZIP : PL_TEST_ZSTD;
        char *tp = write_topology(&m, "topo", codec, &rows, &unknown, &repeated);
        char *cp = write_columns(&m, "cols.txt");
        pl_onto_opts o = {.min_term_genes = (uint32_t)rnd(4)};
        pl_onto_raw r = {0}, rr = {0};
        pl_onto_stats st = {0}, rst = {0};
        pl_err err = {0};
        cr_assert_eq(pl__onto_read_dcell(&r, tp, pl_test_resolve, &genes, 0, &st, &err), 0, "%s",
                     err.msg);
        /* the reader's counts, from the model */
        cr_assert_eq(st.terms_read, (uint64_t)m.nt);
        cr_assert_eq(st.edges_read, (uint64_t)m.ne);
        cr_assert_eq(st.rows, rows);
        cr_assert_eq(st.unknown_genes.total, unknown);
        cr_assert_eq(st.repeated_children, repeated);
        cr_assert_eq(st.count_mismatches, 0, "%s", st.count_notes);
        cr_assert_eq(r.n_def, (uint64_t)m.nt);
        cr_assert_eq(pl__onto_read_dcell(&rr, cp, pl_test_resolve, &genes, 0, &rst, &err), 0, "%s",
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

/* Terms are defined in block order; a term's annotations are its GENES:
 * line as listed (a gene a child lists too stays); strict mode refuses an
 * unknown gene at its column. */
Test(ontology_topology, block_order_and_direct_genes)
{
    char *p = pl_test_write(dir, "t", "ROOT: B 3 \nGENES: G2 G0\nTERMS: A\n"
                                      "ROOT: A 2\nGENES: G0 G1\nTERMS:\n");
    pl_onto_raw r = {0};
    pl_onto_stats st = {0};
    pl_err err = {0};
    cr_assert_eq(pl__onto_read_dcell(&r, p, pl_test_resolve, &genes, 0, &st, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(r.n_def, 2);
    cr_assert_str_eq(r.ids.names[r.def[0]], "B");
    cr_assert_str_eq(r.ids.names[r.def[1]], "A");
    /* B: G2, G0; A: G0, G1 */
    cr_assert_eq(r.n_ann, 4);
    uint32_t want[4] = {2, 0, 0, 1};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(r.a_gene[i], want[i]);
        cr_assert_str_eq(r.ids.names[r.a_term[i]], i < 2 ? "B" : "A");
    }
    cr_assert_eq(r.n_edges, 1);
    cr_assert_str_eq(r.ids.names[r.e_child[0]], "A");
    cr_assert_eq(r.e_line[0], 3);
    cr_assert_eq(st.count_mismatches, 0);
    pl__onto_raw_free(&r);
    pl__onto_stats_free(&st);
    free(p);
    p = pl_test_write(dir, "u", "ROOT: A 2\nGENES: G0 NOPE\nTERMS:\n");
    pl_onto_raw r2 = {0};
    pl_onto_stats st2 = {0};
    pl_test_expect_at(pl__onto_read_dcell(&r2, p, pl_test_resolve, &genes, 1, &st2, &err),
                      PL_EPARSE, &err, p, 2, 11, "unresolved gene name 'NOPE' (strict mode)");
    pl__onto_raw_free(&r2);
    pl__onto_stats_free(&st2);
    free(p);
}

/* Read and build `text`; the build's genes(T) of term `id`. */
static uint32_t closure_of(const char *text, const char *id, int strict, pl_onto_stats *st,
                           int *rc, pl_err *err)
{
    char *p = pl_test_write(dir, "c", text);
    pl_onto_raw r = {0};
    *rc = pl__onto_read_dcell(&r, p, pl_test_resolve, &genes, strict, st, err);
    uint32_t n = UINT32_MAX;
    pl_onto on;
    if (*rc == 0 && (*rc = pl__onto_build(&r, MAXG, &(pl_onto_opts){0}, &on, st, err)) == 0) {
        int T = term_of(&on, id);
        n = T < 0 ? 0 : on.ngenes[T];
        pl__onto_free(&on);
    }
    pl__onto_raw_free(&r);
    free(p);
    return n;
}

/* As published (GO_0006281_topology: `ROOT: GO:0006281 162` over a GENES:
 * line of 42): the count is the closure, larger than the direct list, with
 * and without unknown names dropped; no warning. */
Test(ontology_topology, count_is_the_closure)
{
    pl_onto_stats st = {0};
    pl_err err = {0};
    int rc;
    /* R: direct G4, G0; L: G0 G1 G2; M: G3 under L; closure of R: G0-G4 */
    const char *plain = "ROOT: R 5\nGENES: G4 G0\nTERMS: L\nROOT: L 4\nGENES: G0 G1 G2\n"
                        "TERMS: M\nROOT: M 1\nGENES: G3\nTERMS:\n";
    cr_assert_eq(closure_of(plain, "R", 1, &st, &rc, &err), 5, "%s", err.msg);
    cr_assert_eq(rc, 0);
    cr_assert_eq(st.count_mismatches, 0, "%s", st.count_notes);
    cr_assert_null(st.count_notes);
    pl__onto_stats_free(&st);
    /* unknown names (dropped) count in the published closure: 7 names under
     * R, 5 of them genes of the list */
    st = (pl_onto_stats){0};
    const char *unknown = "ROOT: R 7\nGENES: G4 X1\nTERMS: L\nROOT: L 5\nGENES: G0 G1 G2 X2\n"
                          "TERMS: M\nROOT: M 2\nGENES: G3 X2\nTERMS:\n";
    cr_assert_eq(closure_of(unknown, "R", 0, &st, &rc, &err), 5, "%s", err.msg);
    cr_assert_eq(rc, 0);
    cr_assert_eq(st.count_mismatches, 0, "%s", st.count_notes);
    cr_assert_eq(st.unknown_genes.total, 3);
    pl__onto_stats_free(&st);
}

/* A count that is not the closure: a warning naming the term and its line,
 * counted; an error at file:line under strict. */
Test(ontology_topology, count_mismatch_warns)
{
    pl_onto_stats st = {0};
    pl_err err = {0};
    int rc;
    const char *text = "ROOT: R 2\nGENES: G4\nTERMS: L\nROOT: L 2\nGENES: G0 G1\nTERMS:\n";
    cr_assert_eq(closure_of(text, "R", 0, &st, &rc, &err), 3, "%s", err.msg);
    cr_assert_eq(st.count_mismatches, 1);
    cr_assert_not_null(st.count_notes);
    cr_assert(strstr(st.count_notes, "/c:1: the ROOT: count of term 'R' is 2 where its gene "
                                     "closure has 3\n"), "%s", st.count_notes);
    pl__onto_stats_free(&st);
    st = (pl_onto_stats){0};
    char *p = pl_test_path(dir, "c");
    closure_of(text, "R", 1, &st, &rc, &err);
    pl_test_expect_at(rc, PL_EPARSE, &err, p, 1, 0, "the ROOT: count of term 'R' is 2 where its "
                      "gene closure (1 direct under GENES: and its descendants') has 3 (strict "
                      "mode)");
    pl__onto_stats_free(&st);
    free(p);
}

/* A child named again on its TERMS: line is one link, counted; 100,000
 * repeats of a child of 300 genes stay small (they used to copy its genes
 * once per repeat). */
Test(ontology_topology, repeated_children_one_link)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, "ROOT: R 31\nGENES: G0\nTERMS:");
    for (int i = 0; i < 100000; i++)
        pl_test_tprintf(&t, " B%s", i % 1000 ? "" : " C");
    pl_test_tprintf(&t, "\nROOT: B 329\nGENES:");
    for (int g = 1; g < 30; g++)
        pl_test_tprintf(&t, " G%d", g);
    for (int g = 0; g < 300; g++)
        pl_test_tprintf(&t, " X%d", g);
    pl_test_tprintf(&t, "\nTERMS:\nROOT: C 1\nGENES: G1\nTERMS: B B\n");
    char *p = pl_test_put_text(dir, "rep", &t);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    pl_onto_raw r = {0};
    pl_onto_stats st = {0};
    pl_err err = {0};
    cr_assert_eq(pl__onto_read_dcell(&r, p, pl_test_resolve, &genes, 0, &st, &err), 0,
                 "%s", err.msg);
    getrusage(RUSAGE_SELF, &ru1);
    cr_assert_eq(st.edges_read, 3); /* R <- B, R <- C, C <- B */
    cr_assert_eq(r.n_edges, 3);
    cr_assert_eq(st.repeated_children, 99999 + 99 + 1);
    /* C says 1 and R 31 where their closures have 329 and 330: two warnings */
    cr_assert_eq(st.count_mismatches, 2, "%s", st.count_notes);
    cr_assert_lt(ru1.ru_maxrss - ru0.ru_maxrss, 32 * 1024, "peak grew by %ld KiB",
                 ru1.ru_maxrss - ru0.ru_maxrss);
    pl__onto_raw_free(&r);
    pl__onto_stats_free(&st);
    free(p);
}

/* Read `p` as a DCell topology (not strict), then free what it read. */
static int read_topology(void *unused, const char *p, pl_err *err)
{
    (void)unused;
    pl_onto_raw r = {0};
    pl_onto_stats st = {0};
    int rc = pl__onto_read_dcell(&r, p, pl_test_resolve, &genes, 0, &st, err);
    pl__onto_raw_free(&r);
    pl__onto_stats_free(&st);
    return rc;
}

static void malformed(const char *text, unsigned long line, unsigned long col, const char *why)
{
    pl_test_read_fails(read_topology, NULL, "bad", text, PL_TEST_PLAIN, line, col, why);
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
    pl_test_expect_at(pl__onto_read_dcell(&r, p, pl_test_resolve, &genes, 0, &st, &err), PL_EPARSE,
                      &err, p, 1, 1, "GENES: before any ROOT:");
    pl__onto_raw_free(&r);
    free(p);
    p = pl_test_write(dir, "s", "ROOT: A 1\nGENES: G0\nTERMS: A\n");
    pl_onto_raw r2 = {0};
    cr_assert_eq(pl__onto_read_dcell(&r2, p, pl_test_resolve, &genes, 0, &st, &err), 0,
                 "%s", err.msg);
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
    pl_test_tprintf(&t, "ROOT: R 3\nGENES: G2\nTERMS: L\nROOT: L 2\nGENES: G0 G1\n"
                        "TERMS:\n");
    in.o.ontology_dcell = pl_test_inputs_text(&in, "topo.txt", &t);
    char *out = pl_test_path(dir, "db");
    pl_build_stats st;
    pl_err err = {0};
    cr_assert_eq(pl_test_inputs_build(&in, out, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(st.n_terms, 2);
    cr_assert_eq(st.n_strata, 2);
    cr_assert_eq(st.n_term_annotations, 3); /* R: G2; L: G0, G1 */
    pl_test_tprintf(&t, "ROOT: R 3\nGENES: G2\nTERMS: L\nROOT: L 2\nGENES: G0\nTERMS: M\n");
    in.o.ontology_dcell = pl_test_inputs_text(&in, "bad.txt", &t);
    char *bad = pl_test_path(dir, "bad.db");
    pl_test_expect_at(pl_test_inputs_build(&in, bad, &st, &err), PL_EPARSE, &err,
                      in.o.ontology_dcell, 6, 0, "term 'M' under TERMS: has no ROOT: block");
    pl_test_expect_no_db("bad.db");
    free(out);
    free(bad);
    pl_test_inputs_free(&in);
}

/* A newcomer's recipe over DCell's files as published: the topology (counts
 * are closures), its data files (`2 <gene> <gene> <score>`, spaces) and no
 * edges at all (`edges` left out, or `edges: []`): an ontology-only
 * database, as `build --ontology-dcell` without --edges makes one. Without
 * an ontology or a metabolism, no edges is still an error. */
Test(ontology_topology, recipe_without_edges)
{
    free(pl_test_write(dir, "genes.txt", "G0\nG1\nG2\nG3\n"));
    free(pl_test_write(dir, "topo", "ROOT: R 4\nGENES: G3\nTERMS: L M \nROOT: L 2\n"
                                    "GENES: G0 G1\nTERMS:\nROOT: M 2\nGENES: G2 G1\nTERMS:\n"));
    free(pl_test_write(dir, "train.txt", "2 G0 G1 0.25\n2 G2 G3 -0.5\n"));
    free(pl_test_write(dir, "test.txt", "2 G1 G3 0.125\n"));
    const char *body = "ontology: {format: dcell, file: topo}\nsamples:\n"
                       "  - {format: dcell_samples, file: train.txt, set: {split: train}}\n"
                       "  - {format: dcell_samples, file: test.txt, set: {split: test}}\n";
    for (int k = 0; k < 2; k++) {
        char text[1024], args[4096], *msg;
        snprintf(text, sizeof text, "version: 1\ngenes: {file: genes.txt}\n%s%s",
                 k ? "edges: []\n" : "", body);
        char *rp = pl_test_write(dir, "r.yaml", text), *out = pl_test_path(dir, "db");
        pl_test_rmtree(out);
        snprintf(args, sizeof args, "build --recipe '%s' -o '%s'", rp, out);
        cr_assert_eq(pl_test_run_in(NULL, args, &msg), 0, "%s", msg);
        cr_assert_null(strstr(msg, "warning"), "%s", msg);
        free(msg);
        pl_db *db;
        pl_err err = {0};
        cr_assert_eq(pl_db_open(out, &db, &err), 0, "%s", err.msg);
        const pl_db_info *info = pl_db_info_get(db);
        cr_assert_eq(info->n_types, 0);
        cr_assert_eq(info->n_terms, 3);
        cr_assert_eq(info->n_samples, 3);
        cr_assert_str_eq(info->categories, "split\ttrain\ttest\n");
        pl_sample s;
        cr_assert_eq(pl_db_sample(db, 2, &s, &err), 0, "%s", err.msg);
        cr_assert_eq(s.labels[0], 0.125f);
        pl_db_close(db);
        free(rp), free(out);
    }
    pl_test_recipe_fails("r.yaml", "version: 1\ngenes: {file: genes.txt}\nedges: []\n"
                                   "samples:\n  - {format: dcell_samples, file: train.txt}\n",
                         1, 1, "the recipe has no 'edges' (they may be left out, or empty, only "
                               "with a 'metabolism' or an 'ontology')");
}

/* What a build says of a topology: each count that differs from its closure
 * a warning naming file, line and term, the repeated children counted
 * (stderr, not with --quiet; a recipe's source line stores both); under
 * build --recipe --strict the count is an error and nothing is built. */
Test(ontology_topology, build_reports_counts_and_repeats)
{
    free(pl_test_write(dir, "genes.txt", "G0\nG1\nG2\n"));
    free(pl_test_write(dir, "s.tsv", "genes\ty\nG0\t1\n"));
    char *topo = pl_test_write(dir, "topo", "ROOT: R 2\nGENES: G2\nTERMS: L L L\nROOT: L 2\n"
                                            "GENES: G0 G1\nTERMS:\n");
    char args[4096], want[4096], *msg;
    for (int quiet = 0; quiet < 2; quiet++) {
        char *out = pl_test_path(dir, "db");
        pl_test_rmtree(out);
        snprintf(args, sizeof args, "build -o '%s' --genes '%s/genes.txt' --samples "
                 "'%s/s.tsv' --ontology-dcell '%s'%s", out, dir, dir, topo,
                 quiet ? " --quiet" : "");
        cr_assert_eq(pl_test_run_in(NULL, args, &msg), 0, "%s", msg);
        snprintf(want, sizeof want, "warning: %s:1: the ROOT: count of term 'R' is 2 where its "
                 "gene closure has 3\n", topo);
        cr_assert_eq(strstr(msg, want) != NULL, !quiet, "%s", msg);
        snprintf(want, sizeof want, "%s: 2 children named again on their TERMS: line (one link "
                 "each)\n", topo);
        cr_assert_eq(strstr(msg, want) != NULL, !quiet, "%s", msg);
        free(msg), free(out);
    }
    char *rp = pl_test_write(dir, "r.yaml", "version: 1\ngenes: {file: genes.txt}\n"
                                            "ontology: {format: dcell, file: topo}\n"
                                            "samples: {format: tsv, file: s.tsv}\n");
    char *out = pl_test_path(dir, "rdb");
    pl_test_run_expect(NULL, 0, NULL, "build --recipe '%s' -o '%s' --quiet", rp, out);
    pl_db *db;
    pl_err err = {0};
    cr_assert_eq(pl_db_open(out, &db, &err), 0, "%s", err.msg);
    cr_assert(strstr(pl_db_info_get(db)->recipe_sources, " repeated_children=2 "
                     "count_mismatches=1\n"), "%s", pl_db_info_get(db)->recipe_sources);
    pl_db_close(db);
    pl_test_rmtree(out);
    snprintf(want, sizeof want, "%s:1: the ROOT: count of term 'R' is 2 where its gene closure "
             "(1 direct under GENES: and its descendants') has 3 (strict mode)", topo);
    pl_test_run_expect(NULL, 1, want, "build --recipe '%s' -o '%s' --strict", rp, out);
    struct stat sb;
    cr_assert(lstat(out, &sb) < 0, "%s built", out);
    free(out), free(rp), free(topo);
}
