/* The on-disk format of a pertload database, in one place.
 *
 * A database is a directory:
 *   data.mdb     LMDB environment (no lock file: opened read-only, MDB_NOLOCK)
 *   samples.pls  sample store: zstd-compressed blocks, each with an XXH64;
 *                its header records the size and XXH64 of the whole of
 *                data.mdb, checked at open before LMDB reads a page
 *   payload.npy  optional per-sample payload, a valid .npy whose header is
 *                padded to PL_PAYLOAD_ALIGN so rows can be read with O_DIRECT
 *
 * LMDB sub-databases (every value ends with an 8-byte XXH64 trailer seeded by
 * the XXH64 of its key, so a value moved under another key is caught too):
 *   "meta"   "meta"    struct pl__meta
 *            "params"  build parameters text
 *            "blocks"  struct pl__block_entry[n_blocks]
 *            "payload" uint64 XXH64 per PL_PAYLOAD_CHUNK bytes of payload data
 *            "recipe"  (optional, version 6) the bytes of the recipe file of
 *                      `build --recipe`, NUL-terminated
 *            "inputs"  (optional) its input files, one line each:
 *                      "size<TAB>xxh64 (16 hex digits)<TAB>path", NUL-terminated
 *            "sources" (optional) per edge source, one line each: "name
 *                      format=F rows=R filtered=F unresolved=U duplicates=D
 *                      kept=K file=PATH", NUL-terminated
 * *   "names"  "genes" "types" "labels" "reactions" "metabolites"
 *            names joined by NUL bytes (each name NUL-terminated)
 *   "edges"  'e' u8 type   zstd( int32 src[E], int32 dst[E] )
 *            "gpr"         zstd( int32 gene[n], int32 reaction[n] )
 *            "rmr"         zstd( int32 reaction[n], int32 metabolite[n], float stoich[n] )
 *            "rules"       zstd( uint32 off[n_reactions + 1], uint32 code[n_rule_words] )
 *                          (since version 4, present when n_rules > 0): reaction
 *                          r's gene-reaction rule is the postfix program
 *                          code[off[r] .. off[r + 1]) of src/core/rule.h, empty
 *                          for a reaction without a rule. meta.reaction_rule
 *                          says which rule removes reactions (DESIGN section 2):
 *                          ANY (a GPR gene deleted) or GPR (the rule is false).
 *   "inc"    be16 kind, be32 gene -> roaring portable bitmap of positions
 *            kinds 0..n_types-1: incident edge positions of the gene;
 *            n_types+PL_LIST_GPR: GPR edge positions of the gene;
 *            n_types+PL_LIST_REACTION: reactions with the gene in their GPR.
 *            Empty bitmaps are not stored. The RMR list kind has no bitmaps
 *            (since version 3): a gene's RMR positions are those of its
 *            reactions, which the masks engine reads from edges/"rmr" (each
 *            RMR edge once, whatever the number of genes of its reaction).
 *   "onto"   (since version 5; empty when meta.n_terms is 0) the ontology layers
 *            of DESIGN section 10, built by preprocess/ontology:
 *            "terms"     term ids joined by NUL bytes (each NUL-terminated)
 *            "schedule"  zstd( uint32 child_ptr[T+1], child_idx[C],
 *                        gene_ptr[T+1], gene_idx[D], n_genes[T], stratum[T],
 *                        stratum_ptr[S+1], group_ptr[G+1], group_n_genes[G],
 *                        group_n_children[G], group_terms[T], ann_gene[A],
 *                        ann_term[A] ) with T n_terms, C n_term_children,
 *                        D n_term_direct, S n_strata, G n_term_groups and A
 *                        n_term_ann of the meta record (pl_ontology's arrays)
 *            u8 kind, be32 gene -> roaring portable bitmap: kind
 *                        PL_ONTO_KIND_TERM the terms the gene affects (those
 *                        whose genes(T) hold it), PL_ONTO_KIND_ANN its
 *                        annotation positions; empty bitmaps are not stored
 *   "feat"   (since version 7; empty without node features) one value per node
 *            type given features, keyed by its name ("gene", "reaction",
 *            "metabolite", "term"): struct pl__feat_header (64 bytes), then
 *            the matrix, rows * cols elements row-major, as the .npy held them
 *   "cats"   (since version 7; empty when meta.n_categories is 0) the category
 *            columns of the samples (a split name, a strain background),
 *            kept apart from the float labels:
 *            "levels"    one line per category column, in column order:
 *                        "column<TAB>level 0<TAB>level 1...\n" (code k is
 *                        level k; names hold no tab or line break),
 *                        NUL-terminated
 *            'c' be32 c  zstd( uint32 code[n_samples] ): column c's code of
 *                        every stored sample row, each below its level count
 *            A column that is also a label (listed under both) is stored in
 *            both: here as codes, under the labels as the same codes as
 *            floats. Version 6 kept category columns only as float labels
 *            with their levels in meta/"levels"; such a database is refused
 *            as of another version.
 * All integers little-endian (the only byte order pertload builds on).
 */
