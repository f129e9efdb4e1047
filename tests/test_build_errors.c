/* pl_build() on malformed inputs: every rejection returns the right code,
 * names "file:line:col: reason" (or "file: reason" for binary inputs), and
 * leaves neither the output directory nor a "<out>.tmp-*" directory behind. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pertload.h"
#include "preprocess/tmpdir.h"
#include "src/core/dbformat.h"
#include "testutil.h"

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

static fx F;

static char *own(char *p)
{
    cr_assert_lt(F.n_owned, MAX_OWNED);
    F.owned[F.n_owned++] = p;
    return p;
}

static char *path_in(const char *dir, const char *name) { return own(pl_test_path(dir, name)); }

/* Write a text input file into the fixture directory. */
static const char *put(const char *name, const char *text)
{
    return own(pl_test_write(F.dir, name, text));
}

/* Write `len` raw bytes into the fixture directory. */
static const char *put_bin(const char *name, const void *data, size_t len)
{
    char *p = path_in(F.dir, name);
    pl_test_write_bytes(p, data, len);
    return p;
}

/* A version 1.0 .npy in the fixture directory: header dict built from the
 * three fields as written, then `len` data bytes (not necessarily matching). */
static const char *put_npy(const char *name, const char *descr, const char *fortran,
                           const char *shape, const void *data, size_t len)
{
    return own(pl_test_write_npy(F.dir, name, descr, fortran, shape, data, len));
}

static void fx_init(void)
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

static void fx_fini(void)
{
    if (F.dir)
        pl_test_rmtree(F.dir);
    free(F.dir);
    for (int i = 0; i < F.n_owned; i++)
        free(F.owned[i]);
    memset(&F, 0, sizeof F);
}

TestSuite(build_errors, .init = fx_init, .fini = fx_fini);

static int build(void)
{
    memset(&F.err, 0, sizeof F.err);
    memset(&F.st, 0, sizeof F.st);
    return pl_build(&F.o, &F.st, &F.err);
}

/* No "<out>.tmp-*" directory beside `out`. */
static void expect_no_tmp(const char *out)
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
static void expect_clean_at(const char *out)
{
    struct stat st;
    cr_assert(lstat(out, &st) < 0 && errno == ENOENT, "%s exists after a failed build", out);
    expect_no_tmp(out);
}

/* `msg` names a file of a temporary directory of `out`:
 * "<out>.tmp-<16 hex digits>/<tail>". */
static void expect_tmp_msg(const char *msg, const char *out, const char *tail)
{
    const char *at = pl_test_tmp_tail(msg, out);
    cr_assert_not_null(at, "message '%s' lacks '%s.tmp-<16 hex digits>/'", msg, out);
    cr_expect(!strncmp(at, tail, strlen(tail)), "message '%s' lacks '%s.tmp-.../%s'", msg,
              out, tail);
}

static void expect_clean(void) { expect_clean_at(F.out); }

/* Build, expect failure `code` with a message naming `path` (at line:col when
 * line > 0) and containing `reason`; nothing left behind. */
static void expect_fail(int code, const char *path, long line, long col, const char *reason)
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

static void expect_ok(void)
{
    int rc = build();
    cr_assert_eq(rc, 0, "pl_build failed: %d (%s): %s", rc, pl_errname(rc), F.err.msg);
    struct stat st;
    cr_assert_eq(stat(F.out, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
}

/* ------------------------------------------------------------ controls */

Test(build_errors, valid_inputs_build)
{
    F.genes = F.o.genes = put("genes.txt", "g1\ng2\ng3\ng4\ng\xc3\xa8ne5\n# comment\n\n");
    F.files[0] = put("phys.tsv", "# src dst score\ng1\tg\xc3\xa8ne5\t0.9\r\ng\xc3\xa8ne5 g3 0.4\n");
    expect_ok();
    cr_expect_eq(F.st.n_genes, 5);
    cr_expect_eq(F.st.n_edges, 2);
    cr_expect_eq(F.st.n_samples, 2);
    cr_expect_eq(F.st.n_labels, 1);
    cr_expect_eq(F.st.dropped_edges + F.st.dropped_gpr + F.st.dropped_samples, 0);
    expect_no_tmp(F.out);
    char *marker = path_in(F.out, PL__TMP_MARKER);
    struct stat st;
    cr_expect(lstat(marker, &st) < 0 && errno == ENOENT, "%s left in the database", marker);
}

/* ------------------------------------------------------------- UTF-8 */

Test(build_errors, genes_bad_utf8)
{
    F.o.genes = put("genes.txt", "g1\ng\xff" "2\ng3\n");
    expect_fail(PL_EPARSE, F.o.genes, 2, 2, "invalid UTF-8 (byte 0xff)");
}

Test(build_errors, genes_utf8_surrogate)
{
    F.o.genes = put("genes.txt", "g1\ng2\nab\xed\xa0\x80\n");
    expect_fail(PL_EPARSE, F.o.genes, 3, 3, "invalid UTF-8 (byte 0xed)");
}

Test(build_errors, edges_bad_utf8)
{
    F.files[0] = put("phys.tsv", "g1\tg2\t0.5\ng2\tg\xc3\x28\t0.5\n");
    expect_fail(PL_EPARSE, F.files[0], 2, 5, "invalid UTF-8 (byte 0xc3)");
}

Test(build_errors, samples_bad_utf8)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1\t1\t0.5\ng2;\xe0\x80\x80\t2\t0.5\n");
    expect_fail(PL_EPARSE, F.o.samples, 3, 4, "invalid UTF-8 (byte 0xe0)");
}

Test(build_errors, samples_bad_utf8_truncated_sequence)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1\t1\t0.5\xf0\x9f\x98\n");
    expect_fail(PL_EPARSE, F.o.samples, 2, 9, "invalid UTF-8 (byte 0xf0)");
}

/* ----------------------------------------------------- column counts */

Test(build_errors, genes_two_fields)
{
    F.o.genes = put("genes.txt", "g1\ng2 extra\n");
    expect_fail(PL_EPARSE, F.o.genes, 2, 4, "expected one gene name per line, found 2 fields");
}

Test(build_errors, edges_one_column)
{
    F.files[0] = put("phys.tsv", "g1\tg2\t0.5\ng3\n");
    expect_fail(PL_EPARSE, F.files[0], 2, 1,
                "expected 2 or 3 columns (src dst [score]), found 1");
}

