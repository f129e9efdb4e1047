/* Ontology closure, filters and strata (preprocess/ontology) against a
 * brute-force oracle on random DAGs: diamonds, deep chains, many roots, terms
 * without genes, obsolete terms, namespaces, relations, evidence codes, NOT
 * qualifiers, unknown genes and minimum genes per term; each ontology is
 * written both as OBO + GAF and as the three-column DCell file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collate/collate.h"
#include "loader/io.h"
#include "loader/table.h"
#include "masks/masks.h"
#include "preprocess/ontology/ontology.h"
#include "testutil.h"

enum { MAXT = 80, MAXG = 40, MAXA = 400, MAXE = 400 };

/* One random ontology, in raw term numbering (0..nt-1 = definition order). */
typedef struct model {
    int nt, ng, ne, na;
    int ec[MAXE], ep[MAXE], erel[MAXE];   /* child, parent, 0 is_a / 1 part_of */
    int ns[MAXT], obsolete[MAXT];
    int ag[MAXA], at[MAXA], anot[MAXA], aiea[MAXA], aunk[MAXA], asyn[MAXA];
} model;

/* Edges go from a later-defined child to an earlier parent... except that
 * the definition order is then shuffled so that it says nothing. */
static void make(model *m, int shape)
{
    memset(m, 0, sizeof *m);
    m->nt = 5 + (int)rnd(MAXT - 5);
    m->ng = 3 + (int)rnd(MAXG - 3);
    int rank[MAXT];
    for (int i = 0; i < m->nt; i++)
        rank[i] = i;
    for (int i = m->nt - 1; i > 0; i--) {
        int j = (int)rnd((uint32_t)i + 1), x = rank[i];
        rank[i] = rank[j];
        rank[j] = x;
    }
    for (int r = 1; r < m->nt && m->ne < MAXE - 4; r++) {
        int k = shape == 0 ? 1 + (int)rnd(3) : shape == 1 ? 1 + (rnd(5) == 0) : (rnd(3) != 0);
        for (int j = 0; j < k; j++) {
            int p = shape == 1 ? r - 1 - (int)rnd(r < 3 ? (uint32_t)r : 3) : (int)rnd((uint32_t)r);
            m->ec[m->ne] = rank[r];
            m->ep[m->ne] = rank[p];
            m->erel[m->ne++] = rnd(4) == 0;
        }
    }
    for (int t = 0; t < m->nt; t++) {
        m->ns[t] = rnd(5) == 0;
        m->obsolete[t] = rnd(15) == 0;
    }
    m->na = (int)rnd(MAXA);
    for (int i = 0; i < m->na; i++) {
        m->ag[i] = (int)rnd((uint32_t)m->ng);
        /* leaves get most annotations: the deep end of the chain */
        m->at[i] = rnd(3) ? rank[m->nt - 1 - (int)rnd((uint32_t)(m->nt / 3 + 1))]
                          : (int)rnd((uint32_t)m->nt);
        m->anot[i] = rnd(12) == 0;
        m->aiea[i] = rnd(6) == 0;
        m->aunk[i] = rnd(20) == 0;
        m->asyn[i] = rnd(2);
    }
}

/* What the filters keep of the model: terms, edges, annotation rows. */
typedef struct want {
    int keep[MAXT], edge[MAXE], row[MAXA];
    int g[MAXT][MAXG];  /* genes(T) over kept terms (raw numbering) */
    int removed[MAXT];
} want;

static void reach_genes(const model *m, const want *w, int t, int *g, int *seen)
{
    if (seen[t]++)
        return;
    for (int i = 0; i < m->na; i++)
        if (w->row[i] && m->at[i] == t)
            g[m->ag[i]] = 1;
    for (int e = 0; e < m->ne; e++)
        if (w->edge[e] && m->ep[e] == t)
            reach_genes(m, w, m->ec[e], g, seen);
}

/* Nearest kept terms from removed `t` along edges up (dir 0) or down. */
static void nearest(const model *m, const want *w, int t, int dir, int *out)
{
    for (int e = 0; e < m->ne; e++) {
        if (!w->edge[e] || (dir ? m->ep[e] : m->ec[e]) != t)
            continue;
        int o = dir ? m->ec[e] : m->ep[e];
        if (w->removed[o])
            nearest(m, w, o, dir, out);
        else
            out[o] = 1;
    }
}

