/* The import line source (preprocess/import/source/source.h): the same lines from
 * plain, gzip, zstd, a FIFO and standard input; several gzip members and
 * zstd frames; truncated and corrupt streams, NUL bytes and invalid UTF-8
 * named by file and line; real downloaded files against zcat. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "importutil.h"
#include "preprocess/import/source/source.h"
#include "src/core/checksum.h"

TestSuite(import_source, .init = pl_test_dir_init, .fini = pl_test_dir_fini);

/* Every line of `path` joined with '\n' (so that the text round-trips);
 * returns the source's code, the text in *out. */
static int slurp(const char *path, pl_test_text *out, pl_src_codec *codec, pl_err *err)
{
    pl_src *s;
    memset(err, 0, sizeof *err);
    int rc = pl__src_open(path, &s, err);
    if (rc < 0)
        return rc;
    if (codec)
        *codec = pl__src_codec(s);
    const char *line;
    size_t len;
    uint64_t n = 0;
    while ((rc = pl__src_line(s, &line, &len, err)) > 0) {
        n++;
        cr_assert_eq(pl__src_lineno(s), n);
        pl_test_tprintf(out, "%.*s\n", (int)len, line);
    }
    pl__src_close(s);
    return rc;
}

/* A deterministic text of `n` lines of varied length, some long. */
static char *sample_text(size_t n, size_t *len)
{
    pl_test_text t = {0};
    uint64_t st = 42;
    for (size_t i = 0; i < n; i++) {
        size_t w = (size_t)pl_test_below(&st, i % 97 == 0 ? 3000 : 60);
        pl_test_tprintf(&t, "%zu", i);
        for (size_t k = 0; k < w; k++)
            pl_test_tprintf(&t, "%c", (char)('a' + pl_test_below(&st, 26)));
        pl_test_tprintf(&t, " \xce\xb5\n"); /* ε: valid two-byte UTF-8 */
    }
    *len = t.len;
    return t.s;
}

Test(import_source, codecs_give_the_same_lines)
{
    size_t len;
    char *text = sample_text(200000, &len); /* several MiB: many refills */
    const char *names[] = {"a.txt", "a.txt.gz", "a.txt.zst"};
    const pl_src_codec want[] = {PL_SRC_PLAIN, PL_SRC_GZIP, PL_SRC_ZSTD};
    for (int c = 0; c < 3; c++) {
        char *p = pl_test_write_codec(dir, names[c], text, len, c);
        pl_test_text got = {0};
        pl_err err;
        pl_src_codec codec;
        int rc = slurp(p, &got, &codec, &err);
        cr_assert_eq(rc, 0, "%s: %s", names[c], err.msg);
        cr_assert_eq(codec, want[c]);
        cr_assert_eq(got.len, len, "%s: %zu bytes, expected %zu", names[c], got.len, len);
        cr_assert(memcmp(got.s, text, len) == 0, "%s: lines differ", names[c]);
        free(got.s);
        free(p);
    }
    free(text);
}

Test(import_source, magic_decides_not_the_name)
{
    const char *text = "x y\n";
    char *gz = pl_test_write_codec(dir, "plain-named.txt", text, 4, PL_TEST_GZIP);
    char *pl = pl_test_write_codec(dir, "gzip-named.gz", text, 4, PL_TEST_PLAIN);
    pl_test_text a = {0}, b = {0};
    pl_err err;
    pl_src_codec ca, cb;
    cr_assert_eq(slurp(gz, &a, &ca, &err), 0, "%s", err.msg);
    cr_assert_eq(slurp(pl, &b, &cb, &err), 0, "%s", err.msg);
    cr_assert_eq(ca, PL_SRC_GZIP);
    cr_assert_eq(cb, PL_SRC_PLAIN);
    cr_assert_str_eq(a.s, text);
    cr_assert_str_eq(b.s, text);
    free(a.s), free(b.s), free(gz), free(pl);
}

