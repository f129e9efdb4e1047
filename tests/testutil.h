/* Shared helpers of the Criterion tests. They report their own failures (a
 * file that cannot be written, memory exhausted) with a message and abort(),
 * so they serve plain programs as well. */
#ifndef PL_TESTUTIL_H
#define PL_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pertload.h"

/** Print "testutil: " and the printf-style message to stderr, then abort(). */
void pl_test_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/** A fresh temporary directory (mkdtemp under $TMPDIR or /tmp); the caller
 *  frees the string and removes the tree with pl_test_rmtree(). */
char *pl_test_tmpdir(void);

/** The running suite's temporary directory (made by pl_test_dir_init) and
 *  the last file a test wrote into it for a reader to fail on (importutil's
 *  pl_test_put); pl_test_dir_fini frees both. */
extern char *dir, *path;

/** A suite's .init: `dir` = pl_test_tmpdir(). */
void pl_test_dir_init(void);

/** A suite's .fini: remove and free `dir`, free `path`; both end NULL. */
void pl_test_dir_fini(void);

/** The state of rnd(); a test seeds it before each draw of its inputs. */
extern uint64_t rng;

/** The tests' linear congruential generator (Knuth's MMIX constants): steps
 *  `rng` and returns its bits 33..63 modulo `n` (n > 0). */
uint32_t rnd(uint32_t n);

/** Remove a directory tree (pl__rmtree: whatever the owners, never through a
 *  symbolic link). */
void pl_test_rmtree(const char *path);

/** The uid and gid of "another user" in the tests that need one (nobody). */
#define PL_TEST_NOBODY 65534

/** In a forked child: drop to uid and gid PL_TEST_NOBODY with no
 *  supplementary groups; _exit(90) with a message when that fails. */
void pl_test_become_nobody(void);

/** "dir/name", malloc'd. */
char *pl_test_path(const char *dir, const char *name);

/** Write `len` bytes to `path`, created or truncated. */
void pl_test_write_bytes(const char *path, const void *data, size_t len);

/** The whole file at `path`, malloc'd and NUL-terminated; `*len` its size. */
char *pl_test_read_file(const char *path, size_t *len);

/** Write `text` to dir/name; returns the malloc'd full path. */
char *pl_test_write(const char *dir, const char *name, const char *text);

/** Write a version 1.0 .npy to dir/name and return the malloc'd path: the
 *  header dict "{'descr': 'DESCR', 'fortran_order': FORTRAN, 'shape': SHAPE, }"
 *  with the three fields pasted as given (so that a test can write malformed
 *  ones, e.g. "True" or "(4,)"), padded with spaces and a newline to a
 *  multiple of 64 bytes, then `len` data bytes, which need not match the
 *  shape. */
char *pl_test_write_npy(const char *dir, const char *name, const char *descr,
                        const char *fortran, const char *shape, const void *data, size_t len);

/** Copy the file `from` to `to`, which must not exist yet. */
void pl_test_copy_file(const char *from, const char *to);

/** Create the directory `to` and copy every entry of the directory `from`
 *  into it (files only, no recursion); returns the number of files copied. */
int pl_test_copy_dir(const char *from, const char *to);

/** XOR the byte at offset `off` of the file `path` with `mask`; the offset
 *  must lie inside the file. */
void pl_test_xor_byte(const char *path, uint64_t off, unsigned char mask);

/** Fork with a pipe from the child to the parent. In the child (return 0)
 *  `*fd` is the write end, in the parent (return the child's pid) the read
 *  end; each closes it when done. */
pid_t pl_test_fork_piped(int *fd);

/** Write all `len` bytes to `fd`; a child's helper: it _exit(3)s on failure. */
void pl_test_send(int fd, const void *p, size_t len);

/** Read up to `len` bytes from `fd`, stopping early at end of file or an
 *  error; returns the bytes read. */
size_t pl_test_recv(int fd, void *p, size_t len);

/** In a forked child of a test: give it a private mount namespace and mount
 *  a tmpfs of `size` (mount's syntax: "256k") on the directory `dir`, a small
 *  file system to fill. Returns 0, or the errno of the step that failed with
 *  `*what` naming it (needs CAP_SYS_ADMIN: EPERM elsewhere). */
int pl_test_small_fs(const char *dir, const char *size, const char **what);

/** Run the pertload program ($PERTLOAD_BIN) with `argv` (NULL-terminated,
 *  argv[0] included), stdout discarded, and return its exit status (-1 when
 *  it did not exit normally); `err` receives its stderr (NUL-terminated,
 *  `cap` bytes at most). */
int pl_test_run_cli(char *const argv[], char *err, size_t cap);

