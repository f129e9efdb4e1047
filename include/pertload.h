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
    X(PL_EUSAGE, -1008, "invalid argument")                                   \
    X(PL_EPEER, -1009, "peer process died")                                    \
    X(PL_EBUSY, -1010, "in use by a live process")                             \
    X(PL_ETIMEDOUT, -1011, "timed out")

enum {
#define PL__ERR_ENUM(name, code, text) name = code,
    PL_ERRORS(PL__ERR_ENUM)
#undef PL__ERR_ENUM
};

/** Room of pl_err.msg: a path of PATH_MAX bytes and its reason. */
#define PL_ERR_MSG_MAX 8192

/** An error with its context. `msg` is always NUL-terminated; a message that
 *  would not fit keeps its start and its end (the reason), with "..." in place
 *  of the middle. (Its size is part of the ABI: it grew from 1024 bytes in
 *  soversion 1.) */
typedef struct pl_err {
    int code;                 /**< the negative code that was returned */
    char msg[PL_ERR_MSG_MAX]; /**< "file:line:col: reason", or "key ...: reason" */
} pl_err;

/** Text for a code returned by any pertload function (PL_E* or -errno).
 *  @return a static string; never NULL. */
PL_API const char *pl_strerror(int code);

/** Short name of a code ("PL_EPARSE", "ENOENT"); static string, never NULL. */
PL_API const char *pl_errname(int code);

/* ---------------------------------------------------------------- database */

/** Format version written by this build and the only one it opens. */
#define PL_FORMAT_VERSION 7

/** Maximum number of gene-gene edge types in a database. */
#define PL_MAX_TYPES 64

/** Maximum number of category columns of a database's samples. */
#define PL_MAX_CATEGORIES 256

/** When a reaction is removed (DESIGN section 2), chosen at build. */
enum {
    PL_REACTION_DEFAULT = 0, /**< pl_build_opts: GPR with rules, else ANY */
    PL_REACTION_ANY = 1,     /**< any of its GPR genes is deleted */
    PL_REACTION_GPR = 2,     /**< its gene-reaction rule is false */
};