#ifndef PL_CORE_DBFORMAT_H
#define PL_CORE_DBFORMAT_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#include "pertload.h"

#define PL_META_MAGIC "PERTLOAD"
#define PL_PAYLOAD_ALIGN 4096u
#define PL_PAYLOAD_CHUNK (1u << 20)
#define PL_BLOCK_ROWS 1024u
#define PL_DB_MAPSIZE ((size_t)1 << 40)

#define PL_FILE_LMDB "data.mdb"
#define PL_FILE_SAMPLES "samples.pls"
#define PL_FILE_PAYLOAD "payload.npy"

struct pl__meta {
    char magic[8];
    uint32_t format_version;
    uint32_t n_types;
    uint64_t n_genes, n_reactions, n_metabolites, n_gpr, n_rmr, n_samples;
    uint32_t n_labels;
    uint32_t has_metabolism;
    uint32_t block_rows;
    uint32_t payload_ndim;
    uint64_t n_blocks;
    uint64_t n_edges[PL_MAX_TYPES];
    char payload_dtype[8];
    uint64_t payload_shape[8];
    uint64_t payload_row_bytes;
    uint64_t payload_offset;     /* data start in payload.npy */
    uint64_t samples_bytes;      /* size of samples.pls */
    uint64_t payload_bytes;      /* size of payload.npy */
    uint32_t reaction_rule;      /* PL_REACTION_ANY or PL_REACTION_GPR (version 4) */
    uint32_t n_categories;       /* category columns in "cats" (version 7) */
    uint64_t n_rules;            /* reactions with a rule */
    uint64_t n_rule_words;       /* words of the programs in edges/"rules" */
    uint64_t n_terms;            /* ontology terms (version 5; 0: no ontology) */
    uint64_t n_term_ann;         /* ontology annotation positions */
    uint64_t n_term_children;    /* child links of the terms */
    uint64_t n_term_direct;      /* (term, direct gene) pairs */
    uint32_t n_strata, n_term_groups;
    /* Fingerprints (version 6): XXH64, seed 0, of the names/"genes" value
     * (every gene name followed by one NUL byte, in gene order), and per
     * edge type of its edges value before compression (int32 little-endian
     * src[E], then dst[E]). Checked at open against the stored values. */
    uint64_t gene_fingerprint;
    uint64_t edge_fingerprint[PL_MAX_TYPES];
};

/* Per-gene kinds of the "onto" sub-database. */
enum { PL_ONTO_KIND_TERM = 1, PL_ONTO_KIND_ANN = 2 };

/** Key of an ontology bitmap: u8 kind, be32 gene. */
static inline void pl__onto_key(unsigned char key[5], uint32_t kind, uint32_t gene)
{
    key[0] = (unsigned char)kind;
    key[1] = (unsigned char)(gene >> 24);
    key[2] = (unsigned char)(gene >> 16);
    key[3] = (unsigned char)(gene >> 8);
    key[4] = (unsigned char)gene;
}

/* Sample-store index entry, one per block. */
struct pl__block_entry {
    uint64_t offset;     /* of the block header in samples.pls */
    uint32_t comp_size;  /* compressed bytes after the header */
    uint32_t raw_size;
    uint64_t first_row;
    uint32_t n_rows;
    uint32_t n_refs;     /* gene references in the block */
    uint64_t checksum;   /* XXH64 of the compressed bytes */
};

/* Named sub-databases. */
enum {
    PL_DBI_META, PL_DBI_NAMES, PL_DBI_EDGES, PL_DBI_INC, PL_DBI_ONTO, PL_DBI_FEAT,
    PL_DBI_CATS, PL_DBI_COUNT
};
extern const char *const pl__dbi_names[PL_DBI_COUNT];

/** Key of an incidence bitmap: be16 kind, be32 gene (sorts by kind, gene). */
static inline void pl__inc_key(unsigned char key[6], uint32_t kind, uint32_t gene)
{
    key[0] = (unsigned char)(kind >> 8);
    key[1] = (unsigned char)kind;
    key[2] = (unsigned char)(gene >> 24);
    key[3] = (unsigned char)(gene >> 16);
    key[4] = (unsigned char)(gene >> 8);
    key[5] = (unsigned char)gene;
}

/** Key of category column c's codes: 'c', be32 c. */
static inline void pl__cat_key(unsigned char key[5], uint32_t c)
{
    key[0] = 'c';
    key[1] = (unsigned char)(c >> 24);
    key[2] = (unsigned char)(c >> 16);
    key[3] = (unsigned char)(c >> 8);
    key[4] = (unsigned char)c;
}