static int stratum_of(const model *m, const want *w, const int *newid, const pl_onto *on, int t)
{
    int s = 0, ch[MAXT] = {0};
    nearest(m, w, t, 1, ch);
    for (int c = 0; c < m->nt; c++)
        if (ch[c] && newid[c] >= 0) {
            int x = stratum_of(m, w, newid, on, c) + 1;
            s = x > s ? x : s;
        }
    return s;
}

/* The oracle: what the filters keep, genes(T) by brute-force closure, the
 * removed terms and the new term numbers (newid[t] < 0: dropped).
 * @return the kept terms. */
static int oracle(const model *m, const pl_onto_opts *o, int obo, want *w_out, int *newid)
{
    want w = {0};
    for (int t = 0; t < m->nt; t++)
        w.keep[t] = !m->obsolete[t] || !obo;
    if (obo && o->namespaces && !strcmp(o->namespaces, "ns0"))
        for (int t = 0; t < m->nt; t++)
            w.keep[t] &= m->ns[t] == 0;
    for (int e = 0; e < m->ne; e++)
        w.edge[e] = w.keep[m->ec[e]] && w.keep[m->ep[e]] &&
                    (!obo || !m->erel[e] || (o->relations && strstr(o->relations, "part_of")));
    for (int i = 0; i < m->na; i++)
        w.row[i] = w.keep[m->at[i]] && !m->aunk[i] && !m->anot[i] &&
                   (!obo || !(m->aiea[i] && o->exclude_evidence));
    int min = o->min_term_genes ? (int)o->min_term_genes : 1, k = 0;
    for (int t = 0; t < m->nt; t++) {
        int seen[MAXT] = {0}, n = 0;
        if (w.keep[t])
            reach_genes(m, &w, t, w.g[t], seen);
        for (int g = 0; g < m->ng; g++)
            n += w.g[t][g];
        w.removed[t] = w.keep[t] && n < min;
        newid[t] = w.keep[t] && !w.removed[t] ? k++ : -1;
    }
    *w_out = w;
    return k;
}

/* The oracle's annotation positions: kept rows moved to the nearest kept
 * ancestors, in the order of their first occurrence. @return their count. */
static uint64_t oracle_ann(const model *m, const want *w, const int *newid, uint32_t *ag,
                           uint32_t *at)
{
    uint64_t n = 0;
    static int seen[MAXG][MAXT];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < m->na; i++) {
        if (!w->row[i])
            continue;
        int to[MAXT] = {0};
        if (w->removed[m->at[i]])
            nearest(m, w, m->at[i], 0, to);
        else
            to[m->at[i]] = 1;
        for (int t = 0; t < m->nt; t++)
            if (to[t] && !seen[m->ag[i]][t]++) {
                ag[n] = (uint32_t)m->ag[i];
                at[n++] = (uint32_t)newid[t];
            }
    }
    return n;
}

