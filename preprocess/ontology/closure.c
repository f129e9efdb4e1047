/* From the raw tables to the ontology: kept terms, the cycle check, genes(T),
 * the minimum-genes filter with re-attachment, annotation positions, strata
 * and groups, and the per-gene sets (see ontology.h). Sets are CRoaring
 * bitmaps; everything is computed in one leaves-first topological order. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <roaring/roaring.h>

#include "ontology.h"
#include "src/core/error.h"

/* Adjacency in the raw term space over the edges between kept terms. */
typedef struct adj {
    uint32_t *ptr, *idx; /* CSR by term */
    uint64_t *edge;      /* raw edge index of each entry */
} adj;

typedef struct work {
    const pl_onto_raw *r;
    uint32_t n;          /* raw terms */
    uint8_t *keep;       /* 1 kept by the term filters, 2 also by the genes filter */
    adj up, down;        /* parents, children */
    uint32_t *order;     /* kept terms, leaves first */
    uint32_t n_order;
    roaring_bitmap_t **g;    /* genes(T) of kept terms */
    roaring_bitmap_t **anc;  /* removed terms: nearest kept ancestors */
    roaring_bitmap_t **desc; /* removed terms: nearest kept descendants */
} work;

static void adj_free(adj *a)
{
    free(a->ptr);
    free(a->idx);
    free(a->edge);
}

static void sets_free(roaring_bitmap_t **s, uint32_t n)
{
    for (uint32_t i = 0; s && i < n; i++)
        if (s[i])
            roaring_bitmap_free(s[i]);
    free(s);
}

static int sets_new(roaring_bitmap_t ***s, uint32_t n)
{
    *s = calloc(n ? n : 1, sizeof **s);
    if (!*s)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        if (!((*s)[i] = roaring_bitmap_create()))
            return -ENOMEM;
    return 0;
}

static int usable(const work *w, uint64_t e)
{
    const pl_onto_raw *r = w->r;
    return w->keep[r->e_child[e]] && w->keep[r->e_parent[e]];
}

/* CSR of the usable edges keyed by parent (`down`: children) or child. */
static int adj_build(work *w, adj *a, int by_parent)
{
    const pl_onto_raw *r = w->r;
    if (!(a->ptr = calloc((size_t)w->n + 1, sizeof *a->ptr)))
        return -ENOMEM;
    for (uint64_t e = 0; e < r->n_edges; e++)
        if (usable(w, e))
            a->ptr[(by_parent ? r->e_parent : r->e_child)[e] + 1]++;
    for (uint32_t t = 0; t < w->n; t++)
        a->ptr[t + 1] += a->ptr[t];
    uint32_t m = a->ptr[w->n];
    a->idx = malloc((m ? m : 1) * sizeof *a->idx);
    a->edge = malloc((m ? m : 1) * sizeof *a->edge);
    uint32_t *fill = calloc((size_t)w->n + 1, sizeof *fill);
    if (!a->idx || !a->edge || !fill) {
        free(fill);
        return -ENOMEM;
    }
    for (uint64_t e = 0; e < r->n_edges; e++)
        if (usable(w, e)) {
            uint32_t k = by_parent ? r->e_parent[e] : r->e_child[e];
            uint32_t at = a->ptr[k] + fill[k]++;
            a->idx[at] = by_parent ? r->e_child[e] : r->e_parent[e];
            a->edge[at] = e;
        }
    free(fill);
    return 0;
}

/* The leftover terms of Kahn's algorithm each have a leftover child: walk
 * children until a term repeats and name that cycle, child -> parent. */
