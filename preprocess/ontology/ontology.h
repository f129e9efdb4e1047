/* Ontology layers (DESIGN section 10): readers of OBO + GAF and of the
 * three-column `parent child type` file of the DCell code, the term filters,
 * the gene closure, the strata schedule and the per-gene sets.
 *
 * Reading fills a pl_onto_raw (terms in first-appearance order, term-term
 * edges child -> parent, annotation rows gene -> term in input order);
 * pl__onto_build() turns it into a pl_onto:
 *   - kept terms: defined, not obsolete, in one of the namespaces asked for;
 *     edges between kept terms only (OBO: the relations asked for);
 *   - a cycle is an error naming its terms and the line of one of its edges;
 *   - genes(T) = genes annotated to T or to any descendant of T;
 *   - terms with |genes(T)| < max(min_term_genes, 1) are removed; the children
 *     of a removed term are re-attached to its nearest kept ancestors, and so
 *     are its annotations, so filtering never changes genes(T) of a kept term;
 *   - annotations: the (gene, term) pairs of the kept rows after that moving,
 *     deduplicated, in the order of their first row (= annotation positions);
 *   - stratum(T) = 0 without child terms, else 1 + max stratum of children;
 *     per stratum the terms grouped by (direct genes, children), groups in
 *     ascending order of that key, terms ascending within a group.
 * Kept terms are numbered in their definition order: OBO stanza order; in the
 * three-column file, the order in which terms are first named.
 */
#ifndef PL_ONTOLOGY_H
#define PL_ONTOLOGY_H

#include <stdint.h>

#include "pertload.h"
#include "preprocess/import/names/names.h"
#include "src/core/strtab.h"

/** Resolve a gene name `s[0..len)` to its index, or -1. */
typedef int64_t (*pl_onto_resolve_fn)(void *ctx, const char *s, size_t len);

enum { PL_ONTO_DEFINED = 1, PL_ONTO_OBSOLETE = 2 };

/** What the readers produce. Zero-initialise; free with pl__onto_raw_free(). */
typedef struct pl_onto_raw {
    pl_strtab ids;      /**< term ids, first appearance (definition or reference) */
    pl_strtab alt;      /**< OBO alt_id -> alt_to[] (a term index) */
    uint32_t *alt_to;
    uint64_t cap_alt;
    pl_strtab nss;      /**< namespace names */
    uint32_t *ns;       /**< per term: namespace index + 1; 0 = none */
    uint8_t *flags;     /**< per term: PL_ONTO_DEFINED | PL_ONTO_OBSOLETE */
    uint64_t cap_terms;
    uint32_t *def;      /**< defined terms in definition order */
    uint64_t n_def, cap_def;
    uint32_t *e_child, *e_parent; /**< term-term edges */
    uint64_t *e_line;   /**< line of each edge in `edge_path` */
    uint64_t n_edges, cap_edges;
    uint32_t *a_gene, *a_term;    /**< annotation rows kept by the reader */
    uint64_t n_ann, cap_ann;
    char *edge_path;    /**< the ontology file (for cycle messages) */
} pl_onto_raw;

/** Options of the readers and the filters. Strings are comma-separated lists;
 *  NULL means: every namespace; relations "is_a"; every evidence code. */
typedef struct pl_onto_opts {
    const char *namespaces;
    const char *relations;
    const char *evidence;         /**< codes kept (exclusive with exclude_evidence) */
    const char *exclude_evidence; /**< codes dropped */
    uint32_t min_term_genes;      /**< 0 and 1: every term with a gene */
    /** 1: an annotation naming a gene that does not resolve is an error
     *  naming file:line:col (else it is counted in unknown_genes) */
    int strict;
} pl_onto_opts;

/** Counts of a read and build. Zero-initialise; free with pl__onto_stats_free(). */
typedef struct pl_onto_stats {
    uint64_t terms_read, obsolete, dangling_edges, edges_read, relations_skipped;
    uint64_t rows, not_rows, evidence_skipped, unknown_terms, obsolete_rows,
        namespace_rows;
    uint64_t removed_terms, duplicates;
    pl_unres unknown_genes; /**< gene names that did not resolve */
    /** DCell topology files: children named again on one TERMS: line (one
     *  link each); ROOT: counts that differ from the term's gene closure and,
     *  for the first PL_ONTO_NOTES of them, one line each in count_notes
     *  (`file:line: the ROOT: count of term 'T' is N where its gene closure
     *  has M`, malloc'd, NULL when none) */
    uint64_t repeated_children, count_mismatches;
    char *count_notes;
} pl_onto_stats;

enum { PL_ONTO_NOTES = 20 };

