/* The STRING reader: links, detailed, full and physical files (v11 and v12
 * headers), channels by name with a minimum score, the taxon prefix, the
 * same records from plain, gzip and zstd, the real v12 physical links
 * against awk, and malformed files named by file, line and reason. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "importutil.h"

TestSuite(import_string, .init = pl_test_dir_init, .fini = pl_test_dir_fini);

#define DETAILED "protein1 protein2 neighborhood fusion cooccurence coexpression " \
                 "experimental database textmining combined_score\n"
#define FULL "protein1 protein2 neighborhood neighborhood_transferred fusion cooccurence " \
             "homology coexpression coexpression_transferred experiments " \
             "experiments_transferred database database_transferred textmining " \
             "textmining_transferred combined_score\n"

/* The file name of a STRING file written with `codec`. */
static const char *name_for(int codec) { return codec == PL_TEST_GZIP ? "s.txt.gz" : "s.txt"; }

/* Write `text` as dir/name with `codec` and read it as STRING. */
static int read_text(const char *text, int codec, const pl_imp_opts *o, pl_test_text *out,
                     pl_imp_stats *st, pl_err *err)
{
    return pl_test_imp_collect("string", pl_test_put(name_for(codec), text, codec), o, out, st,
                               err);
}

Test(import_string, detailed_channel_and_min_score)
{
    const char *text = DETAILED
        "4932.YAL001C 4932.YBR123C 0 0 0 62 400 0 120 431\n"
        "4932.YBR123C 4932.YAL001C 0 0 0 62 400 0 120 431\n"
        "4932.YAL002W 4932.Q0045 0 0 0 0 399 900 0 950\n"
        "4932.YAL003W 4932.YAL016C-A 51 0 0 0 999 0 0 999\n";
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.channel = "experimental";
    o.min_score = 400;
    for (int c = PL_TEST_PLAIN; c <= PL_TEST_ZSTD; c++) {
        pl_test_text out = {0};
        pl_imp_stats st;
        pl_err err;
        cr_assert_eq(read_text(text, c, &o, &out, &st, &err), 0, "%s", err.msg);
        cr_assert_str_eq(out.s, "YAL001C\tYBR123C\t400\nYBR123C\tYAL001C\t400\n"
                                "YAL003W\tYAL016C-A\t999\n");
        cr_assert_eq(st.rows, 4);
        cr_assert_eq(st.filtered, 1);
        cr_assert_eq(st.emitted, 3);
        free(out.s);
    }
    o.channel = NULL; /* combined_score */
    o.min_score = 940;
    pl_test_text out = {0};
    pl_err err;
    cr_assert_eq(read_text(text, PL_TEST_PLAIN, &o, &out, NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "YAL002W\tQ0045\t950\nYAL003W\tYAL016C-A\t999\n");
    free(out.s);
}

Test(import_string, full_experiments_and_transferred)
{
    const char *text = FULL "9606.A 9606.B 0 0 0 0 0 0 0 300 150 0 0 0 0 500\n";
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.channel = "experimental"; /* .full calls it "experiments" */
    pl_test_text out = {0};
    pl_err err;
    cr_assert_eq(read_text(text, PL_TEST_PLAIN, &o, &out, NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "A\tB\t300\n");
    free(out.s);
    out = (pl_test_text){0};
    o.channel = "experiments_transferred";
    cr_assert_eq(read_text(text, PL_TEST_PLAIN, &o, &out, NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "A\tB\t150\n");
    free(out.s);
}

Test(import_string, v11_links_and_physical_header)
{
    const char *text = "protein1 protein2 combined_score\n"
                       "4932.YAL001C 4932.YAL002W 181\n";
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    pl_test_text out = {0};
    pl_err err;
    cr_assert_eq(read_text(text, PL_TEST_GZIP, &o, &out, NULL, &err), 0, "%s", err.msg);
    cr_assert_str_eq(out.s, "YAL001C\tYAL002W\t181\n");
    free(out.s);
}

/* The same records from a pipe on standard input ("-") as from the file. */
Test(import_string, pipe_gives_the_same_records)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, DETAILED);
    for (int i = 0; i < 30000; i++)
        pl_test_tprintf(&t, "4932.Y%05d 4932.Y%05d 0 0 0 %d %d 0 0 %d\n", i, (i * 13) % 30000,
                        i % 1000, (i * 7) % 1000, (i * 3) % 1000);
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.channel = "experimental";
    o.min_score = 500;
    pl_test_text want = {0}, got = {0};
    pl_err err;
    cr_assert_eq(read_text(t.s, PL_TEST_ZSTD, &o, &want, NULL, &err), 0, "%s", err.msg);
    size_t n;
    void *z = pl_test_compress(t.s, t.len, PL_TEST_ZSTD, &n);
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fd[0]);
        pl_test_send(fd[1], z, n);
        _exit(0);
    }
    close(fd[1]);
    cr_assert_eq(dup2(fd[0], 0), 0);
    close(fd[0]);
    cr_assert_eq(pl_test_imp_collect("string", "-", &o, &got, NULL, &err), 0, "%s", err.msg);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert_gt(want.len, 1000);
    cr_assert_str_eq(got.s, want.s);
    free(t.s), free(z), free(want.s), free(got.s);
}