/** Options of pl_build(); zero-initialise, then fill. */
typedef struct pl_build_opts {
    const char *out;          /**< database directory to create (must not exist) */
    const char *genes;        /**< genes file: one name per line */
    size_t n_types;           /**< number of edge types, 1..PL_MAX_TYPES (0 with metabolism) */
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
    /** optional TSV `reaction rule` of gene-reaction rules, or NULL; its
     *  genes give the GPR edges, so it excludes `gpr` */
    const char *rules;
    int reaction_rule;        /**< PL_REACTION_*; GPR needs `rules` */
    /* Ontology layers (DESIGN section 10), optional: an OBO ontology with GAF
     * annotations, or the three-column `parent child type` file. */
    const char *ontology;          /**< OBO file, or NULL */
    const char *annotations;       /**< GAF 2.x file (with `ontology`) */
    const char *ontology_dcell;    /**< three-column file (excludes `ontology`) */
    const char *go_namespaces;     /**< comma-separated namespaces kept; NULL: all */
    const char *go_relations;      /**< comma-separated relations; NULL: "is_a" */
    const char *evidence;          /**< comma-separated evidence codes kept; NULL: all */
    const char *exclude_evidence;  /**< comma-separated evidence codes dropped */
    uint32_t min_term_genes;       /**< terms with fewer genes are removed (0, 1: none) */
    /* Node features (DESIGN section 16), optional: per node type one .npy
     * matrix [n_nodes, F] of float32 ('<f4') or float16 ('<f2'), C order,
     * stored in the database (pl_db_features). */
    size_t n_node_features;           /**< entries of the two arrays below */
    const char *const *feature_types; /**< node type of each: "gene", "reaction",
                                           "metabolite" or "term" */
    const char *const *feature_files; /**< the .npy file of each */
    /** comma-separated text columns of `samples` kept as categories (a
     *  split name), or NULL; the table is then read by the sample-table
     *  reader of recipes (names resolved as a recipe resolves them) */
    const char *categories;
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
    uint64_t n_rules;          /**< reactions with a gene-reaction rule */
    uint64_t n_terms, n_term_annotations; /**< ontology terms and annotations kept */
    uint32_t n_strata;         /**< strata of the ontology */
    uint64_t unknown_term_genes; /**< annotation rows naming genes not in the list */
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
    uint32_t reaction_rule;           /**< PL_REACTION_ANY or PL_REACTION_GPR */
    uint32_t n_categories;            /**< category columns (lines of `categories`) */
    uint64_t n_rules;                 /**< reactions with a gene-reaction rule */
    uint64_t n_rule_words;            /**< words of their programs (PL_ARRAY_RULES) */
    uint64_t n_terms;                 /**< ontology terms (0: no ontology) */
    uint64_t n_term_annotations;      /**< ontology annotation positions */
    uint32_t n_strata, n_term_groups; /**< the ontology's strata and groups */
    /** Fingerprint of the gene list: XXH64 (seed 0) of the gene names in
     *  order, each followed by one NUL byte. Two databases with the same
     *  fingerprint index genes the same way. */
    uint64_t gene_fingerprint;
    /** [n_types] fingerprint of each edge type's arrays: XXH64 (seed 0) of
     *  int32 little-endian src[E] then dst[E] (pl_db_graph_array's bytes). */
    uint64_t edge_fingerprint[PL_MAX_TYPES];
    /** `build --recipe`: the recipe file's bytes (NUL-terminated), else "" */
    const char *recipe;
    /** lines "size<TAB>xxh64<TAB>path" of the recipe's input files, or "" */
    const char *recipe_inputs;
    /** per edge source: "name format=F rows=R filtered=F unresolved=U
     *  duplicates=D kept=K file=PATH" lines, or "" */
    const char *recipe_sources;
    /** the category columns of the samples (a split name), kept apart from
     *  the labels: one line each, "column<TAB>level 0<TAB>level 1...\n"
     *  (code k is level k), or ""; their codes per row are read with
     *  pl_db_level_rows(). A column is also a label only when the build
     *  listed it under the labels too. */
    const char *categories;
    /** One identity over everything the database serves: genes, edges,
     *  metabolism, rules, ontology, labels, the sample blocks and the
     *  payload (every stored value's checksum; not the build's command
     *  line, paths or recipe). Two databases with the same fingerprint serve
     *  the same batches and graph; a Loader refuses batches of another. */
    uint64_t db_fingerprint;
} pl_db_info;

/** Open a database read-only. Checks the format version and the metadata
 *  checksums; deeper checks are pl_db_verify()'s.
 *  @param out set to the handle on success, NULL on failure. */
PL_API int pl_db_open(const char *path, pl_db **out, pl_err *err);

/** The ontology layers of a database (DESIGN section 10): the term table,
 *  the strata schedule, the annotations and the per-gene sets. Arrays are
 *  owned by the handle; CSR arrays `x_ptr` index `x_idx`, each run ascending.
 *  Term T's stratum is 0 without child terms, else 1 + the maximum stratum of
 *  its children; stratum s holds groups stratum_ptr[s] .. stratum_ptr[s+1],
 *  group k the terms group_terms[group_ptr[k] .. group_ptr[k+1]), all with
 *  group_n_genes[k] direct genes and group_n_children[k] children. */
