/* The fixture of the pl_build() error tests (build_fx.h). */
#include "build_fx.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

fx F;

char *own(char *p)
{
    cr_assert_lt(F.n_owned, MAX_OWNED);
    F.owned[F.n_owned++] = p;
    return p;
}

char *path_in(const char *dir, const char *name) { return own(pl_test_path(dir, name)); }

/* Write a text input file into the fixture directory. */
const char *put(const char *name, const char *text)
{
    return own(pl_test_write(F.dir, name, text));
}

/* Write `len` raw bytes into the fixture directory. */
const char *put_bin(const char *name, const void *data, size_t len)
{
    char *p = path_in(F.dir, name);
    pl_test_write_bytes(p, data, len);
    return p;
}

/* A version 1.0 .npy in the fixture directory: header dict built from the
 * three fields as written, then `len` data bytes (not necessarily matching). */
const char *put_npy(const char *name, const char *descr, const char *fortran,
                           const char *shape, const void *data, size_t len)
{
    return own(pl_test_write_npy(F.dir, name, descr, fortran, shape, data, len));
}

void fx_init(void)
{
    memset(&F, 0, sizeof F);
    F.dir = pl_test_tmpdir();
    F.out = path_in(F.dir, "db");
    F.genes = put("genes.txt", "g1\ng2\ng3\ng4\n");
    F.edges = put("phys.tsv", "g1\tg2\t0.9\ng2\tg3\t0.4\n");
    F.samples = put("samples.tsv", "genes\tid\tfitness\ng1\t10\t0.5\ng2;g3\t11\tNA\n");
    F.names[0] = "phys";
    F.files[0] = F.edges;
    F.o.out = F.out;
    F.o.genes = F.genes;
    F.o.n_types = 1;
    F.o.type_names = F.names;
    F.o.type_files = F.files;
    F.o.samples = F.samples;
    F.o.progress = 0;
}

void fx_fini(void)
{
    if (F.dir)
        pl_test_rmtree(F.dir);
    free(F.dir);
    for (int i = 0; i < F.n_owned; i++)
        free(F.owned[i]);
    memset(&F, 0, sizeof F);
}

int build(void)
{
    memset(&F.err, 0, sizeof F.err);
    memset(&F.st, 0, sizeof F.st);
    return pl_build(&F.o, &F.st, &F.err);
}

/* No "<out>.tmp-*" directory beside `out`. */
void expect_no_tmp(const char *out)
{
    char dir[4096], prefix[4200];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/');
    cr_assert_not_null(slash);
    *slash = '\0';
    snprintf(prefix, sizeof prefix, "%s.tmp-", slash + 1);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    for (struct dirent *e; (e = readdir(d));)
        cr_expect(strncmp(e->d_name, prefix, strlen(prefix)) != 0,
                  "temporary directory %s/%s left behind", dir, e->d_name);
    closedir(d);
}

/* Neither `out` nor "<out>.tmp-*" beside it exists. */
void expect_clean_at(const char *out)
{
    struct stat st;
    cr_assert(lstat(out, &st) < 0 && errno == ENOENT, "%s exists after a failed build", out);
    expect_no_tmp(out);
}

/* `msg` names a file of a temporary directory of `out`:
 * "<out>.tmp-<16 hex digits>/<tail>". */
void expect_tmp_msg(const char *msg, const char *out, const char *tail)
{
    const char *at = pl_test_tmp_tail(msg, out);
    cr_assert_not_null(at, "message '%s' lacks '%s.tmp-<16 hex digits>/'", msg, out);
    cr_expect(!strncmp(at, tail, strlen(tail)), "message '%s' lacks '%s.tmp-.../%s'", msg,
              out, tail);
}

void expect_clean(void) { expect_clean_at(F.out); }

/* Build, expect failure `code` with a message naming `path` (at line:col when
 * line > 0) and containing `reason`; nothing left behind. */
void expect_fail(int code, const char *path, long line, long col, const char *reason)
{
    int rc = build();
    cr_assert_eq(rc, code, "pl_build returned %d (%s), expected %d (%s); message: %s", rc,
                 pl_errname(rc), code, pl_errname(code), F.err.msg);
    cr_assert_eq(F.err.code, code, "err.code %d, expected %d", F.err.code, code);
    char prefix[4200];
    if (line > 0)
        snprintf(prefix, sizeof prefix, "%s:%ld:%ld: ", path, line, col);
    else
        snprintf(prefix, sizeof prefix, "%s: ", path);
    cr_assert(strstr(F.err.msg, prefix) != NULL, "message '%s' lacks '%s'", F.err.msg, prefix);
    cr_assert(strstr(F.err.msg, reason) != NULL, "message '%s' lacks '%s'", F.err.msg, reason);
    expect_clean();
}

void expect_ok(void)
{
    int rc = build();
    cr_assert_eq(rc, 0, "pl_build failed: %d (%s): %s", rc, pl_errname(rc), F.err.msg);
    struct stat st;
    cr_assert_eq(stat(F.out, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
}

void use_npy_edges(const char *descr, const char *fortran, const char *shape, const void *data,
                   size_t len)
{
    F.files[0] = put_npy("phys.npy", descr, fortran, shape, data, len);
}
