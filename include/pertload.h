/**
 * @file pertload.h
 * @brief pertload: a data loader for gene-perturbation graph models.
 *
 * Conventions (the same in every function of this header):
 * - A fallible function returns 0 on success or a negative code: a negated
 *   errno value (-ENOENT, -ENOSPC, ...) or one of the PL_E codes below.
 *   pl_strerror() names either kind.
 * - Where a function takes a `pl_err *err` (may be NULL), on failure it also
 *   writes a message there that names the file, line, column or key involved.
 * - Handles are opaque, created by an open/new function and released by the
 *   matching close/free function, which accepts NULL.
 * - Genes are indexed 0..N-1 in the order of the genes file; every list the
 *   masks engine returns is sorted ascending without duplicates.
 */
#ifndef PERTLOAD_H
#define PERTLOAD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PL_API __attribute__((visibility("default")))
#else
#define PL_API
#endif

/* ------------------------------------------------------------------ errors */

/** Library error codes; one table (PL_ERRORS) gives their names and texts. */
#define PL_ERRORS(X)                                                           \
    X(PL_EPARSE, -1001, "malformed input")                                     \
    X(PL_EFORMAT, -1002, "unsupported database format version")                \
    X(PL_ECORRUPT, -1003, "database corrupt (checksum or structure)")          \
    X(PL_ELMDB, -1004, "LMDB error")                                           \
    X(PL_EZSTD, -1005, "zstd error")                                           \
    X(PL_ERANGE, -1006, "index out of range")                                  \
    X(PL_EEXIST, -1007, "output already exists")                               \
    X(PL_EUSAGE, -1008, "invalid argument")

enum {
#define PL__ERR_ENUM(name, code, text) name = code,
    PL_ERRORS(PL__ERR_ENUM)
#undef PL__ERR_ENUM
};

/** An error with its context. `msg` is always NUL-terminated. */
typedef struct pl_err {
    int code;       /**< the negative code that was returned */
    char msg[1024]; /**< "file:line:col: reason", or "key ...: reason" */
} pl_err;

/** Text for a code returned by any pertload function (PL_E* or -errno).
 *  @return a static string; never NULL. */
PL_API const char *pl_strerror(int code);

/** Short name of a code ("PL_EPARSE", "ENOENT"); static string, never NULL. */
PL_API const char *pl_errname(int code);

/* ---------------------------------------------------------------- database */

/** Format version written by this build and the only one it opens. */
#define PL_FORMAT_VERSION 1

/** Maximum number of gene-gene edge types in a database. */
#define PL_MAX_TYPES 64

/** Options of pl_build(); zero-initialise, then fill. */
typedef struct pl_build_opts {
    const char *out;          /**< database directory to create (must not exist) */
    const char *genes;        /**< genes file: one name per line */
    size_t n_types;           /**< number of edge types, 1..PL_MAX_TYPES */
    const char **type_names;  /**< [n_types] edge type names */
    const char **type_files;  /**< [n_types] TSV (`src dst [score]`) or .npy */
    const double *min_score;  /**< [n_types] or NULL; NaN = no filter */
    const char *reactions;    /**< optional reaction list, or NULL */
    const char *gpr;          /**< optional TSV `gene reaction`, or NULL */
    const char *rmr;          /**< optional TSV `reaction metabolite stoich`, or NULL */
    const char *samples;      /**< samples TSV with header (column `genes`) */
    const char *payload;      /**< optional per-sample .npy, or NULL */
    int drop_unknown_genes;   /**< drop records naming unknown genes, count them */
    int progress;             /**< 1: progress on stderr; 0: quiet; -1: if a tty */
    const char *params;       /**< free text stored as the build parameters */
} pl_build_opts;

/** What pl_build() did; all counts after filtering and dropping. */
typedef struct pl_build_stats {
    uint64_t n_genes, n_edges, n_reactions, n_metabolites, n_gpr, n_rmr;
    uint64_t n_samples, n_labels;
    uint64_t dropped_edges;    /**< records dropped for unknown genes */
    uint64_t dropped_gpr, dropped_samples;
    uint64_t filtered_edges;   /**< edges under the per-type minimum score */
    uint64_t graph_bytes;      /**< size of the LMDB file (graph + index) */
    uint64_t sample_bytes;     /**< size of the sample store */
    uint64_t payload_bytes;    /**< size of the payload file, 0 if none */
    double seconds;
} pl_build_stats;

/** Build a database from input files (see DESIGN section 3).
 *  Builds into a temporary directory beside `opts->out` and renames it into
 *  place: on any failure nothing is left at `opts->out` nor beside it.
 *  @param stats filled on success; may be NULL.
 *  @return 0, PL_EPARSE (err names file:line:col), PL_EEXIST, -errno, ... */
PL_API int pl_build(const pl_build_opts *opts, pl_build_stats *stats, pl_err *err);

typedef struct pl_db pl_db;

