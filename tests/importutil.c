#include "importutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <zlib.h>

#include "src/core/dbformat.h"

void *pl_test_compress(const void *text, size_t len, int codec, size_t *out_len)
{
    if (codec == PL_TEST_ZSTD) {
        void *out;
        pl_err err = {0};
        if (pl__zstd_encode(text, len, 3, &out, out_len, &err) < 0)
            pl_test_die("ZSTD_compress: %s", err.msg);
        return out;
    }
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        pl_test_die("deflateInit2 failed");
    size_t cap = deflateBound(&z, len) + 64;
    unsigned char *out = malloc(cap);
    if (!out)
        pl_test_die("out of memory");
    z.next_in = (Bytef *)text;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        pl_test_die("deflate did not finish");
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

char *pl_test_write_codec(const char *dir, const char *name, const void *text, size_t len,
                          int codec)
{
    char *path = pl_test_path(dir, name);
    if (codec == PL_TEST_PLAIN) {
        pl_test_write_bytes(path, text, len);
        return path;
    }
    size_t n;
    void *z = pl_test_compress(text, len, codec, &n);
    pl_test_write_bytes(path, z, n);
    free(z);
    return path;
}

static int collect(void *ctx, const pl_imp_edge *e, const pl_src *src, pl_err *err)
{
    (void)src;
    (void)err;
    pl_test_text *t = ctx;
    if (e->score == e->score)
        pl_test_tprintf(t, "%.*s\t%.*s\t%.6g\n", (int)e->src.len, e->src.s, (int)e->dst.len,
                        e->dst.s, e->score);
    else
        pl_test_tprintf(t, "%.*s\t%.*s\t-\n", (int)e->src.len, e->src.s, (int)e->dst.len,
                        e->dst.s);
    return 0;
}

int pl_test_imp_collect(const char *fmt, const char *path, const pl_imp_opts *o,
                        pl_test_text *out, pl_imp_stats *st, pl_err *err)
{
    const pl_imp_format *f = pl__imp_format(fmt);
    if (!f)
        pl_test_die("no reader '%s'", fmt);
    pl_imp_stats local;
    memset(err, 0, sizeof *err);
    return pl__imp_read_file(f, path, o, collect, out, st ? st : &local, err);
}

const char *pl_test_put(const char *name, const char *text, int codec)
{
    free(path);
    path = pl_test_write_codec(dir, name, text, strlen(text), codec);
    return path;
}

void pl_test_read_fails(pl_test_reader read, void *ctx, const char *name, const char *text,
                        int codec, unsigned long line, unsigned long col, const char *reason)
{
    pl_err err = {0};
    int rc = read(ctx, pl_test_put(name, text, codec), &err);
    pl_test_expect_at(rc, PL_EPARSE, &err, path, line, col, reason);
}

/* The edge reader and options of pl_test_imp_fails(). */
typedef struct imp_reader {
    const char *fmt;
    const pl_imp_opts *o;
} imp_reader;

static int read_edges(void *ctx, const char *p, pl_err *err)
{
    const imp_reader *r = ctx;
    pl_test_text out = {0};
    int rc = pl_test_imp_collect(r->fmt, p, r->o, &out, NULL, err);
    free(out.s);
    return rc;
}

void pl_test_imp_fails(const char *fmt, const pl_imp_opts *o, const char *name,
                       const char *text, int codec, unsigned long line, unsigned long col,
                       const char *reason)
{
    pl_imp_opts d;
    pl__imp_opts_init(&d);
    imp_reader r = {fmt, o ? o : &d};
    pl_test_read_fails(read_edges, &r, name, text, codec, line, col, reason);
}

pl_names *pl_test_names_from(const char *path, int header)
{
    pl_names *nm;
    pl_err err = {0};
    cr_assert_eq(pl__names_new(&nm, &err), 0);
    cr_assert_eq(pl__names_load_genes(nm, path, header, &err), 0, "%s", err.msg);
    return nm;
}

pl_names *pl_test_names(const char *name, const char *list)
{
    char *p = pl_test_write(dir, name, list);
    pl_names *nm = pl_test_names_from(p, 0);
    free(p);
    return nm;
}

pl_recipe *pl_test_recipe_ok(const char *name, const char *text)
{
    char *p = pl_test_write(dir, name, text);
    pl_recipe *r = NULL;
    pl_err err = {0};
    cr_assert_eq(pl__recipe_load(p, NULL, &r, &err), 0, "%s", err.msg);
    free(p);
    return r;
}

void pl_test_recipe_fails(const char *name, const char *text, unsigned long line,
                          unsigned long col, const char *reason)
{
    char *p = pl_test_write(dir, name, text);
    pl_recipe *r = (pl_recipe *)1;
    pl_err err = {0};
    int rc = pl__recipe_load(p, NULL, &r, &err);
    cr_assert_null(r);
    pl_test_expect_at(rc, PL_EPARSE, &err, p, line, col, reason);
    free(p);
}

void pl_test_expect_no_db(const char *name)
{
    char *p = pl_test_path(dir, name);
    struct stat st;
    cr_assert(lstat(p, &st) < 0 && errno == ENOENT, "%s left behind", p);
    free(p);
}

void pl_test_expect_at(int rc, int code, const pl_err *err, const char *path, unsigned long line,
                       unsigned long col, const char *reason)
{
    cr_assert_eq(rc, code, "returned %d (%s), expected %d (%s); message: %s", rc,
                 pl_errname(rc), code, pl_errname(code), err->msg);
    char prefix[4200];
    if (col > 0)
        snprintf(prefix, sizeof prefix, "%s:%lu:%lu: ", path, line, col);
    else
        snprintf(prefix, sizeof prefix, "%s:%lu: ", path, line);
    cr_assert(strncmp(err->msg, prefix, strlen(prefix)) == 0,
              "message '%s' does not start with '%s'", err->msg, prefix);
    cr_assert(strstr(err->msg, reason), "message '%s' does not say '%s'", err->msg, reason);
}

void pl_test_run_expect(const char *cwd, int status, const char *want, const char *fmt, ...)
{
    char args[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char *out;
    cr_assert_eq(pl_test_run_in(cwd, args, &out), status, "pertload %s:\n%s", args, out);
    if (want)
        cr_assert(strstr(out, want), "pertload %s: want '%s' in\n%s", args, want, out);
    free(out);
}

char *pl_test_real_data(void)
{
    const char *env = getenv("PERTLOAD_REAL_DATA");
    if (env && *env)
        return strdup(env);
    const char *root = getenv("PERTLOAD_SOURCE_ROOT");
    if (!root)
        pl_test_die("neither PERTLOAD_REAL_DATA nor PERTLOAD_SOURCE_ROOT is set");
    char *p = malloc(strlen(root) + 32);
    if (!p)
        pl_test_die("out of memory");
    sprintf(p, "%s/tests/data", root);
    return p;
}

int pl_test_run_in(const char *cwd, const char *args, char **out)
{
    const char *bin = getenv("PERTLOAD_BIN");
    if (!bin || !*bin)
        pl_test_die("PERTLOAD_BIN is not set");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", cwd ? cwd : ".", bin, args);
    FILE *f = popen(cmd, "r");
    if (!f)
        pl_test_die("popen: %s", strerror(errno));
    pl_test_text t = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        pl_test_tprintf(&t, "%.*s", (int)n, buf);
    int st = pclose(f);
    *out = t.s ? t.s : strdup("");
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