typedef struct pl_ontology {
    uint32_t n_terms, n_strata, n_groups, n_genes;
    uint64_t n_annotations;
    const char *const *term_names;                 /**< [n_terms] */
    const uint32_t *child_ptr, *child_idx;         /**< child terms of each term */
    const uint32_t *gene_ptr, *gene_idx;           /**< direct genes of each term */
    const uint32_t *n_term_genes;                  /**< [n_terms] |genes(T)| */
    const uint32_t *stratum;                       /**< [n_terms] */
    const uint32_t *stratum_ptr;                   /**< [n_strata + 1] */
    const uint32_t *group_ptr, *group_terms;       /**< [n_groups + 1], [n_terms] */
    const uint32_t *group_n_genes, *group_n_children; /**< [n_groups] */
    const uint32_t *ann_gene, *ann_term;           /**< [n_annotations] */
    const uint64_t *gene_term_ptr;                 /**< [n_genes + 1] */
    const uint32_t *gene_term_idx;                 /**< terms each gene affects */
    const uint64_t *gene_ann_ptr;                  /**< [n_genes + 1] */
    const uint32_t *gene_ann_idx;                  /**< annotation positions of each gene */
} pl_ontology;

/** Load and check the ontology of `db` (every index in range, the strata
 *  consistent with the children, each term in one group of its key).
 *  @return 0, -ENOENT (the database has none; err says so), PL_ECORRUPT. */
PL_API int pl_ontology_load(pl_db *db, pl_ontology **out, pl_err *err);

/** Release; NULL is accepted. Valid only while its pl_db is open. */
PL_API void pl_ontology_free(pl_ontology *o);

/** The ontology lists of a deletion set: the affected terms (genes(T) meets
 *  the set) and the removed annotation positions (their gene is deleted),
 *  ascending, as unions of the genes' sets.
 *  @param genes gene indices, each < o->n_genes (duplicates allowed).
 *  @param terms room for n_terms, or for the sizes of the genes' term sets
 *         summed when that is less (the most a union can hold and write);
 *  @param ann likewise: n_annotations, or the genes' annotation sets summed.
 *  @return 0 or PL_ERANGE (a gene out of range). */
PL_API int pl_ontology_removed(const pl_ontology *o, const int32_t *genes, uint32_t n,
                               uint32_t *terms, uint32_t *n_out_terms, uint32_t *ann,
                               uint64_t *n_out_ann);

/** The most state columns of a schedule (annotations and every term's
 *  output): slot_out[n_terms] of a pl_schedule_map is at most this. */
#define PL_SCHEDULE_MAX_COLUMNS 2147483647u

/** The schedule of a DCell-style model (docs/dcell.md; built by the Python
 *  client's Schedule): terms in slots (schedule order), slots in groups,
 *  groups in strata. Every array is the caller's; pl_schedule_affected
 *  checks every index and run against n_terms, n_groups and n_strata before
 *  it writes. */
typedef struct pl_schedule_map {
    uint32_t n_terms, n_groups, n_strata;
    const uint32_t *term_slot;   /**< [n_terms] slot of each term */
    const uint32_t *group_ptr;   /**< [n_groups + 1] slots of each group */
    const uint32_t *stratum_ptr; /**< [n_strata + 1] groups of each stratum */
    const uint64_t *slot_in_ptr; /**< [n_terms + 1] each slot's run of slot_in */
    const int64_t *slot_in;      /**< the state columns of each slot's input */
    const uint64_t *slot_out;    /**< [n_terms + 1] slot s writes columns
                                      slot_out[s] .. slot_out[s+1] */
} pl_schedule_map;

/** Where pl_schedule_affected writes (the caller's arrays). */
typedef struct pl_schedule_affected_out {
    int64_t *group_ptr;    /**< [n_groups + 1] */
    int64_t *positions;    /**< room for n_terms: per group the positions in
                                the group of the terms any sample affects */
    int64_t *sample_ptr;   /**< [n_samples + 1] */
    int64_t *sample_slots; /**< room for ptr[n_samples]: per sample its slots,
                                ascending */
    int64_t *gather_ptr;   /**< [n_strata + 1] */
    int64_t *gather;       /**< room for slot_in_ptr[n_terms]: per stratum the
                                input columns of the affected slots, in order */
    int64_t *scatter_ptr;  /**< [n_strata + 1] */
    int64_t *scatter;      /**< room for the output columns of all slots: per
                                stratum those of the affected slots */
    /* The same four for the other slots (no sample affects them), each with
     * the same room: rest_group_ptr, rest_positions, rest_gather_ptr, ... */
    int64_t *rest_group_ptr, *rest_positions, *rest_gather_ptr, *rest_gather;
    int64_t *rest_scatter_ptr, *rest_scatter;
} pl_schedule_affected_out;