static int count_edge(void *ctx, const pl_imp_edge *e, const pl_src *src, pl_err *err)
{
    (void)e, (void)src, (void)err;
    ++*(unsigned long *)ctx;
    return 0;
}

/* Real v12 physical links: rows and kept rows at two minimums equal awk's. */
Test(import_string, real_physical_links_match_awk)
{
    char *root = pl_test_real_data();
    char p[4096];
    snprintf(p, sizeof p, "%s/real-raw/string/4932.protein.physical.links.v12.0.txt.gz", root);
    const double mins[] = {0, 700};
    for (int i = 0; i < 2; i++) {
        char cmd[4400];
        snprintf(cmd, sizeof cmd, "zcat '%s' | awk 'NR>1{n++; if ($3>=%g) k++} END{print n, k}'",
                 p, mins[i]);
        FILE *f = popen(cmd, "r");
        cr_assert_not_null(f);
        unsigned long n = 0, k = 0;
        cr_assert_eq(fscanf(f, "%lu %lu", &n, &k), 2);
        cr_assert_eq(pclose(f), 0);
        cr_assert_eq(n, 352606); /* as the provenance notes state */
        pl_imp_opts o;
        pl__imp_opts_init(&o);
        o.min_score = mins[i];
        pl_imp_stats st;
        pl_err err = {0};
        unsigned long seen = 0;
        cr_assert_eq(pl__imp_read_file(pl__imp_format("string"), p, &o, count_edge, &seen, &st,
                                       &err), 0, "%s", err.msg);
        cr_assert_eq(st.rows, n);
        cr_assert_eq(st.emitted, k);
        cr_assert_eq(seen, k);
        cr_assert_eq(st.filtered, n - k);
    }
    free(root);
}

/* ---- malformed files: each names file, line (and column) and reason ---- */

static void expect_bad(const char *text, int codec, const char *channel, unsigned long line,
                       unsigned long col, const char *reason)
{
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.channel = channel;
    pl_test_imp_fails("string", &o, name_for(codec), text, codec, line, col, reason);
}

Test(import_string, bad_wrong_header)
{
    expect_bad("4932.A 4932.B 500\n", PL_TEST_PLAIN, NULL, 1, 0, "not a STRING links header");
    expect_bad("protein1 combined_score protein2\nA 1 B\n", PL_TEST_GZIP, NULL, 1, 0,
               "not a STRING links header");
    expect_bad("protein1 protein2 combined_score scorez\n", PL_TEST_PLAIN, NULL, 1, 34,
               "unknown STRING column 'scorez'");
    expect_bad("", PL_TEST_PLAIN, NULL, 1, 0, "empty file");
}

Test(import_string, bad_channel_not_in_file)
{
    expect_bad("protein1 protein2 combined_score\n4932.A 4932.B 1\n", PL_TEST_PLAIN, "fusion",
               1, 0, "channel 'fusion' is not a column of this file (it has: combined_score)");
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    o.channel = "experimentz";
    pl_err err = {0};
    cr_assert_eq(pl__imp_string.check(&o, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "unknown STRING channel 'experimentz'"), "%s", err.msg);
}

Test(import_string, bad_missing_column)
{
    expect_bad(DETAILED "4932.A 4932.B 0 0 0 0 0 0 0 100\n4932.A 4932.C 0 0 0 0 0 0 100\n",
               PL_TEST_ZSTD, NULL, 3, 0, "expected 10 fields as in the header, found 9 (missing column)");
}

Test(import_string, bad_number)
{
    expect_bad("protein1 protein2 combined_score\n4932.A 4932.B 0.5\n", PL_TEST_PLAIN, NULL, 2,
               15, "bad combined_score score '0.5'");
    expect_bad("protein1 protein2 combined_score\n4932.A 4932.B 1001\n", PL_TEST_GZIP, NULL, 2,
               15, "bad combined_score score '1001' (expected an integer 0..1000)");
}

Test(import_string, bad_taxon_prefix)
{
    expect_bad("protein1 protein2 combined_score\n4932.A YAL001C 5\n", PL_TEST_PLAIN, NULL, 2, 8,
               "protein id 'YAL001C' is not TAXON.NAME");
    expect_bad("protein1 protein2 combined_score\n4932.A 4932.B 5\n4932.A 9606.B 5\n",
               PL_TEST_PLAIN, NULL, 3, 8, "taxon 9606 differs from taxon 4932");
}

Test(import_string, bad_truncated_gzip)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, DETAILED);
    for (int i = 0; i < 20000; i++)
        pl_test_tprintf(&t, "4932.Y%06d 4932.Y%06d 0 0 0 %d 0 0 0 %d\n", i, i + 1, i % 1000,
                        (i * 7) % 1000);
    size_t n;
    void *z = pl_test_compress(t.s, t.len, PL_TEST_GZIP, &n);
    free(path);
    path = pl_test_path(dir, "cut.gz");
    pl_test_write_bytes(path, z, n - 10);
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    pl_test_text out = {0};
    pl_err err;
    int rc = pl_test_imp_collect("string", path, &o, &out, NULL, &err);
    size_t lines = 1;
    for (size_t k = 0; k < out.len; k++)
        lines += out.s[k] == '\n';
    pl_test_expect_at(rc, PL_EPARSE, &err, path, (unsigned long)lines + 1, 0,
                      "truncated gzip stream");
    free(out.s), free(z), free(t.s);
}