Test(import_source, gzip_members_and_zstd_frames_concatenate)
{
    for (int c = PL_TEST_GZIP; c <= PL_TEST_ZSTD; c++) {
        size_t n1, n2;
        void *z1 = pl_test_compress("a b\nc ", 6, c, &n1); /* a line split across them */
        void *z2 = pl_test_compress("d\ne f\n", 6, c, &n2);
        char *buf = malloc(n1 + n2);
        memcpy(buf, z1, n1);
        memcpy(buf + n1, z2, n2);
        char *p = pl_test_path(dir, "multi");
        pl_test_write_bytes(p, buf, n1 + n2);
        pl_test_text got = {0};
        pl_err err;
        cr_assert_eq(slurp(p, &got, NULL, &err), 0, "%s", err.msg);
        cr_assert_str_eq(got.s, "a b\nc d\ne f\n");
        free(got.s), free(p), free(buf), free(z1), free(z2);
    }
}

/* Cut a compressed image of many lines at `keep` bytes: an error naming the
 * file and a line inside the text, never a silent short read. */
static void expect_truncated(int codec, const char *what)
{
    size_t len, n;
    char *text = sample_text(50000, &len);
    void *z = pl_test_compress(text, len, codec, &n);
    size_t cuts[] = {n - 1, n - 4, n / 2, 12};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char *p = pl_test_path(dir, "cut");
        pl_test_write_bytes(p, z, cuts[i]);
        pl_test_text got = {0};
        pl_err err;
        int rc = slurp(p, &got, NULL, &err);
        cr_assert_eq(rc, PL_EPARSE, "cut at %zu of %zu: rc %d, %s", cuts[i], n, rc, err.msg);
        char prefix[4200];
        snprintf(prefix, sizeof prefix, "%s:", p);
        cr_assert(strncmp(err.msg, prefix, strlen(prefix)) == 0, "%s", err.msg);
        unsigned long line = strtoul(err.msg + strlen(prefix), NULL, 10);
        cr_assert_gt(line, 0, "%s", err.msg);
        cr_assert_leq(line, 50001, "%s", err.msg);
        /* the line named is the one after the last line handed out */
        size_t lines = 0;
        for (size_t k = 0; k < got.len; k++)
            lines += got.s[k] == '\n';
        cr_assert_eq(line, lines + 1, "%s (after %zu lines)", err.msg, lines);
        cr_assert(strstr(err.msg, what), "%s", err.msg);
        free(got.s), free(p);
    }
    free(z), free(text);
}

Test(import_source, truncated_gzip_names_file_and_line)
{
    expect_truncated(PL_TEST_GZIP, "truncated gzip stream");
}

Test(import_source, truncated_zstd_names_file_and_line)
{
    expect_truncated(PL_TEST_ZSTD, "truncated zstd stream");
}

Test(import_source, corrupt_gzip_and_zstd_are_errors)
{
    size_t len, n;
    char *text = sample_text(2000, &len);
    for (int c = PL_TEST_GZIP; c <= PL_TEST_ZSTD; c++) {
        void *z = pl_test_compress(text, len, c, &n);
        /* gzip: the CRC-32 of the trailer; zstd: a reserved bit of the frame
         * header descriptor */
        if (c == PL_TEST_GZIP)
            ((unsigned char *)z)[n - 6] ^= 0x5a;
        else
            ((unsigned char *)z)[4] |= 0x08;
        char *p = pl_test_path(dir, "bad");
        pl_test_write_bytes(p, z, n);
        pl_test_text got = {0};
        pl_err err;
        int rc = slurp(p, &got, NULL, &err);
        cr_assert_eq(rc, PL_EPARSE, "%s", err.msg);
        cr_assert(strncmp(err.msg, p, strlen(p)) == 0, "%s", err.msg);
        cr_assert(strstr(err.msg, c == PL_TEST_GZIP ? "corrupt gzip data" : "corrupt zstd data"),
                  "%s", err.msg);
        free(got.s), free(p), free(z);
    }
    free(text);
}

Test(import_source, garbage_after_gzip_member)
{
    size_t n;
    void *z = pl_test_compress("a\n", 2, PL_TEST_GZIP, &n);
    char *buf = malloc(n + 3);
    memcpy(buf, z, n);
    memcpy(buf + n, "xyz", 3);
    char *p = pl_test_path(dir, "tail.gz");
    pl_test_write_bytes(p, buf, n + 3);
    pl_test_text got = {0};
    pl_err err;
    int rc = slurp(p, &got, NULL, &err);
    pl_test_expect_at(rc, PL_EPARSE, &err, p, 2, 0, "not another gzip member");
    free(got.s), free(p), free(buf), free(z);
}

