/* The reader side of an ontology: term, edge and annotation tables. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ontology.h"
#include "src/core/vec.h"

int pl__onto_raw_term(pl_onto_raw *r, const char *s, size_t len, uint32_t *idx)
{
    if (!r->ids.slots && pl__strtab_init(&r->ids) < 0)
        return -ENOMEM;
    int added = 0;
    int64_t i = pl__strtab_intern(&r->ids, s, len, &added);
    if (i < 0)
        return -ENOMEM;
    if (added) {
        uint64_t c = r->cap_terms;
        if (pl__grow(&r->ns, &c, (uint64_t)i + 1, sizeof *r->ns) < 0)
            return -ENOMEM;
        c = r->cap_terms;
        if (pl__grow(&r->flags, &c, (uint64_t)i + 1, sizeof *r->flags) < 0)
            return -ENOMEM;
        r->cap_terms = c;
        r->ns[i] = 0;
        r->flags[i] = 0;
    }
    *idx = (uint32_t)i;
    return 0;
}

int pl__onto_raw_define(pl_onto_raw *r, uint32_t t)
{
    if (r->flags[t] & PL_ONTO_DEFINED)
        return 1;
    if (pl__grow(&r->def, &r->cap_def, r->n_def + 1, sizeof *r->def) < 0)
        return -ENOMEM;
    r->def[r->n_def++] = t;
    r->flags[t] |= PL_ONTO_DEFINED;
    return 0;
}

int pl__onto_raw_edge(pl_onto_raw *r, uint32_t child, uint32_t parent, uint64_t line)
{
    uint64_t need = r->n_edges + 1, c = r->cap_edges;
    if (pl__grow(&r->e_child, &c, need, sizeof *r->e_child) < 0)
        return -ENOMEM;
    c = r->cap_edges;
    if (pl__grow(&r->e_parent, &c, need, sizeof *r->e_parent) < 0)
        return -ENOMEM;
    c = r->cap_edges;
    if (pl__grow(&r->e_line, &c, need, sizeof *r->e_line) < 0)
        return -ENOMEM;
    r->cap_edges = c;
    r->e_child[r->n_edges] = child;
    r->e_parent[r->n_edges] = parent;
    r->e_line[r->n_edges++] = line;
    return 0;
}

int pl__onto_raw_ann(pl_onto_raw *r, uint32_t gene, uint32_t term)
{
    uint64_t need = r->n_ann + 1, c = r->cap_ann;
    if (pl__grow(&r->a_gene, &c, need, sizeof *r->a_gene) < 0)
        return -ENOMEM;
    c = r->cap_ann;
    if (pl__grow(&r->a_term, &c, need, sizeof *r->a_term) < 0)
        return -ENOMEM;
    r->cap_ann = c;
    r->a_gene[r->n_ann] = gene;
    r->a_term[r->n_ann++] = term;
    return 0;
}

int pl__onto_in_list(const char *list, const char *s, size_t len)
{
    for (const char *p = list; p && *p;) {
        const char *q = strchr(p, ',');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n == len && !memcmp(p, s, len))
            return 1;
        p = q ? q + 1 : NULL;
    }
    return 0;
}

void pl__onto_raw_free(pl_onto_raw *r)
{
    if (!r)
        return;
    pl__strtab_free(&r->ids);
    pl__strtab_free(&r->alt);
    pl__strtab_free(&r->nss);
    free(r->alt_to);
    free(r->ns);
    free(r->flags);
    free(r->def);
    free(r->e_child);
    free(r->e_parent);
    free(r->e_line);
    free(r->a_gene);
    free(r->a_term);
    free(r->edge_path);
    memset(r, 0, sizeof *r);
}

void pl__onto_stats_free(pl_onto_stats *st)
{
    if (!st)
        return;
    pl__unres_free(&st->unknown_genes);
    free(st->count_notes);
    st->count_notes = NULL;
}
