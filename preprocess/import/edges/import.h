/* One edge source from file to resolved gene pairs: the reader (reader.h),
 * name resolution (names.h), strict mode and the pair policy.
 *
 * Pair policy: `undirected` = 0 keeps the edges as listed; 1 keeps one edge
 * per unordered pair {a, b}, the first occurrence (with its score), and
 * counts the rest as duplicates removed (STRING lists each pair twice,
 * BioGRID repeats pairs across experiments).
 * A row with an unresolved name is dropped and counted (both names noted);
 * in strict mode it is an error "file:line:col: unresolved gene name 'X'". */
#ifndef PL_IMPORT_IMPORT_H
#define PL_IMPORT_IMPORT_H

#include <stdint.h>

#include "preprocess/import/names/names.h"
#include "reader.h"

/** One edge source of a recipe. */
typedef struct pl_imp_source {
    char *name;                /**< edge-type name */
    const pl_imp_format *fmt;
    char *file;                /**< resolved path */
    pl_imp_opts opts;
    int undirected;            /**< pair policy, see above */
    uint64_t line;             /**< line of the recipe that starts it */
    double min_resolved;       /**< share of rows that must resolve (recipe default 0.5) */
    int allow_empty;           /**< 1: no resolution check (pl__imp_check_resolved) */
    /** string_actions `types`: on the first of `shared` (> 1) sources that
     *  differ only in name and their one mode, read in one pass
     *  (pl__imp_run_shared()); 0 or 1: read alone */
    uint32_t shared;
} pl_imp_source;

/** Counts of one run. */
typedef struct pl_imp_result {
    pl_imp_stats read;    /**< rows, filtered (by the format's filters), emitted */
    uint64_t unresolved;  /**< rows dropped for an unresolved name */
    uint64_t duplicates;  /**< rows removed by the undirected policy */
    uint64_t kept;        /**< edges handed to `out` */
    pl_unres names;       /**< the unresolved names; pl__unres_free() it */
} pl_imp_result;

/** Receives each kept edge as gene indices; a negative return stops the run. */
typedef int (*pl_imp_out)(void *ctx, uint32_t src, uint32_t dst, double score, pl_err *err);

/** Read source `s` through `nm`; `out` may be NULL (count only). `r` is
 *  zeroed first and keeps its unresolved names even on failure.
 *  @return 0 or a negative code. */
int pl__imp_run(const pl_names *nm, const pl_imp_source *s, int strict, pl_imp_out out,
                void *ctx, pl_imp_result *r, pl_err *err);

/** Read the `k` sources `s[0..k)` (one file, the format's one-mode-each
 *  split: pl_imp_source.shared) in one pass: each edge goes, through the
 *  pair policy of its source, to `out(ctxs[j], ...)` of the source `j` of its
 *  mode. `r[0..k)` are zeroed first: each source's counts as if read alone
 *  (rows: the file's; filtered: the rows of other modes and the filters').
 *  @return 0 or a negative code. */
int pl__imp_run_shared(const pl_names *nm, const pl_imp_source *s, uint32_t k, int strict,
                       pl_imp_out out, void *const *ctxs, pl_imp_result *r, pl_err *err);

/** The resolution check of a run: PL_EPARSE naming the source, its file,
 *  the share of its rows (those the format's filters kept) whose names both
 *  resolve and its 10 most frequent unresolved names, when the source keeps
 *  no edge (unless min_resolved is 0) or that share is under
 *  `s->min_resolved`; `s->allow_empty` accepts anything. @return 0 or
 *  PL_EPARSE. */
int pl__imp_check_resolved(const pl_imp_source *s, const pl_imp_result *r, pl_err *err);

#endif
