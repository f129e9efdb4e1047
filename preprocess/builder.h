/* The builder behind pl_build (build.c): its state, shared by the input
 * readers (build_inputs.c), the samples and payload (build_samples.c) and
 * the LMDB writer (build_write.c). Internal to preprocess/. */
#ifndef PL_PREPROCESS_BUILDER_H
#define PL_PREPROCESS_BUILDER_H

#include <lmdb.h>
#include <stdint.h>

#include "build_input.h"
#include "ontology/store.h"
#include "pertload.h"
#include "ruleset.h"
#include "src/core/dbformat.h"
#include "src/core/error.h"
#include "src/core/npy.h"
#include "src/core/sstore.h"
#include "src/core/strtab.h"
#include "tmpdir.h"

#define MAX_FIELDS 256

typedef struct csr {
    uint64_t *off; /* [n_genes + 1] */
    uint32_t *val;
} csr;

typedef struct builder {
    const pl_build_opts *o;
    pl_build_stats st;
    pl_err *err;
    pl__tmpdir tmp;
    pl_strtab genes, reactions, metabolites;
    uint64_t n_genes;
    int32_t *src[PL_MAX_TYPES], *dst[PL_MAX_TYPES];
    uint64_t n_edges[PL_MAX_TYPES];
    int32_t *gpr_gene, *gpr_rxn, *rmr_rxn, *rmr_met;
    float *rmr_stoich;
    uint64_t n_gpr, n_rmr, cap_gpr, cap_rmr;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi[PL_DBI_COUNT];
    pl__sstore_writer sw;
    uint64_t *dropped_rows, n_dropped, cap_dropped, n_rows_in;
    char **label_names;
    uint32_t n_labels;
    char *ser;
    uint64_t ser_cap;
    struct pl__meta meta;
    pl__ruleset rules;          /* read from the rules file */
    pl_onto onto;               /* read from the ontology files */
    const pl_onto *on;          /* the ontology stored: &onto or the caller's */
    const pl__ruleset *rs;      /* the rules stored: &rules or the provider's */
    const pl__build_input *in;  /* in-memory inputs, or NULL */
    /* category columns (build_cats.c): names, codes per stored row */
    char **cat_names;
    uint32_t n_cats;
    uint32_t **cat_codes;       /* [n_cats][rows stored] */
    uint32_t *cat_max;          /* [n_cats] highest code given + 1 */
    uint64_t cap_codes;
    char *levels;               /* a copy of the provider's levels text, checked */
    pl__npy feat[PL_N_NODE_TYPES]; /* node features by type (fd -1: none) */
} builder;

/* Payload data goes out in PL_PAYLOAD_CHUNK pieces, each checksummed. */
typedef struct chunker {
    int fd;
    const char *path;
    char *buf;
    uint64_t fill, written;
    uint64_t *sums, n_sums, cap;
} chunker;

#define NOMEM(b) pl__err((b)->err, -ENOMEM, "out of memory")

/** Read a names file (one name a line, no duplicates) into `t`; `what`
 *  ("gene", "reaction") names the kind in messages. */
int pl__build_read_names(builder *b, const char *path, pl_strtab *t, const char *what);

/** Read the edges of type `t` from a TSV (`src dst [score]`, minimum score
 *  `min_score` or NaN) or, for a path ending in ".npy", an int32/int64
 *  [2, E] edge_index. */
int pl__build_read_edges(builder *b, uint32_t t, const char *path, double min_score);

/** Read a GPR TSV (`gene reaction`) into b->gpr_*. */
int pl__build_read_gpr(builder *b, const char *path);

/** Read a gene-reaction rules TSV: compiled into b->rules, their genes
 *  appended as GPR edges. */
int pl__build_read_rules(builder *b, const char *path);

/** Read an RMR TSV (`reaction metabolite stoichiometry`) into b->rmr_*. */
int pl__build_read_rmr(builder *b, const char *path);

/** Store the rows of provider `s` in the sample store in the temporary
 *  directory (and finish the store); the label names are copied. */
int pl__build_store_samples(builder *b, const pl__build_samples *s);

/** Copy the provider's category names (checked: distinct, non-empty, at
 *  most PL_MAX_CATEGORIES) into the builder. */
int pl__build_cats_begin(builder *b, const pl__build_samples *s);

/** Keep the codes of a stored row (`row`: its provider row, for messages). */
int pl__build_cats_add(builder *b, const pl__sample_row *r, uint64_t row);

/** After the last row: the provider's levels text against the names and
 *  the codes given (PL_EPARSE naming the column). */
int pl__build_cats_end(builder *b, const pl__build_samples *s);

/** Write the category store (cats/"levels", one codes value per column)
 *  and meta.n_categories (before the meta record is written). */
int pl__build_cats_put(builder *b);

/** Release the category columns. */
void pl__build_cats_free(builder *b);

/** Take the gene list from memory (as the genes file would give it). */
int pl__build_take_genes(builder *b, const char *const *names, uint64_t n);

/** Take edge type `t` from memory; indices checked against the genes. */
int pl__build_take_edges(builder *b, uint32_t t, const pl__build_edges *e);

/** Take the metabolism from memory; indices checked against its lists. */
int pl__build_take_metabolism(builder *b, const pl__build_metabolism *m);

/** Copy the payload .npy into the temporary directory, without the rows of
 *  dropped samples; fills the payload fields of b->meta and `c->sums`. */
int pl__build_copy_payload(builder *b, const char *path, chunker *c);

/** Open, check and map the node feature matrices of b->o (after the graph
 *  is read: their rows must equal the node counts). Errors name the file. */
int pl__build_open_features(builder *b);

/** Store the mapped feature matrices under feat/<node type>. */
int pl__build_put_features(builder *b);

/** Close the feature files (safe when none were opened). */
void pl__build_close_features(builder *b);

/** Write data.mdb in the temporary directory from the builder's arrays and
 *  b->meta (complete but for what write_lmdb adds), and close it. */
int pl__build_write_lmdb(builder *b, const chunker *payload);

#endif
