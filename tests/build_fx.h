/* The fixture of the pl_build() error tests (test_build_errors.c,
 * test_build_output.c, test_rules_errors.c): a temporary directory with a
 * small valid input set (four genes, one edge type, two samples) that each
 * test spoils, and the checks that a failed build named its input and left
 * nothing behind. */
#ifndef PL_TEST_BUILD_FX_H
#define PL_TEST_BUILD_FX_H

#include <criterion/criterion.h>

#include "pertload.h"

#define MAX_OWNED 64

typedef struct fx {
    char *dir, *out;
    const char *genes, *edges, *samples;
    const char *names[PL_MAX_TYPES + 1], *files[PL_MAX_TYPES + 1];
    double min_score[PL_MAX_TYPES + 1];
    pl_build_opts o;
    pl_build_stats st;
    pl_err err;
    char *owned[MAX_OWNED];
    int n_owned;
} fx;

/** The fixture of the running test (set up by fx_init, torn down by fx_fini). */
extern fx F;

/** Keep `p` (malloc'd) until the test ends. */
char *own(char *p);

/** `dir`/`name`, kept until the test ends. */
char *path_in(const char *dir, const char *name);

/** Write a text input file into the fixture directory. */
const char *put(const char *name, const char *text);

/** Write `len` raw bytes into the fixture directory. */
const char *put_bin(const char *name, const void *data, size_t len);

/** A version 1.0 .npy in the fixture directory: header dict built from the
 *  three fields as written, then `len` data bytes (not necessarily matching). */
const char *put_npy(const char *name, const char *descr, const char *fortran,
                    const char *shape, const void *data, size_t len);

/** The first edge type's file: a .npy of the three header fields and `len`
 *  data bytes (put_npy). */
void use_npy_edges(const char *descr, const char *fortran, const char *shape, const void *data,
                   size_t len);

/** Set up and tear down the fixture (the suites' .init and .fini). */
void fx_init(void);
void fx_fini(void);

/** pl_build() of the fixture's options. */
int build(void);

/** No "<out>.tmp-*" directory beside `out`. */
void expect_no_tmp(const char *out);

/** Neither `out` nor "<out>.tmp-*" beside it exists. */
void expect_clean_at(const char *out);

/** `msg` names a file of a temporary directory of `out`:
 *  "<out>.tmp-<16 hex digits>/<tail>". */
void expect_tmp_msg(const char *msg, const char *out, const char *tail);

/** expect_clean_at() of the fixture's output. */
void expect_clean(void);

/** Build, expect failure `code` with a message naming `path` (at line:col
 *  when line > 0) and containing `reason`; nothing left behind. */
void expect_fail(int code, const char *path, long line, long col, const char *reason);

/** Build and expect success: the output directory exists. */
void expect_ok(void);

#endif
