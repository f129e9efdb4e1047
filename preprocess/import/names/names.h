/* Gene names: the gene list, alias tables, unresolved-name accounting and
 * the unordered-pair set of the undirected policy.
 *
 * Resolution of a name, first hit wins:
 *   1. the name is in the gene list (exactly as written);
 *   2. the name is an alias (exactly as written); aliases of an earlier table
 *      take precedence over those of a later one (in SGD_features.tab,
 *      standard names and SGDIDs over the free-form alias column); an alias
 *      that one table maps to two different genes is ambiguous and resolves
 *      to nothing;
 *   3. steps 1 and 2 again on the name in ASCII upper case against upper-cased
 *      gene names and aliases (yeast nomenclature is case-insensitive:
 *      "ygr017w" and "Act1" name YGR017W and ACT1); an upper-cased key shared
 *      by two different genes is ambiguous.
 * A gene-list name always beats an alias spelled the same way.
 */
#ifndef PL_IMPORT_NAMES_H
#define PL_IMPORT_NAMES_H

#include <stdint.h>

#include "pertload.h"
#include "preprocess/import/source/source.h"

typedef struct pl_names pl_names;

/** A new, empty resolver. @return 0 or -ENOMEM. */
int pl__names_new(pl_names **out, pl_err *err);

/** Release; accepts NULL. */
void pl__names_free(pl_names *nm);

/** Load the gene list: one name a line (the first blank-separated field;
 *  blank lines are errors), plain/gzip/zstd. A name listed twice is an
 *  error naming both lines. `header`: the first line names the column and
 *  is skipped. Call once, before any alias table. */
int pl__names_load_genes(pl_names *nm, const char *path, int header, pl_err *err);

/** The gene list from memory (`n` distinct names, in order) instead of a
 *  file, resolved exactly: no alias, no upper-case step (the resolution of
 *  a plain `build`, whose gene list this is). */
int pl__names_exact_list(pl_names *nm, char *const *names, uint64_t n, pl_err *err);

/** Alias table layouts. */
typedef enum pl_alias_kind {
    PL_ALIAS_TABLE = 0,    /**< delimited, `gene_col` and `alias_col` given */
    PL_ALIAS_SGD_FEATURES, /**< SGD_features.tab: systematic name (col 4) <- standard
                                name (col 5), SGDID (col 1), aliases (col 6, '|'-split) */
    PL_ALIAS_STRING        /**< STRING protein.aliases (aliases.c) */
} pl_alias_kind;

enum { PL_ALIAS_MAX_SOURCES = 64 };

/** How one alias table is read. */
typedef struct pl_alias_spec {
    const char *path;
    pl_alias_kind kind;
    int gene_col, alias_col; /**< PL_ALIAS_TABLE: 1-based columns */
    int header;              /**< PL_ALIAS_TABLE: skip the first line */
    char sep;                /**< PL_ALIAS_TABLE: 0 = tab; ' ' = runs of blanks */
    /** PL_ALIAS_STRING: alias sources kept (none: all) */
    const char *sources[PL_ALIAS_MAX_SOURCES];
    uint32_t n_sources;
} pl_alias_spec;

/** Counts of one alias table. */
typedef struct pl_alias_stats {
    uint64_t rows;       /**< data rows read */
    uint64_t added;      /**< aliases added */
    uint64_t no_gene;    /**< rows whose gene is not in the gene list */
    uint64_t ambiguous;  /**< aliases this table maps to two genes */
    uint64_t filtered;   /**< PL_ALIAS_STRING: rows of other sources */
} pl_alias_stats;

/** Read one alias table (after the gene list; aliases.c). Rows whose gene
 *  column is not a gene of the list are counted, not errors. */
int pl__names_load_aliases(pl_names *nm, const pl_alias_spec *spec, pl_alias_stats *st,
                           pl_err *err);

/** For the alias readers: start a table (its precedence: earlier tables
 *  win), look a gene-list name up exactly (-1: none), add alias s -> gene g
 *  with precedence `prec` (counted in st). @return 0 or -ENOMEM. */
uint32_t pl__names_table_begin(pl_names *nm);
int64_t pl__names_listed(const pl_names *nm, const char *s, size_t len);
int pl__names_add_alias(pl_names *nm, const char *s, size_t len, int32_t g, uint32_t prec,
                        pl_alias_stats *st);

/** Number of genes in the list. */
uint32_t pl__names_count(const pl_names *nm);

/** Name of gene `i` (NUL-terminated, owned by `nm`). */
const char *pl__names_gene(const pl_names *nm, uint32_t i);

/** Gene index of `s[0..len)` by the rules above, or -1. */
int64_t pl__names_resolve(const pl_names *nm, const char *s, size_t len);

/** Unresolved names of one source: each distinct name with its count and the
 *  line where it first appeared. Zero-initialise; free with
 *  pl__unres_free(). */
typedef struct pl_unres {
    void *tab;          /* pl_strtab */
    uint64_t *count, *first_line;
    uint64_t cap, total; /* total = occurrences */
} pl_unres;

/** Note one unresolved occurrence at `line`. @return 0 or -ENOMEM. */
int pl__unres_add(pl_unres *u, const char *s, size_t len, uint64_t line);

/** Distinct unresolved names. */
uint32_t pl__unres_distinct(const pl_unres *u);

/** The i-th distinct name (first-seen order), its count and first line. */
const char *pl__unres_name(const pl_unres *u, uint32_t i, uint64_t *count, uint64_t *line);

/** "'A' (12), 'B' (3), ..." : the 10 most frequent names of `u` (ties in
 *  first-seen order, each cut at 60 bytes) into buf[0..cap), or "none". */
void pl__unres_top(const pl_unres *u, char *buf, size_t cap);

void pl__unres_free(pl_unres *u);

/** A set of unordered gene pairs {a, b} (the undirected policy).
 *  Zero-initialise; free with pl__pairset_free(). */
typedef struct pl_pairset {
    uint64_t *slots; /* key + 1, 0 = empty */
    uint64_t mask, n;
} pl_pairset;

/** Insert {a, b}. @return 1 when new, 0 when already there, -ENOMEM. */
int pl__pairset_add(pl_pairset *p, uint32_t a, uint32_t b);

void pl__pairset_free(pl_pairset *p);

#endif
