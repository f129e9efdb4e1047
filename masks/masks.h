/* The masks engine, shared with the collation stage.
 *
 * pl_graph_load() decodes every incidence bitmap of the database into one
 * array laid out gene by gene: for gene g, the lists of kinds
 * 0..n_gene_lists-1 (the edge types, then GPR and reaction) follow each
 * other, each ascending and followed by PL__MASKS_PAD sentinels
 * (PL__MASKS_END). A sample's lists are therefore a few contiguous runs of
 * memory, and a merge reads whole vectors past a list's end without bounds
 * checks. The union of a deletion set is a merge of its genes' sorted lists.
 *
 * RMR positions are not kept per gene: a reaction shared by many genes would
 * repeat its RMR positions in every one of their lists (6,607 genes on one
 * reaction of 100,000 RMR edges: 2.6 GB). They are kept once per reaction,
 * and the removed RMR positions of a sample are those of its removed
 * reactions (the reaction kind's union), laid end to end: the reactions' RMR
 * sets are disjoint, as each RMR edge has one reaction.
 */
#ifndef PL_MASKS_MASKS_H
#define PL_MASKS_MASKS_H

#include <stdint.h>

#include "pertload.h"

/** Pads every list; larger than any position (positions fit int32). */
#define PL__MASKS_END UINT32_MAX

/** Sentinels after every list: one vector of eight positions. */
#define PL__MASKS_PAD 8u

/** Number of list kinds a graph can have: every edge type, then GPR, reaction
 *  and RMR. */
#define PL__MASKS_MAX_KINDS (PL_MAX_TYPES + 3)

/** Counts of one list kind. */
typedef struct pl__kind {
    uint64_t count;    /**< positions of this kind: edges, GPR edges, reactions, RMR */
    uint64_t max_len;  /**< longest gene list (RMR: most RMR positions of one gene's
                            reactions) */
} pl__kind;

/** The in-memory incidence of a database; read-only once loaded, so one graph
 *  serves any number of threads (each with its own pl_masks). */
struct pl_graph {
    uint32_t n_genes;
    uint32_t n_types;              /**< gene-gene edge types */
    uint32_t n_lists;              /**< n_types, + 3 with metabolism */
    uint32_t n_gene_lists;         /**< kinds kept per gene: n_types, + 2 (GPR and
                                        reaction) with metabolism, where the RMR
                                        kind is n_gene_lists */
    int simd;                      /**< 1: merges use AVX2 (set at load where the CPU
                                        has it; a test may clear it to run the
                                        scalar merge on the same graph) */
    const char *const *type_names; /**< [n_types], owned by the pl_db */
    pl__kind kind[PL__MASKS_MAX_KINDS];
    uint64_t *off;                 /**< [n_genes * n_gene_lists + 1], list (g, k) at
                                        g * n_gene_lists + k */
    uint32_t *vals;                /**< the lists, each followed by PL__MASKS_PAD sentinels */
    /* With metabolism: */
    uint32_t *rmr_off;             /**< [n_reactions + 1]: reaction r's RMR positions are
                                        rmr_vals[rmr_off[r] .. rmr_off[r + 1]) */
    uint32_t *rmr_vals;            /**< [n_rmr + PL__MASKS_PAD], ascending per reaction */
    uint32_t *rmr_len;             /**< [n_genes]: RMR positions of the gene's reactions */
    /* Rule GPR (DESIGN section 2): */
    uint32_t rules_kind;           /**< n_types + PL_LIST_REACTION under rule GPR, where
                                        the reaction union is filtered by the rules;
                                        UINT32_MAX under rule ANY */
    const uint32_t *rule_off;      /**< [n_reactions + 1] into rule_code (GPR only) */
    const uint32_t *rule_code;     /**< the programs of src/core/rule.h */
    void *rules_buf;               /**< owns rule_off and rule_code */
    int lists_shared;              /**< 1: off, vals and the rmr_ arrays lie in a
                                        mapping another owner releases
                                        (pl__graph_image_adopt()) */
};

/** Bytes of the image of `g`'s lists (pl__graph_image_write()). */
uint64_t pl__graph_image_bytes(const pl_graph *g);

/** Write the image of `g`'s lists to `dst` (pl__graph_image_bytes() bytes,
 *  64-aligned): off, vals and, with metabolism, rmr_off, rmr_vals and
 *  rmr_len, each at a 64-aligned offset, so that processes loading the same
 *  database can share one copy (the shared sample table holds it). */
void pl__graph_image_write(const pl_graph *g, void *dst);