Test(build_errors, edges_four_columns)
{
    F.files[0] = put("phys.tsv", "g1\tg2\t0.5\tx\n");
    expect_fail(PL_EPARSE, F.files[0], 1, 11,
                "expected 2 or 3 columns (src dst [score]), found 4");
}

Test(build_errors, gpr_three_columns)
{
    F.o.gpr = put("gpr.tsv", "g1\tr1\ng2\tr2\t1\n");
    expect_fail(PL_EPARSE, F.o.gpr, 2, 7, "expected 2 columns (gene reaction), found 3");
}

Test(build_errors, gpr_one_column)
{
    F.o.gpr = put("gpr.tsv", "# gene reaction\ng1 r1\n\ng2\n");
    expect_fail(PL_EPARSE, F.o.gpr, 4, 1, "expected 2 columns (gene reaction), found 1");
}

Test(build_errors, rmr_two_columns)
{
    F.o.gpr = put("gpr.tsv", "g1\tr1\n");
    F.o.rmr = put("rmr.tsv", "r1\tm1\t-1\nr1\tm2\n");
    expect_fail(PL_EPARSE, F.o.rmr, 2, 1,
                "expected 3 columns (reaction metabolite stoichiometry), found 2");
}

Test(build_errors, samples_row_fewer_columns)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1\t1\t0.5\ng1\t1\n");
    expect_fail(PL_EPARSE, F.o.samples, 3, 5, "expected 3 columns as in the header, found 2");
}

Test(build_errors, samples_row_more_columns)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1\t1\t0.5\t7\n");
    expect_fail(PL_EPARSE, F.o.samples, 2, 10, "expected 3 columns as in the header, found 4");
}

/* ---------------------------------------------------- unknown genes */

Test(build_errors, edges_unknown_gene)
{
    F.files[0] = put("phys.tsv", "g1\tg2\t0.9\ng2\tgX\t0.4\n");
    expect_fail(PL_EPARSE, F.files[0], 2, 4, "unknown gene 'gX'");
}

Test(build_errors, edges_unknown_gene_dropped)
{
    F.files[0] = put("phys.tsv", "g1\tg2\t0.9\ng2\tgX\t0.4\ngY\tgZ\t1\ng3\tg4\t1\n");
    F.o.drop_unknown_genes = 1;
    expect_ok();
    cr_expect_eq(F.st.dropped_edges, 2);
    cr_expect_eq(F.st.n_edges, 2);
    cr_expect_eq(F.st.dropped_gpr, 0);
    cr_expect_eq(F.st.dropped_samples, 0);
}

Test(build_errors, gpr_unknown_gene)
{
    F.o.gpr = put("gpr.tsv", "g1\tr1\ngQ\tr2\n");
    expect_fail(PL_EPARSE, F.o.gpr, 2, 1, "unknown gene 'gQ'");
}

Test(build_errors, gpr_unknown_gene_dropped)
{
    F.o.gpr = put("gpr.tsv", "g1\tr1\ngQ\tr2\ng2\tr2\n");
    F.o.drop_unknown_genes = 1;
    expect_ok();
    cr_expect_eq(F.st.dropped_gpr, 1);
    cr_expect_eq(F.st.n_gpr, 2);
    cr_expect_eq(F.st.dropped_edges, 0);
    cr_expect_eq(F.st.dropped_samples, 0);
}

Test(build_errors, samples_unknown_gene)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1;gZ\t1\t0.5\n");
    expect_fail(PL_EPARSE, F.o.samples, 2, 4, "unknown gene 'gZ'");
}

Test(build_errors, samples_unknown_gene_dropped)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1;gZ\t1\t0.5\ng2\t2\t0.25\n");
    F.o.drop_unknown_genes = 1;
    expect_ok();
    cr_expect_eq(F.st.dropped_samples, 1);
    cr_expect_eq(F.st.n_samples, 1);
    pl_db *db;
    pl_err e = {0};
    cr_assert_eq(pl_db_open(F.out, &db, &e), 0, "%s", e.msg);
    pl_sample s;
    cr_expect_eq(pl_db_sample(db, 0, &s, &e), 0, "%s", e.msg);
    cr_expect_eq(s.id, 2);
    cr_expect_eq(s.n_genes, 1);
    cr_expect_eq(s.genes[0], 1);
    pl_db_close(db);
}

/* Dropped samples take their payload rows with them. */
Test(build_errors, dropped_samples_drop_payload_rows)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\n"
                                     "gX\t100\t0\n"      /* dropped */
                                     "g1\t101\t1\n"
                                     "g2;g3\t102\t2\n"
                                     "g1;gY\t103\t3\n"   /* dropped */
                                     "gZ\t104\t4\n"      /* dropped */
                                     "g4\t105\t5\n");
    int32_t data[6][3];
    for (int r = 0; r < 6; r++)
        for (int k = 0; k < 3; k++)
            data[r][k] = r * 10 + k;
    F.o.payload = put_npy("payload.npy", "<i4", "False", "(6, 3)", data, sizeof data);
    F.o.drop_unknown_genes = 1;
    expect_ok();
    cr_expect_eq(F.st.dropped_samples, 3);
    cr_expect_eq(F.st.n_samples, 3);
    cr_expect_eq(F.st.payload_bytes, PL_PAYLOAD_ALIGN + 3 * sizeof data[0]);

    char *p = path_in(F.out, PL_FILE_PAYLOAD);
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f, "%s: %s", p, strerror(errno));
    char hdr[PL_PAYLOAD_ALIGN + 1];
    int32_t got[4][3];
    cr_assert_eq(fread(hdr, 1, PL_PAYLOAD_ALIGN, f), PL_PAYLOAD_ALIGN);
    hdr[PL_PAYLOAD_ALIGN] = '\0';
    size_t n = fread(got, 1, sizeof got, f);
    fclose(f);
    cr_assert_eq(n, 3 * sizeof got[0], "payload data is %zu bytes", n);
    cr_expect(strstr(hdr + 10, "'shape': (3, 3)") != NULL, "header: %s", hdr + 10);
    const int kept[3] = {1, 2, 5};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            cr_expect_eq(got[r][k], data[kept[r]][k], "payload row %d col %d", r, k);

    pl_db *db;
    pl_err e = {0};
    cr_assert_eq(pl_db_open(F.out, &db, &e), 0, "%s", e.msg);
    const pl_db_info *info = pl_db_info_get(db);
    cr_expect_eq(info->n_samples, 3);
    cr_expect_eq(info->payload_ndim, 1);
    cr_expect_eq(info->payload_shape[0], 3);
    cr_expect_eq(info->payload_row_bytes, 12);
    for (int r = 0; r < 3; r++) {
        pl_sample s;
        cr_expect_eq(pl_db_sample(db, (uint64_t)r, &s, &e), 0, "%s", e.msg);
        cr_expect_eq(s.id, 100 + (uint64_t)kept[r]);
        cr_expect_eq(s.labels[0], (float)kept[r]);
    }
    cr_expect_eq(pl_db_verify(db, &e), 0, "%s", e.msg);
    pl_db_close(db);
}

