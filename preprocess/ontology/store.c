/* The ontology in `pertload build`: inputs, unknown genes, storage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <roaring/roaring.h>

#include "store.h"
#include "src/core/error.h"

static int64_t find_gene(void *ctx, const char *s, size_t len)
{
    return pl__strtab_find(ctx, s, len);
}

static int check_opts(const pl_build_opts *o, pl_err *err)
{
    PL_FAIL_IF(o->ontology && o->ontology_dcell, err, PL_EUSAGE,
               "an OBO ontology and a three-column ontology exclude each other");
    PL_FAIL_IF(!o->ontology != !o->annotations, err, PL_EUSAGE,
               "an OBO ontology needs its annotations (GAF) and annotations their ontology");
    PL_FAIL_IF(o->evidence && o->exclude_evidence, err, PL_EUSAGE,
               "evidence codes to keep and to exclude exclude each other");
    int go = o->go_namespaces || o->go_relations || o->evidence || o->exclude_evidence;
    PL_FAIL_IF(go && !o->ontology, err, PL_EUSAGE,
               "namespaces, relations and evidence codes need an OBO ontology");
    PL_FAIL_IF(o->min_term_genes && !o->ontology && !o->ontology_dcell, err, PL_EUSAGE,
               "a minimum of genes per term needs an ontology");
    return 0;
}

void pl__onto_warn(const pl_onto_stats *st, const char *src)
{
    if (st->count_notes) {
        for (const char *p = st->count_notes; *p;) {
            const char *nl = strchr(p, '\n');
            fprintf(stderr, "warning: %.*s\n", (int)(nl - p), p);
            p = nl + 1;
        }
        if (st->count_mismatches > PL_ONTO_NOTES)
            fprintf(stderr, "warning: %s: %llu more ROOT: counts differ from their term's gene "
                    "closure\n", src, (unsigned long long)(st->count_mismatches - PL_ONTO_NOTES));
    }
    if (st->repeated_children)
        fprintf(stderr, "%s: %llu children named again on their TERMS: line (one link each)\n",
                src, (unsigned long long)st->repeated_children);
}

static void report(const pl_onto_stats *st, const char *src)
{
    pl__onto_warn(st, src);
    const pl_unres *u = &st->unknown_genes;
    uint32_t d = pl__unres_distinct(u);
    if (!d)
        return;
    fprintf(stderr, "%s: %llu annotation rows name %u genes not in the gene list:", src,
            (unsigned long long)u->total, d);
    for (uint32_t i = 0; i < d && i < 20; i++) {
        uint64_t count, line;
        const char *name = pl__unres_name(u, i, &count, &line);
        fprintf(stderr, " %s (%llu, line %llu)%s", name, (unsigned long long)count,
                (unsigned long long)line, i + 1 < d ? "," : "");
    }
    fprintf(stderr, "%s\n", d > 20 ? " ..." : "");
}

int pl__onto_read(const pl_onto_input *in, uint32_t n_genes, pl_onto *out, pl_onto_stats *st,
                  pl_err *err)
{
    memset(out, 0, sizeof *out);
    pl_onto_raw r = {0};
    int rc;
    if (in->obo) {
        rc = pl__onto_read_obo(&r, in->obo, &in->opts, st, err);
        if (rc == 0)
            rc = pl__onto_read_gaf(&r, in->gaf, &in->opts, in->resolve, in->ctx, st, err);
    } else {
        rc = pl__onto_read_dcell(&r, in->dcell, in->resolve, in->ctx, in->opts.strict, st,
                                 err);
    }
    if (rc == 0)
        rc = pl__onto_build(&r, n_genes, &in->opts, out, st, err);
    if (rc == 0 && out->n_terms == 0)
        rc = pl__err(err, PL_EPARSE, "%s: no term of the ontology is left with a gene",
                     in->obo ? in->obo : in->dcell);
    pl__onto_raw_free(&r);
    return rc;
}

int pl__onto_from_build(const pl_build_opts *o, const pl_strtab *genes, int quiet, pl_onto *out,
                        uint64_t *unknown, pl_err *err)
{
    memset(out, 0, sizeof *out);
    *unknown = 0;
    PL_TRY(check_opts(o, err));
    if (!o->ontology && !o->ontology_dcell)
        return 0;
    pl_onto_input in = {.obo = o->ontology, .gaf = o->annotations, .dcell = o->ontology_dcell,
                        .opts = {.namespaces = o->go_namespaces, .relations = o->go_relations,
                                 .evidence = o->evidence,
                                 .exclude_evidence = o->exclude_evidence,
                                 .min_term_genes = o->min_term_genes},
                        .resolve = find_gene, .ctx = (void *)genes};
    pl_onto_stats st = {0};
    int rc = pl__onto_read(&in, (uint32_t)genes->n, out, &st, err);
    if (rc == 0 && !quiet)
        report(&st, o->ontology ? o->annotations : o->ontology_dcell);
    *unknown = st.unknown_genes.total;
    pl__onto_stats_free(&st);
    return rc;
}

/* The per-gene sets of one kind, as bitmaps in key order. */
static int put_gene_sets(MDB_txn *txn, MDB_dbi dbi, uint32_t kind, uint32_t n_genes,
                         const uint64_t *ptr, const uint32_t *idx, pl_err *err)
{
    char *ser = NULL;
    size_t cap = 0;
    int rc = 0;
    for (uint32_t g = 0; rc == 0 && g < n_genes; g++) {
        uint64_t n = ptr[g + 1] - ptr[g];
        if (n == 0)
            continue;
        roaring_bitmap_t *b = roaring_bitmap_of_ptr(n, idx + ptr[g]);
        if (!b)
            return pl__err(err, -ENOMEM, "out of memory");
        roaring_bitmap_run_optimize(b);
        size_t sz = roaring_bitmap_portable_size_in_bytes(b);
        if (sz > cap) {
            char *p = realloc(ser, sz);
            if (!p) {
                roaring_bitmap_free(b);
                rc = pl__err(err, -ENOMEM, "out of memory");
                break;
            }
            ser = p;
            cap = sz;
        }
        roaring_bitmap_portable_serialize(b, ser);
        roaring_bitmap_free(b);
        unsigned char key[5];
        pl__onto_key(key, kind, g);
        rc = pl__db_put(txn, dbi, PL_DBI_ONTO, key, 5, ser, sz, MDB_APPEND, err);
    }
    free(ser);
    return rc;
}