static void check(const model *m, const pl_onto_opts *o, const pl_onto *on, int obo)
{
    static want w;
    int newid[MAXT], k = oracle(m, o, obo, &w, newid);
    cr_assert_eq(on->n_terms, (uint32_t)k);
    /* terms, |genes(T)| (unchanged by the filter), children after re-attachment */
    for (int t = 0; t < m->nt; t++) {
        if (newid[t] < 0)
            continue;
        uint32_t T = (uint32_t)newid[t];
        char id[16];
        snprintf(id, sizeof id, "T%d", t);
        cr_assert_str_eq(on->term_id[T], id);
        int n = 0, ch[MAXT] = {0};
        for (int g = 0; g < m->ng; g++)
            n += w.g[t][g];
        cr_assert_eq(on->ngenes[T], (uint32_t)n, "genes(%s)", id);
        nearest(m, &w, t, 1, ch);
        uint32_t i = on->child_ptr[T];
        for (int c = 0; c < m->nt; c++)
            if (ch[c] && newid[c] >= 0) {
                cr_assert_lt(i, on->child_ptr[T + 1], "children of %s", id);
                cr_assert_eq(on->child_idx[i++], (uint32_t)newid[c]);
            }
        cr_assert_eq(i, on->child_ptr[T + 1], "children of %s", id);
        cr_assert_eq(on->stratum[T], (uint32_t)stratum_of(m, &w, newid, on, t), "stratum %s", id);
    }
    /* annotations: kept rows moved to the nearest kept ancestors, first occurrence */
    static uint32_t ag[MAXA * MAXT], at[MAXA * MAXT];
    uint64_t n = oracle_ann(m, &w, newid, ag, at);
    cr_assert_eq(on->n_ann, n);
    for (uint64_t a = 0; a < n; a++) {
        cr_assert_eq(on->ann_gene[a], ag[a]);
        cr_assert_eq(on->ann_term[a], at[a]);
    }
    /* direct genes: those of the annotations */
    for (uint32_t T = 0; T < on->n_terms; T++)
        for (uint32_t i = on->dgene_ptr[T]; i < on->dgene_ptr[T + 1]; i++) {
            uint64_t a = 0;
            while (a < on->n_ann && !(on->ann_term[a] == T && on->ann_gene[a] == on->dgene_idx[i]))
                a++;
            cr_assert_lt(a, on->n_ann);
            cr_assert(i == on->dgene_ptr[T] || on->dgene_idx[i - 1] < on->dgene_idx[i]);
        }
    /* groups: every term once, sorted keys, strata in order */
    static int once[MAXT];
    memset(once, 0, sizeof once);
    for (uint32_t s = 0; s < on->n_strata; s++) {
        cr_assert_lt(on->stratum_ptr[s], on->stratum_ptr[s + 1], "stratum %u is empty", s);
        for (uint32_t gi = on->stratum_ptr[s]; gi < on->stratum_ptr[s + 1]; gi++) {
            if (gi > on->stratum_ptr[s])
                cr_assert(on->group_ngenes[gi - 1] < on->group_ngenes[gi] ||
                          (on->group_ngenes[gi - 1] == on->group_ngenes[gi] &&
                           on->group_nchildren[gi - 1] < on->group_nchildren[gi]));
            for (uint32_t i = on->group_ptr[gi]; i < on->group_ptr[gi + 1]; i++) {
                uint32_t T = on->group_terms[i];
                cr_assert_eq(on->stratum[T], s);
                cr_assert_eq(on->dgene_ptr[T + 1] - on->dgene_ptr[T], on->group_ngenes[gi]);
                cr_assert_eq(on->child_ptr[T + 1] - on->child_ptr[T], on->group_nchildren[gi]);
                once[T]++;
            }
        }
    }
    cr_assert_eq(on->stratum_ptr[on->n_strata], on->n_groups);
    for (uint32_t T = 0; T < on->n_terms; T++)
        cr_assert_eq(once[T], 1);
    /* samples: affected terms and removed annotations as unions of per-gene sets */
    for (int rep = 0; rep < 20; rep++) {
        int P[MAXG] = {0}, hit[MAXT] = {0};
        for (int j = 0, c = 1 + (int)rnd(3); j < c; j++)
            P[rnd((uint32_t)m->ng)] = 1;
        static uint8_t ann[MAXA];
        memset(ann, 0, sizeof ann);
        for (int g = 0; g < m->ng; g++) {
            if (!P[g])
                continue;
            for (uint64_t i = on->gterm_ptr[g]; i < on->gterm_ptr[g + 1]; i++)
                hit[on->gterm_idx[i]] = 1;
            for (uint64_t i = on->gann_ptr[g]; i < on->gann_ptr[g + 1]; i++)
                ann[on->gann_idx[i]] = 1;
        }
        for (int t = 0; t < m->nt; t++) {
            if (newid[t] < 0)
                continue;
            int a = 0;
            for (int g = 0; g < m->ng; g++)
                a |= P[g] && w.g[t][g];
            cr_assert_eq(hit[newid[t]], a, "term T%d affected", t);
        }
        for (uint64_t i = 0; i < on->n_ann; i++)
            cr_assert_eq(ann[i], P[on->ann_gene[i]]);
    }
}

static pl_strtab genes;