/* Drops scattered over a payload larger than one checksummed chunk: the kept
 * rows come out in order and the chunk checksums match. */
Test(build_errors, dropped_samples_payload_across_chunks)
{
    enum { ROWS = 3000, COLS = 100 };
    size_t cap = ROWS * 32 + 64, len = 0;
    char *t = malloc(cap);
    int32_t *pay = malloc(sizeof(int32_t) * ROWS * COLS);
    uint32_t *kept = malloc(sizeof(uint32_t) * ROWS);
    cr_assert(t && pay && kept);
    len += (size_t)snprintf(t, cap, "genes\tid\n");
    uint32_t n_kept = 0;
    for (uint32_t r = 0; r < ROWS; r++) {
        int drop = r % 97 == 0 || r == 1 || r == ROWS - 1 || (r >= 1500 && r < 1511);
        len += (size_t)snprintf(t + len, cap - len, "%s\t%u\n", drop ? "g1;gX" : "g2", r);
        if (!drop)
            kept[n_kept++] = r;
        for (uint32_t k = 0; k < COLS; k++)
            pay[(size_t)r * COLS + k] = (int32_t)(r * COLS + k);
    }
    F.o.samples = put("samples.tsv", t);
    F.o.payload = put_npy("payload.npy", "<i4", "False", "(3000, 100)", pay,
                          sizeof(int32_t) * ROWS * COLS);
    F.o.drop_unknown_genes = 1;
    expect_ok();
    cr_expect_eq(F.st.dropped_samples, ROWS - n_kept);
    cr_expect_eq(F.st.n_samples, n_kept);
    cr_expect_eq(F.st.payload_bytes, PL_PAYLOAD_ALIGN + (uint64_t)n_kept * COLS * 4);

    char *p = path_in(F.out, PL_FILE_PAYLOAD);
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f);
    int32_t *got = malloc(sizeof(int32_t) * ROWS * COLS);
    cr_assert_not_null(got);
    cr_assert_eq(fseek(f, PL_PAYLOAD_ALIGN, SEEK_SET), 0);
    size_t n = fread(got, sizeof(int32_t), (size_t)ROWS * COLS, f);
    fclose(f);
    cr_assert_eq(n, (size_t)n_kept * COLS);
    for (uint32_t i = 0; i < n_kept; i++)
        cr_assert_eq(memcmp(got + (size_t)i * COLS, pay + (size_t)kept[i] * COLS, COLS * 4), 0,
                     "payload row %u should be input row %u", i, kept[i]);
    pl_db *db;
    pl_err e = {0};
    cr_assert_eq(pl_db_open(F.out, &db, &e), 0, "%s", e.msg);
    cr_expect_eq(pl_db_verify(db, &e), 0, "%s", e.msg);
    pl_sample s;
    cr_expect_eq(pl_db_sample(db, n_kept - 1, &s, &e), 0, "%s", e.msg);
    cr_expect_eq(s.id, kept[n_kept - 1]);
    pl_db_close(db);
    free(got);
    free(t);
    free(pay);
    free(kept);
}

/* ------------------------------------------------------- gene lists */

Test(build_errors, genes_duplicate)
{
    F.o.genes = put("genes.txt", "g1\ng2\n  g1\n");
    expect_fail(PL_EPARSE, F.o.genes, 3, 3, "duplicate gene name 'g1'");
}

Test(build_errors, genes_empty_file)
{
    F.o.genes = put("genes.txt", "");
    expect_fail(PL_EPARSE, F.o.genes, 1, 1, "no gene names in the file");
}

Test(build_errors, genes_only_comments_and_blanks)
{
    F.o.genes = put("genes.txt", "# genes\n\n   \n\t\n  # more\r\n");
    expect_fail(PL_EPARSE, F.o.genes, 1, 1, "no gene names in the file");
}

/* Found by fuzz_text: a line of vertical tabs or form feeds was taken for a
 * line with content (and then had no fields). */
Test(build_errors, blank_lines_of_any_whitespace_are_skipped)
{
    F.o.genes = put("genes.txt", "g1\n\v\n\f \t\ng2\n \v# comment\ng3\ng4\n");
    F.files[0] = put("phys.tsv", "g1\tg2\t0.9\n\f\f\n\v\t\ng2\tg3\t0.4\n");
    expect_ok();
    cr_expect_eq(F.st.n_genes, 4);
    cr_expect_eq(F.st.n_edges, 2);
}

/* Found by fuzz_build: a samples file with a header and no rows stores an
 * empty block index (checksummed from a null pointer before the fix). */
Test(build_errors, samples_header_only_builds_an_empty_database)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\n# nothing yet\n");
    expect_ok();
    cr_expect_eq(F.st.n_samples, 0);
    pl_db *db;
    cr_assert_eq(pl_db_open(F.out, &db, &F.err), 0, "%s", F.err.msg);
    cr_expect_eq(pl_db_info_get(db)->n_samples, 0);
    cr_expect_eq(pl_db_info_get(db)->n_blocks, 0);
    cr_expect_eq(pl_db_verify(db, &F.err), 0, "%s", F.err.msg);
    pl_db_close(db);
}

/* A header of the most columns allowed, then a row of one more: the error
 * points at the extra field (it read past the fields array before). */