static int name_cycle(const work *w, const uint32_t *pending, pl_err *err)
{
    uint32_t *pos = malloc((size_t)w->n * sizeof *pos), *path = malloc((size_t)w->n * sizeof *path);
    if (!pos || !path) {
        free(pos);
        free(path);
        return pl__err(err, -ENOMEM, "out of memory");
    }
    memset(pos, 0xff, (size_t)w->n * sizeof *pos);
    uint32_t t = 0;
    while (!(w->keep[t] && pending[t]))
        t++;
    uint32_t k = 0;
    uint64_t line = 0;
    while (pos[t] == UINT32_MAX) {
        pos[t] = k;
        path[k++] = t;
        uint32_t i = w->down.ptr[t];
        while (!pending[w->down.idx[i]])
            i++;
        if (pos[w->down.idx[i]] != UINT32_MAX)
            line = w->r->e_line[w->down.edge[i]];
        t = w->down.idx[i];
    }
    char msg[1024];
    size_t at = 0;
    at += (size_t)snprintf(msg, sizeof msg, "%s", w->r->ids.names[t]);
    for (uint32_t j = k; j-- > pos[t] && at < sizeof msg - 64;)
        at += (size_t)snprintf(msg + at, sizeof msg - at, " -> %s", w->r->ids.names[path[j]]);
    int rc = pl__err(err, PL_EPARSE, "%s:%llu: the ontology has a cycle: %s (child -> parent)",
                     w->r->edge_path ? w->r->edge_path : "ontology", (unsigned long long)line,
                     msg);
    free(pos);
    free(path);
    return rc;
}

/* Leaves-first order of the kept terms (Kahn over children counts). */
static int topo(work *w, pl_err *err)
{
    uint32_t *pending = calloc(w->n ? w->n : 1, sizeof *pending);
    if (!(w->order = malloc((w->n ? w->n : 1) * sizeof *w->order)) || !pending) {
        free(pending);
        return pl__err(err, -ENOMEM, "out of memory");
    }
    uint32_t kept = 0;
    for (uint32_t t = 0; t < w->n; t++)
        if (w->keep[t]) {
            kept++;
            pending[t] = w->down.ptr[t + 1] - w->down.ptr[t];
            if (!pending[t])
                w->order[w->n_order++] = t;
        }
    for (uint32_t q = 0; q < w->n_order; q++) {
        uint32_t t = w->order[q];
        for (uint32_t i = w->up.ptr[t]; i < w->up.ptr[t + 1]; i++)
            if (--pending[w->up.idx[i]] == 0)
                w->order[w->n_order++] = w->up.idx[i];
    }
    int rc = w->n_order == kept ? 0 : name_cycle(w, pending, err);
    free(pending);
    return rc;
}

static int term_filters(work *w, const pl_onto_opts *o, pl_onto_stats *st, pl_err *err)
{
    const pl_onto_raw *r = w->r;
    for (const char *p = o->namespaces; p && *p;) {
        const char *q = strchr(p, ',');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (!r->nss.slots || pl__strtab_find(&r->nss, p, n) < 0)
            return pl__err(err, PL_EUSAGE, "%s: no term has the namespace '%.*s'",
                           r->edge_path ? r->edge_path : "ontology", (int)n, p);
        p = q ? q + 1 : NULL;
    }
    for (uint32_t t = 0; t < w->n; t++) {
        int ok = (r->flags[t] & PL_ONTO_DEFINED) && !(r->flags[t] & PL_ONTO_OBSOLETE);
        if (ok && o->namespaces) {
            const char *ns = r->ns[t] ? r->nss.names[r->ns[t] - 1] : "";
            ok = pl__onto_in_list(o->namespaces, ns, strlen(ns));
        }
        w->keep[t] = (uint8_t)ok;
    }
    for (uint64_t e = 0; e < r->n_edges; e++)
        if (!(r->flags[r->e_child[e]] & PL_ONTO_DEFINED) ||
            !(r->flags[r->e_parent[e]] & PL_ONTO_DEFINED))
            st->dangling_edges++;
    return 0;
}

/* genes(T) from the kept rows, then the genes filter, then the nearest kept
 * ancestors and descendants of each removed term. */