/** The affected-term schedule of a batch: from each sample's affected terms
 *  (the batch's ontology term lists, terms[ptr[b] .. ptr[b+1])), the union
 *  over the batch laid out by group and stratum of `m`, its complement (the
 *  `rest_` arrays) likewise, and each sample's slots. `terms` holds
 *  ptr[n_samples] entries (the caller's to size).
 *  @return 0, PL_ERANGE with err naming the sample and term when a term is
 *          out of range or a ptr decreases, PL_EUSAGE with err naming the
 *          array when `m` is inconsistent (a slot or group out of range, a
 *          run that decreases, more than PL_SCHEDULE_MAX_COLUMNS columns),
 *          -ENOMEM. Nothing is written on failure but err. */
PL_API int pl_schedule_affected(const pl_schedule_map *m, const int32_t *terms,
                                const int64_t *ptr, uint32_t n_samples,
                                const pl_schedule_affected_out *out, pl_err *err);

/** Close a database; NULL is accepted. Every pl_graph built on it must be
 *  freed first. */
PL_API void pl_db_close(pl_db *db);

/** The database summary; valid until pl_db_close(). */
PL_API const pl_db_info *pl_db_info_get(const pl_db *db);

/** Look a gene up by name. @return its index, or -1. */
PL_API int64_t pl_db_gene_index(const pl_db *db, const char *name);

/** Node types that can carry a feature matrix, in this order. */
#define PL_NODE_TYPES {"gene", "reaction", "metabolite", "term"}
enum { PL_N_NODE_TYPES = 4 };

/** The feature matrix of node type `type` stored by `pertload build
 *  --node-features` (recipe key `features:`): `rows` (the type's node
 *  count) by `cols` elements, row-major, of `dtype` ("<f4" float32 or "<f2"
 *  float16, NUL-terminated). Its checksum is checked on every call.
 *  @param data set to the first element, aligned to the element size; it
 *         lives in the database's map (or a copy the handle owns) until
 *         pl_db_close().
 *  @return 0, -ENOENT (no matrix stored for that type; err says so),
 *          PL_EUSAGE (not a node type), PL_ECORRUPT, -ENOMEM. */
PL_API int pl_db_features(pl_db *db, const char *type, uint64_t *rows, uint64_t *cols,
                          char dtype[4], const void **data, pl_err *err);

/** Check every checksum of the database: metadata, names, edge arrays (and
 *  their fingerprints), every
 *  incidence bitmap, every sample-store block and the payload.
 *  @return 0, or PL_ECORRUPT with err naming the first bad key or block. */
PL_API int pl_db_verify(pl_db *db, pl_err *err);

/** Graph arrays pl_db_graph_array() can copy out. */
enum {
    PL_ARRAY_GPR = -1,        /**< int32 [2, n_gpr]: gene row, reaction row */
    PL_ARRAY_RMR = -2,        /**< int32 [2, n_rmr]: reaction row, metabolite row */
    PL_ARRAY_RMR_STOICH = -3, /**< float32 [n_rmr] stoichiometry */
    /** uint32 [n_reactions + 1 + words]: the gene-reaction rules (when
     *  n_rules > 0), offsets then postfix programs: reaction r's rule is
     *  words off[r] .. off[r+1] after the offsets; a word below 0xFFFFFFFD
     *  pushes "that gene is not deleted", 0xFFFFFFFF is and, 0xFFFFFFFE is
     *  or, 0xFFFFFFFD pushes true; an empty rule is no rule. */
    PL_ARRAY_RULES = -4,
};