Test(build_errors, samples_row_past_the_widest_header)
{
    pl_test_text t = {0};
    pl_test_tprintf(&t, "genes");
    for (int i = 1; i < 256; i++)
        pl_test_tprintf(&t, "\tc%d", i);
    pl_test_tprintf(&t, "\ng1");
    for (int i = 1; i < 257; i++)
        pl_test_tprintf(&t, "\t1");
    pl_test_tprintf(&t, "\n");
    F.o.samples = own(pl_test_put_text(F.dir, "samples.tsv", &t));
    /* "g1\t" then fields of "1\t": field k >= 1 starts at column 4 + 2 (k - 1) */
    expect_fail(PL_EPARSE, F.o.samples, 2, 4 + 2 * 255,
                "expected 256 columns as in the header, found 257");
    for (int i = 1; i < 257; i++)
        pl_test_tprintf(&t, i > 1 ? "\tc%d" : "genes\tc%d", i);
    pl_test_tprintf(&t, "\n");
    F.o.samples = own(pl_test_put_text(F.dir, "samples.tsv", &t));
    expect_fail(PL_EPARSE, F.o.samples, 1, 6 + 3 * 9 + 4 * 90 + 5 * 156 + 1, /* "genes\t", c1.. */
                "more than 256 columns");
}

/* Found by fuzz_build: a NUL byte inside an edge list's gene name read past
 * the stored name in the gene table; names are stored NUL-terminated, so no
 * text input may hold one. */
Test(build_errors, nul_bytes_are_refused)
{
#define PUT_TEXT(name, literal) put_bin(name, literal, sizeof literal - 1)
    F.files[0] = PUT_TEXT("phys-nul.tsv", "g1\tg2\ng2\tg3\0\1\n");
    expect_fail(PL_EPARSE, F.files[0], 2, 6, "NUL byte in a text file");
    F.files[0] = F.edges;
    F.o.genes = PUT_TEXT("genes-nul.txt", "g1\ng2\0x\ng3\ng4\n");
    expect_fail(PL_EPARSE, F.o.genes, 2, 3, "NUL byte in a text file");
    F.o.genes = F.genes;
    F.o.samples = PUT_TEXT("samples-nul.tsv", "genes\tid\tfit\0ness\ng1\t1\t2\n");
#undef PUT_TEXT
    expect_fail(PL_EPARSE, F.o.samples, 1, 13, "NUL byte in a text file");
}

Test(build_errors, empty_reaction_and_metabolite_names)
{
    F.o.gpr = put("gpr.tsv", "g1\tr1\ng2\t \n");
    expect_fail(PL_EPARSE, F.o.gpr, 2, 5, "empty reaction name");
    F.o.gpr = NULL;
    F.o.rmr = put("rmr.tsv", "r1\tm1\t1\n \tm2\t-1\n");
    expect_fail(PL_EPARSE, F.o.rmr, 2, 2, "empty reaction name");
    F.o.rmr = put("rmr.tsv", "r1\tm1\t1\nr1\t\t-1\n");
    expect_fail(PL_EPARSE, F.o.rmr, 2, 4, "empty metabolite name");
}

/* ------------------------------------------------------ bad numbers */

Test(build_errors, edges_bad_score)
{
    F.files[0] = put("phys.tsv", "g1\tg2\t0.9\ng1\tg3\tabc\n");
    expect_fail(PL_EPARSE, F.files[0], 2, 7, "bad score 'abc'");
}

Test(build_errors, edges_nan_score)
{
    F.files[0] = put("phys.tsv", "g1 g2 nan\n");
    expect_fail(PL_EPARSE, F.files[0], 1, 7, "bad score 'nan'");
}

Test(build_errors, rmr_bad_stoichiometry)
{
    F.o.gpr = put("gpr.tsv", "g1\tr1\n");
    F.o.rmr = put("rmr.tsv", "r1\tm1\t2x\n");
    expect_fail(PL_EPARSE, F.o.rmr, 1, 7, "bad stoichiometry '2x'");
}

Test(build_errors, rmr_infinite_stoichiometry)
{
    F.o.gpr = put("gpr.tsv", "g1\tr1\n");
    F.o.rmr = put("rmr.tsv", "r1\tm1\t1\nr1\tm2\t-inf\n");
    expect_fail(PL_EPARSE, F.o.rmr, 2, 7, "bad stoichiometry '-inf'");
}

Test(build_errors, samples_bad_label)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1\t1\t0.5x\n");
    expect_fail(PL_EPARSE, F.o.samples, 2, 6, "bad number '0.5x' in column 'fitness'");
}

/* Labels are float32: a finite number beyond its range is refused (it would
 * be stored as an infinity), one below its smallest subnormal is 0. */
Test(build_errors, samples_label_overflows_float32)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1\t1\t0.5\ng2\t2\t1e39\n");
    expect_fail(PL_EPARSE, F.o.samples, 3, 6, "label '1e39' in column 'fitness' is out of the "
                "float32 range");
}

Test(build_errors, samples_label_overflows_float32_negative)
{
    F.o.samples = put("samples.tsv", "genes\tfitness\tgrowth\ng1\t0.5\t-3.5e38\n");
    expect_fail(PL_EPARSE, F.o.samples, 2, 8, "label '-3.5e38' in column 'growth' is out of "
                "the float32 range");
}

Test(build_errors, samples_label_overflows_double)
{
    F.o.samples = put("samples.tsv", "genes\tfitness\ng1\t1e999\n");
    expect_fail(PL_EPARSE, F.o.samples, 2, 4, "label '1e999' in column 'fitness' is out of "
                "the float32 range");
}

/* Infinities spelt out are labels; the largest float32 is kept; underflow
 * rounds to 0 (or a subnormal). */
Test(build_errors, samples_label_infinities_and_underflow)
{
    F.o.samples = put("samples.tsv", "genes\tfitness\ng1\tinf\ng2\t-inf\ng3\t-Infinity\n"
                                     "g4\t1e-50\ng1\t3.4028235e38\ng2\t-3.4028235e38\n"
                                     "g3\t1e-40\n");
    expect_ok();
    pl_db *db;
    cr_assert_eq(pl_db_open(F.out, &db, &F.err), 0, "%s", F.err.msg);
    const float want[7] = {INFINITY, -INFINITY, -INFINITY, 0.0f, 3.4028235e38f,
                           -3.4028235e38f, 1e-40f};
    for (uint64_t r = 0; r < 7; r++) {
        pl_sample smp;
        cr_assert_eq(pl_db_sample(db, r, &smp, &F.err), 0, "%s", F.err.msg);
        cr_expect(smp.labels[0] == want[r], "row %llu: label %a, expected %a",
                  (unsigned long long)r, (double)smp.labels[0], (double)want[r]);
    }
    pl_db_close(db);
}