static int closure(work *w, const pl_onto_opts *o, pl_onto_stats *st)
{
    const pl_onto_raw *r = w->r;
    if (sets_new(&w->g, w->n) < 0 || sets_new(&w->anc, w->n) < 0 || sets_new(&w->desc, w->n) < 0)
        return -ENOMEM;
    for (uint64_t i = 0; i < r->n_ann; i++) {
        uint32_t t = r->a_term[i];
        if (w->keep[t])
            roaring_bitmap_add(w->g[t], r->a_gene[i]);
        else if (r->flags[t] & PL_ONTO_OBSOLETE)
            st->obsolete_rows++;
        else
            st->namespace_rows++;
    }
    for (uint32_t q = 0; q < w->n_order; q++) {
        uint32_t t = w->order[q];
        for (uint32_t i = w->up.ptr[t]; i < w->up.ptr[t + 1]; i++)
            roaring_bitmap_or_inplace(w->g[w->up.idx[i]], w->g[t]);
    }
    uint64_t min = o->min_term_genes ? o->min_term_genes : 1;
    for (uint32_t q = 0; q < w->n_order; q++) {
        uint32_t t = w->order[q];
        if (roaring_bitmap_get_cardinality(w->g[t]) >= min)
            w->keep[t] = 2;
        else
            st->removed_terms++;
    }
    for (uint32_t q = 0; q < w->n_order; q++) { /* leaves first: descendants */
        uint32_t t = w->order[q];
        if (w->keep[t] == 2)
            continue;
        for (uint32_t i = w->down.ptr[t]; i < w->down.ptr[t + 1]; i++) {
            uint32_t c = w->down.idx[i];
            if (w->keep[c] == 2)
                roaring_bitmap_add(w->desc[t], c);
            else
                roaring_bitmap_or_inplace(w->desc[t], w->desc[c]);
        }
    }
    for (uint32_t q = w->n_order; q-- > 0;) { /* roots first: ancestors */
        uint32_t t = w->order[q];
        if (w->keep[t] == 2)
            continue;
        for (uint32_t i = w->up.ptr[t]; i < w->up.ptr[t + 1]; i++) {
            uint32_t p = w->up.idx[i];
            if (w->keep[p] == 2)
                roaring_bitmap_add(w->anc[t], p);
            else
                roaring_bitmap_or_inplace(w->anc[t], w->anc[p]);
        }
    }
    return 0;
}


/* (gene, term) pairs seen: open addressing over key + 1. */
typedef struct pairs {
    uint64_t *slot, mask;
} pairs;

static int pairs_add(pairs *h, uint64_t key)
{
    uint64_t k = key + 1, i = (k * 0x9e3779b97f4a7c15ULL) >> 20 & h->mask;
    while (h->slot[i] && h->slot[i] != k)
        i = (i + 1) & h->mask;
    if (h->slot[i])
        return 0;
    h->slot[i] = k;
    return 1;
}

static int u32_cmp(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

typedef struct gkey {
    uint32_t s, g, c, t;
} gkey;

static int gkey_cmp(const void *x, const void *y)
{
    const gkey *a = x, *b = y;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    if (a->g != b->g)
        return a->g < b->g ? -1 : 1;
    if (a->c != b->c)
        return a->c < b->c ? -1 : 1;
    return a->t < b->t ? -1 : a->t > b->t;
}

/* Sets [n] -> CSR (ptr [n+1], idx ascending). */
static int csr32(roaring_bitmap_t **s, uint32_t n, uint32_t **ptr, uint32_t **idx)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        m += roaring_bitmap_get_cardinality(s[i]);
    if (m > UINT32_MAX)
        return -ENOMEM;
    *ptr = malloc(((size_t)n + 1) * sizeof **ptr);
    *idx = malloc((m ? m : 1) * sizeof **idx);
    if (!*ptr || !*idx)
        return -ENOMEM;
    (*ptr)[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        roaring_bitmap_to_uint32_array(s[i], *idx + (*ptr)[i]);
        (*ptr)[i + 1] = (*ptr)[i] + (uint32_t)roaring_bitmap_get_cardinality(s[i]);
    }
    return 0;
}

