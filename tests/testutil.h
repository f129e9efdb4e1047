/* Shared helpers of the Criterion tests. */
#ifndef PL_TESTUTIL_H
#define PL_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/** A fresh temporary directory (mkdtemp under $TMPDIR or /tmp); the caller
 *  frees the string and removes the tree with pl_test_rmtree(). */
char *pl_test_tmpdir(void);

/** Remove a directory tree. */
void pl_test_rmtree(const char *path);

/** Write `text` to dir/name; returns the malloc'd full path. Aborts on error. */
char *pl_test_write(const char *dir, const char *name, const char *text);

/** Deterministic PRNG (splitmix64). */
uint64_t pl_test_rand(uint64_t *state);

/** Uniform integer in [0, n). */
uint64_t pl_test_below(uint64_t *state, uint64_t n);

#endif