Test(build_errors, rmr_stoichiometry_overflows_float32)
{
    F.o.gpr = put("gpr.tsv", "g1\tr1\n");
    F.o.rmr = put("rmr.tsv", "r1\tm1\t2\nr1\tm2\t-1e39\n");
    expect_fail(PL_EPARSE, F.o.rmr, 2, 7, "stoichiometry '-1e39' is out of the float32 range");
}

Test(build_errors, samples_bad_id_negative)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1\t-3\t0.5\n");
    expect_fail(PL_EPARSE, F.o.samples, 2, 4, "bad id '-3' (expected an unsigned 64-bit "
                "integer)");
}

Test(build_errors, samples_bad_id_overflow)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1\t18446744073709551615\t1\n"
                                     "g2\t18446744073709551616\t1\n");
    expect_fail(PL_EPARSE, F.o.samples, 3, 4, "bad id '18446744073709551616'");
}

/* ---------------------------------------------------- .npy edge lists */

static void use_npy_edges(const char *descr, const char *fortran, const char *shape,
                          const void *data, size_t len)
{
    F.files[0] = put_npy("phys.npy", descr, fortran, shape, data, len);
}

Test(build_errors, npy_edges_valid_control)
{
    int64_t e[2][3] = {{0, 1, 3}, {1, 2, 3}};
    use_npy_edges("<i8", "False", "(2, 3)", e, sizeof e);
    expect_ok();
    cr_expect_eq(F.st.n_edges, 3);
}

Test(build_errors, npy_negative_index)
{
    int32_t e[2][3] = {{0, 1, 2}, {1, 2, -1}};
    use_npy_edges("<i4", "False", "(2, 3)", e, sizeof e);
    expect_fail(PL_EPARSE, F.files[0], 0, 0, "edge_index[1][2] = -1 is negative");
}

Test(build_errors, npy_index_out_of_range)
{
    int64_t e[2][2] = {{0, 4}, {1, 2}};
    use_npy_edges("<i8", "False", "(2, 2)", e, sizeof e);
    expect_fail(PL_EPARSE, F.files[0], 0, 0,
                "edge_index[0][1] = 4 is not a gene index (out of range)");
}

Test(build_errors, npy_float32_dtype)
{
    float e[2][2] = {{0, 1}, {1, 2}};
    use_npy_edges("<f4", "False", "(2, 2)", e, sizeof e);
    expect_fail(PL_EPARSE, F.files[0], 0, 0,
                "edge_index dtype must be int32 or int64, found '<f4'");
}

Test(build_errors, npy_big_endian_dtype)
{
    int32_t e[2][2] = {{0, 1}, {1, 2}};
    use_npy_edges(">i4", "False", "(2, 2)", e, sizeof e);
    expect_fail(PL_EPARSE, F.files[0], 0, 0, "unsupported dtype '>i4'");
}

Test(build_errors, npy_shape_3_by_e)
{
    int32_t e[3][2] = {{0, 1}, {1, 2}, {2, 3}};
    use_npy_edges("<i4", "False", "(3, 2)", e, sizeof e);
    expect_fail(PL_EPARSE, F.files[0], 0, 0, "edge_index must have shape [2, E]");
}

Test(build_errors, npy_shape_1d)
{
    int32_t e[4] = {0, 1, 1, 2};
    use_npy_edges("<i4", "False", "(4,)", e, sizeof e);
    expect_fail(PL_EPARSE, F.files[0], 0, 0, "edge_index must have shape [2, E]");
}

Test(build_errors, npy_fortran_order)
{
    int32_t e[2][2] = {{0, 1}, {1, 2}};
    use_npy_edges("<i4", "True", "(2, 2)", e, sizeof e);
    expect_fail(PL_EPARSE, F.files[0], 0, 0, "Fortran-ordered arrays are not supported");
}

/* strtoull takes leading blanks and a sign: "\t-1" once read as 2^64 - 1,
 * which a zero-sized second dimension made consistent with no data. */
Test(build_errors, npy_signed_or_blank_dimension)
{
    F.o.payload = put_npy("payload.npy", "<f4", "False", "(\t-1, 0)", "", 0);
    expect_fail(PL_EPARSE, F.o.payload, 0, 0, "malformed shape in .npy header");
    F.o.payload = put_npy("payload.npy", "<f4", "False", "(2, +0)", "", 0);
    expect_fail(PL_EPARSE, F.o.payload, 0, 0, "malformed shape in .npy header");
    int32_t e[2][2] = {{0, 1}, {1, 2}};
    use_npy_edges("<i4", "False", "(2,\n2)", e, sizeof e);
    F.o.payload = NULL;
    expect_fail(PL_EPARSE, F.files[0], 0, 0, "malformed shape in .npy header");
}

Test(build_errors, npy_truncated_data)
{
    int32_t e[2][3] = {{0, 1, 2}, {1, 2, 3}};
    use_npy_edges("<i4", "False", "(2, 3)", e, sizeof e - 4);
    expect_fail(PL_EPARSE, F.files[0], 0, 0, "does not match the shape in its header");
}