/** Counts and names of an open database. Owned by the pl_db. */
typedef struct pl_db_info {
    uint32_t format_version;
    uint32_t n_types;
    uint64_t n_genes, n_reactions, n_metabolites, n_gpr, n_rmr;
    uint64_t n_samples;
    uint32_t n_labels;
    uint32_t has_metabolism;          /**< GPR/RMR present */
    uint64_t n_edges[PL_MAX_TYPES];   /**< edges per type */
    const char *const *type_names;    /**< [n_types] */
    const char *const *gene_names;    /**< [n_genes] */
    const char *const *label_names;   /**< [n_labels] */
    const char *const *reaction_names;/**< [n_reactions] (NULL if none) */
    const char *const *metabolite_names; /**< [n_metabolites] */
    const char *params;               /**< build parameters text */
    uint32_t block_rows;              /**< samples per sample-store block */
    uint64_t n_blocks;
    /** payload: dtype ("<f4", "<f2", "|u1", "<i4") or "" when absent */
    char payload_dtype[8];
    uint32_t payload_ndim;            /**< dimensions after the sample axis */
    uint64_t payload_shape[8];
    uint64_t payload_row_bytes;
    uint64_t graph_bytes;             /**< size of data.mdb */
    uint64_t samples_bytes;           /**< size of the sample store */
    uint64_t payload_bytes;           /**< size of payload.npy, 0 if none */
} pl_db_info;

/** Open a database read-only. Checks the format version and the metadata
 *  checksums; deeper checks are pl_db_verify()'s.
 *  @param out set to the handle on success, NULL on failure. */
PL_API int pl_db_open(const char *path, pl_db **out, pl_err *err);

/** Close a database; NULL is accepted. Every pl_graph built on it must be
 *  freed first. */
PL_API void pl_db_close(pl_db *db);

/** The database summary; valid until pl_db_close(). */
PL_API const pl_db_info *pl_db_info_get(const pl_db *db);

/** Look a gene up by name. @return its index, or -1. */
PL_API int64_t pl_db_gene_index(const pl_db *db, const char *name);

/** Check every checksum of the database: metadata, names, edge arrays, every
 *  incidence bitmap, every sample-store block and the payload.
 *  @return 0, or PL_ECORRUPT with err naming the first bad key or block. */
PL_API int pl_db_verify(pl_db *db, pl_err *err);

/** One sample as stored. */
typedef struct pl_sample {
    uint64_t id;
    uint32_t n_genes;
    const int32_t *genes;   /**< deleted genes as listed in the input */
    const float *labels;    /**< [n_labels], NaN where missing */
} pl_sample;

/** Read sample `row` (input order) into `*s`. The arrays stay valid until the
 *  next call on the same db or pl_db_close(); not thread-safe.
 *  @return 0, PL_ERANGE, PL_ECORRUPT, -errno. */
PL_API int pl_db_sample(pl_db *db, uint64_t row, pl_sample *s, pl_err *err);

/* ------------------------------------------------------------------- masks */

typedef struct pl_graph pl_graph;

/** Load the incidence of every list kind into memory, read-only and shareable
 *  between threads. List kinds: 0..n_types-1 the edge types, then (when the
 *  database has metabolism) PL_LIST_GPR, PL_LIST_REACTION, PL_LIST_RMR offset
 *  by n_types. Verifies each bitmap's checksum. */
PL_API int pl_graph_load(pl_db *db, pl_graph **out, pl_err *err);
PL_API void pl_graph_free(pl_graph *g);

enum { PL_LIST_GPR = 0, PL_LIST_REACTION = 1, PL_LIST_RMR = 2 };

/** Number of removed-position lists a sample has: n_types (+3 with metabolism). */
PL_API uint32_t pl_graph_n_lists(const pl_graph *g);

/** Name of list kind `k` ("physical", ..., "gpr", "reaction", "rmr"). */
PL_API const char *pl_graph_list_name(const pl_graph *g, uint32_t k);

/** Per-thread masks context: scratch reused between samples, no allocation
 *  per sample in steady state. */
typedef struct pl_masks pl_masks;

PL_API pl_masks *pl_masks_new(const pl_graph *g);
PL_API void pl_masks_free(pl_masks *m);

/** A sorted list owned by someone else. */
typedef struct pl_list {
    const int32_t *v;
    uint32_t n;
} pl_list;

/** Masks of one sample. Pointers are owned by the pl_masks and valid until the
 *  next pl_masks_compute() on it. */
typedef struct pl_masks_result {
    pl_list pert;              /**< perturbation_indices: sorted unique genes */
    uint32_t n_lists;          /**< pl_graph_n_lists() */
    const pl_list *removed;    /**< [n_lists] removed positions per list kind */
} pl_masks_result;

/** Compute the removed positions of every list kind for the deleted genes
 *  `genes[0..n)` (duplicates ignored).
 *  @return 0, or PL_ERANGE when a gene index is out of range. */
PL_API int pl_masks_compute(pl_masks *m, const int32_t *genes, uint32_t n,
                            pl_masks_result *out);

#ifdef __cplusplus
}
#endif
#endif /* PERTLOAD_H */