/** Serve `g`'s lists from the image at `src` (`bytes` long, 64-aligned,
 *  read-only) when it is byte for byte the image of `g`'s own lists: the
 *  private copies are freed and `g` reads the image from then on, which must
 *  stay mapped until pl_graph_free(g). A different image leaves `g` as it
 *  was, so masks are exactly those of the database either way.
 *  @return 1 adopted, 0 the image differs (or `g` shares one already). */
int pl__graph_image_adopt(pl_graph *g, const void *src, uint64_t bytes);

/** Gene `gene`'s list of kind `kind` (< n_gene_lists), followed by
 *  PL__MASKS_PAD sentinels.
 *  @param len set to the number of positions (sentinels excluded). */
static inline const uint32_t *pl__graph_list(const pl_graph *g, uint32_t kind, uint32_t gene,
                                             uint64_t *len)
{
    uint64_t i = (uint64_t)gene * g->n_gene_lists + kind;
    *len = g->off[i + 1] - g->off[i] - PL__MASKS_PAD;
    return g->vals + g->off[i];
}

/** Sum of the lengths of the kind-`kind` lists of `genes[0..n)`: an upper
 *  bound on the size of their union (for RMR, the RMR positions of each
 *  gene's reactions, summed, and at most the kind's count: a bound on what
 *  pl__masks_rmr() writes for the reactions of the set).
 *  @param genes gene indices, each < g->n_genes. */
uint64_t pl__masks_bound(const pl_graph *g, uint32_t kind, const int32_t *genes, uint32_t n);

/** Union of the kind-`kind` lists of a deletion set, written ascending to `out`:
 *  its removed positions (for the reaction kind under rule GPR, the union
 *  filtered by pl__masks_rules()).
 *  @param kind a kind kept per gene (< g->n_gene_lists; RMR: pl__masks_rmr())
 *  @param genes sorted ascending, without duplicates, each < g->n_genes
 *         (pl__masks_genes() prepares them).
 *  @param out room for pl__masks_bound() + PL__MASKS_PAD entries; the
 *         PL__MASKS_PAD entries after the union are set to the sentinel
 *         (-1 as int32), so the result can itself be merged again.
 *  @param scratch the same room when n > 2 (the other half of a ping-pong
 *         between merge passes); may be NULL when n <= 2.
 *  @return the number of positions written. */
uint64_t pl__masks_union(const pl_graph *g, uint32_t kind, const int32_t *genes, uint32_t n,
                         int32_t *out, int32_t *scratch);

/** Keep, of the reactions `rxns[0..len)` whose GPR genes include a deleted
 *  one, those whose rule is false with `genes[0..n)` (sorted) deleted, in
 *  place and in order (rule GPR; pl__masks_union() applies it to the
 *  reaction kind). A reaction without a rule is dropped (never removed).
 *  @param rxns room for len + PL__MASKS_PAD: the pad after the kept ones is
 *  set to the sentinel.
 *  @return the number kept. */
uint64_t pl__masks_rules(const pl_graph *g, const int32_t *genes, uint32_t n, int32_t *rxns,
                         uint64_t len);

/** The RMR positions of the reactions `rxns[0..n)`, written ascending to
 *  `out`: the removed RMR list of a deletion set whose removed reactions (its
 *  reaction-kind union) these are.
 *  @param rxns sorted ascending, without duplicates, each < the graph's
 *         reaction count.
 *  @param out room for the RMR positions of those reactions (for the
 *         reaction union of `genes`, pl__masks_bound(g, g->n_gene_lists, genes,
 *         ...)) + PL__MASKS_PAD entries; the PL__MASKS_PAD entries after
 *         the list are set to the sentinel.
 *  @return the number of positions written. */
uint64_t pl__masks_rmr(const pl_graph *g, const int32_t *rxns, uint64_t n, int32_t *out);

/** Start fetching every list of `genes[0..n)` into the cache, so that a
 *  caller computing one sample can overlap the next sample's memory traffic.
 *  @param genes gene indices, each < g->n_genes. */
void pl__masks_prefetch(const pl_graph *g, const int32_t *genes, uint32_t n);

/** Check that every gene of `genes[0..n)` is in [0, n_genes), then copy them
 *  to `out` sorted ascending without duplicates.
 *  @param out room for n entries; untouched when a gene is out of range.
 *  @param bad set to the index in `genes` of the first gene out of range.
 *  @return the number of distinct genes, or PL_ERANGE. */
int64_t pl__masks_genes(uint32_t n_genes, const int32_t *genes, uint32_t n, int32_t *out,
                        uint32_t *bad);

#endif