Test(build_errors, npy_truncated_header)
{
    const char bytes[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<i4', ";
    F.files[0] = put_bin("phys.npy", bytes, sizeof bytes - 1);
    expect_fail(PL_EPARSE, F.files[0], 0, 0, "truncated .npy header");
}

Test(build_errors, npy_bad_magic)
{
    const char bytes[] = "\x93NUMPZ\x01\x00\x10\x00{'descr': '<i4'}\n";
    F.files[0] = put_bin("phys.npy", bytes, sizeof bytes - 1);
    expect_fail(PL_EPARSE, F.files[0], 0, 0, "not a .npy file (bad magic)");
}

Test(build_errors, npy_empty_file)
{
    F.files[0] = put_bin("phys.npy", "", 0);
    expect_fail(PL_EPARSE, F.files[0], 0, 0, "not a .npy file (bad magic)");
}

/* --------------------------------------------------- sample gene lists */

Test(build_errors, samples_no_genes)
{
    F.o.samples = put("samples.tsv", "id\tgenes\tfitness\n1\tg1\t0.5\n2\t\t0.5\n");
    expect_fail(PL_EPARSE, F.o.samples, 3, 3, "sample has no genes");
}

Test(build_errors, samples_empty_gene_between_separators)
{
    F.o.samples = put("samples.tsv", "genes\tid\tfitness\ng1;;g2\t1\t0.5\n");
    expect_fail(PL_EPARSE, F.o.samples, 2, 4, "empty gene name in 'g1;;g2'");
}

Test(build_errors, samples_trailing_separator)
{
    F.o.samples = put("samples.tsv", "id\tgenes\n7\tg1; g2;\n");
    expect_fail(PL_EPARSE, F.o.samples, 2, 10, "empty gene name in 'g1; g2;'");
}

/* ------------------------------------------------------ samples header */

Test(build_errors, samples_header_without_genes)
{
    F.o.samples = put("samples.tsv", "id\tfitness\n1\t0.5\n");
    expect_fail(PL_EPARSE, F.o.samples, 1, 1, "the header has no 'genes' column");
}

Test(build_errors, samples_header_duplicate_column)
{
    F.o.samples = put("samples.tsv", "genes\tfitness\tfitness\ng1\t1\t2\n");
    expect_fail(PL_EPARSE, F.o.samples, 1, 15, "duplicate column 'fitness' in the header");
}

Test(build_errors, samples_header_empty_column_name)
{
    F.o.samples = put("samples.tsv", "genes\t\tfitness\ng1\t1\t2\n");
    expect_fail(PL_EPARSE, F.o.samples, 1, 7, "empty column name in the header");
}

Test(build_errors, samples_empty_file)
{
    F.o.samples = put("samples.tsv", "# nothing here\n\n");
    expect_fail(PL_EPARSE, F.o.samples, 1, 1, "no header row");
}

/* ------------------------------------------------------------ payload */

Test(build_errors, payload_wrong_row_count)
{
    float d[3][2] = {{0}};
    F.o.payload = put_npy("payload.npy", "<f4", "False", "(3, 2)", d, sizeof d);
    expect_fail(PL_EPARSE, F.o.payload, 0, 0, "payload has 3 rows, the samples file 2");
}

Test(build_errors, payload_unsupported_dtype)
{
    double d[2][2] = {{0}};
    F.o.payload = put_npy("payload.npy", "<f8", "False", "(2, 2)", d, sizeof d);
    expect_fail(PL_EPARSE, F.o.payload, 0, 0, "payload dtype '<f8' not supported");
}

Test(build_errors, payload_truncated)
{
    float d[2][4] = {{0}};
    F.o.payload = put_npy("payload.npy", "<f4", "False", "(2, 4)", d, sizeof d - 1);
    expect_fail(PL_EPARSE, F.o.payload, 0, 0, "does not match the shape in its header");
}

/* A shape whose element count overflows 64 bits must not pass the file size
 * check: (2, 2^62 + 1) float32 claims 2^65 + 8 bytes, which wraps to 8. */
Test(build_errors, payload_shape_overflow)
{
    float d[2] = {1, 2};
    F.o.payload = put_npy("payload.npy", "<f4", "False", "(2, 4611686018427387905)", d,
                          sizeof d);
    expect_fail(PL_EPARSE, F.o.payload, 0, 0, "");
}

/* ------------------------------------------------- unreadable inputs */

Test(build_errors, input_missing)
{
    F.o.genes = path_in(F.dir, "no-such-genes.txt");
    expect_fail(-ENOENT, F.o.genes, 0, 0, "cannot open: No such file or directory");
}

Test(build_errors, input_missing_npy)
{
    F.files[0] = path_in(F.dir, "absent.npy");
    expect_fail(-ENOENT, F.files[0], 0, 0, "cannot open: No such file or directory");
}

Test(build_errors, input_missing_payload)
{
    F.o.payload = path_in(F.dir, "absent-payload.npy");
    expect_fail(-ENOENT, F.o.payload, 0, 0, "cannot open: No such file or directory");
}

Test(build_errors, input_is_directory)
{
    char *d = path_in(F.dir, "samples-dir");
    cr_assert_eq(mkdir(d, 0755), 0);
    F.o.samples = d;
    expect_fail(-EISDIR, d, 0, 0, "Is a directory");
}

Test(build_errors, input_npy_is_directory)
{
    char *d = path_in(F.dir, "payload-dir.npy");
    cr_assert_eq(mkdir(d, 0755), 0);
    F.o.payload = d;
    expect_fail(-EISDIR, d, 0, 0, "Is a directory");
}

/* A character device is not a regular file: the error must say so rather
 * than report whatever errno an earlier call left behind. */
Test(build_errors, input_not_regular_file)
{
    F.o.genes = "/dev/null";
    expect_fail(-EINVAL, "/dev/null", 0, 0, "");
    cr_expect(strstr(F.err.msg, strerror(ENOENT)) == NULL, "stale errno in '%s'", F.err.msg);
}

/* ------------------------------------------------------------- output */

Test(build_errors, output_exists_directory)
{
    cr_assert_eq(mkdir(F.out, 0755), 0);
    char *keep = own(pl_test_write(F.out, "keep.txt", "precious\n"));
    int rc = build();
    cr_assert_eq(rc, PL_EEXIST, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, F.out) != NULL, "%s", F.err.msg);
    cr_expect(strstr(F.err.msg, "already exists") != NULL, "%s", F.err.msg);
    FILE *f = fopen(keep, "r");
    cr_assert_not_null(f);
    char buf[32] = {0};
    cr_expect_eq(fread(buf, 1, sizeof buf - 1, f), 9);
    fclose(f);
    cr_expect_str_eq(buf, "precious\n");
    DIR *d = opendir(F.out);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    cr_expect_eq(n, 1, "the existing output directory was modified");
    DIR *p = opendir(F.dir);
    for (struct dirent *e; (e = readdir(p));)
        cr_expect(strncmp(e->d_name, "db.tmp-", 7) != 0, "%s left behind", e->d_name);
    closedir(p);
}

Test(build_errors, output_exists_file)
{
    put("db", "not a database\n");
    int rc = build();
    cr_assert_eq(rc, PL_EEXIST, "rc %d: %s", rc, F.err.msg);
    struct stat st;
    cr_assert_eq(stat(F.out, &st), 0);
    cr_expect(S_ISREG(st.st_mode));
    cr_expect_eq(st.st_size, 15);
}