/** Key of an edge array: 'e', u8 type. */
static inline void pl__edges_key(unsigned char key[2], uint32_t type)
{
    key[0] = 'e';
    key[1] = (unsigned char)type;
}

/** Printable description of key `k` of sub-database `dbi`, for messages. */
void pl__key_describe(int dbi, const void *k, size_t klen, char *buf, size_t cap);

/** Store `len` bytes under `key` with the checksum trailer (MDB_RESERVE).
 *  @param flags LMDB put flags (MDB_APPEND for sorted bulk loads). */
int pl__db_put(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
               const void *val, size_t len, unsigned flags, pl_err *err);

/** Fetch `key` and check its trailer. `*val` / `*len` point into the map.
 *  @return 0, -ENOENT when absent (no message), PL_ECORRUPT naming the key. */
int pl__db_get(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
               const void **val, size_t *len, pl_err *err);

/** Check the trailer of a value read by a cursor. */
int pl__db_check(int which, const MDB_val *k, const MDB_val *v, pl_err *err);

/* Decoders of stored values. Each takes the value's bytes without the
 * trailer, trusts nothing in them, and fails with PL_ECORRUPT naming the key;
 * pl_db_open, pl_db_verify and the masks engine read the database only
 * through them. */

/** Decode the "meta"/"meta" record into `m`: its size and magic, then every
 *  count checked for consistency (types, genes, blocks, indices that must fit
 *  int32 positions, the payload's dtype, row size and file size without
 *  overflow). The format version is checked before, on the raw record. */
int pl__meta_decode(const void *v, size_t len, struct pl__meta *m, pl_err *err);

/** Split a "names" value of `len` bytes into exactly `n` NUL-terminated names.
 *  @param out set to a new array of `n` pointers into `v` (free() it; the
 *  names live as long as `v`); NULL on failure.
 *  @param key the value's key under "names", for messages. */
int pl__names_split(const char *key, const void *v, size_t len, uint64_t n,
                    const char ***out, pl_err *err);

/** Decode an incidence value (a portable roaring bitmap of exactly `len`
 *  bytes) and append its positions, ascending, to the growable array `*vals`
 *  (capacity `*cap`, `*n` in use, see pl__grow()). The bitmap must be
 *  non-empty with every position below `limit`.
 *  @param kd the key's description (pl__key_describe), for messages. */
int pl__inc_decode(const void *v, size_t len, uint64_t limit, uint32_t **vals, uint64_t *cap,
                   uint64_t *n, const char *kd, pl_err *err);

/* The header of a "feat" value; the matrix follows it. */
struct pl__feat_header {
    char dtype[8];        /* "<f4" or "<f2", NUL-padded */
    uint64_t rows, cols;  /* rows: the node type's count */
    uint64_t reserved[5]; /* 0 */
};

/** The node count of node type `type` (PL_NODE_TYPES order) in `m`. */
uint64_t pl__node_count(const struct pl__meta *m, int type);

/** Index of node type `name` in PL_NODE_TYPES, or -1. */
int pl__node_type(const char *name);

/** Decode a "feat" value of node type `type` (PL_NODE_TYPES order): the
 *  header's dtype, reserved words, rows (the type's count in `m`) and the
 *  value's size (header + rows * cols elements, without overflow).
 *  @param h the header, copied out; @param data set to the matrix. */
int pl__feat_decode(const void *v, size_t len, const struct pl__meta *m, int type,
                    struct pl__feat_header *h, const void **data, pl_err *err);

/** Decompress a zstd value into a new malloc'd buffer of exactly `want`
 *  bytes (`*out`; NULL on failure). @param kd the key, for messages. */
int pl__zstd_decode(const void *v, size_t len, size_t want, void **out, const char *kd,
                    pl_err *err);

/** Compress v[0..len) with zstd at `level` into a new malloc'd buffer
 *  (`*out`, its `*out_len` bytes; NULL on failure).
 *  @return 0, -ENOMEM or PL_EZSTD ("compressing: " and zstd's reason). */
int pl__zstd_encode(const void *v, size_t len, int level, void **out, size_t *out_len,
                    pl_err *err);

/** Store `len` bytes zstd-compressed (level 3) with the trailer. */
int pl__db_put_zstd(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
                    const void *val, size_t len, pl_err *err);

/** Fetch a zstd value into a new malloc'd buffer of exactly `want` bytes.
 *  @return 0, -ENOENT, PL_ECORRUPT (bad trailer, bad frame or size). */
int pl__db_get_zstd(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
                    size_t want, void **out, pl_err *err);

#endif