static void write_obo(const model *m, const char *dir, char **obo, char **gaf)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, "format-version: 1.2\nontology: test\n\n[Typedef]\nid: part_of\n"
                        "name: part of\n\n");
    for (int i = 0; i < m->nt; i++) {
        pl_test_tprintf(&t, "[Term]\nid: T%d\nname: term %d\nnamespace: ns%d\n", i, i, m->ns[i]);
        if (m->obsolete[i])
            pl_test_tprintf(&t, "is_obsolete: true\n");
        pl_test_tprintf(&t, "alt_id: ALT%d\n", i);
        for (int e = 0; e < m->ne; e++)
            if (m->ec[e] == i)
                pl_test_tprintf(&t, m->erel[e] ? "relationship: part_of T%d ! a part\n"
                                               : "is_a: T%d {source=\"x\"} ! parent\n", m->ep[e]);
        pl_test_tprintf(&t, "\n");
    }
    *obo = pl_test_put_text(dir, "t.obo", &t);
    pl_test_tprintf(&t, "!gaf-version: 2.0\n");
    for (int i = 0; i < m->na; i++) {
        char g[16];
        snprintf(g, sizeof g, m->aunk[i] ? "UNK%d" : "G%d", m->ag[i]);
        pl_test_tprintf(&t, "SGD\tS%d\t%s\t%s\t%s%d\tPMID:1\t%s\t\tP\tname\t%s\tgene\ttaxon:4932\t"
                        "20110101\tSGD\t\t\n", m->ag[i], m->asyn[i] ? "SYM" : g,
                        m->anot[i] ? "NOT|contributes_to" : "", i % 3 ? "T" : "ALT", m->at[i],
                        m->aiea[i] ? "IEA" : "IDA", m->asyn[i] ? g : "x|y");
    }
    *gaf = pl_test_put_text(dir, "t.gaf", &t);
}

static char *write_dcell(const model *m, const char *dir)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, "# parent child type\n");
    for (int e = 0; e < m->ne; e++)
        pl_test_tprintf(&t, "T%d\tT%d\tdefault\n", m->ep[e], m->ec[e]);
    for (int i = 0; i < m->na; i++)
        if (!m->anot[i])
            pl_test_tprintf(&t, "T%d %s%d gene\n", m->at[i], m->aunk[i] ? "UNK" : "G", m->ag[i]);
    /* terms of no edge and no row are still named: as parents of nothing */
    return pl_test_put_text(dir, "t.txt", &t);
}

Test(ontology_oracle, random_dags)
{
    char *dir = pl_test_tmpdir();
    cr_assert_eq(pl__strtab_init(&genes), 0);
    for (int g = 0; g < MAXG; g++) {
        char s[16];
        snprintf(s, sizeof s, "G%d", g);
        cr_assert_geq(pl__strtab_intern(&genes, s, strlen(s), NULL), 0);
    }
    static model m;
    for (int it = 0; it < 300; it++) {
        rng = 1000 + (uint64_t)it;
        make(&m, it % 3);
        pl_onto_opts o = {.min_term_genes = (uint32_t)rnd(4)};
        if (it % 4 == 1)
            o.relations = "is_a,part_of";
        if (it % 5 == 2)
            o.namespaces = "ns0";
        if (it % 2)
            o.exclude_evidence = "IEA,TAS";
        for (int obo = 0; obo < 2; obo++) {
            pl_onto_raw r = {0};
            pl_onto_stats st = {0};
            pl_err err = {0};
            if (obo) {
                char *a, *b;
                write_obo(&m, dir, &a, &b);
                cr_assert_eq(pl__onto_read_obo(&r, a, &o, &st, &err), 0, "%s", err.msg);
                cr_assert_eq(pl__onto_read_gaf(&r, b, &o, pl_test_resolve, &genes, &st, &err), 0,
                             "%s", err.msg);
                free(a);
                free(b);
            } else {
                /* the DCell file names terms in edge order: define them first */
                for (int t = 0; t < m.nt; t++) {
                    char s[16];
                    uint32_t k;
                    snprintf(s, sizeof s, "T%d", t);
                    cr_assert_eq(pl__onto_raw_term(&r, s, strlen(s), &k), 0);
                    cr_assert_eq(pl__onto_raw_define(&r, k), 0);
                }
                char *a = write_dcell(&m, dir);
                cr_assert_eq(pl__onto_read_dcell(&r, a, pl_test_resolve, &genes, 0, &st, &err), 0,
                             "%s", err.msg);
                free(a);
            }
            pl_onto on;
            pl_onto_opts bo = o;
            if (!obo)
                bo.namespaces = NULL;
            int rc = pl__onto_build(&r, MAXG, &bo, &on, &st, &err);
            if (rc == PL_EUSAGE) { /* no term of ns0 at all */
                cr_assert(strstr(err.msg, "namespace 'ns0'"), "%s", err.msg);
            } else {
                cr_assert_eq(rc, 0, "%s", err.msg);
                pl_onto_opts co = bo;
                if (!obo)
                    co.exclude_evidence = NULL;
                check(&m, &co, &on, obo);
                uint64_t unk = 0;
                for (int i = 0; i < m.na; i++)
                    unk += m.aunk[i] && !m.anot[i] && (!obo || !(m.aiea[i] && o.exclude_evidence));
                cr_assert_eq(st.unknown_genes.total, unk);
            }
            pl__onto_free(&on);
            pl__onto_raw_free(&r);
            pl__onto_stats_free(&st);
        }
    }
    pl__strtab_free(&genes);
    pl_test_rmtree(dir);
    free(dir);
}

