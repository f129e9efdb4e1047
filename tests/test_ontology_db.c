/* The ontology layers through pl_build and the database: the stored
 * schedule, per-gene sets and a sample's lists read back with
 * pl_ontology_load / pl_ontology_removed, the counts in pl_db_info, verify;
 * option conflicts and a cycle leave nothing behind. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

static pl_test_inputs in;

static void setup(void)
{
    pl_test_dir_init();
    in = (pl_test_inputs){.dir = dir};
    pl_test_text t = {0};
    pl_test_tprintf(&t, "G0\nG1\nG2\nG3\nG4\n");
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
    pl_test_tprintf(&t, "G0\tG1\nG2\tG3\n");
    pl_test_inputs_edges(&in, "physical", pl_test_inputs_text(&in, "e.tsv", &t));
    pl_test_tprintf(&t, "id\tgenes\tfitness\n1\tG0;G1\t0.5\n");
    in.o.samples = pl_test_inputs_text(&in, "s.tsv", &t);
    in.o.progress = 0;
}
static void teardown(void)
{
    pl_test_inputs_free(&in);
    pl_test_dir_fini();
}
TestSuite(ontology_db, .init = setup, .fini = teardown);

/* R <- A <- L1 (G0, G1); R <- B <- L1 (a diamond); B <- L2 (G2); R (G3);
 * E has no gene; X is an unknown gene. */
static const char onto[] = "R\tA\tis_a\nR\tB\tis_a\nA\tL1\tis_a\nB\tL1\tis_a\nB\tL2\tis_a\n"
                           "L1\tG0\tgene\nL1\tG1\tgene\nL2\tG2\tgene\nR\tG3\tgene\n"
                           "R\tE\tis_a\nL2\tX\tgene\nL2\tG2\tgene\n";

static void expect_u32(const uint32_t *v, const uint32_t *want, uint32_t n, const char *what)
{
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(v[i], want[i], "%s[%u]: %u, want %u", what, i, v[i], want[i]);
}

