/* pl_build() on malformed inputs: every rejection returns the right code,
 * names "file:line:col: reason" (or "file: reason" for binary inputs), and
 * leaves neither the output directory nor a "<out>.tmp-*" directory behind.
 * Text and .npy contents here; unreadable inputs, the output directory,
 * metabolism, edge types, the CLI and write failures in test_build_output.c. */
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
#include "build_fx.h"
#include "testutil.h"

TestSuite(build_errors, .init = fx_init, .fini = fx_fini);

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

/* ESC, BEL and BS in a gene name were kept and printed raw later: refused
 * at input, as header names are. */
Test(build_errors, genes_control_characters)
{
    F.o.genes = put("genes.txt", "g1\ng\x1b[31m2\ng3\n");
    expect_fail(PL_EPARSE, F.o.genes, 2, 2, "gene name contains U+001B");
}

Test(build_errors, reactions_control_characters)
{
    F.o.reactions = put("reactions.txt", "r1\nr\x08x\n");
    expect_fail(PL_EPARSE, F.o.reactions, 2, 2, "reaction name contains U+0008");
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