Test(import_source, nul_byte_and_bad_utf8_name_line_and_column)
{
    char *p = pl_test_path(dir, "nul.txt");
    pl_test_write_bytes(p, "ok\nab\0c\n", 8);
    pl_test_text got = {0};
    pl_err err;
    pl_test_expect_at(slurp(p, &got, NULL, &err), PL_EPARSE, &err, p, 2, 3, "NUL byte");
    free(got.s);
    got = (pl_test_text){0};
    /* gzip'd, so that the check is on decompressed text; 0xC3 0x28 is invalid,
     * the overlong 0xC0 0xAF too; long ASCII before them (the 8-byte path). */
    const char *bad = "fine\nfine line\nabcdefghijklmnopq\xc3\x28z\n";
    char *g = pl_test_write_codec(dir, "utf8.gz", bad, strlen(bad), PL_TEST_GZIP);
    pl_test_expect_at(slurp(g, &got, NULL, &err), PL_EPARSE, &err, g, 3, 18, "invalid UTF-8");
    free(got.s);
    got = (pl_test_text){0};
    char *o = pl_test_write(dir, "overlong.txt", "\xc0\xaf\n");
    pl_test_expect_at(slurp(o, &got, NULL, &err), PL_EPARSE, &err, o, 1, 1, "invalid UTF-8");
    free(got.s), free(p), free(g), free(o);
}