/* Annotation positions: the kept rows, moved off removed terms, deduplicated. */
static int annotations(const work *w, const uint32_t *newid, pl_onto *out, pl_onto_stats *st)
{
    const pl_onto_raw *r = w->r;
    uint64_t cap = 16;
    while (cap < 2 * r->n_ann + 2)
        cap *= 2;
    pairs h = {calloc(cap, sizeof *h.slot), cap - 1};
    uint32_t *tbuf = malloc((w->n ? w->n : 1) * sizeof *tbuf);
    uint64_t n = 0, room = r->n_ann + 16;
    out->ann_gene = malloc(room * sizeof *out->ann_gene);
    out->ann_term = malloc(room * sizeof *out->ann_term);
    int rc = h.slot && tbuf && out->ann_gene && out->ann_term ? 0 : -ENOMEM;
    for (uint64_t i = 0; rc == 0 && i < r->n_ann; i++) {
        uint32_t t = r->a_term[i], g = r->a_gene[i];
        if (!w->keep[t])
            continue;
        roaring_bitmap_t *one = NULL;
        const roaring_bitmap_t *to = w->anc[t];
        if (w->keep[t] == 2) {
            if (!(one = roaring_bitmap_create())) {
                rc = -ENOMEM;
                break;
            }
            roaring_bitmap_add(one, t);
            to = one;
        }
        uint32_t nt = (uint32_t)roaring_bitmap_get_cardinality(to);
        roaring_bitmap_to_uint32_array(to, tbuf);
        for (uint32_t j = 0; j < nt; j++)
            tbuf[j] = newid[tbuf[j]];
        qsort(tbuf, nt, sizeof *tbuf, u32_cmp);
        for (uint32_t j = 0; j < nt; j++) {
            uint32_t k = tbuf[j];
            if (!pairs_add(&h, (uint64_t)g << 32 | k)) {
                st->duplicates++;
                continue;
            }
            if (n == room) {
                room *= 2;
                uint32_t *a = realloc(out->ann_gene, room * sizeof *a);
                if (a)
                    out->ann_gene = a;
                uint32_t *b = a ? realloc(out->ann_term, room * sizeof *b) : NULL;
                if (!b) {
                    rc = -ENOMEM;
                    break;
                }
                out->ann_term = b;
            }
            out->ann_gene[n] = g;
            out->ann_term[n++] = k;
        }
        if (one) /* this CRoaring's free does not take NULL */
            roaring_bitmap_free(one);
    }
    out->n_ann = n;
    free(h.slot);
    free(tbuf);
    return rc;
}

/* Per gene the CSR of the items `item` whose owner holds it: owners are
 * annotation positions (ann) or terms (sets). */
static int per_gene(pl_onto *out, roaring_bitmap_t **f)
{
    uint32_t G = out->n_genes, K = out->n_terms;
    out->gann_ptr = calloc((size_t)G + 1, sizeof *out->gann_ptr);
    out->gterm_ptr = calloc((size_t)G + 1, sizeof *out->gterm_ptr);
    if (!out->gann_ptr || !out->gterm_ptr)
        return -ENOMEM;
    for (uint64_t i = 0; i < out->n_ann; i++)
        out->gann_ptr[out->ann_gene[i] + 1]++;
    uint32_t *buf = malloc(((size_t)G + 1) * sizeof *buf);
    if (!buf)
        return -ENOMEM;
    for (uint32_t t = 0; t < K; t++) {
        uint64_t c = roaring_bitmap_get_cardinality(f[t]);
        roaring_bitmap_to_uint32_array(f[t], buf);
        for (uint64_t j = 0; j < c; j++)
            out->gterm_ptr[buf[j] + 1]++;
    }
    for (uint32_t g = 0; g < G; g++) {
        out->gann_ptr[g + 1] += out->gann_ptr[g];
        out->gterm_ptr[g + 1] += out->gterm_ptr[g];
    }
    out->gann_idx = malloc((out->gann_ptr[G] ? out->gann_ptr[G] : 1) * sizeof *out->gann_idx);
    out->gterm_idx = malloc((out->gterm_ptr[G] ? out->gterm_ptr[G] : 1) * sizeof *out->gterm_idx);
    uint64_t *fa = calloc((size_t)G + 1, sizeof *fa), *ft = calloc((size_t)G + 1, sizeof *ft);
    int rc = out->gann_idx && out->gterm_idx && fa && ft ? 0 : -ENOMEM;
    for (uint64_t i = 0; rc == 0 && i < out->n_ann; i++) {
        uint32_t g = out->ann_gene[i];
        out->gann_idx[out->gann_ptr[g] + fa[g]++] = (uint32_t)i;
    }
    for (uint32_t t = 0; rc == 0 && t < K; t++) {
        uint64_t c = roaring_bitmap_get_cardinality(f[t]);
        roaring_bitmap_to_uint32_array(f[t], buf);
        for (uint64_t j = 0; j < c; j++)
            out->gterm_idx[out->gterm_ptr[buf[j]] + ft[buf[j]]++] = t;
    }
    free(buf);
    free(fa);
    free(ft);
    return rc;
}