/* The descriptor of array `name` of a checked slot, or NULL. */
static const struct pl_slot_array *slot_array(const unsigned char *slot, const char *name)
{
    const struct pl_slot_header *h = (const void *)slot;
    const struct pl_slot_array *a = (const void *)(h + 1);
    for (uint32_t i = 0; i < h->n_arrays; i++)
        if (!strcmp(a[i].name, name))
            return &a[i];
    return NULL;
}

/* One removed list of a collated batch, its ptr, and its dense mask when the
 * slot has one, against the oracle's flags want[i][x] (x < len). */
static void check_slot_list(const unsigned char *slot, const char *list, uint32_t n,
                            uint64_t len, const uint8_t *want, uint32_t dense)
{
    char name[PL_SLOT_NAME_MAX];
    snprintf(name, sizeof name, "%s/ptr", list);
    const struct pl_slot_array *pa = slot_array(slot, name);
    snprintf(name, sizeof name, "%s/removed", list);
    const struct pl_slot_array *ra = slot_array(slot, name);
    cr_assert(pa && ra, "%s missing", list);
    cr_assert_str_eq(pa->dtype, "<i8");
    cr_assert_str_eq(ra->dtype, "<i4");
    cr_assert_eq(pa->shape[0], n + 1);
    const int64_t *ptr = (const int64_t *)(slot + pa->offset);
    const int32_t *rem = (const int32_t *)(slot + ra->offset);
    cr_assert_eq(ptr[0], 0);
    cr_assert_eq((uint64_t)ptr[n], ra->shape[0], "%s: ptr[n] %lld of %llu entries", list,
                 (long long)ptr[n], (unsigned long long)ra->shape[0]);
    snprintf(name, sizeof name, "%s/mask", list);
    const struct pl_slot_array *ma = slot_array(slot, name);
    cr_assert_eq(ma != NULL, dense != PL_DENSE_NONE, "%s: mask present %d", list, ma != NULL);
    uint64_t words = (len + 63) / 64;
    if (ma)
        cr_assert(ma->ndim == 2 && ma->shape[0] == n &&
                      ma->shape[1] == (dense == PL_DENSE_BOOL ? len : words),
                  "%s: mask shape", list);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *w = want + (uint64_t)i * len;
        int64_t j = ptr[i];
        for (uint64_t x = 0; x < len; x++) {
            if (w[x]) {
                cr_assert_lt(j, ptr[i + 1], "%s: sample %u lacks %llu", list, i,
                             (unsigned long long)x);
                cr_assert_eq(rem[j], (int32_t)x, "%s: sample %u has %d, oracle %llu", list, i,
                             rem[j], (unsigned long long)x);
                j++;
            }
            if (!ma)
                continue;
            const unsigned char *row = slot + ma->offset +
                                       (uint64_t)i * (dense == PL_DENSE_BOOL ? len : 8 * words);
            int kept = dense == PL_DENSE_BOOL ? row[x]
                                              : (int)((((const uint64_t *)row)[x / 64] >> (x % 64)) & 1);
            cr_assert_eq(kept, !w[x], "%s/mask: sample %u entry %llu", list, i,
                         (unsigned long long)x);
        }
        cr_assert_eq(j, ptr[i + 1], "%s: sample %u has more entries than the oracle", list, i);
    }
}