/** Copy a graph array into `out` (`cap` bytes). `which` >= 0 is an edge type:
 *  its edge_index as int32 [2, E] (src row, then dst row).
 *  @return the number of bytes written, PL_ERANGE when `cap` is too small or
 *  `which` is unknown, PL_ECORRUPT. */
PL_API int64_t pl_db_graph_array(pl_db *db, int which, void *out, size_t cap, pl_err *err);

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

/** The rows of a split: the rows (input order, ascending) whose category
 *  column `column` (one of pl_db_info.categories) holds the level named
 *  `level` (compared byte for byte). Reads the column's codes from the
 *  category store (not the sample store; safe beside pl_db_sample()).
 *  @param rows room for `cap` rows; the first `cap` of them are written
 *  (NULL with cap 0 counts them).
 *  @return the number of rows of the level (0 when no row holds it), or
 *  PL_EUSAGE (no category column `column` or no level `level`: err names
 *  them and lists the category columns or the column's levels),
 *  PL_ECORRUPT, -errno. */
PL_API int64_t pl_db_level_rows(pl_db *db, const char *column, const char *level,
                                uint32_t *rows, uint64_t cap, pl_err *err);

/* ------------------------------------------------------------------- masks */

typedef struct pl_graph pl_graph;

/** Load the incidence of every list kind into memory, read-only and shareable
 *  between threads. List kinds: 0..n_types-1 the edge types, then (when the
 *  database has metabolism) PL_LIST_GPR, PL_LIST_REACTION, PL_LIST_RMR offset
 *  by n_types. Verifies each bitmap's checksum. Memory is linear in the
 *  database: RMR positions are held once per reaction, not per gene. */
PL_API int pl_graph_load(pl_db *db, pl_graph **out, pl_err *err);
PL_API void pl_graph_free(pl_graph *g);

enum { PL_LIST_GPR = 0, PL_LIST_REACTION = 1, PL_LIST_RMR = 2 };

/** Number of removed-position lists a sample has: n_types (+3 with metabolism). */
PL_API uint32_t pl_graph_n_lists(const pl_graph *g);

/** Name of list kind `k` ("physical", ..., "gpr", "reaction", "rmr"). */
PL_API const char *pl_graph_list_name(const pl_graph *g, uint32_t k);

/** Per-thread masks context: scratch reused between samples, no allocation
 *  per sample in steady state (sets of more than three genes may grow it
 *  once). The graph must outlive every context made from it. */
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
 *  @return 0, PL_ERANGE when a gene index is out of range (the previous
 *  result stays valid), or -ENOMEM. */
PL_API int pl_masks_compute(pl_masks *m, const int32_t *genes, uint32_t n,
                            pl_masks_result *out);

/* -------------------------------------------------------------- epoch plan */

/** What an epoch plan depends on; the algorithm is documented in
 *  loader/plan.h so that other tools can reproduce the order. */
typedef struct pl_plan_opts {
    uint64_t n_samples;
    uint64_t seed, epoch;
    uint32_t rank, world_size;  /**< rank < world_size; world_size >= 1 */
    uint32_t batch_size;        /**< >= 1 */
    int shuffle, drop_last;
    /* Sample order (loader/plan.h documents each). */
    uint32_t order;             /**< PL_ORDER_*; PL_ORDER_ROWS (0) is the default */
    uint32_t block_rows;        /**< PL_ORDER_BLOCK: rows per block; 0 means 16 */
    uint32_t window_blocks;     /**< PL_ORDER_BLOCK: blocks per window; 0 means
                                     ceil(batch_size / block_rows) (one batch) */
    /** > 0: budgeted batches (pl_plan_new_costs): each batch takes rows while
     *  their costs sum to at most `budget` (batch_size rows at most). */
    uint64_t budget;
    /** Weighted ranks: NULL, or [world_size] weights >= 1 (read during
     *  pl_plan_new only); rank r's batches hold about batch_size * w[r] /
     *  max(w) samples, every rank the same number of steps (plan.h 2d). */
    const uint32_t *rank_weights;
    /** Elastic resume (loader/plan.h, step 1e): the first `from` entries of
     *  the epoch's order were consumed (pl_plan_position() of the plan they
     *  were consumed from); steps 2 onwards run over the rest, as over an
     *  epoch of n_samples - from samples. 0: the whole epoch. */
    uint64_t from;
} pl_plan_opts;