Test(build_errors, output_parent_missing)
{
    F.o.out = path_in(F.dir, "missing-parent/db");
    int rc = build();
    cr_assert_eq(rc, -ENOENT, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "missing-parent/db.tmp-") != NULL, "%s", F.err.msg);
}

/* ---------------------------------------------------------- metabolism */

Test(build_errors, gpr_reaction_not_in_list)
{
    F.o.reactions = put("reactions.txt", "r1\nr2\n");
    F.o.gpr = put("gpr.tsv", "g1\tr1\ng2\tr9\n");
    char reason[4300];
    snprintf(reason, sizeof reason, "reaction 'r9' is not in the reaction list %s",
             F.o.reactions);
    expect_fail(PL_EPARSE, F.o.gpr, 2, 4, reason);
}

Test(build_errors, rmr_reaction_not_in_list)
{
    F.o.reactions = put("reactions.txt", "r1\nr2\n");
    F.o.gpr = put("gpr.tsv", "g1\tr1\n");
    F.o.rmr = put("rmr.tsv", "r1\tm1\t1\nrX\tm2\t-1\n");
    expect_fail(PL_EPARSE, F.o.rmr, 2, 1, "reaction 'rX' is not in the reaction list");
}

Test(build_errors, reactions_duplicate)
{
    F.o.reactions = put("reactions.txt", "r1\nr2\nr1\n");
    expect_fail(PL_EPARSE, F.o.reactions, 3, 1, "duplicate reaction name 'r1'");
}

/* -------------------------------------------------------- edge types */

Test(build_errors, type_name_bad_characters)
{
    F.names[0] = "phys ical";
    expect_fail(PL_EUSAGE, "--edges", 0, 0, "may only hold letters, digits");
}

Test(build_errors, type_name_empty)
{
    F.names[0] = "";
    int rc = build();
    cr_assert_eq(rc, PL_EUSAGE, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "empty or overlong name") != NULL, "%s", F.err.msg);
    expect_clean();
}

Test(build_errors, type_duplicate)
{
    F.names[1] = "phys";
    F.files[1] = F.edges;
    F.o.n_types = 2;
    int rc = build();
    cr_assert_eq(rc, PL_EUSAGE, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "edge type 'phys' given twice") != NULL, "%s", F.err.msg);
    expect_clean();
}

Test(build_errors, type_count_out_of_range)
{
    F.o.n_types = 0;
    int rc = build();
    cr_assert_eq(rc, PL_EUSAGE, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "0 edge types given") != NULL, "%s", F.err.msg);
    expect_clean();
    char names[PL_MAX_TYPES + 1][8];
    for (int t = 0; t <= PL_MAX_TYPES; t++) {
        snprintf(names[t], sizeof names[t], "t%d", t);
        F.names[t] = names[t];
        F.files[t] = F.edges;
    }
    F.o.n_types = PL_MAX_TYPES + 1;
    rc = build();
    cr_assert_eq(rc, PL_EUSAGE, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "65 edge types given") != NULL, "%s", F.err.msg);
    expect_clean();
}

Test(build_errors, required_option_missing)
{
    F.o.samples = NULL;
    int rc = build();
    cr_assert_eq(rc, PL_EUSAGE, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "required") != NULL, "%s", F.err.msg);
    expect_clean();
}

Test(build_errors, min_score_without_score_column)
{
    F.files[0] = put("phys.tsv", "g1\tg2\t0.9\ng2\tg3\n");
    F.min_score[0] = 0.5;
    F.o.min_score = F.min_score;
    expect_fail(PL_EPARSE, F.files[0], 2, 6,
                "no score column, but a minimum score is set for type 'phys'");
}

Test(build_errors, min_score_on_npy_edges)
{
    int32_t e[2][2] = {{0, 1}, {1, 2}};
    use_npy_edges("<i4", "False", "(2, 2)", e, sizeof e);
    F.min_score[0] = 0.5;
    F.o.min_score = F.min_score;
    expect_fail(PL_EPARSE, F.files[0], 0, 0,
                "a .npy edge_index has no scores; --min-score cannot apply to type 'phys'");
}

Test(build_errors, second_type_error_names_its_file)
{
    F.names[1] = "reg";
    F.files[1] = put("reg.tsv", "g1 g2\ng3 g4\n\ng4 g5\n");
    F.o.n_types = 2;
    F.min_score[0] = NAN;
    F.min_score[1] = NAN;
    F.o.min_score = F.min_score;
    expect_fail(PL_EPARSE, F.files[1], 4, 4, "unknown gene 'g5'");
}

/* ------------------------------------------------------------------ CLI */

Test(build_errors, cli_reports_position_and_exits_1)
{
    const char *bin = getenv("PERTLOAD_BIN");
    cr_assert(bin && *bin, "PERTLOAD_BIN is not set");
    F.o.genes = put("genes.txt", "g1\ng2\ng3\ng2\n");
    char *errpath = path_in(F.dir, "stderr.txt");
    char edges[4200];
    snprintf(edges, sizeof edges, "phys=%s", F.edges);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null = open("/dev/null", O_WRONLY);
        if (fd < 0 || null < 0 || dup2(fd, 2) < 0 || dup2(null, 1) < 0)
            _exit(126);
        execl(bin, "pertload", "build", "-o", F.out, "--genes", F.o.genes, "--edges", edges,
              "--samples", F.samples, "--quiet", (char *)NULL);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "pertload did not exit normally (status %d)", status);
    cr_assert_eq(WEXITSTATUS(status), 1, "exit status %d", WEXITSTATUS(status));
    FILE *f = fopen(errpath, "r");
    cr_assert_not_null(f);
    char buf[8192] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    cr_assert_gt(n, 0, "nothing on stderr");
    char want[4300];
    snprintf(want, sizeof want, "%s:4:1: duplicate gene name 'g2'", F.o.genes);
    cr_expect(strstr(buf, want) != NULL, "stderr '%s' lacks '%s'", buf, want);
    expect_clean();
}

/* -------------------------------------------------------- write failures */

/* Samples whose sample store is far larger than `limit` bytes: 8 label
 * columns of incompressible floats. */