static int put_terms(MDB_txn *txn, MDB_dbi dbi, const pl_onto *on, pl_err *err)
{
    size_t len = 0;
    for (uint32_t t = 0; t < on->n_terms; t++)
        len += strlen(on->term_id[t]) + 1;
    char *blob = malloc(len ? len : 1), *p = blob;
    PL_FAIL_IF(!blob, err, -ENOMEM, "out of memory");
    for (uint32_t t = 0; t < on->n_terms; t++) {
        size_t l = strlen(on->term_id[t]) + 1;
        memcpy(p, on->term_id[t], l);
        p += l;
    }
    int rc = pl__db_put(txn, dbi, PL_DBI_ONTO, "terms", 5, blob, len, 0, err);
    free(blob);
    return rc;
}

int pl__onto_put(MDB_txn *txn, MDB_dbi dbi, const pl_onto *on, struct pl__meta *m, pl_err *err)
{
    if (on->n_terms == 0)
        return 0;
    uint64_t T = on->n_terms, G = on->n_groups, S = on->n_strata, A = on->n_ann;
    uint64_t C = on->child_ptr[T], D = on->dgene_ptr[T];
    struct {
        const uint32_t *a;
        uint64_t n;
    } parts[] = {{on->child_ptr, T + 1}, {on->child_idx, C}, {on->dgene_ptr, T + 1},
                 {on->dgene_idx, D}, {on->ngenes, T}, {on->stratum, T},
                 {on->stratum_ptr, S + 1}, {on->group_ptr, G + 1}, {on->group_ngenes, G},
                 {on->group_nchildren, G}, {on->group_terms, T}, {on->ann_gene, A},
                 {on->ann_term, A}};
    uint64_t words = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        words += parts[i].n;
    uint32_t *buf = malloc(words * 4), *p = buf;
    PL_FAIL_IF(!buf, err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        memcpy(p, parts[i].a, parts[i].n * 4);
        p += parts[i].n;
    }
    /* the bitmaps first, in key order (MDB_APPEND): their keys start with a
     * byte below those of the named values */
    int rc = put_gene_sets(txn, dbi, PL_ONTO_KIND_TERM, on->n_genes, on->gterm_ptr,
                           on->gterm_idx, err);
    if (rc == 0)
        rc = put_gene_sets(txn, dbi, PL_ONTO_KIND_ANN, on->n_genes, on->gann_ptr, on->gann_idx,
                           err);
    if (rc == 0)
        rc = pl__db_put_zstd(txn, dbi, PL_DBI_ONTO, "schedule", 8, buf, words * 4, err);
    free(buf);
    PL_TRY(rc);
    PL_TRY(put_terms(txn, dbi, on, err));
    m->n_terms = T;
    m->n_term_ann = A;
    m->n_term_children = C;
    m->n_term_direct = D;
    m->n_strata = (uint32_t)S;
    m->n_term_groups = (uint32_t)G;
    return 0;
}