Test(import_source, crlf_and_missing_final_newline)
{
    char *p = pl_test_write(dir, "crlf.txt", "a b\r\nc\r\n\r\nlast");
    pl_test_text got = {0};
    pl_err err;
    cr_assert_eq(slurp(p, &got, NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(got.s, "a b\nc\n\nlast\n");
    free(got.s), free(p);
}

Test(import_source, a_line_longer_than_the_buffer)
{
    size_t big = (3u << 20) + 17; /* three times the first buffer */
    pl__src_set_limits(4u << 20, 0);
    char *text = malloc(big + 8);
    memset(text, 'q', big);
    memcpy(text + big, "\nend\n", 5);
    char *p = pl_test_write_codec(dir, "long.zst", text, big + 5, PL_TEST_ZSTD);
    pl_test_text got = {0};
    pl_err err;
    cr_assert_eq(slurp(p, &got, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(got.len, big + 5);
    cr_assert(memcmp(got.s, text, big + 5) == 0);
    free(got.s), free(p), free(text);
}

/* A child writes `data` into `fd` in small pieces, then exits. */
static pid_t writer(int fd, const void *data, size_t len)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        for (size_t off = 0; off < len;) {
            size_t k = len - off < 777 ? len - off : 777;
            ssize_t w = write(fd, (const char *)data + off, k);
            if (w <= 0)
                _exit(3);
            off += (size_t)w;
        }
        close(fd);
        _exit(0);
    }
    return pid;
}

Test(import_source, fifo_and_stdin_read_like_files)
{
    size_t len, n;
    char *text = sample_text(20000, &len);
    void *z = pl_test_compress(text, len, PL_TEST_GZIP, &n);
    /* a named FIFO */
    char *fifo = pl_test_path(dir, "fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0, "%s", strerror(errno));
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(fifo, O_WRONLY);
        if (fd < 0)
            _exit(2);
        writer(fd, z, n);
        close(fd);
        int st;
        wait(&st);
        _exit(0);
    }
    pl_test_text got = {0};
    pl_err err;
    cr_assert_eq(slurp(fifo, &got, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(got.len, len);
    cr_assert(memcmp(got.s, text, len) == 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    free(got.s);
    /* "-": standard input, here a pipe */
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    pid = writer(pfd[1], z, n);
    close(pfd[1]);
    cr_assert_eq(dup2(pfd[0], 0), 0);
    close(pfd[0]);
    got = (pl_test_text){0};
    cr_assert_eq(slurp("-", &got, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(got.len, len);
    cr_assert(memcmp(got.s, text, len) == 0);
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    free(got.s), free(fifo), free(z), free(text);
}

Test(import_source, missing_file_and_directory)
{
    pl_src *s = (pl_src *)1;
    pl_err err = {0};
    char *p = pl_test_path(dir, "absent.gz");
    cr_assert_eq(pl__src_open(p, &s, &err), -ENOENT);
    cr_assert_null(s);
    cr_assert(strstr(err.msg, p), "%s", err.msg);
    cr_assert_eq(pl__src_open(dir, &s, &err), -EISDIR, "%s", err.msg);
    free(p);
}

Test(import_source, empty_inputs)
{
    char *p = pl_test_write(dir, "empty", "");
    pl_test_text got = {0};
    pl_err err;
    cr_assert_eq(slurp(p, &got, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(got.len, 0);
    char *g = pl_test_write_codec(dir, "empty.gz", "", 0, PL_TEST_GZIP);
    cr_assert_eq(slurp(g, &got, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(got.len, 0);
    free(p), free(g);
}

/* Real downloaded files: line count and bytes equal what zcat gives. */
Test(import_source, real_files_match_zcat)
{
    char *root = pl_test_real_data();
    const char *files[] = {
        "real-raw/string/4932.protein.physical.links.v12.0.txt.gz",
        "real-raw/sgd_features/SGD_features.tab.gz",
        "real/yeastract/RegulationTwoColumnTable_both.tsv.gz",
        "real/dango-string/yeast_string_genes.txt.gz",
        "real-raw/sga_costanzo2016/SGA_ExE.txt.gz",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[4096], cmd[12800];
        snprintf(path, sizeof path, "%s/%s", root, files[i]);
        snprintf(cmd, sizeof cmd, "zcat '%s' | wc -c; zcat '%s' | wc -l; zcat '%s' | tail -c1 | wc -l",
                 path, path, path);
        FILE *f = popen(cmd, "r");
        cr_assert_not_null(f);
        unsigned long bytes = 0, nl = 0, last_nl = 0;
        cr_assert_eq(fscanf(f, "%lu %lu %lu", &bytes, &nl, &last_nl), 3, "%s", cmd);
        cr_assert_eq(pclose(f), 0, "%s", cmd);
        cr_assert_gt(bytes, 0, "%s is empty or missing", path);
        pl_src *s;
        pl_err err = {0};
        cr_assert_eq(pl__src_open(path, &s, &err), 0, "%s", err.msg);
        cr_assert_eq(pl__src_codec(s), PL_SRC_GZIP);
        const char *line;
        size_t len;
        int rc;
        while ((rc = pl__src_line(s, &line, &len, &err)) > 0)
            ;
        cr_assert_eq(rc, 0, "%s", err.msg);
        unsigned long lines = nl + (last_nl ? 0 : 1); /* a last line without '\n' */
        cr_assert_eq(pl__src_lineno(s), lines, "%s: %llu lines, zcat says %lu", files[i],
                     (unsigned long long)pl__src_lineno(s), lines);
        cr_assert_eq(pl__src_bytes(s), bytes, "%s", files[i]);
        pl__src_close(s);
    }
    free(root);
}

/* The peak resident size of this process, in bytes. */
static uint64_t peak_rss(void)
{
    struct rusage ru;
    cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
    return (uint64_t)ru.ru_maxrss * 1024;
}

/* A 25 KB zstd file holding one 768 MiB line took 800 MB: a line past the
 * limit is an error at its line naming the limit, read in memory bounded by
 * the limit; a line at the limit is read; a raised limit reads longer ones. */
Test(import_source, line_limit)
{
    uint64_t max;
    pl__src_limits(&max, NULL);
    cr_assert_eq(max, PL_SRC_MAX_LINE_DEFAULT);
    cr_assert_eq(max, 1u << 20);
    size_t big = 64u << 20; /* 64 times the limit, compressed to some KB */
    char *text = malloc(big + 16);
    memcpy(text, "first\n", 6);
    memset(text + 6, 'q', big);
    memcpy(text + 6 + big, "\nend\n", 5);
    size_t zlen;
    void *z = pl_test_compress(text, big + 11, PL_TEST_ZSTD, &zlen);
    free(text);
    char *p = pl_test_write_codec(dir, "long.zst", z, zlen, PL_TEST_PLAIN);
    cr_assert_lt(zlen, (size_t)1 << 20);
    free(z);
    uint64_t before = peak_rss();
    pl_test_text got = {0};
    pl_err err;
    pl_test_expect_at(slurp(p, &got, NULL, &err), PL_EPARSE, &err, p, 2, 0,
                      "a line longer than the limit of 1048576 bytes (raise it with --max-line");
    cr_assert_lt(peak_rss(), before + (16u << 20), "peak RSS grew by %llu bytes",
                 (unsigned long long)(peak_rss() - before));
    free(got.s);
    free(p);

    /* exactly at the limit (a CR before the newline not counted), and one past */
    for (int c = 0; c < 3; c++) {
        size_t n = 1u << 20;
        char *t = malloc(n + 16);
        memset(t, 'a', n + 1);
        memcpy(t + n, "\r\nz\n", 4);
        char *q = pl_test_write_codec(dir, c ? "at.gz" : "at.txt", t, n + 4, c);
        got = (pl_test_text){0};
        cr_assert_eq(slurp(q, &got, NULL, &err), 0, "%s", err.msg);
        cr_assert_eq(got.len, n + 3);
        free(got.s), free(q);
        memcpy(t + n, "b\nz\n", 4);
        q = pl_test_write_codec(dir, c ? "past.gz" : "past.txt", t, n + 4, c);
        got = (pl_test_text){0};
        pl_test_expect_at(slurp(q, &got, NULL, &err), PL_EPARSE, &err, q, 1, 0,
                          "a line longer than the limit of 1048576 bytes");
        free(got.s), free(q), free(t);
    }
}

/* `file: /dev/zero` grew until the process limit: no newline ever comes. */
Test(import_source, endless_input_stops_at_the_line_limit)
{
    pl__src_set_limits(2u << 20, 0);
    pl_test_text got = {0};
    pl_err err;
    uint64_t before = peak_rss();
    pl_test_expect_at(slurp("/dev/zero", &got, NULL, &err), PL_EPARSE, &err, "/dev/zero", 1, 0,
                      "a line longer than the limit of 2097152 bytes");
    cr_assert_lt(peak_rss(), before + (16u << 20));
    free(got.s);
}

/* A whole text (an SBML model) held in memory stops at the text limit, at
 * the line that passes it. */
Test(import_source, text_limit)
{
    const char *text = "0123456789\nabcdefghij\nlast line\n";
    char *p = pl_test_write_codec(dir, "t.gz", text, strlen(text), PL_TEST_GZIP);
    char *out;
    size_t len;
    pl_err err = {0};
    cr_assert_eq(pl__src_text(p, &out, &len, &err), 0, "%s", err.msg);
    cr_assert_eq(len, strlen(text));
    cr_assert_str_eq(out, text);
    free(out);
    pl__src_set_limits(0, 21);
    pl_test_expect_at(pl__src_text(p, &out, &len, &err), PL_EPARSE, &err, p, 2, 0,
                      "the text passes the limit of 21 bytes held in memory");
    cr_assert_null(out);
    pl__src_set_limits(0, 32);
    cr_assert_eq(pl__src_text(p, &out, &len, &err), 0, "%s", err.msg);
    free(out);
    free(p);
}

/* A zstd frame without a content size, compressed with `window_log`, in
 * several blocks. */
static void *zstd_window(const char *text, size_t len, int window_log, size_t *out_len)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    cr_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, window_log)));
    size_t cap = ZSTD_compressBound(len) + 1024;
    void *out = malloc(cap);
    ZSTD_outBuffer o = {out, cap, 0};
    ZSTD_inBuffer in = {text, len, 0};
    cr_assert(!ZSTD_isError(ZSTD_compressStream2(c, &o, &in, ZSTD_e_continue)));
    size_t r;
    do
        r = ZSTD_compressStream2(c, &o, &in, ZSTD_e_end);
    while (r > 0 && !ZSTD_isError(r));
    cr_assert(!ZSTD_isError(r));
    ZSTD_freeCCtx(c);
    *out_len = o.pos;
    return out;
}

/* `zstd --long=31` frames were "corrupt zstd data (Frame requires too much
 * memory)": windows up to the text limit are read, a larger one is named
 * with the limit and the option. */
Test(import_source, zstd_long_windows)
{
    const char *text = "a\tb\nc\td\n";
    size_t zlen;
    void *z = zstd_window(text, strlen(text), 28, &zlen);
    char *p = pl_test_write_codec(dir, "w28.zst", z, zlen, PL_TEST_PLAIN);
    free(z);
    pl_test_text got = {0};
    pl_err err;
    cr_assert_eq(slurp(p, &got, NULL, &err), 0, "%s", err.msg); /* 2^28: the default limit */
    cr_assert_str_eq(got.s, text);
    free(got.s), free(p);
    z = zstd_window(text, strlen(text), 31, &zlen);
    p = pl_test_write_codec(dir, "w31.zst", z, zlen, PL_TEST_PLAIN);
    free(z);
    got = (pl_test_text){0};
    pl_test_expect_at(slurp(p, &got, NULL, &err), PL_EPARSE, &err, p, 1, 0,
                      "a zstd frame with a window above the memory limit of 268435456 bytes "
                      "(zstd --long; raise the limit with --max-text");
    free(got.s);
    uint64_t v;
    cr_assert_eq(pl__src_parse_limit("2G", &v), 0);
    cr_assert_eq(v, UINT64_C(1) << 31);
    pl__src_set_limits(0, v);
    got = (pl_test_text){0};
    cr_assert_eq(slurp(p, &got, NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(got.s, text);
    free(got.s), free(p);
}

Test(import_source, parse_limit)
{
    uint64_t v;
    cr_assert_eq(pl__src_parse_limit("1048576", &v), 0);
    cr_assert_eq(v, 1048576);
    cr_assert_eq(pl__src_parse_limit("4k", &v), 0);
    cr_assert_eq(v, 4096);
    cr_assert_eq(pl__src_parse_limit("3M", &v), 0);
    cr_assert_eq(v, 3u << 20);
    const char *bad[] = {"", "0", "-1", "1.5M", "4m", "1T", "12 ", " 1", "99999999999999999999",
                         "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_eq(pl__src_parse_limit(bad[i], &v), -1, "'%s'", bad[i]);
}

/* The digest of what the source read (recipe inputs): pl__xxh64 of the
 * file's bytes, however the reads split it; the streaming XXH64 against the
 * one-shot one at every split of a text. */
Test(import_source, digest_of_what_was_read)
{
    size_t len;
    char *text = sample_text(60000, &len);
    uint64_t bytes, sum;
    for (int c = 0; c < 3; c++) {
        const char *names[] = {"d.txt", "d.gz", "d.zst"};
        char *p = pl_test_write_codec(dir, names[c], text, len, c);
        size_t n;
        char *raw = pl_test_read_file(p, &n);
        cr_assert_eq(pl__src_digest(p, &bytes, &sum), 0, "no read yet");
        pl_test_text got = {0};
        pl_err err;
        cr_assert_eq(slurp(p, &got, NULL, &err), 0, "%s", err.msg);
        cr_assert_eq(pl__src_digest(p, &bytes, &sum), 1);
        cr_assert_eq(bytes, n);
        cr_assert_eq(sum, pl__xxh64(raw, n, 0), "%s", names[c]);
        free(got.s), free(raw), free(p);
    }
    uint64_t st = 7;
    for (size_t total = 0; total < 200; total += 13) {
        pl__xxh64_state h = {0};
        for (size_t i = 0; i < total;) {
            size_t k = 1 + (size_t)pl_test_below(&st, 70);
            k = k < total - i ? k : total - i;
            pl__xxh64_update(&h, text + i, k);
            i += k;
        }
        cr_assert_eq(pl__xxh64_digest(&h), pl__xxh64(text, total, 0), "%zu bytes", total);
    }
    free(text);
}
