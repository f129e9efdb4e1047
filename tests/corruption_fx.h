/* The fixture of the corruption suites (test_corruption.c: the sample store,
 * the payload and data.mdb as files; test_corruption_values.c: the values
 * stored in data.mdb): a pristine database built from small inputs (20
 * genes, two edge types, metabolism, 3000 samples in three sample-store
 * blocks, a payload of two chunks) and a copy of it, C.bad, that each test
 * damages; the damage itself (flip a byte, truncate, reseal) and the checks
 * that open, verify or graph load refuse it with a message naming it.
 *
 * The sample store's header records the checksum of the whole of data.mdb,
 * which catches any change to it at open. To reach the finer checks behind
 * it (value trailers, sizes), the helpers that damage data.mdb record the
 * damaged file's checksum again (reseal). */
#ifndef PL_TEST_CORRUPTION_FX_H
#define PL_TEST_CORRUPTION_FX_H

#include <stddef.h>
#include <stdint.h>

#include "pertload.h"

#define N_GENES 20
#define N_SAMPLES 3000
#define PAYLOAD_COLS 100

typedef struct cx {
    char *dir;
    char good[4096], bad[4096];
    uint64_t ids[N_SAMPLES]; /* pristine sample ids */
} cx;

/** The fixture of the running test (set up by cx_init, torn down by cx_fini):
 *  the pristine database in C.good, the copy to damage in C.bad. */
extern cx C;

/** Build the pristine database, record its sample ids and copy it into
 *  C.bad; remove it all (the suites' .init and .fini). */
void cx_init(void);
void cx_fini(void);

/** C.bad/`file` into `buf`. */
void bad_path(char *buf, size_t cap, const char *file);

/** Size of the file at `path` (asserted to exist). */
uint64_t file_size(const char *path);

/** Read or write `len` bytes at `off` of the file at `path` (asserted). */
void read_at(const char *path, uint64_t off, void *buf, size_t len);
void write_at(const char *path, uint64_t off, const void *buf, size_t len);

/** Record the current size and checksum of C.bad/data.mdb in the header of
 *  C.bad/samples.pls, as build does for a finished database. */
void reseal(void);

/** XOR the byte at `off` of C.bad/`file` with `mask`; flip() inverts every
 *  bit of it. Both reseal when `file` is data.mdb. */
void flip_mask(const char *file, uint64_t off, unsigned char mask);
void flip(const char *file, uint64_t off);

/** Truncate (or extend) C.bad/`file` to `size` bytes, resealing data.mdb. */
void truncate_to(const char *file, uint64_t size);

/** The stored bytes (value and checksum trailer) of `key` in sub-database
 *  `dbi` of the pristine database, read through LMDB (malloc'd, the
 *  caller frees it); NULL when absent. */
void *lmdb_value(int dbi, const void *key, size_t klen, size_t *len);

/** Offset in C.bad/data.mdb of the one occurrence of `needle` (asserted to
 *  occur exactly once). */
uint64_t find_unique(const void *needle, size_t n);

/** File offset in C.bad/data.mdb and stored length (trailer included) of
 *  the value of `key` in sub-database `dbi`. */
uint64_t locate(int dbi, const void *key, size_t klen, size_t *len);

/** The message of `e` contains `want`. */
void expect_msg(const pl_err *e, const char *want);

/** C.bad opens: the damage should only show in deeper checks. @return the
 *  handle, to close. */
pl_db *open_bad(void);

/** pl_db_open(C.bad) fails with `code` (or any negative code when code is
 *  0), resetting the handle, with a message containing `want` (when not
 *  NULL). */
void expect_open_fails(int code, const char *want);

/** Flip byte `at` of the value of `key` in table `dbi` of C.bad's data.mdb:
 *  pl_db_open() fails with PL_ECORRUPT and a message containing `want`. */
void value_open_fails(int dbi, const char *key, uint64_t at, const char *want);

/** pl_graph_load(db) fails with PL_ECORRUPT and a message containing `want`,
 *  handing out no graph. */
void expect_graph_fails(pl_db *db, const char *want);

/** pl_db_verify(db) fails with PL_ECORRUPT and a message containing `want`. */
void expect_verify_fails(pl_db *db, const char *want);

#endif