Test(ontology_db, stored_and_read_back)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, "%s", onto);
    in.o.ontology_dcell = pl_test_inputs_text(&in, "onto.txt", &t);
    char *out = pl_test_path(dir, "db");
    pl_build_stats st;
    pl_err err = {0};
    cr_assert_eq(pl_test_inputs_build(&in, out, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(st.n_terms, 5); /* R A B L1 L2; E has no gene */
    cr_assert_eq(st.n_term_annotations, 4);
    cr_assert_eq(st.n_strata, 3);
    cr_assert_eq(st.unknown_term_genes, 1);
    pl_db *db;
    cr_assert_eq(pl_db_open(out, &db, &err), 0, "%s", err.msg);
    const pl_db_info *i = pl_db_info_get(db);
    cr_assert_eq(i->format_version, PL_FORMAT_VERSION);
    cr_assert_eq(i->n_terms, 5);
    cr_assert_eq(i->n_strata, 3);
    pl_ontology *o;
    cr_assert_eq(pl_ontology_load(db, &o, &err), 0, "%s", err.msg);
    const char *names[] = {"R", "A", "B", "L1", "L2"};
    for (int k = 0; k < 5; k++)
        cr_assert_str_eq(o->term_names[k], names[k]);
    /* children: R {A, B}, A {L1}, B {L1, L2} */
    uint32_t cptr[] = {0, 2, 3, 5, 5, 5}, cidx[] = {1, 2, 3, 3, 4};
    expect_u32(o->child_ptr, cptr, 6, "child_ptr");
    expect_u32(o->child_idx, cidx, 5, "child_idx");
    uint32_t gptr[] = {0, 1, 1, 1, 3, 4}, gidx[] = {3, 0, 1, 2};
    expect_u32(o->gene_ptr, gptr, 6, "gene_ptr");
    expect_u32(o->gene_idx, gidx, 4, "gene_idx");
    uint32_t ng[] = {4, 2, 3, 2, 1}, strat[] = {2, 1, 1, 0, 0};
    expect_u32(o->n_term_genes, ng, 5, "n_term_genes");
    expect_u32(o->stratum, strat, 5, "stratum");
    /* groups: stratum 0: L2 (1 gene), L1 (2 genes); stratum 1: A (0, 1), B (0, 2);
     * stratum 2: R */
    cr_assert_eq(o->n_groups, 5);
    uint32_t sptr[] = {0, 2, 4, 5}, gp[] = {0, 1, 2, 3, 4, 5}, gt[] = {4, 3, 1, 2, 0};
    uint32_t gg[] = {1, 2, 0, 0, 1}, gc[] = {0, 0, 1, 2, 2};
    expect_u32(o->stratum_ptr, sptr, 4, "stratum_ptr");
    expect_u32(o->group_ptr, gp, 6, "group_ptr");
    expect_u32(o->group_terms, gt, 5, "group_terms");
    expect_u32(o->group_n_genes, gg, 5, "group_n_genes");
    expect_u32(o->group_n_children, gc, 5, "group_n_children");
    /* annotations in row order: (G0, L1) (G1, L1) (G2, L2) (G3, R) */
    uint32_t ag[] = {0, 1, 2, 3}, at[] = {3, 3, 4, 0};
    expect_u32(o->ann_gene, ag, 4, "ann_gene");
    expect_u32(o->ann_term, at, 4, "ann_term");
    uint32_t terms[8], ann[8], nt;
    uint64_t na;
    int32_t p1[] = {2, 2};
    cr_assert_eq(pl_ontology_removed(o, p1, 2, terms, &nt, ann, &na), 0);
    uint32_t w1[] = {0, 2, 4}, a1[] = {2};
    cr_assert_eq(nt, 3);
    expect_u32(terms, w1, 3, "terms");
    cr_assert_eq(na, 1);
    expect_u32(ann, a1, 1, "ann");
    int32_t p2[] = {4, 1, 3};
    cr_assert_eq(pl_ontology_removed(o, p2, 3, terms, &nt, ann, &na), 0);
    uint32_t w2[] = {0, 1, 2, 3}, a2[] = {1, 3};
    cr_assert_eq(nt, 4);
    expect_u32(terms, w2, 4, "terms");
    cr_assert_eq(na, 2);
    expect_u32(ann, a2, 2, "ann");
    int32_t bad[] = {5};
    cr_assert_eq(pl_ontology_removed(o, bad, 1, terms, &nt, ann, &na), PL_ERANGE);
    pl_ontology_free(o);
    cr_assert_eq(pl_db_verify(db, &err), 0, "%s", err.msg);
    pl_db_close(db);
    free(out);
}

Test(ontology_db, without_ontology)
{
    char *out = pl_test_path(dir, "db");
    pl_err err = {0};
    cr_assert_eq(pl_test_inputs_build(&in, out, NULL, &err), 0, "%s", err.msg);
    pl_db *db;
    cr_assert_eq(pl_db_open(out, &db, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_db_info_get(db)->n_terms, 0);
    pl_ontology *o = (pl_ontology *)1;
    cr_assert_eq(pl_ontology_load(db, &o, &err), -ENOENT);
    cr_assert_null(o);
    cr_assert(strstr(err.msg, "has no ontology"), "%s", err.msg);
    pl_db_close(db);
    free(out);
}

static void fails(int code, const char *why)
{
    char *out = pl_test_path(dir, "db");
    pl_err err = {0};
    cr_assert_eq(pl_test_inputs_build(&in, out, NULL, &err), code, "%s", err.msg);
    cr_assert(strstr(err.msg, why), "%s", err.msg);
    struct stat sb;
    cr_assert_neq(lstat(out, &sb), 0, "%s exists after a failed build", out);
    free(out);
}

Test(ontology_db, conflicts_and_cycles_leave_nothing)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, "%sL1\tR\tis_a\n", onto);
    const char *cyc = pl_test_inputs_text(&in, "cyc.txt", &t);
    in.o.annotations = "x.gaf";
    fails(PL_EUSAGE, "an OBO ontology needs its annotations");
    in.o.annotations = NULL;
    in.o.min_term_genes = 2;
    fails(PL_EUSAGE, "a minimum of genes per term needs an ontology");
    in.o.min_term_genes = 0;
    in.o.ontology_dcell = cyc;
    in.o.go_namespaces = "biological_process";
    fails(PL_EUSAGE, "need an OBO ontology");
    in.o.go_namespaces = NULL;
    in.o.ontology = "x.obo";
    fails(PL_EUSAGE, "exclude each other");
    in.o.ontology = NULL;
    fails(PL_EPARSE, "the ontology has a cycle");
}