/** Sample orders of an epoch plan (pl_plan_opts.order). */
enum {
    PL_ORDER_ROWS = 0,  /**< rows in order, or shuffled one by one with `shuffle` */
    PL_ORDER_BLOCK = 1, /**< blocks of consecutive rows shuffled, then rows within
                             windows of blocks; ranks take whole batches; rows
                             sorted within each batch (read in runs) */
};

typedef struct pl_plan pl_plan;

/** Compute the plan of one epoch for one rank (the rank's rows, in order). */
PL_API int pl_plan_new(const pl_plan_opts *o, pl_plan **out, pl_err *err);

/** pl_plan_new() for budgeted batches: `cost[0..n_samples)` is each row's cost
 *  (read only during the call); o->budget > 0 (loader/plan.h, steps 2c-3c).
 *  Batches then vary in size, up to o->batch_size; every rank still has the
 *  same number of batches. With o->budget == 0, `cost` is not read. */
PL_API int pl_plan_new_costs(const pl_plan_opts *o, const uint32_t *cost, pl_plan **out,
                             pl_err *err);

/** The plan of `o` over database `db` (n_samples is taken from it). With
 *  o->budget > 0 the rows' costs come from its sample table, decoded for the
 *  call: removed positions as `serve --budget removed=N` counts them, or with
 *  `budget_payload` payload bytes (`--budget payload=BYTES`). */
PL_API int pl_plan_new_db(pl_db *db, const pl_plan_opts *o, int budget_payload, pl_plan **out,
                          pl_err *err);
PL_API void pl_plan_free(pl_plan *p);

/** Number of batches of the rank in this epoch. */
PL_API uint64_t pl_plan_n_batches(const pl_plan *p);

/** Number of samples of the rank in this epoch (padding included). */
PL_API uint64_t pl_plan_n_samples(const pl_plan *p);

/** The entries of the epoch's order (loader/plan.h, step 1) that the first
 *  `steps` steps of every rank of the plan's world consume, counted from the
 *  order's start (pl_plan_opts.from included): the pl_plan_opts.from of an
 *  elastic resume after those steps, on any world size. Steps past
 *  pl_plan_n_batches() count as all of them; padding counts nothing (the
 *  result is at most n_samples). The same on every rank of the world. */
PL_API uint64_t pl_plan_position(const pl_plan *p, uint64_t steps);

/** Rows (sample-store order) of batch `b` into `rows[0..batch_size)`.
 *  @return the batch's size (budgeted plans: any from 1 to batch_size); 0
 *  when b >= pl_plan_n_batches(). */
PL_API uint32_t pl_plan_batch(const pl_plan *p, uint64_t b, uint64_t *rows);

/* -------------------------------------------------------------------- ring */

#include "pertload_ring.h" /* the ring between serve and a consumer */

/* ------------------------------------------------------ in-process loader */