/* Strata (leaves first over the kept terms) and the groups of each stratum. */
static int strata(pl_onto *out, const uint32_t *order, uint32_t n_order)
{
    uint32_t K = out->n_terms;
    out->stratum = calloc(K ? K : 1, sizeof *out->stratum);
    gkey *k = malloc((K ? K : 1) * sizeof *k);
    if (!out->stratum || !k) {
        free(k);
        return -ENOMEM;
    }
    for (uint32_t q = 0; q < n_order; q++) {
        uint32_t t = order[q], s = 0;
        for (uint32_t i = out->child_ptr[t]; i < out->child_ptr[t + 1]; i++)
            if (out->stratum[out->child_idx[i]] + 1 > s)
                s = out->stratum[out->child_idx[i]] + 1;
        out->stratum[t] = s;
        if (s + 1 > out->n_strata)
            out->n_strata = s + 1;
    }
    for (uint32_t t = 0; t < K; t++)
        k[t] = (gkey){out->stratum[t], out->dgene_ptr[t + 1] - out->dgene_ptr[t],
                      out->child_ptr[t + 1] - out->child_ptr[t], t};
    qsort(k, K, sizeof *k, gkey_cmp);
    out->group_terms = malloc((K ? K : 1) * sizeof *out->group_terms);
    out->group_ptr = malloc(((size_t)K + 1) * sizeof *out->group_ptr);
    out->group_ngenes = malloc((K ? K : 1) * sizeof *out->group_ngenes);
    out->group_nchildren = malloc((K ? K : 1) * sizeof *out->group_nchildren);
    out->stratum_ptr = calloc((size_t)out->n_strata + 1, sizeof *out->stratum_ptr);
    if (!out->group_terms || !out->group_ptr || !out->group_ngenes || !out->group_nchildren ||
        !out->stratum_ptr) {
        free(k);
        return -ENOMEM;
    }
    uint32_t ng = 0;
    for (uint32_t i = 0; i < K; i++) {
        out->group_terms[i] = k[i].t;
        if (i == 0 || k[i].s != k[i - 1].s || k[i].g != k[i - 1].g || k[i].c != k[i - 1].c) {
            out->group_ptr[ng] = i;
            out->group_ngenes[ng] = k[i].g;
            out->group_nchildren[ng] = k[i].c;
            out->stratum_ptr[k[i].s + 1] = ng + 1;
            ng++;
        }
    }
    out->group_ptr[ng] = K;
    out->n_groups = ng;
    for (uint32_t s = 0; s < out->n_strata; s++) /* every stratum has a term */
        if (out->stratum_ptr[s + 1] < out->stratum_ptr[s])
            out->stratum_ptr[s + 1] = out->stratum_ptr[s];
    free(k);
    return 0;
}