/** The built ontology; arrays malloc'd, freed by pl__onto_free(). */
typedef struct pl_onto {
    uint32_t n_terms, n_genes, n_strata, n_groups;
    char **term_id;         /**< [n_terms] */
    uint64_t n_ann;
    uint32_t *ann_gene, *ann_term;     /**< [n_ann] annotation positions */
    uint32_t *child_ptr, *child_idx;   /**< CSR [n_terms+1]: children ascending */
    uint32_t *dgene_ptr, *dgene_idx;   /**< CSR [n_terms+1]: direct genes ascending */
    uint32_t *ngenes;                  /**< [n_terms] |genes(T)| */
    uint32_t *stratum;                 /**< [n_terms] */
    uint32_t *stratum_ptr;             /**< [n_strata+1] into group_* (groups of a stratum) */
    uint32_t *group_ptr, *group_terms; /**< [n_groups+1] into group_terms [n_terms] */
    uint32_t *group_ngenes, *group_nchildren; /**< [n_groups] the key of each group */
    uint64_t *gann_ptr; uint32_t *gann_idx;   /**< CSR [n_genes+1]: annotation positions */
    uint64_t *gterm_ptr; uint32_t *gterm_idx; /**< CSR [n_genes+1]: affected terms */
} pl_onto;

/** Read an OBO 1.2/1.4 file ([Term] stanzas: id, namespace, is_obsolete,
 *  alt_id, is_a, relationship; other stanzas and tags ignored). Edges of
 *  relations not in `o->relations` are counted in relations_skipped. */
int pl__onto_read_obo(pl_onto_raw *r, const char *path, const pl_onto_opts *o,
                      pl_onto_stats *st, pl_err *err);

/** Read a GAF 2.x file after the OBO. Rows with a NOT qualifier, a filtered
 *  evidence code, a term that is not defined (alt_ids map to their term),
 *  or a gene that does not resolve are counted, not kept. The gene is the
 *  first of column 3 (DB Object Symbol), each '|'-separated name of column 11
 *  (synonyms; SGD lists the systematic ORF name there) and column 2 (DB
 *  Object ID) that resolves; an unresolved gene is noted under column 3
 *  (o->strict: an error at column 3). */
int pl__onto_read_gaf(pl_onto_raw *r, const char *path, const pl_onto_opts *o,
                      pl_onto_resolve_fn resolve, void *ctx, pl_onto_stats *st, pl_err *err);

/** Read the three-column file of the DCell code: `parent child type` (tabs or
 *  blanks); type `gene` makes `child` a gene annotated to `parent`, any other
 *  type a term-term edge. Every term named is defined. `strict`: a gene that
 *  does not resolve is an error (else counted in unknown_genes). A file whose
 *  first line (after blank and '#' lines) starts with "ROOT:" is read as a
 *  DCell topology file (pl__onto_read_dcell_blocks()). */
int pl__onto_read_dcell(pl_onto_raw *r, const char *path, pl_onto_resolve_fn resolve, void *ctx,
                        int strict, pl_onto_stats *st, pl_err *err);

/** The rest of a DCell topology file (dcell_topo.c: blocks `ROOT: <term>
 *  <n>`, `GENES: <gene> ...`, `TERMS: <child> ...`) whose first line
 *  `line[0..len)` has just been read from `src`. Terms are defined in block
 *  order; a term's annotations are the genes of its GENES: line (its direct
 *  genes); edges are child -> term, a child repeated on one TERMS: line is
 *  one edge (counted in repeated_children). n, the size of the term's gene
 *  closure over the names as written, is checked: a mismatch is counted
 *  (count_mismatches, count_notes), an error under `strict`. Counts:
 *  terms_read (blocks), rows (names under GENES:), edges_read; unresolved
 *  genes as in pl__onto_read_dcell(). @return 0 or PL_EPARSE naming
 *  file:line. */
int pl__onto_read_dcell_blocks(pl_onto_raw *r, struct pl_src *src, const char *line,
                               size_t len, pl_onto_resolve_fn resolve, void *ctx, int strict,
                               pl_onto_stats *st, pl_err *err);

/** Build the ontology over `n_genes` genes from `r` (see the top of this
 *  header). @return 0, PL_EPARSE (a cycle, naming its terms), PL_EUSAGE (an
 *  unknown namespace), -ENOMEM; on failure `*out` is zeroed. */
int pl__onto_build(const pl_onto_raw *r, uint32_t n_genes, const pl_onto_opts *o,
                   pl_onto *out, pl_onto_stats *st, pl_err *err);

/** Intern term `s[0..len)`; `*idx` its index. @return 0 or -ENOMEM. */
int pl__onto_raw_term(pl_onto_raw *r, const char *s, size_t len, uint32_t *idx);

/** Mark term `t` defined (once; later calls do nothing) and note its rank.
 *  @return 1 when it was defined already, 0 when newly, -ENOMEM. */
int pl__onto_raw_define(pl_onto_raw *r, uint32_t t);

/** Append an edge child -> parent seen at `line`. @return 0 or -ENOMEM. */
int pl__onto_raw_edge(pl_onto_raw *r, uint32_t child, uint32_t parent, uint64_t line);

/** Append an annotation row. @return 0 or -ENOMEM. */
int pl__onto_raw_ann(pl_onto_raw *r, uint32_t gene, uint32_t term);

/** 1 when `s[0..len)` is an item of the comma-separated `list`. */
int pl__onto_in_list(const char *list, const char *s, size_t len);

void pl__onto_raw_free(pl_onto_raw *r);
void pl__onto_stats_free(pl_onto_stats *st);
void pl__onto_free(pl_onto *o);

#endif