/** A loader inside the training process that puts batches in device memory:
 *  worker threads collate the batches of an epoch plan (as `serve` does for
 *  the ring) into page-locked host buffers; each batch's slot is copied
 *  asynchronously on a dedicated stream into one of `depth` device buffers,
 *  used in turn, and one kernel launch per batch expands its removed lists
 *  into dense masks on the device, if asked. Events guard every buffer: a
 *  host buffer is refilled only after its copy completed, a device buffer is
 *  reused only after the consumer released it (and, when the consumer names
 *  its stream, after the work it queued there).
 *
 *  Backends: CUDA (when the library was built with the CUDA toolkit and a
 *  device is visible) or host, where the "device" is host memory, a copy
 *  thread plays the stream and the expansion runs on the CPU with the
 *  kernel's algorithm; everything else is the same code. */
typedef struct pl_loader pl_loader;

/** Dense masks: none (removed lists only), packed bits or bool. */
enum { PL_MASK_NONE = 0, PL_MASK_BITS = 1, PL_MASK_BOOL = 2 };

/** Backend choice: AUTO is CUDA when built with it and a device is visible,
 *  else host (pl_loader_backend() then says "host"). */
enum { PL_BACKEND_AUTO = 0, PL_BACKEND_HOST = 1, PL_BACKEND_CUDA = 2 };

/** Options of pl_loader_open(); zero-initialise, then fill. */
typedef struct pl_loader_opts {
    const char *db;       /**< database directory (read during pl_loader_open() only) */
    pl_plan_opts plan;    /**< epoch plan; n_samples is taken from the database */
    uint64_t start_batch; /**< resume: the first plan batch delivered */
    uint32_t dense;       /**< PL_MASK_*: masks expanded on the device */
    uint32_t threads;     /**< collation worker threads; 0 means 1 */
    uint32_t depth;       /**< device buffers, >= 2; 0 means 2. Also the most
                               batches the consumer may hold at once. */
    int backend;          /**< PL_BACKEND_* */
    int device;           /**< CUDA device ordinal (0 on the host backend) */
    /** The most bytes the host buffers take together (threads + depth of
     *  them, page-locked with CUDA); 0 means 256 MiB. Each is sized for a
     *  typical batch; a batch that does not fit one comes in parts (see
     *  pl_device_batch.n_parts). */
    uint64_t max_buffer_bytes;
} pl_loader_opts;

/** One batch in device memory, filled by pl_loader_next(). Every pointer is
 *  device memory owned by the loader (host memory on the host backend), valid
 *  until pl_loader_release() of this batch or pl_loader_close(); read it only
 *  after `event` completed (cudaStreamWaitEvent on your stream).
 *
 *  A batch too large for one host buffer (pl_loader_opts.max_buffer_bytes)
 *  comes as n_parts consecutive deliveries of consecutive samples: part p
 *  holds samples first .. first + n_samples - 1 of batch `index`, every
 *  array and mask laid out for its n_samples. Whole batches have n_parts 1.
 *  Parts do not change the plan: resuming at a batch (start_batch) starts at
 *  its first part. */