static void big_samples(int rows)
{
    size_t cap = (size_t)rows * 160 + 256, len = 0;
    char *t = malloc(cap);
    cr_assert_not_null(t);
    len += (size_t)snprintf(t, cap, "genes\tid\tl0\tl1\tl2\tl3\tl4\tl5\tl6\tl7\n");
    uint64_t s = 42;
    for (int r = 0; r < rows; r++) {
        len += (size_t)snprintf(t + len, cap - len, "g%d;g%d\t%d", 1 + r % 4,
                                1 + (r / 4) % 4, r);
        for (int l = 0; l < 8; l++)
            len += (size_t)snprintf(t + len, cap - len, "\t%.8g",
                                    (double)pl_test_rand(&s) / 18446744073709551616.0);
        t[len++] = '\n';
    }
    t[len] = '\0';
    F.o.samples = put("big-samples.tsv", t);
    free(t);
}

typedef struct child_result {
    int stage; /* 0: could not set up (errno in `setup_errno`), 1: built */
    int setup_errno;
    char setup_what[64];
    int rc;
    pl_err err;
    int out_exists;
    char leftover[256];
} child_result;

static void recv_result(int fd, pid_t pid, child_result *r)
{
    size_t got = pl_test_recv(fd, r, sizeof *r);
    close(fd);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the building child died (status 0x%x)", status);
    cr_assert_eq(got, sizeof *r, "short result from the child");
}

/* First entry of `dir` other than . and .., or "" when empty. */
static void first_entry(const char *dir, char *buf, size_t cap)
{
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(buf, cap, "(cannot list %s: %s)", dir, strerror(errno));
        return;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(buf, cap, "%s", e->d_name);
            break;
        }
    closedir(d);
}

Test(build_errors, write_failure_file_size_limit, .timeout = 120)
{
    big_samples(4000);
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        child_result r;
        memset(&r, 0, sizeof r);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {64 * 1024, 64 * 1024};
        if (setrlimit(RLIMIT_FSIZE, &rl) < 0) {
            r.setup_errno = errno;
            snprintf(r.setup_what, sizeof r.setup_what, "setrlimit");
        } else {
            r.stage = 1;
            r.rc = pl_build(&F.o, NULL, &r.err);
        }
        pl_test_send(fd, &r, sizeof r);
        _exit(0);
    }
    child_result r;
    recv_result(fd, pid, &r);
    cr_assert_eq(r.stage, 1, "%s: %s", r.setup_what, strerror(r.setup_errno));
    cr_assert_eq(r.rc, -EFBIG, "rc %d (%s): %s", r.rc, pl_errname(r.rc), r.err.msg);
    cr_expect_eq(r.err.code, -EFBIG);
    expect_tmp_msg(r.err.msg, F.out, PL_FILE_SAMPLES ": write failed");
    expect_clean();
}

/* A real full file system: a 256 KiB tmpfs in a private mount namespace. */
Test(build_errors, write_failure_no_space, .timeout = 120)
{
    big_samples(16000);
    char *mnt = path_in(F.dir, "small-fs");
    cr_assert_eq(mkdir(mnt, 0755), 0);
    char *out = path_in(mnt, "db");
    F.o.out = out;
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        child_result r;
        memset(&r, 0, sizeof r);
        const char *what;
        r.setup_errno = pl_test_small_fs(mnt, "256k", &what);
        if (r.setup_errno) {
            snprintf(r.setup_what, sizeof r.setup_what, "%s", what);
        } else {
            r.stage = 1;
            r.rc = pl_build(&F.o, NULL, &r.err);
            struct stat st;
            r.out_exists = lstat(out, &st) == 0;
            first_entry(mnt, r.leftover, sizeof r.leftover);
            umount2(mnt, MNT_DETACH);
        }
        pl_test_send(fd, &r, sizeof r);
        _exit(0);
    }
    child_result r;
    recv_result(fd, pid, &r);
    if (r.stage == 0) {
        cr_assert(r.setup_errno == EPERM || r.setup_errno == EACCES,
                  "%s failed: %s", r.setup_what, strerror(r.setup_errno));
        cr_skip_test("cannot mount a small tmpfs here (%s: %s)", r.setup_what,
                     strerror(r.setup_errno));
    }
    cr_assert_eq(r.rc, -ENOSPC, "rc %d (%s): %s", r.rc, pl_errname(r.rc), r.err.msg);
    cr_expect_eq(r.err.code, -ENOSPC);
    char tail[256];
    snprintf(tail, sizeof tail, "%s: write failed: %s", PL_FILE_SAMPLES, strerror(ENOSPC));
    expect_tmp_msg(r.err.msg, out, tail);
    cr_expect(!r.out_exists, "%s exists after the failed build", out);
    cr_expect_str_eq(r.leftover, "", "'%s' left on the full file system", r.leftover);
}

/* An input the builder may not read. Permissions do not bind root, so as
 * root the build runs in a child that has dropped to an unprivileged user. */
Test(build_errors, input_permission_denied)
{
    F.o.genes = put("genes-locked.txt", "g1\ng2\ng3\ng4\n");
    cr_assert_eq(chmod(F.o.genes, 0), 0);
    if (geteuid() != 0) {
        expect_fail(-EACCES, F.o.genes, 0, 0, "cannot open: Permission denied");
        return;
    }
    cr_assert_eq(chmod(F.dir, 0777), 0);
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        child_result r;
        memset(&r, 0, sizeof r);
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0) {
            r.setup_errno = errno;
            snprintf(r.setup_what, sizeof r.setup_what, "dropping privileges");
        } else {
            r.stage = 1;
            r.rc = pl_build(&F.o, NULL, &r.err);
        }
        pl_test_send(fd, &r, sizeof r);
        _exit(0);
    }
    child_result r;
    recv_result(fd, pid, &r);
    cr_assert_eq(r.stage, 1, "%s: %s", r.setup_what, strerror(r.setup_errno));
    cr_assert_eq(r.rc, -EACCES, "rc %d (%s): %s", r.rc, pl_errname(r.rc), r.err.msg);
    char want[4300];
    snprintf(want, sizeof want, "%s: cannot open: %s", F.o.genes, strerror(EACCES));
    cr_expect(strstr(r.err.msg, want) != NULL, "message '%s' lacks '%s'", r.err.msg, want);
    expect_clean();
}