/** A growable text buffer; a zeroed one is empty. `s` is NUL-terminated once
 *  anything was appended. */
typedef struct pl_test_text {
    char *s;
    size_t len, cap;
} pl_test_text;

/** Append printf-style output to `t`. */
void pl_test_tprintf(pl_test_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Write the contents of `t` (possibly none) to dir/name, then release `t`
 *  and zero it for the next file; returns the malloc'd path. */
char *pl_test_put_text(const char *dir, const char *name, pl_test_text *t);

/** The inputs of one small database, written by a test into `dir` and named
 *  in `o` as pl_build() takes them. Zero it and set `dir`; the files written
 *  through it are named by paths it owns until pl_test_inputs_free(). */
typedef struct pl_test_inputs {
    const char *dir;                      /**< where the files are written */
    pl_build_opts o;                      /**< genes, reactions, ...: set by the test */
    const char *type_names[PL_MAX_TYPES]; /**< edge types added so far, o.n_types of them */
    const char *type_files[PL_MAX_TYPES];
    char *paths[PL_MAX_TYPES + 8];        /**< the files written */
    int n_paths;
} pl_test_inputs;

/** pl_test_put_text() into in->dir; returns the path, owned by `in`. */
const char *pl_test_inputs_text(pl_test_inputs *in, const char *name, pl_test_text *t);

/** pl_test_write_npy() of a C-ordered array into in->dir; returns the path,
 *  owned by `in`. */
const char *pl_test_inputs_npy(pl_test_inputs *in, const char *name, const char *descr,
                               const char *shape, const void *data, size_t len);

/** Add an edge type named `name` (not copied: it must outlive the build) read
 *  from `path`. */
void pl_test_inputs_edges(pl_test_inputs *in, const char *name, const char *path);

/** pl_build() of the inputs into the new directory `out`; returns its code. */
int pl_test_inputs_build(pl_test_inputs *in, const char *out, pl_build_stats *st,
                         pl_err *err);

/** Free the paths (the files stay) and zero `in`. */
void pl_test_inputs_free(pl_test_inputs *in);

/** Evaluate a gene-reaction rule (`and`, `or` in any case, parentheses;
 *  `and` binds tighter) by recursive descent over its text, independently of
 *  the library's compiler: a gene holds unless deleted(ctx, name, len).
 *  @return 1 (holds; also for an empty rule), 0, or -1 when it does not
 *  parse. */
int pl_test_rule_holds(const char *rule, int (*deleted)(void *ctx, const char *name, size_t len),
                       void *ctx);

/** The deleted set of a database's genes, for pl_test_rule_holds: ctx is a
 *  pl_test_deleted; gene `name` is deleted where P[its index in db] is
 *  nonzero. A name the database does not have ends the test (pl_test_die). */
typedef struct pl_test_deleted {
    pl_db *db;
    const unsigned char *P;
} pl_test_deleted;
int pl_test_db_deleted(void *ctx, const char *name, size_t len);

/** A gene-name resolver of the readers (preprocess/ontology): the index of
 *  `s` in the pl_strtab `ctx` (core/strtab.h), -1 when it has none. */
int64_t pl_test_resolve(void *ctx, const char *s, size_t len);

/** An assertion that formats its message only when it fails (Criterion's
 *  cr_assert formats every time), so that grids of checks run at full speed. */
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            cr_assert_fail(__VA_ARGS__);                                       \
    } while (0)

/** The epoch's row order, step 1 of loader/plan.h written out apart from the
 *  library: 0..n-1, shuffled when `shuffle` by Fisher-Yates from i = n-1
 *  down to 1 with j = mulhi64(rand, i + 1), rand splitmix64 seeded with
 *  seed + epoch * 0x9E3779B97F4A7C15. malloc'd (at least one entry). */
uint32_t *pl_test_plan_order(uint64_t n, uint64_t seed, uint64_t epoch, int shuffle);

/** Deterministic PRNG: splitmix64 as loader/plan.h writes it out (a reference
 *  apart from the library's). */
uint64_t pl_test_rand(uint64_t *state);

/** floor(x * k / 2^64), computed on 32-bit halves (no 128-bit type). */
uint64_t pl_test_mulhi64(uint64_t x, uint64_t k);

/** Uniform integer in [0, n). */
uint64_t pl_test_below(uint64_t *state, uint64_t n);

/** Where `msg` names a file of a temporary build directory of `out`,
 *  "<out>.tmp-<16 hex digits>/<tail>": a pointer to <tail>; NULL when it does
 *  not. */
const char *pl_test_tmp_tail(const char *msg, const char *out);

#endif
