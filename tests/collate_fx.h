/* The fixture of the collation suites (test_collate.c: slots against an
 * oracle; test_collate_limits.c: a slot or scratch too small).
 *
 * A small database is built from files written here: 60 genes, three edge
 * types (TSV with a hub, self-loops and duplicate edges; an empty one; a .npy
 * int32 export), metabolism with a reaction list (one reaction without genes,
 * one only in RMR, duplicate GPR pairs), 1300 samples of 1..5 genes with
 * duplicates, two label columns with missing values, and a float32 payload
 * [S, 3]; the inputs are kept in T for the oracle. The sample table is loaded
 * with each io backend (T.tab[0] through io_uring, T.tab[1] through pread).
 * A slot is read back only through its header and descriptors (parse_slot),
 * with a check of its own, independent of the library's. */
#ifndef PL_TEST_COLLATE_FX_H
#define PL_TEST_COLLATE_FX_H

#include <stdint.h>

#include "collate/collate.h"
#include "loader/table.h"
#include "pertload.h"

#define N_GENES 60
#define N_TYPES 3
#define N_SAMPLES 1300
#define N_LABELS 2
#define N_RX 20
#define N_MET 15
#define PAY_COLS 3
#define MAX_SG 5
#define N_GPR 45
#define N_RMR 55
#define GUARD 4096

/** The edge types' names (the third has the longest length pl_build
 *  accepts, 100) and edge counts. */
extern const char *const type_names[N_TYPES];
extern const uint64_t type_edges[N_TYPES];

typedef struct co {
    char *dir;
    char db_path[4096];
    int32_t *src[N_TYPES], *dst[N_TYPES];
    int32_t gpr_gene[N_GPR], gpr_rxn[N_GPR], rmr_rxn[N_RMR];
    uint64_t ids[N_SAMPLES];
    uint32_t n_listed[N_SAMPLES];
    int32_t listed[N_SAMPLES][MAX_SG];
    float labels[N_SAMPLES][N_LABELS];
    float payload[N_SAMPLES][PAY_COLS];
    pl_db *db;
    pl_graph *g;
    pl__table tab[2];
    unsigned char *buf;
    int32_t *scratch;
} co;

/** The fixture of the running test (set up by co_init, torn down by co_fini);
 *  a test may leave T.buf and T.scratch malloc'd, co_fini frees them. */
extern co T;

/** Build and open the database, load its graph and its sample table through
 *  each backend; free it all (the suites' .init and .fini). */
void co_init(void);
void co_fini(void);

/** An array of a slot, as its descriptor gives it; `p` points into the slot. */
typedef struct arr {
    char name[PL_SLOT_NAME_MAX];
    char dtype[8];
    uint32_t ndim;
    uint64_t shape[PL_SLOT_MAX_DIMS];
    uint64_t offset, nbytes;
    const unsigned char *p;
} arr;

/** A parsed slot: its header and arrays. */
typedef struct slot_view {
    struct pl_slot_header h;
    uint32_t n;
    arr a[128];
} slot_view;

/** Parse and validate a slot of `cap` bytes through its header only: the
 *  library's check (pl_slot_check), then the test's own, independent one
 *  (known dtypes, sizes from shapes, aligned offsets past the descriptors
 *  and within `used`, unique names, no two arrays sharing a byte). */
void parse_slot(const unsigned char *slot, uint64_t cap, slot_view *v);

/** The array `name` of `v`, asserted present with this dtype, ndim and shape
 *  (d1 checked only when ndim > 1). */
const arr *find(const slot_view *v, const char *name, const char *dtype, uint32_t ndim,
                uint64_t d0, uint64_t d1);

/** Element `i` of an array of int64, int32 or uint64 (unaligned reads). */
int64_t rd_i64(const arr *a, uint64_t i);
int32_t rd_i32(const arr *a, uint64_t i);
uint64_t rd_u64(const arr *a, uint64_t i);

/** A batch of sample rows with the table's views of them, as the loader
 *  hands it to pl__collate. */
typedef struct batch {
    uint32_t n;
    uint64_t rows[64], ids[64];
    const int32_t *genes[64];
    uint32_t n_genes[64];
    const float *labels[64];
} batch;

/** Fill `b` with `n` (at most 64) random rows of `tab` drawn from `s`; one
 *  time in three the first is the table's last row (that of its last block). */
void make_batch(const pl__table *tab, batch *b, uint32_t n, uint64_t *s);

/** The pl__collate source of `b`. */
pl__batch_src src_of(const batch *b);

/** The slot size of batches of B samples of `tab` (pl__collate_slot_bytes
 *  from the table's maxima). */
uint64_t slot_cap(const pl__collate_cfg *c, const pl__table *tab, uint32_t B);

#endif
