/* The ontology readers and build (preprocess/ontology) on arbitrary bytes.
 * The first byte picks the input: an OBO file (then built with every
 * relation, or with is_a and one namespace), a three-column file or DCell
 * topology file, or a GAF file after a fixed OBO. A built ontology must hold
 * its invariants (strata above the children's, each term in one group of its
 * key, annotation and per-gene indices in range, genes(T) at least the
 * direct genes), a topology file read gives each child -> term link once
 * (children repeated on a TERMS: line are counted, not linked again), and
 * every error must name the memory file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzzutil.h"
#include "preprocess/ontology/ontology.h"

static const char *const genes[] = {"G0", "G1", "G2", "G3", "YAL001C", "ACT1"};
enum { N_GENES = 6 };

static int64_t resolve(void *ctx, const char *s, size_t len)
{
    (void)ctx;
    for (int i = 0; i < N_GENES; i++)
        if (strlen(genes[i]) == len && !memcmp(genes[i], s, len))
            return i;
    return -1;
}

static void check(const pl_onto *o)
{
    uint32_t T = o->n_terms, seen_groups = 0;
    for (uint32_t t = 0; t < T; t++) {
        uint32_t want = 0;
        for (uint32_t i = o->child_ptr[t]; i < o->child_ptr[t + 1]; i++) {
            if (o->child_idx[i] >= T)
                fuzz_fail("child out of range");
            if (o->stratum[o->child_idx[i]] + 1 > want)
                want = o->stratum[o->child_idx[i]] + 1;
        }
        if (o->stratum[t] != want || want >= o->n_strata)
            fuzz_fail("term %u: stratum %u, want %u", t, o->stratum[t], want);
        if (o->ngenes[t] < o->dgene_ptr[t + 1] - o->dgene_ptr[t] || o->ngenes[t] == 0)
            fuzz_fail("term %u: genes(T) below its direct genes", t);
    }
    for (uint32_t s = 0; s < o->n_strata; s++)
        for (uint32_t k = o->stratum_ptr[s]; k < o->stratum_ptr[s + 1]; k++, seen_groups++)
            for (uint32_t i = o->group_ptr[k]; i < o->group_ptr[k + 1]; i++) {
                uint32_t t = o->group_terms[i];
                if (t >= T || o->stratum[t] != s ||
                    o->dgene_ptr[t + 1] - o->dgene_ptr[t] != o->group_ngenes[k] ||
                    o->child_ptr[t + 1] - o->child_ptr[t] != o->group_nchildren[k])
                    fuzz_fail("group %u: term %u out of its key", k, t);
            }
    if (seen_groups != o->n_groups || (T && o->group_ptr[o->n_groups] != T))
        fuzz_fail("groups do not cover the terms");
    for (uint64_t i = 0; i < o->n_ann; i++)
        if (o->ann_gene[i] >= N_GENES || o->ann_term[i] >= T)
            fuzz_fail("annotation %llu out of range", (unsigned long long)i);
    for (uint32_t g = 0; g < N_GENES; g++)
        for (uint64_t i = o->gterm_ptr[g]; i < o->gterm_ptr[g + 1]; i++)
            if (o->gterm_idx[i] >= T)
                fuzz_fail("gene %u: affected term out of range", g);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A topology file's edges: one per (child, term), as many as it counts. */
static void check_links(const pl_onto_raw *r, const pl_onto_stats *st)
{
    if (r->n_edges != st->edges_read)
        fuzz_fail("%llu edges where %llu were counted", (unsigned long long)r->n_edges,
                  (unsigned long long)st->edges_read);
    uint64_t *pair = malloc((r->n_edges ? r->n_edges : 1) * sizeof *pair);
    if (!pair)
        return;
    for (uint64_t e = 0; e < r->n_edges; e++)
        pair[e] = (uint64_t)r->e_child[e] << 32 | r->e_parent[e];
    qsort(pair, r->n_edges, sizeof *pair, cmp_u64);
    for (uint64_t e = 1; e < r->n_edges; e++)
        if (pair[e] == pair[e - 1])
            fuzz_fail("a child linked twice to its term");
    free(pair);
}

static const char obo[] = "[Term]\nid: GO:1\nnamespace: bp\n\n[Term]\nid: GO:2\nnamespace: bp\n"
                          "alt_id: GO:20\nis_a: GO:1\n\n[Term]\nid: GO:3\nnamespace: cc\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned pick;
    char path[64], opath[64];
    int fd = fuzz_pick_file(data, size, 4, &pick, path), ofd = -1;
    if (fd < 0)
        return 0;
    pl_err err = {0};
    pl_onto_raw r = {0};
    pl_onto_stats st = {0};
    pl_onto_opts o = {.min_term_genes = data[0] >> 4};
    if (pick == 1) {
        o.relations = "is_a";
        o.namespaces = "bp";
    } else if (pick != 2) {
        o.relations = "is_a,part_of,regulates";
    }
    int rc;
    if (pick <= 1) {
        rc = pl__onto_read_obo(&r, path, &o, &st, &err);
    } else if (pick == 2) {
        rc = pl__onto_read_dcell(&r, path, resolve, NULL, data[0] >> 7, &st, &err);
        if (rc == 0 && st.terms_read) /* blocks: only the topology reader counts terms */
            check_links(&r, &st);
    } else {
        ofd = fuzz_memfile((const uint8_t *)obo, sizeof obo - 1, opath);
        if (pl__onto_read_obo(&r, opath, &o, &st, &err) < 0)
            fuzz_fail("the fixed OBO: %s", err.msg);
        o.exclude_evidence = "IEA";
        rc = pl__onto_read_gaf(&r, path, &o, resolve, NULL, &st, &err);
    }
    fuzz_expect_named(rc, -ENOMEM, err.msg, path);
    if (rc == 0) {
        pl_onto on;
        rc = pl__onto_build(&r, N_GENES, &o, &on, &st, &err);
        fuzz_expect_named(rc, -ENOMEM, err.msg, pick == 3 ? opath : path);
        if (rc == 0)
            check(&on);
        pl__onto_free(&on);
    }
    pl__onto_raw_free(&r);
    pl__onto_stats_free(&st);
    close(fd);
    if (ofd >= 0)
        close(ofd);
    return 0;
}
