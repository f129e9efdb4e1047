/* Helpers of the import tests (tests/test_import_*.c): compressed copies of
 * a text, the records a reader hands out as one text, and the check of a
 * "file:line[:col]: reason" message. */
#ifndef PL_IMPORTUTIL_H
#define PL_IMPORTUTIL_H

#include <stddef.h>

#include "preprocess/import/edges/reader.h"
#include "preprocess/import/names/names.h"
#include "preprocess/import/recipe/recipe.h"
#include "testutil.h"

/** Codecs of pl_test_write_codec(). */
enum { PL_TEST_PLAIN = 0, PL_TEST_GZIP = 1, PL_TEST_ZSTD = 2 };

/** Write `len` bytes of `text` to dir/name as plain text, gzip (one member)
 *  or zstd (one frame); returns the malloc'd path. */
char *pl_test_write_codec(const char *dir, const char *name, const void *text, size_t len,
                          int codec);

/** The gzip (one member) or zstd (one frame) image of `len` bytes; malloc'd,
 *  `*out_len` its size. */
void *pl_test_compress(const void *text, size_t len, int codec, size_t *out_len);

/** Run reader `fmt` over `path` and append "src\tdst\tscore\n" per record
 *  (score "%.6g", or "-" for none) to `out`. @return the reader's code. */
int pl_test_imp_collect(const char *fmt, const char *path, const pl_imp_opts *o,
                        pl_test_text *out, pl_imp_stats *st, pl_err *err);

/** Write `text` to dir/name (the suite's `dir`, testutil.h) as plain text,
 *  gzip or zstd: the new `path` (the previous one freed). @return path. */
const char *pl_test_put(const char *name, const char *text, int codec);

/** A reader under test, as pl_test_read_fails() calls it: reads the file at
 *  `path` (`ctx` the test's state). @return the reader's code. */
typedef int (*pl_test_reader)(void *ctx, const char *path, pl_err *err);

/** Write `text` to dir/name with `codec` (pl_test_put), read it with `read`
 *  and assert that it fails with PL_EPARSE at "path:line[:col]:" and
 *  `reason` (pl_test_expect_at). */
void pl_test_read_fails(pl_test_reader read, void *ctx, const char *name, const char *text,
                        int codec, unsigned long line, unsigned long col, const char *reason);

/** pl_test_read_fails() of edge reader `fmt` with options `o` (NULL: the
 *  defaults). */
void pl_test_imp_fails(const char *fmt, const pl_imp_opts *o, const char *name,
                       const char *text, int codec, unsigned long line, unsigned long col,
                       const char *reason);

/** Write `text` as the recipe dir/name and load it (no root): it loads.
 *  @return the recipe, for pl__recipe_free(). */
pl_recipe *pl_test_recipe_ok(const char *name, const char *text);

/** Write `text` as the recipe dir/name and load it: it fails with PL_EPARSE
 *  at "path:line[:col]:" and `reason`, and hands out no recipe. */
void pl_test_recipe_fails(const char *name, const char *text, unsigned long line,
                          unsigned long col, const char *reason);

/** A new gene-name table with the gene list at `path` (a header line first
 *  when `header`): it loads. @return the table, for pl__names_free(). */
pl_names *pl_test_names_from(const char *path, int header);

/** pl_test_names_from() of `list` written to dir/name (no header line). */
pl_names *pl_test_names(const char *name, const char *list);

/** Nothing is at dir/name (the suite's `dir`): a failed build left no
 *  database behind. */
void pl_test_expect_no_db(const char *name);

/** Assert that `rc` is `code` and that err->msg starts with "path:line:" (and
 *  "col:" after it when col > 0) and contains `reason`. */
void pl_test_expect_at(int rc, int code, const pl_err *err, const char *path, unsigned long line,
                       unsigned long col, const char *reason);

/** Run `pertload ARGS` ($PERTLOAD_BIN; ARGS as a shell would split them) in
 *  folder `cwd` (NULL: the current one); its stdout and stderr together
 *  into *out (malloc'd). @return the exit status (-1: no normal exit). */
int pl_test_run_in(const char *cwd, const char *args, char **out);

/** Run `pertload ARGS` (printf-style `fmt`) in `cwd` (pl_test_run_in) and
 *  assert that it exits with `status` and that its output contains `want`
 *  (unless NULL). */
void pl_test_run_expect(const char *cwd, int status, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** The directory of the real data files: $PERTLOAD_REAL_DATA, else
 *  "<source root>/../shared/data" (given by meson as PERTLOAD_SOURCE_ROOT);
 *  malloc'd. */
char *pl_test_real_data(void);

#endif