/* The term lists pl_schedule_affected() takes are checked before the map is
 * read: a first offset other than 0, and a term outside the map's terms
 * (negative, or any term of a map of none), are PL_ERANGE naming them. */
Test(ontology_db, schedule_refuses_bad_term_lists)
{
    pl_schedule_map m = {0};
    m.n_terms = 5;
    pl_schedule_affected_out out = {0};
    pl_err err = {0};
    const int32_t terms[] = {1, -1, 2};
    const int64_t late[] = {3, 3};
    cr_assert_eq(pl_schedule_affected(&m, terms, late, 1, &out, &err), PL_ERANGE);
    cr_assert_str_eq(err.msg, "term lists: ptr[0] is 3, not 0");
    const int64_t ptr[] = {0, 1, 3};
    cr_assert_eq(pl_schedule_affected(&m, terms, ptr, 2, &out, &err), PL_ERANGE);
    cr_assert_str_eq(err.msg, "term lists: sample 1 names term -1, outside 0..4");
    m.n_terms = 0;
    cr_assert_eq(pl_schedule_affected(&m, terms, ptr, 1, &out, &err), PL_ERANGE);
    cr_assert_str_eq(err.msg, "term lists: sample 0 names term 1, outside 0..0");
}

/* A map inconsistent with its own sizes is refused before a write, naming
 * the array: the wrapped output columns of widths of 2^62 (four of them sum
 * to 0, so the caller's scatter room is one column), a slot past the terms,
 * groups that do not end at the terms, the column limit. */
Test(ontology_db, schedule_refuses_bad_maps)
{
    uint32_t term_slot[] = {0, 1, 2, 3}, group_ptr[] = {0, 4}, stratum_ptr[] = {0, 1};
    uint64_t in_ptr[] = {0, 0, 0, 0, 0}, out_cols[5] = {3};
    for (int s = 0; s < 4; s++)
        out_cols[s + 1] = out_cols[s] + (1ull << 62); /* wraps at the fourth */
    int64_t in = 0, ptrs[8][2], pos[2][4], cols[2][4], gather[2][1], sample_slots[1];
    pl_schedule_map m = {4, 1, 1, term_slot, group_ptr, stratum_ptr, in_ptr, &in, out_cols};
    pl_schedule_affected_out out = {
        .group_ptr = ptrs[0], .positions = pos[0], .sample_ptr = ptrs[1],
        .sample_slots = sample_slots, .gather_ptr = ptrs[2], .gather = gather[0],
        .scatter_ptr = ptrs[3], .scatter = cols[0], .rest_group_ptr = ptrs[4],
        .rest_positions = pos[1], .rest_gather_ptr = ptrs[5], .rest_gather = gather[1],
        .rest_scatter_ptr = ptrs[6], .rest_scatter = cols[1]};
    pl_err err = {0};
    const int32_t terms[] = {0};
    const int64_t ptr[] = {0, 1};
    cr_assert_eq(pl_schedule_affected(&m, terms, ptr, 1, &out, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "schedule map: slot_out[4] = 3 is below slot_out[3] = "
                              "13835058055282163715");
    for (int s = 0; s < 4; s++)
        out_cols[s + 1] = out_cols[s] + 1;
    cr_assert_eq(pl_schedule_affected(&m, terms, ptr, 1, &out, &err), 0, "%s", err.msg);
    cr_assert(ptrs[0][1] == 1 && pos[0][0] == 0 && cols[0][0] == 3 && cols[1][2] == 6);
    term_slot[2] = 4;
    cr_assert_eq(pl_schedule_affected(&m, terms, ptr, 1, &out, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "schedule map: term_slot[2] = 4, outside 0..3");
    term_slot[2] = 2, group_ptr[1] = 5;
    cr_assert_eq(pl_schedule_affected(&m, terms, ptr, 1, &out, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "schedule map: group_ptr[1] is 5, not 4");
    group_ptr[1] = 4;
    for (int s = 0; s <= 4; s++)
        out_cols[s] += PL_SCHEDULE_MAX_COLUMNS - 7;
    cr_assert_eq(pl_schedule_affected(&m, terms, ptr, 1, &out, &err), 0, "%s", err.msg);
    out_cols[4]++;
    cr_assert_eq(pl_schedule_affected(&m, terms, ptr, 1, &out, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "schedule map: 2147483648 state columns, more than the limit "
                              "2147483647");
}