typedef struct pl_device_batch {
    uint64_t index;       /**< plan batch index within the epoch */
    uint32_t n_samples;   /**< samples delivered: B of this batch (the last one
                               may be short), or those of this part */
    uint32_t dense;       /**< PL_MASK_* of the masks below */
    uint32_t part;        /**< 0..n_parts-1 */
    uint32_t n_parts;     /**< deliveries the batch comes in; 1: whole */
    uint64_t first;       /**< the part's first sample within the batch */
    /** The batch's slot, copied as is: the self-describing layout of the
     *  ring's slots (header, descriptors, arrays at offsets from `slot`), so
     *  every offset in it is valid on this copy. */
    const void *slot;
    uint64_t bytes;       /**< bytes uploaded for the batch (the slot's used bytes) */
    uint32_t n_lists;     /**< list kinds: pl_graph_n_lists() */
    uint32_t reserved;
    /** Dense masks, kept = 1 / removed = 0, NULL with PL_MASK_NONE. Rows of
     *  `len` positions, one per sample ([n_samples, row]): bool rows are `len`
     *  bytes; bits rows are ceil(len / 64) uint64 words, LSB first, bits past
     *  `len` zero. gene_mask: genes; mask[k]: list kind k (edge types, then
     *  gpr, reaction, rmr). */
    const void *gene_mask;
    const void *mask[PL_MAX_TYPES + 3];
    uint64_t gene_len;              /**< positions of a gene_mask row */
    uint64_t mask_len[PL_MAX_TYPES + 3]; /**< positions of a mask[k] row */
    /** CUDA: the loader's stream (cudaStream_t) and the event (cudaEvent_t)
     *  that completes when the copy and the expansion did; owned by the
     *  loader. Host backend: NULL, the batch is complete when returned. */
    void *stream;
    void *event;
    /** Set by the consumer before pl_loader_release(), CUDA only: the stream
     *  (cudaStream_t) on which it queued the work that reads this batch; the
     *  loader then reuses the buffer only after that work. NULL (as
     *  pl_loader_next() leaves it) is CUDA's NULL stream, the legacy default
     *  stream (cudaStreamLegacy): the reuse waits for the work queued there
     *  (and, as that stream orders it, on the blocking streams) before the
     *  release; work on `stream` is ordered anyway. A consumer that reads
     *  the batch on a non-blocking stream, or on the per-thread default
     *  stream, names it here (cudaStreamPerThread for the latter). The host
     *  backend has no streams: a non-NULL value there fails the loader with
     *  PL_EUSAGE. */
    void *consumer_stream;
} pl_device_batch;

/** Open a loader and start it. Checks the options, picks the backend, opens
 *  the database and computes the plan, then returns while the graph and the
 *  sample table load and the workers start in the background; failures of
 *  that work (a corrupt sample block, a read error, a sample too large for
 *  max_buffer_bytes: PL_EUSAGE) are returned by pl_loader_next().
 *  @param out set to the handle on success, NULL on failure.
 *  @return 0, PL_EUSAGE (bad options, start_batch past the epoch,
 *  PL_BACKEND_CUDA without the CUDA path), -ENODEV (PL_BACKEND_CUDA and no
 *  usable device: err says why), the database's codes, -ENOMEM. */
PL_API int pl_loader_open(const pl_loader_opts *o, pl_loader **out, pl_err *err);

/** Take the next batch of the epoch (or the next part of a split batch), in
 *  plan order. Returns as soon as the batch's copy and expansion are queued
 *  (CUDA) or complete (host). One thread at a time; pl_loader_release() may
 *  come from any thread.
 *  @param b filled with the batch (zeroed when none is returned).
 *  @return 0 with a batch, 1 at the end of the epoch, PL_EUSAGE when `depth`
 *  batches are held already (release one first), or the failure of the
 *  loading, a worker or the device (err says what; batches queued before it
 *  are still returned first; the loader stays failed). */
PL_API int pl_loader_next(pl_loader *l, pl_device_batch *b, pl_err *err);

/** Give a batch's device buffer back (any order, any thread; see
 *  pl_device_batch.consumer_stream). `b` is cleared; a cleared or NULL `b`
 *  is ignored. */
PL_API void pl_loader_release(pl_loader *l, pl_device_batch *b);

/** Stop and free the loader; NULL accepted. Batches in flight are fine: the
 *  workers stop after the batch in hand, queued copies and expansions
 *  complete, and batches still held become invalid. Waits for a graph or
 *  table load in progress. */
PL_API void pl_loader_close(pl_loader *l);

/** "cuda" or "host": the backend in use; static string. */
PL_API const char *pl_loader_backend(const pl_loader *l);

/** Number of CUDA devices the loader can use: 0 when the library was built
 *  without the CUDA path or none is visible, with err saying why. */
PL_API int pl_loader_devices(pl_err *err);

#ifdef __cplusplus
}
#endif
#endif /* PERTLOAD_H */