static int finish(work *w, pl_onto *out, pl_onto_stats *st)
{
    uint32_t *newid = malloc((w->n ? w->n : 1) * sizeof *newid);
    if (!newid)
        return -ENOMEM;
    uint32_t K = 0;
    for (uint32_t t = 0; t < w->n; t++)
        newid[t] = UINT32_MAX;
    for (uint64_t i = 0; i < w->r->n_def; i++)
        if (w->keep[w->r->def[i]] == 2)
            newid[w->r->def[i]] = K++;
    out->n_terms = K;
    roaring_bitmap_t **ch = NULL, **d = NULL;
    uint32_t *order = malloc((K ? K : 1) * sizeof *order), n_order = 0;
    int rc = -ENOMEM;
    if (!order || !(out->term_id = calloc(K ? K : 1, sizeof *out->term_id)) ||
        sets_new(&ch, K) < 0 || sets_new(&d, K) < 0)
        goto done;
    for (uint32_t t = 0; t < w->n; t++) {
        if (w->keep[t] != 2)
            continue;
        if (!(out->term_id[newid[t]] = strdup(w->r->ids.names[t])))
            goto done;
        for (uint32_t i = w->down.ptr[t]; i < w->down.ptr[t + 1]; i++) {
            uint32_t c = w->down.idx[i];
            if (w->keep[c] == 2) {
                roaring_bitmap_add(ch[newid[t]], newid[c]);
                continue;
            }
            roaring_uint32_iterator_t it;
            roaring_init_iterator(w->desc[c], &it);
            for (; it.has_value; roaring_advance_uint32_iterator(&it))
                roaring_bitmap_add(ch[newid[t]], newid[it.current_value]);
        }
    }
    for (uint32_t q = 0; q < w->n_order; q++)
        if (w->keep[w->order[q]] == 2)
            order[n_order++] = newid[w->order[q]];
    if ((rc = annotations(w, newid, out, st)) < 0)
        goto done;
    for (uint64_t i = 0; i < out->n_ann; i++)
        roaring_bitmap_add(d[out->ann_term[i]], out->ann_gene[i]);
    rc = -ENOMEM;
    if (csr32(ch, K, &out->child_ptr, &out->child_idx) < 0 ||
        csr32(d, K, &out->dgene_ptr, &out->dgene_idx) < 0)
        goto done;
    for (uint32_t q = 0; q < n_order; q++) { /* d becomes genes(T) */
        uint32_t t = order[q];
        for (uint32_t i = out->child_ptr[t]; i < out->child_ptr[t + 1]; i++)
            roaring_bitmap_or_inplace(d[t], d[out->child_idx[i]]);
    }
    if (!(out->ngenes = malloc((K ? K : 1) * sizeof *out->ngenes)))
        goto done;
    for (uint32_t t = 0; t < K; t++)
        out->ngenes[t] = (uint32_t)roaring_bitmap_get_cardinality(d[t]);
    if (strata(out, order, n_order) < 0 || per_gene(out, d) < 0)
        goto done;
    rc = 0;
done:
    sets_free(ch, K);
    sets_free(d, K);
    free(order);
    free(newid);
    return rc;
}

void pl__onto_free(pl_onto *o)
{
    if (!o)
        return;
    for (uint32_t i = 0; o->term_id && i < o->n_terms; i++)
        free(o->term_id[i]);
    void *arrs[] = {o->term_id, o->ann_gene, o->ann_term, o->child_ptr, o->child_idx,
                    o->dgene_ptr, o->dgene_idx, o->ngenes, o->stratum, o->stratum_ptr,
                    o->group_ptr, o->group_terms, o->group_ngenes, o->group_nchildren,
                    o->gann_ptr, o->gann_idx, o->gterm_ptr, o->gterm_idx};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
        free(arrs[i]);
    memset(o, 0, sizeof *o);
}

int pl__onto_build(const pl_onto_raw *r, uint32_t n_genes, const pl_onto_opts *o,
                   pl_onto *out, pl_onto_stats *st, pl_err *err)
{
    memset(out, 0, sizeof *out);
    out->n_genes = n_genes;
    work w = {.r = r, .n = r->ids.n};
    int rc = -ENOMEM;
    if (!(w.keep = calloc(w.n ? w.n : 1, 1)))
        goto done;
    if ((rc = term_filters(&w, o, st, err)) < 0)
        goto done;
    rc = -ENOMEM;
    if (adj_build(&w, &w.up, 0) < 0 || adj_build(&w, &w.down, 1) < 0)
        goto done;
    if ((rc = topo(&w, err)) < 0)
        goto done;
    rc = closure(&w, o, st);
    if (rc == 0)
        rc = finish(&w, out, st);
done:
    if (rc == -ENOMEM)
        pl__err(err, rc, "ontology: out of memory");
    if (rc < 0) {
        pl__onto_free(out);
        memset(out, 0, sizeof *out);
    }
    sets_free(w.g, w.n);
    sets_free(w.anc, w.n);
    sets_free(w.desc, w.n);
    free(w.keep);
    free(w.order);
    adj_free(&w.up);
    adj_free(&w.down);
    return rc;
}