/* Batches collated with the ontology lists (collate/collate.c) on databases
 * built from random DAGs (the three-column file through pl_build), against
 * the brute-force closure: per sample, term T affected iff genes(T) meets
 * the deleted set, annotation (g, T) removed iff g is deleted; sparse, bits
 * and bool; the slot sized by pl__collate_slot_bytes with the samples'
 * pl__collate_onto_bound. Terms and annotations are matched by name and gene
 * (the database numbers terms by first appearance in the file). */
Test(ontology_oracle, collated_batches)
{
    char *dir = pl_test_tmpdir();
    static model m;
    static want w;
    static uint32_t ag[MAXA * MAXT], at[MAXA * MAXT];
    for (int it = 0; it < 60; it++) {
        rng = 5000 + (uint64_t)it;
        make(&m, it % 3);
        pl_onto_opts o = {.min_term_genes = (uint32_t)rnd(4)};
        int newid[MAXT], k = oracle(&m, &o, 0, &w, newid);
        uint64_t na = oracle_ann(&m, &w, newid, ag, at);
        pl_test_inputs in = {.dir = dir};
        pl_test_text t = {0};
        for (int g = 0; g < m.ng; g++)
            pl_test_tprintf(&t, "G%d\n", g);
        in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
        for (int e = 0; e < 2 * m.ng; e++)
            pl_test_tprintf(&t, "G%u\tG%u\n", rnd((uint32_t)m.ng), rnd((uint32_t)m.ng));
        pl_test_inputs_edges(&in, "physical", pl_test_inputs_text(&in, "e.tsv", &t));
        /* samples of 1 to 4 genes, and one deleting every gene (the bound
         * then is the list's length) */
        enum { NS = 70 };
        static uint8_t P[NS][MAXG];
        memset(P, 0, sizeof P);
        pl_test_tprintf(&t, "id\tgenes\tfitness\n");
        for (int i = 0; i < NS; i++) {
            for (int j = 0, c = 1 + (int)rnd(4); j < c; j++)
                P[i][rnd((uint32_t)m.ng)] = 1;
            if (i == NS / 2)
                memset(P[i], 1, (size_t)m.ng);
            pl_test_tprintf(&t, "%d\t", i);
            for (int g = 0, first = 1; g < m.ng; g++)
                if (P[i][g]) {
                    pl_test_tprintf(&t, "%sG%d", first ? "" : ";", g);
                    first = 0;
                }
            pl_test_tprintf(&t, "\t0.5\n");
        }
        in.o.samples = pl_test_inputs_text(&in, "s.tsv", &t);
        char *dcell = write_dcell(&m, dir);
        in.o.ontology_dcell = dcell;
        in.o.min_term_genes = o.min_term_genes;
        in.o.progress = 0;
        char *out = pl_test_path(dir, "db");
        pl_err err = {0};
        cr_assert_eq(pl_test_inputs_build(&in, out, NULL, &err), 0, "iteration %d: %s", it,
                     err.msg);
        pl_db *db;
        pl_graph *g;
        pl_ontology *on;
        pl__table tab;
        cr_assert_eq(pl_db_open(out, &db, &err), 0, "%s", err.msg);
        cr_assert_eq(pl_db_info_get(db)->n_terms, (uint64_t)k, "iteration %d", it);
        if (k == 0) { /* no term keeps a gene */
            pl_db_close(db);
            goto next;
        }
        cr_assert_eq(pl_graph_load(db, &g, &err), 0, "%s", err.msg);
        cr_assert_eq(pl__table_load(db, g, PL_IO_PREAD, &tab, &err), 0, "%s", err.msg);
        cr_assert_eq(pl_ontology_load(db, &on, &err), 0, "%s", err.msg);
        cr_assert_eq(on->n_terms, (uint32_t)k, "iteration %d", it);
        cr_assert_eq(on->n_annotations, na, "iteration %d", it);
        /* the database's term and annotation numbers in the oracle's terms */
        int raw_of[MAXT];
        for (uint32_t T = 0; T < on->n_terms; T++) {
            raw_of[T] = atoi(on->term_names[T] + 1);
            cr_assert_geq(newid[raw_of[T]], 0, "term %s kept", on->term_names[T]);
        }
        for (uint64_t a = 0; a < na; a++) { /* the same (gene, term) pairs */
            uint64_t b = 0;
            while (b < na && !(ag[b] == on->ann_gene[a] &&
                               (int)at[b] == newid[raw_of[on->ann_term[a]]]))
                b++;
            cr_assert_lt(b, na, "annotation %llu not in the oracle", (unsigned long long)a);
        }
        uint32_t dense = (uint32_t)(it % 3), B = 1 + rnd(24);
        pl__collate_cfg c;
        pl__collate_cfg_init(&c, db, g, B, dense);
        c.onto = on;
        static uint8_t want_t[32 * MAXT], want_a[32 * MAXA * MAXT];
        int32_t *scratch = malloc((tab.max_kind_bound + PL__MASKS_PAD) * 4);
        cr_assert_not_null(scratch);
        for (uint64_t first = 0; first < tab.n; first += B) {
            uint32_t n = (uint32_t)(tab.n - first < B ? tab.n - first : B);
            uint64_t ids[32], rows[32], genes = 0, positions = 0;
            const int32_t *gs[32];
            uint32_t ng[32];
            const float *labels[32];
            for (uint32_t i = 0; i < n; i++) {
                uint64_t r = first + i;
                rows[i] = r;
                ids[i] = tab.ids[r];
                gs[i] = tab.genes + tab.gptr[r];
                ng[i] = (uint32_t)(tab.gptr[r + 1] - tab.gptr[r]);
                labels[i] = tab.labels + r * tab.n_labels;
                genes += ng[i];
                for (uint32_t kind = 0; kind < g->n_lists; kind++)
                    positions += pl__masks_bound(g, kind, gs[i], ng[i]);
                positions += pl__collate_onto_bound(&c, gs[i], ng[i]);
                /* the oracle: by the sample's id, its deleted set P */
                memset(want_t + (uint64_t)i * on->n_terms, 0, on->n_terms);
                memset(want_a + (uint64_t)i * na, 0, na);
                for (uint32_t T = 0; T < on->n_terms; T++)
                    for (int x = 0; x < m.ng; x++)
                        want_t[(uint64_t)i * on->n_terms + T] |=
                            P[ids[i]][x] && w.g[raw_of[T]][x];
                for (uint64_t a = 0; a < na; a++)
                    want_a[(uint64_t)i * na + a] = P[ids[i]][on->ann_gene[a]];
            }
            uint64_t cap = pl__collate_slot_bytes(&c, n, genes, positions);
            unsigned char *slot = aligned_alloc(4096, (cap + 4095) & ~(uint64_t)4095);
            cr_assert_not_null(slot);
            pl__batch_src src = {n, ids, rows, gs, ng, labels, 0, 0, 0, NULL};
            cr_assert_eq(pl__collate(&c, &src, slot, cap, first / B, 0, scratch,
                                     tab.max_kind_bound + PL__MASKS_PAD, &err),
                         0, "iteration %d batch %llu: %s", it,
                         (unsigned long long)(first / B), err.msg);
            cr_assert_eq(pl_slot_check(slot, cap, &err), 0, "%s", err.msg);
            check_slot_list(slot, "ontology/term", n, on->n_terms, want_t, dense);
            check_slot_list(slot, "ontology/annotation", n, na, want_a, dense);
            free(slot);
        }
        free(scratch);
        pl_ontology_free(on);
        pl__table_free(&tab);
        pl_graph_free(g);
        pl_db_close(db);
    next:
        pl_test_rmtree(out);
        free(out);
        free(dcell);
        pl_test_inputs_free(&in);
    }
    pl_test_rmtree(dir);
    free(dir);
}
