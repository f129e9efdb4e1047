/* Perturbation neighbourhoods: the genes within k hops of a deletion set and
 * the edges among them (DESIGN section 11).
 *
 * For a deletion set P, edge types T (the walked types) and k >= 0:
 * - the set S is every gene at distance <= k from P (P included), walking
 *   the edges of the types in T as undirected (an edge src -> dst links both
 *   ways; self-loops and duplicate edges change nothing);
 * - per walked type t, the kept edges are the positions of the type-t edges
 *   with both ends in S (a self-loop on a gene of S included), ascending;
 * - the cap: S holds at most max_genes genes beyond P. The walk goes hop by
 *   hop; when hop h would take S past max_genes genes, hop h is dropped
 *   whole and the walk stops: S is the ball of the largest radius r <= k
 *   that has at most max_genes genes (r = 0, P itself, whatever its size),
 *   and the sample is flagged capped (S differs from the k-hop ball).
 * S comes out sorted ascending.
 *
 * pl__khop_new() builds, once, from the database's edge arrays: a CSR
 * adjacency merged over the walked types (both directions, neighbours
 * deduplicated, self-loops left out) for the walk, and per walked type each
 * edge listed once under its end of lesser degree ("owned"), with its other
 * end, in ascending position. A per-thread pl__khop_ctx holds a visited array
 * stamped with a generation number (never cleared between samples), the BFS
 * queue and scratch for sorting. Per sample the walk reads the adjacency of
 * the genes it expands and the edge pass reads the owned lists of S: the work
 * is proportional to the edges touched, never to N^2.
 */
#ifndef PL_MASKS_KHOP_H
#define PL_MASKS_KHOP_H

#include <stdint.h>

#include "pertload.h"

/** Default cap on the set size (genes of S, P included when smaller). */
#define PL_KHOP_MAX_GENES 1024u

/** Largest k accepted. */
#define PL_KHOP_MAX_K 64u

/** The adjacency of the walked types; read-only once built, shared between
 *  threads. */
typedef struct pl__khop pl__khop;

/** One thread's working state. */
typedef struct pl__khop_ctx pl__khop_ctx;

/** Build the k-hop structure of `db` for walking types `types[0..n_types)`
 *  (database type indices, each once) up to `k` hops with at most
 *  `max_genes` (>= 1) genes a set.
 *  @param out set to the structure, NULL on failure.
 *  @return 0, PL_EUSAGE (bad k, type, repeated type, max_genes 0), PL_ECORRUPT
 *  (an endpoint out of range), -ENOMEM. */
int pl__khop_new(pl_db *db, const uint32_t *types, uint32_t n_types, uint32_t k,
                 uint32_t max_genes, pl__khop **out, pl_err *err);

/** Free; NULL is accepted. */
void pl__khop_free(pl__khop *kh);

/** Parse a comma-separated list of edge type names of `db` ("physical,regulatory")
 *  into type indices.
 *  @param types room for PL_MAX_TYPES entries.
 *  @return the count, or PL_EUSAGE naming an unknown, empty or repeated name. */
int pl__khop_parse_types(const pl_db *db, const char *list, uint32_t *types, pl_err *err);

/** Walked types: count, and database type index of walked type j. */
uint32_t pl__khop_n_types(const pl__khop *kh);
uint32_t pl__khop_type(const pl__khop *kh, uint32_t j);
uint32_t pl__khop_k(const pl__khop *kh);
uint32_t pl__khop_max_genes(const pl__khop *kh);

/** Upper bound on the size of S for a deletion set of `n_pert` genes:
 *  max(max_genes, n_pert), at most the gene count. */
uint64_t pl__khop_genes_bound(const pl__khop *kh, uint64_t n_pert);

/** Upper bound on the kept edges of walked type j for any set of at most
 *  `n_set` genes: the sum of the n_set largest owned-edge counts, at most
 *  the type's edge count (every kept edge is owned by a gene of S). */
uint64_t pl__khop_edges_bound(const pl__khop *kh, uint32_t j, uint64_t n_set);

/** A context for one thread; NULL when out of memory. */
pl__khop_ctx *pl__khop_ctx_new(const pl__khop *kh);

/** Free; NULL is accepted. */
void pl__khop_ctx_free(pl__khop_ctx *x);

/** How pl__khop_edges() sorts: by the list's length beside the type's
 *  (AUTO, the default), or always one way (tests run each on the same
 *  sets). */
enum { PL__KHOP_SORT_AUTO, PL__KHOP_SORT_INSERTION, PL__KHOP_SORT_BITMAP, PL__KHOP_SORT_RADIX };
void pl__khop_ctx_sort(pl__khop_ctx *x, int how);

/** The set S of the deletion set `pert[0..n)` (in range, sorted ascending
 *  and unique: pl__masks_genes() prepares them), written ascending to `out`.
 *  S stays the context's current set for pl__khop_edges() until the next
 *  call.
 *  @param out room for pl__khop_genes_bound(kh, n) entries.
 *  @param capped set to 1 when the cap cut the walk, else 0.
 *  @return |S|. */
uint32_t pl__khop_genes(pl__khop_ctx *x, const int32_t *pert, uint32_t n, int32_t *out,
                        int *capped);

/** The positions of the walked-type-j edges with both ends in the current
 *  set `set[0..n)` (the list pl__khop_genes() wrote), ascending, to `out`.
 *  @param out room for pl__khop_owned(x, j, set, n) entries.
 *  @return the count, or -ENOMEM (sorting scratch). */
int64_t pl__khop_edges(pl__khop_ctx *x, uint32_t j, const int32_t *set, uint32_t n,
                       int32_t *out);

/** Edges of walked type j owned by the genes `set[0..n)`: an exact bound on
 *  what pl__khop_edges() writes for that set. */
uint64_t pl__khop_owned(const pl__khop *kh, uint32_t j, const int32_t *set, uint32_t n);

#endif
